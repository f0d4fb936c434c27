/*
 * Self-tests of the topology harness (harness_topo.h): each deployment
 * starts from Debian's binaries, does what the library's tests will rely
 * on, and leaves nothing behind.
 */
#include "harness_topo.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* The pids and directory of a topology, to check they are gone. */
struct remains {
	int pids[16];
	int n;
	char dir[256];
};

static void remember(struct remains *r, const ht_node *nodes, int count)
{
	int i;

	for (i = 0; i < count; i++)
		if (nodes[i].pid > 0)
			r->pids[r->n++] = nodes[i].pid;
}

static void check_gone(const struct remains *r)
{
	struct stat st;
	int i;

	for (i = 0; i < r->n; i++)
		HT_CHECKF(kill(r->pids[i], 0) != 0 && errno == ESRCH,
		          "pid %d still exists", r->pids[i]);
	HT_CHECKF(stat(r->dir, &st) != 0, "%s still exists", r->dir);
}

static void expect_status(ht_node *n, redisReply *rep, const char *want)
{
	HT_CHECKF(rep->type == REDIS_REPLY_STATUS &&
	                  strcmp(rep->str, want) == 0,
	          "%s (port %d): type %d \"%s\", expected %s", n->name, n->port,
	          rep->type, rep->str ? rep->str : "", want);
	freeReplyObject(rep);
}

/* GET key on n as a C string ("" for nil); error replies fail. */
static void get_str(ht_node *n, const char *key, char *out, size_t len)
{
	redisReply *rep = ht_node_cmd(n, "GET %s", key);

	out[0] = '\0';
	if (rep->type == REDIS_REPLY_STRING)
		snprintf(out, len, "%s", rep->str);
	else
		HT_CHECKF(rep->type == REDIS_REPLY_NIL, "GET %s on %s: %s", key,
		          n->name, rep->str ? rep->str : "?");
	freeReplyObject(rep);
}

/* Wait until GET key on n returns want. */
static void wait_value(ht_node *n, const char *key, const char *want)
{
	int64_t deadline = ht_now_ms() + 5000 * ht_scale();
	char v[128];

	for (;;) {
		get_str(n, key, v, sizeof v);
		if (strcmp(v, want) == 0)
			return;
		if (ht_now_ms() > deadline)
			HT_FAIL("%s: GET %s is \"%s\", expected \"%s\"",
			        n->name, key, v, want);
		ht_sleep_ms(10);
	}
}

/* An error reply starting with prefix; returns it (free it). */
static redisReply *expect_error(ht_node *n, redisReply *rep, const char *prefix)
{
	HT_CHECKF(rep->type == REDIS_REPLY_ERROR &&
	                  strncmp(rep->str, prefix, strlen(prefix)) == 0,
	          "%s: type %d \"%s\", expected an error %s...", n->name,
	          rep->type, rep->str ? rep->str : "", prefix);
	return rep;
}

/* A raw plain connection without AUTH: the first reply to cmd. */
static redisReply *raw_noauth(int port, const char *cmd)
{
	struct timeval tv = {2, 0};
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *rep;

	HT_CHECK(c && !c->err);
	redisSetTimeout(c, tv);
	rep = redisCommand(c, cmd);
	redisFree(c);
	return rep;
}

static int count_role(const ht_node *nodes, int count, ht_role role)
{
	int i, k = 0;

	for (i = 0; i < count; i++)
		if (nodes[i].pid > 0 && nodes[i].role == role)
			k++;
	return k;
}

/* ------------------------------------------------------------------------
 * Sentinel
 * ------------------------------------------------------------------------ */
static void check_sentinel_view(ht_sentinel *s)
{
	int i;

	for (i = 0; i < HT_SENTINEL_SENTINELS; i++) {
		ht_node *sn = &s->sentinels[i];
		redisReply *rep =
		        ht_node_cmd(sn, "SENTINEL MASTER %s", s->name);
		size_t k;
		int slaves = -1, others = -1;

		HT_CHECK(rep->type == REDIS_REPLY_ARRAY);
		for (k = 0; k + 1 < rep->elements; k += 2) {
			if (strcmp(rep->element[k]->str, "num-slaves") == 0)
				slaves = atoi(rep->element[k + 1]->str);
			if (strcmp(rep->element[k]->str,
			           "num-other-sentinels") == 0)
				others = atoi(rep->element[k + 1]->str);
		}
		freeReplyObject(rep);
		HT_EQ(slaves, 2);
		HT_EQ(others, 2);
	}
}

