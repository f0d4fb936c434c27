/*
 * The multi lock and the RedLock (Redisson's RedissonMultiLock and
 * RedissonRedLock, PROTOCOL 7): client-side compositions of member locks,
 * so a member may be any lock kind of any client, and members may live on
 * independent servers.
 *
 * A round takes the members in order, each with one attempt and, if it is
 * held elsewhere, an acquire task of its own client (the engine's wait for
 * one lock, see lock.c):
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
 * owner (the owner string of the first member for the calling thread),
 * each with the identity of its hold (the hold records' epoch), so a
 * release gives back exactly what its acquire took: a member whose hold
 * ended meanwhile (lost, or released) and that its owner took again since
 * is in a newer hold, not the multilock's, and is left alone (HL_ELOST).
 *
 * The rounds are a drive task (service/task.c) of the first member's
 * client: its step makes each member's attempt (on its own thread: an
 * executor, or the blocking caller), starts the acquire task of a member
 * that must wait with itself as the parent, and runs again when that one
 * is done, when a pause between rounds ends, or when it is stopped
 * (cancel, interrupt, close), then cancelling the member in flight and
 * giving back what it took on every client before it ends. The blocking calls
 * are that task and a wait; the task works from copies of the member handles,
 * so the multilock handle may be freed while it runs. Releases are the same
 * loop, on the calling thread or in a drive task's single step.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One acquisition of the multilock by one owner: which members it took,
 * which hold of each (its epoch: a re-entry into a hold the owner had
 * already is that hold), and until when a fixed lease keeps it valid.
 * Newest first. One block: the epochs, then the flags. */
typedef struct ml_hold {
	struct ml_hold *next;
	int64_t valid_until_ms; /* monotonic; -1: the watchdog keeps it */
	char owner[HL_OWNER_MAX];
	unsigned char *taken; /* n flags, after the epochs */
	uint64_t epochs[];    /* n: each member's hold (0: not taken, or
	                         unknown: whatever hold its owner has) */
} ml_hold;

/* The records of the holds, shared by the handle and the tasks started
 * from it (a task may end after the handle was freed). mu is a leaf: it
 * is taken under a client's wait_mu (a task's commit). */
typedef struct ml_book {
	atomic_int refs;
	pthread_mutex_t mu;
	ml_hold *holds;
} ml_book;

struct hl_multilock {
	int kind; /* HL_MULTILOCK_ALL or HL_MULTILOCK_RED */
	size_t n, quorum;
	hl_lock **members;
	ml_book *book;
};

/* A round of a wait without end (hl_multilock_acquire) lasts this long per
 * member (Redisson's lock() uses 1500 ms x members), so that two multilocks
 * taking shared members in opposite orders give way to each other instead
 * of waiting forever. */
#define ML_ROUND_PER_MEMBER_MS 1500

/* The longest random pause between two rounds of a RedLock, so that
 * clients that failed together do not retry in lockstep. */
#define ML_RETRY_PAUSE_MS 10

/* The longest a stopped task waits for each member's release (a cancel must
 * be prompt; a member not given back then is not renewed, its lease ends
 * it). */
#define ML_UNDO_STOP_MS 500

/* A saved error message (as long as hl_error_last()'s). */
#define ML_MSG_LEN 512

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

static const char *kind_name(int kind)
{
	return kind == HL_MULTILOCK_RED ? "RedLock" : "multi lock";
}

/* ---- the records ---------------------------------------------------------
 */

static void book_unref(ml_book *b)
{
	ml_hold *h, *next;
	if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	for (h = b->holds; h; h = next) {
		next = h->next;
		free(h);
	}
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* A record for n members, all flags and epochs 0 (NULL: no memory). */
static ml_hold *hold_new(size_t n)
{
	ml_hold *h = calloc(1, sizeof(*h) + n * (sizeof(uint64_t) + 1));
	if (h)
		h->taken = (unsigned char *)(h->epochs + n);
	return h;
}

static void book_push(ml_book *b, ml_hold *h)
{
	pthread_mutex_lock(&b->mu);
	h->next = b->holds;
	b->holds = h;
	pthread_mutex_unlock(&b->mu);
}

/* Unlink and return the newest hold of owner (NULL if none). */
static ml_hold *book_pop(ml_book *b, const char *owner)
{
	ml_hold **pp, *h = NULL;
	pthread_mutex_lock(&b->mu);
	for (pp = &b->holds; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->owner, owner) == 0) {
			h = *pp;
			*pp = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&b->mu);
	return h;
}

