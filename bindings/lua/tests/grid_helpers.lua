-- Shared by the grid kinds' Lua tests: redis-cli, the fault proxy, a tiny
-- TAP runner. Not a test itself.
local H = {}
local PORT = assert(os.getenv("HILOCK_TEST_REDIS_PORT"), "run through run-tests.sh")
local TMP = os.getenv("HILOCK_TEST_GRID_DIR") or os.tmpname() .. ".d"
os.execute("mkdir -p '" .. TMP .. "'")
H.URL = assert(os.getenv("HILOCK_TEST_URL"))
H.FAULTPROXY = os.getenv("HILOCK_FAULTPROXY")
if H.FAULTPROXY == "" then H.FAULTPROXY = nil end

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
function H.redis(...)
	local cmd = "redis-cli -h 127.0.0.1 -p " .. PORT
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shq((select(i, ...))) end
	local p = assert(io.popen(cmd .. " 2>&1"))
	local out = p:read("a")
	p:close()
	return (out:gsub("\n$", ""))
end
function H.eq(a, b, what)
	if a ~= b then error(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a)), 2) end
end
function H.check(c, what) if not c then error(what or "check failed", 2) end end
-- f(...) raises an error matching pattern.
function H.raises(pattern, f, ...)
	local ok, err = pcall(f, ...)
	if ok then error("expected an error matching '" .. pattern .. "'", 2) end
	if not tostring(err):match(pattern) then
		error("error '" .. tostring(err) .. "' does not match '" .. pattern .. "'", 2)
	end
end
-- A runtime failure: nil, message, code (the code's name).
function H.fails(code, v, msg, c)
	if v ~= nil then error("expected nil, message, code; got " .. tostring(v), 2) end
	if type(msg) ~= "string" or msg == "" then error("no message", 2) end
	if c ~= code then error("expected code " .. code .. ", got " .. tostring(c) .. " (" .. msg .. ")", 2) end
end
-- A name of this run: hilock:lua:<prefix>:<time>:<random>:<n>:<what>.
local seq, RUN = 0, nil
function H.uname(prefix, what)
	if not RUN then
		math.randomseed(os.time())
		RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))
	end
	seq = seq + 1
	return "hilock:lua:" .. prefix .. ":" .. RUN .. ":" .. seq .. ":" .. (what or "")
end

-- A faultproxy in front of the server (its stdin a FIFO, as test_faults).
local n = 0
function H.proxy()
	n = n + 1
	local fifo = TMP .. "/" .. ((arg and arg[0] or "t"):match("([^/]+)%.lua$") or "t") .. n .. ".in"
	assert(os.execute("mkfifo " .. shq(fifo)))
	local out = assert(io.popen(string.format("exec %s %s < %s", shq(H.FAULTPROXY), PORT, shq(fifo))))
	local ctl = assert(io.open(fifo, "w"))
	local port = assert((out:read("l") or ""):match("^port (%d+)$"), "faultproxy: no port")
	local p = {url = "redis://127.0.0.1:" .. port .. "/0", fifo = fifo}
	function p.cmd(c)
		ctl:write(c, "\n")
		ctl:flush()
		local ans = out:read("l")
		assert(ans and ans:match("^ok"), "faultproxy: " .. tostring(ans))
	end
	-- c after seconds, from a background shell (this process may be blocked
	-- in a call by then); p.settle() reads its answer afterwards
	function p.later(seconds, c)
		os.execute(string.format("(sleep %s; printf '%%s\\n' %s > %s) &", seconds, shq(c), shq(fifo)))
	end
	function p.settle()
		local ans = out:read("l")
		assert(ans and ans:match("^ok"), "faultproxy: " .. tostring(ans))
	end
	function p.close() pcall(p.cmd, "quit"); ctl:close(); out:close() end
	return p
end

function H.wait(f, seconds)
	local t0 = os.time()
	while not f() do
		if os.time() - t0 > seconds then return false end
		os.execute("sleep 0.02")
	end
	return true
end

local tests = {}
function H.test(name, f) tests[#tests + 1] = {name = name, f = f} end
function H.run()
	print("1.." .. #tests)
	local failed = 0
	for i, t in ipairs(tests) do
		local ok, err = xpcall(t.f, debug.traceback)
		print((ok and "ok " or "not ok ") .. i .. " - " .. t.name)
		if not ok then
			failed = failed + 1
			for line in tostring(err):gmatch("[^\n]+") do print("# " .. line) end
		end
	end
	print(string.format("# %d passed, %d failed", #tests - failed, failed))
	os.exit(failed == 0 and 0 or 1)
end
return H
