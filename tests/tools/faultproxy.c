/*
 * faultproxy: a TCP proxy in front of one Redis, for fault-injection tests.
 *
 *   faultproxy UPSTREAM_PORT
 *
 * Listens on 127.0.0.1 on a free port, prints "port N" on stdout once
 * listening, and forwards each accepted connection to 127.0.0.1:UPSTREAM_PORT
 * (one upstream connection per client connection). Commands come on stdin,
 * one per line; each is answered on stdout with "ok" (or "err <reason>")
 * once its effect is in place:
 *
 *   reset           close every connection pair with RST on both sides
 *   blackhole on    forward nothing and read nothing: data stays queued in
 *                   the kernel (a network dropping packets that TCP will
 *                   retransmit); new connections are accepted
 *   blackhole off   everything queued flows again (late)
 *   drop on|off     read and discard data in both directions (lost)
 *   delay MS        hold each chunk read from now on MS ms before writing
 *                   it (in either direction, order kept); 0 removes it
 *   count           "ok N": the connection pairs held open
 *   quit            "ok", then exit 0 (so does EOF on stdin)
 *
 * Single-threaded, poll()-based. Each direction buffers at most BUF_MAX
 * bytes; a side is not read while its peer's buffer is full. Half-closes
 * are forwarded (a FIN becomes shutdown(SHUT_WR) on the other side once
 * the buffered data is written); a reset or error on one side resets both.
 * An unreachable upstream closes that client connection only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX      (1024 * 1024) /* per direction */
#define READ_CHUNK   (64 * 1024)
#define LINE_MAX_LEN 256

struct chunk {
	struct chunk *next;
	int64_t due_ns; /* monotonic time it may be written at */
	size_t len, off;
	char data[];
};

struct queue {
	struct chunk *head, *tail;
	size_t bytes;
};

struct side {
	int fd;
	int eof;     /* read returned 0 */
	int shut_wr; /* shutdown(SHUT_WR) done */
};

struct pair {
	struct side c, u; /* client, upstream */
	int connecting;   /* upstream connect() in progress */
	struct queue c2u; /* read from c, to be written to u */
	struct queue u2c; /* read from u, to be written to c */
	int dead;         /* closed; freed at the end of the iteration */
	short ev_c, ev_u; /* events polled for in this iteration */
};

static struct pair **g_pairs;
static size_t g_npairs, g_cap;
static int g_upstream_port;
static int g_blackhole, g_drop;
static int64_t g_delay_ns;
static char g_scratch[READ_CHUNK];

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "faultproxy: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Write all of s to stdout; the parent is gone if that fails. */
static void say(const char *s)
{
	size_t len = strlen(s), done = 0;

	while (done < len) {
		ssize_t n = write(1, s + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			exit(1);
		done += (size_t)n;
	}
}

/* ------------------------------------------------------------------------
 * Queues
 * ------------------------------------------------------------------------ */
static int queue_push(struct queue *q, const char *data, size_t len,
                      int64_t due_ns)
{
	struct chunk *ch = malloc(sizeof *ch + len);

	if (!ch)
		return -1;
	ch->next = NULL;
	ch->due_ns = due_ns;
	ch->len = len;
	ch->off = 0;
	memcpy(ch->data, data, len);
	if (q->tail)
		q->tail->next = ch;
	else
		q->head = ch;
	q->tail = ch;
	q->bytes += len;
	return 0;
}

static void queue_pop(struct queue *q)
{
	struct chunk *ch = q->head;

	q->head = ch->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= ch->len;
	free(ch);
}

static void queue_clear(struct queue *q)
{
	while (q->head)
		queue_pop(q);
}

/* 1 when the head chunk may be written now. */
static int queue_due(const struct queue *q, int64_t now)
{
	return q->head && q->head->due_ns <= now;
}

/* ------------------------------------------------------------------------
 * Connection pairs
 * ------------------------------------------------------------------------ */
static void close_rst(int fd)
{
	struct linger lg;

	if (fd < 0)
		return;
	lg.l_onoff = 1;
	lg.l_linger = 0;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void pair_free_queues(struct pair *p)
{
	queue_clear(&p->c2u);
	queue_clear(&p->u2c);
}

/* Both sides closed with RST. */
static void pair_abort(struct pair *p)
{
	if (p->dead)
		return;
	close_rst(p->c.fd);
	close_rst(p->u.fd);
	p->c.fd = p->u.fd = -1;
	pair_free_queues(p);
	p->dead = 1;
}

/* Both sides done in both directions: an orderly close. */
static void pair_close(struct pair *p)
{
	if (p->dead)
		return;
	close(p->c.fd);
	close(p->u.fd);
	p->c.fd = p->u.fd = -1;
	pair_free_queues(p);
	p->dead = 1;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void pair_new(int cfd)
{
	struct sockaddr_in a;
	struct pair *p;
	int ufd;

	set_nodelay(cfd);
	if (g_npairs == g_cap) {
		size_t cap = g_cap ? g_cap * 2 : 16;
		struct pair **np = realloc(g_pairs, cap * sizeof *np);
		if (!np) {
			close_rst(cfd);
			return;
		}
		g_pairs = np;
		g_cap = cap;
	}
	p = calloc(1, sizeof *p);
	if (!p) {
		close_rst(cfd);
		return;
	}
	p->c.fd = cfd;
	p->u.fd = -1;
	ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ufd < 0) {
		close_rst(cfd);
		free(p);
		return;
	}
	set_nodelay(ufd);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)g_upstream_port);
	if (connect(ufd, (struct sockaddr *)&a, sizeof a) != 0) {
		if (errno != EINPROGRESS && errno != EINTR) {
			/* upstream unreachable: this connection only */
			close(ufd);
			close_rst(cfd);
			free(p);
			return;
		}
		p->connecting = 1;
	}
	p->u.fd = ufd;
	g_pairs[g_npairs++] = p;
}

