/*
 * The queue and the deque (Redisson's RQueue and RDeque,
 * core/grid/queue.kind, deque.kind): their operations and the list they
 * leave in Redis; the most important property, that no element is lost
 * or taken twice when replies are lost (a poll whose reply is lost
 * answers, sent again, the element it took; producers and consumers on
 * threads while the fault proxy loses replies); a move between queues
 * (refused across cluster slots before anything is sent); a cluster hash
 * tag; a Sentinel failover; bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static hl_object *queue(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_queue_new(&o, c, name, strlen(name)));
	return o;
}

static hl_object *deque(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_deque_new(&o, c, name, strlen(name)));
	return o;
}

/* The request markers of name's polls (hilock_request:{name}:<id>). */
static long long markers(ht_redis *r, const char *name)
{
	redisReply *x =
	        ht_raw(ht_raw_of(r), "KEYS hilock_request:{%s}:*", name);
	long long n =
	        x->type == REDIS_REPLY_ARRAY ? (long long)x->elements : -1;
	freeReplyObject(x);
	return n;
}

static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = queue(c, "grid:q");
	hl_value *v = NULL;
	char buf[256];
	int ok = 0;
	int64_t n = -1;

	TAKE_STR(hl_queue_peek(&tv_, q), "(nil)");
	TAKE_STR(hl_queue_poll(&tv_, q), "(nil)");
	HT_OK(hl_queue_poll_many(&v, q, 5));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_EQ(ht_exists(r, HT_S("grid:q")), 0);
	HT_EQ(markers(r, "grid:q"), 0); /* polls of nothing keep no marker */
	HT_OK(hl_queue_offer(&ok, q, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_queue_add(&ok, q, "", 0));
	HT_EQ(ok, 1);
	HT_OK(hl_queue_offer(&ok, q, "c\0d", 3));
	HT_OK(hl_queue_offer(&ok, q, "e", 1));
	HT_EQ(raw_list(r, "grid:q", buf, sizeof buf), 4);
	HT_STREQ(buf, "a||c0d|e");
	HT_OK(hl_queue_size(&n, q));
	HT_EQ(n, 4);
	TAKE_STR(hl_queue_peek(&tv_, q), "a");
	HT_OK(hl_queue_read_range(&v, q, 1, 2));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 1), buf, sizeof buf), "c0d");
	hl_value_free(v);
	TAKE_STR(hl_queue_poll(&tv_, q), "a");
	HT_EQ(markers(r, "grid:q"), 1); /* a poll that took keeps one */
	TAKE_STR(hl_queue_poll(&tv_, q), "");
	HT_OK(hl_queue_poll_many(&v, q, 5));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "c0d");
	HT_STREQ(str(hl_value_at(v, 1), buf, sizeof buf), "e");
	hl_value_free(v);
	HT_EQ(ht_exists(r, HT_S("grid:q")), 0);
	HT_OK(hl_queue_offer(&ok, q, "x", 1));
	HT_OK(hl_queue_poll_many(&v, q, 0)); /* none asked, none taken */
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_OK(hl_queue_size(&n, q));
	HT_EQ(n, 1);
	hl_object_free(q);
	hl_client_free(c);
}

