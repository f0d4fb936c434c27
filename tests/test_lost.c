/*
 * Losing a lock while holding it: the key deleted or taken over behind the
 * holder's back, a SIGSTOPped holder, a SIGKILLed holder.
 */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define WD 1000

/* Wait for the hold to be found lost; returns how long it took. */
static int64_t wait_lost(hl_lock *l)
{
	int64_t t0 = ht_now_ms();
	int lost = 7;

	HT_OK(hl_lock_wait_lost(&lost, l, 10000 * ht_scale(), NULL));
	HT_EQ(lost, 1);
	return ht_now_ms() - t0;
}

static void deleted(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:deleted");
	int lost = 7, acquired = 0;
	int64_t t0, dt;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	/* held and renewed: not lost, wait_lost times out */
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost(&lost, l, 1200, NULL));
	HT_EQ(lost, 0);
	HT_RANGE(ht_now_ms() - t0, 1100, 1200 + 2000 * ht_scale());
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);

	ht_del(r, HT_S("lost:deleted"));
	dt = wait_lost(l);
	ht_note("lost noticed after %lld ms", (long long)dt);
	HT_RANGE(dt, 0, WD + 1000 * ht_scale());
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 1);
	/* the renewal did not re-create it */
	HT_EQ(ht_exists(r, HT_S("lost:deleted")), 0);

	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0); /* cleared by the release */
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD);

	/* and the lock can be taken again */
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

static void lost_fd(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:fd");
	struct pollfd p;
	int fd = -7, lost = 0;

	HT_RC(hl_lock_lost_fd(&fd, l), HL_ENOTHELD);
	HT_EQ(fd, -7);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	HT_CHECK(fd >= 0);
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 1200), 0); /* not readable while held */

	ht_del(r, HT_S("lost:fd"));
	p.revents = 0;
	HT_EQ(poll(&p, 1, (WD + 2000) * ht_scale()), 1);
	HT_CHECK(p.revents & POLLIN);
	/* stays readable (level) until the hold ends */
	p.revents = 0;
	HT_EQ(poll(&p, 1, 0), 1);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 1);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_RC(hl_lock_lost_fd(&fd, l), HL_ENOTHELD);
	hl_lock_free(l);
	hl_client_free(c);
}

static void taken_over(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD), *c2 = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:taken");
	hl_lock *l2 = ht_lock(c2, "lost:taken");
	int acquired = 0;
	int64_t dt;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	ht_del(r, HT_S("lost:taken"));
	HT_OK(hl_lock_try_acquire(&acquired, l2, 0, 20000, NULL));
	HT_EQ(acquired, 1);
	dt = wait_lost(l);
	HT_RANGE(dt, 0, WD + 1000 * ht_scale());
	/* the loser's release leaves the new holder alone */
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(ht_hlen(r, HT_S("lost:taken")), 1);
	HT_EQ(ht_hget_int(r, HT_S("lost:taken"), ht_owner(l2)), 1);
	HT_RANGE(ht_pttl(r, HT_S("lost:taken")), 10000, 20000);
	HT_OK(hl_lock_release(NULL, l2));
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
}

static void *trigger_later(void *arg)
{
	ht_sleep_ms(300);
	hl_cancel_trigger(arg);
	return NULL;
}

static void wait_lost_cancel(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:cancel");
	hl_cancel *cancel;
	pthread_t t;
	int lost = 7;
	int64_t t0;

	/* nothing held: returns at once with 0 */
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost(&lost, l, 5000, NULL));
	HT_EQ(lost, 0);
	HT_RANGE(ht_now_ms() - t0, 0, 1000 * ht_scale());

	HT_OK(hl_cancel_new(&cancel));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	t = ht_thread_start(trigger_later, cancel);
	t0 = ht_now_ms();
	lost = 7;
	HT_RC(hl_lock_wait_lost(&lost, l, -1, cancel), HL_EINTERRUPTED);
	HT_RANGE(ht_now_ms() - t0, 250, 300 + 1000 * ht_scale());
	ht_thread_join(t, 5000);
	/* the hold is intact */
	HT_EQ(ht_hget_int(r, HT_S("lost:cancel"), ht_owner(l)), 1);
	HT_OK(hl_lock_release(NULL, l));
	/* released: nothing watched */
	hl_cancel_reset(cancel);
	HT_OK(hl_lock_wait_lost(&lost, l, 2000, cancel));
	HT_EQ(lost, 0);
	hl_cancel_free(cancel);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- holder processes --------------------------------------------------- */
