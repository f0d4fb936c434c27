/*
 * The Bloom filter (Redisson's RBloomFilter): HighwayHash-128 against
 * Redisson's own hashes, bit positions and config hashes taken from real
 * Redisson 4.3.1 runs (tests/interop/grid: BloomVectors.java), adds and
 * checks of one and many values, count by Redisson's formula, a filter
 * deleted and initialised again (Redisson #6554), a lost reply, a cluster,
 * and bad input.
 */
#include "harness.h"
#include "harness_grid.h"
#include "harness_topo.h"

#include <stdlib.h>
#include <string.h>

#include "grid/highwayhash.h"

static const uint64_t redisson_key[4] = {
        0x9e3779b97f4a7c15ULL, 0xf39cc0605cedc834ULL, 0x1082276bf3a27251ULL,
        0xf86c6a11d0c18e95ULL};

/* Redisson's Hash.hash128 of the first n bytes of ALPHA, n = 0..90
 * (BloomVectors hash). */
static const char ALPHA[] =
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        "!#$%&()*+,-./:;<=>?@[]^_{|}~";
static const uint64_t alpha_hash[][2] = {
        {0xb7aad9c226c6a36bULL, 0xb2d4e4a63557bca6ULL},
        {0xab0bc04b5da94740ULL, 0xa0462b5aca912353ULL},
        {0xa88c7c45acbae500ULL, 0xc8f6cf52c9ba0d8aULL},
        {0x0610392ec6557ad6ULL, 0x8bcb58c345594726ULL},
        {0x85a1c275ec270c05ULL, 0x3b499c23dcb83294ULL},
        {0x85f5a3d70a4c3574ULL, 0x869e59ad1abea850ULL},
        {0xfa17ae74e1a614dfULL, 0x8cc6ffebf102546aULL},
        {0x3fa4e92eb5380f3fULL, 0x17131a2d99d2359cULL},
        {0xa261bbf365819d9bULL, 0xb8c10d6816b5007dULL},
        {0x803751abb30d2844ULL, 0x6e403bb3568f77e1ULL},
        {0x03304261345898ebULL, 0xc6cc55d32266ada6ULL},
        {0x2e6f01a35020d8e7ULL, 0xb81bb8e248461cf3ULL},
        {0xa59424ad0fecabdfULL, 0x33b499ddd3acdf5cULL},
        {0xd1bda14647967114ULL, 0x71c751b388b1430fULL},
        {0xb4605ceb4a60d652ULL, 0x0e5d4cf8d530b2f1ULL},
        {0x7dbbebf94474b981ULL, 0x3985c16a9abc0ac6ULL},
        {0x0d1407b89360d990ULL, 0x7d262f6492758848ULL},
        {0x3a1f2b41dbf76b1dULL, 0xc3cb2c96bdab9a19ULL},
        {0x1bc0e82d3b232a48ULL, 0x473a25ead2f33ce1ULL},
        {0x3884918d517c4fa6ULL, 0xe99bf8cd928ebee9ULL},
        {0xe40b026fd7af6a07ULL, 0xef0a74b5b5a56172ULL},
        {0x31c11b21a7bedd0aULL, 0xf23a9e26cf30bbd8ULL},
        {0x74bab7861a58a800ULL, 0x19cf549deb4fc7abULL},
        {0x6dab61bd2edcb456ULL, 0x597d70171d872284ULL},
        {0xd37fc68427543eebULL, 0x6a484cf1ab559257ULL},
        {0xe89ffccd36f40e8aULL, 0xb83ab5e90dd7d1e5ULL},
        {0x4e65284687ed1521ULL, 0xebcba51e894487a5ULL},
        {0x37bff8ee03018ca4ULL, 0x49a234400746432cULL},
        {0xf9935277057ec461ULL, 0x1146a35b7ac2467fULL},
        {0x8920e9ed7b5b801fULL, 0xfb6bd4a1f8a06ef9ULL},
        {0xc019d23687677dbbULL, 0x87b614f7164f1e72ULL},
        {0x036d6c8207708a11ULL, 0xb435291ac52350f6ULL},
        {0x52f2fa52cc98d857ULL, 0x5faf9637b5ab8299ULL},
        {0xc03f4e2b063b80caULL, 0xa0d6d1e2423b8814ULL},
        {0xf30465b716098deeULL, 0x13fe2e7a78d85af1ULL},
        {0xe5f38517aa9674a4ULL, 0xaa6d12941ba6018aULL},
        {0x9ccb716bbdccfd98ULL, 0xf01c2700e0075886ULL},
        {0x3efed2a7ed1feed8ULL, 0x22e2f2a41280a5e6ULL},
        {0x42ba676f9304bafaULL, 0x1a02fa1bfd98dacfULL},
        {0x336aaa2bf6193947ULL, 0x915d12f39a99a072ULL},
        {0xc04f1c770d5b2c16ULL, 0xe4f9c0f3acce6720ULL},
        {0xdb88654adc213513ULL, 0x0c229a37801a3dd5ULL},
        {0xc6fb8bdac9dfc504ULL, 0xbae2f488f3129aadULL},
        {0x675429fa8a7df3d3ULL, 0x26a18b22c42c6bf7ULL},
        {0xaef1462aaec947c9ULL, 0xb957dc8d525e158cULL},
        {0xb78ff06b02a14c5bULL, 0x0ca773e1439e3108ULL},
        {0x1e5d15d6759b8f0eULL, 0x1fa7657fa87fc772ULL},
        {0x94465b37934c6e02ULL, 0x6e303f933cc69843ULL},
        {0x35a18f5285c06fffULL, 0x1a2b490937a1d49cULL},
        {0xbb8ec6fb55ff92c3ULL, 0xc8057eb96cf7194dULL},
        {0xe6a5b07f37f0a872ULL, 0xafa8af5a38bcd84cULL},
        {0x36e6d55ee8bfbab0ULL, 0xb2a889bd55f985b9ULL},
        {0xec831719b03b3e44ULL, 0x950113c494e2e1c0ULL},
        {0x025c6f981bc22fc4ULL, 0xf15de6cb6e946aa2ULL},
        {0x1af4ee47a5673c92ULL, 0xfe614fe722f426f0ULL},
        {0x9e176c50424d4230ULL, 0x9fdda8a28850cb3bULL},
        {0x5dd2c5fdb993e1cfULL, 0x9cafd4423bd68c3cULL},
        {0x10d388f434ca6419ULL, 0x4870ab6611a3c09cULL},
        {0x2555acc768efe924ULL, 0xa7f4591681086512ULL},
        {0x4c6ad89f30233fc0ULL, 0xcedb1d6db5c3c010ULL},
        {0xdadeccdce7c39a1dULL, 0x07f20d687f7adc0cULL},
        {0xcefda6cb6a837c4eULL, 0x8a50dcff59fd904cULL},
        {0xacd617be1dff8399ULL, 0xe8b05c4eb0cec067ULL},
        {0xf422fdde352d8f8bULL, 0x2f0be7a42c5a0796ULL},
        {0x20f3ecb13c03c22dULL, 0x11226b22d3ffc1cdULL},
        {0x84564180f5286b50ULL, 0x7f9ded40ca31174aULL},
        {0xa3c0b9888543e45eULL, 0xff030eeade28b3b4ULL},
        {0x08f877492846c47aULL, 0x41a8c8ba46a5b5fcULL},
        {0x18959ca4f323ef8eULL, 0x81110a8bf8e35af8ULL},
        {0xefccaf0ef6f5c0b7ULL, 0x0cf2137c54cd8facULL},
        {0xc205889a84c3b18eULL, 0x83acf1b6b78b399eULL},
        {0x52c9ba9968d3e1b7ULL, 0xf40635a58c738c20ULL},
        {0xb9303b836534f2eeULL, 0xed27370d9f25fcfdULL},
        {0x6421e65d6ea1034dULL, 0x4cd0611d2a8c65adULL},
        {0x624c7945b63e9d17ULL, 0x6c4f8a8373869513ULL},
        {0x2b73942f59fa87ccULL, 0x5affcea324647914ULL},
        {0xf67296a36bfae04bULL, 0xbcc3f4d2c48a78bcULL},
        {0x832a4e6487ac198aULL, 0x67f7870d221630e5ULL},
        {0x531b1777ffea839cULL, 0xb8465e0acaaa58b6ULL},
        {0xcc946c0937a01706ULL, 0x518aacf6e6829a29ULL},
        {0x3fe1e36fe9c8cf01ULL, 0x307d5b2b913c8db7ULL},
        {0x352f6f7e7cdccd0cULL, 0xc2093f8626f82836ULL},
        {0x7f932538c6bf7215ULL, 0x51ff604edc1d28f4ULL},
        {0x2a8e62430055c564ULL, 0xa2ba8c92e18fb4d1ULL},
        {0x8a852c7f53e17e0dULL, 0xd0cc1389ef48b4f5ULL},
        {0xd5abc1101d66e0c8ULL, 0x61323afb9341ca5bULL},
        {0x4b00c1875a15e536ULL, 0xd9931e3359129a8cULL},
        {0xa314f48a813d7ad8ULL, 0x2b858be791a1a0b6ULL},
        {0x7c4d83d5a98e0240ULL, 0x6a7eedf03be7d97aULL},
        {0x3de519ea1da94b90ULL, 0x3f5d8c2fd75af321ULL},
        {0x0d795ae336b08635ULL, 0x9eece4791ec48b72ULL},
};

