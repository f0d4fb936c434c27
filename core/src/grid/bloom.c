/*
 * The Bloom filter's C (core/grid/bloom_filter.kind): Redisson's sizing,
 * its bit positions (HighwayHash-128 with Redisson's key over the value's
 * bytes, then its alternating steps), Java's Double.toString for the
 * stored false probability, and the config each add and contains computes
 * with.
 *
 * The config (size and hashIterations) is remembered per client and name
 * in a small table shared by every object, so that the bindings that make
 * an object per call still take one round trip. It is never trusted: the
 * add and contains scripts compare it, as strings, with the stored one and
 * answer the stored one when they differ (nothing is written then), and
 * the indexes are computed again. So a filter deleted and initialised
 * again with other parameters works at once (Redisson's cache does not:
 * #6554), and a stale or colliding entry costs one round trip at most.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid/grid.h"
#include "grid/highwayhash.h"

/* Redisson's HighwayHash key (misc/Hash.java). */
static const uint64_t redisson_key[4] = {
        0x9e3779b97f4a7c15ULL, 0xf39cc0605cedc834ULL, 0x1082276bf3a27251ULL,
        0xf86c6a11d0c18e95ULL};

/* Redisson's getMaxSize(): 2 * Integer.MAX_VALUE bits. */
#define MAX_BITS 4294967294ULL
/* Bits per value beyond which a config is refused (Java could not run
 * one either). */
#define MAX_K 100000
/* Indexes (values x bits per value) in one call. */
#define MAX_INDEXES ((size_t)1 << 24)

/* ---- numbers as Java writes and computes them ------------------------- */

/* d as Java's Double.toString writes it (0.03, 1.0E-4, 100.0, 1.0E7): the
 * shortest digits that read back as d; plain from 10^-3 to 10^7, else
 * d.dddE<n>. (JDK 19+ always writes the shortest; older JDKs now and then
 * one digit more. Java only reads this field back with Double.valueOf, so
 * either form serves.) Its length; 0 for NaN and the infinities. */
static size_t java_double(char *buf, size_t cap, double d)
{
	char e[48], digits[24];
	const char *p;
	int prec, nd = 0, exp10, i;
	size_t n = 0;
	double a = fabs(d);
#define PUT(c)                                                                 \
	do {                                                                   \
		if (n + 1 < cap)                                               \
			buf[n] = (c);                                          \
		n++;                                                           \
	} while (0)
	if (!(d - d == 0))
		return 0;
	if (a == 0) {
		n = (size_t)snprintf(buf, cap, "%s",
		                     signbit(d) ? "-0.0" : "0.0");
		return n;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec - 1, d);
		if (strtod(e, NULL) == d)
			break;
	}
	snprintf(e, sizeof e, "%.*e", prec - 1, d);
	for (p = e; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < (int)sizeof(digits))
			digits[nd++] = *p;
	exp10 = *p ? atoi(p + 1) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (d < 0)
		PUT('-');
	if (a >= 1e-3 && a < 1e7) {
		if (exp10 < 0) {
			PUT('0');
			PUT('.');
			for (i = 0; i < -exp10 - 1; i++)
				PUT('0');
			for (i = 0; i < nd; i++)
				PUT(digits[i]);
		} else {
			for (i = 0; i <= exp10; i++)
				PUT(i < nd ? digits[i] : '0');
			PUT('.');
			if (nd <= exp10 + 1)
				PUT('0');
			for (i = exp10 + 1; i < nd; i++)
				PUT(digits[i]);
		}
	} else {
		PUT(digits[0]);
		PUT('.');
		if (nd == 1)
			PUT('0');
		for (i = 1; i < nd; i++)
			PUT(digits[i]);
		n += (size_t)snprintf(n < cap ? buf + n : NULL,
		                      n < cap ? cap - n : 0, "E%d", exp10);
	}
	if (cap)
		buf[n < cap ? n : cap - 1] = '\0';
#undef PUT
	return n;
}

