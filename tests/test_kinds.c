/*
 * The lock kinds: fair (FIFO across processes, a dead waiter leaves the
 * queue, no barging), read-write (sharing, exclusion, re-entry rules,
 * wake-ups, renewal of read holds), spin (no pub/sub, back-off), fenced
 * (tokens strictly increasing), non-reentrant; mutual exclusion of each
 * across processes with the overlap checker; bad input.
 */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static hl_lock *kind_lock(hl_client *c, int kind, const char *name)
{
	hl_lock *l = NULL;
	HT_OK(hl_lock_new_kind(&l, c, kind, name, strlen(name)));
	HT_EQ(hl_lock_kind(l), kind);
	return l;
}

static hl_client *client_with(ht_redis *r, int64_t watchdog_ms,
                              int64_t fair_wait_ms)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	if (watchdog_ms > 0)
		o.watchdog_timeout_ms = watchdog_ms;
	if (fair_wait_ms > 0)
		o.fair_wait_timeout_ms = fair_wait_ms;
	return ht_client_url(r->url, &o);
}

static long long llen(ht_redis *r, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "LLEN %s", key);
	long long n = rep->integer;
	freeReplyObject(rep);
	return n;
}

static long long zcard(ht_redis *r, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "ZCARD %s", key);
	long long n = rep->integer;
	freeReplyObject(rep);
	return n;
}

/* ---- a waiter on another thread ------------------------------------------ */
typedef struct waiter {
	hl_lock *lock;
	int64_t wait_ms, lease_ms;
	int rc, acquired;
	int64_t got_at; /* ht_now_ms() when it returned */
	int release;    /* release right after acquiring */
} waiter;

static void *waiter_main(void *arg)
{
	waiter *w = arg;
	w->rc = hl_lock_try_acquire(&w->acquired, w->lock, w->wait_ms,
	                            w->lease_ms, NULL);
	w->got_at = ht_now_ms();
	if (w->rc == HL_OK && w->acquired && w->release)
		HT_OK(hl_lock_release(NULL, w->lock));
	return NULL;
}

typedef struct key_pred {
	ht_redis *r;
	const char *key;
	long long want;
} key_pred;

static int llen_is(void *arg)
{
	key_pred *p = arg;
	return llen(p->r, p->key) == p->want;
}

