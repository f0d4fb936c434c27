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
TR_DIR=$tmp
REDIS_SERVER=$redis
. "$repo/tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

tr_start || exit 2
port=$TR_PORT

export HILOCK_TEST_URL="redis://127.0.0.1:$port/0"
export HILOCK_TEST_REDIS_PORT="$port"
export HILOCK_TEST_LUA="$LUA"
export HILOCK_TEST_EXAMPLES="$repo/examples/lua"
export LUA_PATH="$mod/?.lua;$here/?.lua;;"
export LUA_CPATH="$mod/?.so;;"
export LUA_PATH_5_4="$LUA_PATH" LUA_CPATH_5_4="$LUA_CPATH"

cd "$here"
"$LUA" "$here/test_hilock.lua"
