// griditer: the data grid at scale in Go (bench/grid_iterate.py).
//
//	griditer URL base LIB
//	griditer URL iter LIB NAME COUNT
//	griditer URL bulk LIB NAME N SECONDS
//
// LIB hilock (the Map's generated Scan page by page, as the binding's
// scanAll does; GetAll and Get) or goredis (go-redis v9:
// HScan(...).Iterator() (COUNT 0: left out, the server's 10), HGetAll
// with COUNT "all", HMGet, HGet). One JSON line;
// RSS from /proc/self/status (VmHWM) after connecting and at the end.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
	"github.com/redis/go-redis/v9"
)

func die(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "griditer: "+f+"\n", a...)
	os.Exit(1)
}

func statusKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmHWM:") {
			v, _ := strconv.ParseInt(strings.Fields(s.Text())[1], 10, 64)
			return v
		}
	}
	return -1
}

// cpuSecs is this process's CPU time (every thread), user and system.
func cpuSecs() float64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return float64(u.Utime.Sec+u.Stime.Sec) + float64(u.Utime.Usec+u.Stime.Usec)/1e6
}

func timed(secs float64, fn func()) float64 {
	k, t0 := 0, time.Now()
	for {
		fn()
		k++
		el := time.Since(t0).Seconds()
		if el >= secs && k >= 3 {
			return el / float64(k)
		}
	}
}

func main() {
	if len(os.Args) < 4 {
		die("usage: griditer URL base|iter|bulk LIB ...")
	}
	url, mode, lib := os.Args[1], os.Args[2], os.Args[3]
	ctx := context.Background()
	var hl *hilock.Client
	var rdb *redis.Client
	if lib == "hilock" {
		c, err := hilock.Connect(ctx, url)
		if err != nil {
			die("%v", err)
		}
		defer c.Close()
		hl = c
		if _, err := hl.Map("base").Size(ctx); err != nil {
			die("%v", err)
		}
	} else {
		opt, err := redis.ParseURL(url)
		if err != nil {
			die("%v", err)
		}
		opt.ReadTimeout = time.Minute // HGETALL of the whole map
		rdb = redis.NewClient(opt)
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			die("%v", err)
		}
	}
	out := map[string]interface{}{"mode": mode, "lang": "go", "lib": lib}
	switch mode {
	case "base":
		out["rss_base_kb"], out["rss_peak_kb"] = statusKB(), statusKB()
	case "iter":
		name := os.Args[4]
		count, _ := strconv.ParseInt(os.Args[5], 10, 64)
		all := os.Args[5] == "all"
		base := statusKB()
		n, nbytes := 0, 0
		t0, c0 := time.Now(), cpuSecs()
		if lib == "hilock" {
			m := hl.Map(name)
			cursor := []byte("0")
			for {
				next, page, err := m.Scan(ctx, cursor, count, nil)
				if err != nil {
					die("%v", err)
				}
				for _, e := range page {
					n++
					nbytes += len(e.Key) + len(e.Value)
				}
				if string(next) == "0" {
					break
				}
				cursor = next
			}
		} else if all {
			all, err := rdb.HGetAll(ctx, name).Result()
			if err != nil {
				die("%v", err)
			}
			for k, v := range all {
				n++
				nbytes += len(k) + len(v)
			}
		} else {
			it := rdb.HScan(ctx, name, 0, "", count).Iterator()
			for it.Next(ctx) {
				k := it.Val()
				if !it.Next(ctx) {
					break
				}
				n++
				nbytes += len(k) + len(it.Val())
			}
			if err := it.Err(); err != nil {
				die("%v", err)
			}
		}
		secs := time.Since(t0).Seconds()
		out["cpu_s"] = cpuSecs() - c0
		out["count"], out["entries"], out["bytes"] = count, n, nbytes
		out["secs"], out["entries_per_s"] = secs, float64(n)/secs
		out["rss_base_kb"], out["rss_peak_kb"] = base, statusKB()
	case "bulk":
		name := os.Args[4]
		n, _ := strconv.Atoi(os.Args[5])
		secs, _ := strconv.ParseFloat(os.Args[6], 64)
		keys := make([][]byte, n)
		skeys := make([]string, n)
		for i := range keys {
			skeys[i] = fmt.Sprintf("field:%d", (i*97)%1000000)
			keys[i] = []byte(skeys[i])
		}
		var batch, singles func()
		if lib == "hilock" {
			m := hl.Map(name)
			batch = func() {
				all, err := m.GetAll(ctx, keys...)
				if err != nil || len(all) != n {
					die("GetAll: %v (%d entries)", err, len(all))
				}
			}
			singles = func() {
				for _, k := range keys {
					if _, err := m.Get(ctx, k); err != nil {
						die("Get: %v", err)
					}
				}
			}
		} else {
			batch = func() {
				if err := rdb.HMGet(ctx, name, skeys...).Err(); err != nil {
					die("HMGet: %v", err)
				}
			}
			singles = func() {
				for _, k := range skeys {
					if err := rdb.HGet(ctx, name, k).Err(); err != nil {
						die("HGet: %v", err)
					}
				}
			}
		}
		out["n"] = n
		out["batch_us"] = timed(secs, batch) * 1e6
		out["singles_us"] = timed(secs, singles) * 1e6
	default:
		die("unknown mode %s", mode)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
