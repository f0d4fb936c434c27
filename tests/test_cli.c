/*
 * The `hilock` command (cli/), through the real binary against a real
 * redis-server: run (success, failure, a signal, --wait running out, a lock
 * lost under the command), inspect, list, unlock --force, the lock kinds
 * (run --kind read sharing, write excluding, fenced tokens in HILOCK_TOKEN;
 * inspect of a fair queue and an rwlock; unlock --force telling the kind
 * and waking the kind's waiters), --help and --version, bad URLs (no
 * password in any message), bad --kind values.
 */
#include "harness_topo.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HILOCK_CLI_PATH
#error "HILOCK_CLI_PATH must name the hilock binary"
#endif

#define OUT_MAX 16384

static char out[OUT_MAX];
static char tmpdir[256];

static void tmp_cleanup(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static const char *tmp_path(const char *name)
{
	static char buf[4][512];
	static int i;
	char *p = buf[i++ % 4];
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/hilock-cli.XXXXXX");
		HT_CHECK(mkdtemp(tmpdir) != NULL);
		atexit(tmp_cleanup);
	}
	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

/* Run hilock with the words given (NULL-terminated); its output (stdout
 * and stderr) in out; returns its exit status. */
static int cli(const char *first, ...)
{
	const char *argv[40];
	va_list ap;
	int n = 0, rc;
	argv[n++] = HILOCK_CLI_PATH;
	argv[n++] = first;
	va_start(ap, first);
	while (n < 39 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = ht_run(out, sizeof out, 20000, argv);
	ht_note("hilock %s... -> %d:\n%s", first, rc, out);
	return rc;
}

/* Start hilock in the background, its output to the file log. */
static pid_t cli_spawn(const char *log, const char *const *args)
{
	const char *argv[40];
	int n = 0;
	pid_t pid;
	argv[n++] = HILOCK_CLI_PATH;
	while (n < 39 && *args)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int nul = open("/dev/null", O_RDONLY);
		if (fd < 0 || nul < 0)
			_exit(120);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(121);
	}
	return pid;
}

/* Its exit status (128+N for a signal), failing after timeout_ms. */
static int cli_reap(pid_t pid, int64_t timeout_ms)
{
	int64_t end = ht_now_ms() + timeout_ms * ht_scale();
	int st;
	for (;;) {
		pid_t got = waitpid(pid, &st, WNOHANG);
		if (got == pid)
			break;
		if (ht_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			HT_FAIL("hilock (pid %d) still running after %lld ms",
			        (int)pid, (long long)timeout_ms);
		}
		ht_sleep_ms(10);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
	static char buf[OUT_MAX];
	FILE *f = fopen(path, "r");
	size_t n = 0;
	buf[0] = 0;
	if (f) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

#define HAS(hay, needle)                                                       \
	HT_CHECKF(strstr((hay), (needle)) != NULL, "no \"%s\" in:\n%s",        \
	          (needle), (hay))
#define HASNT(hay, needle)                                                     \
	HT_CHECKF(strstr((hay), (needle)) == NULL, "\"%s\" in:\n%s", (needle), \
	          (hay))

static const char *url(void)
{
	return ht_redis_default()->url;
}

/* ---- run ------------------------------------------------------------------
 */
static void run_ok(void)
{
	ht_redis *r = ht_redis_default();
	char script[1024];
	/* the command sees the lock held (EXISTS 1, one holder) */
	snprintf(script, sizeof script,
	         "redis-cli -p %d exists cli:ok > %s && "
	         "redis-cli -p %d hlen cli:ok >> %s",
	         r->port, tmp_path("seen"), r->port, tmp_path("seen"));
	HT_EQ(cli("--url", url(), "run", "cli:ok", "--", "sh", "-c", script,
	          NULL),
	      0);
	HT_STREQ(slurp(tmp_path("seen")), "1\n1\n");
	HT_EQ(ht_exists(r, HT_S("cli:ok")), 0); /* free after */
	/* without the "--", and the command's stdout passed through */
	HT_EQ(cli("--url", url(), "run", "cli:ok", "echo", "hello", NULL), 0);
	HAS(out, "hello");
}

static void run_fails(void)
{
	ht_redis *r = ht_redis_default();
	HT_EQ(cli("--url", url(), "run", "cli:fails", "--", "sh", "-c",
	          "exit 3", NULL),
	      3);
	HT_EQ(ht_exists(r, HT_S("cli:fails")), 0);
	HT_EQ(cli("--url", url(), "run", "cli:fails", "--",
	          "/nonexistent/command", NULL),
	      127);
	HAS(out, "/nonexistent/command");
	HT_EQ(ht_exists(r, HT_S("cli:fails")), 0);
}

static void run_killed(void)
{
	ht_redis *r = ht_redis_default();
	HT_EQ(cli("--url", url(), "run", "cli:killed", "--", "sh", "-c",
	          "kill -9 $$", NULL),
	      128 + SIGKILL);
	HT_EQ(ht_exists(r, HT_S("cli:killed")), 0);
}

/* SIGTERM to hilock is passed on to the command; the lock is released. */
static void run_forwards_signal(void)
{
	ht_redis *r = ht_redis_default();
	const char *args[] = {
	        "--url", url(), "run", "cli:fwd",
	        "--",    "sh",  "-c",  "trap 'exit 42' TERM; sleep 20 & wait",
	        NULL};
	pid_t pid = cli_spawn(tmp_path("fwd.log"), args);
	int64_t end = ht_now_ms() + 5000 * ht_scale();
	while (!ht_exists(r, HT_S("cli:fwd")) && ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_EQ(ht_exists(r, HT_S("cli:fwd")), 1);
	ht_sleep_ms(200); /* the shell set its trap */
	kill(pid, SIGTERM);
	HT_EQ(cli_reap(pid, 5000), 42);
	HT_EQ(ht_exists(r, HT_S("cli:fwd")), 0);
}

static void run_wait_timeout(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "cli:busy");
	int64_t t0;
	HT_OK(hl_lock_acquire(l, -1, NULL));
	t0 = ht_now_ms();
	HT_EQ(cli("--url", url(), "run", "--wait", "0.3", "cli:busy", "--",
	          "sh", "-c", "echo ran", NULL),
	      75);
	HT_RANGE(ht_now_ms() - t0, 250, 3000 * ht_scale());
	HASNT(out, "ran\n");
	HAS(out, "not acquired");
	HT_EQ(cli("--url", url(), "run", "--wait", "0", "cli:busy", "--",
	          "true", NULL),
	      75);
	HT_OK(hl_lock_release(NULL, l));
	hl_lock_free(l);
	hl_client_free(c);
}

/* The lock deleted under the command: SIGTERM to it, exit 74, promptly. */
static void run_lost(void)
{
	ht_redis *r = ht_redis_default();
	char script[512];
	const char *args[] = {"--url", url(),      "--watchdog-timeout",
	                      "1",     "run",      "--grace",
	                      "3",     "cli:lost", "--",
	                      "sh",    "-c",       script,
	                      NULL};
	pid_t pid;
	int64_t end = ht_now_ms() + 5000 * ht_scale(), t0;
	snprintf(script, sizeof script,
	         "trap 'echo term > %s; kill $!; exit 9' TERM; "
	         "sleep 30 & wait",
	         tmp_path("term"));
	pid = cli_spawn(tmp_path("lost.log"), args);
	while (!ht_exists(r, HT_S("cli:lost")) && ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_EQ(ht_exists(r, HT_S("cli:lost")), 1);
	ht_sleep_ms(200);
	t0 = ht_now_ms();
	ht_del(r, HT_S("cli:lost"));
	HT_EQ(cli_reap(pid, 5000), 74);
	ht_note("exited %lld ms after the DEL", (long long)(ht_now_ms() - t0));
	/* a watchdog of 1 s notices within about a renewal period */
	HT_RANGE(ht_now_ms() - t0, 0, 1000 + 1500 * ht_scale());
	HT_STREQ(slurp(tmp_path("term")), "term\n");
	HAS(slurp(tmp_path("lost.log")), "lost the lock \"cli:lost\"");
	HT_EQ(ht_exists(r, HT_S("cli:lost")), 0);
}

/* A command that ignores SIGTERM gets SIGKILL after --grace. */
static void run_lost_grace(void)
{
	ht_redis *r = ht_redis_default();
	char script[256];
	const char *args[] = {"--url", url(),       "--watchdog-timeout",
	                      "1",     "run",       "--grace",
	                      "0.3",   "cli:grace", "--",
	                      "sh",    "-c",        script,
	                      NULL};
	pid_t pid;
	snprintf(script, sizeof script,
	         "trap '' TERM; redis-cli -p %d del cli:grace > /dev/null; "
	         "sleep 20",
	         r->port);
	pid = cli_spawn(tmp_path("grace.log"), args);
	HT_EQ(cli_reap(pid, 6000), 74);
	HAS(slurp(tmp_path("grace.log")), "SIGKILL");
}

/* ---- inspect, list, unlock ------------------------------------------------
 */
static void inspect(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "cli:inspect");
	const char *args[] = {"--url",       url(), "run",  "--wait", "10",
	                      "cli:inspect", "--",  "true", NULL};
	char line[256];
	pid_t waiter;
	int64_t end;

	HT_EQ(cli("--url", url(), "inspect", "cli:inspect", NULL), 0);
	HAS(out, "kind: free");
	HAS(out, "waiters: 0");

	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_OK(hl_lock_acquire(l, -1, NULL)); /* reentrant: count 2 */
	waiter = cli_spawn(tmp_path("waiter.log"), args);
	end = ht_now_ms() + 5000 * ht_scale();
	while (ht_numsub(r, HT_S("redisson_lock__channel:{cli:inspect}")) < 1 &&
	       ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_EQ(cli("--url", url(), "inspect", "cli:inspect", NULL), 0);
	HAS(out, "name: cli:inspect\n");
	HAS(out, "kind: lock\n");
	HAS(out, "holders: 1\n");
	snprintf(line, sizeof line, "holder: %s count=2\n", ht_owner(l));
	HAS(out, line);
	HAS(out, "waiters: 1\n");
	HAS(out, "ttl_ms: ");
	/* the waiter (another process) has the first place in the line,
	 * renewed every 1.5 s, lapsing 3 s after */
	HAS(out, "in line: ");
	HAS(out, " ticket=2 deadline_in_ms=");

	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(cli_reap(waiter, 5000), 0); /* the waiter got it and ran */

	/* a key that is not a lock: a string reads as a grid object (an
	 * integer: an atomic long), another type is shown as such */
	ht_set_int(ht_raw_of(r), "cli:str", 5);
	HT_EQ(cli("--url", url(), "inspect", "cli:str", NULL), 0);
	HAS(out, "kind: atomic_long\nvalue: 5\n");
	freeReplyObject(ht_raw(ht_raw_of(r), "RPUSH cli:list 1"));
	HT_EQ(cli("--url", url(), "inspect", "cli:list", NULL), 0);
	HAS(out, "kind: list\nsize: 1\nttl_ms: -1\nitem: 1\nshown: 1 of 1\n");
	/* --kind of a lock on a string: not a lock */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "fair", "cli:str", NULL),
	      0);
	HAS(out, "kind: string (not a lock)");
	hl_lock_free(l);
	hl_client_free(c);
}

static void list(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *a = ht_lock(c, "cli:list:a"), *b = ht_lock(c, "cli:list:b"),
	        *o = ht_lock(c, "other:c");
	HT_OK(hl_lock_acquire(a, -1, NULL));
	HT_OK(hl_lock_acquire(b, 60000, NULL));
	HT_OK(hl_lock_acquire(o, -1, NULL));
	ht_set_int(ht_raw_of(r), "cli:list:str", 1);

	HT_EQ(cli("--url", url(), "list", "cli:list:*", NULL), 0);
	HAS(out, "cli:list:a\t1\t");
	HAS(out, "cli:list:b\t1\t");
	HASNT(out, "other:c");
	HASNT(out, "cli:list:str");
	HT_EQ(cli("--url", url(), "list", NULL), 0);
	HAS(out, "other:c\t1\t");
	HAS(out, "cli:list:a\t1\t");
	HT_EQ(cli("--url", url(), "list", "nothing:*", NULL), 0);
	HT_STREQ(out, "");

	HT_OK(hl_lock_release(NULL, a));
	HT_OK(hl_lock_release(NULL, b));
	HT_OK(hl_lock_release(NULL, o));
	hl_lock_free(a);
	hl_lock_free(b);
	hl_lock_free(o);
	hl_client_free(c);
}

static void unlock_force(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = ht_lock(c, "cli:force");
	HT_OK(hl_lock_acquire(l, -1, NULL));
	HT_EQ(cli("--url", url(), "unlock", "cli:force", NULL), 64);
	HT_EQ(ht_exists(r, HT_S("cli:force")), 1); /* no --force: untouched */
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:force", NULL), 0);
	HAS(out, "it was held");
	HT_EQ(ht_exists(r, HT_S("cli:force")), 0);
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:force", NULL), 1);
	HAS(out, "was not locked");
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	hl_lock_free(l);
	hl_client_free(c);
}

/* ---- lock kinds -----------------------------------------------------------
 */
static hl_lock *kind_lock(hl_client *c, int kind, const char *name)
{
	hl_lock *l = NULL;
	HT_OK(hl_lock_new_kind(&l, c, kind, name, strlen(name)));
	return l;
}

static long long llen(ht_redis *r, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "LLEN %s", key);
	long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
	freeReplyObject(rep);
	return n;
}

/* Element i of the list key (static buffer). */
static const char *lindex(ht_redis *r, const char *key, int i)
{
	static char buf[128];
	redisReply *rep = ht_raw(ht_raw_of(r), "LINDEX %s %d", key, i);
	HT_EQ(rep->type, REDIS_REPLY_STRING);
	snprintf(buf, sizeof buf, "%s", rep->str);
	freeReplyObject(rep);
	return buf;
}

/* Wait (bounded) until path exists. */
static void wait_file(const char *path, int64_t timeout_ms)
{
	int64_t end = ht_now_ms() + timeout_ms * ht_scale();
	while (access(path, F_OK) != 0 && ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_CHECKF(access(path, F_OK) == 0, "%s never appeared", path);
}

/* Wait (bounded) until the list key has n elements. */
static void wait_llen(ht_redis *r, const char *key, long long n)
{
	int64_t end = ht_now_ms() + 5000 * ht_scale();
	while (llen(r, key) != n && ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_EQ(llen(r, key), n);
}

/* Wait (bounded) until channel has n subscribers. */
static void wait_numsub(ht_redis *r, const char *channel, long long n)
{
	int64_t end = ht_now_ms() + 5000 * ht_scale();
	while (ht_numsub(r, HT_S(channel)) != n && ht_now_ms() < end)
		ht_sleep_ms(10);
	HT_EQ(ht_numsub(r, HT_S(channel)), n);
}

/* A shell command that marks it runs (touches in), then waits for go. */
static const char *hold_until(char *buf, size_t len, const char *in,
                              const char *go)
{
	snprintf(buf, len,
	         "touch %s; i=0; while [ ! -e %s ] && [ $i -lt 3000 ]; do "
	         "sleep 0.01; i=$((i+1)); done; [ -e %s ]",
	         in, go, go);
	return buf;
}

/* The value after "key=" in the line of out starting with prefix. */
static long long field_of(const char *prefix, const char *key)
{
	const char *p = strstr(out, prefix), *v;
	HT_CHECKF(p != NULL, "no \"%s\" in:\n%s", prefix, out);
	v = strstr(p, key);
	HT_CHECKF(v != NULL && v < strchr(p, '\n'), "no %s in the line %s", key,
	          prefix);
	return strtoll(v + strlen(key), NULL, 10);
}

/* run --kind read: two runs hold it together; write excludes them, and
 * readers exclude a writer; inspect shows the mode and the readers. */
static void run_kind_rw(void)
{
	ht_redis *r = ht_redis_default();
	char sa[2048], sb[2048], sw[2048], a_in[512], b_in[512], go[512];
	const char *ra[] = {"--url", url(), "run", "--kind", "read", "cli:rw",
	                    "--",    "sh",  "-c",  sa,       NULL};
	const char *rb[] = {"--url", url(), "run", "--kind", "read", "cli:rw",
	                    "--",    "sh",  "-c",  sb,       NULL};
	pid_t a, b, w;

	/* copies: tmp_path's buffers are reused */
	snprintf(a_in, sizeof a_in, "%s", tmp_path("a.in"));
	snprintf(b_in, sizeof b_in, "%s", tmp_path("b.in"));
	snprintf(go, sizeof go, "%s", tmp_path("go"));
	hold_until(sa, sizeof sa, a_in, go);
	hold_until(sb, sizeof sb, b_in, go);
	a = cli_spawn(tmp_path("a.log"), ra);
	b = cli_spawn(tmp_path("b.log"), rb);
	/* both commands run at once: the lock is shared */
	wait_file(a_in, 10000);
	wait_file(b_in, 10000);
	HT_EQ(ht_hlen(r, HT_S("cli:rw")), 3); /* mode and two readers */
	HT_EQ(cli("--url", url(), "inspect", "cli:rw", NULL), 0);
	HAS(out, "kind: rwlock (mode read)\n");
	HAS(out, "holders: 2\n");
	HAS(out, "readers: 2\n");
	HASNT(out, " write\n");
	HAS(out, "waiters: 0\n");
	/* a writer cannot have it meanwhile */
	HT_EQ(cli("--url", url(), "run", "--kind", "write", "--wait", "0.3",
	          "cli:rw", "--", "true", NULL),
	      75);
	HT_EQ(ht_hlen(r, HT_S("cli:rw")), 3);
	/* nor a plain reentrant lock of the same name */
	HT_EQ(cli("--url", url(), "run", "--wait", "0", "cli:rw", "--", "true",
	          NULL),
	      75);
	if (close(open(go, O_WRONLY | O_CREAT, 0600)) != 0)
		HT_FAIL("cannot create %s", go);
	HT_EQ(cli_reap(a, 10000), 0);
	HT_EQ(cli_reap(b, 10000), 0);
	HT_EQ(ht_exists(r, HT_S("cli:rw")), 0);

	/* a writer excludes readers and other writers */
	unlink(a_in);
	unlink(go);
	{
		const char *rw[] = {
		        "--url", url(),
		        "run",   "--kind",
		        "write", "cli:rw",
		        "--",    "sh",
		        "-c",    hold_until(sw, sizeof sw, a_in, go),
		        NULL};
		w = cli_spawn(tmp_path("w.log"), rw);
	}
	wait_file(a_in, 10000);
	HT_EQ(cli("--url", url(), "run", "--kind", "read", "--wait", "0.3",
	          "cli:rw", "--", "true", NULL),
	      75);
	HT_EQ(cli("--url", url(), "run", "--kind", "write", "--wait", "0",
	          "cli:rw", "--", "true", NULL),
	      75);
	HT_EQ(cli("--url", url(), "inspect", "cli:rw", NULL), 0);
	HAS(out, "kind: rwlock (mode write)\n");
	HAS(out, "holders: 1\n");
	HAS(out, "readers: 0\n");
	HAS(out, " count=1 write\n");
	if (close(open(go, O_WRONLY | O_CREAT, 0600)) != 0)
		HT_FAIL("cannot create %s", go);
	HT_EQ(cli_reap(w, 10000), 0);
	HT_EQ(ht_exists(r, HT_S("cli:rw")), 0);
}

/* run --kind fenced: CMD gets the token in HILOCK_TOKEN, larger each time,
 * the counter's value; other kinds leave the environment alone. */
static void run_kind_fenced(void)
{
	ht_redis *r = ht_redis_default();
	const char *script = "echo \"$HILOCK_TOKEN\"; "
	                     "env | grep -c '^HILOCK_TOKEN='";
	long long prev = 0, tok;
	int i;
	/* one HILOCK_TOKEN, ours, even when one came from outside */
	setenv("HILOCK_TOKEN", "999999", 1);
	for (i = 0; i < 3; i++) {
		char *end;
		HT_EQ(cli("--url", url(), "run", "--kind", "fenced",
		          "cli:fenced", "--", "sh", "-c", script, NULL),
		      0);
		tok = strtoll(out, &end, 10);
		HT_CHECKF(end != out && *end == '\n', "no token in:\n%s", out);
		HT_STREQ(end, "\n1\n");
		HT_CHECKF(tok > prev, "token %lld after %lld", tok, prev);
		HT_EQ(tok, ht_get_int(ht_raw_of(r),
		                      "redisson_lock_token:{cli:fenced}"));
		prev = tok;
	}
	HT_EQ(ht_exists(r, HT_S("cli:fenced")), 0); /* released */
	/* another kind passes the environment through as it is */
	HT_EQ(cli("--url", url(), "run", "cli:fenced", "--", "sh", "-c",
	          "echo \"$HILOCK_TOKEN\"", NULL),
	      0);
	HT_STREQ(out, "999999\n");
	unsetenv("HILOCK_TOKEN");
	HT_EQ(cli("--url", url(), "run", "--kind", "write", "cli:fenced2", "--",
	          "sh", "-c", "echo \"${HILOCK_TOKEN-unset}\"", NULL),
	      0);
	HT_STREQ(out, "unset\n");

	/* inspect shows the counter, and the kind when asked for */
	HT_EQ(cli("--url", url(), "inspect", "cli:fenced", NULL), 0);
	HAS(out, "kind: free\n");
	{
		char line[64];
		snprintf(line, sizeof line, "token: %lld\n", prev);
		HAS(out, line);
	}
	{
		hl_client *c = ht_client(r, 0);
		hl_lock *l = kind_lock(c, HL_LOCK_FENCED, "cli:fenced");
		int64_t t = 0;
		char line[64];
		HT_OK(hl_lock_acquire(l, -1, NULL));
		HT_OK(hl_lock_token(&t, l));
		HT_EQ(t, prev + 1);
		HT_EQ(cli("--url", url(), "inspect", "--kind", "fenced",
		          "cli:fenced", NULL),
		      0);
		HAS(out, "kind: fenced lock\n");
		HAS(out, "holders: 1\n");
		snprintf(line, sizeof line, "token: %lld\n", (long long)t);
		HAS(out, line);
		/* without --kind it is a lock with a token: the layouts of
		 * RLock and the fenced lock are the same */
		HT_EQ(cli("--url", url(), "inspect", "cli:fenced", NULL), 0);
		HAS(out, "kind: lock\n");
		HAS(out, line);
		HT_OK(hl_lock_release(NULL, l));
		hl_lock_free(l);
		hl_client_free(c);
	}
}

/* inspect of a fair lock: its queue in order with each waiter's deadline,
 * waiters = the queue's length; the waiters then take it in that order. */
static void inspect_fair(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = kind_lock(c, HL_LOCK_FAIR, "cli:fair");
	const char *queue = "redisson_lock_queue:{cli:fair}";
	char s1[256], s2[256], q0[128], q1[128], line[160];
	const char *w1[] = {"--url",  url(), "run",      "--kind", "fair",
	                    "--wait", "20",  "cli:fair", "--",     "sh",
	                    "-c",     s1,    NULL};
	const char *w2[] = {"--url",  url(), "run",      "--kind", "fair",
	                    "--wait", "60",  "cli:fair", "--",     "sh",
	                    "-c",     s2,    NULL};
	const char *p0, *p1;
	long long d0, d1;
	pid_t a, b;

	snprintf(s1, sizeof s1, "echo first >> %s", tmp_path("order"));
	snprintf(s2, sizeof s2, "echo second >> %s", tmp_path("order"));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	a = cli_spawn(tmp_path("fair1.log"), w1);
	wait_llen(r, queue, 1);
	b = cli_spawn(tmp_path("fair2.log"), w2);
	wait_llen(r, queue, 2);
	snprintf(q0, sizeof q0, "%s", lindex(r, queue, 0));
	snprintf(q1, sizeof q1, "%s", lindex(r, queue, 1));

	HT_EQ(cli("--url", url(), "inspect", "cli:fair", NULL), 0);
	HAS(out, "kind: fair lock\n");
	HAS(out, "holders: 1\n");
	snprintf(line, sizeof line, "holder: %s count=1\n", ht_owner(l));
	HAS(out, line);
	HAS(out, "waiters: 2\n");
	/* in the queue's order */
	snprintf(line, sizeof line, "queued: %s deadline_in_ms=", q0);
	p0 = strstr(out, line);
	HT_CHECKF(p0 != NULL, "no \"%s\" in:\n%s", line, out);
	d0 = field_of(line, "deadline_in_ms=");
	snprintf(line, sizeof line, "queued: %s deadline_in_ms=", q1);
	p1 = strstr(out, line);
	HT_CHECKF(p1 != NULL, "no \"%s\" in:\n%s", line, out);
	d1 = field_of(line, "deadline_in_ms=");
	HT_CHECK(p0 < p1);
	/* the first waits 20 s past the holder's lease (30 s at most);
	 * the second 60 s past the first's deadline (PROTOCOL 3) */
	ht_note("deadlines in %lld and %lld ms", d0, d1);
	HT_RANGE(d0, 20000 - 5000 * ht_scale(), 50000);
	HT_RANGE(d1 - d0, 59998, 60002);
	/* list says so too */
	HT_EQ(cli("--url", url(), "list", "cli:fair", NULL), 0);
	HAS(out, "cli:fair\t1\t");
	HAS(out, "\tfairlock\n");
	/* --kind fair counts the queue even when asked */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "fair", "cli:fair",
	          NULL),
	      0);
	HAS(out, "kind: fair lock\n");
	HAS(out, "waiters: 2\n");

	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(cli_reap(a, 10000), 0);
	HT_EQ(cli_reap(b, 10000), 0);
	HT_STREQ(slurp(tmp_path("order")), "first\nsecond\n");
	HT_EQ(cli("--url", url(), "inspect", "cli:fair", NULL), 0);
	HAS(out, "kind: free\n");
	HASNT(out, "queued:");
	hl_lock_free(l);
	hl_client_free(c);
}

/* unlock --force without --kind: a fair lock's head is woken on its own
 * channel, promptly (its holder's lease had 30 s to go). */
static void unlock_force_fair(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = kind_lock(c, HL_LOCK_FAIR, "cli:ffair");
	const char *queue = "redisson_lock_queue:{cli:ffair}";
	const char *w[] = {"--url",     url(), "run",  "--kind", "fair",
	                   "cli:ffair", "--",  "true", NULL};
	char chan[256], got[256], *msg;
	redisContext *sub;
	pid_t a;
	int64_t t0;

	HT_OK(hl_lock_acquire(l, -1, NULL));
	a = cli_spawn(tmp_path("ffair.log"), w);
	wait_llen(r, queue, 1);
	snprintf(chan, sizeof chan, "redisson_lock__channel:{cli:ffair}:%s",
	         lindex(r, queue, 0));
	sub = ht_sub_new(r, HT_S(chan));
	t0 = ht_now_ms();
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:ffair", NULL), 0);
	HAS(out, "it was held: a fair lock");
	msg = ht_sub_next(sub, got, sizeof got);
	HT_STREQ(got, chan);
	HT_STREQ(msg, "0");
	free(msg);
	HT_EQ(cli_reap(a, 5000), 0);
	HT_RANGE(ht_now_ms() - t0, 0, 5000 * ht_scale());
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);
	redisFree(sub);
	hl_lock_free(l);
	hl_client_free(c);
}

