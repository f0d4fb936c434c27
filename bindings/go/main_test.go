package hilock_test

// The test harness: a throwaway redis-server on a free loopback port, a tiny
// RESP client for checking what the binding wrote, and worker processes
// (this test binary run again) for cross-process contention.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

const (
	workerEnv = "HILOCK_GO_TEST_WORKER" // set in worker processes
	urlEnv    = "HILOCK_GO_TEST_URL"
	aloneEnv  = "HILOCK_GO_TEST_ALONE" // the test inChild runs
)

var (
	redisAddr string // host:port of the throwaway server
	redisURL  string
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		redisURL = os.Getenv(urlEnv)
		redisAddr = strings.TrimSuffix(strings.TrimPrefix(redisURL, "redis://"), "/0")
		os.Exit(m.Run())
	}
	code, err := runWithRedis(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hilock go tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithRedis(m *testing.M) (int, error) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return 1, fmt.Errorf("redis-server not found (install it or set REDIS_SERVER): %v", err)
	}
	dir, err := os.MkdirTemp("", "hilock-go-redis-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)

	// Another process may take the free port before redis binds it: retry.
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return 1, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
		// If this test binary dies, so does its server.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return 1, fmt.Errorf("start %s: %v", path, err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if waitRedis(addr, exited, 10*time.Second) {
			redisAddr, redisURL = addr, "redis://"+addr+"/0"
			code := m.Run()
			cmd.Process.Kill()
			<-exited
			return code, nil
		}
		cmd.Process.Kill()
		<-exited
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	return 1, fmt.Errorf("redis-server did not start; log:\n%s", log)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitRedis(addr string, exited <-chan struct{}, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if rc, err := dialResp(addr); err == nil {
			v, err := rc.do("PING")
			rc.close()
			if err == nil && v == "PONG" {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// --- a minimal RESP2 client ------------------------------------------------

type respConn struct {
	c net.Conn
	r *bufio.Reader
}

type respError string

func (e respError) Error() string { return "redis: " + string(e) }

func dialResp(addr string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReader(c)}, nil
}

func (rc *respConn) close() { rc.c.Close() }

func (rc *respConn) send(args ...string) error {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := io.WriteString(rc.c, b.String())
	return err
}

// do sends one command and reads its reply: string (status), int64,
// []byte or nil (bulk), []interface{} (array), or a respError.
func (rc *respConn) do(args ...string) (interface{}, error) {
	if err := rc.send(args...); err != nil {
		return nil, err
	}
	return rc.read(10 * time.Second)
}

func (rc *respConn) read(limit time.Duration) (interface{}, error) {
	rc.c.SetDeadline(time.Now().Add(limit))
	line, err := rc.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			return nil, err
		}
		return buf[:n], nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]interface{}, n)
		for i := range out {
			if out[i], err = rc.read(limit); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply type %q", line)
}

// redis is a test's RESP connection with fatal-on-error helpers.
type redis struct {
	t  testing.TB
	rc *respConn
}

func newRedis(t testing.TB) *redis {
	t.Helper()
	rc, err := dialResp(redisAddr)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	t.Cleanup(rc.close)
	return &redis{t: t, rc: rc}
}

func (r *redis) do(args ...string) interface{} {
	r.t.Helper()
	v, err := r.rc.do(args...)
	if err != nil {
		r.t.Fatalf("redis %q: %v", args, err)
	}
	return v
}

func (r *redis) int(args ...string) int64 {
	r.t.Helper()
	v, ok := r.do(args...).(int64)
	if !ok {
		r.t.Fatalf("redis %q: not an integer reply", args)
	}
	return v
}

// str returns a bulk reply as a string, "" and false for nil.
func (r *redis) str(args ...string) (string, bool) {
	r.t.Helper()
	switch v := r.do(args...).(type) {
	case nil:
		return "", false
	case []byte:
		return string(v), true
	case string:
		return v, true
	default:
		r.t.Fatalf("redis %q: unexpected reply %T", args, v)
		return "", false
	}
}

