/* test_replica_routing.c — routing.group_samples (sim/program/program.h "Routing"): the EP groups of
 * different replicas route with their own samples, and the step waits for the slowest.
 *
 * 2,048 GPUs (256 nodes of 8): a 4-block MoE (64 experts, top-8, node-limited to 4 of the group's 8
 * nodes, no capacity limit) on PP1 x EP64 x DP32, 4 micro-batches, uniform routing; all-to-alls
 * priced by the closed-form fabric model (comm_analytic.c: the routing sample's byte matrix on the
 * rail fabric), compute by fixed prices (tests/step_fixtures.h).
 *   - shared: every replica routes with replica 0's samples, so the EP groups (one per replica) take
 *     the same time in every all-to-all: the slowest group's all-to-all time is the mean's.
 *   - independent: the replicas route with PROGRAM_SAMPLE_STREAMS streams, replica 0's being the
 *     shared one; the other stream's samples differ, so its group's all-to-alls take another time:
 *     the slowest group exceeds the mean, and since replica 0 runs exactly as with shared samples and
 *     the replicas meet only in the data-parallel collectives, where everyone waits for the last, the
 *     step is at least as long as with shared samples (the executor is monotone in every arrival).
 *   - the replica shortcut stays exact: the replicas of a stream are mirrored, and the run of every
 *     rank on its own gives the same step to the bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "sim/exec/comm.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/step_scale.h"
#include "sim/program/program.h"
#include "tests/step_fixtures.h"

typedef struct { double step_s, slowest_a2a_s, mean_a2a_s; int simulated_replicas, streams; } outcome;

static outcome run(group_samples_kind mode, int shortcut) {
    scenario s;
    fx_scenario(&s, 4, 64, 1, 64, 32, 8, SCHED_1F1B, 1, 4);
    s.routing.node_limit = 4;
    s.routing.group_samples = mode;
    program *p = NULL;
    moe_error err = {0};
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    comm_model cm = comm_analytic_create(&s);
    fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut, .per_rank = !shortcut};
    step_exec_result r;
    if (step_exec_run(p, &o, &r, &err)) fail_msg("step: %s", err.msg);
    cJSON *bd = cJSON_CreateObject();
    step_scale_report(p, &r, NULL, NULL, bd);
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(bd, "replica_routing"), "slowest_ep_group");
    outcome out = {.step_s = r.step_time_s, .simulated_replicas = r.n_simulated_replicas, .streams = p->n_sample_groups,
                   .slowest_a2a_s = cJSON_GetObjectItem(g, "a2a_s")->valuedouble,
                   .mean_a2a_s = cJSON_GetObjectItem(g, "mean_a2a_s")->valuedouble};
    cJSON_Delete(bd);
    step_exec_result_free(&r);
    cm.destroy(cm.ctx);
    program_free(p);
    return out;
}

static void the_slowest_replica_sets_the_step(void **st) {
    (void)st;
    outcome sh = run(GROUP_SAMPLES_SHARED, 1), in = run(GROUP_SAMPLES_INDEPENDENT, 1);
    print_message("shared: step %.6f ms, slowest EP group's all-to-alls %.3f us (mean %.3f); %d replica simulated\n",
                  1e3 * sh.step_s, 1e6 * sh.slowest_a2a_s, 1e6 * sh.mean_a2a_s, sh.simulated_replicas);
    print_message("independent: step %.6f ms (%+.4f%%), slowest EP group's all-to-alls %.3f us (mean %.3f, %+.3f%%); "
                  "%d streams, %d replicas simulated\n",
                  1e3 * in.step_s, 100 * (in.step_s / sh.step_s - 1), 1e6 * in.slowest_a2a_s, 1e6 * in.mean_a2a_s,
                  100 * (in.slowest_a2a_s / in.mean_a2a_s - 1), in.streams, in.simulated_replicas);
    assert_int_equal(sh.streams, 1);
    assert_int_equal(sh.simulated_replicas, 1);
    assert_true(sh.slowest_a2a_s == sh.mean_a2a_s);
    assert_int_equal(in.streams, PROGRAM_SAMPLE_STREAMS);
    assert_int_equal(in.simulated_replicas, PROGRAM_SAMPLE_STREAMS);
    assert_true(in.slowest_a2a_s > in.mean_a2a_s);
    assert_true(in.step_s >= sh.step_s);
}

static void streams_are_mirrored_exactly(void **st) {
    (void)st;
    outcome a = run(GROUP_SAMPLES_INDEPENDENT, 1), b = run(GROUP_SAMPLES_INDEPENDENT, 0);
    assert_int_equal(b.simulated_replicas, 32);
    assert_true(a.step_s == b.step_s);
    assert_true(a.slowest_a2a_s == b.slowest_a2a_s && a.mean_a2a_s == b.mean_a2a_s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_slowest_replica_sets_the_step),
        cmocka_unit_test(streams_are_mirrored_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
