/* test_failures.c — failure processes: inter-arrival means match the configured MTBF, class shares
 * match the split, the Weibull shape is the one asked for, failure logs load as written.
 *
 * Bounds come from the central limit theorem: the mean of n i.i.d. draws with standard deviation
 * sigma is within 5 sigma / sqrt(n) of the true mean except with probability < 1e-6; with a fixed
 * seed the outcome is reproducible, and a wrong scale (e.g. forgetting Gamma(1 + 1/k), a 13% error
 * for k = 0.8) lies hundreds of bounds away. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_gamma.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/run/failures.h"
#include "sim/scenario/components.h"
#include "sim/scenario/scenario_defaults.h"

#define N_DRAWS 200000

/* One class takes every failure. */
static const failure_class_cfg ALL = {1.0, 1};

/* A classes-model scenario: n_gpus GPUs (8 per node when they divide), job MTBF M_s = gpu_mtbf / n. */
static scenario classes_scenario(int n_gpus, double M_s, failure_dist_kind dist, double k,
                                 const failure_class_cfg classes[FAIL_NCLASSES]) {
    scenario s;
    scenario_defaults(&s);
    s.cluster.gpus_per_node = n_gpus % 8 == 0 ? 8 : 1;
    s.cluster.rails = s.cluster.gpus_per_node;
    s.cluster.nodes = n_gpus / s.cluster.gpus_per_node;
    s.reliability.gpu_mtbf_h = M_s / 3600.0 * n_gpus;
    s.reliability.distribution = dist;
    s.reliability.weibull_shape = k;
    memcpy(s.reliability.classes, classes, sizeof s.reliability.classes);
    return s;
}

static void init_ok(failure_process *fp, const scenario *s, const failure_trace *t) {
    failure_process_init(fp, s, t);
}

/* Gaps between consecutive failures of the whole process (all classes together). */
static double *draw_gaps(failure_process *fp, gsl_rng *rng, int n, int *cls_out) {
    double *gaps = malloc(sizeof(double) * (size_t)n);
    failure_process_reset(fp, rng);
    double prev = 0;
    for (int i = 0; i < n; i++) {
        failure_event ev = failure_process_pop(fp);
        gaps[i] = ev.time_s - prev;
        prev = ev.time_s;
        if (cls_out) cls_out[i] = ev.source;
        assert_true(ev.rank >= 0 && ev.rank < scn_gpus(fp->s));
    }
    return gaps;
}

/* The seed: 26,000 h per GPU, 4096 GPUs -> M = 6.35 h; exponential gaps have mean M and sd M. */
static void test_exponential_mean_is_cluster_mtbf(void **state) {
    (void)state;
    failure_class_cfg classes[FAIL_NCLASSES] = {0};
    classes[FAIL_GPU] = ALL;
    double M = 26000.0 / 4096 * 3600;
    failure_process fp;
    scenario s = classes_scenario(4096, M, DIST_EXPONENTIAL, 0.8, classes);
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    double *g = draw_gaps(&fp, rng, N_DRAWS, NULL);
    double mean = gsl_stats_mean(g, 1, N_DRAWS), sd = gsl_stats_sd(g, 1, N_DRAWS);
    assert_true(fabs(mean - M) < 5 * M / sqrt(N_DRAWS));
    assert_true(fabs(sd / M - 1) < 0.02);   /* coefficient of variation of an exponential: 1 */
    free(g);
    gsl_rng_free(rng);
    failure_process_free(&fp);
}

/* Weibull with shape k and the same mean: mean M, coefficient of variation
 * sqrt(Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1) (1.26 for k = 0.8, 0.52 for k = 2). */
