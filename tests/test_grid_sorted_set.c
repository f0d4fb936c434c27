/*
 * The sorted set (Redisson's RSortedSet: core/grid/sorted_set.kind,
 * docs/grid-sorted-set.md): a Redis list kept in Java's natural order of
 * Strings (UTF-16 code units, which differ from UTF-8 bytes when a
 * supplementary character meets U+E000..U+FFFF), written by one script
 * that defers to Redisson's lock (redisson_sortedset_lock:{name}, here
 * simulated by its hash), refusing Java comparators, lost replies, many
 * threads, a cluster, a failover and bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hl_object *sset(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_sorted_set_new(&o, c, name, strlen(name)));
	return o;
}

/* ---- Java's String.compareTo, computed apart (UTF-8 -> UTF-16) -------- */

/* The UTF-16 code units of the valid UTF-8 s (len bytes) in u; their
 * number. */
static size_t utf16(const unsigned char *s, size_t len, unsigned *u)
{
	size_t i = 0, n = 0;
	while (i < len) {
		unsigned c = s[i], cp;
		size_t k, extra = c < 0x80   ? 0
		                  : c < 0xE0 ? 1
		                  : c < 0xF0 ? 2
		                             : 3;
		cp = extra == 0   ? c
		     : extra == 1 ? c & 0x1F
		     : extra == 2 ? c & 0x0F
		                  : c & 0x07;
		for (k = 1; k <= extra; k++)
			cp = (cp << 6) | (s[i + k] & 0x3F);
		i += extra + 1;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			u[n++] = 0xD800 + (cp >> 10);
			u[n++] = 0xDC00 + (cp & 0x3FF);
		} else {
			u[n++] = cp;
		}
	}
	return n;
}

static int java_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	unsigned ua[256], ub[256];
	size_t na = utf16((const unsigned char *)a, la, ua);
	size_t nb = utf16((const unsigned char *)b, lb, ub);
	size_t i;
	for (i = 0; i < na && i < nb; i++)
		if (ua[i] != ub[i])
			return ua[i] < ub[i] ? -1 : 1;
	return na == nb ? 0 : na < nb ? -1 : 1;
}

/* The list at key (raw), as at most cap strings of at most 255 bytes. */
typedef struct rawlist {
	size_t n;
	char v[2000][64];
	size_t len[2000];
} rawlist;

static void read_list(ht_redis *r, const char *key, rawlist *out)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "LRANGE %s 0 -1", key);
	size_t i;
	out->n = 0;
	HT_CHECK(rep->type == REDIS_REPLY_ARRAY);
	for (i = 0; i < rep->elements && i < 2000; i++) {
		size_t l =
		        rep->element[i]->len < 64 ? rep->element[i]->len : 63;
		memcpy(out->v[i], rep->element[i]->str, l);
		out->len[i] = l;
	}
	out->n = i;
	freeReplyObject(rep);
}

/* Strictly increasing in Java's order: sorted and no duplicates. */
static void check_sorted(const rawlist *l)
{
	size_t i;
	for (i = 1; i < l->n; i++)
		HT_CHECKF(java_cmp(l->v[i - 1], l->len[i - 1], l->v[i],
		                   l->len[i]) < 0,
		          "list out of order at %zu", i);
}

/* Values in the order Java sorts them (checked below with java_cmp):
 * every byte-order trap of UTF-16 - a supplementary character (U+1F600,
 * U+10000, U+10FFFF) before U+E000, U+FF21 and U+FFFF - and the plain
 * cases around them. */
