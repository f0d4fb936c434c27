/*
 * Values out of the grid (hl_value), arguments in (hl_arg), and numbers in
 * the forms Redisson writes and reads (GRID-PROTOCOL 0.2): integers in
 * decimal; doubles written in plain notation, the shortest that reads
 * back (BigDecimal.valueOf(d).toPlainString()), and read in any form
 * (1, 1.5, 1.0E10, 1e+20, 0.1000000000000000055...).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"

struct hl_value {
	int type;
	int64_t i;
	double d;
	size_t len; /* bytes, or elements */
	char *bytes;
	hl_value **items;
	struct flat_block *blocks; /* an array whose items (and their bytes)
	                            * live in these blocks, freed with it */
};

hl_value *hl__value_new(int type)
{
	hl_value *v = calloc(1, sizeof(*v));
	if (v)
		v->type = type;
	return v;
}

hl_value *hl__value_int(int64_t i)
{
	hl_value *v = hl__value_new(HL_VALUE_INT);
	if (v)
		v->i = i;
	return v;
}

hl_value *hl__value_double(double d)
{
	hl_value *v = hl__value_new(HL_VALUE_DOUBLE);
	if (v)
		v->d = d;
	return v;
}

/* The bytes live in the value's own allocation (one malloc a value: a
 * page of a scan makes thousands); hl_value_free knows them by address. */
hl_value *hl__value_bytes(const void *p, size_t len)
{
	hl_value *v;
	if (len > SIZE_MAX - sizeof(*v) - 1)
		return NULL;
	v = malloc(sizeof(*v) + len + 1);
	if (!v)
		return NULL;
	memset(v, 0, sizeof(*v));
	v->type = HL_VALUE_BYTES;
	v->bytes = (char *)(v + 1);
	if (len)
		memcpy(v->bytes, p, len);
	v->bytes[len] = '\0';
	v->len = len;
	return v;
}

hl_value *hl__value_of_reply(const hl_reply *r)
{
	size_t i, n;
	hl_value *v;
	switch (hl__reply_type(r)) {
	case HL_REPLY_INTEGER:
		return hl__value_int(hl__reply_int(r));
	case HL_REPLY_STRING:
	case HL_REPLY_STATUS:
	case HL_REPLY_ERROR:
		return hl__value_bytes(hl__reply_str(r), hl__reply_strlen(r));
	case HL_REPLY_ARRAY:
		n = hl__reply_len(r);
		v = hl__value_new(HL_VALUE_ARRAY);
		if (!v)
			return NULL;
		v->items = calloc(n ? n : 1, sizeof(*v->items));
		if (!v->items) {
			free(v);
			return NULL;
		}
		for (i = 0; i < n; i++) {
			v->items[i] = hl__value_of_reply(hl__reply_at(r, i));
			if (!v->items[i]) {
				v->len = i;
				hl_value_free(v);
				return NULL;
			}
		}
		v->len = n;
		return v;
	default:
		return hl__value_new(HL_VALUE_NIL);
	}
}

/* A block of a flat array's items: a header, then the items. Blocks are
 * FLAT_BLOCK bytes (a value larger than that gets one of its own size),
 * under glibc's consolidation threshold (64 KiB). */
typedef struct flat_block {
	struct flat_block *next;
	size_t size;
} flat_block;
#define FLAT_BLOCK 32000
#define FLAT_ALIGN 8

/* Each thread keeps up to FLAT_CACHE freed blocks for its next page: a
 * scan's pages come one after the other, and memory that malloc gives
 * back to the system at each page costs page faults at the next (about a
 * third of the client's time for 1000-entry pages). Freed when the thread
 * ends. */
#define FLAT_CACHE 8
typedef struct flat_cache {
	flat_block *head;
	int n;
} flat_cache;
static pthread_key_t flat_key;
static pthread_once_t flat_once = PTHREAD_ONCE_INIT;
static int flat_key_ok;

static void flat_cache_end(void *p)
{
	flat_cache *c = p;
	while (c->head) {
		flat_block *next = c->head->next;
		free(c->head);
		c->head = next;
	}
	free(c);
}

static void flat_key_make(void)
{
	flat_key_ok = pthread_key_create(&flat_key, flat_cache_end) == 0;
}

static flat_cache *flat_cache_get(void)
{
	flat_cache *c;
	pthread_once(&flat_once, flat_key_make);
	if (!flat_key_ok)
		return NULL;
	c = pthread_getspecific(flat_key);
	if (!c && (c = calloc(1, sizeof(*c))) != NULL &&
	    pthread_setspecific(flat_key, c) != 0) {
		free(c);
		c = NULL;
	}
	return c;
}

