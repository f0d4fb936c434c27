/*
 * The set (Redisson's RSet, core/grid/set.kind) and the scored sorted set
 * (RScoredSortedSet, core/grid/scored_sorted_set.kind): every operation
 * and the key it leaves in Redis, members with NUL bytes and empty ones,
 * scores negative, fractional, huge and refused (NaN, the infinities),
 * ranges by rank and by score with open ends, iteration by cursor past
 * the listpack (> 512 members), lost replies of a pop / a poll (mark: the
 * answer is what was taken) and of an add (once: in doubt, applied once),
 * a key of another type, a cluster and a Sentinel failover.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hl_object *set_of(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_set_new(&o, c, name, strlen(name)));
	return o;
}

static hl_object *zset_of(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_scored_sorted_set_new(&o, c, name, strlen(name)));
	return o;
}

static long long raw_int(ht_redis *r, const char *fmt, const char *key)
{
	redisReply *x = ht_raw(ht_raw_of(r), fmt, key);
	long long n = x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
	freeReplyObject(x);
	return n;
}

/* ZSCORE key member as Redis has it (a double), NAN when absent. */
static double raw_score(ht_redis *r, const char *key, const void *m, size_t len)
{
	redisReply *x = redisCommand(ht_raw_of(r), "ZSCORE %s %b", key, m, len);
	double d =
	        x && x->type == REDIS_REPLY_STRING ? strtod(x->str, NULL) : NAN;
	freeReplyObject(x);
	return d;
}

static int bytes_is(const hl_value *v, const char *s, size_t len)
{
	size_t n = 0;
	const char *p;
	if (hl_value_type(v) != HL_VALUE_BYTES)
		return 0;
	p = hl_value_bytes(v, &n);
	return n == len && memcmp(p, s, len) == 0;
}

/* ---- set ------------------------------------------------------------------
 */

static void set_ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = set_of(c, "gset:s");
	const void *vals[4] = {"a", "b\0c", "", "a"};
	size_t lens[4] = {1, 3, 0, 1};
	int ok = -1;
	int64_t n = -1;
	hl_value *v = NULL;
	redisReply *x;

	HT_OK(hl_set_size(&n, s));
	HT_EQ(n, 0);
	HT_OK(hl_set_add(&ok, s, "x", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_set_add(&ok, s, "x", 1));
	HT_EQ(ok, 0);
	/* bulk: duplicates in the batch count once; NUL and empty members */
	HT_OK(hl_set_add_all(&n, s, vals, lens, 4));
	HT_EQ(n, 3);
	HT_EQ(raw_int(r, "SCARD %s", "gset:s"), 4);
	x = redisCommand(ht_raw_of(r), "SISMEMBER gset:s %b", "b\0c",
	                 (size_t)3);
	HT_EQ(x->integer, 1);
	freeReplyObject(x);
	HT_OK(hl_set_contains(&ok, s, "b\0c", 3));
	HT_EQ(ok, 1);
	HT_OK(hl_set_contains(&ok, s, "b", 1));
	HT_EQ(ok, 0);
	HT_OK(hl_set_contains(&ok, s, "", 0));
	HT_EQ(ok, 1);
	HT_OK(hl_set_contains_all(&ok, s, vals, lens, 4));
	HT_EQ(ok, 1);
	{
		const void *some[2] = {"a", "zz"};
		size_t sl[2] = {1, 2};
		HT_OK(hl_set_contains_all(&ok, s, some, sl, 2));
		HT_EQ(ok, 0);
	}
	HT_OK(hl_set_contains_all(&ok, s, NULL, NULL, 0));
	HT_EQ(ok, 1);
	HT_OK(hl_set_add_all(&n, s, NULL, NULL, 0));
	HT_EQ(n, 0);
	HT_OK(hl_set_remove(&ok, s, "x", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_set_remove(&ok, s, "x", 1));
	HT_EQ(ok, 0);
	HT_OK(hl_set_size(&n, s));
	HT_EQ(n, 3);
	/* random members stay */
	HT_OK(hl_set_random(&v, s));
	HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
	hl_value_free(v);
	HT_OK(hl_set_random_many(&v, s, 10));
	HT_EQ(hl_value_len(v), 3);
	hl_value_free(v);
	HT_OK(hl_set_random_many(&v, s, -5)); /* SRANDMEMBER: repeats */
	HT_EQ(hl_value_len(v), 5);
	hl_value_free(v);
	HT_EQ(raw_int(r, "SCARD %s", "gset:s"), 3);
	/* pops take them out */
	HT_OK(hl_set_remove_random(&v, s));
	HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
	{
		size_t len = 0;
		const char *m = hl_value_bytes(v, &len);
		HT_OK(hl_set_contains(&ok, s, m, len));
		HT_EQ(ok, 0); /* the member taken is gone */
	}
	hl_value_free(v);
	HT_EQ(raw_int(r, "SCARD %s", "gset:s"), 2);
	HT_OK(hl_set_remove_random_many(&v, s, 5));
	HT_EQ(hl_value_len(v), 2);
	hl_value_free(v);
	HT_EQ(raw_int(r, "EXISTS %s", "gset:s"), 0);
	HT_OK(hl_set_remove_random(&v, s));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_set_remove_random_many(&v, s, 3));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_OK(hl_set_random(&v, s));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	/* remove_all counts the members that were there */
	HT_OK(hl_set_add_all(&n, s, vals, lens, 3));
	{
		const void *rm[3] = {"a", "nope", ""};
		size_t rl[3] = {1, 4, 0};
		HT_OK(hl_set_remove_all(&n, s, rm, rl, 3));
		HT_EQ(n, 2);
	}
	x = redisCommand(ht_raw_of(r), "SMEMBERS gset:s");
	HT_EQ(x->elements, 1);
	HT_CHECK(x->element[0]->len == 3 &&
	         memcmp(x->element[0]->str, "b\0c", 3) == 0);
	freeReplyObject(x);
	hl_object_free(s);
	hl_client_free(c);
}

