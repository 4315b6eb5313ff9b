/* combine.cu — unpermute + weighted sum: out[t] = bf16( sum_k w[t,k] * y[slot[t,k]] ).
 * CPU reference: kernels/combine_cpu.c. fmaf in k order exactly as the CPU, so the result is
 * bitwise identical. One block per token; threads stride over the hidden dimension (coalesced
 * row reads) and share the token's K slots and weights through shared memory. */
#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void combine_kernel(const moe_bf16 *y, const int32_t *slot, const float *topk_w, int K,
                               int H, moe_bf16 *out) {
    __shared__ int32_t s_slot[MOE_MAX_TOP_K];
    __shared__ float s_w[MOE_MAX_TOP_K];
    const int t = blockIdx.x;
    if (threadIdx.x < K) {
        s_slot[threadIdx.x] = slot[(size_t)t * K + threadIdx.x];
        s_w[threadIdx.x] = topk_w[(size_t)t * K + threadIdx.x];
    }
    __syncthreads();
    const __nv_bfloat16 *yb = reinterpret_cast<const __nv_bfloat16 *>(y);
    __nv_bfloat16 *ob = reinterpret_cast<__nv_bfloat16 *>(out) + (size_t)t * H;
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            if (s_slot[k] >= 0) acc = fmaf(s_w[k], __bfloat162float(yb[(size_t)s_slot[k] * H + h]), acc);
        ob[h] = __float2bfloat16_rn(acc);
    }
}

} // namespace

extern "C" int moe_combine_gpu(const moe_bf16 *y_send, const int32_t *slot, const float *topk_w,
                               int T, int K, int H, moe_bf16 *out, void *stream) {
    if (T < 0 || K < 1 || K > MOE_MAX_TOP_K || H < 1) return MOE_EINVAL;
    if (T == 0) return MOE_OK;
    int threads = H < 256 ? ((H + 31) / 32) * 32 : 256;
    combine_kernel<<<T, threads, 0, moe_stream(stream)>>>(y_send, slot, topk_w, K, H, out);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