/* Java's Math.round for a finite double of a sane size. */
static int64_t java_round(double x)
{
	return (int64_t)floor(x + 0.5);
}

/* ---- the config and its cache ------------------------------------------ */

typedef struct bloom_config {
	char size[24], k[24]; /* as stored (compared as strings) */
	uint64_t m;
	uint32_t kk;
} bloom_config;

#define CACHE_SLOTS 64
static struct {
	uint64_t tag;
	bloom_config c;
} cache[CACHE_SLOTS];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t tag_of(const hl_object *o)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uintptr_t c = (uintptr_t)o->client;
	size_t i;
	for (i = 0; i < sizeof(c); i++, c >>= 8) {
		h ^= (unsigned char)c;
		h *= 0x100000001b3ULL;
	}
	for (i = 0; i < o->name_len; i++) {
		h ^= (unsigned char)o->name[i];
		h *= 0x100000001b3ULL;
	}
	return h | 1;
}

static int cache_get(const hl_object *o, bloom_config *out)
{
	uint64_t t = tag_of(o);
	int hit;
	pthread_mutex_lock(&cache_mu);
	hit = cache[t % CACHE_SLOTS].tag == t;
	if (hit)
		*out = cache[t % CACHE_SLOTS].c;
	pthread_mutex_unlock(&cache_mu);
	return hit;
}

static void cache_put(const hl_object *o, const bloom_config *c)
{
	uint64_t t = tag_of(o);
	pthread_mutex_lock(&cache_mu);
	cache[t % CACHE_SLOTS].tag = c ? t : 0;
	if (c)
		cache[t % CACHE_SLOTS].c = *c;
	pthread_mutex_unlock(&cache_mu);
}

static int not_initialised(hl_gridcall *call)
{
	char label[120];
	cache_put(call->obj, NULL);
	return hl__fail(HL_EREDIS,
	                "%s: %s: the bloom filter is not initialised (no "
	                "config hash): try_init first",
	                hl__grid_label(call->obj, label, sizeof(label)),
	                call->op->name);
}

/* A decimal in 1..max (a config field). */
static int parse_field(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	if (len == 0 || len > 20)
		return 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return 0;
	}
	*out = v;
	return v >= 1;
}

/* The config from the size and hashIterations replies. */
static int config_of(hl_gridcall *call, const hl_reply *size, const hl_reply *k,
                     bloom_config *c)
{
	char label[120];
	uint64_t m = 0, kk = 0;
	if (hl__reply_type(size) != HL_REPLY_STRING ||
	    hl__reply_type(k) != HL_REPLY_STRING)
		return not_initialised(call);
	if (!parse_field(hl__reply_str(size), hl__reply_strlen(size), MAX_BITS,
	                 &m) ||
	    !parse_field(hl__reply_str(k), hl__reply_strlen(k), MAX_K, &kk))
		return hl__fail(HL_EPROTOCOL,
		                "%s: %s: the config hash is not a Bloom "
		                "filter's: size \"%.30s\", hashIterations "
		                "\"%.30s\"",
		                hl__grid_label(call->obj, label, sizeof(label)),
		                call->op->name, hl__reply_str(size),
		                hl__reply_str(k));
	memset(c, 0, sizeof(*c));
	memcpy(c->size, hl__reply_str(size), hl__reply_strlen(size));
	memcpy(c->k, hl__reply_str(k), hl__reply_strlen(k));
	c->m = m;
	c->kk = (uint32_t)kk;
	cache_put(call->obj, c);
	return HL_OK;
}

