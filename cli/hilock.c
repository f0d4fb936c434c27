/*
 * hilock: the command-line tool of libhilock.
 *
 *   hilock [options] run [--kind K] [--wait S] [--lease S] [--grace S]
 *                        NAME -- CMD...
 *   hilock [options] inspect [--kind K] NAME
 *   hilock [options] list [PATTERN]
 *   hilock [options] unlock --force [--kind K] NAME
 *
 * `run` is flock(1) for a fleet: it takes the lock NAME (a Redisson RLock,
 * or another of the library's lock kinds with --kind) with the watchdog,
 * runs CMD as its child, and releases the lock when CMD exits; if the lock
 * is lost meanwhile, CMD gets SIGTERM (then SIGKILL) and hilock exits with
 * EXIT_LOST. See hilock.1 and the usage texts below for the rest.
 *
 * Why this file uses the library's internals (core/src/internal.h): run
 * needs only the public API, but inspect, list and unlock (to tell a lock's
 * kind) send raw commands (TYPE, HGETALL, HGET, PTTL, EXISTS, LRANGE,
 * ZRANGE, GET, PUBSUB NUMSUB/SHARDNUMSUB, SCAN) that must go where the
 * library sends a lock's commands: the master, the master of the name's
 * slot in a cluster, every master for SCAN; and they read the names the
 * library derives for each kind (its channel, a fair lock's queue, a
 * fenced lock's token) from handles of that kind. The public ABI has
 * no raw command call and should not grow one for a tool; this program is
 * in-tree, linked statically against the same sources and installed with
 * the library at the same version, so the coupling can never skew.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Exit statuses (sysexits.h values where one fits). */
enum {
	EXIT_NOT_LOCKED = 1,   /* unlock --force: the lock was free */
	EXIT_USAGE = 64,       /* EX_USAGE: bad command line */
	EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: Redis unreachable, refused
	                          or failed */
	EXIT_SOFTWARE = 70,    /* EX_SOFTWARE: an unexpected error */
	EXIT_OSERR = 71,       /* EX_OSERR: fork, pipe, signalfd failed */
	EXIT_LOST = 74,        /* run: the lock was lost while CMD ran */
	EXIT_TEMPFAIL = 75,    /* EX_TEMPFAIL: run: not acquired in --wait */
	EXIT_CONFIG = 78,      /* EX_CONFIG: bad URL or option value */
	EXIT_CANNOT_EXEC = 126,
	EXIT_NOT_FOUND = 127
};

#define DEFAULT_URL "redis://127.0.0.1:6379/0"

typedef struct cli {
	const char *url;
	hl_client_options co;
	int64_t wait_ms;  /* -1: forever */
	int64_t lease_ms; /* -1: the watchdog */
	int64_t grace_ms;
	int force;
	int kind; /* --kind: HL_LOCK_*; -1: not given */
} cli;

static const char *prog = "hilock";

/* ---- help ---------------------------------------------------------------- */
static const char usage_main[] =
        "Usage: hilock [OPTIONS] COMMAND [ARGS...]\n"
        "\n"
        "Redisson-compatible distributed locks on Redis, from the shell.\n"
        "\n"
        "Commands:\n"
        "  run [--kind K] [--wait S] [--lease S] [--grace S] NAME -- CMD "
        "[ARGS...]\n"
        "                 run CMD while holding the lock NAME\n"
        "  inspect [--kind K] NAME\n"
        "                 show a lock: kind, holders, TTL, waiters, a fair\n"
        "                 lock's queue, a fenced lock's token\n"
        "  list [PATTERN] list lock hashes (SCAN MATCH PATTERN, default *)\n"
        "  unlock --force [--kind K] NAME\n"
        "                 delete the lock whoever holds it, wake a waiter\n"
        "\n"
        "Lock kinds K (Redisson's, on the same keys and channels):\n"
        "  reentrant (RLock, the default), fair (RFairLock), read and\n"
        "  write (the halves of RReadWriteLock), spin (RSpinLock), fenced\n"
        "  (RFencedLock), nonreentrant, fair-nonreentrant.\n"
        "\n"
        "Options (before or after COMMAND, before NAME):\n"
        "  --url URL                redis://, rediss://, unix://,\n"
        "                           redis-sentinel://, redis-cluster://,\n"
        "                           redis-replica:// (see hilock(1)); default\n"
        "                           $HILOCK_URL, else " DEFAULT_URL "\n"
        "  --watchdog-timeout S     lease renewed by the watchdog (30)\n"
        "  --connect-timeout S      (10)\n"
        "  --command-timeout S      (3)\n"
        "  --client-name NAME       CLIENT SETNAME\n"
        "  --tls-ca-file FILE       --tls-ca-dir DIR\n"
        "  --tls-cert-file FILE     --tls-key-file FILE\n"
        "  --tls-server-name NAME   --tls-no-verify\n"
        "  --sentinel-username USER\n"
        "  --sentinel-password PASS (better: $HILOCK_SENTINEL_PASSWORD)\n"
        "  -h, --help               this help (COMMAND --help: its own)\n"
        "  -V, --version\n"
        "Durations S are seconds (\"1.5\") or carry a unit: 500ms, 2s, 1m.\n"
        "\n"
        "Exit status:\n"
        "  run: CMD's status, or 128+N if CMD was killed by signal N;\n"
        "  1   unlock --force: the lock was not held\n"
        "  64  bad command line          69  Redis unreachable or failing\n"
        "  70  internal error            71  fork/pipe/signal setup failed\n"
        "  74  run: the lock was lost while CMD ran (CMD got SIGTERM)\n"
        "  75  run: not acquired within --wait\n"
        "  78  bad URL or option value   126 CMD not executable\n"
        "  127 CMD not found             128+N hilock stopped by signal N\n"
        "                                while waiting for the lock\n";

static const char usage_run[] =
        "Usage: hilock [OPTIONS] run [--kind K] [--wait S] [--lease S] "
        "[--grace S]\n"
        "                            NAME -- CMD [ARGS...]\n"
        "\n"
        "Take the lock NAME, run CMD (stdin, stdout, stderr inherited),\n"
        "release the lock when CMD exits, and exit with CMD's status\n"
        "(128+N if a signal N killed it).\n"
        "\n"
        "  --kind K    the lock's kind (default reentrant): fair (taken in\n"
        "              the order asked, across machines), read (shared by\n"
        "              every run --kind read; excludes writers), write\n"
        "              (excludes readers and writers), spin (waits by\n"
        "              polling, no pub/sub), fenced (CMD gets the lock's\n"
        "              fencing token in $HILOCK_TOKEN, larger at every\n"
        "              acquisition), nonreentrant, fair-nonreentrant\n"
        "  --wait S    wait at most S for the lock (default: forever;\n"
        "              0: one attempt); exit 75 if it is not acquired\n"
        "  --lease S   a fixed lease of S instead of the watchdog\n"
        "              (the lock is renewed while CMD runs by default)\n"
        "  --grace S   after a loss, SIGKILL CMD if it has not exited S\n"
        "              after SIGTERM (default 10)\n"
        "\n"
        "SIGINT, SIGTERM and SIGHUP sent to hilock are passed on to CMD\n"
        "(not those from the terminal, which CMD gets itself). If the lock\n"
        "is lost while CMD runs (deleted, taken over, not renewed in time,\n"
        "or the fixed lease ran out), CMD gets SIGTERM, hilock says so on\n"
        "stderr and exits 74.\n";

