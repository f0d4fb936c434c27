/*
 * The blocking queue (Redisson's RBlockingQueue, core/grid/
 * blocking_queue.kind, docs/grid-blocking-queue.md): a take wakes when
 * another client offers, poll_timeout gives nil after its timeout, FIFO;
 * nothing lost and nothing twice: a BLMOVE whose reply is lost (the
 * connection reset after the pop reached Redis), a taker killed (kill -9)
 * after its pop, a cancel of a waiting take, producers and consumers in
 * several processes; Redisson's consumers (BLPOP) and producers (RPUSH)
 * share it; a cluster (hash tags), a Sentinel failover and a restart.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int one_blocked(void *arg)
{
	return blocked_clients(arg) >= 1;
}

/* q's recover (a blocking or a bounded blocking queue): how many
 * elements of ended leases it gave back. */
static int64_t recover_of(hl_object *q)
{
	int64_t n = 0;
	if (hl_object_kind(q) == HL_KIND_BOUNDED_BLOCKING_QUEUE)
		HT_OK(hl_bounded_blocking_queue_recover(&n, q));
	else
		HT_OK(hl_blocking_queue_recover(&n, q));
	return n;
}

/* After a recover (a lease that ended is given back), no takers left. */
static ht_redis *gone_r;
static int takers_gone(void *arg)
{
	recover_of(arg);
	return keys_like(gone_r, "hilock_consumers:*") == 0;
}

static int inflight_there(void *arg)
{
	return keys_like(arg, "hilock_inflight:*") == 1;
}

typedef struct taker {
	hl_object *q;
	int64_t timeout; /* -1: take */
	hl_cancel *cancel;
	int bounded; /* q a bounded blocking queue (a take) */
	int rc;
	char got[64], err[300];
	atomic_int done;
	int64_t took_ms;
} taker;

static void *take_run(void *arg)
{
	taker *t = arg;
	hl_value *v = NULL;
	int64_t t0 = ht_now_ms();
	if (t->cancel)
		t->rc = hl_object_call_ex(&v, t->q, HL_OP_BLOCKING_QUEUE_TAKE,
		                          NULL, 0, -1, t->cancel);
	else if (t->bounded)
		t->rc = hl_bounded_blocking_queue_take(&v, t->q);
	else if (t->timeout < 0)
		t->rc = hl_blocking_queue_take(&v, t->q);
	else
		t->rc = hl_blocking_queue_poll_timeout(&v, t->q, t->timeout);
	t->took_ms = ht_now_ms() - t0;
	if (t->rc == HL_OK)
		str(v, t->got, sizeof t->got);
	else
		snprintf(t->err, sizeof t->err, "%s", hl_error_last());
	hl_value_free(v);
	atomic_store(&t->done, 1);
	return NULL;
}

static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:ops");
	hl_value *v = NULL;
	char buf[128];
	int ok = 0;
	int64_t n = 0;

	HT_OK(hl_blocking_queue_offer(&ok, q, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_blocking_queue_put(q, "b", 1));
	HT_OK(hl_blocking_queue_put(q, "c\0d", 3));
	HT_OK(hl_blocking_queue_put(q, "", 0));
	HT_EQ(raw_list(r, "bq:ops", buf, sizeof buf), 4);
	HT_STREQ(buf, "a|b|c0d|");
	HT_OK(hl_blocking_queue_size(&n, q));
	HT_EQ(n, 4);
	TAKE_STR(hl_blocking_queue_peek(&tv_, q), "a");
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "a");
	TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 100), "b");
	TAKE_STR(hl_blocking_queue_poll(&tv_, q), "c0d");
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "");
	/* drain_to: all, or the first max */
	HT_OK(hl_blocking_queue_put(q, "x", 1));
	HT_OK(hl_blocking_queue_put(q, "y", 1));
	HT_OK(hl_blocking_queue_put(q, "z", 1));
	HT_OK(hl_blocking_queue_drain_to(&v, q, 2));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 1), buf, sizeof buf), "y");
	hl_value_free(v);
	HT_OK(hl_object_call(&v, q, HL_OP_BLOCKING_QUEUE_DRAIN_TO, NULL, 0));
	HT_EQ(hl_value_len(v), 1);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "z");
	hl_value_free(v);
	/* every hilock key gone once the takes ended (markers aside) */
	HT_EQ(ht_exists(r, HT_S("bq:ops")), 0);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	HT_OK(hl_blocking_queue_recover(&n, q));
	HT_EQ(n, 0);
	hl_object_free(q);
	hl_client_free(c);
}

/* A take waiting in Redis wakes when another client offers, and gets the
 * element; while it waits, its lease is in the takers' hash. */
static void wake(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q = bq(c, "bq:wake"), *pq = bq(p, "bq:wake");
	static taker t;
	pthread_t th;
	int ok = 0;
	memset(&t, 0, sizeof t);
	t.q = q;
	t.timeout = -1;
	th = ht_thread_start(take_run, &t);
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	HT_EQ(atomic_load(&t.done), 0);
	HT_EQ(keys_like(r, "hilock_consumers:{bq:wake}"), 1);
	HT_OK(hl_blocking_queue_offer(&ok, pq, "hello", 5));
	ht_thread_join(th, 10000);
	HT_EQ(atomic_load(&t.done), 1);
	HT_OK(t.rc);
	HT_STREQ(t.got, "hello");
	HT_EQ(ht_exists(r, HT_S("bq:wake")), 0);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
}

/* poll_timeout gives nil after about its timeout, leaving no key; a
 * take renews its lease in slices (a third of the lease) while it waits. */
static void poll_timeout(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 900); /* lease 900 ms: slices of 300 */
	hl_object *q = bq(c, "bq:timeout");
	hl_value *v = NULL;
	int64_t t0 = ht_now_ms(), el;
	HT_OK(hl_blocking_queue_poll_timeout(&v, q, 1200));
	el = ht_now_ms() - t0;
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_CHECKF(el >= 1150 && el < 6000, "returned after %lld ms",
	          (long long)el);
	HT_EQ(keys_like(r, "hilock_*"), 0);
	t0 = ht_now_ms();
	HT_OK(hl_blocking_queue_poll_timeout(&v, q, 1));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	HT_CHECK(ht_now_ms() - t0 < 3000);
	hl_value_free(v);
	/* a short timeout still looks once, also when the prep outlasted
	 * it: an element there is answered */
	{
		int ok = 0;
		HT_OK(hl_blocking_queue_offer(&ok, q, "here", 4));
		TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 1), "here");
		TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 1), "(nil)");
		HT_EQ(keys_like(r, "hilock_*"), 0);
	}
	hl_object_free(q);
	hl_client_free(c);
}

static void fifo(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:fifo");
	char v[16], want[16];
	int i, ok;
	for (i = 0; i < 200; i++) {
		int n = snprintf(v, sizeof v, "%d", i);
		HT_OK(hl_blocking_queue_offer(&ok, q, v, (size_t)n));
	}
	for (i = 0; i < 200; i++) {
		snprintf(want, sizeof want, "%d", i);
		if (i % 2)
			TAKE_STR(hl_blocking_queue_take(&tv_, q), want);
		else
			TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 1000),
			         want);
	}
	HT_EQ(keys_like(r, "hilock_*"), 0);
	hl_object_free(q);
	hl_client_free(c);
}

/* The reply of the command that moved an element is lost (held by the
 * proxy, then every connection reset): a BLMOVE (the take waited on an
 * empty queue) or, in_prep, the prep script (the take found the element
 * waiting and the prep moved it). The element waits in the take's
 * in-flight list (seen with raw commands), the take answers it once it
 * reconnected (the prep sent again answers it), and it is delivered
 * exactly once (the queue and the in-flight lists empty, a second take
 * gets nothing). */
