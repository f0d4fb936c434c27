"""The lock kinds: fair, read-write, spin, fenced and non-reentrant locks.

Each kind excludes across threads and clients (checked with an overlap
counter), and each has its own behaviour: fair waiters in queue order, read
holds shared and write holds alone, spin waiters without pub/sub, fenced
tokens strictly increasing, non-reentrant re-entry refused.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, List

import pytest

import hilock
from test_api import in_thread


def eventually(pred: Callable[[], bool], limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


# The exclusive kinds, each made by its Client method, as (id, factory).
EXCLUSIVE = [
    ("fair", lambda c, n: c.fair_lock(n)),
    ("fair-nonreentrant", lambda c, n: c.fair_lock(n, reentrant=False)),
    ("nonreentrant", lambda c, n: c.lock(n, reentrant=False)),
    ("spin", lambda c, n: c.spin_lock(n, backoff=hilock.Backoff(0.001, 0.01, 2))),
    ("fenced", lambda c, n: c.fenced_lock(n)),
    ("write", lambda c, n: c.read_write_lock(n).write),
]


@pytest.mark.parametrize("kind,make", EXCLUSIVE, ids=[k for k, _ in EXCLUSIVE])
def test_exclusion_across_threads_and_clients(kind, make, client, other_client, redis):
    """Threads of two clients take turns; no two are ever inside at once."""
    name = "ex:" + kind
    locks = [make(client, name), make(other_client, name)]
    assert locks[0].kind == kind
    threads, rounds = 6, 12
    inside, entries, overlaps = [0], [0], [0]
    mu = threading.Lock()
    errors: List[BaseException] = []
    go = threading.Barrier(threads)

    def work(i: int) -> None:
        lock = locks[i % 2]
        try:
            go.wait(10)
            for _ in range(rounds):
                with lock:
                    with mu:
                        inside[0] += 1
                        entries[0] += 1
                        if inside[0] != 1:
                            overlaps[0] += 1
                    time.sleep(0.001)  # widen the window a lock must close
                    with mu:
                        inside[0] -= 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts)
    assert not errors, errors
    assert overlaps[0] == 0
    assert entries[0] == threads * rounds
    assert redis.cmd("EXISTS", name) == 0


def test_kind_names_and_misuse(client):
    assert client.lock("k").kind == "reentrant"
    assert client.lock("k", reentrant=False).kind == "nonreentrant"
    assert client.fair_lock("k").kind == "fair"
    assert client.fair_lock("k", reentrant=False).kind == "fair-nonreentrant"
    rw = client.read_write_lock("k")
    assert (rw.read.kind, rw.write.kind, rw.name) == ("read", "write", "k")
    assert client.spin_lock("k").kind == "spin"
    assert client.fenced_lock("k").kind == "fenced"
    assert isinstance(client.fenced_lock("k"), hilock.Lock)
    assert "fair-nonreentrant" in repr(client.fair_lock("k", reentrant=False))
    # a kind's call on a lock of another kind says whose call it is
    plain = client.lock("plain")
    with pytest.raises(AttributeError, match=r"token is a call of fenced locks .*'plain' is a reentrant lock"):
        plain.token
    with pytest.raises(AttributeError, match="fenced"):
        rw.read.last_token()
    with pytest.raises(AttributeError, match=r"backoff is a call of spin locks .* fair lock"):
        client.fair_lock("k").backoff
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        plain.nonsense
    # the kinds with calls of their own come only from their classes
    with pytest.raises(hilock.InvalidArgumentError, match="fenced"):
        hilock.Lock(client, "k", kind="fenced")
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.Lock(client, "k", kind="bogus")
    with pytest.raises(TypeError):
        client.lock("k", reentrant="no")  # type: ignore[arg-type]
    with pytest.raises(hilock.InvalidArgumentError):
        client.fair_lock("")


def test_deadlock_error_is_in_the_hierarchy():
    assert issubclass(hilock.DeadlockError, hilock.HilockError)
    assert issubclass(hilock.DeadlockError, RuntimeError)


# -- non-reentrant -------------------------------------------------------------


@pytest.mark.parametrize("fair", [False, True], ids=["plain", "fair"])
def test_non_reentrant_reacquire_raises_deadlock(fair, client, redis):
    lock = client.fair_lock("nr", reentrant=False) if fair else client.lock("nr", reentrant=False)
    with lock:
        for attempt in (lambda: lock.acquire(), lambda: lock.acquire(blocking=False),
                        lambda: lock.acquire(timeout=1.0)):
            with pytest.raises(hilock.DeadlockError) as ei:
                attempt()
            assert ei.value.status == "HL_EDEADLK" and ei.value.code == -16
            assert "non-reentrant" in str(ei.value)
        with pytest.raises(hilock.DeadlockError):
            with lock:
                pytest.fail("entered a non-reentrant lock twice")
        assert lock.hold_count == 1  # the failed re-entries took nothing
        # another thread is another owner: it waits, and gets it after us
        assert in_thread(lambda: lock.acquire(timeout=0.2)) is False
    assert redis.cmd("EXISTS", "nr") == 0
    assert in_thread(lambda: (lock.acquire(timeout=5), lock.release())[0]) is True


# -- fair ----------------------------------------------------------------------


def test_fair_waiters_in_queue_order(url, client, redis):
    """Waiters of four clients queue one after another and get the lock in
    that order, across clients (the queue lives in Redis)."""
    holder = client.fair_lock("fifo")
    holder.acquire()
    clients = [hilock.Client(url, watchdog_timeout=2.0) for _ in range(4)]
    order: List[int] = []
    mu = threading.Lock()
    threads = []
    try:
        for i, c in enumerate(clients):
            def wait(i: int = i, c: hilock.Client = c) -> None:
                lock = c.fair_lock("fifo")
                with lock:
                    with mu:
                        order.append(i)
                    time.sleep(0.02)
            t = threading.Thread(target=wait)
            t.start()
            threads.append(t)
            # the next waiter starts once this one is in Redis's queue
            assert eventually(lambda: redis.cmd("LLEN", "redisson_lock_queue:{fifo}") == i + 1)
        holder.release()
        for t in threads:
            t.join(60)
        assert order == [0, 1, 2, 3]
        assert redis.cmd("LLEN", "redisson_lock_queue:{fifo}") == 0
    finally:
        for c in clients:
            c.close()


def test_fair_attempt_does_not_barge(client, other_client, redis):
    lock = client.fair_lock("nobarge")
    theirs = other_client.fair_lock("nobarge")
    lock.acquire()
    got = threading.Event()
    release = threading.Event()

    def wait() -> None:
        with theirs:
            got.set()
            release.wait(30)

    t = threading.Thread(target=wait)
    t.start()
    assert eventually(lambda: redis.cmd("LLEN", "redisson_lock_queue:{nobarge}") == 1)
    lock.release()
    # the free lock belongs to the queued waiter, not to a new attempt
    assert lock.acquire(blocking=False) is False
    assert got.wait(10)
    assert lock.acquire(blocking=False) is False
    release.set()
    t.join(30)
    assert lock.acquire(timeout=5)
    lock.release()


def test_fair_wait_timeout_option_reaches_the_queue(url, client, redis):
    """A waiter without a timeout of its own stays queued fair_wait_timeout
    past the holder's lease: its deadline in Redis says so."""
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.Client(url, fair_wait_timeout=0)
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.Client(url, fair_wait_timeout=-1)
    holder = client.fair_lock("fwt")
    holder.acquire()
    with hilock.Client(url, watchdog_timeout=2.0, fair_wait_timeout=100.0) as waiter_client:
        waiter = waiter_client.fair_lock("fwt")
        t = threading.Thread(target=lambda: (waiter.acquire(), waiter.release()))
        t.start()
        assert eventually(lambda: redis.cmd("ZCARD", "redisson_lock_timeout:{fwt}") == 1)
        member, score = redis.cmd("ZRANGE", "redisson_lock_timeout:{fwt}", 0, 0, "WITHSCORES")
        assert member.decode().startswith(waiter_client.id + ":")
        secs, micros = redis.cmd("TIME")
        ahead_ms = int(float(score)) - (int(secs) * 1000 + int(micros) // 1000)
        # the holder's lease (at most 2 s) plus 100 s; not the default 300 s
        assert 100_000 - 1_000 <= ahead_ms <= 102_000 + 1_000, ahead_ms
        holder.release()
        t.join(20)
        assert not t.is_alive()
    assert redis.cmd("EXISTS", "fwt") == 0


# -- read-write ----------------------------------------------------------------


def test_readers_share_writer_waits(client, other_client, redis):
    rw = client.read_write_lock("rw")
    theirs = other_client.read_write_lock("rw")
    readers = 3
    all_in = threading.Barrier(readers + 1)
    leave = threading.Event()
    errors: List[BaseException] = []

    def read() -> None:
        try:
            with rw.read:
                all_in.wait(10)  # every reader is inside at once
                leave.wait(30)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=read) for _ in range(readers)]
    for t in ts:
        t.start()
    all_in.wait(10)
    assert redis.cmd("HGET", "rw", "mode") == b"read"
    assert rw.read.locked() and not rw.write.locked()
    # a reader of another client joins; writers wait
    assert theirs.read.acquire(blocking=False)
    theirs.read.release()
    assert in_thread(lambda: rw.write.acquire(timeout=0.2)) is False
    assert theirs.write.acquire(timeout=0.2) is False
    leave.set()
    for t in ts:
        t.join(30)
    assert not errors, errors
    # with every reader gone the writer is alone, and readers wait for it
    with theirs.write:
        assert redis.cmd("HGET", "rw", "mode") == b"write"
        assert in_thread(lambda: rw.read.acquire(timeout=0.2)) is False
        assert in_thread(lambda: rw.write.acquire(blocking=False)) is False
    assert redis.cmd("EXISTS", "rw") == 0


