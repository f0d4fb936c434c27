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
REDIS_PID=""
cleanup() {
	if [ -n "$REDIS_PID" ]; then
		kill "$REDIS_PID" 2>/dev/null || true
		# Bounded wait for it to go (5 s).
		i=0
		while kill -0 "$REDIS_PID" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$REDIS_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port: bind port 0 and let the kernel choose (python3 is there
# whenever the Python binding is); otherwise pick one at random. Either way
# redis-server may still lose a race for it, so try a few times.
free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
	else
		echo $((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
	fi
}

start_redis() {
	tries=0
	while [ $tries -lt 5 ]; do
		tries=$((tries + 1))
		PORT=$(free_port)
		"$REDIS_SERVER" --port "$PORT" --bind 127.0.0.1 --save "" \
			--appendonly no --dir "$TMP" --daemonize no \
			>"$TMP/redis.log" 2>&1 &
		REDIS_PID=$!
		i=0
		while [ $i -lt 100 ]; do # 10 s at most
			if "$REDIS_CLI" -p "$PORT" ping 2>/dev/null | grep -q PONG; then
				return 0
			fi
			kill -0 "$REDIS_PID" 2>/dev/null || break
			sleep 0.1
			i=$((i + 1))
		done
		kill "$REDIS_PID" 2>/dev/null || true
		wait "$REDIS_PID" 2>/dev/null || true
		REDIS_PID=""
	done
	echo "run-demo: cannot start $REDIS_SERVER; its log:" >&2
	cat "$TMP/redis.log" >&2
	return 1
}

start_redis
export HILOCK_URL="redis://127.0.0.1:$PORT/0"
echo "run-demo: redis-server on 127.0.0.1:$PORT (pid $REDIS_PID)"
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
