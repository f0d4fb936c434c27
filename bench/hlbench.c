/*
 * hlbench: the C side of `make bench`. One program, one scenario per run,
 * one JSON object on stdout (bench/run.py collects them into BENCHMARKS.md).
 *
 *   hlbench URL floor        SECONDS [nopping]   raw hiredis: EVALSHA pairs,
 * PING hlbench URL uncontended  SECONDS [LEASE_MS]  hilock lock+unlock pairs
 *   hlbench URL contend      SECONDS W MODE CS_US [SAMPLES_FILE [KIND]]
 *                                               MODE: threads | processes
 *                                               KIND: reentrant (default),
 *                                               fair, ... (HL_LOCK_*)
 *   hlbench URL paired       SECONDS [LEASE_MS]  floor and hilock, alternating
 *   hlbench URL random       SECONDS W MAX_HOLD_MS [WAIT_MS]
 *                                               W processes (a client
 *                                               each) loop acquire (wait
 *                                               WAIT_MS, 20000 by default),
 *                                               hold 0..MAX_HOLD_MS
 *                                               (uniform), release: every
 *                                               worker's waits and holds
 *   hlbench URL kind-paired  SECONDS KIND        the same for one lock kind
 *                                               (reentrant, fair, read,
 *                                               write, spin, fenced,
 *                                               nonreentrant,
 *                                               fair-nonreentrant): its
 *                                               own scripts' floor and
 *                                               hl_lock_new_kind()
 *   hlbench URL readers      SECONDS R MODE CS_US
 *                                               R readers of one
 *                                               read-write lock: read
 *                                               acquisitions/s, how many
 *                                               held at once
 *   hlbench URL sync-paired  SECONDS WHAT        a synchronizer (semaphore,
 *                                               expsem, latch) against the
 *                                               floor of its own scripts:
 *                                               acquire(1)+release(1), the
 *                                               latch's set count 1 and
 *                                               count down, alternating
 *   hlbench URL sync-floor   SECONDS WHAT        that floor alone
 *   hlbench URL sem-contend  SECONDS W MODE CS_US PERMITS
 *                                               W workers on a semaphore of
 *                                               PERMITS: acquire(1), CS_US,
 *                                               release(1)
 *   hlbench URL latch-wake   ROUNDS WAITERS PROCS COUNT
 *                                               WAITERS threads (in PROCS
 *                                               processes; 0: threads of the
 *                                               counting client) wait on a
 *                                               latch of COUNT: from the
 *                                               last count-down's return to
 *                                               the last waiter's
 *   hlbench URL scale        SECONDS T [POOL]    T threads, distinct locks
 *   hlbench URL watchdog     N PERIODS WD_MS     N held locks, renewal cost
 *   hlbench URL memory       N WAITERS           per held lock, per waiter
 *   hlbench URL faults       PROXY TRIALS WD_MS  through tests/tools/faultproxy
 *                                               in a black hole: how long
 *                                               before Redis's lease ends the
 *                                               holder is told it lost, and
 *                                               how long a timed acquire takes
 *   hlbench URL grid-capture FILE KIND NAME OP N ARG... [OP N ARG...]
 *                 the data grid: runs the last operation (the others are
 *                 set-ups) with a MONITOR watching; the commands it sent
 *                 go to FILE (the floor) and to stdout. ARG: b:TEXT,
 *                 x:HEX, i:N, f:X, m:MODE (a rate limiter's mode by
 *                 name), s:SECONDS (a duration), - (left out)
 *   hlbench URL grid-paired SECONDS FILE KIND NAME OP N ARG...
 *                 that floor (FILE replayed over raw hiredis) and
 *                 hl_object_call(), alternating
 *   hlbench URL grid-floor SECONDS FILE   that floor alone
 *   hlbench URL grid-setup KIND NAME OP N ARG...   the set-ups alone (the
 *                 state a peer's floor needs)
 *
 * The topologies (run.py's cluster, tls and failover groups start the
 * deployments; see bench/topo.py):
 *   hlbench CLUSTER_URL cluster-paired SECONDS HOST:PORT NAME WAIT
 *                 floor and a redis-cluster:// client, alternating, on lock
 *                 NAME; the floor on one hiredis connection to HOST:PORT,
 *                 the master owning NAME's slot. WAIT is the client's
 *                 wait_replicas (-1: its default, every connected replica;
 *                 0: none); the floor pipelines the same WAIT after each
 *                 script, as the router does. With CLUSTER_URL the
 *                 redis:// URL of that master: the same, without the
 *                 router (a single-server client).
 *   hlbench REDISS_URL tls-paired SECONDS CA_FILE [readahead]
 *                 floor and a rediss:// client, alternating; the floor is a
 *                 minimal blocking OpenSSL client (SSL_write of the
 *                 formatted command, SSL_read into a hiredis reader), with
 *                 OpenSSL's defaults, or with read-ahead (one read(2) per
 *                 reply instead of two: the tightest floor)
 *   hlbench URL failover PREFIX WAIT_MS
 *                 loops try_acquire(WAIT_MS, watchdog)/release on fresh
 *                 locks PREFIX:<n>, 1 ms apart; prints "ready" after its
 *                 first acquisition; stdin "kill <CLOCK_MONOTONIC ns>" says
 *                 when a master was killed; then prints how long after it
 *                 the first acquisition that Redis's new master granted
 *                 returned, and exits (see bench_failover)
 *
 * HLBENCH_WINDOW in the environment (contend, sem-contend, random): "#window
 * start" once every worker is ready, "#window end" once all are done, each
 * waiting for a line on stdin (run.py reads INFO commandstats meanwhile).
 *
 * The floor program sends the very scripts the core sends: it compiles the
 * core's private scripts.c (core/src/service/scripts.h) and loads them with
 * SCRIPT LOAD, so there is no second copy to drift.
 */
#define _GNU_SOURCE

#include <hilock.h>
#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "floor.h"
#include "scripts.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEASE_MS 30000 /* the core's default watchdog lease */

static const char *g_url;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "hlbench: %s: %s (%s)\n", what, hl_status_name(rc),
	        hl_error_last());
	exit(1);
}

static void die_msg(const char *what)
{
	fprintf(stderr, "hlbench: %s\n", what);
	exit(1);
}

/* The measured window, for bench/run.py's Redis-side counters: with
 * HLBENCH_WINDOW set, print "#window WHAT" and wait for a line on stdin
 * (run.py reads INFO commandstats in between), so the counters cover
 * exactly what the workers did from the start to the end of a run,
 * neither the set-up nor the teardown. Without it: nothing. */
static void window_mark(const char *what)
{
	char line[64];

	if (getenv("HLBENCH_WINDOW") == NULL)
		return;
	printf("#window %s\n", what);
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		die_msg("window: stdin closed");
}

/* ---- raw hiredis helpers (the floor and the Redis-side counters) ------- */

static redisContext *raw_connect(void)
{
	char err[256];
	redisContext *c = hlfloor_connect(g_url, err, sizeof(err));
	if (c == NULL)
		die_msg(err);
	return c;
}

static redisReply *raw_cmd(redisContext *c, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);
	if (r == NULL)
		die_msg("redis connection failed");
	if (r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "hlbench: redis error: %s\n", r->str);
		exit(1);
	}
	return r;
}

/* A numeric field of INFO <section> ("used_memory", or "cmdstat_evalsha"
 * then its "calls=" part). -1 if absent. */
static long long info_field(redisContext *c, const char *section,
                            const char *field)
{
	redisReply *r = redisCommand(c, "INFO %s", section);
	long long v = -1;
	char key[128];
	const char *p;

	if (r == NULL || r->type != REDIS_REPLY_STRING)
		die_msg("INFO failed");
	snprintf(key, sizeof(key), "\n%s:", field);
	p = strstr(r->str, key);
	if (p) {
		p += strlen(key);
		if (strncmp(p, "calls=", 6) == 0)
			p += 6;
		v = strtoll(p, NULL, 10);
	}
	freeReplyObject(r);
	return v;
}

static long long evalsha_calls(redisContext *c)
{
	long long a = info_field(c, "commandstats", "cmdstat_evalsha");
	long long b = info_field(c, "commandstats", "cmdstat_eval");
	return (a < 0 ? 0 : a) + (b < 0 ? 0 : b);
}

/* ---- floor: the same two scripts, EVALSHA, one connection -------------- */

static void load_sha(redisContext *c, enum hl_script_id id, char *sha)
{
	const char *argv[3] = {"SCRIPT", "LOAD", hl__script(id)->source};
	redisReply *r = raw_cmd(c, 3, argv);
	snprintf(sha, 41, "%s", r->str);
	freeReplyObject(r);
}

/* The floor (floor.c) on lock name, or exit. */
static hlfloor *lock_floor_open(const char *name)
{
	char err[256];
	hlfloor *f = hlfloor_open(g_url, name, err, sizeof(err));
	if (f == NULL)
		die_msg(err);
	return f;
}

static void lock_floor_pair(hlfloor *f)
{
	if (hlfloor_pair(f) != 0)
		die_msg(hlfloor_error(f));
}

static int bench_floor(double seconds, int with_ping)
{
	hlfloor *f = lock_floor_open("bench:floor");
	long long pairs = 0, pings = 0;
	int64_t t0, end, t;

	end = now_ns() + (int64_t)(seconds * 1e9);
	t0 = now_ns();
	while ((t = now_ns()) < end) {
		lock_floor_pair(f);
		pairs++;
	}
	double pair_s = (double)(t - t0) / 1e9;

	end = now_ns() + (int64_t)(with_ping ? seconds * 1e9 : 0);
	t0 = now_ns();
	while ((t = now_ns()) < end || pings == 0) {
		const char *p[] = {"PING"};
		freeReplyObject(raw_cmd(hlfloor_context(f), 1, p));
		pings++;
	}
	double ping_s = (double)(t - t0) / 1e9;

	printf("{\"scenario\":\"floor\",\"pairs_per_s\":%.1f,"
	       "\"ping_per_s\":%.1f,\"ping_rtt_us\":%.2f}\n",
	       pairs / pair_s, pings / ping_s, ping_s * 1e6 / pings);
	hlfloor_close(f);
	return 0;
}

/* ---- hilock helpers ------------------------------------------------------ */

static hl_client *new_client(int64_t watchdog_ms, int pool_size)
{
	hl_client_options o;
	hl_client *c = NULL;
	int rc;

	hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	if (watchdog_ms > 0)
		o.watchdog_timeout_ms = watchdog_ms;
	if (pool_size > 0)
		o.pool_size = pool_size;
	o.client_name = "hlbench";
	rc = hl_client_new(&c, g_url, &o);
	if (rc != HL_OK)
		die("hl_client_new", rc);
	return c;
}

static hl_lock *new_lock_kind(hl_client *c, int kind, const char *name)
{
	hl_lock *l = NULL;
	int rc = hl_lock_new_kind(&l, c, kind, name, strlen(name));
	if (rc != HL_OK)
		die("hl_lock_new_kind", rc);
	return l;
}

static hl_lock *new_lock(hl_client *c, const char *name)
{
	return new_lock_kind(c, HL_LOCK_REENTRANT, name);
}

/* HL_LOCK_* of a kind's name ("fair", "read"...), as hl_lock_kind_name(). */
static int kind_from_name(const char *s)
{
	for (int k = 0; strcmp(hl_lock_kind_name(k), "unknown") != 0; k++)
		if (strcmp(hl_lock_kind_name(k), s) == 0)
			return k;
	fprintf(stderr, "hlbench: unknown lock kind \"%s\"\n", s);
	exit(2);
}

static int64_t g_lease_ms = -1; /* -1: the watchdog */

static void acquire(hl_lock *l)
{
	int rc = hl_lock_acquire(l, g_lease_ms, NULL);
	if (rc != HL_OK)
		die("hl_lock_acquire", rc);
}

static void release(hl_lock *l)
{
	int rc = hl_lock_release(NULL, l);
	if (rc != HL_OK)
		die("hl_lock_release", rc);
}

/* Lock+unlock pairs on one lock until the deadline. */
static long long pairs_until(hl_lock *l, int64_t end)
{
	long long n = 0;
	while (now_ns() < end) {
		acquire(l);
		release(l);
		n++;
	}
	return n;
}

static int bench_uncontended(double seconds)
{
	hl_client *c = new_client(0, 0);
	hl_lock *l = new_lock(c, "bench:uncontended");
	int64_t t0 = now_ns();
	long long n = pairs_until(l, t0 + (int64_t)(seconds * 1e9));
	double s = (double)(now_ns() - t0) / 1e9;

	printf("{\"scenario\":\"uncontended\",\"lang\":\"c\",\"lib\":"
	       "\"hilock\","
	       "\"lease_ms\":%lld,\"pairs_per_s\":%.1f}\n",
	       (long long)g_lease_ms, n / s);
	hl_lock_free(l);
	hl_client_free(c);
	return 0;
}

/* Floor and hilock in alternating 5 ms slices on the same lock name, so
 * both see the same machine load: the fairest ratio a shared machine
 * allows (as the grid's: see GRID_SLICE_NS). */
#define PAIRED_SLICE_NS 5000000

static int bench_paired(double seconds)
{
	hlfloor *f = lock_floor_open("bench:paired");
	hl_client *c = new_client(0, 0);
	hl_lock *l = new_lock(c, "bench:paired");
	long long nf = 0, nh = 0;
	int64_t tf = 0, th = 0, end, t0, t;
	const int64_t slice = PAIRED_SLICE_NS;

	end = now_ns() + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			lock_floor_pair(f);
			nf++;
		}
		tf += t - t0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			acquire(l);
			release(l);
			nh++;
		}
		th += t - t0;
	}
	printf("{\"scenario\":\"paired\",\"lease_ms\":%lld,"
	       "\"floor_pairs_per_s\":%.1f,\"hilock_pairs_per_s\":%.1f}\n",
	       (long long)g_lease_ms, nf * 1e9 / (double)tf,
	       nh * 1e9 / (double)th);
	hlfloor_close(f);
	hl_lock_free(l);
	hl_client_free(c);
	return 0;
}

/* ---- scale: T threads, distinct locks, one client ----------------------- */

struct scale_arg {
	hl_client *c;
	int index;
	pthread_barrier_t *start;
	int64_t end_after_ns;
	long long pairs;
};

static void *scale_thread(void *p)
{
	struct scale_arg *a = p;
	char name[64];
	hl_lock *l;

	snprintf(name, sizeof(name), "bench:scale:%d", a->index);
	l = new_lock(a->c, name);
	pthread_barrier_wait(a->start);
	a->pairs = pairs_until(l, now_ns() + a->end_after_ns);
	hl_lock_free(l);
	return NULL;
}

static int bench_scale(double seconds, int threads, int pool)
{
	hl_client *c = new_client(0, pool);
	struct scale_arg *args = calloc((size_t)threads, sizeof(*args));
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	pthread_barrier_t start;
	long long total = 0;
	int64_t t0;
	int i;

	if (args == NULL || tids == NULL)
		die_msg("out of memory");
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (i = 0; i < threads; i++) {
		args[i] = (struct scale_arg){c, i, &start,
		                             (int64_t)(seconds * 1e9), 0};
		pthread_create(&tids[i], NULL, scale_thread, &args[i]);
	}
	pthread_barrier_wait(&start);
	t0 = now_ns();
	for (i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		total += args[i].pairs;
	}
	double s = (double)(now_ns() - t0) / 1e9;
	printf("{\"scenario\":\"scale\",\"threads\":%d,\"pool\":%d,"
	       "\"pairs_per_s\":%.1f}\n",
	       threads, pool, total / s);
	pthread_barrier_destroy(&start);
	free(args);
	free(tids);
	hl_client_free(c);
	return 0;
}

/* ---- contention: W workers, one lock, a critical section ---------------- */

#define MAX_SAMPLES 16384

/* Shared between workers (mmap'ed MAP_SHARED, so processes see it too). */
struct contend_shared {
	atomic_int ready;
	atomic_int go;
	atomic_llong last_release_ns; /* when the holder called release */
	atomic_int holders;           /* must never exceed 1 */
	atomic_int violations;
	int64_t start_ns, end_ns;
	int cs_us;
};

