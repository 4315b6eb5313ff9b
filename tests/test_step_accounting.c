/* test_step_accounting.c — the one step accounting (sim/exec/step_accounting.h).
 *
 *   - its rules on timelines written by hand: idle time charged to the binding dependency (RECV ->
 *     bubble, collective -> exposed), the rest of a late start to overhead, the communication tail,
 *     the idle time to the end of the step, a step that hung;
 *   - the step of tests/step_split_case.h, split by hand, on the fast executor (with and without the
 *     replica shortcut) and on the full-fidelity SimGrid executor, whose transfers are SimGrid flows
 *     on the rail fabric: both must report the hand split (test_live_accounting.c holds the live
 *     executor to the same split).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/exec/step_accounting.h"
#include "sim/exec/step_exec.h"
#include "sim/simgrid/exec_full.h"
#include "tests/step_split_case.h"

static program_op op(op_kind k, kernel_kind kern, int n_deps, int d0, int d1) {
    program_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)k;
    o.kernel = (uint8_t)kern;
    o.n_deps = (uint8_t)n_deps;
    o.deps[0] = d0;
    o.deps[1] = d1;
    return o;
}

/* One rank, seconds: compute A [0,1]; RECV arrives at 3; compute B (deps RECV) starts at 3.5 (0.5 s
 * late: overhead); all-reduce (deps B) [4.5, 6]; compute C (deps all-reduce, A) [6, 7]; the optimizer
 * [7, 8] with no deps; an all-gather after it ends at 9.5. The step ends at 10. */
static void test_rules_by_hand(void **st) {
    (void)st;
    program_op ops[7] = {
        op(OP_COMPUTE, K_ATTN_FWD, 0, 0, 0),       op(OP_RECV, K_NONE, 0, 0, 0),
        op(OP_COMPUTE, K_ATTN_BWD_INPUT, 1, 1, 0), op(OP_ALL_REDUCE, K_NONE, 1, 2, 0),
        op(OP_COMPUTE, K_ATTN_BWD_WEIGHT, 2, 3, 0), op(OP_COMPUTE, K_OPTIMIZER, 0, 0, 0),
        op(OP_ALL_GATHER, K_NONE, 1, 5, 0),
    };
    op_time t[7] = {{0, 1}, {2, 3}, {3.5, 4.5}, {4.5, 6}, {6, 7}, {7, 8}, {8, 9.5}};
    step_split s;
    step_split_rank(ops, 7, t, NULL, NULL, 10, &s);
    assert_float_equal(s.compute_s, 3, 1e-12);        /* A, B, C */
    assert_float_equal(s.optimizer_s, 1, 1e-12);
    assert_float_equal(s.bubble_s, 2 + 0.5, 1e-12);   /* waiting for the RECV (1 -> 3), after the end */
    assert_float_equal(s.overhead_s, 0.5, 1e-12);     /* B started 0.5 s after its RECV arrived */
    assert_float_equal(s.exposed_comm_s, 1.5 + 1.5, 1e-12); /* C waited for the all-reduce, AG tail */
    assert_float_equal(s.end_s, 9.5, 1e-12);
    assert_float_equal(s.compute_s + s.optimizer_s + s.bubble_s + s.overhead_s + s.exposed_comm_s, 10, 1e-12);

    /* exact busy times override end - start */
    double busy[7] = {0.25, 0, 0.5, 0, 0.75, 1, 0};
    step_split_rank(ops, 7, t, busy, NULL, 10, &s);
    assert_float_equal(s.compute_s, 1.5, 1e-12);
    assert_float_equal(s.optimizer_s, 1, 1e-12);

    /* a hang: C and what follows never ran; no tail, no idle time to the end of the step */
    op_time h[7] = {{0, 1}, {2, 3}, {3.5, 4.5}, {4.5, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    step_split_rank(ops, 7, h, NULL, NULL, -1, &s);
    assert_float_equal(s.compute_s, 2, 1e-12);
    assert_float_equal(s.optimizer_s, 0, 0);
    assert_float_equal(s.bubble_s, 2, 1e-12);
    assert_float_equal(s.exposed_comm_s, 0, 0);
    assert_float_equal(s.end_s, 4.5, 1e-12);
}

static void test_summaries(void **st) {
    (void)st;
    step_split r[3] = {{.compute_s = 1, .optimizer_s = 1}, {.compute_s = 3, .bubble_s = 3},
                       {.compute_s = 3 * (1 + 1e-14), .exposed_comm_s = 3}};
    step_split m;
    step_split_mean(r, 3, &m);
    assert_float_equal(m.compute_s, 7.0 / 3, 1e-12);
    assert_float_equal(m.bubble_s, 1, 1e-12);
    assert_float_equal(m.exposed_comm_s, 1, 1e-12);
    assert_int_equal(step_split_slowest_rank(r, 3), 1);   /* rank 2 is within 1e-12 of rank 1 */
}

/* The fast executor (comm times: the case's single-flow times), with and without the replica
 * shortcut, and the full-fidelity executor, whose transfers are SimGrid flows on the rail fabric
 * (latency + bytes / bandwidth, one flow per link): the hand split, to SimGrid's precision there. */
static void test_executors_by_hand(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program(&s, want, &T);
    moe_error err = {0};
    comm_model cm = split_case_comm();
    step_exec_result r;
    for (int shortcut = 1; shortcut >= 0; shortcut--) {
        step_exec_opts o = {.comm = &cm, .price = split_case_price, .shortcut = shortcut};
        if (step_exec_run(p, &o, &r, &err)) fail_msg("%s", err.msg);
        split_case_check(shortcut ? "fast (shortcut)" : "fast (every replica)", r.step_time_s, r.split, want, T, 1e-12);
        step_exec_result_free(&r);
    }
    step_exec_opts o = {.price = split_case_price};
    if (sg_exec_full_run(p, &o, &r, &err)) fail_msg("%s", err.msg);
    split_case_check("full fidelity (SimGrid)", r.step_time_s, r.split, want, T, 1e-9);
    step_exec_result_free(&r);
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_by_hand),
        cmocka_unit_test(test_summaries),
        cmocka_unit_test(test_executors_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
