/* unpermute_bwd.cu — the combine's backward on the GPU: g_send[slot[t,k]] = bf16(w[t,k] * g[t]).
 * CPU reference: kernels/unpermute_bwd_cpu.c. Every row of g_send has one writer (the layout gives
 * each kept (t,k) its own slot), one FP32 product, one rounding: bitwise equal. One thread per
 * (t, k, h) element. */
#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void unpermute_bwd_kernel(const __nv_bfloat16 *g, const int32_t *slot, const float *w, int T, int K,
                                     int H, __nv_bfloat16 *g_send) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)T * K * H) return;
    const long long tk = i / H;
    const int h = (int)(i % H);
    const int32_t s = slot[tk];
    if (s >= 0) g_send[(long long)s * H + h] = __float2bfloat16_rn(__fmul_rn(w[tk], __bfloat162float(g[(tk / K) * H + h])));
}

} // namespace

extern "C" int moe_unpermute_bwd_gpu(const moe_bf16 *g, const int32_t *slot, const float *topk_w, int T, int K,
                                     int H, moe_bf16 *g_send, void *stream) {
    if (T < 0 || K < 1 || K > MOE_MAX_TOP_K || H < 1) return MOE_EINVAL;
    if (T == 0) return MOE_OK;
    unpermute_bwd_kernel<<<moe_blocks((long long)T * K * H, 256), 256, 0, moe_stream(stream)>>>(
        reinterpret_cast<const __nv_bfloat16 *>(g), slot, topk_w, T, K, H, reinterpret_cast<__nv_bfloat16 *>(g_send));
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
