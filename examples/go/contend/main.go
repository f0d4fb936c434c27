// Command contend takes a distributed lock in a loop and, while holding it,
// increments a counter in Redis with a plain GET and SET, so a run of
// several copies (in any language using hilock or Redisson) ends with an
// exact count only if the lock excludes them all.
//
//	HILOCK_URL=redis://127.0.0.1:6379/0 go-contend [lock-name [counter-key [iterations]]]
//
// Defaults: hilock:demo, hilock:demo:counter, 20.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "[go pid %d] %v\n", os.Getpid(), err)
		os.Exit(1)
	}
}

func run() error {
	redisURL := os.Getenv("HILOCK_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	name, key, iters := "hilock:demo", "hilock:demo:counter", 20
	args := os.Args[1:]
	if len(args) > 0 {
		name = args[0]
	}
	if len(args) > 1 {
		key = args[1]
	}
	if len(args) > 2 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			return fmt.Errorf("bad iteration count %q", args[2])
		}
		iters = n
	}

	// Ctrl-C interrupts a wait for the lock.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	c, err := hilock.Connect(cctx, redisURL)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()

	rc, err := dialRedis(redisURL)
	if err != nil {
		return err
	}
	defer rc.Close()

	m := c.Mutex(name)
	for i := 0; i < iters; i++ {
		lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := m.LockContext(lctx)
		cancel()
		if err != nil {
			return fmt.Errorf("lock %s: %w", name, err)
		}
		n, err := rc.incr(key)
		if err != nil {
			m.Unlock()
			return err
		}
		fmt.Printf("[go pid %d] holds %s, counter -> %d\n", os.Getpid(), name, n)
		m.Unlock()
	}
	return nil
}

// A tiny RESP client, just enough for GET and SET of the counter.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func dialRedis(rawURL string) (*conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var nc net.Conn
	db := u.Query().Get("db")
	switch u.Scheme {
	case "redis":
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "6379")
		}
		nc, err = net.DialTimeout("tcp", host, 10*time.Second)
		if p := strings.Trim(u.Path, "/"); p != "" {
			db = p
		}
	case "unix":
		nc, err = net.DialTimeout("unix", u.Path, 10*time.Second)
	default:
		return nil, fmt.Errorf("unsupported url %q", rawURL)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, r: bufio.NewReader(nc)}
	if u.User != nil {
		pw, ok := u.User.Password()
		args := []string{"AUTH", pw}
		if !ok {
			args = []string{"AUTH", u.User.Username()}
		} else if u.User.Username() != "" {
			args = []string{"AUTH", u.User.Username(), pw}
		}
		if _, err := c.do(args...); err != nil {
			c.Close()
			return nil, err
		}
	}
	if db != "" && db != "0" {
		if _, err := c.do("SELECT", db); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// do sends a command and returns a bulk or status reply ("" for nil).
func (c *conn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// incr is a deliberately non-atomic read-modify-write: only the lock makes
// it safe.
func (c *conn) incr(key string) (int64, error) {
	v, err := c.do("GET", key)
	if err != nil {
		return 0, err
	}
	n := int64(0)
	if v != "" {
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, fmt.Errorf("counter %s: %v", key, err)
		}
	}
	n++
	_, err = c.do("SET", key, strconv.FormatInt(n, 10))
	return n, err
}
