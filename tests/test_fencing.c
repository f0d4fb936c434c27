/*
 * Fencing of delayed commands. A connection dropped while an acquire may
 * still be on its way is killed (CLIENT KILL ID <id> ADDR <addr>) first
 * thing in the client's next pipeline to that server, so the copy held in
 * the network can no longer run. Each case holds an acquire in the fault
 * proxy (delay) past its caller's deadline, lets the client's next command
 * through at once (on a new connection: the held bytes are still held),
 * and then looks at Redis directly once the held bytes have gone. (A
 * fence is a race the kill must win: it is sent with the next command, so
 * it stops a copy that is still on its way when that command reaches the
 * server, as here, not one that got there first.) The caller's give-up
 * also takes the acquire back (lock.c): that undo is held by the proxy too,
 * so it goes on in the background once the proxy lets commands through,
 * and its connection is dropped and fenced as well.
 *   fenced          the old connection is gone before its bytes could
 *                   arrive, the acquire never ran (the key never exists),
 *                   and another client takes the lock;
 *   no_client_kill  an ACL user without CLIENT KILL: the client says so
 *                   once (HL_EVENT_FENCING_OFF), and the late acquire does
 *                   take the lock, unrenewed, until its lease ends (the
 *                   documented consequence);
 *   no_client_info  an ACL user without CLIENT INFO (the client cannot
 *                   name its connections): the same, said once.
 */
#include "harness.h"

#include <stdlib.h>

#define NAME   "fence-test" /* CLIENT SETNAME of the client under test */
#define WD     2000         /* its watchdog timeout: the late hold's lease */
#define HOLD   2000         /* how long the proxy holds the acquire */
#define GIVEUP 300          /* the acquire's wait */

/* A client for url (a proxy's, maybe with a user), named NAME, with short
 * timeouts so faults show quickly. */
static hl_client *client_at(const char *url)
{
	hl_client_options o;
	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	o.watchdog_timeout_ms = WD;
	o.command_timeout_ms = 1000;
	o.connect_timeout_ms = 1000;
	o.retry_delay_ms = 100;
	o.client_name = NAME;
	return ht_client_url(url, &o);
}

/* The server-side ids of the connections named NAME (at most max). */
static int named_ids(ht_redis *r, long long *ids, int max)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "CLIENT LIST");
	const char *line;
	int n = 0;
	HT_EQ(rep->type, REDIS_REPLY_STRING);
	for (line = rep->str; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024];
		snprintf(buf, sizeof buf, "%.*s", (int)len, line);
		if (strncmp(buf, "id=", 3) == 0 &&
		    strstr(buf, " name=" NAME " ") != NULL) {
			HT_CHECK(n < max);
			ids[n++] = atoll(buf + 3);
		}
		line = end ? end + 1 : NULL;
	}
	freeReplyObject(rep);
	return n;
}

static int has_id(const long long *ids, int n, long long id)
{
	int i;
	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* A field of cmdstat_<cmd> in INFO commandstats (0 if never run). */
static long long cmdstat(ht_redis *r, const char *cmd, const char *field)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "INFO commandstats");
	char key[80];
	const char *p, *end;
	long long n = 0;
	HT_EQ(rep->type, REDIS_REPLY_STRING);
	snprintf(key, sizeof key, "cmdstat_%s:", cmd);
	p = strstr(rep->str, key);
	if (p) {
		end = strchr(p, '\n');
		snprintf(key, sizeof key, "%s=", field);
		p = strstr(p, key);
		if (p && (!end || p < end))
			n = atoll(p + strlen(key));
	}
	freeReplyObject(rep);
	return n;
}

/* Make l's client ready to send an acquire at once on its one pooled
 * connection (a write first learns how many replicas to WAIT for, with a
 * round trip of its own: a held INFO would stop the acquire unsent), and
 * return that connection's server-side id. A fixed lease: no watchdog
 * connection. */
