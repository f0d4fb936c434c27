/*
 * The permit-expirable semaphore (Redisson RPermitExpirableSemaphore,
 * PROTOCOL 9): the available permits in <name>, and the permits out in the
 * zset {name}:timeout, each a random 16-byte id scored with the wall-clock
 * ms its lease ends (922337203685477: no lease). Every script first gives
 * back the permits whose lease ran out, so a holder that died returns its
 * permits when their leases end, whoever looks next. Ids are shown as 32
 * lowercase hex characters.
 *
 * Across processes, waiters queue in hilock's line beside Redisson's state
 * (prim/line.h, docs/PROTOCOL.md), as the semaphore's do: permits go to
 * the first in line, and a release tells the first its turn.
 */
#include "prim/line.h"
#include "prim/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_LEASE      "922337203685477"
#define ID_BYTES      16
#define HL_EXPSEM_MAX 1000 /* permits in one call */

struct hl_expsem {
	hl_named o;
	hl_line_keys keys; /* derived once: every release names them */
};

/* How an acquire goes with the line: one attempt (no place), or a wait
 * (takes a place). */
enum { LINE_ONCE = 0, LINE_WAIT };

static int xs_enter(const hl_expsem *s)
{
	if (!s)
		return hl__fail(HL_EINVAL, "semaphore is NULL");
	return hl__object_enter(&s->o);
}

/* Hex id (any even number of hex digits, as Redisson decodes them) to
 * bytes: the length, or -1. */
static int id_decode(unsigned char *out, size_t cap, const char *hex)
{
	size_t n, i;
	if (!hex)
		return -1;
	n = strlen(hex);
	if (n == 0 || n % 2 || n / 2 > cap)
		return -1;
	for (i = 0; i < n; i++) {
		char ch = hex[i];
		int v = ch >= '0' && ch <= '9'   ? ch - '0'
		        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		        : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
		                                 : -1;
		if (v < 0)
			return -1;
		if (i % 2 == 0)
			out[i / 2] = (unsigned char)(v << 4);
		else
			out[i / 2] |= (unsigned char)v;
	}
	return (int)(n / 2);
}

static int bad_id(const char *id)
{
	return hl__fail(HL_EINVAL,
	                "permit id \"%.80s\" is not hex (32 lowercase hex "
	                "characters, as acquire gives them)",
	                id ? id : "(null)");
}

static const char *expiry(char *buf, int64_t lease_ms)
{
	return lease_ms < 0 ? NO_LEASE : num(buf, wall_ms() + lease_ms);
}

/* KEYS the counter, the leases, the channel (a marker when marker);
 * ARGV now, the publish command, then extra..., (the marker's lifetime). */
static int xs_call(const hl_named *o, int64_t *out, enum hl_script_id id,
                   const char *const *extra, const size_t *extra_len,
                   int nextra, int marker, int flags, const hl_bound *b,
                   int *replicated, enum hl_sent *sent, const char *doing)
{
	script_args a;
	int i, rc;
	memset(&a, 0, sizeof(a));
	arg(&a, o->name, o->name_len);
	arg(&a, o->aux, o->aux_len);
	arg(&a, o->channel, o->channel_len);
	if (marker && (rc = hl__object_marker(&a, o)) != HL_OK)
		return rc;
	a.nkeys = a.n;
	arg_str(&a, num(a.nums[0], wall_ms()));
	arg_str(&a, hl__router_publish(o->client));
	for (i = 0; i < nextra; i++)
		arg(&a, extra[i], extra_len[i]);
	if (marker)
		arg_str(&a, hl__object_marker_ttl(&a, o));
	return hl__object_eval(o, out, id, &a, flags, b, replicated, sent,
	                       doing);
}

/* Release the permit of raw id (len bytes): the release script with the
 * line's keys, so that the first in line hears its turn. */
static int release_id(const hl_named *o, const hl_line_keys *k, int64_t *out,
                      const char *id, size_t len, const hl_bound *b,
                      enum hl_sent *sent)
{
	const char *x[3] = {id, k->line, k->dl};
	size_t xl[3] = {len, k->line_len, k->dl_len};
	return xs_call(o, out, HL_SCRIPT_PSEM_LINE_RELEASE, x, xl, 3, 1,
	               HL_CMD_WRITE | HL_CMD_IDEMPOTENT, b, NULL, sent,
	               "releasing");
}

