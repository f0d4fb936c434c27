/* The client: options, lifecycle, owner ids, fork and thread-exit
 * handling. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uuid/uuid.h>

atomic_uint hl__fork_generation;

/* Owner ids: one process-wide sequence, never reused (an OS thread id is
 * reused after the thread exits, and the new thread would inherit a dead
 * thread's hold). */
static atomic_uint_fast64_t owner_seq;
static _Thread_local uint64_t tl_owner;

/* Live clients, so a thread's exit can drop its holds everywhere. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static hl_client *live_clients;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;

static void on_fork_child(void)
{
	atomic_fetch_add(&hl__fork_generation, 1);
	/* The child has one thread; the list lock may have been held by a
	 * parent thread at fork time. */
	pthread_mutex_init(&live_mu, NULL);
	live_clients = NULL;
	tl_owner = 0;
}

/* A thread that exits while it holds locks stops being renewed in every
 * client, so its leases run out instead of being renewed for ever. */
static void on_thread_exit(void *value)
{
	uint64_t id = (uint64_t)(uintptr_t)value;
	hl_client *c;
	if (!id)
		return;
	pthread_mutex_lock(&live_mu);
	for (c = live_clients; c; c = c->next_live)
		hl__holds_drop_owner(c, id);
	pthread_mutex_unlock(&live_mu);
}

static void init_once(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
	pthread_key_create(&thread_key, on_thread_exit);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		srand((unsigned)(ts.tv_nsec ^ getpid()));
	}
}

uint64_t hl_owner_id_new(void)
{
	return atomic_fetch_add(&owner_seq, 1) + 1;
}

uint64_t hl_thread_owner_id(void)
{
	if (!tl_owner) {
		pthread_once(&once, init_once);
		tl_owner = hl_owner_id_new();
		/* Registers the exit hook; the value is the owner id. */
		pthread_setspecific(thread_key, (void *)(uintptr_t)tl_owner);
	}
	return tl_owner;
}

uint64_t hl__effective_owner(const hl_lock *lock)
{
	return lock->owner_id ? lock->owner_id : hl_thread_owner_id();
}

size_t hl__owner_string(char *buf, const hl_client *c, uint64_t owner_id)
{
	/* "<id>:<owner_id>" (HL_OWNER_MAX holds the longest) */
	memcpy(buf, c->id, HL_UUID_LEN);
	buf[HL_UUID_LEN] = ':';
	return HL_UUID_LEN + 1 + hl__fmt_u64(buf + HL_UUID_LEN + 1, owner_id);
}

/* Bytes of hl_client_options that a program built for version v has: the
 * struct is append-only, so an older one is a prefix of this one. */
static size_t options_size(unsigned int v)
{
	switch (v) {
	case 1:
		return offsetof(hl_client_options, ping_interval_ms);
	case 2:
		return offsetof(hl_client_options, fair_wait_timeout_ms);
	case 3:
		return sizeof(hl_client_options);
	}
	return 0;
}

int hl_client_options_init(hl_client_options *opts, unsigned int version)
{
	hl_client_options def = HL_CLIENT_OPTIONS_INIT;
	size_t n = options_size(version);
	if (!opts)
		return hl__fail(HL_EINVAL, "options is NULL");
	if (n == 0)
		return hl__fail(HL_EINVAL,
		                "options version %u is not supported (this "
		                "library knows versions 1 to %u)",
		                version, HL_CLIENT_OPTIONS_VERSION);
	def.version = version;
	memcpy(opts, &def, n);
	return HL_OK;
}

static int check_ms(const char *what, int64_t v, int64_t lo)
{
	if (v < lo || v > HL_TIME_MAX)
		return hl__fail(HL_EINVAL, "option %s = %lld out of range",
		                what, (long long)v);
	return HL_OK;
}

/* *dst = a copy of an optional string option (NULL or "" stay NULL).
 * -1 when out of memory. */
static int copy_opt(char **dst, const char *src)
{
	*dst = src && *src ? strdup(src) : NULL;
	return src && *src && !*dst ? -1 : 0;
}

