-- The blocking queue (Redisson's RBlockingQueue) under the Lua binding:
-- take wakes when another process offers, poll(timeout) gives nil after
-- about the timeout, FIFO, waits as tasks (many tasks, one blocking
-- command; a cancel loses nothing), a lost BLMOVE reply through the fault
-- proxy (delivered once), Redisson's BLPOP consumers, another type.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis, uname = H.eq, H.check, H.redis, H.uname
local client = assert(hilock.connect(H.URL))
local other = assert(hilock.connect(H.URL))

local function blocked()
	return tonumber(redis("INFO", "clients"):match("blocked_clients:(%d+)"))
end

H.test("operations, FIFO, #", function()
	local name = uname("bq", "ops")
	local q = client:blocking_queue(name)
	eq(q:offer("a"), true, "offer")
	assert(q:put("b"))
	assert(q:put("c\0d"))
	eq(#q, 3, "#")
	eq(q:take(), "a", "take")
	eq(q:poll(1), "b", "poll(1)")
	eq(q:poll(), "c\0d", "poll()")
	eq(q:poll(), nil, "poll() of nothing")
	for i = 1, 30 do assert(q:put(tostring(i))) end
	for i = 1, 30 do eq(i % 2 == 0 and q:take() or q:poll(1), tostring(i), "element " .. i) end
	eq(redis("KEYS", "hilock_inflight:*"), "", "no in-flight list")
end)

H.test("take wakes when another process offers; poll(timeout) gives nil", function()
	local name = uname("bq", "wake")
	local q = client:blocking_queue(name)
	os.execute(string.format("(sleep 0.3; redis-cli -p %s RPUSH '%s' hello >/dev/null) &",
		os.getenv("HILOCK_TEST_REDIS_PORT"), name))
	eq(q:take(), "hello", "woke with the element")
	local w0 = os.time()
	eq(q:poll(0.5), nil, "nothing came")
	check(os.time() - w0 <= 3, "poll(0.5) returned in time")
end)

H.test("waits as tasks: one blocking command, FIFO, cancel loses nothing", function()
	local name = uname("bq", "tasks")
	local q, p = client:blocking_queue(name), other:blocking_queue(name)
	local ts = {}
	for k = 1, 50 do ts[k] = assert(q:take_start()) end
	check(H.wait(function() return blocked() >= 1 end, 10), "a taker blocked")
	os.execute("sleep 0.2")
	eq(blocked(), 1, "one blocking command for 50 tasks")
	for k = 1, 50 do assert(p:put(tostring(k))) end
	for k = 1, 50 do
		eq(ts[k]:wait(20), true, "task " .. k .. " done")
		eq(ts[k]:result(), tostring(k), "task " .. k .. " in order")
		ts[k]:close()
	end
	local t = assert(q:poll_start(0.3))
	eq(t:wait(10), true)
	eq(t:result(), nil, "nil after the timeout")
	t = assert(q:take_start())
	check(H.wait(function() return blocked() >= 1 end, 10), "a taker blocked")
	t:cancel()
	eq(t:wait(10), true)
	local v, msg, code = t:result()
	H.fails("HL_EINTERRUPTED", v, msg, code)
	check(H.wait(function() return blocked() == 0 end, 10), "the wait ended")
	assert(p:put("kept"))
	os.execute("sleep 0.1")
	eq(redis("LRANGE", name, "0", "-1"), "kept", "the offer stays queued")
end)

H.test("a lost BLMOVE reply: the element delivered once", function()
	if not H.FAULTPROXY then print("# skipped: no faultproxy"); return end
	local p = H.proxy()
	local c = assert(hilock.connect(p.url, {command_timeout = 0.25, retry_attempts = 20,
		retry_delay = 0.05, watchdog_timeout = 0.9}))
	local name = uname("bq", "lost")
	local q = c:blocking_queue(name)
	local t = assert(q:take_start())
	check(H.wait(function() return blocked() >= 1 end, 10), "a taker blocked")
	p.cmd("delay 3000")
	redis("RPUSH", name, "only", "next")
	check(H.wait(function() return redis("KEYS", "hilock_inflight:*") ~= "" end, 10), "in flight")
	p.cmd("reset")
	p.cmd("delay 0")
	eq(t:wait(20), true)
	eq(t:result(), "only", "the element in flight")
	eq(redis("LRANGE", name, "0", "-1"), "next")
	eq(q:take(), "next")
	eq(q:poll(0.2), nil, "none twice")
	c:close()
	p.close()
end)

H.test("Redisson's consumers (BLPOP) and producers (RPUSH); another type", function()
	local name = uname("bq", "compat")
	local q = client:blocking_queue(name)
	assert(q:offer("to-java"))
	eq(redis("BLPOP", name, "1"), name .. "\nto-java")
	redis("RPUSH", name, "j1")
	eq(q:take(), "j1")
	redis("HSET", name, "f", "v")
	local v, msg, code = q:take()
	H.fails("HL_EREDIS", v, msg, code)
	check(msg:match("another type"), msg)
end)

H.test("the blocking deque: takes and polls at either end, a task at the tail", function()
	local name = uname("bq", "deque")
	local d = client:blocking_deque(name)
	assert(d:put_last("b"))
	assert(d:put_first("a"))
	assert(d:offer_last("c"))
	eq(#d, 3, "#")
	eq(d:take_last(), "c")
	eq(d:take_first(), "a")
	eq(d:poll_last(0.2), "b")
	eq(d:poll_last(0.2), nil, "nothing came")
	eq(d:poll_first(), nil)
	local t = assert(d:take_last_start())
	check(H.wait(function() return blocked() >= 1 end, 10), "a taker blocked")
	redis("RPUSH", name, "x", "y")
	eq(t:wait(10), true)
	eq(t:result(), "y", "the tail")
	eq(d:take(), "x")
end)

H.run()
