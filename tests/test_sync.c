/*
 * Synchronizers: the semaphore (permits, wake-ups, a bound of 3 holders
 * across 4 processes, giving back no more than taken), the
 * permit-expirable semaphore (ids, leases, a killed holder's permits
 * coming back when their lease ends) and the count-down latch (set, count
 * down, every waiter woken at once by the "0" message, closed again by a
 * new count); Redisson's keys and messages; bad input.
 */
#include "harness.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static hl_semaphore *sem(hl_client *c, const char *name)
{
	hl_semaphore *s = NULL;
	HT_OK(hl_semaphore_new(&s, c, name, strlen(name)));
	return s;
}

static hl_expsem *expsem(hl_client *c, const char *name)
{
	hl_expsem *s = NULL;
	HT_OK(hl_expsem_new(&s, c, name, strlen(name)));
	return s;
}

static hl_latch *latch(hl_client *c, const char *name)
{
	hl_latch *l = NULL;
	HT_OK(hl_latch_new(&l, c, name, strlen(name)));
	return l;
}

static long long get_int(ht_redis *r, const char *key)
{
	return ht_get_int(ht_raw_of(r), key);
}

/* ---- semaphore ------------------------------------------------------------
 */
static void sem_basics(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_semaphore *s = sem(c, "sem:basics");
	int ok = 7, existed = 7;
	int64_t v = 7;

	HT_OK(hl_semaphore_available(&v, s));
	HT_EQ(v, 0);
	HT_OK(hl_semaphore_try_set_permits(&ok, s, 3));
	HT_EQ(ok, 1);
	HT_OK(hl_semaphore_try_set_permits(&ok, s, 5));
	HT_EQ(ok, 0);
	HT_EQ(get_int(r, "sem:basics"), 3);
	HT_OK(hl_semaphore_acquire(s, 2, NULL));
	HT_EQ(get_int(r, "sem:basics"), 1);
	HT_OK(hl_semaphore_held(&v, s));
	HT_EQ(v, 2);
	HT_OK(hl_semaphore_try_acquire(&ok, s, 2, 0, NULL));
	HT_EQ(ok, 0);
	HT_OK(hl_semaphore_try_acquire(&ok, s, 2, 200, NULL));
	HT_EQ(ok, 0);
	HT_EQ(get_int(r, "sem:basics"), 1);
	/* 0 permits: at once, as Redisson */
	HT_OK(hl_semaphore_try_acquire(&ok, s, 0, 0, NULL));
	HT_EQ(ok, 1);
	/* no more back than taken */
	HT_RC(hl_semaphore_release(s, 3), HL_ENOTHELD);
	HT_EQ(get_int(r, "sem:basics"), 1);
	HT_OK(hl_semaphore_release(s, 2));
	HT_EQ(get_int(r, "sem:basics"), 3);
	HT_RC(hl_semaphore_release(s, 1), HL_ENOTHELD);
	HT_OK(hl_semaphore_release(s, 0));
	/* add (negative too), drain, set */
	HT_OK(hl_semaphore_add_permits(&v, s, -1));
	HT_EQ(v, 2);
	HT_OK(hl_semaphore_drain(&v, s));
	HT_EQ(v, 2);
	HT_EQ(get_int(r, "sem:basics"), 0);
	HT_OK(hl_semaphore_held(&v, s));
	HT_EQ(v, 2);
	HT_OK(hl_semaphore_release(s, 2));
	HT_OK(hl_semaphore_set_permits(s, 5));
	HT_OK(hl_semaphore_available(&v, s));
	HT_EQ(v, 5);
	HT_OK(hl_semaphore_add_permits(&v, s, -7));
	HT_EQ(v, -2);
	HT_OK(hl_semaphore_try_acquire(&ok, s, 1, 0, NULL));
	HT_EQ(ok, 0);
	HT_OK(hl_semaphore_delete(&existed, s));
	HT_EQ(existed, 1);
	HT_EQ(ht_exists(r, HT_S("sem:basics")), 0);
	hl_semaphore_free(s);
	hl_client_free(c);
}

