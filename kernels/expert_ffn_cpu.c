/* expert_ffn_cpu.c — CPU reference of the grouped expert FFN (SwiGLU): for every row of every
 * segment, y = (silu(x W1) * (x W3)) W2 with the weights of the segment's local expert.
 * Rounding points mirror the GPU exactly (GEMM outputs are BF16 tensors there):
 *   h1 = bf16(x W1), h3 = bf16(x W3), a = bf16(silu(h1) * h3), y = bf16(a W2); FP32 accumulation.
 * Only the order of the FP32 sums differs from cuBLAS. */
#include "kernels/moe_kernels.h"

#include <math.h>

size_t moe_expert_ffn_cpu_work_floats(int H, int F) { return 2 * (size_t)F + (size_t)H; }

/* silu(v) * g in FP32; kernels/expert_ffn.cu uses the same expression. */
static inline float swiglu(float v, float g) { return (v / (1.0f + expf(-v))) * g; }

static void ffn_row(const moe_bf16 *x, const moe_bf16 *w1, const moe_bf16 *w3, const moe_bf16 *w2,
                    int H, int F, moe_bf16 *y, float *work) {
    float *a1 = work, *a3 = work + F, *acc = work + 2 * (size_t)F;
    for (int f = 0; f < F; f++) a1[f] = a3[f] = 0.0f;
    for (int h = 0; h < H; h++) {
        float xv = moe_bf16_to_f32(x[h]);
        const moe_bf16 *r1 = w1 + (size_t)h * F, *r3 = w3 + (size_t)h * F;
        for (int f = 0; f < F; f++) {
            a1[f] += xv * moe_bf16_to_f32(r1[f]);
            a3[f] += xv * moe_bf16_to_f32(r3[f]);
        }
    }
    for (int f = 0; f < F; f++)
        a1[f] = moe_bf16_round(swiglu(moe_bf16_round(a1[f]), moe_bf16_round(a3[f])));
    for (int h = 0; h < H; h++) acc[h] = 0.0f;
    for (int f = 0; f < F; f++) {
        const moe_bf16 *r2 = w2 + (size_t)f * H;
        for (int h = 0; h < H; h++) acc[h] += a1[f] * moe_bf16_to_f32(r2[h]);
    }
    for (int h = 0; h < H; h++) y[h] = moe_f32_to_bf16(acc[h]);
}

void moe_expert_ffn_cpu(const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                        const int32_t *seg_expert, const moe_bf16 *w1, const moe_bf16 *w3,
                        const moe_bf16 *w2, int H, int F, moe_bf16 *y_rows, float *work) {
    const size_t wsz = (size_t)H * F;
    int64_t row = 0;
    for (int s = 0; s < n_seg; s++) {
        int e = seg_expert[s];
        for (int i = 0; i < seg_rows[s]; i++, row++)
            ffn_row(x_rows + row * H, w1 + e * wsz, w3 + e * wsz, w2 + e * wsz, H, F,
                    y_rows + row * H, work);
    }
}
