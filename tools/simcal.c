/* simcal — the calibration pipeline's command line (calibration/README.md).
 *
 *   simcal bench [--out FILE] [--grid small|full] [--cpu]    time the MoE kernels -> trace
 *   simcal import-nccl-tests LOG... [--out FILE] [--link L]  nccl-tests logs -> trace
 *   simcal fit TRACE... --out MODEL [--base MODEL] [--source NAME] [--device NAME]
 *   simcal check [--models DIR] [--traces DIR] [--tol REL]   CI regression of committed models
 *
 * Exit codes: 0 ok, 1 runtime failure or drift, 2 bad input/usage.
 * This is the only program linked with the GPU kernels' library when CUDA exists, so the GPU
 * timing backend of `bench` lives here (CUDA events through kernels/moe_kernels.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibration/bench.h"
#include "calibration/fit.h"
#include "calibration/nccl_tests.h"
#include "calibration/trace.h"
#include "kernels/moe_kernels.h"
#include "sim/plan/costmodel.h"
#include "sim/base/errors.h"

static int usage(FILE *f, int code) {
    fprintf(f,
            "usage: simcal bench [--out FILE] [--grid small|full] [--cpu]\n"
            "       simcal import-nccl-tests LOG... [--out FILE] [--link nvlink|rdma|pcie]\n"
            "       simcal fit TRACE... --out MODEL [--base MODEL] [--source NAME] [--device NAME]\n"
            "       simcal check [--models DIR] [--traces DIR] [--tol REL]\n"
            "\n"
            "bench   time every kernel of kernels/ over a shape grid (CUDA events on a GPU, the CPU references\n"
            "        otherwise, labelled \"cpu\"); nccl-tests-style tables; a trace JSON with provenance\n"
            "import-nccl-tests  turn all_reduce_perf / alltoall_perf / sendrecv_perf logs into a trace\n"
            "fit     fit cost models (GSL nonlinear least squares) and write a model JSON for the simulator\n"
            "check   refit every committed model from its traces; exit 1 when a parameter or a trace drifted\n"
            "\n"
            "exit codes: 0 ok, 1 runtime failure or drift, 2 bad input or usage\n"
            "\n"
            "examples:\n"
            "  simcal bench --grid small --out calibration/traces/cpu-mine.json\n"
            "  simcal import-nccl-tests alltoall_perf.log --link rdma --out calibration/traces/a2a.json\n"
            "  simcal fit calibration/traces/a2a.json --base calibration/models/h800-published.json --out m.json\n"
            "  simcal check\n");
    return code;
}

static int die(const moe_error *err) {
    fprintf(stderr, "simcal: %s\n", err->msg);
    return err->code ? err->code : EXIT_RUNTIME;
}

/* ---- GPU backend -------------------------------------------------------------------------------- */
#ifdef MOESIM_HAVE_CUDA
static int gpu_open(void *ctx, const moe_bench_shape *s, void **h) {
    (void)ctx;
    return moe_bench_gpu_create(s, 0, (moe_bench_gpu **)h);
}
static int gpu_time(void *ctx, void *h, moe_kernel_id id, double *us) {
    (void)ctx;
    float ms = 0;
    int rc = moe_bench_gpu_time(h, id, 5, 20, &ms);
    *us = 1e3 * (double)ms;
    return rc;
}
static void gpu_close(void *ctx, void *h) {
    (void)ctx;
    moe_bench_gpu_destroy(h);
}

/* Published dense BF16 peak and HBM bandwidth of the devices we know (REFERENCE.md §6). */
static void published_peaks(const char *name, double *bf16_tflops, double *hbm_GBps) {
    *bf16_tflops = 0;
    *hbm_GBps = 0;
    if (strstr(name, "H200")) { *bf16_tflops = 989; *hbm_GBps = 4800; }
    else if (strstr(name, "H100") && strstr(name, "PCIe")) { *bf16_tflops = 756; *hbm_GBps = 2000; }
    else if (strstr(name, "H100") || strstr(name, "H800")) { *bf16_tflops = 989; *hbm_GBps = 3350; }
}

