package hilock

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// The lock kinds. Every kind is a [Mutex] (libhilock has one handle type
// for all of them, chosen at creation); the kinds with calls of their own
// wrap one: [FencedMutex] and [RWMutex].

// lockKind is a Mutex's kind (HL_LOCK_*) and a spin lock's back-off
// (backoffInitialMs 0: the library's default).
type lockKind struct {
	kind              int
	backoffInitialMs  int64
	backoffMaxMs      int64
	backoffMultiplier int
}

// A MutexOption configures a Mutex made by [Client.Mutex],
// [Client.FairMutex] or [Client.SpinMutex]. An option that does not apply
// to the kind makes every method of the Mutex return an error matching
// ErrInvalid that says so.
type MutexOption func(*mutexConfig)

type mutexConfig struct {
	nonReentrant bool
	backoff      bool
	initial, max time.Duration
	multiplier   int
}

// NonReentrant makes the Mutex non-reentrant (Redisson's
// getNonReentrantLock, the same keys): [Mutex.Reenter] fails at once with
// an error matching [ErrDeadlock] instead of re-entering. Lock of a held
// Mutex waits for its release, as for every Mutex. For [Client.Mutex] and
// [Client.FairMutex].
func NonReentrant() MutexOption {
	return func(c *mutexConfig) { c.nonReentrant = true }
}

// WithBackoff sets the pause of a spin lock ([Client.SpinMutex]) between
// attempts: initial, multiplied by multiplier (plus a few milliseconds of
// jitter) after each failed attempt, up to max; rounded up to whole
// milliseconds. The default is Redisson's: 1 ms doubling up to 128 ms.
// WithBackoff(10*time.Millisecond, 10*time.Millisecond, 1) is a constant
// back-off.
func WithBackoff(initial, max time.Duration, multiplier int) MutexOption {
	return func(c *mutexConfig) {
		c.backoff = true
		c.initial, c.max, c.multiplier = initial, max, multiplier
	}
}

// newMutex makes a Mutex of the given kind; what is wrong with the name or
// the options is reported by its methods.
func (c *Client) newMutex(maker string, kind int, name string, opts []MutexOption) *Mutex {
	m := &Mutex{c: c, name: []byte(name), owner: newOwnerID(), kind: lockKind{kind: kind},
		g: newGate()}
	var cfg mutexConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case len(name) == 0:
		m.err = invalid("mutex", "empty lock name")
	case len(name) > maxNameLen:
		m.err = invalid("mutex", "lock name longer than 65536 bytes")
	case cfg.nonReentrant && kind == kindReentrant:
		m.kind.kind = kindNonReentrant
	case cfg.nonReentrant && kind == kindFair:
		m.kind.kind = kindFairNonReentrant
	case cfg.nonReentrant:
		m.err = invalid("mutex", maker+": NonReentrant is for Mutex and FairMutex; a "+
			kindName(kind)+" lock has no non-reentrant form")
	}
	if m.err == nil && cfg.backoff {
		initial, max := durationMs(cfg.initial), durationMs(cfg.max)
		switch {
		case kind != kindSpin:
			m.err = invalid("mutex", maker+": WithBackoff is for SpinMutex; this is a "+
				kindName(kind)+" lock")
		case initial < 1 || max < initial || max > 1<<40:
			m.err = invalid("mutex", "WithBackoff: use 0 < initial <= max")
		case cfg.multiplier < 1 || cfg.multiplier > 1000:
			m.err = invalid("mutex", "WithBackoff: multiplier "+strconv.Itoa(cfg.multiplier)+
				": use 1 to 1000")
		default:
			m.kind.backoffInitialMs, m.kind.backoffMaxMs = initial, max
			m.kind.backoffMultiplier = cfg.multiplier
		}
	}
	return m
}

// Kind names the Mutex's lock kind: "reentrant", "nonreentrant", "fair",
// "fair-nonreentrant", "read", "write", "spin" or "fenced".
func (m *Mutex) Kind() string { return kindName(m.kind.kind) }

// FairMutex returns a fair lock called name (Redisson's RFairLock): waiters
// get it in the order they asked, across goroutines and processes, through
// a queue kept in Redis; even a TryLock with no wait never jumps the queue.
// A waiter that dies leaves the queue [WithFairWaitTimeout] after its turn
// came. The queue's deadlines are wall-clock times: keep the clocks of the
// machines in step (NTP). With [NonReentrant], a non-reentrant fair lock.
func (c *Client) FairMutex(name string, opts ...MutexOption) *Mutex {
	return c.newMutex("FairMutex", kindFair, name, opts)
}

// SpinMutex returns a spin lock called name (Redisson's RSpinLock): the
// reentrant lock's keys, so it excludes [Client.Mutex] of the same name,
// but a waiter tries again after a back-off ([WithBackoff]) instead of
// waiting for a pub/sub message, for deployments where pub/sub is
// unavailable or costly.
func (c *Client) SpinMutex(name string, opts ...MutexOption) *Mutex {
	return c.newMutex("SpinMutex", kindSpin, name, opts)
}

