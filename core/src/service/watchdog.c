/*
 * Holds and the watchdog. The client records every hold it knows of
 * (owner + name -> count, lease, lost state). Holds taken without a lease
 * sit in a timer heap and are renewed every watchdog/3 by one thread, in
 * pipelined batches that do not wait for each other: while Redis answers
 * slowly, renewals keep going out (several may be in flight), each reply
 * extends the hold's loss deadline from when its renewal was sent, and the
 * local clock declares the hold lost when no reply comes in time. Holds
 * with a lease sit in the heap until their lease ends, when they are told
 * lost like any other (if not released by then); a lock that is never
 * released is then forgotten a while after Redis forgot it.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HL_RENEW_KEYS_PER_EVAL  100
#define HL_RENEW_EVALS_PER_TRIP 32
#define HL_RENEW_BATCH          (HL_RENEW_KEYS_PER_EVAL * HL_RENEW_EVALS_PER_TRIP)
#define HL_NOT_IN_HEAP          ((size_t)-1)

static void wd_flights_free(hl_client *c);

/* ---- the heap (min by due_ms), under hold_mu ---------------------------- */

static void heap_swap(hl_client *c, size_t a, size_t b)
{
	hl_hold *t = c->heap[a];
	c->heap[a] = c->heap[b];
	c->heap[b] = t;
	c->heap[a]->heap_index = a;
	c->heap[b]->heap_index = b;
}

static void heap_up(hl_client *c, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (c->heap[p]->due_ms <= c->heap[i]->due_ms)
			break;
		heap_swap(c, i, p);
		i = p;
	}
}

static void heap_down(hl_client *c, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->heap_len && c->heap[l]->due_ms < c->heap[m]->due_ms)
			m = l;
		if (r < c->heap_len && c->heap[r]->due_ms < c->heap[m]->due_ms)
			m = r;
		if (m == i)
			return;
		heap_swap(c, i, m);
		i = m;
	}
}

static int heap_push(hl_client *c, hl_hold *h)
{
	if (c->heap_len == c->heap_cap) {
		size_t cap = c->heap_cap ? c->heap_cap * 2 : 64;
		hl_hold **n = realloc(c->heap, cap * sizeof(*n));
		if (!n)
			return -1;
		c->heap = n;
		c->heap_cap = cap;
	}
	h->heap_index = c->heap_len;
	c->heap[c->heap_len++] = h;
	heap_up(c, h->heap_index);
	return 0;
}

static void heap_remove(hl_client *c, hl_hold *h)
{
	size_t i = h->heap_index;
	if (i == HL_NOT_IN_HEAP)
		return;
	h->heap_index = HL_NOT_IN_HEAP;
	c->heap_len--;
	if (i == c->heap_len)
		return;
	c->heap[i] = c->heap[c->heap_len];
	c->heap[i]->heap_index = i;
	heap_down(c, i);
	heap_up(c, c->heap[i]->heap_index);
}

/* Wake the watchdog thread, wherever it waits. Caller holds hold_mu. */
static void wd_wake(hl_client *c)
{
	pthread_cond_broadcast(&c->wd_cond);
	if (c->wd_polling && c->wd_wake_ok) {
		hl__notify_set(&c->wd_wake);
	}
}

/* (Re)schedule h at due. The watchdog is woken only when something falls
 * due before the moment it sleeps until: it wakes every third of the
 * timeout anyway, so taking a lock (renewal due a third of the timeout
 * later) normally costs no wake-up and no context switch. A lease that
 * ends sooner wakes it, so that its loss is told when it ends. */
static int schedule(hl_client *c, hl_hold *h, int64_t due)
{
	heap_remove(c, h);
	h->due_ms = due;
	if (heap_push(c, h) != 0)
		return -1;
	if (due < c->wd_sleep_until)
		wd_wake(c);
	return 0;
}

/* ---- the registry ------------------------------------------------------- */

int64_t hl__loss_margin(int64_t lease_ms)
{
	return lease_ms / 10;
}

/* A hold's key: the owner id, the hold class of the lock's kind (an owner
 * may hold the read and the write half of one name at once, each its own
 * hold) and the name. */
static size_t make_key(char *key, uint64_t owner, const hl_lock *lock)
{
	memcpy(key, &owner, sizeof(owner));
	key[sizeof(owner)] = (char)hl__kind_class(lock->kind);
	memcpy(key + HL_HOLD_KEY_HDR, lock->name, lock->name_len);
	return HL_HOLD_KEY_HDR + lock->name_len;
}

static hl_hold *find(hl_client *c, const hl_lock *lock, uint64_t owner)
{
	char stack[256], *key = stack;
	size_t n = HL_HOLD_KEY_HDR + lock->name_len;
	hl_hold *h;
	if (n > sizeof(stack) && !(key = malloc(n)))
		return NULL;
	make_key(key, owner, lock);
	h = hl__map_get(&c->holds, key, n);
	if (key != stack)
		free(key);
	return h;
}

static void hold_free(hl_client *c, hl_hold *h)
{
	heap_remove(c, h);
	hl__map_del(&c->holds, h->key, h->key_len);
	hl__notify_close(&h->lost_fd);
	free(h);
	/* A wait_lost on this hold returns: the hold ended. */
	pthread_cond_broadcast(&c->hold_cond);
	hl__task_holds_changed(c);
}

/* Forget h, or, while an operation runs on it, only what it holds (the
 * operation ends it). */
static void hold_drop(hl_client *c, hl_hold *h)
{
	if (!h->busy) {
		hold_free(c, h);
		return;
	}
	heap_remove(c, h);
	h->watchdog = 0;
	h->count = 0;
	h->lost = 0;
}

/* How long a lease hold is remembered after its lease ended (as long
 * again, at least a second): a late release hears it was lost, not that it
 * never held. */
static int64_t forget_at(const hl_hold *h)
{
	return h->expires_ms + (h->lease_ms > 1000 ? h->lease_ms : 1000);
}

static void mark_lost(hl_client *c, hl_hold *h)
{
	hl__obs_lost(c, h); /* counted and told once */
	heap_remove(c, h);
	h->lost = 1;
	h->watchdog = 0;
	if (h->lease_ms > 0)
		schedule(c, h, forget_at(h)); /* then forgotten (wd_main) */
	hl__notify_set(&h->lost_fd);
	pthread_cond_broadcast(&c->hold_cond);
	hl__task_holds_changed(c);
}

/* When a watchdog hold that Redis stopped confirming counts as lost: the
 * end of the last confirmed lease, measured from when that command was
 * sent (Redis set the lease no earlier), less the safety margin. */
static int64_t loss_deadline(const hl_client *c, const hl_hold *h)
{
	return h->confirmed_ms + c->conf.watchdog_ms -
	       hl__loss_margin(c->conf.watchdog_ms);
}

/* The local clock decides, whatever the network does: a watchdog hold
 * past its loss deadline is lost even if the watchdog thread has not
 * looked yet, and so is a hold whose fixed lease has ended (unless an
 * operation on it runs: an acquire sent in time extends the lease, and
 * the end of the operation looks again, op_finish). */
