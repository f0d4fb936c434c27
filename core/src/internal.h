/*
 * Private declarations shared by the core's translation units: the client
 * and the router, the services and the primitives. Nothing here is part of
 * the ABI, and nothing here includes the RESP library (transport/ alone does).
 */
#ifndef HL_INTERNAL_H
#define HL_INTERNAL_H

#include "base/base.h"
#include "transport/transport.h"

#include "service/scripts.h"

/* ---- the client (client.c) ---------------------------------------------- */
/* A pooled command connection: to one node, made in one topology epoch. */
/* Idle connections kept for blocking commands. */
#define HL_BLOCKING_IDLE 8

typedef struct hl_pool_conn {
	hl_conn *conn;
	int busy;
	hl_addr addr;
	uint64_t epoch;
} hl_pool_conn;

/* A master's connected replicas as last learnt (INFO replication), for
 * WAIT (router.c wait_count): n, -1 when not known; at_ms, when it was
 * learnt or last asked again (hl__now_ms). Under topo_mu. */
typedef struct hl_replica_count {
	int n;
	int64_t at_ms;
} hl_replica_count;

/* A connection dropped while a command that changes state may still be on
 * its way to Redis (a delayed packet): killed from another connection
 * before this client sends anything else, so nothing it carried can land
 * after a later command. */
typedef struct hl_fence {
	long long id;
	char addr[64]; /* the connection as the server saw it */
	hl_addr node;  /* the server */
} hl_fence;
#define HL_FENCE_MAX 16

struct hl_hold;
struct hl_event;

/* ---- observability (service/observe.c) ----------------------------------
 * The client's counters (atomics, bumped where each thing happens) and its
 * event queue (under mu, a leaf: taken under any other client mutex, and
 * nothing is taken under it). */
enum hl_stat {
	HL_STAT_ACQUISITIONS,
	HL_STAT_ACQUIRE_WAITS,
	HL_STAT_WAIT_TIME_MS,
	HL_STAT_RELEASES,
	HL_STAT_RENEWALS,
	HL_STAT_RENEWAL_FAILURES,
	HL_STAT_LOSSES,
	HL_STAT_RECONNECTS,
	HL_STAT_FAILOVERS,
	HL_STAT_EVENTS_DROPPED,
	HL_STAT_WAITING, /* a gauge: up and down */
	HL_STAT_WAKEUPS_READ_BY_WAITER,
	HL_STAT_COUNT
};

#define HL_OBS_NODES 16

typedef struct hl_obs {
	atomic_uint_fast64_t counters[HL_STAT_COUNT];
	pthread_mutex_t mu;
	struct hl_event *head, *tail; /* the queue, oldest first */
	size_t queued;
	hl_notify fd; /* readable while queued or closed; not open until
	                 asked for */
	int closed;   /* hl_client_close() ran */
	/* Servers a connection to broke, and how many were not made again
	 * yet: the next connection made there is a reconnect. */
	struct hl_obs_node {
		hl_addr node;
		int pending;
		char why[200]; /* what broke the first of them */
	} nodes[HL_OBS_NODES];
	int nnodes;
	/* Cluster: the masters as last known (a map, or a MOVED), to tell a
	 * master replaced from slots moving between masters. */
	hl_addr *masters;
	int nmasters;
	int masters_known; /* a first map was loaded */
} hl_obs;
struct hl_task;

struct hl_client {
	atomic_int refs; /* the user's reference + one per lock handle */
	unsigned fork_gen;
	char id[HL_UUID_LEN + 1];
	hl_conf conf;

	/* lifecycle */
	pthread_mutex_t life_mu;
	pthread_cond_t life_cond;
	int closed; /* under life_mu; also read atomically below */
	atomic_int closing;
	int active;       /* calls inside the client, under life_mu */
	int threads_live; /* subscriber + watchdog started */

	/* script hashes (40 hex + NUL), filled at connect */
	char sha[HL_SCRIPT_COUNT][41];

	/* the topology (router/): the master as last learnt, and an epoch
	 * that every change bumps, so each connection owner (pool,
	 * subscriber, watchdog) notices and reconnects. Under topo_mu. */
	pthread_mutex_t topo_mu;
	hl_addr master;
	atomic_uint_fast64_t topo_epoch;
	/* connected replicas of the master in this epoch, for WAIT */
	hl_replica_count master_replicas;
	hl_addr *replicas; /* known replicas (read routing) */
	int nreplicas;
	unsigned replica_rr; /* round robin among them */
	int topo_stop;
	int topo_thread_live;
	pthread_t topo_thread; /* sentinel: follows +switch-master */
	hl_notify topo_wake;   /* stops it at once */
	/* cluster: the master of each slot (an index into cnodes; 0xffff:
	 * not known), the known masters with their connected replicas (for
	 * WAIT; -1 not known), and whether pub/sub is sharded (Redis 7:
	 * SSUBSCRIBE and SPUBLISH, as Redisson does). Under topo_mu. */
	uint16_t *slots;
	struct hl_cnode {
		hl_addr addr;
		hl_replica_count replicas;
	} * cnodes;
	int ncnodes;
	int sharded;
	int64_t refreshed_ms; /* last slot map refresh (rate limit) */

	/* command connection pool */
	/* blocking commands' idle connections (service/blocking.c) */
	pthread_mutex_t block_mu;
	hl_pool_conn block_idle[HL_BLOCKING_IDLE];
	int block_nidle;

	pthread_mutex_t pool_mu;
	pthread_cond_t pool_cond;
	hl_pool_conn *pool;
	int pool_waiting;
	hl_fence fences[HL_FENCE_MAX]; /* pending, under pool_mu */
	int nfences;
	int fence_off;  /* the server refused CLIENT KILL: no fencing */
	int fence_told; /* HL_EVENT_FENCING_OFF was queued */

