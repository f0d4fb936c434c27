/*
 * The raw-hiredis floor (floor.h): hlbench's, and libhlfloor's for the
 * bindings' benchmarks.
 */
#define _GNU_SOURCE

#include "floor.h"

#include "scripts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLOOR_OWNER "00000000-0000-4000-8000-000000000000:1"
#define FLOOR_LEASE "30000" /* the core's default watchdog lease */

/* The default lock's waiting line, hilock's own (its client id: the
 * owner's first 36 characters). */
#define FLOOR_CLIENT "00000000-0000-4000-8000-000000000000"

struct hlfloor {
	redisContext *c;
	char acq[41], rel[41];
	char *name, *channel, *line, *deadlines;
	char error[256];
};

double hlfloor_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

redisContext *hlfloor_connect(const char *url, char *err, size_t err_len)
{
	char host[256];
	int port = 6379, db = 0;
	const char *p = url, *colon, *slash, *end;
	redisContext *c;

	if (strncmp(p, "redis://", 8) != 0) {
		snprintf(err, err_len,
		         "only redis://host:port[/db] URLs are supported");
		return NULL;
	}
	p += 8;
	slash = strchr(p, '/');
	colon = strchr(p, ':');
	if (colon && slash && colon > slash)
		colon = NULL;
	end = colon ? colon : slash ? slash : p + strlen(p);
	snprintf(host, sizeof(host), "%.*s", (int)(end - p), p);
	if (colon)
		port = atoi(colon + 1);
	if (slash && slash[1])
		db = atoi(slash + 1);
	c = redisConnect(host, port);
	if (c == NULL || c->err) {
		snprintf(err, err_len,
		         "cannot connect with hiredis to %s:%d%s%s", host, port,
		         c ? ": " : "", c ? c->errstr : "");
		if (c)
			redisFree(c);
		return NULL;
	}
	if (db) {
		redisReply *r = redisCommand(c, "SELECT %d", db);
		int ok = r && r->type == REDIS_REPLY_STATUS;
		if (r)
			freeReplyObject(r);
		if (!ok) {
			snprintf(err, err_len, "SELECT %d failed", db);
			redisFree(c);
			return NULL;
		}
	}
	return c;
}

