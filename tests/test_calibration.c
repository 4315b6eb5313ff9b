/* test_calibration.c — traces, nccl-tests import, GSL fits and the `simcal check` regression.
 *
 * Truths: parameters planted in synthetic traces (GSL Gaussian noise, fixed seed); the numbers printed
 * in the sample nccl-tests logs (hand-read rows, and the algbw/busbw definitions of nccl-tests);
 * the committed models (check passes) and deliberately perturbed copies (check fails). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "calibration/fit.h"
#include "calibration/host_probe.h"
#include "calibration/nccl_tests.h"
#include "calibration/trace.h"
#include "sim/plan/costmodel.h"

#define NCCL_DIR "tests/data/nccl/"

static char tmpdir[256];

static int setup_tmp(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/moesim_calib_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static double num_at(const cJSON *root, const char *sec, const char *key) {
    const cJSON *o = cJSON_GetObjectItem(root, sec);
    assert_non_null(o);
    const cJSON *v = cJSON_GetObjectItem(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* ---- fitting recovers planted parameters --------------------------------------------------------- */

/* Truth: a GPU-like device with 989 TFLOP/s peak; GEMMs at eff_max 0.70, operand bandwidth 2.5 TB/s,
 * 4 us launch; memory kernels at 2.8 TB/s + 2.5 us; an alltoall at alpha 20 us, beta 150 GB/s.
 * 2% multiplicative Gaussian noise (mt19937, seed 42). */
static void test_fit_recovers_planted_parameters(void **state) {
    (void)state;
    const double peak = 989e12, eff = 0.70, op_bw = 2.5e12, launch = 4e-6;
    const double mem_bw = 2.8e12, mem_launch = 2.5e-6, alpha = 20e-6, beta = 150e9;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    trace t;
    trace_init(&t);
    trace_provenance_defaults(&t.prov, TRACE_KIND_GPU);
    snprintf(t.prov.device, sizeof t.prov.device, "synthetic");
    t.prov.peak_bf16_tflops = 989;
    static const double M[] = { 16, 64, 256, 1024, 4096, 16384 }, NK[] = { 1024, 2048, 4096, 7168 };
    for (size_t a = 0; a < 6; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t c = 0; c < 4; c++) {
                trace_point p = { 0 };
                snprintf(p.kernel, sizeof p.kernel, "gemm");
                snprintf(p.dtype, sizeof p.dtype, "bf16");
                double m = M[a], n = NK[b], k = NK[c];
                trace_point_set_dim(&p, "m", m);
                trace_point_set_dim(&p, "n", n);
                trace_point_set_dim(&p, "k", k);
                p.flops = 2 * m * n * k;
                p.bytes = 2 * (m * k + k * n + m * n);
                p.ranks = 1;
                double ts = launch + p.flops / (peak * eff) + p.bytes / op_bw;
                p.time_us = 1e6 * ts * (1 + gsl_ran_gaussian(rng, 0.02));
                assert_non_null(trace_add(&t, &p));
            }
    for (int i = 0; i < 24; i++) {
        trace_point p = { 0 };
        snprintf(p.kernel, sizeof p.kernel, "permute");
        p.bytes = 4096.0 * pow(2.0, i);
        trace_point_set_dim(&p, "bytes", p.bytes);
        p.ranks = 1;
        p.time_us = 1e6 * (mem_launch + p.bytes / mem_bw) * (1 + gsl_ran_gaussian(rng, 0.02));
        assert_non_null(trace_add(&t, &p));
    }
    for (int i = 0; i < 24; i++) {
        trace_point p = { 0 };
        snprintf(p.kernel, sizeof p.kernel, "alltoall");
        snprintf(p.link, sizeof p.link, "nvlink");
        p.ranks = 8;
        p.bytes = 1024.0 * pow(2.0, i);
        trace_point_set_dim(&p, "size", p.bytes);
        p.time_us = 1e6 * (alpha + p.bytes * 7.0 / 8.0 / beta) * (1 + gsl_ran_gaussian(rng, 0.02));
        assert_non_null(trace_add(&t, &p));
    }
    gsl_rng_free(rng);
    char path[320];
    snprintf(path, sizeof path, "%s/synthetic.json", tmpdir);
    moe_error err = { 0, "" };
    assert_int_equal(trace_write(path, &t, &err), 0);
    trace_free(&t);

    const char *paths[1] = { path };
    fit_options o = { paths, 1, NULL, "synthetic", NULL, NULL };
    cJSON *m = NULL;
    int rc = fit_build_model(&o, &m, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    /* tolerances: 2% noise on 96 GEMM points resolves eff_max to ~1%, the launch (a small part of
     * every point but the tiniest) to ~10% */
    assert_float_equal(num_at(m, "gemm", "eff_max"), eff, 0.02 * eff);
    assert_float_equal(num_at(m, "gemm", "operand_GBps"), op_bw / 1e9, 0.05 * op_bw / 1e9);
    assert_float_equal(num_at(m, "gemm", "launch_us"), launch * 1e6, 0.15 * launch * 1e6);
    assert_float_equal(num_at(m, "memory", "GBps"), mem_bw / 1e9, 0.03 * mem_bw / 1e9);
    assert_float_equal(num_at(m, "memory", "launch_us"), mem_launch * 1e6, 0.05 * mem_launch * 1e6);
    const cJSON *coll = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "collectives"), 0);
    assert_non_null(coll);
    assert_float_equal(cJSON_GetObjectItem(coll, "GBps")->valuedouble, beta / 1e9, 0.03 * beta / 1e9);
    assert_float_equal(cJSON_GetObjectItem(coll, "alpha_us")->valuedouble, alpha * 1e6, 0.05 * alpha * 1e6);
    /* the standard errors are honest: the truth lies within 4 of them, and they are not zero */
    const cJSON *se = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "gemm"), "stderr");
    double se_eff = cJSON_GetObjectItem(se, "eff_max")->valuedouble;
    assert_true(se_eff > 0);
    assert_true(fabs(num_at(m, "gemm", "eff_max") - eff) < 4 * se_eff);
    /* residual statistics reflect the planted 2% noise */
    double rms = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "gemm"), "fit"), "rms_rel_err")->valuedouble;
    assert_true(rms > 0.012 && rms < 0.03);
    /* links.nvlink is taken from the alltoall fit */
    assert_float_equal(num_at(cJSON_GetObjectItem(m, "links"), "nvlink", "GBps"), beta / 1e9, 0.03 * beta / 1e9);
    cJSON_Delete(m);
}

