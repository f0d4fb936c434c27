/*
 * A waiter wakes on unlock, through pub/sub, without polling: the holder's
 * lock has a 30 s TTL (watchdog), so only the unlock message can wake the
 * waiter within the bounds below.
 */
#include "harness.h"

#include <stdatomic.h>

#define CHANNEL "redisson_lock__channel:{wake:lock}"

struct waiter {
	hl_lock *l;
	int rc, acquired, hold_ms;
	atomic_int done;
	atomic_int *inside, *overlap;
	int64_t t_acquired;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = hl_lock_try_acquire(&w->acquired, w->l, 20000, -1, NULL);
	w->t_acquired = ht_now_ms();
	if (w->rc == HL_OK && w->acquired) {
		if (w->inside && atomic_fetch_add(w->inside, 1) != 0)
			atomic_store(w->overlap, 1);
		ht_sleep_ms(w->hold_ms);
		if (w->inside)
			atomic_fetch_sub(w->inside, 1);
		if (hl_lock_release(NULL, w->l) != HL_OK)
			w->rc = -100;
	}
	atomic_store(&w->done, 1);
	return NULL;
}

struct sub_arg {
	ht_redis *r;
	long long n;
};

static int subscribed(void *arg)
{
	struct sub_arg *a = arg;
	return ht_numsub(a->r, HT_S(CHANNEL)) >= a->n;
}

static void wait_subscribed(ht_redis *r, long long n)
{
	struct sub_arg a;

	a.r = r;
	a.n = n;
	HT_CHECKF(ht_wait_until(subscribed, &a, 5000),
	          "waiters never subscribed to %s (%lld of %lld)", CHANNEL,
	          ht_numsub(r, HT_S(CHANNEL)), n);
}

/* The default lock's line: clients waiting in it (each client has one
 * place, whichever of its threads waits). */
static long long lined(ht_redis *r)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "ZCARD hilock_line:{wake:lock}");
	long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
	freeReplyObject(rep);
	return n;
}

static int lined_2(void *arg)
{
	return lined(arg) == 2;
}

/* Holder on hc, one waiter on wc (maybe the same client); returns the
 * wake-up delay. How the lock is freed: 0 release, 1 force unlock. */
static int64_t one_waiter(hl_client *hc, hl_client *wc, int how,
                          int measure_polling)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h = ht_lock(hc, "wake:lock");
	struct waiter w;
	pthread_t t;
	int64_t t_release;
	int existed;

	memset(&w, 0, sizeof w);
	w.l = ht_lock(wc, "wake:lock");
	HT_OK(hl_lock_acquire(h, -1, NULL));
	HT_RANGE(ht_pttl(r, HT_S("wake:lock")), 20000, 30000);
	t = ht_thread_start(wait_thread, &w);
	wait_subscribed(r, 1);
	if (measure_polling) {
		/* The waiter renews its place in the line every 1.5 s (a
		 * script), and sends nothing else: in 3.2 s, at most 3 scripts
		 * (2 renewals and one early by the load), where polling would
		 * send dozens. */
		long long before = ht_cmd_calls(r, "evalsha"), after;
		ht_sleep_ms(3200);
		after = ht_cmd_calls(r, "evalsha");
		ht_note("%lld scripts in 3.2 s of waiting", after - before);
		HT_CHECKF(after - before <= 3,
		          "%lld scripts while a waiter waited 3.2 s: polling?",
		          after - before);
		HT_CHECKF(after - before >= 1,
		          "no script in 3.2 s: the waiter's place in the line "
		          "was not renewed");
	} else {
		ht_wait_waiting(wc, 1);
	}
	HT_EQ(atomic_load(&w.done), 0); /* still waiting */
	t_release = ht_now_ms();
	if (how == 0) {
		HT_OK(hl_lock_release(NULL, h));
	} else {
		hl_client *third = ht_client(r, 0);
		hl_lock *f = ht_lock(third, "wake:lock");
		HT_OK(hl_lock_force_unlock(&existed, f));
		HT_EQ(existed, 1);
		hl_lock_free(f);
		hl_client_free(third);
	}
	ht_thread_join(t, 25000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	HT_EQ(ht_exists(r, HT_S("wake:lock")), 0);
	hl_lock_free(h);
	hl_lock_free(w.l);
	return w.t_acquired - t_release;
}

