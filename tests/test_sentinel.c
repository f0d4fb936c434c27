/*
 * Sentinel: a master with two replicas and three sentinels (harness_topo),
 * reached through a redis-sentinel:// URL. The client finds the master
 * through the sentinels, follows failovers (kill -9 of the master, a
 * SENTINEL FAILOVER), keeps renewing its holds on the new master, wakes its
 * waiters, waits for the replicas after each lock change (WAIT), and no
 * two processes ever hold the lock at once across a failover.
 */
#include "harness.h"
#include "harness_topo.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* A client through the sentinels; retries 0: the harness's failover
 * policy (8). */
static hl_client *sentinel_client_retries(ht_sentinel *s, int64_t watchdog_ms,
                                          int retries)
{
	hl_client_options o;
	char url[600];
	ht_failover_options(&o, watchdog_ms);
	if (retries > 0)
		o.retry_attempts = retries;
	if (s->opts.sentinel_password)
		o.sentinel_password = s->sentinel_password;
	ht_sentinel_url(s, url, sizeof url);
	if (s->opts.password) {
		/* the data nodes' password in the userinfo */
		char with[700];
		const char *rest = strstr(url, "://") + 3;
		snprintf(with, sizeof with, "%.*s:%s@%s", (int)(rest - url),
		         url, s->password, rest);
		return ht_client_url(with, &o);
	}
	return ht_client_url(url, &o);
}

static hl_client *sentinel_client(ht_sentinel *s, int64_t watchdog_ms)
{
	return sentinel_client_retries(s, watchdog_ms, 0);
}

static long long node_hget(ht_node *n, const char *key, const char *field)
{
	redisReply *r = ht_node_cmd(n, "HGET %s %s", key, field);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
	freeReplyObject(r);
	return v;
}

/* The lock lives on the master the sentinels name, and WAIT put it on the
 * replicas before the acquire returned. */
