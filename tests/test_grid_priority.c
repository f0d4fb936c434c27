/*
 * The priority queue and deque (Redisson's RPriorityQueue and
 * RPriorityDeque: core/grid/priority_queue.kind, priority_deque.kind,
 * docs/grid-priority-queue.md): a Redis list kept in Java's natural order
 * of Strings with duplicates, written by the sorted set's scripts, which
 * defer to Redisson's lock (redisson_sortedset_lock:{name}, here taken by
 * hand as its hash); the comparator key in its suffix form refused; polls
 * that answer nil at once when empty and answer what they took when their
 * reply is lost; a cluster hash tag; bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hl_object *pq(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_priority_queue_new(&o, c, name, strlen(name)));
	return o;
}

static hl_object *pd(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_priority_deque_new(&o, c, name, strlen(name)));
	return o;
}

/* ---- Java's String.compareTo, computed apart --------------------------- */

/* The next UTF-16 code unit of the valid UTF-8 s at *i (a supplementary
 * character gives its high surrogate, then *pending its low one). */
static unsigned next_unit(const unsigned char *s, size_t *i, unsigned *pending)
{
	unsigned c = s[*i], cp;
	if (*pending) {
		cp = *pending;
		*pending = 0;
		return cp;
	}
	if (c < 0x80) {
		*i += 1;
		return c;
	}
	if (c < 0xE0) {
		cp = ((c & 0x1Fu) << 6) | (s[*i + 1] & 0x3Fu);
		*i += 2;
		return cp;
	}
	if (c < 0xF0) {
		cp = ((c & 0x0Fu) << 12) | ((s[*i + 1] & 0x3Fu) << 6) |
		     (s[*i + 2] & 0x3Fu);
		*i += 3;
		return cp;
	}
	cp = ((c & 0x07u) << 18) | ((s[*i + 1] & 0x3Fu) << 12) |
	     ((s[*i + 2] & 0x3Fu) << 6) | (s[*i + 3] & 0x3Fu);
	*i += 4;
	cp -= 0x10000;
	*pending = 0xDC00 + (cp & 0x3FF);
	return 0xD800 + (cp >> 10);
}

static int java_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	size_t i = 0, j = 0;
	unsigned pa = 0, pb = 0;
	while ((i < la || pa) && (j < lb || pb)) {
		unsigned x = next_unit((const unsigned char *)a, &i, &pa);
		unsigned y = next_unit((const unsigned char *)b, &j, &pb);
		if (x != y)
			return x < y ? -1 : 1;
	}
	if ((i < la || pa) == (j < lb || pb))
		return 0;
	return (i < la || pa) ? 1 : -1;
}

/* Java's order with the byte-order traps (as the sorted set's test):
 * supplementary characters before U+E000..U+FFFF. */
static const char *const vectors[] = {
        "",                             /* the empty String first */
        "\x00",                         /* U+0000 */
        "A",                            /* ASCII */
        "AB",                           /* a prefix first */
        "a",                            /* lower after upper */
        "\xc3\xa9",                     /* U+00E9 */
        "\xe0\xa0\x80",                 /* U+0800 */
        "\xf0\x90\x80\x80",             /* U+10000: D800 DC00 */
        "\xf0\x9f\x98\x80",             /* U+1F600: D83D DE00 */
        "\xf4\x8f\xbf\xbf",             /* U+10FFFF */
        "\xee\x80\x80",                 /* U+E000: after every surrogate */
        "\xef\xbc\xa1",                 /* U+FF21 */
        "\xef\xbf\xbf",                 /* U+FFFF */
        "\xef\xbf\xbf\xf0\x9f\x98\x80", /* U+FFFF U+1F600 */
};
#define NVEC (sizeof(vectors) / sizeof(vectors[0]))

static size_t vlen(size_t i)
{
	return i == 1 ? 1 : strlen(vectors[i]);
}

static int bytes_eq(const hl_value *v, const char *want, size_t len)
{
	size_t n = 0;
	const char *b;
	if (hl_value_type(v) != HL_VALUE_BYTES)
		return 0;
	b = hl_value_bytes(v, &n);
	return n == len && memcmp(b, want, len) == 0;
}

/* Every vector added twice in a shuffled order lands in Java's order, the
 * two copies side by side; polls take them lowest first. */
static void order(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:order");
	hl_value *v = NULL, *all = NULL;
	size_t i, k;
	int ok = 0;
	int64_t n = 0;

	for (i = 1; i < NVEC; i++) /* the oracle agrees with the vectors */
		HT_CHECKF(java_cmp(vectors[i - 1], vlen(i - 1), vectors[i],
		                   vlen(i)) < 0,
		          "vector %zu", i);
	/* byte order puts U+1F600 after U+FF21: Java's does not */
	HT_CHECK(memcmp("\xf0\x9f\x98\x80", "\xef\xbc\xa1", 3) > 0);
	for (k = 0; k < 2; k++)
		for (i = 0; i < NVEC; i++) {
			size_t j = (i * 5 + 3 + k) % NVEC; /* 5 prime to 14 */
			HT_OK(hl_priority_queue_add(&ok, q, vectors[j],
			                            vlen(j)));
			HT_EQ(ok, 1);
		}
	HT_OK(hl_priority_queue_size(&n, q));
	HT_EQ(n, (int64_t)(2 * NVEC));
	HT_OK(hl_priority_queue_read_range(&all, q, 0, -1));
	HT_EQ(hl_value_len(all), 2 * NVEC);
	for (i = 0; i < 2 * NVEC && i < hl_value_len(all); i++)
		HT_CHECKF(bytes_eq(hl_value_at(all, i), vectors[i / 2],
		                   vlen(i / 2)),
		          "index %zu holds another value", i);
	hl_value_free(all);
	for (i = 0; i < NVEC; i++) {
		HT_OK(hl_priority_queue_contains(&ok, q, vectors[i], vlen(i)));
		HT_EQ(ok, 1);
	}
	HT_OK(hl_priority_queue_contains(&ok, q, "\xef\xbc\xa2", 3));
	HT_EQ(ok, 0);
	HT_OK(hl_priority_queue_peek(&v, q));
	HT_CHECK(bytes_eq(v, "", 0));
	hl_value_free(v);
	for (i = 0; i < 2 * NVEC; i++) {
		HT_OK(hl_priority_queue_poll(&v, q));
		HT_CHECKF(bytes_eq(v, vectors[i / 2], vlen(i / 2)),
		          "poll %zu took another value", i);
		hl_value_free(v);
	}
	HT_OK(hl_priority_queue_poll(&v, q));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	/* Redisson's keys: the list is gone, no lock or comparator left */
	HT_EQ(ht_exists(r, HT_S("grid:pq:order")), 0);
	HT_EQ(ht_exists(r, HT_S("redisson_sortedset_lock:{grid:pq:order}")), 0);
	hl_object_free(q);
	hl_client_free(c);
}

