"""The bit set (Redisson's RBitSet): bits at SETBIT offsets, atomic
ranges, raw bytes, BITOP with other bitsets, a lost reply, bad input."""

from __future__ import annotations

import threading
import time

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def test_bits_in_redissons_order(client, redis):
    b = client.bit_set("py:bits")
    assert b.length() == 0
    assert b.to_byte_array() == b""
    assert b.set(0) is False
    assert b.set(0) is True  # the bit before
    assert b.set(9, True) is False
    assert redis.cmd("GET", "py:bits") == b"\x80\x40"
    assert b.get(9) and not b.get(10) and not b.get(10 ** 6)
    assert (b.cardinality(), b.length(), b.size()) == (2, 10, 16)
    assert b.clear(9) is True and b.clear(9) is False
    assert b.set(5, False) is False
    assert b.length() == 1


def test_ranges_and_bytes(client, redis):
    b = client.bit_set("py:bits:r")
    b.set_range(3, 29)
    assert redis.cmd("GET", "py:bits:r") == b"\x1f\xff\xff\xf8"
    b.clear_range(5, 21)
    assert redis.cmd("GET", "py:bits:r") == b"\x18\x00\x07\xf8"
    b.set_range(0, 4, False)
    assert b.cardinality() == 9
    b.set_bytes(b"\x00\xa5\x00")
    assert b.to_byte_array() == b"\x00\xa5\x00"
    assert b.length() == 16


def test_bitops_with_other_names(client, redis):
    redis.cmd("SET", "{py:op}:b", b"\xf0\x0f")
    redis.cmd("SET", "{py:op}:c", b"\x3c")
    a = client.bit_set("{py:op}:a")
    a.set_bytes(b"\xff\xff")
    a.and_("{py:op}:b")
    assert redis.cmd("GET", "{py:op}:a") == b"\xf0\x0f"
    a.or_(b"{py:op}:c")
    assert redis.cmd("GET", "{py:op}:a") == b"\xfc\x0f"
    a.xor_("{py:op}:b", "{py:op}:c")
    assert redis.cmd("GET", "{py:op}:a") == bytes([0xfc ^ 0xf0 ^ 0x3c, 0])
    a.not_()
    assert redis.cmd("GET", "{py:op}:a") == bytes([0xff ^ 0xfc ^ 0xf0 ^ 0x3c, 0xff])
    assert redis.cmd("GET", "{py:op}:b") == b"\xf0\x0f"


def test_bad_input(client, redis):
    b = client.bit_set("py:bits:bad")
    with pytest.raises(hilock.RedisError, match="bit offset"):
        b.get(-1)
    with pytest.raises(hilock.RedisError):
        b.set(1 << 32)
    with pytest.raises(hilock.RedisError, match="bit range"):
        b.set_range(5, 4)
    with pytest.raises(TypeError):
        b.get("1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.and_(5)  # type: ignore[arg-type]
    assert redis.cmd("EXISTS", "py:bits:bad") == 0
    redis.cmd("LPUSH", "py:bits:bad", "x")
    with pytest.raises(hilock.RedisError, match="another type"):
        b.set(1)
    with pytest.raises(hilock.RedisError, match="WRONGTYPE"):
        b.length()


def test_set_whose_reply_is_lost_is_outcome_unknown(faultproxy, redis):  # noqa: F811
    """set answers the bit before: resent after a lost reply it would say
    "was set" of its own bit, so it is never resent; the bit is set once."""
    proxy = faultproxy()
    with hilock.Client(proxy.url, command_timeout=0.25, connect_timeout=1.0,
                       retry_delay=0.05) as c:
        b = c.bit_set("py:bits:doubt")
        assert b.cardinality() == 0
        proxy.delay(400)
        with pytest.raises(hilock.OutcomeUnknown):
            b.set(77)
        deadline = time.monotonic() + 10
        while redis.cmd("GETBIT", "py:bits:doubt", 77) != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proxy.delay(0)
        assert b.cardinality() == 1
        # a range is idempotent: resent, it succeeds
        b.set_range(0, 8, False)
        proxy.delay(400)
        t = threading.Timer(0.3, proxy.delay, (0,))
        t.start()
        b.set_range(100, 164)
        t.join()
        assert b.cardinality() == 65
