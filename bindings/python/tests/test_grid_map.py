"""The map (Redisson's RMap): a MutableMapping over one hash, Redisson's
operations and the hash they leave, exact bytes, iteration by HSCAN pages
(never HGETALL), bulk writes in one round trip, lost replies (del and a
marked remove answer what they took; put is in doubt; m[k] = v is sent
again), another type at the key, bad input."""

from __future__ import annotations

import collections.abc
import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def test_mutable_mapping(client, redis):
    m = client.map("py:map")
    assert isinstance(m, collections.abc.MutableMapping)
    assert len(m) == 0 and "a" not in m and list(m) == []
    with pytest.raises(KeyError):
        m["a"]
    m["a"] = "1"
    m[b"b\x00"] = b""
    assert redis.cmd("HGET", "py:map", "a") == b"1"
    assert redis.cmd("HGET", "py:map", b"b\x00") == b""
    assert m["a"] == b"1" and m[b"b\x00"] == b""
    assert "a" in m and b"a" in m and b"b" not in m and 5 not in m
    assert len(m) == 2
    assert sorted(m) == [b"a", b"b\x00"]
    assert sorted(m.keys()) == [b"a", b"b\x00"]
    assert sorted(m.values()) == [b"", b"1"]
    assert sorted(m.items()) == [(b"a", b"1"), (b"b\x00", b"")]
    assert dict(m) == {b"a": b"1", b"b\x00": b""}
    assert m.get("zz") is None and m.get("zz", 7) == 7 and m.get("a") == b"1"
    del m["a"]
    assert redis.cmd("HEXISTS", "py:map", "a") == 0
    with pytest.raises(KeyError):
        del m["a"]
    assert m.pop(b"b\x00") == b""
    with pytest.raises(KeyError):
        m.pop("b")
    assert m.pop("b", None) is None
    assert redis.cmd("EXISTS", "py:map") == 0
    m.update({"x": "1"}, y="2")
    m.update([("z", b"3")])
    assert redis.cmd("HGETALL", "py:map") == [b"x", b"1", b"y", b"2", b"z", b"3"]
    assert m.setdefault("x", "9") == b"1" and m.setdefault("w", "4") == b"4"
    k, v = m.popitem()
    assert (k, v) in [(b"x", b"1"), (b"y", b"2"), (b"z", b"3"), (b"w", b"4")]
    assert redis.cmd("HEXISTS", "py:map", k) == 0 and len(m) == 3
    m.clear()
    assert redis.cmd("EXISTS", "py:map") == 0 and len(m) == 0
    with pytest.raises(KeyError):
        m.popitem()
    # a handle: equal to the same hash, hashable
    assert m == client.map("py:map") and m != client.map("py:map2") and m != {}
    assert len({m, client.map(b"py:map")}) == 1


def test_redisson_operations(client, redis):
    m = client.map("py:map:ops")
    assert m.put("a", "1") is None
    assert m.put("a", "2") == b"1"
    assert m.put_if_absent("a", "x") == b"2" and m.put_if_absent("b", "B") is None
    assert redis.cmd("HGET", "py:map:ops", "a") == b"2"
    assert m.fast_put("c", "C") is True and m.fast_put("c", "C2") is False
    assert m.fast_put_if_absent("c", "x") is False and m.fast_put_if_absent("d", "D") is True
    assert m.put_if_exists("e", "E") is None and m.put_if_exists("d", "D2") == b"D"
    assert m.replace("e", "E") is None and m.replace("d", "D3") == b"D2"
    assert m.fast_put_if_exists("e", "E") is False and m.fast_replace("e", "E") is False
    assert redis.cmd("HEXISTS", "py:map:ops", "e") == 0
    assert m.fast_replace("d", "D3") is True and m.fast_put_if_exists("d", "D3") is True
    assert m.replace_if("d", "D", "X") is False and m.replace_if("d", "D3", "D4") is True
    assert m.remove_if("d", "D3") is False and m.remove_if("d", "D4") is True
    assert m.remove("b") == b"B" and m.remove("b") is None
    assert m.contains_key("a") and not m.contains_key("b")
    assert m.size() == 2 and m.value_size("c") == 2 and m.value_size("zz") == 0
    m.put_all({"p1": "v1", "p2": ""})
    m.put_all([("p3", "v3")])
    m.put_all("p4", "v4", b"p5", b"v5")
    assert m.get_all("p1", "p2", "nope", "p5") == {b"p1": b"v1", b"p2": b"", b"p5": b"v5"}
    assert m.get_all(["p3", "p4"]) == {b"p3": b"v3", b"p4": b"v4"}
    assert m.get_all() == {} and m.get_all([]) == {}
    # bytes-likes as given, str as UTF-8, in one list; anything else named
    assert m.get_all(b"p1", bytearray(b"p3"), memoryview(b"p4")) == {b"p1": b"v1", b"p3": b"v3", b"p4": b"v4"}
    assert m.get_all([b"p1", "p5"]) == {b"p1": b"v1", b"p5": b"v5"}
    with pytest.raises(TypeError, match="keys must be bytes or str, not int"):
        m.get_all(b"p1", 5)
    assert sorted(m.random_keys(100)) == [b"a", b"c", b"p1", b"p2", b"p3", b"p4", b"p5"]
    assert m.random_entries(100)[b"p1"] == b"v1" and len(m.random_keys(2)) == 2
    assert m.fast_remove("p1", "p2", "nope") == 2 and m.fast_remove() == 0
    assert m.add_and_get("n", 0.1) == 0.1
    assert redis.cmd("HGET", "py:map:ops", "n") == b"0.1"
    assert m.add_and_get("n", 2.9) == 3.0 and m.add_and_get("n", -3) == 0.0
    assert m.add_and_get("big", 1e20) == 1e20
    assert redis.cmd("HGET", "py:map:ops", "big") == b"100000000000000000000"
    m.set("s", "S")
    assert redis.cmd("HGET", "py:map:ops", "s") == b"S"
    cursor, page = m.scan("0", 100, "p*")
    assert cursor == b"0" and sorted(page) == [(b"p3", b"v3"), (b"p4", b"v4"), (b"p5", b"v5")]
    assert sorted(m.scan_iter("p*")) == [(b"p3", b"v3"), (b"p4", b"v4"), (b"p5", b"v5")]


