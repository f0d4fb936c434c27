/*
 * Redis Cluster: the slot map. Loaded with CLUSTER SLOTS from any node the
 * client knows (the URL's seeds first), and again when a node answers
 * MOVED, fails, or says CLUSTERDOWN. Each slot maps to its master; a
 * failed-over master's slots move to its replica with the next load. Every
 * change of the map bumps the topology epoch.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HL_NO_NODE    0xffff
#define HL_MAX_CNODES 1024

/* [ip, port, id...] of CLUSTER SLOTS. */
static int node_addr(const hl_reply *n, hl_addr *out)
{
	const hl_reply *ip = hl__reply_at(n, 0), *port = hl__reply_at(n, 1);
	if (hl__reply_len(n) < 2 || hl__reply_strlen(ip) == 0 ||
	    hl__reply_strlen(ip) >= sizeof(out->host) ||
	    hl__reply_int(port) < 1 || hl__reply_int(port) > 65535)
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out->host, hl__reply_str(ip), hl__reply_strlen(ip));
	out->port = (int)hl__reply_int(port);
	return 0;
}

static int cnode_index(struct hl_cnode *nodes, int *n, const hl_addr *a)
{
	int i;
	for (i = 0; i < *n; i++)
		if (hl__addr_eq(&nodes[i].addr, a))
			return i;
	if (*n >= HL_MAX_CNODES)
		return -1;
	nodes[*n].addr = *a;
	nodes[*n].replicas.n = -1;
	nodes[*n].replicas.at_ms = 0;
	return (*n)++;
}

/* Parse a CLUSTER SLOTS reply into a new map. */
static int parse_slots(const hl_reply *r, uint16_t *slots,
                       struct hl_cnode *nodes, int *nnodes)
{
	size_t i;
	int covered = 0;
	for (i = 0; i < HL_SLOTS; i++)
		slots[i] = HL_NO_NODE;
	*nnodes = 0;
	for (i = 0; i < hl__reply_len(r); i++) {
		const hl_reply *range = hl__reply_at(r, i);
		long long lo = hl__reply_int(hl__reply_at(range, 0));
		long long hi = hl__reply_int(hl__reply_at(range, 1));
		hl_addr a;
		int k;
		long long s;
		if (hl__reply_len(range) < 3 || lo < 0 || hi >= HL_SLOTS ||
		    lo > hi || node_addr(hl__reply_at(range, 2), &a) != 0)
			continue;
		if ((k = cnode_index(nodes, nnodes, &a)) < 0)
			return -1;
		for (s = lo; s <= hi; s++)
			slots[s] = (uint16_t)k;
		covered += (int)(hi - lo + 1);
	}
	return covered;
}

/* Load the slot map from the first node that gives one: the known masters,
 * then the URL's seeds. Bumps the epoch when the map changed. */
int hl__cluster_refresh(hl_client *c, const hl_bound *b)
{
	uint16_t *slots = malloc(HL_SLOTS * sizeof(*slots));
	struct hl_cnode *nodes = calloc(HL_MAX_CNODES, sizeof(*nodes));
	hl_addr *try = NULL;
	int ntry = 0, i, rc = HL_ECONNECT, nnodes = 0, sharded = -1;
	char tried[400] = "";
	if (!slots || !nodes) {
		free(slots);
		free(nodes);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&c->topo_mu);
	try = malloc((size_t)(c->ncnodes + c->conf.url.nhosts) * sizeof(*try));
	if (try) {
		for (i = 0; i < c->ncnodes; i++)
			try[ntry++] = c->cnodes[i].addr;
		for (i = 0; i < c->conf.url.nhosts; i++)
			try[ntry++] = c->conf.url.hosts[i];
	}
	pthread_mutex_unlock(&c->topo_mu);
	if (!try) {
		free(slots);
		free(nodes);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < ntry; i++) {
		hl_conn *conn = NULL;
		hl_reply *r = NULL;
		const char *argv[3] = {"CLUSTER", "SLOTS", NULL};
		char a[300];
		int covered;
		rc = hl__conn_open(&conn, &c->conf, &try[i], HL_CONN_DATA, b);
		if (rc == HL_OK)
			rc = hl__router_one(c, conn, &r, 2, argv, b);
		if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
			rc = hl__fail(HL_EREDIS, "%s: CLUSTER SLOTS: %s",
			              hl__addr_str(&try[i], a, sizeof(a)),
			              hl__reply_str(r));
		if (rc == HL_OK) {
			covered = parse_slots(r, slots, nodes, &nnodes);
			if (covered <= 0)
				rc = hl__fail(
				        HL_EREDIS,
				        "%s serves no slots (is it a "
				        "cluster node?)",
				        hl__addr_str(&try[i], a, sizeof(a)));
		}
		if (rc == HL_OK && sharded < 0) {
			/* Redis 7 has sharded pub/sub: Redisson then
			 * publishes with SPUBLISH, and so must we. */
			hl_reply *p = NULL;
			const char *pv[3] = {"PUBSUB", "SHARDNUMSUB", NULL};
			sharded = hl__router_one(c, conn, &p, 2, pv, b) ==
			                  HL_OK &&
			          hl__reply_type(p) == HL_REPLY_ARRAY;
			hl__reply_free(p);
		}
		hl__reply_free(r);
		hl__conn_free(conn);
		if (rc == HL_OK)
			break;
		if (rc != HL_ECONNECT && rc != HL_EIO && rc != HL_EREDIS &&
		    rc != HL_EAUTH)
			break; /* the bound stopped it */
		snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried),
		         "%s%s", tried[0] ? "; " : "", hl_error_last());
	}
	free(try);
	if (rc == HL_OK) {
		int changed;
		pthread_mutex_lock(&c->topo_mu);
		/* The same slots on the same masters is no change: the
		 * replica counts learnt for them stay (comparing those too
		 * made every load after the first WAIT a change). */
		changed = !c->slots || c->ncnodes != nnodes ||
		          memcmp(c->slots, slots, HL_SLOTS * sizeof(*slots));
		for (i = 0; !changed && i < nnodes; i++)
			changed = !hl__addr_eq(&c->cnodes[i].addr,
			                       &nodes[i].addr);
		hl__obs_cluster_map(c, nodes, nnodes);
		if (changed) {
			free(c->slots);
			free(c->cnodes);
			c->slots = slots;
			c->cnodes = nodes;
			c->ncnodes = nnodes;
			slots = NULL;
			nodes = NULL;
			atomic_fetch_add(&c->topo_epoch, 1);
		}
		if (sharded >= 0)
			c->sharded = sharded;
		c->refreshed_ms = hl__now_ms();
		pthread_mutex_unlock(&c->topo_mu);
		if (changed) {
			hl__pubsub_kick(c);
			hl__watchdog_kick(c);
		}
	} else if (rc == HL_ECONNECT || rc == HL_EIO || rc == HL_EREDIS) {
		rc = hl__fail(rc, "no cluster node gave its slots: %s", tried);
	}
	free(slots);
	free(nodes);
	return rc;
}