static void highwayhash(void)
{
	unsigned char big[1000];
	uint64_t h[2];
	size_t n;
	HT_EQ(sizeof(ALPHA) - 1, 90);
	for (n = 0; n <= 90; n++) {
		hl__highwayhash128(redisson_key, ALPHA, n, h);
		HT_EQ(h[0], alpha_hash[n][0]);
		HT_EQ(h[1], alpha_hash[n][1]);
	}
	hl__highwayhash128(redisson_key,
	                   "h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac",
	                   20, h);
	HT_EQ(h[0], 0x1d66345d0b4b6718ULL);
	HT_EQ(h[1], 0x1d53da542d6f6a51ULL);
	hl__highwayhash128(redisson_key, "\x00\x01\x00\xff\x80", 5, h);
	HT_EQ(h[0], 0xefac717cd0c51079ULL);
	HT_EQ(h[1], 0x30698b614ee5c383ULL);
	for (n = 0; n < sizeof(big); n++)
		big[n] = (unsigned char)(n * 7 + 3);
	hl__highwayhash128(redisson_key, big, sizeof(big), h);
	HT_EQ(h[0], 0xc54c37080325c239ULL);
	HT_EQ(h[1], 0x2cc1ebf6f96ff80fULL);
}

static hl_object *bloom(hl_client *c, const char *name)
{
	hl_object *o = NULL;
	HT_OK(hl_bloom_filter_new(&o, c, name, strlen(name)));
	return o;
}

