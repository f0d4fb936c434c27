/*
 * The list (Redisson's RList, core/grid/list.kind): every operation and
 * the list it leaves in Redis, indexes (negative, out of range), NUL and
 * empty values, a batch of 100,000 in one call, pages of LRANGE past 1000
 * elements, a lost reply of a marked remove (the element answered, none
 * lost) and of a once insert (in doubt, applied once), a cluster hash tag,
 * a key of another type, and bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <stdlib.h>
#include <string.h>

static hl_object *list(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_list_new(&o, c, name, strlen(name)));
	return o;
}

static void ops(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *l = list(c, "grid:list");
	const void *vals[3] = {"b", "", "c\0d"};
	size_t lens[3] = {1, 0, 3};
	char buf[512];
	int ok = 0;
	int64_t n = -9;
	hl_value *v = NULL;

	HT_OK(hl_list_size(&n, l));
	HT_EQ(n, 0);
	HT_OK(hl_list_add(&ok, l, "a", 1));
	HT_EQ(ok, 1);
	HT_OK(hl_list_add_all(&ok, l, vals, lens, 3));
	HT_EQ(ok, 1);
	HT_OK(hl_list_add_all(&ok, l, NULL, NULL, 0)); /* nothing: false */
	HT_EQ(ok, 0);
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 4);
	HT_STREQ(buf, "a|b||c0d");
	TAKE_STR(hl_list_get(&tv_, l, 0), "a");
	TAKE_STR(hl_list_get(&tv_, l, 3), "c0d");
	TAKE_STR(hl_list_get(&tv_, l, -1), "c0d");
	TAKE_STR(hl_list_get(&tv_, l, 2), "");
	TAKE_STR(hl_list_get(&tv_, l, 4), "(nil)");
	TAKE_STR(hl_list_get(&tv_, l, -5), "(nil)");
	/* set answers the old value; fast_set none */
	TAKE_STR(hl_list_set(&tv_, l, 1, "B", 1), "b");
	HT_OK(hl_list_fast_set(l, -2, "E", 1));
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 4);
	HT_STREQ(buf, "a|B|E|c0d");
	/* insert: at 0, in the middle, at the end, from the end */
	HT_OK(hl_list_insert(&n, l, 0, "0", 1));
	HT_EQ(n, 5);
	HT_OK(hl_list_insert(&n, l, 2, "x", 1));
	HT_EQ(n, 6);
	HT_OK(hl_list_insert(&n, l, 6, "z", 1));
	HT_EQ(n, 7);
	HT_OK(hl_list_insert(&n, l, -1, "y", 1));
	HT_EQ(n, 8);
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 8);
	HT_STREQ(buf, "0|a|x|B|E|c0d|y|z");
	/* LINSERT */
	HT_OK(hl_list_add_before(&n, l, "B", 1, "<", 1));
	HT_EQ(n, 9);
	HT_OK(hl_list_add_after(&n, l, "B", 1, ">", 1));
	HT_EQ(n, 10);
	HT_OK(hl_list_add_after(&n, l, "nope", 4, ">", 1));
	HT_EQ(n, -1);
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 10);
	HT_STREQ(buf, "0|a|x|<|B|>|E|c0d|y|z");
	/* index_of, last_index_of */
	HT_OK(hl_list_add(&ok, l, "x", 1));
	HT_OK(hl_list_index_of(&n, l, "x", 1));
	HT_EQ(n, 2);
	HT_OK(hl_list_last_index_of(&n, l, "x", 1));
	HT_EQ(n, 10);
	HT_OK(hl_list_index_of(&n, l, "c\0d", 3));
	HT_EQ(n, 7);
	HT_OK(hl_list_index_of(&n, l, "c", 1));
	HT_EQ(n, -1);
	HT_OK(hl_list_last_index_of(&n, l, "q", 1));
	HT_EQ(n, -1);
	/* remove by value (count), by index (the value answered) */
	HT_OK(hl_list_remove(&ok, l, "x", 1, 0));
	HT_EQ(ok, 1);
	HT_OK(hl_list_remove(&ok, l, "x", 1, 1));
	HT_EQ(ok, 0);
	TAKE_STR(hl_list_remove_at(&tv_, l, 3), "B");
	TAKE_STR(hl_list_remove_at(&tv_, l, -1), "z");
	TAKE_STR(hl_list_remove_at(&tv_, l, 0), "0");
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 6);
	HT_STREQ(buf, "a|<|>|E|c0d|y");
	/* range and trim */
	HT_OK(hl_list_read_range(&v, l, 1, 2));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 1), buf, sizeof buf), ">");
	hl_value_free(v);
	HT_OK(hl_list_read_range(&v, l, -2, 100));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "c0d");
	hl_value_free(v);
	HT_OK(hl_list_read_range(&v, l, 50, 100));
	HT_EQ(hl_value_len(v), 0);
	hl_value_free(v);
	HT_OK(hl_list_trim(l, 1, -2));
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 4);
	HT_STREQ(buf, "<|>|E|c0d");
	/* an element equal to Redisson's marker nearer the head goes instead
	 * (Redisson's remove(int) behaves the same) */
	HT_OK(hl_list_add_before(&n, l, "<", 1, "DELETED_BY_REDISSON", 19));
	TAKE_STR(hl_list_remove_at(&tv_, l, 3), "E");
	HT_EQ(raw_list(r, "grid:list", buf, sizeof buf), 4);
	HT_STREQ(buf, "<|>|DELETED_BY_REDISSON|c0d");
	hl_object_free(l);
	hl_client_free(c);
}

