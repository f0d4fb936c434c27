"""The priority queue and deque (Redisson's RPriorityQueue and
RPriorityDeque): Java's String order (UTF-16 code units) with duplicates,
``add``/``poll``/``peek``, ``in``, ``len``, iteration by pages, the deque's
ends, Redisson's lock waited for, the comparator refused, lost replies,
bad input."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)

# In String.compareTo order: supplementary characters (UTF-16 surrogates,
# 0xD800..) before U+E000..U+FFFF, which UTF-8 byte order puts first.
VECTORS = ["", "\x00", "A", "AB", "a", "\u00e9", "\U00010000", "\U0001F600",
           "\U0010FFFF", "\ue000", "\uff21", "\uffff"]


def _java_key(s: str) -> bytes:
    return s.encode("utf-16-be")  # big-endian code units compare as Java


def calls(redis) -> int:  # type: ignore[no-untyped-def]
    for line in redis.cmd("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_order_with_duplicates(client, redis):
    assert sorted(VECTORS, key=_java_key) == VECTORS
    assert sorted(VECTORS) != VECTORS  # code points (and UTF-8) differ
    q = client.priority_queue("py:pq:order")
    assert isinstance(q, hilock.PriorityQueue)
    for v in list(reversed(VECTORS)) + VECTORS[::3]:
        assert q.add(v) is True
    want = sorted([v.encode() for v in VECTORS] + [v.encode() for v in VECTORS[::3]],
                  key=lambda b: _java_key(b.decode()))
    assert redis.cmd("LRANGE", "py:pq:order", 0, -1) == want
    assert list(q) == want and len(q) == len(want)
    assert all(v in q for v in VECTORS)
    assert "\uff22" not in q and 5 not in q
    assert q.peek() == b""
    got = []
    while True:
        v = q.poll()
        if v is None:
            break
        got.append(v)
    assert got == want
    assert q.poll() is None and q.peek() is None and len(q) == 0
    assert redis.cmd("EXISTS", "py:pq:order") == 0


def test_offer_remove_and_pages(client, redis):
    q = client.priority_queue("py:pq:ops")
    assert q.offer("b") is True and q.add("b") is True and q.add("a") is True
    assert q.remove("b") is True
    assert redis.cmd("LRANGE", "py:pq:ops", 0, -1) == [b"a", b"b"]
    assert q.remove("z") is False and q.contains("b") is True
    assert q.delete() is True
    values = ["k%05d" % ((i * 7919) % 1200) for i in range(2400)]
    for v in values:
        q.add(v)
    assert list(q) == sorted(v.encode() for v in values)  # 3 pages
    assert q.read_range(0, 2) == [b"k00000", b"k00000", b"k00001"]


def test_deque_ends(client, redis):
    d = client.priority_deque("py:pd:ends")
    assert isinstance(d, hilock.PriorityDeque)
    assert not hasattr(d, "add_first") and not hasattr(d, "offer_last")
    for v in ["m", "c", "x", "c"]:
        d.add(v)
    assert d.peek_first() == b"c" and d.peek_last() == b"x"
    assert d.poll_last() == b"x" and d.poll_first() == b"c" and d.poll() == b"c"
    assert list(d) == [b"m"] and len(d) == 1 and "m" in d
    assert d.poll_last() == b"m" and d.poll_last() is None


def test_waits_for_redissons_lock(client, redis):
    q = client.priority_queue("py:pq:locked")
    lock = "redisson_sortedset_lock:{py:pq:locked}"
    q.add("m")
    redis.cmd("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", 1)
    redis.cmd("PEXPIRE", lock, 30000)
    done = []
    t = threading.Thread(target=lambda: done.append((q.add("b"), q.poll())))
    before = calls(redis)
    t.start()
    deadline = time.monotonic() + 10
    while calls(redis) < before + 3:  # it polls
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not done and redis.cmd("LRANGE", "py:pq:locked", 0, -1) == [b"m"]
    redis.cmd("DEL", lock)  # Redisson's unlock
    t.join(10)
    assert done == [(True, b"b")]
    # an empty queue answers None at once, lock or not
    q.poll()
    redis.cmd("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", 1)
    t0 = time.monotonic()
    assert q.poll() is None
    assert time.monotonic() - t0 < 2
    redis.cmd("DEL", lock)


def test_comparator_refused(client, redis):
    q = client.priority_queue("py:pq:cmp")
    q.add("b")
    key = "{py:pq:cmp}:redisson_sortedset_comparator"
    redis.cmd("SET", key, "com.example.ReverseCmp:3f2a")
    for op in (q.add, q.offer, q.remove, q.__contains__):
        with pytest.raises(hilock.InvalidArgumentError, match="com.example.ReverseCmp") as e:
            op("a")
        assert key in str(e.value)
    assert len(q) == 1 and list(q) == [b"b"] and q.peek() == b"b"  # reads read


def test_bad_input(client, redis):
    q = client.priority_queue("py:pq:bad")
    with pytest.raises(hilock.InvalidArgumentError, match="UTF-8"):
        q.add(b"\xff")
    with pytest.raises(TypeError):
        q.add(5)  # type: ignore[arg-type]
    assert redis.cmd("EXISTS", "py:pq:bad") == 0
    assert q.add(b"a\x00b") is True and q.add(b"") is True and q.add("") is True
    assert list(q) == [b"", b"", b"a\x00b"]
    redis.cmd("DEL", "py:pq:bad")
    redis.cmd("SET", "py:pq:bad", "x")
    with pytest.raises(hilock.RedisError, match="another type"):
        q.add("a")
    with pytest.raises(hilock.RedisError, match="another type"):
        q.poll()
    with pytest.raises(hilock.RedisError):
        len(q)


def test_lost_replies(faultproxy, redis):  # noqa: F811
    """add is never resent (OutcomeUnknown, applied once); a poll is resent
    with its marker and answers what its first run took."""
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_delay=0.05) as c:
        q = c.priority_queue("py:pq:doubt")
        q.add("c")
        q.poll()
        q.add("c")
        q.add("a")
        proxy.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            q.add("b")
        deadline = time.monotonic() + 10
        while redis.cmd("LLEN", "py:pq:doubt") != 3:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proxy.delay(0)
        assert "b" in q
        proxy.delay(400)
        t = threading.Timer(0.5, proxy.delay, (0,))
        t.start()
        assert q.poll() == b"a"
        t.join()
        assert redis.cmd("LRANGE", "py:pq:doubt", 0, -1) == [b"b", b"c"]


# -- the priority blocking queue ---------------------------------------------


def test_blocking_take_and_poll_timeout(client, other_client, redis):
    q = client.priority_blocking_queue("py:pbq:take")
    assert isinstance(q, hilock.PriorityBlockingQueue)
    producer = other_client.priority_queue("py:pbq:take")
    assert q.poll() is None  # no wait
    t0 = time.monotonic()
    assert q.poll(0.3) is None
    assert time.monotonic() - t0 >= 0.28
    got = []
    t = threading.Thread(target=lambda: got.append(q.take()))
    t.start()
    deadline = time.monotonic() + 10
    while redis.cmd("PUBSUB", "NUMSUB", "hilock_priority_queue_channel:{py:pbq:take}")[1] != 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    producer.add("b")
    t.join(10)
    assert got == [b"b"]
    assert q.put("z") is True and q.take() == b"z"  # there: at once
    redis.cmd("RPUSH", "py:pbq:take", "j")  # a Java producer: no message
    assert q.poll(5) == b"j"
    assert len(q) == 0


def test_blocking_asyncio(client, redis):
    q = client.priority_blocking_queue("py:pbq:async")

    async def main():  # type: ignore[no-untyped-def]
        waiter = asyncio.ensure_future(q.take_async())
        await asyncio.sleep(0.2)
        assert not waiter.done()
        await asyncio.get_running_loop().run_in_executor(None, q.add, "v")
        assert await asyncio.wait_for(waiter, 10) == b"v"
        assert await q.poll_async(0.2) is None
        # a cancelled take takes nothing
        w = asyncio.ensure_future(q.take_async())
        await asyncio.sleep(0.1)
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w
        q.add("after")
        assert redis.cmd("LRANGE", "py:pbq:async", 0, -1) == [b"after"]

    asyncio.run(main())


# -- the priority blocking deque ---------------------------------------------


def test_blocking_deque_take_last(client, other_client, redis):
    q = client.priority_blocking_deque("py:pbd:last")
    assert isinstance(q, hilock.PriorityBlockingDeque)
    assert not hasattr(q, "add_first") and not hasattr(q, "offer_last")
    producer = other_client.priority_queue("py:pbd:last")
    for v in ("b", "c", "a"):
        assert q.put(v) is True
    assert q.peek_last() == b"c"
    assert q.take_last() == b"c"  # the last in order, at once
    assert q.poll_last(5) == b"b"
    assert q.take_first() == b"a"
    assert q.poll_last() is None  # no wait
    t0 = time.monotonic()
    assert q.poll_last(0.3) is None
    assert time.monotonic() - t0 >= 0.28
    got = []
    t = threading.Thread(target=lambda: got.append(q.take_last()))
    t.start()
    deadline = time.monotonic() + 10
    while redis.cmd("PUBSUB", "NUMSUB", "hilock_priority_queue_channel:{py:pbd:last}")[1] != 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    producer.add("x")  # a hilock add wakes it
    t.join(10)
    assert got == [b"x"]
    redis.cmd("RPUSH", "py:pbd:last", "a", "j")  # a Java producer: no message
    assert q.poll_last(5) == b"j"
    assert list(q) == [b"a"] and len(q) == 1
    assert q.take() == b"a"
    with pytest.raises(hilock.InvalidArgumentError):
        q.poll_last(-1)


def test_blocking_deque_asyncio(client, redis):
    q = client.priority_blocking_deque("py:pbd:async")

    async def main():  # type: ignore[no-untyped-def]
        waiter = asyncio.ensure_future(q.take_last_async())
        await asyncio.sleep(0.2)
        assert not waiter.done()
        await asyncio.get_running_loop().run_in_executor(None, q.add, "v")
        assert await asyncio.wait_for(waiter, 10) == b"v"
        assert await q.poll_last_async(0.2) is None
        q.add("a")
        q.add("b")
        assert await q.take_last_async() == b"b"
        assert await q.take_first_async() == b"a"
        # a cancelled take takes nothing
        w = asyncio.ensure_future(q.take_last_async())
        await asyncio.sleep(0.1)
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w
        q.add("after")
        assert redis.cmd("LRANGE", "py:pbd:async", 0, -1) == [b"after"]

    asyncio.run(main())


def test_blocking_deque_take_last_lost_reply(faultproxy, redis):  # noqa: F811
    """A take_last whose reply is lost answers what it took."""
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_attempts=40, retry_delay=0.05) as c:
        q = c.priority_blocking_deque("py:pbd:doubt")
        q.add("z")
        assert q.take_last() == b"z"  # scripts cached
        q.add("b")
        q.add("a")
        proxy.delay(400)
        t = threading.Timer(0.6, proxy.delay, (0,))
        t.start()
        assert q.take_last() == b"b"
        t.join()
        assert redis.cmd("LRANGE", "py:pbd:doubt", 0, -1) == [b"a"]
