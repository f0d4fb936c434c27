/*
 * The delayed queue (Redisson's RDelayedQueue, GRID-PROTOCOL 3.9): values
 * wait in the zset redisson_delay_queue_timeout:{name} (score: the due
 * time, the offering client's wall clock in ms) and the list
 * redisson_delay_queue:{name} (insertion order), then move to the queue
 * <name>. docs/grid-delayed-queue.md says who moves them and when.
 *
 * The mover: every client that has a delayed queue of a name open runs one
 * mover for it (a registry entry, counted by its open objects): one
 * long-lived background task on the client's executors (no thread of its
 * own) that runs the transfer script
 * - at once when it starts, and whenever its subscription to
 *   redisson_delay_queue_channel:{name} becomes active (the first time, and
 *   after every reconnect or failover made it anew): a catch-up of what
 *   became due while nothing could be heard;
 * - at the due time a message on the channel named (the new first element
 *   of an offer), or the one the last transfer answered (the next element);
 * - every HL_DELAY_POLL_MS whatever happens (a message missed, a clock
 *   that moved).
 * The script moves each element once: any number of movers, hilock's and
 * Redisson's, may run it at once.
 */
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"
#include "prim/args.h"
#include "prim/object.h"

/* The fallback poll: a mover looks at least this often. */
#define HL_DELAY_POLL_MS 1000
/* Elements one transfer moves at most (Redisson's 100). */
#define HL_DELAY_BATCH "100"
/* No due time (the timer is the poll's alone). */
#define NO_DUE INT64_MAX

typedef struct mover {
	atomic_int refs; /* the registry's, the listener's, the task's */
	hl_client *c;
	int nobjs;             /* open objects of the name; under reg_mu */
	hl_listener *listener; /* under reg_mu; NULL once it went */
	struct hl_task *task;  /* under wait_mu; NULL once it ended */
	atomic_int stopping;
	atomic_int run_now;      /* a catch-up is due */
	atomic_llong due_wall;   /* the next due time (wall ms), NO_DUE */
	int64_t next_poll;       /* monotonic ms; the task's own */
	atomic_ullong transfers; /* transfers run (tests read it: none) */
	size_t name_len, chan_len;
	char *name, *chan;
	char *keys[3];
	size_t key_lens[3];
} mover;

/* An object's part: which mover it counts in. */
typedef struct delayed_obj {
	mover *m; /* NULL once detached */
} delayed_obj;

static void mover_unref(mover *m)
{
	int i;
	if (atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	for (i = 0; i < 3; i++)
		free(m->keys[i]);
	free(m->name);
	free(m->chan);
	free(m);
}

/* due_wall = min(due_wall, t). */
static void due_min(mover *m, int64_t t)
{
	long long cur = atomic_load(&m->due_wall);
	while (t < cur && !atomic_compare_exchange_weak(&m->due_wall, &cur, t))
		;
}

/* ---- the transfer -------------------------------------------------------- */

/* One run of the transfer script: *next = the due time of the element now
 * first (wall ms), NO_DUE when none. */
static int transfer(mover *m, struct hl_task *self, int64_t *next)
{
	hl_client *c = m->c;
	const hl_script_def *s = &hl__script_delayed_queue_transfer;
	const char *argv[8];
	size_t lens[8];
	char now[HL_DEC_MAX];
	hl_reply *r = NULL;
	hl_bound b;
	int rc, i;
	*next = NO_DUE;
	hl__bound_init(&b, c, hl__deadline(c->conf.command_timeout_ms),
	               hl__task_cancel_flag(self), 0);
	argv[0] = "EVALSHA";
	lens[0] = 7;
	argv[1] = s->sha;
	lens[1] = 40;
	argv[2] = "3";
	lens[2] = 1;
	for (i = 0; i < 3; i++) {
		argv[3 + i] = m->keys[i];
		lens[3 + i] = m->key_lens[i];
	}
	argv[6] = now;
	lens[6] = hl__fmt_i64(now, wall_ms());
	argv[7] = HL_DELAY_BATCH;
	lens[7] = strlen(HL_DELAY_BATCH);
	/* Sent again after a lost reply: a second run moves only what is
	 * still due. */
	rc = hl__command(c, &r, 8, argv, lens, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
	                 NULL, &b);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR &&
	    strncmp(hl__reply_str(r), "NOSCRIPT", 8) == 0) {
		hl__reply_free(r);
		r = NULL;
		argv[0] = "EVAL";
		lens[0] = 4;
		argv[1] = s->source;
		lens[1] = strlen(s->source);
		rc = hl__command(c, &r, 8, argv, lens,
		                 HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, &b);
	}
	if (rc == HL_OK) {
		atomic_fetch_add(&m->transfers, 1);
		if (hl__reply_type(r) == HL_REPLY_ERROR) {
			rc = HL_EREDIS;
		} else if (hl__reply_type(r) == HL_REPLY_STRING) {
			double d;
			if (hl__parse_double(hl__reply_str(r),
			                     hl__reply_strlen(r), &d,
			                     "a due time") == HL_OK &&
			    d < 9e15)
				*next = d < 0 ? 0 : (int64_t)d;
		} else if (hl__reply_type(r) == HL_REPLY_INTEGER) {
			*next = hl__reply_int(r);
		}
	}
	hl__reply_free(r);
	return rc;
}

