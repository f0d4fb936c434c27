/*
 * The waiting line of the default lock across processes (issue 19): each
 * process has its own client (forked before it makes one), so the
 * in-process gate plays no part.
 *
 * On Redis, beside Redisson's keys (docs/PROTOCOL.md, "The waiting line"):
 *   hilock_line:{name}          ZSET client id -> ticket (2, 3, ...)
 *   hilock_line_timeout:{name}  ZSET client id -> deadline (ms, Redis TIME)
 *   hilock_line:{name}:<id>     the client's channel: its ticket = its turn
 * both keys with a PEXPIRE of the place's lease (3000 ms). A waiter
 * renews its place by attempting again at most 1500 ms later; a free lock
 * is kept for the live first in line, even from a single attempt; a
 * release that frees the lock tells the first its ticket on its channel
 * and publishes "0" on the lock channel, as Redisson's.
 *
 * The parent process never makes a client before its last fork(): the
 * children are forked from a process without threads, so the cases need
 * not be nosan. Every child dies with the parent (PR_SET_PDEATHSIG), a
 * SIGSTOPped one too, so a failed case leaves nothing behind.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/read.h>

#define LINE_LEASE   3000 /* a place lapses this long after its refresh */
#define LINE_REFRESH 1500 /* a waiter re-attempts at least this often */
#define MAXP         12

/* ---- Redis side ---------------------------------------------------------- */

typedef struct names {
	char lock[64];
	char line[96];
	char timeout[96];
	char channel[96];
} names;

static names names_of(const char *lock)
{
	names n;
	snprintf(n.lock, sizeof n.lock, "%s", lock);
	snprintf(n.line, sizeof n.line, "hilock_line:{%s}", lock);
	snprintf(n.timeout, sizeof n.timeout, "hilock_line_timeout:{%s}", lock);
	snprintf(n.channel, sizeof n.channel, "redisson_lock__channel:{%s}",
	         lock);
	return n;
}

static long long zcard(ht_redis *r, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "ZCARD %s", key);
	long long n;
	HT_EQ(rep->type, REDIS_REPLY_INTEGER);
	n = rep->integer;
	freeReplyObject(rep);
	return n;
}

/* 1 and *score if member is in the ZSET key, else 0. */
static int zscore(ht_redis *r, const char *key, const char *member,
                  long long *score)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "ZSCORE %s %s", key, member);
	int in = rep->type == REDIS_REPLY_STRING;
	HT_CHECKF(in || rep->type == REDIS_REPLY_NIL, "ZSCORE %s: type %d", key,
	          rep->type);
	if (in && score)
		*score = atoll(rep->str);
	freeReplyObject(rep);
	return in;
}

/* The client id in an owner string "<client uuid>:<thread>". */
static void client_of(const char *owner, char *buf, size_t len)
{
	size_t k = strcspn(owner, ":");
	HT_CHECK(k < len);
	memcpy(buf, owner, k);
	buf[k] = '\0';
}

/* 1 and *score if the waiter owner has a place in the ZSET key: its
 * client's (a client's waiters of one lock queue in the client, and the
 * first of them waits in Redis for all of them). */
static int place(ht_redis *r, const char *key, const char *owner,
                 long long *score)
{
	char id[128];
	client_of(owner, id, sizeof id);
	return zscore(r, key, id, score);
}

/* The server's clock (TIME) in ms. */
static long long redis_now_ms(ht_redis *r)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "TIME");
	long long ms;
	HT_EQ(rep->type, REDIS_REPLY_ARRAY);
	ms = atoll(rep->element[0]->str) * 1000 +
	     atoll(rep->element[1]->str) / 1000;
	freeReplyObject(rep);
	return ms;
}

/* Scripts Redis ran (hilock sends EVALSHA, and EVAL after a NOSCRIPT). */
static long long scripts_run(ht_redis *r)
{
	return ht_cmd_calls(r, "evalsha") + ht_cmd_calls(r, "eval");
}

typedef struct zcard_pred {
	ht_redis *r;
	const char *key;
	long long want;
} zcard_pred;

static int zcard_is(void *arg)
{
	zcard_pred *p = arg;
	return zcard(p->r, p->key) == p->want;
}

/* Wait until the line of n has want places. */
static void wait_line(ht_redis *r, const names *n, long long want)
{
	zcard_pred p = {r, n->line, want};
	HT_CHECKF(ht_wait_until(zcard_is, &p, 10000),
	          "%s has %lld places, expected %lld (no waiting line?)",
	          n->line, zcard(r, n->line), want);
}

/* Neither ZSET of the line has owner. */
static void check_not_in_line(ht_redis *r, const names *n, const char *owner)
{
	HT_CHECKF(!place(r, n->line, owner, NULL), "%s still in %s", owner,
	          n->line);
	HT_CHECKF(!place(r, n->timeout, owner, NULL), "%s still in %s", owner,
	          n->timeout);
}

static void cs_path(char *path, size_t len)
{
	int fd;
	snprintf(path, len, "/tmp/hl-line-XXXXXX");
	fd = mkstemp(path);
	HT_CHECK(fd >= 0);
	close(fd);
}

/* ---- processes ----------------------------------------------------------- */

/* What a child reports; in MAP_SHARED memory. */
typedef struct slot {
	atomic_int state;   /* 1 client made, 2 holds (holder), 3 done */
	atomic_int release; /* set by the parent: the holder releases */
	int rc, acquired;
	int got, timeouts, errors, lost;
	int64_t t_call, t_acquired;
	int64_t max_wait;
	int max_overtaken;
	int64_t hold_total;
	char owner[128];
} slot;

typedef struct shared {
	atomic_int go, stop;
	atomic_int seq; /* acquisitions so far, counted inside the lock */
	slot s[MAXP];
} shared;

static shared *shared_new(void)
{
	shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	HT_CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	return sh;
}

typedef struct role {
	ht_redis *r;
	shared *sh;
	int i;
	const char *name;
	const char *path; /* overlap record */
	int64_t wait_ms, hold_ms;
} role;

/* Fork a child that runs fn(ro) and exits 0 (a failed check in it exits
 * 1). It dies with the parent. */
static pid_t spawn(void (*fn)(const role *), const role *ro)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(9);
		fn(ro);
		_exit(0);
	}
	return pid;
}

/* Reap pid within ms (scaled); it must have exited 0. */
static void reap(pid_t pid, int64_t ms)
{
	int status;
	int64_t deadline = ht_now_ms() + ms * ht_scale();

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		HT_CHECKF(got == 0, "waitpid: %s", strerror(errno));
		if (ht_now_ms() > deadline) {
			kill(pid, SIGCONT);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			HT_FAIL("child %d did not exit within %lld ms",
			        (int)pid, (long long)ms);
		}
		ht_sleep_ms(5);
	}
	HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	          "child %d failed: status 0x%x (see its output above)",
	          (int)pid, status);
}