/* An equal value goes after the equal ones (at the end: RPUSH, not an
 * insert before the first equal); remove takes one occurrence; 1500
 * values read in pages keep the order. */
static void duplicates(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:dup");
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	long long ins, push;
	int64_t n = 0;
	size_t i;

	HT_OK(hl_priority_queue_add(&ok, q, HT_S("b")));
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("a")));
	ins = ht_cmd_calls(r, "linsert");
	push = ht_cmd_calls(r, "rpush");
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("b"))); /* a b | b */
	HT_EQ(ok, 1);
	HT_EQ(ht_cmd_calls(r, "linsert"), ins);
	HT_EQ(ht_cmd_calls(r, "rpush"), push + 1);
	HT_OK(hl_priority_queue_offer(&ok, q, HT_S("c")));
	HT_EQ(ok, 1);
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("b"))); /* before c */
	HT_EQ(ht_cmd_calls(r, "linsert"), ins + 1);
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("a")));
	HT_EQ(raw_list(r, "grid:pq:dup", buf, sizeof buf), 6);
	HT_STREQ(buf, "a|a|b|b|b|c");
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("b")));
	HT_EQ(ok, 1);
	HT_EQ(raw_list(r, "grid:pq:dup", buf, sizeof buf), 5);
	HT_STREQ(buf, "a|a|b|b|c");
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("c")));
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("c")));
	HT_EQ(ok, 0);
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("a")));
	HT_EQ(raw_list(r, "grid:pq:dup", buf, sizeof buf), 3);
	HT_STREQ(buf, "a|b|b");
	HT_OK(hl_priority_queue_contains(&ok, q, HT_S("b")));
	HT_EQ(ok, 1);
	HT_OK(hl_object_delete(&ok, q));
	HT_EQ(ok, 1);
	/* 1500 values (past the listpack), each twice: pages of 1000 */
	for (i = 0; i < 1500; i++) {
		int k = snprintf(buf, sizeof buf, "k%05zu", (i * 7919) % 750);
		HT_OK(hl_priority_queue_add(&ok, q, buf, (size_t)k));
	}
	HT_OK(hl_priority_queue_size(&n, q));
	HT_EQ(n, 1500);
	HT_OK(hl_priority_queue_read_range(&v, q, 1000, 1999));
	HT_EQ(hl_value_len(v), 500);
	HT_CHECK(bytes_eq(hl_value_at(v, 0), "k00500", 6) &&
	         bytes_eq(hl_value_at(v, 499), "k00749", 6));
	hl_value_free(v);
	HT_OK(hl_priority_queue_read_range(&v, q, 0, 999));
	HT_EQ(hl_value_len(v), 1000);
	for (i = 0; i < 1000; i++) {
		snprintf(buf, sizeof buf, "k%05zu", i / 2);
		HT_CHECKF(bytes_eq(hl_value_at(v, i), buf, 6), "at %zu", i);
	}
	hl_value_free(v);
	hl_object_free(q);
	hl_client_free(c);
}

/* ---- empty, and the deque's ends ---------------------------------------- */

static void hold_lock(ht_redis *r, const char *lock, long long ms)
{
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET %s %s 1", lock,
	                       "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:7"));
	if (ms > 0)
		freeReplyObject(
		        ht_raw(ht_raw_of(r), "PEXPIRE %s %lld", lock, ms));
}

/* Polls and peeks of an empty queue answer nil, create nothing, and do
 * not wait for a held lock (Redisson 4.3.1: LLEN first). */
static void empty(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:empty");
	hl_object *d = pd(c, "grid:pq:empty");
	const char *lock = "redisson_sortedset_lock:{grid:pq:empty}";
	hl_value *v = NULL;
	int64_t t0;
	int ok = 0;

	HT_OK(hl_priority_queue_poll(&v, q));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_priority_queue_peek(&v, q));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_priority_deque_peek_last(&v, d));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("x")));
	HT_EQ(ok, 0);
	HT_EQ(ht_exists(r, HT_S("grid:pq:empty")), 0);
	/* a held lock: still nil at once, from both ends */
	hold_lock(r, lock, 30000);
	t0 = ht_now_ms();
	HT_OK(hl_priority_queue_poll(&v, q));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_priority_deque_poll_last(&v, d));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_priority_deque_poll_first(&v, d));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_CHECK(ht_now_ms() - t0 < 1000 * ht_scale());
	HT_EQ(ht_hlen(r, HT_S(lock)), 1); /* untouched */
	/* no marker kept for a nil answer */
	{
		redisReply *k = ht_raw(ht_raw_of(r), "KEYS hilock_request:*");
		HT_EQ(k->elements, 0);
		freeReplyObject(k);
	}
	ht_del(r, HT_S(lock));
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
}

