/* test_rank_numbering.c — the rank numbering (sim/plan/rank_numbering.h) worked out by hand on a
 * dp 2 x pp 2 x ep 2 x tp 2 layout (16 ranks) on nodes of 4 GPUs, under both placements: rank <->
 * (replica, stage, ep, tp), rank -> GPU, and the nodes the plan's communication groups land on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/plan/rank_numbering.h"

static const rank_grid EP_INNER = {.dp = 2, .pp = 2, .ep = 2, .tp = 2, .placement = PLACE_EP_INNER};
static const rank_grid DP_INNER = {.dp = 2, .pp = 2, .ep = 2, .tp = 2, .placement = PLACE_DP_INNER};

/* rank = ((d * 2 + s) * 2 + e) * 2 + t */
static void test_rank_and_coordinates(void **state) {
    (void)state;
    assert_int_equal(rank_of(&EP_INNER, (rank_coords){.replica = 1, .stage = 0, .ep = 1, .tp = 0}), 10);
    assert_int_equal(rank_of(&EP_INNER, (rank_coords){.replica = 0, .stage = 1, .ep = 0, .tp = 1}), 5);
    rank_coords c = rank_coords_of(&EP_INNER, 13);   /* 13 = ((1 * 2 + 1) * 2 + 0) * 2 + 1 */
    assert_int_equal(c.replica, 1);
    assert_int_equal(c.stage, 1);
    assert_int_equal(c.ep, 0);
    assert_int_equal(c.tp, 1);
    assert_int_equal(rank_replica_ranks(&EP_INNER), 8);   /* replica 1 holds ranks 8..15 */
    for (int r = 0; r < 16; r++) {
        assert_int_equal(rank_of(&DP_INNER, rank_coords_of(&DP_INNER, r)), r);
        assert_int_equal(rank_coords_of(&EP_INNER, r).replica, r / 8);
    }
}

/* ep-inner: gpu = rank. dp-inner: gpu = ((s * 2 + e) * 2 + d) * 2 + t, by hand for every rank:
 *   rank  0..7 (replica 0): (s,e,t) = 000 001 010 011 100 101 110 111 -> 0 1 4 5 8 9 12 13
 *   rank 8..15 (replica 1): the same shifted by d * tp = 2            -> 2 3 6 7 10 11 14 15 */
static void test_gpu_of_rank_both_placements(void **state) {
    (void)state;
    static const int dp_inner_gpu[16] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
    for (int r = 0; r < 16; r++) {
        assert_int_equal(rank_gpu(&EP_INNER, r), r);
        assert_int_equal(rank_gpu(&DP_INNER, r), dp_inner_gpu[r]);
    }
}

static void check_span(const rank_grid *g, unsigned vary, int members, int nodes, int max_per_node) {
    rank_group_span sp = rank_group_nodes(g, vary, 4);
    assert_int_equal(sp.members, members);
    assert_int_equal(sp.nodes, nodes);
    assert_int_equal(sp.max_per_node, max_per_node);
}

/* Groups of rank 0, nodes of 4 GPUs (node = gpu / 4):
 *                      members (ranks)   ep-inner GPUs -> nodes    dp-inner GPUs -> nodes
 *   EP (vary e)        0 2               0 2   -> {0}      2/node   0 4   -> {0,1}    1/node
 *   dense DP (d, e)    0 2 8 10          0 2 8 10 -> {0,2} 2/node   0 4 2 6 -> {0,1}  2/node
 *   expert DP (d)      0 8               0 8   -> {0,2}    1/node   0 2   -> {0}      2/node
 *   pipeline (s)       0 4               0 4   -> {0,1}    1/node   0 8   -> {0,2}    1/node
 *   TP (t)             0 1               0 1   -> {0}      2/node   0 1   -> {0}      2/node */
