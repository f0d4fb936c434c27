package hilock_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func bitsAt(r *redis, key string) []int {
	s, _ := r.str("GET", key)
	var out []int
	for i := 0; i < len(s); i++ {
		for j := 0; j < 8; j++ {
			if s[i]>>(7-j)&1 == 1 {
				out = append(out, i*8+j)
			}
		}
	}
	return out
}

// Redisson's bits and config (vectors from a Redisson 4.3.1 run,
// tests/interop/grid), many values, count, re-initialisation, bad input.
func TestGridBloomFilter(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	f := c.BloomFilter(name)
	if ok, err := f.TryInit(ctx, 1000, 0.03); !ok || err != nil {
		t.Fatalf("TryInit: %v %v", ok, err)
	}
	if p, _ := r.str("HGET", "{"+name+"}:config", "falseProbability"); p != "0.03" {
		t.Fatalf("falseProbability %q", p)
	}
	if ok, err := f.Add(ctx, []byte("abc")); !ok || err != nil {
		t.Fatalf("Add: %v %v", ok, err)
	}
	if got := bitsAt(r, name); !reflect.DeepEqual(got, []int{1218, 2050, 2436, 3268, 4486}) {
		t.Fatalf("bits %v", got)
	}
	vals := make([][]byte, 100)
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf("v%d", i))
	}
	f2 := c.BloomFilter(name + ":many")
	f2.TryInit(ctx, 1000, 0.03)
	if n, err := f2.AddAll(ctx, vals...); n != 100 || err != nil {
		t.Fatalf("AddAll %d %v", n, err)
	}
	if n, err := f2.Count(ctx); n != 101 || err != nil { // Redisson 4.3.1: 101
		t.Fatalf("Count %d %v", n, err)
	}
	if n, err := f2.ContainsAll(ctx, vals...); n != 100 || err != nil {
		t.Fatalf("ContainsAll %d %v", n, err)
	}
	if v, err := f2.ContainsEach(ctx, vals[0], []byte("nope"), vals[1]); err != nil ||
		len(v.Values()) != 3 || v.Values()[0].Int() != 1 || v.Values()[2].Int() != 1 {
		t.Fatalf("ContainsEach %v %v", v, err)
	}
	if p, err := f2.GetFalseProbability(ctx); p != 0.03 || err != nil {
		t.Fatalf("GetFalseProbability %v %v", p, err)
	}
	if m, err := f2.GetSize(ctx); m != 7298 || err != nil {
		t.Fatalf("GetSize %v %v", m, err)
	}
	// deleted and initialised again with another size (#6554)
	r.do("DEL", name, "{"+name+"}:config")
	if _, err := f.Add(ctx, []byte("abc")); err == nil || !strings.Contains(err.Error(), "not initialised") {
		t.Fatalf("Add to nothing: %v", err)
	}
	f.TryInit(ctx, 7, 0.5)
	if ok, err := f.Add(ctx, []byte("abc")); !ok || err != nil {
		t.Fatalf("Add after re-init: %v %v", ok, err)
	}
	if got := bitsAt(r, name); !reflect.DeepEqual(got, []int{4}) {
		t.Fatalf("bits after re-init %v", got)
	}
	// bad input
	bad := c.BloomFilter(name + ":bad")
	for _, a := range []struct {
		n int64
		p float64
	}{{100, 0}, {100, 1}, {100, -0.5}, {0, 0.1}, {-3, 0.1}, {1 << 62, 0.1}} {
		if _, err := bad.TryInit(ctx, a.n, a.p); !errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("TryInit(%d, %v): %v", a.n, a.p, err)
		}
	}
	if _, err := bad.Contains(ctx, []byte("x")); err == nil || !strings.Contains(err.Error(), "not initialised") {
		t.Fatalf("Contains of nothing: %v", err)
	}
	r.do("SET", "{"+name+":bad}:config", "x")
	if _, err := bad.Count(ctx); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("wrong type: %v", err)
	}
}

// add answers whether a bit was new, so a lost reply is ErrInDoubt; its
// bits are set.
func TestGridBloomFilterLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	f := c.BloomFilter(name)
	f.TryInit(ctx, 1000, 0.03)
	if _, err := f.Add(ctx, []byte("warm")); err != nil {
		t.Fatal(err)
	}
	r.do("DEL", name)
	p.Delay(400)
	if _, err := f.Add(ctx, []byte("abc")); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { return r.int("EXISTS", name) == 1 }) {
		t.Fatal("the add never landed")
	}
	p.Delay(0)
	if got := bitsAt(r, name); !reflect.DeepEqual(got, []int{1218, 2050, 2436, 3268, 4486}) {
		t.Fatalf("bits %v", got)
	}
}
