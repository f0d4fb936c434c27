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

#include "grid.h"
#include "prim/object.h"

extern const hl_script_def hl__script_blocking_queue_prep;
extern const hl_script_def hl__script_blocking_queue_ack;

#define ID_LEN 32

typedef struct bq_keys {
	char *hash, *prefix, *own, *old;
	size_t hash_len, prefix_len;
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
	if (!k->hash || !k->prefix || !k->own || !k->old) {
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
	free(base);
	return HL_OK;
}

/* key = prefix + id */
static void key_of(const bq_keys *k, char *key, const char *id)
{
	memcpy(key, k->prefix, k->prefix_len);
	memcpy(key + k->prefix_len, id, ID_LEN);
}

static int64_t lease_ms(const hl_object *o)
{
	int64_t l = o->client->conf.watchdog_ms;
	return l < 600 ? 600 : l;
}

/* A failure of the wire (the take waits and tries again), not of the
 * caller's bound or of the input. */
static int transient(int rc, const hl_bound *b)
{
	if (hl__bound_check(b) != HL_OK)
		return 0;
	return rc == HL_EIO || rc == HL_ECONNECT || rc == HL_ETIMEDOUT ||
	       rc == HL_EINDOUBT;
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

/* The prep script: id "" renews nothing (recover); old "" gives up no
 * attempt. *mine: this take's in-flight element (NULL: none); *moved:
 * how many elements went back. */
static int prep(hl_gridcall *call, bq_keys *k, const char *id, const char *old,
                int64_t old_window, hl_value **mine, int64_t *moved)
{
	const char *argv[9];
	size_t lens[9];
	char lease[24], window[24];
	hl_reply *r = NULL;
	int rc;
	if (mine)
		*mine = NULL;
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
	argv[4] = id;
	lens[4] = strlen(id);
	argv[5] = lease;
	lens[5] = hl__fmt_i64(lease, lease_ms(call->obj));
	argv[6] = k->prefix;
	lens[6] = k->prefix_len;
	argv[7] = old;
	lens[7] = strlen(old);
	argv[8] = window;
	lens[8] = hl__fmt_i64(window, old_window);
	rc = hl__grid_eval(call, &hl__script_blocking_queue_prep, 4, 5, argv,
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

/* Remove this take's in-flight list and entry (its element is the
 * caller's, or it took none); sent again until Redis answers. */
static int ack(hl_gridcall *call, bq_keys *k, const char *id)
{
	const char *argv[3];
	size_t lens[3];
	hl_reply *r = NULL;
	hl_gridcall own = *call;
	hl_bound b;
	const hl_conf *cf = &call->obj->client->conf;
	int rc;
	/* not cut short by the caller's cancel or deadline: the caller has
	 * its element, or gave up waiting (the entry goes either way) */
	hl__bound_plain(
	        &b,
	        hl__deadline((int64_t)(cf->retry_attempts + 1) *
	                     (cf->command_timeout_ms + cf->retry_delay_ms)),
	        NULL);
	own.b = &b;
	call = &own;
	key_of(k, k->own, id);
	argv[0] = k->hash;
	lens[0] = k->hash_len;
	argv[1] = k->own;
	lens[1] = k->prefix_len + ID_LEN;
	argv[2] = id;
	lens[2] = ID_LEN;
	rc = hl__grid_eval(call, &hl__script_blocking_queue_ack, 2, 1, argv,
	                   lens, &r);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = wrong(call, r);
	hl__reply_free(r);
	return rc;
}

/* BLMOVE the head into this take's list, waiting up to slice_ms: HL_OK
 * and *got (NULL: nothing came), or why not (*sent: it may have landed). */
static int move_one(hl_gridcall *call, bq_keys *k, const char *id,
                    int64_t slice_ms, hl_value **got, enum hl_sent *sent)
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
	argv[3] = "LEFT";
	lens[3] = 4;
	argv[4] = "RIGHT";
	lens[4] = 5;
	argv[5] = secs;
	lens[5] = (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
	                           (long long)(slice_ms / 1000),
	                           (long long)(slice_ms % 1000));
	rc = hl__blocking_command(o->client, &r, 6, argv, lens, o->keys[0],
	                          o->key_lens[0], slice_ms, call->b, sent);
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

/* A take: wait_ms -1 without bound. */
static int take(hl_gridcall *call, int64_t wait_ms)
{
	hl_object *o = call->obj;
	hl_client *c = o->client;
	int64_t lease = lease_ms(o), until, window = 0, backoff = 0;
	char id[ID_LEN + 1], old[ID_LEN + 1] = "";
	hl_value *got = NULL;
	bq_keys k;
	int rc;
	if (!call->out) {
		char label[120];
		return hl__fail(HL_EINVAL,
		                "%s: %s: out is NULL (the element "
		                "taken would be lost)",
		                hl__grid_label(o, label, sizeof label),
		                call->op->name);
	}
	if (wait_ms < -1)
		return hl__fail(HL_EINVAL, "timeout is %lld: 0 or more",
		                (long long)wait_ms);
	if ((rc = keys_make(o, &k)) != HL_OK)
		return rc;
	hl__random_hex(id);
	until = wait_ms < 0 ? -1 : hl__now_ms() + wait_ms;
	for (;;) {
		enum hl_sent sent = HL_SENT_NOTHING;
		int64_t now, slice;
		rc = prep(call, &k, id, old, window, &got, NULL);
		if (rc == HL_OK) {
			old[0] = '\0';
			backoff = 0;
			if (got)
				break;
			now = hl__now_ms();
			if (until >= 0 && now >= until) {
				rc = ack(call, &k, id); /* leave: none taken */
				*call->out = hl__value_new(HL_VALUE_NIL);
				goto out;
			}
			slice = lease / 3;
			if (until >= 0 && until - now < slice)
				slice = until - now;
			if (slice < 1)
				slice = 1;
			rc = move_one(call, &k, id, slice, &got, &sent);
			if (rc == HL_OK && got)
				break;
			if (rc == HL_OK)
				continue; /* a slice with nothing: renew, wait
				           */
			if (sent == HL_SENT_MAYBE) {
				/* it may land: that id is given up */
				memcpy(old, id, sizeof old);
				window = slice +
				         2 * c->conf.command_timeout_ms + 1000;
				hl__random_hex(id);
			} else if (!transient(rc, call->b)) {
				/* nothing taken: leave (best effort) */
				int keep = rc;
				char msg[400];
				snprintf(msg, sizeof msg, "%s",
				         hl_error_last());
				ack(call, &k, id);
				rc = hl__fail(keep, "%s", msg);
				goto out;
			}
		}
		if (!transient(rc, call->b) && rc != HL_OK)
			goto out; /* an entry left ends with its lease */
		/* the wire failed: wait on, on the node there is now */
		backoff = backoff ? backoff * 2 : c->conf.retry_delay_ms;
		if (backoff < 20)
			backoff = 20;
		if (backoff > 1000)
			backoff = 1000;
		if (until >= 0 && hl__now_ms() + backoff > until + lease) {
			goto out; /* poll_timeout: not reachable within it */
		}
		if ((rc = hl__pause(c, backoff, call->b)) != HL_OK)
			goto out;
	}
	/* got: the caller's once Redis knows (the ack is sent again until it
	 * answers; when it never does, the element may come again after the
	 * lease: at least once, see the docs) */
	ack(call, &k, id);
	*call->out = got;
	rc = HL_OK;
out:
	keys_free(&k);
	return rc;
}

int hl__blocking_queue_take(hl_gridcall *call)
{
	return take(call, -1);
}

int hl__blocking_queue_poll_timeout(hl_gridcall *call)
{
	const hl_arg *a = &call->args[0];
	int64_t ms = a->type == HL_ARG_INT ? a->i : (int64_t)a->d;
	if (a->type == HL_ARG_DOUBLE && !(a->d >= 0))
		ms = -2;
	return take(call, ms);
}

int hl__blocking_queue_recover(hl_gridcall *call)
{
	bq_keys k;
	int64_t moved = 0;
	int rc = keys_make(call->obj, &k);
	if (rc != HL_OK)
		return rc;
	rc = prep(call, &k, "", "", 0, NULL, &moved);
	keys_free(&k);
	if (rc == HL_OK && call->out && !(*call->out = hl__value_int(moved)))
		rc = hl__fail(HL_ENOMEM, "out of memory");
	return rc;
}
