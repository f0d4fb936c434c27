package hilock_test

// Sentinel and Cluster against real deployments, one of each for the
// package (TestSentinel and TestCluster run in parallel, their cases one
// after the other).
//
// startTopology runs the launcher hl_topo (tests/interop/topo-up.c, built
// by CMake into <build>/tests/tools, on the C tests' topology harness):
// Debian's redis-server and redis-sentinel on free 127.0.0.1 ports, a
// master with two replicas and three sentinels, or a cluster of three
// masters with a replica each. It prints "up <kind> URL key=value..." once
// the deployment is up, then answers one line per command on its stdin
// (master, slot KEY_HEX, masters, kill-master [PORT], failover PORT,
// restart PORT); EOF on its stdin stops every node. The binary is
// $HILOCK_TOPO (set by `make test-go`), else ../../build*/tests/tools/hl_topo.

import (
	"bufio"
	"context"
	"encoding/hex"
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

	hilock "github.com/hilock/hilock/bindings/go"
)

const topoEnv = "HILOCK_TOPO"

type topology struct {
	t      testing.TB
	kind   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at EOF
	exited chan struct{}
	log    string // its stderr

	URL  string
	Info map[string]string

	mu sync.Mutex // one command at a time
}

func topoBinary() (string, error) {
	if p := os.Getenv(topoEnv); p != "" {
		return p, nil
	}
	found, _ := filepath.Glob(filepath.Join("..", "..", "build*", "tests", "tools", "hl_topo"))
	var best string
	var bestTime time.Time
	for _, f := range found {
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.ModTime().After(bestTime) {
			best, bestTime = f, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("hl_topo not found: run `make build` or set %s", topoEnv)
	}
	return filepath.Abs(best)
}

func fields(words []string) map[string]string {
	out := make(map[string]string)
	for _, w := range words {
		if i := strings.IndexByte(w, '='); i > 0 {
			out[w[:i]] = w[i+1:]
		}
	}
	return out
}

// startTopology starts a deployment ("sentinel" or "cluster"), stopped by
// t.Cleanup. Without the launcher, the server ($REDIS_SERVER, else
// redis-server; sentinels are the same binary with --sentinel) or redis-cli
// it skips the test, unless $HILOCK_TOPO is set (make test-go): then it
// fails.
func startTopology(t *testing.T, kind string) *topology {
	t.Helper()
	bin, err := topoBinary()
	if err == nil && os.Getenv(topoEnv) == "" {
		server := os.Getenv("REDIS_SERVER")
		if server == "" {
			server = "redis-server"
		}
		for _, tool := range []string{server, "redis-cli"} {
			if _, e := exec.LookPath(tool); e != nil {
				err = fmt.Errorf("%s not found", tool)
			}
		}
	}
	if err != nil {
		if os.Getenv(topoEnv) == "" {
			t.Skipf("no %s deployment: %v", kind, err)
		}
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), kind+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tp := &topology{t: t, kind: kind, lines: make(chan string, 16), exited: make(chan struct{}),
		log: logPath}
	tp.cmd = exec.Command(bin, kind)
	tp.cmd.Stdout = w
	tp.cmd.Stderr = logf
	tp.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if tp.stdin, err = tp.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := tp.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	w.Close()
	logf.Close()
	go func() {
		defer close(tp.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			tp.lines <- sc.Text()
		}
		r.Close()
	}()
	go func() { tp.cmd.Wait(); close(tp.exited) }()
	t.Cleanup(tp.stop)

	line, err := tp.readLine(60 * time.Second)
	if err != nil {
		t.Fatalf("hl_topo %s did not start: %v%s", kind, err, tp.logTail())
	}
	words := strings.Fields(line)
	if len(words) < 3 || words[0] != "up" || words[1] != kind {
		t.Fatalf("hl_topo %s: unexpected first line %q%s", kind, line, tp.logTail())
	}
	tp.URL = words[2]
	tp.Info = fields(words[3:])
	tp.synced(t)
	return tp
}

// synced waits until every replica acknowledges a write of its master
// (WAIT). hl_topo says "up" once the replicas' links are up, when one may
// still be a moment from acknowledging anything, and until then the
// client's WAIT after each lock change would time out.
func (tp *topology) synced(t *testing.T) {
	t.Helper()
	wait := func(master int, key string, replicas int) {
		rc, err := dialResp("127.0.0.1:" + strconv.Itoa(master))
		if err != nil {
			t.Fatalf("node %d: %v", master, err)
		}
		defer rc.close()
		// one connection: WAIT counts the acknowledgements of its writes
		if _, err := rc.do("SET", key, "1"); err != nil {
			t.Fatalf("node %d: SET: %v", master, err)
		}
		if _, err := rc.do("DEL", key); err != nil {
			t.Fatalf("node %d: DEL: %v", master, err)
		}
		n, err := rc.do("WAIT", strconv.Itoa(replicas), "20000")
		if err != nil || n != int64(replicas) {
			t.Fatalf("%v (%v) of %d replicas of %d acknowledged a write%s", n, err, replicas,
				master, tp.logTail())
		}
	}
	if tp.kind == "sentinel" {
		master, err := strconv.Atoi(tp.Info["master_port"])
		if err != nil {
			t.Fatalf("no master_port in %v", tp.Info)
		}
		wait(master, "hl:topo:synced", len(ports(t, tp.Info["data"]))-1)
		return
	}
	for master, keys := range namesOverMasters(t, tp, "hl:topo:synced", 1) {
		wait(master, keys[0], 1)
	}
}

func (tp *topology) logTail() string {
	b, _ := os.ReadFile(tp.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\nhl_topo's log:\n" + strings.Join(lines, "\n")
}

func (tp *topology) readLine(limit time.Duration) (string, error) {
	select {
	case line, ok := <-tp.lines:
		if !ok {
			return "", errors.New("hl_topo exited")
		}
		return line, nil
	case <-time.After(limit):
		return "", fmt.Errorf("no answer within %v", limit)
	}
}

// command sends one command and returns its answer's fields ("ok old=1
// new=2": old, new); it fails the test on "err ..." or no answer.
func (tp *topology) command(t *testing.T, line string) map[string]string {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if _, err := io.WriteString(tp.stdin, line+"\n"); err != nil {
		t.Fatalf("hl_topo %q: %v", line, err)
	}
	ans, err := tp.readLine(60 * time.Second)
	if err != nil {
		t.Fatalf("hl_topo %q: %v%s", line, err, tp.logTail())
	}
	words := strings.Fields(ans)
	if len(words) == 0 || words[0] != "ok" {
		t.Fatalf("hl_topo %q: %s%s", line, ans, tp.logTail())
	}
	return fields(words[1:])
}

func (tp *topology) stop() {
	tp.stdin.Close() // EOF: every node stopped
	select {
	case <-tp.exited:
	case <-time.After(30 * time.Second):
		tp.cmd.Process.Kill()
		<-tp.exited
	}
}

func (tp *topology) port(t *testing.T, cmd, field string) int {
	t.Helper()
	p, err := strconv.Atoi(tp.command(t, cmd)[field])
	if err != nil {
		t.Fatalf("hl_topo %q: no %s", cmd, field)
	}
	return p
}

// masterOf is the port of the cluster master that owns name's slot.
func (tp *topology) masterOf(t *testing.T, name string) int {
	t.Helper()
	return tp.port(t, "slot "+hex.EncodeToString([]byte(name)), "port")
}

func ports(t *testing.T, list string) []int {
	t.Helper()
	var out []int
	for _, a := range strings.Split(list, ",") {
		if a == "" {
			continue
		}
		p, err := strconv.Atoi(a[strings.LastIndexByte(a, ':')+1:])
		if err != nil {
			t.Fatalf("bad address %q", a)
		}
		out = append(out, p)
	}
	return out
}

// nodeDo runs one command on the node at 127.0.0.1:port.
func nodeDo(t *testing.T, port int, args ...string) interface{} {
	t.Helper()
	rc, err := dialResp("127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatalf("node %d: %v", port, err)
	}
	defer rc.close()
	v, err := rc.do(args...)
	if err != nil {
		t.Fatalf("node %d: %s: %v", port, strings.Join(args, " "), err)
	}
	return v
}

// commandStats: the calls of each command on the node (INFO commandstats).
func commandStats(t *testing.T, port int) map[string]int {
	t.Helper()
	text, _ := nodeDo(t, port, "INFO", "commandstats").([]byte)
	out := make(map[string]int)
	for _, line := range strings.Split(string(text), "\r\n") {
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		name, rest, ok := strings.Cut(line[len("cmdstat_"):], ":")
		if !ok {
			continue
		}
		rest = rest[strings.Index(rest, "calls=")+len("calls="):]
		if i := strings.IndexByte(rest, ','); i >= 0 {
			rest = rest[:i]
		}
		out[name], _ = strconv.Atoi(rest)
	}
	return out
}

func resetStats(t *testing.T, ports ...int) {
	t.Helper()
	for _, p := range ports {
		nodeDo(t, p, "CONFIG", "RESETSTAT")
	}
}

// sentinelNodes: the master's port and those of the replicas that answer.
func sentinelNodes(t *testing.T, tp *topology) (master int, replicas []int) {
	t.Helper()
	master = tp.port(t, "master", "port")
	for _, p := range ports(t, tp.Info["data"]) {
		if p == master {
			continue
		}
		if rc, err := dialResp("127.0.0.1:" + strconv.Itoa(p)); err == nil {
			_, err = rc.do("PING")
			rc.close()
			if err == nil {
				replicas = append(replicas, p)
			}
		}
	}
	return master, replicas
}

type waitResult struct {
	ok  bool
	err error
	at  time.Time
}

// topoWaitFor acquires m in a goroutine (waiting at most wait) and releases
// it; the result comes on the channel.
func topoWaitFor(m *hilock.Mutex, wait time.Duration) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		ok, err := m.TryLock(context.Background(), wait, 0)
		res := waitResult{ok: ok, err: err, at: time.Now()}
		if ok {
			res.err = m.Release()
		}
		ch <- res
	}()
	return ch
}

