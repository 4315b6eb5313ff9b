/* host_probe.cu — the host-overhead probe (moe_kernels.h, "host-overhead probe") and its two tiny
 * kernels (§10: tick, spin; CPU references in host_probe_cpu.c).
 *
 * Method. A training rank's CPU thread enqueues kernels ahead of the GPU; what it pays per launch is
 * only visible when launches never wait for the device. So every "behind a spin kernel" loop first
 * enqueues a one-thread kernel that busy-waits spin_ms of SM clock cycles (clock64), then times the
 * calls on the host (CLOCK_MONOTONIC) while the GPU is still spinning: N = 256 launches sit far below
 * the launch queue's depth, so none blocks. cudaStreamQuery right after the last call says whether the
 * stream still had work (counted in busy_loops_still_busy: the loop's premise held). The GPU side of
 * the same loop (events recorded after the spin and after the last call) is the time of N kernels run
 * back to back. Every tick the probe enqueues is also applied to a host counter with the CPU
 * reference; the device counter read back at the end must equal it (every timed launch ran once).
 * Lazy module loading: each kernel (and each cuBLAS shape) runs once before its first timed loop.
 * Every CUDA/cuBLAS call is checked; every loop is bounded by the validated configuration; each
 * section frees what it allocated on every path. */
#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>

#include "kernels/cuda_check.cuh"

namespace {

__global__ void tick_kernel(int32_t *counter) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *counter += 1;
}

__global__ void spin_kernel(long long cycles, int32_t *flag, int32_t value) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    *flag = value;
}

} // namespace

extern "C" int moe_tick_gpu(int32_t *counter, void *stream) {
    if (!counter) return MOE_EINVAL;
    tick_kernel<<<1, 1, 0, moe_stream(stream)>>>(counter);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}

extern "C" int moe_spin_gpu(long long cycles, int32_t *flag, int32_t value, void *stream) {
    if (!flag || cycles < 0 || cycles > MOE_SPIN_MAX_CYCLES) return MOE_EINVAL;
    spin_kernel<<<1, 1, 0, moe_stream(stream)>>>(cycles, flag, value);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}

