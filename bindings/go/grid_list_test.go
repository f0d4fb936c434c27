package hilock_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func lrange(r *redis, key string) []string {
	r.t.Helper()
	v, _ := r.do("LRANGE", key, "0", "-1").([]interface{})
	out := make([]string, len(v))
	for i, x := range v {
		switch s := x.(type) {
		case []byte:
			out[i] = string(s)
		case string:
			out[i] = s
		}
	}
	return out
}

// The list (Redisson's RList): every operation and the list left in
// Redis, indexes out of range, NUL and empty values, Range over pages.
func TestGridList(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	l := c.List(name)
	if ok, err := l.Add(ctx, []byte("a")); !ok || err != nil {
		t.Fatalf("Add: %v %v", ok, err)
	}
	if ok, err := l.AddAll(ctx, []byte("b"), []byte{}, []byte("c\x00d")); !ok || err != nil {
		t.Fatalf("AddAll: %v %v", ok, err)
	}
	if ok, err := l.AddAll(ctx); ok || err != nil {
		t.Fatalf("AddAll(): %v %v", ok, err)
	}
	if got := strings.Join(lrange(r, name), "|"); got != "a|b||c\x00d" {
		t.Fatalf("stored %q", got)
	}
	if v, err := l.Get(ctx, -1); string(v) != "c\x00d" || err != nil {
		t.Fatalf("Get(-1): %q %v", v, err)
	}
	if v, err := l.Get(ctx, 4); v != nil || err != nil {
		t.Fatalf("Get(4): %q %v", v, err)
	}
	if v, err := l.Set(ctx, 1, []byte("B")); string(v) != "b" || err != nil {
		t.Fatalf("Set: %q %v", v, err)
	}
	if n, err := l.Insert(ctx, 1, []byte("m")); n != 5 || err != nil {
		t.Fatalf("Insert: %d %v", n, err)
	}
	if n, err := l.AddAfter(ctx, []byte("nope"), []byte("x")); n != -1 || err != nil {
		t.Fatalf("AddAfter: %d %v", n, err)
	}
	if i, err := l.IndexOf(ctx, []byte("c\x00d")); i != 4 || err != nil {
		t.Fatalf("IndexOf: %d %v", i, err)
	}
	if v, err := l.RemoveAt(ctx, 2); string(v) != "B" || err != nil {
		t.Fatalf("RemoveAt: %q %v", v, err)
	}
	if ok, err := l.Remove(ctx, []byte(""), 1); !ok || err != nil {
		t.Fatalf("Remove: %v %v", ok, err)
	}
	if got := strings.Join(lrange(r, name), "|"); got != "a|m|c\x00d" {
		t.Fatalf("stored %q", got)
	}
	// out of range: ErrInvalid naming the index, nothing changed
	for _, f := range []func() error{
		func() error { _, err := l.Set(ctx, 3, []byte("x")); return err },
		func() error { return l.FastSet(ctx, -4, []byte("x")) },
		func() error { _, err := l.Insert(ctx, 4, []byte("x")); return err },
		func() error { _, err := l.RemoveAt(ctx, 3); return err },
	} {
		err := f()
		if !errors.Is(err, hilock.ErrInvalid) || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("out of range: %v", err)
		}
	}
	if n, _ := l.Size(ctx); n != 3 {
		t.Fatalf("size %d", n)
	}
	// more than one page
	vals := make([][]byte, 2500)
	for i := range vals {
		vals[i] = []byte(fmt.Sprint(i))
	}
	if _, err := l.AddAll(ctx, vals...); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := l.Range(ctx, func(i int64, v []byte) bool {
		if int(i) != len(seen) {
			t.Errorf("index %d at %d", i, len(seen))
		}
		seen = append(seen, string(v))
		return true
	})
	if err != nil || len(seen) != 2503 || seen[2] != "c\x00d" || seen[2502] != "2499" {
		t.Fatalf("Range: %d %v", len(seen), err)
	}
	n := 0
	if err := l.Range(ctx, func(int64, []byte) bool { n++; return n < 1500 }); err != nil || n != 1500 {
		t.Fatalf("Range stopped: %d %v", n, err)
	}
	// another type at the key
	r.do("DEL", name)
	r.do("SET", name, "s")
	if _, err := l.Add(ctx, []byte("x")); err == nil || !strings.Contains(err.Error(), "another type") {
		t.Fatalf("wrong type: %v", err)
	}
	if err := l.Range(ctx, func(int64, []byte) bool { return true }); err == nil {
		t.Fatal("Range over a string")
	}
}

