/* host_probe.c — the probe's configuration and GEMM shapes, and its results as the host-overhead file
 * and as a calibration trace (host_probe.h). */
#define _POSIX_C_SOURCE 200809L
#include "calibration/host_probe.h"

#include <cjson/cJSON.h>
#include <string.h>

/* The dense GEMM table, (n, k) = (output features, input features) of one projection:
 *  - MoE experts at 512, 1024 and 2048 tokens per expert: Qwen3-235B-A22B gate/up (n 1536 = expert
 *    width, k 4096 = hidden) and down (4096, 1536); Qwen3-30B-A3B down (hidden 2048, expert width 768);
 *    gpt-oss-120b (hidden 2880, expert width 2880). Widths from the models' config.json, as in
 *    sim/scenario/presets.c.
 *  - dense projections at 4096, 8192 and 16384 tokens (Llama 3, "The Llama 3 Herd of Models",
 *    arXiv:2407.21783, Table 3: hidden 4096 / 8192 / 16384, FFN 14336 / 28672 / 53248, 8 KV heads of
 *    128): 8B attention output (4096, 4096) and FFN down (4096, 14336); 70B FFN gate or up
 *    (28672, 8192), down (8192, 28672), fused QKV (10240 = (64 + 2 x 8) x 128, 8192) and attention
 *    output (8192, 8192); 405B attention output (16384, 16384) and, 8-way tensor-parallel, FFN gate or
 *    up (6656 = 53248 / 8, 16384) and down (16384, 6656); and a fused multi-head QKV of a 4096-wide
 *    model without grouped KV heads (12288 = 3 x 32 x 128, 4096: Llama 2 7B, arXiv:2307.09288). */
static const int MOE_M[] = { 512, 1024, 2048 };
static const int MOE_NK[][2] = { { 1536, 4096 }, { 4096, 1536 }, { 2048, 768 }, { 2880, 2880 } };
static const int DENSE_M[] = { 4096, 8192, 16384 };
static const int DENSE_NK[][2] = { { 4096, 4096 },   { 12288, 4096 }, { 4096, 14336 },  { 28672, 8192 },
                                   { 8192, 28672 },  { 10240, 8192 }, { 8192, 8192 },   { 16384, 16384 },
                                   { 6656, 16384 },  { 16384, 6656 } };

_Static_assert(sizeof MOE_M / sizeof MOE_M[0] * (sizeof MOE_NK / sizeof MOE_NK[0]) +
                       sizeof DENSE_M / sizeof DENSE_M[0] * (sizeof DENSE_NK / sizeof DENSE_NK[0]) <=
                   MOE_PROBE_MAX_GEMM,
               "the GEMM table fits the probe's result");

const moe_gemm_shape *host_probe_gemm_shapes(int *n) {
    /* small (MoE) shapes first: should the time budget run out, the table loses its largest GEMMs */
    static moe_gemm_shape shapes[MOE_PROBE_MAX_GEMM];
    static int count = 0;
    if (!count) {
        for (size_t a = 0; a < sizeof MOE_M / sizeof MOE_M[0]; a++)
            for (size_t b = 0; b < sizeof MOE_NK / sizeof MOE_NK[0]; b++)
                shapes[count++] = (moe_gemm_shape){ MOE_M[a], MOE_NK[b][0], MOE_NK[b][1] };
        for (size_t a = 0; a < sizeof DENSE_M / sizeof DENSE_M[0]; a++)
            for (size_t b = 0; b < sizeof DENSE_NK / sizeof DENSE_NK[0]; b++)
                shapes[count++] = (moe_gemm_shape){ DENSE_M[a], DENSE_NK[b][0], DENSE_NK[b][1] };
    }
    *n = count;
    return shapes;
}

void host_probe_cfg_default(moe_host_probe_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->launches = 256;   /* well below the launch queue's depth: no launch waits for the GPU */
    cfg->reps = 21;
    cfg->sync_reps = 201;
    cfg->spin_ms = 20;     /* 256 launches take about 1 ms of host time: the spin outlasts them */
    cfg->cublas_calls = 64;
    cfg->cublas_size = 256;
    cfg->gemm_shapes = host_probe_gemm_shapes(&cfg->n_gemm_shapes);
    cfg->gemm_warmup = 5;  /* as simcal bench (moe_bench_gpu_time) */
    cfg->gemm_iters = 20;
    cfg->gemm_budget_s = 60;
}