static void wipe(char *secret)
{
	volatile char *v = secret;
	while (v && *v)
		*v++ = 0;
	free(secret);
}

static int conf_init(hl_conf *conf, const char *url,
                     const hl_client_options *given)
{
	hl_client_options all = HL_CLIENT_OPTIONS_INIT;
	const hl_client_options *o = &all;
	size_t n = options_size(given->version);
	int rc;
	memset(conf, 0, sizeof(*conf));
	if (n == 0)
		return hl__fail(HL_EINVAL,
		                "options version %u is not supported; use "
		                "HL_CLIENT_OPTIONS_INIT or "
		                "hl_client_options_init()",
		                given->version);
	/* An older struct is a prefix: its fields over the defaults. */
	memcpy(&all, given, n);
	if ((rc = check_ms("watchdog_timeout_ms", o->watchdog_timeout_ms,
	                   30)) ||
	    (rc = check_ms("connect_timeout_ms", o->connect_timeout_ms, 1)) ||
	    (rc = check_ms("command_timeout_ms", o->command_timeout_ms, 1)) ||
	    (rc = check_ms("retry_delay_ms", o->retry_delay_ms, 0)) ||
	    (rc = check_ms("subscription_timeout_ms",
	                   o->subscription_timeout_ms, 1)) ||
	    (rc = check_ms("ping_interval_ms", o->ping_interval_ms, 0)))
		return rc;
	if (o->retry_attempts < 0 || o->retry_attempts > 100)
		return hl__fail(HL_EINVAL,
		                "option retry_attempts = %d out of "
		                "range 0-100",
		                o->retry_attempts);
	if (o->pool_size < 1 || o->pool_size > 1024)
		return hl__fail(HL_EINVAL,
		                "option pool_size = %d out of range 1-1024",
		                o->pool_size);
	if (o->client_name && (strpbrk(o->client_name, " \n\r\t") ||
	                       strlen(o->client_name) > 512))
		return hl__fail(HL_EINVAL, "client_name must be at most 512 "
		                           "characters without spaces");
	if ((rc = hl__url_parse(&conf->url, url)) != HL_OK)
		return rc;
	if (conf->url.topology == HL_TOPO_SINGLE) {
		/* the node: "redis://127.0.0.1:6379", "unix:///path" */
		char buf[300], a[280];
		const hl_addr *h = &conf->url.hosts[0];
		snprintf(buf, sizeof(buf), "%s://%s",
		         h->path[0]      ? "unix"
		         : conf->url.tls ? "rediss"
		                         : "redis",
		         hl__addr_str(h, a, sizeof(a)));
		conf->url_text = strdup(buf);
	} else {
		conf->url_text = hl__url_safe(url);
	}
	conf->watchdog_ms = o->watchdog_timeout_ms;
	conf->connect_timeout_ms = o->connect_timeout_ms;
	conf->command_timeout_ms = o->command_timeout_ms;
	conf->retry_attempts = o->retry_attempts;
	conf->retry_delay_ms = o->retry_delay_ms;
	conf->pool_size = o->pool_size;
	conf->subscription_timeout_ms = o->subscription_timeout_ms;
	conf->ping_interval_ms = o->ping_interval_ms;
	if (o->tls_verify != 0 && o->tls_verify != 1)
		return hl__fail(HL_EINVAL, "option tls_verify = %d: use 1 or 0",
		                o->tls_verify);
	if (o->read_from < HL_READ_MASTER || o->read_from > HL_READ_ANY)
		return hl__fail(HL_EINVAL,
		                "option read_from = %d: use HL_READ_MASTER, "
		                "HL_READ_REPLICA or HL_READ_ANY",
		                o->read_from);
	if (o->wait_replicas < -1 || o->wait_replicas > 1000)
		return hl__fail(HL_EINVAL,
		                "option wait_replicas = %d: use -1 (all), 0 "
		                "(off) or a number of replicas",
		                o->wait_replicas);
	if ((rc = check_ms("wait_timeout_ms", o->wait_timeout_ms, 1)) ||
	    (rc = check_ms("fair_wait_timeout_ms", o->fair_wait_timeout_ms, 1)))
		return rc;
	conf->fair_wait_ms = o->fair_wait_timeout_ms;
	conf->tls.verify = o->tls_verify;
	conf->read_from = o->read_from;
	conf->wait_replicas = o->wait_replicas;
	conf->wait_timeout_ms = o->wait_timeout_ms;
	if (copy_opt(&conf->client_name, o->client_name) ||
	    copy_opt(&conf->tls.ca_file, o->tls_ca_file) ||
	    copy_opt(&conf->tls.ca_dir, o->tls_ca_dir) ||
	    copy_opt(&conf->tls.cert_file, o->tls_cert_file) ||
	    copy_opt(&conf->tls.key_file, o->tls_key_file) ||
	    copy_opt(&conf->tls.server_name, o->tls_server_name) ||
	    copy_opt(&conf->sentinel_user, o->sentinel_username) ||
	    copy_opt(&conf->sentinel_password, o->sentinel_password) ||
	    !conf->url_text)
		return hl__fail(HL_ENOMEM, "out of memory");
	return hl__tls_init(conf); /* rediss: the TLS context, files read */
}

