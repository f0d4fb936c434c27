/*
 * The subscriber: one thread per client, one connection per node it
 * subscribes on. Waiters ask for a channel (reference counted); the thread
 * keeps Redis's subscriptions in line with what is wanted and wakes the
 * waiters of a channel when a message arrives, when the subscription
 * becomes active, and after a reconnect (so nobody sleeps on a message lost
 * while disconnected).
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hl__pubsub_kick(hl_client *c)
{
	hl__notify_set(&c->sub_wake);
}

static void wake(hl_sub *s, int64_t now)
{
	s->gen++;
	s->woke_us = now;
	hl__task_sub_event(s); /* its parked waiters try again */
}

void hl__pubsub_wake(hl_sub *s)
{
	s->event_us = hl__now_us();
	wake(s, s->event_us);
}

void hl__pubsub_message(hl_sub *s, const char *msg, size_t len)
{
	/* Kept, for a wait that subscribes just after it (see subscribe() in
	 * task.c). A message its waiters filter leaves the generation alone:
	 * it is not news to the others. */
	s->msg_us = hl__now_us();
	s->msg_len = len < sizeof(s->msg) ? len : sizeof(s->msg);
	memcpy(s->msg, msg, s->msg_len);
	if (!hl__task_sub_message(s, msg, len))
		wake(s, s->msg_us);
}

void hl__pubsub_notify_local(hl_client *c, const char *channel, size_t len)
{
	hl_sub *s;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, channel, len);
	if (s)
		hl__pubsub_wake(s);
	pthread_mutex_unlock(&c->wait_mu);
}

int hl__pubsub_active(hl_client *c, const char *channel, size_t len,
                      uint64_t *zero_gen, uint64_t *active_gen)
{
	hl_sub *s;
	int active;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, channel, len);
	active = s && s->state == HL_SUB_ACTIVE;
	*zero_gen = s ? s->zero_gen : 0;
	*active_gen = s ? s->active_gen : 0;
	pthread_mutex_unlock(&c->wait_mu);
	return active;
}

void hl__pubsub_wake_all(hl_client *c)
{
	pthread_mutex_lock(&c->wait_mu);
	c->interrupt_gen++;
	hl__task_stop_all(c);
	pthread_mutex_unlock(&c->wait_mu);
}

/* ---- payload listeners ---------------------------------------------- */

struct hl_listener {
	struct hl_listener *next;
	hl_sub *sub;
	hl_listen_fn fn;
	void (*done)(void *arg);
	void (*active)(void *arg); /* NULL, or: the subscription became
	                              active (hl__pubsub_listen_ex) */
	void *arg;
	int gone; /* unlistened: answers until Redis confirmed it */
};

/* Free the listeners of s that went (caller holds wait_mu). */
static void listeners_prune(hl_sub *s, int all)
{
	hl_listener **p = &s->listeners;
	while (*p) {
		hl_listener *l = *p;
		if (!l->gone && !all) {
			p = &l->next;
			continue;
		}
		*p = l->next;
		if (l->done)
			l->done(l->arg);
		free(l);
	}
}

int hl__pubsub_listen(hl_listener **out, hl_client *c, const void *channel,
                      size_t len, hl_listen_fn fn, void (*done)(void *arg),
                      void *arg)
{
	return hl__pubsub_listen_ex(out, c, channel, len, fn, NULL, done, arg);
}

int hl__pubsub_listen_ex(hl_listener **out, hl_client *c, const void *channel,
                         size_t len, hl_listen_fn fn, void (*active)(void *arg),
                         void (*done)(void *arg), void *arg)
{
	hl_listener *l = calloc(1, sizeof(*l));
	hl_sub *s;
	if (!l)
		return hl__fail(HL_ENOMEM, "out of memory");
	l->fn = fn;
	l->active = active;
	l->done = done;
	l->arg = arg;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, channel, len);
	if (!s) {
		s = calloc(1, sizeof(*s) + len);
		if (s) {
			s->len = len;
			memcpy(s->channel, channel, len);
		}
		if (!s || hl__map_put(&c->subs, s->channel, len, s) != 0) {
			pthread_mutex_unlock(&c->wait_mu);
			free(s);
			free(l);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
	}
	/* One answer per message: a listener that went, still answering
	 * while its unsubscribe was on its way, stops now. */
	listeners_prune(s, 0);
	l->sub = s;
	l->next = s->listeners;
	s->listeners = l;
	s->no_linger = 0;
	if (s->refs++ == 0)
		hl__pubsub_kick(c);
	if (active && s->state == HL_SUB_ACTIVE)
		active(arg); /* active already (another listener's) */
	pthread_mutex_unlock(&c->wait_mu);
	*out = l;
	return HL_OK;
}