static int is_lost(hl_client *c, hl_hold *h, int64_t now)
{
	if (!h->lost && h->count > 0 &&
	    ((h->watchdog && now >= loss_deadline(c, h)) ||
	     (!h->watchdog && h->lease_ms > 0 && !h->busy &&
	      now >= h->expires_ms)))
		mark_lost(c, h);
	return h->lost;
}

/* A watchdog hold waits in the heap for its next renewal, or for its loss
 * deadline if that comes first (then the clock declares it lost). */
static int wd_reschedule(hl_client *c, hl_hold *h)
{
	int64_t due = loss_deadline(c, h);
	if (h->renew_at < due)
		due = h->renew_at;
	return schedule(c, h, due);
}

/* When Redis drops the hold at the latest if nothing renews it. */
static int64_t hold_ends(const hl_client *c, const hl_hold *h)
{
	if (h->lease_ms > 0)
		return h->expires_ms;
	return h->sent_max_ms + c->conf.watchdog_ms;
}

int hl__op_begin(hl_op *op, hl_client *c, const hl_lock *lock, uint64_t owner,
                 const hl_bound *b)
{
	hl_hold *h;
	int rc = HL_OK;
	int64_t now;
	memset(op, 0, sizeof(*op));
	pthread_mutex_lock(&c->hold_mu);
	for (;;) {
		h = find(c, lock, owner);
		if (!h || !h->busy)
			break;
		/* Another operation of this owner on this name runs: it is
		 * one round trip (or a few retries) long. */
		if ((rc = hl__bound_check(b)) != HL_OK)
			goto out;
		hl__cond_wait_until(&c->hold_cond, &c->hold_mu,
		                    hl__now_ms() + 20);
	}
	if (!h) {
		size_t klen = HL_HOLD_KEY_HDR + lock->name_len;
		h = calloc(1, sizeof(*h) + klen);
		if (!h) {
			rc = hl__fail(HL_ENOMEM, "out of memory");
			goto out;
		}
		h->owner_id = owner;
		h->thread_owner = lock->owner_id == 0;
		h->heap_index = HL_NOT_IN_HEAP;
		hl__notify_none(&h->lost_fd);
		h->lease_ms = -1;
		h->key_len = make_key(h->key, owner, lock);
		hl__owner_string(h->owner, c, owner);
		hl__lock_field(h->field, lock, h->owner);
		h->read = hl__kind_class(lock->kind) == HL_CLASS_READ;
		if (hl__map_put(&c->holds, h->key, h->key_len, h) != 0) {
			free(h);
			rc = hl__fail(HL_ENOMEM, "out of memory");
			goto out;
		}
	} else {
		op->known = h->count > 0 || h->lost;
	}
	now = hl__now_ms();
	op->begin_ms = now;
	h->busy = 1;
	op->hold = h;
	op->epoch = h->epoch;
	op->lease_ms = h->lease_ms > 0 ? h->lease_ms : c->conf.watchdog_ms;
	if (is_lost(c, h, now) ||
	    (h->count > 0 && h->lease_ms > 0 && now >= h->expires_ms))
		op->lost = 1;
	else
		op->count = h->count;
out:
	pthread_mutex_unlock(&c->hold_mu);
	return rc;
}

/* Clear busy; free a record that holds nothing; wake whoever waits. A
 * fixed lease that ended while the operation ran is told lost now. */
static void op_finish(hl_client *c, hl_op *op)
{
	hl_hold *h = op->hold;
	h->busy = 0;
	if (h->count == 0 && !h->lost) {
		hold_free(c, h);
	} else {
		is_lost(c, h, hl__now_ms());
		pthread_cond_broadcast(&c->hold_cond);
		hl__task_holds_changed(c);
	}
	op->hold = NULL;
}

void hl__op_end(hl_client *c, hl_op *op)
{
	pthread_mutex_lock(&c->hold_mu);
	op_finish(c, op);
	pthread_mutex_unlock(&c->hold_mu);
}

int hl__op_acquired(hl_client *c, hl_op *op, int64_t lease_ms, int64_t sent_ms)
{
	hl_hold *h = op->hold;
	int rc = HL_OK;
	pthread_mutex_lock(&c->hold_mu);
	if (op->lost || h->count == 0) {
		/* A new hold (the first, or one taken again after a loss)
		 * starts clean; a renewal in flight for the old one must not
		 * judge it. */
		heap_remove(c, h);
		h->lost = 0;
		h->watchdog = 0;
		hl__notify_close(&h->lost_fd);
		h->epoch = ++c->hold_seq;
		h->sent_max_ms = sent_ms;
	}
	/* What the caller was told it holds, whatever Redis had. */
	h->count = op->count + 1;
	h->token = op->token;
	h->lease_ms = lease_ms;
	h->confirmed_ms = sent_ms;
	if (sent_ms > h->sent_max_ms)
		h->sent_max_ms = sent_ms;
	if (lease_ms < 0) {
		/* Keep the renewal already scheduled on re-entry. */
		if (!h->watchdog || h->heap_index == HL_NOT_IN_HEAP) {
			h->watchdog = 1;
			h->renew_at = sent_ms + c->conf.watchdog_ms / 3;
			if (wd_reschedule(c, h))
				rc = hl__fail(HL_ENOMEM, "out of memory");
		}
	} else {
		h->watchdog = 0;
		h->expires_ms = sent_ms + lease_ms;
		if (schedule(c, h, h->expires_ms))
			rc = hl__fail(HL_ENOMEM, "out of memory");
	}
	op_finish(c, op);
	pthread_mutex_unlock(&c->hold_mu);
	return rc;
}

void hl__op_released_one(hl_client *c, hl_op *op)
{
	hl_hold *h = op->hold;
	pthread_mutex_lock(&c->hold_mu);
	if (h->count > 0)
		h->count--;
	if (op->lease_reset && !h->lost && h->count > 0) {
		/* Redis set the lease again, after op began: from then on. */
		if (h->lease_ms > 0 &&
		    op->begin_ms + h->lease_ms > h->expires_ms) {
			h->expires_ms = op->begin_ms + h->lease_ms;
			schedule(c, h, h->expires_ms);
		} else if (h->watchdog && op->begin_ms > h->confirmed_ms) {
			h->confirmed_ms = op->begin_ms;
			if (h->heap_index != HL_NOT_IN_HEAP)
				wd_reschedule(c, h);
		}
	}
	op_finish(c, op);
	pthread_mutex_unlock(&c->hold_mu);
}

void hl__op_gone(hl_client *c, hl_op *op)
{
	pthread_mutex_lock(&c->hold_mu);
	hold_drop(c, op->hold);
	op_finish(c, op);
	pthread_mutex_unlock(&c->hold_mu);
}

int64_t hl__op_hold_ends(hl_client *c, hl_op *op)
{
	int64_t t;
	pthread_mutex_lock(&c->hold_mu);
	t = hold_ends(c, op->hold);
	pthread_mutex_unlock(&c->hold_mu);
	return t;
}

void hl__op_stop_renewal(hl_client *c, hl_op *op)
{
	pthread_mutex_lock(&c->hold_mu);
	heap_remove(c, op->hold);
	op->hold->watchdog = 0;
	pthread_mutex_unlock(&c->hold_mu);
}

