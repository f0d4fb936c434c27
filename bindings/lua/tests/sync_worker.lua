-- A worker process for the synchronizer tests of test_sync.lua.
--
--   lua5.4 sync_worker.lua URL MODE NAME ARG...
--
-- MODE
--   sem GATE LOG ITERS TAG N HOW   say "ready", wait for the latch GATE to
--        open, then ITERS times take N permits of the semaphore NAME (HOW:
--        "block" with acquire, "task" with acquire_start and task:wait), append
--        "enter N TAG" and "leave N TAG" to LOG around a 20 ms critical
--        section, give them back through the guard's <close>. Last, say
--        "held <permits this client still holds>". Exits non-zero on a failure.
--   xhold LEASE                    take one permit of the expirable semaphore
--        NAME with a lease of LEASE seconds, say "held <id>", then wait
--        (for a kill -9) at most 60 s.
--   countdown                      count the latch NAME down once; say
--        "left <count>".
--   latchwait TIMEOUT              say "waiting", wait for the latch NAME at
--        most TIMEOUT seconds (blocking), say "open" or "timeout".
local hilock = require "hilock"

local url, mode, name = arg[1], arg[2], arg[3]

local function say(...)
	io.write(table.concat({...}, " "), "\n")
	io.stdout:flush()
end

local function fail(what, msg, code)
	io.stderr:write(what, ": ", tostring(msg), " ", tostring(code), "\n")
	os.exit(3)
end

local function append(path, line)
	local f = assert(io.open(path, "a"))
	f:write(line, "\n")
	f:close()
end

local c = assert(hilock.connect(url))
-- A sleep without a child process: the client's task fd is not readable
-- while no task of this client completed, so poll just times out.
local function pause(s) hilock.poll(assert(c:task_fd()), s) end

if mode == "sem" then
	local gate, log, iters, tag, n, how = arg[4], arg[5], tonumber(arg[6]), arg[7],
		tonumber(arg[8]), arg[9]
	local sem = c:semaphore(name)
	say("ready")
	local open, msg, code = c:count_down_latch(gate):wait(60)
	if not open then fail("gate", msg, code) end
	for _ = 1, iters do
		local g
		if how == "task" then
			local t = assert(sem:acquire_start(n, {wait = 60}))
			if not t:wait(70) then fail("task", "not done", "") end
			g, msg, code = t:result()
			t:close()
		else
			g, msg, code = sem:acquire(n, {wait = 60})
		end
		if not g then fail("acquire", msg, code) end
		do
			local held <close> = g
			append(log, "enter " .. n .. " " .. tag)
			pause(0.02)
			append(log, "leave " .. n .. " " .. tag)
		end
		if not g:released() then fail("guard", "not released by <close>", "") end
	end
	say("held", tostring(sem:held_permits()))
elseif mode == "xhold" then
	local lease = tonumber(arg[4])
	local xs = c:expirable_semaphore(name)
	local g, ids = xs:acquire{lease = lease, wait = 30}
	if not g then fail("acquire", ids, "") end
	say("held", ids[1])
	pause(60)
	os.exit(4) -- should have been killed
elseif mode == "countdown" then
	local left, msg, code = c:count_down_latch(name):count_down()
	if not left then fail("count_down", msg, code) end
	say("left", tostring(left))
elseif mode == "latchwait" then
	local timeout = tonumber(arg[4])
	say("waiting")
	local open, msg, code = c:count_down_latch(name):wait(timeout)
	if open == nil then fail("wait", msg, code) end
	say(open and "open" or "timeout")
else
	error("unknown mode " .. tostring(mode))
end
c:close()
