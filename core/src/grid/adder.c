/*
 * The long and double adders (Redisson's RLongAdder and RDoubleAdder,
 * GRID-PROTOCOL 2.5). The sum lives in the clients' memory: an add is an
 * atomic add on the object's own counter, with no round trip. A sum asks
 * every client that has an adder of the name, over the topic
 * {name}:adder-topic ("1:<id>"), to add its whole local sum to the
 * counter {name}:<id>:counter and then give one permit of the semaphore
 * {name}:<id>:semaphore; the asker waits for as many permits as the
 * publish had receivers, then takes the counter. A reset ("0:<id>") has
 * each client zero its local sums before it gives its permit.
 *
 * In a client, every adder object of one name shares one entry of the
 * client's registry: one listener on the topic (so one answer per client,
 * the sum of its objects' local sums, as Redisson since #5742), and the
 * answers in flight, which run on the executors (the subscriber thread
 * only hands them over).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid/grid.h"
#include "prim/object.h"

/* What a sum or a reset waits for the answers when not told: as
 * Redisson's sync sum() (60 s). */
#define HL_ADDER_WAIT_MS 60000

typedef struct adder_obj adder_obj;

/* The client's state for one name (a registry value). References: the
 * registry's (while objects of the name live), the listener's (until it is
 * done), one per answer in flight. */
typedef struct adder_entry {
	atomic_int refs;
	hl_client *c;
	int kind;
	int dbl;
	pthread_mutex_t mu; /* objs */
	adder_obj *objs;
	hl_listener *listener; /* under reg_mu; NULL once it went */
	atomic_int inflight;   /* answers not finished */
	size_t name_len, topic_len;
	char *name, *topic;
} adder_entry;

/* An object's local sum. */
struct adder_obj {
	atomic_uint_fast64_t v; /* int64 (two's complement), or double bits */
	atomic_int destroyed;
	adder_entry *e; /* NULL once detached */
	adder_obj *prev, *next;
};

static void entry_unref(adder_entry *e)
{
	if (atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&e->mu);
	free(e->name);
	free(e->topic);
	free(e);
}