static void conf_clear(hl_conf *conf)
{
	hl__url_clear(&conf->url);
	free(conf->url_text);
	free(conf->client_name);
	free(conf->tls.ca_file);
	free(conf->tls.ca_dir);
	free(conf->tls.cert_file);
	free(conf->tls.key_file);
	free(conf->tls.server_name);
	free(conf->sentinel_user);
	wipe(conf->sentinel_password);
	hl__tls_free(conf);
	memset(conf, 0, sizeof(*conf));
}

int hl_client_new(hl_client **out, const char *url,
                  const hl_client_options *opts)
{
	hl_client_options def = HL_CLIENT_OPTIONS_INIT;
	hl_client *c;
	uuid_t uu;
	int rc;

	if (!out)
		return hl__fail(HL_EINVAL, "out is NULL");
	if (!url)
		return hl__fail(HL_EINVAL, "url is NULL");
	pthread_once(&once, init_once);
	c = calloc(1, sizeof(*c));
	if (!c)
		return hl__fail(HL_ENOMEM, "out of memory");
	if ((rc = conf_init(&c->conf, url, opts ? opts : &def)) != HL_OK) {
		conf_clear(&c->conf);
		free(c);
		return rc;
	}
	atomic_init(&c->refs, 1);
	atomic_init(&c->closing, 0);
	c->fork_gen = atomic_load(&hl__fork_generation);
	uuid_generate_random(uu);
	uuid_unparse_lower(uu, c->id);
	pthread_mutex_init(&c->life_mu, NULL);
	hl__cond_init(&c->life_cond);
	pthread_mutex_init(&c->pool_mu, NULL);
	hl__cond_init(&c->pool_cond);
	hl__blocking_init(c);
	pthread_mutex_init(&c->wait_mu, NULL);
	pthread_mutex_init(&c->hold_mu, NULL);
	hl__cond_init(&c->hold_cond);
	hl__cond_init(&c->wd_cond);
	pthread_mutex_init(&c->topo_mu, NULL);
	hl__notify_none(&c->sub_wake);
	hl__notify_none(&c->topo_wake);
	hl__registry_init(c);
	hl__obs_init(c);
	c->pool = calloc((size_t)c->conf.pool_size, sizeof(*c->pool));
	if (!c->pool || hl__map_init(&c->subs) || hl__map_init(&c->gates) ||
	    hl__map_init(&c->holds) || hl__map_init(&c->permits) ||
	    hl__map_init(&c->registry)) {
		rc = hl__fail(HL_ENOMEM, "out of memory");
		goto fail;
	}
	/* The first pooled connection proves the master, the credentials
	 * and the database before the client exists. */
	if ((rc = hl__router_start(c)) != HL_OK)
		goto fail;
	if ((rc = hl__engine_start(c)) != HL_OK)
		goto fail;
	if ((rc = hl__pubsub_start(c)) != HL_OK) {
		hl__engine_stop(c);
		goto fail;
	}
	if ((rc = hl__watchdog_start(c)) != HL_OK) {
		hl__pubsub_stop(c);
		hl__engine_stop(c);
		goto fail;
	}
	c->threads_live = 1;
	if ((rc = hl__router_watch(c)) != HL_OK) {
		hl__watchdog_stop(c);
		hl__pubsub_stop(c);
		hl__engine_stop(c);
		goto fail;
	}
	pthread_mutex_lock(&live_mu);
	c->next_live = live_clients;
	live_clients = c;
	pthread_mutex_unlock(&live_mu);
	*out = c;
	return HL_OK;
fail:
	hl__engine_free(c);
	if (c->pool)
		hl__conn_free(c->pool[0].conn);
	free(c->pool);
	free(c->replicas);
	free(c->slots);
	free(c->cnodes);
	hl__map_clear(&c->subs);
	hl__map_clear(&c->gates);
	hl__map_clear(&c->holds);
	hl__obs_free(c, 0);
	hl__map_clear(&c->permits);
	hl__map_clear(&c->registry);
	conf_clear(&c->conf);
	free(c);
	return rc;
}

