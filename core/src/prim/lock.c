/*
 * The lock kinds (PROTOCOL 2 to 6): reentrant (Redisson RLock), fair, the
 * read and write halves of a read-write lock, spin, fenced, and the
 * non-reentrant variants. Each kind is its scripts (service/scripts.c)
 * and the few choices below: which script and arguments, which channel a
 * waiter listens on, whether local waiters queue in the per-name gate.
 *
 * Acquire is one EVALSHA when the lock is free; otherwise the wait is a
 * task of the operation engine (service/task.c), not a blocked thread: it
 * queues in the client's per-name gate (FIFO, so only one local waiter
 * competes in Redis and a releaser cannot barge ahead of its neighbours;
 * fair-lock waiters queue in Redis instead, each in its place), subscribes
 * to the kind's channel (the spin lock to none) and is parked until an
 * unlock message, the holder's TTL or its back-off, then tries again. The
 * blocking calls are that task plus a wait; the _start calls return it.
 */
#include "internal.h"
#include "prim/args.h"
#include "prim/line.h"
#include "prim/object.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lock_enter(hl_lock *lock)
{
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	return hl__client_enter(lock->client);
}

static const char *const kind_names[] = {
        "reentrant", "fair",   "read",         "write",
        "spin",      "fenced", "nonreentrant", "fair-nonreentrant"};
#define HL_KIND_COUNT ((int)(sizeof(kind_names) / sizeof(kind_names[0])))

static int is_fair(int kind)
{
	return kind == HL_LOCK_FAIR || kind == HL_LOCK_FAIR_NONREENTRANT;
}

static int is_rw(int kind)
{
	return kind == HL_LOCK_READ || kind == HL_LOCK_WRITE;
}

/* The default lock and its non-reentrant variant: RLock's hash, lease and
 * messages, with waiters in hilock's line (scripts.c, docs/PROTOCOL.md). */
static int in_line(int kind)
{
	return kind == HL_LOCK_REENTRANT || kind == HL_LOCK_NONREENTRANT;
}

/* What the last attempt on this thread said of the caller's place in the
 * line (a default lock's waiter): its ticket (0: none) and whether first. */
static _Thread_local int64_t tl_ticket;
static _Thread_local int tl_first;

static int is_reentrant(int kind)
{
	return kind != HL_LOCK_NONREENTRANT &&
	       kind != HL_LOCK_FAIR_NONREENTRANT;
}

int hl__kind_class(int kind)
{
	return kind == HL_LOCK_READ    ? HL_CLASS_READ
	       : kind == HL_LOCK_WRITE ? HL_CLASS_WRITE
	                               : HL_CLASS_PLAIN;
}

size_t hl__lock_field(char *buf, const hl_lock *lock, const char *owner)
{
	size_t n = strlen(owner);
	memcpy(buf, owner, n);
	if (lock->kind == HL_LOCK_WRITE) {
		memcpy(buf + n, ":write", 6);
		n += 6;
	}
	buf[n] = '\0';
	return n;
}

const char *hl_lock_kind_name(int kind)
{
	return kind >= 0 && kind < HL_KIND_COUNT ? kind_names[kind] : "unknown";
}

int hl_lock_kind(const hl_lock *lock)
{
	return lock ? lock->kind : -1;
}

static void lock_dispose(hl_lock *l)
{
	free(l->name);
	free(l->channel);
	free(l->aux[0]);
	free(l->aux[1]);
	free(l);
}

int hl_lock_new(hl_lock **out, hl_client *client, const void *name,
                size_t name_len)
{
	return hl_lock_new_kind(out, client, HL_LOCK_REENTRANT, name, name_len);
}

