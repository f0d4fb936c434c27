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
 * It is a consumer of the library like any program: it includes the public
 * header only and links the shared library, whose exports are the public
 * API, so the build proves it. inspect, list and unlock send raw commands
 * (TYPE, HGETALL, PTTL, LRANGE, GET, PUBSUB NUMSUB, SCAN...) through
 * hl_client_command(), which sends them where the library sends its own
 * (the master; in a cluster the master of a key's or a channel's slot),
 * and SCAN every master through hl_client_masters() and
 * hl_client_command_node(). The names a kind derives from NAME (a lock's
 * channel, a fair lock's queue, a Bloom filter's config...) are
 * Redisson's, written down in PROTOCOL.md and GRID-PROTOCOL.md.
 */
#include <hilock.h>

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

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

#if defined(__GNUC__)
#define HL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HL_PRINTF(a, b)
#endif

/* The longest duration the library takes (2^40 ms). */
#define TIME_MAX ((int64_t)1 << 40)

/* The grid's kinds inspect knows (their numbers are the library's
 * HL_KIND_*; named here so that the tool needs no kind the library it runs
 * with may lack). --kind K: lock kinds are 0..; these are grid kinds. */
enum {
	K_BUCKET = 1,
	K_ATOMIC_LONG = 2,
	K_ATOMIC_DOUBLE = 3,
	K_BIT_SET = 4,
	K_LONG_ADDER = 5,
	K_DOUBLE_ADDER = 6,
	K_BLOOM_FILTER = 7,
	K_RATE_LIMITER = 8,
	K_MAP = 9,
	K_SET = 10,
	K_SCORED_SORTED_SET = 11,
	K_SORTED_SET = 12,
	K_LIST = 13,
	K_QUEUE = 14,
	K_DEQUE = 15,
	K_BLOCKING_QUEUE = 16,
	K_BLOCKING_DEQUE = 17,
	K_BOUNDED_BLOCKING_QUEUE = 18,
	K_DELAYED_QUEUE = 19,
	K_PRIORITY_QUEUE = 20,
	K_PRIORITY_DEQUE = 21,
	K_PRIORITY_BLOCKING_QUEUE = 22,
	K_PRIORITY_BLOCKING_DEQUE = 23,
	K_GRID_MAX = 23
};

static const char *const grid_kinds[K_GRID_MAX + 1] = {
        NULL,
        "bucket",
        "atomic_long",
        "atomic_double",
        "bit_set",
        "long_adder",
        "double_adder",
        "bloom_filter",
        "rate_limiter",
        "map",
        "set",
        "scored_sorted_set",
        "sorted_set",
        "list",
        "queue",
        "deque",
        "blocking_queue",
        "blocking_deque",
        "bounded_blocking_queue",
        "delayed_queue",
        "priority_queue",
        "priority_deque",
        "priority_blocking_queue",
        "priority_blocking_deque"};

static const char *grid_kind_name(int kind)
{
	return kind > 0 && kind <= K_GRID_MAX ? grid_kinds[kind] : "unknown";
}

typedef struct cli {
	const char *url;
	hl_client_options co;
	int64_t wait_ms;  /* -1: forever */
	int64_t lease_ms; /* -1: the watchdog */
	int64_t grace_ms;
	int force;
	int kind; /* --kind: HL_LOCK_*; -1: not given (or a grid kind) */
	int grid; /* --kind: a grid kind K_*; 0: none */
} cli;

static const char *prog = "hilock";

/* ---- help ---------------------------------------------------------------- */
static const char usage_main[] =
        "Usage: hilock [OPTIONS] COMMAND [ARGS...]\n"
        "\n"
        "Redisson-compatible distributed locks on Redis, from the shell;\n"
        "a look at the data grid's objects.\n"
        "\n"
        "Commands:\n"
        "  run [--kind K] [--wait S] [--lease S] [--grace S] NAME -- CMD "
        "[ARGS...]\n"
        "                 run CMD while holding the lock NAME\n"
        "  inspect [--kind K] NAME\n"
        "                 show a lock: kind, holders, TTL, waiters, a fair\n"
        "                 lock's queue, a fenced lock's token; or a grid\n"
        "                 object: bucket, atomic_long, atomic_double,\n"
        "                 bit_set, bloom_filter, rate_limiter, long_adder,\n"
        "                 double_adder, map, set, scored_sorted_set,\n"
        "                 sorted_set, list, queue, deque\n"
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
        "Show the lock or grid object NAME, one \"key: value\" line each\n"
        "(it only reads). A lock:\n"
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
        "  one \"in line: <client id> ticket=T deadline_in_ms=N\" line per\n"
        "    hilock client in the default lock's line (hilock_line:{NAME}),\n"
        "    first in line first (N: when its place lapses unless renewed,\n"
        "    on Redis's clock);\n"
        "  waiters: a fair lock's queue length; else the clients subscribed\n"
        "    to the lock's channel (redisson_rwlock:{NAME} for an rwlock,\n"
        "    redisson_lock__channel:{NAME} else; a hilock client stays\n"
        "    subscribed for about 1 s after its last waiter left), and the\n"
        "    live places of the default lock's line (its first also\n"
        "    listens to the channel: counted once); -1 for --kind spin,\n"
        "    whose waiters poll.\n"
        "A grid object (Redisson's keys), after name and kind:\n"
        "  bucket: size (bytes), value (UTF-8 text) or value_hex, the first\n"
        "    1024 bytes (value_shown says so when there are more), ttl_ms;\n"
        "  atomic_long, atomic_double: value (0 when absent), ttl_ms;\n"
        "  bit_set: cardinality (bits set), length (the highest set bit\n"
        "    + 1), size (bits: the string's bytes * 8), ttl_ms;\n"
        "  bloom_filter: config ({NAME}:config), initialized, size,\n"
        "    hash_iterations, expected_insertions, false_probability,\n"
        "    bits_set, count (Redisson's estimate), ttl_ms (the bitmap's);\n"
        "  rate_limiter: initialized, rate, interval_ms, type (overall or\n"
        "    per_client), keep_alive_ms, ttl_ms; overall: permits_left\n"
        "    ({NAME}:value; none before the first acquire), entries (grants\n"
        "    in {NAME}:permits), in_window (their permits within the last\n"
        "    interval, by this machine's clock); per_client: one \"client:\n"
        "    <id> permits_left=N entries=N in_window=N\" line per client;\n"
        "  long_adder, double_adder: nothing is stored in Redis (each\n"
        "    client keeps its part of the sum); listeners: the clients\n"
        "    subscribed to {NAME}:adder-topic;\n"
        "  map, set, scored_sorted_set, list, queue, deque, sorted_set:\n"
        "    size, ttl_ms, then the first 10 elements: \"entry: KEY =\n"
        "    VALUE\" (a map's, in HSCAN order), \"member: M\" (a set's, in\n"
        "    SSCAN order), \"member: M score=S\" (a scored sorted set's,\n"
        "    lowest score first), \"item: V\" (a list's, head first);\n"
        "    elements that are not UTF-8 text are hex (\"hex:...\");\n"
        "    shown says how many of size were shown. A sorted_set adds\n"
        "    comparator (redisson_sortedset_comparator:{NAME}; none is\n"
        "    natural order) and locked (redisson_sortedset_lock:{NAME}).\n"
        "  blocking_queue, blocking_deque, bounded_blocking_queue: as a\n"
        "    list, with head and tail before the items, then hilock's\n"
        "    takes: takers_key (hilock_consumers:<base>), takes, one\n"
        "    \"take: <id> lease_in_ms=N in_flight=K\" line per take (N: when\n"
        "    its lease ends, on Redis's clock; below 0: a dead taker whose\n"
        "    elements the next take gives back; K: the elements its\n"
        "    in-flight list holds; \" end=tail\" for a take from the tail),\n"
        "    in_flight (their sum); a bounded queue adds capacity_key\n"
        "    (redisson_bqs:{NAME}), remaining_capacity, capacity\n"
        "    (remaining + size + in flight), capacity_channel and\n"
        "    capacity_listeners (its subscribers: waiting puts); then\n"
        "    given_back_key (hilock_given_back:<base>) and\n"
        "    given_back_recently: takes whose elements went back to the\n"
        "    queue after their lease ended, in the last 10 minutes\n"
        "    (consumers killed or cut off);\n"
        "  delayed_queue (NAME is the destination queue): destination,\n"
        "    destination_size, timeout_key\n"
        "    (redisson_delay_queue_timeout:{NAME}), delayed (its count),\n"
        "    next_due_in_ms (on Redis's clock; below 0: due, not moved\n"
        "    yet), list_key (redisson_delay_queue:{NAME}), list_size,\n"
        "    channel (redisson_delay_queue_channel:{NAME}), movers (its\n"
        "    subscribers: the clients moving elements), then \"element: V\n"
        "    due_in_ms=N\" for the first 10 due, and shown;\n"
        "  priority_queue, priority_deque, priority_blocking_queue,\n"
        "    priority_blocking_deque: as a list, with head (the lowest)\n"
        "    and tail, then comparator_key\n"
        "    ({NAME}:redisson_sortedset_comparator), comparator (none:\n"
        "    natural order; a Java class hilock refuses), lock_key\n"
        "    (redisson_sortedset_lock:{NAME}), locked (with lock_holder and\n"
        "    lock_ttl_ms), wake_channel\n"
        "    (hilock_priority_queue_channel:{NAME}) and listeners (hilock\n"
        "    clients with takers waiting).\n"
        "Without --kind the kind is read from Redis: a mode field makes an\n"
        "rwlock, an existing queue a fair lock; reentrant, spin, fenced and\n"
        "non-reentrant locks look alike (\"lock\"). A hash with rate,\n"
        "interval and type fields is a rate limiter; a string is a Bloom\n"
        "filter when {NAME}:config exists, else an atomic_long (a decimal\n"
        "integer), an atomic_double (a decimal number) or a bucket (a\n"
        "bit_set looks like one: use --kind bit_set); with nothing under\n"
        "NAME, a {NAME}:config makes an empty Bloom filter and listeners\n"
        "on {NAME}:adder-topic an adder. A hash whose fields are not a\n"
        "lock's (<client-uuid>:<id> holds, mode) nor a rate limiter's is\n"
        "a map, a set a set, a zset a scored_sorted_set, a list a list\n"
        "(queues and deques are lists too) or a sorted_set when its\n"
        "comparator or lock key exists. A list (or nothing) under NAME is\n"
        "a delayed_queue when redisson_delay_queue_timeout:{NAME} or\n"
        "redisson_delay_queue:{NAME} exists, a bounded_blocking_queue when\n"
        "redisson_bqs:{NAME} does, a priority queue when its comparator\n"
        "exists or hilock takers listen on its channel, a blocking queue\n"
        "when hilock_consumers:<base> exists (in that order; use --kind\n"
        "for another view: a plain priority queue looks like a list). A\n"
        "--kind that Redis contradicts gets a warning on stderr.\n";

