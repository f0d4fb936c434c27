package hilock

// The blocking queue's waits (the generated type has the plain calls):
// Take and PollTimeout are libhilock tasks in the queue's line (one
// blocking command per queue and client, whatever the number of waiting
// goroutines), so a waiting goroutine pins no OS thread and holds no
// connection. Nothing is lost: docs/grid-blocking-queue.md.

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <hilock.h>
#include "hlgo.h"

// Start a take or a poll with a timeout (op, wait_ms: its timeout, -1 for
// none) of a kind's object as a task whose data is set before the call
// returns.
static void hlgo_bq_start(hlgo_result *r, hl_task **out, hl_client *c,
		int kind, const void *name, size_t name_len, int op,
		int64_t wait_ms, uint64_t data) {
	hl_object *o = NULL;
	hl_arg a;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	memset(&a, 0, sizeof a);
	a.type = HL_ARG_INT;
	a.i = wait_ms;
	rc = hl_object_call_start(out, o, op, wait_ms < 0 ? NULL : &a,
	                          wait_ms < 0 ? 0 : 1);
	if (rc == HL_OK)
		hl_task_set_data(*out, data);
	else
		hlgo_fail(r, rc);
	hl_object_free(o);
}

// Start a bounded queue's put (wait_ms -1) or offer with a timeout as a
// task whose data is set before the call returns.
static void hlgo_bbq_start(hlgo_result *r, hl_task **out, hl_client *c,
		const void *name, size_t name_len, const void *value,
		size_t value_len, int64_t wait_ms, uint64_t data) {
	hl_object *o = NULL;
	hl_arg a[2];
	int rc;
	*out = NULL;
	hlgo_reset(r);
	if ((rc = hl_bounded_blocking_queue_new(&o, c, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return;
	}
	memset(a, 0, sizeof a);
	a[0].type = HL_ARG_BYTES;
	a[0].bytes = value_len ? value : "";
	a[0].len = value_len;
	a[1].type = HL_ARG_INT;
	a[1].i = wait_ms;
	rc = hl_object_call_start(out, o, wait_ms < 0
	                          ? HL_OP_BOUNDED_BLOCKING_QUEUE_PUT
	                          : HL_OP_BOUNDED_BLOCKING_QUEUE_OFFER_TIMEOUT,
	                          a, wait_ms < 0 ? 1 : 2);
	if (rc == HL_OK)
		hl_task_set_data(*out, data);
	else
		hlgo_fail(r, rc);
	hl_object_free(o);
}

// The bytes a done task answered: its length, -1 for nil.
static int64_t hlgo_bq_value(hl_task *t, const char **p) {
	const hl_value *v = NULL;
	size_t n = 0;
	*p = NULL;
	if (hl_task_value(&v, t) != HL_OK || hl_value_type(v) != HL_VALUE_BYTES)
		return -1;
	*p = hl_value_bytes(v, &n);
	return (int64_t)n;
}

// Start a poll from several queues (all of kind; others: the other names
// one after another, lens their lengths) as a task whose data is set
// before the call returns.
static void hlgo_bq_any_start(hlgo_result *r, hl_task **out, hl_client *c,
		int kind, const void *name, size_t name_len, const char *others,
		const size_t *lens, size_t n, int64_t wait_ms, uint64_t data) {
	hl_object *o = NULL;
	const char **argv = NULL;
	size_t i, at = 0;
	int rc;
	*out = NULL;
	hlgo_reset(r);
	if (n && !(argv = calloc(n, sizeof(*argv)))) {
		hlgo_fail(r, HL_ENOMEM);
		return;
	}
	for (i = 0; i < n; i++) {
		argv[i] = others + at;
		at += lens[i];
	}
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) == HL_OK)
		rc = hl_blocking_queue_poll_from_any_start(out, o, argv, lens, n,
		                                           wait_ms);
	if (rc == HL_OK)
		hl_task_set_data(*out, data);
	else
		hlgo_fail(r, rc);
	hl_object_free(o);
	free(argv);
}