void hl__pubsub_unlisten(hl_client *c, hl_listener *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&c->wait_mu);
	hl__pubsub_unlisten_locked(c, l);
	pthread_mutex_unlock(&c->wait_mu);
}

void hl__pubsub_unlisten_locked(hl_client *c, hl_listener *l)
{
	hl_sub *s;
	if (!l)
		return;
	s = l->sub;
	l->gone = 1;
	if (--s->refs == 0) {
		s->idle_since = hl__now_ms();
		s->no_linger = 1;
		if (s->state == HL_SUB_NONE)
			listeners_prune(s, 0);
		hl__pubsub_kick(c);
	}
}

int hl__pubsub_listen_wait(hl_client *c, const void *channel, size_t len,
                           const hl_bound *b)
{
	int rc;
	for (;;) {
		uint64_t z, a;
		if (hl__pubsub_active(c, channel, len, &z, &a))
			return HL_OK;
		if ((rc = hl__bound_check(b)) != HL_OK)
			return rc;
		if ((rc = hl__pause(c, 5, b)) != HL_OK)
			return rc;
	}
}

/* How long an active subscription nobody waits on stays, and how many may
 * (see subs_sync()). */
#define HL_SUB_LINGER_MS  1000
#define HL_SUB_LINGER_MAX 256

/* ---- the subscriber's connections ---------------------------------------
 * One per node: in a cluster with sharded pub/sub a channel is subscribed
 * on the node that serves its slot (SSUBSCRIBE); elsewhere there is one,
 * to the master. Each keeps its own health check. */
struct hl_subconn {
	hl_addr node;
	hl_conn *conn;         /* NULL: not connected */
	uint64_t epoch;        /* the topology epoch it was made in */
	int64_t ping_sent;     /* an unanswered PING (-1: none) */
	int64_t pending_since; /* the oldest unconfirmed SUBSCRIBE */
	int64_t retry_at;      /* when to connect again (-1: now) */
	int attempt;
	/* A blocking waiter that reads this connection itself while it waits
	 * (hl__pubsub_lead; NULL: none), and what wakes it. Meanwhile the
	 * subscriber thread does not poll the connection for reading. */
	const void *leader;
	const hl_notify *leader_wake;
};

#define HL_MAX_SUBCONNS 64

static int sharded(hl_client *c)
{
	return strcmp(hl__router_publish(c), "SPUBLISH") == 0;
}

/* The subscriber connection for node a (made if new); -1 if full. Caller
 * holds wait_mu. */
static int subconn_for(hl_client *c, const hl_addr *a, uint64_t epoch)
{
	int i;
	for (i = 0; i < c->nsubconns; i++)
		if (hl__addr_eq(&c->subconns[i].node, a))
			return i;
	if (!c->subconns) {
		c->subconns = calloc(HL_MAX_SUBCONNS, sizeof(*c->subconns));
		if (!c->subconns)
			return -1;
	}
	if (c->nsubconns == HL_MAX_SUBCONNS)
		return -1;
	i = c->nsubconns++;
	memset(&c->subconns[i], 0, sizeof(c->subconns[i]));
	c->subconns[i].node = *a;
	c->subconns[i].epoch = epoch;
	c->subconns[i].ping_sent = -1;
	c->subconns[i].pending_since = -1;
	c->subconns[i].retry_at = -1;
	return i;
}

/* The subscriptions on connection k are gone with it (k < 0: all of
 * them): to be made again, and every waiter of theirs retries at once.
 * Caller holds wait_mu. */
static void subs_reset(hl_client *c, int k)
{
	size_t i;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e = c->subs.buckets[i], *next;
		for (; e; e = next) {
			hl_sub *s = e->value;
			next = e->next;
			if (k >= 0 && s->conn != k + 1)
				continue;
			s->state = HL_SUB_NONE;
			s->conn = 0;
			listeners_prune(s, 0);
			hl__pubsub_wake(s);
		}
	}
}

/* Drop connection k (broken, or of an older topology). Caller holds
 * wait_mu. */
