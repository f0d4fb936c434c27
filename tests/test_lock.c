/*
 * Reentrant lock: acquire/release, hold counts, queries, force unlock,
 * ownership (threads, explicit owners, handles), wire format, leases.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static void expect_state(hl_lock *l, int locked, int held, int64_t count)
{
	int v = -7;
	int64_t n = -7;

	HT_OK(hl_lock_is_locked(&v, l));
	HT_EQ(v, locked);
	v = -7;
	HT_OK(hl_lock_is_held(&v, l));
	HT_EQ(v, held);
	HT_OK(hl_lock_hold_count(&n, l));
	HT_EQ(n, count);
}

/* ---- basics ------------------------------------------------------------- */
static void basics(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:basics");
	int v = 7, released = 7, acquired = 7;
	int64_t ttl = 7;

	expect_state(l, 0, 0, 0);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_EQ(ttl, -2);
	HT_OK(hl_lock_is_lost(&v, l));
	HT_EQ(v, 0);

	/* no lease: the watchdog timeout (30 s default) */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	expect_state(l, 1, 1, 1);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_RANGE(ttl, 20000, 30000);
	HT_RANGE(ht_pttl(r, HT_S("lock:basics")), 20000, 30000);
	HT_EQ(ht_hlen(r, HT_S("lock:basics")), 1);
	HT_EQ(ht_hget_int(r, HT_S("lock:basics"), ht_owner(l)), 1);
	HT_OK(hl_lock_is_lost(&v, l));
	HT_EQ(v, 0);

	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:basics")), 0);
	expect_state(l, 0, 0, 0);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_EQ(ttl, -2);

	/* one attempt, fixed lease */
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 5000, NULL));
	HT_EQ(acquired, 1);
	HT_RANGE(ht_pttl(r, HT_S("lock:basics")), 3000, 5000);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_RANGE(ttl, 3000, 5000);
	HT_OK(hl_lock_release(NULL, l)); /* out_released may be NULL */
	HT_EQ(ht_exists(r, HT_S("lock:basics")), 0);

	/* releasing a free lock */
	released = 7;
	HT_RC(hl_lock_release(&released, l), HL_ENOTHELD);
	HT_EQ(released, 7);

	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- reentry ------------------------------------------------------------ */
static void reentry(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:reentry");
	const char *owner;
	int released = 7, acquired = 0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 1);
	owner = ht_owner(l);
	expect_state(l, 1, 1, 3);
	HT_EQ(ht_hget_int(r, HT_S("lock:reentry"), owner), 3);
	HT_EQ(ht_hlen(r, HT_S("lock:reentry")), 1);

	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	expect_state(l, 1, 1, 2);
	HT_EQ(ht_hget_int(r, HT_S("lock:reentry"), owner), 2);
	HT_RANGE(ht_pttl(r, HT_S("lock:reentry")), 20000, 30000);

	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	expect_state(l, 1, 1, 1);
	HT_EQ(ht_hget_int(r, HT_S("lock:reentry"), owner), 1);

	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	expect_state(l, 0, 0, 0);
	HT_EQ(ht_exists(r, HT_S("lock:reentry")), 0);
	HT_RC(hl_lock_release(&released, l), HL_ENOTHELD);

	/* re-entry resets the lease to the one given */
	HT_OK(hl_lock_acquire(l, 2000, NULL));
	HT_RANGE(ht_pttl(r, HT_S("lock:reentry")), 1000, 2000);
	HT_OK(hl_lock_acquire(l, 8000, NULL));
	HT_RANGE(ht_pttl(r, HT_S("lock:reentry")), 6000, 8000);
	HT_EQ(ht_hget_int(r, HT_S("lock:reentry"), ht_owner(l)), 2);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);

	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- another thread is another owner ------------------------------------ */
struct other {
	hl_lock *l;
	int acquired, held, locked, rc;
	int64_t count, ttl;
	char owner[128];
	int release_rc, released;
};

