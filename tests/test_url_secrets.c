/* No message ever carries the password of a URL: bad URLs of every kind,
 * an unreachable server, a refused AUTH, a server that goes away under a
 * client. A query string is reported as a query string. */
#include "harness.h"

#include <stdlib.h>

#define SECRET "topsecret"

/* The detail of the last failure names no part of the password. */
static void no_secret(const char *url, int rc)
{
	const char *msg = hl_error_last();
	HT_CHECKF(msg[0] != '\0', "url \"%s\" (%s): empty message", url,
	          hl_status_name(rc));
	HT_CHECKF(!strstr(msg, SECRET) && !strstr(msg, "top%73ecret") &&
	                  !strstr(msg, "ecret"),
	          "url \"%s\" (%s): the message shows the password: %s", url,
	          hl_status_name(rc), msg);
}

static void bad_urls(void)
{
	/* Every one fails to parse, each at a different step. */
	const char *urls[] = {
	        "redis://alice:" SECRET "@127.0.0.1:47002/abc",
	        "redis://alice:" SECRET "@127.0.0.1:99999/0",
	        "redis://alice:" SECRET "@127.0.0.1:6379/0?x=1",
	        "redis://alice:" SECRET "@/0",
	        "redis://alice:" SECRET "@[::1/0",
	        "redis://:" SECRET "@127.0.0.1:abc",
	        "redis://" SECRET "@127.0.0.1:6379/x",
	        "redis://alice:top%73ecret@127.0.0.1:6379/x",
	        "redis://alice:top%zzsecret@127.0.0.1:6379",
	        "redis://alice:" SECRET "@127.0.0.1:6379#frag",
	        "redis://alice:top/" SECRET "@127.0.0.1:6379",
	        "redis://alice:top@" SECRET "@127.0.0.1:6379/x",
	        "rediss://alice:" SECRET "@127.0.0.1:6379/x",
	        "redis-sentinel://alice:" SECRET "@127.0.0.1:26379",
	        "redis-cluster://alice:" SECRET "@127.0.0.1:7000/1",
	        "http://alice:" SECRET "@127.0.0.1:6379",
	        "alice:" SECRET "@127.0.0.1:6379",
	        "unix://alice:" SECRET "@relative/redis.sock",
	        "unix://alice:" SECRET "@/tmp/redis.sock?db=x",
	        "unix://alice:" SECRET "@/tmp/redis.sock?x=1",
	};
	size_t i;
	hl_client *sentinel = (hl_client *)&i, *c;
	int rc;

	for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		c = sentinel;
		rc = hl_client_new(&c, urls[i], NULL);
		HT_CHECKF(rc == HL_EINVAL, "url \"%s\": %s (%s)", urls[i],
		          hl_status_name(rc), hl_error_last());
		HT_CHECK(c == sentinel);
		no_secret(urls[i], rc);
		ht_note("%s", hl_error_last());
	}
	/* The rest of the URL is still shown, the user too. */
	c = sentinel;
	HT_RC(hl_client_new(&c, "redis://alice:" SECRET "@127.0.0.1:47002/abc",
	                    NULL),
	      HL_EINVAL);
	HT_CHECKF(strstr(hl_error_last(),
	                 "\"redis://alice:***@127.0.0.1:47002/abc\"") != NULL,
	          "%s", hl_error_last());
	HT_RC(hl_client_new(&c, "redis://" SECRET "@127.0.0.1:6379/x", NULL),
	      HL_EINVAL);
	HT_CHECKF(strstr(hl_error_last(), "\"redis://***@127.0.0.1:6379/x\"") !=
	                  NULL,
	          "%s", hl_error_last());
	/* No password: nothing masked. */
	HT_RC(hl_client_new(&c, "redis://127.0.0.1:6379/abc", NULL), HL_EINVAL);
	HT_CHECKF(strstr(hl_error_last(), "\"redis://127.0.0.1:6379/abc\"") !=
	                  NULL,
	          "%s", hl_error_last());
}