static void sentinel_starts(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	struct remains gone = {{0}, 0, ""};
	ht_node *m;
	char url[512], want[512];
	int i;

	HT_RANGE(s->start_ms, 0, 10000 * ht_scale());
	snprintf(want, sizeof want,
	         "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/"
	         "mymaster",
	         s->sentinels[0].port, s->sentinels[1].port,
	         s->sentinels[2].port);
	HT_EQ(ht_sentinel_url(s, url, sizeof url), strlen(want));
	HT_STREQ(url, want);
	HT_STREQ(s->url, want);

	m = ht_sentinel_master(s);
	HT_CHECK(m == &s->data[0]);
	HT_EQ(m->role, HT_ROLE_MASTER);
	HT_EQ(count_role(s->data, HT_SENTINEL_DATA, HT_ROLE_REPLICA), 2);
	check_sentinel_view(s);

	expect_status(m, ht_node_cmd(m, "SET topo:k hello"), "OK");
	for (i = 1; i < HT_SENTINEL_DATA; i++)
		wait_value(&s->data[i], "topo:k", "hello");
	/* a replica refuses writes */
	freeReplyObject(expect_error(
	        &s->data[1], ht_node_cmd(&s->data[1], "SET a b"), "READONLY"));

	remember(&gone, s->data, HT_SENTINEL_DATA);
	remember(&gone, s->sentinels, HT_SENTINEL_SENTINELS);
	snprintf(gone.dir, sizeof gone.dir, "%s", s->dir);
	ht_sentinel_destroy(s);
	check_gone(&gone);
}

static void sentinel_passwords(void)
{
	ht_sentinel_opts o;
	ht_sentinel *s;
	redisReply *rep;
	ht_node *m;
	char out[256];

	memset(&o, 0, sizeof o);
	o.master_name = "pwmaster";
	o.password = "data-secret";
	o.sentinel_password = "sentinel-secret";
	s = ht_sentinel_start(&o);
	HT_CHECK(strstr(s->url, "/pwmaster") != NULL);
	m = ht_sentinel_master(s);
	expect_status(m, ht_node_cmd(m, "SET topo:pw 1"), "OK");
	wait_value(&s->data[1], "topo:pw", "1");

	/* no AUTH: refused on data nodes and sentinels */
	rep = raw_noauth(m->port, "GET topo:pw");
	HT_CHECK(rep && rep->type == REDIS_REPLY_ERROR &&
	         strncmp(rep->str, "NOAUTH", 6) == 0);
	freeReplyObject(rep);
	rep = raw_noauth(s->sentinels[0].port, "SENTINEL MASTERS");
	HT_CHECK(rep && rep->type == REDIS_REPLY_ERROR &&
	         strncmp(rep->str, "NOAUTH", 6) == 0);
	freeReplyObject(rep);
	/* the passwords are distinct */
	HT_CHECK(ht_cli(out, sizeof out,
	                "-p %d -a data-secret --no-auth-warning PING",
	                s->sentinels[0].port) == 0);
	HT_CHECKF(strstr(out, "PONG") == NULL, "%s", out);
	HT_CHECK(ht_node_cli(&s->sentinels[0], out, sizeof out, "PING") == 0);
	HT_CHECKF(strstr(out, "PONG") != NULL, "%s", out);
	check_sentinel_view(s);
	ht_sentinel_destroy(s);
}

