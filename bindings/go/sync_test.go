package hilock_test

// The synchronizers: the semaphore (x/sync's methods, permits counted per
// client, a bound of 3 holders across two clients, wake-ups by message),
// the permit-expirable semaphore (ids, leases, a killed holder's permit
// coming back when its lease ends), the count-down latch (every waiter of
// two clients woken by count-downs on ten others); 10,000 waiting
// goroutines on few threads, a cancelled crowd leaving nothing taken, bad
// input and a closed client.

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// weighted is golang.org/x/sync/semaphore's *Weighted as its users call it.
type weighted interface {
	Acquire(ctx context.Context, n int64) error
	TryAcquire(n int64) bool
	Release(n int64)
}

var _ weighted = (*hilock.Semaphore)(nil)

// semChannel and latchChannel are Redisson's channels of a name without
// braces.
func semChannel(name string) string   { return "redisson_sc:{" + name + "}" }
func latchChannel(name string) string { return "redisson_countdownlatch__channel__{" + name + "}" }

// waitChannelSubscribers waits until n clients subscribe to ch: waiters
// asleep in the library.
func waitChannelSubscribers(t testing.TB, r *redis, ch string, n int64) {
	t.Helper()
	ok := waitFor(30*time.Second, func() bool {
		v := r.do("PUBSUB", "NUMSUB", ch).([]interface{})
		return len(v) == 2 && v[1].(int64) >= n
	})
	if !ok {
		t.Fatalf("fewer than %d clients subscribed to %s", n, ch)
	}
}

// waitWaiting waits until n of c's waits are waiting (Stats.Waiting): each
// found its object taken or closed with its subscription active, so that
// only a message, a timer or its turn moves it on.
func waitWaiting(t testing.TB, c *hilock.Client, n uint64) {
	t.Helper()
	if !waitFor(30*time.Second, func() bool { return c.Stats().Waiting == n }) {
		t.Fatalf("%d waits waiting, want %d", c.Stats().Waiting, n)
	}
}

func wantInt(t testing.TB, what string, got int64, err error, want int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != want {
		t.Fatalf("%s = %d, want %d", what, got, want)
	}
}

func TestSemaphoreBasics(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	s := c.Semaphore(name)
	if s.Name() != name {
		t.Fatalf("Name() = %q", s.Name())
	}

	n, err := s.AvailablePermits()
	wantInt(t, "available of a new semaphore", n, err, 0)
	if ok, err := s.TrySetPermits(3); !ok || err != nil {
		t.Fatalf("TrySetPermits(3) = %v, %v", ok, err)
	}
	if ok, err := s.TrySetPermits(5); ok || err != nil {
		t.Fatalf("TrySetPermits(5) on a set semaphore = %v, %v", ok, err)
	}
	if v, _ := r.str("GET", name); v != "3" {
		t.Fatalf("%s = %q in Redis, want 3", name, v)
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.str("GET", name); v != "1" {
		t.Fatalf("%s = %q after taking 2, want 1", name, v)
	}
	n, err = s.HeldPermits()
	wantInt(t, "held", n, err, 2)
	// Another Semaphore of the same name on the same client shares the
	// client's count.
	n, err = c.Semaphore(name).HeldPermits()
	wantInt(t, "held through another value", n, err, 2)
	n, err = connect(t).Semaphore(name).HeldPermits()
	wantInt(t, "held by another client", n, err, 0)

	if s.TryAcquire(2) {
		t.Fatal("TryAcquire(2) with 1 available succeeded")
	}
	start := time.Now()
	if ok, err := s.TryAcquireContext(ctx, 2, 300*time.Millisecond); ok || err != nil {
		t.Fatalf("TryAcquireContext(2, 300ms) = %v, %v", ok, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TryAcquireContext(300ms) took %v", d)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if err := s.Acquire(dctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v", err)
	}
	cancel()
	if err := s.Acquire(ctx, 0); err != nil {
		t.Fatalf("Acquire(0): %v", err)
	}
	if !s.TryAcquire(0) {
		t.Fatal("TryAcquire(0) failed")
	}
	if v, _ := r.str("GET", name); v != "1" {
		t.Fatalf("failed acquires changed the count: %q", v)
	}

	// No more back than taken: Release panics like x/sync's, ReleaseErr
	// says ErrNotHeld; neither changes anything.
	mustPanic(t, hilock.ErrNotHeld, func() { s.Release(3) })
	err = s.ReleaseErr(3)
	var e *hilock.Error
	if !errors.Is(err, hilock.ErrNotHeld) || !errors.As(err, &e) || e.Op != "release" ||
		!strings.Contains(e.Message, name) {
		t.Fatalf("ReleaseErr(3) holding 2: %#v", err)
	}
	if v, _ := r.str("GET", name); v != "1" {
		t.Fatalf("a refused release changed the count: %q", v)
	}
	s.Release(2)
	if v, _ := r.str("GET", name); v != "3" {
		t.Fatalf("%s = %q after the release, want 3", name, v)
	}
	mustPanic(t, hilock.ErrNotHeld, func() { s.Release(1) })
	s.Release(0)
	if err := s.ReleaseErr(0); err != nil {
		t.Fatal(err)
	}

	// Add (negative too), drain, set.
	n, err = s.AddPermits(-1)
	wantInt(t, "AddPermits(-1)", n, err, 2)
	n, err = s.DrainPermits()
	wantInt(t, "DrainPermits", n, err, 2)
	if v, _ := r.str("GET", name); v != "0" {
		t.Fatalf("%s = %q after drain", name, v)
	}
	n, err = s.HeldPermits()
	wantInt(t, "held after drain", n, err, 2)
	if err := s.ReleaseErr(2); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPermits(5); err != nil {
		t.Fatal(err)
	}
	n, err = s.AvailablePermits()
	wantInt(t, "available after SetPermits(5)", n, err, 5)
	n, err = s.AddPermits(-7)
	wantInt(t, "AddPermits(-7)", n, err, -2)
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire with -2 available succeeded")
	}
	if existed, err := s.Delete(); !existed || err != nil {
		t.Fatalf("Delete = %v, %v", existed, err)
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the semaphore's key survived Delete")
	}
	if existed, err := s.Delete(); existed || err != nil {
		t.Fatalf("second Delete = %v, %v", existed, err)
	}
}

