/*
 * Topology harness: TLS material, a TLS server, Sentinel and Cluster
 * deployments of real redis-server processes. See harness_topo.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness_topo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { K_SINGLE = 1, K_DATA, K_SENTINEL, K_CLUSTER };

#define MAX_NODES     64
#define MAX_DIRS      32
#define CMD_TIMEOUT   5000 /* ms, scaled: a side-channel command */
#define POLL_TIMEOUT  2000 /* ms, scaled: a command inside a wait loop */
#define POLL_INTERVAL 20   /* ms between two looks in a wait loop */

static pid_t g_pid; /* the process that owns the registry */
static ht_node *g_nodes[MAX_NODES];
static int g_nnodes;
static char g_dirs[MAX_DIRS][256]; /* directories to remove at exit */
static int g_ndirs;
static int g_reaper_fd = -1; /* write end of the reaper's pipe */

static void topo_at_exit(void);

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */
static void check_main_thread(void)
{
	if (gettid() != getpid())
		HT_FAIL("topology start/stop/kill/wait must run on the test's "
		        "main thread");
}

static void registry_init(void)
{
	if (g_pid == getpid())
		return;
	/* first use, or first use in a forked child: a fresh registry */
	g_pid = getpid();
	g_nnodes = 0;
	g_ndirs = 0;
	g_reaper_fd = -1;
	atexit(topo_at_exit);
}

static void *xcalloc(size_t n)
{
	void *p = calloc(1, n);
	if (!p)
		HT_FAIL("out of memory");
	return p;
}

