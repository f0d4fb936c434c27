/*
 * The URL names the server(s) and picks the topology.
 *
 * One server:
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://[[user]:password@]host[:port][/db]        (TLS)
 *   unix://[[user]:password@]/path/to/redis.sock[?db=N]
 *
 * Sentinel: the hosts are the sentinels (port 26379 by default); the name
 * of the master they monitor is required, in the path or, as Lettuce
 * writes it, in the fragment:
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master-name[/db]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]#master-name
 *   rediss-sentinel://...                               (TLS)
 * The user and password are those of the data nodes (the master and its
 * replicas); the sentinels' own come from the options (sentinel_user,
 * sentinel_password).
 *
 * Redis Cluster: any of its nodes as seeds (port 6379 by default); one
 * that answers is enough to learn the others. Cluster has only database 0.
 *   redis-cluster://[[user]:password@]host[:port][,host[:port]...][/0]
 *   rediss-cluster://...                                (TLS)
 *
 * A master and its replicas, without Sentinel (port 6379 by default); the
 * first host is the master, the others are its replicas:
 *   redis-replica://[[user]:password@]master[:port][,replica[:port]...][/db]
 *   rediss-replica://...                                (TLS)
 *
 * host: a name, an IPv4 address, or an IPv6 address in brackets ([::1],
 * [::1]:6380). At most 64 hosts; no empty one (h1,,h2). port: 1-65535.
 * db: 0-1000000 (default 0). The scheme is case-insensitive.
 *
 * "user:password@" authenticates as an ACL user (AUTH user password);
 * ":password@" or "password@" as the default user (AUTH password). The
 * user, password, host, path and master name are percent-decoded: write
 * '%', '@', ':', '/', '?', '#', ',', '[' and ']' in them as %XX (%25,
 * %40, %3A, %2F, %3F, %23, %2C, %5B, %5D); %00 is refused. No query string
 * (?...) is understood but unix://'s ?db=N, no fragment (#...) but the
 * sentinel's #master-name. Messages quote the URL with the password
 * replaced by ***.
 */
#include "base/base.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decode [s, s+len) into out (cap bytes, NUL-terminated). 0, -1 on
 * a bad escape or a %00 (a C string would end there), -2 if it does not
 * fit. */
static int decode_into(char *out, size_t cap, const char *s, size_t len)
{
	size_t i, o = 0;
	for (i = 0; i < len; i++) {
		int ch = (unsigned char)s[i];
		if (ch == '%') {
			int hi, lo;
			if (i + 2 >= len)
				return -1;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			ch = hi * 16 + lo;
			i += 2;
		}
		if (o + 1 >= cap)
			return -2;
		out[o++] = (char)ch;
	}
	out[o] = '\0';
	return 0;
}

/* Percent-decode [s, s+len) into a new string; NULL on a bad escape (or
 * out of memory: *nomem set). */
static char *decode(const char *s, size_t len, int *nomem)
{
	char *out = malloc(len + 1);
	if (!out) {
		*nomem = 1;
		return NULL;
	}
	if (decode_into(out, len + 1, s, len) != 0) {
		/* it may be part of a password */
		volatile char *v = out;
		size_t i;
		for (i = 0; i <= len; i++)
			v[i] = 0;
		free(out);
		return NULL;
	}
	return out;
}

/* A whole decimal number in [lo, hi]; -1 otherwise. */
static long parse_num(const char *s, size_t len, long lo, long hi)
{
	long v = 0;
	size_t i;
	if (len == 0 || len > 9)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return (v < lo || v > hi) ? -1 : v;
}

/* Writes url into out (cap bytes, truncated) as messages may quote it: with
 * the password masked. The user info is what precedes the LAST '@' after
 * the scheme (the parser takes the last '@' before the path; a password
 * with an unescaped '/' or '@' must not leak either, so any '@' counts):
 * "user:***@" keeps the user, a lone token (taken as the password) becomes
 * "***@". Over-masking a path or a master name with an '@' is harmless;
 * leaking is not. The same for every scheme: the user info always follows
 * "://". */
static void mask_url(char *out, size_t cap, const char *url)
{
	const char *s = strstr(url, "://"), *at, *colon;
	s = s ? s + 3 : url;
	at = strrchr(s, '@');
	if (!at) {
		snprintf(out, cap, "%s", url);
		return;
	}
	colon = memchr(s, ':', (size_t)(at - s));
	if (colon)
		snprintf(out, cap, "%.*s***%s", (int)(colon + 1 - url), url,
		         at);
	else
		snprintf(out, cap, "%.*s***%s", (int)(s - url), url, at);
}