int64_t hl__hold_peek(hl_client *c, const hl_lock *lock, uint64_t owner,
                      int64_t *token)
{
	hl_hold *h;
	int64_t n = 0, now = hl__now_ms();
	pthread_mutex_lock(&c->hold_mu);
	h = find(c, lock, owner);
	if (h && !is_lost(c, h, now) &&
	    (h->lease_ms < 0 || h->expires_ms > now)) {
		n = h->count;
		if (token)
			*token = h->token;
	}
	pthread_mutex_unlock(&c->hold_mu);
	return n;
}

uint64_t hl__hold_epoch(hl_client *c, const hl_lock *lock, uint64_t owner)
{
	hl_hold *h;
	uint64_t e;
	pthread_mutex_lock(&c->hold_mu);
	h = find(c, lock, owner);
	e = h ? h->epoch : 0;
	pthread_mutex_unlock(&c->hold_mu);
	return e;
}

void hl__holds_force_unlocked(hl_client *c, const hl_lock *lock)
{
	size_t i;
	pthread_mutex_lock(&c->hold_mu);
	for (i = 0; i < c->holds.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->holds.buckets[i]; e; e = e->next) {
			hl_hold *h = e->value;
			if (h->key_len == HL_HOLD_KEY_HDR + lock->name_len &&
			    h->count > 0 &&
			    memcmp(h->key + HL_HOLD_KEY_HDR, lock->name,
			           lock->name_len) == 0)
				mark_lost(c, h);
		}
	}
	pthread_mutex_unlock(&c->hold_mu);
}

void hl__holds_drop_owner(hl_client *c, uint64_t owner_id)
{
	size_t i;
	pthread_mutex_lock(&c->hold_mu);
	for (i = 0; i < c->holds.nbuckets; i++) {
		hl_map_entry *e = c->holds.buckets[i], *next;
		for (; e; e = next) {
			hl_hold *h = e->value;
			next = e->next;
			if (h->owner_id == owner_id && h->thread_owner)
				hold_drop(c, h);
		}
	}
	pthread_mutex_unlock(&c->hold_mu);
}

void hl__holds_free_all(hl_client *c)
{
	size_t i;
	for (i = 0; i < c->holds.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->holds.buckets[i]; e; e = e->next) {
			hl_hold *h = e->value;
			hl__notify_close(&h->lost_fd);
			free(h);
		}
	}
	hl__map_clear(&c->holds);
	hl__map_init(&c->holds);
	c->heap_len = 0;
	/* the watchdog's, once it is stopped (or in a child after fork(),
	 * where it never ran) */
	wd_flights_free(c);
	if (c->wd_wake_ok) {
		hl__notify_close(&c->wd_wake);
		c->wd_wake_ok = 0;
	}
}

/* ---- public: lost state ------------------------------------------------- */

static int lock_enter(hl_lock *lock)
{
	if (!lock)
		return hl__fail(HL_EINVAL, "lock is NULL");
	return hl__client_enter(lock->client);
}

int hl_lock_is_lost(int *out, hl_lock *lock)
{
	hl_hold *h;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	pthread_mutex_lock(&lock->client->hold_mu);
	h = find(lock->client, lock, hl__effective_owner(lock));
	*out = h ? is_lost(lock->client, h, hl__now_ms()) : 0;
	pthread_mutex_unlock(&lock->client->hold_mu);
	hl__client_leave(lock->client);
	return HL_OK;
}

/* A wait for this owner's hold to be found lost: a watch task of the
 * engine, looked at again whenever the holds change and at the loss
 * deadline or the end of the fixed lease (the clock decides). */
typedef struct lost_ctx {
	hl_client *c;
	hl_lock lock; /* its own copy of the name */
	uint64_t owner;
} lost_ctx;

static void lost_free(void *arg)
{
	lost_ctx *x = arg;
	free(x->lock.name);
	free(x);
}

/* Caller holds hold_mu (the engine's contract for check). */
static int lost_check(void *arg, int *done, int *result, int64_t *recheck_ms)
{
	lost_ctx *x = arg;
	hl_client *c = x->c;
	hl_hold *h = find(c, &x->lock, x->owner);
	int64_t now = hl__now_ms();
	if (h && is_lost(c, h, now)) {
		*done = 1;
		*result = 1;
	} else if (h && h->watchdog && h->count > 0) {
		*done = 0;
		*recheck_ms = loss_deadline(c, h);
	} else if (h && h->lease_ms > 0 && h->count > 0) {
		/* a fixed lease: lost when it ends (an operation running on
		 * it then looks again when it ends: holds changed) */
		*done = 0;
		*recheck_ms = h->expires_ms > now ? h->expires_ms : now + 1000;
	} else {
		/* nothing watched: not held, or released */
		*done = 1;
		*result = 0;
	}
	return HL_OK;
}

static const hl_watch_ops lost_ops = {lost_check, lost_free};

static int lost_start(hl_task **out, hl_lock *lock, int64_t timeout_ms,
                      int blocking)
{
	hl_client *c = lock->client;
	lost_ctx *x;
	int rc;
	if (timeout_ms < -1 || timeout_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "timeout_ms = %lld: use -1 (forever) or 0 to "
		                "2^40",
		                (long long)timeout_ms);
	x = calloc(1, sizeof(*x));
	if (x) {
		/* the handle as it is (its kind picks the hold), with a name
		 * of its own and none of its other keys (unused here) */
		x->lock = *lock;
		x->lock.channel = NULL;
		x->lock.aux[0] = x->lock.aux[1] = NULL;
		x->lock.name = malloc(lock->name_len);
	}
	if (!x || !x->lock.name) {
		free(x);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(x->lock.name, lock->name, lock->name_len);
	x->c = c;
	x->owner = hl__effective_owner(lock);
	pthread_mutex_lock(&c->hold_mu);
	rc = hl__task_watch_start(out, c, &lost_ops, x,
	                          hl__deadline(timeout_ms),
	                          atomic_load(&c->interrupt_gen), blocking);
	pthread_mutex_unlock(&c->hold_mu);
	return rc;
}

int hl_lock_wait_lost(int *out_lost, hl_lock *lock, int64_t timeout_ms,
                      hl_cancel *cancel)
{
	hl_task *t;
	int rc, lost = 0;
	if (!out_lost)
		return hl__fail(HL_EINVAL, "out_lost is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	rc = lost_start(&t, lock, timeout_ms, 1);
	if (rc == HL_OK)
		rc = hl__task_finish_blocking(t, cancel, &lost);
	hl__client_leave(lock->client);
	if (rc == HL_OK)
		*out_lost = lost;
	return rc;
}

int hl_lock_hold_state(hl_hold_state *out, hl_lock *lock)
{
	hl_hold *h;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (out->version != 1)
		return hl__fail(HL_EINVAL,
		                "hold state version %u is not supported (this "
		                "library knows version %u)",
		                out->version, HL_HOLD_STATE_VERSION);
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	out->count = 0;
	out->lost = 0;
	out->epoch = 0;
	out->lease_ms = -1;
	out->token = 0;
	pthread_mutex_lock(&lock->client->hold_mu);
	h = find(lock->client, lock, hl__effective_owner(lock));
	if (h) {
		int64_t now = hl__now_ms();
		out->lost = is_lost(lock->client, h, now);
		if (!out->lost && (h->lease_ms < 0 || h->expires_ms > now))
			out->count = h->count;
		out->epoch = h->epoch;
		out->lease_ms = h->lease_ms;
		out->token = h->token;
	}
	pthread_mutex_unlock(&lock->client->hold_mu);
	hl__client_leave(lock->client);
	return HL_OK;
}

int hl_lock_wait_lost_start(hl_task **out, hl_lock *lock, int64_t timeout_ms)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	rc = lost_start(out, lock, timeout_ms, 0);
	hl__client_leave(lock->client);
	return rc;
}

int hl_lock_lost_fd(int *out_fd, hl_lock *lock)
{
	hl_hold *h;
	int rc = HL_OK;
	if (!out_fd)
		return hl__fail(HL_EINVAL, "out_fd is NULL");
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	pthread_mutex_lock(&lock->client->hold_mu);
	h = find(lock->client, lock, hl__effective_owner(lock));
	if (!h || (h->count == 0 && !h->lost)) {
		rc = hl__fail(HL_ENOTHELD, "this owner holds no such lock "
		                           "known to this client");
	} else {
		is_lost(lock->client, h, hl__now_ms());
		if (h->lost_fd.rfd < 0 &&
		    hl__notify_open(&h->lost_fd, h->lost) < 0)
			rc = hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
			              strerror(errno));
		if (rc == HL_OK)
			*out_fd = h->lost_fd.rfd;
	}
	pthread_mutex_unlock(&lock->client->hold_mu);
	hl__client_leave(lock->client);
	return rc;
}

