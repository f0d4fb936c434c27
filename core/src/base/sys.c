/* System calls that differ between platforms: see sys.h. */
#include "base/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(HL_HAVE_EVENTFD)
#include <sys/eventfd.h>
#endif
#if defined(HL_HAVE_GETRANDOM)
#include <sys/random.h>
#endif
#if defined(HL_HAVE_PTHREAD_NP_H)
#include <pthread_np.h>
#endif

/* The way a send avoids SIGPIPE: a flag (Linux, the BSDs), a socket option
 * set by hl__socket (macOS), or else SIGPIPE blocked around the call. */
#if defined(HL_HAVE_MSG_NOSIGNAL)
#define HL_SEND_FLAGS MSG_NOSIGNAL
#else
#define HL_SEND_FLAGS 0
#endif
#if !defined(HL_HAVE_MSG_NOSIGNAL) && !defined(HL_HAVE_SO_NOSIGPIPE)
#define HL_SEND_BLOCKS_SIGPIPE 1
#endif

#if (!defined(HL_HAVE_EVENTFD) && !defined(HL_HAVE_PIPE2)) ||                  \
        !defined(HL_HAVE_SOCK_CLOEXEC)
static int set_nonblock_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -1;
	return 0;
}
#endif

/* ---- notify -------------------------------------------------------------- */

void hl__notify_none(hl_notify *n)
{
	n->rfd = n->wfd = -1;
}

const char *hl__notify_kind(void)
{
#if defined(HL_HAVE_EVENTFD)
	return "eventfd";
#else
	return "pipe";
#endif
}

int hl__notify_open(hl_notify *n, int set_now)
{
#if defined(HL_HAVE_EVENTFD)
	int fd = eventfd(set_now ? 1 : 0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -1;
	n->rfd = n->wfd = fd;
	return 0;
#else
	int p[2];
#if defined(HL_HAVE_PIPE2)
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
#else
	/* Another thread's fork+exec between pipe() and fcntl() could
	 * inherit these two: harmless (they carry no data of value). */
	if (pipe(p) < 0)
		return -1;
	if (set_nonblock_cloexec(p[0]) < 0 || set_nonblock_cloexec(p[1]) < 0) {
		int saved = errno;
		close(p[0]);
		close(p[1]);
		errno = saved;
		return -1;
	}
#endif
	n->rfd = p[0];
	n->wfd = p[1];
	if (set_now)
		hl__notify_set(n);
	return 0;
#endif
}

void hl__notify_set(const hl_notify *n)
{
	ssize_t r;
#if defined(HL_HAVE_EVENTFD)
	uint64_t one = 1;
#else
	char one = 1;
#endif
	if (n->wfd < 0)
		return;
	do
		r = write(n->wfd, &one, sizeof(one));
	while (r < 0 && errno == EINTR);
	/* EAGAIN: the counter or the pipe is full, so readable anyway */
}

void hl__notify_clear(const hl_notify *n)
{
	ssize_t r;
#if defined(HL_HAVE_EVENTFD)
	uint64_t v;
	if (n->rfd < 0)
		return;
	do /* one read resets the counter */
		r = read(n->rfd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
#else
	char buf[256];
	if (n->rfd < 0)
		return;
	do /* until EAGAIN: the pipe is empty */
		r = read(n->rfd, buf, sizeof(buf));
	while (r > 0 || (r < 0 && errno == EINTR));
#endif
}

void hl__notify_close(hl_notify *n)
{
	if (n->rfd >= 0)
		close(n->rfd);
	if (n->wfd >= 0 && n->wfd != n->rfd)
		close(n->wfd);
	hl__notify_none(n);
}

/* ---- sockets ------------------------------------------------------------- */

int hl__socket(int family, int type, int protocol)
{
	int fd;
#if defined(HL_HAVE_SOCK_CLOEXEC)
	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
	if (fd < 0)
		return -1;
#else
	fd = socket(family, type, protocol);
	if (fd < 0)
		return -1;
	if (set_nonblock_cloexec(fd) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
#endif
#if defined(HL_HAVE_SO_NOSIGPIPE)
	{
		int one = 1;
		if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one,
		               sizeof(one)) < 0) {
			int saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
	}
#endif
	return fd;
}

ssize_t hl__send(int fd, const void *buf, size_t len, int flags)
{
#if defined(HL_SEND_BLOCKS_SIGPIPE)
	/* No flag and no socket option: block SIGPIPE in this thread for the
	 * call, and take back the one the call raised (a SIGPIPE pending
	 * before it is left alone). */
	sigset_t pipe_set, old, pending;
	int was_pending = 0, saved, sig;
	ssize_t n;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	if (sigpending(&pending) == 0)
		was_pending = sigismember(&pending, SIGPIPE) == 1;
	n = send(fd, buf, len, flags);
	saved = errno;
	if (n < 0 && saved == EPIPE && !was_pending &&
	    sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1)
		sigwait(&pipe_set, &sig); /* pending: returns at once */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return n;
#else
	return send(fd, buf, len, flags | HL_SEND_FLAGS);
#endif
}

/* ---- random bytes -------------------------------------------------------- */

int hl__random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;
	int fd;
#if defined(HL_HAVE_GETRANDOM)
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == n)
		return 0;
	got = 0; /* no getrandom (an old kernel): the device */
#elif defined(HL_HAVE_ARC4RANDOM_BUF)
	arc4random_buf(buf, n);
	return 0;
#endif
	do
		fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return got == n ? 0 : -1;
}