static const char *const vectors[] = {
        "",                 /* the empty String first */
        "\x00",             /* U+0000 */
        "\x00z",            /* a NUL inside */
        "A",                /* ASCII */
        "AB",               /* a prefix first */
        "a",                /* ASCII lower after upper */
        "\x7f",             /* DEL */
        "\xc3\xa9",         /* U+00E9 */
        "\xe0\xa0\x80",     /* U+0800 */
        "\xed\x9f\xbf",     /* U+D7FF */
        "\xf0\x90\x80\x80", /* U+10000: D800 DC00 */
        "\xf0\x90\x80\x80"
        "a",                /* ... then a */
        "\xf0\x9f\x98\x80", /* U+1F600: D83D DE00 */
        "\xf4\x8f\xbf\xbf", /* U+10FFFF: DBFF DFFF */
        "\xee\x80\x80",     /* U+E000: after every surrogate */
        "\xee\x80\x80"
        "\xf0\x9f\x98\x80", /* U+E000 U+1F600 */
        "\xee\x80\x80"
        "\xef\xbf\xbf", /* U+E000 U+FFFF */
        "\xef\xbc\xa1", /* U+FF21 */
        "\xef\xbf\xbf", /* U+FFFF: the highest unit */
        "\xef\xbf\xbf"
        "\x00", /* longer */
};
#define NVEC (sizeof(vectors) / sizeof(vectors[0]))

static size_t vlen(size_t i)
{
	/* "\x00" and "\x00z" hold a NUL */
	if (i == 1)
		return 1;
	if (i == 2)
		return 2;
	if (i == NVEC - 1)
		return 4;
	return strlen(vectors[i]);
}

/* Every value added in a shuffled order lands in Java's order; byte order
 * would differ (the vectors say where). */
static void order(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:order");
	static rawlist l;
	size_t i, perm[NVEC];
	int added = 0;
	int64_t n = 0;
	hl_value *v = NULL;
	size_t len = 0;

	/* the vectors are in Java's order (a check of the reference too) */
	for (i = 1; i < NVEC; i++)
		HT_CHECKF(java_cmp(vectors[i - 1], vlen(i - 1), vectors[i],
		                   vlen(i)) < 0,
		          "vector %zu", i);
	/* byte order puts U+1F600 after U+FF21: Java's does not */
	HT_CHECK(memcmp("\xf0\x9f\x98\x80", "\xef\xbc\xa1", 3) > 0);
	for (i = 0; i < NVEC; i++)
		perm[i] = (i * 7 + 3) % NVEC; /* 7 is prime to 20 */
	for (i = 0; i < NVEC; i++) {
		HT_OK(hl_sorted_set_add(&added, s, vectors[perm[i]],
		                        vlen(perm[i])));
		HT_EQ(added, 1);
	}
	/* no duplicates */
	for (i = 0; i < NVEC; i++) {
		HT_OK(hl_sorted_set_add(&added, s, vectors[i], vlen(i)));
		HT_EQ(added, 0);
	}
	read_list(r, "grid:ss:order", &l);
	HT_EQ(l.n, NVEC);
	for (i = 0; i < l.n && i < NVEC; i++)
		HT_CHECKF(l.len[i] == vlen(i) &&
		                  memcmp(l.v[i], vectors[i], vlen(i)) == 0,
		          "index %zu holds another value", i);
	/* contains finds each, and not what is absent */
	for (i = 0; i < NVEC; i++) {
		HT_OK(hl_sorted_set_contains(&added, s, vectors[i], vlen(i)));
		HT_EQ(added, 1);
	}
	HT_OK(hl_sorted_set_contains(&added, s, "\xef\xbc\xa2", 3));
	HT_EQ(added, 0);
	HT_OK(hl_sorted_set_contains(&added, s, "\xf0\x9f\x98\x81", 4));
	HT_EQ(added, 0);
	HT_OK(hl_sorted_set_size(&n, s));
	HT_EQ(n, (int64_t)NVEC);
	HT_OK(hl_sorted_set_first(&v, s));
	HT_CHECK(hl_value_type(v) == HL_VALUE_BYTES);
	hl_value_bytes(v, &len);
	HT_EQ(len, 0);
	hl_value_free(v);
	HT_OK(hl_sorted_set_last(&v, s));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "\xef\xbf\xbf\x00", 4) == 0 &&
	         len == 4);
	hl_value_free(v);
	/* the keys are Redisson's: the list alone (no lock, no comparator
	 * left behind) */
	HT_EQ(ht_exists(r, HT_S("redisson_sortedset_lock:{grid:ss:order}")), 0);
	HT_EQ(ht_exists(r,
	                HT_S("redisson_sortedset_comparator:{grid:ss:order}")),
	      0);
	hl_object_free(s);
	hl_client_free(c);
}

