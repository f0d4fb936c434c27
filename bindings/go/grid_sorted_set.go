package hilock

// The sorted set's idiom (the generated type has the plain calls): its
// pages by index, and iteration in order as a callback (Range; All is
// iter.Seq in grid_sorted_set_go123.go). The order, the lock and the
// refused comparators: docs/grid-sorted-set.md.

import "context"

// sortedSetPage is the values per round trip of Range and All.
const sortedSetPage = 1000

// Scan returns one page of count values in order from cursor ("0" to
// start; the cursor is the next index): the next cursor ("0" after the last
// page) and the page.
func (o *SortedSet) Scan(ctx context.Context, cursor []byte, count int64) (next []byte, page [][]byte, err error) {
	v, err := o.call(ctx, 0x0c09, "scan", argBytes(cursor), argInt(count))
	if err != nil {
		return nil, nil, err
	}
	next, items := v.page()
	return next, items.list(), nil
}

// Range calls fn with every value in order, lowest first (a page of 1000
// per round trip), until fn returns false, an error or ctx ends. It goes by
// index, as Redisson's iterator: values added or removed meanwhile before
// the current page shift it (one may be seen twice or skipped).
func (o *SortedSet) Range(ctx context.Context, fn func(value []byte) bool) error {
	return scanAll(ctx, func(cursor []byte) ([]byte, [][]byte, error) {
		return o.Scan(ctx, cursor, sortedSetPage)
	}, fn)
}
