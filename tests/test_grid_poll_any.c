/*
 * Poll from several blocking queues (Redisson's pollFromAny;
 * hl_blocking_queue_poll_from_any, docs/grid-blocking-queue.md): it wakes
 * on an offer to any of them, answers which queue and what, gives nil
 * after its timeout, works across cluster slots, and loses nothing: a
 * cancel leaves every element queued, and of two elements arriving on two
 * queues at once one is answered and the other stays in its queue, with
 * nothing in flight afterwards; a cancel that cuts the pumps' prep short
 * leaves no takers' entry behind.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int two_blocked(void *arg)
{
	return blocked_clients(arg) >= 2;
}

static int none_blocked(void *arg)
{
	return blocked_clients(arg) == 0;
}

static int nothing_in_flight(void *arg)
{
	return keys_like(arg, "hilock_inflight:*") == 0 &&
	       keys_like(arg, "hilock_consumers:*") == 0;
}

/* "name=element" of an answer, "(nil)" for none. */
static const char *pair(const hl_value *v, char *buf, size_t cap)
{
	char a[64], b[64];
	if (hl_value_type(v) == HL_VALUE_NIL) {
		snprintf(buf, cap, "(nil)");
		return buf;
	}
	HT_EQ(hl_value_type(v), HL_VALUE_ARRAY);
	HT_EQ(hl_value_len(v), 2);
	snprintf(buf, cap, "%s=%s", str(hl_value_at(v, 0), a, sizeof a),
	         str(hl_value_at(v, 1), b, sizeof b));
	return buf;
}

typedef struct anyer {
	hl_object *q;
	const char *other;
	int64_t timeout;
	hl_cancel *cancel;
	int rc;
	char got[160], err[300];
	int64_t took_ms;
} anyer;

static void *any_run(void *arg)
{
	anyer *t = arg;
	hl_value *v = NULL;
	size_t len = strlen(t->other);
	int64_t t0 = ht_now_ms();
	t->rc = hl_blocking_queue_poll_from_any(&v, t->q, &t->other, &len, 1,
	                                        t->timeout, t->cancel);
	t->took_ms = ht_now_ms() - t0;
	if (t->rc == HL_OK)
		pair(v, t->got, sizeof t->got);
	else
		snprintf(t->err, sizeof t->err, "%s", hl_error_last());
	hl_value_free(v);
	return NULL;
}

/* A wait on two queues wakes on an offer (another client's) to the
 * second one and answers its name and the element. */
static void wake(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q1 = bq(c, "pa:1"), *q2 = bq(p, "pa:2");
	static anyer t;
	pthread_t th;
	int ok = 0;
	memset(&t, 0, sizeof t);
	t.q = q1;
	t.other = "pa:2";
	t.timeout = 20000;
	th = ht_thread_start(any_run, &t);
	/* one BLMOVE per queue */
	HT_CHECK(ht_wait_until(two_blocked, r, 10000));
	HT_OK(hl_blocking_queue_offer(&ok, q2, "x", 1));
	ht_thread_join(th, 10000);
	HT_CHECKF(t.rc == HL_OK, "%d %s", t.rc, t.err);
	HT_STREQ(t.got, "pa:2=x");
	HT_CHECK(t.took_ms < 10000);
	HT_CHECK(ht_wait_until(none_blocked, r, 5000));
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	HT_EQ(ht_exists(r, HT_S("pa:1")), 0);
	HT_EQ(ht_exists(r, HT_S("pa:2")), 0);
	/* an element already there: answered at once, also with timeout 0 */
	HT_OK(hl_blocking_queue_offer(&ok, q2, "y", 1));
	t.timeout = 0;
	any_run(&t);
	HT_CHECKF(t.rc == HL_OK, "%d %s", t.rc, t.err);
	HT_STREQ(t.got, "pa:2=y");
	hl_object_free(q1);
	hl_object_free(q2);
	hl_client_free(c);
	hl_client_free(p);
}

/* Nothing offered: nil after about the timeout, nothing left behind. */
static void timeout(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	static anyer t;
	memset(&t, 0, sizeof t);
	t.q = bq(c, "pt:1");
	t.other = "pt:2";
	t.timeout = 400;
	any_run(&t);
	HT_CHECKF(t.rc == HL_OK, "%d %s", t.rc, t.err);
	HT_STREQ(t.got, "(nil)");
	HT_CHECKF(t.took_ms >= 380 && t.took_ms < 5000, "%lld ms",
	          (long long)t.took_ms);
	t.timeout = 0;
	any_run(&t);
	HT_STREQ(t.got, "(nil)");
	HT_CHECK(ht_wait_until(none_blocked, r, 5000));
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	hl_object_free(t.q);
	hl_client_free(c);
}