/* ---- fair lock ----------------------------------------------------------- */
static void fair_wire(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = kind_lock(a, HL_LOCK_FAIR, "fair:wire");
	hl_lock *lb = kind_lock(b, HL_LOCK_FAIR, "fair:wire");
	key_pred queued = {r, "redisson_lock_queue:{fair:wire}", 1};
	int acquired = 7, released = 7;
	waiter w = {lb, 3000, -1, -1, 0, 0, 1};
	pthread_t t;
	redisReply *rep;

	HT_OK(hl_lock_acquire(la, -1, NULL));
	HT_EQ(ht_hget_int(r, HT_S("fair:wire"), ht_owner(la)), 1);
	/* a single attempt does not queue */
	HT_OK(hl_lock_try_acquire(&acquired, lb, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(llen(r, "redisson_lock_queue:{fair:wire}"), 0);
	/* a waiter queues, with a deadline past the holder's TTL */
	t = ht_thread_start(waiter_main, &w);
	HT_CHECK(ht_wait_until(llen_is, &queued, 5000));
	rep = ht_raw(ht_raw_of(r), "LINDEX redisson_lock_queue:{fair:wire} 0");
	HT_EQ(rep->type, REDIS_REPLY_STRING);
	HT_CHECK(strncmp(rep->str, hl_client_id(b), 36) == 0);
	freeReplyObject(rep);
	HT_EQ(zcard(r, "redisson_lock_timeout:{fair:wire}"), 1);
	HT_EQ(ht_numsub(r, HT_S("redisson_lock__channel:{fair:wire}")), 0);
	/* the release wakes it on its own channel */
	HT_OK(hl_lock_release(&released, la));
	HT_EQ(released, 1);
	ht_thread_join(t, 10000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	HT_EQ(llen(r, "redisson_lock_queue:{fair:wire}"), 0);
	HT_EQ(zcard(r, "redisson_lock_timeout:{fair:wire}"), 0);
	HT_EQ(ht_exists(r, HT_S("fair:wire")), 0); /* it released it */

	/* a waiter whose wait runs out leaves the queue */
	HT_OK(hl_lock_acquire(la, -1, NULL));
	HT_OK(hl_lock_try_acquire(&acquired, lb, 300, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(llen(r, "redisson_lock_queue:{fair:wire}"), 0);
	HT_EQ(zcard(r, "redisson_lock_timeout:{fair:wire}"), 0);
	HT_OK(hl_lock_release(NULL, la));
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* The lock is free, but another owner is first in the queue: even a single
 * attempt of the releaser does not barge. */
static void fair_no_barge(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = kind_lock(a, HL_LOCK_FAIR, "fair:barge");
	hl_lock *lb = kind_lock(b, HL_LOCK_FAIR, "fair:barge");
	key_pred queued = {r, "redisson_lock_queue:{fair:barge}", 1};
	waiter w = {lb, 10000, 60000, -1, 0, 0, 0};
	int i, acquired = 7, got = 0;
	pthread_t t;

	for (i = 0; i < 5; i++) {
		HT_OK(hl_lock_acquire(la, -1, NULL));
		memset(&w, 0, sizeof(w));
		w.lock = lb;
		w.wait_ms = 10000;
		w.lease_ms = 60000;
		w.release = 1;
		t = ht_thread_start(waiter_main, &w);
		HT_CHECK(ht_wait_until(llen_is, &queued, 5000));
		HT_OK(hl_lock_release(NULL, la));
		HT_OK(hl_lock_try_acquire(&acquired, la, 0, -1, NULL));
		if (acquired) {
			/* only once the waiter had it and let it go */
			HT_OK(hl_lock_release(NULL, la));
			got++;
		}
		ht_thread_join(t, 15000);
		HT_OK(w.rc);
		HT_EQ(w.acquired, 1);
		HT_CHECKF(!acquired || w.got_at > 0, "barged");
	}
	HT_CHECKF(got < 5, "the releaser barged ahead of the queue %d times",
	          got);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* 8 processes queue one after the other and get the lock in that order. */
static void fair_fifo(void)
{
	enum { N = 8 };
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0);
	hl_lock *la = kind_lock(a, HL_LOCK_FAIR, "fair:fifo");
	char path[] = "/tmp/hl-fifo-XXXXXX";
	int pids[N], i, fd = mkstemp(path);
	char buf[256];
	FILE *f;

	HT_CHECK(fd >= 0);
	close(fd);
	HT_OK(hl_lock_acquire(la, -1, NULL));
	for (i = 0; i < N; i++) {
		key_pred queued = {r, "redisson_lock_queue:{fair:fifo}", i + 1};
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0) {
			hl_client *c = ht_client(r, 0);
			hl_lock *l = kind_lock(c, HL_LOCK_FAIR, "fair:fifo");
			char tag[16];
			snprintf(tag, sizeof(tag), "%d", i);
			if (hl_lock_acquire(l, -1, NULL) != HL_OK)
				_exit(3);
			ht_cs_enter(path, tag);
			ht_sleep_ms(20);
			ht_cs_leave(path, tag);
			hl_lock_release(NULL, l);
			hl_lock_free(l);
			hl_client_free(c);
			_exit(0);
		}
		pids[i] = pid;
		/* the next one starts once this one is in the queue */
		HT_CHECK(ht_wait_until(llen_is, &queued, 10000));
	}
	HT_OK(hl_lock_release(NULL, la));
	ht_contenders_wait(pids, N);
	HT_EQ(ht_cs_check(path), N);
	f = fopen(path, "r");
	HT_CHECK(f != NULL);
	for (i = 0; i < N; i++) {
		char want[32];
		HT_CHECK(fgets(buf, sizeof(buf), f) != NULL);
		snprintf(want, sizeof(want), "enter %d\n", i);
		HT_STREQ(buf, want);
		HT_CHECK(fgets(buf, sizeof(buf), f) != NULL);
	}
	fclose(f);
	unlink(path);
	hl_lock_free(la);
	hl_client_free(a);
}

/* A waiter that dies leaves the queue once its deadline (the holder's
 * lease plus the stale-waiter timeout) passes; until then the next waiter
 * waits behind it. */
static void fair_dead_waiter(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = client_with(r, 3000, 1500);
	hl_client *b = client_with(r, 3000, 1500);
	hl_lock *la = kind_lock(a, HL_LOCK_FAIR, "fair:dead");
	hl_lock *lb = kind_lock(b, HL_LOCK_FAIR, "fair:dead");
	key_pred one = {r, "redisson_lock_queue:{fair:dead}", 1};
	key_pred two = {r, "redisson_lock_queue:{fair:dead}", 2};
	waiter w = {lb, 20000, -1, -1, 0, 0, 1};
	redisReply *rep;
	long long dead_deadline, now_ms;
	int64_t released_at;
	pthread_t t;
	pid_t pid;
	int status;

	HT_OK(hl_lock_acquire(la, -1, NULL));
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *c = client_with(r, 3000, 1500);
		hl_lock *l = kind_lock(c, HL_LOCK_FAIR, "fair:dead");
		hl_lock_acquire(l, -1, NULL);
		_exit(5);
	}
	HT_CHECK(ht_wait_until(llen_is, &one, 10000));
	kill(pid, SIGKILL);
	HT_EQ(waitpid(pid, &status, 0), pid);
	t = ht_thread_start(waiter_main, &w);
	HT_CHECK(ht_wait_until(llen_is, &two, 10000));
	rep = ht_raw(ht_raw_of(r), "LINDEX redisson_lock_queue:{fair:dead} 0");
	HT_EQ(rep->type, REDIS_REPLY_STRING);
	{
		redisReply *sc =
		        ht_raw(ht_raw_of(r),
		               "ZSCORE redisson_lock_timeout:{fair:dead} %s",
		               rep->str);
		HT_EQ(sc->type, REDIS_REPLY_STRING);
		dead_deadline = atoll(sc->str);
		freeReplyObject(sc);
	}
	freeReplyObject(rep);
	rep = ht_raw(ht_raw_of(r), "TIME");
	now_ms = atoll(rep->element[0]->str) * 1000 +
	         atoll(rep->element[1]->str) / 1000;
	freeReplyObject(rep);
	/* the lock is released now; the dead waiter's turn comes first */
	HT_OK(hl_lock_release(NULL, la));
	released_at = ht_now_ms();
	ht_thread_join(t, 30000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	/* not before the dead waiter's deadline (less clock slack), and
	 * soon after it */
	HT_CHECKF(w.got_at - released_at >=
	                  (dead_deadline - now_ms) -
	                          (ht_now_ms() - released_at) - 500 - 1000,
	          "acquired %lld ms after the release, the dead waiter's "
	          "deadline was %lld ms away",
	          (long long)(w.got_at - released_at), dead_deadline - now_ms);
	HT_RANGE(w.got_at - released_at, 0,
	         (dead_deadline - now_ms) + 5000 * ht_scale());
	HT_EQ(llen(r, "redisson_lock_queue:{fair:dead}"), 0);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* ---- read-write lock ----------------------------------------------------- */
static void rw_share(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_client *c = ht_client(r, 0);
	hl_lock *wc = kind_lock(c, HL_LOCK_WRITE, "rw:share");
	hl_lock *ra = kind_lock(a, HL_LOCK_READ, "rw:share");
	hl_lock *rb = kind_lock(b, HL_LOCK_READ, "rw:share");
	hl_lock *wa = kind_lock(a, HL_LOCK_WRITE, "rw:share");
	hl_lock *wb = kind_lock(b, HL_LOCK_WRITE, "rw:share");
	int acquired = 7, v = 7, released = 7;
	int64_t n = 7;
	char key[200];
	redisReply *rep;

	/* two readers together */
	HT_OK(hl_lock_acquire(ra, -1, NULL));
	HT_OK(hl_lock_try_acquire(&acquired, rb, 0, -1, NULL));
	HT_EQ(acquired, 1);
	rep = ht_raw(ht_raw_of(r), "HGET rw:share mode");
	HT_STREQ(rep->str, "read");
	freeReplyObject(rep);
	snprintf(key, sizeof(key), "{rw:share}:%s:rwlock_timeout:1",
	         ht_owner(ra));
	HT_RANGE(ht_pttl(r, key, strlen(key)), 20000, 30000);
	HT_OK(hl_lock_is_locked(&v, ra));
	HT_EQ(v, 1);
	HT_OK(hl_lock_is_locked(&v, wa));
	HT_EQ(v, 0);
	/* a writer waits for both */
	HT_OK(hl_lock_try_acquire(&acquired, wc, 200, -1, NULL));
	HT_EQ(acquired, 0);
	/* and a reader cannot become the writer */
	HT_RC(hl_lock_try_acquire(&acquired, wb, 200, -1, NULL), HL_EDEADLK);
	HT_OK(hl_lock_release(&released, ra));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, key, strlen(key)), 0);
	HT_EQ(ht_exists(r, HT_S("rw:share")), 1); /* b still reads */
	HT_OK(hl_lock_try_acquire(&acquired, wc, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_release(&released, rb));
	HT_EQ(ht_exists(r, HT_S("rw:share")), 0);
	/* one writer; readers and other writers wait */
	HT_OK(hl_lock_acquire(wb, -1, NULL));
	rep = ht_raw(ht_raw_of(r), "HGET rw:share mode");
	HT_STREQ(rep->str, "write");
	freeReplyObject(rep);
	snprintf(key, sizeof(key), "%s:write", ht_owner(wb));
	HT_EQ(ht_hget_int(r, HT_S("rw:share"), key), 1);
	HT_OK(hl_lock_try_acquire(&acquired, ra, 100, -1, NULL));
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_try_acquire(&acquired, wa, 100, -1, NULL));
	HT_EQ(acquired, 0);
	/* the writer may read too, and keeps reading after writing */
	HT_OK(hl_lock_acquire(rb, -1, NULL));
	HT_OK(hl_lock_is_locked(&v, ra));
	HT_EQ(v, 1);
	HT_OK(hl_lock_release(&released, wb));
	HT_EQ(released, 1);
	rep = ht_raw(ht_raw_of(r), "HGET rw:share mode");
	HT_STREQ(rep->str, "read");
	freeReplyObject(rep);
	HT_OK(hl_lock_try_acquire(&acquired, ra, 0, -1, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_hold_count(&n, ra));
	HT_EQ(n, 1);
	HT_OK(hl_lock_release(NULL, ra));
	HT_OK(hl_lock_release(NULL, rb));
	HT_EQ(ht_exists(r, HT_S("rw:share")), 0);
	hl_lock_free(ra);
	hl_lock_free(rb);
	hl_lock_free(wa);
	hl_lock_free(wb);
	hl_lock_free(wc);
	hl_client_free(a);
	hl_client_free(b);
	hl_client_free(c);
}

static void rw_rules(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0);
	hl_lock *rd = kind_lock(a, HL_LOCK_READ, "rw:rules");
	hl_lock *wr = kind_lock(a, HL_LOCK_WRITE, "rw:rules");
	int acquired = 7, released = 7, v = 7;
	int64_t n = 7;
	char key[200];

	/* re-entry of each half */
	HT_OK(hl_lock_acquire(wr, -1, NULL));
	HT_OK(hl_lock_acquire(wr, -1, NULL));
	HT_OK(hl_lock_hold_count(&n, wr));
	HT_EQ(n, 2);
	HT_OK(hl_lock_is_held(&v, wr));
	HT_EQ(v, 1);
	/* the writer's read release: it holds no read */
	HT_RC(hl_lock_release(&released, rd), HL_ENOTHELD);
	HT_OK(hl_lock_release(&released, wr));
	HT_EQ(released, 0);
	HT_OK(hl_lock_release(&released, wr));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("rw:rules")), 0);

	/* a reader cannot take the write lock: it would wait for itself */
	HT_OK(hl_lock_acquire(rd, -1, NULL));
	HT_OK(hl_lock_acquire(rd, -1, NULL));
	HT_OK(hl_lock_hold_count(&n, rd));
	HT_EQ(n, 2);
	snprintf(key, sizeof(key), "{rw:rules}:%s:rwlock_timeout:2",
	         ht_owner(rd));
	HT_EQ(ht_exists(r, key, strlen(key)), 1);
	HT_RC(hl_lock_try_acquire(&acquired, wr, 1000, -1, NULL), HL_EDEADLK);
	HT_RC(hl_lock_acquire(wr, -1, NULL), HL_EDEADLK);
	HT_RC(hl_lock_release(&released, wr), HL_ENOTHELD);
	HT_OK(hl_lock_release(&released, rd));
	HT_EQ(released, 0);
	HT_EQ(ht_exists(r, key, strlen(key)), 0);
	HT_OK(hl_lock_release(&released, rd));
	HT_EQ(released, 1);
	/* force unlock of one half leaves the other mode alone */
	HT_OK(hl_lock_acquire(rd, -1, NULL));
	HT_OK(hl_lock_force_unlock(&v, wr));
	HT_EQ(v, 0);
	HT_EQ(ht_exists(r, HT_S("rw:rules")), 1);
	HT_OK(hl_lock_is_lost(&v, rd));
	HT_EQ(v, 0);
	HT_OK(hl_lock_force_unlock(&v, rd));
	HT_EQ(v, 1);
	HT_EQ(ht_exists(r, HT_S("rw:rules")), 0);
	HT_RC(hl_lock_release(&released, rd), HL_ELOST);
	hl_lock_free(rd);
	hl_lock_free(wr);
	hl_client_free(a);
}

/* Waiters are woken by the messages, not the TTL (30 s). */
static void rw_wake(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *ra = kind_lock(a, HL_LOCK_READ, "rw:wake");
	hl_lock *wa = kind_lock(a, HL_LOCK_WRITE, "rw:wake");
	hl_lock *rb = kind_lock(b, HL_LOCK_READ, "rw:wake");
	hl_lock *wb = kind_lock(b, HL_LOCK_WRITE, "rw:wake");
	waiter w = {wb, 20000, -1, -1, 0, 0, 1};
	int64_t t0;
	pthread_t t;

	/* a writer woken by the last reader's release ("0") */
	HT_OK(hl_lock_acquire(ra, -1, NULL));
	t = ht_thread_start(waiter_main, &w);
	ht_wait_waiting(b, 1);
	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, ra));
	ht_thread_join(t, 20000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	HT_RANGE(w.got_at - t0, 0, 2000 * ht_scale());
	/* a reader woken by the writer's release ("1") */
	HT_OK(hl_lock_acquire(wa, -1, NULL));
	memset(&w, 0, sizeof(w));
	w.lock = rb;
	w.wait_ms = 20000;
	w.lease_ms = -1;
	w.release = 1;
	t = ht_thread_start(waiter_main, &w);
	ht_wait_waiting(b, 1);
	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, wa));
	ht_thread_join(t, 20000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	HT_RANGE(w.got_at - t0, 0, 2000 * ht_scale());
	hl_lock_free(ra);
	hl_lock_free(wa);
	hl_lock_free(rb);
	hl_lock_free(wb);
	hl_client_free(a);
	hl_client_free(b);
}