static long long warm(ht_redis *r, hl_lock *l)
{
	long long ids[8];
	int released = 0;
	HT_OK(hl_lock_acquire(l, 10000, NULL));
	HT_OK(hl_lock_release(&released, l));
	HT_EQ(released, 1);
	HT_EQ(named_ids(r, ids, 8), 1);
	return ids[0];
}

/* Acquire l through p with its bytes held HOLD ms in the proxy: the caller
 * gives up after GIVEUP ms, long before they go. Then the proxy holds
 * nothing new (the held bytes stay held until their time). Returns the
 * time (ht_now_ms) the held acquire goes on to Redis. */
static int64_t acquire_held(ht_proxy *p, hl_lock *l)
{
	char cmd[32];
	int acquired = 7;
	int64_t t0;
	snprintf(cmd, sizeof cmd, "delay %d", HOLD * ht_scale());
	ht_proxy_cmd(p, cmd);
	t0 = ht_now_ms();
	/* no answer within the wait: told as an outage (issue 23) */
	HT_RC(hl_lock_try_acquire(&acquired, l, GIVEUP, -1, NULL), HL_ECONNECT);
	HT_EQ(acquired, 7);
	HT_CHECKF(ht_now_ms() - t0 < HOLD * ht_scale() / 2,
	          "the acquire gave up after %lld ms",
	          (long long)(ht_now_ms() - t0));
	ht_proxy_cmd(p, "delay 0");
	return t0 + HOLD * ht_scale();
}

/* Sleep until the monotonic ms `until` (the test's clock). */
static void sleep_until(int64_t until)
{
	int64_t now = ht_now_ms();
	if (until > now)
		ht_sleep_ms(until - now);
}

/* Take c's queued events: how many of type, the last one of that type in
 * *out (freed by the caller), the others freed. */
static int events_of(hl_client *c, int type, hl_event **out)
{
	int n = 0;
	*out = NULL;
	for (;;) {
		hl_event *e = NULL;
		HT_OK(hl_client_next_event(&e, c));
		if (!e)
			return n;
		ht_note("event %s: %s", hl_event_type_name(hl_event_type(e)),
		        hl_event_message(e));
		if (hl_event_type(e) == type) {
			n++;
			hl_event_free(*out);
			*out = e;
		} else {
			hl_event_free(e);
		}
	}
}

/* ---- fenced ------------------------------------------------------------- */

static void fenced(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = client_at(p->url);
	hl_lock *l = ht_lock(c, "fence:late");
	hl_client *c2 = ht_client(r, 0);
	hl_lock *l2 = ht_lock(c2, "fence:late");
	hl_event *e;
	long long old, ids[8], evals, kills;
	int locked = 7, acquired = 0, n;
	int64_t due;

	old = warm(r, l);
	evals = ht_cmd_calls(r, "evalsha");
	kills = ht_cmd_calls(r, "client|kill");

	due = acquire_held(p, l);
	/* still there: the proxy holds its bytes and keeps it open */
	n = named_ids(r, ids, 8);
	HT_CHECK(has_id(ids, n, old));
	/* the client's next command kills it first, on a new connection */
	HT_OK(hl_lock_is_locked(&locked, l));
	HT_EQ(locked, 0);
	HT_CHECKF(ht_now_ms() < due - 200,
	          "too slow to show anything: the held acquire was due");
	/* the acquire's connection, and the one of its held undo */
	HT_CHECK(ht_cmd_calls(r, "client|kill") >= kills + 1);
	HT_EQ(cmdstat(r, "client|kill", "failed_calls"), 0);
	n = named_ids(r, ids, 8);
	HT_CHECKF(!has_id(ids, n, old), "connection %lld not killed", old);
	HT_CHECK(ht_now_ms() < due); /* killed before its bytes could go */

	/* the held bytes go now, to a closed connection: the acquire never
	 * runs (the undo's release script may: it finds nothing) */
	while (ht_now_ms() < due + 500) {
		HT_EQ(ht_exists(r, HT_S("fence:late")), 0);
		ht_sleep_ms(10);
	}
	HT_EQ(ht_hget_int(r, HT_S("fence:late"), ht_owner(l)), -1);
	HT_CHECK(ht_cmd_calls(r, "evalsha") >= evals);
	/* and another client takes the lock at once */
	HT_OK(hl_lock_try_acquire(&acquired, l2, 0, -1, NULL));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S("fence:late"), ht_owner(l2)), 1);
	HT_EQ(ht_hlen(r, HT_S("fence:late")), 1);
	HT_OK(hl_lock_release(NULL, l2));
	/* fencing worked: nothing said it was off */
	HT_EQ(events_of(c, HL_EVENT_FENCING_OFF, &e), 0);

	hl_lock_free(l2);
	hl_client_free(c2);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