int hl_lock_new_kind(hl_lock **out, hl_client *client, int kind,
                     const void *name, size_t name_len)
{
	hl_lock *l;
	const char *aux[2] = {NULL, NULL};
	int rc, i, failed = 0;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (kind < 0 || kind >= HL_KIND_COUNT)
		return hl__fail(HL_EINVAL,
		                "kind %d is not a lock kind (HL_LOCK_*)", kind);
	if ((rc = hl__check_name(name, name_len)) != HL_OK)
		return rc;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if (client->conf.url.topology == HL_TOPO_CLUSTER &&
	    !hl__name_slot_safe(name, name_len)) {
		/* Its channel and other keys would hash to another slot than
		 * its key, and every script that names both would fail with
		 * CROSSSLOT (Redisson's too): say so now. */
		char label[80];
		hl__client_leave(client);
		return hl__fail(
		        HL_EINVAL,
		        "\"%s\": in a cluster, a name with braces must "
		        "have a non-empty {hash tag} at its first '{' "
		        "(\"x{tag}y\"), or its lock channel lands in "
		        "another slot",
		        hl__printable(label, sizeof(label), name, name_len));
	}
	if (is_fair(kind)) {
		aux[0] = "redisson_lock_queue:";
		aux[1] = "redisson_lock_timeout:";
	} else if (kind == HL_LOCK_FENCED) {
		aux[0] = "redisson_lock_token:";
	} else if (is_rw(kind)) {
		aux[0] = "";
	} else if (in_line(kind)) {
		aux[0] = "hilock_line:";
		aux[1] = "hilock_line_timeout:";
	}
	l = calloc(1, sizeof(*l));
	if (l) {
		l->kind = kind;
		l->name = malloc(name_len);
		l->channel =
		        hl__derive_name(is_rw(kind) ? "redisson_rwlock:"
		                                    : "redisson_lock__channel:",
		                        "", name, name_len, 0, &l->channel_len);
		for (i = 0; i < 2; i++)
			if (aux[i] && !(l->aux[i] = hl__derive_name(
			                        aux[i], "", name, name_len, 0,
			                        &l->aux_len[i])))
				failed = 1;
		l->backoff_initial_ms = 1;
		l->backoff_max_ms = 128;
		l->backoff_multiplier = 2;
	}
	if (!l || !l->name || !l->channel || failed) {
		if (l)
			lock_dispose(l);
		hl__client_leave(client);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(l->name, name, name_len);
	l->name_len = name_len;
	atomic_fetch_add(&client->refs, 1);
	l->client = client;
	hl__client_leave(client);
	*out = l;
	return HL_OK;
}

void hl_lock_free(hl_lock *lock)
{
	if (!lock)
		return;
	hl__client_unref(lock->client);
	lock_dispose(lock);
}

int hl__lock_clone(hl_lock **out, const hl_lock *lock)
{
	int rc = hl_lock_new_kind(out, lock->client, lock->kind, lock->name,
	                          lock->name_len);
	if (rc != HL_OK)
		return rc;
	(*out)->owner_id = lock->owner_id;
	(*out)->backoff_initial_ms = lock->backoff_initial_ms;
	(*out)->backoff_max_ms = lock->backoff_max_ms;
	(*out)->backoff_multiplier = lock->backoff_multiplier;
	return HL_OK;
}

int hl_lock_set_owner(hl_lock *lock, uint64_t owner_id)
{
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	lock->owner_id = owner_id;
	return HL_OK;
}

int hl_lock_owner(size_t *out_len, const hl_lock *lock, char *buf,
                  size_t buf_len)
{
	char tmp[HL_OWNER_MAX];
	size_t n;
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	n = hl__owner_string(tmp, lock->client, hl__effective_owner(lock));
	if (out_len)
		*out_len = n;
	if (!buf || buf_len < n + 1)
		return hl__fail(HL_EINVAL,
		                "buffer of %zu bytes is too small "
		                "for the owner (%zu + 1)",
		                buf_len, n);
	memcpy(buf, tmp, n + 1);
	return HL_OK;
}

static const char *lock_label(const hl_lock *lock, char *buf, size_t len)
{
	return hl__printable(buf, len, lock->name, lock->name_len);
}

/* The longest a call goes past its deadline to finish one attempt: a wait
 * of 0 (one attempt) or a deadline that falls in a round trip gets this
 * much for it, and no more, however the network behaves. */
#define HL_GRACE_MS 150

/* {name}:<owner>:rwlock_timeout, the prefix of owner's read holds' lease
 * keys (PROTOCOL 4). */
static int read_timeout_prefix(script_args *a, const hl_lock *lock,
                               const char *owner)
{
	static const char tail[] = ":rwlock_timeout";
	size_t olen = strlen(owner), n;
	a->owned = malloc(lock->aux_len[0] + 1 + olen + sizeof(tail));
	if (!a->owned)
		return hl__fail(HL_ENOMEM, "out of memory");
	memcpy(a->owned, lock->aux[0], lock->aux_len[0]);
	n = lock->aux_len[0];
	a->owned[n++] = ':';
	memcpy(a->owned + n, owner, olen);
	memcpy(a->owned + n + olen, tail, sizeof(tail) - 1);
	arg(a, a->owned, n + olen + sizeof(tail) - 1);
	return HL_OK;
}

/* The release script of lock's kind for owner: the lock keeps lease_ms
 * when holds remain, count is the owner's hold count before this release
 * (0: unknown). flags, sent, b and replicated as for hl__eval. */
static int release_script(hl_lock *lock, const char *owner, int64_t lease_ms,
                          int64_t count, int flags, enum hl_sent *sent,
                          const hl_bound *b, int *replicated, hl_reply **r)
{
	hl_client *c = lock->client;
	const char *publish = hl__router_publish(c);
	enum hl_script_id id;
	script_args a;
	int rc;
	memset(&a, 0, sizeof(a));
	arg(&a, lock->name, lock->name_len);
	if (is_fair(lock->kind)) {
		id = HL_SCRIPT_FAIR_RELEASE;
		arg(&a, lock->aux[0], lock->aux_len[0]);
		arg(&a, lock->aux[1], lock->aux_len[1]);
		arg(&a, lock->channel, lock->channel_len);
		a.nkeys = 4;
		arg_str(&a, "0");
		arg_str(&a, num(a.nums[0], lease_ms));
		arg_str(&a, owner);
		arg_str(&a, num(a.nums[1], wall_ms()));
		arg_str(&a, publish);
		arg_str(&a, num(a.nums[2], count));
	} else if (lock->kind == HL_LOCK_READ) {
		id = HL_SCRIPT_READ_RELEASE;
		arg(&a, lock->channel, lock->channel_len);
		if ((rc = read_timeout_prefix(&a, lock, owner)) != HL_OK)
			return rc;
		arg(&a, lock->aux[0], lock->aux_len[0]);
		a.nkeys = 4;
		arg_str(&a, "0");
		arg_str(&a, owner);
		arg_str(&a, publish);
		arg_str(&a, num(a.nums[0], count));
	} else if (lock->kind == HL_LOCK_WRITE) {
		id = HL_SCRIPT_WRITE_RELEASE;
		arg(&a, lock->channel, lock->channel_len);
		a.nkeys = 2;
		arg_str(&a, "1"); /* Redisson's write unlock message */
		arg_str(&a, num(a.nums[0], lease_ms));
		arg(&a, a.field, hl__lock_field(a.field, lock, owner));
		arg_str(&a, publish);
		arg_str(&a, num(a.nums[1], count));
	} else if (in_line(lock->kind)) {
		id = HL_SCRIPT_LINE_RELEASE;
		arg(&a, lock->channel, lock->channel_len);
		a.nkeys = 2;
		arg_str(&a, "0");
		arg_str(&a, num(a.nums[0], lease_ms));
		arg_str(&a, owner);
		arg_str(&a, publish);
		arg_str(&a, num(a.nums[1], count));
		arg(&a, lock->aux[0], lock->aux_len[0]);
		arg(&a, lock->aux[1], lock->aux_len[1]);
	} else {
		id = HL_SCRIPT_RELEASE;
		arg(&a, lock->channel, lock->channel_len);
		a.nkeys = 2;
		/* Redisson's unlock message; the spin lock publishes none */
		arg_str(&a, lock->kind == HL_LOCK_SPIN ? "" : "0");
		arg_str(&a, num(a.nums[0], lease_ms));
		arg_str(&a, owner);
		arg_str(&a, publish);
		arg_str(&a, num(a.nums[1], count));
	}
	rc = hl__eval(c, r, id, a.nkeys, a.n, a.v, a.len, flags, sent, b,
	              replicated);
	free(a.owned);
	return rc;
}

/* Take back an acquire that set owner's count to op->count + 1: the
 * release script set back to op->count (deleting the lock at 0, keeping
 * the hold's lease otherwise). Not WAITed for: see take_back(). */
static int undo_acquire(hl_lock *lock, const char *owner, const hl_op *op,
                        const hl_bound *b)
{
	hl_reply *r = NULL;
	int rc = release_script(lock, owner,
	                        op->lease_ms > 0
	                                ? op->lease_ms
	                                : lock->client->conf.watchdog_ms,
	                        op->count + 1, HL_CMD_IDEMPOTENT | HL_CMD_WRITE,
	                        NULL, b, NULL, &r);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = hl__fail(HL_EREDIS, "taking back an acquire: %.300s",
		              hl__reply_str(r));
	hl__reply_free(r);
	return rc;
}

/* How an attempt goes beyond the lease: the fair lock's wait (its queue
 * deadline) and whether a taken lock puts the caller in its queue. */
typedef struct attempt_opts {
	int64_t fair_wait_ms;
	int enqueue;
} attempt_opts;

/* The acquire script of lock's kind: owner's count becomes count. */
static int acquire_script(hl_lock *lock, const char *owner, int64_t count,
                          int64_t lease, const attempt_opts *ao,
                          const hl_bound *b, int *replicated,
                          enum hl_sent *sent, hl_reply **r)
{
	hl_client *c = lock->client;
	enum hl_script_id id = HL_SCRIPT_ACQUIRE;
	script_args a;
	int rc;
	memset(&a, 0, sizeof(a));
	arg(&a, lock->name, lock->name_len);
	a.nkeys = 1;
	if (is_fair(lock->kind)) {
		id = HL_SCRIPT_FAIR_ACQUIRE;
		arg(&a, lock->aux[0], lock->aux_len[0]);
		arg(&a, lock->aux[1], lock->aux_len[1]);
		a.nkeys = 3;
	} else if (lock->kind == HL_LOCK_FENCED) {
		id = HL_SCRIPT_FENCED_ACQUIRE;
		arg(&a, lock->aux[0], lock->aux_len[0]);
		a.nkeys = 2;
	} else if (lock->kind == HL_LOCK_READ) {
		id = HL_SCRIPT_READ_ACQUIRE;
		if ((rc = read_timeout_prefix(&a, lock, owner)) != HL_OK)
			return rc;
		a.nkeys = 2;
	} else if (lock->kind == HL_LOCK_WRITE) {
		id = HL_SCRIPT_WRITE_ACQUIRE;
	} else if (in_line(lock->kind)) {
		id = HL_SCRIPT_LINE_ACQUIRE;
	}
	arg_str(&a, num(a.nums[0], lease < 0 ? c->conf.watchdog_ms : lease));
	if (lock->kind == HL_LOCK_WRITE)
		arg(&a, a.field, hl__lock_field(a.field, lock, owner));
	else
		arg_str(&a, owner);
	if (lock->kind == HL_LOCK_READ)
		arg(&a, a.field,
		    hl__lock_field(a.field, &(hl_lock){.kind = HL_LOCK_WRITE},
		                   owner));
	if (is_fair(lock->kind)) {
		arg_str(&a, num(a.nums[1], ao->fair_wait_ms));
		arg_str(&a, num(a.nums[2], wall_ms()));
	}
	arg_str(&a, num(a.nums[3], count));
	if (is_fair(lock->kind))
		arg_str(&a, ao->enqueue ? "1" : "0");
	if (in_line(lock->kind)) {
		/* a waiter takes a place; a single attempt does not */
		arg_str(&a, ao->enqueue ? "1" : "0");
		arg_str(&a, num(a.nums[1], HL_LINE_LEASE_MS));
		arg_str(&a, hl__router_publish(c));
		arg(&a, c->id, HL_UUID_LEN); /* the client's place */
		arg(&a, lock->aux[0], lock->aux_len[0]);
		arg(&a, lock->aux[1], lock->aux_len[1]);
	}
	rc = hl__eval(c, r, id, a.nkeys, a.n, a.v, a.len,
	              HL_CMD_IDEMPOTENT | HL_CMD_WRITE, sent, b, replicated);
	free(a.owned);
	return rc;
}

/* One attempt within b, as part of op (owner's count op->count).
 * HL_OK with *acquired = 1 (op->token set for a fenced lock, *sent_ms the
 * time the acquire that answered went out: Redis set its lease no
 * earlier), or 0 with the time to wait before trying again in *ttl; the
 * bound's status when it stopped the attempt. *dirty = 1 when it did not
 * acquire but may have left owner's count at op->count + 1 in Redis (an
 * acquire that may have run without an answer, an undo that failed): the
 * caller takes that back. The acquire sets the count, so it is resent
 * after a lost reply: a copy that ran already changes nothing. */
static int attempt(hl_lock *lock, const char *owner, hl_op *op, int64_t lease,
                   const attempt_opts *ao, const hl_bound *b, int *acquired,
                   int64_t *ttl, int *dirty, int64_t *sent_ms)
{
	hl_client *c = lock->client;
	char label[80];
	hl_reply *r = NULL;
	enum hl_sent sent = HL_SENT_NOTHING;
	int rc, replicated = -1, tries = 0;

again:
	*acquired = 0;
	*dirty = 0;
	tl_ticket = 0;
	tl_first = 0;
	rc = acquire_script(lock, owner, op->count + 1, lease, ao, b,
	                    &replicated, &sent, &r);
	if (rc != HL_OK) {
		*dirty = sent != HL_SENT_NOTHING;
		return rc == HL_EIO ? hl__fail_wrap(rc, "acquiring \"%s\"",
		                                    lock_label(lock, label,
		                                               sizeof(label)))
		                    : rc;
	}
	*sent_ms = hl__tl_sent_ms;
	if (hl__reply_type(r) == HL_REPLY_ARRAY && hl__reply_len(r) == 3 &&
	    in_line(lock->kind)) {
		/* taken (or kept for the first in line): how long to wait at
		 * most, the caller's place */
		*ttl = hl__reply_int(hl__reply_at(r, 0));
		tl_ticket = hl__reply_int(hl__reply_at(r, 1));
		tl_first = hl__reply_int(hl__reply_at(r, 2)) == 1;
	} else if (hl__reply_type(r) == HL_REPLY_ARRAY &&
	           hl__reply_len(r) >= 1 &&
	           hl__reply_type(hl__reply_at(r, 0)) == HL_REPLY_INTEGER) {
		*acquired = 1;
		if (hl__reply_len(r) >= 2)
			op->token = hl__reply_int(hl__reply_at(r, 1));
	} else if (hl__reply_type(r) == HL_REPLY_INTEGER) {
		/* taken by another: a copy of ours that ran before would have
		 * made this one answer "acquired" */
		*ttl = hl__reply_int(r);
	} else if (hl__reply_type(r) == HL_REPLY_ERROR) {
		*dirty = sent != HL_SENT_NOTHING;
		rc = hl__fail(HL_EREDIS, "acquiring \"%s\": %.300s",
		              lock_label(lock, label, sizeof(label)),
		              hl__reply_str(r));
	} else {
		*dirty = 1;
		rc = hl__fail(HL_EPROTOCOL,
		              "acquiring \"%s\": unexpected reply type %d",
		              lock_label(lock, label, sizeof(label)),
		              hl__reply_type(r));
	}
	hl__reply_free(r);
	r = NULL;
	if (rc == HL_OK && *acquired && replicated == 0) {
		/* Taken on the master, but no replica confirmed it: a failover
		 * now would lose it. Undo, and try again (Redisson's
		 * NoSyncedSlaves rule, PROTOCOL 0.4). */
		*acquired = 0;
		*dirty = 1;
		if ((rc = undo_acquire(lock, owner, op, b)) != HL_OK)
			return rc;
		*dirty = 0;
		if (tries++ >= c->conf.retry_attempts)
			return hl__fail(
			        HL_EIO,
			        "acquiring \"%s\": no replica confirmed "
			        "it within %lld ms (WAIT), so it was "
			        "undone",
			        lock_label(lock, label, sizeof(label)),
			        (long long)c->conf.wait_timeout_ms);
		if ((rc = hl__pause(
		             c, hl__jitter_delay(c->conf.retry_delay_ms, tries),
		             b)) != HL_OK)
			return rc;
		goto again;
	}
	return rc;
}

/* ---- taking back an acquire nobody received ------------------------------
 * An acquire whose caller does not get the lock (the wait ended inside its
 * round trip, an error, a cancel, an undo after WAIT that failed) may have
 * run in Redis: it is taken back at once, with a bound of its own (the
 * caller's may be over): HL_UNDO_GRACE_MS past a deadline, so that the
 * call still ends close to it (a healthy server answers in a few ms, even
 * on a new connection), else (a cancel, an error) HL_UNDO_MS. The connection
 * that carried the acquire was dropped and is fenced (CLIENT KILL ahead of the
 * next command to that server), so no copy of it lands after the undo. If Redis
 * does not answer the undo in time, a background task of the client's engine
 * tries again until the acquire's lease would have ended it anyway, and tells
 * it as an HL_EVENT_UNDO event. The owner's own next acquire or release of the
 * lock sets its count in Redis, and supersedes the undo.
 *
 * The undo is not WAITed for. It reached the master; if the master failed
 * before a replica had it, a replica that had the acquire would bring the
 * hold back, but the acquire itself was never confirmed by a replica
 * either (else the caller would have it): the two are lost together as
 * often as not, and the acquire's lease ends what is left. A WAIT here
 * would only make an undo that cannot be confirmed (a frozen replica) hold
 * the caller, or the background task, for nothing. */
#define HL_UNDO_GRACE_MS 100
#define HL_UNDO_MS       500

typedef struct undo_ctx {
	hl_lock lock; /* its own name, channel and keys */
	uint64_t owner_id;
	char owner[HL_OWNER_MAX];
	int64_t count;    /* owner's holds before the acquire */
	uint64_t epoch;   /* and their identity */
	int64_t lease_ms; /* the lease to keep when holds remain */
	int64_t until_ms; /* the acquire's lease has ended it by then */
	int tries;
} undo_ctx;

static void undo_free(void *arg)
{
	undo_ctx *x = arg;
	int i;
	if (!x)
		return;
	/* the task holds the client */
	free(x->lock.name);
	free(x->lock.channel);
	for (i = 0; i < 2; i++)
		free(x->lock.aux[i]);
	free(x);
}

static int undo_step(void *arg, struct hl_task *self, int stop, int *done,
                     int *result, int64_t *wake_ms)
{
	undo_ctx *x = arg;
	hl_client *c = x->lock.client;
	int64_t now = hl__now_ms(), left = x->until_ms - now;
	hl_bound b;
	hl_op op;
	int rc;
	(void)self;
	*result = 0;
	*done = 1;
	if (stop != HL_OK)
		return stop; /* the client closes */
	if (left <= 0) {
		hl__obs_undo(c, &x->lock, x->owner, HL_ETIMEDOUT, 0);
		return HL_OK;
	}
	hl__bound_init(&b, c,
	               now + (c->conf.command_timeout_ms < left
	                              ? c->conf.command_timeout_ms
	                              : left),
	               NULL, 0);
	if ((rc = hl__op_begin(&op, c, &x->lock, x->owner_id, &b)) == HL_OK) {
		if (op.count != x->count || op.epoch != x->epoch) {
			/* The owner acquired or released since: that set its
			 * count in Redis. */
			hl__op_end(c, &op);
			hl__obs_undo(c, &x->lock, x->owner, HL_OK, 0);
			return HL_OK;
		}
		op.count = x->count;
		op.lease_ms = x->lease_ms;
		rc = undo_acquire(&x->lock, x->owner, &op, &b);
		hl__op_end(c, &op);
		if (rc == HL_OK) {
			hl__obs_undo(c, &x->lock, x->owner, HL_OK, 0);
			return HL_OK;
		}
	}
	*done = 0;
	*wake_ms = hl__now_ms() +
	           hl__jitter_delay(c->conf.retry_delay_ms, ++x->tries);
	if (*wake_ms > x->until_ms)
		*wake_ms = x->until_ms;
	return HL_OK;
}

static const hl_drive_ops undo_ops = {undo_step, NULL, undo_free};

static char *dup_bytes(const char *p, size_t n);

/* Take back what an acquire of owner as part of op (lease as asked) may
 * have left in Redis, after the attempt ended with status rc: at once,
 * else in the background (see above). */
static void take_back(hl_lock *lock, uint64_t owner_id, const char *owner,
                      const hl_op *op, int64_t lease, int rc)
{
	hl_client *c = lock->client;
	int64_t ms = rc == HL_ETIMEDOUT ? HL_UNDO_GRACE_MS : HL_UNDO_MS;
	undo_ctx *x;
	hl_bound ub;
	int i, failed = 0;
	if (ms > c->conf.command_timeout_ms)
		ms = c->conf.command_timeout_ms;
	hl__bound_init(&ub, c, hl__now_ms() + ms, NULL, 0);
	if (undo_acquire(lock, owner, op, &ub) == HL_OK ||
	    atomic_load(&c->closing))
		return;
	x = calloc(1, sizeof(*x));
	if (!x)
		return; /* its lease ends it */
	x->lock = *lock;
	x->lock.name = dup_bytes(lock->name, lock->name_len);
	x->lock.channel = dup_bytes(lock->channel, lock->channel_len);
	for (i = 0; i < 2; i++)
		if (!(x->lock.aux[i] =
		              dup_bytes(lock->aux[i], lock->aux_len[i])) &&
		    lock->aux[i])
			failed = 1;
	if (!x->lock.name || !x->lock.channel || failed) {
		undo_free(x);
		return;
	}
	x->owner_id = owner_id;
	snprintf(x->owner, sizeof(x->owner), "%s", owner);
	x->count = op->count;
	x->epoch = op->epoch;
	x->lease_ms = op->lease_ms;
	x->until_ms = hl__now_ms() + (lease > 0 ? lease : c->conf.watchdog_ms);
	hl__obs_undo(c, lock, owner, HL_EINDOUBT, x->until_ms - hl__now_ms());
	hl__task_background(c, &undo_ops, x);
}

/* One attempt of owner on lock as its own operation: begin, send, record.
 * *acquired and *ttl as attempt(); *reentry (may be NULL) = 1 when the
 * owner already held the lock. A non-reentrant kind refuses an owner that
 * holds it already (HL_EDEADLK). */
static int attempt_op(hl_lock *lock, uint64_t owner_id, const char *owner,
                      int64_t lease, const attempt_opts *ao, const hl_bound *b,
                      int *acquired, int64_t *ttl, int *reentry)
{
	hl_client *c = lock->client;
	hl_op op;
	int64_t sent_ms = 0;
	int dirty = 0;
	int rc;
	tl_ticket = 0;
	tl_first = 0;
	rc = hl__op_begin(&op, c, lock, owner_id, b);
	if (rc != HL_OK)
		return rc;
	if (reentry)
		*reentry = op.count > 0;
	if (op.count > 0 && !is_reentrant(lock->kind)) {
		char label[80];
		hl__op_end(c, &op);
		return hl__fail(
		        HL_EDEADLK,
		        "\"%s\" is a non-reentrant lock and %s holds it "
		        "already",
		        lock_label(lock, label, sizeof(label)), owner);
	}
	rc = attempt(lock, owner, &op, lease, ao, b, acquired, ttl, &dirty,
	             &sent_ms);
	/* A new watchdog hold must still have time left when it is handed
	 * out. Its answer came after the hold's loss deadline (the process
	 * was paused, or the reply took longer than the lease): Redis may
	 * have ended it, and someone else may hold the lock now. Handing it
	 * out would start a critical section on a lock already lost: take it
	 * back and try again instead. (A fixed lease shorter than the round
	 * trip is the caller's choice: that hold is handed out and told lost
	 * by the clock at once.) */
	if (rc == HL_OK && *acquired && op.count == 0 && lease < 0 &&
	    hl__now_ms() >= sent_ms + c->conf.watchdog_ms -
	                            hl__loss_margin(c->conf.watchdog_ms)) {
		*acquired = 0;
		*ttl = 0;
		dirty = 1;
	}
	if (rc == HL_OK && *acquired)
		return hl__op_acquired(c, &op, lease, sent_ms);
	if (dirty) {
		/* The caller does not get the lock, but the acquire may have
		 * taken it (its answer was lost or came too late, or no
		 * replica confirmed it and the undo failed): take it back, so
		 * that nothing stays held that nobody knows of. */
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", hl_error_last());
		take_back(lock, owner_id, owner, &op, lease, rc);
		if (rc == HL_EINTERRUPTED)
			rc = hl__fail(HL_EINTERRUPTED,
			              "waiting for the lock was interrupted "
			              "(an acquire in flight was taken back)");
		else if (rc != HL_OK)
			rc = hl__fail(rc, "%s", msg);
	}
	hl__op_end(c, &op);
	return rc;
}

/* The fair lock's give-up: the caller stops waiting, so it leaves the
 * queue (and wakes the next in line if it was first). Best effort within
 * the command timeout: a waiter left behind leaves by its deadline. */
static void fair_give_up(hl_lock *lock, const char *owner, int64_t wait_ms)
{
	hl_client *c = lock->client;
	script_args a;
	hl_reply *r = NULL;
	memset(&a, 0, sizeof(a));
	arg(&a, lock->name, lock->name_len);
	arg(&a, lock->aux[0], lock->aux_len[0]);
	arg(&a, lock->aux[1], lock->aux_len[1]);
	arg(&a, lock->channel, lock->channel_len);
	arg_str(&a, owner);
	arg_str(&a, num(a.nums[0], wait_ms));
	arg_str(&a, hl__router_publish(c));
	if (hl__eval(c, &r, HL_SCRIPT_FAIR_GIVE_UP, 4, a.n, a.v, a.len,
	             HL_CMD_IDEMPOTENT | HL_CMD_WRITE, NULL, NULL,
	             NULL) == HL_OK)
		hl__reply_free(r);
}

/* A default lock's waiter stops waiting: its client leaves the line unless
 * another of its waiters queues for the name (and if it was first, the
 * next is told). Best effort: a place left behind lapses. */
static void line_give_up(hl_lock *lock)
{
	hl__line_leave(lock->client, lock->name, lock->name_len, lock->aux[0],
	               lock->aux_len[0], lock->aux[1], lock->aux_len[1]);
}

int hl__check_lease(int64_t lease_ms)
{
	if (lease_ms == 0 || lease_ms < -1 || lease_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "lease_ms = %lld: use -1 (watchdog) or 1 to "
		                "2^40 ms",
		                (long long)lease_ms);
	return HL_OK;
}

static int check_times(int64_t wait_ms, int64_t lease_ms)
{
	int rc = hl__check_wait(wait_ms);
	return rc != HL_OK ? rc : hl__check_lease(lease_ms);
}

/* ---- the slow path: a task of the engine -------------------------------- */

/* The spin lock's next pause (Redisson's exponential back-off): *delay
 * grows by the multiplier plus a random 0 to failures ms, up to the
 * maximum. */
static int64_t backoff_next(const hl_lock *lock, int64_t *delay, int failures)
{
	int64_t d = *delay;
	if (d == 0) {
		d = lock->backoff_initial_ms;
	} else {
		d = d * lock->backoff_multiplier +
		    (failures > 0 ? rand() % failures : 0);
		if (d > lock->backoff_max_ms)
			d = lock->backoff_max_ms;
	}
	*delay = d;
	return d;
}

/* The channel of this client's place in lock's line, in *buf (freed by the
 * caller). */
static int line_channel(const hl_lock *lock, char **buf, size_t *out_len)
{
	return hl__line_channel(buf, out_len, lock->client, lock->aux[0],
	                        lock->aux_len[0]);
}

/* The channel a waiter of lock listens on: the kind's; for the fair
 * lock its own (channel:<owner>); for the default lock its client's place
 * (the first in line also hears the kind's: prim/line.c), in *buf
 * (freed by the caller). NULL *out_len 0: none (the spin lock). */
static int wait_channel(const hl_lock *lock, const char *owner, char **buf,
                        size_t *out_len)
{
	size_t olen = strlen(owner);
	*buf = NULL;
	*out_len = 0;
	if (lock->kind == HL_LOCK_SPIN)
		return HL_OK;
	if (in_line(lock->kind))
		return line_channel(lock, buf, out_len);
	*buf = malloc(lock->channel_len + 1 + olen);
	if (!*buf)
		return hl__fail(HL_ENOMEM, "out of memory");
	memcpy(*buf, lock->channel, lock->channel_len);
	*out_len = lock->channel_len;
	if (is_fair(lock->kind)) {
		(*buf)[lock->channel_len] = ':';
		memcpy(*buf + lock->channel_len + 1, owner, olen);
		*out_len += 1 + olen;
	}
	return HL_OK;
}

/* What a wait for the lock needs, copied from the handle: the task must not
 * depend on the user's handle staying alive (Go and Python free theirs as
 * soon as the call returns). The owner is fixed when the wait starts; the
 * copy keeps the handle's owner_id (0: a thread's own), so a hold a thread
 * gets this way still ends with the thread. */
typedef struct lock_ctx {
	hl_lock lock; /* its own name, channel and keys */
	uint64_t owner_id;
	char owner[HL_OWNER_MAX];
	int64_t lease;
	attempt_opts ao;
	char *channel; /* the channel the waiter listens on (NULL: none) */
	size_t channel_len;
	int64_t spin_delay; /* the spin lock's back-off */
	int failures;
	int last_rc; /* of the last attempt */
	/* a _start task counts itself in the client's stats (a blocking call
	 * counts its own): an acquisition it delivers, and a wait when its
	 * first attempt did not take the lock */
	int count_stats, may_wait, attempts, got_first, acquired;
	int64_t started_ms;
	/* A default lock's waiter (line_wait_ops): its place in the line */
	int ops_line;
	hl_line line;
} lock_ctx;

static char *dup_bytes(const char *p, size_t n)
{
	char *d;
	if (!p)
		return NULL;
	d = malloc(n ? n : 1);
	if (d)
		memcpy(d, p, n);
	return d;
}

static void ctx_free(void *arg)
{
	lock_ctx *x = arg;
	if (!x)
		return;
	if (x->count_stats) {
		hl__stat_add(x->lock.client, HL_STAT_ACQUISITIONS,
		             (uint64_t)x->acquired);
		if (x->may_wait && !x->got_first)
			hl__obs_waited(x->lock.client, x->started_ms);
	}
	/* The task is over: complete() frees it under wait_mu. */
	hl__line_fini_locked(&x->line);
	free(x->lock.name);
	free(x->lock.channel);
	free(x->lock.aux[0]);
	free(x->lock.aux[1]);
	free(x->channel);
	free(x);
}

static lock_ctx *ctx_new(const hl_lock *lock, uint64_t owner_id, int64_t lease,
                         const attempt_opts *ao)
{
	lock_ctx *x = calloc(1, sizeof(*x));
	int i;
	if (!x)
		return NULL;
	x->lock = *lock;
	x->lock.name = dup_bytes(lock->name, lock->name_len);
	x->lock.channel = dup_bytes(lock->channel, lock->channel_len);
	for (i = 0; i < 2; i++)
		x->lock.aux[i] = dup_bytes(lock->aux[i], lock->aux_len[i]);
	x->owner_id = owner_id;
	hl__owner_string(x->owner, lock->client, owner_id);
	x->lease = lease;
	x->started_ms = hl__now_ms();
	if (ao)
		x->ao = *ao;
	if (!x->lock.name || (lock->channel && !x->lock.channel) ||
	    (lock->aux[0] && !x->lock.aux[0]) ||
	    (lock->aux[1] && !x->lock.aux[1]) ||
	    wait_channel(&x->lock, x->owner, &x->channel, &x->channel_len) !=
	            HL_OK) {
		ctx_free(x);
		return NULL;
	}
	return x;
}

static int wait_wants(void *arg, const char *msg, size_t len)
{
	return hl__line_wants(&((lock_ctx *)arg)->line, msg, len);
}

static int wait_attempt(void *arg, const hl_bound *b, int *acquired,
                        int64_t *retry_ms)
{
	lock_ctx *x = arg;
	int64_t ttl = -1;
	int rc = attempt_op(&x->lock, x->owner_id, x->owner, x->lease, &x->ao,
	                    b, acquired, &ttl, NULL);
	x->last_rc = rc;
	if (x->ops_line && rc == HL_OK)
		hl__line_note(&x->line, tl_ticket, tl_first, 1);
	if (++x->attempts == 1 && rc == HL_OK && *acquired)
		x->got_first = 1;
	if (rc == HL_OK && *acquired)
		x->acquired = 1;
	/* the holder's TTL: its lease ends by then; the spin lock listens to
	 * nothing and tries again after its back-off */
	if (rc == HL_OK && !*acquired && !x->channel)
		ttl = backoff_next(&x->lock, &x->spin_delay, ++x->failures);
	*retry_ms = ttl;
	return rc;
}

static int release_owner(int *out_released, hl_lock *lock, uint64_t owner_id,
                         uint64_t epoch, int64_t deadline_ms);

static void wait_undo(void *arg, const hl_bound *b)
{
	lock_ctx *x = arg;
	int released = 0;
	release_owner(&released, &x->lock, x->owner_id, 0, b->deadline_ms);
	x->acquired = 0; /* taken back: nobody got it */
}

/* A fair lock's waiter that did not get it leaves the queue, so those
 * behind it need not wait out its deadline; a default lock's leaves the
 * line. */
static void wait_give_up(void *arg, const hl_bound *b)
{
	lock_ctx *x = arg;
	(void)b;
	if (x->last_rc == HL_EDEADLK)
		return;
	if (in_line(x->lock.kind))
		line_give_up(&x->lock);
	else
		fair_give_up(&x->lock, x->owner, x->ao.fair_wait_ms);
}

static const hl_wait_ops lock_wait_ops = {wait_attempt, wait_undo, NULL,
                                          ctx_free, NULL};
static const hl_wait_ops fair_wait_ops = {wait_attempt, wait_undo, wait_give_up,
                                          ctx_free, NULL};
static const hl_wait_ops line_wait_ops = {wait_attempt, wait_undo, wait_give_up,
                                          ctx_free, wait_wants};

/* A wait for lock as owner_id (local: the holds it has already). *spec
 * owns a new context (freed by the engine, even if the start fails). */
static int wait_spec(hl_wait_spec *spec, const hl_lock *lock, uint64_t owner_id,
                     int64_t local, int64_t lease, const attempt_opts *ao)
{
	lock_ctx *x = ctx_new(lock, owner_id, lease, ao);
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	memset(spec, 0, sizeof(*spec));
	spec->ops = is_fair(lock->kind) && local == 0 && ao->enqueue
	                    ? &fair_wait_ops
	            : in_line(lock->kind) && local == 0 && ao->enqueue
	                    ? &line_wait_ops
	                    : &lock_wait_ops;
	/* the caller's attempt just before, if any (HL_WAIT_TRIED) */
	x->ops_line = spec->ops == &line_wait_ops;
	if (x->ops_line) {
		if (hl__line_init(&x->line, lock->client, x->lock.aux[0],
		                  x->lock.aux_len[0], x->lock.channel,
		                  x->lock.channel_len) != HL_OK) {
			ctx_free(x);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
		hl__line_note(&x->line, tl_ticket, tl_first, 1);
	}
	spec->arg = x;
	/* A re-entry never queues: the owner already holds it. Nor does a
	 * fair lock's waiter: each takes its own place in Redis's queue. */
	if (local == 0 && !is_fair(lock->kind)) {
		spec->gate = x->lock.name;
		spec->gate_len = x->lock.name_len;
	}
	spec->channel = x->channel;
	spec->channel_len = x->channel_len;
	return HL_OK;
}

/* The blocking wait after the fast path: a task, and this thread waits for
 * it (woken by its completion, its cancel, or its deadline). With
 * out_task, the task is the caller's instead (executors run it). */
static int slow_acquire(hl_lock *lock, uint64_t owner_id, const char *owner,
                        int64_t local, int64_t lease, const attempt_opts *ao,
                        int64_t deadline, const hl_bound *b, hl_cancel *cancel,
                        int64_t tried_us, int64_t tried_retry_ms,
                        const char *unanswered, int64_t unanswered_since_ms,
                        int *acquired, hl_task **out_task)
{
	hl_wait_spec spec;
	hl_task *t;
	int rc, result = 0;
	int64_t wait_start = hl__now_ms();
	(void)owner;
	if ((rc = wait_spec(&spec, lock, owner_id, local, lease, ao)) != HL_OK)
		return rc;
	spec.deadline_ms = deadline;
	/* begin's first attempt had a shorter bound than the wait's */
	spec.io_deadline_ms = out_task ? hl__io_deadline(lock->client, deadline)
	                               : b->deadline_ms;
	spec.first = HL_WAIT_TRIED;
	spec.tried_us = tried_us;
	spec.tried_retry_ms = tried_retry_ms;
	spec.unanswered = unanswered;
	spec.unanswered_since_ms = unanswered_since_ms;
	spec.interrupt_gen = b->interrupt_gen;
	spec.blocking = out_task == NULL;
	if (out_task) {
		/* the task counts itself in the stats, as a _start task does:
		 * a wait (the first attempt, here, did not take the lock) and
		 * the acquisition it delivers */
		lock_ctx *x = spec.arg;
		x->count_stats = 1;
		x->may_wait = 1;
		x->attempts = 1;
	}
	if ((rc = hl__task_wait_start(&t, lock->client, &spec)) != HL_OK)
		return rc;
	if (out_task) {
		*out_task = t;
		return HL_OK;
	}
	rc = hl__task_finish_blocking(t, cancel, &result);
	if (rc == HL_OK)
		*acquired = result;
	hl__obs_waited(lock->client, wait_start);
	return rc;
}

/* ---- handoff across processes ------------------------------------------
 * An unlock message takes a pub/sub delivery and a round trip to turn into
 * another process's acquisition; a thread here that releases and at once
 * acquires again would win every time and starve the other processes (the
 * in-process gate only orders this process's threads). So when the unlock
 * reached subscribers other than our own, this client holds back its next
 * acquire of that name for about two of the round trips the release took
 * (at most 2 ms): long enough for a woken waiter elsewhere to take it. */
#define HL_HANDOFF_MAX_US 2000

static struct hl_handoff *handoff_slot(hl_client *c, uint64_t hash)
{
	return &c->handoff[hash % (sizeof(c->handoff) / sizeof(c->handoff[0]))];
}

/* Whether this client's subscription to lock's channel may be on the
 * server now: confirmed, or being made or undone. */
static int subscribed(hl_client *c, const hl_lock *lock)
{
	hl_sub *s;
	int on;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, lock->channel, lock->channel_len);
	on = s && s->state != HL_SUB_NONE;
	pthread_mutex_unlock(&c->wait_mu);
	return on;
}

/* The lock is free: wake our own waiters, note whether others listen.
 * receivers: of the unlock message; ticket: the one the release announced
 * (0: none, the unlock message only); ours_at_send: subscribed() when the
 * release went out. */
static void freed(hl_client *c, const hl_lock *lock, int64_t receivers,
                  int64_t ticket, int64_t rtt_us, int ours_at_send)
{
	char *place = NULL;
	size_t place_len = 0;
	uint64_t hash = hl__hash(lock->name, lock->name_len);
	struct hl_handoff *slot;
	hl_sub *s;
	int ours;
	if (ticket != 0 && in_line(lock->kind) &&
	    line_channel(lock, &place, &place_len) != HL_OK)
		place = NULL; /* our waiter hears it from Redis instead */
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, lock->channel, lock->channel_len);
	/* Our own subscription counts among the receivers if the server
	 * may have had it when the message went out: then, or now (the
	 * confirmation of an UNSUBSCRIBE that Redis ran after the message
	 * can arrive before the release's reply). */
	ours = ours_at_send || (s && s->state != HL_SUB_NONE);
	/* Our own waiters hear what others do, without the round trip: the
	 * unlock message, and the ticket told to the first in line, if that
	 * is this client. */
	if (s)
		hl__pubsub_message(s, "0", 1);
	if (place)
		hl__line_tell_local_locked(c, place, place_len, ticket);
	slot = handoff_slot(c, hash);
	/* A waiter of the line has the lock kept for it; else, if others
	 * listen (Redisson's waiters), let them have a go first. */
	if (ticket == 0 && receivers > ours) {
		int64_t hold = 2 * rtt_us + 50;
		slot->hash = hash;
		slot->until_us =
		        hl__now_us() +
		        (hold < HL_HANDOFF_MAX_US ? hold : HL_HANDOFF_MAX_US);
	} else if (slot->hash == hash) {
		slot->until_us = 0;
	}
	pthread_mutex_unlock(&c->wait_mu);
	free(place);
}