static const char usage_inspect[] =
        "Usage: hilock [OPTIONS] inspect [--kind K] NAME\n"
        "\n"
        "Show the lock NAME, one \"key: value\" line each:\n"
        "  name;\n"
        "  kind: \"lock\", \"fair lock\" (its queue exists), \"rwlock (mode\n"
        "    read)\" or \"(mode write)\", \"free\", or another Redis type\n"
        "    \"(not a lock)\"; with --kind, that kind's name (\"spin "
        "lock\"...);\n"
        "  ttl_ms (-1: no expiry), holders (their number), one\n"
        "    \"holder: <client-uuid>:<id> count=N\" line per holder (\" "
        "write\"\n"
        "    marks an rwlock's write holds), readers (an rwlock's);\n"
        "  token: the last fencing token given out, when the fenced lock's\n"
        "    counter redisson_lock_token:{NAME} exists;\n"
        "  one \"queued: <owner> deadline_in_ms=N\" line per waiter in a fair\n"
        "    lock's queue, first in line first (N: its deadline in Redis,\n"
        "    wall-clock, less this machine's time; below 0: a waiter that\n"
        "    died without leaving the queue, or clocks out of step);\n"
        "  waiters: a fair lock's queue length; else the clients subscribed\n"
        "    to the lock's channel (redisson_rwlock:{NAME} for an rwlock,\n"
        "    redisson_lock__channel:{NAME} else; a hilock client stays\n"
        "    subscribed for about 1 s after its last waiter left); -1 for\n"
        "    --kind spin, whose waiters poll.\n"
        "Without --kind the kind is read from Redis: a mode field makes an\n"
        "rwlock, an existing queue a fair lock; reentrant, spin, fenced and\n"
        "non-reentrant locks look alike (\"lock\"). A --kind that Redis\n"
        "contradicts gets a warning on stderr.\n";

static const char usage_list[] =
        "Usage: hilock [OPTIONS] list [PATTERN]\n"
        "\n"
        "List the hashes whose names match PATTERN (SCAN MATCH, default *),\n"
        "on the master or on every master of a cluster: one line each,\n"
        "NAME<TAB>HOLDERS<TAB>TTL_MS<TAB>KIND, KIND being rwlock:read or\n"
        "rwlock:write (a mode field), fairlock (a fair lock with waiters\n"
        "queued) or lock. Every hash matching is listed; choose a pattern\n"
        "that names locks only.\n";

static const char usage_unlock[] =
        "Usage: hilock [OPTIONS] unlock --force [--kind K] NAME\n"
        "\n"
        "Delete the lock NAME whoever holds it and wake its waiters as its\n"
        "kind does (Redisson's forceUnlock). Exit 0 if it was held, 1 if\n"
        "not (or NAME is a key of another type, left alone). Its holders\n"
        "find their hold lost.\n"
        "\n"
        "  --kind K    the lock's kind; by default read from Redis: a mode\n"
        "              field makes the read or the write half of an rwlock\n"
        "              (as the mode says: waiters are woken on\n"
        "              redisson_rwlock:{NAME}), an existing queue\n"
        "              redisson_lock_queue:{NAME} a fair lock (its first\n"
        "              waiter is woken on its own channel), else a\n"
        "              reentrant lock (redisson_lock__channel:{NAME}).\n"
        "              --kind read or write deletes an rwlock only in\n"
        "              that mode.\n";

/* ---- errors ----------------------------------------------------------------
 */
static int exit_for(int rc)
{
	switch (rc) {
	case HL_EINVAL:
		return EXIT_CONFIG;
	case HL_ECONNECT:
	case HL_EAUTH:
	case HL_EIO:
	case HL_EREDIS:
	case HL_EPROTOCOL:
	case HL_ETIMEDOUT:
	case HL_EINDOUBT:
		return EXIT_UNAVAILABLE;
	case HL_ENOMEM:
	case HL_ESYSTEM:
		return EXIT_OSERR;
	default:
		return EXIT_SOFTWARE;
	}
}

/* One line on stderr: what failed and why (hl_error_last never carries a
 * password). Returns the exit status for rc. */
static int fail_hl(int rc, const char *fmt, ...) HL_PRINTF(2, 3);
static int fail_hl(int rc, const char *fmt, ...)
{
	va_list ap;
	const char *why = hl_error_last();
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", why[0] ? why : hl_status_str(rc));
	return exit_for(rc);
}

static int usage_error(const char *usage, const char *fmt, ...) HL_PRINTF(2, 3);
static int usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	(void)usage;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	return EXIT_USAGE;
}

/* "1.5" (seconds), "500ms", "2s", "1m" -> ms. -1 if malformed. */
static int64_t parse_duration(const char *s)
{
	char *end;
	double v, unit = 1000;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		unit = 1;
	else if (strcmp(end, "s") == 0 || *end == 0)
		unit = 1000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else
		return -1;
	v *= unit;
	if (v > (double)HL_TIME_MAX)
		return -1;
	return (int64_t)llround(v);
}

/* ---- options --------------------------------------------------------------
 */
enum {
	O_URL = 256,
	O_WD,
	O_CONNECT,
	O_COMMAND,
	O_CA_FILE,
	O_CA_DIR,
	O_CERT,
	O_KEY,
	O_SNI,
	O_NO_VERIFY,
	O_SENT_USER,
	O_SENT_PASS,
	O_CLIENT_NAME,
	O_WAIT,
	O_LEASE,
	O_GRACE,
	O_FORCE,
	O_KIND
};

static const struct option long_opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"watchdog-timeout", required_argument, NULL, O_WD},
        {"connect-timeout", required_argument, NULL, O_CONNECT},
        {"command-timeout", required_argument, NULL, O_COMMAND},
        {"tls-ca-file", required_argument, NULL, O_CA_FILE},
        {"tls-ca-dir", required_argument, NULL, O_CA_DIR},
        {"tls-cert-file", required_argument, NULL, O_CERT},
        {"tls-key-file", required_argument, NULL, O_KEY},
        {"tls-server-name", required_argument, NULL, O_SNI},
        {"tls-no-verify", no_argument, NULL, O_NO_VERIFY},
        {"sentinel-username", required_argument, NULL, O_SENT_USER},
        {"sentinel-password", required_argument, NULL, O_SENT_PASS},
        {"client-name", required_argument, NULL, O_CLIENT_NAME},
        {"wait", required_argument, NULL, O_WAIT},
        {"lease", required_argument, NULL, O_LEASE},
        {"grace", required_argument, NULL, O_GRACE},
        {"force", no_argument, NULL, O_FORCE},
        {"kind", required_argument, NULL, O_KIND},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};

