package hilock

// The map's idiom (the generated type has Redisson's calls): writes of
// many entries in one round trip, and iteration by HSCAN pages as a
// callback (Range, Go 1.19) or, with Go 1.23, as iter.Seq2 (grid_map_iter.go).

import "context"

// mapPage is the HSCAN COUNT of an iteration: pages of about this many
// entries.
const mapPage = 1000

// PutAll sets many entries in one round trip (HMSET): keys and values
// alternating (an odd count is refused; none: no round trip). It is sent
// again after a lost reply (writing twice leaves the same).
func (o *Map) PutAll(ctx context.Context, pairs ...[]byte) error {
	_, err := o.call(ctx, 0x0910, "put_all", argList(pairs)...)
	return err
}

// PutMap sets the entries of entries in one round trip, as PutAll.
func (o *Map) PutMap(ctx context.Context, entries map[string][]byte) error {
	pairs := make([][]byte, 0, 2*len(entries))
	for k, v := range entries {
		pairs = append(pairs, []byte(k), v)
	}
	return o.PutAll(ctx, pairs...)
}

// Range calls fn with every entry, page by page (HSCAN), until fn returns
// false; the error of a page that failed, or ctx's. Memory stays one page
// whatever the size. As with Redis's SCAN, an entry present for the whole
// iteration is seen (once, unless the map grows meanwhile); others may or
// may not be. fn may change the map.
func (o *Map) Range(ctx context.Context, fn func(key, value []byte) bool) error {
	return o.RangeMatch(ctx, nil, fn)
}

// RangeMatch is Range over the keys that match pattern (Redis's glob, as
// HSCAN's MATCH; nil: every key).
func (o *Map) RangeMatch(ctx context.Context, pattern []byte, fn func(key, value []byte) bool) error {
	return scanAll(ctx, func(cursor []byte) ([]byte, []Entry, error) {
		return o.Scan(ctx, cursor, mapPage, pattern)
	}, func(e Entry) bool { return fn(e.Key, e.Value) })
}
