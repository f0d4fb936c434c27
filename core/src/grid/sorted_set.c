/*
 * The sorted set's C (core/grid/sorted_set.kind, docs/grid-sorted-set.md):
 * Redisson's RSortedSet is a Redis list kept in Java's natural order of
 * Strings, which Redisson changes only while it holds the RLock
 * redisson_sortedset_lock:{name} (a binary search by LINDEX round trips,
 * then its insert). hilock never takes that lock: each write is one script
 * that first looks at the lock hash and, when anybody holds it, changes
 * nothing and answers its PTTL; otherwise it searches and writes at once,
 * atomically, so it can never land in the middle of a Redisson writer's
 * steps. A busy answer is retried after a short pause (polling, growing
 * from 1 ms to 50 ms with jitter, never past the lock's PTTL) within the
 * call's deadline; no subscription.
 *
 * The same script refuses a set that a Java comparator orders (its
 * comparator key, or 4.4.0's comparator instance key, is present) and a
 * lock key that is not a hash. add refuses a value that is not valid
 * UTF-8: a Java String under StringCodec cannot hold it, and Java would
 * compare what it decodes (U+FFFD), not the bytes.
 *
 * Redisson's RPriorityQueue and RPriorityDeque (priority_queue.kind,
 * priority_deque.kind, docs/grid-priority-queue.md) are the same list
 * under the same lock with duplicates allowed, and one comparator key (the
 * suffix form {name}:redisson_sortedset_comparator): their operations
 * below run the same scripts (write's "insert" adds after the equal
 * values; a poll's "quick" answers nil for an empty list without looking
 * at the lock, as Redisson 4.3.1's LLEN before it locks).
 */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "grid/grid.h"
#include "prim/object.h"

extern const hl_script_def hl__script_sorted_set_write;
extern const hl_script_def hl__script_sorted_set_poll;

/* The custom operations (gen_kinds.c calls them). */
int hl__sorted_set_add(hl_gridcall *call);
int hl__sorted_set_remove(hl_gridcall *call);
int hl__sorted_set_contains(hl_gridcall *call);
int hl__sorted_set_poll_first(hl_gridcall *call);
int hl__sorted_set_poll_last(hl_gridcall *call);
int hl__priority_queue_add(hl_gridcall *call);
int hl__priority_queue_remove(hl_gridcall *call);
int hl__priority_queue_contains(hl_gridcall *call);
int hl__priority_queue_poll(hl_gridcall *call);
int hl__priority_queue_poll_last(hl_gridcall *call);
int hl__priority_blocking_queue_take(hl_gridcall *call);
int hl__priority_blocking_queue_poll_timeout(hl_gridcall *call);
int hl__priority_blocking_queue_take_last(hl_gridcall *call);
int hl__priority_blocking_queue_poll_last_timeout(hl_gridcall *call);

/* The longest pause between two attempts while the lock is held. */
#define SS_PAUSE_MAX_MS 50

/* The offset of the first byte of p that is not valid UTF-8 (as Java's
 * decoder takes it: no overlong forms, no surrogates, at most U+10FFFF),
 * or len when all of it is. */
static size_t utf8_invalid_at(const unsigned char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = p[i];
		size_t n, k;
		unsigned lo = 0x80, hi = 0xBF;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1;
		else if (c >= 0xE0 && c <= 0xEF) {
			n = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else
			return i;
		if (len - i <= n)
			return i;
		for (k = 1; k <= n; k++) {
			unsigned b = p[i + k];
			if (b < (k == 1 ? lo : 0x80) ||
			    b > (k == 1 ? hi : 0xBF))
				return i;
		}
		i += n + 1;
	}
	return len;
}

/* What the object is called in messages: a set, or a (priority) queue. */
static const char *noun(const hl_object *o)
{
	return o->kind->kind == HL_KIND_SORTED_SET ? "set" : "queue";
}

/* A script's error reply r as the caller's failure: a Java comparator or
 * a lock key of another type (HL_EINVAL, clear), else as any op's. */
