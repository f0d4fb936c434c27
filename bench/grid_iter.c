/*
 * hlgriditer: the data grid at scale (issue 21 "Scale"), driven by
 * bench/grid_iterate.py. Every mode prints one JSON line.
 *
 *   hlgriditer URL fill NAME N            N fields "field:<i>" of 20-byte
 *                                         values, HSET pipelined (raw hiredis)
 *   hlgriditer URL base                   connect only: the RSS of that
 *   hlgriditer URL iter LIB NAME COUNT    every entry of the hash by HSCAN
 *                                         pages of COUNT: LIB hilock
 *                                         (hl_map_scan) or hiredis (the floor)
 *   hlgriditer URL scan CMD KEY COUNT     the raw floor of any SCAN family
 *                                         command (HSCAN, SSCAN, ZSCAN)
 *   hlgriditer URL fillset KIND KEY N     a set (SADD) or zset (ZADD) of N
 *   hlgriditer URL bulk LIB NAME N SECS   N keys in one get_all (hilock) or
 *                                         one HMGET (hiredis), and N single
 *                                         gets (HGET), for SECS seconds each
 *
 * RSS: VmHWM of /proc/self/status after connecting (base) and at the end
 * (peak); the difference is what the iteration kept.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <hilock.h>
#include <hilock/grid_kinds.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *g_url;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "hlgriditer: %s: %s\n", what, why ? why : "?");
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process (every thread), user and system. */
static double cpu(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static long status_kb(const char *field)
{
	char line[256];
	long kb = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			kb = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static redisContext *raw(void)
{
	char host[256] = "127.0.0.1";
	int port = 6379;
	const char *p = strstr(g_url, "://");
	redisContext *c;
	p = p ? p + 3 : g_url;
	if (sscanf(p, "%255[^:]:%d", host, &port) < 1)
		die("url", g_url);
	c = redisConnect(host, port);
	if (!c || c->err)
		die("connect", c ? c->errstr : "out of memory");
	return c;
}

static hl_client *client(void)
{
	hl_client *c = NULL;
	if (hl_client_new(&c, g_url, NULL) != HL_OK)
		die("hl_client_new", hl_error_last());
	return c;
}

static hl_object *map(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	if (hl_object_new(&o, c, HL_KIND_MAP, name, strlen(name)) != HL_OK)
		die("hl_object_new", hl_error_last());
	return o;
}

static void fill(const char *name, long n)
{
	redisContext *c = raw();
	enum { BATCH = 1000 };
	const char *argv[2 + 2 * BATCH];
	size_t lens[2 + 2 * BATCH];
	static char buf[2 * BATCH][32];
	long i = 0, sent = 0, j;
	double t0 = now();
	redisReply *r;
	while (i < n) {
		int k = 0;
		argv[k] = "HSET";
		lens[k++] = 4;
		argv[k] = name;
		lens[k++] = strlen(name);
		for (; i < n && k < 2 + 2 * BATCH; i++) {
			char *f = buf[k - 2], *v = buf[k - 1];
			lens[k] = (size_t)snprintf(f, 32, "field:%ld", i);
			argv[k] = f;
			k++;
			lens[k] = (size_t)snprintf(v, 32, "value-%014ld", i);
			argv[k] = v;
			k++;
		}
		redisAppendCommandArgv(c, k, argv, lens);
		sent++;
		if (sent % 64 == 0 || i >= n) /* drain, 64 commands a flight */
			for (j = 0; j < (sent % 64 ? sent % 64 : 64); j++) {
				if (redisGetReply(c, (void **)&r) != REDIS_OK)
					die("fill", c->errstr);
				if (r->type == REDIS_REPLY_ERROR)
					die("fill", r->str);
				freeReplyObject(r);
			}
	}
	printf("{\"mode\":\"fill\",\"entries\":%ld,\"secs\":%.3f}\n", n,
	       now() - t0);
	redisFree(c);
}

static void fillset(const char *kind, const char *key, long n)
{
	redisContext *c = raw();
	enum { BATCH = 1000 };
	const char *argv[2 + 2 * BATCH];
	size_t lens[2 + 2 * BATCH];
	static char buf[2 * BATCH][32];
	int zset = strcmp(kind, "zset") == 0;
	long i = 0, sent = 0, j;
	redisReply *r;
	while (i < n) {
		int k = 0;
		argv[k] = zset ? "ZADD" : "SADD";
		lens[k++] = 4;
		argv[k] = key;
		lens[k++] = strlen(key);
		for (; i < n && k < 2 + 2 * BATCH - 1; i++) {
			if (zset) {
				lens[k] = (size_t)snprintf(buf[k - 2], 32,
				                           "%ld.5", i);
				argv[k] = buf[k - 2];
				k++;
			}
			lens[k] = (size_t)snprintf(buf[k - 2], 32,
			                           "member-%014ld", i);
			argv[k] = buf[k - 2];
			k++;
		}
		redisAppendCommandArgv(c, k, argv, lens);
		sent++;
		if (sent % 64 == 0 || i >= n)
			for (j = 0; j < (sent % 64 ? sent % 64 : 64); j++) {
				if (redisGetReply(c, (void **)&r) != REDIS_OK)
					die("fill", c->errstr);
				if (r->type == REDIS_REPLY_ERROR)
					die("fill", r->str);
				freeReplyObject(r);
			}
	}
	printf("{\"mode\":\"fillset\",\"entries\":%ld}\n", n);
	redisFree(c);
}

static void report(const char *mode, const char *lib, long count, long n,
                   long pages, size_t bytes, double secs, long base,
                   double cpu_s)
{
	printf("{\"mode\":\"%s\",\"lang\":\"c\",\"lib\":\"%s\",\"count\":%ld,"
	       "\"entries\":%ld,\"pages\":%ld,\"bytes\":%zu,\"secs\":%.4f,"
	       "\"entries_per_s\":%.0f,\"rss_base_kb\":%ld,"
	       "\"rss_peak_kb\":%ld,\"cpu_s\":%.4f}\n",
	       mode, lib, count, n, pages, bytes, secs,
	       secs > 0 ? (double)n / secs : 0.0, base, status_kb("VmHWM"),
	       cpu_s);
}

static void iter_hilock(const char *name, long count)
{
	hl_client *c = client();
	hl_object *m = map(c, name);
	long base = status_kb("VmHWM"), n = 0, pages = 0;
	size_t bytes = 0, cl = 1, i, len;
	char cursor[64] = "0";
	double t0 = now(), c0 = cpu();
	do {
		hl_value *page = NULL;
		const hl_value *items, *cur;
		const char *s;
		if (hl_map_scan(&page, m, cursor, cl, count, NULL, 0) != HL_OK)
			die("hl_map_scan", hl_error_last());
		cur = hl_value_at(page, 0);
		items = hl_value_at(page, 1);
		s = hl_value_bytes(cur, &cl);
		if (!s || cl >= sizeof(cursor))
			die("hl_map_scan", "a bad cursor");
		memcpy(cursor, s, cl + 1);
		len = hl_value_len(items);
		for (i = 0; i < len; i += 2) {
			size_t kl = 0, vl = 0;
			hl_value_bytes(hl_value_at(items, i), &kl);
			hl_value_bytes(hl_value_at(items, i + 1), &vl);
			bytes += kl + vl;
			n++;
		}
		pages++;
		hl_value_free(page);
	} while (strcmp(cursor, "0") != 0);
	report("iter", "hilock", count, n, pages, bytes, now() - t0, base,
	       cpu() - c0);
	hl_object_free(m);
	hl_client_free(c);
}

static void scan_raw(const char *cmd, const char *key, long count,
                     const char *lib)
{
	redisContext *c = raw();
	long base = status_kb("VmHWM"), n = 0, pages = 0, step;
	size_t bytes = 0, i;
	char cursor[64] = "0", cnt[24];
	double t0 = now(), c0 = cpu();
	step = strcmp(cmd, "SSCAN") == 0 ? 1 : 2;
	snprintf(cnt, sizeof(cnt), "%ld", count);
	do {
		const char *argv[5] = {cmd, key, cursor, "COUNT", cnt};
		size_t lens[5] = {strlen(cmd), strlen(key), strlen(cursor), 5,
		                  strlen(cnt)};
		redisReply *r = redisCommandArgv(c, 5, argv, lens);
		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
			die(cmd, r && r->type == REDIS_REPLY_ERROR ? r->str
			                                           : c->errstr);
		if (r->element[0]->len >= sizeof(cursor))
			die(cmd, "a bad cursor");
		memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
		for (i = 0; i < r->element[1]->elements; i++)
			bytes += r->element[1]->element[i]->len;
		n += (long)r->element[1]->elements / step;
		pages++;
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	report("iter", lib, count, n, pages, bytes, now() - t0, base,
	       cpu() - c0);
	redisFree(c);
}

static void base_only(void)
{
	hl_client *c = client();
	hl_object *m = map(c, "base");
	printf("{\"mode\":\"base\",\"lang\":\"c\",\"lib\":\"hilock\","
	       "\"rss_base_kb\":%ld,\"rss_peak_kb\":%ld}\n",
	       status_kb("VmHWM"), status_kb("VmHWM"));
	hl_object_free(m);
	hl_client_free(c);
}

/* out = seconds per run of the statements, run for secs seconds (at
 * least 3 times). */
#define TIMED(out, secs, ...)                                                  \
	do {                                                                   \
		long k_ = 0;                                                   \
		double t0_ = now(), el_;                                       \
		do {                                                           \
			__VA_ARGS__                                            \
			k_++;                                                  \
		} while ((el_ = now() - t0_) < (secs) || k_ < 3);              \
		(out) = el_ / (double)k_;                                      \
	} while (0)

static void bulk(const char *lib, const char *name, long n, double secs)
{
	char(*keys)[32] = calloc((size_t)n, 32);
	const void **kp = calloc((size_t)n, sizeof(*kp));
	size_t *kl = calloc((size_t)n, sizeof(*kl));
	double batch_s, single_s;
	long i;
	if (!keys || !kp || !kl)
		die("bulk", "out of memory");
	for (i = 0; i < n; i++) {
		/* spread over the map: fields i * 97 */
		kl[i] = (size_t)snprintf(keys[i], 32, "field:%ld",
		                         (i * 97) % 1000000);
		kp[i] = keys[i];
	}
	if (strcmp(lib, "hilock") == 0) {
		hl_client *c = client();
		hl_object *m = map(c, name);
		TIMED(batch_s, secs, {
			hl_value *v = NULL;
			if (hl_map_get_all(&v, m, kp, kl, (size_t)n) != HL_OK)
				die("hl_map_get_all", hl_error_last());
			if (hl_value_len(v) != (size_t)(2 * n))
				die("hl_map_get_all", "missing entries");
			hl_value_free(v);
		});
		TIMED(single_s, secs, {
			for (i = 0; i < n; i++) {
				hl_value *v = NULL;
				if (hl_map_get(&v, m, kp[i], kl[i]) != HL_OK)
					die("hl_map_get", hl_error_last());
				hl_value_free(v);
			}
		});
		hl_object_free(m);
		hl_client_free(c);
	} else {
		redisContext *c = raw();
		const char **argv = calloc((size_t)n + 2, sizeof(*argv));
		size_t *lens = calloc((size_t)n + 2, sizeof(*lens));
		if (!argv || !lens)
			die("bulk", "out of memory");
		argv[0] = "HMGET";
		lens[0] = 5;
		argv[1] = name;
		lens[1] = strlen(name);
		for (i = 0; i < n; i++) {
			argv[i + 2] = keys[i];
			lens[i + 2] = kl[i];
		}
		TIMED(batch_s, secs, {
			redisReply *r =
			        redisCommandArgv(c, (int)n + 2, argv, lens);
			if (!r || r->type != REDIS_REPLY_ARRAY)
				die("HMGET", c->errstr);
			freeReplyObject(r);
		});
		TIMED(single_s, secs, {
			for (i = 0; i < n; i++) {
				const char *a[3] = {"HGET", name, keys[i]};
				size_t l[3] = {4, strlen(name), kl[i]};
				redisReply *r = redisCommandArgv(c, 3, a, l);
				if (!r)
					die("HGET", c->errstr);
				freeReplyObject(r);
			}
		});
		free(argv);
		free(lens);
		redisFree(c);
	}
	printf("{\"mode\":\"bulk\",\"lang\":\"c\",\"lib\":\"%s\",\"n\":%ld,"
	       "\"batch_us\":%.2f,\"singles_us\":%.2f}\n",
	       lib, n, batch_s * 1e6, single_s * 1e6);
	free(keys);
	free(kp);
	free(kl);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		die("usage", "hlgriditer URL fill|base|iter|scan|fillset|bulk");
	g_url = argv[1];
	if (strcmp(argv[2], "fill") == 0 && argc == 5)
		fill(argv[3], atol(argv[4]));
	else if (strcmp(argv[2], "fillset") == 0 && argc == 6)
		fillset(argv[3], argv[4], atol(argv[5]));
	else if (strcmp(argv[2], "base") == 0)
		base_only();
	else if (strcmp(argv[2], "iter") == 0 && argc == 6 &&
	         strcmp(argv[3], "hilock") == 0)
		iter_hilock(argv[4], atol(argv[5]));
	else if (strcmp(argv[2], "iter") == 0 && argc == 6)
		scan_raw("HSCAN", argv[4], atol(argv[5]), "hiredis");
	else if (strcmp(argv[2], "scan") == 0 && argc == 6)
		scan_raw(argv[3], argv[4], atol(argv[5]), "hiredis");
	else if (strcmp(argv[2], "bulk") == 0 && argc == 7)
		bulk(argv[3], argv[4], atol(argv[5]), atof(argv[6]));
	else
		die("usage", "bad arguments");
	return 0;
}
