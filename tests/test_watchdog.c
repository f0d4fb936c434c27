/*
 * The watchdog: keeps a lock taken without a lease alive past several
 * watchdog timeouts, stops renewing after release (through any handle),
 * abandon, close, or the owner thread's exit; an explicit lease is never
 * renewed. Watchdog timeout 1000 ms (renewal every ~333 ms).
 */
#include "harness.h"

#include <poll.h>

#define WD 1000

static uint64_t renewals_of(hl_client *c)
{
	hl_client_stats st;
	memset(&st, 0, sizeof(st));
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, c));
	return st.renewals;
}

/* PTTL of name stays in (0, max] for ms milliseconds; is_lost stays 0. */
static void stays_alive(ht_redis *r, hl_lock *l, const char *name, int64_t ms)
{
	int64_t t0 = ht_now_ms();
	long long pttl;
	int lost;

	while (ht_now_ms() - t0 < ms) {
		pttl = ht_pttl(r, name, strlen(name));
		HT_CHECKF(pttl > 0 && pttl <= WD,
		          "PTTL %lld after %lld ms of holding", pttl,
		          (long long)(ht_now_ms() - t0));
		lost = 7;
		HT_OK(hl_lock_is_lost(&lost, l));
		HT_EQ(lost, 0);
		ht_sleep_ms(50);
	}
}

/* The key goes away by itself within bound ms (scaled) and its PTTL never
 * exceeds max meanwhile. */
static void expires(ht_redis *r, const char *name, long long max, int64_t bound)
{
	int64_t t0 = ht_now_ms();
	long long pttl;

	for (;;) {
		pttl = ht_pttl(r, name, strlen(name));
		if (pttl == -2)
			break;
		HT_CHECKF(pttl <= max, "PTTL %lld > %lld: renewed", pttl, max);
		HT_CHECKF(ht_now_ms() - t0 < bound * ht_scale(),
		          "%s still there after %lld ms (PTTL %lld)", name,
		          (long long)(ht_now_ms() - t0), pttl);
		ht_sleep_ms(25);
	}
	ht_note("%s expired after %lld ms", name,
	        (long long)(ht_now_ms() - t0));
}

static void keeps_alive(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:alive");
	int64_t n;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_RANGE(ht_pttl(r, HT_S("wd:alive")), 1, WD);
	stays_alive(r, l, "wd:alive", 3500);
	/* every third of the timeout: about ten, and no storm */
	HT_RANGE((int64_t)renewals_of(c), 5, 25);
	HT_OK(hl_lock_hold_count(&n, l));
	HT_EQ(n, 1);
	HT_EQ(ht_hget_int(r, HT_S("wd:alive"), ht_owner(l)), 1);
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("wd:alive")), 0);
	/* nothing re-creates it */
	ht_sleep_ms(1500);
	HT_EQ(ht_exists(r, HT_S("wd:alive")), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

/* After release, the same owner takes the lock again with a fixed 1500 ms
 * lease: a watchdog entry left behind would keep renewing it. */
static void stops_after(int other_handle)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:stop");
	hl_lock *l2 = ht_lock(c, "wd:stop");
	hl_lock *rel = other_handle ? l2 : l;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	stays_alive(r, l, "wd:stop", 800);
	HT_OK(hl_lock_release(NULL, rel));
	HT_EQ(ht_exists(r, HT_S("wd:stop")), 0);
	HT_OK(hl_lock_acquire(rel, 1500, NULL));
	expires(r, "wd:stop", 1500, 1500 + 1500);
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
}

static void stops_after_release(void)
{
	stops_after(0);
}

static void stops_after_release_other_handle(void)
{
	stops_after(1);
}

