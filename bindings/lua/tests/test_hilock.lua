-- Tests of the Lua binding, against the redis-server started by
-- run-tests.sh (HILOCK_TEST_URL). Prints TAP (readable by `prove`) and a
-- final "N passed, N failed"; exits non-zero if any test failed.
local hilock = require "hilock"
local core = hilock._core

local URL = assert(os.getenv("HILOCK_TEST_URL"), "HILOCK_TEST_URL not set (use run-tests.sh)")
local PORT = os.getenv("HILOCK_TEST_REDIS_PORT")
local LUA = os.getenv("HILOCK_TEST_LUA") or "lua5.4"
local EXAMPLES = os.getenv("HILOCK_TEST_EXAMPLES")
local HERE = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
local seq = 0
local function uname(what)
	seq = seq + 1
	return "hilock:lua:test:" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

-- helpers --------------------------------------------------------------------

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	local ok, how, code = p:close()
	return out, ok, code
end

local function redis(...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. PORT
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	local out = sh(cmd .. " 2>&1")
	return (out:gsub("\n$", ""))
end

local function now()
	local out = sh("date +%s.%N")
	return tonumber(out)
end

local function sleep(s) os.execute("sleep " .. s) end

-- Poll pred every 0.1 s up to limit seconds; true as soon as it holds.
local function eventually(limit, pred)
	local deadline = now() + limit
	repeat
		if pred() then return true end
		sleep(0.1)
	until now() > deadline
	return pred()
end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end

local function raises(pattern, f, ...)
	local ok, err = pcall(f, ...)
	if ok then error("expected an error matching '" .. pattern .. "'", 2) end
	if not tostring(err):match(pattern) then
		error("error '" .. tostring(err) .. "' does not match '" .. pattern .. "'", 2)
	end
end

-- Runtime failure triple: nil, message (string), code (the status name).
local function fails(code, v, msg, c)
	if v ~= nil then error("expected nil, message, code; got " .. tostring(v), 2) end
	if type(msg) ~= "string" or msg == "" then error("no message", 2) end
	if code and c ~= code then error("expected code " .. code .. ", got " .. tostring(c) .. " (" .. msg .. ")", 2) end
	if type(c) ~= "string" or not c:match("^HL_") then error("bad code " .. tostring(c), 2) end
end

-- TAP ------------------------------------------------------------------------

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

local client = assert(hilock.connect(URL, {watchdog_timeout = 2}))
local other = assert(hilock.connect(URL, {watchdog_timeout = 2})) -- another "process"

-- tests ----------------------------------------------------------------------

test("module: version, codes", function()
	eq(type(hilock.version), "string")
	assert(hilock.version:match("^%d+%.%d+%.%d+"))
	eq(hilock._VERSION, "hilock " .. hilock.version)
	eq(hilock.codes.HL_OK, 0)
	eq(hilock.codes.HL_ETIMEDOUT, -3)
	eq(hilock.codes.HL_ENOTHELD, -5)
	eq(hilock.codes.HL_ESYSTEM, -14)
end)

test("module: version_number is an integer", function()
	eq(math.type(hilock.version_number), "integer", "math.type(hilock.version_number)")
	eq(math.type(core.version_number()), "integer", "math.type(core.version_number())")
	local maj, min, pat = hilock.version:match("^(%d+)%.(%d+)%.(%d+)")
	eq(hilock.version_number, tonumber(maj) * 10000 + tonumber(min) * 100 + tonumber(pat))
	eq(tostring(hilock.version_number), string.format("%d", hilock.version_number), "tostring")
end)

test("module: linked with -z nodelete (never unloaded with its Lua state)", function()
	-- libhilock registers a thread-exit destructor; lua_close dlcloses C
	-- modules, so the module (and libhilock with it) must stay mapped.
	local path = assert(package.searchpath("hilock_core", package.cpath))
	local out, ok = sh("readelf -d " .. shq(path) .. " 2>&1")
	assert(ok, "readelf failed: " .. out)
	assert(out:match("FLAGS_1[^\n]*NODELETE"), "no NODELETE in FLAGS_1 of " .. path .. ":\n" .. out)
end)

test("connect: no message shows the URL's password", function()
	local secret = "topsecret"
	local function clean(what, v, msg, code)
		eq(v, nil, what)
		assert(type(msg) == "string" and msg ~= "", what .. ": no message")
		assert(not msg:find("ecret", 1, true), what .. ": the message shows the password: " .. msg)
		return msg, code
	end
	-- a port nobody listens on
	local msg, code = clean("unreachable", hilock.connect(
		"redis://alice:" .. secret .. "@127.0.0.1:1/0", {connect_timeout = 2, retry_attempts = 0}))
	eq(code, "HL_ECONNECT")
	-- bad URLs, each at another step of the parse
	for _, url in ipairs{
		"redis://alice:" .. secret .. "@127.0.0.1:" .. PORT .. "/abc",
		"redis://alice:" .. secret .. "@127.0.0.1:" .. PORT .. "/0?x=1",
		"redis://:" .. secret .. "@127.0.0.1:99999",
		"bogus://alice:" .. secret .. "@x",
		"redis://alice:top/" .. secret .. "@127.0.0.1:" .. PORT .. "/0",
	} do
		msg, code = clean(url, hilock.connect(url))
		eq(code, "HL_EINVAL", url)
		assert(msg:find("***", 1, true), url .. ": the password is not shown masked: " .. msg)
	end
	-- rediss:// is TLS, and this server is a plain one
	msg, code = clean("rediss", hilock.connect("rediss://alice:" .. secret .. "@127.0.0.1:" .. PORT))
	eq(code, "HL_ECONNECT")
	msg = clean("query string", hilock.connect("redis://127.0.0.1:" .. PORT .. "/0?x=1"))
	assert(msg:find("query string", 1, true), msg)
	-- credentials the server refuses (it has no such user)
	msg, code = clean("wrong password", hilock.connect(
		"redis://alice:" .. secret .. "@127.0.0.1:" .. PORT .. "/0", {retry_attempts = 0}))
	eq(code, "HL_EAUTH")
	-- a connected client keeps no password (the server's default user has
	-- none, so AUTH default <anything> succeeds), also a percent-encoded one
	for _, pw in ipairs{secret, "a%2Fb%40c" .. secret} do
		local c = assert(hilock.connect("redis://default:" .. pw .. "@127.0.0.1:" .. PORT .. "/0"))
		eq(tostring(c), "hilock.client (redis://default:***@127.0.0.1:" .. PORT .. "/0)")
		for k, v in pairs(c) do
			assert(not tostring(v):find("ecret", 1, true), "client field " .. tostring(k) .. ": " .. tostring(v))
		end
		c:close()
	end
end)

test("connect: client id, tostring, close is idempotent", function()
	local c = assert(hilock.connect(URL))
	eq(#c:id(), 36)
	assert(c:id():match("^%x+%-%x+%-%x+%-%x+%-%x+$"))
	assert(c:id() ~= client:id(), "two clients, two ids")
	assert(tostring(c):match("hilock.client"))
	eq(c:closed(), false)
	eq(c:interrupt(), true, "interrupt with nobody blocked")
	local lk = c:lock(uname("afterinterrupt"))
	local g = assert(lk:acquire{wait = 0}, "usable after interrupt")
	g:release()
	eq(c:close(), true)
	eq(c:close(), true)
	eq(c:closed(), true)
	raises("closed hilock client", c.id, c)
	raises("closed hilock client", c.lock, c, "x")
end)

test("connect: options reach the server (client_name)", function()
	local cname = "hilock-lua-" .. RUN:gsub("%W", "-")
	local c = assert(hilock.connect(URL, {client_name = cname, pool_size = 2,
		connect_timeout = 5, command_timeout = 5, retry_attempts = 2, retry_delay = 0.5,
		subscription_timeout = 5, watchdog_timeout = 10}))
	local g = assert(c:lock(uname("opts")):acquire())
	local ttl = g:lock_object():ttl()
	assert(ttl > 5 and ttl <= 10, "watchdog_timeout 10 s gives ttl " .. ttl)
	g:release()
	assert(redis("CLIENT", "LIST"):find("name=" .. cname, 1, true), "CLIENT SETNAME")
	c:close()
end)

test("connect: <close> closes the client", function()
	local keep
	do
		local c <close> = assert(hilock.connect(URL))
		keep = c
		eq(keep:closed(), false)
	end
	eq(keep:closed(), true)
end)

test("connect: runtime failures return nil, message, code", function()
	-- a port nobody listens on: ours, after the server we ask for... use 1
	fails("HL_ECONNECT", hilock.connect("redis://127.0.0.1:1/0", {connect_timeout = 2}))
	fails("HL_EINVAL", hilock.connect("bogus://x"))
	fails("HL_EINVAL", hilock.connect("redis://127.0.0.1:" .. PORT .. "/notadb"))
end)

test("connect: misuse raises", function()
	raises("string expected", hilock.connect, 42)
	raises("string expected", hilock.connect, nil)
	raises("table of options expected", hilock.connect, URL, 5)
	raises("unknown option 'bogus'", hilock.connect, URL, {bogus = 1})
	raises("number of seconds expected", hilock.connect, URL, {watchdog_timeout = "30"})
	raises("negative", hilock.connect, URL, {watchdog_timeout = -1})
	raises("nan", hilock.connect, URL, {connect_timeout = 0 / 0})
	raises("integer expected", hilock.connect, URL, {pool_size = 1.5})
	raises("string expected", hilock.connect, URL, {client_name = 7})
	raises("NUL byte", hilock.connect, URL .. "\0x")
	raises("NUL byte", hilock.connect, URL, {client_name = "a\0b"})
end)

test("lock: every query on a free lock", function()
	local lock = client:lock(uname("free"))
	eq(lock:locked(), false, "locked")
	eq(lock:held(), false, "held")
	eq(lock:hold_count(), 0, "hold_count")
	eq(lock:ttl(), false, "ttl")
	eq(lock:lost(), false, "lost")
	eq(lock:force_unlock(), false, "force_unlock")
	fails("HL_ENOTHELD", lock:unlock())
	eq(lock:wait_lost(0), false, "wait_lost")
	assert(tostring(lock):match("hilock.lock"))
end)

test("lock: acquire, reentrancy, unlock, Redis state", function()
	local name = uname("basic")
	local lock = client:lock(name)
	local g = assert(lock:acquire())
	assert(tostring(g):match("hilock.guard"))
	eq(lock:locked(), true)
	eq(lock:held(), true)
	eq(lock:hold_count(), 1)
	local ttl = lock:ttl()
	assert(ttl > 0 and ttl <= 2, "ttl within the 2 s watchdog timeout: " .. ttl)
	-- the hash field is "<client uuid>:<owner id>" with the hold count
	local owner = lock:owner()
	assert(owner:match("^" .. client:id():gsub("%-", "%%-") .. ":%d+$"), owner)
	eq(redis("HGET", name, owner), "1", "hash field")
	-- seen from another client: locked, not held
	local theirs = other:lock(name)
	eq(theirs:locked(), true)
	eq(theirs:held(), false)
	eq(theirs:acquire{wait = 0}, false, "contention returns false")
	-- reentrant
	local g2 = assert(lock:acquire{wait = 0})
	eq(lock:hold_count(), 2)
	eq(redis("HGET", name, owner), "2", "hash field after re-entry")
	-- a second object for the same name, same coroutine: the same owner
	local again = client:lock(name)
	eq(again:held(), true)
	eq(again:hold_count(), 2)
	eq(again:owner(), owner)
	eq(lock:unlock(), true)
	eq(lock:hold_count(), 1)
	eq(lock:locked(), true)
	eq(g:release(), true)
	eq(g:released(), true)
	eq(lock:locked(), false)
	eq(redis("EXISTS", name), "0")
	-- the guard of the re-entry has nothing left: it reports, once
	fails("HL_ENOTHELD", g2:release())
	eq(g2:release(), true, "a guard releases once")
	eq(g:release(), true, "idempotent")
	fails("HL_ENOTHELD", lock:unlock())
end)

test("lock: the hot calls (core.lock_acquire, lock_release, lock_give_back) report the hold", function()
	local name = uname("hot")
	local ok, h = core.lock_new(client._c, core.LOCK_REENTRANT, name, core.owner_id_new())
	assert(ok, h)
	local r, acquired, epoch, count = core.lock_acquire(h, 0, -1)
	eq(r, true)
	eq(acquired, true)
	assert(epoch > 0, "an epoch for the new hold")
	eq(count, 1)
	eq(core.lock_epoch(h), epoch, "the handle's epoch")
	eq(h:epoch(), epoch)
	local _, again, epoch2, count2 = core.lock_acquire(h, 0, -1)
	eq(again, true)
	eq(epoch2, epoch, "a re-entry is the same hold")
	eq(count2, 2)
	-- a guard of another hold gives back nothing
	local g1, released1, now1, ended1 = core.lock_give_back(h, epoch + 1)
	eq(g1, true)
	eq(released1, false)
	eq(now1, epoch)
	eq(ended1, true)
	eq(redis("HGET", name, (select(2, h:owner()))), "2", "nothing released")
	-- the guard's own hold: one hold back, the hold goes on
	local g2, released2, now2, ended2 = core.lock_give_back(h, epoch)
	eq(g2, true)
	eq(released2, false, "one hold left")
	eq(now2, epoch)
	eq(ended2, false)
	local u, released3, now3 = core.lock_release(h)
	eq(u, true)
	eq(released3, true, "free now")
	eq(now3, 0, "no hold left")
	eq(redis("EXISTS", name), "0")
	fails("HL_ENOTHELD", core.lock_release(h))
	-- a new hold has a new epoch
	local _, acquired4, epoch4 = core.lock_acquire(h, 0, -1)
	eq(acquired4, true)
	assert(epoch4 ~= epoch, "a new hold, a new epoch")
	-- a guard's release that ends the hold: no hold left
	local g4, released4, now4, ended4 = core.lock_give_back(h, epoch4)
	eq(g4, true)
	eq(released4, true, "free now")
	eq(now4, 0, "no hold left")
	eq(ended4, false)
	eq(select(4, h:hold_state()), 0, "the library agrees")
	-- taken elsewhere: not acquired, no hold
	local theirs = assert(other:lock(name):acquire())
	local r5, acquired5, epoch5, count5 = core.lock_acquire(h, 0, -1)
	eq(r5, true)
	eq(acquired5, false)
	eq(epoch5, 0)
	eq(count5, 0)
	assert(theirs:release())
	eq(core.lock_closed(h), false)
	h:close()
	eq(core.lock_closed(h), true)
	fails("HL_EINVAL", core.lock_acquire(h, 0, -1))
	fails("HL_EINVAL", core.lock_release(h))
	-- a nil handle (SWIG's NULL) is misuse: it raises, never reaches C
	local nil_handle = "expected '[%w_ ]+ %*' got 'nil'"
	raises(nil_handle, core.lock_acquire, nil, 0, -1)
	raises(nil_handle, core.lock_give_back, nil, 1)
	raises(nil_handle, core.lock_release, nil)
	raises(nil_handle, core.lock_epoch, nil)
	raises(nil_handle, core.lock_closed, nil)
	raises(nil_handle, h.release, nil)
	raises(nil_handle, h.hold_state, nil)
	raises(nil_handle, core.lock_new, nil, core.LOCK_REENTRANT, name, core.owner_id_new())
	raises(nil_handle, client._c.stats, nil)
end)

test("lock: acquire{wait} times out with false, after about wait", function()
	local name = uname("wait")
	local g = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	local t0 = now()
	eq(lock:acquire{wait = 0.5}, false)
	local dt = now() - t0
	assert(dt >= 0.45 and dt < 5, "waited " .. dt)
	eq(lock:acquire(0), false, "a number is the wait")
	eq(lock:try_acquire(), false, "try_acquire waits 0")
	eq(lock:held(), false)
	g:release()
	local g2 = assert(lock:try_acquire{lease = 5})
	eq(lock:held(), true)
	g2:release()
end)

test("lock: a waiter wakes when another process unlocks", function()
	local name = uname("wake")
	-- a holder in another process: acquire, say so, hold 1 s, unlock
	local script = string.format([[
		local hilock = require "hilock"
		local c = assert(hilock.connect(%q))
		local l = c:lock(%q)
		assert(l:acquire())
		io.write("held\n"); io.stdout:flush()
		os.execute("sleep 1")
		assert(l:unlock())
		c:close()
	]], URL, name)
	local p = assert(io.popen(LUA .. " -e " .. shq(script)))
	eq(p:read("l"), "held")
	local lock = client:lock(name)
	eq(lock:locked(), true)
	local t0 = now()
	local g = assert(lock:acquire{wait = 20})
	local dt = now() - t0
	assert(dt > 0.5 and dt < 10, "woke after " .. dt)
	assert(p:close(), "holder process failed")
	g:release()
end)

test("lock: force_unlock frees someone else's lock", function()
	local name = uname("force")
	local theirs = other:lock(name)
	assert(theirs:acquire())
	local lock = client:lock(name)
	eq(lock:force_unlock(), true)
	eq(lock:locked(), false)
	eq(theirs:held(), false)
	eq(lock:force_unlock(), false)
end)

test("<close>: the guard releases at scope end and on error", function()
	local name = uname("close")
	local lock = client:lock(name)
	do
		local held <close> = assert(lock:acquire())
		eq(lock:held(), true)
	end
	eq(lock:locked(), false, "released at scope end")
	local boom = setmetatable({}, {__tostring = function() return "boom" end})
	local ok, err = pcall(function()
		local held <close> = assert(lock:acquire())
		eq(lock:hold_count(), 1)
		error(boom)
	end)
	eq(ok, false)
	eq(err, boom, "the original error object propagates")
	eq(lock:locked(), false, "released on error")
	-- reentrant scopes release one hold each
	do
		local a <close> = assert(lock:acquire())
		do
			local b <close> = assert(lock:acquire())
			eq(lock:hold_count(), 2)
		end
		eq(lock:hold_count(), 1)
	end
	eq(lock:locked(), false)
end)

test("<close>: a failed release raises at a normal scope end", function()
	local name = uname("closefail")
	local lock = client:lock(name)
	local ok, err = pcall(function()
		local held <close> = assert(lock:acquire())
		other:lock(name):force_unlock()
	end)
	eq(ok, false)
	assert(tostring(err):match("releasing lock"), tostring(err))
end)

test("<close> on a lock object releases its holds and closes it", function()
	local name = uname("lockclose")
	local keep
	do
		local lk <close> = client:lock(name)
		keep = lk
		assert(lk:acquire())
		assert(lk:acquire())
		eq(lk:hold_count(), 2)
	end
	eq(other:lock(name):locked(), false)
	raises("closed hilock lock", keep.held, keep)
	raises("closed hilock lock", keep.acquire, keep)
	eq(keep:close(), true, "idempotent")
end)

test("with: runs f under the lock, returns its results", function()
	local name = uname("with")
	local lock = client:lock(name)
	local a, b, c = lock:with(function(x, y)
		eq(lock:held(), true)
		eq(lock:hold_count(), 1)
		return x + y, nil, "z"
	end, 1, 2)
	eq(a, 3); eq(b, nil); eq(c, "z")
	eq(lock:locked(), false)
	-- options first
	local r = lock:with({wait = 1, lease = 5}, function(x)
		local ttl = lock:ttl()
		assert(ttl > 2 and ttl <= 5, "fixed lease " .. ttl)
		return x
	end, "v")
	eq(r, "v")
	-- nested: reentrant
	lock:with(function()
		lock:with(function() eq(lock:hold_count(), 2) end)
		eq(lock:hold_count(), 1)
	end)
	eq(lock:locked(), false)
end)

test("with: releases on error and rethrows the same error", function()
	local lock = client:lock(uname("witherr"))
	local e = {}
	local ok, err = pcall(lock.with, lock, function() error(e) end)
	eq(ok, false)
	eq(err, e)
	eq(lock:locked(), false)
	local ok2, err2 = pcall(lock.with, lock, function() error("plain", 0) end)
	eq(ok2, false); eq(err2, "plain")
	eq(lock:locked(), false)
end)

test("with: raises when the lock cannot be had", function()
	local name = uname("withbusy")
	local g = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	local ran = false
	raises("timed out", lock.with, lock, {wait = 0}, function() ran = true end)
	eq(ran, false)
	raises("function expected", lock.with, lock, {wait = 0})
	g:release()
end)

test("coroutines: each one is its own owner", function()
	local name = uname("co")
	local lock = client:lock(name)
	local steps = {}
	local co1 = coroutine.create(function()
		local g = assert(lock:acquire{wait = 0})
		steps[#steps + 1] = "co1 holds"
		eq(lock:hold_count(), 1)
		coroutine.yield(lock:owner())
		eq(lock:held(), true, "co1 still holds after resuming")
		assert(lock:acquire{wait = 0}, "co1 re-enters")
		eq(lock:hold_count(), 2)
		coroutine.yield()
		eq(lock:unlock(), true)
		eq(g:release(), true)
		steps[#steps + 1] = "co1 released"
	end)
	local ok, owner1 = coroutine.resume(co1)
	assert(ok, owner1)
	-- the main coroutine does not hold it and cannot take it
	eq(lock:locked(), true)
	eq(lock:held(), false)
	eq(lock:hold_count(), 0)
	assert(lock:owner() ~= owner1, "distinct owner strings")
	eq(lock:acquire{wait = 0}, false, "main is refused")
	fails("HL_ENOTHELD", lock:unlock())
	-- neither can a second coroutine
	local co2 = coroutine.wrap(function()
		eq(lock:held(), false)
		eq(lock:acquire{wait = 0.2}, false)
		return "co2 refused"
	end)
	eq(co2(), "co2 refused")
	assert(coroutine.resume(co1))
	eq(lock:held(), false, "main still does not hold it")
	local ok3, err3 = coroutine.resume(co1)
	assert(ok3, err3)
	eq(coroutine.status(co1), "dead")
	eq(steps[2], "co1 released")
	eq(lock:locked(), false)
	local g = assert(lock:acquire{wait = 0}, "main gets it now")
	g:release()
end)

test("coroutines: a guard releases its coroutine's hold from anywhere", function()
	local name = uname("coguard")
	local lock = client:lock(name)
	local guard = coroutine.wrap(function() return assert(lock:acquire()) end)()
	eq(lock:held(), false)
	eq(lock:locked(), true)
	eq(guard:release(), true)
	eq(lock:locked(), false)
end)

test("watchdog: a lock without lease outlives the watchdog timeout", function()
	local name = uname("watchdog")
	local lock = client:lock(name) -- client: watchdog_timeout = 2 s
	local g = assert(lock:acquire())
	local ttl0 = lock:ttl()
	assert(ttl0 > 0 and ttl0 <= 2, "ttl " .. ttl0)
	sleep(3.5)
	eq(lock:held(), true, "still held after 1.75 timeouts")
	eq(other:lock(name):locked(), true)
	local ttl = lock:ttl()
	assert(ttl > 0 and ttl <= 2, "renewed ttl " .. ttl)
	eq(lock:lost(), false)
	eq(g:release(), true)
	eq(lock:locked(), false)
end)

test("lease: a fixed lease runs out; unlocking afterwards fails", function()
	local name = uname("lease")
	local lock = client:lock(name)
	local g = assert(lock:acquire{lease = 1})
	local ttl = lock:ttl()
	assert(ttl > 0 and ttl <= 1, "ttl " .. ttl)
	assert(eventually(5, function() return other:lock(name):locked() == false end),
		"the lease ran out")
	eq(lock:held(), false)
	fails(nil, g:release())
	-- someone else can have it now
	local theirs = assert(other:lock(name):acquire{wait = 0})
	theirs:release()
end)

test("lost: the watchdog finds a deleted hold lost", function()
	local name = uname("lost")
	local lock = client:lock(name)
	local g = assert(lock:acquire())
	eq(lock:lost(), false)
	eq(redis("DEL", name), "1")
	eq(lock:wait_lost(10), true, "found lost within 10 s")
	eq(lock:lost(), true)
	local v, msg, code = g:release()
	fails(nil, v, msg, code)
	assert(code == "HL_ELOST" or code == "HL_ENOTHELD", code)
	eq(lock:lost(), false, "cleared by the release")
end)

test("coroutines: a collected coroutine's hold is abandoned, a live one's is renewed", function()
	local dropped_name, kept_name = uname("dropped"), uname("kept")
	local function holder(name)
		local co = coroutine.create(function()
			local lock = client:lock(name)
			assert(lock:acquire())
			coroutine.yield()
			error("never resumed")
		end)
		assert(coroutine.resume(co))
		return co
	end
	do holder(dropped_name) end
	local kept = holder(kept_name)
	eq(other:lock(dropped_name):locked(), true)
	collectgarbage("collect")
	collectgarbage("collect")
	-- watchdog timeout 2 s: the dropped lease ends within ~2 s, the kept
	-- one is renewed every ~0.7 s
	assert(eventually(8, function() return other:lock(dropped_name):locked() == false end),
		"the collected coroutine's lock expired")
	eq(other:lock(kept_name):locked(), true, "the live coroutine's lock is still renewed")
	eq(coroutine.status(kept), "suspended")
	other:lock(kept_name):force_unlock()
end)

-- The library's record of the current coroutine's hold of lock (count,
-- lost, epoch), read through the lock object's handle: what the binding
-- goes by, since it keeps no count of its own.
local function hold_of(lock)
	lock:lost() -- makes the coroutine's handle if need be (no round trip)
	local h = assert(lock._handles[coroutine.running()], "no handle")
	local ok, count, lost, epoch = h:hold_state()
	assert(ok, count)
	return count, lost, epoch
end

test("holds: two lock objects of one coroutine share the library's hold", function()
	local name = uname("two")
	local a, b = client:lock(name), client:lock(name)
	local ga = assert(a:acquire())
	local n, _, e1 = hold_of(a)
	eq(n, 1, "count after a:acquire")
	eq(select(3, hold_of(b)), e1, "b sees the same hold")
	assert(b:unlock(), "given back through the other object")
	eq(other:lock(name):locked(), false, "free")
	eq(hold_of(a), 0, "a's count after b:unlock")
	-- taken again through b: a new hold, which ga does not stand for
	local gb = assert(b:acquire())
	local n2, _, e2 = hold_of(a)
	eq(n2, 1, "count after b:acquire")
	assert(e2 ~= e1, "a new hold, a new epoch")
	fails("HL_ENOTHELD", ga:release())
	eq(ga:release(), true, "a guard is released once")
	eq(b:hold_count(), 1, "the new hold is left alone")
	assert(gb:release())
	eq(b:locked(), false)
	-- nested objects: closing the inner one gives back its own hold only
	ga = assert(a:acquire())
	do
		local inner <close> = client:lock(name)
		assert(inner:acquire())
		assert(inner:acquire())
		eq(hold_of(a), 3, "count with the inner object's holds")
	end
	eq(hold_of(a), 1, "after the inner object closed")
	eq(a:hold_count(), 1, "Redis agrees")
	assert(ga:release())
	eq(a:locked(), false)
end)

test("holds: taken again after a loss is a new hold; the old guard leaves it alone", function()
	local name = uname("relost")
	local lock = client:lock(name)
	local g1 = assert(lock:acquire())
	local _, _, e1 = hold_of(lock)
	eq(redis("DEL", name), "1")
	eq(lock:wait_lost(10), true, "found lost")
	local n, lost, e = hold_of(lock)
	eq(n, 0, "count of a lost hold")
	eq(lost, true, "lost")
	eq(e, e1, "still that hold")
	local g2 = assert(lock:acquire())
	n, lost, e = hold_of(lock)
	eq(n, 1, "count after taking it again")
	eq(lost, false, "not lost")
	assert(e ~= e1, "a new hold, a new epoch")
	fails("HL_ENOTHELD", g1:release())
	eq(lock:hold_count(), 1, "the new hold is untouched")
	assert(g2:release())
	eq(lock:locked(), false)
	-- a guard released after its loss, before anything else: HL_ELOST
	local g3 = assert(lock:acquire())
	redis("DEL", name)
	eq(lock:wait_lost(10), true, "found lost")
	fails("HL_ELOST", g3:release())
	eq(g3:release(), true, "once")
	eq(hold_of(lock), 0)
end)

test("holds: force-unlocked by another client, then taken again: count 0, then 1", function()
	local name = uname("forced")
	local lock = client:lock(name)
	local g1 = assert(lock:acquire())
	local _, _, e1 = hold_of(lock)
	eq(other:lock(name):force_unlock(), true)
	eq(lock:wait_lost(10), true, "the watchdog found it gone")
	local n, lost = hold_of(lock)
	eq(n, 0, "count after the loss")
	eq(lost, true, "lost")
	local g2 = assert(lock:acquire{wait = 0})
	local n2, lost2, e2 = hold_of(lock)
	eq(n2, 1, "count after taking it again")
	eq(lost2, false)
	assert(e2 ~= e1, "a new epoch")
	fails("HL_ENOTHELD", g1:release())
	assert(g2:release())
	eq(other:lock(name):locked(), false, "one release freed it")
	fails("HL_ENOTHELD", lock:unlock())
end)

test("holds: an object dropped while its coroutine holds through another keeps it renewed", function()
	local name = uname("dropobj")
	local b = client:lock(name)
	local gb = assert(b:acquire())
	do
		local a = client:lock(name)
		assert(a:acquire()) -- a re-entry through a, guard dropped
		assert(a:unlock())
	end
	collectgarbage("collect")
	collectgarbage("collect")
	-- watchdog 2 s: an abandoned hold would be gone by now
	sleep(3)
	eq(other:lock(name):locked(), true, "still renewed")
	eq(b:lost(), false, "not lost")
	assert(gb:release())
	eq(b:locked(), false)
end)

test("holds: a coroutine keeps the handles of its current hold alive, and lets them go when it ends", function()
	local name, rwname = uname("armed"), uname("armedrw")
	-- live C handles after a full collection (the objects below are made
	-- in functions that returned, so no register of this one keeps them)
	local function live()
		collectgarbage("collect")
		collectgarbage("collect")
		return core.live_locks()
	end
	local base = live()
	-- one object, taken and given back again and again, then dropped
	local function one()
		local lock = client:lock(name)
		for _ = 1, 50 do assert(assert(lock:acquire()):release()) end
		assert(lock:acquire())
		assert(lock:acquire())
		assert(lock:unlock())
		assert(lock:unlock())
		eq(lock:locked(), false)
	end
	one()
	eq(live(), base, "nothing kept once the holds ended")
	-- three objects take one hold and are dropped without releasing it
	local function three()
		local a, b, c = client:lock(name), client:lock(name), client:lock(name)
		assert(a:acquire())
		assert(b:acquire())
		assert(c:acquire())
		assert(a:acquire())
	end
	three()
	eq(live(), base + 3, "the handles of the current hold are kept")
	local d = client:lock(name)
	eq(d:hold_count(), 4, "one hold of 4") -- d's handle: one more
	assert(d:unlock())
	eq(live(), base + 4, "kept while the hold goes on")
	for _ = 1, 3 do assert(d:unlock()) end
	eq(d:locked(), false)
	eq(live(), base + 1, "let go when it ended (d's own handle is d's)")
	-- the halves of a read-write lock are two locks: the end of the write
	-- hold lets the write handle go and keeps the read one
	local function halves()
		local rw = client:read_write_lock(rwname)
		assert(rw.write:acquire())
		assert(rw.read:acquire())
		assert(rw.write:unlock())
	end
	halves()
	eq(live(), base + 2, "the read half's handle kept")
	local function unread()
		local r = client:read_write_lock(rwname).read
		eq(r:hold_count(), 1)
		assert(r:unlock())
		eq(r:locked(), false)
	end
	unread()
	eq(live(), base + 1, "the read handle let go when the read hold ended")
	d = nil
	eq(live(), base, "all collected")
end)

test("names are binary-safe", function()
	local a, b = "nul\0one", "nul\0two"
	local prefix = uname("bin")
	local la, lb, lp = client:lock(prefix .. a), client:lock(prefix .. b), client:lock(prefix .. "nul")
	local g = assert(la:acquire())
	eq(other:lock(prefix .. a):locked(), true)
	eq(lb:locked(), false)
	eq(lp:locked(), false)
	g:release()
	local big = client:lock(string.rep("x", 65536))
	local g2 = assert(big:acquire{wait = 0})
	eq(big:held(), true)
	g2:release()
end)

test("bad input raises", function()
	local lock = client:lock(uname("bad"))
	raises("string expected", client.lock, client, 42)
	raises("string expected", client.lock, client)
	raises("1 to 65536 bytes", client.lock, client, "")
	raises("1 to 65536 bytes", client.lock, client, string.rep("x", 65537))
	raises("hilock client expected", client.lock, {}, "x")
	raises("negative", lock.acquire, lock, {wait = -1})
	raises("negative", lock.acquire, lock, -0.5)
	raises("number of seconds expected", lock.acquire, lock, {wait = "1"})
	raises("nan", lock.acquire, lock, {wait = 0 / 0})
	raises("lease must be positive", lock.acquire, lock, {lease = 0})
	raises("too long", lock.acquire, lock, {lease = 2 ^ 40})
	raises("both 'wait' and 'timeout'", lock.acquire, lock, {wait = 1, timeout = 1})
	raises("unknown option 'wiat'", lock.acquire, lock, {wiat = 1})
	raises("table of options expected", lock.acquire, lock, "soon")
	raises("hilock lock expected", lock.held, client)
	raises("hilock lock expected", lock.held)
	raises("negative", lock.wait_lost, lock, -1)
	eq(lock:locked(), false, "nothing happened")
	-- the checks of the hot path: acquire, and a guard's release
	raises("bad self to 'acquire' %(hilock lock expected%)", lock.acquire, client)
	raises("bad self to 'acquire' %(hilock lock expected%)", lock.acquire, nil)
	raises("bad self to 'acquire' %(hilock lock expected%)", lock.acquire, 5)
	local g0 = assert(lock:acquire())
	raises("bad self to 'release' %(hilock guard expected%)", g0.release, lock)
	raises("bad self to 'release' %(hilock guard expected%)", g0.release, nil)
	raises("bad self to 'release' %(hilock guard expected%)", g0.release, {})
	raises("bad self to 'release' %(hilock guard expected%)", g0.unlock, "x")
	eq(lock:hold_count(), 1, "still held")
	assert(g0:release({}))
	local g1 = assert(lock:acquire())
	eq(g0:release({}), true, "released once, whatever it is passed")
	eq(lock:hold_count(), 1, "the newer hold is left alone")
	assert(g1:release())
	eq(lock:locked(), false)
	-- a closed client makes its locks raise
	local c = assert(hilock.connect(URL))
	local l = c:lock(uname("closed"))
	local g = assert(l:acquire{lease = 5})
	c:close()
	raises("closed hilock client", l.held, l)
	raises("closed hilock client", l.acquire, l)
	raises("closed hilock client", l.unlock, l)
	eq(g:release(), true, "a guard of a closed client has nothing to do")
end)

test("handles are collected without leaks (live counters)", function()
	collectgarbage("collect")
	local base = core.live_locks()
	local cbase = core.live_clients()
	for i = 1, 3000 do
		local lock = client:lock(uname("gc" .. i))
		assert(lock:held() == false)
	end
	assert(core.live_locks() >= base, "counter sane")
	for _ = 1, 5 do local c = assert(hilock.connect(URL)) end
	collectgarbage("collect")
	collectgarbage("collect")
	eq(core.live_locks(), base, "live lock handles")
	eq(core.live_clients(), cbase, "live clients")
end)

test("several Lua processes contend; the GET/SET counter ends exact", function()
	assert(EXAMPLES, "HILOCK_TEST_EXAMPLES not set")
	local name, key = uname("contend"), uname("counter")
	local procs, per = 4, 25
	local pipes = {}
	for i = 1, procs do
		pipes[i] = assert(io.popen(string.format("HILOCK_URL=%s %s %s %s %s %d 2>&1",
			shq(URL), LUA, shq(EXAMPLES .. "/contend.lua"), shq(name), shq(key), per)))
	end
	local lines, failed = 0, {}
	for i = 1, procs do
		local out = pipes[i]:read("a")
		local ok = pipes[i]:close()
		for line in out:gmatch("[^\n]+") do
			if line:match("^%[lua pid %d+%] holds .+, counter %-> %d+$") then
				lines = lines + 1
			end
		end
		if not ok then failed[#failed + 1] = out end
	end
	eq(#failed, 0, "failed workers: " .. table.concat(failed, "\n"))
	eq(lines, procs * per, "progress lines")
	eq(redis("GET", key), tostring(procs * per), "counter")
	eq(other:lock(name):locked(), false)
end)

-- observability ---------------------------------------------------------------

test("stats: acquires (re-entries too), waits and their time, releases", function()
	local c <close> = assert(hilock.connect(URL))
	local s = c:stats()
	for _, k in ipairs({"acquisitions", "acquire_waits", "releases", "renewals",
		"renewal_failures", "losses", "reconnects", "failovers", "events_dropped",
		"waiting"}) do
		eq(s[k], 0, k)
		eq(math.type(s[k]), "integer", k)
	end
	eq(s.wait_time, 0, "wait_time")
	local name = uname("stats")
	local lk = c:lock(name)
	local g1 = assert(lk:acquire())
	local g2 = assert(lk:acquire()) -- re-entry
	assert(g2:release())
	assert(g1:release())
	fails("HL_ENOTHELD", lk:unlock()) -- not counted
	s = c:stats()
	eq(s.acquisitions, 2, "acquisitions")
	eq(s.releases, 2, "releases")
	eq(s.acquire_waits, 0, "acquire_waits")
	local og = assert(other:lock(name):acquire())
	local t0 = now()
	eq(lk:acquire{wait = 0.3}, false, "a wait in vain")
	local took = now() - t0
	eq(lk:try_acquire(), false, "no wait")
	assert(og:release())
	s = c:stats()
	eq(s.acquisitions, 2, "acquisitions")
	eq(s.acquire_waits, 1, "acquire_waits")
	assert(s.wait_time >= 0.25 and s.wait_time <= took + 0.01, "wait_time " .. s.wait_time)
	c:close()
	eq(c:stats().acquisitions, 2, "after close")
end)

test("stats: waiting is a gauge of the waits waiting now", function()
	local c <close> = assert(hilock.connect(URL))
	local name = uname("stats-waiting")
	local og = assert(other:lock(name):acquire())
	local function waiting_is(n)
		assert(eventually(30, function() return c:stats().waiting == n end),
			"waiting " .. c:stats().waiting .. ", want " .. n)
	end
	local t1 = assert(c:lock(name):try_acquire_start(30))
	local t2 = assert(coroutine.wrap(function()
		return c:lock(name):try_acquire_start(30) -- another owner
	end)())
	waiting_is(2)
	eq(other:stats().waiting, 0, "the holder's client")
	assert(t2:cancel())
	assert(t2:wait(10))
	fails("HL_EINTERRUPTED", t2:result())
	eq(c:stats().waiting, 1, "after a cancel")
	eq(t1:done(), false, "still waiting")
	assert(og:release())
	assert(t1:wait(30))
	local g = assert(t1:result())
	eq(c:stats().waiting, 0, "after the acquire")
	assert(g:release())
	t1:close()
	t2:close()
end)

test("events: the callback runs on the caller's thread, only when hilock is called", function()
	local c <close> = assert(hilock.connect(URL, {watchdog_timeout = 1}))
	local seen = {}
	c:on_event(function(e)
		seen[#seen + 1] = {e = e, co = coroutine.running()}
	end)
	local name = uname("lost")
	local lk = c:lock(name)
	local g = assert(lk:acquire())
	redis("DEL", name)
	-- the library notices on its own thread; no Lua code runs there
	assert(eventually(10, function() return c:stats().losses == 1 end), "loss not counted")
	sleep(0.2)
	eq(#seen, 0, "callbacks run with no hilock call")
	-- a call on the client runs it, in the calling coroutine
	local co = coroutine.create(function() return lk:locked() end)
	local ok, locked = coroutine.resume(co)
	assert(ok and locked == false, tostring(locked))
	eq(#seen, 1, "callbacks run by the call")
	eq(seen[1].co, co, "the coroutine that made the call")
	local e = seen[1].e
	eq(e.type, "lost")
	eq(e.name, name, "the name")
	eq(e.owner, lk:owner())
	eq(e.status, "HL_ELOST")
	eq(e.node, nil)
	assert(e.message:find("was lost", 1, true), e.message)
	assert(math.abs(e.time - os.time()) < 60, "time " .. e.time)
	fails("HL_ELOST", g:release())
	eq(c:dispatch_events(), 0, "nothing left")
end)

test("events: reconnect, dispatch_events, errors in the callback", function()
	local c <close> = assert(hilock.connect(URL))
	local lk = c:lock(uname("rc"))
	eq(lk:locked(), false)
	local kinds = {}
	c:on_event(function(e) kinds[#kinds + 1] = e.type; error("callback boom") end)
	assert(tonumber(redis("CLIENT", "KILL", "TYPE", "normal")) >= 1)
	-- the automatic run: the call goes on, the error goes to stderr
	eq(lk:locked(), false)
	eq(c:stats().reconnects, 1, "reconnects")
	eq(kinds[1], "reconnect")
	-- dispatch_events raises it
	c:on_event(nil)
	local g = assert(lk:acquire{lease = 30})
	eq(lk:force_unlock(), true) -- a loss, queued: no callback now
	eq(c:stats().losses, 1)
	c:on_event(function(e) error("raised: " .. e.type) end)
	raises("raised: lost", c.dispatch_events, c)
	eq(c:dispatch_events(), 0)
	fails("HL_ELOST", g:release())
	raises("function or nil expected", c.on_event, c, 42)
end)

test("events: next_event and event_fd without a callback; close runs what was queued", function()
	local c = assert(hilock.connect(URL))
	local fd = assert(c:event_fd())
	eq(math.type(fd), "integer")
	assert(fd >= 0)
	eq(c:next_event(), nil)
	local lk = c:lock(uname("q"))
	assert(lk:acquire{lease = 30})
	eq(lk:force_unlock(), true)
	local e = assert(c:next_event())
	eq(e.type, "lost")
	eq(c:next_event(), nil)
	-- a loss queued, then close: the callback gets it from close
	assert(lk:acquire{lease = 30})
	eq(lk:force_unlock(), true)
	local got = {}
	c:on_event(nil)
	c._on_event = function(ev) got[#got + 1] = ev.type end -- set without a dispatch
	c:close()
	eq(#got, 1, "run by close")
	eq(c:next_event(), nil, "closed and drained")
	eq(c:dispatch_events(), 0)
	eq(c:stats().losses, 2)
end)

test("compat_smoke.lua (the 5.1/LuaJIT-compatible subset) passes", function()
	local out, ok = sh(string.format("%s %s 2>&1", LUA, shq(HERE .. "/compat_smoke.lua")))
	assert(ok and out:match("smoke ok"), out)
end)

test("valgrind: thousands of unreleased handles, no leaks or errors", function()
	if os.getenv("HILOCK_TEST_NO_VALGRIND") == "1" then return "skip", "HILOCK_TEST_NO_VALGRIND=1" end
	local _, found = sh("command -v valgrind >/dev/null 2>&1")
	if not found then return "skip", "valgrind not installed" end
	local out, ok, code = sh(string.format(
		"valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite " ..
		"%s %s 2000 2>&1", LUA, shq(HERE .. "/gc_stress.lua")))
	if not ok then
		error("valgrind run failed (exit " .. tostring(code) .. "):\n" .. out)
	end
	assert(out:match("handles collected"), out)
end)

-- lock kinds -------------------------------------------------------------------

local function worker(...)
	local cmd = LUA .. " " .. shq(HERE .. "/kinds_worker.lua") .. " " .. shq(URL)
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return cmd
end

local function tmpfile()
	local path = os.tmpname()
	local f = assert(io.open(path, "w"))
	f:close()
	return path
end

local function read_lines(path)
	local lines = {}
	for line in io.lines(path) do lines[#lines + 1] = line end
	return lines
end

-- Replay an enter/leave log: writers ("W") must be alone; returns the number
-- of critical sections and how often readers were inside together.
local function check_log(lines)
	local readers, writers, sections, shared = 0, 0, 0, 0
	for _, line in ipairs(lines) do
		local what, rw = line:match("^(%a+) (%a)")
		if what == "enter" then
			sections = sections + 1
			if rw == "W" then writers = writers + 1 else readers = readers + 1 end
			if writers > 1 or (writers > 0 and readers > 0) then
				error("overlap at '" .. line .. "' (" .. readers .. " readers, " ..
					writers .. " writers inside)", 2)
			end
			if readers > 1 then shared = shared + 1 end
		else
			if rw == "W" then writers = writers - 1 else readers = readers - 1 end
		end
	end
	return sections, shared
end

local function contend(kinds, iters)
	local name, log = uname("contend"), tmpfile()
	local pipes = {}
	for i, kind in ipairs(kinds) do
		pipes[i] = assert(io.popen(worker("contend", name, kind, log, iters, "p" .. i) .. " 2>&1"))
	end
	local failed = {}
	for i = 1, #pipes do
		local out = pipes[i]:read("a")
		if not pipes[i]:close() then failed[#failed + 1] = out end
	end
	eq(#failed, 0, "failed workers: " .. table.concat(failed, "\n"))
	local lines = read_lines(log)
	os.remove(log)
	eq(redis("EXISTS", name), "0", "the lock is left in Redis")
	return lines
end

for _, kind in ipairs{"fair", "fair-nonreentrant", "nonreentrant", "spin", "fenced", "write"} do
	test("kinds: " .. kind .. " locks exclude across processes", function()
		local lines = contend({kind, kind, kind}, 10)
		local sections = check_log(lines)
		eq(sections, 30, "critical sections")
	end)
end

test("kinds: readers share across processes, writers are alone", function()
	local lines = contend({"read", "read", "write", "read", "write"}, 10)
	local sections = check_log(lines)
	eq(sections, 50, "critical sections")
	-- the checker itself: a log with a reader inside a writer fails it
	raises("overlap", check_log, {"enter W a", "enter R b", "leave R b", "leave W a"})
	raises("overlap", check_log, {"enter W a", "enter W b"})
	local _, shared = check_log({"enter R a", "enter R b", "leave R a", "leave R b"})
	eq(shared, 1, "readers together")
end)

test("kinds: kind names, bad options, a kind's call on another kind raises", function()
	local n = uname("names")
	eq(client:lock(n):kind(), "reentrant")
	eq(client:lock(n, {reentrant = false}):kind(), "nonreentrant")
	eq(client:lock(n, {reentrant = true}):kind(), "reentrant")
	eq(client:fair_lock(n):kind(), "fair")
	eq(client:fair_lock(n, {reentrant = false}):kind(), "fair-nonreentrant")
	eq(client:spin_lock(n):kind(), "spin")
	eq(client:fenced_lock(n):kind(), "fenced")
	local rw = client:read_write_lock(n)
	eq(rw.read:kind(), "read")
	eq(rw.write:kind(), "write")
	eq(rw:name(), n)
	assert(tostring(rw):match("rwlock"), tostring(rw))
	assert(tostring(rw.read):match("read"), tostring(rw.read))
	raises("token is a call of fenced locks %(client:fenced_lock%); \"" .. n:gsub("%p", "%%%0") ..
		"\" is a reentrant lock", function() return client:lock(n):token() end)
	raises("last_token is a call of fenced locks", function() return rw.read:last_token() end)
	raises("boolean expected", client.lock, client, n, {reentrant = "no"})
	raises("unknown option 'fair'", client.lock, client, n, {fair = true})
	raises("unknown option 'reentrant'", client.spin_lock, client, n, {reentrant = false})
	raises("0 < initial <= max", client.spin_lock, client, n, {backoff = {initial = 0.02, max = 0.01}})
	raises("0 < initial <= max", client.spin_lock, client, n, {backoff = {initial = 0}})
	raises("multiplier", client.spin_lock, client, n, {backoff = {multiplier = 0}})
	raises("multiplier", client.spin_lock, client, n, {backoff = {multiplier = 1.5}})
	raises("table expected", client.spin_lock, client, n, {backoff = 0.01})
	raises("name must be", client.fair_lock, client, "")
	raises("string expected", client.fenced_lock, client, 7)
	raises("positive number", hilock.connect, URL, {fair_wait_timeout = 0})
	raises("negative time", hilock.connect, URL, {fair_wait_timeout = -1})
	eq(hilock.codes.HL_EDEADLK, -16)
end)

test("kinds: non-reentrant locks refuse re-entry with HL_EDEADLK", function()
	for _, fair in ipairs{false, true} do
		local n = uname("nr")
		local lock = fair and client:fair_lock(n, {reentrant = false}) or
			client:lock(n, {reentrant = false})
		local g = assert(lock:acquire())
		local v, msg, code = lock:acquire()
		fails("HL_EDEADLK", v, msg, code)
		assert(msg:match("non%-reentrant"), msg)
		fails("HL_EDEADLK", lock:try_acquire())
		fails("HL_EDEADLK", lock:acquire{wait = 1})
		raises("HL_EDEADLK", lock.with, lock, function() error("entered twice") end)
		eq(lock:hold_count(), 1, "hold count after refused re-entries")
		-- another coroutine is another owner: it waits
		local co = coroutine.wrap(function() return lock:try_acquire(0.2) end)
		eq(co(), false, "another owner got a held lock")
		g:release()
		eq(redis("EXISTS", n), "0")
		co = coroutine.wrap(function()
			local g2 = lock:try_acquire()
			return g2 and g2:release()
		end)
		eq(co(), true, "another owner after the release")
	end
end)

test("kinds: read-write lock, readers together, the writer alone, the rules", function()
	local n = uname("rw")
	local rw = client:read_write_lock(n)
	local theirs = other:read_write_lock(n)
	-- two coroutines (two owners) and another client read together
	local g1 = assert(rw.read:acquire())
	local g2 = coroutine.wrap(function() return rw.read:try_acquire() end)()
	assert(g2, "a second reader was kept out")
	local g3 = assert(theirs.read:try_acquire())
	eq(redis("HGET", n, "mode"), "read")
	-- writers (another coroutine: another owner, which reads nothing) wait
	-- for every reader
	eq(coroutine.wrap(function() return theirs.write:try_acquire(0.2) end)(), false,
		"a writer got in among readers")
	-- a reader asking for the write lock would wait for itself
	fails("HL_EDEADLK", rw.write:acquire{wait = 1})
	fails("HL_ENOTHELD", rw.write:unlock())
	g1:release(); g2:release(); g3:release()
	eq(redis("EXISTS", n), "0")
	-- one writer; readers and writers of other owners wait
	local w = assert(theirs.write:acquire())
	eq(redis("HGET", n, "mode"), "write")
	eq(rw.read:try_acquire(0.2), false, "a reader got in with a writer")
	eq(rw.write:try_acquire(), false, "a second writer got in")
	-- the writer holds no read hold: releasing one is "not held"
	fails("HL_ENOTHELD", theirs.read:unlock())
	-- the writer may read, and keeps reading after writing
	local r = assert(theirs.read:acquire())
	w:release()
	eq(redis("HGET", n, "mode"), "read")
	eq(theirs.read:held(), true)
	r:release()
	eq(redis("EXISTS", n), "0")
end)

test("kinds: <close> on guards and on a read-write lock releases each half", function()
	local n = uname("rwclose")
	do
		local rw <close> = client:read_write_lock(n)
		local w <close> = assert(rw.write:acquire())
		assert(rw.read:acquire()) -- no guard kept: the object's close releases it
		w:release()               -- frees the write half only
		eq(redis("HGET", n, "mode"), "read")
		eq(rw.read:hold_count(), 1)
	end
	eq(redis("EXISTS", n), "0", "closing the read-write lock released the read hold")
	local f = client:fenced_lock(uname("fclose"))
	do
		local g <close> = assert(f:acquire())
		assert(f:token() > 0)
	end
	eq(f:locked(), false)
end)

test("kinds: fenced tokens strictly increase, re-entries too", function()
	local n = uname("fenced")
	local locks = {client:fenced_lock(n), other:fenced_lock(n)}
	eq(locks[1]:last_token(), 0)
	fails("HL_ENOTHELD", locks[1]:token())
	local prev = 0
	for i = 1, 10 do
		local lock = locks[i % 2 + 1]
		local run = coroutine.wrap(function()
			local g = assert(lock:acquire())
			local tok = lock:token()
			assert(tok > prev, "token " .. tok .. " after " .. prev)
			local g2 = assert(lock:acquire())
			eq(lock:token(), tok + 1, "re-entry token")
			eq(locks[1]:last_token(), tok + 1)
			g2:release()
			g:release()
			fails("HL_ENOTHELD", lock:token())
			return tok + 1
		end)
		prev = run()
	end
	eq(prev, 20)
	eq(redis("GET", "redisson_lock_token:{" .. n .. "}"), "20")
end)

-- The meanings of docs/consistency.md, as Lua spells them: one test per row,
-- so that the code and the table cannot drift apart.
test("consistency: no lease is nil (the watchdog renews), lease 0 is refused", function()
	local c <close> = assert(hilock.connect(URL, {watchdog_timeout = 1}))
	local name = uname("cons-wd")
	local lock = c:lock(name)
	local g = assert(lock:acquire{wait = 0, lease = nil})
	sleep(1.5) -- past its 1 s lease: renewed
	local pttl = tonumber(redis("PTTL", name))
	assert(pttl > 0 and pttl <= 1000, "PTTL " .. pttl .. " after 1.5 s")
	assert(g:release())
	raises("lease must be positive", lock.acquire, lock, {lease = 0})
	local xs = assert(c:expirable_semaphore(uname("cons-xs")))
	assert(xs:set_permits(1))
	raises("lease must be positive", xs.acquire, xs, {wait = 0, lease = 0})
	eq(xs:available_permits(), 1, "a refused acquire took nothing")
	local pg, ids = assert(xs:acquire{wait = 0, lease = nil})
	eq(xs:lease_time(ids[1]), math.huge, "lease_time of a permit without a lease")
	assert(pg:release())
end)

test("consistency: the wait is wait= (or timeout=); held elsewhere is false", function()
	local name = uname("cons-wait")
	local g = assert(other:lock(name):acquire())
	local lock = client:lock(name)
	local t0 = now()
	eq(lock:acquire{wait = 0}, false, "wait 0: one attempt")
	eq(lock:acquire(0), false, "a number is the wait")
	local quick = now() - t0
	assert(quick < 1, "one attempt took " .. quick)
	t0 = now()
	eq(lock:acquire{timeout = 0.3}, false, "timeout = 0.3")
	local took = now() - t0
	assert(took >= 0.25 and took < 3, "timeout = 0.3 took " .. took)
	t0 = now()
	eq(lock:try_acquire{timeout = 0.3}, false, "try_acquire{timeout = 0.3}")
	assert(now() - t0 >= 0.25, "try_acquire ignored timeout")
	local sem = assert(client:semaphore(uname("cons-sem")))
	assert(sem:set_permits(0))
	t0 = now()
	eq(sem:acquire(1, {timeout = 0.3}), false, "sem:acquire{timeout = 0.3}")
	assert(now() - t0 >= 0.25, "sem:acquire ignored timeout")
	assert(g:release())
end)

test("consistency: ttl of a free lock is false, of one without expiry math.huge", function()
	local name = uname("cons-ttl")
	local lock = client:lock(name)
	eq(lock:ttl(), false, "free")
	local g = assert(lock:acquire{lease = 5})
	local ttl = lock:ttl()
	assert(ttl > 0 and ttl <= 5, "held: " .. tostring(ttl))
	assert(g:release())
	redis("HSET", name, "someone:1", "1")
	eq(lock:ttl(), math.huge, "no expiry")
	redis("DEL", name)
end)

test("consistency: a hold lost in a <close> scope raises at the scope's end", function()
	local c <close> = assert(hilock.connect(URL, {watchdog_timeout = 1}))
	local name = uname("cons-lost")
	local lock = c:lock(name)
	local ok, err = pcall(function()
		local g <close> = assert(lock:acquire())
		assert(other:lock(name):force_unlock())
		assert(lock:wait_lost(10), "not found lost")
	end)
	eq(ok, false, "the scope ended without an error")
	assert(tostring(err):match("HL_ELOST"), tostring(err))
	eq(redis("EXISTS", name), "0", "nothing left")
end)

test("kinds: fair waiters of several processes get the lock in queue order", function()
	local n, log = uname("fifo"), tmpfile()
	local queue = "redisson_lock_queue:{" .. n .. "}"
	local holder = client:fair_lock(n)
	local g = assert(holder:acquire())
	local pipes = {}
	for i = 1, 4 do
		pipes[i] = assert(io.popen(worker("fair", n, tostring(i), log) .. " 2>&1"))
		-- the next one starts once this one is in Redis's queue
		assert(eventually(10, function() return redis("LLEN", queue) == tostring(i) end),
			"waiter " .. i .. " did not queue")
	end
	g:release()
	for i = 1, 4 do
		local out = pipes[i]:read("a")
		assert(pipes[i]:close(), "fair worker failed: " .. out)
	end
	local lines = read_lines(log)
	os.remove(log)
	eq(table.concat(lines, ","), "got 1,got 2,got 3,got 4", "order")
	eq(redis("LLEN", queue), "0")
end)

test("kinds: fair_wait_timeout reaches the waiter's deadline in Redis", function()
	local n, log = uname("fairwait"), tmpfile()
	local zset = "redisson_lock_timeout:{" .. n .. "}"
	local holder = client:fair_lock(n) -- the 2 s watchdog lease
	local g = assert(holder:acquire())
	local p = assert(io.popen(worker("fair", n, "w", log, "100") .. " 2>&1"))
	assert(eventually(10, function() return redis("ZCARD", zset) == "1" end), "no waiter queued")
	local score = tonumber(redis("ZRANGE", zset, "0", "0", "WITHSCORES"):match("\n(%d+)"))
	local secs, micros = redis("TIME"):match("^(%d+)\n(%d+)")
	local ahead = score - (tonumber(secs) * 1000 + tonumber(micros) // 1000)
	-- the holder's lease (at most 2 s) plus 100 s, not the default 300 s
	assert(ahead >= 99000 and ahead <= 103000, "deadline " .. ahead .. " ms ahead")
	g:release()
	local out = p:read("a")
	assert(p:close(), "fair worker failed: " .. out)
	os.remove(log)
end)

test("kinds: a spin waiter does not subscribe, and gets the lock soon after", function()
	local n = uname("spin")
	local plain = client:lock(n) -- the same hash as the spin lock
	local g = assert(plain:acquire())
	local p = assert(io.popen(worker("spin", n) .. " 2>&1"))
	eq(p:read("l"), "waiting")
	sleep(0.5)
	eq(redis("PUBSUB", "NUMSUB", "redisson_lock__channel:{" .. n .. "}"),
		"redisson_lock__channel:{" .. n .. "}\n0", "subscribers")
	local t0 = now()
	g:release()
	eq(p:read("l"), "got")
	local dt = now() - t0
	assert(dt < 3, "the spin waiter took " .. dt .. " s")
	assert(p:close(), "spin worker failed")
end)

-- runner ---------------------------------------------------------------------

print("1.." .. #tests)
local passed, failed, skipped = 0, 0, 0
for i, t in ipairs(tests) do
	local ok, res, why = xpcall(t.f, debug.traceback)
	if ok and res == "skip" then
		skipped = skipped + 1
		passed = passed + 1
		print(string.format("ok %d - %s # SKIP %s", i, t.name, why))
	elseif ok then
		passed = passed + 1
		print(string.format("ok %d - %s", i, t.name))
	else
		failed = failed + 1
		print(string.format("not ok %d - %s", i, t.name))
		for line in tostring(res):gmatch("[^\n]+") do print("#   " .. line) end
	end
	io.stdout:flush()
end
other:close()
client:close()
print(string.format("# %d passed, %d failed%s", passed, failed,
	skipped > 0 and (", " .. skipped .. " skipped") or ""))
os.exit(failed == 0 and 0 or 1)