/* The lock kind called s (hl_lock_kind_name's names), or -1. */
static int parse_kind(const char *s)
{
	int k;
	for (k = 0; strcmp(hl_lock_kind_name(k), "unknown") != 0; k++)
		if (strcmp(hl_lock_kind_name(k), s) == 0)
			return k;
	return -1;
}

/* "reentrant, fair, ..." into buf. */
static const char *kind_names(char *buf, size_t len)
{
	size_t at = 0;
	int k;
	buf[0] = 0;
	for (k = 0; strcmp(hl_lock_kind_name(k), "unknown") != 0; k++) {
		int n = snprintf(buf + at, len - at, "%s%s", k ? ", " : "",
		                 hl_lock_kind_name(k));
		if (n < 0 || (size_t)n >= len - at)
			break;
		at += (size_t)n;
	}
	return buf;
}

/* Parse options of argv[1..] up to the first operand. sub: the
 * subcommand's usage (NULL before it), to reject its options elsewhere and
 * for --help. Returns -1 to go on, or an exit status. */
static int parse_opts(cli *o, int argc, char **argv, const char *sub, int *next)
{
	int ch;
	optind = 0; /* glibc: full reinitialisation */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:hV", long_opts, NULL)) != -1) {
		int64_t ms = 0;
		const char *name = argv[optind - 1];
		switch (ch) {
		case O_WD:
		case O_CONNECT:
		case O_COMMAND:
		case O_WAIT:
		case O_LEASE:
		case O_GRACE:
			ms = parse_duration(optarg);
			if (ms < 0)
				return usage_error(sub,
				                   "%s: bad duration \"%s\"",
				                   name, optarg);
			break;
		}
		if ((ch == O_WAIT || ch == O_LEASE || ch == O_GRACE) &&
		    sub != usage_run)
			return usage_error(sub, "%s is an option of run", name);
		if (ch == O_FORCE && sub != usage_unlock)
			return usage_error(sub,
			                   "--force is an option of unlock");
		if (ch == O_KIND && sub != usage_run && sub != usage_inspect &&
		    sub != usage_unlock)
			return usage_error(sub, "--kind is an option of run, "
			                        "inspect and unlock");
		switch (ch) {
		case 'h':
			fputs(sub ? sub : usage_main, stdout);
			return 0;
		case 'V':
			printf("hilock %s (libhilock %s)\n", HL_VERSION_STRING,
			       hl_version());
			return 0;
		case O_URL:
			o->url = optarg;
			break;
		case O_WD:
			if (ms < 3)
				return usage_error(
				        sub, "--watchdog-timeout: too short");
			o->co.watchdog_timeout_ms = ms;
			break;
		case O_CONNECT:
			o->co.connect_timeout_ms = ms ? ms : 1;
			break;
		case O_COMMAND:
			o->co.command_timeout_ms = ms ? ms : 1;
			break;
		case O_CA_FILE:
			o->co.tls_ca_file = optarg;
			break;
		case O_CA_DIR:
			o->co.tls_ca_dir = optarg;
			break;
		case O_CERT:
			o->co.tls_cert_file = optarg;
			break;
		case O_KEY:
			o->co.tls_key_file = optarg;
			break;
		case O_SNI:
			o->co.tls_server_name = optarg;
			break;
		case O_NO_VERIFY:
			o->co.tls_verify = 0;
			break;
		case O_SENT_USER:
			o->co.sentinel_username = optarg;
			break;
		case O_SENT_PASS:
			o->co.sentinel_password = optarg;
			break;
		case O_CLIENT_NAME:
			o->co.client_name = optarg;
			break;
		case O_WAIT:
			o->wait_ms = ms;
			break;
		case O_LEASE:
			if (ms < 1)
				return usage_error(sub, "--lease must be > 0");
			o->lease_ms = ms;
			break;
		case O_GRACE:
			o->grace_ms = ms;
			break;
		case O_FORCE:
			o->force = 1;
			break;
		case O_KIND:
			if ((o->kind = parse_kind(optarg)) < 0) {
				char kinds[200];
				return usage_error(
				        sub,
				        "--kind: unknown lock kind \"%s\" "
				        "(kinds: %s)",
				        optarg,
				        kind_names(kinds, sizeof kinds));
			}
			break;
		case ':':
			return usage_error(sub, "%s needs a value", name);
		default:
			return usage_error(sub, "unknown option %s", name);
		}
	}
	*next = optind;
	return -1;
}

static int client_open(const cli *o, hl_client **out)
{
	int rc = hl_client_new(out, o->url, &o->co);
	if (rc != HL_OK)
		return fail_hl(rc, "connect");
	return 0;
}

static int lock_open(hl_client *c, const char *name, int kind, hl_lock **out)
{
	int rc = hl_lock_new_kind(out, c, kind, name, strlen(name));
	if (rc != HL_OK)
		return fail_hl(rc, "lock \"%s\"", name);
	return 0;
}

/* ---- run ------------------------------------------------------------------
 */
typedef struct watcher {
	int sfd, stop_fd;
	hl_cancel *cancel;
	int sig; /* a signal that stopped the wait */
} watcher;

/* While the lock is awaited: a terminating signal cancels the wait. */
static void *watch_signals(void *arg)
{
	watcher *w = arg;
	for (;;) {
		struct pollfd p[2] = {{w->sfd, POLLIN, 0},
		                      {w->stop_fd, POLLIN, 0}};
		struct signalfd_siginfo si;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (read(w->sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo == SIGCHLD)
			continue;
		w->sig = (int)si.ssi_signo;
		hl_cancel_trigger(w->cancel);
		return NULL;
	}
}

/* The environment for CMD: ours with name=value instead of any name=...
 * (built before fork: the child of a threaded process may only call
 * async-signal-safe functions, and setenv is not one). NULL if out of
 * memory. */
static char **env_with(const char *assignment)
{
	extern char **environ;
	size_t n = 0, i, k = 0;
	size_t nl = (size_t)(strchr(assignment, '=') - assignment) + 1;
	char **env;
	while (environ[n])
		n++;
	if (!(env = malloc((n + 2) * sizeof *env)))
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], assignment, nl) != 0)
			env[k++] = environ[i];
	env[k++] = (char *)assignment;
	env[k] = NULL;
	return env;
}

static int child_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_SOFTWARE;
}

