/*
 * The data grid: the object handle and its common operations, values out
 * of the ABI, the kinds generated from core/grid/ (bucket, atomic long,
 * atomic double) on Redisson's keys and in Redisson's number forms, the
 * generic call and its task form, a lost reply never applying an
 * operation twice, a cluster, and bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static hl_object *obj(hl_client *c, int kind, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_object_new(&o, c, kind, name, strlen(name)));
	return o;
}

/* The raw bytes at key (a string), "" and -1 when absent. */
static long long raw_get(ht_redis *r, const char *key, char *buf, size_t len)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "GET %s", key);
	long long n = -1;
	buf[0] = '\0';
	if (rep->type == REDIS_REPLY_STRING) {
		n = (long long)rep->len;
		memcpy(buf, rep->str, rep->len < len ? rep->len : len - 1);
		buf[rep->len < len ? rep->len : len - 1] = '\0';
	}
	freeReplyObject(rep);
	return n;
}

static void raw_set(ht_redis *r, const char *key, const char *v)
{
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", key, v));
}

static void bucket(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b = obj(c, HL_KIND_BUCKET, "grid:bucket");
	hl_value *v = NULL;
	char raw[64];
	size_t len = 0;
	int ok = 7;
	int64_t n = 0;

	HT_OK(hl_bucket_get(&v, b));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	/* binary-safe, on the plain key (Redisson's RBucket) */
	HT_OK(hl_bucket_set(b, "a\0b", 3, -1));
	HT_EQ(raw_get(r, "grid:bucket", raw, sizeof raw), 3);
	HT_OK(hl_bucket_get(&v, b));
	HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "a\0b", 3) == 0);
	HT_EQ(len, 3);
	hl_value_free(v);
	HT_OK(hl_bucket_size(&n, b));
	HT_EQ(n, 3);
	/* a ttl, and set without one drops it (Redisson's set) */
	HT_OK(hl_bucket_set(b, "x", 1, 60000));
	HT_RANGE(ht_pttl(r, HT_S("grid:bucket")), 50000, 60000);
	HT_OK(hl_bucket_set(b, "y", 1, -1));
	HT_EQ(ht_pttl(r, HT_S("grid:bucket")), -1);
	HT_OK(hl_bucket_set_and_keep_ttl(b, "z", 1));
	/* try_set only when absent; set_if_exists only when present */
	HT_OK(hl_bucket_try_set(&ok, b, "t", 1, -1));
	HT_EQ(ok, 0);
	HT_OK(hl_bucket_set_if_exists(&ok, b, "e", 1, 30000));
	HT_EQ(ok, 1);
	HT_RANGE(ht_pttl(r, HT_S("grid:bucket")), 20000, 30000);
	raw_get(r, "grid:bucket", raw, sizeof raw);
	HT_STREQ(raw, "e");
	/* compare-and-set, every case */
	HT_OK(hl_bucket_compare_and_set(&ok, b, "nope", 4, "u", 1));
	HT_EQ(ok, 0);
	HT_OK(hl_bucket_compare_and_set(&ok, b, "e", 1, "u", 1));
	HT_EQ(ok, 1);
	HT_EQ(ht_pttl(r, HT_S("grid:bucket")), -1); /* SET dropped it */
	HT_OK(hl_bucket_compare_and_set(&ok, b, NULL, 0, "w", 1));
	HT_EQ(ok, 0); /* not absent */
	HT_OK(hl_bucket_compare_and_set(&ok, b, "u", 1, NULL, 0));
	HT_EQ(ok, 1); /* deleted */
	HT_EQ(ht_exists(r, HT_S("grid:bucket")), 0);
	HT_OK(hl_bucket_compare_and_set(&ok, b, NULL, 0, "w", 1));
	HT_EQ(ok, 1);
	/* get-and-set, get-and-delete */
	HT_OK(hl_bucket_get_and_set(&v, b, "g", 1, 40000));
	HT_STREQ(hl_value_bytes(v, NULL), "w");
	hl_value_free(v);
	HT_RANGE(ht_pttl(r, HT_S("grid:bucket")), 30000, 40000);
	HT_OK(hl_bucket_get_and_delete(&v, b));
	HT_STREQ(hl_value_bytes(v, NULL), "g");
	hl_value_free(v);
	HT_OK(hl_bucket_get_and_delete(&v, b));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_bucket_try_set(&ok, b, "t", 1, -1));
	HT_EQ(ok, 1);
	/* an empty value is a value */
	HT_OK(hl_bucket_set(b, "", 0, -1));
	HT_OK(hl_bucket_get(&v, b));
	HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);

	hl_object_free(b);
	hl_client_free(c);
}