/* The deque: both ends read and taken in order; adds are the queue's. */
static void deque(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = pd(c, "grid:pd:ends");
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	const char *in[] = {"m", "c", "x", "c", "a", "z"};
	size_t i;

	for (i = 0; i < 6; i++) {
		HT_OK(hl_priority_deque_add(&ok, d, in[i], 1));
		HT_EQ(ok, 1);
	}
	HT_EQ(raw_list(r, "grid:pd:ends", buf, sizeof buf), 6);
	HT_STREQ(buf, "a|c|c|m|x|z");
	TAKE_STR(hl_priority_deque_peek_first(&tv_, d), "a");
	TAKE_STR(hl_priority_deque_peek_last(&tv_, d), "z");
	TAKE_STR(hl_priority_deque_poll_last(&tv_, d), "z");
	TAKE_STR(hl_priority_deque_poll_first(&tv_, d), "a");
	TAKE_STR(hl_priority_deque_poll(&tv_, d), "c");
	TAKE_STR(hl_priority_deque_poll_last(&tv_, d), "x");
	TAKE_STR(hl_priority_deque_peek(&tv_, d), "c");
	HT_EQ(raw_list(r, "grid:pd:ends", buf, sizeof buf), 2);
	HT_STREQ(buf, "c|m");
	HT_OK(hl_priority_deque_contains(&ok, d, HT_S("m")));
	HT_EQ(ok, 1);
	/* the same list as a priority queue of the same name */
	{
		hl_object *q = pq(c, "grid:pd:ends");
		HT_OK(hl_priority_queue_offer(&ok, q, HT_S("d")));
		TAKE_STR(hl_priority_queue_poll(&tv_, q), "c");
		hl_object_free(q);
	}
	HT_OK(hl_priority_deque_poll_last(&v, d));
	HT_CHECK(bytes_eq(v, "m", 1));
	hl_value_free(v);
	HT_EQ(raw_list(r, "grid:pd:ends", buf, sizeof buf), 1);
	HT_STREQ(buf, "d");
	hl_object_free(d);
	hl_client_free(c);
}

/* ---- Redisson's lock --------------------------------------------------- */

static long long evals0;

static int polled_thrice(void *arg)
{
	return ht_cmd_calls(arg, "evalsha") >= evals0 + 3;
}

/* While Redisson's lock hash exists add, remove and polls of a non-empty
 * queue write nothing and poll; once it is gone they land. A timeout ends
 * the wait naming the lock. */
static void redisson_lock(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:locked");
	hl_object *d = pd(c, "grid:pq:locked");
	const char *lock = "redisson_sortedset_lock:{grid:pq:locked}";
	hl_task *t = NULL;
	hl_arg arg;
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	char buf[64];
	int ok = 0, res = -1;
	int64_t t0;

	HT_OK(hl_priority_queue_add(&ok, q, HT_S("m")));
	hold_lock(r, lock, 30000);
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "b";
	arg.len = 1;
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_QUEUE_ADD, &arg, 1));
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000)); /* it polls */
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_priority_queue_contains(&ok, q, HT_S("m"))); /* no lock */
	HT_EQ(ok, 1);
	HT_OK(hl_priority_queue_peek(&v, q)); /* a read */
	HT_CHECK(bytes_eq(v, "m", 1));
	hl_value_free(v);
	HT_EQ(raw_list(r, "grid:pq:locked", buf, sizeof buf), 1);
	HT_EQ(ht_hlen(r, HT_S(lock)), 1); /* untouched */
	ht_del(r, HT_S(lock));            /* Redisson's unlock */
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_int(tv), 1);
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:pq:locked", buf, sizeof buf), 2);
	HT_STREQ(buf, "b|m");

	/* a poll of a non-empty queue waits, then answers what it took */
	hold_lock(r, lock, 30000);
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_QUEUE_POLL, NULL, 0));
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000));
	HT_EQ(hl_task_done(t), 0);
	HT_EQ(raw_list(r, "grid:pq:locked", buf, sizeof buf), 2);
	ht_del(r, HT_S(lock));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "b", 1));
	hl_task_free(t);
	/* the deque's tail the same way */
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("z")));
	hold_lock(r, lock, 30000);
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_object_call_start(&t, d, HL_OP_PRIORITY_DEQUE_POLL_LAST, NULL,
	                           0));
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000));
	HT_EQ(hl_task_done(t), 0);
	ht_del(r, HT_S(lock));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "z", 1));
	hl_task_free(t);

	/* a lease that runs out (a Redisson writer that died) frees it */
	hold_lock(r, lock, 300);
	t0 = ht_now_ms();
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("m")));
	HT_EQ(ok, 1);
	HT_CHECK(ht_now_ms() - t0 >= 200);

	/* a timeout while held: HL_ETIMEDOUT naming the lock, nothing done */
	hold_lock(r, lock, 0);
	arg.bytes = "y";
	t0 = ht_now_ms();
	HT_RC(hl_object_call_ex(&v, q, HL_OP_PRIORITY_QUEUE_OFFER, &arg, 1, 300,
	                        NULL),
	      HL_ETIMEDOUT);
	HT_CHECK(strstr(hl_error_last(), lock) != NULL);
	HT_CHECK(strstr(hl_error_last(), "queue's lock") != NULL);
	HT_CHECK(ht_now_ms() - t0 < 3000 * ht_scale());
	HT_EQ(ht_exists(r, HT_S("grid:pq:locked")), 0);
	HT_EQ(ht_hlen(r, HT_S(lock)), 1);
	ht_del(r, HT_S(lock));
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
}

