/*
 * What a lock write leaves behind when it is not confirmed (issue 18,
 * items 1b and 2): a master with one replica, the replica frozen
 * (SIGSTOP), so that every WAIT answers 0.
 *   - an acquire that gives up (its wait ends inside the WAIT: not
 *     acquired) leaves nothing held in Redis: blocking, single attempt,
 *     and the task form;
 *   - an undo that Redis does not answer goes on in the background and is
 *     told as events (through the fault proxy, without a replica);
 *   - a release no replica confirmed is resent, then reported as
 *     HL_EINDOUBT, not a silent success; a re-entrant (non-final) one is
 *     not an error.
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A master and its replica, in sync. */
static void start_pair(ht_redis **master, ht_redis **replica)
{
	redisReply *rep;
	char info[32];
	int64_t end;
	*master = ht_redis_start(NULL);
	*replica = ht_redis_start(NULL);
	/* the first sync at once, not after the diskless sync's 5 s */
	rep = ht_raw(ht_raw_of(*master),
	             "CONFIG SET repl-diskless-sync-delay 0");
	freeReplyObject(rep);
	rep = ht_raw(ht_raw_of(*replica), "REPLICAOF 127.0.0.1 %d",
	             (*master)->port);
	HT_CHECK(rep && rep->type == REDIS_REPLY_STATUS);
	freeReplyObject(rep);
	end = ht_now_ms() + 10000 * ht_scale();
	for (;;) {
		const char *p;
		rep = ht_raw(ht_raw_of(*master), "INFO replication");
		p = strstr(rep->str, "connected_slaves:");
		snprintf(info, sizeof info, "%s", p ? p + 17 : "0");
		freeReplyObject(rep);
		if (atoi(info) == 1) {
			rep = ht_raw(ht_raw_of(*replica), "INFO replication");
			p = strstr(rep->str, "master_link_status:up");
			freeReplyObject(rep);
			if (p)
				break;
		}
		HT_CHECKF(ht_now_ms() < end, "the replica did not attach");
		ht_sleep_ms(20);
	}
}

static void freeze(ht_redis *r)
{
	HT_CHECK(kill(r->pid, SIGSTOP) == 0);
}

/* Resume the replica and detach it (a master shutting down waits for its
 * replicas to catch up). */
static void thaw(ht_redis *r)
{
	redisReply *rep;
	HT_CHECK(kill(r->pid, SIGCONT) == 0);
	rep = ht_raw(ht_raw_of(r), "REPLICAOF NO ONE");
	freeReplyObject(rep);
}

static hl_client *client_of(const char *url, int64_t wait_timeout_ms,
                            int retry_attempts)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 2000;
	o.retry_delay_ms = 50;
	o.retry_attempts = retry_attempts;
	o.wait_timeout_ms = wait_timeout_ms;
	return ht_client_url(url, &o);
}

/* The next event of c within ms (scaled), or NULL. */
static hl_event *next_event(hl_client *c, int64_t ms)
{
	hl_event *e = NULL;
	int fd = -1;
	int64_t end = ht_now_ms() + ms * ht_scale();
	HT_OK(hl_client_event_fd(&fd, c));
	for (;;) {
		HT_OK(hl_client_next_event(&e, c));
		if (e || ht_now_ms() >= end)
			return e;
		ht_fd_readable(fd, 50);
	}
}

/* The next event of type HL_EVENT_UNDO within ms, or NULL. */
static hl_event *next_undo(hl_client *c, int64_t ms)
{
	int64_t end = ht_now_ms() + ms * ht_scale();
	hl_event *e;
	while ((e = next_event(c, end - ht_now_ms())) != NULL) {
		if (hl_event_type(e) == HL_EVENT_UNDO)
			return e;
		hl_event_free(e);
	}
	return NULL;
}

/* ---- 1b. an acquire that gives up leaves nothing held -------------------
 * WAIT takes 1 s to answer 0 (the replica is frozen); each acquire's wait
 * ends inside it, so the acquire ran on the master and the caller hears
 * "not acquired": the lock must not stay held for the 60 s lease. */