static void test_weibull_mean_and_shape(void **state) {
    (void)state;
    const double shapes[] = {0.8, 2.0};
    for (int i = 0; i < 2; i++) {
        double k = shapes[i], M = 6.0 * 3600;
        failure_class_cfg classes[FAIL_NCLASSES] = {0};
        classes[FAIL_HBM] = ALL;
        failure_process fp;
        scenario s = classes_scenario(8, M, DIST_WEIBULL, k, classes);
        init_ok(&fp, &s, NULL);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 7);
        double *g = draw_gaps(&fp, rng, N_DRAWS, NULL);
        double g1 = gsl_sf_gamma(1 + 1 / k), g2 = gsl_sf_gamma(1 + 2 / k);
        double cv = sqrt(g2 / (g1 * g1) - 1);
        double mean = gsl_stats_mean(g, 1, N_DRAWS), sd = gsl_stats_sd(g, 1, N_DRAWS);
        print_message("weibull k=%.1f: mean %.4f h (M %.4f h), cv %.3f (theory %.3f)\n", k,
                      mean / 3600, M / 3600, sd / mean, cv);
        assert_true(fabs(mean - M) < 5 * cv * M / sqrt(N_DRAWS));
        assert_true(fabs(sd / mean - cv) < 0.05 * cv);
        free(g);
        gsl_rng_free(rng);
        failure_process_free(&fp);
    }
}

/* Class split: with the default shares, the fraction of failures of class c is share_c (binomial
 * bound 5 sqrt(p(1-p)/n)), and all classes together still arrive with mean gap M (exponential:
 * the superposition of per-class Poisson processes is Poisson with the summed rate). */
static void test_class_shares(void **state) {
    (void)state;
    failure_class_cfg classes[FAIL_NCLASSES];
    failures_default_classes(classes);
    double total = 0;
    for (int c = 0; c < FAIL_NCLASSES; c++) total += classes[c].share;
    assert_true(fabs(total - 1) < 1e-12);
    double M = 6.35 * 3600;
    failure_process fp;
    scenario s = classes_scenario(4096, M, DIST_EXPONENTIAL, 0.8, classes);
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    int *cls = malloc(sizeof *cls * N_DRAWS);
    double *g = draw_gaps(&fp, rng, N_DRAWS, cls);
    int count[FAIL_NCLASSES] = {0};
    for (int i = 0; i < N_DRAWS; i++) count[cls[i]]++;
    for (int c = 0; c < FAIL_NCLASSES; c++) {
        double p = classes[c].share, got = (double)count[c] / N_DRAWS;
        if (p == 0) assert_int_equal(count[c], 0);   /* a class with no share never fails */
        else assert_true(fabs(got - p) < 5 * sqrt(p * (1 - p) / N_DRAWS));
    }
    assert_true(fabs(gsl_stats_mean(g, 1, N_DRAWS) - M) < 5 * M / sqrt(N_DRAWS));
    free(cls);
    free(g);
    gsl_rng_free(rng);
    failure_process_free(&fp);
}

/* Weibull per class: each class is its own renewal process with mean M / share. */
static void test_weibull_per_class_mean(void **state) {
    (void)state;
    failure_class_cfg classes[FAIL_NCLASSES] = {0};
    classes[FAIL_GPU] = (failure_class_cfg){0.75, 1};
    classes[FAIL_SOFTWARE] = (failure_class_cfg){0.25, 0};
    double M = 3600.0, k = 0.8;
    failure_process fp;
    scenario s = classes_scenario(8, M, DIST_WEIBULL, k, classes);
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    failure_process_reset(&fp, rng);
    double last[FAIL_NCLASSES] = {0}, sum[FAIL_NCLASSES] = {0};
    int n[FAIL_NCLASSES] = {0};
    for (int i = 0; i < N_DRAWS; i++) {
        failure_event ev = failure_process_pop(&fp);
        sum[ev.source] += ev.time_s - last[ev.source];
        last[ev.source] = ev.time_s;
        n[ev.source]++;
    }
    double g1 = gsl_sf_gamma(1 + 1 / k), cv = sqrt(gsl_sf_gamma(1 + 2 / k) / (g1 * g1) - 1);
    double m_gpu = M / 0.75, m_sw = M / 0.25;
    assert_true(fabs(sum[FAIL_GPU] / n[FAIL_GPU] - m_gpu) < 5 * cv * m_gpu / sqrt(n[FAIL_GPU]));
    assert_true(fabs(sum[FAIL_SOFTWARE] / n[FAIL_SOFTWARE] - m_sw) <
                5 * cv * m_sw / sqrt(n[FAIL_SOFTWARE]));
    assert_int_equal(n[FAIL_HBM], 0);
    gsl_rng_free(rng);
    failure_process_free(&fp);
}

