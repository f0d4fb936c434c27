/*
 * The semaphore (Redisson RSemaphore, PROTOCOL 8): a counter of permits
 * <name> and the channel redisson_sc:{name}, on which every change of the
 * count is published. Taking permits waits through the operation engine:
 * this client's waiters queue FIFO per name and only the first competes;
 * a message wakes it.
 *
 * Across processes, waiters queue in hilock's line beside Redisson's state
 * (prim/line.h, docs/PROTOCOL.md): permits go to the first in line, and a
 * release wakes one waiting process, not all of them.
 *
 * Permits have no owner in Redis. The client counts the permits it took
 * and has not given back, and refuses to give back more (HL_ENOTHELD):
 * permits released twice would let more holders in than the semaphore
 * allows. hl_semaphore_add_permits() changes the number of permits on
 * purpose.
 */
#include "prim/line.h"
#include "prim/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hl_semaphore {
	hl_named o;
	hl_line_keys keys; /* derived once: every release names them */
};

/* ---- the permits this client holds ----------------------------------- */

/* Add delta to the permits this client holds of o (hold_mu). With a
 * negative delta beyond what it holds: -1 and nothing changes. */
static int held_add(const hl_named *o, int64_t delta)
{
	hl_client *c = o->client;
	int64_t *v;
	int rc = 0;
	pthread_mutex_lock(&c->hold_mu);
	v = hl__map_get(&c->permits, o->name, o->name_len);
	if (!v && delta > 0) {
		v = calloc(1, sizeof(*v));
		if (v && hl__map_put(&c->permits, o->name, o->name_len, v)) {
			free(v);
			v = NULL;
		}
		if (!v)
			rc = -2;
	}
	if (rc == 0 && (v ? *v : 0) + delta < 0)
		rc = -1;
	if (rc == 0 && v) {
		*v += delta;
		if (*v == 0) {
			hl__map_del(&c->permits, o->name, o->name_len);
			free(v);
		}
	}
	pthread_mutex_unlock(&c->hold_mu);
	return rc;
}

static int64_t held_get(const hl_named *o)
{
	int64_t *v, n;
	pthread_mutex_lock(&o->client->hold_mu);
	v = hl__map_get(&o->client->permits, o->name, o->name_len);
	n = v ? *v : 0;
	pthread_mutex_unlock(&o->client->hold_mu);
	return n;
}

void hl__permits_free_all(hl_client *c)
{
	size_t i;
	hl_map_entry *e;
	for (i = 0; i < c->permits.nbuckets; i++)
		for (e = c->permits.buckets[i]; e; e = e->next)
			free(e->value);
	hl__map_clear(&c->permits);
}

/* ---- scripts ------------------------------------------------------------- */

/* How a script goes with the line: not at all, an acquire that is one
 * attempt, an acquire that waits (takes a place), a release. */
enum { LINE_NONE = 0, LINE_ONCE, LINE_WAIT, LINE_RELEASE };

/* One of the semaphore's scripts with n: KEYS the counter, the channel and
 * a request marker (a new one, or the one of id when id is not NULL);
 * ARGV n, the publish command, the line's arguments (how: LINE_*; none
 * for LINE_NONE), the marker's lifetime. *sent (may be NULL) as
 * hl__command's. */
static int sem_call_line(const hl_named *o, int64_t *out, enum hl_script_id id,
                         int64_t n, const hl_line_keys *k, int how,
                         const char *marker_id, const hl_bound *b,
                         int *replicated, enum hl_sent *sent, const char *doing)
{
	script_args a;
	int rc;
	memset(&a, 0, sizeof(a));
	arg(&a, o->name, o->name_len);
	arg(&a, o->channel, o->channel_len);
	rc = marker_id ? hl__object_marker_id(&a, o, marker_id)
	               : hl__object_marker(&a, o);
	if (rc != HL_OK)
		return rc;
	a.nkeys = 3;
	arg_str(&a, num(a.nums[0], n));
	arg_str(&a, hl__router_publish(o->client));
	if (how == LINE_ONCE || how == LINE_WAIT) {
		arg_str(&a, how == LINE_WAIT ? "1" : "0");
		arg_str(&a, num(a.nums[1], HL_LINE_LEASE_MS));
		arg(&a, o->client->id, HL_UUID_LEN);
	}
	if (how != LINE_NONE) {
		arg(&a, k->line, k->line_len);
		arg(&a, k->dl, k->dl_len);
	}
	arg_str(&a, hl__object_marker_ttl(&a, o));
	return hl__object_eval(o, out, id, &a, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
	                       b, replicated, sent, doing);
}