/* 100,000 values in one call; pages of 1000 cover them in order; the
 * index scripts page through them too. */
static void many(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *l = list(c, "grid:list:many");
	enum { N = 100000 };
	const void **vals = malloc(sizeof(*vals) * N);
	size_t *lens = malloc(sizeof(*lens) * N);
	char *store = malloc((size_t)N * 8);
	int ok = 0, i, pages = 0;
	int64_t n = 0, at = 0;
	for (i = 0; i < N; i++) {
		int k = snprintf(store + i * 8, 8, "%d", i);
		vals[i] = store + i * 8;
		lens[i] = (size_t)k;
	}
	HT_OK(hl_list_add_all(&ok, l, vals, lens, N));
	HT_EQ(ok, 1);
	HT_OK(hl_list_size(&n, l));
	HT_EQ(n, N);
	while (at < N + 1) {
		hl_value *v = NULL;
		size_t k;
		HT_OK(hl_list_read_range(&v, l, at, at + 999));
		for (k = 0; k < hl_value_len(v); k++) {
			size_t len = 0;
			const char *p = hl_value_bytes(hl_value_at(v, k), &len);
			HT_CHECK(len == lens[at + (int64_t)k] &&
			         memcmp(p, vals[at + (int64_t)k], len) == 0);
		}
		pages++;
		at += (int64_t)hl_value_len(v);
		k = hl_value_len(v);
		hl_value_free(v);
		if (k < 1000)
			break;
	}
	HT_EQ(at, N);
	HT_EQ(pages, N / 1000 + 1);
	HT_OK(hl_list_index_of(&n, l, "99998", 5));
	HT_EQ(n, 99998);
	HT_OK(hl_list_last_index_of(&n, l, "1", 1));
	HT_EQ(n, 1);
	HT_OK(hl_list_insert(&n, l, 1, "ins", 3)); /* the tail moved back */
	HT_EQ(n, N + 1);
	HT_OK(hl_list_index_of(&n, l, "99999", 5));
	HT_EQ(n, N);
	free(vals);
	free(lens);
	free(store);
	hl_object_free(l);
	hl_client_free(c);
}

static int three_left(void *arg)
{
	return llen_is(arg, "grid:list:lost", 3);
}

static int four_now(void *arg)
{
	return llen_is(arg, "grid:list:lost", 4);
}

