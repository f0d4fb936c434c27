-- A worker process for the lock-kind tests of test_hilock.lua.
--
--   lua5.4 kinds_worker.lua URL MODE NAME ARG...
--
-- MODE
--   contend KIND LOG ITERS TAG   take the lock of KIND ("fair", "write",
--        "read", "spin", "fenced", "nonreentrant", "fair-nonreentrant")
--        ITERS times; each time append "enter <R|W> TAG" and "leave <R|W>
--        TAG" to LOG around a short critical section. Exits non-zero on a
--        failure.
--   fair TAG LOG [FAIR_WAIT]     wait for the fair lock as long as it takes
--        (FAIR_WAIT: the client's fair_wait_timeout), append "got TAG" to
--        LOG, release.
--   spin                         say "waiting", wait for the spin lock (at
--        most 20 s, back-off 5 to 20 ms), say "got", release.
local hilock = require "hilock"

local url, mode, name = arg[1], arg[2], arg[3]

local function append(path, line)
	local f = assert(io.open(path, "a"))
	f:write(line, "\n")
	f:close()
end

local function make(c, kind)
	if kind == "fair" then return c:fair_lock(name) end
	if kind == "fair-nonreentrant" then return c:fair_lock(name, {reentrant = false}) end
	if kind == "nonreentrant" then return c:lock(name, {reentrant = false}) end
	if kind == "spin" then
		return c:spin_lock(name, {backoff = {initial = 0.001, max = 0.01, multiplier = 2}})
	end
	if kind == "fenced" then return c:fenced_lock(name) end
	if kind == "read" then return c:read_write_lock(name).read end
	if kind == "write" then return c:read_write_lock(name).write end
	error("unknown kind " .. tostring(kind))
end

if mode == "contend" then
	local kind, log, iters, tag = arg[4], arg[5], tonumber(arg[6]), arg[7]
	local c = assert(hilock.connect(url))
	local lock = make(c, kind)
	assert(lock:kind() == kind, lock:kind())
	local rw = kind == "read" and "R" or "W"
	for _ = 1, iters do
		local g, msg, code = lock:acquire{wait = 60}
		if not g then
			io.stderr:write("acquire: ", tostring(msg), " ", tostring(code), "\n")
			os.exit(3)
		end
		append(log, "enter " .. rw .. " " .. tag)
		local t = os.clock() + 0.002
		repeat until os.clock() >= t -- a short critical section
		append(log, "leave " .. rw .. " " .. tag)
		assert(g:release())
	end
	c:close()
elseif mode == "fair" then
	local tag, log, fair_wait = arg[4], arg[5], tonumber(arg[6])
	local c = assert(hilock.connect(url, {fair_wait_timeout = fair_wait}))
	local lock = c:fair_lock(name)
	local g = assert(lock:acquire())
	append(log, "got " .. tag)
	os.execute("sleep 0.02")
	assert(g:release())
	c:close()
elseif mode == "spin" then
	local c = assert(hilock.connect(url))
	local lock = c:spin_lock(name, {backoff = {initial = 0.005, max = 0.02, multiplier = 2}})
	io.write("waiting\n")
	io.stdout:flush()
	local g = assert(lock:acquire{wait = 20})
	io.write("got\n")
	io.stdout:flush()
	assert(g:release())
	c:close()
else
	error("unknown mode " .. tostring(mode))
end
