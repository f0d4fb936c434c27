//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// All returns the values in order, lowest first, for a range loop (a page
// of 1000 per round trip): each value with a nil error; a failure (or ctx
// ending) ends the loop with one (nil, err). Iteration goes by index, as
// Range's.
func (o *SortedSet) All(ctx context.Context) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		stopped := false
		err := o.Range(ctx, func(v []byte) bool {
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