/* The bits set at key (SETBIT offsets, ascending) into out; how many. */
static size_t bits_at(ht_redis *r, const char *key, long *out, size_t cap)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "GET %s", key);
	size_t i, n = 0;
	int b;
	if (rep->type == REDIS_REPLY_STRING)
		for (i = 0; i < rep->len; i++)
			for (b = 0; b < 8; b++)
				if (((unsigned char)rep->str[i] >> (7 - b)) & 1)
					if (n < cap)
						out[n++] = (long)(i * 8 + b);
	freeReplyObject(rep);
	return n;
}

static void hget(ht_redis *r, const char *key, const char *field, char *buf,
                 size_t cap)
{
	redisReply *rep = ht_raw(ht_raw_of(r), "HGET %s %s", key, field);
	buf[0] = '\0';
	if (rep->type == REDIS_REPLY_STRING)
		snprintf(buf, cap, "%s", rep->str);
	freeReplyObject(rep);
}

/* Redisson 4.3.1 (StringCodec), each value alone in a fresh filter: the
 * config hash tryInit wrote and the bits add set (BloomVectors bits). */
struct vec {
	int64_t n;
	double p;
	const char *size, *k, *pstr;
	const char *values[4];
	long bits[4][40];
	size_t nbits[4];
};

static const struct vec vecs[] = {
        {1000,
         0.03,
         "7298",
         "5",
         "0.03",
         {"abc", "", "hello",
          "h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac"},
         {{1218, 2050, 2436, 3268, 4486},
          {566, 1685, 4248, 5367, 6745},
          {980, 1089, 2772, 2881, 6595},
          {971, 1800, 3720, 4549, 6332}},
         {5, 5, 5, 5}},
        {100000,
         0.0001,
         "1917011",
         "13",
         "1.0E-4",
         {"abc", "", "hello", NULL},
         {{402451, 424048, 616234, 637831, 830017, 851614, 1254065, 1275662,
           1467848, 1489445, 1681631, 1703228, 1895414},
          {46812, 184595, 231407, 369190, 491262, 851984, 989767, 1036579,
           1158651, 1296434, 1343246, 1794939, 1841751},
          {4755, 176297, 323420, 494962, 642085, 803928, 813627, 975470,
           1122593, 1294135, 1441258, 1612800, 1774643}},
         {13, 13, 13, 0}},
        {12345,
         0.001,
         "177491",
         "10",
         "0.001",
         {"abc", "", "hello", NULL},
         {{22307, 41522, 44421, 63636, 88842, 108057, 110956, 152478, 155377,
           174592},
          {15856, 33419, 39544, 45714, 72963, 90526, 96651, 102821, 153803,
           159928},
          {6524, 12125, 42382, 47983, 76441, 83841, 112299, 119699, 148157,
           155557}},
         {10, 10, 10, 0}},
        {7,
         0.5,
         "10",
         "1",
         "0.5",
         {"abc", "", "hello", NULL},
         {{4}, {7}, {5}},
         {1, 1, 1, 0}},
        {1,
         1e-10,
         "47",
         "33",
         "1.0E-10",
         {"abc", "", "hello", NULL},
         {{0,  1,  2,  3,  4,  5,  6,  7,  8,  10, 12, 14, 20, 22, 24,
           26, 27, 28, 29, 30, 31, 32, 33, 35, 37, 39, 42, 44, 45, 46},
          {0,  3,  4,  6,  8,  10, 11, 15, 17, 18, 21, 22,
           24, 26, 28, 29, 33, 35, 39, 40, 42, 44, 46},
          {0,  1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 20, 22, 23,
           24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 35, 44, 45}},
         {30, 23, 27, 0}},
};