static void lost_move(const char *name, int in_prep)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c, *p = ht_client(r, 0);
	hl_object *q, *pq = bq(p, name);
	static taker t;
	pthread_t th;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.retry_attempts = 40;
	o.retry_delay_ms = 50;
	o.watchdog_timeout_ms = 900; /* slices of 300 ms */
	c = ht_client_url(px->url, &o);
	q = bq(c, name);
	memset(&t, 0, sizeof t);
	t.q = q;
	t.timeout = -1;
	if (in_prep) {
		/* connected, and the scripts loaded, before the delay */
		HT_OK(hl_blocking_queue_poll_timeout(&v, q, 1));
		HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
		hl_value_free(v);
		v = NULL;
		HT_OK(hl_blocking_queue_offer(&ok, pq, "only", 4));
		HT_OK(hl_blocking_queue_offer(&ok, pq, "next", 4));
		HT_EQ(raw_list(r, name, buf, sizeof buf), 2);
		ht_proxy_cmd(px, "delay 3000"); /* the prep's reply held */
		th = ht_thread_start(take_run, &t);
	} else {
		th = ht_thread_start(take_run, &t);
		HT_CHECK(ht_wait_until(one_blocked, r, 10000));
		ht_proxy_cmd(px, "delay 3000"); /* its reply held */
		HT_OK(hl_blocking_queue_offer(&ok, pq, "only", 4));
		HT_OK(hl_blocking_queue_offer(&ok, pq, "next", 4));
	}
	HT_CHECK(ht_wait_until(inflight_there, r, 10000));
	HT_EQ(raw_list(r, name, buf, sizeof buf), 1); /* "next" left */
	HT_EQ(atomic_load(&t.done), 0);
	ht_proxy_cmd(px, "reset"); /* the reply is lost for good */
	ht_proxy_cmd(px, "delay 0");
	ht_thread_join(th, 20000);
	HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
	HT_STREQ(t.got, "only");
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(raw_list(r, name, buf, sizeof buf), 1);
	HT_STREQ(buf, "next");
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "next");
	HT_OK(hl_blocking_queue_poll_timeout(&v, q, 200));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL); /* none twice */
	hl_value_free(v);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	/* An attempt given up was killed on the server (CLIENT KILL), so its
	 * entry usually went with the claim; when the kill could not reach
	 * Redis (the reset raced it on a loaded machine) the entry keeps a
	 * short lease instead. Either way a recover after it ends leaves no
	 * taker and gives nothing back: the element was delivered once. */
	gone_r = r;
	HT_CHECK(ht_wait_until(takers_gone, q, 10000));
	HT_EQ(raw_list(r, name, buf, sizeof buf), 0);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
	ht_proxy_stop(px);
}

static void lost_reply(void)
{
	lost_move("bq:lost", 0);
}

/* Takes as tasks started while elements wait (8 threads, a client each,
 * so each start makes a pump of its own that hands an element at once):
 * the start must not touch its waiter once the lock is let go (the task
 * may have ended and freed it: bench's 16 Go consumers crashed there).
 * The window is short: this case exercises the path, and checks every
 * element came once; it did not catch the bug every time. */
#define RACERS      8
#define RACE_ROUNDS 40
static ht_redis *race_r;
static void *race_run(void *arg)
{
	hl_client *c = ht_client(race_r, 0);
	hl_object *q = bq(c, "bq:race");
	int i, ok = 0, res = 0;
	long *got = arg;
	for (i = 0; i < RACE_ROUNDS; i++) {
		hl_task *t = NULL;
		const hl_value *tv = NULL;
		HT_OK(hl_blocking_queue_offer(&ok, q, "e", 1));
		HT_OK(hl_object_call_start(&t, q, HL_OP_BLOCKING_QUEUE_TAKE,
		                           NULL, 0));
		HT_OK(ht_task_result(t, &res, 20000));
		HT_OK(hl_task_value(&tv, t));
		if (hl_value_type(tv) == HL_VALUE_BYTES)
			(*got)++;
		hl_task_free(t);
	}
	hl_object_free(q);
	hl_client_free(c);
	return NULL;
}

static void tasks_race(void)
{
	pthread_t th[RACERS];
	long got[RACERS] = {0}, total = 0;
	int i;
	race_r = ht_redis_default();
	for (i = 0; i < RACERS; i++)
		th[i] = ht_thread_start(race_run, &got[i]);
	for (i = 0; i < RACERS; i++) {
		ht_thread_join(th[i], 60000);
		total += got[i];
	}
	HT_EQ(total, RACERS * RACE_ROUNDS);
	HT_EQ(ht_exists(race_r, HT_S("bq:race")), 0);
	HT_EQ(keys_like(race_r, "hilock_inflight:*"), 0);
}

/* A take's ack that reaches Redis after the take's lease ended, once
 * another consumer already gave its element back (recover) and took it:
 * that element is not the late take's any more, so it does not answer it
 * (it would come twice); it takes the next one. The proxy delays both
 * ways by 700 ms, longer than half the 600 ms lease, so the BLMOVE's
 * reply and then the ack arrive after the lease; once for a blocking take and
 * once for a take as a task (the queue's pump). */
static int recovered(void *arg)
{
	return recover_of(arg) > 0;
}

static void late_ack(void)
{
	ht_redis *r = ht_redis_default();
	int round;
	for (round = 0; round < 2; round++) {
		ht_proxy *px = ht_proxy_start(r->port);
		hl_client_options o;
		hl_client *c, *p = ht_client(r, 0);
		hl_object *q, *pq = bq(p, "bq:late");
		static taker t;
		pthread_t th = 0;
		hl_task *task = NULL;
		const hl_value *tv = NULL;
		char got[64] = "";
		int ok = 0, res = 0;
		HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
		o.command_timeout_ms = 5000; /* no reply is lost: late */
		o.watchdog_timeout_ms = 600; /* slices of 200 ms */
		c = ht_client_url(px->url, &o);
		q = bq(c, "bq:late");
		if (round == 0) {
			memset(&t, 0, sizeof t);
			t.q = q;
			t.timeout = -1;
			th = ht_thread_start(take_run, &t);
		} else {
			HT_OK(hl_object_call_start(
			        &task, q, HL_OP_BLOCKING_QUEUE_TAKE, NULL, 0));
		}
		HT_CHECK(ht_wait_until(one_blocked, r, 10000));
		ht_proxy_cmd(px, "delay 700");
		HT_OK(hl_blocking_queue_offer(&ok, pq, "x", 1));
		HT_CHECK(ht_wait_until(inflight_there, r, 10000));
		/* the late take's lease ends: another consumer gives x back
		 * and takes it */
		HT_CHECK(ht_wait_until(recovered, pq, 10000));
		TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, pq, 2000), "x");
		HT_OK(hl_blocking_queue_offer(&ok, pq, "next", 4));
		if (round == 0) {
			ht_thread_join(th, 30000);
			HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
			snprintf(got, sizeof got, "%s", t.got);
		} else {
			HT_OK(ht_task_result(task, &res, 30000));
			HT_OK(hl_task_value(&tv, task));
			str(tv, got, sizeof got);
			hl_task_free(task);
		}
		/* x went to the other consumer only */
		HT_STREQ(got, "next");
		ht_proxy_cmd(px, "delay 0");
		HT_EQ(ht_exists(r, HT_S("bq:late")), 0);
		gone_r = r;
		HT_CHECK(ht_wait_until(takers_gone, pq, 10000));
		HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
		hl_object_free(q);
		hl_object_free(pq);
		hl_client_free(c);
		hl_client_free(p);
		ht_proxy_stop(px);
	}
}

/* As late_ack, but the late ack's reply is lost too (the connection is
 * reset while the ack waits in the proxy's 1000 ms delay): the take sends
 * it again, and that resend finds no in-flight list, as it would if its
 * own first run had removed it. The given-back set tells the two apart:
 * another consumer gave x back, so x is not this take's (it was received
 * there); it takes the next element, and x comes once. The reset falls
 * between the BLMOVE's reply reaching the take (+1000 ms after the offer)
 * and the ack's reply (+3000 ms): at +2000. (A machine so slow that the
 * ack leaves later than that sends it once, after the reset: the case of
 * late_ack, which passes either way.) Once for a blocking take, once for
 * a take as a task, and once for a bounded queue's take, whose ack must
 * not give x's unit of capacity back a second time. */
