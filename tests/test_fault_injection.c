/* test_fault_injection.c — step-level fault injection (sim/program/faults.h) in the simulator's two
 * executors: each honours or refuses each fault kind.
 *
 *   - the program resolves the faults once: per-rank compute factors, link factors, stall points,
 *     faulty replicas (checked against the scenario by hand);
 *   - a slow GPU (faults.slow_gpus, x1.5) and a degraded NIC (faults.links, x0.5) on the step of
 *     tests/step_split_case.h, split by hand: the fast executor with the SimGrid pattern model that
 *     simrun uses (its comm model prices the faulty link) and the full-fidelity executor (the link is
 *     a link of the SimGrid platform) both report the hand split;
 *   - a stall: the fast executor runs it (test_step_faults.c checks the hang it describes), the
 *     full-fidelity executor refuses it with exit 2 naming faults.stalls.
 * test_live_exec.c holds the live executor to the same cases (it refuses the degraded link).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/exec/step_exec.h"
#include "sim/program/faults.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/exec_full.h"
#include "tests/step_split_case.h"

static void test_resolved_once(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program_faulty(&s, 1.5, 0.5, want, &T);
    const step_faults *f = &p->faults;
    for (int r = 0; r < 4; r++) {
        assert_float_equal(f->compute_factor[r], r == 1 ? 1.5 : 1.0, 0);
        assert_float_equal(f->nic_factor[r], r == 0 ? 0.5 : 1.0, 0);
        assert_float_equal(f->nvlink_factor[r], 1.0, 0);
        assert_int_equal(f->stop_at[r], STEP_NO_STALL);
    }
    assert_int_equal(f->n_slow_ranks, 1);
    assert_int_equal(f->n_link_ranks, 1);
    assert_int_equal(f->n_stalled_ranks, 0);
    assert_true(f->replica_faulty[0] && !f->replica_faulty[1]);
    program_free(p);

    /* two faults on one GPU multiply; a stall resolves to its op (stage 1: op 11 is the forward
     * attention of micro-batch 1, tests/step_split_case.h) */
    split_case_scenario(&s);
    s.faults.n_slow_gpus = 2;
    s.faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 3, .factor = 1.5};
    s.faults.slow_gpus[1] = (slow_gpu_fault){.gpu = 3, .factor = 2.0};
    s.faults.n_stalls = 1;
    s.faults.stalls[0] = (stall_fault){.gpu = 3, .layer = 1, .micro_batch = 1};
    moe_error err = {0};
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    assert_float_equal(p->faults.compute_factor[3], 3.0, 0);
    assert_int_equal(p->faults.stop_at[3], 11);
    assert_true(!p->faults.replica_faulty[0] && p->faults.replica_faulty[1]);
    program_free(p);
    /* layer 0 lives on stage 0: GPU 3 (stage 1) never runs it */
    s.faults.stalls[0].layer = 0;
    assert_int_equal(program_build(&s, &p, &err), EXIT_BADINPUT);
    printf("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "faults.stalls[0].layer"));
    assert_non_null(strstr(err.msg, "layers 1..1 with micro-batches 0..1"));
}

static void test_slow_gpu_and_link_by_hand(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program_faulty(&s, 1.5, 0.5, want, &T);
    moe_error err = {0};
    comm_model sg = sg_comm_create(&s, &err);
    if (!sg.a2a_s) fail_msg("%s", err.msg);
    step_exec_result r;
    step_exec_opts o = {.comm = &sg, .price = split_case_price, .shortcut = 1};
    if (step_exec_run(p, &o, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.n_simulated_replicas, 2);    /* replica 0 is faulty: no twin to mirror */
    split_case_check("fast (SimGrid patterns)", r.step_time_s, r.split, want, T, 1e-9);
    step_exec_result_free(&r);
    o.shortcut = 0;
    if (sg_exec_full_run(p, &o, &r, &err)) fail_msg("%s", err.msg);
    split_case_check("full fidelity (SimGrid)", r.step_time_s, r.split, want, T, 1e-9);
    step_exec_result_free(&r);
    if (sg.destroy) sg.destroy(sg.ctx);
    program_free(p);
}

static void test_full_refuses_stalls(void **st) {
    (void)st;
    scenario s;
    program *p = split_case_program_stalled(&s);
    moe_error err = {0};
    step_exec_opts o = {.price = split_case_price};
    step_exec_result r;
    assert_int_equal(sg_exec_full_run(p, &o, &r, &err), EXIT_BADINPUT);
    printf("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "faults.stalls: not supported by step.fidelity \"full\""));
    step_exec_result_free(&r);
    /* the fast executor runs it: rank 1 never arrives, the step hangs */
    comm_model cm = split_case_comm();
    step_exec_opts fo = {.comm = &cm, .price = split_case_price, .shortcut = 1};
    assert_int_equal(step_exec_run(p, &fo, &r, &err), EXIT_RUNTIME);
    assert_true(r.hang.found);
    assert_int_equal(r.hang.culprit, 1);
    step_exec_result_free(&r);
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolved_once),
        cmocka_unit_test(test_slow_gpu_and_link_by_hand),
        cmocka_unit_test(test_full_refuses_stalls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
