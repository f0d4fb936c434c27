-- The Lua worker of the cross-language synchronizer test (run.py):
--
--   lua5.4 worker.lua URL SEM LATCH LOG TAG WORKERS SECONDS
--
-- One Lua state runs WORKERS workers as started operations (the waits are
-- records in the client, not threads): for SECONDS each takes one permit of
-- the semaphore SEM (at most 10 s), appends "enter TAG-i" to LOG, makes one
-- round trip, appends "leave TAG-i" and gives the permit back. A latch wait
-- for LATCH runs meanwhile. Then it counts LATCH down once ("countdown TAG
-- <ms before> <ms after>") and appends "woke TAG <ms>" once the latch opened
-- for its wait. Times are wall-clock ms. Exits 0 when everything worked.
local hilock = require "hilock"

local url, sem_name, latch_name, log, tag = arg[1], arg[2], arg[3], arg[4], arg[5]
local nworkers, seconds = tonumber(arg[6]), tonumber(arg[7])

local function fail(what, msg, code)
	io.stderr:write("worker.lua ", tag, ": ", what, ": ", tostring(msg), " ",
		tostring(code), "\n")
	os.exit(1)
end

local function append(line)
	local f = assert(io.open(log, "a"))
	f:setvbuf("no") -- one write per line, O_APPEND: lines never mix
	f:write(line .. "\n")
	f:close()
end

local function wall_ms()
	local p = assert(io.popen("date +%s%3N"))
	local v = tonumber(p:read("l"))
	p:close()
	return v
end

local c = assert(hilock.connect(url))
local sem = c:semaphore(sem_name)
local latch = c:count_down_latch(latch_name)
local latch_wait = assert(latch:wait_start(60))

local function start_acquire()
	local t, msg, code = sem:acquire_start(1, 10)
	if not t then fail("acquire_start", msg, code) end
	return t
end

local tasks, sections = {}, {}
for i = 1, nworkers do
	tasks[i] = start_acquire()
	sections[i] = 0
end
local deadline = os.time() + seconds
local active = nworkers
while active > 0 do
	local progressed, pending = false, nil
	for i = 1, nworkers do
		local t = tasks[i]
		if t and t:done() then
			local g, msg, code = t:result()
			if not g then fail("acquire " .. i, msg or "no permit in 10 s", code) end
			t:close()
			append("enter " .. tag .. "-" .. i)
			local n, emsg, ecode = sem:available_permits()
			if not n then fail("available_permits", emsg, ecode) end
			append("leave " .. tag .. "-" .. i)
			local ok, rmsg, rcode = g:release()
			if not ok then fail("release", rmsg, rcode) end
			sections[i] = sections[i] + 1
			progressed = true
			if os.time() < deadline then
				tasks[i] = start_acquire()
			else
				tasks[i] = nil
				active = active - 1
			end
		elseif t then
			pending = pending or t
		end
	end
	if not progressed and pending then pending:wait(0.05) end
end
for i = 1, nworkers do
	if sections[i] == 0 then fail("worker " .. i, "no section") end
end

local before = wall_ms()
local left, msg, code = latch:count_down()
if not left then fail("count_down", msg, code) end
append(string.format("countdown %s %d %d", tag, before, wall_ms()))
if not latch_wait:wait(60) then fail("latch", "no answer within 60 s") end
local open, lmsg, lcode = latch_wait:result()
if open ~= true then fail("latch", lmsg or "did not open", lcode) end
append(string.format("woke %s %d", tag, wall_ms()))
latch_wait:close()
c:close()
os.exit(0)
