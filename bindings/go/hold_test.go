package hilock_test

// The library is the one record of a Mutex's holds (hl_lock_hold_state):
// holds taken or given back through another handle of the same owner, a
// lock taken away and taken again, a lease that ran out. A Mutex that kept
// a count of its own would disagree with it in each of these.

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

type holdView struct {
	count int64
	lost  bool
	epoch uint64
}

func holdOf(t *testing.T, m *hilock.Mutex) holdView {
	t.Helper()
	n, lost, epoch, err := hilock.HoldState(m)
	if err != nil {
		t.Fatalf("HoldState: %v", err)
	}
	return holdView{n, lost, epoch}
}

func mustAcquireAs(t *testing.T, m *hilock.Mutex) {
	t.Helper()
	if ok, err := hilock.AcquireAs(m); !ok || err != nil {
		t.Fatalf("AcquireAs = %v, %v", ok, err)
	}
}

func TestHoldTakenThroughAnotherHandle(t *testing.T) {
	logs := captureLogger(t)
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)

	// Taken for m's owner elsewhere: m holds it, and Unlock gives it back.
	mustAcquireAs(t, m)
	if h := holdOf(t, m); h.count != 1 || h.epoch == 0 {
		t.Fatalf("after a hold taken elsewhere: %+v", h)
	}
	m.Unlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("Unlock did not give back the hold taken through another handle")
	}
	if h := holdOf(t, m); h.count != 0 || h.epoch != 0 {
		t.Fatalf("after Unlock: %+v", h)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)

	// Re-entered elsewhere: two holds, two Unlocks.
	m.Lock()
	mustAcquireAs(t, m)
	if h := holdOf(t, m); h.count != 2 {
		t.Fatalf("count %d after Lock and a re-entry elsewhere, want 2", h.count)
	}
	m.Unlock()
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("Redis has count %q after one Unlock, want 1", v)
	}
	m.Unlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the second Unlock did not free the lock")
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	if errs := logs.get(); len(errs) != 0 {
		t.Fatalf("logged: %v", errs)
	}
}

func TestHoldReleasedElsewhereThenRelocked(t *testing.T) {
	logs := captureLogger(t)
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	first := holdOf(t, m)
	lost1 := m.Lost()
	// Given back through another handle: the hold is over, m's is too.
	if free, err := hilock.ReleaseAs(m); !free || err != nil {
		t.Fatalf("ReleaseAs = %v, %v", free, err)
	}
	if h := holdOf(t, m); h.count != 0 || h.epoch != 0 {
		t.Fatalf("after a release elsewhere: %+v", h)
	}
	// m's Lock is still to be given back (its gate): nothing left in Redis.
	if err := m.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release after a release elsewhere: %v, want ErrNotHeld", err)
	}
	// Taken again: a new hold (new epoch, new Lost channel), count 1.
	m.Lock()
	second := holdOf(t, m)
	if second.count != 1 || second.epoch == 0 || second.epoch == first.epoch {
		t.Fatalf("relocked: %+v, first hold %+v: want count 1 and a new epoch", second, first)
	}
	lost2 := m.Lost()
	if lost2 == lost1 {
		t.Fatal("the new hold has the old hold's Lost channel")
	}
	// The new hold is watched: taking it away closes its channel only.
	r.do("DEL", name)
	select {
	case <-lost2:
	case <-time.After(8 * time.Second):
		t.Fatal("the new hold's loss was not seen")
	}
	if isClosed(lost1) {
		t.Fatal("the released hold's Lost channel was closed")
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after the loss: %v, want ErrLost", err)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	if errs := logs.get(); len(errs) != 0 {
		t.Fatalf("logged: %v", errs)
	}
}

