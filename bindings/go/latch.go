package hilock

import (
	"context"
	"runtime"
)

// A CountDownLatch is a distributed count-down latch (Redisson's
// RCountDownLatch, the same key, channel and messages, so Java services
// share it): a count set once, counted down by any process; when it
// reaches zero the latch opens and every waiter, in every process, wakes
// at once. Wait is sync.WaitGroup's Wait across processes, with a ctx.
//
// A latch that opened (or was deleted) can be set again with TrySetCount,
// and is then closed for new waiters. A CountDownLatch is cheap (it does
// not touch Redis) and safe for concurrent use. In a cluster, its name may
// not contain '}' (its channel wraps the name in braces).
type CountDownLatch struct {
	c    *Client
	name []byte
	err  error // a bad name, reported by every method
}

// CountDownLatch returns the count-down latch called name (1 to 65536
// bytes, any byte values). It does not touch Redis: a latch that was never
// set is open. A bad name or a closed client is reported by its methods.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{c: c, name: []byte(name), err: checkName("latch", "latch", name)}
}

// Name is the latch's name (the Redis key of its count).
func (l *CountDownLatch) Name() string { return string(l.name) }

func (l *CountDownLatch) check() error {
	if l.c == nil {
		return invalid("latch", "a CountDownLatch must come from Client.CountDownLatch")
	}
	return l.err
}

// TrySetCount sets the count to n (1 to 2^40) if none is set (the latch is
// open), and reports whether it did.
func (l *CountDownLatch) TrySetCount(n int64) (bool, error) {
	r := l.op(latchTrySet, "try set count", n)
	return r.flag, r.err
}

// CountDown counts down by one and returns the count left. At zero the
// latch opens: its key is deleted and every waiter wakes. Counting down an
// open latch changes nothing (and returns 0). An error matching
// [ErrInDoubt] means the count-down was sent and never confirmed: it may
// or may not have counted (counting down again could open the latch a
// count early).
func (l *CountDownLatch) CountDown() (int64, error) {
	r := l.op(latchCountDown, "count down", 0)
	return r.value, r.err
}

// Count is the count now (0: open, or never set).
func (l *CountDownLatch) Count() (int64, error) {
	r := l.op(latchCount, "count", 0)
	return r.value, r.err
}

// Wait waits until the latch is open (its count is zero, or it was never
// set) or ctx is done; then it returns ctx.Err(). It is woken by the
// latch's "opened" message, never by polling, and the waiting goroutine
// pins no OS thread.
func (l *CountDownLatch) Wait(ctx context.Context) error {
	defer runtime.KeepAlive(l)
	if err := l.check(); err != nil {
		return err
	}
	open, err := l.c.syncWait(ctx, "wait", -1,
		func(p *cClient) opResult { return callLatch(p, latchOpen, "wait", l.name, 0) },
		func(p *cClient, waitMs int64, data uint64) (*cTask, opResult) {
			return startLatchTask(p, l.name, waitMs, data)
		})
	if err == nil && !open {
		err = &Error{Op: "wait", Code: statusTimedOut, Name: statusName(statusTimedOut),
			Message: "the latch did not open"}
	}
	return err
}

// Delete deletes the latch and reports whether it existed. Its waiters hear
// the "1" the deletion publishes and keep waiting, as Redisson's do: only a
// count set again and counted down to zero opens it for them. A Wait that
// starts after the deletion finds no count and returns at once.
func (l *CountDownLatch) Delete() (bool, error) {
	r := l.op(latchDelete, "delete", 0)
	return r.flag, r.err
}

func (l *CountDownLatch) op(op latchOp, opName string, n int64) opResult {
	defer runtime.KeepAlive(l)
	if err := l.check(); err != nil {
		return opResult{err: err}
	}
	return l.c.call(func(p *cClient) opResult { return callLatch(p, op, opName, l.name, n) })
}
