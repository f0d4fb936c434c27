/*
 * URLs of every topology (hl__url_parse, hl__url_safe) and cluster slots
 * (hl__slot, hl__name_slot_safe), the library's internal functions: no
 * Redis. url.c, slot.c and status.c are compiled into this test.
 *
 * The slot values were computed by a real redis-server 7.0.15 started by
 * hand with --cluster-enabled yes: CLUSTER KEYSLOT of each key, sent as a
 * binary-safe RESP bulk string.
 */
#include "harness.h"

#include "base/base.h"

#include <stdlib.h>

#define SECRET "topsecret"

/* ---- helpers ------------------------------------------------------------ */

static void parse_ok(hl_url *u, const char *url)
{
	int rc = hl__url_parse(u, url);
	HT_CHECKF(rc == HL_OK, "url \"%s\": %s: %s", url, hl_status_name(rc),
	          hl_error_last());
}

/* The fields every URL has. */
static void check_url(const hl_url *u, const char *url, int topology, int tls,
                      int nhosts, const char *user, const char *password,
                      const char *master_name, int db)
{
	HT_CHECKF(u->topology == topology, "%s: topology %d", url, u->topology);
	HT_CHECKF(u->tls == tls, "%s: tls %d", url, u->tls);
	HT_CHECKF(u->nhosts == nhosts && u->hosts, "%s: %d hosts", url,
	          u->nhosts);
	HT_CHECKF(user ? u->user && strcmp(u->user, user) == 0 : !u->user,
	          "%s: user %s", url, u->user ? u->user : "(null)");
	HT_CHECKF(password ? u->password && strcmp(u->password, password) == 0
	                   : !u->password,
	          "%s: password %s", url, u->password ? "(set)" : "(null)");
	HT_CHECKF(master_name ? u->master_name &&
	                                strcmp(u->master_name, master_name) == 0
	                      : !u->master_name,
	          "%s: master_name %s", url,
	          u->master_name ? u->master_name : "(null)");
	HT_CHECKF(u->db == db, "%s: db %d", url, u->db);
}

static void check_host(const hl_url *u, const char *url, int i,
                       const char *host, int port)
{
	const hl_addr *a = &u->hosts[i];
	HT_CHECKF(strcmp(a->host, host) == 0 && a->port == port &&
	                  a->path[0] == '\0',
	          "%s: host %d is \"%s\" port %d, want \"%s\" port %d", url, i,
	          a->host, a->port, host, port);
}

/* url fails with HL_EINVAL, a message holding want, the URL quoted with
 * the password masked (when it has one) and no piece of the password; u
 * is left empty. */
static void parse_bad(const char *url, const char *want)
{
	hl_url u;
	const char *msg;
	int rc;

	memset(&u, 0xa5, sizeof u);
	rc = hl__url_parse(&u, url);
	msg = hl_error_last();
	HT_CHECKF(rc == HL_EINVAL, "url \"%s\": %s (%s)", url,
	          hl_status_name(rc), msg);
	HT_CHECKF(strstr(msg, want) != NULL,
	          "url \"%s\": message \"%s\" lacks \"%s\"", url, msg, want);
	HT_CHECKF(strncmp(msg, "bad url \"", 9) == 0, "url \"%s\": %s", url,
	          msg);
	HT_CHECKF(!strstr(msg, SECRET) && !strstr(msg, "ecret"),
	          "url \"%s\": the message shows the password: %s", url, msg);
	if (strstr(url, "ecret"))
		HT_CHECKF(strstr(msg, "***@") != NULL,
		          "url \"%s\": no masked password in: %s", url, msg);
	HT_CHECK(u.hosts == NULL && u.nhosts == 0 && u.user == NULL &&
	         u.password == NULL && u.master_name == NULL);
}

/* ---- one server --------------------------------------------------------- */