static int page_bytes_eq(const hl_value *v, size_t i, const char *want)
{
	size_t len = 0;
	const char *b = hl_value_bytes(hl_value_at(v, i), &len);
	return b && len == strlen(want) && memcmp(b, want, len) == 0;
}

/* remove, the polls, ranges and pages beyond the listpack size. */
static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:ops");
	static rawlist l;
	hl_value *v = NULL;
	int ok = 0, seen = 0, pages = 0;
	int64_t n = 0;
	size_t len = 0, i;
	char buf[32], cursor[32] = "0";
	char prev[32] = "";

	HT_OK(hl_sorted_set_poll_first(&v, s)); /* empty: nil, no key */
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_sorted_set_first(&v, s));
	HT_CHECK(hl_value_type(v) == HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("x")));
	HT_EQ(ok, 0);
	HT_EQ(ht_exists(r, HT_S("grid:ss:ops")), 0);
	for (i = 0; i < 5; i++) {
		int k = snprintf(buf, sizeof buf, "v%zu", (i * 3) % 5);
		HT_OK(hl_sorted_set_add(&ok, s, buf, (size_t)k));
	}
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("v2")));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("v2")));
	HT_EQ(ok, 0);
	read_list(r, "grid:ss:ops", &l);
	HT_EQ(l.n, 4);
	HT_CHECK(memcmp(l.v[0], "v0", 2) == 0 && memcmp(l.v[1], "v1", 2) == 0 &&
	         memcmp(l.v[2], "v3", 2) == 0 && memcmp(l.v[3], "v4", 2) == 0);
	/* the tail half too (LREM from the end), then the ends */
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("v3")));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_poll_first(&v, s));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "v0", 2) == 0 && len == 2);
	hl_value_free(v);
	HT_OK(hl_sorted_set_poll_last(&v, s));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "v4", 2) == 0 && len == 2);
	hl_value_free(v);
	read_list(r, "grid:ss:ops", &l);
	HT_EQ(l.n, 1);
	HT_CHECK(memcmp(l.v[0], "v1", 2) == 0);
	HT_OK(hl_sorted_set_poll_last(&v, s));
	hl_value_free(v);
	HT_EQ(ht_exists(r, HT_S("grid:ss:ops")), 0);
	/* 1500 values (past the listpack's 512): pages of 1000 in order */
	for (i = 0; i < 1500; i++) {
		int k = snprintf(buf, sizeof buf, "k%05zu", (i * 7919) % 1500);
		HT_OK(hl_sorted_set_add(&ok, s, buf, (size_t)k));
		HT_EQ(ok, 1);
	}
	HT_OK(hl_sorted_set_size(&n, s));
	HT_EQ(n, 1500);
	do {
		hl_value *page;
		HT_OK(hl_sorted_set_scan(&v, s, cursor, strlen(cursor), 1000));
		page = (hl_value *)hl_value_at(v, 1);
		for (i = 0; i < hl_value_len(page); i++) {
			const char *b =
			        hl_value_bytes(hl_value_at(page, i), &len);
			HT_CHECK(len == 6 && strncmp(prev, b, 6) < 0);
			memcpy(prev, b, 6);
			seen++;
		}
		snprintf(cursor, sizeof cursor, "%.*s", 20,
		         hl_value_bytes(hl_value_at(v, 0), &len));
		cursor[len < 20 ? len : 20] = '\0';
		hl_value_free(v);
		pages++;
	} while (strcmp(cursor, "0") != 0 && pages < 10);
	HT_EQ(seen, 1500);
	HT_EQ(pages, 2);
	HT_OK(hl_sorted_set_read_range(&v, s, 1498, 5000));
	HT_EQ(hl_value_len(v), 2);
	HT_CHECK(page_bytes_eq(v, 0, "k01498") &&
	         page_bytes_eq(v, 1, "k01499"));
	hl_value_free(v);
	HT_OK(hl_sorted_set_read_range(&v, s, 5000, 6000)); /* out of range */
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_OK(hl_sorted_set_contains(&ok, s, HT_S("k00777")));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("k00777")));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_read_range(&v, s, 776, 777));
	HT_CHECK(page_bytes_eq(v, 0, "k00776") &&
	         page_bytes_eq(v, 1, "k00778"));
	hl_value_free(v);
	hl_object_free(s);
	hl_client_free(c);
}

