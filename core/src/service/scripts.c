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

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] unlock message ("0"; empty
 * for the spin lock, which publishes nothing), ARGV[2] lease ms, ARGV[3]
 * owner, ARGV[4] publish command, ARGV[5] the owner's hold count before
 * this release (0: unknown, one less than Redis has). Not held by owner:
 * -1. Still held (reentrant): 0. Released: {1, number of subscribers the
 * message reached}. */
static const char release_src[] =
        "local v = redis.call('hget', KEYS[1], ARGV[3])\n"
        "if not v then\n"
        "  return -1\n"
        "end\n"
        "local n = tonumber(ARGV[5])\n"
        "if n == 0 then\n"
        "  n = tonumber(v)\n"
        "end\n"
        "if n > 1 then\n"
        "  redis.call('hset', KEYS[1], ARGV[3], n - 1)\n"
        "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
        "  return 0\n"
        "end\n"
        "redis.call('del', KEYS[1])\n"
        "if ARGV[1] == '' then\n"
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
};

const hl_script *hl__script(enum hl_script_id id)
{
	return &scripts[id];
}
