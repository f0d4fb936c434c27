package hilock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A gate is the local lock of a Mutex value, passed before the lock is
// asked of Redis: the goroutines sharing one Mutex exclude each other as
// they would with a sync.Mutex, whatever the Redis owner (the Mutex's owner
// is the same for all of them, and Redis would let each one re-enter).
// Both halves of an RWMutex share one gate, which then works as a
// sync.RWMutex: any number of readers, or one writer. A MultiLock passes
// the gates of its members.
//
// A unit of the gate stands for one hold taken through it (or one
// acquisition in flight): the unit is given back when that hold is
// released, after the release reached Redis, or when the acquisition fails.
// A hold that is lost keeps its unit until its holder releases it, so the
// other goroutines stay out while the holder may still be working. Waiting
// honours ctx, a wait's end and Close; it is a channel receive, so the
// waiting goroutine pins no OS thread.
type gate struct {
	id uint64 // the order in which a MultiLock passes gates

	mu      sync.Mutex
	writers int           // exclusive units out
	readers int           // shared units out
	waiting int           // exclusive passes waiting: new readers let them go first
	wake    chan struct{} // closed (and dropped) when units are given back
}

var gateSeq uint64 // atomic

func newGate() *gate { return &gate{id: atomic.AddUint64(&gateSeq, 1)} }

// free reports whether a pass of this side may go through now (g.mu held).
func (g *gate) free(shared bool) bool {
	if shared {
		return g.writers == 0 && g.waiting == 0
	}
	return g.writers == 0 && g.readers == 0
}

func (g *gate) takeLocked(shared bool) {
	if shared {
		g.readers++
	} else {
		g.writers++
	}
}

func (g *gate) broadcastLocked() {
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
}

// pass takes a unit of the gate, waiting for it: waitMs 0 means no wait
// (false when the gate is busy), negative as long as ctx allows, positive
// at most that long (then false, nil). It returns ctx.Err() when ctx is done
// first and ErrClosed when closing is closed first (nothing taken then).
func (g *gate) pass(ctx context.Context, shared bool, waitMs int64,
	closing <-chan struct{}) (bool, error) {
	g.mu.Lock()
	if g.free(shared) {
		g.takeLocked(shared)
		g.mu.Unlock()
		return true, nil
	}
	if waitMs == 0 {
		g.mu.Unlock()
		return false, nil
	}
	if !shared {
		g.waiting++
	}
	var timer <-chan time.Time
	if waitMs > 0 {
		t := time.NewTimer(time.Duration(waitMs) * time.Millisecond)
		defer t.Stop()
		timer = t.C
	}
	for {
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		wake := g.wake
		g.mu.Unlock()
		var err error
		timedOut := false
		select {
		case <-wake:
		case <-ctx.Done():
			err = ctx.Err()
		case <-closing:
			err = ErrClosed
		case <-timer:
			timedOut = true
		}

		g.mu.Lock()
		if err == nil && !timedOut && g.free(shared) {
			if !shared {
				g.waiting--
			}
			g.takeLocked(shared)
			g.mu.Unlock()
			return true, nil
		}
		if err != nil || timedOut {
			if !shared {
				g.waiting--
				if g.waiting == 0 {
					g.broadcastLocked() // readers held back for it may go
				}
			}
			g.mu.Unlock()
			return false, err
		}
	}
}

// reenter takes one more unit without waiting, for a caller that holds the
// gate already: the exclusive side needs a writer's unit out, the shared
// side a writer's or a reader's. It reports whether it took one.
func (g *gate) reenter(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.writers == 0 && (!shared || g.readers == 0) {
		return false
	}
	g.takeLocked(shared)
	return true
}

// held reports whether units of the side are out.
func (g *gate) held(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		return g.readers > 0
	}
	return g.writers > 0
}

// leave gives back one unit of the side.
func (g *gate) leave(shared bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		if g.readers > 0 {
			g.readers--
		}
	} else if g.writers > 0 {
		g.writers--
	}
	g.broadcastLocked()
}