/* Microseconds this client should hold back before acquiring name (0:
 * none). Caller holds wait_mu. */
static int64_t handoff_hold_back(hl_client *c, const hl_lock *lock)
{
	uint64_t hash = hl__hash(lock->name, lock->name_len);
	struct hl_handoff *slot = handoff_slot(c, hash);
	int64_t left;
	if (slot->hash != hash || slot->until_us == 0)
		return 0;
	left = slot->until_us - hl__now_us();
	if (left <= 0) {
		slot->until_us = 0;
		return 0;
	}
	return left;
}

int hl_lock_try_acquire(int *out_acquired, hl_lock *lock, int64_t wait_ms,
                        int64_t lease_ms, hl_cancel *cancel)
{
	return hl__lock_try_acquire_as(out_acquired, lock,
	                               lock ? hl__effective_owner(lock) : 0,
	                               wait_ms, lease_ms, cancel);
}

static int try_acquire_as(int *out_acquired, hl_lock *lock, uint64_t owner_id,
                          int64_t wait_ms, int64_t lease_ms, hl_cancel *cancel,
                          hl_task **out_task, int *out_fresh,
                          int64_t *out_fresh_deadline);

int hl_lock_try_acquire_begin(hl_task **out_task, int *out_acquired,
                              hl_lock *lock, int64_t wait_ms, int64_t lease_ms)
{
	int rc, fresh = 0;
	int64_t deadline = -1;
	if (!out_task)
		return hl__fail(HL_EINVAL, "out_task is NULL");
	*out_task = NULL;
	rc = try_acquire_as(out_acquired, lock,
	                    lock ? hl__effective_owner(lock) : 0, wait_ms,
	                    lease_ms, NULL, out_task, &fresh, &deadline);
	if (rc == HL_OK && fresh) {
		/* Redis did not answer that attempt: the wait starts afresh
		 * as a task (what the attempt may have left is being taken
		 * back meanwhile), as a single attempt and then
		 * hl_lock_try_acquire_start() would do */
		int64_t left = -1;
		if (deadline >= 0) {
			left = deadline - hl__now_ms();
			if (left < 1)
				left = 1;
		}
		rc = hl_lock_try_acquire_start(out_task, lock, left, lease_ms);
	}
	return rc;
}