static int gpu_provenance(trace_provenance *pv, bench_backend *be) {
    moe_gpu_info gi;
    if (moe_gpu_get_info(0, &gi) != MOE_OK) return -1;
    trace_provenance_defaults(pv, TRACE_KIND_GPU);
    snprintf(pv->device, sizeof pv->device, "%.95s", gi.name);
    pv->sm_count = gi.sm_count;
    pv->clock_mhz = gi.sm_clock_khz / 1000.0;
    snprintf(pv->driver, sizeof pv->driver, "%d.%d", gi.driver_version / 1000, (gi.driver_version % 1000) / 10);
    snprintf(pv->cuda, sizeof pv->cuda, "%d.%d", gi.runtime_version / 1000, (gi.runtime_version % 1000) / 10);
    snprintf(pv->cublas, sizeof pv->cublas, "%d", gi.cublas_version);
    snprintf(pv->nccl, sizeof pv->nccl, "%d.%d.%d", gi.nccl_version / 10000, (gi.nccl_version / 100) % 100,
             gi.nccl_version % 100);
    published_peaks(gi.name, &pv->peak_bf16_tflops, &pv->hbm_GBps);
    be->peak_bf16_flops = pv->peak_bf16_tflops * 1e12;
    be->hbm_Bps = pv->hbm_GBps * 1e9;
    return 0;
}
#endif

/* ---- commands ------------------------------------------------------------------------------------- */

static int cmd_bench(int argc, char **argv) {
    const char *out = "trace.json", *grid = "small";
    int force_cpu = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--grid") && i + 1 < argc) grid = argv[++i];
        else if (!strcmp(argv[i], "--cpu")) force_cpu = 1;
        else {
            fprintf(stderr, "simcal bench: unknown argument '%s'\n", argv[i]);
            return usage(stderr, EXIT_BADINPUT);
        }
    }
    moe_error err = { 0, "" };
    trace t;
    trace_init(&t);
    bench_backend be = bench_backend_cpu();
    int gpus = force_cpu ? 0 : moe_gpu_count();
    trace_provenance_defaults(&t.prov, TRACE_KIND_CPU);
    snprintf(t.prov.device, sizeof t.prov.device, "CPU references");
#ifdef MOESIM_HAVE_CUDA
    if (gpus > 0) {
        be = (bench_backend){ .name = "gpu", .open = gpu_open, .time_us = gpu_time, .close = gpu_close,
                              .a2a_link = gpus >= 2 ? "nvlink" : NULL };
        if (gpu_provenance(&t.prov, &be) != 0) {
            fprintf(stderr, "simcal bench: cannot query GPU 0\n");
            return EXIT_RUNTIME;
        }
    }
#endif
    if (gpus == 0)
        fprintf(stderr, "simcal bench: no GPU%s: timing the CPU references (provenance kind \"cpu\")\n",
                force_cpu ? " used (--cpu)" : "");
    bench_grid g;
    if (bench_grid_make(grid, gpus > 0, &g, &err)) return die(&err);
    snprintf(t.prov.source, sizeof t.prov.source, "simcal bench --grid %s (%s)", grid, be.name);
    int rc = bench_run(&g, &be, &t, stdout, &err);
    if (!rc) rc = trace_write(out, &t, &err);
    trace_free(&t);
    if (rc) return die(&err);
    fprintf(stderr, "simcal bench: wrote %s\n", out);
    return 0;
}

