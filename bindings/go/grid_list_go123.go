//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// rangeSeq is Range as an iterator of values and errors: each element
// with a nil error; a failed page ends it with (nil, err).
func rangeSeq(ctx context.Context, rng func(ctx context.Context, fn func(i int64, v []byte) bool) error) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		stopped := false
		err := rng(ctx, func(_ int64, v []byte) bool {
			if !yield(v, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// Values is Range as an iterator (Go 1.23):
//
//	for v, err := range l.Values(ctx) {
//		if err != nil { ... }
//	}
//
// A failed page (or ctx ending) is the last pair, with a nil value.
func (o *List) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}

// Values is Range as an iterator (Go 1.23): the elements from the head,
// read, not taken; a failed page is the last pair, with a nil value.
func (o *Queue) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}

// Values is Range as an iterator (Go 1.23): the elements from the head,
// read, not taken; a failed page is the last pair, with a nil value.
func (o *Deque) Values(ctx context.Context) iter.Seq2[[]byte, error] {
	return rangeSeq(ctx, o.Range)
}