struct contend_worker {
	long long count;     /* acquisitions */
	long long nwait;     /* wait samples */
	long long nhandoff;  /* handoff samples */
	long long cs_ns_sum; /* time really spent in the critical section */
	int32_t wait_us[MAX_SAMPLES];
	int32_t handoff_us[MAX_SAMPLES];
};

static void sleep_us(int us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int g_contend_kind = HL_LOCK_REENTRANT;

static void contend_loop(struct contend_shared *sh, struct contend_worker *w,
                         hl_client *c)
{
	hl_lock *l = new_lock_kind(c, g_contend_kind, "bench:contend");

	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sleep_us(200);
	for (;;) {
		int64_t t0 = now_ns(), t1, t2;
		long long rel;

		if (t0 >= sh->end_ns)
			break;
		acquire(l);
		t1 = now_ns();
		if (atomic_fetch_add(&sh->holders, 1) != 0)
			atomic_fetch_add(&sh->violations, 1);
		rel = atomic_load(&sh->last_release_ns);
		if (w->nwait < MAX_SAMPLES)
			w->wait_us[w->nwait++] = (int32_t)((t1 - t0) / 1000);
		/* A handoff: the previous holder let go while we waited. */
		if (rel > t0 && w->nhandoff < MAX_SAMPLES)
			w->handoff_us[w->nhandoff++] =
			        (int32_t)((t1 - rel) / 1000);
		sleep_us(sh->cs_us);
		t2 = now_ns();
		w->cs_ns_sum += t2 - t1;
		w->count++;
		atomic_fetch_sub(&sh->holders, 1);
		atomic_store(&sh->last_release_ns, now_ns());
		release(l);
	}
	hl_lock_free(l);
}

struct contend_thread_arg {
	struct contend_shared *sh;
	struct contend_worker *w;
	hl_client *c;
};

static void *contend_thread(void *p)
{
	struct contend_thread_arg *a = p;
	contend_loop(a->sh, a->w, a->c);
	return NULL;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static double pct(const int32_t *v, long long n, double p)
{
	long long i;
	if (n == 0)
		return 0;
	i = (long long)(p * (double)(n - 1) + 0.5);
	return v[i];
}

static int bench_contend(double seconds, int workers, const char *mode,
                         int cs_us, const char *samples_file)
{
	size_t size = sizeof(struct contend_shared) +
	              (size_t)workers * sizeof(struct contend_worker);
	int processes = strcmp(mode, "processes") == 0;
	struct contend_shared *sh;
	struct contend_worker *ws;
	hl_client *c = NULL;
	pthread_t *tids = NULL;
	struct contend_thread_arg *targs = NULL;
	int i;

	sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die_msg("mmap failed");
	ws = (struct contend_worker *)(sh + 1);
	sh->cs_us = cs_us;
	sh->end_ns = INT64_MAX;

	if (processes) {
		for (i = 0; i < workers; i++) {
			pid_t pid = fork();
			if (pid < 0)
				die_msg("fork failed");
			if (pid == 0) {
				/* Each process its own client, made after fork.
				 */
				hl_client *cc = new_client(0, 0);
				contend_loop(sh, &ws[i], cc);
				hl_client_free(cc);
				_exit(0);
			}
		}
	} else {
		c = new_client(0, 0);
		tids = calloc((size_t)workers, sizeof(*tids));
		targs = calloc((size_t)workers, sizeof(*targs));
		if (tids == NULL || targs == NULL)
			die_msg("out of memory");
		for (i = 0; i < workers; i++) {
			targs[i] = (struct contend_thread_arg){sh, &ws[i], c};
			pthread_create(&tids[i], NULL, contend_thread,
			               &targs[i]);
		}
	}
	/* Start everyone together once all have a client (at most 60 s). */
	for (i = 0; i < 60000 && atomic_load(&sh->ready) < workers; i++)
		sleep_us(1000);
	if (atomic_load(&sh->ready) < workers)
		die_msg("workers did not start");
	window_mark("start");
	sh->start_ns = now_ns();
	sh->end_ns = sh->start_ns + (int64_t)(seconds * 1e9);
	atomic_store(&sh->go, 1);

	if (processes) {
		int st;
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				die_msg("a worker process failed");
	} else {
		for (i = 0; i < workers; i++)
			pthread_join(tids[i], NULL);
	}
	double elapsed = (double)(now_ns() - sh->start_ns) / 1e9;
	window_mark("end");

	/* Merge the samples. */
	long long total = 0, nwait = 0, nhand = 0, mn = -1, mx = 0;
	long long cs_sum = 0;
	for (i = 0; i < workers; i++) {
		total += ws[i].count;
		nwait += ws[i].nwait;
		nhand += ws[i].nhandoff;
		cs_sum += ws[i].cs_ns_sum;
		if (mn < 0 || ws[i].count < mn)
			mn = ws[i].count;
		if (ws[i].count > mx)
			mx = ws[i].count;
	}
	int32_t *wv = malloc((size_t)(nwait + 1) * sizeof(int32_t));
	int32_t *hv = malloc((size_t)(nhand + 1) * sizeof(int32_t));
	long long k = 0, h = 0;
	if (wv == NULL || hv == NULL)
		die_msg("out of memory");
	for (i = 0; i < workers; i++) {
		memcpy(wv + k, ws[i].wait_us, (size_t)ws[i].nwait * 4);
		k += ws[i].nwait;
		memcpy(hv + h, ws[i].handoff_us, (size_t)ws[i].nhandoff * 4);
		h += ws[i].nhandoff;
	}
	if (samples_file && samples_file[0]) {
		FILE *f = fopen(samples_file, "w");
		if (f == NULL)
			die_msg("cannot write the samples file");
		for (k = 0; k < nwait; k++)
			fprintf(f, "%d\n", wv[k]);
		fclose(f);
	}
	qsort(wv, (size_t)nwait, sizeof(int32_t), cmp_i32);
	qsort(hv, (size_t)nhand, sizeof(int32_t), cmp_i32);
	printf("{\"scenario\":\"contend\",\"lang\":\"c\",\"lib\":\"hilock\","
	       "\"kind\":\"%s\",\"mode\":\"%s\",\"workers\":%d,\"cs_us\":%d,"
	       "\"acq_per_s\":%.1f,\"cs_mean_us\":%.1f,"
	       "\"wait_p50_us\":%.0f,\"wait_p99_us\":%.0f,\"wait_max_us\":%.0f,"
	       "\"handoff_p50_us\":%.0f,\"handoff_p99_us\":%.0f,"
	       "\"fair_min\":%lld,\"fair_max\":%lld,\"violations\":%d,"
	       "\"acquisitions\":%lld}\n",
	       hl_lock_kind_name(g_contend_kind), mode, workers, cs_us,
	       total / elapsed, total ? cs_sum / 1000.0 / total : 0.0,
	       pct(wv, nwait, 0.5), pct(wv, nwait, 0.99),
	       nwait ? (double)wv[nwait - 1] : 0.0, pct(hv, nhand, 0.5),
	       pct(hv, nhand, 0.99), mn, mx, atomic_load(&sh->violations),
	       total);
	free(wv);
	free(hv);
	free(tids);
	free(targs);
	hl_client_free(c);
	int bad = atomic_load(&sh->violations) != 0;
	munmap(sh, size);
	return bad;
}

/* ---- random holds: W processes, timed acquires, random holds ----------- */

#define RANDOM_MAX_SAMPLES 16384

struct random_shared {
	atomic_int ready;
	atomic_int go;
	atomic_int holders; /* must never exceed 1 */
	atomic_int violations;
	int64_t end_ns;
	int64_t wait_ms;
	int max_hold_ms;
};

struct random_worker {
	long long acq;      /* acquisitions */
	long long timeouts; /* acquires that gave up after wait_ms */
	long long nwait;    /* wait samples (timed-out waits included) */
	long long nhold;    /* hold intervals */
	int32_t wait_us[RANDOM_MAX_SAMPLES];
	int64_t hold_us[RANDOM_MAX_SAMPLES][2]; /* CLOCK_REALTIME µs */
};

static int64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void random_loop(struct random_shared *sh, struct random_worker *w,
                        unsigned seed)
{
	hl_client *c = new_client(0, 0);
	hl_lock *l = new_lock(c, "bench:random");

	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sleep_us(200);
	for (;;) {
		int64_t t0 = now_ns(), t1, a;
		int got = 0, rc, hold_us;

		if (t0 >= sh->end_ns)
			break;
		rc = hl_lock_try_acquire(&got, l, sh->wait_ms, g_lease_ms,
		                         NULL);
		if (rc != HL_OK)
			die("hl_lock_try_acquire", rc);
		t1 = now_ns();
		if (w->nwait < RANDOM_MAX_SAMPLES)
			w->wait_us[w->nwait++] = (int32_t)((t1 - t0) / 1000);
		if (!got) {
			w->timeouts++;
			continue;
		}
		a = wall_us();
		if (atomic_fetch_add(&sh->holders, 1) != 0)
			atomic_fetch_add(&sh->violations, 1);
		hold_us = (int)(rand_r(&seed) %
		                ((unsigned)sh->max_hold_ms * 1000u + 1u));
		sleep_us(hold_us);
		w->acq++;
		atomic_fetch_sub(&sh->holders, 1);
		if (w->nhold < RANDOM_MAX_SAMPLES) {
			w->hold_us[w->nhold][0] = a;
			w->hold_us[w->nhold][1] = wall_us();
			w->nhold++;
		}
		release(l);
	}
	hl_lock_free(l);
	hl_client_free(c);
}

/* W processes, a client each, loop: acquire with a wait of WAIT_MS,
 * hold a time drawn uniformly in 0..MAX_HOLD_MS, release, until SECONDS
 * have passed (an acquire begun before then is waited for). Prints every
 * worker's acquisitions, timeouts, waits and hold intervals (wall clock,
 * so run.py checks mutual exclusion across any processes, and merges
 * these with the other libraries' the same way). */
static int bench_random(double seconds, int workers, int max_hold_ms,
                        int64_t wait_ms)
{
	size_t size = sizeof(struct random_shared) +
	              (size_t)workers * sizeof(struct random_worker);
	struct random_shared *sh;
	struct random_worker *ws;
	int i, st;

	if (workers < 1 || max_hold_ms < 0 || wait_ms < 0)
		die_msg("random: bad arguments");
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die_msg("mmap failed");
	ws = (struct random_worker *)(sh + 1);
	sh->end_ns = INT64_MAX;
	sh->wait_ms = wait_ms;
	sh->max_hold_ms = max_hold_ms;
	for (i = 0; i < workers; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die_msg("fork failed");
		if (pid == 0) {
			random_loop(sh, &ws[i],
			            (unsigned)getpid() ^ (unsigned)now_ns());
			_exit(0);
		}
	}
	for (i = 0; i < 60000 && atomic_load(&sh->ready) < workers; i++)
		sleep_us(1000);
	if (atomic_load(&sh->ready) < workers)
		die_msg("workers did not start");
	window_mark("start");
	int64_t t0 = now_ns();
	sh->end_ns = t0 + (int64_t)(seconds * 1e9);
	atomic_store(&sh->go, 1);
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die_msg("a worker process failed");
	double elapsed = (double)(now_ns() - t0) / 1e9;
	window_mark("end");
	printf("{\"scenario\":\"random\",\"lang\":\"c\",\"lib\":\"hilock\","
	       "\"mode\":\"processes\",\"workers\":%d,\"max_hold_ms\":%d,"
	       "\"wait_ms\":%lld,\"elapsed_s\":%.3f,\"violations\":%d,"
	       "\"per_worker\":[",
	       workers, max_hold_ms, (long long)wait_ms, elapsed,
	       atomic_load(&sh->violations));
	for (i = 0; i < workers; i++) {
		struct random_worker *w = &ws[i];
		long long k;

		printf("%s{\"acq\":%lld,\"timeouts\":%lld,\"waits_us\":[",
		       i ? "," : "", w->acq, w->timeouts);
		for (k = 0; k < w->nwait; k++)
			printf("%s%d", k ? "," : "", w->wait_us[k]);
		printf("],\"holds_us\":[");
		for (k = 0; k < w->nhold; k++)
			printf("%s[%lld,%lld]", k ? "," : "",
			       (long long)w->hold_us[k][0],
			       (long long)w->hold_us[k][1]);
		printf("]}");
	}
	printf("]}\n");
	int bad = atomic_load(&sh->violations) != 0;
	munmap(sh, size);
	return bad;
}

/* ---- lock kinds: each against the floor of its own scripts -------------- */

/* The floor of one lock kind: raw hiredis, EVALSHA of the kind's acquire
 * and release scripts with the keys and arguments the core sends for it
 * (core/src/prim/lock.c, acquire_script() and release_script()): the
 * watchdog lease, the owner (owner:write for the write half), the hold
 * count, and for the fair lock the stale-waiter timeout and the wall
 * clock. */
struct kind_floor {
	int kind;
	char acq[41], rel[41];
	const char *name, *owner;
	char lease[16], fair_wait[24];
	char channel[300], aux0[300], aux1[300], field[128], prefix[400];
};

static int kind_is_fair(int kind)
{
	return kind == HL_LOCK_FAIR || kind == HL_LOCK_FAIR_NONREENTRANT;
}

/* The kinds whose waiters queue in hilock's line (core/src/prim/lock.c). */
static int kind_in_line(int kind)
{
	return kind == HL_LOCK_REENTRANT || kind == HL_LOCK_NONREENTRANT;
}

static int kind_is_rw(int kind)
{
	return kind == HL_LOCK_READ || kind == HL_LOCK_WRITE;
}

/* PROTOCOL 0.2: prefix + "{name}", or prefix + name when it has braces. */
static void derive_key(char *buf, size_t len, const char *prefix,
                       const char *name)
{
	snprintf(buf, len, strchr(name, '{') ? "%s%s" : "%s{%s}", prefix, name);
}

static void kind_floor_init(struct kind_floor *k, redisContext *c, int kind,
                            const char *name)
{
	enum hl_script_id acq = HL_SCRIPT_ACQUIRE, rel = HL_SCRIPT_RELEASE;

	memset(k, 0, sizeof(*k));
	k->kind = kind;
	k->name = name;
	k->owner = "00000000-0000-4000-8000-000000000000:1";
	snprintf(k->lease, sizeof(k->lease), "%d", LEASE_MS);
	/* hl_lock_acquire() waits without a deadline: the fair lock's queue
	 * deadline is then the client's fair_wait_timeout_ms (default) */
	snprintf(k->fair_wait, sizeof(k->fair_wait), "%d", 300000);
	derive_key(k->channel, sizeof(k->channel),
	           kind_is_rw(kind) ? "redisson_rwlock:"
	                            : "redisson_lock__channel:",
	           name);
	snprintf(k->field, sizeof(k->field), "%s:write", k->owner);
	if (kind_is_fair(kind)) {
		acq = HL_SCRIPT_FAIR_ACQUIRE;
		rel = HL_SCRIPT_FAIR_RELEASE;
		derive_key(k->aux0, sizeof(k->aux0),
		           "redisson_lock_queue:", name);
		derive_key(k->aux1, sizeof(k->aux1),
		           "redisson_lock_timeout:", name);
	} else if (kind == HL_LOCK_FENCED) {
		acq = HL_SCRIPT_FENCED_ACQUIRE;
		derive_key(k->aux0, sizeof(k->aux0),
		           "redisson_lock_token:", name);
	} else if (kind == HL_LOCK_READ) {
		acq = HL_SCRIPT_READ_ACQUIRE;
		rel = HL_SCRIPT_READ_RELEASE;
		derive_key(k->aux0, sizeof(k->aux0), "", name); /* {name} */
		snprintf(k->prefix, sizeof(k->prefix), "%s:%s:rwlock_timeout",
		         k->aux0, k->owner);
	} else if (kind == HL_LOCK_WRITE) {
		acq = HL_SCRIPT_WRITE_ACQUIRE;
		rel = HL_SCRIPT_WRITE_RELEASE;
	} else if (kind_in_line(kind)) {
		/* the default lock's waiting line (nobody waits here) */
		acq = HL_SCRIPT_LINE_ACQUIRE;
		rel = HL_SCRIPT_LINE_RELEASE;
		derive_key(k->aux0, sizeof(k->aux0), "hilock_line:", name);
		derive_key(k->aux1, sizeof(k->aux1),
		           "hilock_line_timeout:", name);
	}
	load_sha(c, acq, k->acq);
	load_sha(c, rel, k->rel);
}

/* Wall-clock ms as text: the fair lock's deadlines are client clocks. */
static const char *wall_ms_str(char *buf)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(buf, 24, "%lld",
	         (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	return buf;
}

static void kind_floor_pair(redisContext *c, struct kind_floor *k)
{
	const char *a[16], *u[16];
	char now[24];
	int na = 0, nu = 0;
	redisReply *r;

	a[na++] = u[nu++] = "EVALSHA";
	a[na++] = k->acq;
	u[nu++] = k->rel;
	if (kind_is_fair(k->kind)) {
		const char *aa[] = {"3",          k->name,          k->aux0,
		                    k->aux1,      k->lease,         k->owner,
		                    k->fair_wait, wall_ms_str(now), "1",
		                    "1"};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	} else if (k->kind == HL_LOCK_FENCED) {
		const char *aa[] = {"2",      k->name,  k->aux0,
		                    k->lease, k->owner, "1"};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	} else if (k->kind == HL_LOCK_READ) {
		const char *aa[] = {"2",      k->name,  k->prefix, k->lease,
		                    k->owner, k->field, "1"};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	} else if (k->kind == HL_LOCK_WRITE) {
		const char *aa[] = {"1", k->name, k->lease, k->field, "1"};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	} else if (kind_in_line(k->kind)) {
		/* the client's id is the owner's first 36 characters */
		static char id[37];
		memcpy(id, k->owner, 36);
		const char *aa[] = {"1", k->name, k->lease, k->owner,
		                    "1", "1",     "3000",   "PUBLISH",
		                    id,  k->aux0, k->aux1};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	} else {
		const char *aa[] = {"1", k->name, k->lease, k->owner, "1"};
		memcpy(a + na, aa, sizeof(aa));
		na += (int)(sizeof(aa) / sizeof(aa[0]));
	}
	r = raw_cmd(c, na, a);
	if (r->type != REDIS_REPLY_ARRAY)
		die_msg("kind floor: the acquire script did not acquire");
	freeReplyObject(r);

	if (kind_is_fair(k->kind)) {
		const char *uu[] = {"4",       k->name,    k->aux0,
		                    k->aux1,   k->channel, "0",
		                    k->lease,  k->owner,   wall_ms_str(now),
		                    "PUBLISH", "1"};
		memcpy(u + nu, uu, sizeof(uu));
		nu += (int)(sizeof(uu) / sizeof(uu[0]));
	} else if (k->kind == HL_LOCK_READ) {
		const char *uu[] = {"4",       k->name,   k->channel,
		                    k->prefix, k->aux0,   "0",
		                    k->owner,  "PUBLISH", "1"};
		memcpy(u + nu, uu, sizeof(uu));
		nu += (int)(sizeof(uu) / sizeof(uu[0]));
	} else if (k->kind == HL_LOCK_WRITE) {
		const char *uu[] = {"2",      k->name,  k->channel, "1",
		                    k->lease, k->field, "PUBLISH",  "1"};
		memcpy(u + nu, uu, sizeof(uu));
		nu += (int)(sizeof(uu) / sizeof(uu[0]));
	} else if (kind_in_line(k->kind)) {
		const char *uu[] = {"2",      k->name,  k->channel, "0",
		                    k->lease, k->owner, "PUBLISH",  "1",
		                    k->aux0,  k->aux1};
		memcpy(u + nu, uu, sizeof(uu));
		nu += (int)(sizeof(uu) / sizeof(uu[0]));
	} else {
		/* the spin lock publishes nothing */
		const char *uu[] = {
		        "2",        k->name,
		        k->channel, k->kind == HL_LOCK_SPIN ? "" : "0",
		        k->lease,   k->owner,
		        "PUBLISH",  "1"};
		memcpy(u + nu, uu, sizeof(uu));
		nu += (int)(sizeof(uu) / sizeof(uu[0]));
	}
	r = raw_cmd(c, nu, u);
	/* released: {1, subscribers the unlock message reached} (and the
	 * line's ticket told) */
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->integer != 1)
		die_msg("kind floor: the release script did not release");
	freeReplyObject(r);
}

/* One kind: its floor and hl_lock_new_kind() lock+unlock pairs in
 * alternating 100 ms slices on the same lock (bench_paired's are 5 ms
 * since (1) was measured so; (9) still in 100 ms), after 300 ms of each to
 * warm up, with the ratio of every 2 s window. */
static int bench_kind_paired(double seconds, int kind)
{
	redisContext *raw = raw_connect();
	hl_client *c = new_client(0, 0);
	char name[64];
	struct kind_floor k;
	hl_lock *l;
	const int64_t slice = 100000000;
	long long nf = 0, nh = 0, wf = 0, wh = 0;
	int64_t tf = 0, th = 0, wtf = 0, wth = 0, end, t0, t;
	double ratios[128];
	int nr = 0, slices = 0;

	snprintf(name, sizeof(name), "bench:kind:%s", hl_lock_kind_name(kind));
	kind_floor_init(&k, raw, kind, name);
	l = new_lock_kind(c, kind, name);
	end = now_ns() + 300000000;
	while (now_ns() < end)
		kind_floor_pair(raw, &k);
	end = now_ns() + 300000000;
	while (now_ns() < end) {
		acquire(l);
		release(l);
	}
	end = now_ns() + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		long long n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			kind_floor_pair(raw, &k);
			n++;
		}
		nf += n;
		wf += n;
		tf += t - t0;
		wtf += t - t0;
		n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			acquire(l);
			release(l);
			n++;
		}
		nh += n;
		wh += n;
		th += t - t0;
		wth += t - t0;
		if (++slices % 10 == 0 && nr < 128 && wf && wtf && wth) {
			ratios[nr++] = ((double)wh / (double)wth) /
			               ((double)wf / (double)wtf);
			wf = wh = 0;
			wtf = wth = 0;
		}
	}
	printf("{\"scenario\":\"kind-paired\",\"kind\":\"%s\","
	       "\"floor_pairs_per_s\":%.1f,\"hilock_pairs_per_s\":%.1f,"
	       "\"window_ratios\":[",
	       hl_lock_kind_name(kind), nf * 1e9 / (double)tf,
	       nh * 1e9 / (double)th);
	for (int i = 0; i < nr; i++)
		printf("%s%.3f", i ? "," : "", ratios[i]);
	printf("]}\n");
	hl_lock_free(l);
	hl_client_free(c);
	redisFree(raw);
	return 0;
}

