-- The sorted set (Redisson's RSortedSet) under the Lua binding: Java's
-- String order (UTF-16: a supplementary character before U+E000..U+FFFF),
-- the iterator and #, polls, Redisson's lock waited for, a comparator
-- refused, bad input, a lost reply.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

-- in Java's order (UTF-8 byte order would put U+E000.. before U+10000..)
local VECTORS = {"", "A", "a", "\u{e9}", "\u{10000}", "\u{1F600}", "\u{10FFFF}", "\u{E000}",
	"\u{E000}\u{FFFF}", "\u{FF21}", "\u{FFFF}"}

H.test("values land in Java's String order; add answers whether it added", function()
	local name = H.uname("ss", "order")
	local s = client:sorted_set(name)
	for i = #VECTORS, 1, -1 do eq(s:add(VECTORS[i]), true, "add " .. i) end
	for i = 1, #VECTORS do eq(s:add(VECTORS[i]), false, "add again " .. i) end
	local got = {}
	for v in s:values() do got[#got + 1] = v end
	eq(#got, #VECTORS, "count")
	for i = 1, #VECTORS do eq(got[i], VECTORS[i], "index " .. i) end
	eq(redis("LINDEX", name, "4"), "\u{10000}", "stored in that order")
	eq(#s, #VECTORS, "#")
	eq(s:contains("\u{1F600}"), true, "contains")
	eq(s:contains("\u{1F601}"), false, "contains absent")
	eq(s:first(), "", "first")
	eq(s:last(), "\u{FFFF}", "last")
end)

H.test("remove, polls, pages and pairs", function()
	local s = client:sorted_set(H.uname("ss", "ops"))
	local v, msg = s:poll_first()
	check(v == nil and msg == nil, "poll of an empty set: nil, no message")
	for _, v in ipairs({"c", "a", "d", "b", "e"}) do assert(s:add(v)) end
	eq(s:remove("c"), true, "remove")
	eq(s:remove("c"), false, "remove again")
	eq(s:poll_first(), "a", "poll_first")
	eq(s:poll_last(), "e", "poll_last")
	local r = s:read_range(0, -1)
	eq(#r, 2, "read_range")
	eq(r[1] .. r[2], "bd", "read_range values")
	assert(s:delete())
	for i = 0, 1499 do assert(s:add(string.format("k%05d", (i * 7919) % 1500))) end
	local cursor, page = s:scan()
	eq(cursor, "1000", "cursor")
	eq(#page, 1000, "page")
	local n, prev = 0, ""
	for i, v in pairs(s) do
		n = n + 1
		eq(i, n, "pairs index")
		check(v > prev, "in order")
		prev = v
	end
	eq(n, 1500, "every value")
end)

H.test("waits while Redisson holds the set's lock; refuses a comparator", function()
	local name = H.uname("ss", "lock")
	local s = client:sorted_set(name)
	local lock = "redisson_sortedset_lock:{" .. name .. "}"
	redis("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", "1")
	redis("PEXPIRE", lock, "600")
	eq(s:add("v"), true, "add")
	-- it returned only once the lease ran out (the lock is gone)
	eq(redis("PTTL", lock), "-2", "the lock expired first")
	eq(redis("LRANGE", name, "0", "-1"), "v", "stored")
	local key = "redisson_sortedset_comparator:{" .. name .. "}"
	redis("SET", key, "com.example.ReverseCmp:3f2a")
	local v, msg, code = s:add("a")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find(key, 1, true) and msg:find("com.example.ReverseCmp", 1, true), msg)
	eq(#s, 1, "unchanged")
end)

H.test("bad input: clear errors", function()
	local name = H.uname("ss", "bad")
	local s = client:sorted_set(name)
	local v, msg, code = s:add("\255")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find("UTF-8", 1, true), msg)
	eq(s:add("a\0b"), true, "a NUL inside")
	eq(s:add(""), true, "empty")
	check(not pcall(s.add, s, {}), "a table raises")
	v, msg = s:scan("x")
	check(v == nil and msg:find("cursor"), msg)
	redis("DEL", name)
	redis("SET", name, "x")
	v, msg = s:add("a")
	check(v == nil and msg:find("another type"), msg)
	check(not pcall(function() return #s end), "# raises on failure")
end)

if H.FAULTPROXY then
	H.test("an add whose reply is lost is in doubt, never sent twice", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1}))
		local name = H.uname("ss", "doubt")
		local s = c:sorted_set(name)
		eq(s:add("a"), true)
		p.cmd("delay 400")
		local v, msg, code = s:add("b")
		check(v == nil and code == "HL_EINDOUBT", tostring(msg) .. " " .. tostring(code))
		check(H.wait(function() return redis("LLEN", name) == "2" end, 10), "never landed")
		p.cmd("delay 0")
		eq(#s, 2)
		c:close()
		p.close()
	end)
end

H.run()
