/*
 * hilock: Redisson-compatible distributed locks on Redis.
 *
 * The stable C ABI. Only opaque handles cross it; every fallible function
 * returns an int status (0 = HL_OK, negative = an error from the table
 * below) and, on failure, leaves a message for the calling thread in
 * hl_error_last().
 *
 * Conventions
 *   - Output parameters come first and are named out*; they are written only
 *     on HL_OK.
 *   - Durations are milliseconds as int64_t. For a wait, -1 means "forever"
 *     and 0 means "one attempt". For a lease, -1 means "no lease: the
 *     watchdog keeps the lock alive while it is held".
 *   - Names are binary-safe bytes with a length; NUL bytes are allowed.
 *   - "Held by someone else" is a normal result (an out flag), not an error.
 *   - Threads: every function may be called from any thread, concurrently,
 *     unless its comment says otherwise. Handles are owned by the caller
 *     that created them and freed with their _free function.
 *   - Every call on a client or a handle made from it returns HL_EINVAL for
 *     a NULL handle, HL_ECLOSED after hl_client_close() and HL_EFORKED in a
 *     child process that inherited the client; those are not repeated below.
 *   - The library never calls user code from its own threads.
 *
 * This header is C89, C99, C11 and C++ clean and has no inline or variadic
 * functions, so bindings can generate their declarations from it.
 */
#ifndef HILOCK_H
#define HILOCK_H

#ifndef HL_NO_SYSTEM_INCLUDES
#include <stddef.h>
#include <stdint.h>
#endif

#include "hilock/version.h"

#ifndef HL_EXTERN
#if defined(_WIN32)
#define HL_EXTERN
#elif defined(__GNUC__) && !defined(HL_NO_ATTRIBUTES)
#define HL_EXTERN __attribute__((visibility("default")))
#else
#define HL_EXTERN
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Status codes. One list; the numbers are explicit and never reused.
 * X(NAME, value, message)
 * ------------------------------------------------------------------------ */
#define HL_STATUS_MAP(X)                                                       \
	X(OK, 0, "success")                                                    \
	X(EINVAL, -1, "invalid argument")                                      \
	X(ENOMEM, -2, "out of memory")                                         \
	X(ETIMEDOUT, -3, "timed out")                                          \
	X(EINTERRUPTED, -4, "interrupted")                                     \
	X(ENOTHELD, -5, "lock not held by this owner")                         \
	X(ELOST, -6, "lock was lost while held")                               \
	X(ECLOSED, -7, "client is closed")                                     \
	X(EFORKED, -8, "client was created in another process (fork)")         \
	X(ECONNECT, -9, "cannot connect to redis")                             \
	X(EAUTH, -10, "redis authentication failed")                           \
	X(EIO, -11, "connection to redis failed")                              \
	X(EREDIS, -12, "redis replied with an error")                          \
	X(EPROTOCOL, -13, "unexpected reply from redis")                       \
	X(ESYSTEM, -14, "operating system error")                              \
	X(EINDOUBT, -15, "outcome unknown: redis did not confirm it")          \
	X(EDEADLK, -16, "would wait for itself: the owner holds it already")

#define HL_STATUS_ENUM_(name, value, msg) HL_##name = value,
typedef enum hl_status {
	HL_STATUS_MAP(HL_STATUS_ENUM_) HL_STATUS_LAST_ = -17
} hl_status;
#undef HL_STATUS_ENUM_

/* Message of a status code ("timed out"); "unknown status" for others.
 * Never NULL; static storage. Any thread. */
HL_EXTERN const char *hl_status_str(int status);

/* Name of a status code ("HL_ETIMEDOUT"); "HL_UNKNOWN" for others.
 * Never NULL; static storage. Any thread. */
HL_EXTERN const char *hl_status_name(int status);

/* Detail of the last failure of a hilock call on the calling thread, for
 * example "redis://h:1: connection refused". Never NULL ("" if none).
 * Valid until the next hilock call on this thread. */
HL_EXTERN const char *hl_error_last(void);

/* Status code of the last failure on the calling thread (HL_OK if none). */
HL_EXTERN int hl_error_last_code(void);

/* ------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------ */

/* The version string of the library loaded at run time ("0.1.0"). */
HL_EXTERN const char *hl_version(void);

/* major * 10000 + minor * 100 + patch of the library loaded at run time. */
HL_EXTERN int hl_version_number(void);

/* ------------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------------ */

/* A connection to one Redis deployment: command connections, a subscriber
 * connection, a watchdog thread, and a client id (UUID). Thread-safe. */
typedef struct hl_client hl_client;

/* A lock of one kind (see "Lock kinds": the reentrant lock, Redisson's
 * RLock, unless chosen otherwise): a name plus a reference to its client.
 * Cheap. A handle may be used by several threads at once; each thread is
 * its own owner unless the handle has an explicit owner. Every lock call
 * below works on every kind. */
typedef struct hl_lock hl_lock;

/* A cancellation flag for blocking calls. Trigger it from any thread to
 * make a blocking call that was given it return HL_EINTERRUPTED. Sticky:
 * once triggered it stays so until hl_cancel_reset(). */
typedef struct hl_cancel hl_cancel;

/* ------------------------------------------------------------------------
 * Client options (versioned, append-only)
 * ------------------------------------------------------------------------ */
#define HL_CLIENT_OPTIONS_VERSION 3

typedef struct hl_client_options {
	unsigned int version;        /* HL_CLIENT_OPTIONS_VERSION */
	int64_t watchdog_timeout_ms; /* lease of a lock taken without one,
	                                renewed every third (every tenth
	                                while replies take longer than a
	                                tenth); default 30000 */
	int64_t connect_timeout_ms;  /* a connection's whole setup (TCP, TLS,
	                                the handshake); default 10000 */
	int64_t command_timeout_ms;  /* one command's reply; default 3000 */
	int retry_attempts;          /* resends of a failed command (only where
	                                running it twice changes nothing);
	                                default 4 */
	int64_t retry_delay_ms;      /* base of the backoff; default 1000 */
	const char *client_name;     /* CLIENT SETNAME; NULL: none. Copied. */
	int pool_size;               /* most command connections, opened on
	                                demand as threads need them; 32 */
	int64_t subscription_timeout_ms; /* longest wait for Redis to confirm
	                                    a SUBSCRIBE before the subscriber
	                                    connection is made anew; 7500 */
	/* version 2 */
	int64_t ping_interval_ms; /* while anyone waits, PING the subscriber
	                             connection when it was silent this long,
	                             and make it anew if the PONG does not
	                             come within command_timeout_ms (a dead
	                             connection would lose wake-ups); 1000.
	                             0: never */
	/* TLS, for the rediss schemes (see hl_client_new). Strings are
	 * copied; NULL: not set. */
	const char *tls_ca_file;     /* PEM CA certificates to trust; NULL and
	                                tls_ca_dir NULL: the system's */
	const char *tls_ca_dir;      /* a directory of hashed CA certificates */
	const char *tls_cert_file;   /* client certificate (PEM), for servers
	                                that require one (tls-auth-clients) */
	const char *tls_key_file;    /* its private key (PEM) */
	const char *tls_server_name; /* SNI and the name the certificate must
	                                carry; NULL: the host of the address */
	int tls_verify;              /* 1 (default): verify the certificate
	                                chain and name; 0: encrypt only, trust
	                                anyone (tests, never production) */
	/* Sentinel (redis-sentinel://): the sentinels' own credentials, when
	 * they differ from the data nodes' (the URL's userinfo). */
	const char *sentinel_username;
	const char *sentinel_password;
	/* Where read-only queries (is_locked, ttl...) go when the deployment
	 * has replicas: HL_READ_MASTER (default: a replica may lag, and a
	 * lock's state read from it can be stale), HL_READ_REPLICA, or
	 * HL_READ_ANY. Every lock-changing command goes to the master. */
	int read_from;
	/* After each lock-changing script on a master that has replicas, WAIT
	 * for them (Redisson's checkLockSyncedSlaves): -1 (default) for all
	 * connected replicas, 0 to never wait, n for n replicas; at most
	 * wait_timeout_ms (default 1000). */
	int wait_replicas;
	int64_t wait_timeout_ms;
	/* version 3 */
	/* A fair lock's waiter stays in the lock's queue in Redis this long
	 * past its turn before it counts as gone (a process that died while
	 * waiting), when its call has no wait of its own (Redisson's
	 * fairLockWaitTimeout; both sides should agree). Default 300000. */
	int64_t fair_wait_timeout_ms;
} hl_client_options;

enum { HL_READ_MASTER = 0, HL_READ_REPLICA = 1, HL_READ_ANY = 2 };

#define HL_CLIENT_OPTIONS_INIT                                                 \
	{                                                                      \
		HL_CLIENT_OPTIONS_VERSION, 30000, 10000, 3000, 4, 1000, NULL,  \
		        32, 7500, 1000, NULL, NULL, NULL, NULL, NULL, 1, NULL, \
		        NULL, HL_READ_MASTER, -1, 1000, 300000                 \
	}

/* Fill opts with the defaults of HL_CLIENT_OPTIONS_INIT for the given
 * version: 3 (this header), or 1 or 2 for a program built against an
 * older header, whose struct ends before ping_interval_ms (version 1) or
 * fair_wait_timeout_ms (version 2); only that version's fields are
 * written. hl_client_new() accepts both versions too: fields a
 * version lacks get their defaults.
 * Returns HL_OK, or HL_EINVAL for a NULL opts or an unknown version. */
HL_EXTERN int hl_client_options_init(hl_client_options *opts,
                                     unsigned int version);

/* ------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------ */

/* Connect to Redis and start the client's threads.
 *
 * Failures in flight: when a connection breaks (or a reply does not come in
 * time) while a command that changes a lock may still be on its way, the
 * client kills that connection from its next one (CLIENT KILL ID ... ADDR
 * ..., sent first in the same pipeline), so no copy delayed in the network
 * can land after a later command. An ACL user without CLIENT KILL (or a
 * server before 6.2, without CLIENT INFO) turns this fencing off; locks
 * stay safe, but an acquire delayed in the network can then land after its
 * caller gave up, and hold the lock until its lease ends. The client says
 * so once, with an HL_EVENT_FENCING_OFF event, when it first needs a fence.
 *
 * The URL names the server(s) and picks the topology:
 *   one server   redis://[[user]:password@]host[:port][/db]
 *                rediss://...  (TLS)
 *                unix://[[user]:password@]/path/to/redis.sock[?db=N]
 *   Sentinel     redis-sentinel://[[user]:password@]h1[:port][,h2...]
 *                        /master-name[/db]   (or #master-name, as Lettuce)
 *                rediss-sentinel://...  (TLS)
 *                The hosts are the sentinels (port 26379 by default);
 *                the userinfo is the data nodes' credentials, the
 *                sentinels' own are sentinel_username/sentinel_password.
 *                The master is asked of the sentinels and checked with
 *                ROLE; failovers (+switch-master) are followed.
 *   Cluster      redis-cluster://[[user]:password@]h1[:port][,h2...]
 *                rediss-cluster://...  (TLS)
 *                Any nodes as seeds; the slot map is learnt from them and
 *                MOVED/ASK followed. Pub/sub is sharded on Redis 7
 *                (SSUBSCRIBE/SPUBLISH), as Redisson does there.
 *   master and replicas, without Sentinel
 *                redis-replica://[[user]:password@]master[:port]
 *                        [,replica[:port]...][/db]
 *                rediss-replica://...  (TLS)
 * Default port 6379 (sentinels 26379), db 0; at most 64 hosts; IPv6 hosts
 * in brackets; user, password, host, path and master name are
 * percent-decoded. Messages never show the password.
 * Every lock-changing script on a master with connected replicas is
 * followed by WAIT (wait_replicas, wait_timeout_ms); an acquire no replica
 * confirmed is undone and tried again, as Redisson does.
 * opts: NULL for the defaults. Not retained.
 * On HL_OK *out owns a new client; release it with hl_client_free().
 * Returns HL_OK, HL_EINVAL (bad url or option, an unreadable TLS file),
 * HL_ECONNECT (no server, no sentinel that knows the master, no cluster
 * node, a TLS handshake or certificate that failed), HL_EAUTH, HL_EREDIS
 * (SELECT or SETNAME refused), HL_ENOMEM, HL_ESYSTEM. Any thread. */
