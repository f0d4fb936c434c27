/*
 * Self-test of the test tools: the fault-injection proxy (ht_proxy_*,
 * tests/tools/faultproxy) and the critical-section overlap checker
 * (ht_cs_*).
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

/* A hiredis connection to the proxy, commands bounded by timeout_ms. */
static redisContext *via(const ht_proxy *p, int timeout_ms)
{
	struct timeval tv;
	redisContext *c;

	tv.tv_sec = 5;
	tv.tv_usec = 0;
	c = redisConnectWithTimeout("127.0.0.1", p->port, tv);
	if (!c || c->err)
		HT_FAIL("connect to the proxy (port %d): %s", p->port,
		        c ? c->errstr : "no memory");
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	redisSetTimeout(c, tv);
	return c;
}

static void set_timeout_ms(redisContext *c, int timeout_ms)
{
	struct timeval tv;

	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	redisSetTimeout(c, tv);
}

/* PING on c answers PONG. */
static void check_ping(redisContext *c)
{
	redisReply *rep = redisCommand(c, "PING");

	if (!rep)
		HT_FAIL("PING through the proxy failed: %s", c->errstr);
	HT_CHECK(rep->type == REDIS_REPLY_STATUS);
	HT_STREQ(rep->str, "PONG");
	freeReplyObject(rep);
}

/* The command gets no reply (hiredis format); returns the ms it took. */
static int64_t check_no_reply(redisContext *c, const char *fmt, ...)
{
	int64_t t0 = ht_now_ms();
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (rep)
		HT_FAIL("\"%s\" got a reply (type %d) through the proxy", fmt,
		        rep->type);
	HT_CHECK(c->err != 0);
	return ht_now_ms() - t0;
}

static ht_proxy *proxy_default(void)
{
	return ht_proxy_start(ht_redis_default()->port);
}

/* A fresh key name per case (the server is per process anyway). */
static const char *key(const char *what)
{
	static char buf[128];

	snprintf(buf, sizeof buf, "hilock:faultproxy:%s:%d", what,
	         (int)getpid());
	ht_del(ht_redis_default(), HT_S(buf));
	return buf;
}

struct count_arg {
	ht_proxy *p;
	long want;
};

static int count_is(void *arg)
{
	struct count_arg *a = arg;

	return ht_proxy_count(a->p) == a->want;
}

static void wait_count(ht_proxy *p, long want)
{
	struct count_arg a;

	a.p = p;
	a.want = want;
	if (!ht_wait_until(count_is, &a, 5000))
		HT_FAIL("proxy count stayed %ld, expected %ld",
		        ht_proxy_count(p), want);
}

struct get_arg {
	const char *k;
	long long want;
};

static int get_is(void *arg)
{
	struct get_arg *a = arg;

	return ht_get_int(ht_raw_of(ht_redis_default()), a->k) == a->want;
}

/* ------------------------------------------------------------------------
 * Proxy
 * ------------------------------------------------------------------------ */
static void ping(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c = via(p, 5000);

	HT_CHECK(p->pid > 0);
	HT_CHECK(p->port > 0 && p->port != ht_redis_default()->port);
	HT_CHECK(strstr(p->url, "redis://127.0.0.1:") == p->url);
	check_ping(c);
	check_ping(c);
	HT_EQ(ht_proxy_count(p), 1);
	/* a hilock client through it works too */
	{
		hl_client *hc = ht_client_url(p->url, NULL);
		hl_lock *l = ht_lock(hc, "hilock:faultproxy:ping");

		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_OK(hl_lock_release(NULL, l));
		hl_lock_free(l);
		hl_client_free(hc);
	}
	redisFree(c);
	ht_proxy_stop(p);
	HT_EQ(p->pid, 0);
	ht_proxy_stop(p); /* twice is fine */
}

static void reset(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c1 = via(p, 2000), *c2;
	redisReply *rep;

	check_ping(c1);
	ht_proxy_cmd(p, "reset");
	HT_EQ(ht_proxy_count(p), 0);
	rep = redisCommand(c1, "PING");
	HT_CHECK(rep == NULL);
	HT_CHECK(c1->err == REDIS_ERR_IO || c1->err == REDIS_ERR_EOF);
	ht_note("after reset: %s", c1->errstr);
	redisFree(c1);

	c2 = via(p, 2000);
	check_ping(c2);
	HT_EQ(ht_proxy_count(p), 1);
	/* a connection made just before the reset is reset too */
	c1 = via(p, 2000);
	ht_proxy_cmd(p, "reset");
	HT_CHECK(redisCommand(c1, "PING") == NULL);
	HT_CHECK(redisCommand(c2, "PING") == NULL);
	redisFree(c1);
	redisFree(c2);
	c1 = via(p, 2000);
	check_ping(c1);
	redisFree(c1);
}