static void single(void)
{
	hl_url u;
	const char *url;

	url = "redis://127.0.0.1";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 0);
	check_host(&u, url, 0, "127.0.0.1", 6379);
	hl__url_clear(&u);

	url = "redis://localhost:6380/3";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 3);
	check_host(&u, url, 0, "localhost", 6380);
	hl__url_clear(&u);

	url = "redis://h/";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 0);
	check_host(&u, url, 0, "h", 6379);
	hl__url_clear(&u);

	url = "REDIS://h:1/1000000";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 1000000);
	check_host(&u, url, 0, "h", 1);
	hl__url_clear(&u);

	url = "rediss://alice:pw@redis.example.com:65535/2";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 1, 1, "alice", "pw", NULL, 2);
	check_host(&u, url, 0, "redis.example.com", 65535);
	hl__url_clear(&u);

	url = "Rediss://h";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 1, 1, NULL, NULL, NULL, 0);
	check_host(&u, url, 0, "h", 6379);
	hl__url_clear(&u);

	/* the default user: ":password" or a lone token */
	url = "redis://:pw@h";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, "pw", NULL, 0);
	hl__url_clear(&u);
	url = "redis://pw@h";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, "pw", NULL, 0);
	hl__url_clear(&u);
	url = "redis://alice:@h";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, "alice", "", NULL, 0);
	hl__url_clear(&u);

	/* percent-decoding; the last '@' before the path ends the user info,
	 * so an unescaped '@', '?' or '#' in a password still works */
	url = "redis://al%40ice:p%40ss%3Aw%2Frd%25x@h%2Dx:7/1";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, "al@ice", "p@ss:w/rd%x", NULL,
	          1);
	check_host(&u, url, 0, "h-x", 7);
	hl__url_clear(&u);
	url = "redis://alice:top@secret@h/1";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, "alice", "top@secret", NULL,
	          1);
	hl__url_clear(&u);
	url = "redis://:pa#s?s@h:9";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, "pa#s?s", NULL, 0);
	check_host(&u, url, 0, "h", 9);
	hl__url_clear(&u);

	/* IPv6 */
	url = "redis://[::1]:6380/1";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 1);
	check_host(&u, url, 0, "::1", 6380);
	hl__url_clear(&u);
	url = "rediss://:pw@[2001:db8::7]";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 1, 1, NULL, "pw", NULL, 0);
	check_host(&u, url, 0, "2001:db8::7", 6379);
	hl__url_clear(&u);
	url = "redis://[fe80::1%25eth0]:7000";
	parse_ok(&u, url);
	check_host(&u, url, 0, "fe80::1%eth0", 7000);
	hl__url_clear(&u);

	/* unix sockets */
	url = "unix:///tmp/redis.sock";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, NULL, NULL, 0);
	HT_STREQ(u.hosts[0].path, "/tmp/redis.sock");
	HT_STREQ(u.hosts[0].host, "");
	hl__url_clear(&u);
	url = "unix://alice:pw@/run/redis/a%20b.sock?db=2";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, "alice", "pw", NULL, 2);
	HT_STREQ(u.hosts[0].path, "/run/redis/a b.sock");
	hl__url_clear(&u);
	url = "unix://:pw@/tmp/r.sock";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SINGLE, 0, 1, NULL, "pw", NULL, 0);
	hl__url_clear(&u);

	/* clearing twice is harmless */
	hl__url_clear(&u);
}

/* ---- Sentinel ----------------------------------------------------------- */

static void sentinel(void)
{
	hl_url u;
	const char *url;

	url = "redis-sentinel://s1,s2:26380,[::1]:26381/mymaster";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 3, NULL, NULL, "mymaster", 0);
	check_host(&u, url, 0, "s1", 26379);
	check_host(&u, url, 1, "s2", 26380);
	check_host(&u, url, 2, "::1", 26381);
	hl__url_clear(&u);

	url = "redis-sentinel://alice:pw@127.0.0.1:5000/mymaster/2";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 1, "alice", "pw", "mymaster",
	          2);
	check_host(&u, url, 0, "127.0.0.1", 5000);
	hl__url_clear(&u);

	url = "rediss-sentinel://:pw@s1:1,s2:2/my%2Fmaster%40x/";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 1, 2, NULL, "pw", "my/master@x",
	          0);
	check_host(&u, url, 0, "s1", 1);
	check_host(&u, url, 1, "s2", 2);
	hl__url_clear(&u);

	/* Lettuce's form: the master's name in the fragment */
	url = "redis-sentinel://s1,s2/3#mymaster";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 2, NULL, NULL, "mymaster", 3);
	hl__url_clear(&u);
	url = "rediss-sentinel://alice:pw@s1:26000#my%20master";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 1, 1, "alice", "pw", "my master",
	          0);
	check_host(&u, url, 0, "s1", 26000);
	hl__url_clear(&u);
	url = "redis-sentinel://s1/#m";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 1, NULL, NULL, "m", 0);
	hl__url_clear(&u);

	/* the same sentinel twice is fine */
	url = "REDIS-SENTINEL://s1:26379,s1:26379/m";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 2, NULL, NULL, "m", 0);
	check_host(&u, url, 1, "s1", 26379);
	hl__url_clear(&u);
}

/* ---- Cluster ------------------------------------------------------------ */

static void cluster(void)
{
	hl_url u;
	const char *url;

	url = "redis-cluster://n1:7000,n2:7001,[::1]:7002";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_CLUSTER, 0, 3, NULL, NULL, NULL, 0);
	check_host(&u, url, 0, "n1", 7000);
	check_host(&u, url, 1, "n2", 7001);
	check_host(&u, url, 2, "::1", 7002);
	hl__url_clear(&u);

	url = "rediss-cluster://alice:pw@n1";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_CLUSTER, 1, 1, "alice", "pw", NULL, 0);
	check_host(&u, url, 0, "n1", 6379);
	hl__url_clear(&u);

	url = "redis-cluster://n1,n2/0";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_CLUSTER, 0, 2, NULL, NULL, NULL, 0);
	check_host(&u, url, 1, "n2", 6379);
	hl__url_clear(&u);

	url = "redis-cluster://:pw@n1,n1/";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_CLUSTER, 0, 2, NULL, "pw", NULL, 0);
	hl__url_clear(&u);
}

/* ---- master and replicas ------------------------------------------------ */

