/*
 * The blocking queue's takes (core/grid/blocking_queue.kind,
 * docs/grid-blocking-queue.md): nothing lost, nothing twice.
 *
 * A take has an id of its own (32 random hex) and, while it lasts, an
 * entry in the takers' hash hilock_consumers:<base> (field: the id;
 * value: its lease's end, Redis TIME ms). Each round
 *
 *   1. prep (one script): give back to the head of the queue, in order,
 *      the in-flight elements of every taker whose lease ended (a killed
 *      process), renew this take's lease, and answer this take's own
 *      in-flight element if it has one (an attempt's reply that was lost);
 *   2. BLMOVE <name> hilock_inflight:<base>:<id> LEFT RIGHT <slice> on a
 *      blocking connection (service/blocking.c), the slice at most a third
 *      of the lease, so that the lease is renewed while the take waits;
 *   3. on an element: ack (DEL the in-flight list, HDEL the entry; sent
 *      again until Redis answers), then the caller has it.
 *
 * A BLMOVE whose connection broke may still have landed (or land later,
 * while Redis holds it blocked): the take gives that id up for a new one
 * and its next prep moves the old list's element, if any, into the new
 * one (the take answers it) and leaves the old entry a lease as long as
 * the old command could still land; after that anyone's prep gives back
 * whatever landed. <base> is the queue's name inside a hash tag, so that
 * every key shares the queue's cluster slot (see base_of).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grid.h"
#include "prim/object.h"

extern const hl_script_def hl__script_blocking_queue_prep;
extern const hl_script_def hl__script_blocking_queue_ack;
extern const hl_script_def hl__script_bounded_blocking_queue_ack_bounded;
extern const hl_script_def hl__script_bounded_blocking_queue_offer_marked;

#define ID_LEN 32

typedef struct bq_keys {
	char *hash, *prefix, *own, *old, *given;
	size_t hash_len, prefix_len, given_len;
} bq_keys;

/* The hash tag of key as Redis reads it: the text between the first '{'
 * and the first '}' after it, when not empty (else none: 0). */
static int tag_of(const char *k, size_t n, size_t *start, size_t *len)
{
	size_t i, j;
	for (i = 0; i < n && k[i] != '{'; i++)
		;
	if (i == n)
		return 0;
	for (j = i + 1; j < n && k[j] != '}'; j++)
		;
	if (j == n || j == i + 1)
		return 0;
	*start = i + 1;
	*len = j - i - 1;
	return 1;
}

/* base: text after which the keys' own parts follow, hashing to name's
 * slot. A name with a hash tag is kept as it is (its tag decides, as
 * Redisson's prefixName); a name without braces goes inside one
 * ({jobs}); any other name (braces but no tag: "a}b", "{}x") hashes as a
 * whole, and gets a short tag of the same slot before it. */
static char *base_of(const char *name, size_t n, size_t *out_len)
{
	size_t s, l, i;
	char *b;
	if (tag_of(name, n, &s, &l) ||
	    (!memchr(name, '{', n) && !memchr(name, '}', n))) {
		int wrap = !tag_of(name, n, &s, &l);
		if (!(b = malloc(n + 3)))
			return NULL;
		i = 0;
		if (wrap)
			b[i++] = '{';
		memcpy(b + i, name, n);
		i += n;
		if (wrap)
			b[i++] = '}';
		*out_len = i;
		return b;
	} else {
		unsigned want = hl__slot(name, n), k;
		char t[8];
		static const char al[] = "0123456789abcdefghijklmnopqrstuvwxyz";
		size_t tl = 0;
		/* 36^3 tags reach every one of the 16384 slots */
		for (k = 0; k < 36u * 36u * 36u * 36u; k++) {
			unsigned x = k;
			tl = 0;
			do {
				t[tl++] = al[x % 36];
				x /= 36;
			} while (x && tl < 6);
			if (hl__slot(t, tl) == want)
				break;
		}
		if (!(b = malloc(n + tl + 4)))
			return NULL;
		b[0] = '{';
		memcpy(b + 1, t, tl);
		b[tl + 1] = '}';
		b[tl + 2] = ':';
		memcpy(b + tl + 3, name, n);
		*out_len = n + tl + 3;
		return b;
	}
}

static void keys_free(bq_keys *k)
{
	free(k->hash);
	free(k->prefix);
	free(k->own);
	free(k->old);
	free(k->given);
}

static int keys_make(hl_object *o, bq_keys *k)
{
	size_t bl = 0;
	char *base = base_of(o->name, o->name_len, &bl);
	memset(k, 0, sizeof(*k));
	if (!base)
		return hl__fail(HL_ENOMEM, "out of memory");
	k->hash = malloc(bl + 32);
	k->prefix = malloc(bl + 32);
	k->own = malloc(bl + 32 + ID_LEN);
	k->old = malloc(bl + 32 + ID_LEN);
	k->given = malloc(bl + 32);
	if (!k->hash || !k->prefix || !k->own || !k->old || !k->given) {
		free(base);
		keys_free(k);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(k->hash, "hilock_consumers:", 17);
	memcpy(k->hash + 17, base, bl);
	k->hash_len = 17 + bl;
	memcpy(k->prefix, "hilock_inflight:", 16);
	memcpy(k->prefix + 16, base, bl);
	k->prefix[16 + bl] = ':';
	k->prefix_len = 17 + bl;
	memcpy(k->given, "hilock_given_back:", 18);
	memcpy(k->given + 18, base, bl);
	k->given_len = 18 + bl;
	free(base);
	return HL_OK;
}

/* key = prefix + id */
static void key_of(const bq_keys *k, char *key, const char *id)
{
	memcpy(key, k->prefix, k->prefix_len);
	memcpy(key + k->prefix_len, id, ID_LEN);
}

static void give_back(hl_gridcall *call, bq_keys *k, const char *id);

static int64_t lease_ms(const hl_object *o)
{
	int64_t l = o->client->conf.watchdog_ms;
	return l < 600 ? 600 : l;
}

/* A failure of the wire: the command did not answer. */
static int wire(int rc)
{
	return rc == HL_EIO || rc == HL_ECONNECT || rc == HL_ETIMEDOUT ||
	       rc == HL_EINDOUBT;
}

/* A failure of the wire (the take waits and tries again), not of the
 * caller's bound or of the input. */
static int transient(int rc, const hl_bound *b)
{
	char msg[400];
	if (!wire(rc))
		return 0;
	/* the bound's check records its own error: rc's stays the one said */
	snprintf(msg, sizeof msg, "%s", hl_error_last());
	if (hl__bound_check(b) != HL_OK) {
		hl__fail(rc, "%s", msg);
		return 0;
	}
	return 1;
}

static int wrong(hl_gridcall *call, const hl_reply *r)
{
	char label[120];
	const char *e = hl__reply_str(r);
	hl__grid_label(call->obj, label, sizeof(label));
	if (strncmp(e, "WRONGTYPE", 9) == 0)
		return hl__fail(HL_EREDIS,
		                "%s: %s: the key holds another type of value "
		                "than a list (%.200s)",
		                label, call->op->name, e);
	return hl__fail(HL_EREDIS, "%s: %s: %.300s", label, call->op->name, e);
}

/* How prep takes (its script's ARGV[6]). */
enum { PREP_NO_MOVE, PREP_MOVE, PREP_LOOK };

/* The prep script: id "" renews nothing (recover); old "" gives up no
 * attempt. *mine: this take's in-flight element (NULL: none); *moved:
 * how many elements went back. move: PREP_MOVE also moves the head (the
 * tail: an id starting with r) into this take's list when it holds none,
 * answered in *mine (a take that finds an element needs no BLMOVE);
 * PREP_LOOK too, and when none was there the take's entry goes (no wait
 * follows). */
static int prep(hl_gridcall *call, bq_keys *k, const char *id, const char *old,
                int64_t old_window, int move, hl_value **mine, int64_t *moved)
{
	const char *argv[11];
	size_t lens[11];
	char how[2];
	char lease[24], window[24];
	hl_reply *r = NULL;
	hl_gridcall own = *call;
	hl_bound b = *call->b;
	int rc;
	if (mine)
		*mine = NULL;
	if (move != PREP_NO_MOVE) {
		/* it may move an element: not cut short by a cancel or an
		 * interrupt once sent (its answer read, the element handed
		 * on or given back, never left in flight unseen until the
		 * lease ends), but given one command's time: in an outage
		 * the caller's loop checks its own bound (a cancel) between
		 * preps, and a prep sent again answers what one moved */
		b.deadline_ms = hl__deadline(
		        call->obj->client->conf.command_timeout_ms);
		b.cancel = NULL;
		b.interrupts = NULL;
		own.b = &b;
		call = &own;
	}
	if (id[0])
		key_of(k, k->own, id);
	if (old[0])
		key_of(k, k->old, old);
	argv[0] = call->obj->keys[0];
	lens[0] = call->obj->key_lens[0];
	argv[1] = k->hash;
	lens[1] = k->hash_len;
	argv[2] = id[0] ? k->own : k->hash;
	lens[2] = id[0] ? k->prefix_len + ID_LEN : k->hash_len;
	argv[3] = old[0] ? k->old : argv[2];
	lens[3] = old[0] ? k->prefix_len + ID_LEN : lens[2];
	argv[4] = k->given;
	lens[4] = k->given_len;
	argv[5] = id;
	lens[5] = strlen(id);
	argv[6] = lease;
	lens[6] = hl__fmt_i64(lease, lease_ms(call->obj));
	argv[7] = k->prefix;
	lens[7] = k->prefix_len;
	argv[8] = old;
	lens[8] = strlen(old);
	argv[9] = window;
	lens[9] = hl__fmt_i64(window, old_window);
	how[0] = (char)('0' + move);
	how[1] = '\0';
	argv[10] = how;
	lens[10] = 1;
	rc = hl__grid_eval(call, &hl__script_blocking_queue_prep, 5, 6, argv,
	                   lens, &r);
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = wrong(call, r);
	} else if (hl__reply_type(r) != HL_REPLY_ARRAY ||
	           hl__reply_len(r) != 2) {
		rc = hl__fail(HL_EPROTOCOL, "blocking queue: prep answered "
		                            "something unexpected");
	} else {
		const hl_reply *e = hl__reply_at(r, 1);
		if (hl__reply_int(hl__reply_at(r, 0)) == 1) {
			size_t n = 0;
			const char *p =
			        (n = hl__reply_strlen(e), hl__reply_str(e));
			if (mine && !(*mine = hl__value_bytes(p, n)))
				rc = hl__fail(HL_ENOMEM, "out of memory");
		} else if (moved) {
			*moved = hl__reply_int(e);
		}
	}
	hl__reply_free(r);
	return rc;
}

