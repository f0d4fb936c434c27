/*
 * Interrupting blocked calls: a cancellation flag triggered from another
 * thread, a flag triggered beforehand, hl_client_interrupt(), and closing
 * the client under a waiter.
 */
#include "harness.h"

#include <stdatomic.h>

#define NAME    "cancel:lock"
#define CHANNEL "redisson_lock__channel:{cancel:lock}"

struct waiter {
	hl_lock *l;
	hl_cancel *cancel;
	int forever, rc, acquired;
	atomic_int done;
	int64_t t_done;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->acquired = 7;
	if (w->forever)
		w->rc = hl_lock_acquire(w->l, -1, w->cancel);
	else
		w->rc = hl_lock_try_acquire(&w->acquired, w->l, 20000, -1,
		                            w->cancel);
	w->t_done = ht_now_ms();
	atomic_store(&w->done, 1);
	return NULL;
}

static int subscribed(void *arg)
{
	return ht_numsub(arg, HT_S(CHANNEL)) >= 1;
}

/* A holder on its own client; returns it (and its handle in *h). */
static hl_client *hold(ht_redis *r, hl_lock **h)
{
	hl_client *c = ht_client(r, 0);
	*h = ht_lock(c, NAME);
	HT_OK(hl_lock_acquire(*h, -1, NULL));
	return c;
}

static pthread_t start_waiter(ht_redis *r, struct waiter *w)
{
	pthread_t t = ht_thread_start(wait_thread, w);
	HT_CHECKF(ht_wait_until(subscribed, r, 5000),
	          "waiter never subscribed");
	ht_sleep_ms(200);
	HT_EQ(atomic_load(&w->done), 0);
	return t;
}

static void trigger(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter w;
	pthread_t t;
	int64_t t0;
	int forever;

	for (forever = 0; forever < 2; forever++) {
		memset(&w, 0, sizeof w);
		w.l = ht_lock(c, NAME);
		w.forever = forever;
		HT_OK(hl_cancel_new(&w.cancel));
		t = start_waiter(r, &w);
		t0 = ht_now_ms();
		hl_cancel_trigger(w.cancel);
		ht_thread_join(t, 10000);
		HT_EQ(w.rc, HL_EINTERRUPTED);
		HT_CHECK(w.acquired != 1);
		HT_RANGE(w.t_done - t0, 0, 1000 * ht_scale());
		HT_EQ(ht_hlen(r, HT_S(NAME)), 1); /* only the holder */
		HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(h)), 1);
		hl_cancel_free(w.cancel);
		hl_lock_free(w.l);
	}
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

static void pre_triggered(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *h;
	hl_client *hc;
	hl_cancel *cancel;
	int acquired = 7;
	int64_t t0;

	HT_OK(hl_cancel_new(&cancel));
	hl_cancel_trigger(cancel);
	/* free lock: still refused at once, and not taken */
	t0 = ht_now_ms();
	HT_RC(hl_lock_try_acquire(&acquired, l, 1000, -1, cancel),
	      HL_EINTERRUPTED);
	HT_RC(hl_lock_acquire(l, -1, cancel), HL_EINTERRUPTED);
	HT_RANGE(ht_now_ms() - t0, 0, 500 * ht_scale());
	HT_CHECK(acquired != 1);
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);

	/* held by another: no wait either */
	hc = hold(r, &h);
	t0 = ht_now_ms();
	HT_RC(hl_lock_try_acquire(&acquired, l, 5000, -1, cancel),
	      HL_EINTERRUPTED);
	HT_RC(hl_lock_acquire(l, -1, cancel), HL_EINTERRUPTED);
	HT_RANGE(ht_now_ms() - t0, 0, 500 * ht_scale());
	HT_EQ(hl_cancel_is_triggered(cancel), 1); /* sticky */
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
	hl_cancel_free(cancel);
	hl_lock_free(l);
	hl_client_free(c);
}