func receive(t *testing.T, ch <-chan waitResult, limit time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		return r
	case <-time.After(limit):
		t.Fatalf("the waiter outlived its wait (%v)", limit)
	}
	return waitResult{}
}

func topoConnect(t *testing.T, url string, opts ...hilock.Option) *hilock.Client {
	t.Helper()
	c, err := hilock.Connect(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func tryLock(t *testing.T, m *hilock.Mutex, wait time.Duration) bool {
	t.Helper()
	ok, err := m.TryLock(context.Background(), wait, 0)
	if err != nil {
		t.Fatalf("TryLock(%s): %v", m.Name(), err)
	}
	return ok
}

const topoSecret = "s3ntinel-Secret"

func TestSentinel(t *testing.T) {
	t.Parallel()
	tp := startTopology(t, "sentinel")
	if !strings.HasPrefix(tp.URL, "redis-sentinel://") {
		t.Fatalf("URL %q", tp.URL)
	}

	t.Run("LockAndWaiter", func(t *testing.T) {
		a, b := topoConnect(t, tp.URL), topoConnect(t, tp.URL)
		name := "go:topo:sentinel"
		m := a.Mutex(name)
		if !tryLock(t, m, 0) {
			t.Fatal("a free lock was not taken")
		}
		master, _ := sentinelNodes(t, tp)
		if v := nodeDo(t, master, "EXISTS", name); v != int64(1) {
			t.Fatalf("EXISTS on the master = %v", v)
		}
		if tryLock(t, b.Mutex(name), 0) {
			t.Fatal("a held lock was taken")
		}
		ch := topoWaitFor(b.Mutex(name), 10*time.Second)
		time.Sleep(300 * time.Millisecond)
		released := time.Now()
		if err := m.Release(); err != nil {
			t.Fatal(err)
		}
		r := receive(t, ch, 20*time.Second)
		if !r.ok || r.at.Sub(released) > 2*time.Second {
			t.Fatalf("waiter: acquired %v, %v after the release", r.ok, r.at.Sub(released))
		}
	})

	t.Run("ReadFromAndWait", func(t *testing.T) {
		master, replicas := sentinelNodes(t, tp)
		if len(replicas) != 2 {
			t.Fatalf("replicas %v", replicas)
		}
		name := "go:topo:reads"
		// ReadReplica: the queries go to the replicas, never the master
		m := topoConnect(t, tp.URL, hilock.WithReadFrom(hilock.ReadReplica)).Mutex(name)
		resetStats(t, append([]int{master}, replicas...)...)
		for i := 0; i < 3; i++ {
			if locked, err := m.IsLocked(); err != nil || locked {
				t.Fatalf("IsLocked = %v, %v", locked, err)
			}
		}
		if _, ok, err := m.TTL(); err != nil || ok {
			t.Fatalf("TTL of a free lock: %v, %v", ok, err)
		}
		exists, pttl := 0, 0
		for _, p := range replicas {
			s := commandStats(t, p)
			exists += s["exists"]
			pttl += s["pttl"]
		}
		if exists != 3 || pttl != 1 || commandStats(t, master)["exists"] != 0 {
			t.Fatalf("on the replicas: %d EXISTS, %d PTTL; on the master %d EXISTS",
				exists, pttl, commandStats(t, master)["exists"])
		}
		// the default: the master
		resetStats(t, append([]int{master}, replicas...)...)
		if _, err := topoConnect(t, tp.URL).Mutex(name).IsLocked(); err != nil {
			t.Fatal(err)
		}
		if n := commandStats(t, master)["exists"]; n != 1 {
			t.Fatalf("ReadMaster: %d EXISTS on the master", n)
		}
		// WAIT off ...
		resetStats(t, master)
		m = topoConnect(t, tp.URL, hilock.WithWaitReplicas(0, 0)).Mutex(name)
		if !tryLock(t, m, 0) || m.Release() != nil {
			t.Fatal("lock and release")
		}
		if n := commandStats(t, master)["wait"]; n != 0 {
			t.Fatalf("WithWaitReplicas(0): %d WAIT on the master", n)
		}
		// ... and for both replicas: once the lock is taken, they have it
		resetStats(t, master)
		m = topoConnect(t, tp.URL, hilock.WithWaitReplicas(2, 2*time.Second)).Mutex(name)
		if !tryLock(t, m, 0) {
			t.Fatal("a free lock was not taken")
		}
		for _, p := range replicas {
			if v := nodeDo(t, p, "EXISTS", name); v != int64(1) {
				t.Fatalf("EXISTS on replica %d = %v right after the lock", p, v)
			}
		}
		if err := m.Release(); err != nil {
			t.Fatal(err)
		}
		if n := commandStats(t, master)["wait"]; n < 2 {
			t.Fatalf("WithWaitReplicas(2): %d WAIT on the master", n)
		}
	})

	t.Run("Credentials", func(t *testing.T) {
		// The sentinels have no password: AUTH with one is refused.
		for _, opt := range []hilock.Option{
			hilock.WithSentinelAuth("watcher", topoSecret),
			hilock.WithSentinelAuth("", topoSecret),
		} {
			_, err := hilock.Connect(context.Background(), tp.URL, opt,
				hilock.WithConnectTimeout(3*time.Second), hilock.WithRetry(0, 0))
			if err == nil {
				t.Fatal("Connect with a wrong sentinel password succeeded")
			}
			if s := fmt.Sprintf("%v %+v %#v", err, err, err); strings.Contains(s, topoSecret) {
				t.Fatalf("the sentinel password in the error: %s", s)
			}
		}
		// the data nodes' credentials, in the URL: no user alice there
		url := strings.Replace(tp.URL, "://", "://alice:"+topoSecret+"@", 1)
		_, err := hilock.Connect(context.Background(), url, hilock.WithRetry(0, 0))
		if !errors.Is(err, hilock.ErrAuth) || strings.Contains(fmt.Sprintf("%v %#v", err, err), topoSecret) {
			t.Fatalf("Connect with a wrong data password: %v", err)
		}
		for _, opt := range []hilock.Option{
			hilock.WithSentinelAuth("", topoSecret+"\x00"),
			hilock.WithReadFrom(hilock.ReadFrom(7)),
			hilock.WithWaitReplicas(-2, 0),
			hilock.WithWaitReplicas(1, -time.Second),
		} {
			_, err := hilock.Connect(context.Background(), tp.URL, opt)
			if !errors.Is(err, hilock.ErrInvalid) || strings.Contains(err.Error(), topoSecret) {
				t.Fatalf("a bad option: %v", err)
			}
		}
	})

	// Last: the deployment has one node fewer afterwards.
	t.Run("Failover", func(t *testing.T) {
		events := make(chan hilock.Event, 64)
		holder := topoConnect(t, tp.URL, hilock.WithWatchdogTimeout(10*time.Second),
			hilock.WithEventHandler(func(e hilock.Event) { events <- e }))
		other := topoConnect(t, tp.URL)
		name := "go:topo:failover"
		m := holder.Mutex(name)
		if !tryLock(t, m, 0) {
			t.Fatal("a free lock was not taken")
		}
		ch := topoWaitFor(other.Mutex(name), 40*time.Second)
		time.Sleep(300 * time.Millisecond)
		ans := tp.command(t, "kill-master")
		t.Logf("failover %s -> %s in %s ms", ans["old"], ans["new"], ans["ms"])

		// a lock taken after the failover, on the new master
		after := other.Mutex("go:topo:after-failover")
		if !tryLock(t, after, 15*time.Second) {
			t.Fatal("no lock after the failover")
		}
		newMaster, _ := strconv.Atoi(ans["new"])
		if v := nodeDo(t, newMaster, "EXISTS", after.Name()); v != int64(1) {
			t.Fatalf("EXISTS on the new master = %v", v)
		}
		if err := after.Release(); err != nil {
			t.Fatal(err)
		}

		// the hold: renewed on the new master, or reported lost
		released := time.Now()
		err := m.Release()
		lost := errors.Is(err, hilock.ErrLost)
		if err != nil && !lost {
			t.Fatalf("Release after the failover: %v", err)
		}
		r := receive(t, ch, 60*time.Second)
		bound := 5 * time.Second
		if lost {
			bound = 10 * time.Second // the lease ends it
		}
		if !r.ok || r.at.Sub(released) > bound {
			t.Fatalf("waiter: acquired %v, %v after the release (lost %v)", r.ok,
				r.at.Sub(released), lost)
		}
		t.Logf("hold lost: %v; waiter woken %v after the release", lost, r.at.Sub(released))

		// the failover, counted once and handed to the handler
		if n := holder.Stats().Failovers; n != 1 {
			t.Fatalf("Stats().Failovers = %d, want 1", n)
		}
		e := waitEvent(t, events, hilock.EventFailover, 5*time.Second)
		if e.Node != "127.0.0.1:"+ans["new"] {
			t.Fatalf("failover event node %q, want the new master %s: %s", e.Node, ans["new"], e)
		}
	})
}

// namesOverMasters: per master, n names whose slot it owns.
func namesOverMasters(t *testing.T, tp *topology, prefix string, n int) map[int][]string {
	t.Helper()
	masters := ports(t, tp.command(t, "masters")["masters"])
	if len(masters) != 3 {
		t.Fatalf("masters %v", masters)
	}
	out := make(map[int][]string)
	for _, p := range masters {
		out[p] = nil
	}
	for i := 0; ; i++ {
		done := true
		for _, names := range out {
			if len(names) < n {
				done = false
			}
		}
		if done {
			return out
		}
		if i > 1000 {
			t.Fatal("no names for every master")
		}
		name := prefix + ":" + strconv.Itoa(i)
		p := tp.masterOf(t, name)
		if len(out[p]) < n {
			out[p] = append(out[p], name)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	tp := startTopology(t, "cluster")
	if !strings.HasPrefix(tp.URL, "redis-cluster://") {
		t.Fatalf("URL %q", tp.URL)
	}

	t.Run("LocksOverTheMasters", func(t *testing.T) {
		byMaster := namesOverMasters(t, tp, "go:topo:cluster", 3)
		a, b := topoConnect(t, tp.URL), topoConnect(t, tp.URL)
		var held []*hilock.Mutex
		for port, names := range byMaster {
			for _, name := range names {
				m := a.Mutex(name)
				if !tryLock(t, m, 0) {
					t.Fatalf("%s was not taken", name)
				}
				held = append(held, m)
				if v := nodeDo(t, port, "EXISTS", name); v != int64(1) {
					t.Fatalf("EXISTS %s on its master %d = %v", name, port, v)
				}
				if tryLock(t, b.Mutex(name), 0) {
					t.Fatalf("%s: a held lock was taken", name)
				}
				if locked, err := b.Mutex(name).IsLocked(); err != nil || !locked {
					t.Fatalf("IsLocked(%s) = %v, %v", name, locked, err)
				}
			}
		}
		for _, m := range held {
			if err := m.Release(); err != nil {
				t.Fatal(err)
			}
		}
		for _, names := range byMaster {
			for _, name := range names {
				m := b.Mutex(name)
				if !tryLock(t, m, 0) {
					t.Fatalf("%s: a free lock was not taken", name)
				}
				m.Unlock()
			}
		}
	})

	t.Run("WaitersWoken", func(t *testing.T) {
		byMaster := namesOverMasters(t, tp, "go:topo:wake", 1)
		a, b := topoConnect(t, tp.URL), topoConnect(t, tp.URL)
		var held []*hilock.Mutex
		var waiters []<-chan waitResult
		for _, names := range byMaster {
			m := a.Mutex(names[0])
			if !tryLock(t, m, 0) {
				t.Fatalf("%s was not taken", names[0])
			}
			held = append(held, m)
			waiters = append(waiters, topoWaitFor(b.Mutex(names[0]), 15*time.Second))
		}
		time.Sleep(500 * time.Millisecond)
		for i, m := range held {
			released := time.Now()
			if err := m.Release(); err != nil {
				t.Fatal(err)
			}
			r := receive(t, waiters[i], 30*time.Second)
			if !r.ok || r.at.Sub(released) > 2*time.Second {
				t.Fatalf("%s: waiter acquired %v, %v after the release", m.Name(), r.ok,
					r.at.Sub(released))
			}
		}
	})
}
