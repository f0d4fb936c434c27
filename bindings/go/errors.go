package hilock

import "errors"

// Sentinel errors. Errors returned by this package match them with
// errors.Is; the concrete value is usually an *Error with the library's
// detail.
var (
	// ErrInvalid: a bad argument (empty or too long name, negative lease or
	// option, malformed URL).
	ErrInvalid = errors.New("hilock: invalid argument")
	// ErrTimeout: the library gave up waiting (for example for a
	// subscription or a reply). A wait that simply ran out is not an
	// error: TryLock returns false.
	ErrTimeout = errors.New("hilock: timed out")
	// ErrNotHeld: the Mutex releases a lock it does not hold (never took
	// it, released it already, its lease ran out, or it was lost: every
	// error matching ErrLost matches ErrNotHeld too). The lock is untouched.
	// Also: a Semaphore gives back more permits than its Client holds, or
	// an ExpirableSemaphore's permit is not out (released already, or never
	// acquired); nothing changes.
	ErrNotHeld = errors.New("hilock: lock not held by this owner")
	// ErrLost: the watchdog had found the hold lost (the key vanished,
	// another owner took it, or Redis stayed unreachable until the lease
	// ended); there was nothing left to release. It is also the Cause of a
	// Mutex.Context cancelled by a loss, and what ExpirableSemaphore.Release
	// returns for a permit whose lease had ended (it had gone back by
	// itself, and someone else may have had it since). A lost hold is not
	// held any more, so an error matching ErrLost matches ErrNotHeld too
	// (errors.Is(ErrLost, ErrNotHeld) is true): code that checks for
	// ErrNotHeld sees every loss, and ErrLost tells a loss apart.
	ErrLost error = &lostError{"hilock: lock was lost while held"}
	// ErrClosed: the Client is closed.
	ErrClosed = errors.New("hilock: client is closed")
	// ErrForked: the client was created in another process.
	ErrForked = errors.New("hilock: client was created in another process")
	// ErrConnect: Redis could not be reached (refused, unreachable, timed
	// out while connecting, or a unix socket that is not there). Also an
	// acquire whose wait ended without Redis answering any attempt: an
	// outage is not contention, which is a plain false (see
	// docs/consistency.md).
	ErrConnect = errors.New("hilock: cannot connect to Redis")
	// ErrAuth: Redis refused the credentials of the URL (AUTH failed).
	ErrAuth = errors.New("hilock: Redis refused the credentials")
	// ErrInDoubt: Redis did not confirm a change that was sent (it stayed
	// unreachable, or the reply was lost and could not be resent in time),
	// so it may or may not have happened. A lock's hold is no longer
	// renewed, so its lease ends it (the message says within how long at
	// the latest); a semaphore's permits no longer count as the Client's;
	// a latch's count-down may or may not have counted.
	ErrInDoubt = errors.New("hilock: outcome unknown, Redis did not confirm it")
	// ErrDeadlock: the acquire would wait for its own caller, so it fails
	// at once and takes nothing: Mutex.Reenter of a non-reentrant Mutex
	// (NonReentrant), or of the write half of an RWMutex that holds only
	// the read half. (Lock of a held Mutex waits instead, as sync.Mutex's.)
	ErrDeadlock = errors.New("hilock: would wait for itself: the owner holds it already")
)

// lostError is ErrLost's type: a loss is also "not held".
type lostError struct{ msg string }

func (e *lostError) Error() string { return e.msg }

// Is makes errors.Is(ErrLost, ErrNotHeld) true.
func (e *lostError) Is(target error) bool { return target == ErrNotHeld }

// Error is a failure reported by libhilock.
type Error struct {
	Op      string // the operation: "connect", "lock", "unlock", ...
	Code    int    // the negative libhilock status (HL_E...)
	Name    string // the status name, for example "HL_ENOTHELD"
	Message string // the library's detail for this failure
}

func (e *Error) Error() string {
	return "hilock: " + e.Op + ": " + e.Message + " (" + e.Name + ")"
}

// Is makes errors.Is(err, ErrNotHeld) and the like work for library
// failures.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case statusInvalid:
		return target == ErrInvalid
	case statusTimedOut:
		return target == ErrTimeout
	case statusNotHeld:
		return target == ErrNotHeld
	case statusLost:
		return target == ErrLost || target == ErrNotHeld
	case statusClosed:
		return target == ErrClosed
	case statusForked:
		return target == ErrForked
	case statusConnect:
		return target == ErrConnect
	case statusAuth:
		return target == ErrAuth
	case statusInDoubt:
		return target == ErrInDoubt
	case statusDeadlock:
		return target == ErrDeadlock
	}
	return false
}

func invalid(op, msg string) error {
	return &Error{Op: op, Code: statusInvalid, Name: statusName(statusInvalid), Message: msg}
}
