package hilock

// The set's and the scored sorted set's iteration (the generated types
// have the plain calls): by cursor pages (SSCAN, ZSCAN), never one reply
// with the whole collection, or for a scored sorted set in rank order by
// ZRANGE pages. The iter.Seq2 forms are in grid_set_iter.go (Go 1.23).

import "context"

// setPageSize is the COUNT hint of the SSCAN and ZSCAN pages, and the size
// of RangeInOrder's pages.
const setPageSize = 1000

// Range calls fn with every member of the set, page by page (SSCAN),
// until fn returns false; memory stays one page whatever the size. As
// Redis's SCAN: a member there for the whole iteration is seen, once.
func (o *Set) Range(ctx context.Context, fn func(member []byte) bool) error {
	return scanAll(ctx, func(cursor []byte) ([]byte, [][]byte, error) {
		return o.Scan(ctx, cursor, setPageSize)
	}, fn)
}

// Range calls fn with every member and its score, page by page (ZSCAN, in
// no particular order), until fn returns false. As Redis's SCAN: a member
// there for the whole iteration is seen even while others come and go.
// RangeInOrder goes by rank instead.
func (o *ScoredSortedSet) Range(ctx context.Context, fn func(ScoredEntry) bool) error {
	return scanAll(ctx, func(cursor []byte) ([]byte, []ScoredEntry, error) {
		return o.Scan(ctx, cursor, setPageSize)
	}, fn)
}

// RangeInOrder calls fn with every member and its score in rank order
// (highest score first if reverse), by ZRANGE pages, until fn returns
// false. A change meanwhile can shift members across pages: one may be
// missed or seen twice (Range has SCAN's guarantee).
func (o *ScoredSortedSet) RangeInOrder(ctx context.Context, reverse bool, fn func(ScoredEntry) bool) error {
	for start := int64(0); ; start += setPageSize {
		var page []ScoredEntry
		var err error
		if reverse {
			page, err = o.EntryRange(ctx, -start-setPageSize, -start-1)
			for i, j := 0, len(page)-1; i < j; i, j = i+1, j-1 {
				page[i], page[j] = page[j], page[i]
			}
		} else {
			page, err = o.EntryRange(ctx, start, start+setPageSize-1)
		}
		if err != nil {
			return err
		}
		for _, e := range page {
			if !fn(e) {
				return nil
			}
		}
		if len(page) < setPageSize {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
