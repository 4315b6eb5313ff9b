/* expert_ffn.cu — grouped expert FFN (SwiGLU) over variable row counts per segment.
 * CPU reference: kernels/expert_ffn_cpu.c; semantics and rounding points: kernels/moe_kernels.h §5.
 *
 *   1. one cublasGemmGroupedBatchedEx call with 2 problems per non-empty segment:
 *        h1 = x W1[e], h3 = x W3[e]          (BF16 in, BF16 out, CUBLAS_COMPUTE_32F)
 *   2. a = bf16(silu(h1) * h3)              (elementwise, FP32 math, written over h1)
 *   3. one cublasGemmGroupedBatchedEx call: y = a W2[e]
 * Every problem is its own group (group_size 1): segments have different m. Row-major
 * C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T, so each problem is (m = N, n = M, k = K)
 * with the weight as cuBLAS's A operand and no transposes (weights are stored [in, out]).
 * cublasGemmGroupedBatchedEx exists in this toolkit (CUDA 13, cuBLAS 13); if the library reports
 * CUBLAS_STATUS_NOT_SUPPORTED for the configuration, the same problems run as a loop of
 * cublasGemmEx (said once on stderr). */
#include <cstdlib>
#include <vector>

#include <cuda_bf16.h>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void swiglu_kernel(__nv_bfloat16 *h1, const __nv_bfloat16 *h3, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = __bfloat162float(h1[i]), g = __bfloat162float(h3[i]);
    h1[i] = __float2bfloat16_rn((v / (1.0f + expf(-v))) * g); /* same expression as the CPU */
}

size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

/* Problems of one grouped call, host side; pointer arrays are copied to the device workspace. */
struct Problems {
    std::vector<cublasOperation_t> ta, tb;
    std::vector<int> m, n, k, lda, ldb, ldc, group_size;
    std::vector<float> alpha, beta;
    std::vector<const void *> A, B;
    std::vector<void *> C;
    void add(int m_, int n_, int k_, const void *a, int lda_, const void *b, int ldb_, void *c,
             int ldc_) {
        ta.push_back(CUBLAS_OP_N), tb.push_back(CUBLAS_OP_N);
        m.push_back(m_), n.push_back(n_), k.push_back(k_);
        lda.push_back(lda_), ldb.push_back(ldb_), ldc.push_back(ldc_);
        group_size.push_back(1), alpha.push_back(1.0f), beta.push_back(0.0f);
        A.push_back(a), B.push_back(b), C.push_back(c);
    }
    int count() const { return (int)m.size(); }
};

bool g_grouped_unsupported = false;