static flat_block *flat_new(flat_cache *c, size_t need)
{
	flat_block *b;
	if (need <= FLAT_BLOCK && c && c->head) {
		b = c->head;
		c->head = b->next;
		c->n--;
		return b;
	}
	if (need < FLAT_BLOCK)
		need = FLAT_BLOCK;
	b = malloc(sizeof(*b) + need);
	if (b)
		b->size = need;
	return b;
}

static void flat_free(flat_block *b)
{
	flat_cache *c = b ? flat_cache_get() : NULL;
	while (b) {
		flat_block *next = b->next;
		if (c && b->size == FLAT_BLOCK && c->n < FLAT_CACHE) {
			b->next = c->head;
			c->head = b;
			c->n++;
		} else {
			free(b);
		}
		b = next;
	}
}

/* Room for an item of need bytes (the item and its bytes, aligned) in
 * v's blocks: its place, or NULL (out of memory). */
static hl_value *flat_item(hl_value *v, flat_cache *c, char **p, size_t *room,
                           size_t need)
{
	hl_value *e;
	need = (need + FLAT_ALIGN - 1) / FLAT_ALIGN * FLAT_ALIGN;
	if (need > *room) {
		flat_block *b = flat_new(c, need);
		if (!b)
			return NULL;
		b->next = v->blocks;
		v->blocks = b;
		*p = (char *)(b + 1);
		*room = b->size;
	}
	e = (hl_value *)(void *)*p;
	*p += need;
	*room -= need;
	memset(e, 0, sizeof(*e));
	return e;
}

int hl__value_flat_pairs(hl_value **out, const hl_arg *keys, const hl_reply *r)
{
	size_t i, n = hl__reply_len(r), k = 0, room = 0;
	hl_value *v = hl__value_new(HL_VALUE_ARRAY);
	flat_cache *c = flat_cache_get();
	char *p = NULL;
	*out = NULL;
	if (!v || !(v->items = malloc(sizeof(*v->items) * (n ? 2 * n : 1)))) {
		free(v);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++) {
		const hl_reply *x = hl__reply_at(r, i);
		size_t len = hl__reply_strlen(x), j;
		if (hl__reply_type(x) != HL_REPLY_STRING)
			continue; /* absent */
		for (j = 0; j < 2; j++) {
			const char *b = j ? hl__reply_str(x) : keys[i].bytes;
			size_t bl = j ? len : keys[i].len;
			hl_value *e;
			if (bl > SIZE_MAX / 2 ||
			    !(e = flat_item(v, c, &p, &room,
			                    sizeof(*e) + bl + 1))) {
				hl_value_free(v);
				return hl__fail(HL_ENOMEM, "out of memory");
			}
			e->type = HL_VALUE_BYTES;
			e->len = bl;
			e->bytes = (char *)(e + 1);
			if (bl)
				memcpy(e->bytes, b, bl);
			e->bytes[bl] = '\0';
			v->items[k++] = e;
			v->len = k;
		}
	}
	*out = v;
	return HL_OK;
}