def test_read_write_mixed_threads_never_overlap_a_writer(client, other_client):
    """Readers may be inside together; a writer is always alone."""
    rws = [client.read_write_lock("rwmix"), other_client.read_write_lock("rwmix")]
    threads, rounds = 6, 10
    mu = threading.Lock()
    readers, writers = [0], [0]
    bad, errors = [0], []

    def work(i: int) -> None:
        rw = rws[i % 2]
        try:
            for r in range(rounds):
                writing = (i + r) % 3 == 0
                with (rw.write if writing else rw.read):
                    with mu:
                        if writing:
                            writers[0] += 1
                        else:
                            readers[0] += 1
                        if writers[0] > 1 or (writers[0] and readers[0]):
                            bad[0] += 1
                    time.sleep(0.003)
                    with mu:
                        if writing:
                            writers[0] -= 1
                        else:
                            readers[0] -= 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts)
    assert not errors, errors
    assert bad[0] == 0


def test_read_write_rules(client, redis):
    rw = client.read_write_lock("rules")
    # the writer holds no read hold: releasing one is "not held"
    with rw.write:
        with pytest.raises(hilock.NotHeldError):
            rw.read.release()
        # the writer may read, and keeps reading after writing
        rw.read.acquire()
        assert rw.read.hold_count == 1 and rw.write.hold_count == 1
    assert redis.cmd("HGET", "rules", "mode") == b"read"
    rw.read.release()
    assert redis.cmd("EXISTS", "rules") == 0
    # a reader asking for the write lock would wait for itself
    with rw.read:
        with pytest.raises(hilock.DeadlockError, match="read"):
            rw.write.acquire(timeout=1.0)
        with pytest.raises(hilock.DeadlockError):
            with rw.write:
                pytest.fail("a reader became the writer")
        with pytest.raises(hilock.NotHeldError):
            rw.write.release()
        assert rw.read.hold_count == 1
    assert redis.cmd("EXISTS", "rules") == 0