/* fit_terms on an exact straight line: the answer to rounding, and too few points is refused. */
static void test_fit_terms_exact_and_underdetermined(void **state) {
    (void)state;
    fit_term_kind kind[2] = { TERM_CONST, TERM_RATE };
    double x[10], y[5];
    for (int i = 0; i < 5; i++) {
        x[2 * i] = 0;
        x[2 * i + 1] = 1e6 * (i + 1);
        y[i] = 1e-5 + x[2 * i + 1] / 1e10;
    }
    fit_result r;
    moe_error err;
    assert_int_equal(fit_terms("line", 5, 2, kind, x, y, &r, &err), 0);
    assert_float_equal(r.p[0], 1e-5, 1e-12);
    assert_float_equal(r.p[1], 1e10, 1e3);
    assert_true(r.max_rel_err < 1e-8);
    assert_int_not_equal(fit_terms("two points", 2, 2, kind, x, y, &r, &err), 0);
    assert_non_null(strstr(err.msg, "two points"));
}

/* ---- nccl-tests parser -------------------------------------------------------------------------------- */

static void test_nccl_parser_reads_the_table(void **state) {
    (void)state;
    nt_log log;
    moe_error err = { 0, "" };
    assert_int_equal(nccl_tests_read(NCCL_DIR "h100-8gpu-all_reduce_perf.log", &log, &err), 0);
    assert_string_equal(log.op, "all_reduce");
    assert_int_equal(log.nranks, 8);
    assert_int_equal(log.nnodes, 1);
    assert_string_equal(log.device, "NVIDIA H100 80GB HBM3");
    assert_string_equal(log.nccl_version, "2.21.5");
    assert_int_equal(log.n_rows, 31);   /* 8 B .. 8 GiB, factor 2 */
    assert_float_equal(log.avg_busbw_GBps, 130.7860, 1e-9);
    /* first row: "8  2  float  sum  -1  10.88  0.00  0.00  0  11.16  0.00  0.00  0" */
    assert_float_equal(log.rows[0].size_bytes, 8, 0);
    assert_float_equal(log.rows[0].count, 2, 0);
    assert_string_equal(log.rows[0].type, "float");
    assert_string_equal(log.rows[0].redop, "sum");
    assert_float_equal(log.rows[0].time_us[0], 10.88, 1e-12);
    assert_float_equal(log.rows[0].time_us[1], 11.16, 1e-12);
    /* 1 MiB: "23.99  43.71  76.49 ... 23.90  43.87  76.78" */
    assert_float_equal(log.rows[17].size_bytes, 1048576, 0);
    assert_float_equal(log.rows[17].time_us[0], 23.99, 1e-12);
    assert_float_equal(log.rows[17].algbw_GBps[0], 43.71, 1e-12);
    assert_float_equal(log.rows[17].busbw_GBps[0], 76.49, 1e-12);
    assert_float_equal(log.rows[17].busbw_GBps[1], 76.78, 1e-12);
    /* 8 GiB: "41147.3  208.76  365.33 ... 41782.0  205.59  359.78"; and busbw = algbw x 2(n-1)/n */
    const nt_row *big = &log.rows[30];
    assert_float_equal(big->size_bytes, 8589934592.0, 0);
    assert_float_equal(big->time_us[0], 41147.3, 1e-9);
    assert_float_equal(big->algbw_GBps[0], 208.76, 1e-12);
    assert_float_equal(big->busbw_GBps[0], 365.33, 1e-12);
    assert_float_equal(big->busbw_GBps[0], big->algbw_GBps[0] * 2 * 7 / 8.0, 0.01);
    assert_float_equal(big->time_us[1], 41782.0, 1e-9);
    assert_int_equal(big->line, 48);   /* grep -n: the 48th line of the log */
    nt_log_free(&log);

    /* 2-node alltoall: 16 ranks on two hosts (rank lines), NCCL INFO lines skipped, link rdma */
    assert_int_equal(nccl_tests_read(NCCL_DIR "h800-16gpu-2node-alltoall_perf.log", &log, &err), 0);
    assert_string_equal(log.op, "alltoall");
    assert_int_equal(log.nranks, 16);
    assert_int_equal(log.nnodes, 2);
    assert_string_equal(log.hosts, "h800-a031,h800-a032");
    assert_float_equal(nccl_busbw_factor(log.op, log.nranks), 15.0 / 16.0, 1e-15);
    const nt_row *last = &log.rows[log.n_rows - 1];
    assert_float_equal(last->size_bytes, 4294967296.0, 0);
    assert_float_equal(last->time_us[0], 87675.2, 1e-9);
    assert_float_equal(last->busbw_GBps[0], 45.93, 1e-12);
    trace t;
    trace_init(&t);
    assert_int_equal(nccl_tests_append(&log, NULL, &t, &err), 0);
    assert_int_equal(t.n, 2 * log.n_rows);
    assert_string_equal(t.pts[0].link, "rdma");
    assert_int_equal(t.pts[0].ranks, 16);
    assert_float_equal(t.pts[t.n - 2].time_us, 87675.2, 1e-9);   /* out-of-place point of the last row */
    assert_float_equal(t.pts[t.n - 1].time_us, 88411.6, 1e-9);   /* in-place */
    trace_free(&t);
    nt_log_free(&log);
}