static int script_failed(hl_gridcall *call, const hl_reply *r)
{
	char label[120], key[300];
	const hl_object *o = call->obj;
	const char *e = hl__reply_str(r);
	size_t n = hl__reply_strlen(r);
	hl__grid_label(o, label, sizeof(label));
	if (n > 20 && strncmp(e, "HILOCK_COMPARATOR ", 18) == 0 &&
	    e[18] >= '3' && e[18] < '1' + (int)o->nkeys && e[19] == ' ') {
		unsigned i =
		        (unsigned)(e[18] - '1'); /* the script's KEYS[i+1] */
		hl__printable(key, sizeof(key), o->keys[i], o->key_lens[i]);
		return hl__fail(
		        HL_EINVAL,
		        "%s: %s: the %s is ordered by a Java comparator "
		        "(%s holds %.200s): hilock keeps only the natural "
		        "order of Strings and refuses to guess another",
		        label, call->op->name, noun(o), key, e + 20);
	}
	if (n > 16 && strncmp(e, "HILOCK_LOCKTYPE ", 16) == 0) {
		hl__printable(key, sizeof(key), o->keys[1], o->key_lens[1]);
		return hl__fail(
		        HL_EREDIS,
		        "%s: %s: the %s's lock key %s holds a %.40s, not "
		        "an RLock hash",
		        label, call->op->name, noun(o), key, e + 16);
	}
	return hl__grid_result(call, r);
}

/* The call's deadline passed while the lock was held. */
static int lock_timeout(hl_gridcall *call)
{
	char label[120], key[300];
	const hl_object *o = call->obj;
	hl__printable(key, sizeof(key), o->keys[1], o->key_lens[1]);
	return hl__fail(HL_ETIMEDOUT,
	                "%s: %s: the %s's lock %s is held (a Redisson "
	                "writer) longer than the call's timeout",
	                hl__grid_label(o, label, sizeof(label)), call->op->name,
	                noun(o), key);
}

/* Wait before attempt number attempt (1, 2...) while the lock is held
 * with pttl ms left: HL_OK, or why the call stops (the deadline gives
 * HL_ETIMEDOUT naming the lock). */
static int pause_busy(hl_gridcall *call, int attempt, long long pttl)
{
	int64_t ms = (int64_t)1 << (attempt < 6 ? attempt - 1 : 6);
	unsigned char r = 0;
	int rc;
	if (ms > SS_PAUSE_MAX_MS)
		ms = SS_PAUSE_MAX_MS;
	(void)hl__random_bytes(&r, 1);
	ms += (ms * r) / 512; /* up to half again: waiters spread out */
	if (pttl > 0 && ms > pttl)
		ms = pttl;
	if (ms < 1)
		ms = 1;
	if (call->b->deadline_ms >= 0) {
		int64_t left = hl__remaining(call->b->deadline_ms);
		if (left <= 0)
			return lock_timeout(call);
		if (ms > left)
			ms = left;
	}
	rc = hl__pause(call->obj->client, ms, call->b);
	return rc == HL_ETIMEDOUT ? lock_timeout(call) : rc;
}

/* A busy answer ({pttl}): its PTTL in *pttl. */
static int is_busy(const hl_reply *r, long long *pttl)
{
	if (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) != 1)
		return 0;
	*pttl = hl__reply_int(hl__reply_at(r, 0));
	return 1;
}

/* Run script with argv (keys, then arguments) until it is not busy: its
 * final reply in *out (an error reply already turned into a failure). */
