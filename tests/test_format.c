/*
 * hilock's own decimal writer (base/util.c hl__fmt_u64, hl__fmt_i64), an
 * internal function: no Redis. It replaced snprintf on every call, so it
 * must make the very same bytes: each case compares with snprintf itself.
 */
#include "harness.h"

#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static void check_u64(uint64_t v)
{
	char got[HL_DEC_MAX + 1], want[32];
	size_t n;
	memset(got, 0x5a, sizeof(got));
	n = hl__fmt_u64(got, v);
	snprintf(want, sizeof(want), "%" PRIu64, v);
	HT_CHECKF(n == strlen(want) && strcmp(got, want) == 0,
	          "%s: got \"%s\" (%zu)", want, got, n);
	HT_CHECKF(got[HL_DEC_MAX] == 0x5a, "%s: wrote past HL_DEC_MAX", want);
}

static void check_i64(int64_t v)
{
	char got[HL_DEC_MAX + 1], want[32];
	size_t n;
	memset(got, 0x5a, sizeof(got));
	n = hl__fmt_i64(got, v);
	snprintf(want, sizeof(want), "%" PRId64, v);
	HT_CHECKF(n == strlen(want) && strcmp(got, want) == 0,
	          "%s: got \"%s\" (%zu)", want, got, n);
	HT_CHECKF(got[HL_DEC_MAX] == 0x5a, "%s: wrote past HL_DEC_MAX", want);
}

static void decimal(void)
{
	uint64_t p = 1;
	int i;
	check_u64(0);
	check_u64(UINT64_MAX);
	check_i64(0);
	check_i64(-1);
	check_i64(INT64_MAX);
	check_i64(INT64_MIN);
	/* every power of ten and its neighbours */
	for (i = 0; i < 20; i++) {
		check_u64(p - 1);
		check_u64(p);
		check_u64(p + 1);
		if (p <= (uint64_t)INT64_MAX) {
			check_i64((int64_t)p);
			check_i64(-(int64_t)p);
			check_i64(1 - (int64_t)p);
		}
		p *= 10;
	}
	/* a spread of values */
	for (p = 1; p < UINT64_MAX / 3; p = p * 3 + 7) {
		check_u64(p);
		check_i64((int64_t)(p >> 1));
		check_i64(-(int64_t)(p >> 1));
	}
}

HT_MAIN(HT_CASE(decimal))
