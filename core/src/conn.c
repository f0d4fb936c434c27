/* One hiredis connection: connect, handshake, pipelined round trips. */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static struct timeval tv_of(int64_t ms)
{
	struct timeval tv;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
	return tv;
}

static int is_auth_error(const char *s)
{
	return strncmp(s, "WRONGPASS", 9) == 0 ||
	       strncmp(s, "NOAUTH", 6) == 0 ||
	       strstr(s, "invalid password") != NULL ||
	       strstr(s, "invalid username-password") != NULL ||
	       strstr(s, "no password is set") != NULL;
}

int hl__conn_open(redisContext **out, const hl_conf *conf)
{
	redisContext *ctx;
	const char *argv[4][3];
	size_t lens[4][3];
	int argcs[4], n = 0, i, rc;
	const char **argvp[4];
	const size_t *lensp[4];
	redisReply *replies[4] = {0};
	enum hl_sent sent;
	char dbbuf[16];
	const char *what[4];

	if (conf->url.is_unix)
		ctx = redisConnectUnixWithTimeout(
		        conf->url.path, tv_of(conf->connect_timeout_ms));
	else
		ctx = redisConnectWithTimeout(conf->url.host, conf->url.port,
		                              tv_of(conf->connect_timeout_ms));
	if (!ctx)
		return hl__fail(HL_ENOMEM, "%s: out of memory connecting",
		                conf->url_text);
	if (ctx->err) {
		rc = hl__fail(HL_ECONNECT, "%s: %s", conf->url_text,
		              ctx->errstr);
		redisFree(ctx);
		return rc;
	}
	redisSetTimeout(ctx, tv_of(conf->command_timeout_ms));
	if (!conf->url.is_unix)
		redisEnableKeepAlive(ctx);

	if (conf->url.password) {
		int a = 0;
		argv[n][a] = "AUTH";
		lens[n][a++] = 4;
		if (conf->url.user) {
			argv[n][a] = conf->url.user;
			lens[n][a++] = strlen(conf->url.user);
		}
		argv[n][a] = conf->url.password;
		lens[n][a++] = strlen(conf->url.password);
		argcs[n] = a;
		what[n++] = "AUTH";
	}
	if (conf->url.db != 0) {
		snprintf(dbbuf, sizeof(dbbuf), "%d", conf->url.db);
		argv[n][0] = "SELECT";
		lens[n][0] = 6;
		argv[n][1] = dbbuf;
		lens[n][1] = strlen(dbbuf);
		argcs[n] = 2;
		what[n++] = "SELECT";
	}
	if (conf->client_name) {
		argv[n][0] = "CLIENT";
		lens[n][0] = 6;
		argv[n][1] = "SETNAME";
		lens[n][1] = 7;
		argv[n][2] = conf->client_name;
		lens[n][2] = strlen(conf->client_name);
		argcs[n] = 3;
		what[n++] = "CLIENT SETNAME";
	}
	/* PING tells a server that wants a password from one that does not. */
	argv[n][0] = "PING";
	lens[n][0] = 4;
	argcs[n] = 1;
	what[n++] = "PING";
	for (i = 0; i < n; i++) {
		argvp[i] = argv[i];
		lensp[i] = lens[i];
	}
	rc = hl__conn_roundtrip(ctx, n, argcs, argvp, lensp, replies, &sent);
	if (rc != HL_OK) {
		int r2 = hl__fail(HL_ECONNECT, "%s: handshake failed: %s",
		                  conf->url_text, hl_error_last());
		for (i = 0; i < n; i++)
			if (replies[i])
				freeReplyObject(replies[i]);
		redisFree(ctx);
		return r2;
	}
	rc = HL_OK;
	for (i = 0; i < n && rc == HL_OK; i++) {
		redisReply *r = replies[i];
		if (r->type != REDIS_REPLY_ERROR)
			continue;
		if (is_auth_error(r->str))
			rc = hl__fail(HL_EAUTH, "%s: %s refused: %s",
			              conf->url_text, what[i], r->str);
		else
			rc = hl__fail(HL_EREDIS, "%s: %s refused: %s",
			              conf->url_text, what[i], r->str);
	}
	for (i = 0; i < n; i++)
		freeReplyObject(replies[i]);
	if (rc != HL_OK) {
		redisFree(ctx);
		return rc;
	}
	*out = ctx;
	return HL_OK;
}

/* An idle connection must have nothing to read: readable means the server
 * closed it (restart, timeout) or sent garbage. Checked before reuse so a
 * command is not written into a dead socket, where it would be ambiguous
 * whether it ran. */
static int conn_dead(redisContext *ctx)
{
	struct pollfd pfd;
	char ch;
	ssize_t n;
	pfd.fd = ctx->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	n = recv(ctx->fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return 1;
	if (n < 0)
		return !(errno == EAGAIN || errno == EWOULDBLOCK);
	return 1; /* unexpected data */
}

int hl__conn_roundtrip(redisContext *ctx, int ncmd, const int *argcs,
                       const char **const *argvs, const size_t *const *lens,
                       redisReply **replies, enum hl_sent *sent)
{
	int i, done = 0, first = 1;
	*sent = HL_SENT_NOTHING;
	for (i = 0; i < ncmd; i++)
		replies[i] = NULL;
	if (ctx->err || conn_dead(ctx))
		return hl__fail(HL_EIO, "connection to redis was closed");
	for (i = 0; i < ncmd; i++) {
		if (redisAppendCommandArgv(ctx, argcs[i], argvs[i], lens[i]) !=
		    REDIS_OK)
			return hl__fail(HL_ENOMEM, "out of memory: %s",
			                ctx->errstr);
	}
	while (!done) {
		if (redisBufferWrite(ctx, &done) != REDIS_OK) {
			*sent = first ? HL_SENT_NOTHING : HL_SENT_MAYBE;
			return hl__fail(HL_EIO, "writing to redis: %s",
			                ctx->errstr);
		}
		first = 0;
	}
	*sent = HL_SENT_MAYBE;
	for (i = 0; i < ncmd; i++) {
		void *r = NULL;
		if (redisGetReply(ctx, &r) != REDIS_OK || !r) {
			int timeout = ctx->err == REDIS_ERR_IO &&
			              (errno == EAGAIN || errno == EWOULDBLOCK);
			return hl__fail(HL_EIO, "reading from redis: %s",
			                timeout ? "command timed out"
			                        : ctx->errstr);
		}
		replies[i] = r;
	}
	return HL_OK;
}
