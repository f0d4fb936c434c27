-- Tests of the adders (client:long_adder, client:double_adder): local adds,
-- Redisson's sum protocol between two clients and another process, reset,
-- close, bad input; against the redis-server of run-tests.sh
-- (HILOCK_TEST_URL). Prints TAP and "N passed, N failed".
local hilock = require "hilock"

local H = require "grid_helpers"
local eq, check, redis = H.eq, H.check, H.redis
local URL = H.URL
local LUA = os.getenv("HILOCK_TEST_LUA") or "lua5.4"
local function uname(what) return H.uname("adder", what) end
local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local test = H.test

local client = assert(hilock.connect(URL))
local other = assert(hilock.connect(URL))

test("two clients: sum, reset, close", function()
	local name = uname("l")
	local a1 = assert(client:long_adder(name))
	local a2 = assert(client:long_adder(name))
	local b = assert(other:long_adder(name))
	-- one subscription per client, confirmed once the adder exists
	eq(redis("PUBSUB", "NUMSUB", "{" .. name .. "}:adder-topic"), "{" .. name .. "}:adder-topic\n2")
	assert(a1:add(5))
	assert(a2:add(2))
	assert(b:increment())
	assert(b:increment())
	assert(b:decrement())
	eq(a1:sum(), 8, "sum from a")
	eq(b:sum(5), 8, "sum from b")
	eq(redis("KEYS", "{" .. name .. "}:*"), "", "keys left")
	assert(b:reset())
	eq(a2:sum(), 0, "sum after reset")
	assert(a1:add(3))
	assert(b:add(4))
	b:close()
	local v, m, code = b:add(1)
	check(v == nil and m and code, "add after close fails")
	eq(a1:sum(), 3, "sum without b")
	a1:close()
	a2:close()
end)

test("double adder", function()
	local name = uname("d")
	local d1 = assert(client:double_adder(name))
	local d2 = assert(other:double_adder(name))
	assert(d1:add(1.5))
	assert(d2:add(0.25))
	assert(d2:add(1))
	eq(d1:sum(), 2.75)
	check(not pcall(d1.add, d1, 0 / 0), "NaN refused")
	check(not pcall(d1.add, d1, "1"), "a string refused")
	d1:close()
	d2:close()
end)

test("another process adds", function()
	local name = uname("p")
	local code = "local h = require 'hilock'; local c = assert(h.connect(" .. string.format("%q", URL) ..
		")); local a = assert(c:long_adder(" .. string.format("%q", name) .. ")); a:add(100); " ..
		"io.write('ready\\n'); io.flush(); io.read('l'); a:close(); c:close()"
	local a = assert(client:long_adder(name))
	assert(a:add(1))
	local p = assert(io.popen(LUA .. " -e " .. shq(code) .. " > /dev/null", "w"))
	-- wait until the other process listens too
	for _ = 1, 500 do
		if redis("PUBSUB", "NUMSUB", "{" .. name .. "}:adder-topic"):match("\n2$") then break end
		os.execute("sleep 0.02")
	end
	eq(a:sum(), 101, "sum with the other process")
	p:write("\n")
	p:close()
	eq(a:sum(), 1, "sum once it is gone")
	a:close()
end)

test("bad input", function()
	local a = assert(client:long_adder(uname("bad")))
	check(not pcall(a.add, a, 1.5), "a float refused by the long adder")
	check(not pcall(a.sum, a, 0), "a timeout of 0 refused")
	assert(a:add(math.maxinteger))
	assert(a:add(2))
	eq(a:sum(), math.mininteger + 1, "wraps as Java's long")
	a:close()
	local ok = pcall(client.long_adder, client, "")
	check(not ok, "empty name refused")
end)

H.run()
