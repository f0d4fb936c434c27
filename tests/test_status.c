/*
 * Status table, error detail, version, owner ids and cancellation flags:
 * everything that needs no Redis.
 */
#include "harness.h"

#include <limits.h>
#include <pthread.h>

/* ---- table: every code has its name and message, from one list --------- */
static void table(void)
{
	struct {
		int code;
		const char *name, *msg;
	} expected[] = {
#define X(name, value, msg) {value, "HL_" #name, msg},
	        HL_STATUS_MAP(X)
#undef X
	};
	size_t i, j, n = sizeof expected / sizeof expected[0];

	HT_EQ(n, 17);
	for (i = 0; i < n; i++) {
		HT_EQ(expected[i].code, -(int)i); /* 0, -1, ... -15 */
		HT_STREQ(hl_status_name(expected[i].code), expected[i].name);
		HT_STREQ(hl_status_str(expected[i].code), expected[i].msg);
		/* messages and names are distinct */
		for (j = 0; j < i; j++) {
			HT_CHECK(strcmp(hl_status_str(expected[i].code),
			                hl_status_str(expected[j].code)) != 0);
			HT_CHECK(strcmp(hl_status_name(expected[i].code),
			                hl_status_name(expected[j].code)) != 0);
		}
	}
	HT_STREQ(hl_status_name(HL_OK), "HL_OK");
	HT_STREQ(hl_status_name(HL_EFORKED), "HL_EFORKED");
	HT_STREQ(hl_status_str(HL_ETIMEDOUT), "timed out");
	HT_EQ(HL_ESYSTEM, -14);
	HT_EQ(HL_EINDOUBT, -15);
	HT_EQ(HL_EDEADLK, -16);
}

/* ---- unknown codes ------------------------------------------------------ */
static void unknown(void)
{
	int codes[] = {1,    2,     100,     -17,     -18,
	               -100, -1000, INT_MIN, INT_MAX, HL_STATUS_LAST_};
	size_t i;

	for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		HT_STREQ(hl_status_name(codes[i]), "HL_UNKNOWN");
		HT_STREQ(hl_status_str(codes[i]), "unknown status");
	}
}

/* ---- hl_error_last: never NULL, thread-local ---------------------------- */
static void *fresh_thread(void *arg)
{
	const char *m = hl_error_last();
	int *ok = arg;

	/* a thread that made no failing call has no detail */
	*ok = m != NULL && m[0] == '\0' && hl_error_last_code() == HL_OK;
	/* a failure here does not leak into the main thread */
	if (*ok)
		*ok = hl_client_options_init(NULL, HL_CLIENT_OPTIONS_VERSION) ==
		              HL_EINVAL &&
		      hl_error_last()[0] != '\0' &&
		      hl_error_last_code() == HL_EINVAL;
	return NULL;
}

static void error_last(void)
{
	pthread_t t;
	int ok = 0;
	hl_client_options o;
	const char *m;

	m = hl_error_last();
	HT_CHECK(m != NULL);
	HT_STREQ(m, "");
	HT_EQ(hl_error_last_code(), HL_OK);

	HT_RC(hl_client_options_init(&o, 9999), HL_EINVAL);
	HT_RC(hl_client_options_init(&o, 0), HL_EINVAL);
	m = hl_error_last();
	HT_CHECK(m != NULL && m[0] != '\0');

	HT_CHECK(pthread_create(&t, NULL, fresh_thread, &ok) == 0);
	HT_CHECK(pthread_join(t, NULL) == 0);
	HT_CHECKF(ok, "hl_error_last() is not thread-local / empty on a new "
	              "thread");
	/* the other thread's failure did not change ours */
	HT_EQ(hl_error_last_code(), HL_EINVAL);
	HT_CHECK(hl_error_last()[0] != '\0');
}

/* ---- version ------------------------------------------------------------ */
static void version(void)
{
	char buf[64];

	HT_STREQ(hl_version(), HL_VERSION_STRING);
	HT_EQ(hl_version_number(), HL_VERSION_NUMBER);
	snprintf(buf, sizeof buf, "%d.%d.%d", HL_VERSION_MAJOR,
	         HL_VERSION_MINOR, HL_VERSION_PATCH);
	HT_STREQ(hl_version(), buf);
}

