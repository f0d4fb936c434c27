package hilock_test

// The delayed queue's mover under faults (docs/grid-delayed-queue.md, "Who
// moves elements"): the network to Redis black-holed or reset while
// elements come due, the mover's connections killed (CLIENT KILL) while
// elements wait, two clients moving the same queue. A collector on a
// connection of its own (straight to Redis) BLPOPs the destination and
// notes when each element arrived; each value carries its index and due
// time (wall ms), so the tests check that every element arrives exactly
// once and none before its time.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func dqWallMs() int64 { return time.Now().UnixNano() / int64(time.Millisecond) }

// dqScale is $HILOCK_TEST_SCALE (default 1), as the C and Lua tests read
// it: a loaded machine may set it above 1 to widen the upper time bounds.
func dqScale() int64 {
	if f, err := strconv.ParseFloat(os.Getenv("HILOCK_TEST_SCALE"), 64); err == nil && f >= 1 {
		return int64(f + 0.5)
	}
	return 1
}

// dqValue is element i's value: "i:due" (due in wall ms).
func dqValue(i int, due int64) string { return strconv.Itoa(i) + ":" + strconv.FormatInt(due, 10) }

// dqRawAdd adds value as a Redisson process's offer would (its member
// bytes, the zset and the list), publishing the due time on the channel
// only if publish: without, it is an offer whose message nobody heard.
func dqRawAdd(t testing.TB, r *redis, name, value string, due int64, publish bool) {
	t.Helper()
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(value)))
	m := "\x08" + string(rnd[:]) + string(n[:]) + value
	d := strconv.FormatInt(due, 10)
	r.do("ZADD", "redisson_delay_queue_timeout:{"+name+"}", d, m)
	r.do("RPUSH", "redisson_delay_queue:{"+name+"}", m)
	if publish {
		r.do("PUBLISH", "redisson_delay_queue_channel:{"+name+"}", d)
	}
}

type dqArrival struct {
	i   int
	due int64 // wall ms
	at  int64 // wall ms, once BLPOP answered
}

// dqCollector takes every element of the destination name as it arrives.
type dqCollector struct {
	t    testing.TB
	mu   sync.Mutex
	got  []dqArrival
	cond chan struct{} // a token per arrival batch
	stop chan struct{}
	done chan struct{}
	err  error
}

