package hilock

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// A Semaphore is a distributed counting semaphore (Redisson's RSemaphore,
// the same key and channel, so Java services share it): a number of
// permits in Redis that any process may take and give back.
//
// Its Acquire, TryAcquire and Release have the signatures and meaning of
// golang.org/x/sync/semaphore's *Weighted, so code written against an
// interface of those three methods takes either:
//
//	type weighted interface {
//		Acquire(ctx context.Context, n int64) error
//		TryAcquire(n int64) bool
//		Release(n int64)
//	}
//
// The differences: the permits are counted in Redis, not fixed at
// creation (set them once with [Semaphore.TrySetPermits], or change them
// with SetPermits and AddPermits), and the calls make round trips.
//
// Permits have no owner in Redis. The [Client] counts the permits it took
// (or drained) of each semaphore and has not given back, whatever
// Semaphore value took them: any Semaphore of the same name on the same
// Client may give them back, and giving back more than the Client holds is
// refused (Release panics, ReleaseErr returns [ErrNotHeld]) and changes
// nothing, because permits given back twice would let one holder too many
// in. Permits are not renewed and have no lease: a process that dies
// holding some leaves them taken until someone adds permits (see
// [Client.ExpirableSemaphore] for permits that expire).
//
// A Semaphore is cheap (c.Semaphore(name) does not touch Redis) and safe
// for concurrent use.
type Semaphore struct {
	c    *Client
	name []byte
	err  error // a bad name, reported by every method
}

// Semaphore returns the semaphore called name (1 to 65536 bytes, any byte
// values), Redisson's RSemaphore. It does not touch Redis: a semaphore
// that was never set has 0 permits. A bad name or a closed client is
// reported by the Semaphore's methods.
func (c *Client) Semaphore(name string) *Semaphore {
	return &Semaphore{c: c, name: []byte(name), err: checkName("semaphore", "semaphore", name)}
}

// Name is the semaphore's name (the Redis key of its permits).
func (s *Semaphore) Name() string { return string(s.name) }

func (s *Semaphore) check() error {
	if s.c == nil {
		return invalid("semaphore", "a Semaphore must come from Client.Semaphore")
	}
	return s.err
}

// Acquire takes n permits, waiting as long as it takes or until ctx is
// done; then it returns ctx.Err() (context.Canceled or
// context.DeadlineExceeded) and has taken nothing, even when the cancel
// met permits being taken (they are given back first). Waiters of one
// Client queue first come, first served; a release anywhere (a Java
// service's too) wakes the first, through a pub/sub message, never by
// polling. The waiting goroutine pins no OS thread. n = 0 succeeds at once.
// Errors: [ErrInvalid] (n < 0 or above 2^40), [ErrClosed], a Redis failure.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	ok, err := s.acquire(ctx, "acquire", n, -1)
	if err == nil && !ok {
		err = notAcquired("acquire")
	}
	return err
}

// TryAcquire takes n permits if they are available now, without waiting,
// and reports whether it did, as x/sync's TryAcquire: it also fails while
// other goroutines of this Client wait for permits of this semaphore (they
// came first). It makes one round trip. A failure (a closed Client, Redis
// unreachable, n < 0) counts as not acquired; use TryAcquireContext(ctx, n,
// 0) to see it.
func (s *Semaphore) TryAcquire(n int64) bool {
	ok, err := s.acquire(context.Background(), "acquire", n, 0)
	return ok && err == nil
}

// TryAcquireContext takes n permits, waiting at most wait (0: one attempt;
// negative: as long as ctx allows) and no longer than ctx allows. It
// returns true when they were taken, false when the wait ran out (with
// context.DeadlineExceeded when ctx's deadline ended it), and ctx.Err()
// when ctx was done first; nothing is taken unless it returns true.
func (s *Semaphore) TryAcquireContext(ctx context.Context, n int64, wait time.Duration) (bool, error) {
	return s.acquire(ctx, "acquire", n, waitMsOf(wait))
}

func (s *Semaphore) acquire(ctx context.Context, op string, n, waitMs int64) (bool, error) {
	defer runtime.KeepAlive(s)
	if err := s.check(); err != nil {
		return false, err
	}
	if n == 0 { // as Redisson and x/sync: at once (no round trip)
		r := s.c.call(func(p *cClient) opResult { return callSem(p, semTryAcquire, op, s.name, 0) })
		return r.flag, r.err
	}
	return s.c.syncWait(ctx, op, waitMs,
		func(p *cClient) opResult { return callSem(p, semTryAcquire, op, s.name, n) },
		func(p *cClient, waitMs int64, data uint64) (*cTask, opResult) {
			return startSemTask(p, s.name, n, waitMs, data)
		})
}