# -- spin ----------------------------------------------------------------------


def test_spin_waits_without_pubsub(client, other_client, redis):
    lock = client.spin_lock("spin", backoff=hilock.Backoff(initial=0.005, max=0.02, multiplier=2))
    assert lock.backoff == hilock.Backoff(0.005, 0.02, 2)
    plain = other_client.lock("spin")
    plain.acquire()  # the same hash: a spin lock and a plain lock exclude
    got = threading.Event()
    t = threading.Thread(target=lambda: (lock.acquire(timeout=20) and got.set(), lock.release()))
    t.start()
    time.sleep(0.3)
    assert not got.is_set()
    channel = "redisson_lock__channel:{spin}"
    assert redis.cmd("PUBSUB", "NUMSUB", channel) == [channel.encode(), 0]
    t0 = time.monotonic()
    plain.release()
    assert got.wait(10)
    assert time.monotonic() - t0 < 2.0  # within a few 20 ms back-offs
    t.join(10)


def test_spin_backoff_bad_input(client):
    with pytest.raises(hilock.InvalidArgumentError):
        client.spin_lock("s", backoff=hilock.Backoff(0.02, 0.01, 2))  # max < initial
    with pytest.raises(hilock.InvalidArgumentError):
        client.spin_lock("s", backoff=hilock.Backoff(0.001, 0.01, 0))
    with pytest.raises(hilock.InvalidArgumentError):
        client.spin_lock("s", backoff=hilock.Backoff(0, 0.01, 2))
    with pytest.raises(TypeError):
        client.spin_lock("s", backoff=0.01)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.spin_lock("s", backoff=hilock.Backoff(0.001, 0.01, 2.5))  # type: ignore[arg-type]
    assert client.spin_lock("s", backoff=(0.002, 0.004, 1)).backoff == hilock.Backoff(0.002, 0.004, 1)


