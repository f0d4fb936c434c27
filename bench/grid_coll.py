"""The data grid's collections, each operation against its floor
(`bench/run.py --only grid-coll`): map, set, scored sorted set, sorted set,
list, queue and deque, through hilock's C, Python, Lua and Go, beside raw
redis-py and go-redis, pottery and Redisson. It reuses run.py's grid
machinery (hlbench grid-capture / grid-paired, pybench.py, luabench.lua,
bench/go/grid, RedissonBench) with a list of its own (COLL_OPS) and one
thing more: an object is filled before every process (PREFILL), so a poll
always takes an element and a rank or an index finds what it looks for.
The section goes at the end of BENCHMARKS.md between its own markers.
"""
import os
import shutil
import tempfile
import time

COLL_GROUPS = ("grid-coll",)
COLL_BEGIN = "<!-- grid-coll:begin -->"
COLL_END = "<!-- grid-coll:end -->"
V = "b:" + "v" * 16
KEYS100 = ["b:k%03d" % i for i in range(100)]
POLL_FILL = 300000       # a queue's elements before a process: never empty
SORTED_FILL = 1000       # the sorted set's values (its add is O(n): LINSERT)

# What the driver puts in the object before every process: (type, n).
# hash: k000.. -> "v"*16; set: v0000000..; zset: m0000000.. scored 0..n-1;
# list: v0000000.. (in order, so a sorted set's list too).
PREFILL_SCRIPT = """
redis.call('del', KEYS[1])
local t, n = ARGV[1], tonumber(ARGV[2])
for i = 0, n - 1, 500 do
  local a = {}
  for j = i, math.min(n, i + 500) - 1 do
    if t == 'hash' then
      a[#a + 1] = string.format('k%03d', j); a[#a + 1] = ARGV[3]
    elseif t == 'zset' then
      a[#a + 1] = j; a[#a + 1] = string.format('m%07d', j)
    else
      a[#a + 1] = string.format('v%07d', j)
    end
  end
  if t == 'hash' then redis.call('hset', KEYS[1], unpack(a))
  elseif t == 'zset' then redis.call('zadd', KEYS[1], unpack(a))
  elseif t == 'set' then redis.call('sadd', KEYS[1], unpack(a))
  else redis.call('rpush', KEYS[1], unpack(a)) end
end
return n
"""

# (kind, op, args, peers, prefill, note)
COLL_OPS = [
    ("map", "get", ["b:k050"], ("redispy", "goredis", "pottery", "redisson"),
     ("hash", 100), ""),
    ("map", "put", ["b:k050", V], ("pottery", "redisson"), ("hash", 100),
     "answers the previous value: a script; pottery's item assignment is "
     "HSET"),
    ("map", "fast_put", ["b:k050", V],
     ("redispy", "goredis", "pottery", "redisson"), ("hash", 100), ""),
    ("map", "get_all", KEYS100, ("redispy", "goredis", "redisson"),
     ("hash", 100), "100 keys a call (HMGET)"),
    ("set", "add", ["b:v0000050"],
     ("redispy", "goredis", "pottery", "redisson"), ("set", 100), ""),
    ("set", "contains", ["b:v0000050"],
     ("redispy", "goredis", "pottery", "redisson"), ("set", 100), ""),
    ("scored_sorted_set", "add", ["f:50", "b:m0000050"],
     ("redispy", "goredis", "redisson"), ("zset", 1000), ""),
    ("scored_sorted_set", "rank", ["b:m0000500"],
     ("redispy", "goredis", "redisson"), ("zset", 1000), ""),
    ("sorted_set", "add", ["b:v0000500"], ("redisson",),
     ("list", SORTED_FILL),
     "a value already there, in a set of %s: the binary search in one "
     "script, no LINSERT (see bench/sorted_set for 50,000 new values)"
     % format(SORTED_FILL, ",")),
    ("list", "add", [V], ("redispy", "goredis", "pottery", "redisson"),
     None, "RPUSH: the list grows by the run's calls"),
    ("list", "get", ["i:500"], ("redispy", "goredis", "pottery", "redisson"),
     ("list", 1000), ""),
    ("queue", "offer", [V], ("redispy", "goredis", "pottery", "redisson"),
     None, ""),
    ("queue", "poll", [], ("redispy", "goredis", "pottery", "redisson"),
     ("list", POLL_FILL),
     "mark: a request marker key each call, the floor's too; the queue "
     "holds %s elements before each process" % format(POLL_FILL, ",")),
    ("deque", "poll_last", [], ("redispy", "goredis", "pottery", "redisson"),
     ("list", POLL_FILL), "mark, as the queue's poll"),
]


