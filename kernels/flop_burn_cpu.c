/* flop_burn_cpu.c — CPU reference of the FLOP burner (moe_kernels.h §9), live mode's stand-in for a
 * kernel the live run does not compute for real (router backward, shared expert, weight gradients,
 * optimizer): `lanes` independent FP32 recurrences, `updates` steps each,
 *     acc_j <- acc_j * 0.5 + a_j * b_i,   a_j = (j + 1) * 1e-3,   b_i = 1 + (i mod 8) * 1e-4,
 * counted as 2 FLOPs per step (moe_flop_burn_updates). The halving keeps every acc bounded, the
 * varying b keeps the compiler from collapsing the loop, and out[j] (the final acc_j) makes the work
 * observable. Products and sum each rounded to FP32 (no contraction in this library):
 * kernels/flop_burn.cu computes the same values bit for bit. The lane loop is innermost so that the
 * compiler vectorises it, as a GPU runs the lanes in parallel. */
#include "kernels/moe_kernels.h"

long long moe_flop_burn_updates(double flops, int lanes) {
    if (!(flops > 0) || lanes < 1) return 0;
    return (long long)(flops / (2.0 * lanes));
}

void moe_flop_burn_cpu(long long updates, int lanes, float *out) {
    enum { CHUNK = 256 };
    for (int j0 = 0; j0 < lanes; j0 += CHUNK) {
        const int n = lanes - j0 < CHUNK ? lanes - j0 : CHUNK;
        float acc[CHUNK], a[CHUNK];
        for (int j = 0; j < n; j++) {
            acc[j] = 0.0f;
            a[j] = (float)(j0 + j + 1) * 1e-3f;
        }
        for (long long i = 0; i < updates; i++) {
            const float b = 1.0f + (float)(i & 7) * 1e-4f;
            for (int j = 0; j < n; j++) acc[j] = acc[j] * 0.5f + a[j] * b;
        }
        for (int j = 0; j < n; j++) out[j0 + j] = acc[j];
    }
}
