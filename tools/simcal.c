/* simcal — the calibration pipeline's command line (calibration/README.md).
 *
 *   simcal bench [--out FILE] [--grid small|full] [--cpu]    time the MoE kernels -> trace
 *   simcal probe-host [--out FILE] [--gemm-out TRACE]        host overheads + dense GEMM table (GPU)
 *   simcal import-nccl-tests LOG... [--out FILE] [--link L]  nccl-tests logs -> trace
 *   simcal fit TRACE... --out MODEL [--base MODEL] [--tiles MODEL] [--source NAME] [--device NAME]
 *   simcal check [--models DIR] [--traces DIR] [--tol REL]   CI regression of committed models
 *
 * Exit codes: 0 ok, 1 runtime failure or drift, 2 bad input/usage.
 * This is the only program linked with the GPU kernels' library when CUDA exists, so the GPU
 * timing backend of `bench` and the host-overhead probe's entry live here (kernels/moe_kernels.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibration/bench.h"
#include "calibration/fit.h"
#include "calibration/host_probe.h"
#include "calibration/nccl_tests.h"
#include "calibration/trace.h"
#include "kernels/moe_kernels.h"
#include "sim/plan/costmodel.h"
#include "sim/base/cli_args.h"
#include "sim/base/errors.h"

static const char ABOUT[] =
    "The calibration pipeline (calibration/README.md): time the kernels, import nccl-tests logs, fit cost\n"
    "models (GSL nonlinear least squares) and check in CI that every committed model still refits.";

static const char EPILOG[] =
    "exit codes: 0 ok, 1 runtime failure or drift, 2 bad input or usage\n"
    "\n"
    "examples:\n"
    "  simcal bench --grid small --out calibration/traces/cpu-mine.json\n"
    "  simcal probe-host --out host-probe.json --gemm-out gemm-trace.json\n"
    "  simcal import-nccl-tests alltoall_perf.log --link rdma --out calibration/traces/a2a.json\n"
    "  simcal fit calibration/traces/a2a.json --base calibration/models/h800-published.json --out m.json\n"
    "  simcal check\n";

static const char BENCH_OPTIONS[] =
    "  -o, --out FILE       the trace to write (default trace.json)\n"
    "      --grid G         small or full shape grid (default small)\n"
    "      --cpu            time the CPU references even when a GPU exists\n"
    "  -j, --jobs N         accepted; kernels are timed one at a time\n"
    "  -q, --quiet          no nccl-tests-style tables on stdout\n";

static const char PROBE_OPTIONS[] =
    "  -o, --out FILE       the host-overhead file to write (default host-probe.json)\n"
    "      --gemm-out TRACE also write the dense GEMM table as a calibration trace (for simcal fit)\n"
    "  -j, --jobs N         accepted; everything is timed on GPU 0, one thing at a time\n"
    "  -q, --quiet          no tables on stdout\n";

static const char IMPORT_OPTIONS[] =
    "  -o, --out FILE       the trace to write (default nccl-trace.json)\n"
    "      --link L         the link class the logs measured: nvlink, rdma or pcie\n"
    "  -j, --jobs N         accepted; logs are read in one process\n"
    "  -q, --quiet          no tables on stdout\n";

static const char FIT_OPTIONS[] =
    "  -o, --out MODEL      the model JSON to write (required)\n"
    "      --base MODEL     start from this model (parameters the traces do not cover are kept)\n"
    "      --tiles MODEL    take the GEMM tile/wave structure from this fit of the same GPU architecture\n"
    "                       and fit only each precision's eff_max (few published points per GPU kind)\n"
    "      --source NAME    provenance: where the traces came from\n"
    "      --device NAME    provenance: the device measured\n"
    "  -j, --jobs N         accepted; fits run in one process\n"
    "  -q, --quiet          no fit log on stdout\n";

static const char CHECK_OPTIONS[] =
    "      --models DIR     the models to refit (default calibration/models)\n"
    "      --traces DIR     where their traces are (default: beside the models, ../traces)\n"
    "      --tol REL        relative tolerance of a refitted parameter, in (0, 1)\n"
    "  -o, --out PATH       accepted; check writes nothing\n"
    "  -j, --jobs N         accepted; models are refitted one at a time\n"
    "  -q, --quiet          no per-model log on stdout\n";

/* Where a command's tables go: stdout, or nowhere with --quiet. */
static FILE *log_stream(const cli_parser *p) {
    FILE *f = p->common.quiet ? fopen("/dev/null", "w") : NULL;
    return f ? f : stdout;
}
static void log_close(FILE *f) { if (f && f != stdout) fclose(f); }

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