int hl__lock_try_acquire_as(int *out_acquired, hl_lock *lock, uint64_t owner_id,
                            int64_t wait_ms, int64_t lease_ms,
                            hl_cancel *cancel)
{
	return try_acquire_as(out_acquired, lock, owner_id, wait_ms, lease_ms,
	                      cancel, NULL, NULL, NULL);
}

/* As hl__lock_try_acquire_as; out_task non-NULL (begin): a wait after the
 * first attempt is a task given to the caller, and a first attempt
 * Redis did not answer sets *out_fresh, and *out_fresh_deadline to the
 * wait's deadline (-1: none), for the caller to start the wait afresh as a
 * task of its own. */
static int try_acquire_as(int *out_acquired, hl_lock *lock, uint64_t owner_id,
                          int64_t wait_ms, int64_t lease_ms, hl_cancel *cancel,
                          hl_task **out_task, int *out_fresh,
                          int64_t *out_fresh_deadline)
{
	hl_client *c;
	char owner[HL_OWNER_MAX];
	int64_t local, ttl = 0, deadline, io_deadline, grace;
	int rc, acquired = 0, queue_busy = 0, waited = 0;
	attempt_opts ao;
	hl_bound b;

	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if ((rc = check_times(wait_ms, lease_ms)) != HL_OK)
		return rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	if (hl_cancel_is_triggered(cancel)) {
		hl__client_leave(c);
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	}
	deadline = hl__deadline(wait_ms);
	/* Network I/O ends with the wait, but one attempt gets a grace. */
	grace = c->conf.command_timeout_ms < HL_GRACE_MS
	                ? c->conf.command_timeout_ms
	                : HL_GRACE_MS;
	io_deadline = deadline;
	if (deadline >= 0 && deadline < hl__now_ms() + grace)
		io_deadline = hl__now_ms() + grace;
	/* A caller that waits on a task (begin) gets back control within the
	 * grace: an unanswered first attempt goes on in the task. */
	if (out_task && wait_ms != 0 &&
	    (deadline < 0 || deadline > hl__now_ms() + grace))
		io_deadline = hl__now_ms() + grace;
	hl__bound_init(&b, c, io_deadline, cancel, 1);
	hl__owner_string(owner, c, owner_id);
	if (lock->kind == HL_LOCK_WRITE) {
		/* A reader cannot take the write lock: it would wait for its
		 * own read holds to end. */
		hl_lock read = *lock;
		read.kind = HL_LOCK_READ;
		if (hl__hold_peek(c, &read, owner_id, NULL) > 0) {
			char label[80];
			hl__client_leave(c);
			return hl__fail(HL_EDEADLK,
			                "\"%s\": %s holds the read lock, and "
			                "the write lock waits for every "
			                "reader; release the read holds first",
			                lock_label(lock, label, sizeof(label)),
			                owner);
		}
	}
	/* The fair lock's queue deadline: the caller's wait, or the
	 * stale-waiter timeout; a single attempt does not join the queue. */
	ao.fair_wait_ms = wait_ms > 0 ? wait_ms : c->conf.fair_wait_ms;
	ao.enqueue = wait_ms != 0;
	tl_ticket = 0;
	tl_first = 0;
	local = hl__hold_peek(c, lock, owner_id, NULL);
	if (local == 0 && !is_fair(lock->kind)) {
		/* Someone of this process already waits: queue behind. A
		 * name this client just handed to another process: hold back
		 * briefly. Even a single attempt defers to both, so that an
		 * owner that releases and at once tries again cannot barge
		 * ahead of those waiting. */
		int64_t hold_back = 0;
		pthread_mutex_lock(&c->wait_mu);
		queue_busy = hl__map_get(&c->gates, lock->name,
		                         lock->name_len) != NULL;
		if (!queue_busy)
			hold_back = handoff_hold_back(c, lock);
		pthread_mutex_unlock(&c->wait_mu);
		if (wait_ms == 0 && (queue_busy || hold_back > 0)) {
			*out_acquired = 0;
			hl__client_leave(c);
			return HL_OK;
		}
		if (hold_back > 0) {
			struct timespec ts;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)hold_back * 1000;
			nanosleep(&ts, NULL);
		}
	}
	if (!queue_busy) {
		int64_t tried_us = wait_ms != 0 ? hl__now_us() : 0;
		int64_t tried_ms = hl__now_ms();
		char outage[320];
		outage[0] = '\0';
		hl__tl_heard = 0;
		rc = attempt_op(lock, owner_id, owner, lease_ms, &ao, &b,
		                &acquired, &ttl, NULL);
		/* a wait outlasts an outage too (see service/task.c), and
		 * begin's task an attempt its grace cut short */
		if ((rc == HL_EIO || rc == HL_ECONNECT ||
		     (rc == HL_ETIMEDOUT && out_task)) &&
		    wait_ms != 0 && hl__remaining(deadline) != 0) {
			snprintf(outage, sizeof(outage), "%s", hl_error_last());
			rc = HL_OK;
			tried_us = 0; /* no answer: attempt again */
		}
		if (rc == HL_ETIMEDOUT && !hl__tl_heard)
			/* the whole wait went by in a round trip Redis never
			 * answered: an outage (or a silent server), not a
			 * holder */
			rc = hl__outage_fail(
			        c, tried_ms,
			        hl__timeout_cause(hl_error_last()));
		if (rc == HL_OK && !acquired && out_fresh && outage[0]) {
			/* begin: the caller starts the wait afresh */
			waited = 1;
			*out_fresh = 1;
			*out_fresh_deadline = deadline;
		} else if (rc == HL_OK && !acquired && wait_ms != 0) {
			waited = 1;
			rc = slow_acquire(lock, owner_id, owner, local,
			                  lease_ms, &ao, deadline, &b, cancel,
			                  tried_us, ttl,
			                  outage[0] ? outage : NULL, tried_ms,
			                  &acquired, out_task);
		}
	} else {
		waited = 1;
		rc = slow_acquire(lock, owner_id, owner, local, lease_ms, &ao,
		                  deadline, &b, cancel, 0, -1, NULL, 0,
		                  &acquired, out_task);
	}
	/* A fair lock's waiter that did not get it leaves the queue, so
	 * those behind it need not wait out its deadline (a wait's task did
	 * that itself). */
	if (is_fair(lock->kind) && !acquired && local == 0 && wait_ms != 0 &&
	    !waited && rc != HL_EDEADLK && rc != HL_ECLOSED)
		fair_give_up(lock, owner, ao.fair_wait_ms);
	/* as the default lock's waiter leaves the line */
	if (in_line(lock->kind) && !acquired && local == 0 && wait_ms != 0 &&
	    !waited && rc != HL_EDEADLK && rc != HL_ECLOSED && tl_ticket != 0)
		line_give_up(lock);
	/* The wait ended inside a round trip that Redis did not answer in
	 * time: not acquired, as far as anyone can tell (an acquire that
	 * lands later is not this caller's: it is never renewed, and the
	 * owner's next acquire or release folds it away). */
	if (rc == HL_ETIMEDOUT) {
		rc = HL_OK;
		acquired = 0;
	}
	if (rc == HL_OK)
		*out_acquired = acquired;
	hl__stat_add(c, HL_STAT_ACQUISITIONS, rc == HL_OK && acquired);
	hl__client_leave(c);
	return rc;
}

