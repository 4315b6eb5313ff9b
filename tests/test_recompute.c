/* test_recompute.c — recomputation by module (layout.recompute_modules, Megatron's names) in the
 * memory ledgers and the price table.
 *
 * Truths: a block small enough to list every cached tensor by hand; two independent spellings of
 * the same set (DeepSeek-V3's "selective" and the modules layernorm + moe_act on a model without
 * dense or shared FFNs) that must price and hold alike; the cost model's own GEMM and pointwise
 * formulas for the dense MLP's forward, which recomputing "mlp" re-runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/plan/costmodel.h"
#include "sim/plan/memory.h"
#include "sim/plan/plan.h"
#include "sim/plan/plan_costs.h"
#include "sim/plan/recompute.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario_defaults.h"

/* h = 8, 2 heads of 4 (MHA), GeLU FFN 32, BF16 (every width 2 B), per token:
 *   attention: block input 8 x 2 = 16, output O 2 x 4 x 2 = 16, logsumexp 2 x 4 = 8, RMSNorm output
 *   16, q/k/v 3 x 8 x 2 = 48 -> 104;  FFN side: input 16 + norm output 16 = 32;  FFN: fc1 output
 *   32 x 2 = 64 and GeLU output 64 -> 128.  Total 264.
 *   core_attn drops O and the logsumexp: 240; layernorm both norm outputs: 232; mlp the FFN's 128:
 *   136; core_attn + layernorm + mlp: 136 - 24 - 32 = 80; full: the block input, 16. */
static void activations_by_module_by_hand(void **state) {
    (void)state;
    model_cfg m = {.layers = 2, .dense_layers = 2, .hidden = 8, .heads = 2, .head_dim = 4, .kv_heads = 2,
                   .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU, .experts = 0, .vocab = 16,
                   .seq_len = 4, .attention = ATTN_MHA};
    precision_cfg p = {DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    struct { unsigned modules; double want; } C[] = {
        {0, 264}, {RCM_CORE_ATTN, 240}, {RCM_LAYERNORM, 232}, {RCM_MLP, 136},
        {RCM_CORE_ATTN | RCM_LAYERNORM | RCM_MLP, 80},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        layout_cfg lay = {.recompute = RECOMPUTE_SELECTIVE, .recompute_modules = C[i].modules};
        if (!C[i].modules) lay.recompute = RECOMPUTE_NONE;
        double got = memory_block_activation(&m, &p, recompute_set(&lay), 0);
        if (got != C[i].want) fail_msg("modules %u: %g B per token, want %g", C[i].modules, got, C[i].want);
    }
    assert_true(memory_block_activation(&m, &p, RC_FULL, 0) == 16.0);
}

/* Qwen3-235B-A22B has no dense and no shared FFN: DeepSeek-V3's selective set (norms, MLA
 * up-projections, activation outputs) is there exactly the modules layernorm + moe_act. The plan's
 * memory and recompute time must agree to the last bit. */
static void selective_equals_its_modules(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    assert_int_equal(preset_model("qwen3-235b-a22b", &s.model), 0);
    s.layout.tp = 1; s.layout.pp = 2; s.layout.ep = 64; s.layout.dp = 32; s.layout.schedule = SCHED_1F1B;
    s.layout.global_batch = 4096;
    s.layout.recompute = RECOMPUTE_SELECTIVE;
    plan_result a, b;
    moe_error err = {0};
    assert_int_equal(plan_evaluate(&s, &a, &err), 0);
    s.layout.recompute_modules = RCM_LAYERNORM | RCM_MOE_ACT;
    assert_int_equal(plan_evaluate(&s, &b, &err), 0);
    assert_true(a.memory_GiB.activations == b.memory_GiB.activations);
    assert_true(a.recompute_mb_s == b.recompute_mb_s && a.recompute_mb_s > 0);
    assert_true(a.step_time_s == b.step_time_s);
}

/* Recomputing "mlp" re-runs the dense MLP's forward: fc1 (T x f/tp x h), GeLU, fc2 (T x h x f/tp).
 * One stage of 2 dense blocks, TP1, a 4096-token micro-batch of the h800 published model: the plan's
 * recompute per micro-batch is 2 x that forward, priced here with the cost model's functions. */
static void mlp_recompute_is_its_forward(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    assert_int_equal(preset_model("llama3-8b", &s.model), 0);
    s.model.layers = 2;
    s.model.dense_layers = 2;
    s.model.seq_len = 4096;
    s.cluster.nodes = 1;
    s.layout.tp = 1; s.layout.pp = 1; s.layout.ep = 1; s.layout.dp = 8; s.layout.schedule = SCHED_1F1B;
    s.layout.global_batch = 8;
    s.layout.recompute = RECOMPUTE_SELECTIVE;
    s.layout.recompute_modules = RCM_MLP;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    costmodel cm;
    moe_error err = {0};
    assert_int_equal(costmodel_load("calibration/models/h800-published.json", &cm, &err), 0);
    plan_result pr;
    assert_int_equal(plan_evaluate_with_costmodel(&s, &cm, &pr, &err), 0);
    double T = 4096, h = 4096, f = 14336;
    double fwd = costmodel_gemm_s(&cm, T, 2 * f, h, DT_BF16) +                    /* gate + up */
                 costmodel_kernel_s(&cm, "swiglu", T * f * 3.0 * 2.0) +           /* SwiGLU */
                 costmodel_gemm_s(&cm, T, h, f, DT_BF16);                         /* down */
    assert_float_equal(pr.recompute_mb_s, 2 * fwd, 1e-12 * fwd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activations_by_module_by_hand),
        cmocka_unit_test(selective_equals_its_modules),
        cmocka_unit_test(mlp_recompute_is_its_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
