package hilock

import (
	"strconv"
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
	sentinelUser        string
	sentinelPassword    string
	readFrom            ReadFrom
	waitSet             bool
	waitReplicas        int
	waitTimeout         time.Duration
	fairWaitTimeout     time.Duration
	eventHandlerSet     bool
	eventHandler        func(Event)
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

// WithSentinelAuth sets the sentinels' own credentials, for a
// redis-sentinel:// URL whose sentinels have a password (requirepass)
// other than the data nodes' (the URL's user info is the data nodes').
// An empty user is the default user (AUTH password); an empty password
// sends no AUTH. The password is copied into libhilock and appears in no
// error or log.
func WithSentinelAuth(user, password string) Option {
	return func(c *config) {
		c.sentinelUser = user
		c.sentinelPassword = password
	}
}

// ReadFrom says where the read-only queries (IsLocked, TTL) go when the
// deployment has replicas; see WithReadFrom.
type ReadFrom int

const (
	// ReadMaster (the default): a replica may lag, so a lock's state read
	// there can be stale.
	ReadMaster ReadFrom = iota
	// ReadReplica: a replica (the master when there is none).
	ReadReplica
	// ReadAny: the master or a replica.
	ReadAny
)

func (r ReadFrom) String() string {
	switch r {
	case ReadMaster:
		return "ReadMaster"
	case ReadReplica:
		return "ReadReplica"
	case ReadAny:
		return "ReadAny"
	}
	return "ReadFrom(" + strconv.Itoa(int(r)) + ")"
}

// WithReadFrom routes the read-only queries (IsLocked, TTL) of a
// deployment with replicas (Sentinel, Cluster, redis-replica://): ReadMaster
// (default), ReadReplica or ReadAny. Taking, renewing and releasing a lock,
// IsHeld and HoldCount always go to the master.
func WithReadFrom(r ReadFrom) Option {
	return func(c *config) { c.readFrom = r }
}

// WithWaitReplicas sets how a lock change waits for the replicas of its
// master (Redis's WAIT after each lock-changing script, as Redisson's
// checkLockSyncedSlaves): n = -1 (the default) for every connected replica,
// 0 never, or n replicas, each time at most timeout (0: the default, 1 s).
// An acquire no replica confirmed in time is undone and tried again, as
// Redisson does.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *config) {
		c.waitSet = true
		c.waitReplicas = n
		c.waitTimeout = timeout
	}
}

// WithFairWaitTimeout sets how long a waiter of a fair lock
// ([Client.FairMutex]) stays in the lock's queue in Redis past its turn
// before it counts as gone (a process that died while waiting), when its
// acquire has no wait of its own (LockContext without a deadline, Lock):
// Redisson's fairLockWaitTimeout, which hilock and Redisson processes
// sharing fair locks should agree on. Default 5 minutes.
func WithFairWaitTimeout(d time.Duration) Option {
	return func(c *config) { c.fairWaitTimeout = d }
}

func (c *config) validate() error {
	if c.watchdog < 0 || c.connectTimeout < 0 || c.commandTimeout < 0 ||
		c.subscriptionTimeout < 0 || c.retryDelay < 0 || c.pingInterval < 0 ||
		c.fairWaitTimeout < 0 {
		return invalid("connect", "negative duration option")
	}
	if c.retryAttempts < 0 || c.poolSize < 0 {
		return invalid("connect", "negative count option")
	}
	if c.readFrom < ReadMaster || c.readFrom > ReadAny {
		return invalid("connect", "WithReadFrom: "+c.readFrom.String()+
			" is not ReadMaster, ReadReplica or ReadAny")
	}
	if c.waitReplicas < -1 || c.waitReplicas > 1<<20 {
		return invalid("connect", "WithWaitReplicas: n = "+strconv.Itoa(c.waitReplicas)+
			": use -1 (all), 0 (off) or a number of replicas")
	}
	if c.waitTimeout < 0 {
		return invalid("connect", "WithWaitReplicas: negative timeout")
	}
	// Never the value: one of them is a password.
	if strings.IndexByte(c.sentinelUser, 0) >= 0 {
		return invalid("connect", "WithSentinelAuth: the user contains a NUL byte")
	}
	if strings.IndexByte(c.sentinelPassword, 0) >= 0 {
		return invalid("connect", "WithSentinelAuth: the password contains a NUL byte")
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
