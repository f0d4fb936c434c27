/*
 * The named objects of the synchronizers: see object.h.
 */
#include "prim/object.h"

#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

/* prefix + "{name}" (or prefix + name when the name has a '{' and
 * always_brace is 0), or "{name}" + suffix likewise. NULL when out of
 * memory. */
char *hl__derive_name(const char *prefix, const char *suffix, const char *name,
                      size_t name_len, int always_brace, size_t *out_len)
{
	size_t plen = strlen(prefix), slen = strlen(suffix);
	int braces = always_brace || memchr(name, '{', name_len) == NULL;
	char *d = malloc(plen + name_len + slen + 2);
	if (!d)
		return NULL;
	memcpy(d, prefix, plen);
	if (braces)
		d[plen] = '{';
	memcpy(d + plen + braces, name, name_len);
	if (braces)
		d[plen + 1 + name_len] = '}';
	memcpy(d + plen + name_len + (braces ? 2 : 0), suffix, slen);
	*out_len = plen + name_len + (braces ? 2 : 0) + slen;
	return d;
}

int hl__check_name(const void *name, size_t name_len)
{
	if (!name)
		return hl__fail(HL_EINVAL, "name is NULL");
	if (name_len == 0)
		return hl__fail(HL_EINVAL, "name is empty");
	if (name_len > HL_NAME_MAX)
		return hl__fail(HL_EINVAL,
		                "name is %zu bytes; at most %d are allowed",
		                name_len, HL_NAME_MAX);
	return HL_OK;
}

const char *hl__object_label(const hl_named *o, char *buf, size_t len)
{
	return hl__printable(buf, len, o->name, o->name_len);
}

int hl__object_init(hl_named *o, hl_client *client, const void *name,
                    size_t name_len, const char *channel_prefix,
                    int always_brace, const char *aux_suffix, const char *what)
{
	int rc;
	memset(o, 0, sizeof(*o));
	if ((rc = hl__check_name(name, name_len)) != HL_OK)
		return rc;
	if ((rc = hl__client_enter(client)) != HL_OK)
		return rc;
	if (client->conf.url.topology == HL_TOPO_CLUSTER &&
	    (!hl__name_slot_safe(name, name_len) ||
	     (always_brace && memchr(name, '}', name_len)))) {
		/* Its channel or other keys would hash to another slot than
		 * its key, and every script naming both would fail with
		 * CROSSSLOT (Redisson's too). The latch's channel always
		 * wraps the name in braces, so a '}' in it moves the tag. */
		char label[80];
		hl__client_leave(client);
		return hl__fail(
		        HL_EINVAL,
		        "\"%s\": in a cluster, this %s's name must %s",
		        hl__printable(label, sizeof(label), name, name_len),
		        what,
		        always_brace ? "not contain '}' (its channel "
		                       "wraps it in braces)"
		                     : "have a non-empty {hash tag} at its "
		                       "first '{' if it has braces");
	}
	o->what = what;
	o->name = malloc(name_len);
	o->channel = hl__derive_name(channel_prefix, "", name, name_len,
	                             always_brace, &o->channel_len);
	if (aux_suffix)
		o->aux = hl__derive_name("", aux_suffix, name, name_len, 0,
		                         &o->aux_len);
	if (!o->name || !o->channel || (aux_suffix && !o->aux)) {
		free(o->name);
		free(o->channel);
		free(o->aux);
		memset(o, 0, sizeof(*o));
		hl__client_leave(client);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	memcpy(o->name, name, name_len);
	o->name_len = name_len;
	atomic_fetch_add(&client->refs, 1);
	o->client = client;
	hl__client_leave(client);
	return HL_OK;
}

int hl__object_new(void **out, size_t size, hl_client *client, const void *name,
                   size_t name_len, const char *channel_prefix,
                   int always_brace, const char *aux_suffix, const char *what)
{
	hl_named *o;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!(o = calloc(1, size)))
		return hl__fail(HL_ENOMEM, "out of memory");
	if ((rc = hl__object_init(o, client, name, name_len, channel_prefix,
	                          always_brace, aux_suffix, what)) != HL_OK) {
		free(o);
		return rc;
	}
	*out = o;
	return HL_OK;
}

