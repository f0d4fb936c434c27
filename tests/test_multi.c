/*
 * The multi lock and the RedLock (hl_multilock): all members or none, last
 * taken first released, members on different clients and servers, a
 * RedLock with servers down, the lease's validity, mutual exclusion across
 * processes and threads, cancellation, and bad input.
 *
 * Most cases run three independent redis-servers with one client each,
 * the shape a RedLock is made for.
 */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSRV 3

static void wait_key(ht_redis *r, const char *key, int exists, int64_t ms);

static ht_redis *srv[NSRV];
static hl_client *cli[NSRV];

/* Three servers and a client on each (watchdog_ms: 0 for the default). */
static void three(int64_t watchdog_ms)
{
	int i;
	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	for (i = 0; i < NSRV; i++)
		cli[i] = ht_client(srv[i], watchdog_ms);
}

static void three_free(void)
{
	int i;
	for (i = 0; i < NSRV; i++) {
		hl_client_free(cli[i]);
		cli[i] = NULL;
	}
}

/* A client whose waits on a dead server give up sooner. */
static hl_client *quick_client(const char *url)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = 500;
	o.command_timeout_ms = 500;
	o.retry_delay_ms = 100;
	return ht_client_url(url, &o);
}

/* One lock called name on each of the three clients, as a multilock. */
static hl_multilock *multi_of(hl_lock **l, const char *name, int kind)
{
	hl_multilock *m = NULL;
	int i;
	for (i = 0; i < NSRV; i++)
		l[i] = ht_lock(cli[i], name);
	HT_OK(hl_multilock_new(&m, l, NSRV, kind));
	HT_CHECK(m != NULL);
	return m;
}

static void locks_free(hl_lock **l, int n)
{
	int i;
	for (i = 0; i < n; i++)
		hl_lock_free(l[i]);
}

static const char *owner_of(hl_lock *l)
{
	return ht_owner(l);
}

/* ---- all or nothing ------------------------------------------------------ */

/* One member held by another client: a multi lock waits its wait, fails,
 * and leaves none of the members it could take held. Once the member is
 * free it takes all three, each for its own client's owner. */
