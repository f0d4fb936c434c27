package hilock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// The bit set (Redisson's RBitSet): SETBIT's bit order, atomic ranges,
// raw bytes, BITOP with other bitsets, bad input.
func TestGridBitSet(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	b := c.BitSet(name)
	if old, err := b.Set(ctx, 0, true); old || err != nil {
		t.Fatalf("Set: %v %v", old, err)
	}
	if old, err := b.Set(ctx, 0, true); !old || err != nil {
		t.Fatalf("Set again: %v %v", old, err)
	}
	if _, err := b.Set(ctx, 9, true); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.str("GET", name); s != "\x80\x40" {
		t.Fatalf("stored %q", s)
	}
	n, err := b.Cardinality(ctx)
	l, _ := b.Length(ctx)
	sz, _ := b.Size(ctx)
	if n != 2 || l != 10 || sz != 16 || err != nil {
		t.Fatalf("cardinality %d length %d size %d %v", n, l, sz, err)
	}
	if old, err := b.Clear(ctx, 9); !old || err != nil {
		t.Fatalf("Clear: %v %v", old, err)
	}
	if err := b.SetRange(ctx, 3, 29, true); err != nil {
		t.Fatal(err)
	}
	if err := b.ClearRange(ctx, 5, 21); err != nil {
		t.Fatal(err)
	}
	if v, err := b.ToByteArray(ctx); string(v) != "\x98\x00\x07\xf8" || err != nil {
		t.Fatalf("bytes %x %v", v, err)
	}
	other := c.BitSet("{" + name + "}:b")
	a := c.BitSet("{" + name + "}:a")
	if err := other.SetBytes(ctx, []byte("\xf0\x0f")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetBytes(ctx, []byte("\xff\xff")); err != nil {
		t.Fatal(err)
	}
	if err := a.And(ctx, []byte("{"+name+"}:b")); err != nil {
		t.Fatal(err)
	}
	if err := a.Not(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.ToByteArray(ctx); string(v) != "\x0f\xf0" {
		t.Fatalf("and, not: %x", v)
	}
	if err := a.Xor(ctx, []byte("{"+name+"}:b")); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.ToByteArray(ctx); string(v) != "\xff\xff" {
		t.Fatalf("xor: %x", v)
	}
	// bad input: clear errors, nothing written
	bad := c.BitSet(name + ":bad")
	if _, err := bad.Get(ctx, -1); err == nil || !strings.Contains(err.Error(), "bit offset") {
		t.Fatalf("negative index: %v", err)
	}
	if err := bad.SetRange(ctx, 5, 4, true); err == nil || !strings.Contains(err.Error(), "bit range") {
		t.Fatalf("bad range: %v", err)
	}
	r.do("LPUSH", name+":bad", "x")
	if _, err := bad.Set(ctx, 1, true); err == nil || !strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
}

// set answers the bit before, so a lost reply is ErrInDoubt (never resent)
// and the bit is set once.
func TestGridBitSetLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	b := c.BitSet(name)
	if _, err := b.Cardinality(ctx); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	if _, err := b.Set(ctx, 77, true); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { return r.int("GETBIT", name, "77") == 1 }) {
		t.Fatal("the set never landed")
	}
	p.Delay(0)
	if n, err := b.Cardinality(ctx); n != 1 || err != nil {
		t.Fatalf("cardinality %d %v", n, err)
	}
}
