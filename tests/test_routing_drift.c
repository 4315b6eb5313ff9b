/* test_routing_drift.c — the drift of the routing law between steps (sim/program/routing_drift.h) and
 * the step-time distribution (sim/exec/step_series.h), against closed forms and hand-solved cases:
 * the hot expert's exp(-(t - t0) / tau) share, the odds form of its bias, DeepSeek-V3's +-gamma update
 * on a hand case, the steps that bias balancing needs to bring a 50% expert of 8 under its 1/8 share
 * (ceil(ln 7 / 2 gamma)), the random walk's variance t sigma^2 (and the AR(1) walk's), determinism
 * of the walk, p50 / p95 / p99 / max of a known series by GSL's interpolation rule, the hot expert's
 * linear rise to its peak, and the longest run of slow steps on hand-made series. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/exec/step_series.h"
#include "sim/program/routing_drift.h"

static drift_params params(int E, int K) {
    return (drift_params){.experts = E, .top_k = K, .hot_expert = 3, .hot_decay_steps = 50};
}

/* h(t) = 0 before the onset, h_peak exp(-(t - t0) / tau) from it on */
static void hot_share_closed_form(void **state) {
    (void)state;
    drift_params p = params(16, 2);
    p.hot_onset_step = 5; p.hot_peak_share = 0.6; p.hot_decay_steps = 10;
    assert_true(drift_hot_share(&p, 0) == 0.0);
    assert_true(drift_hot_share(&p, 4) == 0.0);
    assert_true(fabs(drift_hot_share(&p, 5) - 0.6) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 15) - 0.6 / M_E) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 25) - 0.6 / (M_E * M_E)) < 1e-15);
    /* routing.distribution "hot": its share at every step */
    drift_params c = params(16, 2);
    c.hot_constant = 1; c.hot_share = 0.4;
    assert_true(drift_hot_share(&c, 0) == 0.4 && drift_hot_share(&c, 1000) == 0.4);
}

/* odds(h') = odds(h) e^b S0 / Sb: h = 1/2 with b = -ln 3 is 1/4; the others' bias acts inversely */
static void biased_share_odds(void **state) {
    (void)state;
    assert_true(fabs(drift_biased_share(0.5, -log(3.0), 7, 7) - 0.25) < 1e-15);
    assert_true(fabs(drift_biased_share(0.5, 0, 7, 21) - 0.25) < 1e-15);
    assert_true(drift_biased_share(0.6, 0, 5, 5) == 0.6);     /* no bias: exactly h */
    assert_true(drift_biased_share(0, -1, 1, 2) == 0.0);
    assert_true(drift_biased_share(1, -1, 1, 2) == 1.0);
}

/* DeepSeek-V3 section 2.1.2: -gamma when overloaded, +gamma when underloaded, against the mean */
static void bias_update_hand_case(void **state) {
    (void)state;
    double b[4] = {0, 0, 0.5, 0}, load[4] = {3, 1, 2, 2};   /* mean 2 */
    drift_bias_update(b, load, 4, 0.001);
    assert_true(b[0] == -0.001 && b[1] == 0.001 && b[2] == 0.5 && b[3] == 0);
}

/* expected pairs per token: the hot expert h, the others (K - h) w / sum w; they sum to K */
static void expected_load(void **state) {
    (void)state;
    double w[4] = {1, 2, 3, 4}, load[4];
    routing_law law = {.hot_share = 0.5, .hot_expert = 3, .weights = w};
    routing_expected_load(&law, 4, 2, load);
    assert_true(fabs(load[3] - 0.5) < 1e-15);
    assert_true(fabs(load[0] - 1.5 / 6) < 1e-15 && fabs(load[1] - 3.0 / 6) < 1e-15 && fabs(load[2] - 4.5 / 6) < 1e-15);
    routing_law flat = {.hot_share = 0, .hot_expert = 3, .weights = NULL};
    routing_expected_load(&flat, 4, 2, load);
    for (int e = 0; e < 4; e++) assert_true(fabs(load[e] - 0.5) < 1e-15);
}

/* Top-1 routing over 8 experts, one hot at 50% (constant), gamma 0.1, no walk, loads at their
 * expectation. Every step the hot expert is overloaded (bias -0.1) and the 7 others underloaded
 * (+0.1 each), so after n steps odds(h) = 1 x e^{-0.1 n} x 7 / (7 e^{0.1 n}) = e^{-0.2 n}: the hot
 * share first reaches the mean share 1/8 (odds 1/7) at n = ceil(ln 7 / 0.2) = ceil(9.73) = 10. */
