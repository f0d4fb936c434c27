/*
 * hilock's own command formatting (transport/resp.c) and decimal writer
 * (base/util.c hl__fmt_u64, hl__fmt_i64), the library's internal functions:
 * no Redis. They replaced redisFormatCommandArgv and snprintf on every
 * call, so they must make the very same bytes: each case compares with
 * hiredis's formatter (or snprintf) itself.
 */
#include "harness.h"

#include "base/base.h"
#include "transport/transport.h"

#include <hiredis/hiredis.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* hl__resp_write of argv is byte for byte hiredis's, within the bound. */
static void same_as_hiredis(const char *what, int argc, const char **argv,
                            const size_t *lens)
{
	char *want = NULL, *got;
	int wlen = redisFormatCommandArgv(&want, argc, argv, lens);
	size_t bound = hl__resp_bound(argc, lens), n;
	HT_CHECKF(wlen > 0 && want, "%s: hiredis failed", what);
	HT_CHECKF(bound >= (size_t)wlen, "%s: bound %zu < %d", what, bound,
	          wlen);
	/* one guard byte past the bound: it must stay untouched */
	got = malloc(bound + 1);
	HT_CHECK(got != NULL);
	got[bound] = 0x5a;
	n = hl__resp_write(got, argc, argv, lens);
	HT_CHECKF(n == (size_t)wlen, "%s: %zu bytes, hiredis %d", what, n,
	          wlen);
	HT_CHECKF(memcmp(got, want, n) == 0, "%s: bytes differ from hiredis",
	          what);
	HT_CHECKF(got[bound] == 0x5a, "%s: wrote past the bound", what);
	free(got);
	redisFreeCommand(want);
}

static void commands(void)
{
	static const char bin[] = {'a', '\0', '\r', '\n', '$', '*', (char)0xff};
	const char *ping[] = {"PING"};
	size_t ping_len[] = {4};
	const char *eval[] = {
	        "EVALSHA", "0123456789012345678901234567890123456789",
	        "1",       "lock",
	        "30000",   "00000000-0000-4000-8000-000000000000:1",
	        "1"};
	size_t eval_len[7];
	const char *empty[] = {"SET", "", ""};
	size_t empty_len[] = {3, 0, 0};
	const char *binary[] = {"SET", bin, bin};
	size_t binary_len[] = {3, sizeof(bin), 3};
	const char *many[200];
	size_t many_len[200];
	char *big;
	const char *large[2];
	size_t large_len[2], sizes[] = {9, 10, 99, 100, 65536, 1000000};
	int i;

	for (i = 0; i < 7; i++)
		eval_len[i] = strlen(eval[i]);
	same_as_hiredis("PING", 1, ping, ping_len);
	same_as_hiredis("EVALSHA", 7, eval, eval_len);
	same_as_hiredis("empty arguments", 3, empty, empty_len);
	same_as_hiredis("binary arguments", 3, binary, binary_len);
	/* argument counts of one and more digits */
	for (i = 0; i < 200; i++) {
		many[i] = eval[i % 7];
		many_len[i] = eval_len[i % 7];
	}
	for (i = 1; i <= 200; i += 9)
		same_as_hiredis("argument counts", i, many, many_len);
	same_as_hiredis("100 arguments", 100, many, many_len);
	/* lengths of every digit count up to 7 */
	big = malloc(1000000);
	HT_CHECK(big != NULL);
	for (i = 0; i < 1000000; i++)
		big[i] = (char)(i * 7);
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		large[0] = "SET";
		large_len[0] = 3;
		large[1] = big;
		large_len[1] = sizes[i];
		same_as_hiredis("argument lengths", 2, large, large_len);
	}
	free(big);
	/* a command too large to format is refused, not wrapped around */
	{
		size_t huge[2] = {SIZE_MAX / 2, 1};
		HT_CHECK(hl__resp_bound(2, huge) == 0);
	}
}

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

HT_MAIN(HT_CASE(commands), HT_CASE(decimal))
