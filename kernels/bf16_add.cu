/* bf16_add.cu — element-wise BF16 sum on the GPU: out[i] = bf16(a[i] + b[i]) (out may be a or b).
 * CPU reference: kernels/bf16_add_cpu.c; one FP32 addition, one rounding: bitwise equal. */
#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void bf16_add_kernel(const __nv_bfloat16 *a, const __nv_bfloat16 *b, long long n, __nv_bfloat16 *out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16_rn(__fadd_rn(__bfloat162float(a[i]), __bfloat162float(b[i])));
}

} // namespace

extern "C" int moe_bf16_add_gpu(const moe_bf16 *a, const moe_bf16 *b, size_t n, moe_bf16 *out, void *stream) {
    if (n == 0) return MOE_OK;
    bf16_add_kernel<<<moe_blocks((long long)n, 256), 256, 0, moe_stream(stream)>>>(
        reinterpret_cast<const __nv_bfloat16 *>(a), reinterpret_cast<const __nv_bfloat16 *>(b), (long long)n,
        reinterpret_cast<__nv_bfloat16 *>(out));
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
