package hilock

import (
	"context"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A MultiLock is several Mutexes taken as one (Redisson's MultiLock and
// RedLock), made by NewMultiLock or NewRedLock. The Mutexes may come from
// different Clients, so the locks may live on independent Redis servers.
// It implements sync.Locker.
//
// NewMultiLock: all of them or none. They are taken in the order given,
// each waiting what is left of the wait; if one cannot be taken, those
// already taken are released again (last first) and nothing is held.
//
// NewRedLock: held once a majority (Quorum) of the Mutexes, each on its own
// server, is. Each member waits at most max(wait/n, 1 ms), so a server that
// is down costs only its share; more servers down than a minority make it
// fail within the wait. The members not taken are not held, and a release
// leaves them alone.
//
// Release gives back what the newest acquisition took, last member first,
// trying every member whatever the others answer. The owner of each member
// is its Mutex, so the members' own methods (IsHeld, Lost, Context) work as
// usual.
//
// Goroutines sharing a MultiLock exclude each other, as with a sync.Mutex:
// an acquisition first passes the local gate of every member (see Mutex),
// in an order common to every MultiLock of the process (so two MultiLocks
// sharing members never deadlock on them), and holds them until its
// release; a member's own Lock waits meanwhile, and the MultiLock waits for
// it. Re-entering is explicit, as for Mutex: [MultiLock.Reenter] grows
// each member's hold count.
//
// Waiting pins no OS thread: an acquisition is a libhilock task of the first
// member's client (each member waited for by a task of its own client),
// and the goroutine blocks on a channel, as for Mutex. A ctx that is done
// cancels it at once: the member being waited for is cancelled, and every
// member already taken is released, last first, before the call returns
// ctx.Err(). Release runs as a task too.
//
// A fixed lease (TryLock) is given to every member as it is taken: the
// hold is valid for lease - the time taking took - drift (1% of the lease
// + 2 ms), see Until, and is not reported held if nothing is left.
//
// Safety of the RedLock: Martin Kleppmann ("How to do distributed locking",
// 2016) showed that a process pause (GC, swap, SIGSTOP) or a server's clock
// jump can end a lease while its holder still acts under it, and nothing
// then stops its late writes. Where correctness matters, use the fenced
// lock kind and check its token where you write.
type MultiLock struct {
	red   bool
	locks []*Mutex
	err   error // bad members, reported by every method

	// Which members each acquisition took: the library keeps each member's
	// hold (count, loss), but a RedLock takes any majority and the C
	// multilock lives for one call, so only this says what a release gives
	// back.
	mu    sync.Mutex
	holds []multiHold // newest last

	// slow (atomic) is set when the fast round failed with an error (a
	// member's server down): with time to wait, acquires go straight to
	// the task's rounds, which take a RedLock's quorum past a dead
	// member, until one of them takes every member again.
	slow int32
}

// multiHold is one acquisition: which members it took, the hold of each
// (the library's epoch: a release gives back that hold, never a newer one
// its Mutex took after that one ended), and until when a fixed lease keeps
// it valid (zero: the watchdog).
type multiHold struct {
	taken  []bool
	epochs []uint64
	until  time.Time
	gated  bool // passed the members' gates (not a Reenter): leaves them at release
}

var _ sync.Locker = (*MultiLock)(nil)

// NewMultiLock returns a lock that takes all of locks or none. Bad input (no
// locks, a nil Mutex, one lock twice: the same Mutex, or two Mutexes of one
// name on one Client) is reported by every method as ErrInvalid.
func NewMultiLock(locks ...*Mutex) *MultiLock { return newMultiLock(false, locks) }

// NewRedLock returns a RedLock over locks, each from its own Client on its
// own independent server; odd counts (3, 5) tolerate (n-1)/2 servers down.
// Bad input as NewMultiLock.
func NewRedLock(locks ...*Mutex) *MultiLock { return newMultiLock(true, locks) }

func newMultiLock(red bool, locks []*Mutex) *MultiLock {
	l := &MultiLock{red: red, locks: append([]*Mutex(nil), locks...)}
	what := "NewMultiLock"
	if red {
		what = "NewRedLock"
	}
	if len(locks) == 0 {
		l.err = invalid("lock", what+": at least one Mutex is needed")
	}
	for i, m := range locks {
		if m == nil {
			l.err = invalid("lock", what+": Mutex "+strconv.Itoa(i)+" is nil")
			break
		}
		if err := m.check(); err != nil {
			l.err = err
			break
		}
		for j := 0; j < i; j++ {
			if locks[j] == m || (locks[j].c == m.c && string(locks[j].name) == string(m.name)) {
				l.err = invalid("lock", what+": Mutexes "+strconv.Itoa(j)+" and "+
					strconv.Itoa(i)+" are the same lock "+quoteName(m.name)+" of one client")
			}
		}
		if l.err != nil {
			break
		}
	}
	return l
}

// Mutexes returns the members, in the order they are taken.
func (l *MultiLock) Mutexes() []*Mutex { return append([]*Mutex(nil), l.locks...) }

// Quorum is how many members must be taken: all of them, or a RedLock's
// len/2+1.
func (l *MultiLock) Quorum() int {
	if l.red {
		return len(l.locks)/2 + 1
	}
	return len(l.locks)
}

// Lock acquires every member (a RedLock: a majority), waiting as long as it
// takes, with the watchdog keeping them alive. It panics if that fails (a
// member's client closed, its Redis unreachable...); use LockContext to get
// an error instead.
func (l *MultiLock) Lock() {
	if err := l.LockContext(context.Background()); err != nil {
		panic(err)
	}
}

// LockContext acquires as Lock does, until held or ctx is done (then
// ctx.Err(), with nothing held). A wait without end runs in rounds of 1.5
// to 3 s per member that give back what they took, so two MultiLocks
// sharing Mutexes in other orders never deadlock.
func (l *MultiLock) LockContext(ctx context.Context) error {
	_, err := l.acquire(ctx, -1, -1, true)
	return err
}

// Reenter takes every member again at once for the goroutine that holds
// the MultiLock (each member's hold count grows; a RedLock needs a
// majority), without waiting at the members' gates: for code that runs
// under the MultiLock and needs it again. The next Release gives back what
// it took. It fails, taking nothing, with an error matching [ErrNotHeld]
// when the MultiLock holds nothing, and with [ErrLost] when the members
// could not all (a RedLock: a majority) be taken again at once.
func (l *MultiLock) Reenter(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	l.mu.Lock()
	n := len(l.holds)
	l.mu.Unlock()
	if n == 0 {
		return &Error{Op: "reenter", Code: statusNotHeld, Name: statusName(statusNotHeld),
			Message: "re-entry of a " + l.kind() + " that holds nothing"}
	}
	ok, err := l.acquire(ctx, 0, -1, false)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Op: "reenter", Code: statusLost, Name: statusName(statusLost),
			Message: "re-entry of a " + l.kind() + ": its members could not be taken again " +
				"at once (a hold was lost)"}
	}
	return nil
}