static void giveup_leaves_nothing(void)
{
	ht_redis *m, *r;
	hl_client *c, *c2;
	hl_lock *l, *l2;
	hl_task *t;
	int acquired = 7;
	int64_t t0;

	start_pair(&m, &r);
	c = client_of(m->url, 1000, 4);
	l = ht_lock(c, "undo:giveup");
	freeze(r);

	/* blocking, with a wait */
	t0 = ht_now_ms();
	HT_OK(hl_lock_try_acquire(&acquired, l, 500, 60000, NULL));
	HT_EQ(acquired, 0);
	ht_note("try_acquire(500): not acquired after %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_RANGE(ht_now_ms() - t0, 400, 2500 * ht_scale());
	HT_EQ(ht_exists(m, HT_S("undo:giveup")), 0);

	/* a single attempt: its grace ends inside the WAIT too */
	acquired = 7;
	HT_OK(hl_lock_try_acquire(&acquired, l, 0, 60000, NULL));
	HT_EQ(acquired, 0);
	HT_EQ(ht_exists(m, HT_S("undo:giveup")), 0);

	/* the task form */
	acquired = 7;
	HT_OK(hl_lock_try_acquire_start(&t, l, 500, 60000));
	HT_OK(ht_task_result(t, &acquired, 5000));
	HT_EQ(acquired, 0);
	hl_task_free(t);
	HT_EQ(ht_exists(m, HT_S("undo:giveup")), 0);

	/* nothing was left to wait for: another client (not waiting for
	 * replicas) takes it at once */
	{
		hl_client_options o;
		HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
		o.wait_replicas = 0;
		c2 = ht_client_url(m->url, &o);
	}
	l2 = ht_lock(c2, "undo:giveup");
	acquired = 0;
	HT_OK(hl_lock_try_acquire(&acquired, l2, 0, 60000, NULL));
	HT_EQ(acquired, 1);
	HT_OK(hl_lock_release(NULL, l2));
	/* no undo had to go on in the background */
	{
		hl_event *e = next_undo(c, 0);
		HT_CHECKF(e == NULL, "unexpected undo event: %s",
		          hl_event_message(e));
	}
	thaw(r);
	hl_lock_free(l2);
	hl_client_free(c2);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- 1b. an undo Redis does not answer goes on in the background ---------
 * The acquire waits in a black hole past the caller's wait, and so does
 * the undo: the caller hears "not acquired" and an undo event (in doubt).
 * Once the network heals, the acquire lands or is fenced, and the
 * background undo leaves the lock free long before its lease would, and
 * says so. */
static void undo_in_background(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	hl_event *e;
	int acquired = 7, locked = 7;
	char owner[128];
	int64_t end;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 300;
	o.connect_timeout_ms = 300;
	o.retry_delay_ms = 100;
	c = ht_client_url(p->url, &o);
	l = ht_lock(c, "undo:background");
	snprintf(owner, sizeof owner, "%s", ht_owner(l));
	/* a pooled connection and the replica count learnt, so that the
	 * acquire itself is sent */
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_is_locked(&locked, l));
	HT_EQ(locked, 0);
	ht_proxy_cmd(p, "blackhole on");
	/* Redis answered nothing during the wait: an outage (issue 23) */
	HT_RC(hl_lock_try_acquire(&acquired, l, 300, 20000, NULL), HL_ECONNECT);
	e = next_undo(c, 2000);
	HT_CHECKF(e != NULL, "no undo event while Redis was unreachable");
	ht_note("event: %s", hl_event_message(e));
	HT_EQ(hl_event_status(e), HL_EINDOUBT);
	HT_STREQ(hl_event_lock_name(NULL, e), "undo:background");
	HT_STREQ(hl_event_owner(e), owner);
	HT_STREQ(hl_event_type_name(hl_event_type(e)), "undo");
	hl_event_free(e);

	ht_proxy_cmd(p, "blackhole off");
	e = next_undo(c, 5000);
	HT_CHECKF(e != NULL, "no undo event after the network healed");
	ht_note("event: %s", hl_event_message(e));
	HT_EQ(hl_event_status(e), HL_OK);
	hl_event_free(e);
	/* the acquire that waited in the network landed before the undo or
	 * was fenced: either way nothing is held (the lease is 20 s) */
	end = ht_now_ms() + 1000;
	while (ht_now_ms() < end) {
		HT_EQ(ht_exists(r, HT_S("undo:background")), 0);
		ht_sleep_ms(50);
	}
	/* and the owner takes it as usual */
	acquired = 0;
	HT_OK(hl_lock_try_acquire(&acquired, l, 2000, -1, NULL));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S("undo:background"), owner), 1);
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(ht_exists(r, HT_S("undo:background")), 0);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* A client closed while an undo goes on in the background: the close
 * ends it (the lease ends the acquire), promptly, and frees everything. */
