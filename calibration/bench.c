/* bench.c — shape grids, the CPU timing backend, and the bench loop of `simcal bench` (bench.h). */
#define _POSIX_C_SOURCE 200809L
#include "calibration/bench.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- grids ------------------------------------------------------------------------------------ */

static void add_shape(bench_grid *g, int T, int H, int F, int E, int K, int R, int gpn) {
    if (g->n >= (int)(sizeof g->shapes / sizeof g->shapes[0])) return;
    moe_bench_shape *s = &g->shapes[g->n++];
    memset(s, 0, sizeof *s);
    s->tokens = T;
    s->hidden = H;
    s->ffn_hidden = F;
    s->experts = E;
    s->top_k = K;
    s->ranks = R;
    s->gpus_per_node = gpn;
    s->capacity_factor = 0;   /* dropless: the time depends only on the shape */
    s->score = MOE_SCORE_SOFTMAX;
    s->seed = 0x5eed0000u + (uint64_t)g->n;
}

int bench_grid_make(const char *name, int gpu, bench_grid *g, moe_error *err) {
    memset(g, 0, sizeof *g);
    if (strcmp(name, "small") == 0) {
        /* CPU references: a few minutes on 2 cores. Experts per rank (E/R) spans 4..32 so the expert
         * FFN runs from "one big GEMM" to "many skinny GEMMs" (the intensity axis of the fit). */
        static const int T[] = { 64, 256, 1024 }, H[] = { 128, 512 }, ER[][2] = { { 8, 2 }, { 32, 1 }, { 32, 4 } };
        for (size_t a = 0; a < 3; a++)
            for (size_t b = 0; b < 2; b++)
                for (size_t c = 0; c < 3; c++)
                    add_shape(g, T[a], H[b], H[b] / 2, ER[c][0], 2, ER[c][1], ER[c][1]);
    } else if (strcmp(name, "full") == 0) {
        /* GPU: DeepSeek-V3-like layers (H 7168, expert F 2048, E 256, top-8) and smaller ones; EP
         * sizes 8 and 32 give 32 and 8 local experts. With one GPU the all-to-alls are skipped. */
        static const int T[] = { 512, 2048, 8192 }, H[] = { 2048, 4096, 7168 }, E[] = { 64, 256 }, R[] = { 8, 32 };
        for (size_t a = 0; a < 3; a++)
            for (size_t b = 0; b < 3; b++)
                for (size_t c = 0; c < 2; c++)
                    for (size_t d = 0; d < 2; d++)
                        add_shape(g, T[a], H[b], H[b] == 7168 ? 2048 : H[b] / 2, E[c], 8, R[d], gpu ? 8 : R[d]);
    } else {
        return moe_error_input(err, NULL, "--grid", name, "small or full");
    }
    return 0;
}

/* ---- CPU backend ------------------------------------------------------------------------------- */

