/*
 * TLS for the C tests: certificates and TLS ports on the harness's
 * servers (see tls_local.h).
 */
#include "tls_local.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The environment the REDIS_SERVER wrapper reads. */
#define ENV_CERTS "HILOCK_TL_CERTS" /* the certificate directory */
#define ENV_OWNER "HILOCK_TL_OWNER" /* pid that removes it at exit */
#define ENV_REDIS "HILOCK_TL_REDIS" /* the real redis-server */
#define ENV_KIND  "HILOCK_TL_KIND"  /* next server: certificate kind */
#define ENV_AUTH  "HILOCK_TL_AUTH"  /* next server: tls-auth-clients */

static const char *const kind_names[TL_CERT_KINDS] = {
        "server", "expired", "wrong-name", "untrusted"};

static const char cert_script[] =
        "set -e\n"
        "cd \"$1\"\n"
        "cat > hl.cnf <<'EOF'\n"
        "[req]\n"
        "distinguished_name = dn\n"
        "prompt = no\n"
        "[dn]\n"
        "CN = hilock\n"
        "[v3_ca]\n"
        "basicConstraints = critical,CA:TRUE\n"
        "keyUsage = critical,keyCertSign,cRLSign\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid:always\n"
        "[ca_main]\n"
        "database = main.idx\n"
        "new_certs_dir = issued\n"
        "certificate = ca.crt\n"
        "private_key = ca.key\n"
        "rand_serial = yes\n"
        "default_md = sha256\n"
        "policy = policy_any\n"
        "unique_subject = no\n"
        "[ca_other]\n"
        "database = other.idx\n"
        "new_certs_dir = issued\n"
        "certificate = other-ca.crt\n"
        "private_key = other-ca.key\n"
        "rand_serial = yes\n"
        "default_md = sha256\n"
        "policy = policy_any\n"
        "unique_subject = no\n"
        "[policy_any]\n"
        "commonName = supplied\n"
        "[server]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
        "[wrong_name]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = DNS:other.example\n"
        "[client]\n"
        "basicConstraints = CA:FALSE\n"
        "keyUsage = critical,digitalSignature\n"
        "extendedKeyUsage = clientAuth\n"
        "EOF\n"
        "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
        "mkdir -p issued ca-dir\n"
        ": > main.idx\n"
        ": > other.idx\n"
        "openssl req -x509 -config hl.cnf -extensions v3_ca $K -days 3650 "
        "-keyout ca.key -out ca.crt -subj '/CN=hilock test CA'\n"
        "openssl req -x509 -config hl.cnf -extensions v3_ca $K -days 3650 "
        "-keyout other-ca.key -out other-ca.crt "
        "-subj '/CN=hilock other CA'\n"
        "sign() {\n"
        "  n=$1; subj=$2; ca=$3; ext=$4; shift 4\n"
        "  openssl req -new -config hl.cnf $K -keyout \"$n.key\" "
        "-out \"$n.csr\" -subj \"$subj\"\n"
        "  openssl ca -batch -notext -config hl.cnf -name \"ca_$ca\" "
        "-extensions \"$ext\" -in \"$n.csr\" -out \"$n.crt\" \"$@\"\n"
        "  rm -f \"$n.csr\"\n"
        "}\n"
        "sign server /CN=127.0.0.1 main server -days 3650\n"
        "sign expired /CN=127.0.0.1 main server "
        "-startdate 20200101000000Z -enddate 20200201000000Z\n"
        "sign wrong-name /CN=other.example main wrong_name -days 3650\n"
        "sign untrusted /CN=127.0.0.1 other server -days 3650\n"
        "sign client /CN=hilock-client main client -days 3650\n"
        "sign other-client /CN=hilock-client other client -days 3650\n"
        "cp ca.crt \"ca-dir/$(openssl x509 -hash -noout -in ca.crt).0\"\n";

static tl_certs g_certs;
static int g_have_certs;

