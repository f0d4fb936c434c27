package hilock

// The priority blocking queue's and deque's waits (Take, PollTimeout,
// TakeLast, PollLastTimeout...): a libhilock wait task (as a Mutex's
// acquire), so a waiting goroutine pins no OS thread and ctx ends the
// wait; the task's value is what it took. The design:
// docs/grid-priority-queue.md.

/*
#include <stdint.h>
#include <string.h>
#include <hilock.h>
#include "hlgo.h"

// Start a wait of an object of kind as a task whose data is set before the
// call returns: take_op when wait_ms < 0 (as long as it takes), else
// timed_op (a timed poll at the same end) with wait_ms.
static void hlgo_pbq_start(hlgo_result *r, hl_task **out, hl_client *c, int kind,
		const void *name, size_t name_len, int take_op, int timed_op, int64_t wait_ms,
		uint64_t data) {
	hl_object *o = NULL;
	hl_arg a;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_INT;
	a.i = wait_ms;
	if (wait_ms < 0)
		rc = hl_object_call_start(out, o, take_op, NULL, 0);
	else
		rc = hl_object_call_start(out, o, timed_op, &a, 1);
	if (rc == HL_OK)
		hl_task_set_data(*out, data);
	else
		hlgo_fail(r, rc);
	hl_object_free(o);
}

// A done task's value: its bytes (valid while the task lives) and *n, or
// *n = -1 for none.
static const char *hlgo_task_bytes(hl_task *t, int64_t *n) {
	const hl_value *v = NULL;
	size_t len = 0;
	const char *p;
	*n = -1;
	if (hl_task_value(&v, t) != HL_OK || hl_value_type(v) != HL_VALUE_BYTES)
		return NULL;
	p = hl_value_bytes(v, &len);
	*n = (int64_t)len;
	return p;
}
*/
import "C"

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// priorityWait waits at one end of the priority blocking queue or deque
// within waitMs (-1: as long as ctx allows; then takeOp, else timedOp, the
// timed poll at that end): the value, or nil when none came in time.
func (o *object) priorityWait(ctx context.Context, opName string, takeOp, timedOp int, waitMs int64) ([]byte, error) {
	defer runtime.KeepAlive(o)
	op := o.what + " " + opName
	if err := o.check(op); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	waitMs, byDeadline, err := ctxWait(ctx, waitMs)
	if err != nil {
		return nil, err
	}
	c := o.c
	p, err := c.enter()
	if err != nil {
		return nil, err
	}
	name := o.name
	t, ch, h, r0 := c.startTask(p, func(data uint64) (*cTask, opResult) {
		var cr cResult
		var t *C.hl_task
		C.hlgo_pbq_start(&cr, &t, p, C.int(o.kind), unsafe.Pointer(&name[0]), C.size_t(len(name)),
			C.int(takeOp), C.int(timedOp), C.int64_t(waitMs), C.uint64_t(data))
		return t, syncResult(op, &cr)
	})
	c.mu.RUnlock()
	if r0.err != nil {
		return nil, r0.err
	}
	// as awaitWait, but the value is read before the task goes
	var d taskDone
	select {
	case d = <-ch:
	case <-ctx.Done():
		stopped := false
		if ctx.Err() == context.DeadlineExceeded {
			timer := time.NewTimer(deadlineGrace)
			select {
			case d = <-ch:
				timer.Stop()
				stopped = true
			case <-timer.C:
			}
		}
		if !stopped {
			cancelTask(t) // a value it took goes back
			d = <-ch
		}
	}
	var n C.int64_t
	var v []byte
	if b := C.hlgo_task_bytes(t, &n); n >= 0 {
		v = C.GoBytes(unsafe.Pointer(b), C.int(n))
	}
	atomic.AddInt64(&c.tasks.pending, -1)
	freeTask(t)
	h.Delete()
	r := d.result(op)
	if r.err != nil {
		if r.status == statusInterrupted && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, outageErr(r, byDeadline)
	}
	if v != nil {
		return v, nil // taken (even if ctx ended meanwhile)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if byDeadline {
		return nil, context.DeadlineExceeded
	}
	return nil, nil
}

