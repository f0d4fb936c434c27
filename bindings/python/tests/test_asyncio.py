"""asyncio: an owner per task, contention, cancellation, a free event loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import hilock
from conftest import Holder


def run(coro, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    async def bounded():  # type: ignore[no-untyped-def]
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


class LoopWatch:
    """Measures the longest gap between ticks of the event loop."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self._task: "asyncio.Task[None] | None" = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._tick())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def test_tasks_contend_counter_exact(client):
    lock = client.lock("async:count")
    state = {"counter": 0, "inside": 0, "overlap": 0}

    async def worker(n: int) -> None:
        for _ in range(n):
            async with lock:
                state["inside"] += 1
                if state["inside"] != 1:
                    state["overlap"] += 1
                v = state["counter"]
                await asyncio.sleep(0.001)  # other tasks run here
                state["counter"] = v + 1
                state["inside"] -= 1

    async def main() -> float:
        watch = LoopWatch()
        watch.start()
        await asyncio.gather(*(worker(10) for _ in range(12)))  # more than any pool
        await watch.stop()
        return watch.max_gap

    gap = run(main())
    assert state["counter"] == 120
    assert state["overlap"] == 0
    assert gap < 0.5, gap  # the loop kept ticking while tasks waited
    assert not lock.locked()


def test_owner_is_the_task_not_the_thread(client):
    lock = client.lock("async:owner")

    async def main() -> None:
        holding = asyncio.Event()
        done = asyncio.Event()

        async def holder() -> None:
            async with lock:
                async with lock:  # reentrant within the task
                    assert await lock.hold_count_async() == 2
                    assert lock.hold_count == 2  # sync calls use the task too
                assert await lock.held_async()
                holding.set()
                await done.wait()

        async def other() -> None:
            await holding.wait()
            # same thread, another task: another owner
            assert await lock.acquire_async(blocking=False) is False
            assert not await lock.held_async()
            assert await lock.locked_async()
            with pytest.raises(hilock.NotHeldError):
                await lock.release_async()
            t0 = time.monotonic()
            assert await lock.acquire_async(timeout=0.2) is False
            assert time.monotonic() - t0 >= 0.15
            done.set()

        await asyncio.gather(holder(), other())
        assert not await lock.locked_async()

    run(main())


def test_waiting_task_wakes_and_loop_is_free(client, other_client):
    holder = Holder(other_client.lock("async:wake"))
    lock = client.lock("async:wake")

    async def waiter() -> tuple:
        ok = await lock.acquire_async(timeout=20)
        held = await lock.held_async()
        ttl = await lock.ttl_async()
        await lock.release_async()
        return ok, held, ttl

    async def main() -> tuple:
        watch = LoopWatch()
        watch.start()
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.5)
        assert not task.done()
        # main's task is not the owner of the waiter's hold, nor waiting
        assert not await lock.held_async()
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        res = await asyncio.wait_for(task, 5)
        await watch.stop()
        return res + (watch.max_gap,)

    ok, held, ttl, gap = run(main())
    assert ok is True and held is True and ttl is not None and ttl > 0
    assert gap < 0.5, gap
    assert not lock.locked()


def test_cancelled_waiter_does_not_take_the_lock(client, other_client):
    holder = Holder(other_client.lock("async:cancel"))
    lock = client.lock("async:cancel")

    async def main() -> None:
        task = asyncio.ensure_future(lock.acquire_async())
        await asyncio.sleep(0.3)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - t0 < 1.0
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        await asyncio.sleep(0.2)
        assert not await lock.locked_async()

    run(main())


def test_async_with_timeout_and_asyncio_timeout(client, other_client):
    other_client.lock("async:to").acquire()

    async def main() -> None:
        with pytest.raises(hilock.LockTimeout):
            async with client.lock("async:to", timeout=0.2):
                pytest.fail("entered a held lock")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.lock("async:to").acquire_async(), 0.3)
        assert not await client.lock("async:to").held_async()

    run(main())


def test_async_lost_and_force_unlock(client, redis):
    lock = client.lock("async:lost")

    async def main() -> None:
        with pytest.raises(hilock.LockLost):
            async with lock:
                assert await lock.force_unlock_async() is True

    run(main())
    assert not lock.locked()


def test_task_ending_while_holding_stops_renewal(client, other_client):
    lock = client.lock("async:orphan")

    async def main() -> None:
        # the coroutine runs in a task of its own, but main is the owner
        # (it called acquire_async); main ends holding
        await asyncio.ensure_future(lock.acquire_async())
        assert await lock.held_async()

    run(main())
    assert lock.locked()
    assert other_client.lock("async:orphan").acquire(timeout=8) is True


def test_async_methods_need_a_task(client):
    lock = client.lock("async:notask")
    coro = lock.release_async()
    with pytest.raises(RuntimeError):
        coro.send(None)
    coro.close()


def test_async_with_client(url):
    async def main() -> None:
        async with hilock.Client(url) as c:
            async with c.lock("async:client"):
                assert await c.lock("async:client").held_async()
        assert c.closed

    run(main())


