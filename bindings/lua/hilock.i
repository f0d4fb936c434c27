/*
 * hilock.i: the SWIG interface that generates the C glue of the Lua binding
 * (module "hilock_core"). It is deliberately 1:1 with hilock.h and thin; the
 * Lua idioms (seconds, guards, coroutine owners, raising on misuse) live in
 * hilock.lua, which is what users `require`.
 *
 * Conventions of every wrapped call that returns a status:
 *   success -> true, <outputs...>
 *   failure -> nil, message, code      (code = hl_status_name(), "HL_EIO")
 * The failure values are pushed inside the same C call that failed, so no
 * other hilock call (a finalizer run by the garbage collector, say) can
 * overwrite the thread-local error detail before it is read.
 *
 * Handles are SWIG userdata that own their C object; their __gc calls the
 * library's own free functions (hl_client_free, hl_lock_free), never free()
 * on a library pointer.
 */
%module hilock_core

%{
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "hilock.h"

/* A status code that the typemaps below turn into Lua values. */
typedef int hl_rc;

/* The handle the Lua layer keeps per (Lock object, coroutine): a library
 * lock handle with that coroutine's owner id. The library keeps the owner's
 * hold (hl_lock_hold_state); the handle keeps only the identity (epoch) of
 * the last hold taken through it. The Lua layer keeps such a handle
 * reachable from the coroutine's owner record while that hold is the
 * library's current one, so a handle collected while its hold is current
 * belongs to a coroutine that was collected while holding: its destructor
 * abandons the hold (the watchdog stops renewing it and the lease runs out),
 * instead of a dead coroutine holding the lock forever. */
typedef struct hlua_lock {
	hl_lock *lock;  /* NULL once closed */
	uint64_t epoch; /* the hold last taken through it; 0: none */
} hlua_lock;

/* The epoch of the owner's current hold as the library knows it (no round
 * trip); 0 when it has none, or cannot say (a closed client). */
static uint64_t hlua_epoch(hl_lock *lock)
{
	hl_hold_state st;
	memset(&st, 0, sizeof(st));
	st.version = HL_HOLD_STATE_VERSION;
	if (lock == NULL || hl_lock_hold_state(&st, lock) != HL_OK)
		return 0;
	return st.epoch;
}

/* An acquire through h succeeded: the hold it is part of is h's. */
static void hlua_took(hlua_lock *h)
{
	h->epoch = hlua_epoch(h->lock);
}

/* Number of live hlua_lock and hl_client wrappers, for the leak tests
 * (atomic: a host may run Lua states on several threads). */
static atomic_long hlua_live_locks;
static atomic_long hlua_live_clients;

static int hlua_push_failure(lua_State *L, int rc)
{
	const char *detail = hl_error_last();
	lua_pushnil(L);
	if (detail == NULL || detail[0] == '\0' || hl_error_last_code() != rc)
		detail = hl_status_str(rc);
	lua_pushstring(L, detail);
	lua_pushstring(L, hl_status_name(rc));
	return 3;
}

/* Free the library handle; abandon (the collector's case, see hlua_lock)
 * the owner's hold if it is still the one taken through h. */
static void hlua_handle_close(hlua_lock *h, int abandon)
{
	if (h->lock != NULL) {
		if (abandon && h->epoch != 0 && hlua_epoch(h->lock) == h->epoch)
			(void)hl_lock_abandon(h->lock);
		hl_lock_free(h->lock);
		h->lock = NULL;
	}
	h->epoch = 0;
}

static int hlua_lock_new(hlua_lock **out, hl_client *client, int kind,
                         const void *name, size_t name_len, uint64_t owner)
{
	hlua_lock *h;
	int rc;

	h = (hlua_lock *)calloc(1, sizeof(*h));
	if (h == NULL)
		return HL_ENOMEM;
	rc = hl_lock_new_kind(&h->lock, client, kind, name, name_len);
	if (rc == HL_OK && owner != 0)
		rc = hl_lock_set_owner(h->lock, owner);
	if (rc != HL_OK) {
		hl_lock_free(h->lock);
		free(h);
		return rc;
	}
	hlua_live_locks++;
	*out = h;
	return HL_OK;
}

/* The owner's hold through h as the library knows it (no round trip):
 * HL_OK and *st, or the status of hl_lock_hold_state. */
static int hlua_hold_state(hlua_lock *h, hl_hold_state *st)
{
	memset(st, 0, sizeof(*st));
	st->version = HL_HOLD_STATE_VERSION;
	return h->lock ? hl_lock_hold_state(st, h->lock) : HL_EINVAL;
}

/* ---- the hot path of lock:acquire(), guard:release(), lock:unlock() ------
 * hilock.lua calls these as module functions (kept in locals: no method
 * lookup through the handle's metatable), each one call where the methods
 * took two or three: the acquire or release and the hold state the Lua
 * layer's bookkeeping reads right after it (-1 where hl_lock_hold_state
 * failed, which the Lua layer takes as the method's failure). */

/* try_acquire, then the owner's hold: its epoch (h's, when acquired) and
 * count. */
static int hlua_hot_acquire(hlua_lock *h, int *acquired, int64_t *epoch,
                            int64_t *count, int64_t wait_ms, int64_t lease_ms)
{
	hl_hold_state st;
	int rc = hl_lock_try_acquire(acquired, h->lock, wait_ms, lease_ms, NULL);
	*epoch = 0;
	*count = 0;
	if (rc != HL_OK || !*acquired)
		return rc;
	if (hlua_hold_state(h, &st) == HL_OK) {
		h->epoch = st.epoch;
		*epoch = (int64_t)st.epoch;
		*count = st.count;
	} else {
		h->epoch = 0;
		*count = -1;
	}
	return HL_OK;
}

/* release through h, then the epoch of the owner's hold left: 0 when the
 * release left none (*released: the owner's holds are over, the lock is
 * free of them), else as hl_lock_hold_state says (-1 unknown). */
static int hlua_hot_release(hlua_lock *h, int *released, int64_t *epoch)
{
	hl_hold_state st;
	int rc = hl_lock_release(released, h->lock);
	if (rc != HL_OK)
		return rc;
	if (*released)
		*epoch = 0;
	else
		*epoch = hlua_hold_state(h, &st) == HL_OK ? (int64_t)st.epoch : -1;
	return HL_OK;
}

/* A guard's release: only if the owner's hold is still the one of epoch
 * guard_epoch (else *ended = 1, nothing released, *epoch the hold's now);
 * then as hlua_hot_release. */
static int hlua_hot_give_back(hlua_lock *h, int *released, int64_t *epoch,
                              int *ended, int64_t guard_epoch)
{
	hl_hold_state st;
	*released = 0;
	*ended = 0;
	*epoch = -1;
	if (hlua_hold_state(h, &st) == HL_OK &&
	    (int64_t)st.epoch != guard_epoch) {
		*ended = 1;
		*epoch = (int64_t)st.epoch;
		return HL_OK;
	}
	return hlua_hot_release(h, released, epoch);
}

static int64_t hlua_hot_epoch(hlua_lock *h)
{
	return (int64_t)h->epoch;
}

static bool hlua_hot_closed(hlua_lock *h)
{
	return h->lock == NULL;
}

/* A multilock over the handles of one coroutine's members (hlua_lock), and
 * the per-member outcome of its last call, read back by the Lua layer (which
 * members a guard stands for). The members' userdata are kept alive by the
 * Lua layer as long as this one. */
typedef struct hlua_multi {
	hl_multilock *m;
	hlua_lock **members;
	size_t n;
	int *taken;  /* last acquire: 1 for each member taken */
	int *status; /* last release: each member's status */
	int *freed;  /* last release: each member now free */
} hlua_multi;

static atomic_long hlua_live_multis;

static void hlua_multi_free(hlua_multi *mu)
{
	if (mu == NULL)
		return;
	hl_multilock_free(mu->m);
	free(mu->members);
	free(mu->taken);
	free(mu->status);
	free(mu->freed);
	free(mu);
}

static int hlua_multi_new(hlua_multi **out, hlua_lock **members, size_t n,
                          int kind)
{
	hl_lock **locks;
	hlua_multi *mu;
	size_t i;
	int rc;

	mu = (hlua_multi *)calloc(1, sizeof(*mu));
	locks = (hl_lock **)calloc(n ? n : 1, sizeof(*locks));
	if (mu != NULL) {
		mu->members = (hlua_lock **)calloc(n ? n : 1, sizeof(*mu->members));
		mu->taken = (int *)calloc(n ? n : 1, sizeof(int));
		mu->status = (int *)calloc(n ? n : 1, sizeof(int));
		mu->freed = (int *)calloc(n ? n : 1, sizeof(int));
	}
	if (mu == NULL || locks == NULL || mu->members == NULL ||
	    mu->taken == NULL || mu->status == NULL || mu->freed == NULL) {
		free(locks);
		hlua_multi_free(mu);
		return HL_ENOMEM;
	}
	for (i = 0; i < n; i++) {
		mu->members[i] = members[i];
		locks[i] = members[i] ? members[i]->lock : NULL;
	}
	mu->n = n;
	rc = hl_multilock_new(&mu->m, locks, n, kind);
	free(locks);
	if (rc != HL_OK) {
		hlua_multi_free(mu);
		return rc;
	}
	hlua_live_multis++;
	*out = mu;
	return HL_OK;
}

/* An event as a table: type, time and monotonic (seconds), name (binary,
 * absent for an event about no lock), owner and node (absent when empty),
 * status (its name), message. */
static void hlua_push_event(lua_State *L, const hl_event *e)
{
	size_t len = 0;
	const char *name = hl_event_lock_name(&len, e);
	lua_createtable(L, 0, 8);
	lua_pushstring(L, hl_event_type_name(hl_event_type(e)));
	lua_setfield(L, -2, "type");
	lua_pushnumber(L, (lua_Number)hl_event_time_ms(e) / 1000.0);
	lua_setfield(L, -2, "time");
	lua_pushnumber(L, (lua_Number)hl_event_monotonic_ms(e) / 1000.0);
	lua_setfield(L, -2, "monotonic");
	if (name != NULL) {
		lua_pushlstring(L, name, len);
		lua_setfield(L, -2, "name");
	}
	if (hl_event_owner(e)[0] != '\0') {
		lua_pushstring(L, hl_event_owner(e));
		lua_setfield(L, -2, "owner");
	}
	if (hl_event_node(e)[0] != '\0') {
		lua_pushstring(L, hl_event_node(e));
		lua_setfield(L, -2, "node");
	}
	lua_pushstring(L, hl_status_name(hl_event_status(e)));
	lua_setfield(L, -2, "status");
	lua_pushstring(L, hl_event_message(e));
	lua_setfield(L, -2, "message");
}

/* An operation started without blocking (hl_lock_*_start): the library's
 * task, and the handle it was started through, which an acquire's result
 * makes the taker of the hold once (the Lua layer keeps that handle's
 * userdata alive as long as this one). A multilock's acquire has the
 * multilock instead (its members are the takers of what it took; the Lua
 * layer keeps it alive too), and the outputs the library writes before it
 * completes. */
enum { HLUA_TASK_ACQUIRE, HLUA_TASK_RELEASE, HLUA_TASK_LOST, HLUA_TASK_MULTI };
typedef struct hlua_task {
	hl_task *t; /* NULL once closed */
	hlua_lock *h;
	int what;    /* HLUA_TASK_* */
	int counted; /* its result was applied to h (or to mu's members) */
	struct hlua_multi *mu;
	int *taken;    /* HLUA_TASK_MULTI: 1 for each member taken */
	int64_t valid; /* HLUA_TASK_MULTI: the validity left in ms (-1: none) */
} hlua_task;

static atomic_long hlua_live_tasks;

static int hlua_task_start(hlua_task **out, hlua_lock *h, int what,
                           int64_t wait_ms, int64_t lease_ms, uint64_t data)
{
	hlua_task *k;
	int rc;
	if (h->lock == NULL)
		return HL_EINVAL;
	k = (hlua_task *)calloc(1, sizeof(*k));
	if (k == NULL)
		return HL_ENOMEM;
	if (what == HLUA_TASK_ACQUIRE)
		rc = hl_lock_try_acquire_start(&k->t, h->lock, wait_ms,
		                               lease_ms);
	else if (what == HLUA_TASK_RELEASE)
		rc = hl_lock_release_start(&k->t, h->lock);
	else
		rc = hl_lock_wait_lost_start(&k->t, h->lock, wait_ms);
	if (rc != HL_OK) {
		free(k);
		return rc;
	}
	hl_task_set_data(k->t, data);
	k->h = h;
	k->what = what;
	hlua_live_tasks++;
	*out = k;
	return HL_OK;
}

/* The task's result; an acquire's, applied once to its handle as the
 * handle's own blocking acquire applies its (a synchronizer's task has no
 * handle: its permits are counted by the library, per client). */
static int hlua_task_take_result(hlua_task *k, int *out)
{
	int rc;
	if (k->t == NULL)
		return HL_EINVAL;
	rc = hl_task_result(out, k->t);
	if (!k->counted && k->what == HLUA_TASK_MULTI && hl_task_done(k->t)) {
		/* as hlua_multi's try_acquire: each member taken is the taker
		 * of its hold */
		size_t i;
		k->counted = 1;
		if (rc == HL_OK && *out)
			for (i = 0; i < k->mu->n; i++)
				if (k->taken[i])
					hlua_took(k->mu->members[i]);
		return rc;
	}
	if (k->counted || !hl_task_done(k->t) || k->h == NULL)
		return rc;
	k->counted = 1;
	if (k->what == HLUA_TASK_ACQUIRE && rc == HL_OK && *out &&
	    k->h->lock != NULL)
		hlua_took(k->h);
	return rc;
}

/* ---- synchronizers ---------------------------------------------------------
 * One library handle per Lua object (permits belong to the client, not to a
 * coroutine); NULL once closed, so a call on a closed object returns
 * HL_EINVAL instead of touching freed memory. */
typedef struct hlua_sem {
	hl_semaphore *s;
} hlua_sem;
typedef struct hlua_xsem {
	hl_expsem *s;
} hlua_xsem;
typedef struct hlua_latch {
	hl_latch *l;
} hlua_latch;

/* Live synchronizer wrappers, all three kinds (for the leak tests). */
static atomic_long hlua_live_syncs;

static int hlua_semaphore_new(hlua_sem **out, hl_client *client,
                              const void *name, size_t name_len)
{
	hlua_sem *w = (hlua_sem *)calloc(1, sizeof(*w));
	int rc;
	if (w == NULL)
		return HL_ENOMEM;
	if ((rc = hl_semaphore_new(&w->s, client, name, name_len)) != HL_OK) {
		free(w);
		return rc;
	}
	hlua_live_syncs++;
	*out = w;
	return HL_OK;
}

static int hlua_expsem_new(hlua_xsem **out, hl_client *client,
                           const void *name, size_t name_len)
{
	hlua_xsem *w = (hlua_xsem *)calloc(1, sizeof(*w));
	int rc;
	if (w == NULL)
		return HL_ENOMEM;
	if ((rc = hl_expsem_new(&w->s, client, name, name_len)) != HL_OK) {
		free(w);
		return rc;
	}
	hlua_live_syncs++;
	*out = w;
	return HL_OK;
}

static int hlua_latch_new(hlua_latch **out, hl_client *client,
                          const void *name, size_t name_len)
{
	hlua_latch *w = (hlua_latch *)calloc(1, sizeof(*w));
	int rc;
	if (w == NULL)
		return HL_ENOMEM;
	if ((rc = hl_latch_new(&w->l, client, name, name_len)) != HL_OK) {
		free(w);
		return rc;
	}
	hlua_live_syncs++;
	*out = w;
	return HL_OK;
}

/* Wrap a synchronizer's task (rc: its _start call's status). */
static int hlua_task_adopt(hlua_task **out, int rc, hl_task *t,
                           uint64_t data)
{
	hlua_task *k;
	if (rc != HL_OK)
		return rc;
	k = (hlua_task *)calloc(1, sizeof(*k));
	if (k == NULL) {
		hl_task_free(t); /* cancels it: nothing stays taken */
		return HL_ENOMEM;
	}
	hl_task_set_data(t, data);
	k->t = t;
	k->what = HLUA_TASK_ACQUIRE;
	hlua_live_tasks++;
	*out = k;
	return HL_OK;
}

static int hlua_client_new(hl_client **out, const char *url,
                           const hl_client_options *opts)
{
	int rc = hl_client_new(out, url, opts);
	if (rc == HL_OK)
		hlua_live_clients++;
	return rc;
}
%}

