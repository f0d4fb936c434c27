/*
 * Test harness: throwaway redis-server instances, assertions, raw hiredis.
 * See harness.h for the contract.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t g_main_pid;
static ht_redis g_servers[HT_MAX_SERVERS];
static int g_nservers;
static redisContext *g_raw[HT_MAX_SERVERS];
static pid_t g_raw_pid[HT_MAX_SERVERS]; /* the process that opened it */
static pthread_mutex_t g_raw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_fail_mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------------ */
int64_t ht_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ht_sleep_ms(int64_t ms)
{
	struct timespec ts;
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int ht_under_valgrind(void)
{
	const char *v = getenv("HILOCK_UNDER_VALGRIND");
	return v && strcmp(v, "1") == 0;
}

int ht_scale(void)
{
	const char *s = getenv("HILOCK_TEST_SCALE");
	if (s && atoi(s) > 0)
		return atoi(s);
	if (ht_under_valgrind())
		return 10;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 3;
#else
	return 1;
#endif
}

/* ------------------------------------------------------------------------
 * Failure reporting
 * ------------------------------------------------------------------------ */
static void dump_log_tail(const ht_redis *r)
{
	char path[400], buf[4096];
	FILE *f;
	long size;
	size_t n;

	snprintf(path, sizeof path, "%s/redis.log", r->dir);
	f = fopen(path, "r");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0,
	      SEEK_SET);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "--- tail of redis log (port %d) ---\n%s---\n", r->port,
	        buf);
}

static void stop_all_servers(void);

void ht_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int i;

	pthread_mutex_lock(&g_fail_mu); /* never unlocked: first one wins */
	fprintf(stderr, "%s:%d: FAIL: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (getpid() == g_main_pid) {
		for (i = 0; i < g_nservers; i++)
			if (g_servers[i].dir[0])
				dump_log_tail(&g_servers[i]);
		fflush(stderr);
		stop_all_servers();
	}
	fflush(stderr);
	fflush(stdout);
	_exit(1);
}

void ht_note(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "# ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
}

void ht_check_rc(const char *file, int line, const char *expr, int got,
                 int want)
{
	const char *msg;

	if (got != want)
		ht_fail(file, line, "%s returned %s (%s), expected %s: %s",
		        expr, hl_status_name(got), hl_status_str(got),
		        hl_status_name(want), hl_error_last());
	if (want == HL_OK)
		return;
	msg = hl_error_last();
	if (msg == NULL)
		ht_fail(file, line, "%s: hl_error_last() is NULL", expr);
	if (msg[0] == '\0')
		ht_fail(file, line,
		        "%s returned %s but hl_error_last() is empty", expr,
		        hl_status_name(got));
	if (hl_error_last_code() != want)
		ht_fail(file, line,
		        "%s returned %s but hl_error_last_code() is %s", expr,
		        hl_status_name(got),
		        hl_status_name(hl_error_last_code()));
}

/* ------------------------------------------------------------------------
 * redis-server
 * ------------------------------------------------------------------------ */
/* The lowest port of the system's ephemeral range (the ports outgoing
 * connections are given), 32768 when it cannot be read. */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 32768, hi = 0;
	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* A free loopback port for a server, below the ephemeral range: a port the
 * kernel could hand to an outgoing connection meanwhile (a cluster node
 * reaching another's bus, a client polling for readiness) would make the
 * server's bind fail, or a connection to a port nobody listens on yet
 * connect to itself (source port = destination port), which a cluster
 * node then takes for the peer it meant to meet. Random in [10000, the
 * range's start); port 0 (the kernel's choice) if none is found. */
int ht_free_port(void)
{
	static unsigned seed;
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int lo = ephemeral_low(), tries, port = 0;

	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)ht_now_ms();
	for (tries = 0; tries < 200; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), p, ok;
		if (fd < 0)
			HT_FAIL("socket: %s", strerror(errno));
		p = lo > 11024 ? 10000 + (int)(rand_r(&seed) %
		                               (unsigned)(lo - 10000))
		               : 0;
		memset(&a, 0, sizeof a);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((unsigned short)p);
		len = sizeof a;
		ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
		     getsockname(fd, (struct sockaddr *)&a, &len) == 0;
		close(fd);
		if (ok) {
			port = ntohs(a.sin_port);
			break;
		}
		if (p == 0)
			HT_FAIL("bind/getsockname: %s", strerror(errno));
	}
	if (!port)
		HT_FAIL("no free loopback port below %d in 200 tries", lo);
	return port;
}

const char *ht_server_bin(void)
{
	const char *bin = getenv("REDIS_SERVER");
	return bin && *bin ? bin : "redis-server";
}

/* Started with a TLS port and no certificate, on no plain port: a TLS
 * build stops at once for the missing certificate ("No tls-cert-file
 * configured!"), a build without TLS says so ("Failed finding TLS
 * support", "TLS not supported", or no such directive). Anything else
 * (even a server that starts and listens) counts as TLS: a real TLS
 * problem then fails the TLS tests instead of hiding behind a skip. */