static void redisson_bits(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *f = bloom(c, "grid:vec");
	size_t v, i, j, n;
	long got[64];
	char buf[64];
	int ok = 0;
	for (v = 0; v < sizeof(vecs) / sizeof(vecs[0]); v++) {
		const struct vec *t = &vecs[v];
		for (i = 0; i < 4 && t->values[i]; i++) {
			HT_OK(hl_object_delete(NULL, f));
			HT_OK(hl_bloom_filter_try_init(&ok, f, t->n, t->p));
			HT_EQ(ok, 1);
			hget(r, "{grid:vec}:config", "size", buf, sizeof buf);
			HT_STREQ(buf, t->size);
			hget(r, "{grid:vec}:config", "hashIterations", buf,
			     sizeof buf);
			HT_STREQ(buf, t->k);
			hget(r, "{grid:vec}:config", "falseProbability", buf,
			     sizeof buf);
			HT_STREQ(buf, t->pstr);
			hget(r, "{grid:vec}:config", "expectedInsertions", buf,
			     sizeof buf);
			HT_EQ(atoll(buf), t->n);
			HT_OK(hl_bloom_filter_add(&ok, f, t->values[i],
			                          strlen(t->values[i])));
			HT_EQ(ok, 1);
			n = bits_at(r, "grid:vec", got, 64);
			HT_EQ(n, t->nbits[i]);
			for (j = 0; j < n; j++)
				HT_EQ(got[j], t->bits[i][j]);
			HT_OK(hl_bloom_filter_contains(&ok, f, t->values[i],
			                               strlen(t->values[i])));
			HT_EQ(ok, 1);
		}
	}
	hl_object_free(f);
	hl_client_free(c);
}

