"""Observability: Client.stats() counts what happens, and the library's
events reach the ``"hilock"`` logger from the client's own Python thread
(``hilock-events``), never from a library thread."""

from __future__ import annotations

import asyncio
import gc
import logging
import select
import threading
import time
from typing import Callable, List

import pytest

import hilock
from conftest import Holder
from faults import faultproxy  # noqa: F401  (the fixture)


def _wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def _events_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hilock-events"]


def _records(caplog, kind: str) -> list:  # type: ignore[no-untyped-def]
    return [r for r in caplog.records
            if r.name == "hilock" and getattr(r, "hilock_event", None) is not None
            and r.hilock_event.type == kind]


def test_stats_count_acquires_waits_releases(client, other_client):
    s = client.stats()
    assert isinstance(s, hilock.Stats)
    assert s == hilock.Stats(0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    lock = client.lock("py:obs:count")
    with lock:
        with lock:  # reentrant: counted too
            pass
    with pytest.raises(hilock.NotHeldError):
        lock.release()  # not counted
    s = client.stats()
    assert (s.acquisitions, s.releases, s.acquire_waits) == (2, 2, 0)

    holder = Holder(other_client.lock("py:obs:count"))
    try:
        t0 = time.monotonic()
        assert lock.acquire(timeout=0.3) is False  # waited, in vain
        took = time.monotonic() - t0
        assert lock.acquire(blocking=False) is False  # never waits
    finally:
        holder.release()
    s = client.stats()
    assert s.acquisitions == 2
    assert s.acquire_waits == 1
    assert 0.25 <= s.wait_time <= took + 0.01
    assert other_client.stats().acquisitions == 1
    assert other_client.stats().releases == 1
    with pytest.raises(AttributeError):  # frozen
        s.losses = 3  # type: ignore[misc]
    client.close()
    assert client.stats() == s  # the final counts, after close


def _wait_waiting(client, n: int) -> None:
    deadline = time.monotonic() + 30
    while client.stats().waiting != n:
        assert time.monotonic() < deadline, f"waiting {client.stats().waiting}, want {n}"
        time.sleep(0.01)


def test_stats_waiter_reads_its_wakeup(client, other_client):
    """A blocked acquire reads the release message from the subscriber
    connection itself (no hop through the subscriber thread): counted."""
    holder = Holder(other_client.lock("py:obs:lead"))
    lock = client.lock("py:obs:lead")
    got: List[bool] = []

    def waiter() -> None:
        got.append(lock.acquire(timeout=20))
        if got[0]:
            lock.release()

    t = threading.Thread(target=waiter)
    t.start()
    try:
        _wait_waiting(client, 1)
        before = client.stats().wakeups_read_by_waiter
    finally:
        holder.release()
    t.join(25)
    assert got == [True]
    assert client.stats().wakeups_read_by_waiter > before


def test_stats_waiting_gauge(client, other_client):
    # A gauge: a thread's and an asyncio task's waits count while they
    # wait, and stop counting when they acquire or are cancelled.
    name = "py:obs:waiting"
    holder = Holder(other_client.lock(name))
    got = threading.Event()
    lock = client.lock(name)

    def waiter() -> None:
        if lock.acquire(timeout=30):
            got.set()
            lock.release()

    t = threading.Thread(target=waiter)
    t.start()
    try:
        _wait_waiting(client, 1)
        assert other_client.stats().waiting == 0

        async def main() -> None:
            task = asyncio.ensure_future(client.lock(name).acquire_async())
            await asyncio.get_running_loop().run_in_executor(None, _wait_waiting, client, 2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert client.stats().waiting == 1

        asyncio.run(main())
        assert not got.is_set()
    finally:
        holder.release()
    t.join(30)
    assert got.is_set()
    assert client.stats().waiting == 0


def test_lost_logged_as_warning_from_the_events_thread(client, redis, caplog):
    caplog.set_level(logging.INFO, logger="hilock")
    lock = client.lock(b"py:obs:lost\x00x")
    assert len(_events_threads()) >= 1  # started with the first lock
    with pytest.raises(hilock.LockLost):
        with lock:
            redis.cmd("DEL", b"py:obs:lost\x00x")
            assert lock.wait_lost(timeout=5.0)
            assert _wait_for(lambda: len(_records(caplog, "lost")) == 1)
    recs = _records(caplog, "lost")
    assert len(recs) == 1
    rec = recs[0]
    assert rec.levelno == logging.WARNING
    assert rec.threadName == "hilock-events"
    assert rec.thread != threading.get_ident()
    ev = rec.hilock_event
    assert isinstance(ev, hilock.Event)
    assert ev.name == b"py:obs:lost\x00x"
    assert ev.owner == lock.owner
    assert ev.status == "HL_ELOST"
    assert ev.node == ""
    assert rec.getMessage() == ev.message == str(ev)
    assert "was lost" in ev.message
    assert abs(ev.time - time.time()) < 60
    assert ev.monotonic <= time.monotonic()
    assert client.stats().losses == 1


def test_reconnect_logged_as_info(client, redis, caplog):
    caplog.set_level(logging.INFO, logger="hilock")
    lock = client.lock("py:obs:rc")
    assert not lock.locked()
    assert redis.cmd("CLIENT", "KILL", "TYPE", "normal") >= 1  # not ours (SKIPME)
    assert not lock.locked()  # made again
    assert client.stats().reconnects == 1
    assert _wait_for(lambda: len(_records(caplog, "reconnect")) == 1)
    rec = _records(caplog, "reconnect")[0]
    assert rec.levelno == logging.INFO
    assert rec.threadName == "hilock-events"
    assert rec.hilock_event.node.startswith("127.0.0.1:")
    assert rec.hilock_event.name is None


def test_renewals_counted(url):
    with hilock.Client(url, watchdog_timeout=0.6) as c:  # renewed every 0.2 s
        with c.lock("py:obs:renew"):
            assert _wait_for(lambda: c.stats().renewals >= 2, 5.0)
        n = c.stats().renewals
        time.sleep(0.5)
        assert c.stats().renewals == n  # none after the release
        assert c.stats().renewal_failures == 0


def test_renewal_failed_then_lost_logged(faultproxy, redis, caplog):  # noqa: F811
    """Redis stops answering the holder (a black hole in the fault proxy):
    one renewal_failed WARNING for the hold (not one per retry), every
    failed renewal counted, then the lost WARNING once the clock reaches
    the loss deadline, while the key still has lease left in Redis."""
    caplog.set_level(logging.INFO, logger="hilock")
    proxy = faultproxy()
    name = "py:obs:renewfail"
    with hilock.Client(proxy.url, watchdog_timeout=2.0, command_timeout=0.2,
                       connect_timeout=0.2, retry_delay=0.1) as c:
        lock = c.lock(name)
        lock.acquire()
        assert _wait_for(lambda: c.stats().renewals >= 2, 5.0)
        assert _records(caplog, "renewal_failed") == []
        proxy.blackhole(True)
        try:
            assert _wait_for(lambda: len(_records(caplog, "renewal_failed")) >= 1, 10.0)
            assert lock.wait_lost(timeout=10.0)
            assert redis.cmd("PTTL", name) > 0  # told before the lease ends
            assert _wait_for(lambda: len(_records(caplog, "lost")) == 1, 10.0)
            fails, losts = _records(caplog, "renewal_failed"), _records(caplog, "lost")
            assert len(fails) == 1 and len(losts) == 1
            fail, lost = fails[0], losts[0]
            assert caplog.records.index(fail) < caplog.records.index(lost)
            assert fail.levelno == logging.WARNING
            assert fail.threadName == "hilock-events"
            ev = fail.hilock_event
            assert ev.type == "renewal_failed"
            assert ev.status == "HL_EIO"
            assert ev.name == name.encode()
            assert ev.owner == lock.owner
            assert "no answer" in ev.message
            assert "did not confirm" in lost.hilock_event.message
            s = c.stats()
            assert s.renewal_failures >= 2, s  # retried, told once
            assert s.losses == 1
            with pytest.raises(hilock.LockLost):
                lock.release()  # at once: no round trip
        finally:
            proxy.blackhole(False)


def test_events_thread_ends_with_close(url, caplog):
    caplog.set_level(logging.INFO, logger="hilock")
    before = len(_events_threads())
    c = hilock.Client(url)
    assert len(_events_threads()) == before  # lazily: no lock yet
    lock = c.lock("py:obs:close")
    assert len(_events_threads()) == before + 1
    lock.acquire(lease=30.0)
    lock.force_unlock()  # a loss, queued
    c.close()  # the thread logs it, then ends; close waits for that
    assert len(_events_threads()) == before
    assert len(_records(caplog, "lost")) == 1


def test_client_dropped_unclosed_ends_its_thread(url):
    before = len(_events_threads())
    c = hilock.Client(url)
    c.lock("py:obs:drop")
    assert len(_events_threads()) == before + 1
    del c
    gc.collect()
    assert _wait_for(lambda: len(_events_threads()) == before, 10.0)


def test_log_events_false_take_them_yourself(url, redis):
    before = len(_events_threads())
    with hilock.Client(url, log_events=False, watchdog_timeout=1.0) as c:
        lock = c.lock("py:obs:manual")
        assert len(_events_threads()) == before
        fd = c.event_fd()
        assert select.select([fd], [], [], 0)[0] == []
        assert c.events() == []
        lock.acquire()
        redis.cmd("DEL", "py:obs:manual")
        assert lock.wait_lost(timeout=5.0)
        assert select.select([fd], [], [], 5.0)[0] == [fd]
        evs = c.events()
        assert [e.type for e in evs] == ["lost"]
        assert evs[0].name == b"py:obs:manual"
        assert select.select([fd], [], [], 0)[0] == []
        with pytest.raises(hilock.LockLost):
            lock.release()
    assert c.events() == []  # closed: nothing left
    with hilock.Client(url) as c2:
        with pytest.raises(RuntimeError):
            c2.events()
    with pytest.raises(TypeError):
        hilock.Client(url, log_events=1)  # type: ignore[arg-type]