# -- fenced --------------------------------------------------------------------


def test_fenced_tokens_strictly_increase(client, other_client, redis):
    locks = [client.fenced_lock("fence"), other_client.fenced_lock("fence")]
    assert locks[0].last_token() == 0
    with pytest.raises(hilock.NotHeldError):
        locks[0].token
    seen: List[int] = []
    mu = threading.Lock()
    errors: List[BaseException] = []

    def work(i: int) -> None:
        lock = locks[i % 2]
        try:
            for _ in range(8):
                with lock:
                    tok = lock.token
                    with lock:  # a re-entry takes the next token
                        assert lock.token == tok + 1
                    assert lock.token == tok + 1
                    with mu:
                        seen.append(tok)
                        seen.append(tok + 1)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    # in the order the holders took them, every token is new and larger
    assert seen == sorted(seen) and len(set(seen)) == len(seen) == 64
    assert seen == list(range(1, 65))
    assert locks[1].last_token() == 64
    assert redis.cmd("GET", "redisson_lock_token:{fence}") == b"64"
    with pytest.raises(hilock.NotHeldError):
        locks[0].token


def test_fenced_async_token_is_the_tasks(client):
    lock = client.fenced_lock("afence")

    async def main() -> List[int]:
        async with lock:
            mine = lock.token

            async def other() -> int:
                async with lock:
                    return lock.token

            t = asyncio.ensure_future(other())
            await asyncio.sleep(0.2)
            assert not t.done()  # another task is another owner: it waits
            assert await lock.last_token_async() == mine
        return [mine, await asyncio.wait_for(t, 20)]

    first, second = asyncio.run(main())
    assert second == first + 1


def test_kind_classes_have_docstrings():
    for cls in (hilock.FencedLock, hilock.SpinLock, hilock.ReadWriteLock, hilock.Backoff):
        assert cls.__doc__, cls
        for attr, val in vars(cls).items():
            if attr.startswith("_") or attr in ("initial", "max", "multiplier"):
                continue
            assert getattr(val, "__doc__", None), "%s.%s" % (cls.__name__, attr)
    for meth in ("fair_lock", "read_write_lock", "spin_lock", "fenced_lock"):
        assert getattr(hilock.Client, meth).__doc__, meth
