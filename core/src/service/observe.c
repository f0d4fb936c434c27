/*
 * Observability: the client's counters and its event queue.
 *
 * Counters are atomics bumped by one-line hooks where each thing happens
 * (lock.c, watchdog.c, router.c, pubsub.c, cluster.c). Events are records
 * the library's threads queue (bounded: the oldest is dropped when full)
 * and the program takes on a thread of its own: the library never calls
 * user code. A descriptor (base/sys.h) is readable while the queue is not
 * empty, and for good once the client is closed, so a drainer waiting on it
 * always wakes and learns (HL_ECLOSED from hl_client_next_event) when to stop.
 *
 * The hooks never fail, never take another client mutex (the queue's is a
 * leaf), and never touch the calling thread's error detail: they run in
 * the middle of calls whose own failure the user is about to read.
 */
#include "internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hl_event {
	struct hl_event *next;
	int type;
	int status;
	int64_t time_ms; /* CLOCK_REALTIME */
	int64_t mono_ms; /* CLOCK_MONOTONIC */
	char *name;      /* NULL: no lock */
	size_t name_len;
	char *message;
	char owner[HL_OWNER_MAX];
	char node[300];
	char data[]; /* name (+ NUL), then message */
};

/* ---- the queue ---------------------------------------------------------- */

void hl__obs_init(hl_client *c)
{
	int i;
	for (i = 0; i < HL_STAT_COUNT; i++)
		atomic_init(&c->obs.counters[i], 0);
	pthread_mutex_init(&c->obs.mu, NULL);
	c->obs.head = c->obs.tail = NULL;
	c->obs.queued = 0;
	hl__notify_none(&c->obs.fd);
	c->obs.closed = 0;
	c->obs.nnodes = 0;
	c->obs.masters = NULL;
	c->obs.nmasters = 0;
	c->obs.masters_known = 0;
}

/* Make the fd readable (it was not). Caller holds obs.mu. */
static void fd_raise(hl_obs *o)
{
	hl__notify_set(&o->fd);
}

/* Make it unreadable. Caller holds obs.mu. */
static void fd_lower(hl_obs *o)
{
	hl__notify_clear(&o->fd);
}

void hl__obs_close(hl_client *c)
{
	pthread_mutex_lock(&c->obs.mu);
	if (!c->obs.closed) {
		c->obs.closed = 1;
		if (c->obs.queued == 0)
			fd_raise(&c->obs);
	}
	pthread_mutex_unlock(&c->obs.mu);
}