/* ---- typemaps ----------------------------------------------------------- */

typedef int hl_rc;

/* The status: on failure return nil, message, code at once (no argout runs);
 * on success push true, then the argout typemaps push the outputs. */
%typemap(out) hl_rc {
	if ($1 != HL_OK)
		return hlua_push_failure(L, $1);
	lua_pushboolean(L, 1);
	SWIG_arg++;
}

/* A handle argument (self too): SWIG's own conversion, except that nil,
 * which it takes for NULL (and the glue's functions would dereference), is
 * misuse too and raises, as a handle of the wrong type does. */
%typemap(in, checkfn="SWIG_isptrtype")
	hl_client *, hlua_lock *, hlua_task *, hlua_multi *, hlua_sem *, hlua_xsem *,
	hlua_latch *, struct hl_client *, struct hlua_lock *, struct hlua_task *,
	struct hlua_multi *, struct hlua_sem *, struct hlua_xsem *, struct hlua_latch * {
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, $input, (void **)&$1, $descriptor, 0)))
		SWIG_fail_ptr("$symname", $input, $descriptor);
	if ($1 == NULL) {
		SWIG_Lua_pushferrstring(L, "Error in %s (arg %d), expected '%s' got 'nil'",
		                        "$symname", $input, "$1_type");
		SWIG_fail;
	}
}

