/* test_step_faults.c — a stalled rank (seed 000 §3.1 NCCL hang) in the step executor.
 *
 * The truth is the schedule worked out by hand: the rank on the stalled GPU stops before the first op
 * of its forward of (layer, micro-batch); its EP peers run on to the dispatch of that layer and
 * micro-batch and wait there; the rest of the cluster blocks on other ops (the next pipeline stage on
 * its RECV, the other replicas in the gradient reduce-scatter). The executor must name exactly that,
 * identically with and without the replica shortcut, and the trace must carry it (trace.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "sim/report/results.h"
#include "sim/simgrid/step_sim.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/trace.h"
#include "tests/step_fixtures.h"

/* pp 2, ep 4, dp `dp`, 4 MoE layers (2 per stage), 16 experts, 8 micro-batches, 8 GPUs per node */
static void stalled_scenario(scenario *s, schedule_kind sk, int dp, int gpu, int layer, int mb) {
    fx_scenario(s, 4, 16, 2, 4, dp, 8, sk, 1, 8);
    s->faults.n_stalls = 1;
    s->faults.stalls[0] = (stall_fault){.gpu = gpu, .layer = layer, .micro_batch = mb};
}

static int run(const program *p, int shortcut, int n_trace, const int *trace, step_exec_result *r, moe_error *err) {
    static fx_comm_costs cc = {3e-4, 2e-5, 1e-3};
    static fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    static comm_model cm;
    cm = fx_comm(&cc);
    program_op **mat = NULL;
    if (!shortcut) {
        mat = calloc((size_t)p->n_ranks, sizeof *mat);
        for (int i = 0; i < p->n_ranks; i++) program_materialize(p, i, &mat[i]);
    }
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut,
                        .materialized = mat, .n_trace_ranks = n_trace, .trace_ranks = trace};
    int rc = step_exec_run(p, &o, r, err);
    if (mat) { for (int i = 0; i < p->n_ranks; i++) free(mat[i]); free(mat); }
    return rc;
}

static void op_label(const program *p, int rank, int idx, char *out, size_t n) {
    program_op o;
    program_rank_op(p, rank, idx, &o);
    snprintf(out, n, "%s %s L%d mb%d", op_kind_label(o.kind), kernel_name(o.kernel), o.layer, o.mb);
}

/* 1F1B, stage 0 = layers 0-1. Stage 0 runs F0 | F1 B0 F2 B1 ...: GPU 1 (rank 1: replica 0, stage 0,
 * ep 1) stops before attn_fwd of layer 1, micro-batch 2. Ranks 0, 2, 3 run through layer 0 of mb 2
 * (rank 1 took part: it was issued before) and wait in the dispatch of layer 1 mb 2; rank 1's last op
 * is unpermute_fwd of layer 0 mb 2 (after B0 on the compute stream). The other 28 ranks (stage 1 of
 * replica 0 on RECV; replicas 1-3 in the tail reduce-scatter) are blocked elsewhere. */
static void test_stall_1f1b_by_hand(void **st) {
    (void)st;
    for (int shortcut = 1; shortcut >= 0; shortcut--) {
        scenario s;
        stalled_scenario(&s, SCHED_1F1B, 4, 1, 1, 2);
        moe_error err = {0};
        program *p = NULL;
        assert_int_equal(program_build(&s, &p, &err), 0);
        step_exec_result r;
        assert_int_equal(run(p, shortcut, 0, NULL, &r, &err), EXIT_RUNTIME);
        const step_hang *h = &r.hang;
        assert_true(h->found);
        assert_int_equal(h->culprit, 1);
        assert_int_equal(h->op, OP_A2A_DISPATCH);
        assert_int_equal(h->group_kind, GROUP_EP);
        assert_int_equal(h->group, program_group_of(p, 1, GROUP_EP));
        assert_int_equal(h->layer, 1);
        assert_int_equal(h->mb, 2);
        assert_int_equal(h->n_waiting, 3);
        assert_int_equal(h->waiting[0], 0); assert_int_equal(h->waiting[1], 2); assert_int_equal(h->waiting[2], 3);
        assert_int_equal(h->n_missing, 1);
        assert_int_equal(h->missing[0], 1);
        char lab[96];
        op_label(p, 1, h->missing_last_op[0], lab, sizeof lab);
        assert_string_equal(lab, "COMPUTE unpermute_fwd L0 mb2");
        assert_int_equal(h->blocked_elsewhere, 28);
        assert_non_null(strstr(err.msg, "rank 1 (node 0 GPU 1) never arrived at A2A_DISPATCH layer 1 mb 2 of EP "
                                        "group 0; 3 ranks wait there"));
        assert_true(r.step_time_s == 0);
        /* per-rank results are still there: the culprit ran forwards 0, 1 and layer 0 of 2 */
        assert_true(r.split[1].compute_s > 0 && r.split[1].end_s > 0);
        assert_true(r.split[1].compute_s < r.split[0].compute_s);
        step_exec_result_free(&r);
        program_free(p);
    }
}

