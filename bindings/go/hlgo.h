/*
 * The C side shared by the cgo files (capi.go, capi_sync.go): the result
 * of one wrapped call, with the failure detail copied on the thread that
 * failed (libhilock's hl_error_last() is thread-local, and a goroutine may
 * move to another thread between two cgo calls).
 */
#ifndef HILOCK_GO_HLGO_H
#define HILOCK_GO_HLGO_H

#include <stdint.h>
#include <string.h>
#include <hilock.h>

#define HLGO_MSG_LEN 512

typedef struct hlgo_result {
	int status;       // HL_OK or the failing call's status
	int flag;         // acquired / released / locked / held / existed / set
	int was_lost;     // acquire: the owner's previous hold had been lost
	int64_t value;    // hold count / ttl / permits / count
	char msg[HLGO_MSG_LEN]; // failure detail
} hlgo_result;

static inline void hlgo_copy(char *dst, const char *src) {
	size_t n = src ? strlen(src) : 0;
	if (n >= HLGO_MSG_LEN)
		n = HLGO_MSG_LEN - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

// Record a failure. Must run right after the failing call, before any other
// hilock call on this thread replaces the thread-local detail.
static inline int hlgo_fail(hlgo_result *r, int status) {
	const char *m = hl_error_last();
	r->status = status;
	hlgo_copy(r->msg, (m && *m) ? m : hl_status_str(status));
	return status;
}

static inline void hlgo_reset(hlgo_result *r) {
	r->status = HL_OK;
	r->flag = 0;
	r->was_lost = 0;
	r->value = 0;
	r->msg[0] = '\0';
}

#endif