/* Two queues in different cluster slots: an offer to either wakes it. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *q1 = bq(c, "jobs"), *q2 = bq(c, "{other}:jobs");
	const char *argv[] = {"LLEN", "jobs"};
	size_t lens[] = {4, 4};
	static anyer t;
	pthread_t th;
	hl_value *v = NULL;
	int ok = 0, k;
	HT_CHECK(ht_cluster_slot_of(cl, HT_S("jobs")) !=
	         ht_cluster_slot_of(cl, HT_S("{other}:jobs")));
	for (k = 0; k < 2; k++) {
		memset(&t, 0, sizeof t);
		t.q = q1;
		t.other = "{other}:jobs";
		t.timeout = 20000;
		th = ht_thread_start(any_run, &t);
		ht_sleep_ms(300); /* waiting (a cluster has no one INFO) */
		HT_OK(hl_blocking_queue_offer(&ok, k ? q1 : q2, "e", 1));
		ht_thread_join(th, 10000);
		HT_CHECKF(t.rc == HL_OK, "%d %s", t.rc, t.err);
		HT_STREQ(t.got, k ? "jobs=e" : "{other}:jobs=e");
	}
	HT_OK(hl_client_command(&v, c, 2, argv, lens, NULL, 0, 1));
	HT_EQ(hl_value_int(v), 0);
	hl_value_free(v);
	hl_object_free(q1);
	hl_object_free(q2);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A cancel loses nothing: cancelled while it waits, the element offered
 * next stays queued; cancelled right as an element arrives (a race, many
 * rounds), the element is either answered or still in its queue. */
static void cancel(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q1 = bq(c, "pc:1"), *q2 = bq(p, "pc:2");
	static anyer t;
	hl_task *task = NULL;
	const char *other = "pc:2";
	size_t olen = 4;
	pthread_t th;
	char buf[64];
	int ok = 0, i, res = 0, got = 0;
	memset(&t, 0, sizeof t);
	HT_OK(hl_cancel_new(&t.cancel));
	t.q = q1;
	t.other = "pc:2";
	t.timeout = -1;
	th = ht_thread_start(any_run, &t);
	HT_CHECK(ht_wait_until(two_blocked, r, 10000));
	hl_cancel_trigger(t.cancel);
	ht_thread_join(th, 10000);
	HT_EQ(t.rc, HL_EINTERRUPTED);
	HT_CHECK(ht_wait_until(none_blocked, r, 5000));
	HT_OK(hl_blocking_queue_offer(&ok, q2, "kept", 4));
	HT_EQ(raw_list(r, "pc:2", buf, sizeof buf), 1);
	HT_STREQ(buf, "kept");
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	ht_del(r, HT_S("pc:2"));
	/* the race, with the task form */
	for (i = 0; i < 20; i++) {
		const hl_value *tv = NULL;
		int rc;
		HT_OK(hl_blocking_queue_poll_from_any_start(&task, q1, &other,
		                                            &olen, 1, -1));
		HT_CHECK(ht_wait_until(two_blocked, r, 10000));
		HT_OK(hl_blocking_queue_offer(&ok, q2, "r", 1));
		if (i % 2)
			ht_sleep_ms(i); /* now and then a little later */
		hl_task_cancel(task);
		rc = ht_task_result(task, &res, 10000);
		if (rc == HL_OK) {
			HT_OK(hl_task_value(&tv, task));
			HT_STREQ(pair(tv, buf, sizeof buf), "pc:2=r");
			got++;
		} else {
			HT_EQ(rc, HL_EINTERRUPTED);
			HT_CHECK(ht_wait_until(none_blocked, r, 5000));
			HT_EQ(raw_list(r, "pc:2", buf, sizeof buf), 1);
			HT_STREQ(buf, "r");
			ht_del(r, HT_S("pc:2"));
		}
		hl_task_free(task);
		HT_CHECK(ht_wait_until(none_blocked, r, 5000));
		HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
		HT_EQ(ht_exists(r, HT_S("pc:1")), 0);
	}
	ht_note("cancel race: %d answered, %d given back", got, 20 - got);
	hl_cancel_free(t.cancel);
	hl_object_free(q1);
	hl_object_free(q2);
	hl_client_free(c);
	hl_client_free(p);
}

