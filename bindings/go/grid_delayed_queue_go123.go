//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// Values is Range as an iterator (Go 1.23): the waiting values in
// insertion order, read, not taken; a failed page is the last pair, with a
// nil value.
func (o *DelayedQueue) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}
