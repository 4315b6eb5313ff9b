/* combine_cpu.c — CPU reference of unpermute + combine: each token gathers its K expert outputs
 * from the rows the dispatch layout gave them and sums them weighted by the gate weights.
 * fmaf in k order on both CPU and GPU: the two results are bitwise identical (no contraction or
 * reassociation freedom left to either compiler). Dropped assignments (slot -1) add nothing. */
#include "kernels/moe_kernels.h"

#include <math.h>

void moe_combine_cpu(const moe_bf16 *y_send, const int32_t *slot, const float *topk_w,
                     int T, int K, int H, moe_bf16 *out) {
    for (int t = 0; t < T; t++) {
        const int32_t *sl = slot + (size_t)t * K;
        const float *w = topk_w + (size_t)t * K;
        moe_bf16 *o = out + (size_t)t * H;
        for (int h = 0; h < H; h++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                if (sl[k] >= 0) acc = fmaf(w[k], moe_bf16_to_f32(y_send[(size_t)sl[k] * H + h]), acc);
            o[h] = moe_f32_to_bf16(acc);
        }
    }
}
