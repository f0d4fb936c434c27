/*
 * The Lua scripts. Each is one atomic step of PROTOCOL.md (RLock, section
 * 2; renewal, section 1), written for hilock. Redis state and messages
 * match Redisson; return values are our own, shaped for the C side.
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

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] unlock message ("0"),
 * ARGV[2] lease ms, ARGV[3] owner, ARGV[4] publish command, ARGV[5] the
 * owner's hold count before this release (0: unknown, one less than Redis
 * has). Not held by owner: -1. Still held (reentrant): 0. Released: {1,
 * number of subscribers the message reached}. */
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
        "return {1, redis.call(ARGV[4], KEYS[2], ARGV[1])}\n";

/* KEYS[1] lock name, KEYS[2] channel. ARGV[1] message, ARGV[2] publish
 * command. 1 if the lock existed. */
static const char force_unlock_src[] =
        "if redis.call('del', KEYS[1]) == 1 then\n"
        "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
        "  return 1\n"
        "end\n"
        "return 0\n";

/* KEYS lock names; ARGV[1] lease ms, ARGV[i + 1] owner of KEYS[i].
 * Returns one 1 (renewed) or 0 (not held by that owner) per key. */
static const char renew_src[] =
        "local r = {}\n"
        "for i = 1, #KEYS do\n"
        "  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then\n"
        "    redis.call('pexpire', KEYS[i], ARGV[1])\n"
        "    r[i] = 1\n"
        "  else\n"
        "    r[i] = 0\n"
        "  end\n"
        "end\n"
        "return r\n";

static const hl_script scripts[HL_SCRIPT_COUNT] = {
        {"acquire", acquire_src},
        {"release", release_src},
        {"force-unlock", force_unlock_src},
        {"renew", renew_src},
};

const hl_script *hl__script(enum hl_script_id id)
{
	return &scripts[id];
}