static void finds_master(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client *c = sentinel_client(s, 3000);
	hl_lock *l = ht_lock(c, "sent:basic");
	ht_node *m = ht_sentinel_master(s);
	int i, released = 0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(node_hget(m, "sent:basic", ht_owner(l)), 1);
	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (&s->data[i] != m)
			HT_EQ(node_hget(&s->data[i], "sent:basic", ht_owner(l)),
			      1);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	hl_lock_free(l);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

/* Credentials: the data nodes' password in the URL, the sentinels' own
 * in the options; a wrong sentinel password and an unknown master name
 * fail at once with a clear message. */
static void credentials(void)
{
	ht_sentinel_opts so = {0};
	ht_sentinel *s;
	hl_client *c, *bad = NULL;
	hl_client_options o;
	hl_lock *l;
	char url[600];
	so.password = "datapass";
	so.sentinel_password = "sentpass";
	s = ht_sentinel_start(&so);
	c = sentinel_client(s, 3000);
	l = ht_lock(c, "sent:creds");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = 1000;
	o.sentinel_password = "wrong";
	ht_sentinel_url(s, url, sizeof url);
	HT_RC(hl_client_new(&bad, url, &o), HL_EAUTH);
	ht_note("wrong sentinel password: %s", hl_error_last());
	HT_CHECK(strstr(hl_error_last(), "sentinel") != NULL);
	HT_CHECK(strstr(hl_error_last(), "wrong") == NULL);

	o.sentinel_password = "sentpass";
	snprintf(strrchr(url, '/') + 1, 64, "nosuchmaster");
	HT_RC(hl_client_new(&bad, url, &o), HL_ECONNECT);
	ht_note("unknown master: %s", hl_error_last());
	HT_CHECK(strstr(hl_error_last(), "nosuchmaster") != NULL);
	ht_sentinel_destroy(s);
}

struct waiter {
	hl_lock *l;
	int64_t wait_ms;
	int rc, acquired;
	int64_t took_ms;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	int64_t t0 = ht_now_ms();
	w->rc = hl_lock_try_acquire(&w->acquired, w->l, w->wait_ms, -1, NULL);
	w->took_ms = ht_now_ms() - t0;
	return NULL;
}

/* kill -9 of the master while a lock is held with the watchdog and a
 * waiter waits: after the failover the holder is still renewed on the new
 * master, and the waiter gets the lock once it is released, within its
 * wait. */
static void kill_master(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client *c = sentinel_client(s, 6000), *c2 = sentinel_client(s, 6000);
	hl_lock *l = ht_lock(c, "sent:kill"), *l2 = ht_lock(c2, "sent:kill");
	struct waiter w = {l2, 30000, 0, 0, 0};
	pthread_t t;
	int old, now, lost = 7;
	int64_t t0;

	/* the waiter's thread and this one are one owner */
	HT_OK(hl_lock_set_owner(l2, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	t = ht_thread_start(wait_thread, &w);
	ht_sleep_ms(300);
	old = ht_sentinel_kill_master(s);
	t0 = ht_now_ms();
	now = ht_sentinel_wait_failover(s, old, 20000);
	ht_note("failover from %d to %d in %lld ms", old, now,
	        (long long)(ht_now_ms() - t0));
	/* renewed on the new master: a lease (6 s) after the kill it is
	 * still there */
	ht_sleep_ms(6500);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_EQ(node_hget(ht_sentinel_node(s, now), "sent:kill", ht_owner(l)), 1);
	HT_EQ(w.acquired, 0); /* still waiting */
	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, l));
	ht_thread_join(t, 35000);
	ht_note("waiter: acquired %d, %lld ms after the release", w.acquired,
	        (long long)(ht_now_ms() - t0));
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_OK(hl_lock_release(NULL, l2));
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
	ht_sentinel_destroy(s);
}

static hl_client *contender_client(void *s)
{
	return sentinel_client(s, 6000);
}

/* Processes contend through failovers (a forced one, then a kill -9); each
 * critical section is recorded; none may overlap another. */
static void overlap_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	char path[300], tag[8];
	int kids[3], i, old;
	long n;

	snprintf(path, sizeof path, "%s/sections", s->dir);
	for (i = 0; i < 3; i++) {
		snprintf(tag, sizeof tag, "p%d", i);
		kids[i] = ht_contender(contender_client, s, "sent:overlap",
		                       path, tag, 14000);
	}
	ht_sleep_ms(2000);
	ht_sentinel_failover(s);
	ht_sleep_ms(2000);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	ht_contenders_wait(kids, 3);
	n = ht_cs_check(path);
	ht_note("%ld critical sections across two failovers, no overlap", n);
	HT_CHECK(n >= 30);
	ht_sentinel_destroy(s);
}

/* Fenced tokens stay strictly increasing through failovers: processes
 * take the fenced lock in turn and write each token while they hold it, a
 * forced failover and a kill -9 of the master happen meanwhile, and every
 * token in the file is greater than the one before it. (WAIT puts each
 * INCR on the replicas before the token is handed out.) */
