// Package harness runs the Go scenarios of `make bench` for any lock
// library, and prints one JSON object with the same fields as
// bench/hlbench.c, so bench/run.py treats every language alike.
//
//	PROG URL uncontended SECONDS
//	PROG URL contend SECONDS W goroutines CS_US [SAMPLES_FILE]
//	PROG URL random SECONDS W MAX_HOLD_MS [WAIT_MS]
//	PROG URL paired SECONDS FLOORLIB        (paired.go)
//
// random: W goroutines, each with its own Locker (which must be a
// TimedLocker), loop acquire with a wait of WAIT_MS (20000 by default),
// hold a time drawn uniformly in 0..MAX_HOLD_MS, release, for SECONDS (an
// acquire begun before then is waited for); every worker's waits and hold
// intervals (wall clock: bench/run.py merges processes and checks mutual
// exclusion across them). run.py runs W processes of one goroutine each.
//
// HLBENCH_WINDOW in the environment (contend, random): "#window start"
// once every worker is ready and "#window end" once all are done, each
// waiting for a line on stdin (run.py reads INFO commandstats meanwhile),
// as bench/hlbench.c does.
//
// HILOCK_BENCH_KILL=PID:PORT in the environment: a server goes down once
// the program is connected (before the scenario), killed by PID; Main
// returns to the scenario when PORT refuses connections.
package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Locker is one lock object; each worker gets its own.
type Locker interface {
	Lock() error
	Unlock() error
}

// TimedLocker acquires with a bounded wait: false when the wait ran out.
type TimedLocker interface {
	LockWithin(wait time.Duration) (bool, error)
}

var stdin = bufio.NewReader(os.Stdin)

// windowMark: see the package comment.
// runWindow is the measured run: the window opens (HLBENCH_WINDOW), the
// workers waiting on start go until *end, now + dur; the seconds it took,
// once every worker ended and the window closed.
func runWindow(start chan struct{}, wg *sync.WaitGroup, end *time.Time,
	dur time.Duration) float64 {
	windowMark("start")
	t0 := time.Now()
	*end = t0.Add(dur)
	close(start)
	wg.Wait()
	el := time.Since(t0).Seconds()
	windowMark("end")
	return el
}

func windowMark(what string) {
	if os.Getenv("HLBENCH_WINDOW") == "" {
		return
	}
	fmt.Println("#window " + what)
	if _, err := stdin.ReadString('\n'); err != nil {
		die(fmt.Errorf("window: stdin: %v", err))
	}
}

// Factory makes a Locker for a name. It must be safe for concurrent use.
type Factory func(name string) Locker

func die(err error) {
	fmt.Fprintln(os.Stderr, "gobench:", err)
	os.Exit(1)
}

func pct(v []int64, p float64) int64 {
	if len(v) == 0 {
		return 0
	}
	return v[int(p*float64(len(v)-1)+0.5)]
}

