//go:build go1.20

package hilock

import "context"

// withCancelCause is context.WithCancelCause (Go 1.20 and newer; see
// cause_go119.go for older Go).
func withCancelCause(parent context.Context) (context.Context, func(error)) {
	ctx, cancel := context.WithCancelCause(parent)
	return ctx, func(err error) { cancel(err) }
}

// Cause returns why ctx was cancelled: ErrLost for a Mutex.Context (or a
// context derived from one) cancelled because the hold was lost, the cause
// given to a cancel func otherwise, ctx.Err() for other contexts, and nil
// while ctx is not done. With Go 1.20 or newer it is context.Cause; with Go
// 1.19, which has no context.Cause, it reads the cause the binding records.
func Cause(ctx context.Context) error { return context.Cause(ctx) }
