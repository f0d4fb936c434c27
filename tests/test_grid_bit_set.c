/*
 * The bit set (Redisson's RBitSet, a pure spec: core/grid/bit_set.kind):
 * bits at Redis SETBIT offsets (the most significant bit of each byte
 * first), ranges set in one atomic script, raw bytes both ways, BITOP with
 * other bitsets, a lost reply, a cluster, and bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <stdlib.h>
#include <string.h>

static hl_object *bits(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_bit_set_new(&o, c, name, strlen(name)));
	return o;
}

/* The raw bytes at key; their length (-1 when absent). */
static long long raw(ht_redis *r, const char *key, unsigned char *buf,
                     size_t cap)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "GET %s", key);
	long long n = -1;
	if (rep->type == REDIS_REPLY_STRING) {
		n = (long long)rep->len;
		memcpy(buf, rep->str, rep->len < cap ? rep->len : cap);
	}
	freeReplyObject(rep);
	return n;
}

static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b = bits(c, "grid:bits");
	unsigned char buf[64];
	hl_value *v = NULL;
	size_t len = 0;
	int old = 7;
	int64_t n = -1;

	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 0);
	HT_OK(hl_bit_set_to_byte_array(&v, b));
	HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
	hl_value_bytes(v, &len);
	HT_EQ(len, 0);
	hl_value_free(v);
	/* bit 0 is the most significant bit of byte 0 (SETBIT's order) */
	HT_OK(hl_bit_set_set(&old, b, 0, 1));
	HT_EQ(old, 0);
	HT_OK(hl_bit_set_set(&old, b, 0, 1));
	HT_EQ(old, 1);
	HT_OK(hl_bit_set_set(&old, b, 9, 1));
	HT_EQ(raw(r, "grid:bits", buf, sizeof buf), 2);
	HT_EQ(buf[0], 0x80);
	HT_EQ(buf[1], 0x40);
	HT_OK(hl_bit_set_get(&old, b, 9));
	HT_EQ(old, 1);
	HT_OK(hl_bit_set_get(&old, b, 10));
	HT_EQ(old, 0);
	HT_OK(hl_bit_set_get(&old, b, 4000000));
	HT_EQ(old, 0);
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 2);
	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 10);
	HT_OK(hl_bit_set_size(&n, b));
	HT_EQ(n, 16);
	HT_OK(hl_bit_set_clear(&old, b, 9));
	HT_EQ(old, 1);
	HT_OK(hl_bit_set_clear(&old, b, 9));
	HT_EQ(old, 0);
	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 1);
	/* length finds the highest bit far out, past zero bytes */
	HT_OK(hl_bit_set_set(&old, b, 100007, 1));
	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 100008);
	HT_OK(hl_bit_set_clear(&old, b, 100007));
	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 1);
	HT_OK(hl_bit_set_size(&n, b));
	HT_EQ(n, 100008);

	/* ranges [from, to): edges bit by bit, whole bytes at once */
	HT_OK(hl_object_delete(NULL, b));
	HT_OK(hl_bit_set_set_range(b, 3, 29, 1));
	HT_EQ(raw(r, "grid:bits", buf, sizeof buf), 4);
	HT_EQ(buf[0], 0x1f);
	HT_EQ(buf[1], 0xff);
	HT_EQ(buf[2], 0xff);
	HT_EQ(buf[3], 0xf8);
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 26);
	HT_OK(hl_bit_set_clear_range(b, 5, 21));
	HT_EQ(raw(r, "grid:bits", buf, sizeof buf), 4);
	HT_EQ(buf[0], 0x18);
	HT_EQ(buf[1], 0x00);
	HT_EQ(buf[2], 0x07);
	HT_EQ(buf[3], 0xf8);
	HT_OK(hl_bit_set_set_range(b, 6, 6, 1)); /* empty */
	HT_OK(hl_bit_set_set_range(b, 1, 3, 0)); /* within one byte */
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 2 + 8);
	HT_OK(hl_bit_set_set_range(b, 0, 8000, 1));
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 8000);

	/* raw bytes both ways (Redisson's toByteArray / set(BitSet)), NUL
	 * bytes kept */
	HT_OK(hl_bit_set_set_bytes(b, "\x00\xa5\x00", 3));
	HT_OK(hl_bit_set_to_byte_array(&v, b));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "\x00\xa5\x00", 3) == 0);
	HT_EQ(len, 3);
	hl_value_free(v);
	HT_OK(hl_bit_set_length(&n, b));
	HT_EQ(n, 16);
	HT_OK(hl_bit_set_get(&old, b, 8));
	HT_EQ(old, 1);
	hl_object_free(b);
	hl_client_free(c);
}