static void bias_balancing_converges(void **state) {
    (void)state;
    drift_params p = params(8, 1);
    p.hot_constant = 1; p.hot_share = 0.5; p.bias_gamma = 0.1;
    drift_state d;
    moe_error err = {0};
    assert_int_equal(drift_init(&d, &p, 42, &err), 0);
    int first = -1;
    double load[8];
    for (int n = 0; n < 30 && first < 0; n++) {
        const routing_law *law = drift_law_of(&d);
        assert_null(law->weights);   /* the 7 others stay equally popular */
        double h = law->hot_share;
        assert_true(fabs(h - 1.0 / (1.0 + exp(0.2 * n))) < 1e-12);
        if (h <= 1.0 / 8) first = n;
        routing_expected_load(law, 8, 1, load);
        drift_advance(&d, load);
    }
    assert_int_equal(first, (int)ceil(log(7.0) / 0.2));
    assert_int_equal(first, 10);
    drift_free(&d);
}

/* The walk x(t+1) = (1 - rho) x(t) + sigma N(0,1) from 0: Var x(t) = t sigma^2 (rho = 0) and
 * sigma^2 (1 - a^{2t}) / (1 - a^2), a = 1 - rho. 20,000 experts: the sample variance is within 3%
 * (its relative standard error is sqrt(2 / 20000) = 1%). */
static double walk_variance(double sigma, double rho, int steps, uint64_t seed) {
    int E = 20000;
    drift_params p = params(E, 1);
    p.walk_sigma = sigma; p.walk_reversion = rho;
    drift_state d;
    moe_error err = {0};
    assert_int_equal(drift_init(&d, &p, seed, &err), 0);
    double *zero = calloc((size_t)E, sizeof *zero);
    for (int t = 0; t < steps; t++) drift_advance(&d, zero);
    double m = 0, v = 0;
    for (int e = 0; e < E; e++) m += d.log_pop[e];
    m /= E;
    for (int e = 0; e < E; e++) v += (d.log_pop[e] - m) * (d.log_pop[e] - m);
    free(zero);
    drift_free(&d);
    return v / (E - 1);
}

static void walk_variance_closed_form(void **state) {
    (void)state;
    double v = walk_variance(0.1, 0, 50, 42);
    assert_true(fabs(v / (50 * 0.01) - 1) < 0.03);
    double a = 0.9, want = 0.01 * (1 - pow(a, 100)) / (1 - a * a);
    double w = walk_variance(0.1, 0.1, 50, 42);
    assert_true(fabs(w / want - 1) < 0.03);
}

/* same seed, same walk (bit for bit); another seed, another walk; the law's weights exp(x + b) */
static void walk_deterministic(void **state) {
    (void)state;
    drift_params p = params(64, 2);
    p.walk_sigma = 0.2;
    drift_state a, b, c;
    moe_error err = {0};
    drift_init(&a, &p, 7, &err); drift_init(&b, &p, 7, &err); drift_init(&c, &p, 8, &err);
    double load[64] = {0};
    for (int t = 0; t < 5; t++) { drift_advance(&a, load); drift_advance(&b, load); drift_advance(&c, load); }
    const routing_law *la = drift_law_of(&a), *lb = drift_law_of(&b), *lc = drift_law_of(&c);
    assert_non_null(la->weights);
    assert_memory_equal(la->weights, lb->weights, 64 * sizeof(double));
    assert_true(memcmp(la->weights, lc->weights, 64 * sizeof(double)) != 0);
    for (int e = 0; e < 64; e++) assert_true(la->weights[e] == exp(a.log_pop[e] + a.bias[e]));
    drift_free(&a); drift_free(&b); drift_free(&c);
}

/* 1..20 in any order: mean 10.5, p50 at (n-1) 0.5 = 9.5 -> 10.5, p95 at 19 x 0.95 = 18.05 -> 19.05,
 * min 1, max 20 */
