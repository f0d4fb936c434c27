/*
 * The data grid's machinery (private): the tables tools/gridgen.py makes
 * from core/grid/ (gen_kinds.c), the object handle, and the one
 * executor that runs every operation of every kind from its table.
 */
#ifndef HL_GRID_H
#define HL_GRID_H

#include "internal.h"

/* A template word: a literal, a key of the kind, an argument (formatted as
 * Redisson writes it), 1/0 for whether an argument was given, a group
 * kept only when its argument was given, a list argument's elements. */
enum {
	HL_TOK_LIT,
	HL_TOK_KEY,
	HL_TOK_ARG,
	HL_TOK_PRESENT,
	HL_TOK_OPT,
	HL_TOK_END,
	HL_TOK_LIST
};
typedef struct hl_tok {
	unsigned char type;
	unsigned short idx; /* key or argument index; a literal's length */
	const char *text;
} hl_tok;

/* What a lost reply means (core/grid/README.md); local: no round trip. */
/* mark: sent again with a request marker (core/grid/README.md). */
enum { HL_MODE_READ, HL_MODE_IDEM, HL_MODE_ONCE, HL_MODE_MARK, HL_MODE_LOCAL };
/* Argument types. */
/* bound: a double that may be infinite (a score range's end: "-inf",
 * "+inf"). */
/* scored: the rest are pairs of a score (finite) and a member (bytes). */
enum {
	HL_T_BYTES,
	HL_T_I64,
	HL_T_F64,
	HL_T_MS,
	HL_T_BOOL,
	HL_T_LIST,
	HL_T_BOUND,
	HL_T_SCORED
};
/* Result types. */
/* Result types. list: an array of bytes or nil; map: keys and values
 * alternating; scored: members and scores (doubles) alternating; page_*:
 * a cursor's page, [next cursor, the page as list / map / scored]. */
enum {
	HL_R_NONE,
	HL_R_BOOL,
	HL_R_I64,
	HL_R_F64,
	HL_R_BYTES,
	HL_R_VALUE,
	HL_R_LIST,
	HL_R_MAP,
	HL_R_SCORED,
	HL_R_PAGE_LIST,
	HL_R_PAGE_MAP,
	HL_R_PAGE_SCORED,
	HL_R_I64_OPT, /* an integer or nil (a rank) */
	HL_R_F64_OPT  /* a number or nil (a score) */
};

typedef struct hl_script_def {
	const char *name;
	const char *sha; /* SHA1 of source, hex */
	const char *source;
} hl_script_def;

typedef struct hl_argdef {
	const char *name;
	unsigned char type, optional, has_default;
	double def; /* the default (numbers only) */
} hl_argdef;

typedef struct hl_gridcall hl_gridcall;

typedef struct hl_opdef {
	int op;
	const char *name;
	unsigned char mode, result, nargs;
	const hl_argdef *args;
	const hl_script_def *script; /* NULL: a command */
	unsigned char nkeys;         /* a script's: the first nkeys tokens */
	const hl_tok *toks;
	unsigned ntoks;
	int (*custom)(hl_gridcall *call); /* NULL: toks */
} hl_opdef;

/* A kind with state in each object and in the client (a spec's `state`
 * line): open runs when an object is made by hl_object_new() (inside the
 * client; it may wait), close when it is freed or destroyed (once; also
 * for an object whose open failed, with o->state as open left it). Copies
 * an object makes for its tasks have no state. */
typedef struct hl_kindhooks {
	int (*open)(hl_object *o);
	void (*close)(hl_object *o);
} hl_kindhooks;

typedef struct hl_kinddef {
	int kind;
	const char *name;
	unsigned nkeys;
	const char *const *suffixes; /* per key: NULL = the name, else the
	                                suffix of {name}<suffix>, or
	                                <prefix>{name} as it is */
	unsigned nops;
	const hl_opdef *ops;
	const hl_kindhooks *hooks; /* NULL: no state */
} hl_kinddef;

extern const hl_kinddef hl__grid_kinds[];
extern const size_t hl__grid_nkinds;

#define HL_GRID_MAXKEYS 8

struct hl_object {
	hl_client *client;
	const hl_kinddef *kind;
	size_t name_len;
	char *name;
	unsigned nkeys;
	char *keys[HL_GRID_MAXKEYS];
	size_t key_lens[HL_GRID_MAXKEYS];
	void *state; /* the kind's (hl_kindhooks), NULL for none */
};

/* One operation in flight: what a custom function gets. */
struct hl_gridcall {
	hl_object *obj;
	const hl_opdef *op;
	const hl_arg *args;
	size_t nargs;
	const hl_bound *b;
	hl_value **out; /* the result, NULL when not wanted */
};

