-- Tests of the operations that do not block (lock:try_acquire_start,
-- release_start, wait_lost_start; task objects; client:task_fd and
-- next_task; hilock.poll), against the redis-server started by
-- run-tests.sh (HILOCK_TEST_URL). Prints TAP and "N passed, N failed";
-- exits non-zero if any test failed.
local hilock = require "hilock"
local core = hilock._core

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"))

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:tasks:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	p:close()
	return out
end
local function redis(...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. PORT
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return ((sh(cmd .. " 2>&1")):gsub("\n$", ""))
end
local function now() return tonumber((sh("date +%s.%N"))) end
local function sleep(s) os.execute("sleep " .. s) end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end
local function check(cond, what)
	if not cond then error(what or "check failed", 2) end
end

-- The process's thread count, as the kernel has it.
local function threads()
	local f = assert(io.open("/proc/self/status"))
	local s = f:read("a")
	f:close()
	return tonumber(s:match("Threads:%s*(%d+)"))
end

-- Start f in a coroutine of its own (so it is its own lock owner), run it to
-- its end, return what it returned.
local function as_owner(f, ...)
	local co = coroutine.create(f)
	local res = table.pack(coroutine.resume(co, ...))
	assert(res[1], res[2])
	return table.unpack(res, 2, res.n)
end

local opts = {watchdog_timeout = 3}
local client = assert(hilock.connect(URL, opts))
local other = assert(hilock.connect(URL, opts))

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

test("many tasks wait on one Lua state with no thread added, then take the lock in turn", function()
	local N = 1000
	local name = uname("many")
	local held = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	local base = threads()
	local tasks = {}
	for i = 1, N do
		-- each from a coroutine of its own: N owners
		tasks[i] = as_owner(function() return assert(lock:try_acquire_start()) end)
	end
	check(hilock.poll(assert(client:task_fd()), 0.3) == false, "a task completed early")
	eq(threads(), base, "threads with " .. N .. " tasks waiting")
	for i = 1, N do check(not tasks[i]:done(), "task " .. i .. " done early") end
	eq(redis("PUBSUB", "NUMSUB", "redisson_lock__channel:{" .. name .. "}"):match("\n(%d+)$"),
		"1", "one subscription: only the head of the queue listens")
	held:release()
	local fd = assert(client:task_fd())
	for i = 1, N do
		local t
		repeat
			t = client:next_task()
			if not t then check(hilock.poll(fd, 10), "no task completed within 10 s") end
		until t
		check(t == tasks[i], "FIFO: task " .. i .. " expected")
		local guard = assert(t:result())
		check(getmetatable(guard) and guard.release, "a guard")
		eq(redis("HLEN", name), "1", "one holder")
		if i < N then check(not tasks[i + 1]:done(), "the next is not done yet") end
		assert(guard:release())
		t:close()
	end
	check(client:next_task() == nil, "each task handed out once")
	eq(redis("EXISTS", name), "0", "free at the end")
	eq(threads(), base, "threads at the end")
end)

test("task: fd, done, result, cancel; nothing held after a cancel", function()
	local name = uname("cancel")
	local h = other:lock(name)
	local held = assert(h:acquire())
	local lock = client:lock(name)
	local t = assert(lock:try_acquire_start(20))
	local fd = assert(t:fd())
	eq(hilock.poll(fd, 0.2), false, "not readable while waiting")
	eq(t:done(), false, "not done")
	local ok, err = pcall(t.result, t)
	check(not ok and err:match("not done"), "result before done raises: " .. tostring(err))
	local t0 = now()
	eq(t:cancel(), true, "cancel")
	eq(hilock.poll(fd, 2), true, "readable once cancelled")
	check(now() - t0 < 1, "cancel is prompt")
	local r, msg, code = t:result()
	eq(r, nil, "no guard")
	eq(code, "HL_EINTERRUPTED", "code")
	check(type(msg) == "string" and #msg > 0, "a message")
	-- the same values again
	local r2, _, code2 = t:result()
	eq(r2, nil, "again")
	eq(code2, "HL_EINTERRUPTED", "again")
	eq(redis("HLEN", name), "1", "only the holder")
	eq(lock:held(), false, "the canceller holds nothing")
	t:close()
	eq(t:close(), true, "close is idempotent")
	ok, err = pcall(t.done, t)
	check(not ok and err:match("closed"), "a closed task raises: " .. tostring(err))
	-- a wait that runs out: false, as acquire
	local t1 = assert(lock:try_acquire_start(0.2))
	eq(t1:wait(5), true, "done within its wait")
	eq(t1:result(), false, "not acquired")
	t1:close()
	-- wait 0 behind nobody: one attempt
	local t2 = assert(lock:try_acquire_start(0))
	eq(t2:wait(5), true, "done")
	eq(t2:result(), false, "held elsewhere")
	t2:close()
	held:release()
	-- the lock is free: the task takes it at once
	local t3 = assert(lock:try_acquire_start(5, 10))
	assert(t3:wait(5))
	local g = assert(t3:result())
	eq(lock:held(), true, "held by this coroutine")
	local ttl = lock:ttl()
	check(ttl > 5 and ttl <= 10, "the lease: " .. tostring(ttl))
	assert(g:release())
	eq(lock:held(), false, "released")
end)

test("task: bad arguments raise, runtime failures return nil, message, code", function()
	local lock = client:lock(uname("bad"))
	check(not pcall(lock.try_acquire_start, lock, -1), "negative wait raises")
	check(not pcall(lock.try_acquire_start, lock, 1, 0), "lease 0 raises")
	check(not pcall(lock.try_acquire_start, lock, {bogus = 1}), "unknown option raises")
	check(not pcall(lock.wait_lost_start, lock, -1), "negative timeout raises")
	check(not pcall(hilock.poll, "x"), "poll of a non-fd raises")
	local t = assert(lock:release_start())
	assert(t:wait(5))
	local r, msg, code = t:result()
	eq(r, nil, "nothing to release")
	eq(code, "HL_ENOTHELD", "code")
	check(msg:match("not held"), msg)
	t:close()
end)

test("task: release_start and wait_lost_start", function()
	local name = uname("rel")
	local lock = client:lock(name)
	assert(lock:acquire())
	assert(lock:acquire())
	local t = assert(lock:release_start())
	assert(t:wait(5))
	eq(t:result(), true, "released one")
	eq(lock:hold_count(), 1, "one hold left")
	t:close()
	-- wait for a loss: the key vanishes, the watchdog finds it
	local w = assert(lock:wait_lost_start())
	eq(hilock.poll(assert(w:fd()), 0.3), false, "not lost yet")
	redis("DEL", name)
	eq(hilock.poll(assert(w:fd()), 5), true, "the loss is seen")
	eq(w:result(), true, "lost")
	w:close()
	local r, _, code = lock:unlock()
	eq(r, nil, "unlock of a lost hold")
	eq(code, "HL_ELOST", "code")
	-- a release through a task ends the hold in the binding's books too
	assert(lock:acquire())
	local t2 = assert(lock:release_start())
	assert(t2:wait(5))
	eq(t2:result(), true, "released")
	eq(lock:held(), false, "free")
	eq(redis("EXISTS", name), "0", "gone from Redis")
	-- its timeout: false
	assert(lock:acquire())
	local w2 = assert(lock:wait_lost_start(0.2))
	assert(w2:wait(5))
	eq(w2:result(), false, "not lost within 0.2 s")
	assert(lock:unlock())
end)

test("lock:close() ends its tasks first: nothing is left held", function()
	local name = uname("close")
	local held = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	local tasks = {}
	for i = 1, 3 do tasks[i] = as_owner(function() return assert(lock:try_acquire_start()) end) end
	sleep(0.2)
	assert(lock:close())
	for i = 1, 3 do
		check(tasks[i]:done(), "task " .. i .. " ended by close")
		local _, _, code = tasks[i]:result()
		eq(code, "HL_EINTERRUPTED", "cancelled")
	end
	held:release()
	sleep(0.2)
	eq(redis("EXISTS", name), "0", "nobody holds it")
	-- a task that got the lock before the close: its hold is released too
	local lock2 = client:lock(name)
	local t = assert(lock2:try_acquire_start(5))
	assert(t:wait(5))
	assert(lock2:close())
	eq(redis("EXISTS", name), "0", "released by close")
end)

test("a task nobody keeps is collected and cancelled", function()
	local name = uname("gc")
	local held = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	for _ = 1, 4 do collectgarbage("collect") end
	local before = core.live_tasks()
	as_owner(function() lock:try_acquire_start() end) -- dropped at once
	eq(core.live_tasks(), before + 1, "one live task")
	for _ = 1, 4 do collectgarbage("collect") end
	eq(core.live_tasks(), before, "collected")
	-- the next waiter is not held up by it
	local t = assert(lock:try_acquire_start(10))
	held:release()
	assert(t:wait(5))
	local g = assert(t:result())
	eq(redis("HLEN", name), "1", "one holder")
	assert(g:release())
	while client:next_task() do end
end)

test("closing the client ends pending tasks with HL_ECLOSED; they are still handed out", function()
	local name = uname("cclose")
	local held = assert(other:lock(name):acquire())
	local c = assert(hilock.connect(URL, opts))
	local lock = c:lock(name)
	local fd = assert(c:task_fd())
	local tasks = {}
	for i = 1, 3 do tasks[i] = as_owner(function() return assert(lock:try_acquire_start()) end) end
	sleep(0.2)
	c:close()
	eq(hilock.poll(fd, 2), true, "readable after close")
	for _, t in ipairs(tasks) do
		check(t:done(), "done")
		local _, _, code = t:result()
		eq(code, "HL_ECLOSED", "closed")
	end
	-- an event loop still takes them from the closed client, each once
	local got = {}
	for _ = 1, 3 do
		local t = c:next_task()
		check(t ~= nil, "handed out after close")
		got[t] = true
	end
	check(c:next_task() == nil, "three in all")
	for _, t in ipairs(tasks) do check(got[t], "each task handed out") end
	eq(hilock.poll(fd, 0), false, "not readable once taken")
	check(not pcall(c.lock, c, "x"), "a closed client raises otherwise")
	held:release()
end)

test("every kind waits through tasks (fair in order, spin, fenced, read and write)", function()
	local function through_tasks(make, n)
		local name = uname("kind")
		local held = assert(make(other, name):acquire())
		local lock = make(client, name)
		local tasks = {}
		for i = 1, n do
			tasks[i] = as_owner(function() return assert(lock:try_acquire_start(20)) end)
			sleep(0.05) -- in order (the fair lock's queue is Redis's)
		end
		held:release()
		local order = {}
		for _ = 1, n do
			local t
			repeat
				t = client:next_task()
				if not t then assert(hilock.poll(assert(client:task_fd()), 10)) end
			until t
			local g = assert(t:result())
			for i = 1, n do if tasks[i] == t then order[#order + 1] = i end end
			if lock:kind() == "fenced" then
				check(g:lock_object() == lock, "a guard of this lock")
			end
			assert(g:release())
		end
		return order, name
	end
	local order = through_tasks(function(c, n) return c:fair_lock(n) end, 4)
	eq(table.concat(order, ","), "1,2,3,4", "fair: in the order they asked")
	order = through_tasks(function(c, n)
		return c:spin_lock(n, {backoff = {initial = 0.005, max = 0.02}})
	end, 3)
	eq(#order, 3, "spin: all three")
	order = through_tasks(function(c, n) return c:fenced_lock(n) end, 3)
	eq(#order, 3, "fenced: all three")
	order = through_tasks(function(c, n) return c:read_write_lock(n).write end, 3)
	eq(#order, 3, "write: all three")
	-- readers wait for a writer, then share
	local name = uname("rw")
	local w = assert(other:read_write_lock(name).write:acquire())
	local rw = client:read_write_lock(name)
	local ts = {}
	for i = 1, 3 do ts[i] = as_owner(function() return assert(rw.read:try_acquire_start(20)) end) end
	sleep(0.2)
	for i = 1, 3 do check(not ts[i]:done(), "readers wait for the writer") end
	w:release()
	local guards = {}
	for i = 1, 3 do
		assert(ts[i]:wait(5))
		guards[i] = assert(ts[i]:result())
	end
	for i = 1, 3 do assert(guards[i]:release()) end
	while client:next_task() do end
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
end
client:close()
other:close()
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
