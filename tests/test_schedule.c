/* test_schedule.c — pipeline schedules and the step program against closed forms (REFERENCE.md §4).
 * Communication set to zero and compute to constants, so every bubble is hand-computable:
 *   1F1B bubble fraction (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1);
 *   every micro-batch's F precedes its B on every stage; SEND/RECV counts match across ranks;
 *   DualPipe keeps at most p+1 micro-batches of activations in flight (DeepSeek-V3 report). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <cmocka.h>

#include "sim/schedule.h"
#include "sim/step_exec.h"
#include "tests/h4_fixtures.h"

static void run_bubble(schedule_kind sk, int p, int m, int v) {
    scenario s;
    fx_scenario(&s, p * v, 0, p, 1, 1, 1, sk, v, m);
    program *prog = NULL;
    moe_error err = {0};
    assert_int_equal(program_build(&s, &prog, &err), 0);
    fx_comm_costs cc = {0, 0, 0};
    comm_model cm = fx_comm(&cc);
    /* per model stage: forward 1.0 ms, backward 2.0 ms; with v chunks a chunk is 1/v of a stage */
    double F = 1e-3, B = 2e-3;
    fx_compute_costs k = {.F = F / v, .B = B / v, .W = 0};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    assert_int_equal(step_exec_run(prog, &o, &r, &err), 0);
    double expect = sk == SCHED_INTERLEAVED ? (double)(p - 1) / (v * m + p - 1) : (double)(p - 1) / (m + p - 1);
    double ideal = m * (F + B);
    double frac = (r.step_time_s - ideal) / r.step_time_s;
    assert_true(fabs(frac - expect) < 1e-9);
    for (int rank = 0; rank < prog->n_ranks; rank++) {
        assert_true(fabs(r.bubble_s[rank] / r.step_time_s - expect) < 1e-9);
        assert_true(fabs(r.compute_s[rank] - ideal) < 1e-12);
        assert_true(fabs(r.compute_s[rank] + r.bubble_s[rank] + r.exposed_comm_s[rank] + r.optimizer_s[rank]
                         - r.step_time_s) < 1e-12);
    }
    step_exec_result_free(&r);
    program_free(prog);
}

