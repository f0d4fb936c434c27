/*
 * TLS over OpenSSL (1.1.1 or 3.x): the client context of a configuration
 * and the sessions of its connections. Sockets stay hilock's own: OpenSSL
 * reads and writes them through a small BIO of ours (hl__send(), which
 * uses MSG_NOSIGNAL or its equivalent: a peer that went away must not
 * raise SIGPIPE in the user's process), and never blocks; conn.c waits with
 * poll() within its bound.
 *
 * OpenSSL's error queue is per thread: it is cleared before every SSL call
 * here and after a failure was turned into a message, so no error is
 * blamed on the wrong connection.
 */
#include "transport/tls.h"
#include "transport/transport.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* What conf->tls_ctx points to. */
typedef struct hl_tls_ctx {
	SSL_CTX *ctx;
	BIO_METHOD *bio; /* our socket BIO */
	int verify;
	int have_cert; /* a client certificate was given */
	char *server_name;
} hl_tls_ctx;

struct hl_tls {
	SSL *ssl;
	int fd;
	int eof;       /* the peer closed the socket */
	int done;      /* handshake complete */
	int broken;    /* a fatal error: no close_notify */
	pid_t pid;     /* the process that opened it */
	int have_cert; /* copied from the context, for messages */
	char name[256];
};

/* ---- the socket BIO ----------------------------------------------------- */

static int bio_write(BIO *b, const char *buf, int len)
{
	hl_tls *t = BIO_get_data(b);
	ssize_t n;
	BIO_clear_retry_flags(b);
	do
		n = hl__send(t->fd, buf, (size_t)len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
	hl_tls *t = BIO_get_data(b);
	ssize_t n;
	BIO_clear_retry_flags(b);
	do
		n = recv(t->fd, buf, (size_t)len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	if (n == 0)
		t->eof = 1;
	return (int)n;
}

static int bio_puts(BIO *b, const char *s)
{
	return bio_write(b, s, (int)strlen(s));
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	hl_tls *t = BIO_get_data(b);
	(void)num;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1; /* nothing is buffered here */
	case BIO_CTRL_EOF:
		return t && t->eof;
	case BIO_C_GET_FD:
		if (!t)
			return -1;
		if (ptr)
			*(int *)ptr = t->fd;
		return t->fd;
	default:
		return 0;
	}
}

static BIO_METHOD *bio_method_new(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
	                             "hilock socket");
	if (!m)
		return NULL;
	if (!BIO_meth_set_write(m, bio_write) ||
	    !BIO_meth_set_read(m, bio_read) ||
	    !BIO_meth_set_puts(m, bio_puts) ||
	    !BIO_meth_set_ctrl(m, bio_ctrl)) {
		BIO_meth_free(m);
		return NULL;
	}
	return m;
}

/* ---- messages ----------------------------------------------------------- */

/* OpenSSL's reason for the oldest error in this thread's queue, then the
 * queue cleared: "wrong version number". */
static const char *ssl_reason(char *buf, size_t len, unsigned long *code)
{
	unsigned long e = ERR_peek_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	if (code)
		*code = e;
	if (r)
		snprintf(buf, len, "%s", r);
	else if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "unknown TLS error");
	ERR_clear_error();
	return buf;
}

/* Open path (a file, or a directory when dir) to say clearly when it
 * cannot be read. */
static int check_path(const char *option, const char *path, int dir)
{
	if (dir) {
		DIR *d = opendir(path);
		if (!d)
			return hl__fail(HL_EINVAL,
			                "option %s: cannot read %s: %s", option,
			                path, strerror(errno));
		closedir(d);
	} else {
		struct stat st;
		FILE *f = fopen(path, "r");
		if (!f)
			return hl__fail(HL_EINVAL,
			                "option %s: cannot read %s: %s", option,
			                path, strerror(errno));
		if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
			fclose(f);
			return hl__fail(HL_EINVAL,
			                "option %s: %s is a directory", option,
			                path);
		}
		fclose(f);
	}
	return HL_OK;
}

/* Never prompt on the terminal for a key's passphrase. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* ---- the context of a configuration ------------------------------------- */

void hl__tls_free(hl_conf *conf)
{
	hl_tls_ctx *tc = conf->tls_ctx;
	if (!tc)
		return;
	SSL_CTX_free(tc->ctx);
	if (tc->bio)
		BIO_meth_free(tc->bio);
	free(tc->server_name);
	free(tc);
	conf->tls_ctx = NULL;
}