static void subconn_drop(hl_client *c, int k)
{
	struct hl_subconn *sc = &c->subconns[k];
	if (sc->epoch == hl__router_epoch(c)) /* broken, not moved */
		hl__obs_conn_broke(c, &sc->node,
		                   "the subscriber connection failed or "
		                   "stopped answering");
	hl__conn_free(sc->conn);
	sc->conn = NULL;
	sc->ping_sent = sc->pending_since = -1;
	if (sc->leader) /* it polls a descriptor that is gone */
		hl__notify_set(sc->leader_wake);
	sc->leader = NULL;
	subs_reset(c, k);
}

/* Where channel s is to be subscribed: its slot's node in a sharded
 * cluster, else the master. */
static int sub_node(hl_client *c, const hl_sub *s, hl_addr *a, uint64_t *e)
{
	/* No I/O here: the caller holds wait_mu. A slot not in the map
	 * makes the loop load it, without wait_mu. */
	if (c->conf.url.topology == HL_TOPO_CLUSTER) {
		if (hl__router_node_cached(c, s->channel, s->len, a, e) == 0)
			return HL_OK;
		c->sub_map_stale = 1;
		return HL_EREDIS;
	}
	hl__router_master(c, a, e);
	return HL_OK;
}

/* The earlier of two deadlines (-1: none). */
static int64_t earlier(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* Queue (S)SUBSCRIBE/(S)UNSUBSCRIBE for the difference between wanted and
 * active, on the right connection; free subscriptions nobody wants any
 * more. *wanted = subscriptions someone waits on; *wake: the earliest time
 * a lingering one is due to go (-1: none). Caller holds wait_mu.
 *
 * An active subscription nobody waits on any more stays for
 * HL_SUB_LINGER_MS (at most HL_SUB_LINGER_MAX of them): a process that took
 * a contended lock usually waits for it again soon, and a fair lock's
 * waiter waits on a channel of its own at every turn. Waiting on a
 * lingering subscription needs no SUBSCRIBE, nor its confirmation, nor the
 * UNSUBSCRIBE after. Its messages meanwhile wake nobody. */
static void subs_sync(hl_client *c, int *wanted, int64_t *wake)
{
	size_t i;
	int sh = sharded(c), lingering = 0;
	int64_t now = hl__now_ms();
	*wanted = 0;
	*wake = -1;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e = c->subs.buckets[i], *next;
		for (; e; e = next) {
			hl_sub *s = e->value;
			const char *argv[2];
			size_t lens[2];
			int k;
			next = e->next;
			if (s->refs > 0)
				(*wanted)++;
			if (s->refs > 0 && s->state == HL_SUB_NONE) {
				hl_addr a;
				uint64_t ep = 0;
				if (sub_node(c, s, &a, &ep) != HL_OK)
					continue;
				k = subconn_for(c, &a, ep);
				if (k < 0 || !c->subconns[k].conn)
					continue; /* once connected */
				argv[0] = sh ? "SSUBSCRIBE" : "SUBSCRIBE";
				s->state = HL_SUB_PENDING;
				s->conn = k + 1;
				if (c->subconns[k].pending_since < 0)
					c->subconns[k].pending_since =
					        hl__now_ms();
			} else if (s->refs == 0 && s->state == HL_SUB_ACTIVE) {
				k = s->conn - 1;
				if (k < 0 || !c->subconns[k].conn) {
					s->state = HL_SUB_NONE;
					continue;
				}
				if (!s->no_linger &&
				    now < s->idle_since + HL_SUB_LINGER_MS &&
				    lingering < HL_SUB_LINGER_MAX &&
				    !atomic_load(&c->closing)) {
					lingering++;
					*wake = earlier(
					        *wake,
					        s->idle_since +
					                HL_SUB_LINGER_MS);
					continue;
				}
				argv[0] = sh ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
				s->state = HL_SUB_UNSUB;
			} else if (s->refs == 0 && s->state == HL_SUB_NONE) {
				listeners_prune(s, 1);
				hl__map_del(&c->subs, s->channel, s->len);
				free(s);
				continue;
			} else {
				continue;
			}
			lens[0] = strlen(argv[0]);
			argv[1] = s->channel;
			lens[1] = s->len;
			hl__conn_append(c->subconns[k].conn, 2, argv, lens);
		}
	}
}