/* Elements on both queues at once (one MULTI): one is answered, the other
 * queue keeps its elements in their order, nothing stays in flight. */
static void both(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q1 = bq(c, "pb:1");
	static anyer t;
	pthread_t th;
	char buf[64];
	int k, from1 = 0;
	for (k = 0; k < 6; k++) {
		redisReply *x;
		memset(&t, 0, sizeof t);
		t.q = q1;
		t.other = "pb:2";
		t.timeout = 20000;
		th = ht_thread_start(any_run, &t);
		HT_CHECK(ht_wait_until(two_blocked, r, 10000));
		x = ht_raw(ht_raw_of(r), "MULTI");
		freeReplyObject(x);
		x = ht_raw(ht_raw_of(r), "RPUSH pb:1 a");
		freeReplyObject(x);
		x = ht_raw(ht_raw_of(r), "RPUSH pb:2 b1 b2");
		freeReplyObject(x);
		x = ht_raw(ht_raw_of(r), "EXEC");
		freeReplyObject(x);
		ht_thread_join(th, 10000);
		HT_CHECKF(t.rc == HL_OK, "%d %s", t.rc, t.err);
		HT_CHECK(ht_wait_until(none_blocked, r, 5000));
		HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
		if (strcmp(t.got, "pb:1=a") == 0) {
			from1++;
			HT_EQ(raw_list(r, "pb:1", buf, sizeof buf), 0);
			HT_EQ(raw_list(r, "pb:2", buf, sizeof buf), 2);
			HT_STREQ(buf, "b1|b2");
		} else {
			HT_STREQ(t.got, "pb:2=b1");
			HT_EQ(raw_list(r, "pb:1", buf, sizeof buf), 1);
			HT_STREQ(buf, "a");
			HT_EQ(raw_list(r, "pb:2", buf, sizeof buf), 1);
			HT_STREQ(buf, "b2");
		}
		ht_del(r, HT_S("pb:1"));
		ht_del(r, HT_S("pb:2"));
	}
	ht_note("both: %d from the first queue of 6", from1);
	hl_object_free(q1);
	hl_client_free(c);
}

#define NTASKS 40

/* Many tasks on two queues: one BLMOVE per queue for all of them, each
 * gets one element, none twice, none left. */
static void tasks(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *p = ht_client(r, 0);
	hl_object *q1 = bq(c, "pk:1"), *p1 = bq(p, "pk:1"), *p2 = bq(p, "pk:2");
	static hl_task *t[NTASKS];
	static char seen[NTASKS];
	const char *other = "pk:2";
	size_t olen = 4;
	char buf[64];
	int i, ok = 0, res = 0;
	for (i = 0; i < NTASKS; i++)
		HT_OK(hl_blocking_queue_poll_from_any_start(&t[i], q1, &other,
		                                            &olen, 1, 20000));
	HT_CHECK(ht_wait_until(two_blocked, r, 10000));
	ht_sleep_ms(200);
	HT_EQ(blocked_clients(r), 2);
	for (i = 0; i < NTASKS; i++) {
		int n = snprintf(buf, sizeof buf, "%d", i);
		HT_OK(hl_blocking_queue_offer(&ok, i % 2 ? p2 : p1, buf,
		                              (size_t)n));
	}
	memset(seen, 0, sizeof seen);
	for (i = 0; i < NTASKS; i++) {
		const hl_value *tv = NULL;
		int n;
		HT_OK(ht_task_result(t[i], &res, 20000));
		HT_OK(hl_task_value(&tv, t[i]));
		HT_EQ(hl_value_type(tv), HL_VALUE_ARRAY);
		n = atoi(str(hl_value_at(tv, 1), buf, sizeof buf));
		HT_CHECK(n >= 0 && n < NTASKS && !seen[n]);
		seen[n] = 1;
		HT_STREQ(str(hl_value_at(tv, 0), buf, sizeof buf),
		         n % 2 ? "pk:2" : "pk:1");
		hl_task_free(t[i]);
	}
	HT_CHECK(ht_wait_until(none_blocked, r, 5000));
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	HT_EQ(ht_exists(r, HT_S("pk:1")), 0);
	HT_EQ(ht_exists(r, HT_S("pk:2")), 0);
	hl_object_free(q1);
	hl_object_free(p1);
	hl_object_free(p2);
	hl_client_free(c);
	hl_client_free(p);
}

static ht_redis *gone_r;
static hl_object *gone_q[2];
static int takers_gone(void *arg)
{
	int64_t n = 0;
	(void)arg;
	HT_OK(hl_blocking_queue_recover(&n, gone_q[0]));
	HT_OK(hl_blocking_queue_recover(&n, gone_q[1]));
	return keys_like(gone_r, "hilock_*") == 0;
}