/* The ack: this take's in-flight list and its entry go (the bounded
 * queue's unit of capacity comes back in the same script). With gone
 * (the take has an element), *gone = 1 when the element is not the
 * caller's after all: the take's lease ended before the ack (a network
 * cut off for longer than the lease) and a prep gave the element back to
 * the queue, which the ack learns from the given-back set (or, sent
 * once, from finding no list), so the take goes on for the next one.
 *
 * It is sent again until Redis answers, and the answer is exact: a
 * resend after a lost reply that finds no list and no given-back entry
 * is its own first run's (the element the caller's). First for the
 * client's usual retries, which nothing cuts short (the caller has its
 * element or gave up waiting, and the entry goes either way); then on,
 * while only the caller's cancel, interrupt or close stops it, until the
 * lease and those retries again have passed (patient: a blocking
 * caller's thread; a task's ack, on an executor that other tasks share,
 * keeps to the usual retries): an outage shorter than that delivers
 * nothing twice. Only a longer one hands the element to the caller
 * unacknowledged, to come again after its lease (at least once:
 * docs/grid-blocking-queue.md). */
static int ack(hl_gridcall *call, bq_keys *k, const char *id, int *gone,
               int patient)
{
	const char *argv[5];
	size_t lens[5];
	hl_reply *r = NULL;
	hl_gridcall own = *call;
	hl_opdef once = *call->op;
	hl_bound b;
	const hl_bound *caller = call->b;
	const hl_conf *cf = &call->obj->client->conf;
	int64_t retries = (int64_t)(cf->retry_attempts + 1) *
	                  (cf->command_timeout_ms + cf->retry_delay_ms);
	int64_t longest = patient && gone
	                          ? hl__deadline(lease_ms(call->obj) + retries)
	                          : 0;
	int rc, bounded =
	                call->obj->kind->kind == HL_KIND_BOUNDED_BLOCKING_QUEUE;
	int maybe = 0, later = 0;
	if (gone)
		*gone = 0;
	hl__bound_plain(&b, hl__deadline(retries), NULL);
	once.mode = HL_MODE_ONCE; /* a lost reply: HL_EINDOUBT, sent below */
	own.op = &once;
	own.b = &b;
	call = &own;
	key_of(k, k->own, id);
	argv[0] = k->hash;
	lens[0] = k->hash_len;
	argv[1] = k->own;
	lens[1] = k->prefix_len + ID_LEN;
	if (bounded) {
		/* its unit of capacity back, in the same script */
		argv[2] = call->obj->keys[1];
		lens[2] = call->obj->key_lens[1];
		argv[3] = k->given;
		lens[3] = k->given_len;
		argv[4] = id;
		lens[4] = ID_LEN;
	} else {
		argv[2] = k->given;
		lens[2] = k->given_len;
		argv[3] = id;
		lens[3] = ID_LEN;
	}
	for (;;) {
		rc = bounded ? hl__grid_eval(
		                       call,
		                       &hl__script_bounded_blocking_queue_ack_bounded,
		                       4, 1, argv, lens, &r)
		             : hl__grid_eval(call,
		                             &hl__script_blocking_queue_ack, 3,
		                             1, argv, lens, &r);
		if (rc == HL_OK) {
			long long a = hl__reply_type(r) == HL_REPLY_INTEGER
			                      ? hl__reply_int(r)
			                      : 1;
			if (hl__reply_type(r) == HL_REPLY_ERROR)
				rc = wrong(call, r);
			else if (gone && (a < 0 || (a == 0 && !maybe)))
				*gone = 1;
			break;
		}
		if (rc == HL_EINDOUBT)
			maybe = 1; /* it may have run: its answer is unknown */
		if (!wire(rc))
			break;
		if (!transient(rc, &b)) {
			if (later || hl__now_ms() >= longest)
				break;
			/* the usual retries are over: on, as the caller allows
			 * (its cancel, interrupt or close, not its deadline) */
			b = *caller;
			b.deadline_ms = longest;
			later = 1;
			if (!transient(rc, &b))
				break;
		}
		if (hl__pause(call->obj->client, cf->retry_delay_ms, &b) !=
		    HL_OK)
			break;
	}
	hl__reply_free(r);
	return rc;
}

/* BLMOVE the head (last: the tail) into this take's list, waiting up to
 * slice_ms: HL_OK and *got (NULL: nothing came), or why not (*sent: it
 * may have landed). */
