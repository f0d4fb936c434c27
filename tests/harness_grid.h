/*
 * Helpers of the grid's list-kind tests (test_grid_list.c,
 * test_grid_queue.c): a Redis list as one string, a value as a C string,
 * and a call whose value is checked as one.
 */
#ifndef HARNESS_GRID_H
#define HARNESS_GRID_H

#include "harness.h"

#include <string.h>

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