/* A batch of 20000 in one call (the script adds in chunks: no unpack
 * limit), then SSCAN pages cover every member once. */
static void set_many(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = set_of(c, "gset:many");
	enum { N = 20000 };
	char(*buf)[12] = malloc(N * 12);
	const void **vals = malloc(N * sizeof(*vals));
	size_t *lens = malloc(N * sizeof(*lens)), i, len, nlen;
	unsigned char *seen = calloc(N, 1);
	char cursor[64] = "0";
	int64_t n = 0;
	int pages = 0, total = 0, ok = 0;
	hl_value *v = NULL;

	for (i = 0; i < N; i++) {
		lens[i] = (size_t)snprintf(buf[i], 12, "m%zu", i);
		vals[i] = buf[i];
	}
	HT_OK(hl_set_add_all(&n, s, vals, lens, N));
	HT_EQ(n, N);
	HT_EQ(raw_int(r, "SCARD %s", "gset:many"), N);
	HT_OK(hl_set_contains_all(&ok, s, vals, lens, N));
	HT_EQ(ok, 1);
	do {
		const hl_value *page;
		const char *next;
		HT_OK(hl_set_scan(&v, s, cursor, strlen(cursor), 500));
		next = hl_value_bytes(hl_value_at(v, 0), &nlen);
		HT_CHECK(nlen < sizeof cursor);
		page = hl_value_at(v, 1);
		for (i = 0; i < hl_value_len(page); i++) {
			const char *m =
			        hl_value_bytes(hl_value_at(page, i), &len);
			long k = strtol(m + 1, NULL, 10);
			if (k >= 0 && k < N && !seen[k]++)
				total++;
		}
		memcpy(cursor, next, nlen);
		cursor[nlen] = 0;
		hl_value_free(v);
		pages++;
	} while (strcmp(cursor, "0") != 0 && pages < 10000);
	HT_EQ(total, N);
	HT_CHECK(pages > 1);
	HT_OK(hl_set_remove_all(&n, s, vals, lens, N));
	HT_EQ(n, N);
	HT_EQ(raw_int(r, "EXISTS %s", "gset:many"), 0);
	free(buf);
	free(vals);
	free(lens);
	free(seen);
	hl_object_free(s);
	hl_client_free(c);
}

static int set_one_left(void *arg)
{
	return raw_int(arg, "SCARD %s", "gset:doubt") == 1;
}

static int set_has_y(void *arg)
{
	redisReply *x = redisCommand(ht_raw_of(arg), "SISMEMBER gset:doubt y");
	int yes = x && x->integer == 1;
	freeReplyObject(x);
	return yes;
}