static int probe_tls(const char *bin, char *why, size_t why_len)
{
	static const char *const no_tls[] = {"tls support", "tls not supported",
	                                     "bad directive"};
	char portbuf[16], out[4096], *line, *save = NULL;
	const char *argv[16];
	int fds[2], n = 0, has = 1, status;
	size_t len = 0, i;
	int64_t deadline;
	pid_t pid;

	snprintf(portbuf, sizeof portbuf, "%d", ht_free_port());
	argv[n++] = bin;
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--tls-port";
	argv[n++] = portbuf;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	argv[n] = NULL;
	if (pipe(fds) != 0)
		HT_FAIL("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		HT_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		if (chdir("/") != 0)
			_exit(126);
		execvp(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	deadline = ht_now_ms() + 10000;
	for (;;) {
		ssize_t got = read(fds[0], out + len, sizeof out - 1 - len);
		if (got > 0) {
			len += (size_t)got;
			if (len < sizeof out - 1)
				continue;
		}
		if (got == 0 || len >= sizeof out - 1 ||
		    (got < 0 && errno != EAGAIN && errno != EINTR) ||
		    ht_now_ms() > deadline)
			break;
		ht_sleep_ms(10);
	}
	out[len] = '\0';
	close(fds[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (why && why_len)
		why[0] = '\0';
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		for (i = 0; i < sizeof no_tls / sizeof no_tls[0]; i++)
			if (strcasestr(line, no_tls[i])) {
				has = 0;
				if (why && why_len && !why[0])
					snprintf(why, why_len, "%s", line);
			}
	return has;
}

int ht_server_has_tls(char *why, size_t why_len)
{
	static int known = -1;
	static char said[512];

	if (known < 0)
		known = probe_tls(ht_server_bin(), said, sizeof said);
	if (why && why_len)
		snprintf(why, why_len, "%s", said);
	return known;
}

void ht_skip(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "SKIPPED: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	/* at_exit (when ht_main ran) stops the servers */
	exit(HT_SKIP_STATUS);
}

void ht_require_tls(void)
{
	char why[512];

	if (!ht_server_has_tls(why, sizeof why))
		ht_skip("%s was built without TLS (it says: %s)",
		        ht_server_bin(), why);
}

static void spawn(ht_redis *r)
{
	pid_t parent = getpid();
	pid_t pid;
	char portbuf[16], log[400];
	const char *bin = ht_server_bin();
	const char *argv[32];
	int n = 0, fd;

	snprintf(portbuf, sizeof portbuf, "%d", r->port);
	snprintf(log, sizeof log, "%s/redis.log", r->dir);
	argv[n++] = bin;
	argv[n++] = "--port";
	argv[n++] = portbuf;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	argv[n++] = "--dir";
	argv[n++] = r->dir;
	if (r->password[0]) {
		argv[n++] = "--requirepass";
		argv[n++] = r->password;
	}
	if (r->sock[0]) {
		argv[n++] = "--unixsocket";
		argv[n++] = r->sock;
		argv[n++] = "--unixsocketperm";
		argv[n++] = "700";
	}
	argv[n] = NULL;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		HT_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Own process group (a ^C or group kill of the test does not
		 * race with our own stop), and die with the test. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, 0);
			close(fd);
		}
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	r->pid = pid;
}

static redisContext *connect_raw(const ht_redis *r, int timeout_ms)
{
	struct timeval tv;
	redisContext *c;
	redisReply *rep;

	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	if (!c)
		return NULL;
	if (c->err) {
		redisFree(c);
		return NULL;
	}
	tv.tv_sec = 10 * ht_scale();
	tv.tv_usec = 0;
	redisSetTimeout(c, tv);
	if (r->password[0]) {
		rep = redisCommand(c, "AUTH %s", r->password);
		if (!rep) {
			redisFree(c);
			return NULL;
		}
		freeReplyObject(rep);
	}
	return c;
}

/* Create the ACL user of r->opts, if any (again after a restart). */
static void setup_acl(ht_redis *r)
{
	redisContext *c;
	redisReply *rep;

	if (!r->opts.acl_user)
		return;
	c = connect_raw(r, 5000);
	if (!c)
		HT_FAIL("cannot connect to set up the ACL user");
	rep = redisCommand(c, "ACL SETUSER %s reset on >%s ~* &* +@all",
	                   r->opts.acl_user,
	                   r->opts.acl_password ? r->opts.acl_password : "");
	if (!rep || rep->type != REDIS_REPLY_STATUS)
		HT_FAIL("ACL SETUSER %s failed: %s", r->opts.acl_user,
		        rep && rep->str ? rep->str : c->errstr);
	freeReplyObject(rep);
	redisFree(c);
}

/* 1 when the server answering on r->port is ours (its dir is r->dir). */
static int wait_ready(ht_redis *r)
{
	int64_t deadline = ht_now_ms() + 20000;
	char real[PATH_MAX];
	int status;

	if (!realpath(r->dir, real))
		snprintf(real, sizeof real, "%s", r->dir);
	while (ht_now_ms() < deadline) {
		redisContext *c;
		redisReply *rep;

		if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
			r->pid = 0;
			return 0; /* exited: port taken, or a bad option */
		}
		c = connect_raw(r, 500);
		if (c) {
			rep = redisCommand(c, "CONFIG GET dir");
			if (rep && rep->type == REDIS_REPLY_ARRAY &&
			    rep->elements == 2 &&
			    rep->element[1]->type == REDIS_REPLY_STRING) {
				int ours =
				        strcmp(rep->element[1]->str, real) == 0;
				freeReplyObject(rep);
				redisFree(c);
				if (ours)
					return 1;
				/* somebody else's server on our port: ours
				 * will fail to bind and exit */
				ht_sleep_ms(50);
				continue;
			}
			if (rep)
				freeReplyObject(rep);
			redisFree(c);
		}
		ht_sleep_ms(20);
	}
	return 0;
}

static void kill_wait(pid_t pid)
{
	int64_t deadline;
	int status;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	deadline = ht_now_ms() + 5000;
	while (ht_now_ms() < deadline) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno == ECHILD))
			return;
		ht_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

