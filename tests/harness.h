/*
 * Test harness for the hilock C tests.
 *
 * - Throwaway redis-server instances (ht_redis_*): a free 127.0.0.1 port, a
 *   mkdtemp directory, nothing persisted; stopped at exit, and killed by
 *   the kernel (PR_SET_PDEATHSIG) if the test process dies first.
 * - Assertion macros that print file:line, the status name and
 *   hl_error_last() on failure, then stop the servers and exit 1.
 * - A raw hiredis side channel to inspect Redis state directly.
 * - Test cases: each executable holds several cases; ctest runs each case
 *   in its own process (`test_x case_name`), so one failure names itself
 *   and a deadlock is a timeout of that case only.
 *
 * Functions that start or stop servers must run on the main thread (the
 * death signal is tied to the thread that forked the server).
 */
#ifndef HILOCK_TEST_HARNESS_H
#define HILOCK_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "hilock.h"

/* ------------------------------------------------------------------------
 * Test cases
 * ------------------------------------------------------------------------ */
typedef struct ht_case {
	const char *name;
	void (*fn)(void);
} ht_case;

/* Runs argv[1] (a case name), or every case in order when there is none.
 * Re-executes the test under valgrind first when HILOCK_VALGRIND=1 and
 * ctest marked the test valgrind-appropriate (HILOCK_TEST_VALGRIND=1). */
int ht_main(int argc, char **argv, const ht_case *cases, size_t n_cases);

#define HT_MAIN(...)                                                           \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		static const ht_case cases_[] = {__VA_ARGS__};                 \
		return ht_main(argc, argv, cases_,                             \
		               sizeof cases_ / sizeof cases_[0]);              \
	}
#define HT_CASE(fn)                                                            \
	{                                                                      \
#fn, fn                                                        \
	}

/* ------------------------------------------------------------------------
 * Failure reporting
 * ------------------------------------------------------------------------ */

/* Print "file:line: message" and end the test (exit status 1). From the
 * test process: stops its servers first. From a forked child: _exit(1). */
void ht_fail(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4), noreturn));

/* Print a progress note ("# ..."), flushed. */
void ht_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define HT_FAIL(...) ht_fail(__FILE__, __LINE__, __VA_ARGS__)

/* cond must hold. */
#define HT_CHECK(cond)                                                         \
	do {                                                                   \
		if (!(cond))                                                   \
			HT_FAIL("check failed: %s", #cond);                    \
	} while (0)

/* cond must hold; printf-style detail on failure. */
#define HT_CHECKF(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, \
			        __LINE__, #cond);                              \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			HT_FAIL("(see above)");                                \
		}                                                              \
	} while (0)

/* expr (a hilock call) must return HL_OK. */
#define HT_OK(expr)                                                            \
	do {                                                                   \
		int ht_rc_ = (expr);                                           \
		if (ht_rc_ != HL_OK)                                           \
			HT_FAIL("%s returned %s (%s): %s", #expr,              \
			        hl_status_name(ht_rc_), hl_status_str(ht_rc_), \
			        hl_error_last());                              \
	} while (0)

/* expr must return the status want, and (for an error) leave a non-empty
 * hl_error_last() and hl_error_last_code() == want. */
