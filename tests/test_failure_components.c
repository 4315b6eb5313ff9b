/* test_failure_components.c — the "components" failure model: counts and blast radii against the
 * fabric's geometry counted by hand, per-unit Weibull lifetimes against the closed form of the first
 * of n failures, Poisson superposition, correlated follow-ons, recoveries by blast radius, detection
 * delays and repair slots on hand-solved timelines, and the published Llama 3 interruption count.
 *
 * Statistical bounds: a mean of n i.i.d. draws with standard deviation sigma lies within
 * 5 sigma / sqrt(n) of its expectation except with probability < 1e-6 (fixed seeds: reproducible). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_gamma.h>

#include "sim/plan/plan.h"
#include "sim/plan/reliability.h"
#include "sim/run/failures.h"
#include "sim/run/trainrun.h"
#include "sim/scenario/components.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_load.h"
#include "run_fixtures.h"

/* The seed cluster: 512 nodes x 8 GPUs, 8 rails, 32 nodes per leaf, 2 nodes per rack. */
static scenario seed_cluster(void) {
    scenario s;
    scenario_defaults(&s);
    s.reliability.failure_model = FMODEL_COMPONENTS;
    return s;
}

static void only(scenario *s, component_kind k, double mtbf_h, double shape) {
    for (int i = 0; i < COMP_NKINDS; i++) s->reliability.components[i].mtbf_h = 0;
    s->reliability.components[k].mtbf_h = mtbf_h;
    s->reliability.components[k].weibull_shape = shape;
}

static void init_ok(failure_process *fp, const scenario *s, const failure_trace *t) {
    failure_process_init(fp, s, t);
}

/* Counts and blast radii on the seed cluster, by hand: 4096 GPUs and NICs, 512 hosts and software
 * stacks, 8 rails x 16 leaves = 128 leaf switches, 8 spine layers, 256 racks of 2 nodes.
 * Leaf unit 17 = rail 1, leaf 1: nodes 32..63 lose rail 1; its GPU is node 32's rail 1 = 257. */
static void test_counts_and_blast(void **state) {
    (void)state;
    scenario s = seed_cluster();
    const int expect[COMP_NKINDS] = {4096, 4096, 512, 128, 8, 256, 512};
    for (int k = 0; k < COMP_NKINDS; k++)
        assert_int_equal(component_count(&s, (component_kind)k), expect[k]);
    int first, n;
    component_blast(&s, COMP_LEAF_SWITCH, 17, &first, &n);
    assert_int_equal(first, 32);
    assert_int_equal(n, 32);
    assert_int_equal(component_rank_of_unit(&s, COMP_LEAF_SWITCH, 17), 257);
    assert_int_equal(component_unit_of_rank(&s, COMP_LEAF_SWITCH, 257), 17);
    assert_int_equal(component_unit_of_rank(&s, COMP_LEAF_SWITCH, 63 * 8 + 1), 17);   /* node 63 */
    assert_int_equal(component_unit_of_rank(&s, COMP_LEAF_SWITCH, 64 * 8 + 1), 18);   /* next leaf */
    component_blast(&s, COMP_RACK, 5, &first, &n);
    assert_int_equal(first, 10);
    assert_int_equal(n, 2);
    component_blast(&s, COMP_GPU, 4095, &first, &n);
    assert_int_equal(first, 511);
    assert_int_equal(n, 1);
    component_blast(&s, COMP_SPINE_SWITCH, 3, &first, &n);
    assert_int_equal(n, 0);
    component_blast(&s, COMP_SOFTWARE, 3, &first, &n);
    assert_int_equal(n, 0);
    /* a last, partial leaf: 40 nodes, 32 per leaf -> the second leaf holds nodes 32..39 */
    s.cluster.nodes = 40;
    assert_int_equal(component_count(&s, COMP_LEAF_SWITCH), 16);
    component_blast(&s, COMP_LEAF_SWITCH, 1, &first, &n);
    assert_int_equal(first, 32);
    assert_int_equal(n, 8);
    /* a given count spreads over the cluster's units: 4 racks of 20 -> racks 0, 5, 10, 15 */
    s.reliability.components[COMP_RACK].count = 4;
    assert_int_equal(component_count(&s, COMP_RACK), 4);
    component_blast(&s, COMP_RACK, 2, &first, &n);
    assert_int_equal(first, 20);
}