/* A pop whose reply is lost after it ran answers what it took (resent
 * with its request marker): nothing lost, nothing taken twice. An add
 * whose reply is lost is in doubt, and applied once. */
static void set_lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *s = set_of(c, "gset:doubt");
	const void *vals[2] = {"p", "q"};
	size_t lens[2] = {1, 1}, len = 0;
	int64_t n = 0;
	int ok = 0, res = 0;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	redisReply *x;
	char left[2] = {0};

	HT_OK(hl_set_add_all(&n, s, vals, lens, 2));
	HT_OK(hl_set_remove_random(&v, s)); /* warm the script cache */
	hl_value_free(v);
	HT_OK(hl_set_add_all(&n, s, vals, lens, 2));
	HT_EQ(raw_int(r, "SCARD %s", "gset:doubt"), 2);
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, s, HL_OP_SET_REMOVE_RANDOM, NULL, 0));
	HT_CHECK(ht_wait_until(set_one_left, r, 10000)); /* it ran */
	ht_sleep_ms(300);                                /* reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_EQ(hl_value_type(tv), HL_VALUE_BYTES);
	x = redisCommand(ht_raw_of(r), "SMEMBERS gset:doubt");
	HT_EQ(x->elements, 1); /* taken once */
	left[0] = x->element[0]->str[0];
	freeReplyObject(x);
	/* the answer is the member that went, not nil, not the other */
	HT_CHECK(bytes_is(tv, left[0] == 'p' ? "q" : "p", 1));
	hl_value_bytes(tv, &len);
	HT_EQ(len, 1);
	hl_task_free(t);
	/* once: an add in doubt, applied once */
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_set_add(&ok, s, "y", 1), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(set_has_y, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(800);
	HT_OK(hl_set_size(&n, s));
	HT_EQ(n, 2);
	hl_object_free(s);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- scored sorted set ----------------------------------------------------
 */

static void zset_ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *z = zset_of(c, "gset:z");
	int ok = -1, found = -1;
	int64_t n = -1;
	double d = -1;
	hl_value *v = NULL;

	/* empty: nil everywhere, not 0 */
	HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, "a", 1));
	HT_EQ(found, 0);
	HT_OK(hl_scored_sorted_set_rank(&n, &found, z, "a", 1));
	HT_EQ(found, 0);
	HT_OK(hl_scored_sorted_set_first(&v, z));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_first_score(&d, &found, z));
	HT_EQ(found, 0);
	HT_OK(hl_scored_sorted_set_poll_first(&v, z));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	HT_EQ(raw_int(r, "EXISTS %s", "gset:z"), 0);

	HT_OK(hl_scored_sorted_set_add(&ok, z, 1.5, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_scored_sorted_set_add(&ok, z, 2.5, "a", 1)); /* moved */
	HT_EQ(ok, 0);
	HT_CHECK(raw_score(r, "gset:z", "a", 1) == 2.5);
	HT_OK(hl_scored_sorted_set_try_add(&ok, z, 9, "a", 1));
	HT_EQ(ok, 0);
	HT_CHECK(raw_score(r, "gset:z", "a", 1) == 2.5);
	HT_OK(hl_scored_sorted_set_try_add(&ok, z, -0.25, "n\0ul", 4));
	HT_EQ(ok, 1);
	HT_OK(hl_scored_sorted_set_add(&ok, z, 1e300, "", 0));
	HT_EQ(ok, 1);
	HT_CHECK(raw_score(r, "gset:z", "", 0) == 1e300);
	HT_OK(hl_scored_sorted_set_add_score(&d, z, "a", 1, 0.1));
	HT_CHECK(d == 2.6);
	HT_OK(hl_scored_sorted_set_add_score(&d, z, "new", 3, -7));
	HT_CHECK(d == -7);
	/* now: new -7, n\0ul -0.25, a 2.6, "" 1e300 */
	HT_OK(hl_scored_sorted_set_size(&n, z));
	HT_EQ(n, 4);
	HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, "n\0ul", 4));
	HT_CHECK(found == 1 && d == -0.25);
	HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, "", 0));
	HT_CHECK(found == 1 && d == 1e300);
	HT_OK(hl_scored_sorted_set_rank(&n, &found, z, "new", 3));
	HT_CHECK(found == 1 && n == 0); /* rank 0: found, not nil */
	HT_OK(hl_scored_sorted_set_rank(&n, &found, z, "a", 1));
	HT_CHECK(found == 1 && n == 2);
	HT_OK(hl_scored_sorted_set_rev_rank(&n, &found, z, "a", 1));
	HT_CHECK(found == 1 && n == 1);
	HT_OK(hl_scored_sorted_set_rev_rank(&n, &found, z, "zz", 2));
	HT_CHECK(found == 0 && n == 0);
	HT_OK(hl_scored_sorted_set_first(&v, z));
	HT_CHECK(bytes_is(v, "new", 3));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_last(&v, z));
	HT_CHECK(bytes_is(v, "", 0));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_first_score(&d, &found, z));
	HT_CHECK(found == 1 && d == -7);
	HT_OK(hl_scored_sorted_set_last_score(&d, &found, z));
	HT_CHECK(found == 1 && d == 1e300);
	/* ranges by rank */
	HT_OK(hl_scored_sorted_set_value_range(&v, z, 1, 2));
	HT_EQ(hl_value_len(v), 2);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "n\0ul", 4));
	HT_CHECK(bytes_is(hl_value_at(v, 1), "a", 1));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_entry_range(&v, z, -2, -1));
	HT_EQ(hl_value_len(v), 4);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "a", 1));
	HT_CHECK(hl_value_double(hl_value_at(v, 1)) == 2.6);
	HT_CHECK(hl_value_double(hl_value_at(v, 3)) == 1e300);
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_value_range(&v, z, 10, 20));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	/* ranges by score: open ends, exclusive ends, limit */
	HT_OK(hl_scored_sorted_set_value_range_by_score(&v, z, -INFINITY,
	                                                INFINITY, 1, 1, 0, -1));
	HT_EQ(hl_value_len(v), 4);
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_value_range_by_score(&v, z, -7, 2.6, 0, 0, 0,
	                                                -1));
	HT_EQ(hl_value_len(v), 1);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "n\0ul", 4));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_value_range_by_score(&v, z, -7, 2.6, 1, 1, 1,
	                                                1));
	HT_EQ(hl_value_len(v), 1);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "n\0ul", 4));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_entry_range_by_score(&v, z, 0, INFINITY, 0,
	                                                1, 0, -1));
	HT_EQ(hl_value_len(v), 4);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "a", 1));
	HT_CHECK(hl_value_double(hl_value_at(v, 3)) == 1e300);
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_count(&n, z, -INFINITY, 0, 1, 1));
	HT_EQ(n, 2);
	HT_OK(hl_scored_sorted_set_count(&n, z, -INFINITY, 1e300, 1, 0));
	HT_EQ(n, 3);
	/* polls from both ends */
	HT_OK(hl_scored_sorted_set_poll_first(&v, z));
	HT_CHECK(bytes_is(v, "new", 3));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_poll_last(&v, z));
	HT_CHECK(bytes_is(v, "", 0));
	hl_value_free(v);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:z"), 2);
	HT_OK(hl_scored_sorted_set_remove(&ok, z, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_scored_sorted_set_remove(&ok, z, "a", 1));
	HT_EQ(ok, 0);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:z"), 1);
	hl_object_free(z);
	hl_client_free(c);
}

