package hilock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func TestVersion(t *testing.T) {
	if v := hilock.Version(); !strings.HasPrefix(v, "0.") {
		t.Fatalf("Version() = %q, want 0.x", v)
	}
}

func TestConnectErrors(t *testing.T) {
	ctx := context.Background()

	_, err := hilock.Connect(ctx, "http://127.0.0.1:1/")
	if !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("bad scheme: err = %v, want ErrInvalid", err)
	}
	_, err = hilock.Connect(ctx, "redis://127.0.0.1:1\x00/0")
	if !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("NUL in url: err = %v, want ErrInvalid", err)
	}
	_, err = hilock.Connect(ctx, redisURL, hilock.WithWatchdogTimeout(-time.Second))
	if !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("negative watchdog: err = %v, want ErrInvalid", err)
	}

	port, err := freePort() // nobody listens there once freePort returns
	if err != nil {
		t.Fatal(err)
	}
	_, err = hilock.Connect(ctx, "redis://127.0.0.1:"+strconv.Itoa(port)+"/0",
		hilock.WithConnectTimeout(2*time.Second), hilock.WithRetry(0, 10*time.Millisecond))
	var he *hilock.Error
	if !errors.As(err, &he) {
		t.Fatalf("refused port: err = %v, want *hilock.Error", err)
	}
	if he.Name != "HL_ECONNECT" || he.Code >= 0 || he.Message == "" || he.Op != "connect" {
		t.Errorf("refused port: %#v, want HL_ECONNECT with a message", he)
	}
	if errors.Is(err, hilock.ErrInvalid) || errors.Is(err, hilock.ErrClosed) {
		t.Errorf("refused port: %v matches an unrelated sentinel", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = hilock.Connect(cctx, redisURL); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestLockWireFormat(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	if m.Name() != name {
		t.Fatalf("Name() = %q", m.Name())
	}
	if len(c.ID()) != 36 || !strings.HasPrefix(m.Owner(), c.ID()+":") {
		t.Fatalf("client id %q, owner %q", c.ID(), m.Owner())
	}

	// A raw subscriber sees the unlock message Redisson's waiters expect.
	sub := newRedis(t)
	if _, err := sub.rc.do("SUBSCRIBE", lockChannel(name)); err != nil {
		t.Fatal(err)
	}

	m.Lock()
	fields := r.do("HGETALL", name).([]interface{})
	if len(fields) != 2 || string(fields[0].([]byte)) != m.Owner() || string(fields[1].([]byte)) != "1" {
		t.Fatalf("HGETALL %s = %q, want [%s 1]", name, fields, m.Owner())
	}
	if pttl := r.int("PTTL", name); pttl <= 0 || pttl > 30000 {
		t.Fatalf("PTTL = %d, want the 30 s watchdog lease", pttl)
	}
	if ok, err := m.IsHeld(); !ok || err != nil {
		t.Fatalf("IsHeld = %v, %v", ok, err)
	}
	if ok, err := m.IsLocked(); !ok || err != nil {
		t.Fatalf("IsLocked = %v, %v", ok, err)
	}
	if ttl, ok, err := m.TTL(); err != nil || !ok || ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("TTL = %v, %v, %v", ttl, ok, err)
	}

	m.Unlock()
	if n := r.int("EXISTS", name); n != 0 {
		t.Fatalf("key still exists after Unlock")
	}
	msg, err := sub.rc.read(5 * time.Second)
	if err != nil {
		t.Fatalf("no unlock message: %v", err)
	}
	parts := msg.([]interface{})
	if len(parts) != 3 || string(parts[0].([]byte)) != "message" || string(parts[2].([]byte)) != "0" {
		t.Fatalf("unlock message %q, want [message %s 0]", parts, lockChannel(name))
	}
	if ok, err := m.IsLocked(); ok || err != nil {
		t.Fatalf("IsLocked after Unlock = %v, %v", ok, err)
	}
	if _, ok, err := m.TTL(); ok || err != nil {
		t.Fatalf("TTL of a free lock: ok=%v err=%v", ok, err)
	}
}

func TestReentrancyIsPerMutex(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	m := c.Mutex(name)

	m.Lock()
	// Re-entering is explicit: Lock would wait for the hold, as sync.Mutex's.
	if err := m.Reenter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Reenter(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := m.HoldCount(); n != 3 || err != nil {
		t.Fatalf("HoldCount = %d, %v; want 3", n, err)
	}
	if v, _ := r.str("HGET", name, m.Owner()); v != "3" {
		t.Fatalf("hold count in redis %q, want 3", v)
	}
	for want := int64(2); want >= 0; want-- {
		if err := m.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if n, _ := m.HoldCount(); n != want {
			t.Fatalf("HoldCount = %d, want %d", n, want)
		}
		if exists := r.int("EXISTS", name); (exists == 1) != (want > 0) {
			t.Fatalf("EXISTS = %d with %d holds left", exists, want)
		}
	}
	err := m.Release()
	if !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("extra Release: %v, want ErrNotHeld", err)
	}
	var he *hilock.Error
	if !errors.As(err, &he) || he.Name != "HL_ENOTHELD" || he.Message == "" ||
		!strings.Contains(err.Error(), "HL_ENOTHELD") {
		t.Fatalf("ErrNotHeld detail: %#v", he)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
}

func TestOwnershipFollowsMutexNotGoroutine(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	m1, m2 := c.Mutex(name), c.Mutex(name)
	if m1.Owner() == m2.Owner() {
		t.Fatalf("two Mutex values share owner %s", m1.Owner())
	}

	m1.Lock()
	// Same goroutine, other Mutex: a different owner, so it must not enter.
	if ok, err := m2.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("second Mutex TryLock = %v, %v; want false", ok, err)
	}
	if err := m2.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("non-owner Release: %v, want ErrNotHeld", err)
	}
	if v, _ := r.str("HGET", name, m1.Owner()); v != "1" {
		t.Fatalf("non-owner Release touched the lock: count %q", v)
	}
	if held, _ := m2.IsHeld(); held {
		t.Fatal("m2.IsHeld() = true")
	}

	// Another goroutine on another OS thread releases m1's hold: ownership
	// belongs to the Mutex value.
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- m1.Release()
	}()
	if err := <-done; err != nil {
		t.Fatalf("Release from another goroutine: %v", err)
	}
	if ok, err := m2.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("m2 after release: %v, %v", ok, err)
	}
	m2.Unlock()
}

