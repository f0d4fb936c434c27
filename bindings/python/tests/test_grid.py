"""The data grid's objects from Python: buckets, atomics, the common
operations, values, errors, and a lost reply never applied twice."""

import array
import math
import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (fixture)


def test_bucket(client, redis):
    b = client.bucket("py:bucket")
    assert isinstance(b, hilock.Bucket) and isinstance(b, hilock.GridObject)
    assert b.get() is None
    b.set("héllo")
    assert redis.cmd("GET", "py:bucket") == "héllo".encode()
    assert b.get() == "héllo".encode()
    b.set(b"a\x00b", ttl=30)
    assert b.get() == b"a\x00b"
    assert 20 < b.ttl() <= 30
    b.set("plain")
    assert b.ttl() == math.inf
    assert b.try_set("x") is False
    assert b.set_if_exists("y") is True
    assert b.compare_and_set("nope", "z") is False
    assert b.compare_and_set("y", "z") is True
    assert b.compare_and_set(None, "w") is False
    assert b.compare_and_set("z", None) is True
    assert not b.exists() and b.ttl() is None
    assert b.compare_and_set(None, "w") is True
    assert b.get_and_set("v", ttl=60) == b"w"
    assert b.size() == 1
    assert b.get_and_delete() == b"v"
    assert b.get_and_delete() is None
    assert b.delete() is False


