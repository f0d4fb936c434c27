--- hilock: Redisson-compatible distributed locks on Redis, for Lua.
--
--   local hilock = require "hilock"
--   local client = assert(hilock.connect("redis://127.0.0.1:6379/0", {watchdog_timeout = 30}))
--   local lock = client:lock("orders:42")
--   do
--     local held <close> = assert(lock:acquire())  -- released when the scope ends
--   end
--
-- Every Redisson lock kind has this same lock object: client:fair_lock(name),
-- client:read_write_lock(name).read / .write, client:spin_lock(name),
-- client:fenced_lock(name) (lock:token()) and client:lock(name,
-- {reentrant = false}). Redisson's synchronizers too: client:semaphore(name),
-- client:expirable_semaphore(name) and client:count_down_latch(name), whose
-- acquire returns a guard for `local permit <close> = assert(sem:acquire())`.
--
-- Conventions, as in Lua's io library:
--   * misuse (a closed client or lock, an argument of the wrong type or range)
--     raises an error;
--   * a runtime failure (Redis unreachable, lock not held...) returns
--     nil, message, code   where code is the C status name, e.g. "HL_EIO";
--   * contention (the wait ran out) returns false.
-- Times are seconds (any non-negative number; rounded up to milliseconds).
--
-- Ownership: every coroutine (the main one included) is its own lock owner,
-- as a thread is in Redisson. Two coroutines never both hold one lock; a
-- coroutine that holds a lock can take it again (the hold count grows). A
-- coroutine that is garbage-collected while it holds a lock stops being
-- renewed, so the lease runs out (it is not unlocked). Blocking calls
-- (acquire with a wait) block the whole Lua state, not just the coroutine.
--
-- Observability: client:stats() returns the client's counters; what the
-- library notices on its own threads (a lock lost, a renewal without an
-- answer, a reconnect, a failover) waits in the client until a callback
-- registered with client:on_event(fn) is run on the caller's own thread:
-- from client:dispatch_events(), and automatically at the start and at the
-- end of every call on the client, its locks and guards (see on_event). The
-- library never runs Lua code on its threads.
--
-- This file is the idiomatic layer over the SWIG-generated module
-- "hilock_core" (see hilock.i); it must stay loadable by Lua 5.1 to 5.4.

local core = require "hilock_core"
-- The lock's hot calls (see hilock.i), kept in locals: no method lookup per
-- call, and each one call where the methods took two or three.
local lock_acquire, lock_release, lock_give_back, lock_epoch, lock_closed =
	core.lock_acquire, core.lock_release, core.lock_give_back, core.lock_epoch,
	core.lock_closed

local type, error, pcall, select, setmetatable, tostring, pairs, next =
	type, error, pcall, select, setmetatable, tostring, pairs, next
-- The type checks of the hot path (lock:acquire(), guard:release()) ask for
-- the metatable itself: debug.getmetatable does not look for a __metatable
-- field, which costs getmetatable about as much again. The objects checked
-- have no such field, so both give the same answer.
local metatable_of = debug and debug.getmetatable or getmetatable
local format = string.format
local ceil, huge = math.ceil, math.huge
local tointeger = math.tointeger or function(x) return x end
local unpack = table.unpack or unpack
local pack = table.pack or function(...) return {n = select("#", ...), ...} end

local M = {}

M.version = core.version()
-- an integer (hilock.i pushes it as one; tointeger keeps 5.3+ sure of it)
M.version_number = tointeger(core.version_number()) or core.version_number()
M._VERSION = "hilock " .. M.version

--- Status codes by name: M.codes.HL_ETIMEDOUT == -3 (the third value of a
-- failure is the name, so `code == "HL_ENOTHELD"` is the usual test).
M.codes = {}
for v = 0, -100, -1 do
	local name = core.status_name(v)
	if name == "HL_UNKNOWN" then break end
	M.codes[name] = v
end

local MAX_NAME = 65536
local MAX_LEASE_MS = 2 ^ 40

-- Argument checking --------------------------------------------------------

local function argerror(n, fname, msg, level)
	error(format("bad argument #%d to '%s' (%s)", n, fname, msg), level + 1)
end

-- seconds -> integer milliseconds, rounded up. `forever` (if given) is what
-- nil and math.huge map to; otherwise they are errors.
local function to_ms(v, what, fname, level, forever)
	if v == nil or v == huge then
		if forever ~= nil then return forever end
	end
	if type(v) ~= "number" or v ~= v then
		error(format("bad option '%s' to '%s' (number of seconds expected, got %s)",
			what, fname, v ~= v and "nan" or type(v)), level + 1)
	end
	if v < 0 then
		error(format("bad option '%s' to '%s' (negative time %s)", what, fname,
			tostring(v)), level + 1)
	end
	local ms = ceil(v * 1000)
	if ms >= MAX_LEASE_MS then
		error(format("bad option '%s' to '%s' (%s s is too long)", what, fname,
			tostring(v)), level + 1)
	end
	return tointeger(ms) or ms
end

local function check_options(opts, known, fname, n, level)
	if opts == nil then return {} end
	if type(opts) ~= "table" then
		argerror(n, fname, "table of options expected, got " .. type(opts), level + 1)
	end
	for k in pairs(opts) do
		if not known[k] then
			error(format("bad argument #%d to '%s' (unknown option '%s')", n, fname,
				tostring(k)), level + 1)
		end
	end
	return opts
end

-- Owners: one per coroutine ------------------------------------------------

-- coroutine -> {id = owner id, armed = {[lock identity] = handle or set}}.
-- Weak keys (an ephemeron table in 5.2+): the record lives as long as its
-- coroutine. The library keeps the coroutine's holds (count, lost, epoch:
-- see hl_lock_hold_state). `armed` holds, strongly, every handle through
-- which the coroutine took the hold of a lock that the library still has,
-- so such a handle can only be collected together with its coroutine; its C
-- destructor then abandons the hold (see hilock.i). It is keyed by the
-- lock's identity (a lock object's _ident: one table per client, half of a
-- read-write lock and name, which the client's objects of that lock share),
-- so a release looks at the handles of its own lock only: the handle, or a
-- set {[handle] = true} when several lock objects took the hold (see arm).
local owners = setmetatable({}, {__mode = "k"})
local MAIN = {} -- key of the main coroutine in Lua 5.1 (running() is nil)

local running = coroutine.running

local function current_owner()
	local co = running() or MAIN
	local rec = owners[co]
	if rec == nil then
		rec = {id = core.owner_id_new(), armed = {}}
		owners[co] = rec
	end
	return rec, co
end

-- Client -------------------------------------------------------------------

local Client = {}
Client.__index = Client
Client.__name = "hilock.client"

local client_options = {
	watchdog_timeout = true, connect_timeout = true, command_timeout = true,
	retry_attempts = true, retry_delay = true, client_name = true,
	pool_size = true, subscription_timeout = true, ping_interval = true,
	tls_ca_file = true, tls_ca_dir = true, tls_cert_file = true, tls_key_file = true,
	tls_server_name = true, tls_verify = true,
	sentinel_username = true, sentinel_password = true, read_from = true,
	wait_replicas = true, wait_timeout = true, fair_wait_timeout = true,
}
-- String options passed as they are (after a type and NUL check that never
-- quotes the value: one is a password).
local string_options = {"tls_ca_file", "tls_ca_dir", "tls_cert_file", "tls_key_file",
	"tls_server_name", "sentinel_username", "sentinel_password"}
local read_from_values = {master = core.READ_MASTER, replica = core.READ_REPLICA,
	any = core.READ_ANY}

local function positive_int(v, what, fname, level)
	if v == nil then return nil end
	if type(v) ~= "number" or v ~= v or v < 0 or v ~= ceil(v) or v > 2 ^ 31 then
		error(format("bad option '%s' to '%s' (non-negative integer expected)",
			what, fname), level + 1)
	end
	return tointeger(v) or v
end

-- The URL with its password masked, as the C library quotes it: the user
-- info is what precedes the LAST '@' after the scheme (a password with an
-- unescaped '/' or '@' is masked too); "user:***@" keeps the user, a lone
-- token (a password) becomes "***@". The client keeps only this.
local function mask_url(url)
	local _, e = url:find("://", 1, true)
	local start = e and e + 1 or 1
	local at
	local i = start
	while true do
		local j = url:find("@", i, true)
		if not j then break end
		at, i = j, j + 1
	end
	if not at then return url end
	local colon = url:find(":", start, true)
	if colon and colon < at then
		return url:sub(1, colon) .. "***" .. url:sub(at)
	end
	return url:sub(1, start - 1) .. "***" .. url:sub(at)
end

