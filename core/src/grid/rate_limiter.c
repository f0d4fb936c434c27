/*
 * The rate limiter's own C (core/grid/rate_limiter.kind; the algorithm,
 * the waits and the lost-reply rule: docs/grid-rate-limiter.md).
 *
 * An attempt runs the acquire script once with the client's wall clock
 * and a fresh 16-byte id (hl__unique_bytes): the grant's member in the log,
 * which is also the request's id. A resend of the same command after a lost
 * reply finds that member and answers "taken" without taking again, so an
 * acquire is sent again like a read. A wait is a task of the engine (task.c):
 * the attempts run on its executors, parked between them for the delay the
 * script answers, gated per client and name (this client's waiters take
 * turns, first come first served); a blocking call makes its first attempt
 * on its own thread and then waits for the task.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid/grid.h"
#include "prim/object.h"

#define RL_NKEYS       5 /* name, value, value:<id>, permits, permits:<id> */
#define RL_PERMITS_MAX 4294967295LL /* packed as 4 bytes */

static void put_keys(const hl_object *o, const char **argv, size_t *lens)
{
	int i;
	for (i = 0; i < RL_NKEYS; i++) {
		argv[i] = o->keys[i];
		lens[i] = o->key_lens[i];
	}
}

/* Argument i of call as an integer, def when not given. */
static int64_t arg_int(const hl_gridcall *call, size_t i, int64_t def)
{
	if (i >= call->nargs || call->args[i].type != HL_ARG_INT)
		return def;
	return call->args[i].i;
}

static int check_permits(const hl_object *o, const char *op, int64_t n)
{
	char label[120];
	if (n >= 1 && n <= RL_PERMITS_MAX)
		return HL_OK;
	return hl__fail(HL_EINVAL, "%s: %s: permits = %lld: use 1 to 2^32-1",
	                hl__grid_label(o, label, sizeof(label)), op,
	                (long long)n);
}

/* An error reply of the scripts, said plainly. */
static int script_failed(const hl_object *o, const char *op, const hl_reply *r,
                         int64_t permits)
{
	char label[120];
	const char *e = hl__reply_str(r);
	hl__grid_label(o, label, sizeof(label));
	if (strstr(e, "not initialized"))
		return hl__fail(HL_EINVAL,
		                "%s: %s: it has no rate (never set, or its "
		                "keep-alive expired): set it first "
		                "(try_set_rate)",
		                label, op);
	if (strstr(e, "exceed the rate"))
		return hl__fail(HL_EINVAL,
		                "%s: %s: %lld permits are more than the rate "
		                "allows in one interval: they could never be "
		                "granted (%.100s)",
		                label, op, (long long)permits, e);
	if (strncmp(e, "WRONGTYPE", 9) == 0)
		return hl__fail(HL_EREDIS,
		                "%s: %s: a key of it holds another type of "
		                "value than a rate limiter's (%.200s)",
		                label, op, e);
	return hl__fail(HL_EREDIS, "%s: %s: redis error: %.400s", label, op, e);
}

/* ---- the config ---------------------------------------------------------- */

