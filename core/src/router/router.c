/*
 * The router: where a command goes and what happens when it fails. Today
 * one server ("single"): a pool of connections opened on demand, the retry
 * policy (resend only what is safe to run twice, within the caller's
 * bound), fencing of connections dropped with a write in flight, and
 * EVALSHA with its NOSCRIPT fallback. Error replies that concern routing
 * are handled here, never in a primitive.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Load every script once; EVALSHA then needs only their hashes. */
int hl__load_scripts(hl_client *c, hl_conn *conn)
{
	const char *argv[HL_SCRIPT_COUNT][3];
	size_t lens[HL_SCRIPT_COUNT][3];
	const char **argvp[HL_SCRIPT_COUNT];
	const size_t *lensp[HL_SCRIPT_COUNT];
	int argcs[HL_SCRIPT_COUNT];
	hl_reply *replies[HL_SCRIPT_COUNT];
	enum hl_sent sent;
	int i, rc;
	for (i = 0; i < HL_SCRIPT_COUNT; i++) {
		argv[i][0] = "SCRIPT";
		lens[i][0] = 6;
		argv[i][1] = "LOAD";
		lens[i][1] = 4;
		argv[i][2] = hl__script((enum hl_script_id)i)->source;
		lens[i][2] = strlen(argv[i][2]);
		argcs[i] = 3;
		argvp[i] = argv[i];
		lensp[i] = lens[i];
	}
	rc = hl__conn_roundtrip(conn, HL_SCRIPT_COUNT, argcs, argvp, lensp,
	                        replies, &sent, NULL,
	                        c->conf.command_timeout_ms);
	for (i = 0; i < HL_SCRIPT_COUNT; i++) {
		hl_reply *r = replies[i];
		if (rc == HL_OK) {
			if (hl__reply_type(r) == HL_REPLY_STRING &&
			    hl__reply_strlen(r) == 40) {
				memcpy(c->sha[i], hl__reply_str(r), 40);
				c->sha[i][40] = '\0';
			} else {
				rc = hl__fail(
				        HL_EREDIS,
				        "%s: SCRIPT LOAD of %s failed: %s",
				        c->conf.url_text,
				        hl__script((enum hl_script_id)i)->name,
				        hl__reply_type(r) == HL_REPLY_ERROR
				                ? hl__reply_str(r)
				                : "unexpected reply");
			}
		}
		if (r)
			hl__reply_free(r);
	}
	return rc;
}

/* ---- the pool ----------------------------------------------------------- */

static int pool_take(hl_client *c, int *out, const hl_bound *b)
{
	int i, pick = -1, rc;
	pthread_mutex_lock(&c->pool_mu);
	for (;;) {
		if ((rc = hl__bound_check(b)) != HL_OK) {
			pthread_mutex_unlock(&c->pool_mu);
			return rc;
		}
		if (atomic_load(&c->closing)) {
			pthread_mutex_unlock(&c->pool_mu);
			return hl__fail(HL_ECLOSED, "the client is closed");
		}
		/* Prefer an open connection; else any free slot. */
		for (i = 0; i < c->conf.pool_size; i++) {
			if (c->pool[i].busy)
				continue;
			if (c->pool[i].conn) {
				pick = i;
				break;
			}
			if (pick < 0)
				pick = i;
		}
		if (pick >= 0)
			break;
		c->pool_waiting++;
		/* Woken by a returned connection or close; a slice so that
		 * a cancel or a deadline is noticed too. */
		hl__cond_wait_until(&c->pool_cond, &c->pool_mu,
		                    hl__now_ms() + 20);
		c->pool_waiting--;
	}
	c->pool[pick].busy = 1;
	pthread_mutex_unlock(&c->pool_mu);
	*out = pick;
	return HL_OK;
}

static void pool_give(hl_client *c, int i)
{
	pthread_mutex_lock(&c->pool_mu);
	c->pool[i].busy = 0;
	if (c->pool_waiting)
		pthread_cond_signal(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_mu);
}

int hl__pause(hl_client *c, int64_t ms, const hl_bound *b)
{
	int64_t until = hl__now_ms() + ms;
	int rc = HL_OK;
	pthread_mutex_lock(&c->life_mu);
	while (!c->closed && (rc = hl__bound_check(b)) == HL_OK) {
		int64_t now = hl__now_ms(), slice = now + 20;
		if (now >= until)
			break;
		/* close broadcasts life_cond; cancel and interrupt are seen
		 * within a slice */
		hl__cond_wait_until(&c->life_cond, &c->life_mu,
		                    slice < until ? slice : until);
	}
	if (rc == HL_OK && c->closed)
		rc = hl__fail(HL_ECLOSED, "the client was closed");
	pthread_mutex_unlock(&c->life_mu);
	return rc;
}