static void accept_pending(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return; /* EAGAIN, or out of descriptors: later */
		}
		pair_new(fd);
	}
}

static void sweep(void)
{
	size_t i, k = 0;

	for (i = 0; i < g_npairs; i++) {
		if (g_pairs[i]->dead)
			free(g_pairs[i]);
		else
			g_pairs[k++] = g_pairs[i];
	}
	g_npairs = k;
}

static long live_pairs(void)
{
	size_t i;
	long n = 0;

	for (i = 0; i < g_npairs; i++)
		if (!g_pairs[i]->dead)
			n++;
	return n;
}

/* One read from src into q (or into nothing while dropping). Returns -1
 * when the pair was aborted. */
static int dir_read(struct pair *p, struct side *src, struct queue *q,
                    int64_t now)
{
	size_t want = sizeof g_scratch;
	ssize_t n;

	if (!g_drop && BUF_MAX - q->bytes < want)
		want = BUF_MAX - q->bytes;
	if (want == 0)
		return 0;
	do
		n = read(src->fd, g_scratch, want);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		pair_abort(p);
		return -1;
	}
	if (n == 0) {
		src->eof = 1;
		return 0;
	}
	if (g_drop)
		return 0;
	if (queue_push(q, g_scratch, (size_t)n, now + g_delay_ns) != 0) {
		pair_abort(p);
		return -1;
	}
	return 0;
}

/* Write what is due of q to dst; forward src's EOF once q is empty.
 * Returns -1 when the pair was aborted. */
static int dir_flush(struct pair *p, const struct side *src, struct side *dst,
                     struct queue *q, int64_t now)
{
	while (queue_due(q, now)) {
		struct chunk *ch = q->head;
		ssize_t n = send(dst->fd, ch->data + ch->off, ch->len - ch->off,
		                 MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			pair_abort(p);
			return -1;
		}
		ch->off += (size_t)n;
		if (ch->off == ch->len)
			queue_pop(q);
	}
	if (src->eof && !q->head && !dst->shut_wr) {
		shutdown(dst->fd, SHUT_WR);
		dst->shut_wr = 1;
	}
	return 0;
}

/* Events to poll for on each side, and the earliest time a held chunk
 * becomes due (*next_ns, left alone if none). */
