package hilock

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// An ExpirableSemaphore is a distributed semaphore whose permits expire
// (Redisson's RPermitExpirableSemaphore, the same keys, so Java services
// share it). Each permit taken has an id (32 lowercase hex characters)
// and a lease: it goes back to the semaphore when its holder releases it
// by id, or when its lease ends, whichever comes first. So a holder that
// dies gives its permits back when their leases end, never later.
//
// Leases are wall-clock times in Redis: keep the clocks of the machines in
// step (NTP). A lease of [NoLease] means none: only a release gives the
// permit back. A lease of 0 is refused ([ErrInvalid]): it used to mean
// none, which a Mutex's 0 (the watchdog: freed when the holder dies) made
// easy to mistake for a safe default (see docs/MIGRATING.md). An ExpirableSemaphore is cheap (it does not touch Redis) and safe
// for concurrent use; a permit may be released through any
// ExpirableSemaphore of the same name, on any client, in any process.
type ExpirableSemaphore struct {
	c    *Client
	name []byte
	err  error // a bad name, reported by every method
}

// maxExpirablePermits is how many permits one acquire may take.
const maxExpirablePermits = 1000

// ExpirableSemaphore returns the permit-expirable semaphore called name (1
// to 65536 bytes, any byte values). It does not touch Redis: a semaphore
// that was never set has 0 permits. A bad name or a closed client is
// reported by its methods.
func (c *Client) ExpirableSemaphore(name string) *ExpirableSemaphore {
	return &ExpirableSemaphore{c: c, name: []byte(name),
		err: checkName("semaphore", "semaphore", name)}
}

// Name is the semaphore's name (the Redis key of its available permits).
func (s *ExpirableSemaphore) Name() string { return string(s.name) }

func (s *ExpirableSemaphore) check() error {
	if s.c == nil {
		return invalid("semaphore", "an ExpirableSemaphore must come from Client.ExpirableSemaphore")
	}
	return s.err
}

// leaseMsOf converts a permit's lease: NoLease is none (-1); 0 and other
// negative leases are refused.
func leaseMsOf(op string, lease time.Duration) (int64, error) {
	switch {
	case lease == 0:
		return 0, invalid(op, "lease 0: use hilock.NoLease for a permit "+
			"without a lease (only a release gives it back), or a positive lease")
	case lease < 0 && lease != NoLease:
		return 0, invalid(op, "negative lease (use hilock.NoLease for none)")
	case lease == NoLease:
		return -1, nil
	}
	return durationMs(lease), nil
}

