package hilock_test

// Waiting goroutines pin no OS thread: 10,000 of them wait for locks while
// the process runs at most GOMAXPROCS + 16 threads, then all get their lock
// in turn; a cancelled crowd leaves nothing held; every path of Lock and
// Release works through tasks.

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// osThreads is the process's thread count as the kernel has it.
func osThreads(t testing.TB) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v := strings.TrimPrefix(s.Text(), "Threads:"); v != s.Text() {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

func TestTenThousandWaitersFewThreads(t *testing.T) {
	if inChild(t) {
		return
	}
	const locks, perLock = 100, 100
	c := connect(t)
	base := uniqueName(t)
	names := make([]string, locks)
	holders := make([]*hilock.Mutex, locks)
	for i := range names {
		names[i] = base + ":" + strconv.Itoa(i)
		holders[i] = c.Mutex(names[i])
		holders[i].Lock()
	}
	inside := make([]int32, locks)
	var overlap, got int32
	var wg sync.WaitGroup
	errc := make(chan error, locks*perLock)
	for i := 0; i < locks*perLock; i++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			m := c.Mutex(names[k])
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := m.LockContext(ctx); err != nil {
				errc <- err
				return
			}
			if atomic.AddInt32(&inside[k], 1) != 1 {
				atomic.StoreInt32(&overlap, 1)
			}
			atomic.AddInt32(&got, 1)
			atomic.AddInt32(&inside[k], -1)
			if err := m.Release(); err != nil {
				errc <- err
			}
		}(i % locks)
	}
	if !waitFor(2*time.Minute, func() bool { return hilock.PendingTasks(c) == locks*perLock }) {
		t.Fatalf("only %d of %d waiters are waiting", hilock.PendingTasks(c), locks*perLock)
	}
	time.Sleep(200 * time.Millisecond)
	n, limit := osThreads(t), runtime.GOMAXPROCS(0)+16
	t.Logf("%d goroutines waiting on %d locks: %d OS threads (GOMAXPROCS %d)",
		locks*perLock, locks, n, runtime.GOMAXPROCS(0))
	if n > limit {
		t.Fatalf("%d OS threads while %d goroutines wait, want at most %d", n, locks*perLock, limit)
	}
	if g := atomic.LoadInt32(&got); g != 0 {
		t.Fatalf("%d waiters got a held lock", g)
	}
	start := time.Now()
	for _, h := range holders {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("only %d of %d waiters got their lock", atomic.LoadInt32(&got), locks*perLock)
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("all %d acquired in turn in %v; %d OS threads now", locks*perLock,
		time.Since(start), osThreads(t))
	if atomic.LoadInt32(&got) != locks*perLock || atomic.LoadInt32(&overlap) != 0 {
		t.Fatalf("got %d, overlap %d", got, overlap)
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
	for _, h := range holders {
		if locked, _ := h.IsLocked(); locked {
			t.Fatalf("%s still locked", h.Name())
		}
	}
}

func TestCancelManyWaitersLeavesNothingHeld(t *testing.T) {
	const n = 1000
	c := connect(t)
	name := uniqueName(t)
	holder := connect(t).Mutex(name)
	holder.Lock()
	ms := make([]*hilock.Mutex, n)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, n)
	for i := range ms {
		ms[i] = c.Mutex(name)
		go func(m *hilock.Mutex) { errc <- m.LockContext(ctx) }(ms[i])
	}
	if !waitFor(time.Minute, func() bool { return hilock.PendingTasks(c) == n }) {
		t.Fatalf("only %d of %d waiters are waiting", hilock.PendingTasks(c), n)
	}
	// The holder lets go as the crowd is cancelled: whichever waiter the
	// hand-off reaches is either cancelled with nothing held, or holds it.
	start := time.Now()
	go holder.Release()
	cancel()
	held := 0
	for i := 0; i < n; i++ {
		select {
		case err := <-errc:
			if err == nil {
				held++
				continue
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("waiter: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d waiters did not return after cancel", n-i)
		}
	}
	t.Logf("%d waiters cancelled in %v (%d got the lock first)", n, time.Since(start), held)
	if held > 1 {
		t.Fatalf("%d waiters hold the lock at once", held)
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
	holding := 0
	for _, m := range ms {
		if h, err := m.IsHeld(); err != nil {
			t.Fatal(err)
		} else if h {
			holding++
			if err := m.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if holding != held {
		t.Fatalf("%d waiters hold the lock in Redis, %d said so", holding, held)
	}
	// Nothing queued is left behind: a new waiter gets it at once.
	ok, err := c.Mutex(name).TryLock(context.Background(), 5*time.Second, time.Second)
	if !ok || err != nil {
		t.Fatalf("TryLock after the cancel = %v, %v", ok, err)
	}
}

// Lock, TryLock, Release, reentrancy, deadlines and errors, with every call
// going through a task.
func TestTaskPaths(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	defer hilock.NoFastPath(c)()
	name := uniqueName(t)
	m := c.Mutex(name)
	ctx := context.Background()

	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Reenter(ctx); err != nil { // re-entry, through a task too
		t.Fatal(err)
	}
	if v, _ := r.str("HGET", name, m.Owner()); v != "2" {
		t.Fatalf("hold count %q, want 2", v)
	}
	other := c.Mutex(name)
	if ok, err := other.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("TryLock(0) of a held lock = %v, %v", ok, err)
	}
	start := time.Now()
	if ok, err := other.TryLock(ctx, 300*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("TryLock(300ms) = %v, %v", ok, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TryLock(300ms) took %v", d)
	}
	dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if err := other.LockContext(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext past its deadline: %v", err)
	}
	dcancel()
	// A waiter through a task gets it when both holds are released.
	got := make(chan error, 1)
	go func() { got <- other.LockContext(ctx) }()
	waitSubscribers(t, r, name, 1)
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("waiter returned while a hold remains: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken")
	}
	if held, _ := other.IsHeld(); !held {
		t.Fatal("waiter does not hold it")
	}
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	// The release task's errors are the release's.
	if err := m.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release of nothing: %v", err)
	}
	var e *hilock.Error
	if err := m.Release(); !errors.As(err, &e) || e.Op != "unlock" || !strings.Contains(e.Message, name) {
		t.Fatalf("Release error %#v", err)
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
}

// Close ends waiters that wait through tasks, and the task goroutine.
func TestCloseEndsTaskWaiters(t *testing.T) {
	name := uniqueName(t)
	holdElsewhere(t, name)
	base := runtime.NumGoroutine()
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatal(err)
	}
	release := hilock.NoFastPath(c)
	const n = 50
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { errc <- c.Mutex(name).LockContext(context.Background()) }()
	}
	if !waitFor(10*time.Second, func() bool { return hilock.PendingTasks(c) == n }) {
		t.Fatalf("only %d waiters wait", hilock.PendingTasks(c))
	}
	c.Close()
	for i := 0; i < n; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, hilock.ErrClosed) {
				t.Fatalf("waiter: %v, want ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a waiter")
		}
	}
	release()
	if !waitFor(3*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		t.Fatalf("goroutines: %d before, %d after Close", base, runtime.NumGoroutine())
	}
}