static void lost_late_ack(void)
{
	ht_redis *r = ht_redis_default();
	int round;
	for (round = 0; round < 3; round++) {
		ht_proxy *px = ht_proxy_start(r->port);
		hl_client_options o;
		hl_client *c, *p = ht_client(r, 0);
		hl_object *q = NULL, *pq = NULL;
		static taker t;
		pthread_t th = 0;
		hl_task *task = NULL;
		const hl_value *tv = NULL;
		char got[64] = "";
		int ok = 0, res = 0;
		int64_t t0, left, cap = 0;
		HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
		o.command_timeout_ms = 5000; /* the delay loses no reply */
		o.watchdog_timeout_ms = 600; /* slices of 200 ms */
		o.retry_delay_ms = 50;
		c = ht_client_url(px->url, &o);
		if (round < 2) {
			q = bq(c, "bq:lostlate");
			pq = bq(p, "bq:lostlate");
		} else {
			HT_OK(hl_bounded_blocking_queue_new(
			        &q, c, HT_S("bq:lostlate")));
			HT_OK(hl_bounded_blocking_queue_new(
			        &pq, p, HT_S("bq:lostlate")));
			HT_OK(hl_bounded_blocking_queue_try_set_capacity(
			        &ok, pq, 5));
			HT_EQ(ok, 1);
		}
		if (round != 1) {
			memset(&t, 0, sizeof t);
			t.q = q;
			t.timeout = -1;
			t.bounded = round == 2;
			th = ht_thread_start(take_run, &t);
		} else {
			HT_OK(hl_object_call_start(
			        &task, q, HL_OP_BLOCKING_QUEUE_TAKE, NULL, 0));
		}
		HT_CHECK(ht_wait_until(one_blocked, r, 10000));
		ht_proxy_cmd(px, "delay 1000");
		t0 = ht_now_ms();
		HT_OK(round < 2 ? hl_blocking_queue_offer(&ok, pq, "x", 1)
		                : hl_bounded_blocking_queue_offer(&ok, pq, "x",
		                                                  1));
		HT_CHECK(ht_wait_until(inflight_there, r, 10000));
		/* the take's lease ends: another consumer gives x back (the
		 * given-back set names the take) and takes it */
		HT_CHECK(ht_wait_until(recovered, pq, 10000));
		if (round < 2)
			TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, pq, 2000),
			         "x");
		else
			TAKE_STR(hl_bounded_blocking_queue_poll_timeout(
			                 &tv_, pq, 2000),
			         "x");
		HT_EQ(keys_like(r, "hilock_given_back:{bq:lostlate}"), 1);
		left = t0 + 2000 - ht_now_ms();
		if (left > 0)
			ht_sleep_ms(left);
		ht_proxy_cmd(px, "delay 0");
		ht_proxy_cmd(px, "reset");
		HT_OK(round < 2 ? hl_blocking_queue_offer(&ok, pq, "next", 4)
		                : hl_bounded_blocking_queue_offer(&ok, pq,
		                                                  "next", 4));
		if (round != 1) {
			ht_thread_join(th, 30000);
			HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
			snprintf(got, sizeof got, "%s", t.got);
		} else {
			HT_OK(ht_task_result(task, &res, 30000));
			HT_OK(hl_task_value(&tv, task));
			str(tv, got, sizeof got);
			hl_task_free(task);
		}
		/* x went to the other consumer only */
		HT_STREQ(got, "next");
		HT_EQ(ht_exists(r, HT_S("bq:lostlate")), 0);
		if (round == 2) {
			/* each take gave one unit back: x's once */
			HT_OK(hl_bounded_blocking_queue_remaining_capacity(&cap,
			                                                   pq));
			HT_EQ(cap, 5);
			ht_del(r, HT_S("redisson_bqs:{bq:lostlate}"));
		}
		gone_r = r;
		HT_CHECK(ht_wait_until(takers_gone, pq, 10000));
		HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
		HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
		/* the given-back set ends by itself (10 minutes) */
		HT_CHECK(ht_pttl(r, HT_S("hilock_given_back:{bq:lostlate}")) >
		         500000);
		ht_del(r, HT_S("hilock_given_back:{bq:lostlate}"));
		hl_object_free(q);
		hl_object_free(pq);
		hl_client_free(c);
		hl_client_free(p);
		ht_proxy_stop(px);
	}
}

/* A blocking take's ack keeps being sent past the client's usual retries
 * (here 2 x (300 + 100) ms), until its lease and those retries again have
 * passed: the proxy drops everything for 2 s just after the BLMOVE's
 * reply left Redis (it reaches the take 200 ms later, into the drop), so
 * no ack gets through until the network flows again. The take answers x
 * and its in-flight list is gone: acknowledged, so x never comes again.
 * (An ack that gave up after the usual retries would leave the list,
 * given back after the 6 s lease: x twice.) */
static void patient_ack(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c, *p = ht_client(r, 0);
	hl_object *q, *pq = bq(p, "bq:patient");
	static taker t;
	pthread_t th;
	int ok = 0;
	int64_t n = -1;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 300;
	o.connect_timeout_ms = 300;
	o.retry_attempts = 1;
	o.retry_delay_ms = 100;
	o.watchdog_timeout_ms = 6000; /* slices of 2 s */
	c = ht_client_url(px->url, &o);
	q = bq(c, "bq:patient");
	memset(&t, 0, sizeof t);
	t.q = q;
	t.timeout = -1;
	th = ht_thread_start(take_run, &t);
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	ht_proxy_cmd(px, "delay 200");
	HT_OK(hl_blocking_queue_offer(&ok, pq, "x", 1));
	/* the reply is in the proxy (held 200 ms); what follows is lost */
	ht_sleep_ms(50);
	ht_proxy_cmd(px, "drop on");
	ht_sleep_ms(2000);
	HT_EQ(atomic_load(&t.done), 0); /* still acknowledging */
	ht_proxy_cmd(px, "drop off");
	ht_proxy_cmd(px, "delay 0");
	ht_thread_join(th, 30000);
	HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
	HT_STREQ(t.got, "x");
	HT_CHECK(t.took_ms >= 2000);
	/* acknowledged: nothing in flight, no entry, nothing to give back */
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	HT_OK(hl_blocking_queue_recover(&n, pq));
	HT_EQ(n, 0);
	HT_EQ(ht_exists(r, HT_S("bq:patient")), 0);
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
	ht_proxy_stop(px);
}

/* The network black-holes a take's connection after its BLMOVE took an
 * element (nothing flows either way, nothing is closed): the take gives
 * that connection up, and once the network flows again it answers the
 * element that waits in the in-flight list, once. */
static void blackhole(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c, *p = ht_client(r, 0);
	hl_object *q, *pq = bq(p, "bq:hole");
	static taker t;
	pthread_t th;
	char buf[64];
	int ok = 0;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.connect_timeout_ms = 500;
	o.retry_attempts = 40;
	o.retry_delay_ms = 50;
	o.watchdog_timeout_ms = 3000; /* slices of 1 s */
	c = ht_client_url(px->url, &o);
	q = bq(c, "bq:hole");
	memset(&t, 0, sizeof t);
	t.q = q;
	t.timeout = -1;
	th = ht_thread_start(take_run, &t);
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	ht_proxy_cmd(px, "blackhole on");
	HT_OK(hl_blocking_queue_offer(&ok, pq, "held", 4));
	HT_CHECK(ht_wait_until(inflight_there, r, 10000));
	ht_sleep_ms(2000); /* the take's wait (1000 + 250 ms) broke */
	HT_CHECKF(!atomic_load(&t.done), "the take ended: %d %s", t.rc, t.err);
	ht_proxy_cmd(px, "blackhole off");
	ht_proxy_cmd(px, "reset");
	ht_thread_join(th, 20000);
	HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
	HT_STREQ(t.got, "held");
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(raw_list(r, "bq:hole", buf, sizeof buf), 0);
	TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 200), "(nil)");
	gone_r = r;
	HT_CHECK(ht_wait_until(takers_gone, q, 10000));
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
	ht_proxy_stop(px);
}

