package hilock

import (
	"context"
	"errors"
	"time"
)

// Offer adds value to reach the queue (the destination, read it with
// Client.Queue of the same name) after delay (0 or more, whole
// milliseconds, rounded up). A resend after a lost reply adds nothing
// twice. While a DelayedQueue of the name is open in a client, that client
// moves due elements (docs/grid-delayed-queue.md).
func (o *DelayedQueue) Offer(ctx context.Context, value []byte, delay time.Duration) error {
	ms := int64(delay / time.Millisecond) // a negative one is refused
	if delay > 0 && delay%time.Millisecond != 0 {
		ms++
	}
	_, err := o.call(ctx, 0x1300, "offer", argBytes(value), argInt(ms))
	return err
}

// Range calls fn with each waiting value in insertion order (read in
// pages, not taken) until fn answers false.
func (o *DelayedQueue) Range(ctx context.Context, fn func(value []byte) bool) error {
	if fn == nil {
		return errors.New("hilock: Range: fn is nil")
	}
	var at int64
	for {
		page, err := o.ReadRange(ctx, at, at+999)
		if err != nil {
			return err
		}
		for _, v := range page {
			if !fn(v) {
				return nil
			}
		}
		if len(page) < 1000 {
			return nil
		}
		at += 1000
	}
}
