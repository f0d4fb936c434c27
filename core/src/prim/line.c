/*
 * The waiting line's client side (prim/line.h): shared by the default lock
 * (lock.c), the semaphore (semaphore.c) and the permit-expirable semaphore
 * (expsem.c).
 */
#include "prim/line.h"

#include "prim/args.h"
#include "prim/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest a waiter's end waits for its leaving the line: past it, the
 * place lapses by itself. */
#define HL_LINE_LEAVE_MS 100

int hl__line_keys_init(hl_line_keys *k, const char *name, size_t name_len)
{
	k->line = hl__derive_name("hilock_line:", "", name, name_len, 0,
	                          &k->line_len);
	k->dl = hl__derive_name("hilock_line_timeout:", "", name, name_len, 0,
	                        &k->dl_len);
	if (k->line && k->dl)
		return HL_OK;
	hl__line_keys_free(k);
	return hl__fail(HL_ENOMEM, "out of memory");
}

void hl__line_keys_free(hl_line_keys *k)
{
	free(k->line);
	free(k->dl);
	k->line = k->dl = NULL;
}

int hl__line_channel(char **buf, size_t *out_len, const hl_client *c,
                     const char *line_key, size_t line_len)
{
	*buf = malloc(line_len + 1 + HL_UUID_LEN);
	if (!*buf)
		return hl__fail(HL_ENOMEM, "out of memory");
	memcpy(*buf, line_key, line_len);
	(*buf)[line_len] = ':';
	memcpy(*buf + line_len + 1, c->id, HL_UUID_LEN);
	*out_len = line_len + 1 + HL_UUID_LEN;
	return HL_OK;
}

int hl__line_init(hl_line *w, hl_client *c, const char *line_key,
                  size_t line_len, const char *kind_channel,
                  size_t kind_channel_len)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->kind_channel = kind_channel;
	w->kind_channel_len = kind_channel_len;
	return hl__line_channel(&w->channel, &w->channel_len, c, line_key,
	                        line_len);
}

void hl__line_fini_locked(hl_line *w)
{
	if (w->ear)
		hl__pubsub_unlisten_locked(w->c, w->ear);
	w->ear = NULL;
	free(w->channel);
	w->channel = NULL;
}

/* The ear of the first in line: a message on the kind's channel (a
 * Redisson release; hilock's releases send one too) goes on to the wait,
 * through its client's place's channel, where hl__line_wants() lets it
 * in. Its own copy of that channel's name: it may hear a message after the
 * wait is over, until Redis confirmed the UNSUBSCRIBE. */
typedef struct line_ear {
	hl_client *c;
	size_t len;
	char channel[];
} line_ear;

static void ear_heard(void *arg, const char *msg, size_t len)
{
	line_ear *e = arg;
	hl_sub *s = hl__map_get(&e->c->subs, e->channel, e->len);
	if (s)
		hl__pubsub_message(s, msg, len);
}

static void listen(hl_line *w, int first)
{
	if (first && !w->ear) {
		line_ear *e = malloc(sizeof(*e) + w->channel_len);
		if (!e)
			return; /* its renewal finds the lock free instead */
		e->c = w->c;
		e->len = w->channel_len;
		memcpy(e->channel, w->channel, w->channel_len);
		if (hl__pubsub_listen(&w->ear, w->c, w->kind_channel,
		                      w->kind_channel_len, ear_heard, free,
		                      e) != HL_OK) {
			free(e);
			w->ear = NULL;
		}
	} else if (!first && w->ear) {
		hl__pubsub_unlisten(w->c, w->ear);
		w->ear = NULL;
	}
}

void hl__line_note(hl_line *w, int64_t ticket, int first, int follow)
{
	atomic_store(&w->ticket, ticket);
	atomic_store(&w->place, ticket == 0 ? HL_PLACE_UNKNOWN
	                        : first     ? HL_PLACE_FIRST
	                                    : HL_PLACE_BEHIND);
	if (follow)
		listen(w, ticket != 0 && first);
}

