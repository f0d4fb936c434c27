/*
 * The router: where a command goes and what happens when it fails.
 *
 * Topologies with one master (single server, sentinel, master-replica): a
 * pool of connections opened on demand, keyed by node, so reads can go to
 * replicas (read_from) and a failover only changes which node the next
 * connection goes to. The master is learnt once (the URL's first node, or
 * the sentinels' answer, checked with ROLE) and again whenever it fails;
 * under sentinel a watcher thread follows +switch-master. Every change
 * bumps the topology epoch: pooled, subscriber and watchdog connections of
 * an older epoch are dropped and made anew.
 *
 * The retry policy: a command is resent only where that is safe (nothing
 * was sent, or it is idempotent), within the caller's bound. A connection
 * dropped with a write in flight is fenced. A write on a master with
 * replicas is followed by WAIT. Error replies that concern routing
 * (READONLY, LOADING, MASTERDOWN, TRYAGAIN, CLUSTERDOWN) are handled here,
 * never in a primitive. EVALSHA falls back to EVAL on NOSCRIPT.
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Load every script once; EVALSHA then needs only their hashes. */
int hl__load_scripts(hl_client *c, hl_conn *conn, int64_t timeout_ms)
{
	const char *argv[HL_SCRIPT_COUNT][3];
	size_t lens[HL_SCRIPT_COUNT][3];
	const char **argvp[HL_SCRIPT_COUNT];
	const size_t *lensp[HL_SCRIPT_COUNT];
	int argcs[HL_SCRIPT_COUNT];
	hl_reply *replies[HL_SCRIPT_COUNT];
	enum hl_sent sent;
	int i, rc;
	for (i = 0; i < HL_SCRIPT_COUNT; i++) {
		argv[i][0] = "SCRIPT";
		lens[i][0] = 6;
		argv[i][1] = "LOAD";
		lens[i][1] = 4;
		argv[i][2] = hl__script((enum hl_script_id)i)->source;
		lens[i][2] = strlen(argv[i][2]);
		argcs[i] = 3;
		argvp[i] = argv[i];
		lensp[i] = lens[i];
	}
	rc = hl__conn_roundtrip(conn, HL_SCRIPT_COUNT, argcs, argvp, lensp,
	                        replies, &sent, NULL, timeout_ms);
	for (i = 0; i < HL_SCRIPT_COUNT; i++) {
		hl_reply *r = replies[i];
		if (rc == HL_OK) {
			if (hl__reply_type(r) == HL_REPLY_STRING &&
			    hl__reply_strlen(r) == 40) {
				memcpy(c->sha[i], hl__reply_str(r), 40);
				c->sha[i][40] = '\0';
			} else {
				rc = hl__fail(
				        HL_EREDIS,
				        "%s: SCRIPT LOAD of %s failed: %s",
				        c->conf.url_text,
				        hl__script((enum hl_script_id)i)->name,
				        hl__reply_type(r) == HL_REPLY_ERROR
				                ? hl__reply_str(r)
				                : "unexpected reply");
			}
		}
		if (r)
			hl__reply_free(r);
	}
	return rc;
}

/* ---- the topology ------------------------------------------------------- */

void hl__router_master(hl_client *c, hl_addr *out, uint64_t *epoch)
{
	pthread_mutex_lock(&c->topo_mu);
	*out = c->master;
	if (epoch)
		*epoch = atomic_load(&c->topo_epoch);
	pthread_mutex_unlock(&c->topo_mu);
}

uint64_t hl__router_epoch(hl_client *c)
{
	return atomic_load(&c->topo_epoch);
}

/* The master is (now) a: a change bumps the epoch, and wakes the subscriber
 * and the watchdog so that they reconnect at once. */
static void set_master(hl_client *c, const hl_addr *a)
{
	int changed;
	pthread_mutex_lock(&c->topo_mu);
	changed = !hl__addr_eq(&c->master, a);
	if (changed) {
		c->master = *a;
		c->master_replicas.n = -1;
		atomic_fetch_add(&c->topo_epoch, 1);
	}
	pthread_mutex_unlock(&c->topo_mu);
	if (changed) {
		hl__obs_master(c, a);
		hl__pubsub_kick(c);
		hl__watchdog_kick(c);
	}
}

static void set_replicas(hl_client *c, const hl_addr *r, int n)
{
	hl_addr *copy = n ? malloc((size_t)n * sizeof(*r)) : NULL;
	if (n && !copy)
		return;
	if (n)
		memcpy(copy, r, (size_t)n * sizeof(*r));
	pthread_mutex_lock(&c->topo_mu);
	free(c->replicas);
	c->replicas = copy;
	c->nreplicas = n;
	pthread_mutex_unlock(&c->topo_mu);
}

/* The key a command is routed by: KEYS[1] of a script, else the first
 * argument. NULL for a command without one. */
static const char *command_key(int argc, const char **argv, const size_t *lens,
                               size_t *len)
{
	if (argc >= 4 && (strcasecmp(argv[0], "EVALSHA") == 0 ||
	                  strcasecmp(argv[0], "EVAL") == 0)) {
		if (atoi(argv[2]) < 1)
			return NULL;
		*len = lens[3];
		return argv[3];
	}
	if (argc < 2)
		return NULL;
	*len = lens[1];
	return argv[1];
}

/* Where a command goes: in a cluster, the master of its key's slot;
 * otherwise the master, or for a read a replica when read_from says so
 * (HL_READ_ANY takes the master in turn with the replicas). */
static int route(hl_client *c, int flags, const char *key, size_t keylen,
                 hl_addr *out, uint64_t *epoch, const hl_bound *b)
{
	if (c->conf.url.topology == HL_TOPO_CLUSTER) {
		if (!key)
			return hl__fail(HL_EINVAL,
			                "a command without a key cannot be "
			                "routed in a cluster");
		return hl__router_node_for_key(c, key, keylen, out, epoch, b);
	}
	pthread_mutex_lock(&c->topo_mu);
	*out = c->master;
	*epoch = atomic_load(&c->topo_epoch);
	if ((flags & HL_CMD_READ) && c->nreplicas > 0 &&
	    c->conf.read_from != HL_READ_MASTER) {
		unsigned n = (unsigned)c->nreplicas +
		             (c->conf.read_from == HL_READ_ANY ? 1u : 0u);
		unsigned i = c->replica_rr++ % n;
		if (i < (unsigned)c->nreplicas)
			*out = c->replicas[i];
	}
	pthread_mutex_unlock(&c->topo_mu);
	return HL_OK;
}

