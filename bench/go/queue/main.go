// The queues' Go driver (bench/grid_queue.py, `--only grid-queue`): raw
// go-redis (RPUSH + BLPOP), asynq (a job queue: an element is a task, its
// hand-off the start of the task's handler) and hilock's blocking queue
// (hilock.go; "not built" without the build tag hilock_bq, which
// grid_queue.py sets when the Go binding has Client.BlockingQueue). A
// module of its own, so asynq's go-redis does not move the other benches'.
//
//	queue URL LIB latency NAME N GAP_MS
//	queue URL LIB drain NAME M CONSUMERS
//	queue URL asynq delayed NAME N DELAY_MS SPACING_MS
//
// As bench/py/queue_bench.py: latency (one producer, one consumer waiting
// in take, a goroutine; for asynq a server of concurrency 1), drain
// (blocking queues: M elements and a stop value per consumer pushed first,
// then CONSUMERS goroutines, each with its own connection, take until their
// stop value; asynq: a server of concurrency CONSUMERS up, then M tasks
// enqueued, each an INCR, timed until the M-th ran), delayed (asynq's
// ProcessIn). Prints one JSON object.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const warm = 20

func die(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "queue: "+f+"\n", a...)
	os.Exit(1)
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// queue: one blocking queue's two calls, on connections of its own.
type queue struct {
	offer func(ctx context.Context, v []byte) error
	take  func(ctx context.Context) ([]byte, error)
	close func()
}

func rawQueue(url, name string) queue {
	opt, err := redis.ParseURL(url)
	if err != nil {
		die("%v", err)
	}
	opt.PoolSize = 1
	opt.ReadTimeout = -1 // BLPOP 0
	r := redis.NewClient(opt)
	return queue{
		offer: func(ctx context.Context, v []byte) error { return r.RPush(ctx, name, v).Err() },
		take: func(ctx context.Context) ([]byte, error) {
			x, err := r.BLPop(ctx, 0, name).Result()
			if err != nil {
				return nil, err
			}
			return []byte(x[1]), nil
		},
		close: func() { r.Close() },
	}
}

func open(url, lib, name string) queue {
	switch lib {
	case "goredis":
		return rawQueue(url, name)
	case "hilock":
		return hilockQueue(url, name)
	}
	die("unknown lib %s", lib)
	return queue{}
}

func latency(url, lib, name string, n int, gap time.Duration) []float64 {
	ctx := context.Background()
	p, c := open(url, lib, name), open(url, lib, name)
	defer p.close()
	defer c.close()
	got := make(chan float64)
	go func() {
		for i := 0; i < n+warm; i++ {
			v, err := c.take(ctx)
			if err != nil {
				die("take: %v", err)
			}
			ts, _ := strconv.ParseInt(string(v), 10, 64)
			got <- float64(time.Now().UnixNano()-ts) / 1e3
		}
	}()
	var lat []float64
	for i := 0; i < n+warm; i++ {
		time.Sleep(gap)
		if err := p.offer(ctx, []byte(strconv.FormatInt(time.Now().UnixNano(), 10))); err != nil {
			die("offer: %v", err)
		}
		select {
		case x := <-got:
			lat = append(lat, x)
		case <-time.After(30 * time.Second):
			die("the consumer took nothing in 30 s")
		}
	}
	return lat[warm:]
}

func drain(url, lib, name string, m, cons int) map[string]interface{} {
	ctx := context.Background()
	opt, _ := redis.ParseURL(url)
	r := redis.NewClient(opt)
	defer r.Close()
	r.Del(ctx, name)
	for i := 0; i < m; i += 1000 {
		pp := r.Pipeline()
		for j := i; j < i+1000 && j < m; j++ {
			pp.RPush(ctx, name, fmt.Sprintf("v%07d", j))
		}
		if _, err := pp.Exec(ctx); err != nil {
			die("rpush: %v", err)
		}
	}
	for i := 0; i < cons; i++ {
		r.RPush(ctx, name, "stop")
	}
	qs := make([]queue, cons)
	for i := range qs {
		qs[i] = open(url, lib, name)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	start := make(chan struct{})
	for i := range qs {
		wg.Add(1)
		go func(q queue) {
			defer wg.Done()
			<-start
			k := 0
			for {
				v, err := q.take(ctx)
				if err != nil {
					die("take: %v", err)
				}
				if string(v) == "stop" {
					break
				}
				k++
			}
			mu.Lock()
			taken += k
			mu.Unlock()
		}(qs[i])
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	secs := time.Since(t0).Seconds()
	for _, q := range qs {
		q.close()
	}
	if taken != m {
		die("took %d of %d", taken, m)
	}
	return map[string]interface{}{"elements": m, "consumers": cons,
		"secs": math.Round(secs*1000) / 1000, "elements_per_s": int64(float64(m) / secs)}
}

func main() {
	if len(os.Args) < 7 {
		die("usage: queue URL LIB latency|drain|delayed NAME ARG...")
	}
	url, lib, scen, name := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	a := func(i int) float64 { x, _ := strconv.ParseFloat(os.Args[5+i], 64); return x }
	out := map[string]interface{}{"lib": lib, "version": libVersion(lib)}
	if lib == "hilock" && !hilockBuilt {
		fmt.Fprintln(os.Stderr, "not built: this hilock Go binding has no Client.BlockingQueue (the kind is not built; bench/grid_queue.py sets the build tag hilock_bq when bindings/go has it)")
		os.Exit(3)
	}
	switch {
	case scen == "latency" && lib == "asynq":
		lat := asynqLatency(url, name, int(a(0)), time.Duration(a(1)*float64(time.Millisecond)))
		out["n"], out["p50_us"], out["p99_us"] = len(lat), round1(pct(lat, .5)), round1(pct(lat, .99))
	case scen == "latency":
		lat := latency(url, lib, name, int(a(0)), time.Duration(a(1)*float64(time.Millisecond)))
		out["n"], out["p50_us"], out["p99_us"] = len(lat), round1(pct(lat, .5)), round1(pct(lat, .99))
	case scen == "drain" && lib == "asynq":
		for k, v := range asynqDrain(url, name, int(a(0)), int(a(1))) {
			out[k] = v
		}
	case scen == "drain":
		for k, v := range drain(url, lib, name, int(a(0)), int(a(1))) {
			out[k] = v
		}
	case scen == "delayed" && lib == "asynq":
		late := asynqDelayed(url, name, int(a(0)), a(1), time.Duration(a(2)*float64(time.Millisecond)))
		early := 0
		minv := late[0]
		for _, x := range late {
			if x < 0 {
				early++
			}
			if x < minv {
				minv = x
			}
		}
		out["n"], out["p50_ms"], out["p99_ms"], out["min_ms"], out["early"] =
			len(late), round1(pct(late, .5)), round1(pct(late, .99)), round1(minv), early
	default:
		die("unknown scenario %s for %s", scen, lib)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
