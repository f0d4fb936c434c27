/*
 * Topology harness for the hilock C tests: real deployments made of
 * Debian's redis-server (sentinels too: `redis-server <conf> --sentinel`,
 * which is all Debian's redis-sentinel link does), redis-cli and openssl,
 * started on free 127.0.0.1 ports (never a mock).
 *
 * - TLS material (ht_tls_make_certs): a CA, good server and client
 *   certificates, and the bad ones (an unrelated CA, an expired server
 *   certificate, one for the wrong name, one from the unrelated CA), made
 *   with the openssl command at test time.
 * - A single TLS server (ht_redis_start_tls): TLS port only.
 * - Sentinel (ht_sentinel_start): a master, 2 replicas, 3 sentinels.
 * - Cluster (ht_cluster_start): 6 nodes, 3 masters with a replica each,
 *   made by redis-cli --cluster create.
 *
 * Conventions are harness.h's: every node lives in a mkdtemp directory
 * with its config and log (redis.log), nothing is persisted, each process
 * is killed by the kernel (PR_SET_PDEATHSIG) if the test process dies, and
 * all are stopped at exit. Start, stop, kill, pause and every wait run on
 * the test's main thread. Errors fail the test (HT_FAIL). Waits are bounded
 * (times ht_scale()). If the test dies without stopping a topology (a
 * failed check: ht_fail() exits at once), a small reaper process left
 * behind prints the tail of each node's log to stderr and removes the
 * directories.
 *
 * HILOCK_TOPO_DEBUG=1 in the environment: every wait prints what it still
 * waits for, 4 times a second.
 *
 * The side channel (ht_node_cmd) talks to any node, plain or TLS: Debian's
 * hiredis 0.14 has no TLS, so under TLS the bytes go through an
 * `openssl s_client` child (hiredis still formats the commands and parses
 * the replies). It presents the good client certificate and does not
 * check the server's certificate, so it reaches servers with bad ones too.
 *
 * URLs written by the harness (credentials are left to the caller; the
 * data-node and the sentinel passwords are distinct options):
 *   rediss://127.0.0.1:<port>
 *   redis-sentinel://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>/<master>
 *   redis-cluster://127.0.0.1:<p1>,...,127.0.0.1:<p6>
 * and rediss-sentinel://, rediss-cluster:// under TLS.
 */
#ifndef HILOCK_TEST_HARNESS_TOPO_H
#define HILOCK_TEST_HARNESS_TOPO_H

#include "harness.h"

/* ------------------------------------------------------------------------
 * Running commands
 * ------------------------------------------------------------------------ */

/* Run argv (argv[0] looked up in PATH; NULL-terminated) with stdin from
 * /dev/null, at most timeout_ms (scaled; then SIGKILL). Its stdout and
 * stderr go to out (NUL-terminated, truncated to out_len; out may be NULL).
 * Returns the exit status, 128 + the signal if it was killed, or -1 on a
 * timeout. */
int ht_run(char *out, size_t out_len, int64_t timeout_ms,
           const char *const argv[]);

/* ht_run("redis-cli" + the words of the formatted string, split on spaces:
 * no quoting), 10 s bound. */