static const char usage_list[] =
        "Usage: hilock [OPTIONS] list [PATTERN]\n"
        "\n"
        "List the hashes whose names match PATTERN (SCAN MATCH, default *),\n"
        "on the master or on every master of a cluster: one line each,\n"
        "NAME<TAB>HOLDERS<TAB>TTL_MS<TAB>KIND, KIND being rwlock:read or\n"
        "rwlock:write (a mode field), fairlock (a fair lock with waiters\n"
        "queued), rate_limiter (rate, interval and type fields; HOLDERS\n"
        "0), bloom_filter_config (a Bloom filter's {NAME}:config; HOLDERS\n"
        "0) or lock. Every hash matching is listed; choose a pattern\n"
        "that names locks only.\n";

static const char usage_unlock[] =
        "Usage: hilock [OPTIONS] unlock --force [--kind K] NAME\n"
        "\n"
        "Delete the lock NAME whoever holds it and wake its waiters as its\n"
        "kind does (Redisson's forceUnlock). Exit 0 if it was held, 1 if\n"
        "not (or NAME is a key of another type or a rate limiter, left\n"
        "alone). Its holders find their hold lost.\n"
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
	if (v > (double)TIME_MAX)
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

/* The grid kind called s ("atomic_long" or "atomic-long"), or 0. */
static int parse_grid_kind(const char *s)
{
	int k;
	size_t i;
	for (k = 1; k <= K_GRID_MAX; k++) {
		const char *g = grid_kinds[k];
		for (i = 0;
		     g[i] && (s[i] == g[i] || (s[i] == '-' && g[i] == '_'));
		     i++)
			;
		if (!g[i] && !s[i])
			return k;
	}
	return 0;
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
			o->grid = 0;
			if ((o->kind = parse_kind(optarg)) >= 0)
				break;
			if ((o->grid = parse_grid_kind(optarg)) > 0 &&
			    sub == usage_inspect)
				break;
			if (o->grid > 0)
				return usage_error(
				        sub,
				        "--kind %s: not a lock; only "
				        "inspect takes the grid's "
				        "kinds",
				        optarg);
			{
				char kinds[200], grid[600] = "";
				int k;
				size_t at = 0;
				for (k = 1; sub == usage_inspect &&
				            k <= K_GRID_MAX && at < sizeof grid;
				     k++)
					at += (size_t)snprintf(
					        grid + at, sizeof grid - at,
					        "%s%s",
					        k == 1 ? "; the grid's: "
					               : ", ",
					        grid_kinds[k]);
				return usage_error(
				        sub,
				        "--kind: unknown lock kind \"%s\" "
				        "(kinds: %s%s)",
				        optarg, kind_names(kinds, sizeof kinds),
				        grid);
			}
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

/* This machine's monotonic clock, in ms. */
static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
	t0 = mono_ms();
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
			int64_t left = next - mono_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", prog,
			        strerror(errno));
			kill(pid, SIGKILL);
		}
		if (kill_at >= 0 && mono_ms() >= kill_at) {
			fprintf(stderr,
			        "%s: \"%s\" did not exit %.3f s after SIGTERM: "
			        "sending SIGKILL\n",
			        prog, cmd[0], (double)o->grace_ms / 1000.0);
			kill(pid, SIGKILL);
			kill_at = -1;
		}
		if (!lost && lease_end >= 0 && mono_ms() >= lease_end) {
			lost = 1;
			fprintf(stderr,
			        "%s: the lease of the lock \"%s\" (%.3f s) ran "
			        "out while \"%s\" ran: sending SIGTERM to pid "
			        "%d\n",
			        prog, name, (double)o->lease_ms / 1000.0,
			        cmd[0], (int)pid);
			kill(pid, SIGTERM);
			kill_at = mono_ms() + o->grace_ms;
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
			kill_at = mono_ms() + o->grace_ms;
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

/* ---- raw commands for inspect, list and unlock ----------------------------
 * Through the public API: hl_client_command() sends a command where the
 * library sends its own (the master; in a cluster the master of the key's
 * slot, or of a route key: the channel's for PUBSUB NUMSUB) with its retry
 * policy; hl_client_masters() and hl_client_command_node() visit every
 * master for SCAN. Every command here only reads. */
#define MAXWORDS 12

/* A command of C-string words (NULL-terminated), routed by route (NULL:
 * by its key, argv[1]). An error reply is HL_EREDIS with its text. */
static int rq(hl_client *c, hl_value **out, const char *route, ...)
{
	const char *argv[MAXWORDS];
	size_t lens[MAXWORDS];
	int n = 0;
	va_list ap;
	va_start(ap, route);
	while (n < MAXWORDS && (argv[n] = va_arg(ap, const char *)) != NULL) {
		lens[n] = strlen(argv[n]);
		n++;
	}
	va_end(ap);
	return hl_client_command(out, c, n, argv, lens, route,
	                         route ? strlen(route) : 0, 1);
}

/* The bytes of v ("" if it holds none) and their length. */
static const char *vstr(const hl_value *v)
{
	const char *s = hl_value_bytes(v, NULL);
	return s ? s : "";
}

static size_t vlen(const hl_value *v)
{
	size_t n = 0;
	hl_value_bytes(v, &n);
	return n;
}

/* An integer reply, or a number in bytes (HGET, GET). */
static long long vnum(const hl_value *v)
{
	if (hl_value_type(v) == HL_VALUE_BYTES)
		return strtoll(vstr(v), NULL, 10);
	return (long long)hl_value_int(v);
}

/* Redisson's derived names (PROTOCOL 0.2, GRID-PROTOCOL 0.1): prefixName
 * "prefix{name}" and suffixName "{name}suffix", without the braces when
 * the name has a '{' already. malloc'd (exits when out of memory). */
static char *derived(const char *prefix, const char *name, const char *suffix)
{
	int braces = strchr(name, '{') == NULL;
	size_t n = strlen(prefix) + strlen(name) + strlen(suffix) + 3;
	char *d = malloc(n);
	if (!d) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(EXIT_OSERR);
	}
	snprintf(d, n, braces ? "%s{%s}%s" : "%s%s%s", prefix, name, suffix);
	return d;
}

/* The names of NAME's keys and channels, for each kind. */
typedef struct names {
	char *channel;   /* a lock's: redisson_lock__channel:{NAME} */
	char *rwchannel; /* an rwlock's: redisson_rwlock:{NAME} */
	char *queue;     /* a fair lock's: redisson_lock_queue:{NAME} */
	char *timeout;   /* its deadlines: redisson_lock_timeout:{NAME} */
	char *token;     /* a fenced lock's: redisson_lock_token:{NAME} */
	char *line;      /* the default lock's line: hilock_line:{NAME} */
	char *linedl;    /* its deadlines: hilock_line_timeout:{NAME} */
	char *config;    /* a Bloom filter's: {NAME}:config */
	char *value;     /* a rate limiter's: {NAME}:value */
	char *permits;   /* and {NAME}:permits */
	char *adder;     /* an adder's topic: {NAME}:adder-topic */
	char *bqs;       /* a bounded queue's capacity: redisson_bqs:{NAME} */
	char *bqs_chan;  /* its channel: redisson_sc:redisson_bqs:{NAME} */
	char *delay_z;   /* redisson_delay_queue_timeout:{NAME} */
	char *delay_l;   /* redisson_delay_queue:{NAME} */
	char *delay_ch;  /* redisson_delay_queue_channel:{NAME} */
	char *pq_cmp;    /* {NAME}:redisson_sortedset_comparator */
	char *ss_lock;   /* redisson_sortedset_lock:{NAME} */
	char *pq_chan;   /* hilock_priority_queue_channel:{NAME} */
	char *takers;   /* hilock_consumers:<base> (docs/grid-blocking-queue) */
	char *inflight; /* hilock_inflight:<base>: (+ a take's id) */
	char *given;    /* hilock_given_back:<base> (ids given back) */
} names;

/* Redis Cluster's CRC16 (XMODEM) of the key's hash tag, or of the key. */
static unsigned key_slot(const char *k, size_t n)
{
	size_t i, j, s = 0, l = n;
	unsigned crc = 0;
	int b;
	for (i = 0; i < n && k[i] != '{'; i++)
		;
	if (i < n) {
		for (j = i + 1; j < n && k[j] != '}'; j++)
			;
		if (j < n && j > i + 1) {
			s = i + 1;
			l = j - i - 1;
		}
	}
	for (i = s; i < s + l; i++) {
		crc ^= (unsigned)(unsigned char)k[i] << 8;
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff
			                   : (crc << 1) & 0xffff;
	}
	return crc & 16383;
}

/* The blocking queue's <base> (docs/grid-blocking-queue.md, "Cluster"):
 * a name with a hash tag as it is; one without braces inside a tag; any
 * other a short tag of its slot, ':' and the name. malloc'd. */
static char *takers_base(const char *name)
{
	size_t n = strlen(name), i, tl = 0;
	const char *o = strchr(name, '{'), *cl = o ? strchr(o, '}') : NULL;
	static const char al[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	char t[8];
	unsigned k, want;
	if (o && cl && cl > o + 1)
		return derived("", name, ""); /* braces: kept as it is */
	if (!o && !strchr(name, '}'))
		return derived("", name, ""); /* {name} */
	want = key_slot(name, n);
	for (k = 0; k < 36u * 36u * 36u * 36u; k++) {
		unsigned x = k;
		tl = 0;
		do {
			t[tl++] = al[x % 36];
			x /= 36;
		} while (x && tl < 6);
		if (key_slot(t, tl) == want)
			break;
	}
	t[tl] = 0;
	{
		char *tag = derived("", t, ":"); /* "{tag}:" */
		char *b = malloc(strlen(tag) + n + 1);
		if (!b) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(EXIT_OSERR);
		}
		i = strlen(tag);
		memcpy(b, tag, i);
		memcpy(b + i, name, n + 1);
		free(tag);
		return b;
	}
}

