"""The public names, their behaviour, exceptions and bad input."""

from __future__ import annotations

import builtins
import math
import socket
import threading

import pytest

import hilock


def in_thread(fn, timeout: float = 10.0):
    """Run fn in another thread (another owner) and return its result."""
    out: list = []

    def run() -> None:
        try:
            out.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out.append(("err", exc))

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "thread did not finish"
    kind, val = out[0]
    if kind == "err":
        raise val
    return val


def test_public_names_have_docstrings():
    for name in hilock.__all__:
        obj = getattr(hilock, name)
        if name in ("__version__", "Name"):
            continue
        assert obj.__doc__, name
    for cls in (hilock.Client, hilock.Lock):
        for attr, val in vars(cls).items():
            if attr.startswith("_"):
                continue
            assert getattr(val, "__doc__", None), "%s.%s" % (cls.__name__, attr)
    assert hilock.library_version() == hilock.__version__


def test_py_typed_is_installed():
    import importlib.resources as r

    assert (r.files("hilock") / "py.typed").is_file()


def test_exception_hierarchy():
    assert issubclass(hilock.NotHeldError, hilock.HilockError)
    assert issubclass(hilock.NotHeldError, RuntimeError)
    assert issubclass(hilock.LockTimeout, TimeoutError)
    assert issubclass(hilock.ConnectionError, builtins.ConnectionError)
    assert issubclass(hilock.ConnectionError, hilock.HilockError)
    assert issubclass(hilock.LockLost, hilock.HilockError)
    # a lost hold is not held: `except NotHeldError` catches both
    assert issubclass(hilock.LockLost, hilock.NotHeldError)
    assert issubclass(hilock.LockLost, RuntimeError)
    assert not issubclass(hilock.NotHeldError, hilock.LockLost)
    assert issubclass(hilock.InvalidArgumentError, ValueError)
    assert hilock.ConnectionError is not builtins.ConnectionError


def test_a_lost_hold_is_caught_as_not_held(client, other_client):
    """A release after a loss raises LockLost, which `except NotHeldError`
    (and `except RuntimeError`, as with threading) catches as well; a hold
    that never was raises NotHeldError, never LockLost."""
    lock = client.lock("py:api:lost-is-not-held")
    caught = []
    for catch in (hilock.NotHeldError, RuntimeError, hilock.LockLost):
        lock.acquire()
        assert other_client.lock("py:api:lost-is-not-held").force_unlock()
        assert lock.wait_lost(timeout=10)
        try:
            lock.release()
        except catch as exc:
            caught.append(exc)
    assert len(caught) == 3
    for exc in caught:
        assert type(exc) is hilock.LockLost
        assert exc.status == "HL_ELOST"
    assert not lock.held()
    # never held: NotHeldError, and not a LockLost
    with pytest.raises(hilock.NotHeldError) as ei:
        lock.release()
    assert type(ei.value) is hilock.NotHeldError
    assert ei.value.status == "HL_ENOTHELD"
    # handlers in either order: the one for the loss first tells them apart
    lock.acquire()
    assert other_client.lock("py:api:lost-is-not-held").force_unlock()
    assert lock.wait_lost(timeout=10)
    try:
        lock.release()
        what = "released"
    except hilock.LockLost:
        what = "lost"
    except hilock.NotHeldError:
        what = "not held"
    assert what == "lost"


def test_client_basics(client, url):
    assert len(client.id) == 36 and client.id.count("-") == 4
    assert not client.closed
    assert client.watchdog_timeout == 2.0
    assert "127.0.0.1" in repr(client)
    with hilock.Client(url) as c2:
        assert c2.id != client.id
    assert c2.closed
    c2.close()  # idempotent


def test_url_password_is_masked():
    # Not connectable on purpose; the repr must not leak the password even
    # in the error path, so only test the helper through a refused URL.
    from hilock._client import _safe_url

    assert _safe_url("redis://user:s3cret@h:1/0") == "redis://user:***@h:1/0"


def test_acquire_release_state(client, redis):
    lock = client.lock("orders:42")
    assert lock.name == "orders:42"
    assert lock.client is client
    assert not lock.locked() and not lock.held() and lock.hold_count == 0
    assert lock.ttl is None
    assert lock.acquire() is True
    assert lock.locked() and lock.held() and lock.hold_count == 1
    assert 0 < lock.ttl <= 2.0  # the watchdog lease
    # Redisson's wire shape: a hash field "<client uuid>:<owner id>" -> count
    owner = lock.owner
    assert owner.startswith(client.id + ":")
    assert redis.cmd("HGETALL", "orders:42") == [owner.encode(), b"1"]
    assert not lock.lost
    lock.release()
    assert not lock.locked() and lock.hold_count == 0
    assert redis.cmd("EXISTS", "orders:42") == 0