/* ---- readers: R readers of one read-write lock, together ---------------- */

/* Shared between the readers (MAP_SHARED, so processes see it too). */
struct readers_shared {
	atomic_int ready;
	atomic_int go;
	atomic_int holders;     /* read holds now */
	atomic_int max_holders; /* the most at once */
	int64_t start_ns, end_ns;
	int cs_us;
};

struct reader {
	long long count;     /* read acquisitions */
	long long nwait;     /* wait samples */
	long long cs_ns_sum; /* time held */
	int32_t wait_us[MAX_SAMPLES];
};

static void readers_loop(struct readers_shared *sh, struct reader *w,
                         hl_client *c)
{
	hl_lock *l = new_lock_kind(c, HL_LOCK_READ, "bench:readers");

	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sleep_us(200);
	for (;;) {
		int64_t t0 = now_ns(), t1, t2;
		int n, m;

		if (t0 >= sh->end_ns)
			break;
		acquire(l);
		t1 = now_ns();
		n = atomic_fetch_add(&sh->holders, 1) + 1;
		m = atomic_load(&sh->max_holders);
		while (n > m &&
		       !atomic_compare_exchange_weak(&sh->max_holders, &m, n))
			;
		if (w->nwait < MAX_SAMPLES)
			w->wait_us[w->nwait++] = (int32_t)((t1 - t0) / 1000);
		sleep_us(sh->cs_us);
		t2 = now_ns();
		w->cs_ns_sum += t2 - t1;
		w->count++;
		atomic_fetch_sub(&sh->holders, 1);
		release(l);
	}
	hl_lock_free(l);
}

struct readers_thread_arg {
	struct readers_shared *sh;
	struct reader *w;
	hl_client *c;
};

static void *readers_thread(void *p)
{
	struct readers_thread_arg *a = p;
	readers_loop(a->sh, a->w, a->c);
	return NULL;
}

/* R readers loop read-acquire, CS_US, release on one read-write lock (the
 * watchdog; threads share one client, processes have one each). Besides
 * the read acquisitions per second: how many held at once, counted in
 * the readers (the mean by Little's law: time held / elapsed; the most
 * at once) and seen in Redis (HLEN of the lock's hash less its mode
 * field, sampled every 2 ms from another connection). */
static int bench_readers(double seconds, int readers, const char *mode,
                         int cs_us)
{
	size_t size = sizeof(struct readers_shared) +
	              (size_t)readers * sizeof(struct reader);
	int processes = strcmp(mode, "processes") == 0;
	struct readers_shared *sh;
	struct reader *ws;
	hl_client *c = NULL;
	pthread_t *tids = NULL;
	struct readers_thread_arg *targs = NULL;
	redisContext *raw = raw_connect();
	long long hlen_n = 0, hlen_sum = 0, hlen_max = 0;
	int i;

	sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die_msg("mmap failed");
	ws = (struct reader *)(sh + 1);
	sh->cs_us = cs_us;
	sh->end_ns = INT64_MAX;
	if (processes) {
		for (i = 0; i < readers; i++) {
			pid_t pid = fork();
			if (pid < 0)
				die_msg("fork failed");
			if (pid == 0) {
				hl_client *cc = new_client(0, 0);
				readers_loop(sh, &ws[i], cc);
				hl_client_free(cc);
				_exit(0);
			}
		}
	} else {
		c = new_client(0, 0);
		tids = calloc((size_t)readers, sizeof(*tids));
		targs = calloc((size_t)readers, sizeof(*targs));
		if (tids == NULL || targs == NULL)
			die_msg("out of memory");
		for (i = 0; i < readers; i++) {
			targs[i] = (struct readers_thread_arg){sh, &ws[i], c};
			pthread_create(&tids[i], NULL, readers_thread,
			               &targs[i]);
		}
	}
	for (i = 0; i < 60000 && atomic_load(&sh->ready) < readers; i++)
		sleep_us(1000);
	if (atomic_load(&sh->ready) < readers)
		die_msg("readers did not start");
	sh->start_ns = now_ns();
	sh->end_ns = sh->start_ns + (int64_t)(seconds * 1e9);
	atomic_store(&sh->go, 1);
	/* the Redis side, while they run */
	while (now_ns() < sh->end_ns) {
		redisReply *r = redisCommand(raw, "HLEN bench:readers");
		if (r == NULL || r->type != REDIS_REPLY_INTEGER)
			die_msg("HLEN failed");
		if (r->integer > 0) { /* the mode field, then one per reader */
			hlen_sum += r->integer - 1;
			if (r->integer - 1 > hlen_max)
				hlen_max = r->integer - 1;
		}
		hlen_n++;
		freeReplyObject(r);
		sleep_us(2000);
	}
	if (processes) {
		int st;
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				die_msg("a reader process failed");
	} else {
		for (i = 0; i < readers; i++)
			pthread_join(tids[i], NULL);
	}
	double elapsed = (double)(now_ns() - sh->start_ns) / 1e9;

	long long total = 0, nwait = 0, k = 0, mn = -1, mx = 0, cs_sum = 0;
	for (i = 0; i < readers; i++) {
		total += ws[i].count;
		nwait += ws[i].nwait;
		cs_sum += ws[i].cs_ns_sum;
		if (mn < 0 || ws[i].count < mn)
			mn = ws[i].count;
		if (ws[i].count > mx)
			mx = ws[i].count;
	}
	int32_t *wv = malloc((size_t)(nwait + 1) * sizeof(int32_t));
	if (wv == NULL)
		die_msg("out of memory");
	for (i = 0; i < readers; i++) {
		memcpy(wv + k, ws[i].wait_us, (size_t)ws[i].nwait * 4);
		k += ws[i].nwait;
	}
	qsort(wv, (size_t)nwait, sizeof(int32_t), cmp_i32);
	printf("{\"scenario\":\"readers\",\"lang\":\"c\",\"lib\":\"hilock\","
	       "\"mode\":\"%s\",\"readers\":%d,\"cs_us\":%d,"
	       "\"acq_per_s\":%.1f,\"cs_mean_us\":%.1f,"
	       "\"held_mean\":%.2f,\"held_max\":%d,"
	       "\"hlen_mean\":%.2f,\"hlen_max\":%lld,\"hlen_samples\":%lld,"
	       "\"wait_p50_us\":%.0f,\"wait_p99_us\":%.0f,"
	       "\"wait_max_us\":%.0f,\"fair_min\":%lld,\"fair_max\":%lld}\n",
	       mode, readers, cs_us, total / elapsed,
	       total ? cs_sum / 1000.0 / total : 0.0,
	       (double)cs_sum / 1e9 / elapsed, atomic_load(&sh->max_holders),
	       hlen_n ? (double)hlen_sum / (double)hlen_n : 0.0, hlen_max,
	       hlen_n, pct(wv, nwait, 0.5), pct(wv, nwait, 0.99),
	       nwait ? (double)wv[nwait - 1] : 0.0, mn, mx);
	free(wv);
	free(tids);
	free(targs);
	hl_client_free(c);
	redisFree(raw);
	munmap(sh, size);
	return 0;
}

/* ---- watchdog: N held locks, renewal round trips and CPU ---------------- */

/* send(2) calls of the watchdog thread. The core writes with send() (for
 * MSG_NOSIGNAL), which /proc's syscw does not count, so this program
 * interposes send() itself: the library's calls resolve to this definition
 * first. Every round trip needs at least one send, so the count bounds the
 * round trips from above. */
static atomic_llong g_wd_sends;

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);
	static __thread int is_wd = -1;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "send");
	if (is_wd < 0) {
		char name[32] = "";
		pthread_getname_np(pthread_self(), name, sizeof(name));
		is_wd = strstr(name, "watchdog") != NULL;
	}
	if (is_wd)
		atomic_fetch_add(&g_wd_sends, 1);
	return real(fd, buf, len, flags);
}

/* CPU seconds (user + system) of this process's threads whose name
 * contains "watch" or "wd" (the core names its watchdog thread), and the
 * watchdog's send(2) calls so far in *syscw. */
static double watchdog_cpu(char *found, size_t found_len, long long *syscw)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	double total = -1;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], comm[64] = "", buf[1024];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		         e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		if (strstr(comm, "watch") == NULL && strstr(comm, "wd") == NULL)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat",
		         e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) != NULL) {
			/* Fields after the ")" of comm: state is 3rd, utime
			 * 14th, stime 15th. */
			const char *p = strrchr(buf, ')');
			unsigned long long ut = 0, st = 0;
			if (p && sscanf(p + 2,
			                "%*c %*d %*d %*d %*d %*d %*u %*u "
			                "%*u %*u %*u %llu %llu",
			                &ut, &st) == 2) {
				total = (total < 0 ? 0 : total) +
				        (double)(ut + st) /
				                (double)sysconf(_SC_CLK_TCK);
				snprintf(found, found_len, "%s", comm);
			}
		}
		fclose(f);
	}
	closedir(d);
	*syscw = atomic_load(&g_wd_sends);
	return total;
}

