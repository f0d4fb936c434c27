"""The rate limiter (Redisson RRateLimiter): Redisson's keys, the rate in
every window across threads, waits and retry-after, asyncio waits without
threads, a lost reply, per-client keys, bad input."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def run(coro, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    async def bounded():  # type: ignore[no-untyped-def]
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def test_keys_and_config(client, redis) -> None:  # type: ignore[no-untyped-def]
    rl = client.rate_limiter("py:rl")
    assert isinstance(rl, hilock.RateLimiter)
    assert rl.try_set_rate("overall", 3, 2.0) is True
    assert rl.try_set_rate("per_client", 9, 5.0) is False
    assert redis.cmd("HGET", "py:rl", "rate") == b"3"
    assert redis.cmd("HGET", "py:rl", "interval") == b"2000"
    assert redis.cmd("HGET", "py:rl", "type") == b"0"
    assert rl.get_config() == {"rate": 3, "interval": 2.0, "mode": "overall", "keep_alive": None}
    assert rl.try_acquire() is True
    assert rl.try_acquire(2) is True
    member = redis.cmd("ZRANGE", "{py:rl}:permits", 0, 0)[0]
    assert len(member) == 21 and member[0] == 0x10
    assert redis.cmd("GET", "{py:rl}:value") == b"0"
    taken, retry = rl.try_acquire_ex()
    assert taken is False and 1.0 < retry <= 2.003
    assert rl.available_permits() == 0
    rl.release(2)
    assert rl.available_permits() == 2
    rl.set_rate("overall", 5, 1.0, keep_alive=10.0)
    assert rl.get_config() == {"rate": 5, "interval": 1.0, "mode": "overall", "keep_alive": 10.0}
    assert 0 < redis.cmd("PTTL", "py:rl") <= 10000


def test_rate_in_every_window_across_threads(client) -> None:  # type: ignore[no-untyped-def]
    rate, interval = 4, 0.4
    rl = client.rate_limiter("py:rl:win")
    rl.try_set_rate("overall", rate, interval)
    grants: list = []
    mu = threading.Lock()
    end = time.monotonic() + 1.8

    def take() -> None:
        while time.monotonic() < end:
            lo = time.time()
            ok, retry = rl.try_acquire_ex()
            hi = time.time()
            if ok:
                with mu:
                    grants.append((lo, hi))
            else:
                assert 0 < retry <= interval + 0.003
                time.sleep(retry / 2)

    ts = [threading.Thread(target=take) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    grants.sort()
    assert rate * 2 <= len(grants) <= rate * 7
    for i in range(len(grants) - rate):
        span = max(h for _, h in grants[i:i + rate + 1]) - grants[i][0]
        assert span >= interval - 0.001, "%d grants within %.3f s" % (rate + 1, span)


def test_waits(client) -> None:  # type: ignore[no-untyped-def]
    rl = client.rate_limiter("py:rl:wait")
    rl.try_set_rate("overall", 1, 1.0)
    assert rl.try_acquire()
    t0 = time.monotonic()
    assert rl.try_acquire(timeout=0.2) is False  # the permit is 1 s away
    assert time.monotonic() - t0 < 0.2
    t0 = time.monotonic()
    assert rl.try_acquire(timeout=5) is True
    assert 0.7 <= time.monotonic() - t0 < 4
    t0 = time.monotonic()
    rl.acquire()
    assert 0.7 <= time.monotonic() - t0 < 4


def test_async_waits_take_no_thread(client) -> None:  # type: ignore[no-untyped-def]
    rl = client.rate_limiter("py:rl:async")
    rl.try_set_rate("overall", 5, 0.3)

    async def main() -> float:
        assert await rl.try_acquire_async(5)
        before = threading.active_count()
        t0 = time.monotonic()
        waits = [asyncio.ensure_future(rl.acquire_async()) for _ in range(20)]
        await asyncio.sleep(0.05)
        assert threading.active_count() - before < 5
        await asyncio.gather(*waits)
        took = time.monotonic() - t0
        assert await rl.try_acquire_async(1, timeout=0) is False
        # a cancelled wait takes nothing
        rl.set_rate("overall", 1, 60.0)
        assert await rl.try_acquire_async()
        w = asyncio.ensure_future(rl.try_acquire_async(1, timeout=None))
        await asyncio.sleep(0.2)
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w
        assert rl.available_permits() == 0
        return took

    took = run(main())
    assert took >= 4 * 0.3 - 0.05


def test_per_client(client, other_client, redis) -> None:  # type: ignore[no-untyped-def]
    a = client.rate_limiter("py:rl:pc")
    b = other_client.rate_limiter("py:rl:pc")
    assert a.try_set_rate("per_client", 1, 60)
    assert a.try_acquire() and not a.try_acquire()
    assert b.try_acquire()
    keys = sorted(redis.cmd("KEYS", "{py:rl:pc}:value:*"))
    assert len(keys) == 2


def test_lost_reply_takes_once(redis_server, redis, faultproxy) -> None:  # type: ignore[no-untyped-def]
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=20, retry_delay=0.05)
    try:
        warm = c.rate_limiter("py:rl:warm")
        warm.try_set_rate("overall", 1, 1)
        warm.try_acquire()
        rl = c.rate_limiter("py:rl:doubt")
        rl.try_set_rate("overall", 10, 60)
        assert rl.available_permits() == 10
        p.delay(400)
        done = []
        t = threading.Thread(target=lambda: done.append(rl.try_acquire(3, timeout=10)))
        t.start()
        deadline = time.monotonic() + 10
        while not redis.cmd("ZCARD", "{py:rl:doubt}:permits") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        p.delay(0)
        t.join(20)
        assert done == [True]
        time.sleep(0.5)
        assert redis.cmd("ZCARD", "{py:rl:doubt}:permits") == 1
        assert redis.cmd("GET", "{py:rl:doubt}:value") == b"7"
    finally:
        c.close()


def test_bad_input(client, redis) -> None:  # type: ignore[no-untyped-def]
    rl = client.rate_limiter("py:rl:bad")
    with pytest.raises(hilock.InvalidArgumentError, match="no rate"):
        rl.try_acquire()
    with pytest.raises(hilock.InvalidArgumentError, match="rate = 0"):
        rl.try_set_rate("overall", 0, 1)
    with pytest.raises(hilock.InvalidArgumentError, match="mode"):
        rl.try_set_rate("sideways", 1, 1)
    with pytest.raises(hilock.InvalidArgumentError, match="shorter than the interval"):
        rl.try_set_rate("overall", 1, 2, keep_alive=1)
    with pytest.raises(hilock.InvalidArgumentError):
        rl.try_set_rate("overall", 1, 0)
    with pytest.raises(TypeError):
        rl.try_set_rate("overall", "1", 1)
    assert redis.cmd("EXISTS", "py:rl:bad") == 0
    rl.try_set_rate("overall", 2, 1)
    with pytest.raises(hilock.InvalidArgumentError, match="more than the rate"):
        rl.try_acquire(3)
    with pytest.raises(hilock.InvalidArgumentError):
        rl.try_acquire(0)
    with pytest.raises(hilock.InvalidArgumentError):
        rl.try_acquire(-1)
    with pytest.raises(hilock.InvalidArgumentError):
        rl.try_acquire(1, timeout=-1)
    with pytest.raises(hilock.InvalidArgumentError):
        rl.release(-2)
    redis.cmd("SET", "py:rl:str", "x")
    with pytest.raises(hilock.RedisError, match="another type"):
        client.rate_limiter("py:rl:str").try_acquire()