/* dptrs: device space for 3 * count pointers. */
int run_problems(cublasHandle_t h, Problems &p, void **dptrs, cudaStream_t st) {
    const int g = p.count();
    if (g == 0) return MOE_OK;
    if (!g_grouped_unsupported) {
        std::vector<const void *> host(3 * (size_t)g);
        for (int i = 0; i < g; i++) host[i] = p.A[i], host[g + i] = p.B[i], host[2 * g + i] = p.C[i];
        /* pageable source: the copy is staged before cudaMemcpyAsync returns, so `host` may die */
        MOE_CUDA_TRY(cudaMemcpyAsync(dptrs, host.data(), host.size() * sizeof(void *),
                                     cudaMemcpyHostToDevice, st));
        const void *const *dA = reinterpret_cast<const void *const *>(dptrs);
        const void *const *dB = dA + g;
        void *const *dC = reinterpret_cast<void *const *>(dptrs + 2 * (size_t)g);
        cublasStatus_t s = cublasGemmGroupedBatchedEx(
            h, p.ta.data(), p.tb.data(), p.m.data(), p.n.data(), p.k.data(), p.alpha.data(), dA,
            CUDA_R_16BF, p.lda.data(), dB, CUDA_R_16BF, p.ldb.data(), p.beta.data(), dC, CUDA_R_16BF,
            p.ldc.data(), g, p.group_size.data(), CUBLAS_COMPUTE_32F);
        if (s == CUBLAS_STATUS_SUCCESS) return MOE_OK;
        if (s != CUBLAS_STATUS_NOT_SUPPORTED) MOE_CUBLAS_TRY(s);
        g_grouped_unsupported = true;
        std::fprintf(stderr, "moesim: cublasGemmGroupedBatchedEx not supported here (BF16/FP32); "
                             "falling back to a loop of cublasGemmEx\n");
    }
    for (int i = 0; i < g; i++)
        MOE_CUBLAS_TRY(cublasGemmEx(h, p.ta[i], p.tb[i], p.m[i], p.n[i], p.k[i], &p.alpha[i], p.A[i],
                                    CUDA_R_16BF, p.lda[i], p.B[i], CUDA_R_16BF, p.ldb[i], &p.beta[i],
                                    p.C[i], CUDA_R_16BF, p.ldc[i], CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
    return MOE_OK;
}

} // namespace

extern "C" size_t moe_expert_ffn_gpu_work_bytes(int64_t total_rows, int n_seg, int F) {
    /* h1 and h3 [rows, F] BF16, then 3 pointer arrays for 2 problems per segment */
    size_t act = align256((size_t)(total_rows > 0 ? total_rows : 1) * (size_t)F * sizeof(moe_bf16));
    return 2 * act + align256(3 * 2 * (size_t)(n_seg > 0 ? n_seg : 1) * sizeof(void *));
}

extern "C" int moe_expert_ffn_gpu(void *cublas, const moe_bf16 *x_rows, int n_seg,
                                  const int32_t *seg_rows, const int32_t *seg_expert,
                                  const moe_bf16 *w1, const moe_bf16 *w3, const moe_bf16 *w2, int H,
                                  int F, moe_bf16 *y_rows, void *work, void *stream) {
    if (!cublas || n_seg < 0 || H < 1 || F < 1 || !work || (n_seg > 0 && (!seg_rows || !seg_expert)))
        return MOE_EINVAL;
    int64_t total = 0;
    for (int s = 0; s < n_seg; s++) {
        if (seg_rows[s] < 0 || seg_expert[s] < 0) return MOE_EINVAL;
        total += seg_rows[s];
    }
    if (total == 0) return MOE_OK;
    cublasHandle_t h = static_cast<cublasHandle_t>(cublas);
    cudaStream_t st = moe_stream(stream);
    MOE_CUBLAS_TRY(cublasSetStream(h, st));
    const size_t act = align256((size_t)total * F * sizeof(moe_bf16));
    moe_bf16 *h1 = static_cast<moe_bf16 *>(work);
    moe_bf16 *h3 = reinterpret_cast<moe_bf16 *>(static_cast<char *>(work) + act);
    void **dptrs = reinterpret_cast<void **>(static_cast<char *>(work) + 2 * act);
    const size_t wsz = (size_t)H * F;

    Problems up, down;
    int64_t row = 0;
    for (int s = 0; s < n_seg; s++) {
        const int m = seg_rows[s];
        if (m == 0) continue;
        const size_t e = (size_t)seg_expert[s];
        /* row-major [m,H] x [H,F] -> [m,F]:  cuBLAS (m=F, n=m, k=H), A = W (ld F), B = x (ld H) */
        up.add(F, m, H, w1 + e * wsz, F, x_rows + row * H, H, h1 + row * F, F);
        up.add(F, m, H, w3 + e * wsz, F, x_rows + row * H, H, h3 + row * F, F);
        /* row-major [m,F] x [F,H] -> [m,H]:  cuBLAS (m=H, n=m, k=F), A = W2 (ld H), B = a (ld F) */
        down.add(H, m, F, w2 + e * wsz, H, h1 + row * F, F, y_rows + row * H, H);
        row += m;
    }
    int rc = run_problems(h, up, dptrs, st);
    if (rc != MOE_OK) return rc;
    const int64_t n = total * F;
    swiglu_kernel<<<moe_blocks(n, 256), 256, 0, st>>>(reinterpret_cast<__nv_bfloat16 *>(h1),
                                                      reinterpret_cast<const __nv_bfloat16 *>(h3), n);
    MOE_LAUNCH_CHECK();
    /* the second call may reuse the pointer space: the first call's pointers were consumed in
     * stream order before this copy runs */
    return run_problems(h, down, dptrs, st);
}