static void reentrant(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:reentrant");
	int released = 7;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	stays_alive(r, l, "wd:reentrant", 3500);
	HT_EQ(ht_hget_int(r, HT_S("wd:reentrant"), ht_owner(l)), 1);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	ht_sleep_ms(1000);
	HT_EQ(ht_exists(r, HT_S("wd:reentrant")), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

static void lease_expires(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:lease");
	int held = 7;
	int64_t t0;
	long long pttl;

	HT_OK(hl_lock_acquire(l, 500, NULL));
	HT_RANGE(ht_pttl(r, HT_S("wd:lease")), 1, 500);
	expires(r, "wd:lease", 500, 1000);
	ht_sleep_ms(700);
	HT_EQ(ht_exists(r, HT_S("wd:lease")), 0);
	HT_OK(hl_lock_is_held(&held, l));
	HT_EQ(held, 0);
	/* its own lease ended it: lost, and only then not held */
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD);

	/* a lease longer than the watchdog timeout is not cut to it either */
	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(l, 2500, NULL));
	ht_sleep_ms(1500);
	pttl = ht_pttl(r, HT_S("wd:lease"));
	if (ht_now_ms() - t0 < 2300)
		HT_RANGE(pttl, 1, 1000);
	expires(r, "wd:lease", 1000, 1000 + 1000);
	hl_lock_free(l);
	hl_client_free(c);
}

static void abandon(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:abandon");

	HT_OK(hl_lock_abandon(l)); /* nothing to stop */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	stays_alive(r, l, "wd:abandon", 700);
	HT_OK(hl_lock_abandon(l));
	/* not released: the lease runs out */
	HT_EQ(ht_hget_int(r, HT_S("wd:abandon"), ht_owner(l)), 1);
	expires(r, "wd:abandon", WD, WD + 1000);
	HT_OK(hl_lock_abandon(l));
	HT_RC(hl_lock_abandon(NULL), HL_EINVAL);

	/* abandoning does not give the hold away: it can still be released
	 * while its lease lasts */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_abandon(l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("wd:abandon")), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

/* An owner thread that exits holding the lock is no longer renewed. */
static void *hold_and_exit(void *arg)
{
	hl_lock *l = arg;
	if (hl_lock_acquire(l, -1, NULL) != HL_OK)
		return (void *)1;
	return NULL;
}

static void dead_thread(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:deadthread");
	pthread_t t = ht_thread_start(hold_and_exit, l);
	void *res = (void *)2;

	HT_CHECK(pthread_join(t, &res) == 0);
	HT_CHECK(res == NULL);
	HT_EQ(ht_hlen(r, HT_S("wd:deadthread")), 1);
	expires(r, "wd:deadthread", WD, WD + 2000);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Closing the client stops renewal without unlocking. */
static void close_stops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:close");

	HT_OK(hl_lock_acquire(l, -1, NULL));
	stays_alive(r, l, "wd:close", 700);
	hl_client_close(c);
	HT_EQ(ht_hlen(r, HT_S("wd:close")), 1);
	expires(r, "wd:close", WD, WD + 1000);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Many locks renewed together (batched): all stay alive; the ones deleted
 * behind the client's back are found lost, the others are not. */
#define MANY 250
static void many_locks(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l[MANY];
	char name[64];
	int i, lost;
	int64_t t0;

	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof name, "wd:many:%d", i);
		l[i] = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l[i], -1, NULL));
	}
	t0 = ht_now_ms();
	while (ht_now_ms() - t0 < 2500) {
		for (i = 0; i < MANY; i += 7) {
			snprintf(name, sizeof name, "wd:many:%d", i);
			HT_CHECKF(ht_pttl(r, HT_S(name)) > 0,
			          "%s expired after %lld ms", name,
			          (long long)(ht_now_ms() - t0));
		}
		ht_sleep_ms(100);
	}
	for (i = 0; i < MANY; i += 2) {
		snprintf(name, sizeof name, "wd:many:%d", i);
		ht_del(r, HT_S(name));
	}
	for (i = 0; i < MANY; i += 2) {
		lost = 0;
		HT_OK(hl_lock_wait_lost(&lost, l[i], 5000 * ht_scale(), NULL));
		HT_EQ(lost, 1);
	}
	for (i = 1; i < MANY; i += 2) {
		snprintf(name, sizeof name, "wd:many:%d", i);
		lost = 7;
		HT_OK(hl_lock_is_lost(&lost, l[i]));
		HT_EQ(lost, 0);
		HT_CHECK(ht_pttl(r, HT_S(name)) > 0);
	}
	for (i = 0; i < MANY; i++) {
		HT_RC(hl_lock_release(NULL, l[i]), i % 2 ? HL_OK : HL_ELOST);
		hl_lock_free(l[i]);
	}
	hl_client_free(c);
}

