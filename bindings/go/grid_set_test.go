package hilock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func sortedStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	sort.Strings(out)
	return out
}

// The set (Redisson's RSet): every op against the key in Redis, NUL and
// empty members, random members and pops, Range over SSCAN pages past
// the listpack, a key of another type.
func TestGridSet(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	s := c.Set(name)
	if ok, err := s.Add(ctx, []byte("a")); !ok || err != nil {
		t.Fatalf("Add: %v %v", ok, err)
	}
	if ok, err := s.Add(ctx, []byte("a")); ok || err != nil {
		t.Fatalf("Add again: %v %v", ok, err)
	}
	if n, err := s.AddAll(ctx, []byte("n\x00ul"), []byte{}, []byte("a")); n != 2 || err != nil {
		t.Fatalf("AddAll: %d %v", n, err)
	}
	if n, err := s.AddAll(ctx); n != 0 || err != nil {
		t.Fatalf("AddAll of none: %d %v", n, err)
	}
	if got := fmt.Sprint(sortedStrings(toBytes(r.do("SMEMBERS", name)))); got != fmt.Sprint([]string{"", "a", "n\x00ul"}) {
		t.Fatalf("members %q", got)
	}
	if ok, _ := s.Contains(ctx, []byte("n\x00ul")); !ok {
		t.Fatal("Contains NUL member")
	}
	if ok, _ := s.Contains(ctx, []byte("n")); ok {
		t.Fatal("Contains a prefix")
	}
	if ok, _ := s.ContainsAll(ctx, []byte("a"), []byte{}); !ok {
		t.Fatal("ContainsAll")
	}
	if ok, _ := s.ContainsAll(ctx, []byte("a"), []byte("zz")); ok {
		t.Fatal("ContainsAll with a stranger")
	}
	if ok, err := s.Remove(ctx, []byte("a")); !ok || err != nil {
		t.Fatalf("Remove: %v %v", ok, err)
	}
	if ok, _ := s.Remove(ctx, []byte("a")); ok {
		t.Fatal("Remove twice")
	}
	if n, _ := s.Size(ctx); n != 2 {
		t.Fatalf("Size %d", n)
	}
	if m, err := s.Random(ctx); m == nil || err != nil {
		t.Fatalf("Random: %q %v", m, err)
	}
	if ms, _ := s.RandomMany(ctx, 10); len(ms) != 2 {
		t.Fatalf("RandomMany %q", ms)
	}
	m, err := s.RemoveRandom(ctx)
	if m == nil || err != nil {
		t.Fatalf("RemoveRandom: %q %v", m, err)
	}
	if r.int("SISMEMBER", name, string(m)) != 0 || r.int("SCARD", name) != 1 {
		t.Fatal("RemoveRandom left it")
	}
	if ms, _ := s.RemoveRandomMany(ctx, 5); len(ms) != 1 {
		t.Fatalf("RemoveRandomMany %q", ms)
	}
	if m, err := s.RemoveRandom(ctx); m != nil || err != nil {
		t.Fatalf("RemoveRandom of empty: %q %v", m, err)
	}
	// many: one call, then Range over pages
	const n = 3000
	many := make([][]byte, n)
	for i := range many {
		many[i] = []byte("m" + strconv.Itoa(i))
	}
	if got, err := s.AddAll(ctx, many...); got != n || err != nil {
		t.Fatalf("AddAll many: %d %v", got, err)
	}
	if next, page, err := s.Scan(ctx, []byte("0"), 100); err != nil || string(next) == "0" || len(page) >= n {
		t.Fatalf("one page: %q %d %v", next, len(page), err)
	}
	seen := map[string]int{}
	if err := s.Range(ctx, func(m []byte) bool { seen[string(m)]++; return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("Range saw %d of %d", len(seen), n)
	}
	count := 0
	if err := s.Range(ctx, func([]byte) bool { count++; return count < 10 }); err != nil || count != 10 {
		t.Fatalf("Range stopped at %d: %v", count, err)
	}
	if got, _ := s.RemoveAll(ctx, many[:10]...); got != 10 {
		t.Fatalf("RemoveAll %d", got)
	}
	// a key of another type
	r.do("SET", name+":str", "plain")
	if _, err := c.Set(name+":str").Add(ctx, []byte("x")); err == nil ||
		!strings.Contains(err.Error(), "another type of value than a set") {
		t.Fatalf("wrong type: %v", err)
	}
	if err := c.Set(name+":str").Range(ctx, func([]byte) bool { return true }); err == nil {
		t.Fatal("Range over a string")
	}
	if _, err := s.RemoveRandomMany(ctx, -1); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Fatalf("negative count: %v", err)
	}
}