static void replica(void)
{
	hl_url u;
	const char *url;

	url = "redis-replica://m:6379,r1:6380,r2/4";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_REPLICA, 0, 3, NULL, NULL, NULL, 4);
	check_host(&u, url, 0, "m", 6379);
	check_host(&u, url, 1, "r1", 6380);
	check_host(&u, url, 2, "r2", 6379);
	hl__url_clear(&u);

	url = "rediss-replica://:pw@m";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_REPLICA, 1, 1, NULL, "pw", NULL, 0);
	check_host(&u, url, 0, "m", 6379);
	hl__url_clear(&u);

	url = "redis-replica://bob:b%2Cc@[::1]:1,[::2]:2";
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_REPLICA, 0, 2, "bob", "b,c", NULL, 0);
	check_host(&u, url, 0, "::1", 1);
	check_host(&u, url, 1, "::2", 2);
	hl__url_clear(&u);
}

/* ---- host lists --------------------------------------------------------- */

/* "<scheme>://n0:7000,n1:7001,..." with n hosts. */
static char *list_url(const char *scheme, int n, const char *tail)
{
	size_t cap = 64 + (size_t)n * 16 + strlen(tail), k;
	char *url = malloc(cap);
	int i;
	HT_CHECK(url);
	k = (size_t)snprintf(url, cap, "%s://alice:" SECRET "@", scheme);
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(url + k, cap - k, "%sn%d:%d",
		                      i ? "," : "", i, 7000 + i);
	snprintf(url + k, cap - k, "%s", tail);
	return url;
}

static void host_lists(void)
{
	hl_url u;
	char *url, name[16];
	int i;

	url = list_url("redis-cluster", HL_URL_MAX_HOSTS, "");
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_CLUSTER, 0, 64, "alice", SECRET, NULL, 0);
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof name, "n%d", i);
		check_host(&u, url, i, name, 7000 + i);
	}
	hl__url_clear(&u);
	free(url);

	url = list_url("redis-sentinel", HL_URL_MAX_HOSTS, "/m/1");
	parse_ok(&u, url);
	check_url(&u, url, HL_TOPO_SENTINEL, 0, 64, "alice", SECRET, "m", 1);
	hl__url_clear(&u);
	free(url);

	url = list_url("redis-cluster", HL_URL_MAX_HOSTS + 1, "");
	parse_bad(url, "65 hosts: at most 64");
	free(url);
	url = list_url("rediss-replica", 1000, "/1");
	parse_bad(url, "1000 hosts: at most 64");
	free(url);
	url = list_url("redis-sentinel", 65, "/m");
	parse_bad(url, "at most 64");
	free(url);
}

/* ---- every error -------------------------------------------------------- */

