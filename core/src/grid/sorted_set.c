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

/* A poll: the script keeps what it took under a request marker (as the
 * generated mark frame does), so a resend after a lost reply answers the
 * same; busy and empty answers change nothing and keep nothing. */
static int poll_op(hl_gridcall *call, const char *end, const char *quick)
{
	const hl_object *o = call->obj;
	const hl_conf *cf = &o->client->conf;
	const char *argv[6];
	size_t lens[6], n;
	char id[33], num[HL_DEC_MAX], *mark;
	hl_reply *r = NULL;
	int rc;
	int64_t ms = (int64_t)(cf->retry_attempts + 1) *
	             (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	char *w = hl__derive_name("hilock_request:", "", o->name, o->name_len,
	                          0, &n);
	if (!w || !(mark = realloc(w, n + 33))) {
		free(w);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	hl__random_hex(id);
	mark[n] = ':';
	memcpy(mark + n + 1, id, 32);
	argv[0] = o->keys[0];
	lens[0] = o->key_lens[0];
	argv[1] = o->keys[1];
	lens[1] = o->key_lens[1];
	argv[2] = mark;
	lens[2] = n + 33;
	argv[3] = num;
	lens[3] = hl__fmt_i64(num, ms < 1000 ? 1000 : ms);
	argv[4] = end;
	lens[4] = strlen(end);
	argv[5] = quick;
	lens[5] = strlen(quick);
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

int hl__priority_queue_add(hl_gridcall *call)
{
	int rc = check_utf8(call);
	return rc != HL_OK ? rc : write_op(call, "insert", 6);
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
