package hilock

import (
	"strings"
	"time"
)

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
	tls                 TLSConfig
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

// TLSConfig is the TLS of a rediss:// URL (TLS 1.2 or 1.3, through
// libhilock's OpenSSL). Empty strings are unset. Files are PEM; a key
// protected by a passphrase is not supported.
type TLSConfig struct {
	// CAFile holds the CA certificates to trust; CADir is a directory of
	// hashed ones (openssl rehash). With neither, the system's store.
	CAFile string
	CADir  string
	// CertFile and KeyFile are the client certificate and its key, for a
	// server that requires one (tls-auth-clients yes): both or neither.
	CertFile string
	KeyFile  string
	// ServerName is the name the server's certificate must carry, also
	// sent as SNI. Default: the URL's host (an IP address is checked as an
	// address).
	ServerName string
	// InsecureSkipVerify encrypts but trusts any server: no chain, no
	// name. For tests only.
	InsecureSkipVerify bool
}

// WithTLS sets the TLS options of a rediss:// URL. Verification is on
// unless InsecureSkipVerify. A file that cannot be used fails Connect with
// ErrInvalid naming it; a refused certificate (wrong CA, expired, another
// name), a plain server on the port or a server that wants a client
// certificate fails it with ErrConnect saying which.
func WithTLS(t TLSConfig) Option {
	return func(c *config) { c.tls = t }
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
	for _, f := range []struct{ name, v string }{
		{"TLSConfig.CAFile", c.tls.CAFile}, {"TLSConfig.CADir", c.tls.CADir},
		{"TLSConfig.CertFile", c.tls.CertFile}, {"TLSConfig.KeyFile", c.tls.KeyFile},
		{"TLSConfig.ServerName", c.tls.ServerName},
	} {
		if strings.IndexByte(f.v, 0) >= 0 {
			return invalid("connect", f.name+" contains a NUL byte")
		}
	}
	return nil
}
