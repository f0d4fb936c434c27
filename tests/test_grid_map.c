/*
 * The map (Redisson's RMap: core/grid/map.kind, core/src/grid/map.c): one
 * hash, every operation's answer and the hash it leaves in Redis, bytes
 * kept exactly (NUL, empty), another type at the key, bad input, many
 * entries by cursor pages, lost replies (a marked remove answers what it
 * took; a put is in doubt and ran once; a quiet set is sent again), a
 * cluster name with a hash tag, and a Sentinel failover.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hl_object *map_of(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_map_new(&o, c, name, strlen(name)));
	return o;
}

/* v is bytes equal to (s, n); frees v. */
static int took(hl_value *v, const void *s, size_t n)
{
	size_t len = 0;
	const char *b;
	int ok = hl_value_type(v) == HL_VALUE_BYTES;
	b = ok ? hl_value_bytes(v, &len) : NULL;
	ok = ok && len == n && (n == 0 || memcmp(b, s, n) == 0);
	hl_value_free(v);
	return ok;
}

/* v is nil; frees v. */
static int none(hl_value *v)
{
	int ok = hl_value_type(v) == HL_VALUE_NIL;
	hl_value_free(v);
	return ok;
}

/* The raw value of field f of hash key: its length, -1 when absent. */
static long long raw_hget(redisContext *rc, const char *key, const void *f,
                          size_t flen, char *buf, size_t cap)
{
	redisReply *rep = ht_raw(rc, "HGET %s %b", key, f, flen);
	long long n = -1;
	buf[0] = '\0';
	if (rep->type == REDIS_REPLY_STRING) {
		n = (long long)rep->len;
		memcpy(buf, rep->str, rep->len < cap ? rep->len : cap - 1);
		buf[rep->len < cap ? rep->len : cap - 1] = '\0';
	}
	freeReplyObject(rep);
	return n;
}

#define KEY          "grid:map:ops"
#define HGET(f, buf) raw_hget(ht_raw_of(r), KEY, HT_S(f), buf, sizeof buf)