// A release on another client wakes a waiter through the channel, at once;
// through a task too.
func TestSemaphoreWake(t *testing.T) {
	for _, noFast := range []bool{false, true} {
		t.Run("noFast="+strconv.FormatBool(noFast), func(t *testing.T) {
			a, b := connect(t), connect(t)
			r := newRedis(t)
			name := uniqueName(t)
			sa, sb := a.Semaphore(name), b.Semaphore(name)
			if err := sa.SetPermits(2); err != nil {
				t.Fatal(err)
			}
			if noFast {
				defer hilock.NoFastPath(b)()
			}
			if err := sa.Acquire(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
			got := make(chan time.Time, 1)
			errc := make(chan error, 1)
			go func() {
				err := sb.Acquire(context.Background(), 2)
				got <- time.Now()
				errc <- err
			}()
			waitChannelSubscribers(t, r, semChannel(name), 1)
			select {
			case <-got:
				t.Fatal("the waiter got permits that are held")
			case <-time.After(200 * time.Millisecond):
			}
			released := time.Now()
			sa.Release(2)
			select {
			case at := <-got:
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if d := at.Sub(released); d > 2*time.Second {
					t.Fatalf("woken %v after the release", d)
				}
				t.Logf("woken %v after the release", at.Sub(released))
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter was not woken")
			}
			if v, _ := r.str("GET", name); v != "0" {
				t.Fatalf("count %q while b holds both", v)
			}
			n, err := sb.HeldPermits()
			wantInt(t, "b's permits", n, err, 2)
			sb.Release(2)
			if v, _ := r.str("GET", name); v != "2" {
				t.Fatalf("count %q after b's release", v)
			}
			if p := hilock.PendingTasks(b); p != 0 {
				t.Fatalf("%d tasks left", p)
			}
		})
	}
}

// A semaphore of 3, 12 goroutines on two clients, some taking 2 permits:
// never more than 3 permits in use (counted here, outside Redis), and every
// permit comes back.
func TestSemaphoreBound(t *testing.T) {
	const goroutines, iters, permits = 12, 15, 3
	clients := []*hilock.Client{connect(t), connect(t)}
	name := uniqueName(t)
	if ok, err := clients[0].Semaphore(name).TrySetPermits(permits); !ok || err != nil {
		t.Fatalf("TrySetPermits = %v, %v", ok, err)
	}
	var inUse, maxInUse, sections int64
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := clients[g%2].Semaphore(name)
			n := int64(1 + g%3/2) // 1, 1, 2, ...
			for i := 0; i < iters; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := s.Acquire(ctx, n)
				cancel()
				if err != nil {
					errc <- err
					return
				}
				v := atomic.AddInt64(&inUse, n)
				for {
					m := atomic.LoadInt64(&maxInUse)
					if v <= m || atomic.CompareAndSwapInt64(&maxInUse, m, v) {
						break
					}
				}
				time.Sleep(2 * time.Millisecond)
				atomic.AddInt64(&sections, 1)
				atomic.AddInt64(&inUse, -n)
				if err := s.ReleaseErr(n); err != nil {
					errc <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("%d sections, at most %d permits in use at once", sections, maxInUse)
	if maxInUse > permits || maxInUse < 1 {
		t.Fatalf("%d permits in use at once, the semaphore has %d", maxInUse, permits)
	}
	if sections != goroutines*iters {
		t.Fatalf("%d sections, want %d", sections, goroutines*iters)
	}
	n, err := clients[1].Semaphore(name).AvailablePermits()
	wantInt(t, "available after all", n, err, permits)
	for i, c := range clients {
		n, err := c.Semaphore(name).HeldPermits()
		wantInt(t, "client "+strconv.Itoa(i)+" holds", n, err, 0)
	}
}

// 10,000 goroutines waiting on semaphores and latches run at most
// GOMAXPROCS + 16 OS threads, then all get through.
func TestSyncWaitersFewThreads(t *testing.T) {
	if inChild(t) {
		return
	}
	const objects, perObject = 50, 100 // of each kind
	c := connect(t)                    // one client, as a program has one
	base := uniqueName(t)
	sems := make([]string, objects)
	latches := make([]string, objects)
	for i := 0; i < objects; i++ {
		sems[i] = base + ":sem:" + strconv.Itoa(i)
		latches[i] = base + ":latch:" + strconv.Itoa(i)
		if err := c.Semaphore(sems[i]).SetPermits(0); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.CountDownLatch(latches[i]).TrySetCount(1); !ok || err != nil {
			t.Fatalf("TrySetCount = %v, %v", ok, err)
		}
	}
	var acquired, opened int64
	inside := make([]int64, objects)
	var over int32
	var wg sync.WaitGroup
	errc := make(chan error, 2*objects*perObject)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := 0; i < objects*perObject; i++ {
		k := i % objects
		wg.Add(2)
		go func() {
			defer wg.Done()
			s := c.Semaphore(sems[k])
			if err := s.Acquire(ctx, 1); err != nil {
				errc <- err
				return
			}
			if atomic.AddInt64(&inside[k], 1) > 2 {
				atomic.StoreInt32(&over, 1)
			}
			atomic.AddInt64(&acquired, 1)
			atomic.AddInt64(&inside[k], -1)
			if err := s.ReleaseErr(1); err != nil {
				errc <- err
			}
		}()
		go func() {
			defer wg.Done()
			if err := c.CountDownLatch(latches[k]).Wait(ctx); err != nil {
				errc <- err
				return
			}
			atomic.AddInt64(&opened, 1)
		}()
	}
	total := int64(2 * objects * perObject)
	if !waitFor(2*time.Minute, func() bool { return hilock.PendingTasks(c) == total }) {
		t.Fatalf("only %d of %d waiters are waiting", hilock.PendingTasks(c), total)
	}
	time.Sleep(200 * time.Millisecond)
	n, limit := osThreads(t), runtime.GOMAXPROCS(0)+16
	t.Logf("%d goroutines waiting on %d semaphores and %d latches: %d OS threads (GOMAXPROCS %d)",
		total, objects, objects, n, runtime.GOMAXPROCS(0))
	if n > limit {
		t.Fatalf("%d OS threads while %d goroutines wait, want at most %d", n, total, limit)
	}
	if a, o := atomic.LoadInt64(&acquired), atomic.LoadInt64(&opened); a != 0 || o != 0 {
		t.Fatalf("%d acquired and %d opened before anything was given", a, o)
	}
	start := time.Now()
	for i := 0; i < objects; i++ {
		if _, err := c.Semaphore(sems[i]).AddPermits(2); err != nil {
			t.Fatal(err)
		}
		if left, err := c.CountDownLatch(latches[i]).CountDown(); left != 0 || err != nil {
			t.Fatalf("CountDown = %d, %v", left, err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("only %d acquired and %d opened", atomic.LoadInt64(&acquired), atomic.LoadInt64(&opened))
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("all through in %v; %d OS threads now", time.Since(start), osThreads(t))
	if acquired != objects*perObject || opened != objects*perObject || over != 0 {
		t.Fatalf("acquired %d, opened %d, more than 2 inside: %v", acquired, opened, over != 0)
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
	for i := 0; i < objects; i++ {
		n, err := c.Semaphore(sems[i]).AvailablePermits()
		wantInt(t, sems[i]+" available", n, err, 2)
	}
}

// A crowd of waiters cancelled while permits appear: whoever got permits
// says so and holds them, the rest took nothing.
func TestSyncCancelManyWaitersLeavesNothingTaken(t *testing.T) {
	const n, permits = 1000, 5
	c, other := connect(t), connect(t)
	t.Run("Semaphore", func(t *testing.T) {
		name := uniqueName(t)
		if err := other.Semaphore(name).SetPermits(0); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, n)
		for i := 0; i < n; i++ {
			go func() { errc <- c.Semaphore(name).Acquire(ctx, 1) }()
		}
		if !waitFor(time.Minute, func() bool { return hilock.PendingTasks(c) == n }) {
			t.Fatalf("only %d of %d waiters are waiting", hilock.PendingTasks(c), n)
		}
		go other.Semaphore(name).AddPermits(permits)
		cancel()
		got := 0
		for i := 0; i < n; i++ {
			select {
			case err := <-errc:
				if err == nil {
					got++
				} else if !errors.Is(err, context.Canceled) {
					t.Fatalf("waiter: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%d waiters did not return after cancel", n-i)
			}
		}
		t.Logf("%d waiters cancelled, %d got a permit first", n-got, got)
		if got > permits {
			t.Fatalf("%d waiters got one of %d permits", got, permits)
		}
		held, err := c.Semaphore(name).HeldPermits()
		wantInt(t, "permits the client holds", held, err, int64(got))
		// AddPermits may still be on its way, and an attempt cut off by
		// the cancel after it was sent is taken back by the library within
		// 500 ms: wait for both, then count.
		if !waitFor(10*time.Second, func() bool {
			v, err := other.Semaphore(name).AvailablePermits()
			return err == nil && v == int64(permits-got)
		}) {
			v, _ := other.Semaphore(name).AvailablePermits()
			t.Fatalf("available %d with %d held, want %d", v, got, permits-got)
		}
		if err := c.Semaphore(name).ReleaseErr(int64(got)); err != nil {
			t.Fatal(err)
		}
		v, err := other.Semaphore(name).AvailablePermits()
		wantInt(t, "available after the release", v, err, permits)
		if p := hilock.PendingTasks(c); p != 0 {
			t.Fatalf("%d tasks left", p)
		}
	})
	t.Run("ExpirableSemaphore", func(t *testing.T) {
		name := uniqueName(t)
		if err := other.ExpirableSemaphore(name).SetPermits(0); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		type res struct {
			id  string
			err error
		}
		resc := make(chan res, n)
		for i := 0; i < n; i++ {
			go func() {
				id, err := c.ExpirableSemaphore(name).Acquire(ctx, time.Minute)
				resc <- res{id, err}
			}()
		}
		if !waitFor(time.Minute, func() bool { return hilock.PendingTasks(c) == n }) {
			t.Fatalf("only %d of %d waiters are waiting", hilock.PendingTasks(c), n)
		}
		go other.ExpirableSemaphore(name).AddPermits(permits)
		cancel()
		var ids []string
		for i := 0; i < n; i++ {
			select {
			case r := <-resc:
				if r.err == nil {
					ids = append(ids, r.id)
				} else if !errors.Is(r.err, context.Canceled) || r.id != "" {
					t.Fatalf("waiter: %q, %v", r.id, r.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%d waiters did not return after cancel", n-i)
			}
		}
		t.Logf("%d waiters cancelled, %d got a permit first", n-len(ids), len(ids))
		if len(ids) > permits {
			t.Fatalf("%d waiters got one of %d permits", len(ids), permits)
		}
		x := other.ExpirableSemaphore(name)
		// An attempt cut off by the cancel after it was sent is taken
		// back by the library within 500 ms: wait for that, then count.
		if !waitFor(10*time.Second, func() bool {
			v, err := x.AcquiredPermits()
			return err == nil && v == int64(len(ids))
		}) {
			v, _ := x.AcquiredPermits()
			t.Fatalf("%d permits out, %d waiters got one", v, len(ids))
		}
		if !waitFor(10*time.Second, func() bool {
			v, err := x.Permits()
			return err == nil && v == permits
		}) {
			t.Fatal("AddPermits did not arrive")
		}
		for _, id := range ids {
			if err := x.Release(id); err != nil {
				t.Fatal(err)
			}
		}
		v, err := x.AvailablePermits()
		wantInt(t, "available after the releases", v, err, permits)
		if p := hilock.PendingTasks(c); p != 0 {
			t.Fatalf("%d tasks left", p)
		}
	})
}

func TestExpirableSemaphoreBasics(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	s := c.ExpirableSemaphore(name)
	if s.Name() != name {
		t.Fatalf("Name() = %q", s.Name())
	}
	if ok, err := s.TrySetPermits(3); !ok || err != nil {
		t.Fatalf("TrySetPermits(3) = %v, %v", ok, err)
	}
	if ok, err := s.TrySetPermits(4); ok || err != nil {
		t.Fatalf("TrySetPermits(4) = %v, %v", ok, err)
	}
	ids, err := s.AcquireN(ctx, 2, time.Minute)
	if err != nil || len(ids) != 2 {
		t.Fatalf("AcquireN(2) = %q, %v", ids, err)
	}
	for _, id := range ids {
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("permit id %q: want 32 lowercase hex characters", id)
		}
	}
	if ids[0] == ids[1] {
		t.Fatal("two permits with one id")
	}
	n, err := s.AvailablePermits()
	wantInt(t, "available", n, err, 1)
	n, err = s.AcquiredPermits()
	wantInt(t, "acquired", n, err, 2)
	n, err = s.Permits()
	wantInt(t, "permits", n, err, 3)
	if v, _ := r.str("GET", name); v != "1" {
		t.Fatalf("%s = %q in Redis", name, v)
	}
	if got := r.int("ZCARD", "{"+name+"}:timeout"); got != 2 {
		t.Fatalf("%d permits in {name}:timeout, want 2", got)
	}
	if two, err := s.TryAcquireN(ctx, 2, 0, time.Minute); two != nil || err != nil {
		t.Fatalf("TryAcquireN(2) with 1 available = %q, %v", two, err)
	}
	start := time.Now()
	if two, err := s.TryAcquireN(ctx, 2, 300*time.Millisecond, time.Minute); two != nil || err != nil {
		t.Fatalf("TryAcquireN(2, 300ms) = %q, %v", two, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TryAcquireN(300ms) took %v", d)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if two, err := s.AcquireN(dctx, 2, time.Minute); two != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireN past its deadline = %q, %v", two, err)
	}
	cancel()

	lt, err := s.LeaseTime(ids[0])
	if err != nil || lt < 50*time.Second || lt > time.Minute {
		t.Fatalf("LeaseTime = %v, %v", lt, err)
	}
	if err := s.UpdateLease(ids[0], hilock.NoLease); err != nil {
		t.Fatal(err)
	}
	if lt, err := s.LeaseTime(ids[0]); lt != -1 || err != nil {
		t.Fatalf("LeaseTime without a lease = %v, %v", lt, err)
	}
	if err := s.UpdateLease(ids[0], 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if lt, err := s.LeaseTime(ids[0]); lt < 5*time.Second || lt > 10*time.Second || err != nil {
		t.Fatalf("LeaseTime after UpdateLease(10s) = %v, %v", lt, err)
	}
	// Released through another client's value of the same name.
	if err := connect(t).ExpirableSemaphore(name).Release(ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ids[0]); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("second Release: %v", err)
	}
	if err := s.UpdateLease(ids[0], time.Second); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("UpdateLease of a released permit: %v", err)
	}
	if _, err := s.LeaseTime(ids[0]); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("LeaseTime of a released permit: %v", err)
	}
	if err := s.Release("00112233445566778899aabbccddeeff"); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release of an unknown id: %v", err)
	}
	for _, bad := range []string{"xyz", "", "abc", ids[1] + "\x00", "\x00" + ids[1]} {
		if err := s.Release(bad); !errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("Release(%q): %v", bad, err)
		}
	}
	if err := s.Release(ids[1]); err != nil {
		t.Fatal(err)
	}
	n, err = s.AvailablePermits()
	wantInt(t, "available after the releases", n, err, 3)

	// A permit whose lease ran out before its release: ErrLost.
	id, err := s.Acquire(ctx, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the lease runs out; nobody looks
	if err := s.Release(id); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after the lease: %v", err)
	}
	n, err = s.AvailablePermits()
	wantInt(t, "available after a lost permit", n, err, 3)

	// The total can be set: the available permits follow.
	id, err = s.TryAcquire(ctx, 0, time.Minute)
	if err != nil || id == "" {
		t.Fatalf("TryAcquire = %q, %v", id, err)
	}
	if err := s.SetPermits(5); err != nil {
		t.Fatal(err)
	}
	n, err = s.AvailablePermits()
	wantInt(t, "available after SetPermits(5) with 1 out", n, err, 4)
	n, err = s.AddPermits(-2)
	wantInt(t, "AddPermits(-2)", n, err, 2)
	if err := s.Release(id); err != nil {
		t.Fatal(err)
	}
	if existed, err := s.Delete(); !existed || err != nil {
		t.Fatalf("Delete = %v, %v", existed, err)
	}
	if r.int("EXISTS", name, "{"+name+"}:timeout") != 0 {
		t.Fatal("keys survived Delete")
	}
}

// TestSyncHolderProcess is not a test: it is the body of the worker process
// of TestExpirablePermitOfAKilledHolder (this binary run again), which
// takes a permit with a lease, says its id and waits to be killed.
func TestSyncHolderProcess(t *testing.T) {
	name := os.Getenv("HILOCK_GO_TEST_XSEM")
	if os.Getenv(workerEnv) == "" || name == "" {
		t.Skip("runs only as a worker process")
	}
	lease, _ := strconv.Atoi(os.Getenv("HILOCK_GO_TEST_LEASE_MS"))
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatalf("worker connect: %v", err)
	}
	id, err := c.ExpirableSemaphore(name).Acquire(context.Background(),
		time.Duration(lease)*time.Millisecond)
	if err != nil {
		t.Fatalf("worker acquire: %v", err)
	}
	os.Stdout.WriteString("PERMIT " + id + "\n")
	time.Sleep(10 * time.Minute) // until killed
}

// A holder killed with SIGKILL gives its permit back when its lease ends,
// and a waiter gets it then: not before, not much later.
func TestExpirablePermitOfAKilledHolder(t *testing.T) {
	const leaseMs = 1500
	c := connect(t)
	name := uniqueName(t)
	s := c.ExpirableSemaphore(name)
	if ok, err := s.TrySetPermits(1); !ok || err != nil {
		t.Fatalf("TrySetPermits = %v, %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSyncHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), workerEnv+"=1", urlEnv+"="+redisURL,
		"HILOCK_GO_TEST_XSEM="+name, "HILOCK_GO_TEST_LEASE_MS="+strconv.Itoa(leaseMs))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dead string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v := strings.TrimPrefix(sc.Text(), "PERMIT "); v != sc.Text() {
			dead = v
			break
		}
	}
	acquired := time.Now() // just after the holder's acquire
	if dead == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the holder said no permit id; stderr:\n%s", stderr.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, err := s.AcquiredPermits(); n != 1 || err != nil {
		t.Fatalf("permits out after the holder died = %d, %v", n, err)
	}
	id, err := s.TryAcquire(ctx, 10*time.Second, time.Minute)
	took := time.Since(acquired)
	if err != nil || id == "" {
		t.Fatalf("TryAcquire after the holder died = %q, %v", id, err)
	}
	t.Logf("the dead holder's permit came back %v after it was taken (lease %d ms)", took, leaseMs)
	if took < leaseMs*time.Millisecond-500*time.Millisecond || took > leaseMs*time.Millisecond+3*time.Second {
		t.Fatalf("the permit came back after %v, its lease was %d ms", took, leaseMs)
	}
	if id == dead {
		t.Fatal("the new permit has the dead holder's id")
	}
	if err := s.Release(dead); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release of the dead holder's permit: %v", err)
	}
	if err := s.Release(id); err != nil {
		t.Fatal(err)
	}
}

