"""hilock.MultiLock and hilock.RedLock over three independent servers."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Iterator, List, Tuple

import pytest

import hilock
from conftest import RedisServer, Resp, python_env


class Three:
    """Three redis-servers, a raw connection and a hilock client on each."""

    def __init__(self) -> None:
        self.servers: List[RedisServer] = []
        self.clients: List[hilock.Client] = []
        for _ in range(3):
            self.servers.append(RedisServer())
        for s in self.servers:
            # quick to give up on a server that is gone
            self.clients.append(hilock.Client(s.url, watchdog_timeout=2.0, connect_timeout=0.5,
                                              command_timeout=0.5, retry_delay=0.1))

    def raw(self, i: int) -> Resp:
        return Resp(self.servers[i].port)

    def exists(self, i: int, name: str) -> int:
        with self.raw(i) as r:
            return int(r.cmd("EXISTS", name))

    def field(self, i: int, name: str, owner: str):  # type: ignore[no-untyped-def]
        with self.raw(i) as r:
            return r.cmd("HGET", name, owner)

    def locks(self, name: str) -> List[hilock.Lock]:
        return [c.lock(name) for c in self.clients]

    def close(self) -> None:
        for c in self.clients:
            c.close()
        for s in self.servers:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def three() -> Iterator[Three]:
    t = Three()
    try:
        yield t
    finally:
        t.close()


def in_thread(fn, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    out: list = []

    def run() -> None:
        try:
            out.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001
            out.append(("err", exc))

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout)
    assert not t.is_alive()
    kind, val = out[0]
    if kind == "err":
        raise val
    return val


def test_all_or_nothing(three: Three) -> None:
    locks = three.locks("py:aon")
    multi = hilock.MultiLock(*locks)
    assert multi.locks == tuple(locks)
    assert multi.quorum == 3
    other = hilock.Client(three.servers[1].url)
    try:
        held = other.lock("py:aon")
        assert held.acquire()
        t0 = time.monotonic()
        assert multi.acquire(timeout=0.4) is False
        assert 0.35 <= time.monotonic() - t0 < 3.0
        # the first member was taken and given back, the third never
        assert three.exists(0, "py:aon") == 0
        assert three.exists(2, "py:aon") == 0
        assert held.held()
        assert multi.acquire(blocking=False) is False
        assert three.exists(0, "py:aon") == 0
        held.release()
    finally:
        other.close()
    with multi:
        for i, lk in enumerate(locks):
            assert three.field(i, "py:aon", lk.owner) == b"1"
        assert not multi.lost
    for i in range(3):
        assert three.exists(i, "py:aon") == 0


def test_reentrant_and_owned_by_thread(three: Three) -> None:
    locks = three.locks("py:re")
    multi = hilock.MultiLock(*locks)
    with multi:
        with multi:
            assert three.field(2, "py:re", locks[2].owner) == b"2"
            # another thread is another owner: not taken, nothing left
            assert in_thread(lambda: multi.acquire(blocking=False)) is False
            with three.raw(0) as r:
                assert r.cmd("HLEN", "py:re") == 1
        assert three.field(0, "py:re", locks[0].owner) == b"1"
    assert three.exists(0, "py:re") == 0
    with pytest.raises(hilock.NotHeldError) as ei:
        multi.release()
    assert "member" in str(ei.value)


def test_member_lost_and_taken_again_is_left_alone(three: Three) -> None:
    # A member lost while the multilock held it, then taken again directly by
    # the same owner: a newer hold, which the multilock's release leaves as it
    # is (raising LockLost); the other members are released.
    locks = three.locks("py:retaken")
    multi = hilock.MultiLock(*locks)
    assert multi.acquire()
    assert locks[1].force_unlock()  # this client's holds of it are lost
    assert locks[1].lost
    assert locks[1].acquire()
    assert locks[1].acquire()
    assert multi.lost
    with pytest.raises(hilock.LockLost) as ei:
        multi.release()
    assert "member 1" in str(ei.value)
    assert three.exists(0, "py:retaken") == 0
    assert three.exists(2, "py:retaken") == 0
    assert three.field(1, "py:retaken", locks[1].owner) == b"2"
    assert locks[1].hold_count == 2
    assert not locks[1].lost
    locks[1].release()
    locks[1].release()
    assert three.exists(1, "py:retaken") == 0


def test_threads_exclude_each_other(three: Three) -> None:
    multi = hilock.MultiLock(*three.locks("py:excl"))
    inside = [0]
    overlaps = [0]
    rounds = [0]

    def work() -> None:
        for _ in range(30):
            with multi:
                inside[0] += 1
                if inside[0] != 1:
                    overlaps[0] += 1
                time.sleep(0.001)
                inside[0] -= 1
                rounds[0] += 1

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert rounds[0] == 120
    assert overlaps[0] == 0


def test_redlock_one_of_three_down(three: Three) -> None:
    locks = three.locks("py:red1")
    red = hilock.RedLock(*locks)
    assert red.quorum == 2
    three.servers[1].stop()
    t0 = time.monotonic()
    assert red.acquire(timeout=1.5)
    took = time.monotonic() - t0
    assert took < 1.5 + 1.0
    assert three.field(0, "py:red1", locks[0].owner) == b"1"
    assert three.field(2, "py:red1", locks[2].owner) == b"1"
    red.release()  # the minority it never took is not released
    assert three.exists(0, "py:red1") == 0
    assert three.exists(2, "py:red1") == 0


def test_redlock_two_of_three_down(three: Three) -> None:
    red = hilock.RedLock(*three.locks("py:red2"))
    three.servers[1].stop()
    three.servers[2].stop()
    t0 = time.monotonic()
    try:
        got = red.acquire(timeout=1.5)
    except hilock.ConnectionError as exc:
        assert "RedLock" in str(exc)
        got = False
    took = time.monotonic() - t0
    assert got is False
    assert 1.4 <= took < 1.5 + 1.0, took
    assert three.exists(0, "py:red2") == 0


def test_lease_validity_and_lost(three: Three) -> None:
    multi = hilock.MultiLock(*three.locks("py:lease"), lease=0.4)
    with pytest.raises(hilock.LockLost) as ei:
        with multi:
            with three.raw(1) as r:
                assert 0 < r.cmd("PTTL", "py:lease") <= 400
            assert not multi.lost
            time.sleep(0.6)
            assert multi.lost
    assert "MultiLock('py:lease', 'py:lease', 'py:lease')" in str(ei.value)
    for i in range(3):
        assert three.exists(i, "py:lease") == 0


def test_bad_input(three: Three) -> None:
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.MultiLock()
    assert "at least one member" in str(ei.value)
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.RedLock()
    assert "RedLock" in str(ei.value)
    a = three.clients[0].lock("py:bad")
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.MultiLock(a, a)
    assert "members 0 and 1" in str(ei.value)
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.RedLock(a, three.clients[0].lock("py:bad"))
    with pytest.raises(TypeError):
        hilock.MultiLock(a, "py:bad")  # type: ignore[arg-type]
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.MultiLock(a, lease=0)
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.MultiLock(a, timeout=-1)
    multi = hilock.MultiLock(a, three.clients[1].lock("py:bad"))
    with pytest.raises(hilock.InvalidArgumentError):
        multi.acquire(timeout=-5)
    with pytest.raises(hilock.InvalidArgumentError):
        multi.acquire(blocking=False, timeout=1)

    # a member's client closed: a clear error naming it, nothing held
    c = three.clients[2]
    late = c.lock("py:bad:late")
    multi = hilock.MultiLock(a, late)
    c.close()
    with pytest.raises(hilock.ClientClosedError) as ei:
        multi.acquire(timeout=1)
    assert "member 1 (\"py:bad:late\")" in str(ei.value)
    assert three.exists(0, "py:bad") == 0
    with pytest.raises(hilock.ClientClosedError) as ei:
        hilock.RedLock(a, late)
    assert "member 1" in str(ei.value)


SIGINT_WAITER = r"""
import sys, hilock
urls = sys.argv[1:]
cs = [hilock.Client(u) for u in urls]
multi = hilock.MultiLock(*[c.lock("py:sigint") for c in cs])
print("waiting", flush=True)
try:
    multi.acquire()
    print("acquired", flush=True)