def test_iteration_by_pages(client, redis):
    """More than a listpack (512): written in one HMSET, read by HSCAN
    pages (each entry once), never by HGETALL."""
    m = client.map("py:map:many")
    n = 3000
    before = redis.cmd("INFO", "commandstats").decode()
    m.update({"k%d" % i: "v%d" % i for i in range(n)})
    after = redis.cmd("INFO", "commandstats").decode()

    def calls(text, cmd):
        for line in text.splitlines():
            if line.startswith("cmdstat_%s:" % cmd):
                return int(line.split("calls=")[1].split(",")[0])
        return 0

    assert calls(after, "hmset") == calls(before, "hmset") + 1
    assert len(m) == n
    keys = list(m)
    assert len(keys) == n and len(set(keys)) == n
    items = dict(m.items())
    assert len(items) == n and all(items[b"k%d" % i] == b"v%d" % i for i in range(n))
    assert sorted(m.values()) == sorted(b"v%d" % i for i in range(n))
    assert calls(redis.cmd("INFO", "commandstats").decode(), "hgetall") == calls(before, "hgetall")
    assert calls(redis.cmd("INFO", "commandstats").decode(), "hscan") > calls(before, "hscan") + 3
    assert len(list(m.scan_iter("k1*"))) == 1111
    assert len(m.get_all(keys)) == n
    assert m.fast_remove(*keys[:1000]) == 1000 and len(m) == n - 1000


def test_wrong_type_and_bad_input(client, redis):
    m = client.map("py:map:bad")
    with pytest.raises(hilock.InvalidArgumentError, match="even"):
        m.put_all("k", "v", "k2")
    with pytest.raises(TypeError):
        m.put_all([("k", "v", "x")])
    with pytest.raises(TypeError):
        m["k"] = 5  # type: ignore[assignment]
    with pytest.raises(TypeError):
        m.put(None, "v")  # type: ignore[arg-type]
    with pytest.raises(hilock.InvalidArgumentError):
        m.add_and_get("k", float("nan"))
    assert redis.cmd("EXISTS", "py:map:bad") == 0
    m["t"] = "text"
    with pytest.raises(hilock.RedisError, match="float"):
        m.add_and_get("t", 1)
    redis.cmd("DEL", "py:map:bad")
    redis.cmd("RPUSH", "py:map:bad", "x")
    for f in (lambda: m["k"], lambda: m.__setitem__("k", "v"), lambda: m.__delitem__("k"),
              lambda: len(m), lambda: list(m), lambda: m.put("k", "v"), lambda: m.get_all("k"),
              lambda: m.put_all({"k": "v"})):
        with pytest.raises(hilock.RedisError, match="another type"):
            f()
    assert m.get_all() == {} and m.fast_remove() == 0  # no round trip
    m.put_all({})
    assert redis.cmd("LRANGE", "py:map:bad", 0, -1) == [b"x"]


def test_lost_replies(faultproxy, redis):  # noqa: F811
    """put is never sent twice (in doubt, applied once); del m[k] is sent
    again with its request marker and finds what it took; m[k] = v is sent
    again and succeeds."""
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_delay=0.05) as c:
        m = c.map("py:map:lost")
        assert m.put("f", "v0") is None
        assert m.remove("none") is None  # the scripts cached
        m["g"] = "taken"
        proxy.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            m.put("f", "v1")
        deadline = time.monotonic() + 10
        while redis.cmd("HGET", "py:map:lost", "f") != b"v1":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proxy.delay(0)
        assert len(m) == 2
        # del: the resend answers what the first run took (no KeyError)
        heal_when_gone(proxy, redis, "g")
        del m["g"]
        assert redis.cmd("HEXISTS", "py:map:lost", "g") == 0
        proxy.delay(400)
        t = threading.Timer(0.6, proxy.delay, (0,))
        t.start()
        m["h"] = "H"
        t.join()
        assert redis.cmd("HGET", "py:map:lost", "h") == b"H"


def heal_when_gone(proxy, redis, field):
    """Delay replies past the command timeout until field is gone from
    py:map:lost (the command ran, its reply lost), then heal."""
    proxy.delay(400)

    def run():
        deadline = time.monotonic() + 10
        while redis_exists(redis, field) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        proxy.delay(0)

    threading.Thread(target=run, daemon=True).start()


def redis_exists(redis, field):
    return redis.cmd("HEXISTS", "py:map:lost", field) == 1