// Release gives n permits back, for `defer s.Release(n)` and code written
// for x/sync's semaphore.
//
// Like x/sync's Release, it panics on misuse: giving back more permits than
// this Client holds of the semaphore (the panic value matches
// [ErrNotHeld]; nothing is given back), n < 0, or a Semaphore with a bad
// name or not made by Client.Semaphore ([ErrInvalid]). Everything else
// that can go wrong is not the caller's mistake and does not panic: the
// client was closed ([ErrClosed]) or Redis failed. Such an error is passed
// to [Logger] as a *[ReleaseError]; the permits still count as this
// Client's unless the release was sent and never confirmed ([ErrInDoubt]).
// Use ReleaseErr to get the error instead.
func (s *Semaphore) Release(n int64) {
	err := s.ReleaseErr(n)
	if err == nil {
		return
	}
	if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrInvalid) {
		panic(err)
	}
	if log := Logger; log != nil {
		log(&ReleaseError{Name: string(s.name), Permits: n, Err: err})
	}
}

// ReleaseErr gives n permits back (0: nothing) and wakes the waiters, in
// every process, that they let in. It returns an error matching
// [ErrNotHeld] when this Client holds fewer than n permits of the
// semaphore (nothing is given back), [ErrInvalid] for n < 0, [ErrClosed],
// [ErrInDoubt] when the release was sent and Redis never confirmed it (it
// ran at most once; the permits no longer count as this Client's, so a
// second release cannot give them back twice), or another Redis failure
// (nothing was sent: the permits still count as this Client's). To change
// how many permits exist, use AddPermits.
func (s *Semaphore) ReleaseErr(n int64) error {
	defer runtime.KeepAlive(s)
	if err := s.check(); err != nil {
		return err
	}
	return s.c.call(func(p *cClient) opResult { return callSem(p, semRelease, "release", s.name, n) }).err
}

// TrySetPermits sets the number of permits to n (n >= 0) if the semaphore
// does not exist yet, and reports whether it did (Redisson's
// trySetPermits): the way to create a semaphore of n once, whichever
// process comes first.
func (s *Semaphore) TrySetPermits(n int64) (bool, error) {
	r := s.op(semTrySet, "try set permits", n)
	return r.flag, r.err
}

// SetPermits sets the number of available permits to n (n >= 0), whatever
// it was, and wakes waiters that it lets in.
func (s *Semaphore) SetPermits(n int64) error {
	return s.op(semSet, "set permits", n).err
}

// AddPermits adds delta permits (negative to take some away: the count may
// go below zero, and then nobody acquires until enough are given back) and
// returns the available permits after. Unlike Release, it is not checked
// against what this Client holds.
func (s *Semaphore) AddPermits(delta int64) (int64, error) {
	r := s.op(semAdd, "add permits", delta)
	return r.value, r.err
}

// AvailablePermits is the number of permits available now (0 for a
// semaphore that was never set; negative after AddPermits took away more
// than were available).
func (s *Semaphore) AvailablePermits() (int64, error) {
	r := s.op(semAvailable, "available permits", 0)
	return r.value, r.err
}

// DrainPermits takes every available permit and returns how many. They
// count as this Client's, to be given back with Release.
func (s *Semaphore) DrainPermits() (int64, error) {
	r := s.op(semDrain, "drain permits", 0)
	return r.value, r.err
}

// HeldPermits is how many permits of the semaphore this Client holds:
// taken or drained, and not given back (counted by the Client, no round
// trip).
func (s *Semaphore) HeldPermits() (int64, error) {
	r := s.op(semHeld, "held permits", 0)
	return r.value, r.err
}

// Delete deletes the semaphore and reports whether it existed. Waiters
// keep waiting (for permits to be set again); the permits this Client
// counts as held are not forgotten.
func (s *Semaphore) Delete() (bool, error) {
	r := s.op(semDelete, "delete", 0)
	return r.flag, r.err
}

func (s *Semaphore) op(op semOp, opName string, n int64) opResult {
	defer runtime.KeepAlive(s)
	if err := s.check(); err != nil {
		return opResult{err: err}
	}
	return s.c.call(func(p *cClient) opResult { return callSem(p, op, opName, s.name, n) })
}
