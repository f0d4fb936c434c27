"""Cross-language synchronizer test: one semaphore and one latch shared by
C, Python and Lua processes (`make test-crosslang`).

    python run.py BUILD_DIR

Starts a throwaway redis-server on a free loopback port, sets a semaphore
of 3 permits and a latch of 4, and runs 4 worker processes at once: C twice
(hl_syncworker, built by CMake into BUILD_DIR/tests/tools), Python (the
hilock package of the Python this runs under) and Lua (lua5.4 with the
module built into BUILD_DIR/bindings/lua), 3 workers each, 12 in all. Every
worker appends "enter" and "leave" lines around each permit it holds to one
file, so the file's order is the real order of the holds; each process
counts the latch down once when its workers are done, and each waited for
the latch from its start.

Checks: no moment in the file with 4 holders; every worker held a permit;
the semaphore ends with its 3 permits (every one came back, none twice);
every process's latch wait saw the latch open, after the last count-down
began and within 3 s of its end. Prints TAP; exits non-zero on a failure.
Environment: REDIS_SERVER (redis-server), LUA (lua5.4), HILOCK_XL_SECONDS
(how long the workers run, 5).
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PERMITS, PROCS, PER_PROC = 3, 4, 3
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(tmp: str) -> "tuple[subprocess.Popen, int]":
    exe = os.environ.get("REDIS_SERVER", "redis-server")
    for _ in range(20):
        port = free_port()
        p = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", tmp],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), 0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return p, port
            except OSError:
                time.sleep(0.05)
        p.kill()
        p.wait()
    raise SystemExit("run.py: could not start redis-server")


def redis_cmd(port: int, *args: str) -> bytes:
    out = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(out)
        reply = b""
        while not reply.endswith(b"\r\n") or (reply.startswith(b"$") and reply.count(b"\r\n") < 2
                                             and not reply.startswith(b"$-1")):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply


def redis_get_int(port: int, key: str) -> int:
    r = redis_cmd(port, "GET", key)
    if r.startswith(b"$-1"):
        return 0
    return int(r.split(b"\r\n")[1])


class Tap:
    def __init__(self) -> None:
        self.n = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        self.n += 1
        print(("ok" if ok else "not ok") + f" {self.n} - {what}")
        if not ok:
            self.failed += 1
            for line in detail.splitlines():
                print(f"#   {line}")
        sys.stdout.flush()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: run.py BUILD_DIR", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    c_worker = os.path.join(build, "tests", "tools", "hl_syncworker")
    lua_mod = os.path.join(build, "bindings", "lua")
    lua = os.environ.get("LUA") or shutil.which("lua5.4") or shutil.which("lua")
    seconds = os.environ.get("HILOCK_XL_SECONDS", "5")
    for what, path in (("the C worker", c_worker),
                       ("the Lua module", os.path.join(lua_mod, "hilock_core.so"))):
        if not os.path.exists(path):
            print(f"run.py: {what} is missing ({path}): build first", file=sys.stderr)
            return 2
    if not lua:
        print("run.py: no lua5.4 on PATH", file=sys.stderr)
        return 2

    tmp = tempfile.mkdtemp(prefix="hilock-xl.")
    redis, port = start_redis(tmp)
    tap = Tap()
    try:
        url = f"redis://127.0.0.1:{port}/0"
        sem, latch = "xl:{sem}", "xl:{latch}"
        log = os.path.join(tmp, "sections")
        redis_cmd(port, "SET", sem, str(PERMITS))
        redis_cmd(port, "SET", latch, str(PROCS))
        env = dict(os.environ)
        env["LUA_PATH"] = os.path.join(ROOT, "bindings", "lua", "?.lua") + ";;"
        env["LUA_CPATH"] = os.path.join(lua_mod, "?.so") + ";;"
        common = [url, sem, latch, log]
        cmds = {
            "c1": [c_worker] + common + ["c1", str(PER_PROC), seconds],
            "c2": [c_worker] + common + ["c2", str(PER_PROC), seconds],
            "py": [sys.executable, os.path.join(HERE, "worker.py")] + common
            + ["py", str(PER_PROC), seconds],
            "lua": [lua, os.path.join(HERE, "worker.lua")] + common
            + ["lua", str(PER_PROC), seconds],
        }
        procs = {tag: subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
                 for tag, cmd in cmds.items()}
        for tag, p in procs.items():
            try:
                _, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            tap.check(p.returncode == 0, f"{tag} worker process exited 0",
                      f"status {p.returncode}\n{err}")

        with open(log) as f:
            lines = [line.split() for line in f]
        holders, most, sections, bad = set(), 0, {}, []
        countdowns, woke = {}, {}
        for i, parts in enumerate(lines, 1):
            kind = parts[0]
            if kind == "enter":
                if parts[1] in holders:
                    bad.append(f"line {i}: {parts[1]} entered twice")
                holders.add(parts[1])
                most = max(most, len(holders))
            elif kind == "leave":
                if parts[1] not in holders:
                    bad.append(f"line {i}: {parts[1]} left without entering")
                holders.discard(parts[1])
                sections[parts[1]] = sections.get(parts[1], 0) + 1
            elif kind == "countdown":
                countdowns[parts[1]] = (int(parts[2]), int(parts[3]))
            elif kind == "woke":
                woke[parts[1]] = int(parts[2])
        tap.check(not bad and not holders, "every enter has its leave", "\n".join(bad[:10]))
        tap.check(most <= PERMITS, f"never more than {PERMITS} holders at once "
                  f"(most: {most})")
        tap.check(most == PERMITS, f"{PERMITS} holders at once at some point (most: {most})")
        workers = sorted(sections)
        tap.check(len(workers) == PROCS * PER_PROC,
                  f"all {PROCS * PER_PROC} workers held permits "
                  f"({sum(sections.values())} sections)", f"workers: {workers}")
        available = redis_get_int(port, sem)
        tap.check(available == PERMITS, f"every permit came back, none twice "
                  f"(available: {available})")
        tap.check(sorted(countdowns) == sorted(cmds) and sorted(woke) == sorted(cmds),
                  "every process counted down once and saw the latch open",
                  f"countdowns {sorted(countdowns)}, woke {sorted(woke)}")
        if countdowns and woke:
            last_begin = max(b for b, _ in countdowns.values())
            last_end = max(a for _, a in countdowns.values())
            early = {t: w for t, w in woke.items() if w < last_begin}
            late = {t: w - last_end for t, w in woke.items() if w - last_end > 3000}
            tap.check(not early, "no waiter woke before the last count-down",
                      f"{early} < {last_begin}")
            tap.check(not late, "every waiter, in every language, woke within 3 s "
                      "of the last count-down",
                      f"ms after it: {late}")
        tap.check(redis_get_int(port, latch) == 0, "the latch is open (its key gone)")
    finally:
        redis.terminate()
        try:
            redis.wait(10)
        except subprocess.TimeoutExpired:
            redis.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {tap.n - tap.failed} passed, {tap.failed} failed")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
