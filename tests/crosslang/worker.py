"""The Python worker of the cross-language synchronizer test (run.py).

    python worker.py URL SEM LATCH LOG TAG THREADS SECONDS

Waits for the latch LATCH on a thread of its own, runs THREADS threads for
SECONDS that each take one permit of the semaphore SEM (at most 10 s),
append "enter TAG-i" to LOG, make one round trip, append "leave TAG-i" and
give the permit back (the context manager). Then it counts LATCH down once
("countdown TAG <ms before> <ms after>"), and appends "woke TAG <ms>" once
its latch wait saw the latch open. Times are wall-clock ms. Exits 0 when
everything worked, else non-zero with the reason on stderr.
"""
import os
import sys
import threading
import time

import hilock


def main() -> int:
    url, sem_name, latch_name, log, tag = sys.argv[1:6]
    threads, seconds = int(sys.argv[6]), float(sys.argv[7])

    def append(line: str) -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    failures: "list[str]" = []
    client = hilock.Client(url)
    sem = client.semaphore(sem_name)
    latch = client.count_down_latch(latch_name)
    woke: "list[int]" = []

    def wait_latch() -> None:
        if latch.wait(60):
            woke.append(time.time_ns() // 1_000_000)
        else:
            failures.append("the latch did not open within 60 s")

    waiter = threading.Thread(target=wait_latch)
    waiter.start()
    end = time.monotonic() + seconds

    def work(i: int) -> None:
        sections = 0
        try:
            while time.monotonic() < end:
                if not sem.acquire(timeout=10):
                    failures.append(f"{tag}-{i}: no permit in 10 s")
                    return
                try:
                    append(f"enter {tag}-{i}")
                    sem.available_permits()
                    append(f"leave {tag}-{i}")
                finally:
                    sem.release()
                sections += 1
        except hilock.HilockError as e:  # reported, then exit 1
            failures.append(f"{tag}-{i}: {e!r}")
        if sections == 0 and not failures:
            failures.append(f"{tag}-{i}: no section")

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    before = time.time_ns() // 1_000_000
    latch.count_down()
    after = time.time_ns() // 1_000_000
    append(f"countdown {tag} {before} {after}")
    waiter.join(70)
    if woke:
        append(f"woke {tag} {woke[0]}")
    client.close()
    for f in failures:
        print(f"worker.py {tag}: {f}", file=sys.stderr)
    return 1 if failures or not woke else 0


if __name__ == "__main__":
    sys.exit(main())
