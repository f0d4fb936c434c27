/*
 * The Lua scripts. Each is one atomic step of PROTOCOL.md (RLock, spin and
 * fenced lock, sections 2, 5 and 6; fair lock, section 3; read-write lock,
 * section 4; renewal, section 1), written for hilock. Redis state and
 * messages match Redisson; return values are our own, shaped for the C
 * side: acquired is {hold count} (the fenced lock adds its token), taken
 * is a number of ms to wait before trying again; a release answers -1 (not
 * held by the owner), 0 (the owner still holds it), {1, receivers of the
 * unlock message} (the lock is free) or {2} (the owner's holds are over
 * but others remain, read holds).
 */
#include "scripts.h"

#include <stddef.h>

/*
 * Hold counts are *set*, not incremented: the caller sends the count it
 * will have afterwards (its own record is the truth of what it was given).
 * So a script run twice (resent after a lost reply) leaves what running it
 * once does, and a hold Redis has that the caller was never given (an
 * acquire whose reply was lost) is folded away by the owner's next acquire
 * or release instead of outliving it. Redis state and messages are
 * Redisson's: an owner field with its hold count, PEXPIRE, the unlock
 * message.
 */

/* KEYS[1] lock name. ARGV[1] lease ms, ARGV[2] owner, ARGV[3] the owner's
 * hold count once acquired. Acquired: {hold count}. Taken: PTTL of the key
 * (-1 if it has no TTL). */
static const char acquire_src[] =
        "if redis.call('exists', KEYS[1]) == 0 or "
        "redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
        "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "  return {tonumber(ARGV[3])}\n"
        "end\n"
        "return redis.call('pttl', KEYS[1])\n";

/* The reentrant lock's release up to the delete (KEYS[1] lock name;
 * ARGV[2] lease ms, ARGV[3] owner, ARGV[5] the owner's hold count before
 * this release, 0: unknown, one less than Redis has): not held by owner,
 * -1; still held, 0 (its lease renewed); else the key is deleted and the
 * script goes on. */
#define RELEASE_HOLD                                                           \
	"local v = redis.call('hget', KEYS[1], ARGV[3])\n"                     \
	"if not v then\n"                                                      \
	"  return -1\n"                                                        \
	"end\n"                                                                \
	"local n = tonumber(ARGV[5])\n"                                        \
	"if n == 0 then\n"                                                     \
	"  n = tonumber(v)\n"                                                  \
	"end\n"                                                                \
	"if n > 1 then\n"                                                      \
	"  redis.call('hset', KEYS[1], ARGV[3], n - 1)\n"                      \
	"  redis.call('pexpire', KEYS[1], ARGV[2])\n"                          \
	"  return 0\n"                                                         \
	"end\n"                                                                \
	"redis.call('del', KEYS[1])\n"

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] unlock message ("0"; empty
 * for the spin lock, which publishes nothing), ARGV[2] lease ms, ARGV[3]
 * owner, ARGV[4] publish command, ARGV[5] the owner's hold count before
 * this release (0: unknown, one less than Redis has). Not held by owner:
 * -1. Still held (reentrant): 0. Released: {1, number of subscribers the
 * message reached}. */
static const char release_src[] =
        RELEASE_HOLD "if ARGV[1] == '' then\n"
                     "  return {1, 0}\n"
                     "end\n"
                     "return {1, redis.call(ARGV[4], KEYS[2], ARGV[1])}\n";

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] message (empty: publish
 * nothing, the spin lock), ARGV[2] publish command. 1 if the lock
 * existed. */
static const char force_unlock_src[] =
        "if redis.call('del', KEYS[1]) == 1 then\n"
        "  if ARGV[1] ~= '' then\n"
        "    redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
        "  end\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* KEYS lock names; ARGV[1] lease ms, then per key i: ARGV[2i] the hash
 * field of the hold (the owner, or owner:write), ARGV[2i + 1] "r" for a
 * read hold, whose timeout keys {name}:<owner>:rwlock_timeout:<k> are
 * renewed too, else "". Returns one 1 (renewed) or 0 (not held by that
 * owner) per key. */
static const char renew_src[] =
        "local r = {}\n"
        "for i = 1, #KEYS do\n"
        "  local f = ARGV[2 * i]\n"
        "  local n = redis.call('hget', KEYS[i], f)\n"
        "  if n then\n"
        "    if ARGV[2 * i + 1] == 'r' then\n"
        "      local p = KEYS[i]\n"
        "      if not string.find(p, '{', 1, true) then\n"
        "        p = '{' .. p .. '}'\n"
        "      end\n"
        "      for k = tonumber(n), 1, -1 do\n"
        "        redis.call('pexpire', p .. ':' .. f .. ':rwlock_timeout:' "
        ".. k, ARGV[1])\n"
        "      end\n"
        "    end\n"
        "    redis.call('pexpire', KEYS[i], ARGV[1])\n"
        "    r[i] = 1\n"
        "  else\n"
        "    r[i] = 0\n"
        "  end\n"
        "end\n"
        "return r\n";

/* ---- fenced lock (PROTOCOL 6) --------------------------------------------
 * KEYS[1] lock name, KEYS[2] token key. ARGV as acquire_src. Every
 * acquisition, re-entry too, takes the next token. Acquired: {hold count,
 * token}. Taken: PTTL. */
static const char fenced_acquire_src[] =
        "if redis.call('exists', KEYS[1]) == 0 or "
        "redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
        "  local t = redis.call('incr', KEYS[2])\n"
        "  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
        "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "  return {tonumber(ARGV[3]), t}\n"
        "end\n"
        "return redis.call('pttl', KEYS[1])\n";

/* ---- fair lock (PROTOCOL 3) ----------------------------------------------
 * KEYS[1] lock name, KEYS[2] queue, KEYS[3] timeouts, KEYS[4] the lock
 * channel, to which ":<owner>" is appended for each waiter's own channel.
 * Every script first drops the queue's head while its deadline (client
 * clock, ms) has passed: a waiter that died leaves the queue. */