// A take's fast path: one look without waiting (hl_blocking_queue_try_take)
// of a kind's object: 2 and the element in *v (the caller frees it), 1 when
// the queue was empty, 0 when the client's task takers of the queue wait in
// line already (no look), -1 with r set when it failed.
static int hlgo_bq_try(hlgo_result *r, hl_value **v, hl_client *c, int kind,
		const void *name, size_t name_len, int op) {
	hl_object *o = NULL;
	int rc, last = op == HL_OP_BLOCKING_DEQUE_TAKE_LAST ||
	               op == HL_OP_BLOCKING_DEQUE_POLL_LAST_TIMEOUT;
	*v = NULL;
	hlgo_reset(r);
	if ((rc = hl_object_new(&o, c, kind, name, name_len)) != HL_OK) {
		hlgo_fail(r, rc);
		return -1;
	}
	rc = hl_blocking_queue_try_take(v, o, last);
	hl_object_free(o);
	if (rc != HL_OK) {
		hlgo_fail(r, rc);
		return -1;
	}
	if (!*v)
		return 0;
	if (hl_value_type(*v) != HL_VALUE_BYTES) {
		hl_value_free(*v);
		*v = NULL;
		return 1;
	}
	return 2;
}

// The [name, element] a done poll from several queues answered: the
// element's length (*p), the name's (*np, *nn); -1 for nil.
static int64_t hlgo_bq_any_value(hl_task *t, const char **np, int64_t *nn,
		const char **p) {
	const hl_value *v = NULL;
	size_t n = 0;
	*p = *np = NULL;
	*nn = 0;
	if (hl_task_value(&v, t) != HL_OK || hl_value_type(v) != HL_VALUE_ARRAY ||
	    hl_value_len(v) != 2)
		return -1;
	*np = hl_value_bytes(hl_value_at(v, 0), &n);
	*nn = (int64_t)n;
	*p = hl_value_bytes(hl_value_at(v, 1), &n);
	return (int64_t)n;
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

// Take takes the head, waiting as long as ctx allows for one (moved into
// an in-flight list, acknowledged once the element arrived here; one
// look on this goroutine's thread first, then a task that waits). A
// cancel of ctx loses nothing: an element taken just before it is
// returned (with a nil error), else the wait ends with ctx.Err() and the
// queue keeps its elements.
func (o *BlockingQueue) Take(ctx context.Context) ([]byte, error) {
	return takeOf(ctx, &o.object, 0x1009, "take")
}

func takeOf(ctx context.Context, o *object, op int, opName string) ([]byte, error) {
	v, ok, err := waitOn(ctx, o, op, opName, -1)
	if err == nil && !ok {
		err = context.DeadlineExceeded
	}
	return v, err
}

// PollTimeout takes the head, waiting up to timeout (and ctx) for one: nil
// with a nil error when none came in time. A cancel loses nothing (as
// Take).
func (o *BlockingQueue) PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	return pollOf(ctx, &o.object, 0x100a, "poll_timeout", timeout)
}

func pollOf(ctx context.Context, o *object, op int, opName string, timeout time.Duration) ([]byte, error) {
	if timeout < 0 {
		return nil, invalid(o.what+" "+opName, "timeout must be 0 or more")
	}
	v, _, err := waitOn(ctx, o, op, opName, durationMs(timeout))
	return v, err
}

