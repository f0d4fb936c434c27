-- Faults under the Lua binding: the fault proxy (tests/tools/faultproxy,
-- $HILOCK_FAULTPROXY) between a client and the redis-server of run-tests.sh
-- (HILOCK_TEST_URL), a server of its own killed (-9) and started again, and
-- fork() (through forkhelper.c, a test-only C module built by run-tests.sh:
-- $HILOCK_TEST_FORKHELPER is the directory holding forkhelper.so). What C,
-- Python and Go prove, proven for Lua: deadlines bound every call in a
-- black hole, a loss is told by the clock before the lease ends (with the
-- renewal_failed and lost events), a waiter gets the lock after a Redis
-- restart, and a forked child refuses the inherited client.
-- Prints TAP and "N passed, N failed"; exits non-zero if any test failed.
-- Every wait is bounded; run-tests.sh also runs this under `timeout`.
local hilock = require "hilock"

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"))
local FAULTPROXY = assert(os.getenv("HILOCK_FAULTPROXY"), "HILOCK_FAULTPROXY not set")
local TMP = assert(os.getenv("HILOCK_TEST_FAULTS_DIR"), "HILOCK_TEST_FAULTS_DIR not set")
local FORKHELPER = os.getenv("HILOCK_TEST_FORKHELPER")
if FORKHELPER == "" then FORKHELPER = nil end
-- a loaded machine may set it above 1: the upper time bounds grow with it
local SCALE = tonumber(os.getenv("HILOCK_TEST_SCALE") or "") or 1

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:faults:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

-- helpers --------------------------------------------------------------------

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	p:close()
	return out
end
-- A command to the redis-server on port, straight (not through a proxy).
local function rcli(port, ...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. port
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return ((sh(cmd .. " 2>&1")):gsub("\n$", ""))
end
local function redis(...) return rcli(PORT, ...) end
local function now() return tonumber((sh("date +%s.%N"))) end
local function sleep(s) os.execute("sleep " .. s) end

-- Poll pred every 0.05 s up to limit seconds; true as soon as it holds.
local function eventually(limit, pred)
	local deadline = now() + limit
	repeat
		if pred() then return true end
		sleep(0.05)
	until now() > deadline
	return pred()
end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end
local function check(cond, what)
	if not cond then error(what or "check failed", 2) end
end
-- nil, message, code with that code
local function fails(code, v, msg, c)
	if v ~= nil then error("expected nil, message, " .. code .. "; got " .. tostring(v), 2) end
	if type(msg) ~= "string" or msg == "" then error("no message", 2) end
	if c ~= code then error("expected code " .. code .. ", got " .. tostring(c) .. " (" .. msg .. ")", 2) end
	return msg
end

local function numsub(port, channel)
	return tonumber(rcli(port, "PUBSUB", "NUMSUB", channel):match("(%d+)$")) or -1
end
local function channel_of(name) return "redisson_lock__channel:{" .. name .. "}" end

-- The fault proxy ------------------------------------------------------------
-- faultproxy reads commands on its stdin and answers each on stdout once
-- its effect is in place; io.popen gives one direction, so its stdin is a
-- FIFO. It exits when the FIFO's writer closes (at the latest when this
-- process ends).

local Proxy = {}
Proxy.__index = Proxy
local proxies, nproxies = {}, 0

