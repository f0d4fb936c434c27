"""The long and double adders: local adds, Redisson's sum protocol between
clients and processes, reset, destroy, bad input."""
import math
import time

import pytest

import hilock

from conftest import run_python


def test_two_clients_sum_and_reset(client, other_client, redis, url):
    a1 = client.long_adder("py:ad")
    a2 = client.long_adder("py:ad")
    b = other_client.long_adder("py:ad")
    # one subscription per client, confirmed once the adder exists
    assert redis.cmd("PUBSUB", "NUMSUB", "{py:ad}:adder-topic")[1] == 2
    a1.add(5)
    a2.add(2)
    b.increment()
    b.increment()
    b.decrement()
    assert a1.sum() == 8
    assert b.sum(timeout=5) == 8
    assert redis.cmd("KEYS", "{py:ad}:*") == []
    b.reset()
    assert a2.sum() == 0
    a1.add(3)
    b.add(4)
    b.destroy()
    with pytest.raises(hilock.InvalidArgumentError):
        b.add(1)
    assert a1.sum() == 3


def test_double_adder(client, other_client):
    d1 = client.double_adder("py:dd")
    d2 = other_client.double_adder("py:dd")
    d1.add(1.5)
    d2.add(0.25)
    d2.add(1)
    assert d1.sum() == 2.75
    with pytest.raises(hilock.InvalidArgumentError):
        d1.add(math.nan)
    with pytest.raises(TypeError):
        d1.add("1")
    d1.reset()
    assert d2.sum() == 0.0


def test_another_process(client, url):
    code = (
        "import sys, hilock\n"
        "c = hilock.Client(sys.argv[1])\n"
        "a = c.long_adder('py:proc')\n"
        "a.add(100)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "print(a.sum(), flush=True)\n"
    )
    import subprocess
    import sys
    from conftest import python_env

    p = subprocess.Popen([sys.executable, "-c", code, url], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=python_env())
    try:
        assert p.stdout.readline().strip() == "ready"
        a = client.long_adder("py:proc")
        a.add(1)
        assert a.sum() == 101
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "101"
        p.wait(timeout=30)
        assert a.sum() == 1
    finally:
        p.kill()


def test_mute_receiver_times_out(client, redis, redis_server):
    import conftest

    a = client.long_adder("py:mute")
    a.add(1)
    with conftest.Resp(redis_server.port) as mute:
        mute.cmd("SUBSCRIBE", "{py:mute}:adder-topic")
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            a.sum(timeout=0.5)
        assert time.monotonic() - t0 < 3
    assert redis.cmd("KEYS", "{py:mute}:*") == []


def test_bad_input(client):
    a = client.long_adder("py:bad")
    with pytest.raises(TypeError):
        a.add(1.5)
    with pytest.raises(hilock.InvalidArgumentError):
        a.add(1 << 63)
    with pytest.raises(hilock.InvalidArgumentError):
        a.sum(timeout=0)
    a.add((1 << 63) - 1)
    a.add(2)
    assert a.sum() == -(1 << 63) + 1  # wraps, as Java's long


def test_dropping_an_adder_stops_listening(client, redis):
    a = client.long_adder("py:drop")
    a.add(1)
    assert redis.cmd("PUBSUB", "NUMSUB", "{py:drop}:adder-topic")[1] == 1
    del a
    import gc

    gc.collect()
    deadline = time.monotonic() + 5
    while redis.cmd("PUBSUB", "NUMSUB", "{py:drop}:adder-topic")[1] != 0:
        assert time.monotonic() < deadline, "still subscribed"
        time.sleep(0.01)
    assert client.long_adder("py:drop").sum() == 0
