/*
 * base/: what every layer uses and that knows no other layer: status and
 * error detail, time, small containers, URLs, the bound of a blocking call.
 */
#ifndef HL_BASE_H
#define HL_BASE_H

#include "hilock.h"
#include "base/sys.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HL_UUID_LEN 36
/* "<uuid>:<uint64>" */
#define HL_OWNER_MAX (HL_UUID_LEN + 1 + 20 + 1)
#define HL_NAME_MAX  65536
/* Longest lease or wait we accept: 2^40 ms is about 34 years. */
#define HL_TIME_MAX ((int64_t)1 << 40)

/* ---- errors (status.c) ---------------------------------------------- */
#if defined(__GNUC__)
#define HL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HL_PRINTF(a, b)
#endif
/* Record a failure for hl_error_last() on this thread; returns status. */
int hl__fail(int status, const char *fmt, ...) HL_PRINTF(2, 3);
int hl__failv(int status, const char *fmt, va_list ap);
/* Record a failure whose message is "<prefix>: <the current message>", the
 * cause a lower layer recorded. Returns status. */
int hl__fail_wrap(int status, const char *fmt, ...) HL_PRINTF(2, 3);

/* ---- time and small helpers (util.c) ---------------------------------- */
int64_t hl__now_ms(void); /* CLOCK_MONOTONIC */
int64_t hl__now_us(void);
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
int hl__cond_init(pthread_cond_t *cond);
/* Wait on cond until deadline_ms (monotonic; -1 forever). 0 or ETIMEDOUT. */
int hl__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu,
                        int64_t deadline_ms);
/* Deadline for a wait of wait_ms from now (-1 stays -1). */
int64_t hl__deadline(int64_t wait_ms);
/* Milliseconds left until deadline (-1: forever; never below 0). */
int64_t hl__remaining(int64_t deadline_ms);
/* Printable, truncated copy of a binary name for messages. */
const char *hl__printable(char *buf, size_t buf_len, const char *name,
                          size_t len);
int64_t hl__jitter_delay(int64_t base_ms, int attempt);
/* The decimal of v in buf (at least HL_DEC_MAX bytes), NUL-terminated;
 * returns its length. No printf: these run on every call. */
#define HL_DEC_MAX 21
size_t hl__fmt_u64(char *buf, uint64_t v);
size_t hl__fmt_i64(char *buf, int64_t v);

/* A tiny hash map from byte strings to pointers (separate chaining). */
typedef struct hl_map_entry {
	struct hl_map_entry *next;
	uint64_t hash;
	size_t key_len;
	void *value;
	char key[]; /* key_len bytes */
} hl_map_entry;

typedef struct hl_map {
	hl_map_entry **buckets;
	size_t nbuckets;
	size_t count;
} hl_map;

int hl__map_init(hl_map *map);
void hl__map_clear(hl_map *map); /* frees entries, not values */
void *hl__map_get(const hl_map *map, const void *key, size_t len);
/* Insert (key must not be present). Returns 0 or -1 on ENOMEM. */
int hl__map_put(hl_map *map, const void *key, size_t len, void *value);
void *hl__map_del(hl_map *map, const void *key, size_t len);
uint64_t hl__hash(const void *key, size_t len);

/* ---- an intrusive doubly linked list (util.c) --------------------------- */
typedef struct hl_dlink {
	struct hl_dlink *prev, *next;
} hl_dlink;

typedef struct hl_dlist {
	hl_dlink *head, *tail;
} hl_dlist;

void hl__dlist_push(hl_dlist *list, hl_dlink *link); /* at the tail */
void hl__dlist_remove(hl_dlist *list, hl_dlink *link);
/* The struct of type T whose member m is the link l. */
#define HL_CONTAINER(l, T, m) ((T *)(void *)((char *)(l)-offsetof(T, m)))

/* ---- URL (url.c) -------------------------------------------------------- */
/* One node's address: TCP (host, port) or a unix socket (path). */
typedef struct hl_addr {
	char host[256];
	int port;
	char path[256]; /* unix socket; "" for TCP */
} hl_addr;