static void test_1f1b_bubble(void **st) {
    (void)st;
    int cases[][2] = {{2, 4}, {4, 8}, {4, 16}, {8, 8}, {8, 32}, {3, 7}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_bubble(SCHED_1F1B, cases[i][0], cases[i][1], 1);
}

static void test_interleaved_bubble(void **st) {
    (void)st;
    int cases[][3] = {{2, 4, 2}, {4, 8, 2}, {4, 16, 3}, {8, 16, 2}, {4, 4, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_bubble(SCHED_INTERLEAVED, cases[i][0], cases[i][1], cases[i][2]);
}

/* Every (mb, chunk) appears once as F, once as B, after its F; deferred W after its B. */
static void check_items(schedule_kind sk, int p, int m, int v) {
    schedule_spec sp = {.kind = sk, .pp = p, .vpp = v, .m = m, .n_chunks = sk == SCHED_DUALPIPE ? 2 : v};
    moe_error err = {0};
    assert_int_equal(schedule_check(&sp, "t", &err), 0);
    for (int s = 0; s < p; s++) {
        sched_item *it = NULL;
        int n = schedule_stage(&sp, s, &it);
        int *fpos = malloc(sizeof(int) * m * 2 * v), *bpos = malloc(sizeof(int) * m * 2 * v);
        for (int i = 0; i < m * 2 * v; i++) fpos[i] = bpos[i] = -1;
        int nF = 0, nB = 0, nW = 0, inflight = 0, peak = 0;
        for (int i = 0; i < n; i++) {
            int key = it[i].mb * (sk == SCHED_DUALPIPE ? 2 : v) + it[i].chunk;
            if (it[i].phase == SI_F) { assert_int_equal(fpos[key], -1); fpos[key] = i; nF++; inflight++; }
            else if (it[i].phase == SI_B) {
                assert_true(fpos[key] >= 0 && fpos[key] < i);
                assert_int_equal(bpos[key], -1); bpos[key] = i; nB++; inflight--;
            } else { assert_true(bpos[key] >= 0 && bpos[key] < i); nW++; }
            if (inflight > peak) peak = inflight;
        }
        int expect = sk == SCHED_DUALPIPE ? m : m * v;
        assert_int_equal(nF, expect);
        assert_int_equal(nB, expect);
        if (sk == SCHED_DUALPIPE) assert_true(peak <= p + 1);      /* DeepSeek-V3 Table 2: PP + 1 */
        if (sk == SCHED_1F1B) assert_true(peak <= (m < p - s ? m : p - s));   /* 1F1B: p - stage */
        (void)nW;
        free(fpos); free(bpos); free(it);
    }
}

static void test_items_order(void **st) {
    (void)st;
    check_items(SCHED_1F1B, 4, 8, 1);
    check_items(SCHED_1F1B, 8, 3, 1);
    check_items(SCHED_INTERLEAVED, 4, 8, 2);
    check_items(SCHED_DUALPIPE, 4, 8, 1);
    check_items(SCHED_DUALPIPE, 8, 20, 1);
    check_items(SCHED_DUALPIPE, 16, 60, 1);
}

/* SEND/RECV pairs match: for every SEND on rank a to rank b with tag t there is exactly one RECV on
 * b from a with tag t, and the bytes agree. */
static void check_p2p(schedule_kind sk, int p, int m, int v, int experts, int ep) {
    scenario s;
    fx_scenario(&s, p * (sk == SCHED_INTERLEAVED ? v : 1), experts, p, ep, 1, ep, sk, v, m);
    program *prog = NULL;
    moe_error err = {0};
    assert_int_equal(program_build(&s, &prog, &err), 0);
    int n = prog->n_ranks, tags = m * prog->n_model_stages * 2;
    int *sends = calloc((size_t)n * tags, sizeof(int)), *recvs = calloc((size_t)n * tags, sizeof(int));
    for (int r = 0; r < n; r++) {
        program_op *ops;
        int no = program_materialize(prog, r, &ops);
        for (int i = 0; i < no; i++) {
            if (ops[i].kind == OP_SEND) sends[ops[i].peer * tags + ops[i].tag]++;
            if (ops[i].kind == OP_RECV) recvs[r * tags + ops[i].tag]++;
            for (int k = 0; k < ops[i].n_deps; k++) assert_true(ops[i].deps[k] < i);
        }
        free(ops);
    }
    long total = 0;
    for (int i = 0; i < n * tags; i++) { assert_int_equal(sends[i], recvs[i]); assert_true(sends[i] <= 1); total += sends[i]; }
    /* each micro-batch crosses n_model_stages-1 boundaries forward and backward on each pipeline */
    assert_int_equal(total, (long)2 * m * (prog->n_model_stages - 1) * (n / p));
    free(sends); free(recvs);
    program_free(prog);
}

static void test_send_recv_match(void **st) {
    (void)st;
    check_p2p(SCHED_1F1B, 4, 8, 1, 0, 1);
    check_p2p(SCHED_INTERLEAVED, 4, 8, 2, 0, 1);
    check_p2p(SCHED_DUALPIPE, 4, 8, 1, 16, 4);
}

/* DualPipe runs without deadlock with comm and with the all-to-alls, and finishes every op. */
static void test_dualpipe_runs(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 8, 16, 4, 4, 1, 4, SCHED_DUALPIPE, 1, 8);
    program *prog = NULL;
    moe_error err = {0};
    assert_int_equal(program_build(&s, &prog, &err), 0);
    fx_comm_costs cc = {1e-4, 1e-5, 1e-4};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 1e-3, .B = 1e-3, .W = 5e-4, .expert = 2e-4};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    assert_int_equal(step_exec_run(prog, &o, &r, &err), 0);
    assert_true(r.step_time_s > 0);
    step_exec_result_free(&r);
    program_free(prog);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_bubble),
        cmocka_unit_test(test_interleaved_bubble),
        cmocka_unit_test(test_items_order),
        cmocka_unit_test(test_send_recv_match),
        cmocka_unit_test(test_dualpipe_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
