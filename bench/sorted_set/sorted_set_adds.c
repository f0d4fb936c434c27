/*
 * hilock's sorted set add, N times (bench/sorted_set/run.sh): the same
 * values in the same order as SortedSetAdds.java.
 *
 *   sorted_set_adds REDIS_URL N NAME
 */
#define _POSIX_C_SOURCE 200809L
#include <hilock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	hl_client *c;
	hl_object *s;
	int n, i, ok, added = 0;
	int64_t size = 0;
	char buf[32];
	double t0;
	if (argc != 4) {
		fprintf(stderr, "usage: sorted_set_adds REDIS_URL N NAME\n");
		return 2;
	}
	n = atoi(argv[2]);
	if (hl_client_new(&c, argv[1], NULL) != HL_OK ||
	    hl_sorted_set_new(&s, c, argv[3], strlen(argv[3])) != HL_OK ||
	    hl_object_delete(NULL, s) != HL_OK) {
		fprintf(stderr, "%s\n", hl_error_last());
		return 1;
	}
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		int k = snprintf(buf, sizeof buf, "v%010lld",
		                 (long long)i * 2654435761LL % 2147483647LL);
		if (hl_sorted_set_add(&ok, s, buf, (size_t)k) != HL_OK) {
			fprintf(stderr, "%s\n", hl_error_last());
			return 1;
		}
		added += ok;
	}
	t0 = now_ms() - t0;
	hl_sorted_set_size(&size, s);
	printf("hilock-c adds=%d added=%d ms=%.0f size=%lld\n", n, added, t0,
	       (long long)size);
	hl_object_free(s);
	hl_client_free(c);
	return 0;
}