	/* waiting: subscriptions, per-name gates (pubsub.c), and the
	 * operation engine (task.c), all under wait_mu */
	pthread_mutex_t wait_mu;
	hl_map subs;
	hl_map gates;
	atomic_uint_fast64_t interrupt_gen; /* hl_client_interrupt() */
	struct hl_engine *engine;           /* task.c */
	/* Handoff hints: a name this client just freed while other processes
	 * were subscribed to it, and until when (monotonic us) its own next
	 * acquire holds back so one of them can take it. Direct-mapped by
	 * name hash, under wait_mu. */
	struct hl_handoff {
		uint64_t hash;
		int64_t until_us;
	} handoff[64];
	pthread_t sub_thread;
	hl_notify sub_wake; /* the subscriber thread polls it */
	/* the subscriber's connections: one per node in a cluster (sharded
	 * pub/sub), else one to the master; only the subscriber thread
	 * changes them, under wait_mu */
	struct hl_subconn *subconns;
	int nsubconns;
	int sub_map_stale; /* a channel's slot was not in the map */

	/* holds and the watchdog (watchdog.c) */
	pthread_mutex_t hold_mu;
	pthread_cond_t hold_cond;    /* lost or released: wakes wait_lost */
	pthread_cond_t wd_cond;      /* wakes the watchdog thread */
	hl_map holds;                /* key: owner id (8 bytes) + name */
	uint64_t hold_interrupt_gen; /* hl_client_interrupt, for wait_lost */
	struct hl_hold **heap;       /* by next renewal/expiry */
	size_t heap_len, heap_cap;
	uint64_t hold_seq; /* hold epochs */
	int wd_stop;
	int64_t wd_sleep_until; /* INT64_MIN while the watchdog is awake */
	pthread_t wd_thread;
	/* the watchdog's connections (service/watchdog.c): to the master,
	 * or in a cluster one per master renewals went to, each with the
	 * renewals sent on it whose replies are still to come (several may
	 * be in flight); only the watchdog thread uses them */
	struct hl_wd_link *wd_links;
	void *renew_items; /* the watchdog's batch buffer, grown on demand */
	size_t renew_cap;
	hl_notify wd_wake; /* wakes the watchdog from its poll */
	int wd_wake_ok;    /* wd_wake was made */
	int wd_polling;    /* the watchdog waits in poll(), not on wd_cond */

	/* semaphores: the permits this client took and has not given back,
	 * by name (int64_t values), under hold_mu (semaphore.c) */
	hl_map permits;

	/* per (kind, name) state of the kinds that keep some in the client
	 * (service/registry.c), under reg_mu */
	pthread_mutex_t reg_mu;
	hl_map registry;

	struct hl_client *next_live; /* global list, for thread exits */

	hl_obs obs; /* counters and events (service/observe.c) */
};

/* A lock handle: a name, a kind (HL_LOCK_*) and the keys and channel the
 * kind derives from the name (PROTOCOL 0.2). */
struct hl_lock {
	hl_client *client;
	uint64_t owner_id; /* 0: the calling thread */
	int kind;          /* HL_LOCK_* */
	size_t name_len;
	char *name;
	size_t channel_len;
	char *channel; /* the kind's channel; the fair lock's waiters each
	                  listen on channel:<owner> */
	/* the kind's other keys: fair: queue, timeouts; fenced: token;
	 * read/write: the key prefix {name} */
	char *aux[2];
	size_t aux_len[2];
	/* spin lock: the back-off between attempts */
	int64_t backoff_initial_ms, backoff_max_ms;
	int backoff_multiplier;
};

/* The hold classes: the holds of one owner on one name that are distinct
 * (the read and the write half of a read-write lock); every other kind
 * shares the plain owner field, and so one hold. */
enum { HL_CLASS_PLAIN = 0, HL_CLASS_READ = 1, HL_CLASS_WRITE = 2 };
int hl__kind_class(int kind);
/* The hash field of owner on lock: the owner, or owner:write. */
#define HL_FIELD_MAX (HL_OWNER_MAX + 6)
size_t hl__lock_field(char *buf, const hl_lock *lock, const char *owner);
/* The hold key's header: the 8-byte owner id and the class. */
#define HL_HOLD_KEY_HDR 9

/* A bound for a call on c: deadline_ms and cancel, and c's close and
 * hl_client_interrupt() (interruptible: 0 for work that is not a wait). */
void hl__bound_init(hl_bound *b, hl_client *c, int64_t deadline_ms,
                    hl_cancel *cancel, int interruptible);

/* Enter/leave a public call: checks NULL, fork and close. */
int hl__client_enter(hl_client *client);
void hl__client_leave(hl_client *client);
void hl__client_unref(hl_client *client);

/* How a command may be retried. */
enum {
	/* Running it twice leaves the same state as once: resent after a
	 * connection broke with it possibly in flight. */
	HL_CMD_IDEMPOTENT = 1,
	/* It changes state: a connection dropped with it possibly in flight
	 * is fenced (CLIENT KILL from the next connection, before anything
	 * else this client sends), so a copy delayed in the network can never
	 * land after a later command. On a master with replicas it is
	 * followed by WAIT (see hl_client_options.wait_replicas). */
	HL_CMD_WRITE = 2,
	/* It only reads: it may go to a replica (read_from). */
	HL_CMD_READ = 4
};

/* Run one command (argv form) on a pooled connection, with the retry
 * policy: reconnect and retry while nothing was sent, or also after a
 * possible send when HL_CMD_IDEMPOTENT; every attempt, reconnect and pause
 * within the bound b (NULL: the command timeout and retry policy alone).
 * *out is a reply (possibly an error reply) to freeReplyObject. *sent (may
 * be NULL) says whether an attempt that failed may have run the command:
 * on failure, whether it may have run at all; on success, whether it may
 * have run before the attempt that answered. */
int hl__command(hl_client *c, hl_reply **out, int argc, const char **argv,
                const size_t *lens, int flags, enum hl_sent *sent,
                const hl_bound *b);
/* hl__command, and for an HL_CMD_WRITE given replicated (not NULL) on a
 * master with replicas, WAIT in the same round trip: *replicated = the
 * replicas that confirmed it (0: none did, although some are connected),
 * or -1 when no WAIT was needed. */
int hl__command_ex(hl_client *c, hl_reply **out, int argc, const char **argv,
                   const size_t *lens, int flags, enum hl_sent *sent,
                   const hl_bound *b, int *replicated);