static void fenced_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	char path[300], line[64];
	int kids[3], i, old, status;
	long long prev = 0, tok, n = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/tokens", s->dir);
	for (i = 0; i < 3; i++) {
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0) {
			hl_client *c = sentinel_client(s, 6000);
			hl_lock *l = NULL;
			int64_t end = ht_now_ms() + 14000;
			int got = 0;
			if (hl_lock_new_kind(&l, c, HL_LOCK_FENCED,
			                     HT_S("sent:fenced")) != HL_OK)
				_exit(2);
			while (ht_now_ms() < end) {
				int acq = 0;
				int64_t t = 0;
				char buf[64];
				int len;
				FILE *out;
				if (hl_lock_try_acquire(&acq, l, 1000, -1,
				                        NULL) != HL_OK ||
				    !acq)
					continue;
				if (hl_lock_token(&t, l) != HL_OK)
					_exit(5);
				len = snprintf(buf, sizeof buf, "%lld\n",
				               (long long)t);
				out = fopen(path, "a");
				if (!out)
					_exit(6);
				fwrite(buf, 1, (size_t)len, out);
				fclose(out);
				ht_sleep_ms(3);
				got++;
				hl_lock_release(NULL, l);
			}
			hl_lock_free(l);
			hl_client_free(c);
			_exit(got > 0 ? 0 : 3);
		}
		kids[i] = pid;
	}
	ht_sleep_ms(2500);
	ht_sentinel_failover(s);
	ht_sleep_ms(2500);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	for (i = 0; i < 3; i++) {
		HT_EQ(waitpid(kids[i], &status, 0), kids[i]);
		HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		          "child %d: status %d", i, status);
	}
	f = fopen(path, "r");
	HT_CHECK(f != NULL);
	while (fgets(line, sizeof line, f)) {
		tok = atoll(line);
		HT_CHECKF(tok > prev, "token %lld after %lld (line %lld)", tok,
		          prev, n + 1);
		prev = tok;
		n++;
	}
	fclose(f);
	ht_note("%lld tokens, strictly increasing, across two failovers", n);
	HT_CHECK(n >= 30);
	ht_sentinel_destroy(s);
}

/* The synchronizers through a failover (kill -9 of the master): 3
 * processes share a semaphore of 2 permits and a permit-expirable
 * semaphore of 2, taking one and then the other, and never hold more than 2
 * of either at once (counters outside Redis, in shared memory); every
 * permit comes back, none twice (each ends with 2); a latch of 6, counted down
 * by each process before and after the failover, wakes the parent's
 * waiter, which waited through it, only after the last count-down. */
typedef struct sync_shared {
	atomic_int holders[2], max_holders[2], count_downs;
	atomic_llong last_count_down_ms;
} sync_shared;

static int sync_child(ht_sentinel *s, sync_shared *sh, int64_t run_ms)
{
	/* A release or count-down has no deadline to wait within: its
	 * retry policy must outlast a failover (here about 4 s) or it ends
	 * HL_EINDOUBT; 20 resends back off over about 9 s. */
	hl_client *c = sentinel_client_retries(s, 6000, 20);
	hl_semaphore *sem = NULL;
	hl_expsem *xs = NULL;
	hl_latch *l = NULL;
	int64_t end = ht_now_ms() + run_ms, left = -1;
	int got = 0, rc, k = 0;
	if (hl_semaphore_new(&sem, c, HT_S("sent:sem")) != HL_OK ||
	    hl_expsem_new(&xs, c, HT_S("sent:xs")) != HL_OK ||
	    hl_latch_new(&l, c, HT_S("sent:latch")) != HL_OK)
		return 2;
	if (hl_latch_count_down(NULL, l) != HL_OK)
		return 3;
	atomic_fetch_add(&sh->count_downs, 1);
	while (ht_now_ms() < end) {
		char id[HL_PERMIT_ID_LEN + 1];
		int acq = 0, now;
		k ^= 1; /* the semaphore, then the expirable one */
		if ((k ? hl_expsem_try_acquire(&acq, id, 1, xs, 1000, 20000,
		                               NULL)
		       : hl_semaphore_try_acquire(&acq, sem, 1, 1000, NULL)) !=
		            HL_OK ||
		    !acq)
			continue;
		now = atomic_fetch_add(&sh->holders[k], 1) + 1;
		for (int m = atomic_load(&sh->max_holders[k]); now > m;
		     m = atomic_load(&sh->max_holders[k]))
			if (atomic_compare_exchange_weak(&sh->max_holders[k],
			                                 &m, now))
				break;
		ht_sleep_ms(3);
		atomic_fetch_sub(&sh->holders[k], 1);
		rc = k ? hl_expsem_release(xs, id)
		       : hl_semaphore_release(sem, 1);
		if (rc != HL_OK) {
			fprintf(stderr, "release (%s): %s: %s\n",
			        k ? "expirable" : "semaphore",
			        hl_status_str(rc), hl_error_last());
			return 4;
		}
		got++;
	}
	if (hl_latch_count_down(&left, l) != HL_OK)
		return 5;
	atomic_store(&sh->last_count_down_ms, ht_now_ms());
	atomic_fetch_add(&sh->count_downs, 1);
	hl_semaphore_free(sem);
	hl_expsem_free(xs);
	hl_latch_free(l);
	hl_client_free(c);
	return got > 1 ? 0 : 6;
}