/* Read the config (HMGET, a read whatever the operation's mode). */
static int probe(hl_gridcall *call, bloom_config *c)
{
	hl_opdef rd = *call->op;
	hl_gridcall rcall = *call;
	const char *argv[4] = {"HMGET", call->obj->keys[1], "size",
	                       "hashIterations"};
	size_t lens[4] = {5, call->obj->key_lens[1], 4, 14};
	hl_reply *r = NULL;
	int rc;
	rd.mode = HL_MODE_READ;
	rcall.op = &rd;
	rc = hl__grid_command(&rcall, 4, argv, lens, &r);
	if (rc == HL_OK && hl__reply_type(r) == HL_REPLY_ERROR)
		rc = hl__grid_result(call, r);
	else if (rc == HL_OK &&
	         (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) != 2))
		rc = hl__fail(HL_EPROTOCOL, "HMGET: not an array of two");
	else if (rc == HL_OK)
		rc = config_of(call, hl__reply_at(r, 0), hl__reply_at(r, 1), c);
	hl__reply_free(r);
	return rc;
}

/* ---- bit positions ------------------------------------------------------ */

/* Redisson's k indexes of a value in a filter of m bits. */
static void indexes(const void *v, size_t len, uint64_t m, uint32_t k,
                    uint64_t *out)
{
	uint64_t h[2], x;
	uint32_t i;
	hl__highwayhash128(redisson_key, v, len, h);
	x = h[0];
	for (i = 0; i < k; i++) {
		out[i] = (x & 0x7fffffffffffffffULL) % m;
		x += (i & 1) ? h[0] : h[1];
	}
}

/* Run the add or contains script on the values call->args[0..]: the
 * script's reply {2, n, ...} in *out. */
static int run(hl_gridcall *call, const hl_script_def *s, hl_reply **out)
{
	size_t nvals = call->nargs, i, j, nidx, attempt;
	bloom_config c;
	char label[120];
	int rc = HL_OK;
	*out = NULL;
	if (!cache_get(call->obj, &c) && (rc = probe(call, &c)) != HL_OK)
		return rc;
	for (attempt = 0; attempt < 4; attempt++) {
		const char **argv;
		size_t *lens;
		char *nums;
		uint64_t *idx;
		hl_reply *r = NULL;
		if (nvals > MAX_INDEXES / c.kk)
			return hl__fail(
			        HL_EINVAL,
			        "%s: %s: %zu values of %u bits each in one "
			        "call; at most %zu bits: split the batch",
			        hl__grid_label(call->obj, label, sizeof(label)),
			        call->op->name, nvals, (unsigned)c.kk,
			        MAX_INDEXES);
		nidx = nvals * c.kk;
		argv = malloc(sizeof(*argv) * (nidx + 4));
		lens = malloc(sizeof(*lens) * (nidx + 4));
		nums = malloc(nidx * 11 + 1);
		idx = malloc(sizeof(*idx) * (c.kk + 1));
		if (!argv || !lens || !nums || !idx) {
			free(argv);
			free(lens);
			free(nums);
			free(idx);
			return hl__fail(HL_ENOMEM, "out of memory");
		}
		argv[0] = call->obj->keys[1];
		lens[0] = call->obj->key_lens[1];
		argv[1] = call->obj->keys[0];
		lens[1] = call->obj->key_lens[0];
		argv[2] = c.size;
		lens[2] = strlen(c.size);
		argv[3] = c.k;
		lens[3] = strlen(c.k);
		for (i = 0; i < nvals; i++) {
			const hl_arg *a = &call->args[i];
			indexes(a->bytes ? a->bytes : "", a->len, c.m, c.kk,
			        idx);
			for (j = 0; j < c.kk; j++) {
				char *p = nums + (i * c.kk + j) * 11;
				argv[4 + i * c.kk + j] = p;
				lens[4 + i * c.kk + j] =
				        hl__fmt_i64(p, (int64_t)idx[j]);
			}
		}
		rc = hl__grid_eval(call, s, 2, (int)(nidx + 2), argv, lens, &r);
		free(argv);
		free(lens);
		free(nums);
		free(idx);
		if (rc != HL_OK)
			return rc;
		if (hl__reply_type(r) == HL_REPLY_ERROR) {
			rc = hl__grid_result(call, r);
			hl__reply_free(r);
			return rc;
		}
		if (hl__reply_type(r) != HL_REPLY_ARRAY ||
		    hl__reply_len(r) < 1) {
			hl__reply_free(r);
			return hl__fail(
			        HL_EPROTOCOL,
			        "%s: %s: the script's reply is not an "
			        "array",
			        hl__grid_label(call->obj, label, sizeof(label)),
			        call->op->name);
		}
		switch (hl__reply_int(hl__reply_at(r, 0))) {
		case 2:
			*out = r;
			return HL_OK;
		case 1: /* the config changed: compute again with the new */
			if (hl__reply_len(r) == 3)
				rc = config_of(call, hl__reply_at(r, 1),
				               hl__reply_at(r, 2), &c);
			else
				rc = hl__fail(HL_EPROTOCOL, "bad reply");
			hl__reply_free(r);
			if (rc != HL_OK)
				return rc;
			continue;
		default:
			hl__reply_free(r);
			return not_initialised(call);
		}
	}
	return hl__fail(HL_EREDIS,
	                "%s: %s: the filter's config changed while it was "
	                "used, four times in a row",
	                hl__grid_label(call->obj, label, sizeof(label)),
	                call->op->name);
}

