/*
 * lease: take a lock for a fixed time, without the watchdog.
 *
 *   hilock_lease [LOCK [WAIT_MS [LEASE_MS]]]
 *
 * Defaults: "hilock:lease", wait 2000 ms, lease 10000 ms. The server comes
 * from HILOCK_URL (default redis://127.0.0.1:6379/0).
 *
 * With a fixed lease nobody renews the lock: Redis deletes it when the lease
 * runs out, even if this process hangs or dies. Use it when the work has a
 * known upper bound; take the watchdog (lease -1) when it has not.
 * Exit status: 0 acquired, 3 busy (the wait ran out), 1 error.
 */
#include <hilock.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *url = getenv("HILOCK_URL");
	const char *name = argc > 1 ? argv[1] : "hilock:lease";
	int64_t wait_ms = argc > 2 ? atoll(argv[2]) : 2000;
	int64_t lease_ms = argc > 3 ? atoll(argv[3]) : 10000;
	hl_client *client = NULL;
	hl_lock *lock = NULL;
	int64_t ttl = 0;
	int acquired = 0, released = 0, rc, status = 1;

	if (url == NULL || url[0] == '\0')
		url = "redis://127.0.0.1:6379/0";

	rc = hl_client_new(&client, url, NULL);
	if (rc != HL_OK) {
		fprintf(stderr, "hl_client_new: %s (%s)\n", hl_status_name(rc),
		        hl_error_last());
		return 1;
	}
	rc = hl_lock_new(&lock, client, name, strlen(name));
	if (rc != HL_OK)
		goto fail;

	/* Wait at most wait_ms for the lock; hold it at most lease_ms.
	 * "Someone else has it" is not an error: acquired is simply 0. */
	rc = hl_lock_try_acquire(&acquired, lock, wait_ms, lease_ms, NULL);
	if (rc != HL_OK)
		goto fail;
	if (!acquired) {
		printf("%s is busy: not acquired within %lld ms\n", name,
		       (long long)wait_ms);
		status = 3;
		goto out;
	}

	/* The remaining time to live, as Redis sees it (PTTL). */
	rc = hl_lock_ttl(&ttl, lock);
	if (rc != HL_OK)
		goto fail;
	printf("acquired %s for %lld ms, ttl %lld ms\n", name,
	       (long long)lease_ms, (long long)ttl);

	/* ... the work goes here; it must finish before the lease ends ... */

	/* Release early. If the lease had run out already, the hold was
	 * lost: the lock's lost fd (hl_lock_lost_fd) became readable and a
	 * "lost" event was queued when the lease ended, and this call says
	 * HL_ELOST. */
	rc = hl_lock_release(&released, lock);
	if (rc != HL_OK)
		goto fail;
	printf("released %s (now free: %s)\n", name, released ? "yes" : "no");
	status = 0;
	goto out;

fail:
	fprintf(stderr, "%s: %s (%s)\n", name, hl_status_name(rc),
	        hl_error_last());
out:
	hl_lock_free(lock);
	hl_client_free(client);
	return status;
}
