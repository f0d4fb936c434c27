"""topo.py: the deployments of run.py's topology groups (cluster, tls,
failover), started from Debian's redis-server, redis-sentinel, redis-cli
and openssl on free 127.0.0.1 ports, each in a temporary directory that is
removed when it stops. Nothing here is hilock's: the bench sets up the
servers itself, as tests/harness_topo.c does for the tests, with the same
settings (down-after-milliseconds 2000, failover-timeout 5000,
cluster-node-timeout 1000), so the figures compare with the test suites'.

    Sentinel()   a master, 2 replicas, 3 sentinels (quorum 2)
    Cluster()    6 nodes: 3 masters with a replica each
    TlsServer()  one redis-server on a TLS port only, with certificates
                 made by openssl (a CA, a server certificate for 127.0.0.1)
"""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

SERVER = os.environ.get("REDIS_SERVER", "redis-server")
SENTINEL = os.environ.get("REDIS_SENTINEL", "redis-sentinel")
CLI = os.environ.get("REDIS_CLI", "redis-cli")

_used_ports = set()


class TopoError(Exception):
    pass


def free_port():
    """A free loopback port, never handed out twice by this process."""
    for _ in range(100):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _used_ports:
            _used_ports.add(port)
            return port
    raise TopoError("no free port")


# --------------------------------------------------------------------------
# RESP over a plain or TLS socket (setup, polling)
# --------------------------------------------------------------------------
class Conn:
    def __init__(self, port, timeout=5, tls_ca=None):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if tls_ca:
            ctx = ssl.create_default_context(cafile=tls_ca)
            s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        self.s = s
        self.f = s.makefile("rb")

    def cmd(self, *args):
        buf = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode() if not isinstance(a, bytes) else a
            buf += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(buf)
        return self._read()

    def _read(self):
        line = self.f.readline()
        if not line:
            raise OSError("connection closed")
        t, rest = line[:1], line[1:].strip()
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


def cmd(port, *args, timeout=5, tls_ca=None):
    """One command over a fresh connection."""
    c = Conn(port, timeout, tls_ca)
    try:
        return c.cmd(*args)
    finally:
        c.close()


def try_cmd(port, *args, timeout=2, tls_ca=None):
    try:
        return cmd(port, *args, timeout=timeout, tls_ca=tls_ca)
    except (OSError, RuntimeError):
        return None


def info(port, section, tls_ca=None):
    out = {}
    text = try_cmd(port, "INFO", section, tls_ca=tls_ca) or ""
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def wait_for(what, pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise TopoError("timed out (%d s) waiting for %s" % (timeout, what))


# --------------------------------------------------------------------------
# one server or sentinel process
# --------------------------------------------------------------------------
class Node:
    def __init__(self, base, name, port=None):
        self.name = name
        self.port = port or free_port()
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "redis.conf")
        self.log = os.path.join(self.dir, "redis.log")
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self, text, binary=SERVER, tls_ca=None):
        with open(self.conf, "w") as f:
            f.write("bind 127.0.0.1\nprotected-mode no\ndaemonize no\n"
                    "logfile \"\"\ndir \"%s\"\n" % self.dir)
            f.write(text)
        self.proc = subprocess.Popen([binary, self.conf],
                                     stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)

        def up():
            if self.proc.poll() is not None:
                raise TopoError("%s exited at start (port %d taken?): %s" % (
                    self.name, self.port, _tail(self.log)))
            return try_cmd(self.port, "PING", tls_ca=tls_ca) == "PONG"
        wait_for("%s to answer PING (log %s)" % (self.name, self.log),
                 up, 15)

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def _tail(path):
    try:
        return " / ".join(open(path).read().strip().splitlines()[-2:])[-300:]
    except OSError:
        return "?"


