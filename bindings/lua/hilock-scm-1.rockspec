-- luarocks --lua-version 5.4 make bindings/lua/hilock-scm-1.rockspec
--   (from the repository root). Lua 5.4 only: Debian's luarocks targets 5.1
--   unless told otherwise, and a module built for 5.1 fails in lua5.4 with
--   "undefined symbol: lua_pcall".
-- Builds libhilock statically into the module (nothing else to install) with
-- CMake and SWIG; needs cmake, swig, hiredis (libhiredis-dev), libuuid
-- (uuid-dev) and OpenSSL (libssl-dev). The module is linked with -z nodelete: Lua unloads C modules
-- when a state closes, and libhilock registers a thread-exit destructor.
-- HILOCK_LINK=pkg-config in the environment links an installed libhilock
-- instead (found with pkg-config: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig).
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
polling, coroutine ownership, `local held <close> = assert(lock:acquire())`;
one server, Sentinel (failovers followed), Cluster and master-replica
deployments, over TLS too.
]],
   homepage = "https://github.com/hilock/hilock",
   license = "Apache-2.0",
   labels = { "redis", "lock", "distributed", "redisson", "sentinel", "cluster" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
external_dependencies = {
   HIREDIS = { header = "hiredis/hiredis.h" },
   UUID = { header = "uuid/uuid.h" },
   OPENSSL = { header = "openssl/ssl.h" },
}
build = {
   type = "command",
   build_command = [[
cmake -S . -B build-luarocks -DCMAKE_BUILD_TYPE=Release \
  -DHILOCK_BUILD_LUA=ON -DHILOCK_LUA_VERSION=5.4 -DHILOCK_LUA_STATIC=ON \
  -DHILOCK_LUA_SYSTEM=$(if [ "${HILOCK_LINK:-static}" = pkg-config ]; then echo ON; else echo OFF; fi) \
  -DHILOCK_LUA_INCLUDE_DIR="$(LUA_INCDIR)" \
  -DCMAKE_MODULE_LINKER_FLAGS="-Wl,-z,nodelete" \
  -DHILOCK_BUILD_TESTS=OFF -DHILOCK_BUILD_EXAMPLES=OFF -DHILOCK_BUILD_BENCH=OFF \
  -DCMAKE_INSTALL_PREFIX="$(PREFIX)" \
  -DHILOCK_LUA_LMOD="$(LUADIR)" -DHILOCK_LUA_CMOD="$(LIBDIR)" &&
cmake --build build-luarocks --target hilock_lua -j2
]],
   install_command = [[
cmake --install build-luarocks --component lua
]],
}
