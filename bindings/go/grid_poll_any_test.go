package hilock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// PollFromAny wakes on an offer to the other queue and says which; nil
// after its timeout; a cancel of ctx leaves the next element queued; of
// two elements arriving at once one is answered, the other stays queued.
func TestGridBlockingQueuePollFromAny(t *testing.T) {
	c := connect(t)
	p := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	q := c.BlockingQueue("go:pa:1")
	p2 := p.BlockingQueue("go:pa:2")
	type res struct {
		name string
		v    []byte
		err  error
	}
	done := make(chan res, 1)
	go func() {
		n, v, err := q.PollFromAny(ctx, 20*time.Second, "go:pa:2")
		done <- res{n, v, err}
	}()
	bqWait(t, "two blocked takes", func() bool { return bqBlocked(t, r) >= 2 })
	if _, err := p2.Offer(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if g := <-done; g.err != nil || g.name != "go:pa:2" || string(g.v) != "x" {
		t.Fatalf("poll_from_any: %q %q %v", g.name, g.v, g.err)
	}
	t0 := time.Now()
	if n, v, err := q.PollFromAny(ctx, 300*time.Millisecond, "go:pa:2"); err != nil || n != "" || v != nil {
		t.Fatalf("timed out: %q %q %v", n, v, err)
	}
	if time.Since(t0) < 280*time.Millisecond {
		t.Fatalf("nil after %v", time.Since(t0))
	}
	// a cancel loses nothing
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		n, v, err := q.PollFromAny(cctx, -1, "go:pa:2")
		done <- res{n, v, err}
	}()
	bqWait(t, "two blocked takes", func() bool { return bqBlocked(t, r) >= 2 })
	cancel()
	if g := <-done; !errors.Is(g.err, context.Canceled) {
		t.Fatalf("cancelled: %q %q %v", g.name, g.v, g.err)
	}
	bqWait(t, "no blocked take", func() bool { return bqBlocked(t, r) == 0 })
	if _, err := p2.Offer(ctx, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if l := lrange(r, "go:pa:2"); len(l) != 1 || l[0] != "kept" {
		t.Fatalf("queue after the cancel: %q", l)
	}
	r.do("DEL", "go:pa:2")
	// two at once
	go func() {
		n, v, err := q.PollFromAny(ctx, 20*time.Second, "go:pa:2")
		done <- res{n, v, err}
	}()
	bqWait(t, "two blocked takes", func() bool { return bqBlocked(t, r) >= 2 })
	r.do("EVAL", "redis.call('RPUSH', KEYS[1], 'a'); redis.call('RPUSH', KEYS[2], 'b')", "2", "go:pa:1", "go:pa:2")
	g := <-done
	if g.err != nil || !(g.name == "go:pa:1" && string(g.v) == "a" || g.name == "go:pa:2" && string(g.v) == "b") {
		t.Fatalf("two at once: %q %q %v", g.name, g.v, g.err)
	}
	bqWait(t, "nothing in flight", func() bool {
		return bqBlocked(t, r) == 0 && len(r.do("KEYS", "hilock_inflight:*").([]interface{})) == 0
	})
	left := map[string]string{"go:pa:1": "go:pa:2", "go:pa:2": "go:pa:1"}[g.name]
	if l := lrange(r, left); len(l) != 1 {
		t.Fatalf("%s after: %q", left, l)
	}
	if l := lrange(r, g.name); len(l) != 0 {
		t.Fatalf("%s after: %q", g.name, l)
	}
	r.do("DEL", left)
	if _, _, err := q.PollFromAny(ctx, time.Second, fmt.Sprint("go:pa:", 3)); err != nil {
		t.Fatal(err)
	}
}