/* Scores: as Redisson writes them (plain, never an exponent), read in any
 * form; NaN and the infinities refused before anything is sent. */
static void zset_scores(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *z = zset_of(c, "gset:scores");
	const void *ms[4] = {"tiny", "neg", "big", "frac"};
	size_t ml[4] = {4, 3, 3, 4};
	double sc[4] = {5e-324, -123456.789, 1.7976931348623157e308, 0.1};
	int64_t n = 0;
	int ok = 0, found = 0, i;
	double d = 0;
	hl_value *v = NULL;
	redisReply *x;

	HT_OK(hl_scored_sorted_set_add_all(&n, z, sc, ms, ml, 4));
	HT_EQ(n, 4);
	for (i = 0; i < 4; i++) {
		HT_CHECK(raw_score(r, "gset:scores", ms[i], ml[i]) == sc[i]);
		HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, ms[i],
		                                     ml[i]));
		HT_CHECK(found && d == sc[i]);
	}
	HT_OK(hl_scored_sorted_set_add_all(&n, z, NULL, NULL, NULL, 0));
	HT_EQ(n, 0);
	/* a score Redis wrote in its own form is read back */
	x = ht_raw(ht_raw_of(r), "ZINCRBY gset:scores 1e20 frac");
	freeReplyObject(x);
	HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, "frac", 4));
	HT_CHECK(found && d == 1e20 + 0.1);
	/* refused with a clear error, nothing sent */
	HT_RC(hl_scored_sorted_set_add(&ok, z, NAN, "x", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "score is not a finite number"));
	HT_RC(hl_scored_sorted_set_add(&ok, z, INFINITY, "x", 1), HL_EINVAL);
	HT_RC(hl_scored_sorted_set_try_add(&ok, z, -INFINITY, "x", 1),
	      HL_EINVAL);
	HT_RC(hl_scored_sorted_set_add_score(&d, z, "x", 1, NAN), HL_EINVAL);
	sc[1] = NAN;
	HT_RC(hl_scored_sorted_set_add_all(&n, z, sc, ms, ml, 4), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "entries"));
	HT_RC(hl_scored_sorted_set_count(&n, z, NAN, 1, 1, 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "NaN"));
	HT_RC(hl_scored_sorted_set_value_range_by_score(&v, z, 0, NAN, 1, 1, 0,
	                                                -1),
	      HL_EINVAL);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:scores"), 4);
	HT_OK(hl_scored_sorted_set_get_score(&d, &found, z, "x", 1));
	HT_EQ(found, 0);
	hl_object_free(z);
	hl_client_free(c);
}

