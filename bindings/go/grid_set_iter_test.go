//go:build go1.23

package hilock_test

import (
	"context"
	"testing"
)

// The range-over-func forms: every member once; a break stops the pages;
// a failed page comes as the error.
func TestGridSetIter(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	s := c.Set(name)
	z := c.ScoredSortedSet(name + ":z")
	for i := 0; i < 700; i++ {
		m := []byte{byte('a' + i%26), byte(i / 26)}
		s.Add(ctx, m)
		z.Add(ctx, float64(i), m)
	}
	n := 0
	for _, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 700 {
		t.Fatalf("All saw %d", n)
	}
	n = 0
	for range s.All(ctx) {
		if n++; n == 5 {
			break
		}
	}
	last := -1.0
	n = 0
	for e, err := range z.InOrder(ctx, false) {
		if err != nil || e.Score <= last {
			t.Fatalf("InOrder at %d: %v %v", n, e, err)
		}
		last = e.Score
		n++
	}
	if n != 700 {
		t.Fatalf("InOrder saw %d", n)
	}
	n = 0
	for _, err := range z.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 700 {
		t.Fatalf("All saw %d", n)
	}
	r.do("SET", name+":str", "x")
	var failed error
	for _, err := range c.Set(name + ":str").All(ctx) {
		failed = err
	}
	if failed == nil {
		t.Fatal("no error from a string key")
	}
}
