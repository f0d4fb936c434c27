/*
 * The count-down latch (Redisson RCountDownLatch, PROTOCOL 10): a counter
 * <name> and the channel redisson_countdownlatch__channel__{name} (always
 * in braces), on which "0" says the count reached zero (the latch opened)
 * and "1" that a count was set (closed again). A waiter reads the count
 * and, while it is above zero, sleeps until a message: never polling.
 */
#include "prim/object.h"

#include <stdlib.h>
#include <string.h>

struct hl_latch {
	hl_named o;
};

static int latch_enter(const hl_latch *l)
{
	if (!l)
		return hl__fail(HL_EINVAL, "latch is NULL");
	return hl__object_enter(&l->o);
}

int hl_latch_new(hl_latch **out, hl_client *client, const void *name,
                 size_t name_len)
{
	void *h = NULL;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	rc = hl__object_new(&h, sizeof(hl_latch), client, name, name_len,
	                    "redisson_countdownlatch__channel__", 1, NULL,
	                    "latch");
	if (rc == HL_OK)
		*out = h;
	return rc;
}

void hl_latch_free(hl_latch *latch)
{
	if (!latch)
		return;
	hl__object_fini(&latch->o);
	free(latch);
}

/* A latch script: KEYS the counter, the channel (and a marker); ARGV the
 * publish command (then n, then the marker's lifetime). */
static int latch_call(hl_latch *l, int64_t *out, enum hl_script_id id,
                      int64_t n, int with_n, int marker, enum hl_sent *sent,
                      const char *doing)
{
	script_args a;
	int rc;
	if ((rc = latch_enter(l)) != HL_OK)
		return rc;
	memset(&a, 0, sizeof(a));
	arg(&a, l->o.name, l->o.name_len);
	arg(&a, l->o.channel, l->o.channel_len);
	if (marker && (rc = hl__object_marker(&a, &l->o)) != HL_OK) {
		hl__client_leave(l->o.client);
		return rc;
	}
	a.nkeys = a.n;
	arg_str(&a, hl__router_publish(l->o.client));
	if (with_n)
		arg_str(&a, num(a.nums[0], n));
	if (marker)
		arg_str(&a, hl__object_marker_ttl(&a, &l->o));
	/* Not a synced eval in Redisson either (PROTOCOL 0.4): no WAIT. */
	rc = hl__object_eval(&l->o, out, id, &a,
	                     HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, NULL, sent,
	                     doing);
	hl__client_leave(l->o.client);
	return rc;
}

int hl_latch_try_set_count(int *out_set, hl_latch *latch, int64_t count)
{
	int64_t v = 0;
	int rc = hl__check_permits(count, 1, "count");
	if (rc == HL_OK)
		rc = latch_call(latch, &v, HL_SCRIPT_LATCH_TRY_SET, count, 1, 1,
		                NULL, "setting the count of");
	if (rc == HL_OK && out_set)
		*out_set = v == 1;
	return rc;
}

int hl_latch_count_down(int64_t *out_left, hl_latch *latch)
{
	int64_t v = 0;
	enum hl_sent sent = HL_SENT_NOTHING;
	char label[80];
	int rc = latch_call(latch, &v, HL_SCRIPT_LATCH_COUNT_DOWN, 0, 0, 1,
	                    &sent, "counting down");
	if (rc == HL_OK && out_left)
		*out_left = v > 0 ? v : 0;
	if (rc != HL_OK && rc != HL_ECLOSED && sent != HL_SENT_NOTHING)
		/* Sent, maybe run, never confirmed (every resend carried the
		 * same marker, so it counted at most once): counted down
		 * again, the latch could open one count early. */
		rc = hl__fail_wrap(
		        HL_EINDOUBT,
		        "counting down latch \"%s\" was not "
		        "confirmed: it may or may not have counted",
		        hl__object_label(&latch->o, label, sizeof(label)));
	return rc;
}

int hl_latch_count(int64_t *out, hl_latch *latch)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = latch_enter(latch)) != HL_OK)
		return rc;
	rc = hl__object_get(&latch->o, out, "reading the count of");
	hl__client_leave(latch->o.client);
	return rc;
}