func dqCollect(t testing.TB, name string) *dqCollector {
	t.Helper()
	rc, err := dialResp(redisAddr)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	c := &dqCollector{t: t, cond: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer rc.close()
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			v, err := rc.do("BLPOP", name, "0.2")
			at := dqWallMs()
			if err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
				return
			}
			a, ok := v.([]interface{})
			if !ok || len(a) != 2 {
				continue // the timeout: nil
			}
			s := string(a[1].([]byte))
			k := strings.IndexByte(s, ':')
			var i int
			var due int64
			var err1, err2 error
			if k >= 0 {
				i, err1 = strconv.Atoi(s[:k])
				due, err2 = strconv.ParseInt(s[k+1:], 10, 64)
			}
			c.mu.Lock()
			if k < 0 || err1 != nil || err2 != nil {
				c.err = fmt.Errorf("a value not of this test: %q", s)
			}
			c.got = append(c.got, dqArrival{i: i, due: due, at: at})
			c.mu.Unlock()
			select {
			case c.cond <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *dqCollector) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

func (c *dqCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// waitCount waits (on arrivals, bounded) until n elements arrived.
func (c *dqCollector) waitCount(n int, within time.Duration) bool {
	deadline := time.After(within)
	for c.count() < n {
		select {
		case <-c.cond:
		case <-deadline:
			return c.count() >= n
		}
	}
	return true
}

// check fails the test unless exactly the n elements 0..n-1 arrived, each
// once, none before its due time; it returns the arrivals by index.
func (c *dqCollector) check(n int) map[int]dqArrival {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		c.t.Fatalf("collector: %v", c.err)
	}
	by := make(map[int]dqArrival, n)
	for _, a := range c.got {
		if prev, dup := by[a.i]; dup {
			c.t.Errorf("element %d arrived twice (at %d and %d)", a.i, prev.at, a.at)
		}
		if a.i < 0 || a.i >= n {
			c.t.Errorf("element %d: not offered", a.i)
		}
		if a.at < a.due {
			c.t.Errorf("element %d arrived %d ms early", a.i, a.due-a.at)
		}
		by[a.i] = a
	}
	if len(c.got) != n || len(by) != n {
		c.t.Fatalf("%d arrivals of %d distinct elements, want %d each once", len(c.got), len(by), n)
	}
	return by
}

func dqWaitingEmpty(t testing.TB, r *redis, name string) {
	t.Helper()
	if n := r.int("ZCARD", "redisson_delay_queue_timeout:{"+name+"}"); n != 0 {
		t.Fatalf("%d elements still in the zset", n)
	}
	if n := r.int("LLEN", "redisson_delay_queue:{"+name+"}"); n != 0 {
		t.Fatalf("%d elements still in the ordered list", n)
	}
}

func dqNumsub(r *redis, channel string) int64 {
	v := r.do("PUBSUB", "NUMSUB", channel).([]interface{})
	return v[1].(int64)
}

func dqWaitNumsub(t testing.TB, r *redis, channel string, n int64, within time.Duration) {
	t.Helper()
	if !waitFor(within, func() bool { return dqNumsub(r, channel) == n }) {
		t.Fatalf("%d subscribers of %s, want %d", dqNumsub(r, channel), channel, n)
	}
}

// The path to Redis breaks while elements come due (black-holed: nothing
// flows, what was sent arrives late; or every connection reset, again and
// again): when it heals every element reaches the destination exactly
// once, none before its time, and promptly (the fallback poll, or the
// catch-up of the reconnect).
func TestGridDelayedQueueFaultsNetwork(t *testing.T) {
	for _, fault := range []string{"blackhole", "reset"} {
		t.Run(fault, func(t *testing.T) {
			ctx := context.Background()
			r := newRedis(t)
			p := startFaultProxy(t, redisPort(t))
			c := connectVia(t, p, hilock.WithCommandTimeout(400*time.Millisecond),
				hilock.WithRetry(2, 100*time.Millisecond))
			name := uniqueName(t)
			col := dqCollect(t, name)
			d, err := c.DelayedQueue(name)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			dqWaitNumsub(t, r, "redisson_delay_queue_channel:{"+name+"}", 1, 10*time.Second)
			const n = 30
			t0 := dqWallMs()
			for i := 0; i < n; i++ {
				// due from 300 ms to about 2.3 s: most during the fault, some after
				delay := time.Duration(300+70*i) * time.Millisecond
				due := dqWallMs() + delay.Milliseconds()
				if err := d.Offer(ctx, []byte(dqValue(i, due)), delay); err != nil {
					t.Fatal(err)
				}
			}
			if fault == "blackhole" {
				p.Blackhole(true)
				start := dqWallMs()
				time.Sleep(1800 * time.Millisecond) // the fault is the behaviour
				// none moved that came due in the black hole
				col.mu.Lock()
				for _, a := range col.got {
					if a.due > start {
						t.Errorf("element %d (due at +%d ms) moved through a black hole",
							a.i, a.due-t0)
					}
				}
				col.mu.Unlock()
				p.Blackhole(false)
			} else {
				for k := 0; k < 12; k++ {
					p.Reset()
					time.Sleep(150 * time.Millisecond)
				}
			}
			healed := dqWallMs()
			if !col.waitCount(n, 15*time.Second) {
				t.Fatalf("%d of %d elements arrived", col.count(), n)
			}
			time.Sleep(300 * time.Millisecond) // a second copy would show now
			by := col.check(n)
			last := int64(0)
			for _, a := range by {
				if a.at > last {
					last = a.at
				}
			}
			t.Logf("%s: offered at +0, healed at +%d ms, all %d arrived by +%d ms",
				fault, healed-t0, n, last-t0)
			// promptly: the next poll (1 s) after it healed, and a margin
			if last > healed+3000*dqScale() {
				t.Fatalf("the last element arrived %d ms after the fault healed", last-healed)
			}
			dqWaitingEmpty(t, r, name)
		})
	}
}

// The mover's connections are killed (CLIENT KILL) while elements wait
// whose messages it never heard: it subscribes again and catches up at
// once (not at its next one-second poll), round after round, and then
// hears messages again.
func TestGridDelayedQueueFaultsResubscribe(t *testing.T) {
	r := newRedis(t)
	cname := "dqmover" + strconv.FormatInt(dqWallMs(), 36)
	c := connect(t, hilock.WithClientName(cname))
	name := uniqueName(t)
	ch := "redisson_delay_queue_channel:{" + name + "}"
	col := dqCollect(t, name)
	d, err := c.DelayedQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dqWaitNumsub(t, r, ch, 1, 10*time.Second)
	const rounds, per = 4, 5
	idx := 0
	for round := 0; round < rounds; round++ {
		// due, with no message: only a transfer that looks moves them
		for k := 0; k < per; k++ {
			dqRawAdd(t, r, name, dqValue(idx, dqWallMs()-1), dqWallMs()-1, false)
			idx++
		}
		killConns(t, r, cname)
		killed := dqWallMs()
		// the subscription made anew
		dqWaitNumsub(t, r, ch, 1, 10*time.Second)
		if !col.waitCount(idx, 10*time.Second) {
			t.Fatalf("round %d: %d of %d elements arrived", round, col.count(), idx)
		}
		took := dqWallMs() - killed
		t.Logf("round %d: caught up %d ms after the kill", round, took)
		// at once: a poll would come up to 1 s later
		if took > 400*dqScale() {
			t.Fatalf("round %d: the elements arrived %d ms after the kill: no catch-up "+
				"when the subscription came back", round, took)
		}
		// let the next round's kill fall anywhere in the poll's second
		time.Sleep(time.Duration(130*(round+1)) * time.Millisecond)
	}
	// and it hears messages again: an offer from elsewhere (a Redisson
	// process's, with its PUBLISH) moves at its due time
	due := dqWallMs() + 300
	dqRawAdd(t, r, name, dqValue(idx, due), due, true)
	idx++
	if !col.waitCount(idx, 10*time.Second) {
		t.Fatalf("%d of %d elements arrived", col.count(), idx)
	}
	time.Sleep(300 * time.Millisecond)
	by := col.check(idx)
	if late := by[idx-1].at - due; late > 400*dqScale() {
		t.Fatalf("the published element arrived %d ms after its due time", late)
	}
	dqWaitingEmpty(t, r, name)
}

// Two clients move the same delayed queue (both hear every message, both
// poll) while both offer into it: each element arrives exactly once, none
// early.
func TestGridDelayedQueueTwoMovers(t *testing.T) {
	ctx := context.Background()
	r := newRedis(t)
	a, b := connect(t), connect(t)
	name := uniqueName(t)
	col := dqCollect(t, name)
	da, err := a.DelayedQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	defer da.Close()
	db, err := b.DelayedQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dqWaitNumsub(t, r, "redisson_delay_queue_channel:{"+name+"}", 2, 10*time.Second)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w, d := range []*hilock.DelayedQueue{da, db} {
		wg.Add(1)
		go func(w int, d *hilock.DelayedQueue) {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				delay := time.Duration((i*7)%400) * time.Millisecond
				due := dqWallMs() + delay.Milliseconds()
				if err := d.Offer(ctx, []byte(dqValue(i, due)), delay); err != nil {
					errs <- err
					return
				}
			}
		}(w, d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !col.waitCount(n, 20*time.Second) {
		t.Fatalf("%d of %d elements arrived", col.count(), n)
	}
	time.Sleep(500 * time.Millisecond) // a second copy would show now
	col.check(n)
	dqWaitingEmpty(t, r, name)
}
