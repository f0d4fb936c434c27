/*
 * The waiting line (docs/PROTOCOL.md, "The waiting line"): hilock's own
 * queue of clients beside Redisson's state of the default lock and the
 * semaphore, so that a release wakes one waiting process instead of every
 * one. The scripts are the kinds' (service/scripts.c); this is the client
 * side every kind shares: a waiter's place (its ticket, whether first), the
 * channel of its client's place, which messages wake it, and its ear on
 * the kind's own channel while it is first (a Redisson release says
 * nothing on the place's channel).
 */
#ifndef HL_LINE_H
#define HL_LINE_H

#include "internal.h"
#include "prim/object.h"

/* How long a place lasts unless its waiter renews it (by its next attempt,
 * at most half of it later): how long a waiter that died or stopped holds
 * up those behind it at most. */
#define HL_LINE_LEASE_MS 3000

enum { HL_PLACE_UNKNOWN = 0, HL_PLACE_FIRST, HL_PLACE_BEHIND };

typedef struct hl_line {
	hl_client *c;
	char *channel; /* the client's place's (owned) */
	size_t channel_len;
	const char *kind_channel; /* the object's own (not owned) */
	size_t kind_channel_len;
	/* what the last answered attempt said; the subscriber reads it (see
	 * hl__line_wants) */
	_Atomic int64_t ticket; /* 0: no place known */
	atomic_int place;       /* HL_PLACE_* */
	/* while first: listening to the kind's channel. Touched by the
	 * wait's attempts (one at a time) and by hl__line_fini_locked. */
	hl_listener *ear;
} hl_line;

/* An object's line: its two keys, hilock_line:{name} and
 * hilock_line_timeout:{name} (owned). */
typedef struct hl_line_keys {
	char *line, *dl;
	size_t line_len, dl_len;
} hl_line_keys;

/* The line keys of the object named name (HL_ENOMEM). */
int hl__line_keys_init(hl_line_keys *k, const char *name, size_t name_len);
void hl__line_keys_free(hl_line_keys *k);

/* The channel of c's place in the line line_key: <line_key>:<client id>,
 * in *buf (malloc'd). */
int hl__line_channel(char **buf, size_t *out_len, const hl_client *c,
                     const char *line_key, size_t line_len);
/* A waiter's line state: its place's channel, the kind's channel (kept by
 * the caller for as long as w lives). */
int hl__line_init(hl_line *w, hl_client *c, const char *line_key,
                  size_t line_len, const char *kind_channel,
                  size_t kind_channel_len);
/* The wait is over (caller holds wait_mu, as the engine frees a wait's
 * context): its ear goes, its memory too. */
void hl__line_fini_locked(hl_line *w);
/* What an attempt answered (ticket 0: no place), and, when listen, follow
 * it: listen to the kind's channel while first, not behind. */
void hl__line_note(hl_line *w, int64_t ticket, int first, int listen);
/* hl_wait_ops.wants of a waiter in the line. */
int hl__line_wants(const hl_line *w, const char *msg, size_t len);
/* The waiter of c gives up: its client leaves line (and tells the next if
 * it was first), unless another of its waiters queues in the gate for
 * the name. Best effort, bounded by a short grace: a place left behind
 * lapses. id is the kind's leave script; keys: the object (routing). */
void hl__line_leave(hl_client *c, const char *name, size_t name_len,
                    const char *line, size_t line_len, const char *dl,
                    size_t dl_len);
/* After c's own release told ticket to the first in line_key: if that is
 * c, its waiter hears it without waiting for Redis's message. Caller holds
 * wait_mu; place is hl__line_channel's. */
void hl__line_tell_local_locked(hl_client *c, const char *place,
                                size_t place_len, int64_t ticket);

/* A semaphore's wait (either kind): its context begins with this. */
typedef struct hl_line_wait {
	hl_named *o; /* a copy of the object's */
	hl_line_keys keys;
	hl_line line; /* when in_line */
	int in_line;  /* a wait (takes a place), not one attempt */
} hl_line_wait;

/* w for object o: a wait (in_line, its place's channel in the spec that
 * hl__object_wait_spec() made) or one attempt. HL_ENOMEM (then w is
 * finished already). */
int hl__line_wait_init(hl_line_wait *w, const hl_named *o, int in_line);
/* Its spec's channel: the place's while in line. */
void hl__line_wait_spec(hl_wait_spec *spec, const hl_line_wait *w);
/* hl_wait_ops.wants and .give_up of a context that begins with an
 * hl_line_wait. */
int hl__line_wait_wants(void *arg, const char *msg, size_t len);
void hl__line_wait_give_up(void *arg, const hl_bound *b);
/* Its end (the engine frees a context under wait_mu). */
void hl__line_wait_fini_locked(hl_line_wait *w);

#endif