int hl_lock_acquire(hl_lock *lock, int64_t lease_ms, hl_cancel *cancel)
{
	int acquired = 0;
	int rc = hl_lock_try_acquire(&acquired, lock, -1, lease_ms, cancel);
	if (rc == HL_OK && !acquired)
		rc = hl__fail(HL_ETIMEDOUT, "lock not acquired");
	return rc;
}

/* A write whose WAIT confirms everything this client wrote on lock's
 * master before it: SET hilock_sync:{name} with a short expiry. WAIT
 * counts the replicas that have the connection's last write, and a
 * replica has the replication stream in order; a resent script that
 * changed nothing writes nothing, and its WAIT would only cover whatever
 * its connection wrote last. *replicated as for hl__command_ex. */
static int sync_write(hl_lock *lock, const hl_bound *b, int *replicated)
{
	hl_client *c = lock->client;
	const char *argv[5];
	size_t lens[5], klen;
	hl_reply *r = NULL;
	char *key = hl__derive_name("hilock_sync:", "", lock->name,
	                            lock->name_len, 0, &klen);
	int rc;
	if (!key)
		return hl__fail(HL_ENOMEM, "out of memory");
	argv[0] = "SET";
	argv[1] = key;
	argv[2] = "1";
	argv[3] = "PX";
	argv[4] = "1000";
	lens[0] = 3;
	lens[1] = klen;
	lens[2] = 1;
	lens[3] = 2;
	lens[4] = 4;
	rc = hl__command_ex(c, &r, 5, argv, lens,
	                    HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, b,
	                    replicated);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = hl__reply_error(r, "confirming a release");
	hl__reply_free(r);
	free(key);
	return rc;
}

