/* unpermute_bwd_cpu.c — CPU reference of the combine's backward with respect to the expert outputs
 * (moe_kernels.h §9): the combine computed out[t] = sum_k w[t,k] y[slot[t,k]], so the gradient that
 * travels back to the experts is g_send[slot[t,k]] = bf16(w[t,k] * g[t]), one FP32 product rounded
 * once. Dropped assignments (slot -1) get nothing; rows no assignment names are left untouched. */
#include "kernels/moe_kernels.h"

void moe_unpermute_bwd_cpu(const moe_bf16 *g, const int32_t *slot, const float *topk_w, int T, int K, int H,
                           moe_bf16 *g_send) {
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) {
            const int32_t s = slot[(size_t)t * K + k];
            if (s < 0) continue;
            const float w = topk_w[(size_t)t * K + k];
            for (int h = 0; h < H; h++)
                g_send[(size_t)s * H + h] = moe_f32_to_bf16(w * moe_bf16_to_f32(g[(size_t)t * H + h]));
        }
}
