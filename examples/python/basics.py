#!/usr/bin/env python3
"""A tour of the hilock Python API.

    HILOCK_URL=redis://127.0.0.1:6379/0 python3 basics.py
"""

import asyncio
import os
import threading

import hilock


def threads_demo(client: hilock.Client) -> None:
    lock = client.lock("basics:orders:42")  # owner: the calling thread
    with lock:  # the watchdog renews it while the block runs
        with lock:  # reentrant, like threading.RLock
            print("hold count", lock.hold_count, "ttl %.1fs" % lock.ttl)
        other = []
        t = threading.Thread(target=lambda: other.append(lock.acquire(blocking=False)))
        t.start()
        t.join()
        print("another thread could take it:", other[0])
    print("locked after the block:", lock.locked())

    with client.lock("basics:report", lease=10.0) as report:  # fixed lease, no watchdog
        print("report lease left %.1fs" % report.ttl)

    try:
        lock.release()
    except hilock.NotHeldError as exc:  # also a RuntimeError, as threading raises
        print("release without a hold:", exc)


async def asyncio_demo(client: hilock.Client) -> None:
    lock = client.lock("basics:jobs")
    done = []

    async def job(n: int) -> None:
        async with lock:  # owner: this task; the event loop keeps running
            done.append(n)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(job(n) for n in range(5)))
    print("jobs ran one at a time:", sorted(done))


def main() -> None:
    url = os.environ.get("HILOCK_URL", "redis://127.0.0.1:6379/0")
    with hilock.Client(url, watchdog_timeout=30.0) as client:
        print("client", client.id)
        threads_demo(client)
        asyncio.run(asyncio_demo(client))


if __name__ == "__main__":
    main()
