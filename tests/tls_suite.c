/*
 * The single-server suites again, unchanged, over TLS: linked into a copy
 * of a test executable (tests/CMakeLists.txt, the tls.* tests) together
 * with tls_local.c, which gives every server the harness starts a TLS
 * port. hl_client_new is wrapped (ld --wrap) so that a URL naming such a
 * server's plain port goes to its TLS port instead:
 *
 *     redis://[userinfo@]127.0.0.1:<plain>[/db] -> rediss://...:<tls>[/db]
 *
 * Anything else (a proxy, a port nobody listens on, a unix socket) is left
 * alone. The test CA is trusted through the system's default store
 * (SSL_CERT_FILE), so the clients use hilock's default TLS options:
 * verification on, no CA option.
 */
#include "tls_local.h"

#include <stdlib.h>

int __real_hl_client_new(hl_client **out, const char *url,
                         const hl_client_options *opts);
int __wrap_hl_client_new(hl_client **out, const char *url,
                         const hl_client_options *opts);

int __wrap_hl_client_new(hl_client **out, const char *url,
                         const hl_client_options *opts)
{
	static const char host[] = "127.0.0.1:";
	static int noted;
	char tls_url[1024];
	const char *p, *at, *end, *h;
	int port, tls_port;

	if (!url || strncmp(url, "redis://", 8) != 0 ||
	    strlen(url) >= sizeof tls_url - 8)
		return __real_hl_client_new(out, url, opts);
	p = url + 8;
	end = p + strcspn(p, "/");
	at = NULL;
	for (h = p; h < end; h++)
		if (*h == '@')
			at = h;
	h = at ? at + 1 : p;
	if (strncmp(h, host, sizeof host - 1) != 0)
		return __real_hl_client_new(out, url, opts);
	port = atoi(h + sizeof host - 1);
	tls_port = port > 0 ? tl_port_of(port) : 0;
	if (!tls_port)
		return __real_hl_client_new(out, url, opts);
	snprintf(tls_url, sizeof tls_url, "rediss://%.*s%s%d%s", (int)(h - p),
	         p, host, tls_port, end);
	if (!noted++)
		ht_note("over TLS: port %d -> rediss://127.0.0.1:%d", port,
		        tls_port);
	return __real_hl_client_new(out, tls_url, opts);
}

/* After tls_local.c's constructor: the certificates before any server,
 * and the test CA as the system's. */
__attribute__((constructor(102))) static void tls_suite_init(int argc,
                                                             char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--list") == 0))
		return;
	setenv("SSL_CERT_FILE", tl_certs_get()->ca_cert, 1);
	unsetenv("SSL_CERT_DIR");
}
