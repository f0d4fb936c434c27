/*
 * The nodes of a client, for tools (hl_client_masters,
 * hl_client_command_node): the one master of a single server; the three
 * masters of a cluster, each answering a SCAN with its own keys only and a
 * key of another's slot with MOVED (no redirect followed); a lost reply
 * (in doubt, applied once); bad input.
 */
#include "harness.h"
#include "harness_topo.h"

#include <stdlib.h>
#include <string.h>

static int run_on(hl_value **out, hl_client *c, const char *node,
                  const char *a0, const char *a1, const char *a2)
{
	const char *argv[3] = {a0, a1, a2};
	size_t lens[3] = {strlen(a0), a1 ? strlen(a1) : 0, a2 ? strlen(a2) : 0};
	return hl_client_command_node(out, c, node,
	                              a2   ? 3
	                              : a1 ? 2
	                                   : 1,
	                              argv, lens, 1);
}

static void standalone(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_value *v = NULL;
	char node[64];
	const char *argv[1] = {"PING"};
	size_t lens[1] = {4};

	HT_OK(hl_client_masters(&v, c));
	HT_EQ(hl_value_type(v), HL_VALUE_ARRAY);
	HT_EQ(hl_value_len(v), 1);
	snprintf(node, sizeof node, "127.0.0.1:%d", r->port);
	HT_STREQ(hl_value_bytes(hl_value_at(v, 0), NULL), node);
	hl_value_free(v);

	/* a command there: written, read back by another connection */
	HT_OK(run_on(&v, c, node, "SET", "nodes:k", "on-the-node"));
	HT_STREQ(hl_value_bytes(v, NULL), "OK");
	hl_value_free(v);
	HT_OK(run_on(&v, c, node, "GET", "nodes:k", NULL));
	HT_STREQ(hl_value_bytes(v, NULL), "on-the-node");
	hl_value_free(v);
	HT_EQ(ht_exists(r, HT_S("nodes:k")), 1);
	/* an error reply: HL_EREDIS with its text */
	HT_RC(run_on(&v, c, node, "NOSUCHCOMMAND", NULL, NULL), HL_EREDIS);
	HT_CHECK(v == NULL);
	HT_CHECK(strstr(hl_error_last(), "unknown command") != NULL);

	/* bad input */
	HT_RC(hl_client_masters(NULL, c), HL_EINVAL);
	HT_RC(hl_client_masters(&v, NULL), HL_EINVAL);
	HT_RC(run_on(&v, c, "127.0.0.1:1", "PING", NULL, NULL), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "not a master") != NULL);
	HT_RC(hl_client_command_node(&v, c, NULL, 1, argv, lens, 1), HL_EINVAL);
	HT_RC(hl_client_command_node(&v, c, node, 0, argv, lens, 1), HL_EINVAL);
	HT_RC(hl_client_command_node(&v, c, node, 1, NULL, lens, 1), HL_EINVAL);
	HT_RC(hl_client_command_node(&v, NULL, node, 1, argv, lens, 1),
	      HL_EINVAL);
	hl_client_close(c);
	HT_RC(hl_client_masters(&v, c), HL_ECLOSED);
	HT_RC(hl_client_command_node(&v, c, node, 1, argv, lens, 1),
	      HL_ECLOSED);
	hl_client_free(c);
}

static int counted_once(void *arg)
{
	return ht_get_int(ht_raw_of(arg), "nodes:n") == 1;
}

/* A command whose reply is lost after it reached Redis (the fault proxy
 * holds the reply past the command timeout): not idempotent, it is not
 * sent again but says in doubt, and counted once; idempotent, it is sent
 * once more, and answers once the network heals. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c;
	hl_value *v = NULL;
	char node[64];

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 250;
	o.connect_timeout_ms = 1000;
	c = ht_client_url(p->url, &o);
	snprintf(node, sizeof node, "127.0.0.1:%d", p->port);
	HT_OK(hl_client_masters(&v, c));
	HT_STREQ(hl_value_bytes(hl_value_at(v, 0), NULL), node);
	hl_value_free(v);
	ht_del(r, HT_S("nodes:n"));
	ht_proxy_cmd(p, "delay 400");
	{
		const char *argv[2] = {"INCR", "nodes:n"};
		size_t lens[2] = {4, 7};
		HT_RC(hl_client_command_node(&v, c, node, 2, argv, lens, 0),
		      HL_EINDOUBT);
		HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	}
	HT_CHECK(ht_wait_until(counted_once, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	ht_sleep_ms(1000); /* a second copy would have landed */
	HT_EQ(ht_get_int(ht_raw_of(r), "nodes:n"), 1);
	HT_OK(run_on(&v, c, node, "GET", "nodes:n", NULL));
	HT_STREQ(hl_value_bytes(v, NULL), "1");
	hl_value_free(v);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* The port of "127.0.0.1:port". */