static int move_from(hl_gridcall *call, bq_keys *k, const char *id, int last,
                     int64_t slice_ms, hl_value **got, enum hl_sent *sent,
                     int *settled)
{
	hl_object *o = call->obj;
	const char *argv[6];
	size_t lens[6];
	char secs[32];
	hl_reply *r = NULL;
	int rc;
	*got = NULL;
	key_of(k, k->own, id);
	argv[0] = "BLMOVE";
	lens[0] = 6;
	argv[1] = o->keys[0];
	lens[1] = o->key_lens[0];
	argv[2] = k->own;
	lens[2] = k->prefix_len + ID_LEN;
	argv[3] = last ? "RIGHT" : "LEFT";
	lens[3] = last ? 5 : 4;
	argv[4] = "RIGHT";
	lens[4] = 5;
	argv[5] = secs;
	lens[5] = (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
	                           (long long)(slice_ms / 1000),
	                           (long long)(slice_ms % 1000));
	rc = hl__blocking_command_ex(o->client, &r, 6, argv, lens, o->keys[0],
	                             o->key_lens[0], slice_ms, call->b, sent,
	                             settled);
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = wrong(call, r);
	} else if (hl__reply_type(r) == HL_REPLY_STRING) {
		size_t n = 0;
		const char *p = (n = hl__reply_strlen(r), hl__reply_str(r));
		if (!(*got = hl__value_bytes(p, n)))
			rc = hl__fail(HL_ENOMEM, "out of memory");
	} else if (hl__reply_type(r) != HL_REPLY_NIL) {
		rc = hl__fail(HL_EPROTOCOL, "BLMOVE answered something "
		                            "unexpected");
	}
	hl__reply_free(r);
	return rc;
}

static int move_one(hl_gridcall *call, bq_keys *k, const char *id,
                    int64_t slice_ms, hl_value **got, enum hl_sent *sent,
                    int *settled)
{
	return move_from(call, k, id, id[0] == 'r', slice_ms, got, sent,
	                 settled);
}

/* A take's id: 32 random hex; a take from the tail starts with 'r' (what
 * it held goes back to the tail). */
static void new_id(char id[ID_LEN + 1], int last)
{
	hl__random_hex(id);
	if (last)
		id[0] = 'r';
}

/* Wait up to wait_ms (-1: without bound) for an element: HL_OK and *got
 * (NULL: none came; this take's entry is gone) with the element still in
 * flight under id (the caller acks or gives it back), or why not. */
static int take_core(hl_gridcall *call, bq_keys *k, int64_t wait_ms, int last,
                     hl_value **got, char id[ID_LEN + 1])
{
	hl_object *o = call->obj;
	hl_client *c = o->client;
	int64_t lease = lease_ms(o), until, window = 0, backoff = 0;
	char old[ID_LEN + 1] = "";
	int rc;
	*got = NULL;
	new_id(id, last);
	until = wait_ms < 0 ? -1 : hl__now_ms() + wait_ms;
	for (;;) {
		enum hl_sent sent = HL_SENT_NOTHING;
		int64_t now, slice;
		int settled = 0;
		/* the prep takes the head when there is one (one round trip
		 * for the take); a look whose time is up leaves no entry */
		int look = until >= 0 && hl__now_ms() >= until;
		rc = prep(call, k, id, old, window,
		          look ? PREP_LOOK : PREP_MOVE, got, NULL);
		if (rc == HL_OK) {
			old[0] = '\0';
			backoff = 0;
			if (*got)
				return HL_OK;
			if (look)
				return HL_OK; /* none; the entry went with it */
			now = hl__now_ms();
			/* the prep looked at the queue: a timed poll whose time
			 * ran out meanwhile ends */
			if (until >= 0 && now >= until)
				/* none taken */
				return ack(call, k, id, NULL, 0);
			slice = lease / 3;
			if (until >= 0 && until - now < slice)
				slice = until - now;
			if (slice < 1)
				slice = 1;
			rc = move_one(call, k, id, slice, got, &sent, &settled);
			if (rc == HL_OK && *got)
				return HL_OK;
			if (rc == HL_OK)
				continue; /* none in this slice: renew, wait */
			if (sent == HL_SENT_MAYBE) {
				/* it may land: that id is given up */
				memcpy(old, id, ID_LEN + 1);
				/* killed there (settled): nothing more can
				 * land; else as long as that command may still
				 * run */
				window =
				        settled ? 0
				                : slice + 2 * c->conf.command_timeout_ms +
				                          1000;
				new_id(id, last);
			} else if (!transient(rc, call->b)) {
				/* nothing taken: leave (best effort) */
				int keep = rc;
				char msg[400];
				snprintf(msg, sizeof msg, "%s",
				         hl_error_last());
				ack(call, k, id, NULL, 0);
				return hl__fail(keep, "%s", msg);
			}
		}
		if (!transient(rc, call->b) && rc != HL_OK) {
			/* a cancel (a pump whose line ran empty) that cut a
			 * prep short after it ran left this take's entry (and
			 * what it moved into the list): both go now, not after
			 * the lease (an attempt given up, old, keeps its
			 * entry: its command may still land) */
			if (rc == HL_EINTERRUPTED && !old[0])
				give_back(call, k, id);
			return rc; /* else an entry left ends with its lease */
		}
		/* the wire failed: wait on, on the node there is now */
		backoff = backoff ? backoff * 2 : c->conf.retry_delay_ms;
		if (backoff < 20)
			backoff = 20;
		if (backoff > 1000)
			backoff = 1000;
		if (until >= 0 && hl__now_ms() + backoff > until + lease)
			return rc; /* not reachable within the wait */
		if ((rc = hl__pause(c, backoff, call->b)) != HL_OK)
			return rc;
	}
}

static int check_wait(hl_gridcall *call, int64_t wait_ms)
{
	char label[120];
	if (!call->out)
		return hl__fail(HL_EINVAL,
		                "%s: %s: out is NULL (the element "
		                "taken would be lost)",
		                hl__grid_label(call->obj, label, sizeof label),
		                call->op->name);
	if (wait_ms < -1)
		return hl__fail(HL_EINVAL, "%s: %s: timeout is %lld: 0 or more",
		                hl__grid_label(call->obj, label, sizeof label),
		                call->op->name, (long long)wait_ms);
	return HL_OK;
}

/* A take: wait_ms -1 without bound. */
static int take(hl_gridcall *call, int64_t wait_ms, int last)
{
	char id[ID_LEN + 1];
	hl_value *got = NULL;
	bq_keys k;
	int64_t until = wait_ms < 0 ? -1 : hl__now_ms() + wait_ms;
	int rc = check_wait(call, wait_ms);
	if (rc != HL_OK || (rc = keys_make(call->obj, &k)) != HL_OK)
		return rc;
	for (;;) {
		int gone = 0;
		int64_t left = until < 0 ? -1 : until - hl__now_ms();
		/* a time that is up: one look (the prep takes the head) */
		rc = take_core(call, &k, until < 0 || left > 0 ? left : 0, last,
		               &got, id);
		if (rc != HL_OK || !got)
			break;
		/* the caller's once Redis knows (the ack is sent again until
		 * it answers; when it never does, the element comes again
		 * after the lease: at least once, see the docs) */
		ack(call, &k, id, &gone, 1);
		if (!gone)
			break;
		/* its lease ended before the ack: given back, not ours */
		hl_value_free(got);
		got = NULL;
		if (until >= 0 && hl__now_ms() >= until)
			break;
	}
	if (rc == HL_OK && got)
		*call->out = got;
	else if (rc == HL_OK)
		*call->out = hl__value_new(HL_VALUE_NIL);
	keys_free(&k);
	return rc;
}

int hl__blocking_queue_take(hl_gridcall *call)
{
	return take(call, -1, 0);
}

int hl__blocking_queue_take_last(hl_gridcall *call)
{
	return take(call, -1, 1);
}

static int64_t timeout_arg(const hl_gridcall *call)
{
	const hl_arg *a = &call->args[0];
	int64_t ms = a->type == HL_ARG_INT ? a->i : (int64_t)a->d;
	if (a->type == HL_ARG_DOUBLE && !(a->d >= 0))
		ms = -2;
	return ms;
}

int hl__blocking_queue_poll_timeout(hl_gridcall *call)
{
	return take(call, timeout_arg(call), 0);
}

int hl__blocking_queue_poll_last_timeout(hl_gridcall *call)
{
	return take(call, timeout_arg(call), 1);
}