/* Arguments for the typed calls. */
hl_arg hl__arg_bytes(const void *p, size_t len);
hl_arg hl__arg_int(int64_t i);
hl_arg hl__arg_double(double d);
hl_arg hl__arg_none(void);
/* fixed then the list's items, in a new array (*out, the caller's to
 * free) for a typed call whose last argument is a list. */
int hl__arg_list(hl_arg **out, const hl_arg *fixed, size_t nfixed,
                 const void *const *items, const size_t *lens, size_t count);
/* The same for a list of scored pairs: score, member, score, member... */
int hl__arg_scored(hl_arg **out, const hl_arg *fixed, size_t nfixed,
                   const double *scores, const void *const *items,
                   const size_t *lens, size_t count);

/* The typed calls' bodies: run op and convert its value. */
int hl__grid_none(hl_object *obj, int op, const hl_arg *a, size_t n);
int hl__grid_bool(int *out, hl_object *obj, int op, const hl_arg *a, size_t n);
int hl__grid_i64(int64_t *out, hl_object *obj, int op, const hl_arg *a,
                 size_t n);
int hl__grid_f64(double *out, hl_object *obj, int op, const hl_arg *a,
                 size_t n);
int hl__grid_value(hl_value **out, hl_object *obj, int op, const hl_arg *a,
                   size_t n);
/* A number or nil: *found 1 and *out, or 0 and 0 (either may be NULL). */
int hl__grid_i64_opt(int64_t *out, int *found, hl_object *obj, int op,
                     const hl_arg *a, size_t n);
int hl__grid_f64_opt(double *out, int *found, hl_object *obj, int op,
                     const hl_arg *a, size_t n);

/* Run a script of a kind on call->obj's keys: EVALSHA, EVAL after
 * NOSCRIPT. argv are its keys then its arguments. */
int hl__grid_eval(hl_gridcall *call, const hl_script_def *s, int nkeys,
                  int nargs, const char **argv, const size_t *lens,
                  hl_reply **out);
/* A command for call (its mode decides the retry): the reply in *out. */
int hl__grid_command(hl_gridcall *call, int argc, const char **argv,
                     const size_t *lens, hl_reply **out);
/* The reply as the op's result in *call->out; an error reply fails. */
int hl__grid_result(hl_gridcall *call, const hl_reply *r);

/* Values. */
hl_value *hl__value_new(int type);
hl_value *hl__value_int(int64_t i);
hl_value *hl__value_double(double d);
hl_value *hl__value_bytes(const void *p, size_t len);
/* An array of items (taken over; freed when this fails: NULL). */
hl_value *hl__value_array(hl_value **items, size_t n);
/* A value of the reply, as it is (integers, bytes, arrays; status as
 * bytes); NULL when out of memory. */
hl_value *hl__value_of_reply(const hl_reply *r);
/* An array of the n values items (taken: the array owns them now, the
 * caller frees only the items vector); NULL when out of memory (the
 * items stay the caller's). */
hl_value *hl__value_array_take(hl_value **items, size_t n);
/* The elements of the array reply r as one array in one allocation (a page
 * of a scan: no malloc an element): strings as bytes, integers, nil; with
 * scored, the odd elements as doubles (what names them in a parse error).
 * Returns HL_OK, an error (*out NULL), or 1 when an element is an array
 * (nothing made: build it element by element). */
int hl__value_flat_of_reply(hl_value **out, const hl_reply *r, int scored,
                            const char *what);

/* The entries of an HMGET's reply r to keys (as many as its elements),
 * in one allocation as hl__value_flat_of_reply: key, value, ... for each
 * key present (an absent one, nil in r, left out). HL_OK or an error. */
int hl__value_flat_pairs(hl_value **out, const hl_arg *keys, const hl_reply *r);

/* Numbers as Redisson writes them, and as any writer left them. */
#define HL_NUM_MAX 400
/* d in plain notation (no exponent), the shortest that reads back as d:
 * BigDecimal.valueOf(d).toPlainString(). Its length; 0 for NaN and the
 * infinities. */
size_t hl__fmt_double(char *buf, size_t cap, double d);
/* The same; ref != 0: always through printf and strtod (the reference the
 * fast path is tested against, tests/test_grid.c double_format). */
size_t hl__fmt_double_ex(char *buf, size_t cap, double d, int ref);
/* Parse a decimal integer / a number in any form (1, 1.5, 1.0E10,
 * 1e+20): HL_OK, or HL_EPROTOCOL with a message naming what. */
int hl__parse_i64(const char *s, size_t len, int64_t *out, const char *what);
int hl__parse_double(const char *s, size_t len, double *out, const char *what);

/* The Bloom filter's scripts (core/grid/bloom_filter.kind), for bloom.c. */
extern const hl_script_def hl__script_bloom_filter_try_init;
extern const hl_script_def hl__script_bloom_filter_add;
extern const hl_script_def hl__script_bloom_filter_contains;
extern const hl_script_def hl__script_bloom_filter_count;