int hl_lock_abandon(hl_lock *lock)
{
	hl_hold *h;
	int rc;
	if ((rc = lock_enter(lock)) != HL_OK)
		return rc;
	pthread_mutex_lock(&lock->client->hold_mu);
	h = find(lock->client, lock, hl__effective_owner(lock));
	if (h)
		hold_drop(lock->client, h);
	pthread_mutex_unlock(&lock->client->hold_mu);
	hl__client_leave(lock->client);
	return HL_OK;
}

/* ---- the watchdog thread ------------------------------------------------ */

typedef struct renew_item {
	hl_hold *hold; /* valid only while epoch matches, under hold_mu */
	uint64_t epoch;
	char *key; /* copies: the hold may be freed while we talk to Redis */
	size_t key_len;
	char field[HL_FIELD_MAX]; /* the owner's hash field */
	int read;                 /* a read hold: its timeout keys too */
	int ask;                  /* a cluster: through the router (ASK) */
	int result; /* 1 renewed, 0 gone, -1 no answer, -2 not run (send it
	               again at once: a flushed script, a new master) */
} renew_item;

/* One batch of renewals sent on a link's connection (its EVALSHAs, 100
 * keys each (in a cluster, one slot's), or a SCRIPT LOAD), waiting for its
 * replies, which Redis sends in order. */
typedef struct hl_wd_flight {
	struct hl_wd_flight *next;
	int64_t sent_ms;
	int nreplies; /* replies it waits for */
	int got;      /* replies taken so far */
	int load;     /* a SCRIPT LOAD, no renewals */
	size_t n;
	renew_item items[];
} hl_wd_flight;

/* A connection of the watchdog: to the master, or in a cluster to one
 * master of the slot map (renewals go to each hold's master on its own
 * connection, so a slow node delays only its own holds' replies). Only
 * the watchdog thread uses links, under hold_mu. */
typedef struct hl_wd_link {
	struct hl_wd_link *next;
	hl_addr addr; /* a cluster: the node */
	hl_conn *conn;
	uint64_t epoch;            /* the topology epoch of conn (not a
	                              cluster: the master's) */
	hl_wd_flight *head, *tail; /* in flight on conn, oldest first */
	int slow;                  /* its replies are slow: renew more often */
	int replied;               /* conn has answered since it was made */
} hl_wd_link;

static int is_cluster(const hl_client *c)
{
	return c->conf.url.topology == HL_TOPO_CLUSTER;
}

static hl_hold *find_key(hl_client *c, const char *key, size_t len)
{
	return hl__map_get(&c->holds, key, len);
}

/* What a renewal sent at sent_ms came to (it->result), for its hold if
 * that is still the one it was sent for. Caller holds hold_mu. */
static void renew_result(hl_client *c, renew_item *it, int64_t sent_ms,
                         int64_t now)
{
	hl_hold *h = find_key(c, it->key, it->key_len);
	int64_t retry;
	/* Released, or held afresh, or turned into a lease meanwhile: this
	 * answer is about a hold that is gone. (Re-entries and partial
	 * releases keep the epoch.) */
	if (h != it->hold || h->epoch != it->epoch)
		return;
	if (!h->watchdog || h->lost)
		return;
	if (it->result == 1) {
		hl__obs_renewed(c, h);
		if (sent_ms > h->confirmed_ms) {
			/* the loss deadline moves on */
			h->confirmed_ms = sent_ms;
			if (h->heap_index != HL_NOT_IN_HEAP)
				wd_reschedule(c, h);
		}
		return;
	}
	if (it->result == 0 || is_lost(c, h, now)) {
		/* Not held by us any more, or Redis stayed away until the
		 * loss deadline. */
		mark_lost(c, h);
		return;
	}
	if (it->result == -2) {
		h->renew_at = now; /* not run: again at once */
	} else {
		/* No answer: again soon, and at the loss deadline at the
		 * latest, where the clock declares it lost. */
		hl__obs_renewal_failed(c, h, loss_deadline(c, h) - now);
		retry = c->conf.retry_delay_ms / 4;
		if (retry < 50)
			retry = 50;
		if (now + retry < h->renew_at)
			h->renew_at = now + retry;
	}
	wd_reschedule(c, h);
}

static void flight_free(hl_wd_flight *f)
{
	size_t i;
	for (i = 0; i < f->n; i++)
		free(f->items[i].key);
	free(f);
}

/* The renewals of f are over: those without a reply get result (-1: no
 * answer, -2: not run). Caller holds hold_mu. */
static void flight_end(hl_client *c, hl_wd_flight *f, int result)
{
	int64_t now = hl__now_ms();
	size_t i;
	for (i = (size_t)f->got * HL_RENEW_KEYS_PER_EVAL; i < f->n; i++) {
		f->items[i].result = result;
		renew_result(c, &f->items[i], f->sent_ms, now);
	}
	flight_free(f);
}

/* Drop l's connection: what is in flight on it gets result. Caller holds
 * hold_mu. */
static void wd_drop_conn(hl_client *c, hl_wd_link *l, int result)
{
	hl_wd_flight *f = l->head, *next;
	l->head = l->tail = NULL;
	for (; f; f = next) {
		next = f->next;
		flight_end(c, f, result);
	}
	hl__conn_free(l->conn);
	l->conn = NULL;
	l->slow = 0;
}

/* Free every link and what is in flight, unanswered (closing: no one is
 * told). */
