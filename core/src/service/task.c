/*
 * The operation engine. A wait is a record (a task), not a blocked thread:
 * a task waiting for a lock costs a few hundred bytes and no thread, so
 * 10,000 goroutines or asyncio tasks can wait at once.
 *
 * A task of the waiting kind moves through
 *
 *   gated      queued behind this client's earlier waiters for the name
 *              (FIFO: only the head competes in Redis, and a releaser
 *              cannot barge ahead of its neighbours)
 *   subscribed at the head: subscribed to the name's channel
 *   ready      due for an attempt (one round trip) on an executor
 *   parked     until a message on the channel, a timer (the holder's TTL,
 *              a backoff, the deadline) or a gate promotion
 *   done       its result kept for the caller
 *
 * Two executor threads per client run the attempts' round trips and the
 * timers. Everything else (a message, a promotion, a cancel, an interrupt,
 * close, a change of the holds) moves records under wait_mu and wakes an
 * executor. Completed tasks of non-blocking callers queue on the client,
 * behind a descriptor that is readable while the queue is not empty; a task
 * can also have its own. Blocking calls are a task and a wait on
 * it.
 *
 * A drive task is an operation made of other tasks (the multilock: a wait
 * for each member in turn, the members possibly of other clients). Its
 * step runs on an executor like an attempt, starts child tasks that name
 * it their parent, and runs again when one of them is done. A child of
 * another client tells it through an executor of the child's client, which
 * lets go of its own wait_mu first: no thread holds two clients' wait_mu
 * at once, so clients that wait on each other's members cannot deadlock.
 * A stop (cancel, interrupt, close) runs the step again to wind down, and
 * a closing client's executors stay until its drive tasks have ended.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HL_EXECUTORS 2
/* How often an executor waiting for a task looks for background work. */
#define HL_HELP_POLL_MS 5
#define HL_TASK_MSG_LEN 320
/* The longest the engine spends taking back an acquisition that a cancel
 * overtook: past it the acquisition's lease ends it. */
#define HL_UNDO_MAX_MS 500
#define NOT_IN_HEAP    ((size_t)-1)
/* How long a new waiter waits for Redis to confirm its subscription before
 * it attempts anyway (see subscribe()). */
#define HL_SUB_CONFIRM_WAIT_MS 100

enum { K_WAIT = 1, K_CALL, K_WATCH, K_DRIVE };
enum { S_PARKED = 1, S_READY, S_RUNNING, S_DONE };
/* phases of K_WAIT */
enum { P_GATED = 1, P_FRESH, P_SUBSCRIBED, P_GIVE_UP };

struct hl_task {
	hl_client *c;
	int kind, state, phase;
	int refs;  /* the user's (until hl_task_free), the engine's (until
	              done), an executor's (while it runs a step) */
	int user;  /* the user still has it */
	int queue; /* delivered through the client's queue */
	int queued;
	int stop; /* HL_OK, or why it must end (HL_EINTERRUPTED, HL_ECLOSED) */
	int status, result;
	atomic_int done;
	atomic_uint_fast64_t data;
	char msg[HL_TASK_MSG_LEN];
	hl_notify fd;    /* its own (hl_task_fd), not open until asked */
	hl_value *value; /* K_CALL's value (hl_task_value), NULL: none */
	/* K_WAIT: NULL, or what the wait took as its value (hl_wait_spec) */
	hl_value *(*wait_value)(void *arg);
	int once, attempted, outages, interruptible;
	/* The attempt made just before it subscribed: when it began
	 * (hl__now_us(); 0: none known) and the retry it answered. */
	int64_t tried_us, tried_retry_ms;
	/* K_WAIT: an attempt got an answer from Redis (taken, or an error
	 * reply); else since when none did, and the last attempt's error
	 * ("": no attempt failed for want of an answer). */
	int answered;
	int64_t outage_since_ms;
	char outage[HL_TASK_MSG_LEN];
	int waiting; /* counted in the client's waiting gauge */
	int caller;  /* a blocking caller waits for it and runs its steps
	                itself: when ready it is not in engine->ready, its
	                cond is signalled instead (one thread switch less
	                per wake-up) */
	/* its caller polls the subscriber connection (hl__pubsub_lead) and
	 * this, which wakes it as cond does (NULL: it waits on cond) */
	const hl_notify *lead;
	int kicked; /* K_DRIVE: something happened while its step ran */
	int chosen; /* K_WAIT: a message for it (hl_wait_ops.wants) came
	               while its attempt ran */
	uint64_t interrupt_gen;
	int64_t deadline_ms, io_deadline_ms;
	int64_t wake_ms; /* the timer (-1: none) */
	size_t heap_index;
	hl_cancel *cancel; /* trips the bound of the step in flight */
	pthread_cond_t cond;
	hl_dlink all_link;   /* engine->pending */
	hl_dlink q_link;     /* engine->ready, or engine->done */
	hl_dlink watch_link; /* engine->watches */
	hl_dlink gate_link;  /* gate->queue */
	hl_dlink sub_link;   /* sub->waiters */
	hl_gate *gate;
	hl_sub *sub;
	const void *channel; /* in arg; NULL: none */
	size_t channel_len;
	/* A K_DRIVE task to tell when this one is done (a reference of it is
	 * held until told); NULL: none. */
	struct hl_task *parent;
	union {
		const hl_wait_ops *wait;
		const hl_call_ops *call;
		const hl_watch_ops *watch;
		const hl_drive_ops *drive;
	} ops;
	void *arg;
};

typedef struct hl_engine {
	pthread_cond_t cond; /* executors sleep here */
	pthread_t threads[HL_EXECUTORS];
	int nthreads;
	int stop;
	hl_dlist pending; /* every task not done */
	hl_dlist watches; /* the watch tasks among them */
	atomic_int nwatches;
	hl_dlist ready;
	hl_task **heap; /* timers, min by wake_ms */
	size_t heap_len, heap_cap;
	hl_dlist done; /* completed, not yet taken */
	hl_notify fd;  /* the client's task fd, not open until asked */
	int rescan;    /* the holds changed during a check (see watch_eval) */
	/* Done tasks whose parent is a task of another client: an executor
	 * tells each parent under the parent's wait_mu, never holding two
	 * clients' wait_mu at once (q_link; each keeps the engine's
	 * reference until then). */
	hl_dlist notify;
	/* K_DRIVE tasks not done: the executors keep running for them after
	 * a close stopped the engine, so that they can give back what they
	 * took on other clients before they end. */
	int ndrives;
} hl_engine;

static hl_task *of(hl_dlink *l, size_t off)
{
	return (hl_task *)(void *)((char *)l - off);
}
#define TASK_OF(l, m) of((l), offsetof(hl_task, m))

static void fd_signal(hl_notify *fd)
{
	hl__notify_set(fd);
}

static void fd_drain(hl_notify *fd)
{
	hl__notify_clear(fd);
}

/* ---- timers: a heap by wake_ms, under wait_mu --------------------------- */

static void heap_swap(hl_engine *e, size_t a, size_t b)
{
	hl_task *t = e->heap[a];
	e->heap[a] = e->heap[b];
	e->heap[b] = t;
	e->heap[a]->heap_index = a;
	e->heap[b]->heap_index = b;
}

static void heap_up(hl_engine *e, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (e->heap[p]->wake_ms <= e->heap[i]->wake_ms)
			break;
		heap_swap(e, i, p);
		i = p;
	}
}

static void heap_down(hl_engine *e, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < e->heap_len &&
		    e->heap[l]->wake_ms < e->heap[m]->wake_ms)
			m = l;
		if (r < e->heap_len &&
		    e->heap[r]->wake_ms < e->heap[m]->wake_ms)
			m = r;
		if (m == i)
			return;
		heap_swap(e, i, m);
		i = m;
	}
}

static void heap_remove(hl_engine *e, hl_task *t)
{
	size_t i = t->heap_index;
	if (i == NOT_IN_HEAP)
		return;
	t->heap_index = NOT_IN_HEAP;
	t->wake_ms = -1;
	e->heap_len--;
	if (i == e->heap_len)
		return;
	e->heap[i] = e->heap[e->heap_len];
	e->heap[i]->heap_index = i;
	heap_down(e, i);
	heap_up(e, e->heap[i]->heap_index);
}