/* The watchdog renews read holds with their timeout keys, and write holds
 * through their :write field. */
static void rw_renew(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 1500);
	hl_lock *rd = kind_lock(a, HL_LOCK_READ, "rw:renew");
	hl_lock *wr = kind_lock(a, HL_LOCK_WRITE, "rw:renew2");
	char key[200];
	int v = 7;

	HT_OK(hl_lock_acquire(rd, -1, NULL));
	HT_OK(hl_lock_acquire(rd, -1, NULL));
	HT_OK(hl_lock_acquire(wr, -1, NULL));
	ht_sleep_ms(4000);
	snprintf(key, sizeof(key), "{rw:renew}:%s:rwlock_timeout:1",
	         ht_owner(rd));
	HT_RANGE(ht_pttl(r, key, strlen(key)), 1, 1500);
	snprintf(key, sizeof(key), "{rw:renew}:%s:rwlock_timeout:2",
	         ht_owner(rd));
	HT_RANGE(ht_pttl(r, key, strlen(key)), 1, 1500);
	HT_RANGE(ht_pttl(r, HT_S("rw:renew")), 1, 1500);
	HT_RANGE(ht_pttl(r, HT_S("rw:renew2")), 1, 1500);
	HT_OK(hl_lock_is_lost(&v, rd));
	HT_EQ(v, 0);
	HT_OK(hl_lock_is_lost(&v, wr));
	HT_EQ(v, 0);
	HT_OK(hl_lock_release(NULL, rd));
	HT_OK(hl_lock_release(NULL, rd));
	HT_OK(hl_lock_release(NULL, wr));
	HT_EQ(ht_exists(r, HT_S("rw:renew")), 0);
	HT_EQ(ht_exists(r, HT_S("rw:renew2")), 0);
	hl_lock_free(rd);
	hl_lock_free(wr);
	hl_client_free(a);
}

