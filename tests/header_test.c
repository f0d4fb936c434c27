/*
 * Header test: hilock.h compiles as C89/C99/C11 and C++ with
 * -Wall -Wextra -pedantic -Werror (header_test.cpp includes this file),
 * and its constants agree with the library loaded at run time.
 * Kept valid C89 and C++98: declarations first, no // comments.
 */
#include "hilock.h"
#include "hilock.h" /* include guard */

#include <stdio.h>
#include <string.h>

typedef int (*client_new_fn)(hl_client **, const char *,
                             const hl_client_options *);
typedef int (*try_acquire_fn)(int *, hl_lock *, int64_t, int64_t, hl_cancel *);

static int failures = 0;

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "header test: check failed: %s\n", what);
		failures++;
	}
}

int main(void)
{
	hl_client_options opts = HL_CLIENT_OPTIONS_INIT;
	hl_client_options filled;
	client_new_fn cnew = hl_client_new;
	try_acquire_fn tacq = hl_lock_try_acquire;
	hl_status st = HL_ETIMEDOUT;

	memset(&filled, 0xab, sizeof filled);
	check(HL_OK == 0, "HL_OK == 0");
	check(HL_EINVAL == -1 && HL_ESYSTEM == -14, "status values");
	check(HL_EINDOUBT == -15, "HL_EINDOUBT");
	check(HL_EDEADLK == -16, "HL_EDEADLK");
	check(HL_STATUS_LAST_ == -17, "HL_STATUS_LAST_");
	check(st == -3, "enum type");
	check(opts.version == HL_CLIENT_OPTIONS_VERSION, "options version");
	check(opts.watchdog_timeout_ms == 30000, "watchdog default");
	check(opts.client_name == NULL, "client_name default");
	check(hl_client_options_init(&filled, HL_CLIENT_OPTIONS_VERSION) ==
	              HL_OK,
	      "hl_client_options_init");
	check(memcmp(&filled, &opts, sizeof opts) == 0 ||
	              (filled.version == opts.version &&
	               filled.watchdog_timeout_ms == opts.watchdog_timeout_ms &&
	               filled.connect_timeout_ms == opts.connect_timeout_ms &&
	               filled.command_timeout_ms == opts.command_timeout_ms &&
	               filled.retry_attempts == opts.retry_attempts &&
	               filled.retry_delay_ms == opts.retry_delay_ms &&
	               filled.client_name == opts.client_name &&
	               filled.pool_size == opts.pool_size &&
	               filled.subscription_timeout_ms ==
	                       opts.subscription_timeout_ms),
	      "hl_client_options_init == HL_CLIENT_OPTIONS_INIT");
	check(strcmp(hl_status_name(HL_ETIMEDOUT), "HL_ETIMEDOUT") == 0,
	      "hl_status_name");
	check(strcmp(hl_version(), HL_VERSION_STRING) == 0, "hl_version");
	check(hl_version_number() == HL_VERSION_NUMBER, "hl_version_number");
	check(cnew != NULL && tacq != NULL, "function pointers");
	if (failures)
		return 1;
	printf("header test ok\n");
	return 0;
}
