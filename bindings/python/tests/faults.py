"""Fault injection for the Python tests: a TCP proxy and an overlap checker.

``FaultProxy(upstream_port)`` runs tests/tools/faultproxy (built by CMake):
it listens on a free 127.0.0.1 port and forwards each connection to
127.0.0.1:upstream_port. Point a client at ``proxy.url`` and break the
network under it:

- ``reset()``: every current connection pair closed with RST on both sides;
  later connections work.
- ``blackhole(on=True)``: nothing forwarded, nothing read (data waits in the
  kernel, as when packets are dropped and retransmitted later); new
  connections are accepted but get nothing. ``blackhole(False)``: everything
  held flows again, late.
- ``drop(on=True)``: data read in either direction is discarded (lost).
- ``delay(ms)``: each chunk, in each direction, is held ``ms`` ms (a round
  trip takes ``2 * ms`` more); ``delay(0)`` removes it.
- ``count()``: the connection pairs the proxy holds open.

Each call returns once the effect is in place. The binary is
``$HILOCK_FAULTPROXY`` (set by ``make test-python``), else
``<repo>/build*/tests/tools/faultproxy``. The proxy exits when its stdin
closes, so it never outlives the test process.

The overlap checker: call ``cs_enter(path, tag)`` right after acquiring a
lock and ``cs_leave(path, tag)`` right before releasing it (any thread or
process); each appends one line with a single ``write()`` on an
``O_APPEND`` descriptor, so the file's order is the real order of the
sections. ``cs_check(path)`` returns the number of sections and raises
AssertionError (with the line number) unless the lines strictly alternate
``enter T`` / ``leave T``: an overlap shows as two enters in a row.

Use ``from faults import FaultProxy, cs_check, faultproxy`` (importing the
``faultproxy`` fixture into a test module makes it available there).
"""

from __future__ import annotations

import glob
import os
import select
import subprocess
import threading
import time
from typing import Callable, Iterator, List, Optional, Tuple

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

ENV_VAR = "HILOCK_FAULTPROXY"
ANSWER_TIMEOUT = 5.0


def faultproxy_binary() -> str:
    """The faultproxy executable: $HILOCK_FAULTPROXY, else the newest one
    under <repo>/build*/tests/tools/."""
    env = os.environ.get(ENV_VAR)
    if env:
        if not os.access(env, os.X_OK):
            raise RuntimeError("%s=%s is not an executable" % (ENV_VAR, env))
        return env
    found = [p for p in glob.glob(os.path.join(REPO, "build*", "tests", "tools", "faultproxy"))
             if os.access(p, os.X_OK)]
    if not found:
        raise RuntimeError("faultproxy not found: run `make build` (or set %s)" % ENV_VAR)
    preferred = os.path.join(REPO, "build", "tests", "tools", "faultproxy")
    if preferred in found:
        return preferred
    return max(found, key=os.path.getmtime)