static int mover_step(void *arg, struct hl_task *self, int stop, int *done,
                      int *result, int64_t *wake_ms)
{
	mover *m = arg;
	int64_t now = hl__now_ms(), wall = wall_ms(), due, wake;
	*result = 0;
	if (stop != HL_OK || atomic_load(&m->stopping)) {
		*done = 1;
		return HL_OK;
	}
	due = atomic_load(&m->due_wall);
	if (atomic_exchange(&m->run_now, 0) || now >= m->next_poll ||
	    due <= wall) {
		int64_t next;
		/* A message that comes meanwhile lowers it again. */
		atomic_store(&m->due_wall, NO_DUE);
		if (transfer(m, self, &next) == HL_OK) {
			m->next_poll = hl__now_ms() + HL_DELAY_POLL_MS;
			due_min(m, next);
		} else {
			/* Redis unreachable, or the script refused (a key of
			 * another type): the poll tries again in a second (not
			 * at the due time, which has passed: no busy loop), or
			 * a reconnect's catch-up sooner. */
			m->next_poll = hl__now_ms() + HL_DELAY_POLL_MS;
		}
		now = hl__now_ms();
		wall = wall_ms();
	}
	wake = m->next_poll;
	due = atomic_load(&m->due_wall);
	if (due != NO_DUE) {
		/* On the monotonic clock, just after the due ms: never a run
		 * that finds it not due yet and spins. */
		int64_t at = due - wall + 1;
		if (at < 0)
			at = 0;
		if (at < wake - now)
			wake = now + at;
	}
	*wake_ms = wake;
	*done = 0;
	return HL_OK;
}

static void mover_task_free(void *arg)
{
	mover *m = arg;
	m->task = NULL; /* under wait_mu */
	mover_unref(m);
}

static const hl_drive_ops mover_ops = {mover_step, NULL, mover_task_free};

/* Kick the task (caller holds wait_mu). */
static void mover_kick_locked(mover *m)
{
	if (m->task)
		hl__task_kick_locked(m->task);
}

/* A message: a due time in decimal (subscriber thread, wait_mu held). A
 * later time than the timer's leaves it (the earlier element is still
 * there, or the run finds nothing and the next due time comes back). */
static void on_message(void *arg, const char *p, size_t len)
{
	mover *m = arg;
	int64_t t;
	if (len == 0 || len > 20 ||
	    hl__parse_i64(p, len, &t, "a due time") != HL_OK) {
		atomic_store(&m->run_now, 1); /* not a time: look now */
	} else {
		due_min(m, t);
	}
	mover_kick_locked(m);
}

