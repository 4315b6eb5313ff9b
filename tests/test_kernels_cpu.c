/* test_kernels_cpu.c — the CPU references of kernels/ against hand-computed truths, and the whole
 * expert-parallel pipeline against the dense reference layer.
 *
 * Truths used:
 *  - BF16: IEEE-754 bit patterns worked out by hand (round to nearest even, overflow, NaN, subnormal).
 *  - seed 000 §4.1: 2 ranks x 3 tokens, 4 experts (rank = e / 2), top-2, softmax over the K, scalar
 *    experts "e multiplies by e+1"; routing, counts and outputs derived by hand below.
 *  - closed forms: sigmoid / softmax weights, the aux loss under perfect balance (= 1) and collapse.
 *  - crafted group-/node-limited cases whose answer differs from plain top-K.
 *  - the live stand-ins and element-wise kernels: BF16 results worked out by hand (ties to even,
 *    sums below half an ulp), the combine's adjoint, the FLOP burner's fixed point.
 *  - END TO END: gating -> layout -> permute -> count a2a -> token a2a -> grouped FFN -> a2a back ->
 *    combine on R in-process ranks equals moe_layer_ref_cpu (direct, unpermuted) per rank.
 *    Tolerance: |out - ref| <= 1e-2 * |ref| + 1e-2 * max|ref| (BF16 storage: one BF16 ulp is 2^-8
 *    relative, the reference uses the same rounding points, so a real bug is far outside this).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "kernels/moe_kernels.h"

/* ------------------------------------------------------------------------------------------- */
/* BF16                                                                                         */
/* ------------------------------------------------------------------------------------------- */
static void test_bf16_round_to_nearest_even(void **state) {
    (void)state;
    static const struct { uint32_t f32; uint16_t bf16; } cases[] = {
        {0x3F800000u, 0x3F80u}, /* 1.0 exact                                       */
        {0x3F808000u, 0x3F80u}, /* exactly half-way, kept bit even -> round down    */
        {0x3F818000u, 0x3F82u}, /* exactly half-way, kept bit odd  -> round up      */
        {0x3F808001u, 0x3F81u}, /* just above half -> up                            */
        {0x3F807FFFu, 0x3F80u}, /* just below half -> down                          */
        {0xBF818000u, 0xBF82u}, /* sign does not matter                             */
        {0x7F7FFFFFu, 0x7F80u}, /* FLT_MAX rounds up into +inf                      */
        {0x7F7F7FFFu, 0x7F7Fu}, /* largest value that stays finite                  */
        {0xFF800000u, 0xFF80u}, /* -inf                                             */
        {0x7FC00001u, 0x7FFFu}, /* NaN -> canonical quiet NaN                       */
        {0xFFC00000u, 0x7FFFu}, /* negative NaN -> canonical (sign dropped, as PTX) */
        {0x7F800001u, 0x7FFFu}, /* signalling NaN whose payload would be truncated  */
        {0x00008000u, 0x0000u}, /* subnormal half-way, even -> 0 (no FTZ involved)  */
        {0x00018000u, 0x0002u}, /* subnormal half-way, odd -> up                    */
        {0x80000000u, 0x8000u}, /* -0 stays -0                                      */
        {0x40490FDBu, 0x4049u}, /* pi -> 3.140625                                   */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = moe_f32_to_bf16(moe_f32_from_bits(cases[i].f32));
        if (got != cases[i].bf16)
            fail_msg("f32 0x%08X -> bf16 0x%04X, expected 0x%04X", cases[i].f32, got, cases[i].bf16);
    }
    assert_true(moe_bf16_to_f32(0x4049u) == 3.140625f);
    assert_true(moe_bf16_to_f32(0xC000u) == -2.0f);
    assert_true(isinf(moe_bf16_to_f32(0x7F80u)));
}

