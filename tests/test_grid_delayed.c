/*
 * The delayed queue (Redisson's RDelayedQueue, core/grid/delayed_queue.kind,
 * core/src/grid/delayed.c): Redisson's keys and member bytes; an element
 * reaches the destination not before its time and promptly after; order;
 * exactly once with two movers racing; a client that only opened the
 * queue (no offers) moves what was offered before it started; a missed
 * message (elements added without PUBLISH) still moves by the fallback
 * poll; delivery after a server restart; a resend after a lost reply adds
 * nothing twice; transfers whose replies are lost move each element once;
 * a cluster (another client's mover hears an offer at once); a Sentinel
 * failover; bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static hl_object *dq(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_delayed_queue_new(&o, c, name, strlen(name)));
	return o;
}

static long long zcard(ht_redis *r, const char *key)
{
	redisReply *x = ht_raw(ht_raw_of(r), "ZCARD %s", key);
	long long n = x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
	freeReplyObject(x);
	return n;
}

static long long llen(ht_redis *r, const char *key)
{
	redisReply *x = ht_raw(ht_raw_of(r), "LLEN %s", key);
	long long n = x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
	freeReplyObject(x);
	return n;
}

/* A member as Redisson packs it: 0x08, 8 random bytes, the value's length
 * (8 bytes little-endian), the value; its length. */
static size_t pack(char *out, const char *rnd8, const char *v, size_t len)
{
	size_t i;
	out[0] = 8;
	memcpy(out + 1, rnd8, 8);
	for (i = 0; i < 8; i++)
		out[9 + i] = (char)((uint64_t)len >> (8 * i) & 0xff);
	memcpy(out + 17, v, len);
	return 17 + len;
}

/* Add an element as an offer would, but without the PUBLISH (a message
 * nobody heard). */
static void raw_offer(ht_redis *r, const char *name, const char *v, int64_t due,
                      int i)
{
	char m[300], rnd[8], zkey[200], lkey[200];
	size_t n;
	memset(rnd, 'a' + i % 26, 8);
	rnd[0] = (char)i;
	n = pack(m, rnd, v, strlen(v));
	snprintf(zkey, sizeof zkey, "redisson_delay_queue_timeout:{%s}", name);
	snprintf(lkey, sizeof lkey, "redisson_delay_queue:{%s}", name);
	freeReplyObject(ht_raw(ht_raw_of(r), "ZADD %s %lld %b", zkey,
	                       (long long)due, m, n));
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH %s %b", lkey, m, n));
}

typedef struct llen_arg {
	ht_redis *r;
	const char *key;
	long long want;
} llen_arg;

static int llen_reached(void *arg)
{
	llen_arg *a = arg;
	return llen(a->r, a->key) >= a->want;
}

/* Wait (ms, scaled) until the list key has want elements: 1 if it did. */
static int wait_llen(ht_redis *r, const char *key, long long want, int64_t ms)
{
	llen_arg a = {r, key, want};
	return ht_wait_until(llen_reached, &a, ms);
}

