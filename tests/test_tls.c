/*
 * TLS (rediss://): the lock cycle over TLS, mutual TLS, the TLS options,
 * and every bad case with its status and a message that says what is
 * wrong. Certificates from the shared harness (ht_tls_make_certs). Most
 * servers listen on a TLS port next to their plain one (tls_local.h), so
 * the harness's plain side channel sees what hilock did; tls_only_server
 * uses harness_topo's TLS-only server and its side channel.
 */
#include "tls_local.h"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* hl_client_new(url, o) must fail with want and a message holding each
 * of the NULL-terminated substrings. */
#define EXPECT_FAIL(url, o, want, ...)                                         \
	expect_fail(__FILE__, __LINE__, (url), (o), (want),                    \
	            (const char *[]){__VA_ARGS__, NULL})

static void expect_fail(const char *file, int line, const char *url,
                        const hl_client_options *o, int want, const char **subs)
{
	hl_client *c = NULL;
	int rc = hl_client_new(&c, url, o);
	const char *msg = hl_error_last();
	if (rc == HL_OK) {
		hl_client_free(c);
		ht_fail(file, line, "hl_client_new(%s) succeeded; wanted %s",
		        url, hl_status_name(want));
	}
	if (rc != want)
		ht_fail(file, line, "hl_client_new(%s): %s (%s); wanted %s",
		        url, hl_status_name(rc), msg, hl_status_name(want));
	for (; *subs; subs++)
		if (!strstr(msg, *subs))
			ht_fail(file, line,
			        "hl_client_new(%s): message \"%s\" lacks "
			        "\"%s\"",
			        url, msg, *subs);
	HT_CHECK(c == NULL);
	ht_note("%s: %s: %s", url, hl_status_name(rc), msg);
}

static hl_client *tls_client(ht_redis *r, int64_t watchdog_ms)
{
	hl_client_options o;
	char url[128];
	tl_options(&o);
	if (watchdog_ms > 0)
		o.watchdog_timeout_ms = watchdog_ms;
	return ht_client_url(tl_url(r, url, sizeof url), &o);
}

static long long info_int(ht_redis *r, const char *field)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "INFO");
	const char *p;
	long long v = -1;
	HT_CHECK(rep->type == REDIS_REPLY_STRING);
	p = strstr(rep->str, field);
	if (p && p[strlen(field)] == ':')
		v = atoll(p + strlen(field) + 1);
	freeReplyObject(rep);
	HT_CHECKF(v >= 0, "INFO has no %s", field);
	return v;
}

/* ---- the lock cycle over TLS ------------------------------------------- */

static void lock_cycle(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *c = tls_client(r, 0);
	hl_lock *l = ht_lock(c, "tls:cycle");
	int64_t n = 0;
	int v = 0;

	HT_OK(hl_lock_try_acquire(&v, l, 0, -1, NULL));
	HT_EQ(v, 1);
	HT_EQ(ht_hget_int(r, HT_S("tls:cycle"), ht_owner(l)), 1);
	HT_OK(hl_lock_acquire(l, -1, NULL)); /* reentry */
	HT_OK(hl_lock_hold_count(&n, l));
	HT_EQ(n, 2);
	HT_EQ(ht_hget_int(r, HT_S("tls:cycle"), ht_owner(l)), 2);
	HT_OK(hl_lock_ttl(&n, l));
	HT_RANGE(n, 1, 30000);
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 0);
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 1);
	HT_EQ(ht_exists(r, HT_S("tls:cycle")), 0);
	HT_RC(hl_lock_release(&v, l), HL_ENOTHELD);
	/* Only TLS clients: the data went through the TLS port. */
	HT_CHECK(info_int(r, "total_connections_received") >= 1);
	hl_lock_free(l);
	hl_client_free(c);
}

struct waiter {
	hl_lock *lock;
	int rc;
	int64_t got_ms;
};

static void *wait_for_lock(void *arg)
{
	struct waiter *w = arg;
	w->rc = hl_lock_acquire(w->lock, -1, NULL);
	w->got_ms = ht_now_ms();
	return NULL;
}