static double process_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench_watchdog(int n, int periods, int64_t wd_ms)
{
	hl_client *c = new_client(wd_ms, 0);
	redisContext *raw = raw_connect();
	hl_lock **locks = calloc((size_t)n, sizeof(*locks));
	char name[64], thread_name[64] = "";
	int i, kept = 0;
	int64_t period_ns = wd_ms * 1000000 / 3;

	if (locks == NULL)
		die_msg("out of memory");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "bench:wd:%d", i);
		locks[i] = new_lock(c, name);
		acquire(locks[i]);
	}
	/* Let one renewal period pass so the schedule is steady. */
	sleep_us((int)(period_ns / 1000));
	long long calls0 = evalsha_calls(raw);
	long long cmds0 = info_field(raw, "stats", "total_commands_processed");
	long long w0 = 0, w1 = 0;
	double cpu0 = watchdog_cpu(thread_name, sizeof(thread_name), &w0);
	double pcpu0 = process_cpu();
	int64_t t0 = now_ns();
	sleep_us((int)(periods * period_ns / 1000));
	double el = (double)(now_ns() - t0) / 1e9;
	long long calls1 = evalsha_calls(raw);
	long long cmds1 = info_field(raw, "stats", "total_commands_processed");
	double cpu1 = watchdog_cpu(thread_name, sizeof(thread_name), &w1);
	double pcpu1 = process_cpu();
	double nper = el / ((double)period_ns / 1e9);
	/* commands_per_period leaves out the 3 INFO commands of this very
	 * measurement (they fall between the two total_commands_processed). */

	/* Every lock must still be there with a fresh lease: the oldest was
	 * taken more than one lease ago, so without renewals it would be gone.
	 */
	for (i = 0; i < n; i++) {
		char key[64];
		redisReply *r;
		snprintf(key, sizeof(key), "bench:wd:%d", i);
		r = redisCommand(raw, "PTTL %s", key);
		if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
			kept++;
		freeReplyObject(r);
	}
	printf("{\"scenario\":\"watchdog\",\"locks\":%d,\"watchdog_ms\":%lld,"
	       "\"periods\":%.2f,\"evalsha_per_period\":%.1f,"
	       "\"commands_per_period\":%.1f,\"wd_writes_per_period\":%.1f,"
	       "\"wd_thread\":\"%s\","
	       "\"wd_cpu_ms_per_period\":%.2f,\"process_cpu_ms_per_period\":%."
	       "2f,"
	       "\"still_held\":%d}\n",
	       n, (long long)wd_ms, nper, (calls1 - calls0) / nper,
	       (cmds1 - cmds0 - 3) / nper, (double)(w1 - w0) / nper,
	       thread_name, cpu0 >= 0 ? (cpu1 - cpu0) * 1000 / nper : -1.0,
	       (pcpu1 - pcpu0) * 1000 / nper, kept);
	for (i = 0; i < n; i++) {
		release(locks[i]);
		hl_lock_free(locks[i]);
	}
	free(locks);
	redisFree(raw);
	hl_client_free(c);
	return kept == n ? 0 : 1;
}

/* ---- memory: per held lock and per waiter ------------------------------- */

static long long heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (long long)mi.uordblks + (long long)mi.hblkhd;
}

struct waiter_arg {
	hl_lock *l;
	atomic_int *entered;
};

static void *waiter_thread(void *p)
{
	struct waiter_arg *a = p;
	atomic_fetch_add(a->entered, 1);
	acquire(a->l);
	release(a->l);
	return NULL;
}

static int bench_memory(int n, int waiters)
{
	hl_client *c = new_client(0, 0);
	redisContext *raw = raw_connect();
	hl_lock **locks = calloc((size_t)n, sizeof(*locks));
	pthread_t *tids = calloc((size_t)waiters, sizeof(*tids));
	struct waiter_arg wa;
	atomic_int entered = 0;
	char name[64];
	int i;

	if (locks == NULL || tids == NULL)
		die_msg("out of memory");
	/* Handles first: their cost is the handle's, not the hold's. */
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "bench:mem:%d", i);
		locks[i] = new_lock(c, name);
	}
	long long r0 = info_field(raw, "memory", "used_memory");
	long long h0 = heap_in_use();
	for (i = 0; i < n; i++)
		acquire(locks[i]);
	long long h1 = heap_in_use();
	long long r1 = info_field(raw, "memory", "used_memory");

	/* Waiters: threads blocked on lock 0, which we hold. */
	wa.l = locks[0];
	wa.entered = &entered;
	long long wr0 = info_field(raw, "memory", "used_memory");
	long long wh0 = heap_in_use();
	for (i = 0; i < waiters; i++)
		pthread_create(&tids[i], NULL, waiter_thread, &wa);
	for (i = 0; i < 10000 && atomic_load(&entered) < waiters; i++)
		sleep_us(1000);
	sleep_us(500000); /* let them reach their wait */
	long long wh1 = heap_in_use();
	long long wr1 = info_field(raw, "memory", "used_memory");
	for (i = 0; i < n; i++)
		release(locks[i]);
	for (i = 0; i < waiters; i++)
		pthread_join(tids[i], NULL);

	printf("{\"scenario\":\"memory\",\"locks\":%d,\"waiters\":%d,"
	       "\"redis_bytes_per_lock\":%.1f,\"client_heap_bytes_per_lock\":%."
	       "1f,"
	       "\"redis_bytes_per_waiter\":%.1f,"
	       "\"client_heap_bytes_per_waiter\":%.1f}\n",
	       n, waiters, (double)(r1 - r0) / n, (double)(h1 - h0) / n,
	       (double)(wr1 - wr0) / waiters, (double)(wh1 - wh0) / waiters);
	for (i = 0; i < n; i++)
		hl_lock_free(locks[i]);
	free(locks);
	free(tids);
	redisFree(raw);
	hl_client_free(c);
	return 0;
}

/* ---- faults: the fault proxy between the client and Redis ---------------- */

struct proxy {
	pid_t pid;
	FILE *in, *out;
	char url[64];
};

static void proxy_cmd(struct proxy *p, const char *cmd)
{
	char line[128];
	fprintf(p->in, "%s\n", cmd);
	fflush(p->in);
	if (!fgets(line, sizeof(line), p->out) || strncmp(line, "ok", 2) != 0)
		die_msg("faultproxy did not answer ok");
}

static void proxy_start(struct proxy *p, const char *bin, int upstream)
{
	int to[2], from[2], port = 0;
	char arg[16], line[64];
	if (pipe(to) || pipe(from))
		die_msg("pipe");
	snprintf(arg, sizeof(arg), "%d", upstream);
	p->pid = fork();
	if (p->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl(bin, bin, arg, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->in = fdopen(to[1], "w");
	p->out = fdopen(from[0], "r");
	if (!fgets(line, sizeof(line), p->out) ||
	    sscanf(line, "port %d", &port) != 1)
		die_msg("faultproxy did not start");
	snprintf(p->url, sizeof(p->url), "redis://127.0.0.1:%d", port);
}

static void proxy_stop(struct proxy *p)
{
	fclose(p->in); /* EOF: it exits */
	fclose(p->out);
	waitpid(p->pid, NULL, 0);
}

/* Seconds of CPU the Redis server used (INFO cpu: user + system). */
static double redis_cpu_s(redisContext *c)
{
	redisReply *r = redisCommand(c, "INFO cpu");
	double v = 0;
	const char *keys[] = {"\nused_cpu_sys:", "\nused_cpu_user:"};
	if (r == NULL || r->type != REDIS_REPLY_STRING)
		die_msg("INFO failed");
	for (int i = 0; i < 2; i++) {
		const char *p = strstr(r->str, keys[i]);
		if (p)
			v += strtod(p + strlen(keys[i]), NULL);
	}
	freeReplyObject(r);
	return v;
}

/* User + system CPU seconds of getrusage(who). */
static double rusage_s(int who)
{
	struct rusage u;
	getrusage(who, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_series(const char *key, int64_t *v, int n, int last)
{
	int i;
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	printf("\"%s\":[", key);
	for (i = 0; i < n; i++)
		printf("%s%lld", i ? "," : "", (long long)v[i]);
	printf("]%s", last ? "" : ",");
}

static int bench_faults(const char *bin, int trials, int64_t wd_ms)
{
	redisContext *raw = raw_connect();
	int upstream = 0, i;
	int64_t margin[64], acq1[64], acq0[64], lost_release[64];
	const char *port = strrchr(g_url, ':');
	if (!port || trials < 1 || trials > 64)
		die_msg("faults: bad arguments");
	upstream = atoi(port + 1);
	for (i = 0; i < trials; i++) {
		struct proxy p;
		hl_client_options o;
		hl_client *c;
		hl_lock *l;
		int lost = 0, acquired = 0;
		int64_t t0;
		redisReply *r;
		proxy_start(&p, bin, upstream);
		hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
		o.watchdog_timeout_ms = wd_ms;
		if (hl_client_new(&c, p.url, &o) != HL_OK)
			die("faults: connect", hl_error_last_code());
		if (hl_lock_new(&l, c, "bench:faults", 12) != HL_OK)
			die("faults: lock", hl_error_last_code());
		/* (a) the holder's path goes silent */
		if (hl_lock_acquire(l, -1, NULL) != HL_OK)
			die("faults: acquire", hl_error_last_code());
		proxy_cmd(&p, "blackhole on");
		if (hl_lock_wait_lost(&lost, l, 3 * wd_ms, NULL) != HL_OK ||
		    !lost)
			die_msg("faults: the loss was not told");
		r = redisCommand(raw, "PTTL bench:faults");
		margin[i] = r ? r->integer : -3;
		freeReplyObject(r);
		t0 = now_ns();
		hl_lock_release(NULL, l); /* HL_ELOST, no round trip */
		lost_release[i] = (now_ns() - t0) / 1000;
		/* (b) a timed acquire and a single attempt in the black hole */
		t0 = now_ns();
		hl_lock_try_acquire(&acquired, l, 1000, -1, NULL);
		acq1[i] = (now_ns() - t0) / 1000000;
		t0 = now_ns();
		hl_lock_try_acquire(&acquired, l, 0, -1, NULL);
		acq0[i] = (now_ns() - t0) / 1000000;
		proxy_cmd(&p, "blackhole off");
		hl_lock_free(l);
		hl_client_free(c);
		proxy_stop(&p);
		freeReplyObject(redisCommand(raw, "DEL bench:faults"));
	}
	printf("{\"scenario\":\"faults\",\"watchdog_ms\":%lld,\"margin_"
	       "ms\":%lld,",
	       (long long)wd_ms, (long long)(wd_ms / 10));
	print_series("lost_before_lease_end_ms", margin, trials, 0);
	print_series("release_of_lost_us", lost_release, trials, 0);
	print_series("acquire_wait_1000_ms", acq1, trials, 0);
	print_series("acquire_wait_0_ms", acq0, trials, 1);
	printf("}\n");
	redisFree(raw);
	return 0;
}

/* ---- the topologies: the floor's connection, plain or TLS ---------------- */

/* One connection of the floor: hiredis over TCP, or a minimal blocking
 * OpenSSL client feeding a hiredis reader (Debian's hiredis 0.14 has no
 * TLS). Commands are appended and written at once when the first reply is
 * read, so a pipeline costs one round trip, as in the core. */
struct floorc {
	redisContext *plain;
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
	redisReader *rd;
	char *out;
	size_t out_len, out_cap;
};

static void ssl_die(const char *what)
{
	char buf[256] = "?";
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	fprintf(stderr, "hlbench: %s: %s\n", what, buf);
	exit(1);
}

/* "host:port" (or a URL's "//host:port") into host and *port. */
static void parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
	const char *p = strstr(s, "//"), *colon, *end;
	p = p ? p + 2 : s;
	if (strchr(p, '@'))
		p = strchr(p, '@') + 1;
	end = p + strcspn(p, "/,?");
	colon = memchr(p, ':', (size_t)(end - p));
	if (!colon)
		die_msg("expected host:port");
	snprintf(host, hostlen, "%.*s", (int)(colon - p), p);
	*port = atoi(colon + 1);
}

static void floor_open_plain(struct floorc *f, const char *host, int port)
{
	memset(f, 0, sizeof(*f));
	f->plain = redisConnect(host, port);
	if (f->plain == NULL || f->plain->err)
		die_msg("floor: cannot connect with hiredis");
}

/* read_ahead 0: OpenSSL's default, a read(2) for each record's header
 * and another for its body; 1: one read(2) for as much as has arrived. */
static void floor_open_tls(struct floorc *f, const char *host, int port,
                           const char *ca_file, int read_ahead)
{
	struct sockaddr_in a;
	int one = 1;

	memset(f, 0, sizeof(*f));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die_msg("tls floor: an IPv4 address is expected");
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->fd < 0 || connect(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die_msg("tls floor: cannot connect");
	/* as hiredis and the core do */
	setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	f->ctx = SSL_CTX_new(TLS_client_method());
	if (f->ctx == NULL)
		ssl_die("SSL_CTX_new");
	SSL_CTX_set_min_proto_version(f->ctx, TLS1_2_VERSION);
	if (SSL_CTX_load_verify_locations(f->ctx, ca_file, NULL) != 1)
		ssl_die("tls floor: loading the CA");
	SSL_CTX_set_verify(f->ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_read_ahead(f->ctx, read_ahead);
	f->ssl = SSL_new(f->ctx);
	if (f->ssl == NULL || SSL_set_fd(f->ssl, f->fd) != 1)
		ssl_die("SSL_new");
	/* verify the certificate's IP address, as the core does */
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(f->ssl), host);
	if (SSL_connect(f->ssl) != 1)
		ssl_die("tls floor: handshake");
	f->rd = redisReaderCreate();
	if (f->rd == NULL)
		die_msg("out of memory");
}

static void floor_close(struct floorc *f)
{
	if (f->plain)
		redisFree(f->plain);
	if (f->ssl) {
		SSL_shutdown(f->ssl);
		SSL_free(f->ssl);
		close(f->fd);
	}
	if (f->ctx)
		SSL_CTX_free(f->ctx);
	if (f->rd)
		redisReaderFree(f->rd);
	free(f->out);
}

static void floor_append(struct floorc *f, int argc, const char **argv)
{
	char *cmd;
	int n;
	if (f->plain) {
		if (redisAppendCommandArgv(f->plain, argc, argv, NULL) !=
		    REDIS_OK)
			die_msg("out of memory");
		return;
	}
	n = redisFormatCommandArgv(&cmd, argc, argv, NULL);
	if (n < 0)
		die_msg("out of memory");
	if (f->out_len + (size_t)n > f->out_cap) {
		f->out_cap = (f->out_len + (size_t)n) * 2;
		f->out = realloc(f->out, f->out_cap);
		if (f->out == NULL)
			die_msg("out of memory");
	}
	memcpy(f->out + f->out_len, cmd, (size_t)n);
	f->out_len += (size_t)n;
	redisFreeCommand(cmd);
}

/* The next reply; an error reply ends the program (as raw_cmd). */
static redisReply *floor_reply(struct floorc *f)
{
	void *r = NULL;
	if (f->plain) {
		if (redisGetReply(f->plain, &r) != REDIS_OK || r == NULL)
			die_msg("floor: redis connection failed");
	} else {
		if (f->out_len) {
			/* blocking, no partial writes: all or an error */
			if (SSL_write(f->ssl, f->out, (int)f->out_len) !=
			    (int)f->out_len)
				ssl_die("tls floor: SSL_write");
			f->out_len = 0;
		}
		for (;;) {
			char buf[16384];
			int n;
			if (redisReaderGetReply(f->rd, &r) != REDIS_OK)
				die_msg("tls floor: protocol error");
			if (r)
				break;
			n = SSL_read(f->ssl, buf, sizeof(buf));
			if (n <= 0)
				ssl_die("tls floor: SSL_read");
			redisReaderFeed(f->rd, buf, (size_t)n);
		}
	}
	if (((redisReply *)r)->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "hlbench: redis error: %s\n",
		        ((redisReply *)r)->str);
		exit(1);
	}
	return r;
}

static redisReply *floor_cmd(struct floorc *f, int argc, const char **argv)
{
	floor_append(f, argc, argv);
	return floor_reply(f);
}

/* The lock the floor takes and gives back, as the core would send it. */
struct floor_lock {
	char acq[41], rel[41], lease[16], waitn[16], channel[300];
	const char *name, *owner, *publish;
	int wait; /* replicas WAITed for after each script; 0: no WAIT */
	long long wait_short; /* WAITs answered with fewer replicas */
};

static void floor_lock_init(struct floor_lock *fl, struct floorc *f,
                            const char *name, const char *publish, int wait)
{
	enum hl_script_id ids[2] = {HL_SCRIPT_ACQUIRE, HL_SCRIPT_RELEASE};
	char *shas[2] = {fl->acq, fl->rel};
	int i;

	memset(fl, 0, sizeof(*fl));
	for (i = 0; i < 2; i++) {
		const char *argv[3] = {"SCRIPT", "LOAD",
		                       hl__script(ids[i])->source};
		redisReply *r = floor_cmd(f, 3, argv);
		snprintf(shas[i], 41, "%s", r->str);
		freeReplyObject(r);
	}
	fl->name = name;
	fl->owner = "00000000-0000-4000-8000-000000000000:1";
	fl->publish = publish;
	fl->wait = wait;
	snprintf(fl->lease, sizeof(fl->lease), "%d", LEASE_MS);
	snprintf(fl->waitn, sizeof(fl->waitn), "%d", wait);
	/* PROTOCOL 0.2: prefix:{name}, or prefix:name when it has a tag */
	snprintf(fl->channel, sizeof(fl->channel),
	         strchr(name, '{') ? "redisson_lock__channel:%s"
	                           : "redisson_lock__channel:{%s}",
	         name);
}

/* One script (then WAIT, in the same round trip, when the lock waits for
 * replicas); returns the script's reply. */
static redisReply *floor_script(struct floorc *f, struct floor_lock *fl,
                                int argc, const char **argv)
{
	const char *w[3] = {"WAIT", fl->waitn, "1000"};
	redisReply *r;
	floor_append(f, argc, argv);
	if (fl->wait)
		floor_append(f, 3, w);
	r = floor_reply(f);
	if (fl->wait) {
		redisReply *wr = floor_reply(f);
		if (wr->type != REDIS_REPLY_INTEGER || wr->integer < fl->wait)
			fl->wait_short++;
		freeReplyObject(wr);
	}
	return r;
}

static void floor_pair(struct floorc *f, struct floor_lock *fl)
{
	/* the scripts set the hold count the caller will have */
	const char *a[] = {"EVALSHA", fl->acq,   "1", fl->name,
	                   fl->lease, fl->owner, "1"};
	const char *u[] = {"EVALSHA",   fl->rel, "2",       fl->name,
	                   fl->channel, "0",     fl->lease, fl->owner,
	                   fl->publish, "1"};
	redisReply *r = floor_script(f, fl, 7, a);
	if (r->type != REDIS_REPLY_ARRAY)
		die_msg("floor: acquire script did not acquire");
	freeReplyObject(r);
	r = floor_script(f, fl, 10, u);
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->integer != 1)
		die_msg("floor: release script did not release");
	freeReplyObject(r);
}

static hl_client *client_with(const hl_client_options *o)
{
	hl_client *c = NULL;
	int rc = hl_client_new(&c, g_url, o);
	if (rc != HL_OK)
		die("hl_client_new", rc);
	return c;
}

/* Floor and hilock in alternating 100 ms slices on the same lock (as
 * bench_paired, whose are 5 ms now), after 300 ms of each to warm up
 * (connections, scripts, the replica count). Besides the totals, the ratio of
 * every 2 s window (10 slices of each), to show how much the load moved. */
static int topo_paired(const char *scenario, struct floorc *f,
                       struct floor_lock *fl, hl_client *c, double seconds)
{
	hl_lock *l = new_lock(c, fl->name);
	const int64_t slice = 100000000;
	long long nf = 0, nh = 0, wf = 0, wh = 0;
	int64_t tf = 0, th = 0, wtf = 0, wth = 0, end, t0, t;
	double ratios[128];
	int nr = 0, slices = 0;

	end = now_ns() + 300000000;
	while (now_ns() < end)
		floor_pair(f, fl);
	end = now_ns() + 300000000;
	while (now_ns() < end) {
		acquire(l);
		release(l);
	}
	fl->wait_short = 0;
	end = now_ns() + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		long long n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			floor_pair(f, fl);
			n++;
		}
		nf += n;
		wf += n;
		tf += t - t0;
		wtf += t - t0;
		n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			acquire(l);
			release(l);
			n++;
		}
		nh += n;
		wh += n;
		th += t - t0;
		wth += t - t0;
		if (++slices % 10 == 0 && nr < 128 && wf && wtf && wth) {
			ratios[nr++] = ((double)wh / (double)wth) /
			               ((double)wf / (double)wtf);
			wf = wh = 0;
			wtf = wth = 0;
		}
	}
	printf("{\"scenario\":\"%s\",\"floor_pairs_per_s\":%.1f,"
	       "\"hilock_pairs_per_s\":%.1f,\"wait_replicas\":%d,"
	       "\"floor_wait_short\":%lld,\"window_ratios\":[",
	       scenario, nf * 1e9 / (double)tf, nh * 1e9 / (double)th, fl->wait,
	       fl->wait_short);
	for (int i = 0; i < nr; i++)
		printf("%s%.3f", i ? "," : "", ratios[i]);
	printf("]}\n");
	hl_lock_free(l);
	return 0;
}