def test_atomic_long(client, redis):
    a = client.atomic_long("py:long")
    assert a.get() == 0
    threads = [threading.Thread(target=lambda: [a.increment_and_get() for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.get() == 200
    assert redis.cmd("GET", "py:long") == b"200"
    assert a.add_and_get(-50) == 150
    assert a.get_and_add(1) == 150
    assert a.compare_and_set(151, -(1 << 63)) is True
    assert a.get_and_set(3) == -(1 << 63)
    assert a.get_and_delete() == 3
    with pytest.raises(TypeError):
        a.add_and_get(1.5)
    with pytest.raises(hilock.InvalidArgumentError):
        a.add_and_get(1 << 64)
    redis.cmd("SET", "py:long", "1.5")
    with pytest.raises(hilock.RedisError, match="not a 64-bit integer"):
        a.get()
    redis.cmd("DEL", "py:long")
    redis.cmd("HSET", "py:long", "f", "1")
    with pytest.raises(hilock.RedisError, match="another type"):
        a.increment_and_get()


def test_atomic_double(client, redis):
    d = client.atomic_double("py:double")
    d.set(0.1)
    assert redis.cmd("GET", "py:double") == b"0.1"  # Redisson's plain form
    d.set(1e-4)
    assert redis.cmd("GET", "py:double") == b"0.00010"
    redis.cmd("SET", "py:double", "1.0E10")
    assert d.get() == 1e10
    assert d.add_and_get(0.5) == 1e10 + 0.5
    assert d.compare_and_set(1e10 + 0.5, 2) is True
    assert d.get_and_add(1) == 2.0
    with pytest.raises(hilock.InvalidArgumentError):
        d.set(float("nan"))


def test_common_and_generic(client, redis):
    b = client.bucket("py:common")
    assert b.expire(10) is False
    b.set("v")
    assert b.expire(10) is True
    assert 0 < b.ttl() <= 10
    assert b.clear_expire() is True
    assert b.ttl() == math.inf
    # the generic call: an operation by number
    a = client.atomic_long("py:generic")
    assert a._call(hilock._lib.HL_OP_ATOMIC_LONG_ADD_AND_GET, 5) == 5
    with pytest.raises(hilock.InvalidArgumentError, match="not one of a atomic_long"):
        a._call(hilock._lib.HL_OP_BUCKET_GET)
    assert repr(a) == "<hilock.AtomicLong 'py:generic'>"


def test_typed_results_in_one_call(client, redis):
    """The typed calls' one-call results (hilock_build.py's hlpy_g_
    helpers): bytes of every size, held per thread, and each result type's
    failure raising its error rather than reading as a value."""
    b = client.bucket("py:one-call")
    assert b.get() is None
    b.set(b"")
    assert b.get() == b""  # empty, not absent
    # around the size copied out at once (the held value), NUL bytes kept
    for n in (1, 65535, 65536, 65537, 1 << 20):
        v = bytes(i * 7 % 256 for i in range(n))
        b.set(v)
        assert redis.cmd("STRLEN", "py:one-call") == n
        assert b.get() == v
        assert b.get_and_set(b"x") == v
        assert b.get_and_delete() == b"x"
    # each thread's bytes are its own (the held value is per thread)
    errors = []

    def reader(i):
        mine = client.bucket("py:one-call:%d" % i)
        v = (b"%d:" % i) * (i * 40 + 1)
        mine.set(v)
        for _ in range(100):
            got = mine.get()
            if got != v:
                errors.append((i, len(got or b""), len(v)))
                return

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # the values that mean "read the status" are values when it is HL_OK
    a = client.atomic_long("py:one-call:long")
    a.set(-(1 << 63))
    assert a.get() == -(1 << 63)
    assert a.get_and_set(-(1 << 63) + 1) == -(1 << 63)
    # a failure raises, with Redis's message, for every result type
    redis.cmd("HSET", "py:one-call:hash", "f", "1")
    with pytest.raises(hilock.RedisError, match="another type"):
        client.bucket("py:one-call:hash").get()  # bytes
    with pytest.raises(hilock.RedisError, match="another type"):
        client.bucket("py:one-call:hash").compare_and_set("a", "b")  # bool
    with pytest.raises(hilock.RedisError, match="another type"):
        client.atomic_long("py:one-call:hash").get()  # i64
    with pytest.raises(hilock.RedisError, match="another type"):
        client.atomic_double("py:one-call:hash").get()  # f64
    with pytest.raises(hilock.RedisError, match="another type"):
        client.bit_set("py:one-call:hash").get(1)  # bool
    # and a success after a failure is not taken for one
    assert a.get() == -(1 << 63) + 1
    assert client.atomic_double("py:one-call:double").add_and_get(1.5) == 1.5
    assert b.get() is None


def test_generic_call_packs_its_arguments(client, redis):
    """The generic call's arguments, packed in a few arrays for one C
    call (hlpy_call): every type, in any order, and batches of more than
    the 16 it keeps on the stack."""
    lib = hilock._lib
    b = client.bucket("py:packed")
    assert b._call(lib.HL_OP_BUCKET_SET, bytearray(b"a\x00b"), None) is None
    assert redis.cmd("GET", "py:packed") == b"a\x00b"
    assert b._call(lib.HL_OP_BUCKET_GET) == b"a\x00b"
    assert b._call(lib.HL_OP_BUCKET_SET, "é", 30) is None  # str, an int ttl
    assert 0 < redis.cmd("PTTL", "py:packed") <= 30
    assert b._call(lib.HL_OP_BUCKET_GET_AND_DELETE) == "é".encode()
    assert b._call(lib.HL_OP_BUCKET_GET) is None
    d = client.atomic_double("py:packed:d")
    assert d._call(lib.HL_OP_ATOMIC_DOUBLE_ADD_AND_GET, 1.5) == 1.5
    s = client.bit_set("py:packed:s")
    assert s._call(lib.HL_OP_BIT_SET_SET, 7, True) == 0
    assert s._call(lib.HL_OP_BIT_SET_SET, 7, False) == 1
    f = client.bloom_filter("py:packed:f")
    assert f.try_init(1000, 0.01)
    values = [b"v%03d" % i for i in range(60)] + ["s%d" % i for i in range(40)]
    values[3] = b"nul\x00inside"
    assert f.add_all(*values) == 100
    assert f.contains_all(*values) == 100
    assert f.contains_each(b"v001", b"absent-value-xyz") == [1, 0]
    assert all(f.contains(v) for v in values)
    # a memoryview's len counts items: its bytes are what is added
    wide = memoryview(array.array("H", [1, 2]))
    assert f._call(lib.HL_OP_BLOOM_FILTER_ADD_ALL, b"plain-1", wide) == 2
    assert f.contains(wide.tobytes()) and f.contains(b"plain-1")
    client.bit_set("py:packed:o").set(3)
    s.set_range(0, 2)
    s.or_("py:packed:o")
    assert [s.get(i) for i in range(5)] == [True, True, False, True, False]
    with pytest.raises(hilock.InvalidArgumentError):
        s._call(lib.HL_OP_BIT_SET_GET, 1 << 64)
    with pytest.raises(TypeError):
        s._call(lib.HL_OP_BIT_SET_GET, object())
    with pytest.raises(hilock.InvalidArgumentError):
        s._call(lib.HL_OP_BIT_SET_GET, 1, 2, 3)  # too many


def test_bad_input(client):
    with pytest.raises(hilock.InvalidArgumentError):
        client.bucket("")
    with pytest.raises(TypeError):
        client.bucket("b").set(5)
    with pytest.raises(hilock.InvalidArgumentError):
        client.bucket("b").set("v", ttl=0)
    with pytest.raises(hilock.InvalidArgumentError):
        client.bucket("b").expire(-1)
    with pytest.raises(TypeError):
        hilock.Bucket("not a client", "x")  # type: ignore[arg-type]
    b = client.bucket("b")
    client.close()
    with pytest.raises(hilock.ClientClosedError):
        b.get()


def test_lost_reply_in_doubt(faultproxy, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25)
    try:
        a = c.atomic_long("py:doubt")
        assert a.get() == 0
        p.delay(400)
        with pytest.raises(hilock.OutcomeUnknown, match="once or not at all"):
            a.increment_and_get()
        deadline = time.monotonic() + 10
        while redis.cmd("GET", "py:doubt") != b"1" and time.monotonic() < deadline:
            time.sleep(0.02)
        p.delay(0)
        time.sleep(1.0)
        assert redis.cmd("GET", "py:doubt") == b"1"  # exactly once
    finally:
        c.close()