def run(R, rp, pieces, hb, url, redis, secs, reps, attempt):
    """rp: bench/run.py's module (run_json, log, grid_specs, ...)."""
    G = R["grid_coll"] = {"started": time.time(),
                          "load_start": os.getloadavg(), "rows": [],
                          "secs": secs, "reps": reps}
    have = rp.grid_specs()
    tmp = tempfile.mkdtemp(prefix="hilock-bench-gridcoll-")
    try:
        floorlib = pieces.floorlib()
    except rp.NotMeasured as e:
        floorlib = None
        G["no_floorlib"] = str(e)

    median_run = rp.grid_median_run

    for kind, op, args, peers, prefill, note in COLL_OPS:
        name = "bench:grid:%s:%s" % (kind, op)
        groups = rp.grid_groups([], op, args)

        def fill(name=name, prefill=prefill):
            if prefill:
                redis.cmd("EVAL", PREFILL_SCRIPT, "1", name, prefill[0],
                          str(prefill[1]), "v" * 16)

        def paired(key, fn, n):
            def run1():
                runs = []
                for _ in range(n):
                    fill()
                    r = fn()
                    if "hilock_ops_per_s" in r:
                        r["ops_per_s"] = r.pop("hilock_ops_per_s")
                    if "hilock_cpu_us" in r:
                        r["cpu_us"] = r.pop("hilock_cpu_us")
                    runs.append(r)
                return median_run(runs, lambda r: r.get("floor_ops_per_s"))
            return attempt(key, run1)

        row = {"kind": kind, "op": op, "args": args, "note": note,
               "res": {}}
        G["rows"].append(row)
        ff = "-"
        if op not in have.get(kind, ()):
            row["missing"] = True
        elif hb:
            ff = os.path.join(tmp, "%s.%s.floor" % (kind, op))

            def capture():
                fill()
                return rp.run_json(hb + [url, "grid-capture", ff, kind,
                                         name] + groups, 60)
            cap = attempt("grid-coll/%s.%s/capture" % (kind, op), capture)
            if cap:
                row["floor_cmds"] = cap["commands"]
            else:
                ff = "-"
        res = row["res"]
        key = "grid-coll/%s.%s/" % (kind, op)
        s = str(secs)
        if ff != "-":
            res["c"] = paired(key + "c", lambda: rp.run_json(
                hb + [url, "grid-paired", s, ff, kind, name] + groups,
                120), reps)
            if floorlib:
                res["python"] = paired(key + "python", lambda: rp.run_json(
                    pieces.python_hilock() + [url, "hilock", "grid", s,
                                              floorlib, ff, kind, name] +
                    groups, 120), reps)

                def lua():
                    cmd, env = pieces.lua()
                    return rp.run_json(cmd + [url, "grid", s, ff, kind,
                                              name] + groups, 120, env=env)
                res["lua"] = paired(key + "lua", lua, reps)
                res["go"] = paired(key + "go", lambda: rp.run_json(
                    pieces.go("grid") + ["grid", "hilock", url, s,
                                         floorlib, ff, kind, name] + groups,
                    120), reps)
        for peer in peers:
            pff = ff if floorlib else "-"
            if peer in ("redispy", "pottery"):
                res[peer] = paired(key + peer, lambda: rp.run_json(
                    pieces.python_peer() + [url, peer, "grid", s,
                                            floorlib or "-", pff, kind,
                                            name] + groups, 120), reps)
            elif peer == "goredis":
                res[peer] = paired(key + peer, lambda: rp.run_json(
                    pieces.go("grid") + ["grid", peer, url, s,
                                         floorlib or "-", pff, kind, name] +
                    groups, 120), reps)
            elif peer == "redisson":
                def java_run():
                    runs = []
                    for _ in range(reps):
                        fl = []
                        fill()
                        if ff != "-":
                            fl.append(rp.run_json(hb + [
                                url, "grid-floor", str(secs / 2), ff],
                                60)["ops_per_s"])
                        fill()
                        r = rp.run_json(pieces.java() + [
                            url, "grid", s, kind, name] + groups, 300)
                        if ff != "-":
                            fill()
                            fl.append(rp.run_json(hb + [
                                url, "grid-floor", str(secs / 2), ff],
                                60)["ops_per_s"])
                            r["floor_ops_per_s"] = sum(fl) / 2
                        runs.append(r)
                    return median_run(runs,
                                      lambda r: r.get("floor_ops_per_s"))
                res[peer] = attempt(key + peer, java_run)
        rp.log("grid-coll %s.%s:" % (kind, op), ", ".join(
            "%s %s" % (k, v.get("ratio", round(v["ops_per_s"])))
            for k, v in res.items() if v))
    shutil.rmtree(tmp, ignore_errors=True)
    G["load_end"] = os.getloadavg()
    G["duration_s"] = round(time.time() - G["started"])


