/*
 * Redis Cluster: six nodes, three masters with a replica each
 * (harness_topo), reached through a redis-cluster:// URL. Locks spread
 * over every master; a lock is where its slot's master is; waiters are
 * woken through sharded pub/sub; renewals never cross slots; a slot that
 * migrates while a lock in it is held (MOVED and ASK), a manual failover
 * and a kill -9 of a master keep every hold or report it lost, a slow
 * network to a master (a fault proxy) keeps the hold, and no two
 * processes ever hold a lock at once.
 */
#include "harness.h"
#include "harness_topo.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static hl_client *cluster_client(ht_cluster *cl, int64_t watchdog_ms)
{
	hl_client_options o;
	char url[600];
	ht_failover_options(&o, watchdog_ms);
	ht_cluster_url(cl, url, sizeof url);
	return ht_client_url(url, &o);
}

static long long hget_on(ht_cluster *cl, const char *key, const char *field)
{
	int port = ht_cluster_master_of_slot(
	        cl, ht_cluster_slot_of(cl, key, strlen(key)));
	redisReply *r = ht_node_cmd(ht_cluster_node(cl, port), "HGET %s %s",
	                            key, field);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
	freeReplyObject(r);
	return v;
}

static long long errorstat(ht_cluster *cl, const char *what)
{
	long long n = 0;
	int i;
	char field[64], v[64];
	snprintf(field, sizeof field, "errorstat_%s", what);
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (cl->nodes[i].pid &&
		    ht_node_info(&cl->nodes[i], "errorstats", field, v,
		                 sizeof v))
			n += atoll(strstr(v, "count=") ? strstr(v, "count=") + 6
			                               : v);
	return n;
}

/* Thirty locks over the three masters: each where its slot is, released
 * cleanly; with the watchdog they stay held through several renewal
 * periods, and no renewal script ever touched two slots. */
static void spread(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 1500);
	hl_lock *l[30];
	char name[32];
	int i, masters[3] = {0}, nm = 0;

	for (i = 0; i < 30; i++) {
		int port, k;
		snprintf(name, sizeof name, "cl:spread:%d", i);
		l[i] = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l[i], -1, NULL));
		HT_EQ(hget_on(cl, name, ht_owner(l[i])), 1);
		port = ht_cluster_master_of_slot(
		        cl, ht_cluster_slot_of(cl, name, strlen(name)));
		for (k = 0; k < nm && masters[k] != port; k++)
			;
		if (k == nm && nm < 3)
			masters[nm++] = port;
	}
	HT_EQ(nm, 3);
	ht_sleep_ms(4000); /* over two leases: renewed, per slot */
	for (i = 0; i < 30; i++) {
		int lost = 7;
		snprintf(name, sizeof name, "cl:spread:%d", i);
		HT_OK(hl_lock_is_lost(&lost, l[i]));
		HT_EQ(lost, 0);
		HT_EQ(hget_on(cl, name, ht_owner(l[i])), 1);
		HT_OK(hl_lock_release(NULL, l[i]));
		hl_lock_free(l[i]);
	}
	HT_EQ(errorstat(cl, "CROSSSLOT"), 0);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

struct waiter {
	hl_lock *l;
	int64_t wait_ms;
	int rc, acquired;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	w->rc = hl_lock_try_acquire(&w->acquired, w->l, w->wait_ms, -1, NULL);
	return NULL;
}

/* A waiter on another client is woken by the unlock message (SPUBLISH on
 * the slot's node), not by the holder's lease. */
static void wake(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 3000), *c2 = cluster_client(cl, 3000);
	hl_lock *l = ht_lock(c, "cl:wake"), *l2 = ht_lock(c2, "cl:wake");
	struct waiter w = {l2, 20000, 0, 0};
	pthread_t t;
	int64_t t0;
	HT_OK(hl_lock_set_owner(l2, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, 20000, NULL)); /* a long fixed lease */
	t = ht_thread_start(wait_thread, &w);
	{
		/* subscribed with SSUBSCRIBE on the slot's master, as
		 * Redisson subscribes on Redis 7 */
		int port = ht_cluster_master_of_slot(
		        cl, ht_cluster_slot_of(cl, HT_S("cl:wake")));
		long long subs = 0;
		int64_t until = ht_now_ms() + 5000 * ht_scale();
		while (subs < 1 && ht_now_ms() < until) {
			redisReply *r = ht_node_cmd(
			        ht_cluster_node(cl, port),
			        "PUBSUB SHARDNUMSUB redisson_lock__channel:"
			        "{cl:wake}");
			subs = r->type == REDIS_REPLY_ARRAY && r->elements == 2
			               ? r->element[1]->integer
			               : 0;
			freeReplyObject(r);
			if (subs < 1)
				ht_sleep_ms(20);
		}
		HT_EQ(subs, 1);
	}
	t0 = ht_now_ms();
	HT_OK(hl_lock_release(NULL, l));
	ht_thread_join(t, 25000);
	ht_note("woken %lld ms after the release",
	        (long long)(ht_now_ms() - t0));
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_RANGE(ht_now_ms() - t0, 0, 2000 * ht_scale());
	HT_OK(hl_lock_release(NULL, l2));
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
	ht_cluster_destroy(cl);
}

