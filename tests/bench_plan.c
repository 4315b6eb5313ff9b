/* bench_plan.c — how many layouts per second `plan` evaluates on one core.
 *
 * Workload: DeepSeek-V3 on 4096 H800 (the seed scenario), every factorization of 4096 into
 * tp x pp x ep x dp that is a valid layout (ep divides the 256 experts, tp divides the 128 heads,
 * pp <= 61 layers, attention-DP divides the 15360-sequence global batch), evaluated over and over
 * for about two seconds. Compute and links are priced through the cost model (plan_compute.h): the
 * scenario names no calibration here, so plan_evaluate builds the built-in roofline once and reuses
 * it from its cache. Goal: >= 1 million layouts per minute on one core. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim/plan/plan.h"
#include "sim/scenario/presets.h"

#define MAX_LAYOUTS 512

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static scenario seed_scenario(void) {
    scenario s;
    memset(&s, 0, sizeof s);
    preset_model("deepseek-v3", &s.model);
    preset_cluster("h800-8rail", &s.cluster);
    s.layout = (layout_cfg){.tp = 1, .pp = 16, .ep = 64, .dp = 4, .zero = 1, .micro_batch = 1,
                            .global_batch = 15360, .schedule = SCHED_DUALPIPE, .vpp = 1};
    s.routing.node_limit = 4;
    s.precision = (precision_cfg){DT_FP8, DT_FP8, DT_BF16, DT_FP32};
    s.reliability.gpu_mtbf_h = 26000;
    s.reliability.checkpoint.state_bytes = -1;
    s.reliability.checkpoint.write_min = 5;
    s.run.tokens = 15e12;
    return s;
}

int main(void) {
    scenario base = seed_scenario();
    int gpus = scn_gpus(&base);
    scenario layouts[MAX_LAYOUTS];
    int n = 0, all = 0;
    for (int tp = 1; tp <= gpus; tp *= 2)
        for (int pp = 1; tp * pp <= gpus; pp *= 2)
            for (int ep = 1; tp * pp * ep <= gpus; ep *= 2) {
                int dp = gpus / (tp * pp * ep);
                all++;
                if (base.model.experts % ep || base.model.heads % tp || pp > base.model.layers ||
                    base.layout.global_batch % (ep * dp))
                    continue;
                scenario s = base;
                s.layout.tp = tp; s.layout.pp = pp; s.layout.ep = ep; s.layout.dp = dp;
                s.layout.schedule = pp % 2 == 0 ? SCHED_DUALPIPE : SCHED_1F1B;
                if (n < MAX_LAYOUTS) layouts[n++] = s;
            }

    plan_result r;
    moe_error err;
    double sink = 0;
    long evals = 0;
    int fits = 0;
    for (int i = 0; i < n; i++) {
        if (plan_evaluate(&layouts[i], &r, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        fits += r.fits_memory;
    }
    double t0 = now_s(), t = t0;
    while (t - t0 < 2.0) {
        for (int i = 0; i < n; i++) {
            plan_evaluate(&layouts[i], &r, &err);
            sink += r.step_time_s;
        }
        evals += n;
        t = now_s();
    }
    double per_s = evals / (t - t0);
    printf("bench_plan: %d valid layouts of %d factorizations of %d GPUs (%d fit in memory), "
           "cost model: %s\n", n, all, gpus, fits, r.costmodel_source);
    printf("bench_plan: %ld evaluations in %.2f s: %.0f layouts/s, %.1f us/layout, %.3g layouts/min\n",
           evals, t - t0, per_s, 1e6 / per_s, 60.0 * per_s);
    printf("bench_plan: ratio to the goal of 1e6 layouts/min: %.1fx (checksum %.6g)\n",
           60.0 * per_s / 1e6, sink);
    return 0;
}
