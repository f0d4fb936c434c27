/*
 * Operations that do not block (tasks): a waiter is a record in the client,
 * not a thread. Thousands of tasks wait on one thread without adding a
 * thread, complete one at a time in FIFO order, and report through the
 * client's fd; cancel, close, free, interrupt; the wait_lost and release
 * tasks; bad input.
 */
#include "harness.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME    "task:lock"
#define CHANNEL "redisson_lock__channel:{task:lock}"

static hl_client *holder(ht_redis *r, hl_lock **h)
{
	hl_client *c = ht_client(r, 0);
	*h = ht_lock(c, NAME);
	HT_OK(hl_lock_acquire(*h, -1, NULL));
	return c;
}

static int subscribed(void *arg)
{
	return ht_numsub(arg, HT_S(CHANNEL)) >= 1;
}

static void wait_subscribed(ht_redis *r)
{
	HT_CHECKF(ht_wait_until(subscribed, r, 5000), "never subscribed");
}

/* ---- thousands of waiters on one thread, FIFO --------------------------- */

static void many_waiters(void)
{
	enum { N = 2000 };
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	static uint64_t owners[N];
	static hl_task *tasks[N];
	char owner[128];
	int base, during, i, acquired;
	int64_t t0;

	base = ht_threads_now();
	t0 = ht_now_ms();
	for (i = 0; i < N; i++) {
		owners[i] = hl_owner_id_new();
		HT_OK(hl_lock_set_owner(l, owners[i]));
		HT_OK(hl_lock_try_acquire_start(&tasks[i], l, -1, -1));
		HT_OK(hl_task_set_data(tasks[i], (uint64_t)i + 1));
	}
	ht_note("%d tasks started in %lld ms", N,
	        (long long)(ht_now_ms() - t0));
	wait_subscribed(r);
	ht_sleep_ms(300);
	during = ht_threads_now();
	ht_note("threads: %d before, %d with %d waiting tasks", base, during,
	        N);
	HT_EQ(during, base);
	/* one subscription: only the head of the queue listens */
	HT_EQ(ht_numsub(r, HT_S(CHANNEL)), 1);
	for (i = 0; i < N; i++)
		HT_EQ(hl_task_done(tasks[i]), 0);

	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, h));
	for (i = 0; i < N; i++) {
		hl_task *t = ht_next_task(c, 10000);
		size_t n;
		/* FIFO: each in the order it started, one at a time */
		HT_EQ(hl_task_data(t), (uint64_t)i + 1);
		HT_CHECK(t == tasks[i]);
		acquired = 7;
		HT_OK(hl_task_result(&acquired, t));
		HT_EQ(acquired, 1);
		HT_OK(hl_lock_set_owner(l, owners[i]));
		HT_OK(hl_lock_owner(&n, l, owner, sizeof owner));
		/* it alone holds it, once */
		HT_EQ(ht_hlen(r, HT_S(NAME)), 1);
		HT_EQ(ht_hget_int(r, HT_S(NAME), owner), 1);
		if (i + 1 < N)
			HT_EQ(hl_task_done(tasks[i + 1]), 0);
		HT_OK(hl_lock_release(NULL, l));
		hl_task_free(t);
		if (i == N / 2)
			HT_EQ(ht_threads_now(), base);
	}
	ht_note("%d hand-offs in %lld ms", N, (long long)(ht_now_ms() - t0));
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	{
		hl_task *t = NULL;
		HT_OK(hl_client_task_next(&t, c));
		HT_CHECK(t == NULL); /* each delivered once */
	}
	HT_EQ(ht_threads_now(), base);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* ---- cancel -------------------------------------------------------------- */

static void cancel_waiting(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_task *first, *second;
	int acquired = 7, fd;
	int64_t t0;
	char owner2[128];

	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&first, l, -1, -1));
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_owner(NULL, l, owner2, sizeof owner2));
	HT_OK(hl_lock_try_acquire_start(&second, l, 20000, -1));
	wait_subscribed(r);
	ht_sleep_ms(100);
	HT_EQ(hl_task_done(first), 0);
	HT_EQ(hl_task_done(second), 0);

	/* the queued one: done at once, through its own fd */
	HT_OK(hl_task_fd(&fd, second));
	HT_EQ(ht_fd_readable(fd, 0), 0);
	t0 = ht_now_ms();
	hl_task_cancel(second);
	HT_CHECK(ht_fd_readable(fd, 1000 * ht_scale()));
	HT_RANGE(ht_now_ms() - t0, 0, 200 * ht_scale());
	HT_RC(hl_task_result(&acquired, second), HL_EINTERRUPTED);
	HT_EQ(acquired, 7);
	hl_task_cancel(second); /* done: nothing happens */
	HT_RC(hl_task_result(NULL, second), HL_EINTERRUPTED);
	hl_task_free(second);

	/* the head, subscribed and parked between attempts */
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&second, l, -1, -1));
	t0 = ht_now_ms();
	hl_task_cancel(first);
	HT_RC(ht_task_result(first, &acquired, 1000), HL_EINTERRUPTED);
	HT_RANGE(ht_now_ms() - t0, 0, 200 * ht_scale());
	hl_task_free(first);
	HT_EQ(ht_hlen(r, HT_S(NAME)), 1); /* only the holder */
	HT_EQ(ht_hget_int(r, HT_S(NAME), owner2), -1);

	/* the next in the queue moved up and gets it on release */
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(second, &acquired, 5000));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_task_free(second);
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* A cancel racing the acquisition leaves nothing held: either the task got
 * the lock (and says so), or it did not and the lock is not its owner's. */
