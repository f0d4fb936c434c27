/*
 * interop peer: one hilock client and its lock handles on one name, driven
 * line by line over stdin by the Java side of `make interop`
 * (tests/interop/java).
 *
 *   hl_interop_peer URL NAME_HEX WATCHDOG_TIMEOUT_MS [KIND]
 *
 * NAME_HEX is the lock name's bytes in hex (the Java side sends the UTF-8
 * bytes of its String that way, whatever the locale's argv encoding).
 * KIND is the kind of the first handle, by hl_lock_kind_name() ("fair",
 * "read", "write", "spin", "fenced", ...); default "reentrant".
 *
 * Prints "ready <owner>" once connected, then answers each command with one
 * line, "ok ..." or "err <STATUS_NAME> <detail>". Every command works on
 * the current handle:
 *
 *   use KIND                  -> ok kind=<n>   make the handle of that kind
 *       (made on first use, kept) the current one; all handles share the
 *       owner, so "use write", acquire, "use read", acquire is a writer
 *       taking a read hold
 *   acquire WAIT_MS LEASE_MS  -> ok acquired=0|1 ms=<time spent>
 *   release                   -> ok released=0|1
 *   force                     -> ok existed=0|1        (hl_lock_force_unlock)
 *   locked | held | count | ttl | lost
 *                             -> ok <that word>=<number>
 *   token | lasttoken         -> ok token=<n>  (hl_lock_token,
 * hl_lock_last_token) waitlost TIMEOUT_MS       -> ok lost=0|1 ms=<time spent>
 *   owner                     -> ok owner=<uuid>:<id>
 *   contend ITERS PATH [CS_PATH TAG [PAUSE_MS]]
 *                             -> ok done=N retries=R lost=L ms=<time spent>
 *                                   maxwait=<longest acquire, ms>
 *                                   [lostwhy=[<the first lost hold: its
 *                                   counter value, when, the error>]]
 *       ITERS times: acquire (watchdog; each attempt waits up to 20 s),
 *       read the decimal counter in the file PATH, sleep 1 ms, write it
 *       back plus one, release. The file is shared with Redisson threads
 *       doing the same under the same lock, so a lost increment means two
 *       holders at once. A read handle only reads the counter (sleeping
 *       2 ms), as readers share the lock. With CS_PATH, each hold is also
 *       recorded there as the lines "enter TAG" right after the acquire
 *       and "leave TAG" right before the release, each one write() to an
 *       O_APPEND descriptor (the format of the C tests' overlap checker,
 *       tests/harness.h ht_cs_enter); a fenced handle appends its token to
 *       the tag ("TAG#<token>"). PAUSE_MS: a pause after each release,
 *       outside the lock.
 *       An attempt that fails (HL_EIO during a failover) is retried
 *       (retries=), a release that finds the hold gone counts in lost=,
 *       one that Redis did not confirm (HL_EINDOUBT: a master killed
 *       under it; the hold, no longer renewed, ends with its lease) in
 *       indoubt= ([indoubtwhy=[<the first>]]), and the loop goes on;
 *       the whole loop ends with "err" after 60 s without progress.
 *   quit                      -> bye (then exits 0)
 *
 * The synchronizers (make interop's n, o, p scenarios) on the same NAME,
 * their handles made on first use (see sync_command):
 *
 *   sem_set N                 -> ok set=0|1 (hl_semaphore_try_set_permits)
 *   sem_acquire N WAIT_MS     -> ok acquired=0|1 ms=<time spent>
 *   sem_release N             -> ok released=N
 *   sem_avail                 -> ok available=<n>
 *   sem_contend ITERS         -> ok done=N max=M ms=<time spent>
 *       ITERS times: acquire 1 permit (each attempt waits up to 20 s), add
 *       1 to the counter NAME:inuse (hl_semaphore_add_permits on it: an
 *       atomic add answering the new value, the same key a Java
 *       RAtomicLong increments), sleep 1 ms, subtract 1, release. max= is
 *       the highest value seen after the add.
 *   xs_set N                  -> ok set=0|1       (hl_expsem_try_set_permits)
 *   xs_acquire WAIT_MS LEASE_MS -> ok acquired=0|1 ms=<time spent> id=<hex>
 *   xs_release ID             -> ok released=1 (or err HL_ENOTHELD, HL_ELOST)
 *   xs_avail | xs_permits | xs_acquired -> ok <that word>=<n>
 *   la_set N                  -> ok set=0|1       (hl_latch_try_set_count)
 *   la_down                   -> ok left=<n>
 *   la_count                  -> ok count=<n>
 *   la_wait TIMEOUT_MS        -> ok open=0|1 ms=<time spent>
 *   la_delete                 -> ok existed=0|1
 *
 * One thread does everything, so the handle's owner (the calling thread) is
 * the same for every command. End of input acts as "quit".
 */
