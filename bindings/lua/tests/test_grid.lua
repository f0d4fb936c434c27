-- Tests of the data grid's objects (client:bucket, client:atomic_long,
-- client:atomic_double; docs/grid.md) against the redis-server started by
-- run-tests.sh (HILOCK_TEST_URL). Prints TAP and "N passed, N failed";
-- exits non-zero if any test failed.
local hilock = require "hilock"

local H = require "grid_helpers"
local eq, check, raises, fails, redis = H.eq, H.check, H.raises, H.fails, H.redis
local URL = H.URL
local function uname(what) return H.uname("grid", what) end

local client = assert(hilock.connect(URL))
local test = H.test

test("bucket", function()
	local name = uname("b")
	local b = client:bucket(name)
	local v, msg = b:get()
	eq(v, nil, "absent")
	eq(msg, nil, "no message when absent")
	eq(b:set("a\0b"), true)
	eq(b:get(), "a\0b")
	eq(redis("STRLEN", name), "3")
	eq(b:set("x", 30), true)
	local ttl = b:ttl()
	check(ttl > 20 and ttl <= 30, "ttl " .. tostring(ttl))
	eq(b:try_set("y"), false)
	eq(b:compare_and_set("x", "z"), true)
	eq(b:compare_and_set(nil, "w"), false)
	eq(b:compare_and_set("z", nil), true)
	eq(b:exists(), false)
	eq(b:ttl(), false)
	eq(b:compare_and_set(nil, "w"), true)
	eq(b:ttl(), math.huge)
	eq(b:get_and_set("q"), "w")
	eq(b:size(), 1)
	eq(b:get_and_delete(), "q")
	eq(b:delete(), false)
	eq(tostring(b), 'hilock.bucket ("' .. name .. '")')
end)

test("atomics", function()
	local name = uname("n")
	local a = client:atomic_long(name)
	eq(a:get(), 0)
	eq(a:increment_and_get(), 1)
	eq(a:add_and_get(41), 42)
	eq(redis("GET", name), "42")
	eq(a:get_and_add(-2), 42)
	eq(a:compare_and_set(40, math.mininteger), true)
	eq(a:get_and_set(1), math.mininteger)
	local d = client:atomic_double(name .. ":d")
	eq(d:set(0.1), true)
	eq(redis("GET", name .. ":d"), "0.1")
	redis("SET", name .. ":d", "1.0E10")
	eq(d:get(), 1e10)
	eq(d:add_and_get(0.5), 1e10 + 0.5)
	eq(d:set(2), true) -- an integer is a number
	eq(d:get(), 2.0)
	-- another type at the key: a runtime failure, not an error
	redis("HSET", name .. ":h", "f", "1")
	fails("HL_EREDIS", client:atomic_long(name .. ":h"):get())
	redis("SET", name .. ":s", "1.5")
	fails("HL_EPROTOCOL", client:atomic_long(name .. ":s"):get())
end)

test("common operations", function()
	local b = client:bucket(uname("c"))
	eq(b:expire(10), false)
	b:set("v")
	eq(b:expire(10), true)
	check(b:ttl() <= 10 and b:ttl() > 0)
	eq(b:clear_expire(), true)
	eq(b:ttl(), math.huge)
	eq(b:delete(), true)
end)

test("bad input", function()
	raises("name must be 1 to 65536 bytes", client.bucket, client, "")
	raises("string expected", client.bucket, client, 5)
	local b = client:bucket(uname("bad"))
	raises("string expected, got number", b.set, b, 5)
	raises("positive number of seconds", b.set, b, "v", 0)
	raises("integer expected, got float", client:atomic_long("x").add_and_get, client:atomic_long("x"), 1.5)
	raises("finite number expected", client:atomic_double("x").set, client:atomic_double("x"), 0 / 0)
	raises("too many arguments", b.get, b, "extra")
	raises("value expected", b.set, b)
	raises("grid object expected", b.get, {})
	raises("positive number of seconds", b.expire, b, -1)
	local c2 = assert(hilock.connect(URL))
	local b2 = c2:bucket("x")
	c2:close()
	raises("closed hilock client", b2.get, b2)
end)

H.run()