void hl__obs_free(hl_client *c, int forked)
{
	hl_event *e = c->obs.head, *next;
	for (; e; e = next) {
		next = e->next;
		free(e);
	}
	c->obs.head = c->obs.tail = NULL;
	c->obs.queued = 0;
	hl__notify_close(&c->obs.fd);
	free(c->obs.masters);
	c->obs.masters = NULL;
	c->obs.nmasters = 0;
	if (!forked)
		pthread_mutex_destroy(&c->obs.mu);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void queue(hl_client *c, hl_event *e)
{
	hl_obs *o = &c->obs;
	pthread_mutex_lock(&o->mu);
	if (o->tail)
		o->tail->next = e;
	else
		o->head = e;
	o->tail = e;
	if (o->queued++ == 0 && !o->closed)
		fd_raise(o);
	if (o->queued > HL_EVENT_QUEUE_MAX) {
		/* Drop the oldest: the newest say how things are now. The
		 * queue stays non-empty, so the fd stays readable. */
		hl_event *old = o->head;
		o->head = old->next;
		o->queued--;
		free(old);
		atomic_fetch_add(&o->counters[HL_STAT_EVENTS_DROPPED], 1);
	}
	pthread_mutex_unlock(&o->mu);
}

/* Queue an event. name: the lock (NULL: none); owner, node: NULL for none.
 * Out of memory: the event is lost and counted as dropped. */
static void emit(hl_client *c, int type, int status, const void *name,
                 size_t name_len, const char *owner, const hl_addr *node,
                 const char *fmt, ...) HL_PRINTF(8, 9);

static void emit(hl_client *c, int type, int status, const void *name,
                 size_t name_len, const char *owner, const hl_addr *node,
                 const char *fmt, ...)
{
	char msg[1024];
	size_t mlen, nlen = name ? name_len + 1 : 0;
	hl_event *e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mlen = strlen(msg);
	e = malloc(sizeof(*e) + nlen + mlen + 1);
	if (!e) {
		atomic_fetch_add(&c->obs.counters[HL_STAT_EVENTS_DROPPED], 1);
		return;
	}
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->status = status;
	e->time_ms = wall_ms();
	e->mono_ms = hl__now_ms();
	if (name) {
		e->name = e->data;
		e->name_len = name_len;
		memcpy(e->name, name, name_len);
		e->name[name_len] = '\0';
	}
	e->message = e->data + nlen;
	memcpy(e->message, msg, mlen + 1);
	if (owner)
		snprintf(e->owner, sizeof(e->owner), "%s", owner);
	if (node)
		hl__addr_str(node, e->node, sizeof(e->node));
	queue(c, e);
}

/* ---- counters ----------------------------------------------------------- */

void hl__stat_add(hl_client *c, enum hl_stat s, uint64_t n)
{
	atomic_fetch_add(&c->obs.counters[s], n);
}

void hl__obs_waited(hl_client *c, int64_t since_ms)
{
	int64_t took = hl__now_ms() - since_ms;
	atomic_fetch_add(&c->obs.counters[HL_STAT_ACQUIRE_WAITS], 1);
	atomic_fetch_add(&c->obs.counters[HL_STAT_WAIT_TIME_MS],
	                 (uint64_t)(took > 0 ? took : 0));
}

/* ---- holds -------------------------------------------------------------- */

/* The name of a hold: its key after the owner id and hold class. */
#define HOLD_NAME(h)                                                           \
	((h)->key + HL_HOLD_KEY_HDR), ((h)->key_len - HL_HOLD_KEY_HDR)

void hl__obs_lost(hl_client *c, hl_hold *h)
{
	char label[80];
	const char *why;
	int64_t margin = hl__loss_margin(c->conf.watchdog_ms);
	if (h->lost)
		return; /* counted once, when it was found */
	h->renew_failing = 0;
	atomic_fetch_add(&c->obs.counters[HL_STAT_LOSSES], 1);
	/* mark_lost is called by the clock (the loss deadline passed, or a
	 * fixed lease ended), by a renewal that found the key gone or another
	 * owner's, and by this client's force unlock; the hold's state tells
	 * which. */
	if (h->watchdog && h->count > 0 &&
	    hl__now_ms() >= h->confirmed_ms + c->conf.watchdog_ms - margin)
		why = "Redis did not confirm a renewal before the loss "
		      "deadline (the end of its last confirmed lease, less a "
		      "tenth of the watchdog timeout)";
	else if (h->watchdog)
		why = "the watchdog found it gone or held by another owner "
		      "(deleted, expired, taken over, or force-unlocked)";
	else if (h->lease_ms > 0 && h->count > 0 &&
	         hl__now_ms() >= h->expires_ms)
		why = "its fixed lease ended before it was released";
	else
		why = "it was force-unlocked through this client";
	emit(c, HL_EVENT_LOST, HL_ELOST, HOLD_NAME(h), h->owner, NULL,
	     "lock \"%s\" held by %s was lost: %s",
	     hl__printable(label, sizeof(label), HOLD_NAME(h)), h->owner, why);
}

void hl__obs_lost_at_release(hl_client *c, const hl_lock *lock,
                             const char *owner)
{
	char label[80];
	atomic_fetch_add(&c->obs.counters[HL_STAT_LOSSES], 1);
	emit(c, HL_EVENT_LOST, HL_ELOST, lock->name, lock->name_len, owner,
	     NULL,
	     "lock \"%s\" held by %s was lost: releasing it found that "
	     "Redis no longer had it (its lease ran out, Redis restarted or "
	     "lost it, or it was force-unlocked)",
	     hl__printable(label, sizeof(label), lock->name, lock->name_len),
	     owner);
}

void hl__obs_undo(hl_client *c, const hl_lock *lock, const char *owner,
                  int status, int64_t left_ms)
{
	char label[80];
	hl__printable(label, sizeof(label), lock->name, lock->name_len);
	if (status == HL_EINDOUBT)
		emit(c, HL_EVENT_UNDO, status, lock->name, lock->name_len,
		     owner, NULL,
		     "an acquire of lock \"%s\" by %s that its caller did "
		     "not get may have left the lock held in Redis, and taking "
		     "it back failed; it is retried in the background for at "
		     "most %lld ms (the lease ends it by then)",
		     label, owner, (long long)(left_ms > 0 ? left_ms : 0));
	else if (status == HL_OK)
		emit(c, HL_EVENT_UNDO, status, lock->name, lock->name_len,
		     owner, NULL,
		     "the acquire of lock \"%s\" by %s that its caller did "
		     "not get holds nothing any more: taken back in the "
		     "background, or superseded by the owner's own acquire or "
		     "release since",
		     label, owner);
	else
		emit(c, HL_EVENT_UNDO, status, lock->name, lock->name_len,
		     owner, NULL,
		     "the acquire of lock \"%s\" by %s that its caller did "
		     "not get could not be taken back before its lease would "
		     "end: its lease has ended it",
		     label, owner);
}

void hl__obs_renewed(hl_client *c, hl_hold *h)
{
	atomic_fetch_add(&c->obs.counters[HL_STAT_RENEWALS], 1);
	h->renew_failing = 0;
}

void hl__obs_renewal_failed(hl_client *c, hl_hold *h, int64_t left_ms)
{
	char label[80];
	const char *cause = hl_error_last();
	atomic_fetch_add(&c->obs.counters[HL_STAT_RENEWAL_FAILURES], 1);
	if (h->renew_failing++ > 0)
		return; /* told at the first failure in a row */
	emit(c, HL_EVENT_RENEWAL_FAILED, HL_EIO, HOLD_NAME(h), h->owner, NULL,
	     "renewing lock \"%s\" held by %s got no answer%s%s; it is "
	     "retried, and counts as lost if no renewal is confirmed within "
	     "%lld ms",
	     hl__printable(label, sizeof(label), HOLD_NAME(h)), h->owner,
	     cause[0] ? ": " : "", cause,
	     (long long)(left_ms > 0 ? left_ms : 0));
}

/* ---- connections and topology ------------------------------------------- */

/* The entry of node (made if new; the oldest reused when full). Caller
 * holds obs.mu. */
static struct hl_obs_node *node_entry(hl_obs *o, const hl_addr *node)
{
	int i;
	for (i = 0; i < o->nnodes; i++)
		if (hl__addr_eq(&o->nodes[i].node, node))
			return &o->nodes[i];
	if (o->nnodes == HL_OBS_NODES) {
		memmove(o->nodes, o->nodes + 1,
		        (HL_OBS_NODES - 1) * sizeof(o->nodes[0]));
		o->nnodes--;
	}
	i = o->nnodes++;
	memset(&o->nodes[i], 0, sizeof(o->nodes[i]));
	o->nodes[i].node = *node;
	return &o->nodes[i];
}

void hl__obs_conn_broke(hl_client *c, const hl_addr *node, const char *why)
{
	struct hl_obs_node *n;
	hl_addr m;
	if (!node) {
		hl__router_master(c, &m, NULL);
		node = &m;
	}
	if (!why)
		why = hl_error_last();
	pthread_mutex_lock(&c->obs.mu);
	n = node_entry(&c->obs, node);
	if (n->pending++ == 0)
		snprintf(n->why, sizeof(n->why), "%s",
		         why[0] ? why : "the connection failed");
	pthread_mutex_unlock(&c->obs.mu);
}

void hl__obs_conn_made(hl_client *c, const hl_addr *node)
{
	char why[200] = "";
	int i, reconnect = 0;
	hl_obs *o = &c->obs;
	pthread_mutex_lock(&o->mu);
	for (i = 0; i < o->nnodes; i++) {
		struct hl_obs_node *n = &o->nodes[i];
		if (n->pending > 0 && hl__addr_eq(&n->node, node)) {
			reconnect = 1;
			memcpy(why, n->why, sizeof(why));
			n->pending--;
			break;
		}
	}
	pthread_mutex_unlock(&o->mu);
	if (!reconnect)
		return;
	atomic_fetch_add(&o->counters[HL_STAT_RECONNECTS], 1);
	{
		char a[300];
		emit(c, HL_EVENT_RECONNECT, HL_EIO, NULL, 0, NULL, node,
		     "reconnected to %s after a connection to it broke: %s",
		     hl__addr_str(node, a, sizeof(a)), why);
	}
}

void hl__obs_fencing_off(hl_client *c, const hl_addr *node, const char *why)
{
	char a[300];
	emit(c, HL_EVENT_FENCING_OFF, HL_EREDIS, NULL, 0, NULL, node,
	     "fencing is off for this client: %s %s; a command whose reply "
	     "did not come in time may still run later (an acquire that "
	     "lands after its caller gave up holds the lock, unrenewed, "
	     "until its lease ends); allow CLIENT KILL and CLIENT INFO to "
	     "the user (ACL: +client|kill +client|info) to fence such "
	     "connections",
	     hl__addr_str(node, a, sizeof(a)), why);
}

void hl__obs_master(hl_client *c, const hl_addr *a)
{
	char buf[300];
	atomic_fetch_add(&c->obs.counters[HL_STAT_FAILOVERS], 1);
	emit(c, HL_EVENT_FAILOVER, HL_OK, NULL, 0, NULL, a,
	     "the master of \"%s\" is now %s, named by the sentinels",
	     c->conf.url.master_name ? c->conf.url.master_name : "",
	     hl__addr_str(a, buf, sizeof(buf)));
}

/* Index of a in the known masters, or -1. Caller holds obs.mu. */
static int master_index(const hl_obs *o, const hl_addr *a)
{
	int i;
	for (i = 0; i < o->nmasters; i++)
		if (hl__addr_eq(&o->masters[i], a))
			return i;
	return -1;
}

void hl__obs_cluster_map(hl_client *c, const struct hl_cnode *now, int n)
{
	hl_obs *o = &c->obs;
	hl_addr *next = malloc((size_t)(n > 0 ? n : 1) * sizeof(*next));
	hl_addr gone[8], added[8];
	int ngone = 0, nadded = 0, i, j, first;
	if (!next)
		return; /* the next map tries again */
	for (i = 0; i < n; i++)
		next[i] = now[i].addr;
	pthread_mutex_lock(&o->mu);
	first = !o->masters_known;
	if (!first) {
		/* replaced: masters gone from the map (a failover, or a node
		 * removed); the new ones name who took over */
		for (i = 0; i < o->nmasters; i++) {
			for (j = 0; j < n; j++)
				if (hl__addr_eq(&o->masters[i], &next[j]))
					break;
			if (j == n && ngone < 8)
				gone[ngone++] = o->masters[i];
		}
		for (j = 0; j < n; j++)
			if (master_index(o, &next[j]) < 0 && nadded < 8)
				added[nadded++] = next[j];
	}
	free(o->masters);
	o->masters = next;
	o->nmasters = n;
	o->masters_known = 1;
	pthread_mutex_unlock(&o->mu);
	for (i = 0; i < ngone; i++) {
		char a[300], b[300];
		atomic_fetch_add(&o->counters[HL_STAT_FAILOVERS], 1);
		if (i < nadded)
			emit(c, HL_EVENT_FAILOVER, HL_OK, NULL, 0, NULL,
			     &added[i],
			     "the cluster's master %s is gone from its slot "
			     "map, and %s is a new master (a replica "
			     "promoted)",
			     hl__addr_str(&gone[i], a, sizeof(a)),
			     hl__addr_str(&added[i], b, sizeof(b)));
		else
			emit(c, HL_EVENT_FAILOVER, HL_OK, NULL, 0, NULL, NULL,
			     "the cluster's master %s is gone from its slot "
			     "map (failed over, or removed)",
			     hl__addr_str(&gone[i], a, sizeof(a)));
	}
}

void hl__obs_cluster_moved(hl_client *c, unsigned from, const hl_addr *to)
{
	hl_obs *o = &c->obs;
	hl_addr old;
	int known, k, have_old = from < (unsigned)c->ncnodes;
	char a[300], b[300];
	if (have_old)
		old = c->cnodes[from].addr;
	pthread_mutex_lock(&o->mu);
	known = master_index(o, to) >= 0;
	if (!known) {
		/* to answers for a slot of old: old was replaced (a later map
		 * without it is then no second failover) */
		hl_addr *m = realloc(o->masters,
		                     (size_t)(o->nmasters + 1) * sizeof(*m));
		if (m) {
			o->masters = m;
			o->masters[o->nmasters++] = *to;
		}
		if (have_old && (k = master_index(o, &old)) >= 0)
			o->masters[k] = o->masters[--o->nmasters];
	}
	pthread_mutex_unlock(&o->mu);
	if (known)
		return;
	atomic_fetch_add(&o->counters[HL_STAT_FAILOVERS], 1);
	if (have_old)
		emit(c, HL_EVENT_FAILOVER, HL_OK, NULL, 0, NULL, to,
		     "%s answers for a slot of the cluster's master %s (a "
		     "replica promoted, or a node added), learnt from a "
		     "MOVED reply",
		     hl__addr_str(to, a, sizeof(a)),
		     hl__addr_str(&old, b, sizeof(b)));
	else
		emit(c, HL_EVENT_FAILOVER, HL_OK, NULL, 0, NULL, to,
		     "%s is a new master of the cluster, learnt from a MOVED "
		     "reply",
		     hl__addr_str(to, a, sizeof(a)));
}

/* ---- the public API ----------------------------------------------------- */

/* NULL and fork checks only: the counters and the queue outlive close. */
static int obs_enter(hl_client *c)
{
	if (!c)
		return hl__fail(HL_EINVAL, "client is NULL");
	if (c->fork_gen != atomic_load(&hl__fork_generation))
		return hl__fail(HL_EFORKED,
		                "this client was created by another process "
		                "(before fork()); create a new client in this "
		                "process");
	return HL_OK;
}

/* Bytes of hl_client_stats that a program built for version v has. */
static size_t stats_size(unsigned int v)
{
	switch (v) {
	case 1:
		return offsetof(hl_client_stats, waiting);
	case 2:
		return offsetof(hl_client_stats, wakeups_read_by_waiter);
	case 3:
		return sizeof(hl_client_stats);
	}
	return 0;
}

int hl_client_stats_get(hl_client_stats *out, hl_client *c)
{
	hl_client_stats s;
	size_t n;
	int rc;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	n = stats_size(out->version);
	if (n == 0)
		return hl__fail(HL_EINVAL,
		                "stats version %u is not supported (this "
		                "library knows versions 1 to %u); set "
		                "version = HL_CLIENT_STATS_VERSION",
		                out->version, HL_CLIENT_STATS_VERSION);
	if ((rc = obs_enter(c)) != HL_OK)
		return rc;
	memset(&s, 0, sizeof(s));
	s.version = out->version;
#define HL_GET_(field, id) s.field = atomic_load(&c->obs.counters[id])
	HL_GET_(acquisitions, HL_STAT_ACQUISITIONS);
	HL_GET_(acquire_waits, HL_STAT_ACQUIRE_WAITS);
	HL_GET_(wait_time_ms, HL_STAT_WAIT_TIME_MS);
	HL_GET_(releases, HL_STAT_RELEASES);
	HL_GET_(renewals, HL_STAT_RENEWALS);
	HL_GET_(renewal_failures, HL_STAT_RENEWAL_FAILURES);
	HL_GET_(losses, HL_STAT_LOSSES);
	HL_GET_(reconnects, HL_STAT_RECONNECTS);
	HL_GET_(failovers, HL_STAT_FAILOVERS);
	HL_GET_(events_dropped, HL_STAT_EVENTS_DROPPED);
	HL_GET_(waiting, HL_STAT_WAITING);
	HL_GET_(wakeups_read_by_waiter, HL_STAT_WAKEUPS_READ_BY_WAITER);
#undef HL_GET_
	/* an older struct is a prefix of this one */
	memcpy(out, &s, n);
	return HL_OK;
}

int hl_client_event_fd(int *out_fd, hl_client *c)
{
	hl_obs *o;
	int rc = HL_OK;
	if (!out_fd)
		return hl__fail(HL_EINVAL, "out_fd is NULL");
	if ((rc = obs_enter(c)) != HL_OK)
		return rc;
	o = &c->obs;
	pthread_mutex_lock(&o->mu);
	/* made on first use: a program that never asks pays nothing */
	if (o->fd.rfd < 0 &&
	    hl__notify_open(&o->fd, o->queued > 0 || o->closed) < 0)
		rc = hl__fail(HL_ESYSTEM, "%s: %s", hl__notify_kind(),
		              strerror(errno));
	if (rc == HL_OK)
		*out_fd = o->fd.rfd;
	pthread_mutex_unlock(&o->mu);
	return rc;
}

int hl_client_next_event(hl_event **out, hl_client *c)
{
	hl_obs *o;
	hl_event *e;
	int rc, closed;
	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if ((rc = obs_enter(c)) != HL_OK)
		return rc;
	o = &c->obs;
	pthread_mutex_lock(&o->mu);
	e = o->head;
	if (e) {
		o->head = e->next;
		if (!o->head)
			o->tail = NULL;
		e->next = NULL;
		/* the last one taken: unreadable, unless closed */
		if (--o->queued == 0 && !o->closed)
			fd_lower(o);
	}
	closed = o->closed;
	pthread_mutex_unlock(&o->mu);
	if (!e && closed)
		return hl__fail(HL_ECLOSED, "the client is closed and every "
		                            "event was taken");
	*out = e;
	return HL_OK;
}

void hl_event_free(hl_event *e)
{
	free(e);
}

int hl_event_type(const hl_event *e)
{
	return e ? e->type : 0;
}

const char *hl_event_type_name(int type)
{
	switch (type) {
	case HL_EVENT_LOST:
		return "lost";
	case HL_EVENT_RENEWAL_FAILED:
		return "renewal_failed";
	case HL_EVENT_RECONNECT:
		return "reconnect";
	case HL_EVENT_FAILOVER:
		return "failover";
	case HL_EVENT_FENCING_OFF:
		return "fencing_off";
	case HL_EVENT_UNDO:
		return "undo";
	}
	return "unknown";
}

int64_t hl_event_time_ms(const hl_event *e)
{
	return e ? e->time_ms : 0;
}

int64_t hl_event_monotonic_ms(const hl_event *e)
{
	return e ? e->mono_ms : 0;
}

const char *hl_event_lock_name(size_t *out_len, const hl_event *e)
{
	if (out_len)
		*out_len = e && e->name ? e->name_len : 0;
	return e ? e->name : NULL;
}

const char *hl_event_owner(const hl_event *e)
{
	return e ? e->owner : "";
}

const char *hl_event_node(const hl_event *e)
{
	return e ? e->node : "";
}

int hl_event_status(const hl_event *e)
{
	return e ? e->status : HL_OK;
}

const char *hl_event_message(const hl_event *e)
{
	return e ? e->message : "";
}