/* Many members: a batch of 5000 pairs in one call; ZSCAN pages cover all
 * once; polls of many from both ends, in order. */
static void zset_many(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *z = zset_of(c, "gset:zmany");
	enum { N = 5000 };
	char(*buf)[12] = malloc(N * 12);
	const void **ms = malloc(N * sizeof(*ms));
	size_t *ml = malloc(N * sizeof(*ml)), i, len, nlen;
	double *sc = malloc(N * sizeof(*sc));
	unsigned char *seen = calloc(N, 1);
	char cursor[64] = "0";
	int pages = 0, total = 0, scores_ok = 1;
	int64_t n = 0;
	hl_value *v = NULL;

	for (i = 0; i < N; i++) {
		ml[i] = (size_t)snprintf(buf[i], 12, "m%zu", i);
		ms[i] = buf[i];
		sc[i] = (double)i / 4 - 100;
	}
	HT_OK(hl_scored_sorted_set_add_all(&n, z, sc, ms, ml, N));
	HT_EQ(n, N);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:zmany"), N);
	do {
		const hl_value *page;
		const char *next;
		HT_OK(hl_scored_sorted_set_scan(&v, z, cursor, strlen(cursor),
		                                500));
		next = hl_value_bytes(hl_value_at(v, 0), &nlen);
		HT_CHECK(nlen < sizeof cursor);
		page = hl_value_at(v, 1);
		HT_EQ(hl_value_len(page) % 2, 0);
		for (i = 0; i + 1 < hl_value_len(page); i += 2) {
			const char *m =
			        hl_value_bytes(hl_value_at(page, i), &len);
			long k = strtol(m + 1, NULL, 10);
			if (k >= 0 && k < N && !seen[k]++) {
				total++;
				if (hl_value_double(hl_value_at(page, i + 1)) !=
				    sc[k])
					scores_ok = 0;
			}
		}
		memcpy(cursor, next, nlen);
		cursor[nlen] = 0;
		hl_value_free(v);
		pages++;
	} while (strcmp(cursor, "0") != 0 && pages < 10000);
	HT_EQ(total, N);
	HT_CHECK(scores_ok);
	HT_CHECK(pages > 1);
	HT_OK(hl_scored_sorted_set_poll_first_many(&v, z, 3));
	HT_EQ(hl_value_len(v), 3);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "m0", 2));
	HT_CHECK(bytes_is(hl_value_at(v, 2), "m2", 2));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_poll_last_many(&v, z, 2));
	HT_EQ(hl_value_len(v), 2);
	HT_CHECK(bytes_is(hl_value_at(v, 0), "m4999", 5));
	HT_CHECK(bytes_is(hl_value_at(v, 1), "m4998", 5));
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_poll_first_many(&v, z, 0));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:zmany"), N - 5);
	HT_OK(hl_scored_sorted_set_poll_last_many(&v, z, 100000));
	HT_EQ(hl_value_len(v), N - 5);
	hl_value_free(v);
	HT_EQ(raw_int(r, "EXISTS %s", "gset:zmany"), 0);
	free(buf);
	free(ms);
	free(ml);
	free(sc);
	free(seen);
	hl_object_free(z);
	hl_client_free(c);
}

