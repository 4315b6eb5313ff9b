/* test_multistep.c — routing.steps > 1 at the step level (sim/simgrid/step_sim.c with the drift of
 * sim/program/routing_drift.h), on tests/data/scenarios/small-moe.json (32 GPUs, 16 experts, top-2):
 *   - without drift (no walk, no hot expert, no bias) every step routes fresh tokens (its draws keyed
 *     by the step too): the steps differ, and step k is bit for bit the one-step simulation of step
 *     k's draws (step_options.first_step), step 0 the plain one-step simulation; a law that leaves
 *     nothing to chance (top_k = experts) takes the one-step time at every step exactly;
 *   - a hot expert appearing and decaying: each step is its one-step twin too;
 *   - a hot expert with onset t0, peak h and decay tau: the law's share is h exp(-(t - t0) / tau) to
 *     the last bit, the measured share of the routed tokens within sampling error of it, none before;
 *   - bias balancing pulls the hot share under the unbiased closed form and shortens the steps;
 *   - the same seed gives the same series bit for bit; the run level's "mean" rule takes the mean
 *     of the completed steps, its "cycle" rule each step's time (a timed-out one's until its hang);
 *   - redundant experts (EPLB) split a hot expert's pairs over its copies by the closed form, on the
 *     ranks the oracle's rule picks by hand;
 *   - bad drift fields exit 2 naming the file, the path, the value and the expectation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "sim/program/routing.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/step_sim.h"
#include "step_fixtures.h"


/* The routing dynamics alone: this small model's layers are so short that its host side (host.framework,
 * sim/exec/step_host.h) would set the step time and hide the hot expert's imbalance behind it. */
static void load(scenario *s) { assert_int_equal(fx_small_moe_routing(s), 0); }