static void long_counter(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *a = obj(c, HL_KIND_ATOMIC_LONG, "grid:long");
	hl_object *h = obj(c, HL_KIND_ATOMIC_LONG, "grid:long:hash");
	int64_t n = -1;
	int ok = 7;
	char raw[64];

	HT_OK(hl_atomic_long_get(&n, a));
	HT_EQ(n, 0);
	HT_OK(hl_atomic_long_increment_and_get(&n, a));
	HT_EQ(n, 1);
	HT_OK(hl_atomic_long_add_and_get(&n, a, 41));
	HT_EQ(n, 42);
	raw_get(r, "grid:long", raw, sizeof raw);
	HT_STREQ(raw, "42");
	HT_OK(hl_atomic_long_get_and_add(&n, a, -2));
	HT_EQ(n, 42);
	HT_OK(hl_atomic_long_get_and_increment(&n, a));
	HT_EQ(n, 40);
	HT_OK(hl_atomic_long_get_and_decrement(&n, a));
	HT_EQ(n, 41);
	HT_OK(hl_atomic_long_decrement_and_get(&n, a));
	HT_EQ(n, 39);
	HT_OK(hl_atomic_long_compare_and_set(&ok, a, 38, 1));
	HT_EQ(ok, 0);
	HT_OK(hl_atomic_long_compare_and_set(&ok, a, 39, INT64_MIN));
	HT_EQ(ok, 1);
	raw_get(r, "grid:long", raw, sizeof raw);
	HT_STREQ(raw, "-9223372036854775808");
	HT_OK(hl_atomic_long_get_and_set(&n, a, 5));
	HT_EQ(n, INT64_MIN);
	HT_OK(hl_atomic_long_set(a, 9));
	HT_OK(hl_atomic_long_get_and_delete(&n, a));
	HT_EQ(n, 9);
	HT_EQ(ht_exists(r, HT_S("grid:long")), 0);
	/* compare-and-set from absent counts it as 0 (Redisson) */
	HT_OK(hl_atomic_long_compare_and_set(&ok, a, 0, 3));
	HT_EQ(ok, 1);
	/* overflow is Redis's error, named */
	HT_OK(hl_atomic_long_set(a, INT64_MAX));
	HT_RC(hl_atomic_long_increment_and_get(&n, a), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "atomic_long \"grid:long\"") != NULL);
	/* what another writer left: not a number, another type */
	raw_set(r, "grid:long", "1.5");
	HT_RC(hl_atomic_long_get(&n, a), HL_EPROTOCOL);
	HT_CHECK(strstr(hl_error_last(), "not a 64-bit integer") != NULL);
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET grid:long:hash f 1"));
	HT_RC(hl_atomic_long_get(&n, h), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_atomic_long_increment_and_get(&n, h), HL_EREDIS);

	hl_object_free(a);
	hl_object_free(h);
	hl_client_free(c);
}

static void double_counter(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *a = obj(c, HL_KIND_ATOMIC_DOUBLE, "grid:double");
	static const struct {
		double d;
		const char *plain; /* BigDecimal.valueOf(d).toPlainString() */
	} forms[] = {{0.1, "0.1"},      {1.0, "1.0"},
	             {-2.5, "-2.5"},    {1234567.0, "1234567.0"},
	             {1e7, "10000000"}, {1.5e20, "150000000000000000000"},
	             {1e-4, "0.00010"}, {1.25e-5, "0.0000125"},
	             {0.001, "0.001"},  {12345678.9, "12345678.9"}};
	static const struct {
		const char *raw;
		double d;
	} reads[] = {
	        {"1", 1},
	        {"1.5", 1.5},
	        {"1.0E10", 1e10},
	        {"1e+20", 1e20},
	        {"0.1000000000000000055511151231257827021181583404541015625",
	         0.1},
	        {"-3", -3}};
	char raw[128];
	double d = -1;
	int ok = 7;
	size_t i;

	HT_OK(hl_atomic_double_get(&d, a));
	HT_CHECK(d == 0);
	for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		HT_OK(hl_atomic_double_set(a, forms[i].d));
		raw_get(r, "grid:double", raw, sizeof raw);
		HT_CHECKF(strcmp(raw, forms[i].plain) == 0, "%g: %s, not %s",
		          forms[i].d, raw, forms[i].plain);
		HT_OK(hl_atomic_double_get(&d, a));
		HT_CHECK(d == forms[i].d);
	}
	for (i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		raw_set(r, "grid:double", reads[i].raw);
		HT_OK(hl_atomic_double_get(&d, a));
		HT_CHECKF(d == reads[i].d, "%s read as %g", reads[i].raw, d);
	}
	HT_OK(hl_atomic_double_set(a, 1.5));
	HT_OK(hl_atomic_double_add_and_get(&d, a, 0.25));
	HT_CHECK(d == 1.75);
	HT_OK(hl_atomic_double_get_and_add(&d, a, 1));
	HT_CHECK(d == 1.75);
	HT_OK(hl_atomic_double_increment_and_get(&d, a));
	HT_CHECK(d == 3.75);
	HT_OK(hl_atomic_double_decrement_and_get(&d, a));
	HT_CHECK(d == 2.75);
	HT_OK(hl_atomic_double_compare_and_set(&ok, a, 2.0, 9));
	HT_EQ(ok, 0);
	HT_OK(hl_atomic_double_compare_and_set(&ok, a, 2.75, 9));
	HT_EQ(ok, 1);
	HT_OK(hl_atomic_double_get_and_set(&d, a, 0.5));
	HT_CHECK(d == 9);
	HT_OK(hl_atomic_double_get_and_delete(&d, a));
	HT_CHECK(d == 0.5);
	HT_OK(hl_atomic_double_get_and_add(&d, a, 2));
	HT_CHECK(d == 0);
	HT_OK(hl_atomic_double_get(&d, a));
	HT_CHECK(d == 2);
	/* not a number */
	HT_RC(hl_atomic_double_set(a, NAN), HL_EINVAL);
	HT_RC(hl_atomic_double_add_and_get(&d, a, INFINITY), HL_EINVAL);
	raw_set(r, "grid:double", "abc");
	HT_RC(hl_atomic_double_get(&d, a), HL_EPROTOCOL);

	hl_object_free(a);
	hl_client_free(c);
}

