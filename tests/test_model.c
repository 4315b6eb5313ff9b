/* test_model.c — exact parameter and FLOP counts (sim/plan/model.h) against published model sizes and a
 * model small enough to count by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "sim/plan/model.h"
#include "sim/scenario/presets.h"

static void assert_within(double got, double want, double rel_tol) {
    double rel = fabs(got - want) / fabs(want);
    if (rel > rel_tol) fail_msg("got %.6g, want %.6g (rel. error %.3g%% > %.3g%%)", got, want,
                                100 * rel, 100 * rel_tol);
}

static model_counts counts_of(const char *preset) {
    model_cfg m;
    assert_int_equal(preset_model(preset, &m), 0);
    model_counts mc;
    model_count(&m, &mc);
    return mc;
}

/* DeepSeek-V3 report: 671B total, 37B activated per token (both without the 14B MTP module). */
static void deepseek_v3_671b_37b(void **state) {
    (void)state;
    model_counts mc = counts_of("deepseek-v3");
    assert_within(mc.params_total, 671e9, 0.015);
    assert_within(mc.params_active, 37e9, 0.015);
    /* structure: 58 MoE layers of 256 routed experts of 3 x 7168 x 2048 */
    assert_int_equal(mc.moe_layers, 58);
    assert_true(mc.params_routed_experts == 58.0 * 256 * 3 * 7168 * 2048);
    /* MLA per layer, from the published config: q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x576,
     * kv_b 512x(128x256), o 16384x7168, norms 1536 + 512 = 187,107,328 */
    assert_true(mc.attn_split + mc.attn_replicated == 187107328.0);
}

/* Mistral AI: Mixtral 8x7B has 46.7B parameters and uses 12.9B per token. */
static void mixtral_8x7b(void **state) {
    (void)state;
    model_counts mc = counts_of("mixtral-8x7b");
    assert_within(mc.params_total, 46.7e9, 0.015);
    assert_within(mc.params_active, 12.9e9, 0.015);
}

/* Brown et al. 2020: GPT-3 175B. */
static void gpt3_175b(void **state) {
    (void)state;
    model_counts mc = counts_of("gpt3-175b");
    assert_within(mc.params_total, 175e9, 0.01);
    assert_true(mc.params_active == mc.params_total);   /* dense */
    assert_true(mc.params_head == 0);                    /* tied */
}

/* Llama 3 herd paper: 405B. */
static void llama3_405b(void **state) {
    (void)state;
    model_counts mc = counts_of("llama3-405b");
    assert_within(mc.params_total, 405e9, 0.01);
}

/* Hand-counted dense model: 2 layers, MHA, h = 8, 2 heads of 4, GeLU FFN 32, vocab 16, tied, s = 4.
 *   attention per layer: q, k, v, o = 4 x 8 x 8            = 256
 *   FFN per layer: 8 x 32 + 32 x 8                          = 512
 *   norms per layer: 2 x 8                                  =  16   -> layer 784, 2 layers 1568
 *   embedding 16 x 8 = 128, head tied = 0, final norm 8     -> total 1704 (all active)
 * Forward FLOPs per token:
 *   projections 2 x (256 + 512) = 1536 per layer
 *   scores: 2 x (s/2 = 2 keys) x 2 heads x 4 = 32; values the same 32 -> 64 per layer (causal = half)
 *   layers 2 x 1600 = 3200; head 2 x 8 x 16 = 256 (the matmul happens though tied) -> 3456
 *   fwd + bwd = 3 x 3456 = 10368; 6N = 6 x 1704 = 10224 */
static void hand_counted_dense(void **state) {
    (void)state;
    model_cfg m = {.layers = 2, .dense_layers = 2, .hidden = 8, .heads = 2, .head_dim = 4,
                   .kv_heads = 2, .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU,
                   .experts = 0, .vocab = 16, .seq_len = 4, .attention = ATTN_MHA,
                   .tie_embeddings = 1};
    model_counts mc;
    model_count(&m, &mc);
    assert_true(mc.params_total == 1704.0);
    assert_true(mc.params_active == 1704.0);
    assert_true(mc.params_attention == 512.0);
    assert_true(mc.params_dense_ffn == 1024.0);
    assert_true(mc.params_norms == 40.0);
    assert_true(mc.fwd_attn_core == 64.0);
    assert_true(mc.fwd_total == 3456.0);
    assert_true(mc.flops_per_token == 10368.0);
    assert_true(mc.flops_per_token_6n == 10224.0);
}