static int run_until_free(hl_gridcall *call, const hl_script_def *s, int nkeys,
                          int nargs, const char **argv, const size_t *lens,
                          hl_reply **out)
{
	int attempt, rc;
	long long pttl;
	*out = NULL;
	for (attempt = 1;; attempt++) {
		hl_reply *r = NULL;
		rc = hl__grid_eval(call, s, nkeys, nargs, argv, lens, &r);
		if (rc != HL_OK)
			return rc;
		if (hl__reply_type(r) == HL_REPLY_ERROR) {
			rc = script_failed(call, r);
			hl__reply_free(r);
			return rc;
		}
		if (!is_busy(r, &pttl)) {
			*out = r;
			return HL_OK;
		}
		hl__reply_free(r);
		if ((rc = pause_busy(call, attempt, pttl)) != HL_OK)
			return rc;
	}
}

static int set_bool(hl_gridcall *call, const hl_reply *r)
{
	if (hl__reply_type(r) != HL_REPLY_INTEGER)
		return hl__grid_result(call, r);
	if (call->out &&
	    !(*call->out = hl__value_int(hl__reply_int(r) ? 1 : 0)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}

/* The write script on the object's keys (the sorted set's four, a
 * priority queue's three) with what and the value. */
static int write_op(hl_gridcall *call, const char *what, size_t what_len)
{
	const hl_object *o = call->obj;
	const char *argv[HL_GRID_MAXKEYS + 2];
	size_t lens[HL_GRID_MAXKEYS + 2];
	hl_reply *r = NULL;
	int rc, i, nk = (int)o->nkeys;
	for (i = 0; i < nk; i++) {
		argv[i] = o->keys[i];
		lens[i] = o->key_lens[i];
	}
	argv[nk] = what;
	lens[nk] = what_len;
	argv[nk + 1] = call->args[0].bytes ? call->args[0].bytes : "";
	lens[nk + 1] = call->args[0].len;
	rc = run_until_free(call, &hl__script_sorted_set_write, nk, 2, argv,
	                    lens, &r);
	if (rc == HL_OK)
		rc = set_bool(call, r);
	hl__reply_free(r);
	return rc;
}

/* HL_OK if the value to add is valid UTF-8, else why not. */
static int check_utf8(hl_gridcall *call)
{
	char label[120];
	size_t bad = utf8_invalid_at((const unsigned char *)call->args[0].bytes,
	                             call->args[0].len);
	if (bad < call->args[0].len)
		return hl__fail(
		        HL_EINVAL,
		        "%s: %s: the value is not valid UTF-8 (at byte "
		        "%zu): a Java String (StringCodec) cannot hold "
		        "it, so its place in natural order is undefined",
		        hl__grid_label(call->obj, label, sizeof(label)),
		        call->op->name, bad);
	return HL_OK;
}

int hl__sorted_set_add(hl_gridcall *call)
{
	int rc = check_utf8(call);
	return rc != HL_OK ? rc : write_op(call, "add", 3);
}

int hl__sorted_set_remove(hl_gridcall *call)
{
	return write_op(call, "remove", 6);
}

int hl__sorted_set_contains(hl_gridcall *call)
{
	return write_op(call, "contains", 8);
}

/* A new request marker key of o: hilock_request:{name}:<32 hex> (*len). */
static char *new_marker(const hl_object *o, size_t *len)
{
	size_t n;
	char id[33], *mark;
	char *w = hl__derive_name("hilock_request:", "", o->name, o->name_len,
	                          0, &n);
	if (!w || !(mark = realloc(w, n + 33))) {
		free(w);
		return NULL;
	}
	hl__random_hex(id);
	mark[n] = ':';
	memcpy(mark + n + 1, id, 32);
	*len = n + 33;
	return mark;
}

/* The poll script's argv for mark (kept at least min_ms), end and quick;
 * num holds its lifetime's digits. */
static void poll_argv(const hl_object *o, const char *mark, size_t mark_len,
                      int64_t min_ms, const char *end, const char *quick,
                      char *num, const char **argv, size_t *lens)
{
	const hl_conf *cf = &o->client->conf;
	int64_t ms = (int64_t)(cf->retry_attempts + 1) *
	             (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	argv[0] = o->keys[0];
	lens[0] = o->key_lens[0];
	argv[1] = o->keys[1];
	lens[1] = o->key_lens[1];
	argv[2] = mark;
	lens[2] = mark_len;
	argv[3] = num;
	lens[3] = hl__fmt_i64(num, ms < min_ms ? min_ms : ms);
	argv[4] = end;
	lens[4] = strlen(end);
	argv[5] = quick;
	lens[5] = strlen(quick);
}

/* A poll: the script keeps what it took under a request marker (as the
 * generated mark frame does), so a resend after a lost reply answers the
 * same; busy and empty answers change nothing and keep nothing. */
static int poll_op(hl_gridcall *call, const char *end, const char *quick)
{
	const hl_object *o = call->obj;
	const char *argv[6];
	size_t lens[6], mark_len = 0;
	char num[HL_DEC_MAX], *mark = new_marker(o, &mark_len);
	hl_reply *r = NULL;
	int rc;
	if (!mark)
		return hl__fail(HL_ENOMEM, "out of memory");
	poll_argv(o, mark, mark_len, 1000, end, quick, num, argv, lens);
	rc = run_until_free(call, &hl__script_sorted_set_poll, 3, 3, argv, lens,
	                    &r);
	free(mark);
	if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}

int hl__sorted_set_poll_first(hl_gridcall *call)
{
	return poll_op(call, "first", "");
}

int hl__sorted_set_poll_last(hl_gridcall *call)
{
	return poll_op(call, "last", "");
}

/* ---- the priority queue and deque -------------------------------------- */

/* The hilock-only channel a priority queue's adds are published on (its
 * takers wait on it): hilock_priority_queue_channel:{name}; *len. */
static char *take_channel(const hl_object *o, size_t *len)
{
	return hl__derive_name("hilock_priority_queue_channel:", "", o->name,
	                       o->name_len, 0, len);
}

int hl__priority_queue_add(hl_gridcall *call)
{
	const hl_object *o = call->obj;
	const char *argv[7];
	size_t lens[7], chan_len = 0;
	hl_reply *r = NULL;
	char *chan;
	int rc = check_utf8(call), i;
	if (rc != HL_OK)
		return rc;
	if (!(chan = take_channel(o, &chan_len)))
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < 3; i++) {
		argv[i] = o->keys[i];
		lens[i] = o->key_lens[i];
	}
	argv[3] = "insert";
	lens[3] = 6;
	argv[4] = call->args[0].bytes ? call->args[0].bytes : "";
	lens[4] = call->args[0].len;
	argv[5] = hl__router_publish(o->client);
	lens[5] = strlen(argv[5]);
	argv[6] = chan;
	lens[6] = chan_len;
	rc = run_until_free(call, &hl__script_sorted_set_write, 3, 4, argv,
	                    lens, &r);
	free(chan);
	if (rc == HL_OK)
		rc = set_bool(call, r);
	hl__reply_free(r);
	return rc;
}

int hl__priority_queue_remove(hl_gridcall *call)
{
	return write_op(call, "remove", 6);
}

int hl__priority_queue_contains(hl_gridcall *call)
{
	return write_op(call, "contains", 8);
}

int hl__priority_queue_poll(hl_gridcall *call)
{
	return poll_op(call, "first", "quick");
}

int hl__priority_queue_poll_last(hl_gridcall *call)
{
	return poll_op(call, "last", "quick");
}

/* ---- the priority blocking queue's take --------------------------------
 * A take is a wait (service/task.c): each attempt runs the poll script
 * once (quick: nil at once when empty) with the take's own request
 * marker, kept for every attempt of this take, so that an attempt whose
 * reply is lost and that is made again (after an outage too) answers what
 * the first took. Found empty, it tries again after a back-off of 10 ms
 * doubling to 250 ms (Redisson's take sleeps 0-2 s at random between its
 * tries), or at once when a hilock add publishes on the queue's channel;
 * found locked by a Redisson writer, after 1 to 50 ms. This client's
 * takers of a queue queue FIFO at its gate (only the first competes). A
 * take cancelled after its attempt took a value puts the value back; one
 * that ended with its last attempt unanswered looks for that attempt's
 * marker and puts back what it holds. The priority blocking deque's
 * take_last and poll_last_timeout are the same wait at the tail (RPOP):
 * one line and one channel per queue for the takes at both ends. */

#define TAKE_IDLE_MIN_MS 10
#define TAKE_IDLE_MAX_MS 250
#define TAKE_MARK_MIN_MS 30000 /* a take's marker outlives an outage */

typedef struct take_ctx {
	hl_object *obj;     /* a copy: the task's */
	const hl_opdef *op; /* take or poll_timeout (its mode: mark) */
	const char *end;    /* "first" (the head) or "last" (the tail) */
	char *mark, *chan;  /* the marker key; the channel (also the gate) */
	size_t mark_len, chan_len;
	hl_value *got;  /* what an attempt took */
	int pending;    /* the last attempt went unanswered */
	int idle, busy; /* attempts in a row that found it empty, locked */
} take_ctx;

static int take_attempt(void *arg, const hl_bound *b, int *acquired,
                        int64_t *retry_ms)
{
	take_ctx *x = arg;
	hl_gridcall call;
	const char *argv[6];
	size_t lens[6], len = 0;
	char num[HL_DEC_MAX];
	hl_reply *r = NULL;
	long long pttl;
	const char *p;
	int rc;
	*acquired = 0;
	*retry_ms = -1;
	memset(&call, 0, sizeof(call));
	call.obj = x->obj;
	call.op = x->op;
	call.b = b;
	poll_argv(x->obj, x->mark, x->mark_len, TAKE_MARK_MIN_MS, x->end,
	          "quick", num, argv, lens);
	x->pending = 1;
	rc = hl__grid_eval(&call, &hl__script_sorted_set_poll, 3, 3, argv, lens,
	                   &r);
	if (rc != HL_OK)
		return rc;
	x->pending = 0;
	if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = script_failed(&call, r);
	} else if (is_busy(r, &pttl)) {
		int64_t ms = (int64_t)1 << (x->busy < 6 ? x->busy : 6);
		x->busy++;
		if (ms > SS_PAUSE_MAX_MS)
			ms = SS_PAUSE_MAX_MS;
		*retry_ms = pttl > 0 && pttl < ms ? pttl : ms;
	} else if (hl__reply_type(r) == HL_REPLY_NIL) {
		int64_t ms = (int64_t)TAKE_IDLE_MIN_MS
		             << (x->idle < 5 ? x->idle : 5);
		unsigned char j = 0;
		x->idle++;
		x->busy = 0;
		if (ms > TAKE_IDLE_MAX_MS)
			ms = TAKE_IDLE_MAX_MS;
		(void)hl__random_bytes(&j, 1);
		*retry_ms = ms - (ms * j) / 1024; /* spread out a little */
	} else if (hl__reply_type(r) == HL_REPLY_STRING) {
		p = hl__reply_str(r);
		len = hl__reply_strlen(r);
		if (!(x->got = hl__value_bytes(p, len)))
			rc = hl__fail(HL_ENOMEM, "out of memory");
		else
			*acquired = 1;
	} else {
		rc = hl__grid_result(&call, r);
		if (rc == HL_OK)
			rc = hl__fail(HL_EPROTOCOL, "take: unexpected reply");
	}
	hl__reply_free(r);
	return rc;
}

/* Put v back in its place (an insert; waits while the lock is held,
 * within b). */
static void put_back(take_ctx *x, const void *v, size_t len, const hl_bound *b)
{
	hl_gridcall call;
	hl_arg a;
	memset(&call, 0, sizeof(call));
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_BYTES;
	a.bytes = v;
	a.len = len;
	call.obj = x->obj;
	call.op = hl__grid_op(HL_OP_PRIORITY_BLOCKING_QUEUE_PUT);
	call.args = &a;
	call.nargs = 1;
	call.b = b;
	(void)hl__priority_queue_add(&call);
}

/* Cancelled while the attempt that took a value ran: nobody will receive
 * it, so it goes back. */
static void take_undo(void *arg, const hl_bound *b)
{
	take_ctx *x = arg;
	size_t len = 0;
	const char *v;
	if (!x->got)
		return;
	v = hl_value_bytes(x->got, &len);
	put_back(x, v, len, b);
	hl_value_free(x->got);
	x->got = NULL;
}

/* The wait ended with its last attempt unanswered: if that attempt took a
 * value, its marker holds it (this client's next command fences off any
 * late copy of the attempt first): put it back, and drop the marker. */
static void take_give_up(void *arg, const hl_bound *b)
{
	take_ctx *x = arg;
	hl_gridcall call;
	const char *argv[2];
	size_t lens[2];
	hl_reply *r = NULL;
	if (!x->pending)
		return;
	memset(&call, 0, sizeof(call));
	call.obj = x->obj;
	call.op = hl__grid_op(HL_OP_PRIORITY_BLOCKING_QUEUE_PEEK); /* a read */
	call.b = b;
	argv[0] = "GET";
	lens[0] = 3;
	argv[1] = x->mark;
	lens[1] = x->mark_len;
	if (hl__grid_command(&call, 2, argv, lens, &r) == HL_OK &&
	    hl__reply_type(r) == HL_REPLY_STRING) {
		put_back(x, hl__reply_str(r), hl__reply_strlen(r), b);
		argv[0] = "DEL";
		hl__reply_free(r);
		r = NULL;
		(void)hl__grid_command(&call, 2, argv, lens, &r);
	}
	hl__reply_free(r);
}

static void take_free(void *arg)
{
	take_ctx *x = arg;
	hl_object_free(x->obj);
	hl_value_free(x->got);
	free(x->mark);
	free(x->chan);
	free(x);
}

static hl_value *take_value(void *arg)
{
	take_ctx *x = arg;
	hl_value *v = x->got;
	x->got = NULL;
	return v;
}

static const hl_wait_ops take_ops = {take_attempt, take_undo, take_give_up,
                                     take_free, NULL};

/* 1 if op waits at the tail (the deque's take_last, poll_last_timeout). */
static int take_at_tail(int op)
{
	return op == HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_LAST_TIMEOUT;
}

/* 1 if op waits with a timeout (its one argument). */
static int take_timed(int op)
{
	return op == HL_OP_PRIORITY_BLOCKING_QUEUE_POLL_TIMEOUT ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_TIMEOUT ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_POLL_LAST_TIMEOUT;
}

int hl__priority_is_wait(int op)
{
	return take_timed(op) || op == HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_FIRST ||
	       op == HL_OP_PRIORITY_BLOCKING_DEQUE_TAKE_LAST;
}

/* A wait spec of a new context for a take of obj within wait_ms (-1:
 * forever), op being one of the takes or timed polls (at its end). */
static int take_spec(hl_wait_spec *spec, const hl_object *obj, int op,
                     int64_t wait_ms)
{
	hl_client *c = obj->client;
	take_ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	x->op = hl__grid_op(op);
	x->end = take_at_tail(op) ? "last" : "first";
	if (!(x->obj = hl__grid_object_dup(obj)) ||
	    !(x->mark = new_marker(obj, &x->mark_len)) ||
	    !(x->chan = take_channel(obj, &x->chan_len))) {
		take_free(x);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memset(spec, 0, sizeof(*spec));
	spec->ops = &take_ops;
	spec->arg = x;
	spec->gate = x->chan;
	spec->gate_len = x->chan_len;
	spec->channel = x->chan;
	spec->channel_len = x->chan_len;
	spec->deadline_ms = hl__deadline(wait_ms);
	spec->io_deadline_ms = hl__io_deadline(c, spec->deadline_ms);
	spec->once = wait_ms == 0;
	spec->first = HL_WAIT_FRESH;
	spec->interrupt_gen = atomic_load(&c->interrupt_gen);
	spec->value = take_value;
	return HL_OK;
}

/* A take on the caller's thread (inside the client): the value, or nil
 * when the wait ran out. */
static int take_blocking(hl_gridcall *call, int64_t wait_ms)
{
	hl_object *obj = call->obj;
	hl_client *c = obj->client;
	hl_cancel *cancel = call->b->cancel;
	hl_wait_spec spec;
	hl_value *v = NULL;
	hl_task *t;
	take_ctx *x;
	int rc, done = 0, result = 0;
	if (call->b->deadline_ms >= 0) { /* the call's own timeout */
		int64_t left = hl__remaining(call->b->deadline_ms);
		if (wait_ms < 0 || left < wait_ms)
			wait_ms = left;
	}
	if ((rc = take_spec(&spec, obj, call->op->op, wait_ms)) != HL_OK)
		return rc;
	x = spec.arg;
	if (hl_cancel_is_triggered(cancel)) {
		take_free(x);
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	}
	rc = hl__first_attempt(c, &spec, cancel, &done, &result);
	if (done) {
		if (rc == HL_OK && result)
			v = take_value(x);
		else if (x->pending) { /* ended unanswered: look for it */
			hl_bound b;
			hl__bound_init(
			        &b, c,
			        hl__deadline(c->conf.command_timeout_ms *
			                     (c->conf.retry_attempts + 1)),
			        NULL, 0);
			take_give_up(x, &b);
		}
		take_free(x);
	} else {
		spec.blocking = 1;
		if ((rc = hl__task_wait_start(&t, c, &spec)) == HL_OK)
			rc = hl__task_finish_blocking_value(t, cancel, &result,
			                                    &v);
		if (rc == HL_ETIMEDOUT) { /* the wait ran out */
			rc = HL_OK;
			result = 0;
		}
	}
	if (rc != HL_OK) {
		hl_value_free(v);
		return rc;
	}
	if (!v && !(v = hl__value_new(HL_VALUE_NIL)))
		return hl__fail(HL_ENOMEM, "out of memory");
	if (call->out)
		*call->out = v;
	else
		hl_value_free(v);
	return HL_OK;
}

int hl__priority_blocking_queue_take(hl_gridcall *call)
{
	return take_blocking(call, -1);
}

int hl__priority_blocking_queue_poll_timeout(hl_gridcall *call)
{
	return take_blocking(call, call->args[0].i);
}

int hl__priority_blocking_queue_take_last(hl_gridcall *call)
{
	return take_blocking(call, -1);
}

int hl__priority_blocking_queue_poll_last_timeout(hl_gridcall *call)
{
	return take_blocking(call, call->args[0].i);
}

int hl__priority_take_call_start(hl_task **out, hl_object *obj, int op,
                                 const hl_arg *args, size_t nargs)
{
	hl_wait_spec spec;
	char label[120];
	int64_t wait_ms = -1;
	int rc;
	hl__grid_label(obj, label, sizeof(label));
	if (take_timed(op)) {
		if (nargs != 1 || args[0].type != HL_ARG_INT || args[0].i < 1 ||
		    args[0].i > HL_TIME_MAX)
			return hl__fail(HL_EINVAL,
			                "%s: %s takes one argument, "
			                "the timeout: 1 ms to 2^40 ms",
			                label, hl__grid_op(op)->name);
		wait_ms = args[0].i;
	} else if (nargs != 0) {
		return hl__fail(HL_EINVAL, "%s: %s takes no arguments, not %zu",
		                label, hl__grid_op(op)->name, nargs);
	}
	if ((rc = hl__client_enter(obj->client)) != HL_OK)
		return rc;
	if ((rc = take_spec(&spec, obj, op, wait_ms)) == HL_OK)
		rc = hl__task_wait_start(out, obj->client, &spec);
	hl__client_leave(obj->client);
	return rc;
}