/* ---- adds from several threads ---------------------------------------- */

typedef struct adder {
	hl_object *s;
	int id;
	atomic_int *added;
} adder;

static void *add_many(void *arg)
{
	adder *a = arg;
	char buf[32];
	int i, ok = 0;
	for (i = 0; i < 150; i++) {
		/* overlapping values: each is offered by two threads */
		int v = (i * 37 + a->id * 75) % 300;
		int k = snprintf(buf, sizeof buf, "t%d", v);
		if (hl_sorted_set_add(&ok, a->s, buf, (size_t)k) == HL_OK && ok)
			atomic_fetch_add(a->added, 1);
	}
	return NULL;
}

static void threads(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:threads");
	static rawlist l;
	atomic_int added = 0;
	adder a[4];
	pthread_t t[4];
	int i;
	for (i = 0; i < 4; i++) {
		a[i].s = s;
		a[i].id = i;
		a[i].added = &added;
		t[i] = ht_thread_start(add_many, &a[i]);
	}
	for (i = 0; i < 4; i++)
		ht_thread_join(t[i], 60000);
	read_list(r, "grid:ss:threads", &l);
	check_sorted(&l);
	HT_EQ(l.n, 300);
	HT_EQ(atomic_load(&added), 300); /* each value "added" once */
	hl_object_free(s);
	hl_client_free(c);
}

/* ---- Redisson's lock --------------------------------------------------- */

static long long evals0;

static int polled_thrice(void *arg)
{
	return ht_cmd_calls(arg, "evalsha") >= evals0 + 3;
}

static void hold_lock(ht_redis *r, const char *lock, long long ms)
{
	freeReplyObject(ht_raw(ht_raw_of(r), "HSET %s %s 1", lock,
	                       "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1"));
	if (ms > 0)
		freeReplyObject(
		        ht_raw(ht_raw_of(r), "PEXPIRE %s %lld", lock, ms));
}

/* While Redisson's lock hash exists hilock writes nothing and polls; once
 * it is gone the add lands. A timeout ends the wait naming the lock. */
static void redisson_lock(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:locked");
	const char *lock = "redisson_sortedset_lock:{grid:ss:locked}";
	hl_task *t = NULL;
	hl_arg arg;
	hl_value *v = NULL;
	const hl_value *tv = NULL;
	int ok = 0, res = -1;
	size_t len = 0;
	int64_t t0;

	HT_OK(hl_sorted_set_add(&ok, s, HT_S("m")));
	hold_lock(r, lock, 30000);
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "b";
	arg.len = 1;
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_object_call_start(&t, s, HL_OP_SORTED_SET_ADD, &arg, 1));
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000)); /* it polls */
	HT_EQ(hl_task_done(t), 0);
	HT_OK(hl_sorted_set_contains(&ok, s, HT_S("b"))); /* no lock needed */
	HT_EQ(ok, 0);
	HT_EQ(ht_hlen(r, HT_S(lock)), 1); /* untouched */
	ht_del(r, HT_S(lock));            /* Redisson's unlock */
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_int(tv), 1);
	hl_task_free(t);
	HT_OK(hl_sorted_set_contains(&ok, s, HT_S("b")));
	HT_EQ(ok, 1);

	/* a poll waits the same way, then answers what it took */
	hold_lock(r, lock, 30000);
	evals0 = ht_cmd_calls(r, "evalsha");
	HT_OK(hl_object_call_start(&t, s, HL_OP_SORTED_SET_POLL_FIRST, NULL,
	                           0));
	HT_CHECK(ht_wait_until(polled_thrice, r, 10000));
	HT_EQ(hl_task_done(t), 0);
	ht_del(r, HT_S(lock));
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(memcmp(hl_value_bytes(tv, &len), "b", 1) == 0 && len == 1);
	hl_task_free(t);

	/* a lease that runs out (a Redisson writer that died) frees it */
	hold_lock(r, lock, 300);
	t0 = ht_now_ms();
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("m")));
	HT_EQ(ok, 1);
	HT_CHECK(ht_now_ms() - t0 >= 200);

	/* a timeout while held: HL_ETIMEDOUT naming the lock, nothing done;
	 * a lock without a TTL too */
	hold_lock(r, lock, 0);
	arg.bytes = "z";
	t0 = ht_now_ms();
	HT_RC(hl_object_call_ex(&v, s, HL_OP_SORTED_SET_ADD, &arg, 1, 300,
	                        NULL),
	      HL_ETIMEDOUT);
	HT_CHECK(strstr(hl_error_last(), lock) != NULL);
	HT_CHECK(ht_now_ms() - t0 < 3000 * ht_scale());
	HT_EQ(ht_exists(r, HT_S("grid:ss:locked")), 0);
	HT_EQ(ht_hlen(r, HT_S(lock)), 1);
	ht_del(r, HT_S(lock));
	hl_object_free(s);
	hl_client_free(c);
}