/* A release of owner (as part of op) ran on the master, but no replica
 * confirmed it. Resend it within the retry policy and b: it sets the
 * count, so on a master that has it already it changes nothing, and on a
 * new master that lacks it (a failover) it releases there; after each, a
 * sync write's WAIT says whether a replica has it now (check_first: once
 * before any resend too). 1 when confirmed (or no replica is connected any
 * more), 0 if not; *resends counts them. */
static int confirm_release(hl_lock *lock, const char *owner, const hl_op *op,
                           const hl_bound *b, int check_first, int *resends)
{
	hl_client *c = lock->client;
	int tries, replicated = -1;
	if (check_first && sync_write(lock, b, &replicated) == HL_OK &&
	    replicated != 0)
		return 1;
	for (tries = 1; tries <= c->conf.retry_attempts; tries++) {
		hl_reply *r = NULL;
		replicated = -1;
		if (hl__pause(c,
		              hl__jitter_delay(c->conf.retry_delay_ms, tries),
		              b) != HL_OK)
			return 0;
		(*resends)++;
		/* the first run ended the owner's holds: its count was 1 */
		if (release_script(lock, owner, op->lease_ms, 1,
		                   HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, b,
		                   NULL, &r) != HL_OK)
			return 0;
		/* whatever it answered, the owner's holds are over there */
		hl__reply_free(r);
		if (sync_write(lock, b, &replicated) != HL_OK)
			return 0;
		if (replicated != 0)
			return 1;
	}
	return 0;
}

/* Release one hold of owner_id on lock, within deadline_ms (-1: the
 * retry policy and the hold's lease alone); epoch: only if the hold is that
 * one (0: any, see hl__lock_release_hold). */