/* ---- unique ids ---------------------------------------------------------- */

/* Each thread draws a 128-bit key from the system once, then numbers its
 * ids: id i is mix(k0 ^ i) . mix(k1 + i), where mix is splitmix64's
 * finaliser, a bijection. So a thread's ids never repeat, those of other
 * threads and processes differ unless two random keys meet, and an id
 * costs no system call. A forked child draws a new key before its first
 * id (the thread that forked would otherwise repeat its parent's ids). */
static atomic_ulong uid_fork_gen;
static pthread_once_t uid_once = PTHREAD_ONCE_INIT;
static _Thread_local struct {
	uint64_t k0, k1, n;
	unsigned long gen;
	int seeded;
} tl_uid;

static void uid_on_fork_child(void)
{
	atomic_fetch_add_explicit(&uid_fork_gen, 1, memory_order_relaxed);
}

static void uid_init(void)
{
	pthread_atfork(NULL, NULL, uid_on_fork_child);
}

static uint64_t uid_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int hl__unique_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;
	unsigned long gen;
	pthread_once(&uid_once, uid_init);
	gen = atomic_load_explicit(&uid_fork_gen, memory_order_relaxed);
	if (!tl_uid.seeded || tl_uid.gen != gen) {
		uint64_t k[2];
		if (hl__random_bytes(k, sizeof(k)) != 0)
			return -1;
		tl_uid.k0 = k[0];
		tl_uid.k1 = k[1];
		tl_uid.n = 0;
		tl_uid.gen = gen;
		tl_uid.seeded = 1;
	}
	while (n > 0) {
		uint64_t w[2];
		size_t take = n < sizeof(w) ? n : sizeof(w);
		tl_uid.n++;
		w[0] = uid_mix(tl_uid.k0 ^ tl_uid.n);
		w[1] = uid_mix(tl_uid.k1 + tl_uid.n);
		memcpy(p, w, take);
		p += take;
		n -= take;
	}
	return 0;
}

/* ---- thread names -------------------------------------------------------- */

void hl__thread_name(const char *name)
{
#if defined(HL_HAVE_PTHREAD_SETNAME_NP_2) /* Linux, FreeBSD 12.2+ */
	pthread_setname_np(pthread_self(), name);
#elif defined(HL_HAVE_PTHREAD_SETNAME_NP_1) /* macOS: the caller only */
	pthread_setname_np(name);
#elif defined(HL_HAVE_PTHREAD_SETNAME_NP_3) /* NetBSD: a format */
	pthread_setname_np(pthread_self(), "%s", (void *)(uintptr_t)name);
#elif defined(HL_HAVE_PTHREAD_SET_NAME_NP)  /* OpenBSD, older FreeBSD */
	pthread_set_name_np(pthread_self(), name);
#else
	(void)name; /* a name is only a help for debuggers */
#endif
}
