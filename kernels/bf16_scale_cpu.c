/* bf16_scale_cpu.c — CPU reference of the element-wise BF16 scaling (moe_kernels.h §9), live mode's
 * stand-in loss gradient g = h x (1/T): y[i] = bf16(x[i] * s), one FP32 product rounded once. y may
 * be x. */
#include "kernels/moe_kernels.h"

void moe_bf16_scale_cpu(const moe_bf16 *x, float s, size_t n, moe_bf16 *y) {
    for (size_t i = 0; i < n; i++) y[i] = moe_f32_to_bf16(moe_bf16_to_f32(x[i]) * s);
}
