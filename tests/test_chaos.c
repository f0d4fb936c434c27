/*
 * `make chaos`: a long soak, outside `make test`. Worker processes, each
 * with its own client behind its own fault proxy, take one lock in a loop
 * and record every critical section; a driver meanwhile picks at random,
 * again and again: reset a worker's connections, black-hole or drop its
 * network for a while, delay it, SIGSTOP it (shorter and longer than its
 * lease), or kill -9 it and start another. Afterwards the record must show
 * that no two critical sections overlapped, except where the earlier holder
 * was killed or was itself told it had lost the lock (a holder paused past
 * its lease, which no lease-based lock can prevent: Kleppmann's point, and
 * why fenced tokens exist), and that every worker kept getting the lock.
 *
 * HILOCK_CHAOS_SECONDS sets the length (default 60).
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define WD_MS   2000

static char g_path[300];

/* Append one line: "<what> <tag>". */
static void note_line(const char *what, const char *tag)
{
	if (strcmp(what, "enter") == 0)
		ht_cs_enter(g_path, tag);
	else if (strcmp(what, "leave") == 0)
		ht_cs_leave(g_path, tag);
	else {
		char line[64];
		FILE *f = fopen(g_path, "a");
		HT_CHECK(f != NULL);
		snprintf(line, sizeof line, "%s %s\n", what, tag);
		fputs(line, f);
		fclose(f);
	}
}

static void worker(ht_proxy *p, const char *tag, int64_t end)
{
	hl_client_options o;
	hl_client *c;
	hl_lock *l;
	hl_client_options_init(&o, HL_CLIENT_OPTIONS_VERSION);
	o.watchdog_timeout_ms = WD_MS;
	o.command_timeout_ms = 500;
	o.connect_timeout_ms = 500;
	o.retry_delay_ms = 100;
	o.ping_interval_ms = 300;
	while (hl_client_new(&c, p->url, &o) != HL_OK)
		ht_sleep_ms(100); /* its network may be down right now */
	HT_OK(hl_lock_new(&l, c, HT_S("chaos:lock")));
	while (ht_now_ms() < end) {
		int acquired = 0, lost = 0, rc;
		if (hl_lock_try_acquire(&acquired, l, 500, -1, NULL) != HL_OK ||
		    !acquired)
			continue;
		note_line("enter", tag);
		ht_sleep_ms(1 + rand() % 5);
		hl_lock_is_lost(&lost, l);
		note_line(lost ? "lost" : "leave", tag);
		/* released, lost, or in doubt: all end the hold */
		rc = hl_lock_release(NULL, l);
		if (rc != HL_OK) {
			char what[32];
			snprintf(what, sizeof what, "note-release-%s",
			         hl_status_name(rc));
			note_line(what, tag);
		}
	}
	hl_lock_free(l);
	hl_client_free(c);
	_exit(0);
}

static pid_t spawn(ht_proxy *p, int i, int gen, int64_t end)
{
	char tag[32];
	pid_t pid;
	snprintf(tag, sizeof tag, "w%d.%d", i, gen);
	pid = fork();
	HT_CHECK(pid >= 0);
	if (pid == 0) {
		srand((unsigned)getpid());
		worker(p, tag, end);
	}
	return pid;
}

/* Print lines from..to of the record (what led to an overlap). */
static void show_lines(long from, long to)
{
	FILE *f = fopen(g_path, "r");
	char line[128];
	long n = 0;
	if (!f)
		return;
	while (fgets(line, sizeof line, f) && ++n <= to)
		if (n >= from)
			ht_note("%5ld %s", n, strtok(line, "\n"));
	fclose(f);
}

/* The record, as sections in file order. */
typedef struct section {
	char tag[32];
	long start, end; /* line numbers; end 0: never closed */
	char how[16];    /* "leave", "lost", "killed" */
} section;

/* The holder was killed, or told it had lost the lock. */
static int ended_told(const section *s)
{
	return strcmp(s->how, "lost") == 0 || strcmp(s->how, "killed") == 0;
}