/* ---- spin lock ----------------------------------------------------------- */
static void spin(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = kind_lock(a, HL_LOCK_SPIN, "spin:x");
	hl_lock *lb = kind_lock(b, HL_LOCK_SPIN, "spin:x");
	hl_lock *plain = ht_lock(b, "spin:x");
	redisContext *sub;
	waiter w = {lb, 20000, -1, -1, 0, 0, 1};
	int acquired = 7, released = 7;
	int64_t t0;
	pthread_t t;

	HT_RC(hl_lock_set_backoff(la, 0, 10, 2), HL_EINVAL);
	HT_RC(hl_lock_set_backoff(la, 10, 5, 2), HL_EINVAL);
	HT_RC(hl_lock_set_backoff(la, 1, 10, 0), HL_EINVAL);
	HT_RC(hl_lock_set_backoff(plain, 1, 10, 2), HL_EINVAL);
	HT_OK(hl_lock_set_backoff(lb, 5, 20, 2));
	sub = ht_sub_new(r, HT_S("redisson_lock__channel:{spin:x}"));
	HT_OK(hl_lock_acquire(la, -1, NULL));
	/* the same hash as the reentrant lock: they exclude each other */
	HT_OK(hl_lock_try_acquire(&acquired, plain, 0, -1, NULL));
	HT_EQ(acquired, 0);
	t = ht_thread_start(waiter_main, &w);
	ht_sleep_ms(300);
	/* no subscription: only the test's own */
	HT_EQ(ht_numsub(r, HT_S("redisson_lock__channel:{spin:x}")), 1);
	t0 = ht_now_ms();
	HT_OK(hl_lock_release(&released, la));
	HT_EQ(released, 1);
	ht_thread_join(t, 20000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	/* the back-off is at most 20 ms */
	HT_RANGE(w.got_at - t0, 0, 1000 * ht_scale());
	/* and no unlock message was published */
	HT_OK(hl_lock_acquire(la, 1000, NULL));
	HT_OK(hl_lock_force_unlock(NULL, la));
	{
		redisReply *rep = ht_raw(sub, "PING");
		/* the next reply on the subscriber is the PONG, not a
		 * message */
		HT_EQ(rep->type, REDIS_REPLY_ARRAY);
		HT_STREQ(rep->element[0]->str, "pong");
		freeReplyObject(rep);
	}
	redisFree(sub);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_lock_free(plain);
	hl_client_free(a);
	hl_client_free(b);
}

/* ---- fenced lock --------------------------------------------------------- */
static void fenced(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = kind_lock(a, HL_LOCK_FENCED, "fenced:x");
	hl_lock *lb = kind_lock(b, HL_LOCK_FENCED, "fenced:x");
	hl_lock *plain = ht_lock(a, "fenced:x");
	int64_t tok = 0, last = 0, prev = 0;
	int i, released = 7;

	HT_OK(hl_lock_last_token(&last, la));
	HT_EQ(last, 0);
	HT_RC(hl_lock_token(&tok, la), HL_ENOTHELD);
	HT_RC(hl_lock_token(&tok, plain), HL_EINVAL);
	HT_RC(hl_lock_last_token(&tok, plain), HL_EINVAL);
	for (i = 0; i < 10; i++) {
		hl_lock *l = i % 2 ? lb : la;
		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_OK(hl_lock_token(&tok, l));
		HT_CHECKF(tok > prev, "token %lld after %lld", (long long)tok,
		          (long long)prev);
		prev = tok;
		/* re-entry takes a new token too */
		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_OK(hl_lock_token(&tok, l));
		HT_EQ(tok, prev + 1);
		prev = tok;
		HT_OK(hl_lock_last_token(&last, lb));
		HT_EQ(last, tok);
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 0);
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 1);
		HT_RC(hl_lock_token(&tok, l), HL_ENOTHELD);
	}
	HT_EQ(prev, 20);
	/* the token key never expires */
	HT_EQ(ht_pttl(r, HT_S("redisson_lock_token:{fenced:x}")), -1);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_lock_free(plain);
	hl_client_free(a);
	hl_client_free(b);
}

