/*
 * Redis restarted under the client: nothing persists (--save ""), so locks
 * vanish; a waiter must wake up and take the lock instead of sleeping out
 * the old TTL, and the client must reconnect for later calls.
 */
#include "harness.h"

#define CHANNEL "redisson_lock__channel:{restart:lock}"

struct waiter {
	hl_lock *l;
	int rc, acquired, release_rc;
	int64_t t_acquired;
	char owner[128];
};

/* Waits for the lock, notes its owner string, releases it. */
static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = hl_lock_try_acquire(&w->acquired, w->l, 25000, -1, NULL);
	w->t_acquired = ht_now_ms();
	snprintf(w->owner, sizeof w->owner, "%s", ht_owner(w->l));
	w->release_rc = -100;
	if (w->rc == HL_OK && w->acquired)
		w->release_rc = hl_lock_release(NULL, w->l);
	return NULL;
}

struct sub_arg {
	ht_redis *r;
	const char *ch;
};

static int subscribed(void *arg)
{
	struct sub_arg *a = arg;
	return ht_numsub(a->r, a->ch, strlen(a->ch)) >= 1;
}

static void wait_subscribed(ht_redis *r, const char *ch)
{
	struct sub_arg a;
	a.r = r;
	a.ch = ch;
	HT_CHECKF(ht_wait_until(subscribed, &a, 5000), "no subscriber on %s",
	          ch);
}

static hl_client *fast_client(ht_redis *r)
{
	hl_client_options o;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.retry_delay_ms = 200;
	o.connect_timeout_ms = 2000;
	return ht_client_url(r->url, &o);
}

/* Retry a query until the client has reconnected. */
static void until_reconnected(hl_lock *l)
{
	int64_t deadline = ht_now_ms() + 10000 * ht_scale();
	int v, rc;

	for (;;) {
		rc = hl_lock_is_locked(&v, l);
		if (rc == HL_OK)
			return;
		HT_CHECKF(rc == HL_EIO || rc == HL_ECONNECT,
		          "is_locked after restart: %s: %s", hl_status_name(rc),
		          hl_error_last());
		HT_CHECKF(ht_now_ms() < deadline,
		          "client did not reconnect: %s: %s",
		          hl_status_name(rc), hl_error_last());
		ht_sleep_ms(100);
	}
}

static void waiter(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0); /* 30 s watchdog */
	hl_client *b = fast_client(r);
	hl_lock *h = ht_lock(a, "restart:lock");
	struct waiter w;
	pthread_t t;
	int64_t t_restart, dt;
	int rc;

	memset(&w, 0, sizeof w);
	w.l = ht_lock(b, "restart:lock");
	HT_OK(hl_lock_acquire(h, -1, NULL));
	t = ht_thread_start(wait_thread, &w);
	wait_subscribed(r, CHANNEL);
	ht_sleep_ms(200);

	ht_redis_restart(r);
	t_restart = ht_now_ms();
	ht_thread_join(t, 30000);
	HT_OK(w.rc);
	HT_CHECKF(w.acquired == 1, "waiter slept through the restart");
	dt = w.t_acquired - t_restart;
	ht_note("waiter acquired %lld ms after the restart", (long long)dt);
	HT_RANGE(dt, 0, 10000 * ht_scale());
	HT_OK(w.release_rc);
	HT_EQ(ht_exists(r, HT_S("restart:lock")), 0);

	/* the old holder's hold is gone; its client works again */
	rc = hl_lock_release(NULL, h);
	HT_CHECKF(rc == HL_ELOST || rc == HL_ENOTHELD || rc == HL_EIO,
	          "old holder release: %s", hl_status_name(rc));
	until_reconnected(h);
	HT_OK(hl_lock_acquire(h, 5000, NULL));
	HT_EQ(ht_hget_int(r, HT_S("restart:lock"), ht_owner(h)), 1);
	HT_OK(hl_lock_release(NULL, h));

	hl_lock_free(h);
	hl_lock_free(w.l);
	hl_client_free(a);
	hl_client_free(b);
}