/* A script of the semaphore without the line (see sem_call_line). */
static int sem_call_id(const hl_named *o, int64_t *out, enum hl_script_id id,
                       int64_t n, const char *marker_id, const hl_bound *b,
                       int *replicated, enum hl_sent *sent, const char *doing)
{
	return sem_call_line(o, out, id, n, NULL, LINE_NONE, marker_id, b,
	                     replicated, sent, doing);
}

static int sem_call(const hl_named *o, int64_t *out, enum hl_script_id id,
                    int64_t n, const hl_bound *b, int *replicated,
                    const char *doing)
{
	return sem_call_id(o, out, id, n, NULL, b, replicated, NULL, doing);
}

/* Give n permits back in Redis (no accounting). */
static int give_back(const hl_named *o, int64_t n, const hl_bound *b)
{
	int64_t v;
	return sem_call(o, &v, HL_SCRIPT_SEM_RELEASE, n, b, NULL, "releasing");
}

/* One attempt to take n: *acquired. Taken without a replica's
 * confirmation (WAIT) is given back and tried again, as Redisson does. An
 * attempt cut short (its wait ended, a cancel, the network) after it may
 * have run is taken back through its request marker: the permits go back
 * if it took them, and a copy still on its way can no longer take any. */
static int take(const hl_named *o, int64_t n, const hl_line_keys *k, int how,
                const hl_bound *b, int *acquired, int64_t *answer)
{
	hl_client *c = o->client;
	char marker[33];
	enum hl_sent sent;
	int64_t v = 0;
	int rc, replicated, tries = 0;
	for (;;) {
		replicated = -1;
		sent = HL_SENT_NOTHING;
		*acquired = 0;
		hl__random_hex(marker);
		rc = sem_call_line(o, &v, HL_SCRIPT_SEM_LINE_ACQUIRE, n, k, how,
		                   marker, b, &replicated, &sent,
		                   "acquiring permits of");
		*answer = rc == HL_OK ? v : 0;
		if (rc != HL_OK && sent != HL_SENT_NOTHING &&
		    rc != HL_ECLOSED) {
			int64_t undone;
			char msg[512];
			snprintf(msg, sizeof(msg), "%s", hl_error_last());
			sem_call_id(o, &undone, HL_SCRIPT_SEM_UNDO, n, marker,
			            NULL, NULL, NULL, "taking back permits of");
			hl__fail(rc, "%s", msg);
		}
		if (rc != HL_OK || v != 1)
			return rc;
		if (replicated != 0)
			break;
		if ((rc = give_back(o, n, b)) != HL_OK)
			return rc;
		if (tries++ >= c->conf.retry_attempts)
			return hl__fail(
			        HL_EIO,
			        "acquiring permits: no replica "
			        "confirmed it within %lld ms (WAIT), so "
			        "they were given back",
			        (long long)c->conf.wait_timeout_ms);
		if ((rc = hl__pause(
		             c, hl__jitter_delay(c->conf.retry_delay_ms, tries),
		             b)) != HL_OK)
			return rc;
	}
	if (held_add(o, n) == -2) {
		give_back(o, n, b);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	*acquired = 1;
	return HL_OK;
}

/* ---- waiting ------------------------------------------------------------- */

typedef struct sem_ctx {
	hl_line_wait w; /* first: the line's ops take the context as one */
	int64_t n;
} sem_ctx;

static int sem_attempt(void *arg, const hl_bound *b, int *acquired,
                       int64_t *retry_ms)
{
	sem_ctx *x = arg;
	int64_t answer = 0;
	int rc = take(x->w.o, x->n, &x->w.keys,
	              x->w.in_line ? LINE_WAIT : LINE_ONCE, b, acquired,
	              &answer);
	*retry_ms = -1; /* a release tells the first, publishes the count */
	if (rc == HL_OK && x->w.in_line) {
		/* -(2 x ticket + first): in line, renewed by the next attempt
		 */
		int64_t t = answer < 0 ? -answer : 0;
		hl__line_note(&x->w.line, t / 2, t % 2 == 1, 1);
		if (answer < 0)
			*retry_ms = HL_LINE_LEASE_MS / 2;
	}
	return rc;
}

static void sem_undo(void *arg, const hl_bound *b)
{
	sem_ctx *x = arg;
	if (held_add(x->w.o, -x->n) == 0)
		give_back(x->w.o, x->n, b);
}

static void sem_free(void *arg)
{
	sem_ctx *x = arg;
	hl__line_wait_fini_locked(&x->w); /* under wait_mu, by the engine */
	free(x);
}

static const hl_wait_ops sem_wait_ops = {sem_attempt, sem_undo, NULL, sem_free,
                                         NULL};
static const hl_wait_ops sem_line_ops = {sem_attempt, sem_undo,
                                         hl__line_wait_give_up, sem_free,
                                         hl__line_wait_wants};

/* A wait for n permits of s until deadline; *spec owns a new context. */
static int wait_spec(hl_wait_spec *spec, const hl_semaphore *s, int64_t n,
                     int64_t wait_ms)
{
	sem_ctx *x = calloc(1, sizeof(*x));
	int rc;
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	/* a wait takes a place in the line; one attempt does not */
	if ((rc = hl__line_wait_init(&x->w, &s->o, wait_ms != 0)) != HL_OK) {
		free(x);
		return rc;
	}
	x->n = n;
	hl__object_wait_spec(spec, x->w.o,
	                     x->w.in_line ? &sem_line_ops : &sem_wait_ops, x, 1,
	                     wait_ms);
	hl__line_wait_spec(spec, &x->w);
	return HL_OK;
}

/* ---- public ----------------------------------------------------------------
 */

static int sem_enter(const hl_semaphore *s)
{
	if (!s)
		return hl__fail(HL_EINVAL, "semaphore is NULL");
	return hl__object_enter(&s->o);
}

int hl_semaphore_new(hl_semaphore **out, hl_client *client, const void *name,
                     size_t name_len)
{
	void *h = NULL;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	rc = hl__object_new(&h, sizeof(hl_semaphore), client, name, name_len,
	                    "redisson_sc:", 0, NULL, "semaphore");
	if (rc != HL_OK)
		return rc;
	if ((rc = hl__line_keys_init(
	             &((hl_semaphore *)h)->keys, ((hl_semaphore *)h)->o.name,
	             ((hl_semaphore *)h)->o.name_len)) != HL_OK) {
		hl_semaphore_free(h);
		return rc;
	}
	*out = h;
	return HL_OK;
}

void hl_semaphore_free(hl_semaphore *sem)
{
	if (!sem)
		return;
	hl__line_keys_free(&sem->keys);
	hl__object_fini(&sem->o);
	free(sem);
}

int hl_semaphore_try_acquire_start(hl_task **out, hl_semaphore *sem,
                                   int64_t permits, int64_t wait_ms)
{
	hl_wait_spec spec;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = hl__check_permits(permits, 1, "permits")) != HL_OK ||
	    (rc = hl__check_wait(wait_ms)) != HL_OK)
		return rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	if ((rc = wait_spec(&spec, sem, permits, wait_ms)) == HL_OK)
		rc = hl__task_wait_start(out, sem->o.client, &spec);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_semaphore_try_acquire(int *out_acquired, hl_semaphore *sem,
                             int64_t permits, int64_t wait_ms,
                             hl_cancel *cancel)
{
	hl_wait_spec spec;
	int rc;
	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if ((rc = hl__check_permits(permits, 0, "permits")) != HL_OK ||
	    (rc = hl__check_wait(wait_ms)) != HL_OK)
		return rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	if (permits == 0) { /* as Redisson: true, without a round trip */
		hl__client_leave(sem->o.client);
		*out_acquired = 1;
		return HL_OK;
	}
	if ((rc = wait_spec(&spec, sem, permits, wait_ms)) != HL_OK) {
		hl__client_leave(sem->o.client);
		return rc;
	}
	return hl__object_wait(sem->o.client, &spec, cancel, out_acquired);
}

