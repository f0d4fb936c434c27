/*
 * Observability: the client's counters (hl_client_stats_get) move exactly
 * with what happens, and the events the library's threads notice (a lock
 * lost, a renewal without an answer, a reconnect, a failover) are queued
 * and handed out through hl_client_event_fd and hl_client_next_event,
 * never with a password in them.
 */
#include "harness.h"
#include "harness_topo.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PW "obs-Secret-pw"

/* ---- helpers ------------------------------------------------------------ */

static hl_client_stats stats(hl_client *c)
{
	hl_client_stats s;
	memset(&s, 0xee, sizeof s);
	s.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&s, c));
	HT_EQ(s.version, HL_CLIENT_STATS_VERSION);
	return s;
}

/* 1 if fd is readable now. */
static int readable(int fd)
{
	struct pollfd p;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

#define MAXEV 2048
typedef struct evlist {
	hl_event *ev[MAXEV];
	int n;
} evlist;

/* Take every queued event into l; returns how many. */
static int drain(hl_client *c, evlist *l)
{
	int n = 0;
	for (;;) {
		hl_event *e = (hl_event *)1;
		HT_OK(hl_client_next_event(&e, c));
		if (!e)
			return n;
		HT_CHECK(l->n < MAXEV);
		l->ev[l->n++] = e;
		n++;
	}
}

static int count(const evlist *l, int type)
{
	int i, n = 0;
	for (i = 0; i < l->n; i++)
		n += hl_event_type(l->ev[i]) == type;
	return n;
}

/* The first event of type in l at index from or later, waiting for it on
 * the event fd at most timeout_ms (scaled); NULL on timeout. */
static hl_event *wait_event(hl_client *c, evlist *l, int from, int type,
                            int64_t timeout_ms)
{
	int64_t deadline = ht_now_ms() + timeout_ms * ht_scale();
	int fd = -1, i;
	HT_OK(hl_client_event_fd(&fd, c));
	for (;;) {
		struct pollfd p;
		drain(c, l);
		for (i = from; i < l->n; i++)
			if (hl_event_type(l->ev[i]) == type)
				return l->ev[i];
		if (ht_now_ms() >= deadline)
			return NULL;
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		poll(&p, 1, 50);
	}
}

static void evlist_free(evlist *l)
{
	int i;
	for (i = 0; i < l->n; i++)
		hl_event_free(l->ev[i]);
	l->n = 0;
}

/* Every string of e, none holding the password. */
static void no_password(const hl_event *e, const char *pw)
{
	size_t len = 0;
	const char *name = hl_event_lock_name(&len, e);
	HT_CHECKF(strstr(hl_event_message(e), pw) == NULL, "%s",
	          hl_event_message(e));
	HT_CHECK(strstr(hl_event_owner(e), pw) == NULL);
	HT_CHECK(strstr(hl_event_node(e), pw) == NULL);
	HT_CHECK(!name || memmem(name, len, pw, strlen(pw)) == NULL);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A redis-server with a password, and a client for it. */
static hl_client *pw_client(ht_redis *r, const hl_client_options *o)
{
	char url[300];
	snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", PW, r->port);
	return ht_client_url(url, o);
}

struct waiter {
	hl_lock *l;
	int64_t wait_ms;
	int rc, acquired, release_rc;
};

/* Acquire (waiting), and release what it got. */
static void *wait_thread(void *p)
{
	struct waiter *w = p;
	w->rc = hl_lock_try_acquire(&w->acquired, w->l, w->wait_ms, -1, NULL);
	if (w->rc == HL_OK && w->acquired)
		w->release_rc = hl_lock_release(NULL, w->l);
	return NULL;
}

/* ---- counters ----------------------------------------------------------- */

/* Acquisitions (reentrant ones too), waits and their time, releases: each
 * counted once, where it happens, per client; a wait of 0 never waits. */
static void counters(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "obs:count"), *l2 = ht_lock(c2, "obs:count");
	hl_lock *lw = ht_lock(c, "obs:count");
	hl_client_stats s, zero;
	struct waiter w;
	pthread_t t;
	int acquired = 7, fd = -1;
	int64_t t0, took;
	hl_event *e = (hl_event *)1;

	memset(&zero, 0, sizeof zero);
	zero.version = HL_CLIENT_STATS_VERSION;
	s = stats(c);
	HT_CHECK(memcmp(&s, &zero, sizeof s) == 0);

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL)); /* reentrant */
	s = stats(c);
	HT_EQ(s.acquisitions, 2);
	HT_EQ(s.acquire_waits, 0);
	HT_EQ(s.releases, 0);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD); /* not counted */
	s = stats(c);
	HT_EQ(s.acquisitions, 2);
	HT_EQ(s.releases, 2);

	/* held by the other client: a wait that runs out, and one that
	 * never waits */
	HT_OK(hl_lock_acquire(l2, -1, NULL));
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, l, 300, -1, NULL));
	took = ht_now_ms() - t0;
	HT_EQ(acquired, 0);
	s = stats(c);
	HT_EQ(s.acquisitions, 2);
	HT_EQ(s.acquire_waits, 1);
	HT_RANGE(s.wait_time_ms, 250, took + 1); /* ms clock ticks */
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(stats(c).acquire_waits, 1);

	/* a waiter that gets it when the other client lets go */
	HT_OK(hl_lock_set_owner(lw, hl_owner_id_new()));
	memset(&w, 0, sizeof w);
	w.l = lw;
	w.wait_ms = 20000;
	t = ht_thread_start(wait_thread, &w);
	ht_sleep_ms(400);
	HT_OK(hl_lock_release(NULL, l2));
	ht_thread_join(t, 20000);
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_EQ(w.release_rc, HL_OK);
	took = stats(c).wait_time_ms - s.wait_time_ms;
	ht_note("the waiter waited %lld ms", (long long)took);
	s = stats(c);
	HT_EQ(s.acquisitions, 3);
	HT_EQ(s.acquire_waits, 2);
	HT_RANGE(took, 350, 400 + 3000 * ht_scale());
	HT_EQ(s.releases, 3);
	/* nothing else moved, no event */
	HT_EQ(s.renewals + s.renewal_failures + s.losses + s.reconnects +
	              s.failovers + s.events_dropped,
	      0);
	HT_OK(hl_client_event_fd(&fd, c));
	HT_CHECK(fd >= 0);
	HT_CHECK(!readable(fd));
	HT_OK(hl_client_next_event(&e, c));
	HT_CHECK(e == NULL);
	/* the other client counts its own */
	s = stats(c2);
	HT_EQ(s.acquisitions, 1);
	HT_EQ(s.releases, 1);
	HT_EQ(s.acquire_waits, 0);

	/* after close: the final counts, and the event fd says "closed" */
	hl_client_close(c);
	s = stats(c);
	HT_EQ(s.acquisitions, 3);
	HT_EQ(s.releases, 3);
	HT_CHECK(readable(fd));
	HT_RC(hl_client_next_event(&e, c), HL_ECLOSED);
	hl_lock_free(l);
	hl_lock_free(lw);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
}