/* Alpha-beta over each sample log: beta (bus bandwidth) within 10% of the log's large-message busbw
 * (mean out-of-place busbw of the four largest sizes, read from the table). */
static void test_alpha_beta_matches_large_message_busbw(void **state) {
    (void)state;
    static const char *logs[] = { "h100-8gpu-all_reduce_perf.log", "h800-8gpu-alltoall_perf.log",
                                  "h800-8gpu-sendrecv_perf.log", "h800-16gpu-2node-alltoall_perf.log" };
    for (size_t i = 0; i < 4; i++) {
        char lp[256], tp[320];
        snprintf(lp, sizeof lp, NCCL_DIR "%s", logs[i]);
        snprintf(tp, sizeof tp, "%s/t%zu.json", tmpdir, i);
        nt_log log;
        moe_error err = { 0, "" };
        assert_int_equal(nccl_tests_read(lp, &log, &err), 0);
        double big = 0;
        for (int r = log.n_rows - 4; r < log.n_rows; r++) big += log.rows[r].busbw_GBps[0] / 4;
        trace t;
        trace_init(&t);
        assert_int_equal(nccl_tests_append(&log, NULL, &t, &err), 0);
        assert_int_equal(trace_write(tp, &t, &err), 0);
        trace_free(&t);
        nt_log_free(&log);
        const char *paths[1] = { tp };
        fit_options o = { paths, 1, "calibration/models/h800-published.json", "x", NULL, NULL };
        cJSON *m = NULL;
        int rc = fit_build_model(&o, &m, NULL, &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        assert_int_equal(rc, 0);
        double beta = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "collectives"), 0), "GBps")->valuedouble;
        fprintf(stderr, "  %s: beta %.1f GB/s vs large-message busbw %.1f GB/s (%+.1f%%)\n", logs[i], beta, big,
                100 * (beta - big) / big);
        assert_true(fabs(beta - big) / big < 0.10);
        assert_false(cJSON_IsTrue(cJSON_GetObjectItem(m, "measured")));   /* sections from the base */
        cJSON_Delete(m);
    }
}

static const char *GOOD_HEAD =
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";

static void expect_bad_log(const char *name, const char *text, const char *where, const char *what) {
    char path[320];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    write_text(path, text);
    nt_log log;
    moe_error err = { 0, "" };
    int rc = nccl_tests_read(path, &log, &err);
    if (rc != EXIT_BADINPUT || !strstr(err.msg, path) || !strstr(err.msg, where) || !strstr(err.msg, what))
        fprintf(stderr, "unexpected for %s: rc %d, %s\n", name, rc, err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, where));
    assert_non_null(strstr(err.msg, what));
}