/* Keys, bytes and every operation on the waiting part. */
static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = dq(c, "gd:ops");
	redisReply *x;
	hl_value *v = NULL;
	char buf[256];
	int64_t n = -1, t0 = wall();
	int ok = -1;

	HT_OK(hl_delayed_queue_offer(d, "a", 1, 60000));
	HT_OK(hl_delayed_queue_offer(d, "b\0c", 3, 30000));
	HT_OK(hl_delayed_queue_offer(d, "", 0, 90000));
	/* Redisson's keys: the zset by due time, the list in order */
	x = ht_raw(ht_raw_of(r),
	           "ZRANGE redisson_delay_queue_timeout:{gd:ops} 0 -1 "
	           "WITHSCORES");
	HT_EQ(x->elements, 6);
	/* first by due time: "b\0c", packed byte for byte */
	HT_EQ(x->element[0]->len, 17 + 3);
	HT_EQ((unsigned char)x->element[0]->str[0], 8);
	HT_CHECK(memcmp(x->element[0]->str + 9, "\3\0\0\0\0\0\0\0", 8) == 0);
	HT_CHECK(memcmp(x->element[0]->str + 17, "b\0c", 3) == 0);
	{
		long long due = atoll(x->element[1]->str);
		HT_CHECKF(due >= t0 + 30000 && due <= wall() + 30000,
		          "due %lld, offered at %lld", due, (long long)t0);
	}
	HT_EQ(x->element[4]->len, 17); /* the empty value */
	freeReplyObject(x);
	x = ht_raw(ht_raw_of(r), "LRANGE redisson_delay_queue:{gd:ops} 0 -1");
	HT_EQ(x->elements, 3);
	HT_EQ(x->element[0]->len, 18);
	HT_CHECK(memcmp(x->element[0]->str + 9, "\1\0\0\0\0\0\0\0a", 9) == 0);
	freeReplyObject(x);
	HT_EQ(llen(r, "gd:ops"), 0); /* nothing due */

	HT_OK(hl_delayed_queue_size(&n, d));
	HT_EQ(n, 3);
	TAKE_STR(hl_delayed_queue_peek(&tv_, d), "a");
	HT_OK(hl_delayed_queue_contains(&ok, d, "b\0c", 3));
	HT_EQ(ok, 1);
	HT_OK(hl_delayed_queue_contains(&ok, d, "b", 1));
	HT_EQ(ok, 0);
	HT_OK(hl_delayed_queue_read_range(&v, d, 1, -1));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "b0c");
	HT_STREQ(str(hl_value_at(v, 1), buf, sizeof buf), "");
	hl_value_free(v);
	HT_OK(hl_delayed_queue_read_all(&v, d));
	HT_EQ(hl_value_len(v), 3);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "a");
	hl_value_free(v);
	/* poll takes the first in insertion order before it is due */
	TAKE_STR(hl_delayed_queue_poll(&tv_, d), "a");
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:ops}"), 2);
	HT_OK(hl_delayed_queue_remove(&ok, d, "b\0c", 3));
	HT_EQ(ok, 1);
	HT_OK(hl_delayed_queue_remove(&ok, d, "b\0c", 3));
	HT_EQ(ok, 0);
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:ops}"), 1);
	HT_EQ(llen(r, "redisson_delay_queue:{gd:ops}"), 1);
	HT_OK(hl_delayed_queue_clear(d));
	HT_EQ(ht_exists(r, HT_S("redisson_delay_queue_timeout:{gd:ops}")), 0);
	HT_EQ(ht_exists(r, HT_S("redisson_delay_queue:{gd:ops}")), 0);
	TAKE_STR(hl_delayed_queue_poll(&tv_, d), "(nil)");
	TAKE_STR(hl_delayed_queue_peek(&tv_, d), "(nil)");
	HT_OK(hl_delayed_queue_read_all(&v, d));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_EQ(llen(r, "gd:ops"), 0); /* polled and removed: never moved */

	/* the channel carries the new first element's due time */
	{
		redisContext *s = ht_sub_new(
		        r, HT_S("redisson_delay_queue_channel:{gd:ops}"));
		char *msg;
		int64_t before = wall();
		HT_OK(hl_delayed_queue_offer(d, "m", 1, 50000));
		msg = ht_sub_next(s, NULL, 0);
		HT_CHECKF(atoll(msg) >= before + 50000 &&
		                  atoll(msg) <= wall() + 50000,
		          "message %s", msg);
		free(msg);
		redisFree(s);
		HT_OK(hl_delayed_queue_clear(d));
	}
	/* read_all over more than one page */
	{
		int i;
		char val[16];
		for (i = 0; i < 2100; i++) {
			snprintf(val, sizeof val, "v%d", i);
			HT_OK(hl_delayed_queue_offer(d, val, strlen(val),
			                             600000));
		}
		HT_OK(hl_delayed_queue_read_all(&v, d));
		HT_EQ(hl_value_len(v), 2100);
		HT_STREQ(str(hl_value_at(v, 1000), buf, sizeof buf), "v1000");
		HT_STREQ(str(hl_value_at(v, 2099), buf, sizeof buf), "v2099");
		hl_value_free(v);
		HT_OK(hl_delayed_queue_clear(d));
	}
	hl_object_free(d);
	hl_client_free(c);
}

