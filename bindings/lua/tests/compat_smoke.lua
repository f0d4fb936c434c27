-- compat_smoke.lua: the core behaviour in syntax every Lua reads (5.1 to
-- 5.4, LuaJIT): no <close>. test_hilock.lua runs it under the tested
-- interpreter; for another one, build the module for it, e.g.
--   cmake -S . -B b51 -DHILOCK_BUILD_LUA=ON -DHILOCK_LUA_VERSION=5.1 -DHILOCK_LUA_STATIC=ON
--   cmake --build b51 --target hilock_lua
--   HILOCK_TEST_URL=redis://127.0.0.1:6379/0 LUA_PATH="b51/bindings/lua/?.lua;;" \
--     LUA_CPATH="b51/bindings/lua/?.so;;" luajit bindings/lua/tests/compat_smoke.lua
-- (LuaJIT and 5.1 use the lua5.1 headers.) Prints "smoke ok" or raises.
local hilock = require "hilock"
local url = os.getenv("HILOCK_TEST_URL")
local c = assert(hilock.connect(url, {watchdog_timeout = 1}))
local l = c:lock("hilock:lua:smoke:" .. tostring(os.time()))
local g = assert(l:acquire())
assert(l:held() and l:hold_count() == 1)
assert(l:acquire{wait = 0}); assert(l:hold_count() == 2)
assert(l:unlock()); assert(g:release()); assert(not l:locked())
local co = coroutine.create(function() assert(l:acquire()); coroutine.yield() end)
assert(coroutine.resume(co))
assert(l:locked() and not l:held())
assert(l:acquire{wait = 0} == false)
local v, msg, code = l:unlock(); assert(v == nil and code == "HL_ENOTHELD", tostring(code))
co = nil; collectgarbage(); collectgarbage()
local ok = false
for i = 1, 50 do if not l:locked() then ok = true break end os.execute("sleep 0.1") end
assert(ok, "collected coroutine's hold was not abandoned")
assert(select('#', l:with(function(a, b) assert(l:held()) return a, b end, 1, nil)) == 2)
local e = {}
local okp, err = pcall(l.with, l, function() error(e) end)
assert(not okp and err == e and not l:locked())
assert(not pcall(l.acquire, l, {wait = -1}))
c:close()
print("smoke ok", _VERSION, jit and jit.version or "")