static void cancel_race(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	int i, got = 0, cancelled = 0, rounds = 200;
	char owner[128];

	srand(7);
	for (i = 0; i < rounds; i++) {
		hl_task *t;
		int acquired = 7, rc;
		HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
		HT_OK(hl_lock_owner(NULL, l, owner, sizeof owner));
		HT_OK(hl_lock_try_acquire_start(&t, l, -1, -1));
		wait_subscribed(r);
		HT_OK(hl_lock_release(NULL, h));
		/* cancel somewhere in the hand-off: before the message, in
		 * the attempt, or after it */
		{
			struct timespec ts = {0, (long)(rand() % 1200) * 1000};
			nanosleep(&ts, NULL);
		}
		hl_task_cancel(t);
		rc = ht_task_result(t, &acquired, 2000);
		if (rc == HL_OK) {
			HT_EQ(acquired, 1);
			HT_EQ(ht_hget_int(r, HT_S(NAME), owner), 1);
			HT_OK(hl_lock_release(NULL, l));
			got++;
		} else {
			HT_EQ(rc, HL_EINTERRUPTED);
			/* nothing held by it, now or later */
			HT_EQ(ht_hget_int(r, HT_S(NAME), owner), -1);
			cancelled++;
		}
		hl_task_free(t);
		HT_EQ(ht_exists(r, HT_S(NAME)), 0);
		HT_OK(hl_lock_acquire(h, -1, NULL));
	}
	ht_note("%d rounds: %d acquired before the cancel, %d cancelled",
	        rounds, got, cancelled);
	HT_CHECK(cancelled > 0);
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* An attempt in flight (a slow network) that the cancel cuts off is taken
 * back: after the task completes, the lock is not its owner's, and stays
 * so. */
static void cancel_in_flight(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_client_url(p->url, NULL);
	hl_lock *l = ht_lock(c, NAME), *warm = ht_lock(c, "task:warm");
	hl_task *t;
	char owner[128], msg[512];
	int acquired = 7, i, taken_back = 0;
	int64_t t0;

	for (i = 0; i < 3; i++) {
		/* a connection that is up and knows its replicas, so the
		 * acquire is the first thing sent */
		HT_OK(hl_lock_acquire(warm, -1, NULL));
		HT_OK(hl_lock_release(NULL, warm));
		HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
		HT_OK(hl_lock_owner(NULL, l, owner, sizeof owner));
		ht_proxy_cmd(p, "delay 40"); /* a round trip takes 80 ms */
		HT_OK(hl_lock_try_acquire_start(&t, l, -1, -1));
		ht_sleep_ms(50 + 10 * i); /* Redis has it, the reply not */
		HT_EQ(hl_task_done(t), 0);
		t0 = ht_now_ms();
		hl_task_cancel(t);
		HT_RC(ht_task_result(t, &acquired, 3000), HL_EINTERRUPTED);
		snprintf(msg, sizeof msg, "%s", hl_error_last());
		ht_note("cancel in flight: done after %lld ms (%s)",
		        (long long)(ht_now_ms() - t0), msg);
		taken_back += strstr(msg, "taken back") != NULL;
		/* the take-back is bounded */
		HT_RANGE(ht_now_ms() - t0, 0, 700 * ht_scale());
		hl_task_free(t);
		HT_EQ(ht_hget_int(r, HT_S(NAME), owner), -1);
		ht_proxy_cmd(p, "delay 0");
		ht_sleep_ms(200); /* anything delayed has landed by now */
		HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	}
	HT_CHECK(taken_back > 0);
	hl_lock_free(l);
	hl_lock_free(warm);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- the client fd ------------------------------------------------------- */

static void client_fd(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *a = ht_lock(c, "task:a"), *b = ht_lock(c, "task:b");
	hl_task *ta, *tb, *t, *gone;
	int fd, fd2, acquired = 7;

	HT_OK(hl_client_task_fd(&fd, c));
	HT_OK(hl_client_task_fd(&fd2, c));
	HT_EQ(fd, fd2); /* one per client */
	HT_EQ(ht_fd_readable(fd, 0), 0);
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == NULL);

	HT_OK(hl_lock_try_acquire_start(&ta, a, 1000, -1));
	HT_OK(hl_task_wait(ta, 5000 * ht_scale(), NULL));
	HT_OK(hl_lock_try_acquire_start(&tb, b, 1000, -1));
	HT_OK(hl_task_wait(tb, 5000 * ht_scale(), NULL));
	HT_CHECK(ht_fd_readable(fd, 0));
	/* in the order they completed, each once */
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == ta);
	HT_CHECK(ht_fd_readable(fd, 0)); /* tb still waits */
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == tb);
	HT_EQ(ht_fd_readable(fd, 0), 0);
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == NULL);
	HT_OK(hl_task_result(&acquired, ta));
	HT_EQ(acquired, 1);
	HT_OK(hl_task_result(&acquired, tb));
	HT_EQ(acquired, 1);
	/* a task's own fd made after it is done is readable at once */
	HT_OK(hl_task_fd(&fd2, ta));
	HT_CHECK(ht_fd_readable(fd2, 0));
	hl_task_free(ta);
	hl_task_free(tb);

	/* a completed task freed before it was taken is never handed out */
	HT_OK(hl_lock_release_start(&gone, a));
	HT_OK(hl_task_wait(gone, 5000 * ht_scale(), NULL));
	HT_CHECK(ht_fd_readable(fd, 0));
	hl_task_free(gone);
	HT_EQ(ht_fd_readable(fd, 0), 0);
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == NULL);
	HT_EQ(ht_exists(r, HT_S("task:a")), 0);

	/* a blocking call's wait is a task too, but never queued here */
	{
		hl_client *hc = ht_client(r, 0);
		hl_lock *h = ht_lock(hc, "task:b2");
		hl_lock *w = ht_lock(c, "task:b2");
		HT_OK(hl_lock_acquire(h, 300, NULL)); /* freed by its lease */
		HT_OK(hl_lock_try_acquire(&acquired, w, 5000, -1, NULL));
		HT_EQ(acquired, 1);
		HT_OK(hl_lock_release(NULL, w));
		HT_EQ(ht_fd_readable(fd, 0), 0);
		HT_OK(hl_client_task_next(&t, c));
		HT_CHECK(t == NULL);
		hl_lock_free(w);
		hl_lock_free(h);
		hl_client_free(hc);
	}
	HT_OK(hl_lock_release(NULL, b));
	hl_lock_free(a);
	hl_lock_free(b);
	hl_client_free(c);
}