/* hl__command_ex routed by key (NULL: any master; a keyless command in a
 * cluster fails) instead of the command's own key. */
int hl__command_at(hl_client *c, hl_reply **out, int argc, const char **argv,
                   const size_t *lens, int flags, enum hl_sent *sent,
                   const hl_bound *b, int *replicated, const char *key,
                   size_t keylen);
/* One command on node a as it is (not routed, no redirect followed, not
 * sent again), on a pooled connection to it; a broken one is dropped. */
int hl__command_on_node(hl_client *c, hl_reply **out, int argc,
                        const char **argv, const size_t *lens,
                        enum hl_sent *sentp, const hl_bound *b,
                        const hl_addr *a);
/* When (monotonic ms) this thread last sent a command through
 * hl__command_ex: the attempt that answered, after any resends. A script
 * that set a lease set it no earlier than this. */
extern _Thread_local int64_t hl__tl_sent_ms;
/* Set to 1 by hl__command (never cleared there) when Redis sent anything
 * back during a round trip, even one that then failed (a reply came but
 * not the WAIT after it). An acquire clears it before an attempt: an
 * attempt that timed out having heard from Redis was not an outage. */
extern _Thread_local int hl__tl_heard;
/* EVALSHA with NOSCRIPT fallback to EVAL (replicated: as hl__command_ex). */
int hl__eval(hl_client *c, hl_reply **out, enum hl_script_id id, int nkeys,
             int nargs, const char **args, const size_t *lens, int flags,
             enum hl_sent *sent, const hl_bound *b, int *replicated);
/* Run a blocking command (BLPOP, BLMOVE...) routed by key (NULL: the
 * master; refused in a cluster) on a connection of its own (service/
 * blocking.c), waiting up to wait_ms (the command's own timeout; -1: none)
 * plus the command timeout for its answer. When b stops it first (cancel,
 * interrupt, close, b's deadline) the command is unblocked (CLIENT
 * UNBLOCK) and its answer read: nil gives b's status; what it took before
 * gives HL_OK and *out, the caller's. *sent (may be NULL) = HL_SENT_MAYBE
 * when it failed with what it took unknown. */
int hl__blocking_command(hl_client *c, hl_reply **out, int argc,
                         const char **argv, const size_t *lens, const char *key,
                         size_t keylen, int64_t wait_ms, const hl_bound *b,
                         enum hl_sent *sent);
/* hl__blocking_command; and when it fails with *sent HL_SENT_MAYBE on a
 * broken connection (not a stop of b), *settled (may be NULL) = 1 if that
 * connection was then killed on its node (CLIENT KILL ID): whatever it
 * took, it took already; nothing it carried can run later. */
int hl__blocking_command_ex(hl_client *c, hl_reply **out, int argc,
                            const char **argv, const size_t *lens,
                            const char *key, size_t keylen, int64_t wait_ms,
                            const hl_bound *b, enum hl_sent *sent,
                            int *settled);
void hl__blocking_init(hl_client *c);
/* Close the idle connections (no lock taken: at close, or in a child). */
void hl__blocking_free(hl_client *c);
/* Wait up to ms, returning early when the bound stops the call (its
 * status) or the client closes. */
int hl__pause(hl_client *c, int64_t ms, const hl_bound *b);
/* ---- the router (router/) -------------------------------------------------
 * Where commands go. hl__command routes by the command's key: the master
 * for every write (single server, sentinel, master-replica); a replica for
 * reads when read_from says so. Error replies that concern routing
 * (READONLY, LOADING, MASTERDOWN, TRYAGAIN, CLUSTERDOWN) are handled there:
 * the topology is refreshed and the command sent again where that is safe.
 */
/* Find the master (asking the sentinels for a sentinel URL), open the first
 * connection, load the scripts; start the sentinel watcher. */
int hl__router_start(hl_client *c);
/* Start following the topology (sentinel), once the subscriber and the
 * watchdog run. */
int hl__router_watch(hl_client *c);
void hl__router_stop(hl_client *c);
/* The master's address and the topology epoch it belongs to. */
void hl__router_master(hl_client *c, hl_addr *out, uint64_t *epoch);
/* The topology epoch: it changes whenever the master does. */
uint64_t hl__router_epoch(hl_client *c);
/* A connection to the master failed or was refused (READONLY...): learn
 * the topology again (asks the sentinels, or reloads the cluster's slot
 * map; a no-op for a fixed topology). */
void hl__router_suspect(hl_client *c, const hl_bound *b);
/* Cluster: the node serving key's slot, and the topology epoch. HL_OK, or
 * an error when no node is known for it (the map is loaded again). */
int hl__router_node_for_key(hl_client *c, const void *key, size_t len,
                            hl_addr *out, uint64_t *epoch, const hl_bound *b);
/* The same from the map as it is, without loading it: -1 if unknown. */
int hl__router_node_cached(hl_client *c, const void *key, size_t len,
                           hl_addr *out, uint64_t *epoch);
/* The publish command of this deployment: "SPUBLISH" in a Redis 7
 * cluster (sharded pub/sub, as Redisson uses there), else "PUBLISH". */
const char *hl__router_publish(hl_client *c);
/* Open a data connection to node a. */
int hl__router_connect(hl_client *c, const hl_addr *a, hl_conn **out,
                       const hl_bound *b);
/* Open a data connection to the master (for the subscriber and the
 * watchdog); *epoch (may be NULL) gets the epoch it belongs to. */
int hl__router_connect_master(hl_client *c, hl_conn **out, uint64_t *epoch,
                              const hl_bound *b);
/* One round trip of one command (C-string arguments, at most 8) on conn,
 * within the command timeout and b. */
int hl__router_one(hl_client *c, hl_conn *conn, hl_reply **out, int argc,
                   const char **argv, const hl_bound *b);
/* Load every script on conn (SCRIPT LOAD), keeping their hashes. */
int hl__load_scripts(hl_client *c, hl_conn *conn, int64_t timeout_ms);
/* Cluster (router/cluster.c): load the slot map; a MOVED; the replica
 * count of the master at a (caller holds topo_mu; NULL: a is no master of
 * the map). */