// Acquire takes one permit with the given lease (0: none; rounded up to
// whole milliseconds), waiting until one is available or ctx is done, and
// returns its id. A wait sleeps until a release (a pub/sub message) or the
// end of the nearest lease, never polling, and pins no OS thread. When ctx
// is done first it returns ctx.Err() and has taken nothing.
func (s *ExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	ids, err := s.AcquireN(ctx, 1, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AcquireN takes n permits (1 to 1000) together, each with the given lease,
// as Acquire does, and returns their ids.
func (s *ExpirableSemaphore) AcquireN(ctx context.Context, n int, lease time.Duration) ([]string, error) {
	ids, err := s.acquire(ctx, n, -1, lease)
	if err == nil && ids == nil {
		err = notAcquired("acquire")
	}
	return ids, err
}

// TryAcquire takes one permit with the given lease (0: none), waiting at
// most wait (0: one attempt; negative: as long as ctx allows) and no longer
// than ctx allows. It returns the permit's id, or "" when the wait ran out
// (with context.DeadlineExceeded when ctx's deadline ended it); ctx.Err()
// when ctx was done first. Nothing is taken unless it returns an id.
func (s *ExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, error) {
	ids, err := s.TryAcquireN(ctx, 1, wait, lease)
	if len(ids) == 0 {
		return "", err
	}
	return ids[0], err
}

// TryAcquireN takes n permits (1 to 1000) together, as TryAcquire takes
// one: their ids, or nil when the wait ran out.
func (s *ExpirableSemaphore) TryAcquireN(ctx context.Context, n int, wait, lease time.Duration) ([]string, error) {
	return s.acquire(ctx, n, waitMsOf(wait), lease)
}

func (s *ExpirableSemaphore) acquire(ctx context.Context, n int, waitMs int64,
	lease time.Duration) ([]string, error) {
	defer runtime.KeepAlive(s)
	const op = "acquire"
	if err := s.check(); err != nil {
		return nil, err
	}
	if n < 1 || n > maxExpirablePermits {
		return nil, invalid(op, "permits = "+strconv.Itoa(n)+": use 1 to 1000")
	}
	leaseMs, err := leaseMsOf(op, lease)
	if err != nil {
		return nil, err
	}
	// The library writes the ids into the buffer during the call that
	// tries or starts; the attempt and the task have one each.
	size := n * (permitIDLen + 1)
	var got []byte
	ok, err := s.c.syncWait(ctx, op, waitMs,
		func(p *cClient) opResult {
			got = make([]byte, size)
			return callExpsemAcquire(p, s.name, got, n, leaseMs)
		},
		func(p *cClient, waitMs int64, data uint64) (*cTask, opResult) {
			got = make([]byte, size)
			return startExpsemTask(p, s.name, got, n, waitMs, leaseMs, data)
		})
	if err != nil || !ok {
		return nil, err
	}
	ids := make([]string, n)
	for i := range ids {
		at := i * (permitIDLen + 1)
		ids[i] = string(got[at : at+permitIDLen])
	}
	return ids, nil
}

// cID is a permit id as C takes it, NUL-terminated; an id with a NUL byte
// in it is refused (C would read only its start).
func cID(op, id string) ([]byte, error) {
	if strings.IndexByte(id, 0) >= 0 {
		return nil, invalid(op, "permit id contains a NUL byte")
	}
	b := make([]byte, len(id)+1)
	copy(b, id)
	return b, nil
}

// Release gives back the permit id. It returns an error matching
// [ErrNotHeld] when no such permit is out (released already, or never
// acquired), [ErrLost] when its lease had ended (it had gone back to the
// semaphore by itself, and someone else may have had it since),
// [ErrInDoubt] when the release was sent and never confirmed (it may or
// may not be back; releasing it again is safe), and [ErrInvalid] for an id
// that is not hex.
func (s *ExpirableSemaphore) Release(id string) error {
	return s.idOp(xsRelease, "release", id, 0).err
}

// UpdateLease gives the permit id a new lease from now (0: none). It
// returns an error matching [ErrNotHeld] when the permit is not out
// (released, or its lease ended).
func (s *ExpirableSemaphore) UpdateLease(id string, lease time.Duration) error {
	leaseMs, err := leaseMsOf("update lease", lease)
	if err != nil {
		return err
	}
	return s.idOp(xsUpdateLease, "update lease", id, leaseMs).err
}

// LeaseTime is how long the permit id's lease has left, or -1 (a negative
// duration) when it has none. It returns an error matching [ErrNotHeld]
// when the permit is not out.
func (s *ExpirableSemaphore) LeaseTime(id string) (time.Duration, error) {
	r := s.idOp(xsLeaseTime, "lease time", id, 0)
	if r.err != nil {
		return 0, r.err
	}
	if r.value < 0 {
		return -1, nil
	}
	return time.Duration(r.value) * time.Millisecond, nil
}

func (s *ExpirableSemaphore) idOp(op xsOp, opName, id string, n int64) opResult {
	defer runtime.KeepAlive(s)
	if err := s.check(); err != nil {
		return opResult{err: err}
	}
	b, err := cID(opName, id)
	if err != nil {
		return opResult{err: err}
	}
	return s.c.call(func(p *cClient) opResult { return callExpsem(p, op, opName, s.name, b, n) })
}

// AvailablePermits is the number of permits available now (permits whose
// lease ended count as available: every call gives them back first).
func (s *ExpirableSemaphore) AvailablePermits() (int64, error) {
	r := s.op(xsAvailable, "available permits", 0)
	return r.value, r.err
}

// Permits is the number of permits in all: available and out.
func (s *ExpirableSemaphore) Permits() (int64, error) {
	r := s.op(xsPermits, "permits", 0)
	return r.value, r.err
}

// AcquiredPermits is the number of permits out (acquired, lease not ended).
func (s *ExpirableSemaphore) AcquiredPermits() (int64, error) {
	r := s.op(xsAcquired, "acquired permits", 0)
	return r.value, r.err
}

// TrySetPermits sets the number of permits to n (n >= 0) if the semaphore
// does not exist yet, and reports whether it did.
func (s *ExpirableSemaphore) TrySetPermits(n int64) (bool, error) {
	r := s.op(xsTrySet, "try set permits", n)
	return r.flag, r.err
}

// SetPermits sets the number of permits in all (available and out) to n
// (n >= 0): the available permits become n minus those out.
func (s *ExpirableSemaphore) SetPermits(n int64) error {
	return s.op(xsSet, "set permits", n).err
}

// AddPermits adds delta to the available permits (negative to take some
// away) and returns the available permits after.
func (s *ExpirableSemaphore) AddPermits(delta int64) (int64, error) {
	r := s.op(xsAdd, "add permits", delta)
	return r.value, r.err
}

// Delete deletes the semaphore (its permits and the permits out) and
// reports whether it existed.
func (s *ExpirableSemaphore) Delete() (bool, error) {
	r := s.op(xsDelete, "delete", 0)
	return r.flag, r.err
}

func (s *ExpirableSemaphore) op(op xsOp, opName string, n int64) opResult {
	defer runtime.KeepAlive(s)
	if err := s.check(); err != nil {
		return opResult{err: err}
	}
	return s.c.call(func(p *cClient) opResult { return callExpsem(p, op, opName, s.name, nil, n) })
}