// A permit of a client closed without releasing it comes back when its
// lease ends, and no earlier.
func TestExpirablePermitOfAClosedClient(t *testing.T) {
	c, holder := connect(t), connect(t)
	name := uniqueName(t)
	s := c.ExpirableSemaphore(name)
	if err := s.SetPermits(1); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExpirableSemaphore(name).Acquire(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	holder.Close()
	if id, err := s.TryAcquire(context.Background(), 0, time.Second); id != "" || err != nil {
		t.Fatalf("TryAcquire while the closed client's lease runs = %q, %v", id, err)
	}
	id, err := s.TryAcquire(context.Background(), 10*time.Second, time.Second)
	took := time.Since(taken)
	if err != nil || id == "" {
		t.Fatalf("TryAcquire = %q, %v", id, err)
	}
	t.Logf("came back %v after it was taken (lease 1 s)", took)
	if took < 900*time.Millisecond || took > 4*time.Second {
		t.Fatalf("came back after %v, lease 1 s", took)
	}
	if err := s.Release(id); err != nil {
		t.Fatal(err)
	}
}

func TestCountDownLatchBasics(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	l := c.CountDownLatch(name)
	if l.Name() != name {
		t.Fatalf("Name() = %q", l.Name())
	}
	n, err := l.Count()
	wantInt(t, "count of a new latch", n, err, 0)
	if err := l.Wait(ctx); err != nil { // never set: open
		t.Fatalf("Wait on a latch never set: %v", err)
	}
	if ok, err := l.TrySetCount(3); !ok || err != nil {
		t.Fatalf("TrySetCount(3) = %v, %v", ok, err)
	}
	if ok, err := l.TrySetCount(5); ok || err != nil {
		t.Fatalf("TrySetCount(5) on a set latch = %v, %v", ok, err)
	}
	n, err = l.Count()
	wantInt(t, "count", n, err, 3)
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if err := l.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a closed latch: %v", err)
	}
	cancel()
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Wait(300ms) took %v", d)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if err := l.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled ctx: %v", err)
	}
	left, err := l.CountDown()
	wantInt(t, "left", left, err, 2)
	left, err = l.CountDown()
	wantInt(t, "left", left, err, 1)
	waiter := make(chan error, 1)
	go func() { waiter <- l.Wait(ctx) }()
	waitChannelSubscribers(t, r, latchChannel(name), 1)
	select {
	case err := <-waiter:
		t.Fatalf("Wait returned at count 1: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	left, err = l.CountDown()
	wantInt(t, "left", left, err, 0)
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the open latch's key is still there")
	}
	left, err = l.CountDown() // open: nothing changes
	wantInt(t, "count down of an open latch", left, err, 0)
	if r.int("EXISTS", name) != 0 {
		t.Fatal("counting down an open latch wrote its key")
	}
	// Set again: closed for new waiters.
	if ok, err := l.TrySetCount(1); !ok || err != nil {
		t.Fatalf("TrySetCount(1) again = %v, %v", ok, err)
	}
	dctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	if err := l.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a latch set again: %v", err)
	}
	cancel()
	// Delete leaves its waiters waiting (Redisson's "1"); a new count
	// counted down to zero opens it for them.
	go func() { waiter <- l.Wait(ctx) }()
	// Waiting with its subscription active: a waiter that had not yet
	// seen the latch closed through an active subscription would take a
	// deleted latch for open (its "0" may have been missed).
	waitWaiting(t, c, 1)
	if existed, err := l.Delete(); !existed || err != nil {
		t.Fatalf("Delete = %v, %v", existed, err)
	}
	select {
	case err := <-waiter:
		t.Fatalf("Delete woke the waiter: %v", err)
	case <-time.After(700 * time.Millisecond):
	}
	if ok, err := l.TrySetCount(1); !ok || err != nil {
		t.Fatalf("TrySetCount(1) after Delete = %v, %v", ok, err)
	}
	if _, err := l.CountDown(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the count down to zero did not wake the waiter")
	}
	if existed, err := l.Delete(); existed || err != nil {
		t.Fatalf("second Delete = %v, %v", existed, err)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait on a deleted latch: %v", err)
	}
}

