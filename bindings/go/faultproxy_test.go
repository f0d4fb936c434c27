package hilock_test

// Fault injection for the Go tests: a TCP proxy that breaks the network
// between a client and Redis, and a critical-section overlap checker.
//
// startFaultProxy runs tests/tools/faultproxy (built by CMake): it listens on
// a free 127.0.0.1 port and forwards each connection to
// 127.0.0.1:upstreamPort. Point a client at p.URL() and:
//
//	p.Reset()          every current connection pair closed with RST (both
//	                   sides); later connections work
//	p.Blackhole(true)  nothing forwarded, nothing read: data waits in the
//	                   kernel (packets dropped, retransmitted later); new
//	                   connections are accepted but get nothing
//	p.Blackhole(false) everything held flows again, late
//	p.Drop(true)       data read in either direction is discarded (lost)
//	p.Delay(ms)        each chunk, in each direction, is held ms ms (a round
//	                   trip takes 2*ms more); Delay(0) removes it
//	p.Count()          the connection pairs the proxy holds open
//
// Each returns once the effect is in place, and fails the test (t.Fatalf:
// call them from the test's goroutine; Command returns the error instead).
// The binary is $HILOCK_FAULTPROXY (set by `make test-go`), else
// ../../build*/tests/tools/faultproxy. The proxy is stopped by t.Cleanup and
// exits by itself when this process dies (EOF on its stdin, Pdeathsig).
//
// The overlap checker: csEnter(t, path, tag) right after acquiring a lock,
// csLeave(t, path, tag) right before releasing it (any goroutine or
// process); each appends one line ("enter <tag>\n", "leave <tag>\n") with a
// single write on an O_APPEND descriptor, so the file's order is the real
// order of the sections. csCheck(t, path) returns the number of sections and
// fails the test unless the lines strictly alternate enter T / leave T: an
// overlap shows as two enters in a row.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	faultProxyEnv     = "HILOCK_FAULTPROXY"
	faultProxyTimeout = 5 * time.Second
)

type faultProxy struct {
	t      testing.TB
	cmd    *exec.Cmd
	port   int
	exited chan struct{} // closed once cmd.Wait returned

	mu     sync.Mutex // one command at a time
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at EOF
	closed bool
	broken error // an answer went missing: later ones would be out of step
}

