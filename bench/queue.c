/*
 * hlqueue: the blocking queue's floor and hilock's C blocking queue
 * (bench/grid_queue.py, `make bench BENCH_ARGS="--only grid-queue"`).
 *
 *   hlqueue URL latency   floor|hilock NAME N GAP_MS
 *   hlqueue URL drain     floor|hilock NAME M CONSUMERS
 *
 * floor: raw hiredis, one connection per thread, RPUSH to offer and
 * BLPOP NAME 0 to take: what a blocking queue sends at the least.
 * hilock: hl_blocking_queue_* (bench/queue_hilock.c, compiled in only when
 * the installed header has the kind; otherwise it reports "not built").
 *
 * latency: one producer (the main thread) and one consumer thread waiting
 * in take. The producer sleeps GAP_MS (so the consumer is back in its
 * take), offers a value that holds the wall-clock time in ns, and waits
 * until the consumer has it; N hand-offs (the first 20 not counted).
 * Prints {"n", "p50_us", "p99_us", "mean_us"}.
 *
 * drain: M elements and one stop value per consumer are pushed (pipelined
 * RPUSH over a raw connection: the blocking queue is a plain list under its
 * name), then CONSUMERS threads take until each gets its stop value; the
 * elements per second from their start to the last stop. Prints
 * {"elements", "consumers", "secs", "elements_per_s"}.
 */
#define _GNU_SOURCE

#include "floor.h"
#include "queue_hilock.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARM 20

static const char *g_url, *g_name, *g_impl;

static long long wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "hlqueue: %s: %s\n", what, why ? why : "?");
	exit(1);
}

/* One endpoint: a raw connection or a hilock queue. */
typedef struct {
	redisContext *c;
	void *hl;
} ep;

static void ep_open(ep *e)
{
	char err[256];
	memset(e, 0, sizeof(*e));
	if (strcmp(g_impl, "hilock") == 0) {
		e->hl = hlq_open(g_url, g_name, err, sizeof(err));
		if (!e->hl)
			die("hilock", err);
		return;
	}
	e->c = hlfloor_connect(g_url, err, sizeof(err));
	if (!e->c)
		die("connect", err);
}

static void ep_offer(ep *e, const char *v, size_t len)
{
	char err[256];
	if (e->hl) {
		if (hlq_offer(e->hl, v, len, err, sizeof(err)) != 0)
			die("offer", err);
		return;
	}
	redisReply *r = redisCommand(e->c, "RPUSH %s %b", g_name, v, len);
	if (!r || r->type != REDIS_REPLY_INTEGER)
		die("RPUSH", r ? r->str : e->c->errstr);
	freeReplyObject(r);
}

/* Take one element into buf (NUL-terminated); its length. */
static size_t ep_take(ep *e, char *buf, size_t cap)
{
	char err[256];
	if (e->hl) {
		long n = hlq_take(e->hl, buf, cap, err, sizeof(err));
		if (n < 0)
			die("take", err);
		return (size_t)n;
	}
	redisReply *r = redisCommand(e->c, "BLPOP %s 0", g_name);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		die("BLPOP", r ? r->str : e->c->errstr);
	size_t n = r->element[1]->len < cap - 1 ? r->element[1]->len : cap - 1;
	memcpy(buf, r->element[1]->str, n);
	buf[n] = 0;
	freeReplyObject(r);
	return n;
}

static void ep_close(ep *e)
{
	if (e->hl)
		hlq_close(e->hl);
	if (e->c)
		redisFree(e->c);
}

/* ---- latency ---------------------------------------------------------- */
static sem_t g_got;
static int g_n;
static double *g_lat;

