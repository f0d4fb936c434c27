/* Time, condition variables and a small hash map. */
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int64_t hl__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t hl__now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Where pthread_condattr_setclock is missing (macOS), the condition keeps
 * its default clock (CLOCK_REALTIME) and a wait is converted: a relative
 * wait where the system has one (immune to steps of the wall clock), else
 * the same span on the wall clock from now. */
int hl__cond_init(pthread_cond_t *cond)
{
#if defined(HL_HAVE_CONDATTR_SETCLOCK)
	pthread_condattr_t attr;
	int rc = pthread_condattr_init(&attr);
	if (rc)
		return rc;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return rc;
#else
	return pthread_cond_init(cond, NULL);
#endif
}

int hl__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu,
                        int64_t deadline_ms)
{
	struct timespec ts;
#if !defined(HL_HAVE_CONDATTR_SETCLOCK)
	int64_t left;
	int rc;
#endif
	if (deadline_ms < 0)
		return pthread_cond_wait(cond, mu);
#if defined(HL_HAVE_CONDATTR_SETCLOCK)
	ts.tv_sec = (time_t)(deadline_ms / 1000);
	ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
	return pthread_cond_timedwait(cond, mu, &ts);
#else
	left = deadline_ms - hl__now_ms();
	if (left < 0)
		left = 0;
#if defined(HL_HAVE_COND_TIMEDWAIT_RELATIVE_NP)
	ts.tv_sec = (time_t)(left / 1000);
	ts.tv_nsec = (long)(left % 1000) * 1000000L;
	rc = pthread_cond_timedwait_relative_np(cond, mu, &ts);
#else
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(left / 1000);
	ts.tv_nsec += (long)(left % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	rc = pthread_cond_timedwait(cond, mu, &ts);
#endif
	/* Early by the other clock (the wall clock stepped forward): a wake-up
	 * to the caller, who waits again for what is left. */
	if (rc == ETIMEDOUT && hl__now_ms() < deadline_ms)
		rc = 0;
	return rc;
#endif
}

int64_t hl__deadline(int64_t wait_ms)
{
	if (wait_ms < 0)
		return -1;
	return hl__now_ms() + wait_ms;
}

int64_t hl__remaining(int64_t deadline_ms)
{
	int64_t left;
	if (deadline_ms < 0)
		return -1;
	left = deadline_ms - hl__now_ms();
	return left > 0 ? left : 0;
}

size_t hl__fmt_u64(char *buf, uint64_t v)
{
	char tmp[HL_DEC_MAX];
	size_t n = 0, i;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

size_t hl__fmt_i64(char *buf, int64_t v)
{
	if (v >= 0)
		return hl__fmt_u64(buf, (uint64_t)v);
	buf[0] = '-';
	return 1 + hl__fmt_u64(buf + 1, -(uint64_t)v);
}

const char *hl__printable(char *buf, size_t buf_len, const char *name,
                          size_t len)
{
	size_t i, o = 0;
	for (i = 0; i < len && o + 5 < buf_len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
			buf[o++] = (char)ch;
		} else {
			static const char hex[] = "0123456789abcdef";
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[ch >> 4];
			buf[o++] = hex[ch & 15];
		}
	}
	if (i < len && o + 4 <= buf_len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* Equal jitter (as Redisson's default): half of min(base * 2^attempt,
 * 2 * base), plus a random part up to that half. */
int64_t hl__jitter_delay(int64_t base_ms, int attempt)
{
	int64_t cap = base_ms * 2, d = base_ms, half;
	int i;
	for (i = 0; i < attempt && d < cap; i++)
		d *= 2;
	if (d > cap)
		d = cap;
	half = d / 2;
	if (half <= 0)
		return d;
	return half + (int64_t)(((uint64_t)rand() * 2654435761u) %
	                        (uint64_t)(half + 1));
}

/* FNV-1a, 64 bit. */
uint64_t hl__hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull;
	size_t i;
	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

int hl__map_init(hl_map *map)
{
	map->nbuckets = 16;
	map->count = 0;
	map->buckets = calloc(map->nbuckets, sizeof(*map->buckets));
	return map->buckets ? 0 : -1;
}

void hl__map_clear(hl_map *map)
{
	size_t i;
	if (!map->buckets)
		return;
	for (i = 0; i < map->nbuckets; i++) {
		hl_map_entry *e = map->buckets[i];
		while (e) {
			hl_map_entry *next = e->next;
			free(e);
			e = next;
		}
	}
	free(map->buckets);
	map->buckets = NULL;
	map->count = 0;
	map->nbuckets = 0;
}

static hl_map_entry **map_find(const hl_map *map, const void *key, size_t len,
                               uint64_t h)
{
	hl_map_entry **pp = &map->buckets[h & (map->nbuckets - 1)];
	while (*pp) {
		hl_map_entry *e = *pp;
		if (e->hash == h && e->key_len == len &&
		    memcmp(e->key, key, len) == 0)
			return pp;
		pp = &e->next;
	}
	return pp;
}

void *hl__map_get(const hl_map *map, const void *key, size_t len)
{
	hl_map_entry **pp;
	if (!map->count)
		return NULL;
	pp = map_find(map, key, len, hl__hash(key, len));
	return *pp ? (*pp)->value : NULL;
}

static int map_grow(hl_map *map)
{
	size_t n = map->nbuckets * 2, i;
	hl_map_entry **nb = calloc(n, sizeof(*nb));
	if (!nb)
		return -1;
	for (i = 0; i < map->nbuckets; i++) {
		hl_map_entry *e = map->buckets[i];
		while (e) {
			hl_map_entry *next = e->next;
			e->next = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(map->buckets);
	map->buckets = nb;
	map->nbuckets = n;
	return 0;
}

int hl__map_put(hl_map *map, const void *key, size_t len, void *value)
{
	uint64_t h = hl__hash(key, len);
	hl_map_entry *e;
	if (map->count + 1 > map->nbuckets && map_grow(map) != 0)
		return -1;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -1;
	e->hash = h;
	e->key_len = len;
	e->value = value;
	memcpy(e->key, key, len);
	e->next = map->buckets[h & (map->nbuckets - 1)];
	map->buckets[h & (map->nbuckets - 1)] = e;
	map->count++;
	return 0;
}

void *hl__map_del(hl_map *map, const void *key, size_t len)
{
	hl_map_entry **pp, *e;
	void *v;
	if (!map->count)
		return NULL;
	pp = map_find(map, key, len, hl__hash(key, len));
	e = *pp;
	if (!e)
		return NULL;
	*pp = e->next;
	v = e->value;
	free(e);
	map->count--;
	return v;
}

void hl__dlist_push(hl_dlist *list, hl_dlink *link)
{
	link->next = NULL;
	link->prev = list->tail;
	if (list->tail)
		list->tail->next = link;
	else
		list->head = link;
	list->tail = link;
}

void hl__dlist_remove(hl_dlist *list, hl_dlink *link)
{
	if (link->prev)
		link->prev->next = link->next;
	else
		list->head = link->next;
	if (link->next)
		link->next->prev = link->prev;
	else
		list->tail = link->prev;
	link->prev = link->next = NULL;
}

void hl__bound_plain(hl_bound *b, int64_t deadline_ms, hl_cancel *cancel)
{
	b->deadline_ms = deadline_ms;
	b->cancel = cancel;
	b->closing = NULL;
	b->interrupts = NULL;
	b->interrupt_gen = 0;
}

int hl__bound_check(const hl_bound *b)
{
	if (!b)
		return HL_OK;
	if (b->closing && atomic_load(b->closing))
		return hl__fail(HL_ECLOSED, "the client was closed");
	if (hl_cancel_is_triggered(b->cancel) ||
	    (b->interrupts && atomic_load(b->interrupts) != b->interrupt_gen))
		return hl__fail(HL_EINTERRUPTED, "interrupted");
	if (b->deadline_ms >= 0 && hl__now_ms() >= b->deadline_ms)
		return hl__fail(HL_ETIMEDOUT, "the deadline passed");
	return HL_OK;
}