static int gpu_provenance(trace_provenance *pv) {
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
    return 0;
}
#endif

/* ---- commands ------------------------------------------------------------------------------------- */

static int cmd_bench(cli_parser *p, int argc, char **argv) {
    enum { O_GRID = 256, O_CPU };
    static const struct option opts[] = {{"grid", required_argument, NULL, O_GRID}, {"cpu", no_argument, NULL, O_CPU},
                                         CLI_COMMON_OPTIONS};
    const char *grid = "small";
    int force_cpu = 0;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_GRID) grid = optarg;
        if (c == O_CPU) force_cpu = 1;
    }
    if (cli_positionals(p, argc, argv, 0, 0, "no arguments besides options")) return p->rc;
    const char *out = p->common.out ? p->common.out : "trace.json";
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
        if (gpu_provenance(&t.prov) != 0) {
            fprintf(stderr, "simcal bench: cannot query GPU 0\n");
            return EXIT_RUNTIME;
        }
        be.peak_bf16_flops = t.prov.peak_bf16_tflops * 1e12;
        be.hbm_Bps = t.prov.hbm_GBps * 1e9;
    }
#endif
    if (gpus == 0)
        fprintf(stderr, "simcal bench: no GPU%s: timing the CPU references (provenance kind \"cpu\")\n",
                force_cpu ? " used (--cpu)" : "");
    bench_grid g;
    if (bench_grid_make(grid, gpus > 0, &g, &err)) return die(&err);
    snprintf(t.prov.source, sizeof t.prov.source, "simcal bench --grid %s (%s)", grid, be.name);
    FILE *log = log_stream(p);
    int rc = bench_run(&g, &be, &t, log, &err);
    log_close(log);
    if (!rc) rc = trace_write(out, &t, &err);
    trace_free(&t);
    if (rc) return die(&err);
    fprintf(stderr, "simcal bench: wrote %s\n", out);
    return 0;
}

#ifdef MOESIM_HAVE_CUDA
/* The probe on GPU 0, then its files: the host-overhead file whenever the probe got as far as its
 * sections (a failed section is an "error" entry in it), the GEMM trace when a GEMM was timed. */
static int probe_host_gpu(const char *out, const char *gemm_out, FILE *log, moe_error *err) {
    trace_provenance pv;
    if (gpu_provenance(&pv) != 0) return moe_error_set(err, EXIT_RUNTIME, "probe-host: cannot query GPU 0");
    snprintf(pv.source, sizeof pv.source, "simcal probe-host");
    moe_host_probe_cfg cfg;
    host_probe_cfg_default(&cfg);
    moe_host_probe *r = calloc(1, sizeof *r);
    if (!r) return moe_error_set(err, EXIT_RUNTIME, "probe-host: out of memory");
    int st = moe_host_probe_run(0, &cfg, r), rc = 0;
    int measured = 0;
    for (int i = 0; i < MOE_PROBE_SECTIONS && st != MOE_EINVAL; i++) measured += r->status[i] == MOE_OK;
    if (measured) {
        host_probe_print(log, r, &cfg, pv.peak_bf16_tflops);
        cJSON *doc = host_probe_to_json(r, &cfg, &pv);
        rc = json_write_atomic(out, doc, err);
        cJSON_Delete(doc);
        if (!rc) fprintf(stderr, "simcal probe-host: wrote %s\n", out);
    }
    if (!rc && gemm_out && r->n_gemm > 0) {
        trace t;
        if (!(rc = host_probe_gemm_trace(r, &pv, &t, err))) rc = trace_write(gemm_out, &t, err);
        trace_free(&t);
        if (!rc) fprintf(stderr, "simcal probe-host: wrote %s\n", gemm_out);
    }
    if (!rc && st != MOE_OK)
        rc = moe_error_set(err, EXIT_RUNTIME, "probe-host: %s%s", moe_status_str(st),
                           measured ? " (see the sections in the output and the messages above)" : "; nothing written");
    else if (!rc && gemm_out && r->n_gemm == 0)
        rc = moe_error_set(err, EXIT_RUNTIME, "probe-host: no GEMM was timed: %s not written", gemm_out);
    free(r);
    return rc;
}
#endif

