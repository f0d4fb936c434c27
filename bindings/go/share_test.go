package hilock_test

// Goroutines sharing one Mutex (RWMutex, MultiLock) value exclude each
// other as with sync.Mutex (sync.RWMutex), although the Redis owner is the
// same for all of them. The overlap tests use only Lock, TryLock and
// Unlock, the calls any code taking a sync.Locker makes.

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

// overlapCheck records the critical sections of several goroutines: each
// enter and leave takes the next number of one sequence, so two sections
// overlap exactly when one enters between the other's enter and leave.
type overlapCheck struct {
	seq    int64
	inside int32
	mu     sync.Mutex
	spans  [][2]int64
	plain  int // written inside the sections only: the race detector's witness
}

func (o *overlapCheck) enter() int64 {
	n := atomic.AddInt64(&o.seq, 1)
	atomic.AddInt32(&o.inside, 1)
	o.plain++ // unsynchronised but for the lock
	return n
}

func (o *overlapCheck) leave(in int64) {
	atomic.AddInt32(&o.inside, -1)
	out := atomic.AddInt64(&o.seq, 1)
	o.mu.Lock()
	o.spans = append(o.spans, [2]int64{in, out})
	o.mu.Unlock()
}

// overlaps is how many sections began before the one before them ended.
func (o *overlapCheck) overlaps() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	sort.Slice(o.spans, func(i, j int) bool { return o.spans[i][0] < o.spans[j][0] })
	n := 0
	end := int64(0)
	for _, s := range o.spans {
		if s[0] < end {
			n++
		}
		if s[1] > end {
			end = s[1]
		}
	}
	return n
}

// N goroutines share one Mutex (through Lock, LockContext, TryLock and a
// sync.Locker): no two are ever inside together, and while one is inside,
// Redis has the owner's hold count at 1 (no goroutine re-entered).
func TestSharedMutexExcludesGoroutines(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	m := c.Mutex(name)
	var locker sync.Locker = m
	const goroutines, iters = 8, 12
	var o overlapCheck
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rc, err := dialResp(redisAddr)
			if err != nil {
				errc <- err
				return
			}
			defer rc.close()
			for i := 0; i < iters; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				switch (g + i) % 4 {
				case 0:
					m.Lock()
				case 1:
					locker.Lock()
				case 2:
					err = m.LockContext(ctx)
				default:
					var ok bool
					ok, err = m.TryLock(ctx, 30*time.Second, 0)
					if err == nil && !ok {
						err = errors.New("TryLock timed out")
					}
				}
				cancel()
				if err != nil {
					errc <- err
					return
				}
				in := o.enter()
				v, herr := rc.do("HGET", name, m.Owner())
				time.Sleep(time.Millisecond)
				o.leave(in)
				if herr == nil {
					if b, ok := v.([]byte); !ok || string(b) != "1" {
						herr = errors.New("hold count in Redis " + strconv.Quote(string(b)) +
							" inside the lock, want 1")
					}
				}
				if g%2 == 0 {
					m.Unlock()
				} else {
					locker.Unlock()
				}
				if herr != nil {
					errc <- herr
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if n := o.overlaps(); n != 0 {
		t.Fatalf("%d critical sections of goroutines sharing one Mutex overlapped", n)
	}
	if o.plain != goroutines*iters {
		t.Fatalf("%d sections counted, want %d", o.plain, goroutines*iters)
	}
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the lock is left held after balanced Lock/Unlock pairs")
	}
}

// Goroutines sharing one RWMutex: readers may be inside together, a writer
// always alone.
func TestSharedRWMutexWriterAlone(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	name := uniqueName(t)
	rw := c.RWMutex(name)
	const goroutines, iters = 6, 10
	var mu sync.Mutex
	var readers, writers, bad, together int
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rl := rw.RLocker()
			for i := 0; i < iters; i++ {
				writing := (g+i)%3 == 0
				if writing {
					rw.Lock()
				} else {
					rl.Lock()
				}
				mu.Lock()
				if writing {
					writers++
				} else {
					readers++
				}
				if writers > 1 || (writers > 0 && readers > 0) {
					bad++
				}
				if readers > 1 {
					together++
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				if writing {
					writers--
				} else {
					readers--
				}
				mu.Unlock()
				if writing {
					rw.Unlock()
				} else {
					rl.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	if bad != 0 {
		t.Fatalf("%d times a writer of a shared RWMutex was not alone", bad)
	}
	t.Logf("readers were inside together %d times", together)
	if r.int("EXISTS", name) != 0 {
		t.Fatal("the lock is left in Redis")
	}
}

// Goroutines sharing MultiLocks (over the same members, in both orders)
// and the members themselves exclude each other, and never deadlock.
func TestSharedMultiLockExcludes(t *testing.T) {
	c := connect(t)
	r := newRedis(t)
	a, b := uniqueName(t), uniqueName(t)
	ma, mb := c.Mutex(a), c.Mutex(b)
	ml1, ml2 := hilock.NewMultiLock(ma, mb), hilock.NewMultiLock(mb, ma)
	ctx := context.Background()

	ml1.Lock()
	if ok, err := ma.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("a member's TryLock while the MultiLock holds it = %v, %v", ok, err)
	}
	if ok, err := ml1.TryLock(ctx, 100*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("a second TryLock of the held MultiLock = %v, %v", ok, err)
	}
	if ok, err := ml2.TryLock(ctx, 0, 0); ok || err != nil {
		t.Fatalf("another MultiLock over the same members = %v, %v", ok, err)
	}
	if v, _ := r.str("HGET", a, ma.Owner()); v != "1" {
		t.Fatalf("member's hold count %q, want 1", v)
	}
	ml1.Unlock()
	if ok, err := ma.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("the member after the MultiLock's release = %v, %v", ok, err)
	}
	ma.Unlock()

	var o overlapCheck
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var l sync.Locker = ml1
			switch g % 3 {
			case 1:
				l = ml2
			case 2:
				l = ma
			}
			for i := 0; i < 8; i++ {
				l.Lock()
				in := o.enter()
				time.Sleep(time.Millisecond)
				o.leave(in)
				l.Unlock()
			}
		}(g)
	}
	wg.Wait()
	if n := o.overlaps(); n != 0 {
		t.Fatalf("%d critical sections over shared MultiLocks overlapped", n)
	}
	if r.int("EXISTS", a) != 0 || r.int("EXISTS", b) != 0 {
		t.Fatal("a member is left held")
	}
}