PEER_NAMES = {"redispy": "redis-py (raw)", "goredis": "go-redis (raw)",
              "pottery": "pottery (Python)", "redisson": "Redisson"}
LANGS = ("c", "python", "lua", "go")


def render(R, rp):
    o = [COLL_BEGIN]
    w = o.append
    G = R.get("grid_coll")
    w("## (14) The data grid: collections, each operation against its floor\n")
    if not G:
        w("not measured\n")
        w(COLL_END)
        return o
    ct, bt = rp.GRID_C_TARGET, rp.GRID_BINDING_TARGET
    w("Measured by `%s` on %s UTC in %d s, on the 2-core VM (above a load "
      "average of 2, other work competed for its cores): load average "
      "(1, 5, 15 min) %s at the start, %s at the end. Each figure is the "
      "median of %d runs of %g s; only the ratios within one process "
      "mean much on this machine, the ops/s move with its load.%s\n" % (
          G.get("argv", "?"), G.get("date", "?"), G.get("duration_s", 0),
          " / ".join("%.2f" % x for x in G.get("load_start", [])) or "?",
          " / ".join("%.2f" % x for x in G.get("load_end", [])) or "?",
          G.get("reps", 1), G.get("secs", 0),
          (" Core: %s." % G["core"]) if G.get("core") else ""))
    w("Reproduce: `make bench BENCH_ARGS=\"--only grid-coll\"` (about 30 "
      "minutes on this machine; add `--quick` for one run of 1 s a row, "
      "about 4). It replaces only this section (between its markers, at "
      "the end of the page).\n")
    w("As section (11): the floor of an operation is what hilock sends for "
      "it, captured once with MONITOR and replayed over one raw hiredis "
      "connection (bench/floor.c), alternating in 5 ms slices with the "
      "call in the same process; a peer runs in its own process against "
      "that floor (Redisson: against the floor run just before and just "
      "after it). A `mark` operation (a poll) sends a request marker key "
      "with every call; the floor replays the same script with a new "
      "marker each round too (floor.c), so it pays what hilock pays. "
      "Before every process the driver fills the object (bench/grid_coll.py "
      "PREFILL): maps of 100 entries, sets of 100, scored sorted sets of "
      "1,000, lists of 1,000, queues and deques of %s, a sorted set of "
      "%s; a poll always takes an element. Each cell: the ratio to the "
      "floor of its own process (higher is faster), and ops/s.\n" % (
          format(POLL_FILL, ","), format(SORTED_FILL, ",")))

    cell = rp.grid_cell

    rows = [r for r in G["rows"] if not r.get("missing")]
    w("### hilock: C and the bindings (targets: C >= %.2fx, bindings >= "
      "%.1fx)\n" % (ct, bt))
    w("| operation | its floor (raw hiredis) | floor in C's run, ops/s "
      "| C | Python | Lua | Go |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        res = r["res"]
        c = res.get("c") or {}
        cmds = rp.grid_cmd_text(r.get("floor_cmds"))
        if len(cmds) > 90:
            cmds = cmds[:87] + "…"
        w("| %s.%s | `%s` | %s | %s | %s | %s | %s |" % (
            r["kind"], r["op"], cmds,
            "%d" % round(c["floor_ops_per_s"]) if c.get("floor_ops_per_s")
            else "—", cell(res.get("c"), ct), cell(res.get("python"), bt),
            cell(res.get("lua"), bt), cell(res.get("go"), bt)))
    w("")
    w("Client CPU per operation, µs (floor → hilock, and the difference: "
      "what the binding and the library add):\n")
    w("| operation | C | Python | Lua | Go |")
    w("|---|---:|---:|---:|---:|")

    def cpu(r):
        if not r or r.get("floor_cpu_us") is None or r.get("cpu_us") is None:
            return "—"
        return "%.1f → %.1f (%+.1f)" % (r["floor_cpu_us"], r["cpu_us"],
                                        r["cpu_us"] - r["floor_cpu_us"])
    for r in rows:
        w("| %s.%s | %s |" % (r["kind"], r["op"], " | ".join(
            cpu(r["res"].get(x)) for x in LANGS)))
    w("")
    o.extend(rp.grid_cross_lines(rows))
    peers = [p for p in PEER_NAMES
             if any(r["res"].get(p) for r in G["rows"])]
    w("### Side by side: the peers, against the same floor\n")
    w("| operation | hilock C | hilock Python | hilock Go | %s | note |" %
      " | ".join(PEER_NAMES[p] for p in peers))
    w("|---|---:|---:|---:|%s---|" % ("---:|" * len(peers)))
    for r in G["rows"]:
        res = r["res"]
        if r.get("missing"):
            hc = hp = hg = "not in hilock"
        else:
            hc, hp, hg = (cell(res.get(x)) for x in ("c", "python", "go"))
        w("| %s.%s | %s | %s | %s | %s | %s |" % (
            r["kind"], r["op"], hc, hp, hg, " | ".join(
                cell(res.get(p)) if p in res else "—" for p in peers),
            r.get("note", "")))
    w("")
    w("The sorted set's add above finds a value already there (a binary "
      "search of LINDEX calls in one script, no LINSERT): every call of a "
      "row runs the same arguments. Adding new values is O(n) in Redis "
      "for hilock and Redisson alike (LINSERT); 50,000 distinct adds, "
      "hilock against Redisson's RSortedSet.add, are measured by "
      "`sh bench/sorted_set/run.sh build 50000` (docs/grid-sorted-set.md, "
      "Speed: hilock C 19-38 s, Redisson 86-151 s; its users measured "
      "about 4 minutes).\n")
    w(COLL_END)
    return o


def splice(page, R, rp):
    """The page with this section replaced, or appended at the end."""
    block = "\n".join(render(R, rp)).rstrip("\n")
    if COLL_BEGIN in page and COLL_END in page:
        a = page.index(COLL_BEGIN)
        b = page.index(COLL_END) + len(COLL_END)
        return page[:a] + block + page[b:]
    return page.rstrip("\n") + "\n\n" + block + "\n"
