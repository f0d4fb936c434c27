package hilock

// The priority queue's and deque's idiom (the generated types have the
// plain calls: Add, Offer, Poll, Peek, Contains, Remove, Size, ReadRange;
// the deque's PeekFirst, PeekLast, PollFirst, PollLast): iteration as a
// callback (Range; Values is iter.Seq2 in grid_priority_go123.go). The
// order, the lock and the refused comparators: docs/grid-priority-queue.md.

import "context"

// Range calls fn with every value of the queue and its index, lowest
// first (read, not taken), in pages of 1000 (LRANGE), until fn returns
// false, a page fails or ctx ends. It goes by index, as Redisson's
// iterator: values added or taken meanwhile before the current page shift
// it (one may be seen twice or skipped).
func (o *PriorityQueue) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}

// Range calls fn with every value of the deque and its index, lowest
// first (read, not taken), in pages of 1000 (LRANGE), as
// PriorityQueue.Range.
func (o *PriorityDeque) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}
