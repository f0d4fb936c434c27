package main

// asynq (github.com/hibiken/asynq): a server with its defaults but the
// concurrency and the queue; a task's handler reports to this process.

import (
	"context"
	"math"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func libVersion(lib string) string {
	mod := map[string]string{"asynq": "github.com/hibiken/asynq",
		"goredis": "github.com/redis/go-redis/v9"}[lib]
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				return d.Version
			}
		}
	}
	return "?"
}

func asynqOpt(url string) asynq.RedisClientOpt {
	o, err := redis.ParseURL(url)
	if err != nil {
		die("%v", err)
	}
	return asynq.RedisClientOpt{Addr: o.Addr, DB: o.DB}
}

// asynqServe starts a server of concurrency c on queue name whose handler
// gets each task's payload and when it started.
func asynqServe(url, name string, c int, h func(p []byte, now time.Time)) *asynq.Server {
	srv := asynq.NewServer(asynqOpt(url), asynq.Config{
		Concurrency: c, Queues: map[string]int{name: 1},
		LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("t", func(ctx context.Context, t *asynq.Task) error {
		h(t.Payload(), time.Now())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		die("asynq server: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // its processors up
	return srv
}

func asynqLatency(url, name string, n int, gap time.Duration) []float64 {
	got := make(chan float64, 1)
	srv := asynqServe(url, name, 1, func(p []byte, now time.Time) {
		ts, _ := strconv.ParseInt(string(p), 10, 64)
		got <- float64(now.UnixNano()-ts) / 1e3
	})
	defer srv.Shutdown()
	cl := asynq.NewClient(asynqOpt(url))
	defer cl.Close()
	var lat []float64
	for i := 0; i < n+warm; i++ {
		time.Sleep(gap)
		t := asynq.NewTask("t", []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
		if _, err := cl.Enqueue(t, asynq.Queue(name)); err != nil {
			die("enqueue: %v", err)
		}
		select {
		case x := <-got:
			lat = append(lat, x)
		case <-time.After(30 * time.Second):
			die("no task ran in 30 s")
		}
	}
	return lat[warm:]
}

func asynqDrain(url, name string, m, c int) map[string]interface{} {
	var k int64
	done := make(chan struct{})
	srv := asynqServe(url, name, c, func(p []byte, now time.Time) {
		if atomic.AddInt64(&k, 1) == int64(m) {
			close(done)
		}
	})
	defer srv.Shutdown()
	cl := asynq.NewClient(asynqOpt(url))
	defer cl.Close()
	t0 := time.Now()
	for i := 0; i < m; i++ {
		if _, err := cl.Enqueue(asynq.NewTask("t", nil), asynq.Queue(name)); err != nil {
			die("enqueue: %v", err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		die("%d of %d tasks ran", atomic.LoadInt64(&k), m)
	}
	secs := time.Since(t0).Seconds()
	return map[string]interface{}{"elements": m, "consumers": c,
		"secs": math.Round(secs*1000) / 1000, "elements_per_s": int64(float64(m) / secs)}
}

func asynqDelayed(url, name string, n int, delayMs float64, spacing time.Duration) []float64 {
	got := make(chan float64, n)
	srv := asynqServe(url, name, 1, func(p []byte, now time.Time) {
		due, _ := strconv.ParseInt(string(p), 10, 64)
		got <- float64(now.UnixNano()-due) / 1e6
	})
	defer srv.Shutdown()
	cl := asynq.NewClient(asynqOpt(url))
	defer cl.Close()
	d := time.Duration(delayMs * float64(time.Millisecond))
	for i := 0; i < n; i++ {
		due := time.Now().Add(d).UnixNano()
		t := asynq.NewTask("t", []byte(strconv.FormatInt(due, 10)))
		if _, err := cl.Enqueue(t, asynq.Queue(name), asynq.ProcessIn(d)); err != nil {
			die("enqueue: %v", err)
		}
		time.Sleep(spacing)
	}
	var late []float64
	for i := 0; i < n; i++ {
		select {
		case x := <-got:
			late = append(late, x)
		case <-time.After(d + 60*time.Second):
			die("%d of %d delayed tasks ran", len(late), n)
		}
	}
	return late
}