static void test_malformed_logs_are_rejected(void **state) {
    (void)state;
    char buf[2048];
    /* a good two-row log parses (control) */
    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n"
             "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n");
    char path[320];
    snprintf(path, sizeof path, "%s/all_reduce_ok.log", tmpdir);
    write_text(path, buf);
    nt_log log;
    moe_error err = { 0, "" };
    assert_int_equal(nccl_tests_read(path, &log, &err), 0);
    assert_int_equal(log.nranks, 8);
    nt_log_free(&log);

    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "     1048576        262144     float     sum      -1    20.00   52.43\n");
    expect_bad_log("all_reduce_truncated.log", buf, "line 3", "13 columns");
    snprintf(buf, sizeof buf, "%s",
             "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n");
    expect_bad_log("all_reduce_noheader.log", buf, "line 1", "column header");
    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "     1048576        262144     float     sum      -1    20.00   52.43   99.00      0    20.00   52.43   91.75      0\n");
    expect_bad_log("all_reduce_busbw.log", buf, "line 3", "busbw = algbw x 1.7500");
    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "     1048576        262144     float     sum      -1    20.00   52.43   91.75      3    20.00   52.43   91.75      0\n");
    expect_bad_log("all_reduce_wrong.log", buf, "line 3", "#wrong = 0");
    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "     1048576        262144     float     sum      -1    fast   52.43   91.75      0    20.00   52.43   91.75      0\n");
    expect_bad_log("all_reduce_nan.log", buf, "line 3", "a number in column 6");
    snprintf(buf, sizeof buf, "%s%s", GOOD_HEAD,
             "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n");
    expect_bad_log("mystery.log", buf, "line 1", "Collective test starting");
    /* rank counts out of range: 2^31 threads, and a product over the bound (int overflow before) */
    const char *row = "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0\n";
    const char *hdr = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    snprintf(buf, sizeof buf, "# nThread 2147483648 nGpus 8\n%s%s", hdr, row);
    expect_bad_log("all_reduce_threads.log", buf, "line 1", "got 2147483648");
    snprintf(buf, sizeof buf, "# nThread 1024 nGpus 2048\n%s%s", hdr, row);
    expect_bad_log("all_reduce_ranks.log", buf, "line 1", "got 2048; expected \"# nThread T nGpus G\"");
    snprintf(buf, sizeof buf, "# nThread 0 nGpus 8\n%s%s", hdr, row);
    expect_bad_log("all_reduce_nothreads.log", buf, "line 1", "got 0");
}

/* ---- traces --------------------------------------------------------------------------------------------- */

static void expect_bad_trace(const char *text, const char *path_in_msg, const char *what) {
    char path[320];
    snprintf(path, sizeof path, "%s/bad_trace.json", tmpdir);
    write_text(path, text);
    trace t;
    moe_error err = { 0, "" };
    int rc = trace_read(path, &t, &err);
    if (rc != EXIT_BADINPUT || !strstr(err.msg, path_in_msg) || !strstr(err.msg, what))
        fprintf(stderr, "unexpected: rc %d, %s\n", rc, err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, path_in_msg));
    assert_non_null(strstr(err.msg, what));
}

#define PROV "\"provenance\":{\"kind\":\"cpu\",\"device\":\"x\",\"driver\":\"n/a\",\"cuda\":\"n/a\"," \
             "\"cublas\":\"n/a\",\"nccl\":\"n/a\",\"host\":\"h\",\"date\":\"2025-01-01T00:00:00Z\",\"git\":\"g\"}"
#define PT_OK "{\"kernel\":\"permute\",\"shape\":{\"tokens\":4},\"time_us\":1.5,\"bytes\":100,\"flops\":0}"

static void test_malformed_traces_are_rejected(void **state) {
    (void)state;
    char path[320];
    snprintf(path, sizeof path, "%s/good_trace.json", tmpdir);
    write_text(path, "{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[" PT_OK "]}");
    trace t;
    moe_error err = { 0, "" };
    assert_int_equal(trace_read(path, &t, &err), 0);
    assert_int_equal(t.n, 1);
    assert_float_equal(trace_point_dim(&t.pts[0], "tokens", 0), 4, 0);
    trace_free(&t);

    expect_bad_trace("{\"format\":\"moesim-trace/2\"," PROV ",\"points\":[" PT_OK "]}", "format", "moesim-trace/1");
    /* an SM count beyond an int (the fuzzer's 1.3e42: a double-to-int overflow, UBSan) or not whole */
#define PROV_SM(n) "\"provenance\":{\"kind\":\"cpu\",\"device\":\"x\",\"driver\":\"n/a\",\"cuda\":\"n/a\"," \
                   "\"cublas\":\"n/a\",\"nccl\":\"n/a\",\"host\":\"h\",\"date\":\"2025-01-01T00:00:00Z\",\"git\":\"g\"," \
                   "\"sm_count\":" n "}"
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV_SM("1.32222e+42") ",\"points\":[" PT_OK "]}",
                     "provenance.sm_count", "a whole number of SMs");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV_SM("13.5") ",\"points\":[" PT_OK "]}",
                     "provenance.sm_count", "got 13.5");