/* ---- owner ids ---------------------------------------------------------- */
static void *get_thread_owner(void *arg)
{
	uint64_t *out = arg;
	out[0] = hl_thread_owner_id();
	out[1] = hl_thread_owner_id();
	return NULL;
}

static void owner_ids(void)
{
	uint64_t ids[64], a[2], b[2], mine;
	size_t i, j;
	pthread_t t;

	for (i = 0; i < 64; i++) {
		ids[i] = hl_owner_id_new();
		HT_CHECK(ids[i] != 0);
		for (j = 0; j < i; j++)
			HT_CHECK(ids[i] != ids[j]);
	}
	mine = hl_thread_owner_id();
	HT_CHECK(mine != 0);
	HT_EQ(hl_thread_owner_id(), mine); /* stable */

	HT_CHECK(pthread_create(&t, NULL, get_thread_owner, a) == 0);
	HT_CHECK(pthread_join(t, NULL) == 0);
	/* the first thread has exited: its id must not be reused */
	HT_CHECK(pthread_create(&t, NULL, get_thread_owner, b) == 0);
	HT_CHECK(pthread_join(t, NULL) == 0);
	HT_EQ(a[0], a[1]);
	HT_EQ(b[0], b[1]);
	HT_CHECK(a[0] != 0 && b[0] != 0);
	HT_CHECK(a[0] != mine && b[0] != mine);
	HT_CHECKF(a[0] != b[0], "thread owner id %llu reused after exit",
	          (unsigned long long)a[0]);
	/* explicit ids never collide with thread ids */
	for (i = 0; i < 64; i++)
		HT_CHECK(ids[i] != mine && ids[i] != a[0] && ids[i] != b[0]);
	HT_CHECK(hl_owner_id_new() != hl_thread_owner_id());
}

/* ---- cancellation flags ------------------------------------------------- */
static void *trigger_later(void *arg)
{
	ht_sleep_ms(20);
	hl_cancel_trigger(arg);
	return NULL;
}

static void cancel(void)
{
	hl_cancel *c = NULL, *d = NULL;
	pthread_t t;
	int64_t deadline;

	HT_RC(hl_cancel_new(NULL), HL_EINVAL);
	HT_OK(hl_cancel_new(&c));
	HT_CHECK(c != NULL);
	HT_OK(hl_cancel_new(&d));
	HT_CHECK(d != NULL && d != c);
	HT_EQ(hl_cancel_is_triggered(c), 0);
	hl_cancel_trigger(c);
	HT_EQ(hl_cancel_is_triggered(c), 1);
	HT_EQ(hl_cancel_is_triggered(d), 0); /* independent */
	hl_cancel_trigger(c);                /* idempotent, sticky */
	HT_EQ(hl_cancel_is_triggered(c), 1);
	hl_cancel_reset(c);
	HT_EQ(hl_cancel_is_triggered(c), 0);
	hl_cancel_reset(c);
	HT_EQ(hl_cancel_is_triggered(c), 0);

	/* from another thread */
	HT_CHECK(pthread_create(&t, NULL, trigger_later, d) == 0);
	deadline = ht_now_ms() + 5000;
	while (!hl_cancel_is_triggered(d) && ht_now_ms() < deadline)
		ht_sleep_ms(1);
	HT_CHECK(pthread_join(t, NULL) == 0);
	HT_EQ(hl_cancel_is_triggered(d), 1);

	/* NULL is ignored */
	hl_cancel_trigger(NULL);
	hl_cancel_reset(NULL);
	HT_EQ(hl_cancel_is_triggered(NULL), 0);
	hl_cancel_free(NULL);
	hl_cancel_free(c);
	hl_cancel_free(d);
}

HT_MAIN(HT_CASE(table), HT_CASE(unknown), HT_CASE(error_last), HT_CASE(version),
        HT_CASE(owner_ids), HT_CASE(cancel))
