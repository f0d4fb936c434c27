//go:build !go1.20

package hilock

import (
	"context"
	"sync"
)

// Go 1.19 has no context.WithCancelCause: a cancel context that records its
// cause, found by Cause through a private Value key (so contexts derived
// from it carry it too, as with context.Cause).

type causeKey struct{}

type causeCtx struct {
	context.Context // a context.WithCancel of the parent: Done, Err, Deadline
	mu              sync.Mutex
	cause           error
}

func (c *causeCtx) Value(key interface{}) interface{} {
	if key == (causeKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func withCancelCause(parent context.Context) (context.Context, func(error)) {
	inner, cancel := context.WithCancel(parent)
	c := &causeCtx{Context: inner}
	return c, func(err error) {
		if err == nil {
			err = context.Canceled
		}
		c.mu.Lock()
		if c.cause == nil && inner.Err() == nil {
			c.cause = err
		}
		c.mu.Unlock()
		cancel()
	}
}

// Cause returns why ctx was cancelled: ErrLost for a Mutex.Context (or a
// context derived from one) cancelled because the hold was lost, the cause
// given to a cancel func otherwise, ctx.Err() for other contexts, and nil
// while ctx is not done. With Go 1.20 or newer it is context.Cause; with Go
// 1.19, which has no context.Cause, it reads the cause the binding records.
func Cause(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	c, _ := ctx.Value(causeKey{}).(*causeCtx)
	if c == nil || c.Context.Err() == nil || c.Context.Err() != err {
		return err // done by itself (a deadline of a derived context...)
	}
	c.mu.Lock()
	cause := c.cause
	c.mu.Unlock()
	if cause != nil {
		return cause
	}
	return Cause(c.Context) // cancelled by its parent: the parent's cause
}
