/*
 * One connection: hilock's own socket (TCP or unix), with hiredis used only
 * to parse replies (resp.c formats commands), and TLS over OpenSSL (tls.c)
 * for the rediss schemes. Every wait on the socket is bounded by the
 * command timeout and by the caller's bound (deadline, cancel flag, client
 * close or interrupt), so no call outlives its deadline because the network
 * stopped answering; the TLS handshake too. A wait is a poll(), except a
 * plain socket's wait for a reply: one blocking recv(), where poll() and
 * recv() took two system calls, ended at its deadline by the reaper
 * thread (plain_read_wait).
 */
#include "transport/tls.h"
#include "transport/transport.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* How often a poll() without data rechecks cancel, close and interrupt. */
#define HL_IO_SLICE_MS 20
/* A blocking read's socket timeout: only a backstop for the reaper. */
#define HL_IO_BACKSTOP_MS 10000

/* The earlier of now + timeout_ms and the bound's deadline. */
static int64_t io_deadline(const hl_bound *b, int64_t timeout_ms)
{
	int64_t d = hl__now_ms() + timeout_ms;
	if (b && b->deadline_ms >= 0 && b->deadline_ms < d)
		d = b->deadline_ms;
	return d;
}

/* Wait until fd is ready for events, or io_deadline, or the bound stops
 * us. HL_OK when ready; HL_EIO "what timed out" at io_deadline; the
 * bound's status when it stops the wait. */
static int wait_fd(int fd, short events, int64_t deadline, const hl_bound *b,
                   const char *what, int64_t timeout_ms)
{
	for (;;) {
		struct pollfd p;
		int64_t left;
		int rc, slice;
		if ((rc = hl__bound_check(b)) != HL_OK)
			return rc;
		left = deadline - hl__now_ms();
		if (left <= 0)
			return hl__fail(HL_EIO, "%s: no answer within %lld ms",
			                what, (long long)timeout_ms);
		slice = left > HL_IO_SLICE_MS ? HL_IO_SLICE_MS : (int)left;
		/* Nothing can stop the wait early: one poll for all of it. */
		if (!b || (!b->cancel && !b->closing && !b->interrupts))
			slice = (int)(left > 1 << 30 ? 1 << 30 : left);
		p.fd = fd;
		p.events = events;
		p.revents = 0;
		rc = poll(&p, 1, slice);
		if (rc > 0)
			return HL_OK; /* ready, or an error the next I/O reports
			               */
		if (rc < 0 && errno != EINTR)
			return hl__fail(HL_EIO, "%s: poll: %s", what,
			                strerror(errno));
	}
}

struct hl_conn {
	int fd;
	hl_tls *tls;     /* NULL: plain */
	short tls_rwant; /* TLS: the event a read waits for (POLLIN, or
	                    POLLOUT while OpenSSL must write first) */
	short tls_wwant; /* TLS: the event a write waits for */
	int peer_closed; /* the server closed or reset the socket */
	redisReader *reader;
	char *obuf; /* formatted commands not yet written */
	size_t olen, ocap;
	long long server_id;  /* CLIENT INFO id; -1 unknown */
	char server_addr[64]; /* CLIENT INFO addr: us as the server sees us */
	int64_t last_read_ms; /* when data last arrived */
	uint64_t reads;       /* reads that brought data */
	/* A plain socket is blocking, so that one recv() waits for a reply
	 * where poll() and recv() took two system calls; every other call
	 * on it is non-blocking (MSG_DONTWAIT). Its SO_RCVTIMEO (a backstop:
	 * the reaper ends its reads); 0: a non-blocking socket (TLS). */
	int rcvtimeo_ms;
};

/* ---- replies: hl_reply is hiredis's redisReply, seen through accessors -- */

_Static_assert(HL_REPLY_STRING == REDIS_REPLY_STRING &&
                       HL_REPLY_ARRAY == REDIS_REPLY_ARRAY &&
                       HL_REPLY_INTEGER == REDIS_REPLY_INTEGER &&
                       HL_REPLY_NIL == REDIS_REPLY_NIL &&
                       HL_REPLY_STATUS == REDIS_REPLY_STATUS &&
                       HL_REPLY_ERROR == REDIS_REPLY_ERROR,
               "reply types");

#define RR(r) ((const redisReply *)(const void *)(r))

int hl__reply_type(const hl_reply *r)
{
	return r ? RR(r)->type : HL_REPLY_NIL;
}

long long hl__reply_int(const hl_reply *r)
{
	return r && RR(r)->type == REDIS_REPLY_INTEGER ? RR(r)->integer : 0;
}

static int has_str(const redisReply *r)
{
	return r &&
	       (r->type == REDIS_REPLY_STRING ||
	        r->type == REDIS_REPLY_STATUS ||
	        r->type == REDIS_REPLY_ERROR) &&
	       r->str;
}

const char *hl__reply_str(const hl_reply *r)
{
	return has_str(RR(r)) ? RR(r)->str : "";
}

size_t hl__reply_strlen(const hl_reply *r)
{
	return has_str(RR(r)) ? RR(r)->len : 0;
}