static void errors(void)
{
	static const struct {
		const char *url, *want;
	} cases[] = {
	        /* schemes */
	        {"",
	         "expected redis://, rediss://, unix://, redis-sentinel://"},
	        {"redis", "expected redis://"},
	        {"127.0.0.1:6379", "expected redis://"},
	        {"alice:" SECRET "@127.0.0.1:6379", "expected redis://"},
	        {"http://alice:" SECRET "@127.0.0.1:6379", "expected redis://"},
	        {"rediss:/alice:" SECRET "@127.0.0.1", "expected redis://"},
	        {"redis+sentinel://alice:" SECRET "@s/m", "expected redis://"},
	        {"valkey://alice:" SECRET "@h", "expected redis://"},
	        {"redis-sentinels://alice:" SECRET "@s/m", "expected redis://"},
	        /* user info */
	        {"redis://alice:top%zzsecret@h",
	         "bad percent-escape in user info"},
	        {"redis://alice:top%00secret@h",
	         "bad percent-escape in user info"},
	        {"redis://alice:topsecret%4@h",
	         "bad percent-escape in user info"},
	        {"redis://al%ice:" SECRET "@h",
	         "bad percent-escape in user info"},
	        {"redis-cluster://alice:top%zsecret@h",
	         "bad percent-escape in user info"},
	        {"unix://alice:top%zzsecret@/tmp/s",
	         "bad percent-escape in user info"},
	        /* hosts */
	        {"redis://", "missing host"},
	        {"redis://alice:" SECRET "@", "missing host"},
	        {"redis://alice:" SECRET "@/0", "missing host"},
	        {"redis://alice:" SECRET "@:6379", "missing host"},
	        {"redis://alice:" SECRET "@[]:6379", "missing host"},
	        {"redis://alice:" SECRET "@[::1/0", "unclosed '[' in host"},
	        {"redis://alice:" SECRET "@[::1]x:1", "junk after ']'"},
	        {"redis://alice:" SECRET "@::1",
	         "an IPv6 address goes in brackets"},
	        {"redis://alice:" SECRET "@fe80::1:6379",
	         "an IPv6 address goes in brackets"},
	        {"redis://alice:" SECRET "@h%zz", "bad percent-escape in host"},
	        {"redis://alice:" SECRET "@h%00x",
	         "bad percent-escape in host"},
	        {"redis://alice:" SECRET "@h1,h2", "redis:// takes one host"},
	        {"rediss://alice:" SECRET "@h1,h2:1/0",
	         "rediss:// takes one host"},
	        {"redis-cluster://alice:" SECRET "@", "missing host"},
	        {"redis-cluster://alice:" SECRET "@/0", "missing host"},
	        {"redis-cluster://alice:" SECRET "@h1,,h2",
	         "empty host in the list (host 2)"},
	        {"redis-cluster://alice:" SECRET "@h1,",
	         "empty host in the list (host 2)"},
	        {"redis-replica://alice:" SECRET "@,h1",
	         "empty host in the list (host 1)"},
	        {"redis-sentinel://alice:" SECRET "@s1,,s3/m",
	         "empty host in the list (host 2)"},
	        {"redis-sentinel://alice:" SECRET "@,#m",
	         "empty host in the list"},
	        {"redis-cluster://alice:" SECRET "@h1,[::1",
	         "unclosed '[' in host (host 2 of the list)"},
	        {"redis-cluster://alice:" SECRET "@h1,[]:1",
	         "missing host (host 2 of the list)"},
	        {"redis-cluster://alice:" SECRET "@h1,:7000",
	         "missing host (host 2 of the list)"},
	        {"redis-cluster://alice:" SECRET "@h1,::1",
	         "an IPv6 address goes in brackets: [::1]:6379 (host 2 of"},
	        {"redis-replica://alice:" SECRET "@m,r%zz",
	         "bad percent-escape in host (host 2 of the list)"},
	        /* ports */
	        {"redis://alice:" SECRET "@127.0.0.1:0",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:65536",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:99999",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:-1",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:+1",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:abc",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:", "port must be 1-65535"},
	        {"redis://alice:" SECRET "@127.0.0.1:6379x",
	         "port must be 1-65535"},
	        {"redis://alice:" SECRET "@[::1]:", "port must be 1-65535"},
	        {"redis://:" SECRET "@127.0.0.1:abc", "port must be 1-65535"},
	        {"redis-cluster://alice:" SECRET "@h1:7000,h2:0",
	         "port must be 1-65535 (host 2 of the list)"},
	        {"redis-sentinel://alice:" SECRET "@s1:70000/m",
	         "port must be 1-65535 (host 1 of the list)"},
	        /* a password with an unescaped '/': the parser sees "alice" as
	         * the host and "top" as its port; the message quotes neither */
	        {"redis://alice:top/" SECRET "@127.0.0.1:6379", "port must be"},
	        {"redis-cluster://alice:top/" SECRET "@h1,h2", "port must be"},
	        /* databases */
	        {"redis://alice:" SECRET "@127.0.0.1:6379/abc",
	         "database must be a number"},
	        {"redis://alice:" SECRET "@127.0.0.1:6379/-1",
	         "database must be a number"},
	        {"redis://alice:" SECRET "@127.0.0.1:6379/1x",
	         "database must be a number"},
	        {"redis://alice:" SECRET "@h/1000001",
	         "database must be a number"},
	        {"redis://alice:" SECRET "@h/0/1", "database must be a number"},
	        {"redis://" SECRET "@127.0.0.1:6379/x",
	         "database must be a number"},
	        {"redis://alice:top%73ecret@127.0.0.1:6379/x",
	         "database must be a number"},
	        {"redis://alice:top@" SECRET "@127.0.0.1:6379/x",
	         "database must be a number"},
	        {"redis-replica://alice:" SECRET "@m,r/x",
	         "database must be a number"},
	        {"redis-cluster://alice:" SECRET "@h1/x",
	         "database must be a number"},
	        {"redis-cluster://alice:" SECRET "@h1,h2/1",
	         "Redis Cluster has only database 0"},
	        {"rediss-cluster://alice:" SECRET "@h1/15",
	         "Redis Cluster has only database 0"},
	        /* query strings and fragments */
	        {"redis://alice:" SECRET "@127.0.0.1:6379/0?x=1",
	         "query string"},
	        {"redis://alice:" SECRET "@127.0.0.1:6379?db=1",
	         "query string"},
	        {"rediss://alice:" SECRET "@h?", "query string"},
	        {"redis-cluster://alice:" SECRET "@h1,h2?x=1",
	         "query string is not supported in redis-cluster:// urls"},
	        {"redis-replica://alice:" SECRET "@m/1?x=1", "query string"},
	        {"redis-sentinel://alice:" SECRET "@s1/m?x=1",
	         "query string is not supported in redis-sentinel:// urls (the "
	         "database goes in the path: "
	         "redis-sentinel://host:port/master-name/N)"},
	        {"redis-sentinel://alice:" SECRET "@s1#m?x=1", "query string"},
	        {"redis://alice:" SECRET "@127.0.0.1:6379#frag",
	         "a fragment (#...) is not supported"},
	        {"redis-cluster://alice:" SECRET "@h1#m",
	         "a fragment (#...) is not supported"},
	        {"redis-replica://alice:" SECRET "@m,r/0#x",
	         "a fragment (#...) is not supported"},
	        /* sentinel: the master's name */
	        {"redis-sentinel://alice:" SECRET "@s1,s2",
	         "missing the master's name"},
	        {"redis-sentinel://alice:" SECRET "@s1/",
	         "missing the master's name"},
	        {"redis-sentinel://alice:" SECRET "@s1//0",
	         "missing the master's name"},
	        {"rediss-sentinel://alice:" SECRET "@s1",
	         "missing the master's name"},
	        {"redis-sentinel://alice:" SECRET "@s1#",
	         "empty master name after '#'"},
	        {"redis-sentinel://alice:" SECRET "@s1/0#",
	         "empty master name after '#'"},
	        {"redis-sentinel://alice:" SECRET "@s1/m#m2",
	         "with a #master-name the path holds only the database"},
	        {"redis-sentinel://alice:" SECRET "@s1/0/1#m",
	         "with a #master-name the path holds only the database"},
	        {"redis-sentinel://alice:" SECRET "@s1/1000001#m",
	         "database must be a number"},
	        {"redis-sentinel://alice:" SECRET "@s1/m/x",
	         "database must be a number"},
	        {"redis-sentinel://alice:" SECRET "@s1/m/1/2",
	         "database must be a number"},
	        {"redis-sentinel://alice:" SECRET "@s1/m%zz",
	         "bad percent-escape in the master's name"},
	        {"redis-sentinel://alice:" SECRET "@s1#m%00",
	         "bad percent-escape in the master's name"},
	        /* unix sockets */
	        {"unix://", "unix socket path must be absolute"},
	        {"unix://alice:" SECRET "@",
	         "unix socket path must be absolute"},
	        {"unix://alice:" SECRET "@relative/redis.sock",
	         "unix socket path must be absolute"},
	        {"unix://alice:" SECRET "@/tmp/redis.sock?db=x",
	         "db must be a number"},
	        {"unix://alice:" SECRET "@/tmp/redis.sock?db=",
	         "db must be a number"},
	        {"unix://alice:" SECRET "@/tmp/redis.sock?x=1",
	         "the only query string understood is ?db=N"},
	        {"unix://alice:" SECRET "@/tmp/r%zz.sock",
	         "bad percent-escape in path"},
	};
	char url[700];
	size_t i, k;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		parse_bad(cases[i].url, cases[i].want);

	/* the message quotes the rest of the URL, the user too */
	parse_bad("redis://alice:" SECRET "@127.0.0.1:47002/abc",
	          "\"redis://alice:***@127.0.0.1:47002/abc\"");
	parse_bad("redis-sentinel://alice:" SECRET "@s1:1,s2:2",
	          "\"redis-sentinel://alice:***@s1:1,s2:2\"");
	parse_bad("redis-cluster://" SECRET "@h1,h2/1",
	          "\"redis-cluster://***@h1,h2/1\"");
	parse_bad("redis://127.0.0.1:6379/abc",
	          "\"redis://127.0.0.1:6379/abc\"");

	/* too long: a host, a socket path */
	k = (size_t)snprintf(url, sizeof url, "redis://alice:" SECRET "@");
	memset(url + k, 'h', 256);
	url[k + 256] = '\0';
	parse_bad(url, "host name too long");
	url[k + 255] = '\0';
	{
		hl_url u;
		parse_ok(&u, url);
		HT_EQ(strlen(u.hosts[0].host), 255);
		hl__url_clear(&u);
	}
	k = (size_t)snprintf(url, sizeof url,
	                     "redis-cluster://alice:" SECRET "@h1,");
	memset(url + k, 'h', 300);
	url[k + 300] = '\0';
	parse_bad(url, "host name too long (host 2 of the list)");
	k = (size_t)snprintf(url, sizeof url, "unix://alice:" SECRET "@/");
	memset(url + k, 'p', 300);
	url[k + 300] = '\0';
	parse_bad(url, "unix socket path too long");

	/* NULL */
	{
		hl_url u;
		HT_RC(hl__url_parse(&u, NULL), HL_EINVAL);
		HT_CHECK(u.hosts == NULL && u.password == NULL);
	}
}