int hl__tls_init(hl_conf *conf)
{
	const hl_tls_conf *o = &conf->tls;
	hl_tls_ctx *tc;
	char why[256];
	if (!conf->url.tls || conf->tls_ctx)
		return HL_OK;
	if (o->key_file && !o->cert_file)
		return hl__fail(HL_EINVAL, "option tls_key_file is set without "
		                           "tls_cert_file");
	if (o->cert_file && !o->key_file)
		return hl__fail(HL_EINVAL,
		                "option tls_cert_file is set without "
		                "tls_key_file");
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return hl__fail(HL_ENOMEM, "out of memory");
	conf->tls_ctx = tc; /* freed by hl__tls_free on any failure below */
	tc->verify = o->verify;
	tc->have_cert = o->cert_file != NULL;
	if (o->server_name && !(tc->server_name = strdup(o->server_name)))
		return hl__fail(HL_ENOMEM, "out of memory");
	ERR_clear_error();
	tc->ctx = SSL_CTX_new(TLS_client_method());
	tc->bio = bio_method_new();
	if (!tc->ctx || !tc->bio)
		return hl__fail(HL_ENOMEM, "TLS context: %s",
		                ssl_reason(why, sizeof(why), NULL));
	if (!SSL_CTX_set_min_proto_version(tc->ctx, TLS1_2_VERSION))
		return hl__fail(HL_ESYSTEM, "TLS context: %s",
		                ssl_reason(why, sizeof(why), NULL));
	/* SSL_write may return after one record, and our output buffer may
	 * move (grow) between a retried write and the next. */
	SSL_CTX_set_mode(tc->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	                                  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_default_passwd_cb(tc->ctx, no_passphrase);
	SSL_CTX_set_verify(tc->ctx,
	                   o->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);

	if (o->ca_file || o->ca_dir) {
		int rc;
		if ((o->ca_file && (rc = check_path("tls_ca_file", o->ca_file,
		                                    0)) != HL_OK) ||
		    (o->ca_dir &&
		     (rc = check_path("tls_ca_dir", o->ca_dir, 1)) != HL_OK))
			return rc;
		ERR_clear_error();
		if (o->ca_file &&
		    !SSL_CTX_load_verify_locations(tc->ctx, o->ca_file, NULL))
			return hl__fail(HL_EINVAL,
			                "option tls_ca_file: no CA certificate "
			                "could be read from %s (%s)",
			                o->ca_file,
			                ssl_reason(why, sizeof(why), NULL));
		if (o->ca_dir &&
		    !SSL_CTX_load_verify_locations(tc->ctx, NULL, o->ca_dir))
			return hl__fail(HL_EINVAL,
			                "option tls_ca_dir: %s cannot be used "
			                "(%s)",
			                o->ca_dir,
			                ssl_reason(why, sizeof(why), NULL));
	} else if (o->verify) {
		/* The system's store (and SSL_CERT_FILE / SSL_CERT_DIR). */
		ERR_clear_error();
		if (!SSL_CTX_set_default_verify_paths(tc->ctx))
			return hl__fail(HL_ESYSTEM,
			                "TLS: the system's CA certificates "
			                "cannot be loaded (%s)",
			                ssl_reason(why, sizeof(why), NULL));
	}

	if (o->cert_file) {
		int rc;
		if ((rc = check_path("tls_cert_file", o->cert_file, 0)) !=
		            HL_OK ||
		    (rc = check_path("tls_key_file", o->key_file, 0)) != HL_OK)
			return rc;
		ERR_clear_error();
		if (!SSL_CTX_use_certificate_chain_file(tc->ctx, o->cert_file))
			return hl__fail(HL_EINVAL,
			                "option tls_cert_file: no certificate "
			                "could be read from %s (%s)",
			                o->cert_file,
			                ssl_reason(why, sizeof(why), NULL));
		if (!SSL_CTX_use_PrivateKey_file(tc->ctx, o->key_file,
		                                 SSL_FILETYPE_PEM)) {
			/* OpenSSL checks the pair as it loads the key */
			if (ERR_GET_REASON(ERR_peek_last_error()) ==
			    X509_R_KEY_VALUES_MISMATCH) {
				ERR_clear_error();
				return hl__fail(
				        HL_EINVAL,
				        "option tls_key_file: the key in "
				        "%s does not match the certificate "
				        "in %s",
				        o->key_file, o->cert_file);
			}
			return hl__fail(HL_EINVAL,
			                "option tls_key_file: no private key "
			                "could be read from %s (%s; a key "
			                "protected by a passphrase is not "
			                "supported)",
			                o->key_file,
			                ssl_reason(why, sizeof(why), NULL));
		}
		if (!SSL_CTX_check_private_key(tc->ctx))
			return hl__fail(
			        HL_EINVAL,
			        "option tls_key_file: the key in %s does "
			        "not match the certificate in %s (%s)",
			        o->key_file, o->cert_file,
			        ssl_reason(why, sizeof(why), NULL));
	}
	ERR_clear_error();
	return HL_OK;
}

/* ---- sessions ----------------------------------------------------------- */

static int is_ip_literal(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, s, buf) == 1 ||
	       inet_pton(AF_INET6, s, buf) == 1;
}