HL_EXTERN int hl_client_new(hl_client **out, const char *url,
                            const hl_client_options *opts);

/* Close the client: wake every blocked call (they return HL_ECLOSED), stop
 * renewing its locks (their leases then run out; nothing is unlocked), stop
 * its threads, close its connections. Handles stay valid and return
 * HL_ECLOSED. Idempotent; NULL is ignored. Any thread except the client's
 * own (there are none the user can run on). In a child process after
 * fork() it only drops the inherited sockets: it never touches the
 * parent's locks. */
HL_EXTERN void hl_client_close(hl_client *client);

/* Close (as hl_client_close) and drop the caller's reference. The memory is
 * freed when the last lock handle made from it is freed too. NULL is
 * ignored. The client pointer must not be used afterwards. */
HL_EXTERN void hl_client_free(hl_client *client);

/* The client's UUID (36 lowercase characters), the first part of every
 * owner string it writes. Static for the client's life. NULL for NULL. */
HL_EXTERN const char *hl_client_id(const hl_client *client);

/* A new owner id, unique in this process for its whole life, for handles
 * whose owner is not the calling OS thread (goroutines, asyncio tasks).
 * Never 0. Any thread. */
HL_EXTERN uint64_t hl_owner_id_new(void);

/* The owner id the calling thread uses by default (assigned on first use,
 * never reused in this process). Any thread. */
HL_EXTERN uint64_t hl_thread_owner_id(void);

/* Wake every call of this client blocked right now (they return
 * HL_EINTERRUPTED). Any thread. Returns HL_OK or HL_EINVAL. */
HL_EXTERN int hl_client_interrupt(hl_client *client);

/* ------------------------------------------------------------------------
 * Observability: counters and events of a client
 * ------------------------------------------------------------------------
 * Counters count from the client's creation and never go back; they are
 * read without a round trip. Events are what the library's own threads
 * notice and a program wants to hear of (a lock lost, a renewal without an
 * answer, a reconnect, a failover). The library never calls user code from
 * its threads: they queue each event on the client and make a file
 * descriptor readable, and the program takes the events on a thread of its
 * own (hl_client_event_fd, hl_client_next_event). No counter or event ever
 * holds a password. */

#define HL_CLIENT_STATS_VERSION 3

/* Append-only: a field is never removed or moved, new ones go at the end
 * with a new version. */
typedef struct hl_client_stats {
	unsigned int version; /* set by the caller: HL_CLIENT_STATS_VERSION */
	/* Successful acquires, reentrant ones included. */
	uint64_t acquisitions;
	/* Acquires that found the lock taken and waited for it (a wait of
	 * 0 never waits), whether they got it or not. */
	uint64_t acquire_waits;
	/* The total time those waits took, in ms. */
	uint64_t wait_time_ms;
	/* Successful releases (each hold given back; HL_OK only). */
	uint64_t releases;
	/* Renewals of a hold that Redis confirmed (one per hold and per
	 * renewal, however they were batched). */
	uint64_t renewals;
	/* Renewals of a hold that got no answer in time (each retry counts);
	 * a hold whose renewals fail until its loss deadline is lost. */
	uint64_t renewal_failures;
	/* Holds found lost while held: by the watchdog (the key gone or
	 * another owner's), by the clock (no renewal confirmed before the
	 * loss deadline, or a fixed lease that ended before its release), by
	 * a force unlock through this client, or by a release that found
	 * Redis no longer had a hold it knew of. */
	uint64_t losses;
	/* Connections (command, subscriber, watchdog) made again to a server
	 * after one to it broke or stopped answering in time. */
	uint64_t reconnects;
	/* Changes of master the client followed. Sentinel: a new master
	 * named by the sentinels. Cluster: a master replaced, seen as a
	 * master gone from a newly loaded slot map (its replica promoted, or
	 * the node removed), or as a node the client did not know answering
	 * for a slot (a MOVED reply: a replica promoted, or a node added).
	 * Slots moving between known masters are not counted. */
	uint64_t failovers;
	/* Events dropped because the queue was full (see
	 * hl_client_next_event). */
	uint64_t events_dropped;
	/* Version 2. A gauge, not a count: the waits of this client (lock,
	 * semaphore, latch; blocking or started) waiting now. A wait counts
	 * from the moment it found the object taken (or closed) with its
	 * subscription active, or queued behind this client's own waiters
	 * for a lock, so that only a message, a timer or its turn moves it
	 * on; it stops counting when it ends. */
	uint64_t waiting;
	/* Version 3. Wake-ups a blocking waiter read from the subscriber
	 * connection itself: a message (or a reply) it read while it waited,
	 * instead of the subscriber thread reading it and waking the waiter
	 * (one thread switch less before its next attempt). */
	uint64_t wakeups_read_by_waiter;
} hl_client_stats;

/* Copy the client's counters into *out. out->version, set by the caller,
 * says which fields the caller's struct has (HL_CLIENT_STATS_VERSION, or
 * an older version: only its fields are written). Works after
 * hl_client_close() too (the final counts), until hl_client_free().
 * Returns HL_OK, HL_EINVAL (NULL, or an unknown version), HL_EFORKED. Any
 * thread; no round trip. */
HL_EXTERN int hl_client_stats_get(hl_client_stats *out, hl_client *client);

/* Event types. The numbers are never reused. */
enum {
	/* A hold was found lost (see losses above). Lock name and owner
	 * set; status HL_ELOST. */
	HL_EVENT_LOST = 1,
	/* A hold's renewal got no answer; it is retried until the loss
	 * deadline. Once per hold until a renewal succeeds again. Lock name
	 * and owner set; status HL_EIO. */
	HL_EVENT_RENEWAL_FAILED = 2,
	/* A connection to a server was made again after one broke (see
	 * reconnects above). Node set; status HL_EIO (the break). */
	HL_EVENT_RECONNECT = 3,
	/* The client followed a change of master (see failovers above).
	 * Node: the new master ("" when a map shows a master gone without
	 * naming its successor); status HL_OK. */
	HL_EVENT_FAILOVER = 4,
	/* Fencing is off (see hl_client_new): a server refused CLIENT KILL
	 * (an ACL user without it), or did not say which connection was
	 * dropped with a write in flight (CLIENT INFO refused, or Redis
	 * before 6.2). A command whose reply did not come in time may then
	 * still run later: an acquire that lands after its caller gave up
	 * holds the lock, unrenewed, until its lease ends. Once per client.
	 * Node: that server; status HL_EREDIS. */
	HL_EVENT_FENCING_OFF = 5,
	/* An acquire whose caller did not get the lock (not acquired, an
	 * error, cancelled) may have left it held in Redis, and taking that
	 * back at once failed (Redis did not answer in time). The client
	 * keeps taking it back in the background until the acquire's lease
	 * would have ended it anyway; the owner's own next acquire or
	 * release of the lock supersedes it. Lock name and owner set; status
	 * HL_EINDOUBT (taking it back goes on in the background), then one
	 * more event: HL_OK (taken back) or HL_ETIMEDOUT (its lease ended
	 * it first). */
	HL_EVENT_UNDO = 6
};

/* One event, owned by the caller until hl_event_free(). */
typedef struct hl_event hl_event;

/* The most events a client keeps. When one more comes, the oldest is
 * dropped and counted in events_dropped. */
#define HL_EVENT_QUEUE_MAX 1024

/* A file descriptor that is readable while events are queued on the
 * client, and from hl_client_close() on, for poll/epoll/select and event
 * loops. Level-triggered: it stays readable until hl_client_next_event()
 * has taken the last event. Owned by the library: do not read or close
 * it; valid until hl_client_free(). Returns HL_OK, HL_EINVAL,
 * HL_EFORKED, HL_ESYSTEM. Any thread. */
HL_EXTERN int hl_client_event_fd(int *out_fd, hl_client *client);

/* Take the oldest queued event: *out = the event (free it with
 * hl_event_free()), or NULL when none is queued. After hl_client_close()
 * the events queued before it are still handed out; once none is left it
 * returns HL_ECLOSED, so a loop that drains events on a thread of its own
 * knows when to stop. Never blocks. Returns HL_OK, HL_EINVAL, HL_ECLOSED,
 * HL_EFORKED. Any thread (one drainer is the normal use: two would each
 * get some of the events). */
HL_EXTERN int hl_client_next_event(hl_event **out, hl_client *client);

/* Free an event. NULL is ignored. */
HL_EXTERN void hl_event_free(hl_event *event);

/* The accessors below never fail: for NULL they return 0, HL_OK, "" or
 * NULL. Strings are owned by the event, NUL-terminated, and valid until
 * hl_event_free(). */

/* The type: HL_EVENT_LOST, ... */
HL_EXTERN int hl_event_type(const hl_event *event);

/* The name of an event type: "lost", "renewal_failed", "reconnect",
 * "failover", "fencing_off", "undo"; "unknown" for others. Static storage. */
HL_EXTERN const char *hl_event_type_name(int type);

/* When it happened: wall-clock ms since the Unix epoch (0 for NULL);
 * hl_event_monotonic_ms() gives the CLOCK_MONOTONIC reading, to compare
 * with other monotonic times. */
HL_EXTERN int64_t hl_event_time_ms(const hl_event *event);
/* The CLOCK_MONOTONIC reading in ms when it happened (0 for NULL). */
HL_EXTERN int64_t hl_event_monotonic_ms(const hl_event *event);

/* The lock's name (binary-safe: *out_len, if not NULL, gets its length;
 * a NUL is added after it), or NULL (*out_len = 0) for an event that is
 * about no lock. */
HL_EXTERN const char *hl_event_lock_name(size_t *out_len,
                                         const hl_event *event);

/* The owner of the hold ("<client uuid>:<owner id>"), or "" if none. */
HL_EXTERN const char *hl_event_owner(const hl_event *event);

/* The server concerned ("host:port", or a unix socket path), or "". */
HL_EXTERN const char *hl_event_node(const hl_event *event);

/* The status the event reports (see the types). */
HL_EXTERN int hl_event_status(const hl_event *event);

/* A sentence for a log: what happened and why. Never a password. */
HL_EXTERN const char *hl_event_message(const hl_event *event);

/* ------------------------------------------------------------------------
 * Cancellation
 * ------------------------------------------------------------------------ */