/* An explicit owner acquires on one thread and releases on another: the
 * renewal stops all the same. */
static void *release_other_thread(void *arg)
{
	return (void *)(intptr_t)hl_lock_release(NULL, arg);
}

static void stops_after_release_other_thread(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "wd:stop-thread");
	void *res = (void *)1;

	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	stays_alive(r, l, "wd:stop-thread", 800);
	HT_CHECK(pthread_join(ht_thread_start(release_other_thread, l), &res) ==
	         0);
	HT_EQ((intptr_t)res, HL_OK);
	HT_EQ(ht_exists(r, HT_S("wd:stop-thread")), 0);
	HT_OK(hl_lock_acquire(l, 1500, NULL));
	expires(r, "wd:stop-thread", 1500, 1500 + 1500);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Re-entries and partial releases racing the watchdog's renewals: a
 * renewal in flight while the count changes must still leave the hold
 * scheduled. A short timeout makes renewals frequent; the base hold must
 * survive all along (it would expire if one renewal were dropped). */
static void renewals_race_reentry(void)
{
	ht_redis *r = ht_redis_default();
	/* Short, for many renewals to race; long enough that a loaded
	 * machine does not delay a renewal past the loss deadline (a tenth
	 * of the timeout before the lease ends). */
	const int64_t wd = 600 * ht_scale();
	hl_client *c = ht_client(r, wd);
	hl_lock *l = ht_lock(c, "wd:race");
	int64_t end, n = 0;
	int released = 7, lost = 7;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	end = ht_now_ms() + 2500;
	while (ht_now_ms() < end) {
		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 0);
		if (++n % 16 == 0)
			HT_EQ(ht_hget_int(r, HT_S("wd:race"), ht_owner(l)), 1);
	}
	/* idle for several timeouts: only the watchdog keeps it */
	ht_sleep_ms(4 * wd);
	HT_EQ(ht_hget_int(r, HT_S("wd:race"), ht_owner(l)), 1);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	ht_note("%lld re-entries raced the renewals", (long long)n);
	hl_lock_free(l);
	hl_client_free(c);
}

/* issue 18 (2c): a slow network is not a lost lock. With a 3 s watchdog,
 * the holder's path gets 500 ms of delay each way (round trips of 1 s),
 * then 1 s (round trips of 2 s, under the 3 s command timeout). A renewal
 * that waited for the one before it would be confirmed too late: renewals
 * must keep flowing while replies are slow, and the hold must stay alive
 * and owned for many watchdog timeouts. (A round trip that jumps at once
 * from fast to 2 s cannot be ridden out: the renewal after the last fast
 * one goes a third of the timeout later, and its reply would come after
 * the loss deadline; so the delay grows in two steps, as a network that
 * slows down does.) Then the path goes black: the clock must tell the
 * loss before the lease ends in Redis, although renewals are in flight. */
/* For ms: the key lives, is this owner's, nobody else can take it, and
 * the holder is not told it lost it. */
static void held_throughout(ht_redis *r, hl_lock *l, hl_lock *l2, int fd,
                            int64_t ms)
{
	int64_t t0 = ht_now_ms(), last_try = 0;
	int lost = 7, acquired = 0;
	long long pttl;
	while (ht_now_ms() - t0 < ms) {
		struct pollfd pf = {fd, POLLIN, 0};
		pttl = ht_pttl(r, HT_S("wd:slow"));
		HT_CHECKF(pttl > 0,
		          "the key lapsed after %lld ms of a slow network "
		          "(PTTL %lld)",
		          (long long)(ht_now_ms() - t0), pttl);
		HT_CHECKF(poll(&pf, 1, 0) == 0,
		          "declared lost after %lld ms of a slow network",
		          (long long)(ht_now_ms() - t0));
		HT_OK(hl_lock_is_lost(&lost, l));
		HT_EQ(lost, 0);
		HT_EQ(ht_hget_int(r, HT_S("wd:slow"), ht_owner(l)), 1);
		if (ht_now_ms() - last_try >= 1000) {
			HT_OK(hl_lock_try_acquire(&acquired, l2, 0, 5000,
			                          NULL));
			HT_EQ(acquired, 0);
			last_try = ht_now_ms();
		}
		ht_sleep_ms(100);
	}
}