/* Release the permits of ids (n raw ids), those that are out. */
static void give_back_ids(const hl_named *o, const hl_line_keys *k,
                          const unsigned char *ids, size_t n, const hl_bound *b)
{
	size_t i;
	int64_t v;
	for (i = 0; i < n; i++)
		release_id(o, k, &v, (const char *)ids + i * ID_BYTES, ID_BYTES,
		           b, NULL);
}

/* One attempt to take n permits with the given ids (raw bytes) and
 * expiry: *acquired, or *retry_ms until the nearest lease ends (-1: a
 * release will say). how: LINE_WAIT takes (or renews) the client's place
 * in the line when not acquired, and *ticket, *first say where it stands
 * (ticket 0: no place). The ids make it safe to resend: a copy that finds
 * its first id taken answers acquired. */
static int take(const hl_named *o, const hl_line_keys *k, int how,
                const unsigned char *ids, size_t n, const char *exp,
                const hl_bound *b, int *acquired, int64_t *retry_ms,
                int64_t *ticket, int *first)
{
	hl_client *c = o->client;
	size_t argc = 3 + 9 + n, i;
	const char **argv = malloc(argc * sizeof(*argv));
	size_t *lens = malloc(argc * sizeof(*lens));
	char now[24], cnt[24], lease[24], label[80];
	hl_reply *r = NULL;
	enum hl_sent sent = HL_SENT_NOTHING;
	int rc, replicated = -1;
	*acquired = 0;
	*retry_ms = -1;
	*ticket = 0;
	*first = 0;
	if (!argv || !lens) {
		free(argv);
		free(lens);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	argv[0] = o->name;
	lens[0] = o->name_len;
	argv[1] = o->aux;
	lens[1] = o->aux_len;
	argv[2] = o->channel;
	lens[2] = o->channel_len;
	argv[3] = num(now, wall_ms());
	lens[3] = strlen(now);
	argv[4] = hl__router_publish(c);
	lens[4] = strlen(argv[4]);
	argv[5] = num(cnt, (int64_t)n);
	lens[5] = strlen(cnt);
	argv[6] = exp;
	lens[6] = strlen(exp);
	argv[7] = how == LINE_WAIT ? "1" : "0";
	lens[7] = 1;
	argv[8] = num(lease, HL_LINE_LEASE_MS);
	lens[8] = strlen(lease);
	argv[9] = c->id;
	lens[9] = HL_UUID_LEN;
	argv[10] = k->line;
	lens[10] = k->line_len;
	argv[11] = k->dl;
	lens[11] = k->dl_len;
	for (i = 0; i < n; i++) {
		argv[12 + i] = (const char *)ids + i * ID_BYTES;
		lens[12 + i] = ID_BYTES;
	}
	rc = hl__eval(c, &r, HL_SCRIPT_PSEM_LINE_ACQUIRE, 3, (int)argc, argv,
	              lens, HL_CMD_WRITE | HL_CMD_IDEMPOTENT, &sent, b,
	              &replicated);
	free(argv);
	free(lens);
	if (rc != HL_OK && sent != HL_SENT_NOTHING && rc != HL_ECLOSED) {
		/* cut short after it may have run: its ids are ours alone,
		 * so releasing them takes back exactly what it took */
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", hl_error_last());
		give_back_ids(o, k, ids, n, NULL);
		hl__fail(rc, "%s", msg);
	}
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_ARRAY && hl__reply_len(r) == 1)
		*acquired = 1;
	else if (hl__reply_type(r) == HL_REPLY_ARRAY && hl__reply_len(r) == 3) {
		*retry_ms = hl__reply_int(hl__reply_at(r, 0));
		*ticket = hl__reply_int(hl__reply_at(r, 1));
		*first = hl__reply_int(hl__reply_at(r, 2)) == 1;
	} else
		rc = hl__fail(hl__reply_type(r) == HL_REPLY_ERROR
		                      ? HL_EREDIS
		                      : HL_EPROTOCOL,
		              "acquiring permits of semaphore \"%s\": %.300s",
		              hl__object_label(o, label, sizeof(label)),
		              hl__reply_type(r) == HL_REPLY_ERROR
		                      ? hl__reply_str(r)
		                      : "unexpected reply");
	hl__reply_free(r);
	/* taken on the master, no replica confirmed it: give them back and
	 * say so (the engine tries again while the wait lasts) */
	if (rc == HL_OK && *acquired && replicated == 0) {
		*acquired = 0;
		give_back_ids(o, k, ids, n, b);
		*retry_ms = c->conf.retry_delay_ms;
	}
	return rc;
}

/* ---- waiting ------------------------------------------------------------- */