/* Subnormal doubles in Redisson's plain form: Java stores
 * BigDecimal.valueOf(Double.MIN_VALUE).toPlainString(), "0." then 323
 * zeros then "49" (found by tests/interop/grid against Redisson 4.3.1 and
 * 4.7.0); strtod flags such a value as an underflow, yet it is exact. */
static void double_subnormal(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *a = obj(c, HL_KIND_ATOMIC_DOUBLE, "grid:double:sub");
	static const double vals[] = {4.9e-324, -4.9e-324, 2.2250738585072e-310,
	                              -2.5e-300, 1.7976931348623157e308};
	char java[400], raw[400];
	double d = -1;
	size_t i;

	/* Java's form of Double.MIN_VALUE and its negative */
	strcpy(java, "0.");
	memset(java + 2, '0', 323);
	strcpy(java + 325, "49");
	HT_EQ(strlen(java), 327);
	raw_set(r, "grid:double:sub", java);
	HT_OK(hl_atomic_double_get(&d, a));
	HT_CHECKF(d == 4.9e-324, "%s read as %g", java, d);
	memmove(java + 1, java, strlen(java) + 1);
	java[0] = '-';
	raw_set(r, "grid:double:sub", java);
	HT_OK(hl_atomic_double_get(&d, a));
	HT_CHECKF(d == -4.9e-324, "-Double.MIN_VALUE read as %g", d);
	raw_set(r, "grid:double:sub", "4.9E-324");
	HT_OK(hl_atomic_double_get(&d, a));
	HT_CHECK(d == 4.9e-324);
	/* what hilock writes reads back exact, also through the scripts */
	for (i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		HT_OK(hl_atomic_double_set(a, vals[i]));
		HT_CHECK(raw_get(r, "grid:double:sub", raw, sizeof raw) > 0);
		HT_OK(hl_atomic_double_get(&d, a));
		HT_CHECKF(d == vals[i], "%g stored as %s read as %g", vals[i],
		          raw, d);
		HT_OK(hl_atomic_double_get_and_set(&d, a, vals[i]));
		HT_CHECKF(d == vals[i], "get_and_set: %g read as %g", vals[i],
		          d);
	}
	hl_object_free(a);
	hl_client_free(c);
}

/* delete, exists, expire, clear_expire, ttl; names and kinds */
static void common(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b = obj(c, HL_KIND_BUCKET, "grid:common");
	int yes = 7;
	int64_t ttl = 0;
	size_t len = 0;

	HT_EQ(hl_object_kind(b), HL_KIND_BUCKET);
	HT_STREQ(hl_kind_name(HL_KIND_ATOMIC_LONG), "atomic_long");
	HT_STREQ(hl_op_name(HL_OP_ATOMIC_LONG_ADD_AND_GET), "add_and_get");
	HT_STREQ(hl_object_name(b, &len), "grid:common");
	HT_EQ(len, 11);
	HT_OK(hl_object_exists(&yes, b));
	HT_EQ(yes, 0);
	HT_OK(hl_object_ttl(&ttl, b));
	HT_EQ(ttl, -2);
	HT_OK(hl_object_expire(&yes, b, 1000));
	HT_EQ(yes, 0);
	HT_OK(hl_bucket_set(b, "v", 1, -1));
	HT_OK(hl_object_exists(&yes, b));
	HT_EQ(yes, 1);
	HT_OK(hl_object_ttl(&ttl, b));
	HT_EQ(ttl, -1);
	HT_OK(hl_object_expire(&yes, b, 50000));
	HT_EQ(yes, 1);
	HT_OK(hl_object_ttl(&ttl, b));
	HT_RANGE(ttl, 40000, 50000);
	HT_OK(hl_object_clear_expire(&yes, b));
	HT_EQ(yes, 1);
	HT_EQ(ht_pttl(r, HT_S("grid:common")), -1);
	HT_OK(hl_object_delete(&yes, b));
	HT_EQ(yes, 1);
	HT_EQ(ht_exists(r, HT_S("grid:common")), 0);
	HT_OK(hl_object_delete(&yes, b));
	HT_EQ(yes, 0);
	hl_object_free(b);
	hl_client_free(c);
}

