package hilock_test

// The network misbehaving, as a Go user sees it: the fault proxy sits
// between the client and Redis.

import (
	"context"
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func connectVia(t *testing.T, p *faultProxy, opts ...hilock.Option) *hilock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := hilock.Connect(ctx, p.URL(), opts...)
	if err != nil {
		t.Fatalf("Connect through the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A TryLock whose ctx deadline is 1 s returns about 1 s later even when
// Redis stopped answering (it took 23.5 s), and a cancel is prompt (20.5 s).
func TestFaultsDeadlinesInABlackHole(t *testing.T) {
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p) // the defaults: 3 s per reply, 4 retries
	m := c.Mutex(uniqueName(t))
	if ok, err := m.TryLock(context.Background(), 0, 0); !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	m.Unlock()
	p.Blackhole(true)
	defer p.Blackhole(false)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	t0 := time.Now()
	ok, err := m.TryLock(ctx, -1, 0)
	took := time.Since(t0)
	cancel()
	t.Logf("TryLock with a 1 s deadline in a black hole: %v (%v, %v)", took, ok, err)
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock = %v, %v; want false, DeadlineExceeded", ok, err)
	}
	if took < 950*time.Millisecond || took > 1300*time.Millisecond {
		t.Fatalf("TryLock took %v", took)
	}

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.LockContext(ctx) }()
	time.Sleep(300 * time.Millisecond)
	t0 = time.Now()
	cancel()
	select {
	case err := <-done:
		took = time.Since(t0)
		t.Logf("cancel in a black hole: %v (%v)", took, err)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext = %v; want Canceled", err)
		}
		if took > 300*time.Millisecond {
			t.Fatalf("cancel took %v", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LockContext did not return after cancel")
	}
}

// The holder's path goes silent: Lost fires while Redis still has the key
// (before anyone else can take it), and Release then says ErrLost at once.
func TestFaultsLostBeforeTheLeaseEnds(t *testing.T) {
	r := newRedis(t)
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithWatchdogTimeout(3*time.Second),
		hilock.WithCommandTimeout(time.Second))
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	lost := m.Lost()
	p.Blackhole(true)
	defer p.Blackhole(false)
	t0 := time.Now()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not fire")
	}
	pttl := r.int("PTTL", name)
	t.Logf("lost after %v with %d ms of lease left in redis", time.Since(t0), pttl)
	if pttl <= 0 {
		t.Fatalf("Lost fired after the lease ended (pttl %d)", pttl)
	}
	t0 = time.Now()
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release = %v; want ErrLost", err)
	}
	if took := time.Since(t0); took > 100*time.Millisecond {
		t.Fatalf("Release of a lost hold took %v", took)
	}
}

// A release that Redis cannot confirm is ErrInDoubt; the lease ends the
// hold once the network is back, and no renewal keeps it alive.
func TestFaultsReleaseInDoubt(t *testing.T) {
	r := newRedis(t)
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithWatchdogTimeout(3*time.Second),
		hilock.WithCommandTimeout(300*time.Millisecond),
		hilock.WithRetry(2, 100*time.Millisecond))
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	p.Drop(true)
	err := m.Release()
	p.Drop(false)
	if !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("Release = %v; want ErrInDoubt", err)
	}
	if !waitFor(8*time.Second, func() bool { return r.int("EXISTS", name) == 0 }) {
		t.Fatal("the lock outlived its lease")
	}
}