/* DualPipe: GPU 5 (replica 0, pipeline rank 1, ep 1) holds model stage 0 (layers 0-1) of the up
 * pipeline (micro-batches 4-7). It stops before layer 0 of micro-batch 5: its EP peers 4, 6, 7 wait in
 * that dispatch. The shortcut (replica 3 folded onto replica 1, its routing twin) must describe the
 * same hang as the materialised run of all 32 ranks. */
static void test_stall_dualpipe_shortcut_exact(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_DUALPIPE, 4, 5, 0, 5);
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    step_exec_result a, b;
    assert_int_equal(run(p, 1, 0, NULL, &a, &err), EXIT_RUNTIME);
    assert_int_equal(run(p, 0, 0, NULL, &b, &err), EXIT_RUNTIME);
    /* the stalled replica 0, and one healthy replica per routing sample stream (program.h
     * "Routing": replicas 0 and 2 route alike, 1 and 3 too): 2 and 1, 3 mirrored onto 1 */
    assert_int_equal(a.n_simulated_replicas, 3);
    assert_int_equal(b.n_simulated_replicas, 4);
    assert_true(a.hang.found && b.hang.found);
    assert_int_equal(a.hang.culprit, 5);
    assert_int_equal(a.hang.op, OP_A2A_DISPATCH);
    assert_int_equal(a.hang.layer, 0);
    assert_int_equal(a.hang.mb, 5);
    assert_int_equal(a.hang.n_waiting, 3);
    assert_int_equal(a.hang.waiting[0], 4); assert_int_equal(a.hang.waiting[1], 6); assert_int_equal(a.hang.waiting[2], 7);
    assert_int_equal(a.hang.n_missing, 1);
    assert_int_equal(a.hang.group, b.hang.group);
    assert_int_equal(a.hang.n_waiting, b.hang.n_waiting);
    assert_int_equal(a.hang.n_missing, b.hang.n_missing);
    assert_int_equal(a.hang.missing_last_op[0], b.hang.missing_last_op[0]);
    assert_int_equal(a.hang.blocked_elsewhere, b.hang.blocked_elsewhere);
    assert_int_equal(a.hang.blocked_elsewhere, 28);
    for (int r = 0; r < a.n_ranks; r++) {
        assert_true(a.split[r].compute_s == b.split[r].compute_s);
        assert_true(a.split[r].end_s == b.split[r].end_s);
    }
    step_exec_result_free(&a); step_exec_result_free(&b);
    program_free(p);
}

/* A stall the rank never reaches is bad input, with the JSON path: the program refuses it when it
 * resolves its faults (sim/program/faults.h), before any executor runs. */
static void test_stall_bad_input(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_1F1B, 2, 1, 3, 2);    /* GPU 1 is on stage 0: layers 0-1 */
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), EXIT_BADINPUT);
    assert_null(p);
    assert_non_null(strstr(err.msg, "faults.stalls[0].layer"));
    assert_non_null(strstr(err.msg, "layers 0..1 with micro-batches 0..7"));
    s.faults.stalls[0] = (stall_fault){.gpu = 99, .layer = 0, .micro_batch = 0};
    assert_int_equal(program_build(&s, &p, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "faults.stalls[0].gpu"));
}