/* The Bloom filter's custom operations (bloom.c). */
int hl__bloom_filter_try_init(hl_gridcall *call);
int hl__bloom_filter_add(hl_gridcall *call);
int hl__bloom_filter_add_all(hl_gridcall *call);
int hl__bloom_filter_contains(hl_gridcall *call);
int hl__bloom_filter_contains_all(hl_gridcall *call);
int hl__bloom_filter_contains_each(hl_gridcall *call);
int hl__bloom_filter_count(hl_gridcall *call);

/* The definition of operation op (HL_OP_*), NULL if none. */
const hl_opdef *hl__grid_op(int op);
/* A copy of obj on the same client (for a task to own), NULL when out of
 * memory. The caller is inside the client. */
hl_object *hl__grid_object_dup(const hl_object *obj);

/* The rate limiter's scripts (gen_kinds.c), for rate_limiter.c. */
extern const hl_script_def hl__script_rate_limiter_acquire;
extern const hl_script_def hl__script_rate_limiter_undo;
extern const hl_script_def hl__script_rate_limiter_available;
extern const hl_script_def hl__script_rate_limiter_release;
extern const hl_script_def hl__script_rate_limiter_try_set_rate;
extern const hl_script_def hl__script_rate_limiter_set_rate;
int hl__rate_limiter_try_set_rate(hl_gridcall *call);
int hl__rate_limiter_set_rate(hl_gridcall *call);
int hl__rate_limiter_try_acquire(hl_gridcall *call);
int hl__rate_limiter_acquire(hl_gridcall *call);
int hl__rate_limiter_available_permits(hl_gridcall *call);
int hl__rate_limiter_release(hl_gridcall *call);
/* hl_object_call_start() of a rate limiter's wait: the engine's task
 * (hl_rate_limiter_try_acquire_start), not an executor blocked in it. */
int hl__rate_limiter_call_start(hl_task **out, hl_object *obj, int op,
                                const hl_arg *args, size_t nargs);
/* hl_object_call_start() of a priority blocking queue's or deque's take
 * or timed poll: a wait task whose value is what it took (sorted_set.c). */
int hl__priority_take_call_start(hl_task **out, hl_object *obj, int op,
                                 const hl_arg *args, size_t nargs);
/* 1 if op is one of those waits (the priority blocking queue's and
 * deque's takes and timed polls, at either end). */
int hl__priority_is_wait(int op);

/* Raw commands (hl_client_command and its kin): check argv and lens; and
 * the reply as the caller's value (an error reply is HL_EREDIS naming cmd),
 * r freed. */
int hl__raw_words(int argc, const char *const *argv, const size_t *lens);
int hl__raw_reply(hl_value **out, hl_reply *r, const char *cmd);

/* The map's custom operations (map.c). */
int hl__map_get_all(hl_gridcall *call);
int hl__map_fast_remove(hl_gridcall *call);
int hl__map_put_all(hl_gridcall *call);

/* The delayed queue's scripts and custom operations (delayed.c). */
extern const hl_script_def hl__script_delayed_queue_offer;
extern const hl_script_def hl__script_delayed_queue_transfer;
extern const hl_script_def hl__script_delayed_queue_read_range;
int hl__delayed_queue_offer(hl_gridcall *call);
int hl__delayed_queue_read_all(hl_gridcall *call);
int hl__delayed_queue_destroy(hl_gridcall *call);
/* The blocking queue's takes (blocking_queue.c). */
int hl__blocking_queue_take(hl_gridcall *call);
int hl__blocking_queue_poll_timeout(hl_gridcall *call);
int hl__blocking_queue_recover(hl_gridcall *call);
/* The blocking deque's takes at the tail (blocking_queue.c). */
int hl__blocking_queue_take_last(hl_gridcall *call);
int hl__blocking_queue_poll_last_timeout(hl_gridcall *call);
/* 1 if op is a take or a poll with a timeout of either kind (a wait whose
 * task form is hl__blocking_queue_call_start). */
int hl__blocking_queue_is_wait(int op);
/* The bounded queue's offers that wait for room (blocking_queue.c), and
 * their task forms (a wait of the engine on the capacity channel). */
int hl__bounded_queue_offer_timeout(hl_gridcall *call);
int hl__bounded_queue_put(hl_gridcall *call);
int hl__bounded_queue_call_start(hl_task **out, hl_object *obj, int op,
                                 const hl_arg *args, size_t nargs);
/* hl_object_call_start() of a take or poll_timeout: a waiter in the line
 * of the queue's pump (one blocking take for the client's waiters), not
 * an executor blocked in it. */
int hl__blocking_queue_call_start(hl_task **out, hl_object *obj, int op,
                                  const hl_arg *args, size_t nargs);

/* "kind "name"" for messages. */
const char *hl__grid_label(const hl_object *o, char *buf, size_t len);

#endif