static int cmd_probe_host(cli_parser *p, int argc, char **argv) {
    enum { O_GEMM_OUT = 256 };
    static const struct option opts[] = {{"gemm-out", required_argument, NULL, O_GEMM_OUT}, CLI_COMMON_OPTIONS};
    const char *gemm_out = NULL;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_GEMM_OUT) gemm_out = optarg;
    }
    if (cli_positionals(p, argc, argv, 0, 0, "no arguments besides options")) return p->rc;
    const char *out = p->common.out ? p->common.out : "host-probe.json";
    if (moe_gpu_count() == 0) {
#ifdef MOESIM_HAVE_CUDA
        fprintf(stderr, "simcal probe-host: no GPU: the host-overhead probe needs one (nothing written)\n");
#else
        fprintf(stderr, "simcal probe-host: no GPU: this simcal was built without CUDA (nothing written)\n");
#endif
        return EXIT_RUNTIME;
    }
    moe_error err = { 0, "" };
    int rc = 0;
#ifdef MOESIM_HAVE_CUDA
    FILE *log = log_stream(p);
    rc = probe_host_gpu(out, gemm_out, log, &err);
    log_close(log);
#else
    (void)out, (void)gemm_out;
#endif
    return rc ? die(&err) : 0;
}

static int cmd_import(cli_parser *p, int argc, char **argv) {
    static const struct option opts[] = {{"link", required_argument, NULL, 256}, CLI_COMMON_OPTIONS};
    const char *link = NULL;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        link = optarg;
    }
    if (cli_positionals(p, argc, argv, 1, 64, "LOG... (1 to 64 nccl-tests logs)")) return p->rc;
    const char *out = p->common.out ? p->common.out : "nccl-trace.json";
    char **logs = argv + optind;
    int n = argc - optind;
    FILE *log_out = log_stream(p);
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
        fprintf(log_out, "# %s: %s_perf, %d ranks on %d node(s), %s, NCCL %s, busbw factor %.4f\n", logs[i],
                log.op, log.nranks, log.nnodes, log.device, log.nccl_version, f);
        fprintf(log_out, "# %12s %12s %6s %10s %8s %8s\n", "size(B)", "count", "type", "time(us)", "algbw", "busbw");
        for (int r = 0; r < log.n_rows; r++)
            fprintf(log_out, "  %12.0f %12.0f %6s %10.2f %8.2f %8.2f\n", log.rows[r].size_bytes, log.rows[r].count,
                    log.rows[r].type, log.rows[r].time_us[0], log.rows[r].algbw_GBps[0], log.rows[r].busbw_GBps[0]);
        fprintf(log_out, "# Avg bus bandwidth : %.4f\n", log.avg_busbw_GBps);
        rc = nccl_tests_append(&log, link, &t, &err);
        nt_log_free(&log);
    }
    log_close(log_out);
    if (!rc) rc = trace_write(out, &t, &err);
    trace_free(&t);
    if (rc) return die(&err);
    fprintf(stderr, "simcal import-nccl-tests: wrote %s\n", out);
    return 0;
}