int hl_semaphore_acquire(hl_semaphore *sem, int64_t permits, hl_cancel *cancel)
{
	int acquired = 0;
	int rc = hl_semaphore_try_acquire(&acquired, sem, permits, -1, cancel);
	if (rc == HL_OK && !acquired)
		rc = hl__fail(HL_ETIMEDOUT, "permits not acquired");
	return rc;
}

int hl_semaphore_release(hl_semaphore *sem, int64_t permits)
{
	char label[80];
	enum hl_sent sent = HL_SENT_NOTHING;
	int64_t v;
	int rc;
	if ((rc = hl__check_permits(permits, 0, "permits")) != HL_OK)
		return rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	if (permits == 0)
		goto out;
	if (held_add(&sem->o, -permits) != 0) {
		rc = hl__fail(HL_ENOTHELD,
		              "semaphore \"%s\": this client holds %lld "
		              "permits and cannot give back %lld (to change "
		              "how many there are, add permits)",
		              hl__object_label(&sem->o, label, sizeof(label)),
		              (long long)held_get(&sem->o), (long long)permits);
		goto out;
	}
	rc = sem_call_line(&sem->o, &v, HL_SCRIPT_SEM_LINE_RELEASE, permits,
	                   &sem->keys, LINE_RELEASE, NULL, NULL, NULL, &sent,
	                   "releasing permits of");
	if (rc == HL_OK || (rc == HL_ECLOSED && sent != HL_SENT_NOTHING))
		;
	else if (sent == HL_SENT_NOTHING)
		held_add(&sem->o, permits); /* still ours: nothing was sent */
	else
		/* Sent, maybe run, never confirmed (every resend carried the
		 * same marker, so it ran at most once). Counted as given back:
		 * given back again, a permit could let one holder too many
		 * in; if it was lost, the semaphore has one permit fewer,
		 * which hl_semaphore_add_permits() can restore. */
		rc = hl__fail_wrap(
		        HL_EINDOUBT,
		        "releasing %lld permits of semaphore \"%s\" "
		        "was not confirmed: Redis may or may not have "
		        "them back; they no longer count as this "
		        "client's",
		        (long long)permits,
		        hl__object_label(&sem->o, label, sizeof(label)));
out:
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_semaphore_held(int64_t *out, hl_semaphore *sem)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	*out = held_get(&sem->o);
	hl__client_leave(sem->o.client);
	return HL_OK;
}

