"""The Bloom filter (Redisson's RBloomFilter): Redisson's bits and config
(vectors from a real Redisson 4.3.1 run, tests/interop/grid), many values
in one round trip, count, re-initialisation, a lost reply, bad input."""

from __future__ import annotations

import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def bits(redis, key):  # type: ignore[no-untyped-def]
    raw = redis.cmd("GET", key) or b""
    return [i * 8 + j for i, byte in enumerate(raw) for j in range(8) if byte >> (7 - j) & 1]


def test_redissons_bits_and_config(client, redis):
    f = client.bloom_filter("py:bf")
    assert f.try_init(100000, 0.0001) is True
    assert f.try_init(5, 0.5) is False
    conf = redis.cmd("HGETALL", "{py:bf}:config")
    assert dict(zip(conf[::2], conf[1::2])) == {
        b"size": b"1917011", b"hashIterations": b"13",
        b"expectedInsertions": b"100000", b"falseProbability": b"1.0E-4"}
    assert f.add("hello") is True
    assert bits(redis, "py:bf") == [4755, 176297, 323420, 494962, 642085, 803928, 813627,
                                    975470, 1122593, 1294135, 1441258, 1612800, 1774643]
    assert f.add(b"hello") is False
    assert f.contains("hello") and not f.contains("hellp")
    assert (f.get_size(), f.get_hash_iterations()) == (1917011, 13)
    assert f.get_expected_insertions() == 100000
    assert f.get_false_probability() == 0.0001
    assert f.delete() is True
    assert redis.cmd("EXISTS", "py:bf", "{py:bf}:config") == 0


def test_many_values_and_count(client, redis):
    f = client.bloom_filter("py:bf:many")
    f.try_init(1000, 0.03)
    vals = ["v%d" % i for i in range(100)]
    assert f.add_all(*vals) == 100  # Redisson 4.3.1: 100, count 101
    assert f.count() == 101
    assert f.contains_all(*vals) == 100
    assert f.contains_each("v1", "nope-1", "v2")[0::2] == [1, 1]
    assert f.add_all() == 0
    assert f.add_all(*vals) == 0


def test_reinitialised_filter_works(client, redis):
    """Deleted and initialised again with other parameters (Redisson's
    cached config breaks here, #6554)."""
    f = client.bloom_filter("py:bf:re")
    f.try_init(1000, 0.03)
    f.add("abc")
    redis.cmd("DEL", "py:bf:re", "{py:bf:re}:config")
    with pytest.raises(hilock.RedisError, match="not initialised"):
        f.add("abc")
    f.try_init(7, 0.5)
    assert f.add("abc") is True
    assert bits(redis, "py:bf:re") == [4]
    assert f.contains("abc")


def test_bad_input(client, redis):
    f = client.bloom_filter("py:bf:bad")
    with pytest.raises(hilock.RedisError, match="not initialised"):
        f.contains("a")
    with pytest.raises(hilock.RedisError, match="not initialised"):
        f.count()
    for n, p in ((100, 0), (100, 1), (100, 1.5), (100, -0.1), (0, 0.1), (-5, 0.1),
                 (1 << 62, 0.1)):
        with pytest.raises(hilock.InvalidArgumentError):
            f.try_init(n, p)
    assert redis.cmd("EXISTS", "{py:bf:bad}:config") == 0
    with pytest.raises(TypeError):
        f.add(5)  # type: ignore[arg-type]
    f.try_init(100, 0.01)
    assert f.add(b"a\x00b") and f.contains(b"a\x00b")
    redis.cmd("DEL", "py:bf:bad")
    redis.cmd("LPUSH", "py:bf:bad", "x")
    with pytest.raises(hilock.RedisError, match="another type"):
        f.add("a")


def test_add_whose_reply_is_lost_is_outcome_unknown(faultproxy, redis):  # noqa: F811
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_delay=0.05) as c:
        f = c.bloom_filter("py:bf:doubt")
        f.try_init(1000, 0.03)
        f.add("warm")  # the script loaded, the config known
        redis.cmd("DEL", "py:bf:doubt")
        proxy.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            f.add("abc")
        deadline = time.monotonic() + 10
        while not redis.cmd("EXISTS", "py:bf:doubt"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proxy.delay(0)
        assert bits(redis, "py:bf:doubt") == [1218, 2050, 2436, 3268, 4486]
        # contains is a read: resent until answered
        proxy.delay(400)
        t = threading.Timer(0.3, proxy.delay, (0,))
        t.start()
        assert f.contains("abc")
        t.join()
