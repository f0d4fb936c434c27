"""The delayed queue (Redisson RDelayedQueue): offer with a delay in
seconds, Redisson's keys and member bytes, not before its time and
promptly after, a consumer that only opened it moves elements, the waiting
part's operations, bad input; offer_async (a libhilock task): many at once
from one event loop, each element once and not early, a cancel."""
import asyncio
import struct
import threading
import time

import pytest

import hilock
from conftest import Resp
from faults import faultproxy  # noqa: F401 (a fixture)


def _wait_len(q, n, timeout=10.0):
    end = time.monotonic() + timeout
    while len(q) < n and time.monotonic() < end:
        time.sleep(0.005)
    return len(q)


def test_offer_moves_when_due(client, redis):
    d = client.delayed_queue("py:dq")
    q = client.queue("py:dq")
    t0 = time.monotonic()
    d.offer("late", 0.6)
    d.offer(b"soon\x00", 0.2)
    members = redis.cmd("LRANGE", "redisson_delay_queue:{py:dq}", "0", "-1")
    assert len(members) == 2
    m = members[0]
    assert m[0] == 8 and struct.unpack("<Q", m[9:17])[0] == 4 and m[17:] == b"late"
    assert len(d) == 2 and list(d) == [b"late", b"soon\x00"]
    assert d.peek() == b"late" and d.contains("soon\x00")
    assert len(q) == 0
    assert _wait_len(q, 1) == 1
    assert time.monotonic() - t0 >= 0.2
    assert q.poll() == b"soon\x00"
    assert _wait_len(q, 1) == 1
    assert time.monotonic() - t0 >= 0.6
    assert q.poll() == b"late"
    assert len(d) == 0
    assert redis.cmd("EXISTS", "redisson_delay_queue_timeout:{py:dq}") == 0


def test_consumer_alone_catches_up(client, other_client):
    d = client.delayed_queue("py:dq2")
    for i in range(5):
        d.offer(str(i), 0.05)
    d.destroy()
    time.sleep(0.4)
    q = other_client.queue("py:dq2")
    assert len(q) == 0  # nobody moved them
    consumer = other_client.delayed_queue("py:dq2")
    assert _wait_len(q, 5, 5.0) == 5
    # (due in the same ms they move in member order, as Redisson's)
    assert sorted(q.poll() for _ in range(5)) == [b"0", b"1", b"2", b"3", b"4"]
    del consumer


def test_waiting_part(client):
    d = client.delayed_queue("py:dq3")
    d.offer("a", 60)
    d.offer("b", 60)
    d.offer("c", 60)
    assert d.read_all() == [b"a", b"b", b"c"]
    assert d.poll() == b"a"
    assert d.remove("c") is True and d.remove("c") is False
    assert d.size() == 1
    d.clear()
    assert d.size() == 0 and d.peek() is None


def test_bad_input(client):
    d = client.delayed_queue("py:dq4")
    with pytest.raises(hilock.InvalidArgumentError):
        d.offer("x", -1)
    with pytest.raises(hilock.InvalidArgumentError):
        d.offer("x", float("nan"))
    with pytest.raises(hilock.InvalidArgumentError):
        d.offer("x", 1e12)
    with pytest.raises(TypeError):
        d.offer(5, 1)
    assert len(d) == 0


def test_two_movers_each_once(client, other_client):
    a = client.delayed_queue("py:dq5")
    b = other_client.delayed_queue("py:dq5")
    for i in range(200):
        (a if i % 2 else b).offer(str(i), (i * 7 % 300) / 1000.0)
    q = client.queue("py:dq5")
    assert _wait_len(q, 200, 15.0) == 200
    time.sleep(0.3)  # a second copy would show now
    got = q.poll_many(1000)
    assert len(got) == 200 and len(set(got)) == 200
    assert len(a) == 0 and len(b) == 0