static void slow_network(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	const int64_t SLOW_WD = 3000, HOLD = 9000;
	hl_client_options o;
	hl_client *c, *c2;
	hl_lock *l, *l2;
	int fd = -1, lost = 7, acquired = 0;
	int64_t t0, took;
	uint64_t renewed;
	long long pttl;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = SLOW_WD;
	o.command_timeout_ms = 3000;
	c = ht_client_url(p->url, &o);
	l = ht_lock(c, "wd:slow");
	c2 = ht_client(r, 0);
	l2 = ht_lock(c2, "wd:slow");

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	/* the watchdog's connection is made by its first renewal */
	t0 = ht_now_ms();
	while (renewals_of(c) < 1) {
		HT_CHECKF(ht_now_ms() - t0 < 5000 * ht_scale(),
		          "no renewal within %lld ms",
		          (long long)(ht_now_ms() - t0));
		ht_sleep_ms(20);
	}
	ht_proxy_cmd(p, "delay 500");
	held_throughout(r, l, l2, fd, 3000);
	ht_proxy_cmd(p, "delay 1000");
	renewed = renewals_of(c);
	held_throughout(r, l, l2, fd, HOLD);
	ht_note("%llu renewals confirmed in %lld ms of 2 s round trips",
	        (unsigned long long)(renewals_of(c) - renewed),
	        (long long)HOLD);
	/* renewed every 300 ms (a tenth of the timeout, while replies are
	 * slow), each confirmed 2 s after it was sent: not a storm either */
	HT_CHECKF(renewals_of(c) - renewed >= 4 &&
	                  renewals_of(c) - renewed <=
	                          (uint64_t)(3 * HOLD / 300),
	          "%llu renewals in %lld ms",
	          (unsigned long long)(renewals_of(c) - renewed),
	          (long long)HOLD);

	/* Now nothing comes back: the clock tells the loss while Redis still
	 * has the key, so nobody else could have taken it yet. */
	ht_proxy_cmd(p, "blackhole on");
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost(&lost, l, 10000, NULL));
	took = ht_now_ms() - t0;
	pttl = ht_pttl(r, HT_S("wd:slow"));
	ht_note("lost %lld ms after the black hole, %lld ms of lease left",
	        (long long)took, pttl);
	HT_EQ(lost, 1);
	HT_CHECKF(pttl > 0, "told after the lease ended (pttl %lld)", pttl);
	{
		struct pollfd pf = {fd, POLLIN, 0};
		HT_EQ(poll(&pf, 1, 0), 1);
	}
	HT_OK(hl_lock_try_acquire(&acquired, l2, 0, 5000, NULL));
	HT_EQ(acquired, 0);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	/* the lease then ends in Redis and another client takes it */
	HT_OK(hl_lock_try_acquire(&acquired, l2, 3 * SLOW_WD, 5000, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l2));
	ht_proxy_cmd(p, "blackhole off");
	hl_lock_free(l2);
	hl_client_free(c2);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

HT_MAIN(HT_CASE(keeps_alive), HT_CASE(stops_after_release),
        HT_CASE(stops_after_release_other_handle), HT_CASE(reentrant),
        HT_CASE(lease_expires), HT_CASE(abandon), HT_CASE(dead_thread),
        HT_CASE(close_stops), HT_CASE(many_locks),
        HT_CASE(stops_after_release_other_thread),
        HT_CASE(renewals_race_reentry), HT_CASE(slow_network))
