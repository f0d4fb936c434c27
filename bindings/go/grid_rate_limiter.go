package hilock

// The rate limiter's idiom (the generated type has the plain calls): modes
// as constants, and the waits, which go through the task machinery of
// tasks.go as a Mutex's do, so a waiting goroutine pins no OS thread. The
// algorithm and the lost-reply rule: docs/grid-rate-limiter.md.

/*
#include <stdint.h>
#include <hilock.h>
#include "hlgo.h"

// One attempt, no wait: r->flag = taken, r->value = ms until a permit may
// be free (0 if taken).
static void hlgo_rl_try(hlgo_result *r, hl_client *c, const void *name,
		size_t name_len, int64_t permits) {
	hl_object *o = NULL;
	int rc, ok = 0;
	int64_t retry = 0;
	hlgo_reset(r);
	if ((rc = hl_rate_limiter_new(&o, c, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	rc = hl_rate_limiter_try_acquire_ex(&ok, &retry, o, permits, 0, NULL);
	if (rc != HL_OK)
		hlgo_fail(r, rc);
	r->flag = ok;
	r->value = retry;
	hl_object_free(o);
}

// Start a wait as a task whose data is set before the call returns.
static void hlgo_rl_start(hlgo_result *r, hl_task **out, hl_client *c,
		const void *name, size_t name_len, int64_t permits,
		int64_t wait_ms, uint64_t data) {
	hl_object *o = NULL;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	if ((rc = hl_rate_limiter_new(&o, c, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	rc = hl_rate_limiter_try_acquire_start(out, o, permits, wait_ms);
	if (rc == HL_OK)
		hl_task_set_data(*out, data);
	else
		hlgo_fail(r, rc);
	hl_object_free(o);
}
*/
import "C"

import (
	"context"
	"runtime"
	"time"
	"unsafe"
)

// RateMode says whom a rate limiter's rate counts: every client together
// or each client apart (Redisson's RateType).
type RateMode int64

const (
	// RateOverall: at most rate permits per interval for all clients.
	RateOverall RateMode = 0
	// RatePerClient: at most rate permits per interval for each client
	// (each hilock Client, as each RedissonClient).
	RatePerClient RateMode = 1
)

// TrySetRate sets the rate if none is set: true if it was. keepAlive (0:
// none; else at least interval) lets the keys expire after that long
// unused. A reply lost after it may have run is ErrInDoubt.
func (o *RateLimiter) TrySetRate(ctx context.Context, mode RateMode, rate int64,
	interval, keepAlive time.Duration) (bool, error) {
	v, err := o.call(ctx, 0x0800, "try_set_rate", argInt(int64(mode)), argInt(rate),
		argDuration(interval), argOptDuration(keepAlive))
	return v.Bool(), err
}

// SetRate sets the rate, replacing any, and forgets this client's grants of
// that mode (Redisson's setRate). keepAlive as in TrySetRate.
func (o *RateLimiter) SetRate(ctx context.Context, mode RateMode, rate int64,
	interval, keepAlive time.Duration) error {
	_, err := o.call(ctx, 0x0801, "set_rate", argInt(int64(mode)), argInt(rate),
		argDuration(interval), argOptDuration(keepAlive))
	return err
}

// TryAcquireEx makes one attempt to take permits, without waiting: taken,
// or how long until a permit may be free (go-redis redis_rate's
// RetryAfter; 0 when taken).
func (o *RateLimiter) TryAcquireEx(ctx context.Context, permits int64) (bool, time.Duration, error) {
	defer runtime.KeepAlive(o)
	op := o.what + " try_acquire"
	if err := o.check(op); err != nil {
		return false, 0, err
	}
	if ctx != nil && ctx.Err() != nil {
		return false, 0, ctx.Err()
	}
	r := o.c.call(func(p *cClient) opResult {
		var cr cResult
		C.hlgo_rl_try(&cr, p, unsafe.Pointer(&o.name[0]), C.size_t(len(o.name)), C.int64_t(permits))
		return syncResult(op, &cr)
	})
	if r.err != nil {
		return false, 0, r.err
	}
	return r.flag, time.Duration(r.value) * time.Millisecond, nil
}

// TryAcquire takes permits, waiting at most wait (0: one attempt; negative:
// as long as ctx allows) and ctx's deadline, sleeping between attempts the
// delay Redis answers; a wait too short for the next free permit ends at
// once. True if taken; false when the wait ran out (with
// context.DeadlineExceeded when ctx's deadline did); ctx.Err() when ctx was
// done first. The waiting goroutine pins no OS thread. A lost reply never
// takes permits twice.
func (o *RateLimiter) TryAcquire(ctx context.Context, permits int64, wait time.Duration) (bool, error) {
	defer runtime.KeepAlive(o)
	op := o.what + " try_acquire"
	if err := o.check(op); err != nil {
		return false, err
	}
	name := o.name
	return o.c.syncWait(ctx, op, waitMsOf(wait),
		func(p *cClient) opResult {
			var cr cResult
			C.hlgo_rl_try(&cr, p, unsafe.Pointer(&name[0]), C.size_t(len(name)), C.int64_t(permits))
			return syncResult(op, &cr)
		},
		func(p *cClient, waitMs int64, data uint64) (*cTask, opResult) {
			var cr cResult
			var t *C.hl_task
			C.hlgo_rl_start(&cr, &t, p, unsafe.Pointer(&name[0]), C.size_t(len(name)),
				C.int64_t(permits), C.int64_t(waitMs), C.uint64_t(data))
			return t, syncResult(op, &cr)
		})
}

// Acquire takes permits, waiting as long as ctx allows (no OS thread
// waits).
func (o *RateLimiter) Acquire(ctx context.Context, permits int64) error {
	ok, err := o.TryAcquire(ctx, permits, -1)
	if err == nil && !ok {
		err = notAcquired(o.what + " acquire")
	}
	return err
}
