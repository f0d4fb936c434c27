package hilock_test

// Unlock panics only on misuse; losses, closed clients and Redis failures
// go to hilock.Logger. The cause of a lost hold's Context is ErrLost. The
// connect and auth sentinels. No error shows the URL's password.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

type logged struct {
	mu   sync.Mutex
	errs []error
}

func (l *logged) get() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// captureLogger points hilock.Logger at a recorder for the test's duration.
func captureLogger(t *testing.T) *logged {
	l := &logged{}
	old := hilock.Logger
	hilock.Logger = func(err error) {
		l.mu.Lock()
		l.errs = append(l.errs, err)
		l.mu.Unlock()
	}
	t.Cleanup(func() { hilock.Logger = old })
	return l
}

// oneLogged checks that exactly one error was logged, that it is an
// *hilock.UnlockError naming the lock, and returns it.
func oneLogged(t *testing.T, l *logged, name string) error {
	t.Helper()
	errs := l.get()
	if len(errs) != 1 {
		t.Fatalf("Logger got %d errors, want 1: %v", len(errs), errs)
	}
	var ue *hilock.UnlockError
	if !errors.As(errs[0], &ue) || ue.Name != name || ue.Err == nil {
		t.Fatalf("logged %#v, want an *UnlockError for %q", errs[0], name)
	}
	if !strings.Contains(errs[0].Error(), strconv.Quote(name)) {
		t.Fatalf("logged %q does not name the lock", errs[0])
	}
	return errs[0]
}

// deferredUnlock is the README's pattern: a panic would escape it.
func deferredUnlock(m *hilock.Mutex, body func()) {
	defer m.Unlock()
	body()
}

func TestUnlockAfterLossDoesNotPanic(t *testing.T) {
	logs := captureLogger(t)
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	deferredUnlock(m, func() {
		lost := m.Lost()
		r.do("DEL", name)
		select {
		case <-lost:
		case <-time.After(6 * time.Second):
			t.Fatal("Lost did not fire after the key vanished")
		}
	})
	if err := oneLogged(t, logs, name); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("logged %v, want ErrLost", err)
	}
	if !isClosed(m.Lost()) {
		t.Fatal("the lost hold's Lost channel is open")
	}
	// The hold is over: unlocking again is misuse, as with sync.Mutex.
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	// The Mutex is usable again.
	m.Lock()
	m.Unlock()
	if n := len(logs.get()); n != 1 {
		t.Fatalf("a normal Unlock logged (%d errors)", n)
	}
}

func TestUnlockAfterForceUnlockDoesNotPanic(t *testing.T) {
	logs := captureLogger(t)
	c := connect(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	// Taken away before the watchdog noticed anything: the release finds
	// it gone.
	deferredUnlock(m, func() {
		if existed, err := c.Mutex(name).ForceUnlock(); !existed || err != nil {
			t.Fatalf("ForceUnlock = %v, %v", existed, err)
		}
	})
	err := oneLogged(t, logs, name)
	if !errors.Is(err, hilock.ErrLost) && !errors.Is(err, hilock.ErrNotHeld) {
		t.Fatalf("logged %v, want ErrLost (or ErrNotHeld)", err)
	}
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
}

func TestUnlockMisusePanics(t *testing.T) {
	logs := captureLogger(t)
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	mustPanic(t, hilock.ErrNotHeld, m.Unlock) // never locked

	// Another Mutex holds the lock: this one still holds nothing, and its
	// Unlock leaves the other's hold alone.
	other := c.Mutex(name)
	other.Lock()
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)
	if v, _ := r.str("HGET", name, other.Owner()); v != "1" {
		t.Fatalf("a misused Unlock touched another owner's hold (%q)", v)
	}
	other.Unlock()
	mustPanic(t, hilock.ErrNotHeld, other.Unlock) // one Unlock too many

	m.Lock()
	if err := m.Reenter(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	m.Unlock()
	mustPanic(t, hilock.ErrNotHeld, m.Unlock)

	var zero hilock.Mutex
	mustPanic(t, hilock.ErrInvalid, zero.Unlock)
	mustPanic(t, hilock.ErrInvalid, c.Mutex("").Unlock)
	if errs := logs.get(); len(errs) != 0 {
		t.Fatalf("misuse was logged instead of panicking: %v", errs)
	}
}

func TestUnlockAfterCloseDoesNotPanic(t *testing.T) {
	logs := captureLogger(t)
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	deferredUnlock(m, func() { c.Close() })
	if err := oneLogged(t, logs, name); !errors.Is(err, hilock.ErrClosed) {
		t.Fatalf("logged %v, want ErrClosed", err)
	}
	newRedis(t).do("DEL", name)
}

// startRedis starts a redis-server of the test's own (which it may stop),
// on a free port; extra arguments go to redis-server.
func startRedis(t *testing.T, args ...string) (addr string, stop func()) {
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
		addr = "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log")}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		var once sync.Once
		stop = func() {
			once.Do(func() {
				cmd.Process.Kill()
				<-exited
			})
		}
		if waitReady(addr, exited) {
			t.Cleanup(stop)
			return addr, stop
		}
		stop()
	}
	t.Fatal("redis-server did not start")
	return "", nil
}

