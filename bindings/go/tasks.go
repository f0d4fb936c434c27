package hilock

// Waits that pin no OS thread. A goroutine blocked in a cgo call holds its
// OS thread for as long as the call lasts: 1,000 goroutines waiting for a
// lock that way run 1,000 threads, and Go stops a program at 10,000. So a
// wait is a libhilock task (a record in the C client, driven by its two
// executor threads), and the waiting goroutine blocks on a channel. One
// goroutine per client reads the client's task fd through Go's poller
// (parked, no thread) and completes the channels. Only a few goroutines at a
// time make a blocking cgo call for the fast path (one attempt, one release).

import (
	"context"
	"os"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
)

const (
	// fastSlots is how many goroutines of one client may be in a blocking
	// cgo call (a round trip) at once: a wait's first attempt takes a slot
	// if one is free and goes through a task otherwise; a synchronizer's
	// call that has no task form waits for one (Client.call). It bounds
	// the threads Go starts for blocked cgo calls.
	fastSlots = 4
	// taskBatch is how many completed tasks one cgo call takes.
	taskBatch = 64
)

// taskState is a Client's part of the task machinery.
type taskState struct {
	// started, closed, file and done are guarded by Client.tmu, which is
	// also held while a task is started (so that its data is set before
	// it can be taken) and while completed tasks are taken.
	started bool
	closed  bool
	file    *os.File      // duplicate of the client's task fd
	done    chan struct{} // closed when the loop goroutine has ended

	pending int64 // atomic: tasks started and not yet received
	total   int64 // atomic: tasks ever started (the tests' TasksStarted)
}

// tryFast takes a fast-path slot if one is free.
func (c *Client) tryFast() bool {
	if atomic.LoadInt32(&c.noFast) != 0 {
		return false
	}
	select {
	case c.fast <- struct{}{}:
		return true
	default:
		return false
	}
}

// fastDone ends a fast-path call: it gives its slot back, and now and
// then yields (yieldAfterCgo).
func (c *Client) fastDone() {
	<-c.fast
	yieldAfterCgo()
}

// cgoYieldEvery is how often goroutines that make blocking cgo calls back
// to back yield their processor.
const cgoYieldEvery = 2 * time.Millisecond

var (
	monoBase   = time.Now()
	cgoYieldAt int64 // atomic: when one last yielded, since monoBase
)

// yieldAfterCgo yields the processor (runtime.Gosched) when no goroutine
// has for cgoYieldEvery. A goroutine in blocking cgo calls back to back
// never reschedules, and once it has run 10 ms without, the runtime's
// monitor takes its processor away during its next call and hands it to
// another thread, and keeps waking every 20 us for a while after: on a
// 2-core machine that cost the Go binding 4-10 us of CPU per round trip
// (bench/ANALYSIS.md, (11)). A yield every 2 ms, which costs well under a
// microsecond, keeps the goroutine's time slice fresh.
func yieldAfterCgo() {
	now := int64(time.Since(monoBase))
	last := atomic.LoadInt64(&cgoYieldAt)
	if now-last >= int64(cgoYieldEvery) && atomic.CompareAndSwapInt64(&cgoYieldAt, last, now) {
		runtime.Gosched()
	}
}

// startTask starts a task with start (a cgo call that sets the task's data
// to the waiter's handle), with p valid (c.mu held for reading). It
// returns the task and the channel its result arrives on.
func (c *Client) startTask(p *cClient, start func(data uint64) (*cTask, opResult)) (*cTask,
	chan taskDone, cgo.Handle, opResult) {
	ch := make(chan taskDone, 1)
	h := cgo.NewHandle(ch)
	c.tmu.Lock()
	if err := c.startLoopLocked(p); err != nil {
		c.tmu.Unlock()
		h.Delete()
		return nil, nil, 0, opResult{err: err}
	}
	t, r := start(uint64(h))
	c.tmu.Unlock()
	if r.err != nil {
		h.Delete()
		return nil, nil, 0, r
	}
	atomic.AddInt64(&c.tasks.pending, 1)
	atomic.AddInt64(&c.tasks.total, 1)
	return t, ch, h, r
}

