/*
 * WAIT and the replicas a master has now (issue 18, item 1). A lock write
 * on a master with connected replicas is followed by WAIT, and an acquire
 * no replica confirmed is undone: a kill -9 of the master must not lose a
 * lock the library reported acquired.
 *
 * - undo_paused: a master and one replica (redis-replica://), the replica
 *   SIGSTOPped: WAIT answers 0, so no acquire reports the lock acquired
 *   and none leaves it held.
 * - late_replica: a master alone (redis:// and redis-replica://), whose
 *   replica attaches after the first writes: later writes are WAITed.
 * - sentinel_late_replica, cluster_late_replica: the master killed, the
 *   new master's replica started only after the first acquisitions on
 *   the new master; later acquisitions are WAITed, and a kill -9 of that
 *   master keeps a WAIT-confirmed lock on the replica it promotes.
 * The master's WAIT calls are counted from its INFO commandstats.
 */
#include "harness.h"
#include "harness_topo.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a master and a replica from two plain servers ----------------------
 */

/* How many times r's master ran WAIT. */
static long long waits_of(ht_redis *r)
{
	return ht_cmd_calls(r, "wait");
}

struct attached {
	ht_redis *m, *rep;
};

/* The master lists the replica online and the replica's link is up. */
static int is_attached(void *arg)
{
	struct attached *a = arg;
	redisReply *mi = ht_raw(ht_raw_of(a->m), "INFO replication");
	redisReply *ri = ht_raw(ht_raw_of(a->rep), "INFO replication");
	char want[64];
	int ok;
	snprintf(want, sizeof want, "port=%d,state=online", a->rep->port);
	ok = mi->type == REDIS_REPLY_STRING && ri->type == REDIS_REPLY_STRING &&
	     strstr(mi->str, want) != NULL &&
	     strstr(ri->str, "master_link_status:up") != NULL;
	freeReplyObject(mi);
	freeReplyObject(ri);
	return ok;
}

/* REPLICAOF: rep becomes m's replica, in sync when this returns. */
static void attach(ht_redis *m, ht_redis *rep)
{
	struct attached a = {m, rep};
	redisReply *r =
	        ht_raw(ht_raw_of(m), "CONFIG SET repl-diskless-sync-delay 0");
	freeReplyObject(r);
	r = ht_raw(ht_raw_of(rep), "REPLICAOF 127.0.0.1 %d", m->port);
	HT_CHECKF(r->type == REDIS_REPLY_STATUS, "REPLICAOF: %s",
	          r->str ? r->str : "?");
	freeReplyObject(r);
	HT_CHECK(ht_wait_until(is_attached, &a, 10000));
}

static long long hget_raw(ht_redis *r, const char *key, const char *field)
{
	return ht_hget_int(r, key, strlen(key), field);
}

static int undo_gone(void *m)
{
	return ht_exists(m, HT_S("rep:undo")) == 0;
}

/* The replica SIGSTOPped: the master still counts it connected (until its
 * repl-timeout), so every lock write is followed by WAIT 1, which answers
 * 0. An acquire then must not report the lock acquired, whether it waits
 * without a bound (the undo-and-retry rule runs out of attempts) or
 * within one (the acquire(timeout=3, lease=60)), and it must leave
 * nothing held: not in Redis, not for the caller. */