static void *other_try(void *arg)
{
	struct other *o = arg;

	o->acquired = 7;
	o->rc = hl_lock_try_acquire(&o->acquired, o->l, 0, 5000, NULL);
	hl_lock_is_held(&o->held, o->l);
	hl_lock_is_locked(&o->locked, o->l);
	hl_lock_hold_count(&o->count, o->l);
	hl_lock_ttl(&o->ttl, o->l);
	snprintf(o->owner, sizeof o->owner, "%s", ht_owner(o->l));
	if (o->acquired == 1)
		o->release_rc = hl_lock_release(&o->released, o->l);
	return NULL;
}

static void other_thread(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:threads");
	struct other o;
	pthread_t t;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	memset(&o, 0, sizeof o);
	o.l = l; /* the same handle, shared by two threads */
	t = ht_thread_start(other_try, &o);
	ht_thread_join(t, 10000);
	HT_OK(o.rc);
	HT_EQ(o.acquired, 0);
	HT_EQ(o.held, 0);
	HT_EQ(o.locked, 1);
	HT_EQ(o.count, 0);
	HT_RANGE(o.ttl, 1, 30000);
	HT_CHECK(strcmp(o.owner, ht_owner(l)) != 0);
	HT_EQ(ht_hget_int(r, HT_S("lock:threads"), o.owner), -1);
	expect_state(l, 1, 1, 1);

	HT_OK(hl_lock_release(NULL, l));
	memset(&o, 0, sizeof o);
	o.l = l;
	t = ht_thread_start(other_try, &o);
	ht_thread_join(t, 10000);
	HT_OK(o.rc);
	HT_EQ(o.acquired, 1);
	HT_EQ(o.held, 1);
	HT_EQ(o.count, 1);
	HT_OK(o.release_rc);
	HT_EQ(o.released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:threads")), 0);

	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- a non-owner cannot release ----------------------------------------- */
static void *other_release(void *arg)
{
	struct other *o = arg;

	o->released = 7;
	o->release_rc = hl_lock_release(&o->released, o->l);
	o->held = hl_error_last()[0] != '\0';
	return NULL;
}

static void non_owner_release(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:nonowner");
	hl_lock *l2 = ht_lock(c2, "lock:nonowner");
	struct other o;
	pthread_t t;
	long long pttl;

	HT_OK(hl_lock_acquire(l, 20000, NULL));
	HT_OK(hl_lock_acquire(l, 20000, NULL));
	memset(&o, 0, sizeof o);
	o.l = l;
	t = ht_thread_start(other_release, &o);
	ht_thread_join(t, 10000);
	HT_EQ(o.release_rc, HL_ENOTHELD);
	HT_EQ(o.released, 7);
	HT_CHECKF(o.held, "ENOTHELD without a message");

	/* another client: same thread number, another uuid */
	HT_RC(hl_lock_release(NULL, l2), HL_ENOTHELD);

	/* untouched */
	HT_EQ(ht_hlen(r, HT_S("lock:nonowner")), 1);
	HT_EQ(ht_hget_int(r, HT_S("lock:nonowner"), ht_owner(l)), 2);
	pttl = ht_pttl(r, HT_S("lock:nonowner"));
	HT_RANGE(pttl, 10000, 20000);
	expect_state(l, 1, 1, 2);
	expect_state(l2, 1, 0, 0);

	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("lock:nonowner")), 0);
	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
}

