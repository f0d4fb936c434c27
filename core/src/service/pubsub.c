/*
 * The subscriber: one connection and one thread per client. Waiters ask for
 * a channel (reference counted); the thread keeps Redis's subscriptions in
 * line with what is wanted and wakes the waiters of a channel when a
 * message arrives, when the subscription becomes active, and after a
 * reconnect (so nobody sleeps on a message lost while disconnected).
 */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

void hl__pubsub_kick(hl_client *c)
{
	uint64_t one = 1;
	ssize_t n;
	if (c->sub_wake_fd < 0)
		return;
	do
		n = write(c->sub_wake_fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

void hl__pubsub_wake(hl_sub *s)
{
	hl_dlink *l;
	s->gen++;
	for (l = s->waiters.head; l; l = l->next)
		pthread_cond_signal(
		        &HL_CONTAINER(l, hl_waiter, sub_link)->cond);
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

void hl__pubsub_wake_all(hl_client *c)
{
	hl_dlink *l;
	pthread_mutex_lock(&c->wait_mu);
	c->interrupt_gen++;
	for (l = c->waiters.head; l; l = l->next)
		pthread_cond_signal(
		        &HL_CONTAINER(l, hl_waiter, all_link)->cond);
	pthread_mutex_unlock(&c->wait_mu);
}

/* Every subscription is gone with the connection: mark them to be made
 * again, drop unwanted ones, and wake all waiters to retry at once. */
static void subs_reset(hl_client *c)
{
	size_t i;
	pthread_mutex_lock(&c->wait_mu);
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e = c->subs.buckets[i], *next;
		for (; e; e = next) {
			hl_sub *s = e->value;
			next = e->next;
			s->state = HL_SUB_NONE;
			hl__pubsub_wake(s);
		}
	}
	pthread_mutex_unlock(&c->wait_mu);
}

/* Queue SUBSCRIBE/UNSUBSCRIBE for the difference between wanted and
 * active; free subscriptions nobody wants any more. Returns the number of
 * commands queued; *wanted = subscriptions someone waits on, *pending =
 * those Redis has not confirmed yet. Caller holds wait_mu. */
static int subs_sync(hl_client *c, hl_conn *conn, int *wanted, int *pending)
{
	size_t i;
	int n = 0;
	*wanted = *pending = 0;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e = c->subs.buckets[i], *next;
		for (; e; e = next) {
			hl_sub *s = e->value;
			const char *argv[2];
			size_t lens[2];
			next = e->next;
			if (s->refs > 0)
				(*wanted)++;
			if (s->refs > 0 && s->state == HL_SUB_NONE) {
				if (!conn)
					continue;
				argv[0] = "SUBSCRIBE";
				lens[0] = 9;
				s->state = HL_SUB_PENDING;
			} else if (s->refs == 0 && s->state == HL_SUB_ACTIVE) {
				if (!conn)
					continue;
				argv[0] = "UNSUBSCRIBE";
				lens[0] = 11;
				s->state = HL_SUB_UNSUB;
			} else if (s->refs == 0 && s->state == HL_SUB_NONE) {
				hl__map_del(&c->subs, s->channel, s->len);
				free(s);
				continue;
			} else {
				if (s->state == HL_SUB_PENDING)
					(*pending)++;
				continue;
			}
			argv[1] = s->channel;
			lens[1] = s->len;
			if (hl__conn_append(conn, 2, argv, lens) == HL_OK) {
				n++;
				if (s->state == HL_SUB_PENDING)
					(*pending)++;
			}
		}
	}
	return n;
}

/* Returns 1 for the PONG of our health check. */
static int handle_reply(hl_client *c, hl_reply *r)
{
	hl_sub *s;
	const hl_reply *kind, *chan;
	if (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) < 2)
		return 0;
	kind = hl__reply_at(r, 0);
	chan = hl__reply_at(r, 1);
	if (hl__reply_type(kind) != HL_REPLY_STRING ||
	    hl__reply_type(chan) != HL_REPLY_STRING)
		return 0;
	if (strcmp(hl__reply_str(kind), "pong") == 0)
		return 1;
	pthread_mutex_lock(&c->wait_mu);
	s = hl__map_get(&c->subs, hl__reply_str(chan),
	                (size_t)hl__reply_strlen(chan));
	if (s) {
		if (strcmp(hl__reply_str(kind), "message") == 0) {
			hl__pubsub_wake(s);
		} else if (strcmp(hl__reply_str(kind), "subscribe") == 0) {
			if (s->state == HL_SUB_PENDING) {
				s->state = HL_SUB_ACTIVE;
				/* Waiters retry now that no message can be
				 * missed. */
				hl__pubsub_wake(s);
			}
		} else if (strcmp(hl__reply_str(kind), "unsubscribe") == 0) {
			if (s->state == HL_SUB_UNSUB)
				s->state = HL_SUB_NONE;
		}
	}
	pthread_mutex_unlock(&c->wait_mu);
	return 0;
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

/*
 * The subscriber loop. Health: a connection can die silently (a network
 * that drops everything sends no reset), and a dead subscriber loses
 * wake-ups, so while anyone waits it must keep proving itself alive:
 * - Redis must confirm each SUBSCRIBE within subscription_timeout;
 * - after ping_interval of silence it is sent a PING, whose PONG must come
 *   within command_timeout.
 * Otherwise the connection is made anew, everything is subscribed again and
 * every waiter retries at once.
 */
static void *sub_main(void *arg)
{
	hl_client *c = arg;
	int attempt = 0;
	int64_t ping_sent = -1, pending_since = -1, retry_at = -1;
	uint64_t epoch = 0; /* the topology epoch of the connection */
	hl_bound b;
	hl__bound_init(&b, c, -1, NULL, 0);
	pthread_setname_np(pthread_self(), "hl-subscriber");
	while (!atomic_load(&c->closing)) {
		struct pollfd pfd[2];
		hl_conn *conn = c->sub_conn;
		int wanted = 0, pending = 0, wrote, timeout = -1;
		int64_t now, wake = -1;

		pthread_mutex_lock(&c->wait_mu);
		subs_sync(c, conn, &wanted, &pending);
		pthread_mutex_unlock(&c->wait_mu);
		now = hl__now_ms();

		if (!conn && wanted && (retry_at < 0 || now >= retry_at)) {
			/* Connect only when someone waits: a process that
			 * never contends never opens this connection. */
			if (hl__router_connect_master(c, &conn, &epoch, &b) ==
			    HL_OK) {
				attempt = 0;
				retry_at = -1;
				ping_sent = pending_since = -1;
				pthread_mutex_lock(&c->wait_mu);
				c->sub_conn = conn;
				pthread_mutex_unlock(&c->wait_mu);
				continue;
			}
			conn = NULL;
			retry_at =
			        now + hl__jitter_delay(c->conf.retry_delay_ms,
			                               attempt++);
		}
		if (!conn && wanted)
			wake = retry_at;
		if (conn && hl__router_epoch(c) != epoch)
			goto broken; /* the master changed: follow it */
		if (conn) {
			if (pending == 0)
				pending_since = -1;
			else if (pending_since < 0)
				pending_since = now;
			if (wanted && c->conf.ping_interval_ms > 0 &&
			    ping_sent < 0 &&
			    now - hl__conn_last_read(conn) >=
			            c->conf.ping_interval_ms) {
				const char *ping = "PING";
				size_t plen = 4;
				if (hl__conn_append(conn, 1, &ping, &plen) ==
				    HL_OK)
					ping_sent = now;
			}
			if (hl__conn_write_some(conn, &wrote) != HL_OK) {
				goto broken;
			}
			if (ping_sent >= 0 &&
			    now - ping_sent > c->conf.command_timeout_ms) {
				goto broken;
			}
			if (pending_since >= 0 &&
			    now - pending_since >
			            c->conf.subscription_timeout_ms) {
				goto broken;
			}
			if (ping_sent >= 0)
				wake = earlier(
				        wake,
				        ping_sent + c->conf.command_timeout_ms +
				                1);
			else if (wanted && c->conf.ping_interval_ms > 0)
				wake = earlier(
				        wake, hl__conn_last_read(conn) +
				                      c->conf.ping_interval_ms);
			if (pending_since >= 0)
				wake = earlier(
				        wake,
				        pending_since +
				                c->conf.subscription_timeout_ms +
				                1);
		}
		if (wake >= 0) {
			int64_t d = wake - now;
			timeout = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d;
		}
		pfd[0].fd = c->sub_wake_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = conn ? hl__conn_fd(conn) : -1;
		pfd[1].events =
		        (short)(POLLIN |
		                (conn && hl__conn_pending_output(conn) ? POLLOUT
		                                                       : 0));
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			if (read(c->sub_wake_fd, &v, sizeof(v)) < 0) {
				/* nothing: the counter was already read */
			}
		}
		if (conn && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			hl_reply *reply = NULL;
			if (hl__conn_read_some(conn) != HL_OK) {
				goto broken;
			}
			for (;;) {
				if (hl__conn_next_reply(conn, &reply) !=
				    HL_OK) {
					goto broken;
				}
				if (!reply)
					break;
				if (handle_reply(c, reply))
					ping_sent = -1;
				hl__reply_free(reply);
			}
		}
		continue;
	broken:
		pthread_mutex_lock(&c->wait_mu);
		c->sub_conn = NULL;
		pthread_mutex_unlock(&c->wait_mu);
		hl__conn_free(conn);
		ping_sent = pending_since = -1;
		subs_reset(c);
	}
	return NULL;
}

int hl__pubsub_start(hl_client *c)
{
	int rc;
	c->sub_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->sub_wake_fd < 0)
		return hl__fail(HL_ESYSTEM, "eventfd: %s", strerror(errno));
	rc = pthread_create(&c->sub_thread, NULL, sub_main, c);
	if (rc != 0) {
		close(c->sub_wake_fd);
		c->sub_wake_fd = -1;
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
	hl__conn_free(c->sub_conn);
	c->sub_conn = NULL;
	close(c->sub_wake_fd);
	c->sub_wake_fd = -1;
	for (i = 0; i < c->subs.nbuckets; i++) {
		hl_map_entry *e;
		for (e = c->subs.buckets[i]; e; e = e->next)
			free(e->value);
	}
	hl__map_clear(&c->subs);
	hl__map_init(&c->subs);
}
