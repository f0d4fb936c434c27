/*
 * base/sys: the portable system-call wrappers (core/src/base/sys.c), linked
 * from the static library. The same cases run in the normal build (Linux's
 * eventfd, MSG_NOSIGNAL, getrandom, ...) and in the HILOCK_FORCE_PORTABLE
 * build (pipes, SIGPIPE blocked around send, /dev/urandom, the wall-clock
 * condition wait), which is how the fallbacks the core uses on macOS and
 * the BSDs are tested on Linux. No Redis: each case is a few system calls.
 *
 * Usage: test_sys <case> (or --list). A case that fails prints why and
 * exits 1; each ends itself after 30 s (alarm).
 */
#include "base/base.h"
#include "base/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
			        "%s:%d: CHECK failed: %s (errno %s)\n",        \
			        __FILE__, __LINE__, #cond, strerror(errno));   \
			exit(1);                                               \
		}                                                              \
	} while (0)

static int readable(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	int rc;
	do
		rc = poll(&p, 1, 0);
	while (rc < 0 && errno == EINTR);
	CHECK(rc >= 0);
	return rc > 0 && (p.revents & POLLIN);
}

static void check_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);
	CHECK(fl >= 0 && (fl & O_NONBLOCK));
	CHECK(fdfl >= 0 && (fdfl & FD_CLOEXEC));
}

/* The kind this build must make: a pipe when forced (or without eventfd). */
static void check_kind(const hl_notify *n)
{
	struct stat st;
	int fifo;
	CHECK(fstat(n->rfd, &st) == 0);
	fifo = S_ISFIFO(st.st_mode);
#if defined(HL_TEST_FORCE_PORTABLE)
	CHECK(strcmp(hl__notify_kind(), "pipe") == 0);
#endif
	if (strcmp(hl__notify_kind(), "pipe") == 0) {
		CHECK(fifo);
		CHECK(n->wfd != n->rfd);
		CHECK(fstat(n->wfd, &st) == 0 && S_ISFIFO(st.st_mode));
	} else {
		CHECK(!fifo);
		CHECK(n->wfd == n->rfd);
	}
}

/* A notifier is readable exactly while set, however often it was set. */
static void notify(void)
{
	hl_notify n, m;
	int i;

	hl__notify_none(&n);
	CHECK(n.rfd == -1 && n.wfd == -1);
	hl__notify_set(&n); /* not open: nothing, no crash */
	hl__notify_clear(&n);
	hl__notify_close(&n);

	CHECK(hl__notify_open(&n, 0) == 0);
	check_kind(&n);
	check_flags(n.rfd);
	check_flags(n.wfd);
	CHECK(!readable(n.rfd));
	hl__notify_clear(&n); /* clearing an unset one does not block */
	CHECK(!readable(n.rfd));
	for (i = 0; i < 3; i++)
		hl__notify_set(&n);
	CHECK(readable(n.rfd));
	CHECK(readable(n.rfd)); /* level: polling does not consume it */
	hl__notify_clear(&n);
	CHECK(!readable(n.rfd)); /* one clear empties it, after three sets */
	hl__notify_set(&n);
	CHECK(readable(n.rfd));
	hl__notify_clear(&n);
	CHECK(!readable(n.rfd));

	/* Set far more often than a pipe holds (64 KiB on Linux): no set
	 * blocks, and one clear still empties it. */
	for (i = 0; i < 200000; i++)
		hl__notify_set(&n);
	CHECK(readable(n.rfd));
	hl__notify_clear(&n);
	CHECK(!readable(n.rfd));
	hl__notify_close(&n);
	CHECK(n.rfd == -1 && n.wfd == -1);

	/* Opened set: readable at once. */
	CHECK(hl__notify_open(&m, 1) == 0);
	CHECK(readable(m.rfd));
	hl__notify_clear(&m);
	CHECK(!readable(m.rfd));
	hl__notify_close(&m);
}

/* hl__socket: non-blocking and close-on-exec, whatever the system has. */
static void socket_flags(void)
{
	int fd = hl__socket(AF_INET, SOCK_STREAM, 0), u;
	CHECK(fd >= 0);
	check_flags(fd);
	close(fd);
	u = hl__socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(u >= 0);
	check_flags(u);
	close(u);
}

static volatile sig_atomic_t got_sigpipe;
static void on_sigpipe(int sig)
{
	(void)sig;
	got_sigpipe = 1;
}

