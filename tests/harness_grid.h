/*
 * Helpers of the grid's tests: a client whose replies the fault proxy can
 * lose, a Redis list as one string or its length, a blocking queue, the
 * blocked clients and the keys matching a pattern, a value as a C string,
 * and a call whose value is checked as one.
 */
#ifndef HARNESS_GRID_H
#define HARNESS_GRID_H

#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* A client on url (a fault proxy's) whose command timeout (250 ms) a
 * proxy "delay 400" outlasts: the command lands, its reply is lost; it
 * retries retry_attempts times, 50 ms apart. */
static inline hl_client *ht_doubt_client(const char *url, int retry_attempts)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.connect_timeout_ms = 1000;
	o.retry_attempts = retry_attempts;
	o.retry_delay_ms = 50;
	return ht_client_url(url, &o);
}

/* 1 if the list at key has want elements. */
static inline int llen_is(ht_redis *r, const char *key, long long want)
{
	redisReply *x = ht_raw(ht_raw_of(r), "LLEN %s", key);
	int is = x->type == REDIS_REPLY_INTEGER && x->integer == want;
	freeReplyObject(x);
	return is;
}

/* The list at key joined by '|' (NUL as '0'); its length. */
static inline long long raw_list(ht_redis *r, const char *key, char *buf,
                                 size_t cap)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "LRANGE %s 0 -1", key);
	size_t i, j, used = 0;
	long long n = (long long)rep->elements;
	buf[0] = '\0';
	for (i = 0; i < rep->elements; i++) {
		const redisReply *e = rep->element[i];
		if (i && used + 1 < cap)
			buf[used++] = '|';
		for (j = 0; j < e->len && used + 1 < cap; j++)
			buf[used++] = e->str[j] ? e->str[j] : '0';
	}
	buf[used] = '\0';
	freeReplyObject(rep);
	return n;
}

/* A blocking queue (or fails the test). */
static inline hl_object *bq(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_blocking_queue_new(&o, c, name, strlen(name)));
	return o;
}

/* Redis's blocked clients (INFO clients); -1 if not there. */
static inline long blocked_clients(ht_redis *r)
{
	redisReply *x = ht_raw(ht_raw_of(r), "INFO clients");
	const char *p = x->type == REDIS_REPLY_STRING
	                        ? strstr(x->str, "blocked_clients:")
	                        : NULL;
	long n = p ? atol(p + 16) : -1;
	freeReplyObject(x);
	return n;
}

/* The number of keys matching pattern (KEYS; -1 on an error). */
static inline long long keys_like(ht_redis *r, const char *pattern)
{
	redisReply *x = ht_raw(ht_raw_of(r), "KEYS %s", pattern);
	long long n =
	        x->type == REDIS_REPLY_ARRAY ? (long long)x->elements : -1;
	freeReplyObject(x);
	return n;
}

/* ZCARD of key (-1: an error). */
static inline long long raw_zcard(ht_redis *r, const char *key)
{
	redisReply *x = ht_raw(ht_raw_of(r), "ZCARD %s", key);
	long long n = x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
	freeReplyObject(x);
	return n;
}

/* The bytes of v as a C string (NUL as '0'); "(nil)" for nil. */
static inline const char *str(const hl_value *v, char *buf, size_t cap)
{
	size_t len = 0, i;
	const char *p;
	if (hl_value_type(v) != HL_VALUE_BYTES)
		return "(nil)";
	p = hl_value_bytes(v, &len);
	for (i = 0; i < len && i + 1 < cap; i++)
		buf[i] = p[i] ? p[i] : '0';
	buf[i] = '\0';
	return buf;
}

/* expr, a call that sets tv_ (an hl_value *), succeeds and its value reads
 * as want. */
#define TAKE_STR(expr, want)                                                   \
	do {                                                                   \
		hl_value *tv_ = NULL;                                          \
		char tb_[256];                                                 \
		HT_OK(expr);                                                   \
		HT_STREQ(str(tv_, tb_, sizeof tb_), want);                     \
		hl_value_free(tv_);                                            \
	} while (0)

#endif
