// The redsync side of the Go bench: go-redsync/redsync over go-redis, one
// client (connection pool) per process, a Mutex per worker.
//
//	redsync URL SCENARIO ...                 one server
//	redsync redlock URL,URL,URL SCENARIO ... redsync's own RedLock: one pool
//	                                         per server, a Mutex per worker
//
// redsync gives up after a number of tries (32 by default, 50-250 ms
// apart); the bench lets it try for as long as the run lasts and keeps
// its default retry delay, so its wait times are its own.
package main

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"time"

	"github.com/hilock/hilock/bench/go/harness"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type locker struct{ m *redsync.Mutex }

func (l locker) Lock() error { return l.m.Lock() }

// LockWithin: redsync's own bounded wait, LockContext with a deadline
// (it keeps its retry delay between tries).
func (l locker) LockWithin(wait time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := l.m.LockContext(ctx)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, redsync.ErrFailed) || ctx.Err() != nil {
		return false, nil
	}
	return false, err
}

func (l locker) Unlock() error {
	_, err := l.m.Unlock()
	return err
}

// pool makes a go-redis pool; failFast (the RedLock's servers) gives it
// the setting the hilock side has there: no resends.
func pool(url string, failFast bool) redis.Pool {
	if !strings.HasPrefix(url, "redis://") {
		panic("redis:// URL expected")
	}
	opt, err := goredislib.ParseURL(url)
	if err != nil {
		panic(err)
	}
	opt.PoolSize = 128
	if failFast {
		opt.MaxRetries = -1
	}
	return goredis.NewPool(goredislib.NewClient(opt))
}

func main() {
	lib, args := "redsync", os.Args[1:]
	var pools []redis.Pool
	if len(os.Args) > 2 && os.Args[1] == "redlock" {
		lib, args = "redsync-redlock", os.Args[2:]
		for _, u := range strings.Split(os.Args[2], ",") {
			pools = append(pools, pool(u, true))
		}
	} else {
		pools = append(pools, pool(os.Args[1], false))
	}
	rs := redsync.New(pools...)
	harness.Main(lib, args, func(name string) harness.Locker {
		return locker{rs.NewMutex(name, redsync.WithTries(math.MaxInt32))}
	})
}