/* A send to a peer that went away fails with EPIPE and raises no SIGPIPE
 * (with SIGPIPE's default action the process would die here); a SIGPIPE
 * that was pending before the call stays pending. */
static void send_no_sigpipe(void)
{
	int sv[2], i;
	sigset_t pipe_set, pending;
	struct sigaction sa;
	ssize_t n;

	signal(SIGPIPE, SIG_DFL);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	for (i = 0; i < 3; i++) {
		errno = 0;
		n = hl__send(sv[0], "PING\r\n", 6, MSG_DONTWAIT);
		CHECK(n == -1 && errno == EPIPE);
	}
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	CHECK(sigpending(&pending) == 0);
	CHECK(!sigismember(&pending, SIGPIPE));

	/* A handler sees no SIGPIPE either. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigpipe;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGPIPE, &sa, NULL) == 0);
	n = hl__send(sv[0], "x", 1, 0);
	CHECK(n == -1 && errno == EPIPE);
	CHECK(!got_sigpipe);

	/* Someone else's SIGPIPE, pending while blocked, is left alone. */
	CHECK(pthread_sigmask(SIG_BLOCK, &pipe_set, NULL) == 0);
	CHECK(raise(SIGPIPE) == 0);
	n = hl__send(sv[0], "x", 1, 0);
	CHECK(n == -1 && errno == EPIPE);
	CHECK(sigpending(&pending) == 0);
	CHECK(sigismember(&pending, SIGPIPE));
	CHECK(pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL) == 0);
	CHECK(got_sigpipe); /* delivered once unblocked */
	close(sv[0]);

	/* A live peer gets the bytes. */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(hl__send(sv[0], "abc", 3, 0) == 3);
	{
		char buf[4] = {0};
		CHECK(read(sv[1], buf, 3) == 3 && memcmp(buf, "abc", 3) == 0);
	}
	close(sv[0]);
	close(sv[1]);
}