static double bits_double(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

/* ---- answering a sum or a reset (on an executor) ------------------------ */

typedef struct answer {
	adder_entry *e;
	int reset;
	size_t id_len;
	char id[];
} answer;

static void answer_free(void *arg)
{
	answer *a = arg;
	atomic_fetch_sub(&a->e->inflight, 1);
	entry_unref(a->e);
	free(a);
}

/* This client's contribution: the sum of its objects' local sums (a
 * reset takes them, leaving 0). */
static void local_take(adder_entry *e, int reset, int64_t *li, double *ld)
{
	adder_obj *o;
	uint64_t total = 0;
	double dt = 0;
	pthread_mutex_lock(&e->mu);
	for (o = e->objs; o; o = o->next) {
		uint64_t v = reset ? atomic_exchange(
		                             &o->v, e->dbl ? double_bits(0) : 0)
		                   : atomic_load(&o->v);
		if (e->dbl)
			dt += bits_double(v);
		else
			total += v;
	}
	pthread_mutex_unlock(&e->mu);
	*li = (int64_t)total;
	*ld = dt;
}

/* A key of request id: {name}:<id><suffix>. */
static char *request_key(const adder_entry *e, const char *id, size_t id_len,
                         const char *suffix, size_t *out_len)
{
	char buf[200];
	if (id_len > 128)
		return NULL;
	snprintf(buf, sizeof(buf), ":%.*s%s", (int)id_len, id, suffix);
	return hl__derive_name("", buf, e->name, e->name_len, 0, out_len);
}

/* Give one permit of the request's semaphore. */
static int give_permit(hl_client *c, adder_entry *e, const char *id,
                       size_t id_len, const hl_bound *b)
{
	size_t n;
	char *name = request_key(e, id, id_len, ":semaphore", &n);
	hl_semaphore *s = NULL;
	int rc;
	if (!name)
		return hl__fail(HL_ENOMEM, "out of memory");
	rc = hl_semaphore_new(&s, c, name, n);
	free(name);
	if (rc == HL_OK)
		rc = hl__semaphore_give(s, 1, b);
	hl_semaphore_free(s);
	return rc;
}

static int answer_step(void *arg, struct hl_task *self, int stop, int *done,
                       int *result, int64_t *wake_ms)
{
	answer *a = arg;
	adder_entry *e = a->e;
	hl_client *c = e->c;
	int64_t li = 0;
	double ld = 0;
	hl_bound b;
	(void)self;
	(void)wake_ms;
	*done = 1;
	*result = 0;
	local_take(e, a->reset, &li, &ld);
	if (stop != HL_OK)
		return stop; /* the client closed: nothing can be sent */
	hl__bound_init(&b, c, -1, NULL, 0);
	if (!a->reset && (e->dbl ? ld != 0 : li != 0)) {
		char num[HL_NUM_MAX];
		size_t klen, nlen;
		char *key = request_key(e, a->id, a->id_len, ":counter", &klen);
		const char *argv[3];
		size_t lens[3];
		hl_reply *r = NULL;
		int rc;
		if (!key)
			return hl__fail(HL_ENOMEM, "out of memory");
		nlen = e->dbl ? hl__fmt_double(num, sizeof(num), ld)
		              : hl__fmt_i64(num, li);
		argv[0] = e->dbl ? "INCRBYFLOAT" : "INCRBY";
		lens[0] = strlen(argv[0]);
		argv[1] = key;
		lens[1] = klen;
		argv[2] = num;
		lens[2] = nlen;
		/* not idempotent: never sent twice */
		rc = hl__command(c, &r, 3, argv, lens, HL_CMD_WRITE, NULL, &b);
		hl__reply_free(r);
		free(key);
		(void)rc; /* the permit goes anyway: the sum must not hang */
	}
	return give_permit(c, e, a->id, a->id_len, &b);
}

static const hl_drive_ops answer_ops = {answer_step, NULL, answer_free};

/* A message on the topic (the subscriber thread, wait_mu held): hand the
 * answer to the executors. */
static void on_message(void *arg, const char *p, size_t len)
{
	adder_entry *e = arg;
	answer *a;
	if (len < 3 || len > 130 || (p[0] != '0' && p[0] != '1') || p[1] != ':')
		return; /* not a request */
	if (atomic_load(&e->c->closing))
		return; /* nothing could be sent any more */
	a = malloc(sizeof(*a) + len - 2);
	if (!a)
		return;
	a->e = e;
	a->reset = p[0] == '0';
	a->id_len = len - 2;
	memcpy(a->id, p + 2, len - 2);
	atomic_fetch_add(&e->refs, 1);
	atomic_fetch_add(&e->inflight, 1);
	hl__task_background_locked(e->c, &answer_ops, a);
}

static void on_listener_done(void *arg)
{
	entry_unref(arg);
}

/* ---- the entry in the client's registry --------------------------------- */

/* The client closes (reg_mu held): stop listening, and let the answers in
 * flight finish while round trips still work. */
static void entry_close(void *value)
{
	adder_entry *e = value;
	hl_client *c = e->c;
	int64_t until = hl__now_ms() + 2 * c->conf.command_timeout_ms;
	if (e->listener) {
		hl__pubsub_unlisten(c, e->listener);
		e->listener = NULL;
	}
	while (atomic_load(&e->inflight) > 0 && hl__now_ms() < until) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
}

static void entry_free(void *value)
{
	entry_unref(value);
}

static const hl_reg_ops entry_ops = {entry_close, entry_free};

/* The entry of o's name, made (listening) if new; reg_mu held. */
static adder_entry *entry_get(hl_object *o, int *rc)
{
	hl_client *c = o->client;
	int kind = o->kind->kind;
	adder_entry *e = hl__registry_get(c, kind, o->name, o->name_len);
	if (e)
		return e;
	*rc = HL_ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	e->c = c;
	e->kind = kind;
	e->dbl = kind == HL_KIND_DOUBLE_ADDER;
	pthread_mutex_init(&e->mu, NULL);
	atomic_init(&e->refs, 1);
	atomic_init(&e->inflight, 0);
	e->name = malloc(o->name_len + 1);
	e->topic = hl__derive_name("", ":adder-topic", o->name, o->name_len, 0,
	                           &e->topic_len);
	if (!e->name || !e->topic) {
		entry_unref(e);
		goto nomem;
	}
	memcpy(e->name, o->name, o->name_len);
	e->name[o->name_len] = '\0';
	e->name_len = o->name_len;
	if (hl__registry_put(c, kind, o->name, o->name_len, e, &entry_ops) !=
	    HL_OK) {
		entry_unref(e);
		goto nomem;
	}
	atomic_fetch_add(&e->refs, 1); /* the listener's */
	if ((*rc = hl__pubsub_listen(&e->listener, c, e->topic, e->topic_len,
	                             on_message, on_listener_done, e)) !=
	    HL_OK) {
		atomic_fetch_sub(&e->refs, 1);
		hl__registry_del(c, kind, o->name, o->name_len);
		entry_unref(e);
		return NULL;
	}
	return e;
nomem:
	hl__fail(HL_ENOMEM, "out of memory");
	return NULL;
}

/* Take x out of its entry: its local sum no longer counts; the last
 * object of the name stops the listening. */
static void detach(hl_client *c, adder_obj *x)
{
	adder_entry *e;
	int last;
	hl__registry_lock(c);
	e = x->e;
	if (!e) {
		hl__registry_unlock(c);
		return;
	}
	pthread_mutex_lock(&e->mu);
	if (x->prev)
		x->prev->next = x->next;
	else
		e->objs = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->e = NULL;
	last = e->objs == NULL;
	pthread_mutex_unlock(&e->mu);
	if (last) {
		hl__registry_del(c, e->kind, e->name, e->name_len);
		if (e->listener) {
			/* Requests already counted on this client still get
			 * their permit (with nothing added): a sum elsewhere
			 * does not hang. */
			hl__pubsub_unlisten(c, e->listener);
			e->listener = NULL;
		}
	}
	hl__registry_unlock(c);
	if (last)
		entry_unref(e); /* the registry's */
}

static int adder_open(hl_object *o)
{
	hl_client *c = o->client;
	adder_obj *x;
	adder_entry *e;
	hl_bound b;
	int rc = HL_OK;
	if (c->conf.url.topology == HL_TOPO_CLUSTER &&
	    !hl__name_slot_safe(o->name, o->name_len))
		return hl__fail(HL_EINVAL,
		                "%s name: in a cluster its keys would hash to "
		                "different slots (an unbalanced brace in the "
		                "name)",
		                o->kind->name);
	x = calloc(1, sizeof(*x));
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	atomic_init(&x->v,
	            o->kind->kind == HL_KIND_DOUBLE_ADDER ? double_bits(0) : 0);
	atomic_init(&x->destroyed, 0);
	o->state = x;
	hl__registry_lock(c);
	e = entry_get(o, &rc);
	if (e) {
		pthread_mutex_lock(&e->mu);
		x->next = e->objs;
		if (e->objs)
			e->objs->prev = x;
		e->objs = x;
		x->e = e;
		pthread_mutex_unlock(&e->mu);
	}
	hl__registry_unlock(c);
	if (!e)
		return rc;
	/* As Redisson's constructor: listening before the object is used,
	 * so a sum asked after this counts it. */
	hl__bound_init(&b, c,
	               hl__deadline(c->conf.subscription_timeout_ms +
	                            c->conf.command_timeout_ms),
	               NULL, 0);
	rc = hl__pubsub_listen_wait(c, e->topic, e->topic_len, &b);
	if (rc == HL_ETIMEDOUT || rc == HL_EINTERRUPTED) {
		char label[120];
		rc = hl__fail(HL_ETIMEDOUT,
		              "%s: its topic subscription was not confirmed "
		              "within %lld ms (is Redis reachable?)",
		              hl__grid_label(o, label, sizeof(label)),
		              (long long)(c->conf.subscription_timeout_ms +
		                          c->conf.command_timeout_ms));
	}
	return rc;
}

static void adder_close(hl_object *o)
{
	adder_obj *x = o->state;
	/* A child after fork(): the client's locks belong to the parent's
	 * threads; take none. */
	if (o->client->fork_gen == atomic_load(&hl__fork_generation))
		detach(o->client, x);
	free(x);
	o->state = NULL;
}

const hl_kindhooks hl__hooks_adder = {adder_open, adder_close};

/* ---- the operations ------------------------------------------------------ */

/* The spec's custom functions (gen_kinds.c calls them). */
int hl__adder_add(hl_gridcall *call);
int hl__adder_increment(hl_gridcall *call);
int hl__adder_decrement(hl_gridcall *call);
int hl__adder_destroy(hl_gridcall *call);
int hl__adder_sum(hl_gridcall *call);
int hl__adder_reset(hl_gridcall *call);

static int local_obj(hl_gridcall *call, adder_obj **out)
{
	adder_obj *x = call->obj->state;
	char label[120];
	if (!x)
		return hl__fail(HL_EINVAL,
		                "%s: %s: a local operation has no task form",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->op->name);
	if (atomic_load(&x->destroyed))
		return hl__fail(HL_EINVAL, "%s: %s: the adder was destroyed",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->op->name);
	*out = x;
	return HL_OK;
}

static int add_local(hl_gridcall *call, int64_t i, double d)
{
	adder_obj *x;
	int rc = local_obj(call, &x);
	if (rc != HL_OK)
		return rc;
	if (call->obj->kind->kind == HL_KIND_DOUBLE_ADDER) {
		uint64_t old = atomic_load(&x->v);
		while (!atomic_compare_exchange_weak(
		        &x->v, &old, double_bits(bits_double(old) + d)))
			;
	} else {
		atomic_fetch_add(&x->v, (uint64_t)i);
	}
	if (call->out && !(*call->out = hl__value_new(HL_VALUE_NIL)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}

int hl__adder_add(hl_gridcall *call)
{
	const hl_arg *a = &call->args[0];
	if (call->obj->kind->kind == HL_KIND_DOUBLE_ADDER) {
		double d = a->type == HL_ARG_INT ? (double)a->i : a->d;
		return add_local(call, 0, d);
	}
	return add_local(call, a->i, 0);
}

int hl__adder_increment(hl_gridcall *call)
{
	return add_local(call, 1, 1.0);
}

int hl__adder_decrement(hl_gridcall *call)
{
	return add_local(call, -1, -1.0);
}

int hl__adder_destroy(hl_gridcall *call)
{
	adder_obj *x;
	int rc = local_obj(call, &x);
	if (rc != HL_OK)
		return rc;
	if (!atomic_exchange(&x->destroyed, 1))
		detach(call->obj->client, x);
	if (call->out && !(*call->out = hl__value_new(HL_VALUE_NIL)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}

/* Ask every client listening on the topic (request "1" sum, "0" reset),
 * wait for their permits within the call's timeout (argument 0, else the
 * call's bound, else HL_ADDER_WAIT_MS), and for a sum take the counter. */
static int ask(hl_gridcall *call, int sum)
{
	hl_object *o = call->obj;
	hl_client *c = o->client;
	int dbl = o->kind->kind == HL_KIND_DOUBLE_ADDER;
	char id[33], msg[40], label[120];
	char *topic = NULL, *counter = NULL, *semname = NULL;
	size_t topic_len, counter_len, sem_len;
	const char *argv[3];
	size_t lens[3];
	hl_reply *r = NULL;
	hl_semaphore *sem = NULL;
	int64_t n = 0, wait_ms, li = 0;
	double ld = 0;
	int rc, acquired = 1;
	hl__grid_label(o, label, sizeof(label));
	if (call->nargs > 0 && call->args[0].type == HL_ARG_INT)
		wait_ms = call->args[0].i;
	else if (call->b->deadline_ms >= 0)
		wait_ms = call->b->deadline_ms - hl__now_ms();
	else
		wait_ms = HL_ADDER_WAIT_MS;
	if (wait_ms < 0)
		wait_ms = 0;
	hl__random_hex(id);
	snprintf(msg, sizeof(msg), "%c:%s", sum ? '1' : '0', id);
	topic = hl__derive_name("", ":adder-topic", o->name, o->name_len, 0,
	                        &topic_len);
	{
		char suffix[64];
		snprintf(suffix, sizeof(suffix), ":%s:counter", id);
		counter = hl__derive_name("", suffix, o->name, o->name_len, 0,
		                          &counter_len);
		snprintf(suffix, sizeof(suffix), ":%s:semaphore", id);
		semname = hl__derive_name("", suffix, o->name, o->name_len, 0,
		                          &sem_len);
	}
	if (!topic || !counter || !semname) {
		rc = hl__fail(HL_ENOMEM, "out of memory");
		goto out;
	}
	argv[0] = hl__router_publish(c);
	lens[0] = strlen(argv[0]);
	argv[1] = topic;
	lens[1] = topic_len;
	argv[2] = msg;
	lens[2] = strlen(msg);
	if ((rc = hl__grid_command(call, 3, argv, lens, &r)) != HL_OK)
		goto out;
	if (hl__reply_type(r) != HL_REPLY_INTEGER) {
		rc = hl__fail(HL_EREDIS, "%s: %s: %s answered %.200s", label,
		              call->op->name, argv[0],
		              hl__reply_type(r) == HL_REPLY_ERROR
		                      ? hl__reply_str(r)
		                      : "no count");
		goto out;
	}
	n = hl__reply_int(r);
	hl__reply_free(r);
	r = NULL;
	if (n > 0) {
		if ((rc = hl_semaphore_new(&sem, c, semname, sem_len)) !=
		            HL_OK ||
		    (rc = hl_semaphore_try_acquire(&acquired, sem, n, wait_ms,
		                                   call->b->cancel)) != HL_OK)
			goto cleanup;
		hl__semaphore_forget(sem);
	}
	if (sum && acquired) {
		const char *ev[5] = {"EVAL",
		                     "local v = redis.call('get', KEYS[1]); "
		                     "redis.call('del', KEYS[1]); return v",
		                     "1", counter, NULL};
		size_t el[4];
		enum hl_sent sent = HL_SENT_NOTHING;
		el[0] = 4;
		el[1] = strlen(ev[1]);
		el[2] = 1;
		el[3] = counter_len;
		rc = hl__command(c, &r, 4, ev, el, HL_CMD_WRITE, &sent,
		                 call->b);
		if (rc != HL_OK && sent == HL_SENT_MAYBE)
			rc = hl__fail_wrap(HL_EINDOUBT,
			                   "%s: sum: reading the answers lost "
			                   "its reply: the sum is unknown",
			                   label);
		if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
			rc = hl__fail(HL_EREDIS, "%s: sum: %.300s", label,
			              hl__reply_str(r));
		else if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_STRING)
			rc = dbl ? hl__parse_double(hl__reply_str(r),
			                            hl__reply_strlen(r), &ld,
			                            label)
			         : hl__parse_i64(hl__reply_str(r),
			                         hl__reply_strlen(r), &li,
			                         label);
	}
cleanup : {
	/* The semaphore goes (and the counter of a sum that did not get
	 * every answer) whatever happened. */
	const char *dv[3] = {"DEL", semname, counter};
	size_t dl[3] = {3, sem_len, counter_len};
	hl_reply *dr = NULL;
	hl_bound db;
	hl__bound_init(&db, c, -1, NULL, 0);
	if (n > 0)
		hl__command(c, &dr, 2, dv, dl, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
		            NULL, &db);
	hl__reply_free(dr);
	dr = NULL;
	if (sum && (!acquired || rc != HL_OK)) {
		dv[1] = counter;
		dl[1] = counter_len;
		hl__command(c, &dr, 2, dv, dl, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
		            NULL, &db);
		hl__reply_free(dr);
	}
}
	if (rc == HL_OK && !acquired)
		rc = hl__fail(HL_ETIMEDOUT,
		              "%s: %s: %lld clients were asked and not all of "
		              "them answered within %lld ms (a client that "
		              "went away while asked?)",
		              label, call->op->name, (long long)n,
		              (long long)wait_ms);
	if (rc == HL_OK && call->out) {
		*call->out = !sum  ? hl__value_new(HL_VALUE_NIL)
		             : dbl ? hl__value_double(ld)
		                   : hl__value_int(li);
		if (!*call->out)
			rc = hl__fail(HL_ENOMEM, "out of memory");
	}
out:
	hl__reply_free(r);
	hl_semaphore_free(sem);
	free(topic);
	free(counter);
	free(semname);
	return rc;
}

int hl__adder_sum(hl_gridcall *call)
{
	return ask(call, 1);
}

int hl__adder_reset(hl_gridcall *call)
{
	return ask(call, 0);
}
