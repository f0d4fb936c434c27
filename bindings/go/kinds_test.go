package hilock_test

// The lock kinds: fair, read-write, spin, fenced, non-reentrant. Each
// excludes across goroutines and clients (an overlap check), and each has
// its own behaviour.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// exclusive is every exclusive kind, as a maker of sync.Lockers with ctx
// forms (each call a new owner).
type lockerCtx interface {
	sync.Locker
	LockContext(ctx context.Context) error
	Release() error
	Kind() string
}

var exclusiveKinds = []struct {
	kind string
	make func(c *hilock.Client, name string) lockerCtx
}{
	{"fair", func(c *hilock.Client, n string) lockerCtx { return c.FairMutex(n) }},
	{"fair-nonreentrant", func(c *hilock.Client, n string) lockerCtx {
		return c.FairMutex(n, hilock.NonReentrant())
	}},
	{"nonreentrant", func(c *hilock.Client, n string) lockerCtx { return c.Mutex(n, hilock.NonReentrant()) }},
	{"spin", func(c *hilock.Client, n string) lockerCtx {
		return c.SpinMutex(n, hilock.WithBackoff(time.Millisecond, 10*time.Millisecond, 2))
	}},
	{"fenced", func(c *hilock.Client, n string) lockerCtx { return c.FencedMutex(n) }},
	{"write", func(c *hilock.Client, n string) lockerCtx { return c.RWMutex(n) }},
}