/* Hand-counted MoE model: 2 layers (1 dense, 1 MoE), GQA h = 8, 4 heads of 2, 2 kv heads, SwiGLU,
 * dense FFN 16, 4 routed experts of inner 4, top-2, 1 shared expert, vocab 10, untied, s = 8.
 *   attention: q 8x8 = 64, k 8x4 = 32, v 8x4 = 32, o 8x8 = 64            = 192 per layer
 *   dense FFN: 3 x 8 x 16 = 384; one expert: 3 x 8 x 4 = 96; router 8 x 4 = 32
 *   layer 0: 192 + 384 + 16 = 592; layer 1: 192 + 4 x 96 + 96 + 32 + 16 = 720
 *   embedding 80 + head 80 + final norm 8 -> total 592 + 720 + 168 = 1480
 *   active: layer 1 with 2 routed experts: 192 + 2 x 96 + 96 + 32 + 16 = 528 -> 592 + 528 + 168 = 1288
 * Forward FLOPs per token: attention core 2 x 4 keys x 4 heads x 2 x 2 (scores + values) = 128;
 *   layer 0: 2 x 576 + 128 = 1280; layer 1: 2 x 192 + 128 + 2 x 96 (shared) + 2 x 192 (2 routed)
 *   + 2 x 32 (router) = 1152; head 2 x 80 = 160 -> 2592 */
static void hand_counted_moe(void **state) {
    (void)state;
    model_cfg m = {.layers = 2, .dense_layers = 1, .hidden = 8, .heads = 4, .head_dim = 2,
                   .kv_heads = 2, .v_head_dim = 2, .ffn_hidden = 16, .ffn_act = FFN_SWIGLU,
                   .experts = 4, .shared_experts = 1, .expert_hidden = 4, .top_k = 2, .vocab = 10,
                   .seq_len = 8, .attention = ATTN_GQA, .tie_embeddings = 0};
    model_counts mc;
    model_count(&m, &mc);
    assert_true(mc.params_total == 1480.0);
    assert_true(mc.params_active == 1288.0);
    assert_true(mc.params_routed_experts == 384.0);
    assert_true(mc.params_router == 32.0);
    assert_true(mc.fwd_total == 2592.0);
}

/* MLA without q compression and the causal convention at another length: counted by hand. */
static void attention_core_scales_with_seq(void **state) {
    (void)state;
    model_cfg m;
    assert_int_equal(preset_model("deepseek-v3", &m), 0);
    /* 2 x (s/2) x 128 heads x (192 + 128) per token = 40960 s */
    assert_true(model_attn_core_flops(&m, 4096) == 40960.0 * 4096);
    m.q_lora_rank = 0;
    model_counts mc;
    model_count(&m, &mc);
    /* q: 7168 x 128 x 192 replaces q_a + norm + q_b */
    double attn = 7168.0 * 128 * 192 + 7168.0 * 576 + 512 + 512.0 * 128 * 256 + 16384.0 * 7168;
    assert_true(mc.attn_split + mc.attn_replicated == attn);
}

/* The presets' published totals (and active counts where the figure is stated to 1.5%), each within
 * 1.5%. Sources in sim/scenario/presets.c: Llama 3 herd paper (8B, 70B), Qwen3 model cards (30.5B,
 * 235B / 22B), the gpt-oss model card (116.83B; 5.13B active without the embedding table), the Kimi
 * K2 technical report (1.04T / 32.6B), Mistral AI (Mixtral 8x22B: 141B / 39B). */
static void new_presets_published_totals(void **state) {
    (void)state;
    struct { const char *name; double total, active; int active_without_embedding; } P[] = {
        {"llama3-8b", 8e9, 8e9, 0},
        {"llama3-70b", 70e9, 70e9, 0},
        /* "3.3B activated": 3.35B counted, a truncation of the figure, not a 1.5%-precise one */
        {"qwen3-30b-a3b", 30.5e9, 0, 0},
        {"qwen3-235b-a22b", 235e9, 22e9, 0},
        {"gpt-oss-120b", 116.83e9, 5.13e9, 1},
        {"kimi-k2", 1.04e12, 32.6e9, 0},
        {"mixtral-8x22b", 141e9, 39e9, 0},
    };
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        model_counts mc = counts_of(P[i].name);
        assert_within(mc.params_total, P[i].total, 0.015);
        double active = mc.params_active - (P[i].active_without_embedding ? mc.params_embedding : 0);
        if (P[i].active > 0) assert_within(active, P[i].active, 0.015);
    }
    /* Qwen3-30B-A3B's model card also gives 29.9B non-embedding parameters (embedding + head out) */
    model_counts q = counts_of("qwen3-30b-a3b");
    assert_within(q.params_total - q.params_embedding - q.params_head, 29.9e9, 0.015);
    /* structure by hand: gpt-oss-120b experts 36 x 128 x 3 x 2880 x 2880; Qwen3-235B attention
     * q 4096 x 8192, k and v 4096 x 512, o 8192 x 4096 */
    model_counts g = counts_of("gpt-oss-120b");
    assert_true(g.params_routed_experts == 36.0 * 128 * 3 * 2880 * 2880);
    model_counts q2 = counts_of("qwen3-235b-a22b");
    assert_true(q2.attn_split == 4096.0 * 8192 + 2 * 4096.0 * 512 + 8192.0 * 4096);
    assert_int_equal(q2.dense_layers, 0);
}

