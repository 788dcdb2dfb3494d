/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data pattern of the rpage tests: every 8-byte word of every pool
 * has a value that depends on the pool's id, the word's byte offset in
 * the pool and a seed, so that a page read from the wrong pool, the
 * wrong offset or an older generation of writes is told apart from the
 * right one.
 *
 * Seed 0 is a pool's base pattern, the one its exporter fills it with;
 * a test that writes to a pool uses another seed, and the exporter then
 * checks for that seed in the range written and seed 0 elsewhere.
 *
 * Words are stored little-endian, so hosts of either byte order agree.
 * Header only, no library: used by rpage_pattern and the selftests.
 */
#ifndef RPAGE_PATTERN_H
#define RPAGE_PATTERN_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: a bijection of 64-bit values that mixes well. */
static inline uint64_t rpage_pattern_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/*
 * The value of the word at byte @offset (a multiple of 8) of pool
 * @pool_id, for @seed. For a given pool and seed no two offsets share a
 * value (the mix is a bijection of the offset); a word of zeroes, what a
 * fresh kernel pool holds, matches with a probability of 2^-64.
 */
static inline uint64_t rpage_pattern(uint64_t pool_id, uint64_t offset,
				     uint64_t seed)
{
	return rpage_pattern_mix((pool_id * 0x9E3779B97F4A7C15ULL) ^ offset ^
				 (seed * 0xBF58476D1CE4E5B9ULL) ^
				 0xD1B54A32D192ED03ULL);
}

/*
 * Fills @len bytes at @buf (8-byte aligned, @len a multiple of 8) with
 * the pattern of pool @pool_id for the range that starts at byte
 * @offset of the pool.
 */
static inline void rpage_pattern_fill(void *buf, uint64_t len, uint64_t pool_id,
				      uint64_t offset, uint64_t seed)
{
	uint64_t *word = buf;

	for (uint64_t i = 0; i < len / 8; i++)
		word[i] = htole64(rpage_pattern(pool_id, offset + i * 8, seed));
}

/*
 * Checks @len bytes at @buf against the pattern of pool @pool_id from
 * byte @offset of the pool. Returns the pool offset of the first word
 * that differs, or UINT64_MAX when all match.
 */
static inline uint64_t rpage_pattern_check(const void *buf, uint64_t len,
					   uint64_t pool_id, uint64_t offset,
					   uint64_t seed)
{
	const uint64_t *word = buf;

	for (uint64_t i = 0; i < len / 8; i++) {
		if (le64toh(word[i]) != rpage_pattern(pool_id, offset + i * 8, seed))
			return offset + i * 8;
	}
	return UINT64_MAX;
}

/* The word at byte @pos of @buf as the pattern sees it (for messages). */
static inline uint64_t rpage_pattern_word(const void *buf, uint64_t pos)
{
	return le64toh(((const uint64_t *)buf)[pos / 8]);
}

#endif /* RPAGE_PATTERN_H */
