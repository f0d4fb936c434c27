/*
 * Bad input: NULL handles and out parameters, empty / binary / huge names,
 * out-of-range times, release by a non-owner, handles outliving their
 * client, calls on a closed client, unreachable server, wrong password.
 * Every error must come with a non-empty hl_error_last().
 */
#include "harness.h"

#include <stdlib.h>

#define NAME "badinput:lock"

static void null_args(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *x = NULL;
	hl_client *cx = NULL;
	char buf[256];
	size_t n = 0, len;
	int v = 7;
	int64_t i64 = 7;

	HT_RC(hl_client_options_init(NULL, HL_CLIENT_OPTIONS_VERSION),
	      HL_EINVAL);
	HT_RC(hl_client_new(NULL, r->url, NULL), HL_EINVAL);
	HT_RC(hl_client_new(&cx, NULL, NULL), HL_EINVAL);
	HT_CHECK(cx == NULL);
	HT_RC(hl_client_interrupt(NULL), HL_EINVAL);
	HT_RC(hl_cancel_new(NULL), HL_EINVAL);
	HT_CHECK(hl_client_id(NULL) == NULL);

	HT_RC(hl_lock_new(NULL, c, "a", 1), HL_EINVAL);
	HT_RC(hl_lock_new(&x, NULL, "a", 1), HL_EINVAL);
	HT_RC(hl_lock_new(&x, c, NULL, 1), HL_EINVAL);
	HT_RC(hl_lock_new(&x, c, NULL, 0), HL_EINVAL);
	HT_CHECK(x == NULL);
	HT_RC(hl_lock_set_owner(NULL, 5), HL_EINVAL);

	HT_RC(hl_lock_owner(&n, NULL, buf, sizeof buf), HL_EINVAL);
	HT_OK(hl_lock_owner(NULL, l, buf, sizeof buf));
	len = strlen(buf);
	HT_CHECK(len > 37);
	n = 0;
	HT_RC(hl_lock_owner(&n, l, NULL, 0), HL_EINVAL);
	HT_EQ(n, len);
	n = 0;
	memset(buf, 'Z', sizeof buf);
	HT_RC(hl_lock_owner(&n, l, buf, len), HL_EINVAL); /* no room for NUL */
	HT_EQ(n, len);
	HT_OK(hl_lock_owner(&n, l, buf, len + 1));
	HT_EQ(n, len);
	HT_EQ(strlen(buf), len);

	HT_RC(hl_lock_try_acquire(NULL, l, 0, -1, NULL), HL_EINVAL);
	HT_RC(hl_lock_try_acquire(&v, NULL, 0, -1, NULL), HL_EINVAL);
	HT_RC(hl_lock_acquire(NULL, -1, NULL), HL_EINVAL);
	HT_RC(hl_lock_release(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_release(NULL, NULL), HL_EINVAL);
	HT_RC(hl_lock_force_unlock(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_force_unlock(NULL, NULL), HL_EINVAL);
	HT_RC(hl_lock_is_locked(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_is_locked(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_is_held(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_is_held(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_hold_count(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_hold_count(&i64, NULL), HL_EINVAL);
	HT_RC(hl_lock_ttl(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_ttl(&i64, NULL), HL_EINVAL);
	HT_RC(hl_lock_is_lost(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_is_lost(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_wait_lost(NULL, l, 0, NULL), HL_EINVAL);
	HT_RC(hl_lock_wait_lost(&v, NULL, 0, NULL), HL_EINVAL);
	HT_RC(hl_lock_lost_fd(NULL, l), HL_EINVAL);
	HT_RC(hl_lock_lost_fd(&v, NULL), HL_EINVAL);
	HT_RC(hl_lock_abandon(NULL), HL_EINVAL);
	(void)v;
	(void)i64;

	/* NULL is ignored */
	hl_lock_free(NULL);
	hl_client_close(NULL);
	hl_client_free(NULL);
	hl_cancel_trigger(NULL);
	hl_cancel_reset(NULL);
	hl_cancel_free(NULL);

	/* none of the above took the lock */
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

static void names(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *x = NULL, *big, *bin, *a, *bin2;
	char *name = malloc(65537);
	unsigned char all[256];
	int acquired = 0, locked = 7, i;

	HT_CHECK(name != NULL);
	HT_RC(hl_lock_new(&x, c, "", 0), HL_EINVAL);
	HT_RC(hl_lock_new(&x, c, "abc", 0), HL_EINVAL);
	memset(name, 'n', 65537);
	HT_RC(hl_lock_new(&x, c, name, 65537), HL_EINVAL);
	HT_CHECK(x == NULL);

	/* the longest name */
	HT_OK(hl_lock_new(&big, c, name, 65536));
	HT_OK(hl_lock_acquire(big, 5000, NULL));
	HT_EQ(ht_hget_int(r, name, 65536, ht_owner(big)), 1);
	HT_EQ(ht_exists(r, name, 65535), 0);
	HT_OK(hl_lock_release(NULL, big));
	HT_EQ(ht_exists(r, name, 65536), 0);
	hl_lock_free(big);

	/* a NUL inside: "a\0b" is not "a" */
	HT_OK(hl_lock_new(&bin, c, "a\0b", 3));
	HT_OK(hl_lock_new(&a, c2, "a", 1));
	HT_OK(hl_lock_new(&bin2, c2, "a\0c", 3));
	HT_OK(hl_lock_acquire(bin, 5000, NULL));
	HT_EQ(ht_hget_int(r, "a\0b", 3, ht_owner(bin)), 1);
	HT_EQ(ht_exists(r, "a", 1), 0);
	HT_OK(hl_lock_is_locked(&locked, a));
	HT_EQ(locked, 0);
	HT_OK(hl_lock_try_acquire(&acquired, a, 0, 5000, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_try_acquire(&acquired, bin2, 0, 5000, NULL));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, "a", 1, ht_owner(a)), 1);
	HT_EQ(ht_hget_int(r, "a\0b", 3, ht_owner(bin)), 1);
	HT_OK(hl_lock_release(NULL, a));
	HT_EQ(ht_exists(r, "a\0b", 3), 1);
	HT_OK(hl_lock_release(NULL, bin));
	HT_EQ(ht_exists(r, "a\0b", 3), 0);
	HT_OK(hl_lock_release(NULL, bin2));
	hl_lock_free(bin);
	hl_lock_free(bin2);
	hl_lock_free(a);

	/* every byte value */
	for (i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	HT_OK(hl_lock_new(&x, c, all, sizeof all));
	HT_OK(hl_lock_acquire(x, 5000, NULL));
	HT_EQ(ht_hget_int(r, all, sizeof all, ht_owner(x)), 1);
	HT_OK(hl_lock_release(NULL, x));
	HT_EQ(ht_exists(r, all, sizeof all), 0);
	hl_lock_free(x);

	free(name);
	hl_client_free(c);
	hl_client_free(c2);
}

struct huge_wait {
	hl_lock *l;
	int rc, acquired;
};

static void *huge_wait_thread(void *arg)
{
	struct huge_wait *h = arg;
	h->acquired = 7;
	h->rc = hl_lock_try_acquire(&h->acquired, h->l, INT64_MAX, 5000, NULL);
	return NULL;
}

static void times(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *other = ht_lock(c2, NAME);
	const int64_t max_lease = (int64_t)1 << 40;
	int64_t bad_waits[] = {-2, -1000, INT64_MIN};
	int64_t bad_leases[] = {0,        -2, -1000, INT64_MIN, max_lease + 1,
	                        INT64_MAX};
	struct huge_wait h;
	pthread_t t;
	size_t i;
	int acquired = 7, lost = 7;

	for (i = 0; i < sizeof bad_waits / sizeof bad_waits[0]; i++) {
		HT_RC(hl_lock_try_acquire(&acquired, l, bad_waits[i], -1, NULL),
		      HL_EINVAL);
		HT_RC(hl_lock_wait_lost(&lost, l, bad_waits[i], NULL),
		      HL_EINVAL);
	}
	for (i = 0; i < sizeof bad_leases / sizeof bad_leases[0]; i++) {
		HT_RC(hl_lock_try_acquire(&acquired, l, 0, bad_leases[i], NULL),
		      HL_EINVAL);
		HT_RC(hl_lock_acquire(l, bad_leases[i], NULL), HL_EINVAL);
	}
	HT_CHECK(acquired != 1);
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);

	/* the documented extremes */
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, max_lease, NULL));
	HT_EQ(acquired, 1);
	HT_RANGE(ht_pttl(r, HT_S(NAME)), max_lease - 60000, max_lease);
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 1, NULL));
	HT_EQ(acquired, 1);
	ht_sleep_ms(50);
	HT_EQ(ht_exists(r, HT_S(NAME)), 0);

	/* a huge wait is "forever" (or refused), never an overflow that
	 * gives up at once */
	HT_OK(hl_lock_acquire(other, 300, NULL));
	memset(&h, 0, sizeof h);
	h.l = l;
	t = ht_thread_start(huge_wait_thread, &h);
	ht_thread_join(t, 10000);
	if (h.rc == HL_OK) {
		HT_CHECKF(h.acquired == 1,
		          "wait INT64_MAX gave up while the lock was held "
		          "for 300 ms");
		HT_OK(hl_lock_release(NULL, l));
	} else {
		HT_EQ(h.rc, HL_EINVAL);
	}
	lost = 7;
	i = (size_t)hl_lock_wait_lost(&lost, l, INT64_MAX, NULL);
	HT_CHECK((int)i == HL_OK || (int)i == HL_EINVAL);
	hl_lock_free(l);
	hl_lock_free(other);
	hl_client_free(c);
	hl_client_free(c2);
}

static void non_owner(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *other = ht_lock(c2, NAME);
	hl_lock *wrong_name = ht_lock(c, "badinput:other");
	int released = 7;

	HT_OK(hl_lock_acquire(l, 10000, NULL));
	HT_RC(hl_lock_release(&released, other), HL_ENOTHELD);
	HT_RC(hl_lock_release(&released, wrong_name), HL_ENOTHELD);
	HT_EQ(released, 7);
	HT_EQ(ht_hget_int(r, HT_S(NAME), ht_owner(l)), 1);
	HT_RANGE(ht_pttl(r, HT_S(NAME)), 5000, 10000);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	hl_lock_free(l);
	hl_lock_free(other);
	hl_lock_free(wrong_name);
	hl_client_free(c);
	hl_client_free(c2);
}

/* Every call on a handle whose client is closed returns HL_ECLOSED. */
static void all_closed(hl_lock *l)
{
	int v = 7, rc;
	int64_t n = 7;

	HT_RC(hl_lock_try_acquire(&v, l, 0, -1, NULL), HL_ECLOSED);
	HT_RC(hl_lock_try_acquire(&v, l, 1000, 5000, NULL), HL_ECLOSED);
	HT_RC(hl_lock_acquire(l, -1, NULL), HL_ECLOSED);
	HT_RC(hl_lock_release(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_force_unlock(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_is_locked(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_is_held(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_hold_count(&n, l), HL_ECLOSED);
	HT_RC(hl_lock_ttl(&n, l), HL_ECLOSED);
	HT_RC(hl_lock_is_lost(&v, l), HL_ECLOSED);
	HT_RC(hl_lock_wait_lost(&v, l, 100, NULL), HL_ECLOSED);
	rc = hl_lock_lost_fd(&v, l);
	HT_CHECKF(rc == HL_ECLOSED || rc == HL_ENOTHELD, "lost_fd: %s",
	          hl_status_name(rc));
	HT_CHECK(hl_error_last()[0] != '\0');
	rc = hl_lock_abandon(l);
	HT_CHECKF(rc == HL_OK || rc == HL_ECLOSED, "abandon: %s",
	          hl_status_name(rc));
}

static void client_free_first(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *idle = ht_lock(c, "badinput:idle");
	char owner[128];

	HT_OK(hl_lock_acquire(l, 20000, NULL));
	snprintf(owner, sizeof owner, "%s", ht_owner(l));
	hl_client_free(c); /* before its handles */
	all_closed(l);
	all_closed(idle);
	HT_STREQ(ht_owner(l), owner); /* the client id lives on */
	/* not unlocked */
	HT_EQ(ht_hget_int(r, HT_S(NAME), owner), 1);
	hl_lock_free(l);
	hl_lock_free(idle);
	ht_del(r, HT_S(NAME));
}

static void closed(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *x = NULL;
	int rc;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	hl_client_close(c);
	all_closed(l);
	HT_RC(hl_lock_new(&x, c, "y", 1), HL_ECLOSED);
	HT_CHECK(x == NULL);
	rc = hl_client_interrupt(c);
	HT_CHECKF(rc == HL_OK || rc == HL_ECLOSED, "interrupt: %s",
	          hl_status_name(rc));
	hl_client_close(c);
	HT_EQ(ht_hlen(r, HT_S(NAME)), 1);
	hl_lock_free(l);
	hl_client_free(c);
	ht_del(r, HT_S(NAME));
}

static void unreachable(void)
{
	hl_client *c = NULL;
	char url[64];

	snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", ht_free_port());
	HT_RC(hl_client_new(&c, url, NULL), HL_ECONNECT);
	HT_CHECK(c == NULL);
	snprintf(url, sizeof url, "unix:///nonexistent/hilock/redis.sock");
	HT_RC(hl_client_new(&c, url, NULL), HL_ECONNECT);
	HT_CHECK(c == NULL);
}

static void wrong_password(void)
{
	ht_redis_opts ro = {.requirepass = "sekrit"};
	ht_redis *r = ht_redis_start(&ro);
	hl_client *c = NULL;
	char url[128];

	snprintf(url, sizeof url, "redis://:nope@127.0.0.1:%d", r->port);
	HT_RC(hl_client_new(&c, url, NULL), HL_EAUTH);
	HT_CHECK(c == NULL);
	snprintf(url, sizeof url, "redis://:sekrit@127.0.0.1:%d", r->port);
	c = ht_client_url(url, NULL);
	hl_client_free(c);
}

/* "Output parameters ... are written only on HL_OK" (hilock.h). Collects
 * every violation, then fails once with the list. */
static void out_untouched(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *closed_c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, NAME), *cl = ht_lock(closed_c, NAME);
	hl_client *sentinel = (hl_client *)&c, *cx;
	hl_lock *lsentinel = (hl_lock *)&l, *lx;
	char url[64], bad[2048] = "";
	int v, rc;
	int64_t n;

#define UNTOUCHED(call, var, init, want)                                       \
	do {                                                                   \
		var = init;                                                    \
		rc = (call);                                                   \
		HT_CHECKF(rc == (want), "%s: %s", #call, hl_status_name(rc));  \
		if (var != init)                                               \
			snprintf(bad + strlen(bad), sizeof bad - strlen(bad),  \
			         "\n  %s (%s) wrote its out parameter", #call, \
			         hl_status_name(rc));                          \
	} while (0)

	hl_client_close(closed_c);
	snprintf(url, sizeof url, "redis://127.0.0.1:%d", ht_free_port());
	UNTOUCHED(hl_client_new(&cx, "", NULL), cx, sentinel, HL_EINVAL);
	UNTOUCHED(hl_client_new(&cx, url, NULL), cx, sentinel, HL_ECONNECT);
	UNTOUCHED(hl_lock_new(&lx, c, "", 0), lx, lsentinel, HL_EINVAL);
	UNTOUCHED(hl_lock_new(&lx, closed_c, "x", 1), lx, lsentinel,
	          HL_ECLOSED);
	UNTOUCHED(hl_lock_try_acquire(&v, l, -2, -1, NULL), v, 7, HL_EINVAL);
	UNTOUCHED(hl_lock_try_acquire(&v, cl, 0, -1, NULL), v, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_release(&v, l), v, 7, HL_ENOTHELD);
	UNTOUCHED(hl_lock_force_unlock(&v, cl), v, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_is_locked(&v, cl), v, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_is_held(&v, cl), v, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_hold_count(&n, cl), n, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_ttl(&n, cl), n, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_is_lost(&v, cl), v, 7, HL_ECLOSED);
	UNTOUCHED(hl_lock_wait_lost(&v, l, -2, NULL), v, 7, HL_EINVAL);
	UNTOUCHED(hl_lock_lost_fd(&v, l), v, 7, HL_ENOTHELD);
#undef UNTOUCHED
	HT_CHECKF(bad[0] == '\0', "out parameters written on failure:%s", bad);
	hl_lock_free(l);
	hl_lock_free(cl);
	hl_client_free(c);
	hl_client_free(closed_c);
}

HT_MAIN(HT_CASE(null_args), HT_CASE(names), HT_CASE(times), HT_CASE(non_owner),
        HT_CASE(client_free_first), HT_CASE(closed), HT_CASE(unreachable),
        HT_CASE(wrong_password), HT_CASE(out_untouched))
