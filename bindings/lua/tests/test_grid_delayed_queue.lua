-- Tests of the delayed queue (client:delayed_queue): offer with a delay in
-- seconds, not before its time and there after, Redisson's keys, the
-- waiting part, a consumer that only opened it, bad input; the mover under
-- faults (the path to Redis black-holed or reset while elements come due,
-- its connections killed while unheard elements wait); against the
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

-- The mover under faults ----------------------------------------------------

local SCALE = tonumber(os.getenv("HILOCK_TEST_SCALE") or "") or 1

-- The wall clock in ms (the one the mover and the due times use).
local function wall_ms()
	local p = assert(io.popen("date +%s%3N"))
	local t = tonumber(p:read("l"))
	p:close()
	return t
end

local function numsub(channel)
	return tonumber((redis("PUBSUB", "NUMSUB", channel):match("\n(%d+)$")))
end

-- An element as a Redisson process's offer adds it (its member bytes, the
-- zset and the list), without the message: nobody hears of it.
local function raw_add(name, value, due)
	local script = "local m = struct.pack('Bc0Lc0', 8, ARGV[2], string.len(ARGV[3]), ARGV[3]) " ..
		"redis.call('zadd', KEYS[1], ARGV[1], m) redis.call('rpush', KEYS[2], m)"
	local rnd = string.format("%08d", math.random(0, 99999999))
	eq(redis("EVAL", script, "2", "redisson_delay_queue_timeout:{" .. name .. "}",
		"redisson_delay_queue:{" .. name .. "}", tostring(due), rnd, value), "", "raw add")
end

-- Takes what reached the destination (through a client of its own,
-- straight to Redis): each value "i:due" once, none found before its due
-- time (the clock read after the take).
local function collector(name)
	local q = other:queue(name)
	local col = {seen = {}, n = 0}
	function col.drain()
		local got = assert(q:poll_many(1000))
		local t = wall_ms()
		for _, v in ipairs(got) do
			local i, due = v:match("^(%d+):(%d+)$")
			check(i, "a value not of this test: " .. v)
			i, due = tonumber(i), tonumber(due)
			check(not col.seen[i], "element " .. i .. " arrived twice")
			check(due <= t, string.format("element %d arrived %d ms early", i, due - t))
			col.seen[i] = t
			col.n = col.n + 1
		end
		return #got
	end
	-- drain until n arrived or seconds passed; true if they did
	function col.until_n(n, seconds)
		return H.wait(function() col.drain(); return col.n >= n end, seconds)
	end
	return col
end

if H.FAULTPROXY then
	for _, fault in ipairs({"blackhole", "reset"}) do
		test("the path to Redis " .. fault .. " while elements come due: each arrives once, none early", function()
			local name = uname("net" .. fault)
			local p = H.proxy()
			local c = assert(hilock.connect(p.url, {command_timeout = 0.4, retry_attempts = 2,
				retry_delay = 0.1}))
			local col = collector(name)
			local d = assert(c:delayed_queue(name))
			check(H.wait(function() return numsub("redisson_delay_queue_channel:{" .. name .. "}") == 1 end, 10),
				"the mover never subscribed")
			local n = 20
			for i = 0, n - 1 do
				-- due from 0.3 s to 2.2 s: most during the fault, some after
				local delay = 0.3 + 0.1 * i
				assert(d:offer(i .. ":" .. (wall_ms() + math.floor(delay * 1000)), delay))
			end
			if fault == "blackhole" then
				p.cmd("blackhole on")
				local start = wall_ms()
				-- none moves in the black hole (the fault is the behaviour)
				while wall_ms() - start < 1800 do
					col.drain()
					os.execute("sleep 0.05")
				end
				-- (none was due when it began)
				eq(col.n, 0, "elements moved through the black hole")
				p.cmd("blackhole off")
			else
				for _ = 1, 12 do
					p.cmd("reset")
					col.drain()
					os.execute("sleep 0.15")
				end
			end
			local healed = wall_ms()
			check(col.until_n(n, 15 * SCALE), col.n .. " of " .. n .. " arrived")
			os.execute("sleep 0.3") -- a second copy would show now
			col.drain()
			eq(col.n, n, "arrivals")
			local last = 0
			for _, t in pairs(col.seen) do last = math.max(last, t) end
			print(string.format("# %s: the last arrived %d ms after the fault healed", fault, last - healed))
			check(last - healed < 3000 * SCALE, "the last arrived " .. (last - healed) .. " ms after the fault healed")
			eq(redis("ZCARD", "redisson_delay_queue_timeout:{" .. name .. "}"), "0")
			eq(redis("LLEN", "redisson_delay_queue:{" .. name .. "}"), "0")
			d:close()
			c:close()
			p.close()
		end)
	end
end

test("the mover's connections killed while unheard elements wait: it subscribes again and catches up at once", function()
	local name = uname("kill")
	local cname = "luadqmover" .. math.random(1, 1e9)
	local ch = "redisson_delay_queue_channel:{" .. name .. "}"
	local c = assert(hilock.connect(H.URL, {client_name = cname}))
	local col = collector(name)
	local d = assert(c:delayed_queue(name))
	check(H.wait(function() return numsub(ch) == 1 end, 10), "the mover never subscribed")
	local idx = 0
	for round = 0, 3 do
		-- due, with no message: only a transfer that looks moves them
		for _ = 1, 4 do
			raw_add(name, idx .. ":" .. (wall_ms() - 1), wall_ms() - 1)
			idx = idx + 1
		end
		local killed, sub = 0, false
		for line in redis("CLIENT", "LIST"):gmatch("[^\n]+") do
			if line:find(" name=" .. cname .. " ", 1, true) then
				killed = killed + tonumber(redis("CLIENT", "KILL", "ID", line:match("^id=(%d+)")))
				sub = sub or line:find(" sub=1 ", 1, true) ~= nil
			end
		end
		local t0 = wall_ms()
		check(killed >= 1 and sub, "killed " .. killed .. " connections of the mover's client, " ..
			(sub and "its subscriber among them" or "not its subscriber"))
		check(H.wait(function() return numsub(ch) == 1 end, 10), "not subscribed again")
		check(col.until_n(idx, 10 * SCALE), "round " .. round .. ": " .. col.n .. " of " .. idx .. " arrived")
		local took = wall_ms() - t0
		print(string.format("# round %d: caught up %d ms after the kill", round, took))
		-- at once: a poll would come up to 1 s later
		check(took < 500 * SCALE, "round " .. round .. ": arrived " .. took ..
			" ms after the kill: no catch-up when the subscription came back")
		os.execute("sleep " .. 0.13 * (round + 1)) -- the next kill elsewhere in the poll's second
	end
	os.execute("sleep 0.3") -- a second copy would show now
	col.drain()
	eq(col.n, idx, "arrivals")
	eq(redis("ZCARD", "redisson_delay_queue_timeout:{" .. name .. "}"), "0")
	d:close()
	c:close()
end)

H.run()