void hl__bound_init(hl_bound *b, hl_client *c, int64_t deadline_ms,
                    hl_cancel *cancel, int interruptible)
{
	hl__bound_plain(b, deadline_ms, cancel);
	b->closing = &c->closing;
	if (interruptible) {
		b->interrupts = &c->interrupt_gen;
		b->interrupt_gen = atomic_load(&c->interrupt_gen);
	}
}

const char *hl_client_id(const hl_client *c)
{
	return c ? c->id : NULL;
}

int hl__client_enter(hl_client *c)
{
	if (!c)
		return hl__fail(HL_EINVAL, "client is NULL");
	if (c->fork_gen != atomic_load(&hl__fork_generation))
		return hl__fail(HL_EFORKED,
		                "this client was created by another process "
		                "(before fork()); create a new client in this "
		                "process");
	pthread_mutex_lock(&c->life_mu);
	if (c->closed) {
		pthread_mutex_unlock(&c->life_mu);
		return hl__fail(HL_ECLOSED, "the client is closed");
	}
	c->active++;
	pthread_mutex_unlock(&c->life_mu);
	return HL_OK;
}

void hl__client_leave(hl_client *c)
{
	pthread_mutex_lock(&c->life_mu);
	if (--c->active == 0 && c->closed)
		pthread_cond_broadcast(&c->life_cond);
	pthread_mutex_unlock(&c->life_mu);
}

static void unlink_live(hl_client *c)
{
	hl_client **pp;
	pthread_mutex_lock(&live_mu);
	for (pp = &live_clients; *pp; pp = &(*pp)->next_live)
		if (*pp == c) {
			*pp = c->next_live;
			break;
		}
	pthread_mutex_unlock(&live_mu);
}

static void free_connections(hl_client *c)
{
	int i;
	hl__blocking_free(c);
	for (i = 0; i < c->conf.pool_size; i++) {
		hl__conn_free(c->pool[i].conn);
		c->pool[i].conn = NULL;
	}
}