func TestHoldForceUnlockedThenRelocked(t *testing.T) {
	logs := captureLogger(t)
	c := fastClient(t)
	other := connect(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	first := holdOf(t, m)
	if first.count != 1 || first.lost || first.epoch == 0 {
		t.Fatalf("locked: %+v", first)
	}
	lost := m.Lost()
	if existed, err := other.Mutex(name).ForceUnlock(); !existed || err != nil {
		t.Fatalf("ForceUnlock from another client = %v, %v", existed, err)
	}
	select {
	case <-lost:
	case <-time.After(8 * time.Second):
		t.Fatal("the watchdog did not find the hold lost")
	}
	if h := holdOf(t, m); h.count != 0 || !h.lost || h.epoch != first.epoch {
		t.Fatalf("after the loss: %+v, want count 0, lost, epoch %d", h, first.epoch)
	}
	// The lost hold is given back (that opens m's gate), then m locks again.
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release of the lost hold: %v, want ErrLost", err)
	}
	// Acquired again after the loss: a new hold, count 1, not lost.
	m.Lock()
	second := holdOf(t, m)
	if second.count != 1 || second.lost || second.epoch == first.epoch {
		t.Fatalf("relocked after the loss: %+v (first %+v)", second, first)
	}
	if isClosed(m.Lost()) {
		t.Fatal("the new hold's Lost channel is closed")
	}
	if locked, _ := other.Mutex(name).IsLocked(); !locked {
		t.Fatal("the lock is not held after relocking")
	}
	m.Unlock()
	if locked, _ := other.Mutex(name).IsLocked(); locked {
		t.Fatal("one Unlock did not free the lock (a stale count?)")
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	if errs := logs.get(); len(errs) != 0 {
		t.Fatalf("logged: %v", errs)
	}
}

func TestHoldLeaseRanOutThenRelocked(t *testing.T) {
	logs := captureLogger(t)
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	ctx := context.Background()
	if ok, err := m.TryLock(ctx, 0, 200*time.Millisecond); !ok || err != nil {
		t.Fatalf("TryLock with a lease = %v, %v", ok, err)
	}
	if !waitFor(5*time.Second, func() bool { return r.int("EXISTS", name) == 0 }) {
		t.Fatal("the lease did not run out")
	}
	if h := holdOf(t, m); h.count != 0 {
		t.Fatalf("count %d after the lease ran out, want 0", h.count)
	}
	// The hold whose lease ran out is given back (that opens m's gate).
	if err := m.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release after the lease ran out: %v, want ErrLost or ErrNotHeld", err)
	}
	// Taken again with the watchdog: one hold, watched for loss.
	m.Lock()
	if h := holdOf(t, m); h.count != 1 || h.lost {
		t.Fatalf("relocked: %+v", h)
	}
	lost := m.Lost()
	r.do("DEL", name)
	select {
	case <-lost:
	case <-time.After(8 * time.Second):
		t.Fatal("the watchdog hold taken after a lease hold is not watched")
	}
	m.Unlock() // the loss is logged, not a panic
	if err := oneLogged(t, logs, name); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("logged %v, want ErrLost", err)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
}

func TestHoldUnlockAfterLeaseRanOutIsNotMisuse(t *testing.T) {
	logs := captureLogger(t)
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	if ok, err := m.TryLock(context.Background(), 0, 100*time.Millisecond); !ok || err != nil {
		t.Fatalf("TryLock with a lease = %v, %v", ok, err)
	}
	if !waitFor(5*time.Second, func() bool { return r.int("EXISTS", name) == 0 }) {
		t.Fatal("the lease did not run out")
	}
	// The library may have forgotten the hold: m remembers it took one.
	m.Unlock()
	err := oneLogged(t, logs, name)
	if !errors.Is(err, hilock.ErrLost) && !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("logged %v, want ErrLost or ErrNotHeld", err)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
}

func TestCollectedMutexStopsRenewalAfterRelock(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	func() {
		m := c.Mutex(name)
		m.Lock()
		m.Unlock()
		m.Lock() // a second hold, after the first ended
	}()
	gone := waitFor(8*time.Second, func() bool {
		runtime.GC()
		return r.int("EXISTS", name) == 0
	})
	if !gone {
		t.Fatal("a collected Mutex's second hold is still renewed")
	}
}
