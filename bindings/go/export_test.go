package hilock

import "sync/atomic"

// Hooks for the tests (compiled into the test binary only).

// PendingTasks is how many tasks of c have started and not yet been
// received by their waiters.
func PendingTasks(c *Client) int64 { return atomic.LoadInt64(&c.tasks.pending) }

// NoFastPath makes every acquire and release of c, and every wait of its
// synchronizers, go through a task, as when many goroutines are in the
// library at once (no fast slot is free); the returned function ends that.
func NoFastPath(c *Client) func() {
	atomic.StoreInt32(&c.noFast, 1)
	return func() { atomic.StoreInt32(&c.noFast, 0) }
}