static void deque_ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = deque(c, "grid:dq");
	hl_object *d2 = deque(c, "grid:dq2");
	char buf[256];
	int ok = 0;
	int64_t n = 0;

	TAKE_STR(hl_deque_peek_first(&tv_, d), "(nil)");
	TAKE_STR(hl_deque_peek_last(&tv_, d), "(nil)");
	TAKE_STR(hl_deque_poll_first(&tv_, d), "(nil)");
	TAKE_STR(hl_deque_poll_last(&tv_, d), "(nil)");
	HT_OK(hl_deque_add_first(d, "b", 1));
	HT_OK(hl_deque_add_first(d, "a", 1));
	HT_OK(hl_deque_add_last(d, "c", 1));
	HT_OK(hl_deque_offer_first(&ok, d, "0", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_deque_offer_last(&ok, d, "d", 1));
	HT_OK(hl_deque_offer(&ok, d, "e", 1)); /* the queue's, at the tail */
	HT_EQ(raw_list(r, "grid:dq", buf, sizeof buf), 6);
	HT_STREQ(buf, "0|a|b|c|d|e");
	TAKE_STR(hl_deque_peek_first(&tv_, d), "0");
	TAKE_STR(hl_deque_peek(&tv_, d), "0");
	TAKE_STR(hl_deque_peek_last(&tv_, d), "e");
	TAKE_STR(hl_deque_poll_first(&tv_, d), "0");
	TAKE_STR(hl_deque_poll_last(&tv_, d), "e");
	TAKE_STR(hl_deque_poll(&tv_, d), "a");
	HT_OK(hl_deque_size(&n, d));
	HT_EQ(n, 3);
	/* the tail of one to the head of another (RPOPLPUSH) */
	HT_OK(hl_deque_add_first(d2, "z", 1));
	TAKE_STR(hl_deque_poll_last_and_offer_first_to(&tv_, d, "grid:dq2", 8),
	         "d");
	HT_EQ(raw_list(r, "grid:dq", buf, sizeof buf), 2);
	HT_STREQ(buf, "b|c");
	HT_EQ(raw_list(r, "grid:dq2", buf, sizeof buf), 2);
	HT_STREQ(buf, "d|z");
	/* to itself: a rotation */
	TAKE_STR(hl_deque_poll_last_and_offer_first_to(&tv_, d, "grid:dq", 7),
	         "c");
	HT_EQ(raw_list(r, "grid:dq", buf, sizeof buf), 2);
	HT_STREQ(buf, "c|b");
	ht_del(r, HT_S("grid:dq"));
	TAKE_STR(hl_deque_poll_last_and_offer_first_to(&tv_, d, "grid:dq2", 8),
	         "(nil)");
	HT_EQ(raw_list(r, "grid:dq2", buf, sizeof buf), 2);
	hl_object_free(d);
	hl_object_free(d2);
	hl_client_free(c);
}

static int two_left(void *arg)
{
	return llen_is(arg, "grid:q:lost", 2);
}

static int one_left(void *arg)
{
	return llen_is(arg, "grid:q:lost", 1);
}

/* One poll whose reply is lost after it took the head: sent again, it
 * answers that element (not the next one, not nil), and the queue lost
 * only it. The same for a deque's poll_last. */
