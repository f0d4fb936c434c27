/*
 * fork(): a client inherited by a child refuses every call with
 * HL_EFORKED, and freeing it in the child leaves the parent's locks and
 * connections alone; a client the child makes itself works.
 */
#include "harness.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define WD 1000

static void reap(pid_t pid)
{
	int status;
	int64_t deadline = ht_now_ms() + 20000 * ht_scale();

	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (ht_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			HT_FAIL("child did not exit");
		}
		ht_sleep_ms(10);
	}
	HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	          "child failed: status 0x%x (see its output above)", status);
}

/* The parent still holds name, renewed by its watchdog. */
static void parent_still_holds(ht_redis *r, hl_lock *l, const char *name)
{
	int64_t t0 = ht_now_ms();
	int held = 0;

	HT_OK(hl_lock_is_held(&held, l));
	HT_EQ(held, 1);
	HT_EQ(ht_hget_int(r, name, strlen(name), ht_owner(l)), 1);
	while (ht_now_ms() - t0 < 2500) {
		HT_CHECKF(ht_pttl(r, name, strlen(name)) > 0,
		          "parent's lock expired after the child exited");
		ht_sleep_ms(100);
	}
	HT_OK(hl_lock_is_held(&held, l));
	HT_EQ(held, 1);
}

static void child_inherited_calls(hl_client *c, hl_lock *l, hl_lock *free_l)
{
	hl_lock *x = NULL;
	int v = 7, rc;
	int64_t n = 7;

	HT_RC(hl_lock_try_acquire(&v, l, 0, -1, NULL), HL_EFORKED);
	HT_RC(hl_lock_try_acquire(&v, free_l, 0, 5000, NULL), HL_EFORKED);
	HT_RC(hl_lock_acquire(free_l, 5000, NULL), HL_EFORKED);
	HT_RC(hl_lock_release(&v, l), HL_EFORKED);
	HT_RC(hl_lock_force_unlock(&v, l), HL_EFORKED);
	HT_RC(hl_lock_is_locked(&v, l), HL_EFORKED);
	HT_RC(hl_lock_is_held(&v, l), HL_EFORKED);
	HT_RC(hl_lock_hold_count(&n, l), HL_EFORKED);
	HT_RC(hl_lock_ttl(&n, l), HL_EFORKED);
	HT_RC(hl_lock_is_lost(&v, l), HL_EFORKED);
	HT_RC(hl_lock_wait_lost(&v, l, 100, NULL), HL_EFORKED);
	HT_RC(hl_lock_lost_fd(&v, l), HL_EFORKED);
	HT_RC(hl_lock_new(&x, c, "fork:x", 6), HL_EFORKED);
	HT_CHECK(x == NULL);
	rc = hl_lock_abandon(l);
	HT_CHECKF(rc == HL_OK || rc == HL_EFORKED, "abandon: %s",
	          hl_status_name(rc));
}

static void inherited(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "fork:lock");
	hl_lock *free_l = ht_lock(c, "fork:free");
	pid_t pid;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		child_inherited_calls(c, l, free_l);
		/* freeing drops the inherited sockets only */
		hl_lock_free(l);
		hl_lock_free(free_l);
		hl_client_close(c);
		hl_client_free(c);
		_exit(0);
	}
	reap(pid);
	HT_EQ(ht_exists(r, HT_S("fork:free")), 0);
	parent_still_holds(r, l, "fork:lock");
	/* the parent's connections still work */
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("fork:lock")), 0);
	HT_OK(hl_lock_acquire(free_l, 5000, NULL));
	HT_OK(hl_lock_release(NULL, free_l));
	hl_lock_free(l);
	hl_lock_free(free_l);
	hl_client_free(c);
}

static void child_client(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, WD);
	hl_lock *l = ht_lock(c, "fork:lock");
	pid_t pid;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *mine;
		hl_lock *theirs, *other;
		int acquired = 7, locked = 7, held = 7;

		hl_lock_free(l);
		hl_client_free(c); /* the inherited one */
		mine = ht_client(r, WD);
		theirs = ht_lock(mine, "fork:lock");
		HT_OK(hl_lock_try_acquire(&acquired, theirs, 0, -1, NULL));
		HT_EQ(acquired, 0); /* the parent holds it */
		HT_OK(hl_lock_is_locked(&locked, theirs));
		HT_EQ(locked, 1);
		HT_OK(hl_lock_is_held(&held, theirs));
		HT_EQ(held, 0);
		other = ht_lock(mine, "fork:other");
		HT_OK(hl_lock_acquire(other, -1, NULL));
		HT_EQ(ht_hget_int(r, HT_S("fork:other"), ht_owner(other)), 1);
		ht_sleep_ms(1500); /* renewed by the child's own watchdog */
		HT_CHECK(ht_pttl(r, HT_S("fork:other")) > 0);
		HT_OK(hl_lock_release(NULL, other));
		HT_EQ(ht_exists(r, HT_S("fork:other")), 0);
		hl_lock_free(theirs);
		hl_lock_free(other);
		hl_client_free(mine);
		_exit(0);
	}
	reap(pid);
	parent_still_holds(r, l, "fork:lock");
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(inherited), HT_CASE(child_client))
