package hilock_test

// The meanings of docs/consistency.md, as Go spells them: each test
// asserts one row of the table, so that the code and the table cannot
// drift apart.

import (
	"context"
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// "No lease": a lock taken with hilock.Watchdog (or the deprecated 0) is
// renewed by the watchdog; a permit taken with hilock.NoLease has none;
// a permit's lease 0 and other negative leases are refused.
func TestConsistencyNoLease(t *testing.T) {
	r := newRedis(t)
	c := fastClient(t) // 1 s watchdog
	ctx := context.Background()
	for _, lease := range []time.Duration{hilock.Watchdog, 0} {
		name := uniqueName(t)
		m := c.Mutex(name)
		if ok, err := m.TryLock(ctx, 0, lease); !ok || err != nil {
			t.Fatalf("TryLock(lease %v) = %v, %v", lease, ok, err)
		}
		// renewed: the key outlives its 1 s watchdog lease
		time.Sleep(1500 * time.Millisecond)
		if pttl := r.int("PTTL", name); pttl <= 0 || pttl > 1000 {
			t.Fatalf("lease %v: PTTL %d after 1.5 s; want renewed within the 1 s watchdog", lease, pttl)
		}
		if err := m.Release(); err != nil {
			t.Fatal(err)
		}
	}
	m := c.Mutex(uniqueName(t))
	if _, err := m.TryLock(ctx, 0, -2*time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("TryLock(lease -2s) = %v; want ErrInvalid", err)
	}

	x := c.ExpirableSemaphore(uniqueName(t))
	if err := x.SetPermits(1); err != nil {
		t.Fatal(err)
	}
	if id, err := x.TryAcquire(ctx, 0, 0); id != "" || !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("TryAcquire(lease 0) = %q, %v; want ErrInvalid", id, err)
	}
	if n, _ := x.AvailablePermits(); n != 1 {
		t.Fatalf("a refused acquire took a permit: %d left", n)
	}
	id, err := x.TryAcquire(ctx, 0, hilock.NoLease)
	if id == "" || err != nil {
		t.Fatalf("TryAcquire(NoLease) = %q, %v", id, err)
	}
	if lt, err := x.LeaseTime(id); lt != -1 || err != nil {
		t.Fatalf("LeaseTime of a permit without a lease = %v, %v; want -1", lt, err)
	}
	if err := x.UpdateLease(id, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("UpdateLease(0) = %v; want ErrInvalid", err)
	}
	if err := x.Release(id); err != nil {
		t.Fatal(err)
	}
}

// The wait: 0 is one attempt, Forever as long as ctx allows; a lock held
// by someone else is a plain false, not an error.
func TestConsistencyWait(t *testing.T) {
	c := connect(t)
	other := connect(t)
	name := uniqueName(t)
	ctx := context.Background()
	if ok, err := other.Mutex(name).TryLock(ctx, 0, hilock.Watchdog); !ok || err != nil {
		t.Fatalf("holder: %v %v", ok, err)
	}
	m := c.Mutex(name)
	t0 := time.Now()
	if ok, err := m.TryLock(ctx, 0, hilock.Watchdog); ok || err != nil {
		t.Fatalf("TryLock(wait 0) of a held lock = %v, %v; want false, nil", ok, err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("one attempt took %v", d)
	}
	if ok, err := m.TryLock(ctx, 300*time.Millisecond, hilock.Watchdog); ok || err != nil {
		t.Fatalf("TryLock(300ms) of a held lock = %v, %v; want false, nil", ok, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if ok, err := m.TryLock(dctx, hilock.Forever, hilock.Watchdog); ok ||
		!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, hilock.ErrConnect) {
		t.Fatalf("TryLock(Forever) past ctx's deadline = %v, %v; want DeadlineExceeded", ok, err)
	}
}

// The TTL of a free lock is (0, false); of a lock without expiry
// (NoExpiry, true); of a held one its time left.
func TestConsistencyTTL(t *testing.T) {
	r := newRedis(t)
	c := connect(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	if ttl, ok, err := m.TTL(); ttl != 0 || ok || err != nil {
		t.Fatalf("TTL of a free lock = %v, %v, %v; want 0, false", ttl, ok, err)
	}
	if ok, err := m.TryLock(context.Background(), 0, 5*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ttl, ok, err := m.TTL(); !ok || err != nil || ttl <= 0 || ttl > 5*time.Second {
		t.Fatalf("TTL of a held lock = %v, %v, %v", ttl, ok, err)
	}
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	r.do("HSET", name, "someone:1", "1")
	defer r.do("DEL", name)
	if ttl, ok, err := m.TTL(); ttl != hilock.NoExpiry || !ok || err != nil {
		t.Fatalf("TTL without expiry = %v, %v, %v; want NoExpiry, true", ttl, ok, err)
	}
}

// A hold lost before its scope ended is an error at the scope's end:
// Mutex.Do returns one matching ErrLost.
func TestConsistencyLostAtScopeEnd(t *testing.T) {
	c := fastClient(t)
	other := connect(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	ran := false
	err := m.Do(context.Background(), func(ctx context.Context) error {
		ran = true
		if ok, err := other.Mutex(name).ForceUnlock(); !ok || err != nil {
			t.Errorf("ForceUnlock = %v, %v", ok, err)
		}
		select {
		case <-ctx.Done(): // the watchdog found it gone
		case <-time.After(10 * time.Second):
			t.Error("the scope's context was not cancelled by the loss")
		}
		return nil
	})
	if !ran || !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Do with a lost hold = %v (ran %v); want ErrLost", err, ran)
	}
	// a scope that kept its hold: fn's result, and the lock is free after
	want := errors.New("fn failed")
	if err := m.Do(context.Background(), func(context.Context) error { return want }); err != want {
		t.Fatalf("Do = %v; want fn's error", err)
	}
	if locked, err := m.IsLocked(); locked || err != nil {
		t.Fatalf("after Do: locked %v, %v", locked, err)
	}
}

// A Redis outage is not contention: a wait during which Redis never
// answered returns an error matching ErrConnect (and DeadlineExceeded too
// when ctx's deadline ended it), never a plain false.
func TestConsistencyOutageIsNotContention(t *testing.T) {
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(500*time.Millisecond),
		hilock.WithConnectTimeout(500*time.Millisecond))
	m := c.Mutex(uniqueName(t))
	s := c.Semaphore(uniqueName(t))
	if err := s.SetPermits(0); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.TryLock(context.Background(), 0, hilock.Watchdog); !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	m.Unlock()
	p.Blackhole(true)
	defer p.Blackhole(false)

	t0 := time.Now()
	ok, err := m.TryLock(context.Background(), time.Second, hilock.Watchdog)
	t.Logf("TryLock(1s) in a black hole: %v, %v after %v", ok, err, time.Since(t0))
	if ok || !errors.Is(err, hilock.ErrConnect) {
		t.Fatalf("TryLock(1s) in a black hole = %v, %v; want ErrConnect", ok, err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TryLock(1s) took %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	ok, err = m.TryLock(ctx, hilock.Forever, hilock.Watchdog)
	if ok || !errors.Is(err, hilock.ErrConnect) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock(ctx 700ms) in a black hole = %v, %v; want ErrConnect and DeadlineExceeded", ok, err)
	}
	ok, err = s.TryAcquireContext(context.Background(), 1, 700*time.Millisecond)
	if ok || !errors.Is(err, hilock.ErrConnect) {
		t.Fatalf("Semaphore.TryAcquireContext in a black hole = %v, %v; want ErrConnect", ok, err)
	}
}