size_t hl__reply_len(const hl_reply *r)
{
	return r && RR(r)->type == REDIS_REPLY_ARRAY ? RR(r)->elements : 0;
}

const hl_reply *hl__reply_at(const hl_reply *r, size_t i)
{
	if (i >= hl__reply_len(r))
		return NULL;
	return (const hl_reply *)(const void *)RR(r)->element[i];
}

void hl__reply_free(hl_reply *r)
{
	if (r)
		freeReplyObject(r);
}

int hl__conn_fd(const hl_conn *conn)
{
	return conn->fd;
}

int hl__conn_pending_output(const hl_conn *conn)
{
	return conn->olen > 0;
}

int64_t hl__conn_last_read(const hl_conn *conn)
{
	return conn->last_read_ms;
}

uint64_t hl__conn_reads(const hl_conn *conn)
{
	return conn->reads;
}

long long hl__conn_server_id(const hl_conn *conn, const char **addr)
{
	*addr = conn->server_addr;
	return conn->server_addr[0] ? conn->server_id : -1;
}

/* ---- connecting --------------------------------------------------------- */

static int set_socket_options(int fd, int tcp)
{
	int one = 1;
	if (tcp) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	return 0;
}

/* The connection's deadline: connect_timeout_ms from its start, or the
 * bound's if earlier. Every step of a connection's setup (each address
 * tried, TLS, the handshake's round trip) ends by it. */
static int64_t conn_deadline(const hl_conf *conf, const hl_bound *b)
{
	return io_deadline(b, conf->connect_timeout_ms);
}

/* Start a non-blocking connect and wait for it within the bound, until
 * deadline (see conn_deadline). */
static int connect_addr(int *out, int family, const struct sockaddr *sa,
                        socklen_t salen, const hl_conf *conf, const hl_bound *b,
                        int64_t deadline)
{
	int fd, rc, err = 0;
	socklen_t errlen = sizeof(err);
	fd = hl__socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		return hl__fail(HL_ECONNECT, "socket: %s", strerror(errno));
	set_socket_options(fd, family != AF_UNIX);
	do
		rc = connect(fd, sa, salen);
	while (rc < 0 && errno == EINTR);
	if (rc < 0 && errno != EINPROGRESS && errno != EAGAIN) {
		rc = hl__fail(HL_ECONNECT, "%s", strerror(errno));
		close(fd);
		return rc;
	}
	if (rc < 0) {
		rc = wait_fd(fd, POLLOUT, deadline, b, "connect",
		             conf->connect_timeout_ms);
		if (rc == HL_EIO)
			rc = hl__fail(HL_ECONNECT,
			              "connection not established within "
			              "%lld ms",
			              (long long)conf->connect_timeout_ms);
		if (rc != HL_OK) {
			close(fd);
			return rc;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) < 0)
			err = errno;
		if (err) {
			close(fd);
			return hl__fail(HL_ECONNECT, "%s", strerror(err));
		}
	}
	*out = fd;
	return HL_OK;
}

static int connect_socket(int *out, const hl_conf *conf, const hl_addr *addr,
                          const hl_bound *b, int64_t deadline)
{
	if (addr->path[0]) {
		struct sockaddr_un sun;
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		if (strlen(addr->path) >= sizeof(sun.sun_path))
			return hl__fail(HL_EINVAL, "unix socket path too long");
		strcpy(sun.sun_path, addr->path);
		return connect_addr(out, AF_UNIX, (struct sockaddr *)&sun,
		                    sizeof(sun), conf, b, deadline);
	} else {
		struct addrinfo hints, *res = NULL, *ai;
		char port[16];
		int rc, gai;
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		snprintf(port, sizeof(port), "%d", addr->port);
		gai = getaddrinfo(addr->host, port, &hints, &res);
		if (gai != 0)
			return hl__fail(HL_ECONNECT, "cannot resolve %s: %s",
			                addr->host, gai_strerror(gai));
		rc = HL_ECONNECT;
		if (!res)
			hl__fail(rc, "no address for %s", addr->host);
		for (ai = res; ai; ai = ai->ai_next) {
			rc = connect_addr(out, ai->ai_family, ai->ai_addr,
			                  ai->ai_addrlen, conf, b, deadline);
			/* A stop (deadline, cancel, close) ends the search. */
			if (rc == HL_OK || rc != HL_ECONNECT)
				break;
		}
		freeaddrinfo(res);
		return rc;
	}
}

/* 1 if addr answers a plain PING in RESP ("+PONG", "-NOAUTH ..."), its
 * first line in seen: a plain Redis port, which never answers a TLS
 * ClientHello (it reads it as an inline command that a NUL byte keeps
 * from ever ending). Asked on a connection of its own, within the bound
 * and until deadline; 0 when it cannot tell. */