/* ---- fences -------------------------------------------------------------
 * A connection dropped while a state-changing command may still be on its
 * way (a reply timed out, a reset) could deliver that command late: after
 * the caller was told it failed, even after the same owner's next command.
 * So its server-side id and address go on a list, and the next command
 * this client sends is preceded, in the same pipeline, by CLIENT KILL ID
 * <id> ADDR <addr> for each: once that has run, nothing the old connection
 * carried can run any more. (The address guards against a restarted server
 * that reuses the id for someone else's connection.) */

static void fence_add(hl_client *c, const hl_conn *conn)
{
	const char *addr;
	long long id = hl__conn_server_id(conn, &addr);
	pthread_mutex_lock(&c->pool_mu);
	if (!c->fence_off && id >= 0) {
		if (c->nfences == HL_FENCE_MAX) {
			/* the oldest is the most likely to be gone already */
			memmove(c->fences, c->fences + 1,
			        (HL_FENCE_MAX - 1) * sizeof(c->fences[0]));
			c->nfences--;
		}
		c->fences[c->nfences].id = id;
		snprintf(c->fences[c->nfences].addr,
		         sizeof(c->fences[c->nfences].addr), "%s", addr);
		c->nfences++;
	}
	pthread_mutex_unlock(&c->pool_mu);
}

/* Copy the pending fences (at most max). */
static int fences_pending(hl_client *c, hl_fence *out, int max)
{
	int n;
	pthread_mutex_lock(&c->pool_mu);
	n = c->nfences < max ? c->nfences : max;
	memcpy(out, c->fences, (size_t)n * sizeof(*out));
	pthread_mutex_unlock(&c->pool_mu);
	return n;
}

/* The fences whose CLIENT KILL ran are done; a refusal (an ACL without
 * CLIENT KILL, a server without it) turns fencing off for this client. */
static void fences_done(hl_client *c, const hl_fence *f, int n,
                        hl_reply **replies)
{
	int i, j;
	pthread_mutex_lock(&c->pool_mu);
	for (i = 0; i < n; i++) {
		if (hl__reply_type(replies[i]) == HL_REPLY_ERROR &&
		    strstr(hl__reply_str(replies[i]), "No such client") ==
		            NULL) {
			c->fence_off = 1;
			c->nfences = 0;
			break;
		}
		for (j = 0; j < c->nfences; j++)
			if (c->fences[j].id == f[i].id &&
			    strcmp(c->fences[j].addr, f[i].addr) == 0) {
				memmove(c->fences + j, c->fences + j + 1,
				        (size_t)(c->nfences - j - 1) *
				                sizeof(c->fences[0]));
				c->nfences--;
				break;
			}
	}
	pthread_mutex_unlock(&c->pool_mu);
}

/* ---- commands ----------------------------------------------------------- */

#define HL_FENCES_PER_TRIP 4