typedef struct sem_waiter {
	hl_semaphore *s;
	int64_t n, wait_ms;
	int rc, ok;
	int64_t at;
} sem_waiter;

static void *sem_wait_main(void *arg)
{
	sem_waiter *w = arg;
	w->rc = hl_semaphore_try_acquire(&w->ok, w->s, w->n, w->wait_ms, NULL);
	w->at = ht_now_ms();
	return NULL;
}

/* A release in another client wakes the waiter (the channel carries the
 * new count), not a poll; a release on the channel by hand too. */
static void sem_wake(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_semaphore *sa = sem(a, "sem:wake"), *sb = sem(b, "sem:wake");
	sem_waiter w = {sb, 2, 20000, -1, 0, 0};
	redisContext *sub = ht_sub_new(r, HT_S("redisson_sc:{sem:wake}"));
	char ch[64], *msg;
	int64_t t0;
	pthread_t t;

	HT_OK(hl_semaphore_set_permits(sa, 2));
	msg = ht_sub_next(sub, ch, sizeof ch);
	HT_STREQ(msg, "2");
	free(msg);
	HT_OK(hl_semaphore_acquire(sa, 2, NULL));
	t = ht_thread_start(sem_wait_main, &w);
	ht_wait_waiting(b, 1);
	HT_EQ(w.rc, -1);
	t0 = ht_now_ms();
	HT_OK(hl_semaphore_release(sa, 2));
	msg = ht_sub_next(sub, ch, sizeof ch);
	HT_STREQ(msg, "2"); /* the new count, as Redisson publishes */
	free(msg);
	ht_thread_join(t, 20000);
	HT_OK(w.rc);
	HT_EQ(w.ok, 1);
	HT_RANGE(w.at - t0, 0, 2000 * ht_scale());
	HT_EQ(get_int(r, "sem:wake"), 0);
	HT_OK(hl_semaphore_release(sb, 2));
	redisFree(sub);
	hl_semaphore_free(sa);
	hl_semaphore_free(sb);
	hl_client_free(a);
	hl_client_free(b);
}

/* A semaphore of 3, 12 workers in 4 processes: never 4 holders (counted
 * in shared memory, outside Redis), and every permit comes back. */
typedef struct bound_shared {
	atomic_int in, max, total;
} bound_shared;

typedef struct bound_arg {
	hl_client *c;
	bound_shared *sh;
} bound_arg;

static void *bound_worker(void *p)
{
	bound_arg *a = p;
	hl_semaphore *ps = NULL;
	int64_t end = ht_now_ms() + 2500;
	if (hl_semaphore_new(&ps, a->c, HT_S("sem:bound")) != HL_OK)
		_exit(2);
	while (ht_now_ms() < end) {
		int ok = 0, n, m;
		if (hl_semaphore_try_acquire(&ok, ps, 1, 1000, NULL) != HL_OK ||
		    !ok)
			continue;
		n = atomic_fetch_add(&a->sh->in, 1) + 1;
		m = atomic_load(&a->sh->max);
		while (n > m &&
		       !atomic_compare_exchange_weak(&a->sh->max, &m, n))
			;
		ht_sleep_ms(2);
		atomic_fetch_sub(&a->sh->in, 1);
		atomic_fetch_add(&a->sh->total, 1);
		if (hl_semaphore_release(ps, 1) != HL_OK)
			_exit(4);
	}
	hl_semaphore_free(ps);
	return NULL;
}

