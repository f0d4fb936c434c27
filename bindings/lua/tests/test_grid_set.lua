-- The set (Redisson's RSet) and the scored sorted set (RScoredSortedSet)
-- under the Lua binding: every op against the key in Redis, NUL and empty
-- members, #, pairs and the page iterators past the listpack, scores and
-- ranks (nil, not 0, for a non-member), refused scores, a key of another
-- type, lost replies (a pop and a poll answer what they took).
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

H.test("set: add/remove answer, bulk, random, pops, NUL and empty", function()
	local n = H.uname("set", "s")
	local s = client:set(n)
	eq(#s, 0, "#s")
	eq(s:add("a"), true, "add")
	eq(s:add("a"), false, "add again")
	eq(s:add_all("n\0ul", "", "a"), 2, "add_all")
	eq(s:add_all(), 0, "add_all of none")
	eq(redis("SCARD", n), "3")
	eq(s:contains("n\0ul"), true, "NUL member")
	eq(s:contains("n"), false, "a prefix")
	eq(s:contains(""), true, "empty member")
	eq(s:contains_all("a", ""), true)
	eq(s:contains_all("a", "zz"), false)
	eq(s:remove("a"), true, "remove")
	eq(s:remove("a"), false, "remove again")
	eq(#s, 2, "#s")
	local seen = {}
	for m, t in pairs(s) do seen[m] = t end
	check(seen["n\0ul"] == true and seen[""] == true, "pairs")
	check(s:random() ~= nil, "random")
	eq(#s:random_many(10), 2, "random_many")
	local m = s:remove_random()
	check(m == "n\0ul" or m == "", "remove_random")
	eq(s:contains(m), false, "taken")
	eq(#s:remove_random_many(5), 1)
	eq(s:remove_random(), nil, "pop of empty")
	eq(#s:remove_random_many(2), 0)
	eq(redis("EXISTS", n), "0")
end)

H.test("set: 3000 members in one call, iterated by pages", function()
	local s = client:set(H.uname("set", "many"))
	local ms = {}
	for i = 1, 3000 do ms[i] = "m" .. i end
	eq(s:add_all(table.unpack(ms)), 3000)
	local cursor, page = s:scan("0", 100)
	check(cursor ~= "0" and #page < 3000, "one page")
	local seen, k = {}, 0
	for m in s:members() do
		if not seen[m] then k = k + 1 end
		seen[m] = true
	end
	eq(k, 3000, "members")
	eq(s:remove_all(table.unpack(ms, 1, 10)), 10)
	eq(#s, 2990)
end)

H.test("scored sorted set: scores, ranks, ends, ranges, polls", function()
	local n = H.uname("zset", "z")
	local z = client:scored_sorted_set(n)
	eq(#z, 0)
	eq(z:get_score("a"), nil, "get_score of none")
	eq(z:rank("a"), nil, "rank of none")
	eq(z:first(), nil)
	eq(z:first_score(), nil)
	eq(z:poll_first(), nil)
	eq(z:add(1.5, "a"), true, "add")
	eq(z:add(2.5, "a"), false, "add again")
	eq(z:try_add(9, "a"), false, "try_add")
	eq(z:add_all({["n\0ul"] = -0.25, [""] = 1e300}), 2, "add_all map")
	eq(z:add_all({{"x", 7}, {"y", 8}}), 2, "add_all pairs")
	eq(z:add_all({}), 0)
	eq(z:add_score("a", 0.1), 2.6, "add_score")
	eq(tonumber(redis("ZSCORE", n, "")), 1e300)
	eq(z:get_score(""), 1e300)
	eq(z:rank("n\0ul"), 0, "rank 0 is not nil")
	eq(z:rev_rank("a"), 3)
	eq(z:first(), "n\0ul")
	eq(z:last(), "")
	eq(z:last_score(), 1e300)
	local v = z:value_range(0, 1)
	check(#v == 2 and v[1] == "n\0ul" and v[2] == "a", "value_range")
	local e = z:entry_range(-1, -1)
	check(#e == 1 and e[1][1] == "" and e[1][2] == 1e300, "entry_range")
	eq(#z:value_range_by_score(-math.huge, math.huge), 5, "open ends")
	v = z:value_range_by_score(-0.25, 7, false, false)
	check(#v == 1 and v[1] == "a", "exclusive ends")
	v = z:value_range_by_score(-math.huge, math.huge, true, true, 1, 2)
	check(#v == 2 and v[1] == "a" and v[2] == "x", "limit")
	e = z:entry_range_by_score(8, math.huge)
	check(#e == 2 and e[1][1] == "y" and e[1][2] == 8, "entry_range_by_score")
	eq(z:count(-math.huge, 7, true, false), 2, "count")
	local order = {}
	for m, sc in z:in_order(true, 2) do order[#order + 1] = m end
	eq(table.concat(order, ","), ",y,x,a,n\0ul", "in_order reverse")
	local k = 0
	for m, sc in pairs(z) do k = k + 1 end
	eq(k, 5, "pairs")
	eq(z:poll_first(), "n\0ul")
	eq(z:poll_last(), "")
	local ms = z:poll_first_many(2)
	check(#ms == 2 and ms[1] == "a" and ms[2] == "x", "poll_first_many")
	eq(z:remove("y"), true)
	eq(z:remove("y"), false)
	eq(redis("EXISTS", n), "0")
end)

H.test("scored sorted set: many members by pages; refused scores", function()
	local z = client:scored_sorted_set(H.uname("zset", "many"))
	local es = {}
	for i = 1, 2000 do es[i] = {string.format("m%05d", i), i / 4 - 100} end
	eq(z:add_all(es), 2000)
	local k = 0
	for m, sc in z:entries() do k = k + 1 end
	eq(k, 2000, "entries")
	local prev, j = -math.huge, 0
	for m, sc in z:in_order() do
		check(sc > prev, "order")
		prev, j = sc, j + 1
	end
	eq(j, 2000, "in_order")
	for _, bad in ipairs({0 / 0, math.huge, -math.huge}) do
		H.raises("finite", z.add, z, bad, "x")
		H.raises("finite", z.add_score, z, "x", bad)
		H.raises("finite", z.add_all, z, {x = bad})
	end
	H.raises("number expected", z.count, z, 0 / 0, 1)
	H.raises("string expected", z.add, z, 1, 5)
	eq(z:get_score("x"), nil)
	eq(#z, 2000)
end)

H.test("a key of another type: a clear error, nothing changed", function()
	local n = H.uname("set", "str")
	redis("SET", n, "plain")
	H.fails("HL_EREDIS", client:set(n):add("x"))
	local v, msg = client:set(n):add("x")
	check(msg:match("another type of value than a set"), msg)
	H.fails("HL_EREDIS", client:scored_sorted_set(n):poll_first())
	H.fails("HL_EREDIS", client:scored_sorted_set(n):rank("x"))
	H.raises("another type", function() for m in client:set(n):members() do end end)
	H.raises("another type", function() return #client:set(n) end)
	eq(redis("GET", n), "plain")
end)

if H.FAULTPROXY then
	-- the delay is lifted from another process while the call retries
	local function lift_later(p)
		os.execute(string.format("(sleep 0.7; echo 'delay 0' > '%s') &", p.fifo))
	end

	H.test("a pop and a poll whose replies are lost answer what they took", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1,
			retry_attempts = 20, retry_delay = 0.05}))
		local n = H.uname("set", "doubt")
		local s, z = c:set(n), c:scored_sorted_set(n .. ":z")
		s:add_all("p")
		s:remove_random() -- the scripts cached (else a late copy meets NOSCRIPT)
		z:poll_first()
		s:add_all("p", "q")
		z:add_all({one = 1, two = 2})
		p.cmd("delay 400")
		lift_later(p)
		local m, msg = s:remove_random()
		check(m == "p" or m == "q", tostring(msg))
		eq(redis("SCARD", n), "1", "taken once")
		eq(redis("SISMEMBER", n, m), "0", "the answer is what went")
		p.cmd("delay 400")
		lift_later(p)
		eq(z:poll_first(), "one", "poll")
		eq(redis("ZCARD", n .. ":z"), "1")
		p.cmd("delay 400")
		H.fails("HL_EINDOUBT", z:add(5, "w"))
		check(H.wait(function() return redis("ZSCORE", n .. ":z", "w") == "5" end, 10), "never landed")
		p.cmd("delay 0")
		eq(redis("ZCARD", n .. ":z"), "2")
		c:close()
		p.close()
	end)
end

H.run()