// A latch of 10 counted down once each by 10 goroutines on 10 other
// clients wakes every waiter of two clients, all at once, at the last
// count-down.
func TestCountDownLatchWakesAllWaiters(t *testing.T) {
	const counters, waiters = 10, 40
	a, b := connect(t), connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	if ok, err := a.CountDownLatch(name).TrySetCount(counters); !ok || err != nil {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	woke := make(chan time.Time, waiters)
	errc := make(chan error, waiters+counters)
	for i := 0; i < waiters; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		go func(l *hilock.CountDownLatch) {
			if err := l.Wait(ctx); err != nil {
				errc <- err
				return
			}
			woke <- time.Now()
		}(c.CountDownLatch(name))
	}
	if !waitFor(time.Minute, func() bool {
		return hilock.PendingTasks(a) == waiters/2 && hilock.PendingTasks(b) == waiters/2
	}) {
		t.Fatalf("waiting: %d and %d", hilock.PendingTasks(a), hilock.PendingTasks(b))
	}
	waitChannelSubscribers(t, r, latchChannel(name), 2)
	others := make([]*hilock.Client, counters)
	for i := range others {
		others[i] = connect(t)
	}
	goSignal := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < counters; i++ {
		wg.Add(1)
		go func(c *hilock.Client) {
			defer wg.Done()
			<-goSignal
			if _, err := c.CountDownLatch(name).CountDown(); err != nil {
				errc <- err
			}
		}(others[i])
	}
	select {
	case <-woke:
		t.Fatal("a waiter woke before the count-downs")
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(300 * time.Millisecond):
	}
	close(goSignal)
	wg.Wait()
	last := time.Now() // every count-down is done
	if n, err := a.CountDownLatch(name).Count(); n != 0 || err != nil {
		t.Fatalf("Count after 10 count-downs = %d, %v", n, err)
	}
	var latest time.Duration
	for i := 0; i < waiters; i++ {
		select {
		case at := <-woke:
			if d := at.Sub(last); d > latest {
				latest = d
			}
		case err := <-errc:
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d waiters not woken", waiters-i, waiters)
		}
	}
	t.Logf("%d waiters on 2 clients woken, the last %v after the last count-down", waiters, latest)
	if latest > 2*time.Second {
		t.Fatalf("a waiter woke %v after the last count-down", latest)
	}
	if hilock.PendingTasks(a)+hilock.PendingTasks(b) != 0 {
		t.Fatal("tasks left")
	}
}