#define FAIR_PURGE                                                             \
	"local now = tonumber(ARGV[NOW])\n"                                    \
	"while true do\n"                                                      \
	"  local h = redis.call('lindex', KEYS[2], 0)\n"                       \
	"  if not h then break end\n"                                          \
	"  local t = redis.call('zscore', KEYS[3], h)\n"                       \
	"  if not t or tonumber(t) > now then break end\n"                     \
	"  redis.call('zrem', KEYS[3], h)\n"                                   \
	"  redis.call('lpop', KEYS[2])\n"                                      \
	"end\n"

/* ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait ms (the caller's, or the
 * stale-waiter timeout), ARGV[4] now ms, ARGV[5] hold count once
 * acquired, ARGV[6] "1" to join the queue when taken, "0" not to (one
 * attempt). Acquired: {hold count}. Taken: ms to wait before trying again
 * (a waiter is woken earlier by a message on its own channel). */
static const char fair_acquire_src[] =
        "local NOW = 4\n" FAIR_PURGE
        "if redis.call('exists', KEYS[1]) == 0 then\n"
        "  local h = redis.call('lindex', KEYS[2], 0)\n"
        "  if not h or h == ARGV[2] then\n"
        "    if h then redis.call('lpop', KEYS[2]) end\n"
        "    redis.call('zrem', KEYS[3], ARGV[2])\n"
        "    local rest = redis.call('zrange', KEYS[3], 0, -1)\n"
        "    for i = 1, #rest do\n"
        "      redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), rest[i])\n"
        "    end\n"
        "    redis.call('hset', KEYS[1], ARGV[2], ARGV[5])\n"
        "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "    return {tonumber(ARGV[5])}\n"
        "  end\n"
        "elseif redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[2], ARGV[5])\n"
        "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "  return {tonumber(ARGV[5])}\n"
        "end\n"
        "if ARGV[6] == '0' then return 0 end\n"
        "if redis.call('zscore', KEYS[3], ARGV[2]) then\n"
        "  local ttl = redis.call('pttl', KEYS[1])\n"
        "  if ttl > 0 then return ttl end\n"
        "  local h = redis.call('lindex', KEYS[2], 0)\n"
        "  local t = h and redis.call('zscore', KEYS[3], h)\n"
        "  if t then return math.max(1, tonumber(t) - now) end\n"
        "  return 1\n"
        "end\n"
        "local ttl\n"
        "local last = redis.call('lindex', KEYS[2], -1)\n"
        "if last and last ~= ARGV[2] then\n"
        "  local t = redis.call('zscore', KEYS[3], last)\n"
        "  if t then ttl = tonumber(t) - now end\n"
        "end\n"
        "if not ttl then ttl = redis.call('pttl', KEYS[1]) end\n"
        "if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, "
        "ARGV[2]) == 1 then\n"
        "  redis.call('rpush', KEYS[2], ARGV[2])\n"
        "end\n"
        "return math.max(1, ttl)\n";

/* ARGV[1] message "0", ARGV[2] lease ms, ARGV[3] owner, ARGV[4] now ms,
 * ARGV[5] publish command, ARGV[6] hold count before (0: unknown). Wakes
 * the queue's head on its own channel when the lock is free. */
static const char fair_release_src[] =
        "local NOW = 4\n" FAIR_PURGE "local function wake()\n"
        "  local h = redis.call('lindex', KEYS[2], 0)\n"
        "  if h then return redis.call(ARGV[5], KEYS[4] .. ':' .. h, "
        "ARGV[1]) end\n"
        "  return 0\n"
        "end\n"
        "if redis.call('exists', KEYS[1]) == 0 then\n"
        "  wake()\n"
        "  return -1\n"
        "end\n"
        "local v = redis.call('hget', KEYS[1], ARGV[3])\n"
        "if not v then return -1 end\n"
        "local n = tonumber(ARGV[6])\n"
        "if n == 0 then n = tonumber(v) end\n"
        "if n > 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[3], n - 1)\n"
        "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
        "  return 0\n"
        "end\n"
        "redis.call('del', KEYS[1])\n"
        "return {1, wake()}\n";

/* ARGV[1] message "0", ARGV[2] now ms, ARGV[3] publish command. */
static const char fair_force_unlock_src[] =
        "local NOW = 2\n" FAIR_PURGE "if redis.call('del', KEYS[1]) == 1 then\n"
        "  local h = redis.call('lindex', KEYS[2], 0)\n"
        "  if h then redis.call(ARGV[3], KEYS[4] .. ':' .. h, ARGV[1]) end\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* A waiter gives up (its wait ran out, or it was cancelled): it leaves the
 * queue, and those behind it move their deadlines up by its wait. If it
 * was the head and the lock is free, the new head is woken. ARGV[1] owner,
 * ARGV[2] wait ms, ARGV[3] publish command. */
static const char fair_give_up_src[] =
        "local q = redis.call('lrange', KEYS[2], 0, -1)\n"
        "local after = false\n"
        "for i = 1, #q do\n"
        "  if after then\n"
        "    redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), q[i])\n"
        "  elseif q[i] == ARGV[1] then\n"
        "    after = true\n"
        "  end\n"
        "end\n"
        "redis.call('zrem', KEYS[3], ARGV[1])\n"
        "redis.call('lrem', KEYS[2], 0, ARGV[1])\n"
        "if q[1] == ARGV[1] and redis.call('exists', KEYS[1]) == 0 then\n"
        "  local h = redis.call('lindex', KEYS[2], 0)\n"
        "  if h then redis.call(ARGV[3], KEYS[4] .. ':' .. h, '0') end\n"
        "end\n"
        "return 0\n";

/* ---- read-write lock (PROTOCOL 4) ----------------------------------------
 * The hash has mode = read | write, each reader's owner field with its
 * read hold count, and the writer's owner:write field. Read hold k of an
 * owner has its own lease in {name}:<owner>:rwlock_timeout:<k>.
 *
 * Read acquire: KEYS[1] name, KEYS[2] the owner's timeout prefix
 * ({name}:<owner>:rwlock_timeout). ARGV[1] lease ms, ARGV[2] owner,
 * ARGV[3] owner:write, ARGV[4] hold count once acquired. A reader joins
 * readers; the writer may take read holds too. */