def test_threads_and_tasks_together(client):
    """A thread and tasks contend on one lock without deadlock."""
    lock = client.lock("async:mixed")
    count = [0]

    def thread_work() -> None:
        for _ in range(10):
            with lock:
                v = count[0]
                time.sleep(0.001)
                count[0] = v + 1

    async def task_work() -> None:
        for _ in range(10):
            async with lock:
                v = count[0]
                await asyncio.sleep(0.001)
                count[0] = v + 1

    t = threading.Thread(target=thread_work)
    t.start()

    async def main() -> None:
        await asyncio.gather(task_work(), task_work())

    run(main())
    t.join(30)
    assert count[0] == 30


# -- the owner is the task that calls the async method, however the awaitable
#    is wrapped (wait_for runs it in a task of its own before Python 3.12)


def test_wait_for_acquire_owned_by_the_caller(client, other_client):
    lock = client.lock("async:waitfor")

    async def main() -> None:
        assert await asyncio.wait_for(lock.acquire_async(), 5) is True
        assert await lock.held_async()
        assert await asyncio.wait_for(lock.hold_count_async(), 5) == 1
        assert lock.held()  # the synchronous view from this task agrees
        # another task is another owner, and is excluded
        assert await asyncio.ensure_future(_try_in_new_task(lock)) is False
        await lock.release_async()
        assert not await lock.locked_async()
        # and release_async through wait_for too
        assert await asyncio.wait_for(lock.acquire_async(timeout=5), 5)
        await asyncio.wait_for(lock.release_async(), 5)
        assert not await lock.locked_async()

    run(main())
    assert other_client.lock("async:waitfor").acquire(blocking=False)


async def _try_in_new_task(lock) -> bool:  # type: ignore[no-untyped-def]
    return await lock.acquire_async(blocking=False)


def test_shield_gather_create_task_owned_by_the_caller(client):
    lock = client.lock("async:wrapped")
    other = client.lock("async:wrapped:2")

    async def main() -> None:
        assert await asyncio.shield(lock.acquire_async()) is True
        assert await lock.hold_count_async() == 1
        # gather: both holds are this task's (reentrant), on both locks
        r = await asyncio.gather(lock.acquire_async(), other.acquire_async())
        assert r == [True, True]
        assert await lock.hold_count_async() == 2
        assert await other.held_async()
        # create_task of the coroutine: still this task's
        assert await asyncio.create_task(lock.acquire_async()) is True
        assert await lock.hold_count_async() == 3
        for _ in range(3):
            await lock.release_async()
        await other.release_async()
        assert not await lock.locked_async()
        assert not await other.locked_async()
        with pytest.raises(hilock.NotHeldError):
            await lock.release_async()

    run(main())


def test_wait_for_timeout_takes_nothing(client, other_client):
    holder = Holder(other_client.lock("async:waitfor:to"))
    lock = client.lock("async:waitfor:to")

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(lock.acquire_async(), 0.3)
        assert not await lock.held_async()
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        await asyncio.sleep(0.3)
        assert not await lock.locked_async()  # the cancelled wait took nothing
        # and the caller can take it now, through wait_for, and give it back
        assert await asyncio.wait_for(lock.acquire_async(), 5)
        await lock.release_async()

    run(main())
    assert not lock.locked()


def test_caller_ending_holding_stops_renewal(client, other_client):
    """The owner found at call time is the one watched: a task that took the
    lock through wait_for and ends holding it stops renewing it."""
    lock = client.lock("async:waitfor:orphan")

    async def job() -> None:
        await asyncio.wait_for(lock.acquire_async(), 5)

    async def main() -> None:
        await asyncio.ensure_future(job())

    run(main())
    assert lock.locked()
    # watchdog_timeout is 2 s: renewed, it would outlive this wait
    assert other_client.lock("async:waitfor:orphan").acquire(timeout=8) is True


def test_async_methods_are_coroutine_functions_to_inspect():
    import inspect

    if not hasattr(inspect, "markcoroutinefunction"):
        pytest.skip("inspect.markcoroutinefunction is Python 3.12+")
    assert inspect.iscoroutinefunction(hilock.Lock.acquire_async)
    assert inspect.iscoroutinefunction(hilock.Lock.release_async)


