/* bf16_scale.cu — element-wise BF16 scaling on the GPU: y[i] = bf16(x[i] * s) (y may be x).
 * CPU reference: kernels/bf16_scale_cpu.c; one FP32 product, one rounding: bitwise equal. */
#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void bf16_scale_kernel(const __nv_bfloat16 *x, float s, long long n, __nv_bfloat16 *y) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16_rn(__fmul_rn(__bfloat162float(x[i]), s));
}

} // namespace

extern "C" int moe_bf16_scale_gpu(const moe_bf16 *x, float s, size_t n, moe_bf16 *y, void *stream) {
    if (n == 0) return MOE_OK;
    bf16_scale_kernel<<<moe_blocks((long long)n, 256), 256, 0, moe_stream(stream)>>>(
        reinterpret_cast<const __nv_bfloat16 *>(x), s, (long long)n, reinterpret_cast<__nv_bfloat16 *>(y));
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