int hl_latch_delete(int *out_existed, hl_latch *latch)
{
	int64_t v = 0;
	int rc = latch_call(latch, &v, HL_SCRIPT_LATCH_DELETE, 0, 0, 0, NULL,
	                    "deleting");
	if (rc == HL_OK && out_existed)
		*out_existed = v == 1;
	return rc;
}

/* ---- waiting ------------------------------------------------------------- */

/* A waiter's view: whether it saw the latch closed while its subscription
 * was active, and how many "0" messages had come by then. A latch gone
 * after that opened only if a "0" came since: deleted ("1"), it stays
 * closed for its waiters, as Redisson's. Before the subscription is
 * active, or once it was made anew (a reconnect, a failover), a latch gone
 * counts as open: its "0" may have been missed. */
typedef struct latch_ctx {
	hl_named *o;
	int closed_seen;
	uint64_t zero_gen, active_gen;
} latch_ctx;

static int latch_attempt(void *arg, const hl_bound *b, int *open,
                         int64_t *retry_ms)
{
	latch_ctx *x = arg;
	hl_named *o = x->o;
	const char *argv[2] = {"GET", o->name};
	size_t lens[2] = {3, o->name_len};
	hl_reply *r = NULL;
	uint64_t zero_gen = 0, active_gen = 0;
	int active = hl__pubsub_active(o->client, o->channel, o->channel_len,
	                               &zero_gen, &active_gen);
	int rc = hl__command(o->client, &r, 2, argv, lens, HL_CMD_IDEMPOTENT,
	                     NULL, b);
	int64_t count = 0;
	*open = 0;
	*retry_ms = -1; /* "0" on the channel opens it */
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_STRING)
		count = strtoll(hl__reply_str(r), NULL, 10);
	else if (hl__reply_type(r) != HL_REPLY_NIL)
		rc = hl__reply_error(r, "reading the latch's count");
	hl__reply_free(r);
	if (rc != HL_OK)
		return rc;
	if (count > 0) {
		if (active &&
		    (!x->closed_seen || active_gen != x->active_gen)) {
			x->closed_seen = 1;
			x->zero_gen = zero_gen;
			x->active_gen = active_gen;
		}
	} else if (!x->closed_seen || zero_gen != x->zero_gen ||
	           active_gen != x->active_gen) {
		*open = 1;
	}
	return HL_OK;
}

static void latch_undo(void *arg, const hl_bound *b)
{
	(void)arg; /* an open latch takes nothing */
	(void)b;
}

static void latch_ctx_free(void *arg)
{
	latch_ctx *x = arg;
	hl__object_dup_free(x->o);
	free(x);
}

static const hl_wait_ops latch_wait_ops = {latch_attempt, latch_undo, NULL,
                                           latch_ctx_free, NULL};

static int wait_spec(hl_wait_spec *spec, const hl_latch *l, int64_t timeout_ms)
{
	latch_ctx *x = calloc(1, sizeof(*x));
	if (x && !(x->o = hl__object_dup(&l->o))) {
		free(x);
		x = NULL;
	}
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	hl__object_wait_spec(spec, x->o, &latch_wait_ops, x, 0, timeout_ms);
	return HL_OK;
}

int hl_latch_wait_start(hl_task **out, hl_latch *latch, int64_t timeout_ms)
{
	hl_wait_spec spec;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = hl__check_wait(timeout_ms)) != HL_OK)
		return rc;
	if ((rc = latch_enter(latch)) != HL_OK)
		return rc;
	if ((rc = wait_spec(&spec, latch, timeout_ms)) == HL_OK)
		rc = hl__task_wait_start(out, latch->o.client, &spec);
	hl__client_leave(latch->o.client);
	return rc;
}

int hl_latch_wait(int *out_open, hl_latch *latch, int64_t timeout_ms,
                  hl_cancel *cancel)
{
	hl_wait_spec spec;
	int rc;
	if (!out_open)
		return hl__fail(HL_EINVAL, "out_open is NULL");
	if ((rc = hl__check_wait(timeout_ms)) != HL_OK)
		return rc;
	if ((rc = latch_enter(latch)) != HL_OK)
		return rc;
	if ((rc = wait_spec(&spec, latch, timeout_ms)) != HL_OK) {
		hl__client_leave(latch->o.client);
		return rc;
	}
	return hl__object_wait(latch->o.client, &spec, cancel, out_open);
}