/* The subscription became active (wait_mu held): catch up now. */
static void on_active(void *arg)
{
	mover *m = arg;
	atomic_store(&m->run_now, 1);
	mover_kick_locked(m);
}

static void on_listener_done(void *arg)
{
	mover_unref(arg);
}

/* Stop listening and end the task (reg_mu held). */
static void mover_stop(mover *m)
{
	hl_client *c = m->c;
	if (m->listener) {
		hl__pubsub_unlisten(c, m->listener);
		m->listener = NULL;
	}
	atomic_store(&m->stopping, 1);
	pthread_mutex_lock(&c->wait_mu);
	mover_kick_locked(m);
	pthread_mutex_unlock(&c->wait_mu);
}

/* ---- the entry in the client's registry ---------------------------------- */

static void entry_close(void *value)
{
	mover_stop(value);
}

static void entry_free(void *value)
{
	mover_unref(value);
}

static const hl_reg_ops entry_ops = {entry_close, entry_free};

/* The mover of o's name, started if new (reg_mu held). */
static mover *mover_get(hl_object *o, int *rc)
{
	hl_client *c = o->client;
	mover *m = hl__registry_get(c, HL_KIND_DELAYED_QUEUE, o->name,
	                            o->name_len);
	int i;
	if (m)
		return m;
	*rc = HL_ENOMEM;
	if (!(m = calloc(1, sizeof(*m))))
		goto nomem;
	atomic_init(&m->refs, 1);
	atomic_init(&m->stopping, 0);
	atomic_init(&m->run_now, 0);
	atomic_init(&m->due_wall, NO_DUE);
	atomic_init(&m->transfers, 0);
	m->c = c;
	m->name = malloc(o->name_len + 1);
	m->chan = hl__derive_name("redisson_delay_queue_channel:", "", o->name,
	                          o->name_len, 0, &m->chan_len);
	for (i = 0; i < 3; i++) {
		m->keys[i] = malloc(o->key_lens[i] + 1);
		if (m->keys[i]) {
			memcpy(m->keys[i], o->keys[i], o->key_lens[i]);
			m->key_lens[i] = o->key_lens[i];
		}
	}
	if (!m->name || !m->chan || !m->keys[0] || !m->keys[1] || !m->keys[2]) {
		mover_unref(m);
		goto nomem;
	}
	memcpy(m->name, o->name, o->name_len);
	m->name[o->name_len] = '\0';
	m->name_len = o->name_len;
	if (hl__registry_put(c, HL_KIND_DELAYED_QUEUE, o->name, o->name_len, m,
	                     &entry_ops) != HL_OK) {
		mover_unref(m);
		goto nomem;
	}
	/* The task first (its first step is the start-up catch-up), then
	 * the listener, whose messages kick it. */
	atomic_fetch_add(&m->refs, 1); /* the task's */
	pthread_mutex_lock(&c->wait_mu);
	*rc = hl__task_background_out(c, &mover_ops, m, &m->task);
	pthread_mutex_unlock(&c->wait_mu);
	if (*rc != HL_OK) {
		/* (its free ran: the task's reference went) */
		hl__registry_del(c, HL_KIND_DELAYED_QUEUE, o->name,
		                 o->name_len);
		mover_unref(m);
		return NULL;
	}
	atomic_fetch_add(&m->refs, 1); /* the listener's */
	if ((*rc = hl__pubsub_listen_ex(&m->listener, c, m->chan, m->chan_len,
	                                on_message, on_active, on_listener_done,
	                                m)) != HL_OK) {
		atomic_fetch_sub(&m->refs, 1);
		mover_stop(m);
		hl__registry_del(c, HL_KIND_DELAYED_QUEUE, o->name,
		                 o->name_len);
		mover_unref(m);
		return NULL;
	}
	return m;
nomem:
	hl__fail(HL_ENOMEM, "out of memory");
	return NULL;
}