/* Every kind in a cluster: its keys and channels share the name's slot,
 * waiters are woken over sharded pub/sub on their kind's channel (the fair
 * lock's on each waiter's own), and the watchdog renews read holds with
 * their timeout keys, one script per slot. */
static void kinds(void)
{
	static const struct {
		int holder, waiter;
		const char *name;
	} cases[] = {
	        {HL_LOCK_FAIR, HL_LOCK_FAIR, "cl:fair"},
	        {HL_LOCK_WRITE, HL_LOCK_READ, "cl:rw1"},
	        {HL_LOCK_READ, HL_LOCK_WRITE, "cl:rw2"},
	        {HL_LOCK_FENCED, HL_LOCK_FENCED, "x{cl:fenced}y"},
	        {HL_LOCK_SPIN, HL_LOCK_SPIN, "cl:spin"},
	};
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 1500), *c2 = cluster_client(cl, 3000);
	size_t i;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		hl_lock *l = NULL, *l2 = NULL;
		struct waiter w;
		pthread_t t;
		int64_t t0;
		HT_OK(hl_lock_new_kind(&l, c, cases[i].holder,
		                       HT_S(cases[i].name)));
		HT_OK(hl_lock_new_kind(&l2, c2, cases[i].waiter,
		                       HT_S(cases[i].name)));
		HT_OK(hl_lock_set_owner(l2, hl_owner_id_new()));
		/* watchdog: renewed on the slot's master (every 500 ms) */
		HT_OK(hl_lock_acquire(l, -1, NULL));
		w.l = l2;
		w.wait_ms = 20000;
		w.rc = -99;
		w.acquired = 0;
		t = ht_thread_start(wait_thread, &w);
		ht_sleep_ms(2500); /* longer than the 1.5 s lease */
		{
			int lost = 7;
			HT_OK(hl_lock_is_lost(&lost, l));
			HT_EQ(lost, 0);
			HT_EQ(w.rc, -99); /* still waiting */
		}
		t0 = ht_now_ms();
		HT_OK(hl_lock_release(NULL, l));
		ht_thread_join(t, 25000);
		ht_note("%s: %s woken %lld ms after the release", cases[i].name,
		        hl_lock_kind_name(cases[i].waiter),
		        (long long)(ht_now_ms() - t0));
		HT_OK(w.rc);
		HT_EQ(w.acquired, 1);
		HT_RANGE(ht_now_ms() - t0, 0, 2000 * ht_scale());
		if (cases[i].waiter == HL_LOCK_FENCED) {
			int64_t tok = 0;
			HT_OK(hl_lock_token(&tok, l2));
			HT_EQ(tok, 2);
		}
		HT_OK(hl_lock_release(NULL, l2));
		hl_lock_free(l);
		hl_lock_free(l2);
	}
	hl_client_free(c);
	hl_client_free(c2);
	ht_cluster_destroy(cl);
}

/* The slot of a held lock moves to another master: while it migrates a
 * fresh lock of that slot is taken through ASK on the importing node; once
 * moved, the holder is renewed there (MOVED) and releases it there. */