/* ---- hl__url_safe ------------------------------------------------------- */

static void url_safe(void)
{
	static const struct {
		const char *url, *want;
	} cases[] = {
	        {"redis://alice:" SECRET "@h:1/0", "redis://alice:***@h:1/0"},
	        {"rediss://:" SECRET "@h", "rediss://:***@h"},
	        {"redis://" SECRET "@h/2", "redis://***@h/2"},
	        {"redis://alice:top@" SECRET "@h/x", "redis://alice:***@h/x"},
	        {"redis://alice:top/" SECRET "@h", "redis://alice:***@h"},
	        {"unix://alice:" SECRET "@/tmp/s?db=1",
	         "unix://alice:***@/tmp/s?db=1"},
	        {"unix://" SECRET "@/tmp/s", "unix://***@/tmp/s"},
	        {"redis-sentinel://alice:" SECRET "@s1,s2:26380/m/1",
	         "redis-sentinel://alice:***@s1,s2:26380/m/1"},
	        {"rediss-sentinel://:" SECRET "@s1#m",
	         "rediss-sentinel://:***@s1#m"},
	        {"redis-cluster://alice:" SECRET "@[::1]:7000,n2:7001",
	         "redis-cluster://alice:***@[::1]:7000,n2:7001"},
	        {"rediss-cluster://" SECRET "@n1", "rediss-cluster://***@n1"},
	        {"redis-replica://alice:top@" SECRET "@m,r",
	         "redis-replica://alice:***@m,r"},
	        {"rediss-replica://alice:top/" SECRET "@m,r/1",
	         "rediss-replica://alice:***@m,r/1"},
	        /* no password: nothing to mask */
	        {"redis://h:1/0", "redis://h:1/0"},
	        {"redis-cluster://n1,n2", "redis-cluster://n1,n2"},
	        {"redis-sentinel://s1/m", "redis-sentinel://s1/m"},
	        {"unix:///tmp/s", "unix:///tmp/s"},
	        /* not even a URL */
	        {"alice:" SECRET "@h", "alice:***@h"},
	        {"", ""},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = hl__url_safe(cases[i].url);
		HT_CHECK(s);
		HT_CHECKF(strcmp(s, cases[i].want) == 0, "%s: %s, want %s",
		          cases[i].url, s, cases[i].want);
		HT_CHECK(!strstr(s, "ecret"));
		free(s);
	}
}