void hl__object_fini(hl_named *o)
{
	if (o->client)
		hl__client_unref(o->client);
	free(o->name);
	free(o->channel);
	free(o->aux);
	memset(o, 0, sizeof(*o));
}

int hl__object_enter(const hl_named *o)
{
	return hl__client_enter(o->client);
}

void hl__unique_id(void *out, size_t n)
{
	/* uniqueness, not secrecy: a thread's numbered ids under its random
	 * key (no system call); if the system gave no key, libuuid's random
	 * UUIDs */
	unsigned char *p = out;
	if (hl__unique_bytes(p, n) == 0)
		return;
	while (n > 0) {
		uuid_t u;
		size_t take = n < sizeof(u) ? n : sizeof(u);
		uuid_generate_random(u);
		memcpy(p, u, take);
		p += take;
		n -= take;
	}
}

void hl__random_hex(char out[33])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char u[16];
	int i;
	hl__unique_id(u, sizeof(u));
	for (i = 0; i < 16; i++) {
		out[2 * i] = hex[u[i] >> 4];
		out[2 * i + 1] = hex[u[i] & 15];
	}
	out[32] = '\0';
}

int hl__object_marker_id(script_args *a, const hl_named *o, const char id[33])
{
	static const char prefix[] = "hilock_request:";
	size_t n;
	char *w = hl__derive_name(prefix, "", o->name, o->name_len, 0, &n),
	     *grown;
	if (!w)
		return hl__fail(HL_ENOMEM, "out of memory");
	grown = realloc(w, n + 1 + 32);
	if (!grown) {
		free(w);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	a->owned = grown;
	a->owned[n] = ':';
	memcpy(a->owned + n + 1, id, 32);
	arg(a, a->owned, n + 33);
	return HL_OK;
}

int hl__object_marker(script_args *a, const hl_named *o)
{
	char id[33];
	hl__random_hex(id);
	return hl__object_marker_id(a, o, id);
}

const char *hl__object_marker_ttl(script_args *a, const hl_named *o)
{
	/* as long as a resend may come: every retry with its pause */
	const hl_conf *cf = &o->client->conf;
	int64_t ms = (int64_t)(cf->retry_attempts + 1) *
	             (cf->command_timeout_ms + 2 * cf->retry_delay_ms);
	return num(a->nums[3], ms < 1000 ? 1000 : ms);
}

int hl__object_eval(const hl_named *o, int64_t *out, enum hl_script_id id,
                    script_args *a, int flags, const hl_bound *b,
                    int *replicated, enum hl_sent *sent, const char *doing)
{
	char label[80];
	hl_reply *r = NULL;
	const hl_reply *v;
	int ignored = -1, rc, tries = 0;
	/* Every change is WAITed for on a master with replicas (Redisson's
	 * synced evals), even where nobody looks at the answer: a permit
	 * given back or a count-down must survive a failover. */
	if (!replicated && (flags & HL_CMD_WRITE))
		replicated = &ignored;
	for (;;) {
		ignored = -1;
		rc = hl__eval(o->client, &r, id, a->nkeys, a->n, a->v, a->len,
		              flags, sent, b, replicated);
		/* No replica confirmed a change nobody else checks (a release,
		 * a count-down): a failover now could lose it. Sent again
		 * with the same request marker, it runs once more only where
		 * the first run was lost (on a new master without it). */
		if (rc != HL_OK || replicated != &ignored || ignored != 0 ||
		    !a->owned || tries++ >= o->client->conf.retry_attempts)
			break;
		hl__reply_free(r);
		r = NULL;
		if ((rc = hl__pause(
		             o->client,
		             hl__jitter_delay(o->client->conf.retry_delay_ms,
		                              tries),
		             b)) != HL_OK)
			break;
	}
	free(a->owned);
	a->owned = NULL;
	if (rc != HL_OK)
		return rc == HL_EIO
		               ? hl__fail_wrap(rc, "%s %s \"%s\"", doing,
		                               o->what,
		                               hl__object_label(o, label,
		                                                sizeof(label)))
		               : rc;
	v = r;
	if (hl__reply_type(r) == HL_REPLY_ARRAY && hl__reply_len(r) >= 1)
		v = hl__reply_at(r, 0);
	if (hl__reply_type(v) == HL_REPLY_INTEGER) {
		*out = hl__reply_int(v);
	} else if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = hl__fail(HL_EREDIS, "%s %s \"%s\": %.300s", doing, o->what,
		              hl__object_label(o, label, sizeof(label)),
		              hl__reply_str(r));
	} else {
		rc = hl__fail(HL_EPROTOCOL,
		              "%s %s \"%s\": unexpected reply type %d", doing,
		              o->what,
		              hl__object_label(o, label, sizeof(label)),
		              hl__reply_type(r));
	}
	hl__reply_free(r);
	return rc;
}

