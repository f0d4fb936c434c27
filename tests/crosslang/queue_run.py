"""Cross-language queue test: producers and consumers in C, Python, Lua and
Go processes share one blocking queue, then one bounded blocking queue of
capacity 4 (`make test-crosslang`).

    python queue_run.py BUILD_DIR

Starts a throwaway redis-server. For each kind ("queue": blocking_queue,
"bounded": bounded_blocking_queue) it first starts the victim, a consumer
alone on the queue: once its take waits in Redis (BLMOVE, seen in CLIENT
LIST) the runner stops it (SIGSTOP), puts one element, which Redis moves
into the victim's in-flight list, and kills it (SIGKILL): it never read it.
Then it runs one producer per language, putting COUNT distinct elements
"<lang>-<pid>-<i>" directly, and one consumer per language, each through a
fault proxy of its own (tests/tools/faultproxy), polling with a 0.5 s
timeout under a 3 s lease and appending what it got to a file of its own.
While they run the runner three times resets every live consumer's proxy,
then black-holes two of them for a while.

When the producers are done, every element was received and no in-flight
list is left, the consumers are told to stop (a stop file). Checks: every
element put was received exactly once across the consumer files (a second
copy only for an element in the victim's file: received, perhaps not yet
acknowledged when it was killed, docs/grid-blocking-queue.md); nothing
else was received; what the victim held in flight was received by another
consumer; the queue, the takers' hash and every in-flight list are gone
(after recover()); a bounded queue's capacity is back at 4. Prints TAP;
exits non-zero on a failure.

The Go worker is $BUILD_DIR/tests/tools/hl_goqueue (mk/xlang.mk builds it
with -tags hilock_system when go is installed); without it Go is left out
(said in a TAP comment). Environment: REDIS_SERVER, LUA, HILOCK_XL_COUNT
(elements per producer, 40), HILOCK_XL_HOLE (seconds of each black hole,
4: longer than the consumers' 3 s lease, so a taker cut off past its lease
finds its element given back to another taker when its late ack lands, and
must not answer it too).
"""
import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from run import HERE, ROOT, Tap, start_redis

sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tests"))
from faults import FaultProxy  # noqa: E402

import hilock  # noqa: E402

CAPACITY = 4
LEASE_S = 3.0