struct child_report {
	int wait_rc, lost, release_rc;
};

static int read_timeout(int fd, void *buf, size_t n, int64_t ms)
{
	size_t got = 0;
	int64_t deadline = ht_now_ms() + ms * ht_scale();
	struct pollfd p;

	while (got < n) {
		int64_t left = deadline - ht_now_ms();
		ssize_t k;

		if (left <= 0)
			return 0;
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		k = read(fd, (char *)buf + got, n - got);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return 0;
		}
		got += (size_t)k;
	}
	return 1;
}

static void write_all(int fd, const void *buf, size_t n)
{
	if (write(fd, buf, n) != (ssize_t)n)
		_exit(3);
}

/* Fork a child that takes name with lease (its own client, made after
 * fork) and sends its owner string (128 bytes); then, if report, waits to
 * be told it lost and sends a child_report. */
static pid_t spawn_holder(ht_redis *r, const char *name, int64_t lease,
                          int report, int *rfd, char owner[128])
{
	int fds[2];
	pid_t pid;

	HT_CHECK(pipe(fds) == 0);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *c;
		hl_lock *l;
		struct child_report rep;
		char buf[128];

		close(fds[0]);
		c = ht_client(r, WD);
		l = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l, lease, NULL));
		memset(buf, 0, sizeof buf);
		snprintf(buf, sizeof buf, "%s", ht_owner(l));
		write_all(fds[1], buf, sizeof buf);
		if (!report) {
			ht_sleep_ms(60000);
			_exit(0);
		}
		rep.lost = 7;
		rep.wait_rc = hl_lock_wait_lost(&rep.lost, l, 30000, NULL);
		rep.release_rc = hl_lock_release(NULL, l);
		write_all(fds[1], &rep, sizeof rep);
		hl_lock_free(l);
		hl_client_free(c);
		_exit(0);
	}
	close(fds[1]);
	*rfd = fds[0];
	HT_CHECKF(read_timeout(fds[0], owner, 128, 15000),
	          "holder child did not take the lock");
	owner[127] = '\0';
	return pid;
}

static void reap(pid_t pid, int want_ok)
{
	int status;
	int64_t deadline = ht_now_ms() + 10000 * ht_scale();

	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (ht_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			HT_FAIL("child did not exit");
		}
		ht_sleep_ms(10);
	}
	if (want_ok)
		HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		          "child failed: status 0x%x", status);
}

/* A SIGSTOPped holder loses its lock to a waiter and, resumed, is told it
 * lost; its release then does not touch the new holder's lock. */