static int numsub_is_one(void *arg)
{
	return ht_numsub(arg, HT_S("redisson_lock__channel:{tls:contended}")) ==
	       1;
}

/* Two clients over TLS: the waiter sleeps on the subscriber connection
 * (TLS too) and is woken by the release's publish, long before the
 * holder's 30 s lease would end. */
static void contention(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *a = tls_client(r, 0), *b = tls_client(r, 0);
	hl_lock *la = ht_lock(a, "tls:contended");
	struct waiter w = {ht_lock(b, "tls:contended"), -1, 0};
	pthread_t t;
	int64_t released;
	int v = 0;

	/* one owner for the waiter's thread and this one */
	HT_OK(hl_lock_set_owner(w.lock, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(la, -1, NULL));
	HT_OK(hl_lock_try_acquire(&v, w.lock, 0, -1, NULL));
	HT_EQ(v, 0);
	t = ht_thread_start(wait_for_lock, &w);
	HT_CHECK(ht_wait_until(numsub_is_one, r, 5000));
	ht_sleep_ms(100);
	released = ht_now_ms();
	HT_OK(hl_lock_release(&v, la));
	ht_thread_join(t, 10000);
	HT_OK(w.rc);
	HT_RANGE(w.got_ms - released, 0, 2000 * ht_scale());
	HT_OK(hl_lock_is_held(&v, w.lock));
	HT_EQ(v, 1);
	HT_OK(hl_lock_release(&v, w.lock));
	hl_lock_free(la);
	hl_lock_free(w.lock);
	hl_client_free(a);
	hl_client_free(b);
}

/* The watchdog renews over its own TLS connection past the lease. */
static void watchdog(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *c = tls_client(r, 600);
	hl_lock *l = ht_lock(c, "tls:wd");
	int64_t t0;
	int v = 0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	t0 = ht_now_ms();
	while (ht_now_ms() - t0 < 2000) {
		HT_CHECKF(ht_pttl(r, HT_S("tls:wd")) > 0,
		          "expired after %lld ms",
		          (long long)(ht_now_ms() - t0));
		ht_sleep_ms(50);
	}
	HT_OK(hl_lock_is_lost(&v, l));
	HT_EQ(v, 0);
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 1);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A hold deleted behind the owner's back is reported lost by the
 * watchdog, over TLS. */
static void lost(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *c = tls_client(r, 600);
	hl_lock *l = ht_lock(c, "tls:lost");
	int v = 0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_wait_lost(&v, l, 300, NULL));
	HT_EQ(v, 0);
	ht_del(r, HT_S("tls:lost"));
	HT_OK(hl_lock_wait_lost(&v, l, 5000 * ht_scale(), NULL));
	HT_EQ(v, 1);
	HT_RC(hl_lock_release(&v, l), HL_ELOST);
	hl_lock_free(l);
	hl_client_free(c);
}

/* An idle TLS connection stays in use: session tickets and other TLS
 * records read on the raw socket must not make it look dead. */
static void idle_reuse(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *c = tls_client(r, 0);
	hl_lock *l = ht_lock(c, "tls:idle");
	long long before;
	int v, i;

	HT_OK(hl_lock_is_locked(&v, l));
	ht_sleep_ms(200);
	before = info_int(r, "total_connections_received");
	for (i = 0; i < 20; i++) {
		HT_OK(hl_lock_try_acquire(&v, l, 0, 10000, NULL));
		HT_EQ(v, 1);
		HT_OK(hl_lock_release(&v, l));
		if (i % 5 == 0)
			ht_sleep_ms(100);
	}
	HT_EQ(info_int(r, "total_connections_received"), before);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A child freeing an inherited TLS client must not close the parent's
 * session (no close_notify with the parent's keys): the parent's
 * connection keeps working without a reconnect. */
static void fork_child_free(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client *c = tls_client(r, 0);
	hl_lock *l = ht_lock(c, "tls:fork");
	long long before;
	int v = 0, status = 0;
	pid_t pid;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	before = info_int(r, "total_connections_received");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		int rc = hl_lock_is_locked(&v, l);
		if (rc != HL_EFORKED)
			_exit(3);
		hl_lock_free(l);
		hl_client_free(c);
		_exit(0);
	}
	HT_EQ(waitpid(pid, &status, 0), pid);
	HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	          "child status 0x%x", status);
	ht_sleep_ms(100);
	HT_OK(hl_lock_is_held(&v, l));
	HT_EQ(v, 1);
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 1);
	HT_EQ(info_int(r, "total_connections_received"), before);
	hl_lock_free(l);
	hl_client_free(c);
}