static void sync_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	sync_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	hl_client *c = sentinel_client(s, 6000);
	hl_semaphore *sem = NULL;
	hl_expsem *xs = NULL;
	hl_latch *l = NULL;
	hl_task *wait = NULL;
	int kids[3], i, old, status, open = 0;
	int64_t n = -1, woke;

	HT_CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	HT_OK(hl_semaphore_new(&sem, c, HT_S("sent:sem")));
	HT_OK(hl_latch_new(&l, c, HT_S("sent:latch")));
	HT_OK(hl_semaphore_try_set_permits(NULL, sem, 2));
	HT_OK(hl_expsem_new(&xs, c, HT_S("sent:xs")));
	HT_OK(hl_expsem_try_set_permits(NULL, xs, 2));
	HT_OK(hl_latch_try_set_count(NULL, l, 6));
	HT_OK(hl_latch_wait_start(&wait, l, 60000));
	for (i = 0; i < 3; i++) {
		pid_t pid = fork();
		HT_CHECK(pid >= 0);
		if (pid == 0)
			_exit(sync_child(s, sh, 14000));
		kids[i] = pid;
	}
	/* A kill -9 only: in a forced failover (SENTINEL FAILOVER) the old
	 * master takes writes until the sentinels reconfigure it, and one
	 * that the replica still attached to it confirmed (WAIT) is lost
	 * when it turns replica: an expirable permit taken then was gone
	 * at its release (HL_ENOTHELD), under load, before and after this
	 * test's changes. A limit of Sentinel's asynchronous replication
	 * that a client's WAIT narrows but cannot close. */
	ht_sleep_ms(4000);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	for (i = 0; i < 3; i++) {
		HT_EQ(waitpid(kids[i], &status, 0), kids[i]);
		HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		          "child %d: status %d", i, status);
	}
	HT_EQ(atomic_load(&sh->count_downs), 6);
	HT_OK(hl_task_wait(wait, 30000, NULL));
	woke = ht_now_ms();
	HT_OK(hl_task_result(&open, wait));
	HT_EQ(open, 1);
	HT_CHECK(woke >= atomic_load(&sh->last_count_down_ms));
	for (i = 0; i < 2; i++) {
		HT_CHECKF(atomic_load(&sh->max_holders[i]) <= 2,
		          "%d holders at once",
		          atomic_load(&sh->max_holders[i]));
		HT_EQ(atomic_load(&sh->max_holders[i]), 2);
	}
	HT_OK(hl_semaphore_available(&n, sem));
	HT_EQ(n, 2); /* every permit back, none twice */
	HT_OK(hl_expsem_available(&n, xs));
	HT_EQ(n, 2);
	HT_OK(hl_latch_count(&n, l));
	HT_EQ(n, 0);
	ht_note("semaphores and latch through a failover: at most 2 "
	        "holders of each, 2 permits of each at the end");
	hl_task_free(wait);
	hl_semaphore_free(sem);
	hl_expsem_free(xs);
	hl_latch_free(l);
	hl_client_free(c);
	munmap(sh, sizeof(*sh));
	ht_sentinel_destroy(s);
}

static long long calls_of(ht_node *n, const char *cmd)
{
	char field[64], v[128];
	snprintf(field, sizeof field, "cmdstat_%s", cmd);
	if (!ht_node_info(n, "commandstats", field, v, sizeof v))
		return 0;
	return atoll(strstr(v, "calls=") + 6);
}

