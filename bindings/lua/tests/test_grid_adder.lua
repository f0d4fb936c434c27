-- Tests of the adders (client:long_adder, client:double_adder): local adds,
-- Redisson's sum protocol between two clients and another process, reset,
-- close, bad input; against the redis-server of run-tests.sh
-- (HILOCK_TEST_URL). Prints TAP and "N passed, N failed".
local hilock = require "hilock"

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"))
local LUA = os.getenv("HILOCK_TEST_LUA") or "lua5.4"

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "lua:adder:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function redis(...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. PORT
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	local p = assert(io.popen(cmd .. " 2>&1"))
	local out = p:read("a")
	p:close()
	return (out:gsub("\n$", ""))
end
local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end
local function check(cond, what)
	if not cond then error(what or "check failed", 2) end
end

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

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

print("1.." .. #tests)
local passed, failed = 0, 0
for i, t in ipairs(tests) do
	local ok, err = xpcall(t.f, debug.traceback)
	if ok then
		passed = passed + 1
		print("ok " .. i .. " - " .. t.name)
	else
		failed = failed + 1
		print("not ok " .. i .. " - " .. t.name)
		for line in tostring(err):gmatch("[^\n]+") do print("# " .. line) end
	end
	io.stdout:flush()
end
client:close()
other:close()
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