// Take takes the head (the lowest value), waiting as long as ctx allows
// (no OS thread waits): it tries again after a back-off of 10 ms growing
// to 250 ms, and at once when a hilock process adds. ctx ending first
// gives ctx.Err() (a value taken meanwhile goes back in the queue). A take
// whose reply is lost answers what it took.
func (o *PriorityBlockingQueue) Take(ctx context.Context) ([]byte, error) {
	return o.priorityWait(ctx, "take", 0x1609, 0x160a, -1)
}

// PollTimeout takes the head, waiting at most timeout (1 ms or more) and
// as long as ctx allows: the value, or nil when none came within timeout
// (context.DeadlineExceeded when ctx's deadline came first).
func (o *PriorityBlockingQueue) PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if timeout < time.Millisecond {
		return nil, invalid(o.what+" poll_timeout", "timeout must be 1 ms or more")
	}
	return o.priorityWait(ctx, "poll_timeout", 0x1609, 0x160a, durationMs(timeout))
}

// Range calls fn with every value of the queue and its index, lowest
// first (read, not taken), in pages of 1000 (LRANGE), as
// PriorityQueue.Range.
func (o *PriorityBlockingQueue) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}

// Take takes the head (the lowest value), waiting as long as ctx allows,
// as PriorityBlockingQueue.Take.
func (o *PriorityBlockingDeque) Take(ctx context.Context) ([]byte, error) {
	return o.priorityWait(ctx, "take", 0x1709, 0x170a, -1)
}

// PollTimeout takes the head, waiting at most timeout (1 ms or more), as
// PriorityBlockingQueue.PollTimeout.
func (o *PriorityBlockingDeque) PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if timeout < time.Millisecond {
		return nil, invalid(o.what+" poll_timeout", "timeout must be 1 ms or more")
	}
	return o.priorityWait(ctx, "poll_timeout", 0x1709, 0x170a, durationMs(timeout))
}

// TakeFirst is Take.
func (o *PriorityBlockingDeque) TakeFirst(ctx context.Context) ([]byte, error) {
	return o.priorityWait(ctx, "take_first", 0x170f, 0x1711, -1)
}

// TakeLast takes the tail (the highest value), waiting as long as ctx
// allows (no OS thread waits), as Take at the other end: ctx ending first
// gives ctx.Err() (a value taken meanwhile goes back in the deque); a
// take whose reply is lost answers what it took.
func (o *PriorityBlockingDeque) TakeLast(ctx context.Context) ([]byte, error) {
	return o.priorityWait(ctx, "take_last", 0x1710, 0x1712, -1)
}

// PollFirstTimeout is PollTimeout.
func (o *PriorityBlockingDeque) PollFirstTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if timeout < time.Millisecond {
		return nil, invalid(o.what+" poll_first_timeout", "timeout must be 1 ms or more")
	}
	return o.priorityWait(ctx, "poll_first_timeout", 0x170f, 0x1711, durationMs(timeout))
}

// PollLastTimeout takes the tail, waiting at most timeout (1 ms or more)
// and as long as ctx allows: the value, or nil when none came within
// timeout (context.DeadlineExceeded when ctx's deadline came first).
func (o *PriorityBlockingDeque) PollLastTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if timeout < time.Millisecond {
		return nil, invalid(o.what+" poll_last_timeout", "timeout must be 1 ms or more")
	}
	return o.priorityWait(ctx, "poll_last_timeout", 0x1710, 0x1712, durationMs(timeout))
}

// Range calls fn with every value of the deque and its index, lowest
// first (read, not taken), as PriorityQueue.Range.
func (o *PriorityBlockingDeque) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}
