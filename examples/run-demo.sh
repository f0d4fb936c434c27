#!/bin/sh
# run-demo.sh BUILD_DIR: the `make demo` show.
#
# Starts a throwaway redis-server on a free loopback port, then runs, all at
# once and all on ONE lock, three C processes and the Python, Lua and Go
# examples. Each increments a shared counter with a plain GET then SET while
# it holds the lock, ITERATIONS times. The final counter must be exactly the
# sum of all iterations: any lost update means the lock let two holders in.
#
# Environment: REDIS_SERVER (default redis-server), DEMO_ITERATIONS (20).
set -eu

BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${DEMO_ITERATIONS:-20}
LOCK=hilock:demo
COUNTER=hilock:demo:counter
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hilock-demo.XXXXXX")
TR_DIR=$TMP
. "$ROOT/tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

tr_start || { echo "run-demo: no redis-server" >&2; exit 1; }
PORT=$TR_PORT
export HILOCK_URL="redis://127.0.0.1:$PORT/0"
echo "run-demo: redis-server on 127.0.0.1:$PORT (pid $TR_PID)"
"$REDIS_CLI" -p "$PORT" set "$COUNTER" 0 >/dev/null

# Every runner is started in the background; its pid and iteration count are
# remembered so the expected total counts only what actually ran.
PIDS=""
EXPECTED=0
SKIPPED=""
launch() { # launch LABEL COUNT command...
	label=$1
	count=$2
	shift 2
	"$@" &
	PIDS="$PIDS $!:$label"
	EXPECTED=$((EXPECTED + count))
}
skip() {
	echo "run-demo: $1 skipped: $2"
	SKIPPED="$SKIPPED $1"
}

# C: three processes forked by one program; each makes its own client.
C_BIN="$BUILD/examples/c/hilock_contend"
if [ -x "$C_BIN" ]; then
	launch c $((3 * N)) "$C_BIN" "$LOCK" "$COUNTER" "$N" 3
else
	skip c "$C_BIN not built (run: make build)"
fi

# Python: the cffi binding installed in the build's virtualenv.
PY="$BUILD/venv-python/bin/python"
PY_EX="$ROOT/examples/python/contend.py"
if [ ! -f "$PY_EX" ]; then
	skip python "$PY_EX is missing"
elif [ ! -x "$PY" ]; then
	skip python "$PY is missing (the Python binding is not built)"
elif ! "$PY" -c 'import hilock' 2>/dev/null; then
	skip python "the hilock package is not installed in $BUILD/venv-python"
else
	launch python "$N" "$PY" "$PY_EX" "$LOCK" "$COUNTER" "$N"
fi

# Lua: the SWIG module built under BUILD/bindings/lua plus the Lua layer
# from the source tree.
LUA=""
for l in lua5.4 lua; do
	if command -v "$l" >/dev/null 2>&1; then LUA=$l; break; fi
done
LUA_EX="$ROOT/examples/lua/contend.lua"
LUA_SO=$(find "$BUILD/bindings/lua" -maxdepth 2 -name '*.so' 2>/dev/null | head -n 1)
if [ ! -f "$LUA_EX" ]; then
	skip lua "$LUA_EX is missing"
elif [ -z "$LUA" ]; then
	skip lua "no lua5.4 interpreter"
elif [ -z "$LUA_SO" ]; then
	skip lua "the Lua module is not built under $BUILD/bindings/lua"
else
	LUA_SO_DIR=$(dirname "$LUA_SO")
	launch lua "$N" env \
		LUA_CPATH="$LUA_SO_DIR/?.so;${LUA_CPATH:-;;}" \
		LUA_PATH="$ROOT/bindings/lua/?.lua;$ROOT/bindings/lua/?/init.lua;$LUA_SO_DIR/?.lua;${LUA_PATH:-;;}" \
		"$LUA" "$LUA_EX" "$LOCK" "$COUNTER" "$N"
fi

# Go: the example binary built by the Go makefile.
GO_BIN="$BUILD/examples/go-contend"
if [ -x "$GO_BIN" ]; then
	launch go "$N" "$GO_BIN" "$LOCK" "$COUNTER" "$N"
else
	skip go "$GO_BIN is not built"
fi

STATUS=0
for p in $PIDS; do
	pid=${p%%:*}
	label=${p#*:}
	if ! wait "$pid"; then
		echo "run-demo: the $label example failed" >&2
		STATUS=1
	fi
done

FINAL=$("$REDIS_CLI" -p "$PORT" get "$COUNTER")
echo "run-demo: final counter $FINAL, expected $EXPECTED"
if [ "$FINAL" != "$EXPECTED" ]; then
	echo "run-demo: FAILED: lost updates (or a failed example)" >&2
	exit 1
fi
if [ $STATUS -ne 0 ]; then
	echo "run-demo: FAILED: an example exited with an error" >&2
	exit 1
fi
if [ -n "$SKIPPED" ]; then
	echo "run-demo: OK (skipped:$SKIPPED)"
else
	echo "run-demo: OK, all four languages shared one lock"
fi
