/*
 * Blocking commands (BLPOP, BLMOVE, XREAD BLOCK...): a place of their own.
 *
 * A blocking command holds its connection for as long as it waits, so it
 * never takes one of the pool's (a few takers would starve every other
 * call of the client). Each runs on a connection of its own, opened for it
 * or taken from a small cache of idle ones (per node and topology epoch),
 * and given back once answered.
 *
 * Ending a wait early (a cancel, hl_client_interrupt(), the client
 * closing, the caller's deadline) never loses what the command took: the
 * service sends CLIENT UNBLOCK <id> for it from another connection, then
 * reads the command's own answer. Redis answers either nil (unblocked) or
 * what it took before the unblock arrived; the latter is handed to the
 * caller like any answer (the cancel lost the race). Only when Redis
 * cannot be reached to unblock it or to read its answer is the outcome
 * unknown (sent maybe): the queue kinds make that recoverable (a move into
 * an in-flight list) rather than lost.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SLICE_MS 20

void hl__blocking_init(hl_client *c)
{
	pthread_mutex_init(&c->block_mu, NULL);
	c->block_nidle = 0;
}

void hl__blocking_free(hl_client *c)
{
	int i;
	for (i = 0; i < c->block_nidle; i++)
		hl__conn_free(c->block_idle[i].conn);
	c->block_nidle = 0;
}

static hl_conn *take_idle(hl_client *c, const hl_addr *a, uint64_t epoch)
{
	hl_conn *conn = NULL;
	int i;
	pthread_mutex_lock(&c->block_mu);
	for (i = c->block_nidle - 1; i >= 0; i--) {
		hl_pool_conn *p = &c->block_idle[i];
		if (p->epoch == epoch && hl__addr_eq(&p->addr, a) &&
		    !hl__conn_dead(p->conn)) {
			conn = p->conn;
			c->block_idle[i] = c->block_idle[--c->block_nidle];
			break;
		}
	}
	pthread_mutex_unlock(&c->block_mu);
	return conn;
}

static void give_back(hl_client *c, hl_conn *conn, const hl_addr *a,
                      uint64_t epoch)
{
	pthread_mutex_lock(&c->block_mu);
	if (!atomic_load(&c->closing) && c->block_nidle < HL_BLOCKING_IDLE) {
		hl_pool_conn *p = &c->block_idle[c->block_nidle++];
		p->conn = conn;
		p->addr = *a;
		p->epoch = epoch;
		p->busy = 0;
		conn = NULL;
	}
	pthread_mutex_unlock(&c->block_mu);
	hl__conn_free(conn);
}

/* Wait for conn's reply until until_ms (monotonic), checking b (NULL:
 * none) every slice: HL_OK and *out, or why it stopped (the bound's
 * status, HL_ETIMEDOUT at until_ms, HL_EIO when the connection broke). */
static int read_reply(hl_conn *conn, hl_reply **out, int64_t until_ms,
                      const hl_bound *b)
{
	for (;;) {
		struct pollfd p;
		int64_t left;
		int rc = hl__conn_next_reply(conn, out);
		if (rc != HL_OK)
			return rc;
		if (*out)
			return HL_OK;
		if (b && (rc = hl__bound_check(b)) != HL_OK)
			return rc;
		left = until_ms < 0 ? SLICE_MS : until_ms - hl__now_ms();
		if (left <= 0)
			return hl__fail(HL_ETIMEDOUT, "no answer in time");
		p.fd = hl__conn_fd(conn);
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, 1, (int)(left < SLICE_MS ? left : SLICE_MS)) > 0 &&
		    (rc = hl__conn_read_some(conn)) != HL_OK)
			return rc;
	}
}

static int write_all(hl_conn *conn, const hl_bound *b)
{
	while (hl__conn_pending_output(conn)) {
		struct pollfd p;
		int wrote = 0, rc = hl__conn_write_some(conn, &wrote);
		if (rc != HL_OK)
			return rc;
		if (!hl__conn_pending_output(conn))
			break;
		if ((rc = hl__bound_check(b)) != HL_OK)
			return rc;
		p.fd = hl__conn_fd(conn);
		p.events = POLLOUT;
		p.revents = 0;
		poll(&p, 1, SLICE_MS);
	}
	return HL_OK;
}

