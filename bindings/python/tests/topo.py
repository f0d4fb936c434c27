"""Real Sentinel and Cluster deployments for the Python tests.

``Topology("sentinel")`` or ``Topology("cluster")`` runs the launcher
``hl_topo`` (tests/interop/topo-up.c built by CMake into
``<build>/tests/tools``, on the C tests' topology harness): Debian's
redis-server and redis-sentinel on free 127.0.0.1 ports, a master with two
replicas and three sentinels, or a cluster of three masters with a replica
each. Once it is up, ``url`` is the deployment's URL and ``info`` the rest of
the launcher's first line (``master_port``, ``data``, ``sentinels``;
``nodes``, ``masters``). ``command(line)`` sends one launcher command
(``master``, ``slot KEY_HEX``, ``masters``, ``kill-master [PORT]``,
``failover PORT``, ``restart PORT``) and returns its answer's fields as a
dict; ``close()`` stops every node (so does the end of this process: the
launcher stops at EOF on its stdin, and the harness's nodes die with it).

The binary is ``$HILOCK_TOPO`` (set by ``make test-python``), else
``<repo>/build*/tests/tools/hl_topo``. The launcher's own notes go to a log
file whose tail is added to every error.
"""

from __future__ import annotations

import glob
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

ENV_VAR = "HILOCK_TOPO"
START_TIMEOUT = 60.0


def topo_binary() -> Optional[str]:
    """The hl_topo executable, or None when there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        if not os.access(env, os.X_OK):
            raise RuntimeError("%s=%s is not an executable (run `make build`)" % (ENV_VAR, env))
        return env
    found = [p for p in glob.glob(os.path.join(REPO, "build*", "tests", "tools", "hl_topo"))
             if os.access(p, os.X_OK)]
    if not found:
        return None
    preferred = os.path.join(REPO, "build", "tests", "tools", "hl_topo")
    return preferred if preferred in found else max(found, key=os.path.getmtime)


def missing_tools() -> List[str]:
    """What the deployments need and this machine lacks: the server
    ($REDIS_SERVER, else redis-server; sentinels are the same binary with
    --sentinel) and redis-cli."""
    server = os.environ.get("REDIS_SERVER") or "redis-server"
    return [t for t in (server, "redis-cli") if shutil.which(t) is None]


def _fields(words: List[str]) -> Dict[str, str]:
    out = {}
    for w in words:
        if "=" in w:
            k, v = w.split("=", 1)
            out[k] = v
    return out


class Topology:
    def __init__(self, kind: str, binary: Optional[str] = None) -> None:
        exe = binary or topo_binary()
        if exe is None:
            raise RuntimeError("hl_topo not found: run `make build` (or set %s)" % ENV_VAR)
        self.kind = kind
        self._lock = threading.Lock()
        self._buf = b""
        self._dir = tempfile.mkdtemp(prefix="hilock-py-topo-")
        self.log_path = os.path.join(self._dir, kind + ".log")
        self._log = open(self.log_path, "wb")
        self.proc: Optional[subprocess.Popen] = subprocess.Popen(
            [exe, kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            close_fds=True)
        try:
            line = self._readline(START_TIMEOUT)
            words = line.split()
            if len(words) < 3 or words[:2] != ["up", kind]:
                raise RuntimeError("hl_topo: unexpected first line %r%s" % (line, self.log_tail()))
            self.url: str = words[2]
            self.info = _fields(words[3:])
            self._synced()
        except BaseException:
            self.close()
            raise

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\nhl_topo's log:\n" + "\n".join(text) if text else ""

    def _readline(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("hl_topo %s: no answer within %.0f s%s"
                                   % (self.kind, timeout, self.log_tail()))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("hl_topo %s exited (status %r)%s"
                                   % (self.kind, self.proc.poll(), self.log_tail()))
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def command(self, cmd: str, timeout: float = 60.0) -> Dict[str, str]:
        """One command; its answer's fields ("ok old=1 new=2" -> {"old": "1",
        "new": "2"}). RuntimeError on "err ..." or no answer in time."""
        if "\n" in cmd:
            raise ValueError("one line only")
        with self._lock:
            if self.proc is None or self.proc.stdin is None:
                raise RuntimeError("hl_topo is closed")
            os.write(self.proc.stdin.fileno(), cmd.encode() + b"\n")
            ans = self._readline(timeout)
        words = ans.split()
        if not words or words[0] != "ok":
            raise RuntimeError("hl_topo %r: %s%s" % (cmd, ans, self.log_tail()))
        return _fields(words[1:])

    def _synced(self) -> None:
        """Wait until every replica acknowledges a write of its master
        (WAIT). hl_topo says "up" once the replicas' links are up, when one
        may still be a moment from acknowledging anything (Redis 7 starts a
        replica's stream at its first ACK), and until then the client's
        WAIT after each lock change would time out."""
        from conftest import Resp

        def wait(port: int, key: bytes, replicas: int) -> None:
            with Resp(port) as r:  # one connection: WAIT counts its writes
                r.cmd("SET", key, "1")
                r.cmd("DEL", key)
                n = r.cmd("WAIT", replicas, 20000)
            if n != replicas:
                raise RuntimeError("%d of %d replicas of %d acknowledged a write%s"
                                   % (n, replicas, port, self.log_tail()))

        if self.kind == "sentinel":
            data = [a for a in self.info["data"].split(",") if a]
            wait(int(self.info["master_port"]), b"hl:topo:synced", len(data) - 1)
            return
        masters = {int(p) for p in self.command("masters")["masters"].split(",")}
        i = 0
        while masters:
            if i > 1000:
                raise RuntimeError("no key for masters %s" % sorted(masters))
            key = b"hl:topo:synced:%d" % i
            i += 1
            port = self.master_of(key)
            if port in masters:
                masters.discard(port)
                wait(port, key, 1)

    def master_of(self, key: bytes) -> int:
        """Cluster: the port of the master that owns key's slot."""
        return int(self.command("slot " + key.hex())["port"])

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # EOF: the launcher stops every node
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)