int ht_cli(char *out, size_t out_len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------
 * TLS material
 * ------------------------------------------------------------------------ */

/* The server certificates (index of ht_tls_certs.server_cert/key). */
typedef enum ht_cert_kind {
	HT_CERT_GOOD = 0,   /* from the CA; CN 127.0.0.1, SAN IP:127.0.0.1
	                       and DNS:localhost; valid 10 years */
	HT_CERT_EXPIRED,    /* same names, from the CA; valid only from
	                       2020-01-01 to 2020-02-01 */
	HT_CERT_WRONG_NAME, /* from the CA; CN and SAN DNS:other.example only */
	HT_CERT_UNTRUSTED,  /* the good names, from the other CA */
	HT_CERT_KINDS
} ht_cert_kind;

#define HT_PATH_MAX 320

/* Paths of PEM files (EC P-256 keys, unencrypted). Server certificates
 * carry extendedKeyUsage serverAuth, client ones clientAuth. */
typedef struct ht_tls_certs {
	char dir[256];
	char ca_cert[HT_PATH_MAX]; /* the CA clients should trust */
	char ca_key[HT_PATH_MAX];
	char ca_dir[HT_PATH_MAX];        /* a directory holding only the CA,
	                                    hashed (<hash>.0) for -CApath */
	char other_ca_cert[HT_PATH_MAX]; /* an unrelated CA: a wrong CA */
	char other_ca_key[HT_PATH_MAX];
	char server_cert[HT_CERT_KINDS][HT_PATH_MAX]; /* by ht_cert_kind */
	char server_key[HT_CERT_KINDS][HT_PATH_MAX];
	char client_cert[HT_PATH_MAX]; /* from the CA, CN hilock-client */
	char client_key[HT_PATH_MAX];
	char other_client_cert[HT_PATH_MAX]; /* from the other CA */
	char other_client_key[HT_PATH_MAX];
	int owns_dir; /* 1: dir is the harness's (removed with the set) */
} ht_tls_certs;

/* Make a fresh set in dir (created if missing; NULL: a new mkdtemp
 * directory, removed by ht_tls_certs_destroy() or at exit). Takes ~0.1 s. */
ht_tls_certs *ht_tls_make_certs(const char *dir);
void ht_tls_certs_destroy(ht_tls_certs *certs);

/* ------------------------------------------------------------------------
 * Nodes (one server or sentinel process of a topology)
 * ------------------------------------------------------------------------ */
typedef enum ht_role {
	HT_ROLE_NONE = 0, /* unknown, or not running */
	HT_ROLE_MASTER,
	HT_ROLE_REPLICA,
	HT_ROLE_SENTINEL
} ht_role;

struct ht_conn;

typedef struct ht_node {
	int pid;       /* 0 when not running */
	int paused;    /* 1 while SIGSTOPped (ht_node_pause) */
	int port;      /* client port: the TLS port under TLS (no plain one) */
	int bus_port;  /* cluster bus port (cluster nodes), else 0 */
	ht_role role;  /* as the harness last saw it */
	char name[16]; /* "data0", "sentinel2", "node5", "tls" */
	char id[48];   /* cluster node id, sentinel run id */
	char dir[HT_PATH_MAX];   /* its directory: config, log */
	char conf[HT_PATH_MAX];  /* its config file */
	char log[HT_PATH_MAX];   /* its stdout and stderr */
	char password[128];      /* AUTH for the side channel ("": none) */
	const ht_tls_certs *tls; /* non-NULL: TLS only */
	/* harness internals */
	int kind;
	void *owner;
	int replicaof; /* data nodes: the master's port at (re)start, 0: none */
	struct ht_conn *conn;
} ht_node;

/* A command on the node's side channel (hiredis format: %s, %b, %d...),
 * one connection per node, kept open (not thread-safe: the main thread, or
 * a forked child, which opens its own).
 * An error reply is returned as one (check rep->type); free the reply.
 * ht_node_cmd fails the test when the node cannot be reached within
 * 5 s (scaled); ht_node_try returns NULL then, and at once for a node
 * that is not running or paused. One reconnect (a restarted node). */
redisReply *ht_node_cmd(ht_node *n, const char *fmt, ...);
redisReply *ht_node_try(ht_node *n, const char *fmt, ...);
/* The same with an argument vector (argvlen NULL: C strings). */
redisReply *ht_node_cmd_argv(ht_node *n, int argc, const char **argv,
                             const size_t *argvlen);

/* INFO <section> field's value into out (NUL-terminated). Returns 1, or 0
 * (out = "") when the field is absent or the node unreachable. */
int ht_node_info(ht_node *n, const char *section, const char *field, char *out,
                 size_t out_len);

/* redis-cli against the node (-p, -a, --tls and the good client
 * certificate and CA added), then the words of fmt. See ht_cli(). */
int ht_node_cli(ht_node *n, char *out, size_t out_len, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* kill -9 and reap it (pid = 0; port, directory and config kept). */
void ht_node_kill(ht_node *n);
/* SIGSTOP / SIGCONT. */
void ht_node_pause(ht_node *n);
void ht_node_resume(ht_node *n);

/* ------------------------------------------------------------------------
 * A single TLS server
 * ------------------------------------------------------------------------
 * ht_redis's functions (harness.c) only know their own table, so a TLS
 * server has its own type and stop functions. It listens only on the TLS
 * port (--port 0), with the server certificate of the given kind, the
 * harness's CA as tls-ca-cert-file, and tls-auth-clients yes or no. */
typedef struct ht_tls_redis {
	ht_node node;  /* node.port: the TLS port */
	char url[128]; /* "rediss://127.0.0.1:<port>" (no credentials) */
	char dir[256];
	int cert_kind;
	int require_client_cert;
	char requirepass[128];
} ht_tls_redis;

ht_tls_redis *ht_redis_start_tls(const ht_tls_certs *certs,
                                 int which_server_cert,
                                 int require_client_cert);
/* The same with a --requirepass (NULL: none). */
ht_tls_redis *ht_redis_start_tls_ex(const ht_tls_certs *certs,
                                    int which_server_cert,
                                    int require_client_cert,
                                    const char *requirepass);
/* SIGTERM (SIGKILL after a bound); port and directory kept. */
void ht_tls_redis_stop(ht_tls_redis *r);
/* Stop (if running) and start again on the same port: an empty server. */
void ht_tls_redis_restart(ht_tls_redis *r);
/* Stop, remove the directory, free r. */
void ht_tls_redis_destroy(ht_tls_redis *r);

/* ------------------------------------------------------------------------
 * Sentinel: a master, 2 replicas (--replicaof), 3 sentinels
 * ------------------------------------------------------------------------
 * Sentinels monitor the master with quorum 2, down-after-milliseconds
 * 2000, failover-timeout 5000, parallel-syncs 1, resolve-hostnames no.
 * They start knowing each other and the replicas (known-sentinel and
 * known-replica lines with generated ids), so no hello round is waited
 * for. A kill -9 of the master gives a new master ~3 s later.
 *
 * Why not 1000: after a kill, a sentinel keeps retrying the dead master
 * once per second (its fixed ping period); at the switch its link to the
 * new master waits for the next retry slot, up to 1 s, so with 1000 the
 * new master can be judged down at once, and with the other sentinels'
 * "master down" answers of the first failover still counted (they are
 * kept 5 s) a second, spurious failover follows (seen in ~1 run in 3 under
 * TLS). Note also Sentinel's own rules: an automatic failover of the same
 * master is not retried before 2 * failover-timeout after the last attempt
 * (a forced SENTINEL FAILOVER is not limited), and a node that comes back
 * claiming to be master is converted to a replica only after ~8 s. */
typedef struct ht_sentinel_opts {
	const char *master_name;       /* NULL: "mymaster" */
	const char *password;          /* data nodes: requirepass and
	                                  masterauth; sentinels: auth-pass */
	const char *sentinel_password; /* the sentinels' requirepass (and
	                                  sentinel-pass between them) */
	const ht_tls_certs *tls;       /* non-NULL: TLS only, everywhere
	                                  (tls-replication yes) */
	int tls_auth_clients;          /* with tls: 1 = clients must present
	                                  a certificate */
	int down_after_ms;             /* 0: 2000 (see above) */
	int failover_timeout_ms;       /* 0: 5000 */
} ht_sentinel_opts;

#define HT_SENTINEL_DATA      3
#define HT_SENTINEL_SENTINELS 3

typedef struct ht_sentinel {
	ht_node data[HT_SENTINEL_DATA];           /* data[0] starts as master */
	ht_node sentinels[HT_SENTINEL_SENTINELS]; /* role HT_ROLE_SENTINEL */
	char name[64];                            /* the master name */
	char dir[256];         /* holds every node's directory */
	char url[512];         /* see ht_sentinel_url() */
	int master_port;       /* as last seen */
	int64_t start_ms;      /* how long ht_sentinel_start took */
	ht_sentinel_opts opts; /* strings copied below */
	char password[128];
	char sentinel_password[128];
} ht_sentinel;

/* Start it; returns once the replicas are in sync and every sentinel sees
 * the master, its 2 replicas and the 2 other sentinels. opts may be NULL. */
ht_sentinel *ht_sentinel_start(const ht_sentinel_opts *opts);
/* Kill everything, remove the directory, free s. */
void ht_sentinel_destroy(ht_sentinel *s);

/* "redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/<name>"
 * ("rediss-sentinel://" under TLS), as snprintf: returns the length it
 * needs. */
size_t ht_sentinel_url(const ht_sentinel *s, char *buf, size_t len);

/* The master's port as the (first answering) sentinel reports it
 * (SENTINEL GET-MASTER-ADDR-BY-NAME; the host is always 127.0.0.1). */
int ht_sentinel_master_port(ht_sentinel *s);
/* The data node on that port (fails the test if none). */
ht_node *ht_sentinel_node(ht_sentinel *s, int port);
/* The data node the sentinels report as master. */
ht_node *ht_sentinel_master(ht_sentinel *s);

/* kill -9 / SIGSTOP the current master; returns its port. */
int ht_sentinel_kill_master(ht_sentinel *s);
int ht_sentinel_stop_master(ht_sentinel *s);
/* SIGCONT every paused data node. */
void ht_sentinel_cont(ht_sentinel *s);

/* Wait until every running sentinel reports the same master, other than
 * old_master_port, and that node says role:master. Returns its port;
 * fails the test after timeout_ms (scaled). */
int ht_sentinel_wait_failover(ht_sentinel *s, int old_master_port,
                              int64_t timeout_ms);
/* Wait until every running data node but the master replicates from it
 * (link up, the master lists it online), every running sentinel sees
 * those replicas healthy, and every replica has applied what the master
 * had written when they were: a write acknowledged before this call
 * survives a kill -9 of the master after it. */
void ht_sentinel_wait_synced(ht_sentinel *s, int64_t timeout_ms);
/* SENTINEL FAILOVER (a clean, forced failover), then wait for the new
 * master; the old one, still running and still master, is made its replica
 * at once (REPLICAOF: Sentinel would do it only ~8 s later); then wait
 * until everything is synced. Returns the new master's port. For
 * Sentinel's own timing, send SENTINEL FAILOVER with ht_node_cmd() and
 * use ht_sentinel_wait_failover() and ht_sentinel_wait_synced(). */
int ht_sentinel_failover(ht_sentinel *s);
/* Start a stopped (killed) data node again on its port: a replica of the
 * master the sentinels report (master itself if they still report it);
 * waits until everything is synced. */
void ht_sentinel_restart_node(ht_sentinel *s, int port);

/* ------------------------------------------------------------------------
 * Cluster: 6 nodes, 3 masters with one replica each
 * ------------------------------------------------------------------------
 * cluster-node-timeout 1000, cluster-replica-validity-factor 0 (a replica
 * always may take over), cluster-allow-replica-migration no. Each node has
 * an explicit cluster-port (the bus). */
typedef struct ht_cluster_opts {
	const char *password;    /* requirepass and masterauth */
	const ht_tls_certs *tls; /* non-NULL: TLS only, tls-cluster and
	                            tls-replication yes */
	int tls_auth_clients;    /* with tls: 1 = clients must present one */
	int node_timeout_ms;     /* 0: 1000 */
} ht_cluster_opts;

#define HT_CLUSTER_NODES   6
#define HT_CLUSTER_SLOTS   16384
#define HT_CLUSTER_MAX_MIG 8

typedef struct ht_cluster {
	ht_node nodes[HT_CLUSTER_NODES]; /* role and id refreshed by the
	                                    harness's waits */
	char dir[256];
	char url[512]; /* see ht_cluster_url() */
	int64_t start_ms;
	int formed; /* its nodes run with opts.node_timeout_ms (a longer one
	               while it forms) */
	ht_cluster_opts opts;
	char password[128];
	/* slot migrations under way */
	struct {
		int slot, src, dst; /* node indexes; slot -1: free */
	} mig[HT_CLUSTER_MAX_MIG];
} ht_cluster;

/* Start it; returns once every node says cluster_state:ok, they agree on
 * each other's roles and every replica is in sync. opts may be NULL. */
ht_cluster *ht_cluster_start(const ht_cluster_opts *opts);
/* Kill everything, remove the directory, free c. */
void ht_cluster_destroy(ht_cluster *c);

/* "redis-cluster://127.0.0.1:p1,...,127.0.0.1:p6" ("rediss-cluster://"
 * under TLS), as snprintf. */
size_t ht_cluster_url(const ht_cluster *c, char *buf, size_t len);

/* The node on that port (fails the test if none). */
ht_node *ht_cluster_node(ht_cluster *c, int port);
/* Re-read every running node's role (CLUSTER NODES). */
void ht_cluster_refresh(ht_cluster *c);
/* Wait until every running node says cluster_state:ok, running nodes
 * agree on each other's roles, none is seen failing and every running
 * replica is in sync. */
void ht_cluster_wait_ok(ht_cluster *c, int64_t timeout_ms);

/* CLUSTER KEYSLOT key on a running node. */
int ht_cluster_slot_of(ht_cluster *c, const void *key, size_t len);
/* The port of the master serving slot (CLUSTER SLOTS of a master). */
int ht_cluster_master_of_slot(ht_cluster *c, int slot);
/* The port of a running replica of that master (0: none). */
int ht_cluster_replica_of(ht_cluster *c, int master_port);

/* Moving a slot to another master, key by key:
 * _start: CLUSTER SETSLOT IMPORTING on dst, MIGRATING on the owner (from
 *   then on the owner answers -ASK for the slot's keys it no longer has);
 * _keys: MIGRATE every key of the slot still on the owner; returns how
 *   many;
 * _finish: SETSLOT NODE dst on dst, the old owner and every other master;
 *   waits until every running node reports dst as the owner (then the old
 *   owner answers -MOVED). */
void ht_cluster_migrate_slot_start(ht_cluster *c, int slot, int dst_port);
int ht_cluster_migrate_keys(ht_cluster *c, int slot);
void ht_cluster_migrate_slot_finish(ht_cluster *c, int slot);
/* All three. */
void ht_cluster_move_slot(ht_cluster *c, int slot, int dst_port);

/* CLUSTER FAILOVER on a replica of that master; waits until it is master,
 * the old one its replica, and the cluster ok. Returns the new master's
 * port. */
int ht_cluster_failover(ht_cluster *c, int master_port);
/* kill -9 that master; waits until its replica took over and the cluster
 * is ok again (without it). Returns the new master's port. */
int ht_cluster_kill_master(ht_cluster *c, int master_port);
/* Stop a node (SIGTERM, SIGKILL after a bound); no wait for the cluster. */
void ht_cluster_stop_node(ht_cluster *c, int port);
/* Start a stopped or killed node again (same port, same nodes.conf: same
 * identity; a master that was replaced comes back as a replica); waits
 * until the cluster is ok with it. */
void ht_cluster_restart_node(ht_cluster *c, int port);

/* Client options for tests that go through failovers: short command and
 * connect timeouts, and retries that outlast a failover of a few seconds
 * (8 attempts from 300 ms), with the given watchdog timeout. */
void ht_failover_options(hl_client_options *o, int64_t watchdog_ms);

#endif