/* Not in the destination before its time; there promptly after. */
static void due_time(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = dq(c, "gd:due");
	int64_t t0 = wall(), seen;
	HT_OK(hl_delayed_queue_offer(d, "x", 1, 700));
	while (llen(r, "gd:due") == 0 && wall() - t0 < 10000)
		ht_sleep_ms(5);
	seen = wall();
	HT_EQ(llen(r, "gd:due"), 1);
	HT_CHECKF(seen - t0 >= 700, "moved after %lld ms, due at 700",
	          (long long)(seen - t0));
	HT_CHECKF(seen - t0 <= 700 + 1500 * ht_scale(),
	          "moved after %lld ms, due at 700", (long long)(seen - t0));
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:due}"), 0);
	HT_EQ(llen(r, "redisson_delay_queue:{gd:due}"), 0);
	hl_object_free(d);
	hl_client_free(c);
}

/* Many elements with different delays, offered out of order: they reach
 * the destination in due order. */
static void order(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = dq(c, "gd:order");
	char buf[512], want[512] = "";
	int i;
	static const int delays[] = {450, 100, 300, 0,   250, 50, 400,
	                             150, 350, 200, 500, 30,  10};
	const int n = (int)(sizeof delays / sizeof delays[0]);
	for (i = 0; i < n; i++) {
		char v[8];
		snprintf(v, sizeof v, "%d", delays[i]);
		HT_OK(hl_delayed_queue_offer(d, v, strlen(v), delays[i]));
	}
	HT_CHECK(wait_llen(r, "gd:order", n, 10000));
	raw_list(r, "gd:order", buf, sizeof buf);
	strcpy(want, "0|10|30|50|100|150|200|250|300|350|400|450|500");
	HT_STREQ(buf, want);
	hl_object_free(d);
	hl_client_free(c);
}

/* Two clients (two movers) and Redis-side checks: every element once. */
static void two_movers(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_object *da = dq(a, "gd:two"), *db = dq(b, "gd:two");
	redisReply *x;
	static unsigned char seen[400];
	int i, twice = 0;
	for (i = 0; i < 400; i++) {
		char v[8];
		snprintf(v, sizeof v, "%d", i);
		HT_OK(hl_delayed_queue_offer(i % 2 ? da : db, v, strlen(v),
		                             (i * 7) % 300));
	}
	HT_CHECK(wait_llen(r, "gd:two", 400, 15000));
	ht_sleep_ms(300); /* a second copy would show now */
	x = ht_raw(ht_raw_of(r), "LRANGE gd:two 0 -1");
	HT_EQ(x->elements, 400);
	memset(seen, 0, sizeof seen);
	for (i = 0; i < (int)x->elements; i++) {
		int k = atoi(x->element[i]->str);
		if (k >= 0 && k < 400 && seen[k]++)
			twice++;
	}
	freeReplyObject(x);
	HT_EQ(twice, 0);
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:two}"), 0);
	HT_EQ(llen(r, "redisson_delay_queue:{gd:two}"), 0);
	hl_object_free(da);
	hl_object_free(db);
	hl_client_free(a);
	hl_client_free(b);
}

/* The producer went before its elements were due: nothing moves while no
 * client has the queue open; a client that only opens it (no offer) moves
 * them at once. */
