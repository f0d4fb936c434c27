#!/usr/bin/env python3
"""Contend for one hilock lock and bump a shared counter under it.

    HILOCK_URL=redis://127.0.0.1:6379/0 python3 contend.py [lock] [counter-key] [iterations]

Defaults: lock "hilock:demo", counter "hilock:demo:counter", 20 iterations.
Each iteration takes the lock, reads the counter with GET, writes it back
plus one with SET, and releases. GET then SET is not atomic: only the lock
keeps concurrent copies (in C, Python, Lua, Go) from losing updates, so the
final counter is exact only if the lock works.

hilock has no raw Redis commands on purpose; the counter goes through the
small RESP client below.
"""

import os
import socket
import sys
from urllib.parse import urlparse

import hilock


class Redis:
    """Just enough RESP2 for GET and SET (and AUTH/SELECT from the URL)."""

    def __init__(self, url: str) -> None:
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=10)
        self.rfile = self.sock.makefile("rb")
        if u.password:
            self.call("AUTH", *([u.username] if u.username else []), u.password)
        db = (u.path or "/").strip("/")
        if db:
            self.call("SELECT", db)

    def call(self, *args):
        msg = b"*%d\r\n" % len(args)
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            msg += b"$%d\r\n%s\r\n" % (len(b), b)
        self.sock.sendall(msg)
        line = self.rfile.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.rfile.read(n + 2)[:-2]
        return rest


def main() -> int:
    url = os.environ.get("HILOCK_URL", "redis://127.0.0.1:6379/0")
    name = sys.argv[1] if len(sys.argv) > 1 else "hilock:demo"
    key = sys.argv[2] if len(sys.argv) > 2 else "hilock:demo:counter"
    iterations = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    redis = Redis(url)
    pid = os.getpid()
    with hilock.Client(url) as client:
        lock = client.lock(name)
        for _ in range(iterations):
            with lock:  # the watchdog keeps it while we hold it
                value = int(redis.call("GET", key) or 0) + 1
                redis.call("SET", key, value)
                print("[python pid %d] holds %s, counter -> %d" % (pid, name, value), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