int hl__command(hl_client *c, hl_reply **out, int argc, const char **argv,
                const size_t *lens, int flags, enum hl_sent *sentp,
                const hl_bound *b)
{
	int slot = 0, rc, attempt, i;
	enum hl_sent sent = HL_SENT_NOTHING, any_sent = HL_SENT_NOTHING;
	*out = NULL;
	if ((rc = pool_take(c, &slot, b)) != HL_OK)
		return rc;
	for (attempt = 0;; attempt++) {
		hl_conn *conn = c->pool[slot].conn;
		hl_fence f[HL_FENCES_PER_TRIP];
		char ids[HL_FENCES_PER_TRIP][24];
		const char *fargv[HL_FENCES_PER_TRIP][6];
		size_t flens[HL_FENCES_PER_TRIP][6];
		const char **argvp[HL_FENCES_PER_TRIP + 1];
		const size_t *lensp[HL_FENCES_PER_TRIP + 1];
		int argcs[HL_FENCES_PER_TRIP + 1];
		hl_reply *replies[HL_FENCES_PER_TRIP + 1];
		int nf;
		if (!conn) {
			rc = hl__conn_open(&conn, &c->conf,
			                   &c->conf.url.hosts[0], HL_CONN_DATA,
			                   b);
			if (rc == HL_ECONNECT) {
				/* Nothing sent: try again after a pause. */
				sent = HL_SENT_NOTHING;
				goto retry;
			}
			if (rc != HL_OK)
				break;
			c->pool[slot].conn = conn;
		}
		nf = fences_pending(c, f, HL_FENCES_PER_TRIP);
		for (i = 0; i < nf; i++) {
			snprintf(ids[i], sizeof(ids[i]), "%lld", f[i].id);
			fargv[i][0] = "CLIENT";
			fargv[i][1] = "KILL";
			fargv[i][2] = "ID";
			fargv[i][3] = ids[i];
			fargv[i][4] = "ADDR";
			fargv[i][5] = f[i].addr;
			flens[i][0] = 6;
			flens[i][1] = 4;
			flens[i][2] = 2;
			flens[i][3] = strlen(ids[i]);
			flens[i][4] = 4;
			flens[i][5] = strlen(f[i].addr);
			argcs[i] = 6;
			argvp[i] = fargv[i];
			lensp[i] = flens[i];
		}
		argcs[nf] = argc;
		argvp[nf] = argv;
		lensp[nf] = lens;
		rc = hl__conn_roundtrip(conn, nf + 1, argcs, argvp, lensp,
		                        replies, &sent, b,
		                        c->conf.command_timeout_ms);
		if (rc == HL_OK) {
			if (nf)
				fences_done(c, f, nf, replies);
			for (i = 0; i < nf; i++)
				hl__reply_free(replies[i]);
			*out = replies[nf];
			break;
		}
		for (i = 0; i <= nf; i++)
			if (replies[i])
				hl__reply_free(replies[i]);
		if (sent == HL_SENT_MAYBE) {
			any_sent = HL_SENT_MAYBE;
			if (flags & HL_CMD_WRITE)
				fence_add(c, conn);
		}
		hl__conn_free(conn);
		c->pool[slot].conn = NULL;
		if (rc != HL_EIO)
			break; /* the bound stopped it, or out of memory */
		if (sent == HL_SENT_MAYBE && !(flags & HL_CMD_IDEMPOTENT))
			break;
	retry:
		if (attempt >= c->conf.retry_attempts) {
			/* The server is named once: a failed connect named
			 * it already. */
			int named = strstr(hl_error_last(), c->conf.url_text) !=
			            NULL;
			rc = hl__fail_wrap(HL_EIO, "%s%sno answer after %d %s",
			                   named ? "" : c->conf.url_text,
			                   named ? "" : ": ", attempt + 1,
			                   attempt ? "attempts" : "attempt");
			break;
		}
		/* A broken pooled connection is common after a restart and
		 * costs nothing to replace: retry the first time at once. */
		if (attempt > 0 || rc == HL_ECONNECT) {
			int prc = hl__pause(
			        c,
			        hl__jitter_delay(c->conf.retry_delay_ms,
			                         attempt),
			        b);
			if (prc != HL_OK) {
				rc = prc;
				break;
			}
		}
	}
	pool_give(c, slot);
	/* Also after a success: an earlier attempt may have run too. */
	if (sentp)
		*sentp = any_sent;
	return rc;
}

int hl__reply_error(const hl_reply *r, const char *what)
{
	return hl__fail(HL_EREDIS, "%s: redis error: %.400s", what,
	                hl__reply_type(r) == HL_REPLY_ERROR ? hl__reply_str(r)
	                                                    : "?");
}

int hl__eval(hl_client *c, hl_reply **out, enum hl_script_id id, int nkeys,
             int nargs, const char **args, const size_t *lens, int flags,
             enum hl_sent *sent, const hl_bound *b)
{
	/* argv: EVALSHA sha numkeys keys... args... */
	const char *argv[3 + 64];
	size_t alen[3 + 64];
	char nk[16];
	int argc = 3 + nargs, rc;
	if (nargs > 64)
		return hl__fail(HL_EINVAL, "too many script arguments");
	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[0] = "EVALSHA";
	alen[0] = 7;
	argv[1] = c->sha[id];
	alen[1] = 40;
	argv[2] = nk;
	alen[2] = strlen(nk);
	memcpy(argv + 3, args, sizeof(*args) * (size_t)nargs);
	memcpy(alen + 3, lens, sizeof(*lens) * (size_t)nargs);
	rc = hl__command(c, out, argc, argv, alen, flags, sent, b);
	if (rc == HL_OK && hl__reply_type(*out) == HL_REPLY_ERROR &&
	    strncmp(hl__reply_str(*out), "NOSCRIPT", 8) == 0) {
		/* The server lost its script cache (restart, SCRIPT FLUSH):
		 * EVAL runs it and caches it again. NOSCRIPT means nothing
		 * ran, so this cannot apply the script twice. */
		hl__reply_free(*out);
		*out = NULL;
		argv[0] = "EVAL";
		alen[0] = 4;
		argv[1] = hl__script(id)->source;
		alen[1] = strlen(argv[1]);
		rc = hl__command(c, out, argc, argv, alen, flags, sent, b);
	}
	return rc;
}