func TestContendingGoroutines(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name, key := uniqueName(t), uniqueName(t)+":counter"
	const goroutines, iters = 6, 15

	var inside, overlaps int32
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rc, err := dialResp(redisAddr)
			if err != nil {
				errc <- err
				return
			}
			defer rc.close()
			m := c.Mutex(name) // each goroutine its own owner
			for i := 0; i < iters; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				var err error
				if (g+i)%2 == 0 {
					err = m.LockContext(ctx)
				} else {
					var ok bool
					ok, err = m.TryLock(ctx, 30*time.Second, 0)
					if err == nil && !ok {
						err = errors.New("TryLock timed out")
					}
				}
				cancel()
				if err != nil {
					errc <- err
					return
				}
				if atomic.AddInt32(&inside, 1) != 1 {
					atomic.AddInt32(&overlaps, 1)
				}
				_, err = counterIncr(rc, key, time.Millisecond)
				atomic.AddInt32(&inside, -1)
				if err := m.Release(); err != nil {
					errc <- err
					return
				}
				if err != nil {
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
	if overlaps != 0 {
		t.Fatalf("%d times two goroutines were inside the lock together", overlaps)
	}
	if v, _ := r.str("GET", key); v != strconv.Itoa(goroutines*iters) {
		t.Fatalf("counter = %s, want %d", v, goroutines*iters)
	}
}

func TestContendingProcesses(t *testing.T) {
	r := newRedis(t)
	name, key := uniqueName(t), uniqueName(t)+":counter"
	const procs, iters = 3, 12

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	var ps []proc
	for i := 0; i < procs; i++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), workerEnv+"=1", urlEnv+"="+redisURL,
			"HILOCK_GO_TEST_LOCK="+name, "HILOCK_GO_TEST_KEY="+key,
			"HILOCK_GO_TEST_ITERS="+strconv.Itoa(iters))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, proc{cmd, out})
	}
	// This process contends too, with its own client.
	c := connect(t)
	rc, err := dialResp(redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	m := c.Mutex(name)
	for i := 0; i < iters; i++ {
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := counterIncr(rc, key, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		m.Unlock()
	}
	for i, p := range ps {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", i, err, p.out.String())
		}
	}
	if v, _ := r.str("GET", key); v != strconv.Itoa((procs+1)*iters) {
		t.Fatalf("counter = %s, want %d", v, (procs+1)*iters)
	}
}

// holdElsewhere takes name on its own client (30 s watchdog lease) so a
// waiter here would sleep for a long time unless woken or interrupted.
func holdElsewhere(t *testing.T, name string) *hilock.Mutex {
	t.Helper()
	h := connect(t).Mutex(name)
	h.Lock()
	t.Cleanup(func() { h.Release() })
	return h
}

