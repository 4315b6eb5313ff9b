/* test_gpu_speed.c — cluster.gpu.speed_cv: each GPU's persistent speed factor (sim/program/faults.h)
 * and what the slowest of N costs a synchronous step, against closed forms.
 *
 *   - The factors: lognormal with median 1 and the given coefficient of variation, drawn from the seed:
 *     over 1000 seeds of 256 GPUs, the sample CV, the median, and the mean of the slowest GPU's
 *     log-factor over sigma, which is the maximum of 256 standard normals: E = 2.8269 (research note
 *     kernels-scale.md section 4.3, by numerical integration), the mean within 4 standard errors
 *     (the maximum of 256 normals has a standard deviation of about 0.42).
 *   - expected_max_std_normal (GSL quadrature) reproduces that table: N = 8 1.4236, 16 1.766, 64 2.3437,
 *     256 2.8269, 1024 3.2482, 4096 3.6261.
 *   - A compute-bound step in lockstep: one pipeline stage of EP 256 (every layer's all-to-alls
 *     synchronise all 256 GPUs), communication free, the same work on every GPU. Between two all-to-alls
 *     the group waits for its slowest GPU, so the step takes exactly the slowest factor times the step
 *     of identical GPUs: for 3 seeds the inflation equals speed_max to 1e-12, and its mean over them
 *     is exp(sigma E[max of 256]) within the same statistics (3 draws: within 3 x 0.42 / sqrt 3 of
 *     2.8269 in units of sigma).
 *   - The replica shortcut folds the speeds of the replicas it mirrors (step_exec.h "Speed spread"):
 *     the representative runs at the slowest of its twins' factors, which can only slow it down, so
 *     the step with the shortcut is at least the step of every GPU with its own factor (shortcut off)
 *     and at most that times slowest / fastest factor (the step is monotone and positively homogeneous
 *     in the compute durations): PP2 x EP4 x DP4, shared routing samples, cv 2%. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/exec/step_exec.h"
#include "sim/exec/step_scale.h"
#include "sim/program/faults.h"
#include "sim/program/program.h"
#include "tests/step_fixtures.h"

#define EMAX_256 2.8269   /* kernels-scale.md section 4.3 */
#define SD_MAX_256 0.42   /* the standard deviation of the maximum of 256 standard normals */

static void factors_are_lognormal(void **st) {
    (void)st;
    const int n = 256, seeds = 1000;
    const double cv = 0.02, sigma = sqrt(log1p(cv * cv));
    double *f = malloc(n * sizeof(double)), *top = malloc(seeds * sizeof(double)), cvs = 0, med = 0;
    for (int k = 0; k < seeds; k++) {
        gpu_speed_factors(1000 + (uint64_t)k, cv, n, f);
        double m = gsl_stats_mean(f, 1, n);
        cvs += gsl_stats_sd_m(f, 1, n, m) / m / seeds;
        top[k] = log(gsl_stats_max(f, 1, n)) / sigma;
        gsl_sort(f, 1, n);
        med += gsl_stats_median_from_sorted_data(f, 1, n) / seeds;
    }
    double mean_top = gsl_stats_mean(top, 1, seeds);
    print_message("cv %.5f (want %.5f), median %.5f, E[max of 256] %.4f (table %.4f)\n", cvs, cv, med, mean_top, EMAX_256);
    assert_true(fabs(cvs - cv) < 0.02 * cv);
    assert_true(fabs(med - 1.0) < 0.002);
    assert_true(fabs(mean_top - EMAX_256) < 4 * SD_MAX_256 / sqrt(seeds));
    /* cv 0: identical GPUs */
    gpu_speed_factors(7, 0, n, f);
    for (int i = 0; i < n; i++) assert_true(f[i] == 1.0);
    free(f);
    free(top);
}

static void expected_max_matches_the_table(void **st) {
    (void)st;
    const int n[] = {8, 16, 64, 256, 1024, 4096};
    const double e[] = {1.4236, 1.766, 2.3437, 2.8269, 3.2482, 3.6261};
    for (int i = 0; i < 6; i++) {
        double v = expected_max_std_normal(n[i]);
        print_message("E[max of %4d] = %.5f (table %.4f)\n", n[i], v, e[i]);
        assert_true(fabs(v - e[i]) < 2e-3);
    }
    assert_true(expected_max_std_normal(1) == 0.0);
}

static double run(const program *p, int shortcut) {
    static fx_comm_costs cc = {0, 0, 0};
    static fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    comm_model cm = fx_comm(&cc);
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut, .per_rank = !shortcut};
    step_exec_result r;
    moe_error err = {0};
    if (step_exec_run(p, &o, &r, &err)) fail_msg("step: %s", err.msg);
    double t = r.step_time_s;
    step_exec_result_free(&r);
    return t;
}

static program *build(const scenario *s) {
    program *p = NULL;
    moe_error err = {0};
    if (program_build(s, &p, &err)) fail_msg("%s", err.msg);
    return p;
}

static void slowest_of_n_sets_a_lockstep_step(void **st) {
    (void)st;
    const double cv = 0.02, sigma = sqrt(log1p(cv * cv));
    scenario s;
    fx_scenario(&s, 2, 256, 1, 256, 1, 8, SCHED_1F1B, 1, 2);
    s.model.seq_len = 256;
    program *p0 = build(&s);
    double base = run(p0, 1);
    program_free(p0);
    double sum = 0;
    const uint64_t seeds[] = {11, 12, 13};
    for (int k = 0; k < 3; k++) {
        s.seed = seeds[k];
        s.cluster.gpu.speed_cv = cv;
        program *p = build(&s);
        double t = run(p, 1), infl = t / base;
        print_message("seed %d: step %.6f ms, identical GPUs %.6f ms: x%.6f, slowest GPU x%.6f (closed form E x%.6f)\n",
                      (int)seeds[k], 1e3 * t, 1e3 * base, infl, p->faults.speed_max, exp(sigma * EMAX_256));
        assert_true(fabs(infl / p->faults.speed_max - 1) < 1e-12);
        sum += log(infl) / sigma;
        program_free(p);
    }
    assert_true(fabs(sum / 3 - EMAX_256) < 3 * SD_MAX_256 / sqrt(3.0));
}

static void folded_replicas_bound_the_step(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 4, 8, SCHED_1F1B, 1, 8);
    s.routing.group_samples = GROUP_SAMPLES_SHARED;
    s.cluster.gpu.speed_cv = 0.02;
    program *p = build(&s);
    double fold = run(p, 1), full = run(p, 0), bound = p->faults.speed_max / p->faults.speed_min;
    print_message("folded %.6f ms, every GPU its own factor %.6f ms (+%.4f%%), bound x%.4f\n", 1e3 * fold, 1e3 * full,
                  100 * (fold / full - 1), bound);
    assert_true(fold >= full);
    assert_true(fold <= full * bound);
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(factors_are_lognormal),
        cmocka_unit_test(expected_max_matches_the_table),
        cmocka_unit_test(slowest_of_n_sets_a_lockstep_step),
        cmocka_unit_test(folded_replicas_bound_the_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