/* ---- force unlock ------------------------------------------------------- */
static void force_unlock(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:force");
	hl_lock *l2 = ht_lock(c2, "lock:force");
	int existed = 7, rc;
	int64_t n = 7;

	HT_OK(hl_lock_acquire(l, 20000, NULL));
	HT_OK(hl_lock_acquire(l, 20000, NULL));
	HT_OK(hl_lock_force_unlock(&existed, l2)); /* anyone may */
	HT_EQ(existed, 1);
	HT_EQ(ht_exists(r, HT_S("lock:force")), 0);
	expect_state(l2, 0, 0, 0);
	existed = 7;
	HT_OK(hl_lock_force_unlock(&existed, l2));
	HT_EQ(existed, 0);
	HT_OK(hl_lock_force_unlock(NULL, l2));

	/* the former holder no longer holds */
	HT_OK(hl_lock_hold_count(&n, l));
	HT_EQ(n, 0);
	rc = hl_lock_release(NULL, l);
	HT_CHECKF(rc == HL_ENOTHELD || rc == HL_ELOST, "release: %s",
	          hl_status_name(rc));
	HT_CHECK(hl_error_last()[0] != '\0');
	HT_EQ(ht_exists(r, HT_S("lock:force")), 0);

	/* the holder can force-unlock its own lock too */
	HT_OK(hl_lock_acquire(l2, -1, NULL));
	HT_OK(hl_lock_force_unlock(&existed, l2));
	HT_EQ(existed, 1);
	HT_EQ(ht_exists(r, HT_S("lock:force")), 0);
	expect_state(l2, 0, 0, 0);

	hl_lock_free(l);
	hl_lock_free(l2);
	hl_client_free(c);
	hl_client_free(c2);
}

/* ---- explicit owners ---------------------------------------------------- */
struct owner_arg {
	hl_lock *l;
	int op; /* 0: acquire, 1: query, 2: release */
	int rc, held, released;
	int64_t count;
};

static void *owner_op(void *arg)
{
	struct owner_arg *a = arg;

	switch (a->op) {
	case 0:
		a->rc = hl_lock_acquire(a->l, -1, NULL);
		break;
	case 1:
		a->rc = hl_lock_is_held(&a->held, a->l);
		if (a->rc == HL_OK)
			a->rc = hl_lock_hold_count(&a->count, a->l);
		break;
	default:
		a->rc = hl_lock_release(&a->released, a->l);
		break;
	}
	return NULL;
}

static void run_owner_op(hl_lock *l, int op, struct owner_arg *a)
{
	memset(a, 0, sizeof *a);
	a->l = l;
	a->op = op;
	ht_thread_join(ht_thread_start(owner_op, a), 10000);
}