#define HT_RC(expr, want)                                                      \
	do {                                                                   \
		int ht_rc_ = (expr);                                           \
		ht_check_rc(__FILE__, __LINE__, #expr, ht_rc_, (want));        \
	} while (0)

/* expr must return one of two statuses (documented alternatives). */
#define HT_RC2(expr, want1, want2)                                             \
	do {                                                                   \
		int ht_rc_ = (expr);                                           \
		ht_check_rc(__FILE__, __LINE__, #expr, ht_rc_,                 \
		            ht_rc_ == (want2) ? (want2) : (want1));            \
	} while (0)

/* a == b as int64_t. */
#define HT_EQ(a, b)                                                            \
	do {                                                                   \
		long long ht_a_ = (long long)(a), ht_b_ = (long long)(b);      \
		if (ht_a_ != ht_b_)                                            \
			HT_FAIL("expected %s == %s, got %lld and %lld", #a,    \
			        #b, ht_a_, ht_b_);                             \
	} while (0)

/* lo <= v <= hi as int64_t. */
#define HT_RANGE(v, lo, hi)                                                    \
	do {                                                                   \
		long long ht_v_ = (long long)(v);                              \
		long long ht_lo_ = (long long)(lo), ht_hi_ = (long long)(hi);  \
		if (ht_v_ < ht_lo_ || ht_v_ > ht_hi_)                          \
			HT_FAIL("expected %s in [%lld, %lld], got %lld", #v,   \
			        ht_lo_, ht_hi_, ht_v_);                        \
	} while (0)

/* Strings equal. */
#define HT_STREQ(a, b)                                                         \
	do {                                                                   \
		const char *ht_a_ = (a), *ht_b_ = (b);                         \
		if (!ht_a_ || !ht_b_ || strcmp(ht_a_, ht_b_) != 0)             \
			HT_FAIL("expected %s == %s, got \"%s\" and \"%s\"",    \
			        #a, #b, ht_a_ ? ht_a_ : "(null)",              \
			        ht_b_ ? ht_b_ : "(null)");                     \
	} while (0)

void ht_check_rc(const char *file, int line, const char *expr, int got,
                 int want);

/* ------------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in ms. */
int64_t ht_now_ms(void);
void ht_sleep_ms(int64_t ms);

/* Factor for upper time bounds: 1 normally, larger under sanitizers or
 * valgrind, or HILOCK_TEST_SCALE from the environment. */
int ht_scale(void);

/* 1 when running under valgrind (re-executed by the harness). */
int ht_under_valgrind(void);

/* ------------------------------------------------------------------------
 * redis-server
 * ------------------------------------------------------------------------ */
typedef struct ht_redis_opts {
	const char *requirepass;  /* --requirepass; NULL: none */
	int unixsocket;           /* 1: also listen on <dir>/redis.sock */
	const char *acl_user;     /* an extra ACL user (ACL SETUSER ... on
	                             ~* &* +@all), re-created on restart */
	const char *acl_password; /* its password */
} ht_redis_opts;

typedef struct ht_redis {
	int pid; /* 0 when stopped */
	int port;
	char dir[256];      /* the mkdtemp directory */
	char sock[300];     /* unix socket path ("" without) */
	char log[300];      /* its stdout and stderr */
	char password[128]; /* for the raw helper ("" without) */
	char url[512];      /* "redis://127.0.0.1:<port>" (no password) */
	ht_redis_opts opts;
} ht_redis;

/* Start a server (opts may be NULL). Fails the test on error. At most
 * HT_MAX_SERVERS per process; all are stopped at exit. */
#define HT_MAX_SERVERS 4
ht_redis *ht_redis_start(const ht_redis_opts *opts);

/* Stop it (SIGTERM, then SIGKILL after a bound); keeps the directory and
 * port so ht_redis_restart() can bring it back. */
void ht_redis_stop(ht_redis *r);

/* Stop (if running) and start again on the same port: an empty server. */
void ht_redis_restart(ht_redis *r);

/* Stop it and remove its directory. */
void ht_redis_destroy(ht_redis *r);

/* The first server started by ht_redis_default() (started on first use). */
ht_redis *ht_redis_default(void);

/* A port on 127.0.0.1 nobody listens on (bound to 0 then closed). */
int ht_free_port(void);

/* The server the harness runs: $REDIS_SERVER (a path or a name on PATH,
 * e.g. a valkey-server), else redis-server. Sentinels are the same binary
 * with --sentinel. */
const char *ht_server_bin(void);

/* 1 when the server binary can serve TLS, 0 when it was built without
 * (Valkey's PyPI build, a Redis built without BUILD_TLS). Probed once per
 * process, without a test server: started with a TLS port and no
 * certificate, a TLS build stops for the missing certificate, one without
 * TLS says it has no TLS support. why (may be NULL) gets its words. */
int ht_server_has_tls(char *why, size_t why_len);

/* ctest's SKIP_RETURN_CODE of every case (tests/CMakeLists.txt). */
#define HT_SKIP_STATUS 77

/* End the test as skipped: print "SKIPPED: <message>", stop the servers
 * and exit with HT_SKIP_STATUS. From the test's main thread only. */
void ht_skip(const char *fmt, ...)
        __attribute__((format(printf, 1, 2), noreturn));

/* Skip the test (ht_skip, with the reason) unless the server can serve
 * TLS. Every TLS server the harnesses start calls it first. */
void ht_require_tls(void);

/* ------------------------------------------------------------------------
 * hilock helpers
 * ------------------------------------------------------------------------ */

/* A client for r with watchdog_timeout_ms = watchdog_ms (0: default).
 * Fails the test on error. */
hl_client *ht_client(ht_redis *r, int64_t watchdog_ms);

/* A client for url with opts (NULL: defaults). Fails the test on error. */
hl_client *ht_client_url(const char *url, const hl_client_options *opts);

/* A lock handle for the C string name. Fails the test on error. */
hl_lock *ht_lock(hl_client *c, const char *name);

/* The owner string of lock for the calling thread (static per thread). */
const char *ht_owner(const hl_lock *lock);

/* ------------------------------------------------------------------------
 * Raw hiredis side channel
 * ------------------------------------------------------------------------ */

/* A new connection to r (authenticated, db 0). Fails the test on error. */
redisContext *ht_raw_new(const ht_redis *r);

/* Run a command (hiredis format, %b for binary); fails the test on a
 * connection error (a Redis error reply is returned). Free the reply. */
redisReply *ht_raw(redisContext *c, const char *fmt, ...);

/* Shared raw connection for the main thread's checks (one per server). */
redisContext *ht_raw_of(ht_redis *r);

/* Commands on the shared connection of r; the key is binary (k, klen). */
long long ht_pttl(ht_redis *r, const void *k, size_t klen);
int ht_exists(ht_redis *r, const void *k, size_t klen);
/* HGET as an integer; -1 when the field (or key) is missing. */
long long ht_hget_int(ht_redis *r, const void *k, size_t klen,
                      const char *field);
/* Number of fields of hash k. */
long long ht_hlen(ht_redis *r, const void *k, size_t klen);
/* GET as an integer (0 if missing). */
long long ht_get_int(redisContext *c, const char *k);
void ht_set_int(redisContext *c, const char *k, long long v);
void ht_del(ht_redis *r, const void *k, size_t klen);
/* PUBSUB NUMSUB channel. */
long long ht_numsub(ht_redis *r, const void *ch, size_t chlen);
/* INFO stats total_commands_processed. */
long long ht_total_commands(ht_redis *r);
/* How many times Redis ran cmd (lower case, as INFO commandstats names
 * it: "evalsha", "subscribe"); 0 if never. */
long long ht_cmd_calls(ht_redis *r, const char *cmd);

/* A subscriber connection to r, subscribed to channel ch (confirmed). */
redisContext *ht_sub_new(ht_redis *r, const void *ch, size_t chlen);
/* The next published message: its payload (malloc'd, NUL-terminated) and,
 * if chbuf, its channel. Fails the test if none arrives within 5 s. */
char *ht_sub_next(redisContext *s, char *chbuf, size_t chbuf_len);

/* Run fn(arg) on a new thread; join it with a bound (fails on timeout). */
#include <pthread.h>
pthread_t ht_thread_start(void *(*fn)(void *), void *arg);
void ht_thread_join(pthread_t t, int64_t timeout_ms);

/* C-string shorthands. */
#define HT_S(s) (s), strlen(s)

/* Wait until pred(arg) is true, at most timeout_ms (scaled). Returns 1 if it
 * became true, 0 on timeout. Polls every 10 ms: for test-side observation
 * only. */
int ht_wait_until(int (*pred)(void *), void *arg, int64_t timeout_ms);
/* Wait (10 s, scaled) until c's waiting gauge (hl_client_stats .waiting)
 * is n: that many of its waits wait now. */
void ht_wait_waiting_at(const char *file, int line, hl_client *c, uint64_t n);
#define ht_wait_waiting(c, n) ht_wait_waiting_at(__FILE__, __LINE__, c, n)

/* ------------------------------------------------------------------------
 * Tasks and threads
 * ------------------------------------------------------------------------ */

/* The process's thread count, as the kernel has it. */
int ht_threads_now(void);

/* 1 if fd is readable within ms. */
int ht_fd_readable(int fd, int ms);

/* The next completed task of c, waiting for the client's task fd at most
 * ms (scaled); fails the test if none comes. */
hl_task *ht_next_task(hl_client *c, int64_t ms);

/* The task's result (hl_task_result) once done, within ms (scaled). */
int ht_task_result(hl_task *t, int *out, int64_t ms);

/* ------------------------------------------------------------------------
 * Fault injection: a TCP proxy between a client and a server
 * ------------------------------------------------------------------------
 * tests/tools/faultproxy (HILOCK_FAULTPROXY in the environment overrides
 * the path built in) listens on a free 127.0.0.1 port and forwards each
 * connection to 127.0.0.1:<upstream_port>. Commands (ht_proxy_cmd):
 *   "reset"          every current connection pair closed with RST (both
 *                    sides); later connections work
 *   "blackhole on"   nothing forwarded, nothing read: data waits in the
 *                    kernel; new connections are accepted but get nothing
 *   "blackhole off"  everything held flows again (late: a delayed packet)
 *   "drop on|off"    data read in either direction is discarded
 *   "delay MS"       each chunk, in each direction, is held MS ms (so a
 *                    round trip takes 2 * MS more); "delay 0" removes it
 * Each returns once the effect is in place. Start and stop on the main
 * thread (like servers); stopped at exit, and the proxy exits by itself
 * when the test process dies. */
typedef struct ht_proxy {
	int pid; /* 0 when stopped */
	int port;
	char url[128]; /* "redis://127.0.0.1:<port>" */
	int upstream_port;
	int to_fd;     /* its stdin */
	int from_fd;   /* its stdout */
	char buf[256]; /* answer bytes read but not consumed */
	size_t buf_len;
} ht_proxy;

#define HT_MAX_PROXIES 4

/* Start a proxy to 127.0.0.1:upstream_port. Fails the test on error. */
ht_proxy *ht_proxy_start(int upstream_port);

/* Send one command; fail the test unless it answers "ok" within 5 s
 * (scaled). */
void ht_proxy_cmd(ht_proxy *p, const char *cmd);

/* The number of connection pairs the proxy holds open. */
long ht_proxy_count(ht_proxy *p);

/* Stop it (quit, then SIGKILL after a bound). */
void ht_proxy_stop(ht_proxy *p);

/* ------------------------------------------------------------------------
 * Critical-section overlap checker
 * ------------------------------------------------------------------------
 * Call ht_cs_enter() right after acquiring a lock and ht_cs_leave() right
 * before releasing it: each appends one line ("enter <tag>\n",
 * "leave <tag>\n") to path with a single write() on an O_APPEND descriptor
 * (any thread or forked child). Since each line is written while the lock
 * is held, the file's order is the real order of the sections: an overlap
 * shows as two enters in a row. The tag (no newline) names the holder. */
void ht_cs_enter(const char *path, const char *tag);
void ht_cs_leave(const char *path, const char *tag);

/* The number of complete sections in path, or -1 (with the reason and the
 * line number in why) unless its lines strictly alternate "enter T" and
 * "leave T" with the same T in each pair and end with a leave. A missing
 * file is an error; an empty one has 0 sections. */
long ht_cs_verify(const char *path, char *why, size_t why_len);

/* ht_cs_verify(), failing the test on -1. */
long ht_cs_check(const char *path);

/* A contending process for the overlap checks: fork a child that makes
 * its own client (mk(arg), called in the child), then for duration_ms
 * takes the lock called name (waiting up to 1 s each time, watchdog
 * lease), records the critical section (a few ms) in path under tag,
 * and releases it; a release the network ate is left to its lease. The
 * child exits 0 if it got the lock at least once and never found its hold
 * lost inside a section, 3 if it never got it, 4 if it lost a hold.
 * ht_contenders_wait() reaps children and fails the test on any other
 * status. */
int ht_contender(hl_client *(*mk)(void *arg), void *arg, const char *name,
                 const char *path, const char *tag, int64_t duration_ms);
void ht_contenders_wait(const int *pids, int n);

#endif