/* 1 if a and b name the same node. */
int hl__addr_eq(const hl_addr *a, const hl_addr *b);
/* "host:port" or the socket path, for messages. */
const char *hl__addr_str(const hl_addr *a, char *buf, size_t len);

enum hl_topology {
	HL_TOPO_SINGLE = 0, /* redis:// rediss:// unix:// */
	HL_TOPO_SENTINEL,   /* redis-sentinel:// rediss-sentinel:// */
	HL_TOPO_CLUSTER,    /* redis-cluster:// rediss-cluster:// */
	HL_TOPO_REPLICA     /* redis-replica:// rediss-replica:// */
};

typedef struct hl_url {
	int topology; /* HL_TOPO_* */
	int tls;      /* a rediss scheme */
	/* single: one; sentinel: the sentinels; cluster: seed nodes;
	 * replica: the master first, then its replicas */
	hl_addr *hosts;
	int nhosts;
	char *user; /* NULL: none (data nodes) */
	char *password;
	char *master_name; /* sentinel: the monitored master's name */
	int db;
} hl_url;

int hl__url_parse(hl_url *out, const char *url);
void hl__url_clear(hl_url *url);
/* The URL for messages: any password masked. malloc'd. */
char *hl__url_safe(const char *url);
/* The most hosts one URL may list. */
#define HL_URL_MAX_HOSTS 64

/* ---- cluster slots (slot.c) --------------------------------------------- */
#define HL_SLOTS 16384
/* The Redis Cluster slot of a key, as CLUSTER KEYSLOT computes it: CRC16
 * (XMODEM) of the key, or of its hash tag (the bytes between the first '{'
 * and the first '}' after it, when not empty), modulo 16384. */
unsigned hl__slot(const void *key, size_t len);
/* 1 if every key and channel Redisson derives from this name (PROTOCOL 0.2:
 * "prefix:{name}", "{name}:suffix", or plain concatenation when the name
 * has a '{') is in the name's own slot; 0 if some would be elsewhere, so a
 * script naming both would fail with CROSSSLOT in a cluster ("a}b", "a{}b",
 * "a{b", ""). Names without braces and "x{t}y" are safe. */
int hl__name_slot_safe(const void *name, size_t len);

/* ---- configuration ------------------------------------------------------ */
typedef struct hl_tls_conf {
	char *ca_file, *ca_dir, *cert_file, *key_file, *server_name;
	int verify;
} hl_tls_conf;

typedef struct hl_conf {
	hl_url url;
	char *url_text; /* for messages, without the password */
	int64_t watchdog_ms;
	int64_t connect_timeout_ms;
	int64_t command_timeout_ms;
	int retry_attempts;
	int64_t retry_delay_ms;
	char *client_name;
	int pool_size;
	int64_t subscription_timeout_ms;
	int64_t ping_interval_ms;
	hl_tls_conf tls;
	char *sentinel_user, *sentinel_password;
	int read_from;
	int wait_replicas;
	int64_t wait_timeout_ms;
	int64_t fair_wait_ms; /* the fair lock's stale-waiter timeout */
	void *tls_ctx; /* transport/'s TLS context (rediss), opaque here */
} hl_conf;

/* What bounds one blocking call: its deadline and what stops it early
 * (cancel flag, the client's close or hl_client_interrupt()). Every wait
 * on the network, every retry pause and every reconnect honours it. */
typedef struct hl_bound {
	int64_t deadline_ms; /* monotonic; -1: none */
	hl_cancel *cancel;   /* NULL: none */
	/* The owner's close flag and interrupt counter (NULL: none). */
	const atomic_int *closing;
	const atomic_uint_fast64_t *interrupts;
	uint64_t interrupt_gen; /* *interrupts when the call began */
} hl_bound;

/* A bound of deadline_ms and cancel only (no close, no interrupt). */
void hl__bound_plain(hl_bound *b, int64_t deadline_ms, hl_cancel *cancel);
/* HL_OK, or why the call must stop now (HL_ECLOSED, HL_EINTERRUPTED,
 * HL_ETIMEDOUT), recorded. NULL: HL_OK. */
int hl__bound_check(const hl_bound *b);

#endif
