"""The delayed queue (Redisson RDelayedQueue): offer with a delay in
seconds, Redisson's keys and member bytes, not before its time and
promptly after, a consumer that only opened it moves elements, the waiting
part's operations, bad input."""
import struct
import time

import pytest

import hilock


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