static void blackhole(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c1 = via(p, 2000), *c2;
	struct get_arg g;
	int64_t took;

	g.k = key("blackhole");
	g.want = 1;
	check_ping(c1);
	ht_proxy_cmd(p, "blackhole on");
	set_timeout_ms(c1, 300);
	took = check_no_reply(c1, "INCR %s", g.k);
	HT_RANGE(took, 250, 5000);
	redisFree(c1); /* the INCR stays queued in the kernel */

	c1 = via(p, 300);
	took = check_no_reply(c1, "PING");
	HT_RANGE(took, 250, 5000);
	redisFree(c1);

	/* the held INCR reaches Redis once the black-hole ends: late */
	HT_EQ(ht_get_int(ht_raw_of(ht_redis_default()), g.k), 0);
	ht_proxy_cmd(p, "blackhole off");
	HT_CHECK(ht_wait_until(get_is, &g, 5000));

	c2 = via(p, 2000);
	check_ping(c2);
	redisFree(c2);
}

static void blackhole_new_conn(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c;
	redisReply *rep;
	int64_t took;

	ht_proxy_cmd(p, "blackhole on");
	c = via(p, 300); /* the kernel completes the handshake */
	HT_EQ(ht_proxy_count(p), 1);
	took = check_no_reply(c, "PING");
	HT_RANGE(took, 250, 5000);
	redisFree(c);

	/* sent during the black-hole, answered after it */
	c = via(p, 5000);
	HT_CHECK(redisAppendCommand(c, "PING") == REDIS_OK);
	{
		int done = 0;
		HT_CHECK(redisBufferWrite(c, &done) == REDIS_OK && done);
	}
	ht_sleep_ms(200);
	ht_proxy_cmd(p, "blackhole off");
	HT_CHECK(redisGetReply(c, (void **)&rep) == REDIS_OK && rep);
	HT_STREQ(rep->str, "PONG");
	freeReplyObject(rep);
	check_ping(c);
	redisFree(c);
}

static void delay(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c = via(p, 10000);
	int64_t t0, took;

	check_ping(c);
	ht_proxy_cmd(p, "delay 200");
	t0 = ht_now_ms();
	check_ping(c);
	took = ht_now_ms() - t0;
	ht_note("PING with delay 200: %lld ms", (long long)took);
	/* 200 ms on the way there, 200 ms on the way back */
	HT_RANGE(took, 400, 400 + 3000 * ht_scale());

	ht_proxy_cmd(p, "delay 0");
	t0 = ht_now_ms();
	check_ping(c);
	took = ht_now_ms() - t0;
	HT_RANGE(took, 0, 350);

	/* order is kept across pipelined commands */
	ht_proxy_cmd(p, "delay 50");
	{
		redisReply *rep;
		int i;

		for (i = 0; i < 20; i++)
			redisAppendCommand(c, "ECHO %d", i);
		for (i = 0; i < 20; i++) {
			HT_CHECK(redisGetReply(c, (void **)&rep) == REDIS_OK);
			HT_EQ(atoi(rep->str), i);
			freeReplyObject(rep);
		}
	}
	redisFree(c);
}