/* A new, untriggered flag. Returns HL_OK, HL_EINVAL, HL_ENOMEM. */
HL_EXTERN int hl_cancel_new(hl_cancel **out);

/* Trigger: blocked calls given this flag return HL_EINTERRUPTED promptly,
 * and later calls given it return HL_EINTERRUPTED at once. Any thread (not
 * from a signal handler). NULL is ignored. */
HL_EXTERN void hl_cancel_trigger(hl_cancel *cancel);

/* Untrigger. Any thread. NULL is ignored. */
HL_EXTERN void hl_cancel_reset(hl_cancel *cancel);

/* 1 if triggered, 0 if not or NULL. */
HL_EXTERN int hl_cancel_is_triggered(const hl_cancel *cancel);

/* Free. No call may be using it. NULL is ignored. */
HL_EXTERN void hl_cancel_free(hl_cancel *cancel);

/* ------------------------------------------------------------------------
 * Reentrant lock (Redisson RLock; hash <name>, channel
 * redisson_lock__channel:{name})
 * ------------------------------------------------------------------------ */

/* A handle for the lock called name (name_len bytes, 1 to 65536, any byte
 * values). Keeps a reference to client. Does not touch Redis.
 * Returns HL_OK, HL_EINVAL (NULL or empty or too long name), HL_ECLOSED,
 * HL_EFORKED, HL_ENOMEM. Any thread. */
HL_EXTERN int hl_lock_new(hl_lock **out, hl_client *client, const void *name,
                          size_t name_len);

/* Free the handle. Neither releases the lock nor stops its renewal: only
 * unlock, hl_lock_abandon() or closing the client does. No call may be using
 * the handle. NULL is ignored. */
HL_EXTERN void hl_lock_free(hl_lock *lock);

/* Give the handle an explicit owner id (from hl_owner_id_new()): every
 * thread using the handle then acts as that one owner. 0 returns to the
 * default (each calling thread is its own owner). Set it before sharing
 * the handle. Returns HL_OK or HL_EINVAL. */
HL_EXTERN int hl_lock_set_owner(hl_lock *lock, uint64_t owner_id);

/* Write the owner string this handle uses from the calling thread
 * ("<client uuid>:<owner id>", the hash field in Redis) into buf, NUL
 * terminated. *out_len (if not NULL) gets its length. Returns HL_OK, or
 * HL_EINVAL when buf is NULL or smaller than the string plus its NUL (then
 * *out_len still gets the length). */
HL_EXTERN int hl_lock_owner(size_t *out_len, const hl_lock *lock, char *buf,
                            size_t buf_len);

/* Acquire, waiting at most wait_ms (-1: forever; 0: one attempt).
 * lease_ms: -1 for the watchdog (renewed while held), or a fixed lease
 * (1 ms to 2^40 ms) after which Redis frees the lock. Reentrant: an owner
 * that holds the lock gets it again and its hold count grows.
 * *out_acquired = 1 if acquired, 0 if the wait ran out first.
 * cancel: NULL, or a flag that interrupts the wait.
 *
 * The wait bounds everything, however the network behaves: connecting,
 * each attempt, each resend and each pause end with it (an attempt that
 * began just before it may take up to 150 ms more, and a wait of 0 gets
 * those 150 ms for its one attempt, and an acquire that may have run
 * gets up to 100 ms more to be taken back; 500 ms after a cancel). A wait
 * that ends without Redis answering any of its attempts (down, unreachable,
 * silent) is HL_ECONNECT naming the outage, not "not acquired": an outage
 * is not contention (docs/consistency.md). An acquire the caller did not get
 * (not acquired, an error, cancelled) never stays held: what it may have
 * written is taken back at once, or, when Redis does not answer that either, in
 * the background until its lease would have ended it (told as HL_EVENT_UNDO
 * events); the owner's own next acquire or release of the lock supersedes
 * that.
 * Fair within the process: an acquire, even of wait 0, defers to threads
 * of this client already queued for the lock, and briefly to another
 * process this client just handed the lock to (wait 0 then answers 0
 * without a round trip).
 * Returns HL_OK (see *out_acquired), HL_EINTERRUPTED (cancel triggered, or
 * hl_client_interrupt()), HL_EINVAL, HL_ECLOSED, HL_EFORKED, HL_ECONNECT
 * (no attempt answered within the wait), HL_EIO (Redis unreachable through
 * every retry, after it had answered), HL_EREDIS. Any thread;
 * blocks the calling thread only. */
HL_EXTERN int hl_lock_try_acquire(int *out_acquired, hl_lock *lock,
                                  int64_t wait_ms, int64_t lease_ms,
                                  hl_cancel *cancel);

/* Acquire, waiting as long as it takes (or until cancel is triggered).
 * Same as hl_lock_try_acquire() with wait_ms -1. Returns HL_OK when
 * acquired, or an error as above; never "not acquired". */
HL_EXTERN int hl_lock_acquire(hl_lock *lock, int64_t lease_ms,
                              hl_cancel *cancel);

/* Release one hold of this owner; at zero the lock is deleted and one
 * waiter (in any process, Redisson's too) is woken.
 * *out_released (may be NULL): 1 if the lock is now free, 0 if this owner
 * still holds it (reentrant holds remain).
 *
 * The last release stops the renewal first, whatever happens next. A
 * release whose reply is lost is sent again (it sets the hold count, so a
 * copy that ran already changes nothing), within the retry policy and never
 * past the end of the hold's lease.
 * Returns HL_OK; HL_ENOTHELD (this owner holds nothing this client knows
 * of, and Redis agrees; the lock is untouched); HL_ELOST (the hold ended
 * before this release: the watchdog found it gone or taken, it could not be
 * renewed before its lease ran out, or its fixed lease ended, or Redis no
 * longer had it; a hold already known lost costs no round trip);
 * HL_EINDOUBT (Redis did not confirm the last release: the hold is no
 * longer renewed and its lease ends it; hl_error_last() says within how
 * many ms at the latest. Also when the last release ran on a master with
 * replicas but no replica confirmed it (WAIT), even after resending it
 * within the retry policy: a failover could bring the hold back until its
 * lease ends. A release that leaves holds of the owner is not resent: the
 * owner's next release or acquire sets the count again); HL_ECLOSED,
 * HL_EFORKED, HL_EIO, HL_EREDIS. Any thread. */
HL_EXTERN int hl_lock_release(int *out_released, hl_lock *lock);

/* Delete the lock whoever holds it, and wake a waiter.
 * *out_existed (may be NULL): 1 if it was locked.
 * Returns HL_OK, HL_ECLOSED, HL_EFORKED, HL_EIO, HL_EREDIS. */
HL_EXTERN int hl_lock_force_unlock(int *out_existed, hl_lock *lock);

/* Queries: one read-only round trip each (retried after a broken
 * connection). Return HL_OK, HL_EIO, HL_EREDIS (and see Conventions). */

/* *out = 1 if anyone holds the lock (EXISTS). */
HL_EXTERN int hl_lock_is_locked(int *out, hl_lock *lock);

/* *out = 1 if this handle's owner (the calling thread, or the explicit
 * owner) holds it (HEXISTS). */
HL_EXTERN int hl_lock_is_held(int *out, hl_lock *lock);

/* *out = this owner's hold count, 0 if it does not hold it (HGET). */
HL_EXTERN int hl_lock_hold_count(int64_t *out, hl_lock *lock);

/* *out = remaining time to live in ms; -2 if the lock is free, -1 if it
 * has no expiry (PTTL). */
HL_EXTERN int hl_lock_ttl(int64_t *out, hl_lock *lock);

/* *out = 1 if this owner's current hold is lost: the watchdog found the
 * key gone or another owner's, or Redis did not confirm a renewal before
 * the loss deadline, or the hold's fixed lease ended before it was released
 * (measured from when the acquire was sent; a re-entry or a partial release
 * sets the lease again). The deadline is kept by this machine's
 * monotonic clock, whatever the network does: the end of the last lease
 * Redis confirmed (measured from when that command was sent, so Redis's
 * lease cannot end sooner) less a tenth of the watchdog timeout, so the
 * holder is told before anyone else can take the lock. Cleared by the next
 * acquire or release of this owner. Local: no round trip. */
HL_EXTERN int hl_lock_is_lost(int *out, hl_lock *lock);

/* Wait until this owner's hold is found lost (see hl_lock_is_lost), at
 * most timeout_ms (-1: forever). *out_lost = 1 if lost, 0 if the time ran out,
 * or the owner holds nothing watched (not held, or released). Returns HL_OK,
 * HL_EINTERRUPTED, HL_ECLOSED, HL_EINVAL. */
HL_EXTERN int hl_lock_wait_lost(int *out_lost, hl_lock *lock,
                                int64_t timeout_ms, hl_cancel *cancel);

/* A file descriptor that becomes readable when this owner's current hold is
 * found lost (see hl_lock_is_lost; the watchdog thread marks it at the loss
 * deadline, or when the fixed lease ends, at the latest), for
 * poll/epoll/select. Owned by the library: do not
 * read or close it; valid until this owner's hold ends (release or re-acquire
 * after loss) or the client is closed. Returns HL_OK, HL_ENOTHELD (this
 * owner has no hold known to this client), HL_ESYSTEM. */
HL_EXTERN int hl_lock_lost_fd(int *out_fd, hl_lock *lock);

/* What this client knows of this owner's hold, without a round trip: for
 * bindings, which keep no hold records of their own. Versioned: set
 * version to HL_HOLD_STATE_VERSION; fields are only ever appended. */
#define HL_HOLD_STATE_VERSION 1
typedef struct hl_hold_state {
	unsigned int version;
	int64_t count;    /* holds the owner was given and has not released; 0
	                     when it holds nothing (or its hold is lost) */
	int lost;         /* the hold was found lost (hl_lock_is_lost) */
	uint64_t epoch;   /* the hold's identity: a new value whenever a hold
	                     begins (the first acquire, or one after a release
	                     to zero or a loss); 0 when there is no record */
	int64_t lease_ms; /* -1: the watchdog renews it; else the fixed lease
	                     of its last acquisition */
	int64_t token;    /* fenced lock: the token of its last acquisition */
} hl_hold_state;

/* Fill *out (out->version set by the caller: 1) for the handle's owner.
 * Returns HL_OK, HL_EINVAL (NULL, unknown version). */
HL_EXTERN int hl_lock_hold_state(hl_hold_state *out, hl_lock *lock);

/* Stop renewing this owner's hold without releasing it: its lease then runs
 * out (for an owner that died holding the lock). Returns HL_OK (also when
 * there was nothing to stop), HL_EINVAL. */
HL_EXTERN int hl_lock_abandon(hl_lock *lock);

/* ------------------------------------------------------------------------
 * Lock kinds. One handle type; the kind is chosen at creation and every
 * hl_lock_* call above answers for it. Each kind has Redisson's keys,
 * fields, channels and messages, so hilock and Redisson processes contend
 * on the same lock.
 * ------------------------------------------------------------------------ */
