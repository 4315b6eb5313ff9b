/* test_eplb.c — DeepSeek's EPLB (sim/program/eplb.h) and its deployment over a series of steps
 * (sim/exec/eplb_series.h, routing.eplb_interval_steps), against hand-solved cases:
 *   - the global policy on a hand-built load vector: EPLB's replicate and balanced packing worked by
 *     hand (README "Global Load Balancing"; eplb.py), two copies of one expert on one GPU included
 *     (EPLB's packing does not keep them apart);
 *   - the hierarchical policy: groups packed onto nodes, replicated within nodes, packed onto GPUs,
 *     worked by hand step by step;
 *   - a rebalance's moves and bytes by hand: which rank sends which expert to which (a source on the
 *     receiver's node preferred), and the bytes one move carries from the model and the precision
 *     (weights FP8 1 B + FP32 master and Adam moments 12 B sharded by ZeRO-1 over the expert DP of 2,
 *     per parameter of one expert in the 2 MoE blocks of a pipeline rank); a rebalance's pause is the
 *     comm model's answer for those bytes as one pairwise all-to-all; the replicas' gradient ring
 *     all-reduce in bytes by hand; the replica slots in the plan's memory ledger by hand;
 *   - with K = 1 and a law that does not drift, the placement EPLB computes from the measured token
 *     counts of a step is, from the first rebalance on, the one it computes from the law's expected
 *     loads (the oracle's loads through the same policy);
 *   - routing.eplb_interval_steps = 0 leaves the series as it was (no EPLB series), K > 0 rebalances at
 *     every K-th step, a rebalance that moves experts adds a pause and one that moves none adds none;
 *   - bad input: an interval without a multiple of layout.ep redundant slots exits 2 naming the field. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/exec/eplb_series.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/program/eplb.h"
#include "sim/program/routing.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/step_sim.h"
#include "step_fixtures.h"


static void load(scenario *s) { assert_int_equal(fx_small_moe_routing(s), 0); }

/* small-moe dropless, without a node limit, 8 redundant slots (one per rank), EPLB every K steps */
static void load_eplb(scenario *s, route_kind dist, int interval) {
    load(s);
    s->routing.distribution = dist;
    s->routing.hot_expert = 3;
    s->routing.hot_share = dist == ROUTE_HOT ? 0.6 : 0;
    s->routing.drop = 0;
    s->routing.node_limit = 0;
    s->routing.redundant_experts = 8;
    s->routing.eplb_interval_steps = interval;
}

/* Global policy, 4 experts of loads 12, 7, 4, 1 on 2 GPUs of 3 slots (2 redundant).
 * Replicate: the first extra copy to expert 0 (12 > 7), the second to expert 1 (7 > 12 / 2 = 6).
 * Physical experts in EPLB's order with their loads per copy: e0 6, e1 3.5, e2 4, e3 1, e0 6, e1 3.5.
 * Packing by decreasing weight: e0 -> GPU 0 (6), e0 -> GPU 1 (6), e2 -> GPU 0 (tie: the lower, 10),
 * e1 -> GPU 1 (9.5), e1 -> GPU 1 (9.5 < 10: 13, full), e3 -> GPU 0 (11). */
static void global_policy_by_hand(void **state) {
    (void)state;
    double load[4] = {12, 7, 4, 1};
    int phys[6];
    assert_int_equal(eplb_rebalance(load, 4, 1, 1, 2, 3, phys), 0);
    int want[6] = {0, 2, 3, 0, 1, 1};
    assert_memory_equal(phys, want, sizeof want);
    /* no groups given (0) is one group: the same */
    assert_int_equal(eplb_rebalance(load, 4, 0, 1, 2, 3, phys), 0);
    assert_memory_equal(phys, want, sizeof want);
    /* 3 groups over 2 nodes: the nodes do not divide the groups, so global, over 4 GPUs of 2 slots:
     * 4 extra copies, e0 (12), e1 (7 > 6), e0 (6 > 4), e0 (4 = e2's 4: the lower id); e0 x4, e1 x2 */
    int many[8];
    assert_int_equal(eplb_rebalance(load, 4, 3, 2, 4, 2, many), 0);
    int copies[4] = {0};
    for (int k = 0; k < 8; k++) copies[many[k]]++;
    assert_int_equal(copies[0], 4);
    assert_int_equal(copies[1], 2);
    assert_int_equal(copies[2], 1);
    assert_int_equal(copies[3], 1);
}