def _os_threads() -> int:
    """The process's thread count, as the kernel has it."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads line in /proc/self/status")


async def _hold_all(c: hilock.Client, names: "list[str]", ready: asyncio.Event,
                    go: asyncio.Event) -> None:
    """One asyncio task holds every lock in names until go is set."""
    locks = [c.lock(n) for n in names]
    for lk in locks:
        assert await lk.acquire_async(blocking=False)
    ready.set()
    await go.wait()
    for lk in locks:
        await lk.release_async()


def test_ten_thousand_waiting_tasks_add_no_thread(client, other_client):
    n_locks, per_lock = 100, 100
    total = n_locks * per_lock
    names = ["async:many:%d" % i for i in range(n_locks)]
    state = {"got": 0, "overlap": 0}
    inside = [0] * n_locks

    async def waiter(k: int) -> None:
        async with client.lock(names[k]):
            inside[k] += 1
            if inside[k] != 1:
                state["overlap"] += 1
            state["got"] += 1
            await asyncio.sleep(0)  # other tasks run while it is held
            inside[k] -= 1

    async def main() -> tuple:
        ready, go = asyncio.Event(), asyncio.Event()
        holder = asyncio.ensure_future(_hold_all(other_client, names, ready, go))
        await ready.wait()
        # the clients' own threads (per client, not per task) are running
        # by now: a first Lock object starts its client's events thread
        client.lock(names[0])
        base_py, base_os = threading.active_count(), _os_threads()
        tasks = [asyncio.ensure_future(waiter(i % n_locks)) for i in range(total)]
        hub = client._hub()
        deadline = time.monotonic() + 120
        while hub.pending() < total:
            assert time.monotonic() < deadline, "only %d of %d tasks wait" % (hub.pending(), total)
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        counts = (base_py, threading.active_count(), base_os, _os_threads())
        assert state["got"] == 0
        t0 = time.monotonic()
        go.set()
        await asyncio.wait_for(asyncio.gather(holder, *tasks), 300)
        return counts + (time.monotonic() - t0,)

    base_py, py, base_os, os_n, took = run(main(), timeout=600)
    print("%d asyncio tasks waiting on %d locks: Python threads %d -> %d, OS threads %d -> %d; "
          "all acquired in turn in %.1f s" % (total, n_locks, base_py, py, base_os, os_n, took))
    assert py <= base_py + 16, (base_py, py)
    assert os_n <= base_os + 16, (base_os, os_n)
    assert state["got"] == total
    assert state["overlap"] == 0
    assert client._hub().pending() == 0
    assert not any(client.lock(n).locked() for n in names)


def test_cancelled_crowd_leaves_nothing_held(client, other_client, redis):
    n = 1000
    name = "async:crowd"
    lock = client.lock(name)

    async def waiter() -> str:
        ok = await lock.acquire_async()
        assert ok
        return lock.owner  # the task's owner: it holds the lock

    async def main() -> "list":
        ready, go = asyncio.Event(), asyncio.Event()
        holder = asyncio.ensure_future(_hold_all(other_client, [name], ready, go))
        await ready.wait()
        tasks = [asyncio.ensure_future(waiter()) for _ in range(n)]
        hub = client._hub()
        deadline = time.monotonic() + 60
        while hub.pending() < n:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        # the holder lets go as the crowd is cancelled: whoever the hand-off
        # reaches is cancelled holding nothing, or holds it and says so
        go.set()
        await asyncio.sleep(0)
        t0 = time.monotonic()
        for t in tasks:
            t.cancel()
        res = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        await holder
        assert time.monotonic() - t0 < 5.0
        assert hub.pending() == 0
        return res

    res = run(main())
    owners = [r for r in res if isinstance(r, str)]
    others = [r for r in res if not isinstance(r, (str, asyncio.CancelledError))]
    assert not others, others[:3]
    assert len(owners) <= 1
    fields = redis.cmd("HKEYS", name) or []
    # only a waiter that said it got the lock holds it
    assert sorted(f.decode() for f in fields) == sorted(owners), (fields, owners)
    # nothing queued is left behind: a new waiter gets it at once
    if owners:
        redis.cmd("DEL", name)
    assert client.lock(name).acquire(timeout=5)
    client.lock(name).release()


def test_wait_lost_async(client, redis):
    lock = client.lock("async:wl")

    async def main() -> tuple:
        assert await lock.acquire_async()
        task = asyncio.ensure_future(lock.wait_lost_async())
        await asyncio.sleep(0.3)
        assert not task.done()
        redis.cmd("DEL", "async:wl")  # taken from under us: the watchdog finds it
        lost = await asyncio.wait_for(task, 5)
        # a timeout, and cancelling the wait
        assert await lock.acquire_async()
        t0 = time.monotonic()
        assert await lock.wait_lost_async(timeout=0.2) is False
        waited = time.monotonic() - t0
        task = asyncio.ensure_future(lock.wait_lost_async())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await lock.release_async()
        return lost, waited

    lost, waited = run(main())
    assert lost is True
    assert 0.15 <= waited < 2.0
    assert client._hub().pending() == 0


def test_tasks_of_two_loops_share_a_client(client, other_client):
    """Two event loops in two threads wait on one client: each gets its own
    results, whichever loop takes them from the client."""
    holder = Holder(other_client.lock("async:loops"))
    results: "list" = []

    def in_thread() -> None:
        async def one() -> bool:
            ok = await client.lock("async:loops").acquire_async(timeout=20)
            await client.lock("async:loops").release_async()
            return ok

        async def main() -> "list":
            return await asyncio.gather(*(one() for _ in range(5)))

        results.extend(asyncio.run(main()))

    threads = [threading.Thread(target=in_thread) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while client._hub().pending() < 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client._hub().pending() == 10
    holder.release()
    for t in threads:
        t.join(30)
    assert results == [True] * 10