// gateOrder is the members' indexes in the order their gates are passed.
func (l *MultiLock) gateOrder() []int {
	order := make([]int, len(l.locks))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return l.locks[order[a]].g.id < l.locks[order[b]].g.id
	})
	return order
}

// passGates passes every member's gate within waitMs (as gate.pass); on
// failure none is held. It returns the wait left for Redis.
func (l *MultiLock) passGates(ctx context.Context, waitMs int64) (bool, int64, error) {
	start := time.Now()
	order := l.gateOrder()
	for k, i := range order {
		m := l.locks[i]
		left := waitMs
		if waitMs > 0 {
			if left -= durationMs(time.Since(start)); left <= 0 {
				left = 0
			}
		}
		ok, err := m.g.pass(ctx, m.shared, left, m.c.closing)
		if !ok || err != nil {
			for _, j := range order[:k] {
				l.locks[j].g.leave(l.locks[j].shared)
			}
			return false, 0, err
		}
	}
	if waitMs > 0 {
		if waitMs -= durationMs(time.Since(start)); waitMs < 0 {
			waitMs = 0
		}
	}
	return true, waitMs, nil
}

func (l *MultiLock) leaveGates() {
	for _, m := range l.locks {
		m.g.leave(m.shared)
	}
}

// TryLock tries to acquire, waiting at most wait (0: one attempt per
// member; negative: as long as ctx allows). lease [Watchdog] (or the
// deprecated 0): the watchdog keeps the members alive; a positive lease is
// each member's fixed lifetime (see Until). It returns true when held,
// false when the wait ran out (nothing is then held), and ctx.Err() when
// ctx was done first.
func (l *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	leaseMs, err := lockLeaseMs("lock", lease)
	if err != nil {
		return false, err
	}
	waitMs := int64(-1)
	if wait >= 0 {
		waitMs = durationMs(wait)
	}
	return l.acquire(ctx, waitMs, leaseMs, true)
}

