package hilock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func bqBlocked(t *testing.T, r *redis) int {
	t.Helper()
	var info string
	switch s := r.do("INFO", "clients").(type) {
	case []byte:
		info = string(s)
	case string:
		info = s
	}
	i := strings.Index(info, "blocked_clients:")
	if i < 0 {
		t.Fatalf("no blocked_clients in INFO")
	}
	rest := info[i+len("blocked_clients:"):]
	n, _ := strconv.Atoi(strings.TrimSpace(rest[:strings.IndexAny(rest, "\r\n")]))
	return n
}

func bqWait(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGridBlockingQueueOps(t *testing.T) {
	c := connect(t)
	ctx := context.Background()
	q := c.BlockingQueue("go:bq:ops")
	if ok, err := q.Offer(ctx, []byte("a")); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, v := range []string{"b", "c"} {
		if err := q.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := q.Take(ctx); err != nil || string(v) != "a" {
		t.Fatalf("take %q %v", v, err)
	}
	if v, err := q.PollTimeout(ctx, time.Second); err != nil || string(v) != "b" {
		t.Fatalf("poll %q %v", v, err)
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "c" {
		t.Fatalf("poll %q %v", v, err)
	}
	t0 := time.Now()
	if v, err := q.PollTimeout(ctx, 300*time.Millisecond); err != nil || v != nil {
		t.Fatalf("poll of nothing %q %v", v, err)
	}
	if el := time.Since(t0); el < 280*time.Millisecond || el > 5*time.Second {
		t.Fatalf("poll of nothing returned after %v", el)
	}
	if _, err := q.PollTimeout(ctx, -time.Second); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("negative timeout: %v", err)
	}
}

// 16 goroutines, a client each, drain a filled queue with Take: every
// take finds an element at once, so the queue's pump hands it and the task
// can end while its start is still returning. That start once read its
// freed waiter: bench's 16 Go consumers crashed there (SIGSEGV in
// hl__task_kick) every run before the fix; this test takes the same path,
// and every element must come exactly once.
func TestGridBlockingQueueTakersOfAFilledQueue(t *testing.T) {
	const takers, n = 16, 1600
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := connect(t)
	q := p.BlockingQueue("go:bq:filled")
	for i := 0; i < n; i++ {
		if err := q.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < takers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := connect(t)
			bq := c.BlockingQueue("go:bq:filled")
			for {
				v, err := bq.PollTimeout(ctx, 300*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if v == nil {
					return
				}
				mu.Lock()
				seen[string(v)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct elements taken of %d", len(seen), n)
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("%q taken %d times", v, k)
		}
	}
}

// 100 goroutines take at once: one blocking command in Redis, FIFO, each
// element once; a cancelled Take loses nothing.
func TestGridBlockingQueueManyTakersAndCancel(t *testing.T) {
	c := connect(t)
	p := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	q := c.BlockingQueue("go:bq:many")
	pq := p.BlockingQueue("go:bq:many")
	const n = 100
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v, err := q.Take(ctx)
			if err != nil {
				t.Error(err)
			}
			got[i] = string(v)
		}(i)
	}
	bqWait(t, "a blocked taker", func() bool { return bqBlocked(t, r) >= 1 })
	time.Sleep(200 * time.Millisecond)
	if b := bqBlocked(t, r); b != 1 {
		t.Fatalf("%d blocked clients for %d takers, want 1", b, n)
	}
	for i := 0; i < n; i++ {
		if err := pq.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := 0; i < n; i++ {
		if seen[fmt.Sprint(i)] != 1 {
			t.Fatalf("element %d taken %d times", i, seen[fmt.Sprint(i)])
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := q.Take(cctx); done <- err }()
	bqWait(t, "a blocked taker", func() bool { return bqBlocked(t, r) >= 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled take: %v", err)
	}
	bqWait(t, "no blocked taker", func() bool { return bqBlocked(t, r) == 0 })
	if err := pq.Put(ctx, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if l := lrange(r, "go:bq:many"); len(l) != 1 || l[0] != "kept" {
		t.Fatalf("queue after the cancel: %q", l)
	}
	if k := r.do("KEYS", "hilock_inflight:*").([]interface{}); len(k) != 0 {
		t.Fatalf("in-flight lists left: %q", k)
	}
}

// Redisson's consumers BLPOP what hilock offers; hilock takes what they RPUSH.
func TestGridBlockingQueueRedissonPeers(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	q := c.BlockingQueue("go:bq:compat")
	if _, err := q.Offer(ctx, []byte("to-java")); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.do("BLPOP", "go:bq:compat", "1").([]interface{}); len(l) != 2 || fmt.Sprintf("%s", l[1]) != "to-java" {
		t.Fatalf("BLPOP: %q", l)
	}
	r.do("RPUSH", "go:bq:compat", "j1")
	if v, err := q.Take(ctx); err != nil || string(v) != "j1" {
		t.Fatalf("take %q %v", v, err)
	}
}

// The blocking deque: takes at either end, a poll at the tail that times out.
func TestGridBlockingDeque(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	d := c.BlockingDeque(name)
	if err := d.PutLast(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := d.PutFirst(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	r.do("RPUSH", name, "c")
	if v, err := d.TakeLast(ctx); err != nil || string(v) != "c" {
		t.Fatalf("take_last %q %v", v, err)
	}
	if v, err := d.TakeFirst(ctx); err != nil || string(v) != "a" {
		t.Fatalf("take_first %q %v", v, err)
	}
	if v, err := d.PollLastTimeout(ctx, 200*time.Millisecond); err != nil || string(v) != "b" {
		t.Fatalf("poll_last %q %v", v, err)
	}
	if v, err := d.PollLastTimeout(ctx, 200*time.Millisecond); err != nil || v != nil {
		t.Fatalf("poll_last of nothing %q %v", v, err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		r.do("RPUSH", name, "x", "y")
	}()
	if v, err := d.TakeLast(ctx); err != nil || string(v) != "y" {
		t.Fatalf("take_last woken %q %v", v, err)
	}
	if v, err := d.Take(ctx); err != nil || string(v) != "x" {
		t.Fatalf("take %q %v", v, err)
	}
}

// The bounded queue: capacity on Redisson's key, a Put that waits for
// room and lands once a Take gives a unit back; PollMany gives units back.
func TestGridBoundedBlockingQueue(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	name := uniqueName(t)
	q := c.BoundedBlockingQueue(name)
	if ok, err := q.TrySetCapacity(ctx, 2); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, v := range []string{"a", "b"} {
		if ok, err := q.Offer(ctx, []byte(v)); err != nil || !ok {
			t.Fatal(v, ok, err)
		}
	}
	if ok, err := q.OfferTimeout(ctx, []byte("c"), 200*time.Millisecond); err != nil || ok {
		t.Fatalf("offer to a full queue: %v %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Put(ctx, []byte("c")) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("put returned on a full queue: %v", err)
	default:
	}
	if v, err := q.Take(ctx); err != nil || string(v) != "a" {
		t.Fatalf("take %q %v", v, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// the elements as put, byte for byte (Put once sent a NUL before the
	// value, cut short by one byte)
	if v, err := q.PollMany(ctx, 5); err != nil || len(v) != 2 || string(v[0]) != "b" ||
		string(v[1]) != "c" {
		t.Fatalf("poll_many %q %v", v, err)
	}
	if n, err := q.RemainingCapacity(ctx); err != nil || n != 2 {
		t.Fatalf("remaining %d %v", n, err)
	}
	if s, _ := r.str("GET", "redisson_bqs:{"+name+"}"); s != "2" {
		t.Fatalf("capacity key %q", s)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if v, err := q.PollTimeout(cctx, 100*time.Millisecond); err != nil || v != nil {
		t.Fatalf("poll of nothing %q %v", v, err)
	}
}

// bqCalls is how many times Redis ran cmd (INFO commandstats; 0: never).
func bqCalls(t *testing.T, r *redis, cmd string) int {
	t.Helper()
	var info string
	switch s := r.do("INFO", "commandstats").(type) {
	case []byte:
		info = string(s)
	case string:
		info = s
	}
	i := strings.Index(info, "cmdstat_"+cmd+":calls=")
	if i < 0 {
		return 0
	}
	rest := info[i+len("cmdstat_"+cmd+":calls="):]
	n, _ := strconv.Atoi(rest[:strings.IndexAny(rest, ",\r\n")])
	return n
}

// A Take of a queue that holds elements is one look on the goroutine's
// thread (the fast path: no pump, no BLMOVE): every element once, in
// order, no key left; a Take of an empty queue still waits and wakes.
func TestGridBlockingQueueFastTake(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	ctx := context.Background()
	q := c.BlockingQueue("go:bq:fast")
	const n = 50
	for i := 0; i < n; i++ {
		if err := q.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	mv := bqCalls(t, r, "blmove")
	for i := 0; i < n; i++ {
		v, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(v) != fmt.Sprint(i) {
			t.Fatalf("take %d: %q", i, v)
		}
	}
	if d := bqCalls(t, r, "blmove") - mv; d != 0 {
		t.Fatalf("%d BLMOVEs for %d takes of a filled queue, want 0", d, n)
	}
	if k := r.do("KEYS", "hilock_*go:bq:fast*").([]interface{}); len(k) != 0 {
		t.Fatalf("keys left: %q", k)
	}
	v, err := q.PollTimeout(ctx, 0)
	if err != nil || v != nil {
		t.Fatalf("poll of an empty queue: %q %v", v, err)
	}
	done := make(chan string, 1)
	go func() {
		v, err := q.Take(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- string(v)
	}()
	bqWait(t, "a blocked taker", func() bool { return bqBlocked(t, r) >= 1 })
	if err := q.Put(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if v := <-done; v != "late" {
		t.Fatalf("waiting take: %q", v)
	}
	if k := r.do("KEYS", "hilock_*go:bq:fast*").([]interface{}); len(k) != 0 {
		t.Fatalf("keys left: %q", k)
	}
}