static void drop(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c = via(p, 2000);
	const char *k = key("drop");
	redisReply *rep;
	int64_t took;

	check_ping(c);
	ht_proxy_cmd(p, "drop on");
	set_timeout_ms(c, 300);
	took = check_no_reply(c, "INCR %s", k);
	HT_RANGE(took, 250, 5000);
	redisFree(c);
	ht_proxy_cmd(p, "drop off");
	ht_sleep_ms(300);
	/* lost forever */
	HT_EQ(ht_get_int(ht_raw_of(ht_redis_default()), k), 0);
	c = via(p, 2000);
	rep = redisCommand(c, "INCR %s", k);
	HT_CHECK(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
	freeReplyObject(rep);
	redisFree(c);
}

static void count(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c1, *c2;

	HT_EQ(ht_proxy_count(p), 0);
	c1 = via(p, 2000);
	c2 = via(p, 2000);
	check_ping(c1);
	HT_EQ(ht_proxy_count(p), 2);
	redisFree(c1);
	wait_count(p, 1);
	check_ping(c2);
	redisFree(c2);
	wait_count(p, 0);
}

static int raw_connect(int port)
{
	struct sockaddr_in a;
	struct timeval tv;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	HT_CHECK(fd >= 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
		HT_FAIL("connect 127.0.0.1:%d: %s", port, strerror(errno));
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void half_close(void)
{
	ht_proxy *p = proxy_default();
	static const char req[] = "*1\r\n$4\r\nPING\r\n";
	char buf[64];
	size_t got = 0;
	int fd = raw_connect(p->port);

	HT_EQ(write(fd, req, sizeof req - 1), (long)(sizeof req - 1));
	HT_EQ(shutdown(fd, SHUT_WR), 0);
	/* the reply, then EOF: Redis closes on our FIN, forwarded */
	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			HT_FAIL("read: %s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
		HT_CHECK(got < sizeof buf - 1);
	}
	buf[got] = '\0';
	HT_STREQ(buf, "+PONG\r\n");
	close(fd);
	wait_count(p, 0);
}

static void bulk(void)
{
	ht_proxy *p = proxy_default();
	redisContext *c = via(p, 20000);
	const size_t size = 5 * 1024 * 1024;
	const char *k = key("bulk");
	char *v = malloc(size);
	redisReply *rep;
	size_t i;
	int round;

	HT_CHECK(v != NULL);
	for (i = 0; i < size; i++)
		v[i] = (char)('a' + (i * 7919 + i / 1000) % 26);
	for (round = 0; round < 2; round++) {
		if (round == 1)
			ht_proxy_cmd(p, "delay 20");
		v[0] = (char)('0' + round);
		rep = redisCommand(c, "SET %s %b", k, v, size);
		HT_CHECK(rep && rep->type == REDIS_REPLY_STATUS);
		freeReplyObject(rep);
		rep = redisCommand(c, "GET %s", k);
		HT_CHECK(rep && rep->type == REDIS_REPLY_STRING);
		HT_EQ(rep->len, size);
		HT_CHECK(memcmp(rep->str, v, size) == 0);
		freeReplyObject(rep);
	}
	free(v);
	redisFree(c);
}

static void upstream_down(void)
{
	ht_proxy *p = ht_proxy_start(ht_free_port());
	redisContext *c;
	struct timeval tv;
	int i;

	for (i = 0; i < 3; i++) {
		tv.tv_sec = 2;
		tv.tv_usec = 0;
		c = redisConnectWithTimeout("127.0.0.1", p->port, tv);
		HT_CHECK(c != NULL);
		if (!c->err) {
			set_timeout_ms(c, 2000);
			HT_CHECK(redisCommand(c, "PING") == NULL);
			HT_CHECK(c->err == REDIS_ERR_IO ||
			         c->err == REDIS_ERR_EOF);
		}
		redisFree(c);
	}
	/* the proxy itself is fine */
	wait_count(p, 0);
	ht_proxy_stop(p);
}

/* ------------------------------------------------------------------------
 * Overlap checker
 * ------------------------------------------------------------------------ */
static char g_dir[256];

static const char *tmp_file(const char *name)
{
	static char path[400];

	if (!g_dir[0]) {
		const char *tmp = getenv("TMPDIR");
		if (!tmp || !*tmp || strlen(tmp) > 100)
			tmp = "/tmp";
		snprintf(g_dir, sizeof g_dir, "%s/hilock-cs-XXXXXX", tmp);
		if (!mkdtemp(g_dir))
			HT_FAIL("mkdtemp: %s", strerror(errno));
	}
	snprintf(path, sizeof path, "%s/%s", g_dir, name);
	return path;
}

static void tmp_cleanup(const char *path)
{
	unlink(path);
	rmdir(g_dir);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	HT_CHECK(f != NULL);
	fputs(text, f);
	HT_EQ(fclose(f), 0);
}

static void cs_good(void)
{
	char path[400], why[256];

	snprintf(path, sizeof path, "%s", tmp_file("good"));
	ht_cs_enter(path, "a");
	ht_cs_leave(path, "a");
	ht_cs_enter(path, "b 2");
	ht_cs_leave(path, "b 2");
	ht_cs_enter(path, "a");
	ht_cs_leave(path, "a");
	HT_EQ(ht_cs_check(path), 3);
	HT_EQ(ht_cs_verify(path, why, sizeof why), 3);
	HT_STREQ(why, "");

	write_file(path, "");
	HT_EQ(ht_cs_check(path), 0);
	tmp_cleanup(path);
}

/* text must be refused with a reason naming want_line. */
static void expect_bad(const char *path, const char *text,
                       const char *want_line)
{
	char why[256];

	write_file(path, text);
	HT_EQ(ht_cs_verify(path, why, sizeof why), -1);
	ht_note("refused: %s", why);
	HT_CHECKF(strstr(why, want_line) != NULL, "\"%s\" lacks \"%s\"", why,
	          want_line);
}

static void cs_overlap(void)
{
	char path[400], why[256];

	snprintf(path, sizeof path, "%s", tmp_file("bad"));
	/* two enters in a row */
	ht_cs_enter(path, "a");
	ht_cs_enter(path, "b");
	ht_cs_leave(path, "b");
	ht_cs_leave(path, "a");
	HT_EQ(ht_cs_verify(path, why, sizeof why), -1);
	HT_CHECKF(strstr(why, "line 2:") != NULL && strstr(why, "overlap"),
	          "%s", why);
	ht_note("refused: %s", why);

	expect_bad(path, "enter a\nleave a\nenter a\nenter a\nleave a\n",
	           "line 4:");
	expect_bad(path, "enter a\nleave b\n", "line 2:");
	expect_bad(path, "leave a\n", "line 1:");
	expect_bad(path, "enter a\nleave a\nenter b\n", "line 3:");
	expect_bad(path, "enter a\nleave a\nenter b\nleave b", "line 4:");
	expect_bad(path, "enter a\nhello\n", "line 2:");
	expect_bad(path, "enter a\nleave a\n\n", "line 3:");
	unlink(path);
	HT_EQ(ht_cs_verify(path, why, sizeof why), -1);
	tmp_cleanup(path);
}

static pthread_mutex_t g_cs_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_cs_path[400];

static void *cs_worker(void *arg)
{
	char tag[32];
	int i;

	snprintf(tag, sizeof tag, "thread-%ld", (long)(intptr_t)arg);
	for (i = 0; i < 100; i++) {
		pthread_mutex_lock(&g_cs_mu);
		ht_cs_enter(g_cs_path, tag);
		ht_cs_leave(g_cs_path, tag);
		pthread_mutex_unlock(&g_cs_mu);
	}
	return NULL;
}

static void cs_threads(void)
{
	pthread_t t[4];
	long i;

	snprintf(g_cs_path, sizeof g_cs_path, "%s", tmp_file("threads"));
	for (i = 0; i < 4; i++)
		t[i] = ht_thread_start(cs_worker, (void *)(intptr_t)i);
	for (i = 0; i < 4; i++)
		ht_thread_join(t[i], 20000);
	HT_EQ(ht_cs_check(g_cs_path), 400);
	tmp_cleanup(g_cs_path);
}

static void cs_children(void)
{
	char path[400], lockpath[400], tag[32];
	pid_t pids[3];
	int64_t deadline;
	int i, j, status;

	snprintf(path, sizeof path, "%s", tmp_file("children"));
	snprintf(lockpath, sizeof lockpath, "%s", tmp_file("children.lock"));
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		HT_CHECK(pids[i] >= 0);
		if (pids[i] == 0) {
			int fd = open(lockpath, O_RDWR | O_CREAT, 0600);

			if (fd < 0)
				HT_FAIL("open %s: %s", lockpath,
				        strerror(errno));
			snprintf(tag, sizeof tag, "child-%d", (int)getpid());
			for (j = 0; j < 50; j++) {
				if (flock(fd, LOCK_EX) != 0)
					HT_FAIL("flock: %s", strerror(errno));
				ht_cs_enter(path, tag);
				ht_cs_leave(path, tag);
				flock(fd, LOCK_UN);
			}
			_exit(0);
		}
	}
	deadline = ht_now_ms() + 20000 * ht_scale();
	for (i = 0; i < 3; i++) {
		for (;;) {
			pid_t w = waitpid(pids[i], &status, WNOHANG);
			if (w == pids[i])
				break;
			if (ht_now_ms() > deadline) {
				for (j = 0; j < 3; j++)
					kill(pids[j], SIGKILL);
				HT_FAIL("children did not finish");
			}
			ht_sleep_ms(5);
		}
		HT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	HT_EQ(ht_cs_check(path), 150);
	unlink(lockpath);
	tmp_cleanup(path);
}

HT_MAIN(HT_CASE(ping), HT_CASE(reset), HT_CASE(blackhole),
        HT_CASE(blackhole_new_conn), HT_CASE(delay), HT_CASE(drop),
        HT_CASE(count), HT_CASE(half_close), HT_CASE(bulk),
        HT_CASE(upstream_down), HT_CASE(cs_good), HT_CASE(cs_overlap),
        HT_CASE(cs_threads), HT_CASE(cs_children))