except KeyboardInterrupt:
    held = [c.lock("py:sigint").held() for c in cs]
    print("interrupted held=%s" % any(held), flush=True)
    sys.exit(3)
"""


def test_ctrl_c_in_main_thread(three: Three) -> None:
    other = hilock.Client(three.servers[2].url)
    try:
        holder = other.lock("py:sigint")
        assert holder.acquire()
        p = subprocess.Popen([sys.executable, "-c", SIGINT_WAITER] + [s.url for s in three.servers],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=python_env())
        try:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "waiting"
            # members 0 and 1 taken, waiting for member 2
            deadline = time.monotonic() + 10
            while three.exists(1, "py:sigint") == 0:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            p.send_signal(signal.SIGINT)
            line = p.stdout.readline().strip()
            p.wait(20)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        assert line == "interrupted held=False", (line, p.stderr.read() if p.stderr else "")
        assert p.returncode == 3
        assert three.exists(0, "py:sigint") == 0
        assert three.exists(1, "py:sigint") == 0
        assert holder.held()
    finally:
        other.close()


def test_members_of_every_kind(three: Three) -> None:
    c = three.clients[0]
    fair, fenced, rw, spin = (c.fair_lock("py:k:fair"), c.fenced_lock("py:k:fenced"),
                              c.read_write_lock("py:k:rw"), c.spin_lock("py:k:spin"))
    multi = hilock.MultiLock(fair, fenced, rw.write, spin)
    other = hilock.Client(three.servers[0].url)
    try:
        reader = other.read_write_lock("py:k:rw").read
        assert reader.acquire()
        assert multi.acquire(timeout=0.3) is False
        for name in ("py:k:fair", "py:k:fenced", "py:k:spin"):
            assert three.exists(0, name) == 0, name
        reader.release()
    finally:
        other.close()
    with multi:
        assert fair.held() and fenced.held() and rw.write.held() and spin.held()
        assert fenced.token > 0
    for name in ("py:k:fair", "py:k:fenced", "py:k:rw", "py:k:spin"):
        assert three.exists(0, name) == 0, name
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.MultiLock(rw.write, rw.read)  # one lock (one key) twice


# -- asyncio: waits that are libhilock tasks ------------------------------------


def arun(coro, timeout: float = 120):  # type: ignore[no-untyped-def]
    async def bounded():  # type: ignore[no-untyped-def]
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def _os_threads() -> int:
    """The process's thread count, as the kernel has it."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line in /proc/self/status")