const char *hl__router_publish(hl_client *c)
{
	int sharded;
	pthread_mutex_lock(&c->topo_mu);
	sharded = c->conf.url.topology == HL_TOPO_CLUSTER && c->sharded;
	pthread_mutex_unlock(&c->topo_mu);
	return sharded ? "SPUBLISH" : "PUBLISH";
}

/* A reply of ip and port ("SENTINEL get-master-addr-by-name"). */
static int parse_ip_port(const hl_reply *r, hl_addr *out)
{
	const hl_reply *ip = hl__reply_at(r, 0), *port = hl__reply_at(r, 1);
	long p;
	if (hl__reply_len(r) != 2 || hl__reply_strlen(ip) == 0 ||
	    hl__reply_strlen(ip) >= sizeof(out->host))
		return -1;
	p = strtol(hl__reply_str(port), NULL, 10);
	if (p < 1 || p > 65535)
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out->host, hl__reply_str(ip), hl__reply_strlen(ip));
	out->port = (int)p;
	return 0;
}

int hl__router_one(hl_client *c, hl_conn *conn, hl_reply **out, int argc,
                   const char **argv, const hl_bound *b)
{
	size_t lens[8];
	const size_t *lp = lens;
	enum hl_sent sent;
	int i;
	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	return hl__conn_roundtrip(conn, 1, &argc, &argv, &lp, out, &sent, b,
	                          c->conf.command_timeout_ms);
}

/* One replica of "SENTINEL replicas": a flat list of field, value; a
 * replica the sentinel sees down or disconnected is skipped (-1). */
static int parse_replica(const hl_reply *r, hl_addr *out)
{
	const char *ip = NULL, *port = NULL, *flags = "";
	size_t i;
	for (i = 0; i + 1 < hl__reply_len(r); i += 2) {
		const char *k = hl__reply_str(hl__reply_at(r, i));
		const char *v = hl__reply_str(hl__reply_at(r, i + 1));
		if (strcmp(k, "ip") == 0)
			ip = v;
		else if (strcmp(k, "port") == 0)
			port = v;
		else if (strcmp(k, "flags") == 0)
			flags = v;
	}
	if (!ip || !port || strlen(ip) >= sizeof(out->host) ||
	    strstr(flags, "down") || strstr(flags, "disconnected"))
		return -1;
	memset(out, 0, sizeof(*out));
	strcpy(out->host, ip);
	out->port = atoi(port);
	return out->port > 0 && out->port < 65536 ? 0 : -1;
}

/* Ask the sentinels, in turn, where the master is (and which replicas it
 * has). HL_OK, or HL_ECONNECT when none answers with an address. */
static int sentinel_ask(hl_client *c, hl_addr *master, const hl_bound *b)
{
	const hl_url *u = &c->conf.url;
	int i, rc = HL_ECONNECT, all_auth = 1;
	char tried[400] = "";
	for (i = 0; i < u->nhosts; i++) {
		hl_conn *conn = NULL;
		hl_reply *r = NULL;
		const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
		                       u->master_name};
		char a[300];
		rc = hl__conn_open(&conn, &c->conf, &u->hosts[i],
		                   HL_CONN_SENTINEL, b);
		if (rc == HL_OK)
			rc = hl__router_one(c, conn, &r, 3, argv, b);
		if (rc == HL_OK && parse_ip_port(r, master) == 0) {
			/* its replicas too, for read routing */
			hl_reply *rr = NULL;
			const char *av[3] = {"SENTINEL", "replicas",
			                     u->master_name};
			if (hl__router_one(c, conn, &rr, 3, av, b) == HL_OK) {
				hl_addr reps[16];
				size_t k, n = 0;
				for (k = 0; k < hl__reply_len(rr) && n < 16;
				     k++)
					if (parse_replica(hl__reply_at(rr, k),
					                  &reps[n]) == 0)
						n++;
				set_replicas(c, reps, (int)n);
			}
			hl__reply_free(rr);
			hl__reply_free(r);
			hl__conn_free(conn);
			return HL_OK;
		}
		if (rc == HL_OK)
			rc = hl__fail(HL_ECONNECT,
			              "sentinel %s does not know the master "
			              "\"%s\"%s%s",
			              hl__addr_str(&u->hosts[i], a, sizeof(a)),
			              u->master_name,
			              hl__reply_type(r) == HL_REPLY_ERROR ? ": "
			                                                  : "",
			              hl__reply_type(r) == HL_REPLY_ERROR
			                      ? hl__reply_str(r)
			                      : "");
		hl__reply_free(r);
		hl__conn_free(conn);
		if (rc != HL_ECONNECT && rc != HL_EIO && rc != HL_EAUTH)
			return rc; /* the bound stopped it */
		all_auth &= rc == HL_EAUTH;
		snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried),
		         "%s%s", tried[0] ? "; " : "", hl_error_last());
	}
	/* Every sentinel refused the credentials: say so. */
	return hl__fail(all_auth ? HL_EAUTH : HL_ECONNECT,
	                "no sentinel gave the master \"%s\": %s",
	                u->master_name, tried);
}

/* ROLE on a freshly opened connection: is this node a master? */
static int is_master(hl_client *c, hl_conn *conn, const hl_bound *b)
{
	hl_reply *r = NULL;
	const char *argv[1] = {"ROLE"};
	int ok = hl__router_one(c, conn, &r, 1, argv, b) == HL_OK &&
	         strcmp(hl__reply_str(hl__reply_at(r, 0)), "master") == 0;
	hl__reply_free(r);
	return ok;
}

void hl__router_suspect(hl_client *c, const hl_bound *b)
{
	hl_addr m;
	if (c->conf.url.topology == HL_TOPO_CLUSTER) {
		int64_t last;
		pthread_mutex_lock(&c->topo_mu);
		last = c->refreshed_ms;
		pthread_mutex_unlock(&c->topo_mu);
		/* a storm of failures loads the map once */
		if (hl__now_ms() - last >= 100)
			hl__cluster_refresh(c, b);
		return;
	}
	if (c->conf.url.topology != HL_TOPO_SENTINEL)
		return;
	if (sentinel_ask(c, &m, b) == HL_OK)
		set_master(c, &m);
}

int hl__router_connect(hl_client *c, const hl_addr *a, hl_conn **out,
                       const hl_bound *b)
{
	int rc = hl__conn_open(out, &c->conf, a, HL_CONN_DATA, b);
	if (rc != HL_OK)
		hl__router_suspect(c, b);
	else
		hl__obs_conn_made(c, a);
	return rc;
}