/* A queue that a Java comparator orders ({name}:redisson_sortedset_
 * comparator, the suffix form) is refused by what compares, naming the key
 * and the class; the sorted set's prefix-form key is not this queue's. */
static void comparator(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:cmp");
	const char *ck = "{grid:pq:cmp}:redisson_sortedset_comparator";
	const char *sk = "redisson_sortedset_comparator:{grid:pq:cmp}";
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;

	HT_OK(hl_priority_queue_add(&ok, q, HT_S("b")));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", ck,
	                       "com.example.ReverseCmp:3f2a9c"));
	HT_RC(hl_priority_queue_add(&ok, q, HT_S("a")), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), ck) != NULL);
	HT_CHECK(strstr(hl_error_last(), "com.example.ReverseCmp") != NULL);
	HT_CHECK(strstr(hl_error_last(), "queue is ordered") != NULL);
	HT_RC(hl_priority_queue_offer(&ok, q, HT_S("a")), HL_EINVAL);
	HT_RC(hl_priority_queue_remove(&ok, q, HT_S("b")), HL_EINVAL);
	HT_RC(hl_priority_queue_contains(&ok, q, HT_S("b")), HL_EINVAL);
	HT_OK(hl_priority_queue_size(&n, q));
	HT_EQ(n, 1);
	HT_OK(hl_priority_queue_peek(&v, q)); /* reads still read */
	HT_CHECK(bytes_eq(v, "b", 1));
	hl_value_free(v);
	HT_EQ(ht_cmd_calls(r, "lpush") + ht_cmd_calls(r, "linsert"), 0);
	ht_del(r, HT_S(ck));
	/* the sorted set's key (another object's) changes nothing here */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", sk, "x.Y:1"));
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("a")));
	HT_EQ(ok, 1);
	ht_del(r, HT_S(sk));
	/* delete removes Redisson's keys: the list and its helpers */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", ck, "x.Y:1"));
	HT_OK(hl_object_delete(&ok, q));
	HT_EQ(ok, 1);
	HT_EQ(ht_exists(r, HT_S("grid:pq:cmp")), 0);
	HT_EQ(ht_exists(r, HT_S(ck)), 0);
	hl_object_free(q);
	hl_client_free(c);
}

/* ---- lost replies ------------------------------------------------------- */

static int two_left(void *arg)
{
	return llen_is(arg, "grid:pq:doubt", 2);
}

static int one_left(void *arg)
{
	return llen_is(arg, "grid:pq:doubt", 1);
}

static int three_there(void *arg)
{
	return llen_is(arg, "grid:pq:doubt", 3);
}

/* add is once (in doubt, applied once); a poll is marked: the resend
 * answers what the first run took and nothing else is taken. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *q = pq(c, "grid:pq:doubt");
	hl_object *d = pd(c, "grid:pq:doubt");
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0, res = 0;

	HT_OK(hl_priority_queue_add(&ok, q, HT_S("b"))); /* scripts cached */
	HT_OK(hl_priority_queue_poll(&v, q));
	hl_value_free(v);
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("c")));
	HT_OK(hl_priority_queue_add(&ok, q, HT_S("a")));
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_priority_queue_add(&ok, q, HT_S("b")), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(three_there, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	HT_EQ(raw_list(r, "grid:pq:doubt", buf, sizeof buf), 3);
	HT_STREQ(buf, "a|b|c");                               /* added once */
	HT_OK(hl_priority_queue_contains(&ok, q, HT_S("b"))); /* reconnected */
	HT_EQ(ok, 1);
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_QUEUE_POLL, NULL, 0));
	HT_CHECK(ht_wait_until(two_left, r, 10000)); /* it took "a" */
	ht_sleep_ms(300);                            /* its reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "a", 1));
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:pq:doubt", buf, sizeof buf), 2);
	HT_STREQ(buf, "b|c");
	/* the deque's tail */
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, d, HL_OP_PRIORITY_DEQUE_POLL_LAST, NULL,
	                           0));
	HT_CHECK(ht_wait_until(one_left, r, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "c", 1));
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:pq:doubt", buf, sizeof buf), 1);
	HT_STREQ(buf, "b");
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- a cluster ---------------------------------------------------------- */

static ht_node *lock_node;
static long long node_evals0;

static long long node_evals(ht_node *n)
{
	char v[200];
	const char *p;
	if (!ht_node_info(n, "commandstats", "cmdstat_evalsha", v, sizeof v))
		return 0;
	p = strstr(v, "calls=");
	return p ? atoll(p + 6) : 0;
}

static int node_polled_thrice(void *arg)
{
	(void)arg;
	return node_evals(lock_node) >= node_evals0 + 3;
}

