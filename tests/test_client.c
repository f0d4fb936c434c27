/*
 * Client: options, URL parsing, AUTH (requirepass and ACL users), SELECT,
 * CLIENT SETNAME, unix sockets, connection failures, close.
 */
#include "harness.h"

#include <ctype.h>

/* Acquire name with a 20 s lease and release it; fails the test on error.
 * Leaves the key when keep is 1. */
static hl_lock *lock_with(hl_client *c, const char *name, int keep)
{
	hl_lock *l = ht_lock(c, name);
	int acquired = 0, released = 0;

	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 20000, NULL));
	HT_EQ(acquired, 1);
	if (!keep) {
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 1);
	}
	return l;
}

static long long exists_in_db(const ht_redis *r, int db, const char *key)
{
	redisContext *raw = ht_raw_new(r);
	redisReply *rep = ht_raw(raw, "SELECT %d", db);
	long long n;

	HT_CHECK(rep->type == REDIS_REPLY_STATUS);
	freeReplyObject(rep);
	rep = ht_raw(raw, "EXISTS %s", key);
	HT_CHECK(rep->type == REDIS_REPLY_INTEGER);
	n = rep->integer;
	freeReplyObject(rep);
	redisFree(raw);
	return n;
}

static char *client_list(const ht_redis *r)
{
	redisContext *raw = ht_raw_new(r);
	redisReply *rep = ht_raw(raw, "CLIENT LIST");
	char *s;

	HT_CHECKF(rep->type == REDIS_REPLY_STRING, "CLIENT LIST reply type %d",
	          rep->type);
	s = strdup(rep->str);
	freeReplyObject(rep);
	redisFree(raw);
	return s;
}

static int count_substr(const char *s, const char *sub)
{
	int n = 0;
	while ((s = strstr(s, sub)) != NULL) {
		n++;
		s += strlen(sub);
	}
	return n;
}

/* ---- options ------------------------------------------------------------ */
static void options_init(void)
{
	hl_client_options want = HL_CLIENT_OPTIONS_INIT, o;

	memset(&o, 0x5a, sizeof o);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	HT_EQ(o.version, HL_CLIENT_OPTIONS_VERSION);
	HT_EQ(o.watchdog_timeout_ms, 30000);
	HT_EQ(o.connect_timeout_ms, 10000);
	HT_EQ(o.command_timeout_ms, 3000);
	HT_EQ(o.retry_attempts, 4);
	HT_EQ(o.retry_delay_ms, 1000);
	HT_CHECK(o.client_name == NULL);
	HT_EQ(o.pool_size, 32);
	HT_EQ(o.subscription_timeout_ms, 7500);
	HT_EQ(o.watchdog_timeout_ms, want.watchdog_timeout_ms);
	HT_EQ(o.subscription_timeout_ms, want.subscription_timeout_ms);

	memset(&o, 0x5a, sizeof o);
	HT_RC(hl_client_options_init(&o, 0), HL_EINVAL);
	HT_RC(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION + 1),
	      HL_EINVAL);
	HT_RC(hl_client_options_init(NULL, HL_CLIENT_OPTIONS_VERSION),
	      HL_EINVAL);
}

static void bad_options(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *sentinel = (hl_client *)&o, *c;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.version = 99;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = -5;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = 0;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = -5;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = -5;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.pool_size = -3;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.retry_attempts = -3;
	HT_RC(hl_client_new(&c, r->url, &o), HL_EINVAL);
	(void)sentinel; /* *out on failure: badinput.out_untouched */

	/* NULL options: the defaults */
	c = NULL;
	HT_OK(hl_client_new(&c, r->url, NULL));
	HT_CHECK(c != NULL);
	hl_client_free(c);
}

/* ---- connect, client id ------------------------------------------------- */
static int is_uuid(const char *s)
{
	int i;

	if (!s || strlen(s) != 36)
		return 0;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!isxdigit((unsigned char)s[i]) ||
		           isupper((unsigned char)s[i])) {
			return 0;
		}
	}
	return 1;
}