/* The cluster: the floor on the master owning name's slot. */
static int bench_cluster_paired(double seconds, const char *owner_addr,
                                const char *name, int wait_opt)
{
	struct floorc f;
	struct floor_lock fl;
	hl_client_options o;
	hl_client *c;
	redisReply *r;
	char host[256];
	const char *publish = "PUBLISH";
	int port, wait = 0;

	parse_hostport(owner_addr, host, sizeof(host), &port);
	floor_open_plain(&f, host, port);
	/* Redis 7 has sharded pub/sub: a cluster client (as Redisson) then
	 * publishes the unlock message with SPUBLISH. (A redis:// URL of
	 * the owning node measures the same node without the router.) */
	if (strstr(g_url, "-cluster://")) {
		r = redisCommand(f.plain, "PUBSUB SHARDNUMSUB");
		if (r && r->type == REDIS_REPLY_ARRAY)
			publish = "SPUBLISH";
		freeReplyObject(r);
	}
	/* WAIT as the router: every connected replica of the master */
	if (wait_opt < 0)
		wait = (int)info_field(f.plain, "replication",
		                       "connected_slaves");
	else
		wait = wait_opt;
	if (wait < 0)
		wait = 0;
	floor_lock_init(&fl, &f, name, publish, wait);
	hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	o.client_name = "hlbench";
	o.wait_replicas = wait_opt;
	c = client_with(&o);
	topo_paired("cluster-paired", &f, &fl, c, seconds);
	hl_client_free(c);
	floor_close(&f);
	return 0;
}

/* TLS: the floor is our own OpenSSL client, on the server of the URL. */
static int bench_tls_paired(double seconds, const char *ca_file, int read_ahead)
{
	struct floorc f;
	struct floor_lock fl;
	hl_client_options o;
	hl_client *c;
	char host[256];
	int port;

	parse_hostport(g_url, host, sizeof(host), &port);
	floor_open_tls(&f, host, port, ca_file, read_ahead);
	floor_lock_init(&fl, &f, "bench:tls", "PUBLISH", 0);
	hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	o.client_name = "hlbench";
	o.tls_ca_file = ca_file;
	c = client_with(&o);
	topo_paired(read_ahead ? "tls-paired-readahead" : "tls-paired", &f, &fl,
	            c, seconds);
	hl_client_free(c);
	floor_close(&f);
	return 0;
}

/* ---- failover: from a master's kill -9 to the next acquisition --------- */

static atomic_llong g_kill_ns; /* CLOCK_MONOTONIC of the kill; 0: none */
static atomic_int g_stdin_eof;

static void *stdin_reader(void *arg)
{
	char line[128];
	(void)arg;
	while (fgets(line, sizeof(line), stdin)) {
		long long ns;
		if (sscanf(line, "kill %lld", &ns) == 1)
			atomic_store(&g_kill_ns, ns);
	}
	atomic_store(&g_stdin_eof, 1);
	return NULL;
}

/* The loop a user would run, with the client's defaults: try_acquire
 * (wait_ms, the watchdog), release, 1 ms pause; each time a fresh lock
 * name, so no hold of a failed release is re-entered. The first
 * acquisition after the kill that Redis's new master granted: one that
 * began after the kill (the old master is gone), or returned more than
 * 200 ms after it (no failover here is that quick: detection alone takes
 * a second or more, so a reply from the old master cannot be it). */
static int bench_failover(const char *prefix, int64_t wait_ms)
{
	hl_client *c = new_client(0, 0);
	pthread_t tid;
	char name[256], err[300] = "";
	long long i = 0, ok_before = 0, failed = 0;
	int64_t longest_acq = 0, longest_rel = 0;
	int ready = 0;

	if (pthread_create(&tid, NULL, stdin_reader, NULL) != 0)
		die_msg("pthread_create");
	pthread_detach(tid);
	for (;; i++) {
		hl_lock *l;
		int acquired = 0, rc;
		int64_t kill_ns, t0, t1, t2;

		if (atomic_load(&g_stdin_eof))
			die_msg("failover: stdin closed before a recovery");
		snprintf(name, sizeof(name), "%s:%lld", prefix, i);
		l = new_lock(c, name);
		t0 = now_ns();
		rc = hl_lock_try_acquire(&acquired, l, wait_ms, -1, NULL);
		t1 = now_ns();
		/* read after the call: it may have begun before the kill */
		kill_ns = atomic_load(&g_kill_ns);
		if (kill_ns && t1 > kill_ns && t1 - t0 > longest_acq)
			longest_acq = t1 - t0;
		if (rc == HL_OK && acquired && kill_ns &&
		    (t0 >= kill_ns || t1 - kill_ns > 200000000)) {
			printf("{\"scenario\":\"failover\",\"lib\":\"hilock\","
			       "\"first_ok_ms\":%.1f,"
			       "\"failed_after_kill\":%lld,"
			       "\"ok_before_kill\":%lld,"
			       "\"longest_acquire_ms\":%.1f,"
			       "\"longest_release_ms\":%.1f,\"last_error\":\"",
			       (double)(t1 - kill_ns) / 1e6, failed, ok_before,
			       (double)longest_acq / 1e6,
			       (double)longest_rel / 1e6);
			for (const char *p = err; *p; p++)
				if (*p != '"' && *p != '\\' &&
				    (unsigned char)*p >= 32)
					putchar(*p);
			printf("\"}\n");
			fflush(stdout);
			hl_lock_release(NULL, l);
			hl_lock_free(l);
			break;
		}
		if (rc == HL_OK && acquired) {
			if (!kill_ns)
				ok_before++;
			if (!ready) {
				printf("ready\n");
				fflush(stdout);
				ready = 1;
			}
			t1 = now_ns();
			hl_lock_release(NULL, l);
			t2 = now_ns();
			kill_ns = atomic_load(&g_kill_ns);
			if (kill_ns && t2 > kill_ns && t2 - t1 > longest_rel)
				longest_rel = t2 - t1;
		} else if (kill_ns) {
			failed++;
			snprintf(err, sizeof(err), "%s: %s",
			         rc == HL_OK ? "not acquired"
			                     : hl_status_name(rc),
			         rc == HL_OK ? "" : hl_error_last());
		}
		hl_lock_free(l);
		sleep_us(1000);
	}
	hl_client_free(c);
	return 0;
}

/* ---- synchronizers: semaphore, permit-expirable semaphore, latch -------- */

/* The floor of a synchronizer: raw hiredis, EVALSHA of the core's own
 * scripts with the keys and arguments core/src/prim/semaphore.c
 * (sem_call), expsem.c (take, id_call) and latch.c (latch_call) send: the
 * counter, the channel, for the permit-expirable semaphore its
 * {name}:timeout zset, and for the scripts that must not run twice a
 * fresh request marker hilock_request:{name}:<32 hex> with its lifetime
 * (the client's retry span, from the default options, as
 * hl__object_marker_ttl computes it). The floor's marker and permit ids
 * come from a cheap generator: unique is all they need to be. */
struct sync_floor {
	const char *what; /* semaphore | expsem | latch */
	char sha[2][41];
	char name[64], channel[128], aux[128], marker_ttl[24];
	char line[128], dl[128]; /* the semaphore's waiting line */
	char marker[200];
	size_t marker_prefix;
	uint64_t rng;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A fresh request marker in f->marker. */
static const char *floor_marker(struct sync_floor *f)
{
	static const char hex[] = "0123456789abcdef";
	char *p = f->marker + f->marker_prefix;
	for (int i = 0; i < 2; i++) {
		uint64_t v = xorshift(&f->rng);
		for (int j = 0; j < 16; j++, v >>= 4)
			*p++ = hex[v & 15];
	}
	*p = '\0';
	return f->marker;
}

static redisReply *raw_cmd_len(redisContext *c, int argc, const char **argv,
                               const size_t *lens)
{
	redisReply *r = redisCommandArgv(c, argc, argv, lens);
	if (r == NULL)
		die_msg("redis connection failed");
	if (r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "hlbench: redis error: %s\n", r->str);
		exit(1);
	}
	return r;
}

static void sync_floor_init(struct sync_floor *f, redisContext *c,
                            const char *what, const char *name)
{
	hl_client_options o;
	enum hl_script_id ids[2];

	memset(f, 0, sizeof(*f));
	f->what = what;
	f->rng = (uint64_t)now_ns() | 1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	if (strcmp(what, "semaphore") == 0) {
		/* the line's scripts, as the core sends them (nobody in line)
		 */
		ids[0] = HL_SCRIPT_SEM_LINE_ACQUIRE;
		ids[1] = HL_SCRIPT_SEM_LINE_RELEASE;
		derive_key(f->channel, sizeof(f->channel),
		           "redisson_sc:", name);
		derive_key(f->line, sizeof(f->line), "hilock_line:", name);
		derive_key(f->dl, sizeof(f->dl), "hilock_line_timeout:", name);
	} else if (strcmp(what, "expsem") == 0) {
		/* the line's scripts too */
		ids[0] = HL_SCRIPT_PSEM_LINE_ACQUIRE;
		ids[1] = HL_SCRIPT_PSEM_LINE_RELEASE;
		derive_key(f->line, sizeof(f->line), "hilock_line:", name);
		derive_key(f->dl, sizeof(f->dl), "hilock_line_timeout:", name);
		derive_key(f->channel, sizeof(f->channel),
		           "redisson_sc:", name);
		snprintf(f->aux, sizeof(f->aux),
		         strchr(name, '{') ? "%s:timeout" : "{%s}:timeout",
		         name);
	} else if (strcmp(what, "latch") == 0) {
		ids[0] = HL_SCRIPT_LATCH_TRY_SET;
		ids[1] = HL_SCRIPT_LATCH_COUNT_DOWN;
		/* the latch's channel always wraps the name in braces */
		snprintf(f->channel, sizeof(f->channel),
		         "redisson_countdownlatch__channel__{%s}", name);
	} else {
		fprintf(stderr, "hlbench: unknown synchronizer \"%s\"\n", what);
		exit(2);
	}
	for (int i = 0; i < 2; i++)
		load_sha(c, ids[i], f->sha[i]);
	derive_key(f->marker, sizeof(f->marker), "hilock_request:", name);
	f->marker_prefix = strlen(f->marker) + 1;
	f->marker[f->marker_prefix - 1] = ':';
	hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	snprintf(f->marker_ttl, sizeof(f->marker_ttl), "%lld",
	         (long long)((o.retry_attempts + 1) *
	                     (o.command_timeout_ms + 2 * o.retry_delay_ms)));
}

static long long reply_int(redisReply *r, const char *what)
{
	if (r->type != REDIS_REPLY_INTEGER) {
		fprintf(stderr, "hlbench: %s: not an integer reply\n", what);
		exit(1);
	}
	return r->integer;
}

/* One acquire(1) and release(1) (or the latch's set count 1 and count
 * down) through the floor. */