static void *lat_consumer(void *arg)
{
	ep e;
	char buf[64];
	(void)arg;
	ep_open(&e);
	sem_post(&g_got); /* connected */
	for (int i = 0; i < g_n; i++) {
		ep_take(&e, buf, sizeof(buf));
		g_lat[i] = (double)(wall_ns() - atoll(buf)) / 1e3;
		sem_post(&g_got);
	}
	ep_close(&e);
	return NULL;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int latency(int n, double gap_ms)
{
	pthread_t t;
	ep e;
	char v[64];
	struct timespec gap = {
	        (time_t)(gap_ms / 1e3),
	        (long)((gap_ms - (long)(gap_ms / 1e3) * 1e3) * 1e6)};
	g_n = n + WARM;
	g_lat = calloc((size_t)g_n, sizeof(double));
	sem_init(&g_got, 0, 0);
	ep_open(&e);
	pthread_create(&t, NULL, lat_consumer, NULL);
	sem_wait(&g_got);
	for (int i = 0; i < g_n; i++) {
		nanosleep(&gap, NULL);
		int len = snprintf(v, sizeof(v), "%lld", wall_ns());
		ep_offer(&e, v, (size_t)len);
		sem_wait(&g_got);
	}
	pthread_join(t, NULL);
	ep_close(&e);
	double *s = g_lat + WARM, sum = 0;
	qsort(s, (size_t)n, sizeof(double), cmpd);
	for (int i = 0; i < n; i++)
		sum += s[i];
	printf("{\"n\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f, "
	       "\"mean_us\": %.1f}\n",
	       n, s[n / 2], s[(int)(0.99 * (n - 1) + 0.5)], sum / n);
	return 0;
}

/* ---- drain ------------------------------------------------------------ */
static pthread_barrier_t g_bar;
static long long g_taken[256];

static double mono(void)
{
	return hlfloor_now();
}

static void *drain_consumer(void *arg)
{
	long i = (long)arg;
	ep e;
	char buf[64];
	ep_open(&e);
	pthread_barrier_wait(&g_bar);
	for (;;) {
		ep_take(&e, buf, sizeof(buf));
		if (strcmp(buf, "stop") == 0)
			break;
		g_taken[i]++;
	}
	ep_close(&e);
	return NULL;
}

static int drain(long m, int consumers)
{
	char err[256];
	redisContext *c = hlfloor_connect(g_url, err, sizeof(err));
	pthread_t t[256];
	long long total = 0;
	if (!c)
		die("connect", err);
	if (consumers < 1 || consumers > 256)
		die("drain", "CONSUMERS must be 1..256");
	redisReply *r = redisCommand(c, "DEL %s", g_name);
	freeReplyObject(r);
	for (long i = 0; i < m; i++)
		redisAppendCommand(c, "RPUSH %s v%07ld", g_name, i);
	for (int i = 0; i < consumers; i++)
		redisAppendCommand(c, "RPUSH %s stop", g_name);
	for (long i = 0; i < m + consumers; i++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			die("RPUSH", c->errstr);
		freeReplyObject(r);
	}
	pthread_barrier_init(&g_bar, NULL, (unsigned)consumers + 1);
	for (long i = 0; i < consumers; i++)
		pthread_create(&t[i], NULL, drain_consumer, (void *)i);
	pthread_barrier_wait(&g_bar);
	double t0 = mono();
	for (int i = 0; i < consumers; i++)
		pthread_join(t[i], NULL);
	double secs = mono() - t0;
	for (int i = 0; i < consumers; i++)
		total += g_taken[i];
	redisFree(c);
	if (total != m)
		die("drain", "the consumers did not take every element");
	printf("{\"elements\": %ld, \"consumers\": %d, \"secs\": %.3f, "
	       "\"elements_per_s\": %.0f}\n",
	       m, consumers, secs, (double)m / secs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr,
		        "usage: hlqueue URL latency floor|hilock NAME N "
		        "GAP_MS\n       hlqueue URL drain floor|hilock "
		        "NAME M CONSUMERS\n");
		return 2;
	}
	g_url = argv[1];
	g_impl = argv[3];
	g_name = argv[4];
	if (strcmp(g_impl, "hilock") == 0 && !hlq_built()) {
		fprintf(stderr, "hlqueue: not built: %s\n", hlq_why());
		return 3;
	}
	if (strcmp(argv[2], "latency") == 0)
		return latency(atoi(argv[5]), atof(argv[6]));
	if (strcmp(argv[2], "drain") == 0)
		return drain(atol(argv[5]), atoi(argv[6]));
	fprintf(stderr, "hlqueue: unknown scenario %s\n", argv[2]);
	return 2;
}