static int cmd_fit(cli_parser *p, int argc, char **argv) {
    enum { O_BASE = 256, O_SOURCE, O_DEVICE, O_TILES };
    static const struct option opts[] = {{"base", required_argument, NULL, O_BASE},
                                         {"tiles", required_argument, NULL, O_TILES},
                                         {"source", required_argument, NULL, O_SOURCE},
                                         {"device", required_argument, NULL, O_DEVICE}, CLI_COMMON_OPTIONS};
    fit_options o = { 0 };
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_BASE) o.base_path = optarg;
        if (c == O_TILES) o.tiles_path = optarg;
        if (c == O_SOURCE) o.source = optarg;
        if (c == O_DEVICE) o.device = optarg;
    }
    if (cli_positionals(p, argc, argv, 1, 64, "TRACE... (1 to 64 traces)")) return p->rc;
    const char *out = p->common.out;
    if (!out) return cli_error(p, "--out MODEL is required (the model JSON to write)");
    o.trace_paths = (const char **)(argv + optind);
    o.n_traces = argc - optind;
    moe_error err = { 0, "" };
    FILE *log = log_stream(p);
    int rc = fit_write_model(&o, out, log, &err);
    log_close(log);
    if (rc) return die(&err);
    fprintf(stderr, "simcal fit: wrote %s\n", out);
    return 0;
}

static int cmd_check(cli_parser *p, int argc, char **argv) {
    enum { O_MODELS = 256, O_TRACES, O_TOL };
    static const struct option opts[] = {{"models", required_argument, NULL, O_MODELS},
                                         {"traces", required_argument, NULL, O_TRACES},
                                         {"tol", required_argument, NULL, O_TOL}, CLI_COMMON_OPTIONS};
    const char *models = "calibration/models", *traces = NULL;
    double tol = FIT_CHECK_REL_TOL;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_MODELS) models = optarg;
        if (c == O_TRACES) traces = optarg;
        if (c == O_TOL && cli_double_opt(p, optarg, 1e-12, 1 - 1e-12, &tol)) return p->rc;
    }
    if (cli_positionals(p, argc, argv, 0, 0, "no arguments besides options")) return p->rc;
    moe_error err = { 0, "" };
    FILE *log = log_stream(p);
    int rc = fit_check_models(models, traces, tol, log, &err);
    log_close(log);
    if (rc) return die(&err);
    if (!p->common.quiet) printf("simcal check: all models agree with their traces\n");
    return 0;
}

static const cli_command COMMANDS[] = {
    {"bench", cmd_bench, "[--out FILE] [--grid small|full] [--cpu]",
     "Time every kernel of kernels/ over a shape grid (CUDA events on a GPU, else the CPU references).",
     BENCH_OPTIONS},
    {"probe-host", cmd_probe_host, "[--out FILE] [--gemm-out TRACE]",
     "Measure on GPU 0 the host cost of kernel, CUDA-graph and cuBLAS launches and syncs, and a dense GEMM table.",
     PROBE_OPTIONS},
    {"import-nccl-tests", cmd_import, "LOG... [--out FILE] [--link nvlink|rdma|pcie]",
     "Turn all_reduce_perf / alltoall_perf / sendrecv_perf logs into a calibration trace.", IMPORT_OPTIONS},
    {"fit", cmd_fit, "TRACE... --out MODEL [--base MODEL] [--tiles MODEL] [--source NAME] [--device NAME]",
     "Fit cost models to traces and write a model JSON for the simulator.", FIT_OPTIONS},
    {"check", cmd_check, "[--models DIR] [--traces DIR] [--tol REL]",
     "Refit every committed model from its traces; exit 1 when a parameter or a trace drifted.", CHECK_OPTIONS},
    {NULL, NULL, NULL, NULL, NULL},
};

static const cli_tool SIMCAL = {"simcal", ABOUT, COMMANDS, EPILOG, NULL};

int main(int argc, char **argv) { return cli_main(&SIMCAL, argc, argv); }