static void sem_bound(void)
{
	enum { P = 4, T = 3 };
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_semaphore *s = sem(c, "sem:bound");
	bound_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int pids[P], i;
	int64_t v;

	HT_CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	HT_OK(hl_semaphore_set_permits(s, 3));
	for (i = 0; i < P; i++) {
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0) {
			bound_arg arg;
			pthread_t th[T];
			int k;
			arg.c = ht_client(r, 0);
			arg.sh = sh;
			for (k = 0; k < T; k++)
				th[k] = ht_thread_start(bound_worker, &arg);
			for (k = 0; k < T; k++)
				ht_thread_join(th[k], 20000);
			hl_client_free(arg.c);
			_exit(0);
		}
		pids[i] = pid;
	}
	ht_contenders_wait(pids, P);
	ht_note("%d sections, at most %d at once", atomic_load(&sh->total),
	        atomic_load(&sh->max));
	HT_RANGE(atomic_load(&sh->max), 1, 3);
	HT_CHECK(atomic_load(&sh->total) >= 12);
	HT_OK(hl_semaphore_available(&v, s));
	HT_EQ(v, 3);
	munmap(sh, sizeof(*sh));
	hl_semaphore_free(s);
	hl_client_free(c);
}

/* Waiters cancelled while a permit comes back, some of them with an
 * attempt in flight: no permit is ever lost (taken in Redis with nobody
 * holding it) and none made up. */
static void sem_cancel_race(void)
{
	enum { N = 60, ROUNDS = 15 };
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *g = ht_client(r, 0);
	hl_semaphore *s = sem(c, "sem:race"), *giver = sem(g, "sem:race");
	hl_expsem *x = expsem(c, "xs:race");
	static char ids[N][HL_PERMIT_ID_LEN + 1];
	hl_task *t[N];
	int round, i;
	int64_t v;

	for (round = 0; round < ROUNDS; round++) {
		int expirable = round % 2;
		if (expirable) {
			HT_OK(hl_expsem_set_permits(x, 0));
		} else {
			HT_OK(hl_semaphore_set_permits(s, 0));
		}
		for (i = 0; i < N; i++) {
			if (expirable)
				HT_OK(hl_expsem_try_acquire_start(
				        &t[i], ids[i], 1, x, -1, -1));
			else
				HT_OK(hl_semaphore_try_acquire_start(&t[i], s,
				                                     1, -1));
		}
		ht_sleep_ms(50);
		/* one permit comes back while every waiter is cancelled */
		if (expirable)
			HT_OK(hl_expsem_add_permits(NULL, x, 1));
		else
			HT_OK(hl_semaphore_add_permits(NULL, giver, 1));
		for (i = 0; i < N; i++)
			hl_task_cancel(t[i]);
		for (i = 0; i < N; i++) {
			int got = 0, rc;
			HT_OK(hl_task_wait(t[i], 10000, NULL));
			rc = hl_task_result(&got, t[i]);
			HT_CHECKF(rc == HL_OK || rc == HL_EINTERRUPTED,
			          "task %d: %s", i, hl_status_name(rc));
			if (rc == HL_OK && got) {
				/* it had it before the cancel: ours */
				if (expirable)
					HT_OK(hl_expsem_release(x, ids[i]));
				else
					HT_OK(hl_semaphore_release(s, 1));
			}
			hl_task_free(t[i]);
		}
		if (expirable) {
			HT_OK(hl_expsem_acquired(&v, x));
			HT_EQ(v, 0);
			HT_OK(hl_expsem_available(&v, x));
		} else {
			HT_OK(hl_semaphore_held(&v, s));
			HT_EQ(v, 0);
			HT_OK(hl_semaphore_available(&v, s));
		}
		HT_CHECKF(v == 1, "round %d (%s): %lld permits left of 1",
		          round, expirable ? "expirable" : "semaphore",
		          (long long)v);
	}
	hl_semaphore_free(s);
	hl_semaphore_free(giver);
	hl_expsem_free(x);
	hl_client_free(c);
	hl_client_free(g);
}

