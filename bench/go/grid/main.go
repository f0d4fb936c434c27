// The data grid's Go bench: one operation of a grid kind through hilock's
// cgo binding or a peer (raw go-redis; redis_rate for the rate limiter),
// in 5 ms slices that alternate, in this process, with slices of its
// floor: the commands hilock sent for it (captured by hlbench
// grid-capture into FLOORFILE) replayed by the C floor, libhlfloor
// (bench/floor.h's hlfloor_cmds), loaded with dlopen. Prints one JSON
// object, as bench/hlbench.c's grid-paired.
//
//	grid LIB URL SECONDS FLOORLIB FLOORFILE KIND NAME OP N ARG...
//
// LIB: hilock, goredis, redis_rate. The last OP group is measured; those
// before it set up (a peer skips a set-up it has no entry for). ARG:
// b:TEXT, x:HEX, i:N, f:X, m:MODE (a rate limiter's mode by name),
// s:SECONDS (a duration), - (left out), as hlbench takes them.
// FLOORFILE "-": no floor (a peer of a kind hilock has not yet).
// hilock's runs add slices of the crossing: the floor's round called once
// per operation through cgo, which is what calling C costs without hilock
// (cross_ops_per_s, cross_cpu_us).
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void *(*hlf_open)(const char *, const char *, char *, size_t);
typedef long long (*hlf_run)(void *, double, double *);
typedef const char *(*hlf_err)(const void *);
typedef int (*hlf_once)(void *);
static hlf_open g_open;
static hlf_run g_run;
static hlf_err g_err;
static hlf_once g_once;

static const char *floor_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW);
	if (!h)
		return dlerror();
	g_open = (hlf_open)dlsym(h, "hlfloor_cmds_open");
	g_run = (hlf_run)dlsym(h, "hlfloor_cmds_run");
	g_err = (hlf_err)dlsym(h, "hlfloor_cmds_error");
	g_once = (hlf_once)dlsym(h, "hlfloor_cmds_once");
	if (!g_open || !g_run || !g_err || !g_once)
		return "libhlfloor has no hlfloor_cmds";
	return NULL;
}
static void *floor_open(const char *url, const char *path, char *err, size_t n) {
	return g_open(url, path, err, n);
}
static long long floor_run(void *f, double s, double *el) { return g_run(f, s, el); }
static const char *floor_err(void *f) { return g_err(f); }
static int floor_once(void *f) { return g_once(f); }
*/
import "C"

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	hilock "github.com/hilock/hilock/bindings/go"
)

type call func(ctx context.Context) error

// env is what an operation's maker gets.
type env struct {
	url  string
	name string
	a    []interface{} // []byte, int64, float64 or nil
	hl   *hilock.Client
	rdb  *redis.Client
}

func (e *env) b(i int) []byte          { v, _ := e.a[i].([]byte); return v }
func (e *env) i(i int) int64           { v, _ := e.a[i].(int64); return v }
func (e *env) f(i int) float64         { v, _ := e.a[i].(float64); return v }
func (e *env) d(i int) time.Duration   { v, _ := e.a[i].(time.Duration); return v }
func (e *env) m(i int) hilock.RateMode { v, _ := e.a[i].(hilock.RateMode); return v }

// list is the arguments as a list argument's values (bytes).
func (e *env) list() [][]byte {
	out := make([][]byte, len(e.a))
	for i := range e.a {
		out[i] = e.b(i)
	}
	return out
}
func ignore[T any](_ T, err error) error { return err }