class Resp:
    """A minimal RESP2 client for the checks (arrays, bulk strings, ints)."""

    def __init__(self, port: int) -> None:
        self.s = socket.create_connection(("127.0.0.1", port), 5)
        self.f = self.s.makefile("rb")

    def __call__(self, *args: str):
        self.s.sendall(b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args))
        return self._read()

    def _read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def keys(self, pattern: str) -> "list[str]":
        out, cursor = [], "0"
        while True:
            cursor, page = self("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
            out += page
            if cursor == "0":
                return out

    def close(self) -> None:
        self.f.close()
        self.s.close()


def lines_of(path: str) -> "list[str]":
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except FileNotFoundError:
        return []


def blocked_takes(r: Resp) -> "list[str]":
    """The clients Redis holds blocked in a BLMOVE (a take's wait)."""
    out = []
    for line in r("CLIENT", "LIST").splitlines():
        f = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
        if f.get("cmd") == "blmove" and "b" in f.get("flags", ""):
            out.append(f.get("id", ""))
    return out


def run_kind(tap: Tap, kind: str, port: int, tmp: str, workers: dict, env: dict,
             count: int) -> None:
    url = f"redis://127.0.0.1:{port}/0"
    name = f"xq:{{{kind}}}"
    d = os.path.join(tmp, kind)
    os.makedirs(d)
    stop = os.path.join(d, "stop")
    r = Resp(port)
    client = hilock.Client(url, watchdog_timeout=LEASE_S)
    q = (client.bounded_blocking_queue(name) if kind == "bounded"
         else client.blocking_queue(name))
    if kind == "bounded":
        tap.check(q.try_set_capacity(CAPACITY) is True, f"{kind}: capacity {CAPACITY} set")
    victim_lang = "c" if kind == "queue" else "lua"
    langs = list(workers)
    proxies, consumers, producers = {}, {}, {}
    try:
        ctags = langs + ["victim"]
        for tag in ctags:
            proxies[tag] = FaultProxy(port)

        def start_consumer(tag: str) -> None:
            cmd = workers[victim_lang if tag == "victim" else tag]
            consumers[tag] = subprocess.Popen(
                cmd + ["consume", proxies[tag].url, kind, name, os.path.join(d, f"got.{tag}"),
                       tag, stop, "120"], env=env, stderr=subprocess.PIPE, text=True)

        # The victim first, alone. Once its take waits in Redis (BLMOVE) it
        # is stopped; still waiting, the runner puts one element, which
        # Redis moves into the stopped victim's in-flight list at once (no
        # other taker waits); then it is killed: it never read the element.
        # When its wait's slice ended just then, the element stays queued:
        # the victim is continued, takes it as usual, and it tries again.
        start_consumer("victim")
        victim = consumers["victim"]
        held: "list[str]" = []
        runner_put = os.path.join(d, "put.runner")
        deadline = time.monotonic() + 30
        tries = 0
        while not held and time.monotonic() < deadline and victim.poll() is None:
            if not blocked_takes(r):
                time.sleep(0.02)
                continue
            victim.send_signal(signal.SIGSTOP)
            if not blocked_takes(r):
                victim.send_signal(signal.SIGCONT)
                continue
            v = f"runner-{tries}"
            tries += 1
            if not q.offer(v):
                victim.send_signal(signal.SIGCONT)
                continue
            with open(runner_put, "a") as f:
                f.write(v + "\n")
            wait_until = time.monotonic() + 2
            while time.monotonic() < wait_until and not held:
                if any(v in r("LRANGE", k, "0", "-1") for k in r.keys("hilock_inflight:*")):
                    held = [v]
                else:
                    time.sleep(0.02)
            if held:
                victim.send_signal(signal.SIGKILL)
            else:
                victim.send_signal(signal.SIGCONT)
        tap.check(bool(held), f"{kind}: the victim ({victim_lang}) was killed holding "
                  f"an element in flight ({held}, after {tries} tries)")
        if not held:
            victim.kill()
        victim.wait(10)

        # The live consumers, each past its connect before the producers
        # start and the faults begin (a reset during the connect fails the
        # worker): its take has opened its blocking connection, the
        # second through its proxy.
        for tag in langs:
            start_consumer(tag)
        ready: "set[str]" = set()
        deadline = time.monotonic() + 60
        while len(ready) < len(langs) and time.monotonic() < deadline:
            ready |= {t for t in langs if proxies[t].count() >= 2}
            time.sleep(0.05)
        tap.check(len(ready) == len(langs),
                  f"{kind}: the {len(langs)} live consumers are connected and taking",
                  f"not yet: {sorted(set(langs) - ready)}")
        for tag in langs:
            producers[tag] = subprocess.Popen(
                workers[tag] + ["produce", url, kind, name, os.path.join(d, f"put.{tag}"),
                                tag, str(count), "40"],
                env=env, stderr=subprocess.PIPE, text=True)

        # Faults on the live consumers' connections.
        live = [t for t in ctags if t != "victim"]
        hole = float(os.environ.get("HILOCK_XL_HOLE", "4"))
        for round_ in range(3):
            for t in live:
                proxies[t].reset()
            time.sleep(0.3)
            holed = [live[(round_ + i) % len(live)] for i in (0, 1)]
            for t in holed:
                proxies[t].blackhole(True)
            time.sleep(hole)
            for t in holed:
                proxies[t].blackhole(False)
            time.sleep(0.4)

        deadline = time.monotonic() + 90  # one bound for them all
        for tag, p in producers.items():
            try:
                _, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            tap.check(p.returncode == 0, f"{kind}: {tag} producer exited 0",
                      f"status {p.returncode}\n{err}")
        put = {t: lines_of(os.path.join(d, f"put.{t}")) for t in langs}
        offered = [e for t in langs for e in put[t]] + lines_of(runner_put)
        tap.check(all(len(v) == count for v in put.values()),
                  f"{kind}: every producer put its {count} elements",
                  str({t: len(v) for t, v in put.items()}))

        # Drained: every element received, nothing queued or in flight (the
        # victim's in-flight list goes back after its lease).
        def got_total() -> int:
            return sum(len(lines_of(os.path.join(d, f"got.{t}"))) for t in ctags)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (got_total() >= len(offered) and r("LLEN", name) == 0
                    and not r.keys("hilock_inflight:*")):
                break
            time.sleep(0.2)
        open(stop, "w").close()
        deadline = time.monotonic() + 30
        for tag in live:
            p = consumers[tag]
            try:
                _, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            tap.check(p.returncode == 0, f"{kind}: {tag} consumer exited 0 on the stop file",
                      f"status {p.returncode}\n{err}")

        got = {t: lines_of(os.path.join(d, f"got.{t}")) for t in ctags}
        seen = collections.Counter(e for t in ctags for e in got[t])
        in_victim = set(got["victim"])
        missing = sorted(set(offered) - set(seen))
        extra = sorted(set(seen) - set(offered))
        twice = {e: n for e, n in seen.items() if n > 1}
        bad_twice = {e: n for e, n in twice.items() if n > 2 or e not in in_victim}
        tap.check(not missing, f"{kind}: every one of the {len(offered)} elements "
                  f"was received", f"missing {len(missing)}: {missing[:20]}")
        tap.check(not extra, f"{kind}: nothing received that was not put", str(extra[:20]))
        tap.check(not bad_twice, f"{kind}: nothing received twice (a second copy "
                  f"allowed only beside the victim's: {len(twice) - len(bad_twice)})",
                  f"{len(bad_twice)} twice: {sorted(bad_twice)[:20]}")
        by_others = {e: sum(got[t].count(e) for t in live) for e in held}
        tap.check(held and all(n == 1 for n in by_others.values())
                  and not (set(held) & in_victim),
                  f"{kind}: what the victim held in flight went to another consumer, once",
                  f"{by_others}; in the victim's file: {set(held) & in_victim}")
        tap.check(all(got[t] for t in live), f"{kind}: every live consumer received "
                  f"elements", str({t: len(v) for t, v in got.items()}))

        # Nothing left: recover() gives back whatever an abandoned attempt
        # still holds once its window passed; then no hilock key remains.
        left = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            q.recover()
            left = r.keys("hilock_consumers:*") + r.keys("hilock_inflight:*")
            if not left:
                break
            time.sleep(0.5)
        tap.check(not left, f"{kind}: no takers' hash nor in-flight list left", str(left))
        tap.check(r("LLEN", name) == 0 and r("EXISTS", name) == 0, f"{kind}: the queue is empty",
                  str(r("LRANGE", name, "0", "-1")))
        if kind == "bounded":
            caps = {k: r("GET", k) for k in r.keys("redisson_bqs:*")}
            tap.check(list(caps.values()) == [str(CAPACITY)]
                      and q.remaining_capacity() == CAPACITY,
                      f"{kind}: the capacity key is back at {CAPACITY}", str(caps))
    finally:
        for p in list(consumers.values()) + list(producers.values()):
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in proxies.values():
            p.close()
        client.close()
        r.close()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: queue_run.py BUILD_DIR", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    tools = os.path.join(build, "tests", "tools")
    lua_mod = os.path.join(build, "bindings", "lua")
    lua = os.environ.get("LUA") or shutil.which("lua5.4") or shutil.which("lua")
    count = int(os.environ.get("HILOCK_XL_COUNT", "40"))
    for what, path in (("the C worker", os.path.join(tools, "hl_queueworker")),
                       ("the fault proxy", os.path.join(tools, "faultproxy")),
                       ("the Lua module", os.path.join(lua_mod, "hilock_core.so"))):
        if not os.path.exists(path):
            print(f"queue_run.py: {what} is missing ({path}): build first", file=sys.stderr)
            return 2
    if not lua:
        print("queue_run.py: no lua5.4 on PATH", file=sys.stderr)
        return 2
    os.environ.setdefault("HILOCK_FAULTPROXY", os.path.join(tools, "faultproxy"))
    workers = {
        "c": [os.path.join(tools, "hl_queueworker")],
        "py": [sys.executable, os.path.join(HERE, "qworker.py")],
        "lua": [lua, os.path.join(HERE, "qworker.lua")],
    }
    goq = os.path.join(tools, "hl_goqueue")
    tap = Tap()
    if os.access(goq, os.X_OK):
        workers["go"] = [goq]
    else:
        print(f"# Go left out: no {goq} (mk/xlang.mk builds it when go is installed)")
    env = dict(os.environ)
    env["LUA_PATH"] = os.path.join(ROOT, "bindings", "lua", "?.lua") + ";;"
    env["LUA_CPATH"] = os.path.join(lua_mod, "?.so") + ";;"
    tmp = tempfile.mkdtemp(prefix="hilock-xq.")
    redis, port = start_redis(tmp)
    try:
        for kind in ("queue", "bounded"):
            run_kind(tap, kind, port, tmp, workers, env, count)
    finally:
        redis.terminate()
        try:
            redis.wait(10)
        except subprocess.TimeoutExpired:
            redis.kill()
        if not tap.failed:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"# files kept in {tmp}")
    print(f"# {tap.n - tap.failed} passed, {tap.failed} failed")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