static void sigstop(void)
{
	ht_redis *r = ht_redis_default();
	char owner[128];
	int rfd, acquired = 0;
	pid_t pid = spawn_holder(r, "lost:sigstop", -1, 1, &rfd, owner);
	struct child_report rep;
	hl_client *c;
	hl_lock *l;
	int64_t t0, dt;

	HT_CHECK(kill(pid, SIGSTOP) == 0);
	HT_EQ(ht_hget_int(r, HT_S("lost:sigstop"), owner), 1);
	t0 = ht_now_ms();
	c = ht_client(r, WD);
	l = ht_lock(c, "lost:sigstop");
	HT_OK(hl_lock_try_acquire(&acquired, l, 15000, -1, NULL));
	dt = ht_now_ms() - t0;
	ht_note("stopped holder's lock taken after %lld ms", (long long)dt);
	HT_EQ(acquired, 1);
	HT_RANGE(dt, 0, WD + 2000 * ht_scale());
	HT_EQ(ht_hget_int(r, HT_S("lost:sigstop"), owner), -1);

	HT_CHECK(kill(pid, SIGCONT) == 0);
	HT_CHECKF(read_timeout(rfd, &rep, sizeof rep, 10000),
	          "resumed holder did not report");
	HT_CHECKF(rep.wait_rc == HL_OK, "child wait_lost: %s",
	          hl_status_name(rep.wait_rc));
	HT_CHECKF(rep.lost == 1, "resumed holder not told it lost (%d)",
	          rep.lost);
	HT_CHECKF(rep.release_rc == HL_ELOST, "child release: %s",
	          hl_status_name(rep.release_rc));
	reap(pid, 1);
	close(rfd);

	/* we still hold it, renewed */
	HT_EQ(ht_hlen(r, HT_S("lost:sigstop")), 1);
	HT_EQ(ht_hget_int(r, HT_S("lost:sigstop"), ht_owner(l)), 1);
	HT_RANGE(ht_pttl(r, HT_S("lost:sigstop")), 1, WD);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

static void killed(const char *name, int64_t lease, int64_t lo, int64_t hi)
{
	ht_redis *r = ht_redis_default();
	char owner[128];
	int rfd, acquired = 0;
	pid_t pid = spawn_holder(r, name, lease, 0, &rfd, owner);
	int64_t t0 = ht_now_ms(), dt;
	hl_client *c;
	hl_lock *l;

	HT_CHECK(kill(pid, SIGKILL) == 0);
	reap(pid, 0);
	close(rfd);
	HT_EQ(ht_hget_int(r, name, strlen(name), owner), 1);
	c = ht_client(r, WD);
	l = ht_lock(c, name);
	HT_OK(hl_lock_try_acquire(&acquired, l, 15000, 5000, NULL));
	dt = ht_now_ms() - t0;
	ht_note("killed holder's lock free after %lld ms", (long long)dt);
	HT_EQ(acquired, 1);
	HT_RANGE(dt, lo, hi);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

static void sigkill(void)
{
	killed("lost:sigkill", -1, 0, WD + 2000 * ht_scale());
}

static void sigkill_lease(void)
{
	killed("lost:sigkill-lease", 2000, 1000, 2000 + 2000 * ht_scale());
}

/* The lost state belongs to the client's entry for name and owner: seen
 * through every handle. */
static void other_handle(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:handles"), *l2;
	int lost = 7, acquired = 0, fd = -1;
	struct pollfd p;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	l2 = ht_lock(c, "lost:handles");
	HT_OK(hl_lock_lost_fd(&fd, l2));
	ht_del(r, HT_S("lost:handles"));
	wait_lost(l2);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 1);
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 0), 1);
	/* re-acquiring after the loss starts a new, healthy hold */
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_is_lost(&lost, l2));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_lost_fd(&fd, l));
	p.fd = fd;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 1500), 0); /* renewed, not lost */
	HT_EQ(ht_hget_int(r, HT_S("lost:handles"), ht_owner(l)), 1);
	HT_OK(hl_lock_release(NULL, l2));
	HT_EQ(ht_exists(r, HT_S("lost:handles")), 0);
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
}

/* ---- issue 18 (4): a fixed lease that ends is a loss too ---------------- */

/* The number of "lost" events queued on c (taken off the queue), and the
 * monotonic time of the last one in *at. */
static int lost_events(hl_client *c, int64_t *at)
{
	hl_event *e = NULL;
	int n = 0;
	for (;;) {
		HT_OK(hl_client_next_event(&e, c));
		if (!e)
			return n;
		if (hl_event_type(e) == HL_EVENT_LOST) {
			n++;
			if (at)
				*at = hl_event_monotonic_ms(e);
		}
		hl_event_free(e);
	}
}

static uint64_t losses_of(hl_client *c)
{
	hl_client_stats st;
	memset(&st, 0, sizeof(st));
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, c));
	return st.losses;
}

/* Held past its 400 ms lease, never released: the lost fd becomes
 * readable, the lost event comes and is_lost says so around the end of
 * the lease, by the local clock, without any call on the lock; the
 * release then reports the loss. */