/* An idle client survives a restart: commands and wake-ups work again. */
static void idle(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = fast_client(r), *c2 = fast_client(r);
	hl_lock *l = ht_lock(c, "restart:lock");
	hl_lock *h = ht_lock(c2, "restart:lock");
	struct waiter w;
	pthread_t t;
	int64_t t_release;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	ht_redis_restart(r);

	until_reconnected(l);
	until_reconnected(h);
	HT_OK(hl_lock_acquire(h, -1, NULL));
	memset(&w, 0, sizeof w);
	w.l = l;
	t = ht_thread_start(wait_thread, &w);
	wait_subscribed(r, CHANNEL);
	ht_sleep_ms(200);
	t_release = ht_now_ms();
	HT_OK(hl_lock_release(NULL, h));
	ht_thread_join(t, 30000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	HT_RANGE(w.t_acquired - t_release, 0, 2000 * ht_scale());
	HT_OK(w.release_rc);
	HT_EQ(ht_exists(r, HT_S("restart:lock")), 0);

	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(c);
	hl_client_free(c2);
}

/* Redis unreachable for longer than the lease: the watchdog marks the
 * hold lost within about a watchdog timeout. */
static void unreachable_lost(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	int lost = 0, rc;
	int64_t t0, dt;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 1000;
	o.retry_delay_ms = 200;
	o.connect_timeout_ms = 500;
	o.command_timeout_ms = 500;
	c = ht_client_url(r->url, &o);
	l = ht_lock(c, "restart:unreachable");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	ht_redis_stop(r);
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost(&lost, l, 10000 * ht_scale(), NULL));
	dt = ht_now_ms() - t0;
	ht_note("lost %lld ms after redis went away", (long long)dt);
	HT_EQ(lost, 1);
	HT_RANGE(dt, 0, 1000 + 2000 * ht_scale());
	ht_redis_restart(r);
	rc = hl_lock_release(NULL, l);
	HT_CHECKF(rc == HL_ELOST, "release: %s", hl_status_name(rc));
	until_reconnected(l);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Calls made while Redis is down return within their bounds, with an
 * error, and work again after it is back. */
static void down_bounded(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	int acquired = 0, rc;
	int64_t t0, dt;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.retry_delay_ms = 100;
	o.retry_attempts = 2;
	o.connect_timeout_ms = 500;
	o.command_timeout_ms = 500;
	c = ht_client_url(r->url, &o);
	l = ht_lock(c, "restart:down");
	ht_redis_stop(r);
	t0 = ht_now_ms();
	rc = hl_lock_try_acquire(&acquired, l, 1000, 5000, NULL);
	dt = ht_now_ms() - t0;
	ht_note("try_acquire with redis down: %s after %lld ms: %s",
	        hl_status_name(rc), (long long)dt, hl_error_last());
	HT_CHECKF(rc == HL_EIO || rc == HL_ECONNECT ||
	                  (rc == HL_OK && acquired == 0),
	          "try_acquire with redis down: %s", hl_status_name(rc));
	if (rc != HL_OK)
		HT_CHECK(hl_error_last()[0] != '\0');
	HT_RANGE(dt, 0, 8000 * ht_scale());
	t0 = ht_now_ms();
	rc = hl_lock_is_locked(&acquired, l);
	HT_CHECKF(rc == HL_EIO || rc == HL_ECONNECT, "is_locked: %s",
	          hl_status_name(rc));
	HT_CHECK(hl_error_last()[0] != '\0');
	HT_RANGE(ht_now_ms() - t0, 0, 8000 * ht_scale());
	ht_redis_restart(r);
	until_reconnected(l);
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 5000, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(waiter), HT_CASE(idle), HT_CASE(unreachable_lost),
        HT_CASE(down_bounded))