/* A set that a Java comparator orders is refused by what compares, with
 * the key and the class named; nothing changes. Reads still read. */
static void comparator(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:cmp");
	const char *ck = "redisson_sortedset_comparator:{grid:ss:cmp}";
	const char *ik = "redisson_sortedset_comparator_instance:{grid:ss:cmp}";
	int ok = 0;
	int64_t n = 0;

	HT_OK(hl_sorted_set_add(&ok, s, HT_S("b")));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", ck,
	                       "com.example.ReverseCmp:3f2a9c"));
	HT_RC(hl_sorted_set_add(&ok, s, HT_S("a")), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), ck) != NULL);
	HT_CHECK(strstr(hl_error_last(), "com.example.ReverseCmp") != NULL);
	HT_CHECK(strstr(hl_error_last(), "3f2a9c") == NULL);
	HT_RC(hl_sorted_set_remove(&ok, s, HT_S("b")), HL_EINVAL);
	HT_RC(hl_sorted_set_contains(&ok, s, HT_S("b")), HL_EINVAL);
	HT_OK(hl_sorted_set_size(&n, s));
	HT_EQ(n, 1);
	HT_EQ(ht_cmd_calls(r, "lpush") + ht_cmd_calls(r, "linsert"), 0);
	ht_del(r, HT_S(ck));
	/* 4.4.0's serialised comparator alone */
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "SET %s %b", ik, "\xac\xed\x00\x05sr", 6));
	HT_RC(hl_sorted_set_add(&ok, s, HT_S("a")), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), ik) != NULL);
	HT_CHECK(strstr(hl_error_last(), "serialised Java comparator") != NULL);
	ht_del(r, HT_S(ik));
	HT_OK(hl_sorted_set_add(&ok, s, HT_S("a")));
	HT_EQ(ok, 1);
	/* delete removes Redisson's keys: the list and its helpers */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET %s %s", ck, "x.Y:1"));
	HT_OK(hl_object_delete(&ok, s));
	HT_EQ(ht_exists(r, HT_S("grid:ss:cmp")), 0);
	HT_EQ(ht_exists(r, HT_S(ck)), 0);
	hl_object_free(s);
	hl_client_free(c);
}

/* ---- lost replies ------------------------------------------------------- */

static int landed(void *arg)
{
	redisReply *rep = ht_raw(ht_raw_of(arg), "LLEN grid:ss:doubt");
	int ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 2;
	freeReplyObject(rep);
	return ok;
}

static int taken(void *arg)
{
	redisReply *rep = ht_raw(ht_raw_of(arg), "LLEN grid:ss:doubt");
	int ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	return ok;
}