/* ---- wait 0, deadlines, re-entry, the handle freed at once --------------- */

static void waits(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *l2;
	hl_task *t, *q;
	char owner_t[128];
	uint64_t oq;
	int acquired = 7;
	int64_t t0;

	/* wait 0 on a held lock: one attempt, 0 */
	HT_OK(hl_lock_try_acquire_start(&t, l, 0, -1));
	HT_OK(ht_task_result(t, &acquired, 1000));
	HT_EQ(acquired, 0);
	hl_task_free(t);

	/* a deadline: 0 after about wait_ms */
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire_start(&t, l, 300, -1));
	HT_OK(ht_task_result(t, &acquired, 3000));
	HT_EQ(acquired, 0);
	HT_RANGE(ht_now_ms() - t0, 280, 300 + 500 * ht_scale());
	hl_task_free(t);

	/* wait 0 behind a queued waiter of this client: 0 at once, no
	 * round trip */
	oq = hl_owner_id_new();
	HT_OK(hl_lock_set_owner(l, oq));
	HT_OK(hl_lock_try_acquire_start(&q, l, -1, -1));
	wait_subscribed(r);
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&t, l, 0, -1));
	HT_EQ(hl_task_done(t), 1);
	HT_OK(hl_task_result(&acquired, t));
	HT_EQ(acquired, 0);
	hl_task_free(t);

	/* the handle may go at once: the task has its own copy */
	l2 = ht_lock(c, NAME);
	HT_OK(hl_lock_set_owner(l2, hl_owner_id_new()));
	HT_OK(hl_lock_owner(NULL, l2, owner_t, sizeof owner_t));
	HT_OK(hl_lock_try_acquire_start(&t, l2, -1, 5000));
	hl_lock_free(l2);
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(q, &acquired, 5000));
	HT_EQ(acquired, 1); /* the first queued */
	hl_task_free(q);
	HT_OK(hl_lock_set_owner(l, oq));
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 1); /* then the next */
	HT_EQ(ht_hget_int(r, HT_S(NAME), owner_t), 1);
	HT_RANGE(ht_pttl(r, HT_S(NAME)), 1, 5000); /* its lease */
	hl_task_free(t);
	ht_del(r, HT_S(NAME));

	/* re-entry: an owner that holds it gets it again at once */
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_try_acquire_start(&t, l, 1000, -1));
	HT_OK(ht_task_result(t, &acquired, 2000));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(l)), 2);
	hl_task_free(t);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);

	/* the owner is fixed at the start: the starting thread's id */
	{
		hl_lock *own = ht_lock(c, "task:own");
		char mine[128];
		HT_OK(hl_lock_owner(NULL, own, mine, sizeof mine));
		HT_OK(hl_lock_try_acquire_start(&t, own, 1000, -1));
		HT_OK(ht_task_result(t, &acquired, 2000));
		HT_EQ(acquired, 1);
		HT_EQ(ht_hget_int(r, HT_S("task:own"), mine), 1);
		hl_task_free(t);
		HT_OK(hl_lock_release(NULL, own));
		hl_lock_free(own);
	}
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* ---- close, free, interrupt ---------------------------------------------- */