static void test_group_spans_both_placements(void **state) {
    (void)state;
    check_span(&EP_INNER, RANK_VARY_EP, 2, 1, 2);
    check_span(&EP_INNER, RANK_VARY_REPLICA | RANK_VARY_EP, 4, 2, 2);
    check_span(&EP_INNER, RANK_VARY_REPLICA, 2, 2, 1);
    check_span(&EP_INNER, RANK_VARY_STAGE, 2, 2, 1);
    check_span(&EP_INNER, RANK_VARY_TP, 2, 1, 2);
    check_span(&DP_INNER, RANK_VARY_EP, 2, 2, 1);
    check_span(&DP_INNER, RANK_VARY_REPLICA | RANK_VARY_EP, 4, 2, 2);
    check_span(&DP_INNER, RANK_VARY_REPLICA, 2, 1, 2);
    check_span(&DP_INNER, RANK_VARY_STAGE, 2, 2, 1);
    check_span(&DP_INNER, RANK_VARY_TP, 2, 1, 2);
}

/* The walk (ascending GPU order, blocks that repeat on their own nodes) against a plain count over
 * every rank of the group, on layouts whose dimensions do and do not divide the node size. */
static void test_group_spans_match_a_plain_count(void **state) {
    (void)state;
    static const int dims[] = {1, 2, 3, 4};
    static const unsigned kinds[] = {RANK_VARY_EP, RANK_VARY_REPLICA | RANK_VARY_EP, RANK_VARY_REPLICA,
                                     RANK_VARY_STAGE, RANK_VARY_TP};
    int checked = 0;
    for (int a = 0; a < 4; a++) for (int b = 0; b < 4; b++) for (int c = 0; c < 4; c++) for (int d = 0; d < 4; d++)
        for (int place = 0; place < 2; place++) for (int gpn = 1; gpn <= 8; gpn++) for (int k = 0; k < 5; k++) {
            rank_grid g = {.dp = dims[a], .pp = dims[b], .ep = dims[c], .tp = dims[d],
                           .placement = place ? PLACE_DP_INNER : PLACE_EP_INNER};
            int n = g.dp * g.pp * g.ep * g.tp, per_node[256] = {0}, members = 0;
            for (int r = 0; r < n; r++) {
                rank_coords x = rank_coords_of(&g, r);
                if ((!(kinds[k] & RANK_VARY_REPLICA) && x.replica) || (!(kinds[k] & RANK_VARY_STAGE) && x.stage) ||
                    (!(kinds[k] & RANK_VARY_EP) && x.ep) || (!(kinds[k] & RANK_VARY_TP) && x.tp))
                    continue;
                per_node[rank_gpu(&g, r) / gpn]++;
                members++;
            }
            int nodes = 0, most = 0;
            for (int i = 0; i < 256; i++) {
                nodes += per_node[i] > 0;
                if (per_node[i] > most) most = per_node[i];
            }
            rank_group_span sp = rank_group_nodes(&g, kinds[k], gpn);
            if (sp.members != members || sp.nodes != nodes || sp.max_per_node != most)
                fail_msg("dp %d pp %d ep %d tp %d %s, %d GPUs/node, vary %u: walk %d/%d/%d, count %d/%d/%d",
                         g.dp, g.pp, g.ep, g.tp, place ? "dp-inner" : "ep-inner", gpn, kinds[k], sp.members,
                         sp.nodes, sp.max_per_node, members, nodes, most);
            checked++;
        }
    assert_int_equal(checked, 256 * 2 * 8 * 5);
    /* the attention side: every stride and count that fits a stage, against the nodes of the members */
    for (int a = 0; a < 4; a++) for (int c = 0; c < 4; c++) for (int d = 0; d < 4; d++)
        for (int place = 0; place < 2; place++) for (int gpn = 1; gpn <= 8; gpn++) {
            rank_grid g = {.dp = dims[a], .pp = 2, .ep = dims[c], .tp = dims[d],
                           .placement = place ? PLACE_DP_INNER : PLACE_EP_INNER};
            int per_stage = g.dp * g.ep * g.tp;
            for (int stride = 1; stride <= per_stage; stride++)
                for (int count = 1; count * stride <= per_stage; count++) {
                    int first = -1, one = 1;
                    for (int r = 0; r < per_stage * g.pp; r++) {
                        rank_coords x = rank_coords_of(&g, r);
                        int q = rank_stage_index(&g, x);
                        if (x.stage != 0 || q % stride || q / stride >= count) continue;
                        int node = rank_gpu(&g, r) / gpn;
                        if (first < 0) first = node;
                        one &= node == first;
                    }
                    if (rank_stage_group_on_one_node(&g, stride, count, gpn) != one)
                        fail_msg("dp %d ep %d tp %d %s, %d GPUs/node, stride %d count %d: walk says %s",
                                 g.dp, g.ep, g.tp, place ? "dp-inner" : "ep-inner", gpn, stride, count,
                                 one ? "several nodes" : "one node");
                }
        }
}

