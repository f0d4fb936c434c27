-- Sentinel and Cluster tests of the Lua binding, against real deployments
-- started by the launcher hl_topo (HILOCK_TOPO, set by run-tests.sh:
-- tests/interop/topo-up.c built into <build>/tests/tools): a master with
-- two replicas and three sentinels, and a cluster of three masters with a
-- replica each, one of each for this file. The launcher prints "up <kind>
-- URL key=value..." once the deployment is up and answers one line per
-- command on its stdin (master, slot KEY_HEX, masters, kill-master); EOF on
-- its stdin (this process ending) stops every node.
-- TAP on stdout and a final "N passed, N failed"; exits non-zero if any
-- test failed.
local hilock = require "hilock"

local TOPO = assert(os.getenv("HILOCK_TOPO"), "HILOCK_TOPO not set (use run-tests.sh)")
local LUA = os.getenv("HILOCK_TEST_LUA") or "lua5.4"
local SECRET = "s3ntinel-Secret"

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function sh(cmd)
	local p = assert(io.popen(cmd))
	local out = p:read("a")
	p:close()
	return out
end

local function now() return tonumber(sh("date +%s.%N")) end
local function sleep(s) os.execute("sleep " .. s) end

-- One command on the node at 127.0.0.1:port (redis-cli's raw output).
local function node(port, ...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. port
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	return (sh(cmd .. " 2>&1"):gsub("\n$", ""))
end

-- Calls per command of INFO commandstats ({exists = 3, ...}).
local function commandstats(port)
	local out = {}
	for name, calls in node(port, "INFO", "commandstats"):gmatch("cmdstat_([%w|]+):calls=(%d+)") do
		out[name] = tonumber(calls)
	end
	return out
end

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2)
	end
end

local function ports(list)
	local out = {}
	for p in (list or ""):gmatch("[^,]*:(%d+)") do out[#out + 1] = tonumber(p) end
	return out
end

-- The launcher ---------------------------------------------------------------

local Topology = {}
Topology.__index = Topology

local function fields(words)
	local out = {}
	for k, v in words:gmatch("([%w_]+)=(%S+)") do out[k] = v end
	return out
end

local function read_file(path)
	local f = io.open(path, "r")
	if not f then return "" end
	local s = f:read("a")
	f:close()
	return s
end

function Topology:log_tail()
	local lines = {}
	for l in read_file(self.log):gmatch("[^\n]+") do lines[#lines + 1] = l end
	return "\nhl_topo's log:\n" .. table.concat(lines, "\n", math.max(1, #lines - 19))
end

-- The n-th line of the launcher's output, waiting up to limit seconds.
function Topology:line(n, limit)
	local deadline = now() + limit
	while true do
		local lines = {}
		for l in read_file(self.out):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
		if lines[n] then return lines[n] end
		if now() > deadline then
			error("hl_topo " .. self.kind .. ": no answer within " .. limit .. " s" .. self:log_tail(), 2)
		end
		sleep(0.05)
	end
end

local function start(kind)
	local self = setmetatable({kind = kind, out = os.tmpname(), log = os.tmpname(), n = 1}, Topology)
	self.pipe = assert(io.popen("exec " .. shq(TOPO) .. " " .. kind .. " >" .. shq(self.out) ..
		" 2>" .. shq(self.log), "w"))
	local up = self:line(1, 60)
	local k, url, rest = up:match("^up (%S+) (%S+)(.*)$")
	if k ~= kind then error("hl_topo: unexpected first line " .. up .. self:log_tail()) end
	self.url, self.info = url, fields(rest)
	return self
end

-- One command; its answer's fields ("ok old=1 new=2" -> {old = "1", new = "2"}).
function Topology:command(cmd)
	self.pipe:write(cmd .. "\n")
	self.pipe:flush()
	self.n = self.n + 1
	local ans = self:line(self.n, 60)
	if not ans:match("^ok") then error("hl_topo " .. cmd .. ": " .. ans .. self:log_tail(), 2) end
	return fields(ans)
end

function Topology:stop()
	if self.pipe then
		self.pipe:close() -- EOF: every node stopped; waits for the launcher
		self.pipe = nil
	end
	os.remove(self.out)
	os.remove(self.log)
end

-- Cluster: the port of the master that owns name's slot.
function Topology:master_of(name)
	return tonumber(self:command("slot " .. name:gsub(".", function(c)
		return string.format("%02x", c:byte())
	end)).port)
end

-- Per master, n names whose slot it owns.
function Topology:names_over_masters(prefix, n)
	local by = {}
	for p in self:command("masters").masters:gmatch("%d+") do by[tonumber(p)] = {} end
	for i = 0, 1000 do
		local done = true
		for _, names in pairs(by) do if #names < n then done = false end end
		if done then return by end
		local name = prefix .. ":" .. i
		local list = by[self:master_of(name)]
		if #list < n then list[#list + 1] = name end
	end
	error("no names for every master")
end

-- Wait until every replica acknowledges a write of its master (WAIT, on one
-- connection: redis-cli runs stdin's commands on one). "up" comes once the
-- replicas' links are up, when one may still be a moment from acknowledging
-- anything, and until then the client's WAIT after a lock change times out.
function Topology:synced()
	local function wait(port, key, replicas)
		local out = sh(string.format("printf 'SET %s 1\\nDEL %s\\nWAIT %d 20000\\n' | " ..
			"redis-cli -h 127.0.0.1 -p %d 2>&1", key, key, replicas, port))
		local acked = tonumber(out:match("(%d+)%s*$"))
		if acked ~= replicas then
			error(string.format("%s of %d replicas of %d acknowledged a write%s", tostring(acked),
				replicas, port, self:log_tail()))
		end
	end
	if self.kind == "sentinel" then
		wait(tonumber(self.info.master_port), "hl:topo:synced", #ports(self.info.data) - 1)
	else
		for port, names in pairs(self:names_over_masters("hl:topo:synced", 1)) do
			wait(port, names[1], 1)
		end
	end
end

-- A waiter in another process: connects, checks the lock is taken, says
-- "waiting", waits for it at most `wait` seconds, says "got" (then
-- releases it) or "no <why>".
local function waiter(url, name, wait)
	local script = string.format([[
		local hilock = require "hilock"
		local c = assert(hilock.connect(%q))
		local l = c:lock(%q)
		assert(l:try_acquire() == false, "the lock is free")
		io.write("waiting\n"); io.stdout:flush()
		local g, msg = l:acquire{wait = %g}
		io.write(g and "got\n" or ("no " .. tostring(msg) .. "\n")); io.stdout:flush()
		if g then g:release() end
		c:close()
	]], url, name, wait)
	local p = assert(io.popen(LUA .. " -e " .. shq(script) .. " 2>&1"))
	eq(p:read("l"), "waiting", "the waiter")
	return p
end

-- Tests -----------------------------------------------------------------------

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

local sentinel, cluster

local function sentinel_nodes()
	local master = tonumber(sentinel:command("master").port)
	local replicas = {}
	for _, p in ipairs(ports(sentinel.info.data)) do
		if p ~= master and node(p, "PING") == "PONG" then replicas[#replicas + 1] = p end
	end
	return master, replicas
end

test("sentinel: a lock through redis-sentinel://, a waiter woken", function()
	sentinel = start("sentinel")
	sentinel:synced()
	assert(sentinel.url:match("^redis%-sentinel://"), sentinel.url)
	local a = assert(hilock.connect(sentinel.url))
	assert(tostring(a):find("redis-sentinel://", 1, true), tostring(a))
	local name = "lua:topo:sentinel"
	local g = assert(a:lock(name):acquire{wait = 0})
	local master = sentinel_nodes()
	eq(node(master, "EXISTS", name), "1", "EXISTS on the master")
	local p = waiter(sentinel.url, name, 10)
	sleep(0.3)
	local t0 = now()
	assert(g:release())
	eq(p:read("l"), "got", "the waiter")
	local dt = now() - t0
	assert(dt < 2, "woken " .. dt .. " s after the release")
	p:close()
	a:close()
end)

test("sentinel: read_from and wait_replicas, seen on the nodes", function()
	local master, replicas = sentinel_nodes()
	eq(#replicas, 2, "replicas")
	local all = {master, replicas[1], replicas[2]}
	local name = "lua:topo:reads"
	local function reset(list) for _, p in ipairs(list) do node(p, "CONFIG", "RESETSTAT") end end
	-- read_from = "replica": the queries go to the replicas, never the master
	local c = assert(hilock.connect(sentinel.url, {read_from = "replica"}))
	reset(all)
	for _ = 1, 3 do eq(c:lock(name):locked(), false, "locked") end
	eq(c:lock(name):ttl(), false, "ttl of a free lock")
	local exists, pttl = 0, 0
	for _, p in ipairs(replicas) do
		local s = commandstats(p)
		exists, pttl = exists + (s.exists or 0), pttl + (s.pttl or 0)
	end
	eq(exists, 3, "EXISTS on the replicas")
	eq(pttl, 1, "PTTL on the replicas")
	eq(commandstats(master).exists, nil, "EXISTS on the master")
	c:close()
	-- the default: the master
	c = assert(hilock.connect(sentinel.url))
	reset(all)
	eq(c:lock(name):locked(), false)
	eq(commandstats(master).exists, 1, "EXISTS on the master")
	c:close()
	-- WAIT off ...
	c = assert(hilock.connect(sentinel.url, {wait_replicas = 0}))
	reset({master})
	assert(c:lock(name):acquire{wait = 0}):release()
	eq(commandstats(master).wait, nil, "WAIT with wait_replicas = 0")
	c:close()
	-- ... and for both replicas: once the lock is taken, they have it
	c = assert(hilock.connect(sentinel.url, {wait_replicas = 2, wait_timeout = 2}))
	reset({master})
	local g = assert(c:lock(name):acquire{wait = 0})
	for _, p in ipairs(replicas) do eq(node(p, "EXISTS", name), "1", "EXISTS on replica " .. p) end
	assert(g:release())
	assert((commandstats(master).wait or 0) >= 2, "WAIT with wait_replicas = 2")
	c:close()
end)

test("sentinel: the sentinels' password is in no message", function()
	-- The sentinels have no password: AUTH with one is refused.
	for _, opts in ipairs({
		{sentinel_username = "watcher", sentinel_password = SECRET},
		{sentinel_password = SECRET},
	}) do
		opts.connect_timeout, opts.retry_attempts = 3, 0
		local c, msg, code = hilock.connect(sentinel.url, opts)
		eq(c, nil, "a client with a wrong sentinel password")
		assert(code == "HL_EAUTH" or code == "HL_EREDIS" or code == "HL_ECONNECT", code)
		assert(not msg:find(SECRET, 1, true), msg)
	end
	-- the data nodes' credentials, in the URL: no user alice there
	local url = sentinel.url:gsub("://", "://alice:" .. SECRET .. "@", 1)
	local c, msg, code = hilock.connect(url, {retry_attempts = 0})
	eq(c, nil)
	eq(code, "HL_EAUTH")
	assert(not msg:find(SECRET, 1, true), msg)
	-- bad options, before any connection, without the value
	local ok, err = pcall(hilock.connect, sentinel.url, {sentinel_password = SECRET .. "\0"})
	assert(not ok and err:find("sentinel_password", 1, true) and not err:find(SECRET, 1, true), err)
	for _, opts in ipairs({{read_from = "slave"}, {read_from = 1}, {wait_replicas = -2},
		{wait_replicas = 1.5}, {wait_timeout = 0}, {sentinel_username = 3}}) do
		ok = pcall(hilock.connect, sentinel.url, opts)
		assert(not ok, "a bad option was taken")
	end
end)

-- Last for the sentinel deployment: it has one node fewer afterwards.
test("sentinel: kill -9 of the master with a holder and a waiter", function()
	local a = assert(hilock.connect(sentinel.url, {watchdog_timeout = 10}))
	local failovers = {}
	a:on_event(function(e)
		if e.type == "failover" then failovers[#failovers + 1] = e end
	end)
	local name = "lua:topo:failover"
	local g = assert(a:lock(name):acquire{wait = 0})
	local p = waiter(sentinel.url, name, 40)
	sleep(0.3)
	local ans = sentinel:command("kill-master")
	assert(ans.old ~= ans.new)
	-- a lock taken after the failover, on the new master
	local b = assert(hilock.connect(sentinel.url))
	local after = assert(b:lock("lua:topo:after-failover"):acquire{wait = 15},
		"no lock after the failover")
	eq(node(tonumber(ans.new), "EXISTS", "lua:topo:after-failover"), "1", "EXISTS on the new master")
	assert(after:release())
	b:close()
	-- the hold: renewed on the new master, or reported lost
	local t0 = now()
	local ok, msg, code = g:release()
	local lost = code == "HL_ELOST"
	assert(ok or lost, tostring(msg))
	eq(p:read("l"), "got", "the waiter across the failover")
	local dt = now() - t0
	assert(dt < (lost and 10 or 5), string.format("waiter got it %.2f s after (lost: %s)", dt,
		tostring(lost)))
	p:close()
	-- the failover: counted once, and run through the callback by a call
	eq(a:stats().failovers, 1, "failovers")
	a:dispatch_events()
	eq(#failovers, 1, "failover events")
	eq(failovers[1].node, "127.0.0.1:" .. ans.new, "the new master")
	eq(failovers[1].status, "HL_OK")
	a:close()
	sentinel:stop()
end)

test("cluster: locks over every master", function()
	cluster = start("cluster")
	cluster:synced()
	assert(cluster.url:match("^redis%-cluster://"), cluster.url)
	local a = assert(hilock.connect(cluster.url))
	local b = assert(hilock.connect(cluster.url))
	local guards = {}
	for port, names in pairs(cluster:names_over_masters("lua:topo:cluster", 3)) do
		for _, name in ipairs(names) do
			guards[#guards + 1] = assert(a:lock(name):acquire{wait = 0}, name)
			eq(node(port, "EXISTS", name), "1", name .. " on its master")
			eq(b:lock(name):try_acquire(), false, name .. " taken by another client")
			eq(b:lock(name):locked(), true, name .. " locked")
		end
	end
	for _, g in ipairs(guards) do assert(g:release()) end
	for _, g in ipairs(guards) do
		assert(b:lock(g:lock_object():name()):try_acquire(), "free again"):release()
	end
	a:close()
	b:close()
end)

test("cluster: a waiter woken on each master", function()
	local a = assert(hilock.connect(cluster.url))
	for _, names in pairs(cluster:names_over_masters("lua:topo:wake", 1)) do
		local g = assert(a:lock(names[1]):acquire{wait = 0})
		local p = waiter(cluster.url, names[1], 15)
		sleep(0.2)
		local t0 = now()
		assert(g:release())
		eq(p:read("l"), "got", "the waiter of " .. names[1])
		local dt = now() - t0
		assert(dt < 2, names[1] .. ": woken " .. dt .. " s after the release")
		p:close()
	end
	a:close()
	cluster:stop()
end)

print("1.." .. #tests)
local passed, failed = 0, 0
for i, t in ipairs(tests) do
	local ok, err = xpcall(t.f, debug.traceback)
	if ok then
		passed = passed + 1
		print(string.format("ok %d - %s", i, t.name))
	else
		failed = failed + 1
		print(string.format("not ok %d - %s", i, t.name))
		for line in tostring(err):gmatch("[^\n]+") do print("#   " .. line) end
	end
	io.stdout:flush()
end
for _, t in ipairs({sentinel, cluster}) do if t then t:stop() end end
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