int hl__cluster_refresh(hl_client *c, const hl_bound *b);
void hl__cluster_moved(hl_client *c, unsigned slot, const hl_addr *to);
hl_replica_count *hl__cluster_replica_count(hl_client *c, const hl_addr *a);
/* Turn an error reply into a status (HL_EREDIS) with its text. */
int hl__reply_error(const hl_reply *r, const char *what);

/* For compositions of locks (prim/multi.c): a copy of lock's handle (its
 * kind, owner and back-off; a reference of its client); hl_lock_try_acquire,
 * hl_lock_try_acquire_start and hl_lock_release for owner_id
 * (hl__effective_owner() as it was when the composition began), the
 * acquire's task telling parent when done (NULL: none), the release
 * within deadline_ms (-1: the retry policy and the hold's lease). */
int hl__lock_clone(hl_lock **out, const hl_lock *lock);
/* HL_OK for a lease of -1 (the watchdog) or 1 to 2^40 ms, else HL_EINVAL
 * with the rule in the message. */
int hl__check_lease(int64_t lease_ms);
int hl__lock_try_acquire_as(int *out_acquired, hl_lock *lock, uint64_t owner_id,
                            int64_t wait_ms, int64_t lease_ms,
                            hl_cancel *cancel);
int hl__lock_try_acquire_start_as(struct hl_task **out, hl_lock *lock,
                                  uint64_t owner_id, int64_t wait_ms,
                                  int64_t lease_ms, struct hl_task *parent);
int hl__lock_release_as(int *out_released, hl_lock *lock, uint64_t owner_id,
                        int64_t deadline_ms);
/* hl__lock_release_as() of one hold only: the one whose identity is epoch
 * (hl__hold_epoch() when it was taken; 0: whatever hold owner has). If the
 * owner's hold is another one (that hold ended, and the owner took the lock
 * again since), nothing is sent and it answers HL_ELOST: the hold it was
 * for is over, and the newer one is left alone. With no record of a hold,
 * as hl__lock_release_as(). */
int hl__lock_release_hold(int *out_released, hl_lock *lock, uint64_t owner_id,
                          uint64_t epoch, int64_t deadline_ms);

/* Owner string of the calling thread or the explicit owner. */
uint64_t hl__effective_owner(const hl_lock *lock);
size_t hl__owner_string(char *buf, const hl_client *c, uint64_t owner_id);

extern atomic_uint hl__fork_generation;

/* ---- cancel (cancel.c) -------------------------------------------------- */
/* A blocked call registers (its mutex, its condition) so a trigger can wake
 * it. Register before taking mu; unregister after releasing it. */
typedef struct hl_cancel_reg {
	struct hl_cancel_reg *next;
	pthread_mutex_t *mu;
	pthread_cond_t *cond;
	/* set (under mu) while the waiter polls instead of waiting on cond:
	 * a trigger sets it too (NULL: none) */
	const hl_notify *notify;
} hl_cancel_reg;

void hl__cancel_register(hl_cancel *cancel, hl_cancel_reg *reg);
void hl__cancel_unregister(hl_cancel *cancel, hl_cancel_reg *reg);

/* ---- waiting (pubsub.c) ------------------------------------------------- */
enum { HL_SUB_NONE = 0, HL_SUB_PENDING, HL_SUB_ACTIVE, HL_SUB_UNSUB };

typedef struct hl_sub {
	int refs;
	int state; /* HL_SUB_* */
	int conn;  /* 1 + the index of the subscriber connection it is on
	              (0: none) */
	uint64_t gen;
	uint64_t zero_gen;   /* messages "0" received (the latch opened) */
	uint64_t active_gen; /* times it became active (made anew after a
	                        reconnect or a failover) */
	hl_dlist waiters;    /* the tasks waiting on it (task.c) */
	struct hl_listener *listeners; /* payload listeners (pubsub.c) */
	int no_linger;    /* its last listener went: unsubscribe at once */
	int64_t woke_us;  /* hl__now_us() of the last hl__pubsub_wake()
	                     (a message, becoming active, a reset) */
	int64_t event_us; /* the same, not counting messages */
	int64_t msg_us;   /* hl__now_us() of the last message, */
	size_t msg_len;   /* its payload (the first bytes) */
	char msg[24];
	int64_t idle_since; /* monotonic ms when refs last fell to 0: an
	                       active subscription nobody wants lingers for
	                       HL_SUB_LINGER_MS (pubsub.c) */
	size_t len;
	char channel[];
} hl_sub;

typedef struct hl_gate {
	hl_dlist queue; /* the tasks queued for the name, FIFO: the head
	                   competes (task.c) */
	size_t len;
	char name[];
} hl_gate;

int hl__pubsub_start(hl_client *c);
void hl__pubsub_stop(hl_client *c);
/* In a child after fork(): close the inherited subscriber sockets. */
void hl__pubsub_drop_inherited(hl_client *c);
/* Wake the subscriber thread (new or dropped interest). */
void hl__pubsub_kick(hl_client *c);
/* A blocking waiter reads the subscriber connection of its subscription s
 * itself while it waits (it polls that descriptor and n, which is set to
 * wake it), so the message that wakes it costs no hop through the
 * subscriber thread, which leaves that connection's reads to it
 * meanwhile. Returns the connection's index and its descriptor in *fd, or
 * -1: no connection to lead (not connected, or another waiter leads it). Caller
 * holds wait_mu; hl__pubsub_unlead ends it. */
int hl__pubsub_lead(hl_client *c, const hl_sub *s, const void *waiter,
                    const hl_notify *n, int *fd);
/* The end of a lead: read and dispatch what came (as the subscriber thread
 * does), then give the connection back to the subscriber thread. Caller
 * holds wait_mu. */
void hl__pubsub_unlead(hl_client *c, int k, const void *waiter);
/* Wake local waiters of a channel (after our own unlock). */
void hl__pubsub_notify_local(hl_client *c, const char *channel, size_t len);
/* Wake the waiters of one subscription (caller holds wait_mu). */
void hl__pubsub_wake(hl_sub *s);
/* A message on s (msg, len): wake the waiters it is for (see
 * hl_wait_ops.wants), every waiter if none of them chooses. Caller holds
 * wait_mu. */