namespace {

double now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* min and median of the samples times `scale` (per launch, per node, ...) */
moe_probe_stat stat_of(std::vector<double> v, double scale) {
    moe_probe_stat s{};
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    s.reps = (int)n;
    s.min_us = scale * v[0];
    s.median_us = scale * (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
    return s;
}

bool cfg_ok(const moe_host_probe_cfg *c) {
    return c->launches >= 1 && c->launches <= 1000 && c->reps >= 1 && c->reps <= 1000 && c->sync_reps >= 1 &&
           c->sync_reps <= 10000 && c->spin_ms > 0 && c->spin_ms <= 500 && c->cublas_calls >= 1 &&
           c->cublas_calls <= 1000 && c->cublas_size >= 1 && c->cublas_size <= 4096 && c->n_gemm_shapes >= 0 &&
           c->n_gemm_shapes <= MOE_PROBE_MAX_GEMM && (c->n_gemm_shapes == 0 || c->gemm_shapes) &&
           c->gemm_warmup >= 0 && c->gemm_warmup <= 100 && c->gemm_iters >= 1 && c->gemm_iters <= 1000 &&
           c->gemm_budget_s > 0;
}

struct Probe {
    const moe_host_probe_cfg *cfg = nullptr;
    cudaStream_t s = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    int32_t *d_counter = nullptr, *d_flag = nullptr;
    int32_t *h_read = nullptr; /* pinned */
    int32_t ticks = 0;         /* the CPU reference's counter: moe_tick_cpu per tick enqueued */
    long long spin_cycles = 0;
    int busy_loops = 0, still_busy = 0;
};

void ticks_enqueued(Probe &p, int n) {
    for (int i = 0; i < n; i++) moe_tick_cpu(&p.ticks);
}

/* Enqueue the spin that keeps the GPU busy during a timed loop. */
int spin(Probe &p, long long cycles) {
    spin_kernel<<<1, 1, 0, p.s>>>(cycles, p.d_flag, 1);
    MOE_LAUNCH_CHECK();
    return MOE_OK;
}

/* Right after a timed loop: did the stream still have work (the spin), i.e. did no call wait? */
int note_busy(Probe &p) {
    cudaError_t q = cudaStreamQuery(p.s);
    if (q == cudaErrorNotReady) {
        (void)cudaGetLastError(); /* "not ready" is no error: leave nothing behind for later checks */
        p.busy_loops++;
        p.still_busy++;
        return MOE_OK;
    }
    MOE_CUDA_TRY(q);
    p.busy_loops++;
    return MOE_OK;
}

/* Y[m,n] = X[m,k] W[n,k]^T, row-major, BF16 in and out, FP32 accumulation: column-major cuBLAS
 * computes Y^T[n,m] = op_T(W^T[k,n]) X^T[k,m]. */
cublasStatus_t gemm_bf16(cublasHandle_t h, int m, int n, int k, const void *x, const void *w, void *y) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k, &beta,
                        y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

int events_ms(Probe &p, float *ms) {
    MOE_CUDA_TRY(cudaEventSynchronize(p.ev1));
    MOE_CUDA_TRY(cudaEventElapsedTime(ms, p.ev0, p.ev1));
    return MOE_OK;
}

/* `reps` timed loops behind a spin: spin, event, the calls (`enqueue`, timed on the host), event;
 * right after the calls, whether the GPU was still busy. Appends each loop's host and GPU time (us). */
template <typename Enqueue>
int behind_spin(Probe &p, Enqueue enqueue, std::vector<double> &host_us, std::vector<double> &gpu_us) {
    for (int r = 0; r < p.cfg->reps; r++) {
        int rc = spin(p, p.spin_cycles);
        if (rc) return rc;
        MOE_CUDA_TRY(cudaEventRecord(p.ev0, p.s));
        const double t0 = now_us();
        rc = enqueue();
        const double t1 = now_us();
        if (rc || (rc = note_busy(p))) return rc;
        MOE_CUDA_TRY(cudaEventRecord(p.ev1, p.s));
        float ms = 0;
        if ((rc = events_ms(p, &ms))) return rc;
        host_us.push_back(t1 - t0);
        gpu_us.push_back(1e3 * ms);
    }
    return MOE_OK;
}

int setup(Probe &p, int device, moe_host_probe *o) {
    MOE_CUDA_TRY(cudaSetDevice(device));
    MOE_CUDA_TRY(cudaStreamCreateWithFlags(&p.s, cudaStreamNonBlocking));
    MOE_CUDA_TRY(cudaEventCreate(&p.ev0));
    MOE_CUDA_TRY(cudaEventCreate(&p.ev1));
    MOE_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&p.d_counter), sizeof(int32_t)));
    MOE_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&p.d_flag), sizeof(int32_t)));
    MOE_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void **>(&p.h_read), sizeof(int32_t), cudaHostAllocDefault));
    MOE_CUDA_TRY(cudaMemsetAsync(p.d_counter, 0, sizeof(int32_t), p.s));
    MOE_CUDA_TRY(cudaMemsetAsync(p.d_flag, 0, sizeof(int32_t), p.s));
    /* the rated (maximum) SM clock: at or below it a spin of these cycles lasts >= spin_ms */
    int clock_khz = 0;
    MOE_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    if (clock_khz <= 0) clock_khz = 2000000;
    double cycles = p.cfg->spin_ms * 1e-3 * clock_khz * 1e3;
    p.spin_cycles = (long long)std::min(std::max(cycles, 1.0), (double)MOE_SPIN_MAX_CYCLES);
    o->spin_cycles = (double)p.spin_cycles;
    /* load both kernels (lazy loading) on an idle GPU, then time one full spin */
    int rc = spin(p, 1000);
    if (rc) return rc;
    tick_kernel<<<1, 1, 0, p.s>>>(p.d_counter);
    MOE_LAUNCH_CHECK();
    ticks_enqueued(p, 1);
    MOE_CUDA_TRY(cudaStreamSynchronize(p.s));
    MOE_CUDA_TRY(cudaEventRecord(p.ev0, p.s));
    if ((rc = spin(p, p.spin_cycles))) return rc;
    MOE_CUDA_TRY(cudaEventRecord(p.ev1, p.s));
    float ms = 0;
    if ((rc = events_ms(p, &ms))) return rc;
    o->spin_event_ms = ms;
    return MOE_OK;
}

void teardown(Probe &p) {
    if (p.s) (void)cudaStreamSynchronize(p.s);
    if (p.h_read) (void)cudaFreeHost(p.h_read);
    if (p.d_flag) (void)cudaFree(p.d_flag);
    if (p.d_counter) (void)cudaFree(p.d_counter);
    if (p.ev1) (void)cudaEventDestroy(p.ev1);
    if (p.ev0) (void)cudaEventDestroy(p.ev0);
    if (p.s) (void)cudaStreamDestroy(p.s);
    (void)cudaGetLastError();
}