static int load_sha(hlfloor *f, enum hl_script_id id, char *sha)
{
	const char *argv[3] = {"SCRIPT", "LOAD", hl__script(id)->source};
	redisReply *r = redisCommandArgv(f->c, 3, argv, NULL);
	int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
	if (ok)
		memcpy(sha, r->str, 41);
	else
		snprintf(f->error, sizeof(f->error), "SCRIPT LOAD failed: %s",
		         r && r->type == REDIS_REPLY_ERROR ? r->str
		                                           : "no reply");
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

void hlfloor_close(hlfloor *f)
{
	if (!f)
		return;
	if (f->c)
		redisFree(f->c);
	free(f->name);
	free(f->channel);
	free(f->line);
	free(f->deadlines);
	free(f);
}

hlfloor *hlfloor_open(const char *url, const char *name, char *err,
                      size_t err_len)
{
	static const char prefix[] = "redisson_lock__channel:{";
	hlfloor *f = calloc(1, sizeof(*f));
	size_t n = strlen(name);
	if (!f) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	f->name = strdup(name);
	f->channel = malloc(sizeof(prefix) + n + 1);
	/* the floor's names have no braces: prefix{name} */
	f->line = malloc(n + 32);
	f->deadlines = malloc(n + 32);
	if (!f->name || !f->channel || !f->line || !f->deadlines) {
		snprintf(err, err_len, "out of memory");
		hlfloor_close(f);
		return NULL;
	}
	snprintf(f->channel, sizeof(prefix) + n + 1, "%s%s}", prefix, name);
	snprintf(f->line, n + 32, "hilock_line:{%s}", name);
	snprintf(f->deadlines, n + 32, "hilock_line_timeout:{%s}", name);
	f->c = hlfloor_connect(url, err, err_len);
	if (!f->c) {
		hlfloor_close(f);
		return NULL;
	}
	if (load_sha(f, HL_SCRIPT_LINE_ACQUIRE, f->acq) != 0 ||
	    load_sha(f, HL_SCRIPT_LINE_RELEASE, f->rel) != 0) {
		snprintf(err, err_len, "%s", f->error);
		hlfloor_close(f);
		return NULL;
	}
	return f;
}

redisContext *hlfloor_context(hlfloor *f)
{
	return f->c;
}

const char *hlfloor_error(const hlfloor *f)
{
	return f->error;
}

int hlfloor_pair(hlfloor *f)
{
	/* the scripts set the hold count the caller will have */
	const char *a[] = {"EVALSHA",   f->acq,      "1",          f->name,
	                   FLOOR_LEASE, FLOOR_OWNER, "1",          "1",
	                   "3000",      "PUBLISH",   FLOOR_CLIENT, f->line,
	                   f->deadlines};
	const char *u[] = {"EVALSHA",  f->rel, "2",         f->name,
	                   f->channel, "0",    FLOOR_LEASE, FLOOR_OWNER,
	                   "PUBLISH",  "1",    f->line,     f->deadlines};
	redisReply *r = redisCommandArgv(f->c, 13, a, NULL);
	int ok = r && r->type == REDIS_REPLY_ARRAY;
	const char *broken = r ? "" : " (the connection failed)";
	if (r)
		freeReplyObject(r);
	if (!ok) {
		snprintf(f->error, sizeof(f->error),
		         "floor: the acquire script did not acquire%s", broken);
		return -1;
	}
	r = redisCommandArgv(f->c, 12, u, NULL);
	/* released: {1, subscribers the unlock message reached, the line's
	 * ticket told} */
	ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	     r->element[0]->integer == 1;
	broken = r ? "" : " (the connection failed)";
	if (r)
		freeReplyObject(r);
	if (!ok) {
		snprintf(f->error, sizeof(f->error),
		         "floor: the release script did not release%s", broken);
		return -1;
	}
	return 0;
}

long long hlfloor_run(hlfloor *f, double seconds, double *elapsed_s)
{
	double t0 = hlfloor_now(), t;
	long long n = 0;
	while ((t = hlfloor_now()) < t0 + seconds) {
		if (hlfloor_pair(f) != 0)
			return -1;
		n++;
	}
	*elapsed_s = t - t0;
	return n;
}

/* ---- the grid's floor: captured commands replayed ---- */

#define CMDS_MAX 16
/* a batch's command is long: a Bloom filter's 100 values are 700 words */
#define CMD_ARGS_MAX 4096

struct hlfloor_cmds {
	redisContext *c;
	int n;
	int argc[CMDS_MAX];
	char *argv[CMDS_MAX][CMD_ARGS_MAX];
	size_t lens[CMDS_MAX][CMD_ARGS_MAX];
	int mark[CMDS_MAX];   /* the index of a request marker key, or 0 */
	int now_at[CMDS_MAX]; /* "! now I": the argument of the wall clock */
	int id_at[CMDS_MAX];  /* "! id I": the argument of a fresh id */
	unsigned long long round, opened;
	char error[256];
};

void hlfloor_cmds_close(hlfloor_cmds *f)
{
	if (!f)
		return;
	if (f->c)
		redisFree(f->c);
	for (int i = 0; i < f->n; i++)
		for (int j = 0; j < f->argc[i]; j++)
			free(f->argv[i][j]);
	free(f);
}

static int unhex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* "! now I" or "! id I": argument I of the last command made fresh in
 * every round (floor.h). Its buffer is made big enough for it. */
static int parse_fresh(hlfloor_cmds *f, const char *line)
{
	char what[8];
	int i;
	char *b;
	if (f->n == 0 || sscanf(line, "! %7s %d", what, &i) != 2 || i < 1 ||
	    i >= f->argc[f->n - 1])
		return -1;
	if (strcmp(what, "now") == 0)
		f->now_at[f->n - 1] = i;
	else if (strcmp(what, "id") == 0)
		f->id_at[f->n - 1] = i;
	else
		return -1;
	b = realloc(f->argv[f->n - 1][i], 32);
	if (!b)
		return -1;
	f->argv[f->n - 1][i] = b;
	return 0;
}

/* One line of the file into command f->n. */
static int parse_cmd(hlfloor_cmds *f, char *line)
{
	int argc = 0;
	char *save = NULL, *w;
	if (line[0] == '!')
		return parse_fresh(f, line);
	for (w = strtok_r(line, " \t\r\n", &save); w;
	     w = strtok_r(NULL, " \t\r\n", &save)) {
		size_t n = strlen(w), len = 0;
		char *b;
		if (argc == CMD_ARGS_MAX)
			return -1;
		if (strcmp(w, "=") == 0)
			n = 0;
		else if (n % 2)
			return -1;
		b = malloc(n / 2 + 1);
		if (!b)
			return -1;
		for (size_t i = 0; i < n; i += 2) {
			int hi = unhex(w[i]), lo = unhex(w[i + 1]);
			if (hi < 0 || lo < 0) {
				free(b);
				return -1;
			}
			b[len++] = (char)(hi << 4 | lo);
		}
		b[len] = 0;
		f->argv[f->n][argc] = b;
		f->lens[f->n][argc] = len;
		argc++;
	}
	if (argc == 0)
		return 0;
	/* A "mark" operation's request marker (hilock_request:{name}:<32
	 * hex>): hilock sends a new one with every call, so the floor must
	 * too, or its replays would only read the first run's answer back. */
	for (int i = 1; i < argc; i++)
		if (f->lens[f->n][i] >= 15 + 16 &&
		    strncmp(f->argv[f->n][i], "hilock_request:", 15) == 0)
			f->mark[f->n] = i;
	f->argc[f->n++] = argc;
	return 0;
}

static unsigned cmds_opened; /* floors this process opened */

hlfloor_cmds *hlfloor_cmds_open(const char *url, const char *path, char *err,
                                size_t err_len)
{
	hlfloor_cmds *f = calloc(1, sizeof(*f));
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	if (!f) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	in = fopen(path, "r");
	if (!in) {
		snprintf(err, err_len, "cannot read %s", path);
		free(f);
		return NULL;
	}
	while (getline(&line, &cap, in) > 0) {
		if (f->n == CMDS_MAX || parse_cmd(f, line) != 0) {
			snprintf(err, err_len, "%s: a bad line or too many",
			         path);
			free(line);
			fclose(in);
			hlfloor_cmds_close(f);
			return NULL;
		}
	}
	free(line);
	fclose(in);
	if (f->n == 0) {
		snprintf(err, err_len, "%s holds no command", path);
		hlfloor_cmds_close(f);
		return NULL;
	}
	f->c = hlfloor_connect(url, err, err_len);
	if (!f->c) {
		hlfloor_cmds_close(f);
		return NULL;
	}
	/* markers of this process unlike those of another one before it
	 * (the monotonic clock in ns, below 2^50 for 13 days of uptime),
	 * and unlike those of another floor of this process (its own high
	 * bits: a bench opens one for its slices, one for single rounds) */
	f->round = (unsigned long long)(hlfloor_now() * 1e9) +
	           ((unsigned long long)__atomic_fetch_add(&cmds_opened, 1,
	                                                   __ATOMIC_RELAXED)
	            << 50);
	f->opened = f->round;
	return f;
}

const char *hlfloor_cmds_error(const hlfloor_cmds *f)
{
	return f->error;
}

int hlfloor_cmds_once(hlfloor_cmds *f)
{
	f->round++;
	for (int i = 0; i < f->n; i++) {
		if (f->mark[i]) {
			char *m = f->argv[i][f->mark[i]];
			char hex[17];
			snprintf(hex, sizeof(hex), "%016llx", f->round);
			memcpy(m + f->lens[i][f->mark[i]] - 16, hex, 16);
		}
	}
	for (int i = 0; i < f->n; i++) {
		if (f->now_at[i]) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			f->lens[i][f->now_at[i]] = (size_t)snprintf(
			        f->argv[i][f->now_at[i]], 32, "%lld",
			        (long long)ts.tv_sec * 1000 +
			                ts.tv_nsec / 1000000);
		}
		if (f->id_at[i]) {
			/* the round (unique in this process) and the time
			 * this process opened the file (unlike another's) */
			unsigned long long w[2] = {f->round, f->opened};
			memcpy(f->argv[i][f->id_at[i]], w, 16);
			f->lens[i][f->id_at[i]] = 16;
		}
	}
	for (int i = 0; i < f->n; i++)
		if (redisAppendCommandArgv(f->c, f->argc[i],
		                           (const char **)f->argv[i],
		                           f->lens[i]) != REDIS_OK) {
			snprintf(f->error, sizeof(f->error),
			         "floor: cannot format a command");
			return -1;
		}
	for (int i = 0; i < f->n; i++) {
		redisReply *r = NULL;
		int ok = redisGetReply(f->c, (void **)&r) == REDIS_OK && r &&
		         r->type != REDIS_REPLY_ERROR;
		if (!ok) {
			snprintf(f->error, sizeof(f->error),
			         "floor: %s failed: %s", f->argv[i][0],
			         r ? r->str : f->c->errstr);
			if (r)
				freeReplyObject(r);
			return -1;
		}
		freeReplyObject(r);
	}
	return 0;
}

long long hlfloor_cmds_run(hlfloor_cmds *f, double seconds, double *elapsed_s)
{
	double t0 = hlfloor_now(), t;
	long long n = 0;
	while ((t = hlfloor_now()) < t0 + seconds) {
		if (hlfloor_cmds_once(f) != 0)
			return -1;
		n++;
	}
	*elapsed_s = t - t0;
	return n;
}
