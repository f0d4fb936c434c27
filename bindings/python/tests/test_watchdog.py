"""Watchdog renewal, fixed leases and lost locks (short timeouts)."""

from __future__ import annotations

import threading
import time

import pytest

import hilock


def test_watchdog_keeps_lock_past_its_timeout(client, other_client, redis):
    lock = client.lock("wd")  # watchdog_timeout=2.0 in the fixture
    with lock:
        time.sleep(3.0)  # longer than the lease: only renewals keep it
        assert lock.held() and not lock.lost
        assert 0 < lock.ttl <= 2.0
        assert other_client.lock("wd").acquire(blocking=False) is False
    assert redis.cmd("EXISTS", "wd") == 0


def test_fixed_lease_expires(client, other_client):
    with pytest.raises(hilock.LockLost):
        with client.lock("lease", lease=0.5) as lock:
            assert lock.ttl <= 0.5
            # another owner gets it once the lease runs out, by itself
            assert other_client.lock("lease").acquire(timeout=5) is True
            assert not lock.held()
    assert other_client.lock("lease").held()


def test_per_call_lease_overrides(client):
    lock = client.lock("lease2", lease=60.0)
    assert lock.acquire(lease=1.0)
    assert lock.ttl <= 1.0
    lock.release()
    assert lock.acquire(lease=None)  # None: the watchdog
    assert 1.0 < lock.ttl <= 2.0  # the 2 s watchdog lease, not 60 s
    lock.release()


def test_lost_lock_raises_at_with_exit(client, redis):
    lock = client.lock("lost")
    with pytest.raises(hilock.LockLost) as ei:
        with lock:
            redis.cmd("DEL", "lost")  # someone deleted it behind our back
            assert lock.wait_lost(timeout=5.0) is True  # the watchdog noticed
            assert lock.lost
    assert "lost" in str(ei.value)
    assert not lock.lost  # cleared by the release attempt
    assert not lock.locked()


def test_lost_to_another_owner(client, other_client, redis):
    lock = client.lock("stolen")
    lock.acquire()
    redis.cmd("DEL", "stolen")
    assert other_client.lock("stolen").acquire(timeout=2)
    assert lock.wait_lost(timeout=5.0)
    with pytest.raises(hilock.LockLost):
        lock.release()
    assert other_client.lock("stolen").held()  # untouched


def test_lost_does_not_hide_body_exception(client, redis):
    lock = client.lock("lost2")
    with pytest.raises(KeyError) as ei:
        with lock:
            redis.cmd("DEL", "lost2")
            assert lock.wait_lost(timeout=5.0)
            raise KeyError("body")
    notes = getattr(ei.value, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert any("not held" in n for n in notes)


def test_wait_lost_times_out_when_held(client):
    lock = client.lock("fine")
    with lock:
        t0 = time.monotonic()
        assert lock.wait_lost(timeout=0.3) is False
        assert time.monotonic() - t0 >= 0.25
    assert lock.wait_lost(timeout=0.1) is False  # nothing watched


def test_closing_stops_renewal(url, other_client):
    c = hilock.Client(url, watchdog_timeout=1.0)
    c.lock("orphan").acquire()
    c.close()  # nothing is unlocked, but nothing renews it either
    assert other_client.lock("orphan").locked()
    assert other_client.lock("orphan").acquire(timeout=5) is True


def test_thread_that_dies_holding_stops_renewal(client, other_client):
    lock = client.lock("dead-owner")
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join(5)
    assert lock.locked()
    # the owner is gone: its 2 s lease runs out instead of living forever
    assert other_client.lock("dead-owner").acquire(timeout=8) is True