/* A ticket (2 and up: hilock's release, or a script that dropped a lapsed
 * first) is for the waiter that holds it; anything else (Redisson's
 * messages, passed on by the ear) for the first in line and for a waiter
 * that does not know its place, never for one that knows it is behind (its
 * ticket tells it when its turn comes). */
int hl__line_wants(const hl_line *w, const char *msg, size_t len)
{
	int64_t n = 0, mine;
	size_t i;
	if (len == 0 || len > 18)
		return 1;
	for (i = 0; i < len; i++) {
		if (msg[i] < '0' || msg[i] > '9')
			return 1;
		n = n * 10 + (msg[i] - '0');
	}
	if (n >= 2) {
		mine = atomic_load(&w->ticket);
		return mine == 0 || mine == n;
	}
	return atomic_load(&w->place) != HL_PLACE_BEHIND;
}

void hl__line_leave(hl_client *c, const char *name, size_t name_len,
                    const char *line, size_t line_len, const char *dl,
                    size_t dl_len)
{
	script_args a;
	hl_reply *r = NULL;
	hl_bound b;
	int others;
	/* The place is the client's: another of its waiters for the name,
	 * queued in its gate, keeps it. */
	pthread_mutex_lock(&c->wait_mu);
	others = hl__map_get(&c->gates, name, name_len) != NULL;
	pthread_mutex_unlock(&c->wait_mu);
	if (others)
		return;
	memset(&a, 0, sizeof(a));
	arg(&a, name, name_len);
	arg(&a, c->id, HL_UUID_LEN);
	arg_str(&a, hl__router_publish(c));
	arg(&a, line, line_len);
	arg(&a, dl, dl_len);
	/* the wait is over: its end is not held up by more than a grace */
	hl__bound_init(&b, c, hl__now_ms() + HL_LINE_LEAVE_MS, NULL, 0);
	if (hl__eval(c, &r, HL_SCRIPT_LINE_LEAVE, 1, a.n, a.v, a.len,
	             HL_CMD_IDEMPOTENT | HL_CMD_WRITE, NULL, &b, NULL) == HL_OK)
		hl__reply_free(r);
}

void hl__line_tell_local_locked(hl_client *c, const char *place,
                                size_t place_len, int64_t ticket)
{
	char msg[24];
	hl_sub *s = hl__map_get(&c->subs, place, place_len);
	if (!s)
		return;
	snprintf(msg, sizeof(msg), "%lld", (long long)ticket);
	hl__pubsub_message(s, msg, strlen(msg));
}

int hl__line_wait_init(hl_line_wait *w, const hl_named *o, int in_line)
{
	memset(w, 0, sizeof(*w));
	w->in_line = in_line;
	if (!(w->o = hl__object_dup(o)) ||
	    hl__line_keys_init(&w->keys, o->name, o->name_len) != HL_OK ||
	    (in_line && hl__line_init(&w->line, w->o->client, w->keys.line,
	                              w->keys.line_len, w->o->channel,
	                              w->o->channel_len) != HL_OK)) {
		hl__line_wait_fini_locked(w); /* no ear yet */
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	return HL_OK;
}

void hl__line_wait_spec(hl_wait_spec *spec, const hl_line_wait *w)
{
	if (w->in_line) {
		/* it hears its turn on its client's place's channel */
		spec->channel = w->line.channel;
		spec->channel_len = w->line.channel_len;
	}
}

int hl__line_wait_wants(void *arg, const char *msg, size_t len)
{
	return hl__line_wants(&((hl_line_wait *)arg)->line, msg, len);
}

/* The wait ended without the permits: the client leaves the line. */
void hl__line_wait_give_up(void *arg, const hl_bound *b)
{
	hl_line_wait *w = arg;
	(void)b;
	hl__line_leave(w->o->client, w->o->name, w->o->name_len, w->keys.line,
	               w->keys.line_len, w->keys.dl, w->keys.dl_len);
}

void hl__line_wait_fini_locked(hl_line_wait *w)
{
	hl__line_fini_locked(&w->line);
	hl__line_keys_free(&w->keys);
	if (w->o)
		hl__object_dup_free(w->o);
	w->o = NULL;
}
