/* bf16_add_cpu.c — CPU reference of the element-wise BF16 sum (moe_kernels.h §9), the residual
 * connection of live mode: out[i] = bf16(a[i] + b[i]), the sum exact in FP32 and rounded once. out
 * may be a or b. */
#include "kernels/moe_kernels.h"

void moe_bf16_add_cpu(const moe_bf16 *a, const moe_bf16 *b, size_t n, moe_bf16 *out) {
    for (size_t i = 0; i < n; i++) out[i] = moe_f32_to_bf16(moe_bf16_to_f32(a[i]) + moe_bf16_to_f32(b[i]));
}