/* Any subscription still waiting for Redis's confirmation on k? */
static int has_pending(hl_client *c, int k)
{
	size_t i;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->subs.buckets[i]; e; e = e->next) {
			hl_sub *s = e->value;
			if (s->conn == k + 1 && s->state == HL_SUB_PENDING)
				return 1;
		}
	}
	return 0;
}

/* Does some wanted subscription need connection k's node? */
static int subconn_wanted(hl_client *c, int k)
{
	size_t i;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->subs.buckets[i]; e; e = e->next) {
			hl_sub *s = e->value;
			hl_addr a;
			uint64_t ep;
			if (s->refs == 0)
				continue;
			if (s->conn == k + 1)
				return 1;
			if (s->state == HL_SUB_NONE &&
			    sub_node(c, s, &a, &ep) == HL_OK &&
			    hl__addr_eq(&a, &c->subconns[k].node))
				return 1;
		}
	}
	return 0;
}

/* Returns 1 for the PONG of our health check. Caller holds wait_mu. */
static int handle_reply(hl_client *c, int k, hl_reply *r)
{
	hl_sub *s;
	const hl_reply *kind, *chan;
	const char *kd;
	if (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) < 2)
		return 0;
	kind = hl__reply_at(r, 0);
	chan = hl__reply_at(r, 1);
	if (hl__reply_type(kind) != HL_REPLY_STRING ||
	    hl__reply_type(chan) != HL_REPLY_STRING)
		return 0;
	kd = hl__reply_str(kind);
	if (strcmp(kd, "pong") == 0)
		return 1;
	/* the sharded kinds: smessage, ssubscribe, sunsubscribe (but not
	 * "subscribe" itself) */
	if (strcmp(kd, "smessage") == 0 || strcmp(kd, "ssubscribe") == 0 ||
	    strcmp(kd, "sunsubscribe") == 0)
		kd++;
	s = hl__map_get(&c->subs, hl__reply_str(chan),
	                (size_t)hl__reply_strlen(chan));
	if (!s || s->conn != k + 1)
		return 0;
	if (strcmp(kd, "message") == 0) {
		const hl_reply *m =
		        hl__reply_len(r) > 2 ? hl__reply_at(r, 2) : NULL;
		hl_listener *l;
		if (m && hl__reply_type(m) == HL_REPLY_STRING &&
		    strcmp(hl__reply_str(m), "0") == 0)
			s->zero_gen++;
		if (m && hl__reply_type(m) == HL_REPLY_STRING)
			hl__pubsub_message(s, hl__reply_str(m),
			                   (size_t)hl__reply_strlen(m));
		else
			hl__pubsub_wake(s);
		if (m && hl__reply_type(m) == HL_REPLY_STRING)
			for (l = s->listeners; l; l = l->next)
				l->fn(l->arg, hl__reply_str(m),
				      (size_t)hl__reply_strlen(m));
	} else if (strcmp(kd, "subscribe") == 0) {
		if (s->state == HL_SUB_PENDING) {
			hl_listener *l;
			s->state = HL_SUB_ACTIVE;
			s->active_gen++;
			/* Waiters retry now that no message can be missed. */
			hl__pubsub_wake(s);
			for (l = s->listeners; l; l = l->next)
				if (l->active && !l->gone)
					l->active(l->arg);
		}
	} else if (strcmp(kd, "unsubscribe") == 0) {
		/* Ours, or the server's: a slot that moved to another node
		 * unsubscribes its channels; subscribe them again there. */
		if (s->state != HL_SUB_UNSUB)
			hl__pubsub_wake(s);
		s->state = HL_SUB_NONE;
		s->conn = 0;
		listeners_prune(s, 0);
	}
	return 0;
}

/* Read what connection k has and handle each reply: messages wake their
 * waiters. The subscriber thread, or a waiter that leads k. Caller holds
 * wait_mu. */
static void sub_read(hl_client *c, int k)
{
	struct hl_subconn *sc = &c->subconns[k];
	hl_reply *reply = NULL;
	if (hl__conn_read_some(sc->conn) != HL_OK) {
		subconn_drop(c, k);
		return;
	}
	for (;;) {
		if (hl__conn_next_reply(sc->conn, &reply) != HL_OK) {
			subconn_drop(c, k);
			return;
		}
		if (!reply)
			return;
		if (handle_reply(c, k, reply))
			sc->ping_sent = -1;
		hl__reply_free(reply);
	}
}

