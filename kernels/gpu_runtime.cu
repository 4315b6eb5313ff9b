/* gpu_runtime.cu — device detection, memory/stream/handle helpers and provenance, so that plain-C
 * callers (tests, simcal, simlive) use the GPU without CUDA headers. */
#include <cstring>

#include <nccl.h>

#include "kernels/cuda_check.cuh"

extern "C" int moe_gpu_count(void) {
    /* Without a GPU (or driver) cudaGetDeviceCount fails -- error 35, insufficient driver -- and
     * leaves the count unset: initialise it, and clear the sticky error for later calls. */
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int moe_gpu_set_device(int device) {
    MOE_CUDA_TRY(cudaSetDevice(device));
    return MOE_OK;
}

extern "C" int moe_gpu_malloc(void **dptr, size_t bytes) {
    if (!dptr) return MOE_EINVAL;
    *dptr = nullptr;
    if (cudaMalloc(dptr, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        *dptr = nullptr;
        return MOE_ENOMEM;
    }
    return MOE_OK;
}

extern "C" int moe_gpu_free(void *dptr) {
    MOE_CUDA_TRY(cudaFree(dptr));
    return MOE_OK;
}

extern "C" int moe_gpu_memcpy_h2d(void *dst, const void *src, size_t bytes) {
    MOE_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return MOE_OK;
}

extern "C" int moe_gpu_memcpy_d2h(void *dst, const void *src, size_t bytes) {
    MOE_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return MOE_OK;
}

extern "C" int moe_gpu_memset(void *dptr, int value, size_t bytes) {
    MOE_CUDA_TRY(cudaMemset(dptr, value, bytes));
    return MOE_OK;
}

extern "C" int moe_gpu_stream_create(void **stream) {
    if (!stream) return MOE_EINVAL;
    cudaStream_t s = nullptr;
    MOE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = s;
    return MOE_OK;
}

extern "C" int moe_gpu_stream_destroy(void *stream) {
    MOE_CUDA_TRY(cudaStreamDestroy(moe_stream(stream)));
    return MOE_OK;
}

extern "C" int moe_gpu_stream_sync(void *stream) {
    MOE_CUDA_TRY(cudaStreamSynchronize(moe_stream(stream)));
    return MOE_OK;
}

extern "C" int moe_cublas_create(void **handle) {
    if (!handle) return MOE_EINVAL;
    cublasHandle_t h = nullptr;
    MOE_CUBLAS_TRY(cublasCreate(&h));
    *handle = h;
    return MOE_OK;
}

extern "C" int moe_cublas_destroy(void *handle) {
    MOE_CUBLAS_TRY(cublasDestroy(static_cast<cublasHandle_t>(handle)));
    return MOE_OK;
}

extern "C" int moe_gpu_get_info(int device, moe_gpu_info *info) {
    if (!info) return MOE_EINVAL;
    std::memset(info, 0, sizeof *info);
    cudaDeviceProp p;
    MOE_CUDA_TRY(cudaGetDeviceProperties(&p, device));
    std::snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->total_mem_bytes = p.totalGlobalMem;
    /* clock fields left cudaDeviceProp in CUDA 13: ask the attributes */
    MOE_CUDA_TRY(cudaDeviceGetAttribute(&info->sm_clock_khz, cudaDevAttrClockRate, device));
    MOE_CUDA_TRY(cudaDeviceGetAttribute(&info->mem_clock_khz, cudaDevAttrMemoryClockRate, device));
    MOE_CUDA_TRY(cudaDeviceGetAttribute(&info->mem_bus_width_bits, cudaDevAttrGlobalMemoryBusWidth,
                                        device));
    MOE_CUDA_TRY(cudaDriverGetVersion(&info->driver_version));
    MOE_CUDA_TRY(cudaRuntimeGetVersion(&info->runtime_version));
    int maj = 0, min = 0, pat = 0;
    MOE_CUBLAS_TRY(cublasGetProperty(MAJOR_VERSION, &maj));
    MOE_CUBLAS_TRY(cublasGetProperty(MINOR_VERSION, &min));
    MOE_CUBLAS_TRY(cublasGetProperty(PATCH_LEVEL, &pat));
    info->cublas_version = maj * 10000 + min * 100 + pat;
    if (ncclGetVersion(&info->nccl_version) != ncclSuccess) info->nccl_version = 0;
    return MOE_OK;
}