/* unlock --force without --kind of a read-held rwlock: deleted as the read
 * half, "0" published on redisson_rwlock:{NAME}, the waiting writer runs. */
static void unlock_force_rwlock(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_lock *l = kind_lock(c, HL_LOCK_READ, "cli:frw");
	const char *chan = "redisson_rwlock:{cli:frw}";
	char script[256], got[256], *msg;
	const char *w[] = {"--url", url(), "run", "--kind", "write", "cli:frw",
	                   "--",    "sh",  "-c",  script,   NULL};
	redisContext *sub;
	pid_t a;
	int64_t t0;

	snprintf(script, sizeof script,
	         "redis-cli -p %d hget cli:frw mode > %s", r->port,
	         tmp_path("frw.mode"));
	HT_OK(hl_lock_acquire(l, -1, NULL));
	a = cli_spawn(tmp_path("frw.log"), w);
	wait_numsub(r, chan, 1); /* the writer waits */
	HT_EQ(cli("--url", url(), "inspect", "cli:frw", NULL), 0);
	HAS(out, "kind: rwlock (mode read)\n");
	HAS(out, "readers: 1\n");
	HAS(out, "waiters: 1\n");
	/* the write half leaves a read-locked rwlock alone */
	HT_EQ(cli("--url", url(), "unlock", "--force", "--kind", "write",
	          "cli:frw", NULL),
	      1);
	HAS(out, "was not locked in write mode");
	HT_EQ(ht_exists(r, HT_S("cli:frw")), 1);

	sub = ht_sub_new(r, HT_S(chan));
	t0 = ht_now_ms();
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:frw", NULL), 0);
	HAS(out, "it was held: a read lock");
	msg = ht_sub_next(sub, got, sizeof got);
	HT_STREQ(got, chan);
	HT_STREQ(msg, "0"); /* the read half's message */
	free(msg);
	HT_EQ(cli_reap(a, 5000), 0);
	HT_RANGE(ht_now_ms() - t0, 0, 5000 * ht_scale());
	HT_STREQ(slurp(tmp_path("frw.mode")), "write\n"); /* it had it */
	HT_EQ(ht_exists(r, HT_S("cli:frw")), 0);
	HT_RC(hl_lock_release(NULL, l), HL_ELOST);

	/* a write-held one is deleted as the write half ("1") */
	{
		hl_lock *wl = kind_lock(c, HL_LOCK_WRITE, "cli:frw");
		HT_OK(hl_lock_acquire(wl, -1, NULL));
		HT_EQ(cli("--url", url(), "unlock", "--force", "cli:frw", NULL),
		      0);
		HAS(out, "it was held: a write lock");
		msg = ht_sub_next(sub, got, sizeof got);
		HT_STREQ(msg, "1");
		free(msg);
		HT_RC(hl_lock_release(NULL, wl), HL_ELOST);
		hl_lock_free(wl);
	}
	/* a key of another type is left alone */
	ht_set_int(ht_raw_of(r), "cli:frw:str", 3);
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:frw:str", NULL), 1);
	HAS(out, "not a lock: left alone");
	HT_EQ(ht_get_int(ht_raw_of(r), "cli:frw:str"), 3);
	redisFree(sub);
	hl_lock_free(l);
	hl_client_free(c);
}