/* A taker process killed (kill -9) after its BLMOVE took an element and
 * before its answer came (the proxy holds it): another consumer gets the
 * element once the killed one's lease ended, at the head (before one
 * offered later), once. */
static void kill9(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client *p = ht_client(r, 1500);
	hl_object *pq = bq(p, "bq:kill");
	char url[200];
	pid_t pid;
	int ok = 0, st = 0;
	int64_t t0, el;
	snprintf(url, sizeof url, "%s", px->url);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client_options o;
		hl_client *c = NULL;
		hl_object *q = NULL;
		hl_value *v = NULL;
		hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
		o.watchdog_timeout_ms = 1500;
		if (hl_client_new(&c, url, &o) != HL_OK ||
		    hl_blocking_queue_new(&q, c, "bq:kill", 7) != HL_OK)
			_exit(3);
		hl_blocking_queue_take(&v, q);
		_exit(4); /* never: it is killed first */
	}
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	ht_proxy_cmd(px, "delay 60000");
	HT_OK(hl_blocking_queue_offer(&ok, pq, "orphan", 6));
	HT_CHECK(ht_wait_until(inflight_there, r, 10000));
	kill(pid, SIGKILL);
	HT_EQ(waitpid(pid, &st, 0), pid);
	HT_CHECK(WIFSIGNALED(st));
	HT_EQ(ht_exists(r, HT_S("bq:kill")), 0);
	HT_OK(hl_blocking_queue_offer(&ok, pq, "later", 5));
	t0 = ht_now_ms();
	/* the first take may come before the lease ends: it gets "later"
	 * then, or "orphan" once recovered; both come, once each */
	{
		char first[64] = "", second[64] = "";
		hl_value *v = NULL;
		HT_OK(hl_blocking_queue_poll_timeout(&v, pq, 10000));
		str(v, first, sizeof first);
		hl_value_free(v);
		HT_OK(hl_blocking_queue_poll_timeout(&v, pq, 10000));
		str(v, second, sizeof second);
		hl_value_free(v);
		el = ht_now_ms() - t0;
		HT_CHECKF((!strcmp(first, "later") &&
		           !strcmp(second, "orphan")) ||
		                  (!strcmp(first, "orphan") &&
		                   !strcmp(second, "later")),
		          "took %s then %s", first, second);
		HT_CHECKF(el < 9000, "recovered after %lld ms", (long long)el);
	}
	TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, pq, 100), "(nil)");
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	hl_object_free(pq);
	hl_client_free(p);
	ht_proxy_stop(px);
}

/* A waiting take cancelled: it ends HL_EINTERRUPTED, Redis no longer
 * blocks it, and an element offered after it stays in the queue (none is
 * moved to an in-flight list nobody reads). */
static int none_blocked(void *arg)
{
	return blocked_clients(arg) == 0;
}

static void cancel(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:cancel");
	hl_cancel *cn = NULL;
	static taker t;
	pthread_t th;
	char buf[32];
	int ok = 0;
	HT_OK(hl_cancel_new(&cn));
	memset(&t, 0, sizeof t);
	t.q = q;
	t.cancel = cn;
	th = ht_thread_start(take_run, &t);
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	hl_cancel_trigger(cn);
	ht_thread_join(th, 10000);
	HT_EQ(t.rc, HL_EINTERRUPTED);
	HT_CHECK(strstr(t.err, "interrupted") != NULL);
	HT_CHECK(ht_wait_until(none_blocked, r, 5000));
	HT_OK(hl_blocking_queue_offer(&ok, q, "kept", 4));
	HT_EQ(raw_list(r, "bq:cancel", buf, sizeof buf), 1);
	HT_STREQ(buf, "kept");
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	hl_cancel_free(cn);
	hl_object_free(q);
	hl_client_free(c);
}

/* Redisson's consumers BLPOP the same list (hilock's offers reach them),
 * and its producers RPUSH (hilock's takes get them). */
static void redisson_compat(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:compat");
	redisReply *x;
	int ok = 0;
	HT_OK(hl_blocking_queue_offer(&ok, q, "to-java", 7));
	x = ht_raw(ht_raw_of(r), "BLPOP bq:compat 1");
	HT_CHECK(x->type == REDIS_REPLY_ARRAY && x->elements == 2);
	HT_STREQ(x->element[1]->str, "to-java");
	freeReplyObject(x);
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH bq:compat j1 j2"));
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "j1");
	TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 500), "j2");
	hl_object_free(q);
	hl_client_free(c);
}

/* ---- producers and consumers in several processes ------------------------ */

enum { PROCS = 2, THREADS = 2, PRODUCERS = 2, PER = 1500 };
enum { TOTAL = PRODUCERS * PER };

typedef struct flow {
	hl_client *in, *out;
	atomic_int taken[TOTAL];
	atomic_int strange, failures, stop;
} flow;

static int num_of(const char *p, size_t len)
{
	char num[16];
	if (!p || len == 0 || len >= sizeof num)
		return -1;
	memcpy(num, p, len);
	num[len] = '\0';
	return atoi(num);
}

static void *consume_thread(void *arg)
{
	flow *f = arg;
	hl_object *q = bq(f->out, "bq:flow");
	int empty = 0;
	while (empty < 2) {
		hl_value *v = NULL;
		int rc = hl_blocking_queue_poll_timeout(&v, q, 700);
		if (rc == HL_OK && hl_value_type(v) == HL_VALUE_BYTES) {
			size_t len = 0;
			const char *p = hl_value_bytes(v, &len);
			int i = num_of(p, len);
			if (i < 0 || i >= TOTAL)
				atomic_fetch_add(&f->strange, 1);
			else
				atomic_fetch_add(&f->taken[i], 1);
			empty = 0;
		} else if (rc == HL_OK) {
			empty += atomic_load(&f->stop);
		} else {
			atomic_fetch_add(&f->failures, 1);
			fprintf(stderr, "take: %s\n", hl_error_last());
		}
		hl_value_free(v);
	}
	hl_object_free(q);
	return NULL;
}

typedef struct producer {
	flow *f;
	int id;
} producer;

static void *produce(void *arg)
{
	producer *w = arg;
	hl_object *q = bq(w->f->in, "bq:flow");
	char v[16];
	int i;
	for (i = 0; i < PER; i++) {
		int n = snprintf(v, sizeof v, "%d", w->id * PER + i);
		HT_OK(hl_blocking_queue_put(q, v, (size_t)n));
		if (i % 8 == 7)
			ht_sleep_ms(1);
	}
	hl_object_free(q);
	return NULL;
}

/* A child process: take until 2 empty polls after "done" appears, write
 * each element taken as a line to fd. */
static void child_consume(const char *url, int fd)
{
	hl_client *c = NULL;
	hl_object *q = NULL;
	int empty = 0;
	if (hl_client_new(&c, url, NULL) != HL_OK ||
	    hl_blocking_queue_new(&q, c, "bq:flow", 7) != HL_OK)
		_exit(3);
	while (empty < 2) {
		hl_value *v = NULL;
		int rc = hl_blocking_queue_poll_timeout(&v, q, 700);
		if (rc == HL_OK && hl_value_type(v) == HL_VALUE_BYTES) {
			size_t len = 0;
			const char *p = hl_value_bytes(v, &len);
			char line[32];
			int n = snprintf(line, sizeof line, "%d\n",
			                 num_of(p, len));
			if (write(fd, line, (size_t)n) != n)
				_exit(5);
			empty = 0;
		} else if (rc == HL_OK) {
			hl_value *d = NULL;
			hl_object *flag = NULL;
			if (hl_bucket_new(&flag, c, "bq:flow:done", 12) ==
			            HL_OK &&
			    hl_bucket_get(&d, flag) == HL_OK &&
			    hl_value_type(d) == HL_VALUE_BYTES)
				empty++;
			hl_value_free(d);
			hl_object_free(flag);
		} else {
			_exit(6);
		}
		hl_value_free(v);
	}
	hl_object_free(q);
	hl_client_free(c);
	_exit(0);
}