static int heap_push(hl_engine *e, hl_task *t)
{
	if (e->heap_len == e->heap_cap) {
		size_t cap = e->heap_cap ? e->heap_cap * 2 : 64;
		hl_task **n = realloc(e->heap, cap * sizeof(*n));
		if (!n)
			return -1;
		e->heap = n;
		e->heap_cap = cap;
	}
	t->heap_index = e->heap_len;
	e->heap[e->heap_len++] = t;
	heap_up(e, t->heap_index);
	return 0;
}

/* ---- moving records ----------------------------------------------------- */

static void make_ready(hl_engine *e, hl_task *t)
{
	heap_remove(e, t);
	if (t->state == S_READY)
		return;
	t->state = S_READY;
	if (t->caller) {
		pthread_cond_broadcast(&t->cond);
		if (t->lead)
			hl__notify_set(t->lead);
		return;
	}
	hl__dlist_push(&e->ready, &t->q_link);
	pthread_cond_signal(&e->cond);
}

/* Off the executors' queue, if it is on it. */
static void unready(hl_engine *e, hl_task *t)
{
	if (t->state == S_READY && !t->caller)
		hl__dlist_remove(&e->ready, &t->q_link);
}

/* Park t until wake (monotonic ms; -1: only an event moves it). */
static void park(hl_engine *e, hl_task *t, int64_t wake)
{
	heap_remove(e, t);
	unready(e, t);
	t->state = S_PARKED;
	if (wake < 0)
		return;
	t->wake_ms = wake;
	if (heap_push(e, t) != 0) {
		/* No memory for the timer: look again at once rather than
		 * never. */
		t->wake_ms = -1;
		make_ready(e, t);
		return;
	}
	if (t->heap_index == 0)
		pthread_cond_signal(&e->cond); /* an earlier timer */
}