static int release_owner(int *out_released, hl_lock *lock, uint64_t owner_id,
                         uint64_t epoch, int64_t deadline_ms)
{
	hl_client *c;
	char owner[HL_OWNER_MAX], label[80];
	hl_reply *r = NULL;
	enum hl_sent sent = HL_SENT_NOTHING;
	int64_t receivers = 0, ticket = 0, t0, rtt_us, result = -2;
	int rc, final, replicated = -1, ours, lost_reply = 0;
	hl_bound b;
	hl_op op;

	c = lock->client;
	lock_label(lock, label, sizeof(label));
	hl__owner_string(owner, c, owner_id);
	/* a release is not a wait */
	hl__bound_init(&b, c, deadline_ms, NULL, 0);
	if ((rc = hl__op_begin(&op, c, lock, owner_id, &b)) != HL_OK)
		goto out;
	if (epoch != 0 && op.epoch != 0 && op.epoch != epoch) {
		/* The hold this release is for ended (lost, or released), and
		 * the owner took the lock again since: that newer hold is not
		 * this release's to give back. */
		hl__op_end(c, &op);
		rc = hl__fail(
		        HL_ELOST,
		        "\"%s\" was lost while held: the hold this "
		        "release was for ended, and %s has taken it again "
		        "since (a newer hold, left as it is)",
		        label, owner);
		goto out;
	}
	if (op.lost) {
		/* Known already: no round trip. */
		hl__op_gone(c, &op);
		rc = hl__fail(HL_ELOST,
		              "\"%s\" was lost while held: the watchdog found "
		              "it gone or taken, or could not renew it before "
		              "its lease ran out, or its fixed lease ended",
		              label);
		goto out;
	}
	final = op.count <= 1;
	if (final && op.known) {
		/* Whatever the answer, this hold is not renewed any more; if
		 * Redis does not answer, retrying past the end of its lease
		 * would be pointless. */
		int64_t ends = hl__op_hold_ends(c, &op);
		hl__op_stop_renewal(c, &op);
		if (b.deadline_ms < 0 || ends < b.deadline_ms)
			b.deadline_ms = ends;
	}
	ours = !is_fair(lock->kind) && subscribed(c, lock);
	t0 = hl__now_us();
	/* It sets the count, so resending it after a lost reply is safe
	 * (unless the count is unknown: then it takes one off). Given
	 * replicated, it is WAITed for on a master with replicas. */
	rc = release_script(lock, owner, op.lease_ms, op.count,
	                    HL_CMD_WRITE |
	                            (op.count > 0 ? HL_CMD_IDEMPOTENT : 0),
	                    &sent, &b, &replicated, &r);
	rtt_us = hl__now_us() - t0;
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_INTEGER) {
			result = hl__reply_int(r);
		} else if (hl__reply_type(r) == HL_REPLY_ARRAY &&
		           hl__reply_len(r) >= 2 &&
		           hl__reply_type(hl__reply_at(r, 1)) ==
		                   HL_REPLY_INTEGER) {
			result = 1;
			receivers = hl__reply_int(hl__reply_at(r, 1));
			if (hl__reply_len(r) >= 3)
				ticket = hl__reply_int(hl__reply_at(r, 2));
		} else if (hl__reply_type(r) == HL_REPLY_ARRAY &&
		           hl__reply_len(r) == 1) {
			result = 2; /* this owner's holds are over; others
			               hold it still (read holds) */
		} else if (hl__reply_type(r) == HL_REPLY_ERROR) {
			rc = hl__fail(HL_EREDIS, "releasing \"%s\": %.300s",
			              label, hl__reply_str(r));
		} else {
			rc = hl__fail(HL_EPROTOCOL,
			              "releasing \"%s\": unexpected reply",
			              label);
		}
		hl__reply_free(r);
	}
	if (result == -1 && sent == HL_SENT_MAYBE && op.known) {
		/* An earlier attempt whose reply was lost did it: released,
		 * not lost. The WAIT that followed the copy that answered
		 * covered nothing it wrote: whether a replica has the release
		 * is not known yet. */
		result = 1;
		receivers = 0;
		if (replicated > 0) {
			replicated = 0;
			lost_reply = 1;
		}
	}
	if ((result == 1 || result == 2) && replicated == 0) {
		/* The owner's holds are over on the master, but no replica
		 * confirmed it: a failover now would bring the hold back,
		 * held by an owner that believes it released it. */
		int resends = 0;
		int64_t left =
		        op.known ? hl__op_hold_ends(c, &op) - hl__now_ms() : 0;
		if (!confirm_release(lock, owner, &op, &b, lost_reply,
		                     &resends)) {
			char ends[64];
			if (op.known)
				snprintf(ends, sizeof(ends),
				         "within %lld ms at the latest",
				         (long long)(left > 0 ? left : 0));
			else
				snprintf(ends, sizeof(ends), "by its lease");
			hl__op_gone(c, &op);
			if (result == 1 && !is_fair(lock->kind))
				freed(c, lock, receivers, ticket, rtt_us, ours);
			rc = hl__fail(
			        HL_EINDOUBT,
			        "releasing \"%s\": it ran on the master, but "
			        "no "
			        "replica confirmed it within %lld ms (WAIT), "
			        "resent %d %s; should the master fail before a "
			        "replica has it, the lock may come back held "
			        "by %s until its lease ends (%s)",
			        label, (long long)c->conf.wait_timeout_ms,
			        resends, resends == 1 ? "time" : "times", owner,
			        ends);
			goto out;
		}
	}
	if (result == 1 || result == 2) {
		hl__op_gone(c, &op);
		/* The fair lock wakes its next waiter itself, on that
		 * waiter's own channel. */
		if (result == 1 && !is_fair(lock->kind))
			freed(c, lock, receivers, ticket, rtt_us, ours);
		if (out_released)
			*out_released = 1;
	} else if (result == 0) {
		op.lease_reset = 1; /* the script set the lease again */
		hl__op_released_one(c, &op);
		if (out_released)
			*out_released = 0;
	} else if (result == -1) {
		hl__op_gone(c, &op);
		if (op.known)
			hl__obs_lost_at_release(c, lock, owner);
		if (op.known)
			rc = hl__fail(
			        HL_ELOST,
			        "\"%s\" was lost while held: Redis no "
			        "longer had it for %s (its lease ran out, "
			        "Redis restarted or lost it, or it was "
			        "force-unlocked)",
			        label, owner);
		else
			rc = hl__fail(HL_ENOTHELD, "\"%s\" is not held by %s",
			              label, owner);
	} else if (!final) {
		/* The next acquire or release of this owner sets the count
		 * Redis has, whatever became of this one. */
		hl__op_released_one(c, &op);
		if (rc == HL_EIO || rc == HL_ETIMEDOUT) {
			rc = HL_OK;
			if (out_released)
				*out_released = 0;
		}
	} else if (!op.known) {
		hl__op_gone(c, &op);
	} else {
		int64_t left = hl__op_hold_ends(c, &op) - hl__now_ms();
		hl__op_gone(c, &op);
		if (rc != HL_ECLOSED)
			rc = hl__fail_wrap(HL_EINDOUBT,
			                   "releasing \"%s\" was not confirmed "
			                   "(no longer renewed, Redis drops it "
			                   "within %lld ms at the latest)",
			                   label,
			                   (long long)(left > 0 ? left : 0));
	}
out:
	return rc;
}

int hl__lock_release_as(int *out_released, hl_lock *lock, uint64_t owner_id,
                        int64_t deadline_ms)
{
	return hl__lock_release_hold(out_released, lock, owner_id, 0,
	                             deadline_ms);
}

int hl__lock_release_hold(int *out_released, hl_lock *lock, uint64_t owner_id,
                          uint64_t epoch, int64_t deadline_ms)
{
	int rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	rc = release_owner(out_released, lock, owner_id, epoch, deadline_ms);
	hl__stat_add(lock->client, HL_STAT_RELEASES, rc == HL_OK);
	hl__client_leave(lock->client);
	return rc;
}

int hl_lock_release(int *out_released, hl_lock *lock)
{
	if (!lock)
		return lock_enter(lock);
	return hl__lock_release_as(out_released, lock,
	                           hl__effective_owner(lock), -1);
}

/* ---- the non-blocking forms --------------------------------------------- */

int hl_lock_try_acquire_start(hl_task **out, hl_lock *lock, int64_t wait_ms,
                              int64_t lease_ms)
{
	return hl__lock_try_acquire_start_as(
	        out, lock, lock ? hl__effective_owner(lock) : 0, wait_ms,
	        lease_ms, NULL);
}

int hl__lock_try_acquire_start_as(hl_task **out, hl_lock *lock,
                                  uint64_t owner_id, int64_t wait_ms,
                                  int64_t lease_ms, struct hl_task *parent)
{
	hl_client *c;
	hl_wait_spec spec;
	attempt_opts ao;
	int64_t local, hold_back = 0, grace;
	int rc;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = check_times(wait_ms, lease_ms)) != HL_OK)
		return rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	if (lock->kind == HL_LOCK_WRITE) {
		/* as hl_lock_try_acquire: a reader cannot take the write
		 * lock */
		hl_lock read = *lock;
		read.kind = HL_LOCK_READ;
		if (hl__hold_peek(c, &read, owner_id, NULL) > 0) {
			char label[80], owner[HL_OWNER_MAX];
			hl__owner_string(owner, c, owner_id);
			hl__client_leave(c);
			return hl__fail(HL_EDEADLK,
			                "\"%s\": %s holds the read lock, and "
			                "the write lock waits for every "
			                "reader; release the read holds first",
			                lock_label(lock, label, sizeof(label)),
			                owner);
		}
	}
	/* as hl_lock_try_acquire: the fair lock's queue deadline, and a
	 * single attempt does not join its queue */
	ao.fair_wait_ms = wait_ms > 0 ? wait_ms : c->conf.fair_wait_ms;
	ao.enqueue = wait_ms != 0;
	tl_ticket = 0;
	tl_first = 0;
	local = hl__hold_peek(c, lock, owner_id, NULL);
	if (local == 0 && !is_fair(lock->kind)) {
		/* a handoff holds the first attempt back (the engine queues it
		 * behind local waiters) */
		pthread_mutex_lock(&c->wait_mu);
		if (!hl__gate_busy(c, lock->name, lock->name_len))
			hold_back = handoff_hold_back(c, lock);
		pthread_mutex_unlock(&c->wait_mu);
	}
	if ((rc = wait_spec(&spec, lock, owner_id, local, lease_ms, &ao)) !=
	    HL_OK) {
		hl__client_leave(c);
		return rc;
	}
	spec.deadline_ms = hl__deadline(wait_ms);
	/* network I/O ends with the wait, but one attempt gets a grace */
	grace = c->conf.command_timeout_ms < HL_GRACE_MS
	                ? c->conf.command_timeout_ms
	                : HL_GRACE_MS;
	spec.io_deadline_ms = spec.deadline_ms;
	if (spec.deadline_ms >= 0 && spec.deadline_ms < hl__now_ms() + grace)
		spec.io_deadline_ms = hl__now_ms() + grace;
	spec.once = wait_ms == 0;
	spec.first = HL_WAIT_FRESH;
	((lock_ctx *)spec.arg)->count_stats = 1;
	((lock_ctx *)spec.arg)->may_wait = wait_ms != 0;
	spec.hold_back_us = hold_back;
	spec.interrupt_gen = atomic_load(&c->interrupt_gen);
	spec.parent = parent;
	rc = hl__task_wait_start(out, c, &spec);
	hl__client_leave(c);
	return rc;
}