static void sync_floor_pair(redisContext *c, struct sync_floor *f)
{
	redisReply *r;
	if (strcmp(f->what, "semaphore") == 0) {
		/* acquire: a waiter (takes a place if it must wait), the
		 * place's lease, the client's id, the line's keys */
		const char *a[] = {"EVALSHA",
		                   f->sha[0],
		                   "3",
		                   f->name,
		                   f->channel,
		                   NULL,
		                   "1",
		                   "PUBLISH",
		                   "1",
		                   "3000",
		                   "00000000-0000-4000-8000-000000000000",
		                   f->line,
		                   f->dl,
		                   f->marker_ttl};
		const char *u[] = {"EVALSHA", f->sha[1],    "3",
		                   f->name,   f->channel,   NULL,
		                   "1",       "PUBLISH",    f->line,
		                   f->dl,     f->marker_ttl};
		a[5] = floor_marker(f);
		r = raw_cmd(c, 14, a);
		if (reply_int(r, "semaphore floor acquire") != 1)
			die_msg("semaphore floor: no permit");
		freeReplyObject(r);
		u[5] = floor_marker(f);
		r = raw_cmd(c, 11, u);
		reply_int(r, "semaphore floor release");
		freeReplyObject(r);
	} else if (strcmp(f->what, "expsem") == 0) {
		char now[24], exp[24];
		uint64_t id[2] = {xorshift(&f->rng), xorshift(&f->rng)};
		int64_t wall;
		/* acquire: a waiter, the place's lease, the client's id,
		 * the line's keys, then the id */
		const char *a[] = {"EVALSHA",
		                   f->sha[0],
		                   "3",
		                   f->name,
		                   f->aux,
		                   f->channel,
		                   now,
		                   "PUBLISH",
		                   "1",
		                   exp,
		                   "1",
		                   "3000",
		                   "00000000-0000-4000-8000-000000000000",
		                   f->line,
		                   f->dl,
		                   (const char *)id};
		size_t al[16];
		const char *u[] = {
		        "EVALSHA",    f->sha[1],        "4",     f->name,
		        f->aux,       f->channel,       NULL,    now,
		        "PUBLISH",    (const char *)id, f->line, f->dl,
		        f->marker_ttl};
		size_t ul[13];
		wall_ms_str(now);
		wall = atoll(now);
		snprintf(exp, sizeof(exp), "%lld",
		         (long long)(wall + LEASE_MS));
		for (int i = 0; i < 15; i++)
			al[i] = strlen(a[i]);
		al[15] = 16;
		r = raw_cmd_len(c, 16, a, al);
		if (r->type != REDIS_REPLY_ARRAY)
			die_msg("expsem floor: no permit");
		freeReplyObject(r);
		wall_ms_str(now);
		u[6] = floor_marker(f);
		for (int i = 0; i < 13; i++)
			ul[i] = i == 9 ? 16 : strlen(u[i]); /* the raw id */
		r = raw_cmd_len(c, 13, u, ul);
		if (reply_int(r, "expsem floor release") != 1)
			die_msg("expsem floor: the permit was not released");
		freeReplyObject(r);
	} else {
		const char *a[] = {"EVALSHA", f->sha[0],  "3",
		                   f->name,   f->channel, NULL,
		                   "PUBLISH", "1",        f->marker_ttl};
		const char *d[] = {"EVALSHA", f->sha[1],    "3",
		                   f->name,   f->channel,   NULL,
		                   "PUBLISH", f->marker_ttl};
		a[5] = floor_marker(f);
		r = raw_cmd(c, 9, a);
		if (reply_int(r, "latch floor set") != 1)
			die_msg("latch floor: the count was not set");
		freeReplyObject(r);
		d[5] = floor_marker(f);
		r = raw_cmd(c, 8, d);
		if (reply_int(r, "latch floor count down") != 0)
			die_msg("latch floor: the latch did not open");
		freeReplyObject(r);
	}
}

/* The same pair through libhilock. */
struct sync_hl {
	const char *what;
	hl_semaphore *sem;
	hl_expsem *xs;
	hl_latch *latch;
};

static void sync_hl_init(struct sync_hl *h, hl_client *c, const char *what,
                         const char *name)
{
	int rc = HL_OK, set = 0;
	memset(h, 0, sizeof(*h));
	h->what = what;
	if (strcmp(what, "semaphore") == 0) {
		if ((rc = hl_semaphore_new(&h->sem, c, name, strlen(name))) ==
		    HL_OK)
			rc = hl_semaphore_set_permits(h->sem, 1);
	} else if (strcmp(what, "expsem") == 0) {
		if ((rc = hl_expsem_new(&h->xs, c, name, strlen(name))) ==
		    HL_OK)
			rc = hl_expsem_try_set_permits(&set, h->xs, 1);
	} else {
		rc = hl_latch_new(&h->latch, c, name, strlen(name));
	}
	if (rc != HL_OK)
		die("setting up the synchronizer", rc);
}

static void sync_hl_pair(struct sync_hl *h)
{
	int rc, set = 0;
	if (h->sem) {
		if ((rc = hl_semaphore_acquire(h->sem, 1, NULL)) != HL_OK)
			die("hl_semaphore_acquire", rc);
		if ((rc = hl_semaphore_release(h->sem, 1)) != HL_OK)
			die("hl_semaphore_release", rc);
	} else if (h->xs) {
		char id[HL_PERMIT_ID_LEN + 1];
		if ((rc = hl_expsem_acquire(id, 1, h->xs, LEASE_MS, NULL)) !=
		    HL_OK)
			die("hl_expsem_acquire", rc);
		if ((rc = hl_expsem_release(h->xs, id)) != HL_OK)
			die("hl_expsem_release", rc);
	} else {
		int64_t left = -1;
		if ((rc = hl_latch_try_set_count(&set, h->latch, 1)) != HL_OK)
			die("hl_latch_try_set_count", rc);
		if (!set)
			die_msg("latch: the count was not set");
		if ((rc = hl_latch_count_down(&left, h->latch)) != HL_OK)
			die("hl_latch_count_down", rc);
		if (left != 0)
			die_msg("latch: did not open");
	}
}

static void sync_hl_fini(struct sync_hl *h)
{
	hl_semaphore_free(h->sem);
	hl_expsem_free(h->xs);
	hl_latch_free(h->latch);
}

/* One synchronizer: its floor and libhilock pairs in alternating 100 ms
 * slices on the same object (as kind-paired), after 300 ms of each to
 * warm up, with the ratio of every 2 s window. */
static int bench_sync_paired(double seconds, const char *what)
{
	redisContext *raw = raw_connect();
	hl_client *c = new_client(0, 0);
	char name[64];
	struct sync_floor f;
	struct sync_hl h;
	const int64_t slice = 100000000;
	long long nf = 0, nh = 0, wf = 0, wh = 0;
	int64_t tf = 0, th = 0, wtf = 0, wth = 0, end, t0, t;
	double ratios[128];
	int nr = 0, slices = 0;

	snprintf(name, sizeof(name), "bench:sync:%s", what);
	sync_floor_init(&f, raw, what, name);
	sync_hl_init(&h, c, what, name);
	end = now_ns() + 300000000;
	while (now_ns() < end)
		sync_floor_pair(raw, &f);
	end = now_ns() + 300000000;
	while (now_ns() < end)
		sync_hl_pair(&h);
	end = now_ns() + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		long long n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			sync_floor_pair(raw, &f);
			n++;
		}
		nf += n;
		wf += n;
		tf += t - t0;
		wtf += t - t0;
		n = 0;
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			sync_hl_pair(&h);
			n++;
		}
		nh += n;
		wh += n;
		th += t - t0;
		wth += t - t0;
		if (++slices % 10 == 0 && nr < 128 && wf && wtf && wth) {
			ratios[nr++] = ((double)wh / (double)wth) /
			               ((double)wf / (double)wtf);
			wf = wh = 0;
			wtf = wth = 0;
		}
	}
	printf("{\"scenario\":\"sync-paired\",\"what\":\"%s\","
	       "\"floor_pairs_per_s\":%.1f,\"hilock_pairs_per_s\":%.1f,"
	       "\"window_ratios\":[",
	       what, nf * 1e9 / (double)tf, nh * 1e9 / (double)th);
	for (int i = 0; i < nr; i++)
		printf("%s%.3f", i ? "," : "", ratios[i]);
	printf("]}\n");
	sync_hl_fini(&h);
	hl_client_free(c);
	redisFree(raw);
	return 0;
}

/* The floor alone (the reference of another library's figure). */
static int bench_sync_floor(double seconds, const char *what)
{
	redisContext *raw = raw_connect();
	char name[64];
	struct sync_floor f;
	long long n = 0;
	int64_t t0, end;

	snprintf(name, sizeof(name), "bench:sync:%s", what);
	sync_floor_init(&f, raw, what, name);
	if (strcmp(what, "latch") != 0) { /* one permit */
		const char *a[] = {"SET", name, "1"};
		freeReplyObject(raw_cmd(raw, 3, a));
	}
	end = now_ns() + 300000000;
	while (now_ns() < end)
		sync_floor_pair(raw, &f);
	t0 = now_ns();
	end = t0 + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		sync_floor_pair(raw, &f);
		n++;
	}
	printf("{\"scenario\":\"sync-floor\",\"what\":\"%s\","
	       "\"floor_pairs_per_s\":%.1f}\n",
	       what, n * 1e9 / (double)(now_ns() - t0));
	redisFree(raw);
	return 0;
}

/* ---- a semaphore under contention ---------------------------------------- */

/* Shared between the workers (MAP_SHARED, so processes see it too). */
struct sem_shared {
	atomic_int ready;
	atomic_int go;
	atomic_int holders;     /* permits held now, counted by the workers */
	atomic_int max_holders; /* the most at once */
	atomic_int violations;  /* more holders than permits */
	int64_t start_ns, end_ns;
	int cs_us, permits;
};

struct sem_worker {
	long long count;     /* acquisitions */
	long long nwait;     /* wait samples */
	long long cs_ns_sum; /* time held */
	int32_t wait_us[MAX_SAMPLES];
};

static void sem_loop(struct sem_shared *sh, struct sem_worker *w, hl_client *c)
{
	hl_semaphore *s = NULL;
	int rc = hl_semaphore_new(&s, c, "bench:sem", 9);

	if (rc != HL_OK)
		die("hl_semaphore_new", rc);
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sleep_us(200);
	for (;;) {
		int64_t t0 = now_ns(), t1, t2;
		int n, m;

		if (t0 >= sh->end_ns)
			break;
		if ((rc = hl_semaphore_acquire(s, 1, NULL)) != HL_OK)
			die("hl_semaphore_acquire", rc);
		t1 = now_ns();
		n = atomic_fetch_add(&sh->holders, 1) + 1;
		if (n > sh->permits)
			atomic_fetch_add(&sh->violations, 1);
		m = atomic_load(&sh->max_holders);
		while (n > m &&
		       !atomic_compare_exchange_weak(&sh->max_holders, &m, n))
			;
		if (w->nwait < MAX_SAMPLES)
			w->wait_us[w->nwait++] = (int32_t)((t1 - t0) / 1000);
		sleep_us(sh->cs_us);
		t2 = now_ns();
		w->cs_ns_sum += t2 - t1;
		w->count++;
		atomic_fetch_sub(&sh->holders, 1);
		if ((rc = hl_semaphore_release(s, 1)) != HL_OK)
			die("hl_semaphore_release", rc);
	}
	hl_semaphore_free(s);
}

struct sem_thread_arg {
	struct sem_shared *sh;
	struct sem_worker *w;
	hl_client *c;
};

static void *sem_thread(void *p)
{
	struct sem_thread_arg *a = p;
	sem_loop(a->sh, a->w, a->c);
	return NULL;
}

/* W workers loop acquire(1) (no deadline), CS_US, release(1) on one
 * semaphore of PERMITS (set before they start); threads share one
 * client, processes have one each. Acquisitions per second, the wait,
 * fairness, and how many held at once (counted by the workers: the mean
 * by Little's law, time held / elapsed; the most at once). */
static int bench_sem_contend(double seconds, int workers, const char *mode,
                             int cs_us, int permits)
{
	size_t size = sizeof(struct sem_shared) +
	              (size_t)workers * sizeof(struct sem_worker);
	int processes = strcmp(mode, "processes") == 0;
	struct sem_shared *sh;
	struct sem_worker *ws;
	hl_client *c = NULL;
	hl_semaphore *s = NULL;
	pthread_t *tids = NULL;
	struct sem_thread_arg *targs = NULL;
	redisContext *raw;
	long long ev0, ev1;
	double cpu0, cpu1, ccpu0;
	int i, rc;

	sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die_msg("mmap failed");
	ws = (struct sem_worker *)(sh + 1);
	sh->cs_us = cs_us;
	sh->permits = permits;
	sh->end_ns = INT64_MAX;
	if (processes) {
		for (i = 0; i < workers; i++) {
			pid_t pid = fork();
			if (pid < 0)
				die_msg("fork failed");
			if (pid == 0) {
				hl_client *cc = new_client(0, 0);
				sem_loop(sh, &ws[i], cc);
				hl_client_free(cc);
				_exit(0);
			}
		}
	}
	/* the parent's client (made after the fork): set the permits, and
	 * the threads' client */
	c = new_client(0, 0);
	raw = raw_connect();
	if ((rc = hl_semaphore_new(&s, c, "bench:sem", 9)) != HL_OK ||
	    (rc = hl_semaphore_delete(NULL, s)) != HL_OK ||
	    (rc = hl_semaphore_set_permits(s, permits)) != HL_OK)
		die("setting the permits", rc);
	if (!processes) {
		tids = calloc((size_t)workers, sizeof(*tids));
		targs = calloc((size_t)workers, sizeof(*targs));
		if (tids == NULL || targs == NULL)
			die_msg("out of memory");
		for (i = 0; i < workers; i++) {
			targs[i] = (struct sem_thread_arg){sh, &ws[i], c};
			pthread_create(&tids[i], NULL, sem_thread, &targs[i]);
		}
	}
	for (i = 0; i < 60000 && atomic_load(&sh->ready) < workers; i++)
		sleep_us(1000);
	if (atomic_load(&sh->ready) < workers)
		die_msg("workers did not start");
	window_mark("start");
	/* the Redis side: scripts run (EVALSHA calls: 2 per acquisition at
	 * best, one to take and one to give back) and the server's CPU */
	ev0 = evalsha_calls(raw);
	cpu0 = redis_cpu_s(raw);
	ccpu0 = rusage_s(processes ? RUSAGE_CHILDREN : RUSAGE_SELF);
	sh->start_ns = now_ns();
	sh->end_ns = sh->start_ns + (int64_t)(seconds * 1e9);
	atomic_store(&sh->go, 1);
	if (processes) {
		int st;
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				die_msg("a worker process failed");
	} else {
		for (i = 0; i < workers; i++)
			pthread_join(tids[i], NULL);
	}
	double elapsed = (double)(now_ns() - sh->start_ns) / 1e9;
	ev1 = evalsha_calls(raw);
	window_mark("end");
	cpu1 = redis_cpu_s(raw);
	/* the workers' CPU (the processes', or this one's with its threads;
	 * the processes' start-up counts too, the threads' not) */
	double ccpu =
	        rusage_s(processes ? RUSAGE_CHILDREN : RUSAGE_SELF) - ccpu0;
	int64_t left = -1;
	if ((rc = hl_semaphore_available(&left, s)) != HL_OK)
		die("hl_semaphore_available", rc);

	long long total = 0, nwait = 0, k = 0, mn = -1, mx = 0, cs_sum = 0;
	for (i = 0; i < workers; i++) {
		total += ws[i].count;
		nwait += ws[i].nwait;
		cs_sum += ws[i].cs_ns_sum;
		if (mn < 0 || ws[i].count < mn)
			mn = ws[i].count;
		if (ws[i].count > mx)
			mx = ws[i].count;
	}
	int32_t *wv = malloc((size_t)(nwait + 1) * sizeof(int32_t));
	if (wv == NULL)
		die_msg("out of memory");
	for (i = 0; i < workers; i++) {
		memcpy(wv + k, ws[i].wait_us, (size_t)ws[i].nwait * 4);
		k += ws[i].nwait;
	}
	qsort(wv, (size_t)nwait, sizeof(int32_t), cmp_i32);
	printf("{\"scenario\":\"sem-contend\",\"lang\":\"c\",\"lib\":"
	       "\"hilock\","
	       "\"mode\":\"%s\",\"workers\":%d,\"permits\":%d,\"cs_us\":%d,"
	       "\"acq_per_s\":%.1f,\"cs_mean_us\":%.1f,\"held_mean\":%.2f,"
	       "\"held_max\":%d,\"wait_p50_us\":%.0f,\"wait_p99_us\":%.0f,"
	       "\"wait_max_us\":%.0f,\"fair_min\":%lld,\"fair_max\":%lld,"
	       "\"violations\":%d,\"available_after\":%lld,"
	       "\"scripts_per_acq\":%.2f,\"redis_cpu\":%.2f,"
	       "\"client_cpu\":%.2f,\"acquisitions\":%lld}\n",
	       mode, workers, permits, cs_us, total / elapsed,
	       total ? cs_sum / 1000.0 / total : 0.0, cs_sum / 1e9 / elapsed,
	       atomic_load(&sh->max_holders), pct(wv, nwait, 0.5),
	       pct(wv, nwait, 0.99), nwait ? (double)wv[nwait - 1] : 0.0, mn,
	       mx, atomic_load(&sh->violations), (long long)left,
	       total ? (double)(ev1 - ev0) / (double)total : 0.0,
	       (cpu1 - cpu0) / elapsed, ccpu / elapsed, total);
	free(wv);
	free(tids);
	free(targs);
	hl_semaphore_free(s);
	hl_client_free(c);
	redisFree(raw);
	int bad = atomic_load(&sh->violations) != 0 || left != permits;
	munmap(sh, size);
	return bad;
}