/* Many values in one round trip, and count: the numbers Redisson 4.3.1
 * gave for the same values (BloomVectors fill: added 100, count 101;
 * added 405, count 499). */
static void many(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *f = bloom(c, "grid:many"), *g = bloom(c, "grid:many2");
	char store[500][8];
	const void *vals[500];
	size_t lens[500], i;
	int64_t n = 0;
	int ok = 0;
	hl_value *v = NULL;

	for (i = 0; i < 500; i++) {
		snprintf(store[i], sizeof store[i], "v%zu", i);
		vals[i] = store[i];
		lens[i] = strlen(store[i]);
	}
	HT_OK(hl_bloom_filter_try_init(&ok, f, 1000, 0.03));
	HT_OK(hl_bloom_filter_add_all(&n, f, vals, lens, 100));
	HT_EQ(n, 100);
	HT_OK(hl_bloom_filter_count(&n, f));
	HT_EQ(n, 101);
	HT_OK(hl_bloom_filter_contains_all(&n, f, vals, lens, 100));
	HT_EQ(n, 100);
	/* the rest were not added: few false positives at 3% */
	HT_OK(hl_bloom_filter_contains_all(&n, f, vals + 100, lens + 100, 400));
	HT_RANGE(n, 0, 40);
	HT_OK(hl_bloom_filter_contains_each(&v, f, vals + 98, lens + 98, 3));
	HT_EQ(hl_value_type(v), HL_VALUE_ARRAY);
	HT_EQ(hl_value_len(v), 3);
	HT_EQ(hl_value_int(hl_value_at(v, 0)), 1);
	HT_EQ(hl_value_int(hl_value_at(v, 1)), 1);
	hl_value_free(v);
	/* adding again adds nothing */
	HT_OK(hl_bloom_filter_add_all(&n, f, vals, lens, 100));
	HT_EQ(n, 0);
	HT_OK(hl_bloom_filter_add(&ok, f, "v3", 2));
	HT_EQ(ok, 0);
	/* none at all: no round trip, 0 */
	HT_OK(hl_bloom_filter_add_all(&n, f, NULL, NULL, 0));
	HT_EQ(n, 0);

	for (i = 0; i < 500; i++)
		store[i][0] = 'w';
	HT_OK(hl_bloom_filter_try_init(&ok, g, 200, 0.1));
	HT_OK(hl_bloom_filter_add_all(&n, g, vals, lens, 500));
	HT_EQ(n, 405);
	HT_OK(hl_bloom_filter_count(&n, g));
	HT_EQ(n, 499);

	/* the config, as stored */
	HT_OK(hl_bloom_filter_get_size(&n, f));
	HT_EQ(n, 7298);
	HT_OK(hl_bloom_filter_get_hash_iterations(&n, f));
	HT_EQ(n, 5);
	HT_OK(hl_bloom_filter_get_expected_insertions(&n, f));
	HT_EQ(n, 1000);
	{
		double p = 0;
		HT_OK(hl_bloom_filter_get_false_probability(&p, f));
		HT_CHECK(p == 0.03);
	}
	/* try_init again: false, the config kept */
	HT_OK(hl_bloom_filter_try_init(&ok, f, 5, 0.5));
	HT_EQ(ok, 0);
	HT_OK(hl_bloom_filter_get_size(&n, f));
	HT_EQ(n, 7298);
	/* the false probability in Java's Double.toString (BloomVectors fmt) */
	{
		static const struct {
			double p;
			const char *java;
		} fmt[] = {{0.000123456, "1.23456E-4"},
		           {0.002, "0.002"},
		           {0.1, "0.1"},
		           {0.01, "0.01"},
		           {0.999, "0.999"}};
		size_t i;
		char buf[64];
		for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
			HT_OK(hl_object_delete(NULL, g));
			HT_OK(hl_bloom_filter_try_init(&ok, g, 1000, fmt[i].p));
			hget(r, "{grid:many2}:config", "falseProbability", buf,
			     sizeof buf);
			HT_STREQ(buf, fmt[i].java);
		}
	}
	/* delete takes both keys */
	HT_OK(hl_object_delete(&ok, f));
	HT_EQ(ok, 1);
	HT_EQ(ht_exists(r, HT_S("grid:many")), 0);
	HT_EQ(ht_exists(r, HT_S("{grid:many}:config")), 0);
	hl_object_free(f);
	hl_object_free(g);
	hl_client_free(c);
}