/* A marked remove_at whose reply is lost answers, when sent again, the
 * element it removed (not the next one: one element gone, answered); a
 * once insert whose reply is lost is in doubt and applied once. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = ht_doubt_client(p->url, 20);
	hl_object *l = list(c, "grid:list:lost");
	const void *vals[4] = {"a", "b", "c", "d"};
	size_t lens[4] = {1, 1, 1, 1};
	const hl_value *tv = NULL;
	hl_value *v = NULL;
	hl_task *t = NULL;
	hl_arg arg;
	char buf[64];
	int ok = 0, res = 0;
	int64_t n = 0;

	HT_OK(hl_list_add_all(&ok, l, vals, lens, 4));
	/* the scripts cached (else the late first copy meets NOSCRIPT) */
	HT_RC(hl_list_remove_at(&v, l, 10), HL_EINVAL);
	HT_RC(hl_list_insert(&n, l, 10, "q", 1), HL_EINVAL);
	ht_proxy_cmd(p, "delay 400");
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_INT;
	arg.i = 1;
	HT_OK(hl_object_call_start(&t, l, HL_OP_LIST_REMOVE_AT, &arg, 1));
	HT_CHECK(ht_wait_until(three_left, r, 10000)); /* it ran */
	ht_sleep_ms(300);                              /* reply lost */
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	HT_OK(hl_task_value(&tv, t));
	HT_STREQ(str(tv, buf, sizeof buf), "b");
	hl_task_free(t);
	HT_EQ(raw_list(r, "grid:list:lost", buf, sizeof buf), 3);
	HT_STREQ(buf, "a|c|d");
	/* once: in doubt, applied once */
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_list_insert(&n, l, 1, "i", 1), HL_EINDOUBT);
	HT_CHECK(ht_wait_until(four_now, r, 10000)); /* it ran */
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(1000); /* a second copy would have landed */
	HT_EQ(raw_list(r, "grid:list:lost", buf, sizeof buf), 4);
	HT_STREQ(buf, "a|i|c|d");
	hl_object_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* A hash tag: the list and its request markers in one slot. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	hl_object *l = list(c, "{user1}:cart");
	const void *vals[2] = {"x", "y"};
	size_t lens[2] = {1, 1};
	hl_value *v = NULL;
	char buf[64];
	int ok = 0;
	int64_t n = 0;
	HT_OK(hl_list_add_all(&ok, l, vals, lens, 2));
	HT_OK(hl_list_insert(&n, l, 1, "m", 1));
	HT_EQ(n, 3);
	TAKE_STR(hl_list_remove_at(&tv_, l, 0), "x");
	TAKE_STR(hl_list_set(&tv_, l, 0, "M", 1), "m");
	HT_OK(hl_list_index_of(&n, l, "y", 1));
	HT_EQ(n, 1);
	HT_OK(hl_list_read_range(&v, l, 0, -1));
	HT_EQ(hl_value_len(v), 2);
	HT_STREQ(str(hl_value_at(v, 0), buf, sizeof buf), "M");
	hl_value_free(v);
	hl_object_free(l);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *l = list(c, "grid:list:bad");
	hl_value *v = NULL;
	const void *nul[1] = {NULL};
	size_t one[1] = {1};
	char buf[64];
	int ok = 0;
	int64_t n = 0;

	/* out of range: EINVAL naming the index; nothing changed */
	HT_OK(hl_list_add(&ok, l, "a", 1));
	HT_RC(hl_list_set(&v, l, 1, "x", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "index 1 is out of range") != NULL);
	HT_RC(hl_list_fast_set(l, -2, "x", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "index -2 is out of range") != NULL);
	HT_RC(hl_list_insert(&n, l, 2, "x", 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "index 2 is out of range") != NULL);
	HT_RC(hl_list_insert(&n, l, -2, "x", 1), HL_EINVAL);
	HT_RC(hl_list_remove_at(&v, l, 1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "index 1 is out of range") != NULL);
	HT_RC(hl_list_remove_at(&v, l, INT64_MIN), HL_EINVAL);
	HT_OK(hl_list_get(&v, l, INT64_MAX));
	HT_EQ(hl_value_type(v), HL_VALUE_NIL);
	hl_value_free(v);
	v = NULL;
	HT_EQ(raw_list(r, "grid:list:bad", buf, sizeof buf), 1);
	HT_STREQ(buf, "a");
	/* bad arguments */
	HT_RC(hl_list_add(&ok, l, NULL, 1), HL_EINVAL);
	HT_RC(hl_list_add_all(&ok, l, nul, one, 1), HL_EINVAL);
	HT_RC(hl_list_get(NULL, l, 0), HL_EINVAL);
	/* a missing list: reads answer empty, index writes out of range */
	ht_del(r, HT_S("grid:list:bad"));
	HT_RC(hl_list_set(&v, l, 0, "x", 1), HL_EINVAL);
	HT_RC(hl_list_fast_set(l, 0, "x", 1), HL_EREDIS); /* no such key */
	HT_OK(hl_list_add_before(&n, l, "p", 1, "x", 1));
	HT_EQ(n, 0);
	HT_OK(hl_list_insert(&n, l, 0, "x", 1));
	HT_EQ(n, 1);
	ht_del(r, HT_S("grid:list:bad"));
	/* another type at the key: every kind of operation says so */
	freeReplyObject(ht_raw(ht_raw_of(r), "SET grid:list:bad s"));
	HT_RC(hl_list_add(&ok, l, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_list_get(&v, l, 0), HL_EREDIS);
	HT_RC(hl_list_set(&v, l, 0, "x", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "WRONGTYPE") != NULL);
	HT_RC(hl_list_remove_at(&v, l, 0), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "WRONGTYPE") != NULL);
	HT_RC(hl_list_index_of(&n, l, "a", 1), HL_EREDIS);
	HT_RC(hl_list_insert(&n, l, 0, "a", 1), HL_EREDIS);
	HT_RC(hl_list_size(&n, l), HL_EREDIS);
	HT_RC(hl_list_read_range(&v, l, 0, 1), HL_EREDIS);
	HT_CHECK(v == NULL);
	hl_object_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(ops), HT_CASE(many), HT_CASE(lost_reply), HT_CASE(cluster),
        HT_CASE(bad_input))