static void check_main_thread(void)
{
	if (getpid() != g_main_pid || gettid() != getpid())
		HT_FAIL("redis-server start/stop must run on the test's main "
		        "thread");
}

/* dst = dir/file (dst and dir may live in one struct). */
static void join_path(char *dst, size_t dst_len, const char *dir,
                      const char *file)
{
	size_t n = strlen(dir), m = strlen(file);

	if (n + 1 + m + 1 > dst_len)
		HT_FAIL("path too long: %s/%s", dir, file);
	memmove(dst, dir, n);
	dst[n] = '/';
	memcpy(dst + n + 1, file, m + 1);
}

ht_redis *ht_redis_start(const ht_redis_opts *opts)
{
	ht_redis *r;
	const char *tmp = getenv("TMPDIR");
	int attempt;

	check_main_thread();
	if (g_nservers >= HT_MAX_SERVERS)
		HT_FAIL("too many redis servers");
	r = &g_servers[g_nservers];
	memset(r, 0, sizeof *r);
	if (opts)
		r->opts = *opts;
	if (!tmp || !*tmp || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(r->dir, sizeof r->dir, "%s/hilock-test-XXXXXX", tmp);
	if (!mkdtemp(r->dir))
		HT_FAIL("mkdtemp %s: %s", r->dir, strerror(errno));
	g_nservers++;
	join_path(r->log, sizeof r->log, r->dir, "redis.log");
	if (r->opts.requirepass) {
		size_t n = strlen(r->opts.requirepass);
		if (n >= sizeof r->password)
			HT_FAIL("password too long");
		memcpy(r->password, r->opts.requirepass, n + 1);
	}
	if (r->opts.unixsocket)
		join_path(r->sock, sizeof r->sock, r->dir, "redis.sock");
	for (attempt = 0; attempt < 8; attempt++) {
		r->port = ht_free_port();
		spawn(r);
		if (wait_ready(r))
			break;
		kill_wait(r->pid);
		r->pid = 0;
	}
	if (!r->pid)
		HT_FAIL("could not start the server %s (REDIS_SERVER)",
		        ht_server_bin());
	snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
	setup_acl(r);
	return r;
}

static int index_of(const ht_redis *r)
{
	return (int)(r - g_servers);
}

void ht_redis_stop(ht_redis *r)
{
	int i = index_of(r);

	check_main_thread();
	pthread_mutex_lock(&g_raw_mu);
	if (g_raw[i]) {
		redisFree(g_raw[i]);
		g_raw[i] = NULL;
	}
	pthread_mutex_unlock(&g_raw_mu);
	kill_wait(r->pid);
	r->pid = 0;
}

void ht_redis_restart(ht_redis *r)
{
	int attempt;

	ht_redis_stop(r);
	for (attempt = 0; attempt < 20; attempt++) {
		spawn(r);
		if (wait_ready(r)) {
			setup_acl(r);
			return;
		}
		kill_wait(r->pid);
		r->pid = 0;
		ht_sleep_ms(100);
	}
	HT_FAIL("could not restart redis-server on port %d", r->port);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];

	if (d) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

void ht_redis_destroy(ht_redis *r)
{
	ht_redis_stop(r);
	if (r->dir[0])
		remove_dir(r->dir);
	r->dir[0] = '\0';
}

ht_redis *ht_redis_default(void)
{
	static ht_redis *def;
	if (!def)
		def = ht_redis_start(NULL);
	return def;
}

static void stop_all_servers(void)
{
	int i;

	if (getpid() != g_main_pid)
		return;
	for (i = 0; i < g_nservers; i++) {
		if (g_servers[i].pid > 0)
			kill_wait(g_servers[i].pid);
		g_servers[i].pid = 0;
		if (g_servers[i].dir[0])
			remove_dir(g_servers[i].dir);
		g_servers[i].dir[0] = '\0';
	}
}

static void at_exit(void)
{
	int i;

	if (getpid() != g_main_pid)
		return;
	pthread_mutex_lock(&g_raw_mu);
	for (i = 0; i < HT_MAX_SERVERS; i++) {
		if (g_raw[i])
			redisFree(g_raw[i]);
		g_raw[i] = NULL;
	}
	pthread_mutex_unlock(&g_raw_mu);
	stop_all_servers();
}

static void on_signal(int sig)
{
	static const char msg[] = "test timed out (HILOCK_TEST_TIMEOUT)\n";
	int i;

	if (sig == SIGALRM && write(2, msg, sizeof msg - 1) < 0)
		sig = SIGALRM;

	if (getpid() == g_main_pid)
		for (i = 0; i < g_nservers; i++) {
			ht_redis *r = &g_servers[i];
			if (r->pid > 0)
				kill(r->pid, SIGKILL);
			/* async-signal-safe cleanup of the known files */
			if (r->dir[0]) {
				unlink(r->log);
				if (r->sock[0])
					unlink(r->sock);
				rmdir(r->dir);
			}
		}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ------------------------------------------------------------------------
 * hilock helpers
 * ------------------------------------------------------------------------ */
hl_client *ht_client(ht_redis *r, int64_t watchdog_ms)
{
	hl_client_options o;

	HT_OK(hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION));
	if (watchdog_ms > 0)
		o.watchdog_timeout_ms = watchdog_ms;
	return ht_client_url(r->url, &o);
}

hl_client *ht_client_url(const char *url, const hl_client_options *opts)
{
	hl_client *c = NULL;
	int rc = hl_client_new(&c, url, opts);

	if (rc != HL_OK)
		HT_FAIL("hl_client_new(%s): %s: %s", url, hl_status_name(rc),
		        hl_error_last());
	if (!c)
		HT_FAIL("hl_client_new returned HL_OK and a NULL client");
	return c;
}

hl_lock *ht_lock(hl_client *c, const char *name)
{
	hl_lock *l = NULL;

	HT_OK(hl_lock_new(&l, c, name, strlen(name)));
	HT_CHECK(l != NULL);
	return l;
}

const char *ht_owner(const hl_lock *lock)
{
	static __thread char buf[256];
	size_t len = 0;

	HT_OK(hl_lock_owner(&len, lock, buf, sizeof buf));
	HT_EQ(len, strlen(buf));
	return buf;
}

/* ------------------------------------------------------------------------
 * Raw hiredis
 * ------------------------------------------------------------------------ */
redisContext *ht_raw_new(const ht_redis *r)
{
	redisContext *c = connect_raw(r, 5000);
	if (!c)
		HT_FAIL("raw connect to 127.0.0.1:%d failed", r->port);
	return c;
}

static redisReply *raw_v(redisContext *c, const char *fmt, va_list ap)
{
	redisReply *rep = redisvCommand(c, fmt, ap);
	if (!rep)
		HT_FAIL("raw command \"%s\" failed: %s", fmt, c->errstr);
	return rep;
}

redisReply *ht_raw(redisContext *c, const char *fmt, ...)
{
	va_list ap;
	redisReply *rep;

	va_start(ap, fmt);
	rep = raw_v(c, fmt, ap);
	va_end(ap);
	return rep;
}

redisContext *ht_raw_of(ht_redis *r)
{
	int i = index_of(r);

	/* a forked child never shares the parent's socket */
	if (!g_raw[i] || g_raw[i]->err || g_raw_pid[i] != getpid()) {
		if (g_raw[i])
			redisFree(g_raw[i]);
		g_raw[i] = ht_raw_new(r);
		g_raw_pid[i] = getpid();
	}
	return g_raw[i];
}

/* One command on the shared connection, reconnecting once if the server
 * was restarted under it. */
static redisReply *shared_cmd(ht_redis *r, const char *fmt, ...)
{
	va_list ap;
	redisReply *rep;
	redisContext *c;
	int i = index_of(r);

	pthread_mutex_lock(&g_raw_mu);
	c = ht_raw_of(r);
	va_start(ap, fmt);
	rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!rep) {
		redisFree(g_raw[i]);
		g_raw[i] = NULL;
		c = ht_raw_of(r);
		va_start(ap, fmt);
		rep = redisvCommand(c, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&g_raw_mu);
	if (!rep)
		HT_FAIL("raw command \"%s\" failed", fmt);
	if (rep->type == REDIS_REPLY_ERROR)
		HT_FAIL("raw command \"%s\": %s", fmt, rep->str);
	return rep;
}

static long long reply_int(redisReply *rep, const char *what)
{
	long long v;

	if (rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	else if (rep->type == REDIS_REPLY_STRING)
		v = atoll(rep->str);
	else if (rep->type == REDIS_REPLY_NIL)
		v = -1;
	else
		HT_FAIL("%s: unexpected reply type %d", what, rep->type);
	freeReplyObject(rep);
	return v;
}

long long ht_pttl(ht_redis *r, const void *k, size_t klen)
{
	return reply_int(shared_cmd(r, "PTTL %b", k, klen), "PTTL");
}

int ht_exists(ht_redis *r, const void *k, size_t klen)
{
	return (int)reply_int(shared_cmd(r, "EXISTS %b", k, klen), "EXISTS");
}

long long ht_hget_int(ht_redis *r, const void *k, size_t klen,
                      const char *field)
{
	return reply_int(shared_cmd(r, "HGET %b %s", k, klen, field), "HGET");
}

long long ht_hlen(ht_redis *r, const void *k, size_t klen)
{
	return reply_int(shared_cmd(r, "HLEN %b", k, klen), "HLEN");
}

void ht_del(ht_redis *r, const void *k, size_t klen)
{
	freeReplyObject(shared_cmd(r, "DEL %b", k, klen));
}

long long ht_numsub(ht_redis *r, const void *ch, size_t chlen)
{
	redisReply *rep = shared_cmd(r, "PUBSUB NUMSUB %b", ch, chlen);
	long long n;

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2)
		HT_FAIL("PUBSUB NUMSUB: unexpected reply");
	n = rep->element[1]->integer;
	freeReplyObject(rep);
	return n;
}

long long ht_cmd_calls(ht_redis *r, const char *cmd)
{
	redisReply *rep = shared_cmd(r, "INFO commandstats");
	char key[64];
	const char *p;
	long long n = 0;

	if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_STATUS)
		HT_FAIL("INFO: unexpected reply");
	snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
	p = strstr(rep->str, key);
	if (p)
		n = atoll(p + strlen(key));
	freeReplyObject(rep);
	return n;
}