def _die_with_parent():
    """The servers die with the bench (PR_SET_PDEATHSIG), even on a kill."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


SERVER_CONF = ("save \"\"\nappendonly no\nrepl-diskless-sync yes\n"
               "repl-diskless-sync-delay 0\n")


class Deployment:
    def __init__(self, prefix):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.nodes = []

    def destroy(self):
        for n in self.nodes:
            n.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()


# --------------------------------------------------------------------------
# Sentinel: a master, 2 replicas, 3 sentinels
# --------------------------------------------------------------------------
class Sentinel(Deployment):
    DOWN_AFTER_MS = 2000
    FAILOVER_TIMEOUT_MS = 5000

    def __init__(self, name="mymaster"):
        super().__init__("hilock-bench-sentinel-")
        self.name = name
        self.data = [Node(self.dir, "data%d" % i) for i in range(3)]
        self.sentinels = [Node(self.dir, "sentinel%d" % i) for i in range(3)]
        self.nodes = self.data + self.sentinels
        self.master = self.data[0]

    def start(self):
        m = self.master
        m.start("port %d\n%s" % (m.port, SERVER_CONF))
        for d in self.data[1:]:
            d.start("port %d\n%sreplicaof 127.0.0.1 %d\n" % (
                d.port, SERVER_CONF, m.port))
        ids = [os.urandom(20).hex() for _ in self.sentinels]
        for i, s in enumerate(self.sentinels):
            conf = ("port %d\nsentinel resolve-hostnames no\n"
                    "sentinel myid %s\n"
                    "sentinel monitor %s 127.0.0.1 %d 2\n"
                    "sentinel down-after-milliseconds %s %d\n"
                    "sentinel failover-timeout %s %d\n"
                    "sentinel parallel-syncs %s 1\n" % (
                        s.port, ids[i], self.name, m.port,
                        self.name, self.DOWN_AFTER_MS,
                        self.name, self.FAILOVER_TIMEOUT_MS, self.name))
            # knowing the others from the start: no hello round to wait
            for d in self.data[1:]:
                conf += "sentinel known-replica %s 127.0.0.1 %d\n" % (
                    self.name, d.port)
            for j, o in enumerate(self.sentinels):
                if j != i:
                    conf += "sentinel known-sentinel %s 127.0.0.1 %d %s\n" % (
                        self.name, o.port, ids[j])
            s.start(conf, binary=SENTINEL)

        def synced():
            inf = info(m.port, "replication")
            if inf.get("connected_slaves") != "2":
                return False
            return all(info(d.port, "replication").get(
                "master_link_status") == "up" for d in self.data[1:])
        wait_for("the replicas to sync", synced, 30)

        def sentinels_see():
            for s in self.sentinels:
                reps = try_cmd(s.port, "SENTINEL", "REPLICAS", self.name)
                if not reps or len(reps) != 2:
                    return False
                for r in reps:
                    kv = dict(zip(r[::2], r[1::2]))
                    if kv.get("flags") != "slave" or \
                            kv.get("master-link-status") != "ok":
                        return False
                mm = try_cmd(s.port, "SENTINEL", "MASTER", self.name)
                kv = dict(zip(mm[::2], mm[1::2])) if mm else {}
                if kv.get("flags") != "master" or \
                        kv.get("num-other-sentinels") != "2":
                    return False
            return True
        wait_for("the sentinels to see the master and replicas",
                 sentinels_see, 30)
        return self

    @property
    def url(self):
        return "redis-sentinel://%s/%s" % (",".join(
            "127.0.0.1:%d" % s.port for s in self.sentinels), self.name)

    def reported_master(self):
        """The master's port as the first answering sentinel says."""
        for s in self.sentinels:
            r = try_cmd(s.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                        self.name, timeout=0.5)
            if r:
                return int(r[1])
        return None