async def _until(cond, limit: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, "condition not met within %s s" % limit
        await asyncio.sleep(0.01)


def test_async_owner_is_the_task(three: Three) -> None:
    locks = three.locks("py:async")
    multi = hilock.MultiLock(*locks)

    async def main() -> None:
        holding, done = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with multi:
                assert await multi.acquire_async(timeout=1)  # reentrant in the task
                assert three.field(2, "py:async", locks[2].owner) == b"2"
                await multi.release_async()
                holding.set()
                await done.wait()
            for i in range(3):
                assert three.exists(i, "py:async") == 0

        async def other() -> None:
            await holding.wait()
            # same thread, another task: another owner, nothing taken
            assert await multi.acquire_async(blocking=False) is False
            t0 = time.monotonic()
            assert await multi.acquire_async(timeout=0.3) is False
            assert time.monotonic() - t0 >= 0.25
            with pytest.raises(hilock.NotHeldError):
                await multi.release_async()
            with three.raw(0) as r:
                assert r.cmd("HLEN", "py:async") == 1
            done.set()

        await asyncio.gather(holder(), other())

    arun(main())
    # a RedLock with a server down, through asyncio
    red = hilock.RedLock(*three.locks("py:async:red"))
    three.servers[1].stop()

    async def red_main() -> None:
        async with red:
            assert three.exists(0, "py:async:red") == 1
            assert three.exists(2, "py:async:red") == 1
        assert three.exists(0, "py:async:red") == 0
        assert three.exists(2, "py:async:red") == 0

    arun(red_main())


def test_async_cancel_leaves_nothing_held(three: Three) -> None:
    """A task that took members 0 and 1 and waits for member 2: cancelled
    (task.cancel(), or a wait_for timeout), it raises CancelledError
    (TimeoutError) and members 0 and 1 are free in Redis."""
    other = hilock.Client(three.servers[2].url)
    try:
        holder = other.lock("py:acancel")
        assert holder.acquire()
        for red in (False, True):
            multi = (hilock.RedLock if red else hilock.MultiLock)(*three.locks("py:acancel"))

            async def main() -> float:
                task = asyncio.ensure_future(multi.acquire_async(timeout=60))
                await _until(lambda: three.exists(0, "py:acancel") == 1
                             and three.exists(1, "py:acancel") == 1
                             and three.clients[2].stats().waiting == 1)
                t0 = time.monotonic()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                took = time.monotonic() - t0
                assert three.exists(0, "py:acancel") == 0
                assert three.exists(1, "py:acancel") == 0
                await _until(lambda: three.clients[2].stats().waiting == 0)
                # a wait_for timeout cancels it the same way
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(multi.acquire_async(), 0.5)
                assert three.exists(0, "py:acancel") == 0
                assert three.exists(1, "py:acancel") == 0
                return took

            took = arun(main())
            print("red=%s: cancelled in %.1f ms" % (red, took * 1000))
            assert took < 1.0
            assert holder.held()
            with three.raw(2) as r:
                assert r.cmd("HLEN", "py:acancel") == 1
        holder.release()
    finally:
        other.close()


def test_multilock_waiting_tasks_add_no_thread(client, other_client, redis):  # type: ignore[no-untyped-def]
    """n asyncio tasks wait on MultiLocks and n on RedLocks over three locks
    (two held elsewhere) without a thread each; cancelling the RedLock
    waiters leaves nothing held; the MultiLock waiters then get all three in
    turn, never two at once."""
    n = 500
    names = ["async:multi:a", "async:multi:b", "async:multi:c"]
    state = {"got": 0, "overlap": 0, "inside": 0}

    async def multi_waiter() -> None:
        multi = hilock.MultiLock(*(client.lock(x) for x in names))
        async with multi:
            state["inside"] += 1
            if state["inside"] != 1:
                state["overlap"] += 1
            state["got"] += 1
            await asyncio.sleep(0)  # other tasks run while it is held
            state["inside"] -= 1

    async def red_waiter() -> None:
        locks = [client.lock(x) for x in names]
        await hilock.RedLock(locks[2], locks[0], locks[1]).acquire_async()

    async def main() -> tuple:
        ready, go = asyncio.Event(), asyncio.Event()
        holder = asyncio.ensure_future(_hold_all(other_client, names[:2], ready, go))
        await ready.wait()
        client.lock(names[0])  # the client's own threads run by now
        base_py, base_os = threading.active_count(), _os_threads()
        multis = [asyncio.ensure_future(multi_waiter()) for _ in range(n)]
        reds = [asyncio.ensure_future(red_waiter()) for _ in range(n)]
        hub = client._hub()
        await _until(lambda: hub.pending() == 2 * n, 120)
        await asyncio.sleep(0.3)
        counts = (base_py, threading.active_count(), base_os, _os_threads())
        assert state["got"] == 0
        t0 = time.monotonic()
        for t in reds:
            t.cancel()
        res = await asyncio.gather(*reds, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in res), res[:3]
        assert hub.pending() == n
        cancel_took = time.monotonic() - t0
        assert redis.cmd("EXISTS", names[2]) == 0  # nothing left held
        assert redis.cmd("HLEN", names[0]) == 1 and redis.cmd("HLEN", names[1]) == 1
        t0 = time.monotonic()
        go.set()
        await asyncio.wait_for(asyncio.gather(holder, *multis), 240)
        return counts + (cancel_took, time.monotonic() - t0)

    base_py, py, base_os, os_n, cancel_took, took = arun(main(), timeout=400)
    print("%d MultiLock and %d RedLock tasks waiting: Python threads %d -> %d, OS threads %d -> %d;"
          " RedLock waiters cancelled in %.2f s, MultiLock waiters got it in turn in %.1f s"
          % (n, n, base_py, py, base_os, os_n, cancel_took, took))
    assert py <= base_py + 16, (base_py, py)
    assert os_n <= base_os + 16, (base_os, os_n)
    assert state["got"] == n
    assert state["overlap"] == 0
    assert client._hub().pending() == 0
    for x in names:
        assert redis.cmd("EXISTS", x) == 0


async def _hold_all(c: hilock.Client, names: "list[str]", ready: asyncio.Event,
                    go: asyncio.Event) -> None:
    """One asyncio task holds every lock in names until go is set."""
    locks = [c.lock(x) for x in names]
    for lk in locks:
        assert await lk.acquire_async(blocking=False)
    ready.set()
    await go.wait()
    for lk in locks:
        await lk.release_async()


def test_async_methods_are_coroutine_functions_to_inspect() -> None:
    import inspect

    if not hasattr(inspect, "markcoroutinefunction"):
        pytest.skip("inspect.markcoroutinefunction is Python 3.12+")
    assert inspect.iscoroutinefunction(hilock.MultiLock.acquire_async)
    assert inspect.iscoroutinefunction(hilock.RedLock.release_async)