static void reset(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_cancel *cancel;
	int acquired = 0;

	HT_OK(hl_cancel_new(&cancel));
	hl_cancel_trigger(cancel);
	HT_RC(hl_lock_acquire(l, -1, cancel), HL_EINTERRUPTED);
	hl_cancel_reset(cancel);
	HT_OK(hl_lock_try_acquire(&acquired, l, 1000, -1, cancel));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_acquire(l, -1, cancel));
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(l)), 2);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	hl_cancel_free(cancel);
	hl_lock_free(l);
	hl_client_free(c);
}

static void client_interrupt(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter w[2];
	pthread_t t[2];
	int64_t t0;
	int i, acquired = 7;

	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].l = ht_lock(c, NAME);
		w[i].forever = i;
	}
	t[0] = start_waiter(r, &w[0]);
	t[1] = ht_thread_start(wait_thread, &w[1]);
	ht_sleep_ms(300);
	/* interrupting another client wakes nobody here */
	HT_OK(hl_client_interrupt(hc));
	ht_sleep_ms(300);
	HT_EQ(atomic_load(&w[0].done), 0);
	HT_EQ(atomic_load(&w[1].done), 0);

	t0 = ht_now_ms();
	HT_OK(hl_client_interrupt(c));
	for (i = 0; i < 2; i++) {
		ht_thread_join(t[i], 10000);
		HT_EQ(w[i].rc, HL_EINTERRUPTED);
		HT_RANGE(w[i].t_done - t0, 0, 1000 * ht_scale());
	}
	HT_EQ(ht_hlen(r, HT_S(NAME)), 1);

	/* only calls blocked at that moment: later calls work */
	HT_OK(hl_lock_try_acquire(&acquired, w[0].l, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(hl_lock_try_acquire(&acquired, w[0].l, 2000, -1, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, w[0].l));
	HT_RC(hl_client_interrupt(NULL), HL_EINVAL);

	for (i = 0; i < 2; i++)
		hl_lock_free(w[i].l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

static void close_wakes(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter w;
	pthread_t t;
	int64_t t0;

	memset(&w, 0, sizeof w);
	w.l = ht_lock(c, NAME);
	w.forever = 1;
	t = start_waiter(r, &w);
	t0 = ht_now_ms();
	hl_client_close(c);
	ht_thread_join(t, 10000);
	HT_EQ(w.rc, HL_ECLOSED);
	HT_RANGE(w.t_done - t0, 0, 2000 * ht_scale());
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(h)), 1);
	hl_lock_free(w.l);
	hl_client_free(c);
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
}

struct lost_waiter {
	hl_lock *l;
	int rc, lost;
	atomic_int done;
	int64_t t_done;
};

static void *wait_lost_thread(void *arg)
{
	struct lost_waiter *w = arg;
	w->rc = hl_lock_wait_lost(&w->lost, w->l, -1, NULL);
	w->t_done = ht_now_ms();
	atomic_store(&w->done, 1);
	return NULL;
}

/* hl_client_interrupt (how 0) and closing the client (how 1) also wake
 * hl_lock_wait_lost. */
static void wait_lost_woken(int how)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	struct lost_waiter w;
	pthread_t t;
	int64_t t0;

	memset(&w, 0, sizeof w);
	w.l = ht_lock(c, NAME);
	/* one owner for both threads: the waiter watches our hold */
	HT_OK(hl_lock_set_owner(w.l, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(w.l, -1, NULL));
	t = ht_thread_start(wait_lost_thread, &w);
	ht_sleep_ms(300);
	HT_CHECKF(atomic_load(&w.done) == 0, "wait_lost returned at once");
	t0 = ht_now_ms();
	if (how == 0)
		HT_OK(hl_client_interrupt(c));
	else
		hl_client_close(c);
	ht_thread_join(t, 10000);
	HT_EQ(w.rc, how == 0 ? HL_EINTERRUPTED : HL_ECLOSED);
	HT_RANGE(w.t_done - t0, 0, 1000 * ht_scale());
	if (how == 0)
		HT_OK(hl_lock_release(NULL, w.l));
	hl_lock_free(w.l);
	hl_client_free(c);
	ht_del(r, HT_S(NAME));
}

static void wait_lost_interrupt(void)
{
	wait_lost_woken(0);
}

static void wait_lost_close(void)
{
	wait_lost_woken(1);
}

/* A waiter queued in the process behind another local waiter (not yet
 * competing in Redis) is interrupted too, and times out on its own. */
static void gated(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter first, second;
	pthread_t t1, t2;
	int64_t t0;
	int acquired = 7;
	hl_lock *third = ht_lock(c, NAME);

	memset(&first, 0, sizeof first);
	memset(&second, 0, sizeof second);
	first.l = ht_lock(c, NAME);
	second.l = ht_lock(c, NAME);
	HT_OK(hl_cancel_new(&second.cancel));
	t1 = start_waiter(r, &first);
	t2 = ht_thread_start(wait_thread, &second);
	ht_sleep_ms(300);
	HT_EQ(atomic_load(&second.done), 0);

	/* one attempt does not queue behind the local waiters */
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, third, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_RANGE(ht_now_ms() - t0, 0, 300 * ht_scale());

	/* a third local waiter with a short wait gives up on time */
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, third, 400, -1, NULL));
	HT_EQ(acquired, 0);
	HT_RANGE(ht_now_ms() - t0, 350, 400 + 1500 * ht_scale());

	t0 = ht_now_ms();
	hl_cancel_trigger(second.cancel);
	ht_thread_join(t2, 10000);
	HT_EQ(second.rc, HL_EINTERRUPTED);
	HT_RANGE(second.t_done - t0, 0, 1000 * ht_scale());
	HT_EQ(atomic_load(&first.done), 0);

	/* the first one still gets the lock when it is released */
	HT_OK(hl_lock_release(NULL, h));
	ht_thread_join(t1, 10000);
	HT_OK(first.rc);
	HT_EQ(first.acquired, 1);
	hl_cancel_free(second.cancel);
	hl_lock_free(first.l);
	hl_lock_free(second.l);
	hl_lock_free(third);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
	ht_del(r, HT_S(NAME));
}

