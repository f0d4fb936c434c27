"""The Python worker of the cross-language queue test (queue_run.py).

    python qworker.py produce URL KIND QUEUE OUT TAG COUNT PAUSE_MS
    python qworker.py consume URL KIND QUEUE OUT TAG STOPFILE SECONDS

KIND is "queue" (client.blocking_queue) or "bounded"
(client.bounded_blocking_queue). A producer puts COUNT distinct elements
"TAG-<pid>-<i>" (pausing PAUSE_MS between them) and appends each to OUT
once its put returned. A consumer (lease 3 s, command timeout 1 s) polls
with a 0.5 s timeout and appends each element it got to OUT, one line,
one write; it stops after an empty poll once STOPFILE exists (exit 0), or
after SECONDS (exit 1). Errors of the wire are counted and the loop goes
on: a take never loses what it took.
"""
import os
import sys
import time

import hilock


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def queue_of(client: "hilock.Client", kind: str, name: str):
    if kind == "bounded":
        return client.bounded_blocking_queue(name)
    return client.blocking_queue(name)


def main() -> int:
    role, url, kind, name, out, tag = sys.argv[1:7]
    if role == "produce":
        count, pause = int(sys.argv[7]), int(sys.argv[8]) / 1000.0
        client = hilock.Client(url)
        q = queue_of(client, kind, name)
        for i in range(count):
            v = f"{tag}-{os.getpid()}-{i}"
            q.put(v)
            append(out, v)
            time.sleep(pause)
        client.close()
        return 0
    stop, seconds = sys.argv[7], float(sys.argv[8])
    client = hilock.Client(url, watchdog_timeout=3.0, command_timeout=1.0,
                           retry_delay=0.2)
    q = queue_of(client, kind, name)
    end = time.monotonic() + seconds
    errors = 0
    while time.monotonic() < end:
        try:
            v = q.poll(0.5)
        except hilock.HilockError as e:
            errors += 1
            if errors > 200:
                print(f"qworker.py {tag}: too many errors, last {e!r}", file=sys.stderr)
                return 1
            time.sleep(0.05)
            continue
        if v is not None:
            append(out, v.decode())
        elif os.path.exists(stop):
            client.close()
            return 0
    print(f"qworker.py {tag}: no stop file within {seconds} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
