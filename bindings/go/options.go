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
}

// WithWatchdogTimeout sets the lease of a lock taken without one; the
// watchdog renews it every third of d while the lock is held, and a hold it
// cannot renew for d is lost. Default 30 s.
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

// WithPoolSize sets the number of command connections. Default 4.
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

// WithSubscriptionTimeout bounds the wait for a SUBSCRIBE. Default 7.5 s.
func WithSubscriptionTimeout(d time.Duration) Option {
	return func(c *config) { c.subscriptionTimeout = d }
}

func (c *config) validate() error {
	if c.watchdog < 0 || c.connectTimeout < 0 || c.commandTimeout < 0 ||
		c.subscriptionTimeout < 0 || c.retryDelay < 0 {
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
