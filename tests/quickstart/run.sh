#!/bin/sh
# The README's quick starts run as pasted and leave nothing behind.
#
#   sh tests/quickstart/run.sh [BUILD_DIR]     (default: build; make test-quickstart)
#
# Extracts each fenced code block of README.md that follows a marker line
# `<!-- quickstart:LANG -->` (LANG: c, python, lua, go; each must be there
# exactly once), starts a throwaway redis-server on a free loopback port,
# and runs the four programs one after the other against it, as a user
# would paste them, with HILOCK_URL set to that server:
#   c       compiled with cc against the build tree (BUILD_DIR/pkgconfig)
#   python  BUILD_DIR/venv-python/bin/python (make python-binding), or $QS_PYTHON
#   lua     lua5.4 with the module built in BUILD_DIR/bindings/lua
#   go      built in a throwaway module whose go.mod has a replace line to
#           the checkout (the environment of `make test-go`: GO, CGO_*)
# Each must exit 0 and print its "batch done" line with a true value. After
# each, the server must hold no key but hilock's request markers
# (hilock_request:..., which expire by themselves within the retry span): a
# key left behind (a semaphore, a latch, a lock) fails the test, as it would
# break the next language's run. TAP on stdout; exits non-zero on failure.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
readme=${QS_README:-$repo/README.md}
REDIS_CLI=${REDIS_CLI:-redis-cli}
GO=${GO:-go}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-quickstart.XXXXXX")
TR_DIR=$tmp
. "$repo/tools/throwaway-redis.sh"
trap 'tr_stop; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out"
	return 0
}

# Extract: the fenced block after each marker, into $tmp/qs.<lang>.
awk -v dir="$tmp" '
	/^<!-- quickstart:[a-z]+ -->[ \t]*$/ {
		lang = $0
		sub(/^<!-- quickstart:/, "", lang)
		sub(/ -->.*/, "", lang)
		want = 1
		next
	}
	want == 1 && /^```/ { want = 2; out = dir "/qs." lang; seen[lang]++; next }
	want == 1 && !/^[ \t]*$/ { printf "quickstart:%s: the marker is not followed by a code block\n", lang > "/dev/stderr"; bad = 1; want = 0 }
	want == 2 && /^```[ \t]*$/ { want = 0; close(out); next }
	want == 2 { print > out }
	END {
		split("c python lua go", all, " ")
		for (i = 1; i <= 4; i++)
			if (seen[all[i]] != 1) {
				printf "quickstart:%s: %d blocks in the README, want 1\n", all[i], seen[all[i]] + 0 > "/dev/stderr"
				bad = 1
			}
		exit bad
	}' "$readme" || { echo "Bail out! the README's quick starts are not all marked"; exit 1; }

tr_start || { echo "Bail out! no redis-server"; exit 1; }
export HILOCK_URL="redis://127.0.0.1:$TR_PORT"
echo "# redis-server on 127.0.0.1:$TR_PORT"
echo "1..8"

# No key left but hilock's request markers, each with a TTL.
check_clean() { # LANG
	left=$("$REDIS_CLI" -p "$TR_PORT" --scan | grep -v '^hilock_request:' || true)
	if [ -n "$left" ]; then
		printf '%s\n' "$left" >"$tmp/out"
		not_ok "$1 quick start leaves nothing behind (keys left: $(echo $left))"
		"$REDIS_CLI" -p "$TR_PORT" flushall >/dev/null
		return 0
	fi
	for k in $("$REDIS_CLI" -p "$TR_PORT" --scan); do
		t=$("$REDIS_CLI" -p "$TR_PORT" pttl "$k")
		if [ "$t" -le 0 ]; then
			: >"$tmp/out"
			not_ok "$1 quick start leaves nothing behind ($k has no TTL)"
			return 0
		fi
	done
	ok "$1 quick start leaves nothing behind"
}

run() { # LANG TRUE-VALUE command...
	lang=$1
	want=$2
	shift 2
	# bounded: a quick start that waits forever (a semaphore left without
	# permits by an earlier run) fails instead of hanging make test
	if (cd "$tmp" && timeout "${QS_TIMEOUT:-180}" "$@") >"$tmp/out" 2>&1 && grep -q "^batch done:[[:space:]]*$want\$" "$tmp/out"; then
		ok "$lang quick start runs as pasted"
	else
		not_ok "$lang quick start runs as pasted"
	fi
	check_clean "$lang"
}

# C, against the build tree: compiled first (a failure is reported as
# such), then run.
cc_build() {
	PKG_CONFIG_PATH="$build/pkgconfig" pkg-config --exists hilock || { echo "no hilock.pc in $build/pkgconfig"; return 1; }
	cp "$tmp/qs.c" "$tmp/quickstart.c"
	${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$tmp/qs_c" "$tmp/quickstart.c" \
		$(PKG_CONFIG_PATH="$build/pkgconfig" pkg-config --cflags --libs hilock)
}
if cc_build >"$tmp/out" 2>&1; then
	run c 1 "$tmp/qs_c"
else
	not_ok "c quick start runs as pasted (it does not compile)"
	check_clean c
fi

# Python, from the build's virtualenv.
py=${QS_PYTHON:-$build/venv-python/bin/python}
case $py in /*) ;; */*) py=$(pwd)/$py ;; esac
run python True "$py" "$tmp/qs.python"

# Lua 5.4, with the module of the build.
if command -v lua5.4 >/dev/null 2>&1; then lua=lua5.4; else lua=lua; fi
run lua true env LUA_CPATH="$build/bindings/lua/?.so;;" \
	LUA_PATH="$repo/bindings/lua/?.lua;$build/bindings/lua/?.lua;;" \
	"$lua" "$tmp/qs.lua"

# Go: a module of its own, the binding through a replace line to the
# checkout (the module is the repository root; cgo compiles the core).
mkdir -p "$tmp/go"
cp "$tmp/qs.go" "$tmp/go/main.go"
cat >"$tmp/go/go.mod" <<GO_EOF
module quickstart

go 1.19

require github.com/hilock/hilock v0.0.0

replace github.com/hilock/hilock => $repo
GO_EOF
go_build() {
	cd "$tmp/go" && GOPROXY=off GOFLAGS=-mod=mod GOWORK=off \
		PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
		"$GO" build -o "$tmp/qs_go" .
}
if (go_build) >"$tmp/out" 2>&1; then
	run go true "$tmp/qs_go"
else
	not_ok "go quick start runs as pasted (it does not build)"
	check_clean go
fi

echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