trace_point host_probe_gemm_point(const moe_gemm_timing *g) {
    trace_point p;
    memset(&p, 0, sizeof p);
    const double m = g->shape.m, n = g->shape.n, k = g->shape.k;
    snprintf(p.kernel, sizeof p.kernel, "%s", HOST_PROBE_GEMM_KERNEL);
    trace_point_set_dim(&p, "m", m);
    trace_point_set_dim(&p, "n", n);
    trace_point_set_dim(&p, "k", k);
    snprintf(p.dtype, sizeof p.dtype, "bf16");
    p.time_us = g->time_us;
    p.flops = 2 * m * n * k;
    p.bytes = 2 * (m * k + k * n + m * n);
    p.ranks = 1;
    return p;
}

int host_probe_gemm_trace(const moe_host_probe *r, const trace_provenance *pv, trace *t, moe_error *err) {
    trace_init(t);
    if (r->n_gemm < 1) return moe_error_set(err, EXIT_RUNTIME, "host probe: no GEMM was timed (%s)",
                                            moe_status_str(r->status[MOE_PROBE_GEMM]));
    t->prov = *pv;
    snprintf(t->prov.source, sizeof t->prov.source,
             "simcal probe-host: cublasGemmEx BF16 -> BF16, FP32 compute, Y = X W^T, CUDA events");
    for (int i = 0; i < r->n_gemm; i++) {
        trace_point p = host_probe_gemm_point(&r->gemm[i]);
        trace_add(t, &p);
    }
    return 0;
}

/* ---- the host-overhead file ---------------------------------------------------------------------- */

static void add_stat(cJSON *root, const char *key, const moe_probe_stat *s, int section_status) {
    cJSON *o = cJSON_AddObjectToObject(root, key);
    if (s->reps < 1) {
        cJSON_AddStringToObject(o, "error", moe_status_str(section_status ? section_status : MOE_ENOTSUP));
        return;
    }
    cJSON_AddNumberToObject(o, "min", s->min_us);
    cJSON_AddNumberToObject(o, "median", s->median_us);
    cJSON_AddNumberToObject(o, "reps", s->reps);
}

static double tflops_of(const moe_gemm_timing *g) {
    return 2.0 * g->shape.m * g->shape.n * g->shape.k / (g->time_us * 1e6);
}

cJSON *host_probe_to_json(const moe_host_probe *r, const moe_host_probe_cfg *c, const trace_provenance *pv) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", HOST_PROBE_FORMAT);
    trace_provenance_to_json(root, pv);
    cJSON *m = cJSON_AddObjectToObject(root, "method");
    cJSON_AddStringToObject(m, "host_clock", "CLOCK_MONOTONIC around the calls");
    cJSON_AddStringToObject(m, "gpu_clock", "CUDA events");
    cJSON_AddStringToObject(m, "statistics", "min and median over reps");
    cJSON_AddNumberToObject(m, "launches", c->launches);
    cJSON_AddNumberToObject(m, "reps", c->reps);
    cJSON_AddNumberToObject(m, "sync_reps", c->sync_reps);
    cJSON_AddNumberToObject(m, "spin_ms", c->spin_ms);
    cJSON_AddNumberToObject(m, "cublas_calls", c->cublas_calls);
    cJSON_AddNumberToObject(m, "cublas_size", c->cublas_size);
    static const char *const names[MOE_PROBE_SECTIONS] = { "launch", "graph", "sync", "cublas", "gemm" };
    cJSON *st = cJSON_AddObjectToObject(root, "sections");
    for (int i = 0; i < MOE_PROBE_SECTIONS; i++) cJSON_AddStringToObject(st, names[i], moe_status_str(r->status[i]));
    add_stat(root, "launch_cpu_us", &r->launch_cpu_us, r->status[MOE_PROBE_LAUNCH]);
    add_stat(root, "gpu_kernel_us", &r->gpu_kernel_us, r->status[MOE_PROBE_LAUNCH]);
    add_stat(root, "graph_launch_cpu_us", &r->graph_launch_cpu_us, r->status[MOE_PROBE_GRAPH]);
    add_stat(root, "graph_gpu_per_node_us", &r->graph_gpu_per_node_us, r->status[MOE_PROBE_GRAPH]);
    cJSON_AddNumberToObject(root, "graph_nodes", c->launches);
    add_stat(root, "sync_idle_us", &r->sync_idle_us, r->status[MOE_PROBE_SYNC]);
    add_stat(root, "sync_after_tick_us", &r->sync_after_tick_us, r->status[MOE_PROBE_SYNC]);
    add_stat(root, "cublas_gemm_cpu_us", &r->cublas_gemm_cpu_us, r->status[MOE_PROBE_CUBLAS]);
    cJSON *k = cJSON_AddObjectToObject(root, "checks");
    cJSON_AddNumberToObject(k, "busy_loops", r->busy_loops);
    cJSON_AddNumberToObject(k, "busy_loops_still_busy", r->busy_loops_still_busy);
    cJSON_AddNumberToObject(k, "spin_cycles", r->spin_cycles);
    cJSON_AddNumberToObject(k, "spin_event_ms", r->spin_event_ms);
    cJSON_AddNumberToObject(k, "ticks_expected", (double)r->ticks_expected);
    cJSON_AddNumberToObject(k, "ticks_counted", (double)r->ticks_counted);
    cJSON *g = cJSON_AddObjectToObject(root, "gemm");
    cJSON_AddStringToObject(g, "op", "cublasGemmEx Y[m,n] = X[m,k] W[n,k]^T, row-major (cuBLAS T,N)");
    cJSON_AddStringToObject(g, "dtype", "bf16");
    cJSON_AddStringToObject(g, "compute", "CUBLAS_COMPUTE_32F");
    cJSON_AddNumberToObject(g, "warmup", c->gemm_warmup);
    cJSON_AddNumberToObject(g, "iters", c->gemm_iters);
    cJSON_AddNumberToObject(g, "budget_s", c->gemm_budget_s);
    cJSON_AddNumberToObject(g, "wall_s", r->gemm_wall_s);
    cJSON_AddBoolToObject(g, "truncated", r->gemm_truncated);
    cJSON *pts = cJSON_AddArrayToObject(g, "points");
    for (int i = 0; i < r->n_gemm; i++) {
        const moe_gemm_timing *t = &r->gemm[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "m", t->shape.m);
        cJSON_AddNumberToObject(o, "n", t->shape.n);
        cJSON_AddNumberToObject(o, "k", t->shape.k);
        cJSON_AddStringToObject(o, "dtype", "bf16");
        cJSON_AddNumberToObject(o, "time_us", t->time_us);
        cJSON_AddNumberToObject(o, "tflops", tflops_of(t));
        cJSON_AddItemToArray(pts, o);
    }
    return root;
}