/* The default per-unit rates are Llama 3's (Dubey et al. 2024, Table 5): on its cluster — 16,384
 * GPUs in 2,048 servers, 1,024 top-of-rack switches (16 nodes per leaf here gives 8 x 128) — the
 * rates add up to 419 interruptions in 54 days, 268 of them GPU, 7 NIC, 46 host, 35 switch/cable and
 * 63 software. */
static void test_llama3_rates(void **state) {
    (void)state;
    scenario s = seed_cluster();
    s.cluster.nodes = 2048;
    s.cluster.leaf_down_ports = 16;
    const double hours = 54 * 24;
    const double expect[COMP_NKINDS] = {268, 7, 46, 35, 0, 0, 63};
    for (int k = 0; k < COMP_NKINDS; k++) {
        const component_cfg *c = &s.reliability.components[k];
        double n = c->mtbf_h > 0 ? component_count(&s, (component_kind)k) * hours / c->mtbf_h : 0;
        assert_true(fabs(n - expect[k]) < 1e-9);
    }
    assert_true(fabs(components_failures_per_h(&s) * hours - 419) < 1e-9);
    assert_true(fabs(reliability_job_mtbf_h(&s) - hours / 419) < 1e-12);
}

/* Weibull per unit: the first failure of n fresh units is the minimum of n Weibull(lambda, k)
 * lifetimes, Weibull(lambda n^(-1/k), k), with mean mtbf x n^(-1/k) (lambda Gamma(1 + 1/k) = mtbf).
 * 64 GPUs of 1000 h, k = 0.7: 2.63 h — not the 15.6 h of a job-level process of mean mtbf / n. */
static void test_weibull_per_unit_first_failure(void **state) {
    (void)state;
    scenario s = seed_cluster();
    s.cluster.nodes = 8;
    const double k = 0.7, mtbf_h = 1000;
    only(&s, COMP_GPU, mtbf_h, k);
    failure_process fp;
    init_ok(&fp, &s, NULL);
    assert_true(fp.src[COMP_GPU].per_unit);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    const int trials = 20000;
    double sum = 0;
    for (int i = 0; i < trials; i++) {
        failure_process_reset(&fp, rng);
        failure_event ev = failure_process_pop(&fp);
        assert_int_equal(ev.source, COMP_GPU);
        assert_int_equal(ev.first_node, ev.unit / 8);
        sum += ev.time_s / 3600;
    }
    double expect = mtbf_h * pow(64, -1 / k);
    double g1 = gsl_sf_gamma(1 + 1 / k), cv = sqrt(gsl_sf_gamma(1 + 2 / k) / (g1 * g1) - 1);
    print_message("first of 64 Weibull(k=0.7) units: %.3f h, closed form %.3f h (job-level: %.1f h)\n",
                  sum / trials, expect, mtbf_h / 64);
    assert_true(fabs(sum / trials - expect) < 5 * cv * expect / sqrt(trials));
    failure_process_free(&fp);
    gsl_rng_free(rng);
}

/* Weibull per unit, over a window: each of the n units fails for the first time by T with
 * probability F(T) = 1 - exp(-(T / scale)^k), so the units that failed at least once are
 * Binomial(n, F(T)); their replacements fail too (renewals), so all failures are at least that.
 * 512 hosts of 20,000 h, k = 0.6, T = 2,000 h, 200 windows. */
static void test_weibull_per_unit_first_failures(void **state) {
    (void)state;
    scenario s = seed_cluster();
    const double k = 0.6, mtbf_h = 20000, T_h = 2000;
    only(&s, COMP_HOST, mtbf_h, k);
    failure_process fp;
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17);
    const int windows = 200, n = 512;
    static char seen[512];
    double first = 0, all = 0;
    for (int w = 0; w < windows; w++) {
        memset(seen, 0, sizeof seen);
        failure_process_reset(&fp, rng);
        while (failure_process_peek(&fp) < T_h * 3600) {
            failure_event ev = failure_process_pop(&fp);
            all++;
            if (!seen[ev.unit]) { seen[ev.unit] = 1; first++; }
        }
    }
    double scale = mtbf_h / gsl_sf_gamma(1 + 1 / k), F = 1 - exp(-pow(T_h / scale, k));
    double mean = n * F, sd = sqrt(n * F * (1 - F) / windows);
    print_message("units failed by %.0f h: %.2f of 512 (binomial mean %.2f, se %.2f); all failures %.2f\n", T_h,
                  first / windows, mean, sd, all / windows);
    assert_true(fabs(first / windows - mean) < 5 * sd);
    assert_true(all > first);
    failure_process_free(&fp);
    gsl_rng_free(rng);
}