static void close_pending(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *mine = ht_lock(c, "task:mine");
	hl_task *t[4], *got[4];
	int i, j, n = 0, fd, acquired = 7;
	int64_t t0;

	for (i = 0; i < 3; i++) {
		HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
		HT_OK(hl_lock_try_acquire_start(&t[i], l, -1, -1));
	}
	HT_OK(hl_lock_acquire(mine, -1, NULL));
	HT_OK(hl_lock_wait_lost_start(&t[3], mine, -1));
	wait_subscribed(r);
	ht_sleep_ms(100);
	HT_OK(hl_client_task_fd(&fd, c));
	HT_EQ(ht_fd_readable(fd, 0), 0);

	t0 = ht_now_ms();
	hl_client_close(c);
	HT_RANGE(ht_now_ms() - t0, 0, 2000 * ht_scale());
	/* every one done, with HL_ECLOSED, and queued */
	HT_CHECK(ht_fd_readable(fd, 0));
	for (;;) {
		hl_task *x;
		HT_OK(hl_client_task_next(&x, c));
		if (!x)
			break;
		HT_CHECK(n < 4);
		got[n++] = x;
	}
	HT_EQ(n, 4);
	for (i = 0; i < 4; i++) {
		int found = 0;
		HT_EQ(hl_task_done(t[i]), 1);
		HT_RC(hl_task_result(&acquired, t[i]), HL_ECLOSED);
		for (j = 0; j < 4; j++)
			found += got[j] == t[i];
		HT_EQ(found, 1);
	}
	HT_EQ(ht_fd_readable(fd, 0), 0);
	/* nothing new after close */
	HT_RC(hl_lock_try_acquire_start(&t[0], l, -1, -1), HL_ECLOSED);
	HT_RC(hl_lock_release_start(&t[0], l), HL_ECLOSED);
	HT_EQ(ht_hlen(r, HT_S(NAME)), 1); /* the holder only */
	/* the tasks outlive the client's handle */
	hl_lock_free(l);
	hl_lock_free(mine);
	hl_client_free(c);
	for (i = 0; i < 4; i++) {
		HT_RC(hl_task_result(NULL, t[i]), HL_ECLOSED);
		hl_task_free(t[i]);
	}
	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(h);
	hl_client_free(hc);
	ht_del(r, HT_S("task:mine"));
}

/* Freeing a pending task cancels it: it holds nothing and blocks nobody. */
static void free_pending(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_task *first, *second, *t;
	char owner1[128];
	int acquired = 7;

	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_owner(NULL, l, owner1, sizeof owner1));
	HT_OK(hl_lock_try_acquire_start(&first, l, -1, -1));
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&second, l, -1, -1));
	wait_subscribed(r);
	hl_task_free(first);             /* the head: parked between attempts */
	HT_OK(hl_lock_release(NULL, h)); /* the release races the free */
	HT_OK(ht_task_result(second, &acquired, 5000));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S(NAME), owner1), -1);
	HT_EQ(ht_hlen(r, HT_S(NAME)), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_task_free(second);
	HT_OK(hl_client_task_next(&t, c));
	HT_CHECK(t == NULL); /* the freed one is never handed out */
	hl_task_free(NULL);
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

static void interrupt(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_task *a, *b, *later;
	int acquired = 7;

	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&a, l, -1, -1));
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&b, l, -1, -1));
	wait_subscribed(r);
	/* another client's interrupt: nothing here */
	HT_OK(hl_client_interrupt(hc));
	ht_sleep_ms(200);
	HT_EQ(hl_task_done(a), 0);
	HT_OK(hl_client_interrupt(c));
	HT_RC(ht_task_result(a, &acquired, 1000), HL_EINTERRUPTED);
	HT_RC(ht_task_result(b, &acquired, 1000), HL_EINTERRUPTED);
	/* only those pending then: a later one waits and acquires */
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&later, l, -1, -1));
	ht_sleep_ms(100);
	HT_EQ(hl_task_done(later), 0);
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(later, &acquired, 5000));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_task_free(a);
	hl_task_free(b);
	hl_task_free(later);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* ---- wait_lost and release tasks ----------------------------------------- */