static int port_of(const hl_value *v)
{
	const char *s = hl_value_bytes(v, NULL);
	const char *colon = s ? strrchr(s, ':') : NULL;
	return colon ? atoi(colon + 1) : -1;
}

static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c;
	hl_value *m = NULL, *v = NULL;
	char url[600], key[32];
	int i, j, found[3] = {0, 0, 0}, nkeys = 30;

	ht_cluster_url(cl, url, sizeof url);
	c = ht_client_url(url, NULL);
	HT_OK(hl_client_masters(&m, c));
	HT_EQ(hl_value_len(m), 3);
	for (i = 0; i < 3; i++) {
		ht_node *n = ht_cluster_node(cl, port_of(hl_value_at(m, i)));
		HT_CHECK(n != NULL);
		HT_EQ(n->role, HT_ROLE_MASTER);
	}
	/* keys over every slot's master, written where their slot is */
	for (i = 0; i < nkeys; i++) {
		const char *argv[3] = {"SET", key, "1"};
		size_t lens[3] = {3, 0, 1};
		snprintf(key, sizeof key, "nodes:%d", i);
		lens[1] = strlen(key);
		HT_OK(hl_client_command(NULL, c, 3, argv, lens, NULL, 0, 1));
	}
	/* SCAN on each master: its own keys, together all of them */
	for (i = 0; i < 3; i++) {
		const char *node = hl_value_bytes(hl_value_at(m, i), NULL);
		const hl_value *keys;
		HT_OK(run_on(&v, c, node, "DBSIZE", NULL, NULL));
		ht_note("%s: %lld keys", node, (long long)hl_value_int(v));
		hl_value_free(v);
		{
			const char *argv[6] = {"SCAN",    "0",     "MATCH",
			                       "nodes:*", "COUNT", "1000"};
			size_t lens[6] = {4, 1, 5, 7, 5, 4};
			HT_OK(hl_client_command_node(&v, c, node, 6, argv, lens,
			                             1));
		}
		HT_EQ(hl_value_len(v), 2);
		keys = hl_value_at(v, 1);
		for (j = 0; j < (int)hl_value_len(keys); j++) {
			const char *k =
			        hl_value_bytes(hl_value_at(keys, j), NULL);
			HT_EQ(ht_cluster_master_of_slot(
			              cl, ht_cluster_slot_of(cl, k, strlen(k))),
			      port_of(hl_value_at(m, i)));
		}
		found[i] = (int)hl_value_len(keys);
		HT_CHECK(found[i] > 0);
		hl_value_free(v);
	}
	HT_EQ(found[0] + found[1] + found[2], nkeys);
	/* a key of another master's slot: MOVED, not followed */
	for (i = 0; i < 3; i++) {
		const char *node = hl_value_bytes(hl_value_at(m, i), NULL);
		for (j = 0; j < nkeys; j++) {
			snprintf(key, sizeof key, "nodes:%d", j);
			if (ht_cluster_master_of_slot(
			            cl,
			            ht_cluster_slot_of(cl, key, strlen(key))) !=
			    port_of(hl_value_at(m, i)))
				break;
		}
		HT_RC(run_on(&v, c, node, "GET", key, NULL), HL_EREDIS);
		HT_CHECK(strstr(hl_error_last(), "MOVED") != NULL);
	}
	/* a replica is not a master of the client */
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (cl->nodes[i].role == HT_ROLE_REPLICA) {
			snprintf(key, sizeof key, "127.0.0.1:%d",
			         cl->nodes[i].port);
			HT_RC(run_on(&v, c, key, "PING", NULL, NULL),
			      HL_EINVAL);
			break;
		}
	hl_value_free(m);
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

HT_MAIN(HT_CASE(standalone), HT_CASE(lost_reply), HT_CASE(cluster))
