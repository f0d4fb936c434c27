package hilock_test

// Observability: Client.Stats counts what happens, and the library's events
// reach the handler (WithEventHandler) on the client's events goroutine, in
// order, with the lock's name and owner; Close hands over what was queued,
// then the goroutine ends.

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// waitEvent takes events from ch until one of type typ (failing after
// limit).
func waitEvent(t testing.TB, ch <-chan hilock.Event, typ hilock.EventType, limit time.Duration) hilock.Event {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case e := <-ch:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", typ, limit)
		}
	}
}

// killConns kills the connections (CLIENT KILL ID) of the clients named
// name (WithClientName), and no others: other tests' clients are left alone.
func killConns(t testing.TB, r *redis, name string) {
	t.Helper()
	list, _ := r.str("CLIENT", "LIST")
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
		n += int(r.int("CLIENT", "KILL", "ID", id))
	}
	if n < 1 {
		t.Fatalf("no connection named %s to kill", name)
	}
}

func eventsClient(t *testing.T, opts ...hilock.Option) (*hilock.Client, chan hilock.Event) {
	ch := make(chan hilock.Event, 128)
	opts = append(opts, hilock.WithEventHandler(func(e hilock.Event) { ch <- e }))
	return connect(t, opts...), ch
}

// Stats.Waiting is a gauge: goroutines waiting on a lock count while they
// wait (found it taken with their subscription active, or queued behind
// the client's own waiters), and stop counting when they acquire or their
// ctx ends.
func TestStatsWaiting(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	holder := holdElsewhere(t, name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		m := c.Mutex(name)
		err := m.LockContext(context.Background())
		if err == nil {
			m.Unlock()
		}
		got <- err
	}()
	gave := make(chan error, 1)
	go func() { gave <- c.Mutex(name).LockContext(ctx) }()
	waitWaiting(t, c, 2)
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext with its ctx cancelled: %v", err)
	}
	if n := c.Stats().Waiting; n != 1 {
		t.Fatalf("after a cancelled wait: %d waiting, want 1", n)
	}
	select {
	case err := <-got:
		t.Fatalf("the waiter returned while the lock was held: %v", err)
	default:
	}
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not get the lock")
	}
	if n := c.Stats().Waiting; n != 0 {
		t.Fatalf("after the waits ended: %d waiting", n)
	}
}

func TestStatsCount(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	if s := c.Stats(); s != (hilock.Stats{}) {
		t.Fatalf("a new client's stats: %+v", s)
	}
	m := c.Mutex(name)
	m.Lock()
	if err := m.Reenter(context.Background()); err != nil { // re-entry: counted too
		t.Fatal(err)
	}
	m.Unlock()
	m.Unlock()
	if err := m.Release(); !errors.Is(err, hilock.ErrNotHeld) { // not counted
		t.Fatalf("Release of nothing: %v", err)
	}
	s := c.Stats()
	if s.Acquisitions != 2 || s.Releases != 2 || s.AcquireWaits != 0 {
		t.Fatalf("after 2 locks and 2 unlocks: %+v", s)
	}

	holdElsewhere(t, name)
	t0 := time.Now()
	ok, err := m.TryLock(context.Background(), 300*time.Millisecond, 0)
	took := time.Since(t0)
	if err != nil || ok {
		t.Fatalf("TryLock of a held lock: %v, %v", ok, err)
	}
	if ok, err := m.TryLock(context.Background(), 0, 0); err != nil || ok { // never waits
		t.Fatalf("TryLock(0) of a held lock: %v, %v", ok, err)
	}
	s = c.Stats()
	if s.Acquisitions != 2 || s.AcquireWaits != 1 || s.WaitTime < 250*time.Millisecond || s.WaitTime > took+time.Millisecond {
		t.Fatalf("after a wait of %v in vain: %+v", took, s)
	}
	if s.Renewals+s.RenewalFailures+s.Losses+s.Reconnects+s.Failovers+s.EventsDropped != 0 {
		t.Fatalf("nothing else happened: %+v", s)
	}
	c.Close()
	if c.Stats() != s {
		t.Fatalf("after Close: %+v, want the final %+v", c.Stats(), s)
	}
}

func TestRenewalsCounted(t *testing.T) {
	c := connect(t, hilock.WithWatchdogTimeout(600*time.Millisecond)) // every 200 ms
	m := c.Mutex(uniqueName(t))
	m.Lock()
	if !waitFor(5*time.Second, func() bool { return c.Stats().Renewals >= 2 }) {
		t.Fatalf("no renewals: %+v", c.Stats())
	}
	m.Unlock()
	n := c.Stats().Renewals
	time.Sleep(500 * time.Millisecond)
	if s := c.Stats(); s.Renewals != n || s.RenewalFailures != 0 {
		t.Fatalf("renewals after the release: %d then %+v", n, s)
	}
}

func TestLostEventReachesHandler(t *testing.T) {
	c, events := eventsClient(t, hilock.WithWatchdogTimeout(time.Second))
	r := newRedis(t)
	name := uniqueName(t) + "\x00x" // binary-safe
	m := c.Mutex(name)
	m.Lock()
	r.do("DEL", name)
	select {
	case <-m.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("loss not noticed")
	}
	e := waitEvent(t, events, hilock.EventLost, 5*time.Second)
	if e.Lock != name || e.Owner != m.Owner() || e.Status != "HL_ELOST" || e.Node != "" ||
		!e.Warning() || e.Type.String() != "lost" {
		t.Fatalf("lost event: %+v", e)
	}
	if !strings.Contains(e.Message, "was lost") || e.String() != e.Message {
		t.Fatalf("message %q", e.Message)
	}
	if d := time.Since(e.Time); d < 0 || d > time.Minute {
		t.Fatalf("event time %v", e.Time)
	}
	if n := c.Stats().Losses; n != 1 {
		t.Fatalf("Losses = %d", n)
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release of a lost hold: %v", err)
	}
}

