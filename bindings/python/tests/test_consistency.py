"""The meanings of docs/consistency.md, as Python spells them: each test
asserts one row of the table, so that the code and the table cannot drift
apart."""

from __future__ import annotations

import logging
import math
import time

import pytest

import hilock
from faults import FaultProxy, faultproxy  # noqa: F401


def test_no_lease_is_none_and_the_watchdog_renews(url, redis):
    with hilock.Client(url, watchdog_timeout=1.0) as c:
        lock = c.lock("py:cons:wd")
        assert lock.lease is None
        assert lock.acquire(timeout=0, lease=None)
        time.sleep(1.5)  # past its 1 s lease: renewed
        assert 0 < redis.cmd("PTTL", "py:cons:wd") <= 1000
        lock.release()
        for bad in (0, -1, -5):
            with pytest.raises(hilock.InvalidArgumentError):
                lock.acquire(timeout=0, lease=bad)
            with pytest.raises(hilock.InvalidArgumentError):
                c.lock("py:cons:wd2", lease=bad)
        assert redis.cmd("EXISTS", "py:cons:wd") == 0


def test_a_permit_without_a_lease_is_none(client, redis):
    sem = client.expirable_semaphore("py:cons:xs")
    sem.set_permits(1)
    with pytest.raises(hilock.InvalidArgumentError):
        sem.acquire(timeout=0, lease=0)
    assert sem.available_permits() == 1
    permit = sem.acquire(timeout=0, lease=None)
    assert permit is not None
    assert sem.lease_time(permit) == math.inf
    sem.release(permit)


def test_the_wait_is_timeout_and_positional_numbers_are_refused(client, other_client, redis):
    other_client.lock("py:cons:wait").acquire()
    lock = client.lock("py:cons:wait")
    t0 = time.monotonic()
    assert lock.acquire(timeout=0) is False  # one attempt
    assert lock.acquire(blocking=False) is False
    assert time.monotonic() - t0 < 1.0
    assert lock.acquire(timeout=0.3) is False  # held elsewhere: False, no error
    # acquire(5) is not "wait 5 s" nor "wait forever": TypeError, at once,
    # for every kind that takes a wait
    sem = client.semaphore("py:cons:sem")
    xs = client.expirable_semaphore("py:cons:xs2")
    for obj in (lock, client.fair_lock("py:cons:fair"), client.spin_lock("py:cons:spin"),
                client.fenced_lock("py:cons:fenced"), sem, xs):
        t0 = time.monotonic()
        with pytest.raises(TypeError, match="must be a bool"):
            obj.acquire(5)  # type: ignore[arg-type]
        assert time.monotonic() - t0 < 1.0
    assert redis.cmd("EXISTS", "py:cons:fair") == 0
    assert redis.cmd("EXISTS", "py:cons:spin") == 0


def test_ttl_of_a_free_lock_is_none_and_no_expiry_is_inf(client, redis):
    lock = client.lock("py:cons:ttl")
    assert lock.ttl is None
    lock.acquire(lease=5)
    assert 0 < lock.ttl <= 5
    lock.release()
    redis.cmd("HSET", "py:cons:ttl", "someone:1", "1")
    assert lock.ttl == math.inf
    redis.cmd("DEL", "py:cons:ttl")


def test_a_hold_lost_in_a_with_block_raises_at_its_end(url, other_client, redis):
    with hilock.Client(url, watchdog_timeout=1.0) as c:
        lock = c.lock("py:cons:lost")
        with pytest.raises(hilock.LockLost):
            with lock:
                assert other_client.lock("py:cons:lost").force_unlock()
                assert lock.wait_lost(10)
        assert redis.cmd("EXISTS", "py:cons:lost") == 0


def test_an_outage_is_not_contention(faultproxy, redis, caplog):  # noqa: F811
    """A wait during which Redis never answered raises ConnectionError
    (naming the server), not False, and not LockTimeout from a with."""
    caplog.set_level(logging.DEBUG, logger="hilock")
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.5, connect_timeout=0.5,
                       retry_delay=0.1) as c:
        lock = c.lock("py:cons:outage", timeout=0.8)
        sem = c.semaphore("py:cons:outage-sem")
        sem.set_permits(0)
        assert lock.acquire(timeout=1)
        lock.release()
        assert sem.acquire(timeout=0.2) is False  # no permits: False
        proxy.blackhole(True)
        try:
            t0 = time.monotonic()
            with pytest.raises(hilock.ConnectionError) as ei:
                lock.acquire(timeout=1)
            took = time.monotonic() - t0
            assert isinstance(ei.value, ConnectionError)  # the builtin too
            assert proxy.url.split("/0")[0].replace("redis://", "") in str(ei.value)
            assert "unreachable" in str(ei.value)
            assert 0.9 <= took < 5
            with pytest.raises(hilock.ConnectionError):
                with lock:
                    pytest.fail("entered the block")
            with pytest.raises(hilock.ConnectionError):
                sem.acquire(timeout=0.7)
        finally:
            proxy.blackhole(False)
        # An acquire that may land late (its bytes queued in the hole) is
        # taken back: each "undo" event in doubt is followed by one that
        # ends it, HL_OK; after those nobody holds the lock. (The key may
        # well appear after the hole closes and before its undo: checking
        # it alone raced with the late acquire.)
        def undos() -> "tuple[int, list[str]]":
            ev = [r.hilock_event for r in caplog.records
                  if getattr(r, "hilock_event", None) is not None
                  and r.hilock_event.type == "undo"
                  and r.hilock_event.name == b"py:cons:outage"]
            return (sum(e.status == "HL_EINDOUBT" for e in ev),
                    [e.status for e in ev if e.status != "HL_EINDOUBT"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            begun, ended = undos()
            if len(ended) >= begun:
                break
            time.sleep(0.05)
        begun, ended = undos()
        assert len(ended) == begun and set(ended) <= {"HL_OK"}, (begun, ended)
        assert redis.cmd("EXISTS", "py:cons:outage") == 0
