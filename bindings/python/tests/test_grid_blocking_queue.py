"""The blocking queue (Redisson's RBlockingQueue): take wakes when another
client offers, poll(timeout) gives None after about the timeout, FIFO,
asyncio takes (many tasks on one blocking command, cancel loses nothing),
a lost BLMOVE reply through the fault proxy (delivered once), Redisson's
BLPOP consumers share it, a key of another type."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def _blocked(redis) -> int:  # type: ignore[no-untyped-def]
    info = redis.cmd("INFO", "clients").decode()
    return int(info.split("blocked_clients:")[1].split()[0])


def _wait(pred, limit: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_ops_and_fifo(client, redis):
    q = client.blocking_queue("py:bq:ops")
    assert isinstance(q, hilock.BlockingQueue)
    assert q.offer("a") is True
    q.put(b"b")
    q.put("c\x00d")
    assert redis.cmd("LRANGE", "py:bq:ops", 0, -1) == [b"a", b"b", b"c\x00d"]
    assert len(q) == 3 and list(q) == [b"a", b"b", b"c\x00d"]
    assert q.take() == b"a"
    assert q.poll(1) == b"b"
    assert q.poll() == b"c\x00d"
    assert q.poll() is None
    for i in range(50):
        q.put(str(i))
    assert [q.take() if i % 2 else q.poll(1.0) for i in range(50)] == [str(i).encode() for i in range(50)]
    for v in ("x", "y", "z"):
        q.put(v)
    assert q.drain_to(2) == [b"x", b"y"]
    assert q.drain_to() == [b"z"]
    assert redis.cmd("KEYS", "hilock_inflight:*") == []
    assert redis.cmd("KEYS", "hilock_consumers:*") == []


def test_take_wakes_when_another_client_offers(client, other_client, redis):
    q = client.blocking_queue("py:bq:wake")
    got = []
    t = threading.Thread(target=lambda: got.append(q.take()))
    t.start()
    _wait(lambda: _blocked(redis) >= 1)
    assert got == []
    other_client.blocking_queue("py:bq:wake").offer("hello")
    t.join(10)
    assert got == [b"hello"]


def test_poll_timeout_gives_none(client, redis):
    q = client.blocking_queue("py:bq:timeout")
    t0 = time.monotonic()
    assert q.poll(0.5) is None
    assert 0.45 <= time.monotonic() - t0 < 5
    with pytest.raises(hilock.InvalidArgumentError):
        q.poll(-1)
    assert redis.cmd("KEYS", "hilock_*") == []


def test_async_takes_share_one_command(client, other_client, redis):
    q = client.blocking_queue("py:bq:async")
    p = other_client.blocking_queue("py:bq:async")

    async def main() -> None:
        tasks = [asyncio.ensure_future(q.take_async()) for _ in range(200)]
        await asyncio.sleep(0.3)
        assert _blocked(redis) == 1  # one blocking command for all
        for i in range(200):
            p.put(str(i))
        got = await asyncio.wait_for(asyncio.gather(*tasks), 20)
        assert got == [str(i).encode() for i in range(200)]
        assert await q.poll_async(0.3) is None
        # a cancelled take loses nothing
        t = asyncio.ensure_future(q.take_async())
        await asyncio.sleep(0.2)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        p.put("kept")
        await asyncio.sleep(0.1)
        assert redis.cmd("LRANGE", "py:bq:async", 0, -1) == [b"kept"]

    asyncio.run(main())
    assert redis.cmd("KEYS", "hilock_inflight:*") == []


def test_lost_take_reply_delivered_once(faultproxy, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=20, retry_delay=0.05,
                      watchdog_timeout=0.9)
    try:
        q = c.blocking_queue("py:bq:lost")
        got = []
        t = threading.Thread(target=lambda: got.append(q.take()))
        t.start()
        _wait(lambda: _blocked(redis) >= 1)
        p.delay(3000)
        redis.cmd("RPUSH", "py:bq:lost", "only", "next")
        _wait(lambda: len(redis.cmd("KEYS", "hilock_inflight:*")) == 1)
        p.reset()
        p.delay(0)
        t.join(20)
        assert got == [b"only"]
        assert redis.cmd("LRANGE", "py:bq:lost", 0, -1) == [b"next"]
        assert q.take() == b"next"
        assert q.poll(0.2) is None
    finally:
        c.close()


def test_redisson_consumers_and_producers(client, redis):
    q = client.blocking_queue("py:bq:compat")
    q.offer("to-java")
    assert redis.cmd("BLPOP", "py:bq:compat", 1) == [b"py:bq:compat", b"to-java"]
    redis.cmd("RPUSH", "py:bq:compat", "j1")
    assert q.take() == b"j1"


def test_another_type(client, redis):
    redis.cmd("HSET", "py:bq:bad", "f", "v")
    q = client.blocking_queue("py:bq:bad")
    with pytest.raises(hilock.HilockError, match="another type"):
        q.take()
    with pytest.raises(hilock.HilockError):
        q.poll(0.1)


def test_blocking_deque(client, redis):
    d = client.blocking_deque("py:bd")
    assert isinstance(d, hilock.BlockingDeque)
    d.put_last("b")
    d.put_first("a")
    d.offer_last("c")
    assert redis.cmd("LRANGE", "py:bd", 0, -1) == [b"a", b"b", b"c"]
    assert d.take_last() == b"c"
    assert d.take_first() == b"a"
    assert d.poll_last(0.2) == b"b"
    t0 = time.monotonic()
    assert d.poll_last(0.3) is None and time.monotonic() - t0 >= 0.28
    assert d.poll_first() is None

    async def main() -> None:
        t = asyncio.ensure_future(d.take_last_async())
        await asyncio.sleep(0.2)
        redis.cmd("RPUSH", "py:bd", "x", "y")
        assert await asyncio.wait_for(t, 10) == b"y"
        assert await d.poll_first_async(1) == b"x"

    asyncio.run(main())
    assert redis.cmd("KEYS", "hilock_*") == []


def test_bounded_blocking_queue(client, redis):
    q = client.bounded_blocking_queue("py:bbq")
    assert isinstance(q, hilock.BoundedBlockingQueue)
    with pytest.raises(hilock.InvalidArgumentError, match="has not been set"):
        q.offer("a")
    assert q.try_set_capacity(2) is True and q.try_set_capacity(9) is False
    assert q.offer("a") and q.offer("b") and not q.offer("c")
    assert q.remaining_capacity() == 0
    t0 = time.monotonic()
    assert q.offer("c", timeout=0.3) is False and time.monotonic() - t0 >= 0.28
    done = []
    t = threading.Thread(target=lambda: done.append(q.put("c")))
    t.start()
    time.sleep(0.2)
    assert done == []
    assert q.take() == b"a"  # a unit back, published: the put lands
    t.join(10)
    assert done == [None]
    assert redis.cmd("LRANGE", "py:bbq", 0, -1) == [b"b", b"c"]
    assert q.poll_many(5) == [b"b", b"c"]
    assert q.remaining_capacity() == 2 == int(redis.cmd("GET", "redisson_bqs:{py:bbq}"))
    assert q.poll(0.1) is None

    async def main() -> None:
        assert await q.offer_async("x", 1) is True
        await q.put_async("y")
        p = asyncio.ensure_future(q.put_async("z"))
        await asyncio.sleep(0.2)
        assert not p.done()
        assert await q.take_async() == b"x"
        await asyncio.wait_for(p, 10)

    asyncio.run(main())
    assert redis.cmd("LRANGE", "py:bbq", 0, -1) == [b"y", b"z"]
    assert q.remaining_capacity() == 0