/* Renewals: one per renewal Redis ran (its own count of EVALSHA calls
 * says so), none after the release. */
static long long evalsha_calls(ht_redis *r)
{
	return ht_cmd_calls(r, "evalsha");
}

static int renewed_twice(void *c)
{
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(&s, c) == HL_OK && s.renewals >= 2;
}

static void renewals(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 1500); /* renewed every 500 ms */
	hl_lock *l = ht_lock(c, "obs:renew");
	hl_client_stats s;
	long long calls;

	freeReplyObject(ht_raw(ht_raw_of(r), "CONFIG RESETSTAT"));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(stats(c).renewals, 0);
	HT_CHECK(ht_wait_until(renewed_twice, c, 5000));
	/* right after a renewal: the next one is 500 ms away */
	s = stats(c);
	calls = evalsha_calls(r);
	ht_note("%llu renewals, %lld EVALSHA", (unsigned long long)s.renewals,
	        calls);
	HT_EQ(calls, 1 + (long long)s.renewals); /* the acquire + renewals */
	HT_OK(hl_lock_release(NULL, l));
	ht_sleep_ms(1200);
	HT_EQ(stats(c).renewals, s.renewals);
	HT_EQ(evalsha_calls(r), 2 + (long long)s.renewals);
	s = stats(c);
	HT_EQ(s.renewal_failures, 0);
	HT_EQ(s.losses, 0);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- events ------------------------------------------------------------- */

/* A hold found lost (its key deleted behind its back) gives exactly one
 * LOST event with the lock's binary name and owner and no password; the
 * fd is readable while it is queued. A release that finds a lease hold
 * gone, and a force unlock through the client, are losses too. */