static const char read_acquire_src[] =
        "local mode = redis.call('hget', KEYS[1], 'mode')\n"
        "local n = tonumber(ARGV[4])\n"
        "if not mode then\n"
        "  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], n)\n"
        "  for k = 1, n do\n"
        "    redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])\n"
        "  end\n"
        "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "  return {n}\n"
        "end\n"
        "if mode == 'read' or (mode == 'write' and "
        "redis.call('hexists', KEYS[1], ARGV[3]) == 1) then\n"
        "  redis.call('hset', KEYS[1], ARGV[2], n)\n"
        "  redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])\n"
        "  local ttl = redis.call('pttl', KEYS[1])\n"
        "  redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))\n"
        "  return {n}\n"
        "end\n"
        "return redis.call('pttl', KEYS[1])\n";

/* KEYS[1] name, KEYS[2] channel, KEYS[3] the owner's timeout prefix,
 * KEYS[4] the key prefix ({name}). ARGV[1] message "0", ARGV[2] owner,
 * ARGV[3] publish command, ARGV[4] hold count before (0: unknown). The
 * hash keeps the longest lease of the read holds left (a dead reader's
 * field, whose timeout keys ran out, no longer counts); with none left and
 * no writer it is deleted and waiters are woken. */
static const char read_release_src[] =
        "local mode = redis.call('hget', KEYS[1], 'mode')\n"
        "if not mode then\n"
        "  redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
        "  return -1\n"
        "end\n"
        "local v = redis.call('hget', KEYS[1], ARGV[2])\n"
        "if not v then return -1 end\n"
        "local n = tonumber(ARGV[4])\n"
        "if n == 0 then n = tonumber(v) end\n"
        "local c = n - 1\n"
        "if c > 0 then\n"
        "  redis.call('hset', KEYS[1], ARGV[2], c)\n"
        "else\n"
        "  redis.call('hdel', KEYS[1], ARGV[2])\n"
        "end\n"
        "redis.call('del', KEYS[3] .. ':' .. n)\n"
        "local left = {2}\n"
        "if c > 0 then left = 0 end\n"
        "if redis.call('hlen', KEYS[1]) > 1 then\n"
        "  local best = -3\n"
        "  local all = redis.call('hgetall', KEYS[1])\n"
        "  for i = 1, #all, 2 do\n"
        "    local cnt = tonumber(all[i + 1])\n"
        "    if cnt then\n"
        "      for k = cnt, 1, -1 do\n"
        "        local t = redis.call('pttl', KEYS[4] .. ':' .. all[i] .. "
        "':rwlock_timeout:' .. k)\n"
        "        if t > best then best = t end\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "  if best > 0 then\n"
        "    redis.call('pexpire', KEYS[1], best)\n"
        "    return left\n"
        "  end\n"
        "  if mode == 'write' then return left end\n"
        "end\n"
        "redis.call('del', KEYS[1])\n"
        "return {1, redis.call(ARGV[3], KEYS[2], ARGV[1])}\n";

/* KEYS[1] name. ARGV[1] lease ms, ARGV[2] owner:write, ARGV[3] hold count
 * once acquired. A re-entry adds the lease to the TTL, as Redisson's. */
static const char write_acquire_src[] =
        "local mode = redis.call('hget', KEYS[1], 'mode')\n"
        "if not mode then\n"
        "  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], ARGV[3])\n"
        "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
        "  return {tonumber(ARGV[3])}\n"
        "end\n"
        "if mode == 'write' and "
        "redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
        "  local ttl = redis.call('pttl', KEYS[1])\n"
        "  redis.call('pexpire', KEYS[1], math.max(ttl, 0) + "
        "tonumber(ARGV[1]))\n"
        "  return {tonumber(ARGV[3])}\n"
        "end\n"
        "return redis.call('pttl', KEYS[1])\n";

/* KEYS[1] name, KEYS[2] channel. ARGV[1] message "1", ARGV[2] lease ms,
 * ARGV[3] owner:write, ARGV[4] publish command, ARGV[5] hold count before
 * (0: unknown). A writer that keeps read holds turns the lock into a read
 * lock and wakes waiting readers (Redisson publishes nothing there; the
 * extra message only wakes them sooner). */
static const char write_release_src[] =
        "local mode = redis.call('hget', KEYS[1], 'mode')\n"
        "if not mode then\n"
        "  redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
        "  return -1\n"
        "end\n"
        "if mode ~= 'write' then return -1 end\n"
        "local v = redis.call('hget', KEYS[1], ARGV[3])\n"
        "if not v then return -1 end\n"
        "local n = tonumber(ARGV[5])\n"
        "if n == 0 then n = tonumber(v) end\n"
        "if n > 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[3], n - 1)\n"
        "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
        "  return 0\n"
        "end\n"
        "redis.call('hdel', KEYS[1], ARGV[3])\n"
        "if redis.call('hlen', KEYS[1]) == 1 then\n"
        "  redis.call('del', KEYS[1])\n"
        "  return {1, redis.call(ARGV[4], KEYS[2], ARGV[1])}\n"
        "end\n"
        "redis.call('hset', KEYS[1], 'mode', 'read')\n"
        "redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
        "return {2}\n";

/* KEYS[1] name, KEYS[2] channel. ARGV[1] the half ("read" or "write"),
 * ARGV[2] its message, ARGV[3] publish command. Deletes the lock only if
 * it is in that half's mode. */
static const char rw_force_unlock_src[] =
        "if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then\n"
        "  redis.call('del', KEYS[1])\n"
        "  redis.call(ARGV[3], KEYS[2], ARGV[2])\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* KEYS[1] name. ARGV[1] the half. The read half is locked in read mode,
 * or in write mode when the writer holds reads too; the write half in
 * write mode. */
static const char rw_is_locked_src[] =
        "local mode = redis.call('hget', KEYS[1], 'mode')\n"
        "if ARGV[1] == 'write' then\n"
        "  return mode == 'write' and 1 or 0\n"
        "end\n"
        "if mode == 'read' or (mode == 'write' and "
        "redis.call('hlen', KEYS[1]) > 2) then\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* ---- once: scripts that must not run twice ------------------------------
 * A script that is not idempotent (taking or giving back permits, counting
 * down) carries a request marker as its last key (hilock_request:{name}:<32
 * hex>) and the marker's lifetime in ms as its last ARGV: the first run
 * stores its integer result there, and a copy resent after a lost reply
 * returns that result instead of running again. The markers are hilock's
 * own; they never change what Redisson sees. */