static void sentinel_failover_kill(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	ht_node *old_node, *m;
	int old, port;
	int64_t t0, took;
	char v[64];

	m = ht_sentinel_master(s);
	expect_status(m, ht_node_cmd(m, "SET topo:before 1"), "OK");
	freeReplyObject(ht_node_cmd(m, "WAIT 2 2000"));
	old = ht_sentinel_kill_master(s);
	old_node = ht_sentinel_node(s, old);
	HT_EQ(old_node->pid, 0);
	t0 = ht_now_ms();
	port = ht_sentinel_wait_failover(s, old, 20000);
	took = ht_now_ms() - t0;
	ht_note("kill -9 to new master: %lld ms", (long long)took);
	HT_CHECK(port != old);
	HT_RANGE(took, 0, 10000 * ht_scale());
	m = ht_sentinel_node(s, port);
	HT_EQ(m->role, HT_ROLE_MASTER);
	HT_EQ(ht_sentinel_master_port(s), port);
	wait_value(m, "topo:before", "1");
	expect_status(m, ht_node_cmd(m, "SET topo:after 2"), "OK");

	t0 = ht_now_ms();
	ht_sentinel_restart_node(s, old);
	ht_note("old master back as a replica, synced: %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_CHECK(old_node->pid > 0);
	HT_EQ(old_node->role, HT_ROLE_REPLICA);
	HT_CHECK(ht_node_info(old_node, "replication", "master_port", v,
	                      sizeof v));
	HT_EQ(atoi(v), port);
	wait_value(old_node, "topo:after", "2");
	HT_EQ(count_role(s->data, HT_SENTINEL_DATA, HT_ROLE_REPLICA), 2);
	ht_sentinel_destroy(s);
}

static void sentinel_failover_clean(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	int old = ht_sentinel_master_port(s), port;
	int64_t t0 = ht_now_ms();
	ht_node *m;

	port = ht_sentinel_failover(s);
	ht_note("SENTINEL FAILOVER, all synced: %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_CHECK(port != old);
	HT_EQ(ht_sentinel_node(s, old)->role, HT_ROLE_REPLICA);
	m = ht_sentinel_node(s, port);
	expect_status(m, ht_node_cmd(m, "SET topo:x 1"), "OK");
	wait_value(ht_sentinel_node(s, old), "topo:x", "1");
	ht_sentinel_destroy(s);
}

static void sentinel_pause(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	int old, port;

	old = ht_sentinel_stop_master(s);
	HT_EQ(ht_sentinel_node(s, old)->paused, 1);
	port = ht_sentinel_wait_failover(s, old, 20000);
	HT_CHECK(port != old);
	ht_sentinel_cont(s);
	HT_EQ(ht_sentinel_node(s, old)->paused, 0);
	/* Sentinel converts the old master after ~8 s; not waited here */
	ht_sentinel_destroy(s);
}

static void sentinel_tls(void)
{
	ht_tls_certs *certs = ht_tls_make_certs(NULL);
	ht_sentinel_opts o;
	ht_sentinel *s;
	ht_node *m;
	char out[256];

	memset(&o, 0, sizeof o);
	o.tls = certs;
	o.tls_auth_clients = 1;
	o.password = "pw";
	s = ht_sentinel_start(&o);
	HT_CHECK(strncmp(s->url, "rediss-sentinel://127.0.0.1:", 28) == 0);
	m = ht_sentinel_master(s);
	expect_status(m, ht_node_cmd(m, "SET topo:tls 1"), "OK");
	wait_value(&s->data[2], "topo:tls", "1");
	HT_CHECK(ht_node_cli(&s->sentinels[1], out, sizeof out,
	                     "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster") == 0);
	HT_CHECKF(strstr(out, "127.0.0.1") != NULL, "%s", out);
	/* nothing in plain text */
	HT_CHECK(raw_noauth(m->port, "PING") == NULL);
	HT_CHECK(raw_noauth(s->sentinels[0].port, "PING") == NULL);
	check_sentinel_view(s);
	/* a failover over TLS */
	{
		int old = ht_sentinel_kill_master(s);
		int port = ht_sentinel_wait_failover(s, old, 20000);

		m = ht_sentinel_node(s, port);
		wait_value(m, "topo:tls", "1");
		ht_sentinel_restart_node(s, old);
		wait_value(ht_sentinel_node(s, old), "topo:tls", "1");
	}
	ht_sentinel_destroy(s);
	ht_tls_certs_destroy(certs);
}

/* ------------------------------------------------------------------------
 * Cluster
 * ------------------------------------------------------------------------ */
static int other_master(ht_cluster *c, int port)
{
	int i;

	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (c->nodes[i].pid > 0 && c->nodes[i].role == HT_ROLE_MASTER &&
		    c->nodes[i].port != port)
			return c->nodes[i].port;
	HT_FAIL("no other master");
}

/* "MOVED <slot> 127.0.0.1:<port>" / "ASK ..." */
static void expect_redirect(ht_node *n, redisReply *rep, const char *kind,
                            int slot, int port)
{
	char want[64];

	snprintf(want, sizeof want, "%s %d 127.0.0.1:%d", kind, slot, port);
	HT_CHECKF(rep->type == REDIS_REPLY_ERROR && strcmp(rep->str, want) == 0,
	          "%s: \"%s\", expected \"%s\"", n->name,
	          rep->str ? rep->str : "", want);
	freeReplyObject(rep);
}

static void cluster_starts(void)
{
	ht_cluster *c = ht_cluster_start(NULL);
	struct remains gone = {{0}, 0, ""};
	int used[HT_CLUSTER_NODES] = {0};
	char url[512], key[32];
	int i, k, len;

	HT_RANGE(c->start_ms, 0, 10000 * ht_scale());
	HT_EQ(count_role(c->nodes, HT_CLUSTER_NODES, HT_ROLE_MASTER), 3);
	HT_EQ(count_role(c->nodes, HT_CLUSTER_NODES, HT_ROLE_REPLICA), 3);
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		HT_EQ(strlen(c->nodes[i].id), 40);
		if (c->nodes[i].role == HT_ROLE_MASTER)
			HT_CHECK(ht_cluster_replica_of(c, c->nodes[i].port) >
			         0);
	}
	len = snprintf(url, sizeof url, "redis-cluster://");
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		len += snprintf(url + len, sizeof url - (size_t)len,
		                "%s127.0.0.1:%d", i ? "," : "",
		                c->nodes[i].port);
	HT_STREQ(c->url, url);
	HT_EQ(ht_cluster_url(c, url, sizeof url), strlen(c->url));

	/* CRC16 with hash tags, as the server computes it */
	HT_EQ(ht_cluster_slot_of(c, HT_S("foo")), 12182);
	HT_EQ(ht_cluster_slot_of(c, HT_S("{user1000}.following")),
	      ht_cluster_slot_of(c, HT_S("{user1000}.followers")));

	for (k = 0; k < 30; k++) {
		int slot, owner, other;
		ht_node *n;

		snprintf(key, sizeof key, "topo:%d", k);
		slot = ht_cluster_slot_of(c, key, strlen(key));
		owner = ht_cluster_master_of_slot(c, slot);
		n = ht_cluster_node(c, owner);
		HT_EQ(n->role, HT_ROLE_MASTER);
		used[n - c->nodes] = 1;
		expect_status(n, ht_node_cmd(n, "SET %s v", key), "OK");
		other = other_master(c, owner);
		expect_redirect(
		        ht_cluster_node(c, other),
		        ht_node_cmd(ht_cluster_node(c, other), "GET %s", key),
		        "MOVED", slot, owner);
	}
	for (i = 0, k = 0; i < HT_CLUSTER_NODES; i++)
		k += used[i];
	HT_EQ(k, 3); /* keys on every master */

	for (i = 0; i < HT_CLUSTER_NODES; i++)
		remember(&gone, &c->nodes[i], 1);
	snprintf(gone.dir, sizeof gone.dir, "%s", c->dir);
	ht_cluster_destroy(c);
	check_gone(&gone);
}

static void cluster_move_slot(void)
{
	ht_cluster *c = ht_cluster_start(NULL);
	const char *key = "{move}k", *key2 = "{move}stays";
	int slot = ht_cluster_slot_of(c, HT_S(key));
	int src = ht_cluster_master_of_slot(c, slot);
	int dst = other_master(c, src);
	ht_node *s = ht_cluster_node(c, src), *d = ht_cluster_node(c, dst);
	char v[32];
	redisReply *rep;

	expect_status(s, ht_node_cmd(s, "SET %s moved", key), "OK");
	ht_cluster_migrate_slot_start(c, slot, dst);
	/* nothing moved yet: the owner still serves it */
	get_str(s, key, v, sizeof v);
	HT_STREQ(v, "moved");
	HT_EQ(ht_cluster_migrate_keys(c, slot), 1);
	/* moved: the old owner says ASK, the new one MOVED without ASKING */
	expect_redirect(s, ht_node_cmd(s, "GET %s", key), "ASK", slot, dst);
	expect_redirect(d, ht_node_cmd(d, "GET %s", key), "MOVED", slot, src);
	expect_status(d, ht_node_cmd(d, "ASKING"), "OK");
	get_str(d, key, v, sizeof v);
	HT_STREQ(v, "moved");
	/* a new key of the slot during the migration: ASK too */
	expect_redirect(s, ht_node_cmd(s, "SET %s 1", key2), "ASK", slot, dst);
	ht_cluster_migrate_slot_finish(c, slot);
	HT_EQ(ht_cluster_master_of_slot(c, slot), dst);
	expect_redirect(s, ht_node_cmd(s, "GET %s", key), "MOVED", slot, dst);
	get_str(d, key, v, sizeof v);
	HT_STREQ(v, "moved");
	rep = ht_node_cmd(d, "CLUSTER COUNTKEYSINSLOT %d", slot);
	HT_EQ(rep->integer, 1);
	freeReplyObject(rep);

	/* and back in one call */
	ht_cluster_move_slot(c, slot, src);
	HT_EQ(ht_cluster_master_of_slot(c, slot), src);
	get_str(s, key, v, sizeof v);
	HT_STREQ(v, "moved");
	expect_redirect(d, ht_node_cmd(d, "GET %s", key), "MOVED", slot, src);
	ht_cluster_wait_ok(c, 10000);
	ht_cluster_destroy(c);
}

static void cluster_failover(void)
{
	ht_cluster *c = ht_cluster_start(NULL);
	int slot = ht_cluster_slot_of(c, HT_S("fo"));
	int m = ht_cluster_master_of_slot(c, slot), r;
	ht_node *n = ht_cluster_node(c, m);
	int64_t t0;
	char v[32];

	expect_status(n, ht_node_cmd(n, "SET fo 1"), "OK");
	t0 = ht_now_ms();
	r = ht_cluster_failover(c, m);
	ht_note("CLUSTER FAILOVER done in %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_CHECK(r != m);
	HT_EQ(ht_cluster_node(c, r)->role, HT_ROLE_MASTER);
	HT_EQ(n->role, HT_ROLE_REPLICA);
	HT_EQ(ht_cluster_replica_of(c, r), m);
	HT_EQ(ht_cluster_master_of_slot(c, slot), r);
	get_str(ht_cluster_node(c, r), "fo", v, sizeof v);
	HT_STREQ(v, "1");
	expect_redirect(n, ht_node_cmd(n, "GET fo"), "MOVED", slot, r);
	HT_EQ(count_role(c->nodes, HT_CLUSTER_NODES, HT_ROLE_MASTER), 3);
	ht_cluster_destroy(c);
}

static void cluster_kill_master(void)
{
	ht_cluster *c = ht_cluster_start(NULL);
	int slot = ht_cluster_slot_of(c, HT_S("km"));
	int m = ht_cluster_master_of_slot(c, slot), r;
	ht_node *n = ht_cluster_node(c, m);
	redisReply *rep;
	int64_t t0;
	char v[32];

	expect_status(n, ht_node_cmd(n, "SET km 1"), "OK");
	rep = ht_node_cmd(n, "WAIT 1 2000");
	HT_EQ(rep->integer, 1);
	freeReplyObject(rep);
	t0 = ht_now_ms();
	r = ht_cluster_kill_master(c, m);
	ht_note("kill -9 to promoted replica, cluster ok: %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_RANGE(ht_now_ms() - t0, 0, 10000 * ht_scale());
	HT_EQ(n->pid, 0);
	HT_EQ(ht_cluster_master_of_slot(c, slot), r);
	get_str(ht_cluster_node(c, r), "km", v, sizeof v);
	HT_STREQ(v, "1");

	/* back as a replica of the one that took over */
	t0 = ht_now_ms();
	ht_cluster_restart_node(c, m);
	ht_note("killed master back as a replica, cluster ok: %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_EQ(n->role, HT_ROLE_REPLICA);
	HT_EQ(ht_cluster_replica_of(c, r), m);
	/* a replica serves reads after READONLY */
	expect_status(n, ht_node_cmd(n, "READONLY"), "OK");
	wait_value(n, "km", "1");
	ht_cluster_destroy(c);
}

static void cluster_password_tls(void)
{
	ht_tls_certs *certs = ht_tls_make_certs(NULL);
	ht_cluster_opts o;
	ht_cluster *c;
	int slot, m;
	ht_node *n;
	char out[256];

	memset(&o, 0, sizeof o);
	o.tls = certs;
	o.tls_auth_clients = 1;
	o.password = "cluster-secret";
	c = ht_cluster_start(&o);
	HT_CHECK(strncmp(c->url, "rediss-cluster://127.0.0.1:", 27) == 0);
	slot = ht_cluster_slot_of(c, HT_S("{tls}a"));
	m = ht_cluster_master_of_slot(c, slot);
	n = ht_cluster_node(c, m);
	expect_status(n, ht_node_cmd(n, "SET {tls}a 1"), "OK");
	HT_CHECK(ht_node_cli(n, out, sizeof out, "GET {tls}a") == 0);
	HT_CHECKF(strcmp(out, "1\n") == 0, "%s", out);
	HT_CHECK(raw_noauth(m, "PING") == NULL);
	/* ASK/MOVED work the same over TLS, with AUTH on MIGRATE */
	ht_cluster_move_slot(c, slot, other_master(c, m));
	expect_redirect(n, ht_node_cmd(n, "GET {tls}a"), "MOVED", slot,
	                other_master(c, m));
	/* a failover over TLS */
	m = ht_cluster_master_of_slot(c, slot);
	HT_CHECK(ht_cluster_failover(c, m) != m);
	HT_CHECK(ht_cluster_master_of_slot(c, slot) != m);
	ht_cluster_destroy(c);
	ht_tls_certs_destroy(certs);
}

/* ------------------------------------------------------------------------
 * TLS
 * ------------------------------------------------------------------------ */
static void tls_server(void)
{
	ht_tls_certs *certs = ht_tls_make_certs(NULL);
	ht_tls_redis *r = ht_redis_start_tls(certs, HT_CERT_GOOD, 1);
	struct remains gone = {{0}, 0, ""};
	char out[1024], want[64];
	redisReply *rep;

	snprintf(want, sizeof want, "rediss://127.0.0.1:%d", r->node.port);
	HT_STREQ(r->url, want);

	/* redis-cli over TLS, with the client certificate */
	HT_EQ(ht_cli(out, sizeof out,
	             "--tls --cacert %s --cert %s --key %s -p %d SET k v",
	             certs->ca_cert, certs->client_cert, certs->client_key,
	             r->node.port),
	      0);
	HT_STREQ(out, "OK\n");
	HT_EQ(ht_node_cli(&r->node, out, sizeof out, "GET k"), 0);
	HT_STREQ(out, "v\n");
	/* the side channel */
	rep = ht_node_cmd(&r->node, "GET k");
	HT_CHECK(rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "v") == 0);
	freeReplyObject(rep);
	/* with a CA directory */
	HT_EQ(ht_cli(out, sizeof out,
	             "--tls --cacertdir %s --cert %s --key %s -p %d PING",
	             certs->ca_dir, certs->client_cert, certs->client_key,
	             r->node.port),
	      0);
	HT_STREQ(out, "PONG\n");
	/* no client certificate, or one from the other CA: refused */
	ht_cli(out, sizeof out, "--tls --cacert %s -p %d PING", certs->ca_cert,
	       r->node.port);
	HT_CHECKF(strstr(out, "PONG") == NULL, "%s", out);
	ht_cli(out, sizeof out,
	       "--tls --cacert %s --cert %s --key %s -p %d PING",
	       certs->ca_cert, certs->other_client_cert,
	       certs->other_client_key, r->node.port);
	HT_CHECKF(strstr(out, "PONG") == NULL, "%s", out);
	/* the wrong CA: the client refuses the server */
	ht_cli(out, sizeof out,
	       "--tls --cacert %s --cert %s --key %s -p %d PING",
	       certs->other_ca_cert, certs->client_cert, certs->client_key,
	       r->node.port);
	HT_CHECKF(strstr(out, "PONG") == NULL &&
	                  strstr(out, "certificate verify failed") != NULL,
	          "%s", out);
	/* plain TCP to the TLS port fails */
	HT_CHECK(raw_noauth(r->node.port, "PING") == NULL);
	ht_cli(out, sizeof out, "-p %d PING", r->node.port);
	HT_CHECKF(strstr(out, "PONG") == NULL, "%s", out);

	/* a forked child has a side channel of its own */
	{
		pid_t pid = fork();
		int status = 0;

		HT_CHECK(pid >= 0);
		if (pid == 0) {
			redisReply *c = ht_node_cmd(&r->node, "SET child 1");
			_exit(c->type == REDIS_REPLY_STATUS ? 0 : 1);
		}
		HT_CHECK(waitpid(pid, &status, 0) == pid);
		HT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		get_str(&r->node, "child", out, sizeof out);
		HT_STREQ(out, "1");
	}

	/* restart: same port, empty */
	ht_tls_redis_restart(r);
	HT_EQ(ht_node_cli(&r->node, out, sizeof out, "EXISTS k"), 0);
	HT_STREQ(out, "0\n");
	ht_tls_redis_stop(r);
	HT_EQ(r->node.pid, 0);
	ht_tls_redis_restart(r);

	/* without client certificates required, with a password */
	{
		ht_tls_redis *r2 = ht_redis_start_tls_ex(certs, HT_CERT_GOOD, 0,
		                                         "tls-secret");

		HT_EQ(ht_cli(out, sizeof out,
		             "--tls --cacert %s -p %d -a tls-secret "
		             "--no-auth-warning PING",
		             certs->ca_cert, r2->node.port),
		      0);
		HT_STREQ(out, "PONG\n");
		ht_cli(out, sizeof out, "--tls --cacert %s -p %d PING",
		       certs->ca_cert, r2->node.port);
		HT_CHECKF(strstr(out, "NOAUTH") != NULL, "%s", out);
		ht_tls_redis_destroy(r2);
	}

	remember(&gone, &r->node, 1);
	snprintf(gone.dir, sizeof gone.dir, "%s", r->dir);
	ht_tls_redis_destroy(r);
	check_gone(&gone);
	snprintf(gone.dir, sizeof gone.dir, "%s", certs->dir);
	gone.n = 0;
	ht_tls_certs_destroy(certs);
	check_gone(&gone);
}

/* openssl s_client verifying the server on port as a client would (CA,
 * expiry, IP name); returns its output and exit status. */
static int verify_server(const ht_tls_certs *certs, int port, char *out,
                         size_t len)
{
	char addr[32];
	const char *argv[] = {"openssl",
	                      "s_client",
	                      "-connect",
	                      addr,
	                      "-CAfile",
	                      certs->ca_cert,
	                      "-verify_return_error",
	                      "-verify_ip",
	                      "127.0.0.1",
	                      "-brief",
	                      NULL};

	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	return ht_run(out, len, 10000, argv);
}

static void tls_bad_certs_made(void)
{
	ht_tls_certs *certs = ht_tls_make_certs(NULL);
	char out[4096];
	int k;

	{
		const char *good[] = {"openssl",
		                      "x509",
		                      "-noout",
		                      "-checkend",
		                      "0",
		                      "-in",
		                      certs->server_cert[HT_CERT_GOOD],
		                      NULL};
		const char *expired[] = {"openssl",
		                         "x509",
		                         "-noout",
		                         "-checkend",
		                         "0",
		                         "-in",
		                         certs->server_cert[HT_CERT_EXPIRED],
		                         NULL};
		HT_EQ(ht_run(out, sizeof out, 10000, good), 0);
		HT_EQ(ht_run(out, sizeof out, 10000, expired), 1);
		HT_CHECKF(strstr(out, "will expire") != NULL, "%s", out);
	}
	{
		const char *san[] = {"openssl",
		                     "x509",
		                     "-noout",
		                     "-ext",
		                     "subjectAltName",
		                     "-in",
		                     certs->server_cert[HT_CERT_WRONG_NAME],
		                     NULL};
		HT_EQ(ht_run(out, sizeof out, 10000, san), 0);
		HT_CHECKF(strstr(out, "DNS:other.example") != NULL &&
		                  strstr(out, "127.0.0.1") == NULL &&
		                  strstr(out, "localhost") == NULL,
		          "%s", out);
		san[6] = certs->server_cert[HT_CERT_GOOD];
		HT_EQ(ht_run(out, sizeof out, 10000, san), 0);
		HT_CHECKF(strstr(out, "IP Address:127.0.0.1") != NULL &&
		                  strstr(out, "DNS:localhost") != NULL,
		          "%s", out);
	}
	{
		const char *v[] = {"openssl",
		                   "verify",
		                   "-CAfile",
		                   certs->ca_cert,
		                   certs->server_cert[HT_CERT_UNTRUSTED],
		                   NULL};
		HT_CHECK(ht_run(out, sizeof out, 10000, v) != 0);
		v[3] = certs->other_ca_cert;
		HT_EQ(ht_run(out, sizeof out, 10000, v), 0);
		v[3] = certs->ca_cert;
		v[4] = certs->server_cert[HT_CERT_GOOD];
		HT_EQ(ht_run(out, sizeof out, 10000, v), 0);
		v[4] = certs->client_cert;
		HT_EQ(ht_run(out, sizeof out, 10000, v), 0);
		v[3] = certs->other_ca_cert;
		v[4] = certs->other_client_cert;
		HT_EQ(ht_run(out, sizeof out, 10000, v), 0);
	}

	/* servers with each certificate start; a verifying client sees why
	 * each bad one is bad */
	for (k = 0; k < HT_CERT_KINDS; k++) {
		static const char *const why[HT_CERT_KINDS] = {
		        NULL, "certificate has expired", "IP address mismatch",
		        "unable to get local issuer certificate"};
		ht_tls_redis *r = ht_redis_start_tls(certs, k, 0);
		int rc = verify_server(certs, r->node.port, out, sizeof out);

		if (!why[k])
			HT_CHECKF(rc == 0, "good certificate refused: %s", out);
		else
			HT_CHECKF(rc != 0 && strstr(out, why[k]) != NULL,
			          "kind %d: rc %d: %s", k, rc, out);
		/* the side channel reaches it anyway */
		HT_EQ(ht_node_cli(&r->node, out, sizeof out, "--insecure PING"),
		      0);
		HT_STREQ(out, "PONG\n");
		freeReplyObject(ht_node_cmd(&r->node, "PING"));
		ht_tls_redis_destroy(r);
	}
	ht_tls_certs_destroy(certs);
}

HT_MAIN(HT_CASE(sentinel_starts), HT_CASE(sentinel_passwords),
        HT_CASE(sentinel_failover_kill), HT_CASE(sentinel_failover_clean),
        HT_CASE(sentinel_pause), HT_CASE(sentinel_tls), HT_CASE(cluster_starts),
        HT_CASE(cluster_move_slot), HT_CASE(cluster_failover),
        HT_CASE(cluster_kill_master), HT_CASE(cluster_password_tls),
        HT_CASE(tls_server), HT_CASE(tls_bad_certs_made))