/* ---- a, b: stream launches, host and GPU side ---------------------------------------------------- */
int section_launch(Probe &p, moe_host_probe *o) {
    const int N = p.cfg->launches;
    std::vector<double> cpu, gpu;
    const auto launches = [&]() -> int {
        for (int i = 0; i < N; i++) tick_kernel<<<1, 1, 0, p.s>>>(p.d_counter);
        MOE_LAUNCH_CHECK();
        return MOE_OK;
    };
    const int rc = behind_spin(p, launches, cpu, gpu);
    ticks_enqueued(p, N * (int)cpu.size());
    if (rc) return rc;
    o->launch_cpu_us = stat_of(cpu, 1.0 / N);
    o->gpu_kernel_us = stat_of(gpu, 1.0 / N);
    return MOE_OK;
}

/* ---- c: one CUDA graph of N ticks ------------------------------------------------------------------ */
int graph_body(Probe &p, moe_host_probe *o, cudaGraph_t *g, cudaGraphExec_t *x) {
    const int N = p.cfg->launches;
    MOE_CUDA_TRY(cudaStreamBeginCapture(p.s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < N; i++) tick_kernel<<<1, 1, 0, p.s>>>(p.d_counter);
    const cudaError_t launched = cudaGetLastError();
    const cudaError_t ended = cudaStreamEndCapture(p.s, g); /* always leave capture mode */
    MOE_CUDA_TRY(launched);
    MOE_CUDA_TRY(ended);
    if (!*g) {
        std::fprintf(stderr, "%s:%d: stream capture returned no graph\n", __FILE__, __LINE__);
        return MOE_ECUDA;
    }
    MOE_CUDA_TRY(cudaGraphInstantiate(x, *g, 0));
    MOE_CUDA_TRY(cudaGraphUpload(*x, p.s));
    MOE_CUDA_TRY(cudaGraphLaunch(*x, p.s)); /* first launch untimed */
    ticks_enqueued(p, N);
    MOE_CUDA_TRY(cudaStreamSynchronize(p.s));
    std::vector<double> cpu, gpu;
    const auto launch = [&]() -> int {
        MOE_CUDA_TRY(cudaGraphLaunch(*x, p.s));
        return MOE_OK;
    };
    const int rc = behind_spin(p, launch, cpu, gpu);
    ticks_enqueued(p, N * (int)cpu.size());
    if (rc) return rc;
    o->graph_launch_cpu_us = stat_of(cpu, 1.0);
    o->graph_gpu_per_node_us = stat_of(gpu, 1.0 / N);
    return MOE_OK;
}

int section_graph(Probe &p, moe_host_probe *o) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    const int rc = graph_body(p, o, &g, &x);
    if (x) (void)cudaGraphExecDestroy(x);
    if (g) (void)cudaGraphDestroy(g);
    return rc;
}

/* ---- d: device-to-host reads, idle and behind one tick ------------------------------------------- */
int read_counter(Probe &p, double *us) {
    const double t0 = now_us();
    const cudaError_t cp = cudaMemcpyAsync(p.h_read, p.d_counter, sizeof(int32_t), cudaMemcpyDeviceToHost, p.s);
    const cudaError_t sy = cudaStreamSynchronize(p.s);
    *us = now_us() - t0;
    MOE_CUDA_TRY(cp);
    MOE_CUDA_TRY(sy);
    return MOE_OK;
}

/* Each read must return the counter the ticks before it left: the round trip really waited. */
int read_is(Probe &p, int32_t want) {
    if (*p.h_read == want) return MOE_OK;
    std::fprintf(stderr, "host probe: the tick counter read %d, expected %d\n", (int)*p.h_read, (int)want);
    return MOE_ECUDA;
}

