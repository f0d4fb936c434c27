/*
 * Commands as RESP (an array of bulk strings), formatted by hilock itself:
 * the bytes hiredis's redisFormatCommandArgv makes, without its sprintf per
 * argument and its allocation per command (this runs on every call).
 */
#include "transport/transport.h"

#include <string.h>

/* A header: type, up to 20 digits, CRLF. */
#define HDR_MAX (1 + 20 + 2)

/* "<type><n>\r\n" at p; returns its length. */
static size_t header(char *p, char type, size_t n)
{
	size_t len;
	p[0] = type;
	len = 1 + hl__fmt_u64(p + 1, n);
	p[len] = '\r';
	p[len + 1] = '\n';
	return len + 2;
}

size_t hl__resp_bound(int argc, const size_t *lens)
{
	size_t need = HDR_MAX;
	int i;
	for (i = 0; i < argc; i++) {
		if (lens[i] > SIZE_MAX / 2 - HDR_MAX - 2 - need)
			return 0;
		need += HDR_MAX + lens[i] + 2;
	}
	return need;
}

size_t hl__resp_write(char *out, int argc, const char **argv,
                      const size_t *lens)
{
	char *p = out;
	int i;
	p += header(p, '*', (size_t)argc);
	for (i = 0; i < argc; i++) {
		p += header(p, '$', lens[i]);
		if (lens[i])
			memcpy(p, argv[i], lens[i]);
		p += lens[i];
		*p++ = '\r';
		*p++ = '\n';
	}
	return (size_t)(p - out);
}