static int cmd_run(cli *o, const char *name, char **cmd)
{
	sigset_t set, old;
	int sfd, rc, acquired = 0, lost_fd = -1, ep[2], st = 0, lost = 0;
	int status, err = 0;
	hl_client *c = NULL;
	hl_lock *l = NULL;
	hl_cancel *cancel = NULL;
	watcher w;
	pthread_t wt;
	pid_t pid;
	int64_t kill_at = -1, t0, lease_end = -1;
	ssize_t n;
	int kind = o->kind < 0 ? HL_LOCK_REENTRANT : o->kind;
	char token_var[48];
	char **env = NULL;

	/* Block the signals we handle before the library starts its
	 * threads, so that they inherit the mask and only signalfd sees
	 * them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0 ||
	    (sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return EXIT_OSERR;
	}
	if ((rc = client_open(o, &c)) != 0)
		return rc;
	if ((rc = lock_open(c, name, kind, &l)) != 0)
		goto out;
	if ((rc = hl_cancel_new(&cancel)) != HL_OK) {
		rc = fail_hl(rc, "cancel");
		goto out;
	}

	memset(&w, 0, sizeof w);
	w.sfd = sfd;
	w.cancel = cancel;
	w.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w.stop_fd < 0 || pthread_create(&wt, NULL, watch_signals, &w)) {
		fprintf(stderr, "%s: cannot start a thread: %s\n", prog,
		        strerror(errno));
		rc = EXIT_OSERR;
		goto out;
	}
	t0 = hl__now_ms();
	rc = hl_lock_try_acquire(&acquired, l, o->wait_ms, o->lease_ms, cancel);
	{
		uint64_t one = 1;
		if (write(w.stop_fd, &one, sizeof one) < 0)
			abort();
		pthread_join(wt, NULL);
		close(w.stop_fd);
	}
	if (rc == HL_EINTERRUPTED && w.sig) {
		fprintf(stderr, "%s: %s while waiting for the lock \"%s\"\n",
		        prog, strsignal(w.sig), name);
		rc = 128 + w.sig;
		goto out;
	}
	if (rc != HL_OK) {
		rc = fail_hl(rc, "acquire \"%s\"", name);
		goto out;
	}
	if (!acquired) {
		fprintf(stderr,
		        "%s: lock \"%s\" not acquired within %.3f s: it is "
		        "held by someone else\n",
		        prog, name, (double)o->wait_ms / 1000.0);
		rc = EXIT_TEMPFAIL;
		goto out;
	}
	if (w.sig) { /* came as the lock did */
		hl_lock_release(NULL, l);
		rc = 128 + w.sig;
		goto out;
	}
	/* Lost: the watchdog found the hold gone (lost_fd); a fixed lease
	 * ends by itself at the latest lease_ms after the acquire was
	 * first sent, which is after t0. */
	if (hl_lock_lost_fd(&lost_fd, l) != HL_OK)
		lost_fd = -1;
	if (o->lease_ms > 0)
		lease_end = t0 + o->lease_ms;
	/* A fenced lock's token, for CMD to hand to what it writes to. */
	if (kind == HL_LOCK_FENCED) {
		int64_t token = 0;
		if ((rc = hl_lock_token(&token, l)) != HL_OK) {
			rc = fail_hl(rc, "the token of \"%s\"", name);
			hl_lock_release(NULL, l);
			goto out;
		}
		snprintf(token_var, sizeof token_var, "HILOCK_TOKEN=%lld",
		         (long long)token);
		if (!(env = env_with(token_var))) {
			fprintf(stderr, "%s: out of memory\n", prog);
			hl_lock_release(NULL, l);
			rc = EXIT_OSERR;
			goto out;
		}
	}

	if (pipe2(ep, O_CLOEXEC) != 0 || (pid = fork()) < 0) {
		fprintf(stderr, "%s: cannot start \"%s\": %s\n", prog, cmd[0],
		        strerror(errno));
		hl_lock_release(NULL, l);
		rc = EXIT_OSERR;
		goto out;
	}
	if (pid == 0) {
		int e;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (env)
			execvpe(cmd[0], cmd, env);
		else
			execvp(cmd[0], cmd);
		e = errno;
		if (write(ep[1], &e, sizeof e) < 0)
			_exit(EXIT_NOT_FOUND);
		_exit(EXIT_NOT_FOUND);
	}
	close(ep[1]);
	while ((n = read(ep[0], &err, sizeof err)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n == (ssize_t)sizeof err) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		fprintf(stderr, "%s: cannot run \"%s\": %s\n", prog, cmd[0],
		        strerror(err));
		hl_lock_release(NULL, l);
		rc = err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
		goto out;
	}

	for (;;) {
		struct pollfd p[2] = {{sfd, POLLIN, 0},
		                      {lost ? -1 : lost_fd, POLLIN, 0}};
		int timeout = -1;
		struct signalfd_siginfo si;
		pid_t got;
		int64_t next = kill_at >= 0 ? kill_at : lost ? -1 : lease_end;
		if (next >= 0) {
			int64_t left = next - hl__now_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", prog,
			        strerror(errno));
			kill(pid, SIGKILL);
		}
		if (kill_at >= 0 && hl__now_ms() >= kill_at) {
			fprintf(stderr,
			        "%s: \"%s\" did not exit %.3f s after SIGTERM: "
			        "sending SIGKILL\n",
			        prog, cmd[0], (double)o->grace_ms / 1000.0);
			kill(pid, SIGKILL);
			kill_at = -1;
		}
		if (!lost && lease_end >= 0 && hl__now_ms() >= lease_end) {
			lost = 1;
			fprintf(stderr,
			        "%s: the lease of the lock \"%s\" (%.3f s) ran "
			        "out while \"%s\" ran: sending SIGTERM to pid "
			        "%d\n",
			        prog, name, (double)o->lease_ms / 1000.0,
			        cmd[0], (int)pid);
			kill(pid, SIGTERM);
			kill_at = hl__now_ms() + o->grace_ms;
		}
		if (p[1].revents && !lost) {
			lost = 1;
			fprintf(stderr,
			        "%s: lost the lock \"%s\" while \"%s\" ran "
			        "(its "
			        "key was deleted or taken over, or not renewed "
			        "in time): sending SIGTERM to pid %d\n",
			        prog, name, cmd[0], (int)pid);
			kill(pid, SIGTERM);
			kill_at = hl__now_ms() + o->grace_ms;
		}
		while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			/* From the terminal (SI_KERNEL) the child, in
			 * the same foreground process group, got it
			 * too; pass on only those sent to hilock. */
			if (si.ssi_code != SI_KERNEL)
				kill(pid, (int)si.ssi_signo);
		}
		got = waitpid(pid, &st, WNOHANG);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR) {
			st = EXIT_SOFTWARE << 8;
			break;
		}
	}
	status = child_status(st);

	rc = hl_lock_release(NULL, l);
	if (lost) {
		rc = EXIT_LOST;
	} else if (rc == HL_ELOST) {
		fprintf(stderr,
		        "%s: lost the lock \"%s\" before \"%s\" ended (its "
		        "status was %d)\n",
		        prog, name, cmd[0], status);
		rc = EXIT_LOST;
	} else {
		if (rc != HL_OK)
			fail_hl(rc, "release \"%s\" (its lease will end it)",
			        name);
		rc = status;
	}