#define ONCE_BEGIN                                                             \
	"local mk = KEYS[#KEYS]\n"                                             \
	"local prev = redis.call('get', mk)\n"                                 \
	"if prev then return tonumber(prev) end\n"                             \
	"local function op()\n"
#define ONCE_END                                                               \
	"end\n"                                                                \
	"local r = op()\n"                                                     \
	"redis.call('set', mk, r, 'px', ARGV[#ARGV])\n"                        \
	"return r\n"

/* ---- semaphore (PROTOCOL 8) ----------------------------------------------
 * KEYS[1] the counter, KEYS[2] the channel redisson_sc:{name}, KEYS[3]
 * the request marker. ARGV[1] a number of permits, ARGV[2] the publish
 * command. */

/* Take ARGV[1] permits if that many are there: 1, else 0. */
static const char sem_acquire_src[] =
        ONCE_BEGIN "  local v = tonumber(redis.call('get', KEYS[1]))\n"
                   "  if v and v >= tonumber(ARGV[1]) then\n"
                   "    redis.call('decrby', KEYS[1], ARGV[1])\n"
                   "    return 1\n"
                   "  end\n"
                   "  return 0\n" ONCE_END;

/* Give ARGV[1] permits back (creating the counter); waiters hear the new
 * count. Returns it. */
static const char sem_release_src[] =
        ONCE_BEGIN "  local v = redis.call('incrby', KEYS[1], ARGV[1])\n"
                   "  redis.call(ARGV[2], KEYS[2], v)\n"
                   "  return v\n" ONCE_END;

/* Set ARGV[1] permits if the semaphore does not exist yet: 1, else 0. */
static const char sem_try_set_src[] =
        ONCE_BEGIN "  if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
                   "  redis.call('set', KEYS[1], ARGV[1])\n"
                   "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
                   "  return 1\n" ONCE_END;

/* Add ARGV[1] (negative too) to the permits; returns the new count. */
static const char sem_add_src[] =
        ONCE_BEGIN "  local v = (tonumber(redis.call('get', KEYS[1])) or 0) + "
                   "tonumber(ARGV[1])\n"
                   "  redis.call('set', KEYS[1], v)\n"
                   "  redis.call(ARGV[2], KEYS[2], v)\n"
                   "  return v\n" ONCE_END;

/* Set the permits to ARGV[1], whatever they were; returns it. */
static const char sem_set_src[] =
        ONCE_BEGIN "  redis.call('set', KEYS[1], ARGV[1])\n"
                   "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
                   "  return tonumber(ARGV[1])\n" ONCE_END;

/* Take every permit there is; returns how many (0 if none). */
static const char sem_drain_src[] =
        ONCE_BEGIN "  local v = tonumber(redis.call('get', KEYS[1]))\n"
                   "  if not v then return 0 end\n"
                   "  redis.call('set', KEYS[1], 0)\n"
                   "  return v\n" ONCE_END;

/* Take back an acquire cut short (KEYS and ARGV as sem_acquire_src, the
 * same marker): if it took the permits, they go back (1); if it has not
 * run, a copy of it that lands later takes nothing (0). */
static const char sem_undo_src[] =
        "local m = redis.call('get', KEYS[3])\n"
        "if m == '1' then\n"
        "  redis.call('set', KEYS[3], 'undone', 'px', ARGV[#ARGV])\n"
        "  local v = redis.call('incrby', KEYS[1], ARGV[1])\n"
        "  redis.call(ARGV[2], KEYS[2], v)\n"
        "  return 1\n"
        "end\n"
        "if not m then\n"
        "  redis.call('set', KEYS[3], 'undone', 'px', ARGV[#ARGV])\n"
        "end\n"
        "return 0\n";

/* ---- permit-expirable semaphore (PROTOCOL 9) ------------------------------
 * KEYS[1] the counter, KEYS[2] the leases {name}:timeout (raw 16-byte
 * permit id -> expiry, wall-clock ms, or 922337203685477 for none),
 * KEYS[3] the channel redisson_sc:{name}. ARGV[1] now (ms), ARGV[2] the
 * publish command. Each script first gives back the permits whose lease
 * ran out (at most ARGV[3] of them when limited). */
#define PSEM_RECLAIM                                                           \
	"local NONE = '922337203685477'\n"                                     \
	"local function reclaim(limit)\n"                                      \
	"  local ex\n"                                                         \
	"  if limit then\n"                                                    \
	"    ex = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], "           \
	"'limit', 0, limit)\n"                                                 \
	"  else\n"                                                             \
	"    ex = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1])\n"          \
	"  end\n"                                                              \
	"  if #ex == 0 then return nil end\n"                                  \
	"  for i = 1, #ex do redis.call('zrem', KEYS[2], ex[i]) end\n"         \
	"  local v = redis.call('incrby', KEYS[1], #ex)\n"                     \
	"  if v > 0 then redis.call(ARGV[2], KEYS[3], v) end\n"                \
	"  return v\n"                                                         \
	"end\n"

/* ARGV[3] n, ARGV[4] the expiry of the new permits, ARGV[5..] their n
 * ids. Acquired: {1} (also when a resent copy finds its first id taken
 * already). Not enough permits: ms until the nearest lease ends, or -1
 * when no lease ends by itself (wait for a release). */
static const char psem_acquire_src[] = PSEM_RECLAIM
        "reclaim(tonumber(ARGV[3]))\n"
        "if redis.call('zscore', KEYS[2], ARGV[5]) then return {1} end\n"
        "local n = tonumber(ARGV[3])\n"
        "local v = tonumber(redis.call('get', KEYS[1]))\n"
        "if v and v >= n then\n"
        "  redis.call('decrby', KEYS[1], n)\n"
        "  for i = 1, n do\n"
        "    redis.call('zadd', KEYS[2], ARGV[4], ARGV[4 + i])\n"
        "  end\n"
        "  local ttl = redis.call('pttl', KEYS[1])\n"
        "  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end\n"
        "  return {1}\n"
        "end\n"
        "local low = redis.call('zrange', KEYS[2], 0, 0, 'withscores')\n"
        "if #low == 2 and low[2] ~= NONE then\n"
        "  return math.max(1, tonumber(low[2]) - tonumber(ARGV[1]))\n"
        "end\n"
        "return -1\n";