long long ht_total_commands(ht_redis *r)
{
	redisReply *rep = shared_cmd(r, "INFO stats");
	const char *p;
	long long n;

	if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_STATUS)
		HT_FAIL("INFO: unexpected reply");
	p = strstr(rep->str, "total_commands_processed:");
	if (!p)
		HT_FAIL("INFO: no total_commands_processed");
	n = atoll(p + strlen("total_commands_processed:"));
	freeReplyObject(rep);
	return n;
}

long long ht_get_int(redisContext *c, const char *k)
{
	redisReply *rep = ht_raw(c, "GET %s", k);
	long long v = 0;

	if (rep->type == REDIS_REPLY_STRING)
		v = atoll(rep->str);
	else if (rep->type != REDIS_REPLY_NIL)
		HT_FAIL("GET %s: unexpected reply type %d", k, rep->type);
	freeReplyObject(rep);
	return v;
}

void ht_set_int(redisContext *c, const char *k, long long v)
{
	redisReply *rep = ht_raw(c, "SET %s %lld", k, v);
	if (rep->type == REDIS_REPLY_ERROR)
		HT_FAIL("SET %s: %s", k, rep->str);
	freeReplyObject(rep);
}

redisContext *ht_sub_new(ht_redis *r, const void *ch, size_t chlen)
{
	redisContext *s = ht_raw_new(r);
	redisReply *rep = ht_raw(s, "SUBSCRIBE %b", ch, chlen);

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    strcmp(rep->element[0]->str, "subscribe") != 0)
		HT_FAIL("SUBSCRIBE: unexpected reply");
	freeReplyObject(rep);
	return s;
}