--- hilock.connect(url [, opts]) --> client | nil, message, code
-- url picks the deployment: "redis://[[user]:password@]host[:port][/db]",
-- "rediss://..." (TLS) or "unix:///path[?db=N]" (one server);
-- "redis-sentinel://[[user]:password@]s1[:port][,s2...]/master-name[/db]"
-- (the hosts are the sentinels; failovers are followed);
-- "redis-cluster://[[user]:password@]node[:port][,node...]";
-- "redis-replica://[[user]:password@]master[:port][,replica...][/db]";
-- "rediss-sentinel://", "rediss-cluster://", "rediss-replica://" (TLS).
-- opts (all optional; times in seconds): watchdog_timeout, connect_timeout,
-- command_timeout, retry_attempts, retry_delay, client_name, pool_size,
-- subscription_timeout, ping_interval (0: never); for rediss: tls_ca_file,
-- tls_ca_dir, tls_cert_file, tls_key_file, tls_server_name (strings) and
-- tls_verify (boolean, default true); for Sentinel: sentinel_username,
-- sentinel_password (the sentinels' own credentials; the URL's are the data
-- nodes'); with replicas: read_from ("master" (default), "replica", "any":
-- where is_locked and ttl are read), wait_replicas (WAIT after each lock
-- change: -1 (default) all connected replicas, 0 never, n) and wait_timeout
-- (default 1); fair_wait_timeout (default 300): how long a waiter of a fair
-- lock stays queued in Redis past its turn before it counts as gone
-- (Redisson's fairLockWaitTimeout). No message ever shows a password.
function M.connect(url, opts)
	if type(url) ~= "string" then
		argerror(1, "connect", "string expected, got " .. type(url), 2)
	end
	if url:find("\0", 1, true) then
		argerror(1, "connect", "url contains a NUL byte", 2)
	end
	opts = check_options(opts, client_options, "connect", 2, 2)
	local o = {}
	local function ms(key)
		if opts[key] ~= nil then o[key .. "_ms"] = to_ms(opts[key], key, "connect", 3) end
	end
	ms("watchdog_timeout"); ms("connect_timeout"); ms("command_timeout")
	ms("retry_delay"); ms("subscription_timeout"); ms("ping_interval")
	for _, key in ipairs{"wait_timeout", "fair_wait_timeout"} do
		if opts[key] ~= nil then
			o[key .. "_ms"] = to_ms(opts[key], key, "connect", 2)
			if o[key .. "_ms"] == 0 then
				error(format("bad option '%s' to 'connect' (positive number of seconds expected)",
					key), 2)
			end
		end
	end
	if opts.read_from ~= nil then
		local v = read_from_values[opts.read_from]
		if v == nil then
			error(format("bad option 'read_from' to 'connect' ('master', 'replica' or 'any' " ..
				"expected, got %s)", type(opts.read_from) == "string"
					and format("%q", opts.read_from) or type(opts.read_from)), 2)
		end
		o.read_from = v
	end
	if opts.wait_replicas ~= nil then
		local v = opts.wait_replicas
		if type(v) ~= "number" or v ~= ceil(v) or v < -1 or v > 2 ^ 20 then
			error("bad option 'wait_replicas' to 'connect' (-1 (all), 0 (off) or a number " ..
				"of replicas expected)", 2)
		end
		o.wait_replicas = tointeger(v) or v
	end
	o.retry_attempts = positive_int(opts.retry_attempts, "retry_attempts", "connect", 2)
	o.pool_size = positive_int(opts.pool_size, "pool_size", "connect", 2)
	if opts.client_name ~= nil then
		if type(opts.client_name) ~= "string" then
			error("bad option 'client_name' to 'connect' (string expected)", 2)
		end
		if opts.client_name:find("\0", 1, true) then
			error("bad option 'client_name' to 'connect' (contains a NUL byte)", 2)
		end
		o.client_name = opts.client_name
	end
	for _, key in ipairs(string_options) do
		local v = opts[key]
		if v ~= nil then
			if type(v) ~= "string" then
				error(format("bad option '%s' to 'connect' (string expected)", key), 2)
			end
			if v:find("\0", 1, true) then
				error(format("bad option '%s' to 'connect' (contains a NUL byte)", key), 2)
			end
			o[key] = v
		end
	end
	if opts.tls_verify ~= nil then
		if type(opts.tls_verify) ~= "boolean" then
			error("bad option 'tls_verify' to 'connect' (boolean expected)", 2)
		end
		o.tls_verify = opts.tls_verify
	end
	local ok, c, code = core.client_new(url, o)
	if not ok then return nil, c, code end
	return setmetatable({_c = c, _closed = false, _url = mask_url(url),
		-- the event callback, false when none (a field that is there is
		-- read without a look into the metatable: the hot path reads it)
		_on_event = false, _dispatching = false,
		-- lock identities by half ("plain" for every kind but the read
		-- and write halves) and name (weak: one lives as long as a lock
		-- object or an owner's armed handles refer to it; see owners)
		_idents = {plain = setmetatable({}, {__mode = "v"}),
			read = setmetatable({}, {__mode = "v"}), write = setmetatable({}, {__mode = "v"})},
		-- the tasks started and not yet taken, by their key (weak: a task
		-- nobody keeps is freed, and so cancelled)
		_tasks = setmetatable({}, {__mode = "v"}), _task_seq = 0}, Client)
end

-- Events ---------------------------------------------------------------------

-- Take the queued events and run the callback on each, oldest first; the
-- number run. protect: a callback error is written to io.stderr instead of
-- raised (automatic dispatch: a lock call never fails because of it). Not
-- reentrant: a callback that calls hilock dispatches nothing more.
local function dispatch(self, protect)
	local fn = self._on_event
	if not fn or self._dispatching then return 0 end
	self._dispatching = true
	local n = 0
	while true do
		local ok, ev = self._c:next_event()
		if not ok or ev == nil then break end
		n = n + 1
		local cok, err = pcall(fn, ev)
		if not cok then
			if not protect then
				self._dispatching = false
				error(err, 0)
			end
			io.stderr:write("hilock: event callback failed: ", tostring(err), "\n")
		end
	end
	self._dispatching = false
	return n
end

-- At the start and the end of calls: only when a callback is registered.
local function auto_dispatch(client)
	if client._on_event then dispatch(client, true) end
end

local function check_client(self, fname, level)
	if getmetatable(self) ~= Client then
		error(format("bad self to '%s' (hilock client expected)", fname), level + 1)
	end
	if self._closed then error("attempt to use a closed hilock client", level + 1) end
	auto_dispatch(self)
end

--- client:close() --> true. Wakes blocked calls, stops renewing this client's
-- locks (their leases then run out; nothing is unlocked). Idempotent; also
-- the __close metamethod (`local client <close> = ...`).
function Client:close()
	if getmetatable(self) ~= Client then
		error("bad self to 'close' (hilock client expected)", 2)
	end
	if not self._closed then
		self._closed = true
		self._c:close()
		auto_dispatch(self) -- what was queued before the close
	end
	return true
end
Client.__close = Client.close

--- client:closed() --> boolean
function Client:closed()
	return self._closed == true
end

--- client:id() --> the client's UUID, the first part of its owner strings.
function Client:id()
	check_client(self, "id", 2)
	return self._c:id()
end

--- client:interrupt() --> true | nil, message, code. Wakes every call of this
-- client blocked right now (from a signal handler of a host program, say).
function Client:interrupt()
	check_client(self, "interrupt", 2)
	return self._c:interrupt()
end

--- client:stats() --> table of the client's counters since it was made:
-- acquisitions (acquires that got the lock, re-entries too), acquire_waits
-- (acquires that found it taken and waited, got it or not), wait_time (the
-- seconds those waits took), releases, renewals (confirmed by Redis),
-- renewal_failures (no answer; each retry counts), losses (holds found
-- lost), reconnects (connections made again after one broke), failovers
-- (new masters followed), events_dropped (the queue of 1024 was full),
-- waiting (a gauge: the client's waits waiting now, found taken with their
-- subscription active or queued behind this client's own waiters),
-- wakeups_read_by_waiter (wake-ups a blocked waiter read from the subscriber
-- connection itself, with no hop through the subscriber thread).
-- Also after close (the final counts). No round trip.
function Client:stats()
	if getmetatable(self) ~= Client then
		error("bad self to 'stats' (hilock client expected)", 2)
	end
	local ok, t, code = self._c:stats()
	if not ok then return nil, t, code end
	t.wait_time = t.wait_time_ms / 1000
	t.wait_time_ms = nil
	return t
end

--- client:on_event(fn) --> true. fn(event) is run for each event of this
-- client, on the caller's thread (and coroutine), never on a library
-- thread: by client:dispatch_events(), and automatically at the start and
-- at the end of every method of the client and of its locks, guards and of
-- multilocks over them (acquire, try_acquire, unlock, the queries,
-- wait_lost, with, close...),
-- and by client:close() for the events queued before it. An error in fn
-- during an automatic run is written to io.stderr (the call goes on); fn
-- must not yield. A callback that calls hilock runs no nested dispatch.
-- event: {type = "lost" | "renewal_failed" | "reconnect" | "failover" |
-- "fencing_off" (the server refused CLIENT KILL: see the README) | "undo"
-- (an acquire nobody got is taken back in the background: status
-- "HL_EINDOUBT", then "HL_OK" or "HL_ETIMEDOUT"),
-- time = seconds since the epoch, monotonic = seconds, name = the lock's
-- name (nil for an event about no lock), owner = the hold's owner string,
-- node = "host:port" (nil when none), status = "HL_ELOST" | "HL_EIO" |
-- "HL_OK" | "HL_EREDIS", message = a sentence for a log}. Never a password. nil removes
-- the callback (events then wait in the client: the newest 1024 are kept).
function Client:on_event(fn)
	check_client(self, "on_event", 2)
	if fn ~= nil and type(fn) ~= "function" then
		argerror(1, "on_event", "function or nil expected, got " .. type(fn), 2)
	end
	self._on_event = fn or false
	return true
end

--- client:dispatch_events() --> the number of events run. Runs the
-- on_event callback on every queued event (none without a callback); an
-- error in the callback is raised (the events after it stay queued). Also
-- after close, for what was queued before it.
function Client:dispatch_events()
	if getmetatable(self) ~= Client then
		error("bad self to 'dispatch_events' (hilock client expected)", 2)
	end
	return dispatch(self, false)
end

--- client:next_event() --> the oldest queued event (a table, see on_event),
-- or nil when none is queued (or the client is closed and all were taken).
-- For programs that take the events themselves instead of a callback.
function Client:next_event()
	if getmetatable(self) ~= Client then
		error("bad self to 'next_event' (hilock client expected)", 2)
	end
	local ok, ev = self._c:next_event()
	if not ok then return nil end
	return ev
end

--- client:event_fd() --> a file descriptor (integer) readable while events
-- are queued, for an event loop (then call dispatch_events or next_event)
-- | nil, message, code. Owned by the client: do not read or close it.
function Client:event_fd()
	check_client(self, "event_fd", 2)
	local ok, fd, code = self._c:event_fd()
	if not ok then return nil, fd, code end
	return fd
end

--- client:task_fd() --> fd | nil, message, code. A file descriptor that is
-- readable while tasks of this client (see lock:try_acquire_start) have
-- completed and wait to be taken with client:next_task(): watch it with
-- your event loop (or hilock.poll). Owned by the library: do not read or
-- close it. The same number for the client's whole life (until it is
-- collected).
function Client:task_fd()
	if getmetatable(self) ~= Client then
		error("bad self to 'task_fd' (hilock client expected)", 2)
	end
	local ok, fd, code = self._c:task_fd()
	if not ok then return nil, fd, code end
	return fd
end

--- client:next_task() --> task | nil. The next task of this client that
-- completed (in the order they did), each handed out once; nil when none
-- is waiting. Then task:result() gives its outcome. Both work after
-- client:close() too, which ends the pending tasks (HL_ECLOSED), so an event
-- loop can take them.
function Client:next_task()
	if getmetatable(self) ~= Client then
		error("bad self to 'next_task' (hilock client expected)", 2)
	end
	while true do
		local ok, id = self._c:next_task()
		if not ok or id == 0 then return nil end
		local task = self._tasks[id]
		self._tasks[id] = nil
		-- a task already collected (so freed) is skipped
		if task then return task end
	end
end

function Client:__tostring()
	-- _url has no password ("redis://user:***@host")
	return format("hilock.client (%s%s)", self._url, self._closed and ", closed" or "")
end

-- Lock ---------------------------------------------------------------------

local Lock = {}
Lock.__index = Lock
Lock.__name = "hilock.lock"

-- A lock's guard (see issue) keeps its fields in the array part, which a
-- table constructor fills without hashing a key (it is made for every
-- acquire): g[1] the lock object, g[2] the handle it was taken through,
-- g[3] the owner record, g[4] the object's list it is in, g[5] the epoch of
-- its hold, g[6] done (released, or given back by lock:close()).
local Guard = {}
Guard.__index = Guard
Guard.__name = "hilock.guard"

-- A new lock object of the given kind (core.LOCK_*); backoff: a spin lock's
-- {initial_ms, max_ms, multiplier} or nil.
local function new_lock(client, fname, name, kind, backoff)
	check_client(client, fname, 3)
	if type(name) ~= "string" then
		argerror(1, fname, "string expected, got " .. type(name), 3)
	end
	if #name == 0 or #name > MAX_NAME then
		argerror(1, fname, "name must be 1 to 65536 bytes", 3)
	end
	-- holds of the read half, the write half and every other kind are
	-- distinct (as the library keys them)
	local class = kind == core.LOCK_READ and "read" or kind == core.LOCK_WRITE and "write"
		or "plain"
	local idents = client._idents[class]
	local ident = idents[name]
	if ident == nil then
		ident = {}
		idents[name] = ident
	end
	return setmetatable({
		_client = client,
		_name = name,
		_kind = kind,
		-- the lock's identity, shared with the client's other objects of
		-- this lock (see owners)
		_ident = ident,
		_backoff = backoff,
		-- coroutine -> this object's handle for that coroutine's owner
		_handles = setmetatable({}, {__mode = "k"}),
		-- owner record -> the guards this object issued to it, not yet
		-- released (see issue)
		_guards = setmetatable({}, {__mode = "k"}),
		-- tasks started through it (lock:close() ends them first)
		_tasks = setmetatable({}, {__mode = "k"}),
		_closed = false,
	}, Lock)
end

local reentrant_options = {reentrant = true}

local function reentrant_opt(opts, fname)
	opts = check_options(opts, reentrant_options, fname, 2, 3)
	if opts.reentrant ~= nil and type(opts.reentrant) ~= "boolean" then
		error(format("bad option 'reentrant' to '%s' (boolean expected)", fname), 3)
	end
	return opts.reentrant ~= false
end

--- client:lock(name [, opts]) --> lock. A reentrant lock (Redisson's RLock).
-- name: a string of 1 to 65536 bytes (any bytes, NUL included). Cheap,
-- touches no server. opts: {reentrant = false} for a non-reentrant lock
-- (Redisson's getNonReentrantLock): the owner acquiring it again gets
-- nil, message, "HL_EDEADLK" instead of a second hold.
function Client:lock(name, opts)
	local kind = reentrant_opt(opts, "lock") and core.LOCK_REENTRANT or core.LOCK_NONREENTRANT
	return new_lock(self, "lock", name, kind)
end

--- client:fair_lock(name [, opts]) --> lock. A fair lock (Redisson's
-- RFairLock): waiters get it in the order they asked, across processes,
-- through a queue in Redis; even a try_acquire never jumps the queue. A
-- waiter that dies leaves the queue fair_wait_timeout (a connect option)
-- after its turn came. The queue's deadlines are wall-clock times: keep
-- the clocks in step. opts: {reentrant = false} as for client:lock.
function Client:fair_lock(name, opts)
	local kind = reentrant_opt(opts, "fair_lock") and core.LOCK_FAIR or core.LOCK_FAIR_NONREENTRANT
	return new_lock(self, "fair_lock", name, kind)
end

local spin_options = {backoff = true}
local backoff_options = {initial = true, max = true, multiplier = true}

--- client:spin_lock(name [, opts]) --> lock. A spin lock (Redisson's
-- RSpinLock): the reentrant lock's keys, but waiters try again after an
-- exponential back-off instead of waiting for a pub/sub message.
-- opts: {backoff = {initial = seconds, max = seconds, multiplier = n}}
-- (default Redisson's: 0.001, doubling up to 0.128).
function Client:spin_lock(name, opts)
	opts = check_options(opts, spin_options, "spin_lock", 2, 2)
	local backoff
	if opts.backoff ~= nil then
		local b = opts.backoff
		if type(b) ~= "table" then
			error("bad option 'backoff' to 'spin_lock' (table expected, got " .. type(b) .. ")", 2)
		end
		check_options(b, backoff_options, "spin_lock", 2, 2)
		local initial = to_ms(b.initial or 0.001, "backoff.initial", "spin_lock", 2)
		local max = to_ms(b.max or 0.128, "backoff.max", "spin_lock", 2)
		local mult = b.multiplier or 2
		if initial < 1 or max < initial then
			error("bad option 'backoff' to 'spin_lock' (0 < initial <= max expected)", 2)
		end
		if type(mult) ~= "number" or mult ~= ceil(mult) or mult < 1 or mult > 1000 then
			error("bad option 'backoff.multiplier' to 'spin_lock' (integer 1 to 1000 expected)", 2)
		end
		backoff = {initial, max, tointeger(mult) or mult}
	end
	return new_lock(self, "spin_lock", name, core.LOCK_SPIN, backoff)
end

--- client:fenced_lock(name) --> lock. A fenced lock (Redisson's
-- RFencedLock): reentrant, and every acquisition takes the next number of a
-- counter in Redis, read with lock:token(). Pass the token to the resource
-- the lock guards, which refuses a token older than one it has seen.
function Client:fenced_lock(name)
	return new_lock(self, "fenced_lock", name, core.LOCK_FENCED)
end

local RWLock = {}
RWLock.__index = RWLock
RWLock.__name = "hilock.rwlock"

--- client:read_write_lock(name) --> rw. A read-write lock (Redisson's
-- RReadWriteLock): rw.read, a lock any number of coroutines and processes
-- hold together while nobody writes, and rw.write, a lock one owner holds
-- while nobody else reads. Both are reentrant; the writer may also read
-- (and keeps reading after it stops writing); a reader asking for the
-- write lock gets nil, message, "HL_EDEADLK" (it would wait for itself),
-- and releasing a half not held "HL_ENOTHELD".
function Client:read_write_lock(name)
	return setmetatable({
		read = new_lock(self, "read_write_lock", name, core.LOCK_READ),
		write = new_lock(self, "read_write_lock", name, core.LOCK_WRITE),
	}, RWLock)
end

--- rw:name() --> the lock's name
function RWLock:name() return self.read._name end

--- rw:close() --> true | nil, message, code. Closes both halves (see
-- lock:close()); also the __close metamethod.
function RWLock:close()
	local ok, msg, code = self.write:close()
	local rok, rmsg, rcode = self.read:close()
	if not ok then return nil, msg, code end
	if not rok then return nil, rmsg, rcode end
	return true
end

function RWLock:__close(err)
	local ok, msg, code = self:close()
	if not ok and err == nil then
		error(format("hilock: closing lock %q failed: %s (%s)", self.read._name,
			tostring(msg), tostring(code)), 2)
	end
end

function RWLock:__tostring()
	return format("hilock.rwlock (%q)", self.read._name)
end

local function check_lock(self, fname, level)
	if metatable_of(self) ~= Lock then
		error(format("bad self to '%s' (hilock lock expected)", fname), level + 1)
	end
	if self._closed then error("attempt to use a closed hilock lock", level + 1) end
	if self._client._closed then error("attempt to use a closed hilock client", level + 1) end
	auto_dispatch(self._client)
end

-- The current coroutine's handle: handle, owner record | nil, message, code.
local function handle(self)
	local rec, co = current_owner()
	local h = self._handles[co]
	if h == nil then
		local ok, hh, code = core.lock_new(self._client._c, self._kind, self._name, rec.id)
		if not ok then return nil, hh, code end
		local b = self._backoff
		if b then
			local bok, msg, bcode = hh:set_backoff(b[1], b[2], b[3])
			if not bok then
				hh:close()
				return nil, msg, bcode
			end
		end
		h = hh
		self._handles[co] = h
	end
	return h, rec
end

-- armed[ident] (see owners) of the one handle left in set a, or of none.
local function unset(armed, ident, a)
	local only = next(a)
	if only == nil then
		armed[ident] = nil
	elseif next(a, only) == nil then
		armed[ident] = only
	end
end

-- Handle h took a hold of the lock of identity ident, armed holds the
-- handles of the owner: h joins them. a: armed[ident], not nil and not h.
local function arm(armed, ident, h, a)
	if type(a) == "table" then
		a[h] = true
	else
		armed[ident] = {[a] = true, [h] = true}
	end
end

-- h leaves the owner's armed handles (lock:close()).
local function disarm(armed, ident, h)
	local a = armed[ident]
	if a == h then
		armed[ident] = nil
	elseif type(a) == "table" then
		a[h] = nil
		unset(armed, ident, a)
	end
end

-- After a release through handle h of owner rec: its handles for the same
-- lock (the same half of a read-write lock) whose hold the library no
-- longer has are let go (see owners). epoch: the hold's now, when the
-- caller has it (-1: the library could not say; 0: no hold left, so none
-- is any handle's).
local function settle(self, h, rec, epoch)
	if epoch == nil then
		local ok
		ok, _, _, epoch = h:hold_state()
		if not ok then return end
	elseif epoch < 0 then
		return
	end
	local armed, ident = rec.armed, self._ident
	local a = armed[ident]
	if a == nil then return end
	if a == h or type(a) ~= "table" then
		if epoch == 0 or lock_epoch(a) ~= epoch then armed[ident] = nil end
		return
	end
	for hh in pairs(a) do
		if epoch == 0 or lock_epoch(hh) ~= epoch then a[hh] = nil end
	end
	unset(armed, ident, a)
end

-- A guard stands for one hold that its lock object took for an owner, in
-- the library's hold of that moment (its epoch): once that hold has ended
-- (released to zero, lost and released, or its lease ran out), the guard
-- has nothing left to give back, and it never gives back a newer hold. The
-- library counts the holds; what it cannot say is which object took which.
-- So each object lists, per owner, the guards it issued and that are not
-- released yet (of the current hold only, at most as many as it has), for
-- lock:close().
local function issue(self, h, rec, epoch, count)
	local ok = true
	if epoch == nil then
		epoch = h:epoch()
		ok, count = h:hold_state()
	elseif count < 0 then
		ok = false -- the library could not say (see hilock.i)
	end
	local list = self._guards[rec]
	local n = 0
	if list == nil then
		list = {}
		self._guards[rec] = list
	elseif list[1] ~= nil then
		if list[1][5] ~= epoch then
			list = {}
			self._guards[rec] = list
		else
			n = #list
			while ok and n > 0 and n >= count do
				table.remove(list, 1)
				n = n - 1
			end
		end
	end
	local g = setmetatable({self, h, rec, list, epoch, false}, Guard)
	list[n + 1] = g
	local armed, ident = rec.armed, self._ident
	local a = armed[ident]
	if a == nil then
		armed[ident] = h
	elseif a ~= h then
		arm(armed, ident, h, a)
	end
	return g
end

-- A release through the object (lock:unlock(), a release task) gives back
-- the newest guard it issued to the owner. epoch: as settle's.
local function unlocked(self, h, rec, ok, epoch)
	local list = self._guards[rec]
	if ok and list then list[#list] = nil end
	settle(self, h, rec, epoch)
end

-- lock:close()'s mark for give_back: it gives back the guards of an object
-- that is closed already.
local CLOSING = {}

-- Give back the hold guard g stands for (once): true | nil, message, code.
-- This is guard:release() itself (one call less on the hot path), with its
-- checks; lock:close() passes CLOSING, which skips them.
local function give_back(g, closing)
	if closing ~= CLOSING then
		if metatable_of(g) ~= Guard then
			error("bad self to 'release' (hilock guard expected)", 2)
		end
		if g[6] then return true end
		local lock = g[1]
		if lock._closed or lock._client._closed then
			g[6] = true
			return true -- lock:close() released it, or the client is gone
		end
	end
	g[6] = true
	local list = g[4]
	local n = #list
	if list[n] == g then
		list[n] = nil
	else
		for i = n - 1, 1, -1 do
			if list[i] == g then
				table.remove(list, i)
				break
			end
		end
	end
	local lock, h, rec = g[1], g[2], g[3]
	-- released only if the owner's hold is still the guard's
	local ok, now_free, epoch, ended = lock_give_back(h, g[5])
	if not ok then
		-- lock:close() freed the handle (it gave back its guards first)
		if lock_closed(h) then return true end
		-- now_free, epoch: the message and the code
		settle(lock, h, rec)
		auto_dispatch(lock._client)
		return nil, now_free, epoch
	end
	-- settle(lock, h, rec, epoch), inline when the hold is over and h was
	-- the only handle armed for it
	local armed, ident = rec.armed, lock._ident
	if epoch == 0 and armed[ident] == h then
		armed[ident] = nil
	else
		settle(lock, h, rec, epoch)
	end
	local client = lock._client
	if client._on_event then dispatch(client, true) end -- auto_dispatch
	if ended then
		return nil, format("%q is not held: the hold this guard stood for has ended",
			lock._name), "HL_ENOTHELD"
	end
	return true
end

local acquire_options = {wait = true, timeout = true, lease = true}

-- opts.wait, or opts.timeout: the same wait under Python's name (see
-- docs/consistency.md); both at once is an error.
local function wait_option(opts, fname, level)
	local t = opts.timeout
	if t ~= nil then
		if opts.wait ~= nil then
			error(format("bad argument #1 to '%s' (both 'wait' and 'timeout': they are the " ..
				"same option)", fname), level + 1)
		end
		return t
	end
	return opts.wait
end

-- The wait and the lease of an acquire's options table, checked (fname
-- names the call in messages; level as to_ms's): milliseconds, -1 for as
-- long as it takes and for the watchdog.
local function acquire_times(opts, fname, level)
	opts = check_options(opts, acquire_options, fname, 1, level + 1)
	local wait_ms = to_ms(wait_option(opts, fname, level + 1), "wait", fname, level + 1, -1)
	local lease_ms = to_ms(opts.lease, "lease", fname, level + 1, -1)
	if lease_ms == 0 then
		error(format("bad option 'lease' to '%s' (lease must be positive)", fname),
			level + 1)
	end
	return wait_ms, lease_ms
end

--- lock:acquire([opts]) --> guard | false | nil, message, code
-- opts: {wait = seconds, lease = seconds}, or a number (the wait).
--   wait (or timeout, its other name): nil or math.huge waits as long as
--   it takes; 0 tries once.
-- false: the wait ran out with the lock held by someone else. A wait
-- during which Redis never answered is an error (nil, message,
-- "HL_ECONNECT"), not false: an outage is not contention.
--   lease: nil lets the watchdog keep the lock while it is held; a number
--   makes Redis free the lock after that long.
-- The guard releases this hold once: guard:release(), or its __close when a
-- `local g <close>` goes out of scope (also on error).
function Lock:acquire(opts)
	-- check_lock(self, "acquire", 2), inline
	if metatable_of(self) ~= Lock then
		error("bad self to 'acquire' (hilock lock expected)", 2)
	end
	local client = self._client
	if self._closed then error("attempt to use a closed hilock lock", 2) end
	if client._closed then error("attempt to use a closed hilock client", 2) end
	if client._on_event then dispatch(client, true) end -- auto_dispatch
	-- no options: wait as long as it takes, the watchdog
	local wait_ms, lease_ms = -1, -1
	if opts ~= nil then
		if type(opts) == "number" then opts = {wait = opts} end
		wait_ms, lease_ms = acquire_times(opts, "acquire", 2)
	end
	-- handle(self), inline when the coroutine has one (it has an owner
	-- record then)
	local co = running() or MAIN
	local h, rec = self._handles[co], owners[co]
	if h == nil then
		local code
		h, rec, code = handle(self)
		if not h then return nil, rec, code end
	end
	local ok, acquired, epoch, count = lock_acquire(h, wait_ms, lease_ms)
	if client._on_event then dispatch(client, true) end -- auto_dispatch
	if not ok then return nil, acquired, epoch end
	if not acquired then return false end
	return issue(self, h, rec, epoch, count)
end
Lock.lock = Lock.acquire

--- lock:try_acquire([opts]) --> like acquire, but wait defaults to 0.
function Lock:try_acquire(opts)
	check_lock(self, "try_acquire", 2)
	if opts == nil or type(opts) == "number" then
		return self:acquire({wait = opts or 0})
	end
	if type(opts) == "table" and opts.wait == nil and opts.timeout == nil then
		local o = {}
		for k, v in pairs(opts) do o[k] = v end
		o.wait = 0
		opts = o
	end
	return self:acquire(opts)
end

--- lock:unlock() --> true | nil, message, code
-- Releases one hold of the current coroutine ("HL_ENOTHELD" if it holds
-- none, "HL_ELOST" if the watchdog had found the hold lost).
function Lock:unlock()
	check_lock(self, "unlock", 2)
	local h, rec, code = handle(self)
	if not h then return nil, rec, code end
	local ok, now_free, epoch = lock_release(h)
	-- (failed: now_free, epoch are the message and the code)
	unlocked(self, h, rec, ok, ok and epoch or nil)
	auto_dispatch(self._client)
	if not ok then return nil, now_free, epoch end
	return true
end
Lock.release = Lock.unlock

local function query(self, fname, method, ...)
	check_lock(self, fname, 3)
	local h, msg, code = handle(self)
	if not h then return nil, msg, code end
	local ok, v, code2 = h[method](h, ...)
	auto_dispatch(self._client)
	if not ok then return nil, v, code2 end
	return v
end

--- lock:locked() --> true if anyone holds it | nil, message, code
function Lock:locked() return query(self, "locked", "is_locked") end
--- lock:held() --> true if the current coroutine holds it
function Lock:held() return query(self, "held", "is_held") end
--- lock:hold_count() --> the current coroutine's hold count (0 if none)
function Lock:hold_count() return query(self, "hold_count", "hold_count") end
--- lock:lost() --> true if the watchdog found the current coroutine's hold
-- lost (the key vanished, another owner took it, Redis unreachable for a
-- whole lease), or its fixed lease ended while it was held. Local, no round
-- trip. Cleared by the next acquire/release.
function Lock:lost() return query(self, "lost", "is_lost") end

--- lock:ttl() --> seconds the lock has left (a float); math.huge if it
-- has no expiry; false if it is free | nil, message, code
-- (Python's None and math.inf; nil would read as an error here. These
-- were -2 and -1 before: see docs/MIGRATING.md.)
function Lock:ttl()
	local v, msg, code = query(self, "ttl", "ttl")
	if v == nil then return nil, msg, code end
	if v == -2 then return false end
	if v < 0 then return huge end
	return v / 1000
end

--- lock:force_unlock() --> true if it was locked, false if it was free |
-- nil, message, code. Deletes the lock whoever holds it.
function Lock:force_unlock() return query(self, "force_unlock", "force_unlock") end

--- lock:wait_lost([timeout]) --> true when the current coroutine's hold is
-- found lost, false when timeout seconds (nil: forever) ran out or nothing
-- is held | nil, message, code. Blocks the Lua state.
function Lock:wait_lost(timeout)
	check_lock(self, "wait_lost", 2)
	local ms = to_ms(timeout, "timeout", "wait_lost", 2, -1)
	return query(self, "wait_lost", "wait_lost", ms)
end

--- lock:owner() --> the owner string the current coroutine writes
-- ("<client uuid>:<owner id>", the hash field in Redis).
function Lock:owner() return query(self, "owner", "owner") end

--- lock:name() --> the lock's name
function Lock:name()
	return self._name
end

--- lock:kind() --> the lock's kind: "reentrant", "nonreentrant", "fair",
-- "fair-nonreentrant", "read", "write", "spin" or "fenced".
function Lock:kind()
	return core.lock_kind_name(self._kind)
end

-- A kind's own call on a lock of another kind is misuse: raise, saying
-- whose call it is.
local function check_kind(self, fname, kind, maker)
	check_lock(self, fname, 3)
	if self._kind ~= kind then
		error(format("hilock: %s is a call of %s locks (client:%s); %q is a %s lock", fname,
			core.lock_kind_name(kind), maker, self._name, self:kind()), 3)
	end
end

--- lock:token() --> the token of the current coroutine's hold (its last
-- acquisition) | nil, message, code ("HL_ENOTHELD" without a hold,
-- "HL_ELOST" when the hold was lost). Fenced locks only. Local: no round
-- trip.
function Lock:token()
	check_kind(self, "token", core.LOCK_FENCED, "fenced_lock")
	return query(self, "token", "token")
end

--- lock:last_token() --> the last token given out for the name by anyone, 0
-- if none yet | nil, message, code. Fenced locks only. One round trip.
function Lock:last_token()
	check_kind(self, "last_token", core.LOCK_FENCED, "fenced_lock")
	return query(self, "last_token", "last_token")
end

--- lock:with([opts,] f, ...) --> the results of f(...)
-- Acquires (opts as for acquire; by default waiting as long as it takes),
-- calls f(...), releases, returns what f returned. If f raises, the lock is
-- released and the error is re-raised unchanged. Raises too when the lock
-- cannot be acquired (timed out or failed) or the release fails after f
-- succeeded (for example "HL_ELOST").
-- with(): acquire (opts, or as long as it takes), call f, release. label
-- names the object in messages ("lock \"x\"").
local function run_with(self, label, a, ...)
	local opts, res, guard, msg, code
	if type(a) == "function" then
		guard, msg, code = self:acquire()
		if guard then res = pack(pcall(a, ...)) end
	else
		opts = a
		local f = ...
		if type(f) ~= "function" then
			argerror(2, "with", "function expected, got " .. type(f), 3)
		end
		guard, msg, code = self:acquire(opts)
		if guard then res = pack(pcall(f, select(2, ...))) end
	end
	if guard == false then
		error(format("hilock: timed out waiting for %s", label), 3)
	elseif not guard then
		error(format("hilock: cannot acquire %s: %s (%s)", label,
			tostring(msg), tostring(code)), 3)
	end
	local rok, rmsg, rcode = guard:release()
	if not res[1] then error(res[2], 0) end
	if not rok then
		error(format("hilock: releasing %s failed: %s (%s)", label,
			tostring(rmsg), tostring(rcode)), 3)
	end
	return unpack(res, 2, res.n)
end

function Lock:with(...)
	check_lock(self, "with", 2)
	return run_with(self, format("lock %q", self._name), ...)
end

-- Tasks: operations that do not block -------------------------------------

local Task = {}
Task.__index = Task
Task.__name = "hilock.task"

local function new_task(self, fname, what, starter)
	local h, rec, code = handle(self)
	if not h then return nil, rec, code end
	local client = self._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, code2 = starter(h, id)
	if not ok then return nil, k, code2 end
	local task = setmetatable({_k = k, _lock = self, _h = h, _rec = rec, _what = what,
		_client = client}, Task)
	client._tasks[id] = task
	self._tasks[task] = true
	return task
end

--- lock:try_acquire_start([wait [, lease]]) --> task | nil, message, code
-- Starts an acquire and returns at once: the wait is a record in the
-- client, not a blocked Lua state, so an event loop can wait for many (on
-- task:fd() or client:task_fd()) and go on with other work meanwhile.
-- wait, lease: seconds as for acquire (wait nil or math.huge: as long as
-- it takes; 0: one attempt; lease nil: the watchdog); or one table
-- {wait = ..., lease = ...}. The owner is the coroutine that calls it.
-- task:result() then gives what acquire would have returned.
function Lock:try_acquire_start(wait, lease)
	check_lock(self, "try_acquire_start", 2)
	local opts = wait
	if type(wait) ~= "table" then opts = {wait = wait, lease = lease} end
	local wait_ms, lease_ms = acquire_times(opts, "try_acquire_start", 2)
	return new_task(self, "try_acquire_start", "acquire", function(h, id)
		return h:try_acquire_start(wait_ms, lease_ms, id)
	end)
end

--- lock:release_start() --> task | nil, message, code. Starts releasing one
-- hold of the current coroutine (the round trip runs on the client's own
-- threads); task:result() then gives what unlock would have returned.
function Lock:release_start()
	check_lock(self, "release_start", 2)
	return new_task(self, "release_start", "release", function(h, id)
		return h:release_start(id)
	end)
end

--- lock:wait_lost_start([timeout]) --> task | nil, message, code. Starts
-- waiting for the current coroutine's hold to be found lost; task:result()
-- then gives what wait_lost would have returned.
function Lock:wait_lost_start(timeout)
	check_lock(self, "wait_lost_start", 2)
	local ms = to_ms(timeout, "timeout", "wait_lost_start", 2, -1)
	return new_task(self, "wait_lost_start", "lost", function(h, id)
		return h:wait_lost_start(ms, id)
	end)
end

local function check_task(self, fname, level)
	if getmetatable(self) ~= Task then
		error(format("bad self to '%s' (hilock task expected)", fname), level + 1)
	end
	if self._k:closed() then error("attempt to use a closed hilock task", level + 1) end
end

--- task:fd() --> fd | nil, message, code. The task's own file descriptor,
-- readable once it is done. Owned by the task: do not read or close it.
function Task:fd()
	check_task(self, "fd", 2)
	local ok, fd, code = self._k:fd()
	if not ok then return nil, fd, code end
	return fd
end

--- task:done() --> true once the task has completed (its result is ready).
function Task:done()
	check_task(self, "done", 2)
	return self._k:done()
end

--- task:result() --> what the blocking call would have returned:
--   try_acquire_start: guard | false | nil, message, code (as acquire)
--   release_start:     true | nil, message, code (as unlock)
--   wait_lost_start:   true | false | nil, message, code (as wait_lost)
--   semaphore:acquire_start: guard | false | nil, message, code
--   expirable_semaphore:acquire_start: guard, ids | false | nil, message, code
--   count_down_latch:wait_start: true | false | nil, message, code
--   multilock:try_acquire_start: guard, validity | false | nil, message, code
-- The same values every time it is asked. Asking before the task is done
-- raises (misuse).
function Task:result()
	if self._res then return unpack(self._res, 1, self._res.n) end
	check_task(self, "result", 2)
	if not self._k:done() then
		error("attempt to take the result of a hilock task that is not done", 2)
	end
	local ok, flag, code = self._k:result()
	local lock, h, rec, res = self._lock, self._h, self._rec, nil
	if self._sync_result then
		res = self._sync_result(self, ok, flag, code)
	elseif self._what == "acquire" then
		if not ok then
			res = pack(nil, flag, code)
		elseif not flag then
			res = pack(false)
		else
			res = pack(issue(lock, h, rec))
		end
	elseif self._what == "release" then
		unlocked(lock, h, rec, ok)
		res = ok and pack(true) or pack(nil, flag, code)
	else
		res = ok and pack(flag) or pack(nil, flag, code)
	end
	self._res = res
	return unpack(res, 1, res.n)
end

--- task:cancel() --> true. A pending task completes at once with
-- nil, message, "HL_EINTERRUPTED"; an acquire that its attempt was taking
-- is given back first, so nothing stays held. A done task is left as it is
-- (a guard it got must still be released).
function Task:cancel()
	check_task(self, "cancel", 2)
	self._k:cancel()
	return true
end

--- task:wait([timeout]) --> true when done, false when timeout seconds
-- (nil: as long as it takes) ran out first. Blocks the Lua state.
function Task:wait(timeout)
	check_task(self, "wait", 2)
	local ms = to_ms(timeout, "timeout", "wait", 2, -1)
	local ok, msg, code = self._k:wait(ms)
	if ok then return true end
	if code == "HL_ETIMEDOUT" then return false end
	return nil, msg, code
end

--- task:close() --> true. Frees the task, cancelling it if it is still
-- pending (so nothing it was taking stays held). Idempotent; also __close.
-- A task nobody keeps is freed (and so cancelled) by the garbage collector.
function Task:close()
	if getmetatable(self) ~= Task then
		error("bad self to 'close' (hilock task expected)", 2)
	end
	self._k:close()
	return true
end
Task.__close = Task.close

function Task:__tostring()
	return format("hilock.task (%s %q%s)", self._what, (self._lock or self._obj)._name,
		self._k:closed() and ", closed" or self._k:done() and ", done" or "")
end

--- hilock.poll(fd [, timeout]) --> true when fd is readable, false when
-- timeout seconds (nil: as long as it takes) ran out first. Blocks the Lua
-- state. For hosts with no event loop library: wait for task:fd() or
-- client:task_fd() without spinning.
function M.poll(fd, timeout)
	if type(fd) ~= "number" or fd ~= ceil(fd) or fd < 0 then
		argerror(1, "poll", "file descriptor expected", 2)
	end
	local ms = to_ms(timeout, "timeout", "poll", 2, -1)
	local r = core.poll_readable(tointeger(fd) or fd, ms)
	if r < 0 then return nil, "poll failed", "HL_ESYSTEM" end
	return r == 1
end

--- lock:close() --> true | nil, message, code
-- Gives back the holds taken through this object and not yet released (of
-- every coroutine that used it), then frees its C handles; anything it could
-- not release is abandoned (the lease runs out). Afterwards the object is
-- closed: using it raises. Idempotent; also the __close metamethod, so
--   local lk <close> = client:lock("job")
-- releases on scope exit.
function Lock:close()
	if getmetatable(self) ~= Lock then
		error("bad self to 'close' (hilock lock expected)", 2)
	end
	if self._closed then return true end
	self._closed = true
	-- Tasks still running through it end first (cancelled: they give back
	-- what they were taking); one that got the lock counts as a hold,
	-- released below with the others.
	for task in pairs(self._tasks) do
		if not task._k:closed() and not self._client._closed then
			if not task._k:done() then
				task._k:cancel()
				task._k:wait(10000)
			end
			if task._k:done() then task:result() end
		end
	end
	local rok, rmsg, rcode = true, nil, nil
	for co, h in pairs(self._handles) do
		local rec = owners[co]
		local list = rec and self._guards[rec]
		-- its guards not yet released, newest first (they share one hold)
		while list and #list > 0 and not self._client._closed do
			local ok, msg, code = give_back(list[#list], CLOSING)
			if not ok then
				if code ~= "HL_ENOTHELD" then
					if rok then rok, rmsg, rcode = nil, msg, code end
					-- not given back: no longer renewed, the lease ends it
					if code ~= "HL_ELOST" then h:abandon() end
				end
				break
			end
		end
		if rec then
			disarm(rec.armed, self._ident, h)
			self._guards[rec] = nil
		end
		h:close()
		self._handles[co] = nil
	end
	if not self._client._closed then auto_dispatch(self._client) end
	if not rok then return nil, rmsg, rcode end
	return true
end

function Lock:__close(err)
	local ok, msg, code = self:close()
	if not ok and err == nil then
		error(format("hilock: closing lock %q failed: %s (%s)", self._name,
			tostring(msg), tostring(code)), 2)
	end
end

function Lock:__tostring()
	local kind = self._kind == core.LOCK_REENTRANT and "" or ", " .. self:kind()
	return format("hilock.lock (%q%s%s)", self._name, kind, self._closed and ", closed" or "")
end

-- Guard --------------------------------------------------------------------

--- guard:release() --> true | nil, message, code
-- Releases the hold this guard stands for, once; later calls return true.
-- Works from any coroutine: it releases the hold of the coroutine that took
-- it. When that hold is over (released to zero through another guard or
-- object, or lost and taken again): nil, message, "HL_ENOTHELD", and a
-- newer hold is left alone.
Guard.release = give_back
Guard.unlock = Guard.release

--- guard:released() --> boolean
function Guard:released()
	return self[6]
end

--- guard:lock_object() --> the lock object it came from
function Guard:lock_object()
	return self[1]
end

-- On scope exit: release once. A failed release is raised when the scope
-- ended normally; when it ended by an error, that error wins.
function Guard:__close(err)
	if self[6] then return end
	local ok, msg, code = self:release()
	if not ok and err == nil then
		error(format("hilock: releasing lock %q failed: %s (%s)", self[1]._name,
			tostring(msg), tostring(code)), 2)
	end
end

function Guard:__tostring()
	return format("hilock.guard (%q%s)", self[1]._name, self[6] and ", released" or "")
end

-- MultiLock and RedLock ------------------------------------------------------

local Multi = {}
Multi.__index = Multi
Multi.__name = "hilock.multilock"

local MultiGuard = {}
MultiGuard.__index = MultiGuard
MultiGuard.__name = "hilock.multiguard"

local function new_multi(kind, fname, locks)
	if type(locks) ~= "table" then
		argerror(1, fname, "table of locks expected, got " .. type(locks), 3)
	end
	if #locks == 0 then argerror(1, fname, "at least one lock expected", 3) end
	local members = {}
	for i = 1, #locks do
		local lk = locks[i]
		if getmetatable(lk) ~= Lock then
			argerror(1, fname, format("element %d is not a hilock lock", i), 3)
		end
		check_lock(lk, fname, 3)
		for j = 1, i - 1 do
			if members[j]._client == lk._client and members[j]._name == lk._name then
				argerror(1, fname, format("elements %d and %d are the same lock %q of one client",
					j, i, lk._name), 3)
			end
		end
		members[i] = lk
	end
	local names = {}
	for i, lk in ipairs(members) do names[i] = format("%q", lk._name) end
	return setmetatable({
		_kind = kind,
		_fname = fname,
		_locks = members,
		_name = format("%s{%s}", fname, table.concat(names, ", ")),
		-- coroutine -> {mu = C multilock over its handles, hs = the handles,
		-- holds = acquisitions not yet released}
		_multis = setmetatable({}, {__mode = "k"}),
		-- tasks started through it (multilock:close() ends them first)
		_tasks = setmetatable({}, {__mode = "k"}),
		_closed = false,
	}, Multi)
end

--- hilock.multilock{lock1, lock2, ...} --> multilock
-- Several locks (of any clients, so of any servers) taken as one: all of
-- them or none. acquire takes them in order, each waiting what is left of
-- the wait; if one cannot be taken, those taken are released again (last
-- first) and nothing is held. Release gives back what the newest acquire
-- took, last first, trying every lock whatever the others answer. Owned by
-- the coroutine, reentrant, like a lock. Raises on an empty list, a lock
-- given twice or a closed lock or client.
function M.multilock(locks) return new_multi(core.MULTILOCK_ALL, "multilock", locks) end

--- hilock.redlock{lock1, lock2, lock3} --> multilock
-- The RedLock: held once a majority (#locks // 2 + 1) of the locks, each
-- from its own client on its own independent server, is. Each lock waits at
-- most max(wait / n, 1 ms), so a server down costs only its share; more
-- servers down than a minority make acquire return false (or nil, message,
-- code) within its wait. Otherwise as multilock.
-- Its safety rests on timing: Martin Kleppmann ("How to do distributed
-- locking", 2016) showed that a process pause or a server clock jump can end
-- a lease while its holder still acts under it. Where correctness matters,
-- use the fenced lock kind and check its token where you write.
function M.redlock(locks) return new_multi(core.MULTILOCK_RED, "redlock", locks) end

local function check_multi(self, fname, level)
	if getmetatable(self) ~= Multi then
		error(format("bad self to '%s' (hilock multilock expected)", fname), level + 1)
	end
	if self._closed then error("attempt to use a closed hilock multilock", level + 1) end
	for _, lk in ipairs(self._locks) do check_lock(lk, fname, level + 1) end
end

-- The current coroutine's entry: entry, owner record | nil, message, code.
local function multi_entry(self)
	local rec, co = current_owner()
	local e = self._multis[co]
	if e == nil then
		local hs = {}
		for i, lk in ipairs(self._locks) do
			local h, msg, code = handle(lk)
			if not h then return nil, msg, code end
			hs[i] = h
		end
		local ok, mu, code = core.multi_new(hs, self._kind)
		if not ok then return nil, mu, code end
		-- holds: acquisitions through this object not yet released (the C
		-- multilock records which members each took, but not how many
		-- there are), for close
		e = {mu = mu, hs = hs, holds = 0}
		self._multis[co] = e
	end
	return e, rec
end

local function multi_release(self, e, rec)
	if e.holds > 0 then e.holds = e.holds - 1 end
	for _, lk in ipairs(self._locks) do
		if lk._closed then
			-- lock:close() gave back that lock's holds and freed its C
			-- handle, which the C multilock still points to: release
			-- the others one at a time instead.
			local rok, rmsg, rcode = true, nil, nil
			for i = #self._locks, 1, -1 do
				local l, h = self._locks[i], e.hs[i]
				local list = l._guards[rec]
				if not l._closed and not l._client._closed and list and #list > 0 then
					local ok, msg, code = h:release()
					unlocked(l, h, rec, ok)
					auto_dispatch(l._client)
					if not ok and rok then rok, rmsg, rcode = nil, msg, code end
				end
			end
			if not rok then return nil, rmsg, rcode end
			return true
		end
	end
	local ok, msg, code = e.mu:release()
	for i, h in ipairs(e.hs) do
		local lk = self._locks[i]
		unlocked(lk, h, rec, e.mu:gave_back(i - 1))
		auto_dispatch(lk._client)
	end
	if not ok then return nil, msg, code end
	return true
end

--- multilock:acquire([opts]) --> guard, validity | false | nil, message, code
-- opts as lock:acquire ({wait = seconds, lease = seconds}, or the wait). A
-- lease is given to every lock as it is taken; validity is then the seconds
-- the hold stays valid (lease - time taken - drift, drift = 1% of the lease
-- + 2 ms; never reported held without any), nil with the watchdog. The
-- guard releases this hold once (guard:release() or its __close).
function Multi:acquire(opts)
	check_multi(self, "acquire", 2)
	if type(opts) == "number" then opts = {wait = opts} end
	local wait_ms, lease_ms = acquire_times(opts, "acquire", 2)
	local e, rec, code = multi_entry(self)
	if not e then return nil, rec, code end
	local ok, acquired, valid = e.mu:try_acquire(wait_ms, lease_ms)
	for _, lk in ipairs(self._locks) do auto_dispatch(lk._client) end
	if not ok then return nil, acquired, valid end
	if not acquired then return false end
	e.holds = e.holds + 1
	for i, h in ipairs(e.hs) do
		-- through the member too: its lock:close() gives it back
		if e.mu:taken(i - 1) then issue(self._locks[i], h, rec) end
	end
	local validity = valid >= 0 and valid / 1000 or nil
	return setmetatable({multi = self, e = e, rec = rec, done = false}, MultiGuard), validity
end
Multi.lock = Multi.acquire

--- multilock:try_acquire_start([wait [, lease]]) --> task | nil, message, code
-- Starts acquire without blocking, as lock:try_acquire_start: the rounds are
-- a task of the first lock's client (delivered through its client:task_fd()
-- and client:next_task(), or task:fd()), and each lock is waited for by a
-- task of its own client, so an event loop can wait for many and go on with
-- other work meanwhile. wait, lease: seconds as for acquire (wait nil or
-- math.huge: as long as it takes; 0: one attempt each; lease nil: the
-- watchdog); or one table {wait = ..., lease = ...}. The owner is the
-- coroutine that calls it. task:result() then gives what acquire would
-- have returned: guard, validity | false | nil, message, code. Cancelling
-- the task (task:cancel(), task:close(), the collector) cancels the lock it
-- waits for and releases, last first, every lock it had taken, before it
-- completes: nothing stays held.
function Multi:try_acquire_start(wait, lease)
	check_multi(self, "try_acquire_start", 2)
	local opts = wait
	if type(wait) ~= "table" then opts = {wait = wait, lease = lease} end
	local wait_ms, lease_ms = acquire_times(opts, "try_acquire_start", 2)
	local e, rec, code = multi_entry(self)
	if not e then return nil, rec, code end
	local client = self._locks[1]._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, code2 = e.mu:try_acquire_start(wait_ms, lease_ms, id)
	if not ok then return nil, k, code2 end
	local task = setmetatable({_k = k, _obj = self, _e = e, _rec = rec,
		_what = "multilock acquire", _client = client,
		_sync_result = function(task, rok, acquired, rcode)
			if not rok then return pack(nil, acquired, rcode) end
			if not acquired then return pack(false) end
			local m, te, trec = task._obj, task._e, task._rec
			te.holds = te.holds + 1
			for i, h in ipairs(te.hs) do
				-- as acquire: through the member too
				if task._k:multi_taken(i - 1) then issue(m._locks[i], h, trec) end
			end
			local valid = task._k:multi_valid()
			return pack(setmetatable({multi = m, e = te, rec = trec, done = false}, MultiGuard),
				valid >= 0 and valid / 1000 or nil)
		end}, Task)
	client._tasks[id] = task
	self._tasks[task] = true
	return task
end

--- multilock:try_acquire([opts]) --> like acquire, but wait defaults to 0.
function Multi:try_acquire(opts)
	check_multi(self, "try_acquire", 2)
	if opts == nil or type(opts) == "number" then
		return self:acquire({wait = opts or 0})
	end
	if type(opts) == "table" and opts.wait == nil and opts.timeout == nil then
		local o = {}
		for k, v in pairs(opts) do o[k] = v end
		o.wait = 0
		opts = o
	end
	return self:acquire(opts)
end

--- multilock:unlock() --> true | nil, message, code
-- Releases the current coroutine's newest hold: the first failing lock's
-- message and code (naming it); a redlock fails only when fewer than a
-- majority could be released. A lock whose hold was lost (or released
-- through the lock object) while the multilock held it, and that the
-- coroutine has taken again since, is in a newer hold: that one is left as
-- it is, and the lock counts as lost (HL_ELOST).
function Multi:unlock()
	check_multi(self, "unlock", 2)
	local e, rec, code = multi_entry(self)
	if not e then return nil, rec, code end
	return multi_release(self, e, rec)
end
Multi.release = Multi.unlock

--- multilock:lost() --> true if the current coroutine's newest hold is lost:
-- its lease's validity ended, or fewer locks than needed are still held.
-- Local, no round trip.
function Multi:lost()
	check_multi(self, "lost", 2)
	local e, rec, code = multi_entry(self)
	if not e then return nil, rec, code end
	local ok, v, code2 = e.mu:is_lost()
	if not ok then return nil, v, code2 end
	return v
end

--- multilock:locks() --> a new array of the locks, in the order taken
function Multi:locks()
	local out = {}
	for i, lk in ipairs(self._locks) do out[i] = lk end
	return out
end

--- multilock:quorum() --> how many locks must be taken (all of them, or a
-- redlock's majority)
function Multi:quorum()
	if self._kind == core.MULTILOCK_RED then return math.floor(#self._locks / 2) + 1 end
	return #self._locks
end

local function multi_label(self)
	local names = {}
	for i, lk in ipairs(self._locks) do names[i] = format("%q", lk._name) end
	return format("%s{%s}", self._fname, table.concat(names, ", "))
end

--- multilock:with([opts,] f, ...) --> the results of f(...), as lock:with.
function Multi:with(...)
	check_multi(self, "with", 2)
	return run_with(self, multi_label(self), ...)
end

--- multilock:close() --> true | nil, message, code
-- Releases the holds taken through this object and not yet released (of
-- every coroutine), then closes it: using it raises. The locks themselves
-- stay open. Idempotent; also __close, so
--   local ml <close> = hilock.multilock{a, b}
-- releases on scope exit.
function Multi:close()
	if getmetatable(self) ~= Multi then
		error("bad self to 'close' (hilock multilock expected)", 2)
	end
	if self._closed then return true end
	self._closed = true
	-- Tasks still running through it end first (cancelled: they give back
	-- what they took); one that got it anyway counts as a hold, released
	-- below with the others.
	for task in pairs(self._tasks) do
		if not task._k:closed() and not task._client._closed then
			if not task._k:done() then
				task._k:cancel()
				task._k:wait(10000)
			end
			if task._k:done() then task:result() end
		end
	end
	local rok, rmsg, rcode = true, nil, nil
	for co, e in pairs(self._multis) do
		local rec = owners[co]
		while e.holds > 0 and rec do
			local ok, msg, code = multi_release(self, e, rec)
			if not ok then
				if code ~= "HL_ENOTHELD" and rok then rok, rmsg, rcode = nil, msg, code end
				break
			end
		end
		self._multis[co] = nil
	end
	if not rok then return nil, rmsg, rcode end
	return true
end

function Multi:__close(err)
	local ok, msg, code = self:close()
	if not ok and err == nil then
		error(format("hilock: closing %s failed: %s (%s)", multi_label(self),
			tostring(msg), tostring(code)), 2)
	end
end

function Multi:__tostring()
	return format("hilock.%s (%s)", multi_label(self), self._closed and "closed" or "open")
end

--- guard:release() --> true | nil, message, code (once; later calls: true)
function MultiGuard:release()
	if getmetatable(self) ~= MultiGuard then
		error("bad self to 'release' (hilock multilock guard expected)", 2)
	end
	if self.done then return true end
	self.done = true
	local m = self.multi
	if m._closed then return true end -- multilock:close() released it
	return multi_release(m, self.e, self.rec)
end
MultiGuard.unlock = MultiGuard.release

--- guard:released() --> boolean
function MultiGuard:released() return self.done end

function MultiGuard:__close(err)
	if self.done then return end
	local ok, msg, code = self:release()
	if not ok and err == nil then
		error(format("hilock: releasing %s failed: %s (%s)", multi_label(self.multi),
			tostring(msg), tostring(code)), 2)
	end
end

function MultiGuard:__tostring()
	return format("hilock.multiguard (%s%s)", multi_label(self.multi),
		self.done and ", released" or "")
end

-- Synchronizers: semaphore, permit-expirable semaphore, count-down latch ----
--
-- Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch (the
-- same keys, channels and messages, so Java processes share them). One C
-- handle per object. Permits belong to the client, not to a coroutine: any
-- coroutine may give back what another took (the library counts, per
-- client and name, the permits taken and not given back, and refuses to
-- give back more). Waits block the Lua state, or run as tasks
-- (acquire_start, wait_start) like the lock's.

local floor = math.floor
local MAX_COUNT = 2 ^ 40

local function check_name(name, fname, level)
	if type(name) ~= "string" then
		argerror(1, fname, "string expected, got " .. type(name), level + 1)
	end
	if #name == 0 or #name > MAX_NAME then
		argerror(1, fname, "name must be 1 to 65536 bytes", level + 1)
	end
end

-- An integer in [min, max] (n: the argument's position, or a string naming
-- the option) -> a Lua integer.
local function int_arg(v, n, fname, what, min, max, level)
	if type(v) ~= "number" or v ~= v or v ~= floor(v) or v < min or v > max then
		local function show(x)
			if x == MAX_COUNT then return "2^40" elseif x == -MAX_COUNT then return "-2^40" end
			return tostring(tointeger(x) or x)
		end
		local range = format("%s from %s to %s", what, show(min), show(max))
		if type(n) == "string" then
			error(format("bad option '%s' to '%s' (%s expected, got %s)", n, fname, range,
				type(v) == "number" and tostring(v) or type(v)), level + 1)
		end
		argerror(n, fname, format("%s expected, got %s", range,
			type(v) == "number" and tostring(v) or type(v)), level + 1)
	end
	return tointeger(v) or v
end

-- The arguments of a permit acquire: ([n [, opts]]) or (opts), opts a table
-- ({n =, wait =, lease =} as `known` allows) or a number (the wait).
-- -> n, wait_ms, lease_ms (lease_ms: -1 without a lease).
local function permit_args(fname, a, b, known, default_wait, nmin, nmax, level)
	local n, opts, optpos = nil, b, 2
	if type(a) == "table" then
		if b ~= nil then
			argerror(2, fname, "no argument expected after the table of options", level + 1)
		end
		opts, optpos = a, 1
	else
		n = a
	end
	if type(opts) == "number" then opts = {wait = opts} end
	opts = check_options(opts, known, fname, optpos, level + 1)
	if opts.n ~= nil then
		if n ~= nil then
			argerror(1, fname, "permits given twice (an argument and option 'n')", level + 1)
		end
		n = int_arg(opts.n, "n", fname, "number of permits", nmin, nmax, level + 1)
	elseif n == nil then
		n = 1
	else
		n = int_arg(n, 1, fname, "number of permits", nmin, nmax, level + 1)
	end
	local wait_ms = default_wait
	local wait = wait_option(opts, fname, level + 1)
	if wait ~= nil then wait_ms = to_ms(wait, "wait", fname, level + 1, -1) end
	local lease_ms = to_ms(opts.lease, "lease", fname, level + 1, -1)
	if lease_ms == 0 then
		error(format("bad option 'lease' to '%s' (lease must be positive)", fname), level + 1)
	end
	return n, wait_ms, lease_ms
end

-- A synchronizer object of metatable mt around the C handle h.
local function new_sync(client, mt, name, h)
	return setmetatable({
		_client = client,
		_name = name,
		_h = h,
		-- guards not yet released (close gives them back)
		_guards = setmetatable({}, {__mode = "k"}),
		-- tasks started through it (close ends them first)
		_tasks = setmetatable({}, {__mode = "k"}),
		_closed = false,
	}, mt)
end

local function check_sync(self, mt, fname, level)
	if getmetatable(self) ~= mt then
		error(format("bad self to '%s' (%s expected)", fname, mt._label), level + 1)
	end
	if self._closed then error("attempt to use a closed " .. mt._label, level + 1) end
	if self._client._closed then error("attempt to use a closed hilock client", level + 1) end
end

-- h:method(...) -> its value | nil, message, code
local function sync_call(self, method, ...)
	local h = self._h
	local ok, v, code = h[method](h, ...)
	if not ok then return nil, v, code end
	if v == nil then return true end
	return v
end

-- A task of a synchronizer: starter(id) -> true, k[, ids] | nil, message, code.
local function new_sync_task(self, what, result, starter)
	local client = self._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, ids = starter(id)
	if not ok then return nil, k, ids end
	local task = setmetatable({_k = k, _obj = self, _what = what, _client = client,
		_ids = ids, _sync_result = result}, Task)
	client._tasks[id] = task
	self._tasks[task] = true
	return task
end

-- close(): end the tasks (cancelled: what they were taking is given back;
-- one that acquired anyway makes its guard, released with the others),
-- release the guards, free the handle. -> true | nil, message, code
local function sync_close(self, mt)
	if getmetatable(self) ~= mt then
		error("bad self to 'close' (" .. mt._label .. " expected)", 3)
	end
	if self._closed then return true end
	local client_open = not self._client._closed
	for task in pairs(self._tasks) do
		if not task._k:closed() and client_open then
			if not task._k:done() then
				task._k:cancel()
				task._k:wait(10000)
			end
			if task._k:done() then task:result() end
		end
	end
	self._closed = true
	local rok, rmsg, rcode = true, nil, nil
	for g in pairs(self._guards) do
		if not g.done then
			local ok, msg, code = g:_give_back()
			if not ok and rok then rok, rmsg, rcode = nil, msg, code end
		end
	end
	self._h:close()
	if not rok then return nil, rmsg, rcode end
	return true
end

local function sync_close_meta(self, err)
	local ok, msg, code = self:close()
	if not ok and err == nil then
		error(format("hilock: closing %s %q failed: %s (%s)", getmetatable(self)._label,
			self._name, tostring(msg), tostring(code)), 2)
	end
end

-- Guards: `done` once released (or given back by close). _give_back does
-- the release; release() is the public, idempotent entry.
local function guard_release(self, mt, fname)
	if getmetatable(self) ~= mt then
		error(format("bad self to '%s' (%s expected)", fname, mt._label), 3)
	end
	if self.done then return true end
	return self:_give_back()
end

local function guard_close(self, err)
	if self.done then return end
	local ok, msg, code = self:release()
	if not ok and err == nil then
		error(format("hilock: releasing %s failed: %s (%s)", tostring(self), tostring(msg),
			tostring(code)), 2)
	end
end

-- Semaphore ----------------------------------------------------------------

local Semaphore = {}
Semaphore.__index = Semaphore
Semaphore.__name = "hilock.semaphore"
Semaphore._label = "hilock semaphore"

local Permits = {}
Permits.__index = Permits
Permits.__name = "hilock.permits"
Permits._label = "hilock permits guard"

--- client:semaphore(name) --> semaphore | nil, message, code
-- A semaphore (Redisson's RSemaphore): the count of available permits at
-- the key <name>; each change is published on redisson_sc:{name}, which
-- wakes the waiters (no polling). name: 1 to 65536 bytes. No round trip.
function Client:semaphore(name)
	check_client(self, "semaphore", 2)
	check_name(name, "semaphore", 2)
	local ok, h, code = core.semaphore_new(self._c, name)
	if not ok then return nil, h, code end
	return new_sync(self, Semaphore, name, h)
end

local sem_acquire_options = {n = true, wait = true, timeout = true}

local function new_permits(sem, n)
	local g = setmetatable({sem = sem, n = n, done = false}, Permits)
	sem._guards[g] = true
	return g
end

--- sem:acquire([n [, opts]]) --> guard | false | nil, message, code
-- Takes n permits (default 1; 0 answers at once, as Redisson), waiting
-- as opts.wait says: nil (or math.huge) as long as it takes, 0 one attempt,
-- else that many seconds. opts may be the wait itself, or a table
-- {n =, wait =} in place of both arguments. The guard gives the n
-- permits back once: guard:release(), or its __close when a
-- `local g <close>` scope ends (also by an error). false: the wait ran out.
function Semaphore:acquire(a, b)
	check_sync(self, Semaphore, "acquire", 2)
	local n, wait_ms = permit_args("acquire", a, b, sem_acquire_options, -1, 0, MAX_COUNT, 2)
	local ok, acquired, code = self._h:try_acquire(n, wait_ms)
	if not ok then return nil, acquired, code end
	if not acquired then return false end
	return new_permits(self, n)
end

--- sem:try_acquire([n [, opts]]) --> like acquire, but the wait defaults to 0.
function Semaphore:try_acquire(a, b)
	check_sync(self, Semaphore, "try_acquire", 2)
	local n, wait_ms = permit_args("try_acquire", a, b, sem_acquire_options, 0, 0, MAX_COUNT, 2)
	local ok, acquired, code = self._h:try_acquire(n, wait_ms)
	if not ok then return nil, acquired, code end
	if not acquired then return false end
	return new_permits(self, n)
end

--- sem:acquire_start([n [, opts]]) --> task | nil, message, code
-- Starts acquire (n >= 1; the same arguments) without blocking; the wait is
-- a record in the client, not a thread. task:result() then gives what
-- acquire would have returned. Cancelling (task:cancel(), task:close(), the
-- collector) leaves nothing taken. A task that acquired holds its permits
-- until its guard (task:result()) releases them.
function Semaphore:acquire_start(a, b)
	check_sync(self, Semaphore, "acquire_start", 2)
	local n, wait_ms = permit_args("acquire_start", a, b, sem_acquire_options, -1, 1,
		MAX_COUNT, 2)
	local h = self._h
	return new_sync_task(self, "semaphore acquire", function(task, ok, acquired, code)
		if not ok then return pack(nil, acquired, code) end
		if not acquired then return pack(false) end
		return pack(new_permits(task._obj, n))
	end, function(id) return h:try_acquire_start(n, wait_ms, id) end)
end
Semaphore.try_acquire_start = Semaphore.acquire_start

--- sem:release([n]) --> true | nil, message, code
-- Gives back n permits (default 1) that this client took (through any
-- coroutine or object). More than it holds: nil, message, "HL_ENOTHELD", and
-- nothing changes. "HL_EINDOUBT": sent and never confirmed (it ran at most
-- once); the permits no longer count as this client's, so a second release
-- cannot give them back twice. "HL_EIO": nothing reached Redis, the permits
-- are still this client's. To change how many permits exist, use
-- add_permits.
function Semaphore:release(n)
	check_sync(self, Semaphore, "release", 2)
	if n == nil then n = 1 end
	n = int_arg(n, 1, "release", "number of permits", 0, MAX_COUNT, 2)
	return sync_call(self, "release", n)
end

--- sem:held_permits() --> the permits this client holds of it (local)
function Semaphore:held_permits()
	check_sync(self, Semaphore, "held_permits", 2)
	return sync_call(self, "held")
end

--- sem:available_permits() --> the available permits (0 if it does not
-- exist) | nil, message, code
function Semaphore:available_permits()
	check_sync(self, Semaphore, "available_permits", 2)
	return sync_call(self, "available")
end

--- sem:drain_permits() --> how many permits it took: every available one.
-- They count as this client's (sem:release(n) gives them back).
function Semaphore:drain_permits()
	check_sync(self, Semaphore, "drain_permits", 2)
	return sync_call(self, "drain")
end

--- sem:try_set_permits(n) --> true if set, false if the semaphore existed
function Semaphore:try_set_permits(n)
	check_sync(self, Semaphore, "try_set_permits", 2)
	n = int_arg(n, 1, "try_set_permits", "number of permits", 0, MAX_COUNT, 2)
	return sync_call(self, "try_set_permits", n)
end

--- sem:set_permits(n) --> true. Sets the available permits, whatever they were.
function Semaphore:set_permits(n)
	check_sync(self, Semaphore, "set_permits", 2)
	n = int_arg(n, 1, "set_permits", "number of permits", 0, MAX_COUNT, 2)
	return sync_call(self, "set_permits", n)
end

--- sem:add_permits(delta) --> the available permits after. A negative delta
-- takes permits away (the count may go below zero: then nobody acquires
-- until enough are released).
function Semaphore:add_permits(delta)
	check_sync(self, Semaphore, "add_permits", 2)
	delta = int_arg(delta, 1, "add_permits", "an integer", -MAX_COUNT, MAX_COUNT, 2)
	return sync_call(self, "add_permits", delta)
end

--- sem:delete() --> true if it existed, false if not
function Semaphore:delete()
	check_sync(self, Semaphore, "delete", 2)
	return sync_call(self, "delete")
end

--- sem:name() --> the name
function Semaphore:name() return self._name end

--- sem:close() --> true | nil, message, code
-- Ends the tasks started through it (cancelled), gives back the permits of
-- its guards not yet released, frees its C handle. Idempotent; also
-- __close, so `local sem <close> = client:semaphore("pool")` gives back on
-- scope exit. Using it afterwards raises.
function Semaphore:close() return sync_close(self, Semaphore) end
Semaphore.__close = sync_close_meta

function Semaphore:__tostring()
	return format("hilock.semaphore (%q%s)", self._name, self._closed and ", closed" or "")
end

function Permits:_give_back()
	self.done = true
	local sem = self.sem
	sem._guards[self] = nil
	if sem._h:closed() then
		-- made after sem:close() (which gives back every guard it knows)
		return nil, "the semaphore object was closed: its permits were not given back",
			"HL_ECLOSED"
	end
	local ok, msg, code = sem._h:release(self.n)
	if not ok then return nil, msg, code end
	return true
end

--- guard:release() --> true | nil, message, code. Gives back the guard's
-- permits, once (later calls return true); "HL_ENOTHELD" when this client
-- already gave them back otherwise (sem:release), "HL_ECLOSED" when the
-- client is closed (the permits are then not given back).
function Permits:release() return guard_release(self, Permits, "release") end

--- guard:released() --> boolean
function Permits:released() return self.done end

--- guard:permits() --> how many permits it stands for
function Permits:permits() return self.n end

-- On scope exit: release once. A failed release is raised when the scope
-- ended normally; when it ended by an error, that error wins.
Permits.__close = guard_close

function Permits:__tostring()
	return format("hilock.permits (%d of semaphore %q%s)", self.n, self.sem._name,
		self.done and ", released" or "")
end

-- Permit-expirable semaphore ---------------------------------------------

local ExpSemaphore = {}
ExpSemaphore.__index = ExpSemaphore
ExpSemaphore.__name = "hilock.expirable_semaphore"
ExpSemaphore._label = "hilock expirable semaphore"

local ExpPermits = {}
ExpPermits.__index = ExpPermits
ExpPermits.__name = "hilock.expirable_permits"
ExpPermits._label = "hilock expirable permits guard"

local MAX_EXP_PERMITS = 1000

--- client:expirable_semaphore(name) --> semaphore | nil, message, code
-- A permit-expirable semaphore (Redisson's RPermitExpirableSemaphore): each
-- permit out has an id (32 lowercase hex characters) and may have a lease;
-- a permit whose lease ended goes back by itself, so a holder that dies
-- gives its permits back when their leases end. Available permits at <name>,
-- the permits out in the sorted set {name}:timeout (scored with the end of
-- their lease, wall-clock: keep clocks in step). No round trip.
function Client:expirable_semaphore(name)
	check_client(self, "expirable_semaphore", 2)
	check_name(name, "expirable_semaphore", 2)
	local ok, h, code = core.expsem_new(self._c, name)
	if not ok then return nil, h, code end
	return new_sync(self, ExpSemaphore, name, h)
end

local xsem_acquire_options = {n = true, wait = true, timeout = true, lease = true}

local function copy(t)
	local out = {}
	for i = 1, #t do out[i] = t[i] end
	return out
end

local function new_exp_permits(sem, ids)
	local g = setmetatable({sem = sem, _ids = copy(ids), done = false}, ExpPermits)
	sem._guards[g] = true
	return g
end

local function xsem_acquire(self, fname, default_wait, a, b)
	check_sync(self, ExpSemaphore, fname, 3)
	local n, wait_ms, lease_ms = permit_args(fname, a, b, xsem_acquire_options, default_wait, 1,
		MAX_EXP_PERMITS, 3)
	local ok, acquired, ids = self._h:try_acquire(n, wait_ms, lease_ms)
	if not ok then return nil, acquired, ids end
	if not acquired then return false end
	return new_exp_permits(self, ids), ids
end

--- xs:acquire([n [, opts]]) --> guard, ids | false | nil, message, code
-- Takes n permits (1 to 1000, default 1). opts: {n =, wait =, lease =}
-- (or the wait): wait as for sem:acquire; lease: seconds each permit stays
-- out before it goes back by itself (nil: no lease, only a release gives it
-- back). ids: an array of the permits' ids (for xs:release(id),
-- update_lease, lease_time; guard:ids() too). The guard releases them all
-- once: guard:release() or its __close.
function ExpSemaphore:acquire(a, b) return xsem_acquire(self, "acquire", -1, a, b) end

--- xs:try_acquire([n [, opts]]) --> like acquire, but the wait defaults to 0.
function ExpSemaphore:try_acquire(a, b) return xsem_acquire(self, "try_acquire", 0, a, b) end

--- xs:acquire_start([n [, opts]]) --> task | nil, message, code. Starts
-- acquire without blocking; task:result() gives guard, ids | false |
-- nil, message, code. Cancelling leaves nothing taken.
function ExpSemaphore:acquire_start(a, b)
	check_sync(self, ExpSemaphore, "acquire_start", 2)
	local n, wait_ms, lease_ms = permit_args("acquire_start", a, b, xsem_acquire_options, -1,
		1, MAX_EXP_PERMITS, 2)
	local h = self._h
	return new_sync_task(self, "expirable semaphore acquire", function(task, ok, acquired, code)
		if not ok then return pack(nil, acquired, code) end
		if not acquired then return pack(false) end
		return pack(new_exp_permits(task._obj, task._ids), copy(task._ids))
	end, function(id) return h:try_acquire_start(n, wait_ms, lease_ms, id) end)
end
ExpSemaphore.try_acquire_start = ExpSemaphore.acquire_start

-- A permit id as the library takes it (hex; the ids acquire gives are 32
-- lowercase hex characters); anything else is misuse.
local function check_id(id, fname, level)
	if type(id) ~= "string" then
		argerror(1, fname, "permit id expected, got " .. type(id), level + 1)
	end
	if #id == 0 or #id > 32 or #id % 2 ~= 0 or id:find("[^%x]") then
		argerror(1, fname, format("permit id expected (32 hex characters), got %q",
			#id > 40 and id:sub(1, 40) .. "..." or id), level + 1)
	end
end

--- xs:release(id) --> true | nil, message, code: "HL_ENOTHELD" (released
-- already, or never out), "HL_ELOST" (its lease had ended: it had gone back,
-- and someone else may have had it meanwhile), "HL_EINDOUBT" (sent and never
-- confirmed: it may or may not be back; releasing it again is safe).
function ExpSemaphore:release(id)
	check_sync(self, ExpSemaphore, "release", 2)
	check_id(id, "release", 2)
	return sync_call(self, "release", id)
end

--- xs:update_lease(id, lease) --> true | nil, message, code ("HL_ENOTHELD"
-- when the permit is not out). lease: seconds from now; nil or math.huge:
-- no lease.
function ExpSemaphore:update_lease(id, lease)
	check_sync(self, ExpSemaphore, "update_lease", 2)
	check_id(id, "update_lease", 2)
	local ms = to_ms(lease, "lease", "update_lease", 2, -1)
	if ms == 0 then error("bad option 'lease' to 'update_lease' (lease must be positive)", 2) end
	return sync_call(self, "update_lease", id, ms)
end

--- xs:lease_time(id) --> seconds left of the permit's lease (a float),
-- math.huge if it has none (as update_lease takes it; -1 before: see
-- docs/MIGRATING.md) | nil, message, code ("HL_ENOTHELD" when it is not
-- out).
function ExpSemaphore:lease_time(id)
	check_sync(self, ExpSemaphore, "lease_time", 2)
	check_id(id, "lease_time", 2)
	local v, msg, code = sync_call(self, "lease_time", id)
	if v == nil then return nil, msg, code end
	if v < 0 then return huge end
	return v / 1000
end

--- xs:available_permits(), xs:permits(), xs:acquired_permits() --> the
-- available permits, all of them (available and out), those out.
function ExpSemaphore:available_permits()
	check_sync(self, ExpSemaphore, "available_permits", 2)
	return sync_call(self, "available")
end
function ExpSemaphore:permits()
	check_sync(self, ExpSemaphore, "permits", 2)
	return sync_call(self, "permits")
end
function ExpSemaphore:acquired_permits()
	check_sync(self, ExpSemaphore, "acquired_permits", 2)
	return sync_call(self, "acquired")
end

--- xs:try_set_permits(n) --> true if set, false if it existed
function ExpSemaphore:try_set_permits(n)
	check_sync(self, ExpSemaphore, "try_set_permits", 2)
	n = int_arg(n, 1, "try_set_permits", "number of permits", 0, MAX_COUNT, 2)
	return sync_call(self, "try_set_permits", n)
end

--- xs:set_permits(n) --> true. Sets the total (available and out) to n.
function ExpSemaphore:set_permits(n)
	check_sync(self, ExpSemaphore, "set_permits", 2)
	n = int_arg(n, 1, "set_permits", "number of permits", 0, MAX_COUNT, 2)
	return sync_call(self, "set_permits", n)
end

--- xs:add_permits(delta) --> the available permits after (delta may be
-- negative).
function ExpSemaphore:add_permits(delta)
	check_sync(self, ExpSemaphore, "add_permits", 2)
	delta = int_arg(delta, 1, "add_permits", "an integer", -MAX_COUNT, MAX_COUNT, 2)
	return sync_call(self, "add_permits", delta)
end

--- xs:delete() --> true if it existed, false if not
function ExpSemaphore:delete()
	check_sync(self, ExpSemaphore, "delete", 2)
	return sync_call(self, "delete")
end

--- xs:name() --> the name
function ExpSemaphore:name() return self._name end

--- xs:close() --> true | nil, message, code. As sem:close(): ends its
-- tasks, releases the permits of its guards not yet released, frees the C
-- handle; idempotent; also __close.
function ExpSemaphore:close() return sync_close(self, ExpSemaphore) end
ExpSemaphore.__close = sync_close_meta

function ExpSemaphore:__tostring()
	return format("hilock.expirable_semaphore (%q%s)", self._name,
		self._closed and ", closed" or "")
end

-- Every id is tried, whatever the others answer; the first failure is
-- returned.
function ExpPermits:_give_back()
	self.done = true
	local sem = self.sem
	sem._guards[self] = nil
	if sem._h:closed() then
		-- made after xs:close() (which releases every guard it knows)
		return nil, "the semaphore object was closed: its permits were not released",
			"HL_ECLOSED"
	end
	local rok, rmsg, rcode = true, nil, nil
	for _, id in ipairs(self._ids) do
		local ok, msg, code = sem._h:release(id)
		if not ok and rok then rok, rmsg, rcode = nil, msg, code end
	end
	if not rok then return nil, rmsg, rcode end
	return true
end

--- guard:release() --> true | nil, message, code. Releases every permit of
-- the guard, once; the first failure ("HL_ENOTHELD": released already;
-- "HL_ELOST": its lease had ended).
function ExpPermits:release() return guard_release(self, ExpPermits, "release") end

--- guard:released() --> boolean
function ExpPermits:released() return self.done end

--- guard:ids() --> a new array of its permits' ids
function ExpPermits:ids() return copy(self._ids) end

--- guard:permits() --> how many permits it stands for
function ExpPermits:permits() return #self._ids end

ExpPermits.__close = guard_close

function ExpPermits:__tostring()
	return format("hilock.expirable_permits (%d of semaphore %q%s)", #self._ids,
		self.sem._name, self.done and ", released" or "")
end

-- Count-down latch -----------------------------------------------------------

local Latch = {}
Latch.__index = Latch
Latch.__name = "hilock.count_down_latch"
Latch._label = "hilock count-down latch"

--- client:count_down_latch(name) --> latch | nil, message, code
-- A count-down latch (Redisson's RCountDownLatch): the count at <name>;
-- redisson_countdownlatch__channel__{name} carries "0" when it opens, which
-- wakes every waiter in every process (no polling). In a cluster, names may
-- not contain '}'. No round trip.
function Client:count_down_latch(name)
	check_client(self, "count_down_latch", 2)
	check_name(name, "count_down_latch", 2)
	local ok, h, code = core.latch_new(self._c, name)
	if not ok then return nil, h, code end
	return new_sync(self, Latch, name, h)
end

--- latch:try_set_count(n) --> true if set, false if a count is set already.
-- n: 1 to 2^40. A latch that opened (or was deleted) can be set again: it
-- closes for new waiters.
function Latch:try_set_count(n)
	check_sync(self, Latch, "try_set_count", 2)
	n = int_arg(n, 1, "try_set_count", "a count", 1, MAX_COUNT, 2)
	return sync_call(self, "try_set_count", n)
end

--- latch:count_down() --> the count left (0 once open). At zero the latch
-- opens and every waiter wakes. Counting down an open latch changes nothing.
-- nil, message, "HL_EINDOUBT": sent and never confirmed, it may or may not
-- have counted (counting down again could open the latch a count early).
function Latch:count_down()
	check_sync(self, Latch, "count_down", 2)
	return sync_call(self, "count_down")
end

--- latch:count() --> the count (0: open, or never set)
function Latch:count()
	check_sync(self, Latch, "count", 2)
	return sync_call(self, "count")
end

--- latch:wait([timeout]) --> true once the count is 0, false when timeout
-- seconds (nil or math.huge: as long as it takes; 0: just look) ran out |
-- nil, message, code. Blocks the Lua state.
function Latch:wait(timeout)
	check_sync(self, Latch, "wait", 2)
	local ms = to_ms(timeout, "timeout", "wait", 2, -1)
	return sync_call(self, "wait", ms)
end
Latch.await = Latch.wait

--- latch:wait_start([timeout]) --> task | nil, message, code. Starts wait
-- without blocking; task:result() then gives true | false | nil, message,
-- code.
function Latch:wait_start(timeout)
	check_sync(self, Latch, "wait_start", 2)
	local ms = to_ms(timeout, "timeout", "wait_start", 2, -1)
	local h = self._h
	return new_sync_task(self, "latch wait", function(_, ok, open, code)
		if not ok then return pack(nil, open, code) end
		return pack(open)
	end, function(id) return h:wait_start(ms, id) end)
end

--- latch:delete() --> true if it existed, false if not (waiters keep
-- waiting)
function Latch:delete()
	check_sync(self, Latch, "delete", 2)
	return sync_call(self, "delete")
end

--- latch:name() --> the name
function Latch:name() return self._name end

--- latch:close() --> true. Cancels its pending tasks and frees its C handle;
-- idempotent; also __close.
function Latch:close() return sync_close(self, Latch) end
Latch.__close = sync_close_meta

function Latch:__tostring()
	return format("hilock.count_down_latch (%q%s)", self._name, self._closed and ", closed" or "")
end


-- The data grid ------------------------------------------------------------
-- client:bucket(name), client:atomic_long(name), ... (docs/grid.md): one
-- object per kind, generated from the kinds' specs (hilock_grid.lua). Every
-- object has :delete(), :exists(), :expire(seconds), :clear_expire(),
-- :ttl(); a kind adds its operations. Values are strings in and out (nil:
-- absent); each call returns its result, or nil, message, code (io style:
-- a nil value with no message is "absent").

local GridObject = {}
GridObject.__index = GridObject

local function check_object(self, fname, level)
	local mt = getmetatable(self)
	if type(mt) ~= "table" or rawget(mt, "_kind") == nil then
		error(format("bad self to '%s' (hilock grid object expected)", fname), level + 1)
	end
	check_client(self._client, fname, level + 1)
end

-- Check and convert the arguments against the op's signature (b bytes, i
-- integer, d number, s number or +-inf, m seconds, t boolean, ? optional, * the
-- rest bytes).
local sub = string.sub
-- argerror for grid_args: the method's name ("kind:op") joined only when
-- an error is raised, not on every call.
local function gerr(n, label, name, msg)
	argerror(n, label .. ":" .. name, msg, 4)
end

local function grid_args(label, name, sig, ...)
	local args, n, pos = {}, select("#", ...), 1
	local i = 1
	while i <= #sig do
		local t = sub(sig, i, i)
		local opt = sub(sig, i + 1, i + 1) == "?"
		if opt then i = i + 1 end
		if t == "*" then
			-- one copy of the arguments: select(k, ...) in the loop
			-- would copy them all for each (quadratic in a batch)
			local all = {...}
			for k = pos, n do
				local v = all[k]
				if type(v) ~= "string" then gerr(k, label, name, "string expected, got " .. type(v)) end
				args[#args + 1] = v
			end
			pos = n + 1
		else
			local v = select(pos, ...)
			if v == nil then
				if not opt then gerr(pos, label, name, "value expected") end
				args[pos] = nil
			elseif t == "b" then
				if type(v) ~= "string" then gerr(pos, label, name, "string expected, got " .. type(v)) end
			elseif t == "i" then
				if math.type(v) ~= "integer" then gerr(pos, label, name, "integer expected, got " .. (math.type(v) or type(v))) end
			elseif t == "d" then
				if type(v) ~= "number" or v ~= v or v == huge or v == -huge then
					gerr(pos, label, name, "finite number expected")
				end
				v = v + 0.0
			elseif t == "p" then -- scored pairs: {member = score} or {{member, score}, ...}
				if type(v) ~= "table" then gerr(pos, label, name, "table expected, got " .. type(v)) end
				local flat = {}
				local function put(m, s)
					if type(m) ~= "string" then gerr(pos, label, name, "member: string expected, got " .. type(m)) end
					if type(s) ~= "number" or s ~= s or s == huge or s == -huge then
						gerr(pos, label, name, "score: finite number expected")
					end
					flat[#flat + 1] = s + 0.0
					flat[#flat + 1] = m
				end
				if v[1] ~= nil then
					for _, e in ipairs(v) do
						if type(e) ~= "table" then gerr(pos, label, name, "{member, score} pairs expected") end
						put(e[1], e[2])
					end
				else
					for m, s in pairs(v) do put(m, s) end
				end
				if pos < n then gerr(pos + 1, label, name, "too many arguments") end
				for k = 1, #flat do args[pos + k - 1] = flat[k] end
				return args, pos - 1 + #flat -- the last argument
			elseif t == "s" then -- a score range's end: may be infinite
				if type(v) ~= "number" or v ~= v then gerr(pos, label, name, "number expected") end
				v = v + 0.0
			elseif t == "m" then
				if type(v) ~= "number" or v <= 0 then gerr(pos, label, name, "positive number of seconds expected") end
				v = to_ms(v, "seconds", label .. ":" .. name, 3)
			elseif t == "t" then
				v = v and 1 or 0
			end
			args[pos] = v
			pos = pos + 1
		end
		i = i + 1
	end
	if pos <= n then gerr(pos, label, name, "too many arguments") end
	return args, pos - 1
end

local grid_call_c, grid_ocall_c, math_type = core.grid_call, core.grid_ocall, math.type

-- Results of many values: a list stays an array (false for an absent
-- value); a map becomes a table of keys to values; scored, an array of
-- {member, score}; a page, the next cursor ("0" after the last) and its
-- items.
local function grid_pairs(t)
	local out = {}
	for i = 1, #t - 1, 2 do out[#out + 1] = {t[i], t[i + 1]} end
	return out
end

local function grid_map(t)
	local out = {}
	for i = 1, #t - 1, 2 do
		if t[i + 1] then out[t[i]] = t[i + 1] end
	end
	return out
end

local grid_many = {list = function(t) return t end, map = grid_map, scored = grid_pairs}

local function grid_finish(result, ok, v, code)
	if not ok then return nil, v, code end
	if result == "bool" then return v ~= 0 end
	if result == "none" then return true end
	local many = grid_many[result]
	if many then return many(v) end
	if result:sub(1, 5) == "page:" then
		local conv = result == "page:list" and grid_many.list or grid_pairs
		return v[1], conv(v[2])
	end
	return v
end

-- every item of a cursor, page by page: fetch(cursor) --> next cursor,
-- page | nil, message, code. An iterator for a generic for; it raises the
-- error of a failed page (a for loop has no other way to report one).
local function grid_scan(fetch)
	local cursor, page, i, done = "0", {}, 0, false
	return function()
		while true do
			i = i + 1
			if page[i] ~= nil then return page[i] end
			if done then return nil end
			local nxt, items, code = fetch(cursor)
			if nxt == nil then error(items, 2) end
			cursor, page, i, done = nxt, items, 0, nxt == "0"
		end
	end
end

-- A signature's shape for the direct path (plain[sig]): its letters, which
-- of them are optional, how many lead up to the last required one; false
-- when it has a letter whose argument is converted (a duration, a flag, a
-- score range, pairs, a batch).
local plain = {}
local function plain_shape(sig)
	local p, i = {n = 0, req = 0, opt = {}}, 1
	while i <= #sig do
		local c = sub(sig, i, i)
		local opt = sub(sig, i + 1, i + 1) == "?"
		if c ~= "b" and c ~= "i" and c ~= "d" then
			-- past the arguments given it does not matter: shape
			-- the rest as optional so that it is checked by count
			if not opt then return false end
		end
		p.n = p.n + 1
		p[p.n], p.opt[p.n] = c, opt
		if not opt then p.req = p.n end
		i = i + (opt and 2 or 1)
	end
	return p
end

-- Whether the n arguments can go to C as they are: each a string, an
-- integer or a finite float where the signature says so (nil where it is
-- optional), and none missing that is required.
local function direct(sig, n, ...)
	local p = plain[sig]
	if p == nil then
		p = plain_shape(sig)
		plain[sig] = p
	end
	if not p or n > p.n or n < p.req then return false end
	for k = 1, n do
		local v, c = select(k, ...), p[k]
		if v == nil then
			if not p.opt[k] then return false end
		elseif c == "b" then
			if type(v) ~= "string" then return false end
		elseif c == "i" then
			if math_type(v) ~= "integer" then return false end
		elseif c == "d" then
			if math_type(v) ~= "float" or v ~= v or v == huge or v == -huge then
				return false
			end
		else
			return false -- a converted letter, given
		end
	end
	return true
end

-- The generated methods' one path. Arguments that need no conversion (see
-- direct) go straight to C; the others are checked and converted against
-- the signature first.
local function grid_call(self, op, name, sig, result, ...)
	local mt = metatable_of(self)
	local client = type(self) == "table" and rawget(self, "_client")
	if type(mt) ~= "table" or rawget(mt, "_kind") == nil or not client or
		client._closed or metatable_of(client) ~= Client then
		check_object(self, (type(self) == "table" and rawget(self, "_label") or "grid") ..
			":" .. name, 2)
	end
	if client._on_event then auto_dispatch(client) end
	local n, h = select("#", ...), self._h
	if n == 0 and sig == "" or n == 1 and (sig == "b" and type((...)) == "string" or
		sig == "i" and math_type((...)) == "integer") or direct(sig, n, ...) then
		if h then return grid_finish(result, grid_ocall_c(h, op, ...)) end
		return grid_finish(result, grid_call_c(client._c, self._kind, self._name, op, ...))
	end
	local args, cnt = grid_args(self._label, name, sig, ...)
	if h then return grid_finish(result, grid_ocall_c(h, op, unpack(args, 1, cnt))) end
	return grid_finish(result, grid_call_c(client._c, self._kind, self._name, op,
		unpack(args, 1, cnt)))
end

local grid_factories = {}

-- stateful: the kind keeps state in its C object (an adder: its local sum
-- and its subscription), so the object holds one, made here (it subscribes
-- and waits for Redis's confirmation): client:long_adder(name) --> object |
-- nil, message, code. obj:close() (or the collector) frees it.
local function new_kind(name, number, stateful)
	local mt = setmetatable({_kind = number, _label = name}, {__index = GridObject})
	mt.__index = mt
	mt.__tostring = function(self) return format("hilock.%s (%q)", name, self._name) end
	grid_factories[name] = mt
	Client[name] = function(client, oname)
		check_client(client, name, 2)
		check_name(oname, name, 2)
		local o = {_client = client, _name = oname, _kind = number, _label = name}
		if stateful then
			local h, m, c = core.grid_open(client._c, number, oname)
			if not h then return nil, m, c end
			o._h = h
		end
		return setmetatable(o, mt)
	end
	return mt
end

--- obj:close() --> true: frees what a kind with state holds (an adder stops
-- taking part in sums); later calls fail. A no-op for the other kinds.
function GridObject:close()
	if self._h then core.grid_close(self._h) end
	return true
end

local function grid_common(self, fname, what, ms)
	check_object(self, fname, 3)
	local ok, v, code = core.grid_common(self._client._c, self._kind, self._name, what, ms)
	if not ok then return nil, v, code end
	return v
end

--- obj:name() --> the name (its Redis key)
function GridObject:name() return self._name end
--- obj:delete() --> true if it existed, false if not
function GridObject:delete()
	local v, m, c = grid_common(self, "delete", 0)
	if v == nil then return nil, m, c end
	return v ~= 0
end
--- obj:exists() --> true | false
function GridObject:exists()
	local v, m, c = grid_common(self, "exists", 1)
	if v == nil then return nil, m, c end
	return v ~= 0
end
--- obj:expire(seconds) --> true if it exists
function GridObject:expire(seconds)
	if type(seconds) ~= "number" or seconds <= 0 then
		argerror(1, "expire", "positive number of seconds expected", 2)
	end
	local v, m, c = grid_common(self, "expire", 2, to_ms(seconds, "seconds", "expire", 2))
	if v == nil then return nil, m, c end
	return v ~= 0
end
--- obj:clear_expire() --> true if it had an expiry
function GridObject:clear_expire()
	local v, m, c = grid_common(self, "clear_expire", 3)
	if v == nil then return nil, m, c end
	return v ~= 0
end
--- obj:ttl() --> seconds left; math.huge without an expiry; false when it
-- does not exist (as lock:ttl(); docs/consistency.md)
function GridObject:ttl()
	local v, m, c = grid_common(self, "ttl", 4)
	if v == nil then return nil, m, c end
	if v == -2 then return false end
	if v < 0 then return huge end
	return v / 1000
end

require("hilock_grid")({call = grid_call, new_kind = new_kind})
M._grid_scan = grid_scan
M._grid_factories = grid_factories

-- The rate limiter's idiom (docs/grid-rate-limiter.md): modes by name,
-- seconds, waits that sleep the delay Redis answers, the retry-after.
local RateLimiter = grid_factories.rate_limiter
local rate_modes = {overall = 0, per_client = 1}

local function rate_config(self, fname, op, result, mode, rate, interval, keep_alive)
	local m = rate_modes[mode]
	if m == nil then argerror(1, fname, "'overall' or 'per_client' expected", 3) end
	return grid_call(self, op, fname, "iimm?", result, m, rate, interval, keep_alive)
end

--- rl:try_set_rate(mode, rate, interval [, keep_alive]) --> true if set,
-- false if a rate was set already | nil, message, code. mode "overall" or
-- "per_client"; at most rate permits per interval seconds; keep_alive
-- (seconds, at least the interval) lets the keys expire after that long
-- unused. "HL_EINDOUBT": its reply was lost (it ran at most once).
function RateLimiter:try_set_rate(mode, rate, interval, keep_alive)
	return rate_config(self, "try_set_rate", 0x0800, "bool", mode, rate, interval, keep_alive)
end

--- rl:set_rate(mode, rate, interval [, keep_alive]) --> true | nil, message,
-- code. Replaces the rate and forgets this client's grants of that mode
-- (Redisson's setRate).
function RateLimiter:set_rate(mode, rate, interval, keep_alive)
	return rate_config(self, "set_rate", 0x0801, "none", mode, rate, interval, keep_alive)
end

local function rate_permits(permits, fname)
	if permits == nil then return 1 end
	return int_arg(permits, 1, fname, "number of permits", 1, MAX_COUNT, 3)
end

--- rl:try_acquire([permits [, wait]]) --> true | false, retry_after | nil,
-- message, code. Takes permits (default 1), waiting at most wait seconds
-- (default 0: one attempt; math.huge: as long as it takes) and sleeping
-- the delay Redis answers; a wait too short for the next free permit ends
-- at once. false comes with the seconds until a permit may be free. A lost
-- reply never takes permits twice.
function RateLimiter:try_acquire(permits, wait)
	check_object(self, "try_acquire", 2)
	permits = rate_permits(permits, "try_acquire")
	local wait_ms = wait == nil and 0 or to_ms(wait, "seconds", "try_acquire", 2, -1)
	local ok, acquired, retry = core.rate_try(self._client._c, self._name, permits, wait_ms)
	if not ok then return nil, acquired, retry end
	if acquired then return true end
	return false, retry / 1000
end

--- rl:acquire([permits]) --> true | nil, message, code. Waits as long as
-- it takes.
function RateLimiter:acquire(permits)
	check_object(self, "acquire", 2)
	permits = rate_permits(permits, "acquire")
	local ok, acquired, code = core.rate_try(self._client._c, self._name, permits, -1)
	if not ok then return nil, acquired, code end
	return true
end

--- rl:acquire_start([permits [, wait]]) --> task | nil, message, code.
-- The wait as a task (no thread waits: the client's executors make the
-- attempts); wait in seconds, default as long as it takes. task:result()
-- gives true, or false when the wait ran out. Cancelling it takes nothing.
function RateLimiter:acquire_start(permits, wait)
	check_object(self, "acquire_start", 2)
	permits = rate_permits(permits, "acquire_start")
	local wait_ms = wait == nil and -1 or to_ms(wait, "seconds", "acquire_start", 2, -1)
	local client = self._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, code = core.rate_start(client._c, self._name, permits, wait_ms, id)
	if not ok then return nil, k, code end
	local task = setmetatable({_k = k, _obj = self, _what = "rate_limiter acquire",
		_client = client, _sync_result = function(_, rok, acquired, rcode)
			if not rok then return pack(nil, acquired, rcode) end
			return pack(acquired and true or false)
		end}, Task)
	client._tasks[id] = task
	return task
end

--- rl:get_config() --> {rate =, interval = seconds, mode = "overall" |
-- "per_client", keep_alive = seconds or nil} | nil, message, code
function RateLimiter:get_config()
	local v, m, c = grid_call(self, 0x0805, "get_config", "", "value")
	if v == nil then return nil, m, c end
	return {rate = v[1], interval = v[2] / 1000, mode = v[3] == 1 and "per_client" or "overall",
		keep_alive = v[4] ~= 0 and v[4] / 1000 or nil}
end

-- The list, queue, deque, priority queue and priority deque's idiom
-- (docs/grid.md; docs/grid-priority-queue.md): #obj is the size
-- (LLEN); obj:values() iterates the elements from the head (read, not
-- taken) in pages of 1000 (LRANGE), for a generic for; pairs(obj) gives
-- 1-based index and element. A list also reads and writes by integer
-- index, 1-based as Lua's: l[1] is the head, l[#l] the last, l[-1] the
-- last too (Redis's negative indexes); l[i] is nil out of range, and
-- l[i] = v replaces (LSET; out of range raises). The methods take
-- Redis's 0-based indexes (l:get(0) is l[1]). A failed page or index
-- raises (there is no other way to report it there).
local LIST_PAGE = 1000

local function list_pages(self)
	return grid_scan(function(cursor)
		local at = math.tointeger(tonumber(cursor))
		local page, m, c = self:read_range(at, at + LIST_PAGE - 1)
		if page == nil then return nil, m, c end
		return #page == LIST_PAGE and tostring(at + LIST_PAGE) or "0", page
	end)
end

local function list_len(self)
	local n, m = self:size()
	if n == nil then error(m, 2) end
	return n
end

local function list_pairs(self)
	local nxt, i = list_pages(self), 0
	return function()
		local v = nxt()
		if v == nil then return nil end
		i = i + 1
		return i, v
	end, self, nil
end

for _, kname in ipairs({"list", "queue", "deque", "priority_queue", "priority_deque"}) do
	local K = grid_factories[kname]
	--- obj:values() --> an iterator over the elements from the head
	K.values = list_pages
	K.__len = list_len
	K.__pairs = list_pairs
end

-- The delayed queue's idiom (docs/grid-delayed-queue.md): offer with the
-- delay in seconds (0 or more); #dq and dq:values() over the elements still
-- waiting, insertion order, in pages. The due elements move to the queue of
-- the same name (client:queue(name)) while a delayed queue of it is open in
-- some client; dq:close() (or the collector) ends this one's part.
do
	local DQ = grid_factories.delayed_queue
	--- dq:offer(value, seconds) --> true | nil, message, code. seconds:
	-- 0 or more (rounded up to ms; a negative one is refused by the
	-- library). A resend after a lost reply adds nothing twice.
	function DQ:offer(value, seconds)
		if type(seconds) ~= "number" or seconds ~= seconds or seconds == huge or seconds == -huge then
			argerror(2, "delayed_queue:offer", "finite number of seconds expected", 2)
		end
		local ms = math.tointeger(math.ceil(seconds * 1000))
		if ms == nil then argerror(2, "delayed_queue:offer", "delay too long", 2) end
		return grid_call(self, 0x1300, "offer", "bi", "none", value, ms)
	end
	DQ.values = list_pages
	DQ.__len = list_len
	DQ.__pairs = list_pairs
end

-- The blocking queue's idiom (docs/grid-blocking-queue.md): the queue's
-- #, values() and pairs; take() waits as long as it takes, poll(timeout)
-- waits up to timeout seconds (no timeout: at once); take_start() and
-- poll_start(timeout) are the waits as tasks (no thread each: the client's
-- waiters on a queue share one blocking command), whose result() is the
-- element, or nil when none came. Nothing taken is lost: a lost reply, a
-- killed process or a cancel gives the element back.
local BlockingQueue = grid_factories.blocking_queue
local BlockingDeque = grid_factories.blocking_deque

local function bq_start(self, fname, op, wait_ms)
	local client = self._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, code = core.bq_start(client._c, self._kind, self._name, op, wait_ms, id)
	if not ok then return nil, k, code end
	local task = setmetatable({_k = k, _obj = self, _what = fname,
		_client = client, _sync_result = function(t, rok, m, rcode)
			if not rok then return pack(nil, m, rcode) end
			return pack(core.task_bytes(t._k))
		end}, Task)
	client._tasks[id] = task
	return task
end

-- The waits of both kinds: name = {op of the take, op with a timeout,
-- the poll without one}.
local function bq_waits(K, ops)
	K.values = list_pages
	K.__len = list_len
	K.__pairs = list_pairs
	for name, w in pairs(ops) do
		local take_op, timed_op, now = w[1], w[2], K[w[3]]
		--- take / take_first / take_last() --> value | nil, message, code
		K["take" .. name] = function(self)
			return grid_call(self, take_op, "take" .. name, "", "bytes")
		end
		--- poll / poll_first / poll_last([timeout]) --> value | nil: at
		-- once without a timeout, else waiting up to timeout seconds
		K["poll" .. name] = function(self, timeout)
			if timeout == nil or timeout == 0 then return now(self) end
			return grid_call(self, timed_op, "poll" .. name, "m", "bytes", timeout)
		end
		--- take*_start() --> task: the take as a task (result(): the value)
		K["take" .. name .. "_start"] = function(self)
			check_object(self, "take" .. name .. "_start", 2)
			return bq_start(self, "take" .. name, take_op, -1)
		end
		--- poll*_start(timeout) --> task: the poll with a timeout as a task
		-- (result(): the value, or nil when none came)
		K["poll" .. name .. "_start"] = function(self, timeout)
			check_object(self, "poll" .. name .. "_start", 2)
			return bq_start(self, "poll" .. name, timed_op,
				to_ms(timeout, "seconds", "poll" .. name .. "_start", 2))
		end
	end
end
--- q:poll_from_any_start(timeout, name2, ...) --> task: take the head of
-- whichever of q and the named queues (same kind; any cluster slots) has
-- one first, waiting up to timeout seconds (nil: as long as it takes; 0:
-- one look at each); result(): name, element, or nil when none came.
-- Nothing is lost: a queue that had one too keeps it; a cancel gives back.
local function bq_any_start(self, timeout, ...)
	check_object(self, "poll_from_any_start", 3)
	local packed = {}
	for i = 1, select("#", ...) do
		local n = select(i, ...)
		if type(n) ~= "string" then
			argerror(i + 1, "poll_from_any", "queue name (string) expected", 3)
		end
		packed[i] = string.pack("<s4", n)
	end
	local ms = to_ms(timeout, "seconds", "poll_from_any", 3, -1)
	local client = self._client
	client._task_seq = client._task_seq + 1
	local id = client._task_seq
	local ok, k, code = core.bq_any_start(client._c, self._kind, self._name,
		table.concat(packed), ms, id)
	if not ok then return nil, k, code end
	local task = setmetatable({_k = k, _obj = self, _what = "poll_from_any",
		_client = client, _sync_result = function(t, rok, m, rcode)
			if not rok then return pack(nil, m, rcode) end
			return pack(core.task_pair(t._k))
		end}, Task)
	client._tasks[id] = task
	return task
end

--- q:poll_from_any(timeout, name2, ...) --> name, element | nil | nil,
-- message, code: poll_from_any_start's task, waited for (this thread).
local function bq_any(self, timeout, ...)
	local t, m, code = bq_any_start(self, timeout, ...)
	if not t then return nil, m, code end
	local ok, wm, wcode = t:wait()
	if not ok then
		t:close()
		return nil, wm, wcode
	end
	local r = pack(t:result())
	t:close()
	return unpack(r, 1, r.n)
end

for _, K in ipairs({BlockingQueue, BlockingDeque, grid_factories.bounded_blocking_queue}) do
	K.poll_from_any_start = bq_any_start
	K.poll_from_any = bq_any
end
bq_waits(BlockingQueue, {[""] = {0x1009, 0x100a, "poll"}})
bq_waits(BlockingDeque, {[""] = {0x1109, 0x110a, "poll"}, _first = {0x1117, 0x1119, "poll_first"},
	_last = {0x1118, 0x111a, "poll_last"}})

-- The bounded queue: the waits above, and offer(v [, timeout]) / put(v)
-- that wait for room (woken by the capacity channel).
local BoundedBlockingQueue = grid_factories.bounded_blocking_queue
bq_waits(BoundedBlockingQueue, {[""] = {0x1205, 0x1206, "poll"}})
local bbq_offer_now = BoundedBlockingQueue.offer

--- bbq:offer(value [, timeout]) --> true | false | nil, message, code. Adds
-- value if there is room: at once, or waiting up to timeout seconds.
function BoundedBlockingQueue:offer(value, timeout)
	if timeout == nil or timeout == 0 then return bbq_offer_now(self, value) end
	return grid_call(self, 0x1203, "offer", "bm", "bool", value, timeout)
end

--- bbq:put(value) --> true | nil, message, code. Adds value, waiting as
-- long as it takes for room.
function BoundedBlockingQueue:put(value)
	return grid_call(self, 0x1204, "put", "b", "none", value)
end

-- The map's idiom (docs/grid.md): put_all of a table or of keys and values
-- alternating, and iteration by HSCAN pages (never one reply with the
-- whole map): for k, v in m:pairs() do ... end, pairs(m), #m.
local Map = grid_factories.map
local map_page = 1000

--- m:put_all(t) or m:put_all(k1, v1, k2, v2, ...) --> true | nil, message,
-- code: the entries of t (strings to strings), or keys and values
-- alternating (an odd count is refused), in one round trip (HMSET).
function Map:put_all(...)
	if select("#", ...) == 1 and type((...)) == "table" then
		local flat, n = {}, 0
		for k, v in pairs((...)) do
			if type(k) ~= "string" or type(v) ~= "string" then
				argerror(1, "put_all", "table of strings to strings expected", 2)
			end
			flat[n + 1], flat[n + 2], n = k, v, n + 2
		end
		return grid_call(self, 0x0910, "put_all", "*", "none", unpack(flat, 1, n))
	end
	return grid_call(self, 0x0910, "put_all", "*", "none", ...)
end

--- m:pairs([pattern]) --> an iterator of key, value for a generic for, page
-- by page (HSCAN); pattern: Redis's glob over the keys. It raises the
-- error of a page that failed. As with SCAN, an entry present for the whole
-- iteration is seen (once, unless the map grows meanwhile).
function Map:pairs(pattern)
	local it = grid_scan(function(cursor) return self:scan(cursor, map_page, pattern) end)
	return function()
		local e = it()
		if e then return e[1], e[2] end
	end
end

Map.__pairs = function(self) return self:pairs() end
-- #m: the number of entries (it raises when Redis cannot answer)
Map.__len = function(self)
	local n, m = self:size()
	if n == nil then error(m, 2) end
	return n
end

local List = grid_factories.list
local function lua_index(k)
	if k > 0 then return k - 1 end
	return k
end
List.__index = function(self, k)
	if math_type(k) == "integer" then
		if k == 0 then return nil end
		local v, m = self:get(lua_index(k))
		if v == nil and m then error(m, 2) end
		return v
	end
	return List[k]
end
List.__newindex = function(self, k, v)
	if math_type(k) ~= "integer" then
		rawset(self, k, v)
		return
	end
	if k == 0 then error("list index 0 is out of range (Lua indexes from 1)", 2) end
	local ok, m = self:fast_set(lua_index(k), v)
	if not ok then error(m, 2) end
end

-- The set's and the scored sorted set's idiom (docs/grid.md): #s, and
-- iteration by cursor pages (SSCAN, ZSCAN: memory stays one page; a
-- member there for the whole iteration is seen) or, for a scored sorted
-- set, in rank order by ZRANGE pages. The iterators raise the error of a
-- failed page (a for loop has no other way to report one).
local SET_PAGE = 1000
local Set = grid_factories.set

local function size_or_error(self)
	local n, m = self:size()
	if n == nil then error(m, 3) end
	return n
end

Set.__len = size_or_error

--- s:members([page]) --> iterator over the members (SSCAN pages of
-- page, default 1000): for m in s:members() do ... end
function Set:members(page)
	return grid_scan(function(cursor) return self:scan(cursor, page or SET_PAGE) end)
end

--- pairs(s): member, true for each member (as a Lua set table).
function Set:__pairs()
	local it = self:members()
	return function()
		local m = it()
		if m ~= nil then return m, true end
	end, self, nil
end

local ScoredSortedSet = grid_factories.scored_sorted_set
ScoredSortedSet.__len = size_or_error

--- z:entries([page]) --> iterator of member, score (ZSCAN pages, in no
-- particular order): for m, score in z:entries() do ... end
function ScoredSortedSet:entries(page)
	local it = grid_scan(function(cursor) return self:scan(cursor, page or SET_PAGE) end)
	return function()
		local e = it()
		if e then return e[1], e[2] end
	end
end

--- pairs(z): member, score for each member (as entries()).
function ScoredSortedSet:__pairs()
	return self:entries(), self, nil
end

--- z:in_order([reverse, [page]]) --> iterator of member, score in rank
-- order (highest first if reverse) by ZRANGE pages; a change meanwhile
-- can shift members across pages (one missed or seen twice).
function ScoredSortedSet:in_order(reverse, page)
	page = page or SET_PAGE
	if math_type(page) ~= "integer" or page < 1 then
		argerror(2, "in_order", "positive integer expected", 2)
	end
	local start, items, i, done = 0, {}, 0, false
	return function()
		while true do
			i = i + 1
			local e = items[i]
			if e then return e[1], e[2] end
			if done then return nil end
			local got, m
			if reverse then
				got, m = self:entry_range(-start - page, -start - 1)
			else
				got, m = self:entry_range(start, start + page - 1)
			end
			if got == nil then error(m, 2) end
			if reverse then
				for k = 1, #got // 2 do got[k], got[#got - k + 1] = got[#got - k + 1], got[k] end
			end
			items, i, done, start = got, 0, #got < page, start + page
		end
	end
end

-- The sorted set's idiom (docs/grid-sorted-set.md): pages by index, an
-- iterator in order, #ss.
local SortedSet = grid_factories.sorted_set

--- ss:scan([cursor [, count]]) --> next cursor, values | nil, message,
-- code. One page of count values (default 1000) in order from cursor ("0",
-- the default, to start; the cursor is the next index); "0" after the last.
function SortedSet:scan(cursor, count)
	return grid_call(self, 0x0c09, "scan", "bi?", "page:list", cursor or "0", count or 1000)
end

--- ss:values() --> an iterator over the values in order, lowest first, a
-- page of 1000 per round trip: for v in ss:values() do ... end. It raises
-- the error of a page that fails. By index, as Redisson's iterator: values
-- added or removed meanwhile before the current page shift it.
function SortedSet:values()
	check_object(self, "sorted_set:values", 2)
	return grid_scan(function(cursor) return self:scan(cursor, 1000) end)
end

-- #ss: the number of values (raises on failure: # has no other way).
SortedSet.__len = function(self)
	local n, m = self:size()
	if n == nil then error(m, 2) end
	return n
end

-- pairs(ss): index (1, 2...) and value, in order.
SortedSet.__pairs = function(self)
	local it, i = self:values(), 0
	return function()
		local v = it()
		if v == nil then return nil end
		i = i + 1
		return i, v
	end, self, nil
end


-- The priority blocking queue's and deque's waits
-- (docs/grid-priority-queue.md): a wait in the library (it tries again
-- after a back-off of 10 ms growing to 250 ms, at once when a hilock
-- process adds). take*() and poll*_timeout(seconds) block the caller;
-- take*_start() and poll*_start(seconds) are the same waits as tasks
-- (result(): the value, or nil when none came in time).
local PriorityBlockingQueue = grid_factories.priority_blocking_queue
local PriorityBlockingDeque = grid_factories.priority_blocking_deque
for _, k in ipairs({"values", "__len", "__pairs"}) do
	PriorityBlockingQueue[k] = grid_factories.priority_queue[k]
	PriorityBlockingDeque[k] = grid_factories.priority_queue[k]
end

-- name = {op of the take, op of the timed poll}: take<name>(),
-- poll<name>_timeout(seconds), take<name>_start(), poll<name>_start(seconds).
local function pq_waits(K, ops)
	for name, w in pairs(ops) do
		local take_op, timed_op = w[1], w[2]
		local take, timed, poll = "take" .. name, "poll" .. name .. "_timeout", "poll" .. name
		--- take / take_first / take_last() --> the value at that end,
		-- waiting as long as it takes | nil, message, code
		K[take] = function(self)
			return grid_call(self, take_op, take, "", "bytes")
		end
		--- poll*_timeout(seconds) --> the value at that end, waiting at
		-- most seconds; nil when none came in time | nil, message, code
		K[timed] = function(self, seconds)
			return grid_call(self, timed_op, timed, "m", "bytes", seconds)
		end
		--- take*_start() --> task: the take as a task (result(): the value)
		K[take .. "_start"] = function(self)
			check_object(self, take .. "_start", 2)
			return bq_start(self, take, take_op, -1)
		end
		--- poll*_start(seconds) --> task: the timed poll as a task
		-- (result(): the value, or nil when none came in time)
		K[poll .. "_start"] = function(self, seconds)
			check_object(self, poll .. "_start", 2)
			return bq_start(self, timed, timed_op,
				to_ms(seconds, "seconds", poll .. "_start", 2))
		end
	end
end
pq_waits(PriorityBlockingQueue, {[""] = {0x1609, 0x160a}})
pq_waits(PriorityBlockingDeque, {[""] = {0x1709, 0x170a}, _first = {0x170f, 0x1711},
	_last = {0x1710, 0x1712}})

-- Internals for tests --------------------------------------------------------
M._core = core
M._owners = owners

return M
