package hilock_test

import (
	"context"
	"errors"
	"runtime/pprof"
	"sort"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func TestGridRateLimiterKeys(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	rl := c.RateLimiter(name)
	if ok, err := rl.TrySetRate(ctx, hilock.RateOverall, 3, 2*time.Second, 0); !ok || err != nil {
		t.Fatalf("TrySetRate: %v %v", ok, err)
	}
	if ok, err := rl.TrySetRate(ctx, hilock.RatePerClient, 9, time.Second, 0); ok || err != nil {
		t.Fatalf("TrySetRate again: %v %v", ok, err)
	}
	if v, _ := r.str("HGET", name, "interval"); v != "2000" {
		t.Fatalf("interval %q", v)
	}
	if ok, err := rl.TryAcquire(ctx, 3, 0); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	members, _ := r.do("ZRANGE", "{"+name+"}:permits", "0", "0").([]interface{})
	if len(members) != 1 {
		t.Fatalf("members %v", members)
	}
	if s := toString(members[0]); len(s) != 21 || s[0] != 0x10 || s[17] != 3 {
		t.Fatalf("member %q", s)
	}
	ok, retry, err := rl.TryAcquireEx(ctx, 1)
	if ok || err != nil || retry < time.Second || retry > 2003*time.Millisecond {
		t.Fatalf("TryAcquireEx: %v %v %v", ok, retry, err)
	}
	if n, err := rl.AvailablePermits(ctx); n != 0 || err != nil {
		t.Fatalf("AvailablePermits: %d %v", n, err)
	}
	if v, err := rl.GetConfig(ctx); err != nil || len(v.Values()) != 4 || v.Values()[0].Int() != 3 {
		t.Fatalf("GetConfig: %v %v", v, err)
	}
	if err := rl.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := rl.TryAcquire(ctx, 1, 0); !ok || err != nil {
		t.Fatalf("after Release: %v %v", ok, err)
	}
}

// Goroutines share one limiter: no rate+1 grants fall surely inside one
// interval, and the waits are tasks (no thread per waiting goroutine).
func TestGridRateLimiterWindow(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	name := uniqueName(t)
	const rate, interval = 4, 400 * time.Millisecond
	rl := c.RateLimiter(name)
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, rate, interval, 0); err != nil {
		t.Fatal(err)
	}
	type grant struct{ lo, hi time.Time }
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	end := time.Now().Add(1800 * time.Millisecond)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				lo := time.Now()
				ok, err := rl.TryAcquire(ctx, 1, time.Until(end))
				hi := time.Now()
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					grants = append(grants, grant{lo, hi})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(grants, func(i, j int) bool { return grants[i].lo.Before(grants[j].lo) })
	if len(grants) < rate*2 || len(grants) > rate*7 {
		t.Fatalf("%d grants", len(grants))
	}
	for i := 0; i+rate < len(grants); i++ {
		hi := grants[i].hi
		for _, g := range grants[i : i+rate+1] {
			if g.hi.After(hi) {
				hi = g.hi
			}
		}
		if span := hi.Sub(grants[i].lo); span < interval {
			t.Fatalf("%d grants within %v", rate+1, span)
		}
	}
}

func TestGridRateLimiterWaitsPinNoThreads(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	rl := c.RateLimiter(uniqueName(t))
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, 10, 300*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := rl.TryAcquire(ctx, 10, 0); !ok {
		t.Fatal("not taken")
	}
	// a wait shorter than the next free permit ends at once
	t0 := time.Now()
	if ok, err := rl.TryAcquire(ctx, 1, 50*time.Millisecond); ok || err != nil {
		t.Fatalf("short wait: %v %v", ok, err)
	}
	if d := time.Since(t0); d > 45*time.Millisecond {
		t.Logf("short wait took %v", d)
	}
	threads := pprof.Lookup("threadcreate").Count()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	t0 = time.Now()
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			errs <- rl.Acquire(wctx, 1)
		}()
	}
	time.Sleep(100 * time.Millisecond) // parked in their waits
	if n := pprof.Lookup("threadcreate").Count() - threads; n > 20 {
		t.Fatalf("%d threads for 50 waiting goroutines", n)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// 50 permits at 10 per 300 ms after 10 taken: 5 windows at least
	if d := time.Since(t0); d < 5*300*time.Millisecond-50*time.Millisecond {
		t.Fatalf("50 acquires in %v", d)
	}
	// ctx ends a wait: ctx.Err()
	if err := rl.SetRate(ctx, hilock.RateOverall, 1, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := rl.TryAcquire(ctx, 1, 0); !ok {
		t.Fatal("not taken after SetRate")
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if err := rl.Acquire(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	if n, _ := rl.AvailablePermits(ctx); n != 0 {
		t.Fatalf("available %d after a cancelled wait", n)
	}
}

func TestGridRateLimiterLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond),
		hilock.WithRetry(20, 50*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	warm := c.RateLimiter(name + ":warm")
	if _, err := warm.TrySetRate(ctx, hilock.RateOverall, 1, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := warm.TryAcquire(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	rl := c.RateLimiter(name)
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, 10, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	done := make(chan error, 1)
	go func() {
		ok, err := rl.TryAcquire(ctx, 3, 10*time.Second)
		if err == nil && !ok {
			err = errors.New("not taken")
		}
		done <- err
	}()
	if !waitFor(10*time.Second, func() bool { return r.int("ZCARD", "{"+name+"}:permits") > 0 }) {
		t.Fatal("the acquire never reached Redis")
	}
	time.Sleep(300 * time.Millisecond)
	p.Delay(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := r.int("ZCARD", "{"+name+"}:permits"); n != 1 {
		t.Fatalf("%d grants", n)
	}
	if s, _ := r.str("GET", "{"+name+"}:value"); s != "7" {
		t.Fatalf("value %q", s)
	}
}

func TestGridRateLimiterBadInput(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	rl := c.RateLimiter(uniqueName(t))
	if _, err := rl.TryAcquire(ctx, 1, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("no rate: %v", err)
	}
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, 0, time.Second, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("rate 0: %v", err)
	}
	if _, err := rl.TrySetRate(ctx, 7, 1, time.Second, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("mode 7: %v", err)
	}
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, 1, time.Second, time.Millisecond); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("keep-alive below the interval: %v", err)
	}
	if _, err := rl.TrySetRate(ctx, hilock.RateOverall, 2, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, -1, 3} {
		if _, err := rl.TryAcquire(ctx, n, 0); !errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("permits %d: %v", n, err)
		}
		if _, _, err := rl.TryAcquireEx(ctx, n); !errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("TryAcquireEx permits %d: %v", n, err)
		}
	}
	if _, err := c.RateLimiter("").TryAcquire(ctx, 1, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
}

func toString(v interface{}) string {
	switch b := v.(type) {
	case []byte:
		return string(b)
	case string:
		return b
	}
	return ""
}