char *ht_sub_next(redisContext *s, char *chbuf, size_t chbuf_len)
{
	struct timeval tv;
	redisReply *rep = NULL;
	char *payload;

	tv.tv_sec = 5 * ht_scale();
	tv.tv_usec = 0;
	redisSetTimeout(s, tv);
	if (redisGetReply(s, (void **)&rep) != REDIS_OK || !rep)
		HT_FAIL("no pub/sub message within %d s: %s", 5 * ht_scale(),
		        s->errstr);
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    strcmp(rep->element[0]->str, "message") != 0)
		HT_FAIL("pub/sub: unexpected reply");
	if (chbuf) {
		size_t n = rep->element[1]->len < chbuf_len - 1
		                   ? rep->element[1]->len
		                   : chbuf_len - 1;
		memcpy(chbuf, rep->element[1]->str, n);
		chbuf[n] = '\0';
	}
	payload = malloc(rep->element[2]->len + 1);
	if (!payload)
		HT_FAIL("malloc");
	memcpy(payload, rep->element[2]->str, rep->element[2]->len);
	payload[rep->element[2]->len] = '\0';
	freeReplyObject(rep);
	return payload;
}

pthread_t ht_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, fn, arg);

	if (rc != 0)
		HT_FAIL("pthread_create: %s", strerror(rc));
	return t;
}

void ht_thread_join(pthread_t t, int64_t timeout_ms)
{
	struct timespec ts;
	int64_t ms = timeout_ms * ht_scale();
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	rc = pthread_timedjoin_np(t, NULL, &ts);
	if (rc != 0)
		HT_FAIL("thread did not finish within %lld ms (%s)",
		        (long long)ms, strerror(rc));
}

int ht_wait_until(int (*pred)(void *), void *arg, int64_t timeout_ms)
{
	int64_t deadline = ht_now_ms() + timeout_ms * ht_scale();

	for (;;) {
		if (pred(arg))
			return 1;
		if (ht_now_ms() >= deadline)
			return 0;
		ht_sleep_ms(10);
	}
}

typedef struct waiting_want {
	hl_client *c;
	uint64_t n;
} waiting_want;

static uint64_t waiting_now(hl_client *c)
{
	hl_client_stats s;
	memset(&s, 0, sizeof s);
	s.version = HL_CLIENT_STATS_VERSION;
	if (hl_client_stats_get(&s, c) != HL_OK)
		HT_FAIL("hl_client_stats_get: %s", hl_error_last());
	return s.waiting;
}

