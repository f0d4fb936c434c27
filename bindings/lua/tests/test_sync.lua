-- Tests of the synchronizers (client:semaphore, client:expirable_semaphore,
-- client:count_down_latch), against the redis-server started by
-- run-tests.sh (HILOCK_TEST_URL). Worker processes run sync_worker.lua.
-- Prints TAP and "N passed, N failed"; exits non-zero if any test failed.
local hilock = require "hilock"
local core = hilock._core

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"))
local LUA = os.getenv("HILOCK_TEST_LUA") or "lua5.4"
local HERE = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:sync:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

-- helpers --------------------------------------------------------------------

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	local ok = p:close()
	return out, ok
end
local function redis(...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. PORT
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return ((sh(cmd .. " 2>&1")):gsub("\n$", ""))
end
local function now() return tonumber((sh("date +%s.%N"))) end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end
local function check(cond, what)
	if not cond then error(what or "check failed", 2) end
end
local function raises(pattern, f, ...)
	local ok, err = pcall(f, ...)
	if ok then error("expected an error matching '" .. pattern .. "'", 2) end
	if not tostring(err):match(pattern) then
		error("error '" .. tostring(err) .. "' does not match '" .. pattern .. "'", 2)
	end
end
-- Runtime failure triple: nil, message (string), code.
local function fails(code, v, msg, c)
	if v ~= nil then error("expected nil, message, code; got " .. tostring(v), 2) end
	if type(msg) ~= "string" or msg == "" then error("no message", 2) end
	if c ~= code then error("expected code " .. code .. ", got " .. tostring(c) .. " (" .. msg .. ")", 2) end
end

-- The process's thread count, as the kernel has it.
local function threads()
	local f = assert(io.open("/proc/self/status"))
	local s = f:read("a")
	f:close()
	return tonumber(s:match("Threads:%s*(%d+)"))
end

local function worker(...)
	local cmd = LUA .. " " .. shq(HERE .. "/sync_worker.lua") .. " " .. shq(URL)
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return cmd
end

local function tmpfile()
	local path = os.tmpname()
	local f = assert(io.open(path, "w"))
	f:close()
	return path
end

local function read_lines(path)
	local lines = {}
	for line in io.lines(path) do lines[#lines + 1] = line end
	return lines
end

-- Replay an enter/leave log of permits ("enter N TAG"): the most permits out
-- at once; raises when that ever exceeds limit.
local function replay(lines, limit)
	local out, most, sections = 0, 0, 0
	for _, line in ipairs(lines) do
		local what, n = line:match("^(%a+) (%d+)")
		n = tonumber(n)
		if what == "enter" then
			out = out + n
			sections = sections + 1
			if out > limit then
				error("more than " .. limit .. " permits out at '" .. line .. "' (" .. out .. ")", 2)
			end
			if out > most then most = out end
		else
			out = out - n
		end
	end
	eq(out, 0, "permits still out at the end of the log")
	return most, sections
end

local function hex32(id) return type(id) == "string" and #id == 32 and not id:find("[^0-9a-f]") end

local client = assert(hilock.connect(URL))
local other = assert(hilock.connect(URL)) -- another "process"

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

-- semaphore --------------------------------------------------------------------

test("semaphore: set, acquire, counts, add, drain, delete (Redisson's key)", function()
	local name = uname("basics")
	local sem = client:semaphore(name)
	eq(sem:name(), name)
	eq(sem:available_permits(), 0, "no semaphore yet")
	eq(sem:try_set_permits(3), true, "set")
	eq(sem:try_set_permits(5), false, "exists already")
	eq(redis("GET", name), "3", "the counter at <name>")
	local g = assert(sem:acquire(2))
	eq(g:permits(), 2, "guard permits")
	check(tostring(g):match("2 of semaphore"), tostring(g))
	eq(sem:available_permits(), 1, "available")
	eq(sem:held_permits(), 2, "held by this client")
	eq(redis("GET", name), "1", "in Redis")
	eq(sem:try_acquire(2), false, "not enough: one attempt")
	local t0 = now()
	eq(sem:acquire(2, 0.3), false, "not enough within 0.3 s")
	check(now() - t0 >= 0.25, "waited its wait")
	eq(sem:acquire{n = 2, wait = 0}, false, "the options table form")
	-- 0 permits: at once, as Redisson
	local z = assert(sem:try_acquire(0))
	eq(z:permits(), 0)
	assert(z:release())
	eq(g:release(), true, "guard release")
	eq(g:released(), true)
	eq(g:release(), true, "idempotent")
	eq(sem:available_permits(), 3, "all back")
	eq(sem:held_permits(), 0, "none held")
	eq(sem:add_permits(-1), 2, "add a negative delta")
	eq(sem:drain_permits(), 2, "drained")
	eq(sem:available_permits(), 0)
	eq(sem:held_permits(), 2, "drained permits are this client's")
	assert(sem:release(2))
	assert(sem:set_permits(5))
	eq(sem:available_permits(), 5, "set")
	eq(sem:add_permits(-7), -2, "below zero")
	eq(sem:try_acquire(), false, "nobody acquires below zero")
	eq(sem:delete(), true, "existed")
	eq(sem:delete(), false, "gone")
	eq(redis("EXISTS", name), "0", "deleted in Redis")
	-- binary names
	local bin = client:semaphore("a\0b:" .. name)
	assert(bin:set_permits(1))
	local bg = assert(bin:acquire())
	eq(bin:available_permits(), 0)
	assert(bg:release())
	eq(bin:available_permits(), 1)
	assert(bin:delete())
	check(tostring(sem):match("hilock.semaphore"), tostring(sem))
end)

test("semaphore: <close> gives the permits back on scope exit and on error", function()
	local name = uname("close")
	local sem = client:semaphore(name)
	assert(sem:set_permits(3))
	local kept
	do
		local g <close> = assert(sem:acquire(2))
		kept = g
		eq(sem:available_permits(), 1, "taken inside the scope")
	end
	eq(kept:released(), true, "released by <close>")
	eq(sem:available_permits(), 3, "back after the scope")
	local ok, err = pcall(function()
		local g <close> = assert(sem:acquire(3))
		kept = g
		eq(sem:available_permits(), 0, "all taken")
		error("boom in the critical section")
	end)
	eq(ok, false)
	check(tostring(err):match("boom in the critical section"), "the error is kept: " .. tostring(err))
	eq(kept:released(), true, "released on error")
	eq(sem:available_permits(), 3, "back after the error")
	eq(sem:held_permits(), 0, "none held")
	-- the semaphore object itself with <close>: its unreleased guards go back
	do
		local s <close> = client:semaphore(name)
		assert(s:acquire(1))
		assert(s:acquire(1))
		eq(sem:available_permits(), 1)
	end
	eq(sem:available_permits(), 3, "sem:close() gave back its guards")
	assert(sem:delete())
end)

test("semaphore: releasing more than taken is HL_ENOTHELD and changes nothing", function()
	local name = uname("more")
	local sem = client:semaphore(name)
	assert(sem:set_permits(3))
	local g = assert(sem:acquire(2))
	fails("HL_ENOTHELD", sem:release(3))
	eq(sem:available_permits(), 1, "nothing given back")
	eq(sem:held_permits(), 2, "still held")
	-- permits are counted per client: another client took none
	local theirs = other:semaphore(name)
	local v, msg, code = theirs:release(1)
	fails("HL_ENOTHELD", v, msg, code)
	check(msg:match("holds 0 permits"), msg)
	eq(sem:available_permits(), 1, "still nothing given back")
	-- but any coroutine of this client may give back what another took
	local co = coroutine.wrap(function() return sem:release(1) end)
	eq(co(), true, "released from another coroutine")
	eq(sem:available_permits(), 2)
	-- the guard's two permits: one is gone already
	fails("HL_ENOTHELD", g:release())
	eq(g:released(), true, "the guard is spent")
	eq(sem:available_permits(), 2, "the failed release changed nothing")
	assert(sem:release(1))
	eq(sem:available_permits(), 3)
	-- a <close> guard whose permits were given back otherwise raises at a
	-- normal scope end, and the scope's own error wins otherwise
	raises("releasing hilock.permits.-HL_ENOTHELD", function()
		local h <close> = assert(sem:acquire(1))
		assert(sem:release(1))
	end)
	raises("mine", function()
		local h <close> = assert(sem:acquire(1))
		assert(sem:release(1))
		error("mine")
	end)
	eq(sem:available_permits(), 3, "exactly what there was")
	eq(sem:release(0), true, "0: nothing")
	assert(sem:delete())
end)

test("semaphore of 3: workers in 5 processes never hold 4, and every permit comes back", function()
	local name, gate, log = uname("bound"), uname("gate"), tmpfile()
	local sem = client:semaphore(name)
	assert(sem:set_permits(3))
	local gl = client:count_down_latch(gate)
	assert(gl:try_set_count(1))
	-- five processes, one taking two permits at a time, two waiting through tasks
	local spec = {{1, "block"}, {1, "task"}, {2, "block"}, {1, "task"}, {1, "block"}}
	local iters = 12
	local pipes = {}
	for i, s in ipairs(spec) do
		pipes[i] = assert(io.popen(worker("sem", name, gate, log, iters, "p" .. i, s[1], s[2]) ..
			" 2>&1"))
	end
	for i = 1, #pipes do eq(pipes[i]:read("l"), "ready", "worker " .. i) end
	assert(gl:count_down()) -- all start together
	local failed = {}
	for i = 1, #pipes do
		local out = pipes[i]:read("a")
		if not pipes[i]:close() or not out:match("^held 0\n$") then failed[#failed + 1] = out end
	end
	eq(#failed, 0, "failed workers: " .. table.concat(failed, "\n"))
	local lines = read_lines(log)
	os.remove(log)
	local most, sections = replay(lines, 3)
	print(string.format("# %d critical sections, at most %d permits out at once", sections, most))
	eq(sections, #spec * iters, "critical sections")
	check(most >= 2, "the workers overlapped (at most " .. most .. " out at once)")
	eq(sem:available_permits(), 3, "every permit came back")
	eq(redis("GET", name), "3", "in Redis")
	-- the checker itself fails a log with 4 out
	raises("more than 3", replay, {"enter 2 a", "enter 1 b", "enter 1 c"}, 3)
	assert(sem:delete())
end)

test("semaphore: a release in another client wakes a waiting task", function()
	local name = uname("wake")
	local sem, theirs = client:semaphore(name), other:semaphore(name)
	assert(sem:set_permits(2))
	local held = assert(theirs:acquire(2))
	local t = assert(sem:acquire_start(2, 20))
	local fd = assert(t:fd())
	eq(hilock.poll(fd, 0.3), false, "waits while none is free")
	eq(redis("PUBSUB", "NUMSUB", "redisson_sc:{" .. name .. "}"):match("\n(%d+)$"), "1",
		"subscribed to redisson_sc:{name}")
	-- nothing polls: only the release's message can wake it
	assert(held:release())
	eq(hilock.poll(fd, 10), true, "woken")
	local g = assert(t:result())
	eq(g:permits(), 2)
	eq(sem:held_permits(), 2, "the task's permits are this client's")
	eq(theirs:held_permits(), 0)
	eq(sem:available_permits(), 0)
	assert(g:release())
	t:close()
	assert(sem:delete())
end)

test("semaphore: 1,000 task-waits add no thread and take the permit in FIFO order", function()
	local N = 1000
	local name = uname("many")
	local sem = client:semaphore(name)
	assert(sem:set_permits(0))
	local base = threads()
	local tasks = {}
	for i = 1, N do tasks[i] = assert(sem:acquire_start(1)) end
	local fd = assert(client:task_fd())
	eq(hilock.poll(fd, 0.3), false, "a task completed early")
	eq(threads(), base, "threads with " .. N .. " tasks waiting")
	for i = 1, N do check(not tasks[i]:done(), "task " .. i .. " done early") end
	assert(other:semaphore(name):add_permits(1))
	for i = 1, N do
		local t
		repeat
			t = client:next_task()
			if not t then check(hilock.poll(fd, 30), "no task completed within 30 s") end
		until t
		check(t == tasks[i], "FIFO: task " .. i .. " expected")
		local g = assert(t:result())
		if i % 100 == 0 then
			eq(sem:available_permits(), 0, "one permit, taken")
			eq(sem:held_permits(), 1, "held once")
		end
		if i < N then check(not tasks[i + 1]:done(), "the next is not done yet") end
		assert(g:release())
		t:close()
	end
	check(client:next_task() == nil, "each task handed out once")
	eq(sem:available_permits(), 1, "the permit is back")
	eq(sem:held_permits(), 0)
	eq(threads(), base, "threads at the end")
	assert(sem:delete())
end)

test("semaphore: cancel, collection and close of tasks leave nothing taken", function()
	local name = uname("cancel")
	local sem = client:semaphore(name)
	assert(sem:set_permits(1))
	local g = assert(sem:acquire())
	local t = assert(sem:acquire_start(1, 20))
	eq(t:done(), false)
	raises("not done", t.result, t)
	t:cancel()
	eq(t:wait(10), true, "cancel is prompt")
	fails("HL_EINTERRUPTED", t:result())
	t:close()
	-- a wait that runs out: false
	local t1 = assert(sem:acquire_start(1, 0.2))
	eq(t1:wait(5), true)
	eq(t1:result(), false, "timed out")
	t1:close()
	-- a task nobody keeps is collected, so cancelled
	for _ = 1, 4 do collectgarbage("collect") end
	local before = core.live_tasks()
	sem:acquire_start(1)
	eq(core.live_tasks(), before + 1)
	for _ = 1, 4 do collectgarbage("collect") end
	eq(core.live_tasks(), before, "collected")
	assert(g:release())
	eq(sem:available_permits(), 1, "nothing taken by the cancelled and collected tasks")
	eq(sem:held_permits(), 0)
	-- close ends a pending task and gives back its guards
	local s2 = client:semaphore(name)
	local g2 = assert(s2:acquire())
	local t2 = assert(s2:acquire_start(1))
	assert(s2:close())
	fails("HL_EINTERRUPTED", t2:result())
	eq(g2:released(), true, "its guard was given back")
	eq(g2:release(), true, "and stays so")
	eq(sem:available_permits(), 1, "all back")
	eq(sem:held_permits(), 0)
	raises("closed hilock semaphore", s2.acquire, s2)
	while client:next_task() do end
	assert(sem:delete())
end)

-- permit-expirable semaphore ---------------------------------------------------

test("expirable semaphore: ids, leases, counts, release (Redisson's keys)", function()
	local name = uname("xs")
	local xs = client:expirable_semaphore(name)
	eq(xs:name(), name)
	eq(xs:try_set_permits(3), true)
	eq(xs:try_set_permits(9), false)
	local g, ids = assert(xs:acquire{n = 2, lease = 60})
	eq(#ids, 2, "two ids")
	check(hex32(ids[1]) and hex32(ids[2]), "32 lowercase hex characters: " .. ids[1])
	check(ids[1] ~= ids[2], "distinct")
	eq(table.concat(g:ids(), ","), table.concat(ids, ","), "guard:ids()")
	eq(g:permits(), 2)
	eq(xs:available_permits(), 1)
	eq(xs:acquired_permits(), 2)
	eq(xs:permits(), 3)
	eq(redis("GET", name), "1", "available at <name>")
	eq(redis("ZCARD", "{" .. name .. "}:timeout"), "2", "out in {name}:timeout")
	eq(xs:try_acquire(2), false, "one left")
	local lt = xs:lease_time(ids[1])
	check(lt > 30 and lt <= 60, "lease time " .. tostring(lt))
	assert(xs:update_lease(ids[1]))
	eq(xs:lease_time(ids[1]), math.huge, "no lease")
	assert(xs:update_lease(ids[1], 30))
	lt = xs:lease_time(ids[1])
	check(lt > 15 and lt <= 30, "a new lease " .. tostring(lt))
	-- released by hand, then the guard: that one is not held any more
	eq(xs:release(ids[1]), true)
	fails("HL_ENOTHELD", xs:release(ids[1]))
	fails("HL_ENOTHELD", xs:update_lease(ids[1], 1))
	fails("HL_ENOTHELD", xs:lease_time(ids[1]))
	fails("HL_ENOTHELD", xs:release("00112233445566778899aabbccddeeff"))
	fails("HL_ENOTHELD", g:release())
	eq(g:released(), true)
	eq(xs:available_permits(), 3, "the other was released by the guard all the same")
	-- the total may be set: available follows
	local g1 = assert(xs:acquire())
	assert(xs:set_permits(5))
	eq(xs:available_permits(), 4)
	eq(xs:add_permits(-2), 2)
	assert(g1:release())
	eq(xs:available_permits(), 3)
	eq(xs:delete(), true)
	eq(xs:delete(), false)
end)

test("expirable semaphore: <close> releases the ids; an ended lease is HL_ELOST", function()
	local name = uname("xclose")
	local xs = client:expirable_semaphore(name)
	assert(xs:set_permits(2))
	local kept
	do
		local g <close>, ids = assert(xs:acquire(2, {lease = 30}))
		kept = g
		eq(#ids, 2)
		eq(xs:available_permits(), 0)
	end
	eq(kept:released(), true)
	eq(xs:available_permits(), 2, "back after the scope")
	eq(xs:acquired_permits(), 0)
	raises("oops", function()
		local g <close> = assert(xs:acquire())
		error("oops")
	end)
	eq(xs:available_permits(), 2, "back after an error")
	-- a permit whose lease ended: its release is HL_ELOST (it had gone back)
	local g, ids = assert(xs:acquire{lease = 0.3})
	os.execute("sleep 0.6")
	fails("HL_ELOST", xs:release(ids[1]))
	eq(g:release(), nil, "the guard's release fails too")
	-- and a <close> guard whose lease ended raises at a normal scope end
	local kept2
	raises("releasing hilock.expirable_permits.-HL_ELOST", function()
		local h <close> = assert(xs:acquire{lease = 0.2})
		kept2 = h
		os.execute("sleep 0.5")
	end)
	eq(kept2:released(), true)
	eq(xs:available_permits(), 2, "both back")
	eq(xs:acquired_permits(), 0)
	assert(xs:delete())
end)

test("expirable semaphore: a killed holder's permit returns after its lease", function()
	local name = uname("killed")
	local xs = client:expirable_semaphore(name)
	assert(xs:set_permits(1))
	local lease = 2
	-- the shell says its pid, then becomes the worker (so nothing else
	-- is left to report the kill)
	local p = assert(io.popen("echo $$; exec " .. worker("xhold", name, lease)))
	local pid = tonumber(p:read("l"))
	check(pid, "the worker's pid")
	local line = p:read("l")
	local id = line and line:match("^held (%x+)$")
	check(id and hex32(id), "the worker's permit: " .. tostring(line))
	os.execute("kill -9 " .. pid)
	local ok, how = p:close()
	eq(ok, nil, "the worker was killed")
	check(how == "signal" or how == "exit", tostring(how))
	-- what is left of its lease, as Redis's clock has it
	local left = xs:lease_time(id)
	local t0 = now()
	check(left > 0 and left <= lease, "the dead holder's lease is running: " .. tostring(left))
	eq(xs:try_acquire(), false, "not back before its lease ends")
	local g, ids = xs:acquire{wait = 30, lease = 30}
	local took = now() - t0
	print(string.format("# the dead holder's permit came back %.2f s after %.2f s of its " ..
		"lease were left (lease %d s)", took, left, lease))
	check(g, "acquired the dead holder's permit")
	check(took > left - 1 and took < left + 10, "when its lease ended: " .. took)
	check(ids[1] ~= id, "a new id")
	fails("HL_ENOTHELD", xs:release(id))
	assert(g:release())
	eq(xs:available_permits(), 1)
	assert(xs:delete())
end)

test("expirable semaphore: tasks give guard and ids; cancel takes nothing", function()
	local name = uname("xtask")
	local xs, theirs = client:expirable_semaphore(name), other:expirable_semaphore(name)
	assert(xs:set_permits(2))
	local held = assert(theirs:acquire(2))
	local t = assert(xs:acquire_start{n = 2, lease = 20, wait = 20})
	eq(hilock.poll(assert(t:fd()), 0.3), false, "waits")
	t:cancel()
	eq(t:wait(10), true)
	fails("HL_EINTERRUPTED", t:result())
	t:close()
	local t2 = assert(xs:acquire_start(2, {lease = 20}))
	assert(held:release())
	eq(t2:wait(10), true, "woken by the release")
	local g, ids = t2:result()
	check(g, "a guard")
	eq(#ids, 2)
	check(hex32(ids[1]) and hex32(ids[2]), "ids")
	eq(table.concat(g:ids(), ","), table.concat(ids, ","))
	eq(xs:acquired_permits(), 2, "the task's two, nothing from the cancelled one")
	local lt = xs:lease_time(ids[2])
	check(lt > 10 and lt <= 20, "its lease " .. tostring(lt))
	-- the same values every time
	local g2 = t2:result()
	eq(g2, g, "the same guard")
	assert(g:release())
	eq(xs:available_permits(), 2)
	t2:close()
	while client:next_task() do end
	assert(xs:delete())
end)

-- count-down latch -------------------------------------------------------------

test("latch: set, count down, wait, set again, delete (Redisson's key)", function()
	local name = uname("latch")
	local l = client:count_down_latch(name)
	eq(l:name(), name)
	eq(l:count(), 0, "never set")
	eq(l:wait(0), true, "never set: open")
	eq(l:try_set_count(3), true)
	eq(l:try_set_count(5), false, "set already")
	eq(l:count(), 3)
	eq(redis("GET", name), "3", "the count at <name>")
	local t0 = now()
	eq(l:wait(0.3), false, "closed: timed out")
	check(now() - t0 >= 0.25, "waited")
	eq(l:count_down(), 2)
	eq(l:count_down(), 1)
	eq(l:count_down(), 0)
	eq(redis("EXISTS", name), "0", "deleted once open")
	eq(l:wait(1), true, "open")
	eq(l:count_down(), 0, "counting down an open latch changes nothing")
	eq(l:try_set_count(1), true, "set again")
	eq(l:wait(0.1), false, "closed again")
	eq(l:delete(), true)
	eq(l:delete(), false)
	check(tostring(l):match("count_down_latch"), tostring(l))
	assert(l:close())
	raises("closed hilock count%-down latch", l.count, l)
end)

test("latch: counted down by 5 processes, it wakes a task and a blocked process", function()
	local name = uname("wake")
	local l = client:count_down_latch(name)
	assert(l:try_set_count(5))
	local t = assert(l:wait_start(60))
	local fd = assert(t:fd())
	local waiter = assert(io.popen(worker("latchwait", name, 60) .. " 2>&1"))
	eq(waiter:read("l"), "waiting", "the blocked waiter")
	-- four count down at once
	local pipes = {}
	for i = 1, 4 do pipes[i] = assert(io.popen(worker("countdown", name) .. " 2>&1")) end
	local lefts = {}
	for i = 1, 4 do
		local out = pipes[i]:read("a")
		check(pipes[i]:close(), "countdown worker failed: " .. out)
		lefts[#lefts + 1] = tonumber(out:match("^left (%d+)"))
	end
	table.sort(lefts)
	eq(table.concat(lefts, ","), "1,2,3,4", "each counted down once")
	eq(l:count(), 1)
	eq(hilock.poll(fd, 0.3), false, "still closed")
	eq(t:done(), false)
	local subs = tonumber(redis("PUBSUB", "NUMSUB",
		"redisson_countdownlatch__channel__{" .. name .. "}"):match("\n(%d+)$"))
	check(subs >= 1, "waiters are subscribed to the latch's channel: " .. tostring(subs))
	local out, ok = sh(worker("countdown", name) .. " 2>&1")
	check(ok and out:match("^left 0"), "the last count down: " .. out)
	-- nothing polls: only the "0" message can wake it
	eq(hilock.poll(fd, 10), true, "the task woke")
	eq(t:result(), true, "open")
	eq(waiter:read("l"), "open", "the blocked process woke")
	check(waiter:close(), "the waiter process exits cleanly")
	t:close()
	while client:next_task() do end
	-- a wait task that runs out: false
	assert(l:try_set_count(1))
	local t2 = assert(l:wait_start(0.2))
	eq(t2:wait(5), true)
	eq(t2:result(), false, "timed out")
	t2:close()
	assert(l:delete())
end)

-- misuse and bad input --------------------------------------------------------

test("bad input raises; closed objects and clients raise", function()
	raises("string expected", client.semaphore, client, 42)
	raises("1 to 65536 bytes", client.semaphore, client, "")
	raises("1 to 65536 bytes", client.expirable_semaphore, client, string.rep("x", 65537))
	raises("string expected", client.count_down_latch, client, nil)
	raises("bad self", client.semaphore, {}, "x")
	local sem = client:semaphore(uname("bad"))
	raises("number of permits from 0 to 2%^40", sem.acquire, sem, -1)
	raises("number of permits", sem.acquire, sem, 1.5)
	raises("number of permits", sem.acquire, sem, "2")
	raises("number of permits", sem.acquire, sem, 2 ^ 41)
	raises("number of permits from 1", sem.acquire_start, sem, 0)
	raises("negative time", sem.acquire, sem, 1, -1)
	raises("negative time", sem.acquire, sem, {wait = -0.5})
	raises("number of seconds expected", sem.acquire, sem, 1, {wait = "x"})
	raises("unknown option 'lease'", sem.acquire, sem, 1, {lease = 1})
	raises("permits given twice", sem.acquire, sem, 1, {n = 2})
	raises("no argument expected after", sem.acquire, sem, {n = 1}, 3)
	raises("number of permits", sem.release, sem, -1)
	raises("number of permits", sem.try_set_permits, sem, -1)
	raises("number of permits", sem.set_permits, sem, nil)
	raises("an integer", sem.add_permits, sem, 0.5)
	raises("bad self", sem.acquire, {})
	eq(redis("EXISTS", sem:name()), "0", "nothing was written")
	local xs = client:expirable_semaphore(uname("bad"))
	raises("number of permits from 1 to 1000", xs.acquire, xs, 0)
	raises("number of permits from 1 to 1000", xs.acquire, xs, {n = 1001})
	raises("lease must be positive", xs.acquire, xs, {lease = 0})
	raises("negative time", xs.acquire, xs, {lease = -1})
	raises("permit id expected", xs.release, xs, nil)
	raises("permit id expected", xs.release, xs, "")
	raises("permit id expected", xs.release, xs, "xyz")
	raises("permit id expected", xs.release, xs, "abc")
	raises("permit id expected", xs.release, xs, string.rep("a", 34))
	raises("permit id expected", xs.lease_time, xs, "00\0" .. string.rep("0", 29))
	raises("permit id expected", xs.update_lease, xs, 7, 1)
	raises("lease must be positive", xs.update_lease, xs, string.rep("0", 32), 0)
	local l = client:count_down_latch(uname("bad"))
	raises("a count from 1 to 2%^40", l.try_set_count, l, 0)
	raises("a count", l.try_set_count, l, -3)
	raises("negative time", l.wait, l, -2)
	raises("negative time", l.wait_start, l, -1)
	-- closed objects, and objects of a closed client
	local s2 = client:semaphore(uname("closed"))
	assert(s2:close())
	eq(s2:close(), true, "close is idempotent")
	raises("closed hilock semaphore", s2.available_permits, s2)
	local c = assert(hilock.connect(URL))
	local cs, cx, cl = c:semaphore(uname("c")), c:expirable_semaphore(uname("c")),
		c:count_down_latch(uname("c"))
	assert(cs:set_permits(1))
	local g = assert(cs:acquire())
	c:close()
	raises("closed hilock client", cs.acquire, cs)
	raises("closed hilock client", cx.available_permits, cx)
	raises("closed hilock client", cl.count_down, cl)
	raises("closed hilock client", c.semaphore, c, "x")
	-- a guard of a closed client cannot give its permits back: it says so
	fails("HL_ECLOSED", g:release())
	assert(other:semaphore(cs:name()):delete())
end)

test("handles are collected without leaks (live counters)", function()
	for _ = 1, 3 do collectgarbage("collect") end
	local base = core.live_syncs()
	for i = 1, 300 do
		local s = client:semaphore(uname("gc" .. i))
		local x = client:expirable_semaphore(uname("gc" .. i))
		local l = client:count_down_latch(uname("gc" .. i))
		eq(s:available_permits() + x:available_permits() + l:count(), 0)
	end
	check(core.live_syncs() >= base, "counter sane")
	for _ = 1, 3 do collectgarbage("collect") end
	eq(core.live_syncs(), base, "live synchronizer handles")
end)

-- run ------------------------------------------------------------------------
print("1.." .. #tests)
local passed, failed = 0, 0
for i, t in ipairs(tests) do
	local ok, err = xpcall(t.f, debug.traceback)
	if ok then
		passed = passed + 1
		print("ok " .. i .. " - " .. t.name)
	else
		failed = failed + 1
		print("not ok " .. i .. " - " .. t.name)
		for line in tostring(err):gmatch("[^\n]+") do print("# " .. line) end
	end
	io.stdout:flush()
end
client:close()
other:close()
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