// counterIncr does a deliberately non-atomic GET + SET of key on rc: only
// the lock keeps concurrent increments from being lost.
func counterIncr(rc *respConn, key string, pause time.Duration) (int64, error) {
	v, err := rc.do("GET", key)
	if err != nil {
		return 0, err
	}
	n := int64(0)
	if b, ok := v.([]byte); ok {
		if n, err = strconv.ParseInt(string(b), 10, 64); err != nil {
			return 0, err
		}
	}
	if pause > 0 {
		time.Sleep(pause)
	}
	n++
	if _, err := rc.do("SET", key, strconv.FormatInt(n, 10)); err != nil {
		return 0, err
	}
	return n, nil
}

// --- helpers ------------------------------------------------------------------

var nameSeq int64

func uniqueName(t testing.TB) string {
	return fmt.Sprintf("hilock:gotest:%s:%d:%d", t.Name(), os.Getpid(), atomic.AddInt64(&nameSeq, 1))
}

func connect(t testing.TB, opts ...hilock.Option) *hilock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := hilock.Connect(ctx, redisURL, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fastClient has a 1 s watchdog: renewals every ~333 ms, loss found quickly.
func fastClient(t testing.TB) *hilock.Client {
	return connect(t, hilock.WithWatchdogTimeout(time.Second))
}

// waitFor polls cond (for conditions with no event to wait on) up to limit.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSubscribers waits until n clients wait for the default lock name in
// Redis: each has a place in its line (hilock_line:{name}), and the first
// of them listens to the lock's channel; the event that shows the waiters
// are asleep in the library.
func waitSubscribers(t testing.TB, r *redis, name string, n int64) {
	t.Helper()
	ch := lockChannel(name)
	line := "hilock_line:" + strings.TrimPrefix(ch, "redisson_lock__channel:")
	ok := waitFor(10*time.Second, func() bool {
		v := r.do("PUBSUB", "NUMSUB", ch).([]interface{})
		places, _ := r.do("ZCARD", line).(int64)
		return len(v) == 2 && v[1].(int64) >= 1 && places >= n
	})
	if !ok {
		t.Fatalf("no %d waiters in %s (and on %s)", n, line, ch)
	}
}

func lockChannel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func mustPanic(t testing.TB, target error, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		err, ok := v.(error)
		if !ok || !errors.Is(err, target) {
			t.Fatalf("panic value %v, want an error matching %v", v, target)
		}
	}()
	f()
}

// --- worker processes ---------------------------------------------------------

// inChild runs the calling test alone in a new process (this test binary
// run again), so that what it measures of the process, its OS threads, is
// not what earlier tests left: Go keeps every thread it started for a
// blocked cgo call, idle, for the life of the process. In the parent it
// runs the child, passes on its log and its failure, and returns true (the
// test then returns); in the child it returns false.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1",
		"-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), workerEnv+"=1", urlEnv+"="+redisURL, aloneEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "    ") { // the child test's log
			t.Log("child:", strings.TrimSpace(line))
		}
	}
	if err != nil {
		t.Fatalf("%s alone in a child process: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s did not run in the child process:\n%s", t.Name(), out)
	}
	return true
}

// TestWorkerProcess is not a test: it is the body of the worker processes
// started by TestContendingProcesses (this binary run again).
func TestWorkerProcess(t *testing.T) {
	if os.Getenv(workerEnv) == "" {
		t.Skip("runs only as a worker process")
	}
	name, key := os.Getenv("HILOCK_GO_TEST_LOCK"), os.Getenv("HILOCK_GO_TEST_KEY")
	iters, _ := strconv.Atoi(os.Getenv("HILOCK_GO_TEST_ITERS"))
	c, err := hilock.Connect(context.Background(), redisURL)
	if err != nil {
		t.Fatalf("worker connect: %v", err)
	}
	defer c.Close()
	rc, err := dialResp(redisAddr)
	if err != nil {
		t.Fatalf("worker dial: %v", err)
	}
	defer rc.close()
	m := c.Mutex(name)
	for i := 0; i < iters; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := m.LockContext(ctx)
		cancel()
		if err != nil {
			t.Fatalf("worker lock: %v", err)
		}
		if _, err := counterIncr(rc, key, time.Millisecond); err != nil {
			t.Fatalf("worker counter: %v", err)
		}
		if err := m.Release(); err != nil {
			t.Fatalf("worker release: %v", err)
		}
	}
}
