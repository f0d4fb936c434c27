package hilock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// server is a throwaway redis-server of one test.
type server struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

func (s *server) url() string { return "redis://" + s.addr + "/0" }

// stop kills it (a server that is down).
func (s *server) stop() {
	s.cmd.Process.Kill()
	<-s.exited
}

func startServer(t testing.TB) *server {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	dir := t.TempDir()
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{})}
		s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.cmd.Wait(); close(s.exited) }()
		if waitRedis(s.addr, s.exited, 10*time.Second) {
			t.Cleanup(func() {
				select {
				case <-s.exited:
				default:
					s.stop()
				}
			})
			return s
		}
		s.stop()
	}
	t.Fatal("redis-server did not start")
	return nil
}

// threeServers starts three servers and connects a client to each, quick
// to give up on a server that goes away.
func threeServers(t *testing.T) ([]*server, []*hilock.Client) {
	var srv []*server
	var cli []*hilock.Client
	for i := 0; i < 3; i++ {
		srv = append(srv, startServer(t))
	}
	for _, s := range srv {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		c, err := hilock.Connect(ctx, s.url(), hilock.WithConnectTimeout(500*time.Millisecond),
			hilock.WithCommandTimeout(500*time.Millisecond), hilock.WithRetry(4, 100*time.Millisecond))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cli = append(cli, c)
	}
	return srv, cli
}

func rawOf(t *testing.T, s *server) *redis {
	rc, err := dialResp(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.close)
	return &redis{t: t, rc: rc}
}

func mutexes(cli []*hilock.Client, name string) []*hilock.Mutex {
	var ms []*hilock.Mutex
	for _, c := range cli {
		ms = append(ms, c.Mutex(name))
	}
	return ms
}

func TestMultiLockAllOrNothing(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	ms := mutexes(cli, name)
	ml := hilock.NewMultiLock(ms...)
	if ml.Quorum() != 3 || len(ml.Mutexes()) != 3 {
		t.Fatalf("Quorum %d, %d Mutexes", ml.Quorum(), len(ml.Mutexes()))
	}
	other, err := hilock.Connect(context.Background(), srv[1].url())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held := other.Mutex(name)
	held.Lock()

	t0 := time.Now()
	ok, err := ml.TryLock(context.Background(), 400*time.Millisecond, 0)
	if ok || err != nil {
		t.Fatalf("TryLock with a member held elsewhere = %v, %v", ok, err)
	}
	if d := time.Since(t0); d < 350*time.Millisecond || d > 3*time.Second {
		t.Fatalf("TryLock took %v, want about its 400 ms wait", d)
	}
	for _, i := range []int{0, 2} {
		if n := rawOf(t, srv[i]).int("EXISTS", name); n != 0 {
			t.Fatalf("member %d left held after a failed TryLock", i)
		}
	}
	if ok, _ := held.IsHeld(); !ok {
		t.Fatal("the other client's hold was touched")
	}

	// the context's deadline bounds the wait too
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = ml.LockContext(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext with a deadline: %v", err)
	}
	if n := rawOf(t, srv[0]).int("EXISTS", name); n != 0 {
		t.Fatal("member 0 left held after a deadline")
	}

	held.Unlock()
	ml.Lock()
	for i, m := range ms {
		if v, _ := rawOf(t, srv[i]).str("HGET", name, m.Owner()); v != "1" {
			t.Fatalf("member %d: field %s = %q", i, m.Owner(), v)
		}
		if n, err := m.HoldCount(); n != 1 || err != nil {
			t.Fatalf("member %d HoldCount = %d, %v", i, n, err)
		}
	}
	if !ml.Until().IsZero() {
		t.Fatal("a watchdog hold has an Until")
	}
	if err := ml.Reenter(context.Background()); err != nil { // re-entered explicitly
		t.Fatal(err)
	}
	if n, _ := ms[2].HoldCount(); n != 2 {
		t.Fatalf("HoldCount after reentry = %d", n)
	}
	ml.Unlock()
	ml.Unlock()
	for i := range ms {
		if n := rawOf(t, srv[i]).int("EXISTS", name); n != 0 {
			t.Fatalf("member %d still held after Unlock", i)
		}
	}
	mustPanic(t, hilock.ErrNotHeld, ml.Unlock)
	if err := ml.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release of nothing: %v", err)
	}
}