static void simulate(const scenario *s, step_result *r) {
    moe_error err = {0};
    step_options so = {0};
    memset(r, 0, sizeof *r);
    int rc = step_simulate(s, &so, r, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* A one-step simulation at step k (step_options.first_step): step k's law and draws. */
static void simulate_at(const scenario *s, int step, step_result *r) {
    moe_error err = {0};
    step_options so = {.first_step = step};
    memset(r, 0, sizeof *r);
    int rc = step_simulate(s, &so, r, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* Without drift every step routes fresh tokens under the same law: the steps differ, step 0 is the
 * one-step simulation bit for bit, and every step k is the one-step simulation of step k's draws (its
 * twin) bit for bit; two sequences of the same seed are the same. */
static void no_drift_steps_are_fresh_draws(void **state) {
    (void)state;
    scenario s;
    load(&s);
    step_result one, many, again;
    simulate(&s, &one);
    assert_int_equal(one.n_steps, 0);   /* one step: no series */
    s.routing.steps = 6;
    simulate(&s, &many);
    simulate(&s, &again);
    assert_int_equal(many.n_steps, 6);
    assert_true(many.step_time_s == one.step_time_s && many.series_step_time_s[0] == one.step_time_s);
    assert_memory_equal(many.series_step_time_s, again.series_step_time_s, 6 * sizeof(double));
    assert_true(many.steps_max_s > many.steps_min_s);   /* fresh draws: the routing differs */
    int differ = 0;
    for (int t = 1; t < 6; t++) differ += many.series_rank_load_max_mean[t] != many.series_rank_load_max_mean[0];
    assert_true(differ >= 4);
    scenario one_step = s;
    one_step.routing.steps = 1;
    for (int t = 0; t < 6; t++) {
        step_result twin;
        simulate_at(&one_step, t, &twin);
        assert_int_equal(twin.n_steps, 0);
        assert_true(twin.step_time_s == many.series_step_time_s[t]);
        assert_true(twin.expert_load_cv >= 0);
        step_result_free(&twin);
    }
    step_result_free(&one);
    step_result_free(&many);
    step_result_free(&again);
}

/* A law that leaves nothing to chance (every token to all 16 experts: top_k = experts, no node limit,
 * dropless) routes every step alike: N steps take exactly the one-step time each. */
static void deterministic_law_equal_steps(void **state) {
    (void)state;
    scenario s;
    load(&s);
    s.model.top_k = s.model.experts;
    s.routing.node_limit = 0;
    s.routing.drop = 0;
    moe_error err = {0};
    assert_int_equal(scenario_validate(&s, &err), 0);
    step_result one, many;
    simulate(&s, &one);
    s.routing.steps = 5;
    simulate(&s, &many);
    for (int t = 0; t < 5; t++) assert_true(many.series_step_time_s[t] == one.step_time_s);
    assert_true(many.steps_p50_s == one.step_time_s && many.steps_max_s == one.step_time_s &&
                many.steps_min_s == one.step_time_s);
    double tf = -1;
    assert_true(step_result_run_step_s(&many, &s, &tf) == one.step_time_s && tf == 0);
    step_result_free(&one);
    step_result_free(&many);
}

static void hot_expert_decays(void **state) {
    (void)state;
    scenario s;
    load(&s);
    s.routing.steps = 9;
    s.routing.drop = 0;
    s.routing.hot_expert = 3;
    s.routing.drift.hot_onset_step = 2;
    s.routing.drift.hot_peak_share = 0.5;
    s.routing.drift.hot_decay_steps = 3;
    moe_error err = {0};
    assert_int_equal(scenario_validate(&s, &err), 0);
    step_result r;
    simulate(&s, &r);
    for (int t = 0; t < 9; t++) {
        double want = t < 2 ? 0 : 0.5 * exp(-(t - 2) / 3.0);
        assert_true(r.series_hot_share[t] == want);
        /* 8 ranks x 1024 tokens per sample: the share's standard error is under 0.006 */
        if (t >= 2) assert_true(fabs(r.series_max_expert_share[t] - want) < 0.03 || want < 0.2);
        else assert_true(r.series_max_expert_share[t] < 0.2);   /* uniform: 2/16 each */
    }
    /* each step is its one-step twin: without walk or bias, step t's law is h(t) alone */
    scenario one_step = s;
    one_step.routing.steps = 1;
    for (int t = 0; t < 9; t += 2) {
        step_result twin;
        simulate_at(&one_step, t, &twin);
        assert_true(twin.step_time_s == r.series_step_time_s[t]);
        step_result_free(&twin);
    }
    /* the hot step is the slowest; the load on the hot rank follows the share down */
    assert_true(r.series_step_time_s[2] == r.steps_max_s);
    assert_true(r.series_step_time_s[2] > r.series_step_time_s[1]);
    assert_true(r.series_rank_load_max_mean[2] > r.series_rank_load_max_mean[5]);

    /* bias balancing: while overloaded, the hot expert's share falls below the unbiased decay, and
     * the steps shorten (once under the mean the bias pulls it back up, towards balance; before the onset the bias follows the uniform draws' noise, +-gamma a step, so the onset step
     * itself may start a little above or below) */
    scenario b = s;
    b.routing.drift.bias_update_speed = 0.2;
    step_result rb;
    simulate(&b, &rb);
    for (int t = 3; t < 9; t++)   /* while the unbiased share is above the mean share 2/16 */
        if (r.series_hot_share[t] > 0.125) assert_true(rb.series_hot_share[t] < r.series_hot_share[t]);
    assert_true(rb.steps_mean_s < r.steps_mean_s);
    step_result_free(&r);
    step_result_free(&rb);
}

static void same_seed_same_series(void **state) {
    (void)state;
    scenario s;
    load(&s);
    s.routing.steps = 5;
    s.routing.drift.walk_sigma = 0.3;
    s.routing.drift.bias_update_speed = 0.05;
    step_result a, b;
    simulate(&s, &a);
    simulate(&s, &b);
    assert_memory_equal(a.series_step_time_s, b.series_step_time_s, 5 * sizeof(double));
    assert_memory_equal(a.series_max_expert_share, b.series_max_expert_share, 5 * sizeof(double));
    assert_memory_equal(a.series_rank_load_max_mean, b.series_rank_load_max_mean, 5 * sizeof(double));
    /* the walk moves the law: the steps differ */
    assert_true(a.steps_max_s > a.steps_min_s);
    step_result_free(&a);
    step_result_free(&b);
}

/* the run level's step times: under run.step_sequence "mean" the mean of the completed steps (a
 * timed-out one is the run level's failure, counted in the fraction); under "cycle" each step's own,
 * a timed-out step's until its hang began (its time less the watchdog's timeout, which the run level
 * adds as the detection delay) */
static void run_level_step_times(void **state) {
    (void)state;
    scenario s;
    load(&s);
    s.faults.collective_timeout_s = 5;
    /* steps of 1, 2 and 4 s and one that timed out after 7 s (a 5 s timeout: its hang began at 2 s) */
    double series[4] = {1, 2, 4, 7};
    unsigned char timed_out[4] = {0, 0, 0, 1};
    step_result r = {.n_steps = 4, .step_time_s = 1.0, .steps_timed_out = 1,
                     .steps_completed_mean_s = (1.0 + 2.0 + 4.0) / 3, .timeout_fraction = 0.25,
                     .series_step_time_s = series, .series_timed_out = timed_out};
    double tf = 0;
    assert_true(step_result_run_step_s(&r, &s, &tf) == 7.0 / 3);
    assert_true(tf == 0.25);
    assert_true(step_result_series_run_s(&r, &s, 2) == 4);
    assert_true(step_result_series_run_s(&r, &s, 3) == 2);
}

/* Redundant experts (EPLB) on one EP group of 8 ranks, 16 experts (2 per rank), top-2, expert 3 (on
 * rank 1, beside expert 2) hot at 60%, dropless. Expected loads per token: 0.6 for expert 3, 1.4 / 15
 * = 0.093 for each other; per copy the hot expert stays above 0.093 up to 6 copies (0.6 / 6 = 0.1),
 * so EPLB's rule gives it the first 5 extra slots: R = 4 makes 5 copies on 5 distinct ranks, each
 * computing a fifth of its pairs (ceil or floor per source rank: within 8 pairs), and its holder
 * keeps L / 5 + expert 2's pairs instead of L + expert 2's. */
static void redundant_experts_split_the_hot_expert(void **state) {
    (void)state;
    scenario s;
    load(&s);
    s.routing.distribution = ROUTE_HOT;
    s.routing.hot_expert = 3;
    s.routing.hot_share = 0.6;
    s.routing.drop = 0;
    s.routing.node_limit = 0;
    int gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    moe_error err = {0};
    double holder[2], hot_pairs[2];
    for (int v = 0; v < 2; v++) {
        s.routing.redundant_experts = v ? 4 : 0;
        routing_ctx *c = routing_ctx_create(&s, gpus, &err);
        assert_non_null(c);
        routing_sample rs;
        assert_int_equal(routing_sample_init(c, &rs, &err), 0);
        assert_int_equal(routing_draw(c, 0, 0, 0, &rs), 0);
        double L = rs.expert_tokens[3], total = 0, pairs = 0;
        for (int j = 0; j < 8; j++) total += rs.rank_tokens[j];
        for (int e = 0; e < 16; e++) pairs += rs.expert_tokens[e];
        assert_true(total == pairs);   /* replicas move pairs, never add or lose one */
        assert_true(L > 0.55 * rs.tokens_per_rank * 8);
        hot_pairs[v] = L;
        holder[v] = rs.rank_tokens[1] - rs.expert_tokens[2];   /* rank 1's share of expert 3 */
        if (!v) {
            assert_int_equal(routing_ctx_copies(c, 3), 1);
            assert_null(rs.slot_tokens);
            assert_true(holder[v] == L);
        } else {
            assert_int_equal(routing_ctx_copies(c, 3), 5);
            for (int e = 0; e < 16; e++) if (e != 3) assert_int_equal(routing_ctx_copies(c, e), 1);
            int seen[8] = {0};
            for (int k = 0; k < 5; k++) seen[routing_ctx_copy_rank(c, 3, k)]++;
            assert_int_equal(routing_ctx_copy_rank(c, 3, 0), 1);
            for (int j = 0; j < 8; j++) assert_true(seen[j] <= 1);   /* 5 distinct ranks */
            /* which ranks, by hand: the own slots carry 0.0933 + 0.12 on rank 1 (experts 2 and 3),
             * 0.1867 elsewhere; the 4 replicas (0.12 each, one extra slot per rank) go to the least
             * loaded ranks not holding expert 3, the lowest first: 0, 2, 3, 4 */
            int want[5] = {1, 0, 2, 3, 4};
            for (int k = 0; k < 5; k++) assert_int_equal(routing_ctx_copy_rank(c, 3, k), want[k]);
            assert_true(holder[v] >= L / 5 && holder[v] <= L / 5 + 8);
            for (int k = 1; k < 5; k++) {   /* each replica a fifth too */
                int j = routing_ctx_copy_rank(c, 3, k);
                double own = rs.expert_tokens[2 * j] + rs.expert_tokens[2 * j + 1];
                assert_true(fabs(rs.rank_tokens[j] - own - L / 5) <= 8);
            }
        }
        routing_sample_free(&rs);
        routing_ctx_free(c);
    }
    assert_true(hot_pairs[0] == hot_pairs[1]);   /* the router's choices do not depend on the copies */
    /* the step: the hot rank's expert GEMMs shrink, and so does the step */
    step_result a, b;
    s.routing.redundant_experts = 0;
    simulate(&s, &a);
    s.routing.redundant_experts = 4;
    simulate(&s, &b);
    assert_true(b.step_time_s < a.step_time_s);
    step_result_free(&a);
    step_result_free(&b);
}

static void bad_input(const char *routing, const char *path, const char *value) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"format\": \"moesim-scenario/1\", \"model\": {\"preset\": \"mixtral-8x7b\"}, \"cluster\": "
             "{\"nodes\": 4}, \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 8, \"dp\": 4, \"global_batch\": 64, "
             "\"schedule\": \"1f1b\"}, \"routing\": %s}", routing);
    scenario s;
    moe_error err = {0};
    int rc = scenario_parse("drift.json", text, &s, NULL, &err);
    if (rc == 0) rc = scenario_validate(&s, &err);
    assert_int_equal(rc, 2);
    if (!strstr(err.msg, "drift.json") || !strstr(err.msg, path) || !strstr(err.msg, value))
        fail_msg("error lacks file/path/value %s=%s: %s", path, value, err.msg);
}

static void bad_drift_fields(void **state) {
    (void)state;
    bad_input("{\"steps\": 0}", "routing.steps", "0");
    bad_input("{\"steps\": -3}", "routing.steps", "-3");
    bad_input("{\"steps\": 2.5}", "routing.steps", "2.5");
    bad_input("{\"drift\": {\"hot_decay_steps\": 0}}", "routing.drift.hot_decay_steps", "0");
    bad_input("{\"drift\": {\"hot_decay_steps\": -1}}", "routing.drift.hot_decay_steps", "-1");
    bad_input("{\"drift\": {\"walk_sigma\": -0.1}}", "routing.drift.walk_sigma", "-0.1");
    bad_input("{\"drift\": {\"hot_peak_share\": 1.5}}", "routing.drift.hot_peak_share", "1.5");
    bad_input("{\"drift\": {\"bias_update_speed\": -0.001}}", "routing.drift.bias_update_speed", "-0.001");
    bad_input("{\"drift\": {\"walk_reversion\": 2}}", "routing.drift.walk_reversion", "2");
    bad_input("{\"drift\": {\"hot_onset_step\": -1}}", "routing.drift.hot_onset_step", "-1");
    bad_input("{\"drift\": {\"walk_sigmaa\": 1}}", "routing.drift.walk_sigmaa", "walk_sigma");   /* did you mean */
    bad_input("{\"steps\": 4, \"distribution\": \"zipf\"}", "routing.distribution", "zipf");
    bad_input("{\"distribution\": \"hot\", \"drift\": {\"hot_peak_share\": 0.5}}", "routing.drift.hot_peak_share", "> 0");
    bad_input("{\"redundant_experts\": -1}", "routing.redundant_experts", "-1");
    bad_input("{\"redundant_experts\": 57}", "routing.redundant_experts", "57");   /* 8 experts x (EP 8 - 1) = 56 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_drift_steps_are_fresh_draws),
        cmocka_unit_test(deterministic_law_equal_steps),
        cmocka_unit_test(hot_expert_decays),
        cmocka_unit_test(same_seed_same_series),
        cmocka_unit_test(run_level_step_times),
        cmocka_unit_test(redundant_experts_split_the_hot_expert),
        cmocka_unit_test(bad_drift_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