/* The attention side's groups of stage 0 (stage index q = (d * ep + e) * tp + t): dp 2 x ep 2 x etp 2
 * per stage folded as attention TP 2 x CP 2 x attention DP 2; ep-inner GPUs of stage 0 are ranks
 * 0-3 (d 0) and 8-11 (d 1), dp-inner ones ((e * 2 + d) * 2 + t): q 0-3 -> GPUs 0 1 4 5, q 4-7 -> 2 3 6 7.
 *                          q members      ep-inner GPUs -> nodes (4/node)   dp-inner GPUs -> nodes
 *   TP (stride 1, 2)       0 1            0 1      -> {0}                   0 1     -> {0}
 *   CP (stride 2, 2)       0 2            0 2      -> {0}                   0 4     -> {0,1}
 *   dense DP (stride 2, 4) 0 2 4 6        0 2 8 10 -> {0,2}                 0 4 2 6 -> {0,1}
 * and the dense DP group of dp-inner on 8-GPU nodes: GPUs 0 4 2 6 -> {0}. */
static void test_attention_groups_both_placements(void **state) {
    (void)state;
    rank_grid e = EP_INNER, d = DP_INNER;
    e.attn_tp = d.attn_tp = 2;
    e.cp = d.cp = 2;
    assert_true(rank_stage_group_on_one_node(&e, 1, 2, 4));
    assert_true(rank_stage_group_on_one_node(&e, 2, 2, 4));
    assert_false(rank_stage_group_on_one_node(&e, 2, 4, 4));
    assert_true(rank_stage_group_on_one_node(&d, 1, 2, 4));
    assert_false(rank_stage_group_on_one_node(&d, 2, 2, 4));
    assert_false(rank_stage_group_on_one_node(&d, 2, 4, 4));
    assert_true(rank_stage_group_on_one_node(&d, 2, 4, 8));
    assert_false(rank_stage_group_on_one_node(&e, 2, 4, 8));   /* GPUs 8 and 10 are on node 1 */
}

/* A dense model has no expert side: its inner coordinate covers attention TP x CP. */
static void test_grid_of_a_dense_scenario(void **state) {
    (void)state;
    scenario s = {0};
    s.cluster.nodes = 4;
    s.cluster.gpus_per_node = 8;
    s.layout = (layout_cfg){.tp = 2, .cp = 2, .pp = 2, .ep = 1, .dp = 4, .placement = PLACE_EP_INNER};
    rank_grid g = rank_grid_of(&s);
    assert_int_equal(g.tp, 4);    /* tp x cp */
    assert_int_equal(g.dp, 4);    /* 32 GPUs / (pp 2 x 4) */
    assert_int_equal(g.attn_tp, 2);
    assert_int_equal(g.cp, 2);
    s.model.experts = 8;
    s.layout.ep = 2;
    s.layout.dp = 2;
    s.layout.etp = 4;             /* MoE: the inner coordinate is the expert TP */
    g = rank_grid_of(&s);
    assert_int_equal(g.tp, 4);
    assert_int_equal(g.dp, 2);
    assert_int_equal(g.ep, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_and_coordinates),
        cmocka_unit_test(test_gpu_of_rank_both_placements),
        cmocka_unit_test(test_group_spans_both_placements),
        cmocka_unit_test(test_group_spans_match_a_plain_count),
        cmocka_unit_test(test_attention_groups_both_placements),
        cmocka_unit_test(test_grid_of_a_dense_scenario),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
