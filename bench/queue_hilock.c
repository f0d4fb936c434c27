/* hilock's C blocking queue for hlqueue: see queue_hilock.h. */
#include "queue_hilock.h"

#include <stdio.h>

#ifdef HLQ_REAL
#include <hilock.h>

#include <stdlib.h>
#include <string.h>

struct hlq {
	hl_client *c;
	hl_object *q;
};

int hlq_built(void)
{
	return 1;
}

const char *hlq_why(void)
{
	return "";
}

void *hlq_open(const char *url, const char *name, char *err, size_t err_len)
{
	struct hlq *h = calloc(1, sizeof(*h));
	if (!h || hl_client_new(&h->c, url, NULL) != HL_OK ||
	    hl_blocking_queue_new(&h->q, h->c, name, strlen(name)) != HL_OK) {
		snprintf(err, err_len, "%s", hl_error_last());
		hlq_close(h);
		return NULL;
	}
	return h;
}

int hlq_offer(void *q, const char *v, size_t len, char *err, size_t err_len)
{
	int ok = 0;
	if (hl_blocking_queue_offer(&ok, ((struct hlq *)q)->q, v, len) !=
	    HL_OK) {
		snprintf(err, err_len, "%s", hl_error_last());
		return -1;
	}
	return 0;
}

long hlq_take(void *q, char *buf, size_t cap, char *err, size_t err_len)
{
	hl_value *v = NULL;
	size_t n = 0;
	if (hl_blocking_queue_take(&v, ((struct hlq *)q)->q) != HL_OK) {
		snprintf(err, err_len, "%s", hl_error_last());
		return -1;
	}
	const char *b = hl_value_bytes(v, &n);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, b ? b : "", n);
	buf[n] = 0;
	hl_value_free(v);
	return (long)n;
}

void hlq_close(void *q)
{
	struct hlq *h = q;
	if (!h)
		return;
	hl_object_free(h->q);
	hl_client_free(h->c);
	free(h);
}

#else /* the installed hilock has no blocking_queue kind (yet) */

int hlq_built(void)
{
	return 0;
}

const char *hlq_why(void)
{
	return "this libhilock has no hl_blocking_queue_new/offer/take as "
	       "bench/queue_hilock.c calls them (the blocking_queue kind is "
	       "not built, or its calls differ: adapt queue_hilock.c)";
}

void *hlq_open(const char *url, const char *name, char *err, size_t err_len)
{
	(void)url, (void)name;
	snprintf(err, err_len, "%s", hlq_why());
	return NULL;
}

int hlq_offer(void *q, const char *v, size_t len, char *err, size_t err_len)
{
	(void)q, (void)v, (void)len;
	snprintf(err, err_len, "%s", hlq_why());
	return -1;
}

long hlq_take(void *q, char *buf, size_t cap, char *err, size_t err_len)
{
	(void)q, (void)buf, (void)cap;
	snprintf(err, err_len, "%s", hlq_why());
	return -1;
}

void hlq_close(void *q)
{
	(void)q;
}
#endif