static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, KEY);
	hl_value *v = NULL;
	int ok = -1;
	int64_t n = -1;
	double d = -1;
	char buf[64];
	const void *pairs[6] = {"p1", "v1", "p2", "", "p3", "v3"};
	size_t plens[6] = {2, 2, 2, 0, 2, 2};
	const void *keys[3] = {"p3", "nope", "p2"};
	size_t klens[3] = {2, 4, 2};

	/* get, put (the value before) */
	HT_OK(hl_map_get(&v, m, HT_S("a")));
	HT_CHECK(none(v));
	HT_OK(hl_map_put(&v, m, HT_S("a"), HT_S("1")));
	HT_CHECK(none(v));
	HT_OK(hl_map_put(&v, m, HT_S("a"), HT_S("2")));
	HT_CHECK(took(v, HT_S("1")));
	HT_EQ(HGET("a", buf), 1);
	HT_STREQ(buf, "2");
	HT_OK(hl_map_get(&v, m, HT_S("a")));
	HT_CHECK(took(v, HT_S("2")));
	/* put_if_absent: the value there, left as it is; nil when set */
	HT_OK(hl_map_put_if_absent(&v, m, HT_S("a"), HT_S("x")));
	HT_CHECK(took(v, HT_S("2")));
	HT_EQ(HGET("a", buf), 1);
	HT_STREQ(buf, "2");
	HT_OK(hl_map_put_if_absent(&v, m, HT_S("b"), HT_S("B")));
	HT_CHECK(none(v));
	HT_EQ(HGET("b", buf), 1);
	HT_STREQ(buf, "B");
	/* fast_put: true when new */
	HT_OK(hl_map_fast_put(&ok, m, HT_S("c"), HT_S("C")));
	HT_EQ(ok, 1);
	HT_OK(hl_map_fast_put(&ok, m, HT_S("c"), HT_S("CC")));
	HT_EQ(ok, 0);
	HT_EQ(HGET("c", buf), 2);
	HT_STREQ(buf, "CC");
	/* fast_put_if_absent (HSETNX) */
	HT_OK(hl_map_fast_put_if_absent(&ok, m, HT_S("c"), HT_S("no")));
	HT_EQ(ok, 0);
	HT_EQ(HGET("c", buf), 2);
	HT_OK(hl_map_fast_put_if_absent(&ok, m, HT_S("d"), HT_S("D")));
	HT_EQ(ok, 1);
	HT_EQ(HGET("d", buf), 1);
	/* put_if_exists and replace: only a present key */
	HT_OK(hl_map_put_if_exists(&v, m, HT_S("e"), HT_S("E")));
	HT_CHECK(none(v));
	HT_EQ(HGET("e", buf), -1);
	HT_OK(hl_map_put_if_exists(&v, m, HT_S("d"), HT_S("D2")));
	HT_CHECK(took(v, HT_S("D")));
	HT_EQ(HGET("d", buf), 2);
	HT_STREQ(buf, "D2");
	HT_OK(hl_map_replace(&v, m, HT_S("e"), HT_S("E")));
	HT_CHECK(none(v));
	HT_EQ(HGET("e", buf), -1);
	HT_OK(hl_map_replace(&v, m, HT_S("d"), HT_S("D3")));
	HT_CHECK(took(v, HT_S("D2")));
	HT_EQ(HGET("d", buf), 2);
	HT_STREQ(buf, "D3");
	/* fast_put_if_exists, fast_replace: true when present */
	HT_OK(hl_map_fast_put_if_exists(&ok, m, HT_S("e"), HT_S("E")));
	HT_EQ(ok, 0);
	HT_OK(hl_map_fast_replace(&ok, m, HT_S("e"), HT_S("E")));
	HT_EQ(ok, 0);
	HT_EQ(HGET("e", buf), -1);
	HT_OK(hl_map_fast_put_if_exists(&ok, m, HT_S("d"), HT_S("D4")));
	HT_EQ(ok, 1);
	HT_EQ(HGET("d", buf), 2);
	HT_STREQ(buf, "D4");
	HT_OK(hl_map_fast_replace(&ok, m, HT_S("d"), HT_S("D3")));
	HT_EQ(ok, 1);
	HT_EQ(HGET("d", buf), 2);
	HT_STREQ(buf, "D3");
	/* replace_if: byte for byte (a prefix, an absent key, "" are not) */
	HT_OK(hl_map_replace_if(&ok, m, HT_S("d"), HT_S("D"), HT_S("X")));
	HT_EQ(ok, 0);
	HT_OK(hl_map_replace_if(&ok, m, HT_S("e"), "", 0, HT_S("X")));
	HT_EQ(ok, 0);
	HT_EQ(HGET("e", buf), -1);
	HT_OK(hl_map_replace_if(&ok, m, HT_S("d"), HT_S("D3"), HT_S("D4")));
	HT_EQ(ok, 1);
	HT_EQ(HGET("d", buf), 2);
	HT_STREQ(buf, "D4");
	/* remove_if */
	HT_OK(hl_map_remove_if(&ok, m, HT_S("d"), HT_S("D3")));
	HT_EQ(ok, 0);
	HT_EQ(HGET("d", buf), 2);
	HT_OK(hl_map_remove_if(&ok, m, HT_S("d"), HT_S("D4")));
	HT_EQ(ok, 1);
	HT_EQ(HGET("d", buf), -1);
	/* remove: the value it had */
	HT_OK(hl_map_remove(&v, m, HT_S("b")));
	HT_CHECK(took(v, HT_S("B")));
	HT_EQ(HGET("b", buf), -1);
	HT_OK(hl_map_remove(&v, m, HT_S("b")));
	HT_CHECK(none(v));
	/* contains_key, size, value_size */
	HT_OK(hl_map_contains_key(&ok, m, HT_S("a")));
	HT_EQ(ok, 1);
	HT_OK(hl_map_contains_key(&ok, m, HT_S("b")));
	HT_EQ(ok, 0);
	HT_OK(hl_map_size(&n, m));
	HT_EQ(n, 2); /* a, c */
	HT_EQ(ht_hlen(r, HT_S(KEY)), 2);
	HT_OK(hl_map_value_size(&n, m, HT_S("c")));
	HT_EQ(n, 2);
	HT_OK(hl_map_value_size(&n, m, HT_S("zz")));
	HT_EQ(n, 0);
	/* put_all, get_all (the keys present, in the order asked) */
	HT_OK(hl_map_put_all(m, pairs, plens, 6));
	HT_EQ(ht_hlen(r, HT_S(KEY)), 5);
	HT_EQ(HGET("p2", buf), 0);
	HT_OK(hl_map_get_all(&v, m, keys, klens, 3));
	HT_EQ(hl_value_len(v), 4);
	{
		size_t len = 0;
		const char *b = hl_value_bytes(hl_value_at(v, 0), &len);
		HT_CHECK(len == 2 && memcmp(b, "p3", 2) == 0);
		b = hl_value_bytes(hl_value_at(v, 1), &len);
		HT_CHECK(len == 2 && memcmp(b, "v3", 2) == 0);
		b = hl_value_bytes(hl_value_at(v, 2), &len);
		HT_CHECK(len == 2 && memcmp(b, "p2", 2) == 0);
		HT_EQ(hl_value_type(hl_value_at(v, 3)), HL_VALUE_BYTES);
		hl_value_bytes(hl_value_at(v, 3), &len);
		HT_EQ(len, 0);
	}
	hl_value_free(v);
	/* random_keys, random_entries (HRANDFIELD): distinct, present */
	HT_OK(hl_map_random_keys(&v, m, 3));
	HT_EQ(hl_value_len(v), 3);
	hl_value_free(v);
	HT_OK(hl_map_random_keys(&v, m, 100));
	HT_EQ(hl_value_len(v), 5); /* a, c, p1, p2, p3 */
	hl_value_free(v);
	HT_OK(hl_map_random_entries(&v, m, 100));
	HT_EQ(hl_value_len(v), 10);
	hl_value_free(v);
	/* fast_remove: how many were present */
	HT_OK(hl_map_fast_remove(&n, m, keys, klens, 3));
	HT_EQ(n, 2);
	HT_EQ(ht_hlen(r, HT_S(KEY)), 3); /* a, c, p1 */
	/* add_and_get: HINCRBYFLOAT; the stored form is Redis's */
	HT_OK(hl_map_add_and_get(&d, m, HT_S("n"), 0.1));
	HT_CHECK(d == 0.1);
	HT_EQ(HGET("n", buf), 3);
	HT_STREQ(buf, "0.1");
	HT_OK(hl_map_add_and_get(&d, m, HT_S("n"), 2.9));
	HT_CHECK(d == 3);
	HT_EQ(HGET("n", buf), 1);
	HT_STREQ(buf, "3");
	HT_OK(hl_map_add_and_get(&d, m, HT_S("n"), -1e-7));
	HT_CHECK(fabs(d - 2.9999999) < 1e-12);
	HT_OK(hl_map_add_and_get(&d, m, HT_S("big"), 1e20));
	HT_CHECK(d == 1e20);
	HT_EQ(HGET("big", buf), 21);
	HT_STREQ(buf, "100000000000000000000");
	/* set: HSET, no answer */
	HT_OK(hl_map_set(m, HT_S("s"), HT_S("S")));
	HT_OK(hl_map_set(m, HT_S("s"), HT_S("S2")));
	HT_EQ(HGET("s", buf), 2);
	HT_STREQ(buf, "S2");
	/* the common operations */
	HT_OK(hl_object_delete(&ok, m));
	HT_EQ(ok, 1);
	HT_EQ(ht_exists(r, HT_S(KEY)), 0);
	HT_OK(hl_map_size(&n, m));
	HT_EQ(n, 0);
	hl_object_free(m);
	hl_client_free(c);
}
#undef HGET

