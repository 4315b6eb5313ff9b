/* token_mix.cu — the live stand-in token mix on the GPU: y[t,h] = bf16(0.75 x[t,h] + 0.25 x[t,h+1 mod H]).
 * CPU reference: kernels/token_mix_cpu.c. __fmul_rn/__fadd_rn keep the compiler from fusing the
 * multiply-add, so the result is the CPU's bit for bit. One thread per element. */
#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void token_mix_kernel(const __nv_bfloat16 *x, int T, int H, __nv_bfloat16 *y) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)T * H) return;
    const long long t = i / H;
    const int h = (int)(i % H);
    const float a = __bfloat162float(x[i]), b = __bfloat162float(x[t * H + (h + 1) % H]);
    y[i] = __float2bfloat16_rn(__fadd_rn(__fmul_rn(0.75f, a), __fmul_rn(0.25f, b)));
}

} // namespace

extern "C" int moe_token_mix_gpu(const moe_bf16 *x, int T, int H, moe_bf16 *y, void *stream) {
    if (T < 0 || H < 1 || x == y) return MOE_EINVAL;
    if (T == 0) return MOE_OK;
    token_mix_kernel<<<moe_blocks((long long)T * H, 256), 256, 0, moe_stream(stream)>>>(
        reinterpret_cast<const __nv_bfloat16 *>(x), T, H, reinterpret_cast<__nv_bfloat16 *>(y));
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