/* A bad --kind: a clear message, the usage status; --kind only where it
 * means something. */
/* ---- inspect: the grid's kinds ---------------------------------------------
 */
/* A command on r (hiredis format) that must not fail. */
#define RAW_OK(r, ...)                                                         \
	do {                                                                   \
		redisReply *rep_ = ht_raw(ht_raw_of(r), __VA_ARGS__);          \
		HT_CHECKF(rep_->type != REDIS_REPLY_ERROR, "%s", rep_->str);   \
		freeReplyObject(rep_);                                         \
	} while (0)

static hl_object *grid_object(hl_client *c, int kind, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_object_new(&o, c, kind, name, strlen(name)));
	return o;
}

/* A bucket written by the library: its text, size and TTL; bytes that are
 * not text in hex; a long value cut; --kind bucket on a number. */
static void inspect_bucket(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *b = grid_object(c, HL_KIND_BUCKET, "cli:bucket");
	char big[3000];

	HT_OK(hl_bucket_set(b, "hello grid", 10, 60000));
	HT_EQ(cli("--url", url(), "inspect", "cli:bucket", NULL), 0);
	HAS(out, "name: cli:bucket\nkind: bucket\nsize: 10\n"
	         "value: hello grid\nttl_ms: ");
	HT_RANGE(field_of("ttl_ms: ", "ttl_ms: "), 50000, 60000);
	/* NUL and control bytes: hex */
	HT_OK(hl_bucket_set(b, "a\0b\n\xff", 5, -1));
	HT_EQ(cli("--url", url(), "inspect", "cli:bucket", NULL), 0);
	HAS(out, "kind: bucket\nsize: 5\nvalue_hex: 6100620aff\n"
	         "ttl_ms: -1\n");
	/* UTF-8 text stays text */
	HT_OK(hl_bucket_set(b, "h\xc3\xa9", 3, -1));
	HT_EQ(cli("--url", url(), "inspect", "cli:bucket", NULL), 0);
	HAS(out, "value: h\xc3\xa9\n");
	/* a long value: its first 1024 bytes */
	memset(big, 'x', sizeof big);
	HT_OK(hl_bucket_set(b, big, sizeof big, -1));
	HT_EQ(cli("--url", url(), "inspect", "cli:bucket", NULL), 0);
	HAS(out, "size: 3000\n");
	HAS(out, "value_shown: the first 1024 of 3000 bytes\n");
	/* a number is an atomic long unless --kind says bucket */
	HT_OK(hl_bucket_set(b, "12", 2, -1));
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bucket", "cli:bucket",
	          NULL),
	      0);
	HAS(out, "kind: bucket\nsize: 2\nvalue: 12\n");
	/* --kind bucket of nothing; of a hash: not a bucket */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bucket", "cli:none",
	          NULL),
	      0);
	HAS(out, "kind: bucket\nsize: 0\nttl_ms: -2\n");
	RAW_OK(r, "HSET cli:bhash f v");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bucket", "cli:bhash",
	          NULL),
	      0);
	HAS(out, "kind: hash (not a bucket)\n");
	HAS(out, "warning: \"cli:bhash\" is a hash, not a bucket");
	/* inspect only reads */
	HT_EQ(ht_exists(r, HT_S("cli:none")), 0);
	hl_object_free(b);
	hl_client_free(c);
}