static int waiting_is(void *arg)
{
	waiting_want *w = arg;
	return waiting_now(w->c) == w->n;
}

void ht_wait_waiting_at(const char *file, int line, hl_client *c, uint64_t n)
{
	waiting_want w = {c, n};
	if (!ht_wait_until(waiting_is, &w, 10000))
		ht_fail(file, line, "waiting is %llu, not %llu",
		        (unsigned long long)waiting_now(c),
		        (unsigned long long)n);
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */
static void maybe_reexec_under_valgrind(int argc, char **argv)
{
	const char *want = getenv("HILOCK_VALGRIND");
	const char *ok = getenv("HILOCK_TEST_VALGRIND");
	char self[PATH_MAX];
	const char **args;
	ssize_t n;
	int i, k = 0;

	if (!want || strcmp(want, "1") != 0 || !ok || strcmp(ok, "1") != 0 ||
	    ht_under_valgrind())
		return;
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		fprintf(stderr, "readlink /proc/self/exe: %s\n",
		        strerror(errno));
		exit(1);
	}
	self[n] = '\0';
	args = calloc((size_t)argc + 16, sizeof *args);
	if (!args)
		exit(1);
	args[k++] = "valgrind";
	args[k++] = "--error-exitcode=99";
	args[k++] = "--leak-check=full";
	args[k++] = "--errors-for-leak-kinds=definite";
	args[k++] = "--child-silent-after-fork=yes";
	args[k++] = "--trace-children=no";
	args[k++] = "--num-callers=30";
	args[k++] = self;
	for (i = 1; i < argc; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	setenv("HILOCK_UNDER_VALGRIND", "1", 1);
	fflush(stdout);
	fflush(stderr);
	execvp("valgrind", (char *const *)args);
	fprintf(stderr, "exec valgrind: %s\n", strerror(errno));
	exit(1);
}

int ht_main(int argc, char **argv, const ht_case *cases, size_t n_cases)
{
	size_t i;
	int found = 0;

	maybe_reexec_under_valgrind(argc, argv);
	g_main_pid = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGALRM, on_signal);
	atexit(at_exit);
	if (getenv("HILOCK_TEST_TIMEOUT") &&
	    atoi(getenv("HILOCK_TEST_TIMEOUT")) > 0)
		alarm((unsigned)(atoi(getenv("HILOCK_TEST_TIMEOUT")) *
		                 ht_scale()));

	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < n_cases; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	for (i = 0; i < n_cases; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		found = 1;
		ht_note("%s: start", cases[i].name);
		cases[i].fn();
		ht_note("%s: ok", cases[i].name);
	}
	if (!found) {
		fprintf(stderr, "unknown test case: %s\n",
		        argc > 1 ? argv[1] : "");
		return 2;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Fault-injection proxy
 * ------------------------------------------------------------------------ */
#include <poll.h>

#ifndef HT_FAULTPROXY_PATH
#define HT_FAULTPROXY_PATH "faultproxy"
#endif

static ht_proxy g_proxies[HT_MAX_PROXIES];
static int g_nproxies;
static pthread_mutex_t g_proxy_mu = PTHREAD_MUTEX_INITIALIZER;

/* Read one line of the proxy's answers into line (without the newline)
 * within timeout_ms. Returns 0, or -1 with the reason in line. */
static int proxy_read_line(ht_proxy *p, char *line, size_t line_len,
                           int64_t timeout_ms)
{
	int64_t deadline = ht_now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->buf_len);
		struct pollfd pfd;
		int64_t left;
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - p->buf);
			size_t copy = len < line_len - 1 ? len : line_len - 1;

			memcpy(line, p->buf, copy);
			line[copy] = '\0';
			p->buf_len -= len + 1;
			memmove(p->buf, nl + 1, p->buf_len);
			return 0;
		}
		if (p->buf_len == sizeof p->buf) {
			snprintf(line, line_len, "answer too long");
			return -1;
		}
		left = deadline - ht_now_ms();
		if (left <= 0) {
			snprintf(line, line_len, "no answer within %lld ms",
			         (long long)timeout_ms);
			return -1;
		}
		pfd.fd = p->from_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			snprintf(line, line_len, "poll: %s", strerror(errno));
			return -1;
		}
		if (!pfd.revents)
			continue;
		n = read(p->from_fd, p->buf + p->buf_len,
		         sizeof p->buf - p->buf_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(line, line_len, "faultproxy exited");
			return -1;
		}
		p->buf_len += (size_t)n;
	}
}

static int write_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

static void proxy_kill_wait(ht_proxy *p)
{
	int64_t deadline = ht_now_ms() + 5000;
	int status;

	/* "quit", and EOF on its stdin (unless a forked child holds a copy
	 * of the pipe): either makes it exit */
	if (p->to_fd >= 0) {
		write_all(p->to_fd, "quit\n", 5);
		close(p->to_fd);
	}
	p->to_fd = -1;
	while (p->pid > 0 && ht_now_ms() < deadline) {
		pid_t w = waitpid(p->pid, &status, WNOHANG);
		if (w == p->pid || (w < 0 && errno == ECHILD))
			break;
		ht_sleep_ms(5);
	}
	if (p->pid > 0 && ht_now_ms() >= deadline) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	}
	p->pid = 0;
	if (p->from_fd >= 0)
		close(p->from_fd);
	p->from_fd = -1;
}

