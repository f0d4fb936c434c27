-- luabench.lua: scenario (1) of `make bench` for the Lua binding.
--
--   lua5.4 luabench.lua URL uncontended SECONDS
--   lua5.4 luabench.lua URL paired SECONDS
--   lua5.4 luabench.lua URL grid SECONDS FLOORFILE KIND NAME OP N ARG...
--
-- Lock+unlock pairs on one lock, one coroutine, the binding's own idiom
-- (lock:acquire() gives a guard; guard:release()). Prints one JSON object.
-- uncontended: plain Lua has no sub-second wall clock, so the run is timed
-- in whole seconds of os.time(), starting on a second boundary.
-- paired: the pairs in 5 ms slices that alternate, in this process, with
-- slices of the raw-hiredis floor (the Lua module hlfloor over the C floor
-- of bench/floor.c, built with the Lua binding into bench/lua of the build
-- tree, which also gives the clock), after 300 ms of each to warm up: both
-- see the same load, as hlbench's paired scenario for C.
-- grid: one operation of the data grid (the last OP group; those before
-- it set up) through the binding's method, in 5 ms slices alternating
-- with its floor: FLOORFILE (the commands hilock sent for it) replayed by
-- the C floor (hlfloor.cmds), and with the crossing: the floor's round
-- called once per operation from Lua (hlfloor's once), which is what a
-- call into C costs without hilock. ARG as bench/hlbench.c takes them.
local hilock = require "hilock"

local url, scenario, secs = arg[1], arg[2], tonumber(arg[3] or "3")
if scenario ~= "uncontended" and scenario ~= "paired" and scenario ~= "grid" then
	io.stderr:write("luabench: scenarios: uncontended, paired, grid\n")
	os.exit(2)
end
local client = assert(hilock.connect(url))

if scenario == "grid" then
	local hlfloor = require "hlfloor"
	local now = hlfloor.now
	local floor = assert(hlfloor.cmds(url, arg[4]))
	local kind, name = arg[5], arg[6]
	local obj = client[kind](client, name)
	local ops, i = {}, 7
	while arg[i] do
		local op, n, a = arg[i], tonumber(arg[i + 1]), {}
		for j = 1, n do
			local s = arg[i + 1 + j]
			local t, v = s:sub(1, 1), s:sub(3)
			if s == "-" then a[j] = nil
			elseif t == "b" then a[j] = v
			elseif t == "x" then a[j] = (v:gsub("..", function(h)
				return string.char(tonumber(h, 16)) end))
			elseif t == "i" then a[j] = math.tointeger(tonumber(v))
			elseif t == "f" then a[j] = tonumber(v) + 0.0
			elseif t == "m" then a[j] = v -- a rate limiter's mode by name
			elseif t == "s" then a[j] = tonumber(v) -- seconds
			else error("bad grid argument " .. s) end
		end
		ops[#ops + 1] = {op = op, n = n, a = a}
		i = i + 2 + n
	end
	local function run(o)
		local fn = obj[o.op]
		local r, err = fn(obj, table.unpack(o.a, 1, o.n))
		if r == nil and err then error(err) end
	end
	for k = 1, #ops - 1 do run(ops[k]) end
	local o = ops[#ops]
	local fn, a, n = obj[o.op], o.a, o.n
	-- the method called as a program calls it: up to three arguments in
	-- locals, no table.unpack in the loop
	local a1, a2, a3 = a[1], a[2], a[3]
	-- the crossing: the floor's round on a connection of its own, one
	-- call from Lua a round (what calling C costs, without hilock)
	local cross = assert(hlfloor.cmds(url, arg[4]))
	-- calls for s seconds: hilock's, or with x the crossing's
	local function ops_for(s, x)
		local t0 = now()
		local stop, c, t = t0 + s, 0, t0
		while true do
			t = now()
			if t >= stop then return c, t - t0 end
			if x then
				x:once()
			else
				local r, err
				if n == 0 then r, err = fn(obj)
				elseif n == 1 then r, err = fn(obj, a1)
				elseif n == 2 then r, err = fn(obj, a1, a2)
				elseif n == 3 then r, err = fn(obj, a1, a2, a3)
				else r, err = fn(obj, table.unpack(a, 1, n)) end
				if r == nil and err then error(err) end
			end
			c = c + 1
		end
	end
	floor:run(0.3)
	ops_for(0.3)
	ops_for(0.3, cross)
	-- cf, ch, cx: the process's CPU time (os.clock) in each
	local nf, tf, nh, th, nx, tx, cf, ch, cx = 0, 0, 0, 0, 0, 0, 0, 0, 0
	local stop = now() + secs
	while now() < stop do
		local c0 = os.clock()
		-- 5 ms slices, as bench/hlbench.c GRID_SLICE_NS
		local c, el = floor:run(0.005)
		nf, tf = nf + c, tf + el
		cf = cf + os.clock() - c0
		c0 = os.clock()
		c, el = ops_for(0.005)
		nh, th = nh + c, th + el
		ch = ch + os.clock() - c0
		c0 = os.clock()
		c, el = ops_for(0.005, cross)
		nx, tx = nx + c, tx + el
		cx = cx + os.clock() - c0
	end
	floor:close()
	cross:close()
	client:close()
	print(string.format('{"scenario":"grid","lang":"lua","lib":"hilock",'
		.. '"kind":"%s","op":"%s","floor_ops_per_s":%.1f,"ops_per_s":%.1f,'
		.. '"floor_cpu_us":%.2f,"cpu_us":%.2f,'
		.. '"cross_ops_per_s":%.1f,"cross_cpu_us":%.2f}',
		kind, o.op, nf / tf, nh / th, cf / nf * 1e6, ch / nh * 1e6,
		nx / tx, cx / nx * 1e6))
	return
end

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
		local n, el = floor:run(0.005)
		nf, tf = nf + n, tf + el
		n, el = pairs_for(0.005)
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
