package hilock

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Client is a connection to one Redis deployment: a pool of command
// connections, a subscriber connection for wake-ups, the watchdog that
// renews held locks, and a client id (a UUID) that prefixes every owner it
// writes. It is safe for concurrent use; one per process is normal.
type Client struct {
	// mu is held for reading by every call that uses p, and for writing
	// while p is freed, so the C client is never freed under a call.
	mu sync.RWMutex
	p  *cClient
	id string

	closed    int32 // atomic; 1 once Close has started
	closeOnce sync.Once
	closing   chan struct{} // closed once Close has started: wakes gate waits

	// The holds whose loss is being watched, each by one goroutine.
	hmu      sync.Mutex
	holds    map[*hold]struct{}
	noWatch  bool // set by Close: start no more watchers
	watchers sync.WaitGroup

	// The events goroutine (observe.go) ends with this; final is the last
	// Stats, kept when Close frees p.
	eventsDone chan struct{}
	final      Stats

	// Waits that pin no thread (tasks.go).
	tmu    sync.Mutex
	tasks  taskState
	fast   chan struct{} // slots: blocking cgo calls (round trips) in flight
	noFast int32         // atomic; tests: tryFast always fails (NoFastPath)
}

// Connect connects to Redis and starts the client's threads.
//
// url picks the deployment:
//
//   - one server: "redis://[[user]:password@]host[:port][/db]",
//     "rediss://..." (the same over TLS: see [WithTLS]) or
//     "unix://[[user]:password@]/path/to/redis.sock[?db=N]";
//   - Sentinel: "redis-sentinel://[[user]:password@]s1[:port][,s2...]/master-name[/db]"
//     (the hosts are the sentinels, port 26379 by default; the user info is
//     the data nodes', the sentinels' own come from [WithSentinelAuth]);
//     failovers are followed;
//   - Cluster: "redis-cluster://[[user]:password@]node[:port][,node...]"
//     (any nodes, as seeds);
//   - a master and replicas without Sentinel:
//     "redis-replica://[[user]:password@]master[:port][,replica[:port]...][/db]";
//   - "rediss-sentinel://", "rediss-cluster://", "rediss-replica://": the
//     same over TLS.
//
// [WithReadFrom] and [WithWaitReplicas] tune deployments with replicas. No
// error shows a password. A ctx deadline
// bounds the connection attempt; if ctx is done first Connect returns
// ctx.Err() at once, and a client that connects afterwards is closed in the
// background.
func Connect(ctx context.Context, url string, opts ...Option) (*Client, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if strings.IndexByte(url, 0) >= 0 {
		return nil, invalid("connect", "url contains a NUL byte")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		if rem <= 0 {
			return nil, context.DeadlineExceeded
		}
		if cfg.connectTimeout == 0 || rem < cfg.connectTimeout {
			cfg.connectTimeout = rem
		}
	}

	var p *cClient
	var err error
	if ctx.Done() == nil {
		p, err = newCClient(url, &cfg)
	} else {
		// hl_client_new takes no cancellation flag: connect on a goroutine,
		// and whoever loses the race between the result and ctx cleans up.
		type result struct {
			p   *cClient
			err error
		}
		ch := make(chan result) // unbuffered: a send succeeds only if Connect takes it
		go func() {
			p, err := newCClient(url, &cfg)
			select {
			case ch <- result{p, err}:
			case <-ctx.Done():
				if p != nil {
					freeCClient(p)
				}
			}
		}()
		select {
		case r := <-ch:
			p, err = r.p, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	c := &Client{p: p, id: clientID(p), holds: make(map[*hold]struct{}),
		fast: make(chan struct{}, fastSlots), closing: make(chan struct{})}
	handler := cfg.eventHandler
	if !cfg.eventHandlerSet {
		handler = defaultEventHandler()
	}
	c.startEvents(handler)
	// Safety net only: Close is the way to release a client.
	runtime.SetFinalizer(c, (*Client).Close)
	return c, nil
}

// ID is the client's UUID, the first part of every owner string it writes.
func (c *Client) ID() string { return c.id }

// Close closes the client: blocked calls return ErrClosed, renewal of its
// locks stops (their leases run out in Redis; nothing is unlocked), the Lost
// channels of the holds it was watching are closed, the events queued before
// it are handed to the event handler, and its connections and threads end. When Close returns, no goroutine started for this client is
// left. Idempotent; it always returns nil. Further use returns ErrClosed.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		runtime.SetFinalizer(c, nil)
		atomic.StoreInt32(&c.closed, 1)
		close(c.closing)
		// hl_client_close may run while calls are blocked in the library:
		// it is what wakes them. Only Close frees p, so it is valid here.
		closeCClient(c.p) // every pending task completes with ErrClosed
		<-c.eventsDone    // every event queued before Close was handled
		c.stopWatchers()
		c.stopTasks() // their waiters get that result
		c.mu.Lock()   // waits for the woken calls to leave the library
		c.final = clientStats(c.p)
		freeCClient(c.p)
		c.p = nil
		c.mu.Unlock()
	})
	return nil
}

