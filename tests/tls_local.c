/*
 * TLS next to the plain port on the harness's servers (see tls_local.h).
 */
#include "tls_local.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the REDIS_SERVER wrapper reads from its environment. */
#define ENV_DIR   "HILOCK_TL_DIR"   /* where the port files go */
#define ENV_REDIS "HILOCK_TL_REDIS" /* the real redis-server */
#define ENV_CERT  "HILOCK_TL_CERT"  /* next server: certificate, key, CA */
#define ENV_KEY   "HILOCK_TL_KEY"
#define ENV_CA    "HILOCK_TL_CA"
#define ENV_AUTH  "HILOCK_TL_AUTH" /* next server: tls-auth-clients */

/* The name REDIS_SERVER calls this executable by: a symbolic link to it
 * in the certificate directory. Started under that name it is the
 * wrapper, whatever its arguments. */
#define WRAPPER_NAME "hl-tls-redis-server"

static const ht_tls_certs *g_certs;

/* The next server's certificate and tls-auth-clients. */
static void next_server(ht_cert_kind kind, int auth)
{
	setenv(ENV_CERT, g_certs->server_cert[kind], 1);
	setenv(ENV_KEY, g_certs->server_key[kind], 1);
	setenv(ENV_CA, g_certs->ca_cert, 1);
	setenv(ENV_AUTH, auth ? "1" : "0", 1);
}

const ht_tls_certs *tl_certs_get(void)
{
	char self[PATH_MAX], link[PATH_MAX];
	const char *cur;
	ssize_t n;
	if (g_certs)
		return g_certs;
	/* a server without TLS: every case here skips, saying why */
	ht_require_tls();
	g_certs = ht_tls_make_certs(NULL);
	setenv(ENV_DIR, g_certs->dir, 1);
	next_server(HT_CERT_GOOD, 0);
	/* REDIS_SERVER: this executable under the wrapper's name */
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		HT_FAIL("readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	snprintf(link, sizeof link, "%s/" WRAPPER_NAME, g_certs->dir);
	if (symlink(self, link) != 0)
		HT_FAIL("symlink %s: %s", link, strerror(errno));
	cur = getenv("REDIS_SERVER");
	if (cur && *cur)
		setenv(ENV_REDIS, cur, 1);
	setenv("REDIS_SERVER", link, 1);
	return g_certs;
}

/* ---- the REDIS_SERVER wrapper ------------------------------------------ */

/* "<dir>/port-<plain>": the TLS port, tls-auth-clients, certificate, key
 * and CA of the server on that plain port, one per line. */
static void port_file(char *buf, size_t len, const char *dir, int plain_port)
{
	snprintf(buf, len, "%s/port-%d", dir, plain_port);
}

typedef struct tl_server {
	int port, auth;
	char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX];
} tl_server;

static int read_line(FILE *f, char *buf, size_t len)
{
	size_t n;
	if (!fgets(buf, (int)len, f))
		return -1;
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n ? 0 : -1;
}

static int read_server(const char *dir, int plain_port, tl_server *s)
{
	char file[PATH_MAX], line[32];
	FILE *f;
	int rc = -1;
	port_file(file, sizeof file, dir, plain_port);
	f = fopen(file, "r");
	if (!f)
		return -1;
	if (read_line(f, line, sizeof line) == 0) {
		s->port = atoi(line);
		if (read_line(f, line, sizeof line) == 0) {
			s->auth = atoi(line);
			if (read_line(f, s->cert, sizeof s->cert) == 0 &&
			    read_line(f, s->key, sizeof s->key) == 0 &&
			    read_line(f, s->ca, sizeof s->ca) == 0 &&
			    s->port > 0)
				rc = 0;
		}
	}
	fclose(f);
	return rc;
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

static const char *env_or_die(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		fprintf(stderr, "tls_local: %s is not set\n", name);
		_exit(127);
	}
	return v;
}

/* Started as "<exe> --port P ..." (harness.c's servers): run
 * redis-server with the same arguments and a TLS port. The first start on
 * a plain port picks the TLS port and takes the certificate from the
 * environment, and writes them down; a restart reuses them. Any other
 * start (harness_topo's nodes: a config file) runs redis-server as it
 * is. */
static void exec_redis(int argc, char **argv, const char *dir)
{
	const char *real = getenv(ENV_REDIS);
	static tl_server s;
	char port_s[16], file[PATH_MAX];
	int plain, i, n = 0;
	char **args;

	if (!real || !*real)
		real = "redis-server";
	if (argc < 3 || strcmp(argv[1], "--port") != 0) {
		argv[0] = (char *)real;
		execvp(real, argv);
		fprintf(stderr, "tls_local: exec %s: %s\n", real,
		        strerror(errno));
		_exit(127);
	}
	plain = atoi(argv[2]);
	if (read_server(dir, plain, &s) != 0) {
		FILE *f;
		s.port = free_port();
		s.auth = atoi(env_or_die(ENV_AUTH));
		snprintf(s.cert, sizeof s.cert, "%s", env_or_die(ENV_CERT));
		snprintf(s.key, sizeof s.key, "%s", env_or_die(ENV_KEY));
		snprintf(s.ca, sizeof s.ca, "%s", env_or_die(ENV_CA));
		port_file(file, sizeof file, dir, plain);
		f = fopen(file, "w");
		if (!f ||
		    fprintf(f, "%d\n%d\n%s\n%s\n%s\n", s.port, s.auth, s.cert,
		            s.key, s.ca) < 0 ||
		    fclose(f) != 0) {
			fprintf(stderr, "tls_local: cannot write %s\n", file);
			_exit(127);
		}
	}
	snprintf(port_s, sizeof port_s, "%d", s.port);
	args = calloc((size_t)argc + 16, sizeof *args);
	if (!args)
		_exit(127);
	args[n++] = (char *)real;
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n++] = "--tls-port";
	args[n++] = port_s;
	args[n++] = "--tls-cert-file";
	args[n++] = s.cert;
	args[n++] = "--tls-key-file";
	args[n++] = s.key;
	args[n++] = "--tls-ca-cert-file";
	args[n++] = s.ca;
	args[n++] = "--tls-auth-clients";
	args[n++] = s.auth ? "yes" : "no";
	args[n] = NULL;
	execvp(real, args);
	fprintf(stderr, "tls_local: exec %s: %s\n", real, strerror(errno));
	_exit(127);
}

/* Before main: under the wrapper's name, exec redis-server. glibc passes
 * argc and argv to constructors. */
__attribute__((constructor(101))) static void tl_init(int argc, char **argv)
{
	const char *dir = getenv(ENV_DIR), *base;
	if (argc < 1 || !dir || !*dir)
		return;
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, WRAPPER_NAME) == 0)
		exec_redis(argc, argv, dir);
}

ht_redis *tl_redis_start(ht_cert_kind kind, int require_client_cert,
                         const ht_redis_opts *opts)
{
	tl_certs_get();
	next_server(kind, require_client_cert);
	return ht_redis_start(opts);
}

int tl_port_of(int plain_port)
{
	const char *dir = getenv(ENV_DIR);
	tl_server s;
	if (!dir || !*dir || read_server(dir, plain_port, &s) != 0)
		return 0;
	return s.port;
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