/* ARGV[3] the id. Released: 1; its lease had ended (the permit goes back
 * all the same): 0; no such permit: -1. (KEYS[4] a request marker, ARGV[4]
 * its lifetime: a copy resent after a lost reply answers as the first
 * run did, not "no such permit".) */
static const char psem_release_src[] =
        ONCE_BEGIN "  local s = redis.call('zscore', KEYS[2], ARGV[3])\n"
                   "  if not s then return -1 end\n"
                   "  redis.call('zrem', KEYS[2], ARGV[3])\n"
                   "  local v = redis.call('incrby', KEYS[1], 1)\n"
                   "  redis.call(ARGV[2], KEYS[3], v)\n"
                   "  if tonumber(s) <= tonumber(ARGV[1]) then return 0 end\n"
                   "  return 1\n" ONCE_END;

/* Available permits. */
static const char psem_available_src[] =
        PSEM_RECLAIM "local v = reclaim(nil)\n"
                     "if v then return v end\n"
                     "return tonumber(redis.call('get', KEYS[1])) or 0\n";

/* All permits: available plus acquired. */
static const char psem_permits_src[] = PSEM_RECLAIM
        "reclaim(nil)\n"
        "local v = redis.call('get', KEYS[1])\n"
        "if not v then return 0 end\n"
        "return tonumber(v) + redis.call('zcount', KEYS[2], 0, '+inf')\n";

/* Acquired permits. */
static const char psem_acquired_src[] =
        PSEM_RECLAIM "reclaim(nil)\n"
                     "return redis.call('zcount', KEYS[2], 0, '+inf')\n";

/* ARGV[3] n: set n permits if the semaphore does not exist: 1, else 0.
 * (KEYS[4] a request marker, ARGV[4] its lifetime.) */
static const char psem_try_set_src[] =
        ONCE_BEGIN "  if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
                   "  redis.call('set', KEYS[1], ARGV[3])\n"
                   "  redis.call(ARGV[2], KEYS[3], ARGV[3])\n"
                   "  return 1\n" ONCE_END;

/* ARGV[3] n: make the total (available plus acquired) n. Returns the
 * available permits afterwards (negative while more are out than n). */
static const char psem_set_src[] = PSEM_RECLAIM
        "reclaim(nil)\n"
        "local n = tonumber(ARGV[3])\n"
        "local v = tonumber(redis.call('get', KEYS[1]))\n"
        "if not v then\n"
        "  redis.call('set', KEYS[1], n)\n"
        "  redis.call(ARGV[2], KEYS[3], n)\n"
        "  return n\n"
        "end\n"
        "local total = v + redis.call('zcount', KEYS[2], 0, '+inf')\n"
        "if total ~= n then\n"
        "  v = redis.call('incrby', KEYS[1], n - total)\n"
        "  redis.call(ARGV[2], KEYS[3], n)\n"
        "end\n"
        "return v\n";

/* ARGV[3] delta (negative too): returns the available permits after.
 * (KEYS[4] a request marker, ARGV[4] its lifetime.) */
static const char psem_add_src[] =
        ONCE_BEGIN "  local v = (tonumber(redis.call('get', KEYS[1])) or 0) + "
                   "tonumber(ARGV[3])\n"
                   "  redis.call('set', KEYS[1], v)\n"
                   "  if tonumber(ARGV[3]) > 0 then\n"
                   "    redis.call(ARGV[2], KEYS[3], ARGV[3])\n"
                   "  end\n"
                   "  return v\n" ONCE_END;

/* ARGV[3] the id, ARGV[4] the new expiry (or NONE). 1 if the permit is
 * held, else 0. */
static const char psem_update_lease_src[] = PSEM_RECLAIM
        "reclaim(nil)\n"
        "if not redis.call('zscore', KEYS[2], ARGV[3]) then return 0 end\n"
        "redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])\n"
        "return 1\n";

/* ARGV[3] the id: ms left of its lease, -1 when it has none, -2 when
 * there is no such permit. */
static const char psem_lease_time_src[] =
        PSEM_RECLAIM "reclaim(nil)\n"
                     "local s = redis.call('zscore', KEYS[2], ARGV[3])\n"
                     "if not s then return -2 end\n"
                     "if s == NONE then return -1 end\n"
                     "return math.max(0, tonumber(s) - tonumber(ARGV[1]))\n";

/* ---- count-down latch (PROTOCOL 10) ---------------------------------------
 * KEYS[1] the counter, KEYS[2] the channel
 * redisson_countdownlatch__channel__{name}, (KEYS[3] a request marker).
 * ARGV[1] the publish command. */

/* ARGV[2] count: set it if the latch is not set: 1 (waiters hear "1",
 * the latch closed), else 0. */
static const char latch_try_set_src[] =
        ONCE_BEGIN "  if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
                   "  redis.call('set', KEYS[1], ARGV[2])\n"
                   "  redis.call(ARGV[1], KEYS[2], '1')\n"
                   "  return 1\n" ONCE_END;

/* One down; at zero the latch is deleted and waiters hear "0". Returns the
 * count left (0 or below when open). */
static const char latch_count_down_src[] =
        ONCE_BEGIN "  local v = redis.call('decr', KEYS[1])\n"
                   "  if v <= 0 then redis.call('del', KEYS[1]) end\n"
                   "  if v == 0 then redis.call(ARGV[1], KEYS[2], '0') end\n"
                   "  return v\n" ONCE_END;

