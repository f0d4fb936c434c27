/*
 * TLS for the C tests, on top of harness.h (the shared topology harness,
 * harness_topo.h, was not committed when these tests were written; its
 * certificate set has the same shape).
 *
 * - Certificates (tl_certs): a CA, a server certificate of each kind (good,
 *   expired, for another name, from another CA), a client certificate,
 *   made with the openssl command at test time in a temporary directory
 *   removed at exit.
 * - TLS servers: every redis-server the harness starts in a test linked
 *   with tls_local.c listens on a TLS port next to its plain one.
 *   REDIS_SERVER points at the test executable itself, which, started as
 *   "<exe> --port ...", adds --tls-port and the certificates and execs
 *   redis-server. The harness's side channel keeps the plain port; hilock
 *   goes to the TLS one (tl_url). A restart keeps the TLS port and
 *   certificate.
 */
#ifndef HILOCK_TEST_TLS_LOCAL_H
#define HILOCK_TEST_TLS_LOCAL_H

#include "harness.h"

typedef enum tl_cert_kind {
	TL_CERT_GOOD = 0,   /* from the CA; SAN IP:127.0.0.1, DNS:localhost */
	TL_CERT_EXPIRED,    /* the same, valid 2020-01-01 to 2020-02-01 */
	TL_CERT_WRONG_NAME, /* from the CA; SAN DNS:other.example only */
	TL_CERT_UNTRUSTED,  /* the good names, from the other CA */
	TL_CERT_KINDS
} tl_cert_kind;

#define TL_PATH_MAX 320

typedef struct tl_certs {
	char dir[256];
	char ca_cert[TL_PATH_MAX]; /* the CA clients should trust */
	char ca_dir[TL_PATH_MAX];  /* a hashed directory holding only it */
	char other_ca_cert[TL_PATH_MAX];
	char server_cert[TL_CERT_KINDS][TL_PATH_MAX];
	char server_key[TL_CERT_KINDS][TL_PATH_MAX];
	char client_cert[TL_PATH_MAX]; /* from the CA */
	char client_key[TL_PATH_MAX];
	char other_client_cert[TL_PATH_MAX]; /* from the other CA */
	char other_client_key[TL_PATH_MAX];
} tl_certs;

/* The process's certificates (made on first use; fails the test if
 * openssl fails). */
const tl_certs *tl_certs_get(void);

/* Start a server with a TLS port (ht_redis_start: plain port too) using
 * the server certificate kind; require_client_cert: tls-auth-clients yes.
 * opts as ht_redis_start's (may be NULL). */
ht_redis *tl_redis_start(tl_cert_kind kind, int require_client_cert,
                         const ht_redis_opts *opts);

/* The TLS port of a server started by the harness in this process (0 when
 * it has none: a plain server, a proxy). */
int tl_port_of(int plain_port);

/* "rediss://127.0.0.1:<TLS port>" into buf. */
const char *tl_url(const ht_redis *r, char *buf, size_t len);

/* Options trusting the test CA (tls_ca_file), version 2 defaults else. */
void tl_options(hl_client_options *o);

#endif