static void all_or_nothing(void)
{
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	int acquired = 7, members[NSRV], i;
	int64_t t0, dt, valid = 0;

	three(0);
	m = multi_of(l, "multi:aon", HL_MULTILOCK_ALL);
	HT_EQ(hl_multilock_size(m), 3);
	HT_EQ(hl_multilock_quorum(m), 3);
	oc = ht_client(srv[1], 0);
	other = ht_lock(oc, "multi:aon");
	HT_OK(hl_lock_acquire(other, -1, NULL));

	t0 = ht_now_ms();
	HT_OK(hl_multilock_try_acquire(&acquired, m, 400, -1, NULL));
	dt = ht_now_ms() - t0;
	HT_EQ(acquired, 0);
	ht_note("not acquired after %lld ms", (long long)dt);
	HT_RANGE(dt, 350, 400 + 1500 * ht_scale());
	/* the first member was taken and given back; the third never */
	HT_EQ(ht_exists(srv[0], HT_S("multi:aon")), 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:aon")), 0);
	HT_EQ(ht_hget_int(srv[1], HT_S("multi:aon"), ht_owner(other)), 1);
	HT_EQ(ht_hlen(srv[1], HT_S("multi:aon")), 1);

	/* one attempt each (wait 0): the same */
	HT_OK(hl_multilock_try_acquire(&acquired, m, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(ht_exists(srv[0], HT_S("multi:aon")), 0);

	HT_OK(hl_lock_release(NULL, other));
	HT_OK(hl_multilock_try_acquire_ex(&acquired, &valid, members, m, 2000,
	                                  -1, NULL));
	HT_EQ(acquired, 1);
	HT_EQ(valid, -1);
	for (i = 0; i < NSRV; i++) {
		HT_EQ(members[i], 1);
		HT_EQ(ht_hget_int(srv[i], HT_S("multi:aon"), owner_of(l[i])),
		      1);
	}
	HT_OK(hl_multilock_release(m));
	for (i = 0; i < NSRV; i++)
		HT_EQ(ht_exists(srv[i], HT_S("multi:aon")), 0);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

/* ---- order ----------------------------------------------------------------
 * MONITOR on one server shows the scripts in the order they ran: members
 * taken first to last, released last to first. */

/* Which of names[0..n) the MONITOR line names as a whole argument (the
 * key), or -1. */
static int line_names(const char *line, const char **names, int n)
{
	char quoted[128];
	int i;
	if (!strstr(line, "\"EVALSHA\"") && !strstr(line, "\"EVAL\""))
		return -1;
	for (i = 0; i < n; i++) {
		snprintf(quoted, sizeof quoted, "\"%s\"", names[i]);
		if (strstr(line, quoted))
			return i;
	}
	return -1;
}

static void release_order(void)
{
	static const char *names[3] = {"multi:ord:a", "multi:ord:b",
	                               "multi:ord:c"};
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	redisContext *mon = ht_raw_new(r);
	redisReply *rep;
	hl_lock *l[3];
	hl_multilock *m;
	int seen[16], nseen = 0, i;
	struct timeval tv = {5 * ht_scale(), 0};
	static const int want[6] = {0, 1, 2, 2, 1, 0};

	for (i = 0; i < 3; i++)
		l[i] = ht_lock(c, names[i]);
	HT_OK(hl_multilock_new(&m, l, 3, HL_MULTILOCK_ALL));
	rep = ht_raw(mon, "MONITOR");
	HT_CHECK(rep->type == REDIS_REPLY_STATUS);
	freeReplyObject(rep);

	HT_OK(hl_multilock_acquire(m, -1, NULL));
	for (i = 0; i < 3; i++)
		HT_EQ(ht_hget_int(r, HT_S(names[i]), owner_of(l[i])), 1);
	HT_OK(hl_multilock_release(m));
	for (i = 0; i < 3; i++)
		HT_EQ(ht_exists(r, HT_S(names[i])), 0);

	redisSetTimeout(mon, tv);
	while (nseen < 6) {
		void *v = NULL;
		int k;
		HT_CHECKF(redisGetReply(mon, &v) == REDIS_OK,
		          "MONITOR: %d of 6 scripts seen", nseen);
		rep = v;
		if (rep->type == REDIS_REPLY_STATUS &&
		    (k = line_names(rep->str, names, 3)) >= 0)
			seen[nseen++] = k;
		freeReplyObject(rep);
	}
	for (i = 0; i < 6; i++)
		HT_CHECKF(seen[i] == want[i], "script %d named %s, not %s", i,
		          names[seen[i]], names[want[i]]);
	redisFree(mon);
	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(c);
}

/* ---- members on different clients --------------------------------------
 * Two members on one client of server 0 and one on server 1's client:
 * each is written with its own client's owner; reentry counts per member;
 * a handle shared by two threads keeps each thread's holds apart. */
struct reentry_arg {
	hl_multilock *m;
	hl_lock **l;
	int rc, acquired;
	long long counts[3];
};

static void *other_thread(void *arg)
{
	struct reentry_arg *a = arg;
	a->rc = hl_multilock_try_acquire(&a->acquired, a->m, 0, -1, NULL);
	return NULL;
}

static void mixed_clients(void)
{
	hl_lock *l[3];
	hl_multilock *m;
	struct reentry_arg a;
	pthread_t t;
	int i, statuses[3], released[3];
	char o0[128], o2[128];

	srv[0] = ht_redis_start(NULL);
	srv[1] = ht_redis_start(NULL);
	cli[0] = ht_client(srv[0], 0);
	cli[1] = ht_client(srv[1], 0);
	l[0] = ht_lock(cli[0], "multi:mix:x");
	l[1] = ht_lock(cli[0], "multi:mix:y");
	l[2] = ht_lock(cli[1], "multi:mix:x"); /* same name, other server */
	HT_OK(hl_multilock_new(&m, l, 3, HL_MULTILOCK_ALL));
	snprintf(o0, sizeof o0, "%s", owner_of(l[0]));
	snprintf(o2, sizeof o2, "%s", owner_of(l[2]));
	HT_CHECK(strncmp(o0, hl_client_id(cli[0]), 36) == 0);
	HT_CHECK(strncmp(o2, hl_client_id(cli[1]), 36) == 0);

	HT_OK(hl_multilock_acquire(m, -1, NULL));
	HT_OK(hl_multilock_acquire(m, -1, NULL)); /* reentry */
	HT_EQ(ht_hget_int(srv[0], HT_S("multi:mix:x"), o0), 2);
	HT_EQ(ht_hget_int(srv[0], HT_S("multi:mix:y"), o0), 2);
	HT_EQ(ht_hget_int(srv[1], HT_S("multi:mix:x"), o2), 2);

	/* another thread, another owner: not taken, nothing left behind */
	memset(&a, 0, sizeof a);
	a.m = m;
	a.acquired = 7;
	t = ht_thread_start(other_thread, &a);
	ht_thread_join(t, 10000);
	HT_OK(a.rc);
	HT_EQ(a.acquired, 0);
	HT_EQ(ht_hlen(srv[0], HT_S("multi:mix:x")), 1);

	HT_OK(hl_multilock_release_ex(statuses, released, m, NULL));
	for (i = 0; i < 3; i++) {
		HT_EQ(statuses[i], HL_OK);
		HT_EQ(released[i], 0); /* one hold each remains */
	}
	HT_EQ(ht_hget_int(srv[1], HT_S("multi:mix:x"), o2), 1);
	HT_OK(hl_multilock_release_ex(statuses, released, m, NULL));
	for (i = 0; i < 3; i++)
		HT_EQ(released[i], 1);
	HT_EQ(ht_exists(srv[0], HT_S("multi:mix:x")), 0);
	HT_EQ(ht_exists(srv[0], HT_S("multi:mix:y")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:mix:x")), 0);
	/* nothing left: each member answers "not held" */
	HT_RC(hl_multilock_release(m), HL_ENOTHELD);
	HT_CHECK(strstr(hl_error_last(), "member 2") != NULL);

	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(cli[0]);
	hl_client_free(cli[1]);
}

/* ---- RedLock ------------------------------------------------------------- */

/* The middle server black-holed (through a fault proxy, so the client's
 * commands hang instead of being refused): the RedLock still gets its
 * quorum within the wait, holds members 0 and 2, and releases them. */
static void redlock_one_down(void)
{
	ht_proxy *p;
	hl_lock *l[NSRV];
	hl_multilock *m;
	int acquired = 0, members[NSRV], i, is_lost = 1;
	int64_t t0, dt, valid = 0;

	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	p = ht_proxy_start(srv[1]->port);
	cli[0] = ht_client(srv[0], 0);
	cli[1] = quick_client(p->url);
	cli[2] = ht_client(srv[2], 0);
	m = multi_of(l, "multi:red1", HL_MULTILOCK_RED);
	HT_EQ(hl_multilock_quorum(m), 2);

	/* all up: every member taken */
	HT_OK(hl_multilock_try_acquire_ex(&acquired, &valid, members, m, 1500,
	                                  -1, NULL));
	HT_EQ(acquired, 1);
	for (i = 0; i < NSRV; i++)
		HT_EQ(members[i], 1);
	HT_OK(hl_multilock_release(m));

	ht_proxy_cmd(p, "blackhole on");
	t0 = ht_now_ms();
	HT_OK(hl_multilock_try_acquire_ex(&acquired, &valid, members, m, 1500,
	                                  10000, NULL));
	dt = ht_now_ms() - t0;
	ht_note("one of three black-holed: acquired in %lld ms, valid %lld",
	        (long long)dt, (long long)valid);
	HT_EQ(acquired, 1);
	HT_EQ(members[0], 1);
	HT_EQ(members[1], 0);
	HT_EQ(members[2], 1);
	HT_RANGE(dt, 0, 1500 + 1000 * ht_scale());
	HT_RANGE(valid, 1, 10000 - hl_multilock_drift_ms(10000) - dt + 5);
	HT_RANGE(ht_pttl(srv[0], HT_S("multi:red1")), 1, 10000);
	HT_EQ(ht_hget_int(srv[2], HT_S("multi:red1"), owner_of(l[2])), 1);
	HT_OK(hl_multilock_is_lost(&is_lost, m));
	HT_EQ(is_lost, 0);

	/* the release skips the member it never took: no wait on it */
	t0 = ht_now_ms();
	HT_OK(hl_multilock_release(m));
	dt = ht_now_ms() - t0;
	HT_RANGE(dt, 0, 400 * ht_scale());
	HT_EQ(ht_exists(srv[0], HT_S("multi:red1")), 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:red1")), 0);
	HT_OK(hl_multilock_is_lost(&is_lost, m));
	HT_EQ(is_lost, 0); /* holds nothing */

	/* a stopped server (refused, not hanging) too: two down of three, no
	 * quorum, and outages (not holders) are why: an error that says so
	 * (issue 23) */
	ht_redis_stop(srv[2]);
	acquired = 7;
	HT_RC(hl_multilock_try_acquire_ex(&acquired, NULL, members, m, 1500, -1,
	                                  NULL),
	      HL_ECONNECT);
	HT_CHECKF(strstr(hl_error_last(), "unreachable") != NULL, "%s",
	          hl_error_last());
	HT_EQ(acquired, 7);
	HT_EQ(ht_exists(srv[0], HT_S("multi:red1")), 0);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	three_free();
	ht_proxy_stop(p);
}

/* Two of three down (one stopped, one black-holed): not acquired, within
 * its wait, and the member on the live server is not left held. */
static void redlock_two_down(void)
{
	ht_proxy *p;
	hl_lock *l[NSRV];
	hl_multilock *m;
	int acquired = 7, rc, i;
	int64_t t0, dt;
	const int64_t wait = 1500;

	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	p = ht_proxy_start(srv[2]->port);
	cli[0] = ht_client(srv[0], 0);
	cli[1] = quick_client(srv[1]->url);
	cli[2] = quick_client(p->url);
	m = multi_of(l, "multi:red2", HL_MULTILOCK_RED);
	ht_redis_stop(srv[1]);
	ht_proxy_cmd(p, "blackhole on");

	t0 = ht_now_ms();
	rc = hl_multilock_try_acquire(&acquired, m, wait, -1, NULL);
	dt = ht_now_ms() - t0;
	ht_note("two of three down: %s after %lld ms (%s)", hl_status_name(rc),
	        (long long)dt, rc ? hl_error_last() : "not acquired");
	HT_CHECKF(rc == HL_OK || rc == HL_EIO || rc == HL_ECONNECT, "%s: %s",
	          hl_status_name(rc), hl_error_last());
	if (rc == HL_OK)
		HT_EQ(acquired, 0);
	else
		HT_CHECK(strstr(hl_error_last(), "RedLock") != NULL);
	HT_RANGE(dt, wait - 50, wait + 1000 * ht_scale());
	HT_EQ(ht_exists(srv[0], HT_S("multi:red2")), 0);

	/* one attempt each: at once, the same answer */
	t0 = ht_now_ms();
	rc = hl_multilock_try_acquire(&acquired, m, 0, -1, NULL);
	dt = ht_now_ms() - t0;
	HT_CHECKF(rc == HL_OK ? acquired == 0
	                      : rc == HL_EIO || rc == HL_ECONNECT,
	          "%s: %s", hl_status_name(rc), hl_error_last());
	HT_RANGE(dt, 0, 1500 * ht_scale());
	HT_EQ(ht_exists(srv[0], HT_S("multi:red2")), 0);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	three_free();
	ht_proxy_stop(p);
}

/* Contention instead of outages: one member held elsewhere still leaves a
 * quorum (the minority is not taken and not released); two held
 * elsewhere leave none. */
static void redlock_contended(void)
{
	hl_lock *l[NSRV], *o0, *o1;
	hl_client *oc0, *oc1;
	hl_multilock *m;
	int acquired = 0, members[NSRV], statuses[NSRV];

	three(0);
	m = multi_of(l, "multi:red3", HL_MULTILOCK_RED);
	oc0 = ht_client(srv[0], 0);
	oc1 = ht_client(srv[1], 0);
	o0 = ht_lock(oc0, "multi:red3");
	o1 = ht_lock(oc1, "multi:red3");

	HT_OK(hl_lock_acquire(o0, -1, NULL));
	HT_OK(hl_multilock_try_acquire_ex(&acquired, NULL, members, m, 900, -1,
	                                  NULL));
	HT_EQ(acquired, 1);
	HT_EQ(members[0], 0);
	HT_EQ(members[1], 1);
	HT_EQ(members[2], 1);
	HT_OK(hl_multilock_release_ex(statuses, NULL, m, NULL));
	HT_EQ(statuses[0], HL_ENOTHELD); /* never taken: left alone */
	HT_EQ(statuses[1], HL_OK);
	HT_EQ(statuses[2], HL_OK);
	HT_EQ(ht_hget_int(srv[0], HT_S("multi:red3"), ht_owner(o0)), 1);

	HT_OK(hl_lock_acquire(o1, -1, NULL));
	HT_OK(hl_multilock_try_acquire(&acquired, m, 600, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:red3")), 0);
	HT_EQ(ht_hlen(srv[0], HT_S("multi:red3")), 1);
	HT_EQ(ht_hlen(srv[1], HT_S("multi:red3")), 1);

	/* a release with nothing held: "not held" from every member */
	HT_RC(hl_multilock_release(m), HL_ENOTHELD);
	HT_EQ(ht_hget_int(srv[0], HT_S("multi:red3"), ht_owner(o0)), 1);

	HT_OK(hl_lock_release(NULL, o0));
	HT_OK(hl_lock_release(NULL, o1));
	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(o0);
	hl_lock_free(o1);
	hl_client_free(oc0);
	hl_client_free(oc1);
	three_free();
}

/* ---- the lease ------------------------------------------------------------
 */

/* A fixed lease: every member has it, the validity left is below lease -
 * drift, is_lost turns 1 when it ends, and the release then says lost. A
 * lease too short to leave any validity is never reported held. */
static void lease_validity(void)
{
	hl_lock *l[NSRV];
	hl_multilock *m;
	int acquired = 0, lost = 1, i, rc;
	int64_t valid = 0, t0, t1;

	HT_EQ(hl_multilock_drift_ms(10000), 102);
	HT_EQ(hl_multilock_drift_ms(-1), 0);
	three(0);
	m = multi_of(l, "multi:lease", HL_MULTILOCK_ALL);
	t0 = ht_now_ms();
	HT_OK(hl_multilock_try_acquire_ex(&acquired, &valid, NULL, m, 1000, 600,
	                                  NULL));
	t1 = ht_now_ms(); /* every member's lease began before this */
	HT_EQ(acquired, 1);
	/* the round ran within [t0, t1] */
	HT_RANGE(valid, 600 - hl_multilock_drift_ms(600) - (t1 - t0),
	         600 - hl_multilock_drift_ms(600));
	for (i = 0; i < NSRV; i++)
		HT_RANGE(ht_pttl(srv[i], HT_S("multi:lease")), 1, 600);
	HT_OK(hl_multilock_is_lost(&lost, m));
	HT_EQ(lost, 0);
	/* the validity counts from the end of the round, before t1 */
	ht_sleep_ms(valid + 20 - (ht_now_ms() - t1) > 0
	                    ? valid + 20 - (ht_now_ms() - t1)
	                    : 0);
	HT_OK(hl_multilock_is_lost(&lost, m));
	HT_EQ(lost, 1);
	/* past the lease itself: Redis dropped every member (the last one
	 * taken, on a slow machine, well after t0) */
	ht_sleep_ms(620 - (ht_now_ms() - t1) > 0 ? 620 - (ht_now_ms() - t1)
	                                         : 0);
	for (i = 0; i < NSRV; i++)
		HT_EQ(ht_exists(srv[i], HT_S("multi:lease")), 0);
	rc = hl_multilock_release(m);
	HT_CHECKF(rc == HL_ELOST || rc == HL_ENOTHELD, "%s: %s",
	          hl_status_name(rc), hl_error_last());

	/* 2 ms of lease, 2 ms of drift: no validity, never held. (A member
	 * whose 2 ms the client counts as over is not sent a release: Redis,
	 * which started counting them later, drops it a moment after.) */
	HT_OK(hl_multilock_try_acquire(&acquired, m, 0, 2, NULL));
	HT_EQ(acquired, 0);
	for (i = 0; i < NSRV; i++)
		wait_key(srv[i], "multi:lease", 0, 100);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	three_free();
}

/* ---- mutual exclusion ---------------------------------------------------- */

static char cs_path[256];

static void cs_path_init(const char *what)
{
	snprintf(cs_path, sizeof cs_path, "/tmp/hilock-multi-%s-%d.log", what,
	         (int)getpid());
	unlink(cs_path);
}

/* A contending process: its own three clients, one RedLock, sections for
 * duration_ms. Exits 0 if it got the lock at least once, 3 if never. */
static int red_contender(const char *tag, int64_t duration_ms)
{
	pid_t pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_lock *l[NSRV];
		hl_multilock *m;
		int64_t end = ht_now_ms() + duration_ms;
		int got = 0, i;
		for (i = 0; i < NSRV; i++)
			cli[i] = ht_client(srv[i], 0);
		m = multi_of(l, "multi:excl", HL_MULTILOCK_RED);
		while (ht_now_ms() < end) {
			int acq = 0;
			if (hl_multilock_try_acquire(&acq, m, 1000, -1, NULL) !=
			            HL_OK ||
			    !acq)
				continue;
			ht_cs_enter(cs_path, tag);
			ht_sleep_ms(1 + got % 3);
			ht_cs_leave(cs_path, tag);
			got++;
			if (hl_multilock_release(m) != HL_OK)
				_exit(5);
		}
		hl_multilock_free(m);
		locks_free(l, NSRV);
		three_free();
		_exit(got > 0 ? 0 : 3);
	}
	return (int)pid;
}

static void exclusion_processes(void)
{
	int pids[3], i;
	long n;
	char tag[16];

	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	cs_path_init("procs");
	for (i = 0; i < 3; i++) {
		snprintf(tag, sizeof tag, "p%d", i);
		pids[i] = red_contender(tag, 2500);
	}
	ht_contenders_wait(pids, 3);
	n = ht_cs_check(cs_path);
	ht_note("%ld RedLock sections of three processes, no overlap", n);
	HT_CHECK(n >= 3);
	for (i = 0; i < NSRV; i++)
		HT_EQ(ht_exists(srv[i], HT_S("multi:excl")), 0);
	unlink(cs_path);
}

/* Threads of one process sharing one multi lock handle, each its own
 * owner, the handle's records kept apart per thread. */
struct excl_arg {
	hl_multilock *m;
	char tag[8];
	int got, rc;
};

static void *excl_thread(void *arg)
{
	struct excl_arg *a = arg;
	int64_t end = ht_now_ms() + 2000;
	while (ht_now_ms() < end) {
		int acq = 0;
		a->rc = hl_multilock_try_acquire(&acq, a->m, 1000, -1, NULL);
		if (a->rc != HL_OK)
			return NULL;
		if (!acq)
			continue;
		ht_cs_enter(cs_path, a->tag);
		ht_cs_leave(cs_path, a->tag);
		a->got++;
		if ((a->rc = hl_multilock_release(a->m)) != HL_OK)
			return NULL;
	}
	return NULL;
}

static void exclusion_threads(void)
{
	hl_lock *l[NSRV];
	hl_multilock *m;
	struct excl_arg a[4];
	pthread_t t[4];
	int i;
	long n;

	three(0);
	m = multi_of(l, "multi:excl:t", HL_MULTILOCK_ALL);
	cs_path_init("threads");
	for (i = 0; i < 4; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].m = m;
		snprintf(a[i].tag, sizeof a[i].tag, "t%d", i);
		t[i] = ht_thread_start(excl_thread, &a[i]);
	}
	for (i = 0; i < 4; i++)
		ht_thread_join(t[i], 30000);
	for (i = 0; i < 4; i++) {
		HT_CHECKF(a[i].rc == HL_OK, "thread %d: %s", i,
		          hl_status_name(a[i].rc));
		HT_CHECKF(a[i].got > 0, "thread %d never got it", i);
	}
	n = ht_cs_check(cs_path);
	ht_note("%ld sections of four threads, no overlap", n);
	for (i = 0; i < NSRV; i++)
		HT_EQ(ht_exists(srv[i], HT_S("multi:excl:t")), 0);
	unlink(cs_path);
	hl_multilock_free(m);
	locks_free(l, NSRV);
	three_free();
}

/* Two multilocks taking the same two locks in opposite orders, waiting
 * forever: rounds give way, so neither deadlocks. */
struct order_arg {
	hl_multilock *m;
	int rounds, rc;
};

static void *order_thread(void *arg)
{
	struct order_arg *a = arg;
	int i;
	for (i = 0; i < a->rounds; i++) {
		if ((a->rc = hl_multilock_acquire(a->m, -1, NULL)) != HL_OK)
			return NULL;
		ht_sleep_ms(20);
		if ((a->rc = hl_multilock_release(a->m)) != HL_OK)
			return NULL;
	}
	return NULL;
}

static void opposite_orders(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *ab[2], *ba[2];
	hl_multilock *m1, *m2;
	struct order_arg a1, a2;
	pthread_t t1, t2;

	ab[0] = ht_lock(c, "multi:opp:a");
	ab[1] = ht_lock(c, "multi:opp:b");
	ba[0] = ht_lock(c, "multi:opp:b");
	ba[1] = ht_lock(c, "multi:opp:a");
	HT_OK(hl_multilock_new(&m1, ab, 2, HL_MULTILOCK_ALL));
	HT_OK(hl_multilock_new(&m2, ba, 2, HL_MULTILOCK_ALL));
	a1.m = m1;
	a2.m = m2;
	a1.rounds = a2.rounds = 4;
	a1.rc = a2.rc = -100;
	t1 = ht_thread_start(order_thread, &a1);
	t2 = ht_thread_start(order_thread, &a2);
	ht_thread_join(t1, 90000);
	ht_thread_join(t2, 90000);
	HT_OK(a1.rc);
	HT_OK(a2.rc);
	HT_EQ(ht_exists(r, HT_S("multi:opp:a")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:opp:b")), 0);
	hl_multilock_free(m1);
	hl_multilock_free(m2);
	locks_free(ab, 2);
	locks_free(ba, 2);
	hl_client_free(c);
}

/* ---- cancel ----------------------------------------------------------------
 */

struct cancel_arg {
	hl_multilock *m;
	hl_cancel *cancel;
	int rc, acquired;
	int64_t took;
};

static void *cancel_thread(void *arg)
{
	struct cancel_arg *a = arg;
	int64_t t0 = ht_now_ms();
	a->rc = hl_multilock_try_acquire(&a->acquired, a->m, 20000, -1,
	                                 a->cancel);
	a->took = ht_now_ms() - t0;
	return NULL;
}

static void cancel(void)
{
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	hl_cancel *cn;
	struct cancel_arg a;
	pthread_t t;
	int acquired = 7;

	three(0);
	m = multi_of(l, "multi:cancel", HL_MULTILOCK_ALL);
	oc = ht_client(srv[2], 0);
	other = ht_lock(oc, "multi:cancel");
	HT_OK(hl_lock_acquire(other, -1, NULL));
	HT_OK(hl_cancel_new(&cn));

	/* pre-triggered: at once */
	hl_cancel_trigger(cn);
	HT_RC(hl_multilock_try_acquire(&acquired, m, 1000, -1, cn),
	      HL_EINTERRUPTED);
	HT_EQ(acquired, 7);
	HT_EQ(ht_exists(srv[0], HT_S("multi:cancel")), 0);
	hl_cancel_reset(cn);

	/* members 0 and 1 taken, then the wait for member 2 cancelled */
	memset(&a, 0, sizeof a);
	a.m = m;
	a.cancel = cn;
	a.acquired = 7;
	t = ht_thread_start(cancel_thread, &a);
	ht_sleep_ms(300);
	hl_cancel_trigger(cn);
	ht_thread_join(t, 5000);
	HT_EQ(a.rc, HL_EINTERRUPTED);
	HT_EQ(a.acquired, 7);
	HT_RANGE(a.took, 250, 2000 * ht_scale());
	HT_EQ(ht_exists(srv[0], HT_S("multi:cancel")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:cancel")), 0);
	HT_EQ(ht_hlen(srv[2], HT_S("multi:cancel")), 1);

	HT_OK(hl_lock_release(NULL, other));
	hl_cancel_free(cn);
	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

/* ---- every lock kind ---------------------------------------------------
 * Members of other kinds (fair, write, fenced, spin) are taken and given
 * back through the same calls: a read hold of another client blocks the
 * write member, and the others are not left held. */
static void kinds(void)
{
	static const int kind[4] = {HL_LOCK_FAIR, HL_LOCK_WRITE, HL_LOCK_FENCED,
	                            HL_LOCK_SPIN};
	static const char *names[4] = {"multi:k:fair", "multi:k:rw",
	                               "multi:k:fenced", "multi:k:spin"};
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *oc = ht_client(r, 0);
	hl_lock *l[4], *reader;
	hl_multilock *m;
	int acquired = 7, held, i;
	int64_t token = 0;

	for (i = 0; i < 4; i++)
		HT_OK(hl_lock_new_kind(&l[i], c, kind[i], HT_S(names[i])));
	HT_OK(hl_lock_new_kind(&reader, oc, HL_LOCK_READ, HT_S("multi:k:rw")));
	HT_OK(hl_multilock_new(&m, l, 4, HL_MULTILOCK_ALL));

	HT_OK(hl_lock_acquire(reader, -1, NULL));
	HT_OK(hl_multilock_try_acquire(&acquired, m, 300, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(ht_exists(r, HT_S("multi:k:fair")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:k:fenced")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:k:spin")), 0);
	HT_OK(hl_lock_release(NULL, reader));

	HT_OK(hl_multilock_try_acquire(&acquired, m, 2000, -1, NULL));
	HT_EQ(acquired, 1);
	for (i = 0; i < 4; i++) {
		held = 0;
		HT_OK(hl_lock_is_held(&held, l[i]));
		HT_CHECKF(held == 1, "%s not held", names[i]);
	}
	HT_OK(hl_lock_token(&token, l[2]));
	HT_CHECK(token > 0);
	HT_OK(hl_multilock_release(m));
	for (i = 0; i < 4; i++)
		HT_EQ(ht_exists(r, HT_S(names[i])), 0);

	hl_multilock_free(m);
	locks_free(l, 4);
	hl_lock_free(reader);
	hl_client_free(oc);
	hl_client_free(c);
}

/* ---- bad input ------------------------------------------------------------
 */

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0), *dead;
	hl_lock *l[3], *dup[2], *dl;
	hl_multilock *m = (hl_multilock *)0x1, *ok;
	int acquired = 7, out = 7;
	int statuses[3], released[3];

	l[0] = ht_lock(c, "multi:bad:a");
	l[1] = ht_lock(c, "multi:bad:b");
	l[2] = ht_lock(c2, "multi:bad:e");

	HT_RC(hl_multilock_new(NULL, l, 3, HL_MULTILOCK_ALL), HL_EINVAL);
	HT_RC(hl_multilock_new(&m, l, 0, HL_MULTILOCK_ALL), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "at least one member") != NULL);
	HT_RC(hl_multilock_new(&m, l, 0, HL_MULTILOCK_RED), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "RedLock") != NULL);
	HT_RC(hl_multilock_new(&m, NULL, 2, HL_MULTILOCK_ALL), HL_EINVAL);
	HT_RC(hl_multilock_new(&m, l, 3, 2), HL_EINVAL);
	HT_RC(hl_multilock_new(&m, l, 3, -1), HL_EINVAL);
	HT_RC(hl_multilock_new(&m, l, 100000, HL_MULTILOCK_ALL), HL_EINVAL);
	dup[0] = l[1];
	dup[1] = NULL;
	HT_RC(hl_multilock_new(&m, dup, 2, HL_MULTILOCK_ALL), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "member 1 is NULL") != NULL);
	dup[1] = l[1];
	HT_RC(hl_multilock_new(&m, dup, 2, HL_MULTILOCK_RED), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "members 0 and 1") != NULL);
	dup[1] = ht_lock(c, "multi:bad:b"); /* another handle, same lock */
	HT_RC(hl_multilock_new(&m, dup, 2, HL_MULTILOCK_ALL), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "multi:bad:b") != NULL);
	hl_lock_free(dup[1]);
	HT_CHECK(m == (hl_multilock *)0x1); /* never written on failure */
	/* one name on two clients: two locks as far as hilock can tell (the
	 * clients may reach different servers) */
	dup[1] = ht_lock(c2, "multi:bad:b");
	HT_OK(hl_multilock_new(&ok, dup, 2, HL_MULTILOCK_RED));
	hl_multilock_free(ok);
	hl_lock_free(dup[1]);

	HT_OK(hl_multilock_new(&ok, l, 3, HL_MULTILOCK_ALL));
	HT_RC(hl_multilock_try_acquire(NULL, ok, 0, -1, NULL), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire(&acquired, NULL, 0, -1, NULL),
	      HL_EINVAL);
	HT_RC(hl_multilock_try_acquire(&acquired, ok, -2, -1, NULL), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire(&acquired, ok, 0, 0, NULL), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire(&acquired, ok, 0, -5, NULL), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire(&acquired, ok, (int64_t)1 << 41, -1,
	                               NULL),
	      HL_EINVAL);
	HT_EQ(acquired, 7);
	HT_RC(hl_multilock_acquire(NULL, -1, NULL), HL_EINVAL);
	HT_RC(hl_multilock_release(NULL), HL_EINVAL);
	HT_RC(hl_multilock_release_ex(NULL, NULL, NULL, NULL), HL_EINVAL);
	HT_RC(hl_multilock_is_lost(NULL, ok), HL_EINVAL);
	HT_RC(hl_multilock_is_lost(&out, NULL), HL_EINVAL);
	HT_EQ(hl_multilock_size(NULL), 0);
	HT_EQ(hl_multilock_quorum(NULL), 0);
	hl_multilock_free(NULL);
	HT_EQ(ht_exists(r, HT_S("multi:bad:a")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:bad:b")), 0);

	/* a member of a client closed before: refused at once, named */
	dead = ht_client(r, 0);
	dl = ht_lock(dead, "multi:bad:c");
	hl_client_close(dead);
	dup[0] = l[0];
	dup[1] = dl;
	HT_RC(hl_multilock_new(&m, dup, 2, HL_MULTILOCK_ALL), HL_ECLOSED);
	HT_CHECK(strstr(hl_error_last(), "member 1 (\"multi:bad:c\")") != NULL);
	hl_lock_free(dl);
	hl_client_free(dead);

	/* a member's client closed after: the acquire fails with the member
	 * named, and what it took before is given back */
	HT_OK(hl_multilock_acquire(ok, -1, NULL));
	HT_OK(hl_multilock_release(ok));
	hl_client_close(c2);
	HT_RC(hl_multilock_try_acquire(&acquired, ok, 500, -1, NULL),
	      HL_ECLOSED);
	HT_CHECK(strstr(hl_error_last(), "member 2") != NULL);
	HT_EQ(acquired, 7);
	HT_EQ(ht_exists(r, HT_S("multi:bad:a")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:bad:b")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:bad:e")), 0);

	/* held, then a member's client closed: the release still releases
	 * the others and names the closed one */
	hl_multilock_free(ok);
	HT_OK(hl_multilock_new(&ok, l, 2, HL_MULTILOCK_ALL));
	HT_OK(hl_multilock_acquire(ok, -1, NULL));
	{
		hl_client *c3 = ht_client(r, 0);
		hl_lock *l3[3];
		hl_multilock *m3;
		l3[0] = l[0];
		l3[1] = l[1];
		l3[2] = ht_lock(c3, "multi:bad:d");
		HT_OK(hl_multilock_new(&m3, l3, 3, HL_MULTILOCK_ALL));
		HT_OK(hl_multilock_acquire(m3, -1, NULL));
		HT_EQ(ht_hget_int(r, HT_S("multi:bad:a"), ht_owner(l[0])), 2);
		hl_client_close(c3);
		HT_RC(hl_multilock_release_ex(statuses, released, m3, NULL),
		      HL_ECLOSED);
		HT_CHECK(strstr(hl_error_last(),
		                "member 2 (\"multi:bad:d\")") != NULL);
		HT_EQ(statuses[2], HL_ECLOSED);
		HT_EQ(statuses[1], HL_OK);
		HT_EQ(statuses[0], HL_OK);
		HT_EQ(ht_hget_int(r, HT_S("multi:bad:a"), ht_owner(l[0])), 1);
		HT_EQ(ht_hget_int(r, HT_S("multi:bad:b"), ht_owner(l[1])), 1);
		hl_multilock_free(m3);
		hl_lock_free(l3[2]);
		hl_client_free(c3);
	}
	HT_OK(hl_multilock_release(ok));
	HT_EQ(ht_exists(r, HT_S("multi:bad:a")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:bad:b")), 0);

	hl_multilock_free(ok);
	locks_free(l, 3);
	hl_client_free(c);
	hl_client_free(c2);
}

/* ---- tasks: waits that hold no thread ------------------------------------
 * hl_multilock_try_acquire_start and the release tasks: the rounds run on
 * the first member's client, each member's wait is a task of its own
 * client, and the task is delivered through the first member's client fd.
 */

static uint64_t waiting_of(hl_client *c)
{
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&s, c));
	return s.waiting;
}

/* A condition to wait for: the key exists (or not) on the server, or the
 * client's waiting gauge reached a value. */
struct cond {
	ht_redis *r;
	const char *key;
	int exists;
	hl_client *c;
	uint64_t waiting;
};

static int key_is(void *arg)
{
	struct cond *k = arg;
	return ht_exists(k->r, k->key, strlen(k->key)) == k->exists;
}

static void wait_key(ht_redis *r, const char *key, int exists, int64_t ms)
{
	struct cond k;
	memset(&k, 0, sizeof k);
	k.r = r;
	k.key = key;
	k.exists = exists;
	HT_CHECKF(ht_wait_until(key_is, &k, ms * ht_scale()),
	          "\"%s\" %s within %lld ms", key,
	          exists ? "never appeared" : "still exists", (long long)ms);
}

static int waiting_is(void *arg)
{
	struct cond *k = arg;
	return waiting_of(k->c) == k->waiting;
}

static void wait_waiting(hl_client *c, uint64_t n, int64_t ms)
{
	struct cond k;
	memset(&k, 0, sizeof k);
	k.c = c;
	k.waiting = n;
	HT_CHECKF(ht_wait_until(waiting_is, &k, ms * ht_scale()),
	          "the client's waiting gauge is %llu, not %llu",
	          (unsigned long long)waiting_of(c), (unsigned long long)n);
}

static void set_owner_all(hl_lock **l, int n, uint64_t owner)
{
	int i;
	for (i = 0; i < n; i++)
		HT_OK(hl_lock_set_owner(l[i], owner));
}

/* Many waiters, no thread each: N multi lock tasks, each its own owner,
 * over members on three clients of three servers, wait for member 0 held
 * elsewhere, and the process runs no more threads than before. Once it is
 * free, each gets every member in turn (delivered once, through the first
 * member's client fd, with its outputs), holds them alone, and gives them
 * back through a release task. */
static void task_waiters(void)
{
	enum { N = 300 };
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	static hl_task *tasks[N];
	static uint64_t owners[N];
	static int64_t valid[N];
	static int members[N][NSRV];
	static char seen[N];
	int base, during, i, j;
	int64_t t0;

	three(0);
	m = multi_of(l, "multi:tw", HL_MULTILOCK_ALL);
	oc = ht_client(srv[0], 0);
	other = ht_lock(oc, "multi:tw");
	HT_OK(hl_lock_acquire(other, -1, NULL));
	base = ht_threads_now();
	for (i = 0; i < N; i++) {
		owners[i] = hl_owner_id_new();
		set_owner_all(l, NSRV, owners[i]);
		valid[i] = 7;
		for (j = 0; j < NSRV; j++)
			members[i][j] = 9;
		HT_OK(hl_multilock_try_acquire_ex_start(
		        &tasks[i], &valid[i], members[i], m, 60000, -1));
		HT_OK(hl_task_set_data(tasks[i], (uint64_t)i + 1));
	}
	/* every one queued for member 0 (one of them subscribed) */
	wait_waiting(cli[0], N, 10000);
	during = ht_threads_now();
	ht_note("threads: %d before, %d with %d waiting multi lock tasks", base,
	        during, N);
	HT_EQ(during, base);
	for (i = 0; i < N; i++)
		HT_EQ(hl_task_done(tasks[i]), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tw")), 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:tw")), 0);

	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, other));
	for (i = 0; i < N; i++) {
		hl_task *t = ht_next_task(cli[0], 10000), *rt;
		int acquired = 7, released = 0, k;
		HT_RANGE(hl_task_data(t), 1, N);
		k = (int)hl_task_data(t) - 1;
		HT_CHECK(t == tasks[k]);
		HT_EQ(seen[k], 0); /* each delivered once */
		seen[k] = 1;
		HT_OK(hl_task_result(&acquired, t));
		HT_EQ(acquired, 1);
		HT_EQ(valid[k], -1);
		set_owner_all(l, NSRV, owners[k]);
		for (j = 0; j < NSRV; j++) {
			HT_EQ(members[k][j], 1);
			/* it alone holds each member, once */
			HT_EQ(ht_hlen(srv[j], HT_S("multi:tw")), 1);
			HT_EQ(ht_hget_int(srv[j], HT_S("multi:tw"),
			                  owner_of(l[j])),
			      1);
		}
		HT_OK(hl_multilock_release_start(&rt, m));
		HT_OK(ht_task_result(rt, &released, 5000));
		HT_EQ(released, NSRV);
		hl_task_free(rt);
		hl_task_free(t);
		if (i == N / 2)
			HT_EQ(ht_threads_now(), base);
	}
	ht_note("%d multi lock hand-offs in %lld ms", N,
	        (long long)(ht_now_ms() - t0));
	{
		hl_task *t = NULL;
		HT_OK(hl_client_task_next(&t, cli[0]));
		HT_CHECK(t == NULL);
	}
	for (j = 0; j < NSRV; j++)
		HT_EQ(ht_exists(srv[j], HT_S("multi:tw")), 0);
	HT_EQ(waiting_of(cli[0]), 0);
	HT_EQ(ht_threads_now(), base);
	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

/* A task that took members 0 and 1 and waits for member 2 (held by
 * another client): cancelled, it ends at once with HL_EINTERRUPTED through
 * its own fd, and members 0 and 1 are free in Redis; freed unread, the
 * same; an hl_client_interrupt() of member 2's client ends a blocking
 * call's wait the same way, of member 0's client a task's. */
struct block_arg {
	hl_multilock *m;
	int rc, acquired;
	char msg[512];
};

static void *block_thread(void *arg)
{
	struct block_arg *a = arg;
	a->rc = hl_multilock_try_acquire(&a->acquired, a->m, 20000, -1, NULL);
	snprintf(a->msg, sizeof a->msg, "%s", a->rc ? hl_error_last() : "");
	return NULL;
}

/* Wait until an acquire of "multi:tc" holds members 0 and 1 and waits for
 * member 2. */
static void until_waiting_for_2(void)
{
	wait_key(srv[0], "multi:tc", 1, 5000);
	wait_key(srv[1], "multi:tc", 1, 5000);
	wait_waiting(cli[2], 1, 5000);
}

static void task_cancel(void)
{
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	hl_task *t;
	struct block_arg a;
	pthread_t th;
	int acquired = 7, fd, members[NSRV] = {9, 9, 9};
	int64_t t0, valid = 7;

	three(0);
	m = multi_of(l, "multi:tc", HL_MULTILOCK_ALL);
	oc = ht_client(srv[2], 0);
	other = ht_lock(oc, "multi:tc");
	HT_OK(hl_lock_acquire(other, -1, NULL));

	/* hl_task_cancel */
	HT_OK(hl_multilock_try_acquire_start(&t, m, -1, -1));
	until_waiting_for_2();
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_task_fd(&fd, t));
	HT_EQ(ht_fd_readable(fd, 0), 0);
	t0 = ht_now_ms();
	hl_task_cancel(t);
	HT_CHECK(ht_fd_readable(fd, 2000 * ht_scale()));
	ht_note("cancelled: done after %lld ms", (long long)(ht_now_ms() - t0));
	HT_RANGE(ht_now_ms() - t0, 0, 300 * ht_scale());
	HT_RC(hl_task_result(&acquired, t), HL_EINTERRUPTED);
	HT_CHECK(strstr(hl_error_last(), "interrupted") != NULL);
	HT_EQ(acquired, 7);
	/* given back before it was reported done */
	HT_EQ(ht_exists(srv[0], HT_S("multi:tc")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);
	HT_EQ(ht_hlen(srv[2], HT_S("multi:tc")), 1);
	HT_EQ(ht_hget_int(srv[2], HT_S("multi:tc"), ht_owner(other)), 1);
	wait_waiting(cli[2], 0, 2000);
	hl_task_free(t);

	/* hl_task_free, unread: the same, and its outputs are not written */
	HT_OK(hl_multilock_try_acquire_ex_start(&t, &valid, members, m, 20000,
	                                        -1));
	until_waiting_for_2();
	hl_task_free(t);
	wait_key(srv[0], "multi:tc", 0, 2000);
	wait_key(srv[1], "multi:tc", 0, 2000);
	wait_waiting(cli[2], 0, 2000);
	ht_sleep_ms(200); /* and it stays so */
	HT_EQ(ht_exists(srv[0], HT_S("multi:tc")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);
	HT_EQ(valid, 7);
	HT_EQ(members[0], 9);

	/* the blocking call, interrupted through member 2's client */
	memset(&a, 0, sizeof a);
	a.m = m;
	a.acquired = 7;
	th = ht_thread_start(block_thread, &a);
	until_waiting_for_2();
	t0 = ht_now_ms();
	HT_OK(hl_client_interrupt(cli[2]));
	ht_thread_join(th, 5000);
	HT_RANGE(ht_now_ms() - t0, 0, 500 * ht_scale());
	HT_EQ(a.rc, HL_EINTERRUPTED);
	HT_EQ(a.acquired, 7);
	HT_CHECKF(strstr(a.msg, "member 2") != NULL, "%s", a.msg);
	HT_EQ(ht_exists(srv[0], HT_S("multi:tc")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);

	/* a task, interrupted through member 0's client (the task's own) */
	HT_OK(hl_multilock_try_acquire_start(&t, m, -1, -1));
	until_waiting_for_2();
	HT_OK(hl_client_interrupt(cli[0]));
	HT_RC(ht_task_result(t, &acquired, 2000), HL_EINTERRUPTED);
	HT_EQ(ht_exists(srv[0], HT_S("multi:tc")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);
	hl_task_free(t);
	wait_waiting(cli[2], 0, 2000);

	/* and once member 2 is free, a task gets all three */
	HT_OK(hl_lock_release(NULL, other));
	HT_OK(hl_multilock_try_acquire_start(&t, m, 5000, -1));
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 1);
	hl_task_free(t);
	HT_EQ(ht_hget_int(srv[2], HT_S("multi:tc"), owner_of(l[2])), 1);
	HT_OK(hl_multilock_release(m));
	HT_EQ(ht_exists(srv[2], HT_S("multi:tc")), 0);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

/* Closing clients under a waiting task. Member 0's client (the task's):
 * the task ends with HL_ECLOSED (delivered through that client's fd after
 * the close), member 1 on an open client is released at once, and member
 * 0, on the closed client, is no longer renewed: its lease (the watchdog
 * timeout) ends it. Member 2's client (the one it waits on): HL_ECLOSED
 * naming member 2, members 0 and 1 released. */
static void task_close(void)
{
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	hl_task *t, *got;
	int acquired = 7, i;
	int64_t t0;
	long long pttl;

	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	cli[0] = ht_client(srv[0], 1000); /* a short watchdog lease */
	cli[1] = ht_client(srv[1], 0);
	cli[2] = ht_client(srv[2], 0);
	m = multi_of(l, "multi:tc", HL_MULTILOCK_ALL);
	oc = ht_client(srv[2], 0);
	other = ht_lock(oc, "multi:tc");
	HT_OK(hl_lock_acquire(other, -1, NULL));

	HT_OK(hl_multilock_try_acquire_start(&t, m, -1, -1));
	HT_OK(hl_task_set_data(t, 42));
	until_waiting_for_2();
	t0 = ht_now_ms();
	hl_client_close(cli[0]);
	ht_note("member 0's client closed in %lld ms",
	        (long long)(ht_now_ms() - t0));
	/* the close waited for the task to wind down */
	HT_EQ(hl_task_done(t), 1);
	HT_RANGE(ht_now_ms() - t0, 0, 1500 * ht_scale());
	got = ht_next_task(cli[0], 1000);
	HT_CHECK(got == t);
	HT_EQ(hl_task_data(got), 42);
	HT_RC(hl_task_result(&acquired, t), HL_ECLOSED);
	HT_EQ(acquired, 7);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);
	wait_waiting(cli[2], 0, 2000);
	pttl = ht_pttl(srv[0], HT_S("multi:tc"));
	ht_note("member 0 on the closed client: pttl %lld", pttl);
	HT_RANGE(pttl, -2, 1000);
	wait_key(srv[0], "multi:tc", 0, 2000);
	hl_task_free(t);
	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_client_free(cli[0]);

	/* member 2's client closed while the task waits on it */
	cli[0] = ht_client(srv[0], 0);
	m = multi_of(l, "multi:tc", HL_MULTILOCK_ALL);
	HT_OK(hl_multilock_try_acquire_start(&t, m, -1, -1));
	until_waiting_for_2();
	hl_client_close(cli[2]);
	HT_RC(ht_task_result(t, &acquired, 2000), HL_ECLOSED);
	HT_CHECKF(strstr(hl_error_last(), "member 2") != NULL, "%s",
	          hl_error_last());
	HT_EQ(ht_exists(srv[0], HT_S("multi:tc")), 0);
	HT_EQ(ht_exists(srv[1], HT_S("multi:tc")), 0);
	HT_EQ(ht_hlen(srv[2], HT_S("multi:tc")), 1); /* the holder's */
	hl_task_free(t);

	/* a start with a member of a closed client: refused, named */
	HT_RC(hl_multilock_try_acquire_start(&t, m, 0, -1), HL_ECLOSED);
	HT_CHECKF(strstr(hl_error_last(), "member 2 (\"multi:tc\")") != NULL,
	          "%s", hl_error_last());
	HT_RC(hl_multilock_release_start(&t, m), HL_ECLOSED);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	HT_OK(hl_lock_release(NULL, other));
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

static int none_held(void *arg)
{
	int j;
	(void)arg;
	for (j = 0; j < NSRV; j++)
		if (ht_exists(srv[j], HT_S("multi:race")))
			return 0;
	return 1;
}

/* A cancel racing the acquisition: either the task got every member (and
 * says so) or it ended interrupted and holds none, now or later. A task
 * freed unread in the race leaves none held either. */
static void task_cancel_race(void)
{
	hl_lock *l[NSRV], *other;
	hl_client *oc;
	hl_multilock *m;
	int i, j, got = 0, cancelled = 0, freed = 0, rounds = 120;

	three(0);
	m = multi_of(l, "multi:race", HL_MULTILOCK_ALL);
	oc = ht_client(srv[0], 0);
	other = ht_lock(oc, "multi:race");
	srand(11);
	for (i = 0; i < rounds; i++) {
		hl_task *t;
		int acquired = 7, rc;
		HT_OK(hl_lock_acquire(other, -1, NULL));
		set_owner_all(l, NSRV, hl_owner_id_new());
		HT_OK(hl_multilock_try_acquire_start(&t, m, -1, -1));
		wait_waiting(cli[0], 1, 5000);
		HT_OK(hl_lock_release(NULL, other));
		/* cancel somewhere in the hand-off: before member 0, between
		 * members, or after the last */
		{
			struct timespec ts = {0, (long)(rand() % 1000) * 1000};
			nanosleep(&ts, NULL);
		}
		if (i % 3 == 1) {
			/* Freed unread: it gives back what it took, unless it
			 * had completed (with all three) before the free. */
			hl_task_free(t);
			if (ht_wait_until(none_held, NULL, 300 * ht_scale())) {
				freed++;
				continue;
			}
			for (j = 0; j < NSRV; j++)
				HT_EQ(ht_hget_int(srv[j], HT_S("multi:race"),
				                  owner_of(l[j])),
				      1);
			HT_OK(hl_multilock_release(m));
			got++;
			continue;
		}
		hl_task_cancel(t);
		rc = ht_task_result(t, &acquired, 3000);
		if (rc == HL_OK) {
			HT_EQ(acquired, 1);
			for (j = 0; j < NSRV; j++)
				HT_EQ(ht_hget_int(srv[j], HT_S("multi:race"),
				                  owner_of(l[j])),
				      1);
			HT_OK(hl_multilock_release(m));
			got++;
		} else {
			HT_EQ(rc, HL_EINTERRUPTED);
			cancelled++;
		}
		hl_task_free(t);
		for (j = 0; j < NSRV; j++)
			HT_EQ(ht_exists(srv[j], HT_S("multi:race")), 0);
	}
	ht_note("%d rounds: %d acquired before the cancel or free, %d "
	        "cancelled, %d freed unread",
	        rounds, got, cancelled, freed);
	HT_CHECK(cancelled > 0);
	HT_CHECK(freed > 0);
	ht_sleep_ms(200); /* nothing lands late */
	for (j = 0; j < NSRV; j++)
		HT_EQ(ht_exists(srv[j], HT_S("multi:race")), 0);
	hl_multilock_free(m);
	locks_free(l, NSRV);
	hl_lock_free(other);
	hl_client_free(oc);
	three_free();
}

/* A RedLock task with one server black-holed: its quorum, its outputs
 * (members taken, validity) written before it is reported done; the
 * release task's per-member outputs. The handle and the member handles
 * may go as soon as a task started. */
static void task_redlock(void)
{
	ht_proxy *p;
	hl_lock *l[NSRV];
	hl_multilock *m;
	hl_task *t;
	int acquired = 7, members[NSRV] = {9, 9, 9}, statuses[NSRV],
	    released[NSRV], n = 0, i, lost = 1;
	int64_t valid = 7, t0, dt;

	for (i = 0; i < NSRV; i++)
		srv[i] = ht_redis_start(NULL);
	p = ht_proxy_start(srv[1]->port);
	cli[0] = ht_client(srv[0], 0);
	cli[1] = quick_client(p->url);
	cli[2] = ht_client(srv[2], 0);
	m = multi_of(l, "multi:tred", HL_MULTILOCK_RED);
	ht_proxy_cmd(p, "blackhole on");

	t0 = ht_now_ms();
	HT_OK(hl_multilock_try_acquire_ex_start(&t, &valid, members, m, 1500,
	                                        10000));
	HT_OK(ht_task_result(t, &acquired, 5000));
	dt = ht_now_ms() - t0;
	ht_note("RedLock task, one of three black-holed: held after %lld ms, "
	        "valid %lld",
	        (long long)dt, (long long)valid);
	HT_EQ(acquired, 1);
	HT_EQ(members[0], 1);
	HT_EQ(members[1], 0);
	HT_EQ(members[2], 1);
	HT_RANGE(valid, 1, 10000 - hl_multilock_drift_ms(10000));
	HT_RANGE(ht_pttl(srv[0], HT_S("multi:tred")), 1, 10000);
	HT_EQ(ht_hget_int(srv[2], HT_S("multi:tred"), owner_of(l[2])), 1);
	hl_task_free(t);
	HT_OK(hl_multilock_is_lost(&lost, m));
	HT_EQ(lost, 0); /* recorded on the handle */

	/* the release task skips the member it never took */
	for (i = 0; i < NSRV; i++)
		statuses[i] = released[i] = 9;
	HT_OK(hl_multilock_release_ex_start(&t, statuses, released, m, NULL));
	HT_OK(ht_task_result(t, &n, 3000));
	HT_EQ(n, 2);
	HT_EQ(statuses[0], HL_OK);
	HT_EQ(statuses[1], HL_ENOTHELD);
	HT_EQ(statuses[2], HL_OK);
	HT_EQ(released[0], 1);
	HT_EQ(released[1], 0);
	HT_EQ(released[2], 1);
	hl_task_free(t);
	HT_EQ(ht_exists(srv[0], HT_S("multi:tred")), 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:tred")), 0);

	/* handles freed as soon as the task started: it works from copies */
	HT_OK(hl_multilock_try_acquire_start(&t, m, 1500, -1));
	hl_multilock_free(m);
	locks_free(l, NSRV);
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 1);
	hl_task_free(t);
	m = multi_of(l, "multi:tred", HL_MULTILOCK_RED);
	HT_EQ(ht_exists(srv[0], HT_S("multi:tred")), 1);
	HT_EQ(ht_exists(srv[2], HT_S("multi:tred")), 1);
	/* this handle has no record of it: every member is released */
	HT_OK(hl_multilock_release_ex(statuses, NULL, m, NULL));
	HT_EQ(statuses[0], HL_OK);
	HT_EQ(statuses[2], HL_OK);
	HT_EQ(ht_exists(srv[0], HT_S("multi:tred")), 0);
	HT_EQ(ht_exists(srv[2], HT_S("multi:tred")), 0);

	hl_multilock_free(m);
	locks_free(l, NSRV);
	three_free();
	ht_proxy_stop(p);
}

/* Bad input to the start calls: a clear status, nothing written. */
static void task_bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l[2];
	hl_multilock *m;
	hl_task *t = (hl_task *)0x1;

	l[0] = ht_lock(c, "multi:tbad:a");
	l[1] = ht_lock(c, "multi:tbad:b");
	HT_OK(hl_multilock_new(&m, l, 2, HL_MULTILOCK_ALL));
	HT_RC(hl_multilock_try_acquire_start(NULL, m, 0, -1), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_start(&t, NULL, 0, -1), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_start(&t, m, -2, -1), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_start(&t, m, 0, 0), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_start(&t, m, 0, -7), HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_start(&t, m, (int64_t)1 << 41, -1),
	      HL_EINVAL);
	HT_RC(hl_multilock_try_acquire_ex_start(&t, NULL, NULL, m, 0,
	                                        (int64_t)1 << 41),
	      HL_EINVAL);
	HT_RC(hl_multilock_release_start(NULL, m), HL_EINVAL);
	HT_RC(hl_multilock_release_start(&t, NULL), HL_EINVAL);
	HT_RC(hl_multilock_release_ex_start(&t, NULL, NULL, NULL, NULL),
	      HL_EINVAL);
	HT_CHECK(t == (hl_task *)0x1); /* never written on failure */

	/* a release task with nothing held: "not held", nothing released */
	HT_OK(hl_multilock_release_start(&t, m));
	HT_OK(hl_task_wait(t, 5000 * ht_scale(), NULL));
	HT_RC(hl_task_result(NULL, t), HL_ENOTHELD);
	HT_CHECK(strstr(hl_error_last(), "member") != NULL);
	hl_task_free(t);

	/* a release task cancelled before it ran, or not: either nothing
	 * was released, or it ran to its end; freeing it is safe */
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	HT_OK(hl_multilock_release_start(&t, m));
	hl_task_cancel(t);
	HT_OK(hl_task_wait(t, 5000 * ht_scale(), NULL));
	if (hl_task_result(NULL, t) == HL_EINTERRUPTED) {
		HT_EQ(ht_exists(r, HT_S("multi:tbad:a")), 1);
		hl_task_free(t);
		HT_OK(hl_multilock_release(m));
	} else {
		hl_task_free(t);
	}
	HT_EQ(ht_exists(r, HT_S("multi:tbad:a")), 0);
	HT_EQ(ht_exists(r, HT_S("multi:tbad:b")), 0);
	/* a wait of 0 through a task */
	HT_OK(hl_multilock_try_acquire_start(&t, m, 0, -1));
	{
		int acquired = 7;
		HT_OK(ht_task_result(t, &acquired, 5000));
		HT_EQ(acquired, 1);
	}
	hl_task_free(t);
	HT_OK(hl_multilock_release(m));

	hl_multilock_free(m);
	locks_free(l, 2);
	hl_client_free(c);
}

/* ---- a member's hold that is not the multilock's -------------------------
 * The multilock records each member's hold (its epoch, hl_hold_state) as it
 * takes it. A member whose hold ended while the multilock held it (lost, or
 * released directly) and that its owner then took again directly is held
 * in a newer hold: the multilock's release leaves that hold alone (its
 * count intact in Redis, still renewed), releases the other members, and
 * says the member was lost. A member the owner held directly before the
 * multilock took it is the same hold, re-entered: the release gives back
 * one count of it. */

static const char *rt_names[3] = {"multi:rt:a", "multi:rt:b", "multi:rt:c"};

static hl_hold_state hold_state_of(hl_lock *l)
{
	hl_hold_state st;
	memset(&st, 0, sizeof st);
	st.version = HL_HOLD_STATE_VERSION;
	HT_OK(hl_lock_hold_state(&st, l));
	return st;
}

static uint64_t epoch_of(hl_lock *l)
{
	return hold_state_of(l).epoch;
}

/* The owner takes l again directly: a new hold, not the one of epoch old.
 * Returns its epoch. */
static uint64_t retake(hl_lock *l, uint64_t old)
{
	uint64_t e;
	HT_OK(hl_lock_acquire(l, -1, NULL));
	e = epoch_of(l);
	HT_CHECK(e != 0 && e != old);
	return e;
}

static hl_multilock *rt_multi(hl_client *c, hl_lock **l, int kind)
{
	hl_multilock *m = NULL;
	int i;
	for (i = 0; i < 3; i++)
		l[i] = ht_lock(c, rt_names[i]);
	HT_OK(hl_multilock_new(&m, l, 3, kind));
	return m;
}

/* Member 1's direct hold, count want: in Redis, in the client's record (the
 * hold epoch, not lost), and still renewed by the watchdog. */
static void rt_direct_intact(ht_redis *r, hl_lock *l1, uint64_t epoch,
                             int64_t want)
{
	hl_hold_state st;
	int lost = 1;
	HT_EQ(ht_hget_int(r, HT_S(rt_names[1]), owner_of(l1)), want);
	HT_EQ(ht_hlen(r, HT_S(rt_names[1])), 1);
	st = hold_state_of(l1);
	HT_EQ(st.count, want);
	HT_EQ(st.lost, 0);
	HT_EQ(st.epoch, epoch);
	HT_EQ(st.lease_ms, -1);
	HT_OK(hl_lock_is_lost(&lost, l1));
	HT_EQ(lost, 0);
}

/* Release member 1's direct hold, want holds of it: each release answers
 * HL_OK, and the last one frees the key. */
static void rt_direct_release(ht_redis *r, hl_lock *l1, int want)
{
	int i, rel = 7;
	for (i = want; i > 0; i--) {
		HT_OK(hl_lock_release(&rel, l1));
		HT_EQ(rel, i == 1);
	}
	HT_EQ(ht_exists(r, HT_S(rt_names[1])), 0);
}

/* The bug: member 1's key deleted in Redis while the multilock holds it
 * (the watchdog finds it lost), then taken again twice by the same owner
 * on the same handle. The release (the blocking call, then the same
 * through a task) gives back members 0 and 2, leaves the new hold of
 * member 1 (count 2) as it was, and says HL_ELOST naming member 1. A
 * RedLock does the same and, with its quorum released, answers HL_OK. */
static void member_retaken(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 1500);
	hl_lock *l[3];
	hl_multilock *m, *red;
	hl_task *t;
	int statuses[3], released[3], lost = 0, kind, i, n = -1;
	uint64_t e0, e1;

	m = rt_multi(c, l, HL_MULTILOCK_ALL);
	HT_OK(hl_multilock_new(&red, l, 3, HL_MULTILOCK_RED));
	for (kind = 0; kind < 3; kind++) {
		/* 0: the blocking release; 1: a release task; 2: a RedLock */
		hl_multilock *ml = kind == 2 ? red : m;
		ht_note("%s", kind == 0   ? "blocking release"
		              : kind == 1 ? "release task"
		                          : "RedLock");
		HT_OK(hl_multilock_acquire(ml, -1, NULL));
		e0 = epoch_of(l[1]);
		HT_CHECK(e0 != 0);
		ht_del(r, HT_S(rt_names[1]));
		HT_OK(hl_lock_wait_lost(&lost, l[1], 10000 * ht_scale(), NULL));
		HT_EQ(lost, 1);
		HT_OK(hl_lock_acquire(l[1], -1, NULL));
		e1 = retake(l[1], e0);
		/* the multilock's hold of member 1 is gone, though member 1
		 * is held: a multi lock is lost, a RedLock keeps its quorum */
		HT_OK(hl_multilock_is_lost(&lost, ml));
		HT_EQ(lost, kind != 2);

		memset(statuses, 0x55, sizeof statuses);
		memset(released, 0x55, sizeof released);
		if (kind == 1) {
			HT_OK(hl_multilock_release_ex_start(
			        &t, statuses, released, ml, NULL));
			HT_OK(hl_task_wait(t, 10000 * ht_scale(), NULL));
			HT_RC(hl_task_result(&n, t), HL_ELOST);
			hl_task_free(t);
		} else if (kind == 0) {
			HT_RC(hl_multilock_release_ex(statuses, released, ml,
			                              NULL),
			      HL_ELOST);
		} else {
			HT_OK(hl_multilock_release_ex(statuses, released, ml,
			                              NULL));
		}
		if (kind != 2)
			HT_CHECKF(strstr(hl_error_last(), "member 1") != NULL,
			          "%s", hl_error_last());
		for (i = 0; i < 3; i++) {
			HT_EQ(statuses[i], i == 1 ? HL_ELOST : HL_OK);
			HT_EQ(released[i], i != 1);
		}
		HT_EQ(ht_exists(r, HT_S(rt_names[0])), 0);
		HT_EQ(ht_exists(r, HT_S(rt_names[2])), 0);
		rt_direct_intact(r, l[1], e1, 2);
		/* it is renewed still: past a watchdog timeout, still there */
		ht_sleep_ms(1600);
		rt_direct_intact(r, l[1], e1, 2);
		HT_CHECK(ht_pttl(r, HT_S(rt_names[1])) > 0);
		/* nothing of the multilock's is left: it holds nothing */
		HT_OK(hl_multilock_is_lost(&lost, ml));
		HT_EQ(lost, 0);
		rt_direct_release(r, l[1], 2);
	}

	hl_multilock_free(red);
	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(c);
}

/* The same through a fixed lease: every member's lease ran out, and the
 * owner took member 1 again without one. The release leaves member 1's new
 * hold alone; the others were lost too (their leases ended). */
static void member_retaken_lease(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l[3];
	hl_multilock *m;
	int statuses[3], released[3], acquired = 0, i;
	uint64_t e0, e1;

	m = rt_multi(c, l, HL_MULTILOCK_ALL);
	HT_OK(hl_multilock_try_acquire(&acquired, m, 1000, 300, NULL));
	HT_EQ(acquired, 1);
	e0 = epoch_of(l[1]);
	for (i = 0; i < 3; i++)
		wait_key(r, rt_names[i], 0, 2000);
	e1 = retake(l[1], e0);
	HT_RC(hl_multilock_release_ex(statuses, released, m, NULL), HL_ELOST);
	for (i = 0; i < 3; i++) {
		/* a lease that ran out: lost, or forgotten once Redis dropped
		 * it (not held) */
		if (i == 1)
			HT_EQ(statuses[i], HL_ELOST);
		else
			HT_CHECKF(statuses[i] == HL_ELOST ||
			                  statuses[i] == HL_ENOTHELD,
			          "member %d: %s", i,
			          hl_status_name(statuses[i]));
		HT_EQ(released[i], 0);
	}
	rt_direct_intact(r, l[1], e1, 1);
	rt_direct_release(r, l[1], 1);

	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(c);
}

/* Re-entry. (a) Member 1 held directly before the multilock took it: the
 * same hold, counted twice; the release gives back one count and the
 * direct hold goes on. (b) Member 1 released directly and taken again
 * while the multilock held it: a newer hold, left alone. (c) The multilock
 * taken twice, member 1 then lost (force-unlocked) and taken again: each
 * of the two releases gives back one count of members 0 and 2 and leaves
 * member 1's new hold alone. */
static void member_reentry(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l[3];
	hl_multilock *m;
	int statuses[3], released[3], existed = 0, lost = 0, i, round;
	uint64_t e0, e1;

	m = rt_multi(c, l, HL_MULTILOCK_ALL);

	/* (a) */
	HT_OK(hl_lock_acquire(l[1], -1, NULL));
	e0 = epoch_of(l[1]);
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	HT_EQ(epoch_of(l[1]), e0);
	HT_EQ(ht_hget_int(r, HT_S(rt_names[1]), owner_of(l[1])), 2);
	HT_OK(hl_multilock_release_ex(statuses, released, m, NULL));
	for (i = 0; i < 3; i++) {
		HT_EQ(statuses[i], HL_OK);
		HT_EQ(released[i], i != 1);
	}
	HT_EQ(ht_exists(r, HT_S(rt_names[0])), 0);
	rt_direct_intact(r, l[1], e0, 1);
	rt_direct_release(r, l[1], 1);
	/* ... and the other way round: the direct hold released first, the
	 * multilock's count of the same hold is the last one */
	HT_OK(hl_lock_acquire(l[1], -1, NULL));
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	HT_OK(hl_lock_release(NULL, l[1]));
	HT_OK(hl_multilock_release_ex(statuses, released, m, NULL));
	for (i = 0; i < 3; i++) {
		HT_EQ(statuses[i], HL_OK);
		HT_EQ(released[i], 1);
		HT_EQ(ht_exists(r, HT_S(rt_names[i])), 0);
	}

	/* (b) */
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	e0 = epoch_of(l[1]);
	HT_OK(hl_lock_release(NULL, l[1]));
	HT_EQ(epoch_of(l[1]), 0);
	e1 = retake(l[1], e0);
	HT_RC(hl_multilock_release_ex(statuses, released, m, NULL), HL_ELOST);
	HT_EQ(statuses[1], HL_ELOST);
	HT_EQ(statuses[0], HL_OK);
	HT_EQ(statuses[2], HL_OK);
	HT_EQ(ht_exists(r, HT_S(rt_names[0])), 0);
	rt_direct_intact(r, l[1], e1, 1);
	rt_direct_release(r, l[1], 1);

	/* (c) */
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	for (i = 0; i < 3; i++)
		HT_EQ(ht_hget_int(r, HT_S(rt_names[i]), owner_of(l[i])), 2);
	e0 = epoch_of(l[1]);
	HT_OK(hl_lock_force_unlock(&existed, l[1]));
	HT_EQ(existed, 1);
	HT_OK(hl_lock_is_lost(&lost, l[1]));
	HT_EQ(lost, 1);
	e1 = retake(l[1], e0);
	for (round = 0; round < 2; round++) {
		HT_RC(hl_multilock_release_ex(statuses, released, m, NULL),
		      HL_ELOST);
		for (i = 0; i < 3; i++) {
			HT_EQ(statuses[i], i == 1 ? HL_ELOST : HL_OK);
			/* the second release gives back the last count */
			HT_EQ(released[i], i != 1 && round == 1);
			if (i != 1)
				HT_EQ(ht_hget_int(r, HT_S(rt_names[i]),
				                  owner_of(l[i])),
				      round == 0 ? 1 : -1);
		}
		rt_direct_intact(r, l[1], e1, 1);
	}
	rt_direct_release(r, l[1], 1);

	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(c);
}

/* hl_multilock_release_holds: a binding's own record (members and each
 * member's hold epoch) instead of the handle's, through a handle that took
 * nothing. The member whose hold is another one by now is left alone
 * (HL_ELOST), as with the handle's record; an epoch of 0 releases
 * whichever hold; the task form the same. */
static void release_holds(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l[3];
	hl_multilock *m, *other;
	hl_task *t;
	int statuses[3], released[3], all[3] = {1, 1, 1}, existed = 0, i, n = 0;
	uint64_t e[3], e1;

	m = rt_multi(c, l, HL_MULTILOCK_ALL);
	HT_OK(hl_multilock_new(&other, l, 3, HL_MULTILOCK_ALL));

	HT_OK(hl_multilock_acquire(m, -1, NULL));
	for (i = 0; i < 3; i++)
		e[i] = epoch_of(l[i]);
	HT_OK(hl_lock_force_unlock(&existed, l[1]));
	HT_EQ(existed, 1);
	e1 = retake(l[1], e[1]);
	HT_RC(hl_multilock_release_holds(statuses, released, other, all, e),
	      HL_ELOST);
	HT_CHECKF(strstr(hl_error_last(), "member 1") != NULL, "%s",
	          hl_error_last());
	for (i = 0; i < 3; i++) {
		HT_EQ(statuses[i], i == 1 ? HL_ELOST : HL_OK);
		HT_EQ(released[i], i != 1);
	}
	HT_EQ(ht_exists(r, HT_S(rt_names[0])), 0);
	HT_EQ(ht_exists(r, HT_S(rt_names[2])), 0);
	rt_direct_intact(r, l[1], e1, 1);
	/* an epoch of 0: whichever hold (here the direct one) */
	e[0] = e[1] = e[2] = 0;
	HT_OK(hl_multilock_release_holds_start(&t, statuses, released, other,
	                                       (int[3]){0, 1, 0}, e));
	HT_OK(ht_task_result(t, &n, 5000));
	hl_task_free(t);
	HT_EQ(n, 1);
	HT_EQ(statuses[1], HL_OK);
	HT_EQ(released[1], 1);
	HT_EQ(statuses[0], HL_ENOTHELD); /* not asked for */
	HT_EQ(ht_exists(r, HT_S(rt_names[1])), 0);

	/* the task form, with the epochs taken: member 1 lost and taken again
	 * (released to zero through its handle, then locked) */
	HT_OK(hl_multilock_acquire(m, -1, NULL));
	for (i = 0; i < 3; i++)
		e[i] = epoch_of(l[i]);
	HT_OK(hl_lock_release(NULL, l[1]));
	e1 = retake(l[1], e[1]);
	HT_OK(hl_multilock_release_holds_start(&t, statuses, released, other,
	                                       all, e));
	HT_RC(ht_task_result(t, &n, 5000), HL_ELOST);
	hl_task_free(t);
	for (i = 0; i < 3; i++)
		HT_EQ(statuses[i], i == 1 ? HL_ELOST : HL_OK);
	rt_direct_intact(r, l[1], e1, 1);
	rt_direct_release(r, l[1], 1);

	hl_multilock_free(other);
	hl_multilock_free(m);
	locks_free(l, 3);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(all_or_nothing), HT_CASE(release_order), HT_CASE(mixed_clients),
        HT_CASE(redlock_one_down), HT_CASE(redlock_two_down),
        HT_CASE(redlock_contended), HT_CASE(lease_validity),
        HT_CASE(exclusion_processes), HT_CASE(exclusion_threads),
        HT_CASE(opposite_orders), HT_CASE(cancel), HT_CASE(kinds),
        HT_CASE(bad_input), HT_CASE(task_waiters), HT_CASE(task_cancel),
        HT_CASE(task_close), HT_CASE(task_cancel_race), HT_CASE(task_redlock),
        HT_CASE(task_bad_input), HT_CASE(member_retaken),
        HT_CASE(member_retaken_lease), HT_CASE(member_reentry),
        HT_CASE(release_holds))
