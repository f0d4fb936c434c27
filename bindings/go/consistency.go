package hilock

import (
	"context"
	"time"
)

// The spellings of the meanings every binding shares (docs/consistency.md
// has the table for C, Python, Lua and Go).
const (
	// Watchdog as a lock's lease: no fixed lease; the watchdog renews the
	// lock while it is held, so it ends when released or when its holder
	// stops (C -1, Python and Lua: no lease given).
	Watchdog time.Duration = -1
	// NoLease as an ExpirableSemaphore permit's lease: none; only a release
	// gives the permit back (C -1, Python None, Lua nil).
	NoLease time.Duration = -1
	// Forever as a wait: as long as it takes (and ctx allows) (C -1,
	// Python None, Lua nil).
	Forever time.Duration = -1
	// NoExpiry is the TTL Mutex.TTL reports (with ok true) for a lock that
	// exists without an expiry (C -1, Python math.inf, Lua math.huge).
	NoExpiry time.Duration = -1
)

// lockLeaseMs converts a lock's lease: Watchdog (and the deprecated 0) is
// -1 for C; a positive lease is rounded up to whole milliseconds.
func lockLeaseMs(op string, lease time.Duration) (int64, error) {
	switch {
	case lease == Watchdog || lease == 0:
		return -1, nil
	case lease < 0:
		return 0, invalid(op, "negative lease (use hilock.Watchdog for none)")
	}
	return durationMs(lease), nil
}

// outageError is an acquire's wait that ctx's deadline ended while Redis
// never answered: the library's connection error, which also matches
// context.DeadlineExceeded (the deadline is what ended the wait).
type outageError struct{ err error }

func (e *outageError) Error() string { return e.err.Error() }
func (e *outageError) Unwrap() error { return e.err }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *outageError) Is(target error) bool { return target == context.DeadlineExceeded }

// outageErr is r's error, as an outageError when it is a connection error
// of a wait that ctx's deadline set.
func outageErr(r opResult, byDeadline bool) error {
	if byDeadline && r.status == statusConnect {
		return &outageError{r.err}
	}
	return r.err
}

// Do runs fn holding the lock: it acquires it (as LockContext), calls fn
// with a context that is cancelled if the hold is lost (see
// [Mutex.Context]), and releases it. This is the Go spelling of a scope
// whose end reports a lost hold, as Python's with and Lua's <close> do:
// when the hold was lost before fn returned, Do returns an error matching
// [ErrLost] (with fn's own error, if any, in its message); otherwise fn's
// error, or the release's.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	lctx, cancel := m.Context(ctx)
	ferr := fn(lctx)
	cancel()
	rerr := m.Release()
	switch {
	case rerr == nil:
		return ferr
	case ferr == nil:
		return rerr
	}
	return &scopeError{release: rerr, fn: ferr}
}

// scopeError: the release's error (what Is and Unwrap see) after fn's.
type scopeError struct{ release, fn error }

func (e *scopeError) Error() string {
	return e.release.Error() + " (and the function returned: " + e.fn.Error() + ")"
}
func (e *scopeError) Unwrap() error { return e.release }