/* Closing the client wakes every waiter, queued in the process or not. */
static void close_wakes_all(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter w[3];
	pthread_t t[3];
	int64_t t0;
	int i;

	for (i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].l = ht_lock(c, NAME);
		w[i].forever = 1;
	}
	t[0] = start_waiter(r, &w[0]);
	t[1] = ht_thread_start(wait_thread, &w[1]);
	t[2] = ht_thread_start(wait_thread, &w[2]);
	ht_sleep_ms(300);
	t0 = ht_now_ms();
	hl_client_close(c);
	for (i = 0; i < 3; i++) {
		ht_thread_join(t[i], 10000);
		HT_EQ(w[i].rc, HL_ECLOSED);
		HT_RANGE(w[i].t_done - t0, 0, 2000 * ht_scale());
	}
	for (i = 0; i < 3; i++)
		hl_lock_free(w[i].l);
	hl_client_free(c);
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
}

/* hl_client_free (not just close) while a call waits: the waiter gets
 * HL_ECLOSED and its handle stays usable until freed. */
static void free_wakes(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = hold(r, &h), *c = ht_client(r, 0);
	struct waiter w;
	pthread_t t;
	int v = 0;

	memset(&w, 0, sizeof w);
	w.l = ht_lock(c, NAME);
	w.forever = 1;
	t = start_waiter(r, &w);
	hl_client_free(c);
	ht_thread_join(t, 10000);
	HT_EQ(w.rc, HL_ECLOSED);
	HT_RC(hl_lock_is_locked(&v, w.l), HL_ECLOSED);
	hl_lock_free(w.l);
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
}

HT_MAIN(HT_CASE(trigger), HT_CASE(pre_triggered), HT_CASE(reset),
        HT_CASE(client_interrupt), HT_CASE(close_wakes),
        HT_CASE(wait_lost_interrupt), HT_CASE(wait_lost_close), HT_CASE(gated),
        HT_CASE(close_wakes_all), HT_CASE(free_wakes))