// await waits for t's result; when stop is closed first it cancels t, which
// then completes promptly (and gives back anything it acquired). It frees
// t. c.mu must not be held: Close waits for it while results arrive.
func (c *Client) await(t *cTask, ch chan taskDone, h cgo.Handle, stop <-chan struct{}) taskDone {
	var d taskDone
	select {
	case d = <-ch:
	case <-stop:
		cancelTask(t)
		d = <-ch
	}
	atomic.AddInt64(&c.tasks.pending, -1)
	freeTask(t)
	h.Delete()
	return d
}

// deadlineGrace is how long a wait whose C deadline is ctx's deadline may
// take to end by itself after ctx is done: its own end says whether Redis
// answered (not acquired) or never did (an outage: ErrConnect), which a
// cancel would hide.
const deadlineGrace = 200 * time.Millisecond

// awaitWait is await for an acquire's wait task: stopped by ctx, except
// that when ctx's deadline set the task's own (byDeadline) the task gets
// deadlineGrace to end by that deadline first.
func (c *Client) awaitWait(ctx context.Context, byDeadline bool, t *cTask, ch chan taskDone,
	h cgo.Handle) taskDone {
	if !byDeadline {
		return c.await(t, ch, h, ctx.Done())
	}
	var d taskDone
	select {
	case d = <-ch:
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			timer := time.NewTimer(deadlineGrace)
			select {
			case d = <-ch:
				timer.Stop()
				atomic.AddInt64(&c.tasks.pending, -1)
				freeTask(t)
				h.Delete()
				return d
			case <-timer.C:
			}
		}
		cancelTask(t)
		d = <-ch
	}
	atomic.AddInt64(&c.tasks.pending, -1)
	freeTask(t)
	h.Delete()
	return d
}

// startLoopLocked starts the goroutine that reads the task fd, once (c.tmu
// held).
func (c *Client) startLoopLocked(p *cClient) error {
	if c.tasks.closed {
		return ErrClosed
	}
	if c.tasks.started {
		return nil
	}
	fd := clientTaskFd(p)
	if fd < 0 {
		return systemError("cannot get the client's task fd")
	}
	f := os.NewFile(uintptr(fd), "hilock-tasks")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return systemError("polling the client's task fd: " + err.Error())
	}
	c.tasks.file = f
	c.tasks.done = make(chan struct{})
	c.tasks.started = true
	go func(done chan struct{}) {
		defer close(done)
		// The fd is readable while completed tasks wait to be taken;
		// taking the last one makes it unreadable again. Returning false
		// parks the goroutine in the poller until it is readable. Read
		// returns when the file is closed (Close).
		rc.Read(func(uintptr) bool {
			c.deliver()
			return false
		})
	}(c.tasks.done)
	return nil
}

// deliver takes every completed task and sends each result to its waiter.
func (c *Client) deliver() {
	var buf [taskBatch]taskDone
	for {
		c.mu.RLock()
		p := c.p
		if p == nil {
			c.mu.RUnlock()
			return
		}
		c.tmu.Lock()
		n := takeTasks(p, buf[:])
		c.tmu.Unlock()
		c.mu.RUnlock()
		for i := 0; i < n; i++ {
			// Buffered: the send never blocks, and the waiter is there
			// until it receives (it frees the handle after).
			cgo.Handle(buf[i].data).Value().(chan taskDone) <- buf[i]
		}
		if n < len(buf) {
			return
		}
	}
}

// stopTasks ends the loop goroutine and delivers what is left (Close, after
// hl_client_close completed every task).
func (c *Client) stopTasks() {
	c.tmu.Lock()
	c.tasks.closed = true
	started, f, done := c.tasks.started, c.tasks.file, c.tasks.done
	c.tmu.Unlock()
	if started {
		f.Close()
		<-done
	}
	c.deliver()
}

func systemError(msg string) error {
	return &Error{Op: "lock", Code: statusSystem, Name: statusName(statusSystem), Message: msg}
}