// waitOn runs a take or a poll with a timeout (waitMs; -1 for a take) as a
// task and waits for it, or for ctx.
func waitOn(ctx context.Context, o *object, op int, opName string, waitMs int64) ([]byte, bool, error) {
	defer runtime.KeepAlive(o)
	what := o.what + " " + opName
	if err := o.check(what); err != nil {
		return nil, false, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c := o.c
	p, err := c.enter()
	if err != nil {
		return nil, false, err
	}
	name := o.name
	// The fast path: one look on this goroutine's thread when a fast slot
	// is free and none of this client's goroutines waits in the queue's
	// line: an element there is taken (moved into an in-flight list and
	// acknowledged, as any take) without the task's hops (pump thread,
	// executor, channel). An empty queue, or an outage met by the look,
	// goes on as a task below, which waits (and rides the outage out).
	if c.tryFast() {
		var cr cResult
		var v *C.hl_value
		start := time.Now()
		n := C.hlgo_bq_try(&cr, &v, p, C.int(o.kind), unsafe.Pointer(&name[0]),
			C.size_t(len(name)), C.int(op))
		c.fastDone()
		switch {
		case n == 2:
			var ln C.size_t
			bp := C.hl_value_bytes(v, &ln)
			out := C.GoBytes(unsafe.Pointer(bp), C.int(ln))
			C.hl_value_free(v)
			c.mu.RUnlock()
			return out, true, nil
		case n == 1 && waitMs == 0:
			c.mu.RUnlock()
			return nil, false, nil
		case n < 0:
			r := syncResult(what, &cr)
			if r.status != statusIO && r.status != statusConnect &&
				r.status != statusTimedOut && r.status != statusInDoubt {
				c.mu.RUnlock()
				return nil, false, r.err
			}
		}
		if waitMs > 0 {
			if waitMs -= durationMs(time.Since(start)); waitMs <= 0 {
				waitMs = 0 // the look used the whole wait: one more
			}
		}
	}
	t, ch, h, r0 := c.startTask(p, func(data uint64) (*cTask, opResult) {
		var cr cResult
		var t *C.hl_task
		C.hlgo_bq_start(&cr, &t, p, C.int(o.kind), unsafe.Pointer(&name[0]), C.size_t(len(name)),
			C.int(op), C.int64_t(waitMs), C.uint64_t(data))
		return t, syncResult(what, &cr)
	})
	c.mu.RUnlock()
	if r0.err != nil {
		return nil, false, r0.err
	}
	var d taskDone
	select {
	case d = <-ch:
	case <-ctx.Done():
		cancelTask(t)
		d = <-ch
	}
	var out []byte
	got := false
	if d.status == statusOK {
		var bp *C.char
		if n := C.hlgo_bq_value(t, &bp); n >= 0 {
			out = C.GoBytes(unsafe.Pointer(bp), C.int(n))
			got = true
		}
	}
	atomic.AddInt64(&c.tasks.pending, -1)
	freeTask(t)
	h.Delete()
	if got || d.status == statusOK {
		return out, got, nil
	}
	r := d.result(what)
	if r.status == statusInterrupted && ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	return nil, false, r.err
}

// Take takes the head, waiting as long as ctx allows (BlockingQueue.Take).
func (o *BlockingDeque) Take(ctx context.Context) ([]byte, error) {
	return takeOf(ctx, &o.object, 0x1109, "take")
}

// TakeFirst takes the head, waiting as long as ctx allows.
func (o *BlockingDeque) TakeFirst(ctx context.Context) ([]byte, error) {
	return takeOf(ctx, &o.object, 0x1117, "take_first")
}

// TakeLast takes the tail, waiting as long as ctx allows; what it held,
// if given back, goes back to the tail.
func (o *BlockingDeque) TakeLast(ctx context.Context) ([]byte, error) {
	return takeOf(ctx, &o.object, 0x1118, "take_last")
}

// PollTimeout takes the head, waiting up to timeout: nil when none came.
func (o *BlockingDeque) PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	return pollOf(ctx, &o.object, 0x110a, "poll_timeout", timeout)
}

// PollFirstTimeout takes the head, waiting up to timeout: nil when none
// came.
func (o *BlockingDeque) PollFirstTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	return pollOf(ctx, &o.object, 0x1119, "poll_first_timeout", timeout)
}

// PollLastTimeout takes the tail, waiting up to timeout: nil when none
// came.
func (o *BlockingDeque) PollLastTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	return pollOf(ctx, &o.object, 0x111a, "poll_last_timeout", timeout)
}

// Take takes the head, waiting as long as ctx allows; its unit of
// capacity is given back (and published) when it arrives.
func (o *BoundedBlockingQueue) Take(ctx context.Context) ([]byte, error) {
	return takeOf(ctx, &o.object, 0x1205, "take")
}

// PollTimeout takes the head, waiting up to timeout: nil when none came.
func (o *BoundedBlockingQueue) PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error) {
	return pollOf(ctx, &o.object, 0x1206, "poll_timeout", timeout)
}

// Put adds value at the tail, waiting as long as ctx allows for room
// (woken by the capacity channel). The waiting goroutine pins no thread.
func (o *BoundedBlockingQueue) Put(ctx context.Context, value []byte) error {
	ok, err := o.offerWait(ctx, "put", value, -1)
	if err == nil && !ok {
		err = context.DeadlineExceeded
	}
	return err
}

// OfferTimeout adds value at the tail, waiting up to timeout for room:
// true if added, false when there was none in time.
func (o *BoundedBlockingQueue) OfferTimeout(ctx context.Context, value []byte,
	timeout time.Duration) (bool, error) {
	if timeout < 0 {
		return false, invalid(o.what+" offer_timeout", "timeout must be 0 or more")
	}
	return o.offerWait(ctx, "offer_timeout", value, durationMs(timeout))
}