static void migrate(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 1500);
	hl_lock *l = ht_lock(c, "{cl:mig}held"), *fresh;
	int slot = ht_cluster_slot_of(cl, HT_S("{cl:mig}held"));
	int src = ht_cluster_master_of_slot(cl, slot), dst = 0, i, lost = 7;
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (cl->nodes[i].role == HT_ROLE_MASTER &&
		    cl->nodes[i].port != src)
			dst = cl->nodes[i].port;
	HT_CHECK(dst != 0);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	ht_cluster_migrate_slot_start(cl, slot, dst);
	/* a key the source no longer has: ASK, then ASKING on dst */
	fresh = ht_lock(c, "{cl:mig}fresh");
	HT_OK(hl_lock_acquire(fresh, -1, NULL));
	{
		redisReply *r = ht_node_cmd(ht_cluster_node(cl, dst), "ASKING");
		freeReplyObject(r);
		r = ht_node_cmd(ht_cluster_node(cl, dst),
		                "HGET {cl:mig}fresh %s", ht_owner(fresh));
		/* it landed on the importing node */
		HT_CHECK(r->type == REDIS_REPLY_STRING);
		freeReplyObject(r);
	}
	/* longer than the 1.5 s lease while the slot migrates: the fresh
	 * lock is renewed on the importing node (ASK), the held one on the
	 * source */
	ht_sleep_ms(2500);
	HT_OK(hl_lock_is_lost(&lost, fresh));
	HT_EQ(lost, 0);
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_CHECK(ht_cluster_migrate_keys(cl, slot) >= 1);
	ht_cluster_migrate_slot_finish(cl, slot);
	ht_sleep_ms(3500); /* renewals follow MOVED to dst */
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_EQ(hget_on(cl, "{cl:mig}held", ht_owner(l)), 1);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, fresh));
	HT_EQ(hget_on(cl, "{cl:mig}held", ht_owner(l)), -1);
	hl_lock_free(l);
	hl_lock_free(fresh);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* A manual failover, then a kill -9, of the master of a held lock: the
 * hold is renewed on the new master; a waiter gets it when released. */
static void failover(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 6000), *c2 = cluster_client(cl, 6000);
	hl_lock *l = ht_lock(c, "cl:fo"), *l2 = ht_lock(c2, "cl:fo");
	struct waiter w = {l2, 40000, 0, 0};
	int slot = ht_cluster_slot_of(cl, HT_S("cl:fo")), port, lost = 7;
	pthread_t t;
	HT_OK(hl_lock_set_owner(l2, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	t = ht_thread_start(wait_thread, &w);
	port = ht_cluster_failover(cl, ht_cluster_master_of_slot(cl, slot));
	ht_note("manual failover: master now %d", port);
	port = ht_cluster_kill_master(cl, port);
	ht_note("kill -9: master now %d", port);
	ht_sleep_ms(6500); /* longer than the lease: renewed there */
	HT_OK(hl_lock_is_lost(&lost, l));
	HT_EQ(lost, 0);
	HT_EQ(hget_on(cl, "cl:fo", ht_owner(l)), 1);
	HT_EQ(w.acquired, 0);
	HT_OK(hl_lock_release(NULL, l));
	ht_thread_join(t, 45000);
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_OK(hl_lock_release(NULL, l2));
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
	ht_cluster_destroy(cl);
}

static hl_client *contender_client(void *cl)
{
	return cluster_client(cl, 6000);
}

/* Processes contend on one lock while its master is killed; no two
 * critical sections overlap. */
static void overlap_kill(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	char path[300], tag[8];
	int kids[3], i, slot = ht_cluster_slot_of(cl, HT_S("cl:overlap"));
	long n;
	snprintf(path, sizeof path, "%s/sections", cl->dir);
	for (i = 0; i < 3; i++) {
		snprintf(tag, sizeof tag, "p%d", i);
		kids[i] = ht_contender(contender_client, cl, "cl:overlap", path,
		                       tag, 12000);
	}
	ht_sleep_ms(2500);
	ht_cluster_kill_master(cl, ht_cluster_master_of_slot(cl, slot));
	ht_contenders_wait(kids, 3);
	n = ht_cs_check(path);
	ht_note("%ld critical sections across a kill -9, no overlap", n);
	HT_CHECK(n >= 30);
	ht_cluster_destroy(cl);
}

/* Names whose channel would hash elsewhere are refused at once. */
static void bad_names(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = cluster_client(cl, 3000);
	hl_lock *l = NULL;
	HT_RC(hl_lock_new(&l, c, HT_S("a}b")), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "hash tag") != NULL);
	HT_RC(hl_lock_new(&l, c, HT_S("a{}b")), HL_EINVAL);
	HT_CHECK(l == NULL);
	l = ht_lock(c, "x{t}y"); /* a tag: fine */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

/* rediss-cluster://: TLS to every node; locks on every master, a waiter
 * woken through sharded pub/sub over TLS. */
static void tls(void)
{
	char dir[] = "/tmp/hilock-cl-tls-XXXXXX";
	ht_tls_certs *certs;
	ht_cluster_opts co = {0};
	ht_cluster *cl;
	hl_client_options o;
	hl_client *c, *c2;
	hl_lock *l[6], *w2;
	struct waiter w;
	char url[600], name[32];
	pthread_t t;
	int i;
	ht_require_tls(); /* before the directory: a skip leaves nothing */
	HT_CHECK(mkdtemp(dir) != NULL);
	certs = ht_tls_make_certs(dir);
	co.tls = certs;
	cl = ht_cluster_start(&co);
	ht_cluster_url(cl, url, sizeof url);
	HT_CHECK(strncmp(url, "rediss-cluster://", 17) == 0);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.tls_ca_file = certs->ca_cert;
	c = ht_client_url(url, &o);
	c2 = ht_client_url(url, &o);
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof name, "cl:tls:%d", i);
		l[i] = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l[i], 30000, NULL));
	}
	w2 = ht_lock(c2, "cl:tls:0");
	HT_OK(hl_lock_set_owner(w2, hl_owner_id_new()));
	w.l = w2;
	w.wait_ms = 20000;
	t = ht_thread_start(wait_thread, &w);
	ht_sleep_ms(300);
	for (i = 0; i < 6; i++) {
		HT_OK(hl_lock_release(NULL, l[i]));
		hl_lock_free(l[i]);
	}
	ht_thread_join(t, 25000);
	HT_EQ(w.rc, HL_OK);
	HT_EQ(w.acquired, 1);
	HT_OK(hl_lock_release(NULL, w2));
	hl_lock_free(w2);
	hl_client_free(c);
	hl_client_free(c2);
	ht_cluster_destroy(cl);
	ht_tls_certs_destroy(certs);
	rmdir(dir);
}