static void connect_(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *a, *b, *c;
	hl_lock *l;
	char url[600], want[128];

	a = ht_client_url(r->url, NULL);
	b = ht_client(r, 0);
	HT_CHECKF(is_uuid(hl_client_id(a)), "client id \"%s\"",
	          hl_client_id(a));
	HT_CHECK(is_uuid(hl_client_id(b)));
	HT_CHECK(strcmp(hl_client_id(a), hl_client_id(b)) != 0);
	HT_CHECK(hl_client_id(a) == hl_client_id(a)); /* static */
	HT_CHECK(hl_client_id(NULL) == NULL);

	/* the owner string: <client uuid>:<thread owner id> */
	l = ht_lock(a, "client:connect");
	snprintf(want, sizeof want, "%s:%llu", hl_client_id(a),
	         (unsigned long long)hl_thread_owner_id());
	HT_STREQ(ht_owner(l), want);
	hl_lock_free(l);

	/* a host name, and an explicit db 0 */
	snprintf(url, sizeof url, "redis://localhost:%d", r->port);
	c = ht_client_url(url, NULL);
	hl_lock_free(lock_with(c, "client:localhost", 0));
	hl_client_free(c);
	snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", r->port);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:db0", 1);
	HT_EQ(exists_in_db(r, 0, "client:db0"), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);

	hl_client_free(a);
	hl_client_free(b);
}

/* ---- SELECT ------------------------------------------------------------- */
static void url_db(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c;
	hl_lock *l;
	char url[600];

	snprintf(url, sizeof url, "redis://127.0.0.1:%d/3", r->port);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:in-db3", 1);
	HT_EQ(exists_in_db(r, 3, "client:in-db3"), 1);
	HT_EQ(exists_in_db(r, 0, "client:in-db3"), 0);
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(exists_in_db(r, 3, "client:in-db3"), 0);
	hl_lock_free(l);
	hl_client_free(c);

	/* a db the server does not have: SELECT refused */
	snprintf(url, sizeof url, "redis://127.0.0.1:%d/999", r->port);
	c = NULL;
	HT_RC(hl_client_new(&c, url, NULL), HL_EREDIS);
	HT_CHECK(c == NULL);
}

/* ---- unix socket -------------------------------------------------------- */
static void unix_socket(void)
{
	ht_redis_opts ro = {.unixsocket = 1};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	char url[600], *list;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.client_name = "hltest-unix";
	snprintf(url, sizeof url, "unix://%s", r->sock);
	c = ht_client_url(url, &o);
	l = lock_with(c, "client:unix", 1);
	HT_EQ(exists_in_db(r, 0, "client:unix"), 1);
	list = client_list(r);
	/* our named connections came through the socket */
	HT_CHECKF(strstr(list, "name=hltest-unix") != NULL, "%s", list);
	HT_CHECKF(strstr(list, r->sock) != NULL, "%s", list);
	free(list);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);

	snprintf(url, sizeof url, "unix://%s?db=2", r->sock);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:unix-db2", 1);
	HT_EQ(exists_in_db(r, 2, "client:unix-db2"), 1);
	HT_EQ(exists_in_db(r, 0, "client:unix-db2"), 0);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);

	/* a socket path that does not exist */
	snprintf(url, sizeof url, "unix://%s/nope.sock", r->dir);
	c = NULL;
	HT_RC(hl_client_new(&c, url, NULL), HL_ECONNECT);
	HT_CHECK(c == NULL);
}