out:
	free(env);
	hl_lock_free(l);
	hl_cancel_free(cancel);
	hl_client_free(c);
	return rc;
}

/* ---- raw commands for inspect, list and unlock (internal API) ----------- */
static void bound_for(hl_bound *b, hl_client *c)
{
	hl__bound_init(b, c,
	               hl__deadline(c->conf.connect_timeout_ms +
	                            2 * c->conf.command_timeout_ms + 1000),
	               NULL, 0);
}

/* A command on the key argv[1] (at most 6 arguments; lens NULL for C
 * strings), routed and retried as the library's own queries. An error
 * reply becomes HL_EREDIS. */
static int query(hl_client *c, hl_reply **out, int argc, const char **argv,
                 const size_t *lens)
{
	size_t l[6];
	int i, rc;
	for (i = 0; i < argc && i < 6; i++)
		l[i] = lens ? lens[i] : strlen(argv[i]);
	rc = hl__command(c, out, argc, argv, l, HL_CMD_IDEMPOTENT, NULL, NULL);
	if (rc == HL_OK && hl__reply_type(*out) == HL_REPLY_ERROR) {
		rc = hl__fail(HL_EREDIS, "%s: %s", argv[0],
		              hl__reply_str(*out));
		hl__reply_free(*out);
		*out = NULL;
	}
	return rc;
}

/* A command on one key (key_len bytes) with up to 3 C-string arguments
 * after it. */
static int query_key(hl_client *c, hl_reply **out, const char *cmd,
                     const char *key, size_t key_len, const char *a1,
                     const char *a2, const char *a3)
{
	const char *argv[5] = {cmd, key, a1, a2, a3};
	size_t lens[5] = {strlen(cmd), key_len, a1 ? strlen(a1) : 0,
	                  a2 ? strlen(a2) : 0, a3 ? strlen(a3) : 0};
	return query(c, out, a1 ? a2 ? a3 ? 5 : 4 : 3 : 2, argv, lens);
}

/* The names the library derives from NAME for a kind (PROTOCOL 0.2), from
 * a handle of that kind: its channel, and its other keys (fair: the queue
 * redisson_lock_queue:{NAME} and the deadlines redisson_lock_timeout:{NAME};
 * fenced: the token redisson_lock_token:{NAME}). */
#define CHANNEL(l) (l)->channel, (l)->channel_len
#define AUX(l, i)  (l)->aux[i], (l)->aux_len[i]

/* The kind Redis shows (PROTOCOL 2-4): a mode field makes a read-write
 * lock, the half its mode names; a fair queue a fair lock; else RLock's
 * layout, which reentrant, spin, fenced and non-reentrant locks share. */
static int kind_shown(const char *mode, long long queued)
{
	if (mode[0])
		return strcmp(mode, "write") == 0 ? HL_LOCK_WRITE
		                                  : HL_LOCK_READ;
	return queued > 0 ? HL_LOCK_FAIR : HL_LOCK_REENTRANT;
}

static int is_fair_kind(int kind)
{
	return kind == HL_LOCK_FAIR || kind == HL_LOCK_FAIR_NONREENTRANT;
}