int section_sync(Probe &p, moe_host_probe *o) {
    std::vector<double> idle, after;
    double us = 0;
    int rc = read_counter(p, &us); /* untimed: the counter as the sections before left it */
    if (rc) return rc;
    int32_t want = *p.h_read;
    for (int r = 0; r < p.cfg->sync_reps; r++) {
        if ((rc = read_counter(p, &us)) || (rc = read_is(p, want))) return rc;
        idle.push_back(us);
    }
    for (int r = 0; r < p.cfg->sync_reps; r++) {
        const double t0 = now_us();
        tick_kernel<<<1, 1, 0, p.s>>>(p.d_counter);
        rc = read_counter(p, &us);
        us = now_us() - t0; /* the launch, the copy and the wait */
        MOE_LAUNCH_CHECK();
        ticks_enqueued(p, 1);
        moe_tick_cpu(&want);
        if (rc || (rc = read_is(p, want))) return rc;
        after.push_back(us);
    }
    o->sync_idle_us = stat_of(idle, 1.0);
    o->sync_after_tick_us = stat_of(after, 1.0);
    return MOE_OK;
}

/* ---- e: host cost of a small cuBLAS call ----------------------------------------------------------- */
struct Gemm {
    cublasHandle_t h = nullptr;
    void *x = nullptr, *w = nullptr, *y = nullptr;
};

void gemm_free(Gemm &g) {
    if (g.h) (void)cublasDestroy(g.h);
    if (g.y) (void)cudaFree(g.y);
    if (g.w) (void)cudaFree(g.w);
    if (g.x) (void)cudaFree(g.x);
    g = Gemm{};
}

int gemm_alloc(Probe &p, Gemm &g, size_t x_elems, size_t w_elems, size_t y_elems) {
    MOE_CUDA_TRY(cudaMalloc(&g.x, x_elems * sizeof(moe_bf16)));
    MOE_CUDA_TRY(cudaMalloc(&g.w, w_elems * sizeof(moe_bf16)));
    MOE_CUDA_TRY(cudaMalloc(&g.y, y_elems * sizeof(moe_bf16)));
    MOE_CUBLAS_TRY(cublasCreate(&g.h));
    MOE_CUBLAS_TRY(cublasSetStream(g.h, p.s));
    return MOE_OK;
}

int cublas_body(Probe &p, moe_host_probe *o, Gemm &g) {
    const int S = p.cfg->cublas_size, calls = p.cfg->cublas_calls;
    const size_t n = (size_t)S * S;
    int rc = gemm_alloc(p, g, n, n, n);
    if (rc) return rc;
    MOE_CUDA_TRY(cudaMemsetAsync(g.x, 0, n * sizeof(moe_bf16), p.s));
    MOE_CUDA_TRY(cudaMemsetAsync(g.w, 0, n * sizeof(moe_bf16), p.s));
    for (int i = 0; i < 3; i++) MOE_CUBLAS_TRY(gemm_bf16(g.h, S, S, S, g.x, g.w, g.y));
    MOE_CUDA_TRY(cudaStreamSynchronize(p.s));
    std::vector<double> cpu, gpu;
    const auto gemms = [&]() -> int {
        for (int i = 0; i < calls; i++) MOE_CUBLAS_TRY(gemm_bf16(g.h, S, S, S, g.x, g.w, g.y));
        return MOE_OK;
    };
    if ((rc = behind_spin(p, gemms, cpu, gpu))) return rc;
    o->cublas_gemm_cpu_us = stat_of(cpu, 1.0 / calls);
    return MOE_OK;
}

int section_cublas(Probe &p, moe_host_probe *o) {
    Gemm g;
    const int rc = cublas_body(p, o, g);
    (void)cudaStreamSynchronize(p.s);
    gemm_free(g);
    return rc;
}

/* ---- f: the dense BF16 GEMM table ---------------------------------------------------------------- */
/* Operand values: moe_bench_fill_bf16 in [-1, 1) on one chunk, copied over the whole buffer (values
 * that toggle the tensor cores' inputs like real data; zeros would draw less power). */
int fill_operand(Probe &p, void *d, size_t elems, uint64_t seed) {
    const size_t chunk = std::min(elems, (size_t)1 << 22);
    std::vector<moe_bf16> h(chunk);
    uint64_t st = seed;
    moe_bench_fill_bf16(h.data(), chunk, 1.0, &st);
    moe_bf16 *dst = static_cast<moe_bf16 *>(d);
    MOE_CUDA_TRY(cudaMemcpyAsync(dst, h.data(), chunk * sizeof(moe_bf16), cudaMemcpyHostToDevice, p.s));
    for (size_t done = chunk; done < elems;) {
        const size_t c = std::min(done, elems - done);
        MOE_CUDA_TRY(cudaMemcpyAsync(dst + done, dst, c * sizeof(moe_bf16), cudaMemcpyDeviceToDevice, p.s));
        done += c;
    }
    MOE_CUDA_TRY(cudaStreamSynchronize(p.s)); /* h is freed on return */
    return MOE_OK;
}

