"""The sorted set (Redisson's RSortedSet): Java's String order (UTF-16
code units), ``in``, ``len``, iteration by pages, polls, Redisson's lock
waited for, comparators refused, lost replies, bad input."""

from __future__ import annotations

import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)

# In String.compareTo order: supplementary characters (UTF-16 surrogates,
# 0xD800..) before U+E000..U+FFFF, which UTF-8 byte order puts first.
VECTORS = ["", "\x00", "A", "AB", "a", "\u00e9", "\ud7ff", "\U00010000", "\U0001F600",
           "\U0010FFFF", "\ue000", "\ue000\U0001F600", "\ue000\uffff", "\uff21", "\uffff"]


def _java_key(s: str) -> bytes:
    return s.encode("utf-16-be")  # big-endian code units compare as Java


def test_order_is_javas(client, redis):
    assert sorted(VECTORS, key=_java_key) == VECTORS
    assert sorted(VECTORS) != VECTORS  # code points (and UTF-8) differ
    s = client.sorted_set("py:ss:order")
    for v in reversed(VECTORS):
        assert s.add(v) is True
    for v in VECTORS:
        assert s.add(v.encode()) is False
    assert redis.cmd("LRANGE", "py:ss:order", 0, -1) == [v.encode() for v in VECTORS]
    assert list(s) == [v.encode() for v in VECTORS]
    assert len(s) == len(VECTORS)
    assert all(v in s for v in VECTORS)
    assert "\uff22" not in s and b"\xf0\x9f\x98\x81" not in s
    assert s.first() == b"" and s.last() == "\uffff".encode()


def test_remove_polls_and_pages(client, redis):
    s = client.sorted_set("py:ss:ops")
    assert s.poll_first() is None and s.first() is None and s.remove("x") is False
    assert list(s) == [] and len(s) == 0
    for v in ["c", "a", "d", "b", "e"]:
        s.add(v)
    assert s.remove("c") is True and s.remove("c") is False
    assert s.poll_first() == b"a" and s.poll_last() == b"e"
    assert redis.cmd("LRANGE", "py:ss:ops", 0, -1) == [b"b", b"d"]
    assert s.read_range(0, -1) == [b"b", b"d"]
    s.delete()
    values = ["k%05d" % ((i * 7919) % 2500) for i in range(2500)]
    for v in values:
        s.add(v)
    cursor, page = s.scan()
    assert len(page) == 1000 and cursor == b"1000"
    assert list(s) == sorted(v.encode() for v in values)  # 3 pages


def test_waits_for_redissons_lock(client, redis):
    s = client.sorted_set("py:ss:locked")
    lock = "redisson_sortedset_lock:{py:ss:locked}"
    redis.cmd("HSET", lock, "71b96ce8-2746-4c1a-9c5e-0a3c2d1e4f50:1", 1)
    redis.cmd("PEXPIRE", lock, 30000)
    done = []
    t = threading.Thread(target=lambda: done.append(s.add("v")))
    before = calls(redis)
    t.start()
    deadline = time.monotonic() + 10
    while calls(redis) < before + 3:  # it polls
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not done and redis.cmd("EXISTS", "py:ss:locked") == 0
    redis.cmd("DEL", lock)  # Redisson's unlock
    t.join(10)
    assert done == [True]
    assert redis.cmd("LRANGE", "py:ss:locked", 0, -1) == [b"v"]


def calls(redis) -> int:  # type: ignore[no-untyped-def]
    for line in redis.cmd("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_comparator_refused(client, redis):
    s = client.sorted_set("py:ss:cmp")
    s.add("b")
    key = "redisson_sortedset_comparator:{py:ss:cmp}"
    redis.cmd("SET", key, "com.example.ReverseCmp:3f2a")
    for op in (s.add, s.remove, s.__contains__):
        with pytest.raises(hilock.InvalidArgumentError, match="com.example.ReverseCmp") as e:
            op("a")
        assert key in str(e.value)
    assert len(s) == 1 and list(s) == [b"b"]  # reads still read


def test_bad_input(client, redis):
    s = client.sorted_set("py:ss:bad")
    with pytest.raises(hilock.InvalidArgumentError, match="UTF-8"):
        s.add(b"\xff")
    with pytest.raises(TypeError):
        s.add(5)  # type: ignore[arg-type]
    assert redis.cmd("EXISTS", "py:ss:bad") == 0
    assert s.add(b"a\x00b") is True and s.add(b"") is True
    assert list(s) == [b"", b"a\x00b"]
    with pytest.raises(hilock.InvalidArgumentError, match="cursor"):
        s.scan(b"x")
    redis.cmd("DEL", "py:ss:bad")
    redis.cmd("SET", "py:ss:bad", "x")
    with pytest.raises(hilock.RedisError, match="another type"):
        s.add("a")
    with pytest.raises(hilock.RedisError):
        len(s)


def test_lost_replies(faultproxy, redis):  # noqa: F811
    """add is never resent (OutcomeUnknown, applied once); a poll is resent
    with its marker and answers what its first run took."""
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_delay=0.05) as c:
        s = c.sorted_set("py:ss:doubt")
        s.add("a")
        s.poll_first()
        s.add("a")
        proxy.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            s.add("b")
        deadline = time.monotonic() + 10
        while redis.cmd("LLEN", "py:ss:doubt") != 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proxy.delay(0)
        assert "b" in s
        proxy.delay(400)
        t = threading.Timer(0.5, proxy.delay, (0,))
        t.start()
        assert s.poll_first() == b"a"
        t.join()
        assert redis.cmd("LRANGE", "py:ss:doubt", 0, -1) == [b"b"]
