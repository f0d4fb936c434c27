/*
 * The multi lock and the RedLock (Redisson's RedissonMultiLock and
 * RedissonRedLock, PROTOCOL 7): client-side compositions of member locks,
 * built only on the public hl_lock_* calls, so a member may be any lock
 * kind of any client, and members may live on independent servers.
 *
 * A round takes the members in order, each with hl_lock_try_acquire:
 *   - multi lock: each member waits what is left of the round; the first
 *     member not taken ends the round;
 *   - RedLock: each member gets one attempt, and if it is held elsewhere
 *     waits the rest of min(max(wait / n, 1), left) ms (the first term
 *     fixed from the initial wait, as Redisson); a member whose server is
 *     down fails at its attempt. The round ends once more than n - quorum
 *     members failed (quorum = n / 2 + 1).
 * A round that fails gives back what it took, last taken first, and the
 * next round starts while the wait lasts. A round that succeeds with a
 * fixed lease checks the validity left (lease - elapsed - drift) and gives
 * everything back if none is left. The members taken are recorded per
 * owner (the owner string of the first member for the calling thread), so
 * a release gives back exactly what its acquire took.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One acquisition of the multilock by one owner: which members it took and
 * until when a fixed lease keeps it valid. Newest first. */
typedef struct ml_hold {
	struct ml_hold *next;
	int64_t valid_until_ms; /* monotonic; -1: the watchdog keeps it */
	char owner[HL_OWNER_MAX];
	unsigned char taken[]; /* n flags */
} ml_hold;

struct hl_multilock {
	int kind; /* HL_MULTILOCK_ALL or HL_MULTILOCK_RED */
	size_t n, quorum;
	hl_lock **members;
	pthread_mutex_t mu;
	ml_hold *holds;
};

/* A round of a wait without end (hl_multilock_acquire) lasts this long per
 * member (Redisson's lock() uses 1500 ms x members), so that two multilocks
 * taking shared members in opposite orders give way to each other instead
 * of waiting forever. */
#define ML_ROUND_PER_MEMBER_MS 1500

/* The longest random pause between two rounds of a RedLock, so that
 * clients that failed together do not retry in lockstep. */
#define ML_RETRY_PAUSE_MS 10

/* Most members of one multilock (a bound on its arrays, far above use). */
#define HL_MULTILOCK_MAX 4096

int64_t hl_multilock_drift_ms(int64_t lease_ms)
{
	/* The clocks of the servers may run at slightly different rates: 1%
	 * of the lease, plus 2 ms for the granularity of their expiry. */
	return lease_ms <= 0 ? 0 : lease_ms / 100 + 2;
}

static const char *member_label(const hl_lock *lock, char *buf, size_t len)
{
	return hl__printable(buf, len, lock->name, lock->name_len);
}

static const char *kind_label(const hl_multilock *m)
{
	return m->kind == HL_MULTILOCK_RED ? "RedLock" : "multi lock";
}