/* The generic call (what the bindings use), its task form, raw commands. */
static void generic(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *a = obj(c, HL_KIND_ATOMIC_LONG, "grid:generic");
	hl_object *b = obj(c, HL_KIND_BUCKET, "grid:generic:b");
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	hl_task *t = NULL;
	hl_arg args[2];
	const char *argv[3] = {"MGET", "grid:generic", "grid:nothing"};
	size_t lens[3] = {4, 12, 12};
	int res = 0;

	memset(args, 0, sizeof args);
	args[0].type = HL_ARG_INT;
	args[0].i = 7;
	HT_OK(hl_object_call(&v, a, HL_OP_ATOMIC_LONG_ADD_AND_GET, args, 1));
	HT_EQ(hl_value_type(v), HL_VALUE_INT);
	HT_EQ(hl_value_int(v), 7);
	hl_value_free(v);
	/* a bool is an integer 0/1 */
	args[0].type = HL_ARG_INT;
	args[0].i = 7;
	args[1].type = HL_ARG_INT;
	args[1].i = 8;
	HT_OK(hl_object_call(&v, a, HL_OP_ATOMIC_LONG_COMPARE_AND_SET, args,
	                     2));
	HT_EQ(hl_value_int(v), 1);
	hl_value_free(v);
	/* an optional argument left out, bytes in */
	args[0].type = HL_ARG_BYTES;
	args[0].bytes = "hello";
	args[0].len = 5;
	HT_OK(hl_object_call(NULL, b, HL_OP_BUCKET_SET, args, 1));
	HT_EQ(ht_pttl(r, HT_S("grid:generic:b")), -1);
	/* the task form: the value comes with the task */
	HT_OK(hl_object_call_start(&t, b, HL_OP_BUCKET_GET, NULL, 0));
	HT_OK(ht_task_result(t, &res, 5000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(hl_value_bytes(tv, NULL), "hello");
	hl_task_free(t);
	args[0].type = HL_ARG_INT;
	args[0].i = 1;
	HT_OK(hl_object_call_start(&t, a, HL_OP_ATOMIC_LONG_ADD_AND_GET, args,
	                           1));
	hl_object_free(a); /* the task has its own copy */
	a = NULL;
	HT_OK(ht_task_result(t, &res, 5000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_int(tv), 9);
	hl_task_free(t);
	/* raw commands: an array with a nil in it */
	HT_OK(hl_client_command(&v, c, 3, argv, lens, NULL, 0, 1));
	HT_EQ(hl_value_type(v), HL_VALUE_ARRAY);
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(hl_value_bytes(hl_value_at(v, 0), NULL), "9");
	HT_EQ(hl_value_type(hl_value_at(v, 1)), HL_VALUE_NIL);
	HT_CHECK(hl_value_at(v, 2) == NULL);
	hl_value_free(v);
	argv[0] = "NOSUCHCOMMAND";
	lens[0] = 13;
	HT_RC(hl_client_command(&v, c, 1, argv, lens, NULL, 0, 1), HL_EREDIS);
	HT_CHECK(v == NULL);
	hl_object_free(b);
	hl_client_free(c);
}

static int counted_once(void *arg)
{
	return ht_get_int(ht_raw_of(arg), "grid:doubt:n") == 1;
}

static int bucket_set(void *arg)
{
	return ht_exists(arg, HT_S("grid:doubt:b"));
}

/* The command reaches Redis, its reply is lost (held past the command
 * timeout, so the connection is given up): an increment is not sent
 * again (it would count twice, as Redisson's resend does) but says in
 * doubt; it counted exactly once. A SET, idempotent, is sent again and
 * succeeds. */
static void lost_reply_once(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *a = obj(c, HL_KIND_ATOMIC_LONG, "grid:doubt:n");
	hl_object *b = obj(c, HL_KIND_BUCKET, "grid:doubt:b");
	int64_t n = -1;
	int ok = 0, res = 0;
	char raw[16];
	hl_task *t = NULL;
	hl_arg arg;

	HT_OK(hl_atomic_long_get(&n, a)); /* connected */
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_atomic_long_increment_and_get(&n, a), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	HT_CHECK(ht_wait_until(counted_once, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	HT_OK(hl_atomic_long_get(&n, a)); /* connected again */
	HT_EQ(n, 1);
	/* the script cached (else the late copy meets NOSCRIPT: not run) */
	HT_OK(hl_bucket_compare_and_set(&ok, b, "zz", 2, "q", 1));
	HT_EQ(ok, 0);
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_bucket_compare_and_set(&ok, b, NULL, 0, "x", 1), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(bucket_set, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(1000); /* any second copy would have landed */
	HT_EQ(ht_get_int(ht_raw_of(r), "grid:doubt:n"), 1);
	raw_get(r, "grid:doubt:b", raw, sizeof raw);
	HT_STREQ(raw, "x");
	/* idempotent: resent until answered (the first copy's reply is
	 * lost; the network heals while it retries) */
	ht_proxy_cmd(p, "delay 400");
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "y";
	arg.len = 1;
	HT_OK(hl_object_call_start(&t, b, HL_OP_BUCKET_SET, &arg, 1));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	raw_get(r, "grid:doubt:b", raw, sizeof raw);
	HT_STREQ(raw, "y");
	HT_OK(hl_atomic_long_get(&n, a));
	HT_EQ(n, 1);
	hl_object_free(a);
	hl_object_free(b);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static int map_field_gone(void *arg)
{
	redisReply *x = redisCommand(ht_raw_of(arg), "HEXISTS grid:mark:m f");
	int gone = x && x->type == REDIS_REPLY_INTEGER && x->integer == 0;
	freeReplyObject(x);
	return gone;
}

/* A "mark" operation takes something out (here a map's remove); its reply
 * is lost after it ran. It is sent again with the same request marker,
 * and the resend answers what the first run took instead of nil: nothing
 * is lost and nothing taken twice. Its marker expires by itself. */
static void lost_reply_mark(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *m = obj(c, HL_KIND_MAP, "grid:mark:m");
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	int res = 0;
	hl_task *t = NULL;
	hl_arg arg;
	size_t len = 0;
	int64_t ttl = 0;
	redisReply *x;

	HT_OK(hl_map_put(&v, m, "f", 1, "taken", 5));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	v = NULL;
	/* cached, so the late first copy runs (else NOSCRIPT: not run) */
	HT_OK(hl_map_remove(&v, m, "none", 4));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	v = NULL;
	ht_proxy_cmd(p, "delay 400");
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "f";
	arg.len = 1;
	HT_OK(hl_object_call_start(&t, m, HL_OP_MAP_REMOVE, &arg, 1));
	HT_CHECK(ht_wait_until(map_field_gone, r, 10000)); /* it ran */
	ht_sleep_ms(300);                                  /* reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t)); /* the task's: not freed here */
	HT_CHECK(hl_value_type(tv) == HL_VALUE_BYTES);
	HT_CHECK(memcmp(hl_value_bytes(tv, &len), "taken", 5) == 0 && len == 5);
	hl_task_free(t);
	/* the marker: hilock_request:{grid:mark:m}:<id>, with a lifetime */
	x = redisCommand(ht_raw_of(r), "KEYS hilock_request:{grid:mark:m}:*");
	HT_CHECK(x && x->type == REDIS_REPLY_ARRAY && x->elements == 1);
	if (x && x->elements == 1) {
		redisReply *y = redisCommand(ht_raw_of(r), "PTTL %s",
		                             x->element[0]->str);
		ttl = y ? y->integer : 0;
		freeReplyObject(y);
	}
	freeReplyObject(x);
	HT_CHECK(ttl > 0 && ttl <= 21 * (250 + 100));
	hl_object_free(m);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* The shapes of many values: a map of the keys present; a cursor's pages
 * that cover every entry once, then "0". */
static void many_values(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client_url(r->url, NULL);
	hl_object *m = obj(c, HL_KIND_MAP, "grid:many:m");
	hl_value *v = NULL;
	const void *keys[3] = {"k1", "nope", "k\0b"};
	size_t lens[3] = {2, 4, 3}, len, clen = 0, i;
	char cursor[32] = "0", field[16];
	int seen[1000] = {0}, pages = 0, total = 0;

	for (i = 0; i < 1000; i++) {
		int n = snprintf(field, sizeof field, "k%zu", i);
		HT_OK(hl_map_put(NULL, m, field, (size_t)n, "v", 1));
	}
	HT_OK(hl_map_put(NULL, m, "k\0b", 3, "", 0));
	HT_OK(hl_map_get_all(&v, m, keys, lens, 3));
	HT_EQ(hl_value_len(v), 4); /* k1, v, k\0b, "" */
	HT_CHECK(memcmp(hl_value_bytes(hl_value_at(v, 0), &len), "k1", 2) == 0);
	HT_CHECK(memcmp(hl_value_bytes(hl_value_at(v, 2), &len), "k\0b", 3) ==
	                 0 &&
	         len == 3);
	HT_CHECK(hl_value_type(hl_value_at(v, 3)) == HL_VALUE_BYTES);
	{ /* the bindings' one-call conversion: lengths, then the bytes */
		size_t gl[4] = {9, 9, 9, 9};
		char buf[8] = "xxxxxxx";
		HT_EQ(hl_value_gather(v, gl, NULL, 0), 6);
		HT_CHECK(gl[0] == 2 && gl[1] == 1 && gl[2] == 3 && gl[3] == 0);
		HT_EQ(hl_value_gather(v, NULL, buf, 5), 6); /* too small */
		HT_CHECK(memcmp(buf, "xxxxxxx", 8) == 0);
		HT_EQ(hl_value_gather(v, gl, buf, 6), 6);
		HT_CHECK(memcmp(buf, "k1vk\0bx", 8) == 0);
		HT_EQ(hl_value_gather(NULL, gl, buf, 8), 0);
		HT_EQ(hl_value_gather(hl_value_at(v, 0), gl, buf, 8), 0);
	}
	hl_value_free(v);
	HT_OK(hl_map_scan(&v, m, "0", 1, 10, NULL, 0));
	{ /* a page: the cursor is bytes, the items an array (not bytes) */
		size_t gl[2] = {0, 0};
		HT_EQ(hl_value_gather(v, gl, NULL, 0), gl[0]);
		HT_CHECK(gl[0] >= 1 && gl[1] == (size_t)-1);
		HT_EQ(hl_value_gather(hl_value_at(v, 1), NULL, NULL, 0) > 0, 1);
	}
	hl_value_free(v);
	do {
		const hl_value *page;
		const char *next;
		HT_OK(hl_map_scan(&v, m, cursor, strlen(cursor), 50, NULL, 0));
		HT_EQ(hl_value_len(v), 2);
		next = hl_value_bytes(hl_value_at(v, 0), &clen);
		HT_CHECK(clen < sizeof cursor);
		page = hl_value_at(v, 1);
		HT_EQ(hl_value_len(page) % 2, 0);
		for (i = 0; i < hl_value_len(page); i += 2) {
			size_t klen = 0;
			const char *k =
			        hl_value_bytes(hl_value_at(page, i), &klen);
			if (klen > 1 && k[0] == 'k' && k[1] != 0) {
				int n = atoi(k + 1);
				if (n >= 0 && n < 1000 && !seen[n]++)
					total++;
			}
		}
		memcpy(cursor, next,
		       clen); /* the cursor's length, not a key's */
		cursor[clen] = 0;
		hl_value_free(v);
		pages++;
	} while (strcmp(cursor, "0") != 0 && pages < 1000);
	HT_EQ(total, 1000); /* past the listpack: pages */
	HT_CHECK(pages > 1);
	hl_object_free(m);
	hl_client_free(c);
}

/* In a cluster every kind's keys share the name's slot; objects on every
 * master. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	char name[32];
	int i;
	for (i = 0; i < 20; i++) {
		hl_object *a, *b;
		int64_t n = 0;
		hl_value *v = NULL;
		snprintf(name, sizeof name, "grid:cl:%d", i);
		a = obj(c, HL_KIND_ATOMIC_LONG, name);
		HT_OK(hl_atomic_long_add_and_get(&n, a, i));
		HT_OK(hl_atomic_long_get_and_add(&n, a, 1));
		HT_EQ(n, i);
		hl_object_free(a);
		snprintf(name, sizeof name, "{grid:cl}:%d", i);
		b = obj(c, HL_KIND_BUCKET, name);
		HT_OK(hl_bucket_get_and_set(&v, b, "v", 1, -1));
		HT_EQ(hl_value_type(v), HL_VALUE_NIL);
		hl_value_free(v);
		hl_object_free(b);
		/* a blocking command goes to its key's node (no MOVED) */
		{
			char q[32];
			const char *argv[3] = {"BLPOP", q, "0.02"};
			size_t lens[3] = {5, 0, 4};
			snprintf(q, sizeof q, "grid:clq:%d", i);
			lens[1] = strlen(q);
			HT_OK(hl_client_command_blocking(&v, c, 3, argv, lens,
			                                 NULL, 0, 5000, NULL));
			HT_EQ(hl_value_type(v), HL_VALUE_NIL);
			hl_value_free(v);
		}
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A Sentinel failover (kill -9 of the master) under a stream of
 * increments: each is answered, or in doubt, or refused before it was
 * sent; none counts twice (the counter never exceeds what was answered
 * plus what was in doubt), and the counter goes on on the new master. */
typedef struct failover_run {
	hl_object *a;
	atomic_int stop;
	int ok, doubt, failed;
} failover_run;

static void *increments(void *arg)
{
	failover_run *f = arg;
	while (!atomic_load(&f->stop)) {
		int64_t n;
		int rc = hl_atomic_long_increment_and_get(&n, f->a);
		if (rc == HL_OK)
			f->ok++;
		else if (rc == HL_EINDOUBT)
			f->doubt++;
		else
			f->failed++;
	}
	return NULL;
}

static void sentinel_failover(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	char url[600];
	failover_run f;
	pthread_t t;
	int old, i;
	int64_t n = 0, before;
	ht_failover_options(&o, 6000);
	ht_sentinel_url(s, url, sizeof url);
	c = ht_client_url(url, &o);
	memset(&f, 0, sizeof f);
	f.a = obj(c, HL_KIND_ATOMIC_LONG, "grid:failover");
	t = ht_thread_start(increments, &f);
	ht_sleep_ms(500);
	old = ht_sentinel_kill_master(s);
	ht_sentinel_wait_failover(s, old, 20000);
	for (i = 0; i < 200 && f.ok < 50; i++)
		ht_sleep_ms(50);
	before = f.ok;
	ht_sleep_ms(500);
	atomic_store(&f.stop, 1);
	ht_thread_join(t, 30000);
	HT_CHECKF(f.ok > before, "no increment after the failover (%d)", f.ok);
	HT_OK(hl_atomic_long_get(&n, f.a));
	/* asynchronous replication may lose acknowledged increments of the
	 * old master (as Redisson's); never a doubled one */
	HT_CHECKF(n <= f.ok + f.doubt,
	          "counted %lld > %d answered + %d in doubt", (long long)n,
	          f.ok, f.doubt);
	HT_CHECK(n > 0);
	/* the other kinds carry on on the new master: a bit set, a Bloom
	 * filter (its scripts loaded there by their first use), a bucket */
	{
		hl_object *bits = obj(c, HL_KIND_BIT_SET, "grid:failover:bits");
		hl_object *bf =
		        obj(c, HL_KIND_BLOOM_FILTER, "grid:failover:bf");
		hl_object *b = obj(c, HL_KIND_BUCKET, "grid:failover:b");
		int prev = 7, ok = 0;
		HT_OK(hl_bit_set_set(&prev, bits, 9, 1));
		HT_EQ(prev, 0);
		HT_OK(hl_bit_set_get(&prev, bits, 9));
		HT_EQ(prev, 1);
		HT_OK(hl_bloom_filter_try_init(&ok, bf, 100, 0.01));
		HT_EQ(ok, 1);
		HT_OK(hl_bloom_filter_add(&ok, bf, "x", 1));
		HT_OK(hl_bloom_filter_contains(&ok, bf, "x", 1));
		HT_EQ(ok, 1);
		HT_OK(hl_bucket_compare_and_set(&ok, b, NULL, 0, "v", 1));
		HT_EQ(ok, 1);
		hl_object_free(bits);
		hl_object_free(bf);
		hl_object_free(b);
	}
	hl_object_free(f.a);
	hl_client_free(c);
	ht_sentinel_destroy(s);
}

/* ---- blocking commands --------------------------------------------------- */

typedef struct taker {
	hl_client *c;
	const char *key;
	int64_t timeout_ms;
	hl_cancel *cancel;
	int rc;
	hl_value *v;
	atomic_int got; /* set once v holds what it took */
} taker;

static void *take(void *arg)
{
	taker *t = arg;
	const char *argv[3] = {"BLPOP", t->key, "0"};
	size_t lens[3] = {5, strlen(t->key), 1};
	t->rc = hl_client_command_blocking(&t->v, t->c, 3, argv, lens, NULL, 0,
	                                   t->timeout_ms, t->cancel);
	atomic_store(&t->got, t->v != NULL);
	return NULL;
}

static void push(ht_redis *r, const char *key, const char *v)
{
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH %s %s", key, v));
}

static long long llen(ht_redis *r, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "LLEN %s", key);
	long long n = rep->integer;
	freeReplyObject(rep);
	return n;
}

/* Blocked takers hold no pooled connection; one is woken by a push; a
 * cancel unblocks one without losing anything; its connection serves the
 * next. */
static void blocking(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c;
	taker t[3];
	pthread_t th[3];
	hl_object *b;
	hl_value *v = NULL;
	int i;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.pool_size = 1;
	c = ht_client_url(r->url, &o);
	b = obj(c, HL_KIND_BUCKET, "grid:blk:b");
	memset(t, 0, sizeof t);
	for (i = 0; i < 3; i++) {
		t[i].c = c;
		t[i].key = "grid:blk:q";
		t[i].timeout_ms = -1;
		HT_OK(hl_cancel_new(&t[i].cancel));
		th[i] = ht_thread_start(take, &t[i]);
	}
	/* all three block in Redis: blocked_clients */
	for (i = 0; i < 500; i++) {
		char info[4096];
		redisReply *rep = ht_raw(ht_raw_of(r), "INFO clients");
		snprintf(info, sizeof info, "%s", rep->str);
		freeReplyObject(rep);
		if (strstr(info, "blocked_clients:3"))
			break;
		ht_sleep_ms(10);
	}
	HT_CHECK(i < 500);
	/* the pool (one connection) still serves other calls */
	HT_OK(hl_bucket_set(b, "v", 1, -1));
	HT_OK(hl_bucket_get(&v, b));
	HT_STREQ(hl_value_bytes(v, NULL), "v");
	hl_value_free(v);
	/* a push wakes one; cancels end the others with nothing taken */
	push(r, "grid:blk:q", "e1");
	for (i = 0; i < 500; i++) {
		int done = atomic_load(&t[0].got) + atomic_load(&t[1].got) +
		           atomic_load(&t[2].got);
		if (done == 1)
			break;
		ht_sleep_ms(10);
	}
	for (i = 0; i < 3; i++)
		hl_cancel_trigger(t[i].cancel);
	for (i = 0; i < 3; i++)
		ht_thread_join(th[i], 10000);
	{
		int got = 0, interrupted = 0;
		for (i = 0; i < 3; i++) {
			if (t[i].rc == HL_OK) {
				got++;
				HT_EQ(hl_value_type(t[i].v), HL_VALUE_ARRAY);
				HT_STREQ(hl_value_bytes(hl_value_at(t[i].v, 1),
				                        NULL),
				         "e1");
			} else {
				HT_EQ(t[i].rc, HL_EINTERRUPTED);
				HT_CHECK(t[i].v == NULL);
				interrupted++;
			}
			hl_value_free(t[i].v);
			t[i].v = NULL;
			hl_cancel_reset(t[i].cancel);
		}
		HT_EQ(got, 1);
		HT_EQ(interrupted, 2);
	}
	HT_EQ(llen(r, "grid:blk:q"), 0);
	/* a connection given back serves the next wait; the caller's
	 * timeout ends it with nothing taken */
	t[0].timeout_ms = 150;
	th[0] = ht_thread_start(take, &t[0]);
	ht_thread_join(th[0], 10000);
	HT_EQ(t[0].rc, HL_ETIMEDOUT);
	/* Redis's own timeout: its nil answer */
	{
		const char *argv[3] = {"BLPOP", "grid:blk:q", "0.05"};
		size_t lens[3] = {5, 10, 4};
		HT_OK(hl_client_command_blocking(&v, c, 3, argv, lens, NULL, 0,
		                                 -1, NULL));
		HT_EQ(hl_value_type(v), HL_VALUE_NIL);
		hl_value_free(v);
	}
	for (i = 0; i < 3; i++)
		hl_cancel_free(t[i].cancel);
	hl_object_free(b);
	hl_client_free(c);
}

/* Pushes racing timeouts: every element pushed is either taken or still in
 * the list, never lost in an unblocked command's answer. */
static void blocking_race(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	int i, taken = 0;
	for (i = 0; i < 60; i++) {
		taker t;
		pthread_t th;
		char v[16];
		memset(&t, 0, sizeof t);
		t.c = c;
		t.key = "grid:race:q";
		t.timeout_ms = 20 + i % 15;
		th = ht_thread_start(take, &t);
		ht_sleep_ms(15 + (i * 7) % 20);
		snprintf(v, sizeof v, "e%d", i);
		push(r, "grid:race:q", v);
		ht_thread_join(th, 10000);
		if (t.rc == HL_OK && hl_value_type(t.v) == HL_VALUE_ARRAY)
			taken++;
		else
			HT_EQ(t.rc, HL_ETIMEDOUT);
		hl_value_free(t.v);
	}
	HT_EQ(taken + llen(r, "grid:race:q"), 60);
	HT_CHECK(taken > 0);
	hl_client_free(c);
}

/* Closing the client ends a blocked command at once. */
static void blocking_close(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	taker t;
	pthread_t th;
	int64_t t0;
	memset(&t, 0, sizeof t);
	t.c = c;
	t.key = "grid:close:q";
	t.timeout_ms = -1;
	th = ht_thread_start(take, &t);
	ht_sleep_ms(200);
	t0 = ht_now_ms();
	hl_client_close(c);
	ht_thread_join(th, 10000);
	HT_EQ(t.rc, HL_ECLOSED);
	HT_RANGE(ht_now_ms() - t0, 0, 3000);
	hl_client_free(c);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *o = NULL, *b = obj(c, HL_KIND_BUCKET, "grid:bad");
	hl_value *v = NULL;
	hl_arg a;
	int ok = 0;
	int64_t n = 0;

	HT_RC(hl_object_new(&o, c, 999, "x", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "unknown kind") != NULL);
	HT_RC(hl_object_new(&o, c, HL_KIND_BUCKET, "", 0), HL_EINVAL);
	HT_RC(hl_object_new(&o, c, HL_KIND_BUCKET, NULL, 3), HL_EINVAL);
	HT_RC(hl_object_new(&o, NULL, HL_KIND_BUCKET, "x", 1), HL_EINVAL);
	HT_RC(hl_object_new(NULL, c, HL_KIND_BUCKET, "x", 1), HL_EINVAL);
	HT_CHECK(o == NULL);
	HT_RC(hl_bucket_get(&v, NULL), HL_EINVAL);
	HT_RC(hl_bucket_get(NULL, b), HL_EINVAL);
	HT_RC(hl_object_exists(&ok, NULL), HL_EINVAL);
	HT_RC(hl_object_call(&v, b, HL_OP_ATOMIC_LONG_GET, NULL, 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "not one of a bucket") != NULL);
	HT_RC(hl_object_call(&v, b, 12345678, NULL, 0), HL_EINVAL);
	/* arguments: missing, too many, wrong type, NULL bytes */
	HT_RC(hl_object_call(&v, b, HL_OP_BUCKET_SET, NULL, 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "value is required") != NULL);
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_INT;
	HT_RC(hl_object_call(&v, b, HL_OP_BUCKET_SET, &a, 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "value must be bytes") != NULL);
	HT_RC(hl_object_call(&v, b, HL_OP_BUCKET_GET, &a, 1), HL_EINVAL);
	HT_RC(hl_bucket_set(b, NULL, 5, -1), HL_EINVAL);
	/* times */
	HT_RC(hl_bucket_set(b, "v", 1, 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "ttl is 0 ms") != NULL);
	HT_RC(hl_bucket_set(b, "v", 1, INT64_MAX), HL_EINVAL);
	HT_RC(hl_object_expire(NULL, b, 0), HL_EINVAL);
	HT_RC(hl_object_expire(NULL, b, -5), HL_EINVAL);
	HT_RC(hl_object_call_ex(&v, b, HL_OP_BUCKET_GET, NULL, 0, -7, NULL),
	      HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:bad")), 0);
	/* values: NULL is nil everywhere */
	HT_EQ(hl_value_type(NULL), HL_VALUE_NIL);
	HT_EQ(hl_value_int(NULL), 0);
	HT_CHECK(hl_value_bytes(NULL, NULL) == NULL);
	HT_EQ(hl_value_len(NULL), 0);
	HT_CHECK(hl_value_at(NULL, 0) == NULL);
	hl_value_free(NULL);
	hl_object_free(NULL);
	HT_EQ(hl_object_kind(NULL), -1);
	HT_CHECK(hl_kind_name(-3) == NULL);
	HT_CHECK(hl_op_name(-3) == NULL);
	/* a closed client */
	hl_client_close(c);
	HT_RC(hl_atomic_long_get(&n, b), HL_EINVAL); /* wrong kind first */
	HT_RC(hl_bucket_get(&v, b), HL_ECLOSED);
	HT_RC(hl_object_delete(NULL, b), HL_ECLOSED);
	HT_RC(hl_object_new(&o, c, HL_KIND_BUCKET, "x", 1), HL_ECLOSED);
	hl_object_free(b);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(bucket), HT_CASE(long_counter), HT_CASE(double_counter),
        HT_CASE(double_subnormal), HT_CASE(common), HT_CASE(generic),
        HT_CASE(lost_reply_once), HT_CASE(lost_reply_mark),
        HT_CASE(many_values), HT_CASE(cluster), HT_CASE(sentinel_failover),
        HT_CASE(blocking), HT_CASE(blocking_race), HT_CASE(blocking_close),
        HT_CASE(bad_input))