#define _POSIX_C_SOURCE 200809L

#include <hilock.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Decode hex into buf (at most cap bytes); returns the length or -1. */
static long unhex(char *buf, size_t cap, const char *hex)
{
	size_t n = strlen(hex), i;

	if (n % 2 != 0 || n / 2 > cap)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned int byte;
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -1;
		buf[i] = (char)byte;
	}
	return (long)(n / 2);
}

/* The shared counter: a zero-padded decimal at offset 0 of the file,
 * always written whole at once (pwrite of COUNTER_WIDTH bytes). */
#define COUNTER_WIDTH 20

static int counter_read(int fd, long long *value)
{
	char buf[COUNTER_WIDTH + 1];
	ssize_t n = pread(fd, buf, COUNTER_WIDTH, 0);

	if (n != COUNTER_WIDTH)
		return -1;
	buf[COUNTER_WIDTH] = '\0';
	*value = strtoll(buf, NULL, 10);
	return 0;
}

static int counter_write(int fd, long long value)
{
	char buf[COUNTER_WIDTH + 1];

	snprintf(buf, sizeof(buf), "%0*lld", COUNTER_WIDTH, value);
	return pwrite(fd, buf, COUNTER_WIDTH, 0) == COUNTER_WIDTH ? 0 : -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One line of the overlap record: a single write() to an O_APPEND
 * descriptor, so lines of several processes never interleave. */
static int cs_line(int fd, const char *what, const char *tag, int64_t token)
{
	char buf[160];
	int n = token >= 0 ? snprintf(buf, sizeof(buf), "%s %s#%" PRId64 "\n",
	                              what, tag, token)
	                   : snprintf(buf, sizeof(buf), "%s %s\n", what, tag);
	if (fd < 0)
		return 0;
	return n > 0 && (size_t)n < sizeof(buf) &&
	                       write(fd, buf, (size_t)n) == (ssize_t)n
	               ? 0
	               : -1;
}

/* The contend command (see the top of the file). */
static void contend(hl_lock *lock, long long iters, const char *path,
                    const char *cs_path, const char *tag, long long pause)
{
	long long done = 0, retries = 0, lost = 0, indoubt = 0, value;
	int64_t t0 = now_ms(), progress = t0, t_try, max_wait = 0;
	char why[600] = "", doubtwhy[600] = "";
	int reader = hl_lock_kind(lock) == HL_LOCK_READ;
	int fenced = hl_lock_kind(lock) == HL_LOCK_FENCED;
	int fd = open(path, O_RDWR), cs = -1;

	if (fd < 0) {
		printf("err HL_ESYSTEM cannot open %s\n", path);
		return;
	}
	if (cs_path &&
	    (cs = open(cs_path, O_WRONLY | O_APPEND | O_CREAT, 0644)) < 0) {
		printf("err HL_ESYSTEM cannot open %s\n", cs_path);
		close(fd);
		return;
	}
	while (done < iters) {
		int flag = 0, rc;
		int64_t token = -1;

		if (now_ms() - progress > 60000) {
			printf("err STALLED no progress for 60 s after %lld "
			       "of %lld (retries=%lld lost=%lld): %s\n",
			       done, iters, retries, lost, hl_error_last());
			goto out;
		}
		t_try = now_ms();
		rc = hl_lock_try_acquire(&flag, lock, 20000, -1, NULL);
		if (now_ms() - t_try > max_wait)
			max_wait = now_ms() - t_try;
		if (rc != HL_OK || !flag) {
			if (rc != HL_OK && rc != HL_EIO) {
				printf("err %s acquire after %lld of %lld: "
				       "%s\n",
				       hl_status_name(rc), done, iters,
				       hl_error_last());
				goto out;
			}
			retries++;
			continue;
		}
		if (fenced && (rc = hl_lock_token(&token, lock)) != HL_OK) {
			printf("err %s token after %lld of %lld: %s\n",
			       hl_status_name(rc), done, iters,
			       hl_error_last());
			goto out;
		}
		if (cs_line(cs, "enter", tag, token) != 0 ||
		    counter_read(fd, &value) != 0) {
			printf("err HL_ESYSTEM cannot read %s or write %s\n",
			       path, cs_path ? cs_path : "-");
			goto out;
		}
		sleep_ms(reader ? 2 : 1);
		if ((!reader && counter_write(fd, value + 1) != 0) ||
		    cs_line(cs, "leave", tag, token) != 0) {
			printf("err HL_ESYSTEM cannot write %s or %s\n", path,
			       cs_path ? cs_path : "-");
			goto out;
		}
		done++;
		progress = now_ms();
		for (int rtry = 0;; rtry++) {
			rc = hl_lock_release(NULL, lock);
			if (rc == HL_OK)
				break;
			if (rc == HL_ELOST || rc == HL_ENOTHELD) {
				if (lost++ == 0)
					snprintf(why, sizeof(why),
					         " lostwhy=[hold %lld at %lld "
					         "ms "
					         "after %d failed releases, "
					         "%s: %s]",
					         value,
					         (long long)(now_ms() - t0),
					         rtry, hl_status_name(rc),
					         hl_error_last());
				break;
			}
			if (rc == HL_EINDOUBT) {
				if (indoubt++ == 0)
					snprintf(doubtwhy, sizeof(doubtwhy),
					         " indoubtwhy=[hold %lld at "
					         "%lld "
					         "ms after %d failed releases: "
					         "%s]",
					         value,
					         (long long)(now_ms() - t0),
					         rtry, hl_error_last());
				break;
			}
			if (rc != HL_EIO || now_ms() - progress > 60000) {
				printf("err %s release after %lld of %lld: "
				       "%s\n",
				       hl_status_name(rc), done, iters,
				       hl_error_last());
				goto out;
			}
			retries++;
		}
		if (pause > 0)
			sleep_ms((long)pause);
	}
	printf("ok done=%lld retries=%lld lost=%lld indoubt=%lld ms=%" PRId64
	       " maxwait=%" PRId64 "%s%s\n",
	       done, retries, lost, indoubt, now_ms() - t0, max_wait, why,
	       doubtwhy);
out:
	close(fd);
	if (cs >= 0)
		close(cs);
}

/* The kind called name (hl_lock_kind_name), or -1. */
static int kind_by_name(const char *name)
{
	int k;
	for (k = 0; k < 16; k++)
		if (strcmp(hl_lock_kind_name(k), name) == 0)
			return k;
	return -1;
}

static void reply_err(int rc)
{
	printf("err %s %s\n", hl_status_name(rc), hl_error_last());
}

static void reply_flag(const char *what, int rc, long long value)
{
	if (rc == HL_OK)
		printf("ok %s=%lld\n", what, value);
	else
		reply_err(rc);
}

/* The synchronizer commands (see the top of the file); returns 1 if line
 * was one of them. */
static int sync_command(hl_client *client, const char *name, size_t name_len,
                        const char *line)
{
	static hl_semaphore *sem, *inuse;
	static hl_expsem *xs;
	static hl_latch *latch;
	char cmd[32] = "", word[80] = "", id[HL_PERMIT_ID_LEN + 1] = "";
	char inuse_name[1100];
	long long a = 0, b = 0;
	int n = sscanf(line, "%31s %lld %lld", cmd, &a, &b);
	int flag = 0, rc = HL_OK;
	int64_t v = 0, t0 = now_ms();

	if (n < 1)
		return 0;
	if (strncmp(cmd, "sem_", 4) == 0 && sem == NULL) {
		memcpy(inuse_name, name, name_len);
		memcpy(inuse_name + name_len, ":inuse", 6);
		rc = hl_semaphore_new(&sem, client, name, name_len);
		if (rc == HL_OK)
			rc = hl_semaphore_new(&inuse, client, inuse_name,
			                      name_len + 6);
	} else if (strncmp(cmd, "xs_", 3) == 0 && xs == NULL) {
		rc = hl_expsem_new(&xs, client, name, name_len);
	} else if (strncmp(cmd, "la_", 3) == 0 && latch == NULL) {
		rc = hl_latch_new(&latch, client, name, name_len);
	}
	if (rc != HL_OK) {
		reply_err(rc);
		return 1;
	}
	if (strcmp(cmd, "sem_set") == 0 && n == 2) {
		rc = hl_semaphore_try_set_permits(&flag, sem, a);
		reply_flag("set", rc, flag);
	} else if (strcmp(cmd, "sem_acquire") == 0 && n == 3) {
		rc = hl_semaphore_try_acquire(&flag, sem, a, b, NULL);
		if (rc == HL_OK)
			printf("ok acquired=%d ms=%" PRId64 "\n", flag,
			       now_ms() - t0);
		else
			reply_err(rc);
	} else if (strcmp(cmd, "sem_release") == 0 && n == 2) {
		rc = hl_semaphore_release(sem, a);
		reply_flag("released", rc, a);
	} else if (strcmp(cmd, "sem_avail") == 0) {
		rc = hl_semaphore_available(&v, sem);
		reply_flag("available", rc, v);
	} else if (strcmp(cmd, "sem_contend") == 0 && n == 2) {
		long long done = 0, max = 0;
		while (done < a) {
			rc = hl_semaphore_try_acquire(&flag, sem, 1, 20000,
			                              NULL);
			if (rc != HL_OK || !flag)
				break;
			rc = hl_semaphore_add_permits(&v, inuse, 1);
			if (rc == HL_OK) {
				max = v > max ? v : max;
				sleep_ms(1);
				rc = hl_semaphore_add_permits(NULL, inuse, -1);
			}
			if (rc == HL_OK)
				rc = hl_semaphore_release(sem, 1);
			if (rc != HL_OK)
				break;
			done++;
		}
		if (rc != HL_OK)
			reply_err(rc);
		else if (done < a)
			printf("err TIMEOUT no permit in 20 s after %lld of "
			       "%lld\n",
			       done, a);
		else
			printf("ok done=%lld max=%lld ms=%" PRId64 "\n", done,
			       max, now_ms() - t0);
	} else if (strcmp(cmd, "xs_set") == 0 && n == 2) {
		rc = hl_expsem_try_set_permits(&flag, xs, a);
		reply_flag("set", rc, flag);
	} else if (strcmp(cmd, "xs_acquire") == 0 && n == 3) {
		rc = hl_expsem_try_acquire(&flag, id, 1, xs, a, b, NULL);
		if (rc == HL_OK)
			printf("ok acquired=%d ms=%" PRId64 " id=%s\n", flag,
			       now_ms() - t0, flag ? id : "-");
		else
			reply_err(rc);
	} else if (strcmp(cmd, "xs_release") == 0 &&
	           sscanf(line, "%31s %79s", cmd, word) == 2) {
		rc = hl_expsem_release(xs, word);
		reply_flag("released", rc, 1);
	} else if (strcmp(cmd, "xs_avail") == 0) {
		rc = hl_expsem_available(&v, xs);
		reply_flag("available", rc, v);
	} else if (strcmp(cmd, "xs_permits") == 0) {
		rc = hl_expsem_permits(&v, xs);
		reply_flag("permits", rc, v);
	} else if (strcmp(cmd, "xs_acquired") == 0) {
		rc = hl_expsem_acquired(&v, xs);
		reply_flag("acquired", rc, v);
	} else if (strcmp(cmd, "la_set") == 0 && n == 2) {
		rc = hl_latch_try_set_count(&flag, latch, a);
		reply_flag("set", rc, flag);
	} else if (strcmp(cmd, "la_down") == 0) {
		rc = hl_latch_count_down(&v, latch);
		reply_flag("left", rc, v);
	} else if (strcmp(cmd, "la_count") == 0) {
		rc = hl_latch_count(&v, latch);
		reply_flag("count", rc, v);
	} else if (strcmp(cmd, "la_wait") == 0 && n == 2) {
		rc = hl_latch_wait(&flag, latch, a, NULL);
		if (rc == HL_OK)
			printf("ok open=%d ms=%" PRId64 "\n", flag,
			       now_ms() - t0);
		else
			reply_err(rc);
	} else if (strcmp(cmd, "la_delete") == 0) {
		rc = hl_latch_delete(&flag, latch);
		reply_flag("existed", rc, flag);
	} else if (strcmp(cmd, "sync_free") == 0) {
		hl_semaphore_free(sem);
		hl_semaphore_free(inuse);
		hl_expsem_free(xs);
		hl_latch_free(latch);
		sem = inuse = NULL;
		xs = NULL;
		latch = NULL;
		return 1;
	} else {
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	hl_client_options opts;
	hl_client *client = NULL;
	hl_lock *handles[16] = {NULL}, *lock = NULL;
	char line[512], owner[128], name[1024];
	long name_len;
	int rc, kind = HL_LOCK_REENTRANT, k;

	if (argc != 4 && argc != 5) {
		fprintf(stderr,
		        "usage: %s URL NAME_HEX WATCHDOG_TIMEOUT_MS [KIND]\n",
		        argv[0]);
		return 2;
	}
	name_len = unhex(name, sizeof(name), argv[2]);
	if (name_len <= 0) {
		fprintf(stderr, "%s: bad NAME_HEX\n", argv[0]);
		return 2;
	}
	if (argc == 5 && (kind = kind_by_name(argv[4])) < 0) {
		fprintf(stderr, "%s: unknown lock kind %s\n", argv[0], argv[4]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	hl_client_options_init(&opts, HL_CLIENT_OPTIONS_VERSION);
	opts.watchdog_timeout_ms = strtoll(argv[3], NULL, 10);
	opts.client_name = "hilock-interop-peer";
	rc = hl_client_new(&client, argv[1], &opts);
	if (rc != HL_OK) {
		printf("err %s %s\n", hl_status_name(rc), hl_error_last());
		return 1;
	}
	rc = hl_lock_new_kind(&handles[kind], client, kind, name,
	                      (size_t)name_len);
	if (rc == HL_OK)
		rc = hl_lock_owner(NULL, lock = handles[kind], owner,
		                   sizeof(owner));
	if (rc != HL_OK) {
		reply_err(rc);
		hl_lock_free(handles[kind]);
		hl_client_free(client);
		return 1;
	}
	printf("ready %s\n", owner);

	while (fgets(line, sizeof(line), stdin) != NULL) {
		char cmd[32] = "", path[200] = "", cs_path[200] = "",
		     tag[64] = "";
		long long a = 0, b = 0;
		int n = sscanf(line, "%31s %lld %lld", cmd, &a, &b);
		int flag = 0, words;
		int64_t v = 0, t0 = now_ms();

		if (n < 1)
			continue;
		if (strcmp(cmd, "quit") == 0) {
			break;
		} else if (strcmp(cmd, "use") == 0 &&
		           sscanf(line, "%31s %63s", cmd, tag) == 2) {
			k = kind_by_name(tag);
			if (k < 0) {
				printf("err HL_EINVAL unknown lock kind %s\n",
				       tag);
				continue;
			}
			rc = HL_OK;
			if (!handles[k])
				rc = hl_lock_new_kind(&handles[k], client, k,
				                      name, (size_t)name_len);
			if (rc == HL_OK)
				lock = handles[k];
			reply_flag("kind", rc, k);
		} else if (strcmp(cmd, "acquire") == 0 && n == 3) {
			rc = hl_lock_try_acquire(&flag, lock, a, b, NULL);
			if (rc == HL_OK)
				printf("ok acquired=%d ms=%" PRId64 "\n", flag,
				       now_ms() - t0);
			else
				reply_err(rc);
		} else if (strcmp(cmd, "release") == 0) {
			rc = hl_lock_release(&flag, lock);
			reply_flag("released", rc, flag);
		} else if (strcmp(cmd, "force") == 0) {
			rc = hl_lock_force_unlock(&flag, lock);
			reply_flag("existed", rc, flag);
		} else if (strcmp(cmd, "locked") == 0) {
			rc = hl_lock_is_locked(&flag, lock);
			reply_flag("locked", rc, flag);
		} else if (strcmp(cmd, "held") == 0) {
			rc = hl_lock_is_held(&flag, lock);
			reply_flag("held", rc, flag);
		} else if (strcmp(cmd, "count") == 0) {
			rc = hl_lock_hold_count(&v, lock);
			reply_flag("count", rc, v);
		} else if (strcmp(cmd, "ttl") == 0) {
			rc = hl_lock_ttl(&v, lock);
			reply_flag("ttl", rc, v);
		} else if (strcmp(cmd, "lost") == 0) {
			rc = hl_lock_is_lost(&flag, lock);
			reply_flag("lost", rc, flag);
		} else if (strcmp(cmd, "token") == 0) {
			rc = hl_lock_token(&v, lock);
			reply_flag("token", rc, v);
		} else if (strcmp(cmd, "lasttoken") == 0) {
			rc = hl_lock_last_token(&v, lock);
			reply_flag("token", rc, v);
		} else if (strcmp(cmd, "waitlost") == 0 && n == 2) {
			rc = hl_lock_wait_lost(&flag, lock, a, NULL);
			if (rc == HL_OK)
				printf("ok lost=%d ms=%" PRId64 "\n", flag,
				       now_ms() - t0);
			else
				reply_err(rc);
		} else if (strcmp(cmd, "contend") == 0 &&
		           ((words = sscanf(
		                     line, "%31s %lld %199s %199s %63s %lld",
		                     cmd, &a, path, cs_path, tag, &b)) == 3 ||
		            words == 5 || words == 6)) {
			contend(lock, a, path, words >= 5 ? cs_path : NULL, tag,
			        words == 6 ? b : 0);
		} else if (sync_command(client, name, (size_t)name_len, line)) {
			/* answered there */
		} else if (strcmp(cmd, "owner") == 0) {
			printf("ok owner=%s\n", owner);
		} else {
			printf("err HL_EINVAL unknown command\n");
		}
	}
	printf("bye\n");
	sync_command(client, name, (size_t)name_len, "sync_free");
	for (k = 0; k < 16; k++)
		hl_lock_free(handles[k]);
	hl_client_free(client);
	return 0;
}
