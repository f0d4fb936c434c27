-- Tests of the delayed queue (client:delayed_queue): offer with a delay in
-- seconds, not before its time and there after, Redisson's keys, the
-- waiting part, a consumer that only opened it, bad input; against the
-- redis-server of run-tests.sh (HILOCK_TEST_URL). Prints TAP.
local hilock = require "hilock"

local H = require "grid_helpers"
local eq, check, redis, test = H.eq, H.check, H.redis, H.test
local function uname(what) return H.uname("dq", what) end

local client = assert(hilock.connect(H.URL))
local other = assert(hilock.connect(H.URL))


test("offer moves when due", function()
	local name = uname("due")
	local d = assert(client:delayed_queue(name))
	local q = other:queue(name)
	assert(d:offer("x", 0.3))
	eq(q:size(), 0, "moved before its time")
	eq(redis("ZCARD", "redisson_delay_queue_timeout:{" .. name .. "}"), "1")
	eq(#d, 1)
	check(H.wait(function() return q:size() == 1 end, 10), "moved")
	eq(q:poll(), "x")
	eq(#d, 0)
	d:close()
end)

test("waiting part", function()
	local d = assert(client:delayed_queue(uname("part")))
	assert(d:offer("a", 60))
	assert(d:offer("b", 60))
	assert(d:offer("c", 60))
	local seen = {}
	for v in d:values() do seen[#seen + 1] = v end
	eq(table.concat(seen, ","), "a,b,c")
	eq(d:peek(), "a")
	eq(d:poll(), "a")
	eq(d:remove("c"), true)
	eq(d:contains("b"), true)
	eq(d:size(), 1)
	assert(d:clear())
	eq(d:size(), 0)
	d:close()
end)

test("a consumer alone catches up", function()
	local name = uname("catch")
	local d = assert(client:delayed_queue(name))
	for i = 1, 3 do assert(d:offer(tostring(i), 0.05)) end
	d:close()
	os.execute("sleep 0.4")
	local q = other:queue(name)
	eq(q:size(), 0, "moved with no mover")
	local c = assert(other:delayed_queue(name))
	check(H.wait(function() return q:size() == 3 end, 5), "caught up")
	c:close()
end)

test("bad input", function()
	local d = assert(client:delayed_queue(uname("bad")))
	H.fails("HL_EINVAL", d:offer("x", -1))
	H.fails("HL_EINVAL", d:offer("x", 2 ^ 41))
	H.raises("seconds", d.offer, d, "x", 0 / 0)
	H.raises("seconds", d.offer, d, "x", "1")
	eq(d:size(), 0)
	d:close()
end)

H.run()