static void explicit_owner(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:owner");
	hl_lock *same = ht_lock(c, "lock:owner");
	hl_lock *plain = ht_lock(c, "lock:owner");
	uint64_t id = hl_owner_id_new();
	struct owner_arg a;
	char want[128], thread_owner[128];

	snprintf(thread_owner, sizeof thread_owner, "%s", ht_owner(l));
	HT_OK(hl_lock_set_owner(l, id));
	HT_OK(hl_lock_set_owner(same, id));
	snprintf(want, sizeof want, "%s:%llu", hl_client_id(c),
	         (unsigned long long)id);
	HT_STREQ(ht_owner(l), want);

	/* acquired on one thread, seen and released on others */
	run_owner_op(l, 0, &a);
	HT_OK(a.rc);
	HT_EQ(ht_hget_int(r, HT_S("lock:owner"), want), 1);
	HT_EQ(ht_hlen(r, HT_S("lock:owner")), 1);
	run_owner_op(l, 1, &a);
	HT_OK(a.rc);
	HT_EQ(a.held, 1);
	HT_EQ(a.count, 1);
	expect_state(l, 1, 1, 1);
	expect_state(same, 1, 1, 1);  /* another handle, the same owner */
	expect_state(plain, 1, 0, 0); /* this thread is not that owner */
	HT_OK(hl_lock_acquire(l, -1, NULL)); /* re-entry from main */
	HT_EQ(ht_hget_int(r, HT_S("lock:owner"), want), 2);
	run_owner_op(same, 2, &a);
	HT_OK(a.rc);
	HT_EQ(a.released, 0);
	run_owner_op(l, 2, &a);
	HT_OK(a.rc);
	HT_EQ(a.released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:owner")), 0);

	/* 0: back to the calling thread */
	HT_OK(hl_lock_set_owner(l, 0));
	HT_STREQ(ht_owner(l), thread_owner);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	expect_state(plain, 1, 1, 1);
	expect_state(same, 1, 0, 0);
	HT_OK(hl_lock_release(NULL, plain));
	HT_EQ(ht_exists(r, HT_S("lock:owner")), 0);

	HT_RC(hl_lock_set_owner(NULL, id), HL_EINVAL);
	hl_lock_free(l);
	hl_lock_free(same);
	hl_lock_free(plain);
	hl_client_free(c);
}

/* ---- a second handle for the same name ---------------------------------- */
static void second_handle(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l1 = ht_lock(c, "lock:handles");
	hl_lock *l2 = ht_lock(c, "lock:handles");
	int released = 7;

	HT_OK(hl_lock_acquire(l1, -1, NULL));
	HT_STREQ(ht_owner(l1), ht_owner(l2));
	expect_state(l2, 1, 1, 1);
	HT_OK(hl_lock_acquire(l2, -1, NULL));
	expect_state(l1, 1, 1, 2);
	HT_OK(hl_lock_release(&released, l2));
	HT_EQ(released, 0);
	HT_OK(hl_lock_release(&released, l2));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:handles")), 0);
	expect_state(l1, 0, 0, 0);
	HT_RC(hl_lock_release(NULL, l1), HL_ENOTHELD);
	hl_lock_free(l1);
	hl_lock_free(l2);
	hl_client_free(c);
}

/* ---- wire format -------------------------------------------------------- */
static void expect_message(redisContext *s, const char *channel,
                           const char *payload)
{
	char ch[256];
	char *p = ht_sub_next(s, ch, sizeof ch);

	HT_CHECKF(strcmp(ch, channel) == 0 && strcmp(p, payload) == 0,
	          "got \"%s\" on \"%s\", expected \"%s\" on \"%s\"", p, ch,
	          payload, channel);
	free(p);
}

static void publish(ht_redis *r, const char *channel, const char *payload)
{
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "PUBLISH %s %s", channel, payload));
}

static void wire_format(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:wire");
	const char *ch = "redisson_lock__channel:{lock:wire}";
	redisContext *s = ht_sub_new(r, HT_S(ch));
	redisReply *rep;
	char owner[128];
	int existed;

	HT_OK(hl_lock_acquire(l, 5000, NULL));
	snprintf(owner, sizeof owner, "%s:%llu", hl_client_id(c),
	         (unsigned long long)hl_thread_owner_id());
	HT_STREQ(ht_owner(l), owner);

	/* key = the name, a hash {owner: count}, PTTL = the lease */
	rep = ht_raw(ht_raw_of(r), "TYPE lock:wire");
	HT_STREQ(rep->str, "hash");
	freeReplyObject(rep);
	rep = ht_raw(ht_raw_of(r), "HGETALL lock:wire");
	HT_CHECK(rep->type == REDIS_REPLY_ARRAY && rep->elements == 2);
	HT_STREQ(rep->element[0]->str, owner);
	HT_STREQ(rep->element[1]->str, "1");
	freeReplyObject(rep);
	HT_RANGE(ht_pttl(r, HT_S("lock:wire")), 3000, 5000);
	rep = ht_raw(ht_raw_of(r), "KEYS *lock:wire*");
	HT_CHECK(rep->type == REDIS_REPLY_ARRAY && rep->elements == 1);
	freeReplyObject(rep);

	/* a release that leaves holds publishes nothing; the last one
	 * publishes "0" (the marker proves the order) */
	HT_OK(hl_lock_acquire(l, 5000, NULL));
	rep = ht_raw(ht_raw_of(r), "HGET lock:wire %s", owner);
	HT_STREQ(rep->str, "2");
	freeReplyObject(rep);
	HT_OK(hl_lock_release(NULL, l));
	publish(r, ch, "marker");
	HT_OK(hl_lock_release(NULL, l));
	expect_message(s, ch, "marker");
	expect_message(s, ch, "0");
	HT_EQ(ht_exists(r, HT_S("lock:wire")), 0);

	/* force unlock publishes "0" when it deleted something, else nothing */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_force_unlock(&existed, l));
	HT_EQ(existed, 1);
	expect_message(s, ch, "0");
	HT_OK(hl_lock_force_unlock(&existed, l));
	HT_EQ(existed, 0);
	publish(r, ch, "marker2");
	expect_message(s, ch, "marker2");

	/* a non-owner release publishes nothing */
	{
		hl_client *c2 = ht_client(r, 0);
		hl_lock *l2 = ht_lock(c2, "lock:wire");

		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_RC(hl_lock_release(NULL, l2), HL_ENOTHELD);
		publish(r, ch, "marker3");
		HT_OK(hl_lock_release(NULL, l));
		expect_message(s, ch, "marker3");
		expect_message(s, ch, "0");
		hl_lock_free(l2);
		hl_client_free(c2);
	}

	redisFree(s);
	hl_lock_free(l);
	hl_client_free(c);
}