func TestKindsExclusion(t *testing.T) {
	clients := []*hilock.Client{connect(t), connect(t)}
	r := newRedis(t)
	for _, k := range exclusiveKinds {
		k := k
		t.Run(k.kind, func(t *testing.T) {
			name := uniqueName(t)
			const goroutines, iters = 6, 10
			var inside, overlaps, entries int32
			var wg sync.WaitGroup
			errc := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					m := k.make(clients[g%2], name) // each goroutine its own owner
					if m.Kind() != k.kind {
						errc <- errors.New("kind " + m.Kind())
						return
					}
					for i := 0; i < iters; i++ {
						if i%2 == 0 {
							m.Lock() // the sync.Locker form
						} else {
							ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
							err := m.LockContext(ctx)
							cancel()
							if err != nil {
								errc <- err
								return
							}
						}
						if atomic.AddInt32(&inside, 1) != 1 {
							atomic.AddInt32(&overlaps, 1)
						}
						atomic.AddInt32(&entries, 1)
						time.Sleep(time.Millisecond)
						atomic.AddInt32(&inside, -1)
						if i%2 == 0 {
							m.Unlock()
						} else if err := m.Release(); err != nil {
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
				t.Fatalf("%d times two goroutines were inside the %s lock together", overlaps, k.kind)
			}
			if entries != goroutines*iters {
				t.Fatalf("%d critical sections, want %d", entries, goroutines*iters)
			}
			if n := r.int("EXISTS", name); n != 0 {
				t.Fatalf("the lock is left in Redis")
			}
		})
	}
}

func TestKindNamesAndOptionMisuse(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	for _, tc := range []struct {
		m    *hilock.Mutex
		kind string
	}{
		{c.Mutex(name), "reentrant"},
		{c.Mutex(name, hilock.NonReentrant()), "nonreentrant"},
		{c.FairMutex(name), "fair"},
		{c.FairMutex(name, hilock.NonReentrant()), "fair-nonreentrant"},
		{c.SpinMutex(name), "spin"},
		{c.FencedMutex(name).Mutex, "fenced"},
		{c.RWMutex(name).Writer(), "write"},
		{c.RWMutex(name).Reader(), "read"},
	} {
		if got := tc.m.Kind(); got != tc.kind {
			t.Errorf("Kind() = %q, want %q", got, tc.kind)
		}
	}
	// an option of another kind is reported by every method, saying why
	for _, tc := range []struct {
		m    *hilock.Mutex
		want string
	}{
		{c.Mutex(name, hilock.WithBackoff(time.Millisecond, time.Second, 2)), "WithBackoff is for SpinMutex"},
		{c.FairMutex(name, hilock.WithBackoff(time.Millisecond, time.Second, 2)), "fair lock"},
		{c.SpinMutex(name, hilock.NonReentrant()), "no non-reentrant form"},
		{c.SpinMutex(name, hilock.WithBackoff(0, time.Second, 2)), "0 < initial <= max"},
		{c.SpinMutex(name, hilock.WithBackoff(time.Second, time.Millisecond, 2)), "0 < initial <= max"},
		{c.SpinMutex(name, hilock.WithBackoff(time.Millisecond, time.Second, 0)), "multiplier 0"},
		{c.FairMutex(""), "empty lock name"},
	} {
		err := tc.m.LockContext(context.Background())
		if !errors.Is(err, hilock.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LockContext: err = %v, want ErrInvalid saying %q", err, tc.want)
		}
		if _, err := tc.m.IsLocked(); !errors.Is(err, hilock.ErrInvalid) {
			t.Errorf("IsLocked: err = %v, want ErrInvalid", err)
		}
	}
	if err := c.Mutex(name, nil).LockContext(context.Background()); err != nil {
		t.Fatalf("a nil option: %v", err) // ignored
	}
	if _, err := hilock.Connect(context.Background(), redisURL,
		hilock.WithFairWaitTimeout(-time.Second)); !errors.Is(err, hilock.ErrInvalid) {
		t.Errorf("negative fair wait timeout: err = %v, want ErrInvalid", err)
	}
}

func TestNonReentrantRelockIsDeadlock(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	for _, m := range []*hilock.Mutex{
		c.Mutex(uniqueName(t), hilock.NonReentrant()),
		c.FairMutex(uniqueName(t), hilock.NonReentrant()),
	} {
		ctx := context.Background()
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		// the explicit re-entry is refused by Redis's non-reentrant lock
		err := m.Reenter(ctx)
		var he *hilock.Error
		if !errors.Is(err, hilock.ErrDeadlock) || !errors.As(err, &he) || he.Name != "HL_EDEADLK" ||
			!strings.Contains(err.Error(), "non-reentrant") {
			t.Fatalf("%s: Reenter: err = %v, want ErrDeadlock", m.Kind(), err)
		}
		if errors.Is(err, hilock.ErrNotHeld) || errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("%v matches an unrelated sentinel", err)
		}
		// locking the held Mutex again waits, as sync.Mutex's Lock does
		if ok, err := m.TryLock(ctx, 0, 0); ok || err != nil {
			t.Fatalf("%s: TryLock = %v, %v, want false, nil", m.Kind(), ok, err)
		}
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err = m.LockContext(dctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: second LockContext: err = %v, want DeadlineExceeded", m.Kind(), err)
		}
		if n, err := m.HoldCount(); err != nil || n != 1 {
			t.Fatalf("%s: hold count %d, %v after refused re-entries, want 1", m.Kind(), n, err)
		}
		// another Mutex (another owner) waits, then gets it
		other := c.Mutex(m.Name(), hilock.NonReentrant())
		if m.Kind() == "fair-nonreentrant" {
			other = c.FairMutex(m.Name(), hilock.NonReentrant())
		}
		got := make(chan error, 1)
		go func() { got <- other.LockContext(ctx) }()
		select {
		case err := <-got:
			t.Fatalf("%s: another owner got the held lock: %v", m.Kind(), err)
		case <-time.After(200 * time.Millisecond):
		}
		m.Unlock()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		other.Unlock()
		if r.int("EXISTS", m.Name()) != 0 {
			t.Fatal("the lock is left in Redis")
		}
	}
}

func TestFairMutexQueueOrder(t *testing.T) {
	r := newRedis(t)
	name := uniqueName(t)
	queue := "redisson_lock_queue:{" + name + "}"
	holder := connect(t).FairMutex(name)
	holder.Lock()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		m := connect(t).FairMutex(name) // four clients, four "processes"
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m.Lock()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			m.Unlock()
		}(i)
		// the next one starts once this one is in Redis's queue
		if !waitFor(10*time.Second, func() bool { return r.int("LLEN", queue) == int64(i+1) }) {
			t.Fatalf("waiter %d did not queue", i)
		}
	}
	holder.Unlock()
	wg.Wait()
	if len(order) != 4 || order[0] != 0 || order[1] != 1 || order[2] != 2 || order[3] != 3 {
		t.Fatalf("order %v, want [0 1 2 3]", order)
	}
	if r.int("LLEN", queue) != 0 {
		t.Fatal("the queue is left in Redis")
	}
}