func TestLockContextCancel(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	holder := holdElsewhere(t, name)
	m := c.Mutex(name)

	// Already cancelled: returns at once without touching the lock.
	cctx, cancel0 := context.WithCancel(context.Background())
	cancel0()
	if err := m.LockContext(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}

	// Two waiters, on two clients (so two subscriptions show in Redis).
	m2 := connect(t).Mutex(name)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { errc <- m.LockContext(ctx) }()
	go func() {
		ok, err := m2.TryLock(ctx, 20*time.Second, 0)
		if ok {
			err = errors.New("TryLock acquired a held lock")
		}
		errc <- err
	}()
	waitSubscribers(t, r, name, 2) // both waiters are asleep in the library
	start := time.Now()
	cancel()
	for i := 0; i < 2; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("waiter: %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("cancellation took %v", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter did not return after cancel")
		}
	}
	if held, _ := m.IsHeld(); held {
		t.Fatal("cancelled waiter holds the lock")
	}
	if held, _ := m2.IsHeld(); held {
		t.Fatal("cancelled TryLock holds the lock")
	}
	if held, _ := holder.IsHeld(); !held {
		t.Fatal("holder lost the lock")
	}
}

func TestContextDeadline(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	holdElsewhere(t, name)
	m := c.Mutex(name)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := m.LockContext(ctx)
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext: %v, want DeadlineExceeded", err)
	}
	if d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("LockContext returned after %v, want about 300ms", d)
	}

	// The deadline is shorter than the wait: a ctx error.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if ok, err := m.TryLock(ctx2, 20*time.Second, 0); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock past deadline = %v, %v", ok, err)
	}

	// The wait is shorter than the deadline: plain false.
	ctx3, cancel3 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel3()
	start = time.Now()
	ok, err := m.TryLock(ctx3, 200*time.Millisecond, 0)
	d = time.Since(start)
	if ok || err != nil {
		t.Fatalf("TryLock with a short wait = %v, %v; want false, nil", ok, err)
	}
	if d < 180*time.Millisecond || d > 5*time.Second {
		t.Fatalf("TryLock waited %v, want about 200ms", d)
	}
	start = time.Now()
	if ok, err := m.TryLock(ctx3, 0, 0); ok || err != nil {
		t.Fatalf("TryLock(wait 0) = %v, %v", ok, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("TryLock(wait 0) took %v", d)
	}
}

func TestWaiterWakesOnRelease(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	holder := connect(t).Mutex(name)
	holder.Lock() // 30 s lease: only the unlock message can wake the waiter soon
	m := c.Mutex(name)

	res := make(chan error, 1)
	go func() {
		ok, err := m.TryLock(context.Background(), 20*time.Second, 0)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		res <- err
	}()
	waitSubscribers(t, r, name, 1)
	start := time.Now()
	holder.Unlock()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waiter woke %v after the release", d)
	}
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("waiter's hold in redis = %q", v)
	}
	m.Unlock()
}

func TestWaiterWakesOnForeignUnlock(t *testing.T) {
	// A lock held by some other Redisson-compatible client, released by a
	// raw DEL + PUBLISH "0" as Redisson's unlock does.
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	r.do("HSET", name, "00000000-0000-0000-0000-000000000000:1", "1")
	r.do("PEXPIRE", name, "30000")
	m := c.Mutex(name)
	res := make(chan error, 1)
	go func() { res <- m.LockContext(context.Background()) }()
	waitSubscribers(t, r, name, 1)
	r.do("DEL", name)
	r.do("PUBLISH", lockChannel(name), "0")
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken by the unlock message")
	}
	m.Unlock()
}

