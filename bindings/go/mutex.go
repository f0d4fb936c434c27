package hilock

import (
	"context"
	"log"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A Mutex is a distributed lock (Redisson's RLock) seen by one owner: the
// Mutex value itself. It implements sync.Locker. See the package
// documentation for ownership, reentrancy and lost locks.
//
// A Mutex is safe for concurrent use, and goroutines sharing one exclude
// each other as with a sync.Mutex: a Lock waits while another Lock of the
// same Mutex holds it (a local gate, passed before Redis is asked), whoever
// calls it. Re-entering is explicit: [Mutex.Reenter].
type Mutex struct {
	c      *Client
	name   []byte
	owner  uint64
	kind   lockKind // the lock kind and a spin lock's back-off
	err    error    // a bad name or option, reported by every method
	g      *gate    // the local gate (shared by an RWMutex's halves)
	shared bool     // this Mutex passes g as a reader (an RWMutex's read half)

	// The library keeps this owner's hold (its count, lost state and
	// epoch: see state); the Mutex keeps only the hold it last saw begin,
	// for what the library cannot give: its Lost channel, and, once the
	// library has forgotten a hold whose lease ran out (or after Close),
	// whether this Mutex had locked (a loss, logged by Unlock) or not
	// (misuse, a panic).
	mu    sync.Mutex
	cur   *hold // the current (or most recent) hold; nil before the first
	local int   // holds taken through this Mutex's gate (Lock, Reenter...) not yet released
}

var _ sync.Locker = (*Mutex)(nil)

// check reports a Mutex that cannot be used: a bad name, or a zero Mutex
// not made by Client.Mutex.
func (m *Mutex) check() error {
	if m.c == nil {
		return invalid("mutex", "a Mutex must come from Client.Mutex")
	}
	return m.err
}

// Name is the lock's name (the Redis key).
func (m *Mutex) Name() string { return string(m.name) }

// Owner is the owner string this Mutex writes into the lock's hash in
// Redis: "<client id>:<owner id>".
func (m *Mutex) Owner() string {
	if m.c == nil {
		return ""
	}
	return m.c.id + ":" + strconv.FormatUint(m.owner, 10)
}

// Lock acquires the lock, waiting as long as it takes (first for the other
// goroutines holding this Mutex, then for Redis), with the watchdog keeping
// it alive. Like sync.Mutex's, a Lock by the goroutine that holds the
// Mutex waits for itself: re-enter with [Mutex.Reenter]. It panics if the lock cannot be acquired (client
// closed, Redis unreachable...); use LockContext to get an error instead.
func (m *Mutex) Lock() {
	if err := m.LockContext(context.Background()); err != nil {
		panic(err)
	}
}

// Unlock releases one hold, for sync.Locker and `defer m.Unlock()`.
//
// Any goroutine may unlock, as with sync.Mutex; the Mutex's gate opens to
// the next waiting goroutine once the release has reached Redis (or failed).
//
// It panics only on misuse, as sync.Mutex does: unlocking a Mutex that does
// not hold the lock (never locked it, or released every hold already; the
// panic value matches ErrNotHeld), or a Mutex not made by Client.Mutex or
// with a bad name (ErrInvalid). Nothing is sent to Redis then.
//
// Everything else that can go wrong is not the caller's mistake and does not
// panic: the hold was lost (ErrLost; the Lost channel is closed), the
// client was closed (ErrClosed), Redis did not confirm the release
// (ErrInDoubt) or failed otherwise. Such an error is passed to Logger, and
// the Mutex's hold count changes as Release would change it. Use Release to
// get the error instead.
func (m *Mutex) Unlock() {
	if err := m.check(); err != nil {
		panic(err)
	}
	if !m.holding() {
		panic(&Error{Op: "unlock", Code: statusNotHeld, Name: statusName(statusNotHeld),
			Message: "unlock of a Mutex that does not hold " + quoteName(m.name)})
	}
	if err := m.Release(); err != nil {
		if log := Logger; log != nil {
			log(&UnlockError{Name: string(m.name), Err: err})
		}
	}
}

// holding reports whether Unlock has a hold to give back: a hold taken
// through this Mutex's gate is not released yet (whatever became of it in
// Redis), the library says this owner holds the lock (or held it and lost
// it), or this Mutex took a hold that none of its releases has ended (a
// lease that ran out, or a closed client, whose library no longer knows it).
func (m *Mutex) holding() bool {
	m.mu.Lock()
	local := m.local
	m.mu.Unlock()
	if local > 0 {
		return true
	}
	if st, err := m.state(); err == nil && (st.count > 0 || st.lost) {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur != nil && !m.cur.ended
}

// state is what the library knows of this Mutex's hold (no round trip).
func (m *Mutex) state() (holdState, error) {
	p, err := m.c.enter()
	if err != nil {
		return holdState{}, err
	}
	st, err := callHoldState(p, &m.kind, m.name, m.owner)
	m.c.mu.RUnlock()
	return st, err
}

// Logger receives the errors that Unlock cannot return (see Mutex.Unlock):
// an *UnlockError, which names the lock and wraps the cause, so
// errors.Is(err, ErrLost) and the like work; and those of Semaphore.Release,
// a *ReleaseError. It runs on the goroutine that
// called Unlock. The default writes the error with the standard library's
// log package (log.Print); set Logger to nil to drop such errors, or to
// your own function (log/slog, a metrics counter...). Set it before the
// program uses hilock: it is read without synchronization.
var Logger func(err error) = func(err error) { log.Print(err) }

// UnlockError is what Unlock passes to Logger when a release fails.
type UnlockError struct {
	Name string // the lock's name
	Err  error  // the release's error (an *Error, ErrClosed...)
}

func (e *UnlockError) Error() string {
	return "hilock: Unlock of " + quoteName([]byte(e.Name)) + ": " + e.Err.Error()
}

// Unwrap returns the release's error.
func (e *UnlockError) Unwrap() error { return e.Err }

// quoteName quotes a lock name for a message, shortened if it is long.
func quoteName(name []byte) string {
	const max = 200
	if len(name) > max {
		return strconv.Quote(string(name[:max])) + "..."
	}
	return strconv.Quote(string(name))
}

// LockContext acquires the lock, waiting until it is held or ctx is done,
// with the watchdog keeping it alive. If ctx is done first it returns
// ctx.Err() (context.Canceled or context.DeadlineExceeded) promptly, with
// nothing held. While another goroutine holds this Mutex it waits for that
// hold's release, as sync.Mutex does (the caller's own hold included:
// re-enter with [Mutex.Reenter]).
func (m *Mutex) LockContext(ctx context.Context) error {
	_, err := m.acquire(ctx, -1, -1)
	return err
}

// TryLock tries to acquire the lock, waiting at most wait (0: one attempt;
// negative: as long as ctx allows) and no longer than ctx allows. The wait
// covers the wait for the other goroutines holding this Mutex too: with
// wait 0 a Mutex held by any goroutine of this process gives false at once,
// as sync.Mutex's TryLock.
// lease [Watchdog] means the watchdog keeps the lock alive while it is
// held; a positive lease is a fixed lifetime after which Redis frees the
// lock (rounded up to whole milliseconds; not renewed: if the lock is still
// held when the lease ends, the hold is lost and Lost is closed then). A
// lease of 0 is a deprecated spelling of Watchdog (kept for compatibility;
// see docs/consistency.md); any other negative lease is refused
// ([ErrInvalid]). It returns true when the lock is held, false when the
// wait ran out (someone else holds it), and ctx.Err() when ctx was done
// first. A wait during which Redis never answered is an error matching
// [ErrConnect] (and context.DeadlineExceeded too when ctx's deadline ended
// it), not false.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	leaseMs, err := lockLeaseMs("lock", lease)
	if err != nil {
		return false, err
	}
	waitMs := int64(-1)
	if wait >= 0 {
		waitMs = durationMs(wait)
	}
	return m.acquire(ctx, waitMs, leaseMs)
}

// acquire passes the Mutex's gate, then takes the lock in Redis (both
// within the wait); a failure gives the gate's unit back.
func (m *Mutex) acquire(ctx context.Context, waitMs, leaseMs int64) (bool, error) {
	defer runtime.KeepAlive(m)
	if err := m.check(); err != nil {
		return false, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, _, err := ctxWait(ctx, waitMs); err != nil {
		return false, err
	}
	if atomic.LoadInt32(&m.c.closed) != 0 {
		return false, ErrClosed
	}
	start := time.Now()
	if ok, err := m.g.pass(ctx, m.shared, waitMs, m.c.closing); !ok || err != nil {
		return false, err
	}
	if waitMs > 0 {
		if waitMs -= durationMs(time.Since(start)); waitMs < 0 {
			waitMs = 0 // the gate used the whole wait: one attempt
		}
	}
	ok, err := m.lockRedis(ctx, waitMs, leaseMs)
	if !ok {
		m.g.leave(m.shared)
		return false, err
	}
	m.mu.Lock()
	m.local++
	m.mu.Unlock()
	return true, nil
}

// Reenter takes one more hold of the lock for the goroutine that holds
// this Mutex, at once: Redisson's re-entry of its reentrant RLock (the
// owner's hold count in Redis grows by one; each hold is given back by its
// own Unlock or Release, and the lock is free when the count reaches
// zero). It does not wait at the Mutex's gate, so it is for code that runs
// under the lock and needs it again; it is not a way for another goroutine
// to share the hold. The hold it adds is kept by the watchdog, as Lock's.
//
// It fails, taking nothing, with an error matching [ErrNotHeld] when this
// Mutex is not locked, [ErrLost] when its hold was lost (a lost hold cannot
// be re-entered), and [ErrDeadlock] for a [NonReentrant] lock or the write
// half of an [RWMutex] that holds only the read half. The read half of an
// RWMutex may be re-entered by its writer: the writer then keeps reading
// after it releases the write half (Redisson's downgrade).
func (m *Mutex) Reenter(ctx context.Context) error {
	defer runtime.KeepAlive(m)
	if err := m.check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !m.g.reenter(m.shared) {
		if !m.shared && m.g.held(true) {
			return &Error{Op: "reenter", Code: statusDeadlock, Name: statusName(statusDeadlock),
				Message: "re-entry of the write half of " + quoteName(m.name) +
					": this RWMutex holds only the read half (the write half would wait for itself)"}
		}
		return &Error{Op: "reenter", Code: statusNotHeld, Name: statusName(statusNotHeld),
			Message: "re-entry of a Mutex that does not hold " + quoteName(m.name)}
	}
	err := m.reenterRedis(ctx)
	if err != nil {
		m.g.leave(m.shared)
		return err
	}
	m.mu.Lock()
	m.local++
	m.mu.Unlock()
	return nil
}

// reenterRedis adds a hold in Redis for Reenter: one attempt, refused when
// the library knows the hold was lost.
func (m *Mutex) reenterRedis(ctx context.Context) error {
	lostErr := func(why string) error {
		return &Error{Op: "reenter", Code: statusLost, Name: statusName(statusLost),
			Message: "re-entry of " + quoteName(m.name) + ": " + why}
	}
	st, err := m.state()
	if err != nil {
		return err
	}
	m.mu.Lock()
	forgotten := st.count == 0 && m.cur != nil && !m.cur.ended && m.local > 0
	m.mu.Unlock()
	if st.lost || forgotten {
		return lostErr("the hold was lost while held")
	}
	ok, err := m.lockRedis(ctx, 0, -1)
	if err != nil {
		return err
	}
	if !ok {
		return lostErr("another owner holds the lock: this Mutex's hold was lost")
	}
	return nil
}

// lockRedis takes the lock in Redis for this Mutex's owner.
func (m *Mutex) lockRedis(ctx context.Context, waitMs, leaseMs int64) (bool, error) {
	waitMs, byDeadline, err := ctxWait(ctx, waitMs)
	if err != nil {
		return false, err
	}
	p, err := m.c.enter()
	if err != nil {
		return false, err
	}
	// The fast path: one attempt on this goroutine's thread, when few
	// goroutines of this client are in such a call. It takes a free lock in
	// one round trip, and answers "not acquired" without one when others
	// of this client queue for the lock.
	var r opResult
	tried := false
	start := time.Now()
	if m.c.tryFast() {
		r = callAcquire(p, &m.kind, m.name, m.owner, 0, leaseMs, nil)
		m.c.fastDone()
		tried = true
	}
	wasLost := r.wasLost
	if tried && waitMs > 0 {
		waitMs -= durationMs(time.Since(start))
		if waitMs <= 0 {
			waitMs = 0 // the attempt used the whole wait
		}
	}
	// A wait goes on as a task (and so does the attempt itself when no
	// fast slot was free): this goroutine blocks on a channel, not an OS
	// thread in C. An outage met by the fast attempt is ridden out there.
	outage := r.status == statusIO || r.status == statusConnect
	if !tried || (waitMs != 0 && !r.flag && (r.err == nil || outage)) {
		t, ch, h, r0 := m.c.startTask(p, func(data uint64) (*cTask, opResult) {
			return startAcquireTask(p, &m.kind, m.name, m.owner, waitMs, leaseMs, data)
		})
		m.c.mu.RUnlock()
		if r0.err != nil {
			return false, r0.err
		}
		d := m.c.awaitWait(ctx, byDeadline, t, ch, h)
		r = d.result("lock")
		r.wasLost = wasLost || r0.wasLost
		return m.acquired(ctx, r, byDeadline, leaseMs)
	}
	m.c.mu.RUnlock()
	return m.acquired(ctx, r, byDeadline, leaseMs)
}

// acquired turns an acquire's result into acquire's return values.
func (m *Mutex) acquired(ctx context.Context, r opResult, byDeadline bool, leaseMs int64) (bool, error) {
	if r.err != nil {
		if r.status == statusInterrupted && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, outageErr(r, byDeadline)
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
	m.held(r.wasLost)
	return true, nil
}

// ctxWait bounds a wait (ms, -1: forever) by ctx's deadline: the wait to
// use, and whether the deadline set it. ctx done already: its error.
func ctxWait(ctx context.Context, waitMs int64) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if dl, ok := ctx.Deadline(); ok {
		rem := durationMs(time.Until(dl))
		if rem <= 0 {
			return 0, false, context.DeadlineExceeded
		}
		if waitMs < 0 || rem < waitMs {
			return rem, true, nil
		}
	}
	return waitMs, false, nil
}

// held follows a successful acquire: a hold the library began (a new
// epoch) becomes the current one. wasLost: the library had found this
// owner's previous hold lost. It returns the hold's epoch (0: unknown).
func (m *Mutex) held(wasLost bool) uint64 {
	st, err := m.state()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		return 0
	}
	m.adoptLocked(st, wasLost)
	return st.epoch
}

// adoptLocked makes the library's hold st the current one if it is not
// already (m.mu held): the hold seen before ends (its Lost channel closed
// if it was lost, left open if it ended otherwise).
func (m *Mutex) adoptLocked(st holdState, wasLost bool) {
	if st.epoch == 0 || (m.cur != nil && m.cur.epoch == st.epoch) {
		return
	}
	if m.cur != nil && !m.cur.ended {
		if wasLost {
			m.cur.markLost()
		}
		m.endHoldLocked()
	}
	m.cur = newHold(st.epoch, st.leaseMs < 0)
	// Safety net: a Mutex collected while it holds stops being renewed.
	runtime.SetFinalizer(m, (*Mutex).finalize)
}

// endHoldLocked ends the current hold for this Mutex (m.mu held). Its Lost
// channel stays as it is: closed if it was lost, open forever if released.
func (m *Mutex) endHoldLocked() {
	m.cur.ended = true
	m.c.unwatch(m.cur)
	runtime.SetFinalizer(m, nil)
}

// Release releases one hold. When the hold count reaches zero the lock is
// deleted and one waiter (in any process) is woken. It returns an error
// matching ErrNotHeld if this Mutex does not hold the lock (the lock is
// left untouched), ErrLost if the hold had been lost (the watchdog found it
// gone, it could not be renewed in time, or its lease ran out: then there
// is no round trip; it matches ErrNotHeld too), ErrInDoubt if Redis did not
// confirm the release (the hold is no longer renewed and its lease ends
// it), ErrClosed after Close. Whatever it returns, a hold taken through
// this Mutex's gate is given back to it when Release returns.
func (m *Mutex) Release() error {
	defer runtime.KeepAlive(m)
	if err := m.check(); err != nil {
		return err
	}
	m.mu.Lock()
	gated := m.local > 0
	if gated {
		m.local--
	}
	m.mu.Unlock()
	if gated {
		// After the release reached Redis: the next goroutine's acquire
		// must not meet this hold.
		defer m.g.leave(m.shared)
	}
	p, err := m.c.enter()
	if err != nil {
		return err
	}
	var r opResult
	if m.c.tryFast() {
		r = callLock(p, opRelease, "unlock", &m.kind, m.name, m.owner)
		m.c.fastDone()
		m.c.mu.RUnlock()
	} else {
		// Many goroutines are in the library: the round trip runs on its
		// executor, and this goroutine pins no thread meanwhile.
		t, ch, h, r0 := m.c.startTask(p, func(data uint64) (*cTask, opResult) {
			return startReleaseTask(p, &m.kind, m.name, m.owner, data)
		})
		m.c.mu.RUnlock()
		if r0.err != nil {
			r = r0
		} else {
			d := m.c.await(t, ch, h, nil)
			r = d.result("unlock")
		}
	}
	m.released(r.status, 0)
	return r.err
}

// released follows a release (status: its outcome) of the hold epoch (0:
// the current one): the current hold ends when the library has it no more
// (released to zero, not held, lost, or in doubt: no longer renewed). A
// release of an older hold that was lost (a MultiLock's) leaves a newer one
// as it is. After Close the library cannot say: the hold stays, and the
// next Unlock reports ErrClosed.
func (m *Mutex) released(status int, epoch uint64) {
	st, err := m.state()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil || m.cur.ended || err != nil {
		return
	}
	if status == statusLost && (epoch == 0 || epoch == m.cur.epoch) {
		m.cur.markLost()
	}
	if st.epoch != m.cur.epoch || (st.count == 0 && !st.lost) {
		m.endHoldLocked()
	}
}

// Lost returns a channel that is closed when the watchdog finds this
// Mutex's hold lost: the key vanished or another owner took it, or Redis
// stayed unreachable until the lease ended, or a fixed lease (TryLock)
// ended while the lock was still held. It is also closed by
// Client.Close, which stops renewal. The channel belongs to the current
// hold (or the most recent one): a new hold, taken after the Mutex was fully
// released, after a loss or after its lease ran out, gets a new channel (the
// library tells holds apart), and a channel of a hold released normally is
// never closed. Lost returns nil (a channel that never fires) before the
// first hold.
func (m *Mutex) Lost() <-chan struct{} {
	st, err := m.state()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		// A hold begun through another handle of this owner (a MultiLock).
		m.adoptLocked(st, false)
	}
	h := m.cur
	if h == nil {
		return nil
	}
	if h.ended || h.done != nil || h.isLost() {
		return h.lost
	}
	switch {
	case err != nil:
		// Closed: nothing renews the hold any more.
		h.markLost()
	case st.epoch != h.epoch:
		// Ended under this Mutex (released elsewhere, or forgotten).
	case st.lost:
		h.markLost()
	case st.count > 0:
		m.watchLocked()
	}
	return h.lost
}

// watchLocked starts watching the current hold for loss (m.mu held): the
// library's lost fd, duplicated, parked in Go's poller.
func (m *Mutex) watchLocked() {
	p, err := m.c.enter()
	if err != nil {
		// Closed: nothing renews the hold any more.
		m.cur.markLost()
		return
	}
	r := callLock(p, opLostFd, "lost", &m.kind, m.name, m.owner)
	m.c.mu.RUnlock()
	if r.err == nil && r.value >= 0 {
		m.c.watch(m.cur, int(r.value)) // takes the fd
	}
}

// Context returns a copy of parent that is cancelled when this Mutex's
// current hold is lost (see Lost), so work done under the lock can stop
// when the lock no longer protects it. Its Err is then context.Canceled
// and its cause is ErrLost: Cause(ctx) returns ErrLost (and so does
// context.Cause with Go 1.20 or newer), also for contexts derived from it.
// A cancelled parent or cancel gives the parent's cause or
// context.Canceled instead. Call cancel when the work is done: it ends the
// goroutine that watches the hold. Without a hold only parent and cancel
// end it.
func (m *Mutex) Context(parent context.Context) (context.Context, context.CancelFunc) {
	lost := m.Lost()
	ctx, cancel := withCancelCause(parent)
	if lost != nil {
		go func() {
			select {
			case <-lost:
				cancel(ErrLost)
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(nil) }
}

// HoldCount is this Mutex's hold count as Redis has it (0 if it does not
// hold the lock).
func (m *Mutex) HoldCount() (int64, error) {
	r := m.query(opHoldCount, "hold count")
	return r.value, r.err
}

// IsLocked reports whether anyone holds the lock.
func (m *Mutex) IsLocked() (bool, error) {
	r := m.query(opIsLocked, "is locked")
	return r.flag, r.err
}

// IsHeld reports whether this Mutex holds the lock.
func (m *Mutex) IsHeld() (bool, error) {
	r := m.query(opIsHeld, "is held")
	return r.flag, r.err
}

// TTL is the lock's remaining time to live. ok is false if the lock is
// free; a lock without expiry (not written by hilock or Redisson) reports
// ttl -1 with ok true.
func (m *Mutex) TTL() (ttl time.Duration, ok bool, err error) {
	r := m.query(opTTL, "ttl")
	if r.err != nil {
		return 0, false, r.err
	}
	switch {
	case r.value == -2:
		return 0, false, nil
	case r.value < 0:
		return -1, true, nil
	}
	return time.Duration(r.value) * time.Millisecond, true, nil
}

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It
// reports whether the lock was held.
func (m *Mutex) ForceUnlock() (bool, error) {
	r := m.query(opForceUnlock, "force unlock")
	return r.flag, r.err
}

func (m *Mutex) query(op lockOp, name string) opResult {
	defer runtime.KeepAlive(m)
	if err := m.check(); err != nil {
		return opResult{err: err}
	}
	p, err := m.c.enter()
	if err != nil {
		return opResult{err: err}
	}
	r := callLock(p, op, name, &m.kind, m.name, m.owner)
	m.c.mu.RUnlock()
	return r
}

// finalize runs when a Mutex whose hold had not ended is garbage collected:
// the owner is gone (nobody else can use its owner id), so stop renewing
// whatever the library still holds for it (its lease then runs out)
// instead of keeping the lock forever.
func (m *Mutex) finalize() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, err := m.c.enter(); err == nil {
		callLock(p, opAbandon, "abandon", &m.kind, m.name, m.owner)
		m.c.mu.RUnlock()
	}
	if m.cur != nil && !m.cur.ended {
		m.endHoldLocked()
	}
}