int hl__tls_new(hl_tls **out, const hl_conf *conf, int fd, const char *host)
{
	const hl_tls_ctx *tc = conf->tls_ctx;
	const char *name;
	char why[256];
	hl_tls *t;
	BIO *bio;
	int ip;
	if (!tc)
		return hl__fail(HL_EINVAL, "TLS is not configured");
	name = tc->server_name ? tc->server_name : host;
	if (strlen(name) >= sizeof(t->name))
		return hl__fail(HL_EINVAL, "TLS server name too long");
	t = calloc(1, sizeof(*t));
	if (!t)
		return hl__fail(HL_ENOMEM, "out of memory");
	t->fd = fd;
	t->pid = getpid();
	t->have_cert = tc->have_cert;
	strcpy(t->name, name);
	ERR_clear_error();
	t->ssl = SSL_new(tc->ctx);
	bio = t->ssl ? BIO_new(tc->bio) : NULL;
	if (!bio) {
		int rc = hl__fail(HL_ENOMEM, "TLS session: %s",
		                  ssl_reason(why, sizeof(why), NULL));
		t->broken = 1;
		hl__tls_close(t);
		return rc;
	}
	BIO_set_data(bio, t);
	BIO_set_init(bio, 1);
	SSL_set_bio(t->ssl, bio, bio); /* the session owns it */
	ip = is_ip_literal(name);
	/* SNI names a host, never an address (RFC 6066). */
	if ((!ip && !SSL_set_tlsext_host_name(t->ssl, name)) ||
	    (tc->verify && !ip && !SSL_set1_host(t->ssl, name)) ||
	    (tc->verify && ip &&
	     !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name))) {
		int rc = hl__fail(HL_EINVAL, "TLS server name \"%s\": %s", name,
		                  ssl_reason(why, sizeof(why), NULL));
		t->broken = 1;
		hl__tls_close(t);
		return rc;
	}
	if (tc->verify && !ip)
		SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_set_connect_state(t->ssl);
	*out = t;
	return HL_OK;
}

/* Why the certificate was refused, with what to check. */
static const char *verify_hint(long v)
{
	switch (v) {
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
		return " (the server's certificate is not signed by a CA of "
		       "tls_ca_file, tls_ca_dir or, without them, the "
		       "system's store)";
	case X509_V_ERR_CERT_HAS_EXPIRED:
	case X509_V_ERR_CERT_NOT_YET_VALID:
		return " (check the server's certificate dates and this "
		       "machine's clock)";
	default:
		return "";
	}
}

/* The message of a failed TLS call (err: SSL_get_error), as "TLS ...". */
static int tls_failure(hl_tls *t, int status, const char *what, int err)
{
	char why[256];
	unsigned long code = 0;
	int reason;
	t->broken = 1;
	if (err == SSL_ERROR_ZERO_RETURN) {
		ERR_clear_error();
		return hl__fail(status, "%s: redis closed the connection",
		                what);
	}
	if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
		int e = errno;
		ERR_clear_error();
		if (t->eof || e == 0 || e == ECONNRESET || e == EPIPE)
			return hl__fail(
			        status, "%s: redis closed the connection%s",
			        what, t->done ? "" : " (not a TLS server?)");
		return hl__fail(status, "%s: %s", what, strerror(e));
	}
	ssl_reason(why, sizeof(why), &code);
	reason = ERR_GET_REASON(code);
	if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		long v = SSL_get_verify_result(t->ssl);
		if (v == X509_V_ERR_HOSTNAME_MISMATCH ||
		    v == X509_V_ERR_IP_ADDRESS_MISMATCH)
			return hl__fail(
			        status,
			        "%s: certificate verify failed: %s (the "
			        "certificate is not for \"%s\"; "
			        "tls_server_name sets the name to check)",
			        what, X509_verify_cert_error_string(v),
			        t->name);
		return hl__fail(status, "%s: certificate verify failed: %s%s",
		                what, X509_verify_cert_error_string(v),
		                verify_hint(v));
	}
	if (reason == SSL_R_WRONG_VERSION_NUMBER ||
	    reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
	    reason == SSL_R_HTTP_REQUEST ||
#ifdef SSL_R_RECORD_LAYER_FAILURE
	    reason == SSL_R_RECORD_LAYER_FAILURE ||
#endif
	    reason == SSL_R_UNKNOWN_PROTOCOL)
		return hl__fail(status,
		                "%s: %s: not a TLS server (a plain port wants "
		                "redis://)",
		                what, why);
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
	if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return hl__fail(status, "%s: redis closed the connection%s",
		                what, t->done ? "" : " (not a TLS server?)");
