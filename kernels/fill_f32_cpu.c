/* fill_f32_cpu.c — CPU reference of the FP32 fill (moe_kernels.h §9): v[i] = x (live mode's unit
 * gate weights, with which the combine kernel scatters the permute's gradient back per token). */
#include "kernels/moe_kernels.h"

void moe_fill_f32_cpu(float *v, float x, size_t n) {
    for (size_t i = 0; i < n; i++) v[i] = x;
}