/* Fail with "bad url "<url, password masked>": <why>". The why never
 * quotes a piece of the URL: with an unescaped '/' in a password, what the
 * parser takes for a host may be part of the password. */
static int bad(hl_url *u, const char *url, const char *fmt, ...)
        HL_PRINTF(3, 4);
static int bad(hl_url *u, const char *url, const char *fmt, ...)
{
	char shown[320], why[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	hl__url_clear(u);
	mask_url(shown, sizeof shown, url);
	return hl__fail(HL_EINVAL, "bad url \"%s\": %s", shown, why);
}

static int nomem(hl_url *u)
{
	hl__url_clear(u);
	return hl__fail(HL_ENOMEM, "out of memory");
}

/* The schemes: topology, TLS, default port, one host or a list. */
static const struct scheme {
	const char *name;
	int topology, tls, port, list, is_unix;
} schemes[] = {
        {"redis", HL_TOPO_SINGLE, 0, 6379, 0, 0},
        {"rediss", HL_TOPO_SINGLE, 1, 6379, 0, 0},
        {"unix", HL_TOPO_SINGLE, 0, 0, 0, 1},
        {"redis-sentinel", HL_TOPO_SENTINEL, 0, 26379, 1, 0},
        {"rediss-sentinel", HL_TOPO_SENTINEL, 1, 26379, 1, 0},
        {"redis-cluster", HL_TOPO_CLUSTER, 0, 6379, 1, 0},
        {"rediss-cluster", HL_TOPO_CLUSTER, 1, 6379, 1, 0},
        {"redis-replica", HL_TOPO_REPLICA, 0, 6379, 1, 0},
        {"rediss-replica", HL_TOPO_REPLICA, 1, 6379, 1, 0},
};

#define SCHEMES                                                                \
	"redis://, rediss://, unix://, redis-sentinel://, "                    \
	"rediss-sentinel://, redis-cluster://, rediss-cluster://, "            \
	"redis-replica:// or rediss-replica://"

static const struct scheme *find_scheme(const char *url, const char **rest)
{
	const char *sep = strstr(url, "://");
	size_t i, len, k;
	if (!sep)
		return NULL;
	len = (size_t)(sep - url);
	for (i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
		const char *n = schemes[i].name;
		if (strlen(n) != len)
			continue;
		for (k = 0; k < len; k++)
			if (tolower((unsigned char)url[k]) != n[k])
				break;
		if (k == len) {
			*rest = sep + 3;
			return &schemes[i];
		}
	}
	return NULL;
}

/* userinfo "[user]:password" or "password": Redis URLs use user:password; a
 * lone token before @ is taken as the password (as redis-cli and most
 * clients do). */
static int parse_userinfo(hl_url *u, const char *s, size_t len, int *nomem_)
{
	const char *colon = memchr(s, ':', len);
	if (colon) {
		size_t ulen = (size_t)(colon - s);
		if (ulen > 0) {
			u->user = decode(s, ulen, nomem_);
			if (!u->user)
				return -1;
		}
		u->password = decode(colon + 1, len - ulen - 1, nomem_);
	} else {
		u->password = decode(s, len, nomem_);
	}
	return u->password ? 0 : -1;
}

/* " (host N)" for a list, "" for one host: which element a message is
 * about, without quoting it. */
static const char *which(char *buf, size_t len, int list, int i)
{
	if (list)
		snprintf(buf, len, " (host %d of the list)", i + 1);
	else
		buf[0] = '\0';
	return buf;
}

/* One element host[:port] or [ipv6][:port] of [s, e) into a. */
static int parse_host(hl_url *u, const char *url, hl_addr *a, const char *s,
                      const char *e, int dflt_port, int list, int i)
{
	const char *colon = NULL, *hs, *he;
	char w[40];
	int rc;
	which(w, sizeof w, list, i);
	if (*s == '[') { /* [ipv6]:port */
		const char *rb = memchr(s, ']', (size_t)(e - s));
		if (!rb)
			return bad(u, url, "unclosed '[' in host%s", w);
		hs = s + 1;
		he = rb;
		if (rb + 1 < e && rb[1] == ':')
			colon = rb + 1;
		else if (rb + 1 != e)
			return bad(u, url, "junk after ']'%s", w);
		if (hs == he)
			return bad(u, url, "missing host%s", w);
	} else {
		colon = memchr(s, ':', (size_t)(e - s));
		hs = s;
		he = colon ? colon : e;
		if (colon && memchr(colon + 1, ':', (size_t)(e - colon - 1)))
			return bad(u, url,
			           "an IPv6 address goes in brackets: "
			           "[::1]:6379%s",
			           w);
	}
	if (hs == he)
		return bad(u, url, "missing host%s", w);
	rc = decode_into(a->host, sizeof a->host, hs, (size_t)(he - hs));
	if (rc == -1)
		return bad(u, url, "bad percent-escape in host%s", w);
	if (rc == -2)
		return bad(u, url, "host name too long%s", w);
	a->port = dflt_port;
	if (colon) {
		long pnum =
		        parse_num(colon + 1, (size_t)(e - colon - 1), 1, 65535);
		if (pnum < 0)
			return bad(u, url, "port must be 1-65535%s", w);
		a->port = (int)pnum;
	}
	return HL_OK;
}

/* The host list [s, e): comma-separated elements into u->hosts. */
static int parse_hosts(hl_url *u, const char *url, const char *s, const char *e,
                       const struct scheme *sc)
{
	const char *q;
	int n = 1, i, rc;
	if (s == e)
		return bad(u, url, "missing host");
	for (q = s; q < e; q++)
		if (*q == ',')
			n++;
	if (n > 1 && !sc->list)
		return bad(u, url,
		           "%s:// takes one host; several are for "
		           "redis-sentinel://, redis-cluster:// and "
		           "redis-replica://",
		           sc->name);
	if (n > HL_URL_MAX_HOSTS)
		return bad(u, url, "%d hosts: at most %d", n, HL_URL_MAX_HOSTS);
	u->hosts = calloc((size_t)n, sizeof(*u->hosts));
	if (!u->hosts)
		return nomem(u);
	u->nhosts = n;
	for (i = 0; i < n; i++) {
		const char *c = memchr(s, ',', (size_t)(e - s));
		const char *ee = c ? c : e;
		if (s == ee)
			return bad(u, url, "empty host in the list (host %d)",
			           i + 1);
		rc = parse_host(u, url, &u->hosts[i], s, ee, sc->port, sc->list,
		                i);
		if (rc != HL_OK)
			return rc;
		s = ee + 1;
	}
	return HL_OK;
}

static int parse_unix(hl_url *u, const char *url, const char *p)
{
	const char *q = strchr(p, '?');
	size_t plen = q ? (size_t)(q - p) : strlen(p);
	int rc;
	if (plen == 0 || p[0] != '/')
		return bad(u, url, "unix socket path must be absolute");
	u->hosts = calloc(1, sizeof(*u->hosts));
	if (!u->hosts)
		return nomem(u);
	u->nhosts = 1;
	rc = decode_into(u->hosts[0].path, sizeof u->hosts[0].path, p, plen);
	if (rc == -1)
		return bad(u, url, "bad percent-escape in path");
	if (rc == -2)
		return bad(u, url, "unix socket path too long");
	if (q) {
		long db;
		if (strncmp(q, "?db=", 4) != 0)
			return bad(u, url,
			           "the only query string understood is ?db=N");
		db = parse_num(q + 4, strlen(q + 4), 0, 1000000);
		if (db < 0)
			return bad(u, url, "db must be a number");
		u->db = (int)db;
	}
	return HL_OK;
}

/* The database of [s, e) (after the '/'; empty: 0). */
static int parse_db(hl_url *u, const char *url, const char *s, const char *e)
{
	long db;
	if (s == e)
		return HL_OK;
	db = parse_num(s, (size_t)(e - s), 0, 1000000);
	if (db < 0)
		return bad(u, url, "database must be a number");
	u->db = (int)db;
	return HL_OK;
}

/* The sentinel's path [s, e) ("/master[/db]", or "[/db]" with a fragment
 * frag (after the '#'; NULL: none) naming the master). */
static int parse_sentinel_path(hl_url *u, const char *url, const char *s,
                               const char *e, const char *frag)
{
	const char *ms, *me;
	int nomem_ = 0;
	if (frag) {
		if (!*frag)
			return bad(u, url, "empty master name after '#'");
		if (s < e) { /* s is the '/' */
			for (ms = s + 1; ms < e; ms++)
				if (!isdigit((unsigned char)*ms))
					return bad(
					        u, url,
					        "with a #master-name the path "
					        "holds only the database (/N)");
			if (parse_db(u, url, s + 1, e) != HL_OK)
				return HL_EINVAL;
		}
		ms = frag;
		me = frag + strlen(frag);
	} else {
		const char *slash2;
		if (s == e || s + 1 == e || s[1] == '/')
			return bad(u, url,
			           "missing the master's name: write it after "
			           "the sentinels (.../master-name[/db]) or as "
			           "a fragment (#master-name)");
		ms = s + 1;
		slash2 = memchr(ms, '/', (size_t)(e - ms));
		me = slash2 ? slash2 : e;
		if (slash2 && parse_db(u, url, slash2 + 1, e) != HL_OK)
			return HL_EINVAL;
	}
	u->master_name = decode(ms, (size_t)(me - ms), &nomem_);
	if (!u->master_name)
		return nomem_ ? nomem(u)
		              : bad(u, url,
		                    "bad percent-escape in the master's name");
	return HL_OK;
}

/* After "a query string is not supported": where the database goes. */
static const char *const query_hint[] = {
        [HL_TOPO_SINGLE] = " (the database goes in the path: "
                           "redis://host:port/N)",
        [HL_TOPO_SENTINEL] = " (the database goes in the path: "
                             "redis-sentinel://host:port/master-name/N)",
        [HL_TOPO_CLUSTER] = "",
        [HL_TOPO_REPLICA] = " (the database goes in the path: "
                            "redis-replica://master:port,replica:port/N)",
};

int hl__url_parse(hl_url *u, const char *url)
{
	const struct scheme *sc;
	const char *p, *end, *lim, *q, *at = NULL, *frag = NULL, *slash;
	int nomem_ = 0, rc;
	memset(u, 0, sizeof(*u));
	if (!url)
		return hl__fail(HL_EINVAL, "url is NULL");
	sc = find_scheme(url, &p);
	if (!sc)
		return bad(u, url, "expected " SCHEMES);
	u->topology = sc->topology;
	u->tls = sc->tls;
	end = p + strlen(p);
	/* The user info ends at the last '@' before the path (unix: before
	 * the end), so an unescaped '@', '?' or '#' in a password still
	 * works; one in a path or a master name must be escaped. */
	lim = sc->is_unix ? NULL : memchr(p, '/', (size_t)(end - p));
	if (!lim)
		lim = end;
	for (q = p; q < lim; q++)
		if (*q == '@')
			at = q;
	if (at) {
		if (parse_userinfo(u, p, (size_t)(at - p), &nomem_) != 0)
			return nomem_ ? nomem(u)
			              : bad(u, url,
			                    "bad percent-escape in user info");
		p = at + 1;
	}
	if (sc->is_unix)
		return parse_unix(u, url, p);
	q = strpbrk(p, "?#");
	if (q && *q == '#' && sc->topology == HL_TOPO_SENTINEL) {
		frag = q + 1;
		end = q;
		q = strchr(frag, '?');
	}
	if (q && *q == '?')
		return bad(u, url,
		           "a query string is not supported in %s:// urls%s",
		           sc->name, query_hint[sc->topology]);
	if (q)
		return bad(u, url, "a fragment (#...) is not supported");
	slash = memchr(p, '/', (size_t)(end - p));
	rc = parse_hosts(u, url, p, slash ? slash : end, sc);
	if (rc != HL_OK)
		return rc;
	if (sc->topology == HL_TOPO_SENTINEL)
		return parse_sentinel_path(u, url, slash ? slash : end, end,
		                           frag);
	if (slash && parse_db(u, url, slash + 1, end) != HL_OK)
		return HL_EINVAL;
	if (sc->topology == HL_TOPO_CLUSTER && u->db != 0)
		return bad(u, url,
		           "Redis Cluster has only database 0 (drop the /%d)",
		           u->db);
	return HL_OK;
}

void hl__url_clear(hl_url *u)
{
	free(u->hosts);
	free(u->master_name);
	free(u->user);
	if (u->password) {
		volatile char *v = u->password;
		while (*v)
			*v++ = 0;
	}
	free(u->password);
	memset(u, 0, sizeof(*u));
}

const char *hl__addr_str(const hl_addr *a, char *buf, size_t len)
{
	if (a->path[0])
		snprintf(buf, len, "%s", a->path);
	else if (strchr(a->host, ':'))
		snprintf(buf, len, "[%s]:%d", a->host, a->port);
	else
		snprintf(buf, len, "%s:%d", a->host, a->port);
	return buf;
}

char *hl__url_safe(const char *url)
{
	size_t cap = strlen(url) + 8;
	char *out = malloc(cap);
	if (out)
		mask_url(out, cap, url);
	return out;
}

int hl__addr_eq(const hl_addr *a, const hl_addr *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0 &&
	       strcmp(a->path, b->path) == 0;
}