/* add_and_get sends its delta as Redisson's addAndGet does (BigDecimal's
 * plain string of Java's Double.toString): the arguments MONITOR shows,
 * byte for byte those Redisson 4.3.1 and 4.7.0 sent for the same deltas
 * (checked against them). */
static void add_and_get_wire(void)
{
	static const double deltas[] = {1e-7,          1e20,     0.1,
	                                123456789.125, -2.5e-10, 3};
	static const char *const sent[] = {
	        "0.00000010",    "100000000000000000000", "0.1",
	        "123456789.125", "-0.00000000025",        "3.0"};
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, "grid:map:wire");
	redisContext *mon = ht_raw_new(r);
	struct timeval tv = {5, 0};
	redisReply *x;
	size_t i, seen = 0;
	double d = 0;

	redisSetTimeout(mon, tv);
	x = ht_raw(mon, "MONITOR");
	freeReplyObject(x);
	for (i = 0; i < sizeof deltas / sizeof deltas[0]; i++)
		HT_OK(hl_map_add_and_get(&d, m, HT_S("n"), deltas[i]));
	while (seen < sizeof deltas / sizeof deltas[0]) {
		char want[96];
		void *rep = NULL;
		if (redisGetReply(mon, &rep) != REDIS_OK || !rep)
			break;
		x = rep;
		if (x->type == REDIS_REPLY_STATUS &&
		    strstr(x->str, "\"HINCRBYFLOAT\"")) {
			snprintf(want, sizeof want,
			         "\"HINCRBYFLOAT\" \"grid:map:wire\" \"n\" "
			         "\"%s\"",
			         sent[seen]);
			HT_CHECKF(strstr(x->str, want) != NULL,
			          "sent %s, want %s", x->str, want);
			seen++;
		}
		freeReplyObject(x);
	}
	HT_EQ(seen, sizeof deltas / sizeof deltas[0]);
	redisFree(mon);
	hl_object_free(m);
	hl_client_free(c);
}

