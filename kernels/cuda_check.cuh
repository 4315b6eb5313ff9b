/* cuda_check.cuh — error handling shared by the .cu files (internal; not part of the C API).
 * Every GPU entry point returns a moe_status: an API failure or a launch error (cudaGetLastError
 * after each launch) is reported on stderr with file:line and mapped to MOE_ECUDA / MOE_ECUBLAS /
 * MOE_ENCCL. Nothing aborts: the caller decides (simcal skips a shape, a test fails). */
#ifndef MOESIM_KERNELS_CUDA_CHECK_CUH
#define MOESIM_KERNELS_CUDA_CHECK_CUH

#include <cstdio>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/moe_kernels.h"

#define MOE_CUDA_TRY(call)                                                                    \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                \
                         cudaGetErrorString(e_));                                             \
            return MOE_ECUDA;                                                                 \
        }                                                                                     \
    } while (0)

#define MOE_CUBLAS_TRY(call)                                                                  \
    do {                                                                                      \
        cublasStatus_t s_ = (call);                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                    \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                \
                         cublasGetStatusString(s_));                                          \
            return MOE_ECUBLAS;                                                               \
        }                                                                                     \
    } while (0)

/* After every <<<...>>> launch: configuration errors surface here, not at the next sync. */
#define MOE_LAUNCH_CHECK() MOE_CUDA_TRY(cudaGetLastError())

static inline cudaStream_t moe_stream(void *s) { return static_cast<cudaStream_t>(s); }

static inline unsigned moe_blocks(long long n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}

/* The selection order of kernels/gating_cpu.c, on the device: larger wins, equal values -> lower
 * index wins, NaN never beats a number. */
__host__ __device__ static inline bool moe_beats(float a, int ia, float b, int ib) {
    bool na = a != a, nb = b != b;
    if (na || nb) return (na && nb) ? ia < ib : nb;
    return a > b || (a == b && ia < ib);
}

#endif /* MOESIM_KERNELS_CUDA_CHECK_CUH */
