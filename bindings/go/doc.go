// Package hilock provides Redisson-compatible distributed locks on Redis,
// over the libhilock C library (cgo).
//
//	c, err := hilock.Connect(ctx, "redis://127.0.0.1:6379/0",
//		hilock.WithWatchdogTimeout(30*time.Second))
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//
//	m := c.Mutex("orders:42")
//	if err := m.LockContext(ctx); err != nil {
//		return err // ctx.Err(), hilock.ErrClosed, a Redis failure...
//	}
//	defer m.Unlock()
//
// A lock taken by a hilock program excludes Java services using Redisson's
// RLock on the same name, and the other way round: keys, owner strings,
// channels and messages are Redisson's.
//
// # Ownership follows the Mutex value, and a shared Mutex excludes
//
// Redisson ties a lock to the Java thread that took it. Goroutines move
// between OS threads, so here a lock belongs to the [Mutex] value that took
// it, never to a goroutine or an OS thread:
//
//   - Each Mutex returned by [Client.Mutex] is its own owner, with an owner id
//     unique in the process (the hash field in Redis is
//     "<client id>:<owner id>", see [Mutex.Owner]).
//   - Goroutines sharing one Mutex value exclude each other, as with a
//     sync.Mutex (and as code taking a sync.Locker expects): a local gate
//     inside the Mutex is passed before Redis is asked, so a second Lock
//     waits until the first hold is unlocked, and a TryLock without a wait
//     gives false. Waiting at the gate honours ctx (LockContext, TryLock's
//     wait) and Close, and pins no OS thread. Sharing one Mutex and using a
//     Mutex per goroutine (c.Mutex(name) is cheap: it does not touch Redis)
//     exclude alike.
//   - Re-entering is explicit. Like sync.Mutex's, a Lock by the goroutine
//     that holds the Mutex waits for itself; code that runs under the lock
//     and needs it again calls [Mutex.Reenter]: the hold count in Redis
//     grows (Redisson's RLock, same wire format), each Unlock or Release
//     gives one hold back, and the lock is free, and the gate open, when
//     the count reaches zero.
//   - Any goroutine may release what a Mutex holds, as with sync.Mutex.
//   - A hold that is lost, or whose fixed lease ran out, keeps the gate
//     until it is unlocked (Unlock then logs [ErrLost] or [ErrNotHeld]): the
//     other goroutines do not enter while the holder may still be working
//     under it. So a hold taken with a lease and never unlocked keeps the
//     Mutex closed to this process: unlock it, or use a Mutex per such hold.
//   - An [RWMutex] is a sync.RWMutex in the same way: goroutines sharing one
//     read together (one read hold in Redis, counted per reader), a writer
//     is alone, and a waiting writer goes before new readers (so, as with
//     sync.RWMutex, a reader must not RLock again while it reads). The
//     writer may also read: rw.Reader().Reenter. A [MultiLock] passes the
//     gates of its members.
//
// # Lock kinds
//
// Every Redisson lock kind is a [Mutex] chosen at creation, with the same
// methods, or a small type around one for the kinds with calls of their
// own: [Client.Mutex] (reentrant, RLock), [Client.FairMutex] (RFairLock:
// first come, first served across processes), [Client.RWMutex]
// (RReadWriteLock, shaped like sync.RWMutex), [Client.SpinMutex]
// (RSpinLock: no pub/sub, an exponential back-off), [Client.FencedMutex]
// (RFencedLock: a strictly increasing token per acquisition), and with the
// [NonReentrant] option the non-reentrant lock and fair lock, whose
// re-entry ([Mutex.Reenter]) fails with [ErrDeadlock]. [Mutex.Kind] names
// the kind.
//
// # Blocking, contexts and leases
//
// [Mutex.LockContext] and [Mutex.TryLock] block the calling goroutine only,
// and a waiting goroutine pins no OS thread: the wait is a record in the C
// client (a libhilock task, driven by the client's two executor threads),
// and the goroutine blocks on a channel that one goroutine per client
// completes, reading the client's task fd through Go's poller. So 10,000
// goroutines waiting for locks run no more threads than a few (a goroutine
// blocked in a cgo call would pin one each, and Go stops a program at
// 10,000). Only the fast path (one attempt on a free lock, one release) is
// a direct cgo call, made by at most a few goroutines of a client at a
// time; the others go through tasks too. When ctx is done the task is
// cancelled at once (no polling) and the call returns ctx.Err(); a task
// cancelled while its attempt takes the lock gives it back, so nothing
// stays held. A ctx deadline also bounds the wait in the library. Lock and
// Unlock make Mutex a [sync.Locker]. Lock panics when it cannot take the
// lock (it has no error to return); code that must survive a Redis outage
// uses LockContext. Unlock panics only on misuse, as sync.Mutex does
// (unlocking a Mutex that holds nothing: [ErrNotHeld]); a lost hold, a
// closed client or a Redis failure at Unlock is passed to [Logger] (the
// standard log package by default) and shows in [Mutex.Lost], so
// `defer m.Unlock()` never takes the process down. [Mutex.Release] returns
// the same errors instead.
//
// A lock taken without a lease (LockContext, Lock, TryLock with lease Watchdog) is
// kept alive by the client's watchdog: written with the watchdog timeout
// ([WithWatchdogTimeout], default 30 s) and renewed every third of it while
// held. If a renewal finds the lock gone or taken by another owner, or Redis
// stays unreachable until the lease ends, the hold is lost and the channel
// of [Mutex.Lost] is closed. A lock taken with a fixed lease is not renewed
// and expires in Redis; if it is still held then, the hold is lost too, and
// Lost is closed when the lease ends (by this machine's clock). [Mutex.Context]
// turns a loss into a cancelled context for the work done under the lock,
// whose cause ([Cause], or context.Cause with Go 1.20+) is [ErrLost].
//
// # Semaphores and latches
//
// Redisson's synchronizers, on its keys, channels and messages, so Java
// services share them: [Client.Semaphore] (RSemaphore) has the Acquire(ctx,
// n), TryAcquire(n) and Release(n) of golang.org/x/sync/semaphore's
// *Weighted, with permits counted in Redis (TrySetPermits, AddPermits...);
// the Client counts the permits it took, and giving back more is refused
// (Release panics as x/sync's does, ReleaseErr returns [ErrNotHeld]).
// [Client.ExpirableSemaphore] (RPermitExpirableSemaphore) hands out
// permits with ids and leases: a permit goes back when released by id or
// when its lease ends, so a holder that dies cannot keep it.
// [Client.CountDownLatch] (RCountDownLatch) is sync.WaitGroup across
// processes: TrySetCount, CountDown, and Wait(ctx), which wakes every
// waiter in every process when the count reaches zero.
//
// Every wait takes a ctx and waits as a lock does: through a libhilock
// task, woken by a pub/sub message (or a lease's end), pinning no OS
// thread; ctx being done cancels it and returns ctx.Err(), and a cancel
// that meets permits being taken gives them back first. Their other calls
// are one round trip each, made by at most a few goroutines of a client
// at a time (the others wait on a channel, pinning no thread either).
//
// # Errors
//
// Failures are values that work with errors.Is: [ErrNotHeld], [ErrLost],
// [ErrClosed], [ErrInvalid], [ErrTimeout], [ErrForked], [ErrInDoubt],
// [ErrDeadlock],
// [ErrConnect], [ErrAuth], and context.Canceled
// or context.DeadlineExceeded (returned as ctx.Err()). A lost hold is not
// held: an error matching ErrLost matches ErrNotHeld too. Library failures are
// *[Error] values carrying the status code, its name ("HL_ENOTHELD") and the
// library's detail message; use errors.As to read them. No message carries
// the password of the URL given to Connect.
//
// libhilock keeps the detail of the last failure in thread-local storage,
// and a goroutine may move to another OS thread between two cgo calls. The
// binding therefore never reads it in a separate call: each operation is one
// cgo call into a small C wrapper that makes the library call and copies
// the detail into a caller buffer on the same thread, which is cheaper than
// runtime.LockOSThread around two calls.
//
// # Observability
//
// [Client.Stats] returns the client's counters (acquisitions, waits and
// their time, releases, renewals and failed renewals, losses, reconnects,
// failovers) without a round trip. What libhilock notices on its own
// threads, a hold lost, a renewal without an answer, a reconnect, a
// failover, is an [Event]. The library never runs Go code on its threads:
// one goroutine per client, parked in the runtime's poller on the client's
// event fd (no OS thread is held), hands the events in order to
// slog.Default() (Go 1.21+; the log package before), to the logger of
// [WithLogger], or to the function of [WithEventHandler]. Close hands over
// the events queued before it.
//
// # Resources
//
// [Client.Close] is explicit and idempotent: it wakes every blocked call
// (they return [ErrClosed]), stops renewing the client's locks (their leases
// then run out in Redis; nothing is unlocked), closes the Lost channels of
// the holds it was watching, and returns only when every goroutine the
// binding started for this client has ended. Further use returns ErrClosed.
// Finalizers are only a safety net: a Client that is garbage collected
// unclosed is closed, and a Mutex that is garbage collected while it holds
// the lock stops being renewed, so its lease runs out instead of the lock
// being renewed forever.
//
// # Build
//
// The import path is github.com/hilock/hilock/bindings/go, in the module
// github.com/hilock/hilock. By default cgo compiles the C core into the
// package (no libhilock to install); hiredis, libuuid and OpenSSL are
// linked from the system. With the build tag hilock_system it links an
// installed libhilock found with pkg-config (package "hilock"; point
// PKG_CONFIG_PATH at an installed prefix or at a build tree's pkgconfig
// directory) and refuses to compile against one whose major version is
// not 0.
package hilock