/* The shared harness's TLS-only server (no plain port), requiring a
 * client certificate: the lock cycle, checked on its side channel. */
static void tls_only_server(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_tls_redis *r = ht_redis_start_tls(t, HT_CERT_GOOD, 1);
	hl_client_options o;
	redisReply *rep;
	hl_client *c;
	hl_lock *l;
	int v = 0;

	tl_options(&o);
	o.tls_cert_file = t->client_cert;
	o.tls_key_file = t->client_key;
	c = ht_client_url(r->url, &o);
	l = ht_lock(c, "tls:only");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	rep = ht_node_cmd(&r->node, "HGET %s %s", "tls:only", ht_owner(l));
	HT_CHECKF(rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "2") == 0,
	          "HGET: type %d", rep->type);
	freeReplyObject(rep);
	HT_OK(hl_lock_release(&v, l));
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 1);
	rep = ht_node_cmd(&r->node, "EXISTS %s", "tls:only");
	HT_CHECK(rep->type == REDIS_REPLY_INTEGER && rep->integer == 0);
	freeReplyObject(rep);
	hl_lock_free(l);
	hl_client_free(c);
	ht_tls_redis_destroy(r);
}

/* ---- options ------------------------------------------------------------ */

static void check_cycle(hl_client *c, const char *name)
{
	hl_lock *l = ht_lock(c, name);
	int v = 0;
	HT_OK(hl_lock_try_acquire(&v, l, 0, 5000, NULL));
	HT_EQ(v, 1);
	HT_OK(hl_lock_release(&v, l));
	HT_EQ(v, 1);
	hl_lock_free(l);
}

static void mutual_tls(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 1, NULL);
	hl_client_options o;
	char url[128];
	hl_client *c;

	tl_url(r, url, sizeof url);
	tl_options(&o);
	o.tls_cert_file = t->client_cert;
	o.tls_key_file = t->client_key;
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:mtls");
	hl_client_free(c);
}

static void ca_dir_and_names(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client_options o;
	char url[128];
	hl_client *c;

	tl_url(r, url, sizeof url);
	/* a hashed CA directory */
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.tls_ca_dir = t->ca_dir;
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:cadir");
	hl_client_free(c);
	/* the certificate's DNS name instead of the address */
	tl_options(&o);
	o.tls_server_name = "localhost";
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:sni");
	hl_client_free(c);
	/* a host name in the URL, checked as a name */
	snprintf(url, sizeof url, "rediss://localhost:%d", tl_port_of(r->port));
	tl_options(&o);
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:host");
	hl_client_free(c);
}

/* tls_verify = 0 encrypts and trusts anyone. */
static void verify_off(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_UNTRUSTED, 0, NULL);
	hl_client_options o;
	char url[128];
	hl_client *c;

	tl_url(r, url, sizeof url);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.tls_verify = 0;
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:noverify");
	hl_client_free(c);
	tl_options(&o);
	EXPECT_FAIL(url, &o, HL_ECONNECT, "certificate verify failed");
}

/* With no CA option the system's store is used (SSL_CERT_FILE names a
 * file for it). */
static void default_store(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client_options o;
	char url[128];
	hl_client *c;

	tl_url(r, url, sizeof url);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	EXPECT_FAIL(url, &o, HL_ECONNECT, "TLS handshake",
	            "certificate verify failed");
	setenv("SSL_CERT_FILE", t->ca_cert, 1);
	c = ht_client_url(url, &o);
	check_cycle(c, "tls:store");
	hl_client_free(c);
	unsetenv("SSL_CERT_FILE");
}

/* ---- bad cases ------------------------------------------------------------
 */

