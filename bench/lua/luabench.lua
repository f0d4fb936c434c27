-- luabench.lua: scenario (1) of `make bench` for the Lua binding.
--
--   lua5.4 luabench.lua URL uncontended SECONDS
--
-- Lock+unlock pairs on one lock, one coroutine, the binding's own idiom
-- (lock:acquire() gives a guard; guard:release()). Prints one JSON object.
-- Plain Lua has no sub-second wall clock, so the run is timed in whole
-- seconds of os.time(), starting on a second boundary.
local hilock = require "hilock"

local url, scenario, secs = arg[1], arg[2], math.ceil(tonumber(arg[3] or "3"))
if scenario ~= "uncontended" then
	io.stderr:write("luabench: only the uncontended scenario\n")
	os.exit(2)
end
local client = assert(hilock.connect(url))
local lock = client:lock("bench:lua:uncontended")

-- Warm up until a second boundary, so the window is exactly `secs` s.
local t = os.time()
while os.time() == t do
	assert(assert(lock:acquire()):release())
end
local t0, n = os.time(), 0
while os.time() < t0 + secs do
	local guard = assert(lock:acquire())
	assert(guard:release())
	n = n + 1
end
client:close()
print(string.format('{"scenario":"uncontended","lang":"lua","lib":"hilock",'
	.. '"pairs_per_s":%.1f}', n / secs))
