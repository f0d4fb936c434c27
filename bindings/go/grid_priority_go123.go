//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// Values is Range as an iterator (Go 1.23): the values lowest first,
// read, not taken; a failed page (or ctx ending) is the last pair, with a
// nil value.
func (o *PriorityQueue) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}

// Values is Range as an iterator (Go 1.23), as PriorityQueue.Values.
func (o *PriorityDeque) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}

// Values is Range as an iterator (Go 1.23), as PriorityQueue.Values.
func (o *PriorityBlockingQueue) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}

// Values is Range as an iterator (Go 1.23), as PriorityQueue.Values.
func (o *PriorityBlockingDeque) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}