/* The count {2, n, ...} as the op's result. */
static int counted(hl_gridcall *call, hl_reply *r, int as_bool)
{
	int64_t n =
	        hl__reply_len(r) >= 2 ? hl__reply_int(hl__reply_at(r, 1)) : 0;
	hl__reply_free(r);
	if (call->out && !(*call->out = hl__value_int(as_bool ? n > 0 : n)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}

static int add_or_contains(hl_gridcall *call, int add, int as_bool)
{
	hl_reply *r = NULL;
	int rc;
	if (call->nargs == 0) {
		if (call->out && !(*call->out = hl__value_int(0)))
			return hl__fail(HL_ENOMEM, "out of memory");
		return HL_OK;
	}
	rc = run(call,
	         add ? &hl__script_bloom_filter_add
	             : &hl__script_bloom_filter_contains,
	         &r);
	if (rc != HL_OK)
		return rc;
	return counted(call, r, as_bool);
}

int hl__bloom_filter_add(hl_gridcall *call)
{
	return add_or_contains(call, 1, 1);
}

int hl__bloom_filter_add_all(hl_gridcall *call)
{
	return add_or_contains(call, 1, 0);
}

int hl__bloom_filter_contains(hl_gridcall *call)
{
	return add_or_contains(call, 0, 1);
}

int hl__bloom_filter_contains_all(hl_gridcall *call)
{
	return add_or_contains(call, 0, 0);
}

int hl__bloom_filter_contains_each(hl_gridcall *call)
{
	hl_reply *r = NULL;
	hl_value **items;
	size_t i, n = call->nargs;
	int rc;
	if (n) {
		if ((rc = run(call, &hl__script_bloom_filter_contains, &r)) !=
		    HL_OK)
			return rc;
		if (hl__reply_len(r) != n + 2) {
			hl__reply_free(r);
			return hl__fail(HL_EPROTOCOL,
			                "contains_each: %zu answers for %zu "
			                "values",
			                hl__reply_len(r) - 2, n);
		}
	}
	if (!call->out) {
		hl__reply_free(r);
		return HL_OK;
	}
	items = calloc(n ? n : 1, sizeof(*items));
	for (i = 0; items && i < n; i++)
		if (!(items[i] = hl__value_int(
		              hl__reply_int(hl__reply_at(r, i + 2)))))
			break;
	hl__reply_free(r);
	if (!items || i < n || !(*call->out = hl__value_array(items, n))) {
		if (items && i < n)
			while (i--)
				hl_value_free(items[i]);
		free(items);
		return hl__fail(HL_ENOMEM, "out of memory");
	}
	free(items);
	return HL_OK;
}

int hl__bloom_filter_count(hl_gridcall *call)
{
	const char *argv[2] = {call->obj->keys[1], call->obj->keys[0]};
	size_t lens[2] = {call->obj->key_lens[1], call->obj->key_lens[0]};
	hl_reply *r = NULL;
	bloom_config c;
	double est;
	int64_t bits, n;
	int rc = hl__grid_eval(call, &hl__script_bloom_filter_count, 2, 0, argv,
	                       lens, &r);
	if (rc != HL_OK)
		return rc;
	if (hl__reply_type(r) == HL_REPLY_ERROR) {
		rc = hl__grid_result(call, r);
		hl__reply_free(r);
		return rc;
	}
	if (hl__reply_type(r) != HL_REPLY_ARRAY || hl__reply_len(r) != 4) {
		hl__reply_free(r);
		return not_initialised(call);
	}
	rc = config_of(call, hl__reply_at(r, 1), hl__reply_at(r, 2), &c);
	bits = hl__reply_int(hl__reply_at(r, 3));
	hl__reply_free(r);
	if (rc != HL_OK)
		return rc;
	/* Redisson: round(-m / k * ln(1 - X / m)), in doubles */
	if ((uint64_t)bits >= c.m) {
		n = INT64_MAX;
	} else {
		est = (double)(-(int64_t)c.m) / (double)c.kk *
		      log(1.0 - (double)bits / (double)c.m);
		n = java_round(est);
	}
	if (call->out && !(*call->out = hl__value_int(n)))
		return hl__fail(HL_ENOMEM, "out of memory");
	return HL_OK;
}

int hl__bloom_filter_try_init(hl_gridcall *call)
{
	int64_t n = call->args[0].i, k;
	double p = call->args[1].type == HL_ARG_INT ? (double)call->args[1].i
	                                            : call->args[1].d;
	double bits;
	uint64_t m;
	char label[120], sm[HL_DEC_MAX], sk[HL_DEC_MAX], sn[HL_DEC_MAX],
	        sp[HL_NUM_MAX];
	const char *argv[5];
	size_t lens[5];
	hl_reply *r = NULL;
	int rc;
	hl__grid_label(call->obj, label, sizeof(label));
	if (n < 1)
		return hl__fail(HL_EINVAL,
		                "%s: try_init: expected_insertions is %lld; it "
		                "must be at least 1",
		                label, (long long)n);
	if (!(p > 0 && p < 1))
		return hl__fail(
		        HL_EINVAL,
		        "%s: try_init: false_probability is %g; it must "
		        "be more than 0 and less than 1",
		        label, p);
	/* Redisson's sizing, in the same double operations */
	bits = (double)(-n) * log(p) / (log(2.0) * log(2.0));
	if (!(bits < (double)MAX_BITS + 1))
		return hl__fail(HL_EINVAL,
		                "%s: try_init: %lld insertions at %g need %.0f "
		                "bits; a filter has at most %llu (Redisson's "
		                "limit)",
		                label, (long long)n, p, bits,
		                (unsigned long long)MAX_BITS);
	m = (uint64_t)bits;
	if (m == 0)
		return hl__fail(HL_EINVAL,
		                "%s: try_init: %lld insertions at %g give a "
		                "filter of 0 bits",
		                label, (long long)n, p);
	k = java_round((double)m / (double)n * log(2.0));
	k = (int32_t)(uint32_t)(uint64_t)k; /* Java's (int) of the long */
	if (k < 1)
		k = 1;
	if (k > MAX_K)
		return hl__fail(HL_EINVAL,
		                "%s: try_init: %lld bits per value; at most %d",
		                label, (long long)k, MAX_K);
	argv[0] = call->obj->keys[1];
	lens[0] = call->obj->key_lens[1];
	argv[1] = sm;
	lens[1] = hl__fmt_i64(sm, (int64_t)m);
	argv[2] = sk;
	lens[2] = hl__fmt_i64(sk, k);
	argv[3] = sn;
	lens[3] = hl__fmt_i64(sn, n);
	argv[4] = sp;
	lens[4] = java_double(sp, sizeof(sp), p);
	rc = hl__grid_eval(call, &hl__script_bloom_filter_try_init, 1, 4, argv,
	                   lens, &r);
	if (rc == HL_OK)
		rc = hl__grid_result(call, r);
	hl__reply_free(r);
	return rc;
}