static void bitops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *a = bits(c, "{grid:op}:a");
	const void *names[2] = {"{grid:op}:b", "{grid:op}:c"};
	size_t lens[2] = {11, 11};
	unsigned char buf[8];

	freeReplyObject(ht_raw(ht_raw_of(r), "SET {grid:op}:b %b", "\xf0\x0f",
	                       (size_t)2));
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "SET {grid:op}:c %b", "\x3c", (size_t)1));
	HT_OK(hl_bit_set_set_bytes(a, "\xff\xff", 2));
	HT_OK(hl_bit_set_and_(a, names, lens, 1));
	HT_EQ(raw(r, "{grid:op}:a", buf, sizeof buf), 2);
	HT_EQ(buf[0], 0xf0);
	HT_EQ(buf[1], 0x0f);
	HT_OK(hl_bit_set_or_(a, names + 1, lens + 1, 1));
	raw(r, "{grid:op}:a", buf, sizeof buf);
	HT_EQ(buf[0], 0xfc);
	HT_EQ(buf[1], 0x0f);
	HT_OK(hl_bit_set_xor_(a, names, lens, 2));
	raw(r, "{grid:op}:a", buf, sizeof buf);
	HT_EQ(buf[0], 0xfc ^ 0xf0 ^ 0x3c);
	HT_EQ(buf[1], 0x0f ^ 0x0f);
	HT_OK(hl_bit_set_not_(a));
	raw(r, "{grid:op}:a", buf, sizeof buf);
	HT_EQ(buf[0], (unsigned char)~(0xfc ^ 0xf0 ^ 0x3c));
	HT_EQ(buf[1], 0xff);
	/* and with none: this bitset alone (a AND a) */
	HT_OK(hl_bit_set_and_(a, NULL, NULL, 0));
	HT_EQ(raw(r, "{grid:op}:b", buf, sizeof buf), 2); /* untouched */
	HT_EQ(buf[0], 0xf0);
	hl_object_free(a);
	hl_client_free(c);
}

static int bit_landed(void *arg)
{
	redisReply *rep = ht_raw(ht_raw_of(arg), "GETBIT grid:doubt:bits 77");
	int on = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	return on;
}

/* set returns the bit before: sent again after a lost reply it would
 * answer "was set" for a bit it set itself, so it is in doubt, never
 * resent. A range (no answer, the same state twice) is resent. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c;
	hl_object *b;
	int old = 7;
	int64_t n = 0;
	hl_task *t = NULL;
	hl_arg args[2];
	int res = 0;

	c = ht_doubt_client(p->url, 20);
	b = bits(c, "grid:doubt:bits");
	HT_OK(hl_bit_set_cardinality(&n, b)); /* connected */
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_bit_set_set(&old, b, 77, 1), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	HT_CHECK(ht_wait_until(bit_landed, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 1);
	/* the range's script cached first (a late copy must not meet
	 * NOSCRIPT), then a range whose first reply is lost: resent */
	HT_OK(hl_bit_set_set_range(b, 0, 8, 0));
	ht_proxy_cmd(p, "delay 400");
	memset(args, 0, sizeof args);
	args[0].type = HL_ARG_INT;
	args[0].i = 100;
	args[1].type = HL_ARG_INT;
	args[1].i = 164;
	HT_OK(hl_object_call_start(&t, b, HL_OP_BIT_SET_SET_RANGE, args, 2));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_OK(hl_bit_set_cardinality(&n, b));
	HT_EQ(n, 1 + 64);
	hl_object_free(b);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	const void *names[1] = {"{grid:clb}:b"};
	size_t lens[1] = {12};
	hl_object *a = bits(c, "{grid:clb}:a"), *b = bits(c, "{grid:clb}:b");
	int64_t n = 0;
	int old = 0;
	HT_OK(hl_bit_set_set_range(a, 0, 16, 1));
	HT_OK(hl_bit_set_set(&old, b, 3, 1));
	HT_OK(hl_bit_set_and_(a, names, lens, 1));
	HT_OK(hl_bit_set_cardinality(&n, a));
	HT_EQ(n, 1);
	HT_OK(hl_bit_set_length(&n, a));
	HT_EQ(n, 4);
	hl_object_free(a);
	hl_object_free(b);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b = bits(c, "grid:bits:bad");
	int old = 0;
	int64_t n = 0;
	const void *names[1] = {NULL};
	size_t lens[1] = {3};

	HT_RC(hl_bit_set_get(&old, b, -1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "bit offset") != NULL);
	HT_RC(hl_bit_set_set(&old, b, (int64_t)1 << 32, 1), HL_EREDIS);
	HT_RC(hl_bit_set_set(&old, b, 1, 2), HL_EREDIS);
	HT_RC(hl_bit_set_set_range(b, 5, 4, 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "bit range") != NULL);
	HT_RC(hl_bit_set_set_range(b, -1, 4, 1), HL_EREDIS);
	HT_RC(hl_bit_set_set_range(b, 0, 16, 2), HL_EREDIS); /* nothing set */
	HT_RC(hl_bit_set_clear_range(b, 0, ((int64_t)1 << 32) + 1), HL_EREDIS);
	HT_RC(hl_bit_set_and_(b, names, lens, 1), HL_EINVAL);
	HT_RC(hl_bit_set_and_(b, NULL, NULL, 2), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:bits:bad")), 0);
	/* another type at the key */
	freeReplyObject(ht_raw(ht_raw_of(r), "LPUSH grid:bits:bad x"));
	HT_RC(hl_bit_set_get(&old, b, 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_bit_set_length(&n, b), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "WRONGTYPE") != NULL);
	HT_RC(hl_bit_set_set_range(b, 0, 9, 1), HL_EREDIS);
	HT_RC(hl_bit_set_not_(b), HL_EREDIS);
	hl_object_free(b);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(ops), HT_CASE(bitops), HT_CASE(lost_reply), HT_CASE(cluster),
        HT_CASE(bad_input))
