/* step_split_case.h — one small step whose split into compute / optimizer / exposed communication /
 * bubble is worked out by hand, for the accounting tests of every executor (header-only):
 * test_step_accounting.c runs it on the fast and the full-fidelity executor, test_live_accounting.c
 * on the live executor. All of them must report the split below.
 *
 * The program: a dense 2-layer model, 1F1B, pp 2 x dp 2 (tp 1, ep 1), 2 micro-batches, on 2 nodes of
 * 2 GPUs; rank = GPU: node 0 holds replica 0 (rank 0 = stage 0, rank 1 = stage 1), node 1 replica 1.
 * Pipeline SENDs stay inside a node (NVLink); the gradient reduce-scatter and the parameter all-gather
 * of each stage's DP group {stage s of both replicas} cross nodes on one rail (NICs). No two
 * transfers ever share a link, so each takes its single-flow time:
 *   S  = latency_us.nvlink + activation bytes / nvlink bandwidth            (every SEND)
 *   Cs = latency_us.same_leaf + (stage s gradient bytes / 2) / NIC bandwidth  (the RS and the AG:
 *        a ring of 2 moves half the buffer in one step)
 * Compute: attention forward F, attention backward-input B, attention backward-weight W, optimizer
 * O; every other kernel takes 0. (Include cmocka before this header.) Op lists (index: op; deps in brackets):
 *   stage 0: 0 embed  1 F[0]  2 ffn[1]  3 SEND mb0[2]  4 embed  5 F[4]  6 ffn[5]  7 SEND mb1[6]
 *            8 RECV g0  9 ffn_bi[8]  10 B[9]  11 ffn_bw  12 W  13 embed_bwd[10]  14 RECV g1
 *            15 ffn_bi[14]  16 B[15]  17 ffn_bw  18 W  19 embed_bwd[16]  20 RS[19]  21 O[20]  22 AG[21]
 *   stage 1: 0 RECV a0  1 F[0]  2 ffn  3 head  4 head_bwd  5 ffn_bi  6 B[5]  7 ffn_bw  8 W
 *            9 SEND g0[6]  10 RECV a1  11 F[10]  ...  16 B  17  18 W  19 SEND g1[16]  20 RS[18]  21 O[20]
 *            22 AG[21]
 * (layout.overlap_grad_reduce off: one gradient collective per stage after its last kernel.)
 * The timeline (with S < F):
 *   stage 0: F0 [0,F], SEND0 [F,F+S], F1 [F,2F], SEND1 [2F,2F+S]; waits for g0 until 2F+2S+B
 *            (stage 1: F0 [F+S,2F+S], B0 [2F+S,2F+S+B] then SEND g0 for S); B0, W0 to 2F+2S+2B+W;
 *            waits for g1 until 3F+2S+2B+W (stage 1: W0 to 2F+S+B+W, F1, B1 then SEND g1); B1, W1
 *            to 3F+2S+3B+2W; RS for C0, O, AG for C0: the step ends at T = 3F+2S+3B+2W+O+2C0.
 *   stage 1: waits for a0 until F+S; F0, B0, W0, F1 (a1 arrived at 2F+S, long before), B1, W1 end
 *            at 3F+S+2B+2W; RS for C1, O, AG for C1; then idle until T.
 * Split per rank (both replicas alike):
 *   stage 0: compute 2F+2B+2W, optimizer O, exposed 2C0 (the RS before the optimizer, the AG tail),
 *            bubble (2S+B) + F
 *   stage 1: compute 2F+2B+2W, optimizer O, exposed 2C1, bubble (F+S) + (S+B+2C0-2C1) (idle after its
 *            end)
 * and no overhead.
 *
 * With faults (sim/program/faults.h): GPU 1 (rank 1) slow by k and GPU 0's NIC at bandwidth factor n.
 * The NIC carries stage 0's RS and AG: C0 = latency + (bytes/2) / (n x NIC bandwidth). Rank 1 runs
 * every kernel k times longer, so rank 0 waits longer for its gradients and both stages' RS start when
 * the faulty replica's last kernel ends (A0 = F+2S+2kF+2kB+kW+B+W on rank 0, A1 = F+S+2k(F+B+W) on
 * rank 1), the AG of stage 1 when rank 1's optimizer ends:
 *   rank 0: compute 2F+2B+2W, optimizer O, exposed 2C0, bubble (2S+kF+kB-F) + (kF+kB+kW-B-W);
 *           end E0 = A0+C0+O+C0
 *   rank 1: compute k(2F+2B+2W), optimizer kO, exposed 2C1, bubble (F+S) + (T-E1);
 *           end E1 = A1+C1+kO+C1
 *   rank 2: as rank 0 with k = 1 until its last kernel ends at H0-O, H0 = 3F+2S+3B+2W+O; then waits
 *           for the RS, its optimizer and the AG with rank 0: exposed E0-H0, bubble (2S+B+F) + (T-E0)
 *   rank 3: healthy until H1-O, H1 = 3F+S+2B+2W+O: exposed E1-H1, bubble (F+S) + (T-E1)
 *   T = max(E0, E1). With k = 1 and n = 1 this is the split above.
 */