/* ---- non-reentrant ------------------------------------------------------- */
static void nonreentrant(void)
{
	static const int kinds[] = {HL_LOCK_NONREENTRANT,
	                            HL_LOCK_FAIR_NONREENTRANT};
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0);
	size_t k;

	for (k = 0; k < 2; k++) {
		hl_lock *l = kind_lock(a, kinds[k], "nr:x");
		waiter w = {NULL, 20000, -1, -1, 0, 0, 1};
		int acquired = 7, released = 7;
		int64_t n = 7;
		pthread_t t;
		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_RC(hl_lock_acquire(l, -1, NULL), HL_EDEADLK);
		HT_CHECK(strstr(hl_error_last(), "non-reentrant") != NULL);
		HT_RC(hl_lock_try_acquire(&acquired, l, 0, -1, NULL),
		      HL_EDEADLK);
		HT_OK(hl_lock_hold_count(&n, l));
		HT_EQ(n, 1);
		HT_EQ(ht_hget_int(r, HT_S("nr:x"), ht_owner(l)), 1);
		/* another thread is another owner: it waits */
		w.lock = l;
		t = ht_thread_start(waiter_main, &w);
		ht_sleep_ms(200);
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 1);
		ht_thread_join(t, 20000);
		HT_OK(w.rc);
		HT_EQ(w.acquired, 1);
		HT_EQ(ht_exists(r, HT_S("nr:x")), 0);
		hl_lock_free(l);
	}
	hl_client_free(a);
}