/* Delete the latch: 1 if it existed (waiters hear "1"), else 0. */
static const char latch_delete_src[] =
        "if redis.call('del', KEYS[1]) == 1 then\n"
        "  redis.call(ARGV[1], KEYS[2], '1')\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* ---- the default lock's waiting line (hilock's own, beside RLock) ---------
 * The reentrant and non-reentrant locks keep RLock's hash, lease and
 * unlock message, and their waiters queue in a line of hilock's own, so
 * that a release wakes one waiter instead of all of them (docs/PROTOCOL.md,
 * "The waiting line"). LINE, the line: a sorted set, client id -> ticket
 * (2 upwards, in order of arrival; a client's waiters for a name queue in
 * its own gate, and the first of them uses the client's one place); DL,
 * the places' deadlines: a sorted set, client id -> ms (Redis TIME). Both
 * are in the lock's slot, passed as arguments, not KEYS: a script that
 * declares keys that do not exist is refused while its slot migrates
 * (TRYAGAIN), and a lock must stay usable then. A client's own channel is
 * LINE .. ':' .. its id: the ticket that wakes it comes there, so a release
 * wakes one process, not every one that waits. A place lapses at its
 * deadline (its waiter stopped renewing it: gone, stopped, cut off); every
 * script that reads the line drops lapsed places first. */
/* clang-format off */
#define LINE_NOW                                                               \
	"local tm = redis.call('time')\n"                                      \
	"local now = tonumber(tm[1]) * 1000 + "                                \
	"math.floor(tonumber(tm[2]) / 1000)\n"
#define LINE_PURGE                                                             \
	"local gone = redis.call('zrangebyscore', DL, '-inf', now)\n"    \
	"for i = 1, #gone do\n"                                                \
	"  redis.call('zrem', LINE, gone[i])\n"                             \
	"  redis.call('zrem', DL, gone[i])\n"                             \
	"end\n"
/* A waiter takes its client's place at the end of the line (ticket: the
 * last one's plus one; the first place is 2) unless it has one (mine: its
 * ticket, or false: LINE_MINE), and renews its deadline: ID its client's
 * id, lease the place's lease ms; h the line's first ({} when empty)
 * becomes it when the line was empty. Leaves its ticket in mine. */
#define LINE_MINE(ID) "local mine = redis.call('zscore', LINE, " ID ")\n"
#define LINE_PLACE(ID)                                                         \
	"if not mine then\n"                                                   \
	"  local last = redis.call('zrange', LINE, -1, -1, 'withscores')\n"    \
	"  mine = 2\n"                                                         \
	"  if last[2] then mine = tonumber(last[2]) + 1 end\n"                 \
	"  redis.call('zadd', LINE, mine, " ID ")\n"                           \
	"  if not h[1] then h = {" ID ", mine} end\n"                          \
	"end\n"                                                                \
	"redis.call('zadd', DL, now + lease, " ID ")\n"                        \
	"redis.call('pexpire', LINE, lease)\n"                                 \
	"redis.call('pexpire', DL, lease)\n"
/* Tell the first in line (h: {client, ticket}) that the lock is free: its
 * ticket on its own channel (ARGV[PUB] the publish command). */
#define LINE_TELL(H, PUB)                                                      \
	"redis.call(" PUB ", LINE .. ':' .. " H "[1], " H "[2])\n"

/* Wake the first in line after a release, if anyone waits: LINE_TELL to
 * the first live place (lapsed ones dropped first). Leaves in t the
 * ticket told (0: none). */
#define LINE_WAKE_FIRST(PUB)                                                   \
	"local t = 0\n"                                                        \
	"if redis.call('exists', LINE) == 1 then\n"                            \
	LINE_NOW                                                               \
	LINE_PURGE                                                             \
	"  local h = redis.call('zrange', LINE, 0, 0, 'withscores')\n"         \
	"  if h[1] then\n"                                                     \
	"    " LINE_TELL("h", PUB)                                             \
	"    t = tonumber(h[2])\n"                                             \
	"  end\n"                                                              \
	"end\n"

/* ARGV[1] lease ms, ARGV[2] owner, ARGV[3] hold count once acquired,
 * ARGV[4] "1": a waiter, which takes (or renews) its client's place in the
 * line when it does not get the lock, "0": one attempt, which does not;
 * ARGV[5] the place's lease ms, ARGV[6] publish command, ARGV[7] the
 * client's id, ARGV[8] LINE, ARGV[9] DL; KEYS[1] the lock. A free lock
 * goes to the line's first (or to anyone while
 * the line is empty); a re-entry always. Acquired: {hold count}. Not: {ms
 * to wait at most (a waiter: at most half its place's lease, by when it
 * renews it), its ticket (0: no place), 1 if first in line}. A free lock
 * whose first place lapsed here is announced to the next first: nobody
 * else would wake it. */
static const char line_acquire_src[] =
	"local LINE, DL = ARGV[8], ARGV[9]\n"
	"local held = redis.call('exists', KEYS[1]) == 1\n"
	"if held and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
	"  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
	"  redis.call('pexpire', KEYS[1], ARGV[1])\n"
	"  return {tonumber(ARGV[3])}\n"
	"end\n"
	"local lined = redis.call('exists', LINE) == 1\n"
	"if not held and not lined then\n"
	"  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
	"  redis.call('pexpire', KEYS[1], ARGV[1])\n"
	"  return {tonumber(ARGV[3])}\n"
	"end\n"
	LINE_NOW
	"local purged = 0\n"
	"if lined then\n"
	LINE_PURGE
	"  purged = #gone\n"
	"end\n"
	"local h = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"if not held and (not h[1] or h[1] == ARGV[7]) then\n"
	"  if h[1] then\n"
	"    redis.call('zrem', LINE, ARGV[7])\n"
	"    redis.call('zrem', DL, ARGV[7])\n"
	"  end\n"
	"  redis.call('hset', KEYS[1], ARGV[2], ARGV[3])\n"
	"  redis.call('pexpire', KEYS[1], ARGV[1])\n"
	"  return {tonumber(ARGV[3])}\n"
	"end\n"
	"local lease = tonumber(ARGV[5])\n"
	LINE_MINE("ARGV[7]")
	"if ARGV[4] == '1' then\n"
	LINE_PLACE("ARGV[7]")
	"end\n"
	"local wait\n"
	"if held then\n"
	"  wait = redis.call('pttl', KEYS[1])\n"
	"  if wait < 0 then wait = lease end\n"
	"else\n"
	"  local d = redis.call('zscore', DL, h[1])\n"
	"  wait = d and tonumber(d) - now or 1\n"
	"  if purged > 0 then\n"
	"    " LINE_TELL("h", "ARGV[6]")
	"  end\n"
	"end\n"
	"if ARGV[4] == '1' and wait > math.floor(lease / 2) then\n"
	"  wait = math.floor(lease / 2)\n"
	"end\n"
	"if wait < 1 then wait = 1 end\n"
	"local first = 0\n"
	"if h[1] == ARGV[7] then first = 1 end\n"
	"return {wait, tonumber(mine) or 0, first}\n";

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] unlock message ("0"),
 * ARGV[2] lease ms, ARGV[3] owner, ARGV[4] publish command, ARGV[5] the
 * owner's hold count before this release (0: unknown), ARGV[6] LINE,
 * ARGV[7] DL. As release_src, and a release
 * that frees the lock also tells the first in line (its ticket, on its
 * client's channel). The unlock message goes out as Redisson's does, for
 * Redisson's waiters and hilock's first in line, which listens there too.
 * Released: {1, receivers of the unlock message, the ticket told (0:
 * none)}. */
static const char line_release_src[] =
	"local LINE, DL = ARGV[6], ARGV[7]\n"
	RELEASE_HOLD
	LINE_WAKE_FIRST("ARGV[4]")
	"return {1, redis.call(ARGV[4], KEYS[2], ARGV[1]), t}\n";

/* KEYS[1] the object (a lock, a semaphore). ARGV[1] the client's id,
 * ARGV[2] publish command, ARGV[3] LINE, ARGV[4] DL. A client none of
 * whose waiters waits any more leaves the line; if it was first, the next
 * first is told (it tries, and finds out). 1 if it had a place. */
static const char line_leave_src[] =
	"local LINE, DL = ARGV[3], ARGV[4]\n"
	"local h = redis.call('zrange', LINE, 0, 0)\n"
	"if redis.call('zrem', LINE, ARGV[1]) == 0 then return 0 end\n"
	"redis.call('zrem', DL, ARGV[1])\n"
	"if h[1] == ARGV[1] then\n"
	"  local n = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"  if n[1] then\n"
	"    " LINE_TELL("n", "ARGV[2]")
	"  end\n"
	"end\n"
	"return 1\n";

/* The semaphore's line (as the default lock's): KEYS[1] the counter,
 * KEYS[2] the channel redisson_sc:{name}, KEYS[3] the request marker;
 * ARGV[1] permits, ARGV[2] publish command, then ARGV[3] "1": a waiter,
 * "0": one attempt, ARGV[4] the place's lease ms, ARGV[5] the client's id,
 * ARGV[6] LINE, ARGV[7] DL, ARGV[8] the marker's lifetime. Permits go to
 * the first in line (to anyone while the line is empty) when there are
 * enough; the first that takes some and leaves some tells the next.
 * Answers (a number, so that the marker keeps it for a resent copy): 1
 * taken; 0 not, no place; -(2 x ticket + 1 if first) not, in line. */
static const char sem_line_acquire_src[] =
	ONCE_BEGIN
	"  local LINE, DL = ARGV[6], ARGV[7]\n"
	"  local n = tonumber(ARGV[1])\n"
	"  local v = tonumber(redis.call('get', KEYS[1])) or 0\n"
	"  local lined = redis.call('exists', LINE) == 1\n"
	"  if not lined then\n"
	"    if v >= n then\n"
	"      redis.call('decrby', KEYS[1], n)\n"
	"      return 1\n"
	"    end\n"
	"    if ARGV[3] ~= '1' then return 0 end\n"
	"  end\n"
	"  " LINE_NOW
	"  local purged = 0\n"
	"  if lined then\n"
	"  " LINE_PURGE
	"    purged = #gone\n"
	"  end\n"
	"  local h = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"  if (not h[1] or h[1] == ARGV[5]) and v >= n then\n"
	"    redis.call('decrby', KEYS[1], n)\n"
	"    if h[1] then\n"
	"      redis.call('zrem', LINE, ARGV[5])\n"
	"      redis.call('zrem', DL, ARGV[5])\n"
	"      local nx = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"      if nx[1] and v > n then\n"
	"        " LINE_TELL("nx", "ARGV[2]")
	"      end\n"
	"    end\n"
	"    return 1\n"
	"  end\n"
	"  if ARGV[3] ~= '1' then return 0 end\n"
	"  local lease = tonumber(ARGV[4])\n"
	"  " LINE_MINE("ARGV[5]") LINE_PLACE("ARGV[5]")
	"  if purged > 0 and v > 0 and h[1] ~= ARGV[5] then\n"
	"    " LINE_TELL("h", "ARGV[2]")
	"  end\n"
	"  local first = 0\n"
	"  if h[1] == ARGV[5] then first = 1 end\n"
	"  return -(2 * tonumber(mine) + first)\n"
	ONCE_END;

/* As sem_release_src (KEYS as above; ARGV[1] permits, ARGV[2] publish
 * command, ARGV[3] LINE, ARGV[4] DL, ARGV[5] the marker's lifetime), and
 * the first in line is told its turn. Returns the new count. */
static const char sem_line_release_src[] =
	ONCE_BEGIN
	"  local LINE, DL = ARGV[3], ARGV[4]\n"
	"  local v = redis.call('incrby', KEYS[1], ARGV[1])\n"
	LINE_WAKE_FIRST("ARGV[2]")
	"  redis.call(ARGV[2], KEYS[2], v)\n"
	"  return v\n"
	ONCE_END;

/* The permit-expirable semaphore's line (as the semaphore's): KEYS as
 * psem_acquire_src's (the counter, the leases, the channel); ARGV[1] now
 * (wall-clock ms, the leases' clock), ARGV[2] publish command, ARGV[3] n,
 * ARGV[4] the new permits' expiry, ARGV[5] "1": a waiter, "0": one
 * attempt, ARGV[6] the place's lease ms, ARGV[7] the client's id, ARGV[8]
 * LINE, ARGV[9] DL, ARGV[10..] the n ids. Permits go to the first in line
 * (to anyone while the line is empty) when there are enough; the first
 * that takes some and leaves some tells the next. Acquired: {1} (also a
 * resent copy that finds its first id taken). Not: {ms until the nearest
 * lease ends (-1: none ends by itself), its ticket (0: no place), 1 if
 * first in line}. The line's deadlines are on Redis's clock (TIME), the
 * leases on the callers' (ARGV[1]), as Redisson keeps them. */
static const char psem_line_acquire_src[] = PSEM_RECLAIM
	"local LINE, DL = ARGV[8], ARGV[9]\n"
	"local n = tonumber(ARGV[3])\n"
	"reclaim(n)\n"
	"if redis.call('zscore', KEYS[2], ARGV[10]) then return {1} end\n"
	"local function take()\n"
	"  redis.call('decrby', KEYS[1], n)\n"
	"  for i = 1, n do\n"
	"    redis.call('zadd', KEYS[2], ARGV[4], ARGV[9 + i])\n"
	"  end\n"
	"  local ttl = redis.call('pttl', KEYS[1])\n"
	"  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end\n"
	"end\n"
	"local v = tonumber(redis.call('get', KEYS[1])) or 0\n"
	"local lined = redis.call('exists', LINE) == 1\n"
	"if not lined and v >= n then\n"
	"  take()\n"
	"  return {1}\n"
	"end\n"
	"local wait = -1\n"
	"local low = redis.call('zrange', KEYS[2], 0, 0, 'withscores')\n"
	"if #low == 2 and low[2] ~= NONE then\n"
	"  wait = math.max(1, tonumber(low[2]) - tonumber(ARGV[1]))\n"
	"end\n"
	"if not lined and ARGV[5] ~= '1' then return {wait, 0, 0} end\n"
	LINE_NOW
	"local purged = 0\n"
	"if lined then\n"
	LINE_PURGE
	"  purged = #gone\n"
	"end\n"
	"local h = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"if (not h[1] or h[1] == ARGV[7]) and v >= n then\n"
	"  take()\n"
	"  if h[1] then\n"
	"    redis.call('zrem', LINE, ARGV[7])\n"
	"    redis.call('zrem', DL, ARGV[7])\n"
	"    local nx = redis.call('zrange', LINE, 0, 0, 'withscores')\n"
	"    if nx[1] and v > n then\n"
	"      " LINE_TELL("nx", "ARGV[2]")
	"    end\n"
	"  end\n"
	"  return {1}\n"
	"end\n"
	"if ARGV[5] ~= '1' then return {wait, 0, 0} end\n"
	"local lease = tonumber(ARGV[6])\n"
	LINE_MINE("ARGV[7]") LINE_PLACE("ARGV[7]")
	"if purged > 0 and v > 0 and h[1] ~= ARGV[7] then\n"
	"  " LINE_TELL("h", "ARGV[2]")
	"end\n"
	"local first = 0\n"
	"if h[1] == ARGV[7] then first = 1 end\n"
	"return {wait, tonumber(mine), first}\n";

/* As psem_release_src (KEYS[4] the request marker; ARGV[3] the id,
 * ARGV[4] LINE, ARGV[5] DL, ARGV[6] the marker's lifetime), and the first
 * in line is told its turn. */
static const char psem_line_release_src[] =
	ONCE_BEGIN
	"  local LINE, DL = ARGV[4], ARGV[5]\n"
	"  local s = redis.call('zscore', KEYS[2], ARGV[3])\n"
	"  if not s then return -1 end\n"
	"  redis.call('zrem', KEYS[2], ARGV[3])\n"
	"  local v = redis.call('incrby', KEYS[1], 1)\n"
	LINE_WAKE_FIRST("ARGV[2]")
	"  redis.call(ARGV[2], KEYS[3], v)\n"
	"  if tonumber(s) <= tonumber(ARGV[1]) then return 0 end\n"
	"  return 1\n"
	ONCE_END;
/* clang-format on */

static const hl_script scripts[HL_SCRIPT_COUNT] = {
        {"acquire", acquire_src},
        {"release", release_src},
        {"force-unlock", force_unlock_src},
        {"renew", renew_src},
        {"fenced-acquire", fenced_acquire_src},
        {"fair-acquire", fair_acquire_src},
        {"fair-release", fair_release_src},
        {"fair-force-unlock", fair_force_unlock_src},
        {"fair-give-up", fair_give_up_src},
        {"read-acquire", read_acquire_src},
        {"read-release", read_release_src},
        {"write-acquire", write_acquire_src},
        {"write-release", write_release_src},
        {"rw-force-unlock", rw_force_unlock_src},
        {"rw-is-locked", rw_is_locked_src},
        {"semaphore-acquire", sem_acquire_src},
        {"semaphore-release", sem_release_src},
        {"semaphore-try-set", sem_try_set_src},
        {"semaphore-add", sem_add_src},
        {"semaphore-set", sem_set_src},
        {"semaphore-drain", sem_drain_src},
        {"semaphore-undo", sem_undo_src},
        {"permit-acquire", psem_acquire_src},
        {"permit-release", psem_release_src},
        {"permit-available", psem_available_src},
        {"permit-permits", psem_permits_src},
        {"permit-acquired", psem_acquired_src},
        {"permit-try-set", psem_try_set_src},
        {"permit-set", psem_set_src},
        {"permit-add", psem_add_src},
        {"permit-update-lease", psem_update_lease_src},
        {"permit-lease-time", psem_lease_time_src},
        {"latch-try-set", latch_try_set_src},
        {"latch-count-down", latch_count_down_src},
        {"latch-delete", latch_delete_src},
        {"line-acquire", line_acquire_src},
        {"line-release", line_release_src},
        {"line-leave", line_leave_src},
        {"semaphore-line-acquire", sem_line_acquire_src},
        {"semaphore-line-release", sem_line_release_src},
        {"permit-line-acquire", psem_line_acquire_src},
        {"permit-line-release", psem_line_release_src},
};

const hl_script *hl__script(enum hl_script_id id)
{
	return &scripts[id];
}