/* PROCS child processes and THREADS threads take (the threads through a
 * fault proxy that resets every connection now and then) while PRODUCERS
 * threads offer distinct elements: every element is taken exactly once
 * (the counts and the sets compared), none is left anywhere. */
static void many(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	static flow f;
	producer pw[PRODUCERS];
	pthread_t pt[PRODUCERS], ct[THREADS];
	pid_t pids[PROCS];
	int fds[PROCS][2];
	int i, k, twice = 0, never = 0;
	memset(&f, 0, sizeof f);
	ht_del(r, HT_S("bq:flow"));
	ht_del(r, HT_S("bq:flow:done"));
	for (k = 0; k < PROCS; k++) {
		HT_CHECK(pipe(fds[k]) == 0);
		pids[k] = fork();
		HT_CHECK(pids[k] >= 0);
		if (pids[k] == 0) {
			close(fds[k][0]);
			child_consume(r->url, fds[k][1]);
		}
		close(fds[k][1]);
	}
	f.in = ht_client(r, 0);
	f.out = ht_doubt_client(px->url, 40);
	for (i = 0; i < THREADS; i++)
		ct[i] = ht_thread_start(consume_thread, &f);
	for (i = 0; i < PRODUCERS; i++) {
		pw[i].f = &f;
		pw[i].id = i;
		pt[i] = ht_thread_start(produce, &pw[i]);
	}
	for (i = 0; i < 4; i++) {
		ht_sleep_ms(300);
		ht_proxy_cmd(px, "reset");
	}
	for (i = 0; i < PRODUCERS; i++)
		ht_thread_join(pt[i], 60000);
	atomic_store(&f.stop, 1);
	freeReplyObject(ht_raw(ht_raw_of(r), "SET bq:flow:done 1"));
	for (i = 0; i < THREADS; i++)
		ht_thread_join(ct[i], 60000);
	for (k = 0; k < PROCS; k++) {
		FILE *in = fdopen(fds[k][0], "r");
		char line[32];
		int st = 0;
		while (fgets(line, sizeof line, in)) {
			int n = atoi(line);
			if (n < 0 || n >= TOTAL)
				atomic_fetch_add(&f.strange, 1);
			else
				atomic_fetch_add(&f.taken[n], 1);
		}
		fclose(in);
		HT_EQ(waitpid(pids[k], &st, 0), pids[k]);
		HT_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		          "child %d ended %d", k, st);
	}
	for (i = 0; i < TOTAL; i++) {
		int n = atomic_load(&f.taken[i]);
		twice += n > 1;
		never += n == 0;
	}
	HT_CHECKF(twice == 0, "%d elements taken twice", twice);
	HT_CHECKF(never == 0, "%d elements never taken", never);
	HT_EQ(atomic_load(&f.strange), 0);
	HT_EQ(atomic_load(&f.failures), 0);
	HT_CHECK(llen_is(r, "bq:flow", 0));
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	hl_client_free(f.in);
	hl_client_free(f.out);
	ht_proxy_stop(px);
}