// The queue and the deque: offers, peeks, polls at both ends, a move.
func TestGridQueueDeque(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	q := c.Queue(name)
	if v, err := q.Poll(ctx); v != nil || err != nil {
		t.Fatalf("Poll empty: %q %v", v, err)
	}
	for _, v := range []string{"a", "", "c\x00d"} {
		if ok, err := q.Offer(ctx, []byte(v)); !ok || err != nil {
			t.Fatalf("Offer: %v %v", ok, err)
		}
	}
	if v, _ := q.Peek(ctx); string(v) != "a" {
		t.Fatalf("Peek %q", v)
	}
	n := 0
	if err := q.Range(ctx, func(int64, []byte) bool { n++; return true }); err != nil || n != 3 {
		t.Fatalf("Range: %d %v", n, err)
	}
	if v, _ := q.Poll(ctx); string(v) != "a" {
		t.Fatalf("Poll %q", v)
	}
	if vs, err := q.PollMany(ctx, 10); len(vs) != 2 || string(vs[1]) != "c\x00d" || err != nil {
		t.Fatalf("PollMany %q %v", vs, err)
	}
	if _, err := q.PollMany(ctx, -1); !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("PollMany(-1): %v", err)
	}
	d := c.Deque(name)
	if err := d.AddFirst(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	d.AddFirst(ctx, []byte("a"))
	d.AddLast(ctx, []byte("c"))
	d.OfferFirst(ctx, []byte("0"))
	d.OfferLast(ctx, []byte("d"))
	if got := strings.Join(lrange(r, name), "|"); got != "0|a|b|c|d" {
		t.Fatalf("stored %q", got)
	}
	if v, _ := d.PeekLast(ctx); string(v) != "d" {
		t.Fatalf("PeekLast %q", v)
	}
	if v, _ := d.PollLast(ctx); string(v) != "d" {
		t.Fatalf("PollLast %q", v)
	}
	if v, _ := d.PollFirst(ctx); string(v) != "0" {
		t.Fatalf("PollFirst %q", v)
	}
	if v, err := d.PollLastAndOfferFirstTo(ctx, []byte(name+":dst")); string(v) != "c" || err != nil {
		t.Fatalf("PollLastAndOfferFirstTo %q %v", v, err)
	}
	if got := strings.Join(lrange(r, name+":dst"), "|"); got != "c" {
		t.Fatalf("dst %q", got)
	}
	r.do("DEL", name+":dst")
}

// Consumers on goroutines poll through the fault proxy while it loses
// replies: every element produced is consumed exactly once.
func TestGridQueueNoLoss(t *testing.T) {
	ctx := context.Background()
	p := startFaultProxy(t, redisPort(t))
	in := connect(t)
	out := connectVia(t, p, hilock.WithCommandTimeout(250*time.Millisecond),
		hilock.WithRetry(40, 50*time.Millisecond))
	r := newRedis(t)
	name := uniqueName(t)
	var (
		mu       sync.Mutex
		produced []string
		taken    []string
		errs     []error
		stop     = make(chan struct{})
		wg, pwg  sync.WaitGroup
	)
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		q := in.Queue(name)
		for i := 0; i < 20000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprint(i)
			if _, err := q.Offer(ctx, []byte(v)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				continue
			}
			mu.Lock()
			produced = append(produced, v)
			mu.Unlock()
			if i%4 == 3 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for k := 0; k < 3; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			q := out.Queue(name)
			idle := 0
			for idle < 3 {
				var got [][]byte
				var err error
				if k == 0 {
					got, err = q.PollMany(ctx, 5)
				} else {
					var v []byte
					if v, err = q.Poll(ctx); v != nil {
						got = [][]byte{v}
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, v := range got {
					taken = append(taken, string(v))
				}
				mu.Unlock()
				select {
				case <-stop:
					if len(got) == 0 {
						idle++
					}
				default:
					if len(got) == 0 {
						time.Sleep(2 * time.Millisecond)
					}
				}
			}
		}(k)
	}
	for i := 0; i < 4; i++ {
		time.Sleep(150 * time.Millisecond)
		p.Delay(400)
		time.Sleep(500 * time.Millisecond)
		p.Delay(0)
	}
	close(stop)
	pwg.Wait()
	wg.Wait()
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	sort.Strings(produced)
	sort.Strings(taken)
	if len(produced) < 100 || strings.Join(produced, ",") != strings.Join(taken, ",") {
		t.Fatalf("produced %d, taken %d (or not the same)", len(produced), len(taken))
	}
	if n := r.int("LLEN", name); n != 0 {
		t.Fatalf("%d left", n)
	}
	if st := out.Stats(); st.Reconnects < 1 {
		t.Fatalf("no reply was lost: %+v", st)
	}
}
