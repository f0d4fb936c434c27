/*
 * The `hilock` command (cli/), through the real binary against a real
 * redis-server: run (success, failure, a signal, --wait running out, a lock
 * lost under the command), inspect, list, unlock --force, --help and
 * --version, bad URLs (no password in any message).
 */
#include "harness_topo.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

	HT_OK(hl_lock_release(NULL, l));
	HT_OK(hl_lock_release(NULL, l));
	HT_EQ(cli_reap(waiter, 5000), 0); /* the waiter got it and ran */

	/* a key that is not a lock */
	ht_set_int(ht_raw_of(r), "cli:str", 5);
	HT_EQ(cli("--url", url(), "inspect", "cli:str", NULL), 0);
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
	HT_EQ(cli("inspect", "--help", NULL), 0);
	HAS(out, "inspect NAME");
	HT_EQ(cli("list", "--help", NULL), 0);
	HAS(out, "PATTERN");
	HT_EQ(cli("unlock", "--help", NULL), 0);
	HAS(out, "--force");
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
        HT_CASE(list), HT_CASE(unlock_force), HT_CASE(help_version),
        HT_CASE(bad_url))