/* Sliding windows by hand: h = 8, 2 heads of 4 (MHA), s = 8, window 2, every 2nd block global, 4
 * blocks. Full block: keys s/2 = 4 -> core 2 x 4 x 2 heads x 4 x 2 (scores + values) = 128 per token.
 * Windowed block: w - w^2/(2s) = 2 - 4/16 = 1.75 keys -> 56. Blocks 0 and 2 windowed, 1 and 3 full:
 * the model's core FLOPs per token are 2 x 128 + 2 x 56 = 368, i.e. 2 x (128 - 56) = 144 below the
 * unwindowed count. A window as long as the sequence changes nothing. */
static void sliding_window_by_hand(void **state) {
    (void)state;
    model_cfg m = {.layers = 4, .dense_layers = 4, .hidden = 8, .heads = 2, .head_dim = 4,
                   .kv_heads = 2, .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU,
                   .experts = 0, .vocab = 16, .seq_len = 8, .attention = ATTN_MHA, .tie_embeddings = 1};
    model_counts full;
    model_count(&m, &full);
    assert_true(full.fwd_attn_core == 128.0);
    m.sliding_window = 2;
    m.global_attention_every = 2;
    model_counts win;
    model_count(&m, &win);
    assert_true(win.fwd_attn_core_window == 56.0);
    assert_int_equal(win.window_layers, 2);
    assert_true(model_layer_windowed(&m, 0) && !model_layer_windowed(&m, 1) && model_layer_windowed(&m, 2));
    assert_true(full.fwd_total - win.fwd_total == 144.0);
    assert_true(win.params_total == full.params_total);
    m.global_attention_every = 0;                   /* every block windowed */
    model_count(&m, &win);
    assert_int_equal(win.window_layers, 4);
    m.sliding_window = 8;                           /* the window is the whole sequence */
    model_count(&m, &win);
    assert_true(win.fwd_total == full.fwd_total);
    /* gpt-oss-120b: 18 of its 36 blocks use the 128-token window */
    model_counts g = counts_of("gpt-oss-120b");
    assert_int_equal(g.window_layers, 18);
}

/* Which blocks are MoE (model_layer_is_moe, the rule the program and live mode use): DeepSeek-V3's
 * first 3 of 61 blocks are dense, blocks 3..60 and its MTP block (61) MoE: 58 MoE layers. A model
 * without experts, or whose dense_layers covers every block, has none, MTP included. */
static void moe_layers_by_hand(void **state) {
    (void)state;
    model_cfg m;
    assert_int_equal(preset_model("deepseek-v3", &m), 0);
    assert_int_equal(m.layers, 61);
    assert_int_equal(m.dense_layers, 3);
    assert_false(model_layer_is_moe(&m, 2));
    assert_true(model_layer_is_moe(&m, 3) && model_layer_is_moe(&m, 60) && model_layer_is_moe(&m, 61));
    assert_int_equal(model_first_moe_layer(&m), 3);
    assert_int_equal(model_moe_layers(&m), 58);
    assert_int_equal(model_layer_kind(&m, 61), LAYER_MOE);
    model_counts mc;
    model_count(&m, &mc);
    assert_int_equal(mc.moe_layers, 58);
    assert_int_equal(mc.dense_layers, 3);
    m.dense_layers = m.layers;   /* experts, but every block dense */
    assert_false(model_layer_is_moe(&m, 60) || model_layer_is_moe(&m, 61));
    assert_int_equal(model_moe_layers(&m), 0);
    m.dense_layers = 0;
    m.experts = 0;               /* a dense model whatever dense_layers says */
    assert_false(model_layer_is_moe(&m, 0) || model_layer_is_moe(&m, 61));
    assert_int_equal(model_layer_kind(&m, 61), LAYER_DENSE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_presets_published_totals),
        cmocka_unit_test(sliding_window_by_hand),
        cmocka_unit_test(moe_layers_by_hand),
        cmocka_unit_test(deepseek_v3_671b_37b),
        cmocka_unit_test(mixtral_8x7b),
        cmocka_unit_test(gpt3_175b),
        cmocka_unit_test(llama3_405b),
        cmocka_unit_test(hand_counted_dense),
        cmocka_unit_test(hand_counted_moe),
        cmocka_unit_test(attention_core_scales_with_seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