static void check_delay(int64_t dt)
{
	ht_note("waiter acquired %lld ms after the unlock", (long long)dt);
	HT_RANGE(dt, 0, 2000 * ht_scale());
}

static void same_client(void)
{
	hl_client *c = ht_client(ht_redis_default(), 0);
	check_delay(one_waiter(c, c, 0, 0));
	hl_client_free(c);
}

static void other_client(void)
{
	hl_client *c = ht_client(ht_redis_default(), 0);
	hl_client *c2 = ht_client(ht_redis_default(), 0);
	check_delay(one_waiter(c, c2, 0, 0));
	hl_client_free(c);
	hl_client_free(c2);
}

static void no_polling(void)
{
	hl_client *c = ht_client(ht_redis_default(), 0);
	hl_client *c2 = ht_client(ht_redis_default(), 0);
	check_delay(one_waiter(c, c2, 0, 1));
	hl_client_free(c);
	hl_client_free(c2);
}

static void force_unlock(void)
{
	hl_client *c = ht_client(ht_redis_default(), 0);
	hl_client *c2 = ht_client(ht_redis_default(), 0);
	check_delay(one_waiter(c, c2, 1, 0));
	hl_client_free(c);
	hl_client_free(c2);
}

/* Three waiters (two threads of one client, one of another) all get the
 * lock in turn, one at a time, soon after the holder releases. */
static void several_waiters(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0);
	hl_client *c2 = ht_client(r, 0), *c3 = ht_client(r, 0);
	hl_lock *h = ht_lock(hc, "wake:lock");
	struct waiter w[3];
	pthread_t t[3];
	atomic_int inside = 0, overlap = 0;
	int64_t t_release;
	int i;

	HT_OK(hl_lock_acquire(h, -1, NULL));
	for (i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].l = ht_lock(i < 2 ? c2 : c3, "wake:lock");
		w[i].hold_ms = 50;
		w[i].inside = &inside;
		w[i].overlap = &overlap;
		t[i] = ht_thread_start(wait_thread, &w[i]);
	}
	/* two clients in line; only the first of them listens to the lock
	 * channel, the other to its place's own */
	HT_CHECKF(ht_wait_until(lined_2, r, 5000),
	          "waiters never lined up (%lld in line)", lined(r));
	wait_subscribed(r, 1);
	ht_wait_waiting(c2, 2);
	ht_wait_waiting(c3, 1);
	for (i = 0; i < 3; i++)
		HT_EQ(atomic_load(&w[i].done), 0);
	t_release = ht_now_ms();
	HT_OK(hl_lock_release(NULL, h));
	for (i = 0; i < 3; i++)
		ht_thread_join(t[i], 25000);
	for (i = 0; i < 3; i++) {
		HT_OK(w[i].rc);
		HT_EQ(w[i].acquired, 1);
		HT_RANGE(w[i].t_acquired - t_release, 0, 3000 * ht_scale());
	}
	HT_EQ(atomic_load(&overlap), 0);
	HT_EQ(ht_exists(r, HT_S("wake:lock")), 0);
	for (i = 0; i < 3; i++)
		hl_lock_free(w[i].l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c2);
	hl_client_free(c3);
}

/* A lock held by a foreign owner (another Redisson-compatible process,
 * simulated with raw commands) and released the Redisson way (DEL +
 * PUBLISH "0"): the waiter wakes on the message. */