typedef struct xs_ctx {
	hl_line_wait w; /* first: the line's ops take the context as one */
	size_t n;
	int64_t lease_ms;
	unsigned char *ids; /* n * 16 bytes */
} xs_ctx;

static int xs_attempt(void *arg, const hl_bound *b, int *acquired,
                      int64_t *retry_ms)
{
	xs_ctx *x = arg;
	char buf[24];
	int64_t ticket;
	int first;
	int rc = take(x->w.o, &x->w.keys, x->w.in_line ? LINE_WAIT : LINE_ONCE,
	              x->ids, x->n, expiry(buf, x->lease_ms), b, acquired,
	              retry_ms, &ticket, &first);
	if (rc == HL_OK && !*acquired && x->w.in_line) {
		/* in line: renewed by the next attempt, at most half the
		 * place's lease later; a lease that ends sooner says sooner */
		hl__line_note(&x->w.line, ticket, first, 1);
		if (ticket > 0 &&
		    (*retry_ms < 0 || *retry_ms > HL_LINE_LEASE_MS / 2))
			*retry_ms = HL_LINE_LEASE_MS / 2;
	}
	return rc;
}

static void xs_undo(void *arg, const hl_bound *b)
{
	xs_ctx *x = arg;
	give_back_ids(x->w.o, &x->w.keys, x->ids, x->n, b);
}

static void xs_free(void *arg)
{
	xs_ctx *x = arg;
	hl__line_wait_fini_locked(&x->w); /* under wait_mu, by the engine */
	free(x->ids);
	free(x);
}

static const hl_wait_ops xs_wait_ops = {xs_attempt, xs_undo, NULL, xs_free,
                                        NULL};
static const hl_wait_ops xs_line_ops = {xs_attempt, xs_undo,
                                        hl__line_wait_give_up, xs_free,
                                        hl__line_wait_wants};

/* New random ids: into ids_out (n * 33 bytes: 32 hex and a NUL each) and
 * the context's raw bytes. */
static int wait_spec(hl_wait_spec *spec, const hl_expsem *s, char *ids_out,
                     size_t n, int64_t wait_ms, int64_t lease_ms)
{
	xs_ctx *x = calloc(1, sizeof(*x));
	size_t i;
	int rc;
	if (!x || !(x->ids = malloc(n * ID_BYTES))) {
		free(x);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	/* a wait takes a place in the line; one attempt does not */
	if ((rc = hl__line_wait_init(&x->w, &s->o, wait_ms != 0)) != HL_OK) {
		free(x->ids);
		free(x);
		return rc;
	}
	x->n = n;
	x->lease_ms = lease_ms;
	for (i = 0; i < n; i++) {
		char *hex = ids_out + i * (HL_PERMIT_ID_LEN + 1);
		hl__random_hex(hex);
		id_decode(x->ids + i * ID_BYTES, ID_BYTES, hex);
	}
	hl__object_wait_spec(spec, x->w.o,
	                     x->w.in_line ? &xs_line_ops : &xs_wait_ops, x, 1,
	                     wait_ms);
	hl__line_wait_spec(spec, &x->w);
	return HL_OK;
}

static int check_acquire(const char *ids, size_t n, int64_t wait_ms,
                         int64_t lease_ms)
{
	int rc;
	if (!ids)
		return hl__fail(HL_EINVAL, "ids is NULL");
	if (n < 1 || n > HL_EXPSEM_MAX)
		return hl__fail(HL_EINVAL, "permits = %zu: use 1 to %d", n,
		                HL_EXPSEM_MAX);
	if ((rc = hl__check_wait(wait_ms)) != HL_OK)
		return rc;
	if (lease_ms == 0 || lease_ms < -1 || lease_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "lease_ms = %lld: use -1 (no lease) or 1 to "
		                "2^40 ms",
		                (long long)lease_ms);
	return HL_OK;
}

/* ---- public ----------------------------------------------------------------
 */

int hl_expsem_new(hl_expsem **out, hl_client *client, const void *name,
                  size_t name_len)
{
	void *h = NULL;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	rc = hl__object_new(&h, sizeof(hl_expsem), client, name, name_len,
	                    "redisson_sc:", 0, ":timeout", "semaphore");
	if (rc != HL_OK)
		return rc;
	if ((rc = hl__line_keys_init(&((hl_expsem *)h)->keys,
	                             ((hl_expsem *)h)->o.name,
	                             ((hl_expsem *)h)->o.name_len)) != HL_OK) {
		hl_expsem_free(h);
		return rc;
	}
	*out = h;
	return HL_OK;
}

void hl_expsem_free(hl_expsem *sem)
{
	if (!sem)
		return;
	hl__line_keys_free(&sem->keys);
	hl__object_fini(&sem->o);
	free(sem);
}

int hl_expsem_try_acquire_start(hl_task **out, char *ids, size_t n,
                                hl_expsem *sem, int64_t wait_ms,
                                int64_t lease_ms)
{
	hl_wait_spec spec;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = check_acquire(ids, n, wait_ms, lease_ms)) != HL_OK)
		return rc;
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	if ((rc = wait_spec(&spec, sem, ids, n, wait_ms, lease_ms)) == HL_OK)
		rc = hl__task_wait_start(out, sem->o.client, &spec);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_expsem_try_acquire(int *out_acquired, char *ids, size_t n,
                          hl_expsem *sem, int64_t wait_ms, int64_t lease_ms,
                          hl_cancel *cancel)
{
	hl_wait_spec spec;
	int rc;
	if (!out_acquired)
		return hl__fail(HL_EINVAL, "out_acquired is NULL");
	if ((rc = check_acquire(ids, n, wait_ms, lease_ms)) != HL_OK)
		return rc;
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	if ((rc = wait_spec(&spec, sem, ids, n, wait_ms, lease_ms)) != HL_OK) {
		hl__client_leave(sem->o.client);
		return rc;
	}
	return hl__object_wait(sem->o.client, &spec, cancel, out_acquired);
}