/* Channel naming: a name with '{' is not wrapped again; binary names. */
static void channel_braces(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "a{b}c");
	hl_lock *bin = NULL;
	const char bname[] = "n\0ul";
	const char bchan[] = "redisson_lock__channel:{n\0ul}";
	redisContext *s = ht_sub_new(r, HT_S("redisson_lock__channel:a{b}c"));
	redisContext *s2 =
	        ht_sub_new(r, HT_S("redisson_lock__channel:{a{b}c}"));
	redisContext *s3 = ht_sub_new(r, bchan, sizeof bchan - 1);
	char *p;

	HT_OK(hl_lock_acquire(l, 5000, NULL));
	HT_EQ(ht_hlen(r, HT_S("a{b}c")), 1);
	HT_OK(hl_lock_release(NULL, l));
	expect_message(s, "redisson_lock__channel:a{b}c", "0");
	/* nothing on the double-wrapped channel */
	publish(r, "redisson_lock__channel:{a{b}c}", "marker");
	expect_message(s2, "redisson_lock__channel:{a{b}c}", "marker");

	/* '{' without '}' still counts as "contains a brace" */
	{
		hl_lock *half = ht_lock(c, "half{open");
		redisContext *s4 =
		        ht_sub_new(r, HT_S("redisson_lock__channel:half{open"));
		HT_OK(hl_lock_acquire(half, 5000, NULL));
		HT_OK(hl_lock_release(NULL, half));
		expect_message(s4, "redisson_lock__channel:half{open", "0");
		redisFree(s4);
		hl_lock_free(half);
	}

	HT_OK(hl_lock_new(&bin, c, bname, sizeof bname - 1));
	HT_OK(hl_lock_acquire(bin, 5000, NULL));
	HT_EQ(ht_hlen(r, bname, sizeof bname - 1), 1);
	HT_OK(hl_lock_release(NULL, bin));
	p = ht_sub_next(s3, NULL, 0);
	HT_STREQ(p, "0");
	free(p);

	redisFree(s);
	redisFree(s2);
	redisFree(s3);
	hl_lock_free(l);
	hl_lock_free(bin);
	hl_client_free(c);
}