/* ---- URLs that must be refused before connecting ------------------------ */
static void bad_urls(void)
{
	const char *bad[] = {
	        "",
	        "redis",
	        "127.0.0.1:6379",
	        "http://127.0.0.1:6379",
	        "rediss:/127.0.0.1",
	        "redis://",
	        "redis://127.0.0.1:abc",
	        "redis://127.0.0.1:99999",
	        "redis://127.0.0.1:0",
	        "redis://127.0.0.1:-1",
	        "redis://127.0.0.1:6379/abc",
	        "redis://127.0.0.1:6379/-1",
	        "redis://127.0.0.1:6379/1x",
	        "redis://u:p%zz@127.0.0.1:6379",
	        "unix://",
	        "unix://relative/redis.sock",
	        "unix:///tmp/redis.sock?db=x",
	};
	size_t i;
	hl_client *sentinel = (hl_client *)&i, *c;
	int64_t t0;
	int rc;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c = sentinel;
		t0 = ht_now_ms();
		rc = hl_client_new(&c, bad[i], NULL);
		HT_CHECKF(rc == HL_EINVAL, "url \"%s\": %s (%s)", bad[i],
		          hl_status_name(rc), hl_error_last());
		HT_CHECKF(hl_error_last()[0] != '\0',
		          "url \"%s\": empty message", bad[i]);
		HT_CHECKF(ht_now_ms() - t0 < 2000 * ht_scale(),
		          "url \"%s\": took %lld ms", bad[i],
		          (long long)(ht_now_ms() - t0));
	}
	c = sentinel;
	HT_RC(hl_client_new(&c, NULL, NULL), HL_EINVAL);
	HT_RC(hl_client_new(NULL, "redis://127.0.0.1:6379", NULL), HL_EINVAL);
}

/* ---- AUTH --------------------------------------------------------------- */
/* The password has characters that must be percent-encoded in a URL. */
#define SPECIAL_PW     "p@ss:w/rd%x"
#define SPECIAL_PW_URL "p%40ss%3Aw%2Frd%25x"