// An uncontended MultiLock or RedLock, with or without a wait, is one
// blocking round on the caller's thread: its acquire and its release start
// no task (no thread hand-off); through tasks (NoFastPath) each starts one.
// A RedLock with time to wait does not stop at a quorum in that round: a
// member held elsewhere gets its share of the wait, as in the task's
// rounds (TestMultiLockCancelLeavesNothingHeld); with no wait, one round
// with a quorum is the RedLock's answer.
func TestMultiLockUncontendedStartsNoTask(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	ctx := context.Background()
	for _, red := range []bool{false, true} {
		for _, wait := range []time.Duration{-1, 0, time.Second} {
			ms := mutexes(cli, name)
			ml := hilock.NewMultiLock(ms...)
			if red {
				ml = hilock.NewRedLock(ms...)
			}
			before := hilock.TasksStarted(cli[0])
			ok, err := ml.TryLock(ctx, wait, 0)
			if !ok || err != nil {
				t.Fatalf("red %v wait %v: TryLock %v, %v", red, wait, ok, err)
			}
			for i, m := range ms {
				if n, err := m.HoldCount(); n != 1 || err != nil {
					t.Fatalf("red %v wait %v: member %d HoldCount %d, %v", red, wait, i, n, err)
				}
			}
			if err := ml.Release(); err != nil {
				t.Fatalf("red %v wait %v: Release: %v", red, wait, err)
			}
			if n := hilock.TasksStarted(cli[0]) - before; n != 0 {
				t.Fatalf("red %v wait %v: %d tasks started, want none", red, wait, n)
			}
			restore := hilock.NoFastPath(cli[0])
			before = hilock.TasksStarted(cli[0])
			ok, err = ml.TryLock(ctx, wait, 0)
			if !ok || err != nil {
				t.Fatalf("red %v wait %v, no fast path: TryLock %v, %v", red, wait, ok, err)
			}
			if err := ml.Release(); err != nil {
				t.Fatalf("red %v wait %v, no fast path: Release: %v", red, wait, err)
			}
			restore()
			if n := hilock.TasksStarted(cli[0]) - before; n != 2 {
				t.Fatalf("red %v wait %v, no fast path: %d tasks started, want 2", red, wait, n)
			}
		}
	}

	// member 2 held elsewhere: with no wait a RedLock takes its quorum in
	// one round; with 300 ms it first waits member 2's share (100 ms)
	oc, err := hilock.Connect(ctx, srv[2].url())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	holder := oc.Mutex(name)
	holder.Lock()
	defer holder.Unlock()
	rl := hilock.NewRedLock(mutexes(cli, name)...)
	start := time.Now()
	if ok, err := rl.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("RedLock, wait 0, a quorum free: %v, %v", ok, err)
	}
	if err := rl.Release(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wait 0: %v", time.Since(start))
	start = time.Now()
	if ok, err := rl.TryLock(ctx, 300*time.Millisecond, 0); !ok || err != nil {
		t.Fatalf("RedLock, wait 300 ms, a quorum free: %v, %v", ok, err)
	}
	took := time.Since(start)
	if err := rl.Release(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wait 300 ms: %v", took)
	if took < 90*time.Millisecond {
		t.Fatalf("RedLock, wait 300 ms: acquired after %v, before member 2's share of the wait", took)
	}
}

func TestRedLockServersDown(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	ms := mutexes(cli, name)
	rl := hilock.NewRedLock(ms...)
	if rl.Quorum() != 2 {
		t.Fatalf("Quorum = %d", rl.Quorum())
	}

	srv[1].stop()
	t0 := time.Now()
	ok, err := rl.TryLock(context.Background(), 1500*time.Millisecond, 10*time.Second)
	if !ok || err != nil {
		t.Fatalf("one of three down: TryLock = %v, %v", ok, err)
	}
	took := time.Since(t0)
	if took > 2500*time.Millisecond {
		t.Fatalf("one of three down: took %v", took)
	}
	if u := time.Until(rl.Until()); u <= 0 || u > 10*time.Second-100*time.Millisecond {
		t.Fatalf("validity left %v of a 10 s lease", u)
	}
	for _, i := range []int{0, 2} {
		if v, _ := rawOf(t, srv[i]).str("HGET", name, ms[i].Owner()); v != "1" {
			t.Fatalf("member %d not held", i)
		}
	}
	if err := rl.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for _, i := range []int{0, 2} {
		if n := rawOf(t, srv[i]).int("EXISTS", name); n != 0 {
			t.Fatalf("member %d still held", i)
		}
		if n, _ := ms[i].HoldCount(); n != 0 {
			t.Fatalf("member %d HoldCount %d", i, n)
		}
	}
	// The fast round failed at the dead member above: while one is dead,
	// an acquire with time to wait goes to the task's round at once (one
	// script on a live member, not a round taken and given back first).
	before := bqCalls(t, rawOf(t, srv[0]), "evalsha")
	if ok, err := rl.TryLock(context.Background(), 1500*time.Millisecond, 10*time.Second); !ok || err != nil {
		t.Fatalf("one of three down, again: TryLock = %v, %v", ok, err)
	}
	if n := bqCalls(t, rawOf(t, srv[0]), "evalsha") - before; n != 1 {
		t.Fatalf("one of three down, again: %d scripts on member 0 for one acquire, want 1", n)
	}
	if err := rl.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}

	srv[2].stop()
	t0 = time.Now()
	ok, err = rl.TryLock(context.Background(), 1500*time.Millisecond, 0)
	took = time.Since(t0)
	if ok || (err != nil && !strings.Contains(err.Error(), "RedLock")) {
		t.Fatalf("two of three down: TryLock = %v, %v", ok, err)
	}
	if took < 1400*time.Millisecond || took > 2500*time.Millisecond {
		t.Fatalf("two of three down: took %v, want its 1.5 s wait", took)
	}
	if n := rawOf(t, srv[0]).int("EXISTS", name); n != 0 {
		t.Fatal("member 0 left held")
	}
}