local function proxy_start(upstream)
	nproxies = nproxies + 1
	local fifo = TMP .. "/proxy" .. nproxies .. ".in"
	assert(os.execute("mkfifo " .. shq(fifo)), "mkfifo " .. fifo)
	local out = assert(io.popen(string.format("exec %s %s < %s", shq(FAULTPROXY), upstream, shq(fifo))))
	local ctl = assert(io.open(fifo, "w")) -- returns once the proxy's shell opened it
	local first = out:read("l")
	local port = first and first:match("^port (%d+)$")
	if not port then error("faultproxy: first line " .. tostring(first)) end
	local p = setmetatable({out = out, ctl = ctl, port = port,
		url = "redis://127.0.0.1:" .. port .. "/0"}, Proxy)
	proxies[#proxies + 1] = p
	return p
end

function Proxy:cmd(c)
	assert(self.ctl, "faultproxy is closed")
	self.ctl:write(c, "\n")
	self.ctl:flush()
	local ans = self.out:read("l")
	if ans ~= "ok" and not (ans or ""):match("^ok ") then
		error("faultproxy '" .. c .. "': " .. tostring(ans), 2)
	end
	return ans:sub(4)
end
function Proxy:blackhole(on) self:cmd(on and "blackhole on" or "blackhole off") end

function Proxy:close()
	if self.ctl then
		pcall(self.cmd, self, "quit")
		self.ctl:close()
		self.out:close()
		self.ctl = nil
	end
end

-- A redis-server of this file's own, to kill and start again -----------------

local own = {dir = TMP .. "/own"}

local function ping(port)
	return rcli(port, "PING") == "PONG"
end

local function own_up(port)
	os.execute("mkdir -p " .. shq(own.dir))
	os.execute(string.format("%s --port %s --bind 127.0.0.1 --save '' --appendonly no " ..
		"--dir %s --daemonize yes --pidfile %s/pid --logfile %s/log",
		os.getenv("REDIS_SERVER") or "redis-server", port, shq(own.dir), shq(own.dir),
		shq(own.dir)))
	return eventually(10, function() return ping(port) end)
end

local function own_start()
	for _ = 1, 5 do
		local port = (sh([[python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])']])):gsub("\n$", "")
		if own_up(port) then
			own.port = port
			return port
		end
	end
	error("cannot start a redis-server of our own")
end

-- kill -9: nothing is persisted (--save ''), every lock vanishes
local function own_kill()
	os.execute("kill -9 $(cat " .. shq(own.dir .. "/pid") .. ") 2>/dev/null")
	check(eventually(10, function() return not ping(own.port) end), "redis-server still answers")
	os.remove(own.dir .. "/pid")
end

local function own_stop()
	if own.port then
		os.execute("kill $(cat " .. shq(own.dir .. "/pid") .. ") 2>/dev/null")
		eventually(10, function() return not ping(own.port) end)
		own.port = nil
	end
end

-- TAP ------------------------------------------------------------------------

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

-- tests ----------------------------------------------------------------------

test("black hole: acquire{wait} ends by its deadline with HL_ECONNECT (an outage, not contention); try_acquire and a task too", function()
	local p = proxy_start(PORT)
	local c <close> = assert(hilock.connect(p.url)) -- the defaults: 3 s per reply
	local name = uname("deadline")
	local lock = c:lock(name)
	assert(assert(lock:acquire{wait = 1}):release())
	p:blackhole(true)
	local t0 = now()
	local r, msg, code = lock:acquire{wait = 1}
	local took = now() - t0
	print(string.format("# acquire{wait = 1} in a black hole: %.3f s (%s %s %s)", took,
		tostring(r), tostring(msg), tostring(code)))
	-- Redis never answered during the wait: an outage, not "taken"
	-- (docs/consistency.md)
	fails("HL_ECONNECT", r, msg, code)
	check(msg:match("unreachable") and msg:match(p.url:match("//([^/]+)")), msg)
	check(took >= 0.95 and took < 1.5 * SCALE, "acquire{wait = 1} took " .. took .. " s")
	t0 = now()
	fails("HL_ECONNECT", lock:try_acquire())
	took = now() - t0
	print(string.format("# try_acquire in a black hole: %.3f s", took))
	check(took < 0.5 * SCALE, "try_acquire took " .. took .. " s")
	-- the form that does not block: its task completes by its deadline too
	t0 = now()
	local t = assert(lock:try_acquire_start(1))
	check(t:wait(10 * SCALE), "the task did not complete")
	took = now() - t0
	fails("HL_ECONNECT", t:result())
	check(took >= 0.95 and took < 1.5 * SCALE, "the task took " .. took .. " s")
	t:close()
	eq(c:stats().acquisitions, 1, "acquisitions: the one before the black hole")
	p:blackhole(false)
	p:close()
end)

test("black hole: an acquire that failed leaves nothing held once the network flows",
	function()
	local p = proxy_start(PORT)
	local c <close> = assert(hilock.connect(p.url))
	local name = uname("late")
	local lock = c:lock(name)
	assert(assert(lock:acquire{wait = 1}):release())
	p:blackhole(true)
	fails("HL_ECONNECT", lock:acquire{wait = 1})
	p:blackhole(false)
	-- what waited in the network arrives late: it must be fenced or undone
	check(eventually(5 * SCALE, function() return redis("EXISTS", name) == "0" end),
		"held in Redis by the caller after its acquire returned false: " ..
		redis("HGETALL", name):gsub("\n", " ") .. ", PTTL " .. redis("PTTL", name))
	eq(lock:held(), false, "held() after the black hole")
	p:close()
end)

test("black hole under a holder: renewal_failed, then lost by the clock before the lease ends", function()
	local p = proxy_start(PORT)
	local c <close> = assert(hilock.connect(p.url, {watchdog_timeout = 3, command_timeout = 1,
		connect_timeout = 1, retry_delay = 0.1, ping_interval = 0.3}))
	local seen = {}
	c:on_event(function(e) seen[#seen + 1] = e end)
	local name = uname("lost")
	local lock = c:lock(name)
	local g = assert(lock:acquire())
	check(eventually(5 * SCALE, function() return c:stats().renewals >= 1 end), "never renewed")
	eq(lock:lost(), false, "lost before the black hole")
	eq(#seen, 0, "events before the black hole")
	p:blackhole(true)
	local t0 = now()
	eq(lock:wait_lost(10 * SCALE), true, "wait_lost in a black hole")
	-- told while Redis still has it: nobody else can hold it yet
	local pttl = tonumber(redis("PTTL", name))
	local took = now() - t0
	print(string.format("# lost %.3f s into the black hole, %d ms of lease left in Redis", took, pttl))
	check(pttl > 0, "the loss was told after the lease ended in Redis (PTTL " .. pttl .. ")")
	eq(lock:lost(), true, "lost()")
	-- the events, on this thread: one renewal_failed for the hold, then lost
	check(eventually(5 * SCALE, function()
		c:dispatch_events()
		return #seen >= 2
	end), "events: " .. #seen)
	local kinds = {}
	for i, e in ipairs(seen) do kinds[i] = e.type end
	eq(table.concat(kinds, ","), "renewal_failed,lost", "the events in order")
	local f, l = seen[1], seen[2]
	eq(f.name, name, "renewal_failed: name")
	eq(f.owner, lock:owner(), "renewal_failed: owner")
	eq(f.status, "HL_EIO", "renewal_failed: status")
	check(f.message:find("no answer", 1, true), f.message)
	eq(l.name, name, "lost: name")
	eq(l.status, "HL_ELOST", "lost: status")
	check(l.monotonic >= f.monotonic, "lost before renewal_failed")
	local s = c:stats()
	check(s.renewal_failures >= 1, "renewal_failures " .. s.renewal_failures)
	eq(s.losses, 1, "losses")
	-- the release says so at once, with no round trip into the black hole
	t0 = now()
	fails("HL_ELOST", g:release())
	took = now() - t0
	check(took < 0.5 * SCALE, "the release of a lost hold took " .. took .. " s")
	p:blackhole(false)
	p:close()
end)

test("Redis restarted under a waiter: the waiter takes the lock, the old holder's client works again", function()
	local port = own_start()
	local url = "redis://127.0.0.1:" .. port .. "/0"
	local a <close> = assert(hilock.connect(url, {watchdog_timeout = 30}))
	local b <close> = assert(hilock.connect(url, {retry_delay = 0.2, connect_timeout = 2}))
	local name = uname("restart")
	local h = a:lock(name)
	local hg = assert(h:acquire())
	local w = b:lock(name)
	local task = assert(w:try_acquire_start(25))
	-- the waiter really waits: the gauge, and its subscription in Redis
	check(eventually(10 * SCALE, function() return b:stats().waiting == 1 end),
		"the waiter is not waiting: " .. b:stats().waiting)
	check(eventually(10 * SCALE, function() return numsub(port, channel_of(name)) >= 1 end),
		"the waiter is not subscribed")
	eq(task:done(), false, "the waiter is done before the restart")
	own_kill()
	check(own_up(port), "redis-server did not start again on port " .. port)
	local t0 = now()
	check(task:wait(30 * SCALE), "the waiter slept through the restart")
	local dt = now() - t0
	local g, msg, code = task:result()
	check(g, "the waiter: " .. tostring(msg) .. " (" .. tostring(code) .. ")")
	print(string.format("# the waiter acquired %.3f s after the restart", dt))
	check(dt < 10 * SCALE, "the waiter took " .. dt .. " s")
	eq(rcli(port, "HGET", name, w:owner()), "1", "the waiter's hold in Redis")
	assert(g:release())
	eq(rcli(port, "EXISTS", name), "0", "free after the waiter's release")
	task:close()
	-- the old holder's hold went with the restart; its client works again
	local ok, _, rc = hg:release()
	check(not ok and (rc == "HL_ELOST" or rc == "HL_ENOTHELD" or rc == "HL_EIO"),
		"the old holder's release: " .. tostring(ok) .. " " .. tostring(rc))
	check(eventually(10 * SCALE, function() return h:locked() == false end),
		"the old holder's client did not reconnect")
	local g2 = assert(h:acquire{wait = 5})
	eq(rcli(port, "HGET", name, h:owner()), "1", "the old holder's new hold")
	assert(g2:release())
end)

test("Redis down under a waiter: acquire{wait} is bounded; after the restart it works", function()
	local port = own.port or own_start()
	local url = "redis://127.0.0.1:" .. port .. "/0"
	local c <close> = assert(hilock.connect(url, {connect_timeout = 0.5, command_timeout = 0.5,
		retry_delay = 0.2}))
	local name = uname("down")
	local lock = c:lock(name)
	assert(assert(lock:acquire{wait = 1}):release())
	own_kill()
	local t0 = now()
	local r, msg, code = lock:acquire{wait = 1.5}
	local took = now() - t0
	print(string.format("# acquire{wait = 1.5} with Redis down: %.3f s (%s %s %s)", took,
		tostring(r), tostring(msg), tostring(code)))
	-- an outage, not contention (docs/consistency.md)
	check(r == nil and code == "HL_ECONNECT" and msg:match("unreachable"),
		"acquire with Redis down: " .. tostring(r) .. " " .. tostring(code))
	check(took < 1.5 + 2 * SCALE, "acquire{wait = 1.5} took " .. took .. " s")
	check(own_up(port), "redis-server did not start again")
	local g
	check(eventually(10 * SCALE, function()
		g = lock:acquire{wait = 1}
		return g
	end), "no acquire after the restart")
	eq(rcli(port, "HGET", name, lock:owner()), "1", "held after the restart")
	assert(g:release())
end)

test("fork: the child's inherited client refuses use; freeing it there leaves the parent's hold", function()
	if not FORKHELPER then return "skip", "no forkhelper.so (HILOCK_TEST_FORKHELPER)" end
	package.cpath = FORKHELPER .. "/?.so;" .. package.cpath
	local fh = require "forkhelper"
	for _, p in ipairs(proxies) do p:close() end -- nothing of theirs in the child
	local c = assert(hilock.connect(URL, {watchdog_timeout = 1}))
	local name, other = uname("fork"), uname("fork-child")
	local lock = c:lock(name)
	local g = assert(lock:acquire())
	local owner = lock:owner()
	local report = TMP .. "/fork-child.txt"
	os.remove(report)
	local pid = fh.fork()
	if pid == 0 then
		-- the child: no TAP from here; what failed goes to the report
		local ok, err = xpcall(function()
			local msg = fails("HL_EFORKED", lock:locked())
			check(msg:lower():find("fork", 1, true), "the message says why: " .. msg)
			fails("HL_EFORKED", lock:acquire{wait = 0})
			fails("HL_EFORKED", c:lock(uname("fork-new")):acquire{wait = 0})
			-- not the parent's hold to release
			fails("HL_EFORKED", g:release())
			-- a client of its own works, and sees the parent's hold
			local mine = assert(hilock.connect(URL))
			eq(mine:lock(name):try_acquire(), false, "the parent's lock, from the child")
			local mg = assert(mine:lock(other):acquire{wait = 5})
			eq(redis("HGET", other, mine:lock(other):owner()), "1", "the child's own hold")
			assert(mg:release())
			mine:close()
			eq(c:close(), true, "close of the inherited client")
		end, debug.traceback)
		local f = io.open(report, "w")
		if f then
			f:write(ok and "ok\n" or tostring(err))
			f:close()
		end
		-- closing the Lua state collects the inherited client, lock and guard
		-- in the child too
		os.exit(ok and 0 or 1, true)
	end
	local st, why = fh.wait(pid, 30 * SCALE)
	local f = io.open(report)
	local rep = f and f:read("a") or "(no report)"
	if f then f:close() end
	check(st == 0, "the child: " .. tostring(st or why) .. ": " .. rep)
	eq(rep, "ok\n", "the child's report")
	-- the parent: still holds it, renewed on its own connections (the child
	-- closed nothing of them: no reconnect)
	local r0 = c:stats().renewals
	check(eventually(5 * SCALE, function() return c:stats().renewals >= r0 + 2 end),
		"the parent's hold is no longer renewed")
	eq(lock:lost(), false, "the parent's hold lost")
	eq(redis("HGET", name, owner), "1", "the parent's hold in Redis")
	check(tonumber(redis("PTTL", name)) > 0, "the parent's lease")
	eq(c:stats().reconnects, 0, "the parent's reconnects")
	assert(g:release())
	eq(redis("EXISTS", name), "0", "released by the parent")
	eq(redis("EXISTS", other), "0", "the child's lock")
	c:close()
end)

-- runner ---------------------------------------------------------------------

-- HILOCK_TEST_ONLY=pattern runs the tests whose names match it (a Lua pattern)
local only = os.getenv("HILOCK_TEST_ONLY")
if only and only ~= "" then
	local kept = {}
	for _, t in ipairs(tests) do
		if t.name:find(only) then kept[#kept + 1] = t end
	end
	tests = kept
end

print("1.." .. #tests)
local passed, failed, skipped = 0, 0, 0
for i, t in ipairs(tests) do
	local ok, res, why = xpcall(t.f, debug.traceback)
	if ok and res == "skip" then
		skipped = skipped + 1
		passed = passed + 1
		print(string.format("ok %d - %s # SKIP %s", i, t.name, why))
	elseif ok then
		passed = passed + 1
		print(string.format("ok %d - %s", i, t.name))
	else
		failed = failed + 1
		print(string.format("not ok %d - %s", i, t.name))
		for line in tostring(res):gmatch("[^\n]+") do print("#   " .. line) end
	end
	io.stdout:flush()
	for _, p in ipairs(proxies) do p:close() end
end
own_stop()
print(string.format("# %d passed, %d failed%s", passed, failed,
	skipped > 0 and (", " .. skipped .. " skipped") or ""))
os.exit(failed == 0 and 0 or 1)
