package hilock_test

// A fixed lease that ends while the lock is held is a loss like any other
// (issue 18, item 4): Lost() is closed and Context() cancelled when the
// lease ends, by this machine's clock, before any release; the release then
// reports ErrLost. A release before the end is no loss.

import (
	"context"
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func TestLeaseEndClosesLost(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	start := time.Now()
	ok, err := m.TryLock(context.Background(), 0, 400*time.Millisecond)
	if !ok || err != nil {
		t.Fatalf("TryLock with a lease = %v, %v", ok, err)
	}
	lost := m.Lost()
	if lost == nil || isClosed(lost) {
		t.Fatal("Lost() is nil or closed while the lease runs")
	}
	work, cancel := m.Context(context.Background())
	defer cancel()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost() not closed after the fixed lease ended")
	}
	took := time.Since(start)
	t.Logf("Lost() closed %v after the acquire", took)
	if took < 350*time.Millisecond || took > 2*time.Second {
		t.Fatalf("Lost() closed after %v, want about 400ms", took)
	}
	select {
	case <-work.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Context() not cancelled by the loss")
	}
	if cause := hilock.Cause(work); !errors.Is(cause, hilock.ErrLost) {
		t.Fatalf("Cause = %v, want ErrLost", cause)
	}
	if n := c.Stats().Losses; n != 1 {
		t.Fatalf("Stats().Losses = %d, want 1", n)
	}
	if r.int("PTTL", name) > 50 {
		t.Fatal("told lost while Redis keeps the lease")
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after the lease ended: %v, want ErrLost", err)
	}
}

func TestLeaseReleasedInTimeIsNoLoss(t *testing.T) {
	c := fastClient(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	ok, err := m.TryLock(context.Background(), 0, 400*time.Millisecond)
	if !ok || err != nil {
		t.Fatalf("TryLock with a lease = %v, %v", ok, err)
	}
	lost := m.Lost()
	if err := m.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	time.Sleep(800 * time.Millisecond) // past the lease's end
	if isClosed(lost) {
		t.Fatal("Lost() closed for a hold released before its lease ended")
	}
	if n := c.Stats().Losses; n != 0 {
		t.Fatalf("Stats().Losses = %d, want 0", n)
	}
}