/* No failures: MTBF 0 or infinite, or all shares zero. */
static void test_disabled(void **state) {
    (void)state;
    failure_class_cfg classes[FAIL_NCLASSES];
    failures_default_classes(classes);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    failure_process fp;
    scenario s = classes_scenario(8, INFINITY, DIST_EXPONENTIAL, 0.8, classes);
    init_ok(&fp, &s, NULL);
    failure_process_reset(&fp, rng);
    assert_true(isinf(failure_process_peek(&fp)));
    s.reliability.distribution = DIST_WEIBULL;
    init_ok(&fp, &s, NULL);
    failure_process_reset(&fp, rng);
    assert_true(isinf(failure_process_peek(&fp)));
    /* components model: every MTBF 0 */
    s.reliability.failure_model = FMODEL_COMPONENTS;
    for (int k = 0; k < COMP_NKINDS; k++) s.reliability.components[k].mtbf_h = 0;
    init_ok(&fp, &s, NULL);
    failure_process_reset(&fp, rng);
    assert_true(isinf(failure_process_peek(&fp)));
    failure_process_free(&fp);
    gsl_rng_free(rng);
}

/* A log loads as written: sorted, classes and ranks kept, the comment and blank lines skipped. */
static void test_trace_load(void **state) {
    (void)state;
    failure_trace t;
    moe_error err = {0};
    failure_class_cfg classes[FAIL_NCLASSES];
    failures_default_classes(classes);
    scenario s16 = classes_scenario(16, 3600, DIST_EXPONENTIAL, 0.8, classes);
    int rc = failure_trace_load("tests/data/failures/mixed_log.csv", &s16, &t, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(t.n, 6);
    const double h[] = {0.75, 2.0, 4.25, 6.0, 9.5, 500};
    const failure_class c[] = {FAIL_GPU, FAIL_NVLINK, FAIL_SOFTWARE, FAIL_SWITCH, FAIL_HOST, FAIL_HBM};
    const int r[] = {0, 12, 7, 15, 3, 1};
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(t.ev[i].time_s - h[i] * 3600) < 1e-9);
        assert_int_equal(t.ev[i].source, c[i]);
        assert_int_equal(t.ev[i].rank, r[i]);
    }
    /* replay through the process: the same sequence, then nothing */
    failure_process fp;
    init_ok(&fp, &s16, &t);
    failure_process_reset(&fp, NULL);
    for (int i = 0; i < 6; i++) assert_true(failure_process_pop(&fp).time_s == t.ev[i].time_s);
    assert_true(isinf(failure_process_peek(&fp)));
    failure_trace_free(&t);
    failure_process_free(&fp);
    /* 8 GPUs: rank 12 on line 7 is out of range */
    scenario s8 = classes_scenario(8, 3600, DIST_EXPONENTIAL, 0.8, classes);
    rc = failure_trace_load("tests/data/failures/mixed_log.csv", &s8, &t, &err);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "line 7, column rank"));
    /* only a header: a valid log without failures (qsort never sees the empty array) */
    const char *header = "time_h,component,rank\n";
    assert_int_equal(failure_trace_parse("h.csv", header, strlen(header), &s8, &t, &err), 0);
    assert_int_equal(t.n, 0);
    failure_trace_free(&t);
    /* endless or special files are refused without reading: /dev/zero used to loop for ever */
    assert_int_equal(failure_trace_load("/dev/zero", &s8, &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "/dev/zero: got a character device"));
    const char nul[] = "time_h,component,rank\n1.0,gpu,1\n\0\n";
    assert_int_equal(failure_trace_parse("n.csv", nul, sizeof nul - 1, &s8, &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "n.csv: line 3: got a NUL byte"));
    failure_class fc;
    assert_int_equal(failure_class_parse("NVLink", &fc), 0);
    assert_int_equal(fc, FAIL_NVLINK);
    assert_int_equal(failure_class_parse("psu", &fc), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exponential_mean_is_cluster_mtbf),
        cmocka_unit_test(test_weibull_mean_and_shape),
        cmocka_unit_test(test_class_shares),
        cmocka_unit_test(test_weibull_per_class_mean),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_trace_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