static void query_string(void)
{
	const char *urls[] = {
	        "redis://127.0.0.1:6379/0?x=1",
	        "redis://127.0.0.1:6379?db=1",
	        "redis://h:1/0?x=1",
	};
	size_t i;
	hl_client *c = NULL;

	for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		HT_RC(hl_client_new(&c, urls[i], NULL), HL_EINVAL);
		HT_CHECKF(strstr(hl_error_last(), "query string") != NULL,
		          "url \"%s\": %s", urls[i], hl_error_last());
		HT_CHECKF(!strstr(hl_error_last(), "must be a number"),
		          "url \"%s\": %s", urls[i], hl_error_last());
	}
	HT_RC(hl_client_new(&c, "unix:///tmp/redis.sock?x=1", NULL), HL_EINVAL);
	HT_CHECKF(strstr(hl_error_last(), "query string") != NULL, "%s",
	          hl_error_last());
}

static hl_client_options quick(void)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.connect_timeout_ms = 1000;
	o.command_timeout_ms = 1000;
	o.retry_attempts = 0;
	o.retry_delay_ms = 0;
	return o;
}

static void unreachable(void)
{
	hl_client_options o = quick();
	hl_client *c = NULL;
	char url[300];
	int rc;

	snprintf(url, sizeof url, "redis://alice:" SECRET "@127.0.0.1:%d/0",
	         ht_free_port());
	rc = hl_client_new(&c, url, &o);
	HT_CHECKF(rc == HL_ECONNECT, "%s: %s", hl_status_name(rc),
	          hl_error_last());
	no_secret(url, rc);
	snprintf(url, sizeof url, "unix://:" SECRET "@/nonexistent/redis.sock");
	rc = hl_client_new(&c, url, &o);
	HT_CHECKF(rc == HL_ECONNECT, "%s: %s", hl_status_name(rc),
	          hl_error_last());
	no_secret(url, rc);
}

static void wrong_password(void)
{
	ht_redis_opts ro = {.requirepass = "rightpw",
	                    .acl_user = "alice",
	                    .acl_password = "alicepw"};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o = quick();
	hl_client *c = NULL;
	char url[300];
	int rc;

	snprintf(url, sizeof url, "redis://alice:" SECRET "@127.0.0.1:%d/0",
	         r->port);
	rc = hl_client_new(&c, url, &o);
	HT_CHECKF(rc == HL_EAUTH, "%s: %s", hl_status_name(rc),
	          hl_error_last());
	no_secret(url, rc);
	snprintf(url, sizeof url, "redis://:" SECRET "@127.0.0.1:%d/0",
	         r->port);
	rc = hl_client_new(&c, url, &o);
	HT_CHECKF(rc == HL_EAUTH, "%s: %s", hl_status_name(rc),
	          hl_error_last());
	no_secret(url, rc);
}

/* A client with a right password whose server goes away: the failures of
 * its calls name the server, never the password. */
static void server_gone(void)
{
	ht_redis_opts ro = {.requirepass = SECRET};
	ht_redis *r = ht_redis_start(&ro);
	hl_client_options o = quick();
	hl_client *c;
	hl_lock *l;
	char url[300];
	int rc, acquired = 0;

	snprintf(url, sizeof url, "redis://:" SECRET "@127.0.0.1:%d/0",
	         r->port);
	c = ht_client_url(url, &o);
	l = ht_lock(c, "url:gone");
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 5000, NULL));
	HT_CHECK(acquired);
	ht_redis_stop(r);
	rc = hl_lock_release(NULL, l);
	HT_CHECKF(rc != HL_OK, "release with the server gone succeeded");
	no_secret(url, rc);
	rc = hl_lock_try_acquire(&acquired, l, 0, 5000, NULL);
	HT_CHECKF(rc != HL_OK, "acquire with the server gone succeeded");
	no_secret(url, rc);
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(bad_urls), HT_CASE(query_string), HT_CASE(unreachable),
        HT_CASE(wrong_password), HT_CASE(server_gone))