/* The port every running node reports for slot's master (CLUSTER SLOTS);
 * 0 if they disagree or one does not answer. */
static int slot_port_agreed(ht_cluster *cl, int slot)
{
	int i, agreed = -1;
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		redisReply *r;
		size_t j;
		int port = 0;
		if (!cl->nodes[i].pid)
			continue;
		r = ht_node_cmd(&cl->nodes[i], "CLUSTER SLOTS");
		for (j = 0; r->type == REDIS_REPLY_ARRAY && j < r->elements;
		     j++) {
			redisReply *e = r->element[j];
			if (e->type == REDIS_REPLY_ARRAY && e->elements >= 3 &&
			    e->element[0]->integer <= slot &&
			    e->element[1]->integer >= slot &&
			    e->element[2]->type == REDIS_REPLY_ARRAY &&
			    e->element[2]->elements >= 2)
				port = (int)e->element[2]->element[1]->integer;
		}
		freeReplyObject(r);
		if (agreed == -1)
			agreed = port;
		else if (agreed != port)
			return 0;
	}
	return agreed > 0 ? agreed : 0;
}

static long long pttl_on(ht_node *n, const char *key)
{
	redisReply *r = ht_node_cmd(n, "PTTL %s", key);
	long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
	freeReplyObject(r);
	return v;
}

static uint64_t renewals_of(hl_client *c)
{
	hl_client_stats st;
	memset(&st, 0, sizeof(st));
	st.version = HL_CLIENT_STATS_VERSION;
	HT_OK(hl_client_stats_get(&st, c));
	return st.renewals;
}

/* For ms: the key of l in Redis (on its master m, reached directly) keeps
 * a positive PTTL, and the client never says the hold is lost (fd: its
 * lost fd, or -1). */
static void held_for(ht_node *m, hl_lock *l, const char *name, int fd,
                     int64_t ms)
{
	int64_t t0 = ht_now_ms();
	do {
		long long pttl = pttl_on(m, name);
		int lost = 7;
		HT_CHECKF(pttl > 0,
		          "%s lapsed after %lld ms of a slow network "
		          "(PTTL %lld)",
		          name, (long long)(ht_now_ms() - t0), pttl);
		HT_OK(hl_lock_is_lost(&lost, l));
		HT_CHECKF(lost == 0,
		          "%s declared lost after %lld ms of a slow "
		          "network",
		          name, (long long)(ht_now_ms() - t0));
		if (fd >= 0) {
			struct pollfd pf = {fd, POLLIN, 0};
			HT_EQ(poll(&pf, 1, 0), 0);
		}
		ht_sleep_ms(100);
	} while (ht_now_ms() - t0 < ms);
}

/* A slow network to one master (1 s each way, a 3 s watchdog; the master
 * announces a fault proxy's port, so the client reaches it only through
 * the proxy): every renewal reaches Redis in time, so the hold is kept and
 * the key never lapses; once nothing comes back at all, the clock tells
 * the loss before the lease ends in Redis. A lock of the same client on
 * another master is kept all along: that master's renewals do not wait
 * for the slow one's. */