int table_body(Probe &p, moe_host_probe *o, Gemm &g) {
    const moe_host_probe_cfg *c = p.cfg;
    size_t xe = 1, we = 1, ye = 1;
    for (int i = 0; i < c->n_gemm_shapes; i++) {
        const moe_gemm_shape &s = c->gemm_shapes[i];
        if (s.m < 1 || s.n < 1 || s.k < 1) return MOE_EINVAL;
        xe = std::max(xe, (size_t)s.m * s.k);
        we = std::max(we, (size_t)s.n * s.k);
        ye = std::max(ye, (size_t)s.m * s.n);
    }
    int rc = gemm_alloc(p, g, xe, we, ye);
    if (rc || (rc = fill_operand(p, g.x, xe, 0x9e3779b97f4a7c15ull)) ||
        (rc = fill_operand(p, g.w, we, 0xd1b54a32d192ed03ull)))
        return rc;
    const double start = now_us();
    for (int i = 0; i < c->n_gemm_shapes; i++) {
        if ((now_us() - start) * 1e-6 > c->gemm_budget_s) {
            o->gemm_truncated = 1;
            break;
        }
        const moe_gemm_shape &s = c->gemm_shapes[i];
        for (int w = 0; w < c->gemm_warmup; w++) MOE_CUBLAS_TRY(gemm_bf16(g.h, s.m, s.n, s.k, g.x, g.w, g.y));
        MOE_CUDA_TRY(cudaEventRecord(p.ev0, p.s));
        for (int it = 0; it < c->gemm_iters; it++) MOE_CUBLAS_TRY(gemm_bf16(g.h, s.m, s.n, s.k, g.x, g.w, g.y));
        MOE_CUDA_TRY(cudaEventRecord(p.ev1, p.s));
        float ms = 0;
        if ((rc = events_ms(p, &ms))) return rc;
        o->gemm[o->n_gemm].shape = s;
        o->gemm[o->n_gemm].time_us = 1e3 * ms / c->gemm_iters;
        o->n_gemm++;
    }
    o->gemm_wall_s = (now_us() - start) * 1e-6;
    return MOE_OK;
}

int section_gemm(Probe &p, moe_host_probe *o) {
    if (p.cfg->n_gemm_shapes == 0) return MOE_OK;
    Gemm g;
    const int rc = table_body(p, o, g);
    (void)cudaStreamSynchronize(p.s);
    gemm_free(g);
    return rc;
}

} // namespace

extern "C" int moe_host_probe_run(int device, const moe_host_probe_cfg *cfg, moe_host_probe *out) {
    if (!cfg || !out || !cfg_ok(cfg)) return MOE_EINVAL;
    std::memset(out, 0, sizeof *out);
    Probe p;
    p.cfg = cfg;
    int rc = setup(p, device, out);
    if (rc) {
        for (int i = 0; i < MOE_PROBE_SECTIONS; i++) out->status[i] = rc;
        teardown(p);
        return rc;
    }
    int (*const sections[MOE_PROBE_SECTIONS])(Probe &, moe_host_probe *) = {section_launch, section_graph,
                                                                            section_sync, section_cublas,
                                                                            section_gemm};
    for (int i = 0; i < MOE_PROBE_SECTIONS; i++) {
        out->status[i] = sections[i](p, out);
        (void)cudaStreamSynchronize(p.s); /* a failed section may leave work queued */
        if (out->status[i] != MOE_OK && rc == MOE_OK) rc = out->status[i];
    }
    out->busy_loops = p.busy_loops;
    out->busy_loops_still_busy = p.still_busy;
    out->ticks_expected = p.ticks;
    int32_t counted = -1;
    const cudaError_t e = cudaMemcpy(&counted, p.d_counter, sizeof counted, cudaMemcpyDeviceToHost);
    out->ticks_counted = e == cudaSuccess ? counted : -1;
    if (rc == MOE_OK && out->ticks_counted != out->ticks_expected) {
        std::fprintf(stderr, "host probe: %lld ticks counted on the GPU, %lld enqueued\n", out->ticks_counted,
                     out->ticks_expected);
        rc = MOE_ECUDA;
    }
    teardown(p);
    return rc;
}