/* Deleted and initialised again with other parameters: this object (its
 * config remembered) and another both use the new config at once
 * (Redisson's cached config fails here: #6554). */
static void reinit(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *f = bloom(c, "grid:reinit"), *g = bloom(c, "grid:reinit");
	long got[64];
	int ok = 0;
	int64_t n = 0;
	HT_OK(hl_bloom_filter_try_init(&ok, f, 1000, 0.03));
	HT_OK(hl_bloom_filter_add(&ok, f, "abc", 3));
	HT_OK(hl_bloom_filter_contains(&ok, g, "abc", 3));
	HT_EQ(ok, 1);
	/* another client (a Java one, say) deletes and re-initialises */
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "DEL grid:reinit {grid:reinit}:config"));
	HT_RC(hl_bloom_filter_add(&ok, f, "abc", 3), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "not initialised") != NULL);
	freeReplyObject(
	        ht_raw(ht_raw_of(r),
	               "HSET {grid:reinit}:config size 10 hashIterations 1 "
	               "expectedInsertions 7 falseProbability 0.5"));
	HT_OK(hl_bloom_filter_contains(&ok, f, "abc", 3));
	HT_EQ(ok, 0);
	HT_OK(hl_bloom_filter_add(&ok, f, "abc", 3));
	HT_EQ(ok, 1);
	HT_EQ(bits_at(r, "grid:reinit", got, 64), 1);
	HT_EQ(got[0], 4); /* Redisson's bit for "abc" at size 10, k 1 */
	HT_OK(hl_bloom_filter_contains(&ok, g, "abc", 3));
	HT_EQ(ok, 1);
	/* and back to the first config under g's feet */
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "DEL grid:reinit {grid:reinit}:config"));
	HT_OK(hl_bloom_filter_try_init(&ok, f, 1000, 0.03));
	HT_OK(hl_bloom_filter_add(&ok, g, "abc", 3));
	HT_EQ(bits_at(r, "grid:reinit", got, 64), 5);
	HT_EQ(got[0], 1218);
	HT_OK(hl_bloom_filter_count(&n, f));
	HT_EQ(n, 1);
	hl_object_free(f);
	hl_object_free(g);
	hl_client_free(c);
}

static int bits_landed(void *arg)
{
	return ht_exists(arg, HT_S("grid:doubt:bloom"));
}

/* add answers whether a bit was new: sent again after a lost reply it
 * would answer false for its own bits, so it is in doubt, never resent;
 * its bits are set (and adding again is safe). contains is resent. */