static int cpu_open(void *ctx, const moe_bench_shape *s, void **h) {
    (void)ctx;
    return moe_bench_cpu_create(s, (moe_bench_cpu **)h);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One warm-up run, then runs until >= 20 ms and >= 3 samples (at most 25): the median resists the
 * scheduler noise of a shared 2-core machine better than the mean. */
static int cpu_time(void *ctx, void *h, moe_kernel_id id, double *us) {
    (void)ctx;
    int rc = moe_bench_cpu_run(h, id);
    if (rc != MOE_OK) return rc;
    double samples[25], total = 0;
    int n = 0;
    while (n < 25 && (n < 3 || total < 0.02)) {
        double t0 = now_s();
        if ((rc = moe_bench_cpu_run(h, id)) != MOE_OK) return rc;
        samples[n] = now_s() - t0;
        total += samples[n++];
    }
    gsl_sort(samples, 1, (size_t)n);
    *us = 1e6 * gsl_stats_median_from_sorted_data(samples, 1, (size_t)n);
    return MOE_OK;
}

static void cpu_close(void *ctx, void *h) {
    (void)ctx;
    moe_bench_cpu_destroy(h);
}

bench_backend bench_backend_cpu(void) {
    return (bench_backend){ .name = "cpu", .ctx = NULL, .open = cpu_open, .time_us = cpu_time,
                            .close = cpu_close, .peak_bf16_flops = 0, .hbm_Bps = 0, .a2a_link = NULL };
}

/* ---- the loop ------------------------------------------------------------------------------------ */

static int is_a2a(moe_kernel_id id) { return id == MOE_KERNEL_A2A || id == MOE_KERNEL_A2A_HIER; }

int bench_run(const bench_grid *g, const bench_backend *be, trace *t, FILE *out, moe_error *err) {
    fprintf(out, "# simcal bench (%s): %d shapes x %d kernels\n", be->name, g->n, MOE_KERNEL_COUNT);
    fprintf(out, "# %-16s %6s %6s %6s %5s %4s %5s %12s %9s %9s %7s\n", "kernel", "tokens", "hidden", "ffn",
            "exp", "topk", "ranks", "time_us", "GB/s", "TFLOP/s", "%peak");
    int first_a2a = t->n;   /* collective points are appended after: nccl-tests table at the end */
    (void)first_a2a;
    for (int i = 0; i < g->n; i++) {
        const moe_bench_shape *s = &g->shapes[i];
        void *h = NULL;
        int rc = be->open(be->ctx, s, &h);
        if (rc != MOE_OK)
            return moe_error_set(err, EXIT_RUNTIME, "bench %s: shape %d (T=%d H=%d E=%d R=%d): %s", be->name,
                                 i, s->tokens, s->hidden, s->experts, s->ranks, moe_status_str(rc));
        for (int k = 0; k < MOE_KERNEL_COUNT; k++) {
            moe_kernel_id id = (moe_kernel_id)k;
            moe_kernel_work w;
            double us = 0;
            if (moe_kernel_work_of(id, s, &w) != MOE_OK) continue;
            if (is_a2a(id) && s->ranks < 2) continue;
            rc = be->time_us(be->ctx, h, id, &us);
            if (rc == MOE_ENOTSUP) continue;
            if (rc != MOE_OK) {
                be->close(be->ctx, h);
                return moe_error_set(err, EXIT_RUNTIME, "bench %s: %s on shape %d: %s", be->name,
                                     moe_kernel_name(id), i, moe_status_str(rc));
            }
            trace_point p;
            memset(&p, 0, sizeof p);
            snprintf(p.kernel, sizeof p.kernel, "%s", moe_kernel_name(id));
            trace_point_set_dim(&p, "tokens", s->tokens);
            trace_point_set_dim(&p, "hidden", s->hidden);
            trace_point_set_dim(&p, "ffn_hidden", s->ffn_hidden);
            trace_point_set_dim(&p, "experts", s->experts);
            trace_point_set_dim(&p, "top_k", s->top_k);
            trace_point_set_dim(&p, "ep", s->ranks);
            snprintf(p.dtype, sizeof p.dtype, "bf16");
            p.time_us = us;
            p.flops = w.flops;
            p.bytes = w.bytes;
            p.ranks = 1;
            if (is_a2a(id) && be->a2a_link) {
                /* a real collective: nccl-tests size = per-rank send buffer incl. the self part */
                p.ranks = s->ranks;
                p.bytes = w.comm_bytes * s->ranks / (s->ranks - 1);
                p.flops = 0;
                snprintf(p.link, sizeof p.link, "%s", be->a2a_link);
                p.busbw_GBps = w.comm_bytes / (us * 1e3);
            } else if (is_a2a(id)) {
                /* CPU: all R in-process ranks copy in one thread: one memory-bound kernel */
                p.bytes = w.bytes * s->ranks;
                p.flops = 0;
            }
            trace_add(t, &p);
            double gbps = p.bytes / (us * 1e3), tflops = p.flops / (us * 1e6);
            double pct = p.flops > 0 && be->peak_bf16_flops > 0 ? 100 * p.flops / (us * 1e-6) / be->peak_bf16_flops
                         : p.flops == 0 && be->hbm_Bps > 0 ? 100 * p.bytes / (us * 1e-6) / be->hbm_Bps : -1;
            char pcts[16] = "n/a";
            if (pct >= 0) snprintf(pcts, sizeof pcts, "%.1f", pct);
            fprintf(out, "  %-16s %6d %6d %6d %5d %4d %5d %12.2f %9.2f %9.4f %7s\n", p.kernel, s->tokens,
                    s->hidden, s->ffn_hidden, s->experts, s->top_k, s->ranks, us, gbps, tflops, pcts);
        }
        be->close(be->ctx, h);
        fflush(out);
    }
    /* collectives in nccl-tests columns */
    int header = 0;
    for (int i = 0; i < t->n; i++) {
        const trace_point *p = &t->pts[i];
        if (!p->link[0]) continue;
        if (!header) {
            fprintf(out, "#\n# %-10s %12s %12s %6s %5s %10s %8s %8s\n", "op", "size(B)", "count", "type", "ranks",
                    "time(us)", "algbw", "busbw");
            header = 1;
        }
        fprintf(out, "  %-10s %12.0f %12.0f %6s %5d %10.2f %8.2f %8.2f\n", p->kernel, p->bytes, p->bytes / 2,
                "bf16", p->ranks, p->time_us, p->bytes / (p->time_us * 1e3), p->busbw_GBps);
    }
    return 0;
}