static int inflight_there(void *arg)
{
	return keys_like(arg, "hilock_inflight:*") == 1;
}

/* The reply of the BLMOVE that took the element is lost (held by the
 * fault proxy, then every connection reset): the call answers it once
 * reconnected, exactly once; the other queue's wait is unharmed and
 * nothing stays in flight. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c, *p = ht_client(r, 0);
	hl_object *pq = bq(p, "pl:2");
	static anyer t;
	pthread_t th;
	char buf[64];
	int ok = 0;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.retry_attempts = 40;
	o.retry_delay_ms = 50;
	o.watchdog_timeout_ms = 900; /* slices of 300 ms */
	c = ht_client_url(px->url, &o);
	memset(&t, 0, sizeof t);
	t.q = bq(c, "pl:1");
	t.other = "pl:2";
	t.timeout = 30000;
	th = ht_thread_start(any_run, &t);
	HT_CHECK(ht_wait_until(two_blocked, r, 10000));
	ht_proxy_cmd(px, "delay 3000"); /* its reply held */
	HT_OK(hl_blocking_queue_offer(&ok, pq, "only", 4));
	HT_OK(hl_blocking_queue_offer(&ok, pq, "next", 4));
	HT_CHECK(ht_wait_until(inflight_there, r, 10000));
	HT_EQ(raw_list(r, "pl:2", buf, sizeof buf), 1); /* "next" left */
	ht_proxy_cmd(px, "reset"); /* the reply is lost for good */
	ht_proxy_cmd(px, "delay 0");
	ht_thread_join(th, 20000);
	HT_CHECKF(t.rc == HL_OK, "poll_from_any: %d %s", t.rc, t.err);
	HT_STREQ(t.got, "pl:2=only");
	/* nothing in flight; an attempt the reset cut short may keep its
	 * takers' entry for its window (docs): recover() ends it then */
	HT_EQ(keys_like(r, "hilock_inflight:*"), 0);
	gone_r = r;
	gone_q[0] = t.q;
	gone_q[1] = pq;
	HT_CHECK(ht_wait_until(takers_gone, NULL, 15000));
	HT_EQ(raw_list(r, "pl:2", buf, sizeof buf), 1);
	HT_STREQ(buf, "next");
	hl_object_free(t.q);
	hl_object_free(pq);
	hl_client_free(c);
	hl_client_free(p);
	ht_proxy_stop(px);
}

static int two_takers(void *arg)
{
	return keys_like(arg, "hilock_consumers:*") == 2;
}

/* A poll_from_any task cancelled while its pumps' prep scripts' answers
 * are on the way (the scripts ran: their entries are there; the proxy
 * holds the answers 400 ms): each pump's line runs empty, its prep is cut
 * short, and the take gives its entry back at once, not after its lease
 * (the default 30 s: the wait below is far shorter). */
static void cut_prep(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *px = ht_proxy_start(r->port);
	hl_client *c = ht_client_url(px->url, NULL);
	hl_object *q = bq(c, "pc:1");
	const char *other = "pc:2";
	size_t olen = 4;
	hl_task *t = NULL;
	hl_value *v = NULL;
	int res = 0, ok = 0;
	/* the pool's connections open before the delay */
	HT_OK(hl_blocking_queue_offer(&ok, q, "w", 1));
	HT_OK(hl_blocking_queue_poll_timeout(&v, q, 1000));
	hl_value_free(v);
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	ht_proxy_cmd(px, "delay 400");
	HT_OK(hl_blocking_queue_poll_from_any_start(&t, q, &other, &olen, 1,
	                                            20000));
	HT_CHECK(ht_wait_until(two_takers, r, 5000));
	hl_task_cancel(t);
	HT_RC(ht_task_result(t, &res, 10000), HL_EINTERRUPTED);
	hl_task_free(t);
	ht_proxy_cmd(px, "delay 0");
	HT_CHECKF(ht_wait_until(nothing_in_flight, r, 5000),
	          "%ld takers' hashes left",
	          (long)keys_like(r, "hilock_consumers:*"));
	HT_EQ(ht_exists(r, HT_S("pc:1")), 0);
	hl_object_free(q);
	hl_client_free(c);
	ht_proxy_stop(px);
}

/* The other kinds: a bounded queue's poll_from_any gives the capacity
 * back (as a take), whether it waited or looked (timeout 0); a deque's
 * takes its head. */