enum hl_lock_kind {
	/* Reentrant lock (RLock): hash <name>, channel
	 * redisson_lock__channel:{name}. hl_lock_new() makes this kind. */
	HL_LOCK_REENTRANT = 0,
	/* Fair lock (RFairLock): waiters take it in the order they asked,
	 * across processes, through a queue and deadlines kept in Redis
	 * (redisson_lock_queue:{name}, redisson_lock_timeout:{name}); each
	 * waiter is woken on its own channel. A waiter that dies leaves the
	 * queue fair_wait_timeout_ms (or its own wait) after its turn came.
	 * An attempt never barges ahead of the queue, even with wait 0. The
	 * deadlines are wall-clock times of the clients: keep clocks in step
	 * (NTP). */
	HL_LOCK_FAIR = 1,
	/* The read half of a read-write lock (RReadWriteLock.readLock()):
	 * many owners hold it together while no one writes. Hash <name> with
	 * mode and one field per reader; each read hold has its own lease key
	 * {name}:<owner>:rwlock_timeout:<n>; channel redisson_rwlock:{name}.
	 * Reentrant. */
	HL_LOCK_READ = 2,
	/* The write half: one owner, no readers but the writer itself (a
	 * writer may take read holds; a reader cannot take the write lock:
	 * HL_EDEADLK, it would wait for itself). Field <owner>:write.
	 * Reentrant. Waiting threads of this client are served in order
	 * whichever half they want, so local readers do not starve a local
	 * writer; across processes readers are not held back. */
	HL_LOCK_WRITE = 3,
	/* Spin lock (RSpinLock): the RLock hash, no pub/sub; waiters try
	 * again after an exponential back-off (hl_lock_set_backoff). For
	 * deployments where pub/sub is unavailable or costly. */
	HL_LOCK_SPIN = 4,
	/* Fenced lock (RFencedLock): every acquisition, re-entries too, takes
	 * the next number of redisson_lock_token:{name} (strictly increasing,
	 * never reset); see hl_lock_token(). Pass the token to the resource
	 * you guard, which refuses a token older than one it has seen: a
	 * holder paused past its lease (GC, SIGSTOP, a slow network) is then
	 * harmless. */
	HL_LOCK_FENCED = 5,
	/* Non-reentrant lock (RLock's layout, Redisson 4.4.0+'s
	 * getNonReentrantLock): an owner that acquires it again gets
	 * HL_EDEADLK instead of a second hold. */
	HL_LOCK_NONREENTRANT = 6,
	/* Non-reentrant fair lock. */
	HL_LOCK_FAIR_NONREENTRANT = 7
};

/* A handle for the lock of the given kind called name (as hl_lock_new).
 * In a cluster the kind's keys and channels must share the name's slot:
 * names with braces need a non-empty {hash tag} at their first '{'.
 * Returns HL_OK, HL_EINVAL (unknown kind, bad name), HL_ECLOSED,
 * HL_EFORKED, HL_ENOMEM. */
HL_EXTERN int hl_lock_new_kind(hl_lock **out, hl_client *client, int kind,
                               const void *name, size_t name_len);

/* The handle's kind (HL_LOCK_*), or -1 for NULL. */
HL_EXTERN int hl_lock_kind(const hl_lock *lock);

/* The kind's name ("reentrant", "fair", "read", "write", "spin",
 * "fenced", "nonreentrant", "fair-nonreentrant"); "unknown" for others.
 * Static storage. */
HL_EXTERN const char *hl_lock_kind_name(int kind);

/* Fenced lock: *out = the token of this owner's current hold (the token
 * of its last acquisition or re-entry). Local: no round trip.
 * Returns HL_OK, HL_ENOTHELD (this owner holds nothing this client knows
 * of), HL_ELOST (its hold was lost), HL_EINVAL (not a fenced lock). */
HL_EXTERN int hl_lock_token(int64_t *out, hl_lock *lock);

/* Fenced lock: *out = the last token given out for the name by anyone (GET
 * redisson_lock_token:{name}; 0 if none yet). Returns HL_OK, HL_EINVAL (not
 * a fenced lock), HL_EIO, HL_EREDIS. */
HL_EXTERN int hl_lock_last_token(int64_t *out, hl_lock *lock);

/* Spin lock: the pause between attempts starts at initial_ms and is
 * multiplied by multiplier (plus a random 0 to failures ms) after each
 * failed attempt, up to max_ms (Redisson's ExponentialBackOff; defaults
 * 1, 128, 2). multiplier 1 with initial_ms == max_ms is a constant
 * back-off. Set it before sharing the handle. Returns HL_OK, or HL_EINVAL
 * (not a spin lock; initial_ms < 1 or max_ms < initial_ms or over 2^40;
 * multiplier < 1 or > 1000). */
HL_EXTERN int hl_lock_set_backoff(hl_lock *lock, int64_t initial_ms,
                                  int64_t max_ms, int multiplier);

/* ------------------------------------------------------------------------
 * Multi lock and RedLock (Redisson RedissonMultiLock, RedissonRedLock)
 *
 * A multilock is a group of member locks (hl_lock handles of any kind, of
 * one client or of several, so members may live on independent Redis
 * servers) taken and released as one. Client-side only: nothing new is
 * written in Redis, each member is an ordinary lock that Redisson and
 * other hilock processes see as such.
 *
 *   HL_MULTILOCK_ALL  all members or none. Members are taken in the given
 *                     order, each waiting what is left of the wait; if one
 *                     is not taken, those taken are released again (last
 *                     taken first) and nothing is held.
 *   HL_MULTILOCK_RED  the RedLock: held once a majority (quorum n / 2 + 1)
 *                     of independent servers granted their member. Each
 *                     member gets one attempt and, if it is held
 *                     elsewhere, waits the rest of min(max(wait / n, 1),
 *                     what is left) ms (Redisson's share); a member whose
 *                     server refuses or fails fails at once, one that does
 *                     not answer costs at most its share (give the
 *                     clients a short command_timeout_ms). Once more than
 *                     n - quorum members failed, the round gives back what
 *                     it took and, after a random pause of up to 10 ms,
 *                     starts again while the wait lasts. Give each member
 *                     its own client and server; an odd n (3, 5) tolerates
 *                     (n - 1) / 2 servers down.
 *
 * Leases. -1: each member is renewed by its client's watchdog while held.
 * A fixed lease is given to each member as it is taken (Redisson takes
 * members with twice the wait and shortens the leases afterwards; hilock
 * sets the final lease at once, so no member ever outlives the lease), so
 * the first member's lease runs out first. The hold is valid for
 *   validity = lease - elapsed - drift, drift = lease / 100 + 2 ms
 * (elapsed: the time taking the members took; drift: how much the
 * servers' clocks may disagree about the lease's end, see
 * hl_multilock_drift_ms()); if that is not positive the members are
 * released and the round counts as failed.
 *
 * Safety. The RedLock's guarantees rest on timing: Martin Kleppmann, "How
 * to do distributed locking" (2016), shows that a process pause (GC, swap,
 * SIGSTOP) or a clock that jumps on a server can let a lease end while its
 * holder still believes it holds the lock, and that nothing then stops
 * its late writes: a lock that expires needs a fencing token checked by
 * the resource it protects. For correctness (not just efficiency), use
 * the fenced lock kind and check its token where you write.
 *
 * Owners. Each member acts for its own owner (the calling thread, or its
 * explicit owner): a multilock is held by the calling thread unless its
 * members were given explicit owners. The members taken by each
 * acquisition are recorded on the handle, per owner of the first member,
 * so that a release gives back exactly what its acquire took (a RedLock
 * does not hold its minority; the record of a hold never released stays
 * until the handle is freed). Reentrant: an owner that holds it may take
 * it again, and releases it as many times. Each member is recorded with the
 * hold it took (hl_hold_state.epoch): a member its owner held already is
 * re-entered (the same hold, one count more, which the release gives
 * back); a member whose hold ended while the multilock held it (lost, or
 * released through the member's own handle) and that its owner has taken
 * again since is held in a newer hold that is not the multilock's: its
 * release leaves that hold alone.
 *
 * A multilock handle borrows its members: free it before them. It may be
 * used by several threads at once (each its own owner).
 *
 * Every wait has a non-blocking form (hl_multilock_try_acquire_start, see
 * "Tasks"), and the blocking calls are that task plus a wait: the rounds
 * run on the executors of the first member's client, and each member is
 * waited for by a task of its own client, so a waiting multilock holds no
 * thread in the library. Releases have one too
 * (hl_multilock_release_start).
 * ------------------------------------------------------------------------ */
typedef struct hl_multilock hl_multilock;

enum { HL_MULTILOCK_ALL = 0, HL_MULTILOCK_RED = 1 };

/* A multilock of the n members (kind HL_MULTILOCK_ALL or HL_MULTILOCK_RED).
 * The array is copied, the handles are not: they must outlive the
 * multilock. Does not touch Redis.
 * Returns HL_OK; HL_EINVAL (NULL out or members, n = 0 or above 4096, a
 * NULL member, an unknown kind, the same lock twice: the same handle, or
 * two handles of one name on one client); HL_ECLOSED or HL_EFORKED (a
 * member of a closed or inherited client; the message names the member);
 * HL_ENOMEM. Any thread. */
HL_EXTERN int hl_multilock_new(hl_multilock **out, hl_lock *const *members,
                               size_t n, int kind);

/* Free the handle (not its members). Neither releases nor stops renewing
 * anything. No call may be using it. NULL is ignored. */
HL_EXTERN void hl_multilock_free(hl_multilock *m);

/* The number of members (0 for NULL). */
HL_EXTERN size_t hl_multilock_size(const hl_multilock *m);

/* How many members must be taken: n for HL_MULTILOCK_ALL, n / 2 + 1 for a
 * RedLock (0 for NULL). */
HL_EXTERN size_t hl_multilock_quorum(const hl_multilock *m);

/* The drift allowance for a fixed lease: lease_ms / 100 + 2 (0 for a lease
 * of -1). Any thread. */
HL_EXTERN int64_t hl_multilock_drift_ms(int64_t lease_ms);

/* Acquire, waiting at most wait_ms (-1: forever; 0: one attempt per
 * member), with lease_ms for each member (-1: watchdog; or 1 to 2^40 ms).
 * *out_acquired = 1 if held (all members, or a RedLock's quorum), 0 if the
 * wait ran out first (then nothing this call took is held).
 * A wait of -1 runs in rounds of 1.5 to 3 s per member, giving back
 * between rounds, so two multilocks that share members never deadlock.
 * Each member's wait may run up to 150 ms over its share when Redis is
 * slow (see hl_lock_try_acquire).
 * Returns HL_OK (see *out_acquired); HL_EINTERRUPTED (cancel, or
 * hl_client_interrupt() of a member's client); HL_EINVAL (as
 * hl_lock_try_acquire); HL_ECLOSED, HL_EFORKED (a member's client);
 * HL_EIO, HL_ECONNECT, HL_EREDIS (a multi lock member's Redis failed; a
 * RedLock returns them only when in its last round more than n - quorum
 * members failed with errors, not with contention). The message names the
 * member. Nothing taken by the call is left held on any error. */
HL_EXTERN int hl_multilock_try_acquire(int *out_acquired, hl_multilock *m,
                                       int64_t wait_ms, int64_t lease_ms,
                                       hl_cancel *cancel);

/* hl_multilock_try_acquire(), and when acquired: *out_valid_ms (may be
 * NULL) = the validity left for a fixed lease (see above), -1 for the
 * watchdog; out_members (may be NULL; hl_multilock_size() entries) = 1 for
 * each member taken, 0 for the others (a RedLock's minority). */