/* CLIENT UNBLOCK (kill: CLIENT KILL ID) the connection's command, from a
 * connection of its own (the pool may be closing with the client): HL_OK
 * when Redis answered it (a kill: the connection is gone there now, so
 * nothing it carried can run any more). */
static int client_cmd(hl_client *c, const hl_addr *a, hl_conn *conn, int kill)
{
	const char *addr = NULL;
	long long id = hl__conn_server_id(conn, &addr);
	char ids[24];
	const char *uargv[3] = {"CLIENT", "UNBLOCK", ids};
	const char *kargv[4] = {"CLIENT", "KILL", "ID", ids};
	const char **argv = kill ? kargv : uargv;
	hl_conn *u = NULL;
	hl_reply *r = NULL;
	hl_bound b;
	int rc;
	if (id < 0)
		return hl__fail(HL_EPROTOCOL, "the blocked connection's id is "
		                              "not known");
	snprintf(ids, sizeof ids, "%lld", id);
	hl__bound_plain(&b, hl__deadline(c->conf.command_timeout_ms), NULL);
	if ((rc = hl__router_connect(c, a, &u, &b)) != HL_OK)
		return rc;
	rc = hl__router_one(c, u, &r, kill ? 4 : 3, argv, &b);
	if (rc == HL_OK && kill && hl__reply_type(r) != HL_REPLY_INTEGER)
		rc = hl__fail(HL_EPROTOCOL, "CLIENT KILL answered no count");
	hl__reply_free(r);
	hl__conn_free(u);
	return rc;
}

static int unblock(hl_client *c, const hl_addr *a, hl_conn *conn)
{
	return client_cmd(c, a, conn, 0);
}

/* A broken connection whose command may still run (Redis may hold it
 * blocked, or its bytes may be on the way): kill it there, so that what
 * it took, if anything, is final. 1 if done. */
static int settle_broken(hl_client *c, const hl_addr *a, hl_conn *conn,
                         int *settled)
{
	if (!settled)
		return 0;
	*settled = client_cmd(c, a, conn, 1) == HL_OK;
	return *settled;
}

