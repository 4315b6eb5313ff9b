/* token_mix_cpu.c — CPU reference of the live mode's stand-in for attention, the dense FFN and their
 * backward (moe_kernels.h §9): y[t,h] = bf16(0.75 x[t,h] + 0.25 x[t,(h+1) mod H]). A convex
 * combination with the neighbouring feature keeps values bounded and changes the data in every layer,
 * so that a pipeline that skipped or repeated a block would be caught by the bitwise output checks.
 * Two products and one sum, each rounded to FP32 (this library is built without FP contraction),
 * then one rounding to BF16: kernels/token_mix.cu does exactly these operations. */
#include "kernels/moe_kernels.h"

void moe_token_mix_cpu(const moe_bf16 *x, int T, int H, moe_bf16 *y) {
    for (int t = 0; t < T; t++) {
        const moe_bf16 *row = x + (size_t)t * H;
        moe_bf16 *out = y + (size_t)t * H;
        for (int h = 0; h < H; h++)
            out[h] = moe_f32_to_bf16(0.75f * moe_bf16_to_f32(row[h]) + 0.25f * moe_bf16_to_f32(row[(h + 1) % H]));
    }
}