static int answers_plain_resp(const hl_conf *conf, const hl_addr *addr,
                              const hl_bound *b, int64_t deadline, char *seen,
                              size_t seen_len)
{
	hl_bound pb;
	char buf[128];
	ssize_t n;
	size_t i;
	int fd, plain = 0;
	if (b)
		pb = *b;
	else
		hl__bound_plain(&pb, -1, NULL);
	if (pb.deadline_ms < 0 || pb.deadline_ms > deadline)
		pb.deadline_ms = deadline;
	if (connect_socket(&fd, conf, addr, &pb, deadline) != HL_OK)
		return 0;
	if (hl__send(fd, "PING\r\n", 6, 0) == 6 &&
	    wait_fd(fd, POLLIN, deadline, &pb, "probe", 0) == HL_OK) {
		do
			n = recv(fd, buf, sizeof(buf) - 1, 0);
		while (n < 0 && errno == EINTR);
		if (n > 0 && (buf[0] == '+' || buf[0] == '-')) {
			plain = 1;
			for (i = 0; i < (size_t)n && i + 1 < seen_len; i++) {
				if (buf[i] == '\r' || buf[i] == '\n')
					break;
				seen[i] = buf[i] >= ' ' && buf[i] < 127 ? buf[i]
				                                        : '?';
			}
			seen[i] = '\0';
		}
	}
	close(fd);
	return plain;
}

/* The TLS handshake on the connected socket, within the connect timeout
 * and the bound. When the server has said nothing for a while, a plain
 * PING on a second connection tells a plain Redis port (which would let
 * the handshake wait for the whole timeout) from a slow TLS server. */
static int tls_connect(hl_conn *conn, const hl_conf *conf, const hl_addr *addr,
                       const hl_bound *b, int64_t deadline)
{
	int64_t probe_at =
	        hl__now_ms() + (conf->connect_timeout_ms / 2 < 250
	                                ? conf->connect_timeout_ms / 2
	                                : 250);
	short want = POLLOUT;
	int rc, probed = 0;
	if ((rc = hl__tls_new(&conn->tls, conf, conn->fd, addr->host)) != HL_OK)
		return rc;
	while ((rc = hl__tls_handshake(conn->tls, &want)) == HL_TLS_AGAIN) {
		int64_t until = deadline;
		char seen[64];
		if (!probed && want == POLLIN && probe_at < deadline)
			until = probe_at;
		rc = wait_fd(conn->fd, want, until, b, "TLS handshake",
		             conf->connect_timeout_ms);
		if (rc == HL_EIO && until < deadline) {
			probed = 1;
			if (answers_plain_resp(conf, addr, b, deadline, seen,
			                       sizeof(seen)))
				return hl__fail(
				        HL_ECONNECT,
				        "TLS handshake: not a TLS server: "
				        "the port answers plain RESP "
				        "(\"%s\" to a PING); a plain port "
				        "wants redis://",
				        seen);
			continue;
		}
		if (rc == HL_EIO)
			return hl__fail(HL_ECONNECT,
			                "TLS handshake: no answer within %lld "
			                "ms (is it a TLS port?)",
			                (long long)conf->connect_timeout_ms);
		if (rc != HL_OK)
			return rc;
	}
	conn->tls_rwant = POLLIN;
	conn->tls_wwant = POLLOUT;
	return rc;
}

static int is_auth_error(const char *s)
{
	return strncmp(s, "WRONGPASS", 9) == 0 ||
	       strncmp(s, "NOAUTH", 6) == 0 ||
	       strstr(s, "invalid password") != NULL ||
	       strstr(s, "invalid username-password") != NULL ||
	       strstr(s, "no password is set") != NULL;
}

/* "id=7 addr=127.0.0.1:5000 ..." from CLIENT INFO: this connection as the
 * server knows it, so that a later connection can fence it off. */
static void parse_client_info(hl_conn *conn, const hl_reply *reply)
{
	const char *id, *addr, *end, *str = hl__reply_str(reply);
	size_t n;
	id = strstr(str, "id=");
	addr = strstr(str, " addr=");
	if (!id || id != str || !addr)
		return;
	addr += 6;
	end = strchr(addr, ' ');
	n = end ? (size_t)(end - addr) : strlen(addr);
	if (n == 0 || n >= sizeof(conn->server_addr))
		return;
	conn->server_id = strtoll(id + 3, NULL, 10);
	memcpy(conn->server_addr, addr, n);
	conn->server_addr[n] = '\0';
}

void hl__conn_free(hl_conn *conn)
{
	if (!conn)
		return;
	hl__tls_close(conn->tls); /* before its socket closes */
	if (conn->fd >= 0)
		close(conn->fd);
	if (conn->reader)
		redisReaderFree(conn->reader);
	free(conn->obuf);
	free(conn);
}

/* The node, for messages: "redis://127.0.0.1:6379", "unix:///path",
 * "sentinel 127.0.0.1:26379". */
static const char *node_label(char *buf, size_t len, const hl_conf *conf,
                              const hl_addr *addr, int kind)
{
	char a[300];
	hl__addr_str(addr, a, sizeof(a));
	if (kind == HL_CONN_SENTINEL)
		snprintf(buf, len, "sentinel %s", a);
	else if (addr->path[0])
		snprintf(buf, len, "unix://%s", a);
	else
		snprintf(buf, len, "%s://%s",
		         conf->url.tls ? "rediss" : "redis", a);
	return buf;
}