func TestFairWaitTimeoutReachesTheQueue(t *testing.T) {
	r := newRedis(t)
	name := uniqueName(t)
	holder := connect(t, hilock.WithWatchdogTimeout(2*time.Second)).FairMutex(name)
	holder.Lock()
	wc := connect(t, hilock.WithFairWaitTimeout(100*time.Second))
	waiter := wc.FairMutex(name)
	done := make(chan error, 1)
	go func() {
		err := waiter.LockContext(context.Background()) // no wait of its own
		if err == nil {
			err = waiter.Release()
		}
		done <- err
	}()
	zset := "redisson_lock_timeout:{" + name + "}"
	if !waitFor(10*time.Second, func() bool { return r.int("ZCARD", zset) == 1 }) {
		t.Fatal("the waiter did not queue")
	}
	v := r.do("ZRANGE", zset, "0", "0", "WITHSCORES").([]interface{})
	if !strings.HasPrefix(string(v[0].([]byte)), wc.ID()+":") {
		t.Fatalf("queued %q, not the waiter", v[0])
	}
	score, _ := strconv.ParseFloat(string(v[1].([]byte)), 64)
	tm := r.do("TIME").([]interface{})
	secs, _ := strconv.ParseInt(string(tm[0].([]byte)), 10, 64)
	us, _ := strconv.ParseInt(string(tm[1].([]byte)), 10, 64)
	ahead := int64(score) - (secs*1000 + us/1000)
	// the holder's lease (at most 2 s) plus 100 s, not the default 300 s
	if ahead < 99000 || ahead > 103000 {
		t.Fatalf("the waiter's deadline is %d ms ahead, want about 100 s", ahead)
	}
	holder.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRWMutexReadersShareWriterAlone(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	const readers = 3
	var wg sync.WaitGroup
	allIn := make(chan struct{}, readers)
	leave := make(chan struct{})
	for i := 0; i < readers; i++ {
		rw := c.RWMutex(name) // each reader its own owner
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw.RLock()
			allIn <- struct{}{}
			<-leave
			rw.RUnlock()
		}()
	}
	for i := 0; i < readers; i++ {
		select {
		case <-allIn: // every reader is inside at once
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d readers got in together", i)
		}
	}
	if mode, _ := r.str("HGET", name, "mode"); mode != "read" {
		t.Fatalf("mode %q, want read", mode)
	}
	w := connect(t).RWMutex(name)
	ctx := context.Background()
	if ok, err := w.TryLock(ctx, 200*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("a writer got in among readers: %v, %v", ok, err)
	}
	// a reader of another client joins them
	if ok, err := w.Reader().TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("a reader was kept out: %v, %v", ok, err)
	}
	w.RUnlock()
	close(leave)
	wg.Wait()
	// now the writer is alone: readers and writers wait
	w.Lock()
	if mode, _ := r.str("HGET", name, "mode"); mode != "write" {
		t.Fatalf("mode %q, want write", mode)
	}
	other := c.RWMutex(name)
	if ok, err := other.Reader().TryLock(ctx, 200*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("a reader got in with a writer: %v, %v", ok, err)
	}
	if ok, err := other.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("a second writer got in: %v, %v", ok, err)
	}
	w.Unlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the lock is left in Redis")
	}
}

// Readers may be inside together, a writer always alone; RLocker is a
// sync.Locker that takes the read half.
func TestRWMutexMixedNeverOverlapsAWriter(t *testing.T) {
	clients := []*hilock.Client{connect(t), connect(t)}
	name := uniqueName(t)
	const goroutines, iters = 6, 10
	var mu sync.Mutex
	var readers, writers, bad int
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rw := clients[g%2].RWMutex(name)
			var rl sync.Locker = rw.RLocker()
			for i := 0; i < iters; i++ {
				writing := (g+i)%3 == 0
				if writing {
					rw.Lock()
				} else {
					rl.Lock()
				}
				mu.Lock()
				if writing {
					writers++
				} else {
					readers++
				}
				if writers > 1 || (writers > 0 && readers > 0) {
					bad++
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				if writing {
					writers--
				} else {
					readers--
				}
				mu.Unlock()
				if writing {
					rw.Unlock()
				} else {
					rl.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	if bad != 0 {
		t.Fatalf("%d times a writer was not alone", bad)
	}
}

func TestRWMutexRules(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	rw := c.RWMutex(name)
	ctx := context.Background()
	// the writer holds no read hold: releasing one is "not held"
	rw.Lock()
	if err := rw.Reader().Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("read release by the writer: %v, want ErrNotHeld", err)
	}
	mustPanic(t, hilock.ErrNotHeld, rw.RUnlock)
	// a read lock of the write-locked RWMutex waits, as sync.RWMutex's
	if ok, err := rw.Reader().TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("TryLock of the read half by the writer's RWMutex = %v, %v", ok, err)
	}
	// the writer may read (explicitly), and keeps reading after writing
	if err := rw.Reader().Reenter(ctx); err != nil {
		t.Fatal(err)
	}
	rw.Unlock()
	if mode, _ := r.str("HGET", name, "mode"); mode != "read" {
		t.Fatalf("mode %q after the write release, want read", mode)
	}
	// readers of the same RWMutex join the read hold (the owner's count)
	if ok, err := rw.Reader().TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("a second reader of the RWMutex = %v, %v", ok, err)
	}
	if n, err := rw.Reader().HoldCount(); n != 2 || err != nil {
		t.Fatalf("read hold count %d, %v, want 2", n, err)
	}
	rw.RUnlock()
	// a reader asking for the write lock would wait for itself: Reenter
	// says so, Lock waits (for the readers, as sync.RWMutex's)
	if err := rw.Reenter(ctx); !errors.Is(err, hilock.ErrDeadlock) {
		t.Fatalf("write re-entry by a reader: %v, want ErrDeadlock", err)
	}
	if ok, err := rw.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("TryLock by a reader: %v, %v, want false", ok, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := rw.LockContext(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write lock by a reader: %v, want DeadlineExceeded", err)
	}
	if err := rw.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("write release by a reader: %v, want ErrNotHeld", err)
	}
	rw.RUnlock()
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the lock is left in Redis")
	}
}