/* Exponential units superpose into one Poisson process: the number of failures in [0, T] has mean
 * T x sum(count / mtbf) and each kind's share is its rate over the total. Default (Llama 3) rates
 * on the seed cluster, T = 1000 h, 400 windows. */
static void test_poisson_superposition(void **state) {
    (void)state;
    scenario s = seed_cluster();
    s.reliability.components[COMP_RACK].mtbf_h = 200000;   /* racks too */
    failure_process fp;
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 9);
    const double T = 1000 * 3600.0;
    const int windows = 400;
    double count[COMP_NKINDS] = {0}, total = 0;
    for (int w = 0; w < windows; w++) {
        failure_process_reset(&fp, rng);
        while (failure_process_peek(&fp) < T) {
            failure_event ev = failure_process_pop(&fp);
            int first, n;
            component_blast(&s, (component_kind)ev.source, ev.unit, &first, &n);
            assert_true(first == ev.first_node && n == ev.n_nodes);
            assert_int_equal(component_unit_of_rank(&s, (component_kind)ev.source, ev.rank), ev.unit);
            count[ev.source]++;
            total++;
        }
    }
    double rate = components_failures_per_h(&s) * 1000, mean = total / windows;
    print_message("failures in 1000 h: %.2f per window, Poisson mean %.2f\n", mean, rate);
    assert_true(fabs(mean - rate) < 5 * sqrt(rate / windows));
    for (int k = 0; k < COMP_NKINDS; k++) {
        const component_cfg *c = &s.reliability.components[k];
        double p = c->mtbf_h > 0 ? component_count(&s, (component_kind)k) / c->mtbf_h * 1000 / rate : 0;
        double got = count[k] / total;
        if (p == 0) assert_true(count[k] == 0);
        else assert_true(fabs(got - p) < 5 * sqrt(p * (1 - p) / total));
    }
    failure_process_free(&fp);
    gsl_rng_free(rng);
}

/* Correlated follow-ons: hosts only, p = 0.3, mean delay 60 s against a job MTBF of 10 h, racks of
 * 2: a follow-on hits the primary's rack-mate, with probability p and mean delay 60 s, and comes
 * right after its primary unless the next primary strikes first (chance 60 s / 10 h per pair, so
 * Poisson with mean follows / 600 pairs are split). */
static void test_correlated_follow_ons(void **state) {
    (void)state;
    scenario s = seed_cluster();
    only(&s, COMP_HOST, 5120, 1);   /* 512 hosts: 10 h */
    s.reliability.correlated = (correlated_cfg){.probability = 0.3, .delay_s = 60};
    failure_process fp;
    init_ok(&fp, &s, NULL);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 13);
    failure_process_reset(&fp, rng);
    const int n = 40000;
    int primaries = 0, follows = 0, paired = 0;
    double delay_sum = 0;
    failure_event prev = {0};
    for (int i = 0; i < n; i++) {
        failure_event ev = failure_process_pop(&fp);
        if (ev.correlated) {
            follows++;
            assert_int_equal(ev.source, COMP_HOST);
            assert_int_equal(ev.n_nodes, 1);
            if (!prev.correlated && ev.first_node == (prev.first_node ^ 1)) {
                paired++;
                delay_sum += ev.time_s - prev.time_s;
            }
        } else {
            primaries++;
        }
        prev = ev;
    }
    double p = 0.3, got = (double)follows / primaries;
    print_message("follow-ons per primary %.4f (p %.2f), mean delay %.1f s (60 s), %d of %d paired\n",
                  got, p, delay_sum / paired, paired, follows);
    assert_true(fabs(got - p) < 5 * sqrt(p * (1 - p) / primaries));
    double split = follows * 60.0 / 36000;
    assert_true(follows - paired <= split + 5 * sqrt(split));
    assert_true(fabs(delay_sum / paired - 60) < 5 * 60 / sqrt(paired));
    failure_process_free(&fp);
    gsl_rng_free(rng);
}