int hl__object_get(const hl_named *o, int64_t *out, const char *doing)
{
	const char *argv[2] = {"GET", o->name};
	size_t lens[2] = {3, o->name_len};
	hl_reply *r = NULL;
	char label[80];
	int rc = hl__command(o->client, &r, 2, argv, lens, HL_CMD_IDEMPOTENT,
	                     NULL, NULL);
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_NIL)
		*out = 0;
	else if (hl__reply_type(r) == HL_REPLY_STRING)
		*out = strtoll(hl__reply_str(r), NULL, 10);
	else
		rc = hl__fail(
		        hl__reply_type(r) == HL_REPLY_ERROR ? HL_EREDIS
		                                            : HL_EPROTOCOL,
		        "%s %s \"%s\": %.300s", doing, o->what,
		        hl__object_label(o, label, sizeof(label)),
		        hl__reply_type(r) == HL_REPLY_ERROR ? hl__reply_str(r)
		                                            : "not a number");
	hl__reply_free(r);
	return rc;
}

int hl__object_delete(const hl_named *o, int *out_existed)
{
	const char *argv[5];
	size_t lens[5];
	int argc = 0, rc;
	hl_reply *r = NULL;
	char label[80];
	argv[argc] = "DEL";
	lens[argc++] = 3;
	argv[argc] = o->name;
	lens[argc++] = o->name_len;
	if (o->aux) {
		argv[argc] = o->aux;
		lens[argc++] = o->aux_len;
	}
	rc = hl__command(o->client, &r, argc, argv, lens,
	                 HL_CMD_WRITE | HL_CMD_IDEMPOTENT, NULL, NULL);
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_INTEGER) {
		if (out_existed)
			*out_existed = hl__reply_int(r) > 0;
	} else {
		rc = hl__fail(HL_EREDIS, "deleting %s \"%s\": %.300s", o->what,
		              hl__object_label(o, label, sizeof(label)),
		              hl__reply_type(r) == HL_REPLY_ERROR
		                      ? hl__reply_str(r)
		                      : "unexpected reply");
	}
	hl__reply_free(r);
	return rc;
}

hl_named *hl__object_dup(const hl_named *o)
{
	hl_named *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	*d = *o;
	d->name = malloc(o->name_len);
	d->channel = malloc(o->channel_len);
	d->aux = o->aux ? malloc(o->aux_len) : NULL;
	if (!d->name || !d->channel || (o->aux && !d->aux)) {
		free(d->name);
		free(d->channel);
		free(d->aux);
		free(d);
		return NULL;
	}
	memcpy(d->name, o->name, o->name_len);
	memcpy(d->channel, o->channel, o->channel_len);
	if (o->aux)
		memcpy(d->aux, o->aux, o->aux_len);
	atomic_fetch_add(&o->client->refs, 1);
	return d;
}

void hl__object_dup_free(hl_named *o)
{
	if (!o)
		return;
	hl__object_fini(o);
	free(o);
}

int hl__check_permits(int64_t n, int64_t lo, const char *what)
{
	if (n < lo || n > HL_TIME_MAX)
		return hl__fail(HL_EINVAL, "%s = %lld: use %lld to 2^40", what,
		                (long long)n, (long long)lo);
	return HL_OK;
}

int hl__check_wait(int64_t wait_ms)
{
	if (wait_ms < -1 || wait_ms > HL_TIME_MAX)
		return hl__fail(HL_EINVAL,
		                "wait_ms = %lld: use -1 (forever), 0 (one "
		                "attempt) or up to 2^40 ms",
		                (long long)wait_ms);
	return HL_OK;
}

int64_t hl__io_deadline(const hl_client *c, int64_t deadline_ms)
{
	int64_t grace = c->conf.command_timeout_ms < 150
	                        ? c->conf.command_timeout_ms
	                        : 150;
	if (deadline_ms >= 0 && deadline_ms < hl__now_ms() + grace)
		return hl__now_ms() + grace;
	return deadline_ms;
}

