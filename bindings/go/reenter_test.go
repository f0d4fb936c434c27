package hilock_test

// The local gate of a Mutex: waiting at it honours ctx and Close, a lost
// hold keeps it until its holder releases, and Reenter is the explicit way
// to take a held Mutex again.

import (
	"context"
	"errors"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func waitGateWaiting(t *testing.T, m *hilock.Mutex, n int) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool { return hilock.GateWaiting(m) == n }) {
		t.Fatalf("%d goroutines wait at the Mutex's gate, want %d", hilock.GateWaiting(m), n)
	}
}

func TestSharedMutexWaiterGivesUp(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()

	// A deadline ends a wait at the gate: DeadlineExceeded, nothing taken.
	type result struct {
		ok  bool
		err error
		d   time.Duration
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		err := m.LockContext(ctx)
		res <- result{err == nil, err, time.Since(t0)}
	}()
	got := <-res
	if !errors.Is(got.err, context.DeadlineExceeded) || got.d < 250*time.Millisecond || got.d > 5*time.Second {
		t.Fatalf("LockContext with a 300 ms deadline: %v after %v, want DeadlineExceeded", got.err, got.d)
	}
	// A cancel ends it too, while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		t0 := time.Now()
		err := m.LockContext(ctx)
		res <- result{err == nil, err, time.Since(t0)}
	}()
	waitGateWaiting(t, m, 1)
	cancel()
	select {
	case got = <-res:
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled waiter did not return")
	}
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("cancelled LockContext: %v, want Canceled", got.err)
	}
	waitGateWaiting(t, m, 0)
	// TryLock: no wait is one look at the gate, a wait is bounded.
	go func() {
		ok, err := m.TryLock(context.Background(), 0, 0)
		res <- result{ok, err, 0}
	}()
	if got = <-res; got.ok || got.err != nil {
		t.Fatalf("TryLock(0) of the held Mutex from another goroutine = %v, %v", got.ok, got.err)
	}
	go func() {
		t0 := time.Now()
		ok, err := m.TryLock(context.Background(), 200*time.Millisecond, 0)
		res <- result{ok, err, time.Since(t0)}
	}()
	if got = <-res; got.ok || got.err != nil || got.d < 150*time.Millisecond {
		t.Fatalf("TryLock(200ms) of the held Mutex = %v, %v after %v", got.ok, got.err, got.d)
	}
	// Nothing of the waits reached Redis or stayed in the gate.
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("hold count %q after the waits gave up, want 1", v)
	}
	if w, rd := hilock.GateUnits(m); w != 1 || rd != 0 {
		t.Fatalf("gate units %d, %d, want 1, 0", w, rd)
	}

	// A waiter gets in when the holder unlocks, and another goroutine may
	// unlock it (as with sync.Mutex).
	go func() {
		err := m.LockContext(context.Background())
		res <- result{err == nil, err, 0}
	}()
	waitGateWaiting(t, m, 1)
	select {
	case got = <-res:
		t.Fatalf("the waiter got in while the Mutex was held: %v", got.err)
	case <-time.After(100 * time.Millisecond):
	}
	m.Unlock()
	select {
	case got = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not let in")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("hold count %q for the waiter, want 1", v)
	}
	m.Unlock() // the waiter's hold, from this goroutine
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the lock is left held")
	}
	if w, rd := hilock.GateUnits(m); w != 0 || rd != 0 {
		t.Fatalf("gate units %d, %d after the last Unlock, want 0, 0", w, rd)
	}
}

// Close wakes a goroutine waiting at a Mutex's gate: ErrClosed.
func TestSharedMutexCloseWakesGateWaiter(t *testing.T) {
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.Mutex(uniqueName(t))
	m.Lock()
	errc := make(chan error, 1)
	go func() { errc <- m.LockContext(context.Background()) }()
	waitGateWaiting(t, m, 1)
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, hilock.ErrClosed) {
			t.Fatalf("gate waiter after Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the goroutine waiting at the gate")
	}
	if err := m.LockContext(context.Background()); !errors.Is(err, hilock.ErrClosed) {
		t.Fatalf("LockContext after Close: %v, want ErrClosed", err)
	}
}

// Reenter is the documented way to take a held Mutex again: the hold count
// in Redis grows to 2, each Unlock gives one back, and the other goroutines
// stay out until the last.
func TestReenterHoldCount(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	ctx := context.Background()
	if err := m.Reenter(ctx); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Reenter of an unlocked Mutex: %v, want ErrNotHeld", err)
	}
	m.Lock()
	if err := m.Reenter(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.str("HGET", name, m.Owner()); v != "2" {
		t.Fatalf("hold count in Redis %q after Reenter, want 2", v)
	}
	if n, err := m.HoldCount(); n != 2 || err != nil {
		t.Fatalf("HoldCount = %d, %v, want 2", n, err)
	}
	other := make(chan bool, 1)
	tryOther := func() bool {
		go func() {
			ok, _ := m.TryLock(context.Background(), 0, 0)
			if ok {
				m.Unlock()
			}
			other <- ok
		}()
		return <-other
	}
	if tryOther() {
		t.Fatal("another goroutine got the re-entered Mutex")
	}
	m.Unlock()
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("hold count in Redis %q after one Unlock, want 1", v)
	}
	if tryOther() {
		t.Fatal("another goroutine got the Mutex with one hold left")
	}
	m.Unlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the second Unlock did not free the lock")
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	if !tryOther() {
		t.Fatal("the Mutex stayed closed to other goroutines after its last Unlock")
	}
}

// A lost hold keeps the gate until its holder releases it (the holder may
// still be working under it), cannot be re-entered, and its release error
// matches both ErrLost and ErrNotHeld.
func TestLostHoldKeepsGateUntilReleased(t *testing.T) {
	logs := captureLogger(t)
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	lost := m.Lost()
	r.do("DEL", name)
	select {
	case <-lost:
	case <-time.After(8 * time.Second):
		t.Fatal("the loss was not seen")
	}
	res := make(chan bool, 1)
	go func() {
		ok, _ := m.TryLock(context.Background(), 0, 0)
		res <- ok
	}()
	if <-res {
		t.Fatal("another goroutine got in while the lost hold's holder had not unlocked")
	}
	err := m.Reenter(context.Background())
	if !errors.Is(err, hilock.ErrLost) || !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Reenter of a lost hold: %v, want ErrLost (and ErrNotHeld)", err)
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("Reenter of a lost hold took the lock")
	}
	m.Unlock() // the loss is logged
	if err := oneLogged(t, logs, name); !errors.Is(err, hilock.ErrLost) || !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("logged %v, want an error matching ErrLost and ErrNotHeld", err)
	}
	ok, err := m.TryLock(context.Background(), 0, 0)
	if !ok || err != nil {
		t.Fatalf("TryLock after the lost hold was unlocked = %v, %v", ok, err)
	}
	m.Unlock()
}