static void lost(void)
{
	ht_redis_opts ro = {.requirepass = PW};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o;
	hl_client *c;
	hl_lock *l, *l2;
	const char name[] = "obs:lost\0x";
	evlist ev = {{0}, 0};
	hl_event *e;
	const char *n;
	size_t len = 0;
	int fd = -1, lost = 0;
	int64_t before = wall_ms();

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 1000;
	c = pw_client(r, &o);
	HT_OK(hl_lock_new(&l, c, name, sizeof name - 1));
	HT_OK(hl_lock_new(&l2, c, name, sizeof name - 1));
	HT_OK(hl_client_event_fd(&fd, c));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_CHECK(!readable(fd));
	ht_del(r, name, sizeof name - 1);
	HT_OK(hl_lock_wait_lost(&lost, l, 10000 * ht_scale(), NULL));
	HT_EQ(lost, 1);
	/* the event was queued before the hold was marked lost */
	HT_CHECK(readable(fd));
	HT_EQ(drain(c, &ev), 1);
	HT_CHECK(!readable(fd));
	e = ev.ev[0];
	HT_EQ(hl_event_type(e), HL_EVENT_LOST);
	HT_STREQ(hl_event_type_name(hl_event_type(e)), "lost");
	HT_EQ(hl_event_status(e), HL_ELOST);
	n = hl_event_lock_name(&len, e);
	HT_EQ(len, sizeof name - 1);
	HT_CHECK(memcmp(n, name, len) == 0 && n[len] == '\0');
	HT_STREQ(hl_event_owner(e), ht_owner(l));
	HT_STREQ(hl_event_node(e), "");
	HT_RANGE(hl_event_time_ms(e), before, wall_ms());
	HT_RANGE(hl_event_monotonic_ms(e), 1, ht_now_ms());
	ht_note("%s", hl_event_message(e));
	HT_CHECK(strstr(hl_event_message(e), "obs:lost\\x00x") != NULL);
	HT_CHECK(strstr(hl_event_message(e), ht_owner(l)) != NULL);
	no_password(e, PW);
	HT_EQ(stats(c).losses, 1);
	/* the release hears it, and it is not counted again */
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(drain(c, &ev), 0);
	HT_EQ(stats(c).losses, 1);

	/* a fixed lease whose key vanished: the release finds it */
	HT_OK(hl_lock_acquire(l, 60000, NULL));
	ht_del(r, name, sizeof name - 1);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(drain(c, &ev), 1);
	e = ev.ev[1];
	HT_EQ(hl_event_type(e), HL_EVENT_LOST);
	HT_STREQ(hl_event_owner(e), ht_owner(l));
	HT_CHECK(strstr(hl_event_message(e), "releasing it") != NULL);
	no_password(e, PW);
	HT_EQ(stats(c).losses, 2);

	/* force-unlocked through this client (another handle) */
	HT_OK(hl_lock_acquire(l, 60000, NULL));
	HT_OK(hl_lock_force_unlock(NULL, l2));
	HT_EQ(drain(c, &ev), 1);
	e = ev.ev[2];
	HT_EQ(hl_event_type(e), HL_EVENT_LOST);
	HT_CHECK(strstr(hl_event_message(e), "force-unlocked") != NULL);
	HT_EQ(stats(c).losses, 3);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(drain(c, &ev), 0);
	HT_EQ(stats(c).losses, 3);
	HT_EQ(stats(c).events_dropped, 0);
	evlist_free(&ev);
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
}

/* Every lock kind: its acquisitions counted, its hold's loss told with
 * the lock's name (the hold class is not part of it). */
static void kinds(void)
{
	static const int ks[] = {HL_LOCK_FAIR,   HL_LOCK_READ,
	                         HL_LOCK_WRITE,  HL_LOCK_SPIN,
	                         HL_LOCK_FENCED, HL_LOCK_NONREENTRANT};
	enum { N = sizeof ks / sizeof ks[0] };
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 1000);
	hl_lock *l[N];
	char names[N][40];
	evlist ev = {{0}, 0};
	int i, j, lost;

	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "obs:kind:%s",
		         hl_lock_kind_name(ks[i]));
		HT_OK(hl_lock_new_kind(&l[i], c, ks[i], HT_S(names[i])));
		HT_OK(hl_lock_acquire(l[i], -1, NULL));
	}
	HT_EQ(stats(c).acquisitions, N);
	for (i = 0; i < N; i++)
		ht_del(r, HT_S(names[i]));
	for (i = 0; i < N; i++) {
		HT_OK(hl_lock_wait_lost(&lost, l[i], 10000 * ht_scale(), NULL));
		HT_EQ(lost, 1);
	}
	HT_EQ(drain(c, &ev), N);
	for (i = 0; i < N; i++) {
		int found = 0;
		for (j = 0; j < ev.n; j++)
			if (hl_event_type(ev.ev[j]) == HL_EVENT_LOST &&
			    strcmp(hl_event_lock_name(NULL, ev.ev[j]),
			           names[i]) == 0)
				found++;
		HT_CHECKF(found == 1, "%s: %d LOST events", names[i], found);
	}
	HT_EQ(stats(c).losses, N);
	for (i = 0; i < N; i++) {
		HT_RC(hl_lock_release(NULL, l[i]), HL_ELOST);
		hl_lock_free(l[i]);
	}
	HT_EQ(stats(c).releases, 0);
	evlist_free(&ev);
	hl_client_free(c);
}