int hl__router_connect_master(hl_client *c, hl_conn **out, uint64_t *epoch,
                              const hl_bound *b)
{
	hl_addr m;
	uint64_t e;
	int rc;
	hl__router_master(c, &m, &e);
	rc = hl__conn_open(out, &c->conf, &m, HL_CONN_DATA, b);
	if (rc == HL_OK && c->conf.url.topology == HL_TOPO_SENTINEL &&
	    !is_master(c, *out, b)) {
		/* a demoted master: ask again, and let the caller retry */
		char a[300];
		hl__conn_free(*out);
		*out = NULL;
		hl__router_suspect(c, b);
		return hl__fail(HL_ECONNECT, "%s is no longer the master",
		                hl__addr_str(&m, a, sizeof(a)));
	}
	if (rc != HL_OK && c->conf.url.topology == HL_TOPO_SENTINEL)
		hl__router_suspect(c, b);
	if (rc == HL_OK)
		hl__obs_conn_made(c, &m);
	if (rc == HL_OK && epoch)
		*epoch = e;
	return rc;
}

/* ---- the pool: connections keyed by node -------------------------------- */

/* A free slot for a command to node a in epoch e: one already connected
 * there, else an empty one, else one connected elsewhere (closed). */
static int pool_take(hl_client *c, int *out, const hl_addr *a, uint64_t e,
                     const hl_bound *b)
{
	int i, pick, empty, other, rc;
	pthread_mutex_lock(&c->pool_mu);
	for (;;) {
		if ((rc = hl__bound_check(b)) != HL_OK) {
			pthread_mutex_unlock(&c->pool_mu);
			return rc;
		}
		if (atomic_load(&c->closing)) {
			pthread_mutex_unlock(&c->pool_mu);
			return hl__fail(HL_ECLOSED, "the client is closed");
		}
		pick = empty = other = -1;
		for (i = 0; i < c->conf.pool_size; i++) {
			hl_pool_conn *p = &c->pool[i];
			if (p->busy)
				continue;
			if (!p->conn) {
				if (empty < 0)
					empty = i;
			} else if (p->epoch == e && hl__addr_eq(&p->addr, a)) {
				pick = i;
				break;
			} else if (other < 0) {
				other = i;
			}
		}
		if (pick < 0)
			pick = empty >= 0 ? empty : other;
		if (pick >= 0)
			break;
		c->pool_waiting++;
		/* Woken by a returned connection or close; a slice so that
		 * a cancel or a deadline is noticed too. */
		hl__cond_wait_until(&c->pool_cond, &c->pool_mu,
		                    hl__now_ms() + 20);
		c->pool_waiting--;
	}
	c->pool[pick].busy = 1;
	pthread_mutex_unlock(&c->pool_mu);
	if (c->pool[pick].conn && (c->pool[pick].epoch != e ||
	                           !hl__addr_eq(&c->pool[pick].addr, a))) {
		hl__conn_free(c->pool[pick].conn);
		c->pool[pick].conn = NULL;
	}
	*out = pick;
	return HL_OK;
}

static void pool_give(hl_client *c, int i)
{
	pthread_mutex_lock(&c->pool_mu);
	c->pool[i].busy = 0;
	if (c->pool_waiting)
		pthread_cond_signal(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_mu);
}

int hl__pause(hl_client *c, int64_t ms, const hl_bound *b)
{
	int64_t until = hl__now_ms() + ms;
	int rc = HL_OK;
	pthread_mutex_lock(&c->life_mu);
	while (!c->closed && (rc = hl__bound_check(b)) == HL_OK) {
		int64_t now = hl__now_ms(), slice = now + 20;
		if (now >= until)
			break;
		/* close broadcasts life_cond; cancel and interrupt are seen
		 * within a slice */
		hl__cond_wait_until(&c->life_cond, &c->life_mu,
		                    slice < until ? slice : until);
	}
	if (rc == HL_OK && c->closed)
		rc = hl__fail(HL_ECLOSED, "the client was closed");
	pthread_mutex_unlock(&c->life_mu);
	return rc;
}

/* ---- fences -------------------------------------------------------------
 * A connection dropped while a state-changing command may still be on its
 * way (a reply timed out, a reset) could deliver that command late: after
 * the caller was told it failed, even after the same owner's next command.
 * So its server-side id and address go on a list, and the next command
 * this client sends is preceded, in the same pipeline, by CLIENT KILL ID
 * <id> ADDR <addr> for each: once that has run, nothing the old connection
 * carried can run any more. (The address guards against a restarted server
 * that reuses the id for someone else's connection.) Without a fence (the
 * server refused CLIENT KILL, or named no id) a delayed command can still
 * run late; the client says so once (HL_EVENT_FENCING_OFF). */

static void fence_add(hl_client *c, const hl_conn *conn, const hl_addr *node)
{
	const char *addr;
	long long id = hl__conn_server_id(conn, &addr);
	int tell = 0;
	pthread_mutex_lock(&c->pool_mu);
	if (!c->fence_off && id < 0 && !c->fence_told)
		tell = c->fence_told = 1;
	if (!c->fence_off && id >= 0) {
		if (c->nfences == HL_FENCE_MAX) {
			/* the oldest is the most likely to be gone already */
			memmove(c->fences, c->fences + 1,
			        (HL_FENCE_MAX - 1) * sizeof(c->fences[0]));
			c->nfences--;
		}
		c->fences[c->nfences].id = id;
		c->fences[c->nfences].node = *node;
		snprintf(c->fences[c->nfences].addr,
		         sizeof(c->fences[c->nfences].addr), "%s", addr);
		c->nfences++;
	}
	pthread_mutex_unlock(&c->pool_mu);
	if (tell)
		hl__obs_fencing_off(c, node,
		                    "did not say which connection was dropped "
		                    "with a write in flight (CLIENT INFO "
		                    "refused, or Redis before 6.2)");
}

/* Copy the pending fences of node (at most max). */
static int fences_pending(hl_client *c, const hl_addr *node, hl_fence *out,
                          int max)
{
	int i, n = 0;
	pthread_mutex_lock(&c->pool_mu);
	for (i = 0; i < c->nfences && n < max; i++)
		if (hl__addr_eq(&c->fences[i].node, node))
			out[n++] = c->fences[i];
	pthread_mutex_unlock(&c->pool_mu);
	return n;
}

/* The fences whose CLIENT KILL ran are done; a refusal (an ACL without
 * CLIENT KILL, a server without it) turns fencing off for this client. */
