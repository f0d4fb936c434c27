package hilock_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	hilock "github.com/hilock/hilock/bindings/go"
)

// javaLess is String.compareTo: UTF-16 code units.
func javaLess(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// The sorted set (Redisson's RSortedSet): Java's String order (a
// supplementary character before U+E000..U+FFFF), add/remove/contains,
// polls, pages and Range, Redisson's lock waited for, a comparator
// refused, bad input.
func TestGridSortedSet(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	s := c.SortedSet(name)
	vectors := []string{"", "\x00", "A", "a", "\u00e9", "\U00010000", "\U0001F600",
		"\U0010FFFF", "\ue000", "\ue000\U0001F600", "\ue000\uffff", "\uff21", "\uffff"}
	if !sort.SliceIsSorted(vectors, func(i, j int) bool { return javaLess(vectors[i], vectors[j]) }) {
		t.Fatal("vectors not in Java's order")
	}
	if sort.StringsAreSorted(vectors) {
		t.Fatal("vectors in byte order too: they test nothing")
	}
	for i := len(vectors) - 1; i >= 0; i-- {
		if ok, err := s.Add(ctx, []byte(vectors[i])); !ok || err != nil {
			t.Fatalf("Add %q: %v %v", vectors[i], ok, err)
		}
	}
	if ok, err := s.Add(ctx, []byte("\U0001F600")); ok || err != nil {
		t.Fatalf("Add again: %v %v", ok, err)
	}
	var got []string
	if err := s.Range(ctx, func(v []byte) bool { got = append(got, string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, vectors) {
		t.Fatalf("order %q", got)
	}
	if raw := r.do("LRANGE", name, "0", "-1").([]interface{}); len(raw) != len(vectors) ||
		string(raw[5].([]byte)) != "\U00010000" {
		t.Fatalf("stored %q", raw)
	}
	if ok, err := s.Contains(ctx, []byte("\uff21")); !ok || err != nil {
		t.Fatalf("Contains: %v %v", ok, err)
	}
	if ok, err := s.Remove(ctx, []byte("\uff21")); !ok || err != nil {
		t.Fatalf("Remove: %v %v", ok, err)
	}
	if ok, err := s.Contains(ctx, []byte("\uff21")); ok || err != nil {
		t.Fatalf("Contains after Remove: %v %v", ok, err)
	}
	if v, err := s.PollFirst(ctx); v == nil || len(v) != 0 || err != nil {
		t.Fatalf("PollFirst: %q %v", v, err)
	}
	if v, err := s.PollLast(ctx); string(v) != "\uffff" || err != nil {
		t.Fatalf("PollLast: %q %v", v, err)
	}
	if n, err := s.Size(ctx); n != int64(len(vectors)-3) || err != nil {
		t.Fatalf("Size %d %v", n, err)
	}
	if v, err := s.First(ctx); string(v) != "\x00" || err != nil {
		t.Fatalf("First %q %v", v, err)
	}
	// pages: 2500 values, three round trips; Range stops when told
	big := c.SortedSet(name + ":big")
	for i := 0; i < 2500; i++ {
		if _, err := big.Add(ctx, []byte(fmt.Sprintf("k%05d", (i*7919)%2500))); err != nil {
			t.Fatal(err)
		}
	}
	next, page, err := big.Scan(ctx, []byte("0"), 1000)
	if string(next) != "1000" || len(page) != 1000 || err != nil {
		t.Fatalf("Scan: %q %d %v", next, len(page), err)
	}
	n := 0
	prev := ""
	if err := big.Range(ctx, func(v []byte) bool {
		if string(v) <= prev {
			t.Errorf("out of order: %q after %q", v, prev)
		}
		prev = string(v)
		n++
		return true
	}); err != nil || n != 2500 {
		t.Fatalf("Range: %d %v", n, err)
	}
	n = 0
	_ = big.Range(ctx, func([]byte) bool { n++; return n < 10 })
	if n != 10 {
		t.Fatalf("Range did not stop: %d", n)
	}
	// bad input
	if _, err := s.Add(ctx, []byte{0xff}); !errors.Is(err, hilock.ErrInvalid) ||
		!strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	r.do("SET", name+":str", "x")
	if _, err := c.SortedSet(name+":str").Add(ctx, []byte("a")); err == nil ||
		!strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
	if _, _, err := s.Scan(ctx, []byte("x"), 10); err == nil || !strings.Contains(err.Error(), "cursor") {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestGridSortedSetRedissonLockAndComparator(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	s := c.SortedSet(name)
	lock := "redisson_sortedset_lock:{" + name + "}"
	r.do("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", "1")
	r.do("PEXPIRE", lock, "30000")
	done := make(chan error, 1)
	go func() {
		_, err := s.Add(ctx, []byte("v"))
		done <- err
	}()
	// it polls the lock without writing
	evals := func() int64 {
		info, _ := r.str("INFO", "commandstats")
		i := strings.Index(info, "cmdstat_evalsha:calls=")
		if i < 0 {
			return 0
		}
		var n int64
		fmt.Sscanf(info[i+len("cmdstat_evalsha:calls="):], "%d", &n)
		return n
	}
	before := evals()
	if !waitFor(10*time.Second, func() bool { return evals() >= before+3 }) {
		t.Fatal("no polling")
	}
	select {
	case err := <-done:
		t.Fatalf("added while Redisson held the lock: %v", err)
	default:
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("written while locked")
	}
	r.do("DEL", lock)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("add still waiting after the unlock")
	}
	if v, _ := r.str("LINDEX", name, "0"); v != "v" {
		t.Fatalf("stored %q", v)
	}
	// a context deadline ends a wait
	r.do("HSET", lock, "x:1", "1")
	r.do("PEXPIRE", lock, "30000")
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := s.Add(tctx, []byte("w"))
	cancel()
	if err == nil {
		t.Fatal("Add returned while locked")
	}
	r.do("DEL", lock)
	// a comparator: refused
	key := "redisson_sortedset_comparator:{" + name + "}"
	r.do("SET", key, "com.example.ReverseCmp:3f2a")
	if _, err := s.Add(ctx, []byte("a")); !errors.Is(err, hilock.ErrInvalid) ||
		!strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "com.example.ReverseCmp") {
		t.Fatalf("comparator: %v", err)
	}
	if n, err := s.Size(ctx); n != 1 || err != nil {
		t.Fatalf("Size %d %v", n, err)
	}
}

// add is never resent (ErrInDoubt, applied once).
func TestGridSortedSetLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	s := c.SortedSet(name)
	if _, err := s.Add(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	if _, err := s.Add(ctx, []byte("b")); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { return r.int("LLEN", name) == 2 }) {
		t.Fatal("the add never landed")
	}
	p.Delay(0)
	if n, err := s.Size(ctx); n != 2 || err != nil {
		t.Fatalf("size %d %v", n, err)
	}
}