#undef PROV_SM
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[" PT_OK ","
                     "{\"kernel\":\"permute\",\"shape\":{},\"time_us\":-1,\"bytes\":100,\"flops\":0}]}",
                     "points[1].time_us", "a positive number");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[]}", "points", "non-empty array");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":["
                     "{\"kernel\":\"alltoall\",\"shape\":{},\"time_us\":5,\"bytes\":100,\"flops\":0,\"link\":\"nvlink\"}]}",
                     "points[0].ranks", "at least 2");
    expect_bad_trace("{\"format\":\"moesim-trace/1\",\"provenance\":{\"kind\":\"tpu\"},\"points\":[" PT_OK "]}",
                     "provenance.kind", "\"gpu\", \"cpu\", \"nccl-tests\" or \"published\"");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\n\"points\":[" PT_OK ",]}", "line 2", "valid JSON");
    /* strict JSON: text after the document, a key twice, numbers outside the grammar */
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[" PT_OK "]}\nfitted: yes", "line 2",
                     "trailing");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[" PT_OK "],\"points\":[]}", "points",
                     "a second time");
    expect_bad_trace("{\"format\":\"moesim-trace/1\"," PROV ",\"points\":[{\"kernel\":\"permute\",\"shape\":{},"
                     "\"time_us\":1.,\"bytes\":100,\"flops\":0}]}",
                     "points[0].time_us", "JSON number");
}

/* ---- the CI regression ------------------------------------------------------------------------------------ */

static void test_check_passes_on_committed_models(void **state) {
    (void)state;
    FILE *devnull = fopen("/dev/null", "w");
    moe_error err = { 0, "" };
    int rc = fit_check_models("calibration/models", NULL, FIT_CHECK_REL_TOL, devnull, &err);
    fclose(devnull);
    if (rc) {   /* show the report on failure */
        fit_check_models("calibration/models", NULL, FIT_CHECK_REL_TOL, stderr, &err);
        fprintf(stderr, "%s\n", err.msg);
    }
    assert_int_equal(rc, 0);
}

/* Copy `src` into dir/name, multiplying the number at section.key by `factor`. */
static void copy_perturbed(const char *src, const char *dir, const char *name, const char *section,
                           const char *key, double factor) {
    moe_error rerr = {0};
    char *text = read_file_text(src, NULL, &rerr);
    assert_non_null(text);
    cJSON *m = cJSON_Parse(text);
    free(text);
    assert_non_null(m);
    cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(m, section), key);
    assert_true(cJSON_IsNumber(v));
    cJSON_SetNumberValue(v, v->valuedouble * factor);
    char out[400];
    snprintf(out, sizeof out, "%s/%s", dir, name);
    moe_error err;
    assert_int_equal(json_write_atomic(out, m, &err), 0);
    cJSON_Delete(m);
}

static int run_simcal_check(const char *models_dir) {
    const char *bin = getenv("MOESIM_BIN");
    char exe[512];
    snprintf(exe, sizeof exe, "%s/simcal", bin ? bin : "build/tools");
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execl(exe, exe, "check", "--models", models_dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_check_fails_on_perturbed_model(void **state) {
    (void)state;
    char dir[320];
    snprintf(dir, sizeof dir, "%s/models", tmpdir);
    mkdir(dir, 0755);
    /* unperturbed copy passes (control), then a 2% change of one fitted parameter must fail */
    copy_perturbed("calibration/models/cpu-measured.json", dir, "cpu.json", "gemm", "eff_max", 1.0);
    FILE *devnull = fopen("/dev/null", "w");
    moe_error err = { 0, "" };
    assert_int_equal(fit_check_models(dir, NULL, FIT_CHECK_REL_TOL, devnull, &err), 0);
    copy_perturbed("calibration/models/cpu-measured.json", dir, "cpu.json", "gemm", "eff_max", 1.02);
    assert_int_equal(fit_check_models(dir, NULL, FIT_CHECK_REL_TOL, devnull, &err), EXIT_RUNTIME);
    /* the same through the command line: exit code 1 */
    assert_int_equal(run_simcal_check(dir), 1);
    /* the comm model: a perturbed link bandwidth fails too */
    char old[400];
    snprintf(old, sizeof old, "%s/cpu.json", dir);
    remove(old);
    copy_perturbed("calibration/models/h800-nccl-samples.json", dir, "comm.json", "gemm", "eff_max", 1.0);
    cJSON *m = NULL;
    {
        char p[400];
        snprintf(p, sizeof p, "%s/comm.json", dir);
        moe_error rerr = {0};
        char *text = read_file_text(p, NULL, &rerr);
        m = cJSON_Parse(text);
        free(text);
        cJSON *rd = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "links"), "rdma");
        cJSON *g = cJSON_GetObjectItem(rd, "GBps");
        cJSON_SetNumberValue(g, g->valuedouble * 0.97);
        assert_int_equal(json_write_atomic(p, m, &err), 0);
        cJSON_Delete(m);
    }
    assert_int_equal(fit_check_models(dir, NULL, FIT_CHECK_REL_TOL, devnull, &err), EXIT_RUNTIME);
    fclose(devnull);
}