func TestSpinMutexWaitsWithoutPubSub(t *testing.T) {
	r := newRedis(t)
	name := uniqueName(t)
	plain := connect(t).Mutex(name)
	plain.Lock() // the same hash: spin and plain locks exclude each other
	spin := connect(t).SpinMutex(name, hilock.WithBackoff(5*time.Millisecond, 20*time.Millisecond, 2))
	got := make(chan time.Time, 1)
	go func() {
		spin.Lock()
		got <- time.Now()
		spin.Unlock()
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("the spin lock got a held lock")
	default:
	}
	v := r.do("PUBSUB", "NUMSUB", lockChannel(name)).([]interface{})
	if v[1].(int64) != 0 {
		t.Fatalf("%d subscribers: a spin waiter subscribed", v[1])
	}
	t0 := time.Now()
	plain.Unlock()
	select {
	case at := <-got:
		if d := at.Sub(t0); d > 2*time.Second {
			t.Fatalf("the spin waiter took %v after the release", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the spin waiter never got the lock")
	}
}

func TestFencedTokensStrictlyIncrease(t *testing.T) {
	clients := []*hilock.Client{connect(t), connect(t)}
	r := newRedis(t)
	name := uniqueName(t)
	f := clients[0].FencedMutex(name)
	if tok, err := f.LastToken(); err != nil || tok != 0 {
		t.Fatalf("LastToken before any = %d, %v", tok, err)
	}
	if _, err := f.Token(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Token without a hold: %v, want ErrNotHeld", err)
	}
	var mu sync.Mutex
	var seen []int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			f := clients[g%2].FencedMutex(name)
			for i := 0; i < 8; i++ {
				f.Lock()
				tok, err := f.Token()
				if err == nil {
					err = f.Reenter(context.Background()) // a re-entry takes the next token
				}
				if err == nil {
					var tok2 int64
					tok2, err = f.Token()
					if err == nil && tok2 != tok+1 {
						err = errors.New("re-entry token " + strconv.FormatInt(tok2, 10) +
							" after " + strconv.FormatInt(tok, 10))
					}
					f.Unlock()
				}
				mu.Lock()
				seen = append(seen, tok, tok+1)
				mu.Unlock()
				f.Unlock()
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
	// in the order the holders took them: 1, 2, ..., 64
	for i, tok := range seen {
		if tok != int64(i+1) {
			t.Fatalf("token %d at %d: %v", tok, i, seen)
		}
	}
	if tok, err := clients[1].FencedMutex(name).LastToken(); err != nil || tok != 64 {
		t.Fatalf("LastToken = %d, %v, want 64", tok, err)
	}
	if v, _ := r.str("GET", "redisson_lock_token:{"+name+"}"); v != "64" {
		t.Fatalf("token key %q", v)
	}
	if _, err := f.Token(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Token after release: %v, want ErrNotHeld", err)
	}
	var zero hilock.FencedMutex
	if _, err := zero.Token(); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("Token of a zero FencedMutex: %v, want ErrInvalid", err)
	}
}