def test_reentrancy(client):
    lock = client.lock("re")
    with lock:
        with lock:
            assert lock.hold_count == 2
            assert lock.acquire(blocking=False)
            assert lock.hold_count == 3
            lock.release()
            # another thread is another owner: it cannot get in
            assert in_thread(lambda: lock.acquire(blocking=False)) is False
            assert in_thread(lambda: lock.held()) is False
        assert lock.hold_count == 1 and lock.locked()
    assert not lock.locked()
    assert in_thread(lambda: (lock.acquire(blocking=False), lock.release())[0]) is True


def test_two_lock_objects_same_owner(client):
    a, b = client.lock("same"), client.lock("same")
    a.acquire()
    assert b.held() and b.hold_count == 1
    b.release()  # Redisson: identity is client + thread, not the object
    assert not a.locked()


def test_release_not_held(client, other_client):
    lock = client.lock("nh")
    with pytest.raises(hilock.NotHeldError) as ei:
        lock.release()
    assert isinstance(ei.value, RuntimeError)
    assert not isinstance(ei.value, hilock.LockLost)  # never held: not a loss
    assert ei.value.code == -5 and ei.value.status == "HL_ENOTHELD"
    assert "nh" in str(ei.value)  # the library's detail
    lock.acquire()
    # not from another thread, nor another client
    with pytest.raises(RuntimeError):
        in_thread(lock.release)
    with pytest.raises(hilock.NotHeldError):
        other_client.lock("nh").release()
    assert lock.hold_count == 1
    lock.release()


def test_nonblocking_and_timeout(client, other_client):
    mine = client.lock("t")
    theirs = other_client.lock("t")
    assert theirs.acquire()
    assert mine.acquire(blocking=False) is False
    import time

    t0 = time.monotonic()
    assert mine.acquire(timeout=0.3) is False
    assert 0.25 <= time.monotonic() - t0 < 3.0
    assert in_thread(lambda: mine.acquire(timeout=0.2)) is False
    with pytest.raises(ValueError):
        mine.acquire(blocking=False, timeout=1)
    theirs.release()
    assert mine.acquire(timeout=0) is True
    mine.release()


def test_with_timeout_raises_lock_timeout(client, other_client):
    other_client.lock("wt").acquire()
    with pytest.raises(hilock.LockTimeout) as ei:
        with client.lock("wt", timeout=0.2):
            pytest.fail("entered a held lock")
    assert isinstance(ei.value, TimeoutError)


def test_force_unlock(client, other_client):
    lock = client.lock("fu")
    assert lock.force_unlock() is False
    other_client.lock("fu").acquire()
    assert lock.locked()
    assert lock.force_unlock() is True
    assert not lock.locked()
    assert lock.acquire(blocking=False)
    lock.release()


def test_ttl_fixed_lease_and_no_expiry(client, redis):
    lock = client.lock("ttl")
    assert lock.acquire(lease=5.0)
    assert 4.0 < lock.ttl <= 5.0
    lock.release()
    redis.cmd("HSET", "ttl", "someone:1", "1")  # a lock with no expiry
    assert lock.ttl == math.inf
    assert lock.locked() and not lock.held()


def test_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens after close
    with pytest.raises(hilock.ConnectionError) as ei:
        hilock.Client("redis://127.0.0.1:%d/0" % port, connect_timeout=2.0)
    assert isinstance(ei.value, builtins.ConnectionError)
    assert isinstance(ei.value, hilock.HilockError)
    assert str(port) in str(ei.value)  # the library's detail


@pytest.mark.parametrize("url", ["", "http://x", "redis://127.0.0.1:notaport/0", "redis://h:1/x"])
def test_bad_url(url):
    with pytest.raises(hilock.InvalidArgumentError):
        hilock.Client(url, connect_timeout=1.0)