int hl_multilock_new(hl_multilock **out, hl_lock *const *members, size_t n,
                     int kind)
{
	hl_multilock *m;
	char label[80];
	size_t i, j;
	int rc;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (kind != HL_MULTILOCK_ALL && kind != HL_MULTILOCK_RED)
		return hl__fail(HL_EINVAL,
		                "kind = %d: use HL_MULTILOCK_ALL (0) or "
		                "HL_MULTILOCK_RED (1)",
		                kind);
	if (n == 0)
		return hl__fail(HL_EINVAL, "a %s needs at least one member",
		                kind == HL_MULTILOCK_RED ? "RedLock"
		                                         : "multi lock");
	if (!members)
		return hl__fail(HL_EINVAL, "members is NULL");
	if (n > HL_MULTILOCK_MAX)
		return hl__fail(HL_EINVAL,
		                "%zu members; at most %d are allowed", n,
		                HL_MULTILOCK_MAX);
	for (i = 0; i < n; i++) {
		if (!members[i])
			return hl__fail(HL_EINVAL, "member %zu is NULL", i);
		/* A member of a closed (or inherited) client could never be
		 * taken: say so now, naming it. */
		if ((rc = hl__client_enter(members[i]->client)) != HL_OK)
			return hl__fail_wrap(
			        rc, "member %zu (\"%s\")", i,
			        member_label(members[i], label, sizeof(label)));
		hl__client_leave(members[i]->client);
		for (j = 0; j < i; j++) {
			/* The same lock twice would be taken twice by one
			 * owner (a reentry), and count twice towards a
			 * quorum. */
			if (members[j] == members[i] ||
			    (members[j]->client == members[i]->client &&
			     members[j]->name_len == members[i]->name_len &&
			     memcmp(members[j]->name, members[i]->name,
			            members[i]->name_len) == 0))
				return hl__fail(
				        HL_EINVAL,
				        "members %zu and %zu are the same "
				        "lock (\"%s\" of one client)",
				        j, i,
				        member_label(members[i], label,
				                     sizeof(label)));
		}
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->members = malloc(n * sizeof(*m->members));
	if (!m || !m->members) {
		free(m);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(m->members, members, n * sizeof(*m->members));
	m->kind = kind;
	m->n = n;
	m->quorum = kind == HL_MULTILOCK_RED ? n / 2 + 1 : n;
	pthread_mutex_init(&m->mu, NULL);
	*out = m;
	return HL_OK;
}

void hl_multilock_free(hl_multilock *m)
{
	ml_hold *h, *next;
	if (!m)
		return;
	for (h = m->holds; h; h = next) {
		next = h->next;
		free(h);
	}
	pthread_mutex_destroy(&m->mu);
	free(m->members);
	free(m);
}

size_t hl_multilock_size(const hl_multilock *m)
{
	return m ? m->n : 0;
}

size_t hl_multilock_quorum(const hl_multilock *m)
{
	return m ? m->quorum : 0;
}

/* The owner whose holds are recorded: the first member's owner string for
 * the calling thread (its explicit owner, if it has one). */
static void owner_key(const hl_multilock *m, char *buf)
{
	size_t len = 0;
	if (hl_lock_owner(&len, m->members[0], buf, HL_OWNER_MAX) != HL_OK)
		buf[0] = '\0';
}

/* Take back, last first, what a failed round took. The caller's failure
 * message is kept: these releases would replace it. */
static void undo(hl_multilock *m, unsigned char *taken)
{
	char saved[512];
	int code = hl_error_last_code();
	size_t i;
	snprintf(saved, sizeof(saved), "%s", hl_error_last());
	for (i = m->n; i-- > 0;) {
		if (taken[i])
			(void)hl_lock_release(NULL, m->members[i]);
		taken[i] = 0;
	}
	if (code != HL_OK)
		hl__fail(code, "%s", saved);
}

/* A member's error that ends the whole call: the caller's own doing or
 * state (bad arguments, a closed or inherited client, a cancel), or the
 * process (memory). Others (Redis down or failing) count as that member
 * not being taken. */
static int is_fatal(int rc)
{
	return rc == HL_EINVAL || rc == HL_ECLOSED || rc == HL_EFORKED ||
	       rc == HL_EINTERRUPTED || rc == HL_ENOMEM || rc == HL_ESYSTEM;
}

static void pause_between_rounds(int64_t deadline)
{
	int64_t ms = hl__jitter_delay(ML_RETRY_PAUSE_MS, 0), left;
	struct timespec ts;
	left = hl__remaining(deadline);
	if (left >= 0 && left < ms)
		ms = left;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)ms * 1000000L;
	nanosleep(&ts, NULL);
}

static int check_args(int64_t wait_ms, int64_t lease_ms)
{
	if (wait_ms < -1 || wait_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "wait_ms = %lld: use -1 (forever), 0 (one "
		                "attempt each) or up to 2^40 ms",
		                (long long)wait_ms);
	if (lease_ms == 0 || lease_ms < -1 || lease_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "lease_ms = %lld: use -1 (watchdog) or 1 to "
		                "2^40 ms",
		                (long long)lease_ms);
	return HL_OK;
}

int hl_multilock_try_acquire_ex(int *out_acquired, int64_t *out_valid_ms,
                                int *out_members, hl_multilock *m,
                                int64_t wait_ms, int64_t lease_ms,
                                hl_cancel *cancel)
{
	unsigned char *taken;
	char owner[HL_OWNER_MAX], label[80], err_msg[512];
	int64_t deadline, per_member = 0, valid = -1;
	int rc = HL_OK, err_rc = HL_OK, acquired = 0;
	size_t i, allowed, errors = 0;
	ml_hold *h;

	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	if ((rc = check_args(wait_ms, lease_ms)) != HL_OK)
		return rc;
	if (hl_cancel_is_triggered(cancel))
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	taken = calloc(1, m->n);
	if (!taken)
		return hl__fail(HL_ENOMEM, "out of memory");
	owner_key(m, owner);
	allowed = m->n - m->quorum;
	deadline = hl__deadline(wait_ms);
	if (m->kind == HL_MULTILOCK_RED && wait_ms > 0) {
		per_member = wait_ms / (int64_t)m->n;
		if (per_member < 1)
			per_member = 1;
	}
	err_msg[0] = '\0';

	for (;;) {
		int64_t start = hl__now_ms(), round_end = deadline;
		size_t got = 0, failed = 0;

		if (wait_ms < 0) {
			/* Forever: rounds of a bounded length, jittered so
			 * that two waiters do not stay in step. */
			int64_t len = ML_ROUND_PER_MEMBER_MS * (int64_t)m->n;
			round_end = start + hl__jitter_delay(len, 1);
			if (m->kind == HL_MULTILOCK_RED)
				per_member = ML_ROUND_PER_MEMBER_MS;
		}
		errors = 0;
		err_rc = HL_OK;
		for (i = 0; i < m->n && failed <= allowed; i++) {
			int64_t left = hl__remaining(round_end), w;
			int one = 0;
			if (i > 0 && wait_ms != 0 && left == 0)
				break; /* out of time: the rest are not taken */
			w = left;
			if (m->kind == HL_MULTILOCK_RED && wait_ms != 0 &&
			    per_member < w)
				w = per_member;
			if (wait_ms == 0)
				w = 0;
			if (m->kind == HL_MULTILOCK_RED && w > 0) {
				/* One attempt first: a member whose server is
				 * down or unreachable fails at once instead of
				 * outlasting the outage for its whole share,
				 * and only a member held elsewhere waits. */
				int64_t t0 = hl__now_ms();
				rc = hl_lock_try_acquire(&one, m->members[i], 0,
				                         lease_ms, cancel);
				w -= hl__now_ms() - t0;
				if (rc == HL_OK && !one && w > 0)
					rc = hl_lock_try_acquire(
					        &one, m->members[i], w,
					        lease_ms, cancel);
			} else {
				rc = hl_lock_try_acquire(&one, m->members[i], w,
				                         lease_ms, cancel);
			}
			if (rc == HL_OK && one) {
				taken[i] = 1;
				got++;
				continue;
			}
			failed++;
			if (rc == HL_OK)
				continue;
			hl__fail_wrap(rc, "%s member %zu (\"%s\")",
			              kind_label(m), i,
			              member_label(m->members[i], label,
			                           sizeof(label)));
			if (is_fatal(rc) || m->kind == HL_MULTILOCK_ALL) {
				/* The multi lock cannot hold without this
				 * member, whose own wait already outlasted
				 * what it could of an outage. */
				undo(m, taken);
				free(taken);
				return rc;
			}
			/* RedLock: a server down is what the quorum is for. */
			if (errors++ == 0) {
				err_rc = rc;
				snprintf(err_msg, sizeof(err_msg), "%s",
				         hl_error_last());
			}
		}
		if (got >= m->quorum) {
			if (lease_ms < 0)
				break; /* acquired, with the watchdog */
			valid = lease_ms - (hl__now_ms() - start) -
			        hl_multilock_drift_ms(lease_ms);
			if (valid > 0)
				break; /* acquired, valid for valid ms */
			/* Taking the members used up the lease. */
		}
		undo(m, taken);
		if (wait_ms == 0 || hl__remaining(deadline) == 0)
			break;
		if (wait_ms < 0 && errors > allowed)
			break; /* a wait without end tells of a dead quorum */
		if (m->kind == HL_MULTILOCK_RED)
			pause_between_rounds(deadline);
		if (hl_cancel_is_triggered(cancel)) {
			free(taken);
			return hl__fail(HL_EINTERRUPTED,
			                "waiting for the %s was interrupted",
			                kind_label(m));
		}
	}
	for (i = 0; i < m->n; i++)
		if (taken[i])
			acquired = 1;
	if (!acquired) {
		free(taken);
		if (errors > allowed)
			/* Errors alone, not contention, left it without a
			 * quorum in its last round: say which. */
			return hl__fail(err_rc,
			                "RedLock not acquired: %zu of %zu "
			                "members failed (quorum %zu); %s",
			                errors, m->n, m->quorum, err_msg);
		*out_acquired = 0;
		return HL_OK;
	}
	h = calloc(1, sizeof(*h) + m->n);
	if (!h) {
		undo(m, taken);
		free(taken);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(h->owner, owner, sizeof(h->owner));
	memcpy(h->taken, taken, m->n);
	h->valid_until_ms = lease_ms < 0 ? -1 : hl__now_ms() + valid;
	pthread_mutex_lock(&m->mu);
	h->next = m->holds;
	m->holds = h;
	pthread_mutex_unlock(&m->mu);
	if (out_members)
		for (i = 0; i < m->n; i++)
			out_members[i] = taken[i];
	if (out_valid_ms)
		*out_valid_ms = valid;
	*out_acquired = 1;
	free(taken);
	return HL_OK;
}

int hl_multilock_try_acquire(int *out_acquired, hl_multilock *m,
                             int64_t wait_ms, int64_t lease_ms,
                             hl_cancel *cancel)
{
	return hl_multilock_try_acquire_ex(out_acquired, NULL, NULL, m, wait_ms,
	                                   lease_ms, cancel);
}

int hl_multilock_acquire(hl_multilock *m, int64_t lease_ms, hl_cancel *cancel)
{
	int acquired = 0;
	int rc = hl_multilock_try_acquire(&acquired, m, -1, lease_ms, cancel);
	if (rc == HL_OK && !acquired)
		rc = hl__fail(HL_ETIMEDOUT, "%s not acquired",
		              m ? kind_label(m) : "multilock");
	return rc;
}

/* Unlink and return the newest hold of owner (NULL if none). */
static ml_hold *pop_hold(hl_multilock *m, const char *owner)
{
	ml_hold **pp, *h = NULL;
	pthread_mutex_lock(&m->mu);
	for (pp = &m->holds; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->owner, owner) == 0) {
			h = *pp;
			*pp = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return h;
}

int hl_multilock_release_ex(int *out_statuses, int *out_released,
                            hl_multilock *m, const int *members)
{
	char owner[HL_OWNER_MAX], label[80], msg[512], other_msg[512];
	int first = HL_OK, other = HL_OK;
	size_t i, released = 0;
	ml_hold *h;

	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	owner_key(m, owner);
	h = pop_hold(m, owner);
	for (i = m->n; i-- > 0;) {
		int rc, rel = 0;
		int want = members ? members[i] != 0 : h ? h->taken[i] : 1;
		if (!want) {
			/* Not taken by this hold (a RedLock's minority). */
			if (out_statuses)
				out_statuses[i] = HL_ENOTHELD;
			if (out_released)
				out_released[i] = 0;
			continue;
		}
		rc = hl_lock_release(&rel, m->members[i]);
		if (out_statuses)
			out_statuses[i] = rc;
		if (out_released)
			out_released[i] = rc == HL_OK && rel;
		if (rc == HL_OK) {
			released++;
			continue;
		}
		hl__fail_wrap(
		        rc, "%s member %zu (\"%s\")", kind_label(m), i,
		        member_label(m->members[i], label, sizeof(label)));
		/* The first error in release order, and the first that is
		 * not "not held" (a RedLock member it never took). */
		if (first == HL_OK) {
			first = rc;
			snprintf(msg, sizeof(msg), "%s", hl_error_last());
		}
		if (other == HL_OK && rc != HL_ENOTHELD) {
			other = rc;
			snprintf(other_msg, sizeof(other_msg), "%s",
			         hl_error_last());
		}
	}
	free(h);
	if (first == HL_OK)
		return HL_OK;
	if (m->kind == HL_MULTILOCK_ALL)
		return hl__fail(first, "%s", msg);
	if (released >= m->quorum)
		return HL_OK; /* the minority may fail: that is a RedLock */
	return hl__fail(other != HL_OK ? other : first,
	                "RedLock released on %zu of %zu members (quorum "
	                "%zu): %s",
	                released, m->n, m->quorum,
	                other != HL_OK ? other_msg : msg);
}

int hl_multilock_release(hl_multilock *m)
{
	return hl_multilock_release_ex(NULL, NULL, m, NULL);
}

int hl_multilock_is_lost(int *out, hl_multilock *m)
{
	char owner[HL_OWNER_MAX];
	ml_hold *h;
	unsigned char *taken = NULL;
	int64_t valid_until = -1;
	size_t i, held = 0, lost = 0;
	int rc = HL_OK;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	owner_key(m, owner);
	pthread_mutex_lock(&m->mu);
	for (h = m->holds; h; h = h->next)
		if (strcmp(h->owner, owner) == 0)
			break;
	if (h) {
		taken = malloc(m->n);
		if (taken)
			memcpy(taken, h->taken, m->n);
		valid_until = h->valid_until_ms;
	}
	pthread_mutex_unlock(&m->mu);
	if (!h) {
		*out = 0;
		return HL_OK;
	}
	if (!taken)
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < m->n; i++) {
		int one = 0;
		if (!taken[i])
			continue;
		held++;
		rc = hl_lock_is_lost(&one, m->members[i]);
		if (rc == HL_ECLOSED || rc == HL_EFORKED) {
			/* Nothing renews it any more. */
			one = 1;
			rc = HL_OK;
		}
		if (rc != HL_OK)
			break;
		lost += one != 0;
	}
	free(taken);
	if (rc != HL_OK)
		return rc;
	*out = (valid_until >= 0 && hl__now_ms() >= valid_until) ||
	       held - lost < m->quorum;
	return HL_OK;
}