static void test_check_fails_on_drifted_trace(void **state) {
    (void)state;
    /* a trace re-measured without refitting: its hash no longer matches the model's record */
    char tdir[320], mdir[320];
    snprintf(tdir, sizeof tdir, "%s/traces", tmpdir);
    snprintf(mdir, sizeof mdir, "%s/models2", tmpdir);
    mkdir(tdir, 0755);
    mkdir(mdir, 0755);
    copy_perturbed("calibration/models/h800-nccl-samples.json", mdir, "comm.json", "gemm", "eff_max", 1.0);
    trace t;
    moe_error err = { 0, "" };
    assert_int_equal(trace_read("calibration/traces/nccl-samples-h800.json", &t, &err), 0);
    t.pts[t.n - 1].time_us *= 1.10;   /* one point 10% slower */
    char tp[400];
    snprintf(tp, sizeof tp, "%s/nccl-samples-h800.json", tdir);
    assert_int_equal(trace_write(tp, &t, &err), 0);
    trace_free(&t);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(fit_check_models(mdir, tdir, FIT_CHECK_REL_TOL, devnull, &err), EXIT_RUNTIME);
    fclose(devnull);
}

/* ---- the host probe's files ----------------------------------------------------------------------------- */

/* Truths: the work of one GEMM by hand (4096 x 14336 x 4096: 2mnk = 481036337152 FLOPs; BF16 operands
 * and output, 2(mk + kn + mn) = 2^28 bytes); times planted from the committed H100 model's BF16 GEMM
 * (tile/wave form) at every shape of the table. The trace reads back, and `simcal fit` takes all of its
 * points as shaped GEMMs: the tile/wave form is fitted to them and reproduces the planted times. */
static void test_host_probe_gemm_table_is_a_trace(void **state) {
    (void)state;
    moe_gemm_timing one = { { 4096, 14336, 4096 }, 1000.0 };
    trace_point q = host_probe_gemm_point(&one);
    assert_string_equal(q.kernel, "dense_gemm");
    assert_string_equal(q.dtype, "bf16");
    assert_true(q.flops == 481036337152.0);
    assert_true(q.bytes == 268435456.0);
    assert_true(trace_point_dim(&q, "m", 0) == 4096 && trace_point_dim(&q, "n", 0) == 14336 &&
                trace_point_dim(&q, "k", 0) == 4096);
    assert_true(q.time_us == 1000.0 && q.ranks == 1);

    moe_error err = { 0, "" };
    costmodel cm;
    assert_int_equal(costmodel_load("calibration/models/h100-published.json", &cm, &err), 0);
    int n = 0;
    const moe_gemm_shape *shapes = host_probe_gemm_shapes(&n);
    assert_int_equal(n, 42);   /* 3 x 4 expert shapes + 3 x 10 dense ones */
    moe_host_probe *r = calloc(1, sizeof *r);
    assert_non_null(r);
    trace_provenance pv;
    trace_provenance_defaults(&pv, TRACE_KIND_GPU);
    snprintf(pv.device, sizeof pv.device, "synthetic (H100 model)");
    pv.sm_count = 132;
    pv.peak_bf16_tflops = 989;
    trace t;
    assert_int_equal(host_probe_gemm_trace(r, &pv, &t, &err), EXIT_RUNTIME);   /* empty table: no trace */
    for (int i = 0; i < n; i++) {
        r->gemm[i].shape = shapes[i];
        r->gemm[i].time_us = 1e6 * costmodel_gemm_s(&cm, shapes[i].m, shapes[i].n, shapes[i].k, DT_BF16);
    }
    r->n_gemm = n;
    assert_int_equal(host_probe_gemm_trace(r, &pv, &t, &err), 0);
    char path[320];
    snprintf(path, sizeof path, "%s/gemm-table.json", tmpdir);
    assert_int_equal(trace_write(path, &t, &err), 0);
    trace_free(&t);
    assert_int_equal(trace_read(path, &t, &err), 0);
    assert_int_equal(t.n, n);
    assert_int_equal(t.prov.sm_count, 132);
    assert_string_equal(t.pts[n - 1].kernel, "dense_gemm");
    trace_free(&t);

    const char *paths[1] = { path };
    fit_options o = { paths, 1, "calibration/models/h100-spec.json", "synthetic", NULL, NULL };
    cJSON *m = NULL;
    int rc = fit_build_model(&o, &m, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    const cJSON *bf16 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "gemm"), "by_dtype"), "bf16");
    assert_non_null(bf16);
    const cJSON *fit = cJSON_GetObjectItem(bf16, "fit");
    assert_int_equal((int)cJSON_GetObjectItem(fit, "points")->valuedouble, n);
    double rms = cJSON_GetObjectItem(fit, "rms_rel_err")->valuedouble;
    if (!(rms < 1e-3)) fail_msg("tile/wave fit to the planted table: rms relative error %g", rms);
    cJSON_Delete(m);
    free(r);
}

