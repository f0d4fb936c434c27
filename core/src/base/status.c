/* Status table, thread-local error detail and version. */
#include "base/base.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char tl_message[512];
static _Thread_local int tl_code;

const char *hl_status_str(int status)
{
	switch (status) {
#define HL_STATUS_STR_(name, value, msg)                                       \
	case value:                                                            \
		return msg;
		HL_STATUS_MAP(HL_STATUS_STR_)
#undef HL_STATUS_STR_
	}
	return "unknown status";
}

const char *hl_status_name(int status)
{
	switch (status) {
#define HL_STATUS_NAME_(name, value, msg)                                      \
	case value:                                                            \
		return "HL_" #name;
		HL_STATUS_MAP(HL_STATUS_NAME_)
#undef HL_STATUS_NAME_
	}
	return "HL_UNKNOWN";
}

const char *hl_error_last(void)
{
	return tl_message;
}

int hl_error_last_code(void)
{
	return tl_code;
}

/* Formatted into a buffer of its own first: an argument may be
 * hl_error_last() itself (a message that wraps the cause). */
int hl__failv(int status, const char *fmt, va_list ap)
{
	char buf[sizeof(tl_message)];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		snprintf(buf, sizeof(buf), "%s", hl_status_str(status));
	memcpy(tl_message, buf, sizeof(buf));
	tl_code = status;
	return status;
}

int hl__fail_wrap(int status, const char *fmt, ...)
{
	char cause[sizeof(tl_message)];
	size_t n;
	va_list ap;
	memcpy(cause, tl_message, sizeof(cause));
	if (!cause[0])
		snprintf(cause, sizeof(cause), "%s", hl_status_str(status));
	va_start(ap, fmt);
	hl__failv(status, fmt, ap);
	va_end(ap);
	/* "<prefix>: <cause>", cut to fit */
	n = strlen(tl_message);
	if (n + 2 < sizeof(tl_message)) {
		memcpy(tl_message + n, ": ", 2);
		n += 2;
		cause[sizeof(cause) - 1 - n] = '\0';
		memcpy(tl_message + n, cause, strlen(cause) + 1);
	}
	return status;
}

int hl__fail(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	hl__failv(status, fmt, ap);
	va_end(ap);
	return status;
}

const char *hl_version(void)
{
	return HL_VERSION_STRING;
}

int hl_version_number(void)
{
	return HL_VERSION_NUMBER;
}