static void catch_up(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b;
	hl_object *d = dq(a, "gd:catch");
	int64_t t0;
	int i;
	for (i = 0; i < 5; i++)
		HT_OK(hl_delayed_queue_offer(d, "e", 1, 100));
	hl_object_free(d);
	hl_client_free(a);
	ht_sleep_ms(600);
	HT_EQ(llen(r, "gd:catch"), 0); /* nobody moved them */
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:catch}"), 5);
	b = ht_client(r, 0);
	t0 = wall();
	d = dq(b, "gd:catch");
	HT_CHECK(wait_llen(r, "gd:catch", 5, 10000));
	/* at once, not at the first fallback poll */
	HT_CHECKF(wall() - t0 < 800 * ht_scale(), "caught up after %lld ms",
	          (long long)(wall() - t0));
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:catch}"), 0);
	/* the last object gone, the mover stops: no SUBSCRIBE is left (once
	 * it was there: it may still be on its way) */
	{
		int k;
		for (k = 0; k < 500; k++) {
			if (ht_numsub(r, HT_S("redisson_delay_queue_channel:{"
			                      "gd:catch}")) == 1)
				break;
			ht_sleep_ms(10);
		}
	}
	hl_object_free(d);
	{
		int k;
		for (k = 0; k < 200; k++) {
			if (ht_numsub(r, HT_S("redisson_delay_queue_channel:{"
			                      "gd:catch}")) == 0)
				break;
			ht_sleep_ms(10);
		}
		HT_EQ(ht_numsub(
		              r,
		              HT_S("redisson_delay_queue_channel:{gd:catch}")),
		      0);
	}
	raw_offer(r, "gd:catch", "late", wall() - 1, 1);
	ht_sleep_ms(1500);
	HT_EQ(llen(r, "gd:catch"), 5); /* no mover any more */
	hl_client_free(b);
}

/* Elements added without a message (as if it was lost): the fallback poll
 * moves them although no message and no start-up run named them. */
static void missed_message(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = dq(c, "gd:missed");
	int64_t t0;
	int k;
	/* the subscription is up and the start-up run found nothing */
	for (k = 0; k < 500 && ht_numsub(r, HT_S("redisson_delay_queue_"
	                                         "channel:{gd:missed}")) != 1;
	     k++)
		ht_sleep_ms(10);
	ht_sleep_ms(100);
	t0 = wall();
	raw_offer(r, "gd:missed", "p", t0 + 200, 1);
	raw_offer(r, "gd:missed", "q", t0 - 10, 2);
	HT_CHECK(wait_llen(r, "gd:missed", 2, 5000));
	HT_CHECKF(wall() - t0 <= 1000 + 1000 * ht_scale(),
	          "moved after %lld ms", (long long)(wall() - t0));
	{
		char buf[64];
		raw_list(r, "gd:missed", buf, sizeof buf);
		HT_STREQ(buf, "q|p");
	}
	hl_object_free(d);
	hl_client_free(c);
}

/* A server restart (an empty server, the subscription made anew):
 * elements added while the client was away are moved after it comes back,
 * and the channel is subscribed again. */
static void restart(void)
{
	ht_redis *r = ht_redis_start(NULL);
	hl_client_options o;
	hl_client *c;
	hl_object *d;
	int k;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 500;
	c = ht_client_url(r->url, &o);
	d = dq(c, "gd:restart");
	for (k = 0; k < 500 && ht_numsub(r, HT_S("redisson_delay_queue_"
	                                         "channel:{gd:restart}")) != 1;
	     k++)
		ht_sleep_ms(10);
	ht_redis_restart(r);
	raw_offer(r, "gd:restart", "r1", wall() - 5, 1);
	HT_CHECK(wait_llen(r, "gd:restart", 1, 10000));
	for (k = 0; k < 500 && ht_numsub(r, HT_S("redisson_delay_queue_"
	                                         "channel:{gd:restart}")) != 1;
	     k++)
		ht_sleep_ms(10);
	HT_EQ(ht_numsub(r, HT_S("redisson_delay_queue_channel:{gd:restart}")),
	      1);
	/* and a normal offer goes on working */
	HT_OK(hl_delayed_queue_offer(d, "r2", 2, 100));
	HT_CHECK(wait_llen(r, "gd:restart", 2, 5000));
	hl_object_free(d);
	hl_client_free(c);
	ht_redis_destroy(r);
}

/* An offer whose reply is lost is sent again and adds nothing twice, even
 * when the first copy was already moved (delay 0, another client's mover
 * running) before the resend came. */
typedef struct offer_run {
	hl_object *d;
	const char *v;
	int64_t delay;
	int rc;
} offer_run;

static void *offer_thread(void *arg)
{
	offer_run *o = arg;
	o->rc = hl_delayed_queue_offer(o->d, o->v, strlen(o->v), o->delay);
	return NULL;
}