static void close_with_undo_pending(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	hl_event *e;
	int acquired = 7;
	int64_t t0;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.command_timeout_ms = 300;
	o.connect_timeout_ms = 300;
	o.retry_delay_ms = 100;
	c = ht_client_url(p->url, &o);
	l = ht_lock(c, "undo:close");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_release(NULL, l));
	ht_proxy_cmd(p, "blackhole on");
	HT_RC(hl_lock_try_acquire(&acquired, l, 200, 20000, NULL), HL_ECONNECT);
	e = next_undo(c, 2000);
	HT_CHECKF(e != NULL, "no undo event");
	HT_EQ(hl_event_status(e), HL_EINDOUBT);
	hl_event_free(e);
	t0 = ht_now_ms();
	hl_lock_free(l);
	hl_client_free(c);
	ht_note("closed with an undo pending in %lld ms",
	        (long long)(ht_now_ms() - t0));
	HT_RANGE(ht_now_ms() - t0, 0, 1000 * ht_scale());
	ht_proxy_cmd(p, "blackhole off");
	ht_proxy_stop(p);
}

/* ---- 2. a release no replica confirmed ----------------------------------
 * Taken while the replica follows; then the replica freezes. A re-entrant
 * release is not an error (the owner still holds the lock, and its next
 * release sets the count Redis has); the final one is resent within the
 * retry policy (2 resends here), then reported in doubt: it is not
 * HL_OK. */
static void release_unconfirmed(void)
{
	ht_redis *m, *r;
	hl_client *c;
	hl_lock *l;
	int released = 7, rc;
	long long evals, sets;
	int64_t t0;

	start_pair(&m, &r);
	c = client_of(m->url, 200, 2);
	l = ht_lock(c, "undo:release");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(ht_hget_int(m, HT_S("undo:release"), ht_owner(l)), 2);
	freeze(r);

	/* re-entrant: one hold remains */
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 0);
	HT_EQ(ht_hget_int(m, HT_S("undo:release"), ht_owner(l)), 1);

	evals = ht_cmd_calls(m, "evalsha");
	sets = ht_cmd_calls(m, "set");
	released = 7;
	t0 = ht_now_ms();
	rc = hl_lock_release(&released, l);
	ht_note("release: %s after %lld ms: %s", hl_status_name(rc),
	        (long long)(ht_now_ms() - t0), hl_error_last());
	HT_EQ(rc, HL_EINDOUBT);
	HT_EQ(released, 7); /* untouched on failure */
	HT_CHECK(strstr(hl_error_last(), "undo:release") != NULL);
	HT_CHECK(strstr(hl_error_last(), "no replica confirmed") != NULL);
	HT_CHECK(strstr(hl_error_last(), "resent 2 times") != NULL);
	/* the release and its two resends ran; each resend was followed by
	 * the write whose WAIT would have confirmed it */
	HT_EQ(ht_cmd_calls(m, "evalsha") - evals, 3);
	HT_EQ(ht_cmd_calls(m, "set") - sets, 2);
	/* it did run on the master, and the hold is over for the client */
	HT_EQ(ht_exists(m, HT_S("undo:release")), 0);
	HT_RC(hl_lock_release(NULL, l), HL_ENOTHELD);

	thaw(r);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- 2. the resend lands where the release was lost ---------------------
 * The replica follows the master through the fault proxy. The proxy holds
 * the release back (black hole), so the release runs on the master only;
 * then the master loses it, as after a failover to that replica: the
 * replica is promoted with the hold, and the master, made its replica and
 * promoted back, has the hold again under the same address. The caller's
 * release is still resending: its resend finds the hold and releases it
 * there. Before, the release returned HL_OK at once and the lock stayed
 * held by an owner that believed it released it. */