static int blocking_once(hl_client *c, hl_reply **out, int argc,
                         const char **argv, const size_t *lens, const char *key,
                         size_t keylen, int64_t wait_ms, const hl_bound *b,
                         enum hl_sent *sent, int *settled)
{
	hl_addr node;
	uint64_t epoch = 0;
	hl_conn *conn;
	int64_t until;
	int rc, stop;
	char label[300];
	*out = NULL;
	if (sent)
		*sent = HL_SENT_NOTHING;
	if (c->conf.url.topology == HL_TOPO_CLUSTER) {
		if (!key)
			return hl__fail(HL_EINVAL,
			                "a blocking command without a "
			                "key cannot be routed in a "
			                "cluster");
		rc = hl__router_node_for_key(c, key, keylen, &node, &epoch, b);
		if (rc != HL_OK)
			return rc;
	} else {
		hl__router_master(c, &node, &epoch);
	}
	hl__addr_str(&node, label, sizeof label);
	conn = take_idle(c, &node, epoch);
	if (!conn && (rc = hl__router_connect(c, &node, &conn, b)) != HL_OK)
		return rc;
	if ((rc = hl__conn_append(conn, argc, argv, lens)) != HL_OK) {
		hl__conn_free(conn);
		return rc;
	}
	if ((rc = write_all(conn, b)) != HL_OK) {
		/* part of it may be out: it may run */
		settle_broken(c, &node, conn, settled);
		hl__conn_free(conn);
		if (sent)
			*sent = HL_SENT_MAYBE;
		return rc;
	}
	if (sent)
		*sent = HL_SENT_MAYBE;
	/* Redis answers by itself when the command's own timeout ends: a
	 * command timeout more is a broken connection or node */
	until = wait_ms < 0
	                ? -1
	                : hl__now_ms() + wait_ms + c->conf.command_timeout_ms;
	rc = read_reply(conn, out, until, b);
	if (rc == HL_OK) {
		give_back(c, conn, &node, epoch);
		if (sent)
			*sent = HL_SENT_NOTHING;
		return HL_OK;
	}
	stop = rc;
	if (stop != HL_EINTERRUPTED && stop != HL_ECLOSED &&
	    !(stop == HL_ETIMEDOUT && b && hl__bound_check(b) != HL_OK)) {
		settle_broken(c, &node, conn, settled);
		hl__conn_free(conn);
		return hl__fail_wrap(stop == HL_ETIMEDOUT ? HL_EIO : stop,
		                     "%s: blocking %.40s", label, argv[0]);
	}
	/* The caller gave up: unblock it, and take what it answers (nil, or
	 * what it took just before). */
	rc = unblock(c, &node, conn);
	if (rc == HL_OK)
		rc = read_reply(conn, out,
		                hl__now_ms() + c->conf.command_timeout_ms,
		                NULL);
	if (rc != HL_OK) {
		hl__conn_free(conn);
		return hl__fail_wrap(stop,
		                     "%s: blocking %.40s stopped; it could not "
		                     "be unblocked (what it took, if anything, "
		                     "is not known)",
		                     label, argv[0]);
	}
	give_back(c, conn, &node, epoch);
	if (hl__reply_type(*out) == HL_REPLY_NIL ||
	    (hl__reply_type(*out) == HL_REPLY_ARRAY &&
	     hl__reply_len(*out) == 0)) {
		hl__reply_free(*out);
		*out = NULL;
		if (sent)
			*sent = HL_SENT_NOTHING;
		return hl__fail(stop, "%s: blocking %.40s: %s", label, argv[0],
		                stop == HL_ECLOSED     ? "the client closed"
		                : stop == HL_ETIMEDOUT ? "the wait ran out"
		                                       : "interrupted");
	}
	if (sent)
		*sent = HL_SENT_NOTHING;
	return HL_OK; /* it took something before the unblock: the caller's */
}

/* A redirection or a cluster not ready: nothing ran, ask again where.
 * UNBLOCKED: the node stopped being a master while the command waited (a
 * failover demoted it): nothing was taken. */
static int misrouted(const hl_reply *r)
{
	const char *e;
	if (!r || hl__reply_type(r) != HL_REPLY_ERROR)
		return 0;
	e = hl__reply_str(r);
	return strncmp(e, "MOVED", 5) == 0 || strncmp(e, "ASK", 3) == 0 ||
	       strncmp(e, "TRYAGAIN", 8) == 0 ||
	       strncmp(e, "CLUSTERDOWN", 11) == 0 ||
	       strncmp(e, "READONLY", 8) == 0 ||
	       strncmp(e, "UNBLOCKED", 9) == 0;
}

int hl__blocking_command(hl_client *c, hl_reply **out, int argc,
                         const char **argv, const size_t *lens, const char *key,
                         size_t keylen, int64_t wait_ms, const hl_bound *b,
                         enum hl_sent *sent)
{
	return hl__blocking_command_ex(c, out, argc, argv, lens, key, keylen,
	                               wait_ms, b, sent, NULL);
}

int hl__blocking_command_ex(hl_client *c, hl_reply **out, int argc,
                            const char **argv, const size_t *lens,
                            const char *key, size_t keylen, int64_t wait_ms,
                            const hl_bound *b, enum hl_sent *sent, int *settled)
{
	int attempt, rc = HL_OK;
	if (settled)
		*settled = 0;
	for (attempt = 0; attempt < 5; attempt++) {
		rc = blocking_once(c, out, argc, argv, lens, key, keylen,
		                   wait_ms, b, sent, settled);
		if (rc != HL_OK || !misrouted(*out))
			return rc;
		hl__reply_free(*out);
		*out = NULL;
		hl__router_suspect(c, b);
		if ((rc = hl__pause(c, 20 << attempt, b)) != HL_OK)
			return rc;
	}
	return hl__fail(HL_EIO,
	                "blocking %.40s: the node of its key kept moving",
	                argv[0]);
}