%typemap(in, numinputs=0) int *OUT_BOOL (int tmp = 0) "$1 = &tmp;"
%typemap(argout) int *OUT_BOOL {
	lua_pushboolean(L, *$1 != 0);
	SWIG_arg++;
}

%typemap(in, numinputs=0) int64_t *OUT_INT (int64_t tmp = 0) "$1 = &tmp;"
%typemap(argout) int64_t *OUT_INT {
	lua_pushinteger(L, (lua_Integer)*$1);
	SWIG_arg++;
}

%typemap(in, numinputs=0) (char *OUT_BUF, size_t OUT_BUF_LEN) (char tmp[128]) {
	tmp[0] = '\0';
	$1 = tmp;
	$2 = sizeof(tmp);
}
%typemap(argout) (char *OUT_BUF, size_t OUT_BUF_LEN) {
	lua_pushstring(L, $1);
	SWIG_arg++;
}

/* Two integers out of one call (hold_state). */
%apply int64_t *OUT_INT { int64_t *OUT_COUNT, int64_t *OUT_EPOCH };

%typemap(in, numinputs=0) int *OUT_INTEGER (int tmp = 0) "$1 = &tmp;"
%typemap(argout) int *OUT_INTEGER {
	lua_pushinteger(L, (lua_Integer)*$1);
	SWIG_arg++;
}

