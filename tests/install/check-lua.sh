#!/bin/sh
# Lua from a fresh clone: `luarocks make` into a tree of its own builds the
# core into the rock (no installed libhilock), then a lock is taken and
# released against a throwaway redis-server and the README's Lua quick
# start runs as pasted. A second rock is built with
# HILOCK_LINK=pkg-config against a libhilock installed into a prefix of its
# own (`cmake --install`), the system-library way.
#
#   sh tests/install/check-lua.sh          (make test-install runs it)
#
# Needs luarocks, lua5.4, liblua5.4-dev, swig, cmake and the core's -dev
# packages. Environment: LUAROCKS (default luarocks), LUA (lua5.4),
# REDIS_SERVER, REDIS_CLI.
check_name=lua
. "$(dirname "$0")/lib.sh"
LUAROCKS=${LUAROCKS:-luarocks}
LUA=${LUA:-lua5.4}
copy_repo "$work/hilock"
unset PKG_CONFIG_PATH LD_LIBRARY_PATH LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4

cat >"$work/app.lua" <<'EOF2'
local hilock = require "hilock"
local url = assert(arg[1])
local client = assert(hilock.connect(url))
local other = assert(hilock.connect(url))
local lock = client:lock("install-check")
do
  local held <close> = assert(lock:acquire())
  assert(lock:held(), "not held after acquire")
  local got = other:lock("install-check"):try_acquire()
  assert(got == false, "another client took the held lock: " .. tostring(got))
end
assert(not lock:locked(), "still locked after the scope ended")
lock:close()
other:close()
client:close()
print("app: " .. hilock._VERSION .. " took and released install-check")
EOF2

# run_rock TREE: the program with that tree's module paths.
run_rock() {
	(
		eval "$("$LUAROCKS" --lua-version 5.4 --tree "$1" path)"
		"$LUA" "$work/app.lua" "$redis_url"
	) || fail "the program against $redis_url with the rock in $1"
	assert_empty_redis
	(
		eval "$("$LUAROCKS" --lua-version 5.4 --tree "$1" path)"
		run_quickstart lua "$LUA" "$work/quickstart.lua"
	) || exit 1
}
readme_quickstart lua "$work/quickstart.lua"

say "luarocks make --tree (the rock builds the core)"
(cd "$work/hilock" && "$LUAROCKS" --lua-version 5.4 make --tree "$work/tree" \
	bindings/lua/hilock-scm-1.rockspec >"$work/luarocks.log" 2>&1) ||
	{ cat "$work/luarocks.log" >&2; fail "luarocks make"; }
mod=$(find "$work/tree" -name hilock_core.so | head -1)
[ -n "$mod" ] || fail "no hilock_core.so in the tree"
if ldd "$mod" | grep -q libhilock; then
	fail "the rock links a libhilock: $(ldd "$mod" | grep libhilock)"
fi
start_redis
run_rock "$work/tree"

say "HILOCK_LINK=pkg-config luarocks make (an installed libhilock)"
(cd "$work/hilock" &&
	cmake -S . -B "$work/core-build" -DCMAKE_BUILD_TYPE=Release -DHILOCK_BUILD_TESTS=OFF \
		-DHILOCK_BUILD_EXAMPLES=OFF -DHILOCK_BUILD_BENCH=OFF -DHILOCK_BUILD_LUA=OFF &&
	cmake --build "$work/core-build" -j2 &&
	cmake --install "$work/core-build" --prefix "$work/prefix") \
	>"$work/core.log" 2>&1 || { cat "$work/core.log" >&2; fail "installing libhilock"; }
rm -rf "$work/hilock/build-luarocks"
(cd "$work/hilock" && HILOCK_LINK=pkg-config \
	PKG_CONFIG_PATH=$(dirname "$(find "$work/prefix" -name hilock.pc | head -1)") \
	"$LUAROCKS" --lua-version 5.4 make --tree "$work/tree-system" \
	bindings/lua/hilock-scm-1.rockspec >"$work/luarocks-system.log" 2>&1) ||
	{ cat "$work/luarocks-system.log" >&2; fail "HILOCK_LINK=pkg-config luarocks make"; }
mod=$(find "$work/tree-system" -name hilock_core.so | head -1)
ldd "$mod" | grep -q "$work/prefix/.*libhilock" ||
	fail "the HILOCK_LINK=pkg-config rock does not link the installed libhilock: $(ldd "$mod" | grep hilock)"
run_rock "$work/tree-system"
say "ok"
