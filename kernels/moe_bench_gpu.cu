/* moe_bench_gpu.cu — the GPU timing API for `simcal bench` (kernels/moe_kernels.h, timing API).
 * create() builds one rank's layer on `device` with the same deterministic inputs as the CPU bench
 * and runs router -> gating -> layout -> permute once, so every kernel has real inputs; time()
 * launches one kernel `warmup` times, then `iters` times between two CUDA events on the stream,
 * and reports milliseconds per launch.
 *  - expert FFN: the send buffer stands in for the received rows. Under uniform routing a rank
 *    receives about T*K rows in R*E_local = E segments of about T*K/E rows -- exactly the shape of
 *    its own send buffer's E expert segments, so the GEMM workload is the one of a real layer.
 *  - all-to-all: `ranks` devices of this process (ncclCommInitAll), one host thread per device
 *    (the hierarchical exchange has two dependent NCCL groups, which a single thread driving all
 *    ranks inside one outer group could not express). Uniform counts: T*K rows per rank split
 *    evenly over destinations. Time = the slowest rank's event time. */
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "kernels/cuda_check.cuh"

namespace {

struct RankA2A {
    void *comm = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    void *send = nullptr, *recv = nullptr, *staging = nullptr;
    std::vector<int32_t> sc, so, rc, ro, node_sc; /* this rank's rows; its node's [G][R] block */
};

} // namespace

struct moe_bench_gpu {
    moe_bench_shape s{};
    moe_gate_cfg cfg{};
    int device = 0, capacity = -1, EL = 1;
    cublasHandle_t cublas = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    moe_bf16 *x = nullptr, *w_gate = nullptr, *w1 = nullptr, *w3 = nullptr, *w2 = nullptr;
    moe_bf16 *send = nullptr, *y = nullptr, *out = nullptr;
    float *logits = nullptr, *w = nullptr, *prob_sum = nullptr;
    int32_t *idx = nullptr, *gate_counts = nullptr, *lay_mem = nullptr;
    moe_dispatch_layout lay{};
    void *lay_work = nullptr, *ffn_work = nullptr;
    size_t lay_work_bytes = 0;
    std::vector<int32_t> seg_rows, seg_expert;
    std::vector<RankA2A> a2a; /* created on first a2a timing */
};

namespace {

int upload_random(moe_bf16 **d, size_t n, double scale, uint64_t *st) {
    std::vector<moe_bf16> h(n ? n : 1);
    moe_bench_fill_bf16(h.data(), n, scale, st);
    MOE_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(d), h.size() * sizeof(moe_bf16)));
    MOE_CUDA_TRY(cudaMemcpy(*d, h.data(), n * sizeof(moe_bf16), cudaMemcpyHostToDevice));
    return MOE_OK;
}

template <typename T> int dalloc(T **p, size_t n) {
    MOE_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(p), (n ? n : 1) * sizeof(T)));
    return MOE_OK;
}