static void check_record(int *per_worker)
{
	FILE *f = fopen(g_path, "r");
	char line[128];
	long n = 0, nsec = 0, cap = 1 << 16, i, j, excused = 0;
	section *s = calloc((size_t)cap, sizeof(*s));
	HT_CHECK(f != NULL && s != NULL);
	while (fgets(line, sizeof line, f)) {
		char what[16], tag[32];
		n++;
		if (sscanf(line, "%15s %31s", what, tag) != 2)
			HT_FAIL("line %ld: %s", n, line);
		if (strncmp(what, "fault-", 6) == 0 ||
		    strncmp(what, "note-", 5) == 0)
			continue; /* what the driver did, what a worker saw */
		if (strcmp(what, "enter") == 0) {
			HT_CHECK(nsec < cap);
			snprintf(s[nsec].tag, sizeof s[nsec].tag, "%s", tag);
			s[nsec++].start = n;
			continue;
		}
		/* leave, lost or killed: closes that tag's open section */
		for (i = nsec - 1; i >= 0; i--)
			if (s[i].end == 0 && strcmp(s[i].tag, tag) == 0)
				break;
		if (i < 0) {
			HT_CHECKF(strcmp(what, "killed") == 0,
			          "line %ld: %s without an enter", n, line);
			continue;
		}
		s[i].end = n;
		snprintf(s[i].how, sizeof s[i].how, "%s", what);
	}
	fclose(f);
	for (i = 0; i < nsec; i++) {
		int w = atoi(s[i].tag + 1);
		if (w >= 0 && w < WORKERS)
			per_worker[w]++;
		if (s[i].end == 0)
			s[i].end = n + 1; /* the soak ended */
		for (j = i + 1; j < nsec && s[j].start < s[i].end; j++) {
			/* s[j] began while s[i] was open: excused when either
			 * holder was killed or told it lost (one paused past
			 * its lease, before or after it entered) */
			int told = ended_told(&s[i]) || ended_told(&s[j]);
			if (!told)
				show_lines(s[i].start - 12, s[i].end + 2);
			HT_CHECKF(told,
			          "overlap: %s (lines %ld-%ld) and %s (lines "
			          "%ld-%ld), and neither was told it lost",
			          s[i].tag, s[i].start, s[i].end, s[j].tag,
			          s[j].start, s[j].end);
			excused++;
		}
	}
	ht_note("%ld sections in %ld lines; %ld overlaps, each after a holder "
	        "that was killed or told it lost",
	        nsec, n, excused);
	HT_CHECK(nsec > 100);
	free(s);
}

static void soak(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p[WORKERS];
	pid_t pid[WORKERS];
	int gen[WORKERS] = {0}, per[WORKERS] = {0}, i, status;
	const char *env = getenv("HILOCK_CHAOS_SECONDS");
	int64_t seconds = env ? atoll(env) : 60, end;
	long actions[7] = {0};

	snprintf(g_path, sizeof g_path, "%s/sections", r->dir);
	end = ht_now_ms() + seconds * 1000;
	srand((unsigned)getpid());
	for (i = 0; i < WORKERS; i++) {
		p[i] = ht_proxy_start(r->port);
		pid[i] = spawn(p[i], i, gen[i]++, end);
	}
	while (ht_now_ms() < end - 1000) {
		int w = rand() % WORKERS, a = rand() % 7;
		int64_t len = 200 + rand() % 1800; /* 0.2 to 2 s */
		char tag[32], what[32];
		static const char *const names[7] = {
		        "reset", "blackhole", "drop", "delay",
		        "pause", "longpause", "kill"};
		actions[a]++;
		snprintf(tag, sizeof tag, "w%d.%d", w, gen[w] - 1);
		snprintf(what, sizeof what, "fault-%s", names[a]);
		note_line(what, tag);
		switch (a) {
		case 0:
			ht_proxy_cmd(p[w], "reset");
			break;
		case 1:
			ht_proxy_cmd(p[w], "blackhole on");
			ht_sleep_ms(len);
			ht_proxy_cmd(p[w], "blackhole off");
			note_line("fault-end", tag);
			break;
		case 2:
			ht_proxy_cmd(p[w], "drop on");
			ht_sleep_ms(len);
			ht_proxy_cmd(p[w], "drop off");
			note_line("fault-end", tag);
			break;
		case 3:
			ht_proxy_cmd(p[w], "delay 50");
			ht_sleep_ms(len);
			ht_proxy_cmd(p[w], "delay 0");
			note_line("fault-end", tag);
			break;
		case 4: /* a pause shorter or longer than the lease */
		case 5:
			kill(pid[w], SIGSTOP);
			ht_sleep_ms(a == 4 ? len / 4 : WD_MS + len);
			kill(pid[w], SIGCONT);
			note_line("fault-end", tag);
			break;
		case 6:
			kill(pid[w], SIGKILL);
			waitpid(pid[w], &status, 0);
			note_line("killed", tag);
			pid[w] = spawn(p[w], w, gen[w]++, end);
			break;
		}
		ht_sleep_ms(100 + rand() % 300);
	}
	for (i = 0; i < WORKERS; i++) {
		int64_t t0 = ht_now_ms();
		while (waitpid(pid[i], &status, WNOHANG) == 0) {
			HT_CHECKF(ht_now_ms() - t0 < 30000 * ht_scale(),
			          "worker %d did not finish", i);
			ht_sleep_ms(50);
		}
		HT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		          "worker %d: status %d", i, status);
		ht_proxy_stop(p[i]);
	}
	ht_note("actions: %ld resets, %ld black holes, %ld drops, %ld delays, "
	        "%ld short and %ld long pauses, %ld kills",
	        actions[0], actions[1], actions[2], actions[3], actions[4],
	        actions[5], actions[6]);
	check_record(per);
	for (i = 0; i < WORKERS; i++) {
		ht_note("worker %d: %d sections", i, per[i]);
		HT_CHECK(per[i] > 0);
	}
}

HT_MAIN(HT_CASE(soak))