#ifndef MOESIM_TESTS_STEP_SPLIT_CASE_H
#define MOESIM_TESTS_STEP_SPLIT_CASE_H

#include <stdio.h>
#include <string.h>

#include "sim/exec/comm.h"
#include "sim/exec/step_accounting.h"
#include "sim/program/program.h"
#include "tests/step_fixtures.h"

/* compute (s) */
#define SPLIT_F 10e-3
#define SPLIT_B 20e-3
#define SPLIT_W 5e-3
#define SPLIT_O 4e-3
/* fabric: latencies and bandwidths chosen so that S = 2 ms and Cs is about 3 ms */
#define SPLIT_LAT_US 1000.0
#define SPLIT_NVLINK_GBPS 14.680064   /* 14680064-byte activations in 1 ms */
#define SPLIT_NIC_GBPS 6000.0

static inline void split_case_scenario(scenario *s) {
    fx_scenario(s, 2, 0, 2, 1, 2, 2, SCHED_1F1B, 1, 2);
    s->cluster.rails = 2;
    s->cluster.nvlink_GBps = SPLIT_NVLINK_GBPS;
    s->cluster.nic_gbps = SPLIT_NIC_GBPS;
    s->cluster.latency_us.nvlink = SPLIT_LAT_US;
    s->cluster.latency_us.same_leaf = SPLIT_LAT_US;
    s->cluster.latency_us.cross_leaf = SPLIT_LAT_US;
    /* the links at exactly these rates (the hand times use them as they are) */
    snprintf(s->calibration, sizeof s->calibration, "tests/data/costmodel-line-rate.json");
}

static inline double split_case_price(void *ctx, const program *p, int rank, const program_op *o) {
    (void)ctx; (void)p; (void)rank;
    switch (o->kernel) {
    case K_ATTN_FWD: return SPLIT_F;
    case K_ATTN_BWD_INPUT: return SPLIT_B;
    case K_ATTN_BWD_WEIGHT: return SPLIT_W;
    case K_OPTIMIZER: return SPLIT_O;
    default: return 0;
    }
}

/* The single-flow times above, as a comm model (the case has no all-to-all). */
static inline double split_case_p2p(void *ctx, int a, int b, double bytes) {
    (void)ctx; (void)a; (void)b;
    return SPLIT_LAT_US * 1e-6 + bytes / (SPLIT_NVLINK_GBPS * 1e9);
}
static inline double split_case_coll(void *ctx, coll_kind k, const int *g, int n, double bytes, int conc) {
    (void)ctx; (void)k; (void)g; (void)n; (void)conc;
    return SPLIT_LAT_US * 1e-6 + bytes / 2 / (SPLIT_NIC_GBPS * 1e9 / 8);
}
static inline double split_case_a2a(void *ctx, const a2a_pattern *p) { (void)ctx; (void)p; return -1; }
static inline comm_model split_case_comm(void) {
    return (comm_model){.name = "split-case", .a2a_s = split_case_a2a, .p2p_s = split_case_p2p,
                        .collective_s = split_case_coll};
}

/* The split of every rank (4, rank = replica * 2 + stage) from the formulas above, with GPU 1 slow by
 * k and GPU 0's NIC at factor n (1 and 1: healthy); returns the step time. */