/* A hash-tagged name: the list, the lock and the comparator key share a
 * slot; a lock held on that node is waited for; a comparator there is
 * refused. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	const char *name = "{user1}:pq";
	const char *lock = "redisson_sortedset_lock:{user1}:pq";
	const char *ck = "{user1}:pq:redisson_sortedset_comparator";
	hl_object *q = pq(c, name);
	hl_object *d = pd(c, name);
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	hl_arg arg;
	int ok = 0, i, res = 0, slot;
	int64_t n = 0;
	char buf[16];
	redisReply *rep;

	slot = ht_cluster_slot_of(cl, HT_S(name));
	HT_EQ(ht_cluster_slot_of(cl, HT_S(lock)), slot);
	HT_EQ(ht_cluster_slot_of(cl, HT_S(ck)), slot);
	lock_node = ht_cluster_node(cl, ht_cluster_master_of_slot(cl, slot));
	for (i = 9; i >= 0; i--) {
		int k = snprintf(buf, sizeof buf, "%d", i % 5);
		HT_OK(hl_priority_queue_add(&ok, q, buf, (size_t)k));
		HT_EQ(ok, 1);
	}
	HT_OK(hl_priority_queue_size(&n, q));
	HT_EQ(n, 10);
	TAKE_STR(hl_priority_queue_poll(&tv_, q), "0");
	TAKE_STR(hl_priority_deque_poll_last(&tv_, d), "4");
	TAKE_STR(hl_priority_queue_peek(&tv_, q), "0");
	HT_OK(hl_priority_queue_remove(&ok, q, HT_S("2")));
	HT_EQ(ok, 1);
	HT_OK(hl_priority_queue_contains(&ok, q, HT_S("2")));
	HT_EQ(ok, 1); /* its twin */
	/* Redisson's lock on the slot's node: waited for */
	rep = ht_node_cmd(lock_node, "HSET %s %s 1", lock,
	                  "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:9");
	freeReplyObject(rep);
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "1";
	arg.len = 1;
	node_evals0 = node_evals(lock_node);
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_QUEUE_ADD, &arg, 1));
	HT_CHECK(ht_wait_until(node_polled_thrice, NULL, 10000));
	HT_EQ(hl_task_done(t), 0);
	freeReplyObject(ht_node_cmd(lock_node, "DEL %s", lock));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_int(tv), 1);
	hl_task_free(t);
	HT_OK(hl_priority_queue_read_range(&v, q, 0, -1));
	HT_EQ(hl_value_len(v), 8);
	HT_CHECK(bytes_eq(hl_value_at(v, 0), "0", 1) &&
	         bytes_eq(hl_value_at(v, 1), "1", 1) &&
	         bytes_eq(hl_value_at(v, 2), "1", 1) &&
	         bytes_eq(hl_value_at(v, 3), "1", 1) &&
	         bytes_eq(hl_value_at(v, 7), "4", 1));
	hl_value_free(v);
	/* the comparator key on that node: refused */
	freeReplyObject(ht_node_cmd(lock_node, "SET %s %s", ck, "a.B:1"));
	HT_RC(hl_priority_queue_add(&ok, q, HT_S("5")), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), ck) != NULL);
	HT_OK(hl_object_delete(&ok, q));
	HT_EQ(ok, 1);
	rep = ht_node_cmd(lock_node, "EXISTS %s", ck);
	HT_EQ(rep->integer, 0);
	freeReplyObject(rep);
	/* a take waits on the slot's channel: an add wakes it at once */
	{
		hl_object *b = NULL;
		int64_t t0, took;
		HT_OK(hl_priority_blocking_queue_new(&b, c, HT_S(name)));
		HT_OK(hl_object_call_start(
		        &t, b, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE, NULL, 0));
		ht_wait_waiting(c, 1);
		ht_sleep_ms(700);
		HT_EQ(hl_task_done(t), 0);
		t0 = ht_now_ms();
		HT_OK(hl_priority_queue_add(&ok, q, HT_S("w")));
		HT_OK(ht_task_result(t, &res, 10000));
		took = ht_now_ms() - t0;
		HT_CHECKF(took < 120 * ht_scale(), "woken after %lld ms",
		          (long long)took);
		HT_OK(hl_task_value(&tv, t));
		HT_CHECK(bytes_eq(tv, "w", 1));
		hl_task_free(t);
		hl_object_free(b);
	}
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* ---- bad input ---------------------------------------------------------- */

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pq(c, "grid:pq:bad");
	hl_object *d = pd(c, "grid:pq:bad");
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;
	char *big;
	size_t len = 0;

	/* not UTF-8: refused before any round trip */
	HT_RC(hl_priority_queue_add(&ok, q, "\xff", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "UTF-8") != NULL);
	HT_RC(hl_priority_queue_offer(&ok, q, "ab\xc3", 3), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "offer") != NULL);
	HT_CHECK(strstr(hl_error_last(), "byte 2") != NULL);
	HT_RC(hl_priority_deque_add(&ok, d, "\xed\xa0\x80", 3), HL_EINVAL);
	HT_RC(hl_priority_queue_add(&ok, q, NULL, 1), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:pq:bad")), 0);
	/* NUL and empty values are values; a big one too (1 MiB) */
	HT_OK(hl_priority_queue_add(&ok, q, "a\0b", 3));
	HT_OK(hl_priority_queue_add(&ok, q, "", 0));
	HT_OK(hl_priority_queue_add(&ok, q, "", 0));
	big = malloc(1 << 20);
	memset(big, 'q', 1 << 20);
	HT_OK(hl_priority_queue_add(&ok, q, big, 1 << 20));
	HT_OK(hl_priority_queue_contains(&ok, q, big, 1 << 20));
	HT_EQ(ok, 1);
	big[(1 << 20) - 1] = 'r';
	HT_OK(hl_priority_queue_contains(&ok, q, big, 1 << 20));
	HT_EQ(ok, 0);
	free(big);
	HT_OK(hl_priority_deque_peek_last(&v, d));
	hl_value_bytes(v, &len);
	HT_EQ(len, (size_t)1 << 20);
	hl_value_free(v);
	HT_OK(hl_priority_queue_size(&n, q));
	HT_EQ(n, 4);
	TAKE_STR(hl_priority_queue_poll(&tv_, q), "");
	TAKE_STR(hl_priority_queue_poll(&tv_, q), "");
	TAKE_STR(hl_priority_queue_poll(&tv_, q), "a0b");
	/* read_range out of range: empty */
	HT_OK(hl_priority_queue_read_range(&v, q, 5, 10));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	/* another type at the key */
	ht_del(r, HT_S("grid:pq:bad"));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET grid:pq:bad x"));
	HT_RC(hl_priority_queue_add(&ok, q, HT_S("a")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_priority_queue_poll(&v, q), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_priority_deque_poll_last(&v, d), HL_EREDIS);
	HT_RC(hl_priority_queue_peek(&v, q), HL_EREDIS);
	HT_RC(hl_priority_queue_contains(&ok, q, HT_S("a")), HL_EREDIS);
	HT_RC(hl_priority_queue_size(&n, q), HL_EREDIS);
	ht_del(r, HT_S("grid:pq:bad"));
	/* another type at the lock key: not a lock, never waited for */
	freeReplyObject(ht_raw(ht_raw_of(r),
	                       "SET redisson_sortedset_lock:{grid:pq:bad} x"));
	HT_RC(hl_priority_queue_add(&ok, q, HT_S("a")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "queue's lock key") != NULL);
	HT_OK(hl_priority_queue_poll(&v, q)); /* empty: nil before the lock */
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH grid:pq:bad a"));
	HT_RC(hl_priority_queue_poll(&v, q), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "lock key") != NULL);
	ht_del(r, HT_S("redisson_sortedset_lock:{grid:pq:bad}"));
	TAKE_STR(hl_priority_queue_poll(&tv_, q), "a");
	/* a call of another kind's op on it is refused */
	HT_RC(hl_object_call(&v, q, HL_OP_SORTED_SET_ADD, NULL, 0), HL_EINVAL);
	hl_object_free(q);
	hl_object_free(d);
	hl_client_free(c);
}

