#!/usr/bin/env python3
"""grid_iterate.py: the data grid at scale (issue 21 "Scale"), `make
bench-grid-iter`. Not part of `make test` or `make bench`.

    python3 bench/grid_iterate.py --build BUILD [--entries 1000000]
        [--reps 3] [--out BENCHMARKS.md] [--no-write]

On a redis-server of its own it fills one hash of ENTRIES fields
("field:<i>", 20-byte values, HSET pipelined), then iterates it fully in
separate processes, REPS rounds in which every row runs once in turn (the
machine's load drifts: ratios of one round are what count), and keeps each
row's median:
  C       hilock's hl_map_scan, and raw hiredis HSCAN (the floor), pages
          of several COUNTs (to pick the default page)
  Python  hilock's Map.scan through hilock._grid._scan; redis-py's
          hscan_iter (default COUNT and the same COUNT; with the hiredis
          parser and with its pure-Python one); HGETALL in one reply
  Go      hilock's Map.Scan page by page (as the binding's scanAll);
          go-redis v9's HScan(...).Iterator(); HGetAll in one reply
  Lua     hilock's Map:scan through hilock._grid_scan
Each reports entries/s and its peak RSS (VmHWM) before and after the
iteration; a process that only imports and connects gives each library's
base. The raw SSCAN and ZSCAN floors over 1,000,000-member sets show the
COUNT curve of the other kinds. Bulk: get_all of 1, 10, 100, 1000 keys
against as many single gets and HMGET (C, Python, Go).

The section it writes is appended to --out (or replaces its own, between
the grid-iter markers).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import run  # noqa: E402  (bench/run.py: Redis, Pieces, run_json)
from run import NotMeasured, log, run_json, sh  # noqa: E402

NAME = "bench:griditer"
SET_KEY, ZSET_KEY = "bench:griditer:set", "bench:griditer:zset"
C_COUNTS = [10, 100, 250, 500, 1000, 2000, 5000]
PY_COUNTS = [100, 500, 1000, 2000]
CHOSEN = 1000               # the page this bench recommends
BULK = [1, 10, 100, 1000]
BEGIN, END = "<!-- grid-iter:begin -->", "<!-- grid-iter:end -->"


def peer_venv(build):
    """redis-py with the hiredis parser available (chosen per row)."""
    venv = os.path.join(build, "venv-griditer")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        sh([sys.executable, "-m", "venv", venv])
    if subprocess.run([py, "-c", "import redis, hiredis"],
                      capture_output=True).returncode != 0:
        sh([py, "-m", "pip", "install", "-q", "redis", "hiredis"],
           timeout=900)
    return py


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--entries", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bulk-secs", type=float, default=0.5)
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--render", metavar="JSON",
                    help="only rewrite the section from "
                         "BUILD/bench-results-griditer.json")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if args.render:
        with open(args.render) as f:
            text = "\n".join(render(json.load(f))) + "\n"
        print(text)
        if not args.no_write:
            splice(args.out, text)
        return 0
    pieces = run.Pieces(build, False)
    notes = {}

    def piece(key, fn):
        try:
            return fn()
        except NotMeasured as e:
            notes[key] = str(e)
            log("not measured:", key, "-", e)
            return None

    hg = os.path.join(build, "bench", "hlgriditer")
    if not os.access(hg, os.X_OK):
        raise SystemExit("bench: %s is not built" % hg)
    pyhl = piece("python", pieces.python_hilock)
    pyhl = pyhl and [pyhl[0], os.path.join(BENCH, "py", "grid_iter.py")]
    pypeer = piece("redis-py", lambda: peer_venv(build))
    pypeer = pypeer and [pypeer, os.path.join(BENCH, "py", "grid_iter.py")]
    gobin = piece("go", lambda: pieces.go("griditer"))
    lua = piece("lua", pieces.lua)
    luacmd, luaenv = (lua[0][:1] + [os.path.join(BENCH, "lua",
                                                 "grid_iter.lua")],
                      lua[1]) if lua else (None, None)

    redis = run.Redis()
    redis.start()
    url = redis.url
    R = {"entries": args.entries, "reps": args.reps, "notes": notes,
         "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
         "load_start": os.getloadavg(), "iter": {}, "base": {},
         "scanfloor": {}, "bulk": {}}
    t_start = time.time()
    try:
        fill = run_json([hg, url, "fill", NAME, str(args.entries)], 600)
        R["fill_s"] = fill["secs"]
        assert redis.cmd("HLEN", NAME) == args.entries
        R["encoding"] = redis.cmd("OBJECT", "ENCODING", NAME)
        run_json([hg, url, "fillset", "set", SET_KEY, str(args.entries)], 600)
        run_json([hg, url, "fillset", "zset", ZSET_KEY, str(args.entries)],
                 600)
        R["redis_used_mb"] = round(int(redis.info("memory")[
            "used_memory"]) / 2 ** 20)

        # (label, lang, lib, count shown, command, env)
        rows = []
        for c in C_COUNTS:
            rows.append(("c/hilock/%d" % c, [hg, url, "iter", "hilock", NAME,
                                             str(c)], None))
            rows.append(("c/hiredis/%d" % c, [hg, url, "iter", "hiredis",
                                              NAME, str(c)], None))
        if pyhl:
            for c in PY_COUNTS:
                rows.append(("python/hilock/%d" % c, pyhl + [
                    url, "iter", "hilock", NAME, str(c)], None))
        if pypeer:
            for lib in ("redispy-hiredis", "redispy"):
                for c in ("-", str(CHOSEN)):
                    rows.append(("python/%s/%s" % (lib, c), pypeer + [
                        url, "iter", lib, NAME, c], None))
            rows.append(("python/redispy-hiredis/all", pypeer + [
                url, "iter", "redispy-hiredis", NAME, "all"], None))
        if gobin:
            for c in (100, CHOSEN):
                rows.append(("go/hilock/%d" % c, gobin + [
                    url, "iter", "hilock", NAME, str(c)], None))
            for c in ("0", str(CHOSEN), "all"):
                rows.append(("go/goredis/%s" % c, gobin + [
                    url, "iter", "goredis", NAME, c], None))
        if luacmd:
            for c in (100, CHOSEN):
                rows.append(("lua/hilock/%d" % c, luacmd + [
                    url, "iter", NAME, str(c)], luaenv))
        bases = [("c/hilock", [hg, url, "base"], None)]
        if pyhl:
            bases.append(("python/hilock", pyhl + [url, "base", "hilock"],
                          None))
        if pypeer:
            bases.append(("python/redispy-hiredis", pypeer + [
                url, "base", "redispy-hiredis"], None))
        if gobin:
            bases += [("go/hilock", gobin + [url, "base", "hilock"], None),
                      ("go/goredis", gobin + [url, "base", "goredis"], None)]
        if luacmd:
            bases.append(("lua/hilock", luacmd + [url, "base"], luaenv))

        runs = {k: [] for k, _, _ in rows}
        for rep in range(args.reps):
            log("round %d of %d" % (rep + 1, args.reps))
            for key, cmd, env in rows:
                try:
                    r = run_json(cmd, 600, env=env)
                except NotMeasured as e:
                    notes[key] = str(e)
                    log("not measured:", key, "-", e)
                    continue
                if r["entries"] != args.entries:
                    notes[key] = "saw %d entries of %d" % (r["entries"],
                                                           args.entries)
                r["round"] = rep
                runs[key].append(r)
        for key, rs in runs.items():
            if not rs:
                continue
            rs.sort(key=lambda r: r["entries_per_s"])
            med = dict(rs[len(rs) // 2])
            med["all_entries_per_s"] = [r["entries_per_s"] for r in rs]
            if all("cpu_s" in r for r in rs):
                med["cpu_s"] = statistics.median(r["cpu_s"] for r in rs)
            med["rss_peak_kb"] = max(r["rss_peak_kb"] for r in rs)
            med["rss_base_kb"] = statistics.median(r["rss_base_kb"]
                                                   for r in rs)
            R["iter"][key] = med
            R["iter"][key]["rounds"] = {r["round"]: r["entries_per_s"]
                                        for r in rs}
        for key, cmd, env in bases:
            try:
                R["base"][key] = run_json(cmd, 120, env=env)["rss_peak_kb"]
            except NotMeasured as e:
                notes["base/" + key] = str(e)

        # the raw floors of SSCAN and ZSCAN: the same COUNT curve?
        for cmd, key in (("HSCAN", NAME), ("SSCAN", SET_KEY),
                         ("ZSCAN", ZSET_KEY)):
            for c in C_COUNTS:
                vals = []
                redis.cmd("CONFIG", "RESETSTAT")
                for _ in range(args.reps):
                    try:
                        vals.append(run_json([hg, url, "scan", cmd, key,
                                              str(c)], 600)["entries_per_s"])
                    except NotMeasured as e:
                        notes["scan/%s/%d" % (cmd, c)] = str(e)
                if vals:
                    R["scanfloor"]["%s/%d" % (cmd, c)] = \
                        statistics.median(vals)
                    st = redis.info("commandstats").get(
                        "cmdstat_" + cmd.lower(), "")
                    for kv in st.split(","):
                        if kv.startswith("usec_per_call="):
                            R.setdefault("server_us", {})[
                                "%s/%d" % (cmd, c)] = float(kv.split("=")[1])

        # bulk: get_all of N keys against N gets and HMGET
        bulk_rows = [("c/hilock", [hg, url, "bulk", "hilock", NAME]),
                     ("c/hiredis", [hg, url, "bulk", "hiredis", NAME])]
        if pyhl:
            bulk_rows.append(("python/hilock", pyhl + [url, "bulk", "hilock",
                                                       NAME]))
        if pypeer:
            bulk_rows.append(("python/redispy-hiredis", pypeer + [
                url, "bulk", "redispy-hiredis", NAME]))
        if gobin:
            bulk_rows += [("go/hilock", gobin + [url, "bulk", "hilock",
                                                 NAME]),
                          ("go/goredis", gobin + [url, "bulk", "goredis",
                                                  NAME])]
        for n in BULK:
            for key, cmd in bulk_rows:
                try:
                    R["bulk"]["%s/%d" % (key, n)] = run_json(
                        cmd + [str(n), str(args.bulk_secs)], 300)
                except NotMeasured as e:
                    notes["bulk/%s/%d" % (key, n)] = str(e)
        R["versions"] = {"redis": redis.info("server").get("redis_version")}
        for k, py in (("redis-py", pypeer), ("hiredis-py", pypeer)):
            if py:
                mod = "redis" if k == "redis-py" else "hiredis"
                R["versions"][k] = subprocess.run(
                    [py[0], "-c", "import %s; print(%s.__version__)" %
                     (mod, mod)], capture_output=True, text=True
                ).stdout.strip()
    finally:
        redis.cleanup()
    R["load_end"] = os.getloadavg()
    R["duration_s"] = round(time.time() - t_start)
    with open(os.path.join(build, "bench-results-griditer.json"), "w") as f:
        json.dump(R, f, indent=1)
    text = "\n".join(render(R)) + "\n"
    print(text)
    if not args.no_write:
        splice(args.out, text)
        log("wrote its section of", args.out)
    return 0


def fmt_rate(x):
    return "%.0fk" % (x / 1000) if x < 1e6 else "%.2fM" % (x / 1e6)


def mb(kb):
    return "%.1f MB" % (kb / 1024)


def render(R):
    o = []
    w = o.append
    it, base = R["iter"], R["base"]
    w(BEGIN)
    w("## (12) The data grid at scale: iterating 1,000,000 entries, bulk "
      "reads\n")
    w("Measured %s UTC by `make bench-grid-iter` (`python3 "
      "bench/grid_iterate.py --build build`), %d s, load %.1f -> %.1f. "
      "One hash of %s fields (`field:<i>`, 20-byte values; %s encoding; "
      "Redis %s used %d MB), iterated fully by each client in a process "
      "of its own, %d rounds in which every row runs once in turn; the "
      "median round of each row. The machine is shared (2 cores, other "
      "work running): absolute figures are noisy, the ratios of rows "
      "measured side by side in this one run are what count.\n" % (
          R["date"], R["duration_s"], R["load_start"][0], R["load_end"][0],
          "{:,}".format(R["entries"]), R.get("encoding"),
          R["versions"].get("redis"), R.get("redis_used_mb", 0), R["reps"]))

    def row_of(key):
        return it.get(key)

    def rss(r, lang_base):
        grow = r["rss_peak_kb"] - r["rss_base_kb"]
        return "%s (+%s)" % (mb(r["rss_peak_kb"]), mb(max(grow, 0)))

    def ratio(a, b):
        return "%.2fx" % (a / b) if a and b else "-"

    w("### Findings\n")
    for f in findings(R):
        w("- " + f)
    w("")
    w("### Iteration\n")
    w("RSS: the process's peak (VmHWM) after the whole iteration, and in "
      "brackets its growth over the peak after importing and connecting. "
      "The base of a process that only imports the library and connects: " +
      ", ".join("%s %s" % (k, mb(v)) for k, v in sorted(base.items())) +
      ".\n")
    w("Client CPU: the process's user and system time over the iteration "
      "(median of the rounds), per entry: what the client costs, which the "
      "shared machine moves less than the wall time (Lua: os.clock).\n")
    w("| client | page (COUNT) | entries/s | client CPU ns/entry "
      "| peak RSS (growth) | vs (entries/s) |")
    w("|---|---|---|---|---|---|")
    ch = str(CHOSEN)

    def line(label, key, count, vs=None):
        r = row_of(key)
        if not r:
            w("| %s | %s | not measured: %s | | | |" % (
                label, count, R["notes"].get(key, "?")))
            return
        cmp = ""
        if vs:
            parts = []
            for vlabel, vkey in vs:
                v = row_of(vkey)
                if v:
                    parts.append("%s vs %s" % (ratio(
                        r["entries_per_s"], v["entries_per_s"]), vlabel))
            cmp = "; ".join(parts)
        w("| %s | %s | %s | %s | %s | %s |" % (
            label, count, fmt_rate(r["entries_per_s"]),
            "%.0f" % (r["cpu_s"] / r["entries"] * 1e9)
            if r.get("cpu_s") is not None and r.get("entries") else "-",
            rss(r, None), cmp))

    line("C hilock `hl_map_scan`", "c/hilock/" + ch, ch,
         [("raw hiredis HSCAN", "c/hiredis/" + ch)])
    line("C hilock `hl_map_scan`", "c/hilock/100", "100 (spec default)",
         [("raw hiredis HSCAN", "c/hiredis/100")])
    line("C raw hiredis HSCAN (floor)", "c/hiredis/" + ch, ch)
    line("Python hilock `_scan(map.scan)`", "python/hilock/" + ch, ch,
         [("redis-py+hiredis hscan_iter default",
           "python/redispy-hiredis/-"),
          ("redis-py+hiredis hscan_iter same COUNT",
           "python/redispy-hiredis/" + ch),
          ("redis-py (pure parser) same COUNT", "python/redispy/" + ch)])
    line("Python hilock `_scan(map.scan)`", "python/hilock/100",
         "100 (spec default)",
         [("redis-py+hiredis hscan_iter default",
           "python/redispy-hiredis/-")])
    line("redis-py `hscan_iter` (hiredis parser)",
         "python/redispy-hiredis/-", "default (10)")
    line("redis-py `hscan_iter` (hiredis parser)",
         "python/redispy-hiredis/" + ch, ch)
    line("redis-py `hscan_iter` (pure-Python parser)", "python/redispy/-",
         "default (10)")
    line("redis-py `hscan_iter` (pure-Python parser)", "python/redispy/" + ch,
         ch)
    line("redis-py `hgetall` (one reply)", "python/redispy-hiredis/all",
         "whole map")
    line("Go hilock `Map.Scan` pages", "go/hilock/" + ch, ch,
         [("go-redis HScan Iterator default", "go/goredis/0"),
          ("go-redis same COUNT", "go/goredis/" + ch)])
    line("Go hilock `Map.Scan` pages", "go/hilock/100", "100 (spec default)",
         [("go-redis HScan Iterator default", "go/goredis/0")])
    line("go-redis v9 `HScan(...).Iterator()`", "go/goredis/0",
         "default (10)")
    line("go-redis v9 `HScan(...).Iterator()`", "go/goredis/" + ch, ch)
    line("go-redis v9 `HGetAll` (one reply)", "go/goredis/all", "whole map")
    line("Lua hilock `_grid_scan(map:scan)`", "lua/hilock/" + ch, ch)
    line("Lua hilock `_grid_scan(map:scan)`", "lua/hilock/100",
         "100 (spec default)")
    w("")

    w("### The page size (COUNT)\n")
    w("Entries/s by COUNT: hilock over HSCAN in C and Python, and the raw "
      "hiredis floors of HSCAN, SSCAN and ZSCAN (1,000,000 fields or "
      "members each; a page of COUNT holds about COUNT entries).\n")
    w("| COUNT | C hilock | C HSCAN floor | hilock/floor | Python hilock "
      "| SSCAN floor | ZSCAN floor | server us a page: HSCAN / SSCAN / "
      "ZSCAN |")
    w("|---|---|---|---|---|---|---|---|")
    su = R.get("server_us", {})
    for c in C_COUNTS:
        h, f = row_of("c/hilock/%d" % c), row_of("c/hiredis/%d" % c)
        p = row_of("python/hilock/%d" % c)
        s = R["scanfloor"]

        def g(x):
            return fmt_rate(x) if x else "-"
        w("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
            c, g(h and h["entries_per_s"]), g(f and f["entries_per_s"]),
            ratio(h and h["entries_per_s"], f and f["entries_per_s"]),
            g(p and p["entries_per_s"]), g(s.get("SSCAN/%d" % c)),
            g(s.get("ZSCAN/%d" % c)), " / ".join(
                "%.0f" % su[k] if k in su else "-" for k in
                ("HSCAN/%d" % c, "SSCAN/%d" % c, "ZSCAN/%d" % c))))
    w("")

    w("### Bulk reads: one round trip\n")
    w("Microseconds per batch: `get_all` of N keys (one EVALSHA over "
      "HMGET) against the same N keys read by N single gets (N round "
      "trips), and HMGET of the N keys through raw hiredis, redis-py "
      "(hiredis parser) and go-redis. Time per key falls as the batch "
      "grows: it is one round trip plus the bytes.\n")
    w("| client | N=1 batch / singles | N=10 | N=100 | N=1000 |")
    w("|---|---|---|---|---|")
    B = R["bulk"]
    for key, label in (("c/hilock", "C hilock `hl_map_get_all` / `hl_map_get`"),
                       ("c/hiredis", "C raw hiredis HMGET / HGET"),
                       ("python/hilock", "Python hilock `get_all` / `get`"),
                       ("python/redispy-hiredis",
                        "redis-py `hmget` / `hget`"),
                       ("go/hilock", "Go hilock `GetAll` / `Get`"),
                       ("go/goredis", "go-redis `HMGet` / `HGet`")):
        cells = []
        for n in BULK:
            r = B.get("%s/%d" % (key, n))
            cells.append("%.0f / %.0f" % (r["batch_us"], r["singles_us"])
                         if r else "-")
        w("| %s | %s |" % (label, " | ".join(cells)))
    w("")
    if R["notes"]:
        w("Not measured: " + "; ".join("%s: %s" % kv for kv in
                                       sorted(R["notes"].items())) + "\n")
    w("Versions: " + ", ".join("%s %s" % kv for kv in
                               sorted(R["versions"].items())) + ".\n")
    w(END)
    return o


def findings(R):
    """The claims of issue 21 "Scale", read off this run's rows."""
    it, B, out = R["iter"], R["bulk"], []
    ch = str(CHOSEN)

    def eps(k):
        r = it.get(k)
        return r["entries_per_s"] if r else None

    def rat(a, b):
        a, b = eps(a), eps(b)
        return "%.2fx" % (a / b) if a and b else "not measured"

    def same_round(a, b):
        """a/b per round (the pairs measured back to back), as a range."""
        ra, rb = it.get(a, {}).get("rounds", {}), it.get(b, {}).get("rounds",
                                                                    {})
        xs = sorted(ra[k] / rb[k] for k in ra if k in rb and rb[k])
        return ("%.2f-%.2f" % (xs[0], xs[-1])) if xs else "-"
    def beats(a, b):
        x, y = eps(a), eps(b)
        return x is not None and y is not None and x >= y
    out.append(
        "Issue 21's claim, read off this run: memory stays bounded (below); "
        "iterating is at least as fast as redis-py's `hscan_iter` and "
        "go-redis's scan iterator as they are called by default (COUNT "
        "left out, the server's 10): %s and %s; at the same COUNT as "
        "hilock's page: %s and %s (the figures follow)." % (
            "yes" if beats("python/hilock/" + ch,
                           "python/redispy-hiredis/-") else "no",
            "yes" if beats("go/hilock/" + ch, "go/goredis/0") else "no",
            "yes" if beats("python/hilock/" + ch,
                           "python/redispy-hiredis/" + ch) else "not yet",
            "yes" if beats("go/hilock/" + ch, "go/goredis/" + ch)
            else "not yet"))
    out.append(
        "Speed at a page of %s: C hilock %s of the raw hiredis HSCAN floor "
        "(rounds %s); Python hilock %s of redis-py's `hscan_iter` at its "
        "default COUNT and %s at the same COUNT (hiredis parser; rounds "
        "%s); Go hilock %s of go-redis's iterator at its default and %s "
        "at the same COUNT (rounds %s); Lua hilock %s of C hilock." % (
            ch, rat("c/hilock/" + ch, "c/hiredis/" + ch),
            same_round("c/hilock/" + ch, "c/hiredis/" + ch),
            rat("python/hilock/" + ch, "python/redispy-hiredis/-"),
            rat("python/hilock/" + ch, "python/redispy-hiredis/" + ch),
            same_round("python/hilock/" + ch, "python/redispy-hiredis/" + ch),
            rat("go/hilock/" + ch, "go/goredis/0"),
            rat("go/hilock/" + ch, "go/goredis/" + ch),
            same_round("go/hilock/" + ch, "go/goredis/" + ch),
            rat("lua/hilock/" + ch, "c/hilock/" + ch)))
    def cpu(k):
        r = it.get(k)
        return r["cpu_s"] / r["entries"] * 1e9 if r and r.get(
            "cpu_s") is not None and r.get("entries") else None
    cp = []
    for label, a, b in (
            ("C hilock %s ns an entry against the raw hiredis floor's %s",
             "c/hilock/" + ch, "c/hiredis/" + ch),
            ("Python hilock %s against redis-py's %s (hiredis parser, same "
             "COUNT)", "python/hilock/" + ch, "python/redispy-hiredis/" + ch),
            ("Go hilock %s against go-redis's %s (same COUNT)",
             "go/hilock/" + ch, "go/goredis/" + ch)):
        x, y = cpu(a), cpu(b)
        if x and y:
            cp.append(label % ("%.0f" % x, "%.0f" % y))
    if cp:
        out.append("Client CPU at a page of %s (the server's share is the "
                   "same for all): " % ch + "; ".join(cp) + ".")
    grow = [(k, r["rss_peak_kb"] - r["rss_base_kb"]) for k, r in it.items()
            if not k.endswith("/all")]
    alls = [(k, r["rss_peak_kb"] - r["rss_base_kb"]) for k, r in it.items()
            if k.endswith("/all")]
    if grow:
        k, g = max(grow, key=lambda x: x[1])
        out.append(
            "Memory stays bounded: the most any paged iteration grew over "
            "its process's base is %s (%s); reading the whole map in one "
            "reply grows by %s." % (
                mb(g), k, ", ".join("%s (%s)" % (mb(v), kk)
                                    for kk, v in alls) or "-"))
    sf = R["scanfloor"]
    parts = []
    for cmd in ("HSCAN", "SSCAN", "ZSCAN"):
        a, b, c = (sf.get("%s/%d" % (cmd, n)) for n in (100, CHOSEN, 5000))
        if a and b and c:
            parts.append("%s %.1fx from 100 to %d, %.2fx more to 5000" % (
                cmd, b / a, CHOSEN, c / b))
    if parts:
        out.append(
            "The page: the raw floors gain " + "; ".join(parts) + ". "
            "This bench's recommendation for HSCAN, SSCAN and ZSCAN: %d "
            "(one HSCAN page of it kept the server busy %s us here; see "
            "the table below)." % (CHOSEN, "%.0f" % R.get(
                "server_us", {}).get("HSCAN/%d" % CHOSEN, 0)))
    out.append(
        "What hilock changed to get there: a binding converted a page "
        "element by element, several calls into C each (Python about 2.5 "
        "to 6.5 us an entry, more than the round trip; Go three cgo calls "
        "an element); `hl_value_gather` now hands over an array's lengths "
        "and bytes in one call (Python about 0.3 to 0.5 us an entry); in C "
        "a page's values are made in a few 32 KB blocks, which each thread "
        "keeps for its next page (glibc gave a page's memory back to the "
        "system at every page: a third of C's client CPU); and Python's "
        "many bytes arguments (a get_all's keys) take a short path.")
    b1, b1000 = B.get("c/hilock/1"), B.get("c/hilock/1000")
    p1000 = B.get("python/hilock/1000")
    if b1 and b1000:
        out.append(
            "Bulk reads are one round trip: C `get_all` of 1000 keys takes "
            "%.0f us (%.1fx one key's %.0f us, for 1000x the keys), %.0fx "
            "faster than 1000 single gets%s." % (
                b1000["batch_us"], b1000["batch_us"] / b1["batch_us"],
                b1["batch_us"], b1000["singles_us"] / b1000["batch_us"],
                "; Python: %.0f us, %.0fx faster than its single gets" % (
                    p1000["batch_us"], p1000["singles_us"] /
                    p1000["batch_us"]) if p1000 else ""))
    hm = []
    for a, b, what in (("c/hilock", "c/hiredis", "C"),
                       ("python/hilock", "python/redispy-hiredis",
                        "Python (against redis-py)"),
                       ("go/hilock", "go/goredis", "Go (against go-redis)")):
        for n in (100, 1000):
            x, y = B.get("%s/%d" % (a, n)), B.get("%s/%d" % (b, n))
            if x and y:
                hm.append("%s %d keys %.2fx" % (what, n, y["batch_us"] /
                                                 x["batch_us"]))
    if hm:
        out.append(
            "But `get_all` is slower than a plain HMGET of the same keys "
            "(its speed as a fraction of HMGET's: " + ", ".join(hm) + "): "
            "the map spec's get_all runs a script (HMGET, then a Lua loop "
            "that pairs keys and values), which costs the server about 3x "
            "an HMGET of 1000 keys (INFO commandstats in one check: 702 us "
            "a call against 217 us); an HMGET paired on the client, as "
            "Redisson's getAll does, would take that away (the map's spec "
            "is not this bench's to change).")
    return out


def splice(path, text):
    page = open(path).read() if os.path.exists(path) else ""
    if BEGIN in page and END in page:
        a = page.index(BEGIN)
        b = page.index(END) + len(END)
        page = page[:a] + text.rstrip("\n") + page[b:]
    else:
        page = page.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(page)


if __name__ == "__main__":
    sys.exit(main())