static int zset_lost_first(void *arg)
{
	return raw_int(arg, "ZCARD %s", "gset:zdoubt") == 2;
}

static int zset_has_w(void *arg)
{
	redisReply *x = redisCommand(ht_raw_of(arg), "ZSCORE gset:zdoubt w");
	int yes = x && x->type == REDIS_REPLY_STRING;
	freeReplyObject(x);
	return yes;
}

/* poll_first whose reply is lost after it ran answers the member it took
 * (the lowest), not the next one: nothing lost. add_score (once) in doubt
 * is applied once. */
static void zset_lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *z = zset_of(c, "gset:zdoubt");
	int ok = 0, res = 0;
	double d = 0;
	hl_task *t = NULL;
	const hl_value *tv = NULL;
	hl_value *v = NULL;

	HT_OK(hl_scored_sorted_set_poll_first(&v, z)); /* cache the script */
	hl_value_free(v);
	HT_OK(hl_scored_sorted_set_add(&ok, z, 1, "one", 3));
	HT_OK(hl_scored_sorted_set_add(&ok, z, 2, "two", 3));
	HT_OK(hl_scored_sorted_set_add(&ok, z, 3, "three", 5));
	ht_proxy_cmd(p, "delay 400");
	HT_OK(hl_object_call_start(&t, z, HL_OP_SCORED_SORTED_SET_POLL_FIRST,
	                           NULL, 0));
	HT_CHECK(ht_wait_until(zset_lost_first, r, 10000)); /* it ran */
	ht_sleep_ms(300);                                   /* reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_CHECK(bytes_is(tv, "one", 3));
	hl_task_free(t);
	HT_EQ(raw_int(r, "ZCARD %s", "gset:zdoubt"), 2); /* taken once */
	HT_CHECK(raw_score(r, "gset:zdoubt", "two", 3) == 2);
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_scored_sorted_set_add_score(&d, z, "w", 1, 5), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(zset_has_w, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(800);
	HT_CHECK(raw_score(r, "gset:zdoubt", "w", 1) == 5); /* not 10 */
	hl_object_free(z);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- both -----------------------------------------------------------------
 */

/* A key of another type: a clear error naming the kind, nothing
 * changed; bad arguments refused. */
static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *s = set_of(c, "gset:str");
	hl_object *z = zset_of(c, "gset:str");
	hl_object *s2 = set_of(c, "gset:bad");
	int ok = 0, found = 0;
	int64_t n = 0;
	double d = 0;
	hl_value *v = NULL;
	hl_arg a;
	redisReply *x = ht_raw(ht_raw_of(r), "SET gset:str plain");
	freeReplyObject(x);

	HT_RC(hl_set_add(&ok, s, "x", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type of value than a set"));
	HT_RC(hl_set_remove_random(&v, s), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type"));
	HT_RC(hl_set_add_all(&n, s, (const void *[]){"a"}, (size_t[]){1}, 1),
	      HL_EREDIS);
	HT_RC(hl_scored_sorted_set_add(&ok, z, 1, "x", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(),
	                "another type of value than a scored_sorted_set"));
	HT_RC(hl_scored_sorted_set_poll_first(&v, z), HL_EREDIS);
	HT_RC(hl_scored_sorted_set_rank(&n, &found, z, "x", 1), HL_EREDIS);
	HT_RC(hl_scored_sorted_set_get_score(&d, &found, z, "x", 1), HL_EREDIS);
	x = ht_raw(ht_raw_of(r), "GET gset:str");
	HT_STREQ(x->str, "plain");
	freeReplyObject(x);
	/* bad arguments */
	HT_RC(hl_set_add(&ok, s2, NULL, 3), HL_EINVAL);
	HT_RC(hl_set_add_all(&n, s2, NULL, NULL, 3), HL_EINVAL);
	HT_RC(hl_set_remove_random_many(&v, s2, -1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "positive"));
	HT_RC(hl_object_call(&v, s2, HL_OP_SCORED_SORTED_SET_SIZE, NULL, 0),
	      HL_EINVAL);
	/* a scored list of an odd length (the generic call) */
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_DOUBLE;
	a.d = 1;
	HT_RC(hl_object_call(&v, z, HL_OP_SCORED_SORTED_SET_ADD_ALL, &a, 1),
	      HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "a score and a member"));
	a.type = HL_ARG_BYTES;
	a.bytes = "m";
	a.len = 1;
	{
		hl_arg two[2] = {a, a}; /* a member where a score goes */
		HT_RC(hl_object_call(&v, z, HL_OP_SCORED_SORTED_SET_ADD_ALL,
		                     two, 2),
		      HL_EINVAL);
		HT_CHECK(strstr(hl_error_last(), "must be a number"));
	}
	HT_EQ(raw_int(r, "EXISTS %s", "gset:bad"), 0);
	hl_object_free(s);
	hl_object_free(z);
	hl_object_free(s2);
	hl_client_free(c);
}

/* A name with a hash tag: its keys (and the pops' request markers) in one
 * slot, on whichever master holds it. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	char name[40];
	int i, ok = 0, found = 0;
	for (i = 0; i < 6; i++) {
		hl_object *s, *z;
		hl_value *v = NULL;
		int64_t n = 0;
		snprintf(name, sizeof name, "{user%d}:cart", i);
		s = set_of(c, name);
		HT_OK(hl_set_add_all(&n, s, (const void *[]){"a", "b"},
		                     (size_t[]){1, 1}, 2));
		HT_EQ(n, 2);
		HT_OK(hl_set_remove_random(&v, s));
		HT_EQ(hl_value_type(v), HL_VALUE_BYTES);
		hl_value_free(v);
		HT_OK(hl_set_size(&n, s));
		HT_EQ(n, 1);
		hl_object_free(s);
		snprintf(name, sizeof name, "{user%d}:scores", i);
		z = zset_of(c, name);
		HT_OK(hl_scored_sorted_set_add(&ok, z, i, "m", 1));
		HT_OK(hl_scored_sorted_set_rank(&n, &found, z, "m", 1));
		HT_CHECK(found && n == 0);
		HT_OK(hl_scored_sorted_set_poll_last(&v, z));
		HT_CHECK(bytes_is(v, "m", 1));
		hl_value_free(v);
		hl_object_free(z);
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* After a Sentinel failover both kinds carry on on the new master (their
 * scripts loaded there by their first use). */
static void sentinel_failover(void)
{
	ht_sentinel *sn = ht_sentinel_start(NULL);
	hl_client_options o;
	hl_client *c;
	char url[600];
	hl_object *s, *z;
	hl_value *v = NULL;
	int old, ok = 0, i, done = 0;
	int64_t n = 0;
	ht_failover_options(&o, 6000);
	ht_sentinel_url(sn, url, sizeof url);
	c = ht_client_url(url, &o);
	s = set_of(c, "gset:fo:s");
	z = zset_of(c, "gset:fo:z");
	HT_OK(hl_set_add(&ok, s, "before", 6));
	HT_OK(hl_scored_sorted_set_add(&ok, z, 1, "before", 6));
	old = ht_sentinel_kill_master(sn);
	ht_sentinel_wait_failover(sn, old, 20000);
	/* the first calls may meet the old master's last moments */
	for (i = 0; i < 100 && !done; i++) {
		if (hl_set_add(&ok, s, "after", 5) == HL_OK)
			done = 1;
		else
			ht_sleep_ms(100);
	}
	HT_CHECK(done);
	HT_OK(hl_set_remove_random_many(&v, s, 10));
	HT_CHECK(hl_value_len(v) >= 1); /* "after", maybe "before" */
	hl_value_free(v);
	HT_OK(hl_set_size(&n, s));
	HT_EQ(n, 0);
	HT_OK(hl_scored_sorted_set_add(&ok, z, 0.5, "after", 5));
	HT_OK(hl_scored_sorted_set_poll_first(&v, z));
	HT_CHECK(bytes_is(v, "after", 5));
	hl_value_free(v);
	hl_object_free(s);
	hl_object_free(z);
	hl_client_free(c);
	ht_sentinel_destroy(sn);
}

HT_MAIN(HT_CASE(set_ops), HT_CASE(set_many), HT_CASE(set_lost_reply),
        HT_CASE(zset_ops), HT_CASE(zset_scores), HT_CASE(zset_many),
        HT_CASE(zset_lost_reply), HT_CASE(bad_input), HT_CASE(cluster),
        HT_CASE(sentinel_failover))