static void kill_reap(pid_t pid)
{
	int status;
	kill(pid, SIGCONT);
	kill(pid, SIGKILL);
	HT_EQ(waitpid(pid, &status, 0), pid);
}

static void owner_of(hl_lock *l, char *buf, size_t len)
{
	HT_OK(hl_lock_owner(NULL, l, buf, len));
}

static void wait_flag(atomic_int *f, int64_t ms)
{
	int64_t end = ht_now_ms() + ms * ht_scale();
	while (!atomic_load(f)) {
		HT_CHECKF(ht_now_ms() < end, "flag not set within %lld ms",
		          (long long)ms);
		ht_sleep_ms(2);
	}
}

/* Wait until the child of s reached state want. */
static void wait_state(slot *s, int want)
{
	int64_t end = ht_now_ms() + 10000 * ht_scale();
	while (atomic_load(&s->state) < want) {
		HT_CHECKF(ht_now_ms() < end, "child not in state %d", want);
		ht_sleep_ms(2);
	}
}

/* Takes the lock at once, holds it until told to release. */
static void role_holder(const role *ro)
{
	slot *s = &ro->sh->s[ro->i];
	hl_client *c = ht_client(ro->r, 0);
	hl_lock *l = ht_lock(c, ro->name);
	int acquired = 0;
	char tag[16];

	snprintf(tag, sizeof tag, "h%d", ro->i);
	owner_of(l, s->owner, sizeof s->owner);
	atomic_store(&s->state, 1);
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 1);
	ht_cs_enter(ro->path, tag);
	s->t_acquired = ht_now_ms();
	atomic_store(&s->state, 2);
	wait_flag(&s->release, 60000);
	ht_cs_leave(ro->path, tag);
	HT_OK(hl_lock_release(NULL, l));
	atomic_store(&s->state, 3);
	hl_lock_free(l);
	hl_client_free(c);
}

