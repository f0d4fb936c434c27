"""Test harness: a throwaway redis-server for the session, flushed per test.

The server is Debian's ``redis-server`` (or ``$REDIS_SERVER``), on a free
127.0.0.1 port, with no persistence, in a temporary directory; it is stopped
at the end of the session. Tests talk to Redis directly through the tiny RESP
client below (the binding has no raw commands on purpose).
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Iterator, List, Optional, Union

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _die_with_parent() -> None:
    """In the forked child: SIGTERM it when pytest ends (Linux), also when
    the per-test bound below ends pytest without its teardown."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
    except (OSError, AttributeError):
        pass


class Resp:
    """A minimal blocking RESP2 client: enough for GET/SET/DEL/HGETALL."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Resp":
        return self

    def __exit__(self, *a: object) -> None:
        self.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):  # type: ignore[no-untyped-def]
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis error: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def cmd(self, *args: Union[str, bytes, int]):  # type: ignore[no-untyped-def]
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))
        return self._reply()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        exe = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(exe) and shutil.which(exe) is None:
            pytest.exit("redis-server not found (apt-get install redis-server or set REDIS_SERVER)", 2)
        self.dir = tempfile.mkdtemp(prefix="hilock-py-redis-")
        self.proc: Optional[subprocess.Popen] = None
        for _ in range(5):  # the free port can be taken between bind and start
            self.port = _free_port()
            self.log = open(os.path.join(self.dir, "redis.log"), "wb")
            self.proc = subprocess.Popen(
                [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"],
                stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
            if self._wait_ready(10.0):
                return
            self.stop()
        raise RuntimeError("redis-server did not start; see " + self.dir)

    def _wait_ready(self, limit: float) -> bool:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                with Resp(self.port, timeout=1.0) as r:
                    if r.cmd("PING") == "PONG":
                        return True
            except OSError:
                time.sleep(0.05)
        return False

    @property
    def url(self) -> str:
        return "redis://127.0.0.1:%d/0" % self.port

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


# Every wait in a test is bounded; this bound stops a hang all the same. A
# test that runs longer gets every thread's stack printed and the run ends
# (exit status 1), naming where it hung instead of holding `make test` until
# CI's own limit. HILOCK_TEST_PY_BOUND changes it (seconds).
TEST_BOUND = float(os.environ.get("HILOCK_TEST_PY_BOUND", "300"))
_bound_err: List[int] = []


def pytest_configure(config):  # type: ignore[no-untyped-def]
    # A copy of stderr taken before the tests' output is captured: the
    # stacks go to the terminal, not to a captured test's buffer.
    _bound_err.append(os.dup(2))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # type: ignore[no-untyped-def]
    faulthandler.dump_traceback_later(TEST_BOUND, exit=True, file=_bound_err[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    srv = RedisServer()
    try:
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(srv.dir, ignore_errors=True)


@pytest.fixture
def redis(redis_server: RedisServer) -> Iterator[Resp]:
    """A raw connection to the test server, after FLUSHALL."""
    with Resp(redis_server.port) as r:
        r.cmd("FLUSHALL")
        yield r


@pytest.fixture
def url(redis_server: RedisServer, redis: Resp) -> str:
    return redis_server.url


@pytest.fixture
def client(url: str):  # type: ignore[no-untyped-def]
    import hilock

    c = hilock.Client(url, watchdog_timeout=2.0)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def other_client(url: str):  # type: ignore[no-untyped-def]
    """A second client: another process, as far as Redis can tell."""
    import hilock

    c = hilock.Client(url, watchdog_timeout=2.0)
    try:
        yield c
    finally:
        c.close()


def python_env() -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_python(code: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout, env=python_env())


def counter_steps(lines: List[str]) -> int:
    return sum(1 for ln in lines if ln.strip())


class Holder:
    """Holds a lock in a thread of its own (its own owner) until release()."""

    def __init__(self, lock, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
        import threading

        self.lock = lock
        self._held = threading.Event()
        self._go = threading.Event()
        self.error: "BaseException | None" = None
        self._t = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self._t.start()
        if not self._held.wait(timeout):
            raise RuntimeError("holder did not get the lock")
        if self.error is not None:
            raise self.error

    def _run(self, timeout: float) -> None:
        try:
            if not self.lock.acquire(timeout=timeout):
                raise RuntimeError("holder: lock busy")
            self._held.set()
            self._go.wait(60)
            self.lock.release()
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
            self._held.set()

    def release(self) -> None:
        self._go.set()
        self._t.join(20)
        if self.error is not None:
            raise self.error