func TestFixedLease(t *testing.T) {
	c := fastClient(t) // the watchdog runs, but must not renew a leased lock
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)

	ok, err := m.TryLock(context.Background(), 0, 1500*time.Millisecond)
	if !ok || err != nil {
		t.Fatalf("TryLock with lease = %v, %v", ok, err)
	}
	if pttl := r.int("PTTL", name); pttl <= 0 || pttl > 1500 {
		t.Fatalf("PTTL = %d, want <= 1500", pttl)
	}
	start := time.Now()
	if !waitFor(6*time.Second, func() bool { return r.int("EXISTS", name) == 0 }) {
		t.Fatal("leased lock never expired (renewed?)")
	}
	if d := time.Since(start); d < 800*time.Millisecond {
		t.Fatalf("leased lock expired after only %v", d)
	}
	// Still held when its lease ended: lost, told by the clock.
	if !waitFor(2*time.Second, func() bool { return isClosed(m.Lost()) }) {
		t.Fatal("Lost not closed for a fixed-lease hold whose lease ended")
	}
	// Its own lease ended it: lost, not "never held".
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after expiry: %v, want ErrLost", err)
	}

	// A sub-millisecond lease rounds up to 1 ms instead of meaning "watchdog".
	if ok, err := m.TryLock(context.Background(), 0, time.Microsecond); !ok || err != nil {
		t.Fatalf("TryLock(lease 1µs) = %v, %v", ok, err)
	}
	if !waitFor(3*time.Second, func() bool { return r.int("EXISTS", name) == 0 }) {
		t.Fatal("1 ms lease did not expire")
	}
	m.Release() // ErrNotHeld by now; resets the Mutex's bookkeeping
}

func TestWatchdogRenews(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	if pttl := r.int("PTTL", name); pttl <= 0 || pttl > 1000 {
		t.Fatalf("PTTL = %d, want the 1 s watchdog lease", pttl)
	}
	time.Sleep(2500 * time.Millisecond) // 2.5 leases: only renewal keeps it
	if v, _ := r.str("HGET", name, m.Owner()); v != "1" {
		t.Fatalf("lock not renewed: hold %q", v)
	}
	if pttl := r.int("PTTL", name); pttl <= 0 {
		t.Fatalf("PTTL = %d after renewal", pttl)
	}
	if isClosed(m.Lost()) {
		t.Fatal("Lost fired for a renewed lock")
	}
	m.Unlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("key left after Unlock")
	}
}

func TestLostWhenKeyVanishes(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	if m.Lost() != nil {
		t.Fatal("Lost() before the first hold is not nil")
	}
	m.Lock()
	lost := m.Lost()
	if isClosed(lost) {
		t.Fatal("Lost closed right after Lock")
	}
	work, stopWork := m.Context(context.Background())
	defer stopWork()
	if work.Err() != nil {
		t.Fatal("the hold's Context is done right after Lock")
	}
	r.do("DEL", name)
	select {
	case <-lost:
	case <-time.After(6 * time.Second):
		t.Fatal("Lost did not fire after the key vanished")
	}
	select {
	case <-work.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the hold's Context was not cancelled by the loss")
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after loss: %v, want ErrLost", err)
	}
	if m.Lost() != lost || !isClosed(m.Lost()) {
		t.Fatal("Lost() of the ended hold changed")
	}

	// A new hold gets a new channel.
	m.Lock()
	if l2 := m.Lost(); l2 == lost || isClosed(l2) {
		t.Fatal("new hold reuses the lost channel")
	}
	m.Unlock()
}

func TestLostWhenTakenByAnother(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	r.do("DEL", name)
	r.do("HSET", name, "00000000-0000-0000-0000-000000000000:7", "1")
	r.do("PEXPIRE", name, "20000")
	select {
	case <-m.Lost():
	case <-time.After(6 * time.Second):
		t.Fatal("Lost did not fire after another owner took the lock")
	}
	if ok, err := c.Mutex(name).TryLock(context.Background(), 0, 0); ok || err != nil {
		t.Fatalf("lock taken by another owner: TryLock = %v, %v", ok, err)
	}
	// Re-locking after the loss waits like anyone else.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("re-lock while another owner holds: %v", err)
	}
	r.do("DEL", name)
}

func TestNoGoroutineLeftAfterRelease(t *testing.T) {
	c := fastClient(t)
	name := uniqueName(t)
	base := runtime.NumGoroutine()
	var ms []*hilock.Mutex
	for i := 0; i < 5; i++ {
		m := c.Mutex(name + ":" + strconv.Itoa(i))
		m.Lock()
		ms = append(ms, m)
	}
	for _, m := range ms {
		_, cancel := m.Context(context.Background())
		m.Unlock()
		cancel()
	}
	if !waitFor(3*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		t.Fatalf("goroutines: %d before, %d after release", base, runtime.NumGoroutine())
	}
	time.Sleep(1200 * time.Millisecond) // more than a watchdog lease
	for _, m := range ms {
		if isClosed(m.Lost()) {
			t.Fatal("Lost fired after a normal release")
		}
	}
}