static void lost_poll(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 40);
	hl_object *q = queue(c, "grid:q:lost");
	hl_object *d = deque(c, "grid:q:lost");
	hl_object *e = queue(c, "grid:q:empty");
	const hl_value *tv = NULL;
	hl_task *t = NULL;
	char buf[64];
	int ok = 0, res = 0;
	hl_value *v = NULL;

	HT_OK(hl_queue_offer(&ok, q, "first", 5));
	HT_OK(hl_queue_offer(&ok, q, "second", 6));
	HT_OK(hl_queue_offer(&ok, q, "third", 5));
	/* the scripts cached (else the late first copy meets NOSCRIPT) */
	HT_OK(hl_queue_poll(&v, e)); /* empty: nothing taken */
	hl_value_free(v);
	HT_OK(hl_object_call(&v, d, HL_OP_DEQUE_POLL_LAST, NULL, 0));
	HT_OK(hl_queue_offer(&ok, q, "third", 5)); /* back */
	hl_value_free(v);
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, q, HL_OP_QUEUE_POLL, NULL, 0));
	HT_CHECK(ht_wait_until(two_left, r, 10000)); /* it took "first" */
	ht_sleep_ms(300);                            /* its reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "first");
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:q:lost", buf, sizeof buf), 2);
	HT_STREQ(buf, "second|third");
	/* the deque's tail */
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, d, HL_OP_DEQUE_POLL_LAST, NULL, 0));
	HT_CHECK(ht_wait_until(one_left, r, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "third");
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:q:lost", buf, sizeof buf), 1);
	HT_STREQ(buf, "second");
	hl_object_free(q);
	hl_object_free(d);
	hl_object_free(e);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- producers and consumers while replies are lost --------------------- */

enum { PRODUCERS = 3, CONSUMERS = 3, PER_PRODUCER = 20000 };
enum { TOTAL = PRODUCERS * PER_PRODUCER };

typedef struct flow {
	hl_client *in, *out; /* producers' (direct), consumers' (proxied) */
	atomic_int produced_done, stop;
	atomic_int produced[PRODUCERS];
	atomic_int taken[TOTAL]; /* how many times each element was taken */
	atomic_int consumed, failures, strange;
} flow;

typedef struct worker {
	flow *f;
	int id;
} worker;

static void *produce(void *arg)
{
	worker *w = arg;
	hl_object *q = NULL;
	int i, ok = 0;
	char v[32];
	HT_OK(hl_queue_new(&q, w->f->in, HT_S("grid:q:flow")));
	/* paced, so that the flow lasts while replies are lost */
	for (i = 0; i < PER_PRODUCER && !atomic_load(&w->f->stop); i++) {
		int n = snprintf(v, sizeof v, "%d", w->id * PER_PRODUCER + i);
		if (hl_queue_offer(&ok, q, v, (size_t)n) != HL_OK)
			atomic_fetch_add(&w->f->failures, 1);
		else
			atomic_fetch_add(&w->f->produced[w->id], 1);
		if (i % 4 == 3)
			ht_sleep_ms(1);
	}
	hl_object_free(q);
	atomic_fetch_add(&w->f->produced_done, 1);
	return NULL;
}

static void took(flow *f, const hl_value *v)
{
	size_t len = 0;
	const char *p = hl_value_bytes(v, &len);
	char num[32];
	int i;
	if (!p || len == 0 || len >= sizeof num) {
		atomic_fetch_add(&f->strange, 1);
		return;
	}
	memcpy(num, p, len);
	num[len] = '\0';
	i = atoi(num);
	if (i < 0 || i >= TOTAL) {
		atomic_fetch_add(&f->strange, 1);
		return;
	}
	atomic_fetch_add(&f->taken[i], 1);
	atomic_fetch_add(&f->consumed, 1);
}

/* Poll (consumer 0 polls many at a time) until the producers are done
 * and the queue is empty; every failure counts (none is expected: a
 * lost reply is sent again). */
static void *consume(void *arg)
{
	worker *w = arg;
	flow *f = w->f;
	hl_object *q = NULL;
	int empty_after_done = 0;
	HT_OK(hl_queue_new(&q, f->out, HT_S("grid:q:flow")));
	while (empty_after_done < 3) {
		hl_value *v = NULL;
		int rc, done = atomic_load(&f->produced_done) == PRODUCERS;
		size_t k, got = 0;
		if (w->id == 0) {
			rc = hl_queue_poll_many(&v, q, 7);
			if (rc == HL_OK) {
				for (k = 0; k < hl_value_len(v); k++)
					took(f, hl_value_at(v, k));
				got = hl_value_len(v);
			}
		} else {
			rc = hl_queue_poll(&v, q);
			if (rc == HL_OK && hl_value_type(v) != HL_VALUE_NIL) {
				took(f, v);
				got = 1;
			}
		}
		hl_value_free(v);
		if (rc != HL_OK) {
			atomic_fetch_add(&f->failures, 1);
			fprintf(stderr, "consumer %d: %s\n", w->id,
			        hl_error_last());
		}
		if (got == 0 && done)
			empty_after_done++;
		else if (got == 0)
			ht_sleep_ms(2);
	}
	hl_object_free(q);
	return NULL;
}

/* PRODUCERS threads offer distinct elements (on a client of their own,
 * without faults); CONSUMERS threads poll them through the fault proxy,
 * which holds replies past the command timeout again and again (each
 * held reply gives up its connection; the poll is sent again). Every
 * element is consumed exactly once: the count and the set equal what was
 * produced, no element twice, none left, no call failed. */
static void no_loss(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	static flow f;
	worker pw[PRODUCERS], cw[CONSUMERS];
	pthread_t pt[PRODUCERS], ct[CONSUMERS];
	hl_client_stats st;
	int i, twice = 0, never = 0, cycles, total = 0;

	memset(&f, 0, sizeof f);
	ht_del(r, HT_S("grid:q:flow"));
	f.in = ht_client(r, 0);
	f.out = ht_doubt_client(p->url, 40);
	for (i = 0; i < CONSUMERS; i++) {
		cw[i].f = &f;
		cw[i].id = i;
		ct[i] = ht_thread_start(consume, &cw[i]);
	}
	for (i = 0; i < PRODUCERS; i++) {
		pw[i].f = &f;
		pw[i].id = i;
		pt[i] = ht_thread_start(produce, &pw[i]);
	}
	/* lose replies while the flow runs: held 400 ms each way, past the
	 * 250 ms command timeout */
	for (cycles = 0; cycles < 6; cycles++) {
		ht_sleep_ms(150);
		ht_proxy_cmd(p, "delay 400");
		ht_sleep_ms(500);
		ht_proxy_cmd(p, "delay 0");
	}
	atomic_store(&f.stop, 1);
	for (i = 0; i < PRODUCERS; i++)
		ht_thread_join(pt[i], 60000);
	for (i = 0; i < CONSUMERS; i++)
		ht_thread_join(ct[i], 120000);
	for (i = 0; i < TOTAL; i++) {
		int n = atomic_load(&f.taken[i]);
		int made = i % PER_PRODUCER <
		           atomic_load(&f.produced[i / PER_PRODUCER]);
		if (n > 1 || (n && !made))
			twice++;
		if (n == 0 && made)
			never++;
		total += made;
	}
	HT_CHECKF(total > 500, "only %d produced", total);
	HT_CHECKF(twice == 0, "%d elements taken twice", twice);
	HT_CHECKF(never == 0, "%d elements lost", never);
	HT_EQ(atomic_load(&f.consumed), total);
	HT_EQ(atomic_load(&f.strange), 0);
	HT_EQ(atomic_load(&f.failures), 0);
	HT_CHECK(llen_is(r, "grid:q:flow", 0));
	/* replies were lost indeed: the consumers' connections given up */
	memset(&st, 0, sizeof st);
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, f.out));
	HT_CHECKF(st.reconnects >= 3, "only %llu reconnects",
	          (unsigned long long)st.reconnects);
	hl_client_free(f.in);
	hl_client_free(f.out);
	ht_proxy_stop(p);
}