/* ---- slots -------------------------------------------------------------- */

/* CLUSTER KEYSLOT of each key, from redis-server 7.0.15. */
static const struct slot_vec {
	const char *key;
	size_t len;
	unsigned slot;
} slot_vecs[] = {
        /* the CRC16/XMODEM check value: 0x31C3 = 12739 */
        {"123456789", 9, 12739},
        {"", 0, 0},
        {"a", 1, 15495},
        {"foo", 3, 12182},
        {"bar", 3, 5061},
        {"hello", 5, 866},
        {"mylock", 6, 1711},
        {"\xe9t\xe9", 3, 5690},
        /* hash tags */
        {"{user1000}.following", 20, 3443},
        {"{user1000}.followers", 20, 3443},
        {"user1000", 8, 3443},
        {"foo{}{bar}", 10, 8363},
        {"foo{{bar}}zap", 13, 4015},
        {"{bar", 4, 4015},
        {"foo{bar}{zap}", 13, 5061},
        {"bar}{zap", 8, 15978},
        {"zap", 3, 6469},
        {"}foo{bar}", 9, 5061},
        {"{a}", 3, 15495},
        {"x{t}y", 5, 15891},
        {"t", 1, 15891},
        {"a}b", 3, 7866},
        {"a{}b", 4, 13694},
        {"a{b", 3, 13340},
        {"redisson_lock__channel:{mylock}", 31, 1711},
        {"{mylock}:timeout", 16, 1711},
        /* empty tags, unclosed ones: the whole key */
        {"{}", 2, 15257},
        {"{}foo", 5, 9500},
        {"foo{}", 5, 5542},
        {"foo{", 4, 7673},
        {"foo}", 4, 15679},
        {"{{}}", 4, 4092},
        {"{{}", 3, 4092},
        /* binary keys, NUL bytes */
        {"{\x00}", 3, 0},
        {"\x00", 1, 0},
        {"a\x00"
         "b",
         3, 8383},
        {"{a\x00"
         "b}c",
         6, 8383},
        {"\x00{x}\x00", 5, 16287},
        {"k\x00{\x00}", 5, 0},
        {"\xff\xfe\x00\x01", 4, 9169},
        /* 20 random keys (Python's random.Random(20240610)) */
        {"\xbf", 1, 5684},
        {"vx-0k-llc.758lk75gfh{l4o", 24, 2320},
        {"\x0f\xee\x1c\x97\xfb\xd2Hjx\x1e\xac.u\xb6OR|\xc7\x0f\xa8\x08\x87"
         "\xf4P\xec\xdc",
         26, 7833},
        {"z1c0eoap0z45r8a95koux{}f2mez0{pvblq0ix", 38, 5579},
        {"Ce\xb7\x1e", 4, 12734},
        {"6457b:b4wb5_alq9jo18x5_", 23, 4823},
        {"\"h \xf2\\3\x1b\xf3\xfa\xd3\xc0vwf\xa2\x04\x8d]H\xf1y\x07@\xd6>"
         "\xb4"
         "5*\xe9\x1e\x9dt=\x91"
         "7\xbb\xd5",
         37, 15010},
        {"i{e{0seplsge", 12, 3706},
        {"\x81}\x94\x8e\xf6"
         "Bm\xe9\xd1;\xc3\x85\xcb\x11",
         14, 1116},
        {"rcu.mej::oloryv2p9f_b5u{38", 26, 6969},
        {"\x98\xc3N\xda\xc9\xbe\x8eQ\x80\x0c_\xd3`_\xc8y\xdb\xb3\xe3"
         "3\xc6\x81\x84\xc2\xa4\xa0y\x82\x8ch\x1f\x1f\x1b\xdc\x9b\x9c",
         36, 14010},
        {"fcs.", 4, 9430},
        {"\xad\xb0\x1a\x95\xa6\xd5G\xaeJ\x1ez\xb3Vm5\xa1"
         "8\x0e\xf4\x98w\xc3\x8b",
         23, 755},
        {"w4y2zdf}.:ou4ee_7mm.jabhm-jn6danb", 33, 12814},
        {"}\xf2\x9c\xce\x0aL\xbc\xbb\x9f\x93\x08\x15Q\xff\xe1\x08Y\xb2\xa1"
         "\xc7\xca!\xea\x04\xfa",
         25, 5610},
        {"_n0efptut", 9, 6421},
        {"ZfSX\x07\xd7\xdb\xa2t\x18P", 11, 8949},
        {"{3o0dx6a9v01oddgfcix{vxynblqqlbz0tp60bh", 39, 15056},
        {"\x87\xa5\xa4_g\xe5\xd2\xcb\xab\xd6\xf3\xce", 12, 10833},
        {":ra0v469o.5w-hx{tbz9f7h:1", 25, 6692},
};

