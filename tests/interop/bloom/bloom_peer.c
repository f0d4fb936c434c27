/*
 * The hilock side of tests/interop/bloom/run.sh (public API only):
 *
 *   bloom_peer URL fill NAME N P V...   try_init(N, P), add_all(V...)
 *   bloom_peer URL check NAME V...      contains_all(V...), count
 *
 * prints "init 1", "added <n>", "contains <n>", "count <n>".
 */
#include <hilock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what)
{
	fprintf(stderr, "bloom_peer: %s: %s\n", what, hl_error_last());
	return 1;
}

int main(int argc, char **argv)
{
	hl_client *c = NULL;
	hl_object *f = NULL;
	const void **vals;
	size_t *lens, n, i;
	int first, ok = 0;
	int64_t count = 0;
	if (argc < 4)
		return fprintf(stderr, "usage: see the source\n"), 2;
	if (hl_client_new(&c, argv[1], NULL) != HL_OK)
		return die("connect");
	if (hl_bloom_filter_new(&f, c, argv[3], strlen(argv[3])) != HL_OK)
		return die("new");
	first = strcmp(argv[2], "fill") == 0 ? 6 : 4;
	n = argc > first ? (size_t)(argc - first) : 0;
	vals = calloc(n + 1, sizeof(*vals));
	lens = calloc(n + 1, sizeof(*lens));
	for (i = 0; i < n; i++) {
		vals[i] = argv[first + i];
		lens[i] = strlen(argv[first + i]);
	}
	if (first == 6) {
		if (hl_bloom_filter_try_init(&ok, f, atoll(argv[4]),
		                             atof(argv[5])) != HL_OK)
			return die("try_init");
		printf("init %d\n", ok);
		if (hl_bloom_filter_add_all(&count, f, vals, lens, n) != HL_OK)
			return die("add_all");
		printf("added %lld\n", (long long)count);
	} else {
		if (hl_bloom_filter_contains_all(&count, f, vals, lens, n) !=
		    HL_OK)
			return die("contains_all");
		printf("contains %lld\n", (long long)count);
	}
	if (hl_bloom_filter_count(&count, f) != HL_OK)
		return die("count");
	printf("count %lld\n", (long long)count);
	free(vals);
	free(lens);
	hl_object_free(f);
	hl_client_free(c);
	return 0;
}
