-- The map (Redisson's RMap) under the Lua binding: every operation and the
-- hash it leaves, exact bytes, put_all of a table or pairs, iteration by
-- HSCAN pages (m:pairs(), pairs(m), #m), another type, bad input, a lost
-- reply.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

H.test("operations and the hash they leave", function()
	local name = H.uname("map", "ops")
	local m = client:map(name)
	local v, msg = m:get("a")
	check(v == nil and msg == nil, "absent: nil without a message")
	eq(m:put("a", "1"), nil, "put new")
	eq(m:put("a", "2"), "1", "put answers the value before")
	eq(redis("HGET", name, "a"), "2")
	eq(m:put_if_absent("a", "x"), "2", "put_if_absent present")
	eq(m:put_if_absent("b", "B"), nil, "put_if_absent absent")
	eq(m:fast_put("c", "C"), true)
	eq(m:fast_put("c", "CC"), false)
	eq(m:fast_put_if_absent("c", "x"), false)
	eq(m:fast_put_if_absent("d", "D"), true)
	eq(m:put_if_exists("e", "E"), nil)
	eq(redis("HEXISTS", name, "e"), "0")
	eq(m:fast_replace("e", "E"), false)
	eq(m:fast_put_if_exists("d", "D"), true)
	eq(m:replace("d", "D2"), "D")
	eq(m:replace_if("d", "D", "X"), false)
	eq(m:replace_if("d", "D2", "D3"), true)
	eq(m:remove_if("d", "D2"), false)
	eq(m:remove_if("d", "D3"), true)
	eq(m:remove("b"), "B")
	eq(m:remove("b"), nil)
	eq(m:contains_key("a"), true)
	eq(m:contains_key("b"), false)
	eq(m:size(), 2)
	eq(#m, 2)
	eq(m:value_size("c"), 2)
	assert(m:put_all({p1 = "v1", p2 = ""}))
	assert(m:put_all("p3", "v3", "p4", "v4"))
	local all = m:get_all("p1", "p2", "nope", "p4")
	eq(all.p1, "v1")
	eq(all.p2, "")
	eq(all.nope, nil)
	eq(all.p4, "v4")
	eq(next(m:get_all()), nil, "get_all of none")
	eq(#m:random_keys(100), 6, "a, c, p1, p2, p3, p4")
	eq(m:random_entries(100).p3, "v3")
	eq(m:fast_remove("p1", "p2", "nope"), 2)
	eq(m:fast_remove(), 0)
	eq(m:add_and_get("n", 0.1), 0.1)
	eq(redis("HGET", name, "n"), "0.1")
	eq(m:add_and_get("n", 2.9), 3.0)
	assert(m:set("s", "S"))
	eq(redis("HGET", name, "s"), "S")
	local cursor, page = m:scan("0", 100, "p*")
	eq(cursor, "0")
	eq(#page, 2, "p3, p4")
	eq(page[1][1]:sub(1, 1), "p")
end)

H.test("NUL and empty keys and values are kept exactly", function()
	local m = client:map(H.uname("map", "bytes"))
	eq(m:put("a\0b", "\0\255"), nil)
	eq(m:get("a\0b"), "\0\255")
	eq(m:get("a"), nil, "not cut at the NUL")
	assert(m:set("", ""))
	eq(m:get(""), "", "empty, not absent")
	eq(m:contains_key(""), true)
	eq(m:value_size("a\0b"), 2)
	local seen = {}
	for k, v in m:pairs() do seen[k] = v end
	eq(seen["a\0b"], "\0\255")
	eq(seen[""], "")
end)

H.test("iteration by pages past the listpack: m:pairs(), pairs(m), #m", function()
	local name = H.uname("map", "many")
	local m = client:map(name)
	local t = {}
	for i = 1, 1500 do t["k" .. i] = "v" .. i end
	assert(m:put_all(t))
	eq(#m, 1500)
	local n, bad = 0, 0
	for k, v in m:pairs() do
		n = n + 1
		if t[k] ~= v then bad = bad + 1 end
		t[k] = nil
	end
	eq(n, 1500, "each entry once")
	eq(bad, 0)
	eq(next(t), nil, "none missed")
	n = 0
	for k in pairs(m) do n = n + 1 end
	eq(n, 1500, "__pairs")
	n = 0
	for k in m:pairs("k1*") do
		check(k:sub(1, 2) == "k1", k)
		n = n + 1
	end
	eq(n, 1 + 10 + 100 + 501, "k1, k10..k19, k100..k199, k1000..k1500")
end)

H.test("another type at the key; bad input", function()
	local name = H.uname("map", "bad")
	local m = client:map(name)
	local v, msg, code = m:put_all("k", "v", "odd")
	H.fails("HL_EINVAL", v, msg, code)
	check(msg:find("even"), msg)
	check(not pcall(m.put_all, m, {k = 5}), "a number value raises")
	check(not pcall(m.get, m, 5), "a number key raises")
	check(not pcall(m.add_and_get, m, "k", 0 / 0), "NaN raises")
	eq(redis("EXISTS", name), "0")
	redis("RPUSH", name, "x")
	v, msg, code = m:get("k")
	H.fails("HL_EREDIS", v, msg, code)
	check(msg:find("another type"), msg)
	H.raises("another type", function() for _ in m:pairs() do end end)
	H.raises("another type", function() return #m end)
	eq(next(m:get_all()), nil, "no round trip")
	eq(redis("LLEN", name), "1")
end)

if H.FAULTPROXY then
	H.test("a put whose reply is lost is in doubt, run once", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1}))
		local name = H.uname("map", "doubt")
		local m = c:map(name)
		eq(m:put("f", "v0"), nil)
		p.cmd("delay 400")
		local v, msg, code = m:put("f", "v1")
		check(v == nil and code == "HL_EINDOUBT", tostring(msg) .. " " .. tostring(code))
		check(H.wait(function() return redis("HGET", name, "f") == "v1" end, 10), "never landed")
		p.cmd("delay 0")
		eq(m:get("f"), "v1")
		c:close()
		p.close()
	end)
end

H.run()