static void fill_paths(tl_certs *t, const char *dir)
{
	int i;
	snprintf(t->dir, sizeof t->dir, "%s", dir);
	snprintf(t->ca_cert, sizeof t->ca_cert, "%s/ca.crt", dir);
	snprintf(t->ca_dir, sizeof t->ca_dir, "%s/ca-dir", dir);
	snprintf(t->other_ca_cert, sizeof t->other_ca_cert, "%s/other-ca.crt",
	         dir);
	for (i = 0; i < TL_CERT_KINDS; i++) {
		snprintf(t->server_cert[i], sizeof t->server_cert[i],
		         "%s/%s.crt", dir, kind_names[i]);
		snprintf(t->server_key[i], sizeof t->server_key[i], "%s/%s.key",
		         dir, kind_names[i]);
	}
	snprintf(t->client_cert, sizeof t->client_cert, "%s/client.crt", dir);
	snprintf(t->client_key, sizeof t->client_key, "%s/client.key", dir);
	snprintf(t->other_client_cert, sizeof t->other_client_cert,
	         "%s/other-client.crt", dir);
	snprintf(t->other_client_key, sizeof t->other_client_key,
	         "%s/other-client.key", dir);
}

/* A failed check ends the test with _exit() (harness.c): no atexit. A
 * small sh left behind removes the directory once every holder of the
 * pipe's write end (this process, its children, the servers it started)
 * is gone. */
static void start_reaper(const char *dir)
{
	int p[2], fd;
	pid_t pid;
	if (pipe(p) != 0)
		return;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		setsid();
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl("/bin/sh", "sh", "-c", "cat > /dev/null; rm -rf \"$0\"",
		      dir, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	if (pid < 0)
		close(p[1]);
	/* else p[1] stays open, on purpose, until this process ends */
}

static void remove_certs(void)
{
	const char *owner = getenv(ENV_OWNER);
	char cmd[400];
	if (!g_have_certs || !owner || atoi(owner) != (int)getpid())
		return; /* a forked child: the parent removes them */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_certs.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_certs.dir);
}

const tl_certs *tl_certs_get(void)
{
	const char *dir = getenv(ENV_CERTS), *tmp = getenv("TMPDIR");
	char path[300], script[340], cmd[1200], buf[32];
	int64_t t0 = ht_now_ms();
	FILE *f;
	int rc;
	if (g_have_certs)
		return &g_certs;
	if (dir && *dir) {
		/* Made before a re-exec (valgrind): same process, same pid. */
		fill_paths(&g_certs, dir);
		g_have_certs = 1;
		atexit(remove_certs);
		return &g_certs;
	}
	if (!tmp || !*tmp || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(path, sizeof path, "%s/hilock-tls-XXXXXX", tmp);
	if (!mkdtemp(path))
		HT_FAIL("mkdtemp %s: %s", path, strerror(errno));
	snprintf(script, sizeof script, "%s/make-certs.sh", path);
	f = fopen(script, "w");
	if (!f || fputs(cert_script, f) < 0 || fclose(f) != 0)
		HT_FAIL("cannot write %s", script);
	snprintf(cmd, sizeof cmd, "sh '%s' '%s' > '%s/openssl.log' 2>&1",
	         script, path, path);
	fill_paths(&g_certs, path);
	g_have_certs = 1;
	start_reaper(path);
	snprintf(buf, sizeof buf, "%d", (int)getpid());
	setenv(ENV_OWNER, buf, 1);
	setenv(ENV_CERTS, path, 1);
	atexit(remove_certs);
	rc = system(cmd);
	if (rc != 0) {
		snprintf(cmd, sizeof cmd, "cat '%s/openssl.log' >&2", path);
		if (system(cmd) != 0)
			rc = -1;
		HT_FAIL("making certificates with openssl failed (%d)", rc);
	}
	ht_note("TLS certificates made in %lld ms (%s)",
	        (long long)(ht_now_ms() - t0), path);
	return &g_certs;
}

/* ---- the REDIS_SERVER wrapper ------------------------------------------ */

/* Where the TLS port and certificate of the server on plain_port are. */
static void port_file(char *buf, size_t len, const char *dir, int plain_port)
{
	snprintf(buf, len, "%s/port-%d", dir, plain_port);
}

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Started as "<exe> --port P ... --dir D ...": run redis-server with the
 * same arguments and a TLS port. The first start of a plain port picks
 * the TLS port and certificate (from the environment) and writes them
 * down; a restart reuses them. */
static void exec_redis(int argc, char **argv, const char *dir)
{
	const char *real = getenv(ENV_REDIS);
	const char *kind_s = getenv(ENV_KIND), *auth_s = getenv(ENV_AUTH);
	char file[400], port_s[16];
	static char ca[TL_PATH_MAX], cert[TL_PATH_MAX], key[TL_PATH_MAX];
	int plain = atoi(argv[2]), tls_port = 0, kind = 0, auth = 0, i, n = 0;
	char **args;
	FILE *f;
	tl_certs t;

	port_file(file, sizeof file, dir, plain);
	f = fopen(file, "r");
	if (f) {
		if (fscanf(f, "%d %d %d", &tls_port, &kind, &auth) != 3)
			tls_port = 0;
		fclose(f);
	}
	if (!tls_port) {
		kind = kind_s ? atoi(kind_s) : 0;
		auth = auth_s ? atoi(auth_s) : 0;
		tls_port = free_port();
		f = fopen(file, "w");
		if (!f || fprintf(f, "%d %d %d\n", tls_port, kind, auth) < 0 ||
		    fclose(f) != 0) {
			fprintf(stderr, "tls_local: cannot write %s\n", file);
			_exit(127);
		}
	}
	if (kind < 0 || kind >= TL_CERT_KINDS)
		kind = 0;
	fill_paths(&t, dir);
	snprintf(ca, sizeof ca, "%s", t.ca_cert);
	snprintf(cert, sizeof cert, "%s", t.server_cert[kind]);
	snprintf(key, sizeof key, "%s", t.server_key[kind]);
	snprintf(port_s, sizeof port_s, "%d", tls_port);
	args = calloc((size_t)argc + 16, sizeof *args);
	if (!args)
		_exit(127);
	if (!real || !*real)
		real = "redis-server";
	args[n++] = (char *)real;
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n++] = "--tls-port";
	args[n++] = port_s;
	args[n++] = "--tls-cert-file";
	args[n++] = cert;
	args[n++] = "--tls-key-file";
	args[n++] = key;
	args[n++] = "--tls-ca-cert-file";
	args[n++] = ca;
	args[n++] = "--tls-auth-clients";
	args[n++] = auth ? "yes" : "no";
	args[n] = NULL;
	execvp(real, args);
	fprintf(stderr, "tls_local: exec %s: %s\n", real, strerror(errno));
	_exit(127);
}