void hl__pubsub_message(hl_sub *s, const char *msg, size_t len);
/* Wake every waiter (close, interrupt): hl_client_interrupt() stops the
 * waits pending now, a close every one. */
void hl__pubsub_wake_all(hl_client *c);
/* 1 if the subscription to channel is active (confirmed by the server), 0
 * if not; *zero_gen gets how many "0" messages it received, *active_gen
 * how many times it became active. */
int hl__pubsub_active(hl_client *c, const char *channel, size_t len,
                      uint64_t *zero_gen, uint64_t *active_gen);

/* Payload listeners: fn(arg, payload, len) runs on the subscriber thread
 * with wait_mu held for every message on the channel (it must not block:
 * hand work to the executors, hl__task_background_locked()). A listener
 * holds the subscription; hl__pubsub_listen_wait() waits until Redis
 * confirmed it. After hl__pubsub_unlisten() the subscription goes at once
 * (no lingering), but until Redis confirmed that (or the connection went)
 * the listener still gets the channel's messages, so that a publisher that
 * counted this client as a receiver gets its answer; then, or when a new
 * listener of the channel comes, done(arg) runs (under wait_mu) and fn is
 * never called again. */
typedef void (*hl_listen_fn)(void *arg, const char *payload, size_t len);
typedef struct hl_listener hl_listener;
int hl__pubsub_listen(hl_listener **out, hl_client *c, const void *channel,
                      size_t len, hl_listen_fn fn, void (*done)(void *arg),
                      void *arg);
/* The same, and active(arg) (NULL: none) runs under wait_mu whenever the
 * subscription becomes active: confirmed at first, again after every
 * reconnect or failover that made it anew, and at once when it is active
 * already (a catch-up after a time nothing could be heard). */
int hl__pubsub_listen_ex(hl_listener **out, hl_client *c, const void *channel,
                         size_t len, hl_listen_fn fn, void (*active)(void *arg),
                         void (*done)(void *arg), void *arg);
void hl__pubsub_unlisten(hl_client *c, hl_listener *l);
/* The same, the caller holding wait_mu. */
void hl__pubsub_unlisten_locked(hl_client *c, hl_listener *l);
/* Wait within b until channel's subscription is active: HL_OK, or
 * HL_ETIMEDOUT (the message says so), or b's status. */
int hl__pubsub_listen_wait(hl_client *c, const void *channel, size_t len,
                           const hl_bound *b);

/* ---- the registry (registry.c) -------------------------------------------
 * State a kind keeps per (kind, name) in a client (an adder's local sums
 * and its listener), so the client struct has no per-kind field. Values
 * are the kind's; ops->close runs when the client closes (before anything
 * stops: it may still make round trips), ops->free when the client's
 * memory goes with the entry still there. Lock order: reg_mu before
 * wait_mu. */
typedef struct hl_reg_ops {
	void (*close)(void *value);
	void (*free)(void *value);
} hl_reg_ops;
void hl__registry_init(hl_client *c);
void hl__registry_lock(hl_client *c);
void hl__registry_unlock(hl_client *c);
/* Caller holds reg_mu. */
void *hl__registry_get(hl_client *c, int kind, const void *name, size_t len);
int hl__registry_put(hl_client *c, int kind, const void *name, size_t len,
                     void *value, const hl_reg_ops *ops);
void hl__registry_del(hl_client *c, int kind, const void *name, size_t len);
void hl__registry_close_all(hl_client *c);
void hl__registry_free_all(hl_client *c);

/* ---- holds and the watchdog (watchdog.c) --------------------------------
 * A hold is this client's record of one owner holding one name: how many
 * holds the caller was told it got (never more: a hold Redis has that the
 * caller was not given, from an acquire whose reply was lost, is not
 * adopted), the lease, and whether it is lost. Lock-changing operations of
 * one owner on one name run one at a time (busy), so the count an
 * operation sends is exact and a retried script cannot interleave with the
 * next one. */
typedef struct hl_hold {
	uint64_t owner_id;
	int thread_owner; /* owner is a thread's default id */
	int64_t count;    /* holds the caller got (0: first acquire running) */
	int busy;         /* an acquire or release is in flight */
	int64_t lease_ms; /* lease of the last acquisition (-1: watchdog) */
	int watchdog;     /* renewed by the watchdog */
	int64_t expires_ms;   /* lease holds: when Redis drops it (monotonic) */
	int64_t confirmed_ms; /* sending time of the last command Redis
	                         confirmed set the lease */
	int64_t sent_max_ms;  /* sending time of the last command that may
	                         have set it (a renewal without an answer) */
	int64_t due_ms;       /* next renewal or expiry check */
	int64_t renew_at;     /* watchdog holds: when the next renewal goes */
	size_t heap_index;    /* SIZE_MAX: not in the heap */
	uint64_t epoch;       /* identity of this hold in Redis (hold_seq) */
	int lost;
	hl_notify lost_fd; /* hl_lock_lost_fd(); not open until asked */
	int read;          /* a read hold: renewed with its timeout keys */
	int64_t token;     /* fenced lock: the token of the last acquisition */
	int renew_failing; /* renewals without an answer since the last
	                      confirmed one (service/observe.c) */
	int renew_ask;     /* a cluster: its slot answered ASK (it migrates):
	                      renewed through the router, which follows it */
	char owner[HL_OWNER_MAX];
	char field[HL_FIELD_MAX]; /* its hash field: owner, or owner:write */
	size_t key_len;
	char key[]; /* owner id (8 bytes) + name */
} hl_hold;

/* One lock-changing operation, from hl__op_begin to its end. */
typedef struct hl_op {
	hl_hold *hold;    /* busy while the operation runs */
	int64_t count;    /* the caller's holds when it began (0 if lost) */
	int lost;         /* the caller's hold had ended without a release:
	                     found lost, or its fixed lease ran out */
	int known;        /* this client had a record of the hold */
	int64_t lease_ms; /* the lease to keep on a partial release */
	int64_t token;    /* fenced lock: set by the acquire */
	uint64_t epoch;   /* the hold's identity when it began (0: none) */
	int64_t begin_ms; /* when it began (before anything was sent) */
	int lease_reset;  /* set by a partial release that Redis confirmed:
	                     it set the lease again (PEXPIRE) */
} hl_op;