/* x no longer counts; the last object of the name stops the mover. */
static void detach(hl_client *c, delayed_obj *x)
{
	mover *m;
	int last = 0;
	hl__registry_lock(c);
	m = x->m;
	x->m = NULL;
	if (m && --m->nobjs == 0) {
		last = 1;
		hl__registry_del(c, HL_KIND_DELAYED_QUEUE, m->name,
		                 m->name_len);
		mover_stop(m);
	}
	hl__registry_unlock(c);
	if (last)
		mover_unref(m); /* the registry's */
}

static int delayed_open(hl_object *o)
{
	hl_client *c = o->client;
	delayed_obj *x;
	mover *m;
	int rc = HL_OK;
	if (c->conf.url.topology == HL_TOPO_CLUSTER &&
	    !hl__name_slot_safe(o->name, o->name_len))
		return hl__fail(HL_EINVAL,
		                "%s name: in a cluster its keys would hash to "
		                "different slots (an unbalanced brace in the "
		                "name)",
		                o->kind->name);
	if (!(x = calloc(1, sizeof(*x))))
		return hl__fail(HL_ENOMEM, "out of memory");
	o->state = x;
	hl__registry_lock(c);
	m = mover_get(o, &rc);
	if (m) {
		m->nobjs++;
		x->m = m;
	}
	hl__registry_unlock(c);
	return m ? HL_OK : rc;
}

static void delayed_close(hl_object *o)
{
	delayed_obj *x = o->state;
	/* A child after fork(): the client's locks are the parent's. */
	if (x && o->client->fork_gen == atomic_load(&hl__fork_generation))
		detach(o->client, x);
	free(x);
	o->state = NULL;
}

const hl_kindhooks hl__hooks_delayed = {delayed_open, delayed_close};

/* ---- the operations ------------------------------------------------------ */

/* Tell this client's mover of name (if any) of a due time. */
static void hint_due(hl_client *c, const hl_object *o, int64_t due)
{
	mover *m;
	hl__registry_lock(c);
	m = hl__registry_get(c, HL_KIND_DELAYED_QUEUE, o->name, o->name_len);
	if (m) {
		due_min(m, due);
		pthread_mutex_lock(&c->wait_mu);
		mover_kick_locked(m);
		pthread_mutex_unlock(&c->wait_mu);
	}
	hl__registry_unlock(c);
}