/* A log names components and the GPU behind them (8 nodes x 8 GPUs, 4 nodes per leaf, 2 per rack,
 * rank 9 = node 1, rail 1); a class name is no component. */
static scenario small_cluster(void) {
    scenario s = seed_cluster();
    s.cluster.nodes = 8;
    s.cluster.leaf_down_ports = 4;
    return s;
}

static void test_component_log(void **state) {
    (void)state;
    scenario s = small_cluster();
    failure_trace t;
    moe_error err = {0};
    if (failure_trace_load("tests/data/failures/components_blast.csv", &s, &t, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(t.n, 5);
    const struct { int source, unit, first, n; } expect[] = {
        {COMP_LEAF_SWITCH, 2, 0, 4},   /* rail 1 x 2 leaves + leaf 0 */
        {COMP_RACK, 0, 0, 2},
        {COMP_SPINE_SWITCH, 1, 0, 0},
        {COMP_NIC, 9, 1, 1},
        {COMP_SOFTWARE, 1, 0, 0},
    };
    for (int i = 0; i < 5; i++) {
        assert_int_equal(t.ev[i].source, expect[i].source);
        assert_int_equal(t.ev[i].unit, expect[i].unit);
        assert_int_equal(t.ev[i].first_node, expect[i].first);
        assert_int_equal(t.ev[i].n_nodes, expect[i].n);
        assert_int_equal(t.ev[i].rank, 9);
    }
    failure_trace_free(&t);
    int rc = failure_trace_load("tests/data/failures/mixed_log.csv", &s, &t, &err);   /* "hbm" */
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "leaf_switch"));
    assert_non_null(strstr(err.msg, "\"components\""));
}

/* ---- recoveries, by hand ------------------------------------------------------------------------
 * tests/run_fixtures.h: 8 nodes x 8 GPUs, 36 s steps, sync checkpoints every 100 steps with a 5 min
 * write, full restart R = 10 min, swap 90 s, 2 hot spares. 500 steps without failures:
 * 500 x 36 + 5 x 300 = 19,500 s. A failure at 2:30 finds step 200 written at 2:10: 20 min lost. */

static void test_blast_radius_recoveries(void **state) {
    (void)state;
    const double nofail = 500 * RUN_FIXTURE_STEP_S + 5 * 300.0, lost = 1200;
    /* a leaf takes 4 nodes, more than the 2 spares: full restart, after a 2 min detection */
    scenario s = run_fixture("tests/data/failures/leaf_2p5h.csv", 500);
    s.reliability.components[COMP_LEAF_SWITCH].detect_s = 120;
    trainrun_result r = run_fixture_simulate(&s);
    assert_true(fabs(run_fixture_wall_s(&r) - (nofail + lost + 120 + 600)) < 1e-6);
    assert_true(r.restarts_mean == 1 && r.spare_swaps_mean == 0 && r.spare_shortfalls_mean == 1);
    assert_true(fabs(r.detect_hours_mean - 120 / 3600.0) < 1e-12);
    assert_true(fabs(r.restart_hours_mean - 600 / 3600.0) < 1e-12);
    assert_true(r.failures_by_source_mean[COMP_LEAF_SWITCH] == 1);
    /* with 4 spares the leaf's nodes are swapped */
    s.reliability.recovery.hot_spare_fraction = 0.5;
    r = run_fixture_simulate(&s);
    assert_true(fabs(run_fixture_wall_s(&r) - (nofail + lost + 120 + 90)) < 1e-6);
    assert_true(r.spare_swaps_mean == 1 && r.spare_shortfalls_mean == 0);
    /* a rack takes 2 nodes: the 2 spares cover it */
    s = run_fixture("tests/data/failures/rack_2p5h.csv", 500);
    r = run_fixture_simulate(&s);
    assert_true(fabs(run_fixture_wall_s(&r) - (nofail + lost + 90)) < 1e-6);
    assert_true(r.spare_swaps_mean == 1 && r.restarts_mean == 0);
    /* a spine takes no node: restart in place, no shortfall */
    s = run_fixture("tests/data/failures/spine_2p5h.csv", 500);
    r = run_fixture_simulate(&s);
    assert_true(fabs(run_fixture_wall_s(&r) - (nofail + lost + 600)) < 1e-6);
    assert_true(r.restarts_mean == 1 && r.spare_shortfalls_mean == 0);
}