/* NUL bytes and empty keys and values are kept exactly; an empty value is
 * not an absent one. */
static void bytes(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, "grid:map:bytes");
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;
	char buf[16];
	const void *keys[3] = {"", "a\0b", "a"};
	size_t klens[3] = {0, 3, 1};
	const unsigned char bin[4] = {0, 0xff, 0, 0x80};

	HT_OK(hl_map_put(&v, m, "", 0, "", 0));
	HT_CHECK(none(v));
	HT_OK(hl_map_put(&v, m, "a\0b", 3, bin, 4));
	HT_CHECK(none(v));
	HT_OK(hl_map_get(&v, m, "", 0));
	HT_CHECK(took(v, "", 0)); /* empty, not nil */
	HT_OK(hl_map_get(&v, m, "a\0b", 3));
	HT_CHECK(took(v, bin, 4));
	HT_OK(hl_map_get(&v, m, "a", 1)); /* not a\0b cut at the NUL */
	HT_CHECK(none(v));
	HT_EQ(raw_hget(ht_raw_of(r), "grid:map:bytes", "a\0b", 3, buf,
	               sizeof buf),
	      4);
	HT_CHECK(memcmp(buf, bin, 4) == 0);
	HT_EQ(raw_hget(ht_raw_of(r), "grid:map:bytes", "", 0, buf, sizeof buf),
	      0);
	HT_OK(hl_map_contains_key(&ok, m, "", 0));
	HT_EQ(ok, 1);
	HT_OK(hl_map_value_size(&n, m, "a\0b", 3));
	HT_EQ(n, 4);
	HT_OK(hl_map_get_all(&v, m, keys, klens, 3));
	HT_EQ(hl_value_len(v), 4);
	hl_value_free(v);
	HT_OK(hl_map_replace_if(&ok, m, "a\0b", 3, bin, 3, "x", 1));
	HT_EQ(ok, 0); /* a prefix is not equal */
	HT_OK(hl_map_replace_if(&ok, m, "a\0b", 3, bin, 4, "", 0));
	HT_EQ(ok, 1);
	HT_OK(hl_map_remove_if(&ok, m, "a\0b", 3, "", 0));
	HT_EQ(ok, 1);
	HT_OK(hl_map_remove(&v, m, "", 0));
	HT_CHECK(took(v, "", 0)); /* the empty value it had */
	HT_EQ(ht_exists(r, HT_S("grid:map:bytes")), 0);
	hl_object_free(m);
	hl_client_free(c);
}

