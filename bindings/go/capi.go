package hilock

// This file and capi_sync.go (the synchronizers) are the only ones that talk
// to C. Every libhilock operation is one cgo call into a small wrapper
// (below, and hlgo.h for the shared result) that makes the library call(s)
// and, on failure, copies hl_error_last() into the result on the same OS
// thread: the detail is thread-local, and a goroutine may be moved to
// another thread between two cgo calls.

/*
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hilock.h>
#include "hlgo.h"

#if !defined(HL_VERSION_MAJOR) || HL_VERSION_MAJOR != 0
#error "the hilock Go binding needs libhilock 0.x (hilock.h has another major version)"
#endif

// hlgo_client_new connects with the options the Go side set; a value of 0
// (or has_retry, has_wait 0) keeps the library's default, a NULL string is
// unset.
static void hlgo_client_new(hlgo_result *r, hl_client **out, const char *url,
		int64_t watchdog_ms, int64_t connect_ms, int64_t command_ms,
		int has_retry, int retry_attempts, int64_t retry_delay_ms,
		const char *client_name, int pool_size, int64_t subscription_ms,
		int has_ping, int64_t ping_ms, const char *tls_ca_file,
		const char *tls_ca_dir, const char *tls_cert_file,
		const char *tls_key_file, const char *tls_server_name,
		int tls_verify, const char *sentinel_username,
		const char *sentinel_password, int read_from, int has_wait,
		int wait_replicas, int64_t wait_timeout_ms, int64_t fair_wait_ms) {
	hl_client_options o;
	int rc;
	hlgo_reset(r);
	rc = hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	if (watchdog_ms != 0)
		o.watchdog_timeout_ms = watchdog_ms;
	if (connect_ms != 0)
		o.connect_timeout_ms = connect_ms;
	if (command_ms != 0)
		o.command_timeout_ms = command_ms;
	if (has_retry) {
		o.retry_attempts = retry_attempts;
		o.retry_delay_ms = retry_delay_ms;
	}
	if (client_name)
		o.client_name = client_name;
	if (pool_size != 0)
		o.pool_size = pool_size;
	if (subscription_ms != 0)
		o.subscription_timeout_ms = subscription_ms;
	if (has_ping)
		o.ping_interval_ms = ping_ms;
	o.tls_ca_file = tls_ca_file;
	o.tls_ca_dir = tls_ca_dir;
	o.tls_cert_file = tls_cert_file;
	o.tls_key_file = tls_key_file;
	o.tls_server_name = tls_server_name;
	o.tls_verify = tls_verify;
	o.sentinel_username = sentinel_username;
	o.sentinel_password = sentinel_password;
	o.read_from = read_from;
	if (has_wait)
		o.wait_replicas = wait_replicas;
	if (wait_timeout_ms != 0)
		o.wait_timeout_ms = wait_timeout_ms;
	if (fair_wait_ms != 0)
		o.fair_wait_timeout_ms = fair_wait_ms;
	rc = hl_client_new(out, url, &o);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
}

// The kind of lock a handle is opened for (HL_LOCK_*), and a spin lock's
// back-off (backoff_initial_ms 0: the library's default).
typedef struct hlgo_kind {
	int kind;
	int64_t backoff_initial_ms;
	int64_t backoff_max_ms;
	int backoff_multiplier;
} hlgo_kind;

// A lock handle is a cheap view (a name and a client reference); the hold
// state lives in the client, keyed by name and owner. Opening one per call
// means no C memory outlives a call, so a Mutex needs no finalizer to free
// it.
static int hlgo_open(hl_lock **out, hlgo_result *r, hl_client *c,
		const hlgo_kind *k, const void *name, size_t name_len,
		uint64_t owner) {
	int rc;
	hlgo_reset(r);
	rc = hl_lock_new_kind(out, c, k->kind, name, name_len);
	if (rc != HL_OK)
		return hlgo_fail(r, rc);
	if (k->backoff_initial_ms > 0)
		rc = hl_lock_set_backoff(*out, k->backoff_initial_ms,
				k->backoff_max_ms, k->backoff_multiplier);
	if (rc == HL_OK)
		rc = hl_lock_set_owner(*out, owner);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		hl_lock_free(*out);
		return rc;
	}
	return HL_OK;
}

// A private, non-blocking duplicate of the library's lost fd: the library
// owns (and will close) its own; the Go runtime polls the duplicate.
static int hlgo_dup_lost_fd(hl_lock *lk) {
	int fd, d, fl;
	if (hl_lock_lost_fd(&fd, lk) != HL_OK)
		return -1;
	d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -1;
	fl = fcntl(d, F_GETFL);
	if (fl < 0 || fcntl(d, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(d);
		return -1;
	}
	return d;
}

static void hlgo_acquire(hlgo_result *r, hl_client *c, const hlgo_kind *k,
		const void *name, size_t name_len, uint64_t owner, int64_t wait_ms,
		int64_t lease_ms, hl_cancel *cancel) {
	hl_lock *lk;
	int rc, acquired = 0, lost = 0;
	if (hlgo_open(&lk, r, c, k, name, name_len, owner) != HL_OK)
		return;
	if (hl_lock_is_lost(&lost, lk) == HL_OK)
		r->was_lost = lost;
	rc = hl_lock_try_acquire(&acquired, lk, wait_ms, lease_ms, cancel);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		r->flag = acquired;
	}
	hl_lock_free(lk);
}

enum {
	HLGO_RELEASE,
	HLGO_FORCE_UNLOCK,
	HLGO_IS_LOCKED,
	HLGO_IS_HELD,
	HLGO_HOLD_COUNT,
	HLGO_TTL,
	HLGO_ABANDON,
	HLGO_LOST_FD,
	HLGO_TOKEN,
	HLGO_LAST_TOKEN
};

static void hlgo_lock_op(hlgo_result *r, int op, hl_client *c,
		const hlgo_kind *k, const void *name, size_t name_len,
		uint64_t owner) {
	hl_lock *lk;
	int rc = HL_EINVAL, flag = 0;
	int64_t value = 0;
	if (hlgo_open(&lk, r, c, k, name, name_len, owner) != HL_OK)
		return;
	switch (op) {
	case HLGO_RELEASE: rc = hl_lock_release(&flag, lk); break;
	case HLGO_FORCE_UNLOCK: rc = hl_lock_force_unlock(&flag, lk); break;
	case HLGO_IS_LOCKED: rc = hl_lock_is_locked(&flag, lk); break;
	case HLGO_IS_HELD: rc = hl_lock_is_held(&flag, lk); break;
	case HLGO_HOLD_COUNT: rc = hl_lock_hold_count(&value, lk); break;
	case HLGO_TTL: rc = hl_lock_ttl(&value, lk); break;
	case HLGO_ABANDON: rc = hl_lock_abandon(lk); break;
	case HLGO_LOST_FD: rc = HL_OK; value = hlgo_dup_lost_fd(lk); break;
	case HLGO_TOKEN: rc = hl_lock_token(&value, lk); break;
	case HLGO_LAST_TOKEN: rc = hl_lock_last_token(&value, lk); break;
	}
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
	} else {
		r->flag = flag;
		r->value = value;
	}
	hl_lock_free(lk);
}

// hlgo_hold_state fills *st with what the library knows of owner's hold
// (hl_lock_hold_state: count, lost, epoch, lease; no round trip).
static void hlgo_hold_state(hlgo_result *r, hl_hold_state *st, hl_client *c,
		const hlgo_kind *k, const void *name, size_t name_len,
		uint64_t owner) {
	hl_lock *lk;
	int rc;
	if (hlgo_open(&lk, r, c, k, name, name_len, owner) != HL_OK)
		return;
	st->version = HL_HOLD_STATE_VERSION;
	rc = hl_lock_hold_state(st, lk);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	hl_lock_free(lk);
}

// The outputs of a multilock task, in C memory (the task writes them before
// it is reported done): the validity left, then n ints each of the members
// taken (acquire), each member's status and "now free" flag (release).
typedef struct hlgo_multi_out {
	int64_t valid;
	int v[];
} hlgo_multi_out;

// hlgo_multi_open opens the n member locks of a multilock of kind, each
// named by its client, its lock kind, its bytes in names (lens[i] each,
// one after another) and its owner, and the multilock over them (NULL and
// r set on failure). Acquire (op 0): was_lost[i] = the member's previous
// hold had been found lost. The multilock (and any task started from it)
// keeps its own copies: hlgo_multi_close frees these at once.
static hl_multilock *hlgo_multi_open(hlgo_result *r, hl_lock **lk, int op,
		int kind, int n, hl_client *const *clients, const hlgo_kind *kinds,
		const char *names, const size_t *lens, const uint64_t *owners,
		int *was_lost) {
	hl_multilock *m = NULL;
	size_t off = 0;
	int i, rc, lost;
	for (i = 0; i < n; i++) {
		if (hlgo_open(&lk[i], r, clients[i], &kinds[i], names + off,
				lens[i], owners[i]) != HL_OK)
			return NULL;
		off += lens[i];
		if (op == 0 && hl_lock_is_lost(&lost, lk[i]) == HL_OK)
			was_lost[i] = lost;
	}
	if ((rc = hl_multilock_new(&m, lk, (size_t)n, kind)) != HL_OK)
		hlgo_fail(r, rc);
	return m;
}

static void hlgo_multi_close(hl_multilock *m, hl_lock **lk, int n) {
	int i;
	hl_multilock_free(m);
	for (i = 0; lk && i < n; i++)
		hl_lock_free(lk[i]);
	free(lk);
}

// hlgo_multi_start starts a task of clients[0] that takes (op 0) or
// releases (op 1) a multilock (see hlgo_multi_open), with data set.
// Release: members says which to release and epochs which hold of each
// (copied now). *out_buf gets the outputs (hlgo_multi_take).
static void hlgo_multi_start(hlgo_result *r, hl_task **out,
		hlgo_multi_out **out_buf, int op, int kind, int n,
		hl_client *const *clients, const hlgo_kind *kinds,
		const char *names, const size_t *lens, const uint64_t *owners,
		int64_t wait_ms, int64_t lease_ms, const int *members,
		const uint64_t *epochs, int *was_lost, uint64_t data) {
	hl_lock **lk = calloc((size_t)n, sizeof(*lk));
	hlgo_multi_out *o = calloc(1, sizeof(*o) + 3 * (size_t)n * sizeof(int));
	hl_multilock *m = NULL;
	int rc;
	hlgo_reset(r);
	*out = NULL;
	*out_buf = NULL;
	if (!lk || !o) {
		r->status = HL_ENOMEM;
		hlgo_copy(r->msg, "out of memory");
		goto out;
	}
	m = hlgo_multi_open(r, lk, op, kind, n, clients, kinds, names, lens,
			owners, was_lost);
	if (!m)
		goto out;
	if (op == 0)
		rc = hl_multilock_try_acquire_ex_start(out, &o->valid, o->v, m,
				wait_ms, lease_ms);
	else
		rc = hl_multilock_release_holds_start(out, o->v + n,
				o->v + 2 * n, m, members, epochs);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		goto out;
	}
	hl_task_set_data(*out, data);
	*out_buf = o;
	o = NULL;
out:
	free(o);
	hlgo_multi_close(m, lk, n);
}

// hlgo_multi_call: the same operation as a blocking call on this thread,
// no task: op 0 takes the members with wait_ms (r->flag: acquired;
// members[i]: taken; *valid), op 1 releases those members says (statuses,
// released).
static void hlgo_multi_call(hlgo_result *r, int op, int kind, int n,
		hl_client *const *clients, const hlgo_kind *kinds,
		const char *names, const size_t *lens, const uint64_t *owners,
		int64_t wait_ms, int64_t lease_ms, int *members,
		const uint64_t *epochs, int *was_lost, int64_t *valid,
		int *statuses, int *released) {
	hl_lock **lk = calloc((size_t)n, sizeof(*lk));
	hl_multilock *m = NULL;
	int rc, flag = 0;
	hlgo_reset(r);
	if (!lk) {
		r->status = HL_ENOMEM;
		hlgo_copy(r->msg, "out of memory");
		return;
	}
	m = hlgo_multi_open(r, lk, op, kind, n, clients, kinds, names, lens,
			owners, was_lost);
	if (m) {
		if (op == 0)
			rc = hl_multilock_try_acquire_ex(&flag, valid, members,
					m, wait_ms, lease_ms, NULL);
		else
			rc = hl_multilock_release_holds(statuses, released, m,
					members, epochs);
		if (rc != HL_OK)
			hlgo_fail(r, rc);
		else
			r->flag = flag;
	}
	hlgo_multi_close(m, lk, n);
}

// Copy a done (or freed) task's outputs out and free them.
static void hlgo_multi_take(hlgo_multi_out *o, int n, int64_t *valid,
		int *members, int *statuses, int *released) {
	if (!o)
		return;
	*valid = o->valid;
	memcpy(members, o->v, (size_t)n * sizeof(int));
	memcpy(statuses, o->v + n, (size_t)n * sizeof(int));
	memcpy(released, o->v + 2 * n, (size_t)n * sizeof(int));
	free(o);
}

// --- tasks: waits that pin no thread ---------------------------------------

// One completed task as the Go side needs it: its data (the waiter's
// cgo.Handle) and the result its blocking call would have returned.
typedef struct hlgo_done {
	uint64_t data;
	int status;
	int flag;
	char msg[HLGO_MSG_LEN];
} hlgo_done;

// Start an acquire of owner on name as a task whose data is set before the
// call returns (the Go side holds its task lock around this call and around
// hlgo_take, so a completion is never taken without its data).
static void hlgo_acquire_start(hlgo_result *r, hl_task **out, hl_client *c,
		const hlgo_kind *k, const void *name, size_t name_len,
		uint64_t owner, int64_t wait_ms, int64_t lease_ms, uint64_t data) {
	hl_lock *lk;
	int rc, lost = 0;
	*out = NULL;
	if (hlgo_open(&lk, r, c, k, name, name_len, owner) != HL_OK)
		return;
	if (hl_lock_is_lost(&lost, lk) == HL_OK)
		r->was_lost = lost;
	rc = hl_lock_try_acquire_start(out, lk, wait_ms, lease_ms);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	else
		hl_task_set_data(*out, data);
	hl_lock_free(lk); // the task has its own copy
}

static void hlgo_release_start(hlgo_result *r, hl_task **out, hl_client *c,
		const hlgo_kind *k, const void *name, size_t name_len,
		uint64_t owner, uint64_t data) {
	hl_lock *lk;
	int rc;
	*out = NULL;
	if (hlgo_open(&lk, r, c, k, name, name_len, owner) != HL_OK)
		return;
	rc = hl_lock_release_start(out, lk);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	else
		hl_task_set_data(*out, data);
	hl_lock_free(lk);
}

// A private duplicate of the client's task fd for Go's poller (the library
// owns its own; the eventfd is non-blocking, and so is the duplicate). -1 on
// failure.
static int hlgo_task_fd(hl_client *c) {
	int fd;
	if (hl_client_task_fd(&fd, c) != HL_OK)
		return -1;
	return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

// Take up to n completed tasks with their results (the tasks themselves
// stay their waiters' to free). Returns how many.
static int hlgo_take(hl_client *c, hlgo_done *out, int n) {
	int i, rc, flag;
	for (i = 0; i < n; i++) {
		hl_task *t = NULL;
		if (hl_client_task_next(&t, c) != HL_OK || !t)
			break;
		out[i].data = hl_task_data(t);
		flag = 0;
		rc = hl_task_result(&flag, t);
		out[i].status = rc;
		out[i].flag = flag;
		out[i].msg[0] = '\0';
		if (rc != HL_OK) {
			const char *m = hl_error_last();
			hlgo_copy(out[i].msg, (m && *m) ? m : hl_status_str(rc));
		}
	}
	return i;
}

// 1 if fd has data to read now (the lost signal), 0 if not. A hang-up alone
// is not a loss: the library may close its end when a hold ends normally.
static int hlgo_fd_readable(int fd) {
	struct pollfd p;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, 0) != 1)
		return 0;
	return (p.revents & POLLIN) != 0;
}

// A private, non-blocking duplicate of the client's event fd (readable while
// events are queued, and for good once the client is closed), for the Go
// runtime's poller; -1 on failure.
static int hlgo_dup_event_fd(hl_client *c) {
	int fd, d, fl;
	if (hl_client_event_fd(&fd, c) != HL_OK)
		return -1;
	d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -1;
	fl = fcntl(d, F_GETFL);
	if (fl < 0 || fcntl(d, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(d);
		return -1;
	}
	return d;
}

static int hlgo_stats(hl_client_stats *out, hl_client *c) {
	out->version = HL_CLIENT_STATS_VERSION;
	return hl_client_stats_get(out, c);
}
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// Version is the version of the libhilock loaded at run time ("0.1.0").
func Version() string { return C.GoString(C.hl_version()) }

// status codes used by the Go side.
const (
	statusOK          = int(C.HL_OK)
	statusInvalid     = int(C.HL_EINVAL)
	statusTimedOut    = int(C.HL_ETIMEDOUT)
	statusInterrupted = int(C.HL_EINTERRUPTED)
	statusNotHeld     = int(C.HL_ENOTHELD)
	statusLost        = int(C.HL_ELOST)
	statusClosed      = int(C.HL_ECLOSED)
	statusForked      = int(C.HL_EFORKED)
	statusConnect     = int(C.HL_ECONNECT)
	statusIO          = int(C.HL_EIO)
	statusSystem      = int(C.HL_ESYSTEM)
	statusAuth        = int(C.HL_EAUTH)
	statusInDoubt     = int(C.HL_EINDOUBT)
	statusDeadlock    = int(C.HL_EDEADLK)
)

// The lock kinds, libhilock's HL_LOCK_*.
const (
	kindReentrant        = int(C.HL_LOCK_REENTRANT)
	kindFair             = int(C.HL_LOCK_FAIR)
	kindRead             = int(C.HL_LOCK_READ)
	kindWrite            = int(C.HL_LOCK_WRITE)
	kindSpin             = int(C.HL_LOCK_SPIN)
	kindFenced           = int(C.HL_LOCK_FENCED)
	kindNonReentrant     = int(C.HL_LOCK_NONREENTRANT)
	kindFairNonReentrant = int(C.HL_LOCK_FAIR_NONREENTRANT)
)

func kindName(kind int) string { return C.GoString(C.hl_lock_kind_name(C.int(kind))) }

// ReadFrom's values are libhilock's HL_READ_*, passed as they are (a
// compile error otherwise: an index other than 0 is out of range).
var (
	_ = [1]struct{}{}[ReadMaster-C.HL_READ_MASTER]
	_ = [1]struct{}{}[ReadReplica-C.HL_READ_REPLICA]
	_ = [1]struct{}{}[ReadAny-C.HL_READ_ANY]
)

func statusName(code int) string { return C.GoString(C.hl_status_name(C.int(code))) }
func statusText(code int) string { return C.GoString(C.hl_status_str(C.int(code))) }

type cResult = C.hlgo_result

// cClient is the C client handle.
type cClient = C.hl_client

func resultError(op string, r *cResult) error {
	code := int(r.status)
	return &Error{
		Op:      op,
		Code:    code,
		Name:    statusName(code),
		Message: C.GoString(&r.msg[0]),
	}
}

// --- client ---------------------------------------------------------------

func durationMs(d time.Duration) int64 {
	if d <= 0 {
		return int64(d / time.Millisecond)
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++ // round up: a 1.5 ms wait is not a 1 ms wait, a 1 µs lease not 0
	}
	return ms
}

func newCClient(url string, cfg *config) (*C.hl_client, error) {
	var r cResult
	var p *C.hl_client
	curl := C.CString(url)
	defer C.free(unsafe.Pointer(curl))
	var cname *C.char
	if cfg.clientNameSet {
		cname = C.CString(cfg.clientName)
		defer C.free(unsafe.Pointer(cname))
	}
	hasRetry := C.int(0)
	if cfg.retrySet {
		hasRetry = 1
	}
	hasPing := C.int(0)
	if cfg.pingSet {
		hasPing = 1
	}
	// The TLS strings: NULL when empty, freed when the call returns
	// (hl_client_new copies them).
	cstr := func(s string) *C.char {
		if s == "" {
			return nil
		}
		return C.CString(s)
	}
	tlsStrs := [...]*C.char{cstr(cfg.tls.CAFile), cstr(cfg.tls.CADir), cstr(cfg.tls.CertFile),
		cstr(cfg.tls.KeyFile), cstr(cfg.tls.ServerName)}
	defer func() {
		for _, p := range tlsStrs {
			if p != nil {
				C.free(unsafe.Pointer(p))
			}
		}
	}()
	tlsVerify := C.int(1)
	if cfg.tls.InsecureSkipVerify {
		tlsVerify = 0
	}
	// The sentinels' credentials, NULL when empty (an empty user is the
	// default user). The password's C copy is wiped before it is freed.
	sentUser, sentPass := cstr(cfg.sentinelUser), cstr(cfg.sentinelPassword)
	defer func() {
		if sentUser != nil {
			C.free(unsafe.Pointer(sentUser))
		}
		if sentPass != nil {
			C.memset(unsafe.Pointer(sentPass), 0, C.size_t(len(cfg.sentinelPassword)))
			C.free(unsafe.Pointer(sentPass))
		}
	}()
	hasWait := C.int(0)
	if cfg.waitSet {
		hasWait = 1
	}
	C.hlgo_client_new(&r, &p, curl,
		C.int64_t(durationMs(cfg.watchdog)), C.int64_t(durationMs(cfg.connectTimeout)),
		C.int64_t(durationMs(cfg.commandTimeout)), hasRetry, C.int(cfg.retryAttempts),
		C.int64_t(durationMs(cfg.retryDelay)), cname, C.int(cfg.poolSize),
		C.int64_t(durationMs(cfg.subscriptionTimeout)),
		hasPing, C.int64_t(durationMs(cfg.pingInterval)),
		tlsStrs[0], tlsStrs[1], tlsStrs[2], tlsStrs[3], tlsStrs[4], tlsVerify,
		sentUser, sentPass, C.int(cfg.readFrom), hasWait, C.int(cfg.waitReplicas),
		C.int64_t(durationMs(cfg.waitTimeout)), C.int64_t(durationMs(cfg.fairWaitTimeout)))
	if r.status != C.HL_OK {
		return nil, resultError("connect", &r)
	}
	return p, nil
}

func clientID(p *C.hl_client) string { return C.GoString(C.hl_client_id(p)) }

func closeCClient(p *C.hl_client) { C.hl_client_close(p) }

func freeCClient(p *C.hl_client) { C.hl_client_free(p) }

func newOwnerID() uint64 { return uint64(C.hl_owner_id_new()) }

// --- lock operations --------------------------------------------------------

type lockOp int

const (
	opRelease     lockOp = C.HLGO_RELEASE
	opForceUnlock lockOp = C.HLGO_FORCE_UNLOCK
	opIsLocked    lockOp = C.HLGO_IS_LOCKED
	opIsHeld      lockOp = C.HLGO_IS_HELD
	opHoldCount   lockOp = C.HLGO_HOLD_COUNT
	opTTL         lockOp = C.HLGO_TTL
	opAbandon     lockOp = C.HLGO_ABANDON
	opLostFd      lockOp = C.HLGO_LOST_FD
	opToken       lockOp = C.HLGO_TOKEN
	opLastToken   lockOp = C.HLGO_LAST_TOKEN
)

// cKind is the C copy of a Mutex's kind and back-off.
func cKind(k *lockKind) C.hlgo_kind {
	return C.hlgo_kind{kind: C.int(k.kind), backoff_initial_ms: C.int64_t(k.backoffInitialMs),
		backoff_max_ms: C.int64_t(k.backoffMaxMs), backoff_multiplier: C.int(k.backoffMultiplier)}
}

// opResult is the Go copy of a C result.
type opResult struct {
	status  int
	flag    bool
	wasLost bool
	value   int64
	err     error
}

// callLock runs one lock operation. The caller holds c.mu for reading, so
// p stays valid for the whole call.
func callLock(p *C.hl_client, op lockOp, opName string, kind *lockKind, name []byte, owner uint64) opResult {
	var r cResult
	k := cKind(kind)
	C.hlgo_lock_op(&r, C.int(op), p, &k, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.uint64_t(owner))
	runtime.KeepAlive(name)
	res := opResult{status: int(r.status), flag: r.flag != 0, value: int64(r.value)}
	if r.status != C.HL_OK {
		res.err = resultError(opName, &r)
	}
	return res
}

// holdState is what the library knows of an owner's hold
// (hl_hold_state): the one record of it; a Mutex keeps no count of its own.
type holdState struct {
	count   int64  // holds given and not released; 0 if none (or lost)
	lost    bool   // the hold was found lost
	epoch   uint64 // the hold's identity: new for each hold; 0 without one
	leaseMs int64  // -1: renewed by the watchdog; else its fixed lease
}

// callHoldState reads owner's hold state. The caller holds c.mu for
// reading. No round trip.
func callHoldState(p *C.hl_client, kind *lockKind, name []byte, owner uint64) (holdState, error) {
	var r cResult
	var st C.hl_hold_state
	k := cKind(kind)
	C.hlgo_hold_state(&r, &st, p, &k, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		C.uint64_t(owner))
	runtime.KeepAlive(name)
	if r.status != C.HL_OK {
		return holdState{}, resultError("hold state", &r)
	}
	return holdState{count: int64(st.count), lost: st.lost != 0, epoch: uint64(st.epoch),
		leaseMs: int64(st.lease_ms)}, nil
}

func callAcquire(p *C.hl_client, kind *lockKind, name []byte, owner uint64, waitMs, leaseMs int64, cancel *C.hl_cancel) opResult {
	var r cResult
	k := cKind(kind)
	C.hlgo_acquire(&r, p, &k, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.uint64_t(owner),
		C.int64_t(waitMs), C.int64_t(leaseMs), cancel)
	runtime.KeepAlive(name)
	res := opResult{status: int(r.status), flag: r.flag != 0, wasLost: r.was_lost != 0,
		value: int64(r.value)}
	if r.status != C.HL_OK {
		res.err = resultError("lock", &r)
	}
	return res
}

// multiCall is one multilock operation on C's side (see hlgo_multi_start).
// The caller holds every member client's mu for reading while it starts.
type multiCall struct {
	red     bool
	ps      []*C.hl_client
	kinds   []C.hlgo_kind
	names   []byte // the members' names, one after another
	lens    []C.size_t
	owners  []C.uint64_t
	members []C.int      // acquire: out (taken); release: in (which)
	epochs  []C.uint64_t // release: in (the hold of each, 0: any)
	wasLost []C.int
	status  []C.int
	freed   []C.int
	valid   int64
	out     *C.hlgo_multi_out // the task's outputs, until take
}

func newMultiCall(red bool, n int) *multiCall {
	return &multiCall{
		red:     red,
		ps:      make([]*C.hl_client, 0, n),
		kinds:   make([]C.hlgo_kind, 0, n),
		lens:    make([]C.size_t, 0, n),
		owners:  make([]C.uint64_t, 0, n),
		members: make([]C.int, n),
		epochs:  make([]C.uint64_t, n),
		wasLost: make([]C.int, n),
		status:  make([]C.int, n),
		freed:   make([]C.int, n),
	}
}

func (mc *multiCall) add(p *C.hl_client, kind *lockKind, name []byte, owner uint64) {
	mc.ps = append(mc.ps, p)
	mc.kinds = append(mc.kinds, cKind(kind))
	mc.names = append(mc.names, name...)
	mc.lens = append(mc.lens, C.size_t(len(name)))
	mc.owners = append(mc.owners, C.uint64_t(owner))
}

// start starts the task (op 0: acquire, 1: release) of the first member's
// client, with data. Every slice holds C values only, and C keeps none of
// them past the call, so passing their memory is allowed; the outputs the
// task writes later are C memory (take).
func (mc *multiCall) start(op int, waitMs, leaseMs int64, data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	kind := C.int(C.HL_MULTILOCK_ALL)
	if mc.red {
		kind = C.HL_MULTILOCK_RED
	}
	C.hlgo_multi_start(&r, &t, &mc.out, C.int(op), kind, C.int(len(mc.ps)), &mc.ps[0],
		&mc.kinds[0], (*C.char)(unsafe.Pointer(&mc.names[0])), &mc.lens[0], &mc.owners[0],
		C.int64_t(waitMs), C.int64_t(leaseMs), &mc.members[0], &mc.epochs[0], &mc.wasLost[0],
		C.uint64_t(data))
	runtime.KeepAlive(mc)
	res := opResult{status: int(r.status)}
	if r.status != C.HL_OK {
		opName := "lock"
		if op == 1 {
			opName = "unlock"
		}
		res.err = resultError(opName, &r)
	}
	return t, res
}

// call runs the operation (op 0: acquire with waitMs, 1: release) as a
// blocking call on this goroutine's thread, no task; the outputs land in
// mc at once. all: every member or none, even for a RedLock (a round that
// must not stop at a quorum). The caller holds every member client's mu
// for reading.
func (mc *multiCall) call(op int, waitMs, leaseMs int64, all bool) opResult {
	var r cResult
	var valid C.int64_t
	kind := C.int(C.HL_MULTILOCK_ALL)
	if mc.red && !all {
		kind = C.HL_MULTILOCK_RED
	}
	C.hlgo_multi_call(&r, C.int(op), kind, C.int(len(mc.ps)), &mc.ps[0],
		&mc.kinds[0], (*C.char)(unsafe.Pointer(&mc.names[0])), &mc.lens[0], &mc.owners[0],
		C.int64_t(waitMs), C.int64_t(leaseMs), &mc.members[0], &mc.epochs[0], &mc.wasLost[0],
		&valid, &mc.status[0], &mc.freed[0])
	runtime.KeepAlive(mc)
	mc.valid = int64(valid)
	res := opResult{status: int(r.status), flag: r.flag != 0}
	if r.status != C.HL_OK {
		opName := "lock"
		if op == 1 {
			opName = "unlock"
		}
		res.err = resultError(opName, &r)
	}
	return res
}

// release asks a release for member i's hold epoch (0: whichever).
func (mc *multiCall) release(i int, epoch uint64) {
	mc.members[i] = 1
	mc.epochs[i] = C.uint64_t(epoch)
}

// take copies the outputs of the task, done and freed, and frees them.
func (mc *multiCall) take() {
	if mc.out == nil {
		return
	}
	var valid C.int64_t
	C.hlgo_multi_take(mc.out, C.int(len(mc.members)), &valid, &mc.members[0], &mc.status[0],
		&mc.freed[0])
	mc.out = nil
	mc.valid = int64(valid)
}

func fdReadable(fd uintptr) bool { return C.hlgo_fd_readable(C.int(fd)) != 0 }

func closeFd(fd int) { C.close(C.int(fd)) }

// --- observability ----------------------------------------------------------

func clientStats(p *C.hl_client) Stats {
	var s C.hl_client_stats
	if C.hlgo_stats(&s, p) != C.HL_OK {
		return Stats{}
	}
	return Stats{
		Acquisitions:        uint64(s.acquisitions),
		AcquireWaits:        uint64(s.acquire_waits),
		WaitTime:            time.Duration(s.wait_time_ms) * time.Millisecond,
		Releases:            uint64(s.releases),
		Renewals:            uint64(s.renewals),
		RenewalFailures:     uint64(s.renewal_failures),
		Losses:              uint64(s.losses),
		Reconnects:          uint64(s.reconnects),
		Failovers:           uint64(s.failovers),
		EventsDropped:       uint64(s.events_dropped),
		Waiting:             uint64(s.waiting),
		WakeupsReadByWaiter: uint64(s.wakeups_read_by_waiter),
	}
}

func dupEventFd(p *C.hl_client) int { return int(C.hlgo_dup_event_fd(p)) }

// nextEvent takes the oldest queued event: ok = false when none is queued,
// end = true once the client is closed and every event was taken (or it
// cannot be used in this process).
func nextEvent(p *C.hl_client) (ev Event, ok bool, end bool) {
	var e *C.hl_event
	if C.hl_client_next_event(&e, p) != C.HL_OK {
		return Event{}, false, true
	}
	if e == nil {
		return Event{}, false, false
	}
	defer C.hl_event_free(e)
	var n C.size_t
	name := C.hl_event_lock_name(&n, e)
	code := int(C.hl_event_status(e))
	ev = Event{
		Type:    EventType(C.hl_event_type(e)),
		Time:    time.UnixMilli(int64(C.hl_event_time_ms(e))),
		Owner:   C.GoString(C.hl_event_owner(e)),
		Node:    C.GoString(C.hl_event_node(e)),
		Code:    code,
		Status:  statusName(code),
		Message: C.GoString(C.hl_event_message(e)),
	}
	if name != nil {
		ev.Lock = C.GoStringN(name, C.int(n))
	}
	return ev, true, false
}

func eventTypeName(t EventType) string { return C.GoString(C.hl_event_type_name(C.int(t))) }

// The event types, as libhilock numbers them (a compile error otherwise).
var (
	_ = [1]struct{}{}[EventLost-C.HL_EVENT_LOST]
	_ = [1]struct{}{}[EventRenewalFailed-C.HL_EVENT_RENEWAL_FAILED]
	_ = [1]struct{}{}[EventReconnect-C.HL_EVENT_RECONNECT]
	_ = [1]struct{}{}[EventFailover-C.HL_EVENT_FAILOVER]
	_ = [1]struct{}{}[EventFencingOff-C.HL_EVENT_FENCING_OFF]
	_ = [1]struct{}{}[EventUndo-C.HL_EVENT_UNDO]
)

// --- tasks ----------------------------------------------------------------

type cTask = C.hl_task

// taskDone is a completed task's result as the task loop took it.
type taskDone struct {
	data   uint64
	status int
	flag   bool
	msg    string
}

func (d *taskDone) result(op string) opResult {
	r := opResult{status: d.status, flag: d.flag}
	if d.status != statusOK {
		r.err = &Error{Op: op, Code: d.status, Name: statusName(d.status), Message: d.msg}
	}
	return r
}

func startAcquireTask(p *C.hl_client, kind *lockKind, name []byte, owner uint64,
	waitMs, leaseMs int64, data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	k := cKind(kind)
	C.hlgo_acquire_start(&r, &t, p, &k, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		C.uint64_t(owner), C.int64_t(waitMs), C.int64_t(leaseMs), C.uint64_t(data))
	runtime.KeepAlive(name)
	res := opResult{status: int(r.status), wasLost: r.was_lost != 0}
	if r.status != C.HL_OK {
		res.err = resultError("lock", &r)
	}
	return t, res
}

func startReleaseTask(p *C.hl_client, kind *lockKind, name []byte, owner uint64,
	data uint64) (*cTask, opResult) {
	var r cResult
	var t *C.hl_task
	k := cKind(kind)
	C.hlgo_release_start(&r, &t, p, &k, unsafe.Pointer(&name[0]), C.size_t(len(name)),
		C.uint64_t(owner), C.uint64_t(data))
	runtime.KeepAlive(name)
	res := opResult{status: int(r.status)}
	if r.status != C.HL_OK {
		res.err = resultError("unlock", &r)
	}
	return t, res
}

// cancelTask and freeTask never block on the network.
func cancelTask(t *cTask) { C.hl_task_cancel(t) }
func freeTask(t *cTask)   { C.hl_task_free(t) }

func clientTaskFd(p *C.hl_client) int { return int(C.hlgo_task_fd(p)) }

// takeTasks takes up to len(out) completed tasks of p (one cgo call).
func takeTasks(p *C.hl_client, out []taskDone) int {
	var buf [taskBatch]C.hlgo_done
	n := len(out)
	if n > taskBatch {
		n = taskBatch
	}
	got := int(C.hlgo_take(p, &buf[0], C.int(n)))
	for i := 0; i < got; i++ {
		out[i] = taskDone{data: uint64(buf[i].data), status: int(buf[i].status),
			flag: buf[i].flag != 0}
		if buf[i].status != C.HL_OK {
			out[i].msg = C.GoString(&buf[i].msg[0])
		}
	}
	return got
}