static inline double split_case_expected_faulty(const program *p, double k, double n, step_split out[4]) {
    double S = 0, C[2] = {0, 0};
    for (int st = 0; st < 2; st++)
        for (int i = 0; i < p->stage_n_ops[st]; i++) {
            const program_op *o = &p->stage_ops[st][i];
            if (o->kind == OP_SEND) S = split_case_p2p(NULL, 0, 0, o->bytes);
            if (o->kind == OP_REDUCE_SCATTER)
                C[st] = SPLIT_LAT_US * 1e-6 + o->bytes / 2 / ((st == 0 ? n : 1) * SPLIT_NIC_GBPS * 1e9 / 8);
        }
    const double F = SPLIT_F, B = SPLIT_B, W = SPLIT_W, O = SPLIT_O, work = 2 * F + 2 * B + 2 * W;
    double E0 = F + 2 * S + 2 * k * F + 2 * k * B + k * W + B + W + O + 2 * C[0];
    double E1 = F + S + 2 * k * (F + B + W) + k * O + 2 * C[1];
    double H0 = 3 * F + 2 * S + 3 * B + 2 * W + O, H1 = 3 * F + S + 2 * B + 2 * W + O;
    double T = E0 > E1 ? E0 : E1;
    out[0] = (step_split){.compute_s = work, .optimizer_s = O, .exposed_comm_s = 2 * C[0],
                          .bubble_s = (2 * S + k * F + k * B - F) + (k * F + k * B + k * W - B - W) + (T - E0),
                          .end_s = E0};
    out[1] = (step_split){.compute_s = k * work, .optimizer_s = k * O, .exposed_comm_s = 2 * C[1],
                          .bubble_s = (F + S) + (T - E1), .end_s = E1};
    out[2] = (step_split){.compute_s = work, .optimizer_s = O, .exposed_comm_s = E0 - H0,
                          .bubble_s = (2 * S + B + F) + (T - E0), .end_s = E0};
    out[3] = (step_split){.compute_s = work, .optimizer_s = O, .exposed_comm_s = E1 - H1,
                          .bubble_s = (F + S) + (T - E1), .end_s = E1};
    return T;
}
static inline double split_case_expected(const program *p, step_split out[4]) {
    return split_case_expected_faulty(p, 1, 1, out);
}

/* Every rank's split against the hand split, to `tol` seconds (cmocka asserts). */
static inline void split_case_check(const char *who, double step_s, const step_split got[4],
                                    const step_split want[4], double T, double tol) {
    printf("  %-22s step %.6f ms (hand %.6f)\n", who, step_s * 1e3, T * 1e3);
    assert_float_equal(step_s, T, tol);
    for (int k = 0; k < 4; k++) {
        const step_split *g = &got[k], *w = &want[k];
        printf("    rank %d: compute %.6f optimizer %.6f exposed %.6f bubble %.6f overhead %.6f ms (hand %.6f %.6f "
               "%.6f %.6f 0)\n", k, g->compute_s * 1e3, g->optimizer_s * 1e3, g->exposed_comm_s * 1e3,
               g->bubble_s * 1e3, g->overhead_s * 1e3, w->compute_s * 1e3, w->optimizer_s * 1e3,
               w->exposed_comm_s * 1e3, w->bubble_s * 1e3);
        assert_float_equal(g->compute_s, w->compute_s, tol);
        assert_float_equal(g->optimizer_s, w->optimizer_s, tol);
        assert_float_equal(g->exposed_comm_s, w->exposed_comm_s, tol);
        assert_float_equal(g->bubble_s, w->bubble_s, tol);
        assert_float_equal(g->overhead_s, 0, tol);
        assert_float_equal(g->end_s, w->end_s, tol);
    }
}

/* The case's scenario and program, with the hand split (want) and step time (*T); slow_k > 1 makes
 * GPU 1 slow by that factor, nic_n < 1 degrades GPU 0's NIC (faults.slow_gpus, faults.links). */
static inline program *split_case_program_faulty(scenario *s, double slow_k, double nic_n, step_split want[4],
                                                 double *T) {
    split_case_scenario(s);
    if (slow_k != 1) {
        s->faults.n_slow_gpus = 1;
        s->faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 1, .factor = slow_k};
    }
    if (nic_n != 1) {
        s->faults.n_links = 1;
        s->faults.links[0] = (link_fault){.gpu = 0, .kind = LINK_NIC, .factor = nic_n};
    }
    moe_error err = {0};
    program *p = NULL;
    if (program_build(s, &p, &err)) fail_msg("%s", err.msg);
    *T = split_case_expected_faulty(p, slow_k, nic_n, want);
    return p;
}
static inline program *split_case_program(scenario *s, step_split want[4], double *T) {
    return split_case_program_faulty(s, 1, 1, want, T);
}

/* The case with a stalled rank (faults.stalls): GPU 1 (rank 1, stage 1) stops before the forward of
 * layer 1, micro-batch 1, its op 11 (SPLIT_STALL_OP); it has run the first micro-batch. */
#define SPLIT_STALL_OP 11
static inline program *split_case_program_stalled(scenario *s) {
    split_case_scenario(s);
    s->faults.n_stalls = 1;
    s->faults.stalls[0] = (stall_fault){.gpu = 1, .layer = 1, .micro_batch = 1};
    moe_error err = {0};
    program *p = NULL;
    if (program_build(s, &p, &err)) fail_msg("%s", err.msg);
    return p;
}

#endif
