/*
 * TLS next to the plain port, for the C tests: every redis-server the
 * harness (ht_redis_start) starts in a test linked with tls_local.c also
 * listens on a TLS port, with the certificates of the shared topology
 * harness (ht_tls_make_certs, harness_topo.h).
 *
 * How: REDIS_SERVER points at the test executable itself (a symbolic link
 * to it named hl-tls-redis-server, made with the certificates), which,
 * started under that name as "... --port ...", adds --tls-port and the
 * certificate options and execs redis-server (anything else it execs
 * unchanged). The harness's side channel (raw hiredis, no TLS)
 * keeps the plain port; hilock goes to the TLS one (tl_url). A restart
 * (ht_redis_restart) keeps the TLS port and certificate. harness_topo's
 * ht_redis_start_tls, by contrast, starts a TLS-only server.
 */
#ifndef HILOCK_TEST_TLS_LOCAL_H
#define HILOCK_TEST_TLS_LOCAL_H

#include "harness.h"
#include "harness_topo.h"

/* The process's certificates, made by ht_tls_make_certs on first use. */
const ht_tls_certs *tl_certs_get(void);

/* Start a server with a TLS port (ht_redis_start: plain port too) using
 * the server certificate kind; require_client_cert: tls-auth-clients yes.
 * opts as ht_redis_start's (may be NULL). */
ht_redis *tl_redis_start(ht_cert_kind kind, int require_client_cert,
                         const ht_redis_opts *opts);

/* The TLS port of a server started by the harness in this process (0 when
 * it has none: a server started elsewhere, a proxy). */
int tl_port_of(int plain_port);

/* "rediss://127.0.0.1:<TLS port>" into buf. */
const char *tl_url(const ht_redis *r, char *buf, size_t len);

/* Options trusting the test CA (tls_ca_file), version 2 defaults else. */
void tl_options(hl_client_options *o);

#endif