int hl__watchdog_start(hl_client *c);
void hl__watchdog_stop(hl_client *c);
/* Wake the watchdog thread (the topology changed: reconnect). */
void hl__watchdog_kick(hl_client *c);
/* A child after fork(): drop the watchdog's inherited connections. */
void hl__watchdog_drop_inherited(hl_client *c);
/* How long before the end of its lease a hold that could not be renewed
 * counts as lost, so that the holder knows before anyone else can take
 * the lock. */
int64_t hl__loss_margin(int64_t lease_ms);

/* Begin an acquire or release of owner on lock: waits (within b) while
 * another of the same owner and name runs. */
int hl__op_begin(hl_op *op, hl_client *c, const hl_lock *lock, uint64_t owner,
                 const hl_bound *b);
/* End it: nothing changed. */
void hl__op_end(hl_client *c, hl_op *op);
/* End it: acquired, the count is now op->count + 1. */
int hl__op_acquired(hl_client *c, hl_op *op, int64_t lease_ms, int64_t sent_ms);
/* End it: one hold released, others remain (count - 1). */
void hl__op_released_one(hl_client *c, hl_op *op);
/* End it: the hold is over for this client (released, lost, not held,
 * or left to its lease). */
void hl__op_gone(hl_client *c, hl_op *op);
/* When Redis drops the op's hold at the latest if nothing renews it. */
int64_t hl__op_hold_ends(hl_client *c, hl_op *op);
/* A final release is about to be sent: stop renewing now, whatever it
 * answers (Redisson does the same). */
void hl__op_stop_renewal(hl_client *c, hl_op *op);
/* The count owner holds of lock as far as this client knows (0 if none,
 * lost or expired); *token (may be NULL) gets the hold's fencing token. */
int64_t hl__hold_peek(hl_client *c, const hl_lock *lock, uint64_t owner,
                      int64_t *token);
/* The identity (hl_hold_state.epoch) of owner's hold of lock this client
 * has a record of, lost or not; 0 if none. */
uint64_t hl__hold_epoch(hl_client *c, const hl_lock *lock, uint64_t owner);
/* This client force-unlocked lock: every hold it had of it is lost. */
void hl__holds_force_unlocked(hl_client *c, const hl_lock *lock);
/* Stop renewing and forget every hold of owner (a thread that exited). */
void hl__holds_drop_owner(hl_client *c, uint64_t owner_id);
void hl__holds_free_all(hl_client *c);
/* Free the semaphores' permit counts (semaphore.c). */
void hl__permits_free_all(hl_client *c);
/* For the adders (prim/semaphore.c): give permits of sem in Redis without
 * this client having taken them (each resend carries the same marker);
 * forget the permits this client counts as taken of sem. */
int hl__semaphore_give(hl_semaphore *sem, int64_t permits, const hl_bound *b);
void hl__semaphore_forget(hl_semaphore *sem);

/* ---- observability (service/observe.c) ----------------------------------
 * One-line hooks, called where each thing happens. None of them takes
 * another client mutex, fails, or touches the thread's error detail
 * (hl_error_last). */
void hl__obs_init(hl_client *c);
/* hl_client_close(): the event fd becomes readable for good. */
void hl__obs_close(hl_client *c);
/* The client's memory goes (forked: a copy another process's threads may
 * have been using, not locked). */
void hl__obs_free(hl_client *c, int forked);
/* Add n to a counter. */
void hl__stat_add(hl_client *c, enum hl_stat s, uint64_t n);
/* An acquire that had to wait stops waiting (it began at since_ms). */
void hl__obs_waited(hl_client *c, int64_t since_ms);
/* Hold h is about to be marked lost (caller holds hold_mu; nothing if it
 * already is). */
void hl__obs_lost(hl_client *c, struct hl_hold *h);
/* A release found that Redis no longer had a hold this client knew of. */
void hl__obs_lost_at_release(hl_client *c, const hl_lock *lock,
                             const char *owner);
/* An acquire nobody received may have left a hold of owner on lock in
 * Redis: status HL_EINDOUBT when taking it back failed and goes on in the
 * background (left_ms: until its lease would end), HL_OK once taken back
 * there, HL_ETIMEDOUT when its lease has ended it first. */
void hl__obs_undo(hl_client *c, const hl_lock *lock, const char *owner,
                  int status, int64_t left_ms);
/* A renewal of h was confirmed / got no answer (left_ms: until its loss
 * deadline). Caller holds hold_mu. */
void hl__obs_renewed(hl_client *c, struct hl_hold *h);
void hl__obs_renewal_failed(hl_client *c, struct hl_hold *h, int64_t left_ms);
/* A data connection to node (NULL: the master) broke or did not answer
 * in time, and was dropped (why: for the message; NULL: the thread's last
 * error detail); a data connection to node was made. */
void hl__obs_conn_broke(hl_client *c, const hl_addr *node, const char *why);
void hl__obs_conn_made(hl_client *c, const hl_addr *node);
/* Fencing is off (once per client): node refused CLIENT KILL, or named no
 * connection id; why says which (the server's reply). */
void hl__obs_fencing_off(hl_client *c, const hl_addr *node, const char *why);
/* Failovers. Sentinel: the master is now a (another than before).
 * Cluster (caller holds topo_mu): a slot map was loaded, whose masters
 * are now[0..n); a MOVED for a slot whose master was cnodes[from]
 * (0xffff: none) named a node the client did not know, to. A cluster
 * failover is a master replaced: gone from a map, or answering for a
 * slot through a MOVED from an unknown node. */