static void pair_events(struct pair *p, int64_t now, int64_t *next_ns)
{
	struct queue *qs[2] = {&p->c2u, &p->u2c};
	int i;

	p->ev_c = p->ev_u = 0;
	if (!p->c.eof && (g_drop || p->c2u.bytes < BUF_MAX))
		p->ev_c |= POLLIN;
	if (queue_due(&p->u2c, now))
		p->ev_c |= POLLOUT;
	if (p->connecting) {
		p->ev_u = POLLOUT;
	} else {
		if (!p->u.eof && (g_drop || p->u2c.bytes < BUF_MAX))
			p->ev_u |= POLLIN;
		if (queue_due(&p->c2u, now))
			p->ev_u |= POLLOUT;
	}
	for (i = 0; i < 2; i++)
		if (qs[i]->head && qs[i]->head->due_ns > now &&
		    (*next_ns < 0 || qs[i]->head->due_ns < *next_ns))
			*next_ns = qs[i]->head->due_ns;
}

/* After poll: reads and connect completion. */
static void pair_input(struct pair *p, short rev_c, short rev_u, int64_t now)
{
	if ((rev_c & POLLERR) || (rev_u & POLLERR && !p->connecting)) {
		pair_abort(p);
		return;
	}
	if (p->connecting && rev_u) {
		int err = 0;
		socklen_t len = sizeof err;

		if (getsockopt(p->u.fd, SOL_SOCKET, SO_ERROR, &err, &len) !=
		            0 ||
		    err != 0) {
			pair_abort(p); /* upstream unreachable */
			return;
		}
		p->connecting = 0;
	}
	if ((p->ev_c & POLLIN) && (rev_c & (POLLIN | POLLHUP)) &&
	    dir_read(p, &p->c, &p->c2u, now) < 0)
		return;
	if ((p->ev_u & POLLIN) && (rev_u & (POLLIN | POLLHUP)))
		dir_read(p, &p->u, &p->u2c, now);
}

/* Writes, forwarded EOFs, and the orderly close when all is done. */
static void pair_output(struct pair *p, int64_t now)
{
	if (p->dead || p->connecting)
		return;
	if (dir_flush(p, &p->c, &p->u, &p->c2u, now) < 0 ||
	    dir_flush(p, &p->u, &p->c, &p->u2c, now) < 0)
		return;
	if (p->c.eof && p->u.eof && p->c.shut_wr && p->u.shut_wr)
		pair_close(p);
}

/* ------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------ */
static int parse_onoff(const char *arg, int *out)
{
	if (strcmp(arg, "on") == 0)
		*out = 1;
	else if (strcmp(arg, "off") == 0)
		*out = 0;
	else
		return -1;
	return 0;
}