func TestMultiLockGoroutines(t *testing.T) {
	_, cli := threeServers(t)
	name := uniqueName(t)
	var inside, overlaps, rounds int64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		// each goroutine its own MultiLock: its own owners
		ml := hilock.NewRedLock(mutexes(cli, name)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := ml.LockContext(ctx)
				cancel()
				if err != nil {
					t.Errorf("LockContext: %v", err)
					return
				}
				if atomic.AddInt64(&inside, 1) != 1 {
					atomic.AddInt64(&overlaps, 1)
				}
				time.Sleep(time.Millisecond)
				atomic.AddInt64(&inside, -1)
				atomic.AddInt64(&rounds, 1)
				if err := ml.Release(); err != nil {
					t.Errorf("Release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if rounds != 100 || overlaps != 0 {
		t.Fatalf("%d rounds, %d overlaps", rounds, overlaps)
	}
}

func TestMultiLockBadInput(t *testing.T) {
	srv, cli := threeServers(t)
	ctx := context.Background()
	for _, ml := range []*hilock.MultiLock{hilock.NewMultiLock(), hilock.NewRedLock()} {
		if err := ml.LockContext(ctx); !errors.Is(err, hilock.ErrInvalid) ||
			!strings.Contains(err.Error(), "at least one") {
			t.Fatalf("no members: %v", err)
		}
		mustPanic(t, hilock.ErrInvalid, ml.Lock)
		mustPanic(t, hilock.ErrInvalid, ml.Unlock)
	}
	a := cli[0].Mutex("bad:a")
	if _, err := hilock.NewMultiLock(a, nil).TryLock(ctx, 0, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("nil member: %v", err)
	}
	if _, err := hilock.NewMultiLock(a, a).TryLock(ctx, 0, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("same Mutex twice: %v", err)
	}
	if err := hilock.NewRedLock(a, cli[0].Mutex("bad:a")).Release(); !errors.Is(err, hilock.ErrInvalid) ||
		!strings.Contains(err.Error(), "same lock") {
		t.Fatalf("one lock twice: %v", err)
	}
	if _, err := hilock.NewMultiLock(a, cli[0].Mutex("")).TryLock(ctx, 0, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("bad member name: %v", err)
	}
	if _, err := hilock.NewMultiLock(a).TryLock(ctx, 0, -time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("negative lease: %v", err)
	}

	// a member's client closed: a clear error naming it, nothing held
	late := cli[2].Mutex("bad:late")
	ml := hilock.NewMultiLock(a, cli[1].Mutex("bad:b"), late)
	cli[2].Close()
	ok, err := ml.TryLock(ctx, time.Second, 0)
	if ok || !errors.Is(err, hilock.ErrClosed) || !strings.Contains(err.Error(), `member 2 ("bad:late")`) {
		t.Fatalf("closed member: %v, %v", ok, err)
	}
	if n := rawOf(t, srv[0]).int("EXISTS", "bad:a"); n != 0 {
		t.Fatal("member 0 left held")
	}

	// held, then a member's client closed: the others are still released
	ml = hilock.NewMultiLock(a, cli[1].Mutex("bad:b"))
	ml.Lock()
	cli[1].Close()
	if err := ml.Release(); !errors.Is(err, hilock.ErrClosed) {
		t.Fatalf("Release with a closed member: %v", err)
	}
	if n := rawOf(t, srv[0]).int("EXISTS", "bad:a"); n != 0 {
		t.Fatal("member 0 not released")
	}
}

func TestMultiLockKinds(t *testing.T) {
	srv, cli := threeServers(t)
	c := cli[0]
	fair, fenced, rw, spin := c.FairMutex("k:fair"), c.FencedMutex("k:fenced"), c.RWMutex("k:rw"),
		c.SpinMutex("k:spin")
	ml := hilock.NewMultiLock(fair, fenced.Mutex, rw.Writer(), spin)

	// a reader of another client blocks the write member; nothing is left held
	other, err := hilock.Connect(context.Background(), srv[0].url())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r := other.RWMutex("k:rw")
	r.RLock()
	ok, err := ml.TryLock(context.Background(), 300*time.Millisecond, 0)
	if ok || err != nil {
		t.Fatalf("TryLock with a reader elsewhere = %v, %v", ok, err)
	}
	raw := rawOf(t, srv[0])
	for _, k := range []string{"k:fair", "k:fenced", "k:spin"} {
		if n := raw.int("EXISTS", k); n != 0 {
			t.Fatalf("%s left held", k)
		}
	}
	r.RUnlock()

	ml.Lock()
	for i, m := range ml.Mutexes() {
		if ok, err := m.IsHeld(); !ok || err != nil {
			t.Fatalf("member %d IsHeld = %v, %v", i, ok, err)
		}
	}
	if tok, err := fenced.Token(); tok <= 0 || err != nil {
		t.Fatalf("fenced member Token = %d, %v", tok, err)
	}
	ml.Unlock()
	for _, k := range []string{"k:fair", "k:fenced", "k:rw", "k:spin"} {
		if n := raw.int("EXISTS", k); n != 0 {
			t.Fatalf("%s still held", k)
		}
	}
	if err := hilock.NewMultiLock(rw.Writer(), rw.Reader()).Release(); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("both halves of one rwlock: %v", err)
	}
}

// Goroutines waiting on MultiLocks and RedLocks pin no OS thread: each wait
// is a task of its first member's client, each member's wait a task of its
// own. n MultiLock and n RedLock waiters over three locks (two of them held
// elsewhere) wait while the process runs at most GOMAXPROCS + 16 threads,
// counted as for Mutex waiters, with one client as there (a client runs
// four threads of its own; members on several clients are tested below and
// in the C suite). Cancelling the RedLock waiters' context ends them
// promptly with nothing held (a round takes the free lock first, then gives
// it back); then every MultiLock waiter gets all three in turn, never two
// at once.
func TestMultiLockWaitersFewThreads(t *testing.T) {
	if inChild(t) {
		return
	}
	const n = 1000
	c := connect(t)
	r := newRedis(t)
	base := uniqueName(t)
	names := []string{base + ":a", base + ":b", base + ":c"}
	members := func() []*hilock.Mutex {
		return []*hilock.Mutex{c.Mutex(names[0]), c.Mutex(names[1]), c.Mutex(names[2])}
	}
	holders := []*hilock.Mutex{c.Mutex(names[0]), c.Mutex(names[1])}
	for _, h := range holders {
		h.Lock()
	}
	var inside, overlap, got int32
	var wg sync.WaitGroup
	errc := make(chan error, 2*n)
	redCtx, cancelRed := context.WithCancel(context.Background())
	defer cancelRed()
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			ml := hilock.NewMultiLock(members()...)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			if err := ml.LockContext(ctx); err != nil {
				errc <- err
				return
			}
			if atomic.AddInt32(&inside, 1) != 1 {
				atomic.StoreInt32(&overlap, 1)
			}
			atomic.AddInt32(&got, 1)
			atomic.AddInt32(&inside, -1)
			if err := ml.Release(); err != nil {
				errc <- err
			}
		}()
		go func() {
			defer wg.Done()
			ms := members()
			rl := hilock.NewRedLock(ms[2], ms[0], ms[1])
			if err := rl.LockContext(redCtx); !errors.Is(err, context.Canceled) {
				errc <- errors.New("RedLock waiter: " + errString(err))
			}
		}()
	}
	if !waitFor(2*time.Minute, func() bool { return hilock.PendingTasks(c) == 2*n }) {
		t.Fatalf("only %d of %d waiters wait", hilock.PendingTasks(c), 2*n)
	}
	time.Sleep(200 * time.Millisecond)
	threads, limit := osThreads(t), runtime.GOMAXPROCS(0)+16
	t.Logf("%d MultiLock and %d RedLock waiters: %d OS threads (GOMAXPROCS %d)", n, n, threads,
		runtime.GOMAXPROCS(0))
	if threads > limit {
		t.Fatalf("%d OS threads while %d goroutines wait on multilocks, want at most %d",
			threads, 2*n, limit)
	}
	if g := atomic.LoadInt32(&got); g != 0 {
		t.Fatalf("%d MultiLock waiters got it while it was held", g)
	}

	start := time.Now()
	cancelRed()
	if !waitFor(time.Minute, func() bool { return hilock.PendingTasks(c) == n }) {
		t.Fatalf("%d RedLock waiters still wait after their cancel", hilock.PendingTasks(c)-n)
	}
	t.Logf("%d RedLock waiters cancelled in %v", n, time.Since(start))
	if k := r.int("EXISTS", names[2]); k != 0 {
		t.Fatal("a cancelled RedLock waiter left the free lock held")
	}
	for i, h := range holders {
		if k := r.int("HLEN", names[i]); k != 1 {
			t.Fatalf("%s: %d holders, want the one", names[i], k)
		}
		if v, _ := r.str("HGET", names[i], h.Owner()); v != "1" {
			t.Fatalf("%s: the holder's field is %q", names[i], v)
		}
	}

	start = time.Now()
	for _, h := range holders {
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("only %d of %d MultiLock waiters got it", atomic.LoadInt32(&got), n)
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("%d MultiLock waiters got all three in turn in %v; %d OS threads now", n,
		time.Since(start), osThreads(t))
	if atomic.LoadInt32(&got) != n || atomic.LoadInt32(&overlap) != 0 {
		t.Fatalf("got %d, overlap %d", got, overlap)
	}
	for _, name := range names {
		if k := r.int("EXISTS", name); k != 0 {
			t.Fatalf("%s still held", name)
		}
	}
	if p := hilock.PendingTasks(c); p != 0 {
		t.Fatalf("%d tasks left", p)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil error"
	}
	return err.Error()
}