static int cmd_import(int argc, char **argv) {
    const char *out = "nccl-trace.json", *link = NULL;
    const char *logs[64];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--link") && i + 1 < argc) link = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "simcal import-nccl-tests: unknown option '%s'\n", argv[i]);
            return usage(stderr, EXIT_BADINPUT);
        } else if (n < 64) logs[n++] = argv[i];
    }
    if (n == 0) return usage(stderr, EXIT_BADINPUT);
    moe_error err = { 0, "" };
    trace t;
    trace_init(&t);
    int rc = 0;
    if (link && cm_link_class_parse(link) < 0)
        rc = moe_error_input(&err, NULL, "--link", link, "nvlink, rdma or pcie");
    for (int i = 0; i < n && !rc; i++) {
        nt_log log;
        if ((rc = nccl_tests_read(logs[i], &log, &err))) break;
        double f = nccl_busbw_factor(log.op, log.nranks);
        printf("# %s: %s_perf, %d ranks on %d node(s), %s, NCCL %s, busbw factor %.4f\n", logs[i], log.op,
               log.nranks, log.nnodes, log.device, log.nccl_version, f);
        printf("# %12s %12s %6s %10s %8s %8s\n", "size(B)", "count", "type", "time(us)", "algbw", "busbw");
        for (int r = 0; r < log.n_rows; r++)
            printf("  %12.0f %12.0f %6s %10.2f %8.2f %8.2f\n", log.rows[r].size_bytes, log.rows[r].count,
                   log.rows[r].type, log.rows[r].time_us[0], log.rows[r].algbw_GBps[0], log.rows[r].busbw_GBps[0]);
        printf("# Avg bus bandwidth : %.4f\n", log.avg_busbw_GBps);
        rc = nccl_tests_append(&log, link, &t, &err);
        nt_log_free(&log);
    }
    if (!rc) rc = trace_write(out, &t, &err);
    trace_free(&t);
    if (rc) return die(&err);
    fprintf(stderr, "simcal import-nccl-tests: wrote %s\n", out);
    return 0;
}

static int cmd_fit(int argc, char **argv) {
    const char *out = NULL;
    const char *traces[64];
    fit_options o = { 0 };
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--base") && i + 1 < argc) o.base_path = argv[++i];
        else if (!strcmp(argv[i], "--source") && i + 1 < argc) o.source = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) o.device = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "simcal fit: unknown option '%s'\n", argv[i]);
            return usage(stderr, EXIT_BADINPUT);
        } else if (n < 64) traces[n++] = argv[i];
    }
    if (!out || n == 0) return usage(stderr, EXIT_BADINPUT);
    o.trace_paths = traces;
    o.n_traces = n;
    moe_error err = { 0, "" };
    if (fit_write_model(&o, out, stdout, &err)) return die(&err);
    fprintf(stderr, "simcal fit: wrote %s\n", out);
    return 0;
}

static int cmd_check(int argc, char **argv) {
    const char *models = "calibration/models", *traces = NULL;
    double tol = FIT_CHECK_REL_TOL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--traces") && i + 1 < argc) traces = argv[++i];
        else if (!strcmp(argv[i], "--tol") && i + 1 < argc) {
            char *end;
            tol = strtod(argv[++i], &end);
            if (*end || tol <= 0 || tol >= 1) {
                moe_error err;
                moe_error_input(&err, NULL, "--tol", argv[i], "a relative tolerance in (0, 1)");
                return die(&err);
            }
        } else {
            fprintf(stderr, "simcal check: unknown argument '%s'\n", argv[i]);
            return usage(stderr, EXIT_BADINPUT);
        }
    }
    moe_error err = { 0, "" };
    int rc = fit_check_models(models, traces, tol, stdout, &err);
    if (rc) return die(&err);
    printf("simcal check: all models agree with their traces\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(stderr, EXIT_BADINPUT);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "import-nccl-tests")) return cmd_import(argc - 2, argv + 2);
    if (!strcmp(cmd, "fit")) return cmd_fit(argc - 2, argv + 2);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) return usage(stdout, 0);
    static const char *const cmds[] = { "bench", "import-nccl-tests", "fit", "check", NULL };
    const char *hint = moe_did_you_mean(cmd, cmds);
    fprintf(stderr, "simcal: unknown command '%s'%s%s%s\n", cmd, hint ? " (did you mean '" : "", hint ? hint : "",
            hint ? "'?)" : "");
    return usage(stderr, EXIT_BADINPUT);
}
