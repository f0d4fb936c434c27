/*
 * base/sys: the system calls that differ between Linux, macOS and the
 * BSDs, behind one API. Linux keeps its fast calls (eventfd, SOCK_CLOEXEC,
 * MSG_NOSIGNAL, getrandom); elsewhere a portable fallback does the same
 * job. CMake's feature checks pick each one (HL_HAVE_* definitions, see
 * core/CMakeLists.txt); -DHILOCK_FORCE_PORTABLE=ON defines none of them,
 * so a Linux build runs every fallback.
 */
#ifndef HL_BASE_SYS_H
#define HL_BASE_SYS_H

#include <stddef.h>
#include <sys/types.h>

/* A wake-up descriptor pair: rfd is readable while the notifier is set.
 * An eventfd (rfd == wfd) where there is one, else a pipe's two ends. Both
 * are non-blocking and close-on-exec. */
typedef struct hl_notify {
	int rfd; /* poll this one; -1: not open */
	int wfd;
} hl_notify;

/* Not open (-1, -1). */
void hl__notify_none(hl_notify *n);
/* Open it, set (readable) at once if set_now. 0, or -1 with errno. */
int hl__notify_open(hl_notify *n, int set_now);
/* Make it readable; nothing if not open. Async-signal-safe. */
void hl__notify_set(const hl_notify *n);
/* Make it unreadable; nothing if not open. */
void hl__notify_clear(const hl_notify *n);
/* Close it (nothing if not open); it is then not open. */
void hl__notify_close(hl_notify *n);
/* "eventfd" or "pipe": what hl__notify_open makes in this build. */
const char *hl__notify_kind(void);

/* A socket(2) that is non-blocking and close-on-exec, whose writes never
 * raise SIGPIPE when used through hl__send. -1 with errno. */
int hl__socket(int family, int type, int protocol);
/* send(2) without SIGPIPE when the peer went away (EPIPE instead). */
ssize_t hl__send(int fd, const void *buf, size_t len, int flags);

/* n random bytes from the system's generator. 0, or -1 if none answered. */
int hl__random_bytes(void *buf, size_t n);
/* n bytes of an id unique to this call (request ids, permit ids, grant
 * ids): unlike every other call's of any thread or process, with the odds
 * of two 128-bit random keys meeting, and no system call after a thread's
 * first. Not secret. 0, or -1 if the system gave no random key. */
int hl__unique_bytes(void *buf, size_t n);

/* Name the calling thread for debuggers and ps (best effort; at most 15
 * characters are kept on Linux). */
void hl__thread_name(const char *name);

#endif
