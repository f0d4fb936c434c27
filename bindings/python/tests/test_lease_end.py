"""A fixed lease that ends while held is a loss, told by the local clock
when it ends (issue 18, item 4): ``lock.lost`` turns true, ``wait_lost``
returns, the "lost" event comes, all before any release; the release then
raises :class:`hilock.LockLost`. A release before the end is no loss."""

from __future__ import annotations

import time

import pytest

import hilock


@pytest.fixture
def quiet_client(url: str):  # type: ignore[no-untyped-def]
    c = hilock.Client(url, watchdog_timeout=2.0, log_events=False)
    try:
        yield c
    finally:
        c.close()


def _lost_events(client: hilock.Client, name: bytes) -> "list[hilock.Event]":
    return [e for e in client.events() if e.type == "lost" and e.name == name]


def test_lease_end_is_told_before_release(quiet_client, redis):
    lock = quiet_client.lock("py:lease-end", lease=0.4)
    t0 = time.monotonic()
    assert lock.acquire()
    assert not lock.lost
    # told by the clock when the lease ends, without a release
    assert lock.wait_lost(timeout=5.0) is True
    took = time.monotonic() - t0
    assert 0.35 <= took < 2.0, took
    assert lock.lost
    events = _lost_events(quiet_client, b"py:lease-end")
    assert len(events) == 1
    assert events[0].status == "HL_ELOST"
    assert "lease" in events[0].message
    assert 0.35 <= events[0].monotonic - t0 < 2.0
    assert quiet_client.stats().losses == 1
    with pytest.raises(hilock.LockLost):
        lock.release()
    assert quiet_client.stats().losses == 1  # told once
    assert _lost_events(quiet_client, b"py:lease-end") == []


def test_lease_end_lost_turns_true_by_itself(quiet_client):
    lock = quiet_client.lock("py:lease-poll", lease=0.3)
    with pytest.raises(hilock.LockLost):
        with lock:
            deadline = time.monotonic() + 5.0
            while not lock.lost and time.monotonic() < deadline:
                time.sleep(0.02)
            assert lock.lost


def test_release_before_lease_end_is_no_loss(quiet_client):
    lock = quiet_client.lock("py:lease-rel", lease=0.4)
    assert lock.acquire()
    lock.release()
    assert lock.wait_lost(timeout=0.8) is False
    assert not lock.lost
    assert _lost_events(quiet_client, b"py:lease-rel") == []
    assert quiet_client.stats().losses == 0
