package hilock_test

import (
	"context"
	"fmt"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// Examples are compiled but not run (they need a Redis).

func Example() {
	ctx := context.Background()
	c, err := hilock.Connect(ctx, "redis://127.0.0.1:6379/0",
		hilock.WithWatchdogTimeout(30*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m := c.Mutex("orders:42")
	m.Lock() // sync.Locker: waits as long as it takes, panics on failure
	defer m.Unlock()
	fmt.Println("holding", m.Name())
}

func ExampleMutex_LockContext() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := c.Mutex("orders:42")
	if err := m.LockContext(ctx); err != nil {
		fmt.Println("not locked:", err) // context.DeadlineExceeded, hilock.ErrClosed...
		return
	}
	defer m.Release()

	// Stop working if the watchdog finds the lock lost.
	select {
	case <-m.Lost():
		fmt.Println("lock lost")
	case <-time.After(time.Second): // the work
	}
}

// Goroutines sharing one Mutex exclude each other, as with sync.Mutex;
// code running under the lock that needs it again re-enters explicitly.
func ExampleMutex_Reenter() {
	ctx := context.Background()
	c, err := hilock.Connect(ctx, "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m := c.Mutex("orders:42")
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			m.Lock() // one goroutine at a time
			defer m.Unlock()
			done <- struct{}{}
		}()
	}
	for i := 0; i < 4; i++ {
		<-done
	}

	m.Lock()
	defer m.Unlock()
	if err := m.Reenter(ctx); err != nil { // hold count 2 in Redis
		fmt.Println(err)
		return
	}
	defer m.Unlock() // each hold is given back; the lock is free after both
}

func ExampleMutex_TryLock() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m := c.Mutex("reports:daily")
	// Wait up to 100ms; hold for at most 10s without renewal.
	ok, err := m.TryLock(context.Background(), 100*time.Millisecond, 10*time.Second)
	switch {
	case err != nil:
		fmt.Println(err)
	case !ok:
		fmt.Println("someone else is on it")
	default:
		defer m.Release()
		fmt.Println("generating the report")
	}
}

func ExampleClient_FairMutex() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m := c.FairMutex("jobs:queue") // waiters of every process in arrival order
	m.Lock()
	defer m.Unlock()
	fmt.Println("my turn")
}

func ExampleClient_RWMutex() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	rw := c.RWMutex("catalog")
	rw.RLock() // shared with every other reader
	fmt.Println("reading")
	rw.RUnlock()

	if err := rw.LockContext(context.Background()); err != nil { // alone
		fmt.Println(err)
		return
	}
	defer rw.Unlock()
	fmt.Println("writing")
}

func ExampleFencedMutex_Token() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	f := c.FencedMutex("ledger")
	if err := f.LockContext(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer f.Unlock()
	token, err := f.Token()
	if err != nil {
		fmt.Println(err)
		return
	}
	// The ledger refuses writes with a token older than one it has seen.
	fmt.Println("writing with fence", token)
}

func ExampleClient_Semaphore() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// At most 3 exports at once across every process. The first process
	// to get here creates the semaphore; the others find it.
	s := c.Semaphore("exports")
	if _, err := s.TrySetPermits(3); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Acquire(ctx, 1); err != nil {
		fmt.Println("no permit:", err) // context.DeadlineExceeded, hilock.ErrClosed...
		return
	}
	defer s.Release(1) // panics only if this client gives back more than it took
	fmt.Println("exporting")
}

// A *Semaphore goes where code expects golang.org/x/sync/semaphore's
// *Weighted, through an interface of the methods it calls.
func ExampleSemaphore_xSync() {
	type weighted interface {
		Acquire(ctx context.Context, n int64) error
		TryAcquire(n int64) bool
		Release(n int64)
	}
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	var sem weighted = c.Semaphore("uploads") // was: semaphore.NewWeighted(8)
	if sem.TryAcquire(2) {
		defer sem.Release(2)
		fmt.Println("two uploads")
	}
}

func ExampleClient_ExpirableSemaphore() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	s := c.ExpirableSemaphore("gpu-slots")
	if _, err := s.TrySetPermits(4); err != nil {
		fmt.Println(err)
		return
	}
	// If this process dies, the slot comes back within 30s.
	id, err := s.TryAcquire(context.Background(), 5*time.Second, 30*time.Second)
	switch {
	case err != nil:
		fmt.Println(err)
	case id == "":
		fmt.Println("no slot free within 5s")
	default:
		defer s.Release(id)
		// Working longer than planned: another 30s from now.
		if err := s.UpdateLease(id, 30*time.Second); err != nil {
			fmt.Println("slot lost:", err) // hilock.ErrNotHeld: its lease ended
			return
		}
		fmt.Println("training with slot", id)
	}
}

func ExampleClient_CountDownLatch() {
	c, err := hilock.Connect(context.Background(), "redis://127.0.0.1:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The coordinator expects 3 workers, which may run in other processes.
	l := c.CountDownLatch("batch:42:ready")
	if _, err := l.TrySetCount(3); err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 3; i++ {
		go func() {
			// ... a worker's part ...
			if _, err := c.CountDownLatch("batch:42:ready").CountDown(); err != nil {
				fmt.Println(err)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Wait(ctx); err != nil { // like sync.WaitGroup.Wait, with a ctx
		fmt.Println("not ready:", err)
		return
	}
	fmt.Println("all 3 ready")
}