static void lease_end(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:lease-end");
	const int64_t LEASE = 400;
	struct pollfd p;
	int fd = -1, lost = 7, wlost = 7;
	int64_t t0, dt, at = 0;

	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	/* wait_lost watches a lease hold too (it returned 0 at once before) */
	HT_OK(hl_lock_wait_lost(&wlost, l, 3000 * ht_scale(), NULL));
	dt = ht_now_ms() - t0;
	ht_note("wait_lost: %d after %lld ms", wlost, (long long)dt);
	HT_EQ(wlost, 1);
	HT_RANGE(dt, LEASE - 50, LEASE + 300 * ht_scale());
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 300 * ht_scale()), 1);
	HT_EQ(lost_events(c, &at), 1);
	ht_note("lost event %lld ms after the acquire", (long long)(at - t0));
	HT_RANGE(at - t0, LEASE - 50, LEASE + 300 * ht_scale());
	HT_EQ(losses_of(c), 1);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 1);
	/* told when the lease counted from the send ended: Redis, which set
	 * it a little later, drops it then at the latest */
	HT_RANGE(ht_pttl(r, HT_S("lost:lease-end")), -2, 50);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(lost_events(c, NULL), 0); /* told once */
	HT_EQ(losses_of(c), 1);
	hl_lock_free(l);
	hl_client_free(c);
}

/* The lost fd of a lease hold that nobody asks about: made readable by the
 * watchdog thread at the lease end (no query of the lock meanwhile). */
static void lease_end_fd(void)
{
	ht_redis *r = ht_redis_default();
	/* a long watchdog: its thread sleeps for 10 s unless woken */
	hl_client *c = ht_client(r, 30000);
	hl_lock *l = ht_lock(c, "lost:lease-fd");
	const int64_t LEASE = 300;
	struct pollfd p;
	int fd = -1;
	int64_t t0, dt;

	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 5000 * ht_scale()), 1);
	dt = ht_now_ms() - t0;
	ht_note("lost fd readable %lld ms after the acquire", (long long)dt);
	HT_RANGE(dt, LEASE - 50, LEASE + 300 * ht_scale());
	HT_EQ(lost_events(c, NULL), 1);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A release before the lease ends is no loss: no event, no count, and
 * nothing fires later; a re-entry that extends the lease moves the loss
 * to the new end. */
static void lease_released(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "lost:lease-rel");
	const int64_t LEASE = 400;
	struct pollfd p;
	int fd = -1, lost = 7, released = 7;
	int64_t t0, dt;

	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	ht_sleep_ms(100);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	ht_sleep_ms(LEASE + 300);
	HT_EQ(lost_events(c, NULL), 0);
	HT_EQ(losses_of(c), 0);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);

	/* re-entered at 200 ms with a new 400 ms lease: held until 600 ms */
	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	ht_sleep_ms(200);
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 5000 * ht_scale()), 1);
	dt = ht_now_ms() - t0;
	ht_note("re-entered hold lost %lld ms after the first acquire",
	        (long long)dt);
	HT_RANGE(dt, 200 + LEASE - 50, 200 + LEASE + 300 * ht_scale());
	HT_EQ(lost_events(c, NULL), 1);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);

	/* a partial release sets the lease again: the loss moves too */
	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	HT_OK(hl_lock_acquire(l, LEASE, NULL));
	ht_sleep_ms(200);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	HT_OK(hl_lock_lost_fd(&fd, l));
	p.fd = fd;
	p.revents = 0;
	HT_EQ(poll(&p, 1, 5000 * ht_scale()), 1);
	dt = ht_now_ms() - t0;
	ht_note("partly released hold lost %lld ms after the acquire",
	        (long long)dt);
	HT_RANGE(dt, 200 + LEASE - 50, 200 + LEASE + 300 * ht_scale());
	HT_EQ(lost_events(c, NULL), 1);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_EQ(losses_of(c), 2);
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(deleted), HT_CASE(lost_fd), HT_CASE(taken_over),
        HT_CASE(wait_lost_cancel), HT_CASE(sigstop), HT_CASE(sigkill),
        HT_CASE(sigkill_lease), HT_CASE(other_handle), HT_CASE(lease_end),
        HT_CASE(lease_end_fd), HT_CASE(lease_released))
