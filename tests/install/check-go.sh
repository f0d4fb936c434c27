#!/bin/sh
# Go from a fresh clone: a module of the user's own with a `replace` to the
# copy and a plain `go build` (cgo compiles the C core; no pkg-config, no
# installed libhilock, no LD_LIBRARY_PATH), then a lock taken and released
# against a throwaway redis-server, and the README's Go quick start built
# and run the same way.
#
#   sh tests/install/check-go.sh          (make test-install runs it)
#
# Environment: GO (default go), REDIS_SERVER, REDIS_CLI. Offline: the
# module needs no third-party modules (GOPROXY=off).
check_name=go
. "$(dirname "$0")/lib.sh"
GO=${GO:-go}
copy_repo "$work/hilock"

mkdir "$work/app"
cat >"$work/app/go.mod" <<EOF2
module example.com/app

go 1.19

require github.com/hilock/hilock v0.0.0

replace github.com/hilock/hilock => $work/hilock
EOF2
cat >"$work/app/main.go" <<'EOF2'
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := hilock.Connect(ctx, os.Args[1])
	check(err)
	defer c.Close()
	other, err := hilock.Connect(ctx, os.Args[1])
	check(err)
	defer other.Close()

	m := c.Mutex("install-check")
	check(m.LockContext(ctx))
	held, err := m.IsHeld()
	check(err)
	ok, err := other.Mutex("install-check").TryLock(ctx, 0, 0)
	check(err)
	if !held || ok {
		fmt.Fprintf(os.Stderr, "app: held=%v, another client took it too=%v\n", held, ok)
		os.Exit(1)
	}
	check(m.Release())
	locked, err := m.IsLocked()
	check(err)
	if locked {
		fmt.Fprintln(os.Stderr, "app: still locked after Release")
		os.Exit(1)
	}
	fmt.Println("app: hilock", hilock.Version(), "took and released install-check")
}
EOF2

say "go build (cgo compiles the core) in a module with replace => a copy of the checkout"
(
	cd "$work/app"
	unset PKG_CONFIG_PATH LD_LIBRARY_PATH CGO_CFLAGS CGO_LDFLAGS
	GOPROXY=off GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=1 \
		GOCACHE="$work/gocache" PKG_CONFIG=false "$GO" build -o "$work/app/app" .
) || fail "go build"
# PKG_CONFIG=false: a #cgo pkg-config line would fail the build. The binary
# carries the core: no libhilock among its libraries.
if ldd "$work/app/app" | grep -q libhilock; then
	fail "the program links a libhilock: $(ldd "$work/app/app" | grep libhilock)"
fi
start_redis
env -u LD_LIBRARY_PATH "$work/app/app" "$redis_url" || fail "the program against $redis_url"
assert_empty_redis
# The README's quick start, built the same way in a module of its own.
mkdir "$work/qs"
sed 's|^module example.com/app|module example.com/qs|' "$work/app/go.mod" >"$work/qs/go.mod"
[ -f "$work/app/go.sum" ] && cp "$work/app/go.sum" "$work/qs/"
readme_quickstart go "$work/qs/main.go"
(
	cd "$work/qs"
	unset PKG_CONFIG_PATH LD_LIBRARY_PATH CGO_CFLAGS CGO_LDFLAGS
	GOPROXY=off GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=1 \
		GOCACHE="$work/gocache" PKG_CONFIG=false "$GO" build -o "$work/qs/qs" .
) || fail "go build of the README's quick start"
run_quickstart go env -u LD_LIBRARY_PATH "$work/qs/qs"
say "ok"