static int landed(void *arg)
{
	ht_redis *r = arg;
	return zcard(r, "redisson_delay_queue_timeout:{gd:lost}") +
	               llen(r, "gd:lost") >
	       0;
}

static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c, *m = ht_client(r, 0);
	hl_object *d, *dm = dq(m, "gd:lost");
	hl_value *v = NULL;
	offer_run o;
	pthread_t t;
	c = ht_doubt_client(p->url, 40);
	d = dq(c, "gd:lost");
	/* the script cached (else the late first copy meets NOSCRIPT) */
	HT_OK(hl_delayed_queue_offer(d, "warm", 4, 0));
	HT_CHECK(wait_llen(r, "gd:lost", 1, 5000));
	ht_del(r, HT_S("gd:lost"));
	/* delay 0: m's mover takes it as soon as it landed */
	ht_proxy_cmd(p, "delay 400");
	o.d = d;
	o.v = "once";
	o.delay = 0;
	t = ht_thread_start(offer_thread, &o);
	HT_CHECK(ht_wait_until(landed, r, 5000));
	HT_CHECK(wait_llen(r, "gd:lost", 1, 5000)); /* moved already */
	ht_sleep_ms(300); /* the reply is lost: it is sent again */
	ht_proxy_cmd(p, "delay 0");
	ht_thread_join(t, 20000);
	HT_OK(o.rc);
	ht_sleep_ms(1200); /* any second copy would have moved by now */
	HT_EQ(llen(r, "gd:lost"), 1);
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:lost}"), 0);
	HT_EQ(llen(r, "redisson_delay_queue:{gd:lost}"), 0);
	/* a poll of the waiting part whose reply is lost answers, sent
	 * again, the element it took (not the next one) */
	hl_object_free(dm); /* no mover: they stay waiting */
	{
		hl_task *t = NULL;
		const hl_value *tv = NULL;
		char buf[32];
		int res = 0;
		HT_OK(hl_delayed_queue_offer(d, "p1", 2, 60000));
		HT_OK(hl_delayed_queue_offer(d, "p2", 2, 60000));
		HT_OK(hl_delayed_queue_poll(&v, d)); /* the script cached */
		hl_value_free(v);
		v = NULL;
		HT_OK(hl_delayed_queue_offer(d, "p1", 2, 60000));
		ht_proxy_cmd(p, "delay 400");
		HT_OK(hl_object_call_start(&t, d, HL_OP_DELAYED_QUEUE_POLL,
		                           NULL, 0));
		{
			int k; /* until it took one */
			for (k = 0;
			     k < 500 &&
			     llen(r, "redisson_delay_queue:{gd:lost}") != 1;
			     k++)
				ht_sleep_ms(10);
		}
		HT_EQ(llen(r, "redisson_delay_queue:{gd:lost}"), 1);
		ht_sleep_ms(300); /* its reply is lost: it is sent again */
		ht_proxy_cmd(p, "delay 0");
		HT_OK(ht_task_result(t, &res, 10000));
		HT_OK(hl_task_value(&tv, t));
		HT_STREQ(str(tv, buf, sizeof buf), "p2");
		hl_task_free(t);
		TAKE_STR(hl_delayed_queue_peek(&tv_, d), "p1");
		HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:lost}"), 1);
	}
	hl_object_free(d);
	hl_client_free(c);
	hl_client_free(m);
	ht_proxy_stop(p);
}

/* The mover's transfers lose their replies (the fault proxy delays them
 * past the command timeout) while elements come due: each is moved once
 * all the same, and those due later still move when the replies flow. */