void hl__obs_master(hl_client *c, const hl_addr *a);
void hl__obs_cluster_map(hl_client *c, const struct hl_cnode *now, int n);
void hl__obs_cluster_moved(hl_client *c, unsigned from, const hl_addr *to);
/* ---- the operation engine (task.c) ---------------------------------------
 * A wait is a record (an hl_task), not a blocked thread. A task moves
 * through gated (queued behind this client's earlier waiters for the same
 * name) -> subscribed (to the name's channel) -> ready to attempt ->
 * parked (until a message, a timer, or a gate promotion) -> done. A small
 * fixed set of executor threads per client runs the attempts' round trips
 * and the timers; a pub/sub message, a gate promotion, a cancel, an
 * interrupt or close only move records and wake an executor. Everything
 * here is under wait_mu.
 *
 * Lock order: hold_mu before wait_mu (the holds tell the engine of changes
 * holding hold_mu); a cancel flag's mutex before wait_mu (cancel.c). The
 * engine never takes hold_mu while it holds wait_mu, and never calls a
 * primitive with wait_mu held except where said.
 *
 * Callbacks run on an executor thread (or, where said, the thread that
 * made the event), never with wait_mu held unless said; arg is the
 * primitive's own copy of what it needs (a task must not depend on a
 * user's handle staying alive), freed by free() once the task is done. */

/* A wait for a primitive to be taken (a lock kind, a semaphore...). */
typedef struct hl_wait_ops {
	/* One attempt within b (the wait's deadline, the task's cancel, the
	 * client's close and interrupt). HL_OK and *acquired = 1; or 0 and
	 * *retry_ms: try again after at most that long (-1: when the channel
	 * carries a message, or a watchdog timeout at the latest); or an
	 * error (HL_EIO and HL_ECONNECT are ridden out within the deadline).
	 * An attempt that the bound stops after its command may have run
	 * takes that back itself (see lock.c). */
	int (*attempt)(void *arg, const hl_bound *b, int *acquired,
	               int64_t *retry_ms);
	/* Take back an acquisition nobody will receive: the task was
	 * cancelled or interrupted while the attempt that got it ran. */
	void (*undo)(void *arg, const hl_bound *b);
	/* NULL, or: the wait ended without acquiring after at least one
	 * attempt (deadline, cancel, interrupt, an error; not close). Called
	 * once, on an executor thread, before the task completes. */
	void (*give_up)(void *arg, const hl_bound *b);
	void (*free)(void *arg); /* called under wait_mu */
	/* NULL, or: whether a message on the wait's channel is for it (the
	 * default lock's line names the waiter it wakes). Called under
	 * wait_mu, on the subscriber's thread or a releaser's: short, and
	 * it takes no mutex. A message nobody wants wakes nobody. */
	int (*wants)(void *arg, const char *msg, size_t len);
} hl_wait_ops;

enum {
	HL_WAIT_FRESH = 0, /* nothing tried yet: the first attempt, at the
	                      head of the gate, goes before subscribing */
	HL_WAIT_TRIED = 1  /* the caller made that attempt already */
};

typedef struct hl_wait_spec {
	const hl_wait_ops *ops;
	void *arg; /* owned by the task from the call on, even on failure */
	/* The gate (a name: this client's waiters for it queue FIFO and only
	 * the head competes), NULL for none (a re-entry); the channel whose
	 * messages wake the head, NULL for none (retry after retry_ms only).
	 * Both point into arg and are read only at the start. */
	const void *gate;
	size_t gate_len;
	const void *channel;
	size_t channel_len;
	int64_t deadline_ms;    /* monotonic; -1: none */
	int64_t io_deadline_ms; /* the attempts' bound (a grace past a near
	                           deadline); -1: none */
	int once;               /* one attempt (wait 0): deferring to queued
	                           waiters or a hold-back answers 0 at once */
	int first;              /* HL_WAIT_FRESH or HL_WAIT_TRIED */
	/* HL_WAIT_TRIED: when that attempt began (hl__now_us()) and the
	 * retry it answered (ms; -1: none), if it answered "taken"; 0: not
	 * known (the task attempts again once it has subscribed). */
	int64_t tried_us;
	int64_t tried_retry_ms;
	int64_t hold_back_us; /* hold back this long before the first
	                         attempt (a handoff to another process) */
	/* HL_WAIT_TRIED: the caller's attempt got no answer from Redis
	 * (HL_EIO, HL_ECONNECT): its message, and when it began (monotonic
	 * ms). NULL: it was answered (or there was none). A wait that ends
	 * without any attempt answered fails with HL_ECONNECT (an outage is
	 * not contention; see hl__outage_fail). */
	const char *unanswered;
	int64_t unanswered_since_ms;
	uint64_t interrupt_gen; /* c->interrupt_gen when the call began */
	int blocking;           /* a blocking call waits for it: not
	                           delivered through hl_client_task_next() */
	/* NULL, or a K_DRIVE task (hl__task_drive_start) whose step runs again
	 * when this one is done; the new task is then never delivered through
	 * hl_client_task_next(). The parent may be of another client. */
	struct hl_task *parent;
	/* NULL, or: what the wait took, as the task's value (hl_task_value;
	 * the task's from then on). Called with arg under wait_mu when the
	 * wait ends acquired: short, no round trip. */
	struct hl_value *(*value)(void *arg);
} hl_wait_spec;

/* One round trip (a release): run once on an executor thread. Not
 * interrupted by hl_client_interrupt() or a cancel once it runs. */
typedef struct hl_call_ops {
	int (*run)(void *arg, const hl_bound *b, int *result);
	void (*free)(void *arg);
	/* NULL, or run instead of run: also a value for hl_task_value()
	 * (*value, the task's once it returns). */
	int (*run_value)(void *arg, const hl_bound *b, int *result,
	                 struct hl_value **value);
} hl_call_ops;

/* A wait for the holds to reach a state (a loss). check() is called with
 * hold_mu held (and wait_mu too), must not block, and says whether the
 * wait is over (*done, *result) or when to look again at the latest
 * (*recheck_ms, monotonic; -1: on the next change only). */
typedef struct hl_watch_ops {
	int (*check)(void *arg, int *done, int *result, int64_t *recheck_ms);
	void (*free)(void *arg);
} hl_watch_ops;

