//go:build go1.23

package hilock

import (
	"context"
	"iter"
)

// All is the map's entries as an iterator (HSCAN pages, as Range), and a
// function that reports the error that ended it early (nil when it ran to
// the end or the loop stopped it):
//
//	entries, errf := m.All(ctx)
//	for k, v := range entries {
//		...
//	}
//	if err := errf(); err != nil {
//		...
//	}
//
// Each range over the iterator scans the map again; errf reports the
// latest.
func (o *Map) All(ctx context.Context) (iter.Seq2[[]byte, []byte], func() error) {
	var err error
	seq := func(yield func(key, value []byte) bool) {
		err = o.Range(ctx, yield)
	}
	return seq, func() error { return err }
}

// Keys is the map's keys as an iterator, as All.
func (o *Map) Keys(ctx context.Context) (iter.Seq[[]byte], func() error) {
	var err error
	seq := func(yield func(key []byte) bool) {
		err = o.Range(ctx, func(k, _ []byte) bool { return yield(k) })
	}
	return seq, func() error { return err }
}

// Values is the map's values as an iterator, as All.
func (o *Map) Values(ctx context.Context) (iter.Seq[[]byte], func() error) {
	var err error
	seq := func(yield func(value []byte) bool) {
		err = o.Range(ctx, func(_, v []byte) bool { return yield(v) })
	}
	return seq, func() error { return err }
}
