/* gating.cu — router GEMM (cuBLAS) and the top-K gating kernel.
 * Semantics: kernels/moe_kernels.h §1-2; CPU reference: kernels/gating_cpu.c.
 *
 * Gating kernel: one warp per token (E <= 1024 scores staged in shared memory). Scores use the
 * same FP32 expressions as the CPU (accurate expf, IEEE division); the softmax sum is a warp tree,
 * so scores agree with the CPU to a few ulp, not bitwise. Given equal scores, selection, group /
 * node masks (same serial top-n sums in the same order) and weights are bitwise equal. */
#include "kernels/cuda_check.cuh"

/* ---- router GEMM ----------------------------------------------------------------------------- */
/* Row-major logits[T,E] = x[T,H] Wg[H,E] is, seen column-major, logits^T[E,T] = Wg^T[E,H] x^T[H,T]:
 * one GEMM with m = E, n = T, k = H and no transposes (the llm.c trick). */
extern "C" int moe_router_logits_gpu(void *cublas, const moe_bf16 *x, const moe_bf16 *w_gate,
                                     float *logits, int T, int H, int E, void *stream) {
    if (!cublas || T < 0 || H < 1 || E < 1) return MOE_EINVAL;
    if (T == 0) return MOE_OK;
    cublasHandle_t h = static_cast<cublasHandle_t>(cublas);
    const float alpha = 1.0f, beta = 0.0f;
    MOE_CUBLAS_TRY(cublasSetStream(h, moe_stream(stream)));
    MOE_CUBLAS_TRY(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, E, T, H, &alpha, w_gate, CUDA_R_16BF, E,
                                x, CUDA_R_16BF, H, &beta, logits, CUDA_R_32F, E, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    return MOE_OK;
}

/* ---- gating ---------------------------------------------------------------------------------- */
constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFull = 0xffffffffu;

struct Best {
    float v;
    int i;
};

__device__ static inline Best warp_best(Best b) {
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(kFull, b.v, off);
        int oi = __shfl_xor_sync(kFull, b.i, off);
        if (oi >= 0 && (b.i < 0 || moe_beats(ov, oi, b.v, b.i))) b = {ov, oi};
    }
    return b;
}

__device__ static inline float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
    return v;
}

__device__ static inline float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, off));
    return v;
}

/* Serial, exactly as sum_top_n in gating_cpu.c (same picks, same summation order). */
__device__ static float block_top_n_sum(const float *v, int n, int topn) {
    unsigned long long used[MOE_MAX_EXPERTS / 64] = {0};
    float sum = 0.0f;
    for (int r = 0; r < topn && r < n; r++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!(used[i >> 6] >> (i & 63) & 1ull) && (best < 0 || moe_beats(v[i], i, v[best], best)))
                best = i;
        used[best >> 6] |= 1ull << (best & 63);
        sum += v[best];
    }
    return sum;
}

/* Keep the `keep` best of n_blocks blocks (score = top-n sum); the others' experts become not
 * allowed. allowed[] doubles as the "block taken" mark (2 on every expert of a kept block). */
__device__ static void mask_blocks(const float *sel, int E, int n_blocks, int keep, int topn,
                                   float *bscore, unsigned char *allowed, int lane) {
    const int bs = E / n_blocks;
    for (int b = lane; b < n_blocks; b += 32) bscore[b] = block_top_n_sum(sel + b * bs, bs, topn);
    __syncwarp();
    for (int r = 0; r < keep; r++) {
        Best best = {0.0f, -1};
        for (int b = lane; b < n_blocks; b += 32)
            if (allowed[b * bs] != 2 && (best.i < 0 || moe_beats(bscore[b], b, best.v, best.i)))
                best = {bscore[b], b};
        best = warp_best(best);
        for (int e = lane; e < bs; e += 32) allowed[best.i * bs + e] = 2;
        __syncwarp();
    }
    for (int e = lane; e < E; e += 32) allowed[e] = allowed[e] == 2;
    __syncwarp();
}

/* One token, one warp. Writes idx/weights and adds the token's statistics to the block's shared
 * accumulators (bcnt, bprob). */