/* ---- mutual exclusion across processes, per kind ------------------------- */
static void contend(int kind, const char *name)
{
	enum { P = 3 };
	ht_redis *r = ht_redis_default();
	char path[] = "/tmp/hl-kinds-XXXXXX";
	int pids[P], i, fd = mkstemp(path);
	HT_CHECK(fd >= 0);
	close(fd);
	for (i = 0; i < P; i++) {
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0) {
			hl_client *c = ht_client(r, 0);
			hl_lock *l = kind_lock(c, kind, name);
			int64_t end = ht_now_ms() + 2500;
			int got = 0;
			char tag[16];
			snprintf(tag, sizeof(tag), "p%d", i);
			while (ht_now_ms() < end) {
				int acq = 0;
				if (hl_lock_try_acquire(&acq, l, 1000, -1,
				                        NULL) != HL_OK ||
				    !acq)
					continue;
				ht_cs_enter(path, tag);
				ht_sleep_ms(1 + got % 3);
				ht_cs_leave(path, tag);
				got++;
				if (hl_lock_release(NULL, l) != HL_OK)
					_exit(4);
			}
			hl_lock_free(l);
			hl_client_free(c);
			_exit(got > 0 ? 0 : 3);
		}
		pids[i] = pid;
	}
	ht_contenders_wait(pids, P);
	ht_note("%s: %ld sections", hl_lock_kind_name(kind), ht_cs_check(path));
	HT_CHECK(ht_cs_check(path) >= P);
	HT_EQ(ht_exists(r, name, strlen(name)), 0);
	unlink(path);
}