/* Atomic long and double written by the library, a double in Java's form,
 * and a string that is no number under --kind atomic_long. */
static void inspect_atomic(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *l = grid_object(c, HL_KIND_ATOMIC_LONG, "cli:along");
	hl_object *d = grid_object(c, HL_KIND_ATOMIC_DOUBLE, "cli:adouble");
	int64_t got = 0;

	HT_OK(hl_atomic_long_add_and_get(&got, l, -42));
	HT_EQ(got, -42);
	HT_EQ(cli("--url", url(), "inspect", "cli:along", NULL), 0);
	HAS(out, "name: cli:along\nkind: atomic_long\nvalue: -42\n"
	         "ttl_ms: -1\n");
	HT_OK(hl_atomic_double_set(d, 2.5));
	HT_EQ(cli("--url", url(), "inspect", "cli:adouble", NULL), 0);
	HAS(out, "kind: atomic_double\nvalue: 2.5\n");
	RAW_OK(r, "SET cli:adouble 1.0E10");
	HT_EQ(cli("--url", url(), "inspect", "cli:adouble", NULL), 0);
	HAS(out, "kind: atomic_double\nvalue: 1.0E10\n");
	/* absent: reads as 0 */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "atomic-long",
	          "cli:anone", NULL),
	      0);
	HAS(out, "kind: atomic_long\nvalue: 0\nttl_ms: -2\n");
	/* not a number: said, and shown as it is */
	RAW_OK(r, "SET cli:along abc");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "atomic_long",
	          "cli:along", NULL),
	      0);
	HAS(out, "warning: \"cli:along\" does not hold a number");
	HAS(out, "value: abc\n");
	hl_object_free(l);
	hl_object_free(d);
	hl_client_free(c);
}