static void wait_lost_task(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 300); /* renewed every 100 ms */
	hl_lock *l = ht_lock(c, "task:lost");
	hl_task *t;
	int lost = 7, fd;
	int64_t t0;

	/* taken from under us: the watchdog finds it, the task completes */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_wait_lost_start(&t, l, -1));
	HT_OK(hl_task_fd(&fd, t));
	ht_sleep_ms(300);
	HT_EQ(hl_task_done(t), 0);
	t0 = ht_now_ms();
	ht_del(r, HT_S("task:lost"));
	HT_CHECK(ht_fd_readable(fd, 2000 * ht_scale()));
	HT_RANGE(ht_now_ms() - t0, 0, 1000 * ht_scale());
	HT_OK(hl_task_result(&lost, t));
	HT_EQ(lost, 1);
	hl_task_free(t);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);

	/* released: it ends with 0 */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_wait_lost_start(&t, l, -1));
	ht_sleep_ms(200);
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(ht_task_result(t, &lost, 1000));
	HT_EQ(lost, 0);
	hl_task_free(t);

	/* its timeout */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost_start(&t, l, 300));
	HT_OK(ht_task_result(t, &lost, 2000));
	HT_EQ(lost, 0);
	HT_RANGE(ht_now_ms() - t0, 280, 300 + 500 * ht_scale());
	hl_task_free(t);

	/* cancel */
	HT_OK(hl_lock_wait_lost_start(&t, l, -1));
	hl_task_cancel(t);
	HT_RC(ht_task_result(t, &lost, 1000), HL_EINTERRUPTED);
	hl_task_free(t);
	HT_OK(hl_lock_release(NULL, l));

	/* nothing held: 0 at once */
	HT_OK(hl_lock_wait_lost_start(&t, l, -1));
	HT_EQ(hl_task_done(t), 1);
	HT_OK(hl_task_result(&lost, t));
	HT_EQ(lost, 0);
	hl_task_free(t);
	HT_RC(hl_lock_wait_lost_start(&t, l, -2), HL_EINVAL);
	hl_lock_free(l);
	hl_client_free(c);
}

static void release_task(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "task:rel"), *l2;
	hl_task *t;
	int released = 7;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release_start(&t, l));
	HT_OK(ht_task_result(t, &released, 2000));
	HT_EQ(released, 0); /* one hold remains */
	HT_EQ(ht_hget_int(r, HT_S("task:rel"), ht_owner(l)), 1);
	hl_task_free(t);

	/* from a handle freed at once: the owner was fixed at the start */
	l2 = ht_lock(c, "task:rel");
	HT_OK(hl_lock_release_start(&t, l2));
	hl_lock_free(l2);
	HT_OK(ht_task_result(t, &released, 2000));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("task:rel")), 0);
	hl_task_free(t);

	/* not held: the release's own status and message */
	HT_OK(hl_lock_release_start(&t, l));
	HT_RC(ht_task_result(t, &released, 2000), HL_ENOTHELD);
	HT_CHECK(strstr(hl_error_last(), "task:rel") != NULL);
	hl_task_free(t);

	/* cancelled before it runs or not: never half done */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release_start(&t, l));
	hl_task_cancel(t);
	{
		int rc = ht_task_result(t, &released, 2000);
		if (rc == HL_OK) {
			HT_EQ(released, 1);
			HT_EQ(ht_exists(r, HT_S("task:rel")), 0);
		} else {
			HT_EQ(rc, HL_EINTERRUPTED);
			HT_EQ(ht_hget_int(r, HT_S("task:rel"), ht_owner(l)), 1);
			HT_OK(hl_lock_release(NULL, l));
		}
	}
	hl_task_free(t);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- begin: the first attempt here, the wait a task -------------------- */

/* hl_lock_try_acquire_begin: a free lock is taken on the calling thread
 * (no task); a lock held elsewhere answers a task at once, its client's
 * place in the line taken by that first attempt (before the task ran),
 * and the task gets the lock when the holder lets go; a wait of 0 answers
 * without a task; a black-holed network gives control back within about
 * the grace, the task still waiting (and cancellable). */