/* add is once (in doubt, applied once); a poll is marked: the resend
 * answers what the first run took and nothing else is taken. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c;
	hl_object *s;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	int ok = 0, res = 0;
	size_t len = 0;
	static rawlist l;

	c = ht_doubt_client(p->url, 20);
	s = sset(c, "grid:ss:doubt");
	HT_OK(hl_sorted_set_add(&ok, s, HT_S("a"))); /* scripts cached */
	HT_OK(hl_sorted_set_poll_last(&v, s));
	hl_value_free(v);
	HT_OK(hl_sorted_set_add(&ok, s, HT_S("a")));
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_sorted_set_add(&ok, s, HT_S("b")), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	HT_CHECK(ht_wait_until(landed, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	read_list(r, "grid:ss:doubt", &l);
	HT_EQ(l.n, 2);
	HT_OK(hl_sorted_set_contains(&ok, s, HT_S("b"))); /* connected again */
	HT_EQ(ok, 1);
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, s, HL_OP_SORTED_SET_POLL_FIRST, NULL,
	                           0));
	if (!ht_wait_until(taken, r, 10000)) {
		read_list(r, "grid:ss:doubt", &l);
		HT_FAIL("poll did not run: %zu left, task done %d: %d %s", l.n,
		        hl_task_done(t), hl_task_result(&res, t),
		        hl_error_last());
	}
	ht_sleep_ms(300); /* its reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(hl_value_type(tv) == HL_VALUE_BYTES);
	HT_CHECK(memcmp(hl_value_bytes(tv, &len), "a", 1) == 0 && len == 1);
	hl_task_free(t);
	read_list(r, "grid:ss:doubt", &l); /* only "a" was taken */
	HT_EQ(l.n, 1);
	HT_CHECK(l.n == 1 && memcmp(l.v[0], "b", 1) == 0);
	hl_object_free(s);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* A hash-tagged name: the list, the lock and the comparator keys share a
 * slot; a held lock on the node is waited for there. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *s = sset(c, "{user1}:sorted");
	hl_value *v = NULL;
	int ok = 0, i;
	int64_t n = 0;
	size_t len = 0;
	char buf[16];
	for (i = 9; i >= 0; i--) {
		int k = snprintf(buf, sizeof buf, "%d", i);
		HT_OK(hl_sorted_set_add(&ok, s, buf, (size_t)k));
		HT_EQ(ok, 1);
	}
	HT_OK(hl_sorted_set_size(&n, s));
	HT_EQ(n, 10);
	HT_OK(hl_sorted_set_first(&v, s));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "0", 1) == 0 && len == 1);
	hl_value_free(v);
	HT_OK(hl_sorted_set_remove(&ok, s, HT_S("5")));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_contains(&ok, s, HT_S("5")));
	HT_EQ(ok, 0);
	HT_OK(hl_sorted_set_poll_last(&v, s));
	HT_CHECK(memcmp(hl_value_bytes(v, &len), "9", 1) == 0 && len == 1);
	hl_value_free(v);
	HT_OK(hl_object_delete(&ok, s));
	HT_EQ(ok, 1);
	hl_object_free(s);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* Adds go on through a Sentinel failover; the set stays sorted and each
 * value answered "added" is there (in doubt ones at most once). */