// waitReady waits for a server that may need AUTH: any reply will do.
func waitReady(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if rc, err := dialResp(addr); err == nil {
			_, err := rc.do("PING")
			rc.close()
			var re respError
			if err == nil || errors.As(err, &re) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestUnlockRedisGoneDoesNotPanic(t *testing.T) {
	logs := captureLogger(t)
	addr, stop := startRedis(t, "--requirepass", "topsecret")
	c, err := hilock.Connect(context.Background(), "redis://:topsecret@"+addr+"/0",
		hilock.WithRetry(0, 0), hilock.WithCommandTimeout(time.Second),
		hilock.WithConnectTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	deferredUnlock(m, stop)
	err = oneLogged(t, logs, name)
	if errors.Is(err, hilock.ErrNotHeld) || errors.Is(err, hilock.ErrClosed) {
		t.Fatalf("logged %v, want a Redis failure", err)
	}
	var he *hilock.Error
	if !errors.As(err, &he) {
		t.Fatalf("logged %v, want an *hilock.Error inside", err)
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("the logged error shows the password: %v", err)
	}
	// Usually ErrInDoubt (the release was not confirmed; the library stops
	// renewing, so the lease ends the hold), or a connection error.
	t.Logf("logged: %v", err)
}

func TestContextCauseIsErrLost(t *testing.T) {
	c := fastClient(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	m.Lock()
	ctx, cancel := m.Context(context.Background())
	defer cancel()
	child, cancelChild := context.WithTimeout(ctx, time.Minute)
	defer cancelChild()
	if hilock.Cause(ctx) != nil || hilock.Cause(child) != nil {
		t.Fatal("Cause of a live context is not nil")
	}
	r.do("DEL", name)
	select {
	case <-ctx.Done():
	case <-time.After(6 * time.Second):
		t.Fatal("the hold's Context was not cancelled by the loss")
	}
	<-child.Done()
	if ctx.Err() != context.Canceled {
		t.Fatalf("Err() = %v, want context.Canceled", ctx.Err())
	}
	for what, x := range map[string]context.Context{"ctx": ctx, "derived": child} {
		if err := hilock.Cause(x); err != hilock.ErrLost {
			t.Errorf("hilock.Cause(%s) = %v, want ErrLost", what, err)
		}
		if haveStdCause {
			if err := stdCause(x); err != hilock.ErrLost {
				t.Errorf("context.Cause(%s) = %v, want ErrLost", what, err)
			}
		}
	}
	if err := m.Release(); !errors.Is(err, hilock.ErrLost) {
		t.Fatalf("Release after loss: %v", err)
	}

	// Not a loss: the cancel func, or the parent.
	m.Lock()
	defer m.Unlock()
	ctx2, cancel2 := m.Context(context.Background())
	cancel2()
	if err := hilock.Cause(ctx2); err != context.Canceled {
		t.Errorf("Cause after cancel = %v, want context.Canceled", err)
	}
	parent, cancelParent := context.WithCancel(context.Background())
	ctx3, cancel3 := m.Context(parent)
	defer cancel3()
	cancelParent()
	<-ctx3.Done()
	if err := hilock.Cause(ctx3); err != context.Canceled {
		t.Errorf("Cause after the parent's cancel = %v, want context.Canceled", err)
	}
	// Other contexts: their Err.
	dl, cancelDl := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelDl()
	<-dl.Done()
	if err := hilock.Cause(dl); err != context.DeadlineExceeded {
		t.Errorf("Cause of a plain deadline context = %v", err)
	}
}

func TestConnectSentinels(t *testing.T) {
	ctx := context.Background()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	_, err = hilock.Connect(ctx, "redis://alice:topsecret@127.0.0.1:"+strconv.Itoa(port)+"/0",
		hilock.WithConnectTimeout(2*time.Second), hilock.WithRetry(0, 0))
	if !errors.Is(err, hilock.ErrConnect) || errors.Is(err, hilock.ErrAuth) {
		t.Errorf("refused port: %v, want ErrConnect (and not ErrAuth)", err)
	}
	noSecret(t, "refused port", err)

	addr, _ := startRedis(t, "--requirepass", "rightpassword")
	for _, url := range []string{
		"redis://:topsecret@" + addr + "/0",
		"redis://alice:topsecret@" + addr + "/0",
	} {
		_, err = hilock.Connect(ctx, url, hilock.WithRetry(0, 0))
		if !errors.Is(err, hilock.ErrAuth) || errors.Is(err, hilock.ErrConnect) {
			t.Errorf("%s: %v, want ErrAuth (and not ErrConnect)", url, err)
		}
		noSecret(t, url, err)
	}
	c, err := hilock.Connect(ctx, "redis://:rightpassword@"+addr+"/0")
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
}

func TestNoPasswordInErrors(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{
		"redis://alice:topsecret@" + redisAddr + "/abc",
		"redis://alice:topsecret@" + redisAddr + "/0?x=1",
		"redis://:topsecret@127.0.0.1:99999/0",
		"http://alice:topsecret@" + redisAddr,
	} {
		_, err := hilock.Connect(ctx, url)
		if !errors.Is(err, hilock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", url, err)
		}
		noSecret(t, url, err)
	}
	// rediss:// is TLS: this plain server is no TLS server
	tlsURL := "rediss://alice:topsecret@" + redisAddr
	_, err := hilock.Connect(ctx, tlsURL)
	if !errors.Is(err, hilock.ErrConnect) {
		t.Errorf("%s: %v, want ErrConnect", tlsURL, err)
	}
	noSecret(t, tlsURL, err)
	_, err = hilock.Connect(ctx, "redis://"+redisAddr+"/0?x=1")
	if err == nil || !strings.Contains(err.Error(), "query string") {
		t.Errorf("a query string: %v, want a message about the query string", err)
	}
}

func noSecret(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("%s: the error shows the password: %v", what, err)
	}
	var he *hilock.Error
	if errors.As(err, &he) && strings.Contains(he.Message, "secret") {
		t.Errorf("%s: Error.Message shows the password: %q", what, he.Message)
	}
}