static void names_init(names *n, const char *name)
{
	n->channel = derived("redisson_lock__channel:", name, "");
	n->rwchannel = derived("redisson_rwlock:", name, "");
	n->queue = derived("redisson_lock_queue:", name, "");
	n->timeout = derived("redisson_lock_timeout:", name, "");
	n->token = derived("redisson_lock_token:", name, "");
	n->line = derived("hilock_line:", name, "");
	n->linedl = derived("hilock_line_timeout:", name, "");
	n->config = derived("", name, ":config");
	n->value = derived("", name, ":value");
	n->permits = derived("", name, ":permits");
	n->adder = derived("", name, ":adder-topic");
	n->bqs = derived("redisson_bqs:", name, "");
	n->bqs_chan = derived("redisson_sc:redisson_bqs:", name, "");
	n->delay_z = derived("redisson_delay_queue_timeout:", name, "");
	n->delay_l = derived("redisson_delay_queue:", name, "");
	n->delay_ch = derived("redisson_delay_queue_channel:", name, "");
	n->pq_cmp = derived("", name, ":redisson_sortedset_comparator");
	n->ss_lock = derived("redisson_sortedset_lock:", name, "");
	n->pq_chan = derived("hilock_priority_queue_channel:", name, "");
	{
		char *b = takers_base(name);
		size_t bl = strlen(b);
		n->takers = malloc(bl + 18);
		n->inflight = malloc(bl + 18);
		n->given = malloc(bl + 19);
		if (!n->takers || !n->inflight || !n->given) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(EXIT_OSERR);
		}
		snprintf(n->takers, bl + 18, "hilock_consumers:%s", b);
		snprintf(n->inflight, bl + 18, "hilock_inflight:%s:", b);
		snprintf(n->given, bl + 19, "hilock_given_back:%s", b);
		free(b);
	}
}

static void names_free(names *n)
{
	free(n->channel);
	free(n->rwchannel);
	free(n->queue);
	free(n->timeout);
	free(n->token);
	free(n->line);
	free(n->linedl);
	free(n->config);
	free(n->value);
	free(n->permits);
	free(n->adder);
	free(n->bqs);
	free(n->bqs_chan);
	free(n->delay_z);
	free(n->delay_l);
	free(n->delay_ch);
	free(n->pq_cmp);
	free(n->ss_lock);
	free(n->pq_chan);
	free(n->takers);
	free(n->inflight);
	free(n->given);
}

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

/* The count of a PUBSUB NUMSUB/SHARDNUMSUB reply [channel, count]. */
static int numsub_of(const hl_value *v, long long *out)
{
	if (hl_value_type(v) != HL_VALUE_ARRAY || hl_value_len(v) != 2)
		return -1;
	*out = vnum(hl_value_at(v, 1));
	return 0;
}

/* The clients subscribed to channel, on the node where the library
 * subscribes to it (the master; the master of its slot in a cluster):
 * PUBSUB NUMSUB, plus SHARDNUMSUB for a Redis 7 cluster's sharded
 * subscribers (a Redis without it counts none). Returns 0 or an exit
 * status, having said why. */
static int subscribers(hl_client *c, const char *channel, long long *out)
{
	hl_value *v = NULL;
	long long n = 0, sh = 0;
	int rc;
	*out = -1;
	if ((rc = rq(c, &v, channel, "PUBSUB", "NUMSUB", channel, NULL)) !=
	    HL_OK)
		return fail_hl(rc, "PUBSUB NUMSUB %s", channel);
	rc = numsub_of(v, &n);
	hl_value_free(v);
	v = NULL;
	if (rc != 0) {
		fprintf(stderr, "%s: PUBSUB NUMSUB %s: unexpected reply\n",
		        prog, channel);
		return EXIT_UNAVAILABLE;
	}
	rc = rq(c, &v, channel, "PUBSUB", "SHARDNUMSUB", channel, NULL);
	if (rc == HL_OK && numsub_of(v, &sh) == 0)
		n += sh;
	hl_value_free(v);
	if (rc != HL_OK && rc != HL_EREDIS)
		return fail_hl(rc, "PUBSUB SHARDNUMSUB %s", channel);
	*out = n;
	return 0;
}

/* The score of member in a ZRANGE ... WITHSCORES reply; 0 if absent. */
static int zscore_in(const hl_value *z, const char *member, size_t len,
                     double *out)
{
	size_t i;
	for (i = 0; i + 1 < hl_value_len(z); i += 2) {
		const hl_value *m = hl_value_at(z, i);
		if (vlen(m) == len && memcmp(vstr(m), member, len) == 0) {
			*out = strtod(vstr(hl_value_at(z, i + 1)), NULL);
			return 1;
		}
	}
	return 0;
}

/* The value of field in an HGETALL reply, NULL if absent. */
static const hl_value *hfield(const hl_value *h, const char *field)
{
	size_t i;
	for (i = 0; i + 1 < hl_value_len(h); i += 2)
		if (strcmp(vstr(hl_value_at(h, i)), field) == 0)
			return hl_value_at(h, i + 1);
	return NULL;
}

/* A rate limiter's hash (GRID-PROTOCOL 2.7): rate, interval, type. */
static int is_limiter_hash(const hl_value *h)
{
	return hfield(h, "rate") && hfield(h, "interval") && hfield(h, "type");
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

/* ---- inspect: the grid's objects ------------------------------------------
 */
#define SHOW_MAX 1024 /* value bytes shown */

/* 1 if p[0..n) is UTF-8 text without control characters. */
static int is_text(const unsigned char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char b = p[i];
		size_t k, more;
		if (b < 0x20 || b == 0x7f)
			return 0;
		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf)
			more = 1;
		else if (b >= 0xe0 && b <= 0xef)
			more = 2;
		else if (b >= 0xf0 && b <= 0xf4)
			more = 3;
		else
			return 0;
		/* a sequence cut by SHOW_MAX is fine */
		for (k = 1; k <= more && i + k < n; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
		i += more + 1;
	}
	return 1;
}

/* "value: TEXT" or "value_hex: HEX" of the first bytes of a value of size
 * bytes, and how many were shown if not all. */
static void print_value(const hl_value *v, long long size)
{
	const unsigned char *p = (const unsigned char *)vstr(v);
	size_t i, n = vlen(v);
	if (is_text(p, n)) {
		fputs("value: ", stdout);
		fwrite(p, 1, n, stdout);
		fputc('\n', stdout);
	} else {
		fputs("value_hex: ", stdout);
		for (i = 0; i < n; i++)
			printf("%02x", p[i]);
		fputc('\n', stdout);
	}
	if ((long long)n < size)
		printf("value_shown: the first %zu of %lld bytes\n", n, size);
}

/* The type Redis gives the key, into type. */
static int key_type(hl_client *c, const char *key, char *type, size_t len)
{
	hl_value *v = NULL;
	int rc = rq(c, &v, NULL, "TYPE", key, NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "TYPE \"%s\"", key);
	snprintf(type, len, "%s", vstr(v));
	hl_value_free(v);
	return 0;
}

static int print_ttl(hl_client *c, const char *key)
{
	hl_value *v = NULL;
	int rc = rq(c, &v, NULL, "PTTL", key, NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "PTTL \"%s\"", key);
	printf("ttl_ms: %lld\n", vnum(v));
	hl_value_free(v);
	return 0;
}

/* An integer key as a count (STRLEN, BITCOUNT, ZCARD...). */
static int count_of(hl_client *c, long long *out, const char *cmd,
                    const char *key, const char *a1, const char *a2)
{
	hl_value *v = NULL;
	int rc = rq(c, &v, NULL, cmd, key, a1, a2, NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "%s \"%s\"", cmd, key);
	*out = vnum(v);
	hl_value_free(v);
	return 0;
}

