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

	hilock "github.com/hilock/hilock/bindings/go"
)

// The priority queue and deque (Redisson's RPriorityQueue and
// RPriorityDeque): Java's String order with duplicates, Poll/Peek, the
// deque's ends, Range over pages, Redisson's lock waited for, the
// suffix-form comparator refused, bad input.
func TestGridPriorityQueue(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	q := c.PriorityQueue(name)
	vectors := []string{"", "\x00", "A", "a", "\u00e9", "\U00010000", "\U0001F600",
		"\U0010FFFF", "\ue000", "\uff21", "\uffff"}
	if !sort.SliceIsSorted(vectors, func(i, j int) bool { return javaLess(vectors[i], vectors[j]) }) {
		t.Fatal("vectors not in Java's order")
	}
	var want []string
	for i := len(vectors) - 1; i >= 0; i-- {
		for k := 0; k < 1+i%2; k++ { // every other one twice
			if ok, err := q.Add(ctx, []byte(vectors[i])); !ok || err != nil {
				t.Fatalf("Add %q: %v %v", vectors[i], ok, err)
			}
		}
	}
	for i, v := range vectors {
		for k := 0; k < 1+i%2; k++ {
			want = append(want, v)
		}
	}
	var got []string
	if err := q.Range(ctx, func(_ int64, v []byte) bool { got = append(got, string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %q", got)
	}
	if n := r.int("LLEN", name); n != int64(len(want)) {
		t.Fatalf("LLEN %d", n)
	}
	if ok, err := q.Contains(ctx, []byte("\uff21")); !ok || err != nil {
		t.Fatalf("Contains: %v %v", ok, err)
	}
	if v, err := q.Peek(ctx); v == nil || len(v) != 0 || err != nil {
		t.Fatalf("Peek: %q %v", v, err)
	}
	for i, w := range want {
		v, err := q.Poll(ctx)
		if err != nil || string(v) != w {
			t.Fatalf("Poll %d: %q %v, want %q", i, v, err, w)
		}
	}
	if v, err := q.Poll(ctx); v != nil || err != nil {
		t.Fatalf("Poll of empty: %q %v", v, err)
	}
	// the deque's ends
	d := c.PriorityDeque(name)
	for _, v := range []string{"m", "c", "x", "c"} {
		if ok, err := d.Offer(ctx, []byte(v)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if v, err := d.PeekLast(ctx); string(v) != "x" || err != nil {
		t.Fatalf("PeekLast %q %v", v, err)
	}
	if v, err := d.PollLast(ctx); string(v) != "x" || err != nil {
		t.Fatalf("PollLast %q %v", v, err)
	}
	if v, err := d.PollFirst(ctx); string(v) != "c" || err != nil {
		t.Fatalf("PollFirst %q %v", v, err)
	}
	if ok, err := d.Remove(ctx, []byte("c")); !ok || err != nil {
		t.Fatalf("Remove %v %v", ok, err)
	}
	if n, err := d.Size(ctx); n != 1 || err != nil {
		t.Fatalf("Size %d %v", n, err)
	}
	// 2400 values, three pages; Range stops when told
	big := c.PriorityQueue(name + ":big")
	for i := 0; i < 2400; i++ {
		if _, err := big.Add(ctx, []byte(fmt.Sprintf("k%05d", (i*7919)%1200))); err != nil {
			t.Fatal(err)
		}
	}
	n := int64(0)
	if err := big.Range(ctx, func(i int64, v []byte) bool {
		if i != n || string(v) != fmt.Sprintf("k%05d", i/2) {
			t.Errorf("at %d: %q", i, v)
		}
		n++
		return true
	}); err != nil || n != 2400 {
		t.Fatalf("Range: %d %v", n, err)
	}
	n = 0
	_ = big.Range(ctx, func(int64, []byte) bool { n++; return n < 10 })
	if n != 10 {
		t.Fatalf("Range did not stop: %d", n)
	}
	// bad input
	if _, err := q.Add(ctx, []byte{0xff}); !errors.Is(err, hilock.ErrInvalid) ||
		!strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	r.do("SET", name+":str", "x")
	if _, err := c.PriorityQueue(name + ":str").Poll(ctx); err == nil ||
		!strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
}

func TestGridPriorityQueueRedissonLockAndComparator(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	q := c.PriorityQueue(name)
	if _, err := q.Add(ctx, []byte("m")); err != nil {
		t.Fatal(err)
	}
	lock := "redisson_sortedset_lock:{" + name + "}"
	r.do("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", "1")
	r.do("PEXPIRE", lock, "30000")
	done := make(chan string, 1)
	go func() {
		v, err := q.Poll(ctx)
		done <- fmt.Sprintf("%s %v", v, err)
	}()
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
	case s := <-done:
		t.Fatalf("polled while Redisson held the lock: %s", s)
	default:
	}
	if r.int("LLEN", name) != 1 {
		t.Fatal("taken while locked")
	}
	r.do("DEL", lock)
	select {
	case s := <-done:
		if s != "m <nil>" {
			t.Fatal(s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("poll still waiting after the unlock")
	}
	// a context deadline ends a wait
	r.do("HSET", lock, "x:1", "1")
	r.do("PEXPIRE", lock, "30000")
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := q.Add(tctx, []byte("w"))
	cancel()
	if err == nil {
		t.Fatal("Add returned while locked")
	}
	if v, err := q.Poll(ctx); v != nil || err != nil { // empty: at once
		t.Fatalf("Poll of empty while locked: %q %v", v, err)
	}
	r.do("DEL", lock)
	// a comparator (the suffix form): refused
	key := "{" + name + "}:redisson_sortedset_comparator"
	r.do("SET", key, "com.example.ReverseCmp:3f2a")
	if _, err := q.Add(ctx, []byte("a")); !errors.Is(err, hilock.ErrInvalid) ||
		!strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "com.example.ReverseCmp") {
		t.Fatalf("comparator: %v", err)
	}
	if n, err := q.Size(ctx); n != 0 || err != nil {
		t.Fatalf("Size %d %v", n, err)
	}
}

// add is never resent (ErrInDoubt, applied once); a poll whose reply is
// lost answers what it took.
func TestGridPriorityQueueLostReply(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	c := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	q := c.PriorityQueue(name)
	for _, v := range []string{"c", "a"} {
		if _, err := q.Add(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PriorityQueue(name + ":x").Poll(ctx); err != nil { // scripts cached
		t.Fatal(err)
	}
	p.Delay(400)
	if _, err := q.Add(ctx, []byte("b")); !errors.Is(err, hilock.ErrInDoubt) {
		t.Fatalf("lost reply: %v, want ErrInDoubt", err)
	}
	if !waitFor(10*time.Second, func() bool { return r.int("LLEN", name) == 3 }) {
		t.Fatal("the add never landed")
	}
	p.Delay(0)
	if n, err := q.Size(ctx); n != 3 || err != nil {
		t.Fatalf("size %d %v", n, err)
	}
	p.Delay(400)
	go func() {
		waitFor(10*time.Second, func() bool { return r.int("LLEN", name) == 2 })
		time.Sleep(300 * time.Millisecond)
		p.Delay(0)
	}()
	if v, err := q.Poll(ctx); string(v) != "a" || err != nil {
		t.Fatalf("lost poll: %q %v", v, err)
	}
	if r.int("LLEN", name) != 2 {
		t.Fatal("more than one taken")
	}
}

// The blocking queue: Take waits as a task and a hilock add wakes it; ctx
// ends a wait; PollTimeout answers nil after its timeout; a raw RPUSH (a
// Java producer) is found by the back-off.
func TestGridPriorityBlockingQueue(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	q := c.PriorityBlockingQueue(name)
	producer := connect(t).PriorityQueue(name)
	if v, err := q.PollTimeout(ctx, 200*time.Millisecond); v != nil || err != nil {
		t.Fatalf("PollTimeout of empty: %q %v", v, err)
	}
	got := make(chan string, 1)
	go func() {
		v, err := q.Take(ctx)
		got <- fmt.Sprintf("%s %v", v, err)
	}()
	ch := "hilock_priority_queue_channel:{" + name + "}"
	if !waitFor(10*time.Second, func() bool {
		n, _ := r.do("PUBSUB", "NUMSUB", ch).([]interface{})
		return len(n) == 2 && n[1] == int64(1)
	}) {
		t.Fatal("the take does not listen")
	}
	if _, err := producer.Add(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "b <nil>" {
			t.Fatal(s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take not woken")
	}
	// ctx ends a take
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	v, err := q.Take(tctx)
	cancel()
	if v != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take past ctx: %q %v", v, err)
	}
	cctx, cancel2 := context.WithCancel(ctx)
	go func() { time.Sleep(100 * time.Millisecond); cancel2() }()
	if v, err := q.Take(cctx); v != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Take cancelled: %q %v", v, err)
	}
	r.do("RPUSH", name, "j")
	if v, err := q.PollTimeout(ctx, 5*time.Second); string(v) != "j" || err != nil {
		t.Fatalf("PollTimeout of a raw push: %q %v", v, err)
	}
	if ok, err := q.Put(ctx, []byte("z")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if v, err := q.Take(ctx); string(v) != "z" || err != nil {
		t.Fatalf("Take: %q %v", v, err)
	}
	if _, err := q.PollTimeout(ctx, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("PollTimeout 0: %v", err)
	}
}

// The blocking deque: TakeLast answers the highest value (at once, or
// woken by a hilock add); PollLastTimeout answers nil after its timeout;
// a raw RPUSH is found by the back-off; ctx ends a TakeLast.
func TestGridPriorityBlockingDeque(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	q := c.PriorityBlockingDeque(name)
	producer := connect(t).PriorityQueue(name)
	for _, v := range []string{"b", "c", "a"} {
		if ok, err := q.Put(ctx, []byte(v)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if v, err := q.TakeLast(ctx); string(v) != "c" || err != nil {
		t.Fatalf("TakeLast: %q %v", v, err)
	}
	if v, err := q.PollLastTimeout(ctx, 5*time.Second); string(v) != "b" || err != nil {
		t.Fatalf("PollLastTimeout: %q %v", v, err)
	}
	if v, err := q.TakeFirst(ctx); string(v) != "a" || err != nil {
		t.Fatalf("TakeFirst: %q %v", v, err)
	}
	t0 := time.Now()
	if v, err := q.PollLastTimeout(ctx, 200*time.Millisecond); v != nil || err != nil {
		t.Fatalf("PollLastTimeout of empty: %q %v", v, err)
	}
	if time.Since(t0) < 190*time.Millisecond {
		t.Fatal("PollLastTimeout did not wait")
	}
	got := make(chan string, 1)
	go func() {
		v, err := q.TakeLast(ctx)
		got <- fmt.Sprintf("%s %v", v, err)
	}()
	ch := "hilock_priority_queue_channel:{" + name + "}"
	if !waitFor(10*time.Second, func() bool {
		n, _ := r.do("PUBSUB", "NUMSUB", ch).([]interface{})
		return len(n) == 2 && n[1] == int64(1)
	}) {
		t.Fatal("the take does not listen")
	}
	if _, err := producer.Add(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "x <nil>" {
			t.Fatal(s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take_last not woken")
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	v, err := q.TakeLast(tctx)
	cancel()
	if v != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TakeLast past ctx: %q %v", v, err)
	}
	r.do("RPUSH", name, "a", "j")
	if v, err := q.PollLastTimeout(ctx, 5*time.Second); string(v) != "j" || err != nil {
		t.Fatalf("PollLastTimeout of a raw push: %q %v", v, err)
	}
	if v, err := q.Take(ctx); string(v) != "a" || err != nil {
		t.Fatalf("Take: %q %v", v, err)
	}
	if _, err := q.PollLastTimeout(ctx, 0); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("PollLastTimeout 0: %v", err)
	}
	n := 0
	if err := q.Range(ctx, func(int64, []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d values left", n)
	}
}