static int set_config(hl_gridcall *call, const hl_script_def *script)
{
	char label[120], num[3][HL_DEC_MAX];
	const char *argv[RL_NKEYS + 4];
	size_t lens[RL_NKEYS + 4];
	int64_t mode = arg_int(call, 0, -1), rate = arg_int(call, 1, 0),
	        interval = arg_int(call, 2, 0), keep = arg_int(call, 3, 0);
	hl_reply *r = NULL;
	int rc;
	hl__grid_label(call->obj, label, sizeof(label));
	if (mode != 0 && mode != 1)
		return hl__fail(HL_EINVAL,
		                "%s: %s: mode = %lld: use 0 (overall) or 1 "
		                "(per client)",
		                label, call->op->name, (long long)mode);
	if (rate < 1 || rate > RL_PERMITS_MAX)
		return hl__fail(HL_EINVAL,
		                "%s: %s: rate = %lld: use 1 to 2^32-1 permits "
		                "per interval",
		                label, call->op->name, (long long)rate);
	if (keep && keep < interval)
		return hl__fail(HL_EINVAL,
		                "%s: %s: keep_alive = %lld ms is shorter than "
		                "the interval (%lld ms): the grants would "
		                "expire inside their window",
		                label, call->op->name, (long long)keep,
		                (long long)interval);
	put_keys(call->obj, argv, lens);
	argv[5] = num[0];
	lens[5] = hl__fmt_i64(num[0], rate);
	argv[6] = num[1];
	lens[6] = hl__fmt_i64(num[1], interval);
	argv[7] = mode ? "1" : "0";
	lens[7] = 1;
	argv[8] = num[2];
	lens[8] = hl__fmt_i64(num[2], keep);
	rc = hl__grid_eval(call, script, RL_NKEYS, 4, argv, lens, &r);
	if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

int hl__rate_limiter_try_set_rate(hl_gridcall *call)
{
	return set_config(call, &hl__script_rate_limiter_try_set_rate);
}

int hl__rate_limiter_set_rate(hl_gridcall *call)
{
	return set_config(call, &hl__script_rate_limiter_set_rate);
}

/* ---- an attempt, and the wait ------------------------------------------ */

typedef struct rl_ctx {
	hl_object *obj; /* the task's own copy */
	int64_t permits;
	int64_t deadline_ms;  /* monotonic; -1: none */
	int64_t *retry_out;   /* a blocking caller's, else NULL */
	int64_t *retry_at;    /* when *retry_out was said (monotonic) */
	unsigned char id[16]; /* the last attempt's grant */
	int have_id;
	int pending; /* the last attempt got no answer: it may have landed */
} rl_ctx;

static int run_script(rl_ctx *x, const hl_script_def *s, int op,
                      const hl_bound *b, int nargs, const char **args,
                      const size_t *alens, hl_reply **r)
{
	const char *argv[RL_NKEYS + 3];
	size_t lens[RL_NKEYS + 3];
	hl_gridcall call;
	int i;
	put_keys(x->obj, argv, lens);
	for (i = 0; i < nargs; i++) {
		argv[RL_NKEYS + i] = args[i];
		lens[RL_NKEYS + i] = alens[i];
	}
	memset(&call, 0, sizeof(call));
	call.obj = x->obj;
	call.op = hl__grid_op(op);
	call.b = b;
	return hl__grid_eval(&call, s, RL_NKEYS, nargs, argv, lens, r);
}

static int rl_attempt(void *arg, const hl_bound *b, int *acquired,
                      int64_t *retry_ms)
{
	rl_ctx *x = arg;
	char pn[HL_DEC_MAX], now[HL_DEC_MAX];
	const char *args[3];
	size_t lens[3];
	hl_reply *r = NULL;
	int64_t wait;
	int rc;
	*acquired = 0;
	*retry_ms = -1;
	/* After an unanswered attempt the same grant is asked again (with
	 * the time now): the script finds it if the first landed. */
	if (!x->pending && hl__unique_bytes(x->id, sizeof(x->id)) != 0)
		return hl__fail(HL_ESYSTEM, "no random key from the system");
	x->have_id = 1;
	x->pending = 1;
	args[0] = pn;
	lens[0] = hl__fmt_i64(pn, x->permits);
	args[1] = now;
	lens[1] = hl__fmt_i64(now, wall_ms());
	args[2] = (const char *)x->id;
	lens[2] = sizeof(x->id);
	rc = run_script(x, &hl__script_rate_limiter_acquire,
	                HL_OP_RATE_LIMITER_TRY_ACQUIRE, b, 3, args, lens, &r);
	if (rc != HL_OK)
		return rc;
	x->pending = 0;
	switch (hl__reply_type(r)) {
	case HL_REPLY_NIL:
		*acquired = 1;
		wait = 0;
		break;
	case HL_REPLY_INTEGER:
		wait = hl__reply_int(r) < 1 ? 1 : hl__reply_int(r);
		break;
	case HL_REPLY_ERROR:
		rc = script_failed(x->obj, "try_acquire", r, x->permits);
		hl__reply_free(r);
		return rc;
	default:
		hl__reply_free(r);
		return hl__fail(HL_EPROTOCOL,
		                "rate limiter: acquire: unexpected reply");
	}
	hl__reply_free(r);
	if (x->retry_out) {
		*x->retry_out = wait;
		*x->retry_at = hl__now_ms();
	}
	if (*acquired)
		return HL_OK;
	*retry_ms = wait;
	/* a permit is free only after the wait ends: no use sleeping */
	if (x->deadline_ms >= 0 && wait > hl__remaining(x->deadline_ms))
		return hl__fail(HL_ETIMEDOUT,
		                "rate limiter: no permit within the wait (the "
		                "next in %lld ms)",
		                (long long)wait);
	return HL_OK;
}

/* Cancelled while the attempt that took them ran: give them back. */
static void rl_undo(void *arg, const hl_bound *b)
{
	rl_ctx *x = arg;
	char pn[HL_DEC_MAX];
	const char *args[2];
	size_t lens[2];
	hl_reply *r = NULL;
	if (!x->have_id)
		return;
	args[0] = pn;
	lens[0] = hl__fmt_i64(pn, x->permits);
	args[1] = (const char *)x->id;
	lens[1] = sizeof(x->id);
	run_script(x, &hl__script_rate_limiter_undo,
	           HL_OP_RATE_LIMITER_TRY_ACQUIRE, b, 2, args, lens, &r);
	hl__reply_free(r);
}

/* The wait ended (deadline, cancel, an error) with its last attempt
 * unanswered: take back the grant it may have made. */
static void rl_give_up(void *arg, const hl_bound *b)
{
	rl_ctx *x = arg;
	if (x->pending)
		rl_undo(arg, b);
}

static void rl_free(void *arg)
{
	rl_ctx *x = arg;
	hl_object_free(x->obj);
	free(x);
}

static const hl_wait_ops rl_wait_ops = {rl_attempt, rl_undo, rl_give_up,
                                        rl_free, NULL};

/* A wait spec of a new context for obj (inside its client). */
static int wait_spec(hl_wait_spec *spec, const hl_object *obj, int64_t permits,
                     int64_t timeout_ms)
{
	hl_client *c = obj->client;
	rl_ctx *x = calloc(1, sizeof(*x));
	if (x && !(x->obj = hl__grid_object_dup(obj))) {
		free(x);
		x = NULL;
	}
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	x->permits = permits;
	x->deadline_ms = hl__deadline(timeout_ms);
	memset(spec, 0, sizeof(*spec));
	spec->ops = &rl_wait_ops;
	spec->arg = x;
	spec->gate = x->obj->keys[3];
	spec->gate_len = x->obj->key_lens[3];
	spec->deadline_ms = x->deadline_ms;
	spec->io_deadline_ms = hl__io_deadline(c, spec->deadline_ms);
	spec->once = timeout_ms == 0;
	spec->first = HL_WAIT_FRESH;
	spec->interrupt_gen = atomic_load(&c->interrupt_gen);
	return HL_OK;
}

static int check_wait(const hl_object *obj, const char *op, int64_t permits,
                      int64_t timeout_ms)
{
	char label[120];
	int rc;
	if ((rc = check_permits(obj, op, permits)) != HL_OK)
		return rc;
	if (timeout_ms < -1 || timeout_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "%s: %s: timeout = %lld ms: use -1 (forever), "
		                "0 (one attempt) or up to 2^40 ms",
		                hl__grid_label(obj, label, sizeof(label)), op,
		                (long long)timeout_ms);
	return HL_OK;
}

/* Take permits within timeout_ms (-1: forever), on a caller inside the
 * client: *ok, and *retry (ms until a permit may be free; 0 if taken). */
static int rl_wait(hl_object *obj, int64_t permits, int64_t timeout_ms,
                   hl_cancel *cancel, int *ok, int64_t *retry)
{
	hl_client *c = obj->client;
	hl_wait_spec spec;
	hl_task *t;
	rl_ctx *x;
	int64_t said = -1, said_at = 0;
	int rc, done = 0, result = 0;
	*ok = 0;
	*retry = 0;
	if ((rc = wait_spec(&spec, obj, permits, timeout_ms)) != HL_OK)
		return rc;
	x = spec.arg;
	x->retry_out = &said;
	x->retry_at = &said_at;
	if (hl_cancel_is_triggered(cancel)) {
		rl_free(x);
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	}
	rc = hl__first_attempt(c, &spec, cancel, &done, &result);
	if (done) {
		if (x->pending) { /* ended unanswered: take it back */
			hl_bound b;
			hl__bound_init(&b, c, -1, NULL, 0);
			rl_undo(x, &b);
		}
		rl_free(x);
	} else {
		spec.blocking = 1;
		if ((rc = hl__task_wait_start(&t, c, &spec)) == HL_OK)
			rc = hl__task_finish_blocking(t, cancel, &result);
		if (rc == HL_ETIMEDOUT) { /* the wait ran out */
			rc = HL_OK;
			result = 0;
		}
	}
	if (rc != HL_OK)
		return rc;
	*ok = result != 0;
	if (!*ok && said >= 0) {
		int64_t left = said - (hl__now_ms() - said_at);
		*retry = left > 0 ? left : 0;
	}
	return HL_OK;
}

int hl__rate_limiter_try_acquire(hl_gridcall *call)
{
	int64_t permits = arg_int(call, 0, 1), timeout = arg_int(call, 1, 0);
	int64_t retry = 0;
	int ok = 0, rc;
	if ((rc = check_wait(call->obj, "try_acquire", permits, timeout)) !=
	    HL_OK)
		return rc;
	if (timeout < 0) {
		char label[120];
		return hl__fail(HL_EINVAL,
		                "%s: try_acquire: timeout = %lld: use 0 (one "
		                "attempt) or more (acquire waits forever)",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                (long long)timeout);
	}
	rc = rl_wait(call->obj, permits, timeout, call->b->cancel, &ok, &retry);
	if (rc == HL_OK && call->out && !(*call->out = hl__value_int(ok)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}

int hl__rate_limiter_acquire(hl_gridcall *call)
{
	int64_t permits = arg_int(call, 0, 1), retry = 0;
	int ok = 0, rc;
	if ((rc = check_wait(call->obj, "acquire", permits, -1)) != HL_OK)
		return rc;
	rc = rl_wait(call->obj, permits, -1, call->b->cancel, &ok, &retry);
	if (rc == HL_OK && !ok)
		rc = hl__fail(HL_ETIMEDOUT, "rate limiter: permits not taken");
	if (rc == HL_OK && call->out &&
	    !(*call->out = hl__value_new(HL_VALUE_NIL)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}

/* ---- the others ------------------------------------------------------------
 */

int hl__rate_limiter_available_permits(hl_gridcall *call)
{
	char now[HL_DEC_MAX];
	const char *argv[RL_NKEYS + 1];
	size_t lens[RL_NKEYS + 1];
	hl_reply *r = NULL;
	int rc;
	put_keys(call->obj, argv, lens);
	argv[RL_NKEYS] = now;
	lens[RL_NKEYS] = hl__fmt_i64(now, wall_ms());
	rc = hl__grid_eval(call, &hl__script_rate_limiter_available, RL_NKEYS,
	                   1, argv, lens, &r);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = script_failed(call->obj, call->op->name, r, 0);
	else if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

int hl__rate_limiter_release(hl_gridcall *call)
{
	char pn[HL_DEC_MAX];
	const char *argv[RL_NKEYS + 1];
	size_t lens[RL_NKEYS + 1];
	int64_t permits = arg_int(call, 0, 1);
	hl_reply *r = NULL;
	int rc;
	if ((rc = check_permits(call->obj, "release", permits)) != HL_OK)
		return rc;
	put_keys(call->obj, argv, lens);
	argv[RL_NKEYS] = pn;
	lens[RL_NKEYS] = hl__fmt_i64(pn, permits);
	rc = hl__grid_eval(call, &hl__script_rate_limiter_release, RL_NKEYS, 1,
	                   argv, lens, &r);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = script_failed(call->obj, call->op->name, r, permits);
	else if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

/* ---- public ------------------------------------------------------------- */

static int rl_enter(hl_object *obj)
{
	char label[120];
	if (!obj)
		return hl__fail(HL_EINVAL, "object is NULL");
	if (obj->kind->kind != HL_KIND_RATE_LIMITER)
		return hl__fail(HL_EINVAL, "%s is not a rate limiter",
		                hl__grid_label(obj, label, sizeof(label)));
	return hl__client_enter(obj->client);
}

int hl_rate_limiter_try_acquire_ex(int *out_acquired, int64_t *retry_after_ms,
                                   hl_object *obj, int64_t permits,
                                   int64_t timeout_ms, hl_cancel *cancel)
{
	int64_t retry = 0;
	int ok = 0, rc;
	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if ((rc = rl_enter(obj)) != HL_OK)
		return rc;
	if ((rc = check_wait(obj, "try_acquire", permits, timeout_ms)) == HL_OK)
		rc = rl_wait(obj, permits, timeout_ms, cancel, &ok, &retry);
	hl__client_leave(obj->client);
	if (rc == HL_OK) {
		*out_acquired = ok;
		if (retry_after_ms)
			*retry_after_ms = retry;
	}
	return rc;
}

int hl_rate_limiter_try_acquire_start(hl_task **out, hl_object *obj,
                                      int64_t permits, int64_t timeout_ms)
{
	hl_wait_spec spec;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	*out = NULL;
	if ((rc = rl_enter(obj)) != HL_OK)
		return rc;
	if ((rc = check_wait(obj, "try_acquire", permits, timeout_ms)) ==
	            HL_OK &&
	    (rc = wait_spec(&spec, obj, permits, timeout_ms)) == HL_OK)
		rc = hl__task_wait_start(out, obj->client, &spec);
	hl__client_leave(obj->client);
	return rc;
}

int hl__rate_limiter_call_start(hl_task **out, hl_object *obj, int op,
                                const hl_arg *args, size_t nargs)
{
	int acquire = op == HL_OP_RATE_LIMITER_ACQUIRE;
	int64_t v[2] = {1, acquire ? -1 : 0};
	char label[120];
	size_t i;
	hl__grid_label(obj, label, sizeof(label));
	if (nargs > (acquire ? 1u : 2u))
		return hl__fail(HL_EINVAL, "%s: %s takes %u arguments, not %zu",
		                label, acquire ? "acquire" : "try_acquire",
		                acquire ? 1u : 2u, nargs);
	for (i = 0; i < nargs; i++) {
		if (args[i].type == HL_ARG_NONE)
			continue;
		if (args[i].type != HL_ARG_INT)
			return hl__fail(HL_EINVAL, "%s: %s must be an integer",
			                label, i ? "timeout" : "permits");
		v[i] = args[i].i;
	}
	if (!acquire && v[1] < 0)
		return hl__fail(HL_EINVAL,
		                "%s: try_acquire: timeout = %lld: use 0 (one "
		                "attempt) or more (acquire waits forever)",
		                label, (long long)v[1]);
	return hl_rate_limiter_try_acquire_start(out, obj, v[0], v[1]);
}
