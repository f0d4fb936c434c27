"""Synchronizers: the semaphore (a bound of 3 holders across threads and
processes, no more given back than taken), the permit-expirable semaphore
(ids, leases, a SIGKILLed holder's permit coming back when its lease ends)
and the count-down latch (every waiting thread and task woken at once);
asyncio waits that cost no thread, cancellation and Ctrl-C that leave
nothing taken, bad input."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import hilock
from conftest import python_env


def run(coro, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    async def bounded():  # type: ignore[no-untyped-def]
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def _os_threads() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line in /proc/self/status")


def _get(redis, key: str):  # type: ignore[no-untyped-def]
    v = redis.cmd("GET", key)
    return None if v is None else int(v)


HEX32 = re.compile(r"^[0-9a-f]{32}$")


def test_public_synchronizers_have_docstrings():
    for cls in (hilock.Semaphore, hilock.ExpirableSemaphore, hilock.CountDownLatch):
        assert cls.__doc__
        for attr, val in vars(cls).items():
            if attr.startswith("_") and attr not in ("__enter__", "__exit__"):
                continue
            assert getattr(val, "__doc__", None), "%s.%s" % (cls.__name__, attr)
    for meth in ("semaphore", "expirable_semaphore", "count_down_latch"):
        assert getattr(hilock.Client, meth).__doc__


# ---- semaphore -------------------------------------------------------------


def test_semaphore_basics(client, redis):
    sem = client.semaphore("sem:basics")
    assert repr(sem) == "<hilock.Semaphore 'sem:basics'>"
    assert sem.name == "sem:basics" and sem.client is client
    assert sem.available_permits() == 0
    assert sem.try_set_permits(3) is True
    assert sem.try_set_permits(5) is False
    assert _get(redis, "sem:basics") == 3
    assert sem.acquire(n=2) is True
    assert _get(redis, "sem:basics") == 1
    assert sem.held_permits == 2
    assert sem.acquire(False, n=2) is False
    t0 = time.monotonic()
    assert sem.acquire(timeout=0.2, n=2) is False
    assert time.monotonic() - t0 >= 0.19
    assert sem.acquire(blocking=False) is True  # the last one
    assert sem.available_permits() == 0
    assert sem.held_permits == 3
    sem.release()
    sem.release(2)
    assert sem.held_permits == 0
    assert _get(redis, "sem:basics") == 3
    # never more back than this client took: nothing changes
    with pytest.raises(hilock.NotHeldError) as ei:
        sem.release()
    assert isinstance(ei.value, RuntimeError)
    assert ei.value.status == "HL_ENOTHELD"
    assert _get(redis, "sem:basics") == 3
    assert sem.acquire()
    with pytest.raises(hilock.NotHeldError):
        sem.release(2)
    assert sem.held_permits == 1
    assert _get(redis, "sem:basics") == 2
    sem.release()
    # add (negative too), drain, set, delete
    assert sem.add_permits(-1) == 2
    assert sem.drain_permits() == 2
    assert _get(redis, "sem:basics") == 0
    assert sem.held_permits == 2  # drained permits are this client's to give back
    sem.release(2)
    sem.set_permits(5)
    assert sem.available_permits() == 5
    assert sem.add_permits(-7) == -2
    assert sem.acquire(blocking=False) is False
    assert sem.delete() is True
    assert sem.delete() is False
    assert redis.cmd("EXISTS", "sem:basics") == 0


def test_semaphore_permits_belong_to_the_client_not_the_thread(client, other_client):
    sem = client.semaphore("sem:client")
    sem.try_set_permits(2)
    done = threading.Event()

    def take() -> None:
        assert sem.acquire(n=2, timeout=5)
        done.set()

    t = threading.Thread(target=take)
    t.start()
    t.join(10)
    assert done.is_set()
    # any thread of the client gives them back, as with threading.Semaphore
    assert sem.held_permits == 2
    # another client (another process, as far as Redis can tell) took none
    other = other_client.semaphore("sem:client")
    assert other.held_permits == 0
    with pytest.raises(hilock.NotHeldError):
        other.release()
    sem.release(2)
    assert other.available_permits() == 2


def test_semaphore_bad_input(client, redis):
    sem = client.semaphore("sem:bad")
    sem.try_set_permits(1)
    for n in (0, -1, 1 << 41):
        with pytest.raises(hilock.InvalidArgumentError) as ei:
            sem.acquire(n=n)
        assert isinstance(ei.value, ValueError)
        with pytest.raises(ValueError):
            sem.release(n)
    for n in (True, 1.5, "1", None):
        with pytest.raises(TypeError):
            sem.acquire(n=n)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            sem.release(n)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n="):
        sem.acquire(3)  # type: ignore[arg-type]  # threading's first argument is blocking
    with pytest.raises(ValueError, match="non-blocking"):
        sem.acquire(False, 1.0)
    for t in (-2, -0.5, math.nan, math.inf):
        with pytest.raises(ValueError):
            sem.acquire(timeout=t)
    for bad in (-1, 1 << 41):
        with pytest.raises(ValueError):
            sem.try_set_permits(bad)
        with pytest.raises(ValueError):
            sem.set_permits(bad)
    with pytest.raises(ValueError):
        sem.add_permits(1 << 41)
    with pytest.raises(ValueError):
        client.semaphore("")
    with pytest.raises(ValueError):
        client.semaphore("x" * 70000)
    with pytest.raises(TypeError):
        client.semaphore(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.semaphore("x", timeout=-1.5)
    with pytest.raises(TypeError):
        hilock.Semaphore(object(), "x")  # type: ignore[arg-type]
    # nothing above took or changed anything
    assert sem.held_permits == 0
    assert _get(redis, "sem:bad") == 1


def test_semaphore_closed_client(url):
    c = hilock.Client(url)
    sem = c.semaphore("sem:closed")
    c.close()
    with pytest.raises(hilock.ClientClosedError):
        sem.acquire(blocking=False)
    with pytest.raises(hilock.ClientClosedError):
        sem.available_permits()
    with pytest.raises(hilock.ClientClosedError):
        c.semaphore("sem:closed")
    with pytest.raises(hilock.ClientClosedError):
        c.count_down_latch("l").wait(0)


def test_semaphore_with_block(client, redis):
    sem = client.semaphore("sem:with")
    sem.try_set_permits(2)
    with sem as s:
        assert s is sem
        assert sem.held_permits == 1
        assert _get(redis, "sem:with") == 1
    assert sem.held_permits == 0
    assert _get(redis, "sem:with") == 2
    with pytest.raises(KeyError):
        with sem:
            raise KeyError("inside")
    assert _get(redis, "sem:with") == 2
    # timeout bounds the with block's wait
    sem.drain_permits()
    bounded = client.semaphore("sem:with", timeout=0.2)
    t0 = time.monotonic()
    with pytest.raises(hilock.LockTimeout) as ei:
        with bounded:
            pass
    assert isinstance(ei.value, TimeoutError)
    assert 0.19 <= time.monotonic() - t0 < 3.0
    sem.release(2)


def test_semaphore_release_elsewhere_wakes_the_waiter(client, other_client):
    holder = other_client.semaphore("sem:wake")
    holder.try_set_permits(1)
    assert holder.acquire()
    sem = client.semaphore("sem:wake")
    got = threading.Event()
    at: "list[float]" = []

    def wait() -> None:
        if sem.acquire(timeout=20):
            at.append(time.monotonic())
            got.set()

    t = threading.Thread(target=wait)
    t.start()
    assert not got.wait(0.5)  # it waits
    t0 = time.monotonic()
    holder.release()
    assert got.wait(10)
    t.join(10)
    print("semaphore wake-up after a release in another client: %.1f ms" % ((at[0] - t0) * 1000))
    assert at[0] - t0 < 1.0
    assert sem.held_permits == 1
    sem.release()


def _sem_worker(url: str, name: str, threads: int, rounds: int, inside, peak, total, q) -> None:  # type: ignore[no-untyped-def]
    """One process: threads workers, each taking a permit rounds times."""
    try:
        with hilock.Client(url) as c:
            sem = c.semaphore(name)
            errors: "list[BaseException]" = []

            def work() -> None:
                try:
                    for _ in range(rounds):
                        assert sem.acquire(timeout=60)
                        with inside.get_lock():
                            inside.value += 1
                            peak.value = max(peak.value, inside.value)
                        time.sleep(0.005)
                        with inside.get_lock():
                            inside.value -= 1
                            total.value += 1
                        sem.release()
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)

            ts = [threading.Thread(target=work) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(120)
            q.put(repr(errors[0]) if errors else ("done", sem.held_permits))
    except BaseException as exc:  # noqa: BLE001
        q.put(repr(exc))


def test_semaphore_of_3_never_has_4_holders(client, url, redis):
    """12 workers (3 threads in each of 4 processes) share a semaphore of 3:
    never more than 3 inside (a counter outside Redis), every permit back."""
    name = "sem:bound"
    sem = client.semaphore(name)
    assert sem.try_set_permits(3)
    ctx = multiprocessing.get_context("fork")
    inside, peak, total = ctx.Value("i", 0), ctx.Value("i", 0), ctx.Value("i", 0)
    q = ctx.Queue()
    procs, threads, rounds = 4, 3, 6
    ps = [ctx.Process(target=_sem_worker, args=(url, name, threads, rounds, inside, peak, total, q))
          for _ in range(procs)]
    for p in ps:
        p.start()
    results = [q.get(timeout=180) for _ in ps]
    for p in ps:
        p.join(20)
    print("semaphore of 3, 12 workers in 4 processes: at most %d inside, %d entries"
          % (peak.value, total.value))
    assert results == [("done", 0)] * procs, results
    assert total.value == procs * threads * rounds
    assert inside.value == 0
    assert 2 <= peak.value <= 3, peak.value  # they did overlap, never beyond 3
    assert _get(redis, name) == 3  # every permit came back
    assert sem.available_permits() == 3


def test_semaphore_async_basics_and_with(client, redis):
    sem = client.semaphore("sem:async")

    async def main() -> None:
        assert sem.try_set_permits(2)
        assert await sem.acquire_async(n=2) is True
        assert await sem.acquire_async(blocking=False) is False
        assert await sem.acquire_async(timeout=0.1) is False
        assert await sem.available_permits_async() == 0
        await sem.release_async(2)
        async with sem:
            assert sem.held_permits == 1
            assert _get(redis, "sem:async") == 1
        assert sem.held_permits == 0
        with pytest.raises(hilock.NotHeldError):
            await sem.release_async()
        with pytest.raises(ValueError):
            await sem.acquire_async(n=0)
        with pytest.raises(TypeError):
            await sem.acquire_async(2)  # type: ignore[arg-type]

    run(main())
    assert _get(redis, "sem:async") == 2
    assert client._hub().pending() == 0


def test_thousand_tasks_wait_on_a_semaphore_with_no_thread_each(client, other_client, redis):
    name = "sem:crowd"
    n = 1000
    holder = other_client.semaphore(name)
    holder.try_set_permits(2)
    assert holder.drain_permits() == 2  # all taken elsewhere
    sem = client.semaphore(name)
    state = {"inside": 0, "peak": 0}
    order: "list[int]" = []

    async def waiter(i: int) -> None:
        async with sem:
            order.append(i)
            state["inside"] += 1
            state["peak"] = max(state["peak"], state["inside"])
            await asyncio.sleep(0)  # others run while it holds its permit
            state["inside"] -= 1

    async def main() -> tuple:
        base_py, base_os = threading.active_count(), _os_threads()
        tasks = [asyncio.ensure_future(waiter(i)) for i in range(n)]
        hub = client._hub()
        deadline = time.monotonic() + 60
        while hub.pending() < n:
            assert time.monotonic() < deadline, "only %d of %d tasks wait" % (hub.pending(), n)
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        counts = (base_py, threading.active_count(), base_os, _os_threads())
        assert not order  # nobody got a permit yet
        t0 = time.monotonic()
        await holder_release()
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        return counts + (time.monotonic() - t0,)

    async def holder_release() -> None:
        await holder.release_async(2)

    base_py, py, base_os, os_n, took = run(main(), timeout=240)
    print("%d asyncio tasks waiting on a semaphore: Python threads %d -> %d, OS threads %d -> %d; "
          "all got a permit in %.1f s" % (n, base_py, py, base_os, os_n, took))
    assert py <= base_py + 16, (base_py, py)
    assert os_n <= base_os + 16, (base_os, os_n)
    assert sorted(order) == list(range(n))
    assert order == list(range(n))  # in turn: the client's waiters queue in order
    assert 1 <= state["peak"] <= 2
    assert sem.held_permits == 0
    assert _get(redis, name) == 2
    assert client._hub().pending() == 0


@pytest.mark.parametrize("kind", ["semaphore", "expirable"])
def test_cancelled_async_acquire_takes_no_permit(client, other_client, redis, kind):
    """A crowd of waiting tasks is cancelled just as the permit comes back:
    whoever it reaches is cancelled holding nothing, or holds it and says
    so; no permit is left taken by nobody. Several rounds, since the cancel
    meets an acquire in flight only sometimes."""
    expirable = kind == "expirable"
    rounds, n = 6, 100

    def one_round(r: int) -> None:
        name = "sync:cancel:%s:%d" % (kind, r)
        if expirable:
            holder = other_client.expirable_semaphore(name)
            sem = client.expirable_semaphore(name)  # no lease: a leak would be forever
        else:
            holder = other_client.semaphore(name)
            sem = client.semaphore(name)
        holder.try_set_permits(1)
        held = holder.acquire()
        assert held

        async def main() -> "list":
            if r == 0:  # a timeout of wait_for
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(sem.acquire_async(), 0.2)
            tasks = [asyncio.ensure_future(sem.acquire_async()) for _ in range(n)]
            hub = client._hub()
            deadline = time.monotonic() + 30
            while hub.pending() < n:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            if expirable:
                await holder.release_async(held)
            else:
                await holder.release_async()
            await asyncio.sleep(0)
            for t in tasks:
                t.cancel()
            res = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
            assert hub.pending() == 0
            return res

        res = run(main())
        got = [x for x in res if not isinstance(x, asyncio.CancelledError)]
        assert all(x is True or (expirable and isinstance(x, str)) for x in got), got[:3]
        assert len(got) <= 1
        if expirable:
            assert sem.acquired_permits() == len(got), (r, got)
            assert sem.available_permits() == 1 - len(got)
            if got:
                sem.release(got[0])
        else:
            assert sem.held_permits == len(got)
            assert _get(redis, name) == 1 - len(got), (r, got)
            if got:
                sem.release()
        assert sem.available_permits() == 1

    for r in range(rounds):
        one_round(r)


# ---- permit-expirable semaphore --------------------------------------------


def test_expirable_semaphore_basics(client, redis):
    sem = client.expirable_semaphore("xs:basics", lease=60.0)
    assert sem.lease == 60.0
    assert "lease=60s" in repr(sem)
    assert sem.try_set_permits(3) is True
    assert sem.try_set_permits(4) is False
    two = sem.acquire(n=2)
    assert isinstance(two, list) and len(two) == 2
    assert all(HEX32.match(x) for x in two) and two[0] != two[1]
    one = sem.acquire(blocking=False)
    assert isinstance(one, str) and HEX32.match(one)
    assert sem.available_permits() == 0
    assert sem.acquired_permits() == 3
    assert sem.permits() == 3
    assert _get(redis, "xs:basics") == 0
    members = redis.cmd("ZRANGE", "{xs:basics}:timeout", 0, -1)
    assert sorted(m.hex() for m in members) == sorted(two + [one])  # 16 raw bytes each
    assert sem.acquire(blocking=False) is None
    assert sem.acquire(timeout=0.1, n=1) is None
    assert 50 < sem.lease_time(one) <= 60
    sem.update_lease(one, None)
    assert sem.lease_time(one) == math.inf
    sem.update_lease(one, 5.0)
    assert 3 < sem.lease_time(one) <= 5
    sem.release(one)
    assert sem.available_permits() == 1
    with pytest.raises(hilock.NotHeldError) as ei:
        sem.release(one)
    assert isinstance(ei.value, RuntimeError)
    with pytest.raises(hilock.NotHeldError):
        sem.update_lease(one, 10.0)
    with pytest.raises(hilock.NotHeldError):
        sem.lease_time(one)
    with pytest.raises(hilock.NotHeldError):
        sem.release("00112233445566778899aabbccddeeff")
    # a list: every id given back that can be, then the first error
    with pytest.raises(hilock.NotHeldError):
        sem.release([two[0], one, two[1]])
    assert sem.available_permits() == 3
    assert sem.acquired_permits() == 0
    # the total can be set (the available permits follow), or added to
    held = sem.acquire(lease=None)
    sem.set_permits(5)
    assert sem.available_permits() == 4
    assert sem.permits() == 5
    assert sem.add_permits(-2) == 2
    sem.release(held)
    assert sem.available_permits() == 3
    assert sem.delete() is True
    assert sem.delete() is False
    assert redis.cmd("EXISTS", "xs:basics", "{xs:basics}:timeout") == 0


def test_expirable_permit_released_after_its_lease_is_lost(client):
    sem = client.expirable_semaphore("xs:lost")
    sem.try_set_permits(1)
    permit = sem.acquire(lease=0.2)
    assert permit is not None
    time.sleep(0.5)
    with pytest.raises(hilock.LockLost) as ei:
        sem.release(permit)
    assert isinstance(ei.value, hilock.NotHeldError)  # no longer out, as a lost hold
    assert sem.available_permits() == 1  # it went back once, not twice
    # a with block whose permit's lease ends inside it says so at the end
    short = client.expirable_semaphore("xs:lost", lease=0.2)
    with pytest.raises(hilock.LockLost, match="was not out at the end of its with block"):
        with short as p:
            assert HEX32.match(p)
            time.sleep(0.5)
    assert sem.available_permits() == 1
    # the block's own exception wins, with a note
    with pytest.raises(KeyError) as ei:
        with short:
            time.sleep(0.5)
            raise KeyError("inside")
    if hasattr(ei.value, "__notes__"):
        assert any("not out" in n for n in ei.value.__notes__)
    assert sem.available_permits() == 1


def test_expirable_with_block_per_thread(client):
    sem = client.expirable_semaphore("xs:with", lease=30.0, timeout=0.3)
    sem.try_set_permits(2)
    ids: "list[str]" = []
    barrier = threading.Barrier(2, timeout=10)

    def work() -> None:
        with sem as p:
            ids.append(p)
            assert sem.lease_time(p) > 25
            barrier.wait()  # both hold a permit at once

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert len(set(ids)) == 2
    assert sem.available_permits() == 2
    with sem as a:
        with sem as b:
            assert a != b
            with pytest.raises(hilock.LockTimeout):
                with sem:
                    pass
        assert sem.available_permits() == 1
    assert sem.available_permits() == 2


def test_expirable_bad_input(client):
    sem = client.expirable_semaphore("xs:bad")
    sem.try_set_permits(1)
    for n in (0, -1, 1001):
        with pytest.raises(hilock.InvalidArgumentError):
            sem.acquire(n=n)
    with pytest.raises(TypeError):
        sem.acquire(n=True)  # type: ignore[call-overload]
    for lease in (0, -1, -0.5, math.nan):
        with pytest.raises(ValueError):
            sem.acquire(lease=lease)
    with pytest.raises(ValueError):
        client.expirable_semaphore("xs:bad", lease=0)
    for bad in ("xyz", "", "zz" * 16, "é" * 32, "00\x0011"):
        with pytest.raises(hilock.InvalidArgumentError):
            sem.release(bad)
        with pytest.raises(hilock.InvalidArgumentError):
            sem.lease_time(bad)
    for bad in (b"00112233445566778899aabbccddeeff", 5, None):
        with pytest.raises(TypeError):
            sem.release(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sem.release([b"00"])  # type: ignore[list-item]
    p = sem.acquire()
    assert p is not None
    with pytest.raises(ValueError):
        sem.update_lease(p, 0)
    with pytest.raises(ValueError):
        sem.try_set_permits(-1)
    with pytest.raises(ValueError):
        sem.set_permits(-1)
    assert sem.acquired_permits() == 1  # none of that changed anything
    sem.release(p)
    assert sem.available_permits() == 1


KILLED_HOLDER = r"""
import sys, time, hilock
c = hilock.Client(sys.argv[1])
sem = c.expirable_semaphore("xs:killed")
p = sem.acquire(lease=float(sys.argv[2]))
print("%s %.6f" % (p, time.monotonic()), flush=True)
time.sleep(600)
"""


def test_permit_of_a_killed_holder_returns_after_its_lease(url, client):
    lease = 2.0
    sem = client.expirable_semaphore("xs:killed")
    sem.try_set_permits(1)
    p = subprocess.Popen([sys.executable, "-c", KILLED_HOLDER, url, str(lease)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=python_env())
    try:
        assert p.stdout is not None
        line = p.stdout.readline().split()
        assert len(line) == 2, (line, p.stderr.read() if p.stderr else "")
        dead_id, taken_at = line[0], float(line[1])
        p.kill()
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert HEX32.match(dead_id)
    assert sem.available_permits() == 0  # still out: its lease has not ended
    permit = sem.acquire(timeout=lease + 10)
    got_at = time.monotonic()
    print("a SIGKILLed holder's permit came back %.0f ms after it was taken (lease %.0f ms)"
          % ((got_at - taken_at) * 1000, lease * 1000))
    assert permit is not None and permit != dead_id
    assert lease - 0.05 <= got_at - taken_at < lease + 1.5
    with pytest.raises(hilock.NotHeldError):
        sem.release(dead_id)  # it is gone
    sem.release(permit)
    assert sem.available_permits() == 1


def test_expirable_async(client, redis):
    sem = client.expirable_semaphore("xs:async", lease=30.0)
    holder = client.expirable_semaphore("xs:async")

    async def main() -> None:
        assert sem.try_set_permits(3)
        ids = await sem.acquire_async(n=2)
        assert ids is not None and len(ids) == 2
        assert await sem.acquire_async(n=2, blocking=False) is None
        assert await sem.available_permits_async() == 1
        await sem.release_async(ids)
        async with sem as p:
            assert HEX32.match(p)
            assert sem.acquired_permits() == 1
        assert sem.acquired_permits() == 0
        with pytest.raises(hilock.NotHeldError):
            await sem.release_async(ids[0])
        with pytest.raises(hilock.InvalidArgumentError):
            await sem.release_async("nothex")
        # a waiter that is cancelled takes nothing
        all3 = holder.acquire(n=3, lease=None)
        w = asyncio.ensure_future(sem.acquire_async())
        await asyncio.sleep(0.2)
        assert not w.done()
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w
        holder.release(all3)
        assert sem.acquired_permits() == 0
        # a waiter is woken by a release
        all3 = holder.acquire(n=3)
        w = asyncio.ensure_future(sem.acquire_async(timeout=10))
        await asyncio.sleep(0.2)
        assert not w.done()
        await holder.release_async(all3[1])
        got = await asyncio.wait_for(w, 5)
        assert got is not None
        await sem.release_async(got)
        holder.release([all3[0], all3[2]])

    run(main())
    assert sem.available_permits() == 3
    assert client._hub().pending() == 0


# ---- count-down latch ------------------------------------------------------


def test_latch_basics(client, redis):
    latch = client.count_down_latch("latch:basics")
    assert repr(latch) == "<hilock.CountDownLatch 'latch:basics'>"
    assert latch.count() == 0
    assert latch.wait(0) is True  # never set: open
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(5) is False
    assert _get(redis, "latch:basics") == 2
    t0 = time.monotonic()
    assert latch.wait(0.2) is False
    assert 0.19 <= time.monotonic() - t0 < 3.0
    assert latch.wait(0) is False
    assert latch.count_down() == 1
    assert latch.count() == 1
    assert latch.count_down() == 0
    assert redis.cmd("EXISTS", "latch:basics") == 0  # open: deleted
    assert latch.wait() is True
    assert latch.count_down() == 0  # an open latch stays open
    assert latch.try_set_count(1) is True  # closed again
    assert latch.wait(0) is False
    assert latch.delete() is True
    assert latch.delete() is False
    # bad input
    for bad in (0, -3, 1 << 41):
        with pytest.raises(hilock.InvalidArgumentError):
            latch.try_set_count(bad)
    for bad in (True, 2.0, "2"):
        with pytest.raises(TypeError):
            latch.try_set_count(bad)  # type: ignore[arg-type]
    for t in (-1, -0.1, math.nan):
        with pytest.raises(ValueError):
            latch.wait(t)
    with pytest.raises(ValueError):
        client.count_down_latch(b"")
    assert redis.cmd("EXISTS", "latch:basics") == 0


def _count_down(url: str, name: str, go, q) -> None:  # type: ignore[no-untyped-def]
    try:
        with hilock.Client(url) as c:
            latch = c.count_down_latch(name)
            latch.count()  # connected before the go
            q.put(("ready",))
            if not go.wait(60):
                raise RuntimeError("no go")
            t = time.monotonic()
            left = latch.count_down()
            q.put(("counted", left, t))
    except BaseException as exc:  # noqa: BLE001
        q.put(("error", repr(exc)))


def test_latch_counted_down_by_ten_processes_wakes_every_waiter(url, client, other_client):
    name = "latch:ten"
    latch = client.count_down_latch(name)
    assert latch.try_set_count(10)
    n_threads, n_tasks, procs = 4, 50, 10
    woke: "list[float]" = []
    results: "list[bool]" = []
    mu = threading.Lock()

    def thread_waiter() -> None:
        ok = other_client.count_down_latch(name).wait(60)
        with mu:
            results.append(ok)
            woke.append(time.monotonic())

    ctx = multiprocessing.get_context("fork")
    go, q = ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=_count_down, args=(url, name, go, q)) for _ in range(procs)]
    for p in ps:
        p.start()
    assert [q.get(timeout=60) for _ in ps] == [("ready",)] * procs
    threads = [threading.Thread(target=thread_waiter) for _ in range(n_threads)]
    for t in threads:
        t.start()

    async def task_waiter() -> None:
        ok = await latch.wait_async(60)
        with mu:
            results.append(ok)
            woke.append(time.monotonic())

    async def main() -> None:
        tasks = [asyncio.ensure_future(task_waiter()) for _ in range(n_tasks)]
        hub = client._hub()
        deadline = time.monotonic() + 30
        while hub.pending() < n_tasks:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert not woke  # nobody woke before the count reached 0
        go.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 60)

    run(main(), timeout=120)
    for t in threads:
        t.join(30)
    counted = [q.get(timeout=30) for _ in ps]
    for p in ps:
        p.join(20)
    assert all(c[0] == "counted" for c in counted), counted
    assert sorted(c[1] for c in counted) == list(range(10))  # 9, 8, ... 0, once each
    opener = [c[2] for c in counted if c[1] == 0]  # the count down that opened it began here
    assert len(opener) == 1
    assert results == [True] * (n_threads + n_tasks)
    spread = max(woke) - min(woke)
    print("a latch counted down by %d processes woke %d threads and %d tasks within %.1f ms"
          % (procs, n_threads, n_tasks, spread * 1000))
    assert min(woke) >= opener[0]  # none woke before the count reached 0
    assert spread < 1.0  # all at once, on one message
    assert latch.count() == 0
    assert client._hub().pending() == 0


def test_latch_async_cancel_and_count_down(client, redis):
    latch = client.count_down_latch("latch:async")

    async def main() -> None:
        assert latch.try_set_count(2)
        w = asyncio.ensure_future(latch.wait_async())
        await asyncio.sleep(0.2)
        assert not w.done()
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w
        assert client._hub().pending() == 0
        assert await latch.wait_async(0.1) is False
        w = asyncio.ensure_future(latch.wait_async(10))
        assert await latch.count_down_async() == 1
        assert await latch.count_async() == 1
        await asyncio.sleep(0.1)
        assert not w.done()
        assert await latch.count_down_async() == 0
        assert await asyncio.wait_for(w, 5) is True
        with pytest.raises(ValueError):
            await latch.wait_async(-1)

    run(main())
    assert redis.cmd("EXISTS", "latch:async") == 0


# ---- Ctrl-C ------------------------------------------------------------------

WAITER = r"""
import sys, time, hilock
c = hilock.Client(sys.argv[1])
kind = sys.argv[2]
if kind == "semaphore":
    obj = c.semaphore("sync:sigint")
    call = lambda: obj.acquire()
    state = lambda: obj.held_permits