/* Before main: the wrapper execs redis-server; a test makes REDIS_SERVER
 * point at itself. glibc passes argc and argv to constructors. */
__attribute__((constructor(101))) static void tl_init(int argc, char **argv)
{
	const char *dir = getenv(ENV_CERTS), *cur;
	char self[PATH_MAX];
	ssize_t n;
	if (argc > 2 && strcmp(argv[1], "--port") == 0 && dir && *dir)
		exec_redis(argc, argv, dir);
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	cur = getenv("REDIS_SERVER");
	if (cur && *cur && strcmp(cur, self) != 0)
		setenv(ENV_REDIS, cur, 0);
	setenv("REDIS_SERVER", self, 1);
}

ht_redis *tl_redis_start(tl_cert_kind kind, int require_client_cert,
                         const ht_redis_opts *opts)
{
	char buf[16];
	tl_certs_get();
	snprintf(buf, sizeof buf, "%d", (int)kind);
	setenv(ENV_KIND, buf, 1);
	setenv(ENV_AUTH, require_client_cert ? "1" : "0", 1);
	return ht_redis_start(opts);
}

int tl_port_of(int plain_port)
{
	const char *dir = getenv(ENV_CERTS);
	char file[400];
	int tls_port = 0, kind, auth;
	FILE *f;
	if (!dir || !*dir)
		return 0;
	port_file(file, sizeof file, dir, plain_port);
	f = fopen(file, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d %d %d", &tls_port, &kind, &auth) != 3)
		tls_port = 0;
	fclose(f);
	return tls_port;
}

const char *tl_url(const ht_redis *r, char *buf, size_t len)
{
	int p = tl_port_of(r->port);
	if (!p)
		HT_FAIL("server on port %d has no TLS port", r->port);
	snprintf(buf, len, "rediss://127.0.0.1:%d", p);
	return buf;
}

void tl_options(hl_client_options *o)
{
	HT_OK(hl_client_options_init(o, HL_CLIENT_OPTIONS_VERSION));
	o->tls_ca_file = tl_certs_get()->ca_cert;
}