static void exclusion_fair(void)
{
	contend(HL_LOCK_FAIR, "ex:fair");
}
static void exclusion_write(void)
{
	contend(HL_LOCK_WRITE, "ex:rw");
}
static void exclusion_spin(void)
{
	contend(HL_LOCK_SPIN, "ex:spin");
}
static void exclusion_fenced(void)
{
	contend(HL_LOCK_FENCED, "ex:fenced");
}
static void exclusion_nonreentrant(void)
{
	contend(HL_LOCK_NONREENTRANT, "ex:nr");
}

/* ---- the hold state bindings read instead of keeping their own ---------- */
static void hold_state(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0);
	hl_lock *l = kind_lock(a, HL_LOCK_FENCED, "state:x");
	hl_hold_state st;
	uint64_t e1;

	memset(&st, 0, sizeof(st));
	st.version = 2;
	HT_RC(hl_lock_hold_state(&st, l), HL_EINVAL);
	st.version = HL_HOLD_STATE_VERSION;
	HT_RC(hl_lock_hold_state(&st, NULL), HL_EINVAL);
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 0);
	HT_EQ(st.epoch, 0);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 1);
	HT_EQ(st.lost, 0);
	HT_EQ(st.lease_ms, -1);
	HT_EQ(st.token, 1);
	HT_CHECK(st.epoch != 0);
	e1 = st.epoch;
	HT_OK(hl_lock_acquire(l, 5000, NULL));
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 2);
	HT_EQ(st.epoch, e1);
	HT_EQ(st.lease_ms, 5000);
	HT_EQ(st.token, 2);
	/* lost: the count is 0, the epoch stays until a new hold */
	HT_OK(hl_lock_force_unlock(NULL, l));
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 0);
	HT_EQ(st.lost, 1);
	HT_EQ(st.epoch, e1);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 1);
	HT_EQ(st.lost, 0);
	HT_CHECK(st.epoch != e1);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_hold_state(&st, l));
	HT_EQ(st.count, 0);
	HT_EQ(st.epoch, 0);
	hl_lock_free(l);
	hl_client_free(a);
}