static void password(void)
{
	ht_redis_opts ro = {.requirepass = SPECIAL_PW};
	ht_redis *r = ht_redis_start(&ro);
	hl_client *c;
	hl_lock *l;
	char url[600];

	snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", SPECIAL_PW_URL,
	         r->port);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:auth", 1);
	HT_EQ(ht_exists(r, HT_S("client:auth")), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);

	/* the default user, named */
	snprintf(url, sizeof url, "redis://default:%s@127.0.0.1:%d/1",
	         SPECIAL_PW_URL, r->port);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:auth-default", 1);
	HT_EQ(exists_in_db(r, 1, "client:auth-default"), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

static void acl_user(void)
{
	ht_redis_opts ro = {.requirepass = "adminpw",
	                    .acl_user = "alice",
	                    .acl_password = "al1ce@x"};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	char url[600], *list;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.client_name = "hltest-alice";
	snprintf(url, sizeof url, "redis://alice:al1ce%%40x@127.0.0.1:%d",
	         r->port);
	c = ht_client_url(url, &o);
	l = lock_with(c, "client:acl", 1);
	HT_EQ(ht_exists(r, HT_S("client:acl")), 1);
	list = client_list(r);
	HT_CHECKF(count_substr(list, "name=hltest-alice") >= 1, "%s", list);
	/* each of our connections is authenticated as alice */
	{
		const char *p = list;
		while ((p = strstr(p, "name=hltest-alice")) != NULL) {
			const char *eol = strchr(p, '\n');
			const char *u = strstr(p, " user=");
			HT_CHECKF(u && (!eol || u < eol) &&
			                  strncmp(u, " user=alice ", 12) == 0,
			          "%s", list);
			p += 5;
		}
	}
	free(list);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

static void wrong_password(void)
{
	ht_redis_opts ro = {.requirepass = "rightpw",
	                    .acl_user = "bob",
	                    .acl_password = "bobpw"};
	ht_redis *r = ht_redis_start(&ro);
	hl_client *sentinel = (hl_client *)&ro, *c;
	hl_lock *l;
	char url[600];
	int rc, acquired = 0;

	snprintf(url, sizeof url, "redis://:wrongpw@127.0.0.1:%d", r->port);
	c = sentinel;
	HT_RC(hl_client_new(&c, url, NULL), HL_EAUTH);
	snprintf(url, sizeof url, "redis://bob:rightpw@127.0.0.1:%d", r->port);
	HT_RC(hl_client_new(&c, url, NULL), HL_EAUTH);
	snprintf(url, sizeof url, "redis://nobody:bobpw@127.0.0.1:%d", r->port);
	HT_RC(hl_client_new(&c, url, NULL), HL_EAUTH);

	/* no password at all: refused at connect, or at the first command */
	c = NULL;
	rc = hl_client_new(&c, r->url, NULL);
	if (rc == HL_OK) {
		l = ht_lock(c, "client:noauth");
		rc = hl_lock_try_acquire(&acquired, l, 0, 1000, NULL);
		HT_CHECKF(rc != HL_OK, "acquire without AUTH succeeded");
		HT_CHECK(hl_error_last()[0] != '\0');
		hl_lock_free(l);
		hl_client_free(c);
	} else {
		HT_CHECKF(rc == HL_EAUTH || rc == HL_EREDIS, "%s: %s",
		          hl_status_name(rc), hl_error_last());
		HT_CHECK(hl_error_last()[0] != '\0');
	}
	HT_EQ(ht_exists(r, HT_S("client:noauth")), 0);
}

/* ---- connection failures ------------------------------------------------ */
static void unreachable(void)
{
	hl_client_options o;
	hl_client *sentinel = (hl_client *)&o, *c = sentinel;
	char url[600];
	int64_t t0;
	int rc;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = 1000;
	snprintf(url, sizeof url, "redis://127.0.0.1:%d", ht_free_port());
	t0 = ht_now_ms();
	HT_RC(hl_client_new(&c, url, &o), HL_ECONNECT);
	HT_CHECKF(ht_now_ms() - t0 < 10000 * ht_scale(), "took %lld ms",
	          (long long)(ht_now_ms() - t0));
	ht_note("refused: %s", hl_error_last());

	/* a black-holed server (the fault proxy forwards nothing): the
	 * handshake is bounded by command_timeout_ms */
	{
		ht_proxy *p = ht_proxy_start(ht_redis_default()->port);
		ht_proxy_cmd(p, "blackhole on");
		o.command_timeout_ms = 300;
		t0 = ht_now_ms();
		rc = hl_client_new(&c, p->url, &o);
		HT_CHECKF(rc == HL_ECONNECT, "%s: %s", hl_status_name(rc),
		          hl_error_last());
		HT_CHECK(strstr(hl_error_last(), "no answer within 300 ms"));
		ht_note("black-holed: %s", hl_error_last());
		HT_RANGE(ht_now_ms() - t0, 250, 2000 * ht_scale());
		ht_proxy_stop(p);
	}
	(void)sentinel;
}

/* ---- connect_timeout bounds the whole handshake (issue 23) ---------------
 * A server that accepts the connection and never answers (the fault
 * proxy's black hole): with connect_timeout_ms 1000 and the default
 * 3000 ms command timeout, the client is refused within about a second,
 * not after the handshake's command timeout. */
static void silent_handshake(void)
{
	hl_client_options o;
	hl_client *c = NULL;
	ht_proxy *p = ht_proxy_start(ht_redis_default()->port);
	int64_t t0, took;
	int rc;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = 1000;
	HT_EQ(o.command_timeout_ms, 3000);
	ht_proxy_cmd(p, "blackhole on");
	t0 = ht_now_ms();
	rc = hl_client_new(&c, p->url, &o);
	took = ht_now_ms() - t0;
	ht_note("silent server: %s after %lld ms", hl_error_last(),
	        (long long)took);
	HT_CHECKF(rc == HL_ECONNECT, "%s: %s", hl_status_name(rc),
	          hl_error_last());
	HT_CHECK(c == NULL);
	HT_CHECKF(strstr(hl_error_last(), "connect_timeout") != NULL, "%s",
	          hl_error_last());
	HT_CHECKF(strstr(hl_error_last(), p->url) != NULL, "%s",
	          hl_error_last());
	/* the proxy held the connection: it was the handshake that waited */
	HT_RANGE(took, 900, 1500 + 500 * (ht_scale() - 1));
	ht_proxy_stop(p);
}

/* ---- CLIENT SETNAME ----------------------------------------------------- */
static void client_name(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c, *d;
	hl_lock *l;
	char name[64], *list;
	int n;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	snprintf(name, sizeof name, "hltest-setname");
	o.client_name = name;
	c = ht_client_url(r->url, &o);
	/* the name is copied: scribbling over ours changes nothing */
	memset(name, 'X', sizeof name - 1);
	l = lock_with(c, "client:named", 1);
	list = client_list(r);
	n = count_substr(list, "name=hltest-setname ");
	HT_CHECKF(n >= 1, "%s", list);
	HT_CHECKF(strstr(list, "name=XXXX") == NULL, "%s", list);
	free(list);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);

	/* without a name: none of the new connections gets one */
	d = ht_client(r, 0);
	hl_lock_free(lock_with(d, "client:unnamed", 0));
	list = client_list(r);
	HT_EQ(count_substr(list, "name=hltest-setname "), n);
	free(list);
	hl_client_free(d);
	hl_client_free(c);
	list = client_list(r);
	HT_EQ(count_substr(list, "name=hltest-setname "), 0); /* closed */
	free(list);
}

/* ---- close -------------------------------------------------------------- */
static void close_(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "client:close"), *l2 = NULL;
	char id[64];
	int acquired = 7;
	int64_t v;

	snprintf(id, sizeof id, "%s", hl_client_id(c));
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 20000, NULL));
	HT_EQ(acquired, 1);
	hl_client_close(c);
	hl_client_close(c); /* idempotent */
	HT_STREQ(hl_client_id(c), id);
	HT_RC(hl_lock_try_acquire(&acquired, l, 0, 1000, NULL), HL_ECLOSED);
	HT_RC(hl_lock_is_locked(&acquired, l), HL_ECLOSED);
	HT_RC(hl_lock_hold_count(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_release(NULL, l), HL_ECLOSED);
	HT_RC(hl_lock_new(&l2, c, "x", 1), HL_ECLOSED);
	HT_CHECK(l2 == NULL);
	/* closing unlocks nothing */
	HT_EQ(ht_hlen(r, HT_S("client:close")), 1);
	hl_lock_free(l);
	hl_client_free(c);
	hl_client_close(NULL);
	hl_client_free(NULL);
	ht_del(r, HT_S("client:close"));
}