static void begin(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h, *l;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_task *t = (hl_task *)1;
	ht_proxy *p;
	hl_client *pc;
	hl_lock *pl;
	int acquired = 7;
	int64_t t0;

	l = ht_lock(c, NAME);
	/* held elsewhere: a task, and the place is in Redis already */
	HT_OK(hl_lock_try_acquire_begin(&t, &acquired, l, 10000, -1));
	HT_CHECK(t != NULL);
	HT_EQ(acquired, 0);
	{
		redisReply *z =
		        ht_raw(ht_raw_of(r), "ZCARD hilock_line:{%s}", NAME);
		HT_EQ(z->integer, 1);
		freeReplyObject(z);
	}
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(l)), 1);
	hl_task_free(t);
	/* a re-entry (and any decided first attempt): no task */
	t = (hl_task *)1;
	HT_OK(hl_lock_try_acquire_begin(&t, &acquired, l, 10000, -1));
	HT_CHECK(t == NULL);
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(l)), 2);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	/* wait 0 while held elsewhere: no task, not acquired */
	HT_OK(hl_lock_acquire(h, -1, NULL));
	HT_OK(hl_lock_try_acquire_begin(&t, &acquired, l, 0, -1));
	HT_CHECK(t == NULL);
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_release(NULL, h));
	/* bad input */
	HT_RC(hl_lock_try_acquire_begin(NULL, &acquired, l, 0, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_begin(&t, NULL, l, 0, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_begin(&t, &acquired, NULL, 0, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_begin(&t, &acquired, l, -5, -1), HL_EINVAL);

	/* a black hole: back within the grace, the wait a task */
	p = ht_proxy_start(r->port);
	pc = ht_client_url(p->url, NULL);
	pl = ht_lock(pc, "task:begin:bh");
	HT_OK(hl_lock_acquire(pl, -1, NULL));
	HT_OK(hl_lock_release(NULL, pl));
	ht_proxy_cmd(p, "blackhole on");
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire_begin(&t, &acquired, pl, 30000, -1));
	HT_RANGE(ht_now_ms() - t0, 0, 1000 * ht_scale());
	HT_CHECK(t != NULL);
	HT_EQ(acquired, 0);
	HT_EQ(hl_task_done(t), 0);
	hl_task_cancel(t);
	HT_RC(ht_task_result(t, &acquired, 10000), HL_EINTERRUPTED);
	hl_task_free(t);
	ht_proxy_cmd(p, "blackhole off");
	hl_lock_free(pl);
	hl_client_free(pc);
	ht_proxy_stop(p);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(c);
	hl_client_free(hc);
}

/* ---- bad input ----------------------------------------------------------- */

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_task *t;
	hl_cancel *cancel;
	int fd, v = 7;
	int64_t t0;

	HT_RC(hl_lock_try_acquire_start(NULL, l, -1, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_start(&t, NULL, -1, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_start(&t, l, -2, -1), HL_EINVAL);
	HT_RC(hl_lock_try_acquire_start(&t, l, -1, 0), HL_EINVAL);
	HT_RC(hl_lock_release_start(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_release_start(&t, NULL), HL_EINVAL);
	HT_RC(hl_lock_wait_lost_start(NULL, l, -1), HL_EINVAL);
	HT_RC(hl_lock_wait_lost_start(&t, NULL, -1), HL_EINVAL);
	HT_RC(hl_client_task_fd(NULL, c), HL_EINVAL);
	HT_RC(hl_client_task_fd(&fd, NULL), HL_EINVAL);
	HT_RC(hl_client_task_next(NULL, c), HL_EINVAL);
	HT_RC(hl_client_task_next(&t, NULL), HL_EINVAL);
	HT_RC(hl_task_fd(NULL, NULL), HL_EINVAL);
	HT_RC(hl_task_fd(&fd, NULL), HL_EINVAL);
	HT_RC(hl_task_set_data(NULL, 1), HL_EINVAL);
	HT_EQ(hl_task_data(NULL), 0);
	HT_EQ(hl_task_done(NULL), 0);
	HT_RC(hl_task_result(&v, NULL), HL_EINVAL);
	HT_RC(hl_task_wait(NULL, 0, NULL), HL_EINVAL);
	hl_task_cancel(NULL);
	hl_task_free(NULL);

	/* not done yet: EINVAL with a message, out untouched */
	HT_OK(hl_lock_try_acquire_start(&t, l, -1, -1));
	HT_EQ(hl_task_data(t), 0);
	HT_RC(hl_task_result(&v, t), HL_EINVAL);
	HT_EQ(v, 7);
	HT_RC(hl_task_wait(t, -2, NULL), HL_EINVAL);
	t0 = ht_now_ms();
	HT_RC(hl_task_wait(t, 0, NULL), HL_ETIMEDOUT);
	HT_RC(hl_task_wait(t, 200, NULL), HL_ETIMEDOUT);
	HT_RANGE(ht_now_ms() - t0, 190, 200 + 500 * ht_scale());
	HT_OK(hl_cancel_new(&cancel));
	hl_cancel_trigger(cancel);
	HT_RC(hl_task_wait(t, -1, cancel), HL_EINTERRUPTED);
	HT_EQ(hl_task_done(t), 0); /* the wait ended, not the task */
	hl_cancel_free(cancel);
	hl_task_free(t);

	HT_OK(hl_lock_release(NULL, h));
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

/* ---- every lock kind waits through tasks ----------------------------------
 */

/* A handle of kind on name with an explicit owner of its own. */
static hl_lock *kind_handle(hl_client *c, int kind, const char *name)
{
	hl_lock *l;
	HT_OK(hl_lock_new_kind(&l, c, kind, HT_S(name)));
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	if (kind == HL_LOCK_SPIN)
		HT_OK(hl_lock_set_backoff(l, 5, 20, 2));
	return l;
}

static int held_by(hl_lock *l)
{
	int v = 0;
	HT_OK(hl_lock_is_held(&v, l));
	return v;
}

struct llen_arg {
	ht_redis *r;
	const char *key;
	long long n;
};

static int llen_is(void *arg)
{
	struct llen_arg *a = arg;
	redisReply *rep = ht_raw(ht_raw_of(a->r), "LLEN %s", a->key);
	long long n = rep->integer;
	freeReplyObject(rep);
	return n == a->n;
}

/* The exclusive kinds: three tasks wait while another client holds the
 * lock, then each gets it in turn, alone (the fair kinds in the order they
 * joined Redis's queue; the fenced lock with a greater token each time; the
 * spin lock without any subscription). */
static void kinds(void)
{
	static const int ks[] = {HL_LOCK_FAIR,   HL_LOCK_FAIR_NONREENTRANT,
	                         HL_LOCK_WRITE,  HL_LOCK_SPIN,
	                         HL_LOCK_FENCED, HL_LOCK_NONREENTRANT};
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *c = ht_client(r, 0);
	size_t k;
	for (k = 0; k < sizeof(ks) / sizeof(ks[0]); k++) {
		int kind = ks[k], fair = kind == HL_LOCK_FAIR ||
		                         kind == HL_LOCK_FAIR_NONREENTRANT;
		char name[64], queue[96], channel[96];
		hl_lock *h, *w[3];
		hl_task *t[3];
		int i, n, acquired;
		int64_t token, last = 0;
		snprintf(name, sizeof name, "task:kind:%d", kind);
		snprintf(queue, sizeof queue, "redisson_lock_queue:{%s}", name);
		snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}",
		         name);
		h = kind_handle(hc, kind, name);
		HT_OK(hl_lock_acquire(h, -1, NULL));
		for (i = 0; i < 3; i++) {
			w[i] = kind_handle(c, kind, name);
			HT_OK(hl_lock_try_acquire_start(&t[i], w[i], 20000,
			                                -1));
			HT_OK(hl_task_set_data(t[i], (uint64_t)i + 1));
			if (fair) {
				/* FIFO is Redis's queue: the next joins once
				 * this one is in it */
				struct llen_arg q = {r, queue, i + 1};
				HT_CHECK(ht_wait_until(llen_is, &q, 5000));
			}
		}
		ht_sleep_ms(200);
		for (i = 0; i < 3; i++)
			HT_EQ(hl_task_done(t[i]), 0);
		if (kind == HL_LOCK_SPIN)
			HT_EQ(ht_numsub(r, channel, strlen(channel)), 0);
		HT_OK(hl_lock_release(NULL, h));
		for (n = 0; n < 3; n++) {
			hl_task *x = ht_next_task(c, 10000);
			i = (int)hl_task_data(x) - 1;
			HT_RANGE(i, 0, 2);
			if (fair)
				HT_EQ(i, n);
			acquired = 7;
			HT_OK(hl_task_result(&acquired, x));
			HT_EQ(acquired, 1);
			HT_EQ(held_by(w[i]), 1);
			if (kind == HL_LOCK_FENCED) {
				HT_OK(hl_lock_token(&token, w[i]));
				HT_CHECK(token > last);
				last = token;
			}
			if (kind == HL_LOCK_NONREENTRANT ||
			    kind == HL_LOCK_FAIR_NONREENTRANT) {
				/* its owner holds it: a task of the same owner
				 * is refused */
				hl_task *again;
				HT_OK(hl_lock_try_acquire_start(&again, w[i],
				                                1000, -1));
				HT_RC(ht_task_result(again, &acquired, 2000),
				      HL_EDEADLK);
				hl_task_free(again);
			}
			hl_task_free(x);
			t[i] = NULL;
			HT_OK(hl_lock_release(NULL, w[i]));
		}
		HT_EQ(ht_exists(r, HT_S(name)), 0);
		for (i = 0; i < 3; i++)
			hl_lock_free(w[i]);
		hl_lock_free(h);
		ht_note("kind %s: three tasks took it in turn",
		        hl_lock_kind_name(kind));
	}
	hl_client_free(hc);
	hl_client_free(c);
}

/* A cancelled fair waiter leaves Redis's queue (the engine's give-up), so
 * the next one is not held up by it; readers share through tasks; a reader
 * cannot start waiting for the write half. */
static void kinds_fair_cancel_and_read(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *hc = ht_client(r, 0), *c = ht_client(r, 0);
	struct llen_arg q = {r, "redisson_lock_queue:{task:fair2}", 2};
	hl_lock *h = kind_handle(hc, HL_LOCK_FAIR, "task:fair2");
	hl_lock *a = kind_handle(c, HL_LOCK_FAIR, "task:fair2");
	hl_lock *b = kind_handle(c, HL_LOCK_FAIR, "task:fair2");
	hl_lock *wr, *rd[3];
	hl_task *ta, *tb, *tr[3];
	int acquired = 7, i;

	HT_OK(hl_lock_acquire(h, -1, NULL));
	HT_OK(hl_lock_try_acquire_start(&ta, a, 20000, -1));
	q.n = 1;
	HT_CHECK(ht_wait_until(llen_is, &q, 5000));
	HT_OK(hl_lock_try_acquire_start(&tb, b, 20000, -1));
	q.n = 2;
	HT_CHECK(ht_wait_until(llen_is, &q, 5000));
	hl_task_cancel(ta); /* the first in line gives up */
	HT_RC(ht_task_result(ta, &acquired, 2000), HL_EINTERRUPTED);
	q.n = 1;
	HT_CHECKF(ht_wait_until(llen_is, &q, 5000),
	          "the cancelled waiter stayed in the fair queue");
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(tb, &acquired, 5000)); /* not held up */
	HT_EQ(acquired, 1);
	HT_EQ(held_by(a), 0);
	HT_OK(hl_lock_release(NULL, b));
	hl_task_free(ta);
	hl_task_free(tb);

	/* readers wait for a writer elsewhere, then share */
	wr = kind_handle(hc, HL_LOCK_WRITE, "task:rw");
	HT_OK(hl_lock_acquire(wr, -1, NULL));
	for (i = 0; i < 3; i++) {
		rd[i] = kind_handle(c, HL_LOCK_READ, "task:rw");
		HT_OK(hl_lock_try_acquire_start(&tr[i], rd[i], 20000, -1));
	}
	ht_sleep_ms(200);
	for (i = 0; i < 3; i++)
		HT_EQ(hl_task_done(tr[i]), 0);
	HT_OK(hl_lock_release(NULL, wr));
	for (i = 0; i < 3; i++) {
		HT_OK(ht_task_result(tr[i], &acquired, 5000));
		HT_EQ(acquired, 1);
	}
	for (i = 0; i < 3; i++)
		HT_EQ(held_by(rd[i]), 1); /* all at once */
	{
		/* a reader's own write wait would never end: refused at
		 * the start */
		hl_lock *mine;
		hl_task *t;
		char o1[128];
		HT_OK(hl_lock_owner(NULL, rd[0], o1, sizeof o1));
		HT_OK(hl_lock_new_kind(&mine, c, HL_LOCK_WRITE,
		                       HT_S("task:rw")));
		HT_OK(hl_lock_set_owner(
		        mine, strtoull(strrchr(o1, ':') + 1, NULL, 10)));
		HT_RC(hl_lock_try_acquire_start(&t, mine, 1000, -1),
		      HL_EDEADLK);
		hl_lock_free(mine);
	}
	for (i = 0; i < 3; i++) {
		HT_OK(hl_lock_release(NULL, rd[i]));
		hl_task_free(tr[i]);
		hl_lock_free(rd[i]);
	}
	hl_lock_free(wr);
	hl_lock_free(h);
	hl_lock_free(a);
	hl_lock_free(b);
	hl_client_free(hc);
	hl_client_free(c);
}

/* ---- fork ------------------------------------------------------------------
 */

/* A child that inherited a client with a pending task: every task call is
 * refused (HL_EFORKED), freeing the task and the client touches none of the
 * parent's state, and the parent's task goes on to take the lock. */
static void fork_child(void)
{
	ht_redis *r = ht_redis_default();
	hl_lock *h;
	hl_client *hc = holder(r, &h), *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME);
	hl_task *t, *t2;
	int fd, acquired = 7, status;
	pid_t pid;

	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_try_acquire_start(&t, l, -1, -1));
	wait_subscribed(r);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		int bad = 0;
		bad |= hl_task_result(&acquired, t) != HL_EFORKED;
		bad |= hl_task_wait(t, 0, NULL) != HL_EFORKED;
		bad |= hl_task_fd(&fd, t) != HL_EFORKED;
		bad |= hl_client_task_fd(&fd, c) != HL_EFORKED;
		bad |= hl_client_task_next(&t2, c) != HL_EFORKED;
		bad |= hl_lock_try_acquire_start(&t2, l, 0, -1) != HL_EFORKED;
		bad |= hl_lock_release_start(&t2, l) != HL_EFORKED;
		hl_task_cancel(t); /* ignored here */
		hl_task_free(t);
		hl_lock_free(l);
		hl_client_free(c);
		_exit(bad ? 1 : 0);
	}
	HT_CHECK(waitpid(pid, &status, 0) == pid);
	HT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the parent's task is untouched: it gets the lock on release */
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_lock_release(NULL, h));
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_task_free(t);
	hl_lock_free(l);
	hl_lock_free(h);
	hl_client_free(hc);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(many_waiters), HT_CASE(begin), HT_CASE(cancel_waiting),
        HT_CASE(cancel_race), HT_CASE(cancel_in_flight), HT_CASE(client_fd),
        HT_CASE(waits), HT_CASE(close_pending), HT_CASE(free_pending),
        HT_CASE(interrupt), HT_CASE(wait_lost_task), HT_CASE(release_task),
        HT_CASE(bad_input), HT_CASE(kinds), HT_CASE(kinds_fair_cancel_and_read),
        HT_CASE(fork_child))