/* ---- the blocking queue's take ------------------------------------------ */

static hl_object *pbq(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_priority_blocking_queue_new(&o, c, name, strlen(name)));
	return o;
}

/* A take waits as a task that listens on the hilock-only channel: a hilock
 * add wakes it at once (well inside the 250 ms back-off it has grown to);
 * a raw RPUSH (a Java producer publishes nothing) is found by the
 * back-off; poll_timeout answers nil after its timeout; a task's value is
 * what it took. */
static void take(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_client *p = ht_client(r, 0);
	hl_object *q = pbq(c, "grid:pbq:take");
	hl_object *adder = pq(p, "grid:pbq:take");
	const char *chan = "hilock_priority_queue_channel:{grid:pbq:take}";
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0, res = 0;
	int64_t t0, took;

	/* a value there: taken at once, blocking call */
	HT_OK(hl_priority_queue_add(&ok, adder, HT_S("b")));
	HT_OK(hl_priority_blocking_queue_take(&v, q));
	HT_CHECK(bytes_eq(v, "b", 1));
	hl_value_free(v);
	/* empty: the task waits, subscribed, until a hilock add */
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	ht_wait_waiting(c, 1);
	HT_EQ(ht_numsub(r, HT_S(chan)), 1);
	ht_sleep_ms(700); /* its back-off at its longest */
	HT_EQ(hl_task_done(t), 0);
	t0 = ht_now_ms();
	HT_OK(hl_priority_queue_add(&ok, adder, HT_S("x")));
	HT_OK(ht_task_result(t, &res, 10000));
	took = ht_now_ms() - t0;
	HT_CHECKF(took < 120 * ht_scale(), "woken after %lld ms",
	          (long long)took);
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "x", 1));
	hl_task_free(t);
	HT_EQ(ht_exists(r, HT_S("grid:pbq:take")), 0);
	/* a Java producer (RPUSH, no message): found by the back-off */
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	ht_wait_waiting(c, 1);
	ht_sleep_ms(500);
	t0 = ht_now_ms();
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH grid:pbq:take j"));
	HT_OK(ht_task_result(t, &res, 10000));
	took = ht_now_ms() - t0;
	HT_CHECKF(took < 1000 * ht_scale(), "found after %lld ms",
	          (long long)took);
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "j", 1));
	hl_task_free(t);
	/* poll_timeout: nil once the time is up; a value at once */
	t0 = ht_now_ms();
	HT_OK(hl_priority_blocking_queue_poll_timeout(&v, q, 300));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_CHECK(ht_now_ms() - t0 >= 290);
	HT_OK(hl_priority_queue_add(&ok, adder, HT_S("m")));
	HT_OK(hl_priority_blocking_queue_poll_timeout(&v, q, 60000));
	HT_CHECK(bytes_eq(v, "m", 1));
	hl_value_free(v);
	/* a call's own timeout bounds a take: nil, not an error */
	HT_OK(hl_object_call_ex(&v, q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE, NULL,
	                        0, 200, NULL));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_EQ(raw_list(r, "grid:pbq:take", buf, sizeof buf), 0);
	hl_object_free(q);
	hl_object_free(adder);
	hl_client_free(c);
	hl_client_free(p);
}

/* This client's takers queue FIFO (one competes); each value goes to one
 * taker; a taker cancelled while waiting takes nothing. */