func (o *BoundedBlockingQueue) offerWait(ctx context.Context, opName string, value []byte,
	waitMs int64) (bool, error) {
	defer runtime.KeepAlive(o)
	what := o.what + " " + opName
	if err := o.check(what); err != nil {
		return false, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	c := o.c
	p, err := c.enter()
	if err != nil {
		return false, err
	}
	name := o.name
	// a copy with one byte more, so that &buf[0] exists for an empty value
	buf := append(append(make([]byte, 0, len(value)+1), value...), 0)
	t, ch, h, r0 := c.startTask(p, func(data uint64) (*cTask, opResult) {
		var cr cResult
		var t *C.hl_task
		C.hlgo_bbq_start(&cr, &t, p, unsafe.Pointer(&name[0]), C.size_t(len(name)),
			unsafe.Pointer(&buf[0]), C.size_t(len(value)), C.int64_t(waitMs), C.uint64_t(data))
		return t, syncResult(what, &cr)
	})
	c.mu.RUnlock()
	if r0.err != nil {
		return false, r0.err
	}
	d := c.await(t, ch, h, ctx.Done())
	r := d.result(what)
	if r.err != nil {
		if r.status == statusInterrupted && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, r.err
	}
	return r.flag, nil
}

// PollFromAny takes the head of whichever of this queue and otherNames has
// an element first (Redisson's pollFromAny; the queues may be in different
// cluster slots), waiting up to timeout (0: one look at each; negative: as
// long as ctx allows). It answers the queue's name and the element, or ""
// and nil with a nil error when none came in time. Nothing is lost: a
// queue that had an element too keeps it, and a cancel of ctx leaves every
// element queued (an element taken just before it is returned, with a nil
// error). Every queue's waiting goroutines share its one blocking command.
func (o *BlockingQueue) PollFromAny(ctx context.Context, timeout time.Duration,
	otherNames ...string) (string, []byte, error) {
	return pollFromAny(ctx, &o.object, timeout, otherNames)
}

// PollFromAny takes the head of whichever queue has one first
// (BlockingQueue.PollFromAny).
func (o *BlockingDeque) PollFromAny(ctx context.Context, timeout time.Duration,
	otherNames ...string) (string, []byte, error) {
	return pollFromAny(ctx, &o.object, timeout, otherNames)
}

// PollFromAny takes the head of whichever queue has one first
// (BlockingQueue.PollFromAny); the capacity is given back as by a take.
func (o *BoundedBlockingQueue) PollFromAny(ctx context.Context, timeout time.Duration,
	otherNames ...string) (string, []byte, error) {
	return pollFromAny(ctx, &o.object, timeout, otherNames)
}

func pollFromAny(ctx context.Context, o *object, timeout time.Duration, others []string) (string, []byte, error) {
	defer runtime.KeepAlive(o)
	what := o.what + " poll_from_any"
	if err := o.check(what); err != nil {
		return "", nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	waitMs := int64(-1)
	if timeout >= 0 {
		waitMs = durationMs(timeout)
	}
	var buf []byte // the names one after another (and a last byte)
	lens := make([]C.size_t, len(others)+1)
	for i, n := range others {
		buf = append(buf, n...)
		lens[i] = C.size_t(len(n))
	}
	buf = append(buf, 0)
	c := o.c
	p, err := c.enter()
	if err != nil {
		return "", nil, err
	}
	name := o.name
	t, ch, h, r0 := c.startTask(p, func(data uint64) (*cTask, opResult) {
		var cr cResult
		var t *C.hl_task
		C.hlgo_bq_any_start(&cr, &t, p, C.int(o.kind), unsafe.Pointer(&name[0]), C.size_t(len(name)),
			(*C.char)(unsafe.Pointer(&buf[0])), &lens[0], C.size_t(len(others)),
			C.int64_t(waitMs), C.uint64_t(data))
		return t, syncResult(what, &cr)
	})
	c.mu.RUnlock()
	if r0.err != nil {
		return "", nil, r0.err
	}
	var d taskDone
	select {
	case d = <-ch:
	case <-ctx.Done():
		cancelTask(t)
		d = <-ch
	}
	var out []byte
	var from string
	got := false
	if d.status == statusOK {
		var bp, np *C.char
		var nn C.int64_t
		if n := C.hlgo_bq_any_value(t, &np, &nn, &bp); n >= 0 {
			out = C.GoBytes(unsafe.Pointer(bp), C.int(n))
			from = string(C.GoBytes(unsafe.Pointer(np), C.int(nn)))
			got = true
		}
	}
	atomic.AddInt64(&c.tasks.pending, -1)
	freeTask(t)
	h.Delete()
	if got || d.status == statusOK {
		return from, out, nil
	}
	r := d.result(what)
	if r.status == statusInterrupted && ctx.Err() != nil {
		return "", nil, ctx.Err()
	}
	return "", nil, r.err
}
