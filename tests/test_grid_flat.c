/*
 * A page of values in one go (core/src/grid/value.c,
 * hl__value_flat_of_reply, and hl_value_gather): built from hand-made
 * hiredis replies, no Redis. The reply accessors below read them as
 * transport/conn.c does.
 */
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"
#include "harness.h"

#define RR(r) ((const redisReply *)(const void *)(r))

int hl__reply_type(const hl_reply *r)
{
	return r ? RR(r)->type : HL_REPLY_NIL;
}
long long hl__reply_int(const hl_reply *r)
{
	return r && RR(r)->type == REDIS_REPLY_INTEGER ? RR(r)->integer : 0;
}
const char *hl__reply_str(const hl_reply *r)
{
	return r && RR(r)->str ? RR(r)->str : "";
}
size_t hl__reply_strlen(const hl_reply *r)
{
	return r && RR(r)->str ? RR(r)->len : 0;
}
size_t hl__reply_len(const hl_reply *r)
{
	return r && RR(r)->type == REDIS_REPLY_ARRAY ? RR(r)->elements : 0;
}
const hl_reply *hl__reply_at(const hl_reply *r, size_t i)
{
	return i < hl__reply_len(r)
	               ? (const hl_reply *)(const void *)RR(r)->element[i]
	               : NULL;
}

static redisReply g_el[4096];
static redisReply *g_ptr[4096];

static const hl_reply *array(size_t n)
{
	static redisReply a;
	memset(&a, 0, sizeof(a));
	a.type = REDIS_REPLY_ARRAY;
	a.elements = n;
	a.element = g_ptr;
	return (const hl_reply *)(const void *)&a;
}

static void set(size_t i, int type, const char *s, size_t len, long long n)
{
	memset(&g_el[i], 0, sizeof(g_el[i]));
	g_el[i].type = type;
	g_el[i].str = (char *)s;
	g_el[i].len = len;
	g_el[i].integer = n;
	g_ptr[i] = &g_el[i];
}

/* members and scores: doubles from strings and integers; a bad score is
 * an error naming it; nothing leaks (valgrind) */
static void scored(void)
{
	hl_value *v = NULL;
	size_t len;
	set(0, REDIS_REPLY_STRING, "m\0a", 3, 0);
	set(1, REDIS_REPLY_STRING, "1.5", 3, 0);
	set(2, REDIS_REPLY_STRING, "", 0, 0);
	set(3, REDIS_REPLY_INTEGER, NULL, 0, -7);
	HT_EQ(hl__value_flat_of_reply(&v, array(4), 1, "zset"), HL_OK);
	HT_EQ(hl_value_len(v), 4);
	HT_CHECK(memcmp(hl_value_bytes(hl_value_at(v, 0), &len), "m\0a", 4) ==
	                 0 &&
	         len == 3);
	HT_EQ(hl_value_type(hl_value_at(v, 1)), HL_VALUE_DOUBLE);
	HT_CHECK(hl_value_double(hl_value_at(v, 1)) == 1.5);
	HT_CHECK(hl_value_bytes(hl_value_at(v, 2), &len)[0] == 0 && len == 0);
	HT_CHECK(hl_value_double(hl_value_at(v, 3)) == -7.0);
	hl_value_free(v);
	set(3, REDIS_REPLY_STRING, "x1", 2, 0);
	v = (hl_value *)1;
	HT_EQ(hl__value_flat_of_reply(&v, array(4), 1, "zset"), HL_EPROTOCOL);
	HT_CHECK(v == NULL);
	HT_CHECK(strstr(hl_error_last(), "zset") != NULL);
}

/* every type but arrays, many blocks' worth, values over a block, and an
 * element that is an array: 1 (nothing made) */
static void mixed(void)
{
	static char big[70000];
	hl_value *v = NULL;
	size_t i, n = 4000, len, lens[4000], total;
	char *buf;
	memset(big, 'b', sizeof(big));
	for (i = 0; i < n; i++) {
		if (i % 4 == 0)
			set(i, REDIS_REPLY_STRING, "field", 1 + i % 5, 0);
		else if (i % 4 == 1)
			set(i, REDIS_REPLY_INTEGER, NULL, 0, (long long)i);
		else if (i % 4 == 2)
			set(i, REDIS_REPLY_NIL, NULL, 0, 0);
		else
			set(i, REDIS_REPLY_STATUS, "OK", 2, 0);
	}
	set(5, REDIS_REPLY_STRING, big, sizeof(big), 0); /* over a block */
	HT_EQ(hl__value_flat_of_reply(&v, array(n), 0, "list"), HL_OK);
	HT_EQ(hl_value_len(v), n);
	for (i = 0; i < n; i++) {
		const hl_value *e = hl_value_at(v, i);
		if (i == 5) {
			HT_CHECK(hl_value_bytes(e, &len)[69999] == 'b' &&
			         len == sizeof(big));
		} else if (i % 4 == 0) {
			HT_CHECK(memcmp(hl_value_bytes(e, &len), "field",
			                1 + i % 5) == 0 &&
			         len == 1 + i % 5);
		} else if (i % 4 == 1) {
			HT_EQ(hl_value_int(e), (int64_t)i);
		} else if (i % 4 == 2) {
			HT_EQ(hl_value_type(e), HL_VALUE_NIL);
		} else {
			HT_CHECK(strcmp(hl_value_bytes(e, &len), "OK") == 0);
		}
	}
	total = hl_value_gather(v, lens, NULL, 0);
	HT_EQ(lens[1], (size_t)-1);
	HT_EQ(lens[5], sizeof(big));
	buf = malloc(total);
	HT_EQ(hl_value_gather(v, lens, buf, total), total);
	HT_CHECK(buf && memcmp(buf, "fOKfieldb", 9) == 0);
	free(buf);
	hl_value_free(v);
	set(7, REDIS_REPLY_ARRAY, NULL, 0, 0);
	v = (hl_value *)1;
	HT_EQ(hl__value_flat_of_reply(&v, array(n), 0, "list"), 1);
	HT_CHECK(v == NULL);
	HT_EQ(hl__value_flat_of_reply(&v, array(0), 0, "list"), HL_OK);
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
}