static void series_stats_known(void **state) {
    (void)state;
    double x[20];
    for (int i = 0; i < 20; i++) x[i] = (double)((i * 7) % 20 + 1);   /* a permutation of 1..20 */
    double copy[20];
    memcpy(copy, x, sizeof x);
    step_series_stats st;
    assert_int_equal(step_series_summarize(x, NULL, 20, &st), 0);
    assert_memory_equal(copy, x, sizeof x);   /* the input is not sorted in place */
    assert_true(fabs(st.mean_s - 10.5) < 1e-12);
    assert_true(fabs(st.p50_s - 10.5) < 1e-12);
    assert_true(fabs(st.p95_s - 19.05) < 1e-12);
    assert_true(fabs(st.p99_s - 19.81) < 1e-12);   /* 19 x 0.99 = 18.81 -> 19 + 0.81 */
    assert_true(st.min_s == 1 && st.max_s == 20);
    /* 1.5 x the median is 15.75: 16..20 are slow, the permutation puts them at i = 5, 8, 11, 14, 17
     * (apart): five slow steps, runs of one, the first at 5 */
    assert_true(fabs(st.slow_above_s - 15.75) < 1e-12);
    assert_int_equal(st.slow_steps, 5);
    assert_int_equal(st.slow_run_steps, 1);
    assert_int_equal(st.slow_run_first, 5);
    double one = 3.25;
    assert_int_equal(step_series_summarize(&one, NULL, 1, &st), 0);
    assert_true(st.p50_s == 3.25 && st.p95_s == 3.25 && st.max_s == 3.25);
    assert_int_equal(step_series_summarize(x, NULL, 0, &st), -1);
}

/* slow steps on hand-made series: the median (not the mean) sets the bar, the longest run wins, the
 * earliest of equal runs, a timed-out step counted slow */
static void slow_run_hand_series(void **state) {
    (void)state;
    /* median 10 (eight 10s of 13), slow above 15: runs [6, 7] and [9, 11] */
    double a[13] = {10, 10, 10, 10, 10, 10, 16, 16, 10, 16, 16, 16, 10};
    step_series_stats st;
    assert_int_equal(step_series_summarize(a, NULL, 13, &st), 0);
    assert_true(st.p50_s == 10 && st.slow_above_s == 15);
    assert_int_equal(st.slow_steps, 5);
    assert_int_equal(st.slow_run_steps, 3);
    assert_int_equal(st.slow_run_first, 9);
    /* two runs of 2: the earliest */
    double b[9] = {20, 20, 10, 20, 20, 10, 10, 10, 10};
    assert_int_equal(step_series_summarize(b, NULL, 9, &st), 0);
    assert_int_equal(st.slow_run_steps, 2);
    assert_int_equal(st.slow_run_first, 0);
    /* exactly 1.5 x the median is not slow; a flat series has no run */
    double c[3] = {2, 3, 2};
    assert_int_equal(step_series_summarize(c, NULL, 3, &st), 0);
    assert_int_equal(st.slow_steps, 0);
    assert_int_equal(st.slow_run_steps, 0);
    assert_int_equal(st.slow_run_first, -1);
    int first;
    assert_int_equal(step_series_longest_run_above(a, NULL, 13, 100, &first), 0);
    assert_int_equal(first, -1);
    /* a timed-out step (its short time until the watchdog fired) is slow: step 8 joins [6, 7] and
     * [9, 11] into one run of 6 from step 6; the median is the recorded times' (10) */
    unsigned char to[13] = {0};
    to[8] = 1;
    a[8] = 0.5;
    assert_int_equal(step_series_summarize(a, to, 13, &st), 0);
    assert_true(st.p50_s == 10);
    assert_int_equal(st.slow_steps, 6);
    assert_int_equal(st.slow_run_steps, 6);
    assert_int_equal(st.slow_run_first, 6);
}

/* the rise: (t - t0 + 1) / (R + 1) of the peak for R steps from the onset, the peak at t0 + R, the
 * decay from there; R = 0 is the jump */
static void hot_share_rise(void **state) {
    (void)state;
    drift_params p = params(16, 2);
    p.hot_onset_step = 10; p.hot_peak_share = 0.8; p.hot_decay_steps = 5; p.hot_rise_steps = 3;
    assert_true(drift_hot_share(&p, 9) == 0.0);
    assert_true(fabs(drift_hot_share(&p, 10) - 0.2) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 11) - 0.4) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 12) - 0.6) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 13) - 0.8) < 1e-15);
    assert_true(fabs(drift_hot_share(&p, 18) - 0.8 / M_E) < 1e-15);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hot_share_closed_form),
        cmocka_unit_test(biased_share_odds),
        cmocka_unit_test(bias_update_hand_case),
        cmocka_unit_test(expected_load),
        cmocka_unit_test(bias_balancing_converges),
        cmocka_unit_test(walk_variance_closed_form),
        cmocka_unit_test(walk_deterministic),
        cmocka_unit_test(series_stats_known),
        cmocka_unit_test(slow_run_hand_series),
        cmocka_unit_test(hot_share_rise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