/* poll_last_and_offer_first_to: a lost reply answers the moved element
 * once (not a second move). */
static int moved(void *arg)
{
	return llen_is(arg, "grid:q:dst", 2);
}

static void move(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 40);
	hl_object *q = queue(c, "grid:q:src");
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	hl_task *t = NULL;
	hl_arg arg;
	char buf[64];
	int ok = 0, res = 0;

	HT_OK(hl_queue_offer(&ok, q, "a", 1));
	HT_OK(hl_queue_offer(&ok, q, "b", 1));
	HT_OK(hl_queue_offer(&ok, q, "c", 1));
	HT_OK(hl_queue_poll_last_and_offer_first_to(&v, q, "grid:q:dst", 10));
	HT_STREQ(str(v, buf, sizeof buf), "c");
	hl_value_free(v);
	ht_proxy_cmd(p, "delay 400");
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "grid:q:dst";
	arg.len = 10;
	HT_OK(hl_object_call_start(
	        &t, q, HL_OP_QUEUE_POLL_LAST_AND_OFFER_FIRST_TO, &arg, 1));
	HT_CHECK(ht_wait_until(moved, r, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "b");
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:q:src", buf, sizeof buf), 1);
	HT_STREQ(buf, "a");
	HT_EQ(raw_list(r, "grid:q:dst", buf, sizeof buf), 2);
	HT_STREQ(buf, "b|c");
	hl_object_free(q);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* A hash tag keeps a queue, its markers and a destination in one slot; a
 * destination in another slot is refused before anything is sent (the
 * source keeps its element). */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *q = queue(c, "{user1}:jobs");
	hl_object *d = deque(c, "{user1}:done");
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	int64_t n = 0;
	HT_OK(hl_queue_offer(&ok, q, "j1", 2));
	HT_OK(hl_queue_offer(&ok, q, "j2", 2));
	HT_OK(hl_queue_offer(&ok, q, "j3", 2));
	TAKE_STR(hl_queue_poll(&tv_, q), "j1");
	TAKE_STR(hl_queue_poll_last_and_offer_first_to(&tv_, q, "{user1}:done",
	                                               12),
	         "j3");
	TAKE_STR(hl_deque_poll_last(&tv_, d), "j3");
	/* "other" hashes elsewhere than user1 */
	HT_RC(hl_queue_poll_last_and_offer_first_to(&v, q, "other", 5),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "another cluster slot") != NULL);
	HT_CHECK(v == NULL);
	HT_OK(hl_queue_size(&n, q));
	HT_EQ(n, 1);
	HT_OK(hl_queue_poll_many(&v, q, 10));
	HT_EQ(hl_value_len(v), 1);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "j2");
	hl_value_free(v);
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A Sentinel failover (kill -9 of the master) while a queue is polled:
 * no element is answered twice; the queue goes on on the new master. */
typedef struct fo_run {
	hl_object *q;
	atomic_int stop;
	int ok, nil, failed;
	unsigned char seen[100000];
	int twice;
} fo_run;

