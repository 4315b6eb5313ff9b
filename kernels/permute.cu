/* permute.cu — gather token rows into the send buffer: send[row] = x[row_token[row]].
 * CPU reference: kernels/permute_cpu.c. Pure data movement, so it is judged by HBM bandwidth:
 * one block per row, 16-byte vector copies when the row size and both pointers allow it.
 * The row count stays on the device (the layout's totals[0]): no host sync between layout and
 * permute; blocks past it exit at once. */
#include "kernels/cuda_check.cuh"

namespace {

__global__ void permute_vec_kernel(const uint4 *x, const int32_t *row_token, const int32_t *n_rows,
                                   int vecs_per_row, uint4 *send) {
    const int row = blockIdx.x;
    if (row >= *n_rows) return;
    const uint4 *src = x + (size_t)row_token[row] * vecs_per_row;
    uint4 *dst = send + (size_t)row * vecs_per_row;
    for (int i = threadIdx.x; i < vecs_per_row; i += blockDim.x) dst[i] = src[i];
}

__global__ void permute_scalar_kernel(const moe_bf16 *x, const int32_t *row_token,
                                      const int32_t *n_rows, int H, moe_bf16 *send) {
    const int row = blockIdx.x;
    if (row >= *n_rows) return;
    const moe_bf16 *src = x + (size_t)row_token[row] * H;
    moe_bf16 *dst = send + (size_t)row * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) dst[i] = src[i];
}

} // namespace

extern "C" int moe_permute_gpu(const moe_bf16 *x, const int32_t *row_token, const int32_t *n_rows_dev,
                               int max_rows, int H, moe_bf16 *send, void *stream) {
    if (max_rows < 0 || H < 1 || !n_rows_dev) return MOE_EINVAL;
    if (max_rows == 0) return MOE_OK;
    cudaStream_t st = moe_stream(stream);
    const size_t row_bytes = (size_t)H * sizeof(moe_bf16);
    const bool vec = row_bytes % sizeof(uint4) == 0 && (uintptr_t)x % sizeof(uint4) == 0 &&
                     (uintptr_t)send % sizeof(uint4) == 0;
    if (vec) {
        int vpr = (int)(row_bytes / sizeof(uint4));
        int threads = vpr < 256 ? ((vpr + 31) / 32) * 32 : 256;
        permute_vec_kernel<<<max_rows, threads, 0, st>>>(reinterpret_cast<const uint4 *>(x), row_token,
                                                        n_rows_dev, vpr, reinterpret_cast<uint4 *>(send));
    } else {
        permute_scalar_kernel<<<max_rows, 256, 0, st>>>(x, row_token, n_rows_dev, H, send);
    }
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
