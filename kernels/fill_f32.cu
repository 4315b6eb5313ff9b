/* fill_f32.cu — FP32 fill on the GPU: v[i] = x. CPU reference: kernels/fill_f32_cpu.c (bitwise:
 * a store). */
#include "kernels/cuda_check.cuh"

namespace {

__global__ void fill_f32_kernel(float *v, float x, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) v[i] = x;
}

} // namespace

extern "C" int moe_fill_f32_gpu(float *v, float x, size_t n, void *stream) {
    if (n == 0) return MOE_OK;
    fill_f32_kernel<<<moe_blocks((long long)n, 256), 256, 0, moe_stream(stream)>>>(v, x, (long long)n);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
