-- The Bloom filter (Redisson's RBloomFilter) under the Lua binding:
-- Redisson's bits and config (vectors from a Redisson 4.3.1 run), many
-- values, count, re-initialisation, bad input, a lost reply.
local hilock = require "hilock"
local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local client = assert(hilock.connect(H.URL))

local function has_bits(key, bits)
	for _, i in ipairs(bits) do
		if redis("GETBIT", key, tostring(i)) ~= "1" then return false end
	end
	return redis("BITCOUNT", key) == tostring(#bits)
end

H.test("Redisson's config and bits", function()
	local f = client:bloom_filter("lua:bf")
	eq(f:try_init(100000, 0.0001), true, "try_init")
	eq(f:try_init(5, 0.5), false, "try_init again")
	eq(redis("HGET", "{lua:bf}:config", "falseProbability"), "1.0E-4")
	eq(redis("HGET", "{lua:bf}:config", "size"), "1917011")
	eq(redis("HGET", "{lua:bf}:config", "hashIterations"), "13")
	eq(f:add("hello"), true, "add")
	check(has_bits("lua:bf", {4755, 176297, 323420, 494962, 642085, 803928, 813627,
		975470, 1122593, 1294135, 1441258, 1612800, 1774643}), "Redisson's bits")
	eq(f:add("hello"), false, "add again")
	eq(f:contains("hello"), true)
	eq(f:get_size(), 1917011)
	eq(f:get_hash_iterations(), 13)
	eq(f:get_expected_insertions(), 100000)
	eq(f:get_false_probability(), 0.0001)
	eq(f:delete(), true)
	eq(redis("EXISTS", "lua:bf", "{lua:bf}:config"), "0")
end)

H.test("many values in one round trip; count", function()
	local f = client:bloom_filter("lua:bf:many")
	f:try_init(1000, 0.03)
	local vals = {}
	for i = 0, 99 do vals[#vals + 1] = "v" .. i end
	eq(f:add_all(table.unpack(vals)), 100) -- Redisson 4.3.1: 100, count 101
	eq(f:count(), 101)
	eq(f:contains_all(table.unpack(vals)), 100)
	local each = f:contains_each("v1", "nope", "v2")
	eq(#each, 3)
	eq(each[1], 1)
	eq(each[3], 1)
	eq(f:add_all(), 0)
end)

H.test("deleted and initialised again: works at once (Redisson #6554)", function()
	local f = client:bloom_filter("lua:bf:re")
	f:try_init(1000, 0.03)
	f:add("abc")
	redis("DEL", "lua:bf:re", "{lua:bf:re}:config")
	local v, msg = f:add("abc")
	check(v == nil and msg:find("not initialised"), msg)
	f:try_init(7, 0.5)
	eq(f:add("abc"), true)
	check(has_bits("lua:bf:re", {4}), "Redisson's bit at size 10")
end)

H.test("bad input: clear errors", function()
	local f = client:bloom_filter("lua:bf:bad")
	for _, a in ipairs({{100, 0}, {100, 1}, {100, -0.5}, {0, 0.1}, {-3, 0.1}}) do
		local v, msg = f:try_init(a[1], a[2])
		check(v == nil and msg:find("try_init"), tostring(msg))
	end
	local v, msg = f:count()
	check(v == nil and msg:find("not initialised"), msg)
	check(not pcall(f.add, f, 5), "a number value raises")
	eq(redis("EXISTS", "{lua:bf:bad}:config"), "0")
	redis("SET", "{lua:bf:bad}:config", "x")
	v, msg = f:contains("a")
	check(v == nil and msg:find("WRONGTYPE"), msg)
end)

if H.FAULTPROXY then
	H.test("an add whose reply is lost is in doubt; its bits are set", function()
		local p = H.proxy()
		local c = assert(hilock.connect(p.url, {command_timeout = 0.25, connect_timeout = 1}))
		local f = c:bloom_filter("lua:bf:doubt")
		f:try_init(1000, 0.03)
		assert(f:add("warm"))
		redis("DEL", "lua:bf:doubt")
		p.cmd("delay 400")
		local v, msg, code = f:add("abc")
		check(v == nil and code == "HL_EINDOUBT", tostring(msg) .. " " .. tostring(code))
		check(H.wait(function() return redis("EXISTS", "lua:bf:doubt") == "1" end, 10), "never landed")
		p.cmd("delay 0")
		check(has_bits("lua:bf:doubt", {1218, 2050, 2436, 3268, 4486}), "Redisson's bits")
		c:close()
		p.close()
	end)
end

H.run()
