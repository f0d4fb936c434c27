/*
 * The C worker of the cross-language queue test (queue_run.py):
 *
 *   hl_queueworker produce URL KIND QUEUE OUT TAG COUNT PAUSE_MS
 *   hl_queueworker consume URL KIND QUEUE OUT TAG STOPFILE SECONDS
 *
 * KIND is "queue" (hl_blocking_queue_*) or "bounded"
 * (hl_bounded_blocking_queue_*). A producer puts COUNT distinct elements
 * "TAG-<pid>-<i>" (pausing PAUSE_MS between them) and appends each to OUT
 * once its put returned. A consumer (lease 3 s, command timeout 1 s) polls
 * with a 0.5 s timeout and appends each element it got to OUT (one line,
 * one write on an O_APPEND descriptor); it stops after an empty poll once
 * STOPFILE exists (exit 0), or after SECONDS (exit 1). Errors of the wire
 * are counted and the loop goes on.
 */
#include <hilock.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *tag;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "hl_queueworker %s: %s: %s (%s)\n", tag, what,
	        hl_error_last(), hl_status_str(rc));
	exit(1);
}

static void append(const char *path, const char *v, size_t n)
{
	char line[512];
	int fd;
	if (n >= sizeof line)
		n = sizeof line - 1;
	memcpy(line, v, n);
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || write(fd, line, n) != (ssize_t)n) {
		perror("hl_queueworker: out");
		exit(1);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	hl_client_options opts = HL_CLIENT_OPTIONS_INIT;
	const char *url, *kind, *name, *out;
	hl_client *c;
	hl_object *q;
	int bounded, rc;

	if (argc != 9) {
		fprintf(stderr,
		        "usage: hl_queueworker produce|consume URL KIND "
		        "QUEUE OUT TAG COUNT|STOPFILE PAUSE_MS|SECONDS\n");
		return 2;
	}
	url = argv[2];
	kind = argv[3];
	name = argv[4];
	out = argv[5];
	tag = argv[6];
	bounded = strcmp(kind, "bounded") == 0;
	if (strcmp(argv[1], "consume") == 0) {
		opts.watchdog_timeout_ms = 3000;
		opts.command_timeout_ms = 1000;
		opts.retry_delay_ms = 200;
	}
	if ((rc = hl_client_new(&c, url, &opts)) != HL_OK)
		die("connect", rc);
	rc = bounded ? hl_bounded_blocking_queue_new(&q, c, name, strlen(name))
	             : hl_blocking_queue_new(&q, c, name, strlen(name));
	if (rc != HL_OK)
		die("queue", rc);

	if (strcmp(argv[1], "produce") == 0) {
		long count = atol(argv[7]), pause = atol(argv[8]), i;
		for (i = 0; i < count; i++) {
			char v[128];
			int n = snprintf(v, sizeof v, "%s-%ld-%ld", tag,
			                 (long)getpid(), i);
			rc = bounded ? hl_bounded_blocking_queue_put(q, v,
			                                             (size_t)n)
			             : hl_blocking_queue_put(q, v, (size_t)n);
			if (rc != HL_OK)
				die("put", rc);
			append(out, v, (size_t)n);
			usleep((useconds_t)pause * 1000);
		}
	} else {
		const char *stop = argv[7];
		int64_t end = mono_ms() + atol(argv[8]) * 1000;
		int errors = 0, stopped = 0;
		while (mono_ms() < end) {
			hl_value *v = NULL;
			rc = bounded ? hl_bounded_blocking_queue_poll_timeout(
			                       &v, q, 500)
			             : hl_blocking_queue_poll_timeout(&v, q,
			                                              500);
			if (rc != HL_OK) {
				if (++errors > 200)
					die("poll (too many errors)", rc);
				usleep(50000);
				continue;
			}
			if (hl_value_type(v) == HL_VALUE_BYTES) {
				size_t n = 0;
				const char *p = hl_value_bytes(v, &n);
				append(out, p, n);
			} else if (access(stop, F_OK) == 0) {
				stopped = 1;
			}
			hl_value_free(v);
			if (stopped)
				break;
		}
		if (!stopped) {
			fprintf(stderr,
			        "hl_queueworker %s: no stop file in %s s\n",
			        tag, argv[8]);
			exit(1);
		}
	}
	hl_object_free(q);
	hl_client_free(c);
	return 0;
}