// A FencedMutex is a fenced lock (Redisson's RFencedLock): a reentrant
// [Mutex] whose every acquisition, re-entries ([Mutex.Reenter]) too, takes
// the next number of a counter kept in Redis (strictly increasing, never
// reset). Pass the
// [FencedMutex.Token] to the resource the lock guards, which refuses a
// token older than one it has seen: a holder paused past its lease (GC, a
// stopped process, a slow network) can then do no harm.
//
//	f := c.FencedMutex("ledger")
//	if err := f.LockContext(ctx); err != nil {
//		return err
//	}
//	defer f.Unlock()
//	token, err := f.Token()
type FencedMutex struct {
	*Mutex
}

// FencedMutex returns a fenced lock called name; see [FencedMutex].
func (c *Client) FencedMutex(name string) *FencedMutex {
	return &FencedMutex{c.newMutex("FencedMutex", kindFenced, name, nil)}
}

// Token is the token of this FencedMutex's current hold (that of its last
// acquisition). Local: no round trip. It returns an error matching
// ErrNotHeld when the FencedMutex holds nothing, and ErrLost when its hold
// was lost (its token fences nothing any more).
func (f *FencedMutex) Token() (int64, error) {
	if f == nil || f.Mutex == nil {
		return 0, invalid("token", "a FencedMutex must come from Client.FencedMutex")
	}
	r := f.query(opToken, "token")
	return r.value, r.err
}

// LastToken is the last token given out for the name by anyone, 0 if none
// yet (one round trip).
func (f *FencedMutex) LastToken() (int64, error) {
	if f == nil || f.Mutex == nil {
		return 0, invalid("last token", "a FencedMutex must come from Client.FencedMutex")
	}
	r := f.query(opLastToken, "last token")
	return r.value, r.err
}

// An RWMutex is a read-write lock (Redisson's RReadWriteLock), shaped like
// sync.RWMutex: its read half is held by any number of owners together
// while nobody writes, its write half by one owner while nobody else reads.
//
// The embedded [Mutex] is the write half (Lock, Unlock, LockContext,
// TryLock, Release, Lost...); RLock, RUnlock and RLockContext take the read
// half, which [RWMutex.RLocker] returns as a sync.Locker and
// [RWMutex.Reader] as a *Mutex (for TryLock, Release, Lost...).
//
// Both halves belong to one owner in Redis, the RWMutex value, and share
// one local gate that works as a sync.RWMutex: goroutines sharing the
// RWMutex read together (the owner's read hold counts them), a writer is
// alone, and a writer waiting for the readers goes before new ones (so a
// reader must not RLock again while it reads, as with sync.RWMutex).
// Re-entering is explicit ([Mutex.Reenter] on either half): the writer may
// take the read half with rw.Reader().Reenter (and keeps it after releasing
// the write half); re-entering the write half while holding only the read
// half fails with an error matching [ErrDeadlock] (it would wait for
// itself), and Lock then waits for the readers; releasing a half not held
// fails with one matching [ErrNotHeld]. An RWMutex (and a FencedMutex) must
// come from its Client method: the zero value is not usable.
type RWMutex struct {
	*Mutex        // the write half
	read   *Mutex // the read half, same owner
}

var (
	_ sync.Locker = (*RWMutex)(nil)
	_ sync.Locker = (*FencedMutex)(nil)
)

// RWMutex returns a read-write lock called name; see [RWMutex].
func (c *Client) RWMutex(name string) *RWMutex {
	w := c.newMutex("RWMutex", kindWrite, name, nil)
	r := c.newMutex("RWMutex", kindRead, name, nil)
	r.owner = w.owner
	r.g, r.shared = w.g, true // one gate: readers together, a writer alone
	return &RWMutex{Mutex: w, read: r}
}

// RLock takes the read half, waiting as long as it takes (for a writer of
// this RWMutex too); it panics when it cannot (as [Mutex.Lock]).
func (rw *RWMutex) RLock() { rw.read.Lock() }

// RUnlock releases one read hold; it panics, as [Mutex.Unlock], when the
// RWMutex holds no read hold (a writer that never took one included).
func (rw *RWMutex) RUnlock() { rw.read.Unlock() }

// RLockContext takes the read half, waiting until it is held or ctx is
// done (as [Mutex.LockContext]).
func (rw *RWMutex) RLockContext(ctx context.Context) error { return rw.read.LockContext(ctx) }

// RLocker returns the read half as a sync.Locker (RLock and RUnlock).
func (rw *RWMutex) RLocker() sync.Locker { return rw.read }

// Reader returns the read half as a *Mutex: Kind "read".
func (rw *RWMutex) Reader() *Mutex { return rw.read }

// Writer returns the write half (the embedded Mutex): Kind "write".
func (rw *RWMutex) Writer() *Mutex { return rw.Mutex }