// A MultiLock that took members 0 and 1 and waits for member 2: its ctx
// cancelled, it returns context.Canceled at once, and members 0 and 1 are
// free in Redis and not held by their Mutexes. A RedLock the same, waiting
// through TryLock for member 2's share after its quorum.
func TestMultiLockCancelLeavesNothingHeld(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	oc, err := hilock.Connect(context.Background(), srv[2].url())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	holder := oc.Mutex(name)
	holder.Lock()
	raw := []*redis{rawOf(t, srv[0]), rawOf(t, srv[1]), rawOf(t, srv[2])}
	for _, red := range []bool{false, true} {
		ms := mutexes(cli, name)
		ml := hilock.NewMultiLock(ms...)
		if red {
			// a quorum after members 0 and 1, but member 2 still
			// gets its share of the wait
			ml = hilock.NewRedLock(ms...)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			if red {
				_, err := ml.TryLock(ctx, time.Minute, 0)
				errc <- err
				return
			}
			errc <- ml.LockContext(ctx)
		}()
		// waiting: members 0 and 1 taken, member 2 waited for
		if !waitFor(10*time.Second, func() bool {
			return raw[0].int("EXISTS", name) == 1 && raw[1].int("EXISTS", name) == 1
		}) {
			t.Fatal("the waiter never took members 0 and 1")
		}
		if !waitFor(10*time.Second, func() bool { return cli[2].Stats().Waiting == 1 }) {
			t.Fatal("the waiter never waited for server 2's member")
		}
		start := time.Now()
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("red %v: %v, want context.Canceled", red, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("red %v: the cancelled wait did not return", red)
		}
		t.Logf("red %v: cancelled in %v", red, time.Since(start))
		if d := time.Since(start); d > time.Second {
			t.Fatalf("red %v: the cancel took %v", red, d)
		}
		if k := raw[0].int("EXISTS", name); k != 0 {
			t.Fatalf("red %v: server 0's member left held", red)
		}
		if k := raw[1].int("EXISTS", name); k != 0 {
			t.Fatalf("red %v: server 1's member left held", red)
		}
		for i, m := range ms {
			if n, err := m.HoldCount(); n != 0 || err != nil {
				t.Fatalf("red %v: member %d HoldCount %d, %v", red, i, n, err)
			}
		}
		if err := ml.Release(); !errors.Is(err, hilock.ErrNotHeld) {
			t.Fatalf("red %v: Release after the cancel: %v", red, err)
		}
		if k := raw[2].int("HLEN", name); k != 1 {
			t.Fatalf("red %v: server 2 has %d holders", red, k)
		}
	}
}