static void lost_reply(void)
{
	ht_redis *r = ht_redis_default();
	ht_proxy *p = ht_proxy_start(r->port);
	hl_client *c;
	hl_object *f;
	hl_task *t = NULL;
	hl_arg arg;
	long got[16];
	int ok = 0, res = 0;

	c = ht_doubt_client(p->url, 20);
	f = bloom(c, "grid:doubt:bloom");
	HT_OK(hl_bloom_filter_try_init(&ok, f, 1000, 0.03));
	/* the scripts cached, the config known (one round trip each) */
	HT_OK(hl_bloom_filter_contains(&ok, f, "x", 1));
	HT_OK(hl_bloom_filter_add(&ok, f, "warm", 4));
	freeReplyObject(ht_raw(ht_raw_of(r), "DEL grid:doubt:bloom"));
	ht_proxy_cmd(p, "delay 400");
	HT_RC(hl_bloom_filter_add(&ok, f, "abc", 3), HL_EINDOUBT);
	HT_CHECK(strstr(hl_error_last(), "once or not at all") != NULL);
	HT_CHECK(ht_wait_until(bits_landed, r, 10000));
	ht_proxy_cmd(p, "delay 0");
	HT_EQ(bits_at(r, "grid:doubt:bloom", got, 16), 5);
	HT_EQ(got[0], 1218);
	/* contains: a read, resent until answered */
	ht_proxy_cmd(p, "delay 400");
	memset(&arg, 0, sizeof arg);
	arg.type = HL_ARG_BYTES;
	arg.bytes = "abc";
	arg.len = 3;
	HT_OK(hl_object_call_start(&t, f, HL_OP_BLOOM_FILTER_CONTAINS, &arg,
	                           1));
	ht_sleep_ms(300);
	ht_proxy_cmd(p, "delay 0");
	HT_OK(ht_task_result(t, &res, 10000));
	hl_task_free(t);
	HT_OK(hl_bloom_filter_contains(&ok, f, "abc", 3));
	HT_EQ(ok, 1);
	hl_object_free(f);
	hl_client_free(c);
	ht_proxy_stop(p);
}

static void cluster(void)
{
	ht_cluster *cl = ht_cluster_start(NULL);
	hl_client *c = ht_client_url(cl->url, NULL);
	char name[32];
	int i, ok = 0;
	int64_t n = 0;
	for (i = 0; i < 6; i++) {
		hl_object *f;
		snprintf(name, sizeof name,
		         i % 2 ? "grid:clbf:%d" : "{grid:t%d}:bf", i);
		f = bloom(c, name);
		HT_OK(hl_bloom_filter_try_init(&ok, f, 100, 0.01));
		HT_EQ(ok, 1);
		HT_OK(hl_bloom_filter_add(&ok, f, "abc", 3));
		HT_EQ(ok, 1);
		HT_OK(hl_bloom_filter_contains(&ok, f, "abc", 3));
		HT_EQ(ok, 1);
		HT_OK(hl_bloom_filter_count(&n, f));
		HT_EQ(n, 1);
		HT_OK(hl_object_delete(&ok, f));
		HT_EQ(ok, 1);
		hl_object_free(f);
	}
	hl_client_free(c);
	ht_cluster_destroy(cl);
}