static void sentinel_failover(void)
{
	ht_sentinel *sn = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	hl_object *s;
	char url[600], buf[16];
	int i, ok, old, added = 0, doubt = 0, after = 0;
	int64_t n = 0;
	ht_failover_options(&o, 6000);
	ht_sentinel_url(sn, url, sizeof url);
	c = ht_client_url(url, &o);
	s = sset(c, "grid:ss:failover");
	for (i = 0; i < 20; i++) {
		int k = snprintf(buf, sizeof buf, "a%03d", 97 * i % 20);
		HT_OK(hl_sorted_set_add(&ok, s, buf, (size_t)k));
	}
	old = ht_sentinel_kill_master(sn);
	ht_sentinel_wait_failover(sn, old, 20000);
	for (i = 0; i < 20; i++) {
		int k = snprintf(buf, sizeof buf, "b%03d", 97 * i % 20);
		int rc = hl_sorted_set_add(&ok, s, buf, (size_t)k);
		if (rc == HL_OK && ok)
			added++;
		else if (rc == HL_EINDOUBT)
			doubt++;
	}
	HT_CHECKF(added > 0, "no add after the failover");
	HT_OK(hl_sorted_set_size(&n, s));
	/* asynchronous replication may lose some of the first 20 */
	HT_CHECK(n >= added && n <= 20 + added + doubt);
	for (i = 0; i < 20; i++) {
		int k = snprintf(buf, sizeof buf, "b%03d", i);
		HT_OK(hl_sorted_set_contains(&ok, s, buf, (size_t)k));
		after += ok;
	}
	HT_CHECK(after >= added && after <= added + doubt);
	hl_object_free(s);
	hl_client_free(c);
	ht_sentinel_destroy(sn);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = sset(c, "grid:ss:bad");
	hl_value *v = NULL;
	int ok = 0;
	int64_t n = 0;
	char *big;
	size_t len = 0;

	/* not UTF-8: refused before any round trip */
	HT_RC(hl_sorted_set_add(&ok, s, "\xff", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "UTF-8") != NULL);
	HT_RC(hl_sorted_set_add(&ok, s, "ab\xc3", 3), HL_EINVAL); /* cut */
	HT_CHECK(strstr(hl_error_last(), "byte 2") != NULL);
	HT_RC(hl_sorted_set_add(&ok, s, "\xc0\xaf", 2), HL_EINVAL); /* long */
	HT_RC(hl_sorted_set_add(&ok, s, "\xed\xa0\x80", 3),
	      HL_EINVAL); /* a surrogate */
	HT_RC(hl_sorted_set_add(&ok, s, "\xf4\x90\x80\x80", 4),
	      HL_EINVAL); /* past U+10FFFF */
	HT_RC(hl_sorted_set_add(&ok, s, NULL, 1), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("grid:ss:bad")), 0);
	/* NUL and empty values are values; a big one too (1 MiB) */
	HT_OK(hl_sorted_set_add(&ok, s, "a\0b", 3));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_add(&ok, s, "", 0));
	HT_EQ(ok, 1);
	big = malloc(1 << 20);
	memset(big, 'q', 1 << 20);
	HT_OK(hl_sorted_set_add(&ok, s, big, 1 << 20));
	HT_EQ(ok, 1);
	HT_OK(hl_sorted_set_contains(&ok, s, big, 1 << 20));
	HT_EQ(ok, 1);
	big[(1 << 20) - 1] = 'r';
	HT_OK(hl_sorted_set_contains(&ok, s, big, 1 << 20));
	HT_EQ(ok, 0);
	free(big);
	HT_OK(hl_sorted_set_last(&v, s));
	hl_value_bytes(v, &len);
	HT_EQ(len, (size_t)1 << 20);
	hl_value_free(v);
	/* scan: a cursor that is no index, a count out of range (the
	 * script refuses them: invalid arguments) */
	HT_RC(hl_sorted_set_scan(&v, s, HT_S("x"), 10), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "cursor") != NULL);
	HT_RC(hl_sorted_set_scan(&v, s, HT_S("-1"), 10), HL_EINVAL);
	HT_RC(hl_sorted_set_scan(&v, s, HT_S("0"), 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "count") != NULL);
	/* another type at the key */
	ht_del(r, HT_S("grid:ss:bad"));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET grid:ss:bad x"));
	HT_RC(hl_sorted_set_add(&ok, s, HT_S("a")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_sorted_set_poll_first(&v, s), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_sorted_set_contains(&ok, s, HT_S("a")), HL_EREDIS);
	HT_RC(hl_sorted_set_size(&n, s), HL_EREDIS);
	ht_del(r, HT_S("grid:ss:bad"));
	/* another type at the lock key: not a lock, never waited for */
	freeReplyObject(ht_raw(ht_raw_of(r),
	                       "SET redisson_sortedset_lock:{grid:ss:bad} x"));
	HT_RC(hl_sorted_set_add(&ok, s, HT_S("a")), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "lock key") != NULL);
	HT_RC(hl_sorted_set_poll_last(&v, s), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "lock key") != NULL);
	ht_del(r, HT_S("redisson_sortedset_lock:{grid:ss:bad}"));
	hl_object_free(s);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(order), HT_CASE(ops), HT_CASE(threads), HT_CASE(redisson_lock),
        HT_CASE(comparator), HT_CASE(lost_reply), HT_CASE(cluster),
        HT_CASE(sentinel_failover), HT_CASE(bad_input))