HL_EXTERN int hl_multilock_try_acquire_ex(int *out_acquired,
                                          int64_t *out_valid_ms,
                                          int *out_members, hl_multilock *m,
                                          int64_t wait_ms, int64_t lease_ms,
                                          hl_cancel *cancel);

/* Acquire, waiting as long as it takes (or until cancel). Same as
 * hl_multilock_try_acquire() with wait_ms -1; never "not acquired". A
 * RedLock returns an error once a round finds more than n - quorum members
 * failing with errors. */
HL_EXTERN int hl_multilock_acquire(hl_multilock *m, int64_t lease_ms,
                                   hl_cancel *cancel);

/* Release the calling owner's newest hold: one hold of each member its
 * acquire took (every member when the handle has no record of one, for
 * example a hold taken through another multilock handle), last member
 * first. Every member is tried, whatever the others answer. A member whose
 * hold ended since it was taken and that its owner has taken again (see
 * Owners above) is not released: its status is HL_ELOST, as for a member
 * found lost, and nothing is sent for it.
 * Returns HL_OK, or for a multi lock the first member error in release
 * order (HL_ENOTHELD, HL_ELOST, HL_EINDOUBT, HL_ECLOSED... as
 * hl_lock_release; the message names the member). A RedLock returns HL_OK
 * when at least a quorum of members were released, else the first error
 * other than HL_ENOTHELD (HL_ENOTHELD if all were). Any thread. */
HL_EXTERN int hl_multilock_release(hl_multilock *m);

/* hl_multilock_release() with its detail: out_statuses and out_released
 * (each may be NULL; hl_multilock_size() entries) get each member's
 * hl_lock_release() status and "now free" flag (HL_ENOTHELD and 0 for
 * members not released because the hold did not take them). members (may
 * be NULL): which members to release (non-zero: release), overriding the
 * handle's record (for bindings that keep their own); each is then
 * released whichever hold its owner has. Returns as
 * hl_multilock_release(). */
HL_EXTERN int hl_multilock_release_ex(int *out_statuses, int *out_released,
                                      hl_multilock *m, const int *members);

/* hl_multilock_release_ex() with the hold of each member to release, for
 * bindings that keep their own record of an acquisition (members) and of
 * the hold each member is part of: epochs (may be NULL; hl_multilock_size()
 * entries) = each member's hl_hold_state.epoch read after the acquire took
 * it (0: whichever hold its owner has). A member whose owner's hold is by
 * now another one is not released (HL_ELOST, see hl_multilock_release()).
 * With members NULL the handle's record says both, and epochs is not
 * used. Returns as hl_multilock_release(). */
HL_EXTERN int hl_multilock_release_holds(int *out_statuses, int *out_released,
                                         hl_multilock *m, const int *members,
                                         const uint64_t *epochs);

/* *out = 1 if the calling owner's newest hold is lost: its fixed lease's
 * validity has ended, or fewer than the quorum (a multi lock: all) of the
 * members it took are still held in the hold it took (hl_lock_is_lost; a
 * member whose hold ended, released or lost, even if its owner took it
 * again since; or a member client closed). 0 if it holds nothing through
 * this handle. Local: no round trip. Returns HL_OK, HL_EINVAL,
 * HL_ENOMEM. */
HL_EXTERN int hl_multilock_is_lost(int *out, hl_multilock *m);

/* ------------------------------------------------------------------------
 * Operations that do not block (tasks)
 * ------------------------------------------------------------------------
 * Every call that waits has a form that starts the operation and returns at
 * once. The wait is then a record in the client (a task), not a thread
 * blocked in a call: two executor threads per client (started with it,
 * stopped by close) make the round trips and keep the timers, and a
 * pub/sub message, a promotion in the client's FIFO queue for a name, a
 * timer, a cancel, hl_client_interrupt() or close only move records. So
 * 10,000 goroutines or asyncio tasks waiting for locks cost no thread each.
 * The blocking calls (hl_lock_try_acquire, hl_lock_acquire,
 * hl_lock_wait_lost, the multilock's, the synchronizers') are this plus a
 * wait, and behave exactly as their comments say.
 *
 * A task behaves as its blocking call: the same queueing (a task queues
 * behind this client's earlier waiters for the name, blocking or not, and
 * the head alone competes in Redis), the same deadline, outages ridden out
 * within it, HL_EINTERRUPTED after hl_task_cancel() or an
 * hl_client_interrupt() made while it was pending, HL_ECLOSED when the
 * client closes under it. Its owner is fixed when it starts: the handle's
 * explicit owner, or the id of the thread that started it.
 *
 * Learning of completion, three ways (use any):
 *   - the client's task fd (hl_client_task_fd): readable while completed
 *     tasks wait to be taken with hl_client_task_next(), which hands each
 *     completed task out once; for one event loop serving many tasks
 *     (Go's netpoller, asyncio's add_reader, poll/epoll);
 *   - a task's own fd (hl_task_fd), readable once it is done;
 *   - hl_task_wait(), or polling hl_task_done().
 * Then hl_task_result() gives what the blocking call would have returned,
 * and hl_task_free() frees it.
 *
 * A task does not depend on the handle it was started from: the handle may
 * be freed at once. It keeps a reference to its client: the client's memory
 * lives until its last task is freed too. hl_task_* calls on one task may be
 * made from any thread, but hl_task_free() only when no other call is
 * using the task. Nothing here calls user code.
 * ------------------------------------------------------------------------ */

/* An operation started by an hl_*_start() call. */
typedef struct hl_task hl_task;

/* Start hl_lock_try_acquire(out_acquired, lock, wait_ms, lease_ms): the
 * same wait and lease rules, the same fairness (a wait of 0 defers to this
 * client's queued waiters and answers 0 without a round trip), for every
 * lock kind (a fair lock's waiter takes its place in Redis's queue and
 * leaves it if the task ends without the lock; a spin lock's retries after
 * its back-off; a non-reentrant kind's owner that holds it gets HL_EDEADLK,
 * and a reader that starts waiting for the write half gets HL_EDEADLK at
 * once). Makes no round trip on the calling thread. On HL_OK *out is a new
 * task: its result is the acquire's status and, for HL_OK, 1 if acquired, 0 if
 * the wait ran out. Cancelling it (hl_task_cancel, hl_task_free) while an
 * attempt is in flight that gets the lock anyway gives the lock back before
 * the task completes with HL_EINTERRUPTED: a cancelled task leaves nothing
 * held (an attempt cut off in the network is taken back too, within 500
 * ms; if Redis cannot be reached then, the attempt's lease ends it).
 * Returns HL_OK, HL_EINVAL (NULL out, bad times), HL_ENOMEM. Any thread. */
HL_EXTERN int hl_lock_try_acquire_start(hl_task **out, hl_lock *lock,
                                        int64_t wait_ms, int64_t lease_ms);

/* hl_lock_try_acquire(), but its wait is a task the caller waits on (a
 * thread that must wake for something else meanwhile, e.g. a signal): the
 * first attempt is made on the calling thread, as hl_lock_try_acquire()
 * makes it (one round trip, no task when it decides), and a waiter that
 * did not get the lock keeps the place that attempt took in the line.
 * On HL_OK either *out_task is NULL and *out_acquired says whether the
 * lock was acquired, or *out_task is a new task (as
 * hl_lock_try_acquire_start()'s: its result is the acquire's, cancelling
 * it leaves nothing held) and *out_acquired is 0. Returns what
 * hl_lock_try_acquire() returns (HL_EINVAL also for a NULL out_task).
 * Blocks the calling thread for that first round trip at most. */
HL_EXTERN int hl_lock_try_acquire_begin(hl_task **out_task, int *out_acquired,
                                        hl_lock *lock, int64_t wait_ms,
                                        int64_t lease_ms);

/* Start hl_lock_release(out_released, lock) for this owner, on an executor
 * thread. Its result is the release's status and, for HL_OK, 1 if the lock
 * is now free, 0 if this owner still holds it. hl_client_interrupt() does
 * not stop it; hl_task_cancel() stops it only before it is sent (then it
 * ends with HL_EINTERRUPTED and the lock is untouched); once sent it ends
 * with the release's own result. Returns HL_OK, HL_EINVAL, HL_ENOMEM. */
HL_EXTERN int hl_lock_release_start(hl_task **out, hl_lock *lock);

/* Start hl_lock_wait_lost(out_lost, lock, timeout_ms): completes when this
 * owner's hold is found lost (result 1), or it ends normally or holds
 * nothing watched, or timeout_ms (-1: forever) runs out (result 0).
 * Returns HL_OK, HL_EINVAL, HL_ENOMEM. */
HL_EXTERN int hl_lock_wait_lost_start(hl_task **out, hl_lock *lock,
                                      int64_t timeout_ms);

/* Start hl_multilock_try_acquire(out_acquired, m, wait_ms, lease_ms): the
 * same rounds, shares, quorum, drift and validity, the same all-or-nothing
 * (what a round took is given back, last first), for the calling thread's
 * owners (each member's, fixed now). The task belongs to the client of the
 * first member, m's member 0: it is delivered through that client's task
 * fd (hl_client_task_fd, hl_client_task_next), and closing that client
 * ends it. Each member is waited for by a task of its own client, so the
 * members may be of any clients, and the wait costs no thread. Its result
 * is the acquire's status and, for HL_OK, 1 if held, 0 if the wait ran out
 * (nothing this task took is then held). Cancelling it (hl_task_cancel,
 * hl_task_free, an hl_client_interrupt() of the first member's client, or
 * of the client of the member it waits for), or closing the first
 * member's client, ends it promptly with HL_EINTERRUPTED (HL_ECLOSED) and
 * leaves nothing held: the member in flight is cancelled (it gives back
 * what it got), then every member taken is released, last first, before
 * the task completes (each within 500 ms; one that cannot be released then
 * is not renewed any more, its lease ends it; a member of a client that
 * was closed is not renewed either). The hold is recorded on m as the
 * blocking call's (hl_multilock_release() releases it); m may be freed
 * once the call returns, the task keeps copies of the member handles (the
 * members' clients stay alive until it is freed). Makes no round trip on
 * the calling thread. Returns HL_OK, HL_EINVAL (NULL out or m, bad times),
 * HL_ECLOSED or HL_EFORKED (a member's client; the message names the
 * member), HL_ENOMEM. Any thread. */
HL_EXTERN int hl_multilock_try_acquire_start(hl_task **out, hl_multilock *m,
                                             int64_t wait_ms, int64_t lease_ms);

/* hl_multilock_try_acquire_start(), with hl_multilock_try_acquire_ex()'s
 * outputs: when the task ends with the multilock held, and only if it was
 * not freed before, *out_valid_ms and out_members[0 .. n) (each may be
 * NULL) are written before it is reported done. Both must stay valid until
 * the task is done or freed. */
HL_EXTERN int
hl_multilock_try_acquire_ex_start(hl_task **out, int64_t *out_valid_ms,
                                  int *out_members, hl_multilock *m,
                                  int64_t wait_ms, int64_t lease_ms);

/* Start hl_multilock_release(m) for the calling thread's owners, on an
 * executor of the first member's client (its task fd delivers it). Its
 * result is the release's status and, for HL_OK, the number of members
 * released. As hl_lock_release_start(): hl_client_interrupt() does not stop
 * it, hl_task_cancel() only before it is sent (HL_EINTERRUPTED, nothing
 * released, the hold's record kept), and once sent it ends with its own
 * result. Returns HL_OK, HL_EINVAL, HL_ECLOSED, HL_EFORKED, HL_ENOMEM. */
