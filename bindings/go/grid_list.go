package hilock

import (
	"context"
	"strconv"
)

// listPage is how many elements one LRANGE of an iteration reads.
const listPage = 1000

// rangePages calls fn with every element from the head and its index, in
// pages of LRANGE read by read (through scanAll: the cursor is the next
// index), until fn returns false, a page fails or ctx ends.
func rangePages(ctx context.Context, read func(ctx context.Context, start, end int64) ([][]byte, error),
	fn func(i int64, v []byte) bool) error {
	var i int64
	return scanAll(ctx, func(cursor []byte) ([]byte, [][]byte, error) {
		at, err := strconv.ParseInt(string(cursor), 10, 64)
		if err != nil {
			return nil, nil, err
		}
		page, err := read(ctx, at, at+listPage-1)
		if err != nil {
			return nil, nil, err
		}
		next := []byte("0")
		if len(page) == listPage {
			next = strconv.AppendInt(nil, at+listPage, 10)
		}
		return next, page, nil
	}, func(v []byte) bool {
		ok := fn(i, v)
		i++
		return ok
	})
}

// Range calls fn with every element of the list and its index, from the
// head, reading pages of 1000 (LRANGE), until fn returns false, a page
// fails or ctx ends. It sees the list as it is while it goes (as
// Redisson's iterator): an element added before the page being read is
// not seen, one removed shifts the rest.
func (o *List) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}

// Range calls fn with every element of the queue from the head (read, not
// taken), in pages of 1000 (LRANGE), until fn returns false, a page fails
// or ctx ends.
func (o *Queue) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}

// Range calls fn with every element of the deque from the head (read, not
// taken), in pages of 1000 (LRANGE), until fn returns false, a page fails
// or ctx ends.
func (o *Deque) Range(ctx context.Context, fn func(i int64, v []byte) bool) error {
	return rangePages(ctx, o.ReadRange, fn)
}