static void external_unlock(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	struct waiter w;
	pthread_t t;
	int64_t t_release;

	freeReplyObject(ht_raw(
	        ht_raw_of(r),
	        "HSET wake:lock 11111111-2222-3333-4444-555555555555:1 1"));
	freeReplyObject(ht_raw(ht_raw_of(r), "PEXPIRE wake:lock 30000"));
	memset(&w, 0, sizeof w);
	w.l = ht_lock(c, "wake:lock");
	t = ht_thread_start(wait_thread, &w);
	wait_subscribed(r, 1);
	ht_wait_waiting(c, 1);
	HT_EQ(atomic_load(&w.done), 0);
	t_release = ht_now_ms();
	freeReplyObject(ht_raw(ht_raw_of(r), "DEL wake:lock"));
	freeReplyObject(ht_raw(ht_raw_of(r), "PUBLISH %s 0", CHANNEL));
	ht_thread_join(t, 25000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	check_delay(w.t_acquired - t_release);
	hl_lock_free(w.l);
	hl_client_free(c);
}

/* A holder that releases and at once acquires again must not starve a
 * waiter of another client (another process, as far as Redis can tell):
 * its unlock reached a subscriber that is not its own, so it holds back
 * for about two round trips and the woken waiter gets the lock. Without
 * that, the releaser wins every race (its acquire needs one round trip,
 * the waiter's a delivery plus one). */
static void handoff_across_clients(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *wc = ht_client(r, 0);
	hl_lock *hl = ht_lock(hc, "wake:lock"), *wl = ht_lock(wc, "wake:lock");
	struct waiter w = {0};
	pthread_t t;
	int64_t start, end, rounds = 0;

	HT_OK(hl_lock_acquire(hl, -1, NULL));
	w.l = wl;
	atomic_init(&w.done, 0);
	t = ht_thread_start(wait_thread, &w);
	wait_subscribed(r, 1);
	start = ht_now_ms();
	end = start + 3000 * ht_scale();
	/* release, re-acquire at once, hold 1 ms: a busy worker loop */
	while (!atomic_load(&w.done) && w.t_acquired == 0 &&
	       ht_now_ms() < end) {
		HT_OK(hl_lock_release(NULL, hl));
		HT_OK(hl_lock_acquire(hl, -1, NULL));
		rounds++;
		ht_sleep_ms(1);
	}
	HT_OK(hl_lock_release(NULL, hl));
	ht_thread_join(t, 30000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	ht_note("the waiter got the lock after %lld ms, %lld re-acquires",
	        (long long)(w.t_acquired - start), (long long)rounds);
	/* a few handoffs at most, not the whole loop */
	HT_CHECKF(w.t_acquired - start < 1000 * ht_scale(),
	          "the waiter starved for %lld ms",
	          (long long)(w.t_acquired - start));
	hl_lock_free(hl);
	hl_lock_free(wl);
	hl_client_free(hc);
	hl_client_free(wc);
}

static long long connections_received(ht_redis *r)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "INFO stats");
	const char *p = strstr(rep->str, "total_connections_received:");
	long long v = p ? atoll(p + 27) : -1;
	freeReplyObject(rep);
	HT_CHECK(v >= 0);
	return v;
}

static int unsubscribed(void *arg)
{
	return ht_numsub(arg, HT_S(CHANNEL)) == 0;
}

/* No channel subscribed by anyone (PUBSUB CHANNELS is empty). */
static int unsubscribed_all(void *arg)
{
	redisReply *rep = ht_raw(ht_raw_of(arg), "PUBSUB CHANNELS");
	int none = rep->type == REDIS_REPLY_ARRAY && rep->elements == 0;
	freeReplyObject(rep);
	return none;
}

/* The server's SUBSCRIBE confirmation is taken as one (a plain
 * "subscribe" is not a sharded "ssubscribe"): the subscriber connection
 * lives through a wait far longer than subscription_timeout_ms, and a
 * subscription nobody waits on any more is undone. */