static void plain_client_tls_port(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	char url[128];
	int64_t t0;
	snprintf(url, sizeof url, "redis://127.0.0.1:%d", tl_port_of(r->port));
	t0 = ht_now_ms();
	EXPECT_FAIL(url, NULL, HL_ECONNECT, url, "handshake",
	            "(is the server expecting TLS? use rediss://)");
	HT_RANGE(ht_now_ms() - t0, 0, 2000 * ht_scale()); /* no timeout */
}

static void tls_client_plain_port(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client_options o;
	char url[128];
	int64_t t0;
	snprintf(url, sizeof url, "rediss://127.0.0.1:%d", r->port);
	tl_options(&o);
	t0 = ht_now_ms();
	EXPECT_FAIL(url, &o, HL_ECONNECT, url, "TLS handshake",
	            "not a TLS server");
	HT_RANGE(ht_now_ms() - t0, 0, 2000 * ht_scale());
}

static void wrong_ca(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *good = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	ht_redis *untrusted = tl_redis_start(HT_CERT_UNTRUSTED, 0, NULL);
	hl_client_options o;
	char url[128];
	hl_client *c = NULL;
	const char *msg;
	int rc;

	/* the server's chain ends at a CA we were not told to trust */
	tl_options(&o);
	o.tls_ca_file = t->other_ca_cert;
	tl_url(good, url, sizeof url);
	rc = hl_client_new(&c, url, &o);
	msg = hl_error_last();
	HT_EQ(rc, HL_ECONNECT);
	HT_CHECKF(strstr(msg, "certificate verify failed: unable to get local "
	                      "issuer certificate") ||
	                  strstr(msg, "certificate verify failed: self-signed "
	                              "certificate in certificate chain"),
	          "%s", msg);
	HT_CHECKF(strstr(msg, "not signed by a CA of tls_ca_file"), "%s", msg);
	ht_note("%s", msg);
	/* a server certificate from another CA */
	tl_url(untrusted, url, sizeof url);
	tl_options(&o);
	EXPECT_FAIL(url, &o, HL_ECONNECT,
	            "certificate verify failed: unable to get local issuer "
	            "certificate");
}

static void expired(void)
{
	ht_redis *r = tl_redis_start(HT_CERT_EXPIRED, 0, NULL);
	hl_client_options o;
	char url[128];
	tl_url(r, url, sizeof url);
	tl_options(&o);
	EXPECT_FAIL(url, &o, HL_ECONNECT,
	            "certificate verify failed: certificate has expired");
}

static void name_mismatch(void)
{
	ht_redis *wrong = tl_redis_start(HT_CERT_WRONG_NAME, 0, NULL);
	ht_redis *good = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client_options o;
	char url[128];

	/* an address is checked as an address */
	tl_url(wrong, url, sizeof url);
	tl_options(&o);
	EXPECT_FAIL(url, &o, HL_ECONNECT,
	            "certificate verify failed: IP address mismatch",
	            "\"127.0.0.1\"");
	/* a name as a name */
	snprintf(url, sizeof url, "rediss://localhost:%d",
	         tl_port_of(wrong->port));
	EXPECT_FAIL(url, &o, HL_ECONNECT,
	            "certificate verify failed: hostname mismatch",
	            "\"localhost\"");
	/* tls_server_name is the name checked */
	tl_url(good, url, sizeof url);
	o.tls_server_name = "other.example";
	EXPECT_FAIL(url, &o, HL_ECONNECT, "hostname mismatch",
	            "\"other.example\"", "tls_server_name");
	/* and with it the wrong-name certificate passes */
	{
		hl_client *c;
		tl_url(wrong, url, sizeof url);
		c = ht_client_url(url, &o);
		check_cycle(c, "tls:other-name");
		hl_client_free(c);
	}
}