/* Redis stops answering: one RENEWAL_FAILED event for the hold (not one
 * per retry), every failed renewal counted, then the LOST event when the
 * clock reaches the loss deadline. */
static void renewal_failed(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	evlist ev = {{0}, 0};
	hl_event *fail, *lost;
	hl_client_stats s;
	int i, idx = -1;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 2000;
	o.command_timeout_ms = 200;
	o.connect_timeout_ms = 200;
	o.retry_delay_ms = 100;
	c = ht_client_url(p->url, &o);
	l = ht_lock(c, "obs:renewfail");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_CHECK(ht_wait_until(renewed_twice, c, 5000));
	ht_proxy_cmd(p, "blackhole on");
	fail = wait_event(c, &ev, 0, HL_EVENT_RENEWAL_FAILED, 5000);
	HT_CHECK(fail != NULL);
	for (i = 0; i < ev.n; i++)
		if (ev.ev[i] == fail)
			idx = i;
	lost = wait_event(c, &ev, idx, HL_EVENT_LOST, 5000);
	HT_CHECK(lost != NULL);
	ht_note("%s", hl_event_message(fail));
	ht_note("%s", hl_event_message(lost));
	HT_EQ(count(&ev, HL_EVENT_RENEWAL_FAILED), 1);
	HT_EQ(count(&ev, HL_EVENT_LOST), 1);
	HT_EQ(hl_event_status(fail), HL_EIO);
	HT_STREQ(hl_event_owner(fail), ht_owner(l));
	HT_STREQ(hl_event_lock_name(NULL, fail), "obs:renewfail");
	HT_CHECK(strstr(hl_event_message(fail), "no answer") != NULL);
	HT_CHECK(strstr(hl_event_message(lost), "did not confirm") != NULL);
	s = stats(c);
	ht_note("%llu failed renewals", (unsigned long long)s.renewal_failures);
	HT_CHECK(s.renewal_failures >= 2); /* retried, told once */
	HT_EQ(s.losses, 1);
	ht_proxy_cmd(p, "blackhole off");
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	evlist_free(&ev);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void kill_type(ht_redis *r, const char *type)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "CLIENT KILL TYPE %s", type);
	HT_CHECKF(rep->type == REDIS_REPLY_INTEGER && rep->integer >= 1,
	          "CLIENT KILL TYPE %s: %lld", type, rep->integer);
	freeReplyObject(rep);
}

static int subscribed(void *r)
{
	return ht_numsub(r, HT_S("redisson_lock__channel:{obs:rc}")) == 1;
}

static int renewed_once(void *c)
{
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(&s, c) == HL_OK && s.renewals >= 1;
}

struct renewals_past {
	hl_client *c;
	uint64_t n;
};

static int renewed_again(void *p)
{
	struct renewals_past *a = p;
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(&s, a->c) == HL_OK && s.renewals > a->n;
}

struct reconnects_at_least {
	hl_client *c;
	uint64_t n;
};

static int reconnected(void *p)
{
	struct reconnects_at_least *a = p;
	hl_client_stats s;
	s.version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(&s, a->c) == HL_OK && s.reconnects >= a->n;
}

/* Connections killed by the server: the command connection, the
 * subscriber's, the watchdog's are each made again, counted and told
 * (with the server, never its password). */