static void wd_flights_free(hl_client *c)
{
	hl_wd_link *l = c->wd_links, *lnext;
	c->wd_links = NULL;
	for (; l; l = lnext) {
		hl_wd_flight *f = l->head, *next;
		lnext = l->next;
		for (; f; f = next) {
			next = f->next;
			flight_free(f);
		}
		hl__conn_free(l->conn);
		free(l);
	}
}

void hl__watchdog_drop_inherited(hl_client *c)
{
	hl_wd_link *l;
	for (l = c->wd_links; l; l = l->next) {
		hl__conn_free(l->conn);
		l->conn = NULL;
	}
}

/* The link to addr (a cluster), or the one link (NULL: to the master),
 * made if need be. NULL: out of memory. */
static hl_wd_link *link_for(hl_client *c, const hl_addr *addr)
{
	hl_wd_link *l;
	for (l = c->wd_links; l; l = l->next)
		if (!addr || hl__addr_eq(&l->addr, addr))
			return l;
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	if (addr)
		l->addr = *addr;
	l->next = c->wd_links;
	c->wd_links = l;
	return l;
}

/* Replies are slow on some link (see wd_interval). */
static int wd_slow(const hl_client *c)
{
	const hl_wd_link *l;
	for (l = c->wd_links; l; l = l->next)
		if (l->slow)
			return 1;
	return 0;
}

/* Queue f's commands on l's connection (caller holds hold_mu; only the
 * watchdog thread touches it). The EVALSHAs of n renewals, or SCRIPT
 * LOAD. */
static int flight_append(hl_client *c, hl_wd_link *l, hl_wd_flight *f)
{
	enum { K = HL_RENEW_KEYS_PER_EVAL };
	const char *argv[4 + 3 * K];
	size_t lens[4 + 3 * K], e, j;
	char nkeys[16], lease[24];
	int rc;
	if (f->load) {
		const char *la[3] = {"SCRIPT", "LOAD",
		                     hl__script(HL_SCRIPT_RENEW)->source};
		size_t ll[3] = {6, 4, strlen(la[2])};
		return hl__conn_append(l->conn, 3, la, ll);
	}
	snprintf(lease, sizeof(lease), "%lld", (long long)c->conf.watchdog_ms);
	for (e = 0; e < (size_t)f->nreplies; e++) {
		size_t first = e * K, cnt = f->n - first < K ? f->n - first : K;
		snprintf(nkeys, sizeof(nkeys), "%zu", cnt);
		argv[0] = "EVALSHA";
		lens[0] = 7;
		argv[1] = c->sha[HL_SCRIPT_RENEW];
		lens[1] = 40;
		argv[2] = nkeys;
		lens[2] = strlen(nkeys);
		for (j = 0; j < cnt; j++) {
			/* the key is the name after the owner id and class */
			renew_item *it = &f->items[first + j];
			argv[3 + j] = it->key + HL_HOLD_KEY_HDR;
			lens[3 + j] = it->key_len - HL_HOLD_KEY_HDR;
		}
		argv[3 + cnt] = lease;
		lens[3 + cnt] = strlen(lease);
		for (j = 0; j < cnt; j++) {
			renew_item *it = &f->items[first + j];
			argv[4 + cnt + 2 * j] = it->field;
			lens[4 + cnt + 2 * j] = strlen(it->field);
			argv[5 + cnt + 2 * j] = it->read ? "r" : "";
			lens[5 + cnt + 2 * j] = it->read ? 1 : 0;
		}
		if ((rc = hl__conn_append(l->conn, (int)(4 + 3 * cnt), argv,
		                          lens)) != HL_OK)
			return rc;
	}
	return HL_OK;
}

static void flight_push(hl_wd_link *l, hl_wd_flight *f)
{
	f->next = NULL;
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
}

/* A MOVED error reply: the slot and where it is now (an empty host: the
 * node that answered). 0, or -1 if it is no MOVED. */
static int parse_moved(const char *s, const hl_addr *from, unsigned *slot,
                       hl_addr *to)
{
	const char *host, *colon;
	char *end;
	unsigned long v;
	if (strncmp(s, "MOVED ", 6) != 0)
		return -1;
	v = strtoul(s + 6, &end, 10);
	if (end == s + 6 || *end != ' ' || v >= HL_SLOTS)
		return -1;
	host = end + 1;
	if (!(colon = strrchr(host, ':')) || atoi(colon + 1) <= 0)
		return -1;
	memset(to, 0, sizeof(*to));
	if (colon == host)
		snprintf(to->host, sizeof(to->host), "%s", from->host);
	else
		snprintf(to->host, sizeof(to->host), "%.*s",
		         (int)(colon - host), host);
	to->port = atoi(colon + 1);
	*slot = (unsigned)v;
	return 0;
}

/* Take the replies that have come on l, oldest flight first. Caller holds
 * hold_mu. HL_OK, or the connection is unusable (a bad reply). */
static int take_replies(hl_client *c, hl_wd_link *l)
{
	enum { K = HL_RENEW_KEYS_PER_EVAL };
	int64_t now = hl__now_ms();
	int rc, load = 0;
	while (l->head) {
		hl_wd_flight *f = l->head;
		hl_reply *r;
		size_t first, cnt, j;
		unsigned slot;
		hl_addr to;
		if ((rc = hl__conn_next_reply(l->conn, &r)) != HL_OK)
			return rc;
		if (!r)
			break;
		l->replied = 1;
		first = (size_t)f->got * K;
		cnt = f->load ? 0 : f->n - first < K ? f->n - first : K;
		f->got++;
		/* Replies slower than a tenth of the timeout: renewals go
		 * every tenth (see wd_interval); fast again below a 20th. */
		if (now - f->sent_ms > c->conf.watchdog_ms / 10)
			l->slow = 1;
		else if (now - f->sent_ms <= c->conf.watchdog_ms / 20)
			l->slow = 0;
		if (hl__reply_type(r) == HL_REPLY_ARRAY) {
			for (j = 0; j < cnt; j++)
				f->items[first + j].result =
				        j < hl__reply_len(r) &&
				                        hl__reply_int(
				                                hl__reply_at(r,
				                                             j))
				                ? 1
				                : 0;
		} else if (hl__reply_type(r) == HL_REPLY_ERROR &&
		           strncmp(hl__reply_str(r), "NOSCRIPT", 8) == 0) {
			/* The script cache was flushed: load it and go
			 * again. */
			for (j = 0; j < cnt; j++)
				f->items[first + j].result = -2;
			load = 1;
		} else if (hl__reply_type(r) == HL_REPLY_ERROR && cnt > 0 &&
		           parse_moved(hl__reply_str(r), &l->addr, &slot,
		                       &to) == 0) {
			/* A cluster's slot moved: it did not run here; learn
			 * where it is and send it there at once. */
			hl__cluster_moved(c, slot, &to);
			for (j = 0; j < cnt; j++)
				f->items[first + j].result = -2;
		} else if (hl__reply_type(r) == HL_REPLY_ERROR && cnt > 0 &&
		           (strncmp(hl__reply_str(r), "ASK ", 4) == 0 ||
		            strncmp(hl__reply_str(r), "TRYAGAIN", 8) == 0)) {
			/* The slot migrates, and the keys (ASK), or some of
			 * them (TRYAGAIN), are on the importing node already:
			 * it did not run here; again at once through the
			 * router, which follows ASK, one key at a time. */
			for (j = 0; j < cnt; j++) {
				renew_item *it = &f->items[first + j];
				hl_hold *h = find_key(c, it->key, it->key_len);
				if (h == it->hold && h->epoch == it->epoch)
					h->renew_ask = 1;
				it->result = -2;
			}
		} else if (cnt > 0) {
			hl__fail(HL_EREDIS, "renewing: %.200s",
			         hl__reply_type(r) == HL_REPLY_ERROR
			                 ? hl__reply_str(r)
			                 : "unexpected reply");
		}
		hl__reply_free(r);
		for (j = 0; j < cnt; j++)
			renew_result(c, &f->items[first + j], f->sent_ms, now);
		if (f->got == f->nreplies) {
			l->head = f->next;
			if (!l->head)
				l->tail = NULL;
			flight_free(f);
		}
	}
	if (load) {
		hl_wd_flight *f = calloc(1, sizeof(*f));
		if (!f)
			return hl__fail(HL_ENOMEM, "out of memory");
		f->load = 1;
		f->nreplies = 1;
		f->sent_ms = now;
		if ((rc = flight_append(c, l, f)) != HL_OK) {
			free(f);
			return rc;
		}
		flight_push(l, f);
	}
	return HL_OK;
}