/* The hang in trace.json (trace.h "otherData"), for simdiag. */
static void test_stall_trace(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_1F1B, 2, 1, 1, 2);
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    step_exec_result r0, r;
    assert_int_equal(run(p, 1, 0, NULL, &r0, &err), EXIT_RUNTIME);
    int ranks[16];
    int n = step_trace_default_ranks(p, &r0, ranks, 16);
    step_exec_result_free(&r0);
    assert_int_equal(run(p, 1, n, ranks, &r, &err), EXIT_RUNTIME);
    cJSON *doc = step_trace_build(p, &r, "simulated");
    cJSON *od = cJSON_GetObjectItem(doc, "otherData");
    assert_null(cJSON_GetObjectItem(od, "step_time_s"));
    cJSON *h = cJSON_GetObjectItem(od, "hang");
    assert_true(cJSON_IsObject(h));
    assert_string_equal(cJSON_GetObjectItem(h, "op")->valuestring, "A2A_DISPATCH");
    assert_string_equal(cJSON_GetObjectItem(h, "group_kind")->valuestring, "EP");
    assert_int_equal(cJSON_GetObjectItem(h, "layer")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(h, "micro_batch")->valueint, 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "waiting")), 3);
    cJSON *miss = cJSON_GetObjectItem(h, "missing");
    assert_int_equal(cJSON_GetArraySize(miss), 1);
    assert_int_equal(cJSON_GetArrayItem(miss, 0)->valueint, 1);
    cJSON *ml = cJSON_GetArrayItem(cJSON_GetObjectItem(h, "missing_last_op"), 0);
    assert_string_equal(cJSON_GetObjectItem(ml, "op")->valuestring, "COMPUTE unpermute_fwd");
    assert_int_equal(cJSON_GetObjectItem(ml, "layer")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(ml, "micro_batch")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(h, "blocked_elsewhere")->valueint, 12);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(od, "rank_step_s")), 16);
    /* the culprit's "stalled" marker and the waiting ranks' pending dispatch */
    int stalled = 0, waiting = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents")) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "i") != 0) continue;
        const char *nm = cJSON_GetObjectItem(e, "name")->valuestring;
        if (strcmp(nm, "stalled") == 0) { stalled++; assert_int_equal(cJSON_GetObjectItem(e, "pid")->valueint, 1); }
        if (strcmp(nm, "a2a_dispatch") == 0) waiting++;
    }
    assert_int_equal(stalled, 1);
    assert_true(waiting >= 1);     /* rank 0 (traced by default) waits */
    cJSON_Delete(doc);
    step_exec_result_free(&r);
    program_free(p);
}

/* step_simulate (SimGrid comm model, as simrun runs it): the hang is a runtime error naming the
 * culprit, and trace.json is still written. */
static void test_stall_step_simulate(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_1F1B, 2, 1, 1, 2);
    char path[64];
    snprintf(path, sizeof path, "/tmp/moesim_stall_trace_%d.json", (int)getpid());
    step_options opt = {.trace_path = path};
    step_result out;
    moe_error err = {0};
    assert_int_equal(step_simulate(&s, &opt, &out, &err), EXIT_RUNTIME);
    assert_non_null(strstr(err.msg, "rank 1 (node 0 GPU 1) never arrived at A2A_DISPATCH layer 1 mb 2"));
    char *text = read_file_text(path, NULL, &err);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    assert_non_null(doc);
    cJSON *h = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "otherData"), "hang");
    assert_true(cJSON_IsObject(h));
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "missing"), 0)->valueint, 1);
    cJSON_Delete(doc);
    free(text);
    remove(path);
    step_result_free(&out);
}


/* faults.collective_timeout_s (NCCL's watchdog). pp 2, ep 4, dp 1 on one node; GPU 1 computes 501x
 * slower. Every rank of stage 0 runs one attention forward (F = 1 ms) before the dispatch of layer 0
 * mb 0: ranks 0, 2, 3 arrive at 1 ms, rank 1 at 501 ms, and the all-to-all takes 0.3 ms, so they
 * wait 500.3 ms there (NCCL's watchdog times a collective from its launch to its end). A timeout of
 * 250 ms fires at 1 + 250 = 251 ms in that dispatch; one of 600 ms never fires. */
static void near(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol)) fail_msg("got %.12g, want %.12g", got, want);
}