/* A connected plain socket becomes blocking, its reads ended by the
 * reaper (plain_read_wait) and, as a backstop, by a socket timeout of
 * HL_IO_BACKSTOP_MS; if the system refuses, it stays non-blocking and
 * waits with poll(). */
static void plain_blocking(hl_conn *conn)
{
	struct timeval tv;
	int fl = fcntl(conn->fd, F_GETFL);
	tv.tv_sec = HL_IO_BACKSTOP_MS / 1000;
	tv.tv_usec = 0;
	if (fl < 0 ||
	    setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return;
	if (fcntl(conn->fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
		conn->rcvtimeo_ms = HL_IO_BACKSTOP_MS;
}

int hl__conn_open(hl_conn **out, const hl_conf *conf, const hl_addr *addr,
                  int kind, const hl_bound *b)
{
	char label[320];
	const char *user, *password;
	hl_conn *conn;
	const char *argv[4][3];
	size_t lens[4][3];
	int argcs[4], n = 0, i, rc;
	const char **argvp[4];
	const size_t *lensp[4];
	hl_reply *replies[4] = {0};
	enum hl_sent sent;
	char dbbuf[16];
	const char *what[4];
	int64_t deadline = conn_deadline(conf, b), left;

	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return hl__fail(HL_ENOMEM, "out of memory");
	conn->fd = -1;
	conn->server_id = -1;
	conn->reader = redisReaderCreate();
	if (!conn->reader) {
		free(conn);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	node_label(label, sizeof(label), conf, addr, kind);
	if ((rc = connect_socket(&conn->fd, conf, addr, b, deadline)) !=
	            HL_OK ||
	    (conf->url.tls && !addr->path[0] &&
	     (rc = tls_connect(conn, conf, addr, b, deadline)) != HL_OK)) {
		hl__conn_free(conn);
		return hl__fail_wrap(rc, "%s", label);
	}
	if (!conn->tls)
		plain_blocking(conn);

	user = kind == HL_CONN_SENTINEL ? conf->sentinel_user : conf->url.user;
	password = kind == HL_CONN_SENTINEL ? conf->sentinel_password
	                                    : conf->url.password;
	if (password) {
		int a = 0;
		argv[n][a] = "AUTH";
		lens[n][a++] = 4;
		if (user) {
			argv[n][a] = user;
			lens[n][a++] = strlen(user);
		}
		argv[n][a] = password;
		lens[n][a++] = strlen(password);
		argcs[n] = a;
		what[n++] = "AUTH";
	}
	if (conf->url.db != 0 && kind != HL_CONN_SENTINEL) {
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
	/* CLIENT INFO tells a server that wants a password from one that
	 * does not (NOAUTH), and names this connection for fencing. A server
	 * without it (before 6.2) or an ACL that forbids it only costs the
	 * fencing. */
	argv[n][0] = "CLIENT";
	lens[n][0] = 6;
	argv[n][1] = "INFO";
	lens[n][1] = 4;
	argcs[n] = 2;
	what[n++] = "CLIENT INFO";
	for (i = 0; i < n; i++) {
		argvp[i] = argv[i];
		lensp[i] = lens[i];
	}
	/* Each reply within command_timeout_ms, and the whole setup (TCP,
	 * TLS, this round trip) within connect_timeout_ms: a server that
	 * accepts and never answers is told within connect_timeout_ms. */
	left = deadline - hl__now_ms();
	if (left > conf->command_timeout_ms)
		left = conf->command_timeout_ms;
	if (left <= 0) {
		hl__conn_free(conn);
		return hl__fail(HL_ECONNECT,
		                "%s: handshake: no time left within "
		                "connect_timeout_ms (%lld ms)",
		                label, (long long)conf->connect_timeout_ms);
	}
	rc = hl__conn_roundtrip(conn, n, argcs, argvp, lensp, replies, &sent, b,
	                        left);
	if (rc == HL_EIO && !conn->peer_closed && hl__now_ms() >= deadline &&
	    left < conf->command_timeout_ms) {
		for (i = 0; i < n; i++)
			if (replies[i])
				hl__reply_free(replies[i]);
		hl__conn_free(conn);
		return hl__fail(HL_ECONNECT,
		                "%s: handshake: no answer within "
		                "connect_timeout_ms (%lld ms): the server "
		                "accepted the connection but said nothing",
		                label, (long long)conf->connect_timeout_ms);
	}
	if (rc != HL_OK) {
		for (i = 0; i < n; i++)
			if (replies[i])
				hl__reply_free(replies[i]);
		/* A TLS server drops a plain client at its first bytes (or
		 * answers with an alert, which is no RESP). */
		if ((rc == HL_EPROTOCOL ||
		     (rc == HL_EIO && conn->peer_closed)) &&
		    !conn->tls && !addr->path[0]) {
			char cause[512];
			snprintf(cause, sizeof(cause), "%s", hl_error_last());
			hl__conn_free(conn);
			return hl__fail(HL_ECONNECT,
			                "%s: handshake: %s (is the server "
			                "expecting TLS? use rediss://)",
			                label, cause);
		}
		hl__conn_free(conn);
		if (rc == HL_EIO || rc == HL_EPROTOCOL)
			return hl__fail_wrap(HL_ECONNECT, "%s: handshake",
			                     label);
		return hl__fail_wrap(rc, "%s: handshake", label);
	}
	rc = HL_OK;
	for (i = 0; i < n && rc == HL_OK; i++) {
		const hl_reply *r = replies[i];
		if (hl__reply_type(r) != HL_REPLY_ERROR) {
			if (i == n - 1)
				parse_client_info(conn, r);
			continue;
		}
		if (is_auth_error(hl__reply_str(r)))
			rc = hl__fail(HL_EAUTH, "%s: %s refused: %s", label,
			              what[i], hl__reply_str(r));
		else if (i < n - 1)
			rc = hl__fail(HL_EREDIS, "%s: %s refused: %s", label,
			              what[i], hl__reply_str(r));
	}
	for (i = 0; i < n; i++)
		hl__reply_free(replies[i]);
	if (rc != HL_OK) {
		hl__conn_free(conn);
		return rc;
	}
	*out = conn;
	return HL_OK;
}

/* ---- I/O ---------------------------------------------------------------- */

int hl__conn_append(hl_conn *conn, int argc, const char **argv,
                    const size_t *lens)
{
	size_t need = argc >= 0 ? hl__resp_bound(argc, lens) : 0;
	if (need == 0)
		return hl__fail(HL_ENOMEM, "out of memory");
	if (conn->olen + need > conn->ocap) {
		size_t cap = conn->ocap ? conn->ocap : 256;
		char *nb;
		while (cap < conn->olen + need)
			cap *= 2;
		nb = realloc(conn->obuf, cap);
		if (!nb)
			return hl__fail(HL_ENOMEM, "out of memory");
		conn->obuf = nb;
		conn->ocap = cap;
	}
	conn->olen += hl__resp_write(conn->obuf + conn->olen, argc, argv, lens);
	return HL_OK;
}

static int tls_write_some(hl_conn *conn, int *wrote)
{
	size_t n;
	int rc;
	/* Record by record until the socket is full. */
	while (conn->olen > 0) {
		rc = hl__tls_write(conn->tls, conn->obuf, conn->olen, &n,
		                   &conn->tls_wwant);
		if (rc != HL_OK)
			return rc;
		if (n == 0)
			break;
		*wrote = 1;
		memmove(conn->obuf, conn->obuf + n, conn->olen - n);
		conn->olen -= n;
	}
	return HL_OK;
}

int hl__conn_write_some(hl_conn *conn, int *wrote)
{
	ssize_t n;
	*wrote = 0;
	if (conn->olen == 0)
		return HL_OK;
	if (conn->tls)
		return tls_write_some(conn, wrote);
	do
		n = hl__send(conn->fd, conn->obuf, conn->olen, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return HL_OK;
		if (errno == EPIPE || errno == ECONNRESET)
			conn->peer_closed = 1;
		return hl__fail(HL_EIO, "writing to redis: %s",
		                strerror(errno));
	}
	*wrote = n > 0;
	memmove(conn->obuf, conn->obuf + n, conn->olen - (size_t)n);
	conn->olen -= (size_t)n;
	return HL_OK;
}

/* Everything OpenSSL can decrypt now: several records, until it needs
 * the socket again (a record is at most 16384 bytes, so nothing is left
 * in OpenSSL's buffer between calls). A record that carries no data (a
 * session ticket) reads as nothing. */
static int tls_read_some(hl_conn *conn)
{
	char buf[16384];
	size_t n;
	int rc, i;
	for (i = 0; i < 64; i++) {
		rc = hl__tls_read(conn->tls, buf, sizeof(buf), &n,
		                  &conn->tls_rwant);
		if (rc != HL_OK)
			return rc;
		if (n == 0)
			break;
		if (redisReaderFeed(conn->reader, buf, n) != REDIS_OK)
			return hl__fail(HL_ENOMEM, "out of memory");
		conn->last_read_ms = hl__now_ms();
		conn->reads++;
	}
	return HL_OK;
}

/* One recv() on a plain socket into the reader: HL_OK with *got 1 when
 * data came, 0 when none did (nothing to read now, or a blocking read's
 * slice ran out), -1 when a signal interrupted it; HL_EIO when the
 * connection is closed or broken. */
static int plain_recv(hl_conn *conn, int flags, int *got)
{
	char buf[16384];
	ssize_t n;
	*got = 0;
	n = recv(conn->fd, buf, sizeof(buf), flags);
	if (n == 0) {
		conn->peer_closed = 1;
		return hl__fail(HL_EIO, "redis closed the connection");
	}
	if (n < 0) {
		if (errno == EINTR)
			*got = -1;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return HL_OK;
		if (errno == ECONNRESET)
			conn->peer_closed = 1;
		return hl__fail(HL_EIO, "reading from redis: %s",
		                strerror(errno));
	}
	if (redisReaderFeed(conn->reader, buf, (size_t)n) != REDIS_OK)
		return hl__fail(HL_ENOMEM, "out of memory");
	conn->last_read_ms = hl__now_ms();
	conn->reads++;
	*got = 1;
	return HL_OK;
}

int hl__conn_read_some(hl_conn *conn)
{
	int got, rc;
	if (conn->tls)
		return tls_read_some(conn);
	do
		rc = plain_recv(conn, MSG_DONTWAIT, &got);
	while (rc == HL_OK && got < 0);
	return rc;
}

/* ---- the reaper: ends blocked reads at their deadline or bound -------- */

/* A plain socket's wait for a reply is one recv() that blocks with no
 * timer of its own: arming and cancelling a socket timeout for every reply
 * cost 1.5 us of CPU per command here (a VM, where programming a timer
 * exits to the hypervisor). One thread of the process, the reaper, watches
 * every such wait instead: when its deadline passes or its bound stops it
 * (cancel, close, interrupt), the reaper shuts the socket's reading side,
 * which wakes the recv(); the reader then reports the deadline or the
 * bound, and the connection, whose reply may still come, is not used
 * again (hl__conn_dead finds it closed). The reaper scans every
 * HL_REAPER_SCAN_MS (the bound's flags) and wakes at the earliest
 * deadline; with nothing to watch for HL_REAPER_LINGER_MS it sleeps until
 * a wait is added. A read within HL_IO_NEAR_MS of its deadline polls
 * instead (to the millisecond, no reaper), and so does every read if the
 * reaper's thread cannot start. */
#define HL_REAPER_SCAN_MS   20
#define HL_REAPER_LINGER_MS 1000
#define HL_IO_NEAR_MS       30

typedef struct reap_wait {
	struct reap_wait *prev, *next;
	int fd;
	int64_t deadline;
	const hl_bound *b;
	int fired; /* the reaper shut fd's reading side */
} reap_wait;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	reap_wait *head;
	int state; /* 0: no thread, 1: running, -1: cannot start */
	int idle;  /* the thread sleeps until a wait is added */
	int64_t wake_at;
} reaper = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};
static pthread_once_t reaper_once = PTHREAD_ONCE_INIT;

/* A forked child has no reaper thread and no waits: start afresh. */
static void reaper_on_fork_child(void)
{
	pthread_mutex_init(&reaper.mu, NULL);
	hl__cond_init(&reaper.cond);
	reaper.head = NULL;
	reaper.state = 0;
	reaper.idle = 0;
}

static void reaper_init(void)
{
	hl__cond_init(&reaper.cond);
	pthread_atfork(NULL, NULL, reaper_on_fork_child);
}

static void *reaper_main(void *arg)
{
	int64_t empty_since = -1;
	(void)arg;
	hl__thread_name("hl-reaper");
	pthread_mutex_lock(&reaper.mu);
	for (;;) {
		int64_t now = hl__now_ms(), next = now + HL_REAPER_SCAN_MS;
		reap_wait *w;
		for (w = reaper.head; w; w = w->next) {
			if (w->fired)
				continue;
			if (now >= w->deadline ||
			    hl__bound_check(w->b) != HL_OK) {
				shutdown(w->fd, SHUT_RD);
				w->fired = 1;
			} else if (w->deadline < next) {
				next = w->deadline;
			}
		}
		if (reaper.head) {
			empty_since = -1;
		} else if (empty_since < 0) {
			empty_since = now;
		} else if (now - empty_since >= HL_REAPER_LINGER_MS) {
			reaper.idle = 1;
			while (!reaper.head)
				pthread_cond_wait(&reaper.cond, &reaper.mu);
			reaper.idle = 0;
			empty_since = -1;
			continue;
		}
		reaper.wake_at = next;
		hl__cond_wait_until(&reaper.cond, &reaper.mu, next);
	}
	return NULL;
}

/* Watch w (fd, deadline, b) until reaper_remove. -1: no reaper. */
static int reaper_add(reap_wait *w, int fd, int64_t deadline, const hl_bound *b)
{
	pthread_once(&reaper_once, reaper_init);
	w->fd = fd;
	w->deadline = deadline;
	w->b = b;
	w->fired = 0;
	w->prev = NULL;
	pthread_mutex_lock(&reaper.mu);
	if (reaper.state == 0) {
		pthread_t t;
		pthread_attr_t a;
		reaper.state = -1;
		if (pthread_attr_init(&a) == 0) {
			pthread_attr_setdetachstate(&a,
			                            PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &a, reaper_main, NULL) == 0)
				reaper.state = 1;
			pthread_attr_destroy(&a);
		}
	}
	if (reaper.state < 0) {
		pthread_mutex_unlock(&reaper.mu);
		return -1;
	}
	w->next = reaper.head;
	if (reaper.head)
		reaper.head->prev = w;
	reaper.head = w;
	if (reaper.idle || deadline < reaper.wake_at)
		pthread_cond_signal(&reaper.cond);
	pthread_mutex_unlock(&reaper.mu);
	return 0;
}

/* Stop watching w: 1 if the reaper shut its socket's reading side. */
static int reaper_remove(reap_wait *w)
{
	int fired;
	pthread_mutex_lock(&reaper.mu);
	if (w->prev)
		w->prev->next = w->next;
	else
		reaper.head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	fired = w->fired;
	pthread_mutex_unlock(&reaper.mu);
	return fired;
}

/* Wait for data on a blocking plain socket and read it (as wait_fd then
 * hl__conn_read_some, in one system call instead of two): recv() blocks,
 * and the reaper ends it at the deadline or when the bound stops the
 * call (above). Within HL_IO_NEAR_MS of the deadline, a poll(), which
 * keeps the deadline to the millisecond. */
static int plain_read_wait(hl_conn *conn, int64_t deadline, const hl_bound *b,
                           int64_t timeout_ms)
{
	reap_wait w;
	int rc, got, watched = 0;
	for (;;) {
		if ((rc = hl__bound_check(b)) != HL_OK)
			break;
		if (deadline - hl__now_ms() <= HL_IO_NEAR_MS ||
		    (!watched && reaper_add(&w, conn->fd, deadline, b) != 0)) {
			rc = wait_fd(conn->fd, POLLIN, deadline, b,
			             "reading from redis", timeout_ms);
			if (rc == HL_OK)
				rc = hl__conn_read_some(conn);
			break;
		}
		watched = 1;
		/* got 0: the socket's own timeout (a backstop) ran out; -1: a
		 * signal */
		if ((rc = plain_recv(conn, 0, &got)) != HL_OK || got > 0)
			break;
	}
	if (watched && reaper_remove(&w) && rc != HL_OK) {
		/* our shutdown, not the server's close: say why */
		conn->peer_closed = 0;
		if ((rc = hl__bound_check(b)) == HL_OK)
			rc = hl__fail(HL_EIO,
			              "reading from redis: no answer "
			              "within %lld ms",
			              (long long)timeout_ms);
	}
	return rc;
}

int hl__conn_next_reply(hl_conn *conn, hl_reply **out)
{
	void *r = NULL;
	*out = NULL;
	if (redisReaderGetReply(conn->reader, &r) != REDIS_OK)
		return hl__fail(HL_EPROTOCOL, "bad reply from redis: %s",
		                conn->reader->errstr);
	*out = r;
	return HL_OK;
}

/* Under TLS the raw socket of a healthy connection may be readable: a
 * session ticket or another TLS record arrived after the handshake. So
 * read through TLS: application data is unexpected (dead), a failure or a
 * close is dead, nothing but TLS records is alive. */
static int tls_dead(hl_conn *conn)
{
	struct pollfd pfd;
	char buf[4096];
	size_t n;
	short want;
	if (hl__tls_pending(conn->tls) > 0)
		return 1;
	pfd.fd = conn->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	if (hl__tls_read(conn->tls, buf, sizeof(buf), &n, &want) != HL_OK)
		return 1; /* why is recorded */
	if (n > 0) {
		redisReaderFeed(conn->reader, buf, n);
		hl__fail(HL_EIO, "unexpected data from redis");
		return 1;
	}
	return 0;
}

int hl__conn_dead(hl_conn *conn)
{
	struct pollfd pfd;
	char ch;
	ssize_t n;
	if (conn->tls)
		return tls_dead(conn);
	pfd.fd = conn->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	n = recv(conn->fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return 1;
	if (n < 0)
		return !(errno == EAGAIN || errno == EWOULDBLOCK);
	return 1; /* unexpected data */
}

int hl__conn_roundtrip(hl_conn *conn, int ncmd, const int *argcs,
                       const char **const *argvs, const size_t *const *lens,
                       hl_reply **replies, enum hl_sent *sent,
                       const hl_bound *b, int64_t timeout_ms)
{
	int i, got = 0, rc, wrote;
	int64_t deadline = io_deadline(b, timeout_ms);
	*sent = HL_SENT_NOTHING;
	for (i = 0; i < ncmd; i++)
		replies[i] = NULL;
	/* An idle connection must have nothing to read: readable means the
	 * server closed it (restart, timeout) or sent garbage. Checked
	 * before use so a command is not written into a dead socket, where
	 * it would be ambiguous whether it ran. */
	if (conn->olen == 0 && hl__conn_dead(conn))
		return conn->tls ? hl__fail_wrap(HL_EIO, "the connection to "
		                                         "redis was closed")
		                 : hl__fail(HL_EIO, "the connection to redis "
		                                    "was closed");
	if ((rc = hl__bound_check(b)) != HL_OK)
		return rc;
	for (i = 0; i < ncmd; i++)
		if ((rc = hl__conn_append(conn, argcs[i], argvs[i], lens[i])) !=
		    HL_OK)
			return rc;
	while (conn->olen > 0) {
		if ((rc = hl__conn_write_some(conn, &wrote)) != HL_OK)
			return rc;
		if (wrote)
			*sent = HL_SENT_MAYBE;
		if (conn->olen > 0 &&
		    (rc = wait_fd(conn->fd,
		                  conn->tls ? conn->tls_wwant : POLLOUT,
		                  deadline, b, "writing to redis",
		                  timeout_ms)) != HL_OK)
			return rc;
	}
	*sent = HL_SENT_MAYBE;
	while (got < ncmd) {
		hl_reply *r;
		if ((rc = hl__conn_next_reply(conn, &r)) != HL_OK)
			return rc;
		if (r) {
			replies[got++] = r;
			continue;
		}
		if (conn->rcvtimeo_ms) {
			if ((rc = plain_read_wait(conn, deadline, b,
			                          timeout_ms)) != HL_OK)
				return rc;
			continue;
		}
		/* Bytes OpenSSL already decrypted do not make the socket
		 * readable. */
		if ((!conn->tls || hl__tls_pending(conn->tls) == 0) &&
		    (rc = wait_fd(conn->fd,
		                  conn->tls ? conn->tls_rwant : POLLIN,
		                  deadline, b, "reading from redis",
		                  timeout_ms)) != HL_OK)
			return rc;
		if ((rc = hl__conn_read_some(conn)) != HL_OK)
			return rc;
	}
	return HL_OK;
}

int hl__conn_pump(hl_conn *conn, int wake_fd, int64_t timeout_ms)
{
	struct pollfd p[2];
	int rc, wrote, n = 1, ms;
	if ((rc = hl__conn_write_some(conn, &wrote)) != HL_OK)
		return rc;
	/* Bytes OpenSSL already decrypted do not make the socket
	 * readable. */
	if (conn->tls && hl__tls_pending(conn->tls) > 0)
		timeout_ms = 0;
	ms = timeout_ms <= 0        ? 0
	     : timeout_ms > 1 << 30 ? 1 << 30
	                            : (int)timeout_ms;
	p[0].fd = conn->fd;
	p[0].events = conn->tls ? conn->tls_rwant : POLLIN;
	if (conn->olen > 0)
		p[0].events |= conn->tls ? conn->tls_wwant : POLLOUT;
	p[0].revents = 0;
	if (wake_fd >= 0) {
		p[1].fd = wake_fd;
		p[1].events = POLLIN;
		p[1].revents = 0;
		n = 2;
	}
	rc = poll(p, (nfds_t)n, ms);
	if (rc < 0 && errno != EINTR)
		return hl__fail(HL_EIO, "poll: %s", strerror(errno));
	if (p[0].revents == 0 && !(conn->tls && hl__tls_pending(conn->tls) > 0))
		return HL_OK;
	if (conn->olen > 0 && (rc = hl__conn_write_some(conn, &wrote)) != HL_OK)
		return rc;
	return hl__conn_read_some(conn);
}

int hl__conn_pump_n(hl_conn **conns, int *rcs, int n, int wake_fd,
                    int64_t timeout_ms)
{
	struct pollfd stack[9], *p = stack;
	int i, rc, wrote, np = 0, ms;
	if (n + 1 > (int)(sizeof(stack) / sizeof(stack[0])) &&
	    !(p = malloc((size_t)(n + 1) * sizeof(*p))))
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		hl_conn *conn = conns[i];
		rcs[i] = hl__conn_write_some(conn, &wrote);
		/* Bytes OpenSSL already decrypted do not make the socket
		 * readable. */
		if (rcs[i] != HL_OK ||
		    (conn->tls && hl__tls_pending(conn->tls) > 0))
			timeout_ms = 0;
		p[i].fd = rcs[i] == HL_OK ? conn->fd : -1;
		p[i].events = conn->tls ? conn->tls_rwant : POLLIN;
		if (conn->olen > 0)
			p[i].events |= conn->tls ? conn->tls_wwant : POLLOUT;
		p[i].revents = 0;
	}
	np = n;
	if (wake_fd >= 0) {
		p[np].fd = wake_fd;
		p[np].events = POLLIN;
		p[np].revents = 0;
		np++;
	}
	ms = timeout_ms <= 0        ? 0
	     : timeout_ms > 1 << 30 ? 1 << 30
	                            : (int)timeout_ms;
	rc = poll(p, (nfds_t)np, ms);
	if (rc < 0 && errno != EINTR) {
		rc = hl__fail(HL_EIO, "poll: %s", strerror(errno));
		if (p != stack)
			free(p);
		return rc;
	}
	for (i = 0; i < n; i++) {
		hl_conn *conn = conns[i];
		if (rcs[i] != HL_OK ||
		    (p[i].revents == 0 &&
		     !(conn->tls && hl__tls_pending(conn->tls) > 0)))
			continue;
		if (conn->olen > 0 &&
		    (rcs[i] = hl__conn_write_some(conn, &wrote)) != HL_OK)
			continue;
		rcs[i] = hl__conn_read_some(conn);
	}
	if (p != stack)
		free(p);
	return HL_OK;
}
