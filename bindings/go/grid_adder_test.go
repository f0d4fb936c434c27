package hilock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// Two clients add locally; a sum from either counts both (one answer per
// client, even with two adders of the name in one); reset zeroes them;
// Close stops an adder taking part.
func TestGridAdder(t *testing.T) {
	ctx := context.Background()
	a, b := connect(t), connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	a1, err := a.LongAdder(name)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := a.LongAdder(name)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := b.LongAdder(name)
	if err != nil {
		t.Fatal(err)
	}
	// one subscription per client, confirmed once the adder exists
	if v := r.do("PUBSUB", "NUMSUB", "{"+name+"}:adder-topic").([]interface{}); v[1].(int64) != 2 {
		t.Fatalf("NUMSUB %v", v)
	}
	if err := a1.Add(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := a2.Add(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := b1.Increment(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := b1.Decrement(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*hilock.LongAdder{a1, b1} {
		if s, err := o.Sum(ctx, 0); s != 9 || err != nil {
			t.Fatalf("Sum: %d %v", s, err)
		}
	}
	if err := b1.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if s, err := a2.Sum(ctx, 5*time.Second); s != 0 || err != nil {
		t.Fatalf("Sum after Reset: %d %v", s, err)
	}
	if err := a1.Add(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := b1.Add(ctx, 4); err != nil {
		t.Fatal(err)
	}
	b1.Close()
	if err := b1.Add(ctx, 1); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("Add after Close: %v", err)
	}
	if s, err := a1.Sum(ctx, 0); s != 3 || err != nil {
		t.Fatalf("Sum without b: %d %v", s, err)
	}
	if keys := r.do("KEYS", "{"+name+"}:*"); len(keys.([]interface{})) != 0 {
		t.Fatalf("keys left: %v", keys)
	}

	d1, err := a.DoubleAdder(name + ":d")
	if err != nil {
		t.Fatal(err)
	}
	d2, err := b.DoubleAdder(name + ":d")
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	defer d2.Close()
	if err := d1.Add(ctx, 1.5); err != nil {
		t.Fatal(err)
	}
	if err := d2.Add(ctx, 0.25); err != nil {
		t.Fatal(err)
	}
	if s, err := d2.Sum(ctx, 0); s != 1.75 || err != nil {
		t.Fatalf("double Sum: %v %v", s, err)
	}
	if err := d1.Add(ctx, math.NaN()); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("NaN: %v", err)
	}
	// ctx bounds a sum: a receiver that never answers
	mute := newRedis(t)
	mute.do("SUBSCRIBE", "{"+name+":d}:adder-topic")
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := d1.Sum(tctx, 0); err == nil {
		t.Fatal("a sum with a mute receiver succeeded")
	}
	if el := time.Since(t0); el > 3*time.Second {
		t.Fatalf("the sum took %v", el)
	}
}

func BenchmarkGridAdderAdd(b *testing.B) {
	c := connect(b)
	o, err := c.LongAdder(uniqueName(b))
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := o.Add(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}