static int release_run(void *arg, const hl_bound *b, int *result)
{
	lock_ctx *x = arg;
	int rc;
	(void)b;
	rc = release_owner(result, &x->lock, x->owner_id, 0, -1);
	hl__stat_add(x->lock.client, HL_STAT_RELEASES, rc == HL_OK);
	return rc;
}

static const hl_call_ops lock_release_ops = {release_run, ctx_free, NULL};

int hl_lock_release_start(hl_task **out, hl_lock *lock)
{
	lock_ctx *x;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	x = ctx_new(lock, hl__effective_owner(lock), -1, NULL);
	rc = x ? hl__task_call_start(out, lock->client, &lock_release_ops, x)
	       : hl__fail(HL_ENOMEM, "out of memory");
	hl__client_leave(lock->client);
	return rc;
}

int hl_lock_force_unlock(int *out_existed, hl_lock *lock)
{
	hl_client *c;
	hl_reply *r = NULL;
	char label[80];
	enum hl_script_id id = HL_SCRIPT_FORCE_UNLOCK;
	script_args a;
	int rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	memset(&a, 0, sizeof(a));
	arg(&a, lock->name, lock->name_len);
	if (is_fair(lock->kind)) {
		id = HL_SCRIPT_FAIR_FORCE_UNLOCK;
		arg(&a, lock->aux[0], lock->aux_len[0]);
		arg(&a, lock->aux[1], lock->aux_len[1]);
	}
	arg(&a, lock->channel, lock->channel_len);
	a.nkeys = a.n;
	if (is_rw(lock->kind)) {
		/* only the half's own mode is deleted */
		id = HL_SCRIPT_RW_FORCE_UNLOCK;
		arg_str(&a, lock->kind == HL_LOCK_READ ? "read" : "write");
		arg_str(&a, lock->kind == HL_LOCK_READ ? "0" : "1");
	} else {
		arg_str(&a, lock->kind == HL_LOCK_SPIN ? "" : "0");
		if (is_fair(lock->kind))
			arg_str(&a, num(a.nums[0], wall_ms()));
	}
	arg_str(&a, hl__router_publish(c));
	rc = hl__eval(c, &r, id, a.nkeys, a.n, a.v, a.len, HL_CMD_WRITE, NULL,
	              NULL, NULL);
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_INTEGER) {
			if (out_existed)
				*out_existed = hl__reply_int(r) == 1;
			/* The holds this client had of it are over (a
			 * read-write half in the other mode left it alone). */
			if (hl__reply_int(r) == 1 || !is_rw(lock->kind))
				hl__holds_force_unlocked(c, lock);
			if (hl__reply_int(r) == 1 && !is_fair(lock->kind))
				hl__pubsub_notify_local(c, lock->channel,
				                        lock->channel_len);
		} else {
			rc = hl__fail(hl__reply_type(r) == HL_REPLY_ERROR
			                      ? HL_EREDIS
			                      : HL_EPROTOCOL,
			              "force-unlocking \"%s\": %.300s",
			              lock_label(lock, label, sizeof(label)),
			              hl__reply_type(r) == HL_REPLY_ERROR
			                      ? hl__reply_str(r)
			                      : "unexpected reply");
		}
		hl__reply_free(r);
	}
	hl__client_leave(c);
	return rc;
}

/* A read-only query: one idempotent command, an integer (or nil) back. */
static int query(hl_lock *lock, const char *cmd, int with_owner, int64_t *out,
                 int nil_value)
{
	hl_client *c;
	char owner[HL_FIELD_MAX], label[80];
	const char *argv[3];
	size_t lens[3];
	hl_reply *r = NULL;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	argv[0] = cmd;
	lens[0] = strlen(cmd);
	argv[1] = lock->name;
	lens[1] = lock->name_len;
	if (with_owner) {
		char o[HL_OWNER_MAX];
		hl__owner_string(o, c, hl__effective_owner(lock));
		argv[2] = owner;
		lens[2] = hl__lock_field(owner, lock, o);
	}
	/* As Redisson: EXISTS and PTTL may be read on a replica (read_from),
	 * the owner's own state is read on the master. */
	rc = hl__command(c, &r, with_owner ? 3 : 2, argv, lens,
	                 HL_CMD_IDEMPOTENT | (with_owner ? 0 : HL_CMD_READ),
	                 NULL, NULL);
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_INTEGER)
			*out = hl__reply_int(r);
		else if (hl__reply_type(r) == HL_REPLY_NIL)
			*out = nil_value;
		else if (hl__reply_type(r) == HL_REPLY_STRING)
			*out = strtoll(hl__reply_str(r), NULL, 10);
		else
			rc = hl__fail(hl__reply_type(r) == HL_REPLY_ERROR
			                      ? HL_EREDIS
			                      : HL_EPROTOCOL,
			              "%s \"%s\": %.300s", cmd,
			              lock_label(lock, label, sizeof(label)),
			              hl__reply_type(r) == HL_REPLY_ERROR
			                      ? hl__reply_str(r)
			                      : "unexpected reply");
		hl__reply_free(r);
	}
	hl__client_leave(c);
	return rc;
}

/* A read-write half is locked in its own mode (PROTOCOL 4). */
static int rw_is_locked(hl_lock *lock, int64_t *out)
{
	hl_client *c;
	hl_reply *r = NULL;
	script_args a;
	int rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	memset(&a, 0, sizeof(a));
	arg(&a, lock->name, lock->name_len);
	arg_str(&a, lock->kind == HL_LOCK_READ ? "read" : "write");
	rc = hl__eval(c, &r, HL_SCRIPT_RW_IS_LOCKED, 1, a.n, a.v, a.len,
	              HL_CMD_IDEMPOTENT, NULL, NULL, NULL);
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_INTEGER)
			*out = hl__reply_int(r);
		else
			rc = hl__reply_error(r, "is_locked");
		hl__reply_free(r);
	}
	hl__client_leave(c);
	return rc;
}

int hl_lock_is_locked(int *out, hl_lock *lock)
{
	int64_t v = 0;
	int rc = !out                ? hl__fail(HL_EINVAL, "out is NULL")
	         : !lock             ? hl__fail(HL_EINVAL, "lock is NULL")
	         : is_rw(lock->kind) ? rw_is_locked(lock, &v)
	                             : query(lock, "EXISTS", 0, &v, 0);
	if (rc == HL_OK)
		*out = v != 0;
	return rc;
}

int hl_lock_is_held(int *out, hl_lock *lock)
{
	int64_t v = 0;
	int rc = out ? query(lock, "HEXISTS", 1, &v, 0)
	             : hl__fail(HL_EINVAL, "out is NULL");
	if (rc == HL_OK)
		*out = v != 0;
	return rc;
}

int hl_lock_hold_count(int64_t *out, hl_lock *lock)
{
	return query(lock, "HGET", 1, out, 0);
}

int hl_lock_ttl(int64_t *out, hl_lock *lock)
{
	return query(lock, "PTTL", 0, out, -2);
}

/* ---- kind-specific calls ------------------------------------------------- */

static int want_kind(const hl_lock *lock, int kind, const char *what)
{
	char label[80];
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	if (lock->kind != kind)
		return hl__fail(HL_EINVAL,
		                "\"%s\" is a %s lock; %s belongs to %s locks",
		                lock_label(lock, label, sizeof(label)),
		                hl_lock_kind_name(lock->kind), what,
		                hl_lock_kind_name(kind));
	return HL_OK;
}

int hl_lock_token(int64_t *out, hl_lock *lock)
{
	char label[80];
	int64_t token = 0;
	int rc, lost = 0;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = want_kind(lock, HL_LOCK_FENCED, "a token")) != HL_OK)
		return rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	if (hl__hold_peek(lock->client, lock, hl__effective_owner(lock),
	                  &token) > 0) {
		*out = token;
	} else {
		hl__client_leave(lock->client);
		lock_label(lock, label, sizeof(label));
		if (hl_lock_is_lost(&lost, lock) == HL_OK && lost)
			return hl__fail(HL_ELOST,
			                "\"%s\" was lost while held: its token "
			                "no longer fences anything",
			                label);
		return hl__fail(HL_ENOTHELD,
		                "\"%s\" is not held by this owner: no token",
		                label);
	}
	hl__client_leave(lock->client);
	return HL_OK;
}

int hl_lock_last_token(int64_t *out, hl_lock *lock)
{
	hl_client *c;
	hl_reply *r = NULL;
	const char *argv[2];
	size_t lens[2];
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = want_kind(lock, HL_LOCK_FENCED, "a token")) != HL_OK)
		return rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	argv[0] = "GET";
	lens[0] = 3;
	argv[1] = lock->aux[0];
	lens[1] = lock->aux_len[0];
	rc = hl__command(c, &r, 2, argv, lens, HL_CMD_IDEMPOTENT, NULL, NULL);
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_NIL)
			*out = 0;
		else if (hl__reply_type(r) == HL_REPLY_STRING)
			*out = strtoll(hl__reply_str(r), NULL, 10);
		else
			rc = hl__reply_error(r, "reading the fencing token");
		hl__reply_free(r);
	}
	hl__client_leave(c);
	return rc;
}

int hl_lock_set_backoff(hl_lock *lock, int64_t initial_ms, int64_t max_ms,
                        int multiplier)
{
	int rc;
	if ((rc = want_kind(lock, HL_LOCK_SPIN, "a back-off")) != HL_OK)
		return rc;
	if (initial_ms < 1 || max_ms < initial_ms || max_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "back-off %lld to %lld ms: use 1 <= initial <= "
		                "max <= 2^40",
		                (long long)initial_ms, (long long)max_ms);
	if (multiplier < 1 || multiplier > 1000)
		return hl__fail(HL_EINVAL,
		                "back-off multiplier %d: use 1 to 1000",
		                multiplier);
	lock->backoff_initial_ms = initial_ms;
	lock->backoff_max_ms = max_ms;
	lock->backoff_multiplier = multiplier;
	return HL_OK;
}
