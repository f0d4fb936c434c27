// The redsync side of the Go bench: go-redsync/redsync over go-redis, one
// client (connection pool) per process, a Mutex per worker.
//
// redsync gives up after a number of tries (32 by default, 50-250 ms
// apart); the bench lets it try for as long as the run lasts and keeps
// its default retry delay, so its wait times are its own.
package main

import (
	"math"
	"os"
	"strings"

	"github.com/hilock/hilock/bench/go/harness"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type locker struct{ m *redsync.Mutex }

func (l locker) Lock() error { return l.m.Lock() }

func (l locker) Unlock() error {
	_, err := l.m.Unlock()
	return err
}

func main() {
	url := os.Args[1]
	if !strings.HasPrefix(url, "redis://") {
		panic("redis:// URL expected")
	}
	opt, err := goredislib.ParseURL(url)
	if err != nil {
		panic(err)
	}
	opt.PoolSize = 128
	rs := redsync.New(goredis.NewPool(goredislib.NewClient(opt)))
	harness.Main("redsync", os.Args[1:], func(name string) harness.Locker {
		return locker{rs.NewMutex(name, redsync.WithTries(math.MaxInt32))}
	})
}
