/* bf16.h — BF16 emulation for the CPU references.
 *
 * BF16 is stored as uint16_t: the top 16 bits of an IEEE-754 binary32. Conversions match the GPU
 * exactly (PTX cvt.rn.bf16.f32, which __float2bfloat16_rn compiles to on sm_90):
 *   - round to nearest, ties to even, on the 16 discarded bits;
 *   - overflow rounds to +-inf (the carry walks into the exponent), subnormals are kept (no FTZ);
 *   - every NaN becomes the canonical quiet NaN 0x7FFF (sign dropped), as the hardware does.
 * bf16 -> f32 is exact (a shift).
 */
#ifndef MOESIM_KERNELS_BF16_H
#define MOESIM_KERNELS_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t moe_bf16;

#define MOE_BF16_CANONICAL_NAN ((moe_bf16)0x7FFFu)

static inline uint32_t moe_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float moe_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float moe_bf16_to_f32(moe_bf16 b) { return moe_f32_from_bits((uint32_t)b << 16); }

static inline moe_bf16 moe_f32_to_bf16(float f) {
    uint32_t u = moe_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return MOE_BF16_CANONICAL_NAN;
    /* Adding 0x7FFF plus the lowest kept bit rounds half-way cases to the even neighbour. */
    uint32_t lsb = (u >> 16) & 1u;
    return (moe_bf16)((u + 0x7FFFu + lsb) >> 16);
}

/* What a value looks like after a round trip through BF16 storage. */
static inline float moe_bf16_round(float f) { return moe_bf16_to_f32(moe_f32_to_bf16(f)); }

static inline void moe_bf16_from_f32_array(moe_bf16 *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = moe_f32_to_bf16(src[i]);
}

static inline void moe_bf16_to_f32_array(float *dst, const moe_bf16 *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = moe_bf16_to_f32(src[i]);
}

#endif /* MOESIM_KERNELS_BF16_H */