static void slot_vectors(void)
{
	char big[301];
	size_t i;

	for (i = 0; i < sizeof slot_vecs / sizeof slot_vecs[0]; i++) {
		unsigned got = hl__slot(slot_vecs[i].key, slot_vecs[i].len);
		HT_CHECKF(got == slot_vecs[i].slot,
		          "vector %zu (%zu bytes): slot %u, want %u", i,
		          slot_vecs[i].len, got, slot_vecs[i].slot);
	}
	/* 300 'x': 11216; "{" 200 'y' "}z" and 200 'y': 7891 */
	memset(big, 'x', 300);
	HT_EQ(hl__slot(big, 300), 11216);
	big[0] = '{';
	memset(big + 1, 'y', 200);
	big[201] = '}';
	big[202] = 'z';
	HT_EQ(hl__slot(big, 203), 7891);
	HT_EQ(hl__slot(big + 1, 200), 7891);
	/* NULL with no bytes is the empty key */
	HT_EQ(hl__slot(NULL, 0), 0);
	HT_EQ(HL_SLOTS, 16384);
}

/* CRC16/XMODEM bit by bit, to check the table of slot.c. */
static unsigned crc16_bitwise(const unsigned char *p, size_t len)
{
	unsigned crc = 0;
	size_t i;
	int b;
	for (i = 0; i < len; i++) {
		crc ^= (unsigned)p[i] << 8;
		for (b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff
			                     : (crc << 1) & 0xffff;
	}
	return crc;
}

static void crc_table(void)
{
	unsigned char buf[64];
	unsigned seed = 12345;
	int b, n, i;

	/* every byte alone (the braces have no tag alone) */
	for (b = 0; b < 256; b++) {
		buf[0] = (unsigned char)b;
		HT_CHECKF(hl__slot(buf, 1) == (crc16_bitwise(buf, 1) & 16383),
		          "byte %d", b);
	}
	/* pseudo-random keys without '{' */
	for (n = 0; n < 2000; n++) {
		size_t len = (size_t)(n % 64);
		for (i = 0; i < (int)len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (unsigned char)(seed >> 16);
			if (buf[i] == '{')
				buf[i] = 'x';
		}
		HT_CHECKF(hl__slot(buf, len) ==
		                  (crc16_bitwise(buf, len) & 16383),
		          "key %d", n);
	}
}

/* ---- names whose derived keys stay in their slot ------------------------ */

/* Redisson's prefixName / suffixName (PROTOCOL 0.2), binary-safe. */
static size_t put(char *out, size_t n, const void *s, size_t len)
{
	HT_CHECK(n + len < 256);
	memcpy(out + n, s, len);
	return n + len;
}

static size_t prefix_name(char *out, const char *prefix, const char *name,
                          size_t len, const char *tail)
{
	int braces = memchr(name, '{', len) != NULL;
	size_t n = put(out, 0, prefix, strlen(prefix));
	n = put(out, n, braces ? ":" : ":{", braces ? 1 : 2);
	n = put(out, n, name, len);
	n = put(out, n, "}", braces ? 0 : 1);
	return put(out, n, tail, strlen(tail));
}

static size_t suffix_name(char *out, const char *name, size_t len,
                          const char *suffix)
{
	int braces = memchr(name, '{', len) != NULL;
	size_t n = put(out, 0, "{", braces ? 0 : 1);
	n = put(out, n, name, len);
	n = put(out, n, braces ? ":" : "}:", braces ? 1 : 2);
	return put(out, n, suffix, strlen(suffix));
}

/* 1 if every derived name of name is in its slot, by hl__slot. */
static int derived_same_slot(const char *name, size_t len)
{
	static const char *const prefixes[] = {
	        "redisson_lock__channel", "redisson_lock_queue",
	        "redisson_lock_timeout",  "redisson_lock_token",
	        "redisson_rwlock",        "redisson_sc",
	};
	static const char *const tails[] = {
	        "", ":0123abcd-0000-4000-8000-00000000beef:1",
	        ":00112233445566778899aabbccddeeff"};
	static const char *const suffixes[] = {
	        "timeout",
	        "0123abcd-0000-4000-8000-00000000beef:1:rwlock_timeout:1"};
	unsigned slot = hl__slot(name, len);
	char buf[256];
	size_t i, j, n;

	for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		for (j = 0; j < sizeof tails / sizeof tails[0]; j++) {
			n = prefix_name(buf, prefixes[i], name, len, tails[j]);
			if (hl__slot(buf, n) != slot)
				return 0;
		}
	for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		n = suffix_name(buf, name, len, suffixes[i]);
		if (hl__slot(buf, n) != slot)
			return 0;
	}
	return 1;
}

