/*
 * What the synchronizers (semaphore, permit-expirable semaphore, count-down
 * latch) share: a named object of a client with its channel, the request
 * markers that make their non-idempotent scripts safe to resend, and one
 * script call with an integer answer. Private to prim/.
 */
#ifndef HL_PRIM_OBJECT_H
#define HL_PRIM_OBJECT_H

#include "internal.h"
#include "prim/args.h"

typedef struct hl_named {
	hl_client *client;
	size_t name_len;
	char *name;
	size_t channel_len;
	char *channel;
	size_t aux_len; /* a second key ({name}:timeout), or 0 */
	char *aux;
	const char *what; /* "semaphore", ... for messages */
} hl_named;

/* Make o for name on client: the channel is channel_prefix + {name} (or +
 * name when it has braces, unless always_brace), aux_suffix (may be NULL)
 * gives the second key {name}<suffix>. Checks the name and, in a cluster,
 * that every key and the channel share its slot. Takes a reference on the
 * client. */
int hl__object_init(hl_named *o, hl_client *client, const void *name,
                    size_t name_len, const char *channel_prefix,
                    int always_brace, const char *aux_suffix, const char *what);
void hl__object_fini(hl_named *o);
/* A new handle of size bytes whose first member is an hl_named, made by
 * hl__object_init: *out, or a status. */
int hl__object_new(void **out, size_t size, hl_client *client, const void *name,
                   size_t name_len, const char *channel_prefix,
                   int always_brace, const char *aux_suffix, const char *what);
/* Enter the client for a call on o (NULL checks, fork, close). */
int hl__object_enter(const hl_named *o);
/* "name" printable, for messages. */
const char *hl__object_label(const hl_named *o, char *buf, size_t len);

/* A request marker key (hilock_request:{name}:<32 random hex>) in
 * a->owned, appended as a key; and its lifetime, to be appended as the last
 * ARGV with arg_marker_ttl(). */
int hl__object_marker(script_args *a, const hl_named *o);
/* The same with the marker's random part given (32 hex), to name the
 * same marker again (an undo). */
int hl__object_marker_id(script_args *a, const hl_named *o, const char id[33]);
const char *hl__object_marker_ttl(script_args *a, const hl_named *o);

/* Run script id with a (keys first) and read an integer (or {integer})
 * answer into *out. flags as hl__command; replicated as hl__eval (a write
 * is WAITed for on a master with replicas even when replicated is NULL). */
int hl__object_eval(const hl_named *o, int64_t *out, enum hl_script_id id,
                    script_args *a, int flags, const hl_bound *b,
                    int *replicated, enum hl_sent *sent, const char *doing);

/* Read a plain integer key (GET; nil is 0). */
int hl__object_get(const hl_named *o, int64_t *out, const char *doing);

/* DEL the object's keys; *out_existed (may be NULL) = 1 if any existed. */
int hl__object_delete(const hl_named *o, int *out_existed);

/* A copy of o for a task (its own strings, a reference on the client),
 * and its release. NULL when out of memory. */
hl_named *hl__object_dup(const hl_named *o);
void hl__object_dup_free(hl_named *o);

/* Check a number of permits: at least lo (0 or 1), at most 2^40. */
int hl__check_permits(int64_t n, int64_t lo, const char *what);
/* Check a wait (-1 forever, 0 one attempt, up to 2^40 ms). */
int hl__check_wait(int64_t wait_ms);

/* The bound of a wait's round trips: its deadline, but one that begins
 * just before it gets up to 150 ms (or the command timeout) more, as a
 * lock's attempt does. */
int64_t hl__io_deadline(const hl_client *c, int64_t deadline_ms);

/* A blocking wait's first attempt, on the caller's thread when none of
 * this client waits for the same gate (no hop to an executor for a free
 * permit). *done = 1 when it settled the call (*result, the status
 * returned); else the task takes over from spec (marked tried). */
int hl__first_attempt(hl_client *c, hl_wait_spec *spec, hl_cancel *cancel,
                      int *done, int *result);

/* Fill spec for a wait of wait_ms on o's channel: ops and arg (a context
 * it owns), this client's waiters queued FIFO by o's name when gated. o
 * is the context's own copy (its strings outlive the call). */
void hl__object_wait_spec(hl_wait_spec *spec, const hl_named *o,
                          const hl_wait_ops *ops, void *arg, int gated,
                          int64_t wait_ms);

/* A blocking wait from spec (a new context it owns): the first attempt on
 * the caller's thread (hl__first_attempt), then a task the caller sleeps
 * on; cancel interrupts it. The caller entered the client: this leaves it
 * (before sleeping). *out = 1 when acquired (the latch opened), 0 when the
 * wait ran out. */
int hl__object_wait(hl_client *c, hl_wait_spec *spec, hl_cancel *cancel,
                    int *out);

/* prefix + "{name}" + suffix (or without the braces when the name has a
 * '{' and always_brace is 0: PROTOCOL 0.2), in new memory, *out_len its
 * length; NULL when out of memory. */
char *hl__derive_name(const char *prefix, const char *suffix, const char *name,
                      size_t name_len, int always_brace, size_t *out_len);
/* Check a name: not NULL, 1 to HL_NAME_MAX bytes. */
int hl__check_name(const void *name, size_t name_len);

/* n bytes unlike those of any other call (base/sys.h hl__unique_bytes,
 * or libuuid's random UUIDs if the system gave no key): the permit ids,
 * request markers and members' ids. */
void hl__unique_id(void *out, size_t n);
/* A 16-byte hl__unique_id as 32 lowercase hex characters and a NUL. */
void hl__random_hex(char out[33]);

#endif