/* The host-overhead file: every figure under its key with min/median/reps, a failed section as an
 * "error" entry, the validity checks, and the GEMM table's rates (2mnk / time). */
static void test_host_probe_file(void **state) {
    (void)state;
    moe_host_probe_cfg cfg;
    host_probe_cfg_default(&cfg);
    moe_host_probe *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->launch_cpu_us = (moe_probe_stat){ 21, 2.0, 2.5 };
    r->status[MOE_PROBE_SYNC] = MOE_ECUDA;
    r->busy_loops = r->busy_loops_still_busy = 63;
    r->ticks_expected = r->ticks_counted = 12000;
    r->gemm[0] = (moe_gemm_timing){ { 4096, 14336, 4096 }, 1000.0 };
    r->n_gemm = 1;
    trace_provenance pv;
    trace_provenance_defaults(&pv, TRACE_KIND_GPU);
    cJSON *doc = host_probe_to_json(r, &cfg, &pv);
    assert_string_equal(cJSON_GetObjectItem(doc, "format")->valuestring, "moesim-host-probe/1");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "provenance"), "kind")->valuestring, "gpu");
    assert_true(num_at(doc, "launch_cpu_us", "min") == 2.0);
    assert_true(num_at(doc, "launch_cpu_us", "median") == 2.5);
    assert_true(num_at(doc, "launch_cpu_us", "reps") == 21);
    const cJSON *failed = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "sync_idle_us"), "error");
    assert_true(cJSON_IsString(failed));
    assert_string_equal(failed->valuestring, "CUDA runtime error");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "sync_idle_us"), "min"));
    const cJSON *section = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "sections"), "sync");
    assert_true(cJSON_IsString(section));
    assert_string_equal(section->valuestring, "CUDA runtime error");
    assert_true(num_at(doc, "checks", "ticks_counted") == 12000);
    assert_true(num_at(doc, "method", "launches") == 256);
    const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "gemm"), "points"), 0);
    assert_non_null(p0);
    assert_true(cJSON_GetObjectItem(p0, "k")->valuedouble == 4096);
    assert_float_equal(cJSON_GetObjectItem(p0, "tflops")->valuedouble, 481.036337152, 1e-9);
    cJSON_Delete(doc);
    /* the same as text: the figure's row, the failed section named, the GEMM at 481.0 TFLOP/s = 48.6% of 989 */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    host_probe_print(f, r, &cfg, 989);
    fclose(f);
    assert_non_null(strstr(text, "launch_cpu_us                 2.000      2.500    21"));
    assert_non_null(strstr(text, "sync_idle_us             CUDA runtime error"));
    assert_non_null(strstr(text, "4096  14336   4096      1000.00     481.0    48.6"));
    free(text);
    free(r);
}

/* A --tiles fit recovers a planted efficiency exactly, and a quantize kernel its planted rate: two BF16
 * GEMM times made by b200-published's BF16 tile/wave structure with eff_max 0.6 (no ceiling) and two
 * quantize kernels at 5000 GB/s with the base model's 2 us memory launch (b200-spec) fit, over that
 * base, to eff_max 0.6 with every structural parameter the tiles model's, its default gemm section,
 * the "tiles" path and hash recorded, a ceiling at the better point's fraction of peak, and
 * quantize at 5000 GB/s and 2 us; the generic memory model stays the base's (quantize points are not
 * generic memory-bound kernels). */