/* Send the renewals of items[0..n) on l's connection (made first if need
 * be, within deadline), without waiting for the replies: they are taken as
 * they come (take_replies). Caller holds hold_mu, which is let go only to
 * connect. In a cluster, items are all of one slot, and l is its
 * master's. */
static void renew_send(hl_client *c, hl_wd_link *l, renew_item *items, size_t n,
                       int64_t deadline)
{
	enum { K = HL_RENEW_KEYS_PER_EVAL };
	hl_wd_flight *f;
	size_t i;
	int rc, wrote;
	if (l->conn && !is_cluster(c) && hl__router_epoch(c) != l->epoch)
		wd_drop_conn(c, l, -2); /* the master changed: renew there */
	if (l->conn && !l->head && hl__conn_dead(l->conn)) {
		/* An idle connection the server closed (a restart, a
		 * timeout, a kill): a new one, before anything is sent. */
		hl__obs_conn_broke(c, NULL, NULL);
		wd_drop_conn(c, l, -1);
	}
	f = malloc(sizeof(*f) + n * sizeof(*items));
	if (!f) {
		hl__fail(HL_ENOMEM, "out of memory");
		goto fail;
	}
	memset(f, 0, sizeof(*f));
	memcpy(f->items, items, n * sizeof(*items));
	f->n = n;
	f->nreplies = (int)((n + K - 1) / K);
	for (i = 0; i < n; i++)
		f->items[i].result = -1;
	if (!l->conn) {
		hl_bound b;
		hl_conn *conn = NULL;
		uint64_t epoch = hl__router_epoch(c);
		hl_addr addr = l->addr;
		hl_wd_link *o;
		/* Close stops it; hl_client_interrupt() is for the user's
		 * calls. A cluster node that cannot be reached has the map
		 * loaded again (hl__router_connect). While the watchdog talks
		 * to other nodes too, connecting to one (a paused node
		 * accepts, then says nothing) may not keep their replies
		 * waiting for more than a tenth of the timeout. */
		for (o = c->wd_links; o; o = o->next)
			if (o != l && o->conn &&
			    hl__now_ms() + c->conf.watchdog_ms / 10 < deadline)
				deadline =
				        hl__now_ms() + c->conf.watchdog_ms / 10;
		hl__bound_init(&b, c, deadline, NULL, 0);
		pthread_mutex_unlock(&c->hold_mu);
		rc = is_cluster(c)
		             ? hl__router_connect(c, &addr, &conn, &b)
		             : hl__router_connect_master(c, &conn, &epoch, &b);
		pthread_mutex_lock(&c->hold_mu);
		if (rc != HL_OK) {
			f->got = 0;
			flight_end(c, f, -1);
			return;
		}
		l->conn = conn;
		l->epoch = epoch;
		l->replied = 0;
	}
	f->sent_ms = hl__now_ms();
	if ((rc = flight_append(c, l, f)) != HL_OK) {
		flight_end(c, f, -1);
		return;
	}
	flight_push(l, f);
	/* A renewal that may land sets how long Redis may keep the hold,
	 * even once it is released. */
	for (i = 0; i < n; i++) {
		renew_item *it = &f->items[i];
		hl_hold *h = find_key(c, it->key, it->key_len);
		if (h == it->hold && h->epoch == it->epoch &&
		    f->sent_ms > h->sent_max_ms)
			h->sent_max_ms = f->sent_ms;
	}
	if ((rc = hl__conn_write_some(l->conn, &wrote)) != HL_OK) {
		hl__obs_conn_broke(c, NULL, NULL);
		wd_drop_conn(c, l, l->replied ? -2 : -1);
	}
	return;
fail:
	for (i = 0; i < n; i++) {
		items[i].result = -1;
		renew_result(c, &items[i], hl__now_ms(), hl__now_ms());
		free(items[i].key);
	}
}

/* Cluster: a script may only touch keys of one slot, so the renewals go
 * per slot (up to 100 keys each), each to its slot's master as the map
 * has it, pipelined on the watchdog's connection to that master like
 * renew_send (a MOVED reply moves them on). Caller holds hold_mu, which is
 * let go only to connect or to load the map. */
static int cmp_slot(const void *a, const void *b)
{
	const renew_item *x = a, *y = b;
	unsigned sx = hl__slot(x->key + HL_HOLD_KEY_HDR,
	                       x->key_len - HL_HOLD_KEY_HDR);
	unsigned sy = hl__slot(y->key + HL_HOLD_KEY_HDR,
	                       y->key_len - HL_HOLD_KEY_HDR);
	if (x->ask != y->ask)
		return x->ask - y->ask;
	return sx < sy ? -1 : sx > sy;
}

/* Renew items[0..n) (one slot's) through the router and wait for it: a
 * slot that migrates (ASK, TRYAGAIN). The round trip is cut after a tenth of
 * the timeout, so that the holds of the heap are not kept waiting (each falls
 * due a tenth of the timeout from now at the earliest); a migration is
 * short. Caller holds hold_mu, let go meanwhile. */