/* One wait of wait_ms; if it gets the lock, holds it hold_ms. */
static void role_waiter(const role *ro)
{
	slot *s = &ro->sh->s[ro->i];
	hl_client *c = ht_client(ro->r, 0);
	hl_lock *l = ht_lock(c, ro->name);
	char tag[16];

	snprintf(tag, sizeof tag, "w%d", ro->i);
	owner_of(l, s->owner, sizeof s->owner);
	atomic_store(&s->state, 1);
	s->t_call = ht_now_ms();
	s->rc = hl_lock_try_acquire(&s->acquired, l, ro->wait_ms, -1, NULL);
	s->t_acquired = ht_now_ms();
	if (s->rc == HL_OK && s->acquired) {
		ht_cs_enter(ro->path, tag);
		ht_sleep_ms(ro->hold_ms);
		ht_cs_leave(ro->path, tag);
		HT_OK(hl_lock_release(NULL, l));
	}
	atomic_store(&s->state, 3);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Loops acquire (wait_ms) / hold / release until stop, or for n
 * acquisitions (ro->hold_ms < 0: a random hold of 0..-hold_ms ms). Counts
 * its waits and how many acquisitions of others passed it in each. */
static void loop_body(const role *ro, int n, int64_t for_ms)
{
	slot *s = &ro->sh->s[ro->i];
	hl_client *c = ht_client(ro->r, 0);
	hl_lock *l = ht_lock(c, ro->name);
	unsigned seed = (unsigned)getpid();
	int64_t until;
	char tag[16];

	snprintf(tag, sizeof tag, "p%d", ro->i);
	owner_of(l, s->owner, sizeof s->owner);
	atomic_store(&s->state, 1);
	wait_flag(&ro->sh->go, 30000);
	until = ht_now_ms() + for_ms;
	while ((n > 0 && s->got < n) ||
	       (n == 0 && !atomic_load(&ro->sh->stop) && ht_now_ms() < until)) {
		int acquired = 0, lost = 0, rc, seen, k;
		int64_t t0 = ht_now_ms(), t1, hold;

		seen = atomic_load(&ro->sh->seq);
		rc = hl_lock_try_acquire(&acquired, l, ro->wait_ms, -1, NULL);
		t1 = ht_now_ms();
		if (rc != HL_OK) {
			s->errors++;
			ht_note("p%d: acquire: %s: %s", ro->i,
			        hl_status_name(rc), hl_error_last());
			if (s->errors > 3)
				break;
			continue;
		}
		if (!acquired) {
			s->timeouts++;
			ht_note("p%d: not acquired within %lld ms", ro->i,
			        (long long)ro->wait_ms);
			if (s->timeouts > 3)
				break;
			continue;
		}
		ht_cs_enter(ro->path, tag);
		k = atomic_fetch_add(&ro->sh->seq, 1);
		if (k - seen > s->max_overtaken)
			s->max_overtaken = k - seen;
		if (t1 - t0 > s->max_wait)
			s->max_wait = t1 - t0;
		hold = ro->hold_ms >= 0 ? ro->hold_ms
		                        : rand_r(&seed) % (-ro->hold_ms + 1);
		ht_sleep_ms(hold);
		hl_lock_is_lost(&lost, l);
		if (lost)
			s->lost++;
		ht_cs_leave(ro->path, tag);
		s->hold_total += ht_now_ms() - t1;
		s->got++;
		rc = hl_lock_release(NULL, l);
		if (rc != HL_OK) {
			s->errors++;
			ht_note("p%d: release: %s: %s", ro->i,
			        hl_status_name(rc), hl_error_last());
		}
	}
	atomic_store(&s->state, 3);
	hl_lock_free(l);
	hl_client_free(c);
}

static void role_loop_timed(const role *ro)
{
	/* stop flag, or 20 s at the most */
	loop_body(ro, 0, 20000);
}

static int g_loop_n;
static int64_t g_loop_ms;

static void role_loop_n(const role *ro)
{
	loop_body(ro, g_loop_n, 0);
}

static void role_loop_for(const role *ro)
{
	loop_body(ro, 0, g_loop_ms);
}

/* Fork n looping processes (0..n-1) and wait until each made its client. */
static void spawn_loops(pid_t *pids, int n, void (*fn)(const role *),
                        const role *base)
{
	int i;
	for (i = 0; i < n; i++) {
		role ro = *base;
		ro.i = i;
		pids[i] = spawn(fn, &ro);
	}
	for (i = 0; i < n; i++)
		wait_flag((atomic_int *)&base->sh->s[i].state, 30000);
}

/* What a run of looping processes came to. */
typedef struct tally {
	long long total, scripts;
	int min_got, max_got;
	double per; /* scripts per acquisition */
} tally;

/* Let the n processes spawned go, reap them, and add up: every one ended
 * without a timeout, an error or a lost hold. */
static void run_tally(ht_redis *r, shared *sh, const pid_t *pids, int n,
                      tally *t)
{
	long long s0 = scripts_run(r);
	int i;

	memset(t, 0, sizeof(*t));
	t->min_got = 1 << 30;
	atomic_store(&sh->go, 1);
	for (i = 0; i < n; i++)
		reap(pids[i], 30000);
	t->scripts = scripts_run(r) - s0;
	for (i = 0; i < n; i++) {
		slot *sl = &sh->s[i];
		t->total += sl->got;
		if (sl->got < t->min_got)
			t->min_got = sl->got;
		if (sl->got > t->max_got)
			t->max_got = sl->got;
		HT_CHECKF(sl->timeouts == 0 && sl->errors == 0 && sl->lost == 0,
		          "p%d: %d timeouts, %d errors, %d lost", i,
		          sl->timeouts, sl->errors, sl->lost);
	}
	t->per = t->total ? (double)t->scripts / (double)t->total : 0;
}

/* ---- 1. no herd ---------------------------------------------------------- */

/* 8 processes loop acquire / 1 ms / release for 1.5 s. A release wakes
 * only the head of the line, so a hand-off costs about 3 scripts (the
 * attempt that joins the line, the head's acquire, the release), where a
 * herd costs about one attempt per waiting process (8 here). */
static void no_herd(void)
{
	enum { P = 8 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	names n = names_of("line:herd");
	role base = {r, sh, 0, "line:herd", NULL, 10000, 1};
	char path[64];
	pid_t pids[P];
	tally t;

	cs_path(path, sizeof path);
	base.path = path;
	g_loop_ms = 1500;
	spawn_loops(pids, P, role_loop_for, &base);
	run_tally(r, sh, pids, P, &t);
	HT_EQ(ht_cs_check(path), t.total);
	ht_note("%lld acquisitions, %lld scripts (%.2f per acquisition), "
	        "fewest/most %d/%d",
	        t.total, t.scripts, t.per, t.min_got, t.max_got);
	HT_CHECKF(t.min_got >= 1, "a process never got the lock in 1.5 s");
	HT_CHECKF(t.total >= P, "only %lld acquisitions", t.total);
	HT_CHECKF(t.per <= 4.0,
	          "%.2f scripts per acquisition: every release woke the herd?",
	          t.per);
	/* the line is gone with the last waiter */
	HT_CHECK(zcard(r, n.line) == 0);
	unlink(path);
	munmap(sh, sizeof(*sh));
}

/* ---- 1b. the semaphore: no herd either --------------------------------- */

/* Loops take one permit (10 s wait) / 1 ms / give it back until told to
 * stop; counts how many are inside at once (never more than the permits). */
static atomic_int *g_inside, *g_most_inside;

/* The loop of semaphore_no_herd: a semaphore, or (g_expsem) a
 * permit-expirable one with 10 s leases. */
static int g_expsem;

static int sem_take(hl_semaphore *sem, hl_expsem *xs, char *id, int *acquired,
                    int64_t wait_ms)
{
	if (xs)
		return hl_expsem_try_acquire(acquired, id, 1, xs, wait_ms,
		                             10000, NULL);
	return hl_semaphore_try_acquire(acquired, sem, 1, wait_ms, NULL);
}

static void role_sem_loop(const role *ro)
{
	slot *s = &ro->sh->s[ro->i];
	hl_client *c = ht_client(ro->r, 0);
	hl_semaphore *sem = NULL;
	hl_expsem *xs = NULL;
	char id[HL_PERMIT_ID_LEN + 1];
	int64_t until;

	if (g_expsem)
		HT_OK(hl_expsem_new(&xs, c, ro->name, strlen(ro->name)));
	else
		HT_OK(hl_semaphore_new(&sem, c, ro->name, strlen(ro->name)));
	atomic_store(&s->state, 1);
	wait_flag(&ro->sh->go, 30000);
	until = ht_now_ms() + g_loop_ms;
	while (ht_now_ms() < until) {
		int acquired = 0, in;
		int rc = sem_take(sem, xs, id, &acquired, ro->wait_ms);
		if (rc != HL_OK || !acquired) {
			if (rc != HL_OK)
				s->errors++;
			else
				s->timeouts++;
			ht_note("p%d: %s", ro->i,
			        rc != HL_OK ? hl_error_last() : "timed out");
			break;
		}
		in = atomic_fetch_add(g_inside, 1) + 1;
		if (in > atomic_load(g_most_inside))
			atomic_store(g_most_inside, in);
		ht_sleep_ms(1);
		atomic_fetch_sub(g_inside, 1);
		s->got++;
		rc = xs ? hl_expsem_release(xs, id)
		        : hl_semaphore_release(sem, 1);
		if (rc != HL_OK) {
			s->errors++;
			break;
		}
	}
	atomic_store(&s->state, 3);
	hl_semaphore_free(sem);
	hl_expsem_free(xs);
	hl_client_free(c);
}

/* 8 processes on a semaphore of 2 permits (expsem: permit-expirable), 1.5
 * s. A release tells the first in line only (a herd costs one attempt per
 * waiting process): about 3 scripts per acquisition, every process served,
 * never more than 2 inside, and the line gone at the end. */
static void no_herd_of(const char *name, int expsem)
{
	enum { P = 8 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	names n = names_of(name);
	role base = {r, sh, 0, name, NULL, 10000, 1};
	hl_client *c;
	hl_semaphore *sem = NULL;
	hl_expsem *xs = NULL;
	atomic_int *counters =
	        mmap(NULL, 2 * sizeof(atomic_int), PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pids[P];
	tally t;
	int set = 0;
	int64_t left = -1;

	HT_CHECK(counters != MAP_FAILED);
	atomic_init(&counters[0], 0);
	atomic_init(&counters[1], 0);
	g_inside = &counters[0];
	g_most_inside = &counters[1];
	g_loop_ms = 1500;
	g_expsem = expsem;
	/* the processes first: no client of this process before a fork */
	spawn_loops(pids, P, role_sem_loop, &base);
	c = ht_client(r, 0);
	if (expsem) {
		HT_OK(hl_expsem_new(&xs, c, name, strlen(name)));
		HT_OK(hl_expsem_try_set_permits(&set, xs, 2));
	} else {
		HT_OK(hl_semaphore_new(&sem, c, name, strlen(name)));
		HT_OK(hl_semaphore_try_set_permits(&set, sem, 2));
	}
	HT_EQ(set, 1);
	run_tally(r, sh, pids, P, &t);
	ht_note("%lld acquisitions, %lld scripts (%.2f per acquisition), "
	        "fewest/most %d/%d, at most %d inside",
	        t.total, t.scripts, t.per, t.min_got, t.max_got,
	        atomic_load(g_most_inside));
	HT_CHECKF(t.min_got >= 1, "a process never got a permit in 1.5 s");
	HT_CHECKF(atomic_load(g_most_inside) <= 2, "%d inside a semaphore of 2",
	          atomic_load(g_most_inside));
	HT_CHECKF(t.per <= 4.0,
	          "%.2f scripts per acquisition: every release woke the herd?",
	          t.per);
	/* every permit back, the line gone */
	if (expsem)
		HT_OK(hl_expsem_available(&left, xs));
	else
		HT_OK(hl_semaphore_available(&left, sem));
	HT_EQ(left, 2);
	HT_CHECK(zcard(r, n.line) == 0);
	hl_semaphore_free(sem);
	hl_expsem_free(xs);
	hl_client_free(c);
	munmap(counters, 2 * sizeof(atomic_int));
	munmap(sh, sizeof(*sh));
}

static void semaphore_no_herd(void)
{
	no_herd_of("line:sem", 0);
}

static void expsem_no_herd(void)
{
	no_herd_of("line:xsem", 1);
}

/* ---- 2. random holds ----------------------------------------------------- */

/* 8 processes, 10 acquisitions each, holds of 0..40 ms, 20 s waits.
 * Asserted:
 * - no acquire times out; no overlap;
 * - the longest wait is at most 4 rounds of the others' holds plus a
 *   slack. A round is 7 hand-offs; the time of a hand-off is measured,
 *   not assumed: the run's length over its acquisitions (the mean hold,
 *   20 ms, plus what a hand-off costs on this machine now). The slack,
 *   1 s (scaled), covers a process descheduled for a while on a loaded
 *   2-core machine with 8 clients' threads, and the first wait, when all
 *   8 arrive at once;
 * - the wait order follows arrival: while a process waits, at most two
 *   rounds (14) of others' acquisitions pass it. In the line that is at
 *   most one round (the places ahead of it); the second round allows a
 *   place lapsed and joined again once. Without the line, the processes
 *   that loop win the races again and again. */
static void random_holds(void)
{
	enum { P = 8, N = 10 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	role base = {r, sh, 0, "line:random", NULL, 20000, -40};
	char path[64];
	pid_t pids[P];
	int64_t t0, t1, max_wait = 0, hold_total = 0;
	int i, max_over = 0;
	double cycle, bound;

	cs_path(path, sizeof path);
	base.path = path;
	g_loop_n = N;
	spawn_loops(pids, P, role_loop_n, &base);
	t0 = ht_now_ms();
	atomic_store(&sh->go, 1);
	for (i = 0; i < P; i++)
		reap(pids[i], 40000);
	t1 = ht_now_ms();
	for (i = 0; i < P; i++) {
		slot *s = &sh->s[i];
		HT_CHECKF(s->timeouts == 0 && s->errors == 0 && s->lost == 0,
		          "p%d: %d timeouts, %d errors, %d lost", i,
		          s->timeouts, s->errors, s->lost);
		HT_EQ(s->got, N);
		if (s->max_wait > max_wait)
			max_wait = s->max_wait;
		if (s->max_overtaken > max_over)
			max_over = s->max_overtaken;
		hold_total += s->hold_total;
		ht_note("p%d: longest wait %lld ms, passed by %d", i,
		        (long long)s->max_wait, s->max_overtaken);
	}
	HT_EQ(ht_cs_check(path), P * N);
	cycle = (double)(t1 - t0) / (P * N);
	bound = 4.0 * (P - 1) * cycle + 1000.0 * ht_scale();
	ht_note("run %lld ms, mean hold %.1f ms, hand-off cycle %.1f ms, "
	        "longest wait %lld ms (bound %.0f), most passed %d",
	        (long long)(t1 - t0), (double)hold_total / (P * N), cycle,
	        (long long)max_wait, bound, max_over);
	HT_CHECKF(max_wait <= bound,
	          "a process waited %lld ms, more than 4 rounds (%.0f ms)",
	          (long long)max_wait, bound);
	HT_CHECKF(max_over <= 2 * (P - 1),
	          "a waiting process was passed by %d acquisitions", max_over);
	unlink(path);
	munmap(sh, sizeof(*sh));
}

/* ---- 3. a Redisson waiter among hilock processes ------------------------- */

/* Redisson's RLock wire behaviour, written from PROTOCOL.md section 2:
 * acquire when the hash is absent or has our field (HINCRBY, PEXPIRE),
 * else answer the PTTL; unlock: our field down by one, at zero DEL and
 * PUBLISH "0". */
static const char *RS_ACQUIRE =
        "if redis.call('exists', KEYS[1]) == 0 or "
        "redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
        "redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; "
        "return redis.call('pttl', KEYS[1]);";
static const char *RS_RELEASE =
        "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil; "
        "end; "
        "if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then "
        "redis.call('pexpire', KEYS[1], ARGV[3]); return 0; end; "
        "redis.call('del', KEYS[1]); "
        "redis.call('publish', KEYS[2], ARGV[1]); return 1;";

/* -1: acquired; else the PTTL Redis answered. */
static long long rs_try(redisContext *c, const names *n, const char *owner,
                        int lease)
{
	redisReply *rep = ht_raw(c, "EVAL %s 1 %s %d %s", RS_ACQUIRE, n->lock,
	                         lease, owner);
	long long ttl = -1;
	HT_CHECKF(rep->type == REDIS_REPLY_NIL ||
	                  rep->type == REDIS_REPLY_INTEGER,
	          "acquire script: type %d %s", rep->type,
	          rep->type == REDIS_REPLY_ERROR ? rep->str : "");
	if (rep->type == REDIS_REPLY_INTEGER)
		ttl = rep->integer < 0 ? 0 : rep->integer;
	freeReplyObject(rep);
	return ttl;
}

/* The next message on sub within ms: 1 "0" or "1" (Redisson wakes a
 * waiting thread), 0 for any other payload (Redisson ignores it), -1
 * when none came. */
static int rs_message(redisContext *sub, int64_t ms)
{
	for (;;) {
		redisReply *rep = NULL;
		int wake;
		if (redisReaderGetReply(sub->reader, (void **)&rep) != REDIS_OK)
			HT_FAIL("subscriber: bad reply");
		if (!rep) {
			if (ms <= 0 || !ht_fd_readable(sub->fd, (int)ms))
				return -1;
			HT_CHECKF(redisBufferRead(sub) == REDIS_OK,
			          "subscriber: %s", sub->errstr);
			continue;
		}
		HT_CHECK(rep->type == REDIS_REPLY_ARRAY && rep->elements == 3);
		wake = strcmp(rep->element[2]->str, "0") == 0 ||
		       strcmp(rep->element[2]->str, "1") == 0;
		freeReplyObject(rep);
		return wake;
	}
}

/* 4 hilock processes loop on the lock while an outsider speaking
 * Redisson's protocol only (raw commands: its acquire script, SUBSCRIBE,
 * a retry on "0" or after the PTTL, DEL + PUBLISH "0") takes it 6 times.
 * Redisson never looks at the line, and hilock's releases publish "0"
 * when a subscriber beyond the line listens: the outsider must be served
 * while the hilock processes keep contending, and the Redisson release
 * must wake hilock's waiters (its lease is 30 s, so only the message can
 * wake them in time). */
static void redisson_waiter_served(void)
{
	enum { P = 4, K = 10 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	names n = names_of("line:mixed");
	role base = {r, sh, 0, "line:mixed", NULL, 10000, 3};
	const char *owner = "0b7a3c1e-4f2d-4e8a-9c6b-5d4e3f2a1b0c:77";
	redisContext *c = ht_raw_new(r);
	char path[64];
	pid_t pids[P];
	int64_t t0, longest = 0;
	int k, i, got_before, got_after, attempts = 0;
	long long most_in_line = 0;

	cs_path(path, sizeof path);
	base.path = path;
	spawn_loops(pids, P, role_loop_timed, &base);
	atomic_store(&sh->go, 1);
	/* let them get going */
	for (i = 0; atomic_load(&sh->seq) < 20 && i < 1000; i++)
		ht_sleep_ms(5);
	got_before = atomic_load(&sh->seq);
	t0 = ht_now_ms();
	for (k = 0; k < K; k++) {
		int64_t w0 = ht_now_ms(), end = w0 + 15000 * ht_scale();
		redisContext *sub = NULL;
		long long ttl;

		for (;;) {
			attempts++;
			ttl = rs_try(c, &n, owner, 30000);
			if (ttl < 0)
				break;
			HT_CHECKF(ht_now_ms() < end,
			          "the Redisson waiter was not served in "
			          "%d s (acquisition %d)",
			          15 * ht_scale(), k + 1);
			/* the hilock processes wait in their line
			 * meanwhile (else this would not test it) */
			if (zcard(r, n.line) > most_in_line)
				most_in_line = zcard(r, n.line);
			if (!sub) {
				/* subscribe, then try again (Redisson) */
				sub = ht_sub_new(r, HT_S(n.channel));
				continue;
			}
			/* wait for "0"/"1" or the TTL */
			{
				int64_t until = ht_now_ms() + ttl;
				if (until > end)
					until = end;
				while (ht_now_ms() < until &&
				       rs_message(sub, until - ht_now_ms()) ==
				               0)
					;
			}
		}
		if (sub)
			redisFree(sub);
		if (ht_now_ms() - w0 > longest)
			longest = ht_now_ms() - w0;
		ht_cs_enter(path, "redisson");
		ht_sleep_ms(3);
		ht_cs_leave(path, "redisson");
		{
			redisReply *rep =
			        ht_raw(c, "EVAL %s 2 %s %s 0 %s 30000",
			               RS_RELEASE, n.lock, n.channel, owner);
			HT_CHECKF(rep->type == REDIS_REPLY_INTEGER &&
			                  rep->integer == 1,
			          "Redisson release: type %d", rep->type);
			freeReplyObject(rep);
		}
		/* the hilock processes go on between the outsider's turns */
		{
			int seen = atomic_load(&sh->seq);
			for (i = 0;
			     atomic_load(&sh->seq) < seen + 2 && i < 2000; i++)
				ht_sleep_ms(2);
			HT_CHECKF(atomic_load(&sh->seq) >= seen + 2,
			          "hilock processes stalled after the "
			          "Redisson release");
		}
	}
	got_after = atomic_load(&sh->seq);
	ht_note("Redisson waiter: %d acquisitions in %lld ms (%d attempts, "
	        "longest wait %lld ms); hilock: %d acquisitions meanwhile",
	        K, (long long)(ht_now_ms() - t0), attempts, (long long)longest,
	        got_after - got_before);
	HT_CHECKF(most_in_line >= 1,
	          "no hilock process ever waited in %s beside the Redisson "
	          "waiter",
	          n.line);
	atomic_store(&sh->stop, 1);
	for (i = 0; i < P; i++)
		reap(pids[i], 30000);
	for (i = 0; i < P; i++) {
		slot *s = &sh->s[i];
		HT_CHECKF(s->timeouts == 0 && s->errors == 0 && s->lost == 0,
		          "p%d: %d timeouts, %d errors, %d lost", i,
		          s->timeouts, s->errors, s->lost);
		HT_CHECK(s->got >= 1);
	}
	HT_EQ(ht_cs_check(path), atomic_load(&sh->seq) + K);
	redisFree(c);
	unlink(path);
	munmap(sh, sizeof(*sh));
}

/* ---- 4. a waiter killed at the head or behind it ------------------------- */

/* A holds; B, C, D join the line in that order (each forked once the one
 * before has its place); one of them is killed (-9); A releases. The
 * others still get the lock, in line order, by the time the dead place
 * lapses (its lease, 3 s after its last refresh, plus a refresh period,
 * 1.5 s, for the next head to notice, plus a slack of 2 s, scaled), and
 * the dead owner's place is gone from both ZSETs. */
static void kill_one(const char *name, int victim)
{
	enum { A = 0, B = 1, C = 2, D = 3 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	names n = names_of(name);
	role ro = {r, sh, A, name, NULL, 30000, 100};
	char path[64];
	pid_t pids[4];
	long long tickets[4];
	int64_t t_kill, bound = LINE_LEASE + LINE_REFRESH + 2000 * ht_scale();
	int i, prev = -1;

	cs_path(path, sizeof path);
	ro.path = path;
	pids[A] = spawn(role_holder, &ro);
	wait_state(&sh->s[A], 2);
	for (i = B; i <= D; i++) {
		ro.i = i;
		pids[i] = spawn(role_waiter, &ro);
		wait_line(r, &n, i);
	}
	for (i = B; i <= D; i++) {
		HT_CHECKF(place(r, n.line, sh->s[i].owner, &tickets[i]),
		          "w%d not in the line", i);
		HT_CHECK(place(r, n.timeout, sh->s[i].owner, NULL));
		HT_CHECK(tickets[i] >= 2);
		if (i > B)
			HT_CHECKF(tickets[i] > tickets[i - 1],
			          "tickets not in arrival order: %lld, %lld",
			          tickets[i - 1], tickets[i]);
	}
	kill_reap(pids[victim]);
	t_kill = ht_now_ms();
	atomic_store(&sh->s[A].release, 1);
	reap(pids[A], 10000);
	for (i = B; i <= D; i++) {
		slot *s = &sh->s[i];
		if (i == victim)
			continue;
		reap(pids[i], 30000);
		HT_OK(s->rc);
		HT_EQ(s->acquired, 1);
		ht_note("w%d acquired %lld ms after the kill", i,
		        (long long)(s->t_acquired - t_kill));
		HT_CHECKF(s->t_acquired - t_kill <= bound,
		          "w%d acquired %lld ms after the kill (bound %lld)", i,
		          (long long)(s->t_acquired - t_kill),
		          (long long)bound);
		if (prev >= 0)
			HT_CHECKF(s->t_acquired >= sh->s[prev].t_acquired,
			          "w%d got the lock before w%d", i, prev);
		prev = i;
	}
	HT_EQ(ht_cs_check(path), 3);
	check_not_in_line(r, &n, sh->s[victim].owner);
	HT_EQ(ht_exists(r, HT_S(name)), 0);
	unlink(path);
	munmap(sh, sizeof(*sh));
}

static void kill_head(void)
{
	kill_one("line:kill_head", 1);
}

static void kill_behind(void)
{
	kill_one("line:kill_behind", 2);
}

/* ---- 5. the head stopped ------------------------------------------------- */

/* A holds; B then C join; B (the head) is stopped (SIGSTOP); A releases.
 * While B's place is live the free lock stays reserved for it: another
 * client's single attempt is refused and C waits; C gets it once B's
 * place lapsed (3 s after B's last refresh, plus C's refresh period
 * 1.5 s, plus a slack of 2 s, scaled, after the stop). After SIGCONT B
 * joins the line again and gets the lock too. */
static void sigstop_head(void)
{
	enum { A = 0, B = 1, C = 2 };
	ht_redis *r = ht_redis_default();
	shared *sh = shared_new();
	names n = names_of("line:stop");
	role ro = {r, sh, A, "line:stop", NULL, 40000, 300};
	char path[64], trier_owner[128];
	pid_t pids[3];
	hl_client *tc;
	hl_lock *tl;
	long long deadline, rnow;
	int64_t t_stop, t_cont, local_deadline, bound;
	int acquired = 7, tries = 0;

	cs_path(path, sizeof path);
	ro.path = path;
	pids[A] = spawn(role_holder, &ro);
	wait_state(&sh->s[A], 2);
	ro.i = B;
	pids[B] = spawn(role_waiter, &ro);
	wait_line(r, &n, 1);
	ro.i = C;
	pids[C] = spawn(role_waiter, &ro);
	wait_line(r, &n, 2);
	HT_CHECK(kill(pids[B], SIGSTOP) == 0);
	t_stop = ht_now_ms();
	/* B's deadline, on the local clock */
	HT_CHECKF(place(r, n.timeout, sh->s[B].owner, &deadline),
	          "the head has no deadline");
	rnow = redis_now_ms(r);
	local_deadline = ht_now_ms() + (deadline - rnow);
	ht_note("the head's place lapses in %lld ms", deadline - rnow);
	HT_RANGE(deadline - rnow, 0, LINE_LEASE + 200);
	atomic_store(&sh->s[A].release, 1);
	reap(pids[A], 10000);

	/* no more fork()s: the parent may make a client now */
	tc = ht_client(r, 0);
	tl = ht_lock(tc, "line:stop");
	owner_of(tl, trier_owner, sizeof trier_owner);
	while (redis_now_ms(r) < deadline - 300) {
		HT_OK(hl_lock_try_acquire(&acquired, tl, 0, -1, NULL));
		if (redis_now_ms(r) >= deadline - 100) {
			/* the place may have lapsed during the attempt */
			if (acquired)
				HT_OK(hl_lock_release(NULL, tl));
			break;
		}
		HT_CHECKF(!acquired, "a single attempt took the lock reserved "
		                     "for the stopped head");
		HT_EQ(ht_exists(r, HT_S("line:stop")), 0); /* free */
		HT_CHECKF(atomic_load(&sh->s[C].state) < 3 &&
		                  !sh->s[C].acquired,
		          "C got the lock reserved for the stopped head");
		/* a single attempt never takes a place */
		check_not_in_line(r, &n, trier_owner);
		HT_CHECK(place(r, n.line, sh->s[B].owner, NULL));
		tries++;
		ht_sleep_ms(100);
	}
	HT_CHECKF(tries >= 1, "no attempt while the head's place was live");
	reap(pids[C], 30000);
	HT_OK(sh->s[C].rc);
	HT_EQ(sh->s[C].acquired, 1);
	bound = LINE_LEASE + LINE_REFRESH + 2000 * ht_scale();
	ht_note("C acquired %lld ms after the stop, %lld ms after the head's "
	        "deadline",
	        (long long)(sh->s[C].t_acquired - t_stop),
	        (long long)(sh->s[C].t_acquired - local_deadline));
	HT_CHECKF(sh->s[C].t_acquired >= local_deadline - 250,
	          "C took the lock %lld ms before the head's place lapsed",
	          (long long)(local_deadline - sh->s[C].t_acquired));
	HT_CHECKF(sh->s[C].t_acquired - t_stop <= bound,
	          "C acquired %lld ms after the stop (bound %lld)",
	          (long long)(sh->s[C].t_acquired - t_stop), (long long)bound);
	/* B resumes, joins again and gets it */
	HT_CHECK(kill(pids[B], SIGCONT) == 0);
	t_cont = ht_now_ms();
	reap(pids[B], 20000);
	HT_OK(sh->s[B].rc);
	HT_EQ(sh->s[B].acquired, 1);
	ht_note("B acquired %lld ms after SIGCONT",
	        (long long)(sh->s[B].t_acquired - t_cont));
	HT_EQ(ht_cs_check(path), 3);
	check_not_in_line(r, &n, sh->s[B].owner);
	check_not_in_line(r, &n, sh->s[C].owner);
	hl_lock_free(tl);
	hl_client_free(tc);
	unlink(path);
	munmap(sh, sizeof(*sh));
}

/* ---- 6.-8.: clients of one process (each its own owner and uuid) --------- */

typedef struct twait {
	hl_lock *l;
	int64_t wait_ms;
	hl_cancel *cancel;
	int rc, acquired;
	int64_t took;
	int hold; /* 1: keep it until release is set */
	atomic_int got, done, release;
} twait;

static void *twait_main(void *arg)
{
	twait *w = arg;
	int64_t t0 = ht_now_ms();
	w->rc = hl_lock_try_acquire(&w->acquired, w->l, w->wait_ms, -1,
	                            w->cancel);
	w->took = ht_now_ms() - t0;
	if (w->rc == HL_OK && w->acquired) {
		atomic_store(&w->got, 1);
		while (w->hold && !atomic_load(&w->release))
			ht_sleep_ms(2);
		if (hl_lock_release(NULL, w->l) != HL_OK)
			w->rc = -100;
	}
	atomic_store(&w->done, 1);
	return NULL;
}

typedef struct inline_pred {
	ht_redis *r;
	const names *n;
	const char *owner;
	twait *w;
} inline_pred;

static int in_line_or_done(void *arg)
{
	inline_pred *p = arg;
	return atomic_load(&p->w->done) ||
	       place(p->r, p->n->line, p->owner, NULL);
}

static int line_keys_gone(void *arg)
{
	inline_pred *p = arg;
	return !ht_exists(p->r, HT_S(p->n->line)) &&
	       !ht_exists(p->r, HT_S(p->n->timeout));
}

/* A waiter that gives up leaves the line at once (its call removes its
 * place), not when the place's lease ends: both on its timeout and on a
 * cancel. */
static void leave_on_timeout(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = ht_lock(a, "line:leave"), *lb = ht_lock(b, "line:leave");
	names n = names_of("line:leave");
	char owner[128];
	int round;

	HT_OK(hl_lock_acquire(la, -1, NULL));
	/* an explicit owner: the same string from any thread */
	HT_OK(hl_lock_set_owner(lb, hl_owner_id_new()));
	owner_of(lb, owner, sizeof owner);
	for (round = 0; round < 2; round++) {
		twait w;
		inline_pred p = {r, &n, owner, &w};
		pthread_t t;
		int64_t gone_at;

		memset(&w, 0, sizeof w);
		w.l = lb;
		w.wait_ms = round == 0 ? 300 : 20000;
		if (round == 1)
			HT_OK(hl_cancel_new(&w.cancel));
		t = ht_thread_start(twait_main, &w);
		HT_CHECK(ht_wait_until(in_line_or_done, &p, 5000));
		HT_CHECKF(place(r, n.line, owner, NULL),
		          "the waiter never had a place in %s", n.line);
		HT_CHECK(place(r, n.timeout, owner, NULL));
		if (round == 1)
			hl_cancel_trigger(w.cancel);
		ht_thread_join(t, 10000);
		gone_at = ht_now_ms();
		if (round == 0) {
			HT_OK(w.rc);
			HT_EQ(w.acquired, 0);
			HT_RANGE(w.took, 300, 300 + 1000 * ht_scale());
		} else {
			/* (its message is the waiter thread's) */
			HT_EQ(w.rc, HL_EINTERRUPTED);
			hl_cancel_free(w.cancel);
		}
		/* at once: nothing else waits, so both keys are gone (an
		 * empty ZSET is no key) long before the place's own lease
		 * would take it (3 s after the place was made, just before).
		 * A second of grace for the leave, sent just after the call
		 * returned: 300 ms was too little for a TSan build on a busy
		 * 2-core machine. */
		HT_CHECKF(ht_wait_until(line_keys_gone, &p, 1000),
		          "the line kept the waiter that gave up");
		HT_CHECK(ht_now_ms() - gone_at < LINE_LEASE / 2);
		check_not_in_line(r, &n, owner);
	}
	/* the holder is untouched */
	HT_EQ(ht_hget_int(r, HT_S("line:leave"), ht_owner(la)), 1);
	HT_OK(hl_lock_release(NULL, la));
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* Without waiters there is no line: acquire / release, re-entry, and
 * single attempts (wait 0, never a waiter) refused by a holder create no
 * line key. With waiters, the keys carry the line lease (PTTL <= 3 s) and
 * vanish within 4 s of the last waiter leaving. */
static void keys_vanish(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0),
	          *c = ht_client(r, 0);
	hl_lock *la = ht_lock(a, "line:keys"), *lb = ht_lock(b, "line:keys"),
	        *lc = ht_lock(c, "line:keys");
	names n = names_of("line:keys");
	twait wb, wc;
	inline_pred p = {r, &n, NULL, NULL};
	pthread_t tb, tc;
	int i, acquired;
	long long pttl;
	int64_t t_done;

	for (i = 0; i < 20; i++) {
		HT_OK(hl_lock_acquire(la, -1, NULL));
		if (i % 4 == 0) {
			HT_OK(hl_lock_acquire(la, -1, NULL)); /* re-entry */
			HT_OK(hl_lock_release(NULL, la));
		}
		if (i % 2 == 0) {
			HT_OK(hl_lock_try_acquire(&acquired, lb, 0, -1, NULL));
			HT_EQ(acquired, 0);
		}
		HT_OK(hl_lock_release(NULL, la));
		HT_OK(hl_lock_try_acquire(&acquired, lb, 0, -1, NULL));
		HT_EQ(acquired, 1);
		HT_OK(hl_lock_release(NULL, lb));
		HT_EQ(ht_exists(r, HT_S(n.line)), 0);
		HT_EQ(ht_exists(r, HT_S(n.timeout)), 0);
	}
	/* two waiters */
	HT_OK(hl_lock_acquire(la, -1, NULL));
	memset(&wb, 0, sizeof wb);
	memset(&wc, 0, sizeof wc);
	wb.l = lb;
	wc.l = lc;
	wb.wait_ms = wc.wait_ms = 20000;
	tb = ht_thread_start(twait_main, &wb);
	wait_line(r, &n, 1);
	tc = ht_thread_start(twait_main, &wc);
	wait_line(r, &n, 2);
	pttl = ht_pttl(r, HT_S(n.line));
	HT_RANGE(pttl, 1, LINE_LEASE);
	pttl = ht_pttl(r, HT_S(n.timeout));
	HT_RANGE(pttl, 1, LINE_LEASE);
	HT_OK(hl_lock_release(NULL, la));
	ht_thread_join(tb, 20000);
	ht_thread_join(tc, 20000);
	t_done = ht_now_ms();
	HT_OK(wb.rc);
	HT_EQ(wb.acquired, 1);
	HT_OK(wc.rc);
	HT_EQ(wc.acquired, 1);
	HT_CHECKF(ht_wait_until(line_keys_gone, &p, 4000),
	          "line keys still there 4 s after the last waiter: "
	          "PTTL %lld / %lld",
	          ht_pttl(r, HT_S(n.line)), ht_pttl(r, HT_S(n.timeout)));
	ht_note("line keys gone %lld ms after the last waiter",
	        (long long)(ht_now_ms() - t_done));
	HT_EQ(ht_exists(r, HT_S("line:keys")), 0);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_lock_free(lc);
	hl_client_free(a);
	hl_client_free(b);
	hl_client_free(c);
}

typedef struct msg {
	char channel[160];
	char payload[32];
} msg;

/* A raw subscriber to the lock channel and to every place channel of the
 * line (hilock_line:{name}:<client id>, where a release may tell the
 * first in line its ticket). */
static redisContext *sub_all(ht_redis *r, const names *n)
{
	redisContext *s = ht_sub_new(r, HT_S(n->channel));
	redisReply *rep = ht_raw(s, "PSUBSCRIBE %s:*", n->line);
	HT_CHECK(rep->type == REDIS_REPLY_ARRAY && rep->elements == 3);
	freeReplyObject(rep);
	return s;
}

/* The messages up to a marker the test publishes itself on the lock
 * channel: what the release before it published (Redis delivers one
 * connection's messages in the order they were published). */
static int messages_until_marker(ht_redis *r, redisContext *sub, const names *n,
                                 msg *out, int max)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "PUBLISH %s marker", n->channel);
	struct timeval tv = {5 * ht_scale(), 0};
	int k = 0;

	freeReplyObject(rep);
	redisSetTimeout(sub, tv);
	for (;;) {
		redisReply *m = NULL;
		const redisReply *ch, *pl;
		if (redisGetReply(sub, (void **)&m) != REDIS_OK || !m)
			HT_FAIL("no pub/sub message within 5 s: %s",
			        sub->errstr);
		HT_CHECK(m->type == REDIS_REPLY_ARRAY && m->elements >= 3);
		ch = m->element[m->elements - 2];
		pl = m->element[m->elements - 1];
		if (strcmp(pl->str, "marker") == 0 &&
		    strcmp(ch->str, n->channel) == 0) {
			freeReplyObject(m);
			return k;
		}
		HT_CHECK(k < max);
		snprintf(out[k].channel, sizeof out[k].channel, "%s", ch->str);
		snprintf(out[k].payload, sizeof out[k].payload, "%s", pl->str);
		ht_note("published \"%s\" on %s", out[k].payload,
		        out[k].channel);
		k++;
		freeReplyObject(m);
	}
}

/* A release with a waiter in the line tells the first in line its ticket
 * (a decimal >= 2, the waiter's score in the line) once, on the waiter's
 * client's channel, and publishes "0" once on the lock channel (for
 * Redisson's waiters). Nothing else is published. With an empty line the
 * release publishes "0" on the lock channel only, as Redisson's. */
static void ticket_message(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = ht_lock(a, "line:ticket"),
	        *lb = ht_lock(b, "line:ticket");
	names n = names_of("line:ticket");
	redisContext *sub = sub_all(r, &n);
	char owner[128], id[128], place_ch[300];
	msg msgs[8];
	long long ticket = -1;
	int k, i, saw_ticket = 0, saw_zero = 0;
	twait w;
	pthread_t t;

	HT_OK(hl_lock_set_owner(lb, hl_owner_id_new()));
	owner_of(lb, owner, sizeof owner);
	client_of(owner, id, sizeof id);
	snprintf(place_ch, sizeof place_ch, "%s:%s", n.line, id);
	HT_OK(hl_lock_acquire(la, -1, NULL));
	memset(&w, 0, sizeof w);
	w.l = lb;
	w.wait_ms = 20000;
	w.hold = 1;
	t = ht_thread_start(twait_main, &w);
	wait_line(r, &n, 1);
	HT_CHECK(place(r, n.line, owner, &ticket));
	HT_CHECK(ticket >= 2);
	HT_OK(hl_lock_release(NULL, la));
	k = messages_until_marker(r, sub, &n, msgs, 8);
	for (i = 0; i < k; i++) {
		char *end;
		long long v = strtoll(msgs[i].payload, &end, 10);
		int on_lock = strcmp(msgs[i].channel, n.channel) == 0;
		HT_CHECKF(msgs[i].payload[0] && *end == '\0',
		          "not a decimal: \"%s\"", msgs[i].payload);
		HT_CHECKF(on_lock || strcmp(msgs[i].channel, place_ch) == 0,
		          "a message on %s, not the waiter's channel",
		          msgs[i].channel);
		if (v == 0 && on_lock)
			saw_zero++;
		else if (v == ticket && !on_lock)
			saw_ticket++;
		else
			HT_FAIL("unexpected message \"%s\" on %s (ticket %lld)",
			        msgs[i].payload, msgs[i].channel, ticket);
	}
	HT_EQ(saw_ticket, 1);
	HT_EQ(saw_zero, 1);
	/* the waiter got it; with nobody waiting its release says "0" */
	while (!atomic_load(&w.got) && !atomic_load(&w.done))
		ht_sleep_ms(2);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	atomic_store(&w.release, 1);
	ht_thread_join(t, 10000);
	HT_OK(w.rc);
	k = messages_until_marker(r, sub, &n, msgs, 8);
	HT_EQ(k, 1);
	HT_STREQ(msgs[0].channel, n.channel);
	HT_STREQ(msgs[0].payload, "0");
	redisFree(sub);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

/* The non-reentrant lock queues in the same line: a waiter takes a place,
 * the release tells it its ticket, and the line is gone afterwards. */
static void nonreentrant(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a = ht_client(r, 0), *b = ht_client(r, 0);
	hl_lock *la = NULL, *lb = NULL;
	names n = names_of("line:nonre");
	redisContext *sub = sub_all(r, &n);
	char owner[128], id[128], place_ch[300];
	msg msgs[8];
	long long ticket = -1;
	int k, i, told = 0;
	twait w;
	pthread_t t;

	HT_OK(hl_lock_new_kind(&la, a, HL_LOCK_NONREENTRANT, HT_S(n.lock)));
	HT_OK(hl_lock_new_kind(&lb, b, HL_LOCK_NONREENTRANT, HT_S(n.lock)));
	HT_OK(hl_lock_set_owner(lb, hl_owner_id_new()));
	owner_of(lb, owner, sizeof owner);
	client_of(owner, id, sizeof id);
	snprintf(place_ch, sizeof place_ch, "%s:%s", n.line, id);
	HT_OK(hl_lock_acquire(la, -1, NULL));
	memset(&w, 0, sizeof w);
	w.l = lb;
	w.wait_ms = 20000;
	t = ht_thread_start(twait_main, &w);
	wait_line(r, &n, 1);
	HT_CHECK(place(r, n.line, owner, &ticket));
	HT_OK(hl_lock_release(NULL, la));
	ht_thread_join(t, 10000);
	HT_OK(w.rc);
	HT_EQ(w.acquired, 1);
	k = messages_until_marker(r, sub, &n, msgs, 8);
	for (i = 0; i < k; i++)
		if (strcmp(msgs[i].channel, place_ch) == 0 &&
		    atoll(msgs[i].payload) == ticket)
			told++;
	HT_EQ(told, 1);
	HT_EQ(ht_exists(r, HT_S(n.line)), 0);
	HT_EQ(ht_exists(r, HT_S(n.timeout)), 0);
	redisFree(sub);
	hl_lock_free(la);
	hl_lock_free(lb);
	hl_client_free(a);
	hl_client_free(b);
}

HT_MAIN(HT_CASE(no_herd), HT_CASE(semaphore_no_herd), HT_CASE(expsem_no_herd),
        HT_CASE(random_holds), HT_CASE(redisson_waiter_served),
        HT_CASE(kill_head), HT_CASE(kill_behind), HT_CASE(sigstop_head),
        HT_CASE(leave_on_timeout), HT_CASE(keys_vanish),
        HT_CASE(ticket_message), HT_CASE(nonreentrant))
