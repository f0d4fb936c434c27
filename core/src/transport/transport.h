/*
 * transport/: hilock's own connections. The only layer that includes
 * hiredis (as a RESP reader; commands are formatted by resp.c); above it,
 * replies are hl_reply views and connections are opaque.
 */
#ifndef HL_TRANSPORT_H
#define HL_TRANSPORT_H

#include "base/base.h"

/* ---- replies ---------------------------------------------------------------
 * A reply from Redis, owned by whoever received it (hl__reply_free). The
 * accessors never fail: a wrong type reads as 0, "" or no elements. */
typedef struct hl_reply hl_reply;
enum {
	HL_REPLY_STRING = 1,
	HL_REPLY_ARRAY = 2,
	HL_REPLY_INTEGER = 3,
	HL_REPLY_NIL = 4,
	HL_REPLY_STATUS = 5,
	HL_REPLY_ERROR = 6
};
int hl__reply_type(const hl_reply *r);
long long hl__reply_int(const hl_reply *r);
/* The bytes of a string, status or error reply (NUL-terminated). */
const char *hl__reply_str(const hl_reply *r);
size_t hl__reply_strlen(const hl_reply *r);
/* The elements of an array reply. */
size_t hl__reply_len(const hl_reply *r);
const hl_reply *hl__reply_at(const hl_reply *r, size_t i);
void hl__reply_free(hl_reply *r);

/* ---- commands as RESP (resp.c) ---------------------------------------------
 * hl__resp_write formats argv as a RESP array of bulk strings at out, which
 * has room for hl__resp_bound(argc, lens) bytes (0: too large to format),
 * and returns the length written: the bytes redisFormatCommandArgv makes. */
size_t hl__resp_bound(int argc, const size_t *lens);
size_t hl__resp_write(char *out, int argc, const char **argv,
                      const size_t *lens);

/* ---- TLS (tls.c) -----------------------------------------------------------
 * The TLS context of a configuration whose URL is a rediss one: TLS 1.2 or
 * later, the CA file or directory (else the system's store), the client
 * certificate and key. Made once per client (conf_init), freed with it.
 * HL_EINVAL names an option and its file when one cannot be used. Nothing
 * for a plain URL. */
int hl__tls_init(hl_conf *conf);
void hl__tls_free(hl_conf *conf);

/* ---- connections ----------------------------------------------------------
 */
/* One connection: a socket, hiredis's reply reader, a buffer
 * of formatted commands not yet written. */
typedef struct hl_conn hl_conn;

/* Connect and run the handshake (AUTH, SELECT, CLIENT SETNAME, CLIENT
 * INFO), within the connect and command timeouts and the bound. */
enum { HL_CONN_DATA = 0, HL_CONN_SENTINEL = 1 };
/* kind: a data node (the URL's credentials, SELECT, SETNAME) or a
 * sentinel (the sentinel credentials). */
int hl__conn_open(hl_conn **out, const hl_conf *conf, const hl_addr *addr,
                  int kind, const hl_bound *b);
void hl__conn_free(hl_conn *conn);

/* How a failed round trip ended, for the retry policy. */
enum hl_sent {
	HL_SENT_NOTHING = 0, /* nothing reached Redis: safe to retry */
	HL_SENT_MAYBE = 1    /* the command may have run */
};

/* Send ncmd commands pipelined (each given as its argv) and read their
 * replies, within timeout_ms and the bound. On failure replies[] holds what
 * was read (others NULL), *sent says whether a command may have run, and
 * the connection is unusable. Fails with HL_EIO (network, or no reply in
 * time), or the bound's status. */
int hl__conn_roundtrip(hl_conn *conn, int ncmd, const int *argcs,
                       const char **const *argvs, const size_t *const *lens,
                       hl_reply **replies, enum hl_sent *sent,
                       const hl_bound *b, int64_t timeout_ms);
/* Lower-level I/O for the subscriber, which never blocks on the socket:
 * queue a command; write what the socket takes now (*wrote = 1 if any);
 * read what has arrived; take the next whole reply (NULL: none yet). */
int hl__conn_append(hl_conn *conn, int argc, const char **argv,
                    const size_t *lens);
int hl__conn_write_some(hl_conn *conn, int *wrote);
int hl__conn_read_some(hl_conn *conn);
int hl__conn_next_reply(hl_conn *conn, hl_reply **out);
/* For a pipeline that does not wait for its replies (the watchdog): write
 * what is queued and read what has come, waiting at most timeout_ms for
 * the socket (to take the output, or to bring data) or for wake_fd (-1:
 * none) to be readable. HL_OK (replies, if any, for hl__conn_next_reply),
 * or HL_EIO when the connection is closed or broken. */
int hl__conn_pump(hl_conn *conn, int wake_fd, int64_t timeout_ms);
/* The same for n connections at once: rcs[i] gets each one's status (the
 * call fails only for poll itself, or memory). */
int hl__conn_pump_n(hl_conn **conns, int *rcs, int n, int wake_fd,
                    int64_t timeout_ms);
/* 1 if an idle connection has something to read: closed or broken. */
int hl__conn_dead(hl_conn *conn);

/* Its socket, for poll(). */
int hl__conn_fd(const hl_conn *conn);
/* 1 if queued commands wait for the socket to take them. */
int hl__conn_pending_output(const hl_conn *conn);
/* When data last arrived (monotonic ms). */
int64_t hl__conn_last_read(const hl_conn *conn);
/* How many reads brought data on conn (ever): a change tells that Redis
 * sent something. */
uint64_t hl__conn_reads(const hl_conn *conn);
/* This connection as the server knows it (CLIENT INFO): its id (-1 if
 * unknown) and, in *addr, its address as the server sees it. */
long long hl__conn_server_id(const hl_conn *conn, const char **addr);

#endif