int hl__delayed_queue_offer(hl_gridcall *call)
{
	const hl_object *o = call->obj;
	const hl_conf *cf = &o->client->conf;
	const hl_arg *v = &call->args[0];
	int64_t delay = call->args[1].i, due, ttl;
	const char *argv[9];
	size_t lens[9], n;
	char id[33], rnd[8], sdue[HL_DEC_MAX], sttl[HL_DEC_MAX], label[120];
	char *w, *mark, *chan;
	hl_reply *r = NULL;
	int rc;
	if (delay < 0)
		return hl__fail(HL_EINVAL,
		                "%s: offer: delay is %lld ms; it must be 0 or "
		                "more",
		                hl__grid_label(o, label, sizeof(label)),
		                (long long)delay);
	if (delay > HL_TIME_MAX)
		return hl__fail(
		        HL_EINVAL,
		        "%s: offer: delay is %lld ms; it must be at most "
		        "2^40 ms (about 34 years)",
		        hl__grid_label(o, label, sizeof(label)),
		        (long long)delay);
	due = wall_ms() + delay;
	ttl = (int64_t)(cf->retry_attempts + 1) *
	      (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	if (ttl < 1000)
		ttl = 1000;
	/* The member's 8 unique bytes and the request marker: made once,
	 * the same for every resend of this call. */
	hl__unique_id(rnd, sizeof(rnd));
	hl__random_hex(id);
	w = hl__derive_name("hilock_request:", "", o->name, o->name_len, 0, &n);
	chan = hl__derive_name("redisson_delay_queue_channel:", "", o->name,
	                       o->name_len, 0, &lens[7]);
	if (!w || !chan || !(mark = realloc(w, n + 33))) {
		free(w);
		free(chan);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	mark[n] = ':';
	memcpy(mark + n + 1, id, 32);
	argv[0] = o->keys[1];
	lens[0] = o->key_lens[1];
	argv[1] = o->keys[2];
	lens[1] = o->key_lens[2];
	argv[2] = mark;
	lens[2] = n + 33;
	argv[3] = sdue;
	lens[3] = hl__fmt_i64(sdue, due);
	argv[4] = rnd;
	lens[4] = 8;
	argv[5] = v->bytes ? (const char *)v->bytes : "";
	lens[5] = v->len;
	argv[6] = sttl;
	lens[6] = hl__fmt_i64(sttl, ttl);
	argv[7] = chan;
	argv[8] = strcmp(hl__router_publish(o->client), "SPUBLISH") == 0 ? "1"
	                                                                 : "0";
	lens[8] = 1;
	rc = hl__grid_eval(call, &hl__script_delayed_queue_offer, 3, 6, argv,
	                   lens, &r);
	free(mark);
	free(chan);
	if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	if (rc == HL_OK)
		hint_due(o->client, o, due);
	return rc;
}

int hl__delayed_queue_read_all(hl_gridcall *call)
{
	const hl_object *o = call->obj;
	hl_value **items = NULL;
	size_t n = 0, cap = 0;
	int64_t start = 0;
	int rc = HL_OK;
	for (;;) {
		char s[HL_DEC_MAX], e[HL_DEC_MAX];
		const char *argv[3] = {o->keys[2], s, e};
		size_t lens[3], i, len;
		hl_reply *r = NULL;
		lens[0] = o->key_lens[2];
		lens[1] = hl__fmt_i64(s, start);
		lens[2] = hl__fmt_i64(e, start + 999);
		rc = hl__grid_eval(call, &hl__script_delayed_queue_read_range,
		                   1, 2, argv, lens, &r);
		if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
			rc = hl__grid_result(call, r); /* fails, naming it */
		else if (rc == HL_OK && hl__reply_type(r) != HL_REPLY_ARRAY)
			rc = hl__fail(HL_EPROTOCOL, "read_all: not an array");
		if (rc != HL_OK) {
			hl__reply_free(r);
			break;
		}
		len = hl__reply_len(r);
		if (n + len > cap) {
			size_t nc = (n + len) * 2 + 16;
			hl_value **ni = realloc(items, nc * sizeof(*ni));
			if (!ni) {
				hl__reply_free(r);
				rc = hl__fail(HL_ENOMEM, "out of memory");
				break;
			}
			items = ni;
			cap = nc;
		}
		for (i = 0; i < len; i++) {
			const hl_reply *x = hl__reply_at(r, i);
			hl_value *val =
			        hl__reply_type(x) == HL_REPLY_STRING
			                ? hl__value_bytes(
			                          hl__reply_str(x),
			                          (size_t)hl__reply_strlen(x))
			                : hl__value_new(HL_VALUE_NIL);
			if (!val) {
				rc = hl__fail(HL_ENOMEM, "out of memory");
				break;
			}
			items[n++] = val;
		}
		hl__reply_free(r);
		if (rc != HL_OK || len < 1000)
			break;
		start += 1000;
	}
	if (rc == HL_OK && call->out) {
		hl_value *arr = hl__value_array_take(items, n);
		if (!arr) {
			rc = hl__fail(HL_ENOMEM, "out of memory");
		} else {
			free(items);
			*call->out = arr;
			return HL_OK;
		}
	}
	while (n > 0)
		hl_value_free(items[--n]);
	free(items);
	return rc;
}

int hl__delayed_queue_destroy(hl_gridcall *call)
{
	delayed_obj *x = call->obj->state;
	char label[120];
	if (!x)
		return hl__fail(
		        HL_EINVAL,
		        "%s: destroy: a local operation has no task "
		        "form",
		        hl__grid_label(call->obj, label, sizeof(label)));
	detach(call->obj->client, x);
	if (call->out && !(*call->out = hl__value_new(HL_VALUE_NIL)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}