/* A call of one script with n and an integer answer. */
static int sem_simple(hl_semaphore *sem, int64_t *out, enum hl_script_id id,
                      int64_t n, const char *doing)
{
	int rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	rc = sem_call(&sem->o, out, id, n, NULL, NULL, doing);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_semaphore_try_set_permits(int *out_set, hl_semaphore *sem,
                                 int64_t permits)
{
	int64_t v = 0;
	int rc = hl__check_permits(permits, 0, "permits");
	if (rc == HL_OK)
		rc = sem_simple(sem, &v, HL_SCRIPT_SEM_TRY_SET, permits,
		                "setting the permits of");
	if (rc == HL_OK && out_set)
		*out_set = v == 1;
	return rc;
}

int hl_semaphore_set_permits(hl_semaphore *sem, int64_t permits)
{
	int64_t v;
	int rc = hl__check_permits(permits, 0, "permits");
	return rc == HL_OK ? sem_simple(sem, &v, HL_SCRIPT_SEM_SET, permits,
	                                "setting the permits of")
	                   : rc;
}

int hl_semaphore_add_permits(int64_t *out_available, hl_semaphore *sem,
                             int64_t delta)
{
	int64_t v = 0;
	int rc;
	if (delta < -HL_TIME_MAX || delta > HL_TIME_MAX)
		return hl__fail(HL_EINVAL, "delta = %lld: use -2^40 to 2^40",
		                (long long)delta);
	rc = sem_simple(sem, &v, HL_SCRIPT_SEM_ADD, delta, "adding permits to");
	if (rc == HL_OK && out_available)
		*out_available = v;
	return rc;
}

int hl_semaphore_drain(int64_t *out_drained, hl_semaphore *sem)
{
	int64_t v = 0;
	int rc = sem_simple(sem, &v, HL_SCRIPT_SEM_DRAIN, 0,
	                    "draining the permits of");
	if (rc == HL_OK) {
		/* drained permits are this client's to give back */
		if (v > 0 && held_add(&sem->o, v) == -2)
			rc = hl__fail(HL_ENOMEM, "out of memory");
		if (out_drained)
			*out_drained = v;
	}
	return rc;
}

int hl_semaphore_available(int64_t *out, hl_semaphore *sem)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	rc = hl__object_get(&sem->o, out, "reading the permits of");
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_semaphore_delete(int *out_existed, hl_semaphore *sem)
{
	int rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	rc = hl__object_delete(&sem->o, out_existed);
	hl__client_leave(sem->o.client);
	return rc;
}

/* ---- for the adders (grid/adder.c) ----------------------------------------
 */

int hl__semaphore_give(hl_semaphore *sem, int64_t permits, const hl_bound *b)
{
	int64_t v;
	int rc;
	if ((rc = sem_enter(sem)) != HL_OK)
		return rc;
	rc = sem_call(&sem->o, &v, HL_SCRIPT_SEM_RELEASE, permits, b, NULL,
	              "releasing permits of");
	hl__client_leave(sem->o.client);
	return rc;
}

void hl__semaphore_forget(hl_semaphore *sem)
{
	held_add(&sem->o, -held_get(&sem->o));
}