/* Hierarchical policy: 8 experts in 4 groups of 2, loads 10 2 | 1 1 | 6 5 | 3 0, 2 nodes of 2 GPUs,
 * 3 slots per GPU (4 redundant).
 * 1. Groups by summed load 12, 2, 11, 3 onto the nodes, 2 each: g0 -> n0 (12), g2 -> n1 (11),
 *    g3 -> n1 (11 < 12: 14), g1 -> n0 (12 < 14). Node 0 holds experts 0 1 2 3, node 1 4 5 6 7.
 * 2. Node 0 (loads 10 2 1 1) replicates over 6 slots: e0 (10), e0 again (5 > 2): e0 x3 at 10/3.
 *    Node 1 (6 5 3 0): e4 (6), then e5 (5 > 3).
 * 3. Node 0's physical experts e0 e1 e2 e3 e0 e0 (10/3, 2, 1, 1, 10/3, 10/3) onto GPUs 0 and 1: e0 -> 0,
 *    e0 -> 1, e0 -> 0 (tie), e1 -> 1 (5.33), e2 -> 1 (6.33: full), e3 -> 0. GPU 0: e0 e0 e3, GPU 1:
 *    e0 e1 e2. Node 1's e4 e5 e6 e7 e4 e5 (3, 2.5, 3, 0, 3, 2.5) onto GPUs 2 and 3: e4 -> 2, e6 -> 3,
 *    e4 -> 2 (tie), e5 -> 3 (5.5), e5 -> 3 (5.5 < 6: full), e7 -> 2. GPU 2: e4 e4 e7, GPU 3: e6 e5 e5. */
static void hierarchical_policy_by_hand(void **state) {
    (void)state;
    double load[8] = {10, 2, 1, 1, 6, 5, 3, 0};
    int phys[12];
    assert_int_equal(eplb_rebalance(load, 8, 4, 2, 4, 3, phys), 1);
    int want[12] = {0, 0, 3, 0, 1, 2, 4, 4, 7, 6, 5, 5};
    assert_memory_equal(phys, want, sizeof want);
    /* every copy of an expert stays on its group's node */
    for (int k = 0; k < 12; k++) assert_int_equal(k / 6, phys[k] < 4 ? 0 : 1);
}

/* Moves: 4 ranks on 2 nodes (0 0 1 1), 2 slots each. Before: r0 {0 1}, r1 {2 3}, r2 {4 5}, r3 {0 2}.
 * After: r0 {0 4}, r1 {2 3}, r2 {4 0}, r3 {1 1}. r0 fetches e4 from r2 (its only holder); r2 fetches e0
 * from r3 (on its node) rather than r0 (the first holder, on the other node); r3 fetches e1 from r0
 * once for its two copies. The bytes: 3 moves of one expert's params + optimizer each. */