func toBytes(v interface{}) [][]byte {
	items, _ := v.([]interface{})
	out := make([][]byte, 0, len(items))
	for _, it := range items {
		b, _ := it.([]byte)
		out = append(out, b)
	}
	return out
}

// The scored sorted set (Redisson's RScoredSortedSet): scores and ranks
// (nil is not 0), ends, polls, ranges by rank and score with open ends,
// batches, Range and RangeInOrder, refused scores.
func TestGridScoredSortedSet(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	z := c.ScoredSortedSet(name)
	if _, ok, err := z.GetScore(ctx, []byte("a")); ok || err != nil {
		t.Fatalf("GetScore of none: %v %v", ok, err)
	}
	if _, ok, err := z.Rank(ctx, []byte("a")); ok || err != nil {
		t.Fatalf("Rank of none: %v %v", ok, err)
	}
	if _, ok, _ := z.FirstScore(ctx); ok {
		t.Fatal("FirstScore of empty")
	}
	if m, err := z.PollFirst(ctx); m != nil || err != nil {
		t.Fatalf("PollFirst of empty: %q %v", m, err)
	}
	if ok, err := z.Add(ctx, 1.5, []byte("a")); !ok || err != nil {
		t.Fatalf("Add: %v %v", ok, err)
	}
	if ok, _ := z.TryAdd(ctx, 9, []byte("a")); ok {
		t.Fatal("TryAdd over a member")
	}
	if n, err := z.AddAll(ctx, hilock.ScoredEntry{Member: []byte("n\x00ul"), Score: -0.25},
		hilock.ScoredEntry{Member: []byte{}, Score: 1e300}); n != 2 || err != nil {
		t.Fatalf("AddAll: %d %v", n, err)
	}
	if v, err := z.AddScore(ctx, []byte("a"), 1.1); v != 2.6 || err != nil {
		t.Fatalf("AddScore: %v %v", v, err)
	}
	if s, _ := r.str("ZSCORE", name, ""); func() float64 { f, _ := strconv.ParseFloat(s, 64); return f }() != 1e300 {
		t.Fatalf("score in Redis %q", s)
	}
	if v, ok, _ := z.GetScore(ctx, []byte{}); !ok || v != 1e300 {
		t.Fatalf("GetScore %v %v", v, ok)
	}
	if v, ok, _ := z.Rank(ctx, []byte("n\x00ul")); !ok || v != 0 {
		t.Fatalf("Rank 0 %v %v", v, ok)
	}
	if v, ok, _ := z.RevRank(ctx, []byte("n\x00ul")); !ok || v != 2 {
		t.Fatalf("RevRank %v %v", v, ok)
	}
	if m, _ := z.Last(ctx); m == nil || len(m) != 0 {
		t.Fatalf("Last %q", m)
	}
	if v, ok, _ := z.LastScore(ctx); !ok || v != 1e300 {
		t.Fatalf("LastScore %v", v)
	}
	if vs, _ := z.ValueRange(ctx, 0, 1); len(vs) != 2 || string(vs[1]) != "a" {
		t.Fatalf("ValueRange %q", vs)
	}
	if es, _ := z.EntryRange(ctx, -1, -1); len(es) != 1 || es[0].Score != 1e300 {
		t.Fatalf("EntryRange %v", es)
	}
	if vs, _ := z.ValueRangeByScore(ctx, math.Inf(-1), math.Inf(1), true, true, 0, -1); len(vs) != 3 {
		t.Fatalf("ValueRangeByScore open %q", vs)
	}
	if vs, _ := z.ValueRangeByScore(ctx, -0.25, 1e300, false, false, 0, -1); len(vs) != 1 || string(vs[0]) != "a" {
		t.Fatalf("ValueRangeByScore exclusive %q", vs)
	}
	if es, _ := z.EntryRangeByScore(ctx, 0, math.Inf(1), true, true, 1, 5); len(es) != 1 || es[0].Score != 1e300 {
		t.Fatalf("EntryRangeByScore limit %v", es)
	}
	if n, _ := z.Count(ctx, math.Inf(-1), 2.6, true, false); n != 1 {
		t.Fatalf("Count %d", n)
	}
	var order []string
	if err := z.RangeInOrder(ctx, true, func(e hilock.ScoredEntry) bool { order = append(order, string(e.Member)); return true }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{"", "a", "n\x00ul"}) {
		t.Fatalf("RangeInOrder reverse %q", order)
	}
	if m, _ := z.PollLast(ctx); m == nil || len(m) != 0 {
		t.Fatalf("PollLast %q", m)
	}
	if ok, _ := z.Remove(ctx, []byte("a")); !ok {
		t.Fatal("Remove")
	}
	if r.int("ZCARD", name) != 1 {
		t.Fatal("left")
	}
	// refused scores
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := z.Add(ctx, bad, []byte("x")); !errors.Is(err, hilock.ErrInvalid) ||
			!strings.Contains(err.Error(), "finite") {
			t.Fatalf("Add %v: %v", bad, err)
		}
		if _, err := z.AddAll(ctx, hilock.ScoredEntry{Member: []byte("x"), Score: bad}); !errors.Is(err, hilock.ErrInvalid) {
			t.Fatalf("AddAll %v: %v", bad, err)
		}
	}
	if _, err := z.Count(ctx, math.NaN(), 0, true, true); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("Count NaN: %v", err)
	}
	// many: pages past the listpack, in both orders
	const n = 2000
	es := make([]hilock.ScoredEntry, n)
	for i := range es {
		es[i] = hilock.ScoredEntry{Member: []byte(fmt.Sprintf("m%05d", i)), Score: float64(i)/4 - 100}
	}
	if got, err := z.AddAll(ctx, es...); got != n || err != nil {
		t.Fatalf("AddAll many: %d %v", got, err)
	}
	seen := map[string]float64{}
	if err := z.Range(ctx, func(e hilock.ScoredEntry) bool { seen[string(e.Member)] = e.Score; return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n+1 || seen["m01999"] != 1999.0/4-100 {
		t.Fatalf("Range saw %d", len(seen))
	}
	prev := hilock.ScoredEntry{Score: math.Inf(-1)}
	i := 0
	if err := z.RangeInOrder(ctx, false, func(e hilock.ScoredEntry) bool {
		if e.Score < prev.Score || e.Score == prev.Score && bytes.Compare(e.Member, prev.Member) <= 0 {
			t.Errorf("order at %d: %q after %q", i, e.Member, prev.Member)
		}
		prev = e
		i++
		return true
	}); err != nil || i != n+1 {
		t.Fatalf("RangeInOrder: %d %v", i, err)
	}
	if ms, _ := z.PollFirstMany(ctx, 2); len(ms) != 2 || string(ms[0]) != "m00000" {
		t.Fatalf("PollFirstMany %q", ms)
	}
	if ms, _ := z.PollLastMany(ctx, 2); len(ms) != 2 || string(ms[0]) != "m01999" {
		t.Fatalf("PollLastMany %q", ms)
	}
	r.do("SADD", name+":set", "x")
	if _, _, err := z.Rank(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ScoredSortedSet(name+":set").Add(ctx, 1, []byte("x")); err == nil ||
		!strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
}

// Lost replies: a pop and a poll answer what they took (nothing lost,
// nothing taken twice); an add is in doubt and applied once.
func TestGridSetLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond), hilock.WithRetry(20, 50*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	s := c.Set(name)
	z := c.ScoredSortedSet(name + ":z")
	s.AddAll(ctx, []byte("p"))
	s.RemoveRandom(ctx) // the scripts cached (else a late copy meets NOSCRIPT)
	z.PollFirst(ctx)
	s.AddAll(ctx, []byte("p"), []byte("q"))
	z.AddAll(ctx, hilock.ScoredEntry{Member: []byte("one"), Score: 1}, hilock.ScoredEntry{Member: []byte("two"), Score: 2})
	p.Delay(400)
	type res struct {
		m   []byte
		err error
	}
	done := make(chan res, 1)
	go func() { m, err := s.RemoveRandom(ctx); done <- res{m, err} }()
	if !waitFor(10*time.Second, func() bool { return r.int("SCARD", name) == 1 }) {
		t.Fatal("the pop never ran")
	}
	time.Sleep(300 * time.Millisecond)
	p.Delay(0)
	got := <-done
	left := toBytes(r.do("SMEMBERS", name))
	if got.err != nil || len(left) != 1 || got.m == nil || bytes.Equal(got.m, left[0]) {
		t.Fatalf("pop answered %q %v, left %q", got.m, got.err, left)
	}
	p.Delay(400)
	go func() { m, err := z.PollFirst(ctx); done <- res{m, err} }()
	if !waitFor(10*time.Second, func() bool { return r.int("ZCARD", name+":z") == 1 }) {
		t.Fatal("the poll never ran")
	}
	time.Sleep(300 * time.Millisecond)
	p.Delay(0)
	if got := <-done; string(got.m) != "one" || got.err != nil {
		t.Fatalf("poll answered %q %v", got.m, got.err)
	}
	p.Delay(400)
	if _, err := z.Add(ctx, 5, []byte("w")); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost add: %v", err)
	}
	if !waitFor(10*time.Second, func() bool { _, ok := r.str("ZSCORE", name+":z", "w"); return ok }) {
		t.Fatal("the add never landed")
	}
	p.Delay(0)
	if r.int("ZCARD", name+":z") != 2 {
		t.Fatal("counts")
	}
}