static void proxy_at_exit(void)
{
	int i;

	if (getpid() != g_main_pid)
		return;
	for (i = 0; i < g_nproxies; i++)
		if (g_proxies[i].pid > 0)
			proxy_kill_wait(&g_proxies[i]);
}

static const char *proxy_bin(void)
{
	const char *bin = getenv("HILOCK_FAULTPROXY");

	return bin && *bin ? bin : HT_FAULTPROXY_PATH;
}

ht_proxy *ht_proxy_start(int upstream_port)
{
	static int registered;
	pid_t parent = getpid();
	int to[2], from[2];
	char line[256], portbuf[16];
	const char *bin = proxy_bin();
	ht_proxy *p;
	pid_t pid;

	check_main_thread();
	if (g_nproxies >= HT_MAX_PROXIES)
		HT_FAIL("too many fault proxies");
	if (!registered) {
		atexit(proxy_at_exit);
		registered = 1;
	}
	p = &g_proxies[g_nproxies++];
	memset(p, 0, sizeof *p);
	p->to_fd = p->from_fd = -1;
	p->upstream_port = upstream_port;
	if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0)
		HT_FAIL("pipe2: %s", strerror(errno));
	snprintf(portbuf, sizeof portbuf, "%d", upstream_port);

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
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl(bin, bin, portbuf, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->pid = pid;
	p->to_fd = to[1];
	p->from_fd = from[0];
	if (proxy_read_line(p, line, sizeof line, 5000 * ht_scale()) != 0 ||
	    sscanf(line, "port %d", &p->port) != 1 || p->port <= 0) {
		proxy_kill_wait(p);
		HT_FAIL("faultproxy (%s) did not start: %s", bin, line);
	}
	snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", p->port);
	return p;
}

/* Send cmd, read the answer into ans. 0 when it starts with "ok". */
static int proxy_request(ht_proxy *p, const char *cmd, char *ans,
                         size_t ans_len)
{
	char out[256];
	int n, rc;

	n = snprintf(out, sizeof out, "%s\n", cmd);
	if (n < 0 || (size_t)n >= sizeof out || strchr(cmd, '\n')) {
		snprintf(ans, ans_len, "bad command");
		return -1;
	}
	pthread_mutex_lock(&g_proxy_mu);
	if (p->pid <= 0) {
		snprintf(ans, ans_len, "proxy stopped");
		rc = -1;
	} else if (write_all(p->to_fd, out, (size_t)n) != 0) {
		snprintf(ans, ans_len, "write: %s", strerror(errno));
		rc = -1;
	} else {
		rc = proxy_read_line(p, ans, ans_len, 5000 * ht_scale());
	}
	pthread_mutex_unlock(&g_proxy_mu);
	if (rc == 0 && strncmp(ans, "ok", 2) != 0)
		rc = -1;
	if (rc == 0 && ans[2] != '\0' && ans[2] != ' ')
		rc = -1;
	return rc;
}

void ht_proxy_cmd(ht_proxy *p, const char *cmd)
{
	char ans[256];

	if (proxy_request(p, cmd, ans, sizeof ans) != 0)
		HT_FAIL("faultproxy \"%s\": %s", cmd, ans);
}

long ht_proxy_count(ht_proxy *p)
{
	char ans[256];
	long n;

	if (proxy_request(p, "count", ans, sizeof ans) != 0)
		HT_FAIL("faultproxy \"count\": %s", ans);
	if (sscanf(ans, "ok %ld", &n) != 1)
		HT_FAIL("faultproxy \"count\": bad answer \"%s\"", ans);
	return n;
}

void ht_proxy_stop(ht_proxy *p)
{
	check_main_thread();
	if (p->pid <= 0)
		return;
	pthread_mutex_lock(&g_proxy_mu);
	proxy_kill_wait(p);
	pthread_mutex_unlock(&g_proxy_mu);
}

/* ------------------------------------------------------------------------
 * Critical-section overlap checker
 * ------------------------------------------------------------------------ */
static void cs_append(const char *path, const char *what, const char *tag)
{
	char line[512];
	int n, fd;
	ssize_t w;

	if (strchr(tag, '\n'))
		HT_FAIL("ht_cs_%s: the tag has a newline", what);
	n = snprintf(line, sizeof line, "%s %s\n", what, tag);
	if (n < 0 || (size_t)n >= sizeof line)
		HT_FAIL("ht_cs_%s: tag too long", what);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		HT_FAIL("ht_cs_%s: open %s: %s", what, path, strerror(errno));
	do
		w = write(fd, line, (size_t)n);
	while (w < 0 && errno == EINTR);
	if (w != n)
		HT_FAIL("ht_cs_%s: write %s: %s", what, path,
		        w < 0 ? strerror(errno) : "short write");
	close(fd);
}