func TestCloseWakesWaitersAndStopsEverything(t *testing.T) {
	r := newRedis(t)
	busy := uniqueName(t)
	holdElsewhere(t, busy)
	base := runtime.NumGoroutine()
	c, err := hilock.Connect(context.Background(), redisURL, hilock.WithWatchdogTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held := c.Mutex(uniqueName(t))
	held.Lock()
	waiter := c.Mutex(busy)
	errc := make(chan error, 1)
	go func() { errc <- waiter.LockContext(context.Background()) }()
	waitSubscribers(t, r, busy, 1)

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, hilock.ErrClosed) {
			t.Fatalf("waiter woken with %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the waiter")
	}
	if !isClosed(held.Lost()) {
		t.Fatal("Close left the Lost channel of a watched hold open")
	}
	// Close does not unlock: the hold is still in Redis until its lease ends.
	if v, _ := r.str("HGET", held.Name(), held.Owner()); v != "1" {
		t.Fatalf("Close unlocked the lock (hold %q)", v)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	ctx := context.Background()
	if err := held.Release(); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("Release: %v", err)
	}
	if err := waiter.LockContext(ctx); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("LockContext: %v", err)
	}
	if _, err := waiter.TryLock(ctx, 0, time.Second); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("TryLock: %v", err)
	}
	if _, err := c.Mutex("x").HoldCount(); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("HoldCount: %v", err)
	}
	if _, err := c.Mutex("x").IsLocked(); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("IsLocked: %v", err)
	}
	if _, err := c.Mutex("x").ForceUnlock(); !errors.Is(err, hilock.ErrClosed) {
		t.Errorf("ForceUnlock: %v", err)
	}
	mustPanic(t, hilock.ErrClosed, c.Mutex("x").Lock)
	// Unlock does not panic for a closed client (see TestUnlockAfterCloseDoesNotPanic).

	if !waitFor(3*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", base, runtime.NumGoroutine(),
			buf[:runtime.Stack(buf, true)])
	}
	r.do("DEL", held.Name())
}

func TestForceUnlock(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	holder := connect(t).Mutex(name)
	holder.Lock()
	other := c.Mutex(name)
	if existed, err := other.ForceUnlock(); !existed || err != nil {
		t.Fatalf("ForceUnlock = %v, %v", existed, err)
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("ForceUnlock left the key")
	}
	if existed, err := other.ForceUnlock(); existed || err != nil {
		t.Fatalf("second ForceUnlock = %v, %v", existed, err)
	}
	// The holder had it, and Redis no longer does: lost.
	if err := holder.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("holder Release after ForceUnlock: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	c := connect(t)
	ctx := context.Background()

	empty := c.Mutex("")
	if err := empty.LockContext(ctx); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("empty name LockContext: %v", err)
	}
	if err := empty.Release(); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("empty name Release: %v", err)
	}
	if _, err := empty.IsLocked(); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("empty name IsLocked: %v", err)
	}
	mustPanic(t, hilock.ErrInvalid, empty.Lock)

	long := c.Mutex(strings.Repeat("n", 65537))
	if _, err := long.TryLock(ctx, 0, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("65537-byte name: %v", err)
	}
	longest := c.Mutex(strings.Repeat("n", 65536))
	if ok, err := longest.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Errorf("65536-byte name: %v, %v", ok, err)
	} else {
		longest.Unlock()
	}

	var zero hilock.Mutex
	if err := zero.LockContext(ctx); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("zero Mutex: %v", err)
	}
	if err := zero.Release(); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("zero Mutex Release: %v", err)
	}

	m := c.Mutex(uniqueName(t))
	if _, err := m.TryLock(ctx, 0, -time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("negative lease: %v", err)
	}
	if held, _ := m.IsHeld(); held {
		t.Error("a rejected TryLock took the lock")
	}
}

func TestBinarySafeName(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	base := uniqueName(t)
	name := base + "\x00tail"
	m := c.Mutex(name)
	m.Lock()
	if r.int("EXISTS", name) != 1 {
		t.Fatal("the key with a NUL byte does not exist")
	}
	if r.int("EXISTS", base) != 0 {
		t.Fatal("the name was cut at the NUL byte")
	}
	if ok, _ := c.Mutex(base).TryLock(context.Background(), 0, 0); !ok {
		t.Fatal("the prefix before the NUL is locked too")
	}
	c.Mutex(base).ForceUnlock()
	m.Unlock()
}

func TestCollectedMutexStopsRenewal(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	func() {
		m := c.Mutex(name)
		m.Lock()
	}() // the Mutex is now garbage, still holding
	gone := waitFor(8*time.Second, func() bool {
		runtime.GC()
		return r.int("EXISTS", name) == 0
	})
	if !gone {
		t.Fatal("a collected Mutex's lock is still renewed")
	}
}
