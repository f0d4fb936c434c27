// Command goqueue is the Go worker of the cross-language queue test
// (tests/crosslang/queue_run.py, `make test-crosslang`):
//
//	goqueue produce URL KIND QUEUE OUT TAG COUNT PAUSE_MS
//	goqueue consume URL KIND QUEUE OUT TAG STOPFILE SECONDS
//
// KIND is "queue" (c.BlockingQueue) or "bounded" (c.BoundedBlockingQueue).
// A producer puts COUNT distinct elements "TAG-<pid>-<i>" (pausing PAUSE_MS
// between them) and appends each to OUT once its put returned. A consumer
// (lease 3 s, command timeout 1 s) polls with a 0.5 s timeout and appends
// each element it got to OUT; it stops after an empty poll once STOPFILE
// exists (exit 0), or after SECONDS (exit 1). Errors of the wire are
// counted and the loop goes on.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

var tag string

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "goqueue %s: %s: %v\n", tag, what, err)
	os.Exit(1)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail("out", err)
	}
	if _, err := f.Write([]byte(line + "\n")); err != nil { // one write
		fail("out", err)
	}
	f.Close()
}

type queue interface {
	PollTimeout(ctx context.Context, timeout time.Duration) ([]byte, error)
}

func main() {
	if len(os.Args) != 9 {
		fmt.Fprintln(os.Stderr, "usage: goqueue produce|consume URL KIND QUEUE OUT TAG COUNT|STOPFILE PAUSE_MS|SECONDS")
		os.Exit(2)
	}
	role, url, kind, name, out := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	tag = os.Args[6]
	ctx := context.Background()
	var opts []hilock.Option
	if role == "consume" {
		opts = append(opts, hilock.WithWatchdogTimeout(3*time.Second),
			hilock.WithCommandTimeout(time.Second), hilock.WithRetry(4, 200*time.Millisecond))
	}
	c, err := hilock.Connect(ctx, url, opts...)
	if err != nil {
		fail("connect", err)
	}
	defer c.Close()
	var q queue
	var put func([]byte) error
	if kind == "bounded" {
		b := c.BoundedBlockingQueue(name)
		q, put = b, func(v []byte) error { return b.Put(ctx, v) }
	} else {
		b := c.BlockingQueue(name)
		q, put = b, func(v []byte) error { return b.Put(ctx, v) }
	}
	if role == "produce" {
		count, _ := strconv.Atoi(os.Args[7])
		pause, _ := strconv.Atoi(os.Args[8])
		for i := 0; i < count; i++ {
			v := fmt.Sprintf("%s-%d-%d", tag, os.Getpid(), i)
			if err := put([]byte(v)); err != nil {
				fail("put", err)
			}
			appendLine(out, v)
			time.Sleep(time.Duration(pause) * time.Millisecond)
		}
		return
	}
	stop := os.Args[7]
	seconds, _ := strconv.Atoi(os.Args[8])
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	errors := 0
	for time.Now().Before(end) {
		v, err := q.PollTimeout(ctx, 500*time.Millisecond)
		if err != nil {
			if errors++; errors > 200 {
				fail("poll (too many errors)", err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if v != nil {
			appendLine(out, string(v))
		} else if _, err := os.Stat(stop); err == nil {
			return
		}
	}
	fail("consume", fmt.Errorf("no stop file in %d s", seconds))
}