static void reconnect(void)
{
	ht_redis_opts ro = {.requirepass = PW};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o;
	hl_client *c, *c2, *cw;
	hl_lock *l, *l2, *lw;
	evlist ev = {{0}, 0};
	struct waiter w;
	struct reconnects_at_least want;
	hl_event *e;
	hl_client_stats s;
	pthread_t t;
	char node[64];
	int locked = 7;
	uint64_t before;
	struct renewals_past renewals_before;

	snprintf(node, sizeof node, "127.0.0.1:%d", r->port);
	c = pw_client(r, NULL);
	l = ht_lock(c, "obs:rc");
	/* 1. the command connection */
	HT_OK(hl_lock_is_locked(&locked, l));
	kill_type(r, "normal");
	HT_OK(hl_lock_is_locked(&locked, l));
	HT_EQ(locked, 0);
	HT_EQ(stats(c).reconnects, 1);
	e = wait_event(c, &ev, 0, HL_EVENT_RECONNECT, 1000);
	HT_CHECK(e != NULL);
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	HT_EQ(hl_event_status(e), HL_EIO);
	HT_CHECK(hl_event_lock_name(NULL, e) == NULL);
	HT_CHECK(strstr(hl_event_message(e), node) != NULL);
	no_password(e, PW);
	HT_EQ(ev.n, 1);

	/* 2. the subscriber's, while a waiter needs it */
	c2 = pw_client(r, NULL);
	l2 = ht_lock(c2, "obs:rc");
	HT_OK(hl_lock_acquire(l2, -1, NULL));
	memset(&w, 0, sizeof w);
	w.l = l;
	w.wait_ms = 30000;
	t = ht_thread_start(wait_thread, &w);
	HT_CHECK(ht_wait_until(subscribed, r, 5000));
	kill_type(r, "pubsub");
	want.c = c;
	want.n = 2;
	HT_CHECK(ht_wait_until(reconnected, &want, 5000));
	e = wait_event(c, &ev, 1, HL_EVENT_RECONNECT, 1000);
	HT_CHECK(e != NULL);
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	no_password(e, PW);
	HT_CHECK(ht_wait_until(subscribed, r, 5000));
	HT_OK(hl_lock_release(NULL, l2));
	ht_thread_join(t, 10000);
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_EQ(stats(c).reconnects, 2);
	HT_EQ(count(&ev, HL_EVENT_RECONNECT), 2);

	/* 3. the watchdog's: it renews on a new one, and the hold lives
	 * (relative counts: on a loaded machine a renewal can also miss its
	 * time before the kill, and its connection is made again too) */
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 3000; /* renewed every second */
	cw = pw_client(r, &o);
	lw = ht_lock(cw, "obs:rcw");
	HT_OK(hl_lock_acquire(lw, -1, NULL));
	HT_CHECK(ht_wait_until(renewed_once, cw, 5000));
	s = stats(cw);
	kill_type(r, "normal");
	want.c = cw;
	want.n = s.reconnects + 1;
	HT_CHECK(ht_wait_until(reconnected, &want, 5000));
	renewals_before.c = cw;
	renewals_before.n = s.renewals;
	HT_CHECK(ht_wait_until(renewed_again, &renewals_before, 5000));
	s = stats(cw);
	HT_EQ(s.renewal_failures, 0);
	HT_EQ(s.losses, 0);
	before = s.reconnects;
	HT_OK(hl_lock_release(NULL, lw)); /* its command connection too */
	HT_EQ(stats(cw).reconnects, before + 1);
	evlist_free(&ev);
	drain(cw, &ev);
	HT_EQ(count(&ev, HL_EVENT_RECONNECT), (long long)before + 1);
	HT_EQ(ev.n, (long long)before + 1);
	evlist_free(&ev);
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_lock_free(lw);
	hl_client_free(c);
	hl_client_free(c2);
	hl_client_free(cw);
}

/* More events than the queue keeps: the oldest go, counted; the fd stays
 * readable until the last is taken. */
static void queue_bounded(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	evlist *ev = calloc(1, sizeof *ev);
	int i, fd = -1, extra = 7;
	char name[32];

	HT_OK(hl_client_event_fd(&fd, c));
	for (i = 0; i < HL_EVENT_QUEUE_MAX + extra; i++) {
		hl_lock *l;
		snprintf(name, sizeof name, "obs:q:%d", i);
		l = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l, 60000, NULL));
		HT_OK(hl_lock_force_unlock(NULL, l)); /* a loss */
		hl_lock_free(l);
	}
	HT_EQ(stats(c).losses, HL_EVENT_QUEUE_MAX + extra);
	HT_EQ(stats(c).events_dropped, extra);
	HT_CHECK(readable(fd));
	HT_EQ(drain(c, ev), HL_EVENT_QUEUE_MAX);
	HT_CHECK(!readable(fd));
	/* the oldest were dropped: the first kept is the 8th */
	snprintf(name, sizeof name, "obs:q:%d", extra);
	HT_STREQ(hl_event_lock_name(NULL, ev->ev[0]), name);
	snprintf(name, sizeof name, "obs:q:%d", HL_EVENT_QUEUE_MAX + extra - 1);
	HT_STREQ(hl_event_lock_name(NULL, ev->ev[HL_EVENT_QUEUE_MAX - 1]),
	         name);
	evlist_free(ev);
	free(ev);
	hl_client_free(c);
}