static void random_bytes(void)
{
	unsigned char a[16], b[16], zero[16] = {0}, big[4096];
	size_t i, ones = 0;
	CHECK(hl__random_bytes(a, sizeof(a)) == 0);
	CHECK(hl__random_bytes(b, sizeof(b)) == 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK(memcmp(a, zero, sizeof(a)) != 0);
	CHECK(hl__random_bytes(big, sizeof(big)) == 0);
	for (i = 0; i < sizeof(big) * 8; i++)
		ones += (big[i / 8] >> (i % 8)) & 1;
	/* 32768 fair bits: 16384 +- 1000 is beyond 10 standard deviations */
	CHECK(ones > 15384 && ones < 17384);
	CHECK(hl__random_bytes(big, 0) == 0);
}

/* Unique ids: no two alike among many calls of several threads and of a
 * forked child (whose first ids would repeat the parent's if the child
 * kept the forking thread's key), bits balanced, and short ids too. */
#define UID_THREADS 4
#define UID_EACH    2000
static unsigned char uid_seen[(UID_THREADS + 2) * UID_EACH][16];

static void *uid_thread(void *arg)
{
	unsigned char(*out)[16] = arg;
	for (int i = 0; i < UID_EACH; i++)
		CHECK(hl__unique_bytes(out[i], 16) == 0);
	return NULL;
}

static int uid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static void unique_bytes(void)
{
	pthread_t t[UID_THREADS];
	int fds[2], i, status;
	size_t n = (UID_THREADS + 2) * UID_EACH, ones = 0, got = 0;
	unsigned char small[3], zero[3] = {0};
	pid_t pid;
	/* this thread's key drawn before the fork */
	CHECK(hl__unique_bytes(uid_seen[0], 16) == 0);
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		unsigned char buf[UID_EACH][16];
		close(fds[0]);
		for (i = 0; i < UID_EACH; i++)
			if (hl__unique_bytes(buf[i], 16) != 0)
				_exit(1);
		_exit(write(fds[1], buf, sizeof(buf)) == (ssize_t)sizeof(buf)
		              ? 0
		              : 1);
	}
	close(fds[1]);
	while (got < sizeof(uid_seen[0]) * UID_EACH) {
		ssize_t r =
		        read(fds[0], (unsigned char *)uid_seen[UID_EACH] + got,
		             sizeof(uid_seen[0]) * UID_EACH - got);
		CHECK(r > 0);
		got += (size_t)r;
	}
	close(fds[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	/* the parent goes on with the same key after the fork */
	for (i = 1; i < UID_EACH; i++)
		CHECK(hl__unique_bytes(uid_seen[i], 16) == 0);
	for (i = 0; i < UID_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, uid_thread,
		                     uid_seen[(i + 2) * UID_EACH]) == 0);
	for (i = 0; i < UID_THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	for (size_t k = 0; k < n * 16 * 8; k++)
		ones += (uid_seen[k / 128][(k / 8) % 16] >> (k % 8)) & 1;
	/* 1,536,000 bits: within 1% of half is beyond 20 standard
	 * deviations */
	CHECK(ones > n * 64 * 99 / 100 && ones < n * 64 * 101 / 100);
	qsort(uid_seen, n, 16, uid_cmp);
	for (size_t k = 1; k < n; k++)
		CHECK(memcmp(uid_seen[k - 1], uid_seen[k], 16) != 0);
	CHECK(hl__unique_bytes(small, sizeof(small)) == 0);
	CHECK(memcmp(small, zero, sizeof(small)) != 0);
	CHECK(hl__unique_bytes(small, 0) == 0);
}

struct waker {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int flag;
};

static void *wake_later(void *arg)
{
	struct waker *w = arg;
	struct timespec ts = {0, 100 * 1000000L};
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&w->mu);
	w->flag = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* hl__cond_wait_until keeps to a monotonic deadline, and wakes on a
 * signal. */
static void cond_wait(void)
{
	struct waker w;
	pthread_t th;
	int64_t t0, took;
	int rc = 0;

	pthread_mutex_init(&w.mu, NULL);
	CHECK(hl__cond_init(&w.cond) == 0);
	w.flag = 0;

	pthread_mutex_lock(&w.mu);
	t0 = hl__now_ms();
	do /* spurious wake-ups: wait again for what is left */
		rc = hl__cond_wait_until(&w.cond, &w.mu, t0 + 300);
	while (rc == 0);
	took = hl__now_ms() - t0;
	CHECK(rc == ETIMEDOUT);
	CHECK(took >= 300 && took < 5000);

	t0 = hl__now_ms();
	CHECK(hl__cond_wait_until(&w.cond, &w.mu, t0 - 10) == ETIMEDOUT);
	CHECK(hl__now_ms() - t0 < 1000);

	CHECK(pthread_create(&th, NULL, wake_later, &w) == 0);
	t0 = hl__now_ms();
	rc = 0;
	while (!w.flag && rc != ETIMEDOUT)
		rc = hl__cond_wait_until(&w.cond, &w.mu, t0 + 20000);
	took = hl__now_ms() - t0;
	CHECK(w.flag);
	CHECK(took < 10000);
	pthread_mutex_unlock(&w.mu);
	pthread_join(th, NULL);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.mu);
}

/* The thread's name is set where the system has a call for it (Linux);
 * without one (the forced build) the call is harmless. */
static void thread_name(void)
{
	hl__thread_name("hl-test-name");
#if defined(__linux__) && !defined(HL_TEST_FORCE_PORTABLE)
	{
		char buf[64] = {0};
		FILE *f = fopen("/proc/thread-self/comm", "r");
		CHECK(f != NULL);
		CHECK(fgets(buf, sizeof(buf), f) != NULL);
		fclose(f);
		CHECK(strncmp(buf, "hl-test-name", 12) == 0);
	}
#endif
	hl__thread_name("a name longer than fifteen characters");
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
        {"notify", notify},
        {"socket_flags", socket_flags},
        {"send_no_sigpipe", send_no_sigpipe},
        {"random_bytes", random_bytes},
        {"unique_bytes", unique_bytes},
        {"cond_wait", cond_wait},
        {"thread_name", thread_name},
};

int main(int argc, char **argv)
{
	size_t i;
	if (argc != 2) {
		fprintf(stderr, "usage: test_sys CASE|--list\n");
		return 2;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], "--list") == 0) {
			printf("%s\n", cases[i].name);
		} else if (strcmp(argv[1], cases[i].name) == 0) {
			alarm(30);
			cases[i].fn();
			printf("sys.%s: ok (notify: %s)\n", cases[i].name,
			       hl__notify_kind());
			return 0;
		}
	}
	if (strcmp(argv[1], "--list") == 0)
		return 0;
	fprintf(stderr, "no case %s\n", argv[1]);
	return 2;
}