/* ---- leases ------------------------------------------------------------- */
static void lease(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:lease");
	int64_t ttl;
	int held = 7;

	HT_OK(hl_lock_acquire(l, 1500, NULL));
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_RANGE(ttl, 500, 1500);
	HT_RANGE(ht_pttl(r, HT_S("lock:lease")), 500, 1500);
	/* not renewed: gone after the lease */
	ht_sleep_ms(2000);
	HT_EQ(ht_exists(r, HT_S("lock:lease")), 0);
	HT_OK(hl_lock_is_held(&held, l));
	HT_EQ(held, 0);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_EQ(ttl, -2);
	/* its own lease ended it: lost, not "never held" */
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A waiter wakes when the holder's lease runs out (no unlock message). */
static void waiter_ttl(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *holder = ht_lock(c, "lock:waitttl");
	hl_lock *waiter = ht_lock(c2, "lock:waitttl");
	int acquired = 0;
	int64_t t0, dt;

	t0 = ht_now_ms();
	HT_OK(hl_lock_acquire(holder, 1000, NULL));
	HT_OK(hl_lock_try_acquire(&acquired, waiter, 20000, 5000, NULL));
	dt = ht_now_ms() - t0;
	HT_EQ(acquired, 1);
	HT_RANGE(dt, 900, 1000 + 2500 * ht_scale());
	HT_EQ(ht_hget_int(r, HT_S("lock:waitttl"), ht_owner(waiter)), 1);
	HT_OK(hl_lock_release(NULL, waiter));
	hl_lock_free(holder);
	hl_lock_free(waiter);
	hl_client_free(c);
	hl_client_free(c2);
}

/* try_acquire gives up after its wait. */
static void try_timeout(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0), *c2 = ht_client(r, 0);
	hl_lock *holder = ht_lock(c, "lock:trytimeout");
	hl_lock *waiter = ht_lock(c2, "lock:trytimeout");
	int acquired = 7;
	int64_t t0, dt;

	HT_OK(hl_lock_acquire(holder, 20000, NULL));
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, waiter, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_CHECK(ht_now_ms() - t0 < 2000 * ht_scale());
	acquired = 7;
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, waiter, 400, -1, NULL));
	dt = ht_now_ms() - t0;
	HT_EQ(acquired, 0);
	HT_RANGE(dt, 350, 400 + 2000 * ht_scale());
	HT_EQ(ht_hget_int(r, HT_S("lock:trytimeout"), ht_owner(waiter)), -1);
	HT_EQ(ht_hget_int(r, HT_S("lock:trytimeout"), ht_owner(holder)), 1);
	HT_RANGE(ht_pttl(r, HT_S("lock:trytimeout")), 10000, 20000);
	HT_OK(hl_lock_release(NULL, holder));
	hl_lock_free(holder);
	hl_lock_free(waiter);
	hl_client_free(c);
	hl_client_free(c2);
}

/* Freeing a handle neither releases the lock nor stops its renewal. */
static void free_handle_keeps_hold(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 1000);
	hl_lock *l = ht_lock(c, "lock:freehandle");
	int64_t t0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	hl_lock_free(l);
	t0 = ht_now_ms();
	while (ht_now_ms() - t0 < 2500) {
		HT_CHECKF(ht_pttl(r, HT_S("lock:freehandle")) > 0,
		          "lock expired %lld ms after its handle was freed",
		          (long long)(ht_now_ms() - t0));
		ht_sleep_ms(100);
	}
	l = ht_lock(c, "lock:freehandle");
	expect_state(l, 1, 1, 1);
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("lock:freehandle")), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A lock written by another Redisson-compatible client (raw commands). */
static void foreign_holder(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:foreign");
	const char *them = "11111111-2222-3333-4444-555555555555:7";
	int acquired = 7, existed = 0;
	int64_t ttl = 0;

	freeReplyObject(ht_raw(ht_raw_of(r), "HSET lock:foreign %s 2", them));
	/* no expiry at all */
	expect_state(l, 1, 0, 0);
	HT_OK(hl_lock_ttl(&ttl, l));
	HT_EQ(ttl, -1);
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 0);
	HT_OK(hl_lock_try_acquire(&acquired, l, 300, -1, NULL));
	HT_EQ(acquired, 0);
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD);
	HT_EQ(ht_hget_int(r, HT_S("lock:foreign"), them), 2);
	HT_EQ(ht_pttl(r, HT_S("lock:foreign")), -1);
	HT_OK(hl_lock_force_unlock(&existed, l));
	HT_EQ(existed, 1);
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, -1, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

