-- luarocks make bindings/lua/hilock-scm-1.rockspec   (from the repository root)
-- Builds libhilock statically into the module (nothing else to install) with
-- CMake and SWIG; needs cmake, swig, hiredis (libhiredis-dev) and libuuid
-- (uuid-dev).
rockspec_format = "3.0"
package = "hilock"
version = "scm-1"
-- source.url and homepage: the project's chosen address (the Go module path
-- is github.com/hilock/hilock/bindings/go); luarocks make from a checkout
-- does not fetch source.url.
source = {
   url = "git+https://github.com/hilock/hilock.git",
}
description = {
   summary = "Redisson-compatible distributed locks on Redis",
   detailed = [[
Reentrant distributed locks that interoperate with Redisson (Java) and the
hilock C, Python and Go libraries: watchdog lease renewal, waiting without
polling, coroutine ownership, `local held <close> = assert(lock:acquire())`.
]],
   homepage = "https://github.com/hilock/hilock",
   license = "Apache-2.0",
   labels = { "redis", "lock", "distributed", "redisson" },
}
dependencies = {
   "lua >= 5.1",
}
external_dependencies = {
   HIREDIS = { header = "hiredis/hiredis.h" },
   UUID = { header = "uuid/uuid.h" },
}
build = {
   type = "command",
   build_command = [[
cmake -S . -B build-luarocks -DCMAKE_BUILD_TYPE=Release \
  -DHILOCK_BUILD_LUA=ON -DHILOCK_LUA_STATIC=ON -DHILOCK_LUA_INCLUDE_DIR="$(LUA_INCDIR)" \
  -DHILOCK_BUILD_TESTS=OFF -DHILOCK_BUILD_EXAMPLES=OFF -DHILOCK_BUILD_BENCH=OFF \
  -DCMAKE_INSTALL_PREFIX="$(PREFIX)" \
  -DHILOCK_LUA_LMOD="$(LUADIR)" -DHILOCK_LUA_CMOD="$(LIBDIR)" &&
cmake --build build-luarocks --target hilock_lua -j2
]],
   install_command = [[
cmake --install build-luarocks --component lua
]],
}