static void fences_done(hl_client *c, const hl_fence *f, int n,
                        hl_reply **replies)
{
	int i, j, tell = -1;
	pthread_mutex_lock(&c->pool_mu);
	for (i = 0; i < n; i++) {
		if (hl__reply_type(replies[i]) == HL_REPLY_ERROR &&
		    strstr(hl__reply_str(replies[i]), "No such client") ==
		            NULL) {
			c->fence_off = 1;
			c->nfences = 0;
			if (!c->fence_told) {
				c->fence_told = 1;
				tell = i;
			}
			break;
		}
		for (j = 0; j < c->nfences; j++)
			if (c->fences[j].id == f[i].id &&
			    strcmp(c->fences[j].addr, f[i].addr) == 0) {
				memmove(c->fences + j, c->fences + j + 1,
				        (size_t)(c->nfences - j - 1) *
				                sizeof(c->fences[0]));
				c->nfences--;
				break;
			}
	}
	pthread_mutex_unlock(&c->pool_mu);
	if (tell >= 0) {
		char why[300];
		snprintf(why, sizeof(why), "refused CLIENT KILL: %s",
		         hl__reply_str(replies[tell]));
		hl__obs_fencing_off(c, &f[tell].node, why);
	}
}

/* ---- commands ----------------------------------------------------------- */

#define HL_FENCES_PER_TRIP 4

/* Error replies the router handles: the command did not run, and sending
 * it again (after learning the topology again, or after a pause) is safe.
 * 0: none of those. */
static int routing_error(const hl_reply *r, int *refresh)
{
	const char *e;
	*refresh = 0;
	if (hl__reply_type(r) != HL_REPLY_ERROR)
		return 0;
	e = hl__reply_str(r);
	if (strncmp(e, "READONLY", 8) == 0) {
		*refresh = 1; /* a replica now: the master moved */
		return 1;
	}
	return strncmp(e, "LOADING", 7) == 0 ||
	       strncmp(e, "MASTERDOWN", 10) == 0 ||
	       strncmp(e, "TRYAGAIN", 8) == 0 ||
	       strncmp(e, "CLUSTERDOWN", 11) == 0;
}

/* "connected_slaves:<n>" of INFO replication; -1 if absent. */
static int parse_connected_slaves(const hl_reply *r)
{
	const char *p = strstr(hl__reply_str(r), "connected_slaves:");
	return p ? atoi(p + 17) : -1;
}

/* A replica count of 0 is asked again once it is this old. A master learnt
 * without replicas may get some later: the new master of a failover before
 * its replicas (re)attach, a replica added to a single server. Until the
 * count is asked again, lock writes there are not WAITed for, the undo
 * rule cannot fire, and a kill -9 of that master loses them.
 * The cost: INFO replication rides after one write per second per client
 * and master, in the write's own round trip (no extra round trip, and the
 * write still goes first on the wire), only while that master has no
 * replicas and takes lock writes; a count above 0, the fast path, asks
 * nothing (a WAIT that comes back short makes it learnt again). When the
 * answer names replicas, that write is followed by WAIT, one more round
 * trip, once. For a single server without replicas, the common case,
 * that is one INFO (a few microseconds of server time) per second of lock
 * traffic. A shorter interval would narrow the window after a replica
 * attaches little: it needs a sync first (WAIT counts it only then), and
 * the failover before took seconds. */
#define HL_WAIT_RELEARN_MS 1000

/* The cached replica count of node (caller holds topo_mu): the master's
 * of this epoch, or a cluster master's; NULL when there is none (an epoch
 * that has passed, a node the slot map does not have as master). */
static hl_replica_count *replica_cache(hl_client *c, const hl_addr *node,
                                       uint64_t epoch)
{
	if (c->conf.url.topology == HL_TOPO_CLUSTER)
		return hl__cluster_replica_count(c, node);
	return atomic_load(&c->topo_epoch) == epoch ? &c->master_replicas
	                                            : NULL;
}

/* How many replicas of count k a write waits for (0: none). */
static int wait_n(hl_client *c, int k)
{
	return k > 0 ? (c->conf.wait_replicas < 0 ? k : c->conf.wait_replicas)
	             : 0;
}

/* INFO replication answered: node has k connected replicas (cached). */
static void replicas_learnt(hl_client *c, const hl_addr *node, uint64_t epoch,
                            int k)
{
	hl_replica_count *rc;
	pthread_mutex_lock(&c->topo_mu);
	if ((rc = replica_cache(c, node, epoch)) != NULL) {
		rc->n = k;
		rc->at_ms = hl__now_ms();
	}
	pthread_mutex_unlock(&c->topo_mu);
}

/* How many replicas a write on node waits for (0: none), or -1 when conn
 * broke. A count not known is learnt first (INFO replication on conn,
 * one round trip before the write). *ask (else 0) asks for INFO
 * replication after the write, in its round trip: when the count was 0
 * for HL_WAIT_RELEARN_MS (one thread asks, the others keep 0 meanwhile;
 * *ask is then the time of that claim), or when the cache has none for
 * this node (*ask -1: the answer is for this write only). */
static int wait_count(hl_client *c, hl_conn *conn, const hl_addr *node,
                      uint64_t epoch, const hl_bound *b, int64_t *ask)
{
	hl_replica_count *rc;
	int known = -1;
	*ask = 0;
	if (c->conf.wait_replicas == 0)
		return 0;
	pthread_mutex_lock(&c->topo_mu);
	if ((rc = replica_cache(c, node, epoch)) == NULL) {
		*ask = -1;
		known = 0;
	} else if ((known = rc->n) == 0) {
		int64_t now = hl__now_ms();
		if (now - rc->at_ms >= HL_WAIT_RELEARN_MS)
			rc->at_ms = *ask = now;
	}
	pthread_mutex_unlock(&c->topo_mu);
	if (known < 0) {
		hl_reply *r = NULL;
		const char *argv[2] = {"INFO", "replication"};
		if (hl__router_one(c, conn, &r, 2, argv, b) != HL_OK)
			return -1; /* the connection broke: the caller retries
			            */
		known = parse_connected_slaves(r);
		hl__reply_free(r);
		if (known < 0)
			known = 0;
		replicas_learnt(c, node, epoch, known);
	}
	return wait_n(c, known);
}

/* The INFO asked after a write did not answer (the round trip failed): a
 * retry of the write asks again, instead of taking the claimed 0. */
