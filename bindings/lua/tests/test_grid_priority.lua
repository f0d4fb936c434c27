-- The priority queue and deque (Redisson's RPriorityQueue and
-- RPriorityDeque) under the Lua binding: Java's String order with
-- duplicates, add/poll/peek, #, the iterator over pages, the deque's ends,
-- Redisson's lock waited for, the suffix-form comparator refused, bad
-- input, a lost poll reply.
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

if H.FAULTPROXY then
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
