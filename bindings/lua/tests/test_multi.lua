-- Tests of hilock.multilock and hilock.redlock: the server of run-tests.sh
-- (HILOCK_TEST_URL) and two more started here, one client on each. Prints
-- TAP and "N passed, N failed"; exits non-zero if any test failed.
local hilock = require "hilock"

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"))

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	local ok, _, code = p:close()
	return out, ok, code
end
local function now() return tonumber((sh("date +%s.%N"))) end
local function sleep(s) os.execute("sleep " .. s) end

-- servers --------------------------------------------------------------------

-- run-tests.sh gives a directory and kills what is left in it at exit
local tmp = os.getenv("HILOCK_TEST_MULTI_DIR") or
	(sh("mktemp -d ${TMPDIR:-/tmp}/hilock-lua-multi.XXXXXX")):gsub("\n$", "")
local ports, pids = {PORT}, {}

local function free_port()
	return (sh([[python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])']])):gsub("\n$", "")
end

local function start_server(i)
	for _ = 1, 5 do
		local port = free_port()
		local dir = tmp .. "/s" .. i
		os.execute("mkdir -p " .. shq(dir))
		os.execute(string.format("%s --port %s --bind 127.0.0.1 --save '' --appendonly no " ..
			"--dir %s --daemonize yes --pidfile %s/pid --logfile %s/log",
			os.getenv("REDIS_SERVER") or "redis-server", port, shq(dir), shq(dir), shq(dir)))
		for _ = 1, 100 do
			if (sh("redis-cli -h 127.0.0.1 -p " .. port .. " ping 2>/dev/null")):match("PONG") then
				ports[i] = port
				pids[i] = dir .. "/pid"
				return
			end
			sleep(0.1)
		end
	end
	error("cannot start redis-server " .. i)
end

local function stop_server(i)
	if pids[i] then
		os.execute("kill $(cat " .. shq(pids[i]) .. ") 2>/dev/null")
		for _ = 1, 100 do
			if not (sh("redis-cli -h 127.0.0.1 -p " .. ports[i] .. " ping 2>/dev/null")):match("PONG") then
				break
			end
			sleep(0.1)
		end
		pids[i] = nil
	end
end

local function redis(i, ...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. ports[i]
	for k = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(k, ...))) end
	return ((sh(cmd .. " 2>&1")):gsub("\n$", ""))
end

start_server(2)
start_server(3)

local function url(i) return "redis://127.0.0.1:" .. ports[i] .. "/0" end
local opts = {watchdog_timeout = 2, connect_timeout = 0.5, command_timeout = 0.5, retry_delay = 0.1}
local clients = {}
for i = 1, 3 do clients[i] = assert(hilock.connect(i == 1 and URL or url(i), opts)) end

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:multi:" .. RUN .. ":" .. seq .. ":" .. what
end

local function locks_of(name)
	local out = {}
	for i = 1, 3 do out[i] = clients[i]:lock(name) end
	return out
end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end

local function raises(pattern, f, ...)
	local ok, err = pcall(f, ...)
	if ok then error("expected an error matching '" .. pattern .. "'", 2) end
	if not tostring(err):match(pattern) then
		error("error '" .. tostring(err) .. "' does not match '" .. pattern .. "'", 2)
	end
end

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

-- tests ----------------------------------------------------------------------

test("multilock: all or nothing, then all", function()
	local name = uname("aon")
	local ls = locks_of(name)
	local ml = hilock.multilock(ls)
	eq(ml:quorum(), 3, "quorum")
	local other = assert(hilock.connect(url(2)))
	local held = assert(other:lock(name):acquire())
	local t0 = now()
	eq(ml:acquire{wait = 0.4}, false, "acquire with a member held elsewhere")
	local dt = now() - t0
	assert(dt >= 0.35 and dt < 3, "took " .. dt)
	eq(redis(1, "EXISTS", name), "0", "member 1 given back")
	eq(redis(3, "EXISTS", name), "0", "member 3 never taken")
	eq(ml:try_acquire(), false, "one attempt each")
	assert(held:release())
	other:close()
	do
		local g <close> = assert(ml:acquire{wait = 2})
		for i = 1, 3 do eq(redis(i, "HGET", name, ls[i]:owner()), "1", "member " .. i) end
		eq(ml:lost(), false, "lost")
	end
	for i = 1, 3 do eq(redis(i, "EXISTS", name), "0", "member " .. i .. " after <close>") end
end)

test("multilock: reentrant, per coroutine, with()", function()
	local name = uname("re")
	local ls = locks_of(name)
	local ml = hilock.multilock(ls)
	local g1 = assert(ml:acquire())
	local g2 = assert(ml:acquire())
	eq(redis(3, "HGET", name, ls[3]:owner()), "2", "count after reentry")
	local co = coroutine.wrap(function() return ml:try_acquire() end)
	eq(co(), false, "another coroutine, another owner")
	eq(redis(1, "HLEN", name), "1", "nothing left by the other coroutine")
	assert(g2:release())
	assert(g2:release()) -- once only
	eq(redis(1, "HGET", name, ls[1]:owner()), "1", "count after one release")
	assert(g1:release())
	eq(redis(1, "EXISTS", name), "0", "free")
	local v1, v2 = ml:with({wait = 1}, function(a, b)
		eq(redis(2, "HGET", name, ls[2]:owner()), "1", "inside with")
		return a + 1, b
	end, 41, "x")
	eq(v1, 42)
	eq(v2, "x")
	eq(redis(2, "EXISTS", name), "0", "after with")
	local v, msg, code = ml:unlock()
	eq(v, nil, "unlock of nothing")
	eq(code, "HL_ENOTHELD")
	assert(msg:match("member"), msg)
end)

test("multilock: members share their hold with the lock objects; closing one gives back its part", function()
	local name = uname("share")
	local ls = locks_of(name)
	local ml = hilock.multilock(ls)
	local g = assert(ml:acquire())
	local direct = assert(ls[2]:acquire()) -- a re-entry through the member itself
	eq(redis(2, "HGET", name, ls[2]:owner()), "2", "member 2 count")
	eq(ls[2]:hold_count(), 2, "one hold of the coroutine, whichever object took it")
	assert(ls[1]:close()) -- gives back what the multilock took through it
	eq(redis(1, "EXISTS", name), "0", "member 1 released by its close")
	assert(g:release()) -- the others, one at a time
	eq(redis(2, "HGET", name, ls[2]:owner()), "1", "member 2: the direct hold is left")
	eq(redis(3, "EXISTS", name), "0", "member 3 released")
	assert(direct:release())
	eq(redis(2, "EXISTS", name), "0", "member 2 free")
end)

test("multilock: a lock lost while held and taken again directly is left to its new hold", function()
	local name = uname("retaken")
	local ls = locks_of(name)
	local ml = hilock.multilock(ls)
	local g = assert(ml:acquire())
	assert(ls[2]:force_unlock()) -- this client's holds of it are lost
	eq(ls[2]:lost(), true, "member 2 lost")
	assert(ls[2]:acquire()) -- a new hold, twice
	assert(ls[2]:acquire())
	eq(redis(2, "HGET", name, ls[2]:owner()), "2", "the new hold")
	local ok, msg, code = g:release()
	eq(ok, nil, "the release")
	eq(code, "HL_ELOST")
	assert(msg:match("member 1"), msg)
	eq(redis(1, "EXISTS", name), "0", "member 1 released")
	eq(redis(3, "EXISTS", name), "0", "member 3 released")
	eq(redis(2, "HGET", name, ls[2]:owner()), "2", "member 2: the new hold untouched")
	eq(ls[2]:lost(), false, "the new hold is not lost")
	eq(ls[2]:hold_count(), 2, "the new hold's count")
	assert(ls[2]:close()) -- gives back both direct holds
	eq(redis(2, "EXISTS", name), "0", "member 2 free after its close")
end)

local function wait_until(cond, limit, what)
	local deadline = now() + (limit or 10)
	while not cond() do
		if now() > deadline then error("timed out waiting for " .. (what or "a condition"), 2) end
		sleep(0.02)
	end
end

test("multilock: try_acquire_start, a task of the first lock's client", function()
	local name = uname("task")
	local ls = locks_of(name)
	local ml = hilock.multilock(ls)
	local other = assert(hilock.connect(url(3)))
	local held = assert(other:lock(name):acquire())

	-- waiting for member 3 with members 1 and 2 taken: cancelled, it ends at
	-- once and gives both back
	local t = assert(ml:try_acquire_start(30))
	eq(tostring(t):match("multilock") ~= nil, true, "tostring names the multilock")
	wait_until(function()
		return redis(1, "EXISTS", name) == "1" and redis(2, "EXISTS", name) == "1"
			and clients[3]:stats().waiting == 1
	end, 10, "members 1 and 2 taken, member 3 waited for")
	eq(t:done(), false, "pending")
	local t0 = now()
	assert(t:cancel())
	eq(t:wait(2), true, "done after the cancel")
	local r, msg, code = t:result()
	assert(now() - t0 < 1, "cancel took " .. (now() - t0))
	eq(r, nil, "cancelled result")
	eq(code, "HL_EINTERRUPTED", "cancelled code")
	assert(msg:match("interrupted"), msg)
	eq(redis(1, "EXISTS", name), "0", "member 1 given back")
	eq(redis(2, "EXISTS", name), "0", "member 2 given back")
	eq(redis(3, "HLEN", name), "1", "member 3: the holder only")
	t:close()

	-- a task closed while it waits: the same
	t = assert(ml:try_acquire_start{wait = 30})
	wait_until(function() return redis(2, "EXISTS", name) == "1" end, 10, "member 2 taken")
	t:close()
	wait_until(function()
		return redis(1, "EXISTS", name) == "0" and redis(2, "EXISTS", name) == "0"
	end, 2, "members given back after close")

	-- delivered through the first lock's client once member 3 is free
	t = assert(ml:try_acquire_start(30))
	wait_until(function() return clients[3]:stats().waiting == 1 end, 10, "waiting")
	assert(held:release())
	local fd = assert(clients[1]:task_fd())
	local got
	wait_until(function()
		hilock.poll(fd, 0.2)
		got = got or clients[1]:next_task()
		return got ~= nil
	end, 10, "the task through client 1's fd")
	assert(rawequal(got, t), "client 1 hands out this task")
	local g, validity = t:result()
	assert(g, "acquired")
	eq(validity, nil, "validity with the watchdog")
	for i = 1, 3 do eq(redis(i, "HGET", name, ls[i]:owner()), "1", "member " .. i) end
	eq(ls[2]:held(), true, "member 2 held through its lock")
	assert(g:release())
	for i = 1, 3 do eq(redis(i, "EXISTS", name), "0", "member " .. i .. " released") end
	other:close()

	-- a redlock with a lease: its validity
	local rl = hilock.redlock(locks_of(uname("task:red")))
	t = assert(rl:try_acquire_start(2, 10))
	eq(t:wait(5), true, "redlock task done")
	g, validity = t:result()
	assert(g, "redlock acquired")
	assert(validity > 0 and validity <= 10 - 0.102, "validity " .. tostring(validity))
	eq(rl:lost(), false, "recorded for its coroutine")
	assert(g:release())

	-- multilock:close() ends a task still waiting
	local name2 = uname("task:close")
	local hold2 = assert(clients[3]:lock(name2):acquire())
	local ml2 = hilock.multilock(locks_of(name2))
	t = assert(ml2:try_acquire_start())
	wait_until(function() return redis(2, "EXISTS", name2) == "1" end, 10, "member 2 taken")
	assert(ml2:close())
	eq(t:done(), true, "the task ended with the multilock")
	eq(redis(1, "EXISTS", name2), "0", "member 1 given back")
	eq(redis(2, "EXISTS", name2), "0", "member 2 given back")
	assert(hold2:release())

	raises("lease must be positive", ml.try_acquire_start, ml, 1, 0)
	raises("negative time", ml.try_acquire_start, ml, -1)
	raises("hilock multilock expected", ml.try_acquire_start, {})
end)

test("redlock: one of three down acquires, two down fail within the wait", function()
	local name = uname("red")
	local ls = locks_of(name)
	local rl = hilock.redlock(ls)
	eq(rl:quorum(), 2, "quorum")
	stop_server(2)
	local t0 = now()
	local g, valid = rl:acquire{wait = 1.5, lease = 10}
	assert(g, "not acquired with one server down")
	assert(now() - t0 < 2.5, "took " .. (now() - t0))
	assert(valid > 0 and valid <= 10 - 0.102, "validity " .. tostring(valid))
	eq(redis(1, "HGET", name, ls[1]:owner()), "1", "member 1")
	eq(redis(3, "HGET", name, ls[3]:owner()), "1", "member 3")
	assert(g:release())
	eq(redis(1, "EXISTS", name), "0", "member 1 released")
	eq(redis(3, "EXISTS", name), "0", "member 3 released")

	stop_server(3)
	t0 = now()
	local r, msg, code = rl:acquire{wait = 1.5}
	local dt = now() - t0
	assert(r == false or (r == nil and msg:match("RedLock")),
		"two down: " .. tostring(r) .. " " .. tostring(msg) .. " " .. tostring(code))
	assert(dt >= 1.4 and dt < 2.5, "two down took " .. dt)
	eq(redis(1, "EXISTS", name), "0", "member 1 not left held")
end)

test("bad input raises, closed clients are named", function()
	raises("at least one lock", hilock.multilock, {})
	raises("at least one lock", hilock.redlock, {})
	raises("table of locks expected", hilock.multilock, nil)
	raises("element 2 is not a hilock lock", hilock.multilock, {clients[1]:lock("x"), "y"})
	local a = clients[1]:lock("bad:a")
	raises("elements 1 and 2 are the same lock", hilock.multilock, {a, a})
	raises("elements 1 and 2 are the same lock", hilock.redlock, {a, clients[1]:lock("bad:a")})
	local ml = hilock.multilock{a}
	raises("lease must be positive", ml.acquire, ml, {lease = 0})
	raises("negative time", ml.acquire, ml, {wait = -1})
	raises("unknown option", ml.acquire, ml, {wat = 1})
	local c = assert(hilock.connect(URL))
	local late = c:lock("bad:late")
	ml = hilock.multilock{a, late}
	c:close()
	raises("closed hilock client", ml.acquire, ml)
	raises("closed hilock client", hilock.multilock, {a, late})
	eq(redis(1, "EXISTS", "bad:a"), "0", "nothing held")
	-- closing the multilock gives back what it still holds
	local b = clients[1]:lock("bad:b")
	ml = hilock.multilock{a, b}
	assert(ml:acquire())
	assert(ml:acquire())
	assert(ml:close())
	eq(redis(1, "EXISTS", "bad:a"), "0", "a released by close")
	eq(redis(1, "EXISTS", "bad:b"), "0", "b released by close")
	raises("closed hilock multilock", ml.acquire, ml)
end)

test("multilock: members of every kind", function()
	local c = clients[1]
	local fair, fenced, rw, spin = c:fair_lock("k:fair"), c:fenced_lock("k:fenced"),
		c:read_write_lock("k:rw"), c:spin_lock("k:spin")
	local ml = hilock.multilock{fair, fenced, rw.write, spin}
	local other = assert(hilock.connect(URL))
	local rg = assert(other:read_write_lock("k:rw").read:acquire())
	eq(ml:acquire{wait = 0.3}, false, "acquire with a reader elsewhere")
	for _, n in ipairs{"k:fair", "k:fenced", "k:spin"} do eq(redis(1, "EXISTS", n), "0", n) end
	assert(rg:release())
	other:close()
	do
		local g <close> = assert(ml:acquire{wait = 2})
		assert(fair:held() and fenced:held() and rw.write:held() and spin:held())
		assert(fenced:token() > 0, "token")
	end
	for _, n in ipairs{"k:fair", "k:fenced", "k:rw", "k:spin"} do eq(redis(1, "EXISTS", n), "0", n) end
	raises("same lock", hilock.multilock, {rw.write, rw.read})
end)

-- runner ---------------------------------------------------------------------

print("1.." .. #tests)
local passed, failed = 0, 0
for i, t in ipairs(tests) do
	local ok, res = xpcall(t.f, debug.traceback)
	if ok then
		passed = passed + 1
		print(string.format("ok %d - %s", i, t.name))
	else
		failed = failed + 1
		print(string.format("not ok %d - %s", i, t.name))
		for line in tostring(res):gmatch("[^\n]+") do print("#   " .. line) end
	end
	io.stdout:flush()
end
for i = 1, 3 do clients[i]:close() end
stop_server(2)
stop_server(3)
os.execute("rm -rf " .. shq(tmp))
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