static void moves_by_hand(void **state) {
    (void)state;
    int old_phys[8] = {0, 1, 2, 3, 4, 5, 0, 2}, new_phys[8] = {0, 4, 2, 3, 4, 0, 1, 1};
    int rank_node[4] = {0, 0, 1, 1}, moves[16];
    assert_int_equal(eplb_moves(old_phys, new_phys, 4, 2, rank_node, moves), 3);
    int want[16] = {0};
    want[2 * 4 + 0] = 1;   /* r2 -> r0: e4 */
    want[3 * 4 + 2] = 1;   /* r3 -> r2: e0 */
    want[0 * 4 + 3] = 1;   /* r0 -> r3: e1 */
    assert_memory_equal(moves, want, sizeof want);
    double bytes[16];
    eplb_moves_bytes(moves, 4, 1e9, bytes);
    for (int k = 0; k < 16; k++) assert_true(bytes[k] == want[k] * 1e9);

    /* the bytes of one move on small-moe: one expert is 3 x 1024 x 512 = 1,572,864 parameters (SwiGLU:
     * gate, up, down) in each of the 2 MoE blocks of pipeline rank 1 (blocks 2 and 3; rank 0 holds the
     * dense block 0 and block 1); FP8 weights 1 B, the FP32 master 4 B and Adam moments 8 B sharded by
     * ZeRO-1 over the expert DP of 2: (1 + 12 / 2) x 1,572,864 x 2 = 22,020,096 B. Its BF16 gradient: 2 x
     * 1,572,864 x 2 = 6,291,456 B */
    scenario s;
    load(&s);
    assert_int_equal(s.layout.zero, 1);
    assert_int_equal(s.layout.dp, 2);
    assert_int_equal(s.layout.pp, 2);
    s.routing.redundant_experts = 8;
    s.routing.eplb_interval_steps = 1;
    eplb_series es;
    moe_error err = {0};
    assert_int_equal(eplb_series_init(&es, &s, &err), 0);
    assert_true(es.move_bytes == 22020096.0);
    assert_true(es.grad_bytes == 6291456.0);
    assert_int_equal(es.S, 3);
    eplb_series_free(&es);
}

/* A comm model that records what it is asked: the patterns a rebalance hands it */
typedef struct { int calls, pairwise[2], concurrent[2]; double bytes[2][64]; } asked;
static double record_a2a(void *ctx, const a2a_pattern *p) {
    asked *a = ctx;
    int k = a->calls++ % 2;
    a->pairwise[k] = p->pairwise;
    a->concurrent[k] = p->concurrent_groups;
    for (int i = 0; i < p->n * p->n && i < 64; i++) a->bytes[k][i] = p->bytes[i];
    return 1.25;
}

/* A rebalance on small-moe (EP 8 on one node) after a step whose loads put expert 3 first (9,000 pairs
 * against 1,000-1,150): the pause is the comm model's answer for one pairwise all-to-all (NCCL
 * send/recv, the dp x etp = 2 groups at once) whose bytes are the moves x 22,020,096 B; then the new
 * placement's gradient ring (expert 3 on several ranks) is asked for as a second pattern. */
static void rebalance_asks_the_comm_model(void **state) {
    (void)state;
    scenario s;
    load_eplb(&s, ROUTE_HOT, 1);
    eplb_series es;
    moe_error err = {0};
    assert_int_equal(eplb_series_init(&es, &s, &err), 0);
    asked a = {0};
    comm_model cm = {.ctx = &a, .name = "record", .a2a_s = record_a2a};
    double counts[16];
    for (int e = 0; e < 16; e++) counts[e] = e == 3 ? 9000 : 1000 + 10 * e;
    eplb_series_observe(&es, counts);
    assert_true(eplb_series_due(&es, 1) && !eplb_series_due(&es, 0));
    double pause = eplb_series_rebalance(&es, &cm);
    assert_true(pause == 1.25);
    assert_true(es.last_moved > 0);
    assert_int_equal(a.calls, 2);   /* the moves, then the new placement's gradient ring */
    assert_int_equal(a.pairwise[0], 1);
    assert_int_equal(a.concurrent[0], 2);
    for (int k = 0; k < 64; k++) assert_true(a.bytes[0][k] == es.moves[k] * 22020096.0);
    int ranks_of_3 = 0;
    for (int j = 0; j < 8; j++) {
        int holds = 0;
        for (int p = 0; p < 3; p++) holds |= es.phys[j * 3 + p] == 3;
        ranks_of_3 += holds;
    }
    assert_true(ranks_of_3 >= 2 && es.synced_experts >= 1 && es.grad_sync_s == 1.25);
    double ring[64];
    eplb_replica_sync_bytes(es.phys, 8, 3, 16, 6291456.0, ring);
    assert_memory_equal(a.bytes[1], ring, sizeof ring);
    eplb_series_free(&es);
}

/* The replicas' gradient ring: 4 ranks, 2 slots. e0 on r0, r1, r3 (m = 3: each sends 2 x 2/3 of the
 * gradient to the next in rank order: r0 -> r1 -> r3 -> r0); e1 twice on r2 alone (adds up locally:
 * nothing); e2 on r1 and r3 (m = 2: each sends 2 x 1/2, the whole gradient, to the other); e3 alone. */