// Closing the first member's client (whose task the wait is) ends the wait
// with ErrClosed, and the member taken on another client is released at
// once; the closed client's member is no longer renewed.
func TestMultiLockFirstClientClosed(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	oc, err := hilock.Connect(context.Background(), srv[2].url())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	holder := oc.Mutex(name)
	holder.Lock()
	raw := []*redis{rawOf(t, srv[0]), rawOf(t, srv[1]), rawOf(t, srv[2])}
	ml := hilock.NewMultiLock(mutexes(cli, name)...)
	errc := make(chan error, 1)
	go func() { errc <- ml.LockContext(context.Background()) }()
	if !waitFor(10*time.Second, func() bool {
		return raw[0].int("EXISTS", name) == 1 && raw[1].int("EXISTS", name) == 1 &&
			cli[2].Stats().Waiting == 1
	}) {
		t.Fatal("the waiter never took members 0 and 1 and waited for member 2")
	}
	cli[0].Close()
	select {
	case err := <-errc:
		if !errors.Is(err, hilock.ErrClosed) {
			t.Fatalf("wait after Close of member 0's client: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	if k := raw[1].int("EXISTS", name); k != 0 {
		t.Fatal("member 1, of an open client, left held")
	}
	if !waitFor(5*time.Second, func() bool { return cli[2].Stats().Waiting == 0 }) {
		t.Fatal("member 2's wait goes on")
	}
	if k := raw[2].int("HLEN", name); k != 1 {
		t.Fatalf("server 2: %d holders", k)
	}
	if ttl := raw[0].int("PTTL", name); ttl > 30000 {
		t.Fatalf("member 0's lease %d ms", ttl)
	}
}

// loseMember force-unlocks m through its own client and waits until its hold
// is reported lost; it returns that hold's Lost channel.
func loseMember(t *testing.T, m *hilock.Mutex) <-chan struct{} {
	t.Helper()
	old := m.Lost()
	if existed, err := m.ForceUnlock(); !existed || err != nil {
		t.Fatalf("ForceUnlock = %v, %v", existed, err)
	}
	if !waitFor(10*time.Second, func() bool { return isClosed(old) }) {
		t.Fatal("the member's hold was never reported lost")
	}
	return old
}

// A member lost while the MultiLock held it (force-unlocked through its own
// client) and locked again by its Mutex is in a newer hold: the MultiLock's
// Release leaves that hold as it is (count, renewal, Lost channel) and says
// ErrLost; the other members are released.
func TestMultiLockMemberRetakenLeftAlone(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	ms := mutexes(cli, name)
	ml := hilock.NewMultiLock(ms...)
	ml.Lock()
	old := loseMember(t, ms[1])
	// A new hold, twice, for the member's owner (the gate the MultiLock
	// holds keeps the member's own Lock out: another handle of its owner).
	mustAcquireAs(t, ms[1])
	mustAcquireAs(t, ms[1])
	cur := ms[1].Lost()
	if cur == old {
		t.Fatal("the new hold has the lost hold's Lost channel")
	}
	err := ml.Release()
	if !errors.Is(err, hilock.ErrLost) || !strings.Contains(err.Error(), "member 1") {
		t.Fatalf("Release = %v, want ErrLost naming member 1", err)
	}
	for _, i := range []int{0, 2} {
		if n := rawOf(t, srv[i]).int("EXISTS", name); n != 0 {
			t.Fatalf("member %d still held after Release", i)
		}
	}
	if v, _ := rawOf(t, srv[1]).str("HGET", name, ms[1].Owner()); v != "2" {
		t.Fatalf("member 1's new hold in Redis: count %q, want 2", v)
	}
	if n, err := ms[1].HoldCount(); n != 2 || err != nil {
		t.Fatalf("member 1 HoldCount = %d, %v", n, err)
	}
	if isClosed(cur) || isClosed(ms[1].Lost()) {
		t.Fatal("the new hold was reported lost")
	}
	ms[1].Unlock()
	ms[1].Unlock()
	if n := rawOf(t, srv[1]).int("EXISTS", name); n != 0 {
		t.Fatal("member 1 still held after its own Unlocks")
	}
	if err := ml.Release(); !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("Release of nothing: %v", err)
	}
}

// The same when a member's client was closed, so Release goes member by
// member: the newer hold of member 1 is left as it is (ErrLost, the first
// error last member first), member 2 is released.
func TestMultiLockMemberRetakenClientClosed(t *testing.T) {
	srv, cli := threeServers(t)
	name := uniqueName(t)
	ms := mutexes(cli, name)
	ml := hilock.NewMultiLock(ms...)
	ml.Lock()
	loseMember(t, ms[1])
	mustAcquireAs(t, ms[1]) // a new hold for the member's owner (see above)
	cli[0].Close()
	if err := ml.Release(); !errors.Is(err, hilock.ErrLost) || !strings.Contains(err.Error(), "member 1") {
		t.Fatalf("Release = %v, want ErrLost naming member 1", err)
	}
	if n := rawOf(t, srv[2]).int("EXISTS", name); n != 0 {
		t.Fatal("member 2 still held after Release")
	}
	if v, _ := rawOf(t, srv[1]).str("HGET", name, ms[1].Owner()); v != "1" {
		t.Fatalf("member 1's new hold in Redis: count %q, want 1", v)
	}
	if isClosed(ms[1].Lost()) {
		t.Fatal("the new hold was reported lost")
	}
	ms[1].Unlock()
	if n := rawOf(t, srv[1]).int("EXISTS", name); n != 0 {
		t.Fatal("member 1 still held after its own Unlock")
	}
}