static void bad_files(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 0, NULL);
	hl_client_options o;
	char url[128], missing[HT_PATH_MAX + 16];

	tl_url(r, url, sizeof url);
	snprintf(missing, sizeof missing, "%s/missing.pem", t->dir);
	tl_options(&o);
	o.tls_ca_file = missing;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_ca_file", missing,
	            "No such file or directory");
	tl_options(&o);
	o.tls_ca_dir = missing;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_ca_dir", missing);
	tl_options(&o);
	o.tls_ca_file = t->dir; /* a directory */
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_ca_file", "is a directory");
	tl_options(&o);
	o.tls_ca_file = t->client_key; /* no certificate in it */
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_ca_file", t->client_key);
	tl_options(&o);
	o.tls_cert_file = missing;
	o.tls_key_file = t->client_key;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_cert_file", missing);
	tl_options(&o);
	o.tls_cert_file = t->client_cert;
	o.tls_key_file = missing;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_key_file", missing);
	tl_options(&o);
	o.tls_cert_file = t->client_cert;
	o.tls_key_file = t->server_key[HT_CERT_GOOD]; /* another key */
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_key_file", "does not match");
	tl_options(&o);
	o.tls_cert_file = t->client_cert;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_cert_file", "tls_key_file");
	tl_options(&o);
	o.tls_key_file = t->client_key;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_key_file", "tls_cert_file");
	tl_options(&o);
	o.tls_cert_file = t->ca_dir; /* a directory */
	o.tls_key_file = t->client_key;
	EXPECT_FAIL(url, &o, HL_EINVAL, "tls_cert_file", "is a directory");
	if (geteuid() != 0) { /* root reads anything */
		char unreadable[HT_PATH_MAX + 16], cmd[1100];
		snprintf(unreadable, sizeof unreadable, "%s/unreadable.pem",
		         t->dir);
		snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 000 '%s'",
		         t->ca_cert, unreadable, unreadable);
		HT_EQ(system(cmd), 0);
		tl_options(&o);
		o.tls_ca_file = unreadable;
		EXPECT_FAIL(url, &o, HL_EINVAL, "tls_ca_file", unreadable,
		            "Permission denied");
	}
}

static void client_cert_required(void)
{
	const ht_tls_certs *t = tl_certs_get();
	ht_redis *r = tl_redis_start(HT_CERT_GOOD, 1, NULL);
	hl_client_options o;
	char url[128];

	tl_url(r, url, sizeof url);
	tl_options(&o);
	EXPECT_FAIL(url, &o, HL_ECONNECT, "certificate required",
	            "the server requires a client certificate: set "
	            "tls_cert_file and tls_key_file");
	/* a certificate from a CA the server does not trust */
	o.tls_cert_file = t->other_client_cert;
	o.tls_key_file = t->other_client_key;
	EXPECT_FAIL(url, &o, HL_ECONNECT, "unknown ca",
	            "the server refused the client certificate");
}

/* A TCP listener that never speaks TLS: the handshake ends at the connect
 * timeout (the kernel accepts the connection; nobody answers). */
static void handshake_timeout(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	hl_client_options o;
	char url[128];
	int64_t t0, took;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	HT_CHECK(fd >= 0);
	HT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	HT_EQ(listen(fd, 8), 0);
	HT_EQ(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	snprintf(url, sizeof url, "rediss://127.0.0.1:%d", ntohs(a.sin_port));
	tl_options(&o);
	o.connect_timeout_ms = 400;
	t0 = ht_now_ms();
	EXPECT_FAIL(url, &o, HL_ECONNECT, "TLS handshake",
	            "no answer within 400 ms");
	took = ht_now_ms() - t0;
	HT_RANGE(took, 350, 2000 * ht_scale());
	close(fd);
}

HT_MAIN(HT_CASE(lock_cycle), HT_CASE(contention), HT_CASE(watchdog),
        HT_CASE(lost), HT_CASE(idle_reuse), HT_CASE(fork_child_free),
        HT_CASE(tls_only_server), HT_CASE(mutual_tls),
        HT_CASE(ca_dir_and_names), HT_CASE(verify_off), HT_CASE(default_store),
        HT_CASE(plain_client_tls_port), HT_CASE(tls_client_plain_port),
        HT_CASE(wrong_ca), HT_CASE(expired), HT_CASE(name_mismatch),
        HT_CASE(bad_files), HT_CASE(client_cert_required),
        HT_CASE(handshake_timeout))