/* Deep re-entry: 1000 holds, 1000 releases, only the last frees it. */
static void deep_reentry(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:deep");
	int i, released = 7;
	int64_t n = 0;

	for (i = 0; i < 1000; i++)
		HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_hold_count(&n, l));
	HT_EQ(n, 1000);
	HT_EQ(ht_hget_int(r, HT_S("lock:deep"), ht_owner(l)), 1000);
	for (i = 0; i < 999; i++) {
		HT_OK(hl_lock_release(&released, l));
		HT_EQ(released, 0);
	}
	HT_EQ(ht_hget_int(r, HT_S("lock:deep"), ht_owner(l)), 1);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:deep")), 0);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- cost: an uncontended lock + unlock is exactly two round trips ------
 * Two EVALSHA (the scripts were loaded when the client connected) and no
 * other client command. Redis counts the commands a script runs in
 * commandstats too, so those (the scripts' own) are allowed. */
#define HT_MAX_CMDS 64
typedef struct cmdstats {
	int n;
	char name[HT_MAX_CMDS][48];
	long long calls[HT_MAX_CMDS];
} cmdstats;

static void read_cmdstats(ht_redis *r, cmdstats *st)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "INFO commandstats");
	const char *p = rep->str;
	st->n = 0;
	while ((p = strstr(p, "cmdstat_")) != NULL && st->n < HT_MAX_CMDS) {
		const char *colon = strchr(p, ':'), *calls;
		size_t len = (size_t)(colon - p - 8);
		if (len >= sizeof(st->name[0]))
			len = sizeof(st->name[0]) - 1;
		memcpy(st->name[st->n], p + 8, len);
		st->name[st->n][len] = '\0';
		calls = strstr(colon, "calls=");
		st->calls[st->n++] = atoll(calls + 6);
		p = colon;
	}
	freeReplyObject(rep);
}

static long long calls_of(const cmdstats *st, const char *name)
{
	int i;
	for (i = 0; i < st->n; i++)
		if (strcmp(st->name[i], name) == 0)
			return st->calls[i];
	return 0;
}

static void round_trips(void)
{
	static const char *script_cmds[] = {"exists",  "hexists", "hget",
	                                    "hset",    "pexpire", "del",
	                                    "publish", "info"};
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:cost");
	cmdstats before, after;
	int released = 0, i;
	size_t k;

	read_cmdstats(r, &before);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(&released, l));
	read_cmdstats(r, &after);
	HT_EQ(released, 1);
	HT_EQ(calls_of(&after, "evalsha") - calls_of(&before, "evalsha"), 2);
	for (i = 0; i < after.n; i++) {
		int allowed = strcmp(after.name[i], "evalsha") == 0;
		for (k = 0; k < sizeof(script_cmds) / sizeof(*script_cmds); k++)
			allowed |= strcmp(after.name[i], script_cmds[k]) == 0;
		if (!allowed)
			HT_CHECKF(after.calls[i] ==
			                  calls_of(&before, after.name[i]),
			          "unexpected client command %s",
			          after.name[i]);
	}
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- NOSCRIPT: a flushed script cache is reloaded transparently -------- */
static void script_flush(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "lock:flush");
	redisReply *rep;
	int released = 0;

	rep = ht_raw(ht_raw_of(r), "SCRIPT FLUSH");
	freeReplyObject(rep);
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(ht_hget_int(r, HT_S("lock:flush"), ht_owner(l)), 1);
	rep = ht_raw(ht_raw_of(r), "SCRIPT FLUSH");
	freeReplyObject(rep);
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	HT_EQ(ht_exists(r, HT_S("lock:flush")), 0);
	/* and EVALSHA works again afterwards (EVAL cached it) */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	hl_lock_free(l);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(basics), HT_CASE(reentry), HT_CASE(other_thread),
        HT_CASE(non_owner_release), HT_CASE(force_unlock),
        HT_CASE(explicit_owner), HT_CASE(second_handle), HT_CASE(wire_format),
        HT_CASE(channel_braces), HT_CASE(lease), HT_CASE(waiter_ttl),
        HT_CASE(try_timeout), HT_CASE(free_handle_keeps_hold),
        HT_CASE(foreign_holder), HT_CASE(deep_reentry), HT_CASE(round_trips),
        HT_CASE(script_flush))
