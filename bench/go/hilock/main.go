// The hilock side of the Go bench: the cgo binding (bindings/go), one
// Client per process, a Mutex per worker (ownership follows the Mutex).
package main

import (
	"context"
	"os"

	"github.com/hilock/hilock/bench/go/harness"

	hilock "github.com/hilock/hilock/bindings/go"
)

type locker struct{ m *hilock.Mutex }

func (l locker) Lock() error { return l.m.LockContext(context.Background()) }

func (l locker) Unlock() error { return l.m.Release() }

func main() {
	c, err := hilock.Connect(context.Background(), os.Args[1])
	if err != nil {
		panic(err)
	}
	defer c.Close()
	harness.Main("hilock", os.Args[1:], func(name string) harness.Locker {
		return locker{c.Mutex(name)}
	})
}
