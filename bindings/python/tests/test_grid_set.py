"""The set (Redisson's RSet) and the scored sorted set (RScoredSortedSet):
the collections.abc idiom, every op against the key in Redis, NUL and
empty members, scores, ranges with open ends, iteration by pages past the
listpack, lost replies (a pop / a poll: the answer is what was taken; an
add: in doubt, applied once), a key of another type, bad input."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import MutableSet

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def _wait(pred, limit=10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# ---- set ---------------------------------------------------------------------


def test_set_is_a_mutable_set(client, redis):
    s = client.set("py:s")
    assert isinstance(s, MutableSet) and isinstance(s, hilock.Set)
    assert len(s) == 0 and list(s) == []
    assert s.add("a") is True
    assert s.add(b"a") is False
    assert s.add(b"n\x00ul") is True and s.add(b"") is True
    assert sorted(redis.cmd("SMEMBERS", "py:s")) == [b"", b"a", b"n\x00ul"]
    assert "a" in s and b"n\x00ul" in s and b"" in s
    assert b"n" not in s and 5 not in s
    assert len(s) == 3
    assert sorted(s) == [b"", b"a", b"n\x00ul"]
    # remove answers (Redisson's remove), no KeyError; discard is quiet
    assert s.remove("a") is True
    assert s.remove("a") is False
    s.discard("a")
    s.discard(b"")
    assert redis.cmd("SMEMBERS", "py:s") == [b"n\x00ul"]
    # the mixin operators give Python sets
    s |= [b"x", b"y"]
    assert s | {b"z"} == {b"n\x00ul", b"x", b"y", b"z"}
    assert s & {b"x", b"q"} == {b"x"}
    assert s == {b"n\x00ul", b"x", b"y"}
    s -= [b"x"]
    assert redis.cmd("SCARD", "py:s") == 2
    assert s.isdisjoint({b"q"})
    taken = s.pop()
    assert taken in (b"n\x00ul", b"y") and taken not in s
    s.clear()
    assert redis.cmd("EXISTS", "py:s") == 0
    with pytest.raises(KeyError):
        s.pop()


def test_set_ops(client, redis):
    s = client.set("py:s2")
    assert s.add_all("a", "b", b"c\x00", "a") == 3
    assert s.add_all() == 0
    assert s.contains_all("a", b"c\x00") is True
    assert s.contains_all("a", "zz") is False
    assert s.contains_all() is True
    assert s.random() in (b"a", b"b", b"c\x00")
    assert sorted(s.random_many(10)) == [b"a", b"b", b"c\x00"]
    assert len(s.random_many(-5)) == 5  # repeats allowed
    assert redis.cmd("SCARD", "py:s2") == 3
    m = s.remove_random()
    assert m is not None and redis.cmd("SISMEMBER", "py:s2", m) == 0
    assert len(s.remove_random_many(5)) == 2
    assert s.remove_random() is None and s.remove_random_many(3) == []
    assert s.random() is None and s.random_many(2) == []
    s.add_all("a", "b")
    assert s.remove_all("a", "zz") == 1
    assert s.size() == 1


def test_set_many_pages(client, redis):
    s = client.set("py:many")
    n = 20000
    assert s.add_all(*["m%d" % i for i in range(n)]) == n  # one call
    assert redis.cmd("SCARD", "py:many") == n
    pages = []
    cursor = b"0"
    while True:
        cursor, page = s.scan(cursor, 500)
        pages.append(len(page))
        if cursor == b"0":
            break
    assert len(pages) > 1  # past the listpack: pages
    seen = list(s)
    assert len(seen) == n and set(seen) == {b"m%d" % i for i in range(n)}
    assert s.remove_all(*["m%d" % i for i in range(n)]) == n


def test_set_lost_replies(faultproxy, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=20, retry_delay=0.05)
    try:
        s = c.set("py:doubt")
        s.add_all("p")
        s.pop()  # the script cached (else the late copy meets NOSCRIPT)
        s.add_all("p", "q")
        p.delay(400)
        got = []
        t = threading.Thread(target=lambda: got.append(s.pop()))
        t.start()
        _wait(lambda: redis.cmd("SCARD", "py:doubt") == 1)  # it ran
        time.sleep(0.3)  # its reply lost
        p.delay(0)
        t.join(10)
        left = redis.cmd("SMEMBERS", "py:doubt")
        assert len(left) == 1  # taken once
        assert got == [b"q" if left == [b"p"] else b"p"]  # what was taken
        # once: in doubt, applied once
        p.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            s.add("y")
        _wait(lambda: redis.cmd("SISMEMBER", "py:doubt", "y") == 1)
        p.delay(0)
        time.sleep(0.8)
        assert redis.cmd("SCARD", "py:doubt") == 2
    finally:
        c.close()


def test_set_bad_input(client, redis):
    redis.cmd("SET", "py:str", "plain")
    s = client.set("py:str")
    with pytest.raises(hilock.RedisError, match="another type of value than a set"):
        s.add("x")
    with pytest.raises(hilock.RedisError, match="another type"):
        s.pop()
    with pytest.raises(hilock.RedisError):
        list(s)
    assert redis.cmd("GET", "py:str") == b"plain"
    s2 = client.set("py:s3")
    with pytest.raises(TypeError):
        s2.add(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        s2.add_all("a", 5)  # type: ignore[arg-type]
    with pytest.raises(hilock.RedisError, match="positive"):
        s2.remove_random_many(-1)
    assert redis.cmd("EXISTS", "py:s3") == 0


# ---- scored sorted set -------------------------------------------------------


def test_zset_ops(client, redis):
    z = client.scored_sorted_set("py:z")
    assert isinstance(z, hilock.ScoredSortedSet)
    assert len(z) == 0
    assert z.get_score("a") is None and z.rank("a") is None and z.rev_rank("a") is None
    assert z.first() is None and z.last() is None
    assert z.first_score() is None and z.last_score() is None
    assert z.poll_first() is None and z.poll_last() is None
    assert redis.cmd("EXISTS", "py:z") == 0
    assert z.add(1.5, "a") is True
    assert z.add(2.5, "a") is False
    assert float(redis.cmd("ZSCORE", "py:z", "a")) == 2.5
    assert z.try_add(9, "a") is False
    assert z.try_add(-0.25, b"n\x00ul") is True
    assert z.add(1e300, b"") is True
    assert z.add_score("a", 0.1) == 2.6
    assert z.add_score("new", -7) == -7.0
    assert len(z) == 4
    assert b"a" in z and b"zz" not in z and 3 not in z
    assert z.get_score(b"n\x00ul") == -0.25 and z.get_score(b"") == 1e300
    assert z.rank("new") == 0  # 0, not None
    assert z.rank("a") == 2 and z.rev_rank("a") == 1
    assert z.first() == b"new" and z.last() == b""
    assert z.first_score() == -7.0 and z.last_score() == 1e300
    assert z.value_range(1, 2) == [b"n\x00ul", b"a"]
    assert z.entry_range(-2, -1) == [(b"a", 2.6), (b"", 1e300)]
    assert z.value_range(10, 20) == []
    assert z.value_range_by_score(-math.inf, math.inf) == [b"new", b"n\x00ul", b"a", b""]
    assert z.value_range_by_score(-7, 2.6, False, False) == [b"n\x00ul"]
    assert z.value_range_by_score(-7, 2.6, offset=1, count=1) == [b"n\x00ul"]
    assert z.entry_range_by_score(0, math.inf, min_inclusive=False) == [(b"a", 2.6), (b"", 1e300)]
    assert z.count(-math.inf, 0) == 2
    assert z.count(-math.inf, 1e300, max_inclusive=False) == 3
    # iteration: ZSCAN pages (no order), and in rank order
    assert sorted(z) == sorted([(b"new", -7.0), (b"n\x00ul", -0.25), (b"a", 2.6), (b"", 1e300)])
    assert [m for m, _ in z.in_order()] == [b"new", b"n\x00ul", b"a", b""]
    assert [m for m, _ in z.in_order(reverse=True, page_size=3)] == [b"", b"a", b"n\x00ul", b"new"]
    assert z.poll_first() == b"new" and z.poll_last() == b""
    assert redis.cmd("ZRANGE", "py:z", 0, -1) == [b"n\x00ul", b"a"]
    assert z.remove("a") is True and z.remove("a") is False
    assert z.add_all({b"x": 1.0, "y": 2}) == 2
    assert z.add_all([("x", 3.5), ("w", -1)]) == 1
    assert z.add_all({}) == 0
    assert redis.cmd("ZRANGE", "py:z", 0, -1, "WITHSCORES") == [
        b"w", b"-1", b"n\x00ul", b"-0.25", b"y", b"2", b"x", b"3.5"]


def test_zset_scores(client, redis):
    z = client.scored_sorted_set("py:scores")
    vals = {"tiny": 5e-324, "neg": -123456.789, "big": 1.7976931348623157e308, "frac": 0.1}
    assert z.add_all(vals) == 4
    for m, sc in vals.items():
        assert float(redis.cmd("ZSCORE", "py:scores", m)) == sc
        assert z.get_score(m) == sc
    redis.cmd("ZINCRBY", "py:scores", "1e20", "frac")  # Redis's own form
    assert z.get_score("frac") == 1e20 + 0.1
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(hilock.InvalidArgumentError, match="finite"):
            z.add(bad, "x")
        with pytest.raises(hilock.InvalidArgumentError, match="finite"):
            z.add_score("x", bad)
        with pytest.raises(hilock.InvalidArgumentError, match="finite"):
            z.add_all({"x": bad})
    with pytest.raises(hilock.InvalidArgumentError, match="number"):
        z.count(math.nan, 1)
    with pytest.raises(TypeError):
        z.add("1", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="member, score"):
        z.add_all([("x",)])
    assert z.get_score("x") is None and len(z) == 4


def test_zset_many_pages(client, redis):
    z = client.scored_sorted_set("py:zmany")
    n = 5000
    assert z.add_all([("m%d" % i, i / 4 - 100) for i in range(n)]) == n
    assert redis.cmd("ZCARD", "py:zmany") == n
    _, page = z.scan(b"0", 500)
    assert len(page) < n  # past the listpack: pages
    got = dict(z)
    assert len(got) == n and all(got[b"m%d" % i] == i / 4 - 100 for i in range(n))
    ordered = [m for m, _ in z.in_order()]
    assert ordered == [b"m%d" % i for i in range(n)]
    assert z.poll_first_many(3) == [b"m0", b"m1", b"m2"]
    assert z.poll_last_many(2) == [b"m4999", b"m4998"]
    assert z.poll_first_many(0) == []
    assert len(z.poll_last_many(100000)) == n - 5
    assert redis.cmd("EXISTS", "py:zmany") == 0


def test_zset_lost_replies(faultproxy, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=20, retry_delay=0.05)
    try:
        z = c.scored_sorted_set("py:zdoubt")
        z.poll_first()  # the script cached
        z.add_all({"one": 1, "two": 2, "three": 3})
        p.delay(400)
        got = []
        t = threading.Thread(target=lambda: got.append(z.poll_first()))
        t.start()
        _wait(lambda: redis.cmd("ZCARD", "py:zdoubt") == 2)  # it ran
        time.sleep(0.3)
        p.delay(0)
        t.join(10)
        assert got == [b"one"]  # what was taken, not the next
        assert redis.cmd("ZRANGE", "py:zdoubt", 0, -1) == [b"two", b"three"]
        p.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            z.add_score("w", 5)
        _wait(lambda: redis.cmd("ZSCORE", "py:zdoubt", "w") is not None)
        p.delay(0)
        time.sleep(0.8)
        assert redis.cmd("ZSCORE", "py:zdoubt", "w") == b"5"  # once
    finally:
        c.close()


def test_zset_wrong_type(client, redis):
    redis.cmd("SADD", "py:aset", "m")
    z = client.scored_sorted_set("py:aset")
    with pytest.raises(hilock.RedisError, match="another type of value than a scored_sorted_set"):
        z.add(1, "x")
    with pytest.raises(hilock.RedisError):
        z.rank("m")
    with pytest.raises(hilock.RedisError):
        z.poll_first()
    with pytest.raises(hilock.RedisError):
        list(z)
    assert redis.cmd("SMEMBERS", "py:aset") == [b"m"]
