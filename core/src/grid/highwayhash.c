/*
 * HighwayHash-128, the portable form (see highwayhash.h). The state is
 * four 64-bit lanes of v0, v1, mul0, mul1; each 32-byte packet is four
 * little-endian words added in, followed by 32x32-bit multiplies and a
 * byte-wise "zipper" merge; the tail (len % 32 bytes) is spread into one
 * last packet; six permute-and-update rounds finalise.
 */
#include <string.h>

#include "grid/highwayhash.h"

typedef struct hh_state {
	uint64_t v0[4], v1[4], mul0[4], mul1[4];
} hh_state;

static const uint64_t init0[4] = {0xdbe6d5d5fe4cce2fULL, 0xa4093822299f31d0ULL,
                                  0x13198a2e03707344ULL, 0x243f6a8885a308d3ULL};
static const uint64_t init1[4] = {0x3bd39e10cb0ef593ULL, 0xc0acf169b5f18a8cULL,
                                  0xbe5466cf34e90c6cULL, 0x452821e638d01377ULL};

static void hh_reset(hh_state *s, const uint64_t key[4])
{
	int i;
	for (i = 0; i < 4; i++) {
		s->mul0[i] = init0[i];
		s->mul1[i] = init1[i];
		s->v0[i] = init0[i] ^ key[i];
		s->v1[i] = init1[i] ^ ((key[i] >> 32) | (key[i] << 32));
	}
}

/* Spread the bytes of v1 and v0 into *add1 and *add0 (the zipper). */
static void zipper_add(uint64_t v1, uint64_t v0, uint64_t *add1, uint64_t *add0)
{
	*add0 += (((v0 & 0xff000000ULL) | (v1 & 0xff00000000ULL)) >> 24) |
	         (((v0 & 0xff0000000000ULL) | (v1 & 0xff000000000000ULL)) >>
	          16) |
	         (v0 & 0xff0000ULL) | ((v0 & 0xff00ULL) << 32) |
	         ((v1 & 0xff00000000000000ULL) >> 8) | (v0 << 56);
	*add1 += (((v1 & 0xff000000ULL) | (v0 & 0xff00000000ULL)) >> 24) |
	         (v1 & 0xff0000ULL) | ((v1 & 0xff0000000000ULL) >> 16) |
	         ((v1 & 0xff00ULL) << 24) | ((v0 & 0xff000000000000ULL) >> 8) |
	         ((v1 & 0xffULL) << 48) | (v0 & 0xff00000000000000ULL);
}

static void hh_update(hh_state *s, const uint64_t lanes[4])
{
	int i;
	for (i = 0; i < 4; i++) {
		s->v1[i] += s->mul0[i] + lanes[i];
		s->mul0[i] ^= (s->v1[i] & 0xffffffffULL) * (s->v0[i] >> 32);
		s->v0[i] += s->mul1[i];
		s->mul1[i] ^= (s->v0[i] & 0xffffffffULL) * (s->v1[i] >> 32);
	}
	zipper_add(s->v1[1], s->v1[0], &s->v0[1], &s->v0[0]);
	zipper_add(s->v1[3], s->v1[2], &s->v0[3], &s->v0[2]);
	zipper_add(s->v0[1], s->v0[0], &s->v1[1], &s->v1[0]);
	zipper_add(s->v0[3], s->v0[2], &s->v1[3], &s->v1[2]);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;
	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void hh_packet(hh_state *s, const unsigned char *p)
{
	uint64_t lanes[4];
	int i;
	for (i = 0; i < 4; i++)
		lanes[i] = le64(p + 8 * i);
	hh_update(s, lanes);
}

static uint32_t rotl32(uint32_t x, unsigned n)
{
	return n ? (x << n) | (x >> (32 - n)) : x;
}

/* The last len (< 32) bytes. */
static void hh_remainder(hh_state *s, const unsigned char *p, size_t len)
{
	unsigned char packet[32];
	size_t mod4 = len & 3, whole = len & ~(size_t)3, i;
	memset(packet, 0, sizeof(packet));
	for (i = 0; i < 4; i++) {
		uint32_t lo = (uint32_t)s->v1[i],
		         hi = (uint32_t)(s->v1[i] >> 32);
		s->v0[i] += ((uint64_t)len << 32) + len;
		s->v1[i] = (uint64_t)rotl32(lo, (unsigned)len) |
		           ((uint64_t)rotl32(hi, (unsigned)len) << 32);
	}
	memcpy(packet, p, whole);
	if (len & 16) {
		for (i = 0; i < 4; i++)
			packet[28 + i] = p[whole + i + mod4 - 4];
	} else if (mod4) {
		packet[16] = p[whole];
		packet[17] = p[whole + (mod4 >> 1)];
		packet[18] = p[whole + mod4 - 1];
	}
	hh_packet(s, packet);
}

static uint64_t swap_halves(uint64_t x)
{
	return (x >> 32) | (x << 32);
}

static void hh_permute_update(hh_state *s)
{
	uint64_t p[4];
	p[0] = swap_halves(s->v0[2]);
	p[1] = swap_halves(s->v0[3]);
	p[2] = swap_halves(s->v0[0]);
	p[3] = swap_halves(s->v0[1]);
	hh_update(s, p);
}

void hl__highwayhash128(const uint64_t key[4], const void *data, size_t len,
                        uint64_t out[2])
{
	const unsigned char *p = data;
	hh_state s;
	size_t i;
	hh_reset(&s, key);
	for (i = 0; i + 32 <= len; i += 32)
		hh_packet(&s, p + i);
	if (len & 31)
		hh_remainder(&s, p + i, len & 31);
	for (i = 0; i < 6; i++)
		hh_permute_update(&s);
	out[0] = s.v0[0] + s.mul0[0] + s.v1[2] + s.mul1[2];
	out[1] = s.v0[1] + s.mul0[1] + s.v1[3] + s.mul1[3];
}