/* ---- the handle ------------------------------------------------------------
 */

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
		                kind_name(kind));
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
	if (m) {
		m->members = malloc(n * sizeof(*m->members));
		m->book = calloc(1, sizeof(*m->book));
	}
	if (!m || !m->members || !m->book) {
		if (m) {
			free(m->members);
			free(m->book);
		}
		free(m);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(m->members, members, n * sizeof(*m->members));
	m->kind = kind;
	m->n = n;
	m->quorum = kind == HL_MULTILOCK_RED ? n / 2 + 1 : n;
	atomic_init(&m->book->refs, 1);
	pthread_mutex_init(&m->book->mu, NULL);
	*out = m;
	return HL_OK;
}

void hl_multilock_free(hl_multilock *m)
{
	if (!m)
		return;
	book_unref(m->book);
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

static int check_args(int64_t wait_ms, int64_t lease_ms)
{
	if (wait_ms < -1 || wait_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "wait_ms = %lld: use -1 (forever), 0 (one "
		                "attempt each) or up to 2^40 ms",
		                (long long)wait_ms);
	return hl__check_lease(lease_ms);
}

/* ---- releasing ------------------------------------------------------------
 * One loop for hl_multilock_release_ex (on the calling thread, through the
 * handle's members) and the release task (through its copies). */

/* Release, last member first, one hold of each member i whose want[i] is
 * set, as owners[i] (owners NULL: each handle's own owner for the calling
 * thread): the hold epochs[i] (epochs NULL, or 0: whatever hold the owner
 * has; another hold is left alone, HL_ELOST). statuses and released (may
 * be NULL) get each member's status and "now free" flag (HL_ENOTHELD and 0
 * for members not wanted); *count the members released. Returns as
 * hl_multilock_release(). */
static int release_members(int kind, size_t n, size_t quorum,
                           hl_lock *const *locks, const uint64_t *owners,
                           const unsigned char *want, const uint64_t *epochs,
                           int *statuses, int *released, size_t *count)
{
	char label[80], msg[512], other_msg[512];
	int first = HL_OK, other = HL_OK;
	size_t i, done = 0;

	for (i = n; i-- > 0;) {
		int rc, rel = 0;
		if (!want[i]) {
			/* Not taken by this hold (a RedLock's minority). */
			if (statuses)
				statuses[i] = HL_ENOTHELD;
			if (released)
				released[i] = 0;
			continue;
		}
		rc = hl__lock_release_hold(
		        &rel, locks[i],
		        owners ? owners[i] : hl__effective_owner(locks[i]),
		        epochs ? epochs[i] : 0, -1);
		if (statuses)
			statuses[i] = rc;
		if (released)
			released[i] = rc == HL_OK && rel;
		if (rc == HL_OK) {
			done++;
			continue;
		}
		hl__fail_wrap(rc, "%s member %zu (\"%s\")", kind_name(kind), i,
		              member_label(locks[i], label, sizeof(label)));
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
	*count = done;
	if (first == HL_OK)
		return HL_OK;
	if (kind == HL_MULTILOCK_ALL)
		return hl__fail(first, "%s", msg);
	if (done >= quorum)
		return HL_OK; /* the minority may fail: that is a RedLock */
	return hl__fail(other != HL_OK ? other : first,
	                "RedLock released on %zu of %zu members (quorum "
	                "%zu): %s",
	                done, n, quorum, other != HL_OK ? other_msg : msg);
}

/* ---- an operation in flight ---------------------------------------------
 * What an acquire or release task needs, copied from the handle when it
 * starts: the members (copies of their handles), each member's owner as it
 * was then, the record key, and a reference of the records. */

enum {
	PH_ROUND = 1, /* a round begins */
	PH_MEMBER,    /* the next member, or the end of the round */
	PH_CHILD,     /* a member's acquire task in flight */
	PH_EVAL,      /* the round is over: held, or give back */
	PH_PAUSE,     /* between two rounds of a RedLock */
	PH_HELD,      /* acquired, not yet delivered */
	PH_END
};

typedef struct ml_op {
	int kind;
	size_t n, quorum;
	hl_lock **members;
	uint64_t *owners;
	unsigned char *taken; /* acquire: members taken; release: wanted */
	uint64_t *epochs;     /* the hold of each taken (0: unknown) */
	ml_book *book;
	char owner[HL_OWNER_MAX];
	int64_t wait_ms, lease_ms;

	/* the acquire's rounds */
	int phase;
	int64_t deadline, per_member, round_start, round_end, pause_until;
	int64_t valid;
	size_t i, got, failed, errors;
	int err_rc;
	char err_msg[512];
	hl_task *child;
	ml_hold *hold; /* the record of a success, made before it ends */
	/* its outputs (NULL: none), written by the commit */
	int64_t *out_valid;
	int *out_members;

	/* the release */
	int use_record; /* the owner's newest record says what to release */
	int ran, rel_rc;
	size_t rel_count;
	char rel_msg[ML_MSG_LEN];
	int *statuses, *released;         /* n each */
	int *out_statuses, *out_released; /* the caller's (may be NULL) */
} ml_op;

static void op_free(void *arg)
{
	ml_op *x = arg;
	size_t i;
	if (!x)
		return;
	/* Only a task forgotten in a child after fork() still has one. */
	hl_task_free(x->child);
	for (i = 0; x->members && i < x->n; i++)
		hl_lock_free(x->members[i]);
	free(x->members);
	free(x->owners);
	free(x->taken);
	free(x->epochs);
	free(x->statuses);
	free(x->released);
	free(x->hold);
	book_unref(x->book);
	free(x);
}

/* A new operation on m for the calling thread (HL_OK, or the error of a
 * member: a closed client, memory). */
static int op_new(ml_op **out, hl_multilock *m, int release)
{
	ml_op *x = calloc(1, sizeof(*x));
	char label[80];
	size_t i;
	int rc;
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	x->kind = m->kind;
	x->n = m->n;
	x->quorum = m->quorum;
	x->members = calloc(m->n, sizeof(*x->members));
	x->owners = calloc(m->n, sizeof(*x->owners));
	x->taken = calloc(1, m->n);
	x->epochs = calloc(m->n, sizeof(*x->epochs));
	if (release) {
		x->statuses = calloc(m->n, sizeof(*x->statuses));
		x->released = calloc(m->n, sizeof(*x->released));
	}
	if (!x->members || !x->owners || !x->taken || !x->epochs ||
	    (release && (!x->statuses || !x->released))) {
		op_free(x);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < m->n; i++) {
		rc = hl__lock_clone(&x->members[i], m->members[i]);
		if (rc != HL_OK) {
			hl__fail_wrap(rc, "%s member %zu (\"%s\")",
			              kind_name(m->kind), i,
			              member_label(m->members[i], label,
			                           sizeof(label)));
			op_free(x);
			return rc;
		}
		x->owners[i] = hl__effective_owner(m->members[i]);
	}
	owner_key(m, x->owner);
	atomic_fetch_add(&m->book->refs, 1);
	x->book = m->book;
	*out = x;
	return HL_OK;
}

/* Give back, last first, what the round took. The failure message of the
 * caller's thread is kept: these releases would replace it. stopping: a
 * stop is ending the task (each release waits less). */
static void undo(ml_op *x, int stopping)
{
	char saved[ML_MSG_LEN];
	int code = hl_error_last_code();
	size_t i;
	snprintf(saved, sizeof(saved), "%s", hl_error_last());
	for (i = x->n; i-- > 0;) {
		int64_t ms;
		if (!x->taken[i])
			continue;
		ms = x->members[i]->client->conf.command_timeout_ms;
		if (stopping && ms > ML_UNDO_STOP_MS)
			ms = ML_UNDO_STOP_MS;
		(void)hl__lock_release_hold(NULL, x->members[i], x->owners[i],
		                            x->epochs[i], hl__now_ms() + ms);
		x->taken[i] = 0;
		x->epochs[i] = 0;
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

/* ---- the acquire's steps ------------------------------------------------- */

static void round_begin(ml_op *x)
{
	x->round_start = hl__now_ms();
	x->round_end = x->deadline;
	if (x->wait_ms < 0) {
		/* Forever: rounds of a bounded length, jittered so that two
		 * waiters do not stay in step. */
		int64_t len = ML_ROUND_PER_MEMBER_MS * (int64_t)x->n;
		x->round_end = x->round_start + hl__jitter_delay(len, 1);
		if (x->kind == HL_MULTILOCK_RED)
			x->per_member = ML_ROUND_PER_MEMBER_MS;
	}
	x->i = x->got = x->failed = x->errors = 0;
	x->err_rc = HL_OK;
	x->err_msg[0] = '\0';
}

/* Start the acquire task of member x->i for w ms; HL_OK or its error. */
static int start_child(ml_op *x, hl_task *self, int64_t w)
{
	return hl__lock_try_acquire_start_as(&x->child, x->members[x->i],
	                                     x->owners[x->i], w, x->lease_ms,
	                                     self);
}

/* Member x->i was (*one = 1) or was not taken, or failed with rc: on to
 * the next, or (*done = 1) the end of the call with an error. */
static int member_result(ml_op *x, int rc, int one, int *done)
{
	char label[80];
	size_t i = x->i++;
	x->phase = PH_MEMBER;
	if (rc == HL_OK && one) {
		x->taken[i] = 1;
		/* which hold it is: a new one, or the owner's own re-entered */
		x->epochs[i] = hl__hold_epoch(x->members[i]->client,
		                              x->members[i], x->owners[i]);
		x->got++;
		return HL_OK;
	}
	x->failed++;
	if (rc == HL_OK)
		return HL_OK;
	hl__fail_wrap(rc, "%s member %zu (\"%s\")", kind_name(x->kind), i,
	              member_label(x->members[i], label, sizeof(label)));
	if (is_fatal(rc) || x->kind == HL_MULTILOCK_ALL) {
		/* The multi lock cannot hold without this member, whose own
		 * wait already outlasted what it could of an outage. */
		undo(x, rc == HL_EINTERRUPTED || rc == HL_ECLOSED);
		x->phase = PH_END;
		*done = 1;
		return rc;
	}
	/* RedLock: a server down is what the quorum is for. */
	if (x->errors++ == 0) {
		x->err_rc = rc;
		snprintf(x->err_msg, sizeof(x->err_msg), "%s", hl_error_last());
	}
	return HL_OK;
}

/* PH_MEMBER: take the next member, or start its wait, or end the round.
 * The member's one attempt is made here, on the step's thread (an executor
 * of the first member's client, or the blocking caller): a free member is
 * taken without a thread switch. Only a member that must wait gets a task
 * of its own client. */
static int member_next(ml_op *x, hl_task *self, int *done)
{
	int64_t left, w, t0;
	int rc, one = 0;
	if (x->i >= x->n || x->failed > x->n - x->quorum) {
		x->phase = PH_EVAL;
		return HL_OK;
	}
	left = hl__remaining(x->round_end);
	if (x->i > 0 && x->wait_ms != 0 && left == 0) {
		x->phase = PH_EVAL; /* out of time: the rest are not taken */
		return HL_OK;
	}
	w = left;
	if (x->kind == HL_MULTILOCK_RED && x->wait_ms != 0 && x->per_member < w)
		w = x->per_member;
	if (x->wait_ms == 0)
		w = 0;
	t0 = hl__now_ms();
	/* A stop cuts the attempt off through the task's own flag (an
	 * acquisition it cut off after sending is taken back by the lock). */
	rc = hl__lock_try_acquire_as(&one, x->members[x->i], x->owners[x->i], 0,
	                             x->lease_ms, hl__task_cancel_flag(self));
	if (rc == HL_OK && one)
		return member_result(x, rc, one, done);
	w -= hl__now_ms() - t0;
	/* Held elsewhere: wait the rest of its share (RedLock) or of the
	 * round. A multi lock's wait also outlasts an outage, within it; a
	 * RedLock's member whose server fails fails at once (the quorum is
	 * for that). */
	if (w > 0 && (rc == HL_OK || (x->kind == HL_MULTILOCK_ALL &&
	                              (rc == HL_EIO || rc == HL_ECONNECT)))) {
		rc = start_child(x, self, w);
		if (rc == HL_OK) {
			x->phase = PH_CHILD;
			return HL_OK;
		}
	}
	return member_result(x, rc, one, done);
}

/* PH_CHILD, the member's task done: its result. */
static int child_done(ml_op *x, int *done)
{
	int one = 0, rc = hl_task_result(&one, x->child);
	hl_task_free(x->child);
	x->child = NULL;
	return member_result(x, rc, one, done);
}

/* The last round left it not held: 0, or the errors that left it without
 * a quorum. */
static int not_acquired(ml_op *x, int *done, int *result)
{
	x->phase = PH_END;
	*done = 1;
	if (x->errors > x->n - x->quorum)
		/* Errors alone, not contention, left it without a quorum in
		 * its last round: say which. */
		return hl__fail(x->err_rc,
		                "RedLock not acquired: %zu of %zu members "
		                "failed (quorum %zu); %s",
		                x->errors, x->n, x->quorum, x->err_msg);
	*result = 0;
	return HL_OK;
}

/* PH_EVAL: the round is over. */
static int round_end(ml_op *x, int *done, int *result, int64_t *wake)
{
	if (x->got >= x->quorum) {
		int64_t valid = -1;
		if (x->lease_ms >= 0)
			valid = x->lease_ms - (hl__now_ms() - x->round_start) -
			        hl_multilock_drift_ms(x->lease_ms);
		/* (otherwise taking the members used up the lease) */
		if (x->lease_ms < 0 || valid > 0) {
			x->hold = hold_new(x->n);
			if (!x->hold) {
				undo(x, 0);
				x->phase = PH_END;
				*done = 1;
				return hl__fail(HL_ENOMEM, "out of memory");
			}
			memcpy(x->hold->owner, x->owner, sizeof(x->owner));
			memcpy(x->hold->taken, x->taken, x->n);
			memcpy(x->hold->epochs, x->epochs,
			       x->n * sizeof(*x->epochs));
			x->hold->valid_until_ms =
			        x->lease_ms < 0 ? -1 : hl__now_ms() + valid;
			x->valid = valid;
			x->phase = PH_HELD;
			*done = 1;
			*result = 1;
			return HL_OK;
		}
	}
	undo(x, 0);
	if (x->wait_ms == 0 || hl__remaining(x->deadline) == 0)
		return not_acquired(x, done, result);
	if (x->wait_ms < 0 && x->errors > x->n - x->quorum)
		/* a wait without end tells of a dead quorum */
		return not_acquired(x, done, result);
	if (x->kind == HL_MULTILOCK_RED) {
		int64_t ms = hl__jitter_delay(ML_RETRY_PAUSE_MS, 0);
		int64_t left = hl__remaining(x->deadline);
		if (left >= 0 && left < ms)
			ms = left;
		x->pause_until = hl__now_ms() + ms;
		x->phase = PH_PAUSE;
		*wake = x->pause_until;
		return HL_OK;
	}
	x->phase = PH_ROUND;
	return HL_OK;
}

/* A stop: cancel the member in flight, and once it is done give back
 * everything this call took. */
static int wind_down(ml_op *x, int stop, int *done)
{
	if (x->child) {
		int one = 0, rc;
		hl_task_cancel(x->child);
		if (!hl_task_done(x->child))
			return HL_OK; /* its end runs this step again */
		rc = hl_task_result(&one, x->child);
		hl_task_free(x->child);
		x->child = NULL;
		if (rc == HL_OK && one) {
			x->taken[x->i] = 1; /* it got there first */
			x->epochs[x->i] = hl__hold_epoch(
			        x->members[x->i]->client, x->members[x->i],
			        x->owners[x->i]);
		}
	}
	undo(x, 1);
	x->phase = PH_END;
	*done = 1;
	if (stop == HL_ECLOSED)
		return hl__fail(HL_ECLOSED,
		                "the client was closed while waiting for the "
		                "%s",
		                kind_name(x->kind));
	return hl__fail(stop, "waiting for the %s was interrupted",
	                kind_name(x->kind));
}

static int acquire_step(void *arg, hl_task *self, int stop, int *done,
                        int *result, int64_t *wake)
{
	ml_op *x = arg;
	int rc;
	if (stop != HL_OK)
		return wind_down(x, stop, done);
	for (;;) {
		switch (x->phase) {
		case PH_ROUND:
			round_begin(x);
			x->phase = PH_MEMBER;
			break;
		case PH_MEMBER:
			rc = member_next(x, self, done);
			if (*done)
				return rc;
			break;
		case PH_CHILD:
			if (!hl_task_done(x->child))
				return HL_OK; /* its end runs this again */
			rc = child_done(x, done);
			if (*done)
				return rc;
			break;
		case PH_EVAL:
			rc = round_end(x, done, result, wake);
			if (*done || x->phase == PH_PAUSE)
				return rc;
			break;
		case PH_PAUSE:
			if (hl__now_ms() < x->pause_until) {
				*wake = x->pause_until;
				return HL_OK;
			}
			x->phase = PH_ROUND;
			break;
		default:
			/* PH_HELD, PH_END: only a stop runs it again */
			*done = 1;
			return hl__fail(HL_ESYSTEM, "multilock task stepped "
			                            "after its end");
		}
	}
}

/* Delivered: record the hold and fill in the caller's outputs. */
static void acquire_commit(void *arg, int status, int result)
{
	ml_op *x = arg;
	if (status != HL_OK || !result || !x->hold)
		return;
	if (x->out_members) {
		size_t i;
		for (i = 0; i < x->n; i++)
			x->out_members[i] = x->taken[i];
	}
	if (x->out_valid)
		*x->out_valid = x->valid;
	book_push(x->book, x->hold);
	x->hold = NULL;
}

static const hl_drive_ops acquire_ops = {acquire_step, acquire_commit, op_free};

/* Start an acquire of m for the calling thread, as a task of the first
 * member's client. */
static int acquire_start(hl_task **out, int64_t *out_valid_ms, int *out_members,
                         hl_multilock *m, int64_t wait_ms, int64_t lease_ms,
                         int blocking)
{
	hl_client *c0 = m->members[0]->client;
	char label[80];
	ml_op *x;
	int rc;

	if ((rc = op_new(&x, m, 0)) != HL_OK)
		return rc;
	x->wait_ms = wait_ms;
	x->lease_ms = lease_ms;
	x->deadline = hl__deadline(wait_ms);
	if (m->kind == HL_MULTILOCK_RED && wait_ms > 0) {
		x->per_member = wait_ms / (int64_t)m->n;
		if (x->per_member < 1)
			x->per_member = 1;
	}
	x->phase = PH_ROUND;
	x->out_valid = out_valid_ms;
	x->out_members = out_members;
	if ((rc = hl__client_enter(c0)) != HL_OK) {
		op_free(x);
		return hl__fail_wrap(
		        rc, "%s member 0 (\"%s\")", kind_name(m->kind),
		        member_label(m->members[0], label, sizeof(label)));
	}
	rc = hl__task_drive_start(out, c0, &acquire_ops, x, 1,
	                          atomic_load(&c0->interrupt_gen), blocking);
	hl__client_leave(c0);
	return rc;
}

/* ---- the release task ------------------------------------------------------
 */

static int release_step(void *arg, hl_task *self, int stop, int *done,
                        int *result, int64_t *wake)
{
	ml_op *x = arg;
	(void)self;
	(void)wake;
	*done = 1;
	if (!x->ran) {
		if (stop != HL_OK)
			/* not sent: nothing was released */
			return hl__fail(stop, stop == HL_ECLOSED
			                              ? "the client was closed "
			                                "before the release "
			                                "was sent"
			                              : "the release was "
			                                "cancelled before it "
			                                "was sent");
		if (x->use_record) {
			ml_hold *h = book_pop(x->book, x->owner);
			/* without a record: every member */
			memset(x->taken, 1, x->n);
			if (h) {
				memcpy(x->taken, h->taken, x->n);
				memcpy(x->epochs, h->epochs,
				       x->n * sizeof(*x->epochs));
			}
			free(h);
		}
		x->rel_rc = release_members(x->kind, x->n, x->quorum,
		                            x->members, x->owners, x->taken,
		                            x->epochs, x->statuses, x->released,
		                            &x->rel_count);
		if (x->rel_rc != HL_OK)
			snprintf(x->rel_msg, sizeof(x->rel_msg), "%s",
			         hl_error_last());
		x->ran = 1;
	}
	/* once sent, it ends with its own result, stopped or not */
	*result = (int)x->rel_count;
	if (x->rel_rc != HL_OK)
		return hl__fail(x->rel_rc, "%s", x->rel_msg);
	return HL_OK;
}

static void release_commit(void *arg, int status, int result)
{
	ml_op *x = arg;
	size_t i;
	(void)status;
	(void)result;
	if (!x->ran)
		return;
	for (i = 0; i < x->n; i++) {
		if (x->out_statuses)
			x->out_statuses[i] = x->statuses[i];
		if (x->out_released)
			x->out_released[i] = x->released[i];
	}
}

static const hl_drive_ops release_ops = {release_step, release_commit, op_free};

/* ---- public -------------------------------------------------------------- */

int hl_multilock_try_acquire_ex(int *out_acquired, int64_t *out_valid_ms,
                                int *out_members, hl_multilock *m,
                                int64_t wait_ms, int64_t lease_ms,
                                hl_cancel *cancel)
{
	hl_task *t;
	int rc, result = 0;

	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	if ((rc = check_args(wait_ms, lease_ms)) != HL_OK)
		return rc;
	if (hl_cancel_is_triggered(cancel))
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	rc = acquire_start(&t, out_valid_ms, out_members, m, wait_ms, lease_ms,
	                   1);
	if (rc != HL_OK)
		return rc;
	rc = hl__task_finish_blocking(t, cancel, &result);
	if (rc == HL_OK)
		*out_acquired = result;
	return rc;
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
		              m ? kind_name(m->kind) : "multilock");
	return rc;
}

int hl_multilock_try_acquire_ex_start(hl_task **out, int64_t *out_valid_ms,
                                      int *out_members, hl_multilock *m,
                                      int64_t wait_ms, int64_t lease_ms)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	if ((rc = check_args(wait_ms, lease_ms)) != HL_OK)
		return rc;
	return acquire_start(out, out_valid_ms, out_members, m, wait_ms,
	                     lease_ms, 0);
}

int hl_multilock_try_acquire_start(hl_task **out, hl_multilock *m,
                                   int64_t wait_ms, int64_t lease_ms)
{
	return hl_multilock_try_acquire_ex_start(out, NULL, NULL, m, wait_ms,
	                                         lease_ms);
}

int hl_multilock_release_ex(int *out_statuses, int *out_released,
                            hl_multilock *m, const int *members)
{
	return hl_multilock_release_holds(out_statuses, out_released, m,
	                                  members, NULL);
}

int hl_multilock_release_holds(int *out_statuses, int *out_released,
                               hl_multilock *m, const int *members,
                               const uint64_t *epochs)
{
	char owner[HL_OWNER_MAX];
	unsigned char *want;
	size_t i, count = 0;
	ml_hold *h;
	int rc;

	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	want = malloc(m->n);
	if (!want)
		return hl__fail(HL_ENOMEM, "out of memory");
	owner_key(m, owner);
	h = book_pop(m->book, owner);
	for (i = 0; i < m->n; i++)
		want[i] = members ? members[i] != 0 : h ? h->taken[i] : 1;
	rc = release_members(m->kind, m->n, m->quorum, m->members, NULL, want,
	                     members ? epochs
	                     : h     ? h->epochs
	                             : NULL,
	                     out_statuses, out_released, &count);
	free(h);
	free(want);
	return rc;
}

int hl_multilock_release(hl_multilock *m)
{
	return hl_multilock_release_ex(NULL, NULL, m, NULL);
}

int hl_multilock_release_ex_start(hl_task **out, int *out_statuses,
                                  int *out_released, hl_multilock *m,
                                  const int *members)
{
	return hl_multilock_release_holds_start(out, out_statuses, out_released,
	                                        m, members, NULL);
}

int hl_multilock_release_holds_start(hl_task **out, int *out_statuses,
                                     int *out_released, hl_multilock *m,
                                     const int *members, const uint64_t *epochs)
{
	hl_client *c0;
	char label[80];
	ml_op *x;
	size_t i;
	int rc;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	if ((rc = op_new(&x, m, 1)) != HL_OK)
		return rc;
	x->use_record = members == NULL;
	for (i = 0; members && i < m->n; i++) {
		x->taken[i] = members[i] != 0;
		x->epochs[i] = epochs ? epochs[i] : 0;
	}
	x->out_statuses = out_statuses;
	x->out_released = out_released;
	c0 = m->members[0]->client;
	if ((rc = hl__client_enter(c0)) != HL_OK) {
		op_free(x);
		return hl__fail_wrap(
		        rc, "%s member 0 (\"%s\")", kind_name(m->kind),
		        member_label(m->members[0], label, sizeof(label)));
	}
	/* a release is not a wait: hl_client_interrupt() leaves it alone */
	rc = hl__task_drive_start(out, c0, &release_ops, x, 0, 0, 0);
	hl__client_leave(c0);
	return rc;
}

int hl_multilock_release_start(hl_task **out, hl_multilock *m)
{
	return hl_multilock_release_ex_start(out, NULL, NULL, m, NULL);
}

int hl_multilock_is_lost(int *out, hl_multilock *m)
{
	char owner[HL_OWNER_MAX];
	ml_hold *h, *copy = NULL;
	int64_t valid_until = -1;
	size_t i, held = 0, lost = 0;
	int rc = HL_OK;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!m)
		return hl__fail(HL_EINVAL, "multilock is NULL");
	owner_key(m, owner);
	pthread_mutex_lock(&m->book->mu);
	for (h = m->book->holds; h; h = h->next)
		if (strcmp(h->owner, owner) == 0)
			break;
	if (h && (copy = hold_new(m->n)) != NULL) {
		memcpy(copy->taken, h->taken, m->n);
		memcpy(copy->epochs, h->epochs, m->n * sizeof(*h->epochs));
		valid_until = h->valid_until_ms;
	}
	pthread_mutex_unlock(&m->book->mu);
	if (!h) {
		*out = 0;
		return HL_OK;
	}
	if (!copy)
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < m->n; i++) {
		hl_hold_state st;
		int one = 0;
		if (!copy->taken[i])
			continue;
		held++;
		memset(&st, 0, sizeof(st));
		st.version = HL_HOLD_STATE_VERSION;
		rc = hl_lock_hold_state(&st, m->members[i]);
		if (rc == HL_OK)
			/* found lost, or not the hold it took: that one ended
			 * (and the owner may hold a newer one) */
			one = st.lost || (copy->epochs[i] != 0 &&
			                  st.epoch != copy->epochs[i]);
		else if (rc == HL_ECLOSED || rc == HL_EFORKED) {
			/* Nothing renews it any more. */
			one = 1;
			rc = HL_OK;
		}
		if (rc != HL_OK)
			break;
		lost += one != 0;
	}
	free(copy);
	if (rc != HL_OK)
		return rc;
	*out = (valid_until >= 0 && hl__now_ms() >= valid_until) ||
	       held - lost < m->quorum;
	return HL_OK;
}