static void name_slot_safe(void)
{
	/* derived names' slots from CLUSTER KEYSLOT */
	static const struct {
		const char *key;
		unsigned slot;
	} derived[] = {
	        {"redisson_lock__channel:{mylock}:0123abcd-0000-4000-8000-"
	         "00000000beef:1",
	         1711},
	        {"redisson_unlock_latch:{mylock}:"
	         "00112233445566778899aabbccddeeff",
	         1711},
	        {"{mylock}:0123abcd-0000-4000-8000-00000000beef:1:rwlock_"
	         "timeout:1",
	         1711},
	        {"redisson_lock__channel:x{t}y", 15891},
	        {"redisson_lock_queue:x{t}y", 15891},
	        {"x{t}y:timeout", 15891},
	        {"x{t}y:0123abcd-0000-4000-8000-00000000beef:1:rwlock_timeout:"
	         "1",
	         15891},
	        /* "a}b" is 7866 */
	        {"redisson_lock__channel:{a}b}", 15495},
	        {"{a}b}:timeout", 15495},
	        {"{a}b}:0123abcd-0000-4000-8000-00000000beef:1:rwlock_timeout:"
	         "1",
	         15495},
	        /* "a{}b" is 13694 */
	        {"redisson_lock__channel:a{}b", 7717},
	        {"redisson_lock__channel:a{}b:0123abcd-0000-4000-8000-"
	         "00000000beef:1",
	         10645},
	        {"redisson_lock_timeout:a{}b", 6529},
	        {"a{}b:timeout", 7842},
	        /* "a{b" is 13340 */
	        {"redisson_lock__channel:a{b", 3200},
	        {"redisson_lock_queue:a{b", 10314},
	        {"a{b:timeout", 2696},
	        /* "}" is 12090 */
	        {"}", 12090},
	        {"redisson_lock__channel:{}}", 346},
	        {"{}}:timeout", 9629},
	};
	static const struct {
		const char *name;
		size_t len;
		int safe;
	} names[] = {
	        {"mylock", 6, 1},
	        {"orders:42", 9, 1},
	        {"a", 1, 1},
	        {"a\x00"
	         "b",
	         3, 1},
	        {"\xff\xfe", 2, 1},
	        {"x{t}y", 5, 1},
	        {"{t}", 3, 1},
	        {"{t}{u}", 6, 1},
	        {"x{t}}", 5, 1},
	        {"a}b", 3, 0},
	        {"a{}b", 4, 0},
	        {"a{b", 3, 0},
	        {"{", 1, 0},
	        {"}", 1, 0},
	        {"}x", 2, 0},
	        {"}{", 2, 0},
	        {"x{}{t}", 6, 0},
	        {"", 0, 0},
	};
	size_t i;

	for (i = 0; i < sizeof derived / sizeof derived[0]; i++)
		HT_CHECKF(hl__slot(derived[i].key, strlen(derived[i].key)) ==
		                  derived[i].slot,
		          "%s: %u, want %u", derived[i].key,
		          hl__slot(derived[i].key, strlen(derived[i].key)),
		          derived[i].slot);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		int got = hl__name_slot_safe(names[i].name, names[i].len);
		HT_CHECKF(got == names[i].safe, "name %zu \"%s\": %d, want %d",
		          i, names[i].name, got, names[i].safe);
		/* and it agrees with the derived names' slots themselves */
		HT_CHECKF(derived_same_slot(names[i].name, names[i].len) ==
		                  names[i].safe,
		          "name %zu \"%s\": derived names disagree", i,
		          names[i].name);
	}
	/* every short name over a small alphabet with braces: the rule and
	 * the derived names' slots agree */
	{
		static const char alpha[] = "ab{}:";
		char name[5];
		int len, code, total, k;
		for (len = 1; len <= 5; len++) {
			total = 1;
			for (k = 0; k < len; k++)
				total *= 5;
			for (code = 0; code < total; code++) {
				int c = code;
				for (k = 0; k < len; k++) {
					name[k] = alpha[c % 5];
					c /= 5;
				}
				HT_CHECKF(
				        hl__name_slot_safe(name, (size_t)len) ==
				                derived_same_slot(name,
				                                  (size_t)len),
				        "name \"%.*s\"", len, name);
			}
		}
	}
}

HT_MAIN(HT_CASE(single), HT_CASE(sentinel), HT_CASE(cluster), HT_CASE(replica),
        HT_CASE(host_lists), HT_CASE(errors), HT_CASE(url_safe),
        HT_CASE(slot_vectors), HT_CASE(crc_table), HT_CASE(name_slot_safe))