static void print_stat(FILE *out, const char *name, const moe_probe_stat *s, int status) {
    if (s->reps < 1)
        fprintf(out, "  %-24s %s\n", name, moe_status_str(status ? status : MOE_ENOTSUP));
    else
        fprintf(out, "  %-24s %10.3f %10.3f %5d\n", name, s->min_us, s->median_us, s->reps);
}

void host_probe_print(FILE *out, const moe_host_probe *r, const moe_host_probe_cfg *c, double peak_bf16_tflops) {
    fprintf(out, "# host overheads (%d launches per loop behind a %.0f ms spin; graph of %d nodes)\n", c->launches,
            c->spin_ms, c->launches);
    fprintf(out, "# %-24s %10s %10s %5s\n", "figure", "min", "median", "reps");
    print_stat(out, "launch_cpu_us", &r->launch_cpu_us, r->status[MOE_PROBE_LAUNCH]);
    print_stat(out, "gpu_kernel_us", &r->gpu_kernel_us, r->status[MOE_PROBE_LAUNCH]);
    print_stat(out, "graph_launch_cpu_us", &r->graph_launch_cpu_us, r->status[MOE_PROBE_GRAPH]);
    print_stat(out, "graph_gpu_per_node_us", &r->graph_gpu_per_node_us, r->status[MOE_PROBE_GRAPH]);
    print_stat(out, "sync_idle_us", &r->sync_idle_us, r->status[MOE_PROBE_SYNC]);
    print_stat(out, "sync_after_tick_us", &r->sync_after_tick_us, r->status[MOE_PROBE_SYNC]);
    print_stat(out, "cublas_gemm_cpu_us", &r->cublas_gemm_cpu_us, r->status[MOE_PROBE_CUBLAS]);
    fprintf(out, "# checks: %d of %d timed loops ended with the GPU still busy; spin %.0f cycles = %.3f ms by "
            "events; ticks %lld counted, %lld enqueued\n",
            r->busy_loops_still_busy, r->busy_loops, r->spin_cycles, r->spin_event_ms, r->ticks_counted,
            r->ticks_expected);
    fprintf(out, "# dense BF16 GEMM (warm-up %d, mean of %d; %.1f s%s)\n", c->gemm_warmup, c->gemm_iters,
            r->gemm_wall_s, r->gemm_truncated ? ", budget spent: table truncated" : "");
    fprintf(out, "# %6s %6s %6s %12s %9s %7s\n", "m", "n", "k", "time_us", "TFLOP/s", "%peak");
    for (int i = 0; i < r->n_gemm; i++) {
        const moe_gemm_timing *t = &r->gemm[i];
        double tf = tflops_of(t);
        char pct[16] = "n/a";
        if (peak_bf16_tflops > 0) snprintf(pct, sizeof pct, "%.1f", 100 * tf / peak_bf16_tflops);
        fprintf(out, "  %6d %6d %6d %12.2f %9.1f %7s\n", t->shape.m, t->shape.n, t->shape.k, t->time_us, tf, pct);
    }
}
