/* dispatch_layout.cu — the dispatch plan on the GPU, bitwise equal to kernels/dispatch_layout_cpu.c.
 *
 * The CPU does a stable counting sort by expert. Here: a histogram of the demand (integer atomics:
 * deterministic), one small block for the scans and the capacity, then CUB's stable radix sort of
 * (expert id, assignment index) pairs -- stability keeps token order inside an expert, so the
 * position of an assignment in the sorted list minus its expert's demand offset is its rank among
 * that expert's tokens; ranks below the capacity are kept. No step depends on thread timing.
 * Expert ids must be in [0, E) (the gating kernel guarantees it; the CPU version checks). */
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void histogram_kernel(const int32_t *idx, int64_t n, int32_t *demand) {
    int64_t a = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (a < n) atomicAdd(&demand[idx[a]], 1);
}

/* One thread: E <= 1024 and R <= E, a serial scan is microseconds and obviously right. */
__global__ void scan_kernel(const int32_t *demand, int E, int R, int capacity, int32_t *demand_off,
                            int32_t *expert_counts, int32_t *expert_offsets, int32_t *rank_counts,
                            int32_t *rank_offsets, int32_t *totals) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    int32_t run_d = 0, run_k = 0, dropped = 0;
    for (int e = 0; e < E; e++) {
        int32_t kept = capacity >= 0 && demand[e] > capacity ? capacity : demand[e];
        demand_off[e] = run_d;
        expert_offsets[e] = run_k;
        expert_counts[e] = kept;
        run_d += demand[e];
        run_k += kept;
        dropped += demand[e] - kept;
    }
    const int EL = E / R;
    int32_t run_r = 0;
    for (int r = 0; r < R; r++) {
        int32_t c = 0;
        for (int j = 0; j < EL; j++) c += expert_counts[r * EL + j];
        rank_counts[r] = c;
        rank_offsets[r] = run_r;
        run_r += c;
    }
    totals[0] = run_k;
    totals[1] = dropped;
}

__global__ void iota_kernel(int32_t *v, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = (int32_t)i;
}

__global__ void place_kernel(const int32_t *sorted_e, const int32_t *sorted_a, int64_t n, int K,
                             const int32_t *demand_off, const int32_t *expert_counts,
                             const int32_t *expert_offsets, int32_t *slot, int32_t *row_token) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    int e = sorted_e[p], a = sorted_a[p];
    int32_t rank = (int32_t)p - demand_off[e];
    if (rank < expert_counts[e]) {
        int32_t row = expert_offsets[e] + rank;
        slot[a] = row;
        row_token[row] = a / K;
    } else {
        slot[a] = -1;
    }
}

__global__ void clear_tail_kernel(int32_t *row_token, int64_t n, const int32_t *totals) {
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && row >= totals[0]) row_token[row] = -1;
}

size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

int bits_for(int E) {
    int bits = 1;
    while ((1 << bits) < E) bits++;
    return bits;
}

} // namespace

extern "C" int moe_dispatch_layout_gpu(const int32_t *topk_idx, int T, int K, int E, int R,
                                       int capacity, const moe_dispatch_layout *out, void *work,
                                       size_t *work_bytes, void *stream) {
    if (T < 0 || K < 1 || E < 1 || E > MOE_MAX_EXPERTS || R < 1 || E % R != 0 || !work_bytes)
        return MOE_EINVAL;
    const int64_t n = (int64_t)T * K;
    if (n > INT32_MAX) return MOE_EINVAL;
    cudaStream_t st = moe_stream(stream);
    size_t cub_bytes = 0;
    MOE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, (const int32_t *)nullptr,
                                                 (int32_t *)nullptr, (const int32_t *)nullptr,
                                                 (int32_t *)nullptr, (int)n, 0, bits_for(E), st));
    /* scratch: demand[E] demand_off[E] iota[n] sorted_e[n] sorted_a[n] cub temp */
    const size_t e_bytes = align256((size_t)E * sizeof(int32_t));
    const size_t n_bytes = align256((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    const size_t need = 2 * e_bytes + 3 * n_bytes + align256(cub_bytes);
    if (!work) {
        *work_bytes = need;
        return MOE_OK;
    }
    if (*work_bytes < need || !out) return MOE_EINVAL;
    char *w = static_cast<char *>(work);
    int32_t *demand = reinterpret_cast<int32_t *>(w);
    int32_t *demand_off = reinterpret_cast<int32_t *>(w + e_bytes);
    int32_t *iota = reinterpret_cast<int32_t *>(w + 2 * e_bytes);
    int32_t *sorted_e = reinterpret_cast<int32_t *>(w + 2 * e_bytes + n_bytes);
    int32_t *sorted_a = reinterpret_cast<int32_t *>(w + 2 * e_bytes + 2 * n_bytes);
    void *cub_tmp = w + 2 * e_bytes + 3 * n_bytes;

    const int threads = 256;
    MOE_CUDA_TRY(cudaMemsetAsync(demand, 0, (size_t)E * sizeof(int32_t), st));
    if (n > 0) {
        histogram_kernel<<<moe_blocks(n, threads), threads, 0, st>>>(topk_idx, n, demand);
        MOE_LAUNCH_CHECK();
    }
    scan_kernel<<<1, 32, 0, st>>>(demand, E, R, capacity, demand_off, out->expert_counts,
                                  out->expert_offsets, out->rank_counts, out->rank_offsets,
                                  out->totals);
    MOE_LAUNCH_CHECK();
    if (n == 0) return MOE_OK;
    iota_kernel<<<moe_blocks(n, threads), threads, 0, st>>>(iota, n);
    MOE_LAUNCH_CHECK();
    MOE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(cub_tmp, cub_bytes, topk_idx, sorted_e, iota,
                                                 sorted_a, (int)n, 0, bits_for(E), st));
    place_kernel<<<moe_blocks(n, threads), threads, 0, st>>>(sorted_e, sorted_a, n, K, demand_off,
                                                            out->expert_counts, out->expert_offsets,
                                                            out->slot, out->row_token);
    MOE_LAUNCH_CHECK();
    clear_tail_kernel<<<moe_blocks(n, threads), threads, 0, st>>>(out->row_token, n, out->totals);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}