/* The client's counters as a table of integers (wait_time_ms in ms). */
%typemap(in, numinputs=0) hl_client_stats *OUT_STATS (hl_client_stats tmp) {
	memset(&tmp, 0, sizeof(tmp));
	tmp.version = HL_CLIENT_STATS_VERSION;
	$1 = &tmp;
}
%typemap(argout) hl_client_stats *OUT_STATS {
	lua_createtable(L, 0, 12);
#define HLUA_STAT(field)                                                       \
	lua_pushinteger(L, (lua_Integer)$1->field);                            \
	lua_setfield(L, -2, #field);
	HLUA_STAT(acquisitions)
	HLUA_STAT(acquire_waits)
	HLUA_STAT(wait_time_ms)
	HLUA_STAT(releases)
	HLUA_STAT(renewals)
	HLUA_STAT(renewal_failures)
	HLUA_STAT(losses)
	HLUA_STAT(reconnects)
	HLUA_STAT(failovers)
	HLUA_STAT(events_dropped)
	HLUA_STAT(waiting)
	HLUA_STAT(wakeups_read_by_waiter)
#undef HLUA_STAT
	SWIG_arg++;
}

/* The next event as a table (see hlua_push_event), or nil when none is
 * queued; the C event is freed here. */
%typemap(in, numinputs=0) hl_event **OUT_EVENT (hl_event *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hl_event **OUT_EVENT {
	if (*$1 == NULL) {
		lua_pushnil(L);
	} else {
		hlua_push_event(L, *$1);
		hl_event_free(*$1);
	}
	SWIG_arg++;
}

/* New objects are owned by their userdata (__gc runs the destructor). */
%typemap(in, numinputs=0) hl_client **OUT_CLIENT (hl_client *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hl_client **OUT_CLIENT {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}
%typemap(in, numinputs=0) hlua_lock **OUT_LOCK (hlua_lock *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_lock **OUT_LOCK {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}

%typemap(in, numinputs=0) hlua_task **OUT_TASK (hlua_task *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_task **OUT_TASK {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}

%typemap(in, numinputs=0) hlua_multi **OUT_MULTI (hlua_multi *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_multi **OUT_MULTI {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}

%typemap(in, numinputs=0) hlua_sem **OUT_SEM (hlua_sem *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_sem **OUT_SEM {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}
%typemap(in, numinputs=0) hlua_xsem **OUT_XSEM (hlua_xsem *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_xsem **OUT_XSEM {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}
%typemap(in, numinputs=0) hlua_latch **OUT_LATCH (hlua_latch *tmp = NULL) "$1 = &tmp;"
%typemap(argout) hlua_latch **OUT_LATCH {
	SWIG_NewPointerObj(L, *$1, $*1_descriptor, 1);
	SWIG_arg++;
}

/* Permit ids of the expirable semaphore: the Lua argument is how many; the
 * C call gets room for that many NUL-terminated ids (HL_PERMIT_ID_LEN + 1
 * bytes each) in a userdata left on the stack, so the collector frees it
 * whichever way the call returns (a failure returns before freearg would
 * run). On success a Lua array of the ids is pushed. A count out of range
 * gets one byte of room: the library refuses the count before writing. */
%typemap(in) (char *IDS, size_t N) {
	lua_Integer n_ = luaL_checkinteger(L, $input);
	size_t room_ = 1;
	if (n_ >= 1 && n_ <= 1000)
		room_ = (size_t)n_ * (HL_PERMIT_ID_LEN + 1);
	$1 = (char *)lua_newuserdata(L, room_);
	memset($1, 0, room_);
	$2 = n_ < 0 ? 0 : (size_t)n_;
}
%typemap(argout) (char *IDS, size_t N) {
	size_t i_;
	lua_createtable(L, (int)$2, 0);
	for (i_ = 0; i_ < $2; i_++) {
		lua_pushstring(L, $1 + i_ * (HL_PERMIT_ID_LEN + 1));
		lua_rawseti(L, -2, (lua_Integer)(i_ + 1));
	}
	SWIG_arg++;
}

/* A multilock's members: a Lua array of lock handles (hlua_lock). */
%typemap(in) (hlua_lock **MEMBERS, size_t N) {
	size_t i_, n_;
	luaL_checktype(L, $input, LUA_TTABLE);
	n_ = (size_t)lua_rawlen(L, $input);
	$2 = n_;
	/* owned by the collector, so no error path leaks it */
	$1 = (hlua_lock **)lua_newuserdata(L, (n_ ? n_ : 1) * sizeof(hlua_lock *));
	for (i_ = 0; i_ < n_; i_++) {
		void *p_ = NULL;
		lua_rawgeti(L, $input, (lua_Integer)(i_ + 1));
		if (!SWIG_IsOK(SWIG_ConvertPtr(L, -1, &p_, SWIGTYPE_p_hlua_lock, 0)))
			SWIG_fail_ptr("multi_new", (int)(i_ + 1), SWIGTYPE_p_hlua_lock);
		lua_pop(L, 1);
		$1[i_] = (hlua_lock *)p_;
	}
}

/* Binary-safe names: a Lua string with its length, NUL bytes included. */
%typemap(in) (const void *name, size_t name_len) {
	size_t len_ = 0;
	$1 = (void *)luaL_checklstring(L, $input, &len_);
	$2 = len_;
}

/* Milliseconds and owner ids are Lua integers. */
%typemap(in) int64_t "$1 = (int64_t)luaL_checkinteger(L, $input);"
%typemap(in) uint64_t "$1 = (uint64_t)luaL_checkinteger(L, $input);"
%typemap(out) uint64_t "lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;"
%typemap(out) int64_t "lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;"

/* Client options from a Lua table of integer milliseconds (the Lua layer
 * converts seconds and validates); absent fields keep the defaults. */
%typemap(in) const hl_client_options *OPTS (hl_client_options tmp) {
	hl_client_options_init(&tmp, HL_CLIENT_OPTIONS_VERSION);
	if (!lua_isnoneornil(L, $input)) {
		luaL_checktype(L, $input, LUA_TTABLE);
#define HLUA_OPT_INT(field, type)                                              \
		lua_getfield(L, $input, #field);                               \
		if (!lua_isnil(L, -1))                                         \
			tmp.field = (type)luaL_checkinteger(L, -1);            \
		lua_pop(L, 1);
		HLUA_OPT_INT(watchdog_timeout_ms, int64_t)
		HLUA_OPT_INT(connect_timeout_ms, int64_t)
		HLUA_OPT_INT(command_timeout_ms, int64_t)
		HLUA_OPT_INT(retry_attempts, int)
		HLUA_OPT_INT(retry_delay_ms, int64_t)
		HLUA_OPT_INT(pool_size, int)
		HLUA_OPT_INT(subscription_timeout_ms, int64_t)
		HLUA_OPT_INT(ping_interval_ms, int64_t)
		HLUA_OPT_INT(read_from, int)
		HLUA_OPT_INT(wait_replicas, int)
		HLUA_OPT_INT(wait_timeout_ms, int64_t)
		HLUA_OPT_INT(fair_wait_timeout_ms, int64_t)
#undef HLUA_OPT_INT
		/* The strings stay alive in the table for the whole call;
		 * hl_client_new copies them. */
		lua_getfield(L, $input, "client_name");
		if (!lua_isnil(L, -1))
			tmp.client_name = luaL_checkstring(L, -1);
		lua_pop(L, 1);
#define HLUA_OPT_STR(field)                                                    \
		lua_getfield(L, $input, #field);                               \
		if (!lua_isnil(L, -1))                                         \
			tmp.field = luaL_checkstring(L, -1);                   \
		lua_pop(L, 1);
		HLUA_OPT_STR(tls_ca_file)
		HLUA_OPT_STR(tls_ca_dir)
		HLUA_OPT_STR(tls_cert_file)
		HLUA_OPT_STR(tls_key_file)
		HLUA_OPT_STR(tls_server_name)
		HLUA_OPT_STR(sentinel_username)
		HLUA_OPT_STR(sentinel_password)
#undef HLUA_OPT_STR
		lua_getfield(L, $input, "tls_verify");
		if (!lua_isnil(L, -1))
			tmp.tls_verify = lua_toboolean(L, -1) ? 1 : 0;
		lua_pop(L, 1);
	}
	$1 = &tmp;
}
%typemap(default) const hl_client_options *OPTS "$1 = NULL;"

/* read_from's values (the Lua layer maps "master", "replica", "any"). */
%constant int READ_MASTER = HL_READ_MASTER;
%constant int READ_REPLICA = HL_READ_REPLICA;
%constant int READ_ANY = HL_READ_ANY;

/* The lock kinds (HL_LOCK_*) and their names. */
%constant int LOCK_REENTRANT = HL_LOCK_REENTRANT;
%constant int LOCK_FAIR = HL_LOCK_FAIR;
%constant int LOCK_READ = HL_LOCK_READ;
%constant int LOCK_WRITE = HL_LOCK_WRITE;
%constant int LOCK_SPIN = HL_LOCK_SPIN;
%constant int LOCK_FENCED = HL_LOCK_FENCED;
%constant int LOCK_NONREENTRANT = HL_LOCK_NONREENTRANT;
%constant int LOCK_FAIR_NONREENTRANT = HL_LOCK_FAIR_NONREENTRANT;
%rename(lock_kind_name) hl_lock_kind_name;
const char *hl_lock_kind_name(int kind);

/* ---- module functions --------------------------------------------------- */

%rename(version) hl_version;
const char *hl_version(void);
%rename(version_number) hl_version_number;
/* SWIG's int is a Lua float (lua_pushnumber); a version number is an
 * integer (math.type(...) == "integer" in 5.3+). */
%typemap(out) int hl_version_number "lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;"
int hl_version_number(void);
%rename(status_name) hl_status_name;
const char *hl_status_name(int status);
%rename(status_str) hl_status_str;
const char *hl_status_str(int status);
%rename(owner_id_new) hl_owner_id_new;
uint64_t hl_owner_id_new(void);

%rename(client_new) hlua_client_new;
hl_rc hlua_client_new(hl_client **OUT_CLIENT, const char *url,
                      const hl_client_options *OPTS);

%rename(lock_new) hlua_lock_new;
hl_rc hlua_lock_new(hlua_lock **OUT_LOCK, hl_client *client, int kind,
                    const void *name, size_t name_len, uint64_t owner);

/* The hot path (see hlua_hot_acquire above), as module functions:
 *   lock_acquire(h, wait_ms, lease_ms) --> true, acquired, epoch, count
 *   lock_release(h) --> true, released, epoch
 *   lock_give_back(h, guard_epoch) --> true, released, epoch, ended
 *   lock_epoch(h) --> h:epoch(); lock_closed(h) --> h:closed()
 * (failures: nil, message, code). */
%apply int *OUT_BOOL { int *OUT_ENDED };
%rename(lock_acquire) hlua_hot_acquire;
hl_rc hlua_hot_acquire(hlua_lock *h, int *OUT_BOOL, int64_t *OUT_EPOCH,
                       int64_t *OUT_COUNT, int64_t wait_ms, int64_t lease_ms);
%rename(lock_release) hlua_hot_release;
hl_rc hlua_hot_release(hlua_lock *h, int *OUT_BOOL, int64_t *OUT_EPOCH);
%rename(lock_give_back) hlua_hot_give_back;
hl_rc hlua_hot_give_back(hlua_lock *h, int *OUT_BOOL, int64_t *OUT_EPOCH,
                         int *OUT_ENDED, int64_t guard_epoch);
%rename(lock_epoch) hlua_hot_epoch;
int64_t hlua_hot_epoch(hlua_lock *h);
%rename(lock_closed) hlua_hot_closed;
bool hlua_hot_closed(hlua_lock *h);

%rename(multi_new) hlua_multi_new;
hl_rc hlua_multi_new(hlua_multi **OUT_MULTI, hlua_lock **MEMBERS, size_t N,
                     int kind);
%constant int MULTILOCK_ALL = HL_MULTILOCK_ALL;
%constant int MULTILOCK_RED = HL_MULTILOCK_RED;

%rename(semaphore_new) hlua_semaphore_new;
hl_rc hlua_semaphore_new(hlua_sem **OUT_SEM, hl_client *client,
                         const void *name, size_t name_len);
%rename(expsem_new) hlua_expsem_new;
hl_rc hlua_expsem_new(hlua_xsem **OUT_XSEM, hl_client *client,
                      const void *name, size_t name_len);
%rename(latch_new) hlua_latch_new;
hl_rc hlua_latch_new(hlua_latch **OUT_LATCH, hl_client *client,
                     const void *name, size_t name_len);
%constant int PERMIT_ID_LEN = HL_PERMIT_ID_LEN;

/* The rate limiter's waits (its other calls go through grid_call): one
 * blocking wait -> true, acquired, retry_ms; or a task. */
%{
static int hlua_rate_try(int *acquired, int64_t *retry, hl_client *client,
                         const void *name, size_t name_len, int64_t permits,
                         int64_t wait_ms)
{
	hl_object *o = NULL;
	int rc = hl_rate_limiter_new(&o, client, name, name_len);
	if (rc != HL_OK)
		return rc;
	rc = hl_rate_limiter_try_acquire_ex(acquired, retry, o, permits,
	                                    wait_ms, NULL);
	hl_object_free(o);
	return rc;
}

static int hlua_rate_start(hlua_task **out, hl_client *client,
                           const void *name, size_t name_len,
                           int64_t permits, int64_t wait_ms, uint64_t data)
{
	hl_object *o = NULL;
	hl_task *t = NULL;
	int rc = hl_rate_limiter_new(&o, client, name, name_len);
	if (rc != HL_OK)
		return rc;
	rc = hl_rate_limiter_try_acquire_start(&t, o, permits, wait_ms);
	hl_object_free(o);
	return hlua_task_adopt(out, rc, t, data);
}
%}
%rename(rate_try) hlua_rate_try;
hl_rc hlua_rate_try(int *OUT_BOOL, int64_t *OUT_INT, hl_client *client,
                    const void *name, size_t name_len, int64_t permits,
                    int64_t wait_ms);
%rename(rate_start) hlua_rate_start;
hl_rc hlua_rate_start(hlua_task **OUT_TASK, hl_client *client,
                      const void *name, size_t name_len, int64_t permits,
                      int64_t wait_ms, uint64_t data);

/* The blocking queue's waits as tasks (its blocking forms go through
 * grid_call): a task in the queue's line; its element with task_bytes. */
%{
static int hlua_bq_start(hlua_task **out, hl_client *client, int kind,
                         const void *name, size_t name_len, int op,
                         int64_t wait_ms, uint64_t data)
{
	hl_object *o = NULL;
	hl_task *t = NULL;
	hl_arg a;
	int rc = hl_object_new(&o, client, kind, name, name_len);
	if (rc != HL_OK)
		return rc;
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_INT;
	a.i = wait_ms;
	rc = hl_object_call_start(&t, o, op, wait_ms < 0 ? NULL : &a,
	                          wait_ms < 0 ? 0 : 1);
	hl_object_free(o);
	return hlua_task_adopt(out, rc, t, data);
}

/* core.task_bytes(task) --> the bytes a done task answered, or nil. */
static int hlua_task_bytes(lua_State *L)
{
	hlua_task *k = NULL;
	const hl_value *v = NULL;
	size_t n = 0;
	const char *p;
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&k, SWIGTYPE_p_hlua_task,
	                               0)) ||
	    k == NULL || k->t == NULL)
		return luaL_error(L, "task_bytes: a live task expected");
	if (hl_task_value(&v, k->t) != HL_OK ||
	    hl_value_type(v) != HL_VALUE_BYTES) {
		lua_pushnil(L);
		return 1;
	}
	p = hl_value_bytes(v, &n);
	lua_pushlstring(L, p, n);
	return 1;
}
%}
%rename(bq_start) hlua_bq_start;
hl_rc hlua_bq_start(hlua_task **OUT_TASK, hl_client *client, int kind,
                    const void *name, size_t name_len, int op,
                    int64_t wait_ms, uint64_t data);
%native(task_bytes) int hlua_task_bytes(lua_State *L);

/* Poll from several queues as a task: the other names packed as Lua's
 * string.pack("s4") strings one after another; its answer with
 * task_pair. */
%{
static int hlua_bq_any_start(hlua_task **out, hl_client *client, int kind,
                             const void *name, size_t name_len,
                             const void *packed, size_t packed_len,
                             int64_t wait_ms, uint64_t data)
{
	hl_object *o = NULL;
	hl_task *t = NULL;
	const unsigned char *p = packed;
	const char **argv = NULL;
	size_t *lens = NULL, n = 0, at = 0, cap = packed_len / 4;
	int rc = HL_OK;
	if (cap && (!(argv = calloc(cap, sizeof(*argv))) ||
	            !(lens = calloc(cap, sizeof(*lens))))) {
		free(argv);
		return HL_ENOMEM;
	}
	while (at + 4 <= packed_len) {
		size_t l = (size_t)p[at] | (size_t)p[at + 1] << 8 |
		           (size_t)p[at + 2] << 16 | (size_t)p[at + 3] << 24;
		at += 4;
		if (l > packed_len - at)
			break;
		argv[n] = (const char *)p + at;
		lens[n++] = l;
		at += l;
	}
	if (at != packed_len)
		rc = HL_EINVAL;
	if (rc == HL_OK)
		rc = hl_object_new(&o, client, kind, name, name_len);
	if (rc == HL_OK)
		rc = hl_blocking_queue_poll_from_any_start(&t, o, argv, lens, n,
		                                           wait_ms);
	hl_object_free(o);
	free(argv);
	free(lens);
	return hlua_task_adopt(out, rc, t, data);
}

/* core.task_pair(task) --> name, element a done poll from several queues
 * answered, or nil. */
static int hlua_task_pair(lua_State *L)
{
	hlua_task *k = NULL;
	const hl_value *v = NULL;
	size_t n = 0;
	const char *p;
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&k, SWIGTYPE_p_hlua_task,
	                               0)) ||
	    k == NULL || k->t == NULL)
		return luaL_error(L, "task_pair: a live task expected");
	if (hl_task_value(&v, k->t) != HL_OK ||
	    hl_value_type(v) != HL_VALUE_ARRAY || hl_value_len(v) != 2) {
		lua_pushnil(L);
		return 1;
	}
	p = hl_value_bytes(hl_value_at(v, 0), &n);
	lua_pushlstring(L, p, n);
	p = hl_value_bytes(hl_value_at(v, 1), &n);
	lua_pushlstring(L, p, n);
	return 2;
}
%}
%typemap(in) (const void *packed, size_t packed_len) {
	size_t len_ = 0;
	$1 = (void *)luaL_checklstring(L, $input, &len_);
	$2 = len_;
}
%rename(bq_any_start) hlua_bq_any_start;
hl_rc hlua_bq_any_start(hlua_task **OUT_TASK, hl_client *client, int kind,
                        const void *name, size_t name_len,
                        const void *packed, size_t packed_len,
                        int64_t wait_ms, uint64_t data);
%native(task_pair) int hlua_task_pair(lua_State *L);

%inline %{
/* Wait until fd is readable, at most timeout_ms (-1: no limit): 1 if it is,
 * 0 if the time ran out, -1 on a poll error. For hosts with no event loop
 * library; an interrupted poll (a signal) returns 0. */
static int poll_readable(int fd, int64_t timeout_ms)
{
	struct pollfd p;
	int rc;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	rc = poll(&p, 1, timeout_ms < 0 ? -1
	                 : timeout_ms > 2000000000 ? 2000000000 : (int)timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -1;
	return rc > 0 && (p.revents & POLLIN) ? 1 : 0;
}
static long live_tasks(void) { return atomic_load(&hlua_live_tasks); }
/* Live wrapper counts (for the leak tests). */
static long live_multis(void) { return atomic_load(&hlua_live_multis); }
static long live_syncs(void) { return atomic_load(&hlua_live_syncs); }
static long live_locks(void) { return atomic_load(&hlua_live_locks); }
static long live_clients(void) { return atomic_load(&hlua_live_clients); }
%}

/* ---- hl_client ---------------------------------------------------------- */

%nodefaultctor hl_client;
/* The extension functions are named <struct>_<method>: rename the methods
 * whose C name would collide with the library's own functions. */
%rename(close) hl_client::close_;
%rename(id) hl_client::id_;
%rename(interrupt) hl_client::interrupt_;
%rename(stats) hl_client::stats_;
%rename(next_event) hl_client::next_event_;
%rename(event_fd) hl_client::event_fd_;
%rename(task_fd) hl_client::task_fd_;
typedef struct hl_client {} hl_client;
%extend hl_client {
	~hl_client() {
		hlua_live_clients--;
		hl_client_free($self);
	}
	/* hl_client_close: idempotent; the object stays valid (calls then
	 * return HL_ECLOSED) until __gc frees it. */
	void close_() { hl_client_close($self); }
	const char *id_() { return hl_client_id($self); }
	hl_rc interrupt_() { return hl_client_interrupt($self); }
	/* The counters (also after close). */
	hl_rc stats_(hl_client_stats *OUT_STATS) {
		return hl_client_stats_get(OUT_STATS, $self);
	}
	/* true, the oldest queued event or nil; after close, once every
	 * event was taken: nil, message, "HL_ECLOSED". */
	hl_rc next_event_(hl_event **OUT_EVENT) {
		return hl_client_next_event(OUT_EVENT, $self);
	}
	/* true, the fd readable while events are queued (or closed). */
	hl_rc event_fd_(int *OUT_INTEGER) {
		return hl_client_event_fd(OUT_INTEGER, $self);
	}
	/* The client's task fd (readable while completed tasks wait). */
	hl_rc task_fd_(int64_t *OUT_INT) {
		int fd = -1, rc = hl_client_task_fd(&fd, $self);
		*OUT_INT = fd;
		return rc;
	}
	/* Take the next completed task: its data (the Lua layer's key for
	 * it), 0 when none is waiting. */
	hl_rc next_task(int64_t *OUT_INT) {
		hl_task *t = NULL;
		int rc = hl_client_task_next(&t, $self);
		*OUT_INT = t ? (int64_t)hl_task_data(t) : 0;
		return rc;
	}
}

/* ---- hlua_lock ---------------------------------------------------------- */

%nodefaultctor hlua_lock;
typedef struct hlua_lock {} hlua_lock;
%extend hlua_lock {
	~hlua_lock() {
		hlua_handle_close($self, 1);
		hlua_live_locks--;
		free($self);
	}
	/* Free the library handle now (nothing is released or abandoned: the
	 * Lua layer does that first); idempotent. Calls afterwards return
	 * HL_EINVAL. */
	void close() { hlua_handle_close($self, 0); }
	bool closed() { return $self->lock == NULL; }
	/* The epoch of the last hold taken through this handle (0: none). */
	int64_t epoch() { return (int64_t)$self->epoch; }
	/* true, count, lost, epoch: the owner's hold as the library knows it
	 * (hl_lock_hold_state; no round trip). */
	hl_rc hold_state(int64_t *OUT_COUNT, int *OUT_BOOL, int64_t *OUT_EPOCH) {
		hl_hold_state st;
		int rc;
		memset(&st, 0, sizeof(st));
		st.version = HL_HOLD_STATE_VERSION;
		rc = hl_lock_hold_state(&st, $self->lock);
		*OUT_COUNT = st.count;
		*OUT_BOOL = st.lost;
		*OUT_EPOCH = (int64_t)st.epoch;
		return rc;
	}

	hl_rc try_acquire(int *OUT_BOOL, int64_t wait_ms, int64_t lease_ms) {
		int rc = hl_lock_try_acquire(OUT_BOOL, $self->lock, wait_ms,
		                             lease_ms, NULL);
		if (rc == HL_OK && *OUT_BOOL)
			hlua_took($self);
		return rc;
	}
	hl_rc release(int *OUT_BOOL) {
		return hl_lock_release(OUT_BOOL, $self->lock);
	}
	hl_rc force_unlock(int *OUT_BOOL) {
		return hl_lock_force_unlock(OUT_BOOL, $self->lock);
	}
	hl_rc is_locked(int *OUT_BOOL) { return hl_lock_is_locked(OUT_BOOL, $self->lock); }
	hl_rc is_held(int *OUT_BOOL) { return hl_lock_is_held(OUT_BOOL, $self->lock); }
	hl_rc hold_count(int64_t *OUT_INT) { return hl_lock_hold_count(OUT_INT, $self->lock); }
	hl_rc ttl(int64_t *OUT_INT) { return hl_lock_ttl(OUT_INT, $self->lock); }
	hl_rc is_lost(int *OUT_BOOL) { return hl_lock_is_lost(OUT_BOOL, $self->lock); }
	hl_rc wait_lost(int *OUT_BOOL, int64_t timeout_ms) {
		return hl_lock_wait_lost(OUT_BOOL, $self->lock, timeout_ms, NULL);
	}
	hl_rc abandon() { return hl_lock_abandon($self->lock); }
	hl_rc owner(char *OUT_BUF, size_t OUT_BUF_LEN) {
		return hl_lock_owner(NULL, $self->lock, OUT_BUF, OUT_BUF_LEN);
	}
	/* The kind-specific calls (HL_EINVAL on a lock of another kind; the
	 * Lua layer raises before that). */
	hl_rc token(int64_t *OUT_INT) { return hl_lock_token(OUT_INT, $self->lock); }
	hl_rc last_token(int64_t *OUT_INT) {
		return hl_lock_last_token(OUT_INT, $self->lock);
	}
	hl_rc set_backoff(int64_t initial_ms, int64_t max_ms, int multiplier) {
		return hl_lock_set_backoff($self->lock, initial_ms, max_ms,
		                           multiplier);
	}
	/* The non-blocking forms: a task (data: the Lua layer's key). */
	hl_rc try_acquire_start(hlua_task **OUT_TASK, int64_t wait_ms,
	                        int64_t lease_ms, uint64_t data) {
		return hlua_task_start(OUT_TASK, $self, HLUA_TASK_ACQUIRE,
		                       wait_ms, lease_ms, data);
	}
	hl_rc release_start(hlua_task **OUT_TASK, uint64_t data) {
		return hlua_task_start(OUT_TASK, $self, HLUA_TASK_RELEASE, 0, 0,
		                       data);
	}
	hl_rc wait_lost_start(hlua_task **OUT_TASK, int64_t timeout_ms,
	                      uint64_t data) {
		return hlua_task_start(OUT_TASK, $self, HLUA_TASK_LOST,
		                       timeout_ms, 0, data);
	}
}

/* ---- hlua_task ------------------------------------------------------------
 * A task started through a handle. Freeing it (close, __gc) cancels it if it
 * is still pending: the library then gives back anything it was taking. */

%nodefaultctor hlua_task;
%rename(wait) hlua_task::wait_;
typedef struct hlua_task {} hlua_task;
%extend hlua_task {
	~hlua_task() {
		hl_task_free($self->t);
		hlua_live_tasks--;
		free($self->taken);
		free($self);
	}
	void close() {
		hl_task_free($self->t);
		$self->t = NULL;
	}
	bool closed() { return $self->t == NULL; }
	bool done() { return $self->t != NULL && hl_task_done($self->t); }
	void cancel() { hl_task_cancel($self->t); }
	/* Its own fd, readable once it is done. */
	hl_rc fd(int64_t *OUT_INT) {
		int fd = -1, rc = hl_task_fd(&fd, $self->t);
		*OUT_INT = fd;
		return rc;
	}
	/* true, flag (acquired / released / lost) | nil, message, code (the
	 * operation's own failure, or HL_EINVAL while it is not done). */
	hl_rc result(int *OUT_BOOL) { return hlua_task_take_result($self, OUT_BOOL); }
	/* Block until done (true), timeout_ms ran out (HL_ETIMEDOUT). */
	hl_rc wait_(int64_t timeout_ms) {
		return hl_task_wait($self->t, timeout_ms, NULL);
	}
	int64_t data() { return (int64_t)hl_task_data($self->t); }
	/* A multilock acquire's outputs, once done: whether member i (0-based)
	 * was taken, the validity left in ms (-1: the watchdog). */
	bool multi_taken(size_t i) {
		return $self->taken != NULL && i < $self->mu->n &&
		       $self->taken[i];
	}
	int64_t multi_valid() { return $self->valid; }
}

/* ---- hlua_multi ----------------------------------------------------------
 * An acquire makes each member it took the taker of that member's hold, as
 * hlua_lock's own acquire does. */

%nodefaultctor hlua_multi;
typedef struct hlua_multi {} hlua_multi;
%extend hlua_multi {
	~hlua_multi() {
		hlua_multi_free($self);
		hlua_live_multis--;
	}
	hl_rc try_acquire(int *OUT_BOOL, int64_t *OUT_INT, int64_t wait_ms,
	                  int64_t lease_ms) {
		size_t i;
		int rc;
		for (i = 0; i < $self->n; i++)
			$self->taken[i] = 0;
		rc = hl_multilock_try_acquire_ex(OUT_BOOL, OUT_INT, $self->taken,
		                                 $self->m, wait_ms, lease_ms,
		                                 NULL);
		if (rc == HL_OK && *OUT_BOOL) {
			for (i = 0; i < $self->n; i++)
				if ($self->taken[i])
					hlua_took($self->members[i]);
		}
		return rc;
	}
	hl_rc release() {
		return hl_multilock_release_ex($self->status, $self->freed,
		                               $self->m, NULL);
	}
	/* The non-blocking acquire: a task of the first member's client
	 * (data: the Lua layer's key) with outputs of its own. */
	hl_rc try_acquire_start(hlua_task **OUT_TASK, int64_t wait_ms,
	                        int64_t lease_ms, uint64_t data) {
		hlua_task *k = (hlua_task *)calloc(1, sizeof(*k));
		int rc;
		if (k == NULL ||
		    (k->taken = (int *)calloc($self->n, sizeof(int))) == NULL) {
			free(k);
			return HL_ENOMEM;
		}
		k->valid = -1;
		rc = hl_multilock_try_acquire_ex_start(&k->t, &k->valid,
		                                       k->taken, $self->m,
		                                       wait_ms, lease_ms);
		if (rc != HL_OK) {
			free(k->taken);
			free(k);
			return rc;
		}
		hl_task_set_data(k->t, data);
		k->mu = $self;
		k->what = HLUA_TASK_MULTI;
		hlua_live_tasks++;
		*OUT_TASK = k;
		return HL_OK;
	}
	hl_rc is_lost(int *OUT_BOOL) { return hl_multilock_is_lost(OUT_BOOL, $self->m); }
	/* The outcome of the last call for member i (0-based). */
	bool taken(size_t i) { return i < $self->n && $self->taken[i]; }
	bool freed(size_t i) { return i < $self->n && $self->freed[i]; }
	/* Member i's hold went back in the last release (released, or found
	 * lost). Not when its owner holds the lock in a newer hold, which the
	 * release left alone (HL_ELOST too): the hold it took ended before,
	 * and the guards listed are the newer hold's. */
	bool gave_back(size_t i) {
		if (i >= $self->n)
			return false;
		if ($self->status[i] == HL_ELOST)
			return hlua_epoch($self->members[i]->lock) == 0;
		return $self->status[i] == HL_OK;
	}
	int64_t size() { return (int64_t)$self->n; }
	int64_t quorum() { return (int64_t)hl_multilock_quorum($self->m); }
}

/* ---- synchronizers ---------------------------------------------------------
 * 1:1 with hl_semaphore_*, hl_expsem_* and hl_latch_*; the Lua layer checks
 * arguments, converts seconds and makes the guards. close() frees the
 * library handle at once (idempotent; calls afterwards return HL_EINVAL). */

%nodefaultctor hlua_sem;
%rename(delete) hlua_sem::delete_;
typedef struct hlua_sem {} hlua_sem;
%extend hlua_sem {
	~hlua_sem() {
		hl_semaphore_free($self->s);
		hlua_live_syncs--;
		free($self);
	}
	void close() {
		hl_semaphore_free($self->s);
		$self->s = NULL;
	}
	bool closed() { return $self->s == NULL; }
	hl_rc try_set_permits(int *OUT_BOOL, int64_t permits) {
		return hl_semaphore_try_set_permits(OUT_BOOL, $self->s, permits);
	}
	hl_rc set_permits(int64_t permits) {
		return hl_semaphore_set_permits($self->s, permits);
	}
	hl_rc add_permits(int64_t *OUT_INT, int64_t delta) {
		return hl_semaphore_add_permits(OUT_INT, $self->s, delta);
	}
	hl_rc available(int64_t *OUT_INT) {
		return hl_semaphore_available(OUT_INT, $self->s);
	}
	hl_rc drain(int64_t *OUT_INT) { return hl_semaphore_drain(OUT_INT, $self->s); }
	hl_rc try_acquire(int *OUT_BOOL, int64_t permits, int64_t wait_ms) {
		return hl_semaphore_try_acquire(OUT_BOOL, $self->s, permits,
		                                wait_ms, NULL);
	}
	hl_rc try_acquire_start(hlua_task **OUT_TASK, int64_t permits,
	                        int64_t wait_ms, uint64_t data) {
		hl_task *t = NULL;
		int rc = hl_semaphore_try_acquire_start(&t, $self->s, permits,
		                                        wait_ms);
		return hlua_task_adopt(OUT_TASK, rc, t, data);
	}
	hl_rc release(int64_t permits) {
		return hl_semaphore_release($self->s, permits);
	}
	hl_rc held(int64_t *OUT_INT) { return hl_semaphore_held(OUT_INT, $self->s); }
	hl_rc delete_(int *OUT_BOOL) { return hl_semaphore_delete(OUT_BOOL, $self->s); }
}

%nodefaultctor hlua_xsem;
%rename(delete) hlua_xsem::delete_;
typedef struct hlua_xsem {} hlua_xsem;
%extend hlua_xsem {
	~hlua_xsem() {
		hl_expsem_free($self->s);
		hlua_live_syncs--;
		free($self);
	}
	void close() {
		hl_expsem_free($self->s);
		$self->s = NULL;
	}
	bool closed() { return $self->s == NULL; }
	/* true, acquired, {ids} (the ids mean nothing when not acquired) */
	hl_rc try_acquire(int *OUT_BOOL, char *IDS, size_t N, int64_t wait_ms,
	                  int64_t lease_ms) {
		return hl_expsem_try_acquire(OUT_BOOL, IDS, N, $self->s, wait_ms,
		                             lease_ms, NULL);
	}
	/* true, task, {ids}: the ids are the task's permits if it acquires */
	hl_rc try_acquire_start(hlua_task **OUT_TASK, char *IDS, size_t N,
	                        int64_t wait_ms, int64_t lease_ms,
	                        uint64_t data) {
		hl_task *t = NULL;
		int rc = hl_expsem_try_acquire_start(&t, IDS, N, $self->s,
		                                     wait_ms, lease_ms);
		return hlua_task_adopt(OUT_TASK, rc, t, data);
	}
	hl_rc release(const char *id) { return hl_expsem_release($self->s, id); }
	hl_rc update_lease(const char *id, int64_t lease_ms) {
		return hl_expsem_update_lease($self->s, id, lease_ms);
	}
	hl_rc lease_time(int64_t *OUT_INT, const char *id) {
		return hl_expsem_lease_time(OUT_INT, $self->s, id);
	}
	hl_rc available(int64_t *OUT_INT) { return hl_expsem_available(OUT_INT, $self->s); }
	hl_rc permits(int64_t *OUT_INT) { return hl_expsem_permits(OUT_INT, $self->s); }
	hl_rc acquired(int64_t *OUT_INT) { return hl_expsem_acquired(OUT_INT, $self->s); }
	hl_rc try_set_permits(int *OUT_BOOL, int64_t permits) {
		return hl_expsem_try_set_permits(OUT_BOOL, $self->s, permits);
	}
	hl_rc set_permits(int64_t permits) {
		return hl_expsem_set_permits($self->s, permits);
	}
	hl_rc add_permits(int64_t *OUT_INT, int64_t delta) {
		return hl_expsem_add_permits(OUT_INT, $self->s, delta);
	}
	hl_rc delete_(int *OUT_BOOL) { return hl_expsem_delete(OUT_BOOL, $self->s); }
}

%nodefaultctor hlua_latch;
%rename(delete) hlua_latch::delete_;
%rename(wait) hlua_latch::wait_;
typedef struct hlua_latch {} hlua_latch;
%extend hlua_latch {
	~hlua_latch() {
		hl_latch_free($self->l);
		hlua_live_syncs--;
		free($self);
	}
	void close() {
		hl_latch_free($self->l);
		$self->l = NULL;
	}
	bool closed() { return $self->l == NULL; }
	hl_rc try_set_count(int *OUT_BOOL, int64_t count) {
		return hl_latch_try_set_count(OUT_BOOL, $self->l, count);
	}
	hl_rc count_down(int64_t *OUT_INT) { return hl_latch_count_down(OUT_INT, $self->l); }
	hl_rc count(int64_t *OUT_INT) { return hl_latch_count(OUT_INT, $self->l); }
	hl_rc wait_(int *OUT_BOOL, int64_t timeout_ms) {
		return hl_latch_wait(OUT_BOOL, $self->l, timeout_ms, NULL);
	}
	hl_rc wait_start(hlua_task **OUT_TASK, int64_t timeout_ms, uint64_t data) {
		hl_task *t = NULL;
		int rc = hl_latch_wait_start(&t, $self->l, timeout_ms);
		return hlua_task_adopt(OUT_TASK, rc, t, data);
	}
	hl_rc delete_(int *OUT_BOOL) { return hl_latch_delete(OUT_BOOL, $self->l); }
}

/* ---- the data grid -------------------------------------------------------
 * One native call serves every operation of every grid kind (hilock.lua
 * checks the arguments against the kind's spec first, hilock_grid.lua is
 * generated from it): core.grid_call(client, kind, name, op, ...) makes the
 * object, runs op with the arguments (a string is bytes, an integer an
 * integer, a float a double, nil an optional argument left out) and frees
 * it. -> true, value (nil, integer, number, string or a table of them) |
 * nil, message, code. */
%native(grid_call) int hlua_grid_call(lua_State *L);
%{
static void hlua_push_value(lua_State *L, const hl_value *v)
{
	size_t i, n, len;
	const char *b;
	switch (hl_value_type(v)) {
	case HL_VALUE_INT:
		lua_pushinteger(L, (lua_Integer)hl_value_int(v));
		break;
	case HL_VALUE_DOUBLE:
		lua_pushnumber(L, (lua_Number)hl_value_double(v));
		break;
	case HL_VALUE_BYTES:
		b = hl_value_bytes(v, &len);
		lua_pushlstring(L, b, len);
		break;
	case HL_VALUE_ARRAY:
		n = hl_value_len(v);
		lua_createtable(L, (int)n, 0);
		for (i = 0; i < n; i++) {
			/* nil in a list is false: a Lua array has no holes */
			if (hl_value_type(hl_value_at(v, i)) == HL_VALUE_NIL)
				lua_pushboolean(L, 0);
			else
				hlua_push_value(L, hl_value_at(v, i));
			lua_rawseti(L, -2, (int)(i + 1));
		}
		break;
	default:
		lua_pushnil(L);
	}
}

/* The arguments at stack index first.. as hl_args (in a userdata on the
 * stack): their count, or -1 after raising an error. */
static hl_arg *hlua_grid_args(lua_State *L, int first, int *out_n)
{
	hl_arg *args;
	int i, n = lua_gettop(L) - first + 1;
	if (n < 0)
		n = 0;
	args = (hl_arg *)lua_newuserdata(L, sizeof(hl_arg) * (size_t)(n ? n : 1));
	memset(args, 0, sizeof(hl_arg) * (size_t)(n ? n : 1));
	for (i = 0; i < n; i++) {
		int idx = first + i;
		switch (lua_type(L, idx)) {
		case LUA_TNIL:
			args[i].type = HL_ARG_NONE;
			break;
		case LUA_TBOOLEAN:
			args[i].type = HL_ARG_INT;
			args[i].i = lua_toboolean(L, idx);
			break;
		case LUA_TNUMBER:
			if (lua_isinteger(L, idx)) {
				args[i].type = HL_ARG_INT;
				args[i].i = (int64_t)lua_tointeger(L, idx);
			} else {
				args[i].type = HL_ARG_DOUBLE;
				args[i].d = (double)lua_tonumber(L, idx);
			}
			break;
		case LUA_TSTRING:
			args[i].type = HL_ARG_BYTES;
			args[i].bytes = lua_tolstring(L, idx, &args[i].len);
			break;
		default:
			luaL_error(L, "grid_call: argument %d: %s is not a value",
			           i + 1, luaL_typename(L, idx));
			return NULL;
		}
	}
	*out_n = n;
	return args;
}

static int hlua_grid_call(lua_State *L)
{
	hl_client *c = NULL;
	hl_object *o = NULL;
	hl_value *v = NULL;
	hl_arg *args;
	size_t name_len;
	const char *name;
	int kind, op, n = 0, rc;
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&c, SWIGTYPE_p_hl_client, 0)))
		return luaL_error(L, "grid_call: a client expected");
	kind = (int)luaL_checkinteger(L, 2);
	name = luaL_checklstring(L, 3, &name_len);
	op = (int)luaL_checkinteger(L, 4);
	args = hlua_grid_args(L, 5, &n);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK)
		return hlua_push_failure(L, rc);
	rc = hl_object_call(&v, o, op, args, (size_t)n);
	if (rc != HL_OK) {
		hl_object_free(o);
		return hlua_push_failure(L, rc);
	}
	hl_object_free(o);
	lua_pushboolean(L, 1);
	hlua_push_value(L, v);
	hl_value_free(v);
	return 2;
}

/* A grid object that lives as long as its Lua object: a kind with state
 * (an adder, whose local sum and subscription live in it).
 * core.grid_open(client, kind, name) -> handle | nil, message, code;
 * core.grid_ocall(handle, op, ...) as grid_call; core.grid_close(handle)
 * frees it (the garbage collector does too). */
typedef struct hlua_gridobj {
	hl_object *o;
} hlua_gridobj;

static int hlua_gridobj_gc(lua_State *L)
{
	hlua_gridobj *g = (hlua_gridobj *)luaL_checkudata(L, 1, "hilock.gridobj");
	hl_object_free(g->o);
	g->o = NULL;
	return 0;
}

static int hlua_grid_open(lua_State *L)
{
	hl_client *c = NULL;
	hl_object *o = NULL;
	hlua_gridobj *g;
	size_t name_len;
	const char *name;
	int kind, rc;
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&c, SWIGTYPE_p_hl_client, 0)))
		return luaL_error(L, "grid_open: a client expected");
	kind = (int)luaL_checkinteger(L, 2);
	name = luaL_checklstring(L, 3, &name_len);
	g = (hlua_gridobj *)lua_newuserdata(L, sizeof(*g));
	g->o = NULL;
	if (luaL_newmetatable(L, "hilock.gridobj")) {
		lua_pushcfunction(L, hlua_gridobj_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK)
		return hlua_push_failure(L, rc);
	g->o = o;
	return 1;
}