static void *fo_poll(void *arg)
{
	fo_run *f = arg;
	while (!atomic_load(&f->stop)) {
		hl_value *v = NULL;
		int rc = hl_queue_poll(&v, f->q);
		if (rc == HL_OK && hl_value_type(v) == HL_VALUE_BYTES) {
			size_t len = 0;
			char num[16];
			const char *p = hl_value_bytes(v, &len);
			int i;
			memcpy(num, p, len < 15 ? len : 15);
			num[len < 15 ? len : 15] = '\0';
			i = atoi(num);
			if (i >= 0 && i < 100000 && f->seen[i]++)
				f->twice++;
			f->ok++;
		} else if (rc == HL_OK) {
			f->nil++;
		} else {
			f->failed++;
		}
		hl_value_free(v);
	}
	return NULL;
}

static void sentinel_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	char url[600];
	static fo_run f;
	const void *vals[1000];
	size_t lens[1000];
	char store[1000][8];
	pthread_t t;
	int old, i, ok = 0;
	hl_object *add;
	ht_failover_options(&o, 6000);
	ht_sentinel_url(s, url, sizeof url);
	c = ht_client_url(url, &o);
	memset(&f, 0, sizeof f);
	add = queue(c, "grid:q:failover");
	for (i = 0; i < 1000; i++) {
		lens[i] = (size_t)snprintf(store[i], 8, "%d", i);
		vals[i] = store[i];
	}
	for (i = 0; i < 20; i++) {
		hl_object *l = NULL;
		int k;
		HT_OK(hl_list_new(&l, c, HT_S("grid:q:failover")));
		for (k = 0; k < 1000; k++)
			snprintf(store[k], 8, "%d", i * 1000 + k);
		for (k = 0; k < 1000; k++)
			lens[k] = strlen(store[k]);
		HT_OK(hl_list_add_all(&ok, l, vals, lens, 1000));
		hl_object_free(l);
	}
	f.q = add;
	t = ht_thread_start(fo_poll, &f);
	ht_sleep_ms(300);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	{
		int before = f.ok, k;
		for (k = 0; k < 200 && f.ok < before + 50; k++)
			ht_sleep_ms(50);
	}
	atomic_store(&f.stop, 1);
	ht_thread_join(t, 30000);
	HT_CHECKF(f.twice == 0, "%d elements answered twice", f.twice);
	HT_CHECK(f.ok > 0);
	/* the new master takes offers and polls */
	HT_OK(hl_queue_offer(&ok, add, "after", 5));
	{
		hl_object *d = deque(c, "grid:q:failover");
		TAKE_STR(hl_deque_poll_last(&tv_, d), "after");
		hl_object_free(d);
	}
	hl_object_free(add);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = queue(c, "grid:q:bad");
	hl_object *d = deque(c, "grid:q:bad");
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;

	HT_RC(hl_queue_poll_many(&v, q, -1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "limit is -1") != NULL);
	HT_RC(hl_queue_offer(&ok, q, NULL, 2), HL_EINVAL);
	HT_RC(hl_queue_peek(NULL, q), HL_EINVAL);
	HT_RC(hl_deque_poll_last_and_offer_first_to(&v, d, NULL, 1), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:q:bad")), 0);
	/* another type at the key */
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET grid:q:bad f v"));
	HT_RC(hl_queue_offer(&ok, q, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_queue_poll(&v, q), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "WRONGTYPE") != NULL);
	HT_RC(hl_queue_poll_many(&v, q, 2), HL_EREDIS);
	HT_RC(hl_queue_peek(&v, q), HL_EREDIS);
	HT_RC(hl_queue_size(&n, q), HL_EREDIS);
	HT_RC(hl_deque_poll_last(&v, d), HL_EREDIS);
	HT_RC(hl_deque_add_first(d, "x", 1), HL_EREDIS);
	HT_RC(hl_deque_poll_last_and_offer_first_to(&v, d, "grid:q:bad2", 11),
	      HL_EREDIS);
	HT_EQ(ht_exists(r, HT_S("grid:q:bad2")), 0);
	/* a source list, a destination of another type: nothing moved */
	ht_del(r, HT_S("grid:q:bad"));
	HT_OK(hl_deque_add_first(d, "x", 1));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET grid:q:bad2 s"));
	HT_RC(hl_deque_poll_last_and_offer_first_to(&v, d, "grid:q:bad2", 11),
	      HL_EREDIS);
	HT_OK(hl_deque_size(&n, d));
	HT_EQ(n, 1);
	HT_CHECK(v == NULL);
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(ops), {"deque", deque_ops}, HT_CASE(lost_poll),
        HT_CASE(no_loss), HT_CASE(move), HT_CASE(cluster),
        HT_CASE(sentinel_failover), HT_CASE(bad_input))
