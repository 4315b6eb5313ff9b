/* rng_seed.h — the one seed-mixing function of moesim: the splitmix64 finalizer.
 *
 * Every random stream (routing draws, run-level Monte Carlo trials, live-mode data, kernel bench
 * inputs) derives its seed from the scenario seed through these, so a stream is a documented function
 * of (seed, its coordinates) and never of the order in which streams are made.
 * splitmix64: Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
 * constants from Vigna's reference splitmix64.c (prng.di.unimi.it). Header-only: kernels/ uses it. */
#ifndef MOESIM_RNG_SEED_H
#define MOESIM_RNG_SEED_H

#include <stdint.h>

/* One splitmix64 step from state x: the finalizer of x + golden gamma. */
static inline uint64_t moe_seed_mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The splitmix64 generator itself: advance *state and return the next 64-bit output. */
static inline uint64_t moe_seed_next(uint64_t *state) {
    uint64_t out = moe_seed_mix(*state);
    *state += 0x9E3779B97F4A7C15ull;
    return out;
}

/* 64 bits folded to 32 (gsl_rng_mt19937 takes a 32-bit seed): high half xor low half. */
static inline uint32_t moe_seed_fold32(uint64_t h) { return (uint32_t)(h ^ (h >> 32)); }

#endif