static void ask_failed(hl_client *c, const hl_addr *node, uint64_t epoch,
                       int64_t ask)
{
	hl_replica_count *rc;
	if (ask <= 0)
		return;
	pthread_mutex_lock(&c->topo_mu);
	rc = replica_cache(c, node, epoch);
	if (rc && rc->n == 0 && rc->at_ms == ask)
		rc->at_ms = ask - HL_WAIT_RELEARN_MS;
	pthread_mutex_unlock(&c->topo_mu);
}

/* WAIT n on conn, after a write whose round trip learnt that node has
 * replicas: how many confirmed it, or -1 when conn broke. */
static long long wait_after(hl_client *c, hl_conn *conn, int n,
                            const hl_bound *b)
{
	char waitn[16], waitms[24];
	const char *argv[3] = {"WAIT", waitn, waitms};
	const char **argvp = argv;
	size_t lens[3];
	const size_t *lensp = lens;
	int argc = 3;
	hl_reply *r = NULL;
	enum hl_sent sent;
	long long acked = -1;
	snprintf(waitn, sizeof(waitn), "%d", n);
	snprintf(waitms, sizeof(waitms), "%lld",
	         (long long)c->conf.wait_timeout_ms);
	lens[0] = 4;
	lens[1] = strlen(waitn);
	lens[2] = strlen(waitms);
	if (hl__conn_roundtrip(conn, 1, &argc, &argvp, &lensp, &r, &sent, b,
	                       c->conf.command_timeout_ms +
	                               c->conf.wait_timeout_ms) == HL_OK)
		acked = hl__reply_int(r);
	if (r)
		hl__reply_free(r);
	return acked;
}

/* WAIT answered acked: fewer than asked makes the count learnt again. */
static void wait_answered(hl_client *c, const hl_addr *node, uint64_t epoch,
                          int asked, long long acked)
{
	hl_replica_count *rc;
	if (acked >= asked)
		return;
	pthread_mutex_lock(&c->topo_mu);
	if ((rc = replica_cache(c, node, epoch)) != NULL)
		rc->n = -1;
	pthread_mutex_unlock(&c->topo_mu);
}

/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the slot and where it is. */
static int parse_redirect(const char *e, unsigned *slot, hl_addr *to)
{
	char host[256];
	const char *sp = strchr(e, ' '), *colon;
	unsigned long sl;
	long port;
	char *end;
	if (!sp)
		return -1;
	sl = strtoul(sp + 1, &end, 10);
	if (*end != ' ' || sl >= 16384)
		return -1;
	colon = strrchr(end + 1, ':');
	if (!colon || (size_t)(colon - end - 1) >= sizeof(host) ||
	    colon == end + 1)
		return -1;
	memcpy(host, end + 1, (size_t)(colon - end - 1));
	host[colon - end - 1] = '\0';
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535)
		return -1;
	memset(to, 0, sizeof(*to));
	/* "[::1]:6379" comes without the brackets in MOVED; an empty host
	 * means the node we asked (Redis 7's cluster-preferred-endpoint) */
	snprintf(to->host, sizeof(to->host), "%s", host);
	to->port = (int)port;
	*slot = (unsigned)sl;
	return 0;
}

/* A retry pause that ends early when the topology changes (the sentinels
 * named a new master, the slot map moved): the next attempt goes there at
 * once instead of waiting out a backoff meant for the old node. */
static int pause_for_topology(hl_client *c, int64_t ms, uint64_t routed,
                              const hl_bound *b)
{
	uint64_t epoch = hl__router_epoch(c);
	int64_t until = hl__now_ms() + ms;
	int rc = HL_OK;
	/* The failed attempt already learned where to go now (a connect
	 * refused asks the sentinels at once): go there without a pause,
	 * which a short wait such as a try-acquire's would not outlast. */
	if (routed && epoch != routed)
		return HL_OK;
	while (rc == HL_OK && hl__router_epoch(c) == epoch) {
		int64_t left = until - hl__now_ms();
		if (left <= 0)
			break;
		rc = hl__pause(c, left < 20 ? left : 20, b);
	}
	return rc;
}

_Thread_local int64_t hl__tl_sent_ms;
_Thread_local int hl__tl_heard;

int hl__command_ex(hl_client *c, hl_reply **out, int argc, const char **argv,
                   const size_t *lens, int flags, enum hl_sent *sentp,
                   const hl_bound *b, int *replicated)
{
	size_t keylen = 0;
	const char *key = command_key(argc, argv, lens, &keylen);
	return hl__command_at(c, out, argc, argv, lens, flags, sentp, b,
	                      replicated, key, keylen);
}