// Scripts a go-redis user writes for what Redis has no command for (their
// own, not hilock's).
var casBytes = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then
redis.call('set', KEYS[1], ARGV[2]) return 1 end return 0`)
var casLong = redis.NewScript(`local v = redis.call('get', KEYS[1]) or '0'
if v == ARGV[1] then redis.call('set', KEYS[1], ARGV[2]) return 1 end
return 0`)

const rate = 1000000 // permits per second: high enough never to deny here

// The floor and the call alternate in slices of this many seconds (as
// bench/hlbench.c GRID_SLICE_NS).
const gridSlice = 0.005

// ops: "lib kind.op" -> the call. A kind that lands plugs in with a line
// per operation.
var ops = map[string]func(e *env) call{
	"hilock bucket.get": func(e *env) call {
		o := e.hl.Bucket(e.name)
		return func(ctx context.Context) error { return ignore(o.Get(ctx)) }
	},
	"hilock bucket.set": func(e *env) call {
		o, v := e.hl.Bucket(e.name), e.b(0)
		return func(ctx context.Context) error { return o.Set(ctx, v, 0) }
	},
	"hilock bucket.compare_and_set": func(e *env) call {
		o, x, v := e.hl.Bucket(e.name), e.b(0), e.b(1)
		return func(ctx context.Context) error { return ignore(o.CompareAndSet(ctx, x, v)) }
	},
	"hilock atomic_long.get": func(e *env) call {
		o := e.hl.AtomicLong(e.name)
		return func(ctx context.Context) error { return ignore(o.Get(ctx)) }
	},
	"hilock atomic_long.set": func(e *env) call {
		o, v := e.hl.AtomicLong(e.name), e.i(0)
		return func(ctx context.Context) error { return o.Set(ctx, v) }
	},
	"hilock atomic_long.increment_and_get": func(e *env) call {
		o := e.hl.AtomicLong(e.name)
		return func(ctx context.Context) error { return ignore(o.IncrementAndGet(ctx)) }
	},
	"hilock atomic_long.compare_and_set": func(e *env) call {
		o, x, v := e.hl.AtomicLong(e.name), e.i(0), e.i(1)
		return func(ctx context.Context) error { return ignore(o.CompareAndSet(ctx, x, v)) }
	},
	"hilock atomic_double.add_and_get": func(e *env) call {
		o, d := e.hl.AtomicDouble(e.name), e.f(0)
		return func(ctx context.Context) error { return ignore(o.AddAndGet(ctx, d)) }
	},
	"hilock bit_set.set": func(e *env) call {
		o, i := e.hl.BitSet(e.name), e.i(0)
		return func(ctx context.Context) error { return ignore(o.Set(ctx, i, true)) }
	},
	"hilock bit_set.get": func(e *env) call {
		o, i := e.hl.BitSet(e.name), e.i(0)
		return func(ctx context.Context) error { return ignore(o.Get(ctx, i)) }
	},
	"hilock bloom_filter.try_init": func(e *env) call {
		o, n, p := e.hl.BloomFilter(e.name), e.i(0), e.f(1)
		return func(ctx context.Context) error { return ignore(o.TryInit(ctx, n, p)) }
	},
	"hilock bloom_filter.add": func(e *env) call {
		o, v := e.hl.BloomFilter(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Add(ctx, v)) }
	},
	"hilock bloom_filter.contains": func(e *env) call {
		o, v := e.hl.BloomFilter(e.name), e.b(0)
		return func(ctx context.Context) error { return ignore(o.Contains(ctx, v)) }
	},
	"hilock bloom_filter.add_all": func(e *env) call {
		o, vs := e.hl.BloomFilter(e.name), e.list()
		return func(ctx context.Context) error { return ignore(o.AddAll(ctx, vs...)) }
	},
	"hilock bloom_filter.contains_all": func(e *env) call {
		o, vs := e.hl.BloomFilter(e.name), e.list()
		return func(ctx context.Context) error { return ignore(o.ContainsAll(ctx, vs...)) }
	},
	"hilock rate_limiter.try_set_rate": func(e *env) call {
		o, m, n, d := e.hl.RateLimiter(e.name), e.m(0), e.i(1), e.d(2)
		return func(ctx context.Context) error { return ignore(o.TrySetRate(ctx, m, n, d, 0)) }
	},
	"hilock rate_limiter.try_acquire": func(e *env) call {
		o := e.hl.RateLimiter(e.name)
		return func(ctx context.Context) error { return ignore(o.TryAcquire(ctx, 1, 0)) }
	},

	"goredis bucket.get": func(e *env) call {
		return func(ctx context.Context) error {
			if err := e.rdb.Get(ctx, e.name).Err(); err != redis.Nil {
				return err
			}
			return nil
		}
	},
	"goredis bucket.set": func(e *env) call {
		v := e.b(0)
		return func(ctx context.Context) error { return e.rdb.Set(ctx, e.name, v, 0).Err() }
	},
	"goredis bucket.compare_and_set": func(e *env) call {
		k, a := []string{e.name}, []interface{}{e.b(0), e.b(1)}
		return func(ctx context.Context) error { return casBytes.Run(ctx, e.rdb, k, a...).Err() }
	},
	"goredis atomic_long.get": func(e *env) call {
		return func(ctx context.Context) error {
			_, err := e.rdb.Get(ctx, e.name).Int64()
			if err == redis.Nil {
				return nil
			}
			return err
		}
	},
	"goredis atomic_long.set": func(e *env) call {
		v := e.i(0)
		return func(ctx context.Context) error { return e.rdb.Set(ctx, e.name, v, 0).Err() }
	},
	"goredis atomic_long.increment_and_get": func(e *env) call {
		return func(ctx context.Context) error { return e.rdb.Incr(ctx, e.name).Err() }
	},
	"goredis atomic_long.compare_and_set": func(e *env) call {
		k, a := []string{e.name}, []interface{}{e.i(0), e.i(1)}
		return func(ctx context.Context) error { return casLong.Run(ctx, e.rdb, k, a...).Err() }
	},
	"goredis atomic_double.add_and_get": func(e *env) call {
		d := e.f(0)
		return func(ctx context.Context) error { return e.rdb.IncrByFloat(ctx, e.name, d).Err() }
	},
	"redis_rate rate_limiter.try_acquire": func(e *env) call {
		l := redis_rate.NewLimiter(e.rdb)
		return func(ctx context.Context) error {
			_, err := l.Allow(ctx, e.name, redis_rate.PerSecond(rate))
			return err
		}
	},
}

func die(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "gridbench: "+f+"\n", a...)
	os.Exit(1)
}

type group struct {
	op string
	a  []interface{}
}

func parseGroups(args []string) []group {
	var gs []group
	for i := 0; i < len(args); {
		if i+2 > len(args) {
			die("bad operation groups")
		}
		n, _ := strconv.Atoi(args[i+1])
		g := group{op: args[i]}
		for _, s := range args[i+2 : i+2+n] {
			var v interface{}
			switch {
			case s == "-":
			case s[0] == 'b':
				v = []byte(s[2:])
			case s[0] == 'x':
				b, err := hex.DecodeString(s[2:])
				if err != nil {
					die("bad argument %s", s)
				}
				v = b
			case s[0] == 'i':
				x, _ := strconv.ParseInt(s[2:], 10, 64)
				v = x
			case s[0] == 'f':
				x, _ := strconv.ParseFloat(s[2:], 64)
				v = x
			case s == "m:overall":
				v = hilock.RateOverall
			case s == "m:per_client":
				v = hilock.RatePerClient
			case s[0] == 's':
				x, _ := strconv.ParseFloat(s[2:], 64)
				v = time.Duration(x * float64(time.Second))
			default:
				die("bad argument %s", s)
			}
			g.a = append(g.a, v)
		}
		gs = append(gs, g)
		i += 2 + n
	}
	if len(gs) == 0 {
		die("no operation")
	}
	return gs
}

// cpuSeconds is the process's CPU time (every thread, the runtime's too).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

type floor func(secs float64) (int64, float64)

// openFloor opens the floor: its slices (run), and with cross the
// crossing (once, else nil): the same round on a connection of its own,
// one cgo call a round, which is what calling C costs each operation
// without hilock.
func openFloor(lib, url, path string, cross bool) (run floor, once func() error) {
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	if e := C.floor_load(clib); e != nil {
		die("floor: %s", C.GoString(e))
	}
	curl, cpath := C.CString(url), C.CString(path)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(cpath))
	var errbuf [256]C.char
	f := C.floor_open(curl, cpath, &errbuf[0], 256)
	if f == nil {
		die("floor: %s", C.GoString(&errbuf[0]))
	}
	run = func(secs float64) (int64, float64) {
		var el C.double
		n := C.floor_run(f, C.double(secs), &el)
		if n < 0 {
			die("%s", C.GoString(C.floor_err(f)))
		}
		return int64(n), float64(el)
	}
	if !cross {
		return run, nil
	}
	x := C.floor_open(curl, cpath, &errbuf[0], 256)
	if x == nil {
		die("floor: %s", C.GoString(&errbuf[0]))
	}
	once = func() error {
		if C.floor_once(x) != 0 {
			return fmt.Errorf("%s", C.GoString(C.floor_err(x)))
		}
		return nil
	}
	return run, once
}

func main() {
	if len(os.Args) < 10 || os.Args[1] != "grid" {
		die("usage: grid LIB URL SECONDS FLOORLIB FLOORFILE KIND NAME OP N ARG...")
	}
	lib, url := os.Args[2], os.Args[3]
	secs, _ := strconv.ParseFloat(os.Args[4], 64)
	floorLib, floorFile, kind, name := os.Args[5], os.Args[6], os.Args[7], os.Args[8]
	gs := parseGroups(os.Args[9:])
	ctx := context.Background()
	e := &env{url: url, name: name}
	if lib == "hilock" {
		c, err := hilock.Connect(ctx, url)
		if err != nil {
			die("%v", err)
		}
		defer c.Close()
		e.hl = c
	} else {
		opt, err := redis.ParseURL(url)
		if err != nil {
			die("%v", err)
		}
		e.rdb = redis.NewClient(opt)
		defer e.rdb.Close()
	}
	for i, g := range gs {
		mk := ops[lib+" "+kind+"."+g.op]
		if mk == nil {
			if i+1 < len(gs) && lib != "hilock" {
				continue
			}
			die("%s has no %s.%s here", lib, kind, g.op)
		}
		e.a = g.a
		fn := mk(e)
		if i+1 < len(gs) {
			if err := fn(ctx); err != nil {
				die("set-up %s: %v", g.op, err)
			}
			continue
		}
		var fl floor
		// hilock's runs also time the crossing, in slices of its own
		slices := []func(ctx context.Context) error{fn}
		if floorFile != "-" {
			var once func() error
			fl, once = openFloor(floorLib, url, floorFile, lib == "hilock")
			if once != nil {
				slices = append(slices, func(context.Context) error { return once() })
			}
		}
		opsFor := func(s float64, step func(ctx context.Context) error) (int64, float64) {
			t0 := time.Now()
			end := t0.Add(time.Duration(s * 1e9))
			var n int64
			for {
				t := time.Now()
				if !t.Before(end) {
					return n, t.Sub(t0).Seconds()
				}
				if err := step(ctx); err != nil {
					die("%s: %v", g.op, err)
				}
				n++
			}
		}
		if fl != nil {
			fl(0.3)
		}
		for _, f := range slices {
			opsFor(0.3, f)
		}
		var nf int64
		var tf, cf float64 // cf: the process's CPU time in the floor's
		ns := make([]int64, len(slices))
		ts, cs := make([]float64, len(slices)), make([]float64, len(slices))
		end := time.Now().Add(time.Duration(secs * 1e9))
		// Every slice starts on a fresh time slice (runtime.Gosched): a
		// goroutine that runs 10 ms without rescheduling, as the floor's
		// slice and the crossing's back to back would, has its processor
		// taken away during its next cgo call (the binding yields every
		// 2 ms for the same reason: bindings/go/tasks.go yieldAfterCgo).
		for time.Now().Before(end) {
			if fl != nil {
				runtime.Gosched()
				c0 := cpuSeconds()
				n, el := fl(gridSlice)
				nf, tf = nf+n, tf+el
				cf += cpuSeconds() - c0
			}
			for i, f := range slices {
				runtime.Gosched()
				c0 := cpuSeconds()
				n, el := opsFor(gridSlice, f)
				ns[i], ts[i] = ns[i]+n, ts[i]+el
				cs[i] += cpuSeconds() - c0
			}
		}
		out := map[string]interface{}{"scenario": "grid", "lang": "go", "lib": lib,
			"kind": kind, "op": g.op, "ops_per_s": float64(ns[0]) / ts[0],
			"cpu_us": cs[0] / float64(ns[0]) * 1e6}
		if fl != nil {
			out["floor_ops_per_s"] = float64(nf) / tf
			out["floor_cpu_us"] = cf / float64(nf) * 1e6
		}
		if len(slices) > 1 {
			out["cross_ops_per_s"] = float64(ns[1]) / ts[1]
			out["cross_cpu_us"] = cs[1] / float64(ns[1]) * 1e6
		}
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	}
}