int hl__blocking_queue_recover(hl_gridcall *call)
{
	bq_keys k;
	int64_t moved = 0;
	int rc = keys_make(call->obj, &k);
	if (rc != HL_OK)
		return rc;
	rc = prep(call, &k, "", "", 0, PREP_NO_MOVE, NULL, &moved);
	keys_free(&k);
	if (rc == HL_OK && call->out && !(*call->out = hl__value_int(moved)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}

/* ---- the task forms: one taker per queue for the process's waiters ------
 *
 * A task waiting on a queue costs a record, not a thread or a connection:
 * the waiters of one queue (on one client) queue in FIFO order behind one
 * pump, a thread that runs one take at a time for them on one blocking
 * connection and hands each element, still in flight, to the first of
 * them. That waiter's task (a K_DRIVE task, run on an executor) acks it
 * and answers it; a waiter cancelled or timed out first gives it back to
 * the head (give_back), so a cancel loses nothing. When the last waiter
 * leaves, the pump's wait is cut short (CLIENT UNBLOCK: anything it took
 * meanwhile goes back to the head) and the pump ends. */

extern const hl_script_def hl__script_blocking_queue_give_back;

enum { W_WAITING, W_HANDED, W_FAILED, W_GONE, W_ACKED };

typedef struct bq_pump bq_pump;

typedef struct bq_waiter {
	struct bq_waiter *next;
	bq_pump *pump;
	hl_task *task;
	int64_t until; /* monotonic; -1: none */
	int state;
	hl_value *value; /* W_HANDED: in flight under id */
	char id[ID_LEN + 1];
	int status;
	char msg[300];
	atomic_int refs;
	/* poll_from_any: one member per queue, each in its queue's line; the
	 * lead (the first, the task's) holds the state of them all. A single
	 * take is its own lead. */
	struct bq_waiter *lead;
	struct bq_waiter *sib; /* the lead's chain of the other members */
	size_t index;          /* its queue's place in the call's names */
	bq_pump *from;         /* lead: the pump whose take was handed */
	int any;               /* lead: answers [queue name, element] */
	hl_object **look;      /* timeout 0: one poll of each, in order */
	size_t nlook;
} bq_waiter;

struct bq_pump {
	bq_pump *next;
	hl_client *c;
	hl_object *obj; /* the pump's copy */
	bq_waiter *head, *tail;
	hl_cancel *cancel; /* cuts the pump's wait short */
	int nwaiting;
	int last;  /* takes from the tail */
	pid_t pid; /* its process's (a child's lookups skip a parent's) */
	atomic_int refs;
};

static pthread_mutex_t pumps_mu = PTHREAD_MUTEX_INITIALIZER;
static bq_pump *pumps;

static void pump_unref(bq_pump *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	hl_cancel_free(p->cancel);
	hl_object_free(p->obj);
	free(p);
}

static void waiter_unref(bq_waiter *w)
{
	bq_waiter *m, *n;
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	hl_value_free(w->value);
	while (w->nlook)
		hl_object_free(w->look[--w->nlook]);
	free(w->look);
	for (m = w->sib; m; m = n) { /* out of every line by now */
		n = m->sib;
		if (m->pump)
			pump_unref(m->pump);
		free(m);
	}
	if (w->pump)
		pump_unref(w->pump);
	free(w);
}

static void leave_line(bq_waiter *w);

/* Every member of lead's call out of its line (pumps_mu held): once its
 * state is no longer W_WAITING, no pump hands it anything. */
static void group_leave(bq_waiter *lead)
{
	bq_waiter *m;
	leave_line(lead);
	for (m = lead->sib; m; m = m->sib)
		leave_line(m);
}

/* The pump's call (the take op's mode: its scripts sent again). */
static void pump_call(bq_pump *p, hl_gridcall *call, hl_bound *b)
{
	memset(call, 0, sizeof(*call));
	call->obj = p->obj;
	call->op = hl__grid_op(HL_OP_BLOCKING_QUEUE_TAKE);
	call->b = b;
}

/* Give an element in flight under id back to the head. */
static void give_back(hl_gridcall *call, bq_keys *k, const char *id)
{
	const char *argv[4];
	size_t lens[4];
	hl_reply *r = NULL;
	hl_gridcall own = *call;
	hl_bound b;
	const hl_conf *cf = &call->obj->client->conf;
	hl__bound_plain(
	        &b,
	        hl__deadline((int64_t)(cf->retry_attempts + 1) *
	                     (cf->command_timeout_ms + cf->retry_delay_ms)),
	        NULL);
	own.b = &b;
	key_of(k, k->own, id);
	argv[0] = call->obj->keys[0];
	lens[0] = call->obj->key_lens[0];
	argv[1] = k->hash;
	lens[1] = k->hash_len;
	argv[2] = k->own;
	lens[2] = k->prefix_len + ID_LEN;
	argv[3] = id;
	lens[3] = ID_LEN;
	/* when it fails, the entry's lease gives it back later */
	hl__grid_eval(&own, &hl__script_blocking_queue_give_back, 3, 1, argv,
	              lens, &r);
	hl__reply_free(r);
}

static void *pump_main(void *arg)
{
	bq_pump *p = arg;
	bq_keys k;
	int keys_ok;
	hl__thread_name("hl-bq-pump");
	keys_ok = keys_make(p->obj, &k) == HL_OK;
	for (;;) {
		hl_gridcall call;
		hl_bound b;
		hl_value *got = NULL;
		bq_waiter *w;
		char id[ID_LEN + 1];
		int rc;
		pthread_mutex_lock(&pumps_mu);
		if (!p->nwaiting || !keys_ok) {
			bq_pump **pp;
			for (pp = &pumps; *pp && *pp != p; pp = &(*pp)->next)
				;
			if (*pp)
				*pp = p->next;
			/* any waiter left (no memory for the keys) fails */
			while ((w = p->head)) {
				bq_waiter *l = w->lead;
				if (l->state == W_WAITING) {
					l->state = W_FAILED;
					l->status = HL_ENOMEM;
					snprintf(l->msg, sizeof l->msg,
					         "out of memory");
					hl__task_kick(l->task);
				}
				group_leave(l);
			}
			p->head = p->tail = NULL;
			pthread_mutex_unlock(&pumps_mu);
			break;
		}
		hl_cancel_reset(p->cancel);
		pthread_mutex_unlock(&pumps_mu);
		hl__bound_init(&b, p->c, -1, p->cancel, 0);
		pump_call(p, &call, &b);
		rc = take_core(&call, &k, -1, p->last, &got, id);
		pthread_mutex_lock(&pumps_mu);
		if (rc == HL_OK && got) {
			for (w = p->head; w && w->lead->state != W_WAITING;
			     w = w->next)
				;
			if (w) {
				/* the first in line wins it; a poll_from_any's
				 * other members leave their lines at once, so
				 * no other pump hands that call a second one */
				bq_waiter *l = w->lead;
				l->state = W_HANDED;
				l->value = got;
				l->from = p;
				l->index = w->index;
				memcpy(l->id, id, sizeof id);
				group_leave(l);
				hl__task_kick(l->task);
				got = NULL;
			}
		} else if (rc != HL_OK && rc != HL_EINTERRUPTED) {
			/* the queue cannot be taken from (another type, a
			 * closing client): every waiter is told */
			char msg[300];
			snprintf(msg, sizeof msg, "%s", hl_error_last());
			while ((w = p->head)) {
				bq_waiter *l = w->lead;
				if (l->state == W_WAITING) {
					l->state = W_FAILED;
					l->status = rc;
					snprintf(l->msg, sizeof l->msg, "%s",
					         msg);
					hl__task_kick(l->task);
				}
				group_leave(l);
			}
			p->head = p->tail = NULL;
			p->nwaiting = 0;
		}
		pthread_mutex_unlock(&pumps_mu);
		if (got) { /* nobody waits any more: back to the head */
			give_back(&call, &k, id);
			hl_value_free(got);
		}
	}
	if (keys_ok)
		keys_free(&k);
	hl__client_leave(p->c);
	pump_unref(p);
	return NULL;
}

/* Take w out of its pump's line (pumps_mu held); the last one cuts the
 * pump's wait short. */
static void leave_line(bq_waiter *w)
{
	bq_pump *p = w->pump;
	bq_waiter **pp;
	for (pp = &p->head; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp) {
		*pp = w->next;
		if (p->tail == w) {
			bq_waiter *t = p->head;
			while (t && t->next)
				t = t->next;
			p->tail = t;
		}
		w->next = NULL;
		p->nwaiting--;
	}
	if (!p->nwaiting)
		hl_cancel_trigger(p->cancel);
}

static hl_value *any_pair(const hl_object *o, hl_value *v);

/* poll_from_any with timeout 0: one poll of each queue, in order (the
 * kind's poll: a lost reply is answered when sent again). */
static int look_step(bq_waiter *w, hl_task *self, int stop)
{
	size_t i;
	if (stop != HL_OK)
		return hl__fail(stop, "the poll was %s",
		                stop == HL_ECLOSED ? "closed" : "interrupted");
	for (i = 0; i < w->nlook; i++) {
		hl_object *o = w->look[i];
		int k = o->kind->kind;
		int op = k == HL_KIND_BLOCKING_DEQUE ? HL_OP_BLOCKING_DEQUE_POLL
		         : k == HL_KIND_BOUNDED_BLOCKING_QUEUE
		                 ? HL_OP_BOUNDED_BLOCKING_QUEUE_POLL
		                 : HL_OP_BLOCKING_QUEUE_POLL;
		hl_value *v = NULL;
		int rc = hl_object_call(&v, o, op, NULL, 0);
		if (rc != HL_OK)
			return rc;
		if (hl_value_type(v) == HL_VALUE_BYTES) {
			hl_value *ans = any_pair(o, v);
			if (!ans)
				return hl__fail(HL_ENOMEM, "out of memory");
			hl__task_drive_value(self, ans);
			return HL_OK;
		}
		hl_value_free(v);
	}
	hl__task_drive_value(self, hl__value_new(HL_VALUE_NIL));
	return HL_OK;
}

/* [name of o, v] (v taken); NULL when out of memory. */
static hl_value *any_pair(const hl_object *o, hl_value *v)
{
	hl_value *two[2];
	if (!v)
		return NULL;
	two[0] = hl__value_bytes(o->name, o->name_len);
	two[1] = v;
	if (!two[0]) {
		hl_value_free(v);
		return NULL;
	}
	return hl__value_array(two, 2);
}

static bq_pump *pump_find(hl_client *c, hl_object *obj, int last, int *fresh);
static void *pump_main(void *arg);

/* A single take's element that was not its own after all (its ack came
 * after its lease, and another take gave the element back): the waiter
 * goes back to the head of its queue's line, for the next element; a pump
 * starts anew if its own ended meanwhile. HL_OK, or why not. */
static int rejoin(bq_waiter *w)
{
	bq_pump *old = w->pump, *p;
	hl_client *c = old->c;
	pthread_t th;
	int fresh = 0;
	if (hl__client_enter(c) != HL_OK)
		return hl__fail(HL_ECLOSED, "the client was closed");
	pthread_mutex_lock(&pumps_mu);
	if (!(p = pump_find(c, old->obj, old->last, &fresh))) {
		pthread_mutex_unlock(&pumps_mu);
		hl__client_leave(c);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	hl_value_free(w->value);
	w->value = NULL;
	w->from = NULL;
	w->state = W_WAITING;
	w->next = p->head;
	p->head = w;
	if (!p->tail)
		p->tail = w;
	p->nwaiting++;
	if (fresh) {
		if (hl__client_enter(c) != HL_OK ||
		    pthread_create(&th, NULL, pump_main, p) != 0) {
			p->head = p->tail = NULL;
			p->nwaiting = 0;
			pthread_mutex_unlock(&pumps_mu);
			pump_unref(p);
			hl__client_leave(c);
			return hl__fail(HL_ESYSTEM,
			                "no thread for the queue's takes");
		}
		pthread_detach(th);
		p->next = pumps;
		pumps = p;
	}
	if (p != old) {
		atomic_fetch_add(&p->refs, 1); /* w's */
		w->pump = p;
	}
	pthread_mutex_unlock(&pumps_mu);
	if (p != old)
		pump_unref(old);
	hl__client_leave(c);
	return HL_OK;
}

static int waiter_step(void *arg, hl_task *self, int stop, int *done,
                       int *result, int64_t *wake_ms)
{
	bq_waiter *w = arg;
	bq_pump *p;
	int state;
	*result = 0;
	*done = 0;
	if (w->look) {
		*done = 1;
		return look_step(w, self, stop);
	}
	pthread_mutex_lock(&pumps_mu);
	state = w->state;
	if (state == W_WAITING &&
	    (stop != HL_OK || (w->until >= 0 && hl__now_ms() >= w->until))) {
		group_leave(w);
		w->state = state = W_GONE;
	}
	p = w->from ? w->from : w->pump;
	pthread_mutex_unlock(&pumps_mu);
	if (state == W_WAITING) {
		*wake_ms = w->until;
		return HL_OK;
	}
	*done = 1;
	if (state == W_FAILED)
		return hl__fail(w->status, "%s", w->msg);
	if (state == W_HANDED) {
		hl_gridcall call;
		hl_bound b;
		bq_keys k;
		int gone = 0, rc = keys_make(p->obj, &k);
		if (rc != HL_OK)
			return rc; /* its lease gives it back */
		hl__bound_plain(&b, -1, NULL);
		pump_call(p, &call, &b);
		if (stop != HL_OK) {
			give_back(&call, &k, w->id);
			keys_free(&k);
			hl_value_free(w->value);
			w->value = NULL;
			hl__task_drive_value(self, NULL);
			return hl__fail(stop,
			                "the take was %s; its element "
			                "went back to the head",
			                stop == HL_ECLOSED ? "closed"
			                                   : "interrupted");
		}
		ack(&call, &k, w->id, &gone, 0);
		keys_free(&k);
		if (gone && !w->any && !w->sib) {
			/* its lease ended before the ack and another take
			 * gave the element back: not this waiter's; it
			 * waits on, first in line */
			*done = 0;
			if ((rc = rejoin(w)) != HL_OK) {
				*done = 1;
				return rc;
			}
			*wake_ms = w->until;
			return HL_OK;
		}
		{
			/* w->value kept, should a stop overtake this end
			 * (the engine then runs the step again with it) */
			size_t n = 0;
			const char *bytes = hl_value_bytes(w->value, &n);
			hl_value *ans = hl__value_bytes(bytes, n);
			if (w->any) /* [queue name, element] */
				ans = any_pair(p->obj, ans);
			hl__task_drive_value(self, ans);
		}
		w->state = W_ACKED;
		return HL_OK;
	}
	if (state == W_ACKED && stop != HL_OK) {
		/* answered, but the stop came first: back at the head */
		const char *argv[3];
		size_t lens[3], n = 0;
		hl_reply *r = NULL;
		hl_bound b;
		hl__bound_plain(&b, hl__deadline(p->c->conf.command_timeout_ms),
		                NULL);
		argv[0] = "LPUSH";
		lens[0] = 5;
		argv[1] = p->obj->keys[0];
		lens[1] = p->obj->key_lens[0];
		argv[2] = w->value ? hl_value_bytes(w->value, &n) : NULL;
		lens[2] = n;
		if (w->value)
			hl__command_ex(p->c, &r, 3, argv, lens, HL_CMD_WRITE,
			               NULL, &b, NULL);
		hl__reply_free(r);
		hl__task_drive_value(self, NULL);
		return hl__fail(stop,
		                "the take was %s; its element went back "
		                "to the head",
		                stop == HL_ECLOSED ? "closed" : "interrupted");
	}
	/* gone: a timeout (nil) or a stop */
	if (stop != HL_OK)
		return hl__fail(stop, "the take was %s",
		                stop == HL_ECLOSED ? "closed" : "interrupted");
	hl__task_drive_value(self, hl__value_new(HL_VALUE_NIL));
	return HL_OK;
}

static void waiter_free(void *arg)
{
	waiter_unref(arg);
}

static const hl_drive_ops waiter_ops = {waiter_step, NULL, waiter_free};

/* The pump of obj's queue on c (pumps_mu held), or a new one (*fresh: not
 * listed nor running yet; its one reference is the thread's); NULL when
 * out of memory. */
static bq_pump *pump_find(hl_client *c, hl_object *obj, int last, int *fresh)
{
	bq_pump *p;
	*fresh = 0;
	for (p = pumps; p; p = p->next)
		if (p->c == c && p->last == last && p->pid == getpid() &&
		    p->obj->name_len == obj->name_len &&
		    memcmp(p->obj->name, obj->name, obj->name_len) == 0)
			return p;
	if (!(p = calloc(1, sizeof(*p))) ||
	    hl_cancel_new(&p->cancel) != HL_OK ||
	    !(p->obj = hl__grid_object_dup(obj))) {
		if (p)
			hl_cancel_free(p->cancel);
		free(p);
		return NULL;
	}
	p->c = c;
	p->last = last;
	p->pid = getpid();
	atomic_init(&p->refs, 1); /* the thread's */
	*fresh = 1;
	return p;
}

int hl__blocking_queue_call_start(hl_task **out, hl_object *obj, int op,
                                  const hl_arg *args, size_t nargs)
{
	hl_client *c = obj->client;
	bq_pump *p;
	bq_waiter *w;
	int64_t wait_ms = -1;
	pthread_t th;
	int rc, fresh = 0;
	char label[120];
	int last = op == HL_OP_BLOCKING_DEQUE_TAKE_LAST ||
	           op == HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT;
	hl__grid_label(obj, label, sizeof label);
	if (op == HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT ||
	    op == HL_OP_BOUNDED_BLOCKING_QUEUE_POLL_TIMEOUT ||
	    op == HL_OP_BLOCKING_DEQUE_POLL_TIMEOUT ||
	    op == HL_OP_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT ||
	    op == HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT) {
		if (nargs != 1 || args[0].type != HL_ARG_INT || args[0].i < 0)
			return hl__fail(HL_EINVAL,
			                "%s: a poll: timeout must be an "
			                "integer, 0 ms or more",
			                label);
		wait_ms = args[0].i;
	} else if (nargs) {
		return hl__fail(HL_EINVAL, "%s: take takes no arguments",
		                label);
	}
	if ((rc = hl__client_enter(c)) != HL_OK)
		return rc;
	if (!(w = calloc(1, sizeof(*w)))) {
		hl__client_leave(c);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	w->until = wait_ms < 0 ? -1 : hl__now_ms() + wait_ms;
	w->lead = w;
	atomic_init(&w->refs, 2); /* the task's, the line's until taken */
	pthread_mutex_lock(&pumps_mu);
	if (!(p = pump_find(c, obj, last, &fresh))) {
		pthread_mutex_unlock(&pumps_mu);
		free(w);
		hl__client_leave(c);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	atomic_fetch_add(&p->refs, 1); /* w's */
	w->pump = p;
	rc = hl__task_drive_start(out, c, &waiter_ops, w, 1,
	                          atomic_load(&c->interrupt_gen), 0);
	if (rc != HL_OK) { /* w freed by it (one reference) */
		if (fresh)
			pump_unref(p);
		pthread_mutex_unlock(&pumps_mu);
		hl__client_leave(c);
		return rc;
	}
	w->task = *out;
	/* the line's reference is dropped when the task ends (free) */
	atomic_fetch_sub(&w->refs, 1);
	if (p->tail)
		p->tail->next = w;
	else
		p->head = w;
	p->tail = w;
	p->nwaiting++;
	if (fresh) {
		/* the pump stays inside the client while it runs */
		if (hl__client_enter(c) != HL_OK ||
		    pthread_create(&th, NULL, pump_main, p) != 0) {
			p->head = p->tail = NULL;
			p->nwaiting = 0;
			w->state = W_FAILED;
			w->status = HL_ESYSTEM;
			snprintf(w->msg, sizeof w->msg,
			         "no thread for the queue's takes");
			pthread_mutex_unlock(&pumps_mu);
			hl__task_kick(*out); /* not w->task: w may be gone */
			pump_unref(p);
			hl__client_leave(c);
			return HL_OK;
		}
		pthread_detach(th);
		p->next = pumps;
		pumps = p;
	}
	pthread_mutex_unlock(&pumps_mu);
	/* *out, not w->task: once the lock is let go a pump may hand w an
	 * element, and its task end and free w, before this line runs (the
	 * task itself is the caller's until hl_task_free) */
	hl__task_kick(*out);
	hl__client_leave(c);
	return HL_OK;
}

/* ---- poll from any of several queues ------------------------------------
 *
 * One waiter with a member in the line of every named queue's pump (each
 * already runs one BLMOVE for its queue; the queues may be in different
 * cluster slots). All lines are under pumps_mu: the first pump that has an
 * element for a member hands it to the call and takes every other member
 * out of its line in the same critical section, so a second pump's
 * element goes to its next waiter or back to the head (give_back), never
 * to this call. The rest is a take's: the element stays in flight until
 * the call's task acks it; a cancel or a timeout before gives it back. */

static int any_kind(int kind)
{
	return kind == HL_KIND_BLOCKING_QUEUE ||
	       kind == HL_KIND_BLOCKING_DEQUE ||
	       kind == HL_KIND_BOUNDED_BLOCKING_QUEUE;
}

static int any_start(hl_task **out, hl_object *queue, const char *const *others,
                     const size_t *other_lens, size_t nothers,
                     int64_t timeout_ms, int blocking)
{
	hl_client *c;
	hl_object **objs = NULL;
	bq_waiter **m = NULL, *lead;
	bq_pump **ps = NULL;
	int *fresh = NULL;
	size_t n, i, j;
	int rc = HL_OK, failed = 0, nomem = 0, owned = 0;
	if (!out)
		return hl__fail(HL_EINVAL, "poll_from_any: out is NULL");
	*out = NULL;
	if (!queue || !any_kind(queue->kind->kind))
		return hl__fail(HL_EINVAL,
		                "poll_from_any: queue is NULL or not a "
		                "blocking queue, deque or bounded queue");
	if (nothers && (!others || !other_lens))
		return hl__fail(HL_EINVAL,
		                "poll_from_any: others or other_lens is NULL");
	if (nothers > 1000)
		return hl__fail(HL_EINVAL,
		                "poll_from_any: %zu queues: at most 1001",
		                nothers + 1);
	if (timeout_ms < -1)
		return hl__fail(HL_EINVAL,
		                "poll_from_any: timeout is %lld ms: 0 or more, "
		                "or -1 (none)",
		                (long long)timeout_ms);
	c = queue->client;
	if ((rc = hl__client_enter(c)) != HL_OK)
		return rc;
	n = nothers + 1;
	objs = calloc(n, sizeof(*objs));
	m = calloc(n, sizeof(*m));
	ps = calloc(n, sizeof(*ps));
	fresh = calloc(n, sizeof(*fresh));
	if (!objs || !m || !ps || !fresh) {
		rc = hl__fail(HL_ENOMEM, "out of memory");
		goto out;
	}
	objs[0] = queue;
	for (i = 1; i < n && rc == HL_OK; i++) {
		if (!others[i - 1] && other_lens[i - 1])
			rc = hl__fail(HL_EINVAL,
			              "poll_from_any: name %zu is NULL", i);
		else
			rc = hl_object_new(&objs[i], c, queue->kind->kind,
			                   others[i - 1] ? others[i - 1] : "",
			                   other_lens[i - 1]);
	}
	for (i = 0; i < n && rc == HL_OK; i++)
		if (!(m[i] = calloc(1, sizeof(**m))))
			rc = hl__fail(HL_ENOMEM, "out of memory");
	if (rc != HL_OK)
		goto out;
	lead = m[0];
	lead->lead = lead;
	lead->any = 1;
	lead->until = timeout_ms < 0 ? -1 : hl__now_ms() + timeout_ms;
	atomic_init(&lead->refs, 1); /* the task's */
	if (timeout_ms == 0) {
		/* no wait: one poll of each, on the task (no line) */
		lead->look = objs;
		lead->nlook = n;
		objs = NULL;
		for (i = 1; i < n; i++)
			free(m[i]);
		owned = 1;
		if (!(lead->look[0] = hl__grid_object_dup(queue))) {
			waiter_unref(lead);
			rc = hl__fail(HL_ENOMEM, "out of memory");
			goto out;
		}
		rc = hl__task_drive_start(out, c, &waiter_ops, lead, 1,
		                          atomic_load(&c->interrupt_gen),
		                          blocking);
		if (rc == HL_OK) {
			lead->task = *out;
			hl__task_kick(lead->task);
		}
		goto out;
	}
	for (i = 1; i < n; i++) {
		m[i]->lead = lead;
		m[i]->index = i;
		m[i]->sib = lead->sib;
		lead->sib = m[i];
	}
	pthread_mutex_lock(&pumps_mu);
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++) /* a name twice: one member */
			if (objs[j]->name_len == objs[i]->name_len &&
			    memcmp(objs[j]->name, objs[i]->name,
			           objs[i]->name_len) == 0)
				break;
		if (j < i)
			continue;
		if (!(ps[i] = pump_find(c, objs[i], 0, &fresh[i]))) {
			rc = hl__fail(HL_ENOMEM, "out of memory");
			nomem = 1;
			break;
		}
		/* a fresh pump is found again for a later name only once
		 * listed: names are deduplicated above */
		atomic_fetch_add(&ps[i]->refs, 1); /* the member's */
		m[i]->pump = ps[i];
	}
	if (rc == HL_OK)
		rc = hl__task_drive_start(out, c, &waiter_ops, lead, 1,
		                          atomic_load(&c->interrupt_gen),
		                          blocking);
	if (rc != HL_OK) {
		for (i = 0; i < n; i++)
			if (ps[i] && fresh[i])
				pump_unref(ps[i]); /* the thread's: never ran */
		pthread_mutex_unlock(&pumps_mu);
		/* the waiter and its members (and their pumps' references)
		 * go with the lead: drive_start freed it when it failed */
		if (nomem)
			waiter_unref(lead);
		owned = 1;
		goto out;
	}
	lead->task = *out;
	for (i = 0; i < n; i++) {
		bq_pump *p = ps[i];
		if (!p)
			continue;
		if (p->tail)
			p->tail->next = m[i];
		else
			p->head = m[i];
		p->tail = m[i];
		p->nwaiting++;
	}
	for (i = 0; i < n; i++) {
		pthread_t th;
		if (!ps[i] || !fresh[i])
			continue;
		if (!failed && hl__client_enter(c) == HL_OK) {
			if (pthread_create(&th, NULL, pump_main, ps[i]) == 0) {
				pthread_detach(th);
				ps[i]->next = pumps;
				pumps = ps[i];
				continue;
			}
			hl__client_leave(c);
		}
		if (!failed) {
			failed = 1;
			lead->state = W_FAILED;
			lead->status = HL_ESYSTEM;
			snprintf(lead->msg, sizeof lead->msg,
			         "no thread for the queue's takes");
			group_leave(lead);
		}
		pump_unref(ps[i]); /* the thread's: it never ran */
	}
	pthread_mutex_unlock(&pumps_mu);
	hl__task_kick(*out); /* not lead->task: see call_start */
	owned = 1;           /* the members are the task's now */
out:
	if (m && !owned)
		for (i = 0; i < n; i++)
			free(m[i]);
	if (objs)
		for (i = 1; i < n; i++)
			hl_object_free(objs[i]);
	free(objs);
	free(m);
	free(ps);
	free(fresh);
	hl__client_leave(c);
	return rc;
}

int hl_blocking_queue_poll_from_any_start(hl_task **out, hl_object *queue,
                                          const char *const *others,
                                          const size_t *other_lens,
                                          size_t nothers, int64_t timeout_ms)
{
	return any_start(out, queue, others, other_lens, nothers, timeout_ms,
	                 0);
}

int hl_blocking_queue_poll_from_any(hl_value **out, hl_object *queue,
                                    const char *const *others,
                                    const size_t *other_lens, size_t nothers,
                                    int64_t timeout_ms, hl_cancel *cancel)
{
	hl_task *t = NULL;
	int rc, result = 0;
	if (!out)
		return hl__fail(HL_EINVAL, "poll_from_any: out is NULL (the "
		                           "element taken would be lost)");
	*out = NULL;
	rc = any_start(&t, queue, others, other_lens, nothers, timeout_ms, 1);
	if (rc != HL_OK)
		return rc;
	rc = hl__task_finish_blocking_value(t, cancel, &result, out);
	if (rc == HL_OK && !*out && !(*out = hl__value_new(HL_VALUE_NIL)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}

int hl_blocking_queue_try_take(hl_value **out, hl_object *queue, int last)
{
	hl_gridcall call;
	hl_bound b;
	bq_pump *p;
	int op, waiting = 0, kind, rc;
	if (!out)
		return hl__fail(HL_EINVAL, "try_take: out is NULL (the element "
		                           "taken would be lost)");
	*out = NULL;
	if (!queue || !any_kind(queue->kind->kind))
		return hl__fail(HL_EINVAL,
		                "try_take: queue is NULL or not a blocking "
		                "queue, deque or bounded queue");
	kind = queue->kind->kind;
	if (last && kind != HL_KIND_BLOCKING_DEQUE)
		return hl__fail(HL_EINVAL,
		                "try_take: only a deque takes from the tail");
	op = kind == HL_KIND_BLOCKING_DEQUE
	             ? (last ? HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT
	                     : HL_OP_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT)
	     : kind == HL_KIND_BOUNDED_BLOCKING_QUEUE
	             ? HL_OP_BOUNDED_BLOCKING_QUEUE_POLL_TIMEOUT
	             : HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT;
	/* this client's waiters of the queue come first (their FIFO line) */
	pthread_mutex_lock(&pumps_mu);
	for (p = pumps; p; p = p->next)
		if (p->c == queue->client && p->last == last &&
		    p->pid == getpid() && p->nwaiting > 0 &&
		    p->obj->name_len == queue->name_len &&
		    memcmp(p->obj->name, queue->name, queue->name_len) == 0)
			waiting = 1;
	pthread_mutex_unlock(&pumps_mu);
	if (waiting)
		return HL_OK;
	if ((rc = hl__client_enter(queue->client)) != HL_OK)
		return rc;
	/* a poll of timeout 0: one look (its script takes the head); the
	 * call's deadline of 1 ms ends a failing look after one command's
	 * time (the look's own command is not cut shorter) */
	hl__bound_init(&b, queue->client, hl__deadline(1), NULL, 0);
	memset(&call, 0, sizeof call);
	call.obj = queue;
	call.op = hl__grid_op(op);
	call.b = &b;
	call.out = out;
	rc = take(&call, 0, last);
	if (rc != HL_OK) {
		hl_value_free(*out);
		*out = NULL;
	}
	hl__client_leave(queue->client);
	return rc;
}

int hl__blocking_queue_is_wait(int op)
{
	switch (op) {
	case HL_OP_BLOCKING_QUEUE_TAKE:
	case HL_OP_BLOCKING_QUEUE_POLL_TIMEOUT:
	case HL_OP_BLOCKING_DEQUE_TAKE:
	case HL_OP_BLOCKING_DEQUE_POLL_TIMEOUT:
	case HL_OP_BLOCKING_DEQUE_TAKE_FIRST:
	case HL_OP_BLOCKING_DEQUE_TAKE_LAST:
	case HL_OP_BLOCKING_DEQUE_POLL_FIRST_TIMEOUT:
	case HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT:
	case HL_OP_BOUNDED_BLOCKING_QUEUE_TAKE:
	case HL_OP_BOUNDED_BLOCKING_QUEUE_POLL_TIMEOUT:
		return 1;
	default:
		return 0;
	}
}

/* ---- the bounded queue's offers that wait for room ----------------------
 *
 * A wait of the engine (as a semaphore's acquire): this client's waiters
 * queue FIFO on the capacity key; the head runs the offer script (a unit
 * of capacity and the RPUSH in one script, with a request marker: a
 * resend after a lost reply adds nothing twice) and, when full, waits for
 * a message on redisson_sc:redisson_bqs:{name} (what every give-back
 * publishes, Redisson's too), looking again every half second anyway. A
 * cancel that overtakes an offer which landed leaves the element queued
 * (the call says interrupted). */

#define BQ_RECHECK_MS 500

typedef struct bqo_ctx {
	hl_object *obj;
	char *value;
	size_t len;
	char *mark, *channel;
	size_t mark_len, channel_len;
} bqo_ctx;

static void bqo_free(void *arg)
{
	bqo_ctx *x = arg;
	hl_object_free(x->obj);
	free(x->value);
	free(x->mark);
	free(x->channel);
	free(x);
}

static int bqo_attempt(void *arg, const hl_bound *b, int *acquired,
                       int64_t *retry_ms)
{
	bqo_ctx *x = arg;
	const hl_conf *cf = &x->obj->client->conf;
	hl_gridcall call;
	const char *argv[5];
	size_t lens[5];
	char ttl[24];
	hl_reply *r = NULL;
	int64_t ms = (int64_t)(cf->retry_attempts + 1) *
	             (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	int rc;
	*acquired = 0;
	*retry_ms = BQ_RECHECK_MS;
	memset(&call, 0, sizeof(call));
	call.obj = x->obj;
	call.op = hl__grid_op(HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER);
	call.b = b;
	argv[0] = x->obj->keys[0];
	lens[0] = x->obj->key_lens[0];
	argv[1] = x->obj->keys[1];
	lens[1] = x->obj->key_lens[1];
	argv[2] = x->mark;
	lens[2] = x->mark_len;
	argv[3] = x->value;
	lens[3] = x->len;
	argv[4] = ttl;
	lens[4] = hl__fmt_i64(ttl, ms < 1000 ? 1000 : ms);
	rc = hl__grid_eval(&call,
	                   &hl__script_bounded_blocking_queue_offer_marked, 3,
	                   2, argv, lens, &r);
	if (rc == HL_OK) {
		int t = hl__reply_type(r);
		if (t == HL_REPLY_ERROR) {
			char label[120];
			const char *e = hl__reply_str(r);
			hl__grid_label(x->obj, label, sizeof label);
			rc = strncmp(e, "ERR hilock: ", 12) == 0
			             ? hl__fail(HL_EINVAL, "%s: offer: %.300s",
			                        label, e + 12)
			             : wrong(&call, r);
		} else if (t == HL_REPLY_INTEGER && hl__reply_int(r) == 1) {
			*acquired = 1;
		}
	}
	hl__reply_free(r);
	return rc;
}

static void bqo_undo(void *arg, const hl_bound *b)
{
	(void)arg; /* the element stays queued: nothing to take back safely */
	(void)b;
}

static const hl_wait_ops bqo_ops = {bqo_attempt, bqo_undo, NULL, bqo_free,
                                    NULL};

static int bqo_spec(hl_wait_spec *spec, hl_object *obj, const hl_arg *value,
                    int64_t timeout_ms)
{
	hl_client *c = obj->client;
	bqo_ctx *x = calloc(1, sizeof(*x));
	size_t n = 0;
	char id[33];
	if (!x)
		return hl__fail(HL_ENOMEM, "out of memory");
	x->obj = hl__grid_object_dup(obj);
	x->value = malloc(value->len + 1);
	x->mark = hl__derive_name("hilock_request:", "", obj->name,
	                          obj->name_len, 0, &n);
	x->channel = malloc(obj->key_lens[1] + 13);
	if (!x->obj || !x->value || !x->mark || !x->channel ||
	    !(x->mark = realloc(x->mark, n + 34))) {
		bqo_free(x);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	if (value->len)
		memcpy(x->value, value->bytes, value->len);
	x->len = value->len;
	hl__random_hex(id);
	x->mark[n] = ':';
	memcpy(x->mark + n + 1, id, 32);
	x->mark_len = n + 33;
	memcpy(x->channel, "redisson_sc:", 12);
	memcpy(x->channel + 12, obj->keys[1], obj->key_lens[1]);
	x->channel_len = 12 + obj->key_lens[1];
	memset(spec, 0, sizeof(*spec));
	spec->ops = &bqo_ops;
	spec->arg = x;
	spec->gate = x->obj->keys[1];
	spec->gate_len = x->obj->key_lens[1];
	spec->channel = x->channel;
	spec->channel_len = x->channel_len;
	spec->deadline_ms = timeout_ms < 0 ? -1 : hl__deadline(timeout_ms);
	spec->io_deadline_ms = hl__io_deadline(c, spec->deadline_ms);
	spec->once = timeout_ms == 0;
	spec->first = HL_WAIT_FRESH;
	spec->interrupt_gen = atomic_load(&c->interrupt_gen);
	return HL_OK;
}

static int bqo_check(hl_object *obj, const hl_arg *args, size_t nargs,
                     int timed, int64_t *timeout_ms)
{
	char label[120];
	hl__grid_label(obj, label, sizeof label);
	if (nargs != (timed ? 2u : 1u) || args[0].type != HL_ARG_BYTES ||
	    (!args[0].bytes && args[0].len))
		return hl__fail(HL_EINVAL, "%s: %s: a value%s expected", label,
		                timed ? "offer_timeout" : "put",
		                timed ? " and a timeout" : "");
	*timeout_ms = -1;
	if (timed) {
		if (args[1].type != HL_ARG_INT || args[1].i < 0)
			return hl__fail(HL_EINVAL,
			                "%s: offer_timeout: timeout must be an "
			                "integer, 0 ms or more",
			                label);
		*timeout_ms = args[1].i;
	}
	return HL_OK;
}

static int bqo_wait(hl_gridcall *call, int timed)
{
	hl_object *obj = call->obj;
	hl_wait_spec spec;
	hl_task *t = NULL;
	int64_t timeout_ms;
	int rc, result = 0;
	if ((rc = bqo_check(obj, call->args, call->nargs, timed,
	                    &timeout_ms)) != HL_OK)
		return rc;
	if ((rc = bqo_spec(&spec, obj, &call->args[0], timeout_ms)) != HL_OK)
		return rc;
	spec.blocking = 1;
	if ((rc = hl__task_wait_start(&t, obj->client, &spec)) == HL_OK)
		rc = hl__task_finish_blocking(t, call->b->cancel, &result);
	if (rc == HL_ETIMEDOUT) { /* no room in time */
		rc = HL_OK;
		result = 0;
	}
	if (rc == HL_OK && call->out && timed &&
	    !(*call->out = hl__value_int(result != 0)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}

int hl__bounded_queue_offer_timeout(hl_gridcall *call)
{
	return bqo_wait(call, 1);
}

int hl__bounded_queue_put(hl_gridcall *call)
{
	return bqo_wait(call, 0);
}

int hl__bounded_queue_call_start(hl_task **out, hl_object *obj, int op,
                                 const hl_arg *args, size_t nargs)
{
	hl_wait_spec spec;
	int64_t timeout_ms;
	int timed = op == HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER_TIMEOUT, rc;
	if ((rc = hl__client_enter(obj->client)) != HL_OK)
		return rc;
	if ((rc = bqo_check(obj, args, nargs, timed, &timeout_ms)) == HL_OK &&
	    (rc = bqo_spec(&spec, obj, &args[0], timeout_ms)) == HL_OK)
		rc = hl__task_wait_start(out, obj->client, &spec);
	hl__client_leave(obj->client);
	return rc;
}