// A hold whose renewals get no answer (the path to Redis black-holed by the
// fault proxy) gives one renewal_failed event, with the lock's name and
// owner, before its lost event; Stats counts the failed renewals.
func TestRenewalFailedEventReachesHandler(t *testing.T) {
	p := startFaultProxy(t, redisPort(t))
	events := make(chan hilock.Event, 128)
	c := connectVia(t, p, hilock.WithWatchdogTimeout(3*time.Second),
		hilock.WithCommandTimeout(time.Second),
		hilock.WithEventHandler(func(e hilock.Event) { events <- e }))
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	p.Blackhole(true)
	defer p.Blackhole(false)
	var failed []hilock.Event
	deadline := time.After(15 * time.Second)
	for lost := false; !lost; {
		select {
		case e := <-events:
			switch e.Type {
			case hilock.EventRenewalFailed:
				failed = append(failed, e)
			case hilock.EventLost:
				lost = true
			}
		case <-deadline:
			t.Fatalf("no lost event within 15 s (%d renewal_failed events)", len(failed))
		}
	}
	if len(failed) != 1 {
		t.Fatalf("%d renewal_failed events before the loss, want 1 (once per hold): %v",
			len(failed), failed)
	}
	e := failed[0]
	if e.Lock != name || e.Owner != m.Owner() || !e.Warning() ||
		e.Type.String() != "renewal_failed" || e.Status == "" || e.Status == "HL_OK" ||
		!strings.Contains(e.Message, "renewing") || !strings.Contains(e.Message, "no answer") {
		t.Fatalf("renewal_failed event: %+v", e)
	}
	if s := c.Stats(); s.RenewalFailures < 1 || s.Losses != 1 {
		t.Fatalf("Stats after failed renewals and a loss: %+v", s)
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release of the lost hold: %v, want ErrLost", err)
	}
}

func TestReconnectEventReachesHandler(t *testing.T) {
	c, events := eventsClient(t, hilock.WithClientName("gotest-reconnect"))
	r := newRedis(t)
	m := c.Mutex(uniqueName(t))
	if _, err := m.IsLocked(); err != nil {
		t.Fatal(err)
	}
	killConns(t, r, "gotest-reconnect")
	if _, err := m.IsLocked(); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().Reconnects; n != 1 {
		t.Fatalf("Reconnects = %d", n)
	}
	e := waitEvent(t, events, hilock.EventReconnect, 5*time.Second)
	if !strings.HasPrefix(e.Node, "127.0.0.1:") || e.Lock != "" || e.Warning() {
		t.Fatalf("reconnect event: %+v", e)
	}
}

// Close hands the events queued before it to the handler, then the
// goroutine ends; a nil handler drops them.
func TestCloseDeliversQueuedEventsThenStops(t *testing.T) {
	base := runtime.NumGoroutine()
	var got []hilock.Event
	c, err := hilock.Connect(context.Background(), redisURL,
		hilock.WithEventHandler(func(e hilock.Event) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Mutex(uniqueName(t))
	if _, err := m.TryLock(context.Background(), 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForceUnlock(); err != nil { // a loss
		t.Fatal(err)
	}
	c.Close()
	if len(got) != 1 || got[0].Type != hilock.EventLost {
		t.Fatalf("events handled by Close: %+v", got)
	}
	if !waitFor(3*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		t.Fatalf("goroutines: %d before, %d after Close", base, runtime.NumGoroutine())
	}

	quiet := connect(t, hilock.WithEventHandler(nil))
	qm := quiet.Mutex(uniqueName(t))
	if _, err := qm.TryLock(context.Background(), 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := qm.ForceUnlock(); err != nil {
		t.Fatal(err)
	}
	if quiet.Stats().Losses != 1 {
		t.Fatalf("Losses = %d", quiet.Stats().Losses)
	}
}

// A client dropped unclosed is still collected: its events goroutine does
// not keep it alive, and its finalizer closes it, which ends the goroutine.
func TestDroppedClientIsCollected(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		c, err := hilock.Connect(context.Background(), redisURL)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.ID()
	}()
	if !waitFor(10*time.Second, func() bool {
		runtime.GC()
		return runtime.NumGoroutine() <= base
	}) {
		t.Fatalf("goroutines: %d before, %d after dropping a client", base, runtime.NumGoroutine())
	}
}

func TestEventTypeNames(t *testing.T) {
	for typ, want := range map[hilock.EventType]string{
		hilock.EventLost: "lost", hilock.EventRenewalFailed: "renewal_failed",
		hilock.EventReconnect: "reconnect", hilock.EventFailover: "failover",
		hilock.EventFencingOff: "fencing_off", hilock.EventUndo: "undo",
		hilock.EventType(99): "EventType(99)",
	} {
		if typ.String() != want {
			t.Errorf("%d: %q, want %q", int(typ), typ.String(), want)
		}
	}
}