/* MOVED <slot> <ip:port>: that slot is served there now. */
void hl__cluster_moved(hl_client *c, unsigned slot, const hl_addr *to)
{
	pthread_mutex_lock(&c->topo_mu);
	if (c->slots && slot < HL_SLOTS) {
		int i;
		for (i = 0; i < c->ncnodes; i++)
			if (hl__addr_eq(&c->cnodes[i].addr, to))
				break;
		if (i == c->ncnodes && c->ncnodes < HL_MAX_CNODES) {
			struct hl_cnode *n =
			        realloc(c->cnodes,
			                (size_t)(c->ncnodes + 1) * sizeof(*n));
			if (n) {
				c->cnodes = n;
				c->cnodes[i].addr = *to;
				c->cnodes[i].replicas.n = -1;
				c->cnodes[i].replicas.at_ms = 0;
				c->ncnodes++;
				hl__obs_cluster_moved(c, c->slots[slot], to);
			}
		}
		if (i < c->ncnodes && c->slots[slot] != i) {
			c->slots[slot] = (uint16_t)i;
			atomic_fetch_add(&c->topo_epoch, 1);
		}
	}
	pthread_mutex_unlock(&c->topo_mu);
}

int hl__router_node_cached(hl_client *c, const void *key, size_t len,
                           hl_addr *out, uint64_t *epoch)
{
	unsigned slot = hl__slot(key, len);
	int rc = -1;
	pthread_mutex_lock(&c->topo_mu);
	if (c->slots && c->slots[slot] != HL_NO_NODE) {
		*out = c->cnodes[c->slots[slot]].addr;
		*epoch = atomic_load(&c->topo_epoch);
		rc = 0;
	}
	pthread_mutex_unlock(&c->topo_mu);
	return rc;
}

int hl__router_node_for_key(hl_client *c, const void *key, size_t len,
                            hl_addr *out, uint64_t *epoch, const hl_bound *b)
{
	unsigned slot = hl__slot(key, len);
	int tries;
	for (tries = 0; tries < 2; tries++) {
		int rc;
		pthread_mutex_lock(&c->topo_mu);
		if (c->slots && c->slots[slot] != HL_NO_NODE) {
			*out = c->cnodes[c->slots[slot]].addr;
			if (epoch)
				*epoch = atomic_load(&c->topo_epoch);
			pthread_mutex_unlock(&c->topo_mu);
			return HL_OK;
		}
		pthread_mutex_unlock(&c->topo_mu);
		if (tries == 0 && (rc = hl__cluster_refresh(c, b)) != HL_OK)
			return rc;
	}
	return hl__fail(HL_EREDIS,
	                "no cluster node serves slot %u (CLUSTERDOWN?)", slot);
}

hl_replica_count *hl__cluster_replica_count(hl_client *c, const hl_addr *a)
{
	int i;
	for (i = 0; i < c->ncnodes; i++)
		if (hl__addr_eq(&c->cnodes[i].addr, a))
			return &c->cnodes[i].replicas;
	return NULL;
}