void hl_client_close(hl_client *c)
{
	if (!c)
		return;
	if (c->fork_gen != atomic_load(&hl__fork_generation)) {
		/* A child after fork(): the client's threads and locks belong
		 * to the parent. Only drop the inherited sockets (closing a
		 * descriptor here leaves the parent's connection intact);
		 * locks copied from the parent's threads may be held, so take
		 * none. */
		if (c->closed)
			return;
		c->closed = 1;
		free_connections(c);
		hl__pubsub_drop_inherited(c);
		hl__watchdog_drop_inherited(c);
		hl__notify_close(&c->sub_wake);
		c->threads_live = 0;
		return;
	}
	/* The kinds' state in the client first, while round trips still
	 * work (an adder answers the sums it was asked for). */
	hl__registry_close_all(c);
	pthread_mutex_lock(&c->life_mu);
	if (c->closed) {
		pthread_mutex_unlock(&c->life_mu);
		return;
	}
	c->closed = 1;
	atomic_store(&c->closing, 1);
	pthread_cond_broadcast(&c->life_cond); /* commands pausing to retry */
	pthread_mutex_unlock(&c->life_mu);

	/* Wake whatever is blocked: waiters and every task (they end with
	 * HL_ECLOSED), pool waiters, lost waiters. */
	hl__pubsub_wake_all(c);
	pthread_mutex_lock(&c->pool_mu);
	pthread_cond_broadcast(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_mu);
	pthread_mutex_lock(&c->hold_mu);
	pthread_cond_broadcast(&c->hold_cond);
	pthread_mutex_unlock(&c->hold_mu);

	/* Calls in flight finish (bounded by the command timeout). */
	pthread_mutex_lock(&c->life_mu);
	while (c->active > 0)
		pthread_cond_wait(&c->life_cond, &c->life_mu);
	pthread_mutex_unlock(&c->life_mu);

	unlink_live(c);
	if (c->threads_live) {
		hl__engine_stop(c); /* every task is done by now */
		hl__router_stop(c);
		hl__watchdog_stop(c);
		hl__pubsub_stop(c);
		c->threads_live = 0;
	}
	free_connections(c);
	hl__holds_free_all(c);
	/* Last: the threads that queue events are gone, so an event drainer
	 * that wakes now and takes what is left has seen every event. */
	hl__obs_close(c);
}

static void client_destroy(hl_client *c)
{
	int forked = c->fork_gen != atomic_load(&hl__fork_generation);
	if (!forked) {
		pthread_mutex_destroy(&c->life_mu);
		pthread_cond_destroy(&c->life_cond);
		pthread_mutex_destroy(&c->pool_mu);
		pthread_mutex_destroy(&c->block_mu);
		pthread_cond_destroy(&c->pool_cond);
		pthread_mutex_destroy(&c->wait_mu);
		pthread_mutex_destroy(&c->hold_mu);
		pthread_cond_destroy(&c->hold_cond);
		pthread_cond_destroy(&c->wd_cond);
		pthread_mutex_destroy(&c->topo_mu);
		pthread_mutex_destroy(&c->reg_mu);
	} else {
		/* The parent's holds and subscriptions, copied: forget them
		 * unseen. */
		size_t i;
		hl_map_entry *e;
		hl__holds_free_all(c);
		for (i = 0; i < c->subs.nbuckets; i++)
			for (e = c->subs.buckets[i]; e; e = e->next)
				free(e->value);
	}
	hl__engine_free(c);
	free(c->pool);
	free(c->replicas);
	free(c->slots);
	free(c->cnodes);
	free(c->subconns);
	free(c->renew_items);
	hl__map_clear(&c->subs);
	hl__map_clear(&c->gates);
	hl__map_clear(&c->holds);
	hl__permits_free_all(c);
	hl__registry_free_all(c);
	free(c->heap);
	hl__obs_free(c, forked);
	conf_clear(&c->conf);
	free(c);
}

void hl__client_unref(hl_client *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		client_destroy(c);
}

void hl_client_free(hl_client *c)
{
	if (!c)
		return;
	hl_client_close(c);
	hl__client_unref(c);
}

int hl_client_interrupt(hl_client *c)
{
	int rc = hl__client_enter(c);
	if (rc != HL_OK)
		return rc;
	hl__pubsub_wake_all(c); /* bumps interrupt_gen */
	pthread_mutex_lock(&c->hold_mu);
	c->hold_interrupt_gen++;
	pthread_cond_broadcast(&c->hold_cond);
	pthread_mutex_unlock(&c->hold_mu);
	hl__client_leave(c);
	return HL_OK;
}