/* ---- a latch: from the last count-down to the last waiter woken -------- */

#define LATCH_MAX_WAITERS 1024
#define LATCH_MAX_ROUNDS  256
#define LATCH_NAME        "bench:latch"
#define LATCH_CHANNEL     "redisson_countdownlatch__channel__{bench:latch}"

struct latch_shared {
	atomic_int round;   /* the round the waiters may start */
	atomic_int in_wait; /* waiters that entered hl_latch_wait, in all */
	atomic_int woken;   /* waiters that returned from it, in all */
	atomic_int failed;  /* returned not open, or an error */
	atomic_llong raw_msg_ns; /* a raw subscriber's "0", this round */
	int rounds;
	int64_t wake_ns[LATCH_MAX_WAITERS];
};

struct latch_waiter_arg {
	struct latch_shared *sh;
	hl_client *c;
	int index;
};

static void *latch_waiter(void *p)
{
	struct latch_waiter_arg *a = p;
	struct latch_shared *sh = a->sh;
	hl_latch *l = NULL;
	int rc = hl_latch_new(&l, a->c, LATCH_NAME, strlen(LATCH_NAME));

	if (rc != HL_OK)
		die("hl_latch_new", rc);
	for (int r = 1; r <= sh->rounds; r++) {
		int open = 0;
		int v;
		/* asleep between rounds (a futex on the shared word, so
		 * processes too): polling waiters would load the cores */
		while ((v = atomic_load(&sh->round)) < r)
			syscall(SYS_futex, &sh->round, FUTEX_WAIT, v, NULL,
			        NULL, 0);
		atomic_fetch_add(&sh->in_wait, 1);
		rc = hl_latch_wait(&open, l, 60000, NULL);
		sh->wake_ns[a->index] = now_ns();
		if (rc != HL_OK || !open) {
			fprintf(stderr,
			        "hlbench: latch wait: %s (%s), open %d\n",
			        hl_status_name(rc), hl_error_last(), open);
			atomic_fetch_add(&sh->failed, 1);
		}
		atomic_fetch_add(&sh->woken, 1);
	}
	hl_latch_free(l);
	return NULL;
}

/* The waiters of one process (threads on one client). */
static void latch_waiters(struct latch_shared *sh, hl_client *c, int first,
                          int n, pthread_t *tids, struct latch_waiter_arg *args)
{
	for (int i = 0; i < n; i++) {
		args[i] = (struct latch_waiter_arg){sh, c, first + i};
		if (pthread_create(&tids[i], NULL, latch_waiter, &args[i]) != 0)
			die_msg("pthread_create");
	}
}

/* A raw subscriber of the latch's channel: when Redis delivers "0" (the
 * floor of a wake-up: the message reaching a plain client). */
static void *latch_raw_subscriber(void *p)
{
	struct latch_shared *sh = p;
	redisContext *c = raw_connect();
	redisReply *r = redisCommand(c, "SUBSCRIBE %s", LATCH_CHANNEL);
	freeReplyObject(r);
	for (;;) {
		void *v = NULL;
		if (redisGetReply(c, &v) != REDIS_OK || v == NULL)
			return NULL;
		r = v;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[2]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[2]->str, "0") == 0)
			atomic_store(&sh->raw_msg_ns, now_ns());
		freeReplyObject(r);
	}
}

static long long numsub(redisContext *c)
{
	redisReply *r = redisCommand(c, "PUBSUB NUMSUB %s", LATCH_CHANNEL);
	long long n = -1;
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
		n = r->element[1]->integer;
	freeReplyObject(r);
	return n;
}

static void wait_for(atomic_int *v, int target, const char *what)
{
	int64_t end = now_ns() + 60000000000LL;
	while (atomic_load(v) < target) {
		if (now_ns() > end) {
			fprintf(stderr, "hlbench: latch: %s: %d of %d\n", what,
			        atomic_load(v), target);
			exit(1);
		}
		sleep_us(1000);
	}
}

/* WAITERS waiters (threads; PROCS processes of WAITERS/PROCS threads and a
 * client each, or with PROCS 0 threads of the counting client) wait on a
 * latch of COUNT; once all are waiting (entered hl_latch_wait, every
 * client subscribed to its channel, then 50 ms more), the coordinator
 * counts it down COUNT times. Per round: the time from the last
 * count_down's return to the first, median and last waiter's return, and
 * to a raw subscriber's receipt of "0". ROUNDS rounds after one to warm
 * up. */
static int bench_latch_wake(int rounds, int waiters, int procs, int count)
{
	struct latch_shared *sh;
	int per = procs ? waiters / procs : waiters, rc;
	hl_client *c;
	hl_latch *l = NULL;
	redisContext *raw;
	pthread_t *tids = NULL, rawt;
	struct latch_waiter_arg *args = NULL;
	int64_t *last, *first, *median, *rawd, *cd, *w;
	long long gets = 0;
	int total = rounds + 1;

	if (waiters < 1 || waiters > LATCH_MAX_WAITERS ||
	    total > LATCH_MAX_ROUNDS || (procs && waiters % procs) || count < 1)
		die_msg("latch-wake: bad arguments");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die_msg("mmap failed");
	memset(sh, 0, sizeof(*sh));
	sh->rounds = total;
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die_msg("fork failed");
		if (pid == 0) {
			hl_client *cc = new_client(0, 0);
			pthread_t *t = calloc((size_t)per, sizeof(*t));
			struct latch_waiter_arg *a =
			        calloc((size_t)per, sizeof(*a));
			if (!t || !a)
				die_msg("out of memory");
			latch_waiters(sh, cc, p * per, per, t, a);
			for (int i = 0; i < per; i++)
				pthread_join(t[i], NULL);
			hl_client_free(cc);
			_exit(0);
		}
	}
	c = new_client(0, 0);
	raw = raw_connect();
	if ((rc = hl_latch_new(&l, c, LATCH_NAME, strlen(LATCH_NAME))) !=
	            HL_OK ||
	    (rc = hl_latch_delete(NULL, l)) != HL_OK)
		die("hl_latch_new", rc);
	if (!procs) {
		tids = calloc((size_t)per, sizeof(*tids));
		args = calloc((size_t)per, sizeof(*args));
		if (!tids || !args)
			die_msg("out of memory");
		latch_waiters(sh, c, 0, per, tids, args);
	}
	if (pthread_create(&rawt, NULL, latch_raw_subscriber, sh) != 0)
		die_msg("pthread_create");
	pthread_detach(rawt);
	last = calloc((size_t)total * 5 + (size_t)waiters, sizeof(int64_t));
	if (!last)
		die_msg("out of memory");
	first = last + total;
	median = first + total;
	rawd = median + total;
	cd = rawd + total;
	w = cd + total;
	for (int r = 1; r <= total; r++) {
		int set = 0;
		int64_t left = -1, t0, t1;
		if ((rc = hl_latch_try_set_count(&set, l, count)) != HL_OK ||
		    !set)
			die("latch: setting the count", rc);
		atomic_store(&sh->raw_msg_ns, 0);
		atomic_store(&sh->round, r);
		syscall(SYS_futex, &sh->round, FUTEX_WAKE, INT32_MAX, NULL,
		        NULL, 0);
		wait_for(&sh->in_wait, r * waiters, "waiters in wait");
		/* every client subscribed (and the raw subscriber) */
		for (int i = 0; numsub(raw) < (procs ? procs : 1) + 1; i++) {
			if (i > 60000)
				die_msg("latch: waiters did not subscribe");
			sleep_us(1000);
		}
		sleep_us(50000);
		for (int i = 0; i < count - 1; i++)
			if ((rc = hl_latch_count_down(&left, l)) != HL_OK)
				die("hl_latch_count_down", rc);
		long long g0 = info_field(raw, "commandstats", "cmdstat_get");
		t0 = now_ns();
		rc = hl_latch_count_down(&left, l);
		t1 = now_ns();
		if (rc != HL_OK || left != 0)
			die("latch: the last count down", rc);
		wait_for(&sh->woken, r * waiters, "waiters woken");
		if (r > 1) /* the reads of the count the wake-up cost */
			gets += info_field(raw, "commandstats", "cmdstat_get") -
			        (g0 < 0 ? 0 : g0);
		for (int i = 0; i < 1000 && !atomic_load(&sh->raw_msg_ns); i++)
			sleep_us(1000);
		for (int i = 0; i < waiters; i++)
			w[i] = sh->wake_ns[i] - t1;
		qsort(w, (size_t)waiters, sizeof(int64_t), cmp_i64);
		last[r - 1] = w[waiters - 1];
		first[r - 1] = w[0];
		median[r - 1] = w[waiters / 2];
		rawd[r - 1] = atomic_load(&sh->raw_msg_ns)
		                      ? atomic_load(&sh->raw_msg_ns) - t1
		                      : INT64_MIN;
		cd[r - 1] = t1 - t0;
	}
	if (procs) {
		int st;
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				die_msg("a waiter process failed");
	} else {
		for (int i = 0; i < per; i++)
			pthread_join(tids[i], NULL);
	}
	printf("{\"scenario\":\"latch-wake\",\"lang\":\"c\",\"lib\":\"hilock\","
	       "\"mode\":\"%s\",\"waiters\":%d,\"procs\":%d,\"count\":%d,"
	       "\"rounds\":%d,\"failed\":%d,\"gets_per_round\":%.1f",
	       procs ? "processes" : "threads", waiters, procs ? procs : 1,
	       count, rounds, atomic_load(&sh->failed),
	       rounds ? (double)gets / rounds : 0.0);
	/* per round after the warm-up one, in µs after the last count_down
	 * returned (negative: before) */
	const char *keys[] = {"last_us", "first_us", "median_us", "raw_us",
	                      "countdown_us"};
	int64_t *vals[] = {last, first, median, rawd, cd};
	for (int k = 0; k < 5; k++) {
		printf(",\"%s\":[", keys[k]);
		for (int r = 1; r < total; r++) {
			if (vals[k][r] == INT64_MIN)
				printf("%snull", r > 1 ? "," : "");
			else
				printf("%s%.1f", r > 1 ? "," : "",
				       (double)vals[k][r] / 1e3);
		}
		printf("]");
	}
	printf("}\n");
	int bad = atomic_load(&sh->failed) != 0;
	free(last);
	free(tids);
	free(args);
	hl_latch_free(l);
	hl_client_free(c);
	redisFree(raw);
	munmap(sh, sizeof(*sh));
	return bad;
}

/* ---- the data grid: each operation against its floor -------------------
 *
 * The operations come as KIND NAME then groups OP N ARG...: every group but
 * the last is a set-up (e.g. a bucket's set before its get), run once; the
 * last is measured. ARG: b:TEXT (bytes), x:HEX (bytes), i:N, f:X,
 * m:overall or m:per_client (a rate limiter's mode: the bindings take it
 * by name, C as its number), s:SECONDS (a duration: C takes
 * milliseconds), or - (an optional argument left out). The floor is what the
 * operation sends, captured once with MONITOR (grid-capture) and replayed over
 * raw hiredis (floor.c's hlfloor_cmds): the same command, or the same EVALSHA
 * of the same script with the same arguments. */

#define GRID_ARGS_MAX 1024 /* a batch: a list argument's values */
/* the words of one captured command (floor.c's CMD_ARGS_MAX) */
#define GRID_CMD_ARGS_MAX 4096

struct grid_op {
	int op;
	size_t nargs;
	hl_arg args[GRID_ARGS_MAX];
};

static int grid_kind(const char *name)
{
	for (int k = 1; k < 64; k++) {
		const char *n = hl_kind_name(k);
		if (n && strcmp(n, name) == 0)
			return k;
	}
	fprintf(stderr, "hlbench: no grid kind %s in this libhilock\n", name);
	exit(1);
}

static int grid_opnum(int kind, const char *name)
{
	for (int i = 0; i < 256; i++) {
		const char *n = hl_op_name(kind << 8 | i);
		if (n && strcmp(n, name) == 0)
			return kind << 8 | i;
	}
	fprintf(stderr, "hlbench: %s has no operation %s\n", hl_kind_name(kind),
	        name);
	exit(1);
}

static void grid_arg(hl_arg *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	if (strcmp(s, "-") == 0) {
		a->type = HL_ARG_NONE;
	} else if (strncmp(s, "b:", 2) == 0) {
		a->type = HL_ARG_BYTES;
		a->bytes = s + 2;
		a->len = strlen(s + 2);
	} else if (strncmp(s, "x:", 2) == 0) {
		size_t n = strlen(s + 2) / 2;
		unsigned char *b = malloc(n + 1);
		if (!b)
			die_msg("out of memory");
		for (size_t i = 0; i < n; i++) {
			unsigned v;
			sscanf(s + 2 + 2 * i, "%2x", &v);
			b[i] = (unsigned char)v;
		}
		a->type = HL_ARG_BYTES;
		a->bytes = b; /* lives as long as the program */
		a->len = n;
	} else if (strncmp(s, "i:", 2) == 0) {
		a->type = HL_ARG_INT;
		a->i = atoll(s + 2);
	} else if (strncmp(s, "f:", 2) == 0) {
		a->type = HL_ARG_DOUBLE;
		a->d = atof(s + 2);
	} else if (strcmp(s, "m:overall") == 0 ||
	           strcmp(s, "m:per_client") == 0) {
		a->type = HL_ARG_INT;
		a->i = strcmp(s, "m:per_client") == 0;
	} else if (strncmp(s, "s:", 2) == 0) {
		a->type = HL_ARG_INT;
		a->i = (int64_t)(atof(s + 2) * 1000.0 + 0.5);
	} else {
		fprintf(stderr, "hlbench: bad grid argument %s\n", s);
		exit(2);
	}
}

/* Parse the groups of argv[0..argc): *n operations into ops. */
static void grid_ops(int kind, int argc, char **argv, struct grid_op *ops,
                     int *n, int max)
{
	int i = 0;
	*n = 0;
	while (i < argc) {
		struct grid_op *o = &ops[*n];
		if (*n == max || i + 2 > argc)
			die_msg("grid: bad operation groups");
		o->op = grid_opnum(kind, argv[i]);
		o->nargs = (size_t)atoi(argv[i + 1]);
		if (o->nargs > GRID_ARGS_MAX || i + 2 + (int)o->nargs > argc)
			die_msg("grid: bad operation groups");
		for (size_t j = 0; j < o->nargs; j++)
			grid_arg(&o->args[j], argv[i + 2 + j]);
		i += 2 + (int)o->nargs;
		(*n)++;
	}
	if (*n == 0)
		die_msg("grid: no operation");
}

