"""The list, queue and deque (Redisson's RList, RQueue, RDeque): the list
as a MutableSequence (negative indexes, IndexError, slices, remove's
ValueError), pages past 1000 elements, NUL and empty values, a big batch,
a key of another type, a poll whose reply is lost (answered once, nothing
lost) and consumers on threads while replies are lost."""

from __future__ import annotations

import threading
import time
from collections.abc import MutableSequence

import pytest

import hilock
from faults import faultproxy  # noqa: F401  (the fixture)


def test_list_is_a_mutable_sequence(client, redis):
    lst = client.list("py:list")
    assert isinstance(lst, MutableSequence) and isinstance(lst, hilock.List)
    assert len(lst) == 0 and list(lst) == []
    lst.append("a")
    lst.extend([b"b", b"", b"c\x00d"])
    lst += ["e"]
    assert redis.cmd("LRANGE", "py:list", 0, -1) == [b"a", b"b", b"", b"c\x00d", b"e"]
    assert len(lst) == 5
    assert lst[0] == b"a" and lst[-1] == b"e" and lst[-5] == b"a" and lst[2] == b""
    with pytest.raises(IndexError):
        lst[5]
    with pytest.raises(IndexError):
        lst[-6]
    assert lst[1:3] == [b"b", b""]
    assert lst[::-2] == [b"e", b"", b"a"]
    assert lst[10:] == []
    lst[1] = "B"
    lst[-1] = "E"
    with pytest.raises(IndexError):
        lst[5] = "x"
    assert redis.cmd("LRANGE", "py:list", 0, -1) == [b"a", b"B", b"", b"c\x00d", b"E"]
    del lst[2]
    assert lst.pop() == b"E"
    assert lst.pop(0) == b"a"
    with pytest.raises(IndexError):
        del lst[7]
    assert list(lst) == [b"B", b"c\x00d"]
    lst.insert(1, "m")
    lst.insert(100, "z")  # clamped, as Python's list
    lst.insert(-100, "0")
    lst.insert(-1, "y")
    assert list(lst) == [b"0", b"B", b"m", b"c\x00d", b"y", b"z"]
    assert b"m" in lst and "nope" not in lst and 3 not in lst
    assert lst.index("c\x00d") == 3
    with pytest.raises(ValueError):
        lst.index("nope")
    lst.remove("m")
    with pytest.raises(ValueError):
        lst.remove("m")
    assert lst.count("z") == 1
    assert list(reversed(lst)) == [b"z", b"y", b"c\x00d", b"B", b"0"]
    lst.clear()
    assert len(lst) == 0 and redis.cmd("EXISTS", "py:list") == 0
    with pytest.raises(IndexError):
        lst.pop()
    with pytest.raises(IndexError):
        lst[0] = "x"  # LSET on no list


def test_list_operations(client, redis):
    lst = client.list("py:list:ops")
    assert lst.add("a") is True
    assert lst.add_all("b", "c", "b") is True
    assert lst.add_all() is False
    assert lst.get(1) == b"b" and lst.get(9) is None
    assert lst.set(0, "A") == b"a"
    lst.fast_set(-1, "B")
    assert lst.insert(0, "0") == 5
    assert lst.add_before("c", "<") == 6 and lst.add_after("c", ">") == 7
    assert lst.add_after("nope", "x") == -1
    assert lst.index_of("b") == 2 and lst.last_index_of("B") == 6
    assert lst.index_of("x") == -1
    assert lst.remove_at(3) == b"<"
    assert lst.remove("b") is None  # Python's: None, ValueError if absent
    assert lst.read_range(0, -1) == [b"0", b"A", b"c", b">", b"B"]
    lst.trim(1, 3)
    assert redis.cmd("LRANGE", "py:list:ops", 0, -1) == [b"A", b"c", b">"]
    with pytest.raises(hilock.InvalidArgumentError, match="index 3 is out of range"):
        lst.set(3, "x")
    with pytest.raises(hilock.InvalidArgumentError, match="index -9 is out of range"):
        lst.remove_at(-9)
    with pytest.raises(hilock.InvalidArgumentError, match="index 4 is out of range"):
        ListBase_insert(lst, 4, "x")
    assert redis.cmd("LRANGE", "py:list:ops", 0, -1) == [b"A", b"c", b">"]


def ListBase_insert(lst, i, v):  # type: ignore[no-untyped-def]
    return hilock.ListBase.insert(lst, i, v)


def test_list_pages_and_batches(client, redis):
    lst = client.list("py:list:many")
    vals = [str(i).encode() for i in range(25000)]
    lst.extend(vals)  # one round trip
    assert redis.cmd("LLEN", "py:list:many") == 25000
    assert list(lst) == vals  # 26 pages of 1000
    assert list(reversed(lst))[:3] == [b"24999", b"24998", b"24997"]
    assert lst.index_of("24999") == 24999
    assert lst.last_index_of("0") == 0
    assert lst[-25000] == b"0"


