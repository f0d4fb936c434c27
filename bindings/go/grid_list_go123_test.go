//go:build go1.23

package hilock_test

import (
	"context"
	"fmt"
	"testing"
)

// Values: the list as an iterator (Go 1.23), over more than one page.
func TestGridListValues(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	l := c.List(uniqueName(t))
	defer l.Delete(ctx)
	vals := make([][]byte, 1200)
	for i := range vals {
		vals[i] = []byte(fmt.Sprint(i))
	}
	if _, err := l.AddAll(ctx, vals...); err != nil {
		t.Fatal(err)
	}
	n := 0
	for v, err := range l.Values(ctx) {
		if err != nil || string(v) != fmt.Sprint(n) {
			t.Fatalf("%d: %q %v", n, v, err)
		}
		n++
	}
	if n != 1200 {
		t.Fatalf("%d values", n)
	}
	q := c.Queue(uniqueName(t))
	q.Offer(ctx, []byte("x"))
	defer q.Delete(ctx)
	for v, err := range q.Values(ctx) {
		if string(v) != "x" || err != nil {
			t.Fatalf("%q %v", v, err)
		}
		break
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range l.Values(cctx) {
		if err == nil {
			t.Fatal("no error after cancel")
		}
	}
}