int setup(moe_bench_gpu *b) {
    const moe_bench_shape &s = b->s;
    const int T = s.tokens, H = s.hidden, F = s.ffn_hidden, E = s.experts, K = s.top_k, R = s.ranks;
    const size_t A = (size_t)T * K;
    uint64_t st = s.seed;
    MOE_CUDA_TRY(cudaSetDevice(b->device));
    MOE_CUBLAS_TRY(cublasCreate(&b->cublas));
    MOE_CUDA_TRY(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    MOE_CUDA_TRY(cudaEventCreate(&b->ev0));
    MOE_CUDA_TRY(cudaEventCreate(&b->ev1));
    int rc;
    /* same draw order as the CPU bench: w_gate, w1, w3, w2 (rank 0's experts), then x */
    if ((rc = upload_random(&b->w_gate, (size_t)H * E, 1.0 / sqrt((double)H), &st)) ||
        (rc = upload_random(&b->w1, (size_t)b->EL * H * F, 1.0 / sqrt((double)H), &st)) ||
        (rc = upload_random(&b->w3, (size_t)b->EL * H * F, 1.0 / sqrt((double)H), &st)) ||
        (rc = upload_random(&b->w2, (size_t)b->EL * F * H, 1.0 / sqrt((double)F), &st)) ||
        (rc = upload_random(&b->x, (size_t)T * H, 1.0, &st)))
        return rc;
    if ((rc = dalloc(&b->send, A * H)) || (rc = dalloc(&b->y, A * H)) ||
        (rc = dalloc(&b->out, (size_t)T * H)) || (rc = dalloc(&b->logits, (size_t)T * E)) ||
        (rc = dalloc(&b->w, A)) || (rc = dalloc(&b->prob_sum, (size_t)E)) ||
        (rc = dalloc(&b->idx, A)) || (rc = dalloc(&b->gate_counts, (size_t)E)) ||
        (rc = dalloc(&b->lay_mem, 2 * (size_t)E + 2 * (size_t)R + 2 * A + 2)))
        return rc;
    int32_t *m = b->lay_mem;
    b->lay = {m, m + E, m + 2 * E, m + 2 * E + R, m + 2 * E + 2 * R, m + 2 * E + 2 * R + A,
              m + 2 * E + 2 * R + 2 * A};
    if ((rc = moe_dispatch_layout_gpu(b->idx, T, K, E, R, b->capacity, &b->lay, nullptr,
                                      &b->lay_work_bytes, b->stream)))
        return rc;
    MOE_CUDA_TRY(cudaMalloc(&b->lay_work, b->lay_work_bytes));
    MOE_CUDA_TRY(cudaMalloc(&b->ffn_work, moe_expert_ffn_gpu_work_bytes((int64_t)A, E, F)));
    /* one layer to give every kernel its real inputs */
    if ((rc = moe_router_logits_gpu(b->cublas, b->x, b->w_gate, b->logits, T, H, E, b->stream)) ||
        (rc = moe_topk_gating_gpu(b->logits, nullptr, &b->cfg, T, b->idx, b->w, b->gate_counts,
                                  b->prob_sum, b->stream)) ||
        (rc = moe_dispatch_layout_gpu(b->idx, T, K, E, R, b->capacity, &b->lay, b->lay_work,
                                      &b->lay_work_bytes, b->stream)) ||
        (rc = moe_permute_gpu(b->x, b->lay.row_token, b->lay.totals, (int)A, H, b->send, b->stream)))
        return rc;
    b->seg_rows.assign((size_t)E, 0);
    b->seg_expert.resize((size_t)E);
    MOE_CUDA_TRY(cudaMemcpyAsync(b->seg_rows.data(), b->lay.expert_counts, (size_t)E * sizeof(int32_t),
                                 cudaMemcpyDeviceToHost, b->stream));
    MOE_CUDA_TRY(cudaStreamSynchronize(b->stream));
    for (int e = 0; e < E; e++) b->seg_expert[(size_t)e] = e % b->EL;
    return MOE_OK;
}

int a2a_setup(moe_bench_gpu *b) {
    const moe_bench_shape &s = b->s;
    const int R = s.ranks, G = s.gpus_per_node;
    if (moe_gpu_count() < R) return MOE_ENOTSUP;
    const size_t row_bytes = (size_t)s.hidden * sizeof(moe_bf16);
    const int64_t A = (int64_t)s.tokens * s.top_k;
    std::vector<RankA2A> ranks((size_t)R);
    std::vector<void *> comms((size_t)R);
    int rc = moe_nccl_comms_init_all(R, comms.data());
    if (rc) return rc;
    /* uniform counts: A rows per rank, split evenly (the first A % R destinations get one more) */
    std::vector<int32_t> sc((size_t)R * R);
    for (int src = 0; src < R; src++)
        for (int d = 0; d < R; d++) sc[(size_t)src * R + d] = (int32_t)(A / R + (d < A % R));
    for (int r = 0; r < R; r++) {
        RankA2A &k = ranks[(size_t)r];
        k.comm = comms[(size_t)r];
        k.sc.assign(sc.begin() + (size_t)r * R, sc.begin() + (size_t)(r + 1) * R);
        k.rc.resize((size_t)R), k.so.resize((size_t)R), k.ro.resize((size_t)R);
        for (int src = 0; src < R; src++) k.rc[(size_t)src] = sc[(size_t)src * R + r];
        int64_t out_rows = moe_exclusive_scan_i32(k.sc.data(), R, k.so.data());
        int64_t in_rows = moe_exclusive_scan_i32(k.rc.data(), R, k.ro.data());
        const int n = r / G;
        k.node_sc.assign(sc.begin() + (size_t)n * G * R, sc.begin() + (size_t)(n + 1) * G * R);
        int64_t st_rows = moe_a2a_hier_staging_rows(k.node_sc.data(), R, G, r % G);
        MOE_CUDA_TRY(cudaSetDevice(r));
        MOE_CUDA_TRY(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
        MOE_CUDA_TRY(cudaEventCreate(&k.start));
        MOE_CUDA_TRY(cudaEventCreate(&k.stop));
        MOE_CUDA_TRY(cudaMalloc(&k.send, (size_t)std::max<int64_t>(out_rows, 1) * row_bytes));
        MOE_CUDA_TRY(cudaMalloc(&k.recv, (size_t)std::max<int64_t>(in_rows, 1) * row_bytes));
        MOE_CUDA_TRY(cudaMalloc(&k.staging, (size_t)std::max<int64_t>(st_rows, 1) * row_bytes));
        MOE_CUDA_TRY(cudaMemset(k.send, 0, (size_t)std::max<int64_t>(out_rows, 1) * row_bytes));
    }
    b->a2a.swap(ranks);
    MOE_CUDA_TRY(cudaSetDevice(b->device));
    return MOE_OK;
}

int a2a_once(const moe_bench_gpu *b, const RankA2A &k, bool hier) {
    const size_t row_bytes = (size_t)b->s.hidden * sizeof(moe_bf16);
    if (hier)
        return moe_a2a_hier_nccl(k.send, k.sc.data(), k.so.data(), k.recv, k.rc.data(), k.ro.data(),
                                 k.node_sc.data(), b->s.gpus_per_node, k.staging, row_bytes, k.comm,
                                 k.stream);
    return moe_a2a_nccl(k.send, k.sc.data(), k.so.data(), k.recv, k.rc.data(), k.ro.data(), row_bytes,
                        k.comm, k.stream);
}

int a2a_time(moe_bench_gpu *b, bool hier, int warmup, int iters, float *ms) {
    if (b->a2a.empty()) {
        int rc = a2a_setup(b);
        if (rc) return rc;
    }
    const int R = b->s.ranks;
    std::vector<int> status((size_t)R, MOE_OK);
    std::vector<float> elapsed((size_t)R, 0.0f);
    auto run = [&](int r, int n, bool timed) {
        RankA2A &k = b->a2a[(size_t)r];
        if (cudaSetDevice(r) != cudaSuccess) {
            status[(size_t)r] = MOE_ECUDA;
            return;
        }
        if (timed && cudaEventRecord(k.start, k.stream) != cudaSuccess) status[(size_t)r] = MOE_ECUDA;
        for (int i = 0; i < n && status[(size_t)r] == MOE_OK; i++) status[(size_t)r] = a2a_once(b, k, hier);
        if (timed && cudaEventRecord(k.stop, k.stream) != cudaSuccess) status[(size_t)r] = MOE_ECUDA;
        if (cudaStreamSynchronize(k.stream) != cudaSuccess) status[(size_t)r] = MOE_ECUDA;
        if (timed && status[(size_t)r] == MOE_OK &&
            cudaEventElapsedTime(&elapsed[(size_t)r], k.start, k.stop) != cudaSuccess)
            status[(size_t)r] = MOE_ECUDA;
    };
    for (int phase = 0; phase < 2; phase++) { /* warm-up, then the timed loop; join in between */
        std::vector<std::thread> th;
        for (int r = 0; r < R; r++) th.emplace_back(run, r, phase ? iters : warmup, phase == 1);
        for (auto &t : th) t.join();
        for (int r = 0; r < R; r++)
            if (status[(size_t)r] != MOE_OK) return status[(size_t)r];
    }
    MOE_CUDA_TRY(cudaSetDevice(b->device));
    *ms = *std::max_element(elapsed.begin(), elapsed.end()) / (float)iters;
    return MOE_OK;
}

int launch(moe_bench_gpu *b, moe_kernel_id id) {
    const moe_bench_shape &s = b->s;
    const int T = s.tokens, H = s.hidden, E = s.experts, K = s.top_k, R = s.ranks;
    switch (id) {
    case MOE_KERNEL_ROUTER_GEMM:
        return moe_router_logits_gpu(b->cublas, b->x, b->w_gate, b->logits, T, H, E, b->stream);
    case MOE_KERNEL_GATING:
        return moe_topk_gating_gpu(b->logits, nullptr, &b->cfg, T, b->idx, b->w, b->gate_counts,
                                   b->prob_sum, b->stream);
    case MOE_KERNEL_DISPATCH_LAYOUT:
        return moe_dispatch_layout_gpu(b->idx, T, K, E, R, b->capacity, &b->lay, b->lay_work,
                                       &b->lay_work_bytes, b->stream);
    case MOE_KERNEL_PERMUTE:
        return moe_permute_gpu(b->x, b->lay.row_token, b->lay.totals, T * K, H, b->send, b->stream);
    case MOE_KERNEL_EXPERT_FFN:
        return moe_expert_ffn_gpu(b->cublas, b->send, E, b->seg_rows.data(), b->seg_expert.data(),
                                  b->w1, b->w3, b->w2, H, s.ffn_hidden, b->y, b->ffn_work, b->stream);
    case MOE_KERNEL_COMBINE: /* the send buffer stands in for the returned expert outputs */
        return moe_combine_gpu(b->send, b->lay.slot, b->w, T, K, H, b->out, b->stream);
    default:
        return MOE_EINVAL;
    }
}

} // namespace

extern "C" void moe_bench_gpu_destroy(moe_bench_gpu *b) {
    if (!b) return;
    for (size_t r = 0; r < b->a2a.size(); r++) {
        RankA2A &k = b->a2a[r];
        (void)cudaSetDevice((int)r);
        if (k.comm) (void)moe_nccl_comm_destroy(k.comm);
        if (k.stream) (void)cudaStreamDestroy(k.stream);
        if (k.start) (void)cudaEventDestroy(k.start);
        if (k.stop) (void)cudaEventDestroy(k.stop);
        (void)cudaFree(k.send), (void)cudaFree(k.recv), (void)cudaFree(k.staging);
    }
    (void)cudaSetDevice(b->device);
    void *bufs[] = {b->x, b->w_gate, b->w1, b->w3, b->w2, b->send, b->y, b->out, b->logits, b->w,
                    b->prob_sum, b->idx, b->gate_counts, b->lay_mem, b->lay_work, b->ffn_work};
    for (void *p : bufs) (void)cudaFree(p);
    if (b->ev0) (void)cudaEventDestroy(b->ev0);
    if (b->ev1) (void)cudaEventDestroy(b->ev1);
    if (b->stream) (void)cudaStreamDestroy(b->stream);
    if (b->cublas) (void)cublasDestroy(b->cublas);
    delete b;
}

extern "C" int moe_bench_gpu_create(const moe_bench_shape *shape, int device, moe_bench_gpu **out) {
    moe_kernel_work w;
    if (!out || moe_kernel_work_of(MOE_KERNEL_ROUTER_GEMM, shape, &w) != MOE_OK) return MOE_EINVAL;
    if (device < 0 || device >= moe_gpu_count()) return MOE_ENOTSUP;
    moe_bench_gpu *b = new moe_bench_gpu;
    b->s = *shape;
    b->device = device;
    b->EL = shape->experts / shape->ranks;
    b->cfg = moe_gate_cfg_default(shape->experts, shape->top_k);
    b->cfg.score = shape->score;
    b->capacity = moe_capacity(shape->capacity_factor, shape->tokens, shape->top_k, shape->experts);
    int rc = setup(b);
    if (rc != MOE_OK) {
        moe_bench_gpu_destroy(b);
        return rc;
    }
    *out = b;
    return MOE_OK;
}

extern "C" int moe_bench_gpu_time(moe_bench_gpu *b, moe_kernel_id id, int warmup, int iters,
                                  float *ms) {
    if (!b || !ms || warmup < 0 || iters < 1) return MOE_EINVAL;
    if (id == MOE_KERNEL_A2A || id == MOE_KERNEL_A2A_HIER)
        return a2a_time(b, id == MOE_KERNEL_A2A_HIER, warmup, iters, ms);
    MOE_CUDA_TRY(cudaSetDevice(b->device));
    int rc;
    for (int i = 0; i < warmup; i++)
        if ((rc = launch(b, id)) != MOE_OK) return rc;
    MOE_CUDA_TRY(cudaEventRecord(b->ev0, b->stream));
    for (int i = 0; i < iters; i++)
        if ((rc = launch(b, id)) != MOE_OK) return rc;
    MOE_CUDA_TRY(cudaEventRecord(b->ev1, b->stream));
    MOE_CUDA_TRY(cudaEventSynchronize(b->ev1));
    float total = 0.0f;
    MOE_CUDA_TRY(cudaEventElapsedTime(&total, b->ev0, b->ev1));
    *ms = total / (float)iters;
    return MOE_OK;
}