int hl_expsem_acquire(char *ids, size_t n, hl_expsem *sem, int64_t lease_ms,
                      hl_cancel *cancel)
{
	int acquired = 0;
	int rc = hl_expsem_try_acquire(&acquired, ids, n, sem, -1, lease_ms,
	                               cancel);
	if (rc == HL_OK && !acquired)
		rc = hl__fail(HL_ETIMEDOUT, "permits not acquired");
	return rc;
}

/* A script about one permit id. */
static int id_call(hl_expsem *sem, int64_t *out, enum hl_script_id id,
                   const char *permit, const char *extra, int marker, int flags,
                   enum hl_sent *sent, const char *doing)
{
	unsigned char raw[64];
	const char *x[2];
	size_t xl[2];
	int len, rc;
	if ((len = id_decode(raw, sizeof(raw), permit)) < 0)
		return bad_id(permit);
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	x[0] = (const char *)raw;
	xl[0] = (size_t)len;
	if (extra) {
		x[1] = extra;
		xl[1] = strlen(extra);
	}
	if (id == HL_SCRIPT_PSEM_LINE_RELEASE)
		rc = release_id(&sem->o, &sem->keys, out, x[0], xl[0], NULL,
		                sent);
	else
		rc = xs_call(&sem->o, out, id, x, xl, extra ? 2 : 1, marker,
		             flags, NULL, NULL, sent, doing);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_expsem_release(hl_expsem *sem, const char *id)
{
	char label[80];
	int64_t v = 0;
	enum hl_sent sent = HL_SENT_NOTHING;
	int rc = id_call(sem, &v, HL_SCRIPT_PSEM_LINE_RELEASE, id, NULL, 1,
	                 HL_CMD_WRITE | HL_CMD_IDEMPOTENT, &sent, "releasing");
	if (rc != HL_OK && rc != HL_ECLOSED && rc != HL_EINVAL &&
	    sent != HL_SENT_NOTHING)
		/* Each resend carried the same marker: it ran at most once.
		 * Released again, a permit that is back answers HL_ENOTHELD:
		 * safe either way. */
		return hl__fail_wrap(
		        HL_EINDOUBT,
		        "releasing permit %s of semaphore \"%s\" "
		        "was not confirmed: it may or may not be "
		        "back (releasing it again is safe)",
		        id, hl__object_label(&sem->o, label, sizeof(label)));
	if (rc != HL_OK)
		return rc;
	if (v == -1)
		return hl__fail(HL_ENOTHELD,
		                "semaphore \"%s\": permit %s has been released "
		                "already or does not exist",
		                hl__object_label(&sem->o, label, sizeof(label)),
		                id);
	if (v == 0)
		return hl__fail(HL_ELOST,
		                "semaphore \"%s\": permit %s was released, but "
		                "its lease had ended before (anyone could have "
		                "had it meanwhile)",
		                hl__object_label(&sem->o, label, sizeof(label)),
		                id);
	return HL_OK;
}

int hl_expsem_update_lease(hl_expsem *sem, const char *id, int64_t lease_ms)
{
	char label[80], buf[24];
	int64_t v = 0;
	int rc;
	if (lease_ms == 0 || lease_ms < -1 || lease_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "lease_ms = %lld: use -1 (no lease) or 1 to "
		                "2^40 ms",
		                (long long)lease_ms);
	rc = id_call(sem, &v, HL_SCRIPT_PSEM_UPDATE_LEASE, id,
	             expiry(buf, lease_ms), 0, HL_CMD_WRITE | HL_CMD_IDEMPOTENT,
	             NULL, "updating the lease of a permit of");
	if (rc == HL_OK && v != 1)
		rc = hl__fail(
		        HL_ENOTHELD,
		        "semaphore \"%s\": permit %s is not out (released, "
		        "or its lease ended)",
		        hl__object_label(&sem->o, label, sizeof(label)), id);
	return rc;
}

int hl_expsem_lease_time(int64_t *out, hl_expsem *sem, const char *id)
{
	char label[80];
	int64_t v = 0;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	rc = id_call(sem, &v, HL_SCRIPT_PSEM_LEASE_TIME, id, NULL, 0,
	             HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL,
	             "reading the lease of a permit of");
	if (rc == HL_OK && v == -2)
		rc = hl__fail(
		        HL_ENOTHELD,
		        "semaphore \"%s\": permit %s is not out (released, "
		        "or its lease ended)",
		        hl__object_label(&sem->o, label, sizeof(label)), id);
	if (rc == HL_OK)
		*out = v;
	return rc;
}

/* A count: available, all, acquired. */
static int count_call(int64_t *out, hl_expsem *sem, enum hl_script_id id,
                      const char *doing)
{
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	rc = xs_call(&sem->o, out, id, NULL, NULL, 0, 0,
	             HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, NULL, NULL, doing);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_expsem_available(int64_t *out, hl_expsem *sem)
{
	return count_call(out, sem, HL_SCRIPT_PSEM_AVAILABLE,
	                  "counting the available permits of");
}

int hl_expsem_permits(int64_t *out, hl_expsem *sem)
{
	return count_call(out, sem, HL_SCRIPT_PSEM_PERMITS,
	                  "counting the permits of");
}

int hl_expsem_acquired(int64_t *out, hl_expsem *sem)
{
	return count_call(out, sem, HL_SCRIPT_PSEM_ACQUIRED,
	                  "counting the acquired permits of");
}

/* A change of the number of permits by n (marker: resent safely). */
static int permits_call(int64_t *out, hl_expsem *sem, enum hl_script_id id,
                        int64_t n, int marker, const char *doing)
{
	char buf[24];
	const char *x = num(buf, n);
	size_t xl = strlen(x);
	int rc;
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	rc = xs_call(&sem->o, out, id, &x, &xl, 1, marker,
	             HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, NULL, NULL, doing);
	hl__client_leave(sem->o.client);
	return rc;
}

int hl_expsem_try_set_permits(int *out_set, hl_expsem *sem, int64_t permits)
{
	int64_t v = 0;
	int rc = hl__check_permits(permits, 0, "permits");
	if (rc == HL_OK)
		rc = permits_call(&v, sem, HL_SCRIPT_PSEM_TRY_SET, permits, 1,
		                  "setting the permits of");
	if (rc == HL_OK && out_set)
		*out_set = v == 1;
	return rc;
}

int hl_expsem_set_permits(hl_expsem *sem, int64_t permits)
{
	int64_t v = 0;
	int rc = hl__check_permits(permits, 0, "permits");
	return rc == HL_OK ? permits_call(&v, sem, HL_SCRIPT_PSEM_SET, permits,
	                                  0, "setting the permits of")
	                   : rc;
}

int hl_expsem_add_permits(int64_t *out_available, hl_expsem *sem, int64_t delta)
{
	int64_t v = 0;
	int rc;
	if (delta < -HL_TIME_MAX || delta > HL_TIME_MAX)
		return hl__fail(HL_EINVAL, "delta = %lld: use -2^40 to 2^40",
		                (long long)delta);
	rc = permits_call(&v, sem, HL_SCRIPT_PSEM_ADD, delta, 1,
	                  "adding permits to");
	if (rc == HL_OK && out_available)
		*out_available = v;
	return rc;
}

int hl_expsem_delete(int *out_existed, hl_expsem *sem)
{
	int rc;
	if ((rc = xs_enter(sem)) != HL_OK)
		return rc;
	rc = hl__object_delete(&sem->o, out_existed);
	hl__client_leave(sem->o.client);
	return rc;
}