static void grid_call(hl_object *obj, const struct grid_op *o)
{
	hl_value *v = NULL;
	int rc = hl_object_call(&v, obj, o->op, o->args, o->nargs);
	if (rc != HL_OK)
		die(hl_op_name(o->op), rc);
	hl_value_free(v);
}

/* The grid object and its set-ups run: the measured operation is the
 * last of ops. */
static hl_object *grid_open(hl_client *c, const char *kind, const char *name,
                            int argc, char **argv, struct grid_op *ops, int *n)
{
	hl_object *obj = NULL;
	int k = grid_kind(kind), rc;
	grid_ops(k, argc, argv, ops, n, 8);
	rc = hl_object_new(&obj, c, k, name, strlen(name));
	if (rc != HL_OK)
		die("hl_object_new", rc);
	for (int i = 0; i + 1 < *n; i++)
		grid_call(obj, &ops[i]);
	return obj;
}

/* MONITOR's line: TIME [DB ADDR] "arg" "arg"... into argv (sdscatrepr's
 * escapes undone); 0 for a command run by a script ([DB lua]). */
static int monitor_parse(const char *line, char **argv, size_t *lens, int max)
{
	const char *p = strchr(line, '[');
	const char *q = p ? strchr(p, ']') : NULL;
	int argc = 0;
	if (!p || !q)
		return 0;
	if (q - p >= 4 && strncmp(q - 3, "lua", 3) == 0)
		return 0;
	p = q + 1;
	while ((p = strchr(p, '"')) != NULL && argc < max) {
		char *b = malloc(strlen(p) + 1);
		size_t n = 0;
		if (!b)
			die_msg("out of memory");
		for (p++; *p && *p != '"'; p++) {
			if (*p != '\\') {
				b[n++] = *p;
				continue;
			}
			p++;
			switch (*p) {
			case 'n':
				b[n++] = '\n';
				break;
			case 'r':
				b[n++] = '\r';
				break;
			case 't':
				b[n++] = '\t';
				break;
			case 'a':
				b[n++] = '\a';
				break;
			case 'b':
				b[n++] = '\b';
				break;
			case 'x': {
				unsigned v = 0;
				sscanf(p + 1, "%2x", &v);
				b[n++] = (char)v;
				p += 2;
				break;
			}
			default:
				b[n++] = *p;
			}
		}
		b[n] = 0;
		argv[argc] = b;
		lens[argc++] = n;
		if (*p)
			p++;
	}
	return argc;
}

/* Run the operation once with a MONITOR watching: the commands hilock's
 * connection sent for it go to FILE (floor.h's format) and to stdout as
 * JSON (printable, for BENCHMARKS.md). Called after two warm-up calls, so
 * connecting and loading a script are not part of it. */
static int bench_grid_capture(const char *path, const char *kind,
                              const char *name, int argc, char **argv)
{
	hl_client *c = new_client(0, 0);
	struct grid_op ops[8];
	int n, ncmd = 0;
	hl_object *obj = grid_open(c, kind, name, argc, argv, ops, &n);
	redisContext *mon = raw_connect(), *mark = raw_connect();
	const char *monitor[] = {"MONITOR"};
	char marker[64];
	const char *echo[] = {"ECHO", marker};
	FILE *out = fopen(path, "w");
	redisReply *r;

	if (!out)
		die_msg("grid-capture: cannot write the floor file");
	grid_call(obj, &ops[n - 1]);
	grid_call(obj, &ops[n - 1]);
	freeReplyObject(raw_cmd(mon, 1, monitor));
	grid_call(obj, &ops[n - 1]);
	snprintf(marker, sizeof(marker), "hlbench-capture-%ld", (long)getpid());
	freeReplyObject(raw_cmd(mark, 2, echo));
	printf("{\"scenario\":\"grid-capture\",\"kind\":\"%s\",\"op\":\"%s\","
	       "\"commands\":[",
	       kind, hl_op_name(ops[n - 1].op));
	for (;;) {
		/* a batch's command is long: a Bloom filter's add of 100
		 * values sends 700 bit indexes */
		static char *av[GRID_CMD_ARGS_MAX];
		static size_t lens[GRID_CMD_ARGS_MAX];
		int ac;
		if (redisGetReply(mon, (void **)&r) != REDIS_OK || !r)
			die_msg("grid-capture: the MONITOR connection failed");
		ac = r->type == REDIS_REPLY_STATUS
		             ? monitor_parse(r->str, av, lens,
		                             GRID_CMD_ARGS_MAX)
		             : 0;
		if (ac == GRID_CMD_ARGS_MAX)
			die_msg("grid-capture: a command of too many "
			        "arguments");
		freeReplyObject(r);
		if (ac >= 2 && strcasecmp(av[0], "ECHO") == 0 &&
		    strcmp(av[1], marker) == 0) {
			for (int i = 0; i < ac; i++)
				free(av[i]);
			break;
		}
		if (ac > 0) {
			char cmd0[16];
			snprintf(cmd0, sizeof(cmd0), "%s", av[0]);
			printf("%s[", ncmd ? "," : "");
			for (int i = 0; i < ac; i++) {
				printf("%s\"", i ? "," : "");
				for (size_t j = 0; j < lens[i]; j++) {
					unsigned char ch =
					        (unsigned char)av[i][j];
					if (ch == '"' || ch == '\\')
						printf("\\%c", ch);
					else if (ch < 0x20 || ch > 0x7e)
						printf("\\u%04x", ch);
					else
						putchar(ch);
				}
				printf("\"");
				if (lens[i] == 0)
					fputs("=", out);
				for (size_t j = 0; j < lens[i]; j++)
					fprintf(out, "%02x",
					        (unsigned char)av[i][j]);
				fputs(i + 1 < ac ? " " : "\n", out);
				free(av[i]);
			}
			printf("]");
			/* a rate limiter's acquire (permits, now, the
			 * grant's id): the floor sends a fresh time and id
			 * in every round, as hilock does in every call */
			if (strcmp(kind, "rate_limiter") == 0 && ac == 11 &&
			    strcasecmp(cmd0, "EVALSHA") == 0)
				fputs("! now 9\n! id 10\n", out);
			ncmd++;
		}
	}
	printf("]}\n");
	fclose(out);
	if (ncmd == 0)
		die_msg("grid-capture: MONITOR saw no command");
	redisFree(mon);
	redisFree(mark);
	hl_object_free(obj);
	hl_client_free(c);
	return 0;
}

static hlfloor_cmds *grid_floor_open(const char *path)
{
	char err[256];
	hlfloor_cmds *f = hlfloor_cmds_open(g_url, path, err, sizeof(err));
	if (!f)
		die_msg(err);
	return f;
}

static void grid_floor_once(hlfloor_cmds *f)
{
	if (hlfloor_cmds_once(f) != 0)
		die_msg(hlfloor_cmds_error(f));
}

/* The grid's floor and call alternate in 5 ms slices: at 100 ms a burst
 * of the VM's steal time or of another process fell on one side only and
 * moved a 2 s run's ratio by +-5% (standard deviation 0.045 in eight runs
 * of bucket.get); at 5 ms, 0.01. A window ratio is reported each 100
 * pairs (1 s). */
#define GRID_SLICE_NS      5000000
#define GRID_WINDOW_SLICES 100

/* CPU time of this process (every thread), ns. */
static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int bench_grid_paired(double seconds, const char *floor_path,
                             const char *kind, const char *name, int argc,
                             char **argv)
{
	hl_client *c = new_client(0, 0);
	struct grid_op ops[8];
	int nops;
	hl_object *obj = grid_open(c, kind, name, argc, argv, ops, &nops);
	const struct grid_op *o = &ops[nops - 1];
	hlfloor_cmds *f = grid_floor_open(floor_path);
	const int64_t slice = GRID_SLICE_NS;
	long long nf = 0, nh = 0, wf = 0, wh = 0;
	int64_t tf = 0, th = 0, wtf = 0, wth = 0, end, t0, t;
	double ratios[256];
	int nr = 0, slices = 0;
	int64_t cf = 0, ch = 0, c0; /* process CPU time in each */

	end = now_ns() + 300000000;
	while (now_ns() < end)
		grid_floor_once(f);
	end = now_ns() + 300000000;
	while (now_ns() < end)
		grid_call(obj, o);
	end = now_ns() + (int64_t)(seconds * 1e9);
	while (now_ns() < end) {
		long long n = 0;
		c0 = cpu_ns();
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			grid_floor_once(f);
			n++;
		}
		nf += n;
		wf += n;
		tf += t - t0;
		wtf += t - t0;
		cf += cpu_ns() - c0;
		n = 0;
		c0 = cpu_ns();
		t0 = now_ns();
		while ((t = now_ns()) < t0 + slice) {
			grid_call(obj, o);
			n++;
		}
		nh += n;
		wh += n;
		th += t - t0;
		wth += t - t0;
		ch += cpu_ns() - c0;
		if (++slices % GRID_WINDOW_SLICES == 0 && nr < 256 && wf &&
		    wtf && wth) {
			ratios[nr++] = ((double)wh / (double)wth) /
			               ((double)wf / (double)wtf);
			wf = wh = 0;
			wtf = wth = 0;
		}
	}
	printf("{\"scenario\":\"grid-paired\",\"lang\":\"c\",\"lib\":"
	       "\"hilock\","
	       "\"kind\":\"%s\",\"op\":\"%s\",\"floor_ops_per_s\":%.1f,"
	       "\"hilock_ops_per_s\":%.1f,\"floor_cpu_us\":%.2f,"
	       "\"hilock_cpu_us\":%.2f,\"window_ratios\":[",
	       kind, hl_op_name(o->op), nf * 1e9 / (double)tf,
	       nh * 1e9 / (double)th, nf ? cf / 1e3 / (double)nf : 0.0,
	       nh ? ch / 1e3 / (double)nh : 0.0);
	for (int i = 0; i < nr; i++)
		printf("%s%.3f", i ? "," : "", ratios[i]);
	printf("]}\n");
	hlfloor_cmds_close(f);
	hl_object_free(obj);
	hl_client_free(c);
	return 0;
}

/* The floor alone (the reference of a peer in another process). */
static int bench_grid_floor(double seconds, const char *floor_path)
{
	hlfloor_cmds *f = grid_floor_open(floor_path);
	double el = 0;
	long long n = hlfloor_cmds_run(f, seconds, &el);
	if (n < 0)
		die_msg(hlfloor_cmds_error(f));
	printf("{\"scenario\":\"grid-floor\",\"ops_per_s\":%.1f}\n",
	       (double)n / el);
	hlfloor_cmds_close(f);
	return 0;
}

/* The set-ups alone (every group but the last): the state a peer's floor
 * needs after the bench flushed Redis (a rate limiter's rate, a Bloom
 * filter's config). */
static int bench_grid_setup(const char *kind, const char *name, int argc,
                            char **argv)
{
	hl_client *c = new_client(0, 0);
	struct grid_op ops[8];
	int n;
	hl_object *obj = grid_open(c, kind, name, argc, argv, ops, &n);
	printf("{\"scenario\":\"grid-setup\",\"kind\":\"%s\",\"setups\":%d}\n",
	       kind, n - 1);
	hl_object_free(obj);
	hl_client_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *s;

	if (argc < 3) {
		fprintf(stderr, "usage: hlbench URL SCENARIO ARGS... (see the "
		                "comment at the top of bench/hlbench.c)\n");
		return 2;
	}
	g_url = argv[1];
	s = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(s, "floor") == 0 && (argc == 4 || argc == 5))
		return bench_floor(atof(argv[3]),
		                   argc == 4 ||
		                           strcmp(argv[4], "nopping") != 0);
	if (strcmp(s, "uncontended") == 0 && (argc == 4 || argc == 5)) {
		if (argc == 5)
			g_lease_ms = atoll(argv[4]);
		return bench_uncontended(atof(argv[3]));
	}
	if (strcmp(s, "contend") == 0 && argc >= 7 && argc <= 9) {
		if (argc == 9)
			g_contend_kind = kind_from_name(argv[8]);
		return bench_contend(atof(argv[3]), atoi(argv[4]), argv[5],
		                     atoi(argv[6]), argc >= 8 ? argv[7] : NULL);
	}
	if (strcmp(s, "random") == 0 && (argc == 6 || argc == 7))
		return bench_random(atof(argv[3]), atoi(argv[4]), atoi(argv[5]),
		                    argc == 7 ? atoll(argv[6]) : 20000);
	if (strcmp(s, "paired") == 0 && (argc == 4 || argc == 5)) {
		if (argc == 5)
			g_lease_ms = atoll(argv[4]);
		return bench_paired(atof(argv[3]));
	}
	if (strcmp(s, "kind-paired") == 0 && argc == 5)
		return bench_kind_paired(atof(argv[3]),
		                         kind_from_name(argv[4]));
	if (strcmp(s, "readers") == 0 && argc == 7)
		return bench_readers(atof(argv[3]), atoi(argv[4]), argv[5],
		                     atoi(argv[6]));
	if (strcmp(s, "scale") == 0 && (argc == 5 || argc == 6))
		return bench_scale(atof(argv[3]), atoi(argv[4]),
		                   argc == 6 ? atoi(argv[5]) : 0);
	if (strcmp(s, "watchdog") == 0 && argc == 6)
		return bench_watchdog(atoi(argv[3]), atoi(argv[4]),
		                      atoll(argv[5]));
	if (strcmp(s, "memory") == 0 && argc == 5)
		return bench_memory(atoi(argv[3]), atoi(argv[4]));
	if (strcmp(s, "faults") == 0 && argc == 6)
		return bench_faults(argv[3], atoi(argv[4]), atoll(argv[5]));
	if (strcmp(s, "cluster-paired") == 0 && argc == 7)
		return bench_cluster_paired(atof(argv[3]), argv[4], argv[5],
		                            atoi(argv[6]));
	if (strcmp(s, "tls-paired") == 0 && (argc == 5 || argc == 6))
		return bench_tls_paired(
		        atof(argv[3]), argv[4],
		        argc == 6 && strcmp(argv[5], "readahead") == 0);
	if (strcmp(s, "failover") == 0 && argc == 5)
		return bench_failover(argv[3], atoll(argv[4]));
	if (strcmp(s, "sync-paired") == 0 && argc == 5)
		return bench_sync_paired(atof(argv[3]), argv[4]);
	if (strcmp(s, "sync-floor") == 0 && argc == 5)
		return bench_sync_floor(atof(argv[3]), argv[4]);
	if (strcmp(s, "sem-contend") == 0 && argc == 8)
		return bench_sem_contend(atof(argv[3]), atoi(argv[4]), argv[5],
		                         atoi(argv[6]), atoi(argv[7]));
	if (strcmp(s, "latch-wake") == 0 && argc == 7)
		return bench_latch_wake(atoi(argv[3]), atoi(argv[4]),
		                        atoi(argv[5]), atoi(argv[6]));
	if (strcmp(s, "grid-capture") == 0 && argc >= 8)
		return bench_grid_capture(argv[3], argv[4], argv[5], argc - 6,
		                          argv + 6);
	if (strcmp(s, "grid-paired") == 0 && argc >= 9)
		return bench_grid_paired(atof(argv[3]), argv[4], argv[5],
		                         argv[6], argc - 7, argv + 7);
	if (strcmp(s, "grid-setup") == 0 && argc >= 7)
		return bench_grid_setup(argv[3], argv[4], argc - 5, argv + 5);
	if (strcmp(s, "grid-floor") == 0 && argc == 5)
		return bench_grid_floor(atof(argv[3]), argv[4]);
	fprintf(stderr, "hlbench: unknown scenario or wrong arguments\n");
	return 2;
}