static void undo_paused(void)
{
	ht_redis *m = ht_redis_start(NULL), *rep = ht_redis_start(NULL);
	hl_client_options o;
	hl_client *c, *c1s;
	hl_lock *l, *l1s;
	char url[200];
	long long w0;
	int acquired = 7, rc, held = 7;
	int64_t t0;

	attach(m, rep);
	snprintf(url, sizeof url, "redis-replica://127.0.0.1:%d,127.0.0.1:%d",
	         m->port, rep->port);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.wait_timeout_ms = 300;
	o.retry_attempts = 2;
	o.retry_delay_ms = 100;
	c = ht_client_url(url, &o);
	l = ht_lock(c, "rep:undo");
	c1s = ht_client_url(url, NULL);
	l1s = ht_lock(c1s, "rep:undo");

	/* healthy: WAITed, on the replica when the acquire returns */
	w0 = waits_of(m);
	HT_OK(hl_lock_acquire(l, 60000, NULL));
	HT_EQ(hget_raw(rep, "rep:undo", ht_owner(l)), 1);
	HT_CHECK(waits_of(m) > w0);
	HT_OK(hl_lock_release(NULL, l));

	HT_EQ(kill(rep->pid, SIGSTOP), 0);
	/* without a bound on the wait: refused once the attempts run out */
	w0 = waits_of(m);
	t0 = ht_now_ms();
	rc = hl_lock_acquire(l, 60000, NULL);
	ht_note("acquire, replica paused: %s (%s) after %lld ms",
	        hl_status_name(rc), rc ? hl_error_last() : "",
	        (long long)(ht_now_ms() - t0));
	HT_CHECKF(rc != HL_OK, "acquired with no replica to confirm it");
	HT_CHECK(strstr(hl_error_last(), "no replica confirmed") != NULL);
	HT_CHECKF(waits_of(m) - w0 >= 3, "%lld WAITs", waits_of(m) - w0);
	HT_EQ(ht_exists(m, HT_S("rep:undo")), 0);
	HT_OK(hl_lock_is_held(&held, l));
	HT_EQ(held, 0);

	/* within a bound (3 s, a 60 s lease), WAITs of the default 1 s:
	 * not acquired, nothing held */
	w0 = waits_of(m);
	t0 = ht_now_ms();
	rc = hl_lock_try_acquire(&acquired, l1s, 3000, 60000, NULL);
	ht_note("try_acquire(3 s), replica paused: %s, acquired %d (%s) "
	        "after %lld ms",
	        hl_status_name(rc), acquired, rc ? hl_error_last() : "",
	        (long long)(ht_now_ms() - t0));
	HT_CHECKF(rc != HL_OK || acquired == 0,
	          "acquired with no replica to confirm it");
	HT_CHECK(waits_of(m) > w0);
	/* undone at once, or by the client soon after: well within the
	 * lease, which would otherwise keep everyone out for 60 s */
	HT_CHECKF(ht_wait_until(undo_gone, m, 2000),
	          "the lock is left held on the master (pttl %lld ms) after "
	          "an acquire that gave up",
	          ht_pttl(m, HT_S("rep:undo")));
	HT_OK(hl_lock_is_held(&held, l1s));
	HT_EQ(held, 0);

	/* the replica back: acquired, WAITed, on the replica */
	HT_EQ(kill(rep->pid, SIGCONT), 0);
	HT_OK(hl_lock_acquire(l, 60000, NULL));
	HT_EQ(hget_raw(rep, "rep:undo", ht_owner(l)), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_lock_free(l1s);
	hl_client_free(c);
	hl_client_free(c1s);
	ht_redis_destroy(rep);
	ht_redis_destroy(m);
}

/* Acquire and release l until an acquire is WAITed for (waits() grows
 * across it), at most bound_ms (scaled); the tries it took, or -1. */
static int until_waited(hl_lock *l, long long (*waits)(void *), void *arg,
                        int64_t bound_ms)
{
	int64_t end = ht_now_ms() + bound_ms * ht_scale();
	int tries = 0;
	while (ht_now_ms() < end) {
		long long w = waits(arg);
		HT_OK(hl_lock_acquire(l, 60000, NULL));
		tries++;
		if (waits(arg) > w) {
			HT_OK(hl_lock_release(NULL, l));
			return tries;
		}
		HT_OK(hl_lock_release(NULL, l));
		ht_sleep_ms(50);
	}
	return -1;
}

static long long waits_redis(void *r)
{
	return waits_of(r);
}

/* A master without replicas: lock writes are not WAITed (there is nothing
 * to wait for). A replica attaches: from then on they are, both through a
 * single-server URL and a master-replica one, whose clients learnt "no
 * replicas" before it attached. */
static void late_replica(void)
{
	ht_redis *m = ht_redis_start(NULL), *rep = ht_redis_start(NULL);
	hl_client *c1, *c2;
	hl_lock *l1, *l2;
	char url[200];
	long long w0;
	int tries, i;

	c1 = ht_client_url(m->url, NULL);
	snprintf(url, sizeof url, "redis-replica://127.0.0.1:%d,127.0.0.1:%d",
	         m->port, rep->port);
	c2 = ht_client_url(url, NULL);
	l1 = ht_lock(c1, "rep:late1");
	l2 = ht_lock(c2, "rep:late2");
	w0 = waits_of(m);
	for (i = 0; i < 3; i++) {
		HT_OK(hl_lock_acquire(l1, 60000, NULL));
		HT_OK(hl_lock_release(NULL, l1));
		HT_OK(hl_lock_acquire(l2, 60000, NULL));
		HT_OK(hl_lock_release(NULL, l2));
	}
	HT_EQ(waits_of(m), w0); /* no replica: no WAIT */

	attach(m, rep);
	tries = until_waited(l1, waits_redis, m, 5000);
	ht_note("redis://: WAITed from the %d. acquire after the replica "
	        "attached",
	        tries);
	HT_CHECKF(tries > 0, "no WAIT in 5 s after a replica attached");
	tries = until_waited(l2, waits_redis, m, 5000);
	ht_note("redis-replica://: WAITed from the %d. acquire", tries);
	HT_CHECKF(tries > 0, "no WAIT in 5 s after a replica attached");
	/* and every one after: on the replica when the acquire returns */
	for (i = 0; i < 5; i++) {
		w0 = waits_of(m);
		HT_OK(hl_lock_acquire(l1, 60000, NULL));
		HT_CHECK(waits_of(m) > w0); /* WAITed (more: one undone) */
		HT_EQ(hget_raw(rep, "rep:late1", ht_owner(l1)), 1);
		HT_OK(hl_lock_release(NULL, l1));
	}
	hl_lock_free(l1);
	hl_lock_free(l2);
	hl_client_free(c1);
	hl_client_free(c2);
	ht_redis_destroy(rep);
	ht_redis_destroy(m);
}

/* ---- Sentinel and Cluster ----------------------------------------------- */

static long long waits_node(void *n)
{
	char v[128];
	const char *p;
	if (!ht_node_info(n, "commandstats", "cmdstat_wait", v, sizeof v))
		return 0;
	p = strstr(v, "calls=");
	return p ? atoll(p + 6) : 0;
}

static long long node_hget(ht_node *n, const char *key, const char *field)
{
	redisReply *r = ht_node_cmd(n, "HGET %s %s", key, field);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
	freeReplyObject(r);
	return v;
}

/* The first acquisitions on a new master without replicas (not WAITed:
 * nothing to wait for); its replica then attaches, and later ones must be
 * WAITed; the lock held then (WAIT-confirmed) survives a kill -9 of that
 * master, on the replica promoted in its place, and nobody else gets it.
 * kill_and_wait kills the master on port and returns the new one's. */
struct late_topo {
	const char *what;
	hl_client *c, *c2;
	ht_node *(*node)(void *topo, int port);
	int (*kill_and_wait)(void *topo, int port);
	void *topo;
};

static void held_through_kill(struct late_topo *t, int master_port,
                              ht_node *replica, const char *name)
{
	hl_lock *l = ht_lock(t->c, name), *other = ht_lock(t->c2, name);
	ht_node *m = t->node(t->topo, master_port);
	int tries, i, now, acquired = 7, lost = 7;
	long long w0;

	tries = until_waited(l, waits_node, m, 8000);
	ht_note("%s: WAITed from the %d. acquire after the replica attached",
	        t->what, tries);
	HT_CHECKF(tries > 0, "%s: no WAIT in 8 s after a replica attached",
	          t->what);
	for (i = 0; i < 3; i++) {
		w0 = waits_node(m);
		HT_OK(hl_lock_acquire(l, 60000, NULL));
		HT_CHECK(waits_node(m) > w0);
		HT_OK(hl_lock_release(NULL, l));
	}
	/* held with the watchdog, confirmed by the replica */
	w0 = waits_node(m);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_CHECK(waits_node(m) > w0);
	/* a cluster replica answers reads after READONLY (elsewhere an
	 * error, ignored) */
	freeReplyObject(ht_node_cmd(replica, "READONLY"));
	HT_EQ(node_hget(replica, name, ht_owner(l)), 1);
	now = t->kill_and_wait(t->topo, master_port);
	HT_EQ(now, replica->port);
	HT_EQ(node_hget(replica, name, ht_owner(l)), 1);
	HT_OK(hl_lock_try_acquire(&acquired, other, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_lock_free(other);
}

/* The watchdog's lease outlasts the slowest failover these tests wait for
 * (20 s: a Sentinel election can abort and retry after its failover
 * delay): a lock held through the kill must survive it, not expire while
 * the new master is being chosen. */
#define LATE_LEASE_MS 30000

static hl_client *sentinel_client(ht_sentinel *s)
{
	hl_client_options o;
	char url[600];
	ht_failover_options(&o, LATE_LEASE_MS);
	ht_sentinel_url(s, url, sizeof url);
	return ht_client_url(url, &o);
}

static ht_node *sentinel_node(void *s, int port)
{
	return ht_sentinel_node(s, port);
}

static int sentinel_kill(void *s, int port)
{
	ht_node *n = ht_sentinel_node(s, port);
	ht_node_kill(n);
	return ht_sentinel_wait_failover(s, port, 20000);
}

/* A master and two replicas: one replica (B) is killed, then the master:
 * the other replica (C) is promoted with no replica of its own. The first
 * acquisitions on C cannot be WAITed. B then starts again as C's replica:
 * later acquisitions must be WAITed, and a kill -9 of C keeps the lock
 * held then on B. */
static void sentinel_late_replica(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	ht_node *a = ht_sentinel_master(s), *b = NULL, *cn = NULL;
	struct late_topo t = {"sentinel",    NULL,          NULL,
	                      sentinel_node, sentinel_kill, s};
	hl_lock *l;
	int i, now;
	long long w0;

	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (&s->data[i] != a) {
			if (!b)
				b = &s->data[i];
			else
				cn = &s->data[i];
		}
	t.c = sentinel_client(s);
	t.c2 = sentinel_client(s);
	l = ht_lock(t.c, "rep:sent");
	HT_OK(hl_lock_acquire(l, 60000, NULL)); /* WAITed: 2 replicas */
	HT_OK(hl_lock_release(NULL, l));

	ht_node_kill(b);
	ht_node_kill(a);
	now = ht_sentinel_wait_failover(s, a->port, 20000);
	HT_EQ(now, cn->port);
	/* the first acquisitions on the new master: nothing to WAIT for */
	w0 = waits_node(cn);
	for (i = 0; i < 3; i++) {
		HT_OK(hl_lock_acquire(l, 60000, NULL));
		HT_OK(hl_lock_release(NULL, l));
	}
	HT_EQ(waits_node(cn), w0);
	hl_lock_free(l);

	ht_sentinel_restart_node(s, b->port); /* C's replica, in sync */
	held_through_kill(&t, cn->port, b, "rep:sent");
	hl_client_free(t.c);
	hl_client_free(t.c2);
	ht_sentinel_destroy(s);
}

static hl_client *cluster_client(ht_cluster *cl)
{
	hl_client_options o;
	char url[600];
	ht_failover_options(&o, LATE_LEASE_MS);
	ht_cluster_url(cl, url, sizeof url);
	return ht_client_url(url, &o);
}

static ht_node *cluster_node(void *cl, int port)
{
	return ht_cluster_node(cl, port);
}

static int cluster_kill(void *cl, int port)
{
	return ht_cluster_kill_master(cl, port);
}

/* The master of a lock's slot (M) is killed: its replica (R) takes over
 * with no replica of its own. The first acquisitions on R cannot be
 * WAITed. M then starts again, as R's replica: later acquisitions must be
 * WAITed, and a kill -9 of R keeps the lock held then on M. */
static void cluster_late_replica(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	struct late_topo t = {"cluster",    NULL,         NULL,
	                      cluster_node, cluster_kill, cl};
	int slot = ht_cluster_slot_of(cl, HT_S("rep:cl"));
	int m = ht_cluster_master_of_slot(cl, slot), r, i;
	hl_lock *l;
	long long w0;

	t.c = cluster_client(cl);
	t.c2 = cluster_client(cl);
	l = ht_lock(t.c, "rep:cl");
	HT_OK(hl_lock_acquire(l, 60000, NULL)); /* WAITed: one replica */
	HT_OK(hl_lock_release(NULL, l));

	r = ht_cluster_kill_master(cl, m);
	/* the first acquisitions on the new master: nothing to WAIT for */
	w0 = waits_node(ht_cluster_node(cl, r));
	for (i = 0; i < 3; i++) {
		HT_OK(hl_lock_acquire(l, 60000, NULL));
		HT_OK(hl_lock_release(NULL, l));
	}
	HT_EQ(waits_node(ht_cluster_node(cl, r)), w0);
	hl_lock_free(l);

	ht_cluster_restart_node(cl, m); /* R's replica now */
	HT_EQ(ht_cluster_replica_of(cl, r), m);
	held_through_kill(&t, r, ht_cluster_node(cl, m), "rep:cl");
	hl_client_free(t.c);
	hl_client_free(t.c2);
	ht_cluster_destroy(cl);
}

HT_MAIN(HT_CASE(undo_paused), HT_CASE(late_replica),
        HT_CASE(sentinel_late_replica), HT_CASE(cluster_late_replica))
