#!/usr/bin/env python3
"""run.py: `make bench`. Starts its own redis-server, runs every scenario,
writes BENCHMARKS.md (and bench/wait-times.png).

    python3 bench/run.py --build BUILD [--quick] [--only c,python,...]

Every figure is printed next to a reference measured in the same run (the
raw-hiredis floor, the PING round trip, the ideal throughput, or one
thread), as a ratio. A scenario whose pieces are missing is reported as
"not measured: <why>", never silently dropped.

Pieces, all built or installed under BUILD:
  BUILD/bench/hlbench             C scenarios and the floor (CMake target)
  BUILD/venv-python/bin/python    the hilock Python binding (mk/python.mk)
  BUILD/venv-bench                redis-py, python-redis-lock, matplotlib
  BUILD/bench-go/                 bench/go: redsync and the hilock Go binding
  BUILD/bench-java/               bench/java: the Redisson driver (Maven)
  Lua: the SWIG module under BUILD/bindings/lua
"""

import argparse
import datetime
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import topo  # noqa: E402  (bench/topo.py: the deployments)

CS_US = 1000                 # the critical section under contention
WORKERS = [2, 4, 16, 64]
SCALE_THREADS = [1, 8, 32]
WD_LOCKS = 10000
WD_TIMEOUT_MS = 3000         # renewal period = 1 s
WAITERS = 100
FAULT_WD_MS = 3000           # the faults scenario: lost after ~2.7 s
REPS = 3                     # runs per binding in scenario (1)


