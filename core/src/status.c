/* Status table, thread-local error detail and version. */
#include "internal.h"

#include <stdio.h>

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

int hl__failv(int status, const char *fmt, va_list ap)
{
	int n = vsnprintf(tl_message, sizeof(tl_message), fmt, ap);
	if (n < 0)
		snprintf(tl_message, sizeof(tl_message), "%s",
		         hl_status_str(status));
	tl_code = status;
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