/* Another type at the key: a clear error naming it, nothing changed. */
static void wrong_type(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, "grid:map:list");
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;
	double d = 0;
	const void *kv[2] = {"k", "v"};
	size_t kvl[2] = {1, 1};
	redisReply *x;

	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH grid:map:list x"));
	HT_RC(hl_map_get(&v, m, HT_S("k")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_CHECK(strstr(hl_error_last(), "map \"grid:map:list\"") != NULL);
	HT_RC(hl_map_put(&v, m, HT_S("k"), HT_S("v")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_map_remove(&v, m, HT_S("k")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_map_put_if_absent(&v, m, HT_S("k"), HT_S("v")), HL_EREDIS);
	HT_RC(hl_map_fast_put(&ok, m, HT_S("k"), HT_S("v")), HL_EREDIS);
	HT_RC(hl_map_size(&n, m), HL_EREDIS);
	HT_RC(hl_map_get_all(&v, m, kv, kvl, 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_map_put_all(m, kv, kvl, 2), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_map_fast_remove(&n, m, kv, kvl, 1), HL_EREDIS);
	HT_RC(hl_map_scan(&v, m, HT_S("0"), 10, NULL, 0), HL_EREDIS);
	HT_RC(hl_map_add_and_get(&d, m, HT_S("k"), 1), HL_EREDIS);
	HT_RC(hl_map_set(m, HT_S("k"), HT_S("v")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	x = ht_raw(ht_raw_of(r), "LRANGE grid:map:list 0 -1");
	HT_CHECK(x->type == REDIS_REPLY_ARRAY && x->elements == 1 &&
	         strcmp(x->element[0]->str, "x") == 0);
	freeReplyObject(x);
	/* no marker left by the failed remove */
	x = ht_raw(ht_raw_of(r), "KEYS hilock_request:{grid:map:list}:*");
	HT_EQ(x->elements, 0);
	freeReplyObject(x);
	hl_object_free(m);
	hl_client_free(c);
}

/* Bad input: refused before anything is sent, with a clear message; empty
 * lists answer at once (another type at the key shows nothing was sent). */
static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, "grid:map:bad");
	hl_object *l = map_of(c, "grid:map:bad:list");
	hl_value *v = NULL;
	int64_t n = -1;
	double d = 0;
	const void *odd[3] = {"k", "v", "k2"};
	size_t oddl[3] = {1, 1, 2};
	const void *nulls[2] = {NULL, "v"};
	size_t nullsl[2] = {3, 1};
	hl_arg a[2];
	char buf[16];

	HT_RC(hl_map_put_all(m, odd, oddl, 3), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "even") != NULL);
	HT_CHECK(strstr(hl_error_last(), "put_all") != NULL);
	HT_EQ(ht_exists(r, HT_S("grid:map:bad")), 0);
	HT_RC(hl_map_put_all(m, nulls, nullsl, 2), HL_EINVAL);
	HT_RC(hl_map_put_all(m, NULL, NULL, 2), HL_EINVAL);
	HT_RC(hl_map_get(&v, m, NULL, 2), HL_EINVAL);
	HT_RC(hl_map_put(&v, m, HT_S("k"), NULL, 1), HL_EINVAL);
	HT_RC(hl_map_put(&v, m, HT_S("k"), "v", (size_t)512 * 1024 * 1024 + 1),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "512 MB") != NULL);
	HT_RC(hl_map_add_and_get(&d, m, HT_S("k"), NAN), HL_EINVAL);
	HT_RC(hl_map_add_and_get(&d, m, HT_S("k"), INFINITY), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:map:bad")), 0);
	/* the generic call: arguments of the wrong type or count */
	memset(a, 0, sizeof a);
	a[0].type = HL_ARG_INT;
	a[0].i = 3;
	HT_RC(hl_object_call(&v, m, HL_OP_MAP_GET, a, 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "key must be bytes") != NULL);
	HT_RC(hl_object_call(&v, m, HL_OP_MAP_PUT, a, 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "required") != NULL);
	a[0].type = HL_ARG_BYTES;
	a[0].bytes = "k";
	a[0].len = 1;
	HT_RC(hl_object_call(&v, m, HL_OP_MAP_PUT_ALL, a, 1), HL_EINVAL);
	HT_RC(hl_object_call(&v, m, HL_OP_BUCKET_GET, a, 1), HL_EINVAL);
	/* empty lists: no round trip (a list at the key would fail one) */
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH grid:map:bad:list x"));
	HT_OK(hl_map_get_all(&v, l, NULL, NULL, 0));
	HT_EQ(hl_value_type(v), HL_VALUE_ARRAY);
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_OK(hl_map_fast_remove(&n, l, NULL, NULL, 0));
	HT_EQ(n, 0);
	HT_OK(hl_map_put_all(l, NULL, NULL, 0));
	/* a value that is not a number; a bad cursor */
	HT_OK(hl_map_set(m, HT_S("t"), HT_S("text")));
	HT_RC(hl_map_add_and_get(&d, m, HT_S("t"), 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "float") != NULL);
	HT_EQ(raw_hget(ht_raw_of(r), "grid:map:bad", HT_S("t"), buf,
	               sizeof buf),
	      4);
	HT_RC(hl_map_scan(&v, m, HT_S("x"), 10, NULL, 0), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "cursor") != NULL);
	hl_object_free(m);
	hl_object_free(l);
	hl_client_free(c);
}

/* More entries than a listpack holds (512 on Debian's Redis): written in
 * one HMSET, read back by HSCAN pages (each entry once), with a MATCH
 * pattern, in one HMGET, and removed in one HDEL. */
static void many(void)
{
	enum { N = 2000 };
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *m = map_of(c, "grid:map:many");
	static char text[2 * N][16];
	static const void *pairs[2 * N];
	static size_t lens[2 * N];
	static unsigned char seen[N];
	hl_value *v = NULL;
	char cursor[32] = "0";
	int pages = 0, total = 0, matched = 0, i;
	int64_t n = 0;
	long long hmset = ht_cmd_calls(r, "hmset");
	size_t len = 0, j;

	for (i = 0; i < N; i++) {
		lens[2 * i] = (size_t)snprintf(text[2 * i], 16, "k%d", i);
		lens[2 * i + 1] =
		        (size_t)snprintf(text[2 * i + 1], 16, "v%d", i);
		pairs[2 * i] = text[2 * i];
		pairs[2 * i + 1] = text[2 * i + 1];
	}
	HT_OK(hl_map_put_all(m, pairs, lens, 2 * N));
	HT_EQ(ht_cmd_calls(r, "hmset"), hmset + 1); /* one round trip */
	HT_EQ(ht_hlen(r, HT_S("grid:map:many")), N);
	do {
		const hl_value *page;
		const char *next;
		HT_OK(hl_map_scan(&v, m, cursor, strlen(cursor), 500, NULL, 0));
		next = hl_value_bytes(hl_value_at(v, 0), &len);
		HT_CHECK(len < sizeof cursor);
		page = hl_value_at(v, 1);
		for (j = 0; j + 1 < hl_value_len(page); j += 2) {
			size_t kl, vl;
			const char *k =
			        hl_value_bytes(hl_value_at(page, j), &kl);
			const char *val =
			        hl_value_bytes(hl_value_at(page, j + 1), &vl);
			int x = atoi(k + 1);
			HT_CHECK(x >= 0 && x < N);
			HT_CHECK(vl == kl &&
			         memcmp(val + 1, k + 1, kl - 1) == 0);
			if (x >= 0 && x < N && !seen[x]++)
				total++;
		}
		memcpy(cursor, next, len);
		cursor[len] = 0;
		hl_value_free(v);
		pages++;
	} while (strcmp(cursor, "0") != 0 && pages < 1000);
	HT_EQ(total, N);
	HT_CHECK(pages > 1);
	for (i = 0; i < N; i++)
		HT_CHECKF(seen[i] == 1, "k%d seen %d times", i, seen[i]);
	/* MATCH: k1, k10..k19, k100..k199, k1000..k1999 */
	strcpy(cursor, "0");
	pages = 0;
	do {
		const hl_value *page;
		const char *next;
		HT_OK(hl_map_scan(&v, m, cursor, strlen(cursor), 1000, "k1*",
		                  3));
		next = hl_value_bytes(hl_value_at(v, 0), &len);
		page = hl_value_at(v, 1);
		for (j = 0; j < hl_value_len(page); j += 2) {
			size_t kl;
			const char *k =
			        hl_value_bytes(hl_value_at(page, j), &kl);
			HT_CHECK(kl >= 2 && k[1] == '1');
			matched++;
		}
		memcpy(cursor, next, len);
		cursor[len] = 0;
		hl_value_free(v);
	} while (strcmp(cursor, "0") != 0 && ++pages < 1000);
	HT_EQ(matched, 1111);
	/* every key in one HMGET; half removed in one HDEL */
	{
		static const void *keys[N];
		static size_t klens[N];
		for (i = 0; i < N; i++) {
			keys[i] = pairs[2 * i];
			klens[i] = lens[2 * i];
		}
		HT_OK(hl_map_get_all(&v, m, keys, klens, N));
		HT_EQ(hl_value_len(v), 2 * N);
		hl_value_free(v);
		HT_OK(hl_map_fast_remove(&n, m, keys, klens, N / 2));
		HT_EQ(n, N / 2);
	}
	HT_EQ(ht_hlen(r, HT_S("grid:map:many")), N / 2);
	hl_object_free(m);
	hl_client_free(c);
}

/* ---- lost replies ------------------------------------------------------ */

typedef struct field_is {
	ht_redis *r;
	const char *field, *value; /* value NULL: absent */
} field_is;

static int field_is_now(void *arg)
{
	field_is *f = arg;
	char buf[32];
	long long n = raw_hget(ht_raw_of(f->r), "grid:map:lost", HT_S(f->field),
	                       buf, sizeof buf);
	return f->value ? n >= 0 && strcmp(buf, f->value) == 0 : n < 0;
}

static hl_task *start(hl_object *m, int op, const char *k, const char *val)
{
	hl_task *t = NULL;
	hl_arg a[2];
	memset(a, 0, sizeof a);
	a[0].type = a[1].type = HL_ARG_BYTES;
	a[0].bytes = k;
	a[0].len = strlen(k);
	a[1].bytes = val;
	a[1].len = val ? strlen(val) : 0;
	HT_OK(hl_object_call_start(&t, m, op, a, val ? 2 : 1));
	return t;
}

/* The command reaches Redis, its reply is lost (held past the command
 * timeout). A put (once) says in doubt and ran exactly once; an
 * add_and_get (once) counted once; a remove (mark) is sent again and
 * answers what the first run took; a set (idem) is sent again and
 * succeeds. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *m = map_of(c, "grid:map:lost");
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	hl_task *t;
	int res = 0;
	size_t len = 0;
	double d = 0;
	int64_t n = 0;
	long long evals;
	char buf[32];
	field_is f = {r, "f", "v1"}, g = {r, "g", NULL}, h = {r, "h", "1"};
	field_is s = {r, "s", "S"};

	/* the scripts cached, so a late first copy runs */
	HT_OK(hl_map_put(&v, m, HT_S("f"), HT_S("v0")));
	HT_CHECK(none(v));
	HT_OK(hl_map_remove(&v, m, HT_S("none")));
	HT_CHECK(none(v));
	HT_OK(hl_map_put(&v, m, HT_S("g"), HT_S("taken")));
	hl_value_free(v);
	/* put: in doubt, run once */
	evals = ht_cmd_calls(r, "evalsha");
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_map_put(&v, m, HT_S("f"), HT_S("v1")), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	HT_CHECK(ht_wait_until(field_is_now, &f, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(1000); /* any second copy would have landed */
	HT_EQ(ht_cmd_calls(r, "evalsha"), evals + 1);
	/* add_and_get: counted once */
	HT_OK(hl_map_size(&n, m)); /* connected again */
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_map_add_and_get(&d, m, HT_S("h"), 1), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(field_is_now, &h, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(1000);
	HT_EQ(raw_hget(ht_raw_of(r), "grid:map:lost", HT_S("h"), buf,
	               sizeof buf),
	      1);
	HT_STREQ(buf, "1");
	/* remove (mark): answers what it took */
	HT_OK(hl_map_size(&n, m));
	ht_proxy_cmd(p, "delay 400");
	t = start(m, HL_OP_MAP_REMOVE, "g", NULL);
	HT_CHECK(ht_wait_until(field_is_now, &g, 10000)); /* it ran */
	ht_sleep_ms(300);                                 /* reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_type(tv), HL_VALUE_BYTES);
	HT_CHECK(memcmp(hl_value_bytes(tv, &len), "taken", 5) == 0 && len == 5);
	hl_task_free(t);
	/* set (idem): resent until answered */
	HT_OK(hl_map_size(&n, m));
	ht_proxy_cmd(p, "delay 400");
	t = start(m, HL_OP_MAP_SET, "s", "S");
	HT_CHECK(ht_wait_until(field_is_now, &s, 10000));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_EQ(raw_hget(ht_raw_of(r), "grid:map:lost", HT_S("f"), buf,
	               sizeof buf),
	      2);
	HT_STREQ(buf, "v1");
	HT_EQ(ht_hlen(r, HT_S("grid:map:lost")), 3); /* f, h, s */
	hl_object_free(m);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* A name with a hash tag in a cluster: the map and a marked remove's
 * request marker share its slot; names on every master. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *m = map_of(c, "{user1}:cart");
	hl_value *v = NULL;
	const void *pairs[4] = {"apple", "3", "pear", "1"};
	size_t plens[4] = {5, 1, 4, 1};
	char cursor[32] = "0", name[32], field[16];
	int64_t n = 0;
	int pages = 0, total = 0, i;
	size_t len = 0;

	HT_OK(hl_map_put(&v, m, HT_S("milk"), HT_S("2")));
	HT_CHECK(none(v));
	HT_OK(hl_map_put_all(m, pairs, plens, 4));
	HT_OK(hl_map_get_all(&v, m, pairs, plens, 1));
	HT_EQ(hl_value_len(v), 2);
	hl_value_free(v);
	HT_OK(hl_map_remove(&v, m, HT_S("milk")));
	HT_CHECK(took(v, HT_S("2")));
	HT_OK(hl_map_add_and_get(NULL, m, HT_S("apple"), 1));
	HT_OK(hl_map_get(&v, m, HT_S("apple")));
	HT_CHECK(took(v, HT_S("4")));
	for (i = 0; i < 600; i++) {
		int k = snprintf(field, sizeof field, "f%d", i);
		HT_OK(hl_map_set(m, field, (size_t)k, "x", 1));
	}
	do {
		const char *next;
		HT_OK(hl_map_scan(&v, m, cursor, strlen(cursor), 200, "f*", 2));
		total += (int)hl_value_len(hl_value_at(v, 1)) / 2;
		next = hl_value_bytes(hl_value_at(v, 0), &len);
		memcpy(cursor, next, len);
		cursor[len] = 0;
		hl_value_free(v);
	} while (strcmp(cursor, "0") != 0 && ++pages < 1000);
	HT_EQ(total, 600);
	HT_OK(hl_map_size(&n, m));
	HT_EQ(n, 602);
	hl_object_free(m);
	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof name, "grid:mapcl:%d", i);
		m = map_of(c, name);
		HT_OK(hl_map_put(&v, m, HT_S("k"), HT_S("v")));
		HT_CHECK(none(v));
		HT_OK(hl_map_remove(&v, m, HT_S("k")));
		HT_CHECK(took(v, HT_S("v")));
		hl_object_free(m);
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A Sentinel failover (kill -9 of the master) under a stream of quiet
 * sets: they go on on the new master, and there the scripts (loaded
 * again) answer right, a marked remove included. */
typedef struct setter {
	hl_object *m;
	atomic_int stop;
	int ok, failed;
} setter;

static void *sets(void *arg)
{
	setter *s = arg;
	char k[32];
	while (!atomic_load(&s->stop)) {
		int n = snprintf(k, sizeof k, "k%d", s->ok + s->failed);
		if (hl_map_set(s->m, k, (size_t)n, "v", 1) == HL_OK)
			s->ok++;
		else
			s->failed++;
	}
	return NULL;
}

static void sentinel_failover(void)
{
	ht_sentinel *sn = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	hl_object *m;
	hl_value *v = NULL;
	char url[600];
	setter s;
	pthread_t t;
	int old, i, before;
	int64_t n = 0;

	ht_failover_options(&o, 6000);
	ht_sentinel_url(sn, url, sizeof url);
	c = ht_client_url(url, &o);
	m = map_of(c, "grid:map:failover");
	HT_OK(hl_map_put(&v, m, HT_S("keep"), HT_S("1")));
	hl_value_free(v);
	memset(&s, 0, sizeof s);
	s.m = m;
	t = ht_thread_start(sets, &s);
	ht_sleep_ms(500);
	old = ht_sentinel_kill_master(sn);
	ht_sentinel_wait_failover(sn, old, 20000);
	for (i = 0; i < 200 && s.ok < 50; i++)
		ht_sleep_ms(50);
	before = s.ok;
	ht_sleep_ms(500);
	atomic_store(&s.stop, 1);
	ht_thread_join(t, 30000);
	HT_CHECKF(s.ok > before, "no set after the failover (%d)", s.ok);
	HT_OK(hl_map_size(&n, m));
	HT_CHECK(n > 0 && n <= s.ok + s.failed + 1);
	HT_OK(hl_map_put(&v, m, HT_S("after"), HT_S("a")));
	hl_value_free(v);
	HT_OK(hl_map_put(&v, m, HT_S("after"), HT_S("b")));
	HT_CHECK(took(v, HT_S("a")));
	HT_OK(hl_map_remove(&v, m, HT_S("after")));
	HT_CHECK(took(v, HT_S("b")));
	HT_OK(hl_map_get(&v, m, HT_S("after")));
	HT_CHECK(none(v));
	hl_object_free(m);
	hl_client_free(c);
	ht_sentinel_destroy(sn);
}

HT_MAIN(HT_CASE(ops), HT_CASE(add_and_get_wire), HT_CASE(bytes),
        HT_CASE(wrong_type), HT_CASE(bad_input), HT_CASE(many),
        HT_CASE(lost_reply), HT_CASE(cluster), HT_CASE(sentinel_failover))
