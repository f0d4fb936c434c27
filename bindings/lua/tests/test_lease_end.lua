-- A fixed lease that ends while the lock is held is a loss like any other
-- (issue 18, item 4): lock:lost() turns true and lock:wait_lost() returns
-- true when the lease ends, by the local clock, before any release; the
-- "lost" event comes; the release then answers nil, message, "HL_ELOST". A
-- release before the end is no loss. Against the redis-server started by
-- run-tests.sh (HILOCK_TEST_URL). Prints TAP and "N passed, N failed";
-- exits non-zero if any test failed.
local hilock = require "hilock"

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:lease-end:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	p:close()
	return out
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

local client = assert(hilock.connect(URL, {watchdog_timeout = 2}))
local events = {}
client:on_event(function(e) events[#events + 1] = e end)
local function lost_events(name)
	client:dispatch_events()
	local n = 0
	for _, e in ipairs(events) do
		if e.type == "lost" and e.name == name then n = n + 1 end
	end
	return n
end

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

test("lease end: lost() and wait_lost() by the clock, then HL_ELOST", function()
	local name = uname("end")
	local lock = client:lock(name)
	local t0 = now()
	local g = assert(lock:acquire{lease = 0.4})
	eq(lock:lost(), false, "lost() while the lease runs")
	eq(lock:wait_lost(5), true, "wait_lost() returns at the lease end")
	local took = now() - t0
	check(took >= 0.35 and took < 2, "told after " .. took .. " s, want about 0.4 s")
	eq(lock:lost(), true, "lost() after the lease ended")
	eq(lost_events(name), 1, "one lost event, before any release")
	eq(client:stats().losses, 1, "losses")
	local ok, msg, code = g:release()
	eq(ok, nil, "release after the lease ended")
	eq(code, "HL_ELOST", "release's code (" .. tostring(msg) .. ")")
	eq(lost_events(name), 1, "told once")
end)

test("lease end: lost() turns true by itself, no call in between", function()
	local name = uname("poll")
	local lock = client:lock(name)
	local g = assert(lock:acquire{lease = 0.3})
	sleep(0.8)
	eq(lock:lost(), true, "lost() once the lease ended")
	local ok, _, code = g:release()
	eq(ok, nil, "release")
	eq(code, "HL_ELOST", "code")
end)

test("a release before the lease ends is no loss", function()
	local before = client:stats().losses
	local name = uname("rel")
	local lock = client:lock(name)
	local g = assert(lock:acquire{lease = 0.4})
	assert(g:release())
	sleep(0.8)
	eq(lock:lost(), false, "lost()")
	eq(lost_events(name), 0, "lost events")
	eq(client:stats().losses, before, "losses")
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
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