static void takers(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = pbq(c, "grid:pbq:takers");
	hl_task *t[3] = {NULL, NULL, NULL};
	const hl_value *tv = NULL;
	char buf[64];
	int ok = 0, res = 0, i;

	for (i = 0; i < 3; i++)
		HT_OK(hl_object_call_start(
		        &t[i], q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE, NULL, 0));
	ht_wait_waiting(c, 3); /* the head; the others queue behind it */
	hl_task_cancel(t[1]);
	HT_RC(ht_task_result(t[1], &res, 10000), HL_EINTERRUPTED);
	HT_OK(hl_priority_blocking_queue_put(&ok, q, HT_S("b")));
	HT_OK(ht_task_result(t[0], &res, 10000)); /* the first came first */
	HT_OK(hl_task_value(&tv, t[0]));
	HT_CHECK(bytes_eq(tv, "b", 1));
	HT_EQ(hl_task_done(t[2]), 0);
	HT_OK(hl_priority_blocking_queue_add(&ok, q, HT_S("a")));
	HT_OK(ht_task_result(t[2], &res, 10000));
	HT_OK(hl_task_value(&tv, t[2]));
	HT_CHECK(bytes_eq(tv, "a", 1));
	HT_EQ(raw_list(r, "grid:pbq:takers", buf, sizeof buf), 0);
	for (i = 0; i < 3; i++)
		hl_task_free(t[i]);
	/* a cancel that comes after the value was taken puts it back: a
	 * task freed (cancelled) at once after an add finds either */
	HT_OK(hl_priority_blocking_queue_put(&ok, q, HT_S("k")));
	HT_OK(hl_object_call_start(&t[0], q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	hl_task_cancel(t[0]);
	res = ht_task_result(t[0], &res, 10000);
	if (res == HL_OK) { /* done before the cancel: it has "k" */
		HT_OK(hl_task_value(&tv, t[0]));
		HT_CHECK(bytes_eq(tv, "k", 1));
		HT_EQ(raw_list(r, "grid:pbq:takers", buf, sizeof buf), 0);
	} else { /* cancelled: "k" is in the queue (put back, or never
		    taken) */
		HT_EQ(res, HL_EINTERRUPTED);
		HT_EQ(raw_list(r, "grid:pbq:takers", buf, sizeof buf), 1);
		HT_STREQ(buf, "k");
	}
	hl_task_free(t[0]);
	hl_object_free(q);
	hl_client_free(c);
}

static int pbq_taken(void *arg)
{
	return llen_is(arg, "grid:pbq:doubt", 1);
}

/* A take whose reply is lost answers what it took; Redisson's lock held
 * makes it wait, its release lets it take. */
static void take_lost_and_locked(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 40);
	hl_client *d = ht_client(r, 0);
	hl_object *q = pbq(c, "grid:pbq:doubt");
	hl_object *dq = pbq(d, "grid:pbq:doubt");
	const char *lock = "redisson_sortedset_lock:{grid:pbq:doubt}";
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0, res = 0;

	HT_OK(hl_priority_blocking_queue_add(&ok, q,
	                                     HT_S("z"))); /* scripts cached */
	HT_OK(hl_priority_blocking_queue_take(&v, q));
	hl_value_free(v);
	HT_OK(hl_priority_blocking_queue_add(&ok, q, HT_S("b")));
	HT_OK(hl_priority_blocking_queue_add(&ok, q, HT_S("a")));
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, q, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	HT_CHECK(ht_wait_until(pbq_taken, r, 10000)); /* it took "a" */
	ht_sleep_ms(300);                             /* its reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 20000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "a", 1));
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:pbq:doubt", buf, sizeof buf), 1);
	HT_STREQ(buf, "b");
	/* Redisson's lock: the take waits, then takes */
	hold_lock(r, lock, 30000);
	HT_OK(hl_object_call_start(&t, dq, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000));
	HT_EQ(hl_task_done(t), 0);
	HT_EQ(raw_list(r, "grid:pbq:doubt", buf, sizeof buf), 1);
	ht_del(r, HT_S(lock));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "b", 1));
	hl_task_free(t);
	hl_object_free(q);
	hl_object_free(dq);
	hl_client_free(c);
	hl_client_free(d);
	ht_proxy_stop(p);
}

/* ---- the blocking deque's takes at the tail ----------------------------- */

static int pbd_taken(void *arg)
{
	return llen_is(arg, "grid:pbd:doubt", 1);
}

/* take_last answers the highest value (at once, or woken by a hilock add
 * and by an add's message when two came at once); poll_last_timeout
 * answers nil when its time is up; the takes at both ends share one line;
 * a take_last whose reply is lost answers what it took; one cancelled
 * while its attempt is unanswered puts what it took back. */
