-- TLS tests of the Lua binding (rediss://), against the TLS-only server
-- run-tests.sh starts (HILOCK_TEST_TLS_URL; certificates in
-- HILOCK_TEST_TLS_DIR: ca.crt, other-ca.crt, client.crt, client.key).
-- TAP on stdout and a final "N passed, N failed"; exits non-zero if any
-- test failed.
local hilock = require "hilock"

local URL = assert(os.getenv("HILOCK_TEST_TLS_URL"), "HILOCK_TEST_TLS_URL not set (use run-tests.sh)")
local PORT = assert(os.getenv("HILOCK_TEST_TLS_PORT"))
local DIR = assert(os.getenv("HILOCK_TEST_TLS_DIR"))
local CA = DIR .. "/ca.crt"

math.randomseed(os.time())
local RUN = tostring(os.time()) .. ":" .. tostring(math.random(1, 1e9))

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- redis-cli over TLS, with the client certificate.
local function redis(...)
	local cmd = "redis-cli --tls --cacert " .. shq(CA) .. " --cert " .. shq(DIR .. "/client.crt") ..
		" --key " .. shq(DIR .. "/client.key") .. " -h 127.0.0.1 -p " .. PORT
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

local function raises(pattern, f, ...)
	local ok, err = pcall(f, ...)
	if ok then error("expected an error matching '" .. pattern .. "'", 2) end
	if not tostring(err):match(pattern) then
		error("error '" .. tostring(err) .. "' does not match '" .. pattern .. "'", 2)
	end
end

-- nil, message holding each of the plain substrings, code
local function fails(code, want, v, msg, c)
	if v ~= nil then error("expected nil, message, code; got " .. tostring(v), 2) end
	if c ~= code then error("expected " .. code .. ", got " .. tostring(c) .. " (" .. tostring(msg) .. ")", 2) end
	for _, sub in ipairs(want) do
		if not msg:find(sub, 1, true) then error("message '" .. msg .. "' lacks '" .. sub .. "'", 2) end
	end
end

local tests = {}
local function test(name, f) tests[#tests + 1] = {name = name, f = f} end

test("tls: a lock over rediss://, contended by a second client", function()
	local a = assert(hilock.connect(URL, {tls_ca_file = CA, watchdog_timeout = 1}))
	local b = assert(hilock.connect(URL, {tls_ca_file = CA, tls_server_name = "localhost"}))
	local name = "hilock:lua:tls:" .. RUN
	local g = assert(a:lock(name):acquire{wait = 0})
	eq(redis("EXISTS", name), "1", "the key, seen over TLS by redis-cli")
	eq(b:lock(name):try_acquire(), false, "a held lock")
	os.execute("sleep 1.5") -- renewed past its 1 s lease
	eq(redis("EXISTS", name), "1", "renewed")
	assert(g:release())
	local g2 = assert(b:lock(name):try_acquire(), "free again")
	g2:release()
	a:close()
	b:close()
end)

test("tls: a client certificate", function()
	local c = assert(hilock.connect(URL, {tls_ca_file = CA, tls_cert_file = DIR .. "/client.crt",
		tls_key_file = DIR .. "/client.key", tls_verify = true}))
	local g = assert(c:lock("hilock:lua:tls:cert:" .. RUN):try_acquire())
	g:release()
	c:close()
end)

test("tls: a wrong CA fails with HL_ECONNECT and says why", function()
	fails("HL_ECONNECT", {"certificate verify failed", "tls_ca_file"},
		hilock.connect(URL, {tls_ca_file = DIR .. "/other-ca.crt", retry_attempts = 0}))
	-- tls_verify = false trusts anyone
	local c = assert(hilock.connect(URL, {tls_ca_file = DIR .. "/other-ca.crt", tls_verify = false}))
	c:close()
	-- another name than the certificate's
	fails("HL_ECONNECT", {"hostname mismatch", "other.example"},
		hilock.connect(URL, {tls_ca_file = CA, tls_server_name = "other.example"}))
	-- a plain client on the TLS port
	fails("HL_ECONNECT", {"expecting TLS"}, hilock.connect("redis://127.0.0.1:" .. PORT .. "/0"))
end)

test("tls: bad options", function()
	fails("HL_EINVAL", {"tls_ca_file", DIR .. "/missing.crt"},
		hilock.connect(URL, {tls_ca_file = DIR .. "/missing.crt"}))
	fails("HL_EINVAL", {"tls_key_file"}, hilock.connect(URL, {tls_cert_file = DIR .. "/client.crt"}))
	raises("tls_verify.*boolean expected", hilock.connect, URL, {tls_verify = 1})
	raises("tls_ca_file.*string expected", hilock.connect, URL, {tls_ca_file = 3})
	raises("tls_server_name.*NUL", hilock.connect, URL, {tls_server_name = "a\0b"})
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
print(string.format("# %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