/* An operation made of other tasks, possibly of other clients (the
 * multilock: a wait for each member in turn). step() runs on an executor
 * of the task's client (or on the blocking caller that waits for it), one
 * step at a time, without wait_mu, first at once and then whenever
 * something happened: a task it started with self as its parent
 * (hl_wait_spec.parent) is done, its timer (*wake_ms) came, or it was
 * stopped. It may start, cancel and free its children (on any client) and
 * make round trips. It returns either *done = 0 (look again at the next
 * event, or at *wake_ms, monotonic, -1: none) or *done = 1 with the status
 * (its message in hl_error_last()) and *result. stop is HL_OK, or why the
 * task must end (HL_EINTERRUPTED: cancel, interrupt; HL_ECLOSED: its
 * client closes): the step then cancels its children, gives back what it
 * took and ends with that status. An HL_OK end that a stop overtook is
 * refused: the step runs again with the stop. A step that ends has freed
 * its children: free() runs under wait_mu, and may drop references (of
 * handles, clients) but take no other client's mutex. A close lets the
 * executors run until every such task ended. */
typedef struct hl_drive_ops {
	int (*step)(void *arg, struct hl_task *self, int stop, int *done,
	            int *result, int64_t *wake_ms);
	/* NULL, or: the task completes with status and result, and the user
	 * still has it (outputs the user gave may be written). Called under
	 * wait_mu: short, only leaf mutexes. */
	void (*commit)(void *arg, int status, int result);
	void (*free)(void *arg);
} hl_drive_ops;

int hl__engine_start(hl_client *c);
/* Stop the executors (after close completed every task). */
void hl__engine_stop(hl_client *c);
/* Free what is left (the client's memory goes). */
void hl__engine_free(hl_client *c);

/* Start a task; *out is the caller's (hl_task_free). Caller is inside the
 * client (hl__client_enter). HL_OK, HL_ENOMEM, HL_ESYSTEM. */
/* HL_ECONNECT for a wait that ended without Redis answering any attempt
 * since since_ms (monotonic): names the server, how long, and last (the
 * last attempt's error). An outage must not look like contention. */
int hl__outage_fail(const hl_client *c, int64_t since_ms, const char *last);
/* msg of an HL_ETIMEDOUT that ended an attempt, as the cause of an outage:
 * the bare "the deadline passed" becomes "no reply before the wait ended".
 */
const char *hl__timeout_cause(const char *msg);

int hl__task_wait_start(struct hl_task **out, hl_client *c,
                        const hl_wait_spec *spec);
int hl__task_call_start(struct hl_task **out, hl_client *c,
                        const hl_call_ops *ops, void *arg);
/* A K_DRIVE task that nobody waits for (work in the background: taking
 * back an acquire nobody received). Not interruptible; a close stops it
 * (its step runs with the stop); the engine frees it when it ends. */
int hl__task_background(hl_client *c, const hl_drive_ops *ops, void *arg);
/* The same, caller holding wait_mu (a listener). */
int hl__task_background_locked(hl_client *c, const hl_drive_ops *ops,
                               void *arg);
/* The same, *out = the task (no reference: it stays valid under wait_mu
 * until ops->free ran, which the caller notes under wait_mu). */
int hl__task_background_out(hl_client *c, const hl_drive_ops *ops, void *arg,
                            struct hl_task **out);
/* Run t's step again soon (a long-lived background task told of news);
 * caller holds t's client's wait_mu, t not freed. */
void hl__task_kick_locked(struct hl_task *t);
/* interruptible: hl_client_interrupt() since interrupt_gen (c's when the
 * call began) stops it; a close stops it anyway. */
int hl__task_drive_start(struct hl_task **out, hl_client *c,
                         const hl_drive_ops *ops, void *arg, int interruptible,
                         uint64_t interrupt_gen, int blocking);
/* A reference of t for the caller (taken and dropped under t's client's
 * wait_mu: the caller holds no wait_mu); the last one frees t. */
void hl__task_ref(struct hl_task *t);
void hl__task_unref(struct hl_task *t);
/* Run a K_DRIVE task's step again soon (something it looks at changed;
 * caller holds no wait_mu). */
void hl__task_kick(struct hl_task *t);
/* A K_DRIVE task's value for hl_task_value() (v taken; NULL: none), set
 * by its step before it ends (caller holds no wait_mu). */
void hl__task_drive_value(struct hl_task *t, struct hl_value *v);
/* A drive task's own cancel flag: triggered when it is stopped, so that a
 * round trip its step makes (an attempt) is cut off. */
hl_cancel *hl__task_cancel_flag(struct hl_task *t);
/* Caller holds hold_mu: check() runs at once, and the changes after it
 * are seen. deadline_ms -1: none. */
int hl__task_watch_start(struct hl_task **out, hl_client *c,
                         const hl_watch_ops *ops, void *arg,
                         int64_t deadline_ms, uint64_t interrupt_gen,
                         int blocking);
/* The holds changed (caller holds hold_mu): watch tasks look again. */
void hl__task_holds_changed(hl_client *c);
/* Block until t is done (a blocking call's wait): cancel (may be NULL)
 * cancels it, and its deadline is kept here too, should the executors be
 * busy. Returns its status (recorded for hl_error_last()) and *result;
 * frees t. */
int hl__task_finish_blocking(struct hl_task *t, hl_cancel *cancel, int *result);
/* The same, and *value (NULL: none) the task's value, the caller's. */
int hl__task_finish_blocking_value(struct hl_task *t, hl_cancel *cancel,
                                   int *result, struct hl_value **value);
/* A subscription's generation changed (caller holds wait_mu). */
void hl__task_sub_event(hl_sub *s);
/* A message on s that some of its waiters choose (hl_wait_ops.wants):
 * 0 if none of them does (the caller wakes them all), else 1 after waking
 * those it is for. Caller holds wait_mu. */
int hl__task_sub_message(hl_sub *s, const char *msg, size_t len);
/* close or hl_client_interrupt(): stop the tasks pending now (caller
 * holds wait_mu, and bumped interrupt_gen or set closing). */
void hl__task_stop_all(hl_client *c);
/* 1 if this client has waiters queued for the name (caller holds
 * wait_mu). */
int hl__gate_busy(hl_client *c, const void *name, size_t len);

#endif
