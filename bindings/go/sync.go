package hilock

// What the synchronizers (Semaphore, ExpirableSemaphore, CountDownLatch)
// share: their waits go through the task machinery of tasks.go as a Mutex
// does, so a waiting goroutine pins no OS thread, and their other calls (a
// round trip with no task form) take one of the client's fast slots, so a
// crowd of goroutines calling them at once does not start a thread each.

import (
	"context"
	"strconv"
	"time"
)

// call runs f (one cgo call: a release, a count, a count-down...) with p
// valid, in one of the client's fast slots: at most fastSlots goroutines
// of a client are in such calls at once, the others wait for a slot on a
// channel, pinning no thread.
func (c *Client) call(f func(p *cClient) opResult) opResult {
	c.fast <- struct{}{}
	defer c.fastDone()
	p, err := c.enter()
	if err != nil {
		return opResult{err: err}
	}
	defer c.mu.RUnlock()
	return f(p)
}

// syncWait runs a synchronizer's wait as Mutex.acquire runs a lock's: one
// attempt that does not wait, on this goroutine's thread, when one of the
// client's fast slots is free (it answers "not now" without a round trip
// when this client's waiters queue for the same name), then the wait itself
// as a task, on which this goroutine blocks through a channel. waitMs: -1
// forever, 0 one attempt; ctx's deadline bounds it too, and ctx being done
// cancels the task (which gives back what it took, if anything). It returns
// true when the wait succeeded, false when it ran out (with
// context.DeadlineExceeded when ctx's deadline ran out), and ctx.Err() when
// ctx was done first.
func (c *Client) syncWait(ctx context.Context, op string, waitMs int64,
	attempt func(p *cClient) opResult,
	start func(p *cClient, waitMs int64, data uint64) (*cTask, opResult)) (bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	waitMs, byDeadline, err := ctxWait(ctx, waitMs)
	if err != nil {
		return false, err
	}
	p, err := c.enter()
	if err != nil {
		return false, err
	}
	var r opResult
	tried := false
	began := time.Now()
	if c.tryFast() {
		r = attempt(p)
		c.fastDone()
		tried = true
	}
	if tried && waitMs > 0 {
		waitMs -= durationMs(time.Since(began))
		if waitMs <= 0 {
			waitMs = 0 // the attempt used the whole wait
		}
	}
	// An outage met by the attempt is ridden out by the task's wait.
	outage := r.status == statusIO || r.status == statusConnect
	if !tried || (waitMs != 0 && !r.flag && (r.err == nil || outage)) {
		t, ch, h, r0 := c.startTask(p, func(data uint64) (*cTask, opResult) {
			return start(p, waitMs, data)
		})
		c.mu.RUnlock()
		if r0.err != nil {
			return false, r0.err
		}
		d := c.awaitWait(ctx, byDeadline, t, ch, h)
		r = d.result(op)
	} else {
		c.mu.RUnlock()
	}
	if r.err != nil {
		if r.status == statusInterrupted && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, outageErr(r, byDeadline)
	}
	if !r.flag {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if byDeadline {
			return false, context.DeadlineExceeded
		}
		return false, nil
	}
	return true, nil
}

// waitMsOf converts a wait: negative is as long as ctx allows (-1).
func waitMsOf(wait time.Duration) int64 {
	if wait < 0 {
		return -1
	}
	return durationMs(wait)
}

// checkName reports a name libhilock would refuse before it is sent.
func checkName(op, what, name string) error {
	switch {
	case len(name) == 0:
		return invalid(op, "empty "+what+" name")
	case len(name) > maxNameLen:
		return invalid(op, what+" name longer than 65536 bytes")
	}
	return nil
}

func notAcquired(op string) error {
	return &Error{Op: op, Code: statusTimedOut, Name: statusName(statusTimedOut),
		Message: "not acquired"}
}

// ReleaseError is what [Semaphore.Release] passes to [Logger] when giving
// permits back fails for a reason other than misuse.
type ReleaseError struct {
	Name    string // the semaphore's name
	Permits int64  // how many permits were to be given back
	Err     error  // the release's error (an *Error, ErrClosed...)
}

func (e *ReleaseError) Error() string {
	return "hilock: Release of " + strconv.FormatInt(e.Permits, 10) + " permits of " +
		quoteName([]byte(e.Name)) + ": " + e.Err.Error()
}

// Unwrap returns the release's error.
func (e *ReleaseError) Unwrap() error { return e.Err }
