#!/bin/sh
# Run the Lua binding's tests against a throwaway redis-server.
#
#   sh bindings/lua/tests/run-tests.sh [BUILD_DIR]      (default: build)
#
# Starts redis-server ($REDIS_SERVER, else the one on PATH) on a free
# 127.0.0.1 port in a temporary directory, exports HILOCK_TEST_URL, LUA_PATH
# and LUA_CPATH for the module built in BUILD_DIR/bindings/lua, runs
# test_hilock.lua (TAP on stdout, ending "N passed, N failed") and stops the
# server. Exits non-zero when a test fails. Environment:
#   LUA            the interpreter (default lua5.4, else lua)
#   HILOCK_TEST_NO_VALGRIND=1   skip the valgrind test
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
repo=$(cd "$src/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
mod="$build/bindings/lua"

if [ ! -f "$mod/hilock_core.so" ]; then
	echo "run-tests: $mod/hilock_core.so not found (build with -DHILOCK_BUILD_LUA=ON)" >&2
	exit 2
fi
if [ -z "${LUA:-}" ]; then
	if command -v lua5.4 >/dev/null 2>&1; then LUA=lua5.4; else LUA=lua; fi
fi
redis=${REDIS_SERVER:-redis-server}
command -v "$redis" >/dev/null 2>&1 || { echo "run-tests: $redis not found" >&2; exit 2; }
command -v redis-cli >/dev/null 2>&1 || { echo "run-tests: redis-cli not found (redis-tools)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-lua-test.XXXXXX")
pid=""
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port (bound port 0 in the helper); retry if someone takes it first.
port=""
attempt=0
while [ $attempt -lt 10 ]; do
	attempt=$((attempt + 1))
	p=$("$mod/tests/hilock_lua_freeport")
	"$redis" --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$tmp" --logfile "$tmp/redis.log" --daemonize no >/dev/null 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 100 ]; do
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		if [ "$(redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = "PONG" ]; then
			port=$p
			break
		fi
		sleep 0.05
		i=$((i + 1))
	done
	[ -n "$port" ] && break
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
done
if [ -z "$port" ]; then
	echo "run-tests: could not start $redis" >&2
	cat "$tmp/redis.log" >&2 2>/dev/null || true
	exit 2
fi

export HILOCK_TEST_URL="redis://127.0.0.1:$port/0"
export HILOCK_TEST_REDIS_PORT="$port"
export HILOCK_TEST_LUA="$LUA"
export HILOCK_TEST_EXAMPLES="$repo/examples/lua"
export LUA_PATH="$mod/?.lua;$here/?.lua;;"
export LUA_CPATH="$mod/?.so;;"
export LUA_PATH_5_4="$LUA_PATH" LUA_CPATH_5_4="$LUA_CPATH"

cd "$here"
"$LUA" "$here/test_hilock.lua"