// enter returns the C client for one call, with c.mu held for reading;
// the caller must call c.mu.RUnlock() when the C call has returned.
func (c *Client) enter() (*cClient, error) {
	if atomic.LoadInt32(&c.closed) != 0 {
		return nil, ErrClosed
	}
	c.mu.RLock()
	if c.p == nil {
		c.mu.RUnlock()
		return nil, ErrClosed
	}
	return c.p, nil
}

// Mutex returns a distributed reentrant lock called name (1 to 65536 bytes,
// any byte values), Redisson's RLock; with [NonReentrant] a non-reentrant
// one. It does not touch Redis, so it is cheap; each Mutex is its own owner,
// and goroutines sharing one exclude each other (see the package
// documentation; re-entering is [Mutex.Reenter]). A bad name or option or a closed client
// is reported by the Mutex's methods. The other lock kinds:
// [Client.FairMutex], [Client.RWMutex], [Client.SpinMutex],
// [Client.FencedMutex].
func (c *Client) Mutex(name string, opts ...MutexOption) *Mutex {
	return c.newMutex("Mutex", kindReentrant, name, opts)
}

const maxNameLen = 65536

// --- loss watching ----------------------------------------------------------

// A hold is one uninterrupted holding of a lock by a Mutex's owner, from the
// acquire that took it free to the release that freed it (or its loss). The
// library keeps its count and state (holdState); this is only what Go needs
// of it: its identity (the library's epoch), its Lost channel and watcher.
type hold struct {
	epoch    uint64 // the library's hl_hold_state.epoch for it
	ended    bool   // a release of the Mutex ended it (under Mutex.mu)
	lost     chan struct{}
	lostOnce sync.Once
	watchdog bool          // renewed by the watchdog (no fixed lease)
	file     *os.File      // dup of the library's lost fd; nil if unwatched
	done     chan struct{} // closed when the watcher goroutine has ended
}

func newHold(epoch uint64, watchdog bool) *hold {
	return &hold{epoch: epoch, watchdog: watchdog, lost: make(chan struct{})}
}

func (h *hold) markLost() { h.lostOnce.Do(func() { close(h.lost) }) }

func (h *hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// watch starts a goroutine that closes h.lost when fd (a non-blocking dup of
// the library's lost fd, now owned by h) becomes readable. The goroutine
// parks in the runtime's poller: no OS thread is blocked and nothing polls.
func (c *Client) watch(h *hold, fd int) {
	f := os.NewFile(uintptr(fd), "hilock-lost")
	if f == nil {
		closeFd(fd)
		return
	}
	c.hmu.Lock()
	if c.noWatch {
		// Close has begun: renewal is stopping, so this hold is unprotected.
		c.hmu.Unlock()
		f.Close()
		h.markLost()
		return
	}
	h.file = f
	h.done = make(chan struct{})
	c.holds[h] = struct{}{}
	c.watchers.Add(1)
	c.hmu.Unlock()

	go func() {
		defer c.watchers.Done()
		defer close(h.done)
		rc, err := f.SyscallConn()
		if err != nil {
			return
		}
		lost := false
		err = rc.Read(func(fd uintptr) bool {
			lost = fdReadable(fd)
			return lost // false: park until the fd is readable, then ask again
		})
		if err == nil && lost {
			h.markLost()
		}
		// Otherwise the file was closed: the hold ended or the client closed.
	}()
}

// unwatch stops h's watcher, if any, and waits for it to end. A loss its
// fd signalled that the watcher had not seen yet still closes h.lost.
func (c *Client) unwatch(h *hold) {
	c.hmu.Lock()
	_, ok := c.holds[h]
	delete(c.holds, h)
	c.hmu.Unlock()
	if ok {
		if rc, err := h.file.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if fdReadable(fd) {
					h.markLost()
				}
			})
		}
		h.file.Close()
		<-h.done
	}
}

func (c *Client) stopWatchers() {
	c.hmu.Lock()
	c.noWatch = true
	holds := c.holds
	c.holds = make(map[*hold]struct{})
	c.hmu.Unlock()
	for h := range holds {
		h.file.Close()
		<-h.done
		h.markLost()
	}
	c.watchers.Wait()
}