// enter enters every member's client for one call (each once), returning
// a function that leaves them.
func (l *MultiLock) enter(mc *multiCall) (func(), error) {
	seen := make(map[*Client]bool, len(l.locks))
	var entered []*Client
	leave := func() {
		for _, c := range entered {
			c.mu.RUnlock()
		}
	}
	ps := make(map[*Client]*cClient, len(l.locks))
	for i, m := range l.locks {
		if !seen[m.c] {
			seen[m.c] = true
			p, err := m.c.enter()
			if err != nil {
				leave()
				return nil, &Error{Op: "lock", Code: statusClosed, Name: statusName(statusClosed),
					Message: "member " + strconv.Itoa(i) + " (" + quoteName(m.name) + "): the client is closed"}
			}
			entered = append(entered, m.c)
			ps[m.c] = p
		}
		mc.add(ps[m.c], &m.kind, m.name, m.owner)
	}
	return leave, nil
}

// acquire takes the members, after passing their gates when gated (a
// failure leaves them again).
func (l *MultiLock) acquire(ctx context.Context, waitMs, leaseMs int64, gated bool) (bool, error) {
	defer runtime.KeepAlive(l)
	if l.err != nil {
		return false, l.err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, _, err := ctxWait(ctx, waitMs); err != nil {
		return false, err
	}
	if gated {
		ok, left, err := l.passGates(ctx, waitMs)
		if !ok || err != nil {
			return false, err
		}
		waitMs = left
	}
	ok, err := l.acquireRedis(ctx, waitMs, leaseMs, gated)
	if !ok && gated {
		l.leaveGates()
	}
	return ok, err
}

func (l *MultiLock) acquireRedis(ctx context.Context, waitMs, leaseMs int64, gated bool) (bool, error) {
	waitMs, byDeadline, err := ctxWait(ctx, waitMs)
	if err != nil {
		return false, err
	}
	mc := newMultiCall(l.red, len(l.locks))
	leave, err := l.enter(mc)
	if err != nil {
		return false, err
	}
	c0 := l.locks[0].c
	if (waitMs == 0 || atomic.LoadInt32(&l.slow) == 0) && c0.tryFast() {
		// One round without waiting, as a blocking call on this thread:
		// an uncontended acquire crosses no thread (its round trips are
		// bounded by the command timeout). The task below only when a
		// member is held elsewhere, or the round failed with time left.
		// With time to wait, that round takes every member or none: a
		// RedLock's member held elsewhere gets its share of the wait
		// (the task's), and a quorum without it is not taken early.
		began := time.Now()
		r := mc.call(0, 0, leaseMs, waitMs != 0)
		c0.fastDone()
		if r.flag || waitMs == 0 {
			leave()
			return l.acquired(ctx, mc, r, byDeadline, gated)
		}
		if r.err != nil {
			atomic.StoreInt32(&l.slow, 1)
		}
		if waitMs > 0 {
			if waitMs -= time.Since(began).Milliseconds(); waitMs < 0 {
				waitMs = 0
			}
		}
	}
	// The wait is a task of the first member's client (each member waited
	// for by a task of its own): this goroutine blocks on a channel, not
	// an OS thread in C. ctx.Done() cancels it, and the library gives back
	// whatever it had taken before the task completes.
	t, ch, h, r0 := c0.startTask(mc.ps[0], func(data uint64) (*cTask, opResult) {
		return mc.start(0, waitMs, leaseMs, data)
	})
	leave()
	if r0.err != nil {
		return false, r0.err
	}
	d := c0.await(t, ch, h, ctx.Done())
	mc.take()
	r := d.result("lock")
	if r.flag && atomic.LoadInt32(&l.slow) != 0 {
		all := true
		for _, m := range mc.members {
			all = all && m != 0
		}
		if all {
			atomic.StoreInt32(&l.slow, 0)
		}
	}
	return l.acquired(ctx, mc, r, byDeadline, gated)
}

// acquired ends an acquire whose outcome is r (its members in mc): the
// hold recorded when taken, else the error or "not acquired" the caller
// gets.
func (l *MultiLock) acquired(ctx context.Context, mc *multiCall, r opResult, byDeadline,
	gated bool) (bool, error) {
	if r.err != nil {
		if r.status == statusInterrupted && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, r.err
	}
	if !r.flag {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if byDeadline {
			return false, context.DeadlineExceeded
		}
		return false, nil
	}
	h0 := multiHold{taken: make([]bool, len(l.locks)), epochs: make([]uint64, len(l.locks)),
		gated: gated}
	if mc.valid >= 0 {
		h0.until = time.Now().Add(time.Duration(mc.valid) * time.Millisecond)
	}
	for i, m := range l.locks {
		if mc.members[i] != 0 {
			h0.taken[i] = true
			h0.epochs[i] = m.held(mc.wasLost[i] != 0)
		}
	}
	l.mu.Lock()
	l.holds = append(l.holds, h0)
	l.mu.Unlock()
	return true, nil
}

// Until is when the newest hold's fixed lease stops being valid (see
// TryLock); the zero Time for a hold kept by the watchdog, or no hold.
func (l *MultiLock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.holds) == 0 {
		return time.Time{}
	}
	return l.holds[len(l.holds)-1].until
}