// Every path with every call through a task (as when many goroutines are
// in the library).
func TestSyncTaskPaths(t *testing.T) {
	c, other := connect(t), connect(t)
	defer hilock.NoFastPath(c)()
	ctx := context.Background()
	name := uniqueName(t)

	s := c.Semaphore(name)
	if err := other.Semaphore(name).SetPermits(2); err != nil {
		t.Fatal(err)
	}
	if !s.TryAcquire(1) {
		t.Fatal("TryAcquire(1) of 2 failed")
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire(1) of none succeeded")
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if err := s.Acquire(dctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v", err)
	}
	cancel()
	n, err := s.HeldPermits()
	wantInt(t, "held", n, err, 2)
	s.Release(2)

	x := c.ExpirableSemaphore(name + ":x")
	if err := other.ExpirableSemaphore(name + ":x").SetPermits(1); err != nil {
		t.Fatal(err)
	}
	id, err := x.TryAcquire(ctx, 0, time.Minute)
	if err != nil || len(id) != 32 {
		t.Fatalf("TryAcquire = %q, %v", id, err)
	}
	if id2, err := x.TryAcquire(ctx, 100*time.Millisecond, time.Minute); id2 != "" || err != nil {
		t.Fatalf("TryAcquire of none = %q, %v", id2, err)
	}
	if lt, err := x.LeaseTime(id); err != nil || lt < 50*time.Second {
		t.Fatalf("the task's id %q: LeaseTime %v, %v", id, lt, err)
	}
	if err := x.Release(id); err != nil {
		t.Fatal(err)
	}

	l := c.CountDownLatch(name + ":l")
	if ok, err := other.CountDownLatch(name + ":l").TrySetCount(1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	dctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	if err := l.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a closed latch: %v", err)
	}
	cancel()
	go other.CountDownLatch(name + ":l").CountDown()
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
}

// Close ends the synchronizers' waiters with ErrClosed, and later calls
// say ErrClosed; a Release that cannot reach Redis goes to Logger.
func TestSyncClosedClient(t *testing.T) {
	name := uniqueName(t)
	setup := connect(t)
	if err := setup.Semaphore(name).SetPermits(1); err != nil {
		t.Fatal(err)
	}
	if ok, err := setup.CountDownLatch(name + ":l").TrySetCount(1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatal(err)
	}
	s, x, l := c.Semaphore(name), c.ExpirableSemaphore(name+":x"), c.CountDownLatch(name+":l")
	if err := s.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	const n = 10
	errc := make(chan error, 3*n)
	for i := 0; i < n; i++ {
		go func() { errc <- s.Acquire(context.Background(), 1) }()
		go func() { _, err := x.Acquire(context.Background(), hilock.NoLease); errc <- err }()
		go func() { errc <- l.Wait(context.Background()) }()
	}
	if !waitFor(10*time.Second, func() bool { return hilock.PendingTasks(c) == 3*n }) {
		t.Fatalf("only %d waiters wait", hilock.PendingTasks(c))
	}
	c.Close()
	for i := 0; i < 3*n; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, hilock.ErrClosed) {
				t.Fatalf("waiter: %v, want ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a waiter")
		}
	}
	closed := []error{
		s.Acquire(context.Background(), 1),
		s.ReleaseErr(1),
		func() error { _, err := s.AvailablePermits(); return err }(),
		func() error { _, err := s.TrySetPermits(1); return err }(),
		func() error { _, err := x.TryAcquire(context.Background(), 0, hilock.NoLease); return err }(),
		x.Release("00112233445566778899aabbccddeeff"),
		func() error { _, err := x.Permits(); return err }(),
		l.Wait(context.Background()),
		func() error { _, err := l.CountDown(); return err }(),
		func() error { _, err := l.Count(); return err }(),
	}
	for i, err := range closed {
		if !errors.Is(err, hilock.ErrClosed) {
			t.Fatalf("call %d after Close: %v", i, err)
		}
	}
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire after Close succeeded")
	}
	// Release of a closed client's permit: not misuse, so no panic; the
	// error goes to Logger.
	var logged []error
	defer func(old func(error)) { hilock.Logger = old }(hilock.Logger)
	hilock.Logger = func(err error) { logged = append(logged, err) }
	s.Release(1)
	var re *hilock.ReleaseError
	if len(logged) != 1 || !errors.As(logged[0], &re) || re.Name != name || re.Permits != 1 ||
		!errors.Is(logged[0], hilock.ErrClosed) {
		t.Fatalf("logged %v", logged)
	}
	// The permit the closed client held stays taken: it has no lease.
	if n, err := setup.Semaphore(name).AvailablePermits(); n != 0 || err != nil {
		t.Fatalf("available = %d, %v", n, err)
	}
}