static void test_fit_tiles_and_quantize_planted(void **state) {
    (void)state;
    costmodel tiles;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_load("calibration/models/b200-published.json", &tiles, &err), 0);
    costmodel planted = tiles;
    planted.gemm_dt[DT_BF16].eff_max = 0.6;
    planted.gemm_dt[DT_BF16].ceil_eff = 0;
    trace t;
    trace_init(&t);
    trace_provenance_defaults(&t.prov, TRACE_KIND_PUBLISHED);
    snprintf(t.prov.device, sizeof t.prov.device, "synthetic Blackwell");
    t.prov.sm_count = tiles.sm_count;
    t.prov.peak_bf16_tflops = 2250;
    t.prov.hbm_GBps = 8000;
    const double shapes[2][3] = {{4096, 4096, 4096}, {8192, 2048, 1024}};
    double best = 0;
    for (int i = 0; i < 2; i++) {
        trace_point p = {0};
        snprintf(p.kernel, sizeof p.kernel, "gemm");
        snprintf(p.dtype, sizeof p.dtype, "bf16");
        snprintf(p.table, sizeof p.table, "planted-gemm");
        snprintf(p.source, sizeof p.source, "planted");
        double m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        trace_point_set_dim(&p, "m", m);
        trace_point_set_dim(&p, "n", n);
        trace_point_set_dim(&p, "k", k);
        p.flops = 2 * m * n * k;
        p.bytes = 2 * (m * k + k * n + m * n);
        p.ranks = 1;
        p.time_us = 1e6 * costmodel_gemm_s(&planted, m, n, k, DT_BF16);
        if (p.flops / (p.time_us * 1e-6 * 2250e12) > best) best = p.flops / (p.time_us * 1e-6 * 2250e12);
        assert_non_null(trace_add(&t, &p));
    }
    for (int i = 0; i < 2; i++) {
        trace_point p = {0};
        snprintf(p.kernel, sizeof p.kernel, "quantize");
        snprintf(p.dtype, sizeof p.dtype, "fp8");
        snprintf(p.table, sizeof p.table, "planted-quantize");
        snprintf(p.source, sizeof p.source, "planted");
        p.bytes = i ? 4e8 : 3e7;
        p.ranks = 1;
        p.time_us = 1e6 * (2e-6 + p.bytes / 5000e9);
        assert_non_null(trace_add(&t, &p));
    }
    char path[320];
    snprintf(path, sizeof path, "%s/planted-tiles.json", tmpdir);
    assert_int_equal(trace_write(path, &t, &err), 0);
    trace_free(&t);
    const char *paths[1] = {path};
    fit_options o = {paths, 1, "calibration/models/b200-spec.json", "planted", NULL, "calibration/models/b200-published.json"};
    cJSON *m = NULL;
    int rc = fit_build_model(&o, &m, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    const cJSON *bf = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "gemm"), "by_dtype"), "bf16");
    assert_non_null(bf);
    assert_float_equal(num_at(m, "gemm", "eff_max"), tiles.gemm.eff_max, 1e-6);
    assert_true(fabs(cJSON_GetObjectItem(bf, "eff_max")->valuedouble - 0.6) < 1e-4);
    assert_true(fabs(cJSON_GetObjectItem(bf, "ceil_eff")->valuedouble - best) < 1e-5 * best);
    const cm_gemm_params *g = &tiles.gemm_dt[DT_BF16];
    assert_true(fabs(cJSON_GetObjectItem(bf, "tile_overhead_us")->valuedouble - g->tile_overhead_s * 1e6) < 1e-5 * g->tile_overhead_s * 1e6);
    assert_true(fabs(cJSON_GetObjectItem(bf, "overlap_q")->valuedouble - g->overlap_q) < 1e-5 * g->overlap_q);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "tiles"), "path")->valuestring,
                        "calibration/models/b200-published.json");
    const cJSON *qk = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "kernels"), "quantize");
    assert_true(fabs(cJSON_GetObjectItem(qk, "GBps")->valuedouble - 5000) < 1e-3);
    assert_true(cJSON_GetObjectItem(qk, "launch_us")->valuedouble == 2);
    assert_true(num_at(m, "memory", "GBps") == 7200);
    cJSON_Delete(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_planted_parameters),
        cmocka_unit_test(test_fit_tiles_and_quantize_planted),
        cmocka_unit_test(test_fit_terms_exact_and_underdetermined),
        cmocka_unit_test(test_nccl_parser_reads_the_table),
        cmocka_unit_test(test_alpha_beta_matches_large_message_busbw),
        cmocka_unit_test(test_malformed_logs_are_rejected),
        cmocka_unit_test(test_malformed_traces_are_rejected),
        cmocka_unit_test(test_check_passes_on_committed_models),
        cmocka_unit_test(test_check_fails_on_perturbed_model),
        cmocka_unit_test(test_check_fails_on_drifted_trace),
        cmocka_unit_test(test_host_probe_gemm_table_is_a_trace),
        cmocka_unit_test(test_host_probe_file),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
