"""TLS (rediss://): a lock over TLS, mutual TLS, and a wrong CA.

A redis-server with a TLS port (and a plain one for the raw checks) and
certificates made with the openssl command, for this module. Skipped,
saying why, when the server ($REDIS_SERVER) was built without TLS.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

import hilock
from conftest import Resp

CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = hilock
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
[server]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
"""



def _server_exe() -> str:
    return os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "redis-server"


def _without_tls() -> str:
    """Why the server cannot serve TLS, "" when it can. Started with a TLS
    port and no certificate, a TLS build stops for the missing certificate;
    one built without TLS (Valkey's PyPI build) says it has no TLS support
    (the C harness's probe, tests/harness.c)."""
    exe = _server_exe()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    try:
        out = subprocess.run([exe, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--daemonize", "no"], cwd="/", stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""  # not for this probe to say: the tests fail with the reason
    for line in out.decode("utf-8", "replace").splitlines():
        if any(m in line.lower() for m in ("tls support", "tls not supported", "bad directive")):
            return "%s was built without TLS (it says: %s)" % (exe, line.strip())
    return ""


NO_TLS = _without_tls()

pytestmark = [
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
    pytest.mark.skipif(bool(NO_TLS), reason=NO_TLS),
]


def _openssl(d: str, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


def _make_certs(d: str) -> None:
    with open(os.path.join(d, "hl.cnf"), "w") as f:
        f.write(CNF)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other-ca"):
        _openssl(d, "req", "-x509", "-config", "hl.cnf", "-extensions", "v3_ca", *key,
                 "-days", "3650", "-keyout", ca + ".key", "-out", ca + ".crt",
                 "-subj", "/CN=hilock " + ca)
    for name, ext in (("server", "server"), ("client", "client")):
        _openssl(d, "req", "-new", "-config", "hl.cnf", *key, "-keyout", name + ".key",
                 "-out", name + ".csr", "-subj", "/CN=" + name)
        _openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "3650", "-extfile", "hl.cnf", "-extensions", ext,
                 "-out", name + ".crt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TlsServer:
    def __init__(self, d: str, auth_clients: bool) -> None:
        exe = _server_exe()
        self.dir = d
        self.proc = None
        for _ in range(5):
            self.port, self.tls_port = _free_port(), _free_port()
            log = open(os.path.join(d, "redis-%d.log" % self.tls_port), "wb")
            self.proc = subprocess.Popen(
                [exe, "--port", str(self.port), "--tls-port", str(self.tls_port),
                 "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d,
                 "--tls-cert-file", os.path.join(d, "server.crt"),
                 "--tls-key-file", os.path.join(d, "server.key"),
                 "--tls-ca-cert-file", os.path.join(d, "ca.crt"),
                 "--tls-auth-clients", "yes" if auth_clients else "no"],
                stdout=log, stderr=subprocess.STDOUT)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with Resp(self.port, timeout=1.0) as r:
                        if r.cmd("PING") == "PONG":
                            return
                except OSError:
                    time.sleep(0.05)
            self.stop()
        raise RuntimeError("redis-server with TLS did not start; see " + d)

    @property
    def url(self) -> str:
        return "rediss://127.0.0.1:%d" % self.tls_port

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


@pytest.fixture(scope="module")
def certs() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="hilock-py-tls-")
    try:
        _make_certs(d)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_server(certs: str) -> Iterator[TlsServer]:
    srv = TlsServer(certs, auth_clients=False)
    try:
        yield srv
    finally:
        srv.stop()


def test_lock_over_tls(certs: str, tls_server: TlsServer) -> None:
    ca = os.path.join(certs, "ca.crt")
    with hilock.Client(tls_server.url, tls_ca_file=ca, watchdog_timeout=1.0) as a, \
            hilock.Client(tls_server.url, tls_ca_file=ca, tls_server_name="localhost") as b:
        lock = a.lock("py:tls")
        with lock:
            with Resp(tls_server.port) as r:  # the plain port sees it
                assert r.cmd("EXISTS", "py:tls") == 1
            assert b.lock("py:tls").acquire(blocking=False) is False
            time.sleep(1.5)  # renewed past its 1 s lease, over TLS
            assert lock.held()
        assert b.lock("py:tls").acquire(blocking=False) is True
        b.lock("py:tls").release()


def test_tls_path_like(certs: str, tls_server: TlsServer) -> None:
    import pathlib

    with hilock.Client(tls_server.url, tls_ca_file=pathlib.Path(certs) / "ca.crt") as c:
        assert c.lock("py:tls:path").acquire(blocking=False)
        c.lock("py:tls:path").release()


def test_mutual_tls(certs: str) -> None:
    srv = TlsServer(certs, auth_clients=True)
    try:
        ca = os.path.join(certs, "ca.crt")
        with pytest.raises(hilock.ConnectionError, match="requires a client certificate"):
            hilock.Client(srv.url, tls_ca_file=ca)
        with hilock.Client(srv.url, tls_ca_file=ca, tls_cert_file=os.path.join(certs, "client.crt"),
                           tls_key_file=os.path.join(certs, "client.key")) as c:
            assert c.lock("py:mtls").acquire(blocking=False)
            c.lock("py:mtls").release()
    finally:
        srv.stop()


def test_wrong_ca(certs: str, tls_server: TlsServer) -> None:
    with pytest.raises(hilock.ConnectionError) as exc:
        hilock.Client(tls_server.url, tls_ca_file=os.path.join(certs, "other-ca.crt"))
    msg = str(exc.value)
    assert "certificate verify failed" in msg, msg
    assert "tls_ca_file" in msg, msg
    # tls_verify=False encrypts and trusts anyone
    with hilock.Client(tls_server.url, tls_ca_file=os.path.join(certs, "other-ca.crt"),
                       tls_verify=False) as c:
        assert c.lock("py:tls:noverify").acquire(blocking=False)
        c.lock("py:tls:noverify").release()


def test_tls_bad_options(certs: str, tls_server: TlsServer) -> None:
    missing = os.path.join(certs, "missing.crt")
    with pytest.raises(hilock.InvalidArgumentError, match="tls_ca_file.*missing.crt"):
        hilock.Client(tls_server.url, tls_ca_file=missing)
    with pytest.raises(hilock.InvalidArgumentError, match="tls_key_file"):
        hilock.Client(tls_server.url, tls_cert_file=os.path.join(certs, "client.crt"))
    with pytest.raises(TypeError):
        hilock.Client(tls_server.url, tls_verify=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hilock.Client(tls_server.url, tls_ca_file=3)  # type: ignore[arg-type]
    # a plain client on the TLS port, a TLS client on the plain port
    with pytest.raises(hilock.ConnectionError, match="expecting TLS"):
        hilock.Client("redis://127.0.0.1:%d" % tls_server.tls_port)
    with pytest.raises(hilock.ConnectionError, match="not a TLS server"):
        hilock.Client("rediss://127.0.0.1:%d" % tls_server.port,
                      tls_ca_file=os.path.join(certs, "ca.crt"))