static void renew_routed(hl_client *c, renew_item *items, size_t n,
                         int64_t deadline)
{
	enum { K = HL_RENEW_KEYS_PER_EVAL };
	const char *args[3 * K + 1];
	size_t lens[3 * K + 1], j;
	char lease[24];
	hl_reply *r = NULL;
	hl_bound b;
	int64_t sent_ms, now = hl__now_ms();
	if (now + c->conf.watchdog_ms / 10 < deadline)
		deadline = now + c->conf.watchdog_ms / 10;
	hl__bound_init(&b, c, deadline, NULL, 0);
	snprintf(lease, sizeof(lease), "%lld", (long long)c->conf.watchdog_ms);
	for (j = 0; j < n; j++) {
		items[j].result = -1;
		args[j] = items[j].key + HL_HOLD_KEY_HDR;
		lens[j] = items[j].key_len - HL_HOLD_KEY_HDR;
		args[n + 1 + 2 * j] = items[j].field;
		lens[n + 1 + 2 * j] = strlen(items[j].field);
		args[n + 2 + 2 * j] = items[j].read ? "r" : "";
		lens[n + 2 + 2 * j] = items[j].read ? 1 : 0;
	}
	args[n] = lease;
	lens[n] = strlen(lease);
	pthread_mutex_unlock(&c->hold_mu);
	sent_ms = hl__now_ms();
	if (hl__eval(c, &r, HL_SCRIPT_RENEW, (int)n, (int)(3 * n + 1), args,
	             lens, HL_CMD_IDEMPOTENT, NULL, &b, NULL) == HL_OK &&
	    hl__reply_type(r) == HL_REPLY_ARRAY)
		for (j = 0; j < hl__reply_len(r) && j < n; j++)
			items[j].result =
			        hl__reply_int(hl__reply_at(r, j)) ? 1 : 0;
	hl__reply_free(r);
	pthread_mutex_lock(&c->hold_mu);
	now = hl__now_ms();
	for (j = 0; j < n; j++) {
		renew_item *it = &items[j];
		hl_hold *h = find_key(c, it->key, it->key_len);
		if (h == it->hold && h->epoch == it->epoch) {
			/* A renewal that may have landed sets how long
			 * Redis may keep the hold, even while it is
			 * released. */
			if (it->result != 0 && sent_ms > h->sent_max_ms)
				h->sent_max_ms = sent_ms;
			if (it->result == 1)
				h->renew_ask = 0; /* the next one as usual */
		}
		renew_result(c, it, sent_ms, now);
		free(it->key);
	}
}

static void renew_send_cluster(hl_client *c, renew_item *items, size_t n,
                               int64_t deadline)
{
	enum { K = HL_RENEW_KEYS_PER_EVAL };
	size_t i = 0, j;
	qsort(items, n, sizeof(*items), cmp_slot);
	while (i < n) {
		const char *key = items[i].key + HL_HOLD_KEY_HDR;
		size_t klen = items[i].key_len - HL_HOLD_KEY_HDR, cnt = 0;
		unsigned slot = hl__slot(key, klen);
		hl_wd_link *l = NULL;
		hl_addr addr;
		uint64_t epoch;
		int rc = HL_OK;
		/* one key a script through the router (see renew_routed) */
		while (i + cnt < n && cnt < (items[i].ask ? 1 : K) &&
		       items[i + cnt].ask == items[i].ask &&
		       hl__slot(items[i + cnt].key + HL_HOLD_KEY_HDR,
		                items[i + cnt].key_len - HL_HOLD_KEY_HDR) ==
		               slot)
			cnt++;
		if (items[i].ask) {
			renew_routed(c, items + i, cnt, deadline);
			i += cnt;
			continue;
		}
		if (hl__router_node_cached(c, key, klen, &addr, &epoch) != 0) {
			/* not in the map: load it (within deadline) */
			hl_bound b;
			hl__bound_init(&b, c, deadline, NULL, 0);
			pthread_mutex_unlock(&c->hold_mu);
			rc = hl__router_node_for_key(c, key, klen, &addr,
			                             &epoch, &b);
			pthread_mutex_lock(&c->hold_mu);
		}
		if (rc == HL_OK && !(l = link_for(c, &addr)))
			hl__fail(HL_ENOMEM, "out of memory");
		if (l) {
			renew_send(c, l, items + i, cnt, deadline);
		} else {
			int64_t now = hl__now_ms();
			for (j = i; j < i + cnt; j++) {
				items[j].result = -1;
				renew_result(c, &items[j], now, now);
				free(items[j].key);
			}
		}
		i += cnt;
	}
}

/* How long after one renewal of a hold the next goes: a third of the
 * timeout, as Redisson does. While replies are slow (more than a tenth of
 * the timeout), a tenth: a reply then confirms a lease sent at most a tenth
 * before the one confirmed last, so round trips up to 0.8 of the timeout
 * keep the hold (its loss deadline is the last confirmed renewal's sending
 * time plus 0.9 of the timeout). A round trip that grows at once from fast
 * to slow is ridden out up to 0.9 - 1/3 of the timeout. */
static int64_t wd_interval(const hl_client *c)
{
	return wd_slow(c) ? c->conf.watchdog_ms / 10 : c->conf.watchdog_ms / 3;
}

/* The watchdog thread. Holds fall due in the heap (a renewal, a loss
 * deadline, the end of a lease); due renewals go out in one batch, and the
 * replies of batches in flight are taken as they come, while waiting for
 * the next thing due. A batch without a reply for the command timeout
 * breaks the connection (its renewals count as unanswered, and are sent
 * again on a new one). */
