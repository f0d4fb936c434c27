//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// All is the set's members for a range-over-func loop (SSCAN pages, as
// Range): each member with a nil error; a failed page ends the loop with
// its error (nil member).
//
//	for m, err := range s.All(ctx) { if err != nil { ... } }
func (o *Set) All(ctx context.Context) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		stopped := false
		err := o.Range(ctx, func(m []byte) bool {
			stopped = !yield(m, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// All is the members with their scores for a range-over-func loop (ZSCAN
// pages, as Range); a failed page ends the loop with its error.
func (o *ScoredSortedSet) All(ctx context.Context) iter.Seq2[ScoredEntry, error] {
	return func(yield func(ScoredEntry, error) bool) {
		stopped := false
		err := o.Range(ctx, func(e ScoredEntry) bool {
			stopped = !yield(e, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(ScoredEntry{}, err)
		}
	}
}

// InOrder is the members with their scores in rank order (as
// RangeInOrder) for a range-over-func loop.
func (o *ScoredSortedSet) InOrder(ctx context.Context, reverse bool) iter.Seq2[ScoredEntry, error] {
	return func(yield func(ScoredEntry, error) bool) {
		stopped := false
		err := o.RangeInOrder(ctx, reverse, func(e ScoredEntry) bool {
			stopped = !yield(e, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(ScoredEntry{}, err)
		}
	}
}