// Unlock releases the newest hold, for sync.Locker and defer. It panics on
// misuse, as sync.Mutex does: a MultiLock that holds nothing (the panic
// value matches ErrNotHeld) or bad members (ErrInvalid). Other failures
// go to Logger, as Mutex.Unlock's do; use Release to get them.
func (l *MultiLock) Unlock() {
	if l.err != nil {
		panic(l.err)
	}
	l.mu.Lock()
	n := len(l.holds)
	l.mu.Unlock()
	if n == 0 {
		panic(l.notHeld())
	}
	if err := l.Release(); err != nil {
		if log := Logger; log != nil {
			log(&UnlockError{Name: l.label(), Err: err})
		}
	}
}

// retaken is member i's error when its Mutex holds a newer hold than the
// one the MultiLock took.
func (l *MultiLock) retaken(i int) error {
	return &Error{Op: "unlock", Code: statusLost, Name: statusName(statusLost),
		Message: l.kind() + " member " + strconv.Itoa(i) + " (" + quoteName(l.locks[i].name) +
			"): lost while held: the hold it took ended, and its Mutex has locked it again since " +
			"(a newer hold, left as it is)"}
}

func (l *MultiLock) notHeld() error {
	return &Error{Op: "unlock", Code: statusNotHeld, Name: statusName(statusNotHeld),
		Message: "unlock of a " + l.kind() + " that holds nothing"}
}

func (l *MultiLock) kind() string {
	if l.red {
		return "RedLock"
	}
	return "MultiLock"
}

func (l *MultiLock) label() string {
	s := l.kind() + "("
	for i, m := range l.locks {
		if i > 0 {
			s += ", "
		}
		s += string(m.name)
	}
	return s + ")"
}

// Release releases what the newest acquisition took, last member first,
// trying every member. It returns the first member's error (matching
// ErrNotHeld, ErrLost, ErrInDoubt, ErrClosed...; the message names the
// member); a RedLock returns an error only when fewer than a quorum of
// members were released. A member whose hold was lost (or released through
// its Mutex) while the MultiLock held it, and that its Mutex has locked
// again since, is in a newer hold: that one is left as it is (its count,
// renewal and Lost channel), and the member counts as lost (ErrLost). A
// MultiLock that holds nothing returns an error matching ErrNotHeld
// without a round trip.
func (l *MultiLock) Release() error {
	defer runtime.KeepAlive(l)
	if l.err != nil {
		return l.err
	}
	l.mu.Lock()
	if len(l.holds) == 0 {
		l.mu.Unlock()
		return l.notHeld()
	}
	h := l.holds[len(l.holds)-1]
	l.holds = l.holds[:len(l.holds)-1]
	l.mu.Unlock()
	if h.gated {
		// After the release reached Redis, whatever it answered.
		defer l.leaveGates()
	}

	mc := newMultiCall(l.red, len(l.locks))
	for i, t := range h.taken {
		if t {
			mc.release(i, h.epochs[i])
		}
	}
	leave, err := l.enter(mc)
	if err != nil {
		// A member's client is closed (nothing renews that member any
		// more): release the members one by one, last first.
		released := 0
		var first error
		for i := len(l.locks) - 1; i >= 0; i-- {
			if !h.taken[i] {
				continue
			}
			if st, serr := l.locks[i].state(); serr == nil && st.epoch != 0 &&
				h.epochs[i] != 0 && st.epoch != h.epochs[i] {
				// a newer hold than this one's: left as it is
				if first == nil {
					first = l.retaken(i)
				}
				continue
			}
			if rerr := l.locks[i].Release(); rerr == nil {
				released++
			} else if first == nil {
				first = rerr
			}
		}
		if l.red && released >= l.Quorum() {
			return nil
		}
		return first
	}
	c0 := l.locks[0].c
	var r opResult
	if c0.tryFast() {
		// Few goroutines in the library: the round trips on this thread.
		r = mc.call(1, -1, -1, false)
		c0.fastDone()
		leave()
	} else {
		// The round trips run on an executor of the first member's
		// client, and this goroutine pins no thread meanwhile.
		t, ch, th, r0 := c0.startTask(mc.ps[0], func(data uint64) (*cTask, opResult) {
			return mc.start(1, -1, -1, data)
		})
		leave()
		if r0.err != nil {
			return r0.err
		}
		d := c0.await(t, ch, th, nil) // a release runs to its end
		mc.take()
		r = d.result("unlock")
	}
	for i, m := range l.locks {
		if h.taken[i] {
			m.released(int(mc.status[i]), h.epochs[i])
		}
	}
	return r.err
}