static int hlua_grid_ocall(lua_State *L)
{
	hlua_gridobj *g = (hlua_gridobj *)luaL_checkudata(L, 1, "hilock.gridobj");
	hl_value *v = NULL;
	hl_arg *args;
	int op, n = 0, rc;
	op = (int)luaL_checkinteger(L, 2);
	args = hlua_grid_args(L, 3, &n);
	if (!g->o) {
		lua_pushnil(L);
		lua_pushstring(L, "the object was closed");
		lua_pushstring(L, hl_status_name(HL_EINVAL));
		return 3;
	}
	if ((rc = hl_object_call(&v, g->o, op, args, (size_t)n)) != HL_OK)
		return hlua_push_failure(L, rc);
	lua_pushboolean(L, 1);
	hlua_push_value(L, v);
	hl_value_free(v);
	return 2;
}

static int hlua_grid_close(lua_State *L)
{
	return hlua_gridobj_gc(L);
}

/* core.grid_common(client, kind, name, what, ms): 0 delete, 1 exists, 2
 * expire, 3 clear expire, 4 ttl -> true, integer | nil, message, code */
static int hlua_grid_common(lua_State *L)
{
	hl_client *c = NULL;
	hl_object *o = NULL;
	size_t name_len;
	const char *name;
	int kind, what, rc, flag = 0;
	int64_t v = 0, ms;
	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&c, SWIGTYPE_p_hl_client, 0)))
		return luaL_error(L, "grid_common: a client expected");
	kind = (int)luaL_checkinteger(L, 2);
	name = luaL_checklstring(L, 3, &name_len);
	what = (int)luaL_checkinteger(L, 4);
	ms = (int64_t)luaL_optinteger(L, 5, 0);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK)
		return hlua_push_failure(L, rc);
	switch (what) {
	case 0: rc = hl_object_delete(&flag, o); v = flag; break;
	case 1: rc = hl_object_exists(&flag, o); v = flag; break;
	case 2: rc = hl_object_expire(&flag, o, ms); v = flag; break;
	case 3: rc = hl_object_clear_expire(&flag, o); v = flag; break;
	default: rc = hl_object_ttl(&v, o); break;
	}
	hl_object_free(o);
	if (rc != HL_OK)
		return hlua_push_failure(L, rc);
	lua_pushboolean(L, 1);
	lua_pushinteger(L, (lua_Integer)v);
	return 2;
}
%}
%native(grid_common) int hlua_grid_common(lua_State *L);
%native(grid_open) int hlua_grid_open(lua_State *L);
%native(grid_ocall) int hlua_grid_ocall(lua_State *L);
%native(grid_close) int hlua_grid_close(lua_State *L);