HL_EXTERN int hl_multilock_release_start(hl_task **out, hl_multilock *m);

/* Start hl_multilock_release_ex(out_statuses, out_released, m, members):
 * members (may be NULL) is copied now; out_statuses and out_released (each
 * may be NULL; hl_multilock_size() entries) are written once the releases
 * were sent, before the task is reported done, unless it was freed before,
 * and must stay valid until it is done or freed. */
HL_EXTERN int hl_multilock_release_ex_start(hl_task **out, int *out_statuses,
                                            int *out_released, hl_multilock *m,
                                            const int *members);

/* Start hl_multilock_release_holds(out_statuses, out_released, m, members,
 * epochs): members and epochs (each may be NULL) are copied now; the
 * outputs as hl_multilock_release_ex_start(). */
HL_EXTERN int hl_multilock_release_holds_start(hl_task **out, int *out_statuses,
                                               int *out_released,
                                               hl_multilock *m,
                                               const int *members,
                                               const uint64_t *epochs);

/* The client's task fd: readable while completed tasks wait to be taken
 * with hl_client_task_next() (an eventfd on Linux, a pipe's read end
 * elsewhere; non-blocking; level: it stays readable until the queue is
 * empty). Owned by the library: do not read or
 * close it. The same fd on every call; it stays valid, also after
 * hl_client_close() (tasks that close ended are queued too), until
 * hl_client_free(). Tasks of blocking calls, tasks already taken and freed
 * tasks never appear. Returns HL_OK, HL_EINVAL, HL_EFORKED, HL_ESYSTEM. */
HL_EXTERN int hl_client_task_fd(int *out_fd, hl_client *client);

/* Take the next completed task, in the order they completed: *out = the
 * task (still the caller's to free with hl_task_free), or NULL when none is
 * waiting. Each task is handed out once. Works after hl_client_close().
 * Returns HL_OK, HL_EINVAL, HL_EFORKED. Any thread. */
HL_EXTERN int hl_client_task_next(hl_task **out, hl_client *client);

/* A fd of the task's own, readable once it is done (an eventfd on Linux, a
 * pipe's read end elsewhere; created on the first call, non-blocking).
 * Owned by the task: do not read or close it; valid until hl_task_free().
 * Returns HL_OK, HL_EINVAL, HL_EFORKED, HL_ESYSTEM. */
HL_EXTERN int hl_task_fd(int *out_fd, hl_task *task);

/* A number of the caller's kept with the task (a binding's key for the
 * goroutine or future that waits for it); 0 until set. A task may complete,
 * and another thread may take it with hl_client_task_next(), as soon as it
 * starts: a binding whose completions are taken on another thread sets the
 * data under a lock of its own that it also holds while taking them. Any
 * thread.
 * hl_task_set_data returns HL_OK, or HL_EINVAL for NULL; hl_task_data
 * returns 0 for NULL. */
HL_EXTERN int hl_task_set_data(hl_task *task, uint64_t data);
/* The number hl_task_set_data() kept with the task; 0 until set, or for
 * NULL. Any thread. */
HL_EXTERN uint64_t hl_task_data(const hl_task *task);

/* 1 if the task is done (its result is ready), 0 if not or NULL. */
HL_EXTERN int hl_task_done(const hl_task *task);

/* The task's result: the status its blocking call would have returned,
 * with hl_error_last() set as that call would set it, and on HL_OK
 * *out_result (may be NULL) = acquired, released or lost (see each _start
 * call). HL_EINVAL (with a message) if the task is not done yet or NULL;
 * HL_EFORKED in a child process. Any number of times. */
HL_EXTERN int hl_task_result(int *out_result, hl_task *task);

/* Cancel: a pending task completes promptly with HL_EINTERRUPTED (a wait
 * parked in the queue or between attempts at once; an attempt in flight
 * is cut off and, if it got the lock, gives it back first: nothing stays
 * held). A done task, or NULL, is left alone. Never blocks on the network.
 * Any thread. */
HL_EXTERN void hl_task_cancel(hl_task *task);

/* Block the calling thread until the task is done, at most timeout_ms (-1:
 * forever, 0: just look), or until cancel (may be NULL) is triggered. The
 * task itself goes on either way (hl_task_cancel() ends it). Returns HL_OK
 * when it is done, HL_ETIMEDOUT, HL_EINTERRUPTED (cancel), HL_EINVAL,
 * HL_EFORKED. */
HL_EXTERN int hl_task_wait(hl_task *task, int64_t timeout_ms,
                           hl_cancel *cancel);

/* Free the task: cancels it first if it is still pending (as
 * hl_task_cancel, so nothing it would have acquired stays held; the engine
 * finishes the cancel on its own), and takes it out of the client's queue
 * if it completed but was not taken. Whether or not it was taken with
 * hl_client_task_next(). No other call may be using the task. NULL is
 * ignored. */
HL_EXTERN void hl_task_free(hl_task *task);

/* ------------------------------------------------------------------------
 * Synchronizers: semaphore, permit-expirable semaphore, count-down latch.
 * Redisson's keys, channels and messages (RSemaphore,
 * RPermitExpirableSemaphore, RCountDownLatch), so Java and hilock
 * processes share them. Handles are cheap views like hl_lock (a name and a
 * reference to the client); free them with their _free function. Every
 * wait has a non-blocking form returning an hl_task (see "Tasks"): its
 * result is 1 when the permits were acquired (the latch opened), 0 when
 * the wait ran out.
 *
 * The scripts that are not idempotent (taking or giving back permits,
 * counting down) carry a request marker (hilock_request:{name}:<id>, kept
 * for the retry policy's span), so a copy resent after a lost reply does
 * not run twice.
 * ------------------------------------------------------------------------ */

/* A semaphore (Redisson RSemaphore): the counter <name>, the channel
 * redisson_sc:{name} on which each change publishes the new count. */
typedef struct hl_semaphore hl_semaphore;

/* A handle for the semaphore called name (1 to 65536 bytes, binary).
 * Does not touch Redis. Returns HL_OK, HL_EINVAL, HL_ECLOSED, HL_EFORKED,
 * HL_ENOMEM. */
HL_EXTERN int hl_semaphore_new(hl_semaphore **out, hl_client *client,
                               const void *name, size_t name_len);
/* Free the handle. Neither releases the permits this client holds nor
 * forgets them: they stay counted on the client, by name, and a new handle
 * for the same name can give them back. NULL is ignored. No other call may
 * be using the handle. */
HL_EXTERN void hl_semaphore_free(hl_semaphore *sem);

/* Set the number of permits if the semaphore does not exist yet
 * (trySetPermits): *out_set (may be NULL) = 1 if it was set. permits >= 0.
 */
HL_EXTERN int hl_semaphore_try_set_permits(int *out_set, hl_semaphore *sem,
                                           int64_t permits);

/* Set the number of available permits, whatever it was. permits >= 0. */
HL_EXTERN int hl_semaphore_set_permits(hl_semaphore *sem, int64_t permits);

/* Add delta (negative to take permits away; the count may go below zero,
 * and then no one acquires until enough are released).
 * *out_available (may be NULL) = the count after. */
HL_EXTERN int hl_semaphore_add_permits(int64_t *out_available,
                                       hl_semaphore *sem, int64_t delta);

/* *out = the available permits (GET; 0 if the semaphore does not exist). */
HL_EXTERN int hl_semaphore_available(int64_t *out, hl_semaphore *sem);

/* Take every available permit: *out_drained (may be NULL) = how many.
 * They count as this client's (hl_semaphore_release gives them back). */
HL_EXTERN int hl_semaphore_drain(int64_t *out_drained, hl_semaphore *sem);

/* Acquire permits (1 to 2^40; 0 answers 1 at once, as Redisson), waiting
 * at most wait_ms (-1 forever, 0 one attempt). *out_acquired = 1 or 0.
 * Waiters of this client queue FIFO; a release anywhere (Java's too) wakes
 * the first. Returns HL_OK, HL_EINVAL, HL_EINTERRUPTED, HL_ECLOSED,
 * HL_EIO, HL_EREDIS (and see Conventions). */
HL_EXTERN int hl_semaphore_try_acquire(int *out_acquired, hl_semaphore *sem,
                                       int64_t permits, int64_t wait_ms,
                                       hl_cancel *cancel);
/* The same, waiting as long as it takes (or until cancel). */
HL_EXTERN int hl_semaphore_acquire(hl_semaphore *sem, int64_t permits,
                                   hl_cancel *cancel);
/* The non-blocking form (permits >= 1). */
HL_EXTERN int hl_semaphore_try_acquire_start(hl_task **out, hl_semaphore *sem,
                                             int64_t permits, int64_t wait_ms);

/* Give back permits (0: nothing). Permits have no owner in Redis, so the
 * client counts those it acquired (or drained) and not yet gave back:
 * giving back more returns HL_ENOTHELD and changes nothing (a permit
 * released twice would let one holder too many in). To change how many
 * permits exist, use hl_semaphore_add_permits(). A release whose reply is
 * lost is sent again with the same request marker, so it runs at most
 * once. Returns HL_OK; HL_ENOTHELD; HL_EINDOUBT (sent, and not confirmed
 * within the retry policy: Redis may or may not have the permits back;
 * they no longer count as this client's, so releasing them again is
 * refused rather than possibly doubled; a lost one can be restored with
 * hl_semaphore_add_permits()); HL_EIO (nothing reached Redis: the permits
 * are still this client's, release again); HL_EINVAL, HL_ECLOSED... */
HL_EXTERN int hl_semaphore_release(hl_semaphore *sem, int64_t permits);

/* *out = the permits this client holds of this semaphore (local). */
HL_EXTERN int hl_semaphore_held(int64_t *out, hl_semaphore *sem);

/* Delete the semaphore: *out_existed (may be NULL). */
HL_EXTERN int hl_semaphore_delete(int *out_existed, hl_semaphore *sem);

/* A permit-expirable semaphore (Redisson RPermitExpirableSemaphore):
 * available permits in <name>, the permits out in the zset {name}:timeout,
 * each a 16-byte random id scored with the end of its lease (wall-clock
 * ms; keep clocks in step). A permit whose lease ended goes back by
 * itself: a holder that dies gives its permits back when their leases end,
 * never later. Ids are HL_PERMIT_ID_LEN lowercase hex characters. */
typedef struct hl_expsem hl_expsem;
#define HL_PERMIT_ID_LEN 32

/* A handle for the permit-expirable semaphore called name (1 to 65536
 * bytes, binary). Does not touch Redis. Returns HL_OK, HL_EINVAL (also, in
 * a cluster, a name whose braces would put its keys in other slots),
 * HL_ECLOSED, HL_EFORKED, HL_ENOMEM. */
HL_EXTERN int hl_expsem_new(hl_expsem **out, hl_client *client,
                            const void *name, size_t name_len);
/* Free the handle. Permits it acquired stay out until released by id
 * (through any handle, any process) or until their leases end. NULL is
 * ignored. No other call may be using the handle. */
HL_EXTERN void hl_expsem_free(hl_expsem *sem);