static void mover_faults(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 2);
	hl_object *d = dq(c, "gd:mf");
	redisReply *x;
	static unsigned char seen[40];
	int64_t t0;
	int i, twice = 0;
	{
		int64_t n = -1;
		HT_OK(hl_delayed_queue_size(&n, d));
		HT_EQ(n, 0);
	}
	t0 = wall();
	for (i = 0; i < 30; i++) {
		char v[8];
		snprintf(v, sizeof v, "%d", i);
		raw_offer(r, "gd:mf", v, t0 + 100 + 60 * i, i);
	}
	ht_proxy_cmd(p, "delay 400");
	ht_sleep_ms(1200);
	ht_proxy_cmd(p, "delay 0");
	HT_CHECK(wait_llen(r, "gd:mf", 30, 10000));
	ht_sleep_ms(300);
	x = ht_raw(ht_raw_of(r), "LRANGE gd:mf 0 -1");
	HT_EQ(x->elements, 30);
	memset(seen, 0, sizeof seen);
	for (i = 0; i < (int)x->elements; i++) {
		int k = atoi(x->element[i]->str);
		if (k >= 0 && k < 40 && seen[k]++)
			twice++;
	}
	freeReplyObject(x);
	HT_EQ(twice, 0);
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:mf}"), 0);
	HT_EQ(llen(r, "redisson_delay_queue:{gd:mf}"), 0);
	hl_object_free(d);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *d = dq(c, "{user1}:jobs"), *q = NULL;
	int64_t n = 0;
	int i;
	HT_OK(hl_queue_new(&q, c, HT_S("{user1}:jobs")));
	HT_OK(hl_delayed_queue_offer(d, "j1", 2, 200));
	HT_OK(hl_delayed_queue_offer(d, "j2", 2, 0));
	for (i = 0; i < 500 && n < 2; i++) {
		HT_OK(hl_queue_size(&n, q));
		if (n < 2)
			ht_sleep_ms(10);
	}
	HT_EQ(n, 2);
	TAKE_STR(hl_queue_poll(&tv_, q), "j2");
	TAKE_STR(hl_queue_poll(&tv_, q), "j1");
	/* Another client's mover hears an offer at once (the offer also
	 * SPUBLISHes where movers subscribe sharded): not at its next
	 * one-second poll. This one's mover is off (destroy). */
	{
		hl_client *m = ht_client_url(cl->url, NULL);
		hl_object *dm = dq(m, "{user1}:jobs");
		int round;
		HT_OK(hl_delayed_queue_destroy(d));
		ht_sleep_ms(300); /* m's subscription is up */
		for (round = 0; round < 3; round++) {
			int64_t t0 = wall(), took;
			HT_OK(hl_delayed_queue_offer(d, "r", 1, 200));
			for (i = 0, n = 0; i < 500 && n < 1; i++) {
				HT_OK(hl_queue_size(&n, q));
				if (n < 1)
					ht_sleep_ms(5);
			}
			took = wall() - t0;
			HT_EQ(n, 1);
			HT_CHECKF(took >= 200 && took < 200 + 250 * ht_scale(),
			          "round %d: moved after %lld ms (due at 200)",
			          round, (long long)took);
			TAKE_STR(hl_queue_poll(&tv_, q), "r");
		}
		hl_object_free(dm);
		hl_client_free(m);
	}
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A Sentinel failover (kill -9 of the master) while elements wait: on the
 * new master the mover (subscribed again there) delivers every element
 * that reached it, each once; offers go on. */
