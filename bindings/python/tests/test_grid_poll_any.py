"""BlockingQueue.poll_from_any (Redisson's pollFromAny): wakes on an offer
to another queue and says which, None after the timeout, the asyncio form,
a cancel that loses nothing, and two arrivals at once (one answered, the
other still queued)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import hilock


def _blocked(redis) -> int:  # type: ignore[no-untyped-def]
    info = redis.cmd("INFO", "clients").decode()
    return int(info.split("blocked_clients:")[1].split()[0])


def _wait(pred, limit: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _clean(redis) -> bool:  # type: ignore[no-untyped-def]
    return redis.cmd("KEYS", "hilock_inflight:*") == [] and redis.cmd("KEYS", "hilock_consumers:*") == []


def test_wakes_on_the_second_queue(client, other_client, redis):
    q = client.blocking_queue("py:pa:1")
    got = []
    t = threading.Thread(target=lambda: got.append(q.poll_from_any(20, "py:pa:2")))
    t.start()
    _wait(lambda: _blocked(redis) >= 2)
    assert got == []
    other_client.blocking_queue("py:pa:2").offer("x")
    t.join(10)
    assert got == [("py:pa:2", b"x")]
    # the other queue's pump ends by itself (CLIENT UNBLOCK); until then it
    # may hold a new element in flight for a moment (and give it back)
    _wait(lambda: _blocked(redis) == 0 and _clean(redis))
    other_client.blocking_queue("py:pa:1").offer("y")
    assert q.poll_from_any(0, "py:pa:2") == ("py:pa:1", b"y")
    _wait(lambda: _clean(redis))


def test_timeout_gives_none(client, redis):
    q = client.blocking_queue("py:pt:1")
    t0 = time.monotonic()
    assert q.poll_from_any(0.4, "py:pt:2", "py:pt:3") is None
    assert time.monotonic() - t0 >= 0.38
    assert q.poll_from_any(0, "py:pt:2") is None
    _wait(lambda: _clean(redis))


def test_bad_input(client, redis):
    q = client.blocking_queue("py:pz:1")
    with pytest.raises(hilock.InvalidArgumentError):
        q.poll_from_any(-1, "py:pz:2")
    with pytest.raises(TypeError):
        q.poll_from_any(1, 42)
    redis.cmd("SET", "py:pz:2", "str")
    with pytest.raises(hilock.HilockError, match="type"):
        q.poll_from_any(1, "py:pz:2")
    redis.cmd("DEL", "py:pz:2")


def test_async_and_cancel(client, other_client, redis):
    q = client.blocking_queue("py:pc:1")
    p2 = other_client.blocking_queue("py:pc:2")

    async def main() -> None:
        tasks = [asyncio.ensure_future(q.poll_from_any_async(20, "py:pc:2")) for _ in range(20)]
        await asyncio.sleep(0)
        while _blocked(redis) < 2:
            await asyncio.sleep(0.01)
        assert _blocked(redis) == 2  # one blocking command per queue
        for i in range(20):
            p2.offer(str(i))
        got = await asyncio.gather(*tasks)
        assert sorted(int(v) for _, v in got) == list(range(20))
        assert {n for n, _ in got} == {"py:pc:2"}
        # cancelled while it waits: the next element stays queued
        t = asyncio.ensure_future(q.poll_from_any_async(None, "py:pc:2"))
        while _blocked(redis) < 2:
            await asyncio.sleep(0.01)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        while _blocked(redis):
            await asyncio.sleep(0.01)
        p2.offer("kept")
        assert redis.cmd("LRANGE", "py:pc:2", 0, -1) == [b"kept"]

    asyncio.run(main())
    _wait(lambda: _clean(redis))


def test_two_at_once(client, redis):
    q = client.blocking_queue("py:pb:1")
    got = []
    t = threading.Thread(target=lambda: got.append(q.poll_from_any(20, "py:pb:2")))
    t.start()
    _wait(lambda: _blocked(redis) >= 2)
    redis.cmd("EVAL", "redis.call('RPUSH', KEYS[1], 'a'); redis.call('RPUSH', KEYS[2], 'b')",
              2, "py:pb:1", "py:pb:2")
    t.join(10)
    assert len(got) == 1 and got[0] in (("py:pb:1", b"a"), ("py:pb:2", b"b"))
    _wait(lambda: _clean(redis) and _blocked(redis) == 0)
    left = "py:pb:2" if got[0][0] == "py:pb:1" else "py:pb:1"
    assert redis.cmd("LLEN", left) == 1
    assert redis.cmd("LLEN", got[0][0]) == 0
    redis.cmd("DEL", left)
