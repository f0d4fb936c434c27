// The hilock side of the Go bench: the cgo binding (bindings/go), one
// Client per process, a Mutex per worker (ownership follows the Mutex).
//
//	hilock URL SCENARIO ...              one server, a Mutex per worker
//	hilock redlock URL,URL,URL SCENARIO ...
//	                                     a RedLock over one Client per
//	                                     server, per worker (fixed 8 s
//	                                     lease, redsync's default expiry)
package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/hilock/hilock/bench/go/harness"

	hilock "github.com/hilock/hilock/bindings/go"
)

type locker struct{ m *hilock.Mutex }

func (l locker) Lock() error { return l.m.LockContext(context.Background()) }

func (l locker) Unlock() error { return l.m.Release() }

// redLocker takes a RedLock with the fixed lease redsync gives its
// mutexes, waiting as long as it takes.
type redLocker struct{ rl *hilock.MultiLock }

func (l redLocker) Lock() error {
	_, err := l.rl.TryLock(context.Background(), -1, 8*time.Second)
	return err
}

func (l redLocker) Unlock() error { return l.rl.Release() }

func main() {
	if len(os.Args) > 2 && os.Args[1] == "redlock" {
		var cs []*hilock.Client
		for _, u := range strings.Split(os.Args[2], ",") {
			// A RedLock's clients do not resend to a server that
			// is down: the other members make the quorum.
			c, err := hilock.Connect(context.Background(), u,
				hilock.WithRetry(0, 100*time.Millisecond))
			if err != nil {
				panic(err)
			}
			defer c.Close()
			cs = append(cs, c)
		}
		harness.Main("hilock-redlock", os.Args[2:], func(name string) harness.Locker {
			var ms []*hilock.Mutex
			for _, c := range cs {
				ms = append(ms, c.Mutex(name))
			}
			return redLocker{hilock.NewRedLock(ms...)}
		})
		return
	}
	c, err := hilock.Connect(context.Background(), os.Args[1])
	if err != nil {
		panic(err)
	}
	defer c.Close()
	harness.Main("hilock", os.Args[1:], func(name string) harness.Locker {
		return locker{c.Mutex(name)}
	})
}