/* ---- permit-expirable semaphore ----------------------------------------- */
static void expsem_basics(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_expsem *s = expsem(c, "xs:basics");
	char ids[3][HL_PERMIT_ID_LEN + 1];
	int ok = 7;
	int64_t v = 7;
	size_t i;

	HT_OK(hl_expsem_try_set_permits(&ok, s, 3));
	HT_EQ(ok, 1);
	HT_OK(hl_expsem_try_acquire(&ok, ids[0], 2, s, 0, 60000, NULL));
	HT_EQ(ok, 1);
	for (i = 0; i < 2; i++) {
		HT_EQ(strlen(ids[i]), 32);
		HT_EQ(strspn(ids[i], "0123456789abcdef"), 32);
	}
	HT_CHECK(strcmp(ids[0], ids[1]) != 0);
	HT_OK(hl_expsem_available(&v, s));
	HT_EQ(v, 1);
	HT_OK(hl_expsem_acquired(&v, s));
	HT_EQ(v, 2);
	HT_OK(hl_expsem_permits(&v, s));
	HT_EQ(v, 3);
	HT_EQ(get_int(r, "xs:basics"), 1);
	{
		/* raw 16-byte members in {name}:timeout */
		redisReply *rep =
		        ht_raw(ht_raw_of(r), "ZRANGE {xs:basics}:timeout 0 -1");
		HT_EQ(rep->elements, 2);
		HT_EQ(rep->element[0]->len, 16);
		freeReplyObject(rep);
	}
	{
		char two[2][HL_PERMIT_ID_LEN + 1];
		HT_OK(hl_expsem_try_acquire(&ok, two[0], 2, s, 0, 60000, NULL));
		HT_EQ(ok, 0);
	}
	HT_OK(hl_expsem_lease_time(&v, s, ids[0]));
	HT_RANGE(v, 50000, 60000);
	HT_OK(hl_expsem_update_lease(s, ids[0], -1));
	HT_OK(hl_expsem_lease_time(&v, s, ids[0]));
	HT_EQ(v, -1);
	HT_OK(hl_expsem_release(s, ids[0]));
	HT_RC(hl_expsem_release(s, ids[0]), HL_ENOTHELD);
	HT_RC(hl_expsem_update_lease(s, ids[0], 1000), HL_ENOTHELD);
	HT_RC(hl_expsem_lease_time(&v, s, ids[0]), HL_ENOTHELD);
	HT_RC(hl_expsem_release(s, "xyz"), HL_EINVAL);
	HT_RC(hl_expsem_release(s, ""), HL_EINVAL);
	HT_RC(hl_expsem_release(s, NULL), HL_EINVAL);
	HT_RC(hl_expsem_release(s, "00112233445566778899aabbccddeeff"),
	      HL_ENOTHELD);
	HT_OK(hl_expsem_release(s, ids[1]));
	HT_OK(hl_expsem_available(&v, s));
	HT_EQ(v, 3);
	/* the total can be set: available follows */
	HT_OK(hl_expsem_acquire(ids[0], 1, s, 60000, NULL));
	HT_OK(hl_expsem_set_permits(s, 5));
	HT_OK(hl_expsem_available(&v, s));
	HT_EQ(v, 4);
	HT_OK(hl_expsem_add_permits(&v, s, -2));
	HT_EQ(v, 2);
	HT_OK(hl_expsem_release(s, ids[0]));
	/* bad input */
	HT_RC(hl_expsem_try_acquire(&ok, ids[0], 0, s, 0, 1000, NULL),
	      HL_EINVAL);
	HT_RC(hl_expsem_try_acquire(&ok, ids[0], 1, s, 0, 0, NULL), HL_EINVAL);
	HT_RC(hl_expsem_try_acquire(&ok, NULL, 1, s, 0, 1000, NULL), HL_EINVAL);
	HT_RC(hl_expsem_try_set_permits(&ok, s, -1), HL_EINVAL);
	hl_expsem_free(s);
	hl_client_free(c);
}

/* A holder killed with kill -9 gives its permit back when its lease ends,
 * and a waiter gets it then: not before, not much later. */