func TestSyncBadInput(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	long := strings.Repeat("x", 65537)
	for _, bad := range []string{"", long} {
		s, x, l := c.Semaphore(bad), c.ExpirableSemaphore(bad), c.CountDownLatch(bad)
		errs := []error{
			s.Acquire(ctx, 1),
			s.ReleaseErr(1),
			s.SetPermits(1),
			func() error { _, err := s.AvailablePermits(); return err }(),
			func() error { _, err := s.Delete(); return err }(),
			func() error { _, err := x.Acquire(ctx, time.Second); return err }(),
			x.Release("00112233445566778899aabbccddeeff"),
			func() error { _, err := x.AcquiredPermits(); return err }(),
			l.Wait(ctx),
			func() error { _, err := l.CountDown(); return err }(),
			func() error { _, err := l.TrySetCount(1); return err }(),
		}
		for i, err := range errs {
			if !errors.Is(err, hilock.ErrInvalid) {
				t.Fatalf("name of %d bytes, call %d: %v", len(bad), i, err)
			}
		}
		if s.TryAcquire(1) {
			t.Fatal("TryAcquire with a bad name succeeded")
		}
		mustPanic(t, hilock.ErrInvalid, func() { s.Release(1) })
	}
	// Zero values.
	var zs hilock.Semaphore
	var zx hilock.ExpirableSemaphore
	var zl hilock.CountDownLatch
	if err := zs.Acquire(ctx, 1); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("zero Semaphore: %v", err)
	}
	mustPanic(t, hilock.ErrInvalid, func() { zs.Release(1) })
	if _, err := zx.Acquire(ctx, time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("zero ExpirableSemaphore: %v", err)
	}
	if err := zl.Wait(ctx); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("zero CountDownLatch: %v", err)
	}

	s, x, l := c.Semaphore(name), c.ExpirableSemaphore(name+":x"), c.CountDownLatch(name+":l")
	errs := map[string]error{
		"Acquire(-1)":                s.Acquire(ctx, -1),
		"Acquire(2^40+1)":            s.Acquire(ctx, 1<<40+1),
		"ReleaseErr(-1)":             s.ReleaseErr(-1),
		"SetPermits(-5)":             s.SetPermits(-5),
		"TrySetPermits(-1)":          func() error { _, err := s.TrySetPermits(-1); return err }(),
		"AddPermits(2^41)":           func() error { _, err := s.AddPermits(1 << 41); return err }(),
		"TryAcquireContext(-1)":      func() error { _, err := s.TryAcquireContext(ctx, -1, 0); return err }(),
		"x.AcquireN(0)":              func() error { _, err := x.AcquireN(ctx, 0, time.Second); return err }(),
		"x.AcquireN(1001)":           func() error { _, err := x.AcquireN(ctx, 1001, time.Second); return err }(),
		"x.Acquire(lease -1s)":       func() error { _, err := x.Acquire(ctx, -time.Second); return err }(),
		"x.TryAcquire(lease 2^41ms)": func() error { _, err := x.TryAcquire(ctx, 0, (1<<41)*time.Millisecond); return err }(),
		"x.UpdateLease(-1s)":         x.UpdateLease("00112233445566778899aabbccddeeff", -time.Second),
		"x.SetPermits(-1)":           x.SetPermits(-1),
		"x.Release(not hex)":         x.Release("zz112233445566778899aabbccddeeff"),
		"x.LeaseTime(\"\")":          func() error { _, err := x.LeaseTime(""); return err }(),
		"l.TrySetCount(0)":           func() error { _, err := l.TrySetCount(0); return err }(),
		"l.TrySetCount(-3)":          func() error { _, err := l.TrySetCount(-3); return err }(),
		"l.TrySetCount(2^41)":        func() error { _, err := l.TrySetCount(1 << 41); return err }(),
	}
	for what, err := range errs {
		if !errors.Is(err, hilock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	if s.TryAcquire(-1) {
		t.Fatal("TryAcquire(-1) succeeded")
	}
	mustPanic(t, hilock.ErrInvalid, func() { s.Release(-1) })
	// Nothing was written.
	if got := r.int("EXISTS", name, name+":x", "{"+name+":x}:timeout", name+":l"); got != 0 {
		t.Fatalf("%d keys written by refused calls", got)
	}
	// Binary names, a NUL byte included, are their own keys.
	bin := name + "\x00b"
	bs := c.Semaphore(bin)
	if err := bs.SetPermits(1); err != nil {
		t.Fatal(err)
	}
	if err := bs.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	bs.Release(1)
	if v, ok := r.str("GET", bin); !ok || v != "1" {
		t.Fatalf("binary-named semaphore = %q, %v", v, ok)
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the NUL byte cut the name")
	}
}