#endif
	if (!t->have_cert &&
	    (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
	     reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE))
		return hl__fail(status,
		                "%s: %s (the server requires a client "
		                "certificate: set tls_cert_file and "
		                "tls_key_file)",
		                what, why);
	if (t->have_cert && (reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
	                     reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
	                     reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED ||
	                     reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR))
		return hl__fail(status,
		                "%s: %s (the server refused the client "
		                "certificate of tls_cert_file)",
		                what, why);
	return hl__fail(status, "%s: %s", what, why);
}

int hl__tls_handshake(hl_tls *t, short *want)
{
	int r, err;
	ERR_clear_error();
	errno = 0;
	r = SSL_connect(t->ssl);
	if (r == 1) {
		t->done = 1;
		return HL_OK;
	}
	err = SSL_get_error(t->ssl, r);
	if (err == SSL_ERROR_WANT_READ) {
		*want = POLLIN;
		return HL_TLS_AGAIN;
	}
	if (err == SSL_ERROR_WANT_WRITE) {
		*want = POLLOUT;
		return HL_TLS_AGAIN;
	}
	return tls_failure(t, HL_ECONNECT, "TLS handshake", err);
}

int hl__tls_read(hl_tls *t, char *buf, size_t cap, size_t *got, short *want)
{
	size_t n = 0;
	int r, err;
	*got = 0;
	*want = POLLIN;
	ERR_clear_error();
	errno = 0;
	r = SSL_read_ex(t->ssl, buf, cap, &n);
	if (r == 1) {
		*got = n;
		return HL_OK;
	}
	err = SSL_get_error(t->ssl, r);
	if (err == SSL_ERROR_WANT_READ)
		return HL_OK;
	if (err == SSL_ERROR_WANT_WRITE) {
		*want = POLLOUT;
		return HL_OK;
	}
	return tls_failure(t, HL_EIO, "reading from redis", err);
}

int hl__tls_write(hl_tls *t, const char *buf, size_t len, size_t *wrote,
                  short *want)
{
	size_t n = 0;
	int r, err;
	*wrote = 0;
	*want = POLLOUT;
	ERR_clear_error();
	errno = 0;
	r = SSL_write_ex(t->ssl, buf, len, &n);
	if (r == 1) {
		*wrote = n;
		return HL_OK;
	}
	err = SSL_get_error(t->ssl, r);
	if (err == SSL_ERROR_WANT_WRITE)
		return HL_OK;
	if (err == SSL_ERROR_WANT_READ) {
		*want = POLLIN;
		return HL_OK;
	}
	if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 &&
	    (errno == EPIPE || errno == ECONNRESET)) {
		/* The server closed: an alert it sent first (a client
		 * certificate it wants or refuses) says why, and may still be
		 * waiting in the socket. */
		char scratch[256];
		int e = errno;
		ERR_clear_error();
		if (SSL_read_ex(t->ssl, scratch, sizeof(scratch), &n) != 1 &&
		    SSL_get_error(t->ssl, 0) == SSL_ERROR_SSL)
			return tls_failure(t, HL_EIO, "writing to redis",
			                   SSL_ERROR_SSL);
		ERR_clear_error();
		errno = e;
	}
	return tls_failure(t, HL_EIO, "writing to redis", err);
}

size_t hl__tls_pending(const hl_tls *t)
{
	int n = SSL_pending(t->ssl);
	return n > 0 ? (size_t)n : 0;
}

void hl__tls_close(hl_tls *t)
{
	if (!t)
		return;
	if (t->ssl) {
		/* A child after fork() shares the parent's session keys and
		 * sequence numbers: a close_notify from here would end the
		 * parent's connection (and reuse its sequence number). */
		if (t->done && !t->broken && t->pid == getpid()) {
			ERR_clear_error();
			(void)SSL_shutdown(t->ssl); /* one try, never waited */
		} else {
			SSL_set_quiet_shutdown(t->ssl, 1);
		}
		SSL_free(t->ssl);
		ERR_clear_error();
	}
	free(t);
}