def log(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# redis-server
# --------------------------------------------------------------------------
class Redis:
    def __init__(self):
        self.server = os.environ.get("REDIS_SERVER", "redis-server")
        self.dir = tempfile.mkdtemp(prefix="hilock-bench-")
        self.proc = None
        self.port = None

    def start(self):
        for _ in range(5):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()
            self.proc = subprocess.Popen(
                [self.server, "--port", str(port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self.dir,
                 "--maxclients", "4096"],
                stdout=open(os.path.join(self.dir, "redis.log"), "w"),
                stderr=subprocess.STDOUT)
            deadline = time.time() + 10
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if self.cmd("PING", port=port) == "PONG":
                        self.port = port
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            self.stop()
        raise SystemExit("bench: cannot start redis-server")

    def cmd(self, *args, port=None):
        """One command over a fresh socket (RESP), for setup and INFO."""
        with socket.create_connection(("127.0.0.1", port or self.port),
                                      timeout=10) as s:
            buf = b"*%d\r\n" % len(args)
            for a in args:
                a = a.encode() if isinstance(a, str) else a
                buf += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(buf)
            f = s.makefile("rb")
            line = f.readline()
            t, rest = line[:1], line[1:].strip()
            if t == b"+":
                return rest.decode()
            if t == b"-":
                raise RuntimeError(rest.decode())
            if t == b":":
                return int(rest)
            if t == b"$":
                n = int(rest)
                return None if n < 0 else f.read(n + 2)[:-2].decode()
            raise RuntimeError("unexpected reply %r" % line)

    def info(self, section):
        out = {}
        for line in self.cmd("INFO", section).splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v
        return out

    @property
    def url(self):
        return "redis://127.0.0.1:%d/0" % self.port

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------
# running one scenario
# --------------------------------------------------------------------------
class NotMeasured(Exception):
    pass


def run_json(cmd, timeout, env=None, cwd=None):
    """Run a scenario program; return its last JSON line."""
    log("$", " ".join(cmd))
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, env=env, cwd=cwd, text=True)
    except subprocess.TimeoutExpired:
        raise NotMeasured("timed out after %d s" % timeout)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        raise NotMeasured("failed: " + err[:200])
    return json.loads(lines[-1])


def sh(cmd, timeout=600, cwd=None, env=None):
    log("$", " ".join(cmd))
    p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        raise NotMeasured("`%s` failed: %s" % (
            " ".join(os.path.basename(c) for c in cmd[:3]),
            (p.stdout.strip().splitlines() or ["?"])[-1][:200]))
    return p.stdout


# --------------------------------------------------------------------------
# the language pieces: each returns a runner(scenario args...) or raises
# NotMeasured with the reason
# --------------------------------------------------------------------------
class Pieces:
    def __init__(self, build, quick):
        self.build = build
        self.quick = quick
        self.why = {}
        self.built = {}

    def hlbench(self):
        p = os.path.join(self.build, "bench", "hlbench")
        if not os.access(p, os.X_OK):
            raise NotMeasured("%s is not built" % p)
        return [p]

    def bench_venv(self):
        """venv with the peers: redis-py, python-redis-lock, limits,
        pottery, matplotlib."""
        venv = os.path.join(self.build, "venv-bench")
        py = os.path.join(venv, "bin", "python")
        if "venv" in self.why:
            raise NotMeasured(self.why["venv"])
        try:
            if not os.path.exists(py):
                sh([sys.executable, "-m", "venv", venv])
            # limits and pottery: the grid's peers (the rate limiter's,
            # the Bloom filter's)
            probe = subprocess.run(
                [py, "-c", "import redis, redis_lock, limits, pottery"],
                capture_output=True)
            if probe.returncode != 0:
                sh([py, "-m", "pip", "install", "-q", "redis",
                    "python-redis-lock", "matplotlib", "limits[redis]",
                    "pottery"], timeout=900)
        except NotMeasured as e:
            self.why["venv"] = str(e)
            raise
        return py

    def python_hilock(self):
        py = os.path.join(self.build, "venv-python", "bin", "python")
        if not os.access(py, os.X_OK):
            raise NotMeasured("the Python binding's venv %s is missing "
                              "(build it with the python mk target)" % py)
        probe = subprocess.run([py, "-c", "import hilock"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise NotMeasured("`import hilock` fails in venv-python: " +
                              (probe.stderr.strip().splitlines() or ["?"])[-1])
        return [py, os.path.join(BENCH, "py", "pybench.py")]

    def floorlib(self):
        """libhlfloor (bench/floor.c): the C floor the bindings load."""
        p = os.path.join(self.build, "bench", "libhlfloor.so")
        if not os.path.exists(p):
            raise NotMeasured("%s is not built" % p)
        return p

    def python_peer(self):
        return [self.bench_venv(), os.path.join(BENCH, "py", "pybench.py")]

    def lua(self):
        lua = shutil.which("lua5.4") or shutil.which("lua")
        if not lua:
            raise NotMeasured("no lua5.4 interpreter")
        sodir = None
        base = os.path.join(self.build, "bindings", "lua")
        for dp, _, files in os.walk(base):
            if any(f.endswith(".so") for f in files):
                sodir = dp
                break
        if not sodir:
            raise NotMeasured("the Lua module is not built under %s" % base)
        env = dict(os.environ)
        # and bench/lua: the Lua module hlfloor (the C floor, for paired)
        env["LUA_CPATH"] = sodir + "/?.so;" + os.path.join(
            self.build, "bench", "lua", "?.so") + ";;"
        env["LUA_PATH"] = ";".join([
            os.path.join(ROOT, "bindings", "lua", "?.lua"),
            os.path.join(ROOT, "bindings", "lua", "?", "init.lua"),
            os.path.join(sodir, "?.lua"), ";"])
        return [lua, os.path.join(BENCH, "lua", "luabench.lua")], env

    def go(self, what):
        """Build bench/go/<what> (redsync, hilock or grid) into
        BUILD/bench-go."""
        key = "go-" + what
        if key in self.why:
            raise NotMeasured(self.why[key])
        if key in self.built:
            return self.built[key]
        gobin = shutil.which("go")
        if not gobin:
            raise NotMeasured("no go toolchain")
        out = os.path.join(self.build, "bench-go", what)
        try:
            env = dict(os.environ)
            # As mk/go.mk builds the binding: the local toolchain, cgo on,
            # and the build dir in CGO_CFLAGS so Go's cache never mixes
            # libhilock builds of different build directories.
            env.update(GOTOOLCHAIN="local", CGO_ENABLED="1",
                       GOFLAGS="-buildvcs=false",
                       CGO_CFLAGS="-g -O2 -DHILOCK_GO_BUILD=" + self.build,
                       PKG_CONFIG_PATH=os.path.join(self.build, "pkgconfig"))
            # hilock_system: link this build's libhilock (pkg-config), the
            # library the other languages' benches measure too.
            sh([gobin, "build", "-tags", "hilock_system", "-o", out, "./" + what],
               cwd=os.path.join(BENCH, "go"), env=env, timeout=900)
        except NotMeasured as e:
            self.why[key] = str(e)
            raise
        self.built[key] = [out]
        return [out]

    def java(self):
        if "java" in self.why:
            raise NotMeasured(self.why["java"])
        if "java" in self.built:
            return self.built["java"]
        mvn, java = shutil.which("mvn"), shutil.which("java")
        if not mvn or not java:
            raise NotMeasured("no JDK or Maven")
        target = os.path.join(self.build, "bench-java")
        jar = os.path.join(target, "hilock-bench-redisson.jar")
        try:
            sh([mvn, "-q", "-B", "-f", os.path.join(BENCH, "java", "pom.xml"),
                "-DbuildDir=" + target, "package"], timeout=900)
        except NotMeasured as e:
            self.why["java"] = str(e)
            raise
        if not os.path.exists(jar):
            self.why["java"] = "maven did not produce " + jar
            raise NotMeasured(self.why["java"])
        self.built["java"] = [java, "-jar", jar]
        return self.built["java"]

    def prepare(self, want):
        """Build and install every piece up front, so no build runs in
        the middle of a measurement."""
        for group, fn in (("python", self.bench_venv),
                          ("go", lambda: self.go("hilock")),
                          ("go", lambda: self.go("redsync")),
                          ("redlock", lambda: self.go("hilock")),
                          ("redlock", lambda: self.go("redsync")),
                          ("grid", self.bench_venv),
                          ("grid", lambda: self.go("grid")),
                          ("grid", self.java),
                          ("java", self.java),
                          ("random", self.bench_venv),
                          ("random", lambda: self.go("redsync")),
                          ("random", self.java)):
            if want(group) or (group == "java" and (
                    want("failover") or want("fair") or want("rw") or
                    want("sem") or want("latch"))):
                try:
                    fn()
                except NotMeasured as e:
                    log("not measured:", group, "-", e)


# --------------------------------------------------------------------------
# (7) the topologies: Cluster, TLS, failover (deployments: bench/topo.py)
# --------------------------------------------------------------------------
FAILOVER_WAIT_MS = 200       # the loops' try-acquire wait
FAILOVER_LIMIT_S = 60        # a client not recovered by then: "> 60 s"
CLUSTER_LOCK = "bench:cluster"


def start_deployment(make, tries=3):
    """Start a deployment; a port taken meanwhile by another program on
    the machine only costs a new attempt."""
    for i in range(tries):
        d = make()
        try:
            return d.start()
        except (topo.TopoError, OSError, subprocess.SubprocessError) as e:
            d.destroy()
            if i == tries - 1:
                raise NotMeasured("deployment did not start: %s" % e)
            log("deployment did not start (%s); again" % e)


def guarded(fn):
    """fn, with a failure of the deployments or of their side channel
    (a server gone, an unexpected reply) reported as not measured rather
    than ending the whole run."""
    def run():
        try:
            return fn()
        except NotMeasured:
            raise
        except (topo.TopoError, OSError, RuntimeError, ValueError,
                KeyError, IndexError, TypeError,
                subprocess.SubprocessError) as e:
            raise NotMeasured("%s: %s" % (type(e).__name__, e))
    return run


def paired_rounds(T, rows, reps, attempt):
    """rows: [(key, command)]. REPS rounds, each running every row once
    (the load drifts: a round sees it alike for all rows); per row the
    run of the median ratio is kept, with every ratio."""
    runs = {key: [] for key, _ in rows}
    for _ in range(reps):
        for key, cmd in rows:
            r = attempt("topo/" + key, lambda: run_json(cmd, 120))
            if r:
                r["ratio"] = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
                runs[key].append(r)
    for key, rs in runs.items():
        if rs:
            rs.sort(key=lambda r: r["ratio"])
            r = dict(rs[len(rs) // 2])
            r["ratios"] = [round(x["ratio"], 3) for x in rs]
            T[key] = r


def run_cluster(R, hb, secs, reps, attempt):
    """Uncontended lock+unlock through the cluster router against the
    floor on the master owning the lock's slot, alternating in 100 ms
    slices (hlbench cluster-paired): with the WAIT the router adds after
    each script on a master with replicas (the default, as Redisson's
    checkLockSyncedSlaves), with wait_replicas 0, and through a
    single-server client of the same node (no router)."""
    T = R["topo"]

    def body():
        dep = start_deployment(topo.Cluster)
        try:
            owner = dep.master_of(CLUSTER_LOCK)
            T["cluster_owner"] = {"port": owner.port,
                                  "slot": dep.keyslot(CLUSTER_LOCK)}
            node = "127.0.0.1:%d" % owner.port
            paired_rounds(T, [
                (key, hb + [url, "cluster-paired", str(2 * secs), node,
                            CLUSTER_LOCK, w])
                for key, url, w in (
                    ("cluster/wait", dep.url, "-1"),
                    ("cluster/nowait", dep.url, "0"),
                    # the same node through a single-server client: what
                    # the router itself costs
                    ("cluster/single", "redis://" + node, "-1"))],
                reps, attempt)
        finally:
            dep.destroy()
    attempt("topo/cluster", guarded(body))


def run_tls(R, hb, secs, reps, attempt):
    """Uncontended lock+unlock over rediss:// against a floor of our own
    OpenSSL client on the same server (hlbench tls-paired), with
    OpenSSL's defaults and with read-ahead."""
    T = R["topo"]

    def body():
        dep = start_deployment(topo.TlsServer)
        try:
            paired_rounds(T, [
                (key, hb + [dep.url, "tls-paired", str(2 * secs), dep.ca] +
                 extra) for key, extra in (("tls/default", []),
                                           ("tls/readahead", ["readahead"]))],
                reps, attempt)
        finally:
            dep.destroy()
    attempt("topo/tls", guarded(body))


class Client:
    """A failover client (hlbench or the Redisson driver): its stdout
    lines read by a thread."""

    def __init__(self, lib, cmd, errlog):
        self.lib = lib
        self.lines = queue.Queue()
        self.errlog = errlog
        log("$", " ".join(cmd))
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=open(errlog, "w"), text=True,
                                  preexec_fn=topo._die_with_parent)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def wait_line(self, pred, deadline):
        while True:
            left = deadline - time.time()
            if left <= 0:
                return None
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            if pred(line):
                return line

    def why(self):
        try:
            tail = open(self.errlog).read().strip().splitlines()
        except OSError:
            tail = []
        return (tail or ["exit %s" % self.p.poll()])[-1][:200]

    def stop(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def failover_trial(kind, cmds, workdir):
    """One trial on a fresh deployment: both clients loop on their own
    locks (same slot in the cluster: the killed master's), then the
    master is killed with SIGKILL. Returns {lib: result or None, ...,
    "promoted_ms": when a surviving node said role master,
    "announced_ms": when the sentinels gave the new address (Sentinel)}.
    """
    dep = start_deployment(topo.Sentinel if kind == "sentinel"
                           else topo.Cluster)
    clients = []
    out = {}
    try:
        if kind == "cluster":
            victim = dep.master_of("{fo}")
            survivors = [dep.replica_of(victim)]
            prefix = "bench:{fo}:"
        else:
            victim = dep.master
            survivors = dep.data[1:]
            prefix = "bench:fo:"
        for lib, cmd in cmds:
            clients.append(Client(lib, cmd + [
                dep.url, "failover", prefix + lib, str(FAILOVER_WAIT_MS)],
                os.path.join(workdir, "%s-%s.err" % (kind, lib))))
        deadline = time.time() + 90
        for c in clients:
            if c.wait_line(lambda l: l == "ready", deadline) is None:
                out[c.lib] = None
                out["why_" + c.lib] = "not ready: " + c.why()
        # steady state: the JVM's JIT, both clients' pools
        time.sleep(2.0)
        os.kill(victim.pid, signal.SIGKILL)
        t_kill = time.monotonic_ns()
        t_wall = time.time()
        for c in clients:
            try:
                c.p.stdin.write("kill %d\n" % t_kill)
                c.p.stdin.flush()
            except OSError:
                pass
        # the server side, polled every 10 ms
        polls = [s.port for s in survivors]
        sentinels = [s.port for s in dep.sentinels] if kind == "sentinel" \
            else []
        promoted = announced = None
        while time.time() < t_wall + FAILOVER_LIMIT_S and (
                promoted is None or (sentinels and announced is None)):
            now = (time.monotonic_ns() - t_kill) / 1e6
            if promoted is None:
                for port in polls:
                    r = topo.try_cmd(port, "ROLE", timeout=0.5)
                    if r and r[0] == "master":
                        promoted = now
            if sentinels and announced is None:
                for port in sentinels:
                    r = topo.try_cmd(port, "SENTINEL",
                                     "GET-MASTER-ADDR-BY-NAME", dep.name,
                                     timeout=0.5)
                    if r and int(r[1]) != victim.port:
                        announced = now
                        break
            time.sleep(0.01)
        out["promoted_ms"] = promoted
        out["announced_ms"] = announced
        for c in clients:
            if c.lib in out:
                continue
            line = c.wait_line(lambda l: l.startswith("{"),
                               t_wall + FAILOVER_LIMIT_S)
            if line:
                out[c.lib] = json.loads(line)
            else:
                out[c.lib] = None
                out["why_" + c.lib] = "no acquisition within %d s of the " \
                    "kill (%s)" % (FAILOVER_LIMIT_S, c.why())
    finally:
        for c in clients:
            c.stop()
        dep.destroy()
    return out


def run_failover(R, pieces, hb, quick, attempt):
    T = R["topo"]
    trials = 2 if quick else 5
    cmds = [("hilock", hb)]
    try:
        cmds.append(("redisson", pieces.java()))
    except NotMeasured as e:
        R["notes"]["topo/failover/redisson"] = str(e)
    workdir = tempfile.mkdtemp(prefix="hilock-bench-failover-")
    try:
        for kind in ("sentinel", "cluster"):
            res = T["failover/" + kind] = {"trials": []}
            for i in range(trials):
                log("failover %s, trial %d of %d" % (kind, i + 1, trials))
                t = attempt("topo/failover/%s/%d" % (kind, i), guarded(
                    lambda: failover_trial(kind, cmds, workdir)))
                if t:
                    res["trials"].append(t)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------
# (9) the lock family: every kind uncontended, the fair lock under
# contention, readers of a read-write lock (groups kinds, fair, rw)
# --------------------------------------------------------------------------
FAMILY_GROUPS = ("kinds", "fair", "rw")
KINDS = ["reentrant", "fair", "read", "write", "spin", "fenced",
         "nonreentrant", "fair-nonreentrant"]
READERS = [1, 2, 4, 8, 16]
KIND_TARGET = 0.95           # as the reentrant lock's C row of (1)
FAMILY_MINUTES = 7           # the measurement time of kinds, fair, rw
FAMILY_BEGIN = "<!-- lock-family:begin -->"
FAMILY_END = "<!-- lock-family:end -->"


def run_family(R, pieces, hb, url, secs, csecs, workers, reps, want,
               attempt):
    """The groups kinds, fair and rw, into R["family"]."""
    F = R["family"] = {"started": time.time(), "load_start": os.getloadavg()}
    notes = R["notes"]

    def java_or_note(key):
        try:
            return pieces.java()
        except NotMeasured as e:
            notes[key] = str(e)
            return None

    # its own floor and round trip: this group may run without the rest
    F["floor"] = attempt("family:floor", lambda: run_json(
        hb + [url, "floor", str(secs)], 120))

    if want("kinds"):
        # REPS rounds over the kinds (the load drifts: a round sees it
        # alike for every kind); per kind the run of the median ratio.
        runs = {k: [] for k in KINDS}
        for _ in range(reps):
            for k in KINDS:
                r = attempt("family:kinds:" + k, lambda: run_json(
                    hb + [url, "kind-paired", str(2 * secs), k], 120))
                if r:
                    r["ratio"] = r["hilock_pairs_per_s"] / \
                        r["floor_pairs_per_s"]
                    runs[k].append(r)
        K = F["kinds"] = {}
        for k, rs in runs.items():
            if rs:
                rs.sort(key=lambda r: r["ratio"])
                r = dict(rs[len(rs) // 2])
                r["ratios"] = [round(x["ratio"], 3) for x in rs]
                K[k] = r

    if want("fair"):
        C = F["contend"] = []
        java = java_or_note("family:fair:java")
        for w in workers:
            rows = [("c/hilock", "fair", "processes", hb + [url]),
                    ("c/hilock", "reentrant", "processes", hb + [url]),
                    ("c/hilock", "fair", "threads", hb + [url])]
            if java:
                rows.append(("java/redisson", "fair", "threads",
                             java + [url]))
            for key, kind, mode, cmd in rows:
                r = attempt("family:fair:%s %s %s W=%d" % (key, kind, mode,
                                                          w),
                            lambda: run_counted(cmd + [
                                "contend", str(csecs), str(w), mode,
                                str(CS_US), "", kind], csecs + 120))
                if r:
                    r["key"] = key
                    C.append(r)

    if want("rw"):
        # REPS rounds over every reader count and library (the load
        # drifts); per row the run of the median throughput is kept.
        java = java_or_note("family:rw:java")
        rows = [("c/hilock", "processes", hb + [url]),
                ("c/hilock", "threads", hb + [url])]
        if java:
            rows.append(("java/redisson", "threads", java + [url]))
        runs = {}
        for _ in range(reps):
            for n in READERS:
                for key, mode, cmd in rows:
                    r = attempt("family:rw:%s %s R=%d" % (key, mode, n),
                                lambda: run_json(cmd + [
                                    "readers", str(secs), str(n), mode,
                                    str(CS_US)], secs + 120))
                    if r:
                        r["key"] = key
                        runs.setdefault((key, mode, n), []).append(r)
        D = F["readers"] = []
        for rs in runs.values():
            rs.sort(key=lambda r: r["acq_per_s"])
            r = dict(rs[len(rs) // 2])
            r["runs"] = [round(x["acq_per_s"]) for x in rs]
            D.append(r)
    F["load_end"] = os.getloadavg()
    F["duration_s"] = round(time.time() - F.pop("started"))


def measured_by(G, R, extra=""):
    """The line under a section's title: the command and run that measured
    it (G, the group's results; R, the run's), the machine's load at both
    ends, extra (a sentence, or ""), the core it ran."""
    return ("Measured by `%s` on %s UTC in %d s; the other sections keep the "
            "figures of their own run. Load average (1, 5, 15 min) %s at the "
            "start, %s at the end (above 2 on this 2-core machine, runnable "
            "threads waited for a core).%s%s\n" % (
                G.get("argv", R.get("argv", "?")),
                G.get("date", R.get("date", "?")), G.get("duration_s", 0),
                " / ".join("%.2f" % x for x in G.get("load_start", [])) or "?",
                " / ".join("%.2f" % x for x in G.get("load_end", [])) or "?",
                extra, (" Core: %s." % G["core"]) if G.get("core") else ""))


def rtt_sentence(rtt):
    return " One PING round trip (RTT) in this run: %s." % (
        "%.1f µs" % rtt if rtt else "not measured")


def family_rtt(R):
    F = R.get("family") or {}
    return ((F.get("floor") or R.get("floor") or {}).get("ping_rtt_us"))


def fair_bound_us(w, rtt, cs_us=CS_US):
    """The fair lock's wait p99 target: W x (section + 2 round trips)."""
    return w * (cs_us + 2 * rtt)


def render_family(R):
    """Section (9), between FAMILY_BEGIN and FAMILY_END: the page can take
    a run of these groups alone without losing the rest (see splice)."""
    o = [FAMILY_BEGIN]
    w = o.append
    F = R.get("family")
    notes = R["notes"]
    w("## (9) The lock family: kinds, the fair lock, readers\n")
    if not F:
        w("not measured: %s\n" % notes.get("c", "not run (groups kinds, "
                                                "fair, rw)"))
        w(FAMILY_END)
        return o
    rtt = family_rtt(R)
    w(measured_by(F, R, rtt_sentence(rtt)))

    # ---- kinds
    w("### Uncontended lock+unlock per kind, against its own floor\n")
    w("`hlbench URL kind-paired SECONDS KIND`: one thread, one lock "
      "(`bench:kind:<kind>`), lock then unlock at once through "
      "`hl_lock_new_kind()` (the watchdog, lease -1), against the floor "
      "of that kind: raw hiredis on one connection, EVALSHA of the kind's "
      "own acquire and release scripts (core/src/service/scripts.c "
      "compiled in) with the keys and arguments the core sends for it "
      "(core/src/prim/lock.c `acquire_script()`, `release_script()`: the "
      "fair lock's queue and timeout keys, stale-waiter timeout and wall "
      "clock; the read lock's timeout-key prefix; the write lock's "
      "`owner:write`; the fenced lock's token key; the spin lock's empty "
      "message). Floor and hilock alternate in 100 ms slices in one "
      "process after 300 ms of warm-up each; each kind runs %d time(s) in "
      "rounds over the kinds; each row shows the run of the median ratio, "
      "every run's in the last column. Target: >= %.2fx, as the reentrant "
      "lock's.\n" % (1 if R.get("quick") else REPS, KIND_TARGET))
    K = F.get("kinds")
    if K is None:
        w("not run (group kinds)\n")
    else:
        w("| kind | floor pairs/s | hilock pairs/s | hilock / floor | "
          "target | all ratios |\n|---|---:|---:|---:|---|---|")
        for k in KINDS:
            r = K.get(k)
            if not r:
                w("| %s | not measured: %s | | | | |" % (
                    k, notes.get("family:kinds:" + k, "not run")))
                continue
            x = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
            w("| %s | %s | %s | %.3fx | %s (>= %.2fx) | %s |" % (
                k, fmt(r["floor_pairs_per_s"]),
                fmt(r["hilock_pairs_per_s"]), x,
                "met" if x >= KIND_TARGET else "missed", KIND_TARGET,
                " ".join("%.2f" % y for y in r.get("ratios", []))))
        w("")

    # ---- fair contention
    w("### The fair lock under contention\n")
    w("`hlbench URL contend SECONDS W MODE 1000 \"\" KIND` and "
      "`RedissonBench URL contend SECONDS W threads 1000 \"\" fair`: as "
      "(2), W workers loop acquire (no deadline), sleep 1 ms, release, on "
      "one lock: hilock's fair lock (`HL_LOCK_FAIR`) and, for comparison, "
      "its reentrant lock (`RLock`), in W processes with a client each; "
      "the fair lock also as W threads of one client (the fair lock has "
      "no in-process gate: every waiter queues in Redis); Redisson %s's "
      "`getFairLock()` as W threads of one JVM (one process: 64 JVMs do "
      "not fit on this machine; for a fair lock each thread is its own "
      "waiter in Redis's queue, as a process is), after a second of "
      "warm-up. Ideal = 1 / (1 ms + RTT) = %s acquisitions/s. *p99 "
      "bound* is the target W x (1 ms + 2 RTT). %s. Targets (hilock "
      "fair, processes): throughput >= 0.8x ideal, wait p99 <= the "
      "bound.\n" % (
          R.get("versions", {}).get("redisson", ""),
          fmt(1e6 / (CS_US + rtt)) if rtt else "?", COUNTS_DOC))
    C = F.get("contend")
    ideal = 1e6 / (CS_US + rtt) if rtt else None
    if C is None:
        w("not run (group fair)\n")
    else:
        w("| library | lock | mode | W | acq/s | vs ideal | vs ideal, cs as "
          "slept | wait p50 | wait p99 | p99 bound | wait max | handoff "
          "p50 | handoff p99 | fair min/max | cs | scripts / acq | cmds / "
          "acq |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---:|---:|---:|---:|")
        order = {("c/hilock", "fair", "processes"): 0,
                 ("c/hilock", "reentrant", "processes"): 1,
                 ("java/redisson", "fair", "threads"): 2,
                 ("c/hilock", "fair", "threads"): 3}
        for r in sorted(C, key=lambda r: (order.get(
                (r["key"], r.get("kind"), r["mode"]), 9), r["workers"])):
            ideal_cs = 1e6 / (r["cs_mean_us"] + rtt) if rtt else None
            w("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s "
              "| %s | %d / %d | %s | %s |" % (
                  r["key"], r.get("kind"), r["mode"], r["workers"],
                  fmt(r["acq_per_s"]), ratio(r["acq_per_s"], ideal),
                  ratio(r["acq_per_s"], ideal_cs), us(r["wait_p50_us"]),
                  us(r["wait_p99_us"]),
                  us(fair_bound_us(r["workers"], rtt)) if rtt else "-",
                  us(r["wait_max_us"]), us(r["handoff_p50_us"]),
                  us(r["handoff_p99_us"]), r["fair_min"], r["fair_max"],
                  us(r["cs_mean_us"]), per_acq_cells(r)))
        bad = [r for r in C if r.get("violations")]
        if bad:
            w("\n**Mutual exclusion violated** in: " + ", ".join(
                "%s %s %s W=%d (%d)" % (r["key"], r.get("kind"), r["mode"],
                                        r["workers"], r["violations"])
                for r in bad))
        miss = sorted(k for k in notes if k.startswith("family:fair:"))
        if miss:
            w("\nNot measured:\n")
            for k in miss:
                w("- %s: %s" % (k[len("family:fair:"):], notes[k]))
        w("")

    # ---- readers
    w("### Readers of one read-write lock\n")
    w("`hlbench URL readers SECONDS R MODE 1000` and `RedissonBench URL "
      "readers SECONDS R threads 1000`: R readers loop read-acquire (no "
      "deadline, the watchdog), sleep 1 ms, release, on one read-write "
      "lock (hilock `HL_LOCK_READ`; Redisson `getReadWriteLock()"
      ".readLock()`, after a second of warm-up); no writer. *held at once*"
      ": counted in the readers (the mean by Little's law, time held / "
      "elapsed; the most at once) and seen in Redis (HLEN of the lock's "
      "hash less its `mode` field, sampled every 2 ms from another "
      "connection: a hold counts there from the acquire script to the "
      "release script, round trips included). *vs 1 reader*: read "
      "acquisitions/s against the same library and mode with one reader. "
      "Each row ran %d time(s) (%s s each), in rounds over every reader "
      "count and library; it shows the run of the median throughput, "
      "every run's in the last column. "
      "Target: 16 readers hold together and throughput grows with the "
      "readers.\n" % (1 if R.get("quick") else REPS,
                      "1" if R.get("quick") else "3"))
    D = F.get("readers")
    if D is None:
        w("not run (group rw)\n")
    else:
        w("| library | mode | readers | read acq/s | vs 1 reader | held at "
          "once: mean | most | in Redis: mean | most | wait p50 | wait p99 "
          "| wait max | fewest/most per reader | cs | all runs (acq/s) |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---:|---|")
        one = {(r["key"], r["mode"]): r for r in D if r["readers"] == 1}
        order = {("c/hilock", "processes"): 0, ("c/hilock", "threads"): 1,
                 ("java/redisson", "threads"): 2}
        for r in sorted(D, key=lambda r: (order.get((r["key"], r["mode"]),
                                                    9), r["readers"])):
            base = one.get((r["key"], r["mode"]))
            w("| %s | %s | %d | %s | %s | %.1f | %d | %.1f | %d | %s | %s "
              "| %s | %d / %d | %s | %s |" % (
                  r["key"], r["mode"], r["readers"], fmt(r["acq_per_s"]),
                  ratio(r["acq_per_s"], base and base["acq_per_s"]),
                  r["held_mean"], r["held_max"], r["hlen_mean"],
                  r["hlen_max"], us(r["wait_p50_us"]), us(r["wait_p99_us"]),
                  us(r["wait_max_us"]), r["fair_min"], r["fair_max"],
                  us(r["cs_mean_us"]),
                  " ".join(str(x) for x in r.get("runs", []))))
        miss = sorted(k for k in notes if k.startswith("family:rw:"))
        if miss:
            w("\nNot measured:\n")
            for k in miss:
                w("- %s: %s" % (k[len("family:rw:"):], notes[k]))
        w("")

    w("### Targets of the lock family\n")
    w(family_targets(R))
    w(FAMILY_END)
    return o


def family_targets(R):
    out = ["| target | measured | verdict |", "|---|---|---|"]
    F = R.get("family") or {}
    rtt = family_rtt(R)
    K = F.get("kinds")
    if K is not None:
        xs = [(k, K[k]["hilock_pairs_per_s"] / K[k]["floor_pairs_per_s"])
              for k in KINDS if k in K]
        low = [k for k, x in xs if x < KIND_TARGET]
        out.append("| every kind uncontended >= %.2fx its own floor | %s | "
                   "%s |" % (KIND_TARGET,
                             ", ".join("%s %.2fx" % kx for kx in xs) or
                             "not measured",
                             "not measured" if not xs else
                             "met" if not low else
                             "missed (%s)" % ", ".join(low)))
    C = F.get("contend")
    if C is not None and rtt:
        ideal = 1e6 / (CS_US + rtt)
        for key, kind, mode, label in (
                ("c/hilock", "fair", "processes", "hilock fair lock"),
                ("c/hilock", "reentrant", "processes",
                 "for comparison: hilock RLock"),
                ("java/redisson", "fair", "threads",
                 "for comparison: Redisson fair lock (threads)")):
            rs = sorted((r for r in C if r["key"] == key and
                         r.get("kind") == kind and r["mode"] == mode),
                        key=lambda r: r["workers"])
            if not rs:
                out.append("| %s: >= 0.8x ideal, p99 <= W x (1 ms + 2 RTT) "
                           "| not measured | - |" % label)
                continue
            xs = [r["acq_per_s"] / ideal for r in rs]
            ys = [r["acq_per_s"] * (r["cs_mean_us"] + rtt) / 1e6 for r in rs]
            out.append("| %s (W=%s): throughput >= 0.8x ideal | %s (cs as "
                       "slept: %s) | %s |" % (
                           label, ",".join(str(r["workers"]) for r in rs),
                           ", ".join("%.2fx" % x for x in xs),
                           ", ".join("%.2fx" % y for y in ys),
                           "met" if min(xs) >= 0.8 else
                           "met with cs as slept" if min(ys) >= 0.8 else
                           "missed"))
            ok = [r["wait_p99_us"] <= fair_bound_us(r["workers"], rtt)
                  for r in rs]
            ok_cs = [r["wait_p99_us"] <= fair_bound_us(
                r["workers"], rtt, r["cs_mean_us"]) for r in rs]
            out.append("| %s: wait p99 <= W x (1 ms + 2 RTT) | %s | %s |" % (
                label, ", ".join("W=%d: %s vs %s" % (
                    r["workers"], us(r["wait_p99_us"]),
                    us(fair_bound_us(r["workers"], rtt))) for r in rs),
                "met" if all(ok) else "met with cs as slept" if all(ok_cs)
                else "missed at W=%s" % ",".join(
                    str(r["workers"]) for r, k in zip(rs, ok_cs) if not k)))
    D = F.get("readers")
    if D is not None:
        for key, mode in (("c/hilock", "processes"), ("c/hilock", "threads"),
                          ("java/redisson", "threads")):
            rs = sorted((r for r in D if r["key"] == key and
                         r["mode"] == mode), key=lambda r: r["readers"])
            if not rs:
                continue
            grows = all(b["acq_per_s"] > a["acq_per_s"]
                        for a, b in zip(rs, rs[1:]))
            top = rs[-1]
            together = top["held_max"] >= top["readers"]
            out.append("| %s %s: %d readers hold together, throughput grows "
                       "with readers | %s; most held at once %d of %d "
                       "(mean %.1f) | %s |" % (
                           "hilock" if key == "c/hilock" else "Redisson",
                           mode, top["readers"],
                           " -> ".join("%s" % fmt(r["acq_per_s"])
                                       for r in rs) + " acq/s",
                           top["held_max"], top["readers"], top["held_mean"],
                           "met" if grows and together else
                           "missed (%s)" % " and ".join(
                               x for x, bad in (
                                   ("does not grow at every step", not grows),
                                   ("not all held at once", not together))
                               if bad)))
    return "\n".join(out) + "\n"


def splice_family(page, R):
    """The page with section (9) and the hand-written tail (Analysis,
    Reproduce) replaced by this run's; the other sections are kept as
    their own run wrote them."""
    fam = "\n".join(render_family(R)) + "\n"
    if FAMILY_BEGIN in page and FAMILY_END in page:
        a = page.index(FAMILY_BEGIN)
        b = page.index(FAMILY_END) + len(FAMILY_END)
        page = page[:a] + fam.rstrip("\n") + page[b:]
    elif "\n## Targets\n" in page:
        a = page.index("\n## Targets\n") + 1
        page = page[:a] + fam + "\n" + page[a:]
    else:
        page = page.rstrip("\n") + "\n\n" + fam
    return with_tail(page)


def with_tail(page):
    """The page with its hand-written tail (Analysis, Reproduce) made anew,
    and the lines pointing to the sections' own targets."""
    # sections other benches own after the tail (<!-- X:begin --> ...
    # <!-- X:end -->, e.g. bench/grid_iterate.py's): kept as they are
    kept = []
    cut = None
    if "\n## Analysis\n" in page:
        cut = page.index("\n## Analysis\n") + 1
    elif "\n## Reproduce\n" in page:
        cut = page.index("\n## Reproduce\n") + 1
    if cut is not None:
        tail = page[cut:]
        page = page[:cut]
        kept = [m.group(0) for m in re.finditer(
            r"<!-- ([a-z-]+):begin -->\n.*?<!-- \1:end -->\n", tail, flags=re.S)]
    page = page.rstrip("\n") + "\n"
    for line in (FAMILY_TARGETS_LINE, SYNC_TARGETS_LINE, GRID_TARGETS_LINE):
        if line.strip() not in page:
            page += line
    return page + "\n".join(render_tail()) + "\n" + "".join("\n" + k for k in kept)


# --------------------------------------------------------------------------
# (10) the synchronizers: semaphore, permit-expirable semaphore, latch
# (groups sem, latch)
# --------------------------------------------------------------------------
SYNC_GROUPS = ("sem", "latch")
SYNCS = [("semaphore", "semaphore: acquire(1) + release(1)"),
         ("expsem", "permit-expirable semaphore: acquire(1, 30 s lease) + "
                    "release(id)"),
         ("latch", "latch: try_set_count(1) + count_down()")]
SYNC_TARGET = 0.95           # as the lock's C row of (1) and the kinds of (9)
SEM_PERMITS = 4
SEM_WORKERS = [4, 16, 64]    # 4: as many workers as permits (no waits)
SEM_TARGET_WORKERS = (16, 64)
LATCH_WAITERS = 100
LATCH_PROCS = 4              # the processes mode: 4 x 25 threads
LATCH_COUNT = 4
LATCH_ROUNDS = 20
SYNC_MINUTES = 4             # the measurement time of sem, latch
SYNC_BEGIN = "<!-- synchronizers:begin -->"
SYNC_END = "<!-- synchronizers:end -->"


def run_sync(R, pieces, hb, url, secs, csecs, reps, quick, want, attempt):
    """The groups sem and latch, into R["sync"]."""
    S = R["sync"] = {"started": time.time(), "load_start": os.getloadavg()}
    notes = R["notes"]

    def java_or_note(key):
        try:
            return pieces.java()
        except NotMeasured as e:
            notes[key] = str(e)
            return None

    # its own floor and round trip: these groups may run without the rest
    S["floor"] = attempt("sync:floor", lambda: run_json(
        hb + [url, "floor", str(secs)], 120))

    if want("sem"):
        java = java_or_note("sync:uncontended:java")
        # REPS rounds over the synchronizers (the load drifts: a round
        # sees it alike for each); per row the run of the median ratio.
        # Redisson's semaphore between two runs of the semaphore's floor.
        runs = {k: [] for k, _ in SYNCS}
        runs["redisson"] = []
        for _ in range(reps):
            for k, _ in SYNCS:
                r = attempt("sync:uncontended:" + k, lambda: run_json(
                    hb + [url, "sync-paired", str(2 * secs), k], 120))
                if r:
                    r["ratio"] = r["hilock_pairs_per_s"] / \
                        r["floor_pairs_per_s"]
                    runs[k].append(r)
            if java:
                def redisson_floored():
                    def floor():
                        return run_json(hb + [url, "sync-floor", str(secs / 2),
                                              "semaphore"],
                                        120)["floor_pairs_per_s"]
                    f0 = floor()
                    j = run_json(java + [url, "sem-uncontended", str(secs)],
                                 300)
                    f1 = floor()
                    return {"floor_pairs_per_s": (f0 + f1) / 2,
                            "hilock_pairs_per_s": j["pairs_per_s"],
                            "ratio": j["pairs_per_s"] * 2 / (f0 + f1)}
                r = attempt("sync:uncontended:java", redisson_floored)
                if r:
                    runs["redisson"].append(r)
        U = S["uncontended"] = {}
        for k, rs in runs.items():
            if rs:
                rs.sort(key=lambda r: r["ratio"])
                r = dict(rs[len(rs) // 2])
                r["ratios"] = [round(x["ratio"], 3) for x in rs]
                U[k] = r

        # A semaphore of SEM_PERMITS under contention: REPS rounds over
        # every row (the load drifts); per row the run of the median
        # throughput, every run's in the last column.
        java = java_or_note("sync:sem:java")
        rows = [("c/hilock", "processes", hb + [url]),
                ("c/hilock", "threads", hb + [url])]
        if java:
            rows.append(("java/redisson", "threads", java + [url]))
        cruns = {}
        for _ in range(reps):
            for w in ([4, 16] if quick else SEM_WORKERS):
                for key, mode, cmd in rows:
                    r = attempt("sync:sem:%s %s W=%d" % (key, mode, w),
                                lambda: run_counted(cmd + [
                                    "sem-contend", str(csecs), str(w), mode,
                                    str(CS_US), str(SEM_PERMITS)],
                                    csecs + 120))
                    if r:
                        r["key"] = key
                        cruns.setdefault((key, mode, w), []).append(r)
        C = S["contend"] = []
        for rs in cruns.values():
            rs.sort(key=lambda r: r["acq_per_s"])
            r = dict(rs[len(rs) // 2])
            r["runs"] = [round(x["acq_per_s"]) for x in rs]
            C.append(r)

    if want("latch"):
        java = java_or_note("sync:latch:java")
        rounds = 5 if quick else LATCH_ROUNDS
        rows = [("c/hilock", "threads", hb + [
                    url, "latch-wake", str(rounds), str(LATCH_WAITERS), "0",
                    str(LATCH_COUNT)]),
                ("c/hilock", "processes", hb + [
                    url, "latch-wake", str(rounds), str(LATCH_WAITERS),
                    str(LATCH_PROCS), str(LATCH_COUNT)])]
        if java:
            rows.append(("java/redisson", "threads", java + [
                url, "latch-wake", str(rounds), str(LATCH_WAITERS),
                str(LATCH_COUNT)]))
        L = S["latch"] = []
        for key, mode, cmd in rows:
            r = attempt("sync:latch:%s %s" % (key, mode),
                        lambda: run_json(cmd, 600))
            if r:
                r["key"] = key
                L.append(r)
    S["load_end"] = os.getloadavg()
    S["duration_s"] = round(time.time() - S.pop("started"))


def sync_rtt(R):
    S = R.get("sync") or {}
    return (S.get("floor") or R.get("floor") or {}).get("ping_rtt_us")


def sem_ideal(rtt, cs_us=CS_US, permits=SEM_PERMITS):
    """Acquisitions/s of a perfect semaphore: every permit busy but for
    one round trip per hand-over."""
    return permits * 1e6 / (cs_us + rtt)


def pstat(v, p):
    """The p-quantile of a list (nearest rank), None when empty."""
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))]


def us_signed(x):
    if x is None:
        return "-"
    return ("-" + us(-x)) if x < 0 else us(x)


def render_sync(R):
    """Section (10), between SYNC_BEGIN and SYNC_END: the page can take a
    run of these groups alone without losing the rest (see splice)."""
    o = [SYNC_BEGIN]
    w = o.append
    S = R.get("sync")
    notes = R["notes"]
    w("## (10) Synchronizers: semaphore, permit-expirable semaphore, "
      "count-down latch\n")
    if not S:
        w("not measured: %s\n" % notes.get("c", "not run (groups sem, "
                                                "latch)"))
        w(SYNC_END)
        return o
    rtt = sync_rtt(R)
    w(measured_by(S, R, rtt_sentence(rtt)))

    # ---- uncontended
    w("### Uncontended, against the floor of its own scripts\n")
    w("`hlbench URL sync-paired SECONDS WHAT`: one thread, one object "
      "(`bench:sync:<what>`), one pair at a time through libhilock "
      "against the floor of that pair: raw hiredis on one connection, "
      "EVALSHA of the core's own scripts (core/src/service/scripts.c "
      "compiled in) with the keys and arguments the core sends "
      "(core/src/prim/semaphore.c `sem_call()`: the counter, the channel "
      "`redisson_sc:{name}`, a fresh request marker "
      "`hilock_request:{name}:<32 hex>`; ARGV n, the publish command, the "
      "marker's lifetime; expsem.c: the `{name}:timeout` zset, the wall "
      "clock, the lease's end and a 16-byte permit id; latch.c: "
      "`redisson_countdownlatch__channel__{name}` and a marker). Floor "
      "and hilock alternate in 100 ms slices in one process after 300 ms "
      "of warm-up each; each row runs %d time(s) in rounds over the rows; "
      "each row shows the run of the median ratio, every run's in the "
      "last column. Redisson %s's `getSemaphore()` (acquire(), release(), "
      "after a second of warm-up) runs in its own JVM between two runs of "
      "the semaphore's floor (`hlbench sync-floor`), against their mean. "
      "Target: >= %.2fx, as the lock's (the issue names no figure).\n" % (
          1 if R.get("quick") else REPS,
          R.get("versions", {}).get("redisson", ""), SYNC_TARGET))
    U = S.get("uncontended")
    if U is None:
        w("not run (group sem)\n")
    else:
        w("| pair | floor pairs/s | pairs/s | / floor | target | all ratios "
          "|\n|---|---:|---:|---:|---|---|")
        for k, label in SYNCS + [("redisson", "for comparison: Redisson "
                                              "`RSemaphore` acquire() + "
                                              "release()")]:
            r = U.get(k)
            if not r:
                w("| %s | not measured: %s | | | | |" % (
                    label, notes.get("sync:uncontended:" +
                                     ("java" if k == "redisson" else k),
                                     "not run")))
                continue
            x = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
            w("| %s | %s | %s | %.3fx | %s | %s |" % (
                label, fmt(r["floor_pairs_per_s"]),
                fmt(r["hilock_pairs_per_s"]), x,
                "-" if k == "redisson" else "%s (>= %.2fx)" % (
                    "met" if x >= SYNC_TARGET else "missed", SYNC_TARGET),
                " ".join("%.2f" % y for y in r.get("ratios", []))))
        w("")

    # ---- semaphore contention
    ideal = sem_ideal(rtt) if rtt else None
    w("### A semaphore of %d under contention\n" % SEM_PERMITS)
    w("`hlbench URL sem-contend SECONDS W MODE 1000 %d` and "
      "`RedissonBench URL sem-contend SECONDS W threads 1000 %d`: W "
      "workers loop acquire(1) (no deadline), sleep 1 ms, release(1) on "
      "one semaphore of %d permits: hilock in W processes with a client "
      "each, and as W threads of one client; Redisson %s's "
      "`getSemaphore()` as W threads of one JVM (one process: 64 JVMs do "
      "not fit on this machine), after a second of warm-up. Ideal = %d / "
      "(1 ms + RTT) = %s acquisitions/s; *cs as slept* divides by %d / "
      "(the section as really slept + RTT) instead. *held at once*: "
      "counted by the workers (the mean by Little's law, time held / "
      "elapsed, at most %d; the most at once, which must not exceed %d). "
      "%s (scripts: 2 at best, one to take and one to give back: the "
      "rest are attempts that found no permit); *Redis CPU*: the server's "
      "user + system CPU over the run (INFO cpu), in cores; *client CPU*: "
      "the workers' (the W processes', or the one process's with its "
      "threads; for Redisson the JVM's), in cores. "
      "Each row ran %d time(s) (%s s each), in rounds over every row; it "
      "shows the run of the median throughput, every run's in the last "
      "column. W = %d is the reference: as many workers as permits, so "
      "none waits for a permit, only for the round trips, which is what "
      "this machine allows. Targets (at W = %s): hilock >= 0.8x ideal "
      "(as (2)); wait p99 lower than Redisson's at the same W.\n" % (
          SEM_PERMITS, SEM_PERMITS, SEM_PERMITS,
          R.get("versions", {}).get("redisson", ""), SEM_PERMITS,
          fmt(ideal) if ideal else "?", SEM_PERMITS, SEM_PERMITS,
          SEM_PERMITS, COUNTS_DOC, 1 if R.get("quick") else REPS,
          "1.5" if R.get("quick") else "4", SEM_PERMITS,
          " and ".join(str(x) for x in SEM_TARGET_WORKERS)))
    C = S.get("contend")
    if C is None:
        w("not run (group sem)\n")
    else:
        w("| library | mode | W | acq/s | vs ideal | vs ideal, cs as slept | "
          "held at once: mean | most | wait p50 | wait p99 | wait max | "
          "fewest/most per worker | cs | scripts / acq | cmds / acq | Redis "
          "CPU | client CPU | all runs (acq/s) |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---:|---:|---:|---:|---|")
        order = {("c/hilock", "processes"): 0, ("c/hilock", "threads"): 1,
                 ("java/redisson", "threads"): 2}
        for r in sorted(C, key=lambda r: (r["workers"], order.get(
                (r["key"], r["mode"]), 9))):
            ideal_cs = sem_ideal(rtt, r["cs_mean_us"]) if rtt else None
            w("| %s | %s | %d | %s | %s | %s | %.2f | %d | %s | %s | %s | "
              "%d / %d | %s | %s | %s | %s | %s |" % (
                  r["key"], r["mode"], r["workers"], fmt(r["acq_per_s"]),
                  ratio(r["acq_per_s"], ideal),
                  ratio(r["acq_per_s"], ideal_cs), r["held_mean"],
                  r["held_max"], us(r["wait_p50_us"]), us(r["wait_p99_us"]),
                  us(r["wait_max_us"]), r["fair_min"], r["fair_max"],
                  us(r["cs_mean_us"]), per_acq_cells(r),
                  "%.2f" % r["redis_cpu"] if "redis_cpu" in r else "-",
                  "%.2f" % r["client_cpu"] if "client_cpu" in r else "-",
                  " ".join(str(x) for x in r.get("runs", []))))
        bad = [r for r in C if r.get("violations") or
               r.get("available_after") != SEM_PERMITS]
        if bad:
            w("\n**More holders than permits, or permits lost** in: " +
              ", ".join("%s %s W=%d (%d over, %s left)" % (
                  r["key"], r["mode"], r["workers"], r["violations"],
                  r.get("available_after")) for r in bad))
        miss = sorted(k for k in notes if k.startswith("sync:sem:"))
        if miss:
            w("\nNot measured:\n")
            for k in miss:
                w("- %s: %s" % (k[len("sync:sem:"):], notes[k]))
        w("")

    # ---- latch
    w("### A latch: from the last count-down to the last of %d waiters "
      "woken\n" % LATCH_WAITERS)
    w("`hlbench URL latch-wake ROUNDS %d PROCS %d` and `RedissonBench URL "
      "latch-wake ROUNDS %d %d`: %d waiters wait (no deadline but 60 s) on "
      "one latch of %d: hilock as threads of the client that counts down "
      "(PROCS 0), or as %d processes of %d threads with a client each "
      "(the counting client a fifth); Redisson %s's `getCountDownLatch()` "
      "as threads of one JVM, counted down through the same client. Each "
      "round sets the count, waits until every waiter is inside its wait "
      "call and the latch's channel has its subscribers (`PUBSUB NUMSUB`), "
      "then 50 ms more, and counts down %d times from one thread; the "
      "clock starts when the last `count_down` returns (CLOCK_MONOTONIC, "
      "shared by the processes). *last*, *median* and *first* waiter: "
      "when the waiter's wait call returned; *raw subscriber*: when a "
      "plain hiredis connection subscribed to the channel in the counting "
      "process read the \"0\" (the floor of a wake-up; negative: before "
      "the count-down's reply was read). *GETs / wake*: the reads of the "
      "count Redis served from the last count-down until every waiter "
      "returned (INFO commandstats), per round. "
      "p50 and max over %d rounds after "
      "one to warm up. The issue names no target: hilock's last waiter "
      "woken sooner than Redisson's.\n" % (
          LATCH_WAITERS, LATCH_COUNT, LATCH_WAITERS, LATCH_COUNT,
          LATCH_WAITERS, LATCH_COUNT, LATCH_PROCS,
          LATCH_WAITERS // LATCH_PROCS,
          R.get("versions", {}).get("redisson", ""), LATCH_COUNT,
          5 if R.get("quick") else LATCH_ROUNDS))
    L = S.get("latch")
    if L is None:
        w("not run (group latch)\n")
    else:
        w("| library | waiters | last woken p50 | last max | median waiter "
          "p50 | first waiter p50 | raw subscriber p50 | count_down call "
          "p50 | GETs / wake | failed waits |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in L:
            where = ("%d threads of the counting client" % r["waiters"]
                     if r["key"] == "c/hilock" and r["mode"] == "threads"
                     else "%d processes x %d threads" % (
                         r["procs"], r["waiters"] // r["procs"])
                     if r["mode"] == "processes"
                     else "%d threads, one JVM" % r["waiters"])
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
                r["key"], where, us_signed(pstat(r["last_us"], 0.5)),
                us_signed(max(r["last_us"]) if r["last_us"] else None),
                us_signed(pstat(r["median_us"], 0.5)),
                us_signed(pstat(r["first_us"], 0.5)),
                us_signed(pstat(r.get("raw_us", []), 0.5)),
                us_signed(pstat(r["countdown_us"], 0.5)),
                "%.0f" % r["gets_per_round"] if "gets_per_round" in r
                else "-", r["failed"]))
        miss = sorted(k for k in notes if k.startswith("sync:latch:"))
        if miss:
            w("\nNot measured:\n")
            for k in miss:
                w("- %s: %s" % (k[len("sync:latch:"):], notes[k]))
        w("")

    w("### Targets of the synchronizers\n")
    w(sync_targets(R))
    w(SYNC_END)
    return o


def sync_targets(R):
    out = ["| target | measured | verdict |", "|---|---|---|"]
    S = R.get("sync") or {}
    rtt = sync_rtt(R)
    U = S.get("uncontended")
    if U is not None:
        for k, label in SYNCS:
            r = U.get(k)
            if not r:
                out.append("| %s >= %.2fx its floor | not measured | - |" % (
                    label, SYNC_TARGET))
                continue
            x = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
            out.append("| %s >= %.2fx its floor | %.2fx | %s |" % (
                label, SYNC_TARGET, x,
                "met" if x >= SYNC_TARGET else "missed"))
    C = S.get("contend")
    if C is not None and rtt:
        ideal = sem_ideal(rtt)
        by = {(r["key"], r["mode"], r["workers"]): r for r in C}
        for mode in ("processes", "threads"):
            rs = sorted((r for r in C if r["key"] == "c/hilock" and
                         r["mode"] == mode and
                         r["workers"] in SEM_TARGET_WORKERS),
                        key=lambda r: r["workers"])
            if not rs:
                continue
            xs = [r["acq_per_s"] / ideal for r in rs]
            ys = [r["acq_per_s"] / sem_ideal(rtt, r["cs_mean_us"])
                  for r in rs]
            out.append("| semaphore of %d, hilock %s (W=%s): >= 0.8x "
                       "ideal %d / (1 ms + RTT) | %s (cs as slept: %s) | %s "
                       "|" % (SEM_PERMITS, mode,
                              ",".join(str(r["workers"]) for r in rs),
                              SEM_PERMITS,
                              ", ".join("%.2fx" % x for x in xs),
                              ", ".join("%.2fx" % y for y in ys),
                              "met" if min(xs) >= 0.8 else
                              "met with cs as slept" if min(ys) >= 0.8
                              else "missed"))
            cmp_ = []
            for r in rs:
                j = by.get(("java/redisson", "threads", r["workers"]))
                if j:
                    cmp_.append((r, j))
            if cmp_:
                out.append("| semaphore of %d, hilock %s: wait p99 lower "
                           "than Redisson's (threads) | %s | %s |" % (
                               SEM_PERMITS, mode, ", ".join(
                                   "W=%d: %s vs %s" % (
                                       r["workers"], us(r["wait_p99_us"]),
                                       us(j["wait_p99_us"]))
                                   for r, j in cmp_),
                               "met" if all(r["wait_p99_us"] <
                                            j["wait_p99_us"]
                                            for r, j in cmp_) else
                               "missed at W=%s" % ",".join(
                                   str(r["workers"]) for r, j in cmp_
                                   if r["wait_p99_us"] >= j["wait_p99_us"])))
    L = S.get("latch")
    if L is not None:
        j = [r for r in L if r["key"] == "java/redisson"]
        for r in L:
            if r["key"] != "c/hilock":
                continue
            a = pstat(r["last_us"], 0.5)
            b = pstat(j[0]["last_us"], 0.5) if j else None
            out.append("| latch, %d waiters (hilock %s): last woken sooner "
                       "than Redisson's (p50) | %s vs %s | %s |" % (
                           r["waiters"], r["mode"], us_signed(a),
                           us_signed(b),
                           "not measured" if b is None or a is None else
                           "met" if a < b else "missed"))
    return "\n".join(out) + "\n"


def splice_block(page, begin, end, block, after=None):
    """The page with the block between begin and end replaced by block
    (which carries the markers); without them, the block goes after the
    marker after (when the page has it), else before "## Targets", else
    at the end."""
    block = block.rstrip("\n")
    if begin in page and end in page:
        a = page.index(begin)
        b = page.index(end) + len(end)
        return page[:a] + block + page[b:]
    if after and after in page:
        a = page.index(after) + len(after)
        return page[:a] + "\n\n" + block + page[a:]
    if "\n## Targets\n" in page:
        a = page.index("\n## Targets\n") + 1
        return page[:a] + block + "\n\n" + page[a:]
    return page.rstrip("\n") + "\n\n" + block + "\n"


def splice_sync(page, R):
    """The page with section (10) and the hand-written tail (Analysis,
    Reproduce) replaced by this run's; the other sections are kept as
    their own run wrote them."""
    page = splice_block(page, SYNC_BEGIN, SYNC_END,
                        "\n".join(render_sync(R)), after=FAMILY_END)
    return with_tail(page)


# --------------------------------------------------------------------------
# Redis-side counters per acquisition: every contention row runs in a
# measured window (HLBENCH_WINDOW: the programs stop at "#window start"
# and "#window end"), and run.py reads INFO commandstats at both ends.
# The rows run one at a time against this run's own redis-server, which
# no other program uses, so no two rows share a count.
# --------------------------------------------------------------------------
COUNTED = {"redis": None}    # main() sets it: the Redis object of the run
SCRIPT_CMDS = ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall",
               "fcall_ro")
# left out of cmds/acq: connection and pub/sub bookkeeping, run.py's and
# the programs' own INFO, and PUBLISH (a release's wake-up message, sent
# from inside the scripts: Redis counts the commands a script runs too)
NOT_COUNTED = ("info", "ping", "subscribe", "unsubscribe", "psubscribe",
               "punsubscribe", "ssubscribe", "sunsubscribe", "publish",
               "client", "hello", "select", "auth", "quit", "reset",
               "command", "script", "readonly", "readwrite", "echo")
COUNTS_DOC = (
    "*scripts / acq*: the script calls Redis ran per acquisition "
    "(INFO commandstats: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, "
    "FCALL_RO), from the start of the measured run to the end of its "
    "last worker (set-up, warm-up and teardown outside it), divided by "
    "the acquisitions made in it; *cmds / acq*: every command Redis "
    "counted in that window per acquisition, those the scripts ran "
    "inside Redis included (Redis counts a script's redis.call()s as "
    "commands), but not %s (nor their subcommands, e.g. CLIENT SETINFO)"
    % ", ".join(
        c.upper() for c in NOT_COUNTED))


def commandstats(redis):
    """{command: calls} of INFO commandstats."""
    out = {}
    for k, v in redis.info("commandstats").items():
        if k.startswith("cmdstat_"):
            m = re.search(r"calls=(\d+)", v)
            if m:
                out[k[len("cmdstat_"):]] = int(m.group(1))
    return out


def run_windowed(cmds, timeout, env=None, cwd=None):
    """Run the programs cmds together (each a command line) with
    HLBENCH_WINDOW set: once every one has printed "#window start" the
    counters are read and all are let go; once every one has printed
    "#window end" they are read again and all are let finish. Returns
    ([each program's last JSON line], {command: calls in the window})."""
    redis = COUNTED["redis"]
    env = dict(env if env is not None else os.environ)
    env["HLBENCH_WINDOW"] = "1"
    for c in cmds:
        log("$", " ".join(c))
    lines = queue.Queue()
    procs, errs, outs = [], [], [[] for _ in cmds]
    deadline = time.time() + timeout

    def reader(i, p):
        for line in p.stdout:
            lines.put((i, line.rstrip("\n")))
        lines.put((i, None))

    try:
        for i, c in enumerate(cmds):
            err = tempfile.TemporaryFile(mode="w+")
            errs.append(err)
            p = subprocess.Popen(c, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=err,
                                 env=env, cwd=cwd, text=True)
            procs.append(p)
            threading.Thread(target=reader, args=(i, p),
                             daemon=True).start()

        def why(i):
            errs[i].seek(0)
            err = (errs[i].read().strip().splitlines() or
                   ["exit %s" % procs[i].poll()])[-1]
            if procs[i].poll() == 0:
                err = "ended without its window marks (no HLBENCH_WINDOW " \
                      "support in this build?)"
            return "failed: " + err[:200]

        def until(mark):
            seen = set()
            while len(seen) < len(cmds):
                left = deadline - time.time()
                if left <= 0:
                    raise NotMeasured("timed out after %d s" % timeout)
                try:
                    i, line = lines.get(timeout=min(left, 1.0))
                except queue.Empty:
                    continue
                if line is None:
                    procs[i].wait()
                    if mark:
                        raise NotMeasured(why(i))
                    seen.add(i)
                elif mark and line == "#window " + mark:
                    seen.add(i)
                elif line.startswith("{"):
                    outs[i].append(line)

        def go():
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()

        until("start")
        c0 = commandstats(redis) if redis else {}
        go()
        until("end")
        c1 = commandstats(redis) if redis else {}
        go()
        until(None)
        res = []
        for i, p in enumerate(procs):
            if p.returncode != 0 or not outs[i]:
                raise NotMeasured(why(i))
            res.append(json.loads(outs[i][-1]))
        delta = {k: v - c0.get(k, 0) for k, v in c1.items()
                 if v - c0.get(k, 0) > 0}
        if "info" in delta:      # run.py's own second INFO
            delta["info"] -= 1
        return res, delta
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for e in errs:
            e.close()


def per_acq(res, delta, acquisitions):
    """res with the Redis-side counts of its window per acquisition."""
    if COUNTED["redis"] is None:
        return res
    res["acquisitions"] = acquisitions
    res["cmdstats"] = delta
    if acquisitions:
        scripts = sum(delta.get(c, 0) for c in SCRIPT_CMDS)
        # Redis 7 counts subcommands apart: "client|setinfo"
        cmds = sum(v for k, v in delta.items()
                   if k.split("|")[0] not in NOT_COUNTED)
        if "scripts_per_acq" in res:
            res["scripts_per_acq_own"] = res["scripts_per_acq"]
        res["scripts_per_acq"] = scripts / acquisitions
        res["cmds_per_acq"] = cmds / acquisitions
    return res


def run_counted(cmd, timeout, env=None, cwd=None):
    """One contention program in a measured window: its JSON with
    scripts_per_acq and cmds_per_acq (it must print "acquisitions")."""
    (res,), delta = run_windowed([cmd], timeout, env=env, cwd=cwd)
    return per_acq(res, delta, res.get("acquisitions"))


def per_acq_cells(r):
    return "%s | %s" % (
        "%.1f" % r["scripts_per_acq"] if "scripts_per_acq" in r else "-",
        "%.1f" % r["cmds_per_acq"] if "cmds_per_acq" in r else "-")


# --------------------------------------------------------------------------
# (16) random holds across processes (group random; issue 19's first
# target): W processes, a client each, timed acquires, random holds
# --------------------------------------------------------------------------
RANDOM_GROUPS = ("random",)
RANDOM_WORKERS = 8
RANDOM_SECONDS = 30.0        # --quick: RANDOM_QUICK_SECONDS
RANDOM_QUICK_SECONDS = 6.0
RANDOM_MAX_HOLD_MS = 600     # uniform in 0..600 ms: a mean of 300 ms
RANDOM_WAIT_MS = 20000
RANDOM_ROUNDS_TARGET = 4
RANDOM_MINUTES = 5           # 6 libraries x (30 s + the last waits)
RANDOM_BEGIN = "<!-- random-holds:begin -->"
RANDOM_END = "<!-- random-holds:end -->"
RANDOM_LIBS = [
    ("c/hilock", "W processes of hlbench (fork), `hl_lock_try_acquire(wait "
                 "20 s, watchdog)`"),
    ("python/hilock", "W processes of pybench, `Client(url).lock(name)"
                      ".acquire(timeout=20)`"),
    ("python/redispy", "W processes, redis-py `Lock.acquire(blocking_timeout"
                       "=20)` (polls every 0.1 s)"),
    ("python/pyredislock", "W processes, python-redis-lock `Lock(expire=30, "
                           "auto_renewal=True).acquire(timeout=20)`"),
    ("go/redsync", "W processes of one goroutine each, redsync `Mutex."
                   "LockContext` with a 20 s deadline (its default retry "
                   "delay)"),
    ("java/redisson", "W threads of one JVM (one client), Redisson "
                      "`RLock.tryLock(20, SECONDS)` (the watchdog)"),
]


def random_cmds(pieces, hb, url, lib, secs, w, hold_ms, wait_ms):
    """The command lines of one library's row (raises NotMeasured)."""
    a = [str(secs), str(hold_ms), str(wait_ms)]
    if lib == "c/hilock":
        if not hb:
            raise NotMeasured("hlbench is not built")
        return [hb + [url, "random", str(secs), str(w), str(hold_ms),
                      str(wait_ms)]]
    if lib == "python/hilock":
        return [pieces.python_hilock() + [url, "hilock", "random"] + a] * w
    if lib in ("python/redispy", "python/pyredislock"):
        return [pieces.python_peer() + [url, lib.split("/")[1], "random"] +
                a] * w
    if lib == "go/redsync":
        return [pieces.go("redsync") + [url, "random", str(secs), "1",
                                        str(hold_ms), str(wait_ms)]] * w
    if lib == "java/redisson":
        return [pieces.java() + [url, "random", str(secs), str(w),
                                 str(hold_ms), str(wait_ms)]]
    raise NotMeasured("unknown library " + lib)


def merge_random(results, delta, lib, w):
    """One row from its programs' per-worker waits and holds."""
    workers = [pw for r in results for pw in r["per_worker"]]
    waits = sorted(x for pw in workers for x in pw["waits_us"])
    holds = sorted(tuple(h) for pw in workers for h in pw["holds_us"])
    acq = sum(pw["acq"] for pw in workers)
    # mutual exclusion across every process: each hold (wall clock, read
    # after acquire returned and before release was called) starts after
    # every earlier one ended
    overlaps, last_end = 0, None
    for a, b in holds:
        if last_end is not None and a < last_end:
            overlaps += 1
        last_end = b if last_end is None else max(last_end, b)
    hold_mean = (sum(b - a for a, b in holds) / len(holds)) if holds else 0
    r = {"key": lib, "workers": len(workers), "acquisitions": acq,
         "timeouts": sum(pw["timeouts"] for pw in workers),
         "wait_max_us": waits[-1] if waits else 0,
         "wait_p50_us": pstat(waits, 0.5) or 0,
         "wait_p99_us": pstat(waits, 0.99) or 0,
         "fair_min": min(pw["acq"] for pw in workers),
         "fair_max": max(pw["acq"] for pw in workers),
         "hold_mean_us": hold_mean,
         "elapsed_s": max(x.get("elapsed_s", 0) for x in results),
         "violations": overlaps + sum(x.get("violations", 0)
                                      for x in results),
         # W programs of one worker each: processes, whatever each ran
         "mode": "processes" if len(results) > 1 else
         results[0].get("mode")}
    # a round: each of the others holding once, at the mean hold
    r["rounds"] = r["wait_max_us"] / ((len(workers) - 1) * hold_mean) \
        if hold_mean and len(workers) > 1 else None
    return per_acq(r, delta, acq)


def run_random(R, pieces, hb, url, secs, w, hold_ms, wait_ms, attempt):
    """Group random, into R["random"]."""
    Q = R["random"] = {"started": time.time(), "load_start": os.getloadavg(),
                       "seconds": secs, "workers": w, "max_hold_ms": hold_ms,
                       "wait_ms": wait_ms, "rows": []}
    for lib, _ in RANDOM_LIBS:
        def row(lib=lib):
            cmds = random_cmds(pieces, hb, url, lib, secs, w, hold_ms,
                               wait_ms)
            res, delta = run_windowed(cmds, secs + 2 * wait_ms / 1000 + 180)
            return merge_random(res, delta, lib, w)
        r = attempt("random:" + lib, row)
        if r:
            Q["rows"].append(r)
    Q["load_end"] = os.getloadavg()
    Q["duration_s"] = round(time.time() - Q.pop("started"))


def render_random(R):
    """Section (16), between RANDOM_BEGIN and RANDOM_END."""
    o = [RANDOM_BEGIN]
    w = o.append
    Q = R.get("random")
    notes = R["notes"]
    w("## (16) Random holds across processes\n")
    if not Q:
        w("not measured: not run (group random)\n")
        w(RANDOM_END)
        return o
    W, hold = Q["workers"], Q["max_hold_ms"]
    w(measured_by(Q, R))
    w("W = %d workers, one client each, loop for %g s: acquire with a wait "
      "of %g s, hold a time drawn uniformly in 0..%d ms (mean %d ms), "
      "release; an acquire begun before the end is waited for. Each "
      "library as its documentation shows it:\n" % (
          W, Q["seconds"], Q["wait_ms"] / 1000, hold, hold // 2))
    for lib, how in RANDOM_LIBS:
        w("- %s: %s" % (lib, how.replace("W ", "%d " % W, 1)))
    w("\n*wait*: the time in the acquire call, timed-out calls included "
      "(at the %g s wait); *timeouts*: acquires that gave up; *longest "
      "wait, rounds*: the longest wait over one round of the others' "
      "holds, (W - 1) x the mean hold as held (*mean hold*); *fewest / "
      "most*: acquisitions of one worker. Mutual exclusion is checked "
      "across the processes from the hold intervals (wall clock). %s. "
      "Target (issue 19): no waiter waits more than %d rounds.\n" % (
          Q["wait_ms"] / 1000, COUNTS_DOC, RANDOM_ROUNDS_TARGET))
    # a run shorter than the target's rounds (and one more) cannot miss
    # it: no verdict then
    short = Q["seconds"] * 1000 < (RANDOM_ROUNDS_TARGET + 1) * (W - 1) * \
        hold / 2
    if short:
        w("This run lasted %g s, less than %d rounds at the nominal mean "
          "hold: the longest wait cannot exceed the target, so there is no "
          "verdict.\n" % (Q["seconds"], RANDOM_ROUNDS_TARGET + 1))
    w("| library | mode | acquisitions | timeouts | longest wait | rounds "
      "| wait p50 | wait p99 | fewest / most | mean hold | scripts / acq "
      "| cmds / acq | target |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = {r["key"]: r for r in Q["rows"]}
    for lib, _ in RANDOM_LIBS:
        r = rows.get(lib)
        if not r:
            w("| %s | not measured: %s | | | | | | | | | | | |" % (
                lib, notes.get("random:" + lib, "not run")))
            continue
        rounds = r.get("rounds")
        w("| %s | %s | %d | %d | %s | %s | %s | %s | %d / %d | %s | %s | %s "
          "|" % (
              lib, "%d %s" % (r["workers"], r["mode"]), r["acquisitions"],
              r["timeouts"], us(r["wait_max_us"]),
              "%.1f" % rounds if rounds is not None else "-",
              us(r["wait_p50_us"]), us(r["wait_p99_us"]), r["fair_min"],
              r["fair_max"], us(r["hold_mean_us"]), per_acq_cells(r),
              "-" if rounds is None or short else
              "met" if rounds <= RANDOM_ROUNDS_TARGET and not r["timeouts"]
              else "missed"))
    bad = [r for r in Q["rows"] if r.get("violations")]
    if bad:
        w("\n**Mutual exclusion violated** in: " + ", ".join(
            "%s (%d)" % (r["key"], r["violations"]) for r in bad))
    w("")
    w(RANDOM_END)
    return o


def splice_random(page, R):
    """The page with section (16) replaced, or appended at the end."""
    block = "\n".join(render_random(R)).rstrip("\n")
    if RANDOM_BEGIN in page and RANDOM_END in page:
        a = page.index(RANDOM_BEGIN)
        b = page.index(RANDOM_END) + len(RANDOM_END)
        return page[:a] + block + page[b:]
    return page.rstrip("\n") + "\n\n" + block + "\n"


# --------------------------------------------------------------------------
# (11) the data grid: each operation against its floor, beside the peers
# (group grid)
# --------------------------------------------------------------------------
GRID_GROUPS = ("grid",)
GRID_BEGIN = "<!-- grid:begin -->"
GRID_END = "<!-- grid:end -->"
GRID_C_TARGET = 0.95
GRID_BINDING_TARGET = 0.9
GRID_MINUTES = 10            # the measurement time of grid
GRID_VALUE = "b:" + "v" * 16
GRID_INIT_BLOOM = ("try_init", ["i:100000", "f:0.01"])
GRID_INIT_RATE = ("try_set_rate", ["m:overall", "i:1000000", "s:1"])
GRID_BATCH = 100
GRID_BATCH_VALUES = ["b:v%03d" % i for i in range(GRID_BATCH)]
# The operations: (kind, op, set-ups, args, peers). Arguments as hlbench's
# grid scenarios take them (b:TEXT bytes, i:N, f:X, m:MODE a rate
# limiter's mode by name, s:SECONDS a duration, - left out); the
# set-ups are operations of the same object run first (a bucket's set
# before its get). hilock's rows appear once core/grid/<kind>.kind has the
# operation; until then its peers run alone. A kind that lands plugs in
# here with a line per operation, and a line per peer in
# bench/py/pybench.py (GRID_PEERS), bench/go/grid (ops) and
# RedissonBench.gridOp. Peers: redispy, limits, pottery (Python),
# goredis, redis_rate (Go), redisson (Java).
GRID_OPS = [
    ("bucket", "get", [("set", [GRID_VALUE, "-"])], [],
     ("redispy", "goredis", "redisson")),
    ("bucket", "set", [], [GRID_VALUE, "-"],
     ("redispy", "goredis", "redisson")),
    ("bucket", "compare_and_set", [("set", [GRID_VALUE, "-"])],
     [GRID_VALUE, GRID_VALUE], ("redispy", "goredis", "redisson")),
    ("atomic_long", "get", [("set", ["i:42"])], [],
     ("redispy", "goredis", "redisson")),
    ("atomic_long", "increment_and_get", [], [],
     ("redispy", "goredis", "redisson")),
    ("atomic_long", "compare_and_set", [("set", ["i:42"])], ["i:42", "i:42"],
     ("redispy", "goredis", "redisson")),
    ("atomic_double", "add_and_get", [], ["f:1.5"],
     ("redispy", "goredis", "redisson")),
    # the arguments as core/grid/<kind>.kind has them: bit_set set
    # index:i64 value:bool=1, get index:i64; bloom_filter try_init
    # expected_insertions:i64 false_probability:f64, add and contains
    # value:bytes; rate_limiter try_set_rate mode rate interval (the
    # bindings' modes by name and seconds), try_acquire permits:i64=1
    # timeout:i64=0 (one attempt)
    ("bit_set", "set", [], ["i:1000"], ("redisson",)),
    ("bit_set", "get", [("set", ["i:1000"])], ["i:1000"], ("redisson",)),
    ("bloom_filter", "add", [GRID_INIT_BLOOM], [GRID_VALUE],
     ("pottery", "redisson")),
    ("bloom_filter", "contains", [GRID_INIT_BLOOM, ("add", [GRID_VALUE])],
     [GRID_VALUE], ("pottery", "redisson")),
    ("rate_limiter", "try_acquire", [GRID_INIT_RATE], [],
     ("limits", "redis_rate", "redisson")),
    # many values in one round trip (the issue: the Bloom filter's adds and
    # checks must scale with the batch): add_all and contains_all take
    # values:bytes* (a list: the values as arguments of their own).
    # Compare ops/s x GRID_BATCH with the single add's ops/s.
    ("bloom_filter", "add_all", [GRID_INIT_BLOOM], GRID_BATCH_VALUES,
     ("redisson",)),
    ("bloom_filter", "contains_all", [GRID_INIT_BLOOM, ("add_all",
                                                         GRID_BATCH_VALUES)],
     GRID_BATCH_VALUES, ("redisson",)),
]
GRID_LANGS = ("c", "python", "lua", "go")
GRID_PEER_NAMES = {"redispy": "redis-py (raw)", "goredis": "go-redis (raw)",
                   "redisson": "Redisson", "limits": "limits (Python)",
                   "pottery": "pottery (Python)",
                   "redis_rate": "redis_rate (Go)"}


def grid_specs():
    """{kind: set of ops} of core/grid/*.kind: what this hilock has."""
    have = {}
    d = os.path.join(ROOT, "core", "grid")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not f.endswith(".kind"):
            continue
        kind = None
        for line in open(os.path.join(d, f)):
            m = re.match(r"kind (\w+) ", line)
            if m:
                kind = m.group(1)
                have[kind] = set()
            m = re.match(r"op (\w+)", line)
            if m and kind:
                have[kind].add(m.group(1))
    return have


def grid_groups(setups, op, args):
    out = []
    for o, a in list(setups) + [(op, args)]:
        out += [o, str(len(a))] + list(a)
    return out


def run_grid(R, pieces, hb, url, secs, reps, attempt):
    G = R["grid"] = {"started": time.time(), "load_start": os.getloadavg(),
                     "rows": [], "secs": secs, "reps": reps}
    have = grid_specs()
    tmp = tempfile.mkdtemp(prefix="hilock-bench-grid-")
    try:
        floorlib = pieces.floorlib()
    except NotMeasured as e:
        floorlib = None
        G["no_floorlib"] = str(e)

    median_run = grid_median_run

    def paired(key, fn, n):
        def run():
            runs = [fn() for _ in range(n)]
            for r in runs:
                if "hilock_ops_per_s" in r:
                    r["ops_per_s"] = r.pop("hilock_ops_per_s")
                if "hilock_cpu_us" in r:
                    r["cpu_us"] = r.pop("hilock_cpu_us")
            return median_run(runs, lambda r: r.get("floor_ops_per_s"))
        return attempt(key, run)

    for kind, op, setups, args, peers in GRID_OPS:
        name = "bench:grid:%s:%s" % (kind, op)
        groups = grid_groups(setups, op, args)
        row = {"kind": kind, "op": op, "args": args, "setups": setups,
               "res": {}}
        G["rows"].append(row)
        ff = "-"
        if op not in have.get(kind, ()):
            row["missing"] = True
        elif hb:
            ff = os.path.join(tmp, "%s.%s.floor" % (kind, op))
            cap = attempt("grid/%s.%s/capture" % (kind, op), lambda: run_json(
                hb + [url, "grid-capture", ff, kind, name] + groups, 60))
            if cap:
                row["floor_cmds"] = cap["commands"]
            else:
                ff = "-"
        res = row["res"]
        key = "grid/%s.%s/" % (kind, op)
        secs_s = str(secs)
        if ff != "-":
            res["c"] = paired(key + "c", lambda: run_json(
                hb + [url, "grid-paired", secs_s, ff, kind, name] + groups,
                120), reps)
            if floorlib:
                res["python"] = paired(key + "python", lambda: run_json(
                    pieces.python_hilock() + [url, "hilock", "grid", secs_s,
                                              floorlib, ff, kind, name] +
                    groups, 120), reps)

                def lua():
                    cmd, env = pieces.lua()
                    return run_json(cmd + [url, "grid", secs_s, ff, kind,
                                           name] + groups, 120, env=env)
                res["lua"] = paired(key + "lua", lua, reps)
                res["go"] = paired(key + "go", lambda: run_json(
                    pieces.go("grid") + ["grid", "hilock", url, secs_s,
                                         floorlib, ff, kind, name] + groups,
                    120), reps)
        def setup():
            """hilock's set-ups of the row, which its floor needs (a rate
            limiter's rate, a Bloom filter's config): Redis is flushed
            before each attempt, and a peer skips set-ups of hilock's."""
            if ff != "-" and setups:
                run_json(hb + [url, "grid-setup", kind, name] + groups, 60)

        for peer in peers:
            pff = ff if floorlib else "-"
            if peer in ("redispy", "limits", "pottery"):
                res[peer] = paired(key + peer, lambda: setup() or run_json(
                    pieces.python_peer() + [url, peer, "grid", secs_s,
                                            floorlib or "-", pff, kind,
                                            name] + groups, 120), reps)
            elif peer in ("goredis", "redis_rate"):
                res[peer] = paired(key + peer, lambda: setup() or run_json(
                    pieces.go("grid") + ["grid", peer, url, secs_s,
                                         floorlib or "-", pff, kind, name] +
                    groups, 120), reps)
            elif peer == "redisson":
                def java_run():
                    setup()
                    runs = []
                    for _ in range(reps):
                        fl = []
                        if ff != "-":
                            fl.append(run_json(hb + [url, "grid-floor",
                                                     str(secs / 2), ff],
                                               60)["ops_per_s"])
                        r = run_json(pieces.java() + [
                            url, "grid", secs_s, kind, name] + groups, 300)
                        if ff != "-":
                            fl.append(run_json(hb + [url, "grid-floor",
                                                     str(secs / 2), ff],
                                               60)["ops_per_s"])
                            r["floor_ops_per_s"] = sum(fl) / 2
                        runs.append(r)
                    return median_run(runs,
                                      lambda r: r.get("floor_ops_per_s"))
                res[peer] = attempt(key + peer, java_run)
        log("grid %s.%s:" % (kind, op), ", ".join(
            "%s %s" % (k, v.get("ratio", round(v["ops_per_s"])))
            for k, v in res.items() if v))
    shutil.rmtree(tmp, ignore_errors=True)
    G["load_end"] = os.getloadavg()
    G["duration_s"] = round(time.time() - G["started"])


def grid_cmd_text(cmds):
    """The floor's commands as the page shows them (a SHA shortened)."""
    out = []
    for c in cmds or []:
        words = []
        if len(c) > 16:  # a batch: its first words and how many
            c = c[:12] + ["… (%d words)" % len(c)]
        for i, a in enumerate(c):
            if a.startswith("… ("):
                words.append(a)
                continue
            # bytes as \xHH (a rate limiter's grant id), not raw in the page
            a = "".join(ch if " " <= ch <= "~" and ch not in "`|\\" else
                        "\\x%02x" % ord(ch) for ch in a)
            if i == 1 and c[0].upper() == "EVALSHA":
                a = a[:8] + "…"
            words.append(a if a and " " not in a else '"%s"' % a)
        out.append(" ".join(words))
    return "; ".join(out)


def grid_median_run(runs, floor_of):
    """The run of the median ratio to its floor (floor_of(run): the
    floor's ops/s), with every ratio (the grid's sections, (11) and
    bench/grid_coll.py's)."""
    rs = sorted((r["ops_per_s"] / floor_of(r), i)
                for i, r in enumerate(runs) if floor_of(r))
    if not rs:
        return dict(runs[0]) if runs else None
    x, i = rs[len(rs) // 2]
    res = dict(runs[i])
    res["ratio"] = round(x, 3)
    res["ratios"] = [round(y, 3) for y, _ in rs]
    return res


def grid_cell(r, target=None):
    """A grid table's cell: ratio to the floor and ops/s, marked against
    target when one is given."""
    if not r:
        return "not measured"
    s = "%d/s" % round(r["ops_per_s"])
    if r.get("ratio") is not None:
        s = "**%.2fx** (%s)" % (r["ratio"], s)
        if target is not None:
            s += " ✓" if r["ratio"] >= target else " ✗"
    return s


def grid_cross_lines(rows):
    """The crossing's table of a grid section: per binding, the floor's
    round called once per operation from the language (one call into C
    a round: pybench, luabench, bench/go/grid) against the floor's C
    loop, and hilock's call against that crossing, from the same run."""
    langs = [x for x in ("python", "lua", "go")
             if any((r["res"].get(x) or {}).get("cross_ops_per_s")
                    for r in rows)]
    if not langs:
        return []
    names = {"python": "Python", "lua": "Lua", "go": "Go"}
    o = ["### The crossing: what a call into C costs, without hilock\n",
         "Each binding's run also times a third kind of slice: the same "
         "floor, on a connection of its own, called once per operation "
         "from the language (Python through cffi, Lua through the module "
         "hlfloor, Go through cgo), as a binding calls C. *crossing*: its "
         "ratio to the C loop (what crossing into C and back, and the "
         "language's own loop, cost each operation without hilock); "
         "*hilock / crossing*: the binding's call against it (what hilock, "
         "its C core and the binding's idiom, adds to that). Same runs as "
         "the table above.\n",
         "| operation | %s |" % " | ".join(
             "%s: crossing | %s: hilock / crossing" % (names[x], names[x])
             for x in langs),
         "|---|%s" % ("---:|---:|" * len(langs))]
    for r in rows:
        cells = []
        for x in langs:
            m = r["res"].get(x) or {}
            f, c, h = (m.get("floor_ops_per_s"), m.get("cross_ops_per_s"),
                       m.get("ops_per_s"))
            cells.append("**%.2fx**" % (c / f) if f and c else "—")
            cells.append("**%.2fx**" % (h / c) if h and c else "—")
        o.append("| %s.%s | %s |" % (r["kind"], r["op"], " | ".join(cells)))
    o.append("")
    return o


def render_grid(R):
    """Section (11), between GRID_BEGIN and GRID_END."""
    o = [GRID_BEGIN]
    w = o.append
    G = R.get("grid")
    w("## (11) The data grid: each operation against its floor\n")
    if not G:
        w("not measured: %s\n" % R["notes"].get("c", "not run (group "
                                                    "grid)"))
        w(GRID_END)
        return o
    w(measured_by(G, R, " Each figure is the median of %d runs of %g s." % (
        G.get("reps", 1), G.get("secs", 0))))
    w("The floor of an operation is what hilock sends for it, captured "
      "once with MONITOR (`hlbench URL grid-capture`) and replayed over "
      "one raw hiredis connection (bench/floor.c `hlfloor_cmds`): the same "
      "command, or the same EVALSHA of the same script with the same "
      "arguments. Every language alternates 5 ms slices of its call "
      "with 5 ms of that C floor in its own process (Python through "
      "ctypes, Lua through the module hlfloor, Go through dlopen), so "
      "both see the same load; hilock's call is the binding's own method "
      "(C: `hl_object_call()`). Peers run the same way in their own "
      "process (raw redis-py and go-redis: the command, or for a "
      "compare-and-set a script of their own through `register_script` / "
      "`NewScript`, EVALSHA), after hilock's set-ups of the row, which "
      "its floor needs (a rate limiter's rate, a Bloom filter's config); "
      "Redisson (StringCodec for the bucket and the Bloom filter) runs "
      "in a JVM after a second of warm-up, against the mean of the floor "
      "run just before and just after it. Each cell: the ratio to the "
      "floor of its own process (higher is faster), and ops/s. The slices "
      "were 100 ms until 2026-11-28: a burst of the VM's steal time then "
      "fell on one side of a pair and moved a run's ratio by up to ±10%% "
      "(eight runs of C's bucket.get: standard deviation 0.045); in 5 ms "
      "slices, 0.01. The client CPU per operation below says what the "
      "library adds.\n")

    cell = grid_cell

    rows = [r for r in G["rows"] if not r.get("missing")]
    w("### hilock: C and the bindings (targets: C >= %.2fx, bindings >= "
      "%.1fx)\n" % (GRID_C_TARGET, GRID_BINDING_TARGET))
    w("| operation | its floor (raw hiredis) | the floor in C's run, ops/s "
      "| C | Python | Lua | Go |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        res = r["res"]
        c = res.get("c") or {}
        w("| %s.%s | `%s` | %s | %s | %s | %s | %s |" % (
            r["kind"], r["op"], grid_cmd_text(r.get("floor_cmds")),
            "%d" % round(c["floor_ops_per_s"]) if c.get("floor_ops_per_s")
            else "—",
            cell(res.get("c"), GRID_C_TARGET),
            cell(res.get("python"), GRID_BINDING_TARGET),
            cell(res.get("lua"), GRID_BINDING_TARGET),
            cell(res.get("go"), GRID_BINDING_TARGET)))
    w("")
    w("Client CPU per operation, µs (the process's CPU time over the "
      "operations of the same slices: the floor's → hilock's, and the "
      "difference, which is what the binding and the library add; the "
      "machine's load moves it less than the ratios):\n")
    w("| operation | C | Python | Lua | Go |")
    w("|---|---:|---:|---:|---:|")

    def cpu(r):
        if not r or r.get("floor_cpu_us") is None:
            return "—"
        h = r.get("cpu_us", r.get("hilock_cpu_us"))
        if h is None:
            return "—"
        return "%.1f → %.1f (%+.1f)" % (r["floor_cpu_us"], h,
                                        h - r["floor_cpu_us"])
    for r in rows:
        w("| %s.%s | %s |" % (r["kind"], r["op"], " | ".join(
            cpu(r["res"].get(lang)) for lang in GRID_LANGS)))
    w("")
    o.extend(grid_cross_lines(rows))
    peers = [p for p in GRID_PEER_NAMES
             if any(r["res"].get(p) for r in G["rows"])]
    w("### Side by side: the peers, against the same floor\n")
    w("| operation | hilock Python | hilock Go | %s |" % " | ".join(
        GRID_PEER_NAMES[p] for p in peers))
    w("|---|---:|---:|%s" % ("---:|" * len(peers)))
    for r in G["rows"]:
        res = r["res"]
        n = len(r["args"]) if r["op"].endswith("_all") else 1

        def pcell(x):
            c = cell(x)
            if n > 1 and x:
                c += ", %d values/s" % round(x["ops_per_s"] * n)
            return c
        if r.get("missing"):
            hp = hg = "not in hilock yet"
        else:
            hp, hg = pcell(res.get("python")), pcell(res.get("go"))
        w("| %s%s | %s | %s | %s |" % (
            "%s.%s" % (r["kind"], r["op"]),
            " (%d values a call)" % n if n > 1 else "", hp, hg, " | ".join(
                pcell(res.get(p)) if p in res else "—" for p in peers)))
    w("")
    kinds = {r["kind"] for r in G["rows"] if not r.get("missing")}
    if "rate_limiter" in kinds:
        w("The rate limiter runs a rate of 1,000,000 a second, hilock's and "
          "its peers' alike, so no call is refused. Its floor replays the "
          "captured `try_acquire` with a fresh grant id and the wall clock "
          "in every round, as hilock sends them (the capture marks the two "
          "arguments, bench/floor.h), so it takes a permit every time as "
          "hilock does; a replayed id would only find the first round's "
          "grant and take nothing.\n")
    if "bloom_filter" in kinds:
        w("A batch (`add_all`, `contains_all`: %d values in one call, one "
          "script) against a single `add`: values/s is ops/s times %d.\n" % (
              GRID_BATCH, GRID_BATCH))
    missing = sorted({r["kind"] for r in G["rows"] if r.get("missing")})
    if missing:
        w("Not in this hilock yet: %s. Their rows are ready in "
          "bench/run.py GRID_OPS and appear with the kind's spec "
          "(core/grid/<kind>.kind); meanwhile their peers run alone, with "
          "no floor (a figure in ops/s only). The rate limiters' peers run "
          "a rate of 1,000,000 a second, so no call is refused.\n" %
          ", ".join(missing))
    w(GRID_END)
    return o


def splice_grid(page, R):
    """The page with section (11) replaced by this run's; the other
    sections are kept as their own run wrote them."""
    page = splice_block(page, GRID_BEGIN, GRID_END,
                        "\n".join(render_grid(R)), after=SYNC_END)
    return with_tail(page)


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------
# --------------------------------------------------------------------------
# (8) RedLock: three servers of its own, hilock against redsync
# --------------------------------------------------------------------------
REDLOCK_WORKERS = [4, 16]
REDLOCK_BEGIN = "<!-- redlock:begin -->"
REDLOCK_END = "<!-- redlock:end -->"


def run_redlock(R, pieces, secs, csecs, quick, attempt):
    """hilock's RedLock (bindings/go NewRedLock) and redsync's (one pool
    per server) over the same three fresh servers, in one run: uncontended
    pairs (alternated, median of REPS), contention, and one server killed
    once the programs are connected. Each program's one-server Mutex on
    server 1 is the reference."""
    RL = R["redlock"] = {"uncontended": {}, "contend": [], "down": {}}
    servers = [Redis() for _ in range(3)]
    reps = 1 if quick else REPS
    libs = ("hilock", "redsync")
    try:
        for s in servers:
            s.start()

        def urls():
            return ",".join(s.url for s in servers)

        def flush():
            for s in servers:
                s.cmd("FLUSHALL")

        def run(lib, args, env=None, timeout=120):
            flush()
            return run_json(pieces.go(lib) + ["redlock", urls()] + args,
                            timeout, env=env)

        U = RL["uncontended"]
        for lib in libs:
            U[lib] = {"runs": [], "one": []}
        for _ in range(reps):
            for lib in libs:
                def one_rep(lib=lib):
                    flush()
                    one = run_json(pieces.go(lib) + [servers[0].url,
                                                     "uncontended", str(secs)],
                                   120)
                    red = run(lib, ["uncontended", str(secs)])
                    U[lib]["one"].append(one["pairs_per_s"])
                    U[lib]["runs"].append(red["pairs_per_s"])
                    return red
                attempt("redlock/uncontended/" + lib, one_rep)
        for w in ([4] if quick else REDLOCK_WORKERS):
            for lib in libs:
                r = attempt("redlock/contend/%s/%d" % (lib, w), lambda: run(
                    lib, ["contend", str(csecs), str(w), "goroutines",
                          str(CS_US)], timeout=csecs + 90))
                if r:
                    r["key"] = lib
                    RL["contend"].append(r)

        # One server down: killed by the program itself once it is
        # connected (HILOCK_BENCH_KILL), then started again on a new port.
        def down(lib, args):
            victim = servers[2]
            env = dict(os.environ)
            env["HILOCK_BENCH_KILL"] = "%d:%d" % (victim.proc.pid, victim.port)
            try:
                return run(lib, args, env=env, timeout=csecs + 90)
            finally:
                victim.proc.wait()
                victim.proc = None
                victim.start()
        D = RL["down"]
        for lib in libs:
            D[lib] = {"runs": []}
        for _ in range(reps):
            for lib in libs:
                r = attempt("redlock/down/uncontended/" + lib, lambda: down(
                    lib, ["uncontended", str(secs)]))
                if r:
                    D[lib]["runs"].append(r["pairs_per_s"])
        for lib in libs:
            r = attempt("redlock/down/contend/" + lib, lambda: down(
                lib, ["contend", str(csecs), "4", "goroutines", str(CS_US)]))
            if r:
                D[lib]["contend"] = r
    finally:
        for s in servers:
            s.cleanup()


def render_redlock(R, w):
    RL = R.get("redlock")
    notes = R["notes"]
    w(REDLOCK_BEGIN)
    w("## (8) RedLock: three servers, hilock against redsync\n")
    w("Three fresh redis-servers of their own on 127.0.0.1, one client per "
      "server. hilock: `NewRedLock` of bindings/go (members taken one after "
      "another; a member held elsewhere waits its share on pub/sub), "
      "redsync v4: its own RedLock (`redsync.New` with one go-redis pool "
      "per server; every server asked at once, then retried every 50-250 "
      "ms). Both take an 8 s lease (redsync's default expiry; hilock "
      "`TryLock(ctx, -1, 8s)`), and neither side's clients resend a "
      "command to a server that is down (hilock `WithRetry(0, ...)`, "
      "go-redis `MaxRetries -1`); timeouts are both libraries' defaults. Go programs bench/go/hilock and bench/go/redsync "
      "with `redlock URL,URL,URL`; command: `make bench BENCH_ARGS=\"--only "
      "redlock\"` (`python3 bench/run.py --build build --only redlock`), "
      "which rewrites this section alone.\n")
    if not RL:
        w("not measured: %s\n" % notes.get("redlock", "not run"))
        w(REDLOCK_END)
        return
    U = RL["uncontended"]
    w("### Uncontended lock+unlock, one goroutine\n")
    w("Pairs per second, alternated runs (median; all runs in brackets). "
      "Reference: the same program's one-server lock on server 1, just "
      "before each run.\n")
    w("| library | RedLock, 3 servers | one server | RedLock / one server |"
      "\n|---|---:|---:|---:|")
    med = {}
    for lib in ("hilock", "redsync"):
        u = U.get(lib) or {}
        runs, one = u.get("runs") or [], u.get("one") or []
        if not runs:
            w("| %s | not measured: %s | | |" % (lib, notes.get(
                "redlock/uncontended/" + lib, "not run")))
            continue
        m = sorted(runs)[len(runs) // 2]
        o = sorted(one)[len(one) // 2]
        med[lib] = m
        w("| %s | %s [%s] | %s | %.2fx |" % (
            lib, fmt(m), ", ".join(fmt(x) for x in runs), fmt(o), m / o))
    if len(med) == 2:
        w("\nhilock / redsync: **%.2fx**.\n" % (med["hilock"] / med["redsync"]))
    else:
        w("")
    w("### Contention: one RedLock, 1000 µs critical section\n")
    w("W goroutines in one process, each with its own RedLock object (its "
      "own owners). Waits in µs; fairness = fewest / most acquisitions of "
      "one goroutine.\n")
    w("| library | W | acq/s | wait p50 | wait p99 | wait max | fairness "
      "| overlaps |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in RL["contend"]:
        w("| %s | %d | %s | %s | %s | %s | %d / %d | %d |" % (
            r["key"], r["workers"], fmt(r["acq_per_s"]), fmt(r["wait_p50_us"]),
            fmt(r["wait_p99_us"]), fmt(r["wait_max_us"]), r["fair_min"],
            r["fair_max"], r["violations"]))
    for k, v in sorted(notes.items()):
        if k.startswith("redlock/contend/"):
            w("| %s | | not measured: %s | | | | | |" % (k[16:], v))
    w("\n### One of three servers down\n")
    w("The third server is killed (SIGKILL) once the program is connected, "
      "before the scenario starts: the quorum is the two left.\n")
    w("| library | uncontended pairs/s (median [runs]) | 4 goroutines acq/s "
      "| wait p99 (µs) | overlaps |\n|---|---:|---:|---:|---:|")
    for lib in ("hilock", "redsync"):
        d = RL["down"].get(lib) or {}
        u, c = d.get("runs"), d.get("contend")
        w("| %s | %s | %s | %s | %s |" % (
            lib,
            "%s [%s]" % (fmt(sorted(u)[len(u) // 2]), ", ".join(fmt(x) for x in u))
            if u else "not measured: %s" % notes.get(
                "redlock/down/uncontended/" + lib, "not run"),
            fmt(c["acq_per_s"]) if c else "not measured: %s" % notes.get(
                "redlock/down/contend/" + lib, "not run"),
            fmt(c["wait_p99_us"]) if c else "",
            c["violations"] if c else ""))
    w("")
    w(REDLOCK_END)


def replace_redlock_section(path, R):
    """Rewrite the RedLock section of an existing page (between its
    markers; before "## Targets" when it has none)."""
    o = []
    render_redlock(R, o.append)
    block = "\n".join(o)
    page = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if REDLOCK_BEGIN in page and REDLOCK_END in page:
        a = page.index(REDLOCK_BEGIN)
        b = page.index(REDLOCK_END) + len(REDLOCK_END)
        page = page[:a] + block + page[b:]
    elif "\n## Targets" in page:
        i = page.index("\n## Targets") + 1
        page = page[:i] + block + "\n\n" + page[i:]
    else:
        page = page.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(page)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true",
                    help="short runs (a smoke test of the bench itself)")
    ap.add_argument("--only", default="",
                    help="comma list of groups: floor,c,python,lua,go,java,"
                         "cluster,tls,failover,redlock,kinds,fair,rw,sem,"
                         "latch,unc,grid (redlock alone rewrites only its own "
                         "section of --out; kinds,fair,rw alone only the lock "
                         "family's; sem,latch alone only the synchronizers'; "
                         "unc, scenario (1) of every language, only (1); "
                         "grid alone only (11); grid-coll and grid-queue "
                         "(bench/grid_queue.py) only their own sections; "
                         "random, section (16), alone only its own; "
                         "contend, the contention rows of (2) of every "
                         "language, only (2); sections, (3) to (8) "
                         "(scale, watchdog, memory, faults, the topologies, "
                         "RedLock), only those)")
    ap.add_argument("--random-workers", type=int, default=RANDOM_WORKERS,
                    help="group random: processes (default %(default)s)")
    ap.add_argument("--random-seconds", type=float, default=None,
                    help="group random: how long each library loops "
                         "(default %g, --quick %g)" % (
                             RANDOM_SECONDS, RANDOM_QUICK_SECONDS))
    ap.add_argument("--random-max-hold-ms", type=int,
                    default=RANDOM_MAX_HOLD_MS,
                    help="group random: holds uniform in 0..this "
                         "(default %(default)s)")
    ap.add_argument("--random-wait-ms", type=int, default=RANDOM_WAIT_MS,
                    help="group random: each acquire's wait "
                         "(default %(default)s)")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--render", metavar="JSON",
                    help="only rewrite the page from BUILD/bench-results.json")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if args.render:
        with open(args.render) as f:
            R = json.load(f)
        R["scale"] = {(int(k) if k.isdigit() else k): v
                      for k, v in R["scale"].items()}
        if R.get("family_only") or R.get("sync_only") or R.get("unc_only") \
                or R.get("grid_only") or R.get("sections_only") \
                or R.get("random_only") or R.get("contend_only") \
                or R.get("core_sections_only"):
            if R.get("redlock"):
                replace_redlock_section(args.out, R)
            with open(args.out) as f:
                page = f.read()
            if R.get("unc_only"):
                page = splice_uncontended(page, R)
            if R.get("contend_only"):
                page = splice_contend(page, R)
            if R.get("core_sections_only"):
                page = splice_core_sections(page, R)
            if R.get("family_only"):
                page = splice_family(page, R)
            if R.get("sync_only"):
                page = splice_sync(page, R)
            if R.get("grid_only"):
                page = splice_grid(page, R)
        else:
            page = render(R)
        if R.get("grid_coll"):
            import grid_coll
            page = grid_coll.splice(page, R, sys.modules[__name__])
        if R.get("grid_queue"):
            import grid_queue
            page = grid_queue.splice(page, R, sys.modules[__name__])
        if R.get("random"):
            page = splice_random(page, R)
        with open(args.out, "w") as f:
            f.write(page)
        return 0
    # Stop cleanly (redis-server included) on SIGTERM as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    only = set(filter(None, args.only.split(",")))

    def want(g):
        return not only or g in only

    def want1(g):
        """Scenario (1) of g: also in group unc."""
        return want(g) or "unc" in only

    def want3(g):
        """Sections (3) to (8): group g's, also in group sections."""
        return want(g) or "sections" in only

    secs = 1.0 if args.quick else 3.0
    csecs = 1.5 if args.quick else 4.0
    workers = [2, 16] if args.quick else WORKERS
    pieces = Pieces(build, args.quick)
    redis = Redis()
    redis.start()
    COUNTED["redis"] = redis
    log("redis-server on", redis.url)
    R = {"uncontended": {}, "contend": [], "scale": {}, "notes": {},
         "samples": {}, "topo": {}}
    samples_dir = tempfile.mkdtemp(prefix="hilock-bench-samples-")
    t_start = time.time()

    def attempt(key, fn):
        try:
            redis.cmd("FLUSHALL")
            return fn()
        except NotMeasured as e:
            R["notes"][key] = str(e)
            log("not measured:", key, "-", e)
            return None

    try:
        pieces.prepare(lambda g: want(g) or (
            ("unc" in only or "contend" in only) and
            g in ("python", "go", "java")) or (
            "sections" in only and g in ("redlock", "java")) or (
            g == "grid" and "grid-coll" in only))
        hb = None
        try:
            hb = pieces.hlbench()
        except NotMeasured as e:
            R["notes"]["c"] = str(e)
        url = redis.url

        # ---- the floor -------------------------------------------------
        if hb and (want("floor") or "contend" in only):
            R["floor"] = attempt("floor", lambda: run_json(
                hb + [url, "floor", str(secs)], 120))

        # ---- (1) uncontended -------------------------------------------
        # Other work on a shared machine moves every figure, so each row
        # gets its own floor: alternating with it in one process (hilock
        # in C, Python and Lua), or measured just before and just after
        # it (the others).
        U = R["uncontended"]
        U_floor = R["uncontended_floor"] = {}
        if "unc" in only:
            R["unc"] = {"started": time.time(),
                        "load_start": os.getloadavg()}

        def floored(key, fn):
            """Run fn REPS times between floor runs; keep the median of
            each run's ratio to the mean of the floors on either side."""
            def run():
                if not hb:
                    return fn()

                def floor():
                    return run_json(hb + [url, "floor", str(secs / 2),
                                          "nopping"], 120)["pairs_per_s"]
                floors, runs = [floor()], []
                for _ in range(REPS):
                    runs.append(fn())
                    floors.append(floor())
                ratios = sorted((r["pairs_per_s"] * 2 / (floors[i] +
                                                         floors[i + 1]), i)
                                for i, r in enumerate(runs))
                ratio_, i = ratios[len(ratios) // 2]
                U_floor[key] = runs[i]["pairs_per_s"] / ratio_
                res = dict(runs[i])
                res["ratios"] = [round(x, 3) for x, _ in ratios]
                return res
            return attempt(key, run)
        def paired(key, fn):
            """hilock in C and its bindings: one process alternates 5 ms
            of the floor (the same C floor, bench/floor.c) and 5 ms of
            hilock; REPS runs, the median ratio's run kept."""
            def run():
                runs = [fn() for _ in range(REPS)]
                ratios = sorted((r["hilock_pairs_per_s"] /
                                 r["floor_pairs_per_s"], i)
                                for i, r in enumerate(runs))
                _, i = ratios[len(ratios) // 2]
                U_floor[key] = runs[i]["floor_pairs_per_s"]
                return {"pairs_per_s": runs[i]["hilock_pairs_per_s"],
                        "ratios": [round(x, 3) for x, _ in ratios]}
            return attempt(key, run)
        if hb and want1("c"):
            # C runs the floor and hilock in one process, in alternating
            # 5 ms slices: both see the same load. The fixed-lease row
            # shows what the watchdog's bookkeeping costs per pair.
            for key, extra in (("c/hilock", []), ("c/hilock-lease", ["30000"])):
                U[key] = paired(key, lambda extra=extra: run_json(
                    hb + [url, "paired", str(2 * secs)] + extra, 120))
        if want1("python"):
            U["python/hilock"] = paired("python/hilock", lambda: run_json(
                pieces.python_hilock() + [url, "hilock", "paired",
                                          str(2 * secs), pieces.floorlib()],
                120))
            for lib in ("redispy", "pyredislock"):
                U["python/" + lib] = floored("python/" + lib, lambda: run_json(
                    pieces.python_peer() + [url, lib, "uncontended",
                                            str(secs)], 120))
        if want1("lua"):
            def lua_paired():
                cmd, env = pieces.lua()
                return run_json(cmd + [url, "paired", str(2 * secs)], 120,
                                env=env)
            U["lua/hilock"] = paired("lua/hilock", lua_paired)
        if want1("go"):
            U["go/hilock"] = paired("go/hilock", lambda: run_json(
                pieces.go("hilock") + [url, "paired", str(2 * secs),
                                       pieces.floorlib()], 120))
            U["go/redsync"] = paired("go/redsync", lambda: run_json(
                pieces.go("redsync") + [url, "paired", str(2 * secs),
                                        pieces.floorlib()], 120))
        if want1("java"):
            U["java/redisson"] = floored("java/redisson", lambda: run_json(
                pieces.java() + [url, "uncontended", str(secs)], 300))
        if R.get("unc"):
            R["unc"]["load_end"] = os.getloadavg()
            R["unc"]["duration_s"] = round(time.time() - R["unc"]["started"])
            R["unc"]["core"] = core_version(build)

        # ---- (2) contention --------------------------------------------
        def contend(key, cmd, w, mode, env=None):
            """cmd(): the command line up to the scenario name."""
            sf = os.path.join(samples_dir, "%s-%s-%d.txt" % (
                key.replace("/", "-"), mode, w))
            res = attempt("%s/%s/%d" % (key, mode, w), lambda: run_counted(
                cmd() + ["contend", str(csecs), str(w), mode,
                         str(CS_US), sf], csecs + 90, env=env))
            if res:
                res["key"] = key
                R["contend"].append(res)
                R["samples"][(key, mode, w)] = sf

        def want2(g):
            """The contention rows of (2) of g: also in group contend."""
            return want(g) or "contend" in only

        if "contend" in only:
            R["contend_run"] = {"started": time.time(),
                                "load_start": os.getloadavg()}
        for w in workers:
            for mode in ("threads", "processes"):
                if hb and want2("c"):
                    contend("c/hilock", lambda: hb + [url], w, mode)
                if want2("python"):
                    contend("python/hilock", lambda: pieces.python_hilock()
                            + [url, "hilock"], w, mode)
                    contend("python/redispy", lambda: pieces.python_peer()
                            + [url, "redispy"], w, mode)
                    contend("python/pyredislock", lambda: pieces.python_peer()
                            + [url, "pyredislock"], w, mode)
            if want2("go"):
                contend("go/hilock", lambda: pieces.go("hilock") + [url], w,
                        "goroutines")
                contend("go/redsync", lambda: pieces.go("redsync") + [url], w,
                        "goroutines")
            if want2("java"):
                contend("java/redisson", lambda: pieces.java() + [url], w,
                        "threads")
        if R.get("contend_run"):
            C = R["contend_run"]
            C["load_end"] = os.getloadavg()
            C["duration_s"] = round(time.time() - C.pop("started"))
            C["core"] = core_version(build)

        # ---- (3) scale ---------------------------------------------------
        if "sections" in only:
            R["sections_run"] = {"started": time.time(),
                                 "load_start": os.getloadavg()}
        if hb and want3("c"):
            # REPS rounds of 1, 8, 32 threads and 32 threads limited to a
            # pool of 4 connections (what the pool is worth); each
            # figure is compared with the one thread of its own round, and
            # the median round is kept: the machine's load drifts.
            configs = [(t, [str(t)]) for t in SCALE_THREADS] + \
                [("32p", ["32", "4"])]
            rounds = {k: [] for k, _ in configs}
            for _ in range(REPS):
                for k, a in configs:
                    r = attempt("scale/%s" % k, lambda: run_json(
                        hb + [url, "scale", str(secs)] + a, 120))
                    rounds[k].append(r)
            for k, _ in configs:
                pairs = [(r["pairs_per_s"] / one["pairs_per_s"], r)
                         for r, one in zip(rounds[k], rounds[1])
                         if r and one]
                if pairs:
                    pairs.sort(key=lambda x: x[0])
                    x, r = pairs[len(pairs) // 2]
                    r = dict(r)
                    r["ratio"] = x
                    r["ratios"] = [round(p[0], 2) for p in pairs]
                    R["scale"][k] = r

        # ---- (4) watchdog, (5) memory -----------------------------------
        if hb and want3("c"):
            R["watchdog"] = attempt("watchdog", lambda: run_json(
                hb + [url, "watchdog", str(WD_LOCKS), "2" if args.quick
                      else "4", str(WD_TIMEOUT_MS)], 300))
            R["memory"] = attempt("memory", lambda: run_json(
                hb + [url, "memory", str(WD_LOCKS), str(WAITERS)], 300))

        # ---- (6) faults: the fault proxy between client and Redis --------
        proxy = os.path.join(build, "tests", "tools", "faultproxy")
        if hb and want3("c") and os.access(proxy, os.X_OK):
            R["faults"] = attempt("faults", lambda: run_json(
                hb + [url, "faults", proxy, "3" if args.quick else "10",
                      str(FAULT_WD_MS)], 600))
        elif hb and want3("c"):
            R["notes"]["faults"] = "no %s (build the tests)" % proxy

        # ---- (7) topologies: deployments of their own (bench/topo.py) -
        reps = 1 if args.quick else REPS
        for group, fn in (
                ("cluster", lambda: run_cluster(R, hb, secs, reps,
                                                attempt)),
                ("tls", lambda: run_tls(R, hb, secs, reps, attempt)),
                ("failover", lambda: run_failover(R, pieces, hb, args.quick,
                                                  attempt))):
            if want3(group) and hb:
                fn()
            elif want3(group):
                R["notes"]["topo/" + group] = R["notes"].get("c")

        # ---- (8) RedLock: three servers of its own ----------------------
        if want3("redlock"):
            run_redlock(R, pieces, secs, csecs, args.quick, attempt)
            if only == {"redlock"}:
                R["versions"] = versions(redis, build, pieces)
                with open(os.path.join(build, "bench-results-redlock.json"),
                          "w") as f:
                    json.dump(R, f, indent=1, default=str)
                replace_redlock_section(args.out, R)
                log("rewrote the RedLock section of", args.out, "in %d s" %
                    round(time.time() - t_start))
                return 0

        # ---- (9) the lock family ---------------------------------------
        if hb and any(want(g) for g in FAMILY_GROUPS):
            run_family(R, pieces, hb, url, secs, csecs, workers, reps, want,
                       attempt)

        # ---- (10) the synchronizers -----------------------------------
        if hb and any(want(g) for g in SYNC_GROUPS):
            run_sync(R, pieces, hb, url, secs, csecs,
                     1 if args.quick else REPS, args.quick, want, attempt)
            R["sync"]["core"] = core_version(build)

        # ---- (11) the data grid ---------------------------------------
        if hb and any(want(g) for g in GRID_GROUPS):
            run_grid(R, pieces, hb, url, 1.0 if args.quick else 2.0,
                     1 if args.quick else REPS, attempt)
            R["grid"]["core"] = core_version(build)

        # ---- the data grid's collections (bench/grid_coll.py) ----------
        if hb and want("grid-coll"):
            import grid_coll
            grid_coll.run(R, sys.modules[__name__], pieces, hb, url, redis,
                          1.0 if args.quick else 2.0,
                          1 if args.quick else REPS, attempt)
            R["grid_coll"]["core"] = core_version(build)

        # ---- the queues (bench/grid_queue.py) ---------------------------
        if want("grid-queue"):
            import grid_queue
            grid_queue.run(R, sys.modules[__name__], pieces, build, url,
                           args.quick, attempt)
            R["grid_queue"]["core"] = core_version(build)

        # ---- (16) random holds across processes ------------------------
        if want("random"):
            run_random(R, pieces, hb, url,
                       args.random_seconds or (RANDOM_QUICK_SECONDS
                                               if args.quick
                                               else RANDOM_SECONDS),
                       args.random_workers, args.random_max_hold_ms,
                       args.random_wait_ms, attempt)
            R["random"]["core"] = core_version(build)

        # Only the lock family's groups or the synchronizers' (or both),
        # and a page to put them in: the other sections keep their
        # figures (and say from which run). (With redlock too, its
        # section is replaced as --only redlock does.)
        own = set(FAMILY_GROUPS) | set(SYNC_GROUPS) | set(UNC_GROUPS) | \
            set(GRID_GROUPS) | set(RANDOM_GROUPS) | {
                "grid-coll", "grid-queue", "contend", "sections"}
        partial = bool(only & own) and only <= own | {"redlock"} and \
            os.path.exists(args.out)
        family_only = partial and bool(only & set(FAMILY_GROUPS))
        sync_only = partial and bool(only & set(SYNC_GROUPS))
        unc_only = partial and bool(only & set(UNC_GROUPS))
        grid_only = partial and bool(only & set(GRID_GROUPS))
        R["family_only"] = family_only
        R["sync_only"] = sync_only
        R["unc_only"] = unc_only
        R["grid_only"] = grid_only
        R["random_only"] = partial and bool(only & set(RANDOM_GROUPS))
        R["contend_only"] = partial and "contend" in only
        R["core_sections_only"] = partial and "sections" in only
        if R.get("sections_run"):
            C = R["sections_run"]
            C["load_end"] = os.getloadavg()
            C["duration_s"] = round(time.time() - C.pop("started"))
            C["core"] = core_version(build)
        # only sections spliced in by their own modules (grid-coll,
        # grid-queue): --render must not rewrite the rest of the page
        R["sections_only"] = partial
        if partial and "redlock" in only:
            replace_redlock_section(args.out, R)
        R["versions"] = versions(redis, build, pieces)
        R["duration_s"] = round(time.time() - t_start)
        R["plot"] = "not drawn: some sections alone" if partial and \
            not R["contend_only"] else plot(R, pieces, args.out)
        R["quick"] = args.quick
        R["argv"] = "python3 bench/run.py --build <build>%s%s" % (
            " --quick" if args.quick else "",
            " --only " + ",".join(g for g in args.only.split(",") if g)
            if only else "") \
            if (args.quick or only) else "make bench"
        R["date"] = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
        for sec in ("family", "sync", "unc", "grid", "grid_coll",
                    "grid_queue", "random", "contend_run", "sections_run"):
            if R.get(sec):
                R[sec]["argv"] = R["argv"]
                R[sec]["date"] = R["date"]
        R.pop("samples", None)
        # The raw results, so the page can be re-rendered (--render).
        with open(os.path.join(build, "bench-results%s%s.json" % (
                "-partial" if family_only + sync_only + unc_only +
                grid_only > 1 else
                "-family" if family_only else "-sync" if sync_only else
                "-unc" if unc_only else "-grid" if grid_only else
                "-gridcoll" if only == {"grid-coll"} else
                "-gridqueue" if only == {"grid-queue"} else
                "-random" if only == {"random"} else
                "-contend" if only == {"contend"} else
                "-sections" if only == {"sections"} else "",
                "-quick" if args.quick else "")), "w") as f:
            json.dump(R, f, indent=1, default=str)
        if partial:
            with open(args.out) as f:
                page = f.read()
            if unc_only:
                page = splice_uncontended(page, R)
            if R["contend_only"]:
                page = splice_contend(page, R)
            if R["core_sections_only"]:
                page = splice_core_sections(page, R)
            if family_only:
                page = splice_family(page, R)
            if sync_only:
                page = splice_sync(page, R)
            if grid_only:
                page = splice_grid(page, R)
        else:
            page = render(R)
        if R.get("grid_coll"):
            import grid_coll
            page = grid_coll.splice(page, R, sys.modules[__name__])
        if R.get("grid_queue"):
            import grid_queue
            page = grid_queue.splice(page, R, sys.modules[__name__])
        if R.get("random"):
            page = splice_random(page, R)
        with open(args.out, "w") as f:
            f.write(page)
        log("wrote", args.out, "in %d s" % R["duration_s"])
    finally:
        redis.cleanup()
        shutil.rmtree(samples_dir, ignore_errors=True)
    return 0


# --------------------------------------------------------------------------
# versions and the machine
# --------------------------------------------------------------------------
def first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return ((p.stdout or p.stderr).strip().splitlines() or ["?"])[0]
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def core_version(build):
    """The commit the measured library was built from (the source tree of
    BUILD's CMake cache; local changes in its core/, if any, said so), or
    HILOCK_BENCH_CORE_NOTE when set (what that tree is, for a tree made
    for the measurement)."""
    src = ROOT
    try:
        for line in open(os.path.join(build, "CMakeCache.txt")):
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                src = line.split("=", 1)[1].strip()
    except OSError:
        pass
    head = first_line(["git", "-C", src, "log", "-1", "--format=%h"])
    dirty = first_line(["git", "-C", src, "status", "--porcelain", "--",
                        "core"])
    note = os.environ.get("HILOCK_BENCH_CORE_NOTE", "")
    if note:
        return "libhilock built from " + note
    if not re.match(r"^[0-9a-f]{7,}$", head):
        head = "a tree that is not a git checkout"
    return "libhilock built from %s%s" % (
        head, "" if dirty in ("", "?") else ", with local changes in core/")


def versions(redis, build, pieces):
    v = {}
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    v["machine"] = "%s, %d CPUs, %s %s" % (cpu, os.cpu_count() or 0,
                                           platform.system(), platform.release())
    v["redis"] = redis.info("server").get("redis_version", "?")
    v["hiredis"] = first_line(["pkg-config", "--modversion", "hiredis"])
    pcp = os.path.join(build, "pkgconfig")
    v["hilock"] = first_line(["env", "PKG_CONFIG_PATH=" + pcp, "pkg-config",
                              "--modversion", "hilock"])
    v["python"] = platform.python_version()
    py = os.path.join(build, "venv-bench", "bin", "python")
    if os.path.exists(py):
        v["redis-py"] = first_line([py, "-c", "import redis; print(redis.__version__)"])
        v["python-redis-lock"] = first_line(
            [py, "-c", "import importlib.metadata as m; "
                       "print(m.version('python-redis-lock'))"])
    v["go"] = first_line(["go", "version"])
    gomod = os.path.join(BENCH, "go", "go.mod")
    if os.path.exists(gomod):
        m = re.search(r"go-redsync/redsync/v4 (v\S+)", open(gomod).read())
        if m:
            v["redsync"] = m.group(1)
    v["lua"] = first_line(["lua5.4", "-v"])
    v["openssl"] = first_line(["openssl", "version"])
    v["java"] = first_line(["java", "-version"])
    pom = os.path.join(BENCH, "java", "pom.xml")
    if os.path.exists(pom):
        m = re.search(r"<redisson.version>([^<]+)<", open(pom).read())
        if m:
            v["redisson"] = m.group(1)
    return v


# --------------------------------------------------------------------------
# the plot
# --------------------------------------------------------------------------
def plot(R, pieces, out_md):
    series = []
    for (key, mode, w), path in sorted(R["samples"].items()):
        if w == 16 and mode in ("threads", "goroutines") and os.path.exists(path):
            series.append(("%s (%d %s)" % (key, w, mode), path))
    if not series:
        return "not drawn: no wait samples at 16 workers"
    try:
        py = pieces.bench_venv()
    except NotMeasured as e:
        return "not drawn: " + str(e)
    # Next to the page: bench/wait-times.png for BENCHMARKS.md at the top
    # of the repository, <name>-wait-times.png beside any other --out.
    out_md = os.path.abspath(out_md)
    if out_md == os.path.join(ROOT, "BENCHMARKS.md"):
        out = os.path.join(BENCH, "wait-times.png")
    else:
        out = os.path.splitext(out_md)[0] + "-wait-times.png"
    script = r'''
import sys, json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
series = json.loads(sys.argv[1]); out = sys.argv[2]
fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5.5))
for label, path in series:
    v = sorted(max(int(x), 1) / 1000.0 for x in open(path).read().split())
    if not v: continue
    n = len(v)
    ax.step(v, [(i + 1) / n for i in range(n)], where="post",
            label="%s, n=%d" % (label, n))
    # the tail: fraction of acquisitions that waited longer than x
    bx.step(v, [max(1 - (i + 1) / n, 0.5 / n) for i in range(n)],
            where="post", label=label)
ax.set_xscale("log")
ax.set_xlabel("wait for the lock (ms, log scale)")
ax.set_ylabel("fraction of acquisitions (CDF)")
ax.set_title("Wait time: 16 workers, one lock, 1 ms critical section")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8, loc="upper left")
bx.set_xscale("log")
bx.set_yscale("log")
bx.set_xlabel("wait for the lock (ms, log scale)")
bx.set_ylabel("fraction that waited longer (log scale)")
bx.set_title("The tail (1 - CDF)")
bx.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=110)
'''
    log("plotting", out)
    try:
        p = subprocess.run([py, "-c", script, json.dumps(series), out],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "not drawn: matplotlib timed out"
    if p.returncode != 0:
        return "not drawn: " + ((p.stderr.strip().splitlines() or ["?"])[-1])
    return os.path.relpath(out, os.path.dirname(out_md))


# --------------------------------------------------------------------------
# BENCHMARKS.md
# --------------------------------------------------------------------------
def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, float) and x >= 100:
        x = int(round(x))
    if isinstance(x, float):
        return "%.2f%s" % (x, unit)
    return "{:,}{}".format(x, unit)


def ratio(a, b):
    if a is None or not b:
        return "-"
    return "%.2fx" % (a / b)


def us(x):
    if x is None:
        return "-"
    if x >= 10000:
        return "%.0f ms" % (x / 1000)
    if x >= 1000:
        return "%.1f ms" % (x / 1000)
    return "%d µs" % x


LIBNAMES = {"hilock-lease": "hilock, fixed 30 s lease (no watchdog)",
            "redispy": "redis-py `Lock`", "pyredislock": "python-redis-lock",
            "redsync": "redsync", "redisson": "Redisson `RLock`"}


UNC_GROUPS = ("unc",)        # scenario (1) alone, every language
UNC_BEGIN = "<!-- uncontended:begin -->"
UNC_END = "<!-- uncontended:end -->"
UNC_KEYS = (("c/hilock", 0.95), ("c/hilock-lease", None),
            ("python/hilock", 0.9), ("lua/hilock", 0.9), ("go/hilock", 0.9),
            ("python/redispy", None), ("python/pyredislock", None),
            ("go/redsync", None), ("java/redisson", None))


def render_uncontended(R):
    """Section (1), between UNC_BEGIN and UNC_END: the page can take a run
    of group unc alone without losing the rest (see splice_uncontended)."""
    o = [UNC_BEGIN]
    w = o.append
    fpairs = (R.get("floor") or {}).get("pairs_per_s")
    w("## (1) Uncontended lock+unlock, one thread\n")
    w("Pairs per second, one thread, one lock, lock then unlock at once "
      "(hilock with the watchdog, lease -1). The machine is shared, so "
      "each row carries its own floor: for hilock in C, Python, Lua and "
      "Go, and for redsync, one process alternates 5 ms of the floor and "
      "5 ms of the library (`hlbench paired`; `pybench.py paired`, "
      "`luabench.lua paired` and the Go bench's `paired`, "
      "bench/go/harness/paired.go, load the same C floor, bench/floor.c, "
      "into the Python, Lua or Go process: libhlfloor through ctypes, the "
      "Lua module hlfloor, dlopen; until 2026-11-28 the slices were 100 "
      "ms, and Go's rows ran between floor runs of their own), %d "
      "times, showing the run of the median ratio; every other row runs "
      "%d times, each between two floor runs (separate processes), and "
      "shows the median of the ratios to the mean of the floors on "
      "either side. All ratios are in the last column. Target: C at "
      "least 0.95x the floor, every binding at least 0.9x.\n"
      % (REPS, REPS))
    w("| language | library | pairs/s | its floor | vs floor | target | "
      "all ratios |\n|---|---|---:|---:|---:|---|---|")
    for key, target in UNC_KEYS:
        lang, lib = key.split("/")
        r = R["uncontended"].get(key)
        rf = R["uncontended_floor"].get(key, fpairs)
        if r:
            x = r["pairs_per_s"] / rf if rf else None
            t = "-" if target is None else (
                "%s (>= %.2fx)" % ("met" if x and x >= target else "missed",
                                   target))
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                lang, LIBNAMES.get(lib, lib), fmt(r["pairs_per_s"]), fmt(rf),
                ratio(r["pairs_per_s"], rf), t,
                " ".join("%.2f" % x for x in r.get("ratios", []))))
        else:
            w("| %s | %s | not measured: %s | | | | |" % (
                lang, LIBNAMES.get(lib, lib), R["notes"].get(key, "not run")))
    U = R.get("unc")
    if U:
        w("")
        w(measured_by(U, {}))
    else:
        w("")
    w(UNC_END)
    return o


def unc_target_lines(R):
    """The rows of the Targets table for scenario (1)."""
    out = []
    U = R["uncontended"]
    fpairs = (R.get("floor") or {}).get("pairs_per_s")
    for key, t in UNC_KEYS:
        if t is None:
            continue
        r = U.get(key)
        rf = R["uncontended_floor"].get(key, fpairs)
        if r and rf:
            x = r["pairs_per_s"] / rf
            out.append("| %s uncontended >= %.2fx floor | %.2fx | %s |" % (
                key, t, x, "met" if x >= t else "missed"))
        else:
            out.append("| %s uncontended >= %.2fx floor | not measured | - |"
                       % (key, t))
    return out


def splice_uncontended(page, R):
    """The page with section (1), its rows of the Targets table and the
    hand-written tail (Analysis, Reproduce) replaced by this run's; the
    other sections are kept as their own run wrote them."""
    block = "\n".join(render_uncontended(R)).rstrip("\n")
    if UNC_BEGIN in page and UNC_END in page:
        a = page.index(UNC_BEGIN)
        b = page.index(UNC_END) + len(UNC_END)
        page = page[:a] + block + page[b:]
    else:
        a = page.index("## (1) Uncontended")
        b = page.index("\n## (2) ") + 1
        page = page[:a] + block + "\n\n" + page[b:]
    lines = page.split("\n")
    new = {l.split(" uncontended ")[0]: l for l in unc_target_lines(R)}
    for i, line in enumerate(lines):
        key = line.split(" uncontended ")[0]
        if " uncontended >= " in line and key in new:
            lines[i] = new.pop(key)
    return with_tail("\n".join(lines))


CONTEND_BEGIN = "<!-- contend:begin -->"
CONTEND_END = "<!-- contend:end -->"


def render_contend(R):
    """Section (2), between CONTEND_BEGIN and CONTEND_END: the page can
    take a run of group contend alone (see splice_contend)."""
    o = [CONTEND_BEGIN]
    w = o.append
    rtt_us = (R.get("floor") or {}).get("ping_rtt_us")
    w("## (2) Contention: one lock, %d µs critical section\n" % CS_US)
    C = R.get("contend_run")
    if C:
        w(measured_by(C, {}))
    w("W workers loop: acquire (wait timed), sleep %d µs, release. "
      "Threads share one client per process; processes have one client "
      "each; Go uses goroutines. Ideal = 1 / (1 ms + one PING round trip) "
      "= %s acquisitions/s. *wait* is the time in the acquire call; "
      "*handoff* is from the holder calling unlock to the next holder "
      "returning from acquire; *fair* is the fewest and the most "
      "acquisitions of one worker. *cs* is the critical section as really "
      "slept (nanosleep overshoots 1 ms by ~0.1 ms here); *vs ideal, cs as "
      "slept* divides by 1 / (that + one round trip) instead. %s. "
      "Target: "
      "throughput >= 0.8x ideal; wait p99 >= 10x lower than "
      "redis-py's Lock.\n" % (CS_US, fmt(1e6 / (CS_US + rtt_us)) if rtt_us
                              else "?", COUNTS_DOC))
    ideal = 1e6 / (CS_US + rtt_us) if rtt_us else None
    w("| library | mode | W | acq/s | vs ideal | vs ideal, cs as slept "
      "| wait p50 | wait p99 | wait max "
      "| handoff p50 | handoff p99 | fair min/max | cs | scripts / acq "
      "| cmds / acq |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
      "|---:|---:|")
    rows = sorted(R["contend"], key=lambda r: (r["key"], r["mode"],
                                               r["workers"]))
    for r in rows:
        ideal_cs = 1e6 / (r["cs_mean_us"] + rtt_us) if rtt_us else None
        w("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d "
          "| %s | %s |" % (
            r["key"], r["mode"], r["workers"], fmt(r["acq_per_s"]),
            ratio(r["acq_per_s"], ideal), ratio(r["acq_per_s"], ideal_cs),
            us(r["wait_p50_us"]),
            us(r["wait_p99_us"]), us(r["wait_max_us"]),
            us(r["handoff_p50_us"]), us(r["handoff_p99_us"]),
            r["fair_min"], r["fair_max"], us(r["cs_mean_us"]),
            per_acq_cells(r)))
    bad = [r for r in rows if r.get("violations")]
    if bad:
        w("\n**Mutual exclusion violated** in: " + ", ".join(
            "%s %s W=%d (%d)" % (r["key"], r["mode"], r["workers"],
                                 r["violations"]) for r in bad))
    missing = sorted(k for k in R["notes"] if k.count("/") == 3 or
                     (k.count("/") == 2 and k.split("/")[-1].isdigit()))
    if missing:
        w("\nNot measured:\n")
        seen = set()
        for k in missing:
            lib = "/".join(k.split("/")[:2])
            if lib in seen:
                continue
            seen.add(lib)
            w("- %s: %s" % (lib, R["notes"][k]))
    # wait p99 vs redis-py, per (mode, W)
    by = {(r["key"], r["mode"], r["workers"]): r for r in rows}
    comp = []
    for (key, mode, wk), r in sorted(by.items()):
        if key == "python/redispy":
            continue
        ref = by.get(("python/redispy", mode, wk)) or \
            by.get(("python/redispy", "threads", wk))
        if key.endswith("/hilock") and ref:
            comp.append((key, mode, wk, r["wait_p99_us"], ref["wait_p99_us"]))
    if comp:
        w("\nWait p99 against redis-py's `Lock` at the same W (target: "
          ">= 10x lower):\n")
        w("| hilock | mode | W | wait p99 | redis-py p99 | lower by |\n"
          "|---|---|---:|---:|---:|---:|")
        for key, mode, wk, a, b in comp:
            w("| %s | %s | %d | %s | %s | %s |" % (
                key, mode, wk, us(a), us(b), ratio(b, max(a, 1))))
    if R.get("plot", "").endswith(".png"):
        w("\nWait-time distribution at 16 workers (threads, goroutines): "
          "[%s](%s)\n" % (R["plot"], R["plot"]))
    else:
        w("\nPlot %s\n" % R.get("plot"))

    w(CONTEND_END)
    w("")
    return o


def splice_contend(page, R):
    """The page with section (2) replaced: between its markers, else from
    its heading to the next section's."""
    block = "\n".join(render_contend(R)).rstrip("\n") + "\n"
    if CONTEND_BEGIN in page and CONTEND_END in page:
        a = page.index(CONTEND_BEGIN)
        b = page.index(CONTEND_END) + len(CONTEND_END)
        return page[:a] + block.rstrip("\n") + page[b:]
    head = "## (2) Contention"
    if head in page and "\n## (3) " in page:
        a = page.index(head)
        b = page.index("\n## (3) ", a) + 1
        return page[:a] + block + "\n" + page[b:]
    return page.rstrip("\n") + "\n\n" + block


# The rows of the Targets table that sections (3) to (8) measure (a
# substring of each label).
SECTION_TARGETS = ("32 threads >= 4x", "black hole:", "watchdog locks",
                   "cluster router", "TLS uncontended",
                   "failover: hilock faster")
SECTIONS_BEGIN = "<!-- sections:begin -->"
SECTIONS_END = "<!-- sections:end -->"


def render_core_sections(R):
    """Sections (3) to (8), between SECTIONS_BEGIN and SECTIONS_END: the
    page can take a run of group sections alone (splice_core_sections)."""
    o = [SECTIONS_BEGIN]
    w = o.append
    w("## (3) Scale: threads on distinct locks, one client\n")
    if R.get("sections_run"):
        w(measured_by(R["sections_run"], R, " It measured sections (3) "
                      "to (8)."))
    w("T threads each lock+unlock their own lock through one shared client "
      "(default pool: up to 32 command connections, opened as threads need "
      "them). Target: 32 threads at "
      "least 4x one thread.\n")
    w("Each configuration ran %d times, in rounds; *vs 1 thread* is the "
      "median of its ratios to the one-thread run of the same round (all "
      "in the last column), pairs/s that median round's.\n" % REPS)
    w("| threads | pairs/s | vs 1 thread | all ratios |\n"
      "|---:|---:|---:|---|")
    one = (R["scale"].get(1) or {}).get("pairs_per_s")
    for t in SCALE_THREADS + ["32p"]:
        r = R["scale"].get(t)
        label = "32, pool limited to 4 connections" if t == "32p" \
            else str(t)
        if r:
            w("| %s | %s | %s | %s |" % (
                label, fmt(r["pairs_per_s"]),
                "%.2fx" % r["ratio"] if "ratio" in r
                else ratio(r["pairs_per_s"], one),
                " ".join("%.2f" % x for x in r.get("ratios", []))))
        else:
            w("| %s | not measured: %s | | |" % (
                label, R["notes"].get("scale/%s" % t, "not run")))
    w("")

    w("## (4) Watchdog\n")
    wd = R.get("watchdog")
    if wd:
        w("%d locks held with the watchdog (timeout %d ms, so a renewal "
          "period of %d ms) by one client, measured over %.1f periods. "
          "Round trips: the watchdog thread's `send(2)` calls (counted "
          "by hlbench, which interposes send(); a round trip needs at least "
          "one, so this bounds them from above). Redis side: EVALSHA calls "
          "from `INFO commandstats`. Target: at most 100 round trips per "
          "period.\n" % (wd["locks"], wd["watchdog_ms"],
                         wd["watchdog_ms"] // 3, wd["periods"]))
        w("| figure, per renewal period | value |\n|---|---:|")
        w("| round trips (upper bound: sends of the watchdog thread) | %.1f |"
          % wd["wd_writes_per_period"])
        w("| EVALSHA renewal scripts | %.1f (%.0f locks each) |" % (
            wd["evalsha_per_period"], wd["locks"] / wd["evalsha_per_period"]
            if wd["evalsha_per_period"] else 0))
        w("| Redis commands, counting those the scripts run | %.0f |"
          % wd["commands_per_period"])
        w("| watchdog thread (`%s`) CPU | %s |" % (
            wd["wd_thread"] or "not found",
            "%.1f ms" % wd["wd_cpu_ms_per_period"]
            if wd["wd_cpu_ms_per_period"] >= 0 else "-"))
        w("| whole client process CPU | %.1f ms |" %
          wd["process_cpu_ms_per_period"])
        w("| locks still held at the end (PTTL > 0) | %d of %d |\n" % (
            wd["still_held"], wd["locks"]))
        w("The CPU figures come from /proc in clock ticks (10 ms), so "
          "they are coarse at this size.\n")
    else:
        w("not measured: %s\n" % R["notes"].get("watchdog",
                                                R["notes"].get("c")))

    w("## (5) Memory\n")
    m = R.get("memory")
    if m:
        w("Redis `used_memory` and the client's heap (glibc `mallinfo2`) "
          "before and after %d locks are held by one client, and before and "
          "after %d threads of that client wait for one held lock (thread "
          "stacks not counted).\n" % (m["locks"], m["waiters"]))
        w("| per | Redis | client heap |\n|---|---:|---:|")
        w("| held lock | %.0f B | %.0f B |" % (
            m["redis_bytes_per_lock"], m["client_heap_bytes_per_lock"]))
        w("| waiting thread | %.0f B | %.0f B |\n" % (
            m["redis_bytes_per_waiter"], m["client_heap_bytes_per_waiter"]))
    else:
        w("not measured: %s\n" % R["notes"].get("memory", R["notes"].get("c")))

    w("## (6) Faults\n")
    f = R.get("faults")
    if f:
        w("`hlbench faults`: tests/tools/faultproxy between one client and "
          "Redis, %d trials. The client holds a lock with the watchdog "
          "(timeout %d ms), then its path is black-holed (nothing forwarded, "
          "nothing answered). Loss is declared by the client's clock a "
          "safety margin (a tenth of the timeout: %d ms) before the last "
          "confirmed lease could end; PTTL is read in Redis (directly) the "
          "moment the holder is told. Then, still in the black hole, a "
          "`try_acquire` with a 1000 ms wait and one with 0. Before this "
          "work the loss was told up to 4.2 s after another client could "
          "take the lock, and `acquire(timeout=1)` took 25 s.\n" % (
              len(f["acquire_wait_1000_ms"]), f["watchdog_ms"],
              f["margin_ms"]))
        w("| figure | min | median | max | goal |\n|---|---:|---:|---:|---|")

        def row(label, v, goal):
            w("| %s | %s | %s | %s | %s |" % (label, v[0], v[len(v) // 2],
                                             v[-1], goal))
        row("lease left in Redis when the holder is told it lost (ms)",
            f["lost_before_lease_end_ms"], "> 0 (told first)")
        row("release of the lost hold (µs, no round trip)",
            f["release_of_lost_us"], "no round trip")
        row("acquire, wait 1000 ms (ms)", f["acquire_wait_1000_ms"],
            "< 1200")
        row("acquire, wait 0 (ms)", f["acquire_wait_0_ms"], "small")
        w("")
    else:
        w("not measured: %s\n" % R["notes"].get("faults", R["notes"].get("c")))

    render_topo(R, w)
    render_redlock(R, w)
    w(SECTIONS_END)
    return o


def splice_core_sections(page, R):
    """The page with sections (3) to (8), their rows of the Targets table
    and the hand-written tail (Analysis, Reproduce) replaced by this run's:
    between the markers, else from the heading of (3) to that of (9)."""
    block = "\n".join(render_core_sections(R)).rstrip("\n")
    if SECTIONS_BEGIN in page and SECTIONS_END in page:
        page = splice_block(page, SECTIONS_BEGIN, SECTIONS_END, block)
    else:
        # up to (9), or to the marker of the lock family's block before it
        a = page.index("## (3) Scale")
        b = page.index("\n## (9) ") + 1
        if FAMILY_BEGIN in page[a:b]:
            b = page.index(FAMILY_BEGIN, a)
        page = page[:a] + block + "\n\n" + page[b:]
    # their targets: the rows of targets() that name them, by their label
    rows = [l for l in targets(R, None, None).split("\n")
            if l.startswith("| ") and not l.startswith("| target ")]
    new = {l.split(" | ")[0]: l for l in rows
           if any(k in l for k in SECTION_TARGETS)}
    lines = page.split("\n")
    for i, line in enumerate(lines):
        key = line.split(" | ")[0]
        if key in new:
            lines[i] = new.pop(key)
    return with_tail("\n".join(lines))


def render(R):
    o = []
    w = o.append
    v = R["versions"]
    floor = R.get("floor") or {}
    fpairs = floor.get("pairs_per_s")
    rtt_us = floor.get("ping_rtt_us")
    w("# Benchmarks\n")
    w("Generated by `%s` (bench/run.py) on %s UTC in %d s. Every figure "
      "stands next to a reference measured in the same run, as a ratio. "
      "Scenario (1) repeats each binding three times, the others run "
      "once: on a shared 2-core machine treat "
      "differences under ~15%% as noise.%s\n" % (
          R["argv"], R["date"],
          R["duration_s"],
          " **Quick mode: short runs, fewer worker counts.**" if R["quick"]
          else ""))
    w("## Machine and versions\n")
    w("| | |\n|---|---|")
    for k in ("machine", "redis", "hiredis", "openssl", "hilock", "python",
              "redis-py", "python-redis-lock", "go", "redsync", "lua", "java",
              "redisson"):
        if k in v:
            w("| %s | %s |" % (k, v[k]))
    w("\nOne redis-server (started by the bench, `--save \"\" "
      "--appendonly no`) on 127.0.0.1, on the same machine as the clients: "
      "round trips are loopback round trips, and the server shares the two "
      "cores with the clients. Section (7) starts deployments of its own "
      "(a cluster, a TLS server, Sentinel).\n")

    w("## The floor\n")
    w("`hlbench floor`: a raw hiredis program, one connection, no library "
      "logic, sending the core's own acquire and release scripts "
      "(core/src/service/scripts.c compiled in, loaded with SCRIPT LOAD) with "
      "EVALSHA, and PING.\n")
    if floor:
        w("| reference | per second | one round trip |\n|---|---:|---:|")
        w("| EVALSHA acquire + EVALSHA release (pair) | %s | %.1f µs per pair |"
          % (fmt(fpairs), 1e6 / fpairs))
        w("| PING | %s | %.1f µs |\n" % (fmt(floor["ping_per_s"]), rtt_us))
    else:
        w("not measured: %s\n" % R["notes"].get("floor", R["notes"].get("c")))

    o.extend(render_uncontended(R))
    w("")
    ideal = 1e6 / (CS_US + rtt_us) if rtt_us else None
    o.extend(render_contend(R))
    o.extend(render_core_sections(R))

    o.extend(render_family(R))
    w("")
    o.extend(render_sync(R))
    w("")
    o.extend(render_grid(R))
    w("")
    w("## Targets\n")
    w(targets(R, fpairs, ideal))
    w(FAMILY_TARGETS_LINE)
    w(SYNC_TARGETS_LINE)
    w(GRID_TARGETS_LINE)
    o.extend(render_tail())
    return "\n".join(o) + "\n"


FAMILY_TARGETS_LINE = "\nThe lock family's targets: at the end of (9).\n"
SYNC_TARGETS_LINE = "\nThe synchronizers' targets: at the end of (10).\n"
GRID_TARGETS_LINE = "\nThe data grid's targets: in the first table of (11).\n"


def render_tail():
    """Analysis (bench/ANALYSIS.md) and Reproduce."""
    o = []
    w = o.append
    notes = os.path.join(BENCH, "ANALYSIS.md")
    if os.path.exists(notes):
        w("\n## Analysis\n")
        w("Written by hand (bench/ANALYSIS.md) from the figures of the run "
          "it was last checked against; the tables above are regenerated "
          "by every run.\n")
        w(open(notes).read())
    w("\n## Reproduce\n")
    w("`make bench` builds hilock and the bindings, installs the bench's "
      "own packages (Debian: a JDK, Maven, python3-venv; PyPI: redis, "
      "python-redis-lock, matplotlib into BUILD/venv-bench; Go modules: "
      "redsync and go-redis for bench/go; Maven Central: Redisson for "
      "bench/java) and runs `python3 bench/run.py --build BUILD`: about "
      "%d minutes of measurement on 2 cores (4 of them the topology "
      "groups of (7), %d the lock family's of (9), %d the "
      "synchronizers' of (10), %d the data grid's of (11), %d the random "
      "holds' of (16)), plus the first downloads. "
      "`--only floor,c,python,lua,go,java,cluster,tls,failover,redlock,"
      "kinds,fair,rw,sem,latch` runs a subset (e.g. `--only "
      "cluster,tls,failover`: the topologies alone; `--only redlock` "
      "rewrites only section (8)); "
      "`--only kinds,fair,rw` measures the lock family "
      "alone and replaces only section (9), the Analysis and this section "
      "of an existing page, keeping the other sections' figures; "
      "`--only sem,latch` does the same for the synchronizers' section "
      "(10); `--only unc` does it for section (1), every language (and "
      "its rows of the Targets table); `--only grid` for the data grid's "
      "section (11) (limits and pottery go into BUILD/venv-bench, "
      "go-redis and redis_rate into bench/go's module); `--only random` "
      "for section (16) (`--random-seconds`, `--random-workers`, "
      "`--random-max-hold-ms`, `--random-wait-ms`); `--only contend` for "
      "the contention rows of section (2), every language. "
      "`--quick` is a short "
      "smoke run (its page goes where `--out` says), and `--render "
      "BUILD/bench-results.json` (or `bench-results-family.json`, "
      "`bench-results-sync.json`, `bench-results-unc.json`) rewrites "
      "this page from the raw results of the last run. Pieces: "
      "bench/hlbench.c (C and the floors, plain "
      "and TLS, every lock kind's and every synchronizer's), bench/floor.c "
      "(the floor of (1), also built as libhlfloor and the Lua module "
      "hlfloor for the bindings' paired runs), bench/topo.py (the deployments of (7): redis-server, "
      "redis-sentinel, redis-cli and openssl), "
      "bench/py/pybench.py, bench/lua/luabench.lua, bench/go/ (its own Go "
      "module: redsync, go-redis, redis_rate, and the binding through a "
      "replace directive; bench/go/grid the grid's), "
      "bench/java/ (the Redisson driver).\n" % (
          11 + FAMILY_MINUTES + SYNC_MINUTES + GRID_MINUTES +
          RANDOM_MINUTES, FAMILY_MINUTES, SYNC_MINUTES, GRID_MINUTES,
          RANDOM_MINUTES))
    return o


def stats(v):
    """min / median / max of a list (None when empty)."""
    v = sorted(v)
    if not v:
        return None
    n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return v[0], med, v[-1]


def ms(x):
    if x is None:
        return "-"
    return "%.0f ms" % x if x >= 100 else "%.1f ms" % x


def failover_series(res, lib):
    """A library's first_ok_ms over the trials; a trial where it did not
    recover counts as the limit (shown with '>')."""
    out, lost = [], 0
    for t in res.get("trials", []):
        r = t.get(lib)
        if r:
            out.append(r["first_ok_ms"])
        elif "why_" + lib in t and t["why_" + lib].startswith("no acq"):
            out.append(FAILOVER_LIMIT_S * 1000.0)
            lost += 1
    return out, lost


def render_topo(R, w):
    T = R.get("topo") or {}
    notes = R["notes"]
    w("## (7) Topologies: Cluster, TLS, failover\n")
    w("Each group starts its own deployment from Debian's binaries on "
      "127.0.0.1 (bench/topo.py, the settings of tests/harness_topo.c): "
      "a cluster of 6 nodes (3 masters, a replica each, "
      "`cluster-node-timeout %d`), a TLS-only redis-server with "
      "certificates made by openssl at bench time, and for Sentinel a "
      "master, 2 replicas and 3 sentinels (quorum 2, "
      "`down-after-milliseconds %d`, `failover-timeout %d`). All of it "
      "shares the two cores with the clients.\n" % (
          topo.Cluster.NODE_TIMEOUT_MS, topo.Sentinel.DOWN_AFTER_MS,
          topo.Sentinel.FAILOVER_TIMEOUT_MS))

    def paired_row(label, key, target):
        r = T.get(key)
        if not r:
            w("| %s | not measured: %s | | | | |" % (
                label, notes.get("topo/" + key,
                                 notes.get("topo/" + key.split("/")[0],
                                           "not run"))))
            return
        x = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
        w("| %s | %s | %s | %.3fx | %s | %s |" % (
            label, fmt(r["floor_pairs_per_s"]), fmt(r["hilock_pairs_per_s"]),
            x, "-" if target is None else "%s (>= %.2fx)" % (
                "met" if x >= target else "missed", target),
            " ".join("%.2f" % y for y in r.get("ratios", []))))

    runs = "runs %d times, in rounds over the rows of its table (the load " \
        "drifts); each row shows the run of the median ratio, and every " \
        "run's ratio in the last column" % (1 if R.get("quick") else REPS)
    w("### Cluster: lock+unlock through the router\n")
    own = T.get("cluster_owner")
    w("`hlbench <redis-cluster://...> cluster-paired`: one thread, one "
      "lock (`%s`%s), uncontended lock+unlock through a "
      "`redis-cluster://` client (the watchdog, lease -1), against the "
      "floor: raw hiredis on one connection to the master that owns the "
      "lock's slot, EVALSHA of the core's own scripts with the arguments "
      "the core sends (SPUBLISH for the unlock message on Redis 7), and "
      "the same `WAIT <replicas> 1000` pipelined after each script when "
      "the client waits for replicas (the default, Redisson's "
      "checkLockSyncedSlaves: one replica here; so each script costs a "
      "round trip to the master and the master's to its replica). Floor "
      "and hilock alternate in 100 ms slices in one process, after 300 ms "
      "of warm-up each; each row %s. Target: >= 0.95x.\n" % (
          CLUSTER_LOCK, ", slot %d" % own["slot"] if own else "", runs))
    w("| client | floor pairs/s | hilock pairs/s | hilock / floor | target "
      "| all ratios |\n|---|---:|---:|---:|---|---|")
    paired_row("cluster, WAIT for the replica (default)", "cluster/wait",
               0.95)
    paired_row("cluster, `wait_replicas = 0` (no WAIT on either side)",
               "cluster/nowait", 0.95)
    paired_row("for reference: `redis://` of that master, a single-server "
               "client (no router; WAIT as above)", "cluster/single", None)
    w("")

    w("### TLS: lock+unlock over rediss://\n")
    w("`hlbench <rediss://...> tls-paired`: the same pairs over TLS "
      "(OpenSSL, TLS 1.3, verification on) to one TLS-only server. The "
      "floor is hlbench's own minimal blocking OpenSSL client: one "
      "connection, SSL_write of the formatted EVALSHA, SSL_read into a "
      "hiredis reader (Debian's hiredis 0.14 has no TLS). With OpenSSL's "
      "defaults it reads each TLS record in two read(2) calls (header, "
      "then body); with read-ahead in one, the tightest floor. Slices and "
      "runs as above. Target: >= 0.95x (against the default floor).\n")
    w("| floor | floor pairs/s | hilock pairs/s | hilock / floor | target "
      "| all ratios |\n|---|---:|---:|---:|---|---|")
    paired_row("OpenSSL defaults", "tls/default", 0.95)
    paired_row("OpenSSL with read-ahead", "tls/readahead", None)
    w("")

    w("### Failover: from a master's kill -9 to the next acquisition\n")
    w("Each trial starts a fresh deployment; hilock (`hlbench failover`, "
      "C) and Redisson %s (`RedissonBench failover`, `useSentinelServers` "
      "/ `useClusterServers`, every setting its default) run side by side "
      "on it, each in its own process on its own locks (in the cluster "
      "under one hash tag, in the killed master's slot). Each loops: "
      "try-acquire with a %d ms wait (the watchdog), release, 1 ms "
      "pause, a fresh lock name each time. Once both acquire and 2 s "
      "passed, the master is killed with SIGKILL; the figure is the time "
      "from the kill to the return of the first acquisition the new "
      "master granted (begun after the kill, or returned more than "
      "200 ms after it: no failover here is quicker). *promoted* is when "
      "a surviving node first answered `ROLE` as master, *announced* when "
      "a sentinel first gave its address (polled every 10 ms from the "
      "bench). Goal: hilock faster than Redisson.\n" % (
          R["versions"].get("redisson", ""), FAILOVER_WAIT_MS))
    w("| topology | client | trials | min | median | max | all (ms) "
      "| failed tries after the kill (median) | longest acquire call "
      "| longest release call |\n"
      "|---|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for kind in ("sentinel", "cluster"):
        res = T.get("failover/" + kind)
        if not res:
            w("| %s | not measured: %s | | | | | | | | |" % (
                kind, notes.get("topo/failover", notes.get(
                    "topo/failover/%s/0" % kind, "not run"))))
            continue
        for lib in ("hilock", "redisson"):
            v, lost = failover_series(res, lib)
            st = stats(v)
            rs = [t[lib] for t in res["trials"] if t.get(lib)]
            if not st:
                why = [t.get("why_" + lib) for t in res["trials"]
                       if t.get("why_" + lib)] or [
                    notes.get("topo/failover/" + lib, "not run")]
                w("| %s | %s | 0 | not measured: %s | | | | | | |" % (
                    kind, lib, why[0]))
                continue
            w("| %s | %s | %d | %s | %s | %s%s | %s | %s | %s | %s |" % (
                kind, lib, len(v), ms(st[0]), ms(st[1]),
                ">" if lost and st[2] >= FAILOVER_LIMIT_S * 1000 else "",
                ms(st[2]), " ".join("%.0f" % x for x in v),
                "%d" % stats([r["failed_after_kill"] for r in rs])[1]
                if rs else "-",
                ms(max(r["longest_acquire_ms"] for r in rs)) if rs else "-",
                ms(max(r["longest_release_ms"] for r in rs)) if rs else "-"))
        for what in ("promoted", "announced"):
            st = stats([t[what + "_ms"] for t in res["trials"]
                        if t.get(what + "_ms") is not None])
            if st:
                w("| %s | (servers: %s) | %d | %s | %s | %s | | | | |" % (
                    kind, what, len(res["trials"]), ms(st[0]), ms(st[1]),
                    ms(st[2])))
        whys = sorted({t[k] for t in res["trials"] for k in t
                       if k.startswith("why_")})
        if whys:
            w("\n%s: %s\n" % (kind, "; ".join(whys)))
        fails = [k for k in notes if k.startswith("topo/failover/%s/" % kind)]
        if fails:
            w("\n%s: %d trial(s) failed: %s\n" % (
                kind, len(fails), notes[fails[0]]))
    w("")


def topo_targets(R, out):
    T = R.get("topo") or {}
    for key, label in (("cluster/wait", "cluster router uncontended >= "
                                        "0.95x the floor on the owning "
                                        "node"),
                       ("tls/default", "TLS uncontended >= 0.95x the raw "
                                       "TLS floor")):
        r = T.get(key)
        if r:
            x = r["hilock_pairs_per_s"] / r["floor_pairs_per_s"]
            out.append("| %s | %.3fx | %s |" % (label, x, "met" if x >= 0.95
                                                 else "missed"))
        else:
            out.append("| %s | not measured | - |" % label)
    for kind in ("sentinel", "cluster"):
        res = T.get("failover/" + kind)
        label = "%s failover: hilock faster than Redisson (kill -9 to the " \
                "next acquisition, median)" % kind.capitalize()
        if not res:
            out.append("| %s | not measured | - |" % label)
            continue
        a, b = stats(failover_series(res, "hilock")[0]), \
            stats(failover_series(res, "redisson")[0])
        if a and b:
            out.append("| %s | %s vs %s | %s |" % (
                label, ms(a[1]), ms(b[1]), "met" if a[1] < b[1] else
                "missed"))
        else:
            out.append("| %s | not measured | - |" % label)


def targets(R, fpairs, ideal):
    out = ["| target | measured | verdict |", "|---|---|---|"]
    out.extend(unc_target_lines(R))
    rtt = (R.get("floor") or {}).get("ping_rtt_us")
    for mode in ("threads", "processes"):
        cs = [r for r in R["contend"] if r["key"] == "c/hilock" and
              r["mode"] == mode]
        if cs and ideal and rtt:
            x = [r["acq_per_s"] / ideal for r in cs]
            y = [r["acq_per_s"] * (r["cs_mean_us"] + rtt) / 1e6 for r in cs]
            out.append("| C contention (%s, W=%s) >= 0.8x ideal | %.2fx to "
                       "%.2fx (cs as slept: %.2fx to %.2fx) | %s |" % (
                           mode, ",".join(str(r["workers"]) for r in cs),
                           min(x), max(x), min(y), max(y),
                           "met" if min(x) >= 0.8 else
                           "met with cs as slept" if min(y) >= 0.8 else
                           "missed"))
    by = {(r["key"], r["mode"], r["workers"]): r for r in R["contend"]}
    ps = []
    for mode in ("threads", "processes"):
        ps = []
        for (k, m, wk), r in sorted(by.items()):
            ref = by.get(("python/redispy", m, wk))
            if k == "c/hilock" and m == mode and ref:
                ps.append("W=%d: %.1fx" % (
                    wk, ref["wait_p99_us"] / max(r["wait_p99_us"], 1)))
        if ps:
            out.append("| C wait p99 >= 10x lower than redis-py Lock (%s) "
                       "| %s | see Analysis |" % (mode, ", ".join(ps)))
    r32 = R["scale"].get(32) or R["scale"].get("32")
    if r32 and "ratio" in r32:
        out.append("| 32 threads >= 4x one thread | %.2fx | %s |" % (
            r32["ratio"], "met" if r32["ratio"] >= 4 else "missed"))
    f = R.get("faults")
    if f:
        out.append("| black hole: loss told before the lease ends in Redis "
                   "| %d to %d ms before | %s |" % (
                       f["lost_before_lease_end_ms"][0],
                       f["lost_before_lease_end_ms"][-1],
                       "met" if f["lost_before_lease_end_ms"][0] > 0
                       else "missed"))
        out.append("| black hole: acquire(wait 1 s) < 1.2 s | %d ms at most "
                   "| %s |" % (f["acquire_wait_1000_ms"][-1],
                               "met" if f["acquire_wait_1000_ms"][-1] < 1200
                               else "missed"))
    wd = R.get("watchdog")
    if wd:
        out.append("| 10,000 watchdog locks in <= 100 round trips per period "
                   "| <= %.0f round trips (%.0f EVALSHA) | %s |" % (
                       wd["wd_writes_per_period"], wd["evalsha_per_period"],
                       "met" if wd["wd_writes_per_period"] <= 100
                       else "missed"))
    topo_targets(R, out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