/* Acquire n permits (1 to 1000) with a lease of lease_ms each (1 to 2^40;
 * -1: no lease, only a release gives them back), waiting at most wait_ms.
 * ids: room for n ids of HL_PERMIT_ID_LEN + 1 bytes each (each NUL
 * terminated), filled when *out_acquired = 1. A wait sleeps until a
 * release or the nearest lease's end. */
HL_EXTERN int hl_expsem_try_acquire(int *out_acquired, char *ids, size_t n,
                                    hl_expsem *sem, int64_t wait_ms,
                                    int64_t lease_ms, hl_cancel *cancel);
/* The same, waiting as long as it takes (or until cancel): HL_OK with the
 * ids filled, or an error (HL_EINTERRUPTED when cancel is triggered). */
HL_EXTERN int hl_expsem_acquire(char *ids, size_t n, hl_expsem *sem,
                                int64_t lease_ms, hl_cancel *cancel);
/* The non-blocking form: ids are written at once and are the task's
 * permits if its result is 1. */
HL_EXTERN int hl_expsem_try_acquire_start(hl_task **out, char *ids, size_t n,
                                          hl_expsem *sem, int64_t wait_ms,
                                          int64_t lease_ms);

/* Release one permit. A release whose reply is lost is sent again with the
 * same request marker, and answers as its first run did. Returns HL_OK;
 * HL_ENOTHELD (no such permit: released already, or never acquired);
 * HL_ELOST (its lease had ended: it went back to the pool, and someone
 * else may have had it); HL_EINDOUBT (sent, never confirmed: it may or may
 * not be back; releasing it again is safe); HL_EINVAL (an id that is not
 * hex). */
HL_EXTERN int hl_expsem_release(hl_expsem *sem, const char *id);

/* Give a permit a new lease from now (lease_ms 1 to 2^40, or -1: none).
 * HL_ENOTHELD when it is not out. */
HL_EXTERN int hl_expsem_update_lease(hl_expsem *sem, const char *id,
                                     int64_t lease_ms);

/* *out = ms left of a permit's lease, -1 if it has none. HL_ENOTHELD when
 * it is not out. */
HL_EXTERN int hl_expsem_lease_time(int64_t *out, hl_expsem *sem,
                                   const char *id);

/* *out = the available permits (0 if the semaphore does not exist).
 * Permits whose lease ended are given back first, as in every call. */
HL_EXTERN int hl_expsem_available(int64_t *out, hl_expsem *sem);
/* *out = all permits: available and out (0 if it does not exist). */
HL_EXTERN int hl_expsem_permits(int64_t *out, hl_expsem *sem);
/* *out = the permits out (acquired, lease not ended). */
HL_EXTERN int hl_expsem_acquired(int64_t *out, hl_expsem *sem);

/* Set the permits if the semaphore does not exist: *out_set (may be NULL)
 * = 1 if they were set. permits >= 0. */
HL_EXTERN int hl_expsem_try_set_permits(int *out_set, hl_expsem *sem,
                                        int64_t permits);
/* Make the total (available plus out) permits, whatever it was: the
 * available count becomes permits minus those out (below zero while more
 * are out). permits >= 0. */
HL_EXTERN int hl_expsem_set_permits(hl_expsem *sem, int64_t permits);
/* Add delta (negative to take permits away, -2^40 to 2^40) to the
 * available permits: *out_available (may be NULL) = the count after. Sent
 * with a request marker: a resend after a lost reply adds once. */
HL_EXTERN int hl_expsem_add_permits(int64_t *out_available, hl_expsem *sem,
                                    int64_t delta);
/* Delete the semaphore, its counter and its leases (permits out are
 * forgotten): *out_existed (may be NULL) = 1 if it existed. */
HL_EXTERN int hl_expsem_delete(int *out_existed, hl_expsem *sem);

/* A count-down latch (Redisson RCountDownLatch): the counter <name> and
 * the channel redisson_countdownlatch__channel__{name} ("0": opened, "1":
 * a count set). In a cluster, names may not contain '}'. */
typedef struct hl_latch hl_latch;

/* A handle for the latch called name (1 to 65536 bytes, binary). Does not
 * touch Redis. Returns HL_OK, HL_EINVAL (also a name with '}' in a
 * cluster), HL_ECLOSED, HL_EFORKED, HL_ENOMEM. */
HL_EXTERN int hl_latch_new(hl_latch **out, hl_client *client, const void *name,
                           size_t name_len);
/* Free the handle; the latch in Redis is untouched. NULL is ignored. No
 * other call may be using the handle. */
HL_EXTERN void hl_latch_free(hl_latch *latch);

/* Set the count (1 to 2^40) if none is set: *out_set (may be NULL) = 1 if
 * it was. A latch that opened (or was deleted) can be set again: it closes
 * for new waiters. */
HL_EXTERN int hl_latch_try_set_count(int *out_set, hl_latch *latch,
                                     int64_t count);

/* Count down by one; at zero the latch opens (deleted, "0" published) and
 * every waiter, in every process, wakes. *out_left (may be NULL) = the
 * count left (0 once open). Counting down an open latch changes nothing.
 * A count-down whose reply is lost is sent again with the same request
 * marker: it counts at most once. HL_EINDOUBT: sent and never confirmed
 * within the retry policy, it may or may not have counted (counting down
 * again could open the latch one count early); HL_EIO: nothing reached
 * Redis, count down again. */
HL_EXTERN int hl_latch_count_down(int64_t *out_left, hl_latch *latch);

/* *out = the count (0: open or never set). */
HL_EXTERN int hl_latch_count(int64_t *out, hl_latch *latch);

/* Wait until the count is 0, at most timeout_ms (-1 forever): *out_open =
 * 1 when it is, 0 when the time ran out. Woken by the "0" message, never
 * by polling. */
HL_EXTERN int hl_latch_wait(int *out_open, hl_latch *latch, int64_t timeout_ms,
                            hl_cancel *cancel);
/* The non-blocking form of hl_latch_wait(): a task whose result is 1 when
 * the latch opened, 0 when timeout_ms ran out. */
HL_EXTERN int hl_latch_wait_start(hl_task **out, hl_latch *latch,
                                  int64_t timeout_ms);

/* Delete the latch (waiters hear "1" and keep waiting): *out_existed. */
HL_EXTERN int hl_latch_delete(int *out_existed, hl_latch *latch);

/* ------------------------------------------------------------------------
 * The data grid: objects, values, and the kinds generated from one spec.
 *
 * An object (hl_object) is a name on a client with a kind: a bucket, an
 * atomic long, a bitset... (hilock/grid_kinds.h lists them, with each
 * kind's typed calls, generated from the specs in core/grid/; docs/grid.md
 * documents them). Every object has the common operations below; a kind
 * adds its own, each reachable two ways: a typed call
 * (hl_atomic_long_add_and_get()) and the generic hl_object_call() with
 * the operation's number (HL_OP_ATOMIC_LONG_ADD_AND_GET), which the
 * bindings use.
 *
 * Keys are Redisson's (docs/grid.md): a Java process sharing an object
 * gives Redisson a byte-exact codec (StringCodec, LongCodec,
 * ByteArrayCodec). Values are bytes in and hl_value out.
 *
 * No operation is applied twice. A command is sent again after a lost
 * reply only when running it twice leaves the same state (a SET, a read);
 * an operation that would count twice (an increment, a get-and-set, a
 * bit flip) whose reply is lost after it may have reached Redis fails
 * with HL_EINDOUBT: Redis may or may not have applied it, once.
 * ------------------------------------------------------------------------ */

/* An object of the grid: a kind and a name on a client. */
typedef struct hl_object hl_object;

/* A value out of the grid: owned by whoever received it, freed once with
 * hl_value_free() (values inside an array belong to the array). */
typedef struct hl_value hl_value;

/* What an hl_value holds. */
enum {
	HL_VALUE_NIL = 0,    /* nothing: an absent key or field */
	HL_VALUE_INT = 1,    /* a signed 64-bit integer (booleans are 0/1) */
	HL_VALUE_DOUBLE = 2, /* a double */
	HL_VALUE_BYTES = 3,  /* bytes (binary-safe, NUL-terminated too) */
	HL_VALUE_ARRAY = 4   /* values */
};

/* The type of v: HL_VALUE_*; HL_VALUE_NIL for NULL. */
HL_EXTERN int hl_value_type(const hl_value *v);
/* The integer of an HL_VALUE_INT (a double truncated; 0 otherwise). */
HL_EXTERN int64_t hl_value_int(const hl_value *v);
/* The double of an HL_VALUE_DOUBLE or HL_VALUE_INT (0 otherwise). */
HL_EXTERN double hl_value_double(const hl_value *v);
/* The bytes of an HL_VALUE_BYTES and *out_len (may be NULL) their length;
 * NULL and 0 for any other type. NUL-terminated; valid while v lives. */
HL_EXTERN const char *hl_value_bytes(const hl_value *v, size_t *out_len);
/* The number of elements of an HL_VALUE_ARRAY (0 otherwise). */
HL_EXTERN size_t hl_value_len(const hl_value *v);
/* Element i of an HL_VALUE_ARRAY, owned by the array; NULL out of range. */
HL_EXTERN const hl_value *hl_value_at(const hl_value *v, size_t i);
/* The elements of an HL_VALUE_ARRAY in one call, for bindings that convert
 * many values (a page of a scan, a get_all): lens (NULL, or hl_value_len(v)
 * entries) gets each element's length if it is HL_VALUE_BYTES, else
 * (size_t)-1 (read that one with hl_value_at); and, when buf is not NULL
 * and cap holds them all, the bytes of the HL_VALUE_BYTES elements are
 * copied to buf one after the other. Returns the total of those lengths,
 * so a first call with buf NULL sizes buf. 0 for any other type. */
HL_EXTERN size_t hl_value_gather(const hl_value *v, size_t *lens, char *buf,
                                 size_t cap);
/* Free v (and its elements). NULL is fine. */
HL_EXTERN void hl_value_free(hl_value *v);

/* What an hl_arg carries. */
enum {
	HL_ARG_BYTES = 0,  /* bytes, len: a value, a member, a name */
	HL_ARG_INT = 1,    /* i */
	HL_ARG_DOUBLE = 2, /* d */
	HL_ARG_NONE = 3    /* an optional argument left out */
};

/* One argument of hl_object_call(): bytes in, or a number the library
 * writes in the form Redisson writes it. */
typedef struct hl_arg {
	int type; /* HL_ARG_* */
	const void *bytes;
	size_t len;
	int64_t i;
	double d;
} hl_arg;

/* A new object of kind (HL_KIND_*) named name (1 to 65536 bytes,
 * binary-safe) on client; checks the name, and in a cluster that every key
 * of the kind hashes to one slot (they do: Redisson's {name} keys). No
 * round trip, except for the adders: they subscribe to their topic and
 * wait (the subscription timeout) until Redis confirmed it, as Redisson's
 * do (HL_ETIMEDOUT if not). The object keeps a reference to its client:
 * free it with hl_object_free(). Returns HL_OK, HL_EINVAL (unknown kind,
 * bad name), HL_ECLOSED, HL_EFORKED, HL_ENOMEM. Any thread. */
HL_EXTERN int hl_object_new(hl_object **out, hl_client *client, int kind,
                            const void *name, size_t name_len);