/* ------------------------------------------------------------------------------------------- */
/* gating                                                                                       */
/* ------------------------------------------------------------------------------------------- */
static void test_topk_tie_break_lower_index_wins(void **state) {
    (void)state;
    int32_t idx[3];
    float w[3];
    moe_gate_cfg c = moe_gate_cfg_default(6, 3);
    const float flat[6] = {0, 0, 0, 0, 0, 0};
    assert_int_equal(moe_topk_gating_cpu(flat, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 2);
    for (int k = 0; k < 3; k++) assert_float_equal(w[k], 1.0f / 3.0f, 1e-7);

    c = moe_gate_cfg_default(5, 2);
    const float l2[5] = {1, 3, 3, 2, 3}; /* three-way tie at the top: experts 1 and 2 win */
    assert_int_equal(moe_topk_gating_cpu(l2, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 2);

    c = moe_gate_cfg_default(3, 1);
    c.score = MOE_SCORE_SIGMOID;
    const float l3[3] = {NAN, 1, 1}; /* NaN never wins; tie -> 1 */
    assert_int_equal(moe_topk_gating_cpu(l3, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 1);
    assert_float_equal(w[0], 1.0f, 0.0); /* normalised over K = 1 */
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

static void test_sigmoid_normalised_scaled_and_bias(void **state) {
    (void)state;
    moe_gate_cfg c = moe_gate_cfg_default(4, 2);
    c.score = MOE_SCORE_SIGMOID;
    c.routed_scaling = 2.5f;
    const float l[4] = {0, 2, -1, 1};
    int32_t idx[2];
    float w[2];
    assert_int_equal(moe_topk_gating_cpu(l, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 3);
    double s1 = sigm(2), s3 = sigm(1);
    assert_float_equal(w[0], 2.5 * s1 / (s1 + s3), 1e-6);
    assert_float_equal(w[1], 2.5 * s3 / (s1 + s3), 1e-6);

    /* the selection bias changes WHO wins (0.5 + 1 beats 0.88) but not the weights' source */
    const float bias[4] = {1, 0, 0, 0};
    assert_int_equal(moe_topk_gating_cpu(l, bias, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 1);
    double s0 = 0.5;
    assert_float_equal(w[0], 2.5 * s0 / (s0 + s1), 1e-6);
    assert_float_equal(w[1], 2.5 * s1 / (s0 + s1), 1e-6);

    /* without normalisation the weights are the raw sigmoid scores */
    c.norm_topk = 0;
    c.routed_scaling = 1.0f;
    assert_int_equal(moe_topk_gating_cpu(l, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_float_equal(w[0], s1, 1e-6);
    assert_float_equal(w[1], s3, 1e-6);
}

/* 8 experts in 4 groups {0,1} {2,3} {4,5} {6,7}. Sigmoid scores:
 *   e0 5 -> .9933, e1 -5 -> .0067 : group A top-2 sum 1.0000 (but holds the single best expert)
 *   e2 2 -> .8808, e3  2 -> .8808 : group B 1.7616
 *   e4 1.5 -> .8176, e5 1.5       : group C 1.6351
 *   e6 -1 -> .2689, e7 3 -> .9526 : group D 1.2215
 * keep 2 groups -> B, C -> top-3 = e2, e3 (tie: lower first), e4.
 * Plain top-3 would be e0, e7, e2; a max-based group score would keep A. */
static const float k_group_logits[8] = {5, -5, 2, 2, 1.5f, 1.5f, -1, 3};

static void test_group_limited_selection(void **state) {
    (void)state;
    moe_gate_cfg c = moe_gate_cfg_default(8, 3);
    c.score = MOE_SCORE_SIGMOID;
    int32_t idx[3];
    float w[3];
    assert_int_equal(moe_topk_gating_cpu(k_group_logits, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 7);
    assert_int_equal(idx[2], 2);

    c.n_groups = 4;
    c.topk_groups = 2;
    assert_int_equal(moe_topk_gating_cpu(k_group_logits, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 3);
    assert_int_equal(idx[2], 4);
    double s2 = sigm(2), s4 = sigm(1.5);
    assert_float_equal(w[0], s2 / (2 * s2 + s4), 1e-6);
    assert_float_equal(w[2], s4 / (2 * s2 + s4), 1e-6);
}

/* Node-limited: 2 nodes of 4 experts, M = 1, K = 2 -> node score = sum of its top ceil(2/1) = 2:
 * node 0 {e0..e3}: .9933 + .8808 = 1.874; node 1 {e4..e7}: .9526 + .8176 = 1.770 -> node 0 only,
 * top-2 = e0, e2 (plain top-2 would be e0, e7). */
static void test_node_limited_selection(void **state) {
    (void)state;
    moe_gate_cfg c = moe_gate_cfg_default(8, 2);
    c.score = MOE_SCORE_SIGMOID;
    c.n_nodes = 2;
    c.topk_nodes = 1;
    int32_t idx[2];
    float w[2];
    assert_int_equal(moe_topk_gating_cpu(k_group_logits, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    c.n_nodes = 1;
    c.topk_nodes = 1;
    assert_int_equal(moe_topk_gating_cpu(k_group_logits, NULL, &c, 1, idx, w, NULL, NULL), MOE_OK);
    assert_int_equal(idx[1], 7);
}

static void test_gate_cfg_rejects_bad_configs(void **state) {
    (void)state;
    char why[128];
    moe_gate_cfg c = moe_gate_cfg_default(8, 3);
    assert_int_equal(moe_gate_cfg_check(&c, why, sizeof why), MOE_OK);
    c.n_groups = 4;
    c.topk_groups = 1; /* one group of 2 cannot hold 3 experts */
    assert_int_equal(moe_gate_cfg_check(&c, why, sizeof why), MOE_EINVAL);
    assert_non_null(strstr(why, "topk_groups"));
    c = moe_gate_cfg_default(8, 9);
    assert_int_equal(moe_gate_cfg_check(&c, why, sizeof why), MOE_EINVAL);
    c = moe_gate_cfg_default(8, 2);
    c.n_groups = 3;
    assert_int_equal(moe_gate_cfg_check(&c, why, sizeof why), MOE_EINVAL);
    c = moe_gate_cfg_deepseek_v3(256);
    assert_int_equal(moe_gate_cfg_check(&c, why, sizeof why), MOE_OK);
    float l[1] = {0};
    int32_t idx[1];
    float w[1];
    c = moe_gate_cfg_default(0, 1);
    assert_int_equal(moe_topk_gating_cpu(l, NULL, &c, 1, idx, w, NULL, NULL), MOE_EINVAL);
}

/* Perfect balance: rows are cyclic shifts of one vector, K = 1 -> every expert chosen once and the
 * mean probability is 1/E for every expert -> loss = E * sum (1/E)(1/E) = 1 exactly.
 * Collapse: every token prefers expert 0 by 10 nats -> f_0 = 1, P_0 = e^10 / (e^10 + 3) -> loss 4 P_0. */
static void test_aux_loss_closed_forms(void **state) {
    (void)state;
    const int T = 4, E = 4;
    const float base[4] = {3, 1, 0, -1};
    float logits[16];
    for (int t = 0; t < T; t++)
        for (int e = 0; e < E; e++) logits[t * E + e] = base[(e - t + E) % E];
    moe_gate_cfg c = moe_gate_cfg_default(E, 1);
    int32_t idx[4], cnt[4];
    float w[4], psum[4];
    assert_int_equal(moe_topk_gating_cpu(logits, NULL, &c, T, idx, w, cnt, psum), MOE_OK);
    for (int e = 0; e < E; e++) {
        assert_int_equal(cnt[e], 1);
        assert_float_equal(psum[e] / T, 0.25, 1e-6);
    }
    assert_float_equal(moe_aux_loss(cnt, psum, T, E, 1), 1.0, 1e-6);

    for (int t = 0; t < T; t++)
        for (int e = 0; e < E; e++) logits[t * E + e] = e == 0 ? 10.0f : 0.0f;
    assert_int_equal(moe_topk_gating_cpu(logits, NULL, &c, T, idx, w, cnt, psum), MOE_OK);
    assert_int_equal(cnt[0], 4);
    double p0 = exp(10.0) / (exp(10.0) + 3.0);
    assert_float_equal(moe_aux_loss(cnt, psum, T, E, 1), 4.0 * p0, 1e-5);
}

/* ------------------------------------------------------------------------------------------- */
/* dispatch layout, permute, combine                                                            */
/* ------------------------------------------------------------------------------------------- */
typedef struct {
    int32_t *expert_counts, *expert_offsets, *rank_counts, *rank_offsets, *slot, *row_token;
    int32_t totals[2];
    moe_dispatch_layout view;
} layout_buf;

static void layout_alloc(layout_buf *b, int T, int K, int E, int R) {
    b->expert_counts = calloc((size_t)E, sizeof(int32_t));
    b->expert_offsets = calloc((size_t)E, sizeof(int32_t));
    b->rank_counts = calloc((size_t)R, sizeof(int32_t));
    b->rank_offsets = calloc((size_t)R, sizeof(int32_t));
    b->slot = calloc((size_t)T * K + 1, sizeof(int32_t));
    b->row_token = calloc((size_t)T * K + 1, sizeof(int32_t));
    b->view = (moe_dispatch_layout){b->expert_counts, b->expert_offsets, b->rank_counts,
                                    b->rank_offsets, b->slot, b->row_token, b->totals};
}

static void layout_free(layout_buf *b) {
    free(b->expert_counts);
    free(b->expert_offsets);
    free(b->rank_counts);
    free(b->rank_offsets);
    free(b->slot);
    free(b->row_token);
}

/* T = 8, E = 4, K = 1, capacity = ceil(1.0 * 8 * 1 / 4) = 2.
 * routes 0 0 0 1 0 2 1 0: expert 0 wants tokens 0 1 2 4 7 -> keeps 0 1, drops 2 4 7. */
static void test_capacity_drop_keeps_earliest(void **state) {
    (void)state;
    const int T = 8, K = 1, E = 4, R = 2;
    int cap = moe_capacity(1.0, T, K, E);
    assert_int_equal(cap, 2);
    assert_int_equal(moe_capacity(1.25, 8, 2, 4), 5);
    assert_int_equal(moe_capacity(0.0, 8, 2, 4), -1);
    assert_int_equal(moe_capacity(1.5, 4, 1, 4), 2);     /* ceil(1.5): rounds up */
    assert_int_equal(moe_capacity(1.1, 100, 1, 10), 11); /* 11.000000000000002 in binary is 11 */
    const int32_t idx[8] = {0, 0, 0, 1, 0, 2, 1, 0};
    layout_buf b;
    layout_alloc(&b, T, K, E, R);
    assert_int_equal(moe_dispatch_layout_cpu(idx, T, K, E, R, cap, &b.view), MOE_OK);
    const int32_t exp_counts[4] = {2, 2, 1, 0}, exp_off[4] = {0, 2, 4, 5};
    const int32_t exp_slot[8] = {0, 1, -1, 2, -1, 4, 3, -1};
    const int32_t exp_rows[5] = {0, 1, 3, 6, 5};
    assert_memory_equal(b.expert_counts, exp_counts, sizeof exp_counts);
    assert_memory_equal(b.expert_offsets, exp_off, sizeof exp_off);
    assert_memory_equal(b.slot, exp_slot, sizeof exp_slot);
    assert_memory_equal(b.row_token, exp_rows, sizeof exp_rows);
    assert_int_equal(b.row_token[5], -1);
    assert_int_equal(b.rank_counts[0], 4); /* experts 0,1 on rank 0 */
    assert_int_equal(b.rank_counts[1], 1);
    assert_int_equal(b.rank_offsets[1], 4);
    assert_int_equal(b.totals[0], 5);
    assert_int_equal(b.totals[1], 3);
    /* dropless: everything kept */
    assert_int_equal(moe_dispatch_layout_cpu(idx, T, K, E, R, -1, &b.view), MOE_OK);
    assert_int_equal(b.totals[0], 8);
    assert_int_equal(b.totals[1], 0);
    assert_int_equal(b.expert_counts[0], 5);
    /* bad expert id */
    const int32_t bad[8] = {0, 0, 0, 4, 0, 0, 0, 0};
    assert_int_equal(moe_dispatch_layout_cpu(bad, T, K, E, R, -1, &b.view), MOE_EINVAL);
    layout_free(&b);
}

static void fill_bf16(gsl_rng *rng, moe_bf16 *v, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) v[i] = moe_f32_to_bf16((float)((gsl_rng_uniform(rng) * 2 - 1) * scale));
}

/* permute then combine with weights that sum to 1 in binary (1/2 + 1/4 + 1/8 + 1/8) is exact:
 * the round trip must return x bit for bit, whatever the routing. */
static void test_permute_combine_round_trip_is_identity(void **state) {
    (void)state;
    const int T = 37, H = 24, E = 8, K = 4, R = 4;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    moe_bf16 *x = malloc((size_t)T * H * 2), *send = malloc((size_t)T * K * H * 2),
             *back = malloc((size_t)T * H * 2);
    float *logits = malloc((size_t)T * E * 4), *w = malloc((size_t)T * K * 4);
    int32_t *idx = malloc((size_t)T * K * 4);
    fill_bf16(rng, x, (size_t)T * H, 3.0);
    for (int i = 0; i < T * E; i++) logits[i] = (float)gsl_rng_uniform(rng);
    moe_gate_cfg c = moe_gate_cfg_default(E, K);
    assert_int_equal(moe_topk_gating_cpu(logits, NULL, &c, T, idx, w, NULL, NULL), MOE_OK);
    const float wk[4] = {0.5f, 0.25f, 0.125f, 0.125f};
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) w[t * K + k] = wk[k];
    layout_buf b;
    layout_alloc(&b, T, K, E, R);
    assert_int_equal(moe_dispatch_layout_cpu(idx, T, K, E, R, -1, &b.view), MOE_OK);
    assert_int_equal(b.totals[0], T * K);
    moe_permute_cpu(x, b.row_token, b.totals[0], H, send);
    /* rows are grouped by expert, tokens ascending inside an expert */
    for (int e = 0; e < E; e++)
        for (int i = 1; i < b.expert_counts[e]; i++)
            assert_true(b.row_token[b.expert_offsets[e] + i] > b.row_token[b.expert_offsets[e] + i - 1]);
    moe_combine_cpu(send, b.slot, w, T, K, H, back);
    assert_memory_equal(back, x, (size_t)T * H * 2);
    layout_free(&b);
    free(x), free(send), free(back), free(logits), free(w), free(idx);
    gsl_rng_free(rng);
}

/* ------------------------------------------------------------------------------------------- */
/* live mode's stand-ins and element-wise kernels (moe_kernels.h section 9)                     */
/* ------------------------------------------------------------------------------------------- */
static moe_bf16 bf(float f) { return moe_f32_to_bf16(f); }

/* y = bf16(0.75 x[h] + 0.25 x[h+1 mod H]), by hand: exact sums, a wrap-around, and a sum below half
 * an ulp of 0.75 (2^-10 < 2^-9) that must round back to 0.75. */
static void test_token_mix_by_hand(void **state) {
    (void)state;
    const moe_bf16 x[8] = {bf(1), bf(2), bf(3), bf(4), bf(1), bf(0x1p-8f), bf(0), bf(-4)};
    moe_bf16 y[8];
    moe_token_mix_cpu(x, 2, 4, y);
    const float want[8] = {1.25f, 2.25f, 3.25f, 3.25f, 0.75f, 0x1p-10f * 3, -1.0f, -2.75f};
    for (int i = 0; i < 8; i++) assert_true(moe_bf16_to_f32(y[i]) == want[i]);
}

/* BF16 sums with ties: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 and goes to the even 1;
 * 1 + 3 x 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even) and goes up. In place too. */
static void test_bf16_add_rounds_ties_to_even(void **state) {
    (void)state;
    moe_bf16 a[3] = {bf(1), bf(1), bf(-2.5f)}, b[3] = {bf(0x1p-8f), bf(3 * 0x1p-8f), bf(0.5f)}, out[3];
    moe_bf16_add_cpu(a, b, 3, out);
    assert_true(moe_bf16_to_f32(out[0]) == 1.0f);
    assert_true(moe_bf16_to_f32(out[1]) == 1.0f + 0x1p-6f);
    assert_true(moe_bf16_to_f32(out[2]) == -2.0f);
    moe_bf16_add_cpu(a, b, 3, a);
    assert_memory_equal(a, out, sizeof out);
}

/* y = bf16(x * s): 3 x fp32(1/3) = 1.0000000298 -> 1; 384 x 1/256 = 1.5 exactly; in place. */
static void test_bf16_scale_by_hand(void **state) {
    (void)state;
    moe_bf16 x[3] = {bf(3), bf(384), bf(-7)};
    moe_bf16_scale_cpu(x, 1.0f / 3.0f, 1, x);
    assert_true(moe_bf16_to_f32(x[0]) == 1.0f);
    moe_bf16_scale_cpu(x + 1, 1.0f / 256.0f, 2, x + 1);
    assert_true(moe_bf16_to_f32(x[1]) == 1.5f);
    assert_true(moe_bf16_to_f32(x[2]) == -7.0f / 256.0f);
}

/* T = 2 tokens, K = 2: slots {1, dropped, 0, 2}, weights {0.5, 0.25, 2, 1}: row 1 = 0.5 g0, row 0 =
 * 2 g1, row 2 = g1, row 3 (nobody's) keeps its sentinel. And the combine's adjoint: for y = 1 on
 * every row, sum_t g[t] . combine(y)[t] = sum_rows g_send[row] . 1 (exact in these values). */
static void test_unpermute_bwd_by_hand(void **state) {
    (void)state;
    enum { T = 2, K = 2, H = 3 };
    const moe_bf16 g[T * H] = {bf(1), bf(-2), bf(4), bf(0.5f), bf(3), bf(-1)};
    const int32_t slot[T * K] = {1, -1, 0, 2};
    const float w[T * K] = {0.5f, 0.25f, 2, 1};
    moe_bf16 gs[4 * H];
    for (int i = 0; i < 4 * H; i++) gs[i] = bf(99);
    moe_unpermute_bwd_cpu(g, slot, w, T, K, H, gs);
    const float want[4 * H] = {1, 6, -2, 0.5f, -1, 2, 0.5f, 3, -1, 99, 99, 99};
    for (int i = 0; i < 4 * H; i++) assert_true(moe_bf16_to_f32(gs[i]) == want[i]);
    moe_bf16 ones[3 * H], out[T * H];
    for (int i = 0; i < 3 * H; i++) ones[i] = bf(1);
    moe_combine_cpu(ones, slot, w, T, K, H, out);
    double lhs = 0, rhs = 0;
    for (int i = 0; i < T * H; i++) lhs += (double)moe_bf16_to_f32(g[i]) * moe_bf16_to_f32(out[i]);
    for (int i = 0; i < 3 * H; i++) rhs += moe_bf16_to_f32(gs[i]);
    assert_true(lhs == rhs);
}

static void test_fill_f32(void **state) {
    (void)state;
    float v[5] = {0};
    moe_fill_f32_cpu(v, 1.0f, 4);
    for (int i = 0; i < 4; i++) assert_true(v[i] == 1.0f);
    assert_true(v[4] == 0.0f);
}

/* The probe's kernels: N ticks from any start add exactly N (the counter the probe checks its
 * launches by); the spin writes its value whatever the cycle count, and touches nothing else. */
static void test_tick_and_spin(void **state) {
    (void)state;
    int32_t c = -5;
    for (int i = 0; i < 1000; i++) moe_tick_cpu(&c);
    assert_int_equal(c, 995);
    int32_t flag[3] = {7, 7, 7};
    moe_spin_cpu(0, &flag[1], 42);
    assert_int_equal(flag[1], 42);
    moe_spin_cpu(40000000LL, &flag[1], -3);
    assert_int_equal(flag[1], -3);
    assert_int_equal(flag[0], 7);
    assert_int_equal(flag[2], 7);
}

/* The burner: 0 steps leave 0; one step gives a_j = (j + 1) x 1e-3 (b_0 = 1); many steps stay in the
 * fixed point's band 2 a_j [1, 1 + 7e-4] (acc -> 2 a b for a constant b); the step count for a FLOP
 * budget is flops / (2 lanes). */
static void test_flop_burn_closed_forms(void **state) {
    (void)state;
    enum { L = 300 };   /* more than one chunk of the CPU loop */
    float out[L];
    moe_flop_burn_cpu(0, L, out);
    for (int j = 0; j < L; j++) assert_true(out[j] == 0.0f);
    moe_flop_burn_cpu(1, L, out);
    for (int j = 0; j < L; j++) assert_true(out[j] == (float)(j + 1) * 1e-3f);
    moe_flop_burn_cpu(1000, L, out);
    for (int j = 0; j < L; j++) {
        double a = (double)(j + 1) * 1e-3;
        assert_true(out[j] >= 2 * a * (1 - 1e-6) && out[j] <= 2 * a * (1 + 7e-4) * (1 + 1e-6));
    }
    assert_int_equal(moe_flop_burn_updates(2.0 * 256 * 1000, 256), 1000);
    assert_int_equal(moe_flop_burn_updates(0, 256), 0);
    assert_int_equal(moe_flop_burn_updates(1e6, 0), 0);
}

/* ------------------------------------------------------------------------------------------- */
/* all-to-all                                                                                   */
/* ------------------------------------------------------------------------------------------- */
/* 8 ranks, 4 per node (2 nodes), every pair exchanges (s + 2d + 1) rows of 3 ints tagged with
 * (src, dst, i): flat and hierarchical deliver the same bytes; flat crosses nodes 8*4 = 32 times,
 * hierarchical 8 * 1 = 8 times (one message per rail per destination node), same inter bytes. */
static void test_a2a_flat_equals_hierarchical(void **state) {
    (void)state;
    enum { R = 8, G = 4 };
    int32_t sc[R * R], so[R * R], rc[R * R], ro[R * R];
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++) sc[s * R + d] = s + 2 * d + 1;
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++) rc[d * R + s] = sc[s * R + d];
    int32_t *send[R], *recv_flat[R], *recv_hier[R];
    int64_t rows_out[R], rows_in[R];
    for (int r = 0; r < R; r++) {
        rows_out[r] = moe_exclusive_scan_i32(sc + r * R, R, so + r * R);
        rows_in[r] = moe_exclusive_scan_i32(rc + r * R, R, ro + r * R);
        send[r] = malloc((size_t)rows_out[r] * 3 * 4);
        recv_flat[r] = calloc((size_t)rows_in[r] * 3, 4);
        recv_hier[r] = calloc((size_t)rows_in[r] * 3, 4);
        for (int d = 0; d < R; d++)
            for (int i = 0; i < sc[r * R + d]; i++) {
                int32_t *row = send[r] + (size_t)(so[r * R + d] + i) * 3;
                row[0] = r, row[1] = d, row[2] = i;
            }
    }
    moe_a2a_stats fs, hs;
    assert_int_equal(moe_a2a_cpu(R, G, (const void *const *)send, sc, so, (void *const *)recv_flat,
                                 rc, ro, 12, &fs), MOE_OK);
    assert_int_equal(moe_a2a_hier_cpu(R, G, (const void *const *)send, sc, so,
                                      (void *const *)recv_hier, rc, ro, 12, &hs), MOE_OK);
    for (int d = 0; d < R; d++) {
        for (int s = 0; s < R; s++)
            for (int i = 0; i < rc[d * R + s]; i++) {
                const int32_t *row = recv_flat[d] + (size_t)(ro[d * R + s] + i) * 3;
                assert_int_equal(row[0], s);
                assert_int_equal(row[1], d);
                assert_int_equal(row[2], i);
            }
        assert_memory_equal(recv_flat[d], recv_hier[d], (size_t)rows_in[d] * 12);
    }
    assert_int_equal(fs.inter_node_msgs, 32);
    assert_int_equal(hs.inter_node_msgs, 8);
    assert_int_equal(fs.inter_node_bytes, hs.inter_node_bytes);
    /* staging on rank (node 0, local 1): rows from ranks 0..3 to ranks 1 and 5 */
    int64_t st = 0;
    for (int l = 0; l < G; l++) st += sc[l * R + 1] + sc[l * R + 5];
    assert_int_equal(moe_a2a_hier_staging_rows(sc, R, G, 1), st);
    /* a receiver that expects the wrong count is rejected */
    rc[3 * R + 2]++;
    assert_int_equal(moe_a2a_cpu(R, G, (const void *const *)send, sc, so, (void *const *)recv_flat,
                                 rc, ro, 12, NULL), MOE_EINVAL);
    for (int r = 0; r < R; r++) free(send[r]), free(recv_flat[r]), free(recv_hier[r]);
}

/* ------------------------------------------------------------------------------------------- */
/* the expert-parallel pipeline on R in-process ranks                                           */
/* ------------------------------------------------------------------------------------------- */
typedef void (*expert_fn)(void *ctx, const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                          const int32_t *seg_expert, int rank, moe_bf16 *y_rows);

typedef struct {
    int T, H, E, K, R, G, capacity, hierarchical;
    moe_gate_cfg cfg;
    const moe_bf16 *w_gate;
    const float *bias;
} pipe_shape;

typedef struct {
    layout_buf lay;
    int32_t *idx;
    float *w;
    moe_bf16 *send, *recv, *y_recv, *y_send;
    int64_t n_recv;
} rank_state;

/* Runs the full EP pipeline; out[r] gets rank r's combined output. Returns the per-rank received
 * row counts in recv_rows (may be NULL). */
static void run_pipeline(const pipe_shape *p, moe_bf16 *const *x, moe_bf16 *const *out,
                         expert_fn expert, void *ctx, int64_t *recv_rows) {
    const int T = p->T, H = p->H, E = p->E, K = p->K, R = p->R, EL = E / R;
    rank_state *st = calloc((size_t)R, sizeof *st);
    float *logits = malloc((size_t)T * E * sizeof *logits);
    /* per-rank gating, layout, permute */
    for (int r = 0; r < R; r++) {
        rank_state *s = &st[r];
        s->idx = malloc((size_t)T * K * 4);
        s->w = malloc((size_t)T * K * 4);
        moe_router_logits_cpu(x[r], p->w_gate, logits, T, H, E);
        assert_int_equal(moe_topk_gating_cpu(logits, p->bias, &p->cfg, T, s->idx, s->w, NULL, NULL), MOE_OK);
        layout_alloc(&s->lay, T, K, E, R);
        assert_int_equal(moe_dispatch_layout_cpu(s->idx, T, K, E, R, p->capacity, &s->lay.view), MOE_OK);
        s->send = malloc(((size_t)T * K + 1) * H * 2);
        s->y_send = malloc(((size_t)T * K + 1) * H * 2);
        moe_permute_cpu(x[r], s->lay.row_token, s->lay.totals[0], H, s->send);
    }
    /* count all-to-all: rank s sends its [EL] per-expert counts for rank d's experts */
    int32_t *one = malloc((size_t)R * R * 4), *onep = malloc((size_t)R * R * 4);
    int32_t *seg_counts = malloc((size_t)R * R * EL * 4); /* [d][s][EL] */
    const void **cs = malloc((size_t)R * sizeof *cs);
    void **cr = malloc((size_t)R * sizeof *cr);
    for (int i = 0; i < R * R; i++) one[i] = 1, onep[i] = i % R;
    for (int r = 0; r < R; r++) cs[r] = st[r].lay.expert_counts, cr[r] = seg_counts + (size_t)r * R * EL;
    assert_int_equal(moe_a2a_cpu(R, p->G, cs, one, onep, cr, one, onep, (size_t)EL * 4, NULL), MOE_OK);
    /* token all-to-all */
    int32_t *sc = malloc((size_t)R * R * 4), *so = malloc((size_t)R * R * 4);
    int32_t *rc = malloc((size_t)R * R * 4), *ro = malloc((size_t)R * R * 4);
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++) {
            sc[s * R + d] = st[s].lay.rank_counts[d];
            so[s * R + d] = st[s].lay.rank_offsets[d];
        }
    for (int d = 0; d < R; d++) {
        for (int s = 0; s < R; s++) {
            int32_t n = 0;
            for (int j = 0; j < EL; j++) n += seg_counts[((size_t)d * R + s) * EL + j];
            rc[d * R + s] = n; /* what the count exchange announced */
        }
        st[d].n_recv = moe_exclusive_scan_i32(rc + d * R, R, ro + d * R);
        st[d].recv = malloc(((size_t)st[d].n_recv + 1) * H * 2);
        st[d].y_recv = malloc(((size_t)st[d].n_recv + 1) * H * 2);
        if (recv_rows) recv_rows[d] = st[d].n_recv;
    }
    const void **sp = malloc((size_t)R * sizeof *sp);
    void **rp = malloc((size_t)R * sizeof *rp);
    for (int r = 0; r < R; r++) sp[r] = st[r].send, rp[r] = st[r].recv;
    int (*a2a)(int, int, const void *const *, const int32_t *, const int32_t *, void *const *,
               const int32_t *, const int32_t *, size_t, moe_a2a_stats *) =
        p->hierarchical ? moe_a2a_hier_cpu : moe_a2a_cpu;
    assert_int_equal(a2a(R, p->G, sp, sc, so, rp, rc, ro, (size_t)H * 2, NULL), MOE_OK);
    /* experts: R*EL segments [src][local expert] */
    int32_t *seg_expert = malloc((size_t)R * EL * 4);
    for (int i = 0; i < R * EL; i++) seg_expert[i] = i % EL;
    for (int d = 0; d < R; d++)
        expert(ctx, st[d].recv, R * EL, seg_counts + (size_t)d * R * EL, seg_expert, d, st[d].y_recv);
    /* all-to-all back: the transposed exchange */
    for (int r = 0; r < R; r++) sp[r] = st[r].y_recv, rp[r] = st[r].y_send;
    assert_int_equal(a2a(R, p->G, sp, rc, ro, rp, sc, so, (size_t)H * 2, NULL), MOE_OK);
    for (int r = 0; r < R; r++)
        moe_combine_cpu(st[r].y_send, st[r].lay.slot, st[r].w, T, K, H, out[r]);

    for (int r = 0; r < R; r++) {
        layout_free(&st[r].lay);
        free(st[r].idx), free(st[r].w), free(st[r].send), free(st[r].y_send);
        free(st[r].recv), free(st[r].y_recv);
    }
    free(st), free(logits), free(one), free(onep), free(seg_counts), free(cs), free(cr);
    free(sc), free(so), free(rc), free(ro), free(sp), free(rp), free(seg_expert);
}

/* seed 000's scalar experts: global expert e multiplies by (e + 1) */
static void scalar_experts(void *ctx, const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                           const int32_t *seg_expert, int rank, moe_bf16 *y_rows) {
    const int *dims = ctx; /* {H, E_local} */
    int H = dims[0], EL = dims[1];
    int64_t row = 0;
    for (int s = 0; s < n_seg; s++) {
        float mult = (float)(rank * EL + seg_expert[s] + 1);
        for (int i = 0; i < seg_rows[s]; i++, row++)
            for (int h = 0; h < H; h++)
                y_rows[row * H + h] = moe_f32_to_bf16(mult * moe_bf16_to_f32(x_rows[row * H + h]));
    }
}

/* seed 000 §4.1 with hand-picked tokens. W_g = identity (H = E = 4), so logits = x.
 *   rank 0: t0 [2 1 0 0] -> e0,e1   t1 [0 3 1 0] -> e1,e2   t2 [1 0 0 2] -> e3,e0
 *   rank 1: t0 [0 0 2 2] -> e2,e3 (tie)   t1 [1 1 1 0] -> e0,e1 (3-way tie)   t2 [0 2 0 3] -> e3,e1
 * softmax over the K = sigma(gap): gap 1 (gap 2 for rank 0 t1) -> sigma(gap), 1 - sigma(gap);
 * ties -> 1/2, 1/2.
 * Dispatch (rank = e / 2): rank 0 sends 4 rows to itself, 2 to rank 1; rank 1 sends 3 and 3.
 * Received (seed: "tasks per rank"): rank 0 gets 7, rank 1 gets 5 = 12 = 6 tokens x top-2.
 * Output: out = sum_k w_k (e_k + 1) x, e.g. rank 1 t0 = (3/2 + 4/2) x = [0 0 7 7]. */
static void test_seed000_two_ranks_four_experts_top2(void **state) {
    (void)state;
    const int T = 3, H = 4, E = 4, K = 2, R = 2;
    const float xv[2][12] = {{2, 1, 0, 0, 0, 3, 1, 0, 1, 0, 0, 2}, {0, 0, 2, 2, 1, 1, 1, 0, 0, 2, 0, 3}};
    moe_bf16 xb[2][12], ob[2][12], wg[16];
    for (int r = 0; r < R; r++) moe_bf16_from_f32_array(xb[r], xv[r], 12);
    for (int i = 0; i < 16; i++) wg[i] = moe_f32_to_bf16(i / 4 == i % 4 ? 1.0f : 0.0f);
    /* routing and dispatch counts by hand */
    const int32_t exp_idx[2][6] = {{0, 1, 1, 2, 3, 0}, {2, 3, 0, 1, 3, 1}};
    const int32_t exp_rank_counts[2][2] = {{4, 2}, {3, 3}};
    const int32_t exp_slot0[6] = {0, 2, 3, 4, 5, 1}; /* rows e0:{t0,t2} e1:{t0,t1} e2:{t1} e3:{t2} */
    moe_gate_cfg c = moe_gate_cfg_default(E, K);
    for (int r = 0; r < R; r++) {
        float logits[12];
        int32_t idx[6];
        float w[6];
        moe_router_logits_cpu(xb[r], wg, logits, T, H, E);
        assert_int_equal(moe_topk_gating_cpu(logits, NULL, &c, T, idx, w, NULL, NULL), MOE_OK);
        assert_memory_equal(idx, exp_idx[r], sizeof idx);
        layout_buf b;
        layout_alloc(&b, T, K, E, R);
        assert_int_equal(moe_dispatch_layout_cpu(idx, T, K, E, R, -1, &b.view), MOE_OK);
        assert_memory_equal(b.rank_counts, exp_rank_counts[r], 8);
        if (r == 0) assert_memory_equal(b.slot, exp_slot0, sizeof exp_slot0);
        layout_free(&b);
    }
    pipe_shape p = {.T = T, .H = H, .E = E, .K = K, .R = R, .G = 1, .capacity = -1,
                    .cfg = c, .w_gate = wg};
    int dims[2] = {H, E / R};
    int64_t recv_rows[2];
    moe_bf16 *xs[2] = {xb[0], xb[1]}, *os[2] = {ob[0], ob[1]};
    run_pipeline(&p, xs, os, scalar_experts, dims, recv_rows);
    assert_int_equal(recv_rows[0], 7);
    assert_int_equal(recv_rows[1], 5);
    const double s1 = sigm(1.0), s2 = sigm(2.0);
    const double wexp[2][6] = {{s1, 1 - s1, s2, 1 - s2, s1, 1 - s1}, {0.5, 0.5, 0.5, 0.5, s1, 1 - s1}};
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                double expv = 0;
                for (int k = 0; k < K; k++)
                    expv += wexp[r][t * K + k] * (exp_idx[r][t * K + k] + 1) * xv[r][t * H + h];
                double got = moe_bf16_to_f32(ob[r][t * H + h]);
                if (fabs(got - expv) > fabs(expv) / 128.0)
                    fail_msg("rank %d token %d h %d: got %g expected %g", r, t, h, got, expv);
            }
    for (int h = 0; h < H; h++) assert_true(moe_bf16_to_f32(ob[1][h]) == (float)(3.5 * xv[1][h]));
}

/* --- END TO END against the dense reference ------------------------------------------------ */
typedef struct {
    const moe_bf16 *w1, *w3, *w2; /* all E experts */
    int H, F, EL;
    float *work;
} ffn_ctx;

static void real_experts(void *vctx, const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                         const int32_t *seg_expert, int rank, moe_bf16 *y_rows) {
    ffn_ctx *c = vctx;
    size_t off = (size_t)rank * c->EL * c->H * c->F; /* this rank's slice of the expert weights */
    moe_expert_ffn_cpu(x_rows, n_seg, seg_rows, seg_expert, c->w1 + off, c->w3 + off, c->w2 + off,
                       c->H, c->F, y_rows, c->work);
}

typedef struct {
    int T, H, F, E, K, R, G;
    moe_score_fn score;
    int n_groups, topk_groups, n_nodes, topk_nodes;
    float routed_scaling;
    double capacity_factor;
    int hierarchical, with_bias;
} e2e_case;

static void run_e2e_case(const e2e_case *ec, unsigned long seed) {
    const int T = ec->T, H = ec->H, F = ec->F, E = ec->E, K = ec->K, R = ec->R;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    moe_bf16 *wg = malloc((size_t)H * E * 2);
    moe_bf16 *w1 = malloc((size_t)E * H * F * 2), *w3 = malloc((size_t)E * H * F * 2),
             *w2 = malloc((size_t)E * F * H * 2);
    fill_bf16(rng, wg, (size_t)H * E, 1.0 / sqrt(H));
    fill_bf16(rng, w1, (size_t)E * H * F, 1.0 / sqrt(H));
    fill_bf16(rng, w3, (size_t)E * H * F, 1.0 / sqrt(H));
    fill_bf16(rng, w2, (size_t)E * F * H, 1.0 / sqrt(F));
    float *bias = NULL;
    if (ec->with_bias) {
        bias = malloc((size_t)E * 4);
        for (int e = 0; e < E; e++) bias[e] = (float)(0.1 * gsl_rng_uniform(rng));
    }
    moe_gate_cfg c = moe_gate_cfg_default(E, K);
    c.score = ec->score;
    c.routed_scaling = ec->routed_scaling > 0 ? ec->routed_scaling : 1.0f;
    if (ec->n_groups) c.n_groups = ec->n_groups, c.topk_groups = ec->topk_groups;
    if (ec->n_nodes) c.n_nodes = ec->n_nodes, c.topk_nodes = ec->topk_nodes;
    char why[128];
    if (moe_gate_cfg_check(&c, why, sizeof why) != MOE_OK) fail_msg("bad case: %s", why);

    moe_bf16 **x = malloc((size_t)R * sizeof *x), **out = malloc((size_t)R * sizeof *out);
    moe_bf16 *ref = malloc((size_t)T * H * 2);
    for (int r = 0; r < R; r++) {
        x[r] = malloc((size_t)T * H * 2);
        out[r] = malloc((size_t)T * H * 2);
        fill_bf16(rng, x[r], (size_t)T * H, 2.0);
    }
    int cap = moe_capacity(ec->capacity_factor, T, K, E);
    pipe_shape p = {.T = T, .H = H, .E = E, .K = K, .R = R, .G = ec->G, .capacity = cap,
                    .hierarchical = ec->hierarchical, .cfg = c, .w_gate = wg, .bias = bias};
    ffn_ctx fc = {w1, w3, w2, H, F, E / R, malloc(moe_expert_ffn_cpu_work_floats(H, F) * 4)};
    run_pipeline(&p, x, out, real_experts, &fc, NULL);

    for (int r = 0; r < R; r++) {
        assert_int_equal(moe_layer_ref_cpu(x[r], T, H, F, wg, &c, bias, cap, w1, w3, w2, ref), MOE_OK);
        double maxref = 0;
        for (int i = 0; i < T * H; i++) maxref = fmax(maxref, fabs(moe_bf16_to_f32(ref[i])));
        assert_true(maxref > 0);
        for (int i = 0; i < T * H; i++) {
            double a = moe_bf16_to_f32(out[r][i]), b = moe_bf16_to_f32(ref[i]);
            if (fabs(a - b) > 1e-2 * fabs(b) + 1e-2 * maxref)
                fail_msg("case T%d H%d E%d K%d R%d rank %d elem %d: pipeline %g vs dense %g", T, H, E,
                         K, R, r, i, a, b);
        }
    }
    for (int r = 0; r < R; r++) free(x[r]), free(out[r]);
    free(x), free(out), free(ref), free(wg), free(w1), free(w3), free(w2), free(bias), free(fc.work);
    gsl_rng_free(rng);
}

static void test_e2e_pipeline_equals_dense_reference(void **state) {
    (void)state;
    static const e2e_case cases[] = {
        /* T   H   F   E  K  R  G  score              groups  nodes  scale cap  hier bias */
        {16, 32, 16, 8, 2, 4, 2, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 0, 0.0, 0, 0},
        {16, 32, 16, 8, 2, 4, 2, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 0, 0.0, 1, 0},
        {7, 16, 8, 4, 2, 2, 1, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 0, 0.0, 0, 0},
        {33, 64, 24, 16, 4, 4, 2, MOE_SCORE_SIGMOID, 4, 2, 0, 0, 2.5f, 0.0, 1, 1},
        {40, 32, 16, 16, 2, 4, 4, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 0, 1.0, 0, 0}, /* drops */
        {24, 48, 32, 32, 8, 4, 2, MOE_SCORE_SIGMOID, 0, 0, 2, 1, 2.5f, 0.0, 1, 1}, /* node-limited */
        {64, 32, 16, 8, 1, 8, 4, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 0, 1.25, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_e2e_case(&cases[i], 100 + i);
}

/* The timing API runs every kernel on its preallocated buffers, and the work model is the
 * textbook count (router GEMM 2*T*H*E flops; expert FFN 3 GEMMs of 2*rows*H*F). */
static void test_bench_api_runs_every_kernel(void **state) {
    (void)state;
    moe_bench_shape s = {.tokens = 32, .hidden = 64, .ffn_hidden = 32, .experts = 8, .top_k = 2,
                         .ranks = 4, .gpus_per_node = 2, .capacity_factor = 0.0,
                         .score = MOE_SCORE_SOFTMAX, .seed = 7};
    moe_bench_cpu *b = NULL;
    assert_int_equal(moe_bench_cpu_create(&s, &b), MOE_OK);
    for (int id = 0; id < MOE_KERNEL_COUNT; id++) {
        assert_int_equal(moe_bench_cpu_run(b, (moe_kernel_id)id), MOE_OK);
        moe_kernel_work w;
        assert_int_equal(moe_kernel_work_of((moe_kernel_id)id, &s, &w), MOE_OK);
        assert_true(w.bytes > 0);
        assert_string_not_equal(moe_kernel_name((moe_kernel_id)id), "unknown");
    }
    moe_bench_cpu_destroy(b);
    moe_kernel_work w;
    assert_int_equal(moe_kernel_work_of(MOE_KERNEL_ROUTER_GEMM, &s, &w), MOE_OK);
    assert_float_equal(w.flops, 2.0 * 32 * 64 * 8, 0.0);
    assert_int_equal(moe_kernel_work_of(MOE_KERNEL_EXPERT_FFN, &s, &w), MOE_OK);
    assert_float_equal(w.flops, 6.0 * 64 * 64 * 32 + 4.0 * 64 * 32, 0.0);
    assert_int_equal(moe_kernel_work_of(MOE_KERNEL_A2A, &s, &w), MOE_OK);
    assert_float_equal(w.comm_bytes, 64.0 * 64 * 2 * 3 / 4, 0.0); /* 3/4 of the rows leave */
    s.ranks = 3; /* 8 experts do not split over 3 ranks */
    assert_int_equal(moe_bench_cpu_create(&s, &b), MOE_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_round_to_nearest_even),
        cmocka_unit_test(test_topk_tie_break_lower_index_wins),
        cmocka_unit_test(test_sigmoid_normalised_scaled_and_bias),
        cmocka_unit_test(test_group_limited_selection),
        cmocka_unit_test(test_node_limited_selection),
        cmocka_unit_test(test_gate_cfg_rejects_bad_configs),
        cmocka_unit_test(test_aux_loss_closed_forms),
        cmocka_unit_test(test_capacity_drop_keeps_earliest),
        cmocka_unit_test(test_permute_combine_round_trip_is_identity),
        cmocka_unit_test(test_token_mix_by_hand),
        cmocka_unit_test(test_bf16_add_rounds_ties_to_even),
        cmocka_unit_test(test_bf16_scale_by_hand),
        cmocka_unit_test(test_unpermute_bwd_by_hand),
        cmocka_unit_test(test_fill_f32),
        cmocka_unit_test(test_flop_burn_closed_forms),
        cmocka_unit_test(test_tick_and_spin),
        cmocka_unit_test(test_a2a_flat_equals_hierarchical),
        cmocka_unit_test(test_seed000_two_ranks_four_experts_top2),
        cmocka_unit_test(test_e2e_pipeline_equals_dense_reference),
        cmocka_unit_test(test_bench_api_runs_every_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
