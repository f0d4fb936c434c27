/* redis://[[user]:password@]host[:port][/db] and
 * unix://[[user]:password@]/path[?db=N] */
#include "base/base.h"

#include <ctype.h>
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

/* Percent-decode [s, s+len) into a new string; NULL on bad escapes. */
static char *decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	size_t i;
	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '%') {
			int hi, lo;
			if (i + 2 >= len)
				goto bad;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
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
 * "***@". Over-masking a path with an '@' is harmless; leaking is not. */
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

static int bad(hl_url *u, const char *url, const char *why)
{
	char shown[200];
	hl__url_clear(u);
	mask_url(shown, sizeof shown, url);
	return hl__fail(HL_EINVAL, "bad url \"%s\": %s", shown, why);
}

/* userinfo "[user]:password" or "password"-less "user"? Redis URLs use
 * user:password; a lone token before @ is taken as the password (as
 * redis-cli and most clients do). */
static int parse_userinfo(hl_url *u, const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	if (colon) {
		size_t ulen = (size_t)(colon - s);
		if (ulen > 0) {
			u->user = decode(s, ulen);
			if (!u->user)
				return -1;
		}
		u->password = decode(colon + 1, len - ulen - 1);
	} else {
		u->password = decode(s, len);
	}
	return u->password ? 0 : -1;
}

/* Fill u with the one address of a single-server url. */
static int url_single(hl_url *u, const char *url, const char *host, int port,
                      const char *path)
{
	u->topology = HL_TOPO_SINGLE;
	u->hosts = calloc(1, sizeof(*u->hosts));
	if (!u->hosts)
		return hl__fail(HL_ENOMEM, "out of memory");
	u->nhosts = 1;
	if (path) {
		if (strlen(path) >= sizeof(u->hosts[0].path))
			return bad(u, url, "unix socket path too long");
		strcpy(u->hosts[0].path, path);
	} else {
		if (strlen(host) >= sizeof(u->hosts[0].host))
			return bad(u, url, "host name too long");
		strcpy(u->hosts[0].host, host);
		u->hosts[0].port = port;
	}
	return HL_OK;
}

/* Inside hl__url_parse: free the parts parsed so far, then fail. */
#define bad_(...) (free(host), free(path), bad(u, url, __VA_ARGS__))

int hl__url_parse(hl_url *u, const char *url)
{
	const char *p, *end, *at, *slash;
	char *host = NULL, *path = NULL;
	int port = 6379, is_unix = 0, rc;
	memset(u, 0, sizeof(*u));
	if (!url)
		return hl__fail(HL_EINVAL, "url is NULL");
	if (strncmp(url, "redis://", 8) == 0) {
		p = url + 8;
	} else if (strncmp(url, "unix://", 7) == 0) {
		p = url + 7;
		is_unix = 1;
	} else if (strncmp(url, "rediss://", 9) == 0) {
		return bad_("TLS (rediss://) is not supported yet");
	} else {
		return bad_("expected redis:// or unix://");
	}
	end = p + strlen(p);
	/* userinfo ends at the last '@' before the path */
	slash = is_unix ? NULL : memchr(p, '/', (size_t)(end - p));
	at = NULL;
	{
		const char *q, *lim = slash ? slash : end;
		for (q = p; q < lim; q++)
			if (*q == '@')
				at = q;
	}
	if (at) {
		if (parse_userinfo(u, p, (size_t)(at - p)) != 0)
			return bad_("bad percent-escape in user info");
		p = at + 1;
	}
	if (is_unix) {
		const char *q = strchr(p, '?');
		size_t plen = q ? (size_t)(q - p) : strlen(p);
		if (plen == 0 || p[0] != '/')
			return bad_("unix socket path must be absolute");
		path = decode(p, plen);
		if (!path)
			return bad_("bad percent-escape in path");
		if (q) {
			long db;
			if (strncmp(q, "?db=", 4) != 0)
				return bad_("the only query string understood "
				            "is ?db=N");
			db = parse_num(q + 4, strlen(q + 4), 0, 1000000);
			if (db < 0)
				return bad_("db must be a number");
			u->db = (int)db;
		}
		goto done;
	}
	{
		const char *query = strpbrk(p, "?#");
		if (query && *query == '?')
			return bad_(
			        "a query string is not supported in redis:// "
			        "urls (the database goes in the path: "
			        "redis://host:port/N)");
		if (query)
			return bad_("a fragment (#...) is not supported");
	}
	{
		const char *hend = slash ? slash : end, *colon = NULL, *q;
		if (*p == '[') { /* [ipv6]:port */
			const char *rb = memchr(p, ']', (size_t)(hend - p));
			if (!rb)
				return bad_("unclosed '[' in host");
			host = decode(p + 1, (size_t)(rb - p - 1));
			q = rb + 1;
			if (q < hend && *q == ':')
				colon = q;
			else if (q != hend)
				return bad_("junk after ']'");
		} else {
			colon = memchr(p, ':', (size_t)(hend - p));
			host = decode(p, (size_t)((colon ? colon : hend) - p));
		}
		if (!host)
			return bad_("bad percent-escape in host");
		if (host[0] == '\0')
			return bad_("missing host");
		if (colon) {
			long pnum =
			        parse_num(colon + 1, (size_t)(hend - colon - 1),
			                  1, 65535);
			if (pnum < 0)
				return bad_("port must be 1-65535");
			port = (int)pnum;
		}
		if (slash && slash + 1 < end) {
			long db =
			        parse_num(slash + 1, (size_t)(end - slash - 1),
			                  0, 1000000);
			if (db < 0)
				return bad_("database must be a number");
			u->db = (int)db;
		}
	}
done:
	rc = url_single(u, url, host, port, path);
	free(host);
	free(path);
	return rc;
}

#undef bad_

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
