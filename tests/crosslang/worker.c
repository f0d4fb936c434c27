/*
 * The C worker of the cross-language synchronizer test (run.py):
 *
 *   hl_syncworker URL SEM LATCH LOG TAG THREADS SECONDS
 *
 * Starts a wait for the latch LATCH, then runs THREADS threads for SECONDS:
 * each takes one permit of the semaphore SEM (waiting at most 10 s), appends
 * "enter TAG-i" to LOG, makes one round trip (the available permits), appends
 * "leave TAG-i" and gives the permit back. Then it counts LATCH down once,
 * appending "countdown TAG <ms before> <ms after>", waits for its latch wait
 * to end and appends "woke TAG <ms>" when the latch opened for it. Times are
 * wall-clock ms, comparable across processes. Exits 0 when everything
 * worked; otherwise prints why on stderr and exits non-zero.
 */
#include <hilock.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_path, *tag;
static hl_semaphore *sem;
static int64_t end_ms;

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "hl_syncworker %s: %s: %s (%s)\n", tag, what,
	        hl_error_last(), hl_status_str(rc));
	exit(1);
}

/* One line, one write() on an O_APPEND descriptor: lines never mix. */
static void append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void append(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n, fd;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		perror("hl_syncworker: log");
		exit(1);
	}
	close(fd);
}

static void *worker(void *arg)
{
	long i = (long)arg;
	long sections = 0;
	while (mono_ms() < end_ms) {
		int acquired = 0, rc;
		int64_t avail = 0;
		rc = hl_semaphore_try_acquire(&acquired, sem, 1, 10000, NULL);
		if (rc != HL_OK)
			die("acquire", rc);
		if (!acquired) {
			fprintf(stderr,
			        "hl_syncworker %s-%ld: no permit in 10 s\n",
			        tag, i);
			exit(1);
		}
		append("enter %s-%ld", tag, i);
		if ((rc = hl_semaphore_available(&avail, sem)) != HL_OK)
			die("available", rc);
		append("leave %s-%ld", tag, i);
		if ((rc = hl_semaphore_release(sem, 1)) != HL_OK)
			die("release", rc);
		sections++;
	}
	return (void *)sections;
}

int main(int argc, char **argv)
{
	hl_client *c;
	hl_latch *latch;
	hl_task *wait;
	pthread_t t[64];
	int nthreads, rc, open_ = 0;
	int64_t before, after;
	long i;

	if (argc != 8) {
		fprintf(stderr, "usage: hl_syncworker URL SEM LATCH LOG TAG "
		                "THREADS SECONDS\n");
		return 2;
	}
	log_path = argv[4];
	tag = argv[5];
	nthreads = atoi(argv[6]);
	if (nthreads < 1 || nthreads > 64)
		return 2;
	if ((rc = hl_client_new(&c, argv[1], NULL)) != HL_OK)
		die("connect", rc);
	if ((rc = hl_semaphore_new(&sem, c, argv[2], strlen(argv[2]))) != HL_OK)
		die("semaphore", rc);
	if ((rc = hl_latch_new(&latch, c, argv[3], strlen(argv[3]))) != HL_OK)
		die("latch", rc);
	if ((rc = hl_latch_wait_start(&wait, latch, 60000)) != HL_OK)
		die("latch wait", rc);
	end_ms = mono_ms() + atoi(argv[7]) * 1000;
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (i = 0; i < nthreads; i++) {
		void *n;
		pthread_join(t[i], &n);
		if ((long)n == 0) {
			fprintf(stderr, "hl_syncworker %s-%ld: no section\n",
			        tag, i);
			return 1;
		}
	}
	before = wall_ms();
	if ((rc = hl_latch_count_down(NULL, latch)) != HL_OK)
		die("count down", rc);
	after = wall_ms();
	append("countdown %s %lld %lld", tag, (long long)before,
	       (long long)after);
	if ((rc = hl_task_wait(wait, 60000, NULL)) != HL_OK)
		die("latch wait", rc);
	if ((rc = hl_task_result(&open_, wait)) != HL_OK)
		die("latch wait", rc);
	if (!open_) {
		fprintf(stderr, "hl_syncworker %s: the latch did not open\n",
		        tag);
		return 1;
	}
	append("woke %s %lld", tag, (long long)wall_ms());
	hl_task_free(wait);
	hl_latch_free(latch);
	hl_semaphore_free(sem);
	hl_client_free(c);
	return 0;
}
