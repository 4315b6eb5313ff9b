/* bench.h — `simcal bench`: time every MoE kernel of kernels/moe_kernels.h over a grid of shapes
 * and turn the timings into a calibration trace, printing nccl-tests-style tables on the way.
 *
 * Backends: the CPU references (this library; wall clock, median of repeated runs) and the GPU
 * kernels with CUDA events (tools/simcal.c, the only program linked with moesim_cuda, supplies that
 * backend through the same struct). The trace's provenance says which one measured it.
 */
#ifndef MOESIM_CALIB_BENCH_H
#define MOESIM_CALIB_BENCH_H

#include <stdio.h>

#include "calibration/trace.h"
#include "kernels/moe_kernels.h"
#include "sim/base/errors.h"

typedef struct {
    int n;
    moe_bench_shape shapes[256];
} bench_grid;

/* "small" (CPU-sized: minutes on 2 cores) or "full" (GPU-sized). EXIT_BADINPUT for other names. */
int bench_grid_make(const char *name, int gpu, bench_grid *g, moe_error *err);

typedef struct bench_backend {
    const char *name;                 /* "cpu", "gpu" */
    void *ctx;
    int (*open)(void *ctx, const moe_bench_shape *s, void **h);
    /* Time one launch of kernel `id` (microseconds). MOE_ENOTSUP: skip quietly (e.g. a2a, 1 GPU). */
    int (*time_us)(void *ctx, void *h, moe_kernel_id id, double *us);
    void (*close)(void *ctx, void *h);
    double peak_bf16_flops;           /* for "% of peak" columns; 0 = unknown (CPU) */
    double hbm_Bps;                   /* idem for memory-bound kernels */
    const char *a2a_link;             /* link class of the backend's all-to-all ("nvlink"); NULL:
                                         in-process copies (CPU), recorded as memory-bound points */
} bench_backend;

/* The CPU-reference backend (wall clock, CLOCK_MONOTONIC, median of runs lasting >= ~20 ms). */
bench_backend bench_backend_cpu(void);

/* Run the grid: print the kernel table and the all-to-all table (nccl-tests columns) to `out`,
 * append one point per (shape, kernel) to `t` (whose provenance the caller fills). */
int bench_run(const bench_grid *g, const bench_backend *be, trace *t, FILE *out, moe_error *err);

#endif
