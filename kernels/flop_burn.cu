/* flop_burn.cu — the FLOP burner on the GPU: one thread per lane runs the recurrence of
 * kernels/flop_burn_cpu.c (acc <- acc * 0.5 + a_j * b_i) and stores its final value.
 * __fmul_rn/__fadd_rn forbid the fused multiply-add the CPU does not do either: bitwise equal. */
#include "kernels/cuda_check.cuh"

namespace {

__global__ void flop_burn_kernel(long long updates, int lanes, float *out) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= lanes) return;
    const float a = __fmul_rn((float)(j + 1), 1e-3f);
    float acc = 0.0f;
    for (long long i = 0; i < updates; i++) {
        const float b = __fadd_rn(1.0f, __fmul_rn((float)(i & 7), 1e-4f));
        acc = __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b));
    }
    out[j] = acc;
}

} // namespace

extern "C" int moe_flop_burn_gpu(long long updates, int lanes, float *out, void *stream) {
    if (updates < 0 || lanes < 1) return MOE_EINVAL;
    flop_burn_kernel<<<moe_blocks(lanes, 256), 256, 0, moe_stream(stream)>>>(updates, lanes, out);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