int hl__value_flat_of_reply(hl_value **out, const hl_reply *r, int scored,
                            const char *what)
{
	size_t i, n = hl__reply_len(r), room = 0;
	hl_value *v, *e;
	char *p = NULL;
	flat_cache *c;
	*out = NULL;
	for (i = 0; i < n; i++)
		if (hl__reply_type(hl__reply_at(r, i)) == HL_REPLY_ARRAY)
			return 1;
	v = hl__value_new(HL_VALUE_ARRAY);
	if (!v || !(v->items = malloc(sizeof(*v->items) * (n ? n : 1)))) {
		free(v);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	c = flat_cache_get();
	for (i = 0; i < n; i++) {
		const hl_reply *x = hl__reply_at(r, i);
		int t = hl__reply_type(x);
		int str = (t == HL_REPLY_STRING || t == HL_REPLY_STATUS ||
		           t == HL_REPLY_ERROR) &&
		          !(scored && i % 2);
		size_t len = str ? hl__reply_strlen(x) : 0;
		if (len > SIZE_MAX / 2 ||
		    !(e = flat_item(v, c, &p, &room,
		                    sizeof(*e) + (str ? len + 1 : 0))))
			goto nomem;
		v->items[i] = e;
		v->len = i + 1;
		if (scored && i % 2) {
			int rc = HL_OK;
			e->type = HL_VALUE_DOUBLE;
			if (t == HL_REPLY_INTEGER)
				e->d = (double)hl__reply_int(x);
			else
				rc = hl__parse_double(hl__reply_str(x),
				                      hl__reply_strlen(x),
				                      &e->d, what);
			if (rc != HL_OK) {
				hl_value_free(v);
				return rc;
			}
		} else if (t == HL_REPLY_INTEGER) {
			e->type = HL_VALUE_INT;
			e->i = hl__reply_int(x);
		} else if (str) {
			e->type = HL_VALUE_BYTES;
			e->len = len;
			e->bytes = (char *)(e + 1);
			if (len)
				memcpy(e->bytes, hl__reply_str(x), len);
			e->bytes[len] = '\0';
		} else {
			e->type = HL_VALUE_NIL;
		}
	}
	*out = v;
	return HL_OK;
nomem:
	hl_value_free(v);
	return hl__fail(HL_ENOMEM, "out of memory");
}

int hl_value_type(const hl_value *v)
{
	return v ? v->type : HL_VALUE_NIL;
}

int64_t hl_value_int(const hl_value *v)
{
	if (!v)
		return 0;
	if (v->type == HL_VALUE_INT)
		return v->i;
	if (v->type == HL_VALUE_DOUBLE && v->d > -9.2e18 && v->d < 9.2e18)
		return (int64_t)v->d;
	return 0;
}

double hl_value_double(const hl_value *v)
{
	if (!v)
		return 0;
	if (v->type == HL_VALUE_DOUBLE)
		return v->d;
	if (v->type == HL_VALUE_INT)
		return (double)v->i;
	return 0;
}

const char *hl_value_bytes(const hl_value *v, size_t *out_len)
{
	if (!v || v->type != HL_VALUE_BYTES) {
		if (out_len)
			*out_len = 0;
		return NULL;
	}
	if (out_len)
		*out_len = v->len;
	return v->bytes;
}

size_t hl_value_len(const hl_value *v)
{
	return v && v->type == HL_VALUE_ARRAY ? v->len : 0;
}

const hl_value *hl_value_at(const hl_value *v, size_t i)
{
	if (!v || v->type != HL_VALUE_ARRAY || i >= v->len)
		return NULL;
	return v->items[i];
}

size_t hl_value_gather(const hl_value *v, size_t *lens, char *buf, size_t cap)
{
	size_t i, n = hl_value_len(v), total = 0;
	for (i = 0; i < n; i++) {
		const hl_value *e = v->items[i];
		size_t len =
		        e && e->type == HL_VALUE_BYTES ? e->len : (size_t)-1;
		if (lens)
			lens[i] = len;
		if (len != (size_t)-1)
			total += len;
	}
	if (buf && cap >= total) {
		char *p = buf;
		for (i = 0; i < n; i++) {
			const hl_value *e = v->items[i];
			if (e && e->type == HL_VALUE_BYTES && e->len) {
				memcpy(p, e->bytes, e->len);
				p += e->len;
			}
		}
	}
	return total;
}

void hl_value_free(hl_value *v)
{
	size_t i;
	if (!v)
		return;
	if (v->blocks) {
		flat_free(v->blocks); /* the items and their bytes */
		free(v->items);
		free(v);
		return;
	}
	if (v->type == HL_VALUE_ARRAY) {
		for (i = 0; i < v->len; i++)
			hl_value_free(v->items[i]);
		free(v->items);
	}
	if (v->bytes != (char *)(v + 1))
		free(v->bytes);
	free(v);
}

/* ---- arguments ---------------------------------------------------------- */

hl_arg hl__arg_bytes(const void *p, size_t len)
{
	hl_arg a;
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_BYTES;
	a.bytes = p;
	a.len = len;
	return a;
}

hl_arg hl__arg_int(int64_t i)
{
	hl_arg a;
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_INT;
	a.i = i;
	return a;
}

hl_arg hl__arg_double(double d)
{
	hl_arg a;
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_DOUBLE;
	a.d = d;
	return a;
}

hl_arg hl__arg_none(void)
{
	hl_arg a;
	memset(&a, 0, sizeof(a));
	a.type = HL_ARG_NONE;
	return a;
}

/* ---- numbers --------------------------------------------------------------
 */

/* The shortest digits that read back as d (d != 0, finite), d = D.DDD x
 * 10^e: digits (no point, no trailing zeros; at least one) and their
 * count. The reference: printf's %.*e from 15 significant digits up, each
 * read back with strtod. */
static void shortest_digits_ref(double d, char digits[40], int *out_nd,
                                int *out_e)
{
	char tmp[64];
	int prec, e = 0, nd = 0;
	const char *p;
	double ad = d < 0 ? -d : d;
	/* A normal double whose shortest form has at most 15 digits
	 * (DBL_DIG) gives those digits, padded with zeros, at 15 (%.14e):
	 * so start there, and try 16 and 17 only when 15 does not read back.
	 * A subnormal has fewer digits of precision: it tries them all. */
	for (prec = ad >= DBL_MIN ? DBL_DIG - 1 : 0; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	if (prec == 17)
		snprintf(tmp, sizeof(tmp), "%.*e", prec, d);
	for (p = tmp; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	if (*p == 'e')
		e = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	*out_nd = nd;
	*out_e = e;
}

/* The same digits without printf or strtod for the common numbers: |d| in
 * [1e-3, 1e7) with at most 9 decimals and 15 digits, i.e. n / 10^k for the
 * least k (increments, amounts). n = round(|d| x 10^k) and the check that
 * n / 10^k (both exact doubles: n < 10^15, 10^k <= 10^9, so the quotient
 * is correctly rounded, as strtod of that decimal is) is d again: then n's
 * digits read back as d, and the least such k gives the fewest digits. At
 * most 15 digits (DBL_DIG) no other decimal of as many reads back as d, so
 * they are the reference's; and below 10^15 |d x 10^k - n| stays under
 * 0.2, so the rounding cannot pick a neighbour of the right n. With 16
 * digits two decimals can read back as d, and the reference picks the
 * nearer (tests/test_grid_flat.c double_format found one). 0 when it does
 * not apply. */
static int shortest_digits_fast(double ad, char digits[40], int *out_nd,
                                int *out_e)
{
	static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4,
	                             1e5, 1e6, 1e7, 1e8, 1e9};
	char rev[24];
	int k, nr = 0, i, nd = 0;
	if (!(ad >= 1e-3 && ad < 1e7))
		return 0;
	for (k = 0; k < 10; k++) {
		double x = ad * p10[k];
		uint64_t n;
		if (x >= 1e15)
			return 0; /* 16 digits and more: the reference's */
		n = (uint64_t)(x + 0.5);
		if ((double)n / p10[k] != ad)
			continue;
		do {
			rev[nr++] = (char)('0' + n % 10);
			n /= 10;
		} while (n);
		/* d = n x 10^-k: its leading digit's power of ten */
		*out_e = nr - 1 - k;
		for (i = nr - 1; i >= 0; i--)
			digits[nd++] = rev[i];
		while (nd > 1 && digits[nd - 1] == '0')
			nd--;
		*out_nd = nd;
		return 1;
	}
	return 0;
}

size_t hl__fmt_double_ex(char *buf, size_t cap, double d, int ref)
{
	char digits[40];
	int e = 0, nd = 0, i, scale, frac;
	size_t n = 0;
	double ad = d < 0 ? -d : d;
	if (isnan(d) || isinf(d) || cap < HL_NUM_MAX)
		return 0;
	if (d == 0) {
		memcpy(buf, "0.0", 4);
		return 3;
	}
	if (ref || !shortest_digits_fast(ad, digits, &nd, &e))
		shortest_digits_ref(d, digits, &nd, &e);
	if (d < 0)
		buf[n++] = '-';
	if (ad >= 1e-3 && ad < 1e7) {
		/* Double.toString writes it plain, with a fraction digit */
		if (e < 0) {
			buf[n++] = '0';
			buf[n++] = '.';
			for (i = 0; i < -e - 1; i++)
				buf[n++] = '0';
			for (i = 0; i < nd; i++)
				buf[n++] = digits[i];
		} else {
			for (i = 0; i <= e; i++)
				buf[n++] = i < nd ? digits[i] : '0';
			buf[n++] = '.';
			if (nd > e + 1)
				for (i = e + 1; i < nd; i++)
					buf[n++] = digits[i];
			else
				buf[n++] = '0';
		}
		buf[n] = '\0';
		return n;
	}
	/* Double.toString writes D.D...E<e> (a fraction digit at least), and
	 * BigDecimal's plain form keeps those digits with scale frac - e */
	if (nd == 1)
		digits[nd++] = '0';
	frac = nd - 1;
	scale = frac - e;
	if (scale <= 0) {
		for (i = 0; i < nd; i++)
			buf[n++] = digits[i];
		for (i = 0; i < -scale; i++)
			buf[n++] = '0';
	} else if (nd > scale) {
		for (i = 0; i < nd; i++) {
			if (i == nd - scale)
				buf[n++] = '.';
			buf[n++] = digits[i];
		}
	} else {
		buf[n++] = '0';
		buf[n++] = '.';
		for (i = 0; i < scale - nd; i++)
			buf[n++] = '0';
		for (i = 0; i < nd; i++)
			buf[n++] = digits[i];
	}
	buf[n] = '\0';
	return n;
}

size_t hl__fmt_double(char *buf, size_t cap, double d)
{
	return hl__fmt_double_ex(buf, cap, d, 0);
}

int hl__parse_i64(const char *s, size_t len, int64_t *out, const char *what)
{
	char tmp[32], *end;
	long long v;
	if (len == 0 || len >= sizeof(tmp))
		goto bad;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	v = strtoll(tmp, &end, 10);
	if (errno || *end || end == tmp)
		goto bad;
	*out = v;
	return HL_OK;
bad:
	return hl__fail(HL_EPROTOCOL,
	                "%s: the stored value \"%.*s\" is not a "
	                "64-bit integer",
	                what, (int)(len > 40 ? 40 : len), s);
}

int hl__parse_double(const char *s, size_t len, double *out, const char *what)
{
	char tmp[HL_NUM_MAX], *end;
	double v;
	if (len == 0 || len >= sizeof(tmp))
		goto bad;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	/* strtod's ERANGE is no reason to refuse: it rounds to the nearest
	 * double (a subnormal such as Java's Double.MIN_VALUE, 0, or an
	 * infinity), which is what was meant. */
	v = strtod(tmp, &end);
	if (*end || end == tmp)
		goto bad;
	*out = v;
	return HL_OK;
bad:
	return hl__fail(HL_EPROTOCOL,
	                "%s: the stored value \"%.*s\" is not a "
	                "number",
	                what, (int)(len > 40 ? 40 : len), s);
}

hl_value *hl__value_array_take(hl_value **items, size_t n)
{
	hl_value *v = hl__value_new(HL_VALUE_ARRAY);
	if (!v)
		return NULL;
	v->items = calloc(n ? n : 1, sizeof(*v->items));
	if (!v->items) {
		free(v);
		return NULL;
	}
	if (n)
		memcpy(v->items, items, n * sizeof(*items));
	v->len = n;
	return v;
}

int hl__arg_list(hl_arg **out, const hl_arg *fixed, size_t nfixed,
                 const void *const *items, const size_t *lens, size_t count)
{
	size_t i;
	*out = NULL;
	if (count && (!items || !lens))
		return hl__fail(HL_EINVAL, "a list of %zu items is NULL",
		                count);
	if (count > ((size_t)1 << 24))
		return hl__fail(HL_EINVAL, "a list of %zu items: at most 2^24",
		                count);
	*out = malloc(sizeof(**out) * (nfixed + count + 1));
	if (!*out)
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < nfixed; i++)
		(*out)[i] = fixed[i];
	for (i = 0; i < count; i++)
		(*out)[nfixed + i] = hl__arg_bytes(items[i], lens[i]);
	return HL_OK;
}

int hl__arg_scored(hl_arg **out, const hl_arg *fixed, size_t nfixed,
                   const double *scores, const void *const *items,
                   const size_t *lens, size_t count)
{
	size_t i;
	*out = NULL;
	if (count && (!scores || !items || !lens))
		return hl__fail(HL_EINVAL, "a list of %zu entries is NULL",
		                count);
	if (count > ((size_t)1 << 23))
		return hl__fail(HL_EINVAL,
		                "a list of %zu entries: at most 2^23", count);
	*out = malloc(sizeof(**out) * (nfixed + 2 * count + 1));
	if (!*out)
		return hl__fail(HL_ENOMEM, "out of memory");
	for (i = 0; i < nfixed; i++)
		(*out)[i] = fixed[i];
	for (i = 0; i < count; i++) {
		(*out)[nfixed + 2 * i] = hl__arg_double(scores[i]);
		(*out)[nfixed + 2 * i + 1] = hl__arg_bytes(items[i], lens[i]);
	}
	return HL_OK;
}

hl_value *hl__value_array(hl_value **items, size_t n)
{
	hl_value *v = hl__value_new(HL_VALUE_ARRAY);
	size_t i;
	if (v)
		v->items = malloc(sizeof(*v->items) * (n ? n : 1));
	if (!v || !v->items) {
		for (i = 0; i < n; i++)
			hl_value_free(items[i]);
		free(v);
		return NULL;
	}
	for (i = 0; i < n; i++)
		v->items[i] = items[i];
	v->len = n;
	return v;
}