void ht_cs_enter(const char *path, const char *tag)
{
	cs_append(path, "enter", tag);
}

void ht_cs_leave(const char *path, const char *tag)
{
	cs_append(path, "leave", tag);
}

long ht_cs_verify(const char *path, char *why, size_t why_len)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *open_tag = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0, sections = 0, open_line = 0;
	int bad = 0;

	if (why_len > 0)
		why[0] = '\0';
	if (!f) {
		snprintf(why, why_len, "open %s: %s", path, strerror(errno));
		return -1;
	}
	while (!bad && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len == 0 || line[len - 1] != '\n') {
			snprintf(why, why_len, "line %ld: incomplete line",
			         lineno);
			bad = 1;
		} else if ((size_t)len != strlen(line)) {
			snprintf(why, why_len, "line %ld: NUL byte", lineno);
			bad = 1;
		} else {
			line[len - 1] = '\0';
		}
		if (bad)
			break;
		if (strncmp(line, "enter ", 6) == 0) {
			if (open_tag) {
				snprintf(why, why_len,
				         "line %ld: overlap: \"%s\" while "
				         "\"enter %s\" (line %ld) is not left",
				         lineno, line, open_tag, open_line);
				bad = 1;
			} else {
				open_tag = strdup(line + 6);
				open_line = lineno;
				if (!open_tag)
					HT_FAIL("strdup");
			}
		} else if (strncmp(line, "leave ", 6) == 0) {
			if (!open_tag) {
				snprintf(why, why_len,
				         "line %ld: \"%s\" outside any section",
				         lineno, line);
				bad = 1;
			} else if (strcmp(open_tag, line + 6) != 0) {
				snprintf(why, why_len,
				         "line %ld: \"%s\" but \"enter %s\" "
				         "(line %ld) is open: overlap",
				         lineno, line, open_tag, open_line);
				bad = 1;
			} else {
				free(open_tag);
				open_tag = NULL;
				sections++;
			}
		} else {
			snprintf(why, why_len, "line %ld: not enter/leave: %s",
			         lineno, line);
			bad = 1;
		}
	}
	if (!bad && ferror(f)) {
		snprintf(why, why_len, "read %s: %s", path, strerror(errno));
		bad = 1;
	}
	if (!bad && open_tag) {
		snprintf(why, why_len,
		         "line %ld: \"enter %s\" never left (end of file)",
		         open_line, open_tag);
		bad = 1;
	}
	free(open_tag);
	free(line);
	fclose(f);
	return bad ? -1 : sections;
}

long ht_cs_check(const char *path)
{
	char why[512];
	long n = ht_cs_verify(path, why, sizeof why);

	if (n < 0)
		HT_FAIL("critical sections in %s: %s", path, why);
	return n;
}

int ht_contender(hl_client *(*mk)(void *arg), void *arg, const char *name,
                 const char *path, const char *tag, int64_t duration_ms)
{
	pid_t pid = fork();
	if (pid < 0)
		HT_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		hl_client *c = mk(arg);
		hl_lock *l = ht_lock(c, name);
		int64_t end = ht_now_ms() + duration_ms;
		int got = 0;
		while (ht_now_ms() < end) {
			int acq = 0, lost = 0;
			if (hl_lock_try_acquire(&acq, l, 1000, -1, NULL) !=
			            HL_OK ||
			    !acq)
				continue;
			ht_cs_enter(path, tag);
			ht_sleep_ms(2 + got % 4);
			hl_lock_is_lost(&lost, l);
			if (lost)
				_exit(4); /* told: the record stays open */
			ht_cs_leave(path, tag);
			got++;
			hl_lock_release(NULL, l);
		}
		hl_lock_free(l);
		hl_client_free(c);
		_exit(got > 0 ? 0 : 3);
	}
	return (int)pid;
}

void ht_contenders_wait(const int *pids, int n)
{
	int i, status;
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i])
			HT_FAIL("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			HT_FAIL("contender %d: %s %d", i,
			        WIFEXITED(status) ? "exit status" : "signal",
			        WIFEXITED(status) ? WEXITSTATUS(status)
			                          : WTERMSIG(status));
	}
}

/* ---- tasks and threads -------------------------------------------------- */

int ht_threads_now(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");
	HT_CHECK(f != NULL);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	HT_CHECK(n > 0);
	return n;
}

int ht_fd_readable(int fd, int ms)
{
	struct pollfd p;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

hl_task *ht_next_task(hl_client *c, int64_t ms)
{
	hl_task *t = NULL;
	int fd = -1;
	int64_t end = ht_now_ms() + ms * ht_scale();
	HT_OK(hl_client_task_fd(&fd, c));
	for (;;) {
		HT_OK(hl_client_task_next(&t, c));
		if (t)
			return t;
		HT_CHECKF(ht_now_ms() < end, "no task completed within %lld ms",
		          (long long)ms);
		ht_fd_readable(fd, 50);
	}
}

int ht_task_result(hl_task *t, int *out, int64_t ms)
{
	HT_OK(hl_task_wait(t, ms * ht_scale(), NULL));
	HT_EQ(hl_task_done(t), 1);
	return hl_task_result(out, t);
}
