-- contend.lua: take a hilock lock over and over and bump a shared counter
-- under it (GET, then SET + 1: correct only if the lock excludes everyone
-- else, in this or any other process and language).
--
--   HILOCK_URL=redis://127.0.0.1:6379/0 lua5.4 contend.lua [lock] [counter-key] [iterations]
--
-- Defaults: lock "hilock:demo", counter "hilock:demo:counter", 20 iterations.
-- Needs `require "hilock"` to resolve (LUA_PATH/LUA_CPATH, see
-- bindings/lua/README.md) and redis-cli on PATH for the counter (the hilock
-- API has no raw Redis commands, on purpose).
local hilock = require "hilock"

local url = os.getenv("HILOCK_URL") or "redis://127.0.0.1:6379/0"
local name = arg[1] or "hilock:demo"
local key = arg[2] or "hilock:demo:counter"
local iterations = tonumber(arg[3] or "20")
if not iterations or iterations < 0 then
	io.stderr:write("usage: contend.lua [lock] [counter-key] [iterations]\n")
	os.exit(2)
end

local function pid()
	local f = io.open("/proc/self/stat")
	if f then
		local line = f:read("l")
		f:close()
		local n = line and line:match("^(%d+)")
		if n then return n end
	end
	local p = io.popen("echo $PPID")
	local n = p:read("l")
	p:close()
	return n or "?"
end

local function shell_quote(s)
	return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- redis-cli arguments for the same server and database as the lock.
local function cli_target(u)
	local path, query = u:match("^unix://[^/]*(/[^?]*)%??(.*)$")
	if path then
		local db = query:match("db=(%d+)") or "0"
		return "-s " .. shell_quote(path) .. " -n " .. db
	end
	return "--no-auth-warning -u " .. shell_quote(u)
end
local cli = "redis-cli " .. cli_target(url) .. " "

local function redis(...)
	local cmd = cli
	for i = 1, select("#", ...) do cmd = cmd .. " " .. shell_quote(tostring((select(i, ...)))) end
	local p = assert(io.popen(cmd .. " 2>&1"))
	local out = p:read("a")
	local ok = p:close()
	out = out:gsub("\n$", "")
	if not ok or out:match("^ERR") or out:match("^Could not connect") then
		error("redis-cli failed: " .. out, 2)
	end
	return out
end

local me = pid()
local client = assert(hilock.connect(url))
local lock = client:lock(name)

for _ = 1, iterations do
	local held <close> = assert(lock:acquire{wait = 60})
	local n = tonumber(redis("GET", key)) or 0
	n = n + 1
	assert(redis("SET", key, n) == "OK")
	print(string.format("[lua pid %s] holds %s, counter -> %d", me, name, n))
	io.stdout:flush()
	-- `held` goes out of scope here: the lock is released (also on error).
end

client:close()