int hl__pubsub_lead(hl_client *c, const hl_sub *s, const void *waiter,
                    const hl_notify *n, int *fd)
{
	struct hl_subconn *sc;
	int k = s->conn - 1;
	/* (TLS too: a read drains what OpenSSL decrypted, as the
	 * subscriber thread's does) */
	if (k < 0 || k >= c->nsubconns)
		return -1;
	sc = &c->subconns[k];
	if (!sc->conn || sc->leader)
		return -1;
	sc->leader = waiter;
	sc->leader_wake = n;
	*fd = hl__conn_fd(sc->conn);
	return k;
}

void hl__pubsub_unlead(hl_client *c, int k, const void *waiter)
{
	struct hl_subconn *sc = &c->subconns[k];
	uint64_t before;
	if (k >= c->nsubconns || sc->leader != waiter)
		return; /* dropped meanwhile: the thread has it again */
	sc->leader = NULL;
	/* whatever woke it: what came meanwhile is read now (the subscriber
	 * thread left it), and a socket that has nothing answers at once */
	if (sc->conn) {
		before = hl__conn_reads(sc->conn);
		sub_read(c, k);
		if (sc->conn && hl__conn_reads(sc->conn) != before)
			hl__stat_add(c, HL_STAT_WAKEUPS_READ_BY_WAITER, 1);
	}
	/* the thread polls it again from its next turn */
	hl__pubsub_kick(c);
}

/*
 * The subscriber loop. Health: a connection can die silently (a network
 * that drops everything sends no reset), and a dead subscriber loses
 * wake-ups, so while anyone waits each connection must keep proving itself
 * alive:
 * - Redis must confirm each SUBSCRIBE within subscription_timeout;
 * - after ping_interval of silence it is sent a PING, whose PONG must come
 *   within command_timeout.
 * Otherwise the connection is made anew, its channels are subscribed again
 * and their waiters retry at once. A change of topology (a failover, a new
 * slot map) does the same for every connection.
 */
