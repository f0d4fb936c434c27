/*
 * HighwayHash (Alakuijala, Cox, Wassenberg: "Fast keyed hash/pseudo-random
 * function using SIMD multiply and permute"), the portable 64-bit-lane
 * form, written here from the published algorithm. Redisson's Bloom filter
 * takes the 128-bit result of it over a value's bytes.
 */
#ifndef HL_HIGHWAYHASH_H
#define HL_HIGHWAYHASH_H

#include <stddef.h>
#include <stdint.h>

/* The 128-bit HighwayHash of data under key: out[0], out[1] (the order
 * of the reference's finalize128). */
void hl__highwayhash128(const uint64_t key[4], const void *data, size_t len,
                        uint64_t out[2]);

#endif