static void test_timeout_slow_rank_by_hand(void **st) {
    (void)st;
    for (int shortcut = 1; shortcut >= 0; shortcut--) {
        scenario s;
        fx_scenario(&s, 4, 16, 2, 4, 1, 8, SCHED_1F1B, 1, 8);
        s.faults.n_slow_gpus = 1;
        s.faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 1, .factor = 501};
        s.faults.collective_timeout_s = 0.25;
        moe_error err = {0};
        program *p = NULL;
        assert_int_equal(program_build(&s, &p, &err), 0);
        step_exec_result r;
        assert_int_equal(run(p, shortcut, 0, NULL, &r, &err), EXIT_RUNTIME);
        const step_timeout *t = &r.timeout;
        assert_true(t->found);
        assert_true(t->rank == 0 || t->rank == 2 || t->rank == 3);
        assert_int_equal(t->op, OP_A2A_DISPATCH);
        assert_int_equal(t->group_kind, GROUP_EP);
        assert_int_equal(t->layer, 0);
        assert_int_equal(t->mb, 0);
        near(t->arrived_s, 1e-3, 1e-12);
        near(t->waited_s, 0.5003, 1e-12);   /* until the all-to-all (0.3 ms) ends */
        near(t->fired_s, 0.251, 1e-12);
        assert_non_null(strstr(err.msg, "collective timeout"));
        assert_non_null(strstr(err.msg, "A2A_DISPATCH layer 0 mb 0"));
        assert_false(r.hang.found);
        step_exec_result_free(&r);
        /* a timeout longer than every wait never fires (later waits grow: rank 1 falls further
         * behind), and the longest wait is reported */
        s.faults.collective_timeout_s = 3600;
        program_free(p);
        assert_int_equal(program_build(&s, &p, &err), 0);
        assert_int_equal(run(p, shortcut, 0, NULL, &r, &err), 0);
        assert_false(r.timeout.found);
        assert_true(r.max_collective_wait_s >= 0.5003 - 1e-12 && r.max_collective_wait_s < 3600);
        step_exec_result_free(&r);
        program_free(p);
    }
}

/* A hung step with a timeout: the ranks waiting in the hung dispatch wait forever, so the watchdog
 * fires timeout seconds after the first of them arrived; the hang is still described. */
static void test_timeout_on_hang(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_1F1B, 4, 1, 1, 2);
    s.faults.collective_timeout_s = 5;
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    const int trace[1] = {0};
    step_exec_result r;
    assert_int_equal(run(p, 1, 1, trace, &r, &err), EXIT_RUNTIME);
    assert_true(r.hang.found);
    assert_true(r.timeout.found);
    assert_true(isinf(r.timeout.waited_s));
    assert_int_equal(r.timeout.op, OP_A2A_DISPATCH);
    assert_int_equal(r.timeout.layer, 1);
    assert_int_equal(r.timeout.mb, 2);
    /* rank 0 waits in that dispatch from its arrival (its pending op's start in the trace) */
    const op_time *t0 = r.trace_times[0];
    double arrived0 = -1;
    for (int i = 0; i < p->stage_n_ops[0]; i++)
        if (t0[i].end_s < 0 && t0[i].start_s >= 0) arrived0 = t0[i].start_s;
    assert_true(arrived0 > 0);
    assert_true(r.timeout.fired_s <= arrived0 + 5 + 1e-12);
    assert_non_null(strstr(err.msg, "waited forever"));
    assert_non_null(strstr(err.msg, "never arrived at A2A_DISPATCH layer 1 mb 2"));
    step_exec_result_free(&r);
    program_free(p);
}

/* step_simulate: a timed-out step is a result (timed_out, step_time_s = when the watchdog fired, no
 * work done), not an error, so that the run level can price the failure. */
static void test_timeout_step_simulate(void **st) {
    (void)st;
    scenario s;
    stalled_scenario(&s, SCHED_1F1B, 2, 1, 1, 2);
    s.faults.collective_timeout_s = 30;
    step_options opt = {0};
    step_result out;
    moe_error err = {0};
    assert_int_equal(step_simulate(&s, &opt, &out, &err), 0);
    assert_true(out.timed_out);
    near(out.timeout_fraction, 1.0, 0);
    assert_true(out.step_time_s > 30 && out.step_time_s < 31);
    near(out.tokens_per_s_per_gpu, 0, 0);
    cJSON *ct = cJSON_GetObjectItem(out.breakdown, "collective_timeout");
    assert_true(cJSON_IsObject(ct));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(ct, "waited_s")));
    step_result_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall_1f1b_by_hand),
        cmocka_unit_test(test_stall_dualpipe_shortcut_exact),
        cmocka_unit_test(test_stall_bad_input),
        cmocka_unit_test(test_stall_trace),
        cmocka_unit_test(test_stall_step_simulate),
        cmocka_unit_test(test_timeout_slow_rank_by_hand),
        cmocka_unit_test(test_timeout_on_hang),
        cmocka_unit_test(test_timeout_step_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