elif kind == "expirable":
    obj = c.expirable_semaphore("sync:sigint-x", lease=60)
    call = lambda: obj.acquire(timeout=60)
    state = lambda: obj.acquired_permits()
else:
    obj = c.count_down_latch("sync:sigint-l")
    call = lambda: obj.wait()
    state = lambda: obj.count()
print("waiting", flush=True)
try:
    call()
    print("returned", flush=True)
except KeyboardInterrupt:
    t = time.monotonic()
    print("interrupted %.6f %d" % (t, state()), flush=True)
    c.close()
    sys.exit(3)
"""


@pytest.mark.parametrize("kind", ["semaphore", "expirable", "latch"])
def test_ctrl_c_interrupts_a_wait_and_takes_nothing(url, other_client, redis, kind):
    if kind == "semaphore":
        holder = other_client.semaphore("sync:sigint")
        holder.try_set_permits(1)
        assert holder.acquire()
        expect = 0  # the child holds no permit
    elif kind == "expirable":
        xs = other_client.expirable_semaphore("sync:sigint-x")
        xs.try_set_permits(1)
        taken = xs.acquire(lease=None)
        expect = 1  # only the holder's permit is out
    else:
        other_client.count_down_latch("sync:sigint-l").try_set_count(1)
        expect = 1  # still closed
    p = subprocess.Popen([sys.executable, "-c", WAITER, url, kind], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "waiting"
        # it blocks in the wait once it listens on the channel of its kind
        channel = {"semaphore": "redisson_sc:{sync:sigint}",
                   "expirable": "redisson_sc:{sync:sigint-x}",
                   "latch": "redisson_countdownlatch__channel__{sync:sigint-l}"}[kind]
        deadline = time.monotonic() + 30
        while redis.cmd("PUBSUB", "NUMSUB", channel)[1] < 1:
            assert time.monotonic() < deadline, "the waiter never subscribed"
            time.sleep(0.01)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        p.wait(20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert line.startswith("interrupted "), (line, p.stderr.read() if p.stderr else "")
    latency = float(line.split()[1]) - t0
    print("Ctrl-C in a %s wait: %.1f ms" % (kind, latency * 1000))
    assert latency < 0.5, latency
    assert int(line.split()[2]) == expect
    assert p.returncode == 3
    if kind == "semaphore":
        holder.release()
        assert _get(redis, "sync:sigint") == 1  # the interrupted waiter took nothing
    elif kind == "expirable":
        xs.release(taken)
        assert xs.available_permits() == 1 and xs.acquired_permits() == 0


# ---- interrupt, close, fork --------------------------------------------------


def _in_thread(fn):  # type: ignore[no-untyped-def]
    """Start fn in a thread; returns (thread, box) where box gets its
    result or exception."""
    box: "list" = []

    def run_() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001
            box.append(("err", exc))

    t = threading.Thread(target=run_)
    t.start()
    return t, box


def _wait_waiting(client, n: int) -> None:  # type: ignore[no-untyped-def]
    """Until n of the client's waits really wait (its stats().waiting gauge)."""
    deadline = time.monotonic() + 30
    while client.stats().waiting != n:
        assert time.monotonic() < deadline, "waiting %d, want %d" % (client.stats().waiting, n)
        time.sleep(0.01)