/* A cluster: a name with a hash tag ({user1}:jobs: its keys
 * hilock_consumers:{user1}:jobs, hilock_inflight:{user1}:jobs:<id>), one
 * without ({jobs}), and one with braces but no tag (a}b: a tag of the
 * same slot is made); an expired taker's element given back. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	const char *names[] = {"{user1}:jobs", "jobs", "a}b", "{}x"};
	hl_value *v = NULL;
	hl_arg a[3];
	size_t i;
	int ok = 0;
	for (i = 0; i < 4; i++) {
		hl_object *q = bq(c, names[i]);
		HT_OK(hl_blocking_queue_offer(&ok, q, "j1", 2));
		HT_OK(hl_blocking_queue_put(q, "j2", 2));
		TAKE_STR(hl_blocking_queue_take(&tv_, q), "j1");
		TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 300), "j2");
		TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 300), "(nil)");
		hl_object_free(q);
	}
	/* a dead taker's in-flight element, by the documented key names */
	{
		const char *w1[] = {"HSET", "hilock_consumers:{user1}:jobs",
		                    "dead", "1"};
		const char *w2[] = {
		        "RPUSH", "hilock_inflight:{user1}:jobs:dead", "orphan"};
		size_t l1[] = {4, 29, 4, 1}, l2[] = {5, 33, 6};
		hl_object *q = bq(c, "{user1}:jobs");
		HT_OK(hl_client_command(&v, c, 4, w1, l1, NULL, 0, 1));
		hl_value_free(v);
		HT_OK(hl_client_command(&v, c, 3, w2, l2, NULL, 0, 1));
		hl_value_free(v);
		HT_OK(hl_blocking_queue_put(q, "fresh", 5));
		TAKE_STR(hl_blocking_queue_take(&tv_, q), "orphan");
		TAKE_STR(hl_blocking_queue_take(&tv_, q), "fresh");
		hl_object_free(q);
	}
	(void)a;
	/* a take waiting through a failover and a kill -9 of the master of
	 * its slot: it waits again on the new master and gets what is
	 * offered there */
	{
		static taker t;
		pthread_t th;
		int slot = ht_cluster_slot_of(cl, HT_S("{user1}:jobs")), port;
		hl_object *q = bq(c, "{user1}:jobs");
		memset(&t, 0, sizeof t);
		t.q = bq(c, "{user1}:jobs");
		t.timeout = -1;
		th = ht_thread_start(take_run, &t);
		ht_sleep_ms(300);
		port = ht_cluster_failover(cl,
		                           ht_cluster_master_of_slot(cl, slot));
		port = ht_cluster_kill_master(cl, port);
		(void)port;
		HT_CHECKF(!atomic_load(&t.done), "the take ended: %d %s (%s)",
		          t.rc, t.err, t.got);
		{
			int k;
			for (k = 0; k < 150 && !atomic_load(&t.done); k++) {
				if (k % 10 == 0) {
					hl_value *x = NULL; /* once, or again */
					hl_blocking_queue_poll(&x, q);
					hl_value_free(x);
					hl_blocking_queue_offer(&ok, q, "after",
					                        5);
				}
				ht_sleep_ms(100);
			}
		}
		ht_thread_join(th, 30000);
		HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
		HT_STREQ(t.got, "after");
		hl_object_free(t.q);
		hl_object_free(q);
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A take waiting when the master dies (Sentinel failover), and one
 * waiting when a single server restarts: each waits on, on the server
 * there is afterwards, and gets what is offered there. */
static void sentinel_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c, *p;
	char url[600];
	static taker t;
	pthread_t th;
	int old, ok = 0;
	hl_object *pq;
	ht_failover_options(&o, 3000);
	ht_sentinel_url(s, url, sizeof url);
	c = ht_client_url(url, &o);
	p = ht_client_url(url, &o);
	memset(&t, 0, sizeof t);
	t.q = bq(c, "bq:failover");
	t.timeout = -1;
	pq = bq(p, "bq:failover");
	th = ht_thread_start(take_run, &t);
	ht_sleep_ms(500);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	HT_EQ(atomic_load(&t.done), 0);
	{
		int k;
		for (k = 0; k < 100 && !atomic_load(&t.done); k++) {
			HT_OK(hl_blocking_queue_offer(&ok, pq, "after", 5));
			ht_sleep_ms(100);
			if (!atomic_load(&t.done)) {
				hl_value *v = NULL; /* not taken yet: back */
				hl_blocking_queue_poll(&v, pq);
				hl_value_free(v);
			}
		}
	}
	ht_thread_join(th, 20000);
	HT_OK(t.rc);
	HT_STREQ(t.got, "after");
	hl_object_free(t.q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
	ht_sentinel_destroy(s);
}

static void restart(void)
{
	ht_redis *r = ht_redis_start(NULL);
	hl_client *c = ht_client(r, 3000);
	hl_object *q = bq(c, "bq:restart");
	static taker t;
	pthread_t th;
	memset(&t, 0, sizeof t);
	t.q = q;
	t.timeout = 20000;
	th = ht_thread_start(take_run, &t);
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	ht_redis_restart(r);
	HT_EQ(atomic_load(&t.done), 0);
	HT_CHECK(ht_wait_until(one_blocked, r, 15000)); /* waits again */
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH bq:restart back"));
	ht_thread_join(th, 20000);
	HT_OK(t.rc);
	HT_STREQ(t.got, "back");
	hl_object_free(q);
	hl_client_free(c);
	ht_redis_destroy(r);
}

/* The task forms: 300 tasks waiting on one queue cost no thread and no
 * connection each (Redis sees one blocked client: the queue's pump); each
 * is answered in the order they began (FIFO), one element each. A
 * poll_timeout task gives nil after its timeout; cancelled tasks end
 * HL_EINTERRUPTED, the pump's wait ends, and later offers stay queued. */
enum { NTASKS = 300 };

static void tasks(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q = bq(c, "bq:tasks"), *pq = bq(p, "bq:tasks");
	static hl_task *t[NTASKS];
	hl_arg a;
	char buf[64], want[16];
	int i, ok = 0, res = 0, threads;
	int64_t t0;
	const hl_value *tv = NULL;
	threads = ht_threads_now();
	for (i = 0; i < NTASKS; i++)
		HT_OK(hl_object_call_start(&t[i], q, HL_OP_BLOCKING_QUEUE_TAKE,
		                           NULL, 0));
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	ht_sleep_ms(200);
	HT_EQ(blocked_clients(r), 1);
	HT_CHECKF(ht_threads_now() <= threads + 3, "%d threads, %d before",
	          ht_threads_now(), threads);
	for (i = 0; i < NTASKS; i++) {
		int n = snprintf(buf, sizeof buf, "%d", i);
		HT_OK(hl_blocking_queue_put(pq, buf, (size_t)n));
	}
	for (i = 0; i < NTASKS; i++) {
		HT_OK(ht_task_result(t[i], &res, 20000));
		HT_OK(hl_task_value(&tv, t[i]));
		snprintf(want, sizeof want, "%d", i);
		HT_STREQ(str(tv, buf, sizeof buf), want);
		hl_task_free(t[i]);
	}
	HT_EQ(ht_exists(r, HT_S("bq:tasks")), 0);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	/* poll_timeout as a task: nil after about its timeout */
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_INT;
	a.i = 400;
	t0 = ht_now_ms();
	HT_OK(hl_object_call_start(&t[0], q, HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT,
	                           &a, 1));
	HT_OK(ht_task_result(t[0], &res, 10000));
	HT_CHECK(ht_now_ms() - t0 >= 380);
	HT_OK(hl_task_value(&tv, t[0]));
	HT_CHECK(hl_value_type(tv) == HL_VALUE_NIL);
	hl_task_free(t[0]);
	/* cancelled: nothing taken for them */
	for (i = 0; i < 3; i++)
		HT_OK(hl_object_call_start(&t[i], q, HL_OP_BLOCKING_QUEUE_TAKE,
		                           NULL, 0));
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	for (i = 0; i < 3; i++) {
		hl_task_cancel(t[i]);
		HT_RC(ht_task_result(t[i], &res, 10000), HL_EINTERRUPTED);
		hl_task_free(t[i]);
	}
	HT_CHECK(ht_wait_until(none_blocked, r, 10000));
	HT_OK(hl_blocking_queue_offer(&ok, pq, "kept", 4));
	ht_sleep_ms(100);
	HT_EQ(raw_list(r, "bq:tasks", buf, sizeof buf), 1);
	HT_STREQ(buf, "kept");
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	/* a client closed under waiting tasks: they end HL_ECLOSED */
	HT_OK(hl_object_call_start(&t[0], pq, HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT,
	                           &a, 1));
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_close(p);
	HT_CHECK(ht_task_result(t[0], &res, 10000) != HL_OK ||
	         hl_task_done(t[0]));
	hl_task_free(t[0]);
	hl_client_free(p);
}

/* The blocking deque (RBlockingDeque): takes at either end, an expired
 * taker's element given back to the end it was taken from (the id of a
 * take from the tail starts with r), a task form at the tail. */
static void deque(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = NULL;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	char buf[64];
	int ok = 0, res = 0;
	HT_OK(hl_blocking_deque_new(&d, c, HT_S("bq:deque")));
	HT_OK(hl_blocking_deque_put_last(d, "b", 1));
	HT_OK(hl_blocking_deque_put_first(d, "a", 1));
	HT_OK(hl_blocking_deque_offer_last(&ok, d, "c", 1));
	HT_OK(hl_blocking_deque_offer(&ok, d, "d", 1));
	HT_EQ(raw_list(r, "bq:deque", buf, sizeof buf), 4);
	HT_STREQ(buf, "a|b|c|d");
	TAKE_STR(hl_blocking_deque_take_last(&tv_, d), "d");
	TAKE_STR(hl_blocking_deque_take_first(&tv_, d), "a");
	TAKE_STR(hl_blocking_deque_poll_last_timeout(&tv_, d, 100), "c");
	TAKE_STR(hl_blocking_deque_take(&tv_, d), "b");
	TAKE_STR(hl_blocking_deque_poll_last_timeout(&tv_, d, 100), "(nil)");
	/* expired takers: one from the tail, one from the head */
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH bq:deque m"));
	freeReplyObject(
	        ht_raw(ht_raw_of(r),
	               "HSET hilock_consumers:{bq:deque} rdead 1 hdead 1"));
	freeReplyObject(ht_raw(ht_raw_of(r),
	                       "RPUSH hilock_inflight:{bq:deque}:rdead tail"));
	freeReplyObject(ht_raw(ht_raw_of(r),
	                       "RPUSH hilock_inflight:{bq:deque}:hdead head"));
	TAKE_STR(hl_blocking_deque_take_last(&tv_, d), "tail");
	TAKE_STR(hl_blocking_deque_take_first(&tv_, d), "head");
	TAKE_STR(hl_blocking_deque_take_last(&tv_, d), "m");
	/* no taker left; the two given back are named for a late ack */
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(raw_zcard(r, "hilock_given_back:{bq:deque}"), 2);
	ht_del(r, HT_S("hilock_given_back:{bq:deque}"));
	HT_EQ(keys_like(r, "hilock_*"), 0);
	/* a task at the tail */
	HT_OK(hl_object_call_start(&t, d, HL_OP_BLOCKING_DEQUE_TAKE_LAST, NULL,
	                           0));
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH bq:deque x y"));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "y");
	hl_task_free(t);
	HT_EQ(raw_list(r, "bq:deque", buf, sizeof buf), 1);
	HT_STREQ(buf, "x");
	ht_del(r, HT_S("bq:deque"));
	hl_object_free(d);
	hl_client_free(c);
}

/* The bounded queue (RBoundedBlockingQueue): Redisson's capacity key,
 * offers that take a unit in the same script, takes and polls (of one and
 * of many) that give units back and publish the new value (a raw
 * subscriber sees it), puts that wait for room and wake on a give-back,
 * as calls and as tasks; no capacity set is refused. */
static hl_object *bbq(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_bounded_blocking_queue_new(&o, c, name, strlen(name)));
	return o;
}

