package hilock

import (
	"context"
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

// Range calls fn with every waiting value in insertion order (read, not
// taken), in pages of 1000, until fn returns false, a page fails or ctx
// ends.
func (o *DelayedQueue) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}
