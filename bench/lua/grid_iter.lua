-- grid_iter.lua: the data grid at scale in Lua (bench/grid_iterate.py).
--
--   lua5.4 grid_iter.lua URL base
--   lua5.4 grid_iter.lua URL iter NAME COUNT
--
-- The Map's generated scan page by page through hilock._grid_scan (the
-- binding's iteration helper). One JSON line; RSS from /proc/self/status
-- (VmHWM) after connecting and at the end.
local hilock = require "hilock"

local function status_kb()
	local f = io.open("/proc/self/status")
	if not f then return -1 end
	for line in f:lines() do
		local v = line:match("^VmHWM:%s*(%d+)")
		if v then f:close(); return math.tointeger(tonumber(v)) end
	end
	f:close()
	return -1
end

-- wall time: hlfloor.now (bench/lua/hlfloor_lua.c, CLOCK_MONOTONIC), else
-- os.clock (CPU time, said in the output)
local now = os.clock
do
	local ok, hlfloor = pcall(require, "hlfloor")
	if ok then now = hlfloor.now end
end

local url, mode = arg[1], arg[2]
local client = assert(hilock.connect(url))
assert(client:map("base"):size())
if mode == "base" then
	local kb = status_kb()
	print(string.format('{"mode":"base","lang":"lua","lib":"hilock",' ..
		'"rss_base_kb":%d,"rss_peak_kb":%d}', kb, kb))
elseif mode == "iter" then
	local name, count = arg[3], math.tointeger(tonumber(arg[4]))
	local m = client:map(name)
	local base = status_kb()
	collectgarbage("collect")
	local n, nbytes = 0, 0
	local t0, c0 = now(), os.clock()
	for e in hilock._grid_scan(function(cur) return m:scan(cur, count) end) do
		n = n + 1
		nbytes = nbytes + #e[1] + #e[2]
	end
	local secs, cpu_s = now() - t0, os.clock() - c0
	print(string.format('{"mode":"iter","lang":"lua","lib":"hilock",' ..
		'"count":%d,"entries":%d,"bytes":%d,"secs":%.4f,' ..
		'"entries_per_s":%.0f,"rss_base_kb":%d,"rss_peak_kb":%d,' ..
		'"cpu_s":%.4f,"clock":"%s"}', count, n, nbytes, secs, n / secs, base,
		status_kb(), cpu_s,
		now == os.clock and "cpu" or "monotonic"))
else
	io.stderr:write("grid_iter.lua: modes base, iter\n")
	os.exit(2)
end
