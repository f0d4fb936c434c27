"""Threads and processes contending on one lock; the GIL is not held."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import hilock
from conftest import REPO, Resp, python_env


def test_threads_counter_exact(client, redis_server, redis):
    threads, iterations = 8, 25
    lock = client.lock("count:threads")
    errors: list = []
    inside = [0]
    overlap = [0]

    def work() -> None:
        try:
            with Resp(redis_server.port) as r:
                for _ in range(iterations):
                    with lock:
                        inside[0] += 1
                        if inside[0] != 1:
                            overlap[0] += 1
                        v = int(r.cmd("GET", "counter") or 0)
                        time.sleep(0.0005)  # widen the race a lock must close
                        r.cmd("SET", "counter", v + 1)
                        inside[0] -= 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not any(t.is_alive() for t in ts)
    assert not errors, errors
    assert overlap[0] == 0
    assert int(redis.cmd("GET", "counter")) == threads * iterations
    assert not lock.locked()


def test_processes_counter_exact(url, redis):
    """Three copies of examples/python/contend.py plus this process's threads."""
    example = os.path.join(REPO, "examples", "python", "contend.py")
    n = 15
    env = python_env()
    env["HILOCK_URL"] = url
    procs = [subprocess.Popen([sys.executable, example, "proc:lock", "proc:counter", str(n)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out)
    assert int(redis.cmd("GET", "proc:counter")) == 3 * n
    lines = [ln for o in outs for ln in o.splitlines()]
    assert len(lines) == 3 * n
    assert all(ln.startswith("[python pid ") and "holds proc:lock, counter -> " in ln for ln in lines)
    # every value from 1 to 3n was written exactly once
    values = sorted(int(ln.rsplit(" ", 1)[1]) for ln in lines)
    assert values == list(range(1, 3 * n + 1))
    assert redis.cmd("EXISTS", "proc:lock") == 0


def test_waiters_wake_on_release(client, other_client):
    """A waiter wakes on the unlock message, not on the lease."""
    theirs = other_client.lock("wake")
    theirs.acquire()  # 2 s watchdog lease, renewed: only a release frees it
    got = threading.Event()
    lock = client.lock("wake")

    def wait() -> None:
        if lock.acquire(timeout=20):
            got.set()
            lock.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert not got.is_set()
    t0 = time.monotonic()
    theirs.release()
    assert got.wait(5)
    assert time.monotonic() - t0 < 1.0
    t.join(5)


def test_gil_released_while_waiting(client, other_client):
    """Other Python threads run while one waits in acquire()."""
    other_client.lock("gil").acquire()
    lock = client.lock("gil")
    spins = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            spins[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        t0 = time.monotonic()
        assert lock.acquire(timeout=0.5) is False  # main thread: the helper path
        waited = time.monotonic() - t0
        mid = spins[0]
        assert in_thread_acquire(lock, 0.5) is False  # a plain thread: one C call
    finally:
        stop.set()
        t.join(5)
    assert waited >= 0.45
    assert mid > 1000 and spins[0] > mid


def in_thread_acquire(lock: hilock.Lock, timeout: float) -> bool:
    out: list = []
    t = threading.Thread(target=lambda: out.append(lock.acquire(timeout=timeout)))
    t.start()
    t.join(10)
    return out[0]


def test_main_thread_wait_is_the_main_threads_hold(client):
    """The main thread's blocking wait runs on a helper thread acting as the
    main thread's owner: the hold that results is the main thread's."""
    assert threading.current_thread() is threading.main_thread()
    lock = client.lock("main-owner")
    holder_has_it = threading.Event()
    go = threading.Event()

    def holder() -> None:
        with lock:
            holder_has_it.set()
            go.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert holder_has_it.wait(10)
    threading.Timer(0.3, go.set).start()
    assert lock.acquire(timeout=10) is True  # waited (contended) in the main thread
    t.join(10)
    try:
        assert lock.held() and lock.hold_count == 1
        assert lock.acquire(blocking=False) and lock.hold_count == 2
        lock.release()
        # a thread that is not the main thread cannot release it
        out: list = []
        t2 = threading.Thread(target=lambda: out.append(lock.held()))
        t2.start()
        t2.join(5)
        assert out == [False]
    finally:
        lock.release()
    assert not lock.locked()


def _scripts(redis) -> int:
    """The scripts Redis has run (INFO commandstats)."""
    n = 0
    for line in redis.cmd("INFO", "commandstats").decode().splitlines():
        if line.startswith(("cmdstat_eval:", "cmdstat_evalsha:")):
            n += int(line.split("calls=")[1].split(",")[0])
    return n


def test_main_thread_contended_wait_two_scripts(url, redis):
    """A contended acquire in the main thread (waited on there, so Ctrl-C
    works) makes its first attempt as a waiter, taking its place in the
    line at once: one script before the release and one after, not a
    wasted single attempt ahead of the wait's own first one. (The first
    round subscribes, and attempts again after: a release could have gone
    by unheard meanwhile. Later rounds find the subscription there.)"""
    import hilock

    assert threading.current_thread() is threading.main_thread()
    # Watchdog leases of 30 s: a renewal (due every 10 s) cannot fall inside
    # a count, however slowly a loaded machine runs the 0.3 s hold. (The
    # suite's 2 s leases renew every 667 ms, which a stalled holder reached.)
    with hilock.Client(url, watchdog_timeout=30.0) as client, hilock.Client(url, watchdog_timeout=30.0) as other:
        theirs = other.lock("main-scripts")
        lock = client.lock("main-scripts")
        scripts = _contended_rounds(theirs, lock, redis)
    assert scripts[1:] == [3, 3], scripts


def _contended_rounds(theirs, lock, redis) -> list:
    scripts = []
    for lease in (None, None, 30):  # the watchdog's path and a lease's
        held, go = threading.Event(), threading.Event()

        def holder() -> None:
            with theirs:
                held.set()
                go.wait(10)

        t = threading.Thread(target=holder)
        t.start()
        assert held.wait(10)
        threading.Timer(0.3, go.set).start()
        before = _scripts(redis)
        if lease is None:
            assert lock.acquire() is True
        else:
            assert lock.acquire(timeout=10, lease=lease) is True
        # the waiter's two attempts and the holder's release
        scripts.append(_scripts(redis) - before)
        lock.release()
        t.join(10)
    return scripts


def test_basics_example_runs(url):
    example = os.path.join(REPO, "examples", "python", "basics.py")
    env = python_env()
    env["HILOCK_URL"] = url
    p = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert "hold count 2" in p.stdout
    assert "another thread could take it: False" in p.stdout
    assert "locked after the block: False" in p.stdout
    assert "jobs ran one at a time: [0, 1, 2, 3, 4]" in p.stdout