static void replica_sync_by_hand(void **state) {
    (void)state;
    /* r0 {e0 e3}, r1 {e0 e2}, r2 {e1 e1}, r3 {e0 e2}: e0 on r0 r1 r3, e2 on r1 r3 */
    int phys[8] = {0, 3, 0, 2, 1, 1, 0, 2};
    double bytes[16], G = 300.0;
    assert_int_equal(eplb_replica_sync_bytes(phys, 4, 2, 4, G, bytes), 2);
    double want[16] = {0};
    want[0 * 4 + 1] += 2.0 * 2 / 3 * G; want[1 * 4 + 3] += 2.0 * 2 / 3 * G; want[3 * 4 + 0] += 2.0 * 2 / 3 * G;
    want[1 * 4 + 3] += G; want[3 * 4 + 1] += G;
    for (int k = 0; k < 16; k++) assert_true(fabs(bytes[k] - want[k]) < 1e-9);
}

/* The plan's ledger holds the replica slots: 8 redundant experts on EP 8 add one slot per rank, one
 * expert's weights (1 B), gradients (2 B) and optimizer (12 B / 2, ZeRO-1) per parameter of the rank's
 * MoE blocks: pipeline rank 1, 2 blocks: +1,572,864 x 2 x (1, 2, 6) B. */
static void replica_slots_in_the_ledger(void **state) {
    (void)state;
    scenario s;
    load(&s);
    model_counts mc;
    model_count(&s.model, &mc);
    act_profile ap;
    memory_activation_profile(&s.model, &s.precision, &ap);
    mem_ledgers a, b;
    memory_rank_ledgers(&s, &mc, &ap, 64, 1, &a);
    s.routing.redundant_experts = 8;
    memory_rank_ledgers(&s, &mc, &ap, 64, 1, &b);
    double P = 1572864.0 * 2;
    assert_true(fabs(b.params - a.params - 1 * P) < 1e-6);
    assert_true(fabs(b.grads - a.grads - 2 * P) < 1e-6);
    assert_true(fabs(b.optimizer - a.optimizer - 6 * P) < 1e-6);
    assert_true(b.activations == a.activations);
}

/* K = 1, a law that does not drift (expert popularities 1.3^-e, no hot expert, no walk, top-1): every
 * step's rebalance reads the step before's token counts, and EPLB on them places the experts exactly as
 * EPLB on the law's expected loads does (the sampling noise of 8 samples x 8,192 tokens, 1-4% per
 * expert, is under the 30% steps between the loads). */
static void measured_converges_to_the_law(void **state) {
    (void)state;
    scenario s;
    load_eplb(&s, ROUTE_UNIFORM, 1);
    s.model.top_k = 1;   /* routing_expected_load is exact for top-1 (top-k without replacement flattens) */
    int E = 16, n = 8, S = 3;
    double w[16], expected[16];
    for (int e = 0; e < E; e++) w[e] = pow(1.3, -e);
    routing_law law = {.weights = w};
    routing_expected_load(&law, E, s.model.top_k, expected);
    int oracle[24], placed[24];
    assert_int_equal(eplb_rebalance(expected, E, 1, 1, n, S, oracle), 0);
    eplb_series es;
    moe_error err = {0};
    assert_int_equal(eplb_series_init(&es, &s, &err), 0);
    assert_int_equal(es.n_nodes, 1);   /* EP 8 on one node: the global policy */
    for (int t = 0; t < 4; t++) {
        law.draw_step = t;
        law.placement = es.phys;
        routing_opts ro = {.law = &law};
        routing_ctx *c = routing_ctx_create_opts(&s, es.gpus, &ro, &err);
        assert_non_null(c);
        routing_sample rs;
        assert_int_equal(routing_sample_init(c, &rs, &err), 0);
        double counts[16] = {0};
        for (int mb = 0; mb < 8; mb++) {
            assert_int_equal(routing_draw(c, 0, mb, 0, &rs), 0);
            for (int e = 0; e < E; e++) counts[e] += rs.expert_routed[e];
        }
        routing_sample_free(&rs);
        routing_ctx_free(c);
        memcpy(placed, es.phys, sizeof placed);
        if (t > 0) assert_memory_equal(placed, oracle, sizeof oracle);   /* from the first rebalance on */
        eplb_series_observe(&es, counts);
        /* the rebalance itself, without a comm model: the placement from the window */
        int next[24];
        assert_int_equal(eplb_rebalance(es.window, E, es.n_groups, es.n_nodes, n, S, next), 0);
        memcpy(es.phys, next, sizeof next);
        memset(es.window, 0, (size_t)E * sizeof(double));
    }
    eplb_series_free(&es);
}

