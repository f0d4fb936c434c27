/*
 * Building a script call's arguments (keys first, then ARGV) on the stack,
 * for the primitives. Private to prim/.
 */
#ifndef HL_PRIM_ARGS_H
#define HL_PRIM_ARGS_H

#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Decimal of v into buf (24 bytes). */
static inline const char *num(char *buf, int64_t v)
{
	hl__fmt_i64(buf, v);
	return buf;
}

/* Wall-clock ms: the fair lock's queue deadlines and the permit leases
 * are the clients' clocks (PROTOCOL 0.6). */
static inline int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define HL_ARGS_MAX 12

/* A script call's arguments, keys first. */
typedef struct script_args {
	int nkeys, n;
	const char *v[HL_ARGS_MAX];
	size_t len[HL_ARGS_MAX];
	char nums[4][24];
	char field[HL_FIELD_MAX];
	char *owned; /* an argument built for this call, freed after it */
} script_args;

static inline void arg(script_args *a, const char *v, size_t len)
{
	a->v[a->n] = v;
	a->len[a->n++] = len;
}

static inline void arg_str(script_args *a, const char *v)
{
	arg(a, v, strlen(v));
}

#endif