static void bad_input(void)
{
	ht_redis *r = ht_redis_default();
	hl_client *c = ht_client(r, 0);
	hl_object *f = bloom(c, "grid:bfbad");
	int ok = 0;
	int64_t n = 0;
	double p = 0;
	hl_value *v = NULL;

	/* not initialised: a clear error everywhere */
	HT_RC(hl_bloom_filter_add(&ok, f, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "not initialised") != NULL);
	HT_RC(hl_bloom_filter_contains(&ok, f, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "not initialised") != NULL);
	HT_RC(hl_bloom_filter_contains_each(&v, f, NULL, NULL, 0), HL_OK);
	hl_value_free(v);
	HT_RC(hl_bloom_filter_count(&n, f), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "not initialised") != NULL);
	HT_RC(hl_bloom_filter_get_size(&n, f), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "not initialised") != NULL);
	/* sizes and probabilities */
	HT_RC(hl_bloom_filter_try_init(&ok, f, 100, 0), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "false_probability") != NULL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, 100, 1), HL_EINVAL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, 100, 1.5), HL_EINVAL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, 100, -0.1), HL_EINVAL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, 0, 0.1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "expected_insertions") != NULL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, -5, 0.1), HL_EINVAL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, INT64_MAX, 0.1), HL_EINVAL);
	HT_CHECK(strstr(hl_error_last(), "at most 4294967294") != NULL);
	HT_RC(hl_bloom_filter_try_init(&ok, f, 3000000000LL, 0.01), HL_EINVAL);
	HT_EQ(ht_exists(r, HT_S("{grid:bfbad}:config")), 0);
	/* NUL bytes and an empty value are values like any */
	HT_OK(hl_bloom_filter_try_init(&ok, f, 100, 0.01));
	HT_OK(hl_bloom_filter_add(&ok, f, "a\0b", 3));
	HT_EQ(ok, 1);
	HT_OK(hl_bloom_filter_contains(&ok, f, "a\0c", 3));
	HT_OK(hl_bloom_filter_contains(&ok, f, "a\0b", 3));
	HT_EQ(ok, 1);
	HT_RC(hl_bloom_filter_add(&ok, f, NULL, 2), HL_EINVAL);
	/* a huge value: hashed here, only its bit positions travel */
	{
		size_t big = 8u << 20;
		char *h = malloc(big);
		HT_CHECK(h != NULL);
		memset(h, 'h', big);
		HT_OK(hl_bloom_filter_add(&ok, f, h, big));
		HT_EQ(ok, 1);
		HT_OK(hl_bloom_filter_contains(&ok, f, h, big));
		HT_EQ(ok, 1);
		h[big - 1] = 'i';
		HT_OK(hl_bloom_filter_contains(&ok, f, h, big));
		free(h);
	}
	/* a config that is not a Bloom filter's */
	freeReplyObject(
	        ht_raw(ht_raw_of(r), "HSET {grid:bfbad}:config size x"));
	HT_RC(hl_bloom_filter_contains(&ok, f, "zz", 2), HL_EPROTOCOL);
	HT_CHECK(strstr(hl_error_last(), "not a Bloom filter") != NULL);
	/* other types at the keys */
	HT_OK(hl_object_delete(NULL, f));
	freeReplyObject(ht_raw(ht_raw_of(r), "SET {grid:bfbad}:config x"));
	HT_RC(hl_bloom_filter_try_init(&ok, f, 100, 0.01), HL_OK);
	HT_EQ(ok, 0); /* exists: Redisson's tryInit says false too */
	HT_RC(hl_bloom_filter_add(&ok, f, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "WRONGTYPE") != NULL);
	HT_RC(hl_bloom_filter_get_false_probability(&p, f), HL_EREDIS);
	HT_OK(hl_object_delete(NULL, f));
	HT_OK(hl_bloom_filter_try_init(&ok, f, 100, 0.01));
	freeReplyObject(ht_raw(ht_raw_of(r), "LPUSH grid:bfbad x"));
	HT_RC(hl_bloom_filter_add(&ok, f, "a", 1), HL_EREDIS);
	HT_CHECK(strstr(hl_error_last(), "another type") != NULL);
	HT_RC(hl_bloom_filter_count(&n, f), HL_EREDIS);
	hl_object_free(f);
	hl_client_free(c);
}

HT_MAIN(HT_CASE(highwayhash), HT_CASE(redisson_bits), HT_CASE(many),
        HT_CASE(reinit), HT_CASE(lost_reply), HT_CASE(cluster),
        HT_CASE(bad_input))