/* A decimal integer, as an atomic long holds (GRID-PROTOCOL 2.3). */
static int is_integer(const char *s, size_t n)
{
	size_t i = s[0] == '-' ? 1 : 0;
	if (n == i || n > 20)
		return 0;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* A number in a form an atomic double holds (1, 1.5, 1.0E10, 1e+20). */
static int is_number(const char *s, size_t n)
{
	char *end;
	double d;
	if (n == 0 || n > 400 || strlen(s) != n ||
	    !((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '.'))
		return 0;
	errno = 0;
	d = strtod(s, &end);
	return end == s + n && isfinite(d) && !strpbrk(s, "xXnN");
}

/* A bucket, an atomic long or double: one string key. */
static int inspect_string(hl_client *c, const char *name, int kind)
{
	hl_value *v = NULL;
	long long size = 0;
	int rc;
	char shown[16];
	if ((rc = count_of(c, &size, "STRLEN", name, NULL, NULL)) != 0)
		return rc;
	snprintf(shown, sizeof shown, "%d", SHOW_MAX - 1);
	if ((rc = rq(c, &v, NULL, "GETRANGE", name, "0", shown, NULL)) != HL_OK)
		return fail_hl(rc, "GETRANGE \"%s\"", name);
	if (kind == K_BUCKET) {
		printf("size: %lld\n", size);
		if (size > 0)
			print_value(v, size);
	} else if (size == 0) {
		printf("value: 0\n"); /* absent reads as 0 */
	} else if (kind == K_ATOMIC_LONG ? is_integer(vstr(v), vlen(v))
	                                 : is_number(vstr(v), vlen(v))) {
		printf("value: %s\n", vstr(v));
	} else {
		warn("\"%s\" does not hold a number: not an %s", name,
		     kind == K_ATOMIC_LONG ? "atomic long" : "atomic double");
		print_value(v, size);
	}
	hl_value_free(v);
	return print_ttl(c, name);
}

/* The index of the highest set bit of a bitmap of len bytes holding bits
 * (bit i is SETBIT offset i, the most significant first): the last byte
 * with a bit set, found by halving with BITCOUNT over byte ranges. */
static int bitset_length(hl_client *c, const char *name, long long len,
                         long long *out)
{
	long long lo = 0, hi = len - 1, n;
	char a[32], b[32];
	hl_value *v = NULL;
	unsigned char byte;
	int rc, j;
	*out = 0;
	while (lo < hi) { /* the last byte with a bit set is in [lo, hi] */
		long long mid = lo + (hi - lo + 1) / 2;
		snprintf(a, sizeof a, "%lld", mid);
		snprintf(b, sizeof b, "%lld", hi);
		if ((rc = count_of(c, &n, "BITCOUNT", name, a, b)) != 0)
			return rc;
		if (n > 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	snprintf(a, sizeof a, "%lld", lo);
	if ((rc = rq(c, &v, NULL, "GETRANGE", name, a, a, NULL)) != HL_OK)
		return fail_hl(rc, "GETRANGE \"%s\"", name);
	byte = vlen(v) ? (unsigned char)vstr(v)[0] : 0;
	hl_value_free(v);
	for (j = 7; j >= 0; j--)
		if (byte & (0x80 >> j)) {
			*out = lo * 8 + j + 1;
			break;
		}
	return 0;
}

static int inspect_bit_set(hl_client *c, const char *name)
{
	long long len = 0, card = 0, length = 0;
	int rc;
	if ((rc = count_of(c, &len, "STRLEN", name, NULL, NULL)) != 0 ||
	    (rc = count_of(c, &card, "BITCOUNT", name, NULL, NULL)) != 0)
		return rc;
	if (card > 0 && (rc = bitset_length(c, name, len, &length)) != 0)
		return rc;
	printf("cardinality: %lld\n", card);
	printf("length: %lld\n", length);
	printf("size: %lld\n", len * 8);
	return print_ttl(c, name);
}

static int inspect_bloom_filter(hl_client *c, const char *name, const names *nm)
{
	hl_value *h = NULL;
	const hl_value *m, *k, *n, *p;
	long long bits = 0;
	int rc;
	if ((rc = rq(c, &h, NULL, "HGETALL", nm->config, NULL)) != HL_OK)
		return fail_hl(rc, "HGETALL %s", nm->config);
	m = hfield(h, "size");
	k = hfield(h, "hashIterations");
	n = hfield(h, "expectedInsertions");
	p = hfield(h, "falseProbability");
	printf("config: %s\n", nm->config);
	printf("initialized: %d\n", m && k ? 1 : 0);
	if (m)
		printf("size: %s\n", vstr(m));
	if (k)
		printf("hash_iterations: %s\n", vstr(k));
	if (n)
		printf("expected_insertions: %s\n", vstr(n));
	if (p)
		printf("false_probability: %s\n", vstr(p));
	if ((rc = count_of(c, &bits, "BITCOUNT", name, NULL, NULL)) == 0) {
		printf("bits_set: %lld\n", bits);
		/* Redisson's count(): round(-m/k ln(1 - X/m)) */
		if (m && k && vnum(m) > 0 && vnum(k) > 0 && bits < vnum(m)) {
			double dm = (double)vnum(m);
			printf("count: %lld\n",
			       (long long)llround(-dm / (double)vnum(k) *
			                          log(1 - (double)bits / dm)));
		}
		rc = print_ttl(c, name);
	}
	hl_value_free(h);
	return rc;
}

/* The permits of a rate limiter's entries (their members: a length byte
 * 16, 16 random bytes, the permits as 4 bytes little-endian; GRID-PROTOCOL
 * 2.7) scored within the last interval_ms by this machine's clock. */
static long long permits_in_window(const hl_value *z, long long interval_ms)
{
	size_t i;
	long long sum = 0;
	double since = (double)(wall_ms() - interval_ms);
	for (i = 0; i + 1 < hl_value_len(z); i += 2) {
		const unsigned char *m =
		        (const unsigned char *)vstr(hl_value_at(z, i));
		if (vlen(hl_value_at(z, i)) != 21 ||
		    strtod(vstr(hl_value_at(z, i + 1)), NULL) <= since)
			continue;
		sum += (long long)((uint32_t)m[17] | (uint32_t)m[18] << 8 |
		                   (uint32_t)m[19] << 16 |
		                   (uint32_t)m[20] << 24);
	}
	return sum;
}

/* One "permits_left", "entries", "in_window" set: of the value key and
 * the permits zset (OVERALL) or a client's (PER_CLIENT). */
static int limiter_state(hl_client *c, const char *value, const char *zset,
                         long long interval_ms, const char *prefix,
                         const char *sep)
{
	hl_value *v = NULL, *z = NULL;
	int rc;
	if ((rc = rq(c, &v, NULL, "GET", value, NULL)) != HL_OK)
		return fail_hl(rc, "GET %s", value);
	if ((rc = rq(c, &z, NULL, "ZRANGE", zset, "0", "-1", "WITHSCORES",
	             NULL)) != HL_OK) {
		hl_value_free(v);
		return fail_hl(rc, "ZRANGE %s", zset);
	}
	if (hl_value_type(v) == HL_VALUE_BYTES)
		printf("%spermits_left%s%s", prefix, sep, vstr(v));
	else
		printf("%spermits_left%snone", prefix, sep);
	printf("%sentries%s%zu", *sep == '=' ? " " : "\n", sep,
	       hl_value_len(z) / 2);
	printf("%sin_window%s%lld\n", *sep == '=' ? " " : "\n", sep,
	       permits_in_window(z, interval_ms));
	hl_value_free(v);
	hl_value_free(z);
	return 0;
}

/* s with the glob characters of SCAN MATCH escaped (malloc'd). */
static char *glob_escaped(const char *s)
{
	char *d = malloc(2 * strlen(s) + 1), *w = d;
	if (!d) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(EXIT_OSERR);
	}
	for (; *s; s++) {
		if (strchr("*?[]\\", *s))
			*w++ = '\\';
		*w++ = *s;
	}
	*w = 0;
	return d;
}

/* PER_CLIENT: each client's keys {NAME}:value:<client-id> and
 * {NAME}:permits:<client-id>, found by SCAN on the node of NAME's slot. */
static int limiter_clients(hl_client *c, const char *name, const names *nm,
                           long long interval_ms)
{
	char *esc = glob_escaped(nm->value), *pattern, cursor[32] = "0";
	size_t pl = strlen(nm->value) + 1; /* "...:value:" */
	int rc = 0, rounds = 0;
	pattern = malloc(strlen(esc) + 3);
	if (!pattern) {
		free(esc);
		return EXIT_OSERR;
	}
	sprintf(pattern, "%s:*", esc);
	do {
		hl_value *r = NULL;
		const hl_value *keys;
		size_t i;
		int hrc = rq(c, &r, name, "SCAN", cursor, "MATCH", pattern,
		             "COUNT", "1000", NULL);
		if (hrc != HL_OK) {
			rc = fail_hl(hrc, "SCAN MATCH %s", pattern);
			break;
		}
		if (hl_value_len(r) != 2) {
			hl_value_free(r);
			fprintf(stderr, "%s: SCAN: unexpected reply\n", prog);
			rc = EXIT_UNAVAILABLE;
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", vstr(hl_value_at(r, 0)));
		keys = hl_value_at(r, 1);
		for (i = 0; i < hl_value_len(keys) && rc == 0; i++) {
			const char *k = vstr(hl_value_at(keys, i));
			char *zset, prefix[200];
			if (strlen(k) <= pl)
				continue;
			zset = derived("", name, ":permits:");
			zset = realloc(zset, strlen(zset) + strlen(k + pl) + 1);
			if (!zset) {
				rc = EXIT_OSERR;
				break;
			}
			strcat(zset, k + pl);
			snprintf(prefix, sizeof prefix, "client: %.64s ",
			         k + pl);
			rc = limiter_state(c, k, zset, interval_ms, prefix,
			                   "=");
			free(zset);
		}
		hl_value_free(r);
	} while (rc == 0 && strcmp(cursor, "0") != 0 && ++rounds < 100000);
	free(pattern);
	free(esc);
	return rc;
}

static int inspect_rate_limiter(hl_client *c, const char *name, const names *nm)
{
	hl_value *h = NULL;
	const hl_value *rate, *interval, *type, *keep;
	int rc;
	if ((rc = rq(c, &h, NULL, "HGETALL", name, NULL)) != HL_OK)
		return fail_hl(rc, "HGETALL \"%s\"", name);
	rate = hfield(h, "rate");
	interval = hfield(h, "interval");
	type = hfield(h, "type");
	keep = hfield(h, "keepAliveTime");
	printf("initialized: %d\n", rate && interval && type ? 1 : 0);
	if (rate)
		printf("rate: %s\n", vstr(rate));
	if (interval)
		printf("interval_ms: %s\n", vstr(interval));
	if (type)
		printf("type: %s\n", strcmp(vstr(type), "0") == 0 ? "overall"
		                     : strcmp(vstr(type), "1") == 0
		                             ? "per_client"
		                             : vstr(type));
	if (keep)
		printf("keep_alive_ms: %s\n", vstr(keep));
	if ((rc = print_ttl(c, name)) == 0 && type) {
		long long iv = interval ? vnum(interval) : 0;
		if (strcmp(vstr(type), "1") == 0)
			rc = limiter_clients(c, name, nm, iv);
		else
			rc = limiter_state(c, nm->value, nm->permits, iv, "",
			                   ": ");
	}
	hl_value_free(h);
	return rc;
}

static int inspect_adder(hl_client *c, const names *nm)
{
	long long n = -1;
	int rc;
	printf("stored: nothing: each client keeps its part of the sum in "
	       "memory, and a sum asks them on %s\n",
	       nm->adder);
	if ((rc = subscribers(c, nm->adder, &n)) != 0)
		return rc;
	printf("listeners: %lld\n", n);
	return 0;
}

/* The Redis types a kind keeps under NAME ("" for none: an adder). */
static const char *grid_type(int kind)
{
	switch (kind) {
	case K_RATE_LIMITER:
		return "hash";
	case K_LONG_ADDER:
	case K_DOUBLE_ADDER:
		return "";
	case K_MAP:
		return "hash";
	case K_SET:
		return "set";
	case K_SCORED_SORTED_SET:
		return "zset";
	case K_SORTED_SET:
	case K_LIST:
	case K_QUEUE:
	case K_DEQUE:
	case K_BLOCKING_QUEUE:
	case K_BLOCKING_DEQUE:
	case K_BOUNDED_BLOCKING_QUEUE:
	case K_DELAYED_QUEUE: /* NAME is its destination */
	case K_PRIORITY_QUEUE:
	case K_PRIORITY_DEQUE:
	case K_PRIORITY_BLOCKING_QUEUE:
	case K_PRIORITY_BLOCKING_DEQUE:
		return "list";
	default:
		return "string";
	}
}

/* An element of a collection as TEXT, or hex:HEX when it is not UTF-8
 * text (or is empty, or holds '=' or ' ', which would read ambiguously
 * in "entry: KEY = VALUE"). */
static void put_bytes(const unsigned char *p, size_t n)
{
	size_t i;
	if (n > 0 && is_text(p, n) && !memchr(p, '=', n) &&
	    !memchr(p, ' ', n)) {
		fwrite(p, 1, n, stdout);
		return;
	}
	fputs("hex:", stdout);
	for (i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void put_element(const hl_value *v)
{
	put_bytes((const unsigned char *)vstr(v), vlen(v));
}

#define SHOW_ELEMENTS 10

/* A collection: its size, TTL and first elements (one page, never the
 * whole of it); a sorted set's comparator and lock. */
static int inspect_collection(hl_client *c, const char *name, int kind,
                              long long *size_out)
{
	static const char *const card[] = {"HLEN", "SCARD", "ZCARD", "LLEN"};
	const char *type = grid_type(kind);
	int t = strcmp(type, "hash") == 0   ? 0
	        : strcmp(type, "set") == 0  ? 1
	        : strcmp(type, "zset") == 0 ? 2
	                                    : 3;
	hl_value *v = NULL;
	const hl_value *items;
	long long size = 0;
	size_t i, shown = 0;
	int rc;
	char last[16];
	if ((rc = count_of(c, &size, card[t], name, NULL, NULL)) != 0)
		return rc;
	printf("size: %lld\n", size);
	*size_out = size;
	if ((rc = print_ttl(c, name)) != 0)
		return rc;
	if (kind == K_SORTED_SET) {
		char *cmp = derived("redisson_sortedset_comparator:", name, "");
		char *lock = derived("redisson_sortedset_lock:", name, "");
		long long held = 0;
		rc = cmp && lock ? rq(c, &v, NULL, "GET", cmp, NULL)
		                 : HL_ENOMEM;
		if (rc == HL_OK)
			printf("comparator: %s\n",
			       hl_value_type(v) == HL_VALUE_BYTES
			               ? vstr(v)
			               : "none (natural order)");
		hl_value_free(v);
		v = NULL;
		if (rc == HL_OK)
			rc = count_of(c, &held, "EXISTS", lock, NULL, NULL);
		else
			rc = fail_hl(rc, "GET \"%s\"", cmp ? cmp : "");
		free(cmp);
		free(lock);
		if (rc != 0)
			return rc;
		printf("locked: %s\n", held ? "yes" : "no");
	}
	if (kind >= K_BLOCKING_QUEUE && size > 0) { /* a queue's ends */
		static const char *const end[2] = {"0", "-1"};
		int e;
		for (e = 0; e < 2; e++) {
			if ((rc = rq(c, &v, NULL, "LINDEX", name, end[e],
			             NULL)) != HL_OK)
				return fail_hl(rc, "LINDEX \"%s\"", name);
			if (hl_value_type(v) == HL_VALUE_BYTES) {
				fputs(e ? "tail: " : "head: ", stdout);
				put_element(v);
				fputc('\n', stdout);
			}
			hl_value_free(v);
			v = NULL;
		}
	}
	snprintf(last, sizeof last, "%d", SHOW_ELEMENTS - 1);
	switch (t) {
	case 0:
		rc = rq(c, &v, NULL, "HSCAN", name, "0", "COUNT", "10", NULL);
		break;
	case 1:
		rc = rq(c, &v, NULL, "SSCAN", name, "0", "COUNT", "10", NULL);
		break;
	case 2:
		rc = rq(c, &v, NULL, "ZRANGE", name, "0", last, "WITHSCORES",
		        NULL);
		break;
	default:
		rc = rq(c, &v, NULL, "LRANGE", name, "0", last, NULL);
		break;
	}
	if (rc != HL_OK)
		return fail_hl(rc, "reading \"%s\"", name);
	items = t < 2 ? hl_value_at(v, 1) : v;
	for (i = 0; i < hl_value_len(items) && shown < SHOW_ELEMENTS; i++) {
		const hl_value *e = hl_value_at(items, i);
		fputs(t == 0   ? "entry: "
		      : t == 3 ? "item: "
		               : "member: ",
		      stdout);
		put_element(e);
		if (t == 0) {
			fputs(" = ", stdout);
			put_element(hl_value_at(items, ++i));
		} else if (t == 2) {
			printf(" score=%s", vstr(hl_value_at(items, ++i)));
		}
		fputc('\n', stdout);
		shown++;
	}
	printf("shown: %zu of %lld\n", shown, size);
	hl_value_free(v);
	return 0;
}

/* Redis's clock (TIME on the node of route's slot), in ms. */
static int redis_now_ms(hl_client *c, const char *route, int64_t *out)
{
	hl_value *v = NULL;
	int rc = rq(c, &v, route, "TIME", NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "TIME");
	if (hl_value_type(v) != HL_VALUE_ARRAY || hl_value_len(v) != 2) {
		hl_value_free(v);
		fprintf(stderr, "%s: TIME: unexpected reply\n", prog);
		return EXIT_UNAVAILABLE;
	}
	*out = (int64_t)strtoll(vstr(hl_value_at(v, 0)), NULL, 10) * 1000 +
	       strtoll(vstr(hl_value_at(v, 1)), NULL, 10) / 1000;
	hl_value_free(v);
	return 0;
}

#define TAKES_MAX 1000 /* takes whose in-flight lists are counted */

/* hilock's takes of a blocking queue (docs/grid-blocking-queue.md): the
 * takers' hash hilock_consumers:<base>, one "take:" line for each of the
 * first 10 (its id, when its lease ends on Redis's clock, the elements
 * its in-flight list hilock_inflight:<base>:<id> holds), the sum of
 * those elements into *held (-1: not counted, more than TAKES_MAX). */
static int inspect_takes(hl_client *c, const char *name, const names *nm,
                         long long *held)
{
	hl_value *h = NULL;
	long long n = 0, len = 0;
	int64_t now = 0;
	size_t i, shown = 0, plen = strlen(nm->inflight);
	int rc;
	*held = 0;
	if ((rc = count_of(c, &n, "HLEN", nm->takers, NULL, NULL)) != 0)
		return rc;
	printf("takers_key: %s\ntakes: %lld\n", nm->takers, n);
	if (n == 0) {
		printf("in_flight: 0\n");
		return 0;
	}
	if (n > TAKES_MAX) {
		*held = -1;
		printf("takes_shown: 0 (more than %d)\n", TAKES_MAX);
		return 0;
	}
	if ((rc = redis_now_ms(c, name, &now)) != 0)
		return rc;
	if ((rc = rq(c, &h, NULL, "HGETALL", nm->takers, NULL)) != HL_OK)
		return fail_hl(rc, "HGETALL \"%s\"", nm->takers);
	for (i = 0; rc == 0 && i + 1 < hl_value_len(h); i += 2) {
		const hl_value *id = hl_value_at(h, i);
		char *key = malloc(plen + vlen(id) + 1);
		if (!key) {
			rc = EXIT_OSERR;
			break;
		}
		memcpy(key, nm->inflight, plen);
		memcpy(key + plen, vstr(id), vlen(id) + 1);
		rc = count_of(c, &len, "LLEN", key, NULL, NULL);
		free(key);
		if (rc != 0)
			break;
		*held += len;
		if (shown++ >= SHOW_ELEMENTS)
			continue;
		fputs("take: ", stdout);
		put_element(id);
		printf(" lease_in_ms=%lld in_flight=%lld%s\n",
		       vnum(hl_value_at(h, i + 1)) - (long long)now, len,
		       vstr(id)[0] == 'r' ? " end=tail" : "");
	}
	hl_value_free(h);
	if (rc == 0)
		printf("in_flight: %lld\n", *held);
	return rc;
}

/* A bounded queue's capacity (GRID-PROTOCOL 3.8): redisson_bqs:{NAME}
 * holds what remains; the capacity is that, the elements queued and those
 * in flight (each holds its unit until acknowledged). */
static int inspect_capacity(hl_client *c, const names *nm, long long size,
                            long long held)
{
	hl_value *v = NULL;
	long long listeners = 0, rem;
	int rc = rq(c, &v, NULL, "GET", nm->bqs, NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "GET \"%s\"", nm->bqs);
	printf("capacity_key: %s\n", nm->bqs);
	if (hl_value_type(v) != HL_VALUE_BYTES) {
		printf("remaining_capacity: none (not set: offers fail until "
		       "try_set_capacity)\n");
	} else {
		rem = vnum(v);
		printf("remaining_capacity: %lld\n", rem);
		if (held >= 0)
			printf("capacity: %lld (remaining + size + in "
			       "flight)\n",
			       rem + size + held);
	}
	hl_value_free(v);
	if ((rc = subscribers(c, nm->bqs_chan, &listeners)) != 0)
		return rc;
	printf("capacity_channel: %s\ncapacity_listeners: %lld\n", nm->bqs_chan,
	       listeners);
	return 0;
}

/* A delayed queue (GRID-PROTOCOL 3.9; NAME is its destination): the
 * timeout zset (count, the next due time against Redis's clock), the
 * ordered list, the channel and its listeners (the clients moving
 * elements), and the first elements due, unpacked from Redisson's
 * member format (0x08, 8 random bytes, a 64-bit little-endian length,
 * the value). */
static int inspect_delayed(hl_client *c, const char *name, const names *nm)
{
	hl_value *z = NULL;
	long long dest = 0, count = 0, listed = 0, movers = 0;
	int64_t now = 0;
	size_t i, shown = 0;
	int rc;
	char last[16];
	if ((rc = count_of(c, &dest, "LLEN", name, NULL, NULL)) != 0 ||
	    (rc = count_of(c, &count, "ZCARD", nm->delay_z, NULL, NULL)) != 0 ||
	    (rc = count_of(c, &listed, "LLEN", nm->delay_l, NULL, NULL)) != 0 ||
	    (rc = subscribers(c, nm->delay_ch, &movers)) != 0 ||
	    (rc = redis_now_ms(c, name, &now)) != 0)
		return rc;
	printf("destination: %s\ndestination_size: %lld\n", name, dest);
	printf("timeout_key: %s\ndelayed: %lld\n", nm->delay_z, count);
	snprintf(last, sizeof last, "%d", SHOW_ELEMENTS - 1);
	if ((rc = rq(c, &z, NULL, "ZRANGE", nm->delay_z, "0", last,
	             "WITHSCORES", NULL)) != HL_OK)
		return fail_hl(rc, "ZRANGE \"%s\"", nm->delay_z);
	if (hl_value_len(z) >= 2)
		printf("next_due_in_ms: %lld\n",
		       (long long)strtod(vstr(hl_value_at(z, 1)), NULL) -
		               (long long)now);
	printf("list_key: %s\nlist_size: %lld\n", nm->delay_l, listed);
	printf("channel: %s\nmovers: %lld\n", nm->delay_ch, movers);
	for (i = 0; i + 1 < hl_value_len(z); i += 2, shown++) {
		const unsigned char *p =
		        (const unsigned char *)vstr(hl_value_at(z, i));
		size_t n = vlen(hl_value_at(z, i));
		uint64_t l = 0;
		int k;
		for (k = 7; n >= 17 && k >= 0; k--)
			l = l << 8 | p[9 + k];
		fputs("element: ", stdout);
		if (n >= 17 && p[0] == 8 && l == n - 17)
			put_bytes(p + 17, n - 17);
		else
			put_bytes(p, n); /* not Redisson's packing */
		printf(" due_in_ms=%lld\n",
		       (long long)strtod(vstr(hl_value_at(z, i + 1)), NULL) -
		               (long long)now);
	}
	printf("shown: %zu of %lld\n", shown, count);
	hl_value_free(z);
	return 0;
}

/* A priority queue's state beside its list (GRID-PROTOCOL 3.10): the
 * comparator Java may have set, Redisson's lock, and the clients
 * listening on hilock's wake-up channel (hilock's waiting takers). */
static int inspect_priority(hl_client *c, const names *nm)
{
	hl_value *v = NULL;
	long long listeners = 0, ttl = 0;
	int rc = rq(c, &v, NULL, "GET", nm->pq_cmp, NULL);
	if (rc != HL_OK)
		return fail_hl(rc, "GET \"%s\"", nm->pq_cmp);
	printf("comparator_key: %s\n", nm->pq_cmp);
	if (hl_value_type(v) == HL_VALUE_BYTES) {
		fputs("comparator: ", stdout);
		put_element(v);
		fputs(" (a Java comparator: hilock refuses the queue)\n",
		      stdout);
	} else {
		printf("comparator: none (natural order)\n");
	}
	hl_value_free(v);
	v = NULL;
	if ((rc = rq(c, &v, NULL, "HGETALL", nm->ss_lock, NULL)) != HL_OK)
		return fail_hl(rc, "HGETALL \"%s\"", nm->ss_lock);
	printf("lock_key: %s\n", nm->ss_lock);
	if (hl_value_len(v) >= 2) {
		rc = count_of(c, &ttl, "PTTL", nm->ss_lock, NULL, NULL);
		if (rc == 0) {
			fputs("locked: yes\nlock_holder: ", stdout);
			put_element(hl_value_at(v, 0));
			printf("\nlock_ttl_ms: %lld\n", ttl);
		}
	} else {
		printf("locked: no\n");
	}
	hl_value_free(v);
	if (rc == 0 && (rc = subscribers(c, nm->pq_chan, &listeners)) == 0)
		printf("wake_channel: %s\nlisteners: %lld\n", nm->pq_chan,
		       listeners);
	return rc;
}

/* The new queues: the list's part, then each kind's own. */
static int inspect_queue(hl_client *c, const char *name, const names *nm,
                         int kind)
{
	long long size = 0, held = 0, given = 0;
	int rc;
	if (kind == K_DELAYED_QUEUE)
		return inspect_delayed(c, name, nm);
	if ((rc = inspect_collection(c, name, kind, &size)) != 0)
		return rc;
	if (kind >= K_PRIORITY_QUEUE)
		return inspect_priority(c, nm);
	if ((rc = inspect_takes(c, name, nm, &held)) != 0 ||
	    (kind == K_BOUNDED_BLOCKING_QUEUE &&
	     (rc = inspect_capacity(c, nm, size, held)) != 0))
		return rc;
	/* takes whose elements were given back after their lease ended
	 * (kept 10 minutes: a sign of consumers killed or cut off) */
	if ((rc = count_of(c, &given, "ZCARD", nm->given, NULL, NULL)) != 0)
		return rc;
	printf("given_back_key: %s\ngiven_back_recently: %lld\n", nm->given,
	       given);
	return 0;
}

/* inspect of a grid object of kind, NAME's type being type. */
static int inspect_grid(hl_client *c, const char *name, const names *nm,
                        int kind, const char *type, const char *label)
{
	const char *want = grid_type(kind);
	printf("name: %s\n", name);
	if (*want && strcmp(type, want) != 0 && strcmp(type, "none") != 0) {
		warn("\"%s\" is a %s, not a %s", name, type,
		     grid_kind_name(kind));
		printf("kind: %s (not a %s)\n", type, grid_kind_name(kind));
		return 0;
	}
	printf("kind: %s\n", label ? label : grid_kind_name(kind));
	switch (kind) {
	case K_BUCKET:
	case K_ATOMIC_LONG:
	case K_ATOMIC_DOUBLE:
		return inspect_string(c, name, kind);
	case K_BIT_SET:
		return inspect_bit_set(c, name);
	case K_BLOOM_FILTER:
		return inspect_bloom_filter(c, name, nm);
	case K_RATE_LIMITER:
		return inspect_rate_limiter(c, name, nm);
	case K_LONG_ADDER:
	case K_DOUBLE_ADDER:
		return inspect_adder(c, nm);
	case K_BLOCKING_QUEUE:
	case K_BLOCKING_DEQUE:
	case K_BOUNDED_BLOCKING_QUEUE:
	case K_DELAYED_QUEUE:
	case K_PRIORITY_QUEUE:
	case K_PRIORITY_DEQUE:
	case K_PRIORITY_BLOCKING_QUEUE:
	case K_PRIORITY_BLOCKING_DEQUE:
		return inspect_queue(c, name, nm, kind);
	default: {
		long long size = 0;
		return inspect_collection(c, name, kind, &size);
	}
	}
}

/* 1 if the hash h (HGETALL) is a lock's: every field a hold
 * (<36-character client uuid>:<id>, an integer count) or an rwlock's
 * mode. */
static int is_lock_hash(const hl_value *h)
{
	size_t i;
	for (i = 0; i + 1 < hl_value_len(h); i += 2) {
		const hl_value *k = hl_value_at(h, i),
		               *v = hl_value_at(h, i + 1);
		if (strcmp(vstr(k), "mode") == 0)
			continue;
		if (vlen(k) < 38 || vstr(k)[36] != ':' ||
		    !is_integer(vstr(v), vlen(v)))
			return 0;
	}
	return 1;
}

/* The kind of a collection NAME of Redis type type (K_* or 0), its label
 * in *label when Redis cannot tell it exactly. A list, or nothing, under
 * NAME is: a delayed queue's destination when the delayed queue's zset or
 * list exists; a bounded blocking queue when its capacity key exists; a
 * priority queue when its comparator key exists or hilock takers listen
 * on its channel; a blocking queue when hilock's takers' hash exists; a
 * sorted_set when its comparator or lock key exists; else a list. */
static int collection_kind(hl_client *c, const char *name, const names *nm,
                           const char *type, int *kind, const char **label)
{
	char *cmp, *lock;
	long long n = 0;
	int rc, none = strcmp(type, "none") == 0;
	*kind = strcmp(type, "set") == 0    ? K_SET
	        : strcmp(type, "zset") == 0 ? K_SCORED_SORTED_SET
	        : strcmp(type, "list") == 0 ? K_LIST
	                                    : 0;
	if (*kind != K_LIST && !none)
		return 0;
	if ((rc = count_of(c, &n, "EXISTS", nm->delay_z, nm->delay_l, NULL)) !=
	            0 ||
	    n > 0) {
		*kind = n > 0 ? K_DELAYED_QUEUE : *kind;
		return rc;
	}
	if ((rc = count_of(c, &n, "EXISTS", nm->bqs, NULL, NULL)) != 0 ||
	    n > 0) {
		*kind = n > 0 ? K_BOUNDED_BLOCKING_QUEUE : *kind;
		return rc;
	}
	if ((rc = count_of(c, &n, "EXISTS", nm->pq_cmp, NULL, NULL)) != 0 ||
	    (!n && (rc = subscribers(c, nm->pq_chan, &n)) != 0))
		return rc;
	if (n > 0) {
		*kind = K_PRIORITY_QUEUE;
		*label = "priority_queue (or priority_deque, or their "
		         "blocking forms)";
		return 0;
	}
	if ((rc = count_of(c, &n, "EXISTS", nm->takers, NULL, NULL)) != 0 ||
	    n > 0) {
		*kind = n > 0 ? K_BLOCKING_QUEUE : *kind;
		if (n > 0)
			*label = "blocking_queue (or blocking_deque)";
		return rc;
	}
	if (none)
		return 0;
	cmp = derived("redisson_sortedset_comparator:", name, "");
	lock = derived("redisson_sortedset_lock:", name, "");
	rc = count_of(c, &n, "EXISTS", cmp, lock, NULL);
	free(cmp);
	free(lock);
	if (rc == 0 && n > 0)
		*kind = K_SORTED_SET;
	return rc;
}

/* The kind a string NAME holds: a Bloom filter's bitmap when its config
 * exists; else an atomic long (a decimal integer), an atomic double (a
 * decimal number) or a bucket (a bit set looks like one). */
static int string_kind(hl_client *c, const char *name, const names *nm,
                       int *kind)
{
	hl_value *v = NULL;
	long long cfg = 0;
	int rc;
	char shown[16];
	if ((rc = count_of(c, &cfg, "EXISTS", nm->config, NULL, NULL)) != 0)
		return rc;
	if (cfg > 0) {
		*kind = K_BLOOM_FILTER;
		return 0;
	}
	snprintf(shown, sizeof shown, "%d", 400);
	if ((rc = rq(c, &v, NULL, "GETRANGE", name, "0", shown, NULL)) != HL_OK)
		return fail_hl(rc, "GETRANGE \"%s\"", name);
	if (is_integer(vstr(v), vlen(v)))
		*kind = K_ATOMIC_LONG;
	else if (is_number(vstr(v), vlen(v)))
		*kind = K_ATOMIC_DOUBLE;
	else
		*kind = K_BUCKET;
	hl_value_free(v);
	return 0;
}

/* ---- inspect: locks ---------------------------------------------------------
 */
/* What inspect reads of the lock NAME. */
typedef struct seen {
	char type[32];       /* TYPE NAME: hash, none, another type */
	char mode[16];       /* a read-write lock's mode field; "" if none */
	hl_value *fields;    /* HGETALL NAME (a hash) */
	long long ttl;       /* PTTL NAME */
	hl_value *queue;     /* LRANGE of the fair queue */
	hl_value *deadlines; /* ZRANGE of the fair deadlines, WITHSCORES */
	hl_value *token;     /* GET of the fenced token */
	hl_value *line;      /* ZRANGE of the default lock's line, WITHSCORES */
	hl_value *linedl;    /* ZRANGE of its deadlines, WITHSCORES */
	double redis_ms;     /* Redis's TIME (the line's clock) */
} seen;

static void seen_free(seen *s)
{
	hl_value_free(s->fields);
	hl_value_free(s->queue);
	hl_value_free(s->deadlines);
	hl_value_free(s->token);
	hl_value_free(s->line);
	hl_value_free(s->linedl);
}

/* The hash NAME, when it is one (s->type read already). */
static int inspect_read_hash(hl_client *c, const char *name, seen *s)
{
	hl_value *r = NULL;
	const hl_value *mode;
	int rc;
	if (strcmp(s->type, "hash") != 0)
		return 0;
	if ((rc = rq(c, &s->fields, NULL, "HGETALL", name, NULL)) != HL_OK)
		return fail_hl(rc, "HGETALL \"%s\"", name);
	if ((mode = hfield(s->fields, "mode")) != NULL)
		snprintf(s->mode, sizeof s->mode, "%s", vstr(mode));
	if ((rc = rq(c, &r, NULL, "PTTL", name, NULL)) != HL_OK)
		return fail_hl(rc, "PTTL \"%s\"", name);
	s->ttl = vnum(r);
	hl_value_free(r);
	return 0;
}

static int inspect_read(hl_client *c, const names *nm, seen *s)
{
	int rc;
	/* A fair lock's queue (first in line first) and its waiters'
	 * deadlines (wall-clock ms; PROTOCOL 3); read one after the other,
	 * so a waiter that joins between the two shows no deadline. */
	if ((rc = rq(c, &s->queue, NULL, "LRANGE", nm->queue, "0", "-1",
	             NULL)) != HL_OK)
		return fail_hl(rc, "LRANGE %s", nm->queue);
	if (hl_value_len(s->queue) > 0 &&
	    (rc = rq(c, &s->deadlines, NULL, "ZRANGE", nm->timeout, "0", "-1",
	             "WITHSCORES", NULL)) != HL_OK)
		return fail_hl(rc, "ZRANGE %s", nm->timeout);
	if ((rc = rq(c, &s->token, NULL, "GET", nm->token, NULL)) != HL_OK)
		return fail_hl(rc, "GET %s", nm->token);
	/* The default lock's line (hilock's own; PROTOCOL "The waiting
	 * line"): places in order, their deadlines on Redis's clock. */
	if ((rc = rq(c, &s->line, NULL, "ZRANGE", nm->line, "0", "-1",
	             "WITHSCORES", NULL)) != HL_OK)
		return fail_hl(rc, "ZRANGE %s", nm->line);
	if (hl_value_len(s->line) > 0) {
		hl_value *t = NULL;
		if ((rc = rq(c, &s->linedl, NULL, "ZRANGE", nm->linedl, "0",
		             "-1", "WITHSCORES", NULL)) != HL_OK)
			return fail_hl(rc, "ZRANGE %s", nm->linedl);
		if ((rc = rq(c, &t, nm->line, "TIME", NULL)) != HL_OK)
			return fail_hl(rc, "TIME");
		if (hl_value_len(t) == 2)
			s->redis_ms =
			        strtod(vstr(hl_value_at(t, 0)), NULL) * 1000.0 +
			        strtod(vstr(hl_value_at(t, 1)), NULL) / 1000.0;
		hl_value_free(t);
	}
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
	if (o->kind >= 0 && s->fields && is_limiter_hash(s->fields))
		warn("\"%s\" is a rate limiter's hash, not a lock", name);

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

static int is_write_hold(const hl_value *k)
{
	size_t kl = vlen(k);
	return kl > 6 && strcmp(vstr(k) + kl - 6, ":write") == 0;
}

static void inspect_holders(const seen *s)
{
	size_t i, nholders = 0, nreaders = 0;
	const hl_value *f = s->fields;
	for (i = 0; i + 1 < hl_value_len(f); i += 2) {
		const hl_value *k = hl_value_at(f, i);
		if (strcmp(vstr(k), "mode") == 0)
			continue;
		nholders++;
		if (!is_write_hold(k))
			nreaders++;
	}
	printf("ttl_ms: %lld\n", s->ttl);
	printf("holders: %zu\n", nholders);
	for (i = 0; i + 1 < hl_value_len(f); i += 2) {
		const hl_value *k = hl_value_at(f, i);
		if (strcmp(vstr(k), "mode") == 0)
			continue;
		printf("holder: %s count=%s%s\n", vstr(k),
		       vstr(hl_value_at(f, i + 1)),
		       is_write_hold(k) ? " write" : "");
	}
	/* an rwlock's readers: its fields but mode and the write hold (a
	 * writer's own read holds count: it is a reader too) */
	if (s->mode[0])
		printf("readers: %zu\n", nreaders);
}

static int inspect_lock(hl_client *c, const cli *o, const char *name,
                        const names *nm, seen *s)
{
	int rc, kind;
	long long waiters = -1, lined = 0;
	size_t i, queued = hl_value_len(s->queue);
	int64_t now;

	kind = o->kind >= 0 ? o->kind : kind_shown(s->mode, (long long)queued);
	printf("name: %s\n", name);
	inspect_kind(o, name, s, kind, queued);
	if (strcmp(s->type, "hash") == 0 ||
	    (strcmp(s->type, "none") == 0 && queued > 0))
		inspect_holders(s);
	if (hl_value_type(s->token) == HL_VALUE_BYTES)
		printf("token: %s\n", vstr(s->token));
	now = wall_ms();
	for (i = 0; i < queued; i++) {
		const hl_value *q = hl_value_at(s->queue, i);
		double deadline;
		printf("queued: %s", vstr(q));
		if (zscore_in(s->deadlines, vstr(q), vlen(q), &deadline))
			printf(" deadline_in_ms=%lld\n",
			       (long long)llround(deadline - (double)now));
		else
			printf(" deadline_in_ms=none\n");
	}

	/* The default lock's line: hilock clients, first in line first,
	 * each with its ticket and when its place lapses. */
	for (i = 0; i + 1 < hl_value_len(s->line); i += 2) {
		const hl_value *m = hl_value_at(s->line, i);
		double deadline;
		printf("in line: %s ticket=%s", vstr(m),
		       vstr(hl_value_at(s->line, i + 1)));
		if (zscore_in(s->linedl, vstr(m), vlen(m), &deadline)) {
			printf(" deadline_in_ms=%lld\n",
			       (long long)llround(deadline - s->redis_ms));
			if (deadline >= s->redis_ms)
				lined++;
		} else {
			printf(" deadline_in_ms=none\n");
		}
	}

	/* Waiters: a fair lock's are its queue (each listens on a channel
	 * of its own); a spin lock's poll and cannot be counted; the
	 * others' are the subscribers of the kind's channel, and for the
	 * default lock the clients in its line (of whom only the first
	 * listens to the channel: counted once). */
	if (is_fair_kind(kind))
		waiters = (long long)queued;
	else if (kind != HL_LOCK_SPIN &&
	         (rc = subscribers(
	                  c, is_rw_kind(kind) ? nm->rwchannel : nm->channel,
	                  &waiters)) != 0)
		return rc;
	if (lined > 0)
		waiters = lined + (waiters > 1 ? waiters - 1 : 0);
	printf("waiters: %lld\n", waiters);
	return 0;
}

static int cmd_inspect(cli *o, const char *name)
{
	hl_client *c = NULL;
	names nm;
	seen s;
	int rc, grid = o->grid;
	const char *label = NULL;

	memset(&s, 0, sizeof s);
	s.ttl = -2;
	if ((rc = client_open(o, &c)) != 0)
		return rc;
	names_init(&nm, name);
	if ((rc = key_type(c, name, s.type, sizeof s.type)) != 0)
		goto out;
	/* Without --kind, the kind is what Redis shows: a string is a grid
	 * object; a hash with a rate limiter's fields a rate limiter, else a
	 * lock; nothing under NAME, a lock's queue, a Bloom filter's config
	 * or an adder's listeners, else a free lock. */
	if (o->kind < 0 && !grid && strcmp(s.type, "string") == 0 &&
	    (rc = string_kind(c, name, &nm, &grid)) != 0)
		goto out;
	if (o->kind < 0 && !grid &&
	    (rc = collection_kind(c, name, &nm, s.type, &grid, &label)) != 0)
		goto out;
	/* a big hash is a map: a lock's has a field per holder, and its
	 * HGETALL would be the whole map */
	if (o->kind < 0 && !grid && strcmp(s.type, "hash") == 0) {
		long long n = 0;
		if ((rc = count_of(c, &n, "HLEN", name, NULL, NULL)) != 0)
			goto out;
		if (n > 1000)
			grid = K_MAP;
	}
	if (!grid && (rc = inspect_read_hash(c, name, &s)) != 0)
		goto out;
	if (o->kind < 0 && !grid && s.fields && is_limiter_hash(s.fields))
		grid = K_RATE_LIMITER;
	else if (o->kind < 0 && !grid && s.fields && !is_lock_hash(s.fields))
		grid = K_MAP;
	if (!grid && (rc = inspect_read(c, &nm, &s)) != 0)
		goto out;
	if (o->kind < 0 && !grid && strcmp(s.type, "none") == 0 &&
	    hl_value_len(s.queue) == 0 &&
	    hl_value_type(s.token) != HL_VALUE_BYTES) {
		long long cfg = 0, listeners = 0;
		if ((rc = count_of(c, &cfg, "EXISTS", nm.config, NULL, NULL)) !=
		            0 ||
		    (!cfg && (rc = subscribers(c, nm.adder, &listeners)) != 0))
			goto out;
		if (cfg)
			grid = K_BLOOM_FILTER;
		else if (listeners > 0) {
			grid = K_LONG_ADDER;
			label = "adder (long_adder or double_adder)";
		}
	}
	if (grid)
		rc = inspect_grid(c, name, &nm, grid, s.type, label);
	else
		rc = inspect_lock(c, o, name, &nm, &s);
	if (rc == 0 && fflush(stdout) != 0)
		rc = EXIT_OSERR;
out:
	seen_free(&s);
	names_free(&nm);
	hl_client_free(c);
	return rc;
}

/* ---- list -------------------------------------------------------------------
 */
/* A read of one key (key, klen: binary-safe) with C-string words around
 * it: words[0] KEY words[1..]. */
static int rq_key(hl_client *c, hl_value **out, const char *key, size_t klen,
                  int nwords, const char *const *words)
{
	const char *argv[MAXWORDS];
	size_t lens[MAXWORDS];
	int i, n = 0;
	argv[n] = words[0];
	lens[n++] = strlen(words[0]);
	argv[n] = key;
	lens[n++] = klen;
	for (i = 1; i < nwords && n < MAXWORDS; i++) {
		argv[n] = words[i];
		lens[n++] = strlen(words[i]);
	}
	return hl_client_command(out, c, n, argv, lens, NULL, 0, 1);
}

/* One hash SCAN found on a node (its name binary-safe): its line. */
static int list_key(hl_client *c, const char *key, size_t klen)
{
	static const char *const hlen[] = {"HLEN"}, *const pttl[] = {"PTTL"},
	                         *const exists[] = {"EXISTS"},
	                         *const hmget[] = {"HMGET",         "mode",
	                                           "rate",          "interval",
	                                           "type",          "size",
	                                           "hashIterations"};
	hl_value *len = NULL, *f = NULL, *ttl = NULL, *q = NULL;
	const char *mode;
	char *queue = NULL;
	hl_lock *fair = NULL;
	long long holders, queued = 0;
	int rc;

	if ((rc = rq_key(c, &len, key, klen, 1, hlen)) != HL_OK ||
	    (rc = rq_key(c, &f, key, klen, 7, hmget)) != HL_OK ||
	    (rc = rq_key(c, &ttl, key, klen, 1, pttl)) != HL_OK) {
		rc = fail_hl(rc, "HLEN/HMGET/PTTL \"%.*s\"", (int)klen, key);
		goto out;
	}
	holders = vnum(len);
	mode = hl_value_type(hl_value_at(f, 0)) == HL_VALUE_BYTES
	               ? vstr(hl_value_at(f, 0))
	               : NULL;
	/* Its fair queue, if it has one (the same slot as the name, so on
	 * the same node; a name whose derived keys would be elsewhere in a
	 * cluster is not a lock the library can take, and gets no fair
	 * check). */
	if (!mode &&
	    hl_lock_new_kind(&fair, c, HL_LOCK_FAIR, key, klen) == HL_OK) {
		size_t ql = strlen("redisson_lock_queue:") + klen + 2;
		int braces = memchr(key, '{', klen) == NULL;
		if (!(queue = malloc(ql))) {
			rc = EXIT_OSERR;
			goto out;
		}
		ql = (size_t)sprintf(queue, "redisson_lock_queue:%s",
		                     braces ? "{" : "");
		memcpy(queue + ql, key, klen);
		ql += klen;
		if (braces)
			queue[ql++] = '}';
		if ((rc = rq_key(c, &q, queue, ql, 1, exists)) != HL_OK) {
			rc = fail_hl(rc, "EXISTS %.*s", (int)ql, queue);
			goto out;
		}
		queued = vnum(q);
	}
	rc = 0;
	if (holders == 0 && vnum(ttl) == -2)
		goto out; /* deleted since SCAN saw it */
	fwrite(key, 1, klen, stdout);
	if (hl_value_type(hl_value_at(f, 1)) == HL_VALUE_BYTES &&
	    hl_value_type(hl_value_at(f, 2)) == HL_VALUE_BYTES &&
	    hl_value_type(hl_value_at(f, 3)) == HL_VALUE_BYTES)
		printf("\t0\t%lld\trate_limiter\n", vnum(ttl));
	else if (hl_value_type(hl_value_at(f, 4)) == HL_VALUE_BYTES &&
	         hl_value_type(hl_value_at(f, 5)) == HL_VALUE_BYTES)
		printf("\t0\t%lld\tbloom_filter_config\n", vnum(ttl));
	else
		printf("\t%lld\t%lld\t%s%s\n", holders - (mode ? 1 : 0),
		       vnum(ttl),
		       mode         ? "rwlock:"
		       : queued > 0 ? "fairlock"
		                    : "lock",
		       mode ? mode : "");
out:
	hl_lock_free(fair);
	free(queue);
	hl_value_free(len);
	hl_value_free(f);
	hl_value_free(ttl);
	hl_value_free(q);
	return rc;
}

/* SCAN one master for hashes matching pattern; prints them. */
static int list_node(hl_client *c, const char *node, const char *pattern)
{
	char cursor[32] = "0";
	int rc = 0;
	do {
		const char *argv[8] = {"SCAN",  cursor, "MATCH", pattern,
		                       "COUNT", "1000", "TYPE",  "hash"};
		size_t lens[8];
		hl_value *r = NULL;
		const hl_value *keys;
		size_t i;
		int hrc;
		for (i = 0; i < 8; i++)
			lens[i] = strlen(argv[i]);
		hrc = hl_client_command_node(&r, c, node, 8, argv, lens, 1);
		if (hrc != HL_OK)
			return fail_hl(hrc, "SCAN on %s", node);
		if (hl_value_len(r) != 2) {
			hl_value_free(r);
			fprintf(stderr, "%s: SCAN on %s: unexpected reply\n",
			        prog, node);
			return EXIT_UNAVAILABLE;
		}
		snprintf(cursor, sizeof cursor, "%s", vstr(hl_value_at(r, 0)));
		keys = hl_value_at(r, 1);
		for (i = 0; i < hl_value_len(keys) && rc == 0; i++)
			rc = list_key(c, vstr(hl_value_at(keys, i)),
			              vlen(hl_value_at(keys, i)));
		hl_value_free(r);
	} while (rc == 0 && strcmp(cursor, "0") != 0);
	return rc;
}

static int cmd_list(cli *o, const char *pattern)
{
	hl_client *c = NULL;
	hl_value *nodes = NULL;
	size_t i;
	int rc;

	if ((rc = client_open(o, &c)) != 0)
		return rc;
	/* Every master: a cluster's (as the client loaded its slot map when
	 * it connected), else the master. */
	if ((rc = hl_client_masters(&nodes, c)) != HL_OK) {
		rc = fail_hl(rc, "list");
		goto out;
	}
	for (i = 0; i < hl_value_len(nodes) && rc == 0; i++)
		rc = list_node(c, vstr(hl_value_at(nodes, i)), pattern);
	if (rc == 0 && fflush(stdout) != 0)
		rc = EXIT_OSERR;
out:
	hl_value_free(nodes);
	hl_client_free(c);
	return rc;
}

/* ---- unlock -----------------------------------------------------------------
 */
/* The type of the key NAME and, when kind is not NULL, the kind Redis shows
 * (kind_shown: HGET NAME mode, EXISTS of the fair queue); *limiter = 1
 * for a rate limiter's hash. */
static int unlock_read(hl_client *c, const char *name, const names *nm,
                       char *type, size_t type_len, int *kind, int *limiter)
{
	hl_value *r = NULL;
	char mode[16] = "";
	long long queued = 0;
	int rc;

	*limiter = 0;
	if ((rc = key_type(c, name, type, type_len)) != 0)
		return rc;
	if (strcmp(type, "hash") == 0) {
		if ((rc = rq(c, &r, NULL, "HMGET", name, "mode", "rate",
		             "interval", "type", NULL)) != HL_OK)
			return fail_hl(rc, "HMGET \"%s\"", name);
		if (hl_value_type(hl_value_at(r, 0)) == HL_VALUE_BYTES)
			snprintf(mode, sizeof mode, "%s",
			         vstr(hl_value_at(r, 0)));
		*limiter = hl_value_type(hl_value_at(r, 1)) == HL_VALUE_BYTES &&
		           hl_value_type(hl_value_at(r, 2)) == HL_VALUE_BYTES &&
		           hl_value_type(hl_value_at(r, 3)) == HL_VALUE_BYTES;
		hl_value_free(r);
	}
	if (!kind)
		return 0;
	if ((rc = count_of(c, &queued, "EXISTS", nm->queue, NULL, NULL)) != 0)
		return rc;
	*kind = kind_shown(mode, queued);
	return 0;
}

static int cmd_unlock(cli *o, const char *name)
{
	hl_client *c = NULL;
	hl_lock *l = NULL;
	names nm;
	int rc, existed = 0, tries, kind = o->kind, limiter = 0;
	char type[32];

	if ((rc = client_open(o, &c)) != 0)
		return rc;
	names_init(&nm, name);
	for (tries = 1;; tries++) {
		if ((rc = unlock_read(c, name, &nm, type, sizeof type,
		                      o->kind < 0 ? &kind : NULL, &limiter)) !=
		    0)
			goto out;
		if (strcmp(type, "hash") != 0 && strcmp(type, "none") != 0) {
			printf("\"%s\" is a %s, not a lock: left alone\n", name,
			       type);
			rc = EXIT_NOT_LOCKED;
			goto out;
		}
		if (limiter) {
			printf("\"%s\" is a rate limiter, not a lock: left "
			       "alone\n",
			       name);
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
	hl_lock_free(l);
	names_free(&nm);
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