static void subscription_confirmed(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c, *holder = ht_client(r, 0);
	hl_lock *l, *h = ht_lock(holder, "wake:lock");
	long long before;
	int acquired = 7;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.subscription_timeout_ms = 300;
	c = ht_client_url(r->url, &o);
	l = ht_lock(c, "wake:lock");
	HT_OK(hl_lock_acquire(h, -1, NULL));
	HT_OK(hl_lock_try_acquire(&acquired, l, 100, -1, NULL)); /* warm */
	before = connections_received(r);
	HT_OK(hl_lock_try_acquire(&acquired, l, 2500, -1, NULL));
	HT_EQ(acquired, 0);
	/* a subscriber connection made anew each 300 ms would show here */
	HT_RANGE(connections_received(r) - before, 0, 1);
	HT_CHECKF(ht_wait_until(unsubscribed, r, 3000),
	          "still subscribed to %s after the waiter left", CHANNEL);
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(c);
	hl_client_free(holder);
}

/* The unlock message goes out while the waiter's client is still making
 * its subscription (a fresh client: its subscriber connection is made on
 * demand), so the message is lost; the waiter must try again as soon as
 * Redis confirms the subscription, not sleep on the holder's 30 s TTL
 * (it once slept until the subscription timeout, 7.5 s, about one round
 * in ten). The release comes 0 to 1.95 ms after the waiter starts,
 * around the time its client connects its subscriber. */
static void release_while_subscribing(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0);
	int64_t worst = 0;
	int i;

	for (i = 0; i < 40; i++) {
		hl_client *wc = ht_client(r, 0);
		hl_lock *h = ht_lock(hc, "wake:lock");
		struct waiter w = {0};
		struct timespec nap = {0, 0};
		pthread_t t;
		int64_t t_release;

		HT_OK(hl_lock_acquire(h, -1, NULL));
		w.l = ht_lock(wc, "wake:lock");
		atomic_init(&w.done, 0);
		t = ht_thread_start(wait_thread, &w);
		nap.tv_nsec = (long)i * 50000L;
		nanosleep(&nap, NULL);
		t_release = ht_now_ms();
		HT_OK(hl_lock_release(NULL, h));
		ht_thread_join(t, 25000);
		HT_OK(w.rc);
		HT_EQ(w.acquired, 1);
		HT_CHECKF(w.t_acquired - t_release < 2000 * ht_scale(),
		          "round %d: the waiter got the lock %lld ms after "
		          "the release",
		          i, (long long)(w.t_acquired - t_release));
		if (w.t_acquired - t_release > worst)
			worst = w.t_acquired - t_release;
		hl_lock_free(h);
		hl_lock_free(w.l);
		hl_client_free(wc);
	}
	ht_note("40 rounds, the slowest waiter got the lock %lld ms after "
	        "the release",
	        (long long)worst);
	hl_client_free(hc);
}

struct reacquire {
	hl_lock *l;
	int rc, acquired, again;
};

/* Wait for the lock, release it, and at once try again without waiting. */
static void *reacquire_thread(void *arg)
{
	struct reacquire *w = arg;

	w->rc = hl_lock_try_acquire(&w->acquired, w->l, 20000, -1, NULL);
	if (w->rc != HL_OK || !w->acquired)
		return NULL;
	if ((w->rc = hl_lock_release(NULL, w->l)) != HL_OK)
		return NULL;
	w->rc = hl_lock_try_acquire(&w->again, w->l, 0, -1, NULL);
	if (w->rc == HL_OK && w->again)
		w->rc = hl_lock_release(NULL, w->l);
	return NULL;
}

/* A waiter that got the lock releases it and at once tries again (wait
 * 0) while nobody else waits: it must get it. Its release's unlock
 * message may still reach its own subscription (the UNSUBSCRIBE sent when
 * its wait ended can run after it), and the hand-off hold-back must not
 * count that as a waiter elsewhere, even when the UNSUBSCRIBE's
 * confirmation arrives before the release's reply (then it refused the
 * lock in about 4 rounds of 10). */