int hl__command_at(hl_client *c, hl_reply **out, int argc, const char **argv,
                   const size_t *lens, int flags, enum hl_sent *sentp,
                   const hl_bound *b, int *replicated, const char *key,
                   size_t keylen)
{
	enum { MAXN = HL_FENCES_PER_TRIP + 3 };
	int slot = -1, rc = HL_OK, attempt, i, asking = 0, redirects = 0;
	enum hl_sent sent = HL_SENT_NOTHING, any_sent = HL_SENT_NOTHING;
	/* The node last routed to (kept across attempts: a failed route
	 * leaves it as it was), named in messages, formatted only for one. */
	char label[300] = "";
	hl_addr node;
	int labelled = 0;
	hl_addr ask_node;
	*out = NULL;
	if (replicated)
		*replicated = -1;
	for (attempt = 0;; attempt++) {
		hl_conn *conn;
		uint64_t epoch = 0, reads;
		hl_fence f[HL_FENCES_PER_TRIP];
		char ids[HL_FENCES_PER_TRIP][24], waitn[16], waitms[24];
		const char *fargv[HL_FENCES_PER_TRIP][6], *wargv[3];
		const char *askv[1] = {"ASKING"};
		const char *infov[2] = {"INFO", "replication"};
		size_t flens[HL_FENCES_PER_TRIP][6], wlens[3], asklen[1] = {6};
		size_t infolens[2] = {4, 11};
		int64_t ask = 0;
		const char **argvp[MAXN];
		const size_t *lensp[MAXN];
		int argcs[MAXN];
		hl_reply *replies[MAXN];
		int nf, n, ci, wi = -1, ii = -1, refresh = 0;
		unsigned rslot;
		hl_addr to;

		if (asking) {
			node = ask_node;
			epoch = hl__router_epoch(c);
		} else if ((rc = route(c, flags, key, keylen, &node, &epoch,
		                       b)) != HL_OK) {
			if (rc == HL_EINVAL || rc == HL_ENOMEM)
				break;
			sent = HL_SENT_NOTHING;
			goto retry;
		}
		labelled = 1;
		if ((rc = pool_take(c, &slot, &node, epoch, b)) != HL_OK)
			break;
		conn = c->pool[slot].conn;
		if (!conn) {
			rc = hl__conn_open(&conn, &c->conf, &node, HL_CONN_DATA,
			                   b);
			if (rc == HL_ECONNECT) {
				/* Nothing sent: try again after a pause, and
				 * ask where the master is now. */
				sent = HL_SENT_NOTHING;
				pool_give(c, slot);
				asking = 0;
				hl__router_suspect(c, b);
				goto retry;
			}
			if (rc != HL_OK) {
				pool_give(c, slot);
				break;
			}
			c->pool[slot].conn = conn;
			c->pool[slot].addr = node;
			c->pool[slot].epoch = epoch;
			hl__obs_conn_made(c, &node);
		}
		/* The pipeline: fences, ASKING (after an ASK), the command,
		 * WAIT (a write on a master with replicas) or INFO (asking
		 * again whether it has any). */
		nf = fences_pending(c, &node, f, HL_FENCES_PER_TRIP);
		for (i = 0; i < nf; i++) {
			snprintf(ids[i], sizeof(ids[i]), "%lld", f[i].id);
			fargv[i][0] = "CLIENT";
			fargv[i][1] = "KILL";
			fargv[i][2] = "ID";
			fargv[i][3] = ids[i];
			fargv[i][4] = "ADDR";
			fargv[i][5] = f[i].addr;
			flens[i][0] = 6;
			flens[i][1] = 4;
			flens[i][2] = 2;
			flens[i][3] = strlen(ids[i]);
			flens[i][4] = 4;
			flens[i][5] = strlen(f[i].addr);
			argcs[i] = 6;
			argvp[i] = fargv[i];
			lensp[i] = flens[i];
		}
		n = nf;
		if (asking) {
			argcs[n] = 1;
			argvp[n] = askv;
			lensp[n++] = asklen;
		}
		ci = n;
		argcs[n] = argc;
		argvp[n] = argv;
		lensp[n++] = lens;
		if ((flags & HL_CMD_WRITE) && replicated) {
			/* A lock-changing write waits for the replicas, in
			 * the same round trip (Redisson's synced eval). */
			int w = wait_count(c, conn, &node, epoch, b, &ask);
			if (w < 0) {
				rc = HL_EIO;
				sent = HL_SENT_NOTHING; /* only INFO was */
				goto broken;
			}
			if (w > 0) {
				snprintf(waitn, sizeof(waitn), "%d", w);
				snprintf(waitms, sizeof(waitms), "%lld",
				         (long long)c->conf.wait_timeout_ms);
				wargv[0] = "WAIT";
				wargv[1] = waitn;
				wargv[2] = waitms;
				wlens[0] = 4;
				wlens[1] = strlen(waitn);
				wlens[2] = strlen(waitms);
				wi = n;
				argcs[n] = 3;
				argvp[n] = wargv;
				lensp[n++] = wlens;
			} else if (ask) {
				ii = n;
				argcs[n] = 2;
				argvp[n] = infov;
				lensp[n++] = infolens;
			}
		}
		reads = hl__conn_reads(conn);
		hl__tl_sent_ms = hl__now_ms();
		rc = hl__conn_roundtrip(
		        conn, n, argcs, argvp, lensp, replies, &sent, b,
		        c->conf.command_timeout_ms +
		                (wi >= 0 ? c->conf.wait_timeout_ms : 0));
		if (rc == HL_OK || hl__conn_reads(conn) != reads)
			hl__tl_heard = 1;
		if (rc == HL_OK) {
			hl_reply *r = replies[ci];
			if (nf)
				fences_done(c, f, nf, replies);
			for (i = 0; i < n; i++)
				if (i != ci && i != wi && i != ii)
					hl__reply_free(replies[i]);
			if (wi >= 0) {
				long long acked = hl__reply_int(replies[wi]);
				wait_answered(c, &node, epoch, atoi(waitn),
				              acked);
				*replicated = (int)acked;
				hl__reply_free(replies[wi]);
			}
			if (ii >= 0) {
				/* The replicas asked again: any now? Then
				 * this write waits for them after all. */
				int k = parse_connected_slaves(replies[ii]), w;
				hl__reply_free(replies[ii]);
				if (k < 0)
					k = 0; /* as wait_count: none said */
				replicas_learnt(c, &node, epoch, k);
				w = wait_n(c, k);
				if (w > 0 &&
				    hl__reply_type(r) != HL_REPLY_ERROR) {
					long long acked =
					        wait_after(c, conn, w, b);
					if (acked < 0) {
						/* broke: not confirmed */
						hl__obs_conn_broke(c, &node,
						                   NULL);
						hl__conn_free(conn);
						c->pool[slot].conn = NULL;
						acked = 0;
					}
					wait_answered(c, &node, epoch, w,
					              acked);
					*replicated = (int)acked;
				}
			}
			pool_give(c, slot);
			asking = 0;
			if (hl__reply_type(r) == HL_REPLY_ERROR &&
			    (strncmp(hl__reply_str(r), "MOVED ", 6) == 0 ||
			     strncmp(hl__reply_str(r), "ASK ", 4) == 0) &&
			    parse_redirect(hl__reply_str(r), &rslot, &to) ==
			            0 &&
			    redirects++ < 16) {
				/* The slot is elsewhere (MOVED: for good; ASK:
				 * while it migrates). It did not run here: go
				 * there at once. */
				if (to.host[0] == '\0')
					snprintf(to.host, sizeof(to.host), "%s",
					         node.host);
				if (hl__reply_str(r)[0] == 'A') {
					ask_node = to;
					asking = 1;
				} else {
					hl__cluster_moved(c, rslot, &to);
				}
				hl__reply_free(r);
				attempt--;
				continue;
			}
			if (!routing_error(r, &refresh)) {
				*out = r;
				break;
			}
			/* It did not run: refresh or pause, then again. */
			rc = hl__fail(HL_EREDIS, "%s: %s",
			              hl__addr_str(&node, label, sizeof(label)),
			              hl__reply_str(r));
			hl__reply_free(r);
			if (refresh || c->conf.url.topology == HL_TOPO_CLUSTER)
				hl__router_suspect(c, b);
			if (attempt == 0)
				attempt++; /* pause even the first time */
			goto retry;
		}
		for (i = 0; i < n; i++)
			if (replies[i])
				hl__reply_free(replies[i]);
		ask_failed(c, &node, epoch, ask);
	broken:
		asking = 0;
		if (rc == HL_EIO || rc == HL_ETIMEDOUT)
			hl__obs_conn_broke(c, &node, NULL);
		if (sent == HL_SENT_MAYBE) {
			any_sent = HL_SENT_MAYBE;
			if (flags & HL_CMD_WRITE)
				fence_add(c, conn, &node);
		}
		hl__conn_free(conn);
		c->pool[slot].conn = NULL;
		pool_give(c, slot);
		if (rc != HL_EIO)
			break; /* the bound stopped it, or out of memory */
		if (sent == HL_SENT_MAYBE && !(flags & HL_CMD_IDEMPOTENT))
			break;
		/* The master may have failed: ask (sentinel, cluster). */
		if (attempt > 0 || c->conf.url.topology == HL_TOPO_CLUSTER)
			hl__router_suspect(c, b);
	retry:
		if (attempt >= c->conf.retry_attempts) {
			/* The server is named once: a failed connect named
			 * it already. */
			int named;
			if (labelled)
				hl__addr_str(&node, label, sizeof(label));
			named = label[0] &&
			        strstr(hl_error_last(), label) != NULL;
			rc = hl__fail_wrap(
			        rc == HL_EREDIS ? HL_EREDIS : HL_EIO,
			        "%s%sno answer after %d %s", named ? "" : label,
			        named || !label[0] ? "" : ": ", attempt + 1,
			        attempt ? "attempts" : "attempt");
			break;
		}
		/* A broken pooled connection is common after a restart and
		 * costs nothing to replace: retry the first time at once. */
		if (attempt > 0 || rc == HL_ECONNECT) {
			char last[256];
			int prc;
			snprintf(last, sizeof(last), "%s", hl_error_last());
			prc = pause_for_topology(
			        c,
			        hl__jitter_delay(c->conf.retry_delay_ms,
			                         attempt),
			        epoch, b);
			if (prc == HL_ETIMEDOUT)
				/* the wait ended between tries: say why they
				 * failed (an outage is no mere deadline) */
				prc = hl__fail(HL_ETIMEDOUT,
				               "the deadline passed while "
				               "retrying: %s",
				               last);
			if (prc != HL_OK) {
				rc = prc;
				break;
			}
		}
	}
	/* Also after a success: an earlier attempt may have run too. */
	if (sentp)
		*sentp = any_sent;
	return rc;
}

