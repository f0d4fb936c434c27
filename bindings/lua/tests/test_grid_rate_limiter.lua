-- Tests of the rate limiter (client:rate_limiter, Redisson's RRateLimiter),
-- against the redis-server started by run-tests.sh (HILOCK_TEST_URL).
-- Prints TAP and "N passed, N failed"; exits non-zero if any test failed.
local hilock = require "hilock"

local H = require "grid_helpers"
local eq, check, raises, fails, redis = H.eq, H.check, H.raises, H.fails, H.redis
local URL = H.URL
local function uname(what) return H.uname("rate", what) end
local function now()
	local p = assert(io.popen("date +%s.%N"))
	local out = p:read("a")
	p:close()
	return tonumber(out)
end
local function threads()
	local f = assert(io.open("/proc/self/status"))
	local s = f:read("a")
	f:close()
	return tonumber(s:match("Threads:%s*(%d+)"))
end

local client = assert(hilock.connect(URL))
local other = assert(hilock.connect(URL))

local test = H.test

test("keys, config, retry-after, release (Redisson's format)", function()
	local name = uname("keys")
	local rl = client:rate_limiter(name)
	eq(rl:try_set_rate("overall", 3, 2), true, "set")
	eq(rl:try_set_rate("per_client", 9, 5), false, "set already")
	eq(redis("HGET", name, "interval"), "2000", "interval in ms")
	eq(redis("HGET", name, "type"), "0", "overall")
	local cfg = assert(rl:get_config())
	eq(cfg.rate, 3)
	eq(cfg.interval, 2.0)
	eq(cfg.mode, "overall")
	eq(cfg.keep_alive, nil)
	eq(rl:try_acquire(), true)
	eq(rl:try_acquire(2), true)
	eq(redis("GET", "{" .. name .. "}:value"), "0", "the counter")
	eq(redis("ZCARD", "{" .. name .. "}:permits"), "2", "the log")
	local ok, retry = rl:try_acquire()
	eq(ok, false)
	check(retry > 1 and retry <= 2.003, "retry after " .. tostring(retry))
	eq(rl:available_permits(), 0)
	assert(rl:release(2))
	eq(rl:available_permits(), 2)
	assert(rl:set_rate("overall", 5, 1, 10))
	check(tonumber(redis("PTTL", name)) > 0, "keep-alive")
	eq(rl:get_config().keep_alive, 10.0)
end)

test("the rate in every window, two clients, bounded waits", function()
	local name = uname("win")
	local a, b = client:rate_limiter(name), other:rate_limiter(name)
	assert(a:try_set_rate("overall", 3, 0.4))
	local grants = {}
	local stop = now() + 1.6
	local who = {a, b}
	local i = 0
	while now() < stop do
		i = i + 1
		local lo = now()
		local ok, retry = who[i % 2 + 1]:try_acquire()
		local hi = now()
		if ok then
			grants[#grants + 1] = {lo, hi}
		else
			check(retry > 0 and retry <= 0.403, "retry " .. tostring(retry))
		end
	end
	check(#grants >= 6 and #grants <= 3 * 6, #grants .. " grants")
	table.sort(grants, function(x, y) return x[1] < y[1] end)
	for k = 1, #grants - 3 do
		local hi = 0
		for j = k, k + 3 do if grants[j][2] > hi then hi = grants[j][2] end end
		check(hi - grants[k][1] >= 0.4, "4 grants within " .. (hi - grants[k][1]) .. " s")
	end
	-- a wait too short for the next permit ends at once; a longer one waits
	local rl = client:rate_limiter(uname("wait"))
	assert(rl:try_set_rate("overall", 1, 1))
	eq(rl:try_acquire(), true)
	local t0 = now()
	eq(rl:try_acquire(1, 0.2), false)
	check(now() - t0 < 0.2, "gave up at once")
	t0 = now()
	eq(rl:try_acquire(1, 5), true)
	check(now() - t0 >= 0.7, "waited the delay")
	eq(rl:acquire(), true)
end)

test("waits as tasks: no thread each, cancel takes nothing", function()
	local rl = client:rate_limiter(uname("task"))
	assert(rl:try_set_rate("overall", 5, 0.3))
	eq(rl:try_acquire(5), true)
	local before = threads()
	local ts = {}
	for k = 1, 20 do ts[k] = assert(rl:acquire_start()) end
	check(threads() - before < 5, "threads for 20 waits: " .. (threads() - before))
	for k = 1, 20 do
		eq(ts[k]:wait(20), true, "task " .. k .. " done")
		eq(ts[k]:result(), true)
		ts[k]:close()
	end
	assert(rl:set_rate("overall", 1, 60))
	eq(rl:try_acquire(), true)
	local t = assert(rl:acquire_start(1, 120))
	check(not t:done(), "waiting")
	t:cancel()
	eq(t:wait(10), true)
	local v, msg, code = t:result()
	fails("HL_EINTERRUPTED", v, msg, code)
	eq(rl:available_permits(), 0, "nothing taken")
	-- a wait too short ends at once: false
	t = assert(rl:acquire_start(1, 2))
	eq(t:wait(1), true)
	eq(t:result(), false)
end)

test("per client: each client its own keys and rate", function()
	local name = uname("pc")
	local a, b = client:rate_limiter(name), other:rate_limiter(name)
	eq(a:try_set_rate("per_client", 1, 60), true)
	eq(a:try_acquire(), true)
	eq(a:try_acquire(), false)
	eq(b:try_acquire(), true)
	eq(redis("GET", "{" .. name .. "}:value:" .. client:id()), "0")
	eq(redis("GET", "{" .. name .. "}:value:" .. other:id()), "0")
end)

test("bad input: errors, nothing written", function()
	local name = uname("bad")
	local rl = client:rate_limiter(name)
	local v, msg, code = rl:try_acquire()
	fails("HL_EINVAL", v, msg, code)
	check(msg:match("no rate"), msg)
	v, msg, code = rl:try_set_rate("overall", 0, 1)
	fails("HL_EINVAL", v, msg, code)
	v, msg, code = rl:try_set_rate("overall", 1, 2, 1)
	fails("HL_EINVAL", v, msg, code)
	check(msg:match("shorter than the interval"), msg)
	raises("overall", rl.try_set_rate, rl, "sideways", 1, 1)
	raises("seconds", rl.try_set_rate, rl, "overall", 1, 0)
	raises("integer", rl.try_set_rate, rl, "overall", 1.5, 1)
	eq(redis("EXISTS", name), "0")
	assert(rl:try_set_rate("overall", 2, 1))
	v, msg, code = rl:try_acquire(3)
	fails("HL_EINVAL", v, msg, code)
	check(msg:match("more than the rate"), msg)
	raises("permits", rl.try_acquire, rl, 0)
	raises("permits", rl.try_acquire, rl, -1)
	raises("negative", rl.try_acquire, rl, 1, -1)
	redis("SET", name .. ":str", "x")
	v, msg, code = client:rate_limiter(name .. ":str"):try_acquire()
	fails("HL_EREDIS", v, msg, code)
	check(msg:match("another type"), msg)
end)

H.run()