static void reacquire_after_wait(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *wc = ht_client(r, 0);
	hl_lock *h = ht_lock(hc, "wake:lock");
	int i, refused = 0;

	for (i = 0; i < 100; i++) {
		struct reacquire w = {0};
		pthread_t t;

		HT_OK(hl_lock_acquire(h, -1, NULL));
		w.l = ht_lock(wc, "wake:lock");
		t = ht_thread_start(reacquire_thread, &w);
		/* (not the subscriber count: the waiter's subscription of
		 * the round before may still linger) */
		ht_wait_waiting(wc, 1);
		HT_OK(hl_lock_release(NULL, h));
		ht_thread_join(t, 25000);
		HT_OK(w.rc);
		HT_EQ(w.acquired, 1);
		refused += !w.again;
		hl_lock_free(w.l);
	}
	HT_CHECKF(refused == 0,
	          "%d of 100 immediate re-acquires refused with nobody "
	          "waiting",
	          refused);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(wc);
}

/* One wait on kind's lock on wc while hc holds it: the waiter waits (the
 * gauge says so), the release wakes it, it gets the lock and gives it
 * back. */
static void wait_once(hl_client *hc, hl_client *wc, int kind, uint64_t owner)
{
	hl_lock *h, *l;
	struct waiter w;
	pthread_t t;

	HT_OK(hl_lock_new_kind(&h, hc, kind, HT_S("wake:lock")));
	HT_OK(hl_lock_new_kind(&l, wc, kind, HT_S("wake:lock")));
	/* one owner for every wait (a fair lock's waiter waits on a channel
	 * of its owner's) */
	HT_OK(hl_lock_set_owner(l, owner));
	memset(&w, 0, sizeof w);
	w.l = l;
	HT_OK(hl_lock_acquire(h, -1, NULL));
	t = ht_thread_start(wait_thread, &w);
	ht_wait_waiting(wc, 1);
	HT_EQ(atomic_load(&w.done), 0);
	HT_OK(hl_lock_release(NULL, h));
	ht_thread_join(t, 25000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	hl_lock_free(l);
	hl_lock_free(h);
}

static int lock_channel_free(void *arg)
{
	return ht_numsub(arg, HT_S(CHANNEL)) == 0;
}

static int unsub_one_more(void *arg)
{
	return ht_cmd_calls(ht_redis_default(), "unsubscribe") ==
	       *(long long *)arg + 1;
}

/* A subscription nobody waits on any more lingers for a while, so that a
 * client that waits again soon (a fair lock's waiter waits on a channel of
 * its own at every turn) needs no SUBSCRIBE and no UNSUBSCRIBE; and a wait
 * (of the same owner: a fair lock's waiter waits on a channel of its
 * owner's) whose attempt found the lock taken after that subscription was
 * active, with no message since, does not attempt again before a message: a
 * contended acquisition costs the waiter two scripts (the attempt that
 * found it taken and the one that got it). It is undone once it has
 * lingered (here within 5 s). */
static void lingering_subscription(void)
{
	static const int kinds[] = {HL_LOCK_REENTRANT, HL_LOCK_FAIR};
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *wc = ht_client(r, 0);
	uint64_t owner = hl_owner_id_new();
	size_t i;

	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		long long ev, sub, unsub;
		wait_once(hc, wc, kinds[i], owner); /* subscribes */
		HT_CHECKF(ht_wait_until(lock_channel_free, r, 5000),
		          "the lock channel still subscribed after the wait");
		ev = ht_cmd_calls(r, "evalsha");
		sub = ht_cmd_calls(r, "subscribe");
		unsub = ht_cmd_calls(r, "unsubscribe");
		wait_once(hc, wc, kinds[i], owner);
		if (kinds[i] == HL_LOCK_REENTRANT) {
			/* its place's channel lingers; as first in line it
			 * listens to the lock channel too (Redisson's
			 * releases) while it waits, and no longer: one
			 * SUBSCRIBE and one UNSUBSCRIBE of that one */
			HT_EQ(ht_cmd_calls(r, "subscribe") - sub, 1);
			HT_CHECKF(ht_wait_until(unsub_one_more, &unsub, 5000),
			          "the lock channel still subscribed after "
			          "the wait");
		} else {
			HT_EQ(ht_cmd_calls(r, "subscribe") - sub, 0);
			HT_EQ(ht_cmd_calls(r, "unsubscribe") - unsub, 0);
		}
		/* the holder's acquire and release, the waiter's attempt,
		 * acquire and release; on a machine so loaded that the
		 * release crosses the waiter's first attempt, one attempt
		 * more (seen once with the suites running two at a time) */
		HT_RANGE(ht_cmd_calls(r, "evalsha") - ev, 5, 6);
		HT_CHECKF(ht_wait_until(unsubscribed_all, r, 5000),
		          "a subscription still there 5 s after its waiter "
		          "left");
	}
	hl_client_free(hc);
	hl_client_free(wc);
}