// Main parses the arguments (after URL, which the caller used to build
// the factory) and runs the scenario.
func Main(lib string, args []string, newLock Factory) {
	if len(args) < 3 {
		die(fmt.Errorf("usage: URL uncontended SECONDS | URL contend SECONDS W MODE CS_US [FILE]"))
	}
	if v := os.Getenv("HILOCK_BENCH_KILL"); v != "" {
		serverDown(v)
	}
	secs, _ := strconv.ParseFloat(args[2], 64)
	dur := time.Duration(secs * float64(time.Second))
	out := map[string]interface{}{"lang": "go", "lib": lib}
	switch args[1] {
	case "paired":
		paired(out, newLock, lib, args[0], args[2:])
	case "uncontended":
		l := newLock("bench:go:uncontended:" + lib)
		n := 0
		t0 := time.Now()
		for time.Since(t0) < dur {
			if err := l.Lock(); err != nil {
				die(err)
			}
			if err := l.Unlock(); err != nil {
				die(err)
			}
			n++
		}
		out["scenario"] = "uncontended"
		out["pairs_per_s"] = float64(n) / time.Since(t0).Seconds()
	case "contend":
		if len(args) < 6 {
			die(fmt.Errorf("contend needs SECONDS W MODE CS_US"))
		}
		w, _ := strconv.Atoi(args[3])
		csUs, _ := strconv.Atoi(args[5])
		contend(out, newLock, dur, w, args[4], csUs, args[6:])
	case "random":
		if len(args) < 5 {
			die(fmt.Errorf("random needs SECONDS W MAX_HOLD_MS [WAIT_MS]"))
		}
		w, _ := strconv.Atoi(args[3])
		maxHold, _ := strconv.Atoi(args[4])
		waitMs := 20000
		if len(args) > 5 {
			waitMs, _ = strconv.Atoi(args[5])
		}
		random(out, newLock, dur, w, maxHold, waitMs)
	default:
		die(fmt.Errorf("unknown scenario %q", args[1]))
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if v, ok := out["violations"].(int64); ok && v != 0 {
		os.Exit(1)
	}
}

// serverDown kills the server PID:PORT and waits until its port refuses.
func serverDown(spec string) {
	parts := strings.SplitN(spec, ":", 2)
	pid, err1 := strconv.Atoi(parts[0])
	if len(parts) != 2 || err1 != nil {
		die(fmt.Errorf("HILOCK_BENCH_KILL=%q: PID:PORT expected", spec))
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		die(fmt.Errorf("kill %d: %v", pid, err))
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+parts[1], time.Second)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	die(fmt.Errorf("server %s still answers after SIGKILL", spec))
}

func contend(out map[string]interface{}, newLock Factory, dur time.Duration,
	w int, mode string, csUs int, rest []string) {
	var (
		lastRelease atomic.Int64 // ns since base, when the holder let go
		holders     atomic.Int32
		violations  atomic.Int64
		wg          sync.WaitGroup
		start       = make(chan struct{})
	)
	base := time.Now()
	counts := make([]int64, w)
	waits := make([][]int64, w)
	hands := make([][]int64, w)
	csSum := make([]int64, w)
	var end time.Time
	for i := 0; i < w; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := newLock("bench:go:contend")
			<-start
			for {
				t0 := time.Since(base).Nanoseconds()
				if time.Now().After(end) {
					return
				}
				if err := l.Lock(); err != nil {
					die(err)
				}
				t1 := time.Since(base).Nanoseconds()
				if holders.Add(1) != 1 {
					violations.Add(1)
				}
				rel := lastRelease.Load()
				waits[i] = append(waits[i], (t1-t0)/1000)
				if rel > t0 {
					hands[i] = append(hands[i], (t1-rel)/1000)
				}
				time.Sleep(time.Duration(csUs) * time.Microsecond)
				csSum[i] += time.Since(base).Nanoseconds() - t1
				counts[i]++
				holders.Add(-1)
				lastRelease.Store(time.Since(base).Nanoseconds())
				if err := l.Unlock(); err != nil {
					die(err)
				}
			}
		}(i)
	}
	el := runWindow(start, &wg, &end, dur)
	var all, hs []int64
	var total, cs int64
	mn, mx := int64(-1), int64(0)
	for i := 0; i < w; i++ {
		all = append(all, waits[i]...)
		hs = append(hs, hands[i]...)
		total += counts[i]
		cs += csSum[i]
		if mn < 0 || counts[i] < mn {
			mn = counts[i]
		}
		if counts[i] > mx {
			mx = counts[i]
		}
	}
	if len(rest) > 0 && rest[0] != "" {
		f, err := os.Create(rest[0])
		if err != nil {
			die(err)
		}
		for _, v := range all {
			fmt.Fprintln(f, v)
		}
		f.Close()
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	sort.Slice(hs, func(a, b int) bool { return hs[a] < hs[b] })
	var max int64
	if len(all) > 0 {
		max = all[len(all)-1]
	}
	csMean := 0.0
	if total > 0 {
		csMean = float64(cs) / 1000 / float64(total)
	}
	out["scenario"] = "contend"
	out["mode"] = mode
	out["workers"] = w
	out["cs_us"] = csUs
	out["acq_per_s"] = float64(total) / el
	out["cs_mean_us"] = csMean
	out["wait_p50_us"] = pct(all, 0.5)
	out["wait_p99_us"] = pct(all, 0.99)
	out["wait_max_us"] = max
	out["handoff_p50_us"] = pct(hs, 0.5)
	out["handoff_p99_us"] = pct(hs, 0.99)
	out["fair_min"] = mn
	out["fair_max"] = mx
	out["violations"] = violations.Load()
	out["acquisitions"] = total
}

type randomWorker struct {
	Acq      int64      `json:"acq"`
	Timeouts int64      `json:"timeouts"`
	Waits    []int64    `json:"waits_us"`
	Holds    [][2]int64 `json:"holds_us"`
}

func random(out map[string]interface{}, newLock Factory, dur time.Duration,
	w, maxHoldMs, waitMs int) {
	var (
		holders    atomic.Int32
		violations atomic.Int64
		wg         sync.WaitGroup
		start      = make(chan struct{})
		end        time.Time
	)
	ws := make([]randomWorker, w)
	for i := 0; i < w; i++ {
		tl, ok := newLock("bench:go:random").(TimedLocker)
		if !ok {
			die(fmt.Errorf("random: this library has no timed acquire"))
		}
		wg.Add(1)
		go func(i int, l TimedLocker) {
			defer wg.Done()
			me := &ws[i]
			me.Waits, me.Holds = []int64{}, [][2]int64{}
			rnd := rand.New(rand.NewSource(time.Now().UnixNano() + int64(i)))
			<-start
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				got, err := l.LockWithin(time.Duration(waitMs) * time.Millisecond)
				if err != nil {
					die(err)
				}
				me.Waits = append(me.Waits, time.Since(t0).Microseconds())
				if !got {
					me.Timeouts++
					continue
				}
				a := time.Now().UnixMicro()
				if holders.Add(1) != 1 {
					violations.Add(1)
				}
				time.Sleep(time.Duration(rnd.Int63n(int64(maxHoldMs)*1000+1)) * time.Microsecond)
				me.Acq++
				holders.Add(-1)
				me.Holds = append(me.Holds, [2]int64{a, time.Now().UnixMicro()})
				if err := l.(Locker).Unlock(); err != nil {
					die(err)
				}
			}
		}(i, tl)
	}
	el := runWindow(start, &wg, &end, dur)
	out["scenario"] = "random"
	out["mode"] = "goroutines"
	out["workers"] = w
	out["max_hold_ms"] = maxHoldMs
	out["wait_ms"] = waitMs
	out["elapsed_s"] = el
	out["violations"] = violations.Load()
	out["per_worker"] = ws
}