/* Through the step simulator: interval 0 gives no EPLB series; K = 2 over 6 steps rebalances at steps
 * 2 and 4, pauses only there and only when experts moved; every step pays its placement's gradient sum. */
static void series_rebalance_steps(void **state) {
    (void)state;
    scenario s;
    load_eplb(&s, ROUTE_HOT, 0);
    s.routing.steps = 6;
    moe_error err = {0};
    step_options so = {0};
    step_result a, b;
    assert_int_equal(step_simulate(&s, &so, &a, &err), 0);
    assert_null(a.series_eplb_rebalance_s);
    assert_null(a.series_eplb_grad_sync_s);
    s.routing.eplb_interval_steps = 2;
    assert_int_equal(step_simulate(&s, &so, &b, &err), 0);
    assert_non_null(b.series_eplb_rebalance_s);
    assert_int_equal(b.steps_eplb_rebalances, 2);
    for (int t = 0; t < 6; t++)
        if (t != 2 && t != 4) assert_true(b.series_eplb_rebalance_s[t] == 0);
    /* step 0's placement (EPLB on equal loads, worked by hand): experts 8 + k first onto ranks k, then
     * experts 0..7 and their copies (the lowest ids take the 8 replicas) one rank each, twice: rank k holds
     * {8 + k, k, k}, no expert on two ranks, so nothing to sync until the first rebalance */
    assert_true(b.series_eplb_grad_sync_s[0] == 0 && b.series_eplb_grad_sync_s[1] == 0);
    /* step 2 rebalances from steps 0 and 1's counts: the hot expert spreads over ranks (experts move),
     * and from then on its copies all-reduce its gradient */
    assert_true(b.steps_eplb_moved_experts > 0);
    assert_true(b.series_eplb_rebalance_s[2] > 0);
    assert_true(b.series_eplb_grad_sync_s[2] > 0 && b.series_eplb_grad_sync_s[3] == b.series_eplb_grad_sync_s[2]);
    for (int t = 0; t < 6; t++) assert_true(b.series_step_time_s[t] >= b.series_eplb_rebalance_s[t] + b.series_eplb_grad_sync_s[t]);
    step_result_free(&a);
    step_result_free(&b);
}

static void bad_interval(void **state) {
    (void)state;
    const char *text =
        "{\"format\": \"moesim-scenario/1\", \"model\": {\"preset\": \"mixtral-8x7b\"}, \"cluster\": "
        "{\"nodes\": 4}, \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 8, \"dp\": 4, \"global_batch\": 64, "
        "\"schedule\": \"1f1b\"}, \"routing\": {\"redundant_experts\": 4, \"eplb_interval_steps\": 10}}";
    scenario s;
    moe_error err = {0};
    int rc = scenario_parse("eplb.json", text, &s, NULL, &err);
    if (rc == 0) rc = scenario_validate(&s, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err.msg, "eplb.json"));
    assert_non_null(strstr(err.msg, "routing.redundant_experts"));
    assert_non_null(strstr(err.msg, "multiple of layout.ep"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(global_policy_by_hand),
        cmocka_unit_test(hierarchical_policy_by_hand),
        cmocka_unit_test(moves_by_hand),
        cmocka_unit_test(rebalance_asks_the_comm_model),
        cmocka_unit_test(replica_sync_by_hand),
        cmocka_unit_test(replica_slots_in_the_ledger),
        cmocka_unit_test(measured_converges_to_the_law),
        cmocka_unit_test(series_rebalance_steps),
        cmocka_unit_test(bad_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