static void deque_take_last(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q = NULL, *adder = NULL;
	const char *name = "grid:pbd:last";
	const char *chan = "hilock_priority_queue_channel:{grid:pbd:last}";
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	hl_arg a;
	char buf[64];
	int ok = 0, res = 0;
	int64_t t0, took;

	HT_OK(hl_priority_blocking_deque_new(&q, c, HT_S(name)));
	HT_OK(hl_priority_queue_new(&adder, c, HT_S(name)));
	HT_OK(hl_priority_blocking_deque_put(&ok, q, HT_S("b")));
	HT_OK(hl_priority_queue_add(&ok, adder, HT_S("c")));
	HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("a")));
	HT_OK(hl_priority_blocking_deque_take_last(&v, q));
	HT_CHECK(bytes_eq(v, "c", 1));
	hl_value_free(v);
	HT_OK(hl_priority_blocking_deque_poll_last_timeout(&v, q, 60000));
	HT_CHECK(bytes_eq(v, "b", 1));
	hl_value_free(v);
	HT_OK(hl_priority_blocking_deque_take_first(&v, q));
	HT_CHECK(bytes_eq(v, "a", 1));
	hl_value_free(v);
	/* empty: a take_last task waits on the channel; a hilock add wakes it
	 */
	HT_OK(hl_object_call_start(
	        &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, NULL, 0));
	ht_wait_waiting(c, 1);
	HT_EQ(ht_numsub(r, HT_S(chan)), 1);
	ht_sleep_ms(700); /* its back-off at its longest */
	HT_EQ(hl_task_done(t), 0);
	t0 = ht_now_ms();
	HT_OK(hl_priority_queue_add(&ok, adder, HT_S("x")));
	HT_OK(ht_task_result(t, &res, 10000));
	took = ht_now_ms() - t0;
	HT_CHECKF(took < 120 * ht_scale(), "woken after %lld ms",
	          (long long)took);
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "x", 1));
	hl_task_free(t);
	/* two values and one message at once: the task takes the last */
	HT_OK(hl_object_call_start(
	        &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, NULL, 0));
	ht_wait_waiting(c, 1);
	ht_sleep_ms(700);
	HT_EQ(hl_task_done(t), 0);
	t0 = ht_now_ms();
	freeReplyObject(ht_raw(ht_raw_of(r), "EVAL %s 1 %s %s",
	                       "redis.call('rpush', KEYS[1], 'a', 'y'); "
	                       "return redis.call('publish', ARGV[1], 'add')",
	                       name, chan));
	HT_OK(ht_task_result(t, &res, 10000));
	took = ht_now_ms() - t0;
	HT_CHECKF(took < 120 * ht_scale(), "woken after %lld ms",
	          (long long)took);
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "y", 1));
	hl_task_free(t);
	HT_EQ(raw_list(r, name, buf, sizeof buf), 1);
	HT_STREQ(buf, "a");
	/* the takes at both ends queue in one line: the first comes first */
	HT_OK(hl_priority_blocking_deque_poll_first(&v, q));
	hl_value_free(v);
	{
		hl_task *u = NULL;
		HT_OK(hl_object_call_start(
		        &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_FIRST, NULL,
		        0));
		HT_OK(hl_object_call_start(
		        &u, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, NULL,
		        0));
		ht_wait_waiting(c, 2);
		HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("k")));
		HT_OK(ht_task_result(t, &res, 10000));
		HT_OK(hl_task_value(&tv, t));
		HT_CHECK(bytes_eq(tv, "k", 1));
		HT_EQ(hl_task_done(u), 0);
		HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("l")));
		HT_OK(ht_task_result(u, &res, 10000));
		HT_OK(hl_task_value(&tv, u));
		HT_CHECK(bytes_eq(tv, "l", 1));
		hl_task_free(t);
		hl_task_free(u);
	}
	/* poll_last_timeout: nil once the time is up */
	t0 = ht_now_ms();
	HT_OK(hl_priority_blocking_deque_poll_last_timeout(&v, q, 300));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_CHECK(ht_now_ms() - t0 >= 290);
	/* bad input: a timed wait needs its timeout, a take none */
	HT_RC(hl_object_call_start(
	              &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_LAST_TIMEOUT,
	              NULL, 0),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "poll_last_timeout") != NULL);
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_INT;
	a.i = 0;
	HT_RC(hl_object_call_start(
	              &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_LAST_TIMEOUT,
	              &a, 1),
	      HL_EINVAL);
	HT_RC(hl_object_call_start(
	              &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, &a, 1),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "take_last") != NULL);
	HT_EQ(raw_list(r, name, buf, sizeof buf), 0);
	hl_object_free(q);
	hl_object_free(adder);
	hl_client_free(c);
}

static void deque_take_last_lost(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 40);
	hl_object *q = NULL;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	char buf[64];
	int ok = 0, res = 0;

	HT_OK(hl_priority_blocking_deque_new(&q, c, HT_S("grid:pbd:doubt")));
	HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("z")));
	HT_OK(hl_priority_blocking_deque_take_last(&v, q)); /* scripts cached */
	hl_value_free(v);
	HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("b")));
	HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("a")));
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(
	        &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, NULL, 0));
	HT_CHECK(ht_wait_until(pbd_taken, r, 10000)); /* it took "b" */
	ht_sleep_ms(300);                             /* its reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 20000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_eq(tv, "b", 1));
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:pbd:doubt", buf, sizeof buf), 1);
	HT_STREQ(buf, "a");
	/* cancelled while its attempt's reply is lost: "b" comes back */
	HT_OK(hl_priority_blocking_deque_add(&ok, q, HT_S("b")));
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(
	        &t, q, HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST, NULL, 0));
	HT_CHECK(ht_wait_until(pbd_taken, r, 10000)); /* it took "b" */
	hl_task_cancel(t);
	ht_proxy_cmd(p, "delay 0");
	res = ht_task_result(t, &res, 20000);
	if (res == HL_OK) { /* its answer came before the cancel */
		HT_OK(hl_task_value(&tv, t));
		HT_CHECK(bytes_eq(tv, "b", 1));
		HT_EQ(raw_list(r, "grid:pbd:doubt", buf, sizeof buf), 1);
	} else {
		HT_EQ(res, HL_EINTERRUPTED);
		HT_EQ(raw_list(r, "grid:pbd:doubt", buf, sizeof buf), 2);
		HT_STREQ(buf, "a|b");
	}
	hl_task_free(t);
	hl_object_free(q);
	hl_client_free(c);
	ht_proxy_stop(p);
}

HT_MAIN(HT_CASE(order), HT_CASE(duplicates), HT_CASE(empty), HT_CASE(deque),
        HT_CASE(redisson_lock), HT_CASE(comparator), HT_CASE(lost_reply),
        HT_CASE(cluster), HT_CASE(bad_input), HT_CASE(take), HT_CASE(takers),
        HT_CASE(take_lost_and_locked), HT_CASE(deque_take_last),
        HT_CASE(deque_take_last_lost))