/* The drainer pattern: a thread of the program's own waits on the fd,
 * takes the events, and stops when close makes next_event say HL_ECLOSED
 * (after the events queued before it). */
struct drainer {
	hl_client *c;
	int fd;
	int lost_events;
	int end_rc;
};

static void *drainer_main(void *p)
{
	struct drainer *d = p;
	for (;;) {
		struct pollfd pf;
		hl_event *e = NULL;
		int rc;
		pf.fd = d->fd;
		pf.events = POLLIN;
		pf.revents = 0;
		poll(&pf, 1, -1);
		while ((rc = hl_client_next_event(&e, d->c)) == HL_OK && e) {
			d->lost_events += hl_event_type(e) == HL_EVENT_LOST;
			hl_event_free(e);
		}
		if (rc != HL_OK) {
			d->end_rc = rc;
			return NULL;
		}
	}
}

static void drainer(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "obs:drainer");
	struct drainer d = {c, -1, 0, 0};
	pthread_t t;

	HT_OK(hl_client_event_fd(&d.fd, c));
	t = ht_thread_start(drainer_main, &d);
	HT_OK(hl_lock_acquire(l, 60000, NULL));
	HT_OK(hl_lock_force_unlock(NULL, l));
	hl_client_close(c); /* the drainer takes the event, then stops */
	ht_thread_join(t, 5000);
	HT_EQ(d.lost_events, 1);
	HT_EQ(d.end_rc, HL_ECLOSED);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- the waiting gauge -------------------------------------------------- */

#define wait_waiting(c, n) ht_wait_waiting(c, n)

/* The gauge counts the waits waiting now: a lock's head waiter once its
 * subscription is active and the lock still taken, the waiters queued
 * behind it at once, a latch's waiter; each leaves it when it ends
 * (cancelled, acquired, opened). A version 1 struct is not written past
 * its end. */
static void waiting(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *held = ht_lock(b, "obs:waiting"), *l[3];
	hl_latch *latch;
	hl_task *t[3], *lt;
	hl_client_stats s;
	int i, got = 0;

	HT_OK(hl_lock_acquire(held, -1, NULL));
	for (i = 0; i < 3; i++) {
		l[i] = ht_lock(a, "obs:waiting");
		HT_OK(hl_lock_set_owner(l[i], hl_owner_id_new()));
		HT_OK(hl_lock_try_acquire_start(&t[i], l[i], 30000, -1));
	}
	wait_waiting(a, 3);
	HT_EQ(stats(b).waiting, 0);
	memset(&s, 0x5a, sizeof s);
	s.version = 1;
	HT_OK(hl_client_stats_get(&s, a));
	HT_EQ(s.waiting, 0x5a5a5a5a5a5a5a5aULL);
	hl_task_cancel(t[2]);
	HT_OK(hl_task_wait(t[2], 5000, NULL));
	HT_RC(hl_task_result(NULL, t[2]), HL_EINTERRUPTED);
	HT_EQ(stats(a).waiting, 2);
	HT_OK(hl_lock_release(NULL, held));
	HT_OK(hl_task_wait(t[0], 10000, NULL));
	HT_OK(hl_task_result(&got, t[0]));
	HT_EQ(got, 1);
	wait_waiting(a, 1); /* t[1] waits for t[0]'s hold */
	HT_OK(hl_lock_release(NULL, l[0]));
	HT_OK(hl_task_wait(t[1], 10000, NULL));
	HT_OK(hl_task_result(&got, t[1]));
	HT_EQ(got, 1);
	HT_EQ(stats(a).waiting, 0);
	HT_OK(hl_lock_release(NULL, l[1]));
	for (i = 0; i < 3; i++) {
		hl_task_free(t[i]);
		hl_lock_free(l[i]);
	}

	HT_OK(hl_latch_new(&latch, a, HT_S("obs:waiting:latch")));
	HT_OK(hl_latch_try_set_count(NULL, latch, 1));
	HT_OK(hl_latch_wait_start(&lt, latch, 30000));
	wait_waiting(a, 1);
	HT_OK(hl_latch_count_down(NULL, latch));
	HT_OK(hl_task_wait(lt, 10000, NULL));
	HT_OK(hl_task_result(&got, lt));
	HT_EQ(got, 1);
	HT_EQ(stats(a).waiting, 0);
	hl_task_free(lt);
	hl_latch_free(latch);
	hl_lock_free(held);
	hl_client_free(a);
	hl_client_free(b);
}