/* A bitset as Redisson writes it (SETBIT): cardinality, length (the
 * highest set bit + 1, also far out), size in bits. */
static void inspect_bit_set(void)
{
	ht_redis *r = ht_redis_default();
	RAW_OK(r, "SETBIT cli:bits 1 1");
	RAW_OK(r, "SETBIT cli:bits 3 1");
	RAW_OK(r, "SETBIT cli:bits 100 1");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bit_set", "cli:bits",
	          NULL),
	      0);
	HAS(out, "name: cli:bits\nkind: bit_set\ncardinality: 3\n"
	         "length: 101\nsize: 104\nttl_ms: -1\n");
	/* without --kind: a string of bytes, shown as a bucket */
	HT_EQ(cli("--url", url(), "inspect", "cli:bits", NULL), 0);
	HAS(out, "kind: bucket\nsize: 13\nvalue_hex: 50");
	/* the highest bit far out, zero bytes after it */
	RAW_OK(r, "SETBIT cli:bits 1000001 1");
	RAW_OK(r, "SETBIT cli:bits 2000007 1");
	RAW_OK(r, "SETBIT cli:bits 2000007 0");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bit-set", "cli:bits",
	          NULL),
	      0);
	HAS(out, "cardinality: 4\nlength: 1000002\nsize: 2000008\n");
	/* bit 0 alone; none */
	RAW_OK(r, "SETBIT cli:bit0 0 1");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bit_set", "cli:bit0",
	          NULL),
	      0);
	HAS(out, "cardinality: 1\nlength: 1\nsize: 8\n");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bit_set", "cli:bitn",
	          NULL),
	      0);
	HAS(out, "cardinality: 0\nlength: 0\nsize: 0\nttl_ms: -2\n");
}

/* A Bloom filter as Redisson keeps it: its config hash {NAME}:config and
 * its bitmap; the estimated count is Redisson's formula. */
static void inspect_bloom_filter(void)
{
	ht_redis *r = ht_redis_default();
	int i;
	RAW_OK(r, "HSET {cli:bloom}:config size 1000 hashIterations 3 "
	          "expectedInsertions 100 falseProbability 0.03");
	/* initialized, nothing added: no bitmap yet */
	HT_EQ(cli("--url", url(), "inspect", "cli:bloom", NULL), 0);
	HAS(out, "name: cli:bloom\nkind: bloom_filter\n"
	         "config: {cli:bloom}:config\ninitialized: 1\nsize: 1000\n"
	         "hash_iterations: 3\nexpected_insertions: 100\n"
	         "false_probability: 0.03\nbits_set: 0\ncount: 0\n"
	         "ttl_ms: -2\n");
	/* 60 bits set: round(-1000/3 ln(1 - 60/1000)) = 21 */
	for (i = 0; i < 60; i++) {
		RAW_OK(r, "SETBIT cli:bloom %d 1", i * 13);
	}
	HT_EQ(cli("--url", url(), "inspect", "cli:bloom", NULL), 0);
	HAS(out, "kind: bloom_filter\n");
	HAS(out, "bits_set: 60\ncount: 21\nttl_ms: -1\n");
	/* list: its config is no lock */
	HT_EQ(cli("--url", url(), "list", "*cli:bloom*", NULL), 0);
	HT_STREQ(out, "{cli:bloom}:config\t0\t-1\tbloom_filter_config\n");
	/* --kind of a name without a config: not initialized */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bloom_filter",
	          "cli:nobloom", NULL),
	      0);
	HAS(out, "kind: bloom_filter\nconfig: {cli:nobloom}:config\n"
	         "initialized: 0\nbits_set: 0\n");
}

/* A rate limiter as Redisson keeps it (GRID-PROTOCOL 2.7): OVERALL with
 * its value and permits entries, PER_CLIENT with a client's keys; list
 * names it; unlock --force leaves it alone. */
static void inspect_rate_limiter(void)
{
	ht_redis *r = ht_redis_default();
	char member[21], cmd[160];
	long long now = (long long)time(NULL) * 1000;
	const char *uuid = "5b9b3e3a-8d55-4a7e-9c1e-2f5ab0a1c0de";

	RAW_OK(r, "HSET cli:rl rate 10 interval 60000 type 0 keepAliveTime 0");
	RAW_OK(r, "SET {cli:rl}:value 6");
	/* two grants: 3 permits now, 1 long ago (out of the window) */
	memset(member, 0x41, sizeof member);
	member[0] = 16;
	member[17] = 3;
	member[18] = member[19] = member[20] = 0;
	RAW_OK(r, "ZADD {cli:rl}:permits %lld %b", now, member, sizeof member);
	member[1] = 0x42;
	member[17] = 1;
	RAW_OK(r, "ZADD {cli:rl}:permits %lld %b", now - 3600000, member,
	       sizeof member);
	HT_EQ(cli("--url", url(), "inspect", "cli:rl", NULL), 0);
	HAS(out, "name: cli:rl\nkind: rate_limiter\ninitialized: 1\n"
	         "rate: 10\ninterval_ms: 60000\ntype: overall\n"
	         "keep_alive_ms: 0\nttl_ms: -1\npermits_left: 6\n"
	         "entries: 2\nin_window: 3\n");
	/* list: a rate limiter, not a lock with four holders */
	HT_EQ(cli("--url", url(), "list", "cli:rl", NULL), 0);
	HT_STREQ(out, "cli:rl\t0\t-1\trate_limiter\n");
	/* unlock --force: not a lock, left alone */
	HT_EQ(cli("--url", url(), "unlock", "--force", "cli:rl", NULL), 1);
	HAS(out, "is a rate limiter, not a lock: left alone");
	HT_EQ(ht_hlen(r, HT_S("cli:rl")), 4);

	/* PER_CLIENT: a client's own keys */
	RAW_OK(r, "HSET cli:rl type 1");
	RAW_OK(r, "SET {cli:rl}:value:%s 9", uuid);
	member[17] = 1;
	RAW_OK(r, "ZADD {cli:rl}:permits:%s %lld %b", uuid, now, member,
	       sizeof member);
	HT_EQ(cli("--url", url(), "inspect", "cli:rl", NULL), 0);
	HAS(out, "type: per_client\n");
	snprintf(cmd, sizeof cmd,
	         "client: %s permits_left=9 entries=1 in_window=1\n", uuid);
	HAS(out, cmd);
	HASNT(out, "permits_left: ");
	/* not set up: --kind says so */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "rate_limiter",
	          "cli:norl", NULL),
	      0);
	HAS(out, "kind: rate_limiter\ninitialized: 0\nttl_ms: -2\n");
}

/* Collections (part 2 of the grid): told from the Redis type, a hash
 * that is not a lock's a map; one page shown, never the whole; binary
 * elements in hex; a sorted set's comparator and lock; a lock's hash is
 * still a lock. */
static void inspect_collections(void)
{
	ht_redis *r = ht_redis_default();

	RAW_OK(r, "HSET cli:map a 1");
	HT_EQ(cli("--url", url(), "inspect", "cli:map", NULL), 0);
	HT_STREQ(out, "name: cli:map\nkind: map\nsize: 1\nttl_ms: -1\n"
	              "entry: a = 1\nshown: 1 of 1\n");
	RAW_OK(r, "HSET cli:map %b %b", "k\0=", (size_t)3, "v v", (size_t)3);
	HT_EQ(cli("--url", url(), "inspect", "cli:map", NULL), 0);
	HAS(out, "entry: hex:6b003d = hex:762076\n");
	/* more than a page: 10 shown of 1500 (a big hash is a map at once) */
	RAW_OK(r, "EVAL %s 1 cli:bigmap",
	       "for i = 1, 1500 do redis.call('hset', KEYS[1], 'f' .. i, i) "
	       "end");
	HT_EQ(cli("--url", url(), "inspect", "cli:bigmap", NULL), 0);
	HAS(out, "kind: map\nsize: 1500\n");
	HAS(out, "shown: 10 of 1500\n");

	RAW_OK(r, "SADD cli:set x");
	HT_EQ(cli("--url", url(), "inspect", "cli:set", NULL), 0);
	HAS(out, "kind: set\nsize: 1\nttl_ms: -1\nmember: x\nshown: 1 of 1\n");

	RAW_OK(r, "ZADD cli:zset 2.5 b -1 a");
	HT_EQ(cli("--url", url(), "inspect", "cli:zset", NULL), 0);
	HAS(out, "kind: scored_sorted_set\nsize: 2\nttl_ms: -1\n"
	         "member: a score=-1\nmember: b score=2.5\nshown: 2 of 2\n");

	RAW_OK(r, "RPUSH cli:sorted a b");
	RAW_OK(r, "HSET redisson_sortedset_lock:{cli:sorted} "
	          "5b9b3e3a-8d55-4a7e-9c1e-2f5ab0a1c0de:1 1");
	HT_EQ(cli("--url", url(), "inspect", "cli:sorted", NULL), 0);
	HAS(out, "kind: sorted_set\nsize: 2\nttl_ms: -1\n"
	         "comparator: none (natural order)\nlocked: yes\n"
	         "item: a\nitem: b\nshown: 2 of 2\n");
	/* --kind deque of the same list; --kind map of a set: a warning */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "deque", "cli:sorted",
	          NULL),
	      0);
	HAS(out, "kind: deque\nsize: 2\n");
	HT_EQ(cli("--url", url(), "inspect", "--kind", "map", "cli:set", NULL),
	      0);
	HAS(out, "kind: set (not a map)");
	/* the lock's own hash is a lock, not a map */
	HT_EQ(cli("--url", url(), "inspect",
	          "redisson_sortedset_lock:{cli:sorted}", NULL),
	      0);
	HAS(out, "kind: lock\nttl_ms: -1\nholders: 1\n");
}

