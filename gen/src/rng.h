/*
 * Counter-based random numbers for the data generators. A value is a pure
 * function of (seed, entity, stream), so any slice of a data set can be
 * generated on its own, in any order, on any thread, and always gives the
 * same bytes: the mixer is splitmix64's finalizer, which passes BigCrush
 * as a counter-mode generator.
 */
#ifndef QVGEN_RNG_H
#define QVGEN_RNG_H

#include <stdint.h>

#define RNG_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static inline uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The key of one entity (an order, a row) under a seed. */
static inline uint64_t rng_key(uint64_t seed, uint64_t entity) {
    return rng_mix64(seed + entity * RNG_GOLDEN);
}

/* 64 random bits for stream `stream` of an entity key. */
static inline uint64_t rng_at(uint64_t key, uint64_t stream) {
    return rng_mix64(key ^ ((stream + 1) * UINT64_C(0xD1B54A32D192ED03)));
}

/* Uniform integer in [lo, hi] from 64 random bits (hi - lo < 2^32):
 * multiply-shift on the high half, no modulo bias worth the name. */
static inline int64_t rng_range(uint64_t bits, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(((bits >> 32) * span) >> 32);
}

/* A sequential generator for a variable number of draws (text), seeded
 * from one counter-based value. */
struct rng_seq {
    uint64_t state;
};
static inline uint64_t rng_next(struct rng_seq *s) {
    s->state += RNG_GOLDEN;
    return rng_mix64(s->state);
}

#endif
