package hilock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// The map (Redisson's RMap): every operation's answer and the hash it
// leaves, exact bytes (NUL, empty, absent), bulk writes in one round trip,
// another type at the key, bad input.
func TestGridMap(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Map(name)
	b := func(s string) []byte { return []byte(s) }
	if v, err := m.Get(ctx, b("a")); v != nil || err != nil {
		t.Fatalf("Get absent: %q %v", v, err)
	}
	if v, err := m.Put(ctx, b("a"), b("1")); v != nil || err != nil {
		t.Fatalf("Put: %q %v", v, err)
	}
	if v, err := m.Put(ctx, b("a"), b("2")); string(v) != "1" || err != nil {
		t.Fatalf("Put again: %q %v", v, err)
	}
	if s, _ := r.str("HGET", name, "a"); s != "2" {
		t.Fatalf("stored %q", s)
	}
	if v, _ := m.PutIfAbsent(ctx, b("a"), b("x")); string(v) != "2" {
		t.Fatalf("PutIfAbsent present: %q", v)
	}
	if v, err := m.PutIfAbsent(ctx, b("b"), b("B")); v != nil || err != nil {
		t.Fatalf("PutIfAbsent absent: %q %v", v, err)
	}
	if ok, _ := m.FastPut(ctx, b("c"), b("C")); !ok {
		t.Fatal("FastPut new: false")
	}
	if ok, _ := m.FastPut(ctx, b("c"), b("CC")); ok {
		t.Fatal("FastPut again: true")
	}
	if ok, _ := m.FastPutIfAbsent(ctx, b("c"), b("no")); ok {
		t.Fatal("FastPutIfAbsent present: true")
	}
	if v, _ := m.PutIfExists(ctx, b("e"), b("E")); v != nil || r.int("HEXISTS", name, "e") != 0 {
		t.Fatalf("PutIfExists absent: %q", v)
	}
	if ok, _ := m.FastReplace(ctx, b("e"), b("E")); ok {
		t.Fatal("FastReplace absent: true")
	}
	if ok, _ := m.FastPutIfExists(ctx, b("c"), b("CC")); !ok {
		t.Fatal("FastPutIfExists present: false")
	}
	if v, _ := m.Replace(ctx, b("c"), b("C3")); string(v) != "CC" {
		t.Fatalf("Replace: %q", v)
	}
	if ok, _ := m.ReplaceIf(ctx, b("c"), b("C"), b("X")); ok {
		t.Fatal("ReplaceIf with a prefix: true")
	}
	if ok, _ := m.ReplaceIf(ctx, b("c"), b("C3"), b("C4")); !ok {
		t.Fatal("ReplaceIf: false")
	}
	if ok, _ := m.RemoveIf(ctx, b("c"), b("C3")); ok {
		t.Fatal("RemoveIf wrong value: true")
	}
	if ok, _ := m.RemoveIf(ctx, b("c"), b("C4")); !ok || r.int("HEXISTS", name, "c") != 0 {
		t.Fatal("RemoveIf: not removed")
	}
	if v, _ := m.Remove(ctx, b("b")); string(v) != "B" {
		t.Fatalf("Remove: %q", v)
	}
	if v, err := m.Remove(ctx, b("b")); v != nil || err != nil {
		t.Fatalf("Remove absent: %q %v", v, err)
	}
	// NUL and empty: kept exactly; an empty value is not an absent one
	if err := m.Set(ctx, b("k\x00b"), []byte{}); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(ctx, b("k\x00b")); v == nil || len(v) != 0 || err != nil {
		t.Fatalf("empty value: %#v %v", v, err)
	}
	if ok, _ := m.ContainsKey(ctx, b("k")); ok {
		t.Fatal("k\\0b cut at the NUL")
	}
	if err := m.PutAll(ctx, b(""), b("\x00\xff"), b("p"), b("P")); err != nil {
		t.Fatal(err)
	}
	if err := m.PutMap(ctx, map[string][]byte{"q": b("Q")}); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.str("HGET", name, ""); s != "\x00\xff" {
		t.Fatalf("stored %q", s)
	}
	all, err := m.GetAll(ctx, b(""), b("p"), b("nope"), b("k\x00b"))
	if err != nil || len(all) != 3 || string(all[""]) != "\x00\xff" || string(all["p"]) != "P" ||
		all["k\x00b"] == nil {
		t.Fatalf("GetAll: %q %v", all, err)
	}
	if n, _ := m.Size(ctx); n != 5 { // a, k\0b, "", p, q
		t.Fatalf("Size %d", n)
	}
	if ks, err := m.RandomKeys(ctx, 100); len(ks) != 5 || err != nil {
		t.Fatalf("RandomKeys: %q %v", ks, err)
	}
	if es, err := m.RandomEntries(ctx, 100); string(es["p"]) != "P" || err != nil {
		t.Fatalf("RandomEntries: %q %v", es, err)
	}
	if n, _ := m.ValueSize(ctx, b("")); n != 2 {
		t.Fatalf("ValueSize %d", n)
	}
	if n, err := m.FastRemove(ctx, b("p"), b("q"), b("nope")); n != 2 || err != nil {
		t.Fatalf("FastRemove %d %v", n, err)
	}
	if n, err := m.FastRemove(ctx); n != 0 || err != nil {
		t.Fatalf("FastRemove of none %d %v", n, err)
	}
	if d, err := m.AddAndGet(ctx, b("n"), 0.1); d != 0.1 || err != nil {
		t.Fatalf("AddAndGet %v %v", d, err)
	}
	if d, _ := m.AddAndGet(ctx, b("n"), 2.9); d != 3 {
		t.Fatalf("AddAndGet %v", d)
	}
	if s, _ := r.str("HGET", name, "n"); s != "3" {
		t.Fatalf("stored %q", s)
	}
	// bad input
	if err := m.PutAll(ctx, b("odd")); err == nil || !strings.Contains(err.Error(), "even") {
		t.Fatalf("odd PutAll: %v", err)
	}
	wrong := c.Map(name + ":list")
	r.do("RPUSH", name+":list", "x")
	if _, err := wrong.Get(ctx, b("k")); err == nil || !strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
	if err := wrong.Range(ctx, func(k, v []byte) bool { return true }); err == nil ||
		!strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type Range: %v", err)
	}
	if all, err := wrong.GetAll(ctx); len(all) != 0 || err != nil { // no round trip
		t.Fatalf("GetAll of none: %v %v", all, err)
	}
}

