/*
 * topo-up: the Sentinel and Cluster deployments of `make interop`, started
 * with the C tests' topology harness (tests/harness_topo.h: Debian's
 * redis-server and redis-sentinel on free 127.0.0.1 ports, nothing
 * persisted, every node killed by the kernel if this process dies).
 *
 *   hl_interop_topo sentinel|cluster
 *
 * Once the deployment is up it prints one line:
 *
 *   up sentinel URL master=NAME sentinels=H:P,H:P,H:P data=H:P,H:P,H:P
 *           master_port=P ms=STARTUP_MS
 *   up cluster URL nodes=H:P,...(6) masters=P,P,P ms=STARTUP_MS
 *
 * then answers each line of stdin with one line ("ok ..." or "err ..."):
 *
 *   master                -> ok port=P             (sentinel: the master)
 *   slot KEY_HEX          -> ok slot=S port=P      (cluster: the master of
 *                                                   the key's slot)
 *   masters               -> ok masters=P,P,P      (cluster, as now)
 *   kill-master [PORT]    -> ok old=P new=Q ms=T   (kill -9 the master,
 *                            sentinel; the master PORT, cluster; then wait
 *                            until a replica took over)
 *   failover PORT         -> ok old=P new=Q ms=T   (cluster: CLUSTER
 *                            FAILOVER on a replica of master PORT, waits)
 *   restart PORT          -> ok port=P ms=T        (start a killed node
 *                            again, as a replica; waits until synced)
 *   quit                  -> bye, everything stopped
 *
 * End of input acts as "quit", so the deployment goes away with the
 * process that drives this one. Built by tests/interop/run.sh (as
 * BUILD/interop/hl_interop_topo) and by CMake (tests/tools: hl_topo, for
 * the bindings' topology tests): keep the protocol compatible. The harness's own notes and failures go
 * to stderr; a harness failure (ht_fail) ends this process with status 1
 * after stopping the nodes.
 */
#define _GNU_SOURCE

#include "harness_topo.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *out; /* the protocol: the original stdout */

static long unhex(char *buf, size_t cap, const char *hex)
{
	size_t n = strlen(hex), i;

	if (n % 2 != 0 || n / 2 > cap)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned int byte;
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -1;
		buf[i] = (char)byte;
	}
	return (long)(n / 2);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

/* The running cluster masters, comma separated. */
static void cluster_masters(ht_cluster *c, char *buf, size_t len)
{
	size_t k = 0;
	int i;

	buf[0] = '\0';
	ht_cluster_refresh(c);
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (c->nodes[i].pid > 0 && c->nodes[i].role == HT_ROLE_MASTER)
			k += (size_t)snprintf(buf + k, len - k, "%s%d",
			                      k ? "," : "", c->nodes[i].port);
}

static void addrs(const ht_node *nodes, int n, char *buf, size_t len)
{
	size_t k = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s127.0.0.1:%d",
		                      i ? "," : "", nodes[i].port);
}

static int run_sentinel(void)
{
	ht_sentinel *s = ht_sentinel_start(NULL);
	char sent[256], data[256], line[512];

	addrs(s->sentinels, HT_SENTINEL_SENTINELS, sent, sizeof sent);
	addrs(s->data, HT_SENTINEL_DATA, data, sizeof data);
	say("up sentinel %s master=%s sentinels=%s data=%s master_port=%d "
	    "ms=%lld",
	    s->url, s->name, sent, data, ht_sentinel_master_port(s),
	    (long long)s->start_ms);
	while (fgets(line, sizeof line, stdin) != NULL) {
		char cmd[32] = "";
		int arg = 0, n = sscanf(line, "%31s %d", cmd, &arg);
		int64_t t0 = ht_now_ms();

		if (n < 1)
			continue;
		if (strcmp(cmd, "quit") == 0)
			break;
		if (strcmp(cmd, "master") == 0) {
			say("ok port=%d", ht_sentinel_master_port(s));
		} else if (strcmp(cmd, "kill-master") == 0) {
			int old = ht_sentinel_kill_master(s);
			int now = ht_sentinel_wait_failover(s, old, 30000);
			say("ok old=%d new=%d ms=%lld", old, now,
			    (long long)(ht_now_ms() - t0));
		} else if (strcmp(cmd, "restart") == 0 && n == 2) {
			ht_sentinel_restart_node(s, arg);
			say("ok port=%d ms=%lld", arg,
			    (long long)(ht_now_ms() - t0));
		} else {
			say("err unknown command");
		}
	}
	ht_sentinel_destroy(s);
	say("bye");
	return 0;
}

static int run_cluster(void)
{
	ht_cluster *c = ht_cluster_start(NULL);
	char nodes[512], masters[64], line[2048], key[1024];

	addrs(c->nodes, HT_CLUSTER_NODES, nodes, sizeof nodes);
	cluster_masters(c, masters, sizeof masters);
	say("up cluster %s nodes=%s masters=%s ms=%lld", c->url, nodes, masters,
	    (long long)c->start_ms);
	while (fgets(line, sizeof line, stdin) != NULL) {
		char cmd[32] = "", word[1100] = "";
		int n = sscanf(line, "%31s %1099s", cmd, word);
		int arg = n == 2 ? atoi(word) : 0;
		int64_t t0 = ht_now_ms();

		if (n < 1)
			continue;
		if (strcmp(cmd, "quit") == 0)
			break;
		if (strcmp(cmd, "slot") == 0 && n == 2) {
			long len = unhex(key, sizeof key, word);
			int slot;
			if (len <= 0) {
				say("err bad KEY_HEX");
				continue;
			}
			slot = ht_cluster_slot_of(c, key, (size_t)len);
			say("ok slot=%d port=%d", slot,
			    ht_cluster_master_of_slot(c, slot));
		} else if (strcmp(cmd, "masters") == 0) {
			cluster_masters(c, masters, sizeof masters);
			say("ok masters=%s", masters);
		} else if (strcmp(cmd, "failover") == 0 && n == 2) {
			int now = ht_cluster_failover(c, arg);
			say("ok old=%d new=%d ms=%lld", arg, now,
			    (long long)(ht_now_ms() - t0));
		} else if (strcmp(cmd, "kill-master") == 0 && n == 2) {
			int now = ht_cluster_kill_master(c, arg);
			say("ok old=%d new=%d ms=%lld", arg, now,
			    (long long)(ht_now_ms() - t0));
		} else if (strcmp(cmd, "restart") == 0 && n == 2) {
			ht_cluster_restart_node(c, arg);
			say("ok port=%d ms=%lld", arg,
			    (long long)(ht_now_ms() - t0));
		} else {
			say("err unknown command");
		}
	}
	ht_cluster_destroy(c);
	say("bye");
	return 0;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc != 2 || (strcmp(argv[1], "sentinel") != 0 &&
	                  strcmp(argv[1], "cluster") != 0)) {
		fprintf(stderr, "usage: %s sentinel|cluster\n", argv[0]);
		return 2;
	}
	/* The protocol keeps the original stdout; the harness's notes
	 * (printed on stdout) go to stderr with everything else it says. */
	fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || (out = fdopen(fd, "w")) == NULL ||
	    dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		perror("topo-up");
		return 1;
	}
	return strcmp(argv[1], "sentinel") == 0 ? run_sentinel()
	                                        : run_cluster();
}
