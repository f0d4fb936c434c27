package hilock

import "sync/atomic"

// Hooks for the tests (compiled into the test binary only).

// PendingTasks is how many tasks of c have started and not yet been
// received by their waiters.
func PendingTasks(c *Client) int64 { return atomic.LoadInt64(&c.tasks.pending) }

// NoFastPath makes every acquire and release of c go through a task, as
// when many goroutines are in the library at once (it takes every fast
// slot); the returned function gives them back.
func NoFastPath(c *Client) func() {
	for i := 0; i < cap(c.fast); i++ {
		c.fast <- struct{}{}
	}
	return func() {
		for i := 0; i < cap(c.fast); i++ {
			<-c.fast
		}
	}
}