def test_wrong_type_and_bad_input(client, redis):
    redis.cmd("SET", "py:list:bad", "s")
    lst, q = client.list("py:list:bad"), client.queue("py:list:bad")
    with pytest.raises(hilock.RedisError, match="another type"):
        lst.append("x")
    with pytest.raises(hilock.RedisError, match="WRONGTYPE"):
        lst.pop()
    with pytest.raises(hilock.RedisError, match="another type"):
        q.poll()
    with pytest.raises(hilock.RedisError, match="another type"):
        len(q)
    with pytest.raises(TypeError):
        lst.append(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lst["x"]  # type: ignore[index]
    with pytest.raises(TypeError):
        lst[0:2] = [b"x"]  # type: ignore[index]
    with pytest.raises(hilock.InvalidArgumentError, match="limit is -1"):
        client.queue("py:q:bad").poll_many(-1)


def test_queue_and_deque(client, redis):
    q = client.queue("py:q")
    assert q.peek() is None and q.poll() is None and q.poll_many(3) == []
    assert q.offer("a") is True and q.add(b"") is True and q.offer("c\x00d")
    assert len(q) == 3 and list(q) == [b"a", b"", b"c\x00d"]  # read, not taken
    assert q.peek() == b"a" and q.poll() == b"a"
    assert q.poll_many(5) == [b"", b"c\x00d"]
    assert redis.cmd("EXISTS", "py:q") == 0
    d = client.deque("py:dq")
    assert isinstance(d, hilock.Deque)
    d.add_first("b")
    d.add_first("a")
    d.add_last("c")
    assert d.offer_first("0") and d.offer_last("d")
    assert redis.cmd("LRANGE", "py:dq", 0, -1) == [b"0", b"a", b"b", b"c", b"d"]
    assert d.peek_first() == b"0" and d.peek_last() == b"d"
    assert d.poll_first() == b"0" and d.poll_last() == b"d" and d.poll() == b"a"
    assert d.poll_last_and_offer_first_to("py:dq2") == b"c"
    assert redis.cmd("LRANGE", "py:dq2", 0, -1) == [b"c"]
    assert len(d) == 1 and list(d) == [b"b"]


def test_lost_poll_answers_what_it_took(faultproxy, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=20, retry_delay=0.05)
    try:
        q = c.queue("py:q:lost")
        for v in ("first", "second"):
            q.offer(v)
        assert c.queue("py:q:empty").poll() is None  # the script cached
        p.delay(400)
        got = []
        t = threading.Thread(target=lambda: got.append(q.poll()))
        t.start()
        deadline = time.monotonic() + 10
        while redis.cmd("LLEN", "py:q:lost") != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # its reply lost
        p.delay(0)
        t.join(10)
        assert got == [b"first"]
        assert redis.cmd("LRANGE", "py:q:lost", 0, -1) == [b"second"]
    finally:
        c.close()


def test_consumers_lose_nothing(faultproxy, client, redis):  # noqa: F811
    p = faultproxy()
    c = hilock.Client(p.url, command_timeout=0.25, retry_attempts=40, retry_delay=0.05)
    stop = threading.Event()
    produced, taken, errors = [], [], []
    lock = threading.Lock()

    def produce() -> None:
        q = client.queue("py:q:flow")
        i = 0
        while not stop.is_set() and i < 20000:
            q.offer(str(i))
            produced.append(str(i).encode())
            i += 1
            if i % 4 == 0:
                time.sleep(0.001)

    def consume() -> None:
        q = c.queue("py:q:flow")
        idle = 0
        while idle < 3:
            try:
                got = q.poll_many(5)
            except hilock.HilockError as e:
                errors.append(e)
                continue
            with lock:
                taken.extend(got)
            if not got and stop.is_set():
                idle += 1
            elif not got:
                time.sleep(0.002)

    try:
        threads = [threading.Thread(target=consume) for _ in range(2)]
        prod = threading.Thread(target=produce)
        for t in threads + [prod]:
            t.start()
        for _ in range(3):
            time.sleep(0.15)
            p.delay(400)
            time.sleep(0.5)
            p.delay(0)
        stop.set()
        prod.join(30)
        for t in threads:
            t.join(60)
        assert errors == []
        assert len(produced) > 100
        assert len(taken) == len(produced) and sorted(taken) == sorted(produced)
        assert redis.cmd("LLEN", "py:q:flow") == 0
        assert c.stats().reconnects >= 1
    finally:
        c.close()