static void kinds(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b1 = NULL, *b2 = NULL, *d1 = NULL;
	const char *other = "pq:b2";
	size_t olen = 5;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	int64_t left = 0;
	HT_OK(hl_bounded_blocking_queue_new(&b1, c, "pq:b1", 5));
	HT_OK(hl_bounded_blocking_queue_new(&b2, c, "pq:b2", 5));
	HT_OK(hl_bounded_blocking_queue_try_set_capacity(&ok, b2, 2));
	HT_EQ(ok, 1);
	HT_OK(hl_bounded_blocking_queue_offer(&ok, b2, "e1", 2));
	HT_OK(hl_bounded_blocking_queue_offer(&ok, b2, "e2", 2));
	HT_OK(hl_bounded_blocking_queue_remaining_capacity(&left, b2));
	HT_EQ(left, 0);
	HT_OK(hl_blocking_queue_poll_from_any(&v, b1, &other, &olen, 1, 5000,
	                                      NULL));
	HT_STREQ(pair(v, buf, sizeof buf), "pq:b2=e1");
	hl_value_free(v);
	HT_OK(hl_blocking_queue_poll_from_any(&v, b1, &other, &olen, 1, 0,
	                                      NULL));
	HT_STREQ(pair(v, buf, sizeof buf), "pq:b2=e2");
	hl_value_free(v);
	HT_OK(hl_bounded_blocking_queue_remaining_capacity(&left, b2));
	HT_EQ(left, 2);
	other = "pq:d2";
	HT_OK(hl_blocking_deque_new(&d1, c, "pq:d1", 5));
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH pq:d2 h t"));
	HT_OK(hl_blocking_queue_poll_from_any(&v, d1, &other, &olen, 1, 5000,
	                                      NULL));
	HT_STREQ(pair(v, buf, sizeof buf), "pq:d2=h");
	hl_value_free(v);
	HT_EQ(raw_list(r, "pq:d2", buf, sizeof buf), 1);
	HT_STREQ(buf, "t");
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	hl_object_free(b1);
	hl_object_free(b2);
	hl_object_free(d1);
	hl_client_free(c);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = bq(c, "pz:1"), *plain = NULL;
	hl_value *v = NULL;
	hl_task *t = NULL;
	const char *names[] = {"pz:2", NULL};
	size_t lens[] = {4, 3};
	HT_OK(hl_queue_new(&plain, c, "pz:3", 4));
	HT_RC(hl_blocking_queue_poll_from_any(NULL, q, names, lens, 1, 0, NULL),
	      HL_EINVAL);
	HT_RC(hl_blocking_queue_poll_from_any(&v, NULL, names, lens, 1, 0,
	                                      NULL),
	      HL_EINVAL);
	HT_RC(hl_blocking_queue_poll_from_any(&v, plain, names, lens, 1, 0,
	                                      NULL),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "blocking queue") != NULL);
	HT_RC(hl_blocking_queue_poll_from_any(&v, q, names, lens, 1, -2, NULL),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "timeout") != NULL);
	HT_RC(hl_blocking_queue_poll_from_any(&v, q, NULL, lens, 1, 0, NULL),
	      HL_EINVAL);
	HT_RC(hl_blocking_queue_poll_from_any(&v, q, names, lens, 2, 0, NULL),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "NULL") != NULL);
	HT_RC(hl_blocking_queue_poll_from_any_start(NULL, q, names, lens, 1, 0),
	      HL_EINVAL);
	HT_RC(hl_blocking_queue_poll_from_any_start(&t, q, names, lens, 2, 0),
	      HL_EINVAL);
	HT_CHECK(t == NULL);
	/* a key of another type: the message says so */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET pz:2 str"));
	HT_RC(hl_blocking_queue_poll_from_any(&v, q, names, lens, 1, 1000,
	                                      NULL),
	      HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "type") != NULL);
	/* no other queue: a poll of one (nothing lost either) */
	HT_OK(hl_blocking_queue_poll_from_any(&v, q, NULL, NULL, 0, 0, NULL));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	ht_del(r, HT_S("pz:2"));
	HT_CHECK(ht_wait_until(nothing_in_flight, r, 5000));
	hl_object_free(plain);
	hl_object_free(q);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(wake), HT_CASE(timeout), HT_CASE(cluster), HT_CASE(cancel),
        HT_CASE(both), HT_CASE(tasks), HT_CASE(kinds), HT_CASE(lost_reply),
        HT_CASE(bad_input), HT_CASE(cut_prep))