static void *sub_main(void *arg)
{
	hl_client *c = arg;
	hl_bound b;
	struct pollfd pfd[1 + HL_MAX_SUBCONNS];
	hl__bound_init(&b, c, -1, NULL, 0);
	hl__thread_name("hl-subscriber");
	while (!atomic_load(&c->closing)) {
		int wanted = 0, k, n, timeout = -1, reload;
		int64_t now, wake = -1;
		uint64_t epoch = hl__router_epoch(c);

		pthread_mutex_lock(&c->wait_mu);
		/* connections of an older topology go */
		for (k = 0; k < c->nsubconns; k++)
			if (c->subconns[k].conn &&
			    c->subconns[k].epoch != epoch)
				subconn_drop(c, k);
		subs_sync(c, &wanted, &wake);
		now = hl__now_ms();
		for (k = 0; k < c->nsubconns; k++) {
			struct hl_subconn *sc = &c->subconns[k];
			int wrote;
			if (!sc->conn) {
				hl_conn *conn = NULL;
				uint64_t e = epoch;
				int rc;
				/* Connect only when someone waits: a process
				 * that never contends opens none. */
				if (!subconn_wanted(c, k) ||
				    (sc->retry_at >= 0 && now < sc->retry_at))
					continue;
				pthread_mutex_unlock(&c->wait_mu);
				if (c->conf.url.topology == HL_TOPO_CLUSTER)
					rc = hl__router_connect(c, &sc->node,
					                        &conn, &b);
				else
					rc = hl__router_connect_master(c, &conn,
					                               &e, &b);
				pthread_mutex_lock(&c->wait_mu);
				sc = &c->subconns[k];
				if (rc == HL_OK) {
					sc->conn = conn;
					sc->epoch = e;
					sc->attempt = 0;
					sc->retry_at = -1;
					sc->ping_sent = sc->pending_since = -1;
				} else {
					sc->retry_at =
					        now +
					        hl__jitter_delay(
					                c->conf.retry_delay_ms,
					                sc->attempt++);
				}
				wake = 0; /* subscribe at once */
				continue;
			}
			if (!has_pending(c, k))
				sc->pending_since = -1;
			if (c->conf.ping_interval_ms > 0 && sc->ping_sent < 0 &&
			    subconn_wanted(c, k) &&
			    now - hl__conn_last_read(sc->conn) >=
			            c->conf.ping_interval_ms) {
				const char *ping = "PING";
				size_t plen = 4;
				if (hl__conn_append(sc->conn, 1, &ping,
				                    &plen) == HL_OK)
					sc->ping_sent = now;
			}
			if (hl__conn_write_some(sc->conn, &wrote) != HL_OK ||
			    (sc->ping_sent >= 0 &&
			     now - sc->ping_sent >
			             c->conf.command_timeout_ms) ||
			    (sc->pending_since >= 0 &&
			     now - sc->pending_since >
			             c->conf.subscription_timeout_ms)) {
				/* broken, no PONG, or no confirmation */
				subconn_drop(c, k);
				wake = 0;
				continue;
			}
			if (sc->ping_sent >= 0)
				wake = earlier(
				        wake,
				        sc->ping_sent +
				                c->conf.command_timeout_ms + 1);
			else if (wanted && c->conf.ping_interval_ms > 0)
				wake = earlier(
				        wake, hl__conn_last_read(sc->conn) +
				                      c->conf.ping_interval_ms);
			if (sc->pending_since >= 0)
				wake = earlier(
				        wake,
				        sc->pending_since +
				                c->conf.subscription_timeout_ms +
				                1);
		}
		for (k = 0; k < c->nsubconns; k++)
			if (!c->subconns[k].conn &&
			    c->subconns[k].retry_at >= 0 &&
			    subconn_wanted(c, k))
				wake = earlier(wake, c->subconns[k].retry_at);
		n = 0;
		pfd[n].fd = c->sub_wake.rfd;
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
		for (k = 0; k < c->nsubconns; k++) {
			hl_conn *conn = c->subconns[k].conn;
			int out = conn && hl__conn_pending_output(conn);
			/* a leader reads it: only its writes are ours */
			int in = !c->subconns[k].leader;
			pfd[n].fd =
			        conn && (in || out) ? hl__conn_fd(conn) : -1;
			pfd[n].events = (short)((in ? POLLIN : 0) |
			                        (out ? POLLOUT : 0));
			pfd[n++].revents = 0;
		}
		reload = c->sub_map_stale;
		c->sub_map_stale = 0;
		if (reload) /* look again soon */
			wake = earlier(wake, hl__now_ms() + 100);
		pthread_mutex_unlock(&c->wait_mu);
		/* a channel's slot is not in the map: load it, without
		 * wait_mu */
		if (reload)
			hl__router_suspect(c, &b);
		if (wake >= 0) {
			int64_t d = wake - hl__now_ms();
			timeout = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN)
			hl__notify_clear(&c->sub_wake);
		pthread_mutex_lock(&c->wait_mu);
		/* a connection a waiter leads is its to read (it polled it
		 * too: it is awake) */
		for (k = 0; k + 1 < n && k < c->nsubconns; k++)
			if (c->subconns[k].conn && !c->subconns[k].leader &&
			    (pfd[k + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				sub_read(c, k);
		pthread_mutex_unlock(&c->wait_mu);
	}
	return NULL;
}

void hl__pubsub_drop_inherited(hl_client *c)
{
	int k;
	for (k = 0; k < c->nsubconns; k++) {
		hl__conn_free(c->subconns[k].conn);
		c->subconns[k].conn = NULL;
	}
}

int hl__pubsub_start(hl_client *c)
{
	int rc;
	if (hl__notify_open(&c->sub_wake, 0) < 0)
		return hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		                strerror(errno));
	rc = pthread_create(&c->sub_thread, NULL, sub_main, c);
	if (rc != 0) {
		hl__notify_close(&c->sub_wake);
		return hl__fail(HL_ESYSTEM,
		                "starting the subscriber thread: %s",
		                strerror(rc));
	}
	return HL_OK;
}

void hl__pubsub_stop(hl_client *c)
{
	size_t i;
	hl__pubsub_kick(c);
	pthread_join(c->sub_thread, NULL);
	for (i = 0; i < (size_t)c->nsubconns; i++)
		hl__conn_free(c->subconns[i].conn);
	free(c->subconns);
	c->subconns = NULL;
	c->nsubconns = 0;
	hl__notify_close(&c->sub_wake);
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->subs.buckets[i]; e; e = e->next) {
			listeners_prune(e->value, 1);
			free(e->value);
		}
	}
	hl__map_clear(&c->subs);
	hl__map_init(&c->subs);
}
