"""Sentinel and Cluster: real deployments (tests/topo.py), one of each for
this module.

Sentinel (a master, two replicas, three sentinels): a lock through
redis-sentinel:// with a waiter woken; read_from and WAIT seen on the nodes
themselves; the sentinels' credentials kept out of every message; then a
kill -9 of the master while a lock is held and a waiter waits: the waiter
gets the lock, and a lock taken after the failover works (this one runs last:
the deployment has one node fewer afterwards).

Cluster (three masters with a replica each): locks spread over every master,
and a waiter woken on each master (sharded pub/sub).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

import hilock
from conftest import Resp
from topo import ENV_VAR, Topology, missing_tools, topo_binary

if not os.environ.get(ENV_VAR) and (topo_binary() is None or missing_tools()):
    pytest.skip("needs hl_topo (make build), redis-server ($REDIS_SERVER) and redis-cli",
                allow_module_level=True)

SECRET = "s3ntinel-Secret"


@pytest.fixture(scope="module")
def sentinel() -> Iterator[Topology]:
    t = Topology("sentinel")
    try:
        yield t
    finally:
        t.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Topology]:
    t = Topology("cluster")
    try:
        yield t
    finally:
        t.close()


def _ports(addrs: str) -> List[int]:
    return [int(a.rsplit(":", 1)[1]) for a in addrs.split(",") if a]


def _commandstats(port: int) -> Dict[str, int]:
    """calls per command of INFO commandstats ({"exists": 3, ...})."""
    with Resp(port) as r:
        text = r.cmd("INFO", "commandstats").decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            out[name] = int(rest.split("calls=", 1)[1].split(",", 1)[0])
    return out


def _reset_stats(*ports: int) -> None:
    for p in ports:
        with Resp(p) as r:
            r.cmd("CONFIG", "RESETSTAT")


def _nodes(sentinel: Topology) -> Tuple[int, List[int]]:
    """The master's port and the replicas' that answer."""
    master = int(sentinel.command("master")["port"])
    replicas = []
    for p in _ports(sentinel.info["data"]):
        if p == master:
            continue
        try:
            with Resp(p, timeout=2.0) as r:
                r.cmd("PING")
            replicas.append(p)
        except OSError:
            pass  # killed
    return master, replicas


class Waiter:
    """Waits for a lock in a thread of its own (its own owner)."""

    def __init__(self, lock: "hilock.Lock", timeout: float) -> None:
        self.lock = lock
        self.timeout = timeout
        self.acquired: Optional[bool] = None
        self.at = 0.0
        self.error: Optional[BaseException] = None
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        try:
            self.acquired = self.lock.acquire(timeout=self.timeout)
            self.at = time.monotonic()
            if self.acquired:
                self.lock.release()
        except BaseException as exc:  # noqa: BLE001
            self.error = exc

    def join(self) -> bool:
        self._t.join(self.timeout + 15)
        assert not self._t.is_alive(), "the waiter outlived its timeout"
        if self.error is not None:
            raise self.error
        return bool(self.acquired)


def _clean(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    for what in (str(exc), repr(exc), text, getattr(exc, "detail", ""), repr(exc.args)):
        assert SECRET not in what, what


# -- Sentinel -------------------------------------------------------------------


def test_sentinel_lock_and_waiter(sentinel: Topology) -> None:
    assert sentinel.url.startswith("redis-sentinel://")
    with hilock.Client(sentinel.url) as a, hilock.Client(sentinel.url) as b:
        assert repr(a).startswith("<hilock.Client redis-sentinel://")
        name = "py:topo:sentinel"
        lock = a.lock(name)
        assert lock.acquire(blocking=False)
        master, _ = _nodes(sentinel)
        with Resp(master) as r:
            assert r.cmd("EXISTS", name) == 1  # on the master the sentinels name
        assert not b.lock(name).acquire(blocking=False)
        w = Waiter(b.lock(name), timeout=10)
        time.sleep(0.3)
        released = time.monotonic()
        lock.release()
        assert w.join()
        assert w.at - released < 2.0, "woken %.2f s after the release" % (w.at - released)


def test_sentinel_read_from_and_wait(sentinel: Topology) -> None:
    master, replicas = _nodes(sentinel)
    assert len(replicas) == 2
    name = "py:topo:reads"
    # read_from="replica": the queries go to the replicas, never the master
    with hilock.Client(sentinel.url, read_from="replica") as c:
        lock = c.lock(name)
        _reset_stats(master, *replicas)
        for _ in range(3):
            assert not lock.locked()
        assert lock.ttl is None
        on_replicas = [_commandstats(p) for p in replicas]
        assert sum(s.get("exists", 0) for s in on_replicas) == 3, on_replicas
        assert sum(s.get("pttl", 0) for s in on_replicas) == 1, on_replicas
        assert "exists" not in _commandstats(master)
    # the default: the master
    with hilock.Client(sentinel.url) as c:
        _reset_stats(master, *replicas)
        assert not c.lock(name).locked()
        assert _commandstats(master).get("exists") == 1
        assert all("exists" not in _commandstats(p) for p in replicas)
    # WAIT: off with wait_replicas=0 ...
    with hilock.Client(sentinel.url, wait_replicas=0) as c:
        _reset_stats(master)
        with c.lock(name):
            pass
        assert "wait" not in _commandstats(master)
    # ... and for both replicas: once acquire returns, they have the lock
    with hilock.Client(sentinel.url, wait_replicas=2, wait_timeout=2.0) as c:
        _reset_stats(master)
        with c.lock(name):
            for p in replicas:
                with Resp(p) as r:
                    assert r.cmd("EXISTS", name) == 1
        assert _commandstats(master).get("wait", 0) >= 2  # the acquire and the release


def test_options_are_checked() -> None:
    url = "redis-sentinel://127.0.0.1:1/mymaster"
    for kw, exc in ((dict(read_from="slave"), hilock.InvalidArgumentError),
                    (dict(read_from=1), TypeError),
                    (dict(wait_replicas=-2), hilock.InvalidArgumentError),
                    (dict(wait_replicas=True), TypeError),
                    (dict(wait_replicas=1.0), TypeError),
                    (dict(wait_timeout=0), hilock.InvalidArgumentError),
                    (dict(wait_timeout="1"), TypeError),
                    (dict(sentinel_username=b"u"), TypeError),
                    (dict(sentinel_password=3), TypeError)):
        with pytest.raises(exc):
            hilock.Client(url, **kw)  # type: ignore[arg-type]
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.Client(url, sentinel_password=SECRET + "\0")
    _clean(ei.value)
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.Client(url, sentinel_password=SECRET + "\udc80")
    _clean(ei.value)
    assert ei.value.__context__ is None


def test_sentinel_credentials_never_shown(sentinel: Topology) -> None:
    # The sentinels have no password: AUTH with one is refused.
    with pytest.raises(hilock.HilockError) as ei:
        hilock.Client(sentinel.url, sentinel_username="watcher", sentinel_password=SECRET,
                      connect_timeout=3.0, retry_attempts=0)
    assert isinstance(ei.value, (hilock.AuthenticationError, hilock.ConnectionError)), ei.value
    _clean(ei.value)
    with pytest.raises(hilock.HilockError) as ei:
        hilock.Client(sentinel.url, sentinel_password=SECRET, connect_timeout=3.0,
                      retry_attempts=0)
    _clean(ei.value)
    # The data nodes' credentials, in the URL: no user alice there.
    url = sentinel.url.replace("redis-sentinel://", "redis-sentinel://alice:%s@" % SECRET)
    with pytest.raises(hilock.HilockError) as ei:
        hilock.Client(url, connect_timeout=3.0, retry_attempts=0)
    _clean(ei.value)


def test_sentinel_failover(sentinel: Topology, caplog: pytest.LogCaptureFixture) -> None:
    """kill -9 of the master while a lock is held and another client waits
    for it: the hold is renewed on the new master (or reported lost), the
    waiter gets the lock within its timeout, and a lock taken after the
    failover works. The failover is counted and logged (INFO, from the
    client's hilock-events thread)."""
    caplog.set_level(logging.INFO, logger="hilock")
    with hilock.Client(sentinel.url, watchdog_timeout=10.0) as holder, \
            hilock.Client(sentinel.url) as other:
        name = "py:topo:failover"
        lock = holder.lock(name)
        assert lock.acquire(blocking=False)
        w = Waiter(other.lock(name), timeout=40)
        time.sleep(0.3)
        assert w.acquired is None, "the waiter got a held lock"
        ans = sentinel.command("kill-master")
        assert ans["old"] != ans["new"]

        # a lock taken after the failover, on the new master
        after = other.lock("py:topo:after-failover")
        assert after.acquire(timeout=15), "no lock after the failover"
        with Resp(int(ans["new"])) as r:
            assert r.cmd("EXISTS", "py:topo:after-failover") == 1
        after.release()

        # the hold: still renewed on the new master, or reported lost
        released = time.monotonic()
        try:
            assert lock.held() or lock.lost
            lock.release()
            lost = False
        except hilock.LockLost:
            lost = True
        assert w.join(), "the waiter did not get the lock after the failover"
        # released: woken at once; lost: within the 10 s lease
        bound = 10.0 if lost else 5.0
        assert w.at - released < bound, "waiter got it %.2f s after (lost: %s)" % (
            w.at - released, lost)
        assert holder.stats().failovers == 1
    new = "127.0.0.1:%s" % ans["new"]
    recs = [r for r in caplog.records if getattr(r, "hilock_event", None) is not None
            and r.hilock_event.type == "failover"]
    assert [r.hilock_event.node for r in recs] == [new, new]  # one per client
    assert all(r.levelno == logging.INFO and r.threadName == "hilock-events" for r in recs)


# -- Cluster --------------------------------------------------------------------


def _names_over_masters(cluster: Topology, prefix: str, per_master: int) -> Dict[int, List[str]]:
    masters = [int(p) for p in cluster.command("masters")["masters"].split(",")]
    assert len(masters) == 3
    by_master: Dict[int, List[str]] = {m: [] for m in masters}
    i = 0
    while min(len(v) for v in by_master.values()) < per_master:
        name = "%s:%d" % (prefix, i)
        i += 1
        assert i < 1000
        port = cluster.master_of(name.encode())
        if len(by_master[port]) < per_master:
            by_master[port].append(name)
    return by_master


def test_cluster_locks_over_the_masters(cluster: Topology) -> None:
    assert cluster.url.startswith("redis-cluster://")
    by_master = _names_over_masters(cluster, "py:topo:cluster", 3)
    with hilock.Client(cluster.url) as a, hilock.Client(cluster.url) as b:
        locks = []
        for port, names in by_master.items():
            for name in names:
                lock = a.lock(name)
                assert lock.acquire(blocking=False), name
                locks.append(lock)
                with Resp(port) as r:  # on the master that owns its slot
                    assert r.cmd("EXISTS", name) == 1
                assert not b.lock(name).acquire(blocking=False)
                assert b.lock(name).locked()
        for lock in locks:
            lock.release()
        for names in by_master.values():
            for name in names:
                with b.lock(name):
                    assert not a.lock(name).acquire(blocking=False)


def test_cluster_waiters_woken(cluster: Topology) -> None:
    """One waiter per master, each woken by its lock's release."""
    by_master = _names_over_masters(cluster, "py:topo:wake", 1)
    with hilock.Client(cluster.url) as a, hilock.Client(cluster.url) as b:
        held = [a.lock(names[0]) for names in by_master.values()]
        for lock in held:
            assert lock.acquire(blocking=False)
        waiters = [Waiter(b.lock(names[0]), timeout=15) for names in by_master.values()]
        time.sleep(0.5)
        assert all(w.acquired is None for w in waiters)
        for lock, w in zip(held, waiters):
            released = time.monotonic()
            lock.release()
            assert w.join()
            assert w.at - released < 2.0, "woken %.2f s after the release" % (w.at - released)
