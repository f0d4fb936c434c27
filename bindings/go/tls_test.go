package hilock_test

// TLS (rediss://): a lock over TLS with WithTLS, and a wrong CA. A
// redis-server with a TLS port (and a plain one for the checks), with
// certificates made by the openssl command. Skipped, saying why, when the
// server ($REDIS_SERVER) was built without TLS.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	hilock "github.com/hilock/hilock/bindings/go"
)

const tlsCnf = `[req]
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
`

func openssl(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// serverWithoutTLS says why bin cannot serve TLS, "" when it can. Started
// with a TLS port and no certificate, a TLS build stops for the missing
// certificate; one built without TLS (Valkey's PyPI build) says it has no
// TLS support (the C harness's probe, tests/harness.c).
func serverWithoutTLS(bin string) string {
	port, err := freePort()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--port", "0", "--tls-port", strconv.Itoa(port),
		"--bind", "127.0.0.1", "--save", "", "--daemonize", "no")
	cmd.Dir = "/"
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		l := strings.ToLower(line)
		for _, m := range []string{"tls support", "tls not supported", "bad directive"} {
			if strings.Contains(l, m) {
				return bin + " was built without TLS (it says: " + strings.TrimSpace(line) + ")"
			}
		}
	}
	return ""
}

// tlsServer starts a redis-server with a TLS port; it returns the TLS port,
// the plain one and the certificate directory. Stopped at the test's end.
func tlsServer(t *testing.T) (tlsPort, plainPort int, dir string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("needs the openssl command")
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hl.cnf"), []byte(tlsCnf), 0o600); err != nil {
		t.Fatal(err)
	}
	key := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	for _, ca := range []string{"ca", "other-ca"} {
		openssl(t, dir, append(append([]string{"req", "-x509", "-config", "hl.cnf",
			"-extensions", "v3_ca"}, key...), "-days", "3650", "-keyout", ca+".key",
			"-out", ca+".crt", "-subj", "/CN=hilock "+ca)...)
	}
	openssl(t, dir, append(append([]string{"req", "-new", "-config", "hl.cnf"}, key...),
		"-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")...)
	openssl(t, dir, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
		"-CAcreateserial", "-days", "3650", "-extfile", "hl.cnf", "-extensions", "server",
		"-out", "server.crt")
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	if why := serverWithoutTLS(bin); why != "" {
		t.Skip(why)
	}
	for attempt := 0; attempt < 3; attempt++ {
		p1, err1 := freePort()
		p2, err2 := freePort()
		if err1 != nil || err2 != nil || p1 == p2 {
			continue
		}
		cmd := exec.Command(bin, "--port", strconv.Itoa(p1), "--tls-port", strconv.Itoa(p2),
			"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
			"--tls-cert-file", filepath.Join(dir, "server.crt"),
			"--tls-key-file", filepath.Join(dir, "server.key"),
			"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"),
			"--tls-auth-clients", "no",
			"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if waitRedis("127.0.0.1:"+strconv.Itoa(p1), exited, 10*time.Second) {
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			return p2, p1, dir
		}
		cmd.Process.Kill()
		<-exited
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	t.Fatalf("redis-server with TLS did not start; log:\n%s", log)
	return 0, 0, ""
}

func TestTLSLock(t *testing.T) {
	tlsPort, plainPort, dir := tlsServer(t)
	ctx := context.Background()
	url := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort)
	c, err := hilock.Connect(ctx, url, hilock.WithWatchdogTimeout(time.Second),
		hilock.WithTLS(hilock.TLSConfig{CAFile: filepath.Join(dir, "ca.crt")}))
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	defer c.Close()
	other, err := hilock.Connect(ctx, url, hilock.WithTLS(hilock.TLSConfig{
		CAFile: filepath.Join(dir, "ca.crt"), ServerName: "localhost"}))
	if err != nil {
		t.Fatalf("Connect(%s) with ServerName: %v", url, err)
	}
	defer other.Close()

	m := c.Mutex("go:tls")
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	rc, err := dialResp("127.0.0.1:" + strconv.Itoa(plainPort))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	if v, err := rc.do("EXISTS", "go:tls"); err != nil || v != int64(1) {
		t.Fatalf("EXISTS go:tls = %v, %v; want 1", v, err)
	}
	if ok, err := other.Mutex("go:tls").TryLock(ctx, 0, 0); err != nil || ok {
		t.Fatalf("TryLock of a held lock = %v, %v", ok, err)
	}
	time.Sleep(1500 * time.Millisecond) // renewed past its 1 s lease
	if held, err := m.IsHeld(); err != nil || !held {
		t.Fatalf("IsHeld after the lease = %v, %v", held, err)
	}
	m.Unlock()
	om := other.Mutex("go:tls")
	if ok, err := om.TryLock(ctx, 0, 0); err != nil || !ok {
		t.Fatalf("TryLock of a free lock = %v, %v", ok, err)
	}
	if err := om.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSWrongCA(t *testing.T) {
	tlsPort, plainPort, dir := tlsServer(t)
	ctx := context.Background()
	url := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort)
	_, err := hilock.Connect(ctx, url,
		hilock.WithTLS(hilock.TLSConfig{CAFile: filepath.Join(dir, "other-ca.crt")}))
	if !errors.Is(err, hilock.ErrConnect) || !strings.Contains(err.Error(), "certificate verify failed") {
		t.Fatalf("Connect with a wrong CA: %v; want ErrConnect, certificate verify failed", err)
	}
	// InsecureSkipVerify: encrypted, anyone trusted
	c, err := hilock.Connect(ctx, url, hilock.WithTLS(hilock.TLSConfig{
		CAFile: filepath.Join(dir, "other-ca.crt"), InsecureSkipVerify: true}))
	if err != nil {
		t.Fatalf("Connect with InsecureSkipVerify: %v", err)
	}
	c.Close()
	// a missing file, before any connection
	missing := filepath.Join(dir, "missing.crt")
	_, err = hilock.Connect(ctx, url, hilock.WithTLS(hilock.TLSConfig{CAFile: missing}))
	if !errors.Is(err, hilock.ErrInvalid) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Connect with a missing CA file: %v; want ErrInvalid naming it", err)
	}
	// a plain port under rediss://, a TLS port under redis://
	_, err = hilock.Connect(ctx, "rediss://127.0.0.1:"+strconv.Itoa(plainPort),
		hilock.WithTLS(hilock.TLSConfig{CAFile: filepath.Join(dir, "ca.crt")}))
	if !errors.Is(err, hilock.ErrConnect) || !strings.Contains(err.Error(), "not a TLS server") {
		t.Fatalf("rediss:// on a plain port: %v", err)
	}
	_, err = hilock.Connect(ctx, "redis://127.0.0.1:"+strconv.Itoa(tlsPort))
	if !errors.Is(err, hilock.ErrConnect) || !strings.Contains(err.Error(), "expecting TLS") {
		t.Fatalf("redis:// on a TLS port: %v", err)
	}
	_, err = hilock.Connect(ctx, url, hilock.WithTLS(hilock.TLSConfig{CAFile: "a\x00b"}))
	if !errors.Is(err, hilock.ErrInvalid) {
		t.Fatalf("a NUL in CAFile: %v", err)
	}
}
