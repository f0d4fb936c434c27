-- The Lua worker of the cross-language queue test (queue_run.py):
--
--   lua5.4 qworker.lua produce URL KIND QUEUE OUT TAG COUNT PAUSE_MS
--   lua5.4 qworker.lua consume URL KIND QUEUE OUT TAG STOPFILE SECONDS
--
-- KIND is "queue" (client:blocking_queue) or "bounded"
-- (client:bounded_blocking_queue). A producer puts COUNT distinct elements
-- "TAG-<pid>-<i>" (pausing PAUSE_MS between them) and appends each to OUT
-- once its put returned. A consumer (lease 3 s, command timeout 1 s) polls
-- with a 0.5 s timeout and appends each element it got to OUT; it stops
-- after an empty poll once STOPFILE exists (exit 0), or after SECONDS
-- (exit 1). Errors of the wire are counted and the loop goes on.
local hilock = require "hilock"

local role, url, kind, name, out, tag = arg[1], arg[2], arg[3], arg[4], arg[5], arg[6]

local function fail(what, msg, code)
	io.stderr:write("qworker.lua ", tag, ": ", what, ": ", tostring(msg), " ",
		tostring(code), "\n")
	os.exit(1)
end

local function append(line)
	local f = assert(io.open(out, "a"))
	f:setvbuf("no") -- one write per line, O_APPEND: lines never mix
	f:write(line .. "\n")
	f:close()
end

local function pid()
	local f = assert(io.open("/proc/self/stat"))
	local s = f:read("l")
	f:close()
	return s:match("^(%d+)")
end

local function exists(path)
	local f = io.open(path)
	if f then f:close() return true end
	return false
end

local function queue_of(c)
	if kind == "bounded" then return c:bounded_blocking_queue(name) end
	return c:blocking_queue(name)
end

if role == "produce" then
	local count, pause = tonumber(arg[7]), tonumber(arg[8])
	local c = assert(hilock.connect(url))
	local q = queue_of(c)
	local me = pid()
	for i = 0, count - 1 do
		local v = tag .. "-" .. me .. "-" .. i
		local ok, msg, code = q:put(v)
		if not ok then fail("put", msg, code) end
		append(v)
		if pause > 0 then os.execute("sleep " .. pause / 1000) end
	end
	c:close()
	os.exit(0)
end

local stop, seconds = arg[7], tonumber(arg[8])
local c = assert(hilock.connect(url, {watchdog_timeout = 3, command_timeout = 1,
	retry_delay = 0.2}))
local q = queue_of(c)
local t0 = os.time()
local errors = 0
while os.time() - t0 < seconds do
	local v, msg, code = q:poll(0.5)
	if v ~= nil then
		append(v)
	elseif msg ~= nil then
		errors = errors + 1
		if errors > 200 then fail("poll (too many errors)", msg, code) end
	elseif exists(stop) then
		c:close()
		os.exit(0)
	end
end
fail("consume", "no stop file in " .. seconds .. " s", "")
