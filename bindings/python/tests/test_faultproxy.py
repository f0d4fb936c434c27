"""Self-test of faults.py: the fault proxy (raw RESP through it) and the
critical-section overlap checker."""

from __future__ import annotations

import os
import select
import socket
import threading
import time

import pytest

from conftest import Resp, _free_port
from faults import FaultProxy, cs_check, cs_enter, cs_leave, cs_verify
from faults import faultproxy  # noqa: F401  (the fixture)

PING = b"*1\r\n$4\r\nPING\r\n"


def resp(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def dial(p: FaultProxy) -> socket.socket:
    return socket.create_connection(p.addr, timeout=5.0)


def reply(s: socket.socket, timeout: float = 5.0) -> bytes:
    """One line-shaped reply (+, -, :), or b"" if none within timeout."""
    s.settimeout(timeout)
    buf = b""
    try:
        while not buf.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
    except socket.timeout:
        return b""
    return buf


def silent(s: socket.socket, seconds: float) -> bool:
    ready, _, _ = select.select([s], [], [], seconds)
    return not ready


def test_ping_and_count(faultproxy) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    assert p.url == "redis://127.0.0.1:%d/0" % p.port
    with dial(p) as s:
        s.sendall(PING)
        assert reply(s) == b"+PONG\r\n"
        assert p.count() == 1
    deadline = time.monotonic() + 5
    while p.count() != 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert p.count() == 0


def test_reset(faultproxy) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    s = dial(p)
    s.sendall(PING)
    assert reply(s) == b"+PONG\r\n"
    p.reset()
    assert p.count() == 0
    with pytest.raises(OSError):
        s.sendall(PING)
        if not s.recv(100):
            raise ConnectionError("EOF")
    s.close()
    with dial(p) as s2:
        s2.sendall(PING)
        assert reply(s2) == b"+PONG\r\n"


def test_blackhole(faultproxy, redis: Resp) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    with dial(p) as s:
        s.sendall(PING)
        assert reply(s) == b"+PONG\r\n"
        p.blackhole()
        s.sendall(resp("INCR", "faults:bh"))
        assert silent(s, 0.3)
        assert redis.cmd("GET", "faults:bh") is None  # not arrived
        with dial(p) as s2:  # accepted, but nothing flows
            s2.sendall(PING)
            assert silent(s2, 0.3)
            p.blackhole(False)
            assert reply(s2) == b"+PONG\r\n"  # late
        assert reply(s) == b":1\r\n"  # late
    with dial(p) as s3:
        s3.sendall(PING)
        assert reply(s3) == b"+PONG\r\n"


def test_drop(faultproxy, redis: Resp) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    with dial(p) as s:
        p.drop()
        s.sendall(resp("INCR", "faults:drop"))
        assert silent(s, 0.3)
        p.drop(False)
        time.sleep(0.2)
        assert redis.cmd("GET", "faults:drop") is None  # lost forever
    with dial(p) as s2:
        s2.sendall(resp("INCR", "faults:drop"))
        assert reply(s2) == b":1\r\n"


def test_delay(faultproxy) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    with dial(p) as s:
        p.delay(150)
        t0 = time.monotonic()
        s.sendall(PING)
        assert reply(s) == b"+PONG\r\n"
        assert time.monotonic() - t0 >= 0.3  # each way
        p.delay(0)
        t0 = time.monotonic()
        s.sendall(PING)
        assert reply(s) == b"+PONG\r\n"
        assert time.monotonic() - t0 < 0.3


def test_bad_command(faultproxy) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    p = faultproxy()
    with pytest.raises(RuntimeError, match="err"):
        p.command("frobnicate")
    with pytest.raises(RuntimeError, match="err"):
        p.command("delay soon")
    p.delay(0)  # still answering


def test_upstream_down() -> None:
    with FaultProxy(_free_port()) as p:
        try:
            # the proxy may reset the connection before the send, or even
            # before connect() returns
            with dial(p) as s:
                s.settimeout(5)
                s.sendall(PING)
                assert s.recv(100) == b""
        except (ConnectionResetError, BrokenPipeError):
            pass
        assert p.count() == 0
    with pytest.raises(RuntimeError):
        p.count()  # closed


def test_cs_good_and_bad(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "cs")
    for tag in ("a", "b 2", "a"):
        cs_enter(path, tag)
        cs_leave(path, tag)
    assert cs_check(path) == 3
    bad = {
        "enter a\nenter b\nleave b\nleave a\n": "line 2:",
        "enter a\nleave b\n": "line 2:",
        "leave a\n": "line 1:",
        "enter a\nleave a\nenter b\n": "line 3:",
        "enter a\nleave a": "line 2:",
        "enter a\nhello\n": "line 2:",
    }
    for text, where in bad.items():
        with open(path, "w") as f:
            f.write(text)
        n, why = cs_verify(path)
        assert n == -1 and why.startswith(where), (text, why)
        with pytest.raises(AssertionError, match=where):
            cs_check(path)
    with open(path, "w"):
        pass
    assert cs_check(path) == 0
    os.unlink(path)
    with pytest.raises(AssertionError):
        cs_check(path)


def test_cs_threads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "cs")
    mu = threading.Lock()

    def work(tag: str) -> None:
        for _ in range(50):
            with mu:
                cs_enter(path, tag)
                cs_leave(path, tag)

    ts = [threading.Thread(target=work, args=("t%d" % i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert cs_check(path) == 200
