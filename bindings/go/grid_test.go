package hilock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func TestGridBucket(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	b := c.Bucket(name)
	if v, err := b.Get(ctx); v != nil || err != nil {
		t.Fatalf("Get of nothing: %q %v", v, err)
	}
	if err := b.Set(ctx, []byte("a\x00b"), 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.str("GET", name); s != "a\x00b" {
		t.Fatalf("stored %q", s)
	}
	if err := b.Set(ctx, []byte("x"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl, ok, err := b.TTL(ctx); !ok || err != nil || ttl < 20*time.Second || ttl > 30*time.Second {
		t.Fatalf("TTL %v %v %v", ttl, ok, err)
	}
	if ok, err := b.TrySet(ctx, []byte("y"), 0); ok || err != nil {
		t.Fatalf("TrySet on a value: %v %v", ok, err)
	}
	if ok, err := b.CompareAndSet(ctx, []byte("x"), []byte("z")); !ok || err != nil {
		t.Fatalf("CompareAndSet: %v %v", ok, err)
	}
	if v, err := b.GetAndDelete(ctx); string(v) != "z" || err != nil {
		t.Fatalf("GetAndDelete: %q %v", v, err)
	}
	if ok, err := b.Exists(ctx); ok || err != nil {
		t.Fatalf("Exists after delete: %v %v", ok, err)
	}
	if _, ok, err := b.TTL(ctx); ok || err != nil {
		t.Fatalf("TTL of nothing: %v %v", ok, err)
	}
	if ok, err := b.CompareAndSet(ctx, nil, []byte("new")); !ok || err != nil {
		t.Fatalf("CompareAndSet from absent: %v %v", ok, err)
	}
	if err := b.Set(ctx, []byte("v"), -time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("negative ttl: %v", err)
	}
}

// A value comes back exactly whatever its size: one that fits the call's
// buffer is copied back in the call, a longer one is read from C after it
// (grid.go, object.call); the sizes straddle the buffer's 256 bytes and
// its 4096 kept.
func TestGridValueSizes(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	b := c.Bucket(uniqueName(t))
	for _, n := range []int{0, 1, 200, 255, 256, 257, 300, 4095, 4096, 4097, 70000} {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(i*7 + n)
		}
		if err := b.Set(ctx, v, 0); err != nil {
			t.Fatal(err)
		}
		got, err := b.Get(ctx)
		if err != nil || got == nil || string(got) != string(v) {
			t.Fatalf("%d bytes: got %d bytes (%v), equal %v", n, len(got), err,
				string(got) == string(v))
		}
		// the next call's buffer must not be the value's
		if _, err := b.Get(ctx); err != nil || string(got) != string(v) {
			t.Fatalf("%d bytes: changed by the next call", n)
		}
	}
}

func TestGridAtomics(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	a := c.AtomicLong(name)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := a.IncrementAndGet(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, err := a.Get(ctx); n != 400 || err != nil {
		t.Fatalf("Get: %d %v", n, err)
	}
	if n, err := a.GetAndAdd(ctx, -100); n != 400 || err != nil {
		t.Fatalf("GetAndAdd: %d %v", n, err)
	}
	if ok, err := a.CompareAndSet(ctx, 300, 7); !ok || err != nil {
		t.Fatalf("CompareAndSet: %v %v", ok, err)
	}
	if s, _ := r.str("GET", name); s != "7" {
		t.Fatalf("stored %q", s)
	}
	d := c.AtomicDouble(name + ":d")
	if err := d.Set(ctx, 0.1); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.str("GET", name+":d"); s != "0.1" {
		t.Fatalf("stored %q, not Redisson's 0.1", s)
	}
	r.do("SET", name+":d", "1.0E10")
	if f, err := d.AddAndGet(ctx, 0.5); f != 1e10+0.5 || err != nil {
		t.Fatalf("AddAndGet: %v %v", f, err)
	}
	// a hash at the key: a clear error, not a crash
	r.do("HSET", name+":h", "f", "1")
	var he *hilock.Error
	if _, err := c.AtomicLong(name + ":h").Get(ctx); !errors.As(err, &he) || he.Name != "HL_EREDIS" ||
		!strings.Contains(he.Message, "another type") {
		t.Fatalf("Get of a hash: %v", err)
	}
	// a context already done is not sent
	dctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.IncrementAndGet(dctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("done ctx: %v", err)
	}
	if n, _ := a.Get(ctx); n != 7 {
		t.Fatalf("a cancelled increment counted: %d", n)
	}
	if _, err := c.AtomicLong("").Get(ctx); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
}

// A lost reply never counts twice: the increment reaches Redis, its reply
// is held past the command timeout, the call says in doubt, and the count
// is exactly one.
func TestGridLostReplyInDoubt(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	a := c.AtomicLong(name)
	if _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	_, err := a.IncrementAndGet(ctx)
	if !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { s, _ := r.str("GET", name); return s == "1" }) {
		t.Fatal("the increment never landed")
	}
	p.Delay(0)
	time.Sleep(time.Second)
	if s, _ := r.str("GET", name); s != "1" {
		t.Fatalf("counted %s times", s)
	}
}