/* A raw reply's integer or string (as a number), on r. */
static long long raw_num(ht_redis *r, const char *cmd, const char *key)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "%s %s", cmd, key);
	long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer
	              : rep->type == REDIS_REPLY_STRING
	                      ? strtoll(rep->str, NULL, 10)
	                      : -1;
	freeReplyObject(rep);
	return n;
}

/* 1 when a client of r waits in BLMOVE. */
static int blmove_waits(void *arg)
{
	redisReply *rep = ht_raw(ht_raw_of(arg), "CLIENT LIST");
	int yes = rep->type == REDIS_REPLY_STRING &&
	          strstr(rep->str, "cmd=blmove") != NULL;
	freeReplyObject(rep);
	return yes;
}

/* A blocking queue's length, head and tail, and a take in flight: a
 * child process waits in its take, is stopped, gets its element moved
 * into its in-flight list (BLMOVE runs in Redis) and is killed before it
 * can acknowledge it. inspect shows the take, its lease (30 s, on Redis's
 * clock) and the one element its list holds; the kind is read from
 * hilock's takers' hash. */
static void inspect_blocking_queue(void)
{
	ht_redis *r = ht_redis_default();
	const char *vals[] = {"a", "b", "c"};
	hl_client *c;
	hl_object *q;
	hl_task *t = NULL;
	redisReply *rep;
	pid_t pid;
	int i, ok = 0, st;

	ht_del(r, HT_S("cli:bq"));
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		hl_client *cc = ht_client(r, 30000);
		hl_object *cq = NULL;
		hl_value *v = NULL;
		if (hl_object_new(&cq, cc, HL_KIND_BLOCKING_QUEUE,
		                  HT_S("cli:bq")) != HL_OK)
			_exit(3);
		hl_blocking_queue_take(&v, cq);
		_exit(0);
	}
	HT_CHECK(ht_wait_until(blmove_waits, r, 10000));
	kill(pid, SIGSTOP);
	RAW_OK(r, "RPUSH cli:bq taken");
	kill(pid, SIGKILL);
	HT_EQ(waitpid(pid, &st, 0), pid);
	HT_EQ(llen(r, "cli:bq"), 0); /* moved, not acknowledged */

	c = ht_client(r, 0);
	q = grid_object(c, HL_KIND_BLOCKING_QUEUE, "cli:bq");
	for (i = 0; i < 3; i++) {
		HT_OK(hl_blocking_queue_offer(&ok, q, HT_S(vals[i])));
		HT_EQ(ok, 1);
	}
	HT_EQ(cli("--url", url(), "inspect", "cli:bq", NULL), 0);
	HAS(out, "name: cli:bq\nkind: blocking_queue (or blocking_deque)\n"
	         "size: 3\nttl_ms: -1\nhead: a\ntail: c\nitem: a\nitem: b\n"
	         "item: c\nshown: 3 of 3\n"
	         "takers_key: hilock_consumers:{cli:bq}\ntakes: 1\ntake: ");
	HAS(out, " in_flight=1\nin_flight: 1\n"
	         "given_back_key: hilock_given_back:{cli:bq}\n"
	         "given_back_recently: 0\n");
	HT_RANGE(field_of("take: ", "lease_in_ms="), 1000, 30000);
	/* --kind blocking_deque: the same keys */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "blocking-deque",
	          "cli:bq", NULL),
	      0);
	HAS(out, "kind: blocking_deque\nsize: 3\n");
	HAS(out, "takes: 1\n");
	/* inspect only reads: the take is still there */
	HT_EQ(ht_hlen(r, HT_S("hilock_consumers:{cli:bq}")), 1);
	rep = ht_raw(ht_raw_of(r), "HKEYS hilock_consumers:{cli:bq}");
	HT_EQ((long long)rep->elements, 1);
	RAW_OK(r, "DEL hilock_consumers:{cli:bq} hilock_inflight:{cli:bq}:%s",
	       rep->element[0]->str);
	freeReplyObject(rep);
	/* a dead take's element given back is counted for a while */
	RAW_OK(r, "HSET hilock_consumers:{cli:bq} dead 1");
	RAW_OK(r, "RPUSH hilock_inflight:{cli:bq}:dead z");
	{
		int64_t n = 0;
		HT_OK(hl_blocking_queue_recover(&n, q));
		HT_EQ(n, 1);
	}
	HT_EQ(cli("--url", url(), "inspect", "--kind", "blocking-queue",
	          "cli:bq", NULL),
	      0);
	HAS(out, "size: 4\n");
	HAS(out, "takes: 0\nin_flight: 0\n"
	         "given_back_key: hilock_given_back:{cli:bq}\n"
	         "given_back_recently: 1\n");
	RAW_OK(r, "DEL cli:bq hilock_given_back:{cli:bq}");
	hl_object_free(q);
	/* an empty queue whose name has braces but no tag (its takers' keys
	 * carry a tag of its slot): a take waiting is seen, in_flight 0 */
	q = grid_object(c, HL_KIND_BLOCKING_QUEUE, "cli}odd");
	HT_OK(hl_object_call_start(&t, q, HL_OP_BLOCKING_QUEUE_TAKE, NULL, 0));
	HT_CHECK(ht_wait_until(blmove_waits, r, 10000));
	HT_EQ(cli("--url", url(), "inspect", "cli}odd", NULL), 0);
	HAS(out, "kind: blocking_queue (or blocking_deque)\nsize: 0\n");
	HAS(out, "takes: 1\ntake: ");
	HAS(out, " in_flight=0\nin_flight: 0\n");
	hl_task_cancel(t);
	HT_OK(hl_task_wait(t, 10000, NULL));
	hl_task_free(t);
	hl_object_free(q);
	hl_client_free(c);
}

/* A bounded blocking queue: capacity 5 with 3 queued leaves 2; a poll
 * gives its unit back; an empty one with its capacity set is still seen;
 * one whose capacity was never set says so. */
static void inspect_bounded(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *q =
	        grid_object(c, HL_KIND_BOUNDED_BLOCKING_QUEUE, "cli:bounded");
	const char *vals[] = {"a", "b", "c"};
	hl_value *v = NULL;
	int i, ok = 0;

	HT_OK(hl_bounded_blocking_queue_try_set_capacity(&ok, q, 5));
	HT_EQ(ok, 1);
	for (i = 0; i < 3; i++) {
		HT_OK(hl_bounded_blocking_queue_offer(&ok, q, HT_S(vals[i])));
		HT_EQ(ok, 1);
	}
	HT_EQ(cli("--url", url(), "inspect", "cli:bounded", NULL), 0);
	HAS(out, "kind: bounded_blocking_queue\nsize: 3\nttl_ms: -1\n"
	         "head: a\ntail: c\n");
	HAS(out, "takes: 0\nin_flight: 0\n"
	         "capacity_key: redisson_bqs:{cli:bounded}\n"
	         "remaining_capacity: 2\n"
	         "capacity: 5 (remaining + size + in flight)\n"
	         "capacity_channel: redisson_sc:redisson_bqs:{cli:bounded}\n"
	         "capacity_listeners: 0\n");
	HT_OK(hl_bounded_blocking_queue_poll(&v, q));
	HT_CHECK(v && hl_value_bytes(v, NULL) &&
	         strcmp(hl_value_bytes(v, NULL), "a") == 0);
	hl_value_free(v);
	v = NULL;
	HT_EQ(cli("--url", url(), "inspect", "cli:bounded", NULL), 0);
	HAS(out, "size: 2\nttl_ms: -1\nhead: b\ntail: c\n");
	HAS(out, "remaining_capacity: 3\ncapacity: 5 (");
	HT_OK(hl_bounded_blocking_queue_poll_many(&v, q, 10));
	hl_value_free(v);
	HT_EQ(cli("--url", url(), "inspect", "cli:bounded", NULL), 0);
	HAS(out, "kind: bounded_blocking_queue\nsize: 0\n");
	HASNT(out, "head: ");
	HAS(out, "remaining_capacity: 5\ncapacity: 5 (");
	HT_EQ(raw_num(r, "GET", "redisson_bqs:{cli:bounded}"), 5);
	/* no capacity set */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "bounded_blocking_queue",
	          "cli:nocap", NULL),
	      0);
	HAS(out, "remaining_capacity: none (not set");
	hl_object_free(q);
	hl_client_free(c);
}

