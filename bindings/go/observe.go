package hilock

import (
	"os"
	"strconv"
	"time"
)

// Stats are a Client's counters since Connect. They never go back.
type Stats struct {
	// Acquisitions counts acquires that got the lock (re-entries too).
	Acquisitions uint64
	// AcquireWaits counts acquires that found the lock taken and waited
	// for it, whether they got it or not; WaitTime is what those waits
	// took in total. A TryLock without a wait never waits.
	AcquireWaits uint64
	WaitTime     time.Duration
	// Releases counts holds given back.
	Releases uint64
	// Renewals counts renewals of a hold that Redis confirmed;
	// RenewalFailures those that got no answer (each retry counts).
	Renewals        uint64
	RenewalFailures uint64
	// Losses counts holds found lost while held: the key gone or another
	// owner's, no renewal confirmed before the loss deadline, a fixed
	// lease that ended while held, a force unlock through this client, or
	// a release that found the hold gone.
	Losses uint64
	// Reconnects counts connections made again to a server after one to
	// it broke (command, subscriber and watchdog connections).
	Reconnects uint64
	// Failovers counts the changes of master the client followed: a new
	// master named by the sentinels; in a cluster, a master replaced.
	Failovers uint64
	// EventsDropped counts events the client dropped because its queue
	// (1024 events) was full: the handler did not keep up.
	EventsDropped uint64
	// Waiting is a gauge, not a count: the client's waits (Lock, Acquire,
	// Wait, ...) waiting now, found taken with their subscription active
	// or queued behind this client's own waiters, so that only a
	// message, a timer or their turn moves them on.
	Waiting uint64
	// WakeupsReadByWaiter counts wake-ups a blocked C caller read from the
	// subscriber connection itself, with no hop through the subscriber
	// thread. Goroutines wait as tasks, not blocked in C, so a client used
	// from Go alone keeps it at 0 (the C library's counter, shared by
	// every binding).
	WakeupsReadByWaiter uint64
}

// Stats returns the client's counters, read without a round trip. After
// Close it returns the final counts.
func (c *Client) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return c.final
	}
	return clientStats(c.p)
}

// EventType says what an Event reports.
type EventType int

const (
	// EventLost: a hold was found lost (see Stats.Losses).
	EventLost EventType = 1
	// EventRenewalFailed: a hold's renewal got no answer; it is retried
	// until the loss deadline. Once per hold until a renewal succeeds.
	EventRenewalFailed EventType = 2
	// EventReconnect: a connection to a server was made again after one
	// broke.
	EventReconnect EventType = 3
	// EventFailover: the client followed a change of master.
	EventFailover EventType = 4
	// EventFencingOff: the server refused CLIENT KILL (an ACL user
	// without it), so a command delayed past its caller's deadline may
	// still run later (an acquire that lands late holds the lock until
	// its lease ends). Once per client.
	EventFencingOff EventType = 5
	// EventUndo: an acquire whose caller did not get the lock may have
	// left it held, and taking it back at once got no answer: the client
	// keeps taking it back in the background (Code HL_EINDOUBT), then
	// says how that ended (HL_OK: taken back; HL_ETIMEDOUT: its lease
	// ended it first).
	EventUndo EventType = 6
)

// String is the type's name: "lost", "renewal_failed", "reconnect",
// "failover", "fencing_off", "undo".
func (t EventType) String() string {
	if n := eventTypeName(t); n != "unknown" {
		return n
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// An Event is something libhilock noticed on its own threads. Those threads
// never run Go code: they queue the event, and a goroutine of the Client's
// hands it to the event handler (see WithEventHandler).
type Event struct {
	Type    EventType
	Time    time.Time // when it happened
	Lock    string    // the lock's name; "" for an event about no lock
	Owner   string    // the hold's owner string; "" if none
	Node    string    // the server concerned ("host:port"); "" if none
	Code    int       // the libhilock status it reports (HL_ELOST...)
	Status  string    // its name: "HL_ELOST", "HL_EIO", "HL_OK"
	Message string    // a sentence for a log; never a password
}

// String is the event's message.
func (e Event) String() string { return e.Message }

// Warning reports whether the event is worth a warning (a lost hold, a
// failed renewal, fencing off, an acquire being taken back in the background)
// rather than information (a reconnect, a failover): the level the default
// handlers log it at.
func (e Event) Warning() bool {
	return e.Type == EventLost || e.Type == EventRenewalFailed ||
		e.Type == EventFencingOff || e.Type == EventUndo
}

// WithEventHandler sets the function that receives the client's events
// (instead of the default logger: log/slog's default logger with Go 1.21
// or newer, see WithLogger; the standard log package with older Go). It is
// called on one goroutine of the client's, one event at a time, oldest
// first; it must not block for long (the client keeps at most 1024 events
// waiting, then drops the oldest: Stats.EventsDropped) and must not call
// the client's Close, which waits for it. nil drops every event.
func WithEventHandler(f func(Event)) Option {
	return func(c *config) {
		c.eventHandlerSet = true
		c.eventHandler = f
	}
}

// eventLine is how the fallback handler (Go before 1.21) prints an event:
// "hilock: WARNING lost: <message>".
func eventLine(e Event) string {
	level := "INFO"
	if e.Warning() {
		level = "WARNING"
	}
	return "hilock: " + level + " " + e.Type.String() + ": " + e.Message
}

// startEvents starts the goroutine that takes the client's events and hands
// them to handler. It parks in the runtime's poller on a duplicate of the
// client's event fd: no OS thread is blocked and nothing polls. It ends when
// the client is closed and every event queued before was handled.
func (c *Client) startEvents(handler func(Event)) {
	c.eventsDone = make(chan struct{})
	fd := dupEventFd(c.p)
	if fd < 0 {
		close(c.eventsDone) // no fd (out of descriptors): no events
		return
	}
	f := os.NewFile(uintptr(fd), "hilock-events")
	// Not c itself: a Client dropped unclosed must stay collectable, so
	// that its finalizer closes it (which ends this goroutine). p is freed
	// by Close only after this goroutine ended.
	p, done := c.p, c.eventsDone
	go func() {
		defer close(done)
		defer f.Close()
		rc, err := f.SyscallConn()
		if err != nil {
			return
		}
		for {
			err = rc.Read(func(fd uintptr) bool {
				return fdReadable(fd) // false: park until readable
			})
			if err != nil {
				return
			}
			for {
				ev, ok, end := nextEvent(p)
				if end {
					return
				}
				if !ok {
					break
				}
				if handler != nil {
					handler(ev)
				}
			}
		}
	}()
}
