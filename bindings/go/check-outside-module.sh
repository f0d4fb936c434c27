#!/bin/sh
# The module as a user gets it, from outside this repository, offline:
#
# 1. `go get github.com/hilock/hilock/bindings/go@v0.1.0` from a file://
#    GOPROXY holding this checkout's module zip, as from a real proxy: this
#    is what fails for a module path without a dot ("malformed module path
#    ... missing dot in first path element"), a go.mod that declares
#    another path, or a module zip without the C core (the module is the
#    repository root, github.com/hilock/hilock, so its zip holds core/ and
#    cgo compiles it);
# 2. a `replace` to this checkout (the line bindings/go/README.md shows).
#
# Each builds and runs a small program in a throwaway module. No network:
# GOPROXY is off or a local directory, no checksum database, and the module
# needs no third-party modules.
#
#   sh bindings/go/check-outside-module.sh      (make test-go runs it)
#
# Environment: GO (default go). No libhilock is needed: the default build
# compiles the core (PKG_CONFIG=false here makes sure nothing asks
# pkg-config).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
MOD=github.com/hilock/hilock
PKG=$MOD/bindings/go
VER=v0.1.0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-go-outside.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
export GOPROXY=off GOSUMDB=off GOFLAGS="-mod=mod -modcacherw" GOWORK=off GOTOOLCHAIN=local
export GOMODCACHE="$tmp/modcache" PKG_CONFIG=false
unset PKG_CONFIG_PATH

declared=$(cd "$root" && "$GO" list -m)
if [ "$declared" != "$MOD" ]; then
	echo "go: go.mod declares '$declared', not $MOD" >&2
	exit 1
fi

# The module's files as a proxy zips them from the repository: the tracked
# files (and new ones not ignored), no build tree.
mkdir "$tmp/src"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$root" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -xf - -C "$tmp/src"
else
	(cd "$root" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -xf - -C "$tmp/src"
fi

# A file:// proxy serving the module zip (paths prefixed module@version/,
# as golang.org/x/mod/zip lays them out), made by a small Go program.
mkdir -p "$tmp/zipper" "$tmp/proxy/$MOD/@v"
printf 'module zipper\n\ngo 1.19\n' >"$tmp/zipper/go.mod"
cat >"$tmp/zipper/main.go" <<'GO_EOF'
// zipper DIR MODULE@VERSION OUT.zip: the module zip of DIR (regular files;
// a subdirectory with its own go.mod is another module and is left out).
package main

import (
	"archive/zip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	dir, prefix, out := os.Args[1], os.Args[2], os.Args[3]
	f, err := os.Create(out)
	check(err)
	w := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		check(err)
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		zw, err := w.Create(prefix + "/" + filepath.ToSlash(rel))
		check(err)
		r, err := os.Open(p)
		check(err)
		_, err = io.Copy(zw, r)
		check(err)
		return r.Close()
	})
	check(err)
	check(w.Close())
	check(f.Close())
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
GO_EOF
(cd "$tmp/zipper" && "$GO" run . "$tmp/src" "$MOD@$VER" "$tmp/proxy/$MOD/@v/$VER.zip")
cp "$root/go.mod" "$tmp/proxy/$MOD/@v/$VER.mod"
echo "$VER" >"$tmp/proxy/$MOD/@v/list"
printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}\n' "$VER" >"$tmp/proxy/$MOD/@v/$VER.info"

# The program both outside modules build.
mkdir "$tmp/app-get" "$tmp/app-replace"
cat >"$tmp/app-get/main.go" <<'GO_EOF'
// A program outside the hilock repository that uses the Go binding.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

func main() {
	v := hilock.Version()
	if v == "" {
		fmt.Println("outside: empty hilock.Version()")
		os.Exit(1)
	}
	// A port nobody listens on: Connect fails with a library error that
	// does not carry the URL's password.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("outside:", err)
		os.Exit(1)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := hilock.Connect(ctx, "redis://alice:topsecret@"+addr+"/0",
		hilock.WithConnectTimeout(2*time.Second), hilock.WithRetry(0, 0))
	if err == nil {
		c.Close()
		fmt.Println("outside: Connect to a closed port succeeded")
		os.Exit(1)
	}
	var herr *hilock.Error
	if !errors.As(err, &herr) || strings.Contains(err.Error(), "topsecret") {
		fmt.Printf("outside: unexpected error %q\n", err)
		os.Exit(1)
	}
	fmt.Printf("outside: hilock %s; unreachable: %v\n", v, err)
}
GO_EOF
cp "$tmp/app-get/main.go" "$tmp/app-replace/main.go"

# 1. go get from the proxy, as a user would.
printf 'module example.com/outside\n\ngo 1.19\n' >"$tmp/app-get/go.mod"
(cd "$tmp/app-get" &&
	GOPROXY="file://$tmp/proxy" "$GO" get "$PKG@$VER" &&
	"$GO" build -o "$tmp/outside-get" .)
"$tmp/outside-get"

# 2. A replace to this checkout (as bindings/go/README.md shows).
cat >"$tmp/app-replace/go.mod" <<EOF
module example.com/outside

go 1.19

require $MOD v0.0.0

replace $MOD => $root
EOF
(cd "$tmp/app-replace" && "$GO" build -o "$tmp/outside-replace" .)
"$tmp/outside-replace"
echo "go: outside modules build and run with $PKG (go get from a proxy; replace => $root)"
