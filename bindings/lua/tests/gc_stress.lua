-- gc_stress.lua: thousands of handles that are never released, collected by
-- the garbage collector. Run under valgrind by test_hilock.lua:
--   valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite lua5.4 gc_stress.lua
-- Exits non-zero if the live-handle counters of the module do not return to
-- zero; valgrind fails it on any memory error or definite leak.
local hilock = require "hilock"
local core = hilock._core

local url = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set")
local n = tonumber(arg[1] or "2000")
local prefix = "hilock:lua:gc:" .. tostring(os.time()) .. ":" .. tostring(math.random(1e9)) .. ":"

local client = assert(hilock.connect(url, {watchdog_timeout = 5}))

-- Lock objects with a C handle each (held() creates it), dropped unreleased.
for i = 1, n do
	local lock = client:lock(prefix .. i)
	assert(lock:held() == false)
end
-- Some actually held by coroutines that are then dropped (their handles
-- abandon the hold when collected), some by the main coroutine with a
-- short lease and never released.
for i = 1, 50 do
	local co = coroutine.create(function()
		local lock = client:lock(prefix .. "co:" .. i)
		assert(lock:acquire{wait = 0})
		coroutine.yield()
	end)
	assert(coroutine.resume(co))
end
for i = 1, 50 do
	assert(client:lock(prefix .. "lease:" .. i):acquire{wait = 0, lease = 1})
end
-- Synchronizers dropped unreleased: permits held through guards, expirable
-- permits (their ids come back through a buffer the collector owns), pending
-- tasks (collected, so cancelled), failing calls (nothing leaks on the way
-- out), latch waits.
local sems = {}
for i = 1, 20 do
	local sem = client:semaphore(prefix .. "sem:" .. i)
	assert(sem:set_permits(1))
	assert(sem:acquire())
	sem:acquire_start(1)
	assert(sem:release(5) == nil)
	local xs = client:expirable_semaphore(prefix .. "xs:" .. i)
	assert(xs:set_permits(3))
	assert(xs:acquire{n = 2, lease = 5})
	xs:acquire_start(2, {lease = 5})
	assert(xs:release(string.rep("0", 32)) == nil)
	local l = client:count_down_latch(prefix .. "latch:" .. i)
	assert(l:try_set_count(1))
	l:wait_start()
	sems[#sems + 1] = sem
end
sems = nil
-- Clients never closed either.
for _ = 1, 3 do
	assert(hilock.connect(url))
end

collectgarbage("collect")
collectgarbage("collect")
-- The main coroutine's 50 held handles stay (it is alive and holds them).
local live = core.live_locks()
if live ~= 50 then
	io.stderr:write(string.format("gc_stress: %d live lock handles, expected 50\n", live))
	os.exit(1)
end
if core.live_syncs() ~= 0 or core.live_tasks() ~= 0 then
	io.stderr:write(string.format("gc_stress: %d live synchronizers and %d tasks, expected none\n",
		core.live_syncs(), core.live_tasks()))
	os.exit(1)
end
if core.live_clients() ~= 1 then
	io.stderr:write(string.format("gc_stress: %d live clients, expected 1\n", core.live_clients()))
	os.exit(1)
end
print(string.format("gc_stress: %d handles collected, %d held ones left to lua_close", n + 50, live))
-- Normal exit: lua.c closes the state, which collects (and abandons) the rest.
