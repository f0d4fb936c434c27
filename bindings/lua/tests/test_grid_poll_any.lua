-- poll_from_any (Redisson's pollFromAny) under the Lua binding: wakes on an
-- offer to the other queue and says which, nil after the timeout, the task
-- form (a cancel loses nothing), two arrivals at once (one answered, the
-- other still queued), bad input.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis, uname = H.eq, H.check, H.redis, H.uname
local client = assert(hilock.connect(H.URL))

local function blocked()
	return tonumber(redis("INFO", "clients"):match("blocked_clients:(%d+)"))
end

H.test("wakes on the second queue; nil after the timeout", function()
	local a, b = uname("pa", "1"), uname("pa", "2")
	local q = client:blocking_queue(a)
	os.execute(string.format("(sleep 0.3; redis-cli -p %s RPUSH '%s' hello >/dev/null) &",
		os.getenv("HILOCK_TEST_REDIS_PORT"), b))
	local n, v = q:poll_from_any(20, b)
	eq(n, b, "the queue's name")
	eq(v, "hello", "the element")
	local w0 = os.time()
	eq(q:poll_from_any(0.4, b), nil, "nothing came")
	check(os.time() - w0 <= 3, "in time")
	-- the timed-out call's pumps end by themselves (CLIENT UNBLOCK); until
	-- then one may hold a new element in flight for a moment (it gives it
	-- back), so the look below waits for them to be gone
	check(H.wait(function()
		return blocked() == 0 and redis("KEYS", "hilock_inflight:*") == ""
	end, 10), "the pumps ended")
	assert(client:blocking_queue(a):put("x"))
	n, v = q:poll_from_any(0, b)
	eq(n, a)
	eq(v, "x")
	check(H.wait(function() return redis("KEYS", "hilock_inflight:*") == "" end, 10), "nothing in flight")
end)

H.test("as a task: a cancel loses nothing; two at once", function()
	local a, b = uname("pc", "1"), uname("pc", "2")
	local q = client:blocking_queue(a)
	local t = assert(q:poll_from_any_start(nil, b))
	check(H.wait(function() return blocked() >= 2 end, 10), "two blocked takes")
	t:cancel()
	eq(t:wait(10), true)
	H.fails("HL_EINTERRUPTED", t:result())
	t:close()
	check(H.wait(function() return blocked() == 0 end, 10), "the waits ended")
	redis("RPUSH", b, "kept")
	os.execute("sleep 0.1")
	eq(redis("LRANGE", b, "0", "-1"), "kept", "the offer stays queued")
	redis("DEL", b)
	t = assert(q:poll_from_any_start(20, b))
	check(H.wait(function() return blocked() >= 2 end, 10), "two blocked takes")
	redis("EVAL", "redis.call('RPUSH', KEYS[1], 'x'); redis.call('RPUSH', KEYS[2], 'y')", "2", a, b)
	eq(t:wait(10), true)
	local n, v = t:result()
	t:close()
	check((n == a and v == "x") or (n == b and v == "y"), "one answered: " .. tostring(n))
	check(H.wait(function() return blocked() == 0 and redis("KEYS", "hilock_inflight:*") == "" end, 10),
		"nothing in flight")
	eq(redis("LLEN", n == a and b or a), "1", "the other still queued")
	eq(redis("LLEN", n), "0")
end)

H.test("bad input", function()
	local q = client:blocking_queue(uname("pz", "1"))
	H.raises("queue name", function() q:poll_from_any(1, 42) end)
	H.raises("negative", function() q:poll_from_any(-1, "x") end)
end)

H.run()