/* ---- fencing off -------------------------------------------------------- */

/* The ACL user `user` with rules (all commands but some), through p. */
static hl_client *client_as(ht_redis *r, ht_proxy *p, const char *user,
                            const char *rules)
{
	char cmd[256], url[256];
	redisReply *rep;
	snprintf(cmd, sizeof cmd, "ACL SETUSER %s reset on >%s-pw ~* &* %s",
	         user, user, rules);
	rep = ht_raw(ht_raw_of(r), cmd);
	HT_CHECKF(rep->type == REDIS_REPLY_STATUS, "%s: %s", cmd,
	          rep->str ? rep->str : "?");
	freeReplyObject(rep);
	snprintf(url, sizeof url, "redis://%s:%s-pw@127.0.0.1:%d", user, user,
	         p->port);
	return client_at(url);
}

/* An acquire held past its caller's deadline lands, with fencing off:
 * the client says so once (the first time it needs a fence), and the late
 * acquire holds the lock, unrenewed, until its lease ends. kill_refused:
 * the client tried CLIENT KILL and the server refused (else it never
 * tried: no connection id). */
static void unfenced(const char *user, const char *rules, int kill_refused,
                     const char *said)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c = client_as(r, p, user, rules);
	hl_lock *l = ht_lock(c, "fence:late");
	hl_lock *l3 = ht_lock(c, "fence:late2");
	hl_client *c2 = ht_client(r, 0);
	hl_lock *l2 = ht_lock(c2, "fence:late");
	hl_event *e = NULL;
	long long old, ids[8], evals, kills, refused, rejected, pttl;
	int locked = 7, acquired = 7, n;
	char node[64];
	int64_t due, t;

	old = warm(r, l);
	evals = ht_cmd_calls(r, "evalsha");
	kills = ht_cmd_calls(r, "client|kill");
	refused = cmdstat(r, "client|kill", "rejected_calls");

	due = acquire_held(p, l);
	HT_OK(hl_lock_is_locked(&locked, l)); /* the next command */
	HT_EQ(locked, 0);
	HT_CHECKF(ht_now_ms() < due - 200,
	          "too slow to show anything: the held acquire was due");
	/* nothing was killed: the old connection waits for its bytes */
	HT_EQ(ht_cmd_calls(r, "client|kill"), kills);
	/* refused (once per connection to fence: the acquire's and its
	 * held undo's, in one pipeline), or never tried */
	rejected = cmdstat(r, "client|kill", "rejected_calls");
	if (kill_refused)
		HT_CHECK(rejected > refused);
	else
		HT_EQ(rejected, refused);
	n = named_ids(r, ids, 8);
	HT_CHECK(has_id(ids, n, old));

	/* said once, at once: an event with the server and why */
	HT_EQ(events_of(c, HL_EVENT_FENCING_OFF, &e), 1);
	HT_STREQ(hl_event_type_name(HL_EVENT_FENCING_OFF), "fencing_off");
	snprintf(node, sizeof node, "127.0.0.1:%d", p->port);
	HT_STREQ(hl_event_node(e), node);
	HT_EQ(hl_event_status(e), HL_EREDIS);
	HT_CHECKF(strstr(hl_event_message(e), said) != NULL, "message: %s",
	          hl_event_message(e));
	HT_CHECKF(strstr(hl_event_message(e), "fencing is off") != NULL,
	          "message: %s", hl_event_message(e));
	HT_CHECK(strstr(hl_event_message(e), "-pw") == NULL);
	HT_CHECK(hl_event_lock_name(NULL, e) == NULL);
	hl_event_free(e);

	/* the documented consequence: the held acquire runs when it
	 * arrives, after the client took it back (the background undo, once
	 * the proxy let commands through, found nothing), and the lock is
	 * held by an owner who gave up on it. (The undo's own first attempt,
	 * held in the proxy too and not fenced either, may land a little
	 * after it and free the lock early.) */
	for (t = ht_now_ms(); ht_exists(r, HT_S("fence:late")) == 0 &&
	                      ht_now_ms() - t < (HOLD + 3000) * ht_scale();)
		ht_sleep_ms(1);
	ht_note("landed %lld ms after it was due",
	        (long long)(ht_now_ms() - due));
	HT_CHECK(ht_now_ms() >= due - 100);
	pttl = ht_pttl(r, HT_S("fence:late"));
	HT_EQ(ht_hget_int(r, HT_S("fence:late"), ht_owner(l)), 1);
	HT_CHECK(ht_cmd_calls(r, "evalsha") >= evals + 1);
	/* unrenewed: its lease (the watchdog timeout) ends it */
	HT_RANGE(pttl, 1, WD);
	HT_OK(hl_lock_try_acquire(&acquired, l2, 2 * WD * ht_scale(), -1,
	                          NULL));
	HT_EQ(acquired, 1);
	HT_EQ(ht_hget_int(r, HT_S("fence:late"), ht_owner(l2)), 1);
	HT_OK(hl_lock_release(NULL, l2));

	/* The first round's kills have all run by now. A command sends the
	 * fences pending when it is sent, so each one sent before the first
	 * refusal came back may carry a kill: the foreground's and the
	 * background undo's, each with the two connections to fence at
	 * most. The undo's can reach Redis after the count above was read
	 * (seen once, under TSan). */
	rejected = cmdstat(r, "client|kill", "rejected_calls");
	ht_note("CLIENT KILL refused %lld times", rejected - refused);
	if (kill_refused)
		HT_RANGE(rejected, refused + 1, refused + 4);
	else
		HT_EQ(rejected, refused);

	/* Again (another lock): not said again, and no kill tried. */
	due = acquire_held(p, l3);
	HT_OK(hl_lock_is_locked(&locked, l3));
	HT_EQ(ht_cmd_calls(r, "client|kill"), kills);
	HT_EQ(cmdstat(r, "client|kill", "rejected_calls"), rejected);
	HT_EQ(events_of(c, HL_EVENT_FENCING_OFF, &e), 0);
	sleep_until(due + 100);
	for (t = ht_now_ms(); ht_exists(r, HT_S("fence:late2")) == 0 &&
	                      ht_now_ms() - t < 3000 * ht_scale();)
		ht_sleep_ms(10);
	HT_EQ(ht_hget_int(r, HT_S("fence:late2"), ht_owner(l3)), 1);
	HT_EQ(events_of(c, HL_EVENT_FENCING_OFF, &e), 0);

	hl_lock_free(l2);
	hl_client_free(c2);
	hl_lock_free(l3);
	hl_lock_free(l);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void no_client_kill(void)
{
	unfenced("nokill", "+@all -client|kill", 1,
	         "refused CLIENT KILL: NOPERM");
}

static void no_client_info(void)
{
	unfenced("noinfo", "+@all -client|info", 0,
	         "did not say which connection");
}

HT_MAIN(HT_CASE(fenced), HT_CASE(no_client_kill), HT_CASE(no_client_info))