static int is_rw_kind(int kind)
{
	return kind == HL_LOCK_READ || kind == HL_LOCK_WRITE;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The clients subscribed to channel, on the node where the library
 * subscribes to it (the master; the master of its slot in a cluster,
 * sharded on Redis 7): PUBSUB NUMSUB or SHARDNUMSUB. */
static int subscribers(hl_client *c, const char *channel, size_t len,
                       long long *out)
{
	hl_conn *conn = NULL;
	hl_reply *r = NULL;
	hl_bound b;
	hl_addr node;
	uint64_t epoch;
	int rc, sharded, cluster;
	const char *argv[3];
	char *chan = malloc(len + 1);

	if (!chan)
		return hl__fail(HL_ENOMEM, "out of memory");
	/* hl__router_one takes C strings */
	memcpy(chan, channel, len);
	chan[len] = 0;
	bound_for(&b, c);
	pthread_mutex_lock(&c->topo_mu);
	cluster = c->conf.url.topology == HL_TOPO_CLUSTER;
	sharded = cluster && c->sharded;
	pthread_mutex_unlock(&c->topo_mu);
	if (cluster)
		rc = hl__router_node_for_key(c, chan, len, &node, &epoch, &b);
	else {
		hl__router_master(c, &node, &epoch);
		rc = HL_OK;
	}
	if (rc == HL_OK)
		rc = hl__router_connect(c, &node, &conn, &b);
	argv[0] = "PUBSUB";
	argv[1] = sharded ? "SHARDNUMSUB" : "NUMSUB";
	argv[2] = chan;
	if (rc == HL_OK)
		rc = hl__router_one(c, conn, &r, 3, argv, &b);
	*out = -1;
	if (rc == HL_OK && hl__reply_len(r) == 2)
		*out = hl__reply_int(hl__reply_at(r, 1));
	else if (rc == HL_OK)
		rc = hl__fail(HL_EPROTOCOL, "PUBSUB %s %s: unexpected reply",
		              argv[1], chan);
	hl__reply_free(r);
	if (conn)
		hl__conn_free(conn);
	free(chan);
	return rc;
}

/* The score of member in a ZRANGE ... WITHSCORES reply; 0 if absent. */
static int zscore_in(const hl_reply *z, const char *member, size_t len,
                     double *out)
{
	size_t i;
	for (i = 0; i + 1 < hl__reply_len(z); i += 2) {
		const hl_reply *m = hl__reply_at(z, i);
		if (hl__reply_strlen(m) == len &&
		    memcmp(hl__reply_str(m), member, len) == 0) {
			*out = strtod(hl__reply_str(hl__reply_at(z, i + 1)),
			              NULL);
			return 1;
		}
	}
	return 0;
}

static void warn(const char *fmt, ...) HL_PRINTF(1, 2);
static void warn(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: warning: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* What inspect reads of the lock NAME. */
typedef struct seen {
	char type[32];       /* TYPE NAME: hash, none, another type */
	char mode[16];       /* a read-write lock's mode field; "" if none */
	hl_reply *fields;    /* HGETALL NAME (a hash) */
	long long ttl;       /* PTTL NAME */
	hl_reply *queue;     /* LRANGE of the fair queue */
	hl_reply *deadlines; /* ZRANGE of the fair deadlines, WITHSCORES */
	hl_reply *token;     /* GET of the fenced token */
} seen;

static int inspect_read(hl_client *c, const char *name, hl_lock *fair,
                        hl_lock *fenced, seen *s)
{
	hl_reply *r = NULL;
	size_t i, nl = strlen(name);
	int rc;

	if ((rc = query_key(c, &r, "TYPE", name, nl, NULL, NULL, NULL)) !=
	    HL_OK)
		return fail_hl(rc, "TYPE \"%s\"", name);
	snprintf(s->type, sizeof s->type, "%s", hl__reply_str(r));
	hl__reply_free(r);
	if (strcmp(s->type, "hash") == 0) {
		if ((rc = query_key(c, &s->fields, "HGETALL", name, nl, NULL,
		                    NULL, NULL)) != HL_OK)
			return fail_hl(rc, "HGETALL \"%s\"", name);
		for (i = 0; i + 1 < hl__reply_len(s->fields); i += 2)
			if (strcmp(hl__reply_str(hl__reply_at(s->fields, i)),
			           "mode") == 0)
				snprintf(s->mode, sizeof s->mode, "%s",
				         hl__reply_str(hl__reply_at(s->fields,
				                                    i + 1)));
		if ((rc = query_key(c, &r, "PTTL", name, nl, NULL, NULL,
		                    NULL)) != HL_OK)
			return fail_hl(rc, "PTTL \"%s\"", name);
		s->ttl = hl__reply_int(r);
		hl__reply_free(r);
	}
	/* A fair lock's queue (first in line first) and its waiters' deadlines
	 * (wall-clock ms; PROTOCOL 3); read one after the other, so a
	 * waiter that joins between the two shows no deadline. */
	if ((rc = query_key(c, &s->queue, "LRANGE", AUX(fair, 0), "0", "-1",
	                    NULL)) != HL_OK)
		return fail_hl(rc, "LRANGE %.*s", (int)fair->aux_len[0],
		               fair->aux[0]);
	if (hl__reply_len(s->queue) > 0 &&
	    (rc = query_key(c, &s->deadlines, "ZRANGE", AUX(fair, 1), "0", "-1",
	                    "WITHSCORES")) != HL_OK)
		return fail_hl(rc, "ZRANGE %.*s", (int)fair->aux_len[1],
		               fair->aux[1]);
	if ((rc = query_key(c, &s->token, "GET", AUX(fenced, 0), NULL, NULL,
	                    NULL)) != HL_OK)
		return fail_hl(rc, "GET %.*s", (int)fenced->aux_len[0],
		               fenced->aux[0]);
	return 0;
}

/* The kind line, and warnings where --kind and Redis disagree. */
static void inspect_kind(const cli *o, const char *name, const seen *s,
                         int kind, size_t queued)
{
	if (o->kind >= 0 && s->mode[0] && !is_rw_kind(o->kind))
		warn("\"%s\" is a read-write lock (mode %s), not a %s lock",
		     name, s->mode, hl_lock_kind_name(o->kind));
	if (o->kind >= 0 && !s->mode[0] && is_rw_kind(o->kind) &&
	    strcmp(s->type, "hash") == 0)
		warn("\"%s\" has no mode field: not a read-write lock", name);
	if (o->kind >= 0 && queued > 0 && !is_fair_kind(o->kind))
		warn("\"%s\" has a fair lock's queue (%zu waiting), not a %s "
		     "lock",
		     name, queued, hl_lock_kind_name(o->kind));

	if (strcmp(s->type, "hash") != 0 && strcmp(s->type, "none") != 0)
		printf("kind: %s (not a lock)\n", s->type);
	else if (s->mode[0])
		printf("kind: rwlock (mode %s)\n", s->mode);
	else if (strcmp(s->type, "none") == 0 && queued == 0)
		printf("kind: free\n");
	else if (kind == HL_LOCK_REENTRANT || is_rw_kind(kind))
		printf("kind: lock\n");
	else
		printf("kind: %s lock\n", hl_lock_kind_name(kind));
}

static void inspect_holders(const seen *s)
{
	size_t i, nholders = 0, nreaders = 0;
	const hl_reply *f = s->fields;
	for (i = 0; i + 1 < hl__reply_len(f); i += 2) {
		const char *k = hl__reply_str(hl__reply_at(f, i));
		size_t kl = hl__reply_strlen(hl__reply_at(f, i));
		if (strcmp(k, "mode") == 0)
			continue;
		nholders++;
		if (!(kl > 6 && strcmp(k + kl - 6, ":write") == 0))
			nreaders++;
	}
	printf("ttl_ms: %lld\n", s->ttl);
	printf("holders: %zu\n", nholders);
	for (i = 0; i + 1 < hl__reply_len(f); i += 2) {
		const char *k = hl__reply_str(hl__reply_at(f, i));
		size_t kl = hl__reply_strlen(hl__reply_at(f, i));
		if (strcmp(k, "mode") == 0)
			continue;
		printf("holder: %s count=%s%s\n", k,
		       hl__reply_str(hl__reply_at(f, i + 1)),
		       kl > 6 && strcmp(k + kl - 6, ":write") == 0 ? " write"
		                                                   : "");
	}
	/* an rwlock's readers: its fields but mode and the write hold (a
	 * writer's own read holds count: it is a reader too) */
	if (s->mode[0])
		printf("readers: %zu\n", nreaders);
}

static int cmd_inspect(cli *o, const char *name)
{
	hl_client *c = NULL;
	hl_lock *plain = NULL, *fair = NULL, *rw = NULL, *fenced = NULL;
	seen s;
	int rc, entered = 0, kind;
	long long waiters = -1;
	size_t i, queued;
	int64_t now;

	memset(&s, 0, sizeof s);
	s.ttl = -2;
	if ((rc = client_open(o, &c)) != 0)
		return rc;
	if ((rc = lock_open(c, name, HL_LOCK_REENTRANT, &plain)) != 0 ||
	    (rc = lock_open(c, name, HL_LOCK_FAIR, &fair)) != 0 ||
	    (rc = lock_open(c, name, HL_LOCK_READ, &rw)) != 0 ||
	    (rc = lock_open(c, name, HL_LOCK_FENCED, &fenced)) != 0)
		goto out;
	if ((rc = hl__client_enter(c)) != HL_OK) {
		rc = fail_hl(rc, "inspect");
		goto out;
	}
	entered = 1;
	if ((rc = inspect_read(c, name, fair, fenced, &s)) != 0)
		goto out;
	queued = hl__reply_len(s.queue);
	kind = o->kind >= 0 ? o->kind : kind_shown(s.mode, (long long)queued);

	printf("name: %s\n", name);
	inspect_kind(o, name, &s, kind, queued);
	if (strcmp(s.type, "hash") == 0 ||
	    (strcmp(s.type, "none") == 0 && queued > 0))
		inspect_holders(&s);
	if (hl__reply_type(s.token) == HL_REPLY_STRING)
		printf("token: %s\n", hl__reply_str(s.token));
	now = wall_ms();
	for (i = 0; i < queued; i++) {
		const hl_reply *q = hl__reply_at(s.queue, i);
		double deadline;
		printf("queued: %s", hl__reply_str(q));
		if (zscore_in(s.deadlines, hl__reply_str(q),
		              hl__reply_strlen(q), &deadline))
			printf(" deadline_in_ms=%lld\n",
			       (long long)llround(deadline - (double)now));
		else
			printf(" deadline_in_ms=none\n");
	}

	/* Waiters: a fair lock's are its queue (each listens on a channel
	 * of its own); a spin lock's poll and cannot be counted; the
	 * others' are the subscribers of the kind's channel. */
	if (is_fair_kind(kind))
		waiters = (long long)queued;
	else if (kind != HL_LOCK_SPIN) {
		hl_lock *l = is_rw_kind(kind) ? rw : plain;
		if ((rc = subscribers(c, CHANNEL(l), &waiters)) != HL_OK) {
			rc = fail_hl(rc, "PUBSUB NUMSUB %.*s",
			             (int)l->channel_len, l->channel);
			goto out;
		}
	}
	printf("waiters: %lld\n", waiters);
	rc = fflush(stdout) == 0 ? 0 : EXIT_OSERR;
out:
	hl__reply_free(s.fields);
	hl__reply_free(s.queue);
	hl__reply_free(s.deadlines);
	hl__reply_free(s.token);
	if (entered)
		hl__client_leave(c);
	hl_lock_free(plain);
	hl_lock_free(fair);
	hl_lock_free(rw);
	hl_lock_free(fenced);
	hl_client_free(c);
	return rc;
}

/* SCAN one node for hashes matching pattern; prints them. */
static int list_node(hl_client *c, const hl_addr *node, const char *pattern)
{
	hl_conn *conn = NULL;
	hl_bound b;
	char cursor[32] = "0", where[300];
	int rc;

	bound_for(&b, c);
	if ((rc = hl__router_connect(c, node, &conn, &b)) != HL_OK)
		return fail_hl(rc, "connect to %s",
		               hl__addr_str(node, where, sizeof where));
	do {
		const char *argv[8] = {"SCAN",  cursor, "MATCH", pattern,
		                       "COUNT", "1000", "TYPE",  "hash"};
		hl_reply *r = NULL;
		const hl_reply *keys;
		size_t i;
		bound_for(&b, c);
		if ((rc = hl__router_one(c, conn, &r, 8, argv, &b)) != HL_OK ||
		    hl__reply_type(r) != HL_REPLY_ARRAY ||
		    hl__reply_len(r) != 2) {
			if (rc == HL_OK)
				rc = hl__fail(HL_EREDIS, "%s",
				              hl__reply_type(r) ==
				                              HL_REPLY_ERROR
				                      ? hl__reply_str(r)
				                      : "unexpected reply");
			hl__reply_free(r);
			hl__conn_free(conn);
			return fail_hl(rc, "SCAN on %s",
			               hl__addr_str(node, where, sizeof where));
		}
		snprintf(cursor, sizeof cursor, "%s",
		         hl__reply_str(hl__reply_at(r, 0)));
		keys = hl__reply_at(r, 1);
		for (i = 0; i < hl__reply_len(keys); i++) {
			const hl_reply *k = hl__reply_at(keys, i);
			const char *kv = hl__reply_str(k);
			size_t kl = hl__reply_strlen(k);
			const char *a0[2] = {"HLEN", kv},
			           *a1[3] = {"HGET", kv, "mode"},
			           *a2[2] = {"PTTL", kv},
			           *a3[2] = {"EXISTS", ""};
			const char **argvs[4] = {a0, a1, a2, a3};
			size_t l0[2] = {4, kl}, l1[3] = {4, kl, 4},
			       l2[2] = {4, kl}, l3[2] = {6, 0};
			const size_t *lensv[4] = {l0, l1, l2, l3};
			int argcs[4] = {2, 3, 2, 2};
			hl_reply *rs[4] = {NULL, NULL, NULL, NULL};
			enum hl_sent sent;
			long long holders;
			int j, mode, nc = 3;
			hl_lock *fair = NULL;
			/* Its fair queue, if it has one (the same slot as the
			 * name, so on this node; a name whose derived keys
			 * would be elsewhere in a cluster is not a lock the
			 * library can take, and gets no fair check). */
			rc = hl_lock_new_kind(&fair, c, HL_LOCK_FAIR, kv, kl);
			if (rc == HL_ENOMEM) {
				hl__reply_free(r);
				hl__conn_free(conn);
				return fail_hl(rc, "list");
			}
			if (rc == HL_OK) {
				a3[1] = fair->aux[0];
				l3[1] = fair->aux_len[0];
				nc = 4;
			}
			bound_for(&b, c);
			rc = hl__conn_roundtrip(conn, nc, argcs, argvs, lensv,
			                        rs, &sent, &b,
			                        c->conf.command_timeout_ms);
			hl_lock_free(fair);
			if (rc != HL_OK) {
				for (j = 0; j < 4; j++)
					hl__reply_free(rs[j]);
				hl__reply_free(r);
				hl__conn_free(conn);
				return fail_hl(rc, "HLEN/PTTL on %s",
				               hl__addr_str(node, where,
				                            sizeof where));
			}
			holders = hl__reply_int(rs[0]);
			mode = hl__reply_type(rs[1]) == HL_REPLY_STRING;
			if (holders == 0 && hl__reply_int(rs[2]) == -2) {
				/* deleted since SCAN saw it */
			} else {
				fwrite(kv, 1, kl, stdout);
				printf("\t%lld\t%lld\t%s%s\n",
				       holders - (mode ? 1 : 0),
				       hl__reply_int(rs[2]),
				       mode                       ? "rwlock:"
				       : hl__reply_int(rs[3]) > 0 ? "fairlock"
				                                  : "lock",
				       mode ? hl__reply_str(rs[1]) : "");
			}
			for (j = 0; j < 4; j++)
				hl__reply_free(rs[j]);
		}
		hl__reply_free(r);
	} while (strcmp(cursor, "0") != 0);
	hl__conn_free(conn);
	return 0;
}

static int cmd_list(cli *o, const char *pattern)
{
	hl_client *c = NULL;
	hl_addr *nodes = NULL;
	int n = 0, i, rc;
	uint64_t epoch;

	if ((rc = client_open(o, &c)) != 0)
		return rc;
	if ((rc = hl__client_enter(c)) != HL_OK) {
		rc = fail_hl(rc, "list");
		hl_client_free(c);
		return rc;
	}
	/* Every master: in a cluster the known masters (read under the
	 * topology mutex; the client loaded the slot map when it
	 * connected), else the master. */
	pthread_mutex_lock(&c->topo_mu);
	if (c->conf.url.topology == HL_TOPO_CLUSTER && c->ncnodes > 0) {
		nodes = calloc((size_t)c->ncnodes, sizeof *nodes);
		if (nodes)
			for (n = 0; n < c->ncnodes; n++)
				nodes[n] = c->cnodes[n].addr;
	}
	pthread_mutex_unlock(&c->topo_mu);
	if (!nodes) {
		nodes = calloc(1, sizeof *nodes);
		if (!nodes) {
			rc = EXIT_OSERR;
			goto out;
		}
		hl__router_master(c, &nodes[0], &epoch);
		n = 1;
	}
	rc = 0;
	for (i = 0; i < n && rc == 0; i++)
		rc = list_node(c, &nodes[i], pattern);
	if (rc == 0 && fflush(stdout) != 0)
		rc = EXIT_OSERR;
out:
	free(nodes);
	hl__client_leave(c);
	hl_client_free(c);
	return rc;
}

/* The type of the key NAME and, when kind is not NULL, the kind Redis shows
 * (kind_shown: HGET NAME mode, EXISTS of the fair queue). */
static int unlock_read(hl_client *c, const char *name, hl_lock *fair,
                       char *type, size_t type_len, int *kind)
{
	hl_reply *r = NULL;
	size_t nl = strlen(name);
	char mode[16] = "";
	long long queued;
	int rc;

	if ((rc = query_key(c, &r, "TYPE", name, nl, NULL, NULL, NULL)) !=
	    HL_OK)
		return fail_hl(rc, "TYPE \"%s\"", name);
	snprintf(type, type_len, "%s", hl__reply_str(r));
	hl__reply_free(r);
	if (!kind)
		return 0;
	if (strcmp(type, "hash") == 0) {
		if ((rc = query_key(c, &r, "HGET", name, nl, "mode", NULL,
		                    NULL)) != HL_OK)
			return fail_hl(rc, "HGET \"%s\" mode", name);
		snprintf(mode, sizeof mode, "%s", hl__reply_str(r));
		hl__reply_free(r);
	}
	if ((rc = query_key(c, &r, "EXISTS", AUX(fair, 0), NULL, NULL, NULL)) !=
	    HL_OK)
		return fail_hl(rc, "EXISTS %.*s", (int)fair->aux_len[0],
		               fair->aux[0]);
	queued = hl__reply_int(r);
	hl__reply_free(r);
	*kind = kind_shown(mode, queued);
	return 0;
}

static int cmd_unlock(cli *o, const char *name)
{
	hl_client *c = NULL;
	hl_lock *l = NULL, *fair = NULL;
	int rc, existed = 0, entered = 0, tries, kind = o->kind;
	char type[32];

	if ((rc = client_open(o, &c)) != 0)
		return rc;
	if ((rc = lock_open(c, name, HL_LOCK_FAIR, &fair)) != 0)
		goto out;
	if ((rc = hl__client_enter(c)) != HL_OK) {
		rc = fail_hl(rc, "unlock --force");
		goto out;
	}
	entered = 1;
	for (tries = 1;; tries++) {
		if ((rc = unlock_read(c, name, fair, type, sizeof type,
		                      o->kind < 0 ? &kind : NULL)) != 0)
			goto out;
		if (strcmp(type, "hash") != 0 && strcmp(type, "none") != 0) {
			printf("\"%s\" is a %s, not a lock: left alone\n", name,
			       type);
			rc = EXIT_NOT_LOCKED;
			goto out;
		}
		/* Through the library's own forceUnlock for the kind: its
		 * keys, its channel, its message (PROTOCOL 2-6). */
		if ((rc = lock_open(c, name, kind, &l)) != 0)
			goto out;
		if ((rc = hl_lock_force_unlock(&existed, l)) != HL_OK) {
			rc = fail_hl(rc, "unlock --force \"%s\"", name);
			goto out;
		}
		/* A half of a read-write lock deletes it only in its own
		 * mode: if the mode turned between the read and the delete,
		 * read the kind again (a few times: it may keep turning). */
		if (existed || o->kind >= 0 || !is_rw_kind(kind) || tries == 3)
			break;
		hl_lock_free(l);
		l = NULL;
	}
	if (existed)
		printf("unlocked \"%s\" (it was held: a %s lock)\n", name,
		       hl_lock_kind_name(kind));
	else if (is_rw_kind(kind) && strcmp(type, "hash") == 0)
		printf("\"%s\" was not locked in %s mode\n", name,
		       hl_lock_kind_name(kind));
	else
		printf("\"%s\" was not locked\n", name);
	rc = existed ? 0 : EXIT_NOT_LOCKED;
out:
	if (entered)
		hl__client_leave(c);
	hl_lock_free(l);
	hl_lock_free(fair);
	hl_client_free(c);
	return rc;
}

/* ---- main -----------------------------------------------------------------
 */
int main(int argc, char **argv)
{
	cli o;
	int rc, next = 0, rest_argc;
	char **rest;
	const char *sub, *usage;
	const char *env;

	memset(&o, 0, sizeof o);
	hl_client_options_init(&o.co, HL_CLIENT_OPTIONS_VERSION);
	o.wait_ms = -1;
	o.lease_ms = -1;
	o.grace_ms = 10000;
	o.kind = -1;
	env = getenv("HILOCK_URL");
	o.url = env && *env ? env : DEFAULT_URL;
	env = getenv("HILOCK_SENTINEL_PASSWORD");
	if (env && *env)
		o.co.sentinel_password = env;

	if ((rc = parse_opts(&o, argc, argv, NULL, &next)) >= 0)
		return rc;
	if (next >= argc)
		return usage_error(NULL, "no command given");
	sub = argv[next];
	if (strcmp(sub, "run") == 0)
		usage = usage_run;
	else if (strcmp(sub, "inspect") == 0)
		usage = usage_inspect;
	else if (strcmp(sub, "list") == 0)
		usage = usage_list;
	else if (strcmp(sub, "unlock") == 0)
		usage = usage_unlock;
	else if (strcmp(sub, "help") == 0) {
		fputs(usage_main, stdout);
		return 0;
	} else
		return usage_error(NULL, "unknown command \"%s\"", sub);
	rest_argc = argc - next;
	rest = argv + next;
	if ((rc = parse_opts(&o, rest_argc, rest, usage, &next)) >= 0)
		return rc;
	rest += next;
	rest_argc -= next;

	if (usage == usage_run) {
		if (rest_argc < 1)
			return usage_error(usage, "run: no lock name");
		if (rest_argc >= 2 && strcmp(rest[1], "--") == 0)
			rest_argc--, rest[1] = rest[0], rest++;
		if (rest_argc < 2)
			return usage_error(usage, "run: no command after --");
		return cmd_run(&o, rest[0], rest + 1);
	}
	if (usage == usage_list) {
		if (rest_argc > 1)
			return usage_error(usage, "list: one pattern at most");
		return cmd_list(&o, rest_argc ? rest[0] : "*");
	}
	if (rest_argc != 1)
		return usage_error(usage, "%s: exactly one lock name", sub);
	if (usage == usage_unlock) {
		if (!o.force)
			return usage_error(usage, "unlock needs --force (it "
			                          "deletes the lock whoever "
			                          "holds it)");
		return cmd_unlock(&o, rest[0]);
	}
	return cmd_inspect(&o, rest[0]);
}
