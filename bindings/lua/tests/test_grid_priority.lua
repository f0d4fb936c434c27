-- The priority queue and deque (Redisson's RPriorityQueue and
-- RPriorityDeque) under the Lua binding: Java's String order with
-- duplicates, add/poll/peek, #, the iterator over pages, the deque's ends,
-- Redisson's lock waited for, the suffix-form comparator refused, bad
-- input, a lost poll reply; the blocking queue and deque: takes at both
-- ends, blocking and as tasks, a lost take_last reply.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

-- in Java's order (UTF-8 byte order would put U+E000.. before U+10000..)
local VECTORS = {"", "A", "a", "\u{e9}", "\u{10000}", "\u{1F600}", "\u{10FFFF}", "\u{E000}",
	"\u{FF21}", "\u{FFFF}"}

H.test("values land in Java's String order, duplicates side by side", function()
	local name = H.uname("pq", "order")
	local q = client:priority_queue(name)
	for i = #VECTORS, 1, -1 do eq(q:add(VECTORS[i]), true, "add " .. i) end
	for i = 1, #VECTORS, 2 do eq(q:offer(VECTORS[i]), true, "offer " .. i) end
	local want = {}
	for i = 1, #VECTORS do
		want[#want + 1] = VECTORS[i]
		if i % 2 == 1 then want[#want + 1] = VECTORS[i] end
	end
	local got = {}
	for v in q:values() do got[#got + 1] = v end
	eq(#got, #want, "count")
	for i = 1, #want do eq(got[i], want[i], "index " .. i) end
	eq(#q, #want, "#")
	eq(q:contains("\u{1F600}"), true, "contains")
	eq(q:contains("\u{1F601}"), false, "contains absent")
	eq(q:peek(), "", "peek")
	for i = 1, #want do eq(q:poll(), want[i], "poll " .. i) end
	local v, msg = q:poll()
	check(v == nil and msg == nil, "poll of an empty queue: nil, no message")
	eq(redis("EXISTS", name), "0", "gone")
end)

H.test("remove one occurrence, pages and pairs, the deque's ends", function()
	local name = H.uname("pq", "ops")
	local q = client:priority_queue(name)
	for _, v in ipairs({"b", "a", "b", "c"}) do assert(q:add(v)) end
	eq(q:remove("b"), true, "remove")
	eq(redis("LRANGE", name, "0", "-1"), "a\nb\nc", "one b left")
	eq(q:remove("z"), false, "remove absent")
	local d = client:priority_deque(name)
	eq(d:peek_last(), "c", "peek_last")
	eq(d:poll_last(), "c", "poll_last")
	eq(d:poll_first(), "a", "poll_first")
	eq(d:peek_first(), "b", "peek_first")
	check(d.add_first == nil and d.offer_last == nil, "no add at an end")
	assert(d:delete())
	for i = 0, 2399 do assert(q:add(string.format("k%05d", (i * 7919) % 1200))) end
	local n = 0
	for i, v in pairs(q) do
		n = n + 1
		eq(i, n, "pairs index")
		eq(v, string.format("k%05d", (n - 1) // 2), "in order")
	end
	eq(n, 2400, "every value")
end)

H.test("waits while Redisson holds the lock; empty polls at once; a comparator refused", function()
	local name = H.uname("pq", "lock")
	local q = client:priority_queue(name)
	local lock = "redisson_sortedset_lock:{" .. name .. "}"
	redis("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", "1")
	local t0 = os.time()
	local v, msg = q:poll()
	check(v == nil and msg == nil, "empty: nil at once")
	check(os.time() - t0 <= 2, "did not wait")
	redis("PEXPIRE", lock, "600")
	eq(q:add("v"), true, "add")
	-- it returned only once the lease ran out (the lock is gone)
	eq(redis("PTTL", lock), "-2", "the lock expired first")
	eq(redis("LRANGE", name, "0", "-1"), "v", "stored")
	local key = "{" .. name .. "}:redisson_sortedset_comparator"
	redis("SET", key, "com.example.ReverseCmp:3f2a")
	local code
	v, msg, code = q:add("a")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find(key, 1, true) and msg:find("com.example.ReverseCmp", 1, true), msg)
	eq(#q, 1, "unchanged")
end)

H.test("bad input: clear errors", function()
	local name = H.uname("pq", "bad")
	local q = client:priority_queue(name)
	local v, msg, code = q:add("\255")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find("UTF-8", 1, true), msg)
	eq(q:add("a\0b"), true, "a NUL inside")
	eq(q:add(""), true, "empty")
	check(not pcall(q.add, q, {}), "a table raises")
	redis("DEL", name)
	redis("SET", name, "x")
	v, msg = q:poll()
	check(v == nil and msg:find("another type"), msg)
	check(not pcall(function() return #q end), "# raises on failure")
end)

H.test("the blocking queue: take, poll_timeout, put", function()
	local name = H.uname("pbq", "take")
	local q = client:priority_blocking_queue(name)
	local v, msg = q:poll_timeout(0.2)
	check(v == nil and msg == nil, "nothing in time: nil, no message")
	eq(q:put("b"), true, "put")
	eq(q:add("a"), true, "add")
	eq(#q, 2, "#")
	eq(q:take(), "a", "take")
	eq(q:take(), "b", "take")
	redis("RPUSH", name, "c") -- a Java producer: found by the back-off
	eq(q:poll_timeout(5), "c", "poll_timeout")
	check(not pcall(q.poll_timeout, q, "x"), "a string timeout raises")
end)

local function listening(name)
	local chan = "hilock_priority_queue_channel:{" .. name .. "}"
	return H.wait(function() return redis("PUBSUB", "NUMSUB", chan) == chan .. "\n1" end, 10)
end

H.test("the blocking queue's takes as tasks: woken by an add; nil in time; cancel", function()
	local name = H.uname("pbq", "tasks")
	local q = client:priority_blocking_queue(name)
	local other = assert(hilock.connect(H.URL))
	local t = assert(q:take_start())
	check(listening(name), "the take listens")
	eq(t:done(), false, "waiting")
	eq(other:priority_queue(name):add("w"), true)
	eq(t:wait(10), true)
	eq(t:result(), "w", "woken by the add")
	t = assert(q:poll_start(0.3))
	eq(t:wait(10), true)
	eq(t:result(), nil, "nil after the timeout")
	t = assert(q:take_start())
	check(listening(name), "the take listens")
	t:cancel()
	eq(t:wait(10), true)
	H.fails("HL_EINTERRUPTED", t:result())
	eq(q:add("kept"), true)
	eq(redis("LRANGE", name, "0", "-1"), "kept", "the cancelled take took nothing")
	check(not pcall(q.poll_start, q, "x"), "a string timeout raises")
	other:close()
end)

H.test("the blocking deque: take_last answers the highest, at once or woken", function()
	local name = H.uname("pbd", "last")
	local d = client:priority_blocking_deque(name)
	check(d.add_first == nil and d.offer_last == nil, "no add at an end")
	eq(d:put("b"), true)
	eq(d:add("c"), true)
	eq(d:add("a"), true)
	eq(#d, 3, "#")
	eq(d:peek_last(), "c")
	eq(d:take_last(), "c", "take_last: the highest")
	eq(d:poll_last_timeout(5), "b")
	eq(d:take_first(), "a")
	local v, msg = d:poll_last_timeout(0.2)
	check(v == nil and msg == nil, "nothing in time: nil, no message")
	local t = assert(d:take_last_start())
	check(listening(name), "the take listens")
	eq(d:add("x"), true)
	eq(t:wait(10), true)
	eq(t:result(), "x", "woken by the add")
	redis("RPUSH", name, "a", "y") -- a Java producer: found by the back-off
	t = assert(d:poll_last_start(5))
	eq(t:wait(10), true)
	eq(t:result(), "y", "the tail")
	t = assert(d:poll_first_start(0.2))
	eq(t:wait(10), true)
	eq(t:result(), "a", "the head")
	t = assert(d:take_start())
	check(listening(name), "the take listens")
	eq(d:add("h"), true)
	eq(t:wait(10), true)
	eq(t:result(), "h")
	t = assert(d:poll_last_start(0.2))
	eq(t:wait(10), true)
	eq(t:result(), nil, "nil after the timeout")
end)

if H.FAULTPROXY then
	H.test("a take_last whose reply is lost answers what it took", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1,
			retry_attempts = 40, retry_delay = 0.05}))
		local name = H.uname("pbd", "doubt")
		local d = c:priority_blocking_deque(name)
		eq(d:add("z"), true)
		eq(d:take_last(), "z") -- the script cached
		eq(d:add("b"), true)
		eq(d:add("a"), true)
		p.cmd("delay 400")
		p.later(0.6, "delay 0")
		eq(d:take_last(), "b", "the take's answer")
		p.settle()
		eq(redis("LRANGE", name, "0", "-1"), "a", "only b taken")
		c:close()
		p.close()
	end)

	H.test("a poll whose reply is lost answers what it took", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1,
			retry_delay = 0.05}))
		local name = H.uname("pq", "doubt")
		local q = c:priority_queue(name)
		eq(q:add("b"), true)
		eq(q:poll(), "b") -- the script cached
		eq(q:add("b"), true)
		eq(q:add("a"), true)
		p.cmd("delay 400")
		p.later(0.6, "delay 0")
		eq(q:poll(), "a", "the poll's answer")
		p.settle()
		eq(redis("LRANGE", name, "0", "-1"), "b", "only a taken")
		c:close()
		p.close()
	end)
end

H.run()