class _Collector:
    """BLPOPs the destination on a connection of its own (a thread), noting
    the wall time (ms) each value arrived."""

    def __init__(self, port: int, name: str) -> None:
        self.got = []  # (value, wall ms)
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._r = Resp(port)
        self._name = name
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            v = self._r.cmd("BLPOP", self._name, "0.2")
            at = time.time() * 1000.0
            if v:
                with self._cond:
                    self.got.append((v[1], at))
                    self._cond.notify_all()

    def wait(self, n: int, timeout: float) -> int:
        with self._cond:
            self._cond.wait_for(lambda: len(self.got) >= n, timeout)
            return len(self.got)

    def close(self) -> None:
        self._stop.set()
        self._t.join(5)
        self._r.close()

    def check(self, n: int) -> None:
        """Exactly the n values 0..n-1 ("i:due_ms"), each once, none before
        its due time."""
        seen = {}
        for v, at in self.got:
            i, due = (int(x) for x in v.split(b":"))
            assert i not in seen, "element %d arrived twice" % i
            assert at >= due, "element %d arrived %.1f ms early" % (i, due - at)
            seen[i] = at
        assert sorted(seen) == list(range(n)), "%d arrivals of %d" % (len(self.got), n)


def test_offer_async_many_at_once_each_once_not_early(client, redis_server, redis):
    """500 offer_async from one event loop at once (libhilock tasks, no
    thread): each element reaches the destination once, none before its
    time, and promptly after; the loop never blocks on them."""
    name = "py:dq:async"
    d = client.delayed_queue(name)
    col = _Collector(redis_server.port, name)
    n = 500
    try:
        async def one(i: int) -> None:
            delay = (i * 13 % 700) / 1000.0  # 0 to 0.7 s
            due = int(time.time() * 1000) + int(delay * 1000)  # a lower bound
            await d.offer_async("%d:%d" % (i, due), delay)

        async def main() -> None:
            threads = threading.active_count()
            gaps = []
            stop = asyncio.Event()

            async def heartbeat() -> None:
                last = time.monotonic()
                while not stop.is_set():
                    await asyncio.sleep(0.005)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

            hb = asyncio.ensure_future(heartbeat())
            offers = asyncio.gather(*(one(i) for i in range(n)))
            await asyncio.sleep(0)
            assert threading.active_count() == threads  # no thread per offer
            await asyncio.wait_for(offers, 30)
            stop.set()
            await hb
            assert threading.active_count() == threads
            # the loop ran while 500 offers were in flight
            assert len(gaps) >= 1 and max(gaps) < 1.0, max(gaps)

        t0 = time.time() * 1000
        asyncio.run(main())
        assert col.wait(n, 20) == n
        time.sleep(0.3)  # a second copy would show now
        col.check(n)
        # promptly: the last was due by about +0.7 s (plus the offers' time)
        last = max(at for _, at in col.got)
        assert last - t0 < 0.7 * 1000 + 3000, last - t0
        assert redis.cmd("ZCARD", "redisson_delay_queue_timeout:{%s}" % name) == 0
        assert redis.cmd("LLEN", "redisson_delay_queue:{%s}" % name) == 0
    finally:
        col.close()
    # bad input raises as offer's does, from the coroutine
    with pytest.raises(hilock.InvalidArgumentError):
        asyncio.run(d.offer_async("x", -1))
    with pytest.raises(TypeError):
        asyncio.run(d.offer_async(5, 1))


def test_offer_async_cancel(client, redis_server, redis, faultproxy):  # noqa: F811
    """Cancelling the task that awaits offer_async: like release_async, the
    offer runs to its end (one write, never doubled), then CancelledError
    propagates; the element arrives once. The proxy holds the reply, so
    the cancel meets the offer in flight."""
    name = "py:dq:async-cancel"
    p = faultproxy()
    c = hilock.Client(p.url)
    col = _Collector(redis_server.port, name)
    try:
        d = c.delayed_queue(name)
        mover = client.delayed_queue(name)  # moves too, straight to Redis
        asyncio.run(d.offer_async("0:0", 0))  # the script cached
        assert col.wait(1, 10) == 1
        p.delay(300)

        async def main() -> None:
            due = int(time.time() * 1000) + 200
            t = asyncio.ensure_future(d.offer_async("1:%d" % due, 0.2))
            await asyncio.sleep(0.1)  # the offer is on the wire
            assert not t.done()
            t0 = time.monotonic()
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            # it waited for the offer's reply (about 2 x 300 ms in all)
            assert time.monotonic() - t0 > 0.2

        asyncio.run(main())
        p.delay(0)
        assert col.wait(2, 10) == 2
        time.sleep(1.2)  # a second copy would have moved by now
        col.check(2)
        assert redis.cmd("ZCARD", "redisson_delay_queue_timeout:{%s}" % name) == 0
        del mover
    finally:
        col.close()
        c.close()
