/* test_schedule.c — pipeline schedules and the step program against closed forms (REFERENCE.md §4).
 * Communication set to zero and compute to constants, so every bubble is hand-computable:
 *   1F1B bubble fraction (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1);
 *   every micro-batch's F precedes its B on every stage; SEND/RECV counts match across ranks;
 *   DualPipe keeps at most p+1 micro-batches of activations in flight (DeepSeek-V3 report);
 *   DualPipe's overlapped F/B pairs hide every all-to-all when comm <= compute and expose exactly
 *   the excess when comm > compute (the rule worked out above test_dualpipe_overlap_by_hand). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <cmocka.h>

#include "sim/program/schedule.h"
#include "sim/exec/step_exec.h"
#include "tests/step_fixtures.h"

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
        assert_true(fabs(r.split[rank].bubble_s / r.step_time_s - expect) < 1e-9);
        assert_true(fabs(r.split[rank].compute_s - ideal) < 1e-12);
        assert_true(fabs(r.split[rank].compute_s + r.split[rank].bubble_s + r.split[rank].exposed_comm_s + r.split[rank].optimizer_s
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

/* DualPipe's overlap, by hand. One MoE layer per model stage; every all-to-all takes c; the compute
 * is priced so that exactly one block of k seconds sits on the compute stream behind each of the four
 * all-to-alls of a layer: unpermute_bwd, shared_expert_fwd, shared_expert_bwd_input, unpermute_fwd
 * (attention F/B give the pipeline its shape; every other kernel is free). The program emits an
 * overlapped F/B pair as segments S1 T1 S2 T2 S3 T3 (each ending right after an all-to-all):
 *   compute: [attn_f] | unp_b (k) | shared_f (k) expert_f | shared_b (k) expert_b | unpermute_f (k) | perm_b ...
 *   comm:     dispF      dispB      combF                  combB
 * Let t be the dispatch of F, excess = max(0, c - k), and beta the time unp_b waits for the B item's
 * gradient RECV after t (a pipeline bubble inside the pair; 0 when the gradient is there).
 *   c <= k: each all-to-all runs under the next block; the pair exposes nothing, whatever beta.
 *   c > k:  the comm stream is the bottleneck (four all-to-alls back to back, FIFO). beta <= excess:
 *           perm_b starts at t + 4c; the compute stream ran 4k and idled beta on the RECV, so the
 *           all-to-alls expose 4 excess - beta. beta > excess: dispB is issued after dispF finished,
 *           perm_b starts at t + beta + k + 3c: exposed 3 excess. Together: 4 excess - min(beta, excess).
 * An item that is not paired (warm-up, cool-down, DualPipe's middle ranks) overlaps only its shared
 * expert with its dispatch and nothing with its combine: it exposes excess + c.
 * So per rank: exposed = sum over pairs (4 excess - min(beta, excess)) + lone F/B items * (excess + c),
 * pairs and lone items counted from the schedule (schedule_stage), beta read off the traced timeline. */
typedef struct { double a, b, k; } overlap_costs;
static double overlap_price(void *c, const program *p, int rank, const program_op *o) {
    (void)p; (void)rank;
    const overlap_costs *q = c;
    switch (o->kernel) {
    case K_ATTN_FWD: return q->a;
    case K_ATTN_BWD_INPUT: return q->b;
    case K_UNPERMUTE_BWD: case K_SHARED_EXPERT_FWD: case K_SHARED_EXPERT_BWD_INPUT: case K_UNPERMUTE_FWD: return q->k;
    default: return 0;
    }
}

/* Sum over the overlapped pairs of rank `rank` of min(beta, excess); counts the pairs in *n_pairs. A
 * pair's unpermute_bwd follows its F's dispatch directly (only the B's RECV or head_loss_bwd between). */
static double pair_beta_sum(const program *p, int rank, const op_time *tt, double excess, int *n_pairs) {
    double sum = 0;
    *n_pairs = 0;
    for (int i = 0; i < p->stage_n_ops[rank]; i++) {
        program_op o;
        program_rank_op(p, rank, i, &o);
        if (o.kind != OP_COMPUTE || o.kernel != K_UNPERMUTE_BWD) continue;
        int j = i - 1;
        program_op q;
        for (; j >= 0; j--) {
            program_rank_op(p, rank, j, &q);
            if (!(q.kind == OP_RECV || (q.kind == OP_COMPUTE && q.kernel == K_HEAD_LOSS_BWD))) break;
        }
        if (j < 0 || q.kind != OP_A2A_DISPATCH || q.phase != PHASE_F) continue;
        (*n_pairs)++;
        double t = tt[j].start_s;    /* the dispatch starts when S1's compute ends (ep = 1) */
        double beta = tt[i].start_s - t;
        sum += beta < excess ? beta : excess;
    }
    return sum;
}