/* redis-replica://: the same deployment without asking the sentinels.
 * Writes go to the master and are WAITed for; with read_from replica the
 * read-only queries go to the replicas, by default to the master. */
static void replica_url(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	ht_node *m = ht_sentinel_master(s), *r1 = NULL, *r2 = NULL;
	hl_client_options o;
	hl_client *c, *cr;
	hl_lock *l, *lr;
	char url[300];
	int i, locked = 0;
	long long before;
	for (i = 0; i < HT_SENTINEL_DATA; i++) {
		if (&s->data[i] == m)
			continue;
		if (!r1)
			r1 = &s->data[i];
		else
			r2 = &s->data[i];
	}
	snprintf(url, sizeof url,
	         "redis-replica://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
	         m->port, r1->port, r2->port);
	c = ht_client_url(url, NULL);
	l = ht_lock(c, "rep:lock");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	/* WAITed: on both replicas before the acquire returned */
	HT_EQ(node_hget(r1, "rep:lock", ht_owner(l)), 1);
	HT_EQ(node_hget(r2, "rep:lock", ht_owner(l)), 1);
	before = calls_of(m, "exists");
	HT_OK(hl_lock_is_locked(&locked, l));
	HT_EQ(locked, 1);
	HT_EQ(calls_of(m, "exists"), before + 1); /* the master by default */

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.read_from = HL_READ_REPLICA;
	cr = ht_client_url(url, &o);
	lr = ht_lock(cr, "rep:lock");
	before = calls_of(r1, "exists") + calls_of(r2, "exists");
	for (i = 0; i < 4; i++) {
		HT_OK(hl_lock_is_locked(&locked, lr));
		HT_EQ(locked, 1);
	}
	HT_EQ(calls_of(r1, "exists") + calls_of(r2, "exists"), before + 4);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(lr);
	hl_client_free(cr);
	hl_lock_free(l);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

/* rediss-sentinel://: TLS to the sentinels and to the data nodes, with a
 * client certificate; the master found, a failover followed. */
static void tls(void)
{
	char dir[] = "/tmp/hilock-sent-tls-XXXXXX";
	ht_tls_certs *certs;
	ht_sentinel_opts so = {0};
	ht_sentinel *s;
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	hl_client_stats st;
	char url[600];
	uint64_t renewals;
	int old, lost = 7, i;
	ht_require_tls(); /* before the directory: a skip leaves nothing */
	HT_CHECK(mkdtemp(dir) != NULL);
	certs = ht_tls_make_certs(dir);
	so.tls = certs;
	so.tls_auth_clients = 1;
	s = ht_sentinel_start(&so);
	ht_sentinel_url(s, url, sizeof url);
	HT_CHECK(strncmp(url, "rediss-sentinel://", 18) == 0);
	/* A lease longer than the failover's bound: an election that
	 * sentinels abort and run again (13.7 s seen on a loaded machine)
	 * must not end the hold before the new master can renew it. */
	ht_failover_options(&o, 25000);
	o.tls_ca_file = certs->ca_cert;
	o.tls_cert_file = certs->client_cert;
	o.tls_key_file = certs->client_key;
	c = ht_client_url(url, &o);
	l = ht_lock(c, "sent:tls");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	/* renewed on the new master, over TLS: a renewal Redis confirmed
	 * after the failover (the old master is dead) */
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, c));
	renewals = st.renewals;
	for (i = 0; i < 250 && st.renewals == renewals; i++) {
		ht_sleep_ms(100);
		HT_OK(hl_client_stats_get(&st, c));
	}
	HT_CHECK(st.renewals > renewals);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
	ht_sentinel_destroy(s);
	ht_tls_certs_destroy(certs);
	rmdir(dir);
}

HT_MAIN(HT_CASE(finds_master), HT_CASE(credentials), HT_CASE(kill_master),
        HT_CASE(fenced_failover), HT_CASE(overlap_failover),
        HT_CASE(sync_failover), HT_CASE(replica_url), HT_CASE(tls))