int hl__command(hl_client *c, hl_reply **out, int argc, const char **argv,
                const size_t *lens, int flags, enum hl_sent *sentp,
                const hl_bound *b)
{
	return hl__command_ex(c, out, argc, argv, lens, flags, sentp, b, NULL);
}

int hl__reply_error(const hl_reply *r, const char *what)
{
	return hl__fail(HL_EREDIS, "%s: redis error: %.400s", what,
	                hl__reply_type(r) == HL_REPLY_ERROR ? hl__reply_str(r)
	                                                    : "?");
}

int hl__eval(hl_client *c, hl_reply **out, enum hl_script_id id, int nkeys,
             int nargs, const char **args, const size_t *lens, int flags,
             enum hl_sent *sent, const hl_bound *b, int *replicated)
{
	/* argv: EVALSHA sha numkeys keys... args... */
	const char *argv[3 + 256];
	size_t alen[3 + 256];
	char nk[HL_DEC_MAX];
	int argc = 3 + nargs, rc;
	if (nargs > 256)
		return hl__fail(HL_EINVAL, "too many script arguments");
	argv[0] = "EVALSHA";
	alen[0] = 7;
	argv[1] = c->sha[id];
	alen[1] = 40;
	argv[2] = nk;
	alen[2] = hl__fmt_i64(nk, nkeys);
	memcpy(argv + 3, args, sizeof(*args) * (size_t)nargs);
	memcpy(alen + 3, lens, sizeof(*lens) * (size_t)nargs);
	rc = hl__command_ex(c, out, argc, argv, alen, flags, sent, b,
	                    replicated);
	if (rc == HL_OK && hl__reply_type(*out) == HL_REPLY_ERROR &&
	    strncmp(hl__reply_str(*out), "NOSCRIPT", 8) == 0) {
		/* The server lost its script cache (restart, SCRIPT FLUSH,
		 * or a failover: a promoted replica never had it, since
		 * scripts replicate as their effects): EVAL runs it and
		 * caches it again. NOSCRIPT means nothing ran here, so this
		 * cannot apply the script twice; but an earlier attempt
		 * whose reply was lost (on the old master) may have run, and
		 * that stays said (a release resent after a failover that
		 * finds its hold gone was released by that attempt, not
		 * lost). */
		enum hl_sent earlier = sent ? *sent : HL_SENT_NOTHING;
		hl__reply_free(*out);
		*out = NULL;
		argv[0] = "EVAL";
		alen[0] = 4;
		argv[1] = hl__script(id)->source;
		alen[1] = strlen(argv[1]);
		rc = hl__command_ex(c, out, argc, argv, alen, flags, sent, b,
		                    replicated);
		if (sent && earlier == HL_SENT_MAYBE)
			*sent = HL_SENT_MAYBE;
	}
	return rc;
}

/* ---- start, stop, and the sentinel watcher ------------------------------ */

/* Follow the master under sentinel: subscribed to +switch-master on one
 * sentinel (the next one when it fails), and asking every second anyway,
 * since a message can be missed while no sentinel is reachable. */
