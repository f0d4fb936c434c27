-- luabench.lua: scenario (1) of `make bench` for the Lua binding.
--
--   lua5.4 luabench.lua URL uncontended SECONDS
--   lua5.4 luabench.lua URL paired SECONDS
--
-- Lock+unlock pairs on one lock, one coroutine, the binding's own idiom
-- (lock:acquire() gives a guard; guard:release()). Prints one JSON object.
-- uncontended: plain Lua has no sub-second wall clock, so the run is timed
-- in whole seconds of os.time(), starting on a second boundary.
-- paired: the pairs in 100 ms slices that alternate, in this process, with
-- slices of the raw-hiredis floor (the Lua module hlfloor over the C floor
-- of bench/floor.c, built with the Lua binding into bench/lua of the build
-- tree, which also gives the clock), after 300 ms of each to warm up: both
-- see the same load, as hlbench's paired scenario for C.
local hilock = require "hilock"

local url, scenario, secs = arg[1], arg[2], tonumber(arg[3] or "3")
if scenario ~= "uncontended" and scenario ~= "paired" then
	io.stderr:write("luabench: scenarios: uncontended, paired\n")
	os.exit(2)
end
local client = assert(hilock.connect(url))

if scenario == "paired" then
	local hlfloor = require "hlfloor"
	local now = hlfloor.now
	local name = "bench:lua:paired"
	local floor = assert(hlfloor.open(url, name))
	local lock = client:lock(name)
	local function pairs_for(s)
		local t0 = now()
		local stop, n, t = t0 + s, 0, t0
		while true do
			t = now()
			if t >= stop then return n, t - t0 end
			local guard = assert(lock:acquire())
			assert(guard:release())
			n = n + 1
		end
	end
	floor:run(0.3)
	pairs_for(0.3)
	local nf, tf, nh, th = 0, 0, 0, 0
	local stop = now() + secs
	while now() < stop do
		local n, el = floor:run(0.1)
		nf, tf = nf + n, tf + el
		n, el = pairs_for(0.1)
		nh, th = nh + n, th + el
	end
	floor:close()
	client:close()
	print(string.format('{"scenario":"paired","lang":"lua","lib":"hilock",'
		.. '"floor_pairs_per_s":%.1f,"hilock_pairs_per_s":%.1f}', nf / tf, nh / th))
	return
end

secs = math.ceil(secs)
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
