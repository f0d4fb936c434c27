package hilock

import "time"

// An Option configures Connect. Options left out keep libhilock's
// defaults.
type Option func(*config)

type config struct {
	watchdog            time.Duration
	connectTimeout      time.Duration
	commandTimeout      time.Duration
	subscriptionTimeout time.Duration
	retrySet            bool
	retryAttempts       int
	retryDelay          time.Duration
	poolSize            int
	clientNameSet       bool
	clientName          string
	pingSet             bool
	pingInterval        time.Duration
}

// WithWatchdogTimeout sets the lease of a lock taken without one; the
// watchdog renews it every third of d while the lock is held. A hold whose
// renewal Redis does not confirm is lost, by this machine's clock, a tenth
// of d before its lease could end in Redis (so Lost fires before anyone
// else can take the lock). Default 30 s.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *config) { c.watchdog = d }
}

// WithConnectTimeout bounds each connection attempt. Default 10 s. A ctx
// deadline given to Connect bounds it too.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) { c.connectTimeout = d }
}

// WithCommandTimeout bounds the wait for one reply. Default 3 s.
func WithCommandTimeout(d time.Duration) Option {
	return func(c *config) { c.commandTimeout = d }
}

// WithRetry sets how often a failed command is retried (only where it cannot
// apply twice) and the base delay of the backoff. Default 4 and 1 s.
func WithRetry(attempts int, delay time.Duration) Option {
	return func(c *config) {
		c.retrySet = true
		c.retryAttempts = attempts
		c.retryDelay = delay
	}
}

// WithPoolSize sets the most command connections, opened on demand.
// Default 32.
func WithPoolSize(n int) Option {
	return func(c *config) { c.poolSize = n }
}

// WithClientName names the connections (CLIENT SETNAME).
func WithClientName(name string) Option {
	return func(c *config) {
		c.clientNameSet = true
		c.clientName = name
	}
}

// WithSubscriptionTimeout bounds the wait for Redis to confirm a SUBSCRIBE;
// past it the subscriber connection is made anew. Default 7.5 s.
func WithSubscriptionTimeout(d time.Duration) Option {
	return func(c *config) { c.subscriptionTimeout = d }
}

// WithPingInterval sets how long the subscriber connection may stay silent
// while anyone waits before a PING checks it (its PONG must come within the
// command timeout, or the connection is made anew and every waiter
// retries, so no wake-up is lost to a dead connection). 0 turns the check
// off. Default 1 s.
func WithPingInterval(d time.Duration) Option {
	return func(c *config) {
		c.pingSet = true
		c.pingInterval = d
	}
}

func (c *config) validate() error {
	if c.watchdog < 0 || c.connectTimeout < 0 || c.commandTimeout < 0 ||
		c.subscriptionTimeout < 0 || c.retryDelay < 0 || c.pingInterval < 0 {
		return invalid("connect", "negative duration option")
	}
	if c.retryAttempts < 0 || c.poolSize < 0 {
		return invalid("connect", "negative count option")
	}
	for i := 0; i < len(c.clientName); i++ {
		if c.clientName[i] == 0 {
			return invalid("connect", "client name contains a NUL byte")
		}
	}
	return nil
}
