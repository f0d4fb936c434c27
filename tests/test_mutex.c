/*
 * Mutual exclusion: a counter read and written with plain GET and SET inside
 * the lock ends exact, across threads and across processes.
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS    4
#define ITERS      200
#define PROCS      3
#define PROC_ITERS 100

struct worker {
	ht_redis *r;
	hl_client *c;
	hl_lock *shared; /* NULL: the worker makes its own handle */
	const char *name, *counter;
	int iters;
};

/* One worker: ITERS rounds of lock, GET, SET+1, unlock. A second counter
 * incremented on entry and decremented on exit must read 1 inside. */
static void work(struct worker *w)
{
	redisContext *raw = ht_raw_new(w->r);
	hl_lock *l = w->shared ? w->shared : ht_lock(w->c, w->name);
	redisReply *rep;
	int i, acquired, released;
	long long v;

	for (i = 0; i < w->iters; i++) {
		acquired = 0;
		HT_OK(hl_lock_try_acquire(&acquired, l, 30000, -1, NULL));
		HT_CHECKF(acquired == 1, "iteration %d: not acquired in 30 s",
		          i);
		rep = ht_raw(raw, "INCR %s:inside", w->counter);
		HT_CHECKF(rep->integer == 1,
		          "two holders inside the lock at once (%lld)",
		          rep->integer);
		freeReplyObject(rep);
		v = ht_get_int(raw, w->counter);
		ht_set_int(raw, w->counter, v + 1);
		rep = ht_raw(raw, "DECR %s:inside", w->counter);
		freeReplyObject(rep);
		released = 7;
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 1);
	}
	if (!w->shared)
		hl_lock_free(l);
	redisFree(raw);
}

static void *work_thread(void *arg)
{
	work(arg);
	return NULL;
}

static void run_threads(int shared_handle, const char *name,
                        const char *counter)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *shared = shared_handle ? ht_lock(c, name) : NULL;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int i;
	int64_t t0 = ht_now_ms();

	for (i = 0; i < THREADS; i++) {
		w[i].r = r;
		w[i].c = c;
		w[i].shared = shared;
		w[i].name = name;
		w[i].counter = counter;
		w[i].iters = ITERS;
		t[i] = ht_thread_start(work_thread, &w[i]);
	}
	for (i = 0; i < THREADS; i++)
		ht_thread_join(t[i], 60000);
	ht_note("%d x %d rounds in %lld ms", THREADS, ITERS,
	        (long long)(ht_now_ms() - t0));
	HT_EQ(ht_get_int(ht_raw_of(r), counter), THREADS * ITERS);
	HT_EQ(ht_exists(r, name, strlen(name)), 0);
	hl_lock_free(shared);
	hl_client_free(c);
}

static void threads(void)
{
	run_threads(0, "mutex:threads", "mutex:threads:counter");
}

static void threads_shared_handle(void)
{
	run_threads(1, "mutex:shared", "mutex:shared:counter");
}

/* Each child creates its own client after fork(); so does the parent. */
static void processes(void)
{
	ht_redis *r = ht_redis_default();
	struct worker w;
	pid_t pids[PROCS];
	hl_client *c;
	int i, status, left = PROCS;
	int64_t deadline;

	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		HT_CHECK(pids[i] >= 0);
		if (pids[i] == 0) {
			c = ht_client(r, 0);
			w.r = r;
			w.c = c;
			w.shared = NULL;
			w.name = "mutex:procs";
			w.counter = "mutex:procs:counter";
			w.iters = PROC_ITERS;
			work(&w);
			hl_client_free(c);
			_exit(0);
		}
	}
	c = ht_client(r, 0);
	w.r = r;
	w.c = c;
	w.shared = NULL;
	w.name = "mutex:procs";
	w.counter = "mutex:procs:counter";
	w.iters = PROC_ITERS;
	work(&w);

	deadline = ht_now_ms() + 60000 * ht_scale();
	while (left > 0 && ht_now_ms() < deadline) {
		for (i = 0; i < PROCS; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				HT_CHECKF(WIFEXITED(status) &&
				                  WEXITSTATUS(status) == 0,
				          "child %d failed (status 0x%x)", i,
				          status);
				pids[i] = 0;
				left--;
			}
		}
		ht_sleep_ms(20);
	}
	for (i = 0; i < PROCS; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
			HT_FAIL("child %d did not finish", i);
		}
	HT_EQ(ht_get_int(ht_raw_of(r), "mutex:procs:counter"),
	      (PROCS + 1) * PROC_ITERS);
	HT_EQ(ht_exists(r, HT_S("mutex:procs")), 0);
	hl_client_free(c);
}

/* Threads of one client with a single command connection: they queue on
 * it, and the counter still ends exact. */
static void small_pool(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int i;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.pool_size = 1;
	c = ht_client_url(r->url, &o);
	for (i = 0; i < THREADS; i++) {
		w[i].r = r;
		w[i].c = c;
		w[i].shared = NULL;
		w[i].name = "mutex:pool1";
		w[i].counter = "mutex:pool1:counter";
		w[i].iters = ITERS / 2;
		t[i] = ht_thread_start(work_thread, &w[i]);
	}
	for (i = 0; i < THREADS; i++)
		ht_thread_join(t[i], 60000);
	HT_EQ(ht_get_int(ht_raw_of(r), "mutex:pool1:counter"),
	      THREADS * (ITERS / 2));
	hl_client_free(c);
}

/* A thread that releases and at once re-acquires does not starve the
 * others of its process (the in-process FIFO gate): with a 1 ms critical
 * section, no acquisition waits anywhere near the bound. */
struct fair {
	hl_lock *l;
	int64_t max_wait;
	int rc;
};

static void *fair_thread(void *arg)
{
	struct fair *f = arg;
	int i, acquired;

	for (i = 0; i < 50; i++) {
		int64_t t0 = ht_now_ms(), dt;

		acquired = 0;
		f->rc = hl_lock_try_acquire(&acquired, f->l, 20000, -1, NULL);
		if (f->rc != HL_OK || !acquired) {
			f->rc = f->rc ? f->rc : -100;
			return NULL;
		}
		dt = ht_now_ms() - t0;
		if (dt > f->max_wait)
			f->max_wait = dt;
		ht_sleep_ms(1);
		f->rc = hl_lock_release(NULL, f->l);
		if (f->rc != HL_OK)
			return NULL;
	}
	return NULL;
}

static void fairness(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "mutex:fair");
	struct fair f[THREADS];
	pthread_t t[THREADS];
	int64_t worst = 0;
	int i;

	for (i = 0; i < THREADS; i++) {
		memset(&f[i], 0, sizeof f[i]);
		f[i].l = l;
		t[i] = ht_thread_start(fair_thread, &f[i]);
	}
	for (i = 0; i < THREADS; i++)
		ht_thread_join(t[i], 60000);
	for (i = 0; i < THREADS; i++) {
		HT_OK(f[i].rc);
		if (f[i].max_wait > worst)
			worst = f[i].max_wait;
	}
	ht_note("worst wait %lld ms", (long long)worst);
	HT_RANGE(worst, 0, 1000 * ht_scale());
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(threads), HT_CASE(threads_shared_handle), HT_CASE(processes),
        HT_CASE(small_pool), HT_CASE(fairness))