/* Bad arguments: a clear status, no crash, nothing written. */
static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_client_stats s;
	hl_event *e = (hl_event *)1;
	size_t len = 7;
	int fd = -7, status;
	pid_t pid;

	HT_RC(hl_client_stats_get(NULL, c), HL_EINVAL);
	memset(&s, 0x5a, sizeof s);
	s.version = 0;
	HT_RC(hl_client_stats_get(&s, c), HL_EINVAL);
	HT_EQ(s.acquisitions, 0x5a5a5a5a5a5a5a5aULL);
	s.version = HL_CLIENT_STATS_VERSION + 1;
	HT_RC(hl_client_stats_get(&s, c), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "version") != NULL);
	s.version = HL_CLIENT_STATS_VERSION;
	HT_RC(hl_client_stats_get(&s, NULL), HL_EINVAL);
	HT_RC(hl_client_event_fd(NULL, c), HL_EINVAL);
	HT_RC(hl_client_event_fd(&fd, NULL), HL_EINVAL);
	HT_EQ(fd, -7);
	HT_RC(hl_client_next_event(NULL, c), HL_EINVAL);
	HT_RC(hl_client_next_event(&e, NULL), HL_EINVAL);
	HT_CHECK(e == (hl_event *)1);
	hl_event_free(NULL);
	HT_EQ(hl_event_type(NULL), 0);
	HT_EQ(hl_event_status(NULL), HL_OK);
	HT_EQ(hl_event_time_ms(NULL), 0);
	HT_EQ(hl_event_monotonic_ms(NULL), 0);
	HT_CHECK(hl_event_lock_name(&len, NULL) == NULL);
	HT_EQ(len, 0);
	HT_STREQ(hl_event_owner(NULL), "");
	HT_STREQ(hl_event_node(NULL), "");
	HT_STREQ(hl_event_message(NULL), "");
	HT_STREQ(hl_event_type_name(HL_EVENT_LOST), "lost");
	HT_STREQ(hl_event_type_name(HL_EVENT_RENEWAL_FAILED), "renewal_failed");
	HT_STREQ(hl_event_type_name(HL_EVENT_RECONNECT), "reconnect");
	HT_STREQ(hl_event_type_name(HL_EVENT_FAILOVER), "failover");
	HT_STREQ(hl_event_type_name(0), "unknown");
	HT_STREQ(hl_event_type_name(99), "unknown");
	/* a child after fork(): the parent's counts are not its own */
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client_stats cs;
		hl_event *ce = NULL;
		int cfd = -1;
		cs.version = HL_CLIENT_STATS_VERSION;
		_exit(hl_client_stats_get(&cs, c) == HL_EFORKED &&
		                      hl_client_next_event(&ce, c) ==
		                              HL_EFORKED &&
		                      hl_client_event_fd(&cfd, c) == HL_EFORKED
		              ? 0
		              : 1);
	}
	HT_EQ(waitpid(pid, &status, 0), pid);
	HT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	hl_client_free(c);
}

/* ---- topologies --------------------------------------------------------- */