/* A delayed queue: two elements waiting (the next due in 20-30 s, on
 * Redis's clock, listed soonest first), one already moved to the
 * destination, the client's mover listening on the channel. */
static void inspect_delayed(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *d = grid_object(c, HL_KIND_DELAYED_QUEUE, "cli:delayed");
	long long due;

	HT_OK(hl_delayed_queue_offer(d, HT_S("later"), 60000));
	HT_OK(hl_delayed_queue_offer(d, HT_S("soon"), 30000));
	HT_OK(hl_delayed_queue_offer(d, HT_S("now"), 0));
	wait_llen(r, "cli:delayed", 1);
	wait_numsub(r, "redisson_delay_queue_channel:{cli:delayed}", 1);
	HT_EQ(cli("--url", url(), "inspect", "cli:delayed", NULL), 0);
	HAS(out, "name: cli:delayed\nkind: delayed_queue\n"
	         "destination: cli:delayed\ndestination_size: 1\n"
	         "timeout_key: redisson_delay_queue_timeout:{cli:delayed}\n"
	         "delayed: 2\nnext_due_in_ms: ");
	HAS(out, "list_key: redisson_delay_queue:{cli:delayed}\n"
	         "list_size: 2\n"
	         "channel: redisson_delay_queue_channel:{cli:delayed}\n"
	         "movers: 1\nelement: soon due_in_ms=");
	HAS(out, "\nelement: later due_in_ms=");
	HAS(out, "shown: 2 of 2\n");
	due = field_of("next_due_in_ms: ", "next_due_in_ms: ");
	HT_RANGE(due, 20000, 30000);
	HT_EQ(field_of("element: soon", "due_in_ms="), due);
	HT_RANGE(field_of("element: later", "due_in_ms="), 50000, 60000);
	/* --kind queue: the destination alone */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "queue", "cli:delayed",
	          NULL),
	      0);
	HAS(out, "kind: queue\nsize: 1\nttl_ms: -1\nitem: now\n");
	HT_OK(hl_delayed_queue_clear(d));
	hl_object_free(d);
	hl_client_free(c);
}

/* Priority queues: the head the lowest, the comparator and Redisson's
 * lock; a Java comparator and a held lock shown; a waiting take of the
 * blocking form counted on hilock's channel, and its queue seen as a
 * priority queue without --kind. */
static void inspect_priority(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *p = grid_object(c, HL_KIND_PRIORITY_QUEUE, "cli:prio");
	hl_object *b =
	        grid_object(c, HL_KIND_PRIORITY_BLOCKING_QUEUE, "cli:pbq");
	const char *vals[] = {"b", "c", "a"};
	const hl_value *got = NULL;
	hl_task *t = NULL;
	int i, ok = 0;

	for (i = 0; i < 3; i++) {
		HT_OK(hl_priority_queue_add(&ok, p, HT_S(vals[i])));
		HT_EQ(ok, 1);
	}
	HT_EQ(cli("--url", url(), "inspect", "--kind", "priority_queue",
	          "cli:prio", NULL),
	      0);
	HT_STREQ(out, "name: cli:prio\nkind: priority_queue\nsize: 3\n"
	              "ttl_ms: -1\nhead: a\ntail: c\nitem: a\nitem: b\n"
	              "item: c\nshown: 3 of 3\n"
	              "comparator_key: "
	              "{cli:prio}:redisson_sortedset_comparator\n"
	              "comparator: none (natural order)\n"
	              "lock_key: redisson_sortedset_lock:{cli:prio}\n"
	              "locked: no\n"
	              "wake_channel: hilock_priority_queue_channel:{cli:prio}\n"
	              "listeners: 0\n");
	/* a Java comparator and Redisson's lock held */
	RAW_OK(r, "SET {cli:prio}:redisson_sortedset_comparator "
	          "com.example.ByLength:7");
	RAW_OK(r, "HSET redisson_sortedset_lock:{cli:prio} "
	          "5b9b3e3a-8d55-4a7e-9c1e-2f5ab0a1c0de:1 1");
	RAW_OK(r, "PEXPIRE redisson_sortedset_lock:{cli:prio} 30000");
	HT_EQ(cli("--url", url(), "inspect", "cli:prio", NULL), 0);
	HAS(out, "kind: priority_queue (or priority_deque, or their blocking "
	         "forms)\nsize: 3\n");
	HAS(out, "comparator: com.example.ByLength:7 (a Java comparator: "
	         "hilock refuses the queue)\n");
	HAS(out, "locked: yes\nlock_holder: "
	         "5b9b3e3a-8d55-4a7e-9c1e-2f5ab0a1c0de:1\nlock_ttl_ms: ");
	HT_RANGE(field_of("lock_ttl_ms: ", "lock_ttl_ms: "), 1000, 30000);
	ht_del(r, HT_S("{cli:prio}:redisson_sortedset_comparator"));
	ht_del(r, HT_S("redisson_sortedset_lock:{cli:prio}"));
	/* a take waiting on an empty priority blocking queue */
	HT_OK(hl_object_call_start(&t, b, HL_OP_PRIORITY_BLOCKING_QUEUE_TAKE,
	                           NULL, 0));
	wait_numsub(r, "hilock_priority_queue_channel:{cli:pbq}", 1);
	HT_EQ(cli("--url", url(), "inspect", "cli:pbq", NULL), 0);
	HAS(out, "kind: priority_queue (or priority_deque, or their blocking "
	         "forms)\nsize: 0\nttl_ms: -2\nshown: 0 of 0\n");
	HAS(out, "listeners: 1\n");
	HT_EQ(cli("--url", url(), "inspect", "--kind",
	          "priority_blocking_deque", "cli:pbq", NULL),
	      0);
	HAS(out, "kind: priority_blocking_deque\nsize: 0\n");
	HT_OK(hl_priority_blocking_queue_add(&ok, b, HT_S("x")));
	HT_OK(hl_task_wait(t, 10000, NULL));
	HT_OK(hl_task_result(NULL, t));
	HT_OK(hl_task_value(&got, t));
	HT_CHECK(got && strcmp(hl_value_bytes(got, NULL), "x") == 0);
	hl_task_free(t);
	hl_object_free(b);
	hl_object_free(p);
	hl_client_free(c);
}

/* Adders keep nothing in Redis: inspect says so and counts the clients
 * listening on the adder's topic; with one, it is seen without --kind. */
static void inspect_adder(void)
{
	ht_redis *r = ht_redis_default();
	redisContext *sub;
	HT_EQ(cli("--url", url(), "inspect", "--kind", "long_adder",
	          "cli:adder", NULL),
	      0);
	HAS(out, "kind: long_adder\nstored: nothing");
	HAS(out, "{cli:adder}:adder-topic\nlisteners: 0\n");
	HT_EQ(cli("--url", url(), "inspect", "cli:adder", NULL), 0);
	HAS(out, "kind: free\n");
	sub = ht_sub_new(r, HT_S("{cli:adder}:adder-topic"));
	HT_EQ(cli("--url", url(), "inspect", "--kind", "double_adder",
	          "cli:adder", NULL),
	      0);
	HAS(out, "kind: double_adder\n");
	HAS(out, "listeners: 1\n");
	HT_EQ(cli("--url", url(), "inspect", "cli:adder", NULL), 0);
	HAS(out, "kind: adder (long_adder or double_adder)\n");
	HAS(out, "listeners: 1\n");
	redisFree(sub);
}

/* A cluster: list SCANs every master (hl_client_masters,
 * hl_client_command_node); inspect asks a waiter count where the
 * channel's slot is and reads a grid object on its node. */