// Iteration by HSCAN pages past the listpack (512 entries): each entry
// once, early stop, a MATCH pattern.
func TestGridMapRange(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	name := uniqueName(t)
	m := c.Map(name)
	const n = 2500
	pairs := make([][]byte, 0, 2*n)
	for i := 0; i < n; i++ {
		pairs = append(pairs, []byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)))
	}
	if err := m.PutAll(ctx, pairs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	err := m.Range(ctx, func(k, v []byte) bool {
		if !bytes.Equal(k[1:], v[1:]) {
			t.Errorf("%q = %q", k, v)
		}
		seen[string(k)]++
		return true
	})
	if err != nil || len(seen) != n {
		t.Fatalf("Range: %d keys, %v", len(seen), err)
	}
	for k, cnt := range seen {
		if cnt != 1 {
			t.Fatalf("%s seen %d times", k, cnt)
		}
	}
	count := 0
	if err := m.Range(ctx, func(k, v []byte) bool { count++; return count < 10 }); err != nil || count != 10 {
		t.Fatalf("early stop: %d %v", count, err)
	}
	var keys []string
	if err := m.RangeMatch(ctx, []byte("k1*"), func(k, v []byte) bool {
		keys = append(keys, string(k))
		return true
	}); err != nil || len(keys) != 1111 {
		t.Fatalf("RangeMatch: %d %v", len(keys), err)
	}
	sort.Strings(keys)
	if keys[0] != "k1" || keys[1110] != "k1999" {
		t.Fatalf("RangeMatch keys %s..%s", keys[0], keys[1110])
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Range(done, func(k, v []byte) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Range: %v", err)
	}
}

// Lost replies: Put is ErrInDoubt and ran once; Remove (marked) is sent
// again and answers what it took; Set (idem) is sent again and succeeds.
func TestGridMapLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Map(name)
	if _, err := m.Put(ctx, []byte("f"), []byte("v0")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(ctx, []byte("none")); err != nil { // cached
		t.Fatal(err)
	}
	if err := m.Set(ctx, []byte("g"), []byte("taken")); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	if _, err := m.Put(ctx, []byte("f"), []byte("v1")); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { s, _ := r.str("HGET", name, "f"); return s == "v1" }) {
		t.Fatal("the put never landed")
	}
	p.Delay(0)
	if _, err := m.Size(ctx); err != nil {
		t.Fatal(err)
	}
	p.Delay(400)
	type result struct {
		v   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := m.Remove(ctx, []byte("g"))
		got <- result{v, err}
	}()
	if !waitFor(10*time.Second, func() bool { return r.int("HEXISTS", name, "g") == 0 }) {
		t.Fatal("the remove never landed")
	}
	time.Sleep(300 * time.Millisecond) // its reply lost
	p.Delay(0)
	if res := <-got; string(res.v) != "taken" || res.err != nil {
		t.Fatalf("Remove after a lost reply: %q %v", res.v, res.err)
	}
}