// faultProxyBinary finds the faultproxy executable.
func faultProxyBinary() (string, error) {
	if p := os.Getenv(faultProxyEnv); p != "" {
		return p, nil
	}
	// go test runs in the package directory, bindings/go.
	preferred := filepath.Join("..", "..", "build", "tests", "tools", "faultproxy")
	if st, err := os.Stat(preferred); err == nil && !st.IsDir() {
		return filepath.Abs(preferred)
	}
	found, _ := filepath.Glob(filepath.Join("..", "..", "build*", "tests", "tools", "faultproxy"))
	var best string
	var bestTime time.Time
	for _, f := range found {
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.ModTime().After(bestTime) {
			best, bestTime = f, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("faultproxy not found: run `make build` or set %s", faultProxyEnv)
	}
	return filepath.Abs(best)
}

// startFaultProxy starts a proxy to 127.0.0.1:upstreamPort, stopped by
// t.Cleanup.
func startFaultProxy(t testing.TB, upstreamPort int) *faultProxy {
	t.Helper()
	bin, err := faultProxyBinary()
	if err != nil {
		t.Fatalf("%v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd := exec.Command(bin, strconv.Itoa(upstreamPort))
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	w.Close()
	p := &faultProxy{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16),
		exited: make(chan struct{})}
	go func() {
		defer close(p.lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.Close)

	line, err := p.readLine()
	if err == nil && !strings.HasPrefix(line, "port ") {
		err = fmt.Errorf("unexpected first line %q", line)
	}
	if err == nil {
		p.port, err = strconv.Atoi(strings.TrimPrefix(line, "port "))
	}
	if err != nil {
		p.Close()
		t.Fatalf("faultproxy (%s) did not start: %v", bin, err)
	}
	return p
}

func (p *faultProxy) readLine() (string, error) {
	timer := time.NewTimer(faultProxyTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", errors.New("faultproxy exited")
		}
		return line, nil
	case <-timer.C:
		return "", fmt.Errorf("faultproxy: no answer within %v", faultProxyTimeout)
	}
}

// Command sends one command line and returns what follows "ok" in the
// answer ("" for most commands), or an error ("err ..." answers, no answer
// within 5 s, a stopped proxy). Safe from any goroutine.
func (p *faultProxy) Command(cmd string) (string, error) {
	if strings.Contains(cmd, "\n") {
		return "", errors.New("faultproxy: one line only")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("faultproxy: stopped")
	}
	if p.broken != nil {
		return "", p.broken
	}
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("faultproxy %q: %v", cmd, err)
	}
	ans, err := p.readLine()
	if err != nil {
		p.broken = fmt.Errorf("faultproxy %q: %v", cmd, err)
		return "", p.broken
	}
	if ans != "ok" && !strings.HasPrefix(ans, "ok ") {
		return "", fmt.Errorf("faultproxy %q: %s", cmd, ans)
	}
	return strings.TrimPrefix(strings.TrimPrefix(ans, "ok"), " "), nil
}

func (p *faultProxy) must(cmd string) string {
	p.t.Helper()
	ans, err := p.Command(cmd)
	if err != nil {
		p.t.Fatalf("%v", err)
	}
	return ans
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func (p *faultProxy) Reset()            { p.t.Helper(); p.must("reset") }
func (p *faultProxy) Blackhole(on bool) { p.t.Helper(); p.must("blackhole " + onOff(on)) }
func (p *faultProxy) Drop(on bool)      { p.t.Helper(); p.must("drop " + onOff(on)) }
func (p *faultProxy) Delay(ms int)      { p.t.Helper(); p.must("delay " + strconv.Itoa(ms)) }
func (p *faultProxy) Port() int         { return p.port }
func (p *faultProxy) Addr() string      { return "127.0.0.1:" + strconv.Itoa(p.port) }
func (p *faultProxy) URL() string       { return "redis://" + p.Addr() + "/0" }

// Count is the number of connection pairs the proxy holds open.
func (p *faultProxy) Count() int {
	p.t.Helper()
	ans := p.must("count")
	n, err := strconv.Atoi(ans)
	if err != nil {
		p.t.Fatalf("faultproxy count: bad answer %q", ans)
	}
	return n
}

// Close stops the proxy (idempotent; also run by t.Cleanup).
func (p *faultProxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	io.WriteString(p.stdin, "quit\n")
	p.stdin.Close() // EOF: it exits either way
	timer := time.NewTimer(faultProxyTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// --- critical-section overlap checker ----------------------------------------

func csAppend(t testing.TB, path, what, tag string) {
	if strings.Contains(tag, "\n") {
		t.Errorf("cs%s: the tag has a newline", what)
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("cs%s: %v", what, err)
		return
	}
	defer f.Close()
	// One write(2) for the line: appends never interleave.
	if _, err := f.Write([]byte(what + " " + tag + "\n")); err != nil {
		t.Errorf("cs%s: %v", what, err)
	}
}

// csEnter appends "enter <tag>": call it right after acquiring the lock.
// Failures are reported with t.Errorf (safe from any goroutine).
func csEnter(t testing.TB, path, tag string) { csAppend(t, path, "enter", tag) }

// csLeave appends "leave <tag>": call it right before releasing the lock.
func csLeave(t testing.TB, path, tag string) { csAppend(t, path, "leave", tag) }

// csVerify returns the number of complete sections in path, or an error
// naming the offending line.
func csVerify(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1, err
	}
	lines := strings.Split(string(data), "\n")
	if lines[len(lines)-1] != "" {
		return -1, fmt.Errorf("line %d: incomplete line", len(lines))
	}
	lines = lines[:len(lines)-1]
	open, openLine, sections := "", 0, 0
	for i, line := range lines {
		n := i + 1
		switch {
		case strings.HasPrefix(line, "enter "):
			if openLine != 0 {
				return -1, fmt.Errorf("line %d: overlap: %q while \"enter %s\" (line %d) is not left",
					n, line, open, openLine)
			}
			open, openLine = line[6:], n
		case strings.HasPrefix(line, "leave "):
			if openLine == 0 {
				return -1, fmt.Errorf("line %d: %q outside any section", n, line)
			}
			if line[6:] != open {
				return -1, fmt.Errorf("line %d: %q but \"enter %s\" (line %d) is open: overlap",
					n, line, open, openLine)
			}
			open, openLine = "", 0
			sections++
		default:
			return -1, fmt.Errorf("line %d: not enter/leave: %q", n, line)
		}
	}
	if openLine != 0 {
		return -1, fmt.Errorf("line %d: \"enter %s\" never left (end of file)", openLine, open)
	}
	return sections, nil
}

// csCheck returns the number of complete sections in path and fails the
// test (t.Fatalf) on an overlap or a malformed file.
func csCheck(t testing.TB, path string) int {
	t.Helper()
	n, err := csVerify(path)
	if err != nil {
		t.Fatalf("critical sections in %s: %v", path, err)
	}
	return n
}

// --- self-test ------------------------------------------------------------------

func redisPort(t testing.TB) int {
	t.Helper()
	i := strings.LastIndex(redisAddr, ":")
	port, err := strconv.Atoi(redisAddr[i+1:])
	if err != nil {
		t.Fatalf("redis address %q", redisAddr)
	}
	return port
}

func proxyPing(t *testing.T, p *faultProxy) *respConn {
	t.Helper()
	rc, err := dialResp(p.Addr())
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(rc.close)
	if v, err := rc.do("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING through the proxy: %v %v", v, err)
	}
	return rc
}

func TestFaultProxySelf(t *testing.T) {
	p := startFaultProxy(t, redisPort(t))
	if p.URL() != "redis://127.0.0.1:"+strconv.Itoa(p.Port())+"/0" {
		t.Fatalf("URL %s", p.URL())
	}
	r := newRedis(t)

	t.Run("ping", func(t *testing.T) {
		proxyPing(t, p)
		if n := p.Count(); n != 1 {
			t.Fatalf("count %d, want 1", n)
		}
	})

	t.Run("reset", func(t *testing.T) {
		rc := proxyPing(t, p)
		p.Reset()
		if n := p.Count(); n != 0 {
			t.Fatalf("count %d after reset", n)
		}
		if v, err := rc.do("PING"); err == nil {
			t.Fatalf("PING after reset: %v", v)
		}
		proxyPing(t, p)
	})

	t.Run("blackhole", func(t *testing.T) {
		key := uniqueName(t)
		rc := proxyPing(t, p)
		p.Blackhole(true)
		if err := rc.send("INCR", key); err != nil {
			t.Fatalf("send: %v", err)
		}
		start := time.Now()
		if v, err := rc.read(300 * time.Millisecond); err == nil {
			t.Fatalf("reply under blackhole: %v", v)
		}
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Fatalf("no reply after only %v", d)
		}
		if _, ok := r.str("GET", key); ok {
			t.Fatalf("INCR reached redis under blackhole")
		}
		rc2, err := dialResp(p.Addr()) // accepted, nothing flows
		if err != nil {
			t.Fatalf("dial under blackhole: %v", err)
		}
		defer rc2.close()
		if err := rc2.send("PING"); err != nil {
			t.Fatalf("send: %v", err)
		}
		if v, err := rc2.read(300 * time.Millisecond); err == nil {
			t.Fatalf("reply under blackhole: %v", v)
		}
		p.Blackhole(false)
		if v, err := rc.read(5 * time.Second); err != nil || v != int64(1) {
			t.Fatalf("late INCR reply: %v %v", v, err)
		}
		if v, err := rc2.read(5 * time.Second); err != nil || v != "PONG" {
			t.Fatalf("late PING reply: %v %v", v, err)
		}
		proxyPing(t, p)
	})

	t.Run("drop", func(t *testing.T) {
		key := uniqueName(t)
		rc := proxyPing(t, p)
		p.Drop(true)
		if err := rc.send("INCR", key); err != nil {
			t.Fatalf("send: %v", err)
		}
		if v, err := rc.read(300 * time.Millisecond); err == nil {
			t.Fatalf("reply while dropping: %v", v)
		}
		p.Drop(false)
		time.Sleep(200 * time.Millisecond)
		if _, ok := r.str("GET", key); ok {
			t.Fatalf("a dropped INCR reached redis")
		}
		proxyPing(t, p)
	})

	t.Run("delay", func(t *testing.T) {
		rc := proxyPing(t, p)
		p.Delay(150)
		start := time.Now()
		if v, err := rc.do("PING"); err != nil || v != "PONG" {
			t.Fatalf("PING: %v %v", v, err)
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Fatalf("PING with delay 150 took %v, want >= 300ms (each way)", d)
		}
		p.Delay(0)
		start = time.Now()
		if v, err := rc.do("PING"); err != nil || v != "PONG" {
			t.Fatalf("PING: %v %v", v, err)
		}
		if d := time.Since(start); d >= 300*time.Millisecond {
			t.Fatalf("PING with delay 0 took %v", d)
		}
	})

	t.Run("errors", func(t *testing.T) {
		if _, err := p.Command("frobnicate"); err == nil {
			t.Fatalf("an unknown command was accepted")
		}
		p.Delay(0)
		down := startFaultProxy(t, mustFreePort(t))
		// The proxy resets a connection whose upstream is down, maybe
		// before the dial returns: either way no PING gets through.
		if rc, err := dialResp(down.Addr()); err == nil {
			if v, err := rc.do("PING"); err == nil {
				t.Fatalf("PING with the upstream down: %v", v)
			}
			rc.close()
		}
		if n := down.Count(); n != 0 {
			t.Fatalf("count %d with the upstream down", n)
		}
		down.Close()
		if _, err := down.Command("count"); err == nil {
			t.Fatalf("a stopped proxy answered")
		}
	})
}

func mustFreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

func TestFaultProxyCsCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cs")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(tag string) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				mu.Lock()
				csEnter(t, path, tag)
				csLeave(t, path, tag)
				mu.Unlock()
			}
		}("g" + strconv.Itoa(g))
	}
	wg.Wait()
	if n := csCheck(t, path); n != 200 {
		t.Fatalf("%d sections, want 200", n)
	}

	bad := map[string]string{
		"enter a\nenter b\nleave b\nleave a\n": "line 2:",
		"enter a\nleave b\n":                   "line 2:",
		"leave a\n":                            "line 1:",
		"enter a\nleave a\nenter b\n":          "line 3:",
		"enter a\nleave a":                     "line 2:",
		"enter a\nhello\n":                     "line 2:",
	}
	for text, where := range bad {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if n, err := csVerify(path); n != -1 || err == nil || !strings.HasPrefix(err.Error(), where) {
			t.Fatalf("%q: %d %v, want an error at %s", text, n, err, where)
		}
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := csCheck(t, path); n != 0 {
		t.Fatalf("empty file: %d sections", n)
	}
	if _, err := csVerify(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatalf("a missing file passed")
	}
}
