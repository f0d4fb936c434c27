/*
 * contend: several processes increment one Redis counter under a hilock.
 *
 *   hilock_contend [LOCK [COUNTER [ITERATIONS [PROCESSES]]]]
 *
 * Defaults: "hilock:demo", "hilock:demo:counter", 20 iterations, 1 process.
 * The server comes from the environment variable HILOCK_URL
 * (default redis://127.0.0.1:6379/0).
 *
 * Each iteration takes the lock, reads the counter with GET, writes it back
 * plus one with SET, and releases. GET-then-SET is a race on purpose: only
 * the lock keeps two processes from reading the same value, so the final
 * counter is exact only if the lock works.
 *
 * hilock has no raw-command API (it is a lock library), so the example talks
 * to Redis directly with hiredis for the counter.
 */
#define _POSIX_C_SOURCE 200809L

#include <hilock.h>
#include <hiredis/hiredis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Connect hiredis to the server named by a redis:// or unix:// URL.
 * A tiny parser, enough for the example: redis://[:password@]host[:port][/db]
 * and unix:///path[?db=N]. The hilock client parses URLs fully itself. */
static redisContext *connect_raw(const char *url)
{
	char host[256] = "127.0.0.1", pass[256] = "";
	int port = 6379, db = 0;
	redisContext *c;
	const char *p;

	if (strncmp(url, "unix://", 7) == 0) {
		char path[512];
		const char *q;
		p = url + 7;
		q = strstr(p, "?db=");
		snprintf(path, sizeof(path), "%.*s",
		         (int)(q ? (size_t)(q - p) : strlen(p)), p);
		if (q)
			db = atoi(q + 4);
		c = redisConnectUnix(path);
	} else {
		const char *at, *colon, *slash;
		p = strncmp(url, "redis://", 8) == 0 ? url + 8 : url;
		at = strchr(p, '@');
		if (at) { /* [user]:password@ - keep the password only */
			const char *pc = memchr(p, ':', (size_t)(at - p));
			if (pc)
				snprintf(pass, sizeof(pass), "%.*s",
				         (int)(at - pc - 1), pc + 1);
			p = at + 1;
		}
		slash = strchr(p, '/');
		colon = strchr(p, ':');
		if (colon && slash && colon > slash)
			colon = NULL;
		snprintf(host, sizeof(host), "%.*s",
		         (int)((colon   ? colon
		                : slash ? slash
		                        : p + strlen(p)) -
		               p),
		         p);
		if (colon)
			port = atoi(colon + 1);
		if (slash && slash[1])
			db = atoi(slash + 1);
		c = redisConnect(host, port);
	}
	if (c == NULL || c->err) {
		fprintf(stderr, "contend: cannot connect to %s: %s\n", url,
		        c ? c->errstr : "out of memory");
		if (c)
			redisFree(c);
		return NULL;
	}
	if (pass[0])
		freeReplyObject(redisCommand(c, "AUTH %s", pass));
	if (db)
		freeReplyObject(redisCommand(c, "SELECT %d", db));
	return c;
}

/* Print a hilock failure: the status name plus the thread's detail. */
static int fail(const char *what, int rc)
{
	fprintf(stderr, "[c pid %ld] %s: %s (%s)\n", (long)getpid(), what,
	        hl_status_name(rc), hl_error_last());
	return 1;
}

/* One worker: its own hilock client and its own hiredis connection. */
static int run(const char *url, const char *name, const char *counter,
               int iterations)
{
	hl_client *client = NULL;
	hl_lock *lock = NULL;
	redisContext *raw;
	int rc, i, status = 0;

	raw = connect_raw(url);
	if (raw == NULL)
		return 1;
	/* NULL options: the defaults (30 s watchdog timeout, up to 32 connections). */
	rc = hl_client_new(&client, url, NULL);
	if (rc != HL_OK) {
		redisFree(raw);
		return fail("hl_client_new", rc);
	}
	/* A handle is only a name plus the client; it does not touch Redis. */
	rc = hl_lock_new(&lock, client, name, strlen(name));
	if (rc != HL_OK) {
		status = fail("hl_lock_new", rc);
		goto out;
	}

	for (i = 0; i < iterations; i++) {
		redisReply *r;
		long long value = 0;

		/* Wait as long as it takes (no cancel flag); lease -1 means the
		 * watchdog renews the lock for as long as we hold it. */
		rc = hl_lock_acquire(lock, -1, NULL);
		if (rc != HL_OK) {
			status = fail("hl_lock_acquire", rc);
			break;
		}

		/* The critical section: read, add one, write back. */
		r = redisCommand(raw, "GET %s", counter);
		if (r && r->type == REDIS_REPLY_STRING)
			value = strtoll(r->str, NULL, 10);
		freeReplyObject(r);
		value++;
		r = redisCommand(raw, "SET %s %lld", counter, value);
		if (r == NULL || r->type == REDIS_REPLY_ERROR) {
			fprintf(stderr, "contend: SET failed\n");
			status = 1;
		}
		freeReplyObject(r);
		printf("[c pid %ld] holds %s, counter -> %lld\n",
		       (long)getpid(), name, value);
		fflush(stdout);

		/* Release our one hold: the lock is deleted and one waiter,
		 * in any process, is woken. */
		rc = hl_lock_release(NULL, lock);
		if (rc != HL_OK) {
			status = fail("hl_lock_release", rc);
			break;
		}
		if (status)
			break;
	}

out:
	hl_lock_free(lock);
	hl_client_free(client); /* closes connections, stops its threads */
	redisFree(raw);
	return status;
}

int main(int argc, char **argv)
{
	const char *url = getenv("HILOCK_URL");
	const char *name = argc > 1 ? argv[1] : "hilock:demo";
	const char *counter = argc > 2 ? argv[2] : "hilock:demo:counter";
	int iterations = argc > 3 ? atoi(argv[3]) : 20;
	int processes = argc > 4 ? atoi(argv[4]) : 1;
	int i, status = 0;

	if (url == NULL || url[0] == '\0')
		url = "redis://127.0.0.1:6379/0";
	if (iterations < 0 || processes < 1) {
		fprintf(stderr,
		        "usage: %s [LOCK [COUNTER [ITERATIONS "
		        "[PROCESSES]]]]\n",
		        argv[0]);
		return 2;
	}
	if (processes == 1)
		return run(url, name, counter, iterations);

	/* Fork first, then let every child create its OWN client: a client
	 * does not survive fork() (its threads stay in the parent), and one
	 * created before the fork would answer HL_EFORKED in the child. */
	for (i = 0; i < processes; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			status = 1;
			break;
		}
		if (pid == 0)
			_exit(run(url, name, counter, iterations));
	}
	for (;;) {
		int ws;
		if (wait(&ws) < 0)
			break; /* no children left */
		if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			status = 1;
	}
	return status;
}