static void sentinel_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	hl_object *d, *q = NULL;
	hl_value *v = NULL;
	char url[600];
	int old, i, k, twice = 0;
	int64_t n = 0;
	static unsigned char seen[40];
	ht_failover_options(&o, 6000);
	ht_sentinel_url(s, url, sizeof url);
	c = ht_client_url(url, &o);
	d = dq(c, "gd:fo");
	HT_OK(hl_queue_new(&q, c, HT_S("gd:fo")));
	for (i = 0; i < 20; i++) {
		char val[8];
		snprintf(val, sizeof val, "%d", i);
		HT_OK(hl_delayed_queue_offer(d, val, strlen(val),
		                             3000 + 50 * i));
	}
	ht_sentinel_wait_synced(s, 10000);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	for (i = 20; i < 30; i++) {
		char val[8];
		int rc;
		snprintf(val, sizeof val, "%d", i);
		for (k = 0; k < 50; k++) {
			rc = hl_delayed_queue_offer(d, val, strlen(val), 200);
			if (rc == HL_OK)
				break;
			HT_CHECKF(rc != HL_EINDOUBT, "offer in doubt: %s",
			          hl_error_last());
			ht_sleep_ms(100);
		}
		HT_OK(rc);
	}
	for (k = 0; k < 1000 && n < 30; k++) {
		if (hl_queue_size(&n, q) != HL_OK || n < 30)
			ht_sleep_ms(20);
	}
	HT_EQ(n, 30);
	memset(seen, 0, sizeof seen);
	HT_OK(hl_queue_poll_many(&v, q, 100));
	HT_EQ(hl_value_len(v), 30);
	for (i = 0; i < (int)hl_value_len(v); i++) {
		char buf[16];
		size_t len = 0;
		const char *p = hl_value_bytes(hl_value_at(v, (size_t)i), &len);
		int x;
		memcpy(buf, p, len < 15 ? len : 15);
		buf[len < 15 ? len : 15] = '\0';
		x = atoi(buf);
		if (x >= 0 && x < 40 && seen[x]++)
			twice++;
	}
	hl_value_free(v);
	HT_EQ(twice, 0);
	HT_OK(hl_delayed_queue_size(&n, d));
	HT_EQ(n, 0);
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = dq(c, "gd:bad");
	hl_value *v = NULL;
	HT_RC(hl_delayed_queue_offer(d, "x", 1, -1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "0 or more") != NULL);
	HT_RC(hl_delayed_queue_offer(d, "x", 1, (int64_t)1 << 41), HL_EINVAL);
	HT_RC(hl_delayed_queue_offer(d, "x", 1, INT64_MIN), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("redisson_delay_queue_timeout:{gd:bad}")), 0);
	HT_RC(hl_delayed_queue_offer(d, NULL, 3, 10), HL_EINVAL);
	/* the zset key of another type */
	freeReplyObject(ht_raw(ht_raw_of(r),
	                       "SET redisson_delay_queue_timeout:{gd:bad} s"));
	HT_RC(hl_delayed_queue_offer(d, "x", 1, 10), HL_EREDIS);
	ht_del(r, HT_S("redisson_delay_queue_timeout:{gd:bad}"));
	/* a member that is not packed: an error, not a crash */
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "RPUSH redisson_delay_queue:{gd:bad} zz"));
	HT_RC(hl_delayed_queue_peek(&v, d), HL_EREDIS);
	HT_CHECK(v == NULL);
	ht_del(r, HT_S("redisson_delay_queue:{gd:bad}"));
	/* a destination of another type: the mover fails, nothing lost;
	 * fixed, the element moves */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET gd:bad s"));
	HT_OK(hl_delayed_queue_offer(d, "y", 1, 0));
	ht_sleep_ms(300);
	HT_EQ(zcard(r, "redisson_delay_queue_timeout:{gd:bad}"), 1);
	ht_del(r, HT_S("gd:bad"));
	HT_CHECK(wait_llen(r, "gd:bad", 1, 5000));
	/* destroy stops this object's mover; the calls still work */
	HT_OK(hl_delayed_queue_destroy(d));
	HT_OK(hl_delayed_queue_destroy(d));
	HT_OK(hl_delayed_queue_offer(d, "z", 1, 0));
	ht_sleep_ms(1500);
	HT_EQ(llen(r, "gd:bad"), 1);
	hl_object_free(d);
	hl_client_free(c);
	/* the client freed (closed) before its open delayed queue: the
	 * close stops the mover; the object goes later */
	c = ht_client(r, 0);
	d = dq(c, "gd:bad2");
	ht_sleep_ms(50);
	hl_client_free(c);
	HT_RC(hl_delayed_queue_offer(d, "w", 1, 0), HL_ECLOSED);
	hl_object_free(d);
}

HT_MAIN(HT_CASE(ops), HT_CASE(due_time), HT_CASE(order), HT_CASE(two_movers),
        HT_CASE(catch_up), HT_CASE(missed_message), HT_CASE(restart),
        HT_CASE(lost_reply), HT_CASE(mover_faults), HT_CASE(cluster),
        HT_CASE(sentinel_failover), HT_CASE(bad_input))
