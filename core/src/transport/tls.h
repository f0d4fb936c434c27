/*
 * TLS over OpenSSL, for conn.c only (private to transport/). One SSL_CTX
 * per client configuration (hl__tls_init, declared in transport.h), one
 * hl_tls per connection. Every function here is non-blocking: it says
 * which poll() event it needs next, and conn.c does the waiting within
 * its bound. Failures are recorded (hl__fail) with OpenSSL's reason.
 */
#ifndef HL_TRANSPORT_TLS_H
#define HL_TRANSPORT_TLS_H

#include "base/base.h"

#include <stddef.h>

typedef struct hl_tls hl_tls;

/* Returned by hl__tls_handshake when it must wait for *want. */
#define HL_TLS_AGAIN 1

/* A TLS session over the connected socket fd (not taken: the caller
 * closes it) to the node host (the certificate must carry
 * conf->tls.server_name, or else host: as an IP address when it is one).
 * conf must have been through hl__tls_init. */
int hl__tls_new(hl_tls **out, const hl_conf *conf, int fd, const char *host);
/* Advance the handshake: HL_OK when done, HL_TLS_AGAIN (wait for *want:
 * POLLIN or POLLOUT), or HL_ECONNECT with what went wrong (certificate,
 * name, protocol, a closed connection). */
int hl__tls_handshake(hl_tls *t, short *want);
/* Read up to cap bytes of application data: HL_OK with *got > 0, or with
 * *got = 0 and *want the event to wait for (only TLS records arrived, or
 * nothing); HL_EIO when the connection failed or was closed (*closed = 1
 * for a close by the peer). */
int hl__tls_read(hl_tls *t, char *buf, size_t cap, size_t *got, short *want);
/* Write up to len bytes: HL_OK with *wrote (0: wait for *want), or HL_EIO.
 * After a 0, call again with the same bytes first (more may follow). */
int hl__tls_write(hl_tls *t, const char *buf, size_t len, size_t *wrote,
                  short *want);
/* Decrypted bytes OpenSSL holds that poll() cannot see. */
size_t hl__tls_pending(const hl_tls *t);
/* Free the session. A healthy session opened by this process says
 * goodbye (close_notify, never waited for); a broken one, or one inherited
 * across fork(), is freed silently: the parent's session is not ours to
 * close. */
void hl__tls_close(hl_tls *t);

#endif