static void check_pair_overlap(schedule_kind sk, int pp, int m, int v, double c, double k) {
    scenario s;
    fx_scenario(&s, pp * v, 4, pp, 1, 1, pp, sk, v, m);
    s.layout.moe_a2a_overlap = sk != SCHED_DUALPIPE;   /* DualPipe pairs by itself */
    program *prog = NULL;
    moe_error err = {0};
    assert_int_equal(program_build(&s, &prog, &err), 0);
    fx_comm_costs cc = {c, 0, 0};
    comm_model cm = fx_comm(&cc);
    overlap_costs q = {.a = 2e-3, .b = 4e-3, .k = k};
    int *ranks = malloc((size_t)pp * sizeof(int));
    for (int i = 0; i < pp; i++) ranks[i] = i;
    step_exec_opts o = {.comm = &cm, .price = overlap_price, .price_ctx = &q, .shortcut = 1,
                        .n_trace_ranks = pp, .trace_ranks = ranks};
    step_exec_result r;
    assert_int_equal(step_exec_run(prog, &o, &r, &err), 0);
    schedule_spec sp = {.kind = sk, .pp = pp, .vpp = v, .m = m, .n_chunks = sk == SCHED_DUALPIPE ? 2 : v,
                        .a2a_overlap = s.layout.moe_a2a_overlap};
    double excess = c > k ? c - k : 0;
    for (int st = 0; st < pp; st++) {
        sched_item *it = NULL;
        int n = schedule_stage(&sp, st, &it), pairs = 0, lone = 0, found = 0;
        for (int i = 0; i < n; i++) {
            if (it[i].overlap_next) { pairs++; i++; continue; }
            if (it[i].phase != SI_W) lone++;
        }
        free(it);
        double beta = pair_beta_sum(prog, st, r.trace_times[st], excess, &found);
        assert_int_equal(found, pairs);
        assert_true(pairs > 0);
        double expect = pairs * 4 * excess - beta + lone * (excess + c);
        assert_true(fabs(r.split[st].exposed_comm_s - expect) < 1e-12);
        if (c <= k) assert_true(fabs(r.split[st].exposed_comm_s - lone * c) < 1e-12);   /* pairs hide all */
    }
    step_exec_result_free(&r);
    free(ranks);
    program_free(prog);
}

static void test_dualpipe_overlap_by_hand(void **st) {
    (void)st;
    double k = 1e-3;
    double cs[] = {0.25e-3, 0.5e-3, 1e-3, 1.2e-3, 1.5e-3, 3e-3};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        check_pair_overlap(SCHED_DUALPIPE, 4, 16, 1, cs[i], k);
        check_pair_overlap(SCHED_DUALPIPE, 8, 32, 1, cs[i], k);
    }
}

/* layout.moe_a2a_overlap (Megatron's overlap_moe_expert_parallel_comm): interleaved 1F1B and 1F1B
 * pair each steady-state forward with the backward after it, and the same hand-solved rule holds:
 * an all-to-all that fits under the paired compute (c <= k) is hidden exactly, the excess is exposed
 * otherwise (check_pair_overlap: 4 excess - min(beta, excess) per pair, excess + c per lone item). */
static void test_a2a_overlap_by_hand(void **st) {
    (void)st;
    double k = 1e-3;
    double cs[] = {0.25e-3, 1e-3, 1.5e-3, 3e-3};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        check_pair_overlap(SCHED_INTERLEAVED, 4, 8, 2, cs[i], k);
        check_pair_overlap(SCHED_INTERLEAVED, 2, 8, 3, cs[i], k);
        check_pair_overlap(SCHED_1F1B, 4, 12, 1, cs[i], k);
        check_pair_overlap(SCHED_1F1B, 1, 6, 1, cs[i], k);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_bubble),
        cmocka_unit_test(test_interleaved_bubble),
        cmocka_unit_test(test_items_order),
        cmocka_unit_test(test_send_recv_match),
        cmocka_unit_test(test_dualpipe_runs),
        cmocka_unit_test(test_dualpipe_overlap_by_hand),
        cmocka_unit_test(test_a2a_overlap_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