class FaultProxy:
    """A faultproxy process in front of 127.0.0.1:upstream_port."""

    def __init__(self, upstream_port: int, binary: Optional[str] = None) -> None:
        self.upstream_port = upstream_port
        self._lock = threading.Lock()
        self._buf = b""
        self.proc: Optional[subprocess.Popen] = None
        self.proc = subprocess.Popen(
            [binary or faultproxy_binary(), str(upstream_port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        try:
            line = self._readline(ANSWER_TIMEOUT)
            if not line.startswith("port "):
                raise RuntimeError("faultproxy: unexpected first line %r" % line)
            self.port = int(line[5:])
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return "redis://127.0.0.1:%d/0" % self.port

    @property
    def addr(self) -> Tuple[str, int]:
        return ("127.0.0.1", self.port)

    def _readline(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("faultproxy: no answer within %.1f s" % timeout)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("faultproxy exited (status %r)" % self.proc.poll())
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def command(self, cmd: str) -> str:
        """Send one command; return the answer after "ok" (usually "").
        Raises RuntimeError on an error answer or none within 5 s."""
        if "\n" in cmd:
            raise ValueError("one line only")
        with self._lock:
            if self.proc is None or self.proc.stdin is None:
                raise RuntimeError("faultproxy is closed")
            os.write(self.proc.stdin.fileno(), cmd.encode() + b"\n")
            ans = self._readline(ANSWER_TIMEOUT)
        if ans != "ok" and not ans.startswith("ok "):
            raise RuntimeError("faultproxy %r: %s" % (cmd, ans))
        return ans[3:]

    def reset(self) -> None:
        self.command("reset")

    def blackhole(self, on: bool = True) -> None:
        self.command("blackhole on" if on else "blackhole off")

    def drop(self, on: bool = True) -> None:
        self.command("drop on" if on else "drop off")

    def delay(self, ms: int) -> None:
        self.command("delay %d" % int(ms))

    def count(self) -> int:
        return int(self.command("count"))

    def close(self) -> None:
        """Stop it (idempotent)."""
        with self._lock:
            proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                try:
                    os.write(proc.stdin.fileno(), b"quit\n")
                except OSError:
                    pass
                proc.stdin.close()
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        finally:
            if proc.stdout is not None:
                proc.stdout.close()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *a: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


@pytest.fixture
def faultproxy(redis_server) -> Iterator[Callable[..., FaultProxy]]:  # type: ignore[no-untyped-def]
    """A factory: ``faultproxy()`` proxies the session's redis server,
    ``faultproxy(port)`` another port; all are closed after the test."""
    made: List[FaultProxy] = []

    def make(upstream_port: Optional[int] = None) -> FaultProxy:
        p = FaultProxy(redis_server.port if upstream_port is None else upstream_port)
        made.append(p)
        return p

    try:
        yield make
    finally:
        for p in made:
            p.close()


# --- critical-section overlap checker ----------------------------------------

def _cs_append(path: str, what: str, tag: str) -> None:
    if "\n" in tag:
        raise ValueError("the tag has a newline")
    line = ("%s %s\n" % (what, tag)).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        n = os.write(fd, line)  # one write(): one line, never interleaved
    finally:
        os.close(fd)
    if n != len(line):
        raise OSError("short write to %s" % path)


def cs_enter(path: str, tag: str) -> None:
    """Right after acquiring the lock: append "enter <tag>"."""
    _cs_append(path, "enter", tag)


def cs_leave(path: str, tag: str) -> None:
    """Right before releasing the lock: append "leave <tag>"."""
    _cs_append(path, "leave", tag)


def cs_verify(path: str) -> Tuple[int, str]:
    """(sections, "") or (-1, reason with the line number)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        return -1, "open %s: %s" % (path, exc)
    lines = data.split(b"\n")
    if lines[-1] != b"":
        return -1, "line %d: incomplete line" % len(lines)
    lines.pop()
    open_tag: Optional[bytes] = None
    open_line = 0
    sections = 0
    for i, line in enumerate(lines, 1):
        text = line.decode(errors="replace")
        if line.startswith(b"enter "):
            if open_tag is not None:
                return -1, "line %d: overlap: %r while 'enter %s' (line %d) is not left" % (
                    i, text, open_tag.decode(errors="replace"), open_line)
            open_tag, open_line = line[6:], i
        elif line.startswith(b"leave "):
            if open_tag is None:
                return -1, "line %d: %r outside any section" % (i, text)
            if line[6:] != open_tag:
                return -1, "line %d: %r but 'enter %s' (line %d) is open: overlap" % (
                    i, text, open_tag.decode(errors="replace"), open_line)
            open_tag = None
            sections += 1
        else:
            return -1, "line %d: not enter/leave: %r" % (i, text)
    if open_tag is not None:
        return -1, "line %d: 'enter %s' never left (end of file)" % (
            open_line, open_tag.decode(errors="replace"))
    return sections, ""


def cs_check(path: str) -> int:
    """The number of complete sections; AssertionError on any overlap or
    malformed line (a missing file too)."""
    n, why = cs_verify(path)
    if n < 0:
        raise AssertionError("critical sections in %s: %s" % (path, why))
    return n