static void expsem_killed_holder(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_expsem *s = expsem(c, "xs:killed");
	char id[HL_PERMIT_ID_LEN + 1];
	int ok = 0, status, fds[2];
	int64_t t0, took;
	pid_t pid;
	char b;

	HT_OK(hl_expsem_try_set_permits(NULL, s, 1));
	HT_CHECK(pipe(fds) == 0);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *pc = ht_client(r, 0);
		hl_expsem *ps = expsem(pc, "xs:killed");
		char pid_id[HL_PERMIT_ID_LEN + 1];
		if (hl_expsem_acquire(pid_id, 1, ps, 1500, NULL) != HL_OK)
			_exit(3);
		if (write(fds[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	HT_CHECK(read(fds[0], &b, 1) == 1);
	t0 = ht_now_ms();
	kill(pid, SIGKILL);
	HT_EQ(waitpid(pid, &status, 0), pid);
	HT_OK(hl_expsem_try_acquire(&ok, id, 1, s, 10000, 60000, NULL));
	took = ht_now_ms() - t0;
	ht_note("the dead holder's permit came back after %lld ms "
	        "(lease 1500)",
	        (long long)took);
	HT_EQ(ok, 1);
	HT_RANGE(took, 1000, 1500 + 2000 * ht_scale());
	HT_OK(hl_expsem_release(s, id));
	close(fds[0]);
	close(fds[1]);
	hl_expsem_free(s);
	hl_client_free(c);
}

/* ---- count-down latch -----------------------------------------------------
 */
static void latch_basics(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_latch *l = latch(c, "latch:basics");
	redisContext *sub =
	        ht_sub_new(r, HT_S("redisson_countdownlatch__channel__{latch:"
	                           "basics}"));
	char ch[128], *msg;
	int ok = 7, existed = 7;
	int64_t v = 7;
	int64_t t0;

	HT_OK(hl_latch_count(&v, l));
	HT_EQ(v, 0);
	HT_OK(hl_latch_wait(&ok, l, 0, NULL));
	HT_EQ(ok, 1); /* never set: open */
	HT_OK(hl_latch_try_set_count(&ok, l, 3));
	HT_EQ(ok, 1);
	msg = ht_sub_next(sub, ch, sizeof ch);
	HT_STREQ(msg, "1");
	free(msg);
	HT_OK(hl_latch_try_set_count(&ok, l, 5));
	HT_EQ(ok, 0);
	HT_OK(hl_latch_count(&v, l));
	HT_EQ(v, 3);
	t0 = ht_now_ms();
	HT_OK(hl_latch_wait(&ok, l, 300, NULL));
	HT_EQ(ok, 0);
	HT_RANGE(ht_now_ms() - t0, 250, 300 + 1000 * ht_scale());
	HT_OK(hl_latch_count_down(&v, l));
	HT_EQ(v, 2);
	HT_OK(hl_latch_count_down(&v, l));
	HT_OK(hl_latch_count_down(&v, l));
	HT_EQ(v, 0);
	msg = ht_sub_next(sub, ch, sizeof ch);
	HT_STREQ(msg, "0");
	free(msg);
	HT_EQ(ht_exists(r, HT_S("latch:basics")), 0);
	HT_OK(hl_latch_wait(&ok, l, 1000, NULL));
	HT_EQ(ok, 1);
	/* counting down an open latch changes nothing */
	HT_OK(hl_latch_count_down(&v, l));
	HT_EQ(v, 0);
	HT_EQ(ht_exists(r, HT_S("latch:basics")), 0);
	/* set again: closed for new waiters */
	HT_OK(hl_latch_try_set_count(&ok, l, 1));
	HT_EQ(ok, 1);
	HT_OK(hl_latch_wait(&ok, l, 100, NULL));
	HT_EQ(ok, 0);
	HT_OK(hl_latch_delete(&existed, l));
	HT_EQ(existed, 1);
	HT_OK(hl_latch_delete(&existed, l));
	HT_EQ(existed, 0);
	/* bad input */
	HT_RC(hl_latch_try_set_count(&ok, l, 0), HL_EINVAL);
	HT_RC(hl_latch_try_set_count(&ok, l, -3), HL_EINVAL);
	HT_RC(hl_latch_wait(&ok, l, -2, NULL), HL_EINVAL);
	HT_RC(hl_latch_count(&v, NULL), HL_EINVAL);
	redisFree(sub);
	hl_latch_free(l);
	hl_client_free(c);
}

typedef struct latch_waiter {
	hl_latch *l;
	int rc, ok;
	int64_t at;
} latch_waiter;

static void *latch_wait_main(void *arg)
{
	latch_waiter *w = arg;
	w->rc = hl_latch_wait(&w->ok, w->l, 30000, NULL);
	w->at = ht_now_ms();
	return NULL;
}

static int one_waiting(void *arg)
{
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(&s, arg) == HL_OK && s.waiting == 1;
}

/* Deleting a latch does not open it for its waiters (they hear "1", as
 * Redisson's do); a new count counted down to zero does. */
static void latch_delete_keeps_waiting(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_latch *la = latch(a, "latch:del"), *lb = latch(b, "latch:del");
	latch_waiter w = {la, -1, 0, 0};
	int64_t t0;
	pthread_t t;

	HT_OK(hl_latch_try_set_count(NULL, lb, 1));
	t = ht_thread_start(latch_wait_main, &w);
	/* waiting with its subscription active (before that, a latch gone
	 * counts as open: its "0" may have been missed) */
	HT_CHECK(ht_wait_until(one_waiting, a, 30000));
	HT_OK(hl_latch_delete(NULL, lb));
	ht_sleep_ms(700);
	HT_EQ(w.rc, -1); /* still waiting */
	HT_OK(hl_latch_try_set_count(NULL, lb, 1));
	ht_sleep_ms(200);
	HT_EQ(w.rc, -1);
	t0 = ht_now_ms();
	HT_OK(hl_latch_count_down(NULL, lb));
	ht_thread_join(t, 20000);
	HT_OK(w.rc);
	HT_EQ(w.ok, 1);
	HT_RANGE(w.at - t0, 0, 2000 * ht_scale());
	hl_latch_free(la);
	hl_latch_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* A latch of 10 counted down by 10 processes releases every waiter at
 * once (two clients' waiters), on the "0" message. */
static void latch_wake(void)
{
	enum { P = 10, W = 6 };
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_latch *la = latch(a, "latch:wake"), *lb = latch(b, "latch:wake");
	latch_waiter w[W];
	pthread_t t[W];
	int pids[P], i, fds[2];
	int64_t last = 0, v = 0;
	char go[P];

	HT_OK(hl_latch_try_set_count(NULL, la, P));
	for (i = 0; i < W; i++) {
		w[i].l = i % 2 ? lb : la;
		w[i].rc = -1;
		t[i] = ht_thread_start(latch_wait_main, &w[i]);
	}
	HT_CHECK(pipe(fds) == 0);
	for (i = 0; i < P; i++) {
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0) {
			hl_client *pc = ht_client(r, 0);
			hl_latch *pl = latch(pc, "latch:wake");
			char x;
			if (read(fds[0], &x, 1) != 1)
				_exit(3);
			if (hl_latch_count_down(NULL, pl) != HL_OK)
				_exit(4);
			hl_latch_free(pl);
			hl_client_free(pc);
			_exit(0);
		}
		pids[i] = pid;
	}
	ht_sleep_ms(300);
	for (i = 0; i < W; i++)
		HT_EQ(w[i].rc, -1);
	memset(go, 'g', sizeof go);
	HT_CHECK(write(fds[1], go, P) == P);
	ht_contenders_wait(pids, P);
	last = ht_now_ms(); /* every count-down is done */
	HT_OK(hl_latch_count(&v, la));
	HT_EQ(v, 0);
	for (i = 0; i < W; i++) {
		ht_thread_join(t[i], 20000);
		HT_OK(w[i].rc);
		HT_EQ(w[i].ok, 1);
		HT_RANGE(w[i].at - last, -2000, 2000 * ht_scale());
	}
	close(fds[0]);
	close(fds[1]);
	hl_latch_free(la);
	hl_latch_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* ---- bad input --------------------------------------------------------------
 */
/* ---- in doubt: a change sent that Redis never confirmed ------------------
 */

/* A client through p whose retries give up within about a second. */
static hl_client *doubt_client(ht_proxy *p, int retries)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.connect_timeout_ms = 250;
	o.retry_attempts = retries;
	o.retry_delay_ms = 50;
	return ht_client_url(p->url, &o);
}

static int doubt_landed(void *arg)
{
	ht_redis *r = arg;
	return get_int(r, "sync:doubt:sem") == 2 &&
	       get_int(r, "sync:doubt:latch") == 1 &&
	       get_int(r, "sync:doubt:xs") == 1;
}

/* Releases and a count-down that reach Redis but whose replies never come
 * back (the proxy holds them until every retry gave up) end in
 * HL_EINDOUBT, not HL_EIO: the permits no longer count as the client's,
 * so a second release cannot give one back twice, and the held copies,
 * let through late, run once (their marker), never twice. */
static void in_doubt(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = doubt_client(p, 1);
	hl_semaphore *s = sem(c, "sync:doubt:sem");
	hl_latch *l = latch(c, "sync:doubt:latch");
	hl_expsem *x = expsem(c, "sync:doubt:xs");
	char id[HL_PERMIT_ID_LEN + 1];
	int64_t n = -1;
	int acquired = 0;

	HT_OK(hl_semaphore_try_set_permits(NULL, s, 3));
	HT_OK(hl_semaphore_try_acquire(&acquired, s, 2, 0, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_latch_try_set_count(NULL, l, 2));
	HT_OK(hl_expsem_try_set_permits(NULL, x, 1));
	HT_OK(hl_expsem_acquire(id, 1, x, -1, NULL));

	ht_proxy_cmd(p, "blackhole on");
	HT_RC(hl_semaphore_release(s, 1), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "not confirmed") != NULL);
	HT_OK(hl_semaphore_held(&n, s));
	HT_EQ(n, 1); /* the one not sent is still ours */
	/* Its connection gave up; a new one cannot even greet Redis: nothing
	 * is sent, so that is an ordinary failure, safe to retry. */
	HT_RC(hl_latch_count_down(NULL, l), HL_EIO);
	ht_proxy_cmd(p, "blackhole off");
	HT_OK(hl_latch_count(&n, l)); /* connected again */
	HT_EQ(n, 2);
	ht_proxy_cmd(p, "blackhole on");
	HT_RC(hl_latch_count_down(NULL, l), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "may or may not have counted") !=
	         NULL);
	ht_proxy_cmd(p, "blackhole off");
	HT_OK(hl_expsem_available(&n, x));
	ht_proxy_cmd(p, "blackhole on");
	HT_RC(hl_expsem_release(x, id), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "releasing it again is safe") != NULL);
	ht_proxy_cmd(p, "blackhole off");

	/* the held copies (a first send and a resend each) arrive late: once
	 * the first runs, a while for any second to show */
	HT_CHECK(ht_wait_until(doubt_landed, r, 10000));
	ht_sleep_ms(300);
	HT_EQ(get_int(r, "sync:doubt:sem"), 2);
	HT_EQ(get_int(r, "sync:doubt:latch"), 1);
	HT_EQ(get_int(r, "sync:doubt:xs"), 1);
	HT_RC(hl_semaphore_release(s, 2), HL_ENOTHELD);
	HT_OK(hl_semaphore_release(s, 1));
	HT_EQ(get_int(r, "sync:doubt:sem"), 3);
	HT_RC(hl_expsem_release(x, id), HL_ENOTHELD); /* it was back */
	HT_OK(hl_latch_count_down(&n, l));
	HT_EQ(n, 0);

	hl_semaphore_free(s);
	hl_latch_free(l);
	hl_expsem_free(x);
	hl_client_free(c);
	ht_proxy_stop(p);
}

typedef struct late_release {
	hl_expsem *x;
	const char *id;
	int rc;
} late_release;

static void *late_release_main(void *arg)
{
	late_release *a = arg;
	a->rc = hl_expsem_release(a->x, a->id);
	return NULL;
}

/* A permit release whose first reply is lost and whose resend lands finds
 * its own first run (the marker), and says released, not "no such
 * permit". */
static void expsem_release_resent(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = doubt_client(p, 8);
	hl_expsem *x = expsem(c, "sync:resent:xs");
	char id[HL_PERMIT_ID_LEN + 1];
	late_release a;
	pthread_t t;

	HT_OK(hl_expsem_try_set_permits(NULL, x, 1));
	HT_OK(hl_expsem_acquire(id, 1, x, -1, NULL));
	a.x = x;
	a.id = id;
	a.rc = -1;
	ht_proxy_cmd(p, "blackhole on");
	t = ht_thread_start(late_release_main, &a);
	ht_sleep_ms(400); /* the first send waits in the proxy, unanswered */
	ht_proxy_cmd(p, "blackhole off");
	ht_thread_join(t, 30000);
	HT_OK(a.rc);
	HT_EQ(get_int(r, "sync:resent:xs"), 1);
	hl_expsem_free(x);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_semaphore *s = NULL;
	hl_expsem *x = NULL;
	hl_latch *l = NULL;
	int ok;
	int64_t v;

	HT_RC(hl_semaphore_new(&s, c, "", 0), HL_EINVAL);
	HT_RC(hl_semaphore_new(NULL, c, HT_S("x")), HL_EINVAL);
	HT_RC(hl_expsem_new(&x, NULL, HT_S("x")), HL_EINVAL);
	HT_RC(hl_latch_new(&l, c, NULL, 3), HL_EINVAL);
	HT_RC(hl_semaphore_try_acquire(&ok, NULL, 1, 0, NULL), HL_EINVAL);
	HT_RC(hl_semaphore_release(NULL, 1), HL_EINVAL);
	HT_RC(hl_latch_count_down(NULL, NULL), HL_EINVAL);
	s = sem(c, "bad:sem");
	HT_RC(hl_semaphore_try_acquire(&ok, s, -1, 0, NULL), HL_EINVAL);
	HT_RC(hl_semaphore_try_acquire(&ok, s, 1, -2, NULL), HL_EINVAL);
	HT_RC(hl_semaphore_release(s, -1), HL_EINVAL);
	HT_RC(hl_semaphore_try_set_permits(&ok, s, -1), HL_EINVAL);
	HT_RC(hl_semaphore_set_permits(s, -5), HL_EINVAL);
	/* nothing was written */
	HT_EQ(ht_exists(r, HT_S("bad:sem")), 0);
	/* binary names */
	hl_semaphore_free(s);
	HT_OK(hl_semaphore_new(&s, c, "a\0b", 3));
	HT_OK(hl_semaphore_set_permits(s, 1));
	HT_OK(hl_semaphore_acquire(s, 1, NULL));
	HT_OK(hl_semaphore_release(s, 1));
	HT_OK(hl_semaphore_available(&v, s));
	HT_EQ(v, 1);
	/* a closed client */
	hl_client_close(c);
	HT_RC(hl_semaphore_acquire(s, 1, NULL), HL_ECLOSED);
	HT_RC(hl_semaphore_available(&v, s), HL_ECLOSED);
	hl_semaphore_free(s);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(sem_basics), HT_CASE(sem_wake), HT_CASE(sem_bound),
        HT_CASE(sem_cancel_race), HT_CASE(latch_delete_keeps_waiting),
        HT_CASE(expsem_basics), HT_CASE(expsem_killed_holder),
        HT_CASE(latch_basics), HT_CASE(latch_wake), HT_CASE(in_doubt),
        HT_CASE(expsem_release_resent), HT_CASE(bad_input))