static void *wd_main(void *arg)
{
	hl_client *c = arg;
	renew_item *items = NULL;
	int cluster = c->conf.url.topology == HL_TOPO_CLUSTER;
	hl__thread_name("hl-watchdog");
	pthread_mutex_lock(&c->hold_mu);
	while (!c->wd_stop) {
		int64_t now = hl__now_ms(), io_deadline;
		int64_t interval, window;
		size_t n = 0, i;
		hl_wd_link *l;
		int again = 0, npoll = 0;
		for (l = c->wd_links; l; l = l->next) {
			if (l->head &&
			    now >= l->head->sent_ms +
			                    c->conf.command_timeout_ms) {
				hl__fail(HL_EIO, "no answer within %lld ms",
				         (long long)c->conf.command_timeout_ms);
				hl__obs_conn_broke(c, NULL, NULL);
				wd_drop_conn(c, l, -1);
				again = 1;
			} else if (l->conn && !cluster &&
			           hl__router_epoch(c) != l->epoch) {
				/* the master changed: renew there */
				wd_drop_conn(c, l, -2);
				again = 1;
			} else if (l->head) {
				if (now - l->head->sent_ms >
				    c->conf.watchdog_ms / 10)
					l->slow = 1; /* a reply is late: see
					                wd_interval */
				npoll++;
			}
		}
		if (again)
			continue;
		if (c->heap_len == 0 || c->heap[0]->due_ms > now) {
			int64_t until = now + c->conf.watchdog_ms / 3;
			if (c->heap_len > 0 && c->heap[0]->due_ms < until)
				until = c->heap[0]->due_ms;
			if (npoll > 0) {
				/* Replies to come: wait for them too, on every
				 * connection that has some in flight. */
				hl_conn *stack_conns[8], **conns = stack_conns;
				hl_wd_link *stack_links[8],
				        **links = stack_links;
				int stack_rcs[8], *rcs = stack_rcs, k = 0, rc;
				if (npoll > 8) {
					conns = malloc((size_t)npoll *
					               sizeof(*conns));
					links = malloc((size_t)npoll *
					               sizeof(*links));
					rcs = malloc((size_t)npoll *
					             sizeof(*rcs));
				}
				if (!conns || !links || !rcs) {
					/* out of memory: wait a little */
					if (conns != stack_conns) {
						free(conns);
						free(links);
						free(rcs);
					}
					hl__cond_wait_until(&c->wd_cond,
					                    &c->hold_mu,
					                    now + 10);
					continue;
				}
				for (l = c->wd_links; l; l = l->next) {
					int64_t late;
					if (!l->head)
						continue;
					late = l->head->sent_ms +
					       (l->slow ? c->conf.command_timeout_ms
					                : c->conf.watchdog_ms /
					                                  10 +
					                          1);
					if (late < until)
						until = late;
					links[k] = l;
					conns[k++] = l->conn;
				}
				c->wd_sleep_until = until;
				c->wd_polling = 1;
				pthread_mutex_unlock(&c->hold_mu);
				rc = hl__conn_pump_n(conns, rcs, k,
				                     c->wd_wake.rfd,
				                     until - now);
				if (c->wd_wake_ok)
					hl__notify_clear(&c->wd_wake);
				pthread_mutex_lock(&c->hold_mu);
				c->wd_polling = 0;
				c->wd_sleep_until = INT64_MIN;
				for (i = 0; rc == HL_OK && i < (size_t)k; i++) {
					int lrc = rcs[i];
					l = links[i];
					if (lrc == HL_OK)
						lrc = take_replies(c, l);
					if (lrc != HL_OK) {
						/* Renewal is idempotent: what a
						 * connection that worked had in
						 * flight goes again at once on
						 * a new one. */
						hl__obs_conn_broke(c, NULL,
						                   NULL);
						wd_drop_conn(c, l,
						             l->replied ? -2
						                        : -1);
					}
				}
				if (conns != stack_conns) {
					free(conns);
					free(links);
					free(rcs);
				}
				continue;
			}
			c->wd_sleep_until = until;
			hl__cond_wait_until(&c->wd_cond, &c->hold_mu, until);
			c->wd_sleep_until =
			        INT64_MIN; /* awake: rereads the heap */
			continue;
		}
		/* Collect what is due, and what falls due within a tenth of
		 * the timeout: renewing those a little early lets locks taken
		 * at different moments share round trips (10,000 locks taken
		 * over a second renew in a handful of pipelined trips). The
		 * window is shorter than the interval between renewals, so a
		 * hold renewed now is not due again within it. */
		interval = wd_interval(c);
		window = c->conf.watchdog_ms / 10;
		if (window > interval / 2)
			window = interval / 2;
		while (c->heap_len > 0 && n < HL_RENEW_BATCH &&
		       c->heap[0]->due_ms <= now + window) {
			hl_hold *h = c->heap[0];
			if (!h->watchdog && h->due_ms > now)
				break; /* a lease: told and forgotten once over
				        */
			if (h->watchdog && h->renew_at > now + window &&
			    h->due_ms > now)
				break; /* its loss deadline, not yet */
			if (n == c->renew_cap) {
				/* Grown on demand: a client holding few locks
				 * keeps a small buffer. */
				size_t cap =
				        c->renew_cap ? c->renew_cap * 2 : 16;
				renew_item *ni;
				if (cap > HL_RENEW_BATCH)
					cap = HL_RENEW_BATCH;
				ni = realloc(c->renew_items, cap * sizeof(*ni));
				if (!ni)
					break;
				c->renew_items = ni;
				c->renew_cap = cap;
			}
			items = c->renew_items;
			heap_remove(c, h);
			if (!h->watchdog) {
				if (h->count > 0 && !h->lost &&
				    h->lease_ms > 0) {
					/* Its fixed lease ended, not released:
					 * lost (an operation running on it
					 * decides when it ends). */
					if (!is_lost(c, h, now) && !h->busy)
						schedule(c, h, h->expires_ms);
					continue;
				}
				/* A lease hold whose lease ended, remembered
				 * for a while so that a late release hears
				 * it was lost; then forgotten, so that locks
				 * left to their leases cost nothing for long
				 * (unless its lost fd was handed out: kept,
				 * like any lost hold, until released). */
				if (h->count > 0 && now < forget_at(h))
					schedule(c, h, forget_at(h));
				else if (!h->busy &&
				         !(h->lost && h->lost_fd.rfd >= 0))
					hold_free(c, h);
				continue;
			}
			if (is_lost(c, h, now))
				continue; /* its loss deadline came first */
			if (h->renew_at > now + window) {
				/* a loss deadline passed that a reply moved
				 * on meanwhile: back to waiting */
				wd_reschedule(c, h);
				continue;
			}
			items[n].hold = h;
			items[n].epoch = h->epoch;
			items[n].key = malloc(h->key_len);
			if (!items[n].key) {
				h->renew_at = now + 100;
				wd_reschedule(c, h);
				break;
			}
			memcpy(items[n].key, h->key, h->key_len);
			items[n].key_len = h->key_len;
			memcpy(items[n].field, h->field, sizeof(h->field));
			items[n].read = h->read;
			items[n].ask = h->renew_ask;
			/* the next one goes a third of the timeout later,
			 * whatever becomes of this one */
			h->renew_at = now + interval;
			wd_reschedule(c, h);
			n++;
		}
		if (n == 0)
			continue;
		/* Connecting (or loading a cluster's map) may not outlast the
		 * first loss deadline of the batch: that holder must be told
		 * in time. The replies are waited for without a deadline of
		 * their own but the command timeout: a slow reply that comes
		 * still confirms the lease from when its renewal was sent. */
		io_deadline = now + c->conf.command_timeout_ms;
		for (i = 0; i < n; i++)
			if (loss_deadline(c, items[i].hold) < io_deadline)
				io_deadline = loss_deadline(c, items[i].hold);
		if (cluster) {
			renew_send_cluster(c, items, n, io_deadline);
		} else if ((l = link_for(c, NULL))) {
			renew_send(c, l, items, n, io_deadline);
		} else {
			hl__fail(HL_ENOMEM, "out of memory");
			for (i = 0; i < n; i++) {
				items[i].result = -1;
				renew_result(c, &items[i], now, now);
				free(items[i].key);
			}
		}
	}
	wd_flights_free(c);
	pthread_mutex_unlock(&c->hold_mu);
	return NULL;
}

int hl__watchdog_start(hl_client *c)
{
	int rc;
	c->wd_sleep_until = INT64_MIN;
	if (hl__notify_open(&c->wd_wake, 0) < 0)
		return hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		                strerror(errno));
	c->wd_wake_ok = 1;
	rc = pthread_create(&c->wd_thread, NULL, wd_main, c);
	if (rc != 0) {
		hl__notify_close(&c->wd_wake);
		c->wd_wake_ok = 0;
		return hl__fail(HL_ESYSTEM, "starting the watchdog thread: %s",
		                strerror(rc));
	}
	return HL_OK;
}

void hl__watchdog_kick(hl_client *c)
{
	pthread_mutex_lock(&c->hold_mu);
	wd_wake(c);
	pthread_mutex_unlock(&c->hold_mu);
}

void hl__watchdog_stop(hl_client *c)
{
	pthread_mutex_lock(&c->hold_mu);
	c->wd_stop = 1;
	wd_wake(c);
	pthread_mutex_unlock(&c->hold_mu);
	pthread_join(c->wd_thread, NULL);
}