/* Repair slots. Hosts fail at 2:30, 3:30, 14:00 and 15:00; 2 spares, 10 h host repairs.
 * Unlimited slots: the first two are back at 12:30 and 13:30, so all four swap. One slot: the second
 * repair waits for the first (12:30 -> 22:30); at 14:00 one spare is back (swap, its repair queued
 * to 32:30); at 15:00 none is: full restart. Everything before 15:00 is the same, so the walls
 * differ by exactly R - swap = 510 s. */
static void test_repair_slots(void **state) {
    (void)state;
    scenario s = run_fixture("tests/data/failures/hosts_repair_queue.csv", 2000);
    s.reliability.components[COMP_HOST].repair_h = 10;
    trainrun_result free_slots = run_fixture_simulate(&s);
    assert_true(free_slots.spare_swaps_mean == 4 && free_slots.restarts_mean == 0);
    s.reliability.recovery.repair_slots = 1;
    trainrun_result one_slot = run_fixture_simulate(&s);
    assert_true(one_slot.spare_swaps_mean == 3 && one_slot.restarts_mean == 1);
    assert_true(one_slot.spare_shortfalls_mean == 1);
    assert_true(fabs(run_fixture_wall_s(&one_slot) - run_fixture_wall_s(&free_slots) - 510) < 1e-6);
    /* repair_h "auto" takes recovery.repair_h (24 h): the spares are still out at 14:00 */
    s.reliability.components[COMP_HOST].repair_h = -1;
    s.reliability.recovery.repair_slots = 0;
    trainrun_result slow = run_fixture_simulate(&s);
    assert_true(slow.spare_swaps_mean == 2 && slow.restarts_mean == 2);
}

/* The published rates: scenarios/llama3-405b-failures.json is Llama 3's cluster (16,384 H100 in
 * 2,048 nodes, 1,024 leaf switches) under the default per-unit rates, cut off at 54 days. Table 5
 * counts 419 unexpected interruptions; a Poisson count of mean 419 has standard deviation
 * sqrt(419) per trial, so the mean over `trials` must lie within 4 sqrt(419 / trials) of 419. GPU
 * failures are 268 of them (64.0% by the table's counts; its percentage column says 58.7%). */
static void test_llama3_interruptions(void **state) {
    (void)state;
    scenario s;
    moe_error err = {0};
    if (scenario_load("scenarios/llama3-405b-failures.json", &s, NULL, &err)) fail_msg("%s", err.msg);
    plan_result plan;
    if (plan_evaluate(&s, &plan, &err)) fail_msg("plan: %s", err.msg);
    trainrun_result r;
    if (trainrun_simulate_no_search(&s, &plan, plan.step_time_s, &r, &err)) fail_msg("%s", err.msg);
    double se = sqrt(419.0 / r.trials);
    double gpu = r.failures_by_source_mean[COMP_GPU] / r.failures_mean, p = 268.0 / 419;
    print_message("Llama 3: %.2f interruptions in 54 days (published 419, se %.2f, %+.1f se); "
                  "GPU %.1f%% (counts: %.1f%%); MTBF %.2f h; ETTR %.3f\n",
                  r.failures_mean, se, (r.failures_mean - 419) / se, 100 * gpu, 100 * p,
                  r.mtbf_cluster_h, r.ettr);
    assert_true(fabs(r.days_mean - 54) < 1e-9);   /* every trial runs the whole window */
    assert_true(fabs(r.failures_mean - 419) < 4 * se);
    assert_true(fabs(gpu - p) < 4 * sqrt(p * (1 - p) / (r.failures_mean * r.trials)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_blast),
        cmocka_unit_test(test_llama3_rates),
        cmocka_unit_test(test_weibull_per_unit_first_failure),
        cmocka_unit_test(test_weibull_per_unit_first_failures),
        cmocka_unit_test(test_poisson_superposition),
        cmocka_unit_test(test_correlated_follow_ons),
        cmocka_unit_test(test_component_log),
        cmocka_unit_test(test_blast_radius_recoveries),
        cmocka_unit_test(test_repair_slots),
        cmocka_unit_test(test_llama3_interruptions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