/* snprintf that fails the test on truncation. */
static void fmt_path(char *dst, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void fmt_path(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		HT_FAIL("path or string too long: %s", dst);
}

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= len)
		HT_FAIL("string too long (%zu bytes, at most %zu)", n, len - 1);
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static int64_t deadline_in(int64_t ms)
{
	return ht_now_ms() + ms * ht_scale();
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *dir)
{
	if (dir && dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tmp_base(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp || strlen(tmp) > 60)
		tmp = "/tmp";
	return tmp;
}

/* One pause of a wait loop. HILOCK_TOPO_DEBUG=1: print why it still
 * waits, every 250 ms. */
static void wait_pause(const char *what, const char *why)
{
	static int on = -1;
	static int64_t last;

	if (on < 0)
		on = getenv("HILOCK_TOPO_DEBUG") &&
		     strcmp(getenv("HILOCK_TOPO_DEBUG"), "1") == 0;
	if (on && ht_now_ms() - last >= 250) {
		last = ht_now_ms();
		ht_note("%s: waiting: %s", what, why);
	}
	ht_sleep_ms(POLL_INTERVAL);
}
static void write_all_fd(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* ------------------------------------------------------------------------
 * The reaper: a grandchild that outlives a test killed by ht_fail() (which
 * _exit()s without atexit handlers). It reads "+dir" / "-dir" lines; at
 * EOF (the test process is gone) it prints the tail of each redis.log
 * still registered and removes those directories. The nodes themselves
 * die of PR_SET_PDEATHSIG.
 * ------------------------------------------------------------------------ */
static char (*r_dirs)[256];
static int r_ndirs;

static int dump_one(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
	char buf[2048], head[400];
	const char *base = path + ftw->base;
	ssize_t n;
	int fd, hn;

	if (flag != FTW_F || strcmp(base, "redis.log") != 0)
		return 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	if (st->st_size > (off_t)sizeof buf)
		lseek(fd, st->st_size - (off_t)sizeof buf, SEEK_SET);
	n = read(fd, buf, sizeof buf);
	close(fd);
	hn = snprintf(head, sizeof head, "--- tail of %s ---\n", path);
	write_all_fd(2, head, (size_t)hn);
	if (n > 0)
		write_all_fd(2, buf, (size_t)n);
	write_all_fd(2, "---\n", 4);
	return 0;
}

static void reaper_line(char *line)
{
	int i;

	if (line[0] == '+' && r_ndirs < MAX_DIRS) {
		snprintf(r_dirs[r_ndirs++], 256, "%s", line + 1);
	} else if (line[0] == '-') {
		for (i = 0; i < r_ndirs; i++)
			if (strcmp(r_dirs[i], line + 1) == 0) {
				memmove(r_dirs[i], r_dirs[r_ndirs - 1], 256);
				r_ndirs--;
				break;
			}
	}
}

static void reaper_main(int rfd)
{
	static char dirs[MAX_DIRS][256];
	char buf[4096];
	size_t len = 0;
	int i;

	r_dirs = dirs;
	for (;;) {
		ssize_t n = read(rfd, buf + len, sizeof buf - 1 - len);
		char *nl, *p;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		p = buf;
		while ((nl = memchr(p, '\n', len - (size_t)(p - buf)))) {
			*nl = '\0';
			reaper_line(p);
			p = nl + 1;
		}
		len -= (size_t)(p - buf);
		memmove(buf, p, len);
		if (len == sizeof buf - 1)
			len = 0;
	}
	if (r_ndirs == 0)
		_exit(0);
	/* let the nodes' death signals land before reading their logs */
	ht_sleep_ms(300);
	for (i = 0; i < r_ndirs; i++) {
		nftw(r_dirs[i], dump_one, 16, FTW_PHYS);
		rm_rf(r_dirs[i]);
	}
	_exit(0);
}

static void reaper_start(void)
{
	int fds[2], fd, status;
	pid_t pid;

	if (g_reaper_fd >= 0)
		return;
	if (pipe2(fds, O_CLOEXEC) != 0)
		HT_FAIL("pipe2: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		HT_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		/* a grandchild: not a child the test could wait for */
		if (fork() != 0)
			_exit(0);
		setpgid(0, 0); /* no terminal ^C: it must clean up after */
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
		}
		for (fd = 3; fd < 4096; fd++)
			if (fd != fds[0])
				close(fd);
		reaper_main(fds[0]);
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	g_reaper_fd = fds[1];
}

static void reaper_say(char sign, const char *dir)
{
	char line[300];
	int n;

	if (g_reaper_fd < 0)
		return;
	n = snprintf(line, sizeof line, "%c%s\n", sign, dir);
	if (n > 0 && (size_t)n < sizeof line)
		write_all_fd(g_reaper_fd, line, (size_t)n);
}

/* Create a directory "<tmp>/<prefix>-XXXXXX" into dst, removed at exit. */
static void own_new_dir(char *dst, size_t len, const char *prefix)
{
	registry_init();
	reaper_start();
	if (g_ndirs >= MAX_DIRS)
		HT_FAIL("too many topology directories");
	fmt_path(dst, len, "%s/%s-XXXXXX", tmp_base(), prefix);
	if (!mkdtemp(dst))
		HT_FAIL("mkdtemp %s: %s", dst, strerror(errno));
	copy_str(g_dirs[g_ndirs++], sizeof g_dirs[0], dst);
	reaper_say('+', dst);
}

static void release_dir(const char *dir)
{
	int i;

	for (i = 0; i < g_ndirs; i++)
		if (strcmp(g_dirs[i], dir) == 0) {
			rm_rf(dir);
			reaper_say('-', dir);
			memmove(g_dirs[i], g_dirs[g_ndirs - 1],
			        sizeof g_dirs[0]);
			g_ndirs--;
			return;
		}
}

/* ------------------------------------------------------------------------
 * Processes
 * ------------------------------------------------------------------------ */

/* fork + exec argv with PR_SET_PDEATHSIG, in its own process group. Each
 * fd < 0 means /dev/null. */
static pid_t spawn_argv(const char *const argv[], int in_fd, int out_fd,
                        int err_fd)
{
	pid_t parent = getpid();
	pid_t pid;
	int null_fd;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		HT_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		null_fd = open("/dev/null", O_RDWR);
		dup2(in_fd >= 0 ? in_fd : null_fd, 0);
		dup2(out_fd >= 0 ? out_fd : null_fd, 1);
		dup2(err_fd >= 0 ? err_fd : null_fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Send sig, then SIGKILL after grace_ms; reap. */
static void proc_stop(pid_t pid, int sig, int64_t grace_ms)
{
	int64_t deadline = ht_now_ms() + grace_ms;
	int status;

	if (pid <= 0)
		return;
	kill(pid, sig);
	if (sig != SIGKILL)
		kill(pid, SIGCONT); /* a paused process never sees SIGTERM */
	while (ht_now_ms() < deadline) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno == ECHILD))
			return;
		ht_sleep_ms(5);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

int ht_run(char *out, size_t out_len, int64_t timeout_ms,
           const char *const argv[])
{
	int fds[2], status = 0, timed_out = 0;
	size_t got = 0;
	int64_t deadline = deadline_in(timeout_ms);
	char sink[4096];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		HT_FAIL("pipe2: %s", strerror(errno));
	pid = spawn_argv(argv, -1, fds[1], fds[1]);
	close(fds[1]);
	for (;;) {
		struct pollfd pfd;
		int64_t left = deadline - ht_now_ms();
		ssize_t n;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		pfd.fd = fds[0];
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!pfd.revents)
			continue;
		if (out && got + 1 < out_len)
			n = read(fds[0], out + got, out_len - 1 - got);
		else
			n = read(fds[0], sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out && got + 1 < out_len)
			got += (size_t)n;
	}
	close(fds[0]);
	if (out && out_len)
		out[got] = '\0';
	if (timed_out)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (timed_out)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* Split s (modified) on spaces into argv after the n entries already
 * there; returns the new count. */
static int split_words(char *s, const char **argv, int n, int max)
{
	char *save = NULL, *w;

	for (w = strtok_r(s, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save)) {
		if (n >= max - 1)
			HT_FAIL("too many words for a command");
		argv[n++] = w;
	}
	argv[n] = NULL;
	return n;
}

static int cli_v(char *out, size_t out_len, const char *prefix, const char *fmt,
                 va_list ap)
{
	char words[4096];
	const char *argv[128];
	int n = 0;
	size_t plen = strlen(prefix);

	if (plen >= sizeof words)
		HT_FAIL("redis-cli arguments too long");
	memcpy(words, prefix, plen);
	if (vsnprintf(words + plen, sizeof words - plen, fmt, ap) >=
	    (int)(sizeof words - plen))
		HT_FAIL("redis-cli arguments too long");
	argv[n++] = "redis-cli";
	split_words(words, argv, n, 128);
	return ht_run(out, out_len, 10000, argv);
}

int ht_cli(char *out, size_t out_len, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = cli_v(out, out_len, "", fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------------------
 * The side channel: hiredis over TCP, or over an openssl s_client child
 * ------------------------------------------------------------------------ */
struct ht_conn {
	redisContext *ctx; /* plain */
	pid_t pid;         /* TLS: the s_client */
	int to_fd, from_fd;
	redisReader *reader;
	pid_t opener; /* the process that opened it */
};

static void conn_close(struct ht_conn *c)
{
	if (!c)
		return;
	if (c->opener != getpid()) {
		/* a forked child: its copies only, the s_client is not ours */
		if (c->ctx)
			redisFree(c->ctx); /* closes the copy, sends nothing */
		if (c->to_fd >= 0)
			close(c->to_fd);
		if (c->from_fd >= 0)
			close(c->from_fd);
		if (c->reader)
			redisReaderFree(c->reader);
		free(c);
		return;
	}
	if (c->ctx)
		redisFree(c->ctx);
	if (c->to_fd >= 0)
		close(c->to_fd);
	if (c->from_fd >= 0)
		close(c->from_fd);
	if (c->pid > 0)
		proc_stop(c->pid, SIGKILL, 0);
	if (c->reader)
		redisReaderFree(c->reader);
	free(c);
}

static void node_conn_drop(ht_node *n)
{
	conn_close(n->conn);
	n->conn = NULL;
}

/* One formatted command; the reply, or NULL (the connection is then
 * unusable). */
static redisReply *conn_send(struct ht_conn *c, const char *cmd, size_t len,
                             int64_t timeout_ms)
{
	int64_t deadline = ht_now_ms() + timeout_ms;
	void *rep = NULL;

	if (c->ctx) {
		struct timeval tv;

		tv.tv_sec = timeout_ms / 1000;
		tv.tv_usec = (timeout_ms % 1000) * 1000;
		redisSetTimeout(c->ctx, tv);
		if (redisAppendFormattedCommand(c->ctx, cmd, len) != REDIS_OK)
			return NULL;
		if (redisGetReply(c->ctx, &rep) != REDIS_OK)
			return NULL;
		return rep;
	}
	{
		const char *p = cmd;
		size_t left = len;

		while (left > 0) {
			ssize_t n = write(c->to_fd, p, left);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return NULL;
			p += n;
			left -= (size_t)n;
		}
	}
	for (;;) {
		char buf[16384];
		struct pollfd pfd;
		int64_t left;
		ssize_t n;

		if (redisReaderGetReply(c->reader, &rep) != REDIS_OK)
			return NULL;
		if (rep)
			return rep;
		left = deadline - ht_now_ms();
		if (left <= 0)
			return NULL;
		pfd.fd = c->from_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return NULL;
		if (!pfd.revents)
			continue;
		n = read(c->from_fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
			return NULL;
	}
}

static redisReply *conn_fmt(struct ht_conn *c, int64_t timeout_ms,
                            const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL;
	int len;
	redisReply *rep;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0)
		HT_FAIL("cannot format \"%s\"", fmt);
	rep = conn_send(c, cmd, (size_t)len, timeout_ms);
	redisFreeCommand(cmd);
	return rep;
}

/* The node whose start node_wait_ready waits for (main thread only):
 * until its own process answers, a server that refuses its password is
 * somebody else's on the port it picked (a test running beside this one
 * took it first), not a failure of the test. */
static const ht_node *g_node_starting;

/* A connection to n, authenticated; NULL if it cannot be reached. */
static struct ht_conn *conn_open(ht_node *n, int64_t timeout_ms)
{
	struct ht_conn *c = xcalloc(sizeof *c);
	redisReply *rep;

	c->to_fd = c->from_fd = -1;
	c->opener = getpid();
	if (!n->tls) {
		struct timeval tv;

		tv.tv_sec = timeout_ms / 1000;
		tv.tv_usec = (timeout_ms % 1000) * 1000;
		c->ctx = redisConnectWithTimeout("127.0.0.1", n->port, tv);
		if (!c->ctx || c->ctx->err) {
			conn_close(c);
			return NULL;
		}
	} else {
		int in[2], out[2];
		char addr[64];
		const char *argv[20];
		int k = 0;

		if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
			HT_FAIL("pipe2: %s", strerror(errno));
		snprintf(addr, sizeof addr, "127.0.0.1:%d", n->port);
		argv[k++] = "openssl";
		argv[k++] = "s_client";
		argv[k++] = "-quiet";
		argv[k++] = "-nocommands";
		argv[k++] = "-connect";
		argv[k++] = addr;
		argv[k++] = "-CAfile";
		argv[k++] = n->tls->ca_cert;
		argv[k++] = "-cert";
		argv[k++] = n->tls->client_cert;
		argv[k++] = "-key";
		argv[k++] = n->tls->client_key;
		argv[k] = NULL;
		c->pid = spawn_argv(argv, in[0], out[1], -1);
		close(in[0]);
		close(out[1]);
		c->to_fd = in[1];
		c->from_fd = out[0];
		c->reader = redisReaderCreate();
		if (!c->reader)
			HT_FAIL("out of memory");
	}
	if (n->password[0])
		rep = conn_fmt(c, timeout_ms, "AUTH %s", n->password);
	else
		rep = conn_fmt(c, timeout_ms, "PING");
	if (!rep) {
		conn_close(c);
		return NULL;
	}
	if (rep->type == REDIS_REPLY_ERROR && n->password[0] &&
	    !strstr(rep->str, "LOADING")) {
		if (n != g_node_starting)
			HT_FAIL("AUTH on %s (port %d) refused: %s", n->name,
			        n->port, rep->str);
		/* another server on the port it picked: ours exits */
		freeReplyObject(rep);
		conn_close(c);
		return NULL;
	}
	freeReplyObject(rep);
	return c;
}

/* The command cmd on n: NULL if n is not running or paused, or cannot be
 * reached within timeout_ms. One reconnect. */
static redisReply *node_send(ht_node *n, const char *cmd, size_t len,
                             int64_t timeout_ms)
{
	int attempt;

	if (n->conn && n->conn->opener != getpid())
		node_conn_drop(n); /* never share the parent's connection */
	if (n->pid <= 0 || n->paused)
		return NULL;
	for (attempt = 0; attempt < 2; attempt++) {
		redisReply *rep;

		if (!n->conn)
			n->conn = conn_open(n, timeout_ms);
		if (!n->conn)
			return NULL;
		rep = conn_send(n->conn, cmd, len, timeout_ms);
		if (rep)
			return rep;
		node_conn_drop(n);
	}
	return NULL;
}

static redisReply *node_vcmd(ht_node *n, int64_t timeout_ms, const char *fmt,
                             va_list ap)
{
	char *cmd = NULL;
	int len = redisvFormatCommand(&cmd, fmt, ap);
	redisReply *rep;

	if (len < 0)
		HT_FAIL("cannot format \"%s\"", fmt);
	rep = node_send(n, cmd, (size_t)len, timeout_ms);
	redisFreeCommand(cmd);
	return rep;
}

/* A command inside a wait loop: short bound, NULL if unreachable. */
static redisReply *node_poll(ht_node *n, const char *fmt, ...)
{
	va_list ap;
	redisReply *rep;

	va_start(ap, fmt);
	rep = node_vcmd(n, (int64_t)POLL_TIMEOUT * ht_scale(), fmt, ap);
	va_end(ap);
	return rep;
}

redisReply *ht_node_try(ht_node *n, const char *fmt, ...)
{
	va_list ap;
	redisReply *rep;

	va_start(ap, fmt);
	rep = node_vcmd(n, (int64_t)CMD_TIMEOUT * ht_scale(), fmt, ap);
	va_end(ap);
	return rep;
}

redisReply *ht_node_cmd(ht_node *n, const char *fmt, ...)
{
	va_list ap;
	redisReply *rep;

	va_start(ap, fmt);
	rep = node_vcmd(n, (int64_t)CMD_TIMEOUT * ht_scale(), fmt, ap);
	va_end(ap);
	if (!rep)
		HT_FAIL("%s (port %d%s) did not answer \"%s\"", n->name,
		        n->port,
		        n->pid <= 0 ? ", not running"
		        : n->paused ? ", paused"
		                    : "",
		        fmt);
	return rep;
}

redisReply *ht_node_cmd_argv(ht_node *n, int argc, const char **argv,
                             const size_t *argvlen)
{
	char *cmd = NULL;
	int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	redisReply *rep;

	if (len < 0)
		HT_FAIL("cannot format a command of %d arguments", argc);
	rep = node_send(n, cmd, (size_t)len, (int64_t)CMD_TIMEOUT * ht_scale());
	redisFreeCommand(cmd);
	if (!rep)
		HT_FAIL("%s (port %d) did not answer %s", n->name, n->port,
		        argc > 0 ? argv[0] : "");
	return rep;
}

/* The value of "field:" in an INFO text into out. */
static int info_field(const char *text, const char *field, char *out,
                      size_t out_len)
{
	size_t flen = strlen(field);
	const char *p = text;

	out[0] = '\0';
	while (p && *p) {
		if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
			const char *v = p + flen + 1;
			size_t n = strcspn(v, "\r\n");

			if (n >= out_len)
				n = out_len - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

static int node_info_t(ht_node *n, const char *section, const char *field,
                       char *out, size_t out_len)
{
	redisReply *rep = node_poll(n, "INFO %s", section);
	int ok = 0;

	out[0] = '\0';
	if (!rep)
		return 0;
	if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS)
		ok = info_field(rep->str, field, out, out_len);
	freeReplyObject(rep);
	return ok;
}

int ht_node_info(ht_node *n, const char *section, const char *field, char *out,
                 size_t out_len)
{
	return node_info_t(n, section, field, out, out_len);
}

int ht_node_cli(ht_node *n, char *out, size_t out_len, const char *fmt, ...)
{
	char prefix[2048];
	int k;
	va_list ap;
	int rc;

	k = snprintf(prefix, sizeof prefix, "-h 127.0.0.1 -p %d ", n->port);
	if (n->password[0])
		k += snprintf(prefix + k, sizeof prefix - (size_t)k,
		              "-a %s --no-auth-warning ", n->password);
	if (n->tls)
		k += snprintf(prefix + k, sizeof prefix - (size_t)k,
		              "--tls --cacert %s --cert %s --key %s ",
		              n->tls->ca_cert, n->tls->client_cert,
		              n->tls->client_key);
	if (k >= (int)sizeof prefix)
		HT_FAIL("redis-cli arguments too long");
	va_start(ap, fmt);
	rc = cli_v(out, out_len, prefix, fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------------------
 * Nodes
 * ------------------------------------------------------------------------ */
static void node_register(ht_node *n)
{
	registry_init();
	if (g_nnodes >= MAX_NODES)
		HT_FAIL("too many topology nodes");
	g_nodes[g_nnodes++] = n;
}

static void node_unregister(ht_node *n)
{
	int i;

	for (i = 0; i < g_nnodes; i++)
		if (g_nodes[i] == n) {
			g_nodes[i] = g_nodes[--g_nnodes];
			return;
		}
}

/* Set up n in <parent>/<name>. */
static void node_init(ht_node *n, int kind, void *owner, const char *parent,
                      const char *name, const char *password,
                      const ht_tls_certs *tls)
{
	memset(n, 0, sizeof *n);
	n->kind = kind;
	n->owner = owner;
	n->tls = tls;
	n->role = kind == K_SENTINEL ? HT_ROLE_SENTINEL : HT_ROLE_NONE;
	copy_str(n->name, sizeof n->name, name);
	copy_str(n->password, sizeof n->password, password);
	fmt_path(n->dir, sizeof n->dir, "%s/%s", parent, name);
	if (mkdir(n->dir, 0700) != 0 && errno != EEXIST)
		HT_FAIL("mkdir %s: %s", n->dir, strerror(errno));
	fmt_path(n->conf, sizeof n->conf, "%s/redis.conf", n->dir);
	fmt_path(n->log, sizeof n->log, "%s/redis.log", n->dir);
	node_register(n);
}

static void node_release(ht_node *n)
{
	node_conn_drop(n);
	if (n->pid > 0)
		proc_stop(n->pid, SIGKILL, 0);
	n->pid = 0;
	n->paused = 0;
	node_unregister(n);
}

/* The lines every server and sentinel config starts with. */
static void conf_common(FILE *f, ht_node *n, int cert_kind, int auth_clients)
{
	fprintf(f,
	        "bind 127.0.0.1\n"
	        "protected-mode no\n"
	        "daemonize no\n"
	        "logfile \"\"\n"
	        "dir \"%s\"\n",
	        n->dir);
	if (!n->tls) {
		fprintf(f, "port %d\n", n->port);
		return;
	}
	fprintf(f,
	        "port 0\n"
	        "tls-port %d\n"
	        "tls-cert-file \"%s\"\n"
	        "tls-key-file \"%s\"\n"
	        "tls-ca-cert-file \"%s\"\n"
	        "tls-client-cert-file \"%s\"\n"
	        "tls-client-key-file \"%s\"\n"
	        "tls-auth-clients %s\n",
	        n->port, n->tls->server_cert[cert_kind],
	        n->tls->server_key[cert_kind], n->tls->ca_cert,
	        n->tls->client_cert, n->tls->client_key,
	        auth_clients ? "yes" : "no");
}

/* The lines of a data-bearing server. */
static void conf_server(FILE *f, ht_node *n)
{
	fprintf(f, "save \"\"\n"
	           "appendonly no\n"
	           "repl-diskless-sync yes\n"
	           "repl-diskless-sync-delay 0\n"
	           "shutdown-timeout 1\n");
	if (n->password[0])
		fprintf(f, "requirepass \"%s\"\nmasterauth \"%s\"\n",
		        n->password, n->password);
	if (n->tls)
		fprintf(f, "tls-replication yes\n");
}

static void conf_sentinel(FILE *f, ht_node *n);
static void conf_cluster(FILE *f, ht_node *n);
static int has_flag(const char *flags, const char *flag);

static void node_write_conf(ht_node *n)
{
	FILE *f = fopen(n->conf, "w");

	if (!f)
		HT_FAIL("cannot write %s: %s", n->conf, strerror(errno));
	switch (n->kind) {
	case K_SINGLE: {
		ht_tls_redis *r = n->owner;
		conf_common(f, n, r->cert_kind, r->require_client_cert);
		conf_server(f, n);
		break;
	}
	case K_DATA: {
		ht_sentinel *s = n->owner;
		conf_common(f, n, HT_CERT_GOOD, s->opts.tls_auth_clients);
		conf_server(f, n);
		if (n->replicaof)
			fprintf(f, "replicaof 127.0.0.1 %d\n", n->replicaof);
		break;
	}
	case K_SENTINEL: {
		ht_sentinel *s = n->owner;
		conf_common(f, n, HT_CERT_GOOD, s->opts.tls_auth_clients);
		conf_sentinel(f, n);
		break;
	}
	case K_CLUSTER: {
		ht_cluster *c = n->owner;
		conf_common(f, n, HT_CERT_GOOD, c->opts.tls_auth_clients);
		conf_server(f, n);
		conf_cluster(f, n);
		break;
	}
	}
	if (fclose(f) != 0)
		HT_FAIL("cannot write %s", n->conf);
}

static void node_spawn(ht_node *n)
{
	const char *bin = ht_server_bin();
	const char *argv[4];
	int k = 0, log;

	node_write_conf(n);
	argv[k++] = bin;
	argv[k++] = n->conf;
	if (n->kind == K_SENTINEL)
		argv[k++] = "--sentinel";
	argv[k] = NULL;
	log = open(n->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log < 0)
		HT_FAIL("cannot open %s: %s", n->log, strerror(errno));
	n->pid = spawn_argv(argv, -1, log, log);
	n->paused = 0;
	close(log);
}

/* 1 once n answers as the process we started; 0 if it exited (a port
 * taken, a bad config) or deadline passed. */
static int node_wait_ready(ht_node *n, int64_t deadline)
{
	char pidbuf[32];
	int status;

	node_conn_drop(n);
	g_node_starting = n;
	while (ht_now_ms() < deadline) {
		if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
			n->pid = 0;
			node_conn_drop(n);
			g_node_starting = NULL;
			return 0;
		}
		if (node_info_t(n, "server", "process_id", pidbuf,
		                sizeof pidbuf)) {
			if (atoi(pidbuf) == n->pid) {
				g_node_starting = NULL;
				return 1;
			}
			/* somebody else on our port: ours exits */
			node_conn_drop(n);
		}
		ht_sleep_ms(10);
	}
	g_node_starting = NULL;
	return 0;
}

static int port_taken(ht_node **ns, int count, int self, int port)
{
	int i;

	for (i = 0; i < count; i++) {
		if (i == self)
			continue;
		if (ns[i]->port == port || ns[i]->bus_port == port)
			return 1;
	}
	return 0;
}

static void pick_ports(ht_node **ns, int count, int i, int want_bus)
{
	int tries;

	for (tries = 0; tries < 50; tries++) {
		int p = ht_free_port();
		if (port_taken(ns, count, i, p))
			continue;
		ns[i]->port = p;
		break;
	}
	if (!want_bus)
		return;
	for (tries = 0; tries < 50; tries++) {
		int p = ht_free_port();
		if (p == ns[i]->port || port_taken(ns, count, i, p))
			continue;
		ns[i]->bus_port = p;
		break;
	}
}

/* Start count nodes at once; keep_port: on their current ports (a
 * restart), else on new free ones (retried on a taken port). */
static void nodes_start(ht_node **ns, int count, int keep_port)
{
	int attempt, i, left;
	int64_t deadline;

	check_main_thread();
	for (i = 0; i < count; i++) {
		if (ns[i]->pid > 0)
			HT_FAIL("%s (port %d) is already running", ns[i]->name,
			        ns[i]->port);
		if (!keep_port)
			pick_ports(ns, count, i, ns[i]->kind == K_CLUSTER);
	}
	/* all ports first: a sentinel's config names the others' */
	for (i = 0; i < count; i++)
		node_spawn(ns[i]);
	for (attempt = 0; attempt < 10; attempt++) {
		deadline = deadline_in(20000);
		left = 0;
		for (i = 0; i < count; i++) {
			if (ns[i]->pid <= 0)
				continue;
			if (!node_wait_ready(ns[i], deadline)) {
				proc_stop(ns[i]->pid, SIGKILL, 0);
				ns[i]->pid = 0;
			}
		}
		for (i = 0; i < count; i++) {
			if (ns[i]->pid > 0)
				continue;
			left++;
			if (keep_port)
				ht_sleep_ms(100); /* the port may be in use */
			else
				pick_ports(ns, count, i,
				           ns[i]->kind == K_CLUSTER);
			node_spawn(ns[i]);
		}
		if (!left)
			return;
	}
	for (i = 0; i < count; i++)
		if (ns[i]->pid <= 0)
			HT_FAIL("could not start %s (port %d); see %s",
			        ns[i]->name, ns[i]->port, ns[i]->log);
}

static void node_start(ht_node *n, int keep_port)
{
	nodes_start(&n, 1, keep_port);
}

void ht_node_kill(ht_node *n)
{
	check_main_thread();
	node_conn_drop(n);
	if (n->pid > 0)
		proc_stop(n->pid, SIGKILL, 0);
	n->pid = 0;
	n->paused = 0;
	n->role = n->kind == K_SENTINEL ? HT_ROLE_SENTINEL : HT_ROLE_NONE;
}

static void node_term(ht_node *n)
{
	check_main_thread();
	node_conn_drop(n);
	if (n->pid > 0)
		proc_stop(n->pid, SIGTERM, (int64_t)5000 * ht_scale());
	n->pid = 0;
	n->paused = 0;
	n->role = n->kind == K_SENTINEL ? HT_ROLE_SENTINEL : HT_ROLE_NONE;
}

void ht_node_pause(ht_node *n)
{
	check_main_thread();
	if (n->pid <= 0)
		HT_FAIL("%s (port %d) is not running", n->name, n->port);
	/* a reply half-read would confuse the next command: reconnect */
	node_conn_drop(n);
	kill(n->pid, SIGSTOP);
	n->paused = 1;
}

void ht_node_resume(ht_node *n)
{
	check_main_thread();
	if (n->pid > 0)
		kill(n->pid, SIGCONT);
	n->paused = 0;
}

static int node_up(const ht_node *n)
{
	return n->pid > 0 && !n->paused;
}

/* role:master / role:slave from INFO replication (HT_ROLE_NONE if
 * unreachable). */
static ht_role node_role(ht_node *n)
{
	char v[32];

	if (!node_info_t(n, "replication", "role", v, sizeof v))
		return HT_ROLE_NONE;
	if (strcmp(v, "master") == 0)
		return HT_ROLE_MASTER;
	if (strcmp(v, "slave") == 0)
		return HT_ROLE_REPLICA;
	return HT_ROLE_NONE;
}

static void expect_ok(ht_node *n, redisReply *rep, const char *what)
{
	if (rep->type == REDIS_REPLY_ERROR)
		HT_FAIL("%s on %s (port %d): %s", what, n->name, n->port,
		        rep->str);
	freeReplyObject(rep);
}

/* ------------------------------------------------------------------------
 * TLS material
 * ------------------------------------------------------------------------ */
static ht_tls_certs *g_certs[8];
static int g_ncerts;

static const char cert_script[] =
        "set -e\n"
        "cd \"$(dirname \"$0\")\"\n"
        "cat > hl.cnf <<'EOF'\n"
        "[req]\n"
        "distinguished_name = dn\n"
        "prompt = no\n"
        "[dn]\n"
        "CN = hilock\n"
        "[v3_ca]\n"
        "basicConstraints = critical,CA:TRUE\n"
        "keyUsage = critical,keyCertSign,cRLSign\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid:always\n"
        "[ca_main]\n"
        "database = main.idx\n"
        "new_certs_dir = issued\n"
        "certificate = ca.crt\n"
        "private_key = ca.key\n"
        "rand_serial = yes\n"
        "default_md = sha256\n"
        "policy = policy_any\n"
        "unique_subject = no\n"
        "copy_extensions = none\n"
        "[ca_other]\n"
        "database = other.idx\n"
        "new_certs_dir = issued\n"
        "certificate = other-ca.crt\n"
        "private_key = other-ca.key\n"
        "rand_serial = yes\n"
        "default_md = sha256\n"
        "policy = policy_any\n"
        "unique_subject = no\n"
        "copy_extensions = none\n"
        "[policy_any]\n"
        "commonName = supplied\n"
        "[server]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
        "[wrong_name]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = DNS:other.example\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
        "[client]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = clientAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
        "EOF\n"
        "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
        "mkdir -p issued ca-dir\n"
        ": > main.idx\n"
        ": > other.idx\n"
        "openssl req -x509 -config hl.cnf -extensions v3_ca $K -days 3650 "
        "-keyout ca.key -out ca.crt -subj '/CN=hilock test CA'\n"
        "openssl req -x509 -config hl.cnf -extensions v3_ca $K -days 3650 "
        "-keyout other-ca.key -out other-ca.crt "
        "-subj '/CN=hilock other CA'\n"
        "sign() {\n"
        "  n=$1; subj=$2; ca=$3; ext=$4; shift 4\n"
        "  openssl req -new -config hl.cnf $K -keyout \"$n.key\" "
        "-out \"$n.csr\" -subj \"$subj\"\n"
        "  openssl ca -batch -notext -config hl.cnf -name \"ca_$ca\" "
        "-extensions \"$ext\" -in \"$n.csr\" -out \"$n.crt\" \"$@\"\n"
        "  rm -f \"$n.csr\"\n"
        "}\n"
        "sign server /CN=127.0.0.1 main server -days 3650\n"
        "sign expired /CN=127.0.0.1 main server "
        "-startdate 20200101000000Z -enddate 20200201000000Z\n"
        "sign wrong-name /CN=other.example main wrong_name -days 3650\n"
        "sign untrusted /CN=127.0.0.1 other server -days 3650\n"
        "sign client /CN=hilock-client main client -days 3650\n"
        "sign other-client /CN=hilock-client other client -days 3650\n"
        "cp ca.crt \"ca-dir/$(openssl x509 -hash -noout -in ca.crt).0\"\n";

ht_tls_certs *ht_tls_make_certs(const char *dir)
{
	static const char *const kinds[HT_CERT_KINDS] = {
	        "server", "expired", "wrong-name", "untrusted"};
	int64_t t0 = ht_now_ms();
	ht_tls_certs *t;
	char script[HT_PATH_MAX + 16], out[8192];
	const char *argv[4];
	FILE *f;
	int i, rc;

	check_main_thread();
	registry_init();
	if (g_ncerts >= (int)(sizeof g_certs / sizeof g_certs[0]))
		HT_FAIL("too many certificate sets");
	t = xcalloc(sizeof *t);
	if (dir) {
		copy_str(t->dir, sizeof t->dir, dir);
		if (mkdir(t->dir, 0700) != 0 && errno != EEXIST)
			HT_FAIL("mkdir %s: %s", t->dir, strerror(errno));
	} else {
		own_new_dir(t->dir, sizeof t->dir, "hilock-certs");
		t->owns_dir = 1;
	}
	g_certs[g_ncerts++] = t;
	fmt_path(script, sizeof script, "%s/make-certs.sh", t->dir);
	f = fopen(script, "w");
	if (!f || fputs(cert_script, f) < 0 || fclose(f) != 0)
		HT_FAIL("cannot write %s", script);
	argv[0] = "sh";
	argv[1] = script;
	argv[2] = NULL;
	rc = ht_run(out, sizeof out, 30000, argv);
	if (rc != 0)
		HT_FAIL("making certificates with openssl failed (%d):\n%s", rc,
		        out);
	fmt_path(t->ca_cert, sizeof t->ca_cert, "%s/ca.crt", t->dir);
	fmt_path(t->ca_key, sizeof t->ca_key, "%s/ca.key", t->dir);
	fmt_path(t->ca_dir, sizeof t->ca_dir, "%s/ca-dir", t->dir);
	fmt_path(t->other_ca_cert, sizeof t->other_ca_cert, "%s/other-ca.crt",
	         t->dir);
	fmt_path(t->other_ca_key, sizeof t->other_ca_key, "%s/other-ca.key",
	         t->dir);
	for (i = 0; i < HT_CERT_KINDS; i++) {
		fmt_path(t->server_cert[i], sizeof t->server_cert[i],
		         "%s/%s.crt", t->dir, kinds[i]);
		fmt_path(t->server_key[i], sizeof t->server_key[i], "%s/%s.key",
		         t->dir, kinds[i]);
	}
	fmt_path(t->client_cert, sizeof t->client_cert, "%s/client.crt",
	         t->dir);
	fmt_path(t->client_key, sizeof t->client_key, "%s/client.key", t->dir);
	fmt_path(t->other_client_cert, sizeof t->other_client_cert,
	         "%s/other-client.crt", t->dir);
	fmt_path(t->other_client_key, sizeof t->other_client_key,
	         "%s/other-client.key", t->dir);
	ht_note("TLS certificates made in %lld ms (%s)",
	        (long long)(ht_now_ms() - t0), t->dir);
	return t;
}

void ht_tls_certs_destroy(ht_tls_certs *t)
{
	int i;

	if (!t)
		return;
	for (i = 0; i < g_ncerts; i++)
		if (g_certs[i] == t) {
			g_certs[i] = g_certs[--g_ncerts];
			break;
		}
	if (t->owns_dir)
		release_dir(t->dir);
	free(t);
}

/* ------------------------------------------------------------------------
 * A single TLS server
 * ------------------------------------------------------------------------ */
static ht_tls_redis *g_tls_servers[8];
static int g_ntls;

ht_tls_redis *ht_redis_start_tls_ex(const ht_tls_certs *certs,
                                    int which_server_cert,
                                    int require_client_cert,
                                    const char *requirepass)
{
	int64_t t0 = ht_now_ms();
	ht_tls_redis *r;

	check_main_thread();
	ht_require_tls();
	registry_init();
	if (!certs)
		HT_FAIL("ht_redis_start_tls: no certificates");
	if (which_server_cert < 0 || which_server_cert >= HT_CERT_KINDS)
		HT_FAIL("ht_redis_start_tls: bad certificate kind %d",
		        which_server_cert);
	if (g_ntls >= (int)(sizeof g_tls_servers / sizeof g_tls_servers[0]))
		HT_FAIL("too many TLS servers");
	r = xcalloc(sizeof *r);
	g_tls_servers[g_ntls++] = r;
	r->cert_kind = which_server_cert;
	r->require_client_cert = require_client_cert;
	copy_str(r->requirepass, sizeof r->requirepass, requirepass);
	own_new_dir(r->dir, sizeof r->dir, "hilock-tls");
	node_init(&r->node, K_SINGLE, r, r->dir, "tls", requirepass, certs);
	node_start(&r->node, 0);
	r->node.role = HT_ROLE_MASTER;
	snprintf(r->url, sizeof r->url, "rediss://127.0.0.1:%d", r->node.port);
	ht_note("TLS server up in %lld ms (%s)", (long long)(ht_now_ms() - t0),
	        r->url);
	return r;
}

ht_tls_redis *ht_redis_start_tls(const ht_tls_certs *certs,
                                 int which_server_cert, int require_client_cert)
{
	return ht_redis_start_tls_ex(certs, which_server_cert,
	                             require_client_cert, NULL);
}

void ht_tls_redis_stop(ht_tls_redis *r)
{
	node_term(&r->node);
}

void ht_tls_redis_restart(ht_tls_redis *r)
{
	node_term(&r->node);
	node_start(&r->node, 1);
	r->node.role = HT_ROLE_MASTER;
}

void ht_tls_redis_destroy(ht_tls_redis *r)
{
	int i;

	if (!r)
		return;
	check_main_thread();
	node_release(&r->node);
	release_dir(r->dir);
	for (i = 0; i < g_ntls; i++)
		if (g_tls_servers[i] == r) {
			g_tls_servers[i] = g_tls_servers[--g_ntls];
			break;
		}
	free(r);
}

/* ------------------------------------------------------------------------
 * Sentinel
 * ------------------------------------------------------------------------ */
static ht_sentinel *g_sentinels[8];
static int g_nsentinels;

static void random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[64];
	size_t i;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (n > sizeof b || fd < 0 || read(fd, b, n) != (ssize_t)n)
		HT_FAIL("cannot read /dev/urandom");
	close(fd);
	for (i = 0; i < n; i++)
		out[i] = hex[b[i] & 15];
	out[n] = '\0';
}

static void conf_sentinel(FILE *f, ht_node *n)
{
	ht_sentinel *s = n->owner;
	int i;

	fprintf(f, "sentinel resolve-hostnames no\n"
	           "sentinel announce-hostnames no\n");
	if (n->tls)
		fprintf(f, "tls-replication yes\n");
	fprintf(f, "sentinel myid %s\n", n->id);
	fprintf(f, "sentinel monitor %s 127.0.0.1 %d 2\n", s->name,
	        s->master_port);
	fprintf(f, "sentinel down-after-milliseconds %s %d\n", s->name,
	        s->opts.down_after_ms);
	fprintf(f, "sentinel failover-timeout %s %d\n", s->name,
	        s->opts.failover_timeout_ms);
	fprintf(f, "sentinel parallel-syncs %s 1\n", s->name);
	if (s->password[0])
		fprintf(f, "sentinel auth-pass %s \"%s\"\n", s->name,
		        s->password);
	if (s->sentinel_password[0])
		fprintf(f,
		        "requirepass \"%s\"\nsentinel sentinel-pass \"%s\"\n",
		        s->sentinel_password, s->sentinel_password);
	/* start knowing the others: no wait for the first hello round */
	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (s->data[i].port != s->master_port)
			fprintf(f, "sentinel known-replica %s 127.0.0.1 %d\n",
			        s->name, s->data[i].port);
	for (i = 0; i < HT_SENTINEL_SENTINELS; i++)
		if (&s->sentinels[i] != n)
			fprintf(f,
			        "sentinel known-sentinel %s 127.0.0.1 %d %s\n",
			        s->name, s->sentinels[i].port,
			        s->sentinels[i].id);
}

/* The value of key in a flat [k1, v1, k2, v2...] reply ("" if absent). */
static const char *kv_get(const redisReply *r, const char *key)
{
	size_t i;

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return "";
	for (i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, key) == 0 &&
		    r->element[i + 1]->type == REDIS_REPLY_STRING)
			return r->element[i + 1]->str;
	return "";
}

/* The master port sentinel sn reports; 0 if none or unreachable. */
static int sentinel_ask(ht_sentinel *s, ht_node *sn)
{
	redisReply *rep =
	        node_poll(sn, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", s->name);
	int port = 0;

	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[1]->type == REDIS_REPLY_STRING)
		port = atoi(rep->element[1]->str);
	if (rep)
		freeReplyObject(rep);
	return port;
}

/* The port every running sentinel reports, or 0 when they disagree or
 * none answers (why says what each said). */
static int sentinel_consensus(ht_sentinel *s, char *why, size_t why_len)
{
	int i, port = 0, agreed = 1, k = 0;

	why[0] = '\0';
	for (i = 0; i < HT_SENTINEL_SENTINELS; i++) {
		ht_node *sn = &s->sentinels[i];
		int p;

		if (!node_up(sn))
			continue;
		p = sentinel_ask(s, sn);
		if (k >= 0 && (size_t)k < why_len)
			k += snprintf(why + k, why_len - (size_t)k,
			              "%s says %d; ", sn->name, p);
		if (p <= 0 || (port && p != port))
			agreed = 0;
		if (!port)
			port = p;
	}
	return agreed ? port : 0;
}

int ht_sentinel_master_port(ht_sentinel *s)
{
	int i;

	for (i = 0; i < HT_SENTINEL_SENTINELS; i++) {
		int p;

		if (!node_up(&s->sentinels[i]))
			continue;
		p = sentinel_ask(s, &s->sentinels[i]);
		if (p > 0) {
			s->master_port = p;
			return p;
		}
	}
	HT_FAIL("no sentinel reports a master for %s", s->name);
}

ht_node *ht_sentinel_node(ht_sentinel *s, int port)
{
	int i;

	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (s->data[i].port == port)
			return &s->data[i];
	HT_FAIL("no data node on port %d", port);
}

ht_node *ht_sentinel_master(ht_sentinel *s)
{
	return ht_sentinel_node(s, ht_sentinel_master_port(s));
}

/* Is the replica on port listed online in the master's INFO text? */
static int master_lists_online(const char *info, int port)
{
	char needle[48];
	const char *p = info;

	snprintf(needle, sizeof needle, ",port=%d,state=online", port);
	while ((p = strstr(p, "\nslave")) != NULL) {
		const char *end = strchr(p + 1, '\n');
		const char *hit = strstr(p, needle);

		if (hit && (!end || hit < end))
			return 1;
		p++;
	}
	return 0;
}

/* The data nodes replicate from master_port. */
static int sentinel_data_synced(ht_sentinel *s, int master_port, char *why,
                                size_t why_len)
{
	ht_node *m = NULL;
	redisReply *rep;
	char v[64];
	int i, ok = 1;

	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (s->data[i].port == master_port)
			m = &s->data[i];
	if (!m || !node_up(m)) {
		snprintf(why, why_len, "master %d not running", master_port);
		return 0;
	}
	rep = node_poll(m, "INFO replication");
	if (!rep || rep->type != REDIS_REPLY_STRING) {
		snprintf(why, why_len, "master %d: no INFO", master_port);
		if (rep)
			freeReplyObject(rep);
		return 0;
	}
	info_field(rep->str, "role", v, sizeof v);
	if (strcmp(v, "master") != 0) {
		snprintf(why, why_len, "%d says role:%s", master_port, v);
		ok = 0;
	} else {
		m->role = HT_ROLE_MASTER;
	}
	for (i = 0; ok && i < HT_SENTINEL_DATA; i++) {
		ht_node *d = &s->data[i];
		char role[32], mport[32], link[32];

		if (d == m || !node_up(d))
			continue;
		node_info_t(d, "replication", "role", role, sizeof role);
		node_info_t(d, "replication", "master_port", mport,
		            sizeof mport);
		node_info_t(d, "replication", "master_link_status", link,
		            sizeof link);
		if (strcmp(role, "slave") != 0 || atoi(mport) != master_port ||
		    strcmp(link, "up") != 0) {
			snprintf(why, why_len,
			         "%s: role:%s master_port:%s link:%s", d->name,
			         role, mport, link);
			ok = 0;
		} else if (!master_lists_online(rep->str, d->port)) {
			snprintf(why, why_len, "master does not list %s online",
			         d->name);
			ok = 0;
		} else {
			d->role = HT_ROLE_REPLICA;
		}
	}
	freeReplyObject(rep);
	return ok;
}

/* The flags of the instance on port in a SENTINEL REPLICAS / SENTINELS
 * reply ("absent" if it is not listed). */
static const char *flags_of(const redisReply *rep, int port)
{
	size_t k;

	for (k = 0; rep && rep->type == REDIS_REPLY_ARRAY && k < rep->elements;
	     k++)
		if (atoi(kv_get(rep->element[k], "port")) == port)
			return kv_get(rep->element[k], "flags");
	return "absent";
}

/* Flags of a healthy instance of that role: stale ones like master_down
 * (another sentinel's vote, cleared 5 s later) do not count. */
static int flags_healthy(const char *flags, const char *role)
{
	return has_flag(flags, role) && !has_flag(flags, "s_down") &&
	       !has_flag(flags, "o_down") && !has_flag(flags, "disconnected");
}

/* Every running sentinel sees master_port as master, and the running
 * replicas and other sentinels healthy. */
static int sentinels_see(ht_sentinel *s, int master_port, char *why,
                         size_t why_len)
{
	int i, j;

	for (i = 0; i < HT_SENTINEL_SENTINELS; i++) {
		ht_node *sn = &s->sentinels[i];
		redisReply *rep;

		if (!node_up(sn))
			continue;
		rep = node_poll(sn, "SENTINEL MASTER %s", s->name);
		if (!rep || rep->type != REDIS_REPLY_ARRAY ||
		    atoi(kv_get(rep, "port")) != master_port ||
		    !flags_healthy(kv_get(rep, "flags"), "master")) {
			snprintf(why, why_len, "%s: master %s flags %s",
			         sn->name, kv_get(rep, "port"),
			         kv_get(rep, "flags"));
			if (rep)
				freeReplyObject(rep);
			return 0;
		}
		freeReplyObject(rep);

		rep = node_poll(sn, "SENTINEL REPLICAS %s", s->name);
		for (j = 0; j < HT_SENTINEL_DATA; j++) {
			ht_node *d = &s->data[j];
			const char *flags;

			if (d->port == master_port || !node_up(d))
				continue;
			flags = flags_of(rep, d->port);
			if (!flags_healthy(flags, "slave")) {
				snprintf(why, why_len,
				         "%s sees replica %s as \"%s\"",
				         sn->name, d->name, flags);
				if (rep)
					freeReplyObject(rep);
				return 0;
			}
		}
		if (rep)
			freeReplyObject(rep);

		rep = node_poll(sn, "SENTINEL SENTINELS %s", s->name);
		for (j = 0; j < HT_SENTINEL_SENTINELS; j++) {
			ht_node *o = &s->sentinels[j];
			const char *flags;

			if (o == sn || !node_up(o))
				continue;
			flags = flags_of(rep, o->port);
			if (!flags_healthy(flags, "sentinel")) {
				snprintf(why, why_len, "%s sees %s as \"%s\"",
				         sn->name, o->name, flags);
				if (rep)
					freeReplyObject(rep);
				return 0;
			}
		}
		if (rep)
			freeReplyObject(rep);
	}
	return 1;
}

static void sentinel_wait_data(ht_sentinel *s, int master_port,
                               int64_t timeout_ms)
{
	int64_t deadline = deadline_in(timeout_ms);
	char why[512];

	while (!sentinel_data_synced(s, master_port, why, sizeof why)) {
		if (ht_now_ms() >= deadline)
			HT_FAIL("sentinel: replicas not in sync within %lld "
			        "ms: %s",
			        (long long)timeout_ms, why);
		wait_pause("sentinel data sync", why);
	}
}

/* Every running replica of master_port has applied the replication
 * stream up to the master's offset when first asked (target, 0 = ask now):
 * what the master acknowledged before then survives its kill. */
static int sentinel_offsets_caught_up(ht_sentinel *s, int master_port,
                                      long long *target, char *why,
                                      size_t why_len)
{
	char v[64];
	int i;

	if (*target <= 0) {
		ht_node *m = ht_sentinel_node(s, master_port);

		if (!node_info_t(m, "replication", "master_repl_offset", v,
		                 sizeof v)) {
			snprintf(why, why_len, "master %d: no offset",
			         master_port);
			return 0;
		}
		*target = atoll(v);
	}
	for (i = 0; i < HT_SENTINEL_DATA; i++) {
		ht_node *d = &s->data[i];

		if (d->port == master_port || !node_up(d))
			continue;
		if (!node_info_t(d, "replication", "slave_repl_offset", v,
		                 sizeof v) ||
		    atoll(v) < *target) {
			snprintf(why, why_len,
			         "%s: replica offset %s, master's %lld",
			         d->name, v[0] ? v : "?", *target);
			return 0;
		}
	}
	return 1;
}

void ht_sentinel_wait_synced(ht_sentinel *s, int64_t timeout_ms)
{
	int64_t deadline = deadline_in(timeout_ms);
	long long target = 0;
	char why[512];
	int port;

	check_main_thread();
	for (;;) {
		port = sentinel_consensus(s, why, sizeof why);
		if (port > 0 &&
		    sentinel_data_synced(s, port, why, sizeof why) &&
		    sentinels_see(s, port, why, sizeof why))
			break;
		if (ht_now_ms() >= deadline)
			HT_FAIL("sentinel: not synced within %lld ms: %s",
			        (long long)timeout_ms, why);
		wait_pause("sentinel sync", why);
	}
	s->master_port = port;
	while (!sentinel_offsets_caught_up(s, port, &target, why, sizeof why)) {
		if (ht_now_ms() >= deadline)
			HT_FAIL("sentinel: replicas behind after %lld ms: %s",
			        (long long)timeout_ms, why);
		wait_pause("sentinel offsets", why);
	}
}

ht_sentinel *ht_sentinel_start(const ht_sentinel_opts *opts)
{
	int64_t t0 = ht_now_ms();
	ht_sentinel *s;
	ht_node *ns[HT_SENTINEL_SENTINELS + HT_SENTINEL_DATA];
	char why[512], name[16];
	int i;

	check_main_thread();
	if (opts && opts->tls)
		ht_require_tls();
	registry_init();
	if (g_nsentinels >= (int)(sizeof g_sentinels / sizeof g_sentinels[0]))
		HT_FAIL("too many sentinel deployments");
	s = xcalloc(sizeof *s);
	g_sentinels[g_nsentinels++] = s;
	if (opts)
		s->opts = *opts;
	copy_str(s->name, sizeof s->name,
	         s->opts.master_name ? s->opts.master_name : "mymaster");
	copy_str(s->password, sizeof s->password, s->opts.password);
	copy_str(s->sentinel_password, sizeof s->sentinel_password,
	         s->opts.sentinel_password);
	s->opts.master_name = s->name;
	s->opts.password = s->password[0] ? s->password : NULL;
	s->opts.sentinel_password =
	        s->sentinel_password[0] ? s->sentinel_password : NULL;
	if (s->opts.down_after_ms <= 0)
		s->opts.down_after_ms = 2000;
	if (s->opts.failover_timeout_ms <= 0)
		s->opts.failover_timeout_ms = 5000;
	own_new_dir(s->dir, sizeof s->dir, "hilock-sentinel");
	for (i = 0; i < HT_SENTINEL_DATA; i++) {
		snprintf(name, sizeof name, "data%d", i);
		node_init(&s->data[i], K_DATA, s, s->dir, name, s->password,
		          s->opts.tls);
	}
	for (i = 0; i < HT_SENTINEL_SENTINELS; i++) {
		snprintf(name, sizeof name, "sentinel%d", i);
		node_init(&s->sentinels[i], K_SENTINEL, s, s->dir, name,
		          s->sentinel_password, s->opts.tls);
		random_hex(s->sentinels[i].id, 40);
	}

	/* the master, then both replicas at once */
	node_start(&s->data[0], 0);
	s->data[0].role = HT_ROLE_MASTER;
	s->master_port = s->data[0].port;
	for (i = 1; i < HT_SENTINEL_DATA; i++) {
		s->data[i].replicaof = s->master_port;
		ns[i - 1] = &s->data[i];
	}
	nodes_start(ns, HT_SENTINEL_DATA - 1, 0);
	sentinel_wait_data(s, s->master_port, 20000);

	/* the sentinels, all at once */
	for (i = 0; i < HT_SENTINEL_SENTINELS; i++)
		ns[i] = &s->sentinels[i];
	nodes_start(ns, HT_SENTINEL_SENTINELS, 0);
	{
		int64_t deadline = deadline_in(20000);

		while (!sentinels_see(s, s->master_port, why, sizeof why)) {
			if (ht_now_ms() >= deadline)
				HT_FAIL("sentinels not ready within 20 s: %s",
				        why);
			wait_pause("sentinel start", why);
		}
	}
	ht_sentinel_url(s, s->url, sizeof s->url);
	s->start_ms = ht_now_ms() - t0;
	ht_note("sentinel deployment up in %lld ms (%s)",
	        (long long)s->start_ms, s->url);
	return s;
}

size_t ht_sentinel_url(const ht_sentinel *s, char *buf, size_t len)
{
	return (size_t)snprintf(
	        buf, len, "%s://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
	        s->opts.tls ? "rediss-sentinel" : "redis-sentinel",
	        s->sentinels[0].port, s->sentinels[1].port,
	        s->sentinels[2].port, s->name);
}

void ht_sentinel_destroy(ht_sentinel *s)
{
	int i;

	if (!s)
		return;
	check_main_thread();
	for (i = 0; i < HT_SENTINEL_SENTINELS; i++)
		node_release(&s->sentinels[i]);
	for (i = 0; i < HT_SENTINEL_DATA; i++)
		node_release(&s->data[i]);
	release_dir(s->dir);
	for (i = 0; i < g_nsentinels; i++)
		if (g_sentinels[i] == s) {
			g_sentinels[i] = g_sentinels[--g_nsentinels];
			break;
		}
	free(s);
}

int ht_sentinel_kill_master(ht_sentinel *s)
{
	int port = ht_sentinel_master_port(s);

	ht_node_kill(ht_sentinel_node(s, port));
	return port;
}

int ht_sentinel_stop_master(ht_sentinel *s)
{
	int port = ht_sentinel_master_port(s);

	ht_node_pause(ht_sentinel_node(s, port));
	return port;
}

void ht_sentinel_cont(ht_sentinel *s)
{
	int i;

	for (i = 0; i < HT_SENTINEL_DATA; i++)
		if (s->data[i].paused)
			ht_node_resume(&s->data[i]);
}

int ht_sentinel_wait_failover(ht_sentinel *s, int old_master_port,
                              int64_t timeout_ms)
{
	int64_t t0 = ht_now_ms(), deadline = deadline_in(timeout_ms);
	char why[512];
	int i;

	check_main_thread();
	for (;;) {
		int port = sentinel_consensus(s, why, sizeof why);

		if (port > 0 && port != old_master_port) {
			ht_node *m = ht_sentinel_node(s, port);

			if (node_up(m) && node_role(m) == HT_ROLE_MASTER) {
				for (i = 0; i < HT_SENTINEL_DATA; i++)
					if (&s->data[i] != m &&
					    s->data[i].role == HT_ROLE_MASTER)
						s->data[i].role = HT_ROLE_NONE;
				m->role = HT_ROLE_MASTER;
				s->master_port = port;
				ht_note("sentinel: failover from %d to %d seen "
				        "after %lld ms",
				        old_master_port, port,
				        (long long)(ht_now_ms() - t0));
				return port;
			}
		}
		if (ht_now_ms() >= deadline)
			HT_FAIL("sentinel: no failover from %d within %lld "
			        "ms: %s",
			        old_master_port, (long long)timeout_ms, why);
		wait_pause("sentinel failover", why);
	}
}

int ht_sentinel_failover(ht_sentinel *s)
{
	int old = ht_sentinel_master_port(s), port, i;
	redisReply *rep = NULL;

	check_main_thread();
	for (i = 0; i < HT_SENTINEL_SENTINELS && !rep; i++)
		if (node_up(&s->sentinels[i]))
			rep = ht_node_cmd(&s->sentinels[i],
			                  "SENTINEL FAILOVER %s", s->name);
	if (!rep)
		HT_FAIL("sentinel: no sentinel running");
	if (rep->type == REDIS_REPLY_ERROR)
		HT_FAIL("SENTINEL FAILOVER %s: %s", s->name, rep->str);
	freeReplyObject(rep);
	port = ht_sentinel_wait_failover(s, old, 30000);
	/* Sentinel itself converts the old master only ~8 s after the
	 * switch (it waits 4 hello periods): do it now */
	for (i = 0; i < HT_SENTINEL_DATA; i++) {
		ht_node *d = &s->data[i];

		if (d->port == port || !node_up(d) ||
		    node_role(d) != HT_ROLE_MASTER)
			continue;
		expect_ok(d, ht_node_cmd(d, "REPLICAOF 127.0.0.1 %d", port),
		          "REPLICAOF");
	}
	ht_sentinel_wait_synced(s, 30000);
	return port;
}

void ht_sentinel_restart_node(ht_sentinel *s, int port)
{
	ht_node *n = ht_sentinel_node(s, port);
	char why[512];
	int master;

	check_main_thread();
	if (n->pid > 0)
		HT_FAIL("%s (port %d) is running", n->name, port);
	master = sentinel_consensus(s, why, sizeof why);
	if (master <= 0)
		master = ht_sentinel_master_port(s);
	n->replicaof = master == port ? 0 : master;
	node_start(n, 1);
	ht_sentinel_wait_synced(s, 30000);
}

/* ------------------------------------------------------------------------
 * Cluster
 * ------------------------------------------------------------------------ */
static ht_cluster *g_clusters[8];
static int g_nclusters;

/* The node timeout while a cluster forms. Redis forgets a node whose bus
 * handshake (CLUSTER MEET) did not complete within the node timeout, and
 * nothing meets it again: with the tests' 1 s, a loaded machine (two
 * suites at once, one under TSan) left a node out and `redis-cli --cluster
 * create` waiting for the join until the test's own timeout. Once it has
 * joined, every node gets the test's timeout (CONFIG SET). */
#define HT_CLUSTER_FORM_TIMEOUT_MS 15000

static void conf_cluster(FILE *f, ht_node *n)
{
	ht_cluster *c = n->owner;
	int timeout = c->opts.node_timeout_ms;

	if (!c->formed && timeout < HT_CLUSTER_FORM_TIMEOUT_MS)
		timeout = HT_CLUSTER_FORM_TIMEOUT_MS;
	fprintf(f,
	        "cluster-enabled yes\n"
	        "cluster-config-file \"%s/nodes.conf\"\n"
	        "cluster-node-timeout %d\n"
	        "cluster-port %d\n"
	        "cluster-replica-validity-factor 0\n"
	        "cluster-allow-replica-migration no\n",
	        n->dir, timeout, n->bus_port);
	if (n->tls)
		fprintf(f, "tls-cluster yes\n");
}

/* One line of CLUSTER NODES. */
typedef struct cn_line {
	char id[64];
	char master_id[64];
	int port;
	int myself, master, replica, fail, pfail, handshake, noaddr;
	int nslots; /* slots it serves */
} cn_line;

/* The number of slots in the fields from the 9th on of a CLUSTER NODES
 * line (ranges "a-b" or single slots; "[...]" migration marks skipped). */
static int count_slots(const char *line)
{
	const char *p = line;
	int field = 0, n = 0;

	while (*p && *p != '\n' && *p != '\r') {
		const char *w;
		size_t len;

		while (*p == ' ')
			p++;
		w = p;
		while (*p && *p != ' ' && *p != '\n' && *p != '\r')
			p++;
		len = (size_t)(p - w);
		if (!len)
			break;
		if (++field <= 8 || w[0] == '[')
			continue;
		if (memchr(w, '-', len)) {
			int a = atoi(w),
			    b = atoi((const char *)memchr(w, '-', len) + 1);
			n += b - a + 1;
		} else {
			n++;
		}
	}
	return n;
}

static int has_flag(const char *flags, const char *flag)
{
	size_t n = strlen(flag);
	const char *p = flags;

	while (p && *p) {
		if (strncmp(p, flag, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

static int cluster_nodes_parse(const char *text, cn_line *out, int max)
{
	int count = 0;
	const char *p = text;

	while (p && *p && count < max) {
		char id[64], addr[128], flags[128], master[64];
		const char *colon;
		cn_line *l = &out[count];

		if (sscanf(p, "%63s %127s %127s %63s", id, addr, flags,
		           master) == 4) {
			memset(l, 0, sizeof *l);
			snprintf(l->id, sizeof l->id, "%s", id);
			snprintf(l->master_id, sizeof l->master_id, "%s",
			         strcmp(master, "-") == 0 ? "" : master);
			colon = strrchr(addr, ':');
			if (strchr(addr, '@'))
				colon = memchr(
				        addr, ':',
				        (size_t)(strchr(addr, '@') - addr));
			l->port = colon ? atoi(colon + 1) : 0;
			l->myself = has_flag(flags, "myself");
			l->master = has_flag(flags, "master");
			l->replica = has_flag(flags, "slave");
			l->fail = has_flag(flags, "fail");
			l->pfail = has_flag(flags, "fail?");
			l->handshake = has_flag(flags, "handshake");
			l->noaddr = has_flag(flags, "noaddr");
			l->nslots = count_slots(p);
			count++;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return count;
}

/* CLUSTER NODES of n parsed; -1 if unreachable. */
static int cluster_nodes_of(ht_node *n, cn_line *out, int max)
{
	redisReply *rep = node_poll(n, "CLUSTER NODES");
	int count = -1;

	if (rep && rep->type == REDIS_REPLY_STRING)
		count = cluster_nodes_parse(rep->str, out, max);
	if (rep)
		freeReplyObject(rep);
	return count;
}

static int cluster_index_of_id(ht_cluster *c, const char *id)
{
	int i;

	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (c->nodes[i].id[0] && strcmp(c->nodes[i].id, id) == 0)
			return i;
	return -1;
}

ht_node *ht_cluster_node(ht_cluster *c, int port)
{
	int i;

	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (c->nodes[i].port == port)
			return &c->nodes[i];
	HT_FAIL("no cluster node on port %d", port);
}

/* Each running node's own line; 0 if one cannot be read. */
static int cluster_selves(ht_cluster *c, cn_line self[HT_CLUSTER_NODES],
                          char *why, size_t why_len)
{
	cn_line lines[HT_CLUSTER_NODES * 2];
	int i, j, count, ok = 1;

	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		ht_node *n = &c->nodes[i];

		memset(&self[i], 0, sizeof self[i]);
		if (!node_up(n))
			continue;
		count = cluster_nodes_of(n, lines, HT_CLUSTER_NODES * 2);
		for (j = 0; j < count; j++)
			if (lines[j].myself)
				self[i] = lines[j];
		if (!self[i].id[0]) {
			snprintf(why, why_len, "%s: no CLUSTER NODES", n->name);
			ok = 0;
			continue;
		}
		if (!n->id[0])
			copy_str(n->id, sizeof n->id, self[i].id);
		n->role = self[i].master    ? HT_ROLE_MASTER
		          : self[i].replica ? HT_ROLE_REPLICA
		                            : HT_ROLE_NONE;
	}
	return ok;
}

void ht_cluster_refresh(ht_cluster *c)
{
	cn_line self[HT_CLUSTER_NODES];
	char why[256];

	check_main_thread();
	cluster_selves(c, self, why, sizeof why);
}

/* The cluster is ok: see ht_cluster_wait_ok(). */
static int cluster_ok(ht_cluster *c, char *why, size_t why_len)
{
	cn_line self[HT_CLUSTER_NODES], lines[HT_CLUSTER_NODES * 2];
	int i, j, k, count;
	char v[64];

	if (!cluster_selves(c, self, why, why_len))
		return 0;
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		ht_node *n = &c->nodes[i];

		if (!node_up(n))
			continue;
		redisReply *rep = node_poll(n, "CLUSTER INFO");
		int state_ok = 0, known = 0;

		if (rep && rep->type == REDIS_REPLY_STRING) {
			info_field(rep->str, "cluster_state", v, sizeof v);
			state_ok = strcmp(v, "ok") == 0;
			info_field(rep->str, "cluster_known_nodes", v,
			           sizeof v);
			known = atoi(v);
		}
		if (rep)
			freeReplyObject(rep);
		if (!state_ok || known != HT_CLUSTER_NODES) {
			snprintf(why, why_len,
			         "%s: cluster_state ok %d, known nodes %d",
			         n->name, state_ok, known);
			return 0;
		}
		count = cluster_nodes_of(n, lines, HT_CLUSTER_NODES * 2);
		if (count < 0) {
			snprintf(why, why_len, "%s: no CLUSTER NODES", n->name);
			return 0;
		}
		/* its view of every other running node matches that
		 * node's own */
		for (j = 0; j < HT_CLUSTER_NODES; j++) {
			cn_line *seen = NULL;

			if (j == i || !node_up(&c->nodes[j]))
				continue;
			for (k = 0; k < count; k++)
				if (strcmp(lines[k].id, self[j].id) == 0)
					seen = &lines[k];
			if (!seen || seen->fail || seen->pfail ||
			    seen->handshake || seen->noaddr ||
			    seen->master != self[j].master ||
			    seen->replica != self[j].replica ||
			    seen->nslots != self[j].nslots ||
			    strcmp(seen->master_id, self[j].master_id) != 0) {
				snprintf(
				        why, why_len,
				        "%s's view of %s (role, master, slots) "
				        "differs from its own (or it is seen "
				        "failing)",
				        n->name, c->nodes[j].name);
				return 0;
			}
		}
		if (self[i].replica) {
			node_info_t(n, "replication", "master_link_status", v,
			            sizeof v);
			if (strcmp(v, "up") != 0) {
				snprintf(why, why_len, "%s: link %s", n->name,
				         v);
				return 0;
			}
		}
	}
	return 1;
}

void ht_cluster_wait_ok(ht_cluster *c, int64_t timeout_ms)
{
	int64_t deadline = deadline_in(timeout_ms);
	char why[512] = "";

	check_main_thread();
	while (!cluster_ok(c, why, sizeof why)) {
		if (ht_now_ms() >= deadline)
			HT_FAIL("cluster not ok within %lld ms: %s",
			        (long long)timeout_ms, why);
		wait_pause("cluster ok", why);
	}
}

size_t ht_cluster_url(const ht_cluster *c, char *buf, size_t len)
{
	size_t k = (size_t)snprintf(buf, len, "%s://",
	                            c->opts.tls ? "rediss-cluster"
	                                        : "redis-cluster");
	int i;

	for (i = 0; i < HT_CLUSTER_NODES; i++)
		k += (size_t)snprintf(k < len ? buf + k : NULL,
		                      k < len ? len - k : 0, "%s127.0.0.1:%d",
		                      i ? "," : "", c->nodes[i].port);
	return k;
}

ht_cluster *ht_cluster_start(const ht_cluster_opts *opts)
{
	int64_t t0 = ht_now_ms();
	ht_cluster *c;
	ht_node *ns[HT_CLUSTER_NODES];
	const char *argv[48];
	char addrs[HT_CLUSTER_NODES][32], name[16], out[8192];
	int i, k = 0, rc;

	check_main_thread();
	if (opts && opts->tls)
		ht_require_tls();
	registry_init();
	if (g_nclusters >= (int)(sizeof g_clusters / sizeof g_clusters[0]))
		HT_FAIL("too many clusters");
	c = xcalloc(sizeof *c);
	g_clusters[g_nclusters++] = c;
	if (opts)
		c->opts = *opts;
	copy_str(c->password, sizeof c->password, c->opts.password);
	c->opts.password = c->password[0] ? c->password : NULL;
	if (c->opts.node_timeout_ms <= 0)
		c->opts.node_timeout_ms = 1000;
	for (i = 0; i < HT_CLUSTER_MAX_MIG; i++)
		c->mig[i].slot = -1;
	own_new_dir(c->dir, sizeof c->dir, "hilock-cluster");
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		snprintf(name, sizeof name, "node%d", i);
		node_init(&c->nodes[i], K_CLUSTER, c, c->dir, name, c->password,
		          c->opts.tls);
		ns[i] = &c->nodes[i];
	}
	nodes_start(ns, HT_CLUSTER_NODES, 0);

	argv[k++] = "redis-cli";
	if (c->opts.tls) {
		argv[k++] = "--tls";
		argv[k++] = "--cacert";
		argv[k++] = c->opts.tls->ca_cert;
		argv[k++] = "--cert";
		argv[k++] = c->opts.tls->client_cert;
		argv[k++] = "--key";
		argv[k++] = c->opts.tls->client_key;
	}
	if (c->password[0]) {
		argv[k++] = "-a";
		argv[k++] = c->password;
		argv[k++] = "--no-auth-warning";
	}
	argv[k++] = "--cluster";
	argv[k++] = "create";
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d",
		         c->nodes[i].port);
		argv[k++] = addrs[i];
	}
	argv[k++] = "--cluster-replicas";
	argv[k++] = "1";
	argv[k++] = "--cluster-yes";
	argv[k] = NULL;
	rc = ht_run(out, sizeof out, 60000, argv);
	if (rc != 0)
		HT_FAIL("redis-cli --cluster create failed (%d):\n%s", rc, out);
	/* joined (every handshake done): the test's node timeout from now on,
	 * and in the config of every later start of a node; a long one would
	 * also slow the gossip that the wait below waits for */
	c->formed = 1;
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		expect_ok(&c->nodes[i],
		          ht_node_cmd(&c->nodes[i],
		                      "CONFIG SET cluster-node-timeout %d",
		                      c->opts.node_timeout_ms),
		          "CONFIG SET cluster-node-timeout");
	ht_cluster_wait_ok(c, 20000);
	ht_cluster_url(c, c->url, sizeof c->url);
	c->start_ms = ht_now_ms() - t0;
	ht_note("cluster up in %lld ms (%s)", (long long)c->start_ms, c->url);
	return c;
}

void ht_cluster_destroy(ht_cluster *c)
{
	int i;

	if (!c)
		return;
	check_main_thread();
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		node_release(&c->nodes[i]);
	release_dir(c->dir);
	for (i = 0; i < g_nclusters; i++)
		if (g_clusters[i] == c) {
			g_clusters[i] = g_clusters[--g_nclusters];
			break;
		}
	free(c);
}

/* A running, unpaused node; masters first when want_master. */
static ht_node *cluster_any(ht_cluster *c, int want_master)
{
	int i;

	for (i = 0; want_master && i < HT_CLUSTER_NODES; i++)
		if (node_up(&c->nodes[i]) && c->nodes[i].role == HT_ROLE_MASTER)
			return &c->nodes[i];
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (node_up(&c->nodes[i]))
			return &c->nodes[i];
	HT_FAIL("no cluster node running");
}

int ht_cluster_slot_of(ht_cluster *c, const void *key, size_t len)
{
	ht_node *n = cluster_any(c, 0);
	redisReply *rep = ht_node_cmd(n, "CLUSTER KEYSLOT %b", key, len);
	int slot;

	if (rep->type != REDIS_REPLY_INTEGER)
		HT_FAIL("CLUSTER KEYSLOT: unexpected reply %s",
		        rep->type == REDIS_REPLY_ERROR ? rep->str : "");
	slot = (int)rep->integer;
	freeReplyObject(rep);
	return slot;
}

/* The index of the node n reports owning slot (CLUSTER SLOTS), or -1. */
static int slot_owner_seen_by(ht_cluster *c, ht_node *n, int slot)
{
	redisReply *rep = node_poll(n, "CLUSTER SLOTS");
	int owner = -1;
	size_t i;

	if (!rep)
		return -1;
	for (i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		redisReply *e = rep->element[i];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->integer > slot ||
		    e->element[1]->integer < slot)
			continue;
		if (e->element[2]->type == REDIS_REPLY_ARRAY &&
		    e->element[2]->elements >= 3 &&
		    e->element[2]->element[2]->type == REDIS_REPLY_STRING)
			owner = cluster_index_of_id(
			        c, e->element[2]->element[2]->str);
		break;
	}
	freeReplyObject(rep);
	return owner;
}

int ht_cluster_master_of_slot(ht_cluster *c, int slot)
{
	int owner;

	if (slot < 0 || slot >= HT_CLUSTER_SLOTS)
		HT_FAIL("bad slot %d", slot);
	owner = slot_owner_seen_by(c, cluster_any(c, 1), slot);
	if (owner < 0)
		HT_FAIL("no owner found for slot %d", slot);
	return c->nodes[owner].port;
}

int ht_cluster_replica_of(ht_cluster *c, int master_port)
{
	ht_node *m = ht_cluster_node(c, master_port);
	cn_line self[HT_CLUSTER_NODES];
	char why[256];
	int i;

	cluster_selves(c, self, why, sizeof why);
	for (i = 0; i < HT_CLUSTER_NODES; i++)
		if (self[i].replica && m->id[0] &&
		    strcmp(self[i].master_id, m->id) == 0)
			return c->nodes[i].port;
	return 0;
}

static int mig_find(ht_cluster *c, int slot)
{
	int i;

	for (i = 0; i < HT_CLUSTER_MAX_MIG; i++)
		if (c->mig[i].slot == slot)
			return i;
	return -1;
}

void ht_cluster_migrate_slot_start(ht_cluster *c, int slot, int dst_port)
{
	ht_node *src, *dst = ht_cluster_node(c, dst_port);
	int m;

	check_main_thread();
	if (mig_find(c, slot) >= 0)
		HT_FAIL("slot %d is already being migrated", slot);
	m = mig_find(c, -1);
	if (m < 0)
		HT_FAIL("too many slot migrations under way");
	src = ht_cluster_node(c, ht_cluster_master_of_slot(c, slot));
	if (src == dst)
		HT_FAIL("slot %d is already on port %d", slot, dst_port);
	if (dst->role != HT_ROLE_MASTER)
		HT_FAIL("port %d is not a master", dst_port);
	expect_ok(dst,
	          ht_node_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot,
	                      src->id),
	          "CLUSTER SETSLOT IMPORTING");
	expect_ok(src,
	          ht_node_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", slot,
	                      dst->id),
	          "CLUSTER SETSLOT MIGRATING");
	c->mig[m].slot = slot;
	c->mig[m].src = (int)(src - c->nodes);
	c->mig[m].dst = (int)(dst - c->nodes);
}

int ht_cluster_migrate_keys(ht_cluster *c, int slot)
{
	int m = mig_find(c, slot), moved = 0, round;
	ht_node *src, *dst;
	char port[16];

	check_main_thread();
	if (m < 0)
		HT_FAIL("slot %d is not being migrated", slot);
	src = &c->nodes[c->mig[m].src];
	dst = &c->nodes[c->mig[m].dst];
	snprintf(port, sizeof port, "%d", dst->port);
	for (round = 0; round < 10000; round++) {
		redisReply *keys =
		        ht_node_cmd(src, "CLUSTER GETKEYSINSLOT %d 100", slot);
		const char *argv[120];
		size_t lens[120];
		int k = 0;
		size_t i;
		redisReply *rep;

		if (keys->type != REDIS_REPLY_ARRAY)
			HT_FAIL("CLUSTER GETKEYSINSLOT: unexpected reply");
		if (keys->elements == 0) {
			freeReplyObject(keys);
			return moved;
		}
#define ARG(s)                                                                 \
	do {                                                                   \
		argv[k] = (s);                                                 \
		lens[k] = strlen(s);                                           \
		k++;                                                           \
	} while (0)
		ARG("MIGRATE");
		ARG("127.0.0.1");
		ARG(port);
		ARG("");
		ARG("0");
		ARG("5000");
		if (c->password[0]) {
			ARG("AUTH");
			ARG(c->password);
		}
		ARG("KEYS");
#undef ARG
		for (i = 0; i < keys->elements; i++) {
			argv[k] = keys->element[i]->str;
			lens[k] = keys->element[i]->len;
			k++;
		}
		rep = ht_node_cmd_argv(src, k, argv, lens);
		expect_ok(src, rep, "MIGRATE");
		moved += (int)keys->elements;
		freeReplyObject(keys);
	}
	HT_FAIL("slot %d: keys keep coming", slot);
}

void ht_cluster_migrate_slot_finish(ht_cluster *c, int slot)
{
	int m = mig_find(c, slot), i;
	int64_t deadline;
	ht_node *src, *dst;

	check_main_thread();
	if (m < 0)
		HT_FAIL("slot %d is not being migrated", slot);
	src = &c->nodes[c->mig[m].src];
	dst = &c->nodes[c->mig[m].dst];
	expect_ok(dst,
	          ht_node_cmd(dst, "CLUSTER SETSLOT %d NODE %s", slot, dst->id),
	          "CLUSTER SETSLOT NODE (destination)");
	expect_ok(src,
	          ht_node_cmd(src, "CLUSTER SETSLOT %d NODE %s", slot, dst->id),
	          "CLUSTER SETSLOT NODE (source)");
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		ht_node *n = &c->nodes[i];

		if (n == src || n == dst || !node_up(n) ||
		    n->role != HT_ROLE_MASTER)
			continue;
		expect_ok(n,
		          ht_node_cmd(n, "CLUSTER SETSLOT %d NODE %s", slot,
		                      dst->id),
		          "CLUSTER SETSLOT NODE");
	}
	c->mig[m].slot = -1;
	deadline = deadline_in(10000);
	for (i = 0; i < HT_CLUSTER_NODES; i++) {
		ht_node *n = &c->nodes[i];

		if (!node_up(n))
			continue;
		while (slot_owner_seen_by(c, n, slot) != c->mig[m].dst) {
			if (ht_now_ms() >= deadline)
				HT_FAIL("%s does not see slot %d on %s within "
				        "10 s",
				        n->name, slot, dst->name);
			wait_pause("slot owner", "the slot's new owner");
		}
	}
}

void ht_cluster_move_slot(ht_cluster *c, int slot, int dst_port)
{
	ht_cluster_migrate_slot_start(c, slot, dst_port);
	ht_cluster_migrate_keys(c, slot);
	ht_cluster_migrate_slot_finish(c, slot);
}

/* Wait until the node at index r is master, (old >= 0) the node at index
 * old a replica of it, and the cluster ok. */
static void cluster_wait_promoted(ht_cluster *c, int r, int old,
                                  int64_t timeout_ms, const char *what)
{
	int64_t t0 = ht_now_ms(), deadline = deadline_in(timeout_ms);
	cn_line self[HT_CLUSTER_NODES];
	char why[512] = "";

	for (;;) {
		if (cluster_selves(c, self, why, sizeof why)) {
			if (!self[r].master)
				snprintf(why, sizeof why,
				         "%s is not master yet",
				         c->nodes[r].name);
			else if (old >= 0 &&
			         (!self[old].replica ||
			          strcmp(self[old].master_id, self[r].id) != 0))
				snprintf(why, sizeof why,
				         "%s is not its replica yet",
				         c->nodes[old].name);
			else if (cluster_ok(c, why, sizeof why))
				break;
		}
		if (ht_now_ms() >= deadline)
			HT_FAIL("cluster %s: not done within %lld ms: %s", what,
			        (long long)timeout_ms, why);
		wait_pause("cluster promotion", why);
	}
	ht_note("cluster %s: %s is master after %lld ms", what,
	        c->nodes[r].name, (long long)(ht_now_ms() - t0));
}

int ht_cluster_failover(ht_cluster *c, int master_port)
{
	ht_node *m = ht_cluster_node(c, master_port), *r;
	int rport;

	check_main_thread();
	ht_cluster_refresh(c);
	if (m->role != HT_ROLE_MASTER)
		HT_FAIL("port %d is not a master", master_port);
	rport = ht_cluster_replica_of(c, master_port);
	if (!rport)
		HT_FAIL("master %d has no running replica", master_port);
	r = ht_cluster_node(c, rport);
	expect_ok(r, ht_node_cmd(r, "CLUSTER FAILOVER"), "CLUSTER FAILOVER");
	cluster_wait_promoted(c, (int)(r - c->nodes), (int)(m - c->nodes),
	                      20000, "failover");
	return rport;
}

int ht_cluster_kill_master(ht_cluster *c, int master_port)
{
	ht_node *m = ht_cluster_node(c, master_port);
	int rport;

	check_main_thread();
	ht_cluster_refresh(c);
	if (m->role != HT_ROLE_MASTER)
		HT_FAIL("port %d is not a master", master_port);
	rport = ht_cluster_replica_of(c, master_port);
	if (!rport)
		HT_FAIL("master %d has no running replica", master_port);
	ht_node_kill(m);
	cluster_wait_promoted(c, (int)(ht_cluster_node(c, rport) - c->nodes),
	                      -1, 30000, "kill -9");
	return rport;
}

void ht_cluster_stop_node(ht_cluster *c, int port)
{
	node_term(ht_cluster_node(c, port));
}

void ht_cluster_restart_node(ht_cluster *c, int port)
{
	ht_node *n = ht_cluster_node(c, port);

	check_main_thread();
	if (n->pid > 0)
		HT_FAIL("%s (port %d) is running", n->name, port);
	node_start(n, 1);
	ht_cluster_wait_ok(c, 30000);
}

/* ------------------------------------------------------------------------
 * At exit
 * ------------------------------------------------------------------------ */
static void topo_at_exit(void)
{
	int i;

	if (getpid() != g_pid)
		return;
	for (i = 0; i < g_nnodes; i++) {
		ht_node *n = g_nodes[i];

		node_conn_drop(n);
		if (n->pid > 0)
			proc_stop(n->pid, SIGKILL, 0);
		n->pid = 0;
	}
	while (g_ndirs > 0)
		release_dir(g_dirs[g_ndirs - 1]);
	if (g_reaper_fd >= 0)
		close(g_reaper_fd);
	g_reaper_fd = -1;
}

void ht_failover_options(hl_client_options *o, int64_t watchdog_ms)
{
	HT_OK(hl_client_options_init(o, HL_CLIENT_OPTIONS_VERSION));
	o->watchdog_timeout_ms = watchdog_ms;
	o->command_timeout_ms = 1000;
	o->connect_timeout_ms = 1000;
	o->retry_delay_ms = 300;
	o->retry_attempts = 8; /* a failover takes a few seconds */
	o->ping_interval_ms = 300;
}