/* Free an object (NULL is fine). Nothing is sent; tasks it started go on. */
HL_EXTERN void hl_object_free(hl_object *obj);
/* The kind of obj (HL_KIND_*), or -1 for NULL. */
HL_EXTERN int hl_object_kind(const hl_object *obj);
/* The name of obj and *out_len its length (NULL for NULL). */
HL_EXTERN const char *hl_object_name(const hl_object *obj, size_t *out_len);
/* The kind's name ("bucket", "atomic_long"...), NULL for an unknown kind. */
HL_EXTERN const char *hl_kind_name(int kind);
/* The operation's name ("get", "add_and_get"...), NULL if unknown. */
HL_EXTERN const char *hl_op_name(int op);

/* Delete every key of obj (a Bloom filter's config too): *out_deleted
 * (may be NULL) = 1 if any existed. Returns HL_OK, HL_EINVAL, HL_ECLOSED,
 * HL_EFORKED, HL_EIO, HL_ECONNECT, HL_EREDIS. Any thread. */
HL_EXTERN int hl_object_delete(int *out_deleted, hl_object *obj);
/* *out_exists = 1 if obj's main key exists. Returns as hl_object_delete. */
HL_EXTERN int hl_object_exists(int *out_exists, hl_object *obj);
/* Let every key of obj expire in ttl_ms (1 to 2^40 ms): *out_set (may be
 * NULL) = 1 if the main key existed. Returns as hl_object_delete, and
 * HL_EINVAL for a ttl out of range. */
HL_EXTERN int hl_object_expire(int *out_set, hl_object *obj, int64_t ttl_ms);
/* Remove the expiry of every key of obj: *out_cleared (may be NULL) = 1 if
 * the main key had one. Returns as hl_object_delete. */
HL_EXTERN int hl_object_clear_expire(int *out_cleared, hl_object *obj);
/* *out_ms = the main key's time to live in ms: -1 when it has no expiry,
 * -2 when it does not exist. Returns as hl_object_delete. */
HL_EXTERN int hl_object_ttl(int64_t *out_ms, hl_object *obj);

/* Run operation op (HL_OP_*, one of obj's kind) with args (as many as the
 * operation takes; see docs/grid.md): *out (may be NULL) = its result, a
 * new value for the caller to free, typed as the operation says (a bool
 * is an HL_VALUE_INT 0/1, a count HL_VALUE_INT, bytes HL_VALUE_BYTES or
 * HL_VALUE_NIL when absent). Returns HL_OK; HL_EINVAL (NULL, an operation
 * of another kind, wrong arguments; the message says which);
 * HL_EINDOUBT (an operation that is not idempotent lost its reply after
 * it may have reached Redis: it ran once or not at all); HL_EREDIS (Redis
 * refused it, e.g. a key holding another type: the message names it);
 * HL_EIO, HL_ECONNECT, HL_ECLOSED, HL_EFORKED, HL_ENOMEM. Any thread. */
HL_EXTERN int hl_object_call(hl_value **out, hl_object *obj, int op,
                             const hl_arg *args, size_t nargs);
/* hl_object_call() within timeout_ms (-1: the command timeout alone) and
 * cancel (may be NULL; triggering it ends the call with HL_EINTERRUPTED,
 * and an operation that may have been sent then is HL_EINDOUBT unless it
 * is idempotent). */
HL_EXTERN int hl_object_call_ex(hl_value **out, hl_object *obj, int op,
                                const hl_arg *args, size_t nargs,
                                int64_t timeout_ms, hl_cancel *cancel);
/* Start hl_object_call() on an executor thread (the arguments are copied
 * now): its result is the call's status, and hl_task_value() its value.
 * Returns HL_OK, HL_EINVAL, HL_ENOMEM. Any thread. */
HL_EXTERN int hl_object_call_start(hl_task **out, hl_object *obj, int op,
                                   const hl_arg *args, size_t nargs);
/* The value a done task produced (hl_object_call_start()): *out, owned by
 * the task (valid until hl_task_free), NULL when it made none. Returns the
 * task's status as hl_task_result() does. */
HL_EXTERN int hl_task_value(const hl_value **out, hl_task *task);

/* Run a raw command (argv of argc byte strings) on the node that owns
 * route_key (NULL: argv[1], or any master for a keyless command), with
 * the client's retry policy: idempotent (1) commands are sent again after
 * a lost reply, others (0) fail with HL_EINDOUBT then. *out (may be NULL)
 * = the reply as a value (an error reply is HL_EREDIS with its text).
 * For tools (the hilock command) and one-off commands. Returns as
 * hl_object_call(). */
HL_EXTERN int hl_client_command(hl_value **out, hl_client *client, int argc,
                                const char *const *argv, const size_t *lens,
                                const void *route_key, size_t route_key_len,
                                int idempotent);

/* Run a blocking command (BLPOP, BRPOP, BLMOVE, BZPOPMIN, XREAD BLOCK...;
 * argv as hl_client_command(), its own timeout argument included) on a
 * connection set aside for blocking commands, so that waiting never takes
 * a connection other calls need. timeout_ms (-1: none) bounds the wait on
 * this side; when it runs out first, or cancel (may be NULL) is
 * triggered, hl_client_interrupt() is called or the client closes, the
 * command is unblocked (CLIENT UNBLOCK) and nothing it took is lost: if
 * it took something just before, that is returned (HL_OK) as if the wait
 * had not ended; else HL_ETIMEDOUT, HL_EINTERRUPTED or HL_ECLOSED. When
 * Redis's own timeout ends the wait, *out is its nil answer (HL_OK).
 * HL_EINDOUBT: the connection broke while the command waited (it may have
 * taken something that never arrived; a queue that must lose nothing
 * moves elements with BLMOVE into a list of its own instead of popping).
 * Returns as hl_client_command() otherwise. Any thread. */
HL_EXTERN int hl_client_command_blocking(hl_value **out, hl_client *client,
                                         int argc, const char *const *argv,
                                         const size_t *lens,
                                         const void *route_key,
                                         size_t route_key_len,
                                         int64_t timeout_ms, hl_cancel *cancel);

/* The masters client sends to, for a tool that visits each (SCAN on every
 * node): *out = an HL_VALUE_ARRAY of their addresses as bytes, "host:port"
 * ("[v6]:port", or a unix socket's path): every master of a cluster's
 * slot map as the client last loaded it, else the one master (the
 * sentinels' current one). No round trip. Returns HL_OK, HL_EINVAL,
 * HL_ECLOSED, HL_EFORKED, HL_ENOMEM. Any thread. */
HL_EXTERN int hl_client_masters(hl_value **out, hl_client *client);
/* hl_client_command() on the master named node (as hl_client_masters()
 * names it), not routed: no redirect is followed; on the client's pooled
 * connections. Returns as hl_client_command(), and HL_EINVAL when node is
 * none of the masters. */
HL_EXTERN int hl_client_command_node(hl_value **out, hl_client *client,
                                     const char *node, int argc,
                                     const char *const *argv,
                                     const size_t *lens, int idempotent);

#include "hilock/grid_kinds.h"

/* Poll from several blocking queues (Redisson's pollFromAny, BLPOP k1 k2
 * ...; docs/grid-blocking-queue.md): take the head of whichever of queue
 * and the nothers queues named others (other_lens their lengths; any
 * cluster slots; opened as queue's kind: HL_KIND_BLOCKING_QUEUE,
 * _BLOCKING_DEQUE or _BOUNDED_BLOCKING_QUEUE) has an element first,
 * waiting up to timeout_ms (0: no wait beyond one look of each queue's
 * take; -1: without bound). *out = an HL_VALUE_ARRAY [queue name,
 * element] (both bytes), or HL_VALUE_NIL when the time ran out. Nothing
 * is lost: one element is taken, as a take takes it (in flight until
 * acknowledged), and a queue that had one too keeps it; a cancel (cancel,
 * may be NULL; hl_client_interrupt) ends the call HL_EINTERRUPTED with
 * anything it took back at the head of its queue. Returns HL_OK,
 * HL_EINVAL (bad kind, names or timeout), HL_EINTERRUPTED, HL_ECLOSED,
 * HL_EFORKED, HL_EREDIS (a key of another type), HL_ENOMEM. Any thread. */
HL_EXTERN int hl_blocking_queue_poll_from_any(hl_value **out, hl_object *queue,
                                              const char *const *others,
                                              const size_t *other_lens,
                                              size_t nothers,
                                              int64_t timeout_ms,
                                              hl_cancel *cancel);
/* Its non-blocking form: a task (see "Tasks") whose value
 * (hl_task_value) is the blocking call's *out; hl_task_cancel gives back
 * what it took. Any number of them cost no thread each: every queue's
 * waiters share its one pump (one BLMOVE per queue and client). */
HL_EXTERN int hl_blocking_queue_poll_from_any_start(
        hl_task **out, hl_object *queue, const char *const *others,
        const size_t *other_lens, size_t nothers, int64_t timeout_ms);
/* A take's fast path, for a binding whose waits are tasks (Go): one look
 * at queue (a blocking queue, deque or bounded queue; last: the tail of a
 * deque) without waiting, on the calling thread. *out = the element,
 * taken as a take takes it (one script moves it into an in-flight list,
 * then the acknowledgement: nothing lost, docs/grid-blocking-queue.md);
 * HL_VALUE_NIL when the queue was empty (nothing of the look is left in
 * Redis); NULL, without a round trip, when this client's task takers of
 * the queue already wait in line (they come first: start a task). A
 * failure of the wire answers after one command timeout (an element the
 * look may have moved goes back after its lease). Returns HL_OK,
 * HL_EINVAL, HL_EIO, HL_ECONNECT, HL_ETIMEDOUT, HL_EINDOUBT, HL_ECLOSED,
 * HL_EFORKED, HL_EREDIS (a key of another type), HL_ENOMEM. Any thread. */
HL_EXTERN int hl_blocking_queue_try_take(hl_value **out, hl_object *queue,
                                         int last);

/* The rate limiter's waits (docs/grid-rate-limiter.md). Take permits
 * (1 to 2^32-1, at most the rate), waiting up to timeout_ms (-1: as long
 * as it takes, 0: one attempt), sleeping between attempts the delay Redis
 * answers (never past the wait's end: a permit that is free only later
 * ends the wait at once). *out_acquired = 1 or 0; *retry_after_ms (may be
 * NULL) = 0 when taken, else the milliseconds until a permit may be free
 * (go-redis's RetryAfter). A lost reply is safe: the resend is recognised
 * and takes nothing more. cancel (may be NULL) ends the wait
 * (HL_EINTERRUPTED). Returns HL_OK, HL_EINVAL (bad permits or timeout,
 * more permits than the rate, no rate set), HL_EINTERRUPTED, HL_ECLOSED,
 * HL_EFORKED, HL_EIO, HL_EREDIS. */
HL_EXTERN int hl_rate_limiter_try_acquire_ex(int *out_acquired,
                                             int64_t *retry_after_ms,
                                             hl_object *obj, int64_t permits,
                                             int64_t timeout_ms,
                                             hl_cancel *cancel);
/* The same as a task (no thread waits: the client's executors make the
 * attempts); hl_task_result() gives acquired (1 or 0). */
HL_EXTERN int hl_rate_limiter_try_acquire_start(hl_task **out, hl_object *obj,
                                                int64_t permits,
                                                int64_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_H */