/* unix socket with a password, and a db. */
static void unix_auth(void)
{
	ht_redis_opts ro = {.requirepass = SPECIAL_PW, .unixsocket = 1};
	ht_redis *r = ht_redis_start(&ro);
	hl_client *c = NULL;
	hl_lock *l;
	char url[600];

	snprintf(url, sizeof url, "unix://:%s@%s?db=4", SPECIAL_PW_URL,
	         r->sock);
	c = ht_client_url(url, NULL);
	l = lock_with(c, "client:unix-auth", 1);
	HT_EQ(exists_in_db(r, 4, "client:unix-auth"), 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
	snprintf(url, sizeof url, "unix://:wrong@%s", r->sock);
	c = NULL;
	HT_RC(hl_client_new(&c, url, NULL), HL_EAUTH);
}

/* A name Redis refuses (CLIENT SETNAME forbids spaces). */
static void client_name_refused(void)
{
	ht_redis *r = ht_redis_default();
	hl_client_options o;
	hl_client *c = NULL;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.client_name = "has a space";
	/* refused by Redis, or already by the client's own check */
	HT_RC2(hl_client_new(&c, r->url, &o), HL_EREDIS, HL_EINVAL);
}

HT_MAIN(HT_CASE(options_init), HT_CASE(bad_options), {"connect", connect_},
        HT_CASE(url_db), HT_CASE(unix_socket), HT_CASE(bad_urls),
        HT_CASE(password), HT_CASE(acl_user), HT_CASE(wrong_password),
        HT_CASE(unreachable), HT_CASE(client_name), {"close", close_},
        HT_CASE(unix_auth), HT_CASE(client_name_refused),
        HT_CASE(silent_handshake))