def test_interrupt_and_close_wake_waiting_threads(url, other_client):
    c = hilock.Client(url)
    try:
        holder = other_client.semaphore("sync:intr")
        holder.try_set_permits(1)
        assert holder.acquire()
        sem = c.semaphore("sync:intr")
        xs = c.expirable_semaphore("sync:intr-x")  # 0 permits: waits
        latch = c.count_down_latch("sync:intr-l")
        latch.try_set_count(1)
        waits = [lambda: sem.acquire(timeout=30), lambda: xs.acquire(timeout=30),
                 lambda: latch.wait(30)]
        started = [_in_thread(w) for w in waits]
        _wait_waiting(c, 3)
        assert all(not box for _, box in started)
        c.interrupt()
        for t, box in started:
            t.join(10)
            assert box and box[0][0] == "err" and isinstance(box[0][1], hilock.Interrupted), box
        assert sem.held_permits == 0 and xs.acquired_permits() == 0
        # close wakes them too
        started = [_in_thread(w) for w in waits]
        _wait_waiting(c, 3)
        c.close()
        for t, box in started:
            t.join(10)
            assert box and isinstance(box[0][1], hilock.ClientClosedError), box
        holder.release()
        assert holder.available_permits() == 1  # the woken waiters took nothing
    finally:
        c.close()


def _use_inherited(sem, q) -> None:  # type: ignore[no-untyped-def]
    try:
        sem.acquire(blocking=False)
        q.put("no error")
    except hilock.ForkedError:
        q.put("forked")
    except BaseException as exc:  # noqa: BLE001
        q.put(repr(exc))


def test_fork_inherited_semaphore_refuses(client):
    sem = client.semaphore("sync:fork")
    sem.try_set_permits(1)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_use_inherited, args=(sem, q))
    p.start()
    assert q.get(timeout=20) == "forked"
    p.join(20)
    assert sem.available_permits() == 1
