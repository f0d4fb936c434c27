/*
 * The reentrant lock (Redisson RLock). Acquire is one EVALSHA when the lock
 * is free; otherwise the caller queues in the client's per-name gate (FIFO,
 * so only one local thread competes in Redis and a releaser cannot barge
 * ahead of its neighbours), subscribes to the lock's channel and sleeps
 * until an unlock message or the holder's TTL, then tries again.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HL_CHANNEL_PREFIX "redisson_lock__channel:"

static int lock_enter(hl_lock *lock)
{
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	return hl__client_enter(lock->client);
}

int hl_lock_new(hl_lock **out, hl_client *client, const void *name,
                size_t name_len)
{
	hl_lock *l;
	size_t plen = sizeof(HL_CHANNEL_PREFIX) - 1;
	int braces, rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!name)
		return hl__fail(HL_EINVAL, "name is NULL");
	if (name_len == 0)
		return hl__fail(HL_EINVAL, "name is empty");
	if (name_len > HL_NAME_MAX)
		return hl__fail(HL_EINVAL,
		                "name is %zu bytes; at most %d are allowed",
		                name_len, HL_NAME_MAX);
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if (client->conf.url.topology == HL_TOPO_CLUSTER &&
	    !hl__name_slot_safe(name, name_len)) {
		/* Its channel would hash to another slot than its key, and
		 * every script that names both would fail with CROSSSLOT
		 * (Redisson's too): say so now. */
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
	l = calloc(1, sizeof(*l));
	braces = memchr(name, '{', name_len) == NULL;
	if (l) {
		l->name = malloc(name_len);
		l->channel_len = plen + name_len + (braces ? 2 : 0);
		l->channel = malloc(l->channel_len);
	}
	if (!l || !l->name || !l->channel) {
		if (l) {
			free(l->name);
			free(l->channel);
		}
		free(l);
		hl__client_leave(client);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(l->name, name, name_len);
	l->name_len = name_len;
	/* PROTOCOL 0.2: channel = prefix:{name}, or prefix:name when the name
	 * already carries a hash tag. */
	memcpy(l->channel, HL_CHANNEL_PREFIX, plen);
	if (braces) {
		l->channel[plen] = '{';
		memcpy(l->channel + plen + 1, name, name_len);
		l->channel[plen + 1 + name_len] = '}';
	} else {
		memcpy(l->channel + plen, name, name_len);
	}
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
	free(lock->name);
	free(lock->channel);
	free(lock);
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

/* One attempt within b, as part of op (owner's count op->count).
 * HL_OK with *acquired = 1, or 0 with the holder's TTL in *ttl; the bound's
 * status when it stopped the attempt. The acquire sets the count, so it is
 * resent after a lost reply: a copy that ran already changes nothing. */
/* The release script for owner on lock: the lock keeps lease_ms when holds
 * remain, count is the owner's hold count before this release (0:
 * unknown). flags, sent, b and replicated as for hl__eval. */
static int release_script(hl_lock *lock, const char *owner, int64_t lease_ms,
                          int64_t count, int flags, enum hl_sent *sent,
                          const hl_bound *b, int *replicated, hl_reply **r)
{
	hl_client *c = lock->client;
	char leasebuf[24], countbuf[24];
	const char *args[7];
	size_t lens[7];
	snprintf(leasebuf, sizeof(leasebuf), "%lld", (long long)lease_ms);
	snprintf(countbuf, sizeof(countbuf), "%lld", (long long)count);
	args[0] = lock->name;
	lens[0] = lock->name_len;
	args[1] = lock->channel;
	lens[1] = lock->channel_len;
	args[2] = "0"; /* Redisson's unlock message */
	lens[2] = 1;
	args[3] = leasebuf;
	lens[3] = strlen(leasebuf);
	args[4] = owner;
	lens[4] = strlen(owner);
	args[5] = hl__router_publish(c);
	lens[5] = strlen(args[5]);
	args[6] = countbuf;
	lens[6] = strlen(countbuf);
	return hl__eval(c, r, HL_SCRIPT_RELEASE, 2, 7, args, lens, flags, sent,
	                b, replicated);
}

/* Take back an acquire that set owner's count to op->count + 1: the
 * release script set back to op->count (deleting the lock at 0). */
static int undo_acquire(hl_lock *lock, const char *owner, const hl_op *op,
                        const hl_bound *b)
{
	hl_reply *r = NULL;
	int rc = release_script(lock, owner, lock->client->conf.watchdog_ms,
	                        op->count + 1, HL_CMD_IDEMPOTENT | HL_CMD_WRITE,
	                        NULL, b, NULL, &r);
	hl__reply_free(r);
	return rc;
}

static int attempt(hl_lock *lock, const char *owner, const hl_op *op,
                   int64_t lease, const hl_bound *b, int *acquired,
                   int64_t *ttl)
{
	hl_client *c = lock->client;
	char leasebuf[24], countbuf[24], label[80];
	const char *args[4];
	size_t lens[4];
	hl_reply *r = NULL;
	int rc, replicated = -1, tries = 0;

	snprintf(leasebuf, sizeof(leasebuf), "%lld",
	         (long long)(lease < 0 ? c->conf.watchdog_ms : lease));
	snprintf(countbuf, sizeof(countbuf), "%lld",
	         (long long)(op->count + 1));
	args[0] = lock->name;
	lens[0] = lock->name_len;
	args[1] = leasebuf;
	lens[1] = strlen(leasebuf);
	args[2] = owner;
	lens[2] = strlen(owner);
	args[3] = countbuf;
	lens[3] = strlen(countbuf);
again:
	*acquired = 0;
	rc = hl__eval(c, &r, HL_SCRIPT_ACQUIRE, 1, 4, args, lens,
	              HL_CMD_IDEMPOTENT | HL_CMD_WRITE, NULL, b, &replicated);
	if (rc != HL_OK)
		return rc == HL_EIO ? hl__fail_wrap(rc, "acquiring \"%s\"",
		                                    lock_label(lock, label,
		                                               sizeof(label)))
		                    : rc;
	if (hl__reply_type(r) == HL_REPLY_ARRAY && hl__reply_len(r) == 1 &&
	    hl__reply_type(hl__reply_at(r, 0)) == HL_REPLY_INTEGER) {
		*acquired = 1;
	} else if (hl__reply_type(r) == HL_REPLY_INTEGER) {
		*ttl = hl__reply_int(r);
	} else if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = hl__fail(HL_EREDIS, "acquiring \"%s\": %.300s",
		              lock_label(lock, label, sizeof(label)),
		              hl__reply_str(r));
	} else {
		rc = hl__fail(HL_EPROTOCOL,
		              "acquiring \"%s\": unexpected reply type %d",
		              lock_label(lock, label, sizeof(label)),
		              hl__reply_type(r));
	}
	hl__reply_free(r);
	if (rc == HL_OK && *acquired && replicated == 0) {
		/* Taken on the master, but no replica confirmed it: a failover
		 * now would lose it. Undo, and try again (Redisson's
		 * NoSyncedSlaves rule, PROTOCOL 0.4). */
		*acquired = 0;
		if ((rc = undo_acquire(lock, owner, op, b)) != HL_OK)
			return rc;
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

/* One attempt of owner on lock as its own operation: begin, send, record.
 * *acquired and *ttl as attempt(); *reentry (may be NULL) = 1 when the
 * owner already held the lock. */
static int attempt_op(hl_lock *lock, uint64_t owner_id, const char *owner,
                      int64_t lease, const hl_bound *b, int *acquired,
                      int64_t *ttl, int *reentry)
{
	hl_client *c = lock->client;
	hl_op op;
	int64_t sent_ms;
	int rc = hl__op_begin(&op, c, lock, owner_id, b);
	if (rc != HL_OK)
		return rc;
	if (reentry)
		*reentry = op.count > 0;
	sent_ms = hl__now_ms();
	rc = attempt(lock, owner, &op, lease, b, acquired, ttl);
	if (rc == HL_OK && *acquired)
		return hl__op_acquired(c, &op, lease, sent_ms);
	hl__op_end(c, &op);
	return rc;
}

static int check_times(int64_t wait_ms, int64_t lease_ms)
{
	if (wait_ms < -1 || wait_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "wait_ms = %lld: use -1 (forever), 0 (one "
		                "attempt) or up to 2^40 ms",
		                (long long)wait_ms);
	if (lease_ms == 0 || lease_ms < -1 || lease_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "lease_ms = %lld: use -1 (watchdog) or 1 to "
		                "2^40 ms",
		                (long long)lease_ms);
	return HL_OK;
}

/* ---- the slow path ------------------------------------------------------ */

/* Why a wait ended early, checked under wait_mu. */
static int wait_stop(hl_client *c, const hl_waiter *w, hl_cancel *cancel)
{
	if (atomic_load(&c->closing))
		return hl__fail(HL_ECLOSED, "the client was closed while "
		                            "waiting");
	if (hl_cancel_is_triggered(cancel) ||
	    w->interrupt_gen != c->interrupt_gen)
		return hl__fail(HL_EINTERRUPTED, "waiting for the lock was "
		                                 "interrupted");
	return HL_OK;
}

static void gate_leave(hl_client *c, hl_waiter *w)
{
	hl_gate *g = w->gate;
	if (!g)
		return;
	hl__dlist_remove(&g->queue, &w->gate_link);
	w->gate = NULL;
	if (g->queue.head)
		pthread_cond_signal(
		        &HL_CONTAINER(g->queue.head, hl_waiter, gate_link)
		                 ->cond);
	else {
		hl__map_del(&c->gates, g->name, g->len);
		free(g);
	}
}

static int gate_join(hl_client *c, hl_waiter *w, const hl_lock *lock)
{
	hl_gate *g = hl__map_get(&c->gates, lock->name, lock->name_len);
	if (!g) {
		g = calloc(1, sizeof(*g) + lock->name_len);
		if (!g)
			return hl__fail(HL_ENOMEM, "out of memory");
		g->len = lock->name_len;
		memcpy(g->name, lock->name, lock->name_len);
		if (hl__map_put(&c->gates, g->name, g->len, g) != 0) {
			free(g);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	w->gate = g;
	hl__dlist_push(&g->queue, &w->gate_link);
	return HL_OK;
}

static int sub_join(hl_client *c, hl_waiter *w, const hl_lock *lock)
{
	hl_sub *s = hl__map_get(&c->subs, lock->channel, lock->channel_len);
	if (!s) {
		s = calloc(1, sizeof(*s) + lock->channel_len);
		if (!s)
			return hl__fail(HL_ENOMEM, "out of memory");
		s->len = lock->channel_len;
		memcpy(s->channel, lock->channel, lock->channel_len);
		if (hl__map_put(&c->subs, s->channel, s->len, s) != 0) {
			free(s);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	if (s->refs++ == 0)
		hl__pubsub_kick(c);
	w->sub = s;
	hl__dlist_push(&s->waiters, &w->sub_link);
	return HL_OK;
}

static void sub_leave(hl_client *c, hl_waiter *w)
{
	hl_sub *s = w->sub;
	if (!s)
		return;
	hl__dlist_remove(&s->waiters, &w->sub_link);
	w->sub = NULL;
	/* The subscriber thread unsubscribes and frees it. */
	if (--s->refs == 0)
		hl__pubsub_kick(c);
}

static int slow_acquire(hl_lock *lock, uint64_t owner_id, const char *owner,
                        int64_t local, int64_t lease, int64_t deadline,
                        const hl_bound *b, hl_cancel *cancel, int *acquired)
{
	hl_client *c = lock->client;
	hl_waiter w;
	hl_cancel_reg reg;
	int rc = HL_OK, outages = 0;

	memset(&w, 0, sizeof(w));
	hl__cond_init(&w.cond);
	reg.mu = &c->wait_mu;
	reg.cond = &w.cond;
	hl__cancel_register(cancel, &reg);
	pthread_mutex_lock(&c->wait_mu);
	w.interrupt_gen = b->interrupt_gen;
	hl__dlist_push(&c->waiters, &w.all_link);

	/* A re-entry never queues: the owner already holds it. */
	if (local == 0 && (rc = gate_join(c, &w, lock)) == HL_OK) {
		while (w.gate->queue.head != &w.gate_link) {
			if ((rc = wait_stop(c, &w, cancel)) != HL_OK)
				break;
			if (hl__cond_wait_until(&w.cond, &c->wait_mu,
			                        deadline) == ETIMEDOUT &&
			    hl__remaining(deadline) == 0)
				break;
		}
	}
	if (rc == HL_OK && (!w.gate || w.gate->queue.head == &w.gate_link))
		rc = sub_join(c, &w, lock);
	else if (rc == HL_OK)
		goto done; /* the wait ran out in the queue */

	while (rc == HL_OK) {
		uint64_t gen = w.sub->gen;
		int64_t ttl = 0, until;
		pthread_mutex_unlock(&c->wait_mu);
		rc = attempt_op(lock, owner_id, owner, lease, b, acquired, &ttl,
		                NULL);
		if (rc == HL_OK)
			outages = 0;
		if ((rc == HL_EIO || rc == HL_ECONNECT) &&
		    hl__remaining(deadline) != 0 &&
		    (deadline >= 0 || outages < c->conf.retry_attempts)) {
			/* Redis unreachable (a failover, a restart, the
			 * network): a wait outlasts it, within its deadline
			 * and cancel, trying again after a pause. A wait
			 * without a deadline gives up after retry_attempts
			 * such outages in a row (each already the whole retry
			 * policy), so that a server that is gone is told. */
			rc = hl__pause(c,
			               hl__jitter_delay(c->conf.retry_delay_ms,
			                                outages++),
			               b);
		}
		pthread_mutex_lock(&c->wait_mu);
		if (rc != HL_OK || *acquired)
			break;
		if ((rc = wait_stop(c, &w, cancel)) != HL_OK)
			break;
		if (hl__remaining(deadline) == 0)
			break;
		/* Sleep until a message (or our subscription becoming
		 * active, or a reconnect) bumps the generation, or the
		 * holder's lease would end. */
		if (ttl < 0 || ttl > c->conf.watchdog_ms)
			ttl = c->conf.watchdog_ms;
		until = hl__now_ms() + ttl;
		if (deadline >= 0 && deadline < until)
			until = deadline;
		while (w.sub->gen == gen && hl__now_ms() < until) {
			if (wait_stop(c, &w, cancel) != HL_OK)
				break;
			hl__cond_wait_until(&w.cond, &c->wait_mu, until);
		}
	}
done:
	sub_leave(c, &w);
	gate_leave(c, &w);
	hl__dlist_remove(&c->waiters, &w.all_link);
	pthread_mutex_unlock(&c->wait_mu);
	hl__cancel_unregister(cancel, &reg);
	pthread_cond_destroy(&w.cond);
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

/* The lock is free: wake our own waiters, note whether others listen. */
static void freed(hl_client *c, const hl_lock *lock, int64_t receivers,
                  int64_t rtt_us)
{
	uint64_t hash = hl__hash(lock->name, lock->name_len);
	struct hl_handoff *slot;
	hl_sub *s;
	int ours;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, lock->channel, lock->channel_len);
	/* Our own subscription counts among the receivers while the server
	 * may still have it: confirmed, or being made or undone. */
	ours = s && s->state != HL_SUB_NONE;
	if (s)
		hl__pubsub_wake(s);
	slot = handoff_slot(c, hash);
	if (receivers > ours) {
		int64_t hold = 2 * rtt_us + 50;
		slot->hash = hash;
		slot->until_us =
		        hl__now_us() +
		        (hold < HL_HANDOFF_MAX_US ? hold : HL_HANDOFF_MAX_US);
	} else if (slot->hash == hash) {
		slot->until_us = 0;
	}
	pthread_mutex_unlock(&c->wait_mu);
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
	hl_client *c;
	char owner[HL_OWNER_MAX];
	uint64_t owner_id;
	int64_t local, ttl = 0, deadline, io_deadline, grace;
	int rc, acquired = 0, queue_busy = 0;
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
	hl__bound_init(&b, c, io_deadline, cancel, 1);
	owner_id = hl__effective_owner(lock);
	hl__owner_string(owner, c, owner_id);
	local = hl__hold_peek(c, lock, owner_id);
	if (local == 0) {
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
		rc = attempt_op(lock, owner_id, owner, lease_ms, &b, &acquired,
		                &ttl, NULL);
		/* a wait outlasts an outage too (see slow_acquire) */
		if ((rc == HL_EIO || rc == HL_ECONNECT) && wait_ms != 0 &&
		    hl__remaining(deadline) != 0)
			rc = HL_OK;
		if (rc == HL_OK && !acquired && wait_ms != 0)
			rc = slow_acquire(lock, owner_id, owner, local,
			                  lease_ms, deadline, &b, cancel,
			                  &acquired);
	} else {
		rc = slow_acquire(lock, owner_id, owner, local, lease_ms,
		                  deadline, &b, cancel, &acquired);
	}
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

int hl_lock_release(int *out_released, hl_lock *lock)
{
	hl_client *c;
	char owner[HL_OWNER_MAX], label[80];
	hl_reply *r = NULL;
	enum hl_sent sent = HL_SENT_NOTHING;
	uint64_t owner_id;
	int64_t receivers = 0, t0, rtt_us, result = -2;
	int rc, final, replicated = -1;
	hl_bound b;
	hl_op op;

	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	lock_label(lock, label, sizeof(label));
	owner_id = hl__effective_owner(lock);
	hl__owner_string(owner, c, owner_id);
	hl__bound_init(&b, c, -1, NULL, 0); /* a release is not a wait */
	if ((rc = hl__op_begin(&op, c, lock, owner_id, &b)) != HL_OK)
		goto out;
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
		hl__op_stop_renewal(c, &op);
		b.deadline_ms = hl__op_hold_ends(c, &op);
	}
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
		           hl__reply_len(r) == 2 &&
		           hl__reply_type(hl__reply_at(r, 1)) ==
		                   HL_REPLY_INTEGER) {
			result = 1;
			receivers = hl__reply_int(hl__reply_at(r, 1));
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
		/* An earlier attempt whose reply was lost did it. */
		result = 1;
		receivers = 0;
	}
	if (result == 1) {
		hl__op_gone(c, &op);
		freed(c, lock, receivers, rtt_us);
		if (out_released)
			*out_released = 1;
	} else if (result == 0) {
		hl__op_released_one(c, &op);
		if (out_released)
			*out_released = 0;
	} else if (result == -1) {
		hl__op_gone(c, &op);
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
	hl__client_leave(c);
	return rc;
}

int hl_lock_force_unlock(int *out_existed, hl_lock *lock)
{
	hl_client *c;
	const char *args[4];
	size_t lens[4];
	hl_reply *r = NULL;
	char label[80];
	int rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	c = lock->client;
	args[0] = lock->name;
	lens[0] = lock->name_len;
	args[1] = lock->channel;
	lens[1] = lock->channel_len;
	args[2] = "0";
	lens[2] = 1;
	args[3] = hl__router_publish(c);
	lens[3] = strlen(args[3]);
	rc = hl__eval(c, &r, HL_SCRIPT_FORCE_UNLOCK, 2, 4, args, lens,
	              HL_CMD_WRITE, NULL, NULL, NULL);
	if (rc == HL_OK) {
		if (hl__reply_type(r) == HL_REPLY_INTEGER) {
			if (out_existed)
				*out_existed = hl__reply_int(r) == 1;
			hl__holds_force_unlocked(c, lock);
			if (hl__reply_int(r) == 1)
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
	char owner[HL_OWNER_MAX], label[80];
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
		hl__owner_string(owner, c, hl__effective_owner(lock));
		argv[2] = owner;
		lens[2] = strlen(owner);
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

int hl_lock_is_locked(int *out, hl_lock *lock)
{
	int64_t v = 0;
	int rc = out ? query(lock, "EXISTS", 0, &v, 0)
	             : hl__fail(HL_EINVAL, "out is NULL");
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