static void slow_master(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	const char *name = "cl:slow";
	const int64_t HOLD = 8000;
	int slot = ht_cluster_slot_of(cl, HT_S("cl:slow"));
	ht_node *m = ht_cluster_node(cl, ht_cluster_master_of_slot(cl, slot));
	ht_node *m2 = NULL;
	ht_proxy *p = ht_proxy_start(m->port);
	hl_client_options o;
	hl_client *c;
	hl_lock *l, *l2;
	char url[600], name2[32];
	int fd = -1, lost = 7, i;
	int64_t t0;
	uint64_t renewed;
	long long pttl;
	redisReply *r;
	for (i = 0; !m2; i++) {
		int port;
		snprintf(name2, sizeof name2, "cl:fast%d", i);
		port = ht_cluster_master_of_slot(
		        cl, ht_cluster_slot_of(cl, name2, strlen(name2)));
		if (port != m->port)
			m2 = ht_cluster_node(cl, port);
	}
	r = ht_node_cmd(m, "CONFIG SET cluster-announce-port %d", p->port);
	HT_CHECKF(r->type == REDIS_REPLY_STATUS, "CONFIG SET: %s",
	          r->type == REDIS_REPLY_ERROR ? r->str : "?");
	freeReplyObject(r);
	t0 = ht_now_ms();
	while (slot_port_agreed(cl, slot) != p->port) {
		HT_CHECKF(ht_now_ms() - t0 < 15000 * ht_scale(),
		          "the nodes do not announce the proxy's port");
		ht_sleep_ms(50);
	}
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 3000;
	o.command_timeout_ms = 3000;
	ht_cluster_url(cl, url, sizeof url);
	c = ht_client_url(url, &o);
	l = ht_lock(c, name);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_CHECK(ht_proxy_count(p) >= 1); /* the lock went through it */
	l2 = ht_lock(c, name2);
	HT_OK(hl_lock_acquire(l2, -1, NULL));
	HT_OK(hl_lock_lost_fd(&fd, l));
	t0 = ht_now_ms();
	while (renewals_of(c) < 1) {
		HT_CHECKF(ht_now_ms() - t0 < 5000 * ht_scale(),
		          "no renewal within %lld ms",
		          (long long)(ht_now_ms() - t0));
		ht_sleep_ms(20);
	}
	/* 1 s round trips first (a jump from fast to 2 s at once is more
	 * than the watchdog rides out: its next renewal is a third of the
	 * timeout away), then 2 s */
	ht_proxy_cmd(p, "delay 500");
	held_for(m, l, name, fd, 3000);
	held_for(m2, l2, name2, -1, 0);
	ht_proxy_cmd(p, "delay 1000");
	renewed = renewals_of(c);
	held_for(m, l, name, fd, HOLD);
	held_for(m2, l2, name2, -1, 0);
	ht_note("%llu renewals confirmed in %lld ms of 2 s round trips",
	        (unsigned long long)(renewals_of(c) - renewed),
	        (long long)HOLD);
	HT_CHECK(renewals_of(c) - renewed >= 4);
	HT_EQ(hget_on(cl, name, ht_owner(l)), 1);

	/* Now nothing comes back: the clock tells the loss while Redis still
	 * has the key. */
	ht_proxy_cmd(p, "blackhole on");
	t0 = ht_now_ms();
	HT_OK(hl_lock_wait_lost(&lost, l, 10000, NULL));
	pttl = pttl_on(m, name);
	ht_note("lost %lld ms after the black hole, %lld ms of lease left",
	        (long long)(ht_now_ms() - t0), pttl);
	HT_EQ(lost, 1);
	HT_CHECKF(pttl > 0, "told after the lease ended (pttl %lld)", pttl);
	{
		struct pollfd pf = {fd, POLLIN, 0};
		HT_EQ(poll(&pf, 1, 0), 1);
	}
	/* past the command timeout (the silent connection's renewals are
	 * given up and it is dropped): the other master's lock is renewed
	 * all along */
	held_for(m2, l2, name2, -1, 3500);
	HT_OK(hl_lock_release(NULL, l2));
	HT_EQ(pttl_on(m2, name2), -2);
	ht_proxy_cmd(p, "delay 0");
	ht_proxy_cmd(p, "blackhole off");
	hl_lock_free(l2);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
	ht_cluster_destroy(cl);
}

HT_MAIN(HT_CASE(spread), HT_CASE(kinds), HT_CASE(bad_names), HT_CASE(tls),
        HT_CASE(wake), HT_CASE(migrate), HT_CASE(failover),
        HT_CASE(overlap_kill), HT_CASE(slow_master))
