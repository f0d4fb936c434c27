package hilock

// The synchronizers' side of the C boundary (see capi.go): each call opens
// a handle for it (a cheap view: a name and a client reference), makes the
// library call, copies the failure detail on the same thread and frees the
// handle, so no C memory outlives a call and the Go types need no
// finalizer. A wait started as a task does not depend on its handle.

/*
#include <stdint.h>
#include <hilock.h>
#include "hlgo.h"

enum {
	HLGO_SEM_TRY_SET,
	HLGO_SEM_SET,
	HLGO_SEM_ADD,
	HLGO_SEM_AVAILABLE,
	HLGO_SEM_DRAIN,
	HLGO_SEM_RELEASE,
	HLGO_SEM_HELD,
	HLGO_SEM_DELETE,
	HLGO_SEM_TRY_ACQUIRE // one attempt, no wait
};

// One semaphore call with n (permits or delta): r->flag = set, existed or
// acquired; r->value = a count.
static void hlgo_sem_op(hlgo_result *r, int op, hl_client *c,
		const void *name, size_t name_len, int64_t n) {
	hl_semaphore *s;
	int rc, flag = 0;
	int64_t v = 0;
	hlgo_reset(r);
	rc = hl_semaphore_new(&s, c, name, name_len);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	switch (op) {
	case HLGO_SEM_TRY_SET: rc = hl_semaphore_try_set_permits(&flag, s, n); break;
	case HLGO_SEM_SET: rc = hl_semaphore_set_permits(s, n); break;
	case HLGO_SEM_ADD: rc = hl_semaphore_add_permits(&v, s, n); break;
	case HLGO_SEM_AVAILABLE: rc = hl_semaphore_available(&v, s); break;
	case HLGO_SEM_DRAIN: rc = hl_semaphore_drain(&v, s); break;
	case HLGO_SEM_RELEASE: rc = hl_semaphore_release(s, n); break;
	case HLGO_SEM_HELD: rc = hl_semaphore_held(&v, s); break;
	case HLGO_SEM_DELETE: rc = hl_semaphore_delete(&flag, s); break;
	case HLGO_SEM_TRY_ACQUIRE: rc = hl_semaphore_try_acquire(&flag, s, n, 0, NULL); break;
	default: rc = HL_EINVAL;
	}
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		r->flag = flag;
		r->value = v;
	}
	hl_semaphore_free(s);
}

// Start a wait for n permits as a task whose data is set before the call
// returns (the Go side holds its task lock around this call).
static void hlgo_sem_start(hlgo_result *r, hl_task **out, hl_client *c,
		const void *name, size_t name_len, int64_t n, int64_t wait_ms,
		uint64_t data) {
	hl_semaphore *s;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	rc = hl_semaphore_new(&s, c, name, name_len);
	if (rc == HL_OK) {
		rc = hl_semaphore_try_acquire_start(out, s, n, wait_ms);
		if (rc == HL_OK)
			hl_task_set_data(*out, data);
		else
			hlgo_fail(r, rc);
		hl_semaphore_free(s);
	} else {
		hlgo_fail(r, rc);
	}
}

enum {
	HLGO_XS_RELEASE,
	HLGO_XS_UPDATE_LEASE,
	HLGO_XS_LEASE_TIME,
	HLGO_XS_AVAILABLE,
	HLGO_XS_PERMITS,
	HLGO_XS_ACQUIRED,
	HLGO_XS_TRY_SET,
	HLGO_XS_SET,
	HLGO_XS_ADD,
	HLGO_XS_DELETE
};

// One permit-expirable semaphore call with a permit id (NUL-terminated) or
// n (permits, delta or a lease in ms).
static void hlgo_xs_op(hlgo_result *r, int op, hl_client *c,
		const void *name, size_t name_len, const char *id, int64_t n) {
	hl_expsem *s;
	int rc, flag = 0;
	int64_t v = 0;
	hlgo_reset(r);
	rc = hl_expsem_new(&s, c, name, name_len);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	switch (op) {
	case HLGO_XS_RELEASE: rc = hl_expsem_release(s, id); break;
	case HLGO_XS_UPDATE_LEASE: rc = hl_expsem_update_lease(s, id, n); break;
	case HLGO_XS_LEASE_TIME: rc = hl_expsem_lease_time(&v, s, id); break;
	case HLGO_XS_AVAILABLE: rc = hl_expsem_available(&v, s); break;
	case HLGO_XS_PERMITS: rc = hl_expsem_permits(&v, s); break;
	case HLGO_XS_ACQUIRED: rc = hl_expsem_acquired(&v, s); break;
	case HLGO_XS_TRY_SET: rc = hl_expsem_try_set_permits(&flag, s, n); break;
	case HLGO_XS_SET: rc = hl_expsem_set_permits(s, n); break;
	case HLGO_XS_ADD: rc = hl_expsem_add_permits(&v, s, n); break;
	case HLGO_XS_DELETE: rc = hl_expsem_delete(&flag, s); break;
	default: rc = HL_EINVAL;
	}
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		r->flag = flag;
		r->value = v;
	}
	hl_expsem_free(s);
}

// Acquire n permits: one attempt (start 0; r->flag = acquired), or start a
// wait as a task (start 1). ids has room for n ids of HL_PERMIT_ID_LEN + 1
// bytes; the library writes them during this call.
static void hlgo_xs_acquire(hlgo_result *r, int start, hl_task **out,
		hl_client *c, const void *name, size_t name_len, char *ids,
		size_t n, int64_t wait_ms, int64_t lease_ms, uint64_t data) {
	hl_expsem *s;
	int rc, flag = 0;
	if (out)
		*out = NULL;
	hlgo_reset(r);
	rc = hl_expsem_new(&s, c, name, name_len);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	if (start) {
		rc = hl_expsem_try_acquire_start(out, ids, n, s, wait_ms, lease_ms);
		if (rc == HL_OK)
			hl_task_set_data(*out, data);
	} else {
		rc = hl_expsem_try_acquire(&flag, ids, n, s, 0, lease_ms, NULL);
	}
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	else
		r->flag = flag;
	hl_expsem_free(s);
}

enum {
	HLGO_LATCH_TRY_SET,
	HLGO_LATCH_COUNT_DOWN,
	HLGO_LATCH_COUNT,
	HLGO_LATCH_DELETE,
	HLGO_LATCH_OPEN // one look: r->flag = open
};

static void hlgo_latch_op(hlgo_result *r, int op, hl_client *c,
		const void *name, size_t name_len, int64_t n) {
	hl_latch *l;
	int rc, flag = 0;
	int64_t v = 0;
	hlgo_reset(r);
	rc = hl_latch_new(&l, c, name, name_len);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	switch (op) {
	case HLGO_LATCH_TRY_SET: rc = hl_latch_try_set_count(&flag, l, n); break;
	case HLGO_LATCH_COUNT_DOWN: rc = hl_latch_count_down(&v, l); break;
	case HLGO_LATCH_COUNT: rc = hl_latch_count(&v, l); break;
	case HLGO_LATCH_DELETE: rc = hl_latch_delete(&flag, l); break;
	case HLGO_LATCH_OPEN: rc = hl_latch_wait(&flag, l, 0, NULL); break;
	default: rc = HL_EINVAL;
	}
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		r->flag = flag;
		r->value = v;
	}
	hl_latch_free(l);
}

static void hlgo_latch_start(hlgo_result *r, hl_task **out, hl_client *c,
		const void *name, size_t name_len, int64_t timeout_ms,
		uint64_t data) {
	hl_latch *l;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	rc = hl_latch_new(&l, c, name, name_len);
	if (rc == HL_OK) {
		rc = hl_latch_wait_start(out, l, timeout_ms);
		if (rc == HL_OK)
			hl_task_set_data(*out, data);
		else
			hlgo_fail(r, rc);
		hl_latch_free(l);
	} else {
		hlgo_fail(r, rc);
	}
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// permitIDLen is the length of a permit id: lowercase hex characters.
const permitIDLen = int(C.HL_PERMIT_ID_LEN)

// syncResult turns a wrapper's result into an opResult.
func syncResult(op string, r *cResult) opResult {
	res := opResult{status: int(r.status), flag: r.flag != 0, value: int64(r.value)}
	if r.status != C.HL_OK {
		res.err = resultError(op, r)
	}
	return res
}

// --- semaphore ----------------------------------------------------------------

type semOp int

const (
	semTrySet     semOp = C.HLGO_SEM_TRY_SET
	semSet        semOp = C.HLGO_SEM_SET
	semAdd        semOp = C.HLGO_SEM_ADD
	semAvailable  semOp = C.HLGO_SEM_AVAILABLE
	semDrain      semOp = C.HLGO_SEM_DRAIN
	semRelease    semOp = C.HLGO_SEM_RELEASE
	semHeld       semOp = C.HLGO_SEM_HELD
	semDelete     semOp = C.HLGO_SEM_DELETE
	semTryAcquire semOp = C.HLGO_SEM_TRY_ACQUIRE
)

// callSem makes one semaphore call. The caller holds c.mu for reading, so
// p stays valid for the whole call; name is not empty.
func callSem(p *cClient, op semOp, opName string, name []byte, n int64) opResult {
	var r cResult
	C.hlgo_sem_op(&r, C.int(op), p, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.int64_t(n))
	runtime.KeepAlive(name)
	return syncResult(opName, &r)
}

func startSemTask(p *cClient, name []byte, n, waitMs int64, data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	C.hlgo_sem_start(&r, &t, p, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.int64_t(n),
		C.int64_t(waitMs), C.uint64_t(data))
	runtime.KeepAlive(name)
	return t, syncResult("acquire", &r)
}

// --- permit-expirable semaphore -------------------------------------------------

type xsOp int

const (
	xsRelease     xsOp = C.HLGO_XS_RELEASE
	xsUpdateLease xsOp = C.HLGO_XS_UPDATE_LEASE
	xsLeaseTime   xsOp = C.HLGO_XS_LEASE_TIME
	xsAvailable   xsOp = C.HLGO_XS_AVAILABLE
	xsPermits     xsOp = C.HLGO_XS_PERMITS
	xsAcquired    xsOp = C.HLGO_XS_ACQUIRED
	xsTrySet      xsOp = C.HLGO_XS_TRY_SET
	xsSet         xsOp = C.HLGO_XS_SET
	xsAdd         xsOp = C.HLGO_XS_ADD
	xsDelete      xsOp = C.HLGO_XS_DELETE
)

// callExpsem makes one call; id is a permit id followed by a NUL byte, or
// nil for the calls that take none.
func callExpsem(p *cClient, op xsOp, opName string, name []byte, id []byte, n int64) opResult {
	var r cResult
	var cid *C.char
	if len(id) > 0 {
		cid = (*C.char)(unsafe.Pointer(&id[0]))
	}
	C.hlgo_xs_op(&r, C.int(op), p, unsafe.Pointer(&name[0]), C.size_t(len(name)), cid, C.int64_t(n))
	runtime.KeepAlive(name)
	runtime.KeepAlive(id)
	return syncResult(opName, &r)
}

// callExpsemAcquire makes one attempt to take n permits; ids (n *
// (permitIDLen + 1) bytes) receives their ids.
func callExpsemAcquire(p *cClient, name, ids []byte, n int, leaseMs int64) opResult {
	var r cResult
	C.hlgo_xs_acquire(&r, 0, nil, p, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		(*C.char)(unsafe.Pointer(&ids[0])), C.size_t(n), 0, C.int64_t(leaseMs), 0)
	runtime.KeepAlive(name)
	runtime.KeepAlive(ids)
	return syncResult("acquire", &r)
}

func startExpsemTask(p *cClient, name, ids []byte, n int, waitMs, leaseMs int64,
	data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	C.hlgo_xs_acquire(&r, 1, &t, p, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		(*C.char)(unsafe.Pointer(&ids[0])), C.size_t(n), C.int64_t(waitMs), C.int64_t(leaseMs),
		C.uint64_t(data))
	runtime.KeepAlive(name)
	runtime.KeepAlive(ids)
	return t, syncResult("acquire", &r)
}

// --- count-down latch -----------------------------------------------------------

type latchOp int

const (
	latchTrySet    latchOp = C.HLGO_LATCH_TRY_SET
	latchCountDown latchOp = C.HLGO_LATCH_COUNT_DOWN
	latchCount     latchOp = C.HLGO_LATCH_COUNT
	latchDelete    latchOp = C.HLGO_LATCH_DELETE
	latchOpen      latchOp = C.HLGO_LATCH_OPEN
)

func callLatch(p *cClient, op latchOp, opName string, name []byte, n int64) opResult {
	var r cResult
	C.hlgo_latch_op(&r, C.int(op), p, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.int64_t(n))
	runtime.KeepAlive(name)
	return syncResult(opName, &r)
}

func startLatchTask(p *cClient, name []byte, timeoutMs int64, data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	C.hlgo_latch_start(&r, &t, p, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		C.int64_t(timeoutMs), C.uint64_t(data))
	runtime.KeepAlive(name)
	return t, syncResult("wait", &r)
}
