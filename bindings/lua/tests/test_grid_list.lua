-- The list, queue and deque (Redisson's RList, RQueue, RDeque) under the
-- Lua binding: every kind of operation and the list left in Redis, 1-based
-- integer indexes, #, values() and pairs over more than one page, NUL and
-- empty values, out of range, another type at the key, a lost poll.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

local function joined(key)
	return (redis("LRANGE", key, "0", "-1"):gsub("\n", "|"))
end

H.test("list: operations, indexes from 1, out of range", function()
	local l = client:list("lua:list")
	eq(#l, 0, "empty")
	eq(l:add("a"), true, "add")
	eq(l:add_all("b", "", "c"), true, "add_all")
	eq(l:add_all(), false, "add_all of nothing")
	eq(joined("lua:list"), "a|b||c")
	eq(l[1], "a", "l[1]")
	eq(l[4], "c", "l[4]")
	eq(l[-1], "c", "l[-1]")
	eq(l[3], "", "empty value")
	eq(l[5], nil, "out of range")
	eq(l[0], nil, "l[0]")
	eq(l:get(0), "a", "get is 0-based")
	l[2] = "B"
	eq(l:set(0, "A"), "a", "set answers the old value")
	eq(l:insert(1, "m"), 5, "insert")
	eq(l:add_after("nope", "x"), -1, "add_after absent")
	eq(l:add_before("c", "<"), 6, "add_before")
	eq(l:index_of("<"), 4, "index_of")
	eq(l:last_index_of("zz"), -1, "last_index_of")
	eq(l:remove_at(1), "m", "remove_at")
	eq(l:remove("<"), true, "remove")
	eq(l:remove("<"), false, "remove again")
	eq(joined("lua:list"), "A|B||c")
	local v, msg, code = l:set(9, "x")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find("index 9 is out of range"), msg)
	v, msg, code = l:remove_at(-9)
	H.fails("HL_EINVAL", v, msg, code)
	H.raises("out of range", function() l[9] = "x" end)
	H.raises("Lua indexes from 1", function() l[0] = "x" end)
	l.note = "a field"
	eq(rawget(l, "note"), "a field", "other keys are fields")
	local vals = {}
	for i = 1, 2500 do vals[i] = tostring(i) end
	assert(l:add_all(table.unpack(vals)))
	eq(#l, 2504, "#")
	local n, last = 0, nil
	for x in l:values() do n = n + 1; last = x end
	eq(n, 2504, "values over pages")
	eq(last, "2500", "the last value")
	local idx = 0
	for i, x in pairs(l) do
		idx = idx + 1
		eq(i, idx, "pairs' index")
		if i == 3 then eq(x, "", "pairs' value") end
	end
	eq(idx, 2504, "pairs over pages")
	assert(l:trim(0, 1))
	eq(joined("lua:list"), "A|B")
	eq(#l:read_range(0, -1), 2)
end)

H.test("queue and deque", function()
	local q = client:queue("lua:q")
	eq(q:poll(), nil, "poll empty")
	eq(q:offer("a"), true)
	eq(q:add("b\0c"), true)
	eq(q:offer("d"), true)
	eq(#q, 3)
	local seen = {}
	for v in q:values() do seen[#seen + 1] = v end
	eq(table.concat(seen, "|"), "a|b\0c|d", "values read, not taken")
	eq(q:peek(), "a")
	eq(q:poll(), "a")
	local many = q:poll_many(5)
	eq(#many, 2)
	eq(many[1], "b\0c")
	local v, msg, code = q:poll_many(-1)
	H.fails("HL_EINVAL", v, msg, code)
	local d = client:deque("lua:dq")
	assert(d:add_first("b"))
	assert(d:add_first("a"))
	assert(d:add_last("c"))
	eq(d:offer_first("0"), true)
	eq(d:offer_last("d"), true)
	eq(joined("lua:dq"), "0|a|b|c|d")
	eq(d:peek_first(), "0")
	eq(d:peek_last(), "d")
	eq(d:poll_first(), "0")
	eq(d:poll_last(), "d")
	eq(d:poll_last_and_offer_first_to("lua:dq2"), "c")
	eq(joined("lua:dq2"), "c")
	eq(#d, 2)
	redis("DEL", "lua:dq", "lua:dq2")
end)

H.test("another type at the key", function()
	redis("SET", "lua:list:bad", "s")
	local v, msg = client:list("lua:list:bad"):add("x")
	check(v == nil and msg:find("another type"), msg)
	v, msg = client:queue("lua:list:bad"):poll()
	check(v == nil and msg:find("WRONGTYPE"), msg)
	H.raises("another type", function() return #client:queue("lua:list:bad") end)
	H.raises("another type", function() return client:list("lua:list:bad")[1] end)
	check(not pcall(client:list("x").add, client:list("x"), 5), "a number raises")
end)

if H.FAULTPROXY then
	H.test("a poll whose reply is lost answers what it took", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1,
			retry_attempts = 20, retry_delay = 0.05}))
		local q = c:queue("lua:q:lost")
		assert(q:offer("first"))
		assert(q:offer("second"))
		eq(c:queue("lua:q:empty"):poll(), nil, "the script cached")
		-- the poll runs, its replies are held past the timeout; the proxy
		-- heals after 1 s (a background write) while the poll retries
		p.cmd("delay 400")
		p.later(1, "delay 0")
		local v, msg = q:poll()
		p.settle()
		eq(v, "first", "the element it took (" .. tostring(msg) .. ")")
		eq(joined("lua:q:lost"), "second")
		c:close()
		p.close()
	end)
end

H.run()