def test_bad_client_options(url):
    with pytest.raises(ValueError):
        hilock.Client(url, watchdog_timeout=-1)
    with pytest.raises(ValueError):
        hilock.Client(url, watchdog_timeout=0)
    with pytest.raises(ValueError):
        hilock.Client(url, command_timeout=float("nan"))
    with pytest.raises(TypeError):
        hilock.Client(url, watchdog_timeout="3")
    with pytest.raises(TypeError):
        hilock.Client(b"redis://127.0.0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        hilock.Client("redis://127.0.0.1\0:1/0")


def test_names_str_bytes_binary(client, redis):
    # str is UTF-8; bytes are taken as they are, NUL included
    for name, key in [("zähler", "zähler".encode()), (b"a\0b", b"a\0b"),
                      (bytearray(b"\xff\xfe"), b"\xff\xfe"), (memoryview(b"mv"), b"mv")]:
        lock = client.lock(name)
        with lock:
            assert redis.cmd("EXISTS", key) == 1
            assert redis.cmd("HLEN", key) == 1
        assert redis.cmd("EXISTS", key) == 0
    # the NUL matters: "a" and "a\0b" are different locks
    with client.lock(b"a\0b"):
        assert in_thread(lambda: client.lock(b"a").acquire(blocking=False)) is True
        client.lock(b"a").force_unlock()


def test_bad_names(client, redis):
    with pytest.raises(ValueError):
        client.lock("")
    with pytest.raises(ValueError):
        client.lock(b"")
    with pytest.raises(ValueError):
        client.lock(b"x" * 65537)
    with pytest.raises(TypeError):
        client.lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.lock(None)  # type: ignore[arg-type]
    huge = b"h" * 65536  # the largest name
    with client.lock(huge):
        assert redis.cmd("EXISTS", huge) == 1


def test_bad_times(client):
    lock = client.lock("times")
    for bad in (-0.5, -2, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            lock.acquire(timeout=bad)
        with pytest.raises(ValueError):
            lock.acquire(lease=bad)
        with pytest.raises(ValueError):
            client.lock("times", lease=bad)
        with pytest.raises(ValueError):
            client.lock("times", timeout=bad)
    with pytest.raises(ValueError):
        lock.acquire(lease=0)
    with pytest.raises(TypeError):
        lock.acquire(timeout="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lock.acquire(lease=1e20)
    assert not lock.locked()  # nothing was taken by the failed calls


def test_use_after_close(url):
    c = hilock.Client(url)
    lock = c.lock("closed")
    assert lock.acquire()
    c.close()
    c.close()
    assert c.closed
    for call in (lock.acquire, lock.release, lock.locked, lock.held, lock.force_unlock,
                 lambda: lock.hold_count, lambda: lock.ttl):
        with pytest.raises(hilock.ClientClosedError):
            call()
    with pytest.raises(hilock.ClientClosedError):
        c.lock("new")
    with pytest.raises(hilock.ClientClosedError):
        with lock:
            pass


def test_close_wakes_blocked_waiter(url, other_client):
    c = hilock.Client(url)
    other_client.lock("wake").acquire()
    lock = c.lock("wake")
    errors: list = []
    started = threading.Event()

    def wait() -> None:
        started.set()
        try:
            lock.acquire(timeout=20)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=wait)
    t.start()
    started.wait(5)
    import time

    deadline = time.monotonic() + 30
    while c.stats().waiting != 1:  # the waiter really waits
        assert time.monotonic() < deadline, "the waiter is not waiting"
        time.sleep(0.01)
    c.close()
    t.join(10)
    assert not t.is_alive()
    assert errors and isinstance(errors[0], hilock.ClientClosedError)


def test_interrupt(client, other_client):
    other_client.lock("intr").acquire()
    lock = client.lock("intr")
    errors: list = []
    waiting = threading.Event()

    def wait() -> None:
        waiting.set()
        try:
            lock.acquire(timeout=20)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=wait)
    t.start()
    waiting.wait(5)
    import time

    deadline = time.monotonic() + 10
    while t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
        client.interrupt()  # repeated: the thread may not be blocked yet
    t.join(5)
    assert errors and isinstance(errors[0], hilock.Interrupted)
    assert not lock.held()


def test_redis_error_on_wrong_type(client, redis):
    redis.cmd("SET", "wrongtype", "a string, not a lock hash")
    with pytest.raises(hilock.RedisError) as ei:
        client.lock("wrongtype").acquire(blocking=False)
    assert "WRONGTYPE" in str(ei.value) or "wrong kind" in str(ei.value).lower()
    assert redis.cmd("GET", "wrongtype") == b"a string, not a lock hash"


def test_authentication_error(redis_server, redis):
    redis.cmd("CONFIG", "SET", "requirepass", "s3cret")
    try:
        with pytest.raises(hilock.AuthenticationError) as ei:
            hilock.Client("redis://:wrong@127.0.0.1:%d/0" % redis_server.port, connect_timeout=2.0)
        assert isinstance(ei.value, hilock.ConnectionError)
        assert isinstance(ei.value, builtins.ConnectionError)
        with hilock.Client("redis://:s3cret@127.0.0.1:%d/0" % redis_server.port) as c:
            assert "s3cret" not in repr(c)
            with c.lock("authed"):
                assert redis.cmd("EXISTS", "authed") == 1
    finally:
        redis.cmd("CONFIG", "SET", "requirepass", "")


def test_client_name_and_db(redis_server, redis):
    with hilock.Client("redis://127.0.0.1:%d/3" % redis_server.port, client_name="py-test") as c:
        with c.lock("in-db-3"):
            assert b"name=py-test" in redis.cmd("CLIENT", "LIST")
            assert redis.cmd("EXISTS", "in-db-3") == 0  # db 0
            redis.cmd("SELECT", "3")
            assert redis.cmd("EXISTS", "in-db-3") == 1
            redis.cmd("SELECT", "0")


def test_owner_string_per_thread(client):
    lock = client.lock("owners")
    mine = lock.owner
    theirs = in_thread(lambda: lock.owner)
    assert mine != theirs
    assert mine.rsplit(":", 1)[0] == theirs.rsplit(":", 1)[0] == client.id
    assert in_thread(lambda: lock.owner) not in (mine, theirs)  # ids are never reused
