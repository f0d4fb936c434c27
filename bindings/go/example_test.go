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