static uint64_t read_by_waiter(hl_client *c)
{
	hl_client_stats st;
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, c));
	return st.wakeups_read_by_waiter;
}

/* A blocking waiter reads the message that wakes it from the subscriber
 * connection itself, so the hand-off costs no hop through the subscriber
 * thread (message -> subscriber thread -> waiter): for the default lock
 * (its first in line hears the release) and for the fair lock (its
 * waiter's own channel), each wait counts at least one such read. Fails
 * where the subscriber thread reads every message (the count stays 0). */
static void waiter_reads_wakeup(void)
{
	static const int kinds[] = {HL_LOCK_REENTRANT, HL_LOCK_FAIR};
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *wc = ht_client(r, 0);
	size_t i;

	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		uint64_t before = read_by_waiter(wc), after = before;
		int tries;
		/* The release can come before the waiter has taken the lead
		 * (it is counted waiting a moment before it polls the
		 * socket; under TSan that moment is long), and then the
		 * subscriber thread rightly reads it: up to five waits, of
		 * which one must be read by the waiter. */
		for (tries = 1; tries <= 5 && after == before; tries++) {
			wait_once(hc, wc, kinds[i], hl_owner_id_new());
			after = read_by_waiter(wc);
		}
		ht_note("kind %d: %llu reads by the waiter in %d waits",
		        kinds[i], (unsigned long long)(after - before),
		        tries - 1);
		HT_CHECKF(after > before,
		          "kind %d: the waiter read nothing itself in 5 "
		          "waits: the subscriber thread woke it each time",
		          kinds[i]);
	}
	HT_EQ(read_by_waiter(hc), 0); /* it never waited */
	{
		/* a version 2 struct is not written past its end */
		hl_client_stats st;
		memset(&st, 0x5a, sizeof st);
		st.version = 2;
		HT_OK(hl_client_stats_get(&st, wc));
		HT_EQ(st.waiting, 0);
		HT_EQ(st.wakeups_read_by_waiter, 0x5a5a5a5a5a5a5a5aULL);
	}
	hl_client_free(hc);
	hl_client_free(wc);
}

HT_MAIN(HT_CASE(lingering_subscription), HT_CASE(waiter_reads_wakeup),
        HT_CASE(handoff_across_clients), HT_CASE(same_client),
        HT_CASE(subscription_confirmed), HT_CASE(other_client),
        HT_CASE(no_polling), HT_CASE(force_unlock), HT_CASE(several_waiters),
        HT_CASE(external_unlock), HT_CASE(release_while_subscribing),
        HT_CASE(reacquire_after_wait))