static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c;
	hl_lock *l[12], *w;
	hl_object *al = NULL;
	char u[600], name[32], line[64];
	const char *args[] = {"--url", u,    "run",  "--wait", "20",
	                      "cl:w",  "--", "true", NULL};
	int i, masters[3] = {0}, nm = 0;
	pid_t waiter;
	int64_t end;

	ht_cluster_url(cl, u, sizeof u);
	HT_OK(hl_client_new(&c, u, NULL));
	for (i = 0; i < 12; i++) {
		int port, k;
		snprintf(name, sizeof name, "cl:l:%d", i);
		l[i] = ht_lock(c, name);
		HT_OK(hl_lock_acquire(l[i], -1, NULL));
		port = ht_cluster_master_of_slot(
		        cl, ht_cluster_slot_of(cl, name, strlen(name)));
		for (k = 0; k < nm && masters[k] != port; k++)
			;
		if (k == nm && nm < 3)
			masters[nm++] = port;
	}
	HT_EQ(nm, 3); /* the locks are on every master */
	HT_EQ(cli("--url", u, "list", "cl:l:*", NULL), 0);
	for (i = 0; i < 12; i++) {
		snprintf(line, sizeof line, "cl:l:%d\t1\t", i);
		HAS(out, line);
	}
	/* a waiter, counted on its channel's node */
	w = ht_lock(c, "cl:w");
	HT_OK(hl_lock_acquire(w, -1, NULL));
	waiter = cli_spawn(tmp_path("clw.log"), args);
	end = ht_now_ms() + 5000 * ht_scale();
	do {
		HT_EQ(cli("--url", u, "inspect", "cl:w", NULL), 0);
		if (strstr(out, "waiters: 1\n"))
			break;
		ht_sleep_ms(50);
	} while (ht_now_ms() < end);
	HAS(out, "kind: lock\nttl_ms: ");
	HAS(out, "waiters: 1\n");
	HT_OK(hl_lock_release(NULL, w));
	HT_EQ(cli_reap(waiter, 10000), 0);
	hl_lock_free(w);
	/* a grid object */
	HT_OK(hl_object_new(&al, c, HL_KIND_ATOMIC_LONG, "cl:al", 5));
	HT_OK(hl_atomic_long_set(al, 77));
	HT_EQ(cli("--url", u, "inspect", "cl:al", NULL), 0);
	HAS(out, "kind: atomic_long\nvalue: 77\n");
	hl_object_free(al);
	for (i = 0; i < 12; i++) {
		HT_OK(hl_lock_release(NULL, l[i]));
		hl_lock_free(l[i]);
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

static void bad_kind(void)
{
	HT_EQ(cli("--url", url(), "run", "--kind", "bogus", "cli:bad", "--",
	          "true", NULL),
	      64);
	HAS(out, "unknown lock kind \"bogus\"");
	HAS(out, "reentrant, fair, read, write, spin, fenced, nonreentrant, "
	         "fair-nonreentrant");
	HT_EQ(ht_exists(ht_redis_default(), HT_S("cli:bad")), 0);
	HT_EQ(cli("inspect", "--kind", "Read", "x", NULL), 64);
	HAS(out, "unknown lock kind \"Read\"");
	HT_EQ(cli("unlock", "--force", "--kind", "", "x", NULL), 64);
	HT_EQ(cli("inspect", "x", "--kind", NULL), 64);
	HT_EQ(cli("inspect", "--kind", NULL), 64);
	HAS(out, "--kind needs a value");
	HT_EQ(cli("list", "--kind", "read", NULL), 64);
	HAS(out, "--kind is an option of run, inspect and unlock");
	HT_EQ(cli("--kind", "read", "inspect", "x", NULL), 64);
	/* the grid's kinds are inspect's only */
	HT_EQ(cli("--url", url(), "run", "--kind", "bucket", "cli:bad", "--",
	          "true", NULL),
	      64);
	HAS(out, "--kind bucket: not a lock; only inspect takes");
	HT_EQ(cli("unlock", "--force", "--kind", "rate_limiter", "x", NULL),
	      64);
	HT_EQ(cli("inspect", "--kind", "atomic_longer", "x", NULL), 64);
	HAS(out, "bucket, atomic_long, atomic_double, bit_set, long_adder, "
	         "double_adder, bloom_filter, rate_limiter");
	HAS(out,
	    "deque, blocking_queue, blocking_deque, bounded_blocking_queue, "
	    "delayed_queue, priority_queue, priority_deque, "
	    "priority_blocking_queue, priority_blocking_deque)");
	/* every kind hl_lock_kind_name knows is accepted */
	{
		int k;
		for (k = 0; k <= HL_LOCK_FAIR_NONREENTRANT; k++) {
			HT_EQ(cli("--url", url(), "run", "--kind",
			          hl_lock_kind_name(k), "--wait", "5",
			          "cli:kinds", "--", "true", NULL),
			      0);
			HT_EQ(ht_exists(ht_redis_default(), HT_S("cli:kinds")),
			      0);
		}
	}
	/* a spin lock's waiters poll: inspect cannot count them */
	HT_EQ(cli("--url", url(), "inspect", "--kind", "spin", "cli:kinds",
	          NULL),
	      0);
	HAS(out, "waiters: -1\n");
}

/* ---- the command line -----------------------------------------------------
 */
static void help_version(void)
{
	char v[64];
	HT_EQ(cli("--help", NULL), 0);
	HAS(out, "Usage: hilock");
	HAS(out, "74");
	HAS(out, "75");
	HT_EQ(cli("run", "--help", NULL), 0);
	HAS(out, "--wait S");
	HAS(out, "--kind K");
	HAS(out, "HILOCK_TOKEN");
	HT_EQ(cli("inspect", "--help", NULL), 0);
	HAS(out, "inspect [--kind K] NAME");
	HAS(out, "deadline_in_ms");
	HT_EQ(cli("list", "--help", NULL), 0);
	HAS(out, "PATTERN");
	HT_EQ(cli("unlock", "--help", NULL), 0);
	HAS(out, "--force");
	HAS(out, "redisson_rwlock:{NAME}");
	HT_EQ(cli("--version", NULL), 0);
	snprintf(v, sizeof v, "hilock %s", hl_version());
	HAS(out, v);
	/* usage errors: 64, one line */
	HT_EQ(cli("frobnicate", NULL), 64);
	HAS(out, "unknown command");
	HT_EQ(cli("--bogus", "list", NULL), 64);
	HT_EQ(cli("run", "x", NULL), 64);
	HT_EQ(cli("run", "--wait", "soon", "x", "--", "true", NULL), 64);
	HAS(out, "bad duration");
	HT_EQ(cli("inspect", "--wait", "1", "x", NULL), 64);
	HT_EQ(cli("inspect", NULL), 64);
}

static void bad_url(void)
{
	char u[256];
	int port = ht_free_port();
	ht_redis_opts ro = {.requirepass = "rightpw"};
	ht_redis *r;

	/* nobody listening: 69, naming the failure, not the password */
	snprintf(u, sizeof u, "redis://alice:topsecret@127.0.0.1:%d/0", port);
	HT_EQ(cli("--url", u, "--connect-timeout", "1", "inspect", "x", NULL),
	      69);
	HAS(out, "hilock: ");
	HASNT(out, "topsecret");
	/* the URL from the environment is never printed either */
	setenv("HILOCK_URL", u, 1);
	HT_EQ(cli("--connect-timeout", "1", "list", NULL), 69);
	HASNT(out, "topsecret");
	unsetenv("HILOCK_URL");
	/* a malformed URL: 78 */
	HT_EQ(cli("--url", "redis://alice:topsecret@127.0.0.1:1/abc", "inspect",
	          "x", NULL),
	      78);
	HASNT(out, "topsecret");
	HT_EQ(cli("--url", "nonsense://x", "inspect", "x", NULL), 78);
	/* a sentinel password on the command line */
	snprintf(u, sizeof u, "redis-sentinel://127.0.0.1:%d/mymaster", port);
	HT_EQ(cli("--url", u, "--sentinel-password", "sentpw",
	          "--connect-timeout", "1", "inspect", "x", NULL),
	      69);
	HASNT(out, "sentpw");
	/* a wrong password */
	r = ht_redis_start(&ro);
	snprintf(u, sizeof u, "redis://default:wrongpw@127.0.0.1:%d", r->port);
	HT_EQ(cli("--url", u, "run", "x", "--", "true", NULL), 69);
	HASNT(out, "wrongpw");
	HASNT(out, "rightpw");
}

HT_MAIN(HT_CASE(run_ok), HT_CASE(run_fails), HT_CASE(run_killed),
        HT_CASE(run_forwards_signal), HT_CASE(run_wait_timeout),
        HT_CASE(run_lost), HT_CASE(run_lost_grace), HT_CASE(inspect),
        HT_CASE(list), HT_CASE(unlock_force), HT_CASE(run_kind_rw),
        HT_CASE(run_kind_fenced), HT_CASE(inspect_fair),
        HT_CASE(unlock_force_fair), HT_CASE(unlock_force_rwlock),
        HT_CASE(bad_kind), HT_CASE(help_version), HT_CASE(bad_url),
        HT_CASE(inspect_bucket), HT_CASE(inspect_atomic),
        HT_CASE(inspect_bit_set), HT_CASE(inspect_bloom_filter),
        HT_CASE(inspect_rate_limiter), HT_CASE(inspect_adder), HT_CASE(cluster),
        HT_CASE(inspect_collections), HT_CASE(inspect_blocking_queue),
        HT_CASE(inspect_bounded), HT_CASE(inspect_delayed),
        HT_CASE(inspect_priority))