struct rel_arg {
	hl_lock *l;
	int rc;
	char msg[512];
};

static void *release_thread(void *p)
{
	struct rel_arg *a = p;
	a->rc = hl_lock_release(NULL, a->l);
	snprintf(a->msg, sizeof a->msg, "%s", hl_error_last());
	return NULL;
}

static int link_up(ht_redis *n)
{
	redisReply *rep = ht_raw(ht_raw_of(n), "INFO replication");
	int up = strstr(rep->str, "master_link_status:up") != NULL;
	freeReplyObject(rep);
	return up;
}

static void release_resent_after_failover(void)
{
	ht_redis *m = ht_redis_start(NULL), *r = ht_redis_start(NULL);
	ht_proxy *p = ht_proxy_start(m->port);
	hl_client *c;
	hl_lock *l;
	struct rel_arg a;
	redisReply *rep;
	pthread_t t;
	int64_t end;

	rep = ht_raw(ht_raw_of(m), "CONFIG SET repl-diskless-sync-delay 0");
	freeReplyObject(rep);
	rep = ht_raw(ht_raw_of(r), "CONFIG SET repl-diskless-sync-delay 0");
	freeReplyObject(rep);
	rep = ht_raw(ht_raw_of(r), "REPLICAOF 127.0.0.1 %d", p->port);
	freeReplyObject(rep);
	end = ht_now_ms() + 10000 * ht_scale();
	while (!link_up(r)) {
		HT_CHECKF(ht_now_ms() < end, "the replica did not attach");
		ht_sleep_ms(20);
	}
	/* pauses of 300 to 600 ms between the resends: time for the
	 * failover below */
	{
		hl_client_options o;
		HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
		o.command_timeout_ms = 2000;
		o.retry_delay_ms = 300;
		o.retry_attempts = 6;
		o.wait_timeout_ms = 200;
		c = ht_client_url(m->url, &o);
	}
	l = ht_lock(c, "undo:failover");
	HT_OK(hl_lock_set_owner(l, hl_owner_id_new()));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(ht_exists(r, HT_S("undo:failover")), 1); /* WAITed for */

	ht_proxy_cmd(p, "blackhole on");
	memset(&a, 0, sizeof a);
	a.l = l;
	t = ht_thread_start(release_thread, &a);
	/* it ran on the master */
	end = ht_now_ms() + 5000 * ht_scale();
	while (ht_exists(m, HT_S("undo:failover"))) {
		HT_CHECKF(ht_now_ms() < end, "the release did not run");
		ht_sleep_ms(5);
	}
	/* the replica never gets it: promoted, it has the hold */
	ht_proxy_cmd(p, "reset");
	rep = ht_raw(ht_raw_of(r), "REPLICAOF NO ONE");
	freeReplyObject(rep);
	HT_EQ(ht_exists(r, HT_S("undo:failover")), 1);
	/* and the master takes its data: the hold is back there */
	rep = ht_raw(ht_raw_of(m), "REPLICAOF 127.0.0.1 %d", r->port);
	freeReplyObject(rep);
	end = ht_now_ms() + 10000 * ht_scale();
	while (!link_up(m) || !ht_exists(m, HT_S("undo:failover"))) {
		HT_CHECKF(ht_now_ms() < end, "the master did not resync");
		ht_sleep_ms(10);
	}
	rep = ht_raw(ht_raw_of(m), "REPLICAOF NO ONE");
	freeReplyObject(rep);
	ht_note("the hold is back on the master after the failover");

	ht_thread_join(t, 20000);
	ht_note("release: %s: %s", hl_status_name(a.rc), a.msg);
	HT_CHECKF(a.rc == HL_OK || a.rc == HL_EINDOUBT, "%s: %s",
	          hl_status_name(a.rc), a.msg);
	/* a resend released it where it was lost */
	HT_EQ(ht_exists(m, HT_S("undo:failover")), 0);

	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

HT_MAIN(HT_CASE(giveup_leaves_nothing), HT_CASE(undo_in_background),
        HT_CASE(close_with_undo_pending), HT_CASE(release_unconfirmed),
        HT_CASE(release_resent_after_failover))