static void command(char *line, int lfd)
{
	char *arg, *end;
	size_t i;

	while (*line == ' ' || *line == '\t')
		line++;
	end = line + strlen(line);
	while (end > line &&
	       (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	arg = strchr(line, ' ');
	if (arg) {
		*arg++ = '\0';
		while (*arg == ' ')
			arg++;
	} else {
		arg = end;
	}

	if (strcmp(line, "reset") == 0 && !*arg) {
		/* connections the kernel completed but we did not accept yet
		 * are current too, for the one who connected */
		accept_pending(lfd);
		for (i = 0; i < g_npairs; i++)
			pair_abort(g_pairs[i]);
		sweep();
		say("ok\n");
	} else if (strcmp(line, "blackhole") == 0) {
		if (parse_onoff(arg, &g_blackhole) != 0)
			say("err usage: blackhole on|off\n");
		else
			say("ok\n");
	} else if (strcmp(line, "drop") == 0) {
		if (parse_onoff(arg, &g_drop) != 0)
			say("err usage: drop on|off\n");
		else
			say("ok\n");
	} else if (strcmp(line, "delay") == 0) {
		char *e;
		long ms;

		errno = 0;
		ms = strtol(arg, &e, 10);
		if (!*arg || *e || errno || ms < 0 || ms > 3600000) {
			say("err usage: delay MS (0 to 3600000)\n");
		} else {
			g_delay_ns = (int64_t)ms * 1000000;
			say("ok\n");
		}
	} else if (strcmp(line, "count") == 0 && !*arg) {
		char buf[64];

		accept_pending(lfd);
		snprintf(buf, sizeof buf, "ok %ld\n", live_pairs());
		say(buf);
	} else if (strcmp(line, "quit") == 0 && !*arg) {
		say("ok\n");
		exit(0);
	} else if (!*line) {
		say("err empty command\n");
	} else {
		say("err unknown command\n");
	}
}

/* Read stdin and run the complete lines. */
static void read_commands(int lfd)
{
	static char buf[LINE_MAX_LEN];
	static size_t len;
	static int skipping; /* inside an overlong line */
	ssize_t n;
	char *nl;

	do
		n = read(0, buf + len, sizeof buf - 1 - len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0)
		exit(0); /* EOF (or error): whoever drove us is gone */
	len += (size_t)n;
	buf[len] = '\0';
	while ((nl = memchr(buf, '\n', len)) != NULL) {
		size_t used = (size_t)(nl - buf) + 1;

		*nl = '\0';
		if (skipping)
			skipping = 0;
		else if (memchr(buf, '\0', used - 1))
			say("err bad command\n");
		else
			command(buf, lfd);
		memmove(buf, buf + used, len - used);
		len -= used;
	}
	if (len == sizeof buf - 1) {
		if (!skipping)
			say("err command too long\n");
		skipping = 1;
		len = 0;
	}
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */
static void close_inherited_fds(void)
{
	int fd;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
		return;
#endif
	for (fd = 3; fd < 4096; fd++)
		close(fd);
}

static int listen_loopback(int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	if (listen(fd, 128) != 0)
		die("listen");
	if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		die("getsockname");
	*port = ntohs(a.sin_port);
	return fd;
}

int main(int argc, char **argv)
{
	struct pollfd *pfds = NULL;
	size_t pfd_cap = 0;
	char buf[64];
	char *end;
	long up;
	int lfd, port;

	/* never outlive the test that started us; should it be gone already,
	 * stdin is at EOF and we exit at the first poll */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	close_inherited_fds();

	if (argc != 2) {
		fprintf(stderr, "usage: faultproxy UPSTREAM_PORT\n");
		return 2;
	}
	errno = 0;
	up = strtol(argv[1], &end, 10);
	if (!*argv[1] || *end || errno || up < 1 || up > 65535) {
		fprintf(stderr, "faultproxy: bad port %s\n", argv[1]);
		return 2;
	}
	g_upstream_port = (int)up;

	lfd = listen_loopback(&port);
	snprintf(buf, sizeof buf, "port %d\n", port);
	say(buf);

	for (;;) {
		int64_t now = now_ns(), next = -1;
		size_t n = g_npairs, i, k;
		int timeout = -1, rc;

		if (pfd_cap < 2 + 2 * n) {
			pfd_cap = 2 + 2 * n + 32;
			free(pfds);
			pfds = malloc(pfd_cap * sizeof *pfds);
			if (!pfds)
				die("malloc");
		}
		pfds[0].fd = 0;
		pfds[0].events = POLLIN;
		pfds[1].fd = lfd;
		pfds[1].events = POLLIN;
		for (i = 0; i < n; i++) {
			struct pair *p = g_pairs[i];

			/* black-holed: not even errors are looked at */
			if (g_blackhole)
				p->ev_c = p->ev_u = 0;
			else
				pair_events(p, now, &next);
			pfds[2 + 2 * i].fd = p->ev_c ? p->c.fd : -1;
			pfds[2 + 2 * i].events = p->ev_c;
			pfds[3 + 2 * i].fd = p->ev_u ? p->u.fd : -1;
			pfds[3 + 2 * i].events = p->ev_u;
		}
		if (next >= 0) {
			int64_t ms = (next - now + 999999) / 1000000;
			timeout = ms > 60000 ? 60000 : (int)ms;
		}
		for (k = 0; k < 2 + 2 * n; k++)
			pfds[k].revents = 0;
		rc = poll(pfds, (nfds_t)(2 + 2 * n), timeout);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}

		now = now_ns();
		if (!g_blackhole) {
			for (i = 0; i < n; i++)
				pair_input(g_pairs[i], pfds[2 + 2 * i].revents,
				           pfds[3 + 2 * i].revents, now);
			for (i = 0; i < n; i++)
				pair_output(g_pairs[i], now);
		}
		sweep();
		if (pfds[1].revents)
			accept_pending(lfd);
		if (pfds[0].revents)
			read_commands(lfd);
	}
}