static long long capacity(ht_redis *r)
{
	redisReply *x = ht_raw(ht_raw_of(r), "GET redisson_bqs:{bq:bounded}");
	long long n = x->type == REDIS_REPLY_STRING ? atoll(x->str) : -1;
	freeReplyObject(x);
	return n;
}

typedef struct putter {
	hl_object *q;
	int rc;
	atomic_int done;
} putter;

static void *put_run(void *arg)
{
	putter *p = arg;
	p->rc = hl_bounded_blocking_queue_put(p->q, "c", 1);
	atomic_store(&p->done, 1);
	return NULL;
}

static int put_waits(void *arg)
{
	redisReply *x = ht_raw(ht_raw_of(arg), "PUBSUB NUMSUB %s",
	                       "redisson_sc:redisson_bqs:{bq:bounded}");
	int ok = x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
	         x->element[1]->integer >= 1;
	freeReplyObject(x);
	return ok;
}

static void bounded(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bbq(c, "bq:bounded");
	redisContext *sub = ht_raw_new(r);
	redisReply *x;
	static putter pt;
	pthread_t th;
	hl_value *v = NULL;
	hl_task *t = NULL;
	hl_arg a[2];
	char buf[64];
	int ok = 0, res = 0;
	int64_t n = 0, t0;
	HT_RC(hl_bounded_blocking_queue_offer(&ok, q, "a", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "has not been set") != NULL);
	HT_OK(hl_bounded_blocking_queue_try_set_capacity(&ok, q, 2));
	HT_EQ(ok, 1);
	HT_OK(hl_bounded_blocking_queue_try_set_capacity(&ok, q, 5));
	HT_EQ(ok, 0);
	HT_EQ(capacity(r), 2);
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "b", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "c", 1));
	HT_EQ(ok, 0); /* full */
	HT_OK(hl_bounded_blocking_queue_remaining_capacity(&n, q));
	HT_EQ(n, 0);
	t0 = ht_now_ms();
	HT_OK(hl_bounded_blocking_queue_offer_timeout(&ok, q, "c", 1, 300));
	HT_EQ(ok, 0);
	HT_CHECK(ht_now_ms() - t0 >= 280);
	/* a put waits for room; a take gives a unit back and publishes it */
	x = redisCommand(sub,
	                 "SUBSCRIBE redisson_sc:redisson_bqs:{bq:bounded}");
	freeReplyObject(x);
	memset(&pt, 0, sizeof pt);
	pt.q = q;
	th = ht_thread_start(put_run, &pt);
	HT_CHECK(ht_wait_until(put_waits, r, 10000));
	ht_sleep_ms(100);
	HT_EQ(atomic_load(&pt.done), 0);
	TAKE_STR(hl_bounded_blocking_queue_take(&tv_, q), "a");
	HT_CHECK(redisGetReply(sub, (void **)&x) == REDIS_OK);
	HT_CHECK(x->type == REDIS_REPLY_ARRAY && x->elements == 3);
	HT_STREQ(x->element[2]->str, "1"); /* the value after the take */
	freeReplyObject(x);
	ht_thread_join(th, 10000);
	HT_OK(pt.rc);
	HT_EQ(raw_list(r, "bq:bounded", buf, sizeof buf), 2);
	HT_STREQ(buf, "b|c");
	HT_EQ(capacity(r), 0);
	/* polls of one and of many give their units back (Redisson #2998) */
	TAKE_STR(hl_bounded_blocking_queue_poll(&tv_, q), "b");
	HT_EQ(capacity(r), 1);
	HT_OK(hl_bounded_blocking_queue_poll_many(&v, q, 5));
	HT_EQ(hl_value_len(v), 1);
	hl_value_free(v);
	HT_EQ(capacity(r), 2);
	TAKE_STR(hl_bounded_blocking_queue_poll_timeout(&tv_, q, 100), "(nil)");
	HT_EQ(capacity(r), 2);
	/* as tasks: a put that waits, woken by a drain */
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "x", 1));
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "y", 1));
	memset(a, 0, sizeof a);
	a[0].type = HL_ARG_BYTES;
	a[0].bytes = "z";
	a[0].len = 1;
	HT_OK(hl_object_call_start(&t, q, HL_OP_BOUNDED_BLOCKING_QUEUE_PUT, a,
	                           1));
	ht_sleep_ms(200);
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_bounded_blocking_queue_drain_to(&v, q, -1));
	HT_EQ(hl_value_len(v), 2);
	hl_value_free(v);
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_EQ(raw_list(r, "bq:bounded", buf, sizeof buf), 1);
	HT_STREQ(buf, "z");
	HT_EQ(capacity(r), 1);
	/* the task form of a take gives its unit back too */
	HT_OK(hl_object_call_start(&t, q, HL_OP_BOUNDED_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_EQ(capacity(r), 2);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	redisFree(sub);
	ht_del(r, HT_S("redisson_bqs:{bq:bounded}"));
	hl_object_free(q);
	hl_client_free(c);
}

/* A bounded queue's offer and put whose replies are lost after they
 * landed (the proxy holds them past the command timeout): each is sent
 * again with its request marker and answers true, one element and one
 * unit each. */
static int one_in(void *arg)
{
	return llen_is(arg, "bq:blost", 1);
}

static int two_in(void *arg)
{
	return llen_is(arg, "bq:blost", 2);
}

static void bounded_lost(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(px->url, 40);
	hl_object *q = NULL;
	hl_task *t = NULL;
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	hl_arg a;
	int ok = 0, res = 0;
	HT_OK(hl_bounded_blocking_queue_new(&q, c, HT_S("bq:blost")));
	HT_OK(hl_bounded_blocking_queue_try_set_capacity(&ok, q, 5));
	/* the scripts cached (else the late first copy meets NOSCRIPT) */
	HT_OK(hl_bounded_blocking_queue_offer(&ok, q, "w", 1));
	HT_OK(hl_bounded_blocking_queue_poll(&v, q));
	hl_value_free(v);
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_BYTES;
	a.bytes = "o";
	a.len = 1;
	ht_proxy_cmd(px, "delay 400");
	HT_OK(hl_object_call_start(&t, q, HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER,
	                           &a, 1));
	HT_CHECK(ht_wait_until(one_in, r, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(px, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_int(tv), 1);
	hl_task_free(t);
	HT_CHECK(llen_is(r, "bq:blost", 1));
	a.bytes = "p";
	ht_proxy_cmd(px, "delay 400");
	HT_OK(hl_object_call_start(&t, q, HL_OP_BOUNDED_BLOCKING_QUEUE_PUT, &a,
	                           1));
	HT_CHECK(ht_wait_until(two_in, r, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(px, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_CHECK(llen_is(r, "bq:blost", 2));
	{
		redisReply *x =
		        ht_raw(ht_raw_of(r), "GET redisson_bqs:{bq:blost}");
		HT_STREQ(x->str, "3");
		freeReplyObject(x);
	}
	ht_del(r, HT_S("bq:blost"));
	ht_del(r, HT_S("redisson_bqs:{bq:blost}"));
	hl_object_free(q);
	hl_client_free(c);
	ht_proxy_stop(px);
}

/* A take that finds an element costs two round trips: the prep script
 * moves it into the take's in-flight list itself (no BLMOVE), then the
 * ack; the element is delivered once and nothing of the take is left. */
static void round_trips(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:rtt");
	hl_object *d = NULL;
	long long mv, ev;
	char buf[64];
	int ok = 0;
	HT_OK(hl_blocking_deque_new(&d, c, HT_S("bq:rttd")));
	HT_OK(hl_blocking_queue_offer(&ok, q, "warm", 4));
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "warm"); /* scripts loaded */
	HT_OK(hl_blocking_queue_offer(&ok, q, "a", 1));
	HT_OK(hl_blocking_queue_offer(&ok, q, "b", 1));
	HT_OK(hl_blocking_queue_offer(&ok, q, "c", 1));
	mv = ht_cmd_calls(r, "blmove");
	ev = ht_cmd_calls(r, "evalsha");
	TAKE_STR(hl_blocking_queue_take(&tv_, q), "a");
	TAKE_STR(hl_blocking_queue_poll_timeout(&tv_, q, 5000), "b");
	HT_EQ(ht_cmd_calls(r, "blmove") - mv, 0);
	HT_EQ(ht_cmd_calls(r, "evalsha") - ev, 4); /* prep + ack, twice */
	HT_EQ(keys_like(r, "hilock_*"), 0);
	HT_EQ(raw_list(r, "bq:rtt", buf, sizeof buf), 1);
	HT_STREQ(buf, "c");
	/* from the tail of a deque: the same, from the right end */
	HT_OK(hl_blocking_deque_put_last(d, "x", 1));
	HT_OK(hl_blocking_deque_put_last(d, "y", 1));
	mv = ht_cmd_calls(r, "blmove");
	{
		hl_value *v = NULL;
		HT_OK(hl_object_call(&v, d, HL_OP_BLOCKING_DEQUE_TAKE_LAST,
		                     NULL, 0));
		HT_STREQ(str(v, buf, sizeof buf), "y");
		hl_value_free(v);
	}
	HT_EQ(ht_cmd_calls(r, "blmove") - mv, 0);
	HT_EQ(raw_list(r, "bq:rttd", buf, sizeof buf), 1);
	HT_STREQ(buf, "x");
	HT_EQ(keys_like(r, "hilock_*"), 0);
	/* an empty queue still waits (BLMOVE) and wakes */
	{
		static taker t;
		pthread_t th;
		hl_client *p = ht_client(r, 0);
		hl_object *pq = bq(p, "bq:rtt2");
		memset(&t, 0, sizeof t);
		t.q = bq(c, "bq:rtt2");
		t.timeout = -1;
		th = ht_thread_start(take_run, &t);
		HT_CHECK(ht_wait_until(one_blocked, r, 10000));
		HT_OK(hl_blocking_queue_offer(&ok, pq, "w", 1));
		ht_thread_join(th, 10000);
		HT_CHECKF(t.rc == HL_OK, "take: %d %s", t.rc, t.err);
		HT_STREQ(t.got, "w");
		HT_EQ(keys_like(r, "hilock_*"), 0);
		hl_object_free(t.q);
		hl_object_free(pq);
		hl_client_free(p);
	}
	ht_del(r, HT_S("bq:rtt"));
	hl_object_free(d);
	hl_object_free(q);
	hl_client_free(c);
}

static void lost_prep(void)
{
	lost_move("bq:lostprep", 1);
}

/* hl_blocking_queue_try_take (the Go binding's fast path): an element is
 * taken once with nothing left; an empty queue answers nil in one round
 * trip with no key left; with this client's task takers in the queue's
 * line it answers NULL without a round trip (they come first). */
static void try_take(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q = bq(c, "bq:try"), *pq = bq(p, "bq:try"), *d = NULL;
	hl_object *m = NULL;
	hl_value *v = NULL;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	char buf[64];
	long long ev, all;
	int ok = 0, res = 0;
	HT_OK(hl_blocking_queue_offer(&ok, pq, "x", 1));
	HT_OK(hl_blocking_queue_offer(&ok, pq, "z", 1));
	HT_OK(hl_blocking_queue_try_take(&v, q, 0));
	HT_CHECK(v != NULL);
	HT_STREQ(str(v, buf, sizeof buf), "x");
	hl_value_free(v);
	HT_EQ(keys_like(r, "hilock_*"), 0);
	HT_EQ(raw_list(r, "bq:try", buf, sizeof buf), 1);
	HT_OK(hl_blocking_queue_try_take(&v, q, 0));
	HT_STREQ(str(v, buf, sizeof buf), "z");
	hl_value_free(v);
	ev = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_blocking_queue_try_take(&v, q, 0));
	HT_CHECK(v != NULL && hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_EQ(ht_cmd_calls(r, "evalsha") - ev, 1);
	HT_EQ(keys_like(r, "hilock_*"), 0);
	/* a task taker waits in line: no look, it gets the next element */
	HT_OK(hl_object_call_start(&t, q, HL_OP_BLOCKING_QUEUE_TAKE, NULL, 0));
	HT_CHECK(ht_wait_until(one_blocked, r, 10000));
	all = ht_total_commands(r);
	HT_OK(hl_blocking_queue_try_take(&v, q, 0));
	HT_CHECK(v == NULL);
	/* INFO itself is one command */
	HT_CHECKF(ht_total_commands(r) - all <= 1, "%lld commands",
	          ht_total_commands(r) - all);
	HT_OK(hl_blocking_queue_offer(&ok, pq, "y", 1));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "y");
	hl_task_free(t);
	/* a deque's tail */
	HT_OK(hl_blocking_deque_new(&d, c, HT_S("bq:tryd")));
	HT_OK(hl_blocking_deque_put_last(d, "h", 1));
	HT_OK(hl_blocking_deque_put_last(d, "t", 1));
	HT_OK(hl_blocking_queue_try_take(&v, d, 1));
	HT_STREQ(str(v, buf, sizeof buf), "t");
	hl_value_free(v);
	HT_EQ(raw_list(r, "bq:tryd", buf, sizeof buf), 1);
	HT_STREQ(buf, "h");
	/* bad input */
	HT_RC(hl_blocking_queue_try_take(NULL, q, 0), HL_EINVAL);
	HT_RC(hl_blocking_queue_try_take(&v, NULL, 0), HL_EINVAL);
	HT_RC(hl_blocking_queue_try_take(&v, q, 1), HL_EINVAL);
	HT_OK(hl_object_new(&m, c, HL_KIND_MAP, HT_S("bq:trym")));
	HT_RC(hl_blocking_queue_try_take(&v, m, 0), HL_EINVAL);
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET bq:tryw f v"));
	{
		hl_object *w = bq(c, "bq:tryw");
		HT_RC(hl_blocking_queue_try_take(&v, w, 0), HL_EREDIS);
		HT_EQ(keys_like(r, "hilock_*"), 0);
		hl_object_free(w);
	}
	ht_del(r, HT_S("bq:tryw"));
	ht_del(r, HT_S("bq:tryd"));
	hl_object_free(m);
	hl_object_free(d);
	hl_object_free(q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "bq:bad");
	hl_value *v = NULL;
	hl_arg a;
	HT_RC(hl_blocking_queue_poll_timeout(&v, q, -5), HL_EINVAL);
	HT_RC(hl_blocking_queue_take(NULL, q), HL_EINVAL);
	HT_RC(hl_blocking_queue_drain_to(&v, q, -2), HL_EINVAL);
	HT_RC(hl_blocking_queue_put(q, NULL, 3), HL_EINVAL);
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_BYTES;
	a.bytes = "x";
	a.len = 1;
	HT_RC(hl_object_call(&v, q, HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT, &a, 1),
	      HL_EINVAL);
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET bq:bad f v"));
	HT_RC(hl_blocking_queue_take(&v, q), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_blocking_queue_poll_timeout(&v, q, 100), HL_EREDIS);
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	HT_EQ(keys_like(r, "hilock_consumers:*"), 0);
	ht_del(r, HT_S("bq:bad"));
	hl_object_free(q);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(ops), HT_CASE(wake), HT_CASE(poll_timeout), HT_CASE(fifo),
        HT_CASE(lost_reply), HT_CASE(late_ack), HT_CASE(lost_late_ack),
        HT_CASE(patient_ack), HT_CASE(tasks_race), HT_CASE(blackhole),
        HT_CASE(kill9), HT_CASE(cancel), HT_CASE(redisson_compat),
        HT_CASE(many), HT_CASE(cluster), HT_CASE(sentinel_failover),
        HT_CASE(restart), HT_CASE(tasks), HT_CASE(deque), HT_CASE(bounded),
        HT_CASE(bounded_lost), HT_CASE(bad_input), HT_CASE(round_trips),
        HT_CASE(lost_prep), HT_CASE(try_take))