static int gate_join(hl_client *c, hl_task *t, const void *name, size_t len)
{
	hl_gate *g = hl__map_get(&c->gates, name, len);
	if (!g) {
		g = calloc(1, sizeof(*g) + len);
		if (!g)
			return hl__fail(HL_ENOMEM, "out of memory");
		g->len = len;
		memcpy(g->name, name, len);
		if (hl__map_put(&c->gates, g->name, g->len, g) != 0) {
			free(g);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	t->gate = g;
	hl__dlist_push(&g->queue, &t->gate_link);
	return HL_OK;
}

static int sub_join(hl_client *c, hl_task *t, const void *channel, size_t len)
{
	hl_sub *s = hl__map_get(&c->subs, channel, len);
	if (!s) {
		s = calloc(1, sizeof(*s) + len);
		if (!s)
			return hl__fail(HL_ENOMEM, "out of memory");
		s->len = len;
		memcpy(s->channel, channel, len);
		if (hl__map_put(&c->subs, s->channel, s->len, s) != 0) {
			free(s);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	if (s->refs++ == 0)
		hl__pubsub_kick(c);
	t->sub = s;
	hl__dlist_push(&s->waiters, &t->sub_link);
	return HL_OK;
}

static void sub_leave(hl_client *c, hl_task *t)
{
	hl_sub *s = t->sub;
	if (!s)
		return;
	hl__dlist_remove(&s->waiters, &t->sub_link);
	t->sub = NULL;
	/* The subscriber thread unsubscribes and frees it (after a while:
	 * see subs_sync()). */
	if (--s->refs == 0) {
		s->idle_since = hl__now_ms();
		hl__pubsub_kick(c);
	}
}

static void complete(hl_client *c, hl_task *t, int status, int result,
                     const char *msg);
static void unref_locked(hl_task *t);

/* Something happened that a K_DRIVE task looks at (a child done, a stop):
 * its step runs again (caller holds its client's wait_mu). */
static void kick(hl_client *c, hl_task *t)
{
	if (t->state == S_DONE)
		return;
	if (t->state == S_RUNNING) {
		t->kicked = 1; /* looked at when the step returns */
		return;
	}
	make_ready(c->engine, t);
}

/* t is done: tell its parent. A parent of this client is told at once; one
 * of another client through e->notify, where t keeps the engine's
 * reference (returns 1: the caller keeps it too). */
static int tell_parent(hl_client *c, hl_task *t)
{
	hl_task *p = t->parent;
	if (p->c != c) {
		hl__dlist_push(&c->engine->notify, &t->q_link);
		pthread_cond_signal(&c->engine->cond);
		return 1;
	}
	t->parent = NULL;
	kick(c, p);
	/* Not the last reference: a parent ends only after it saw its
	 * children done, and its end takes this wait_mu, held here since t's
	 * completion began. */
	unref_locked(p);
	return 0;
}

static void count_waiting(hl_client *c, hl_task *t);
static void park_after(hl_client *c, hl_task *t, int64_t retry);

/* Competing now: subscribed (if the wait has a channel) and due for an
 * attempt, unless the attempt just made still stands. Caller holds
 * wait_mu.
 * - A subscription Redis has not confirmed yet: an attempt now would be
 *   wasted, since a release it misses sends its message before the
 *   subscription can receive it, and the attempt made when the
 *   confirmation comes (hl__task_sub_event) sees that release anyway. So
 *   the wait parks until then; a timer stands in for a confirmation that
 *   is slow to come (the subscriber reconnecting).
 * - An active subscription (another waiter's, or one that lingers after an
 *   earlier wait) that was active before the last attempt began and has
 *   had no message since (none for this wait, if it filters them): that
 *   attempt's "taken" still stands, and any release after it will wake
 *   the wait. It parks as after any attempt.
 * - Otherwise (a message came, or the subscription became active, since
 *   the attempt; or no attempt is known): attempt now. */
static int missed(hl_task *t)
{
	hl_sub *s = t->sub;
	if (!t->ops.wait->wants)
		return s->woke_us >= t->tried_us;
	/* a message it filters out does not concern it */
	return s->event_us >= t->tried_us ||
	       (s->msg_us >= t->tried_us &&
	        t->ops.wait->wants(t->arg, s->msg, s->msg_len));
}

static int subscribe(hl_client *c, hl_task *t)
{
	int rc = HL_OK;
	int64_t wake;
	t->phase = P_SUBSCRIBED;
	if (t->channel && !t->sub)
		rc = sub_join(c, t, t->channel, t->channel_len);
	if (rc != HL_OK)
		return rc;
	if (t->sub && t->sub->state != HL_SUB_ACTIVE) {
		wake = hl__now_ms() + HL_SUB_CONFIRM_WAIT_MS;
		if (t->deadline_ms >= 0 && t->deadline_ms < wake)
			wake = t->deadline_ms;
		park(c->engine, t, wake);
		return HL_OK;
	}
	if (t->sub && t->tried_us > 0 && !missed(t)) {
		count_waiting(c, t);
		park_after(c, t, t->tried_retry_ms);
		return HL_OK;
	}
	make_ready(c->engine, t);
	return HL_OK;
}

/* The new head of a gate competes now (it was parked until promoted or
 * its deadline). */
static void promote(hl_client *c, hl_task *t)
{
	if (t->phase != P_GATED || t->state == S_DONE)
		return;
	t->tried_us = 0; /* its attempt, if any, is old: try again */
	if (subscribe(c, t) != HL_OK)
		complete(c, t, HL_ENOMEM, 0, hl_error_last());
}

static void gate_leave(hl_client *c, hl_task *t)
{
	hl_gate *g = t->gate;
	if (!g)
		return;
	hl__dlist_remove(&g->queue, &t->gate_link);
	t->gate = NULL;
	if (g->queue.head) {
		promote(c, TASK_OF(g->queue.head, gate_link));
	} else {
		hl__map_del(&c->gates, g->name, g->len);
		free(g);
	}
}

/* Take t out of every queue, gate, subscription and timer. */
/* t waits now, for a message, a timer or its turn in the gate: counted in
 * the client's waiting gauge until it leaves (detach). */
static void count_waiting(hl_client *c, hl_task *t)
{
	if (!t->waiting) {
		t->waiting = 1;
		atomic_fetch_add(&c->obs.counters[HL_STAT_WAITING], 1);
	}
}

static void detach(hl_client *c, hl_task *t)
{
	hl_engine *e = c->engine;
	if (t->waiting) {
		t->waiting = 0;
		atomic_fetch_sub(&c->obs.counters[HL_STAT_WAITING], 1);
	}
	sub_leave(c, t);
	gate_leave(c, t);
	heap_remove(e, t);
	if (t->state == S_READY) {
		unready(e, t);
		t->state = S_PARKED;
	}
}

static void free_arg(hl_task *t, void *arg)
{
	if (t->kind == K_WAIT)
		t->ops.wait->free(arg);
	else if (t->kind == K_CALL)
		t->ops.call->free(arg);
	else if (t->kind == K_WATCH)
		t->ops.watch->free(arg);
	else
		t->ops.drive->free(arg);
}

static void task_destroy(hl_task *t)
{
	hl_client *c = t->c;
	hl__notify_close(&t->fd);
	if (c->fork_gen == atomic_load(&hl__fork_generation))
		pthread_cond_destroy(&t->cond);
	hl_cancel_free(t->cancel);
	hl_value_free(t->value);
	free(t);
	hl__client_unref(c);
}

/* Drop a reference held by the engine or an executor. The client outlives
 * this: the engine completes tasks only while the client runs, so the
 * user's reference to it (or a close in progress) is still there, and the
 * task's own reference is never the last one here. */
static void unref_locked(hl_task *t)
{
	if (--t->refs == 0)
		task_destroy(t);
}

static void complete(hl_client *c, hl_task *t, int status, int result,
                     const char *msg)
{
	hl_engine *e = c->engine;
	void *arg = t->arg;
	if (t->state == S_DONE)
		return;
	detach(c, t);
	hl__dlist_remove(&e->pending, &t->all_link);
	if (t->kind == K_WATCH) {
		hl__dlist_remove(&e->watches, &t->watch_link);
		atomic_fetch_sub(&e->nwatches, 1);
	}
	t->status = status;
	t->result = status == HL_OK ? result : 0;
	if (status == HL_OK)
		t->msg[0] = '\0';
	else if (msg != t->msg)
		snprintf(t->msg, sizeof(t->msg), "%s",
		         msg && *msg ? msg : hl_status_str(status));
	t->state = S_DONE;
	atomic_store(&t->done, 1);
	if (t->queue && t->user) {
		hl__dlist_push(&e->done, &t->q_link);
		t->queued = 1;
		fd_signal(&e->fd);
	}
	fd_signal(&t->fd);
	pthread_cond_broadcast(&t->cond);
	if (t->lead)
		hl__notify_set(t->lead);
	t->arg = NULL;
	if (arg)
		free_arg(t, arg);
	if (t->kind == K_DRIVE && --e->ndrives == 0 && e->stop)
		pthread_cond_broadcast(&e->cond); /* executors may end now */
	if (t->parent && tell_parent(c, t))
		return;
	unref_locked(t); /* the engine's */
}

/* A wait ends: through give_up first when it is due. */
static void finish_wait(hl_client *c, hl_task *t, int status, int result,
                        const char *msg)
{
	if (!result && t->attempted && t->ops.wait->give_up &&
	    status != HL_ECLOSED && t->phase != P_GIVE_UP) {
		detach(c, t);
		t->phase = P_GIVE_UP;
		t->status = status;
		if (msg != t->msg)
			snprintf(t->msg, sizeof(t->msg), "%s",
			         msg && *msg ? msg : hl_status_str(status));
		make_ready(c->engine, t);
		return;
	}
	complete(c, t, status, result, msg);
}

const char *hl__timeout_cause(const char *msg)
{
	if (!msg || !*msg || strcmp(msg, "the deadline passed") == 0)
		return "no reply before the wait ended";
	return msg;
}

int hl__outage_fail(const hl_client *c, int64_t since_ms, const char *last)
{
	int64_t ms = hl__now_ms() - since_ms;
	char cause[HL_TASK_MSG_LEN];
	/* last may be hl_error_last(), which hl__fail overwrites */
	snprintf(cause, sizeof(cause), "%s", last && *last ? last : "no reply");
	return hl__fail(HL_ECONNECT,
	                "redis unreachable: no attempt got an answer from %s "
	                "in %lld ms of waiting (an outage, not a holder); "
	                "last error: %s",
	                c->conf.url_text, (long long)(ms < 0 ? 0 : ms), cause);
}

static void copy_msg(char *dst, size_t len);

/* A wait that ends without acquiring: not acquired (HL_OK, 0) when Redis
 * answered at least one attempt; HL_ECONNECT naming the outage when every
 * attempt went unanswered. Caller holds wait_mu. */
static void finish_unacquired(hl_client *c, hl_task *t)
{
	char msg[HL_TASK_MSG_LEN];
	if (t->answered || !t->outage[0]) {
		finish_wait(c, t, HL_OK, 0, NULL);
		return;
	}
	hl__outage_fail(c, t->outage_since_ms, t->outage);
	copy_msg(msg, sizeof(msg));
	finish_wait(c, t, HL_ECONNECT, 0, msg);
}

static const char *stop_msg(int why)
{
	return why == HL_ECLOSED ? "the client was closed while waiting"
	                         : "the wait was cancelled or interrupted";
}

/* End t early (cancel, interrupt, close): at once where nothing is in
 * flight, else when the step in flight returns (its bound is tripped). */
static void stop_task(hl_client *c, hl_task *t, int why)
{
	if (t->state == S_DONE)
		return;
	if (t->stop == HL_OK)
		t->stop = why;
	if (t->kind == K_DRIVE) {
		/* Its step winds it down: it cancels its children and gives
		 * back what it took, on whichever clients, before it ends. An
		 * attempt its step makes is cut off (the flag has no
		 * registrations: its mutex is a leaf). */
		hl_cancel_trigger(t->cancel);
		kick(c, t);
		return;
	}
	if (t->kind == K_WAIT && t->phase == P_GIVE_UP) {
		/* completing already; close skips the round trip */
		if (why == HL_ECLOSED && t->state != S_RUNNING)
			complete(c, t, t->status, 0, t->msg);
		return;
	}
	if (t->state == S_RUNNING) {
		/* A release in flight runs to its end. The task's own flag
		 * has no registrations, so its mutex is a leaf. */
		if (t->kind != K_CALL)
			hl_cancel_trigger(t->cancel);
		return;
	}
	if (t->kind == K_WAIT)
		finish_wait(c, t, why, 0, stop_msg(why));
	else
		complete(c, t, why, 0, stop_msg(why));
}

void hl__task_stop_all(hl_client *c)
{
	hl_engine *e = c->engine;
	hl_dlink *l, *next;
	int closing = atomic_load(&c->closing);
	uint64_t gen = atomic_load(&c->interrupt_gen);
	if (!e)
		return;
	for (l = e->pending.head; l; l = next) {
		hl_task *t = TASK_OF(l, all_link);
		next = l->next;
		if (closing)
			stop_task(c, t, HL_ECLOSED);
		else if (t->interruptible && t->interrupt_gen != gen)
			stop_task(c, t, HL_EINTERRUPTED);
	}
}

void hl__task_sub_event(hl_sub *s)
{
	hl_dlink *l;
	for (l = s->waiters.head; l; l = l->next) {
		hl_task *t = TASK_OF(l, sub_link);
		/* a task in flight compares the generation when it returns */
		if (t->state == S_PARKED)
			make_ready(t->c->engine, t);
	}
}

int hl__task_sub_message(hl_sub *s, const char *msg, size_t len)
{
	hl_dlink *l;
	int filtered = 0;
	for (l = s->waiters.head; l && !filtered; l = l->next) {
		hl_task *t = TASK_OF(l, sub_link);
		filtered = t->kind == K_WAIT && t->ops.wait->wants;
	}
	if (!filtered)
		return 0;
	for (l = s->waiters.head; l; l = l->next) {
		hl_task *t = TASK_OF(l, sub_link);
		if (t->kind == K_WAIT && t->ops.wait->wants &&
		    !t->ops.wait->wants(t->arg, msg, len))
			continue;
		if (t->state == S_PARKED)
			make_ready(t->c->engine, t);
		else
			t->chosen = 1; /* seen when its attempt returns */
	}
	return 1;
}

int hl__gate_busy(hl_client *c, const void *name, size_t len)
{
	return hl__map_get(&c->gates, name, len) != NULL;
}

/* ---- watch tasks --------------------------------------------------------- */

/* Set while this thread runs a check(): a check may change the holds
 * itself (a hold past its loss deadline is marked lost when looked at),
 * and the change must not take wait_mu again. */
static _Thread_local int tl_checking;

/* Caller holds hold_mu and wait_mu. */
static void watch_eval(hl_client *c, hl_task *t)
{
	hl_engine *e = c->engine;
	int done = 0, result = 0, rc;
	int64_t recheck = -1;
	if (t->state == S_DONE)
		return;
	if (t->stop != HL_OK) {
		complete(c, t, t->stop, 0, stop_msg(t->stop));
		return;
	}
	tl_checking = 1;
	rc = t->ops.watch->check(t->arg, &done, &result, &recheck);
	tl_checking = 0;
	if (e->rescan) {
		/* the check changed the holds: the others look again */
		hl_dlink *l;
		e->rescan = 0;
		for (l = e->watches.head; l; l = l->next) {
			hl_task *w = TASK_OF(l, watch_link);
			if (w != t && w->state == S_PARKED)
				make_ready(e, w);
		}
	}
	if (rc != HL_OK) {
		complete(c, t, rc, 0, hl_error_last());
		return;
	}
	if (done) {
		complete(c, t, HL_OK, result, NULL);
		return;
	}
	if (t->deadline_ms >= 0 && hl__now_ms() >= t->deadline_ms) {
		complete(c, t, HL_OK, 0, NULL);
		return;
	}
	if (t->deadline_ms >= 0 && (recheck < 0 || t->deadline_ms < recheck))
		recheck = t->deadline_ms;
	park(c->engine, t, recheck);
}

void hl__task_holds_changed(hl_client *c)
{
	hl_engine *e = c->engine;
	hl_dlink *l, *next;
	if (!e || atomic_load(&e->nwatches) == 0)
		return;
	if (tl_checking) {
		e->rescan = 1; /* this thread holds wait_mu: see watch_eval */
		return;
	}
	pthread_mutex_lock(&c->wait_mu);
	for (l = e->watches.head; l; l = next) {
		next = l->next;
		watch_eval(c, TASK_OF(l, watch_link));
	}
	pthread_mutex_unlock(&c->wait_mu);
}

/* ---- the executors ------------------------------------------------------- */

static void bound_for(hl_client *c, const hl_task *t, hl_bound *b)
{
	hl__bound_init(b, c, t->io_deadline_ms, t->cancel, t->interruptible);
	b->interrupt_gen = t->interrupt_gen;
}

/* A bound for cleaning up after a wait: close stops it, nothing else. */
static void bound_cleanup(hl_client *c, hl_bound *b)
{
	int64_t ms = c->conf.command_timeout_ms < HL_UNDO_MAX_MS
	                     ? c->conf.command_timeout_ms
	                     : HL_UNDO_MAX_MS;
	hl__bound_init(b, c, hl__now_ms() + ms, NULL, 0);
}

static void copy_msg(char *dst, size_t len)
{
	snprintf(dst, len, "%s", hl_error_last());
}

/* One attempt of a waiting task, or its give-up. Called and returns with
 * wait_mu held; t is running and referenced. */
static void step_wait(hl_client *c, hl_task *t)
{
	hl_engine *e = c->engine;
	const hl_wait_ops *ops = t->ops.wait;
	char msg[HL_TASK_MSG_LEN];
	hl_bound b;
	int rc, acquired = 0;
	int64_t retry = -1, wake, tried_us;
	uint64_t gen;
	int active;

	if (t->phase == P_GIVE_UP) {
		bound_cleanup(c, &b);
		pthread_mutex_unlock(&c->wait_mu);
		ops->give_up(t->arg, &b);
		pthread_mutex_lock(&c->wait_mu);
		complete(c, t, t->status, 0, t->msg);
		return;
	}
	if (t->stop != HL_OK) {
		finish_wait(c, t, t->stop, 0, stop_msg(t->stop));
		return;
	}
	if (!t->once && t->attempted && hl__remaining(t->deadline_ms) == 0) {
		finish_unacquired(c, t);
		return;
	}
	gen = t->sub ? t->sub->gen : 0;
	t->chosen = 0;
	active = t->sub ? t->sub->state == HL_SUB_ACTIVE : !t->channel;
	bound_for(c, t, &b);
	t->attempted = 1;
	tried_us = t->phase == P_FRESH ? hl__now_us() : 0;
	pthread_mutex_unlock(&c->wait_mu);
	hl__tl_heard = 0;
	rc = ops->attempt(t->arg, &b, &acquired, &retry);
	if (rc != HL_OK)
		copy_msg(msg, sizeof(msg));
	pthread_mutex_lock(&c->wait_mu);
	if ((rc != HL_EIO && rc != HL_ECONNECT && rc != HL_ETIMEDOUT) ||
	    (rc == HL_ETIMEDOUT && hl__tl_heard)) {
		t->answered = 1;
	} else if (!t->answered) {
		/* no answer (down, unreachable, silent): remembered, so that
		 * a wait that never hears from Redis says so */
		if (!t->outage[0])
			t->outage_since_ms =
			        tried_us ? tried_us / 1000 : hl__now_ms();
		snprintf(t->outage, sizeof(t->outage), "%s",
		         rc == HL_ETIMEDOUT ? hl__timeout_cause(msg) : msg);
	}

	if (rc == HL_OK && acquired) {
		if (t->stop == HL_EINTERRUPTED) {
			/* Cancelled while the attempt that got it ran: nobody
			 * will receive it, so give it back. */
			bound_cleanup(c, &b);
			pthread_mutex_unlock(&c->wait_mu);
			ops->undo(t->arg, &b);
			pthread_mutex_lock(&c->wait_mu);
			complete(c, t, HL_EINTERRUPTED, 0,
			         stop_msg(HL_EINTERRUPTED));
			return;
		}
		if (t->wait_value)
			t->value = t->wait_value(t->arg);
		complete(c, t, HL_OK, 1, NULL);
		return;
	}
	if ((rc == HL_EIO || rc == HL_ECONNECT) && !t->once &&
	    t->stop == HL_OK && hl__remaining(t->deadline_ms) != 0 &&
	    (t->deadline_ms >= 0 || t->outages < c->conf.retry_attempts)) {
		/* Redis unreachable (a failover, a restart, the network): a
		 * wait outlasts it, within its deadline and cancel, trying
		 * again after a pause. A wait without a deadline gives up
		 * after retry_attempts such outages in a row (each already
		 * the whole retry policy), so that a server that is gone is
		 * told. */
		wake = hl__now_ms() +
		       hl__jitter_delay(c->conf.retry_delay_ms, t->outages++);
		if (t->deadline_ms >= 0 && t->deadline_ms < wake)
			wake = t->deadline_ms;
		park(e, t, wake);
		return;
	}
	if (rc == HL_ETIMEDOUT) {
		/* The wait ended inside a round trip Redis did not answer in
		 * time: not acquired, as far as anyone can tell (an acquire
		 * that lands later is not this caller's: nothing renews it,
		 * and the owner's next acquire or release folds it away);
		 * an outage if no attempt was ever answered. */
		finish_unacquired(c, t);
		return;
	}
	if (rc != HL_OK) {
		if ((rc == HL_EIO || rc == HL_ECONNECT) && !t->once &&
		    !t->answered && t->stop == HL_OK) {
			finish_unacquired(c, t); /* the outages ran out */
			return;
		}
		finish_wait(c, t, rc, 0, msg);
		return;
	}
	t->outages = 0;
	if (t->stop != HL_OK) {
		finish_wait(c, t, t->stop, 0, stop_msg(t->stop));
		return;
	}
	if (t->once || hl__remaining(t->deadline_ms) == 0) {
		finish_wait(c, t, HL_OK, 0, NULL);
		return;
	}
	if (t->phase == P_FRESH) {
		/* The first attempt failed: subscribe (the lock may have
		 * been freed before the subscription: see subscribe()). */
		t->tried_us = tried_us;
		t->tried_retry_ms = retry;
		if ((rc = subscribe(c, t)) != HL_OK)
			finish_wait(c, t, rc, 0, hl_error_last());
		return;
	}
	if (t->sub && (t->sub->gen != gen || t->chosen)) {
		make_ready(e, t); /* a message came while we tried */
		return;
	}
	if (active)
		/* Found taken with its subscription active (or without a
		 * channel, polling): from here a message or a timer wakes
		 * it. */
		count_waiting(c, t);
	park_after(c, t, retry);
}

/* Found taken, the attempt answering retry (ms; -1: none): parked until
 * a message (or the subscription becoming active, or a reconnect) bumps
 * the generation, or the holder's lease would end, or the deadline.
 * Caller holds wait_mu. */
static void park_after(hl_client *c, hl_task *t, int64_t retry)
{
	int64_t wake;
	if (retry < 0 || (t->sub && retry > c->conf.watchdog_ms))
		retry = c->conf.watchdog_ms;
	wake = hl__now_ms() + retry;
	if (t->deadline_ms >= 0 && t->deadline_ms < wake)
		wake = t->deadline_ms;
	park(c->engine, t, wake);
}

static void step_call(hl_client *c, hl_task *t)
{
	char msg[HL_TASK_MSG_LEN];
	hl_value *value = NULL;
	hl_bound b;
	int rc, result = 0;
	if (t->stop != HL_OK) {
		complete(c, t, t->stop, 0, stop_msg(t->stop));
		return;
	}
	hl__bound_init(&b, c, -1, NULL, 0);
	pthread_mutex_unlock(&c->wait_mu);
	if (t->ops.call->run_value)
		rc = t->ops.call->run_value(t->arg, &b, &result, &value);
	else
		rc = t->ops.call->run(t->arg, &b, &result);
	if (rc != HL_OK)
		copy_msg(msg, sizeof(msg));
	pthread_mutex_lock(&c->wait_mu);
	t->value = value;
	complete(c, t, rc, result, rc == HL_OK ? NULL : msg);
}

/* A step of a K_DRIVE task (called and returns with wait_mu held; t is
 * running and referenced). */
static void step_drive(hl_client *c, hl_task *t)
{
	const hl_drive_ops *ops = t->ops.drive;
	char msg[HL_TASK_MSG_LEN];
	int rc, done = 0, result = 0, stop = t->stop;
	int64_t wake = -1;
	t->kicked = 0;
	pthread_mutex_unlock(&c->wait_mu);
	rc = ops->step(t->arg, t, stop, &done, &result, &wake);
	if (done && rc != HL_OK)
		copy_msg(msg, sizeof(msg));
	pthread_mutex_lock(&c->wait_mu);
	if (!done) {
		if (t->kicked || t->stop != stop)
			make_ready(c->engine, t);
		else
			park(c->engine, t, wake);
		return;
	}
	if (rc == HL_OK && stop == HL_OK && t->stop != HL_OK) {
		/* Stopped while the step that ended it ran: nobody may get
		 * what it took, so the next step (told of the stop) gives it
		 * back. */
		make_ready(c->engine, t);
		return;
	}
	if (ops->commit && t->user)
		ops->commit(t->arg, rc, result);
	complete(c, t, rc, result, rc == HL_OK ? NULL : msg);
}

/* Tell the parents of the tasks on e->notify (see tell_parent), each under
 * its own client's wait_mu. Called and returns with c->wait_mu held, which
 * it lets go meanwhile. */
static void notify_parents(hl_client *c)
{
	hl_engine *e = c->engine;
	while (e->notify.head) {
		hl_task *t = TASK_OF(e->notify.head, q_link), *p = t->parent;
		int last;
		hl__dlist_remove(&e->notify, &t->q_link);
		t->parent = NULL;
		pthread_mutex_unlock(&c->wait_mu);
		pthread_mutex_lock(&p->c->wait_mu);
		kick(p->c, p);
		last = --p->refs == 0;
		pthread_mutex_unlock(&p->c->wait_mu);
		/* The parent may have ended and been freed meanwhile: this
		 * was its last reference, and maybe its client's. */
		if (last)
			task_destroy(p);
		pthread_mutex_lock(&c->wait_mu);
		unref_locked(t); /* the engine's, kept for this */
	}
}

static void step_watch(hl_client *c, hl_task *t)
{
	/* hold_mu comes first: let go of wait_mu to take it */
	pthread_mutex_unlock(&c->wait_mu);
	pthread_mutex_lock(&c->hold_mu);
	pthread_mutex_lock(&c->wait_mu);
	watch_eval(c, t);
	pthread_mutex_unlock(&c->hold_mu);
}

/* A timer fired (caller holds wait_mu). */
static void timer_fired(hl_client *c, hl_task *t, int64_t now)
{
	hl_engine *e = c->engine;
	heap_remove(e, t);
	if (t->kind == K_WAIT && (t->attempted || t->phase == P_GATED) &&
	    !t->once && t->deadline_ms >= 0 && now >= t->deadline_ms) {
		/* the wait ran out (in the queue, or between attempts) */
		finish_unacquired(c, t);
		return;
	}
	make_ready(e, t);
}

/* Run one step of t, made ready (on an executor, or on the blocking
 * caller that waits for it). Called and returns with wait_mu held. */
static void run_step(hl_client *c, hl_task *t)
{
	t->state = S_RUNNING;
	t->refs++;
	if (t->kind == K_WAIT)
		step_wait(c, t);
	else if (t->kind == K_CALL)
		step_call(c, t);
	else if (t->kind == K_DRIVE)
		step_drive(c, t);
	else
		step_watch(c, t);
	if (t->state == S_RUNNING)
		t->state = S_PARKED; /* nothing moved it */
	unref_locked(t);
}

/* The client whose executor this thread is (NULL: none). */
static _Thread_local hl_client *tl_executor;

/* A background task (work nobody waits for: an adder's answer, bounded by
 * the command timeout) ready to run, taken off the queue; NULL if none.
 * Caller holds wait_mu. */
static hl_task *ready_background(hl_engine *e)
{
	hl_dlink *l;
	for (l = e->ready.head; l; l = l->next) {
		hl_task *t = TASK_OF(l, q_link);
		if (t->kind == K_DRIVE && !t->user) {
			hl__dlist_remove(&e->ready, &t->q_link);
			return t;
		}
	}
	return NULL;
}

static void *exec_main(void *arg)
{
	hl_client *c = arg;
	hl_engine *e = c->engine;
	tl_executor = c;
	hl__thread_name("hl-executor");
	pthread_mutex_lock(&c->wait_mu);
	/* After a close stopped the engine, drive tasks still pending run to
	 * their end (close stopped them: they only give back what they
	 * took). */
	while (!e->stop || e->ndrives > 0) {
		int64_t now = hl__now_ms();
		hl_task *t;
		if (e->notify.head) {
			notify_parents(c);
			continue;
		}
		while (e->heap_len > 0 && e->heap[0]->wake_ms <= now)
			timer_fired(c, e->heap[0], now);
		if (e->ready.head) {
			t = TASK_OF(e->ready.head, q_link);
			hl__dlist_remove(&e->ready, &t->q_link);
			run_step(c, t);
			continue;
		}
		hl__cond_wait_until(&e->cond, &c->wait_mu,
		                    e->heap_len > 0 ? e->heap[0]->wake_ms : -1);
	}
	pthread_mutex_unlock(&c->wait_mu);
	return NULL;
}

int hl__engine_start(hl_client *c)
{
	hl_engine *e = calloc(1, sizeof(*e));
	int i, rc;
	if (!e)
		return hl__fail(HL_ENOMEM, "out of memory");
	hl__cond_init(&e->cond);
	hl__notify_none(&e->fd);
	atomic_init(&e->nwatches, 0);
	c->engine = e;
	for (i = 0; i < HL_EXECUTORS; i++) {
		rc = pthread_create(&e->threads[i], NULL, exec_main, c);
		if (rc != 0) {
			hl__engine_stop(c);
			hl__engine_free(c);
			return hl__fail(HL_ESYSTEM,
			                "starting an executor thread: %s",
			                strerror(rc));
		}
		e->nthreads++;
	}
	return HL_OK;
}

void hl__engine_stop(hl_client *c)
{
	hl_engine *e = c->engine;
	int i;
	if (!e)
		return;
	pthread_mutex_lock(&c->wait_mu);
	e->stop = 1;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&c->wait_mu);
	for (i = 0; i < e->nthreads; i++)
		pthread_join(e->threads[i], NULL);
	e->nthreads = 0;
	/* Nothing runs them any more: whatever close left (a give-up that
	 * was due) ends now. */
	pthread_mutex_lock(&c->wait_mu);
	while (e->pending.head) {
		hl_task *t = TASK_OF(e->pending.head, all_link);
		complete(c, t, t->phase == P_GIVE_UP ? t->status : HL_ECLOSED,
		         0,
		         t->phase == P_GIVE_UP ? t->msg : stop_msg(HL_ECLOSED));
	}
	/* the parents of tasks that ended last (they may be another
	 * client's, still running) */
	notify_parents(c);
	pthread_mutex_unlock(&c->wait_mu);
}

void hl__engine_free(hl_client *c)
{
	hl_engine *e = c->engine;
	if (!e)
		return;
	hl__notify_close(&e->fd);
	if (c->fork_gen == atomic_load(&hl__fork_generation))
		pthread_cond_destroy(&e->cond);
	free(e->heap);
	free(e);
	c->engine = NULL;
}

/* ---- starting tasks ------------------------------------------------------ */

static hl_task *task_new(hl_client *c, int kind, int blocking)
{
	hl_task *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (hl_cancel_new(&t->cancel) != HL_OK) {
		free(t);
		return NULL;
	}
	hl__cond_init(&t->cond);
	atomic_init(&t->done, 0);
	atomic_init(&t->data, 0);
	t->c = c;
	t->kind = kind;
	t->refs = 2; /* the user's and the engine's */
	t->user = 1;
	t->queue = !blocking;
	hl__notify_none(&t->fd);
	t->wake_ms = -1;
	t->deadline_ms = -1;
	t->io_deadline_ms = -1;
	t->heap_index = NOT_IN_HEAP;
	atomic_fetch_add(&c->refs, 1);
	return t;
}

/* Registered: stopped at once if the client closed or was interrupted
 * since the call began (caller holds wait_mu). */
static void check_stopped(hl_client *c, hl_task *t)
{
	if (atomic_load(&c->closing))
		stop_task(c, t, HL_ECLOSED);
	else if (t->interruptible &&
	         t->interrupt_gen != atomic_load(&c->interrupt_gen))
		stop_task(c, t, HL_EINTERRUPTED);
}

int hl__task_wait_start(hl_task **out, hl_client *c, const hl_wait_spec *spec)
{
	hl_engine *e = c->engine;
	hl_task *t;
	int rc = HL_OK;
	/* The parent's reference, taken before this client's wait_mu (no two
	 * clients' at once): the task tells the parent when it is done. */
	if (spec->parent)
		hl__task_ref(spec->parent);
	t = task_new(c, K_WAIT, spec->blocking || spec->parent);
	if (!t) {
		pthread_mutex_lock(&c->wait_mu); /* as complete() frees it */
		spec->ops->free(spec->arg);
		pthread_mutex_unlock(&c->wait_mu);
		if (spec->parent)
			hl__task_unref(spec->parent);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	t->parent = spec->parent;
	t->ops.wait = spec->ops;
	t->wait_value = spec->value;
	t->arg = spec->arg;
	t->deadline_ms = spec->deadline_ms;
	t->io_deadline_ms = spec->io_deadline_ms;
	t->once = spec->once;
	/* the caller's own attempt counts (a give-up is due after it) */
	t->attempted = spec->first == HL_WAIT_TRIED;
	if (t->attempted) {
		t->tried_us = spec->tried_us;
		t->tried_retry_ms = spec->tried_retry_ms;
		/* a known tried_us: that attempt was answered */
		t->answered = spec->tried_us != 0;
		if (spec->unanswered && !t->answered) {
			snprintf(t->outage, sizeof(t->outage), "%s",
			         spec->unanswered);
			t->outage_since_ms = spec->unanswered_since_ms > 0
			                             ? spec->unanswered_since_ms
			                             : hl__now_ms();
		}
	}
	t->interruptible = 1;
	t->interrupt_gen = spec->interrupt_gen;
	pthread_mutex_lock(&c->wait_mu);
	hl__dlist_push(&e->pending, &t->all_link);
	t->state = S_PARKED;
	if (spec->gate && spec->once &&
	    (hl__gate_busy(c, spec->gate, spec->gate_len) ||
	     spec->hold_back_us > 0)) {
		/* One attempt defers to those queued, and to a handoff: 0
		 * without a round trip. */
		complete(c, t, HL_OK, 0, NULL);
		goto out;
	}
	t->channel = spec->channel;
	t->channel_len = spec->channel_len;
	if (spec->gate &&
	    (rc = gate_join(c, t, spec->gate, spec->gate_len)) != HL_OK) {
		complete(c, t, rc, 0, hl_error_last());
		goto out;
	}
	if (t->gate && t->gate->queue.head != &t->gate_link) {
		/* Behind others of this client: parked until promoted or
		 * the deadline. Only the head listens to the channel. */
		t->phase = P_GATED;
		count_waiting(c, t);
		park(e, t, t->deadline_ms);
	} else if (spec->first == HL_WAIT_FRESH) {
		/* subscribed only if the first attempt fails */
		t->phase = P_FRESH;
		if (spec->hold_back_us > 0)
			/* at least the hold-back: timers are in whole ms */
			park(e, t,
			     (hl__now_us() + spec->hold_back_us + 999) / 1000);
		else
			make_ready(e, t);
	} else if ((rc = subscribe(c, t)) != HL_OK) {
		complete(c, t, rc, 0, hl_error_last());
		goto out;
	}
	check_stopped(c, t);
out:
	pthread_mutex_unlock(&c->wait_mu);
	*out = t;
	return HL_OK;
}

int hl__task_call_start(hl_task **out, hl_client *c, const hl_call_ops *ops,
                        void *arg)
{
	hl_engine *e = c->engine;
	hl_task *t = task_new(c, K_CALL, 0);
	if (!t) {
		ops->free(arg);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	t->ops.call = ops;
	t->arg = arg;
	pthread_mutex_lock(&c->wait_mu);
	hl__dlist_push(&e->pending, &t->all_link);
	t->state = S_PARKED;
	make_ready(e, t);
	check_stopped(c, t);
	pthread_mutex_unlock(&c->wait_mu);
	*out = t;
	return HL_OK;
}

int hl__task_drive_start(hl_task **out, hl_client *c, const hl_drive_ops *ops,
                         void *arg, int interruptible, uint64_t interrupt_gen,
                         int blocking)
{
	hl_engine *e = c->engine;
	hl_task *t = task_new(c, K_DRIVE, blocking);
	if (!t) {
		ops->free(arg);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	t->ops.drive = ops;
	t->arg = arg;
	t->interruptible = interruptible;
	t->interrupt_gen = interrupt_gen;
	/* A blocking call runs the steps itself (see wait_done) from the
	 * first: no executor picks it up meanwhile. */
	t->caller = blocking;
	pthread_mutex_lock(&c->wait_mu);
	hl__dlist_push(&e->pending, &t->all_link);
	e->ndrives++;
	t->state = S_PARKED;
	make_ready(e, t);
	check_stopped(c, t);
	pthread_mutex_unlock(&c->wait_mu);
	*out = t;
	return HL_OK;
}

static int background(hl_client *c, const hl_drive_ops *ops, void *arg,
                      int locked, hl_task **out)
{
	hl_engine *e = c->engine;
	/* blocking: never queued for hl_client_task_next() */
	hl_task *t = task_new(c, K_DRIVE, 1);
	if (!t) {
		ops->free(arg);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	t->ops.drive = ops;
	t->arg = arg;
	/* the engine's reference only: nobody holds the task */
	t->user = 0;
	t->refs = 1;
	if (!locked)
		pthread_mutex_lock(&c->wait_mu);
	hl__dlist_push(&e->pending, &t->all_link);
	e->ndrives++;
	t->state = S_PARKED;
	make_ready(e, t);
	check_stopped(c, t);
	if (out)
		*out = t;
	if (!locked)
		pthread_mutex_unlock(&c->wait_mu);
	return HL_OK;
}

int hl__task_background(hl_client *c, const hl_drive_ops *ops, void *arg)
{
	return background(c, ops, arg, 0, NULL);
}

int hl__task_background_locked(hl_client *c, const hl_drive_ops *ops, void *arg)
{
	return background(c, ops, arg, 1, NULL);
}

int hl__task_background_out(hl_client *c, const hl_drive_ops *ops, void *arg,
                            hl_task **out)
{
	return background(c, ops, arg, 1, out);
}

void hl__task_kick_locked(hl_task *t)
{
	kick(t->c, t);
}

void hl__task_ref(hl_task *t)
{
	pthread_mutex_lock(&t->c->wait_mu);
	t->refs++;
	pthread_mutex_unlock(&t->c->wait_mu);
}

void hl__task_kick(hl_task *t)
{
	pthread_mutex_lock(&t->c->wait_mu);
	kick(t->c, t);
	pthread_mutex_unlock(&t->c->wait_mu);
}

void hl__task_drive_value(hl_task *t, hl_value *v)
{
	hl_value *old;
	pthread_mutex_lock(&t->c->wait_mu);
	old = t->value;
	t->value = v;
	pthread_mutex_unlock(&t->c->wait_mu);
	hl_value_free(old);
}

hl_cancel *hl__task_cancel_flag(hl_task *t)
{
	return t->cancel;
}

void hl__task_unref(hl_task *t)
{
	int last;
	pthread_mutex_lock(&t->c->wait_mu);
	last = --t->refs == 0;
	pthread_mutex_unlock(&t->c->wait_mu);
	if (last)
		task_destroy(t);
}

int hl__task_watch_start(hl_task **out, hl_client *c, const hl_watch_ops *ops,
                         void *arg, int64_t deadline_ms, uint64_t interrupt_gen,
                         int blocking)
{
	hl_engine *e = c->engine;
	hl_task *t = task_new(c, K_WATCH, blocking);
	if (!t) {
		ops->free(arg);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	t->ops.watch = ops;
	t->arg = arg;
	t->deadline_ms = deadline_ms;
	t->interruptible = 1;
	t->interrupt_gen = interrupt_gen;
	pthread_mutex_lock(&c->wait_mu);
	hl__dlist_push(&e->pending, &t->all_link);
	hl__dlist_push(&e->watches, &t->watch_link);
	atomic_fetch_add(&e->nwatches, 1);
	t->state = S_PARKED;
	check_stopped(c, t);
	watch_eval(c, t);
	pthread_mutex_unlock(&c->wait_mu);
	*out = t;
	return HL_OK;
}

/* ---- waiting for a task (blocking callers, hl_task_wait) ----------------- */

/* The task's deadline passed and the executors have not ended it (they may
 * be busy with others' round trips): end it here unless a step of it is in
 * flight (its own bound ends that). Caller holds wait_mu. */
static void expire(hl_client *c, hl_task *t)
{
	if (t->state == S_DONE || t->state == S_RUNNING)
		return;
	if (t->kind == K_WAIT) {
		/* as the timer does: a wait makes its first attempt */
		if (t->phase != P_GIVE_UP && !t->once &&
		    (t->attempted || t->phase == P_GATED))
			finish_unacquired(c, t);
	} else if (t->kind == K_WATCH) {
		pthread_mutex_unlock(&c->wait_mu);
		pthread_mutex_lock(&c->hold_mu);
		pthread_mutex_lock(&c->wait_mu);
		watch_eval(c, t);
		pthread_mutex_unlock(&c->hold_mu);
	}
}

/* A blocking caller whose wait is parked on a subscription waits by
 * reading that subscription's connection itself, until wake (-1: an
 * event): the message that wakes it then costs no hop through the
 * subscriber thread (message -> subscriber thread -> caller). Returns 0
 * when it cannot lead the connection (the caller waits on its cond);
 * else 1, after a wait (the caller looks at its task again). *n is opened
 * the first time (closed by the caller). Caller holds wait_mu. */
static int lead_wait(hl_client *c, hl_task *t, hl_cancel_reg *reg, hl_notify *n,
                     int64_t wake)
{
	struct pollfd p[2];
	int k, fd = -1, ms = -1;
	if (n->rfd < 0 && hl__notify_open(n, 0) < 0)
		return 0;
	if ((k = hl__pubsub_lead(c, t->sub, t, n, &fd)) < 0)
		return 0;
	t->lead = n;
	reg->notify = n;
	if (wake >= 0) {
		int64_t d = wake - hl__now_ms();
		ms = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d;
	}
	pthread_mutex_unlock(&c->wait_mu);
	p[0].fd = n->rfd;
	p[0].events = POLLIN;
	p[0].revents = 0;
	p[1].fd = fd;
	p[1].events = POLLIN;
	p[1].revents = 0;
	(void)poll(p, 2, ms); /* EINTR: as a wake-up */
	pthread_mutex_lock(&c->wait_mu);
	t->lead = NULL;
	reg->notify = NULL;
	hl__notify_clear(n);
	hl__pubsub_unlead(c, k, t);
	return 1;
}

/* Wait until t is done, or until (monotonic) (-1: no limit), or cancel.
 * cancel_stops: a triggered cancel stops the task (else it ends the wait
 * with HL_EINTERRUPTED). run: this thread runs the task's steps itself
 * while it waits (a blocking call's: the executors would only hand the
 * result over to it). Returns HL_OK when done, HL_ETIMEDOUT,
 * HL_EINTERRUPTED. */
static int wait_done(hl_task *t, int64_t until, hl_cancel *cancel,
                     int cancel_stops, int run)
{
	hl_client *c = t->c;
	hl_engine *e = c->engine;
	hl_cancel_reg reg;
	hl_notify lead;
	int rc = HL_OK, expired = 0, stopped = 0;
	hl__notify_none(&lead);
	reg.mu = &c->wait_mu;
	reg.cond = &t->cond;
	reg.notify = NULL;
	hl__cancel_register(cancel, &reg);
	pthread_mutex_lock(&c->wait_mu);
	if (run && t->state != S_DONE && !t->caller) {
		unready(e, t); /* ours now, if an executor had it queued */
		t->caller = 1;
	}
	while (t->state != S_DONE) {
		int64_t now = hl__now_ms(), wake = until;
		if (t->caller && t->state == S_READY) {
			run_step(c, t);
			continue;
		}
		if (!stopped && hl_cancel_is_triggered(cancel)) {
			if (!cancel_stops) {
				rc = HL_EINTERRUPTED;
				break;
			}
			stop_task(c, t, HL_EINTERRUPTED);
			stopped = 1;
			continue;
		}
		if (!expired && t->deadline_ms >= 0 && now >= t->deadline_ms) {
			expired = 1;
			expire(c, t);
			continue;
		}
		if (until >= 0 && now >= until) {
			rc = HL_ETIMEDOUT;
			break;
		}
		if (tl_executor == c) {
			/* An executor that waits (a task whose call waits,
			 * an adder's sum) runs the background work meanwhile:
			 * what it waits for may be this client's own (the
			 * sum's answer), with every executor waiting. */
			hl_task *o = ready_background(e);
			if (o) {
				run_step(c, o);
				continue;
			}
			if (wake < 0 || now + HL_HELP_POLL_MS < wake)
				wake = now + HL_HELP_POLL_MS;
		}
		if (!expired && t->deadline_ms >= 0 &&
		    (wake < 0 || t->deadline_ms < wake))
			wake = t->deadline_ms;
		if (t->caller && t->state == S_PARKED && t->sub &&
		    tl_executor != c && lead_wait(c, t, &reg, &lead, wake))
			continue;
		hl__cond_wait_until(&t->cond, &c->wait_mu, wake);
	}
	if (lead.rfd >= 0)
		hl__notify_close(&lead);
	if (t->caller) {
		/* back to the executors (left early: cancel, a time limit) */
		t->caller = 0;
		if (t->state == S_READY) {
			hl__dlist_push(&e->ready, &t->q_link);
			pthread_cond_signal(&e->cond);
		}
	}
	pthread_mutex_unlock(&c->wait_mu);
	hl__cancel_unregister(cancel, &reg);
	return rc;
}

int hl__task_finish_blocking(hl_task *t, hl_cancel *cancel, int *result)
{
	return hl__task_finish_blocking_value(t, cancel, result, NULL);
}

int hl__task_finish_blocking_value(hl_task *t, hl_cancel *cancel, int *result,
                                   hl_value **value)
{
	hl_client *c = t->c;
	char msg[HL_TASK_MSG_LEN];
	int rc;
	wait_done(t, -1, cancel, 1, 1);
	pthread_mutex_lock(&c->wait_mu);
	rc = t->status;
	*result = t->result;
	memcpy(msg, t->msg, sizeof(msg));
	if (value) {
		*value = t->value;
		t->value = NULL;
	}
	pthread_mutex_unlock(&c->wait_mu);
	hl_task_free(t);
	if (rc != HL_OK)
		return hl__fail(rc, "%s", msg);
	return HL_OK;
}

/* ---- public -------------------------------------------------------------- */

static int task_check(const hl_task *t)
{
	if (!t)
		return hl__fail(HL_EINVAL, "task is NULL");
	if (t->c->fork_gen != atomic_load(&hl__fork_generation))
		return hl__fail(HL_EFORKED,
		                "this task was started by another process "
		                "(before fork())");
	return HL_OK;
}

static int client_check(hl_client *c)
{
	if (!c)
		return hl__fail(HL_EINVAL, "client is NULL");
	if (c->fork_gen != atomic_load(&hl__fork_generation))
		return hl__fail(HL_EFORKED,
		                "this client was created by another process "
		                "(before fork()); create a new client in this "
		                "process");
	if (!c->engine)
		return hl__fail(HL_ECLOSED, "the client is closed");
	return HL_OK;
}

int hl_client_task_fd(int *out_fd, hl_client *c)
{
	hl_engine *e;
	int rc;
	if (!out_fd)
		return hl__fail(HL_EINVAL, "out_fd is NULL");
	if ((rc = client_check(c)) != HL_OK)
		return rc;
	e = c->engine;
	pthread_mutex_lock(&c->wait_mu);
	if (e->fd.rfd < 0 && hl__notify_open(&e->fd, e->done.head != NULL) < 0)
		rc = hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		              strerror(errno));
	if (rc == HL_OK)
		*out_fd = e->fd.rfd;
	pthread_mutex_unlock(&c->wait_mu);
	return rc;
}

int hl_client_task_next(hl_task **out, hl_client *c)
{
	hl_engine *e;
	hl_task *t = NULL;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = client_check(c)) != HL_OK)
		return rc;
	e = c->engine;
	pthread_mutex_lock(&c->wait_mu);
	if (e->done.head) {
		t = TASK_OF(e->done.head, q_link);
		hl__dlist_remove(&e->done, &t->q_link);
		t->queued = 0;
		t->queue = 0; /* delivered: never again */
	}
	if (!e->done.head)
		fd_drain(&e->fd); /* readable only while tasks wait */
	pthread_mutex_unlock(&c->wait_mu);
	*out = t;
	return HL_OK;
}

int hl_task_fd(int *out_fd, hl_task *t)
{
	int rc;
	if (!out_fd)
		return hl__fail(HL_EINVAL, "out_fd is NULL");
	if ((rc = task_check(t)) != HL_OK)
		return rc;
	pthread_mutex_lock(&t->c->wait_mu);
	if (t->fd.rfd < 0 && hl__notify_open(&t->fd, t->state == S_DONE) < 0)
		rc = hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		              strerror(errno));
	if (rc == HL_OK)
		*out_fd = t->fd.rfd;
	pthread_mutex_unlock(&t->c->wait_mu);
	return rc;
}

int hl_task_set_data(hl_task *t, uint64_t data)
{
	if (!t)
		return hl__fail(HL_EINVAL, "task is NULL");
	atomic_store(&t->data, data);
	return HL_OK;
}

uint64_t hl_task_data(const hl_task *t)
{
	return t ? atomic_load(&((hl_task *)t)->data) : 0;
}

int hl_task_done(const hl_task *t)
{
	return t ? atomic_load(&((hl_task *)t)->done) : 0;
}

int hl_task_result(int *out, hl_task *t)
{
	char msg[HL_TASK_MSG_LEN];
	int rc, result = 0;
	if ((rc = task_check(t)) != HL_OK)
		return rc;
	pthread_mutex_lock(&t->c->wait_mu);
	if (t->state != S_DONE) {
		pthread_mutex_unlock(&t->c->wait_mu);
		return hl__fail(HL_EINVAL, "the task is not done yet");
	}
	rc = t->status;
	result = t->result;
	memcpy(msg, t->msg, sizeof(msg));
	pthread_mutex_unlock(&t->c->wait_mu);
	if (rc != HL_OK)
		return hl__fail(rc, "%s", msg);
	if (out)
		*out = result;
	return HL_OK;
}

int hl_task_value(const hl_value **out, hl_task *t)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	*out = NULL;
	rc = hl_task_result(NULL, t);
	if (rc == HL_OK) {
		pthread_mutex_lock(&t->c->wait_mu);
		*out = t->value;
		pthread_mutex_unlock(&t->c->wait_mu);
	}
	return rc;
}

void hl_task_cancel(hl_task *t)
{
	if (!t || t->c->fork_gen != atomic_load(&hl__fork_generation))
		return;
	pthread_mutex_lock(&t->c->wait_mu);
	stop_task(t->c, t, HL_EINTERRUPTED);
	pthread_mutex_unlock(&t->c->wait_mu);
}

int hl_task_wait(hl_task *t, int64_t timeout_ms, hl_cancel *cancel)
{
	int rc;
	if ((rc = task_check(t)) != HL_OK)
		return rc;
	if (timeout_ms < -1 || timeout_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "timeout_ms = %lld: use -1 (forever) or 0 to "
		                "2^40",
		                (long long)timeout_ms);
	rc = wait_done(t, hl__deadline(timeout_ms), cancel, 0, 0);
	if (rc == HL_ETIMEDOUT)
		return hl__fail(rc, "the task is not done yet");
	if (rc == HL_EINTERRUPTED)
		return hl__fail(rc, "waiting for the task was cancelled");
	return HL_OK;
}

void hl_task_free(hl_task *t)
{
	hl_client *c;
	int last;
	if (!t)
		return;
	c = t->c;
	if (c->fork_gen != atomic_load(&hl__fork_generation)) {
		/* A child after fork(): the engine and its threads are the
		 * parent's. Forget the copy unseen. */
		if (t->arg)
			free_arg(t, t->arg);
		task_destroy(t);
		return;
	}
	pthread_mutex_lock(&c->wait_mu);
	stop_task(c, t, HL_EINTERRUPTED);
	if (t->queued) {
		hl__dlist_remove(&c->engine->done, &t->q_link);
		t->queued = 0;
		if (!c->engine->done.head)
			fd_drain(&c->engine->fd);
	}
	t->user = 0;
	last = --t->refs == 0;
	pthread_mutex_unlock(&c->wait_mu);
	/* Outside wait_mu: the task's may be the client's last reference. */
	if (last)
		task_destroy(t);
}
