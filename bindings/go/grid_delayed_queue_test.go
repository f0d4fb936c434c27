package hilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func waitLen(ctx context.Context, t *testing.T, q *hilock.Queue, n int64, within time.Duration) int64 {
	t.Helper()
	end := time.Now().Add(within)
	for {
		got, err := q.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n || time.Now().After(end) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An element is not in the destination before its delay and is there
// promptly after; Redisson's member bytes; the waiting part's operations;
// a consumer that only opened the delayed queue moves what others offered.
func TestGridDelayedQueue(t *testing.T) {
	ctx := context.Background()
	a, b := connect(t), connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	d, err := a.DelayedQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := b.Queue(name)
	start := time.Now()
	if err := d.Offer(ctx, []byte("x\x00"), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	m, _ := r.str("LINDEX", "redisson_delay_queue:{"+name+"}", "0")
	if len(m) != 19 || m[0] != 8 || m[9] != 2 || m[17:] != "x\x00" {
		t.Fatalf("member %q", m)
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("moved at once: %d", n)
	}
	if n := waitLen(ctx, t, q, 1, 10*time.Second); n != 1 {
		t.Fatalf("not moved: %d", n)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("moved after %v, before its delay", el)
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "x\x00" {
		t.Fatalf("Poll %q %v", v, err)
	}

	// the waiting part
	for _, v := range []string{"a", "b", "c"} {
		if err := d.Offer(ctx, []byte(v), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	if err := d.Range(ctx, func(_ int64, v []byte) bool { seen = append(seen, string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != "a" || seen[2] != "c" {
		t.Fatalf("Range %q", seen)
	}
	if v, err := d.Poll(ctx); err != nil || string(v) != "a" {
		t.Fatalf("Poll %q %v", v, err)
	}
	if ok, err := d.Remove(ctx, []byte("c")); !ok || err != nil {
		t.Fatalf("Remove %v %v", ok, err)
	}
	if n, err := d.Size(ctx); n != 1 || err != nil {
		t.Fatalf("Size %d %v", n, err)
	}
	if err := d.Clear(ctx); err != nil {
		t.Fatal(err)
	}

	// bad input
	if err := d.Offer(ctx, []byte("x"), -time.Millisecond); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("negative delay: %v", err)
	}
	if err := d.Offer(ctx, []byte("x"), 1<<41*time.Millisecond); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("huge delay: %v", err)
	}

	// a producer gone, a consumer alone catches up
	for i := 0; i < 3; i++ {
		if err := d.Offer(ctx, []byte{byte('0' + i)}, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	time.Sleep(400 * time.Millisecond)
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("moved with no mover: %d", n)
	}
	c, err := b.DelayedQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := waitLen(ctx, t, q, 3, 5*time.Second); n != 3 {
		t.Fatalf("not caught up: %d", n)
	}
}