static void *page_in_thread(void *arg)
{
	hl_value *v = NULL;
	int i, *ok = arg;
	for (i = 0; i < 3; i++) {
		*ok = hl__value_flat_of_reply(&v, array(2000), 0, "list") ==
		              HL_OK &&
		      hl_value_len(v) == 2000;
		hl_value_free(v); /* its blocks kept for the next page */
	}
	return NULL;
}

/* pages made and freed in a thread that ends: the blocks the thread kept
 * are freed with it (valgrind: no leak), and reused meanwhile */
static void thread_cache(void)
{
	pthread_t t;
	size_t i;
	int ok = 0;
	for (i = 0; i < 2000; i++)
		set(i, REDIS_REPLY_STRING, "value-0000000000001", 19, 0);
	HT_EQ(pthread_create(&t, NULL, page_in_thread, &ok), 0);
	HT_EQ(pthread_join(t, NULL), 0);
	HT_CHECK(ok);
}

/* hl__fmt_double's fast path (decimals in [1e-3, 1e7): no printf, no
 * strtod) writes what its reference, printf and strtod, writes, for
 * decimals of 0 to 9 places at every scale of that range and a little
 * beyond it, values next to the range's bounds, and random bit patterns
 * (most outside it); and what it writes reads back as d. */
static void check_format(double d)
{
	char fast[HL_NUM_MAX], ref[HL_NUM_MAX];
	size_t nf = hl__fmt_double_ex(fast, sizeof fast, d, 0),
	       nr = hl__fmt_double_ex(ref, sizeof ref, d, 1);
	HT_CHECKF(nf == nr && strcmp(fast, ref) == 0,
	          "%.17g: fast path %s, reference %s", d, fast, ref);
	if (nf && fabs(d) >= 1e-3 && fabs(d) < 1e7)
		HT_CHECKF(strtod(fast, NULL) == d, "%.17g written %s", d, fast);
}

static void double_format(void)
{
	static const double edges[] = {0.1,
	                               0.2,
	                               0.3,
	                               1e-3,
	                               1e7,
	                               9999999.5,
	                               0.7,
	                               1.005,
	                               2.675,
	                               1234567.89,
	                               0.0015,
	                               0.00123456789,
	                               1.5,
	                               100.0,
	                               123456.0,
	                               4.35,
	                               0.1 + 0.2,
	                               1.0 / 3.0,
	                               2.0 / 3.0,
	                               9007199.254740991,
	                               1e-3 * 1.0000000000000002};
	static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4,
	                             1e5, 1e6, 1e7, 1e8, 1e9};
	uint64_t x = 0x9E3779B97F4A7C15u;
	size_t i;
	int k;
	for (i = 0; i < sizeof edges / sizeof edges[0]; i++) {
		check_format(edges[i]);
		check_format(-edges[i]);
		check_format(nextafter(edges[i], 0));
		check_format(nextafter(edges[i], INFINITY));
	}
	for (i = 0; i < 20000; i++) {
		uint64_t n;
		double d;
		/* splitmix64 */
		x += 0x9E3779B97F4A7C15u;
		n = x;
		n = (n ^ (n >> 30)) * 0xBF58476D1CE4E5B9u;
		n = (n ^ (n >> 27)) * 0x94D049BB133111EBu;
		n ^= n >> 31;
		/* a random bit pattern */
		memcpy(&d, &n, sizeof d);
		if (!isnan(d) && !isinf(d))
			check_format(d);
		/* a decimal of k places with up to 13 digits */
		k = (int)(n % 10);
		d = (double)((n >> 8) % (i % 2 ? 10000000000000u : 100000u)) /
		    p10[k];
		check_format(d);
		check_format(-d);
		check_format(nextafter(d, INFINITY));
	}
}

HT_MAIN(HT_CASE(scored), HT_CASE(mixed), HT_CASE(thread_cache),
        HT_CASE(double_format))