static void *sentinel_main(void *arg)
{
	hl_client *c = arg;
	const hl_url *u = &c->conf.url;
	hl_conn *sub = NULL;
	int next = 0;
	hl_bound b;
	hl__thread_name("hl-sentinel");
	hl__bound_init(&b, c, -1, NULL, 0);
	for (;;) {
		hl_addr m;
		struct pollfd pfd[2];
		int stop, rc;
		pthread_mutex_lock(&c->topo_mu);
		stop = c->topo_stop;
		pthread_mutex_unlock(&c->topo_mu);
		if (stop || atomic_load(&c->closing))
			break;
		if (!sub) {
			const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
			size_t lens[2] = {9, 14};
			rc = hl__conn_open(&sub, &c->conf,
			                   &u->hosts[next++ % u->nhosts],
			                   HL_CONN_SENTINEL, &b);
			if (rc == HL_OK &&
			    hl__conn_append(sub, 2, argv, lens) != HL_OK) {
				hl__conn_free(sub);
				sub = NULL;
			}
		}
		if (sub) {
			int wrote;
			if (hl__conn_write_some(sub, &wrote) != HL_OK) {
				hl__conn_free(sub);
				sub = NULL;
			}
		}
		pfd[0].fd = sub ? hl__conn_fd(sub) : -1;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		pfd[1].fd = c->topo_wake.rfd; /* close: stop at once */
		pfd[1].events = POLLIN;
		pfd[1].revents = 0;
		rc = poll(pfd, 2, 1000);
		if (pfd[1].revents)
			break;
		if (rc > 0 && sub && pfd[0].revents) {
			hl_reply *r = NULL;
			if (hl__conn_read_some(sub) != HL_OK) {
				hl__conn_free(sub);
				sub = NULL;
				continue;
			}
			/* "message" "+switch-master" "<name> <old ip>
			 * <old port> <new ip> <new port>" */
			while (hl__conn_next_reply(sub, &r) == HL_OK && r) {
				char name[256], ip[256];
				int oldp, newp;
				const char *msg =
				        hl__reply_str(hl__reply_at(r, 2));
				if (strcmp(hl__reply_str(hl__reply_at(r, 0)),
				           "message") == 0 &&
				    sscanf(msg, "%255s %*s %d %255s %d", name,
				           &oldp, ip, &newp) == 4 &&
				    strcmp(name, u->master_name) == 0) {
					memset(&m, 0, sizeof(m));
					snprintf(m.host, sizeof(m.host), "%s",
					         ip);
					m.port = newp;
					set_master(c, &m);
				}
				hl__reply_free(r);
				r = NULL;
			}
			continue;
		}
		/* A quiet second: ask, in case a message was missed. */
		if (sentinel_ask(c, &m, &b) == HL_OK)
			set_master(c, &m);
	}
	hl__conn_free(sub);
	return NULL;
}

int hl__router_start(hl_client *c)
{
	const hl_url *u = &c->conf.url;
	hl_bound b;
	int rc, tries;
	int64_t start = hl__now_ms(), left;
	hl__bound_plain(&b,
	                hl__now_ms() + c->conf.connect_timeout_ms +
	                        c->conf.command_timeout_ms,
	                NULL);
	c->master_replicas.n = -1;
	if (u->topology == HL_TOPO_CLUSTER) {
		/* The slot map, then one connection to a master to prove
		 * the credentials and load the scripts (the other nodes
		 * learn them through EVAL on their first NOSCRIPT). */
		if ((rc = hl__cluster_refresh(c, &b)) != HL_OK)
			return rc;
		pthread_mutex_lock(&c->topo_mu);
		c->master = c->cnodes[0].addr;
		pthread_mutex_unlock(&c->topo_mu);
	} else if (u->topology == HL_TOPO_SENTINEL) {
		hl_addr m;
		if ((rc = sentinel_ask(c, &m, &b)) != HL_OK)
			return rc;
		c->master = m;
	} else {
		c->master = u->hosts[0];
		if (u->topology == HL_TOPO_REPLICA)
			set_replicas(c, u->hosts + 1, u->nhosts - 1);
	}
	/* The first connection proves the master, the credentials and the
	 * database before the client exists. Under sentinel the master must
	 * say so (ROLE): during a failover the sentinels may still name the
	 * old one for a moment. */
	for (tries = 0;; tries++) {
		rc = hl__router_connect_master(c, &c->pool[0].conn, NULL, &b);
		if (rc == HL_OK || u->topology != HL_TOPO_SENTINEL ||
		    tries >= c->conf.retry_attempts ||
		    hl__bound_check(&b) != HL_OK)
			break;
		hl__pause(c, hl__jitter_delay(c->conf.retry_delay_ms, tries),
		          &b);
	}
	if (rc != HL_OK)
		return rc;
	hl__router_master(c, &c->pool[0].addr, &c->pool[0].epoch);
	/* within command_timeout_ms, and (but for a short floor, so that a
	 * slow but answering server is not refused) connect_timeout_ms of
	 * the start */
	left = start + c->conf.connect_timeout_ms - hl__now_ms();
	if (left < 250)
		left = 250;
	if (left > c->conf.command_timeout_ms)
		left = c->conf.command_timeout_ms;
	return hl__load_scripts(c, c->pool[0].conn, left);
}

int hl__router_watch(hl_client *c)
{
	int err;
	if (c->conf.url.topology != HL_TOPO_SENTINEL)
		return HL_OK;
	if (hl__notify_open(&c->topo_wake, 0) < 0)
		return hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		                strerror(errno));
	err = pthread_create(&c->topo_thread, NULL, sentinel_main, c);
	if (err) {
		hl__notify_close(&c->topo_wake);
		return hl__fail(HL_ESYSTEM, "starting the sentinel thread: %s",
		                strerror(err));
	}
	c->topo_thread_live = 1;
	return HL_OK;
}

void hl__router_stop(hl_client *c)
{
	if (!c->topo_thread_live)
		return;
	pthread_mutex_lock(&c->topo_mu);
	c->topo_stop = 1;
	pthread_mutex_unlock(&c->topo_mu);
	hl__notify_set(&c->topo_wake);
	pthread_join(c->topo_thread, NULL);
	hl__notify_close(&c->topo_wake);
	c->topo_thread_live = 0;
}

int hl__command_on_node(hl_client *c, hl_reply **out, int argc,
                        const char **argv, const size_t *lens,
                        enum hl_sent *sentp, const hl_bound *b,
                        const hl_addr *a)
{
	uint64_t epoch = hl__router_epoch(c);
	hl_conn *conn;
	int slot, rc;
	*out = NULL;
	*sentp = HL_SENT_NOTHING;
	if ((rc = pool_take(c, &slot, a, epoch, b)) != HL_OK)
		return rc;
	conn = c->pool[slot].conn;
	if (!conn) {
		rc = hl__conn_open(&conn, &c->conf, a, HL_CONN_DATA, b);
		if (rc != HL_OK) {
			pool_give(c, slot);
			return rc;
		}
		c->pool[slot].conn = conn;
		c->pool[slot].addr = *a;
		c->pool[slot].epoch = epoch;
		hl__obs_conn_made(c, a);
	}
	rc = hl__conn_roundtrip(conn, 1, &argc, &argv, &lens, out, sentp, b,
	                        c->conf.command_timeout_ms);
	if (rc != HL_OK) {
		if (rc == HL_EIO || rc == HL_ETIMEDOUT)
			hl__obs_conn_broke(c, a, NULL);
		hl__conn_free(conn);
		c->pool[slot].conn = NULL;
	}
	pool_give(c, slot);
	return rc;
}