# --------------------------------------------------------------------------
# Cluster: 6 nodes, 3 masters with one replica each
# --------------------------------------------------------------------------
class Cluster(Deployment):
    NODE_TIMEOUT_MS = 1000

    def __init__(self):
        super().__init__("hilock-bench-cluster-")
        self.nodes = [Node(self.dir, "node%d" % i) for i in range(6)]

    def start(self):
        for n in self.nodes:
            n.bus = free_port()
            n.start("port %d\n%scluster-enabled yes\n"
                    "cluster-config-file \"%s/nodes.conf\"\n"
                    "cluster-node-timeout %d\ncluster-port %d\n"
                    "cluster-replica-validity-factor 0\n"
                    "cluster-allow-replica-migration no\n" % (
                        n.port, SERVER_CONF, n.dir, self.NODE_TIMEOUT_MS,
                        n.bus))
        p = subprocess.run(
            [CLI, "--cluster", "create"] +
            ["127.0.0.1:%d" % n.port for n in self.nodes] +
            ["--cluster-replicas", "1", "--cluster-yes"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=60)
        if p.returncode != 0:
            raise TopoError("redis-cli --cluster create failed: " +
                            p.stdout.strip()[-300:])
        self.wait_ok(30)
        return self

    def nodes_view(self, port):
        """CLUSTER NODES of one node: {port: (flags, master_id, id)}."""
        text = try_cmd(port, "CLUSTER", "NODES")
        out = {}
        for line in (text or "").splitlines():
            f = line.split()
            if len(f) >= 8:
                out[int(f[1].split("@")[0].rsplit(":", 1)[1])] = (
                    f[2], f[3], f[0])
        return out

    def wait_ok(self, timeout):
        """Every node ok, knowing all six, agreeing on who replicates
        whom (three replicas), and every replica in sync."""
        def ok():
            views = []
            for n in self.nodes:
                ci = try_cmd(n.port, "CLUSTER", "INFO") or ""
                if "cluster_state:ok" not in ci:
                    return False
                v = self.nodes_view(n.port)
                if len(v) != len(self.nodes) or any(
                        "handshake" in fl or "noaddr" in fl or "fail" in fl
                        for fl, _, _ in v.values()):
                    return False
                views.append(sorted((p, "slave" in fl, m)
                                    for p, (fl, m, _) in v.items()))
            if any(v != views[0] for v in views) or \
                    sum(s for _, s, _ in views[0]) != 3:
                return False
            for n in self.nodes:
                inf = info(n.port, "replication")
                if inf.get("role") == "slave" and \
                        inf.get("master_link_status") != "up":
                    return False
            return True
        wait_for("the cluster to be ok", ok, timeout)

    @property
    def url(self):
        return "redis-cluster://" + ",".join(
            "127.0.0.1:%d" % n.port for n in self.nodes)

    def keyslot(self, key):
        return cmd(self.nodes[0].port, "CLUSTER", "KEYSLOT", key)

    def master_of(self, key):
        """The node serving key's slot (CLUSTER SLOTS of a running node)."""
        slot = self.keyslot(key)
        for n in self.nodes:
            if not n.proc:
                continue
            for lo, hi, master, *_ in cmd(n.port, "CLUSTER", "SLOTS"):
                if lo <= slot <= hi:
                    return self.node(master[1])
        raise TopoError("no node serves slot %d" % slot)

    def node(self, port):
        for n in self.nodes:
            if n.port == port:
                return n
        raise TopoError("no node on port %d" % port)

    def replica_of(self, master):
        mid = self.nodes_view(master.port)[master.port][2]
        for port, (fl, m, _) in self.nodes_view(master.port).items():
            if m == mid and "slave" in fl:
                return self.node(port)
        raise TopoError("no replica of %d" % master.port)


# --------------------------------------------------------------------------
# TLS: certificates and one server on a TLS port
# --------------------------------------------------------------------------
def make_certs(d):
    """A CA and a server certificate for 127.0.0.1 (EC P-256) in d.
    Returns (ca_cert, server_cert, server_key)."""
    def ossl(*a):
        p = subprocess.run(["openssl"] + list(a), cwd=d,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        if p.returncode != 0:
            raise TopoError("openssl %s failed: %s" % (a[0], p.stdout[-300:]))
    ossl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
         "-out", "ca.crt", "-days", "30", "-subj", "/CN=hilock bench CA")
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    ossl("req", "-new", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
         "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey",
         "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "30",
         "-extfile", "server.ext")
    return tuple(os.path.join(d, f) for f in ("ca.crt", "server.crt",
                                              "server.key"))


class TlsServer(Deployment):
    def __init__(self):
        super().__init__("hilock-bench-tls-")
        self.node = Node(self.dir, "tls")
        self.nodes = [self.node]

    def start(self):
        self.ca, cert, key = make_certs(self.dir)
        n = self.node
        n.start("port 0\ntls-port %d\ntls-cert-file \"%s\"\n"
                "tls-key-file \"%s\"\ntls-ca-cert-file \"%s\"\n"
                "tls-auth-clients no\n%s" % (n.port, cert, key, self.ca,
                                             SERVER_CONF),
                tls_ca=self.ca)
        return self

    @property
    def url(self):
        return "rediss://127.0.0.1:%d" % self.node.port