/* ---- bad input ------------------------------------------------------------
 */
static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0);
	hl_lock *l = NULL;
	int64_t v;

	HT_RC(hl_lock_new_kind(&l, a, 8, HT_S("x")), HL_EINVAL);
	HT_RC(hl_lock_new_kind(&l, a, -1, HT_S("x")), HL_EINVAL);
	HT_RC(hl_lock_new_kind(&l, a, HL_LOCK_FAIR, "", 0), HL_EINVAL);
	HT_RC(hl_lock_new_kind(&l, NULL, HL_LOCK_FAIR, HT_S("x")), HL_EINVAL);
	HT_RC(hl_lock_new_kind(NULL, a, HL_LOCK_FAIR, HT_S("x")), HL_EINVAL);
	HT_EQ(hl_lock_kind(NULL), -1);
	HT_STREQ(hl_lock_kind_name(HL_LOCK_READ), "read");
	HT_STREQ(hl_lock_kind_name(99), "unknown");
	HT_RC(hl_lock_token(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_set_backoff(NULL, 1, 2, 2), HL_EINVAL);
	/* binary names work for every kind */
	HT_OK(hl_lock_new_kind(&l, a, HL_LOCK_READ, "a\0b{", 4));
	HT_OK(hl_lock_acquire(l, 1000, NULL));
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	/* a closed client */
	HT_OK(hl_lock_new_kind(&l, a, HL_LOCK_FENCED, HT_S("x")));
	hl_client_close(a);
	HT_RC(hl_lock_acquire(l, -1, NULL), HL_ECLOSED);
	HT_RC(hl_lock_token(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_new_kind(&l, a, HL_LOCK_FAIR, HT_S("x")), HL_ECLOSED);
	hl_lock_free(l);
	hl_client_free(a);
}

HT_MAIN(HT_CASE(fair_wire), HT_CASE(fair_no_barge), HT_CASE(fair_fifo),
        HT_CASE(fair_dead_waiter), HT_CASE(rw_share), HT_CASE(rw_rules),
        HT_CASE(rw_wake), HT_CASE(rw_renew), HT_CASE(spin), HT_CASE(fenced),
        HT_CASE(nonreentrant), HT_CASE(exclusion_fair),
        HT_CASE(exclusion_write), HT_CASE(exclusion_spin),
        HT_CASE(exclusion_fenced), HT_CASE(exclusion_nonreentrant),
        HT_CASE(hold_state), HT_CASE(bad_input))