/* The first attempt's error when Redis did not answer it, for the task
 * that takes over (it copies it at its start, on this thread). */
static _Thread_local char outage[320];

int hl__first_attempt(hl_client *c, hl_wait_spec *spec, hl_cancel *cancel,
                      int *done, int *result)
{
	hl_bound b;
	int64_t retry = -1, tried_us;
	int rc, busy, acquired = 0;
	*done = 0;
	*result = 0;
	pthread_mutex_lock(&c->wait_mu);
	busy = spec->gate && hl__gate_busy(c, spec->gate, spec->gate_len);
	pthread_mutex_unlock(&c->wait_mu);
	if (busy)
		return HL_OK; /* queue behind them, through the task */
	hl__bound_init(&b, c, spec->io_deadline_ms, cancel, 1);
	tried_us = hl__now_us();
	hl__tl_heard = 0;
	rc = spec->ops->attempt(spec->arg, &b, &acquired, &retry);
	if (rc == HL_OK && (acquired || spec->once)) {
		*done = 1;
		*result = acquired;
		return HL_OK;
	}
	if (rc == HL_ETIMEDOUT && hl__tl_heard) {
		/* the wait ended in a round trip Redis was answering */
		*done = 1;
		return HL_OK;
	}
	if (rc == HL_ETIMEDOUT) {
		/* the wait ended in a round trip Redis never answered: an
		 * outage (or a silent server), not contention */
		*done = 1;
		return hl__outage_fail(c, tried_us / 1000,
		                       hl__timeout_cause(hl_error_last()));
	}
	if (rc == HL_OK ||
	    ((rc == HL_EIO || rc == HL_ECONNECT) && !spec->once &&
	     hl__remaining(spec->deadline_ms) != 0)) {
		/* wait (and ride out an outage) through the task; an
		 * answered attempt stands until a message (see task.c
		 * subscribe()) */
		spec->first = HL_WAIT_TRIED;
		spec->tried_us = rc == HL_OK ? tried_us : 0;
		spec->tried_retry_ms = retry;
		if (rc != HL_OK) {
			snprintf(outage, sizeof(outage), "%s", hl_error_last());
			spec->unanswered = outage;
			spec->unanswered_since_ms = tried_us / 1000;
		}
		return HL_OK;
	}
	*done = 1;
	return rc;
}

int hl__object_wait(hl_client *c, hl_wait_spec *spec, hl_cancel *cancel,
                    int *out)
{
	hl_task *t;
	int rc, done = 0, result = 0;
	if (hl_cancel_is_triggered(cancel)) {
		spec->ops->free(spec->arg);
		hl__client_leave(c);
		return hl__fail(HL_EINTERRUPTED, "cancelled before waiting");
	}
	rc = hl__first_attempt(c, spec, cancel, &done, &result);
	if (done) {
		spec->ops->free(spec->arg);
		hl__client_leave(c);
		if (rc == HL_OK)
			*out = result;
		return rc;
	}
	spec->blocking = 1;
	rc = hl__task_wait_start(&t, c, spec);
	hl__client_leave(c);
	if (rc != HL_OK)
		return rc;
	rc = hl__task_finish_blocking(t, cancel, &result);
	if (rc == HL_ETIMEDOUT) { /* the wait ran out: not acquired */
		rc = HL_OK;
		result = 0;
	}
	if (rc == HL_OK)
		*out = result;
	return rc;
}

void hl__object_wait_spec(hl_wait_spec *spec, const hl_named *o,
                          const hl_wait_ops *ops, void *arg, int gated,
                          int64_t wait_ms)
{
	memset(spec, 0, sizeof(*spec));
	spec->ops = ops;
	spec->arg = arg;
	if (gated) {
		spec->gate = o->name;
		spec->gate_len = o->name_len;
	}
	spec->channel = o->channel;
	spec->channel_len = o->channel_len;
	spec->deadline_ms = hl__deadline(wait_ms);
	spec->io_deadline_ms = hl__io_deadline(o->client, spec->deadline_ms);
	spec->once = wait_ms == 0;
	spec->first = HL_WAIT_FRESH;
	spec->interrupt_gen = atomic_load(&o->client->interrupt_gen);
}
