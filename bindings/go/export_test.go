package hilock

import "sync/atomic"

// Hooks for the tests (compiled into the test binary only).

// PendingTasks is how many tasks of c have started and not yet been
// received by their waiters.
func PendingTasks(c *Client) int64 { return atomic.LoadInt64(&c.tasks.pending) }

// TasksStarted is how many tasks of c have ever started.
func TasksStarted(c *Client) int64 { return atomic.LoadInt64(&c.tasks.total) }

// NoFastPath makes every acquire and release of c, and every wait of its
// synchronizers, go through a task, as when many goroutines are in the
// library at once (no fast slot is free); the returned function ends that.
func NoFastPath(c *Client) func() {
	atomic.StoreInt32(&c.noFast, 1)
	return func() { atomic.StoreInt32(&c.noFast, 0) }
}

// AcquireAs takes m's lock for m's owner (one attempt, watchdog) through a
// library handle of its own, as another handle of the same owner would,
// without m being told.
func AcquireAs(m *Mutex) (bool, error) {
	p, err := m.c.enter()
	if err != nil {
		return false, err
	}
	r := callAcquire(p, &m.kind, m.name, m.owner, 0, -1, nil)
	m.c.mu.RUnlock()
	return r.flag, r.err
}

// ReleaseAs releases one hold of m's owner the same way: whether the lock
// is now free.
func ReleaseAs(m *Mutex) (bool, error) {
	p, err := m.c.enter()
	if err != nil {
		return false, err
	}
	r := callLock(p, opRelease, "unlock", &m.kind, m.name, m.owner)
	m.c.mu.RUnlock()
	return r.flag, r.err
}

// HoldState is what the library knows of m's owner's hold.
func HoldState(m *Mutex) (count int64, lost bool, epoch uint64, err error) {
	st, err := m.state()
	return st.count, st.lost, st.epoch, err
}

// GateWaiting is how many goroutines wait at m's gate for its exclusive
// side (Lock, LockContext, TryLock of m, or a MultiLock over m), and
// GateUnits how many units of each side are out.
func GateWaiting(m *Mutex) int {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.g.waiting
}

// GateUnits is how many exclusive and shared units of m's gate are out.
func GateUnits(m *Mutex) (writers, readers int) {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.g.writers, m.g.readers
}
