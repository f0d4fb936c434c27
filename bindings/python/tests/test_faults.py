"""The network misbehaving, as a Python user sees it (the fault proxy sits
between the client and Redis): what ``with``, ``acquire`` and ``release``
tell the caller, how long they take, and what they leave in Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import hilock
from conftest import python_env
from faults import FaultProxy, cs_check, cs_enter, cs_leave, faultproxy  # noqa: F401


def via(proxy: FaultProxy, **kw) -> hilock.Client:  # type: ignore[no-untyped-def]
    opts = dict(watchdog_timeout=3.0, command_timeout=1.0, connect_timeout=1.0,
                retry_delay=0.1, ping_interval=0.3)
    opts.update(kw)
    return hilock.Client(proxy.url, **opts)


def wait_gone(redis, key: str, limit: float) -> float:  # type: ignore[no-untyped-def]
    """Wait until key is gone, checking nobody renews it; the time it took."""
    t0 = time.monotonic()
    last = redis.cmd("PTTL", key)
    while True:
        now = redis.cmd("PTTL", key)
        if now < 0:
            return time.monotonic() - t0
        assert now <= last + 20, "renewed: pttl %d after %d" % (now, last)
        last = now
        assert time.monotonic() - t0 < limit, "%s still held" % key
        time.sleep(0.05)


def test_with_block_after_a_loss_raises_lock_lost_at_once(faultproxy, redis):
    """Item 4: the holder's network goes silent; the lock counts as lost by
    the clock before its lease ends in Redis, and the block's exit raises
    LockLost without waiting for the network."""
    proxy = faultproxy()
    with via(proxy) as c:
        lock = c.lock("py:faults:lost")
        with pytest.raises(hilock.LockLost):
            with lock:
                proxy.blackhole(True)
                assert lock.wait_lost(timeout=10)
                # told while Redis still has it: nobody else holds it yet
                assert redis.cmd("PTTL", "py:faults:lost") > 0
                t0 = time.monotonic()
        assert time.monotonic() - t0 < 0.2  # no round trip
        proxy.blackhole(False)


def test_acquire_timeout_holds_in_a_black_hole(faultproxy, redis):
    """Item 5: deadlines bound every attempt, reconnect and pause."""
    proxy = faultproxy()
    with hilock.Client(proxy.url) as c:  # the defaults: 3 s per reply
        lock = c.lock("py:faults:deadline")
        assert lock.acquire(timeout=1)
        lock.release()
        proxy.blackhole(True)
        t0 = time.monotonic()
        # Redis never answered during the wait: an outage, not contention
        # (docs/consistency.md)
        with pytest.raises(hilock.ConnectionError):
            lock.acquire(timeout=1)
        took = time.monotonic() - t0
        print("acquire(timeout=1) in a black hole: %.3f s" % took)
        assert 0.95 <= took < 1.2 * float(os.environ.get("HILOCK_TEST_SCALE", "1"))
        t0 = time.monotonic()
        with pytest.raises(hilock.ConnectionError):
            lock.acquire(blocking=False)
        took = time.monotonic() - t0
        print("acquire(blocking=False) in a black hole: %.3f s" % took)
        assert took < 0.3
        proxy.blackhole(False)


def test_release_in_an_outage_is_outcome_unknown(faultproxy, redis):
    """Item 2: the release cannot be confirmed; the caller hears so, the
    hold is no longer renewed, and the lease ends it once the network is
    back."""
    proxy = faultproxy()
    with via(proxy, command_timeout=0.3) as c:
        lock = c.lock("py:faults:outage")
        lock.acquire()
        proxy.drop(True)
        with pytest.raises(hilock.OutcomeUnknown) as ei:
            lock.release()
        assert isinstance(ei.value, ConnectionError)
        assert "within" in ei.value.detail
        proxy.drop(False)
        assert redis.cmd("EXISTS", "py:faults:outage") == 1
        wait_gone(redis, "py:faults:outage", 8)


def test_release_whose_connection_resets_is_finished(faultproxy, redis):
    """Item 1: the release waits in the network, the connection resets:
    it is sent again, and the lock is free (it raised ConnectionError and
    stayed held, renewed, for good)."""
    proxy = faultproxy()
    with via(proxy) as c:
        lock = c.lock("py:faults:reset")
        lock.acquire()
        proxy.blackhole(True)

        def break_it() -> None:
            time.sleep(0.2)  # the release is waiting in the black hole
            proxy.reset()
            proxy.blackhole(False)

        t = threading.Thread(target=break_it)
        t.start()
        lock.release()
        t.join(10)
        assert redis.cmd("EXISTS", "py:faults:reset") == 0
        time.sleep(1.5)  # nothing renews it back
        assert redis.cmd("EXISTS", "py:faults:reset") == 0


CTRL_C = r"""
import sys, time, hilock
c = hilock.Client(sys.argv[1])
lock = c.lock("py:faults:sigint")
lock.acquire(); lock.release()
print("ready", flush=True)
sys.stdin.readline()           # the network is black-holed now
try:
    lock.acquire()
    print("acquired", flush=True)
except KeyboardInterrupt:
    print("interrupted %.6f" % time.monotonic(), flush=True)
    sys.exit(3)
"""


def test_ctrl_c_in_a_black_hole(faultproxy, redis):
    """Item 5: Ctrl-C in the main thread stops an acquire stuck in the
    network at once (it took 21 s)."""
    proxy = faultproxy()
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, proxy.url], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=python_env())
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "ready"
        proxy.blackhole(True)
        p.stdin.write("go\n")
        p.stdin.flush()
        time.sleep(0.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        p.wait(20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
        proxy.blackhole(False)
    assert line.startswith("interrupted "), (line, p.stderr.read() if p.stderr else "")
    latency = float(line.split()[1]) - t0
    print("Ctrl-C latency in a black hole: %.1f ms" % (latency * 1000))
    assert latency < 1.0


MAIN_LOOP = r"""
import sys, time, hilock
c = hilock.Client(sys.argv[1])
lock = c.lock("py:faults:fair")
path, tag = sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[4])
from faults import cs_enter, cs_leave
print("ready", flush=True)
sys.stdin.readline()
end = time.monotonic() + float(sys.argv[5])
n = 0
while time.monotonic() < end:
    with lock:                      # the main thread: Ctrl-C-able path
        cs_enter(path, tag)
        time.sleep(0.002)
        cs_leave(path, tag)
        n += 1
print(n, flush=True)
"""


def test_main_thread_loops_share_the_lock(redis_server, redis, tmp_path):
    """Item 7: four processes looping `with lock:` in their main threads
    (each blocking acquire makes a first attempt in the main thread) all get
    their turn; it was [82, 1, 1, 2]."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = str(tmp_path / "sections")
    procs = [subprocess.Popen([sys.executable, "-c", MAIN_LOOP, redis_server.url, path,
                               "p%d" % i, here, "4"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=python_env())
             for i in range(4)]
    counts = []
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            counts.append(int(out.split()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    print("acquisitions per process:", counts)
    assert cs_check(path) == sum(counts)
    # every process gets a fair part: none below a fifth of the mean
    mean = sum(counts) / len(counts)
    assert min(counts) >= mean / 5, counts