/* A Sentinel failover: counted once, told with the new master. */
static void failover_sentinel(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	evlist ev = {{0}, 0};
	hl_event *e;
	char url[600], node[64];
	int port;

	ht_failover_options(&o, 3000);
	ht_sentinel_url(s, url, sizeof url);
	c = ht_client_url(url, &o);
	l = ht_lock(c, "obs:sent");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(stats(c).failovers, 0);
	port = ht_sentinel_failover(s);
	snprintf(node, sizeof node, "127.0.0.1:%d", port);
	e = wait_event(c, &ev, 0, HL_EVENT_FAILOVER, 20000);
	HT_CHECK(e != NULL);
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	HT_EQ(hl_event_status(e), HL_OK);
	HT_CHECK(strstr(hl_event_message(e), node) != NULL);
	HT_OK(hl_lock_acquire(l, -1, NULL)); /* on the new master */
	HT_OK(hl_lock_release(NULL, l));
	drain(c, &ev);
	HT_EQ(count(&ev, HL_EVENT_FAILOVER), 1);
	HT_EQ(stats(c).failovers, 1);
	evlist_free(&ev);
	hl_lock_free(l);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

static int shard_subscribed(void *p)
{
	ht_node *n = p;
	redisReply *r = ht_node_cmd(
	        n, "PUBSUB SHARDNUMSUB redisson_lock__channel:{obs:cl}");
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	         r->element[1]->integer == 1;
	freeReplyObject(r);
	return ok;
}

/* A cluster: the subscriber's connection to a node is made again after a
 * kill; a slot moving to another known master is no failover; a replica
 * promoted is one, learnt from the MOVED its old master answers; a master
 * killed is one, learnt from the slot map; each counted once. */
static void failover_cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client_options o;
	hl_client *c, *c2;
	hl_lock *l, *l2, *lw;
	evlist ev = {{0}, 0};
	hl_event *e;
	struct waiter w;
	struct reconnects_at_least want;
	pthread_t t;
	char url[600], node[64];
	int slot = ht_cluster_slot_of(cl, HT_S("obs:cl")), from, to, port, i;
	int back;
	redisReply *rep;

	ht_failover_options(&o, 3000);
	ht_cluster_url(cl, url, sizeof url);
	c = ht_client_url(url, &o);
	c2 = ht_client_url(url, &o);
	l = ht_lock(c, "obs:cl");
	lw = ht_lock(c, "obs:cl");
	l2 = ht_lock(c2, "obs:cl");
	from = ht_cluster_master_of_slot(cl, slot);

	/* the subscriber's connection to the slot's master (SSUBSCRIBE) */
	HT_OK(hl_lock_acquire(l2, 30000, NULL));
	HT_OK(hl_lock_set_owner(lw, hl_owner_id_new()));
	memset(&w, 0, sizeof w);
	w.l = lw;
	w.wait_ms = 30000;
	t = ht_thread_start(wait_thread, &w);
	HT_CHECK(ht_wait_until(shard_subscribed, ht_cluster_node(cl, from),
	                       5000));
	rep = ht_node_cmd(ht_cluster_node(cl, from), "CLIENT KILL TYPE pubsub");
	HT_CHECK(rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
	freeReplyObject(rep);
	want.c = c;
	want.n = 1;
	HT_CHECK(ht_wait_until(reconnected, &want, 5000));
	snprintf(node, sizeof node, "127.0.0.1:%d", from);
	e = wait_event(c, &ev, 0, HL_EVENT_RECONNECT, 1000);
	HT_CHECK(e != NULL);
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	HT_CHECK(ht_wait_until(shard_subscribed, ht_cluster_node(cl, from),
	                       5000));
	HT_OK(hl_lock_release(NULL, l2));
	ht_thread_join(t, 10000);
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);

	/* to another master */
	to = 0;
	for (i = 0; i < 6 && !to; i++)
		if (ht_cluster_master_of_slot(cl, i * 3000) != from)
			to = ht_cluster_master_of_slot(cl, i * 3000);
	HT_CHECK(to != 0);
	ht_cluster_move_slot(cl, slot, to);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(stats(c).failovers, 0);

	/* its replica promoted: the old master answers MOVED */
	port = ht_cluster_failover(cl, to);
	ht_note("slot %d: master %d, then %d, then (failover) %d", slot, from,
	        to, port);
	snprintf(node, sizeof node, "127.0.0.1:%d", port);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	e = wait_event(c, &ev, 0, HL_EVENT_FAILOVER, 10000);
	HT_CHECK(e != NULL);
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	HT_EQ(count(&ev, HL_EVENT_FAILOVER), 1);
	HT_EQ(stats(c).failovers, 1);

	/* that master killed: the next map has it gone, its replica (the
	 * first master) back */
	back = ht_cluster_kill_master(cl, port);
	ht_note("kill -9 of %d: master now %d", port, back);
	snprintf(node, sizeof node, "127.0.0.1:%d", back);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	drain(c, &ev);
	HT_EQ(count(&ev, HL_EVENT_FAILOVER), 2);
	for (i = 0; i < ev.n; i++)
		if (hl_event_type(ev.ev[i]) == HL_EVENT_FAILOVER)
			e = ev.ev[i];
	ht_note("%s", hl_event_message(e));
	HT_STREQ(hl_event_node(e), node);
	HT_EQ(stats(c).failovers, 2);
	HT_EQ(stats(c).reconnects, 1);
	evlist_free(&ev);
	hl_lock_free(l);
	hl_lock_free(lw);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
	ht_cluster_destroy(cl);
}

HT_MAIN(HT_CASE(counters), HT_CASE(renewals), HT_CASE(lost), HT_CASE(kinds),
        HT_CASE(renewal_failed), HT_CASE(reconnect), HT_CASE(queue_bounded),
        HT_CASE(drainer), HT_CASE(waiting), HT_CASE(bad_input),
        HT_CASE(failover_sentinel), HT_CASE(failover_cluster))