__device__ static void gate_token(const float *l, const float *select_bias, const moe_gate_cfg &cfg,
                                  int t, int lane, float *s, float *sel, float *bscore,
                                  unsigned char *allowed, int32_t *topk_idx, float *topk_w,
                                  int *bcnt, float *bprob) {
    const int E = cfg.num_experts, K = cfg.top_k;
    if (cfg.score == MOE_SCORE_SOFTMAX) {
        float mx = -INFINITY;
        for (int e = lane; e < E; e += 32) mx = fmaxf(mx, l[e]);
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int e = lane; e < E; e += 32) {
            s[e] = expf(l[e] - mx);
            sum += s[e];
        }
        sum = warp_sum(sum);
        for (int e = lane; e < E; e += 32) s[e] = s[e] / sum;
    } else {
        for (int e = lane; e < E; e += 32) s[e] = 1.0f / (1.0f + expf(-l[e]));
    }
    for (int e = lane; e < E; e += 32) {
        sel[e] = select_bias ? s[e] + select_bias[e] : s[e];
        allowed[e] = 1;
    }
    __syncwarp();
    if (cfg.n_groups > 1) {
        int gs = E / cfg.n_groups;
        mask_blocks(sel, E, cfg.n_groups, cfg.topk_groups, gs < 2 ? gs : 2, bscore, allowed, lane);
    } else if (cfg.n_nodes > 1) {
        int ns = E / cfg.n_nodes;
        int topn = (K + cfg.topk_nodes - 1) / cfg.topk_nodes;
        mask_blocks(sel, E, cfg.n_nodes, cfg.topk_nodes, topn < ns ? topn : ns, bscore, allowed, lane);
    }
    int idx[MOE_MAX_TOP_K];
    for (int k = 0; k < K; k++) {
        Best best = {0.0f, -1};
        for (int e = lane; e < E; e += 32)
            if (allowed[e] && (best.i < 0 || moe_beats(sel[e], e, best.v, best.i))) best = {sel[e], e};
        best = warp_best(best);
        idx[k] = best.i;
        if (lane == 0) allowed[best.i] = 0;
        __syncwarp();
    }
    if (lane == 0) { /* same operations, same order as the CPU */
        float w[MOE_MAX_TOP_K];
        for (int k = 0; k < K; k++) w[k] = s[idx[k]];
        if (cfg.norm_topk) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += w[k];
            if (sum > 0.0f)
                for (int k = 0; k < K; k++) w[k] = w[k] / sum;
        }
        for (int k = 0; k < K; k++) {
            topk_idx[(size_t)t * K + k] = idx[k];
            topk_w[(size_t)t * K + k] = w[k] * cfg.routed_scaling;
            atomicAdd(&bcnt[idx[k]], 1);
        }
    }
    float norm = 1.0f;
    if (cfg.score == MOE_SCORE_SIGMOID) {
        float sum = 0.0f;
        for (int e = lane; e < E; e += 32) sum += s[e];
        norm = warp_sum(sum);
    }
    for (int e = lane; e < E; e += 32)
        atomicAdd(&bprob[e], cfg.score == MOE_SCORE_SIGMOID ? s[e] / norm : s[e]);
    __syncwarp(); /* s/sel/allowed are reused by this warp's next token */
}

/* Warps stride over tokens; the load statistics are reduced in shared memory per block and added
 * to global memory once per block and expert (T*E global float atomics would serialise on E
 * addresses). */
__global__ void topk_gating_kernel(const float *logits, const float *select_bias, moe_gate_cfg cfg,
                                   int T, int32_t *topk_idx, float *topk_w, int32_t *expert_counts,
                                   float *prob_sum) {
    extern __shared__ unsigned char smem[];
    const int E = cfg.num_experts;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    /* block: bprob[E] bcnt[E]; per warp: s[E] sel[E] bscore[E]; then per warp allowed[E] */
    float *bprob = reinterpret_cast<float *>(smem);
    int *bcnt = reinterpret_cast<int *>(bprob + E);
    float *s = reinterpret_cast<float *>(bcnt + E) + (size_t)warp * 3 * E;
    float *sel = s + E, *bscore = s + 2 * E;
    unsigned char *allowed = smem + (size_t)(2 + 3 * kWarpsPerBlock) * E * 4 + (size_t)warp * E;
    for (int e = threadIdx.x; e < E; e += blockDim.x) bprob[e] = 0.0f, bcnt[e] = 0;
    __syncthreads();
    for (int t = blockIdx.x * kWarpsPerBlock + warp; t < T; t += gridDim.x * kWarpsPerBlock)
        gate_token(logits + (size_t)t * E, select_bias, cfg, t, lane, s, sel, bscore, allowed,
                   topk_idx, topk_w, bcnt, bprob);
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        if (expert_counts && bcnt[e]) atomicAdd(&expert_counts[e], bcnt[e]);
        if (prob_sum) atomicAdd(&prob_sum[e], bprob[e]);
    }
}

extern "C" int moe_topk_gating_gpu(const float *logits, const float *select_bias,
                                   const moe_gate_cfg *cfg, int T, int32_t *topk_idx, float *topk_w,
                                   int32_t *expert_counts, float *prob_sum, void *stream) {
    if (moe_gate_cfg_check(cfg, nullptr, 0) != MOE_OK || T < 0) return MOE_EINVAL;
    cudaStream_t st = moe_stream(stream);
    const int E = cfg->num_experts;
    if (expert_counts) MOE_CUDA_TRY(cudaMemsetAsync(expert_counts, 0, (size_t)E * sizeof(int32_t), st));
    if (prob_sum) MOE_CUDA_TRY(cudaMemsetAsync(prob_sum, 0, (size_t)E * sizeof(float), st));
    if (T == 0) return MOE_OK;
    const size_t smem = (size_t)E * ((2 + 3 * kWarpsPerBlock) * 4 + kWarpsPerBlock);
    if (smem > 48 * 1024)
        MOE_CUDA_TRY(cudaFuncSetAttribute(topk_gating_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    /* enough blocks to fill the GPU several times over; each warp then handles several tokens */
    int device = 0, sms = 0;
    MOE_CUDA_TRY(cudaGetDevice(&device));
    MOE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    unsigned blocks = moe_blocks(T, kWarpsPerBlock);
    if (blocks > (unsigned)sms * 8u) blocks = (unsigned)sms * 8u;
    topk_gating_kernel<<<blocks, kWarpsPerBlock * 32, smem, st>>>(
        logits, select_bias, *cfg, T, topk_idx, topk_w, expert_counts, prob_sum);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
