/* test_plan.c — the analytic level (sim/plan/plan.h) against seed 003's back-of-the-envelope numbers,
 * seed 000's all-to-all volume, the pipeline-bubble closed forms, hand-counted memory ledgers and
 * the layout warnings. Scenarios are built in C from the presets (no parser involved). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/scenario/schedule_rules.h"
#include "sim/plan/compute_budget.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/plan/plan.h"
#include "sim/plan/plan_compute.h"
#include "sim/plan/plan_costs.h"
#include "sim/scenario/presets.h"

#define GiB 1073741824.0

static void assert_within(double got, double want, double rel_tol) {
    double rel = fabs(got - want) / fabs(want);
    if (rel > rel_tol) fail_msg("got %.9g, want %.9g (rel. error %.3g > %.3g)", got, want, rel, rel_tol);
}

/* The seed 003 layout: DeepSeek-V3 on 4096 H800, TP1 x PP16 x EP64 x DP4, ZeRO-1, DualPipe, FP8,
 * node-limited routing M = 4; GPU MTBF 26,000 h, 5 min checkpoint write, 15T tokens at 52% MFU. */
static scenario seed_scenario(void) {
    scenario s;
    memset(&s, 0, sizeof s);
    assert_int_equal(preset_model("deepseek-v3", &s.model), 0);
    assert_int_equal(preset_cluster("h800-8rail", &s.cluster), 0);
    s.layout = (layout_cfg){.tp = 1, .pp = 16, .ep = 64, .dp = 4, .zero = 1, .micro_batch = 1,
                            .global_batch = 15360, .schedule = SCHED_DUALPIPE, .vpp = 1,
                            .recompute = RECOMPUTE_NONE, .placement = PLACE_EP_INNER};
    s.routing = (routing_cfg){.distribution = ROUTE_UNIFORM, .node_limit = 4, .capacity_factor = 1.25,
                              .drop = 1};
    s.precision = (precision_cfg){.compute = DT_FP8, .dispatch = DT_FP8, .combine = DT_BF16,
                                  .master = DT_FP32};
    s.reliability.gpu_mtbf_h = 26000;
    s.reliability.checkpoint.state_bytes = -1;
    s.reliability.checkpoint.write_min = 5;
    s.run.tokens = 15e12;
    s.run.assumed_mfu = 0.52;
    return s;
}

static plan_result eval(const scenario *s) {
    plan_result p;
    moe_error err = {0};
    int rc = plan_evaluate(s, &p, &err);
    if (rc) fail_msg("plan_evaluate failed: %s", err.msg);
    return p;
}

static int has_warning(const plan_result *p, const char *needle) {
    for (int i = 0; i < p->n_warnings; i++)
        if (strstr(p->warnings[i], needle)) return 1;
    return 0;
}

/* Seed 003 step 1 with its own input N = 37e9: 2.22e11 FLOPs/token, 3.33e24 FLOPs, 2.106 EFLOP/s,
 * 1.58e6 s, 18.3 days (the seed rounds to 3 significant digits). */
static void seed_budget_chain_with_37e9(void **state) {
    (void)state;
    double fpt = budget_flops_per_token_6n(37e9);
    assert_within(fpt, 2.22e11, 1e-12);
    double total = budget_total_flops(15e12, fpt);
    assert_within(total, 3.33e24, 1e-12);
    double cluster = budget_cluster_flops_per_s(4096, 989, 0.52);
    assert_within(cluster, 2.106e18, 5e-4);
    assert_within(budget_seconds(total, cluster), 1.58e6, 3e-3);
    assert_within(budget_days(total, cluster), 18.3, 3e-3);
}

/* The same chain through plan_evaluate, with moesim's exact active count (within 1.5% of 37e9). */
static void seed_plan_chain(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result p = eval(&s);
    assert_within(p.params_active, 37e9, 0.015);
    assert_within(p.params_total, 671e9, 0.015);
    /* the seed's back-of-the-envelope uses the model card's 37B (deepseek-v3 preset:
     * published_active_params = 37e9): 6 x 37e9 = 2.22e11 FLOPs/token, x 15e12 = 3.33e24 FLOPs,
     * / (4096 x 989e12 x 0.52 = 2.106e18 FLOP/s) = 1.58e6 s = 18.3 days */
    assert_within(p.flops_per_token_6n, 2.22e11, 1e-12);
    assert_within(p.total_flops, 3.33e24, 1e-12);
    assert_within(p.pure_compute_days, 18.3, 2e-3);
    /* without a published count, 6N is the exact active count's, and the days scale with it */
    s.model.published_active_params = 0;
    plan_result q = eval(&s);
    assert_within(q.flops_per_token_6n, 6.0 * q.params_active, 1e-12);
    assert_within(q.total_flops, 15e12 * 6.0 * q.params_active, 1e-12);
    assert_within(q.pure_compute_days, 18.3 * q.params_active / 37e9, 3e-3);
    /* the exact count with attention score/value FLOPs lies above 6N (seq 4096, MLA dims 192/128) */
    assert_true(p.flops_per_token > q.flops_per_token_6n);
    assert_true(p.flops_per_token < 1.25 * q.flops_per_token_6n);
}

/* Seed 003 step 4: 26,000 h / 4096 = 6.35 h; Daly first order with t_save = 5 min:
 * sqrt(2 x 381 x 5) - 5 = 56.7 min; Young sqrt(2 delta M) = 61.7 min. */
static void seed_reliability(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result p = eval(&s);
    assert_within(p.mtbf_cluster_h, 6.35, 1e-3);
    assert_within(p.daly_first_order_min, 56.7, 1e-3);
    assert_within(p.young_interval_min, 61.7, 1e-3);
    /* higher order adds sqrt(delta/2M)/3 + delta/(18M) of Young: 61.71 x 1.0396 - 5 = 59.2 */
    assert_true(p.daly_interval_min > p.daly_first_order_min);
    assert_true(p.checkpoint_write_s == 300.0);
}

/* "auto" checkpoint state: the whole model's FP8 weights + FP32 master + Adam m, v = 13 B/param,
 * written at the storage bandwidth (the presets' 500 GB/s: Llama 3's 2 TB/s for 16,384 GPUs, per GPU). */
static void checkpoint_auto_state(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.reliability.checkpoint.write_min = -1;
    plan_result p = eval(&s);
    assert_within(p.checkpoint_state_bytes, 13.0 * p.params_total, 1e-12);
    assert_within(p.checkpoint_write_s, 13.0 * p.params_total / 500e9, 1e-12);
}

/* Seed 000 §2.4: 8 x 8 x 7168 x 2 B = 917,504 B ~ 917.5 KB per token per MoE layer round trip in
 * BF16 (bytes sent + received over dispatch and combine, forward and backward); with FP8 dispatch
 * (DeepSeek-V3): 4 x 8 x 7168 x (1 + 2) = 688,128 B. */
static void seed_a2a_volume(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.precision.dispatch = DT_BF16;
    plan_result p = eval(&s);
    assert_true(p.a2a_bytes_per_token_layer == 917504.0);
    s.precision.dispatch = DT_FP8;
    p = eval(&s);
    assert_true(p.a2a_bytes_per_token_layer == 688128.0);
}

/* A dense GPT-3 on 4096 H100, TP8, ep 1, layers divisible by PP: the plan's bubble fraction equals
 * the closed forms (REFERENCE.md §4), whatever the per-stage time is. */
static scenario gpt3_scenario(int tp, int pp, int dp, int m, schedule_kind sched, int v) {
    scenario s = seed_scenario();
    assert_int_equal(preset_model("gpt3-175b", &s.model), 0);
    assert_int_equal(preset_cluster("h100-8rail", &s.cluster), 0);
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.layout.tp = tp; s.layout.pp = pp; s.layout.ep = 1; s.layout.dp = dp;
    s.layout.global_batch = m * dp;
    s.layout.schedule = sched;
    s.layout.vpp = v;
    return s;
}

static void bubble_closed_forms(void **state) {
    (void)state;
    struct { int tp, pp, dp, m, v; schedule_kind sched; double want; } cases[] = {
        {8, 4, 128, 8, 1, SCHED_1F1B, 3.0 / 11},
        {8, 16, 32, 60, 1, SCHED_1F1B, 15.0 / 75},
        {8, 2, 256, 1, 1, SCHED_1F1B, 1.0 / 2},
        {8, 8, 64, 64, 2, SCHED_INTERLEAVED, 7.0 / 135},
        {8, 4, 128, 16, 3, SCHED_INTERLEAVED, 3.0 / 51},
        {8, 2, 256, 8, 1, SCHED_DUALPIPE, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scenario s = gpt3_scenario(cases[i].tp, cases[i].pp, cases[i].dp, cases[i].m, cases[i].sched,
                                   cases[i].v);
        plan_result p = eval(&s);
        if (fabs(p.bubble_fraction - cases[i].want) > 1e-12)
            fail_msg("case %zu: bubble %.12f, want %.12f", i, p.bubble_fraction, cases[i].want);
    }
    /* DualPipe without exposed communication: (p/2 - 1)(F&B + B - 3W) with F&B = F + B. With B = 2F
     * and W = F that is (p/2 - 1) 2F over m x 3F of work: (p - 2) / (3m + p - 2) = 14/194 for p = 16,
     * m = 60. Priced by the cost model, W (weight-gradient GEMMs only) is less than F: attention
     * core, norms, pointwise kernels and the cross-entropy have no weight gradient. So the formula
     * holds exactly with the plan's own F, B, W, and the fraction lies a little above 14/194. */
    scenario s = gpt3_scenario(8, 16, 32, 60, SCHED_DUALPIPE, 1);
    plan_result p = eval(&s);
    double F = p.fwd_mb_s, B = p.bwd_mb_s, W = p.wgrad_mb_s;
    assert_true(W < F && B > 1.9 * F && B < 2.1 * F);
    assert_within(p.bubble_s, 7.0 * (F + B + B - 3.0 * W), 1e-12);
    assert_within(p.bubble_fraction, p.bubble_s / (60.0 * (F + B) + p.bubble_s), 1e-12);
    assert_true(p.bubble_fraction > 14.0 / 194 && p.bubble_fraction < 1.1 * 14.0 / 194);
    assert_true(fabs(bubble_1f1b(16, 60) - 0.2) < 1e-15);
    assert_true(fabs(bubble_interleaved(8, 64, 2) - 7.0 / 135) < 1e-15);
}

/* Hand-counted ledgers. Dense model: 4 layers, MHA h = 8 (2 heads of 4), GeLU FFN 32 = 4h, vocab 16
 * untied, seq 4; 1 node x 8 GPUs, BF16, ZeRO-1, 1F1B.
 *   per layer: attention 256 + FFN 512 + norms 16 = 784
 *   TP1 PP2 DP4: stage 0 = 2 layers + embedding 128 = 1696 (it holds 2 micro-batches, stage 1 one)
 *     params 2 x 1696, grads 2 x 1696, optimizer 12 x 1696 / 4 (= the seed's 2psi/(TP*PP),
 *     12psi/(TP*PP*DP) with psi/PP the stage's share)
 *   activations per token per layer (Korthikanti's 34 h bytes minus the two dropout masks 2h, plus
 *     the flash-attention logsumexp 4 B per head): 32 x 8 + 8 = 264 B;
 *     stage 0: 2 in flight x 4 tokens x 2 layers x 264 = 4224 B
 *   TP2 PP2 DP2: split attention and FFN, replicated norms, vocabulary-parallel embedding:
 *     stage 0 = 2 x (384 + 16) + 64 = 864; optimizer over attention-DP 8/(2x2) = 2 ranks;
 *     activations halved (sequence parallelism) */
static scenario tiny_dense(int tp, int pp, int dp) {
    scenario s = seed_scenario();
    s.model = (model_cfg){.layers = 4, .dense_layers = 4, .hidden = 8, .heads = 2, .head_dim = 4,
                          .kv_heads = 2, .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU,
                          .vocab = 16, .seq_len = 4, .attention = ATTN_MHA};
    s.cluster.nodes = 1;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.layout = (layout_cfg){.tp = tp, .pp = pp, .ep = 1, .dp = dp, .zero = 1, .micro_batch = 1,
                            .global_batch = 8 * dp, .schedule = SCHED_1F1B, .vpp = 1};
    return s;
}

static void memory_ledgers_by_hand(void **state) {
    (void)state;
    scenario s = tiny_dense(1, 2, 4);
    plan_result p = eval(&s);
    assert_true(p.memory_GiB.params * GiB == 2.0 * 1696);
    assert_true(p.memory_GiB.grads * GiB == 2.0 * 1696);
    assert_true(p.memory_GiB.optimizer * GiB == 12.0 * 1696 / 4);
    assert_true(p.memory_GiB.activations * GiB == 4224.0);
    assert_true(p.fits_memory);

    s = tiny_dense(2, 2, 2);
    p = eval(&s);
    assert_true(p.memory_GiB.params * GiB == 2.0 * 864);
    assert_true(p.memory_GiB.optimizer * GiB == 12.0 * 864 / 2);
    assert_true(p.memory_GiB.activations * GiB == 4224.0 / 2);

    /* ZeRO-2 shards gradients, ZeRO-3 also the weights, over the same group; each keeps two units
     * unsharded (the one in use and the one prefetched or being reduced): the largest unit of stage 0
     * is a block, 256 attention + 512 FFN + 16 norms = 784 (its extras, the embedding, are 128) */
    s = tiny_dense(1, 2, 4);
    s.layout.zero = 2;
    p = eval(&s);
    assert_true(p.memory_GiB.grads * GiB == 2.0 * (1696 / 4 + 2 * 784));
    assert_true(p.memory_GiB.params * GiB == 2.0 * 1696);
    s.layout.zero = 3;
    p = eval(&s);
    assert_true(p.memory_GiB.grads * GiB == 2.0 * (1696 / 4 + 2 * 784));
    assert_true(p.memory_GiB.params * GiB == 2.0 * (1696 / 4 + 2 * 784));
}

/* MoE ledger by hand: 2 layers (1 dense, 1 MoE) of the model counted in test_model.c (GQA h = 8,
 * 4 experts of 96, 1 shared, router 32, embedding = head = 80, final norm 8); TP1 PP1 EP2 DP4.
 *   non-expert: 592 + (192 + 96 + 32 + 16) + 80 + 80 + 8 = 1096, over attention-DP 8
 *   expert: 4 / EP2 = 2 experts x 96 = 192, over expert-DP 4
 *   params BF16 2 x 1288; optimizer 12 x (1096/8 + 192/4) = 2220 */
static void memory_moe_expert_dp(void **state) {
    (void)state;
    scenario s = tiny_dense(1, 1, 4);
    s.model = (model_cfg){.layers = 2, .dense_layers = 1, .hidden = 8, .heads = 4, .head_dim = 2,
                          .kv_heads = 2, .v_head_dim = 2, .ffn_hidden = 16, .ffn_act = FFN_SWIGLU,
                          .experts = 4, .shared_experts = 1, .expert_hidden = 4, .top_k = 2,
                          .vocab = 10, .seq_len = 8, .attention = ATTN_GQA};
    s.layout.ep = 2;
    s.layout.global_batch = 8;
    plan_result p = eval(&s);
    assert_true(p.memory_GiB.params * GiB == 2.0 * 1288);
    assert_true(p.memory_GiB.optimizer * GiB == 2220.0);
}

static void zero3_with_pp_warns(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result p = eval(&s);
    assert_false(has_warning(&p, "ZeRO"));
    s.layout.zero = 3;
    p = eval(&s);
    assert_true(has_warning(&p, "ZeRO-3 with PP=16"));
    s.layout.zero = 2;
    p = eval(&s);
    assert_true(has_warning(&p, "ZeRO-2 with PP=16"));
    /* ZeRO-3 + PP repeats the all-gather per micro-batch: the step gets longer */
    scenario s1 = seed_scenario(), s3 = seed_scenario();
    s3.layout.zero = 3;
    assert_true(eval(&s3).step_time_s > eval(&s1).step_time_s);
}

static void layout_warnings(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.layout.tp = 16; s.layout.ep = 4;   /* TP across two nodes */
    plan_result p = eval(&s);
    assert_true(has_warning(&p, "TP=16 spans nodes"));
    s = seed_scenario();
    s.layout.pp = 1; s.layout.ep = 256; s.layout.dp = 16;   /* EP over 32 nodes is still one leaf */
    s.layout.global_batch = 4096 * 4;
    p = eval(&s);
    assert_false(has_warning(&p, "crosses the spine"));
    s.layout.placement = PLACE_DP_INNER;                    /* stride 16: 256 nodes */
    p = eval(&s);
    assert_true(has_warning(&p, "crosses the spine"));
    s = seed_scenario();
    s.layout.global_batch = 256 * 20;                       /* m = 20 < 2 x PP: DualPipe cannot run it */
    moe_error verr = {0};
    assert_int_equal(scn_schedule_check("seed", scn_schedule_run(&s.layout), s.layout.pp, scn_micro_batches(&s),
                                        s.layout.global_batch, &verr), EXIT_BADINPUT);
    if (!strstr(verr.msg, "layout.global_batch")) fail_msg("%s", verr.msg);
    assert_non_null(strstr(verr.msg, "at least 2*pp"));
    s.layout.schedule = SCHED_1F1B;                         /* 15/35 = 43% bubble */
    assert_int_equal(scn_schedule_check("seed", scn_schedule_run(&s.layout), s.layout.pp, scn_micro_batches(&s),
                                        s.layout.global_batch, &verr), 0);
    p = eval(&s);
    assert_true(has_warning(&p, "bubble 43%"));
}

/* DeepSeek-V3 whole on one 8-GPU node: the optimizer shard is 12 x (16.4B/8 + 81.7B) ~ 1 TB. */
static void huge_model_does_not_fit(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.cluster.nodes = 1;
    s.layout = (layout_cfg){.tp = 1, .pp = 1, .ep = 8, .dp = 1, .zero = 1, .micro_batch = 1,
                            .global_batch = 64, .schedule = SCHED_1F1B, .vpp = 1};
    plan_result p = eval(&s);
    assert_false(p.fits_memory);
    assert_string_equal(p.overflow, "optimizer");
    assert_true(p.memory_GiB.optimizer > 900);
    scenario ok = tiny_dense(1, 2, 4);
    plan_result q = eval(&ok);
    assert_true(q.fits_memory);
    assert_string_equal(q.overflow, "");
}

/* DualPipe exposes only the communication beyond compute; 1F1B exposes all of it. With the NIC cut
 * to 50 Gb/s the all-to-all exceeds compute and DualPipe says so. */
static void dualpipe_exposes_only_the_excess(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result dual = eval(&s);
    s.layout.schedule = SCHED_1F1B;
    plan_result one = eval(&s);
    assert_true(one.exposed_comm_s > dual.exposed_comm_s);
    assert_false(has_warning(&dual, "DualPipe hides only"));
    s = seed_scenario();
    s.cluster.nic_gbps = 50;
    plan_result slow = eval(&s);
    assert_true(has_warning(&slow, "DualPipe hides only"));
    assert_true(slow.step_time_s > dual.step_time_s);
}

static void step_metrics_consistent(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result p = eval(&s);
    double tokens = 15360.0 * 4096;
    assert_within(p.tokens_per_s_per_gpu, tokens / p.step_time_s / 4096, 1e-12);
    assert_within(p.mfu, p.tokens_per_s_per_gpu * p.flops_per_token / 989e12, 1e-12);
    assert_within(p.step_time_s, p.compute_s + p.exposed_comm_s + p.bubble_s + p.optimizer_s, 1e-12);
    assert_true(p.mfu > 0 && p.mfu < 2.0);   /* FP8 GEMMs may exceed the BF16 peak in principle */
}

static void bad_layout_is_an_error(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.layout.dp = 3;
    plan_result p;
    moe_error err = {0};
    assert_int_equal(plan_evaluate(&s, &p, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "tp*pp*ep*dp = 3072"));
    s = seed_scenario();
    s.layout.global_batch = 100;   /* fewer sequences than attention-DP ranks */
    assert_int_equal(plan_evaluate(&s, &p, &err), EXIT_BADINPUT);
}

static void json_has_contract_keys(void **state) {
    (void)state;
    scenario s = seed_scenario();
    plan_result p = eval(&s);
    cJSON *o = cJSON_CreateObject();
    plan_result_to_json(&p, o);
    const char *keys[] = {"params_total", "params_active", "flops_per_token", "flops_per_token_6n",
                          "total_flops", "pure_compute_days", "memory_GiB", "fits_memory", "warnings",
                          "step_time_s", "bubble_fraction", "mtbf_cluster_h", "young_interval_min",
                          "daly_interval_min", "daly_first_order_min", "a2a_bytes_per_token_layer",
                          "mfu", "tokens_per_s_per_gpu", "tflops_per_gpu", "compute_s",
                          "exposed_comm_s", "bubble_s", "optimizer_s", "overflow", "params_breakdown"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!cJSON_HasObjectItem(o, keys[i])) fail_msg("missing key %s", keys[i]);
    const char *mem[] = {"params", "grads", "optimizer", "activations", "total"};
    cJSON *m = cJSON_GetObjectItem(o, "memory_GiB");
    for (size_t i = 0; i < 5; i++) assert_true(cJSON_IsNumber(cJSON_GetObjectItem(m, mem[i])));
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(o, "fits_memory")));
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(o, "warnings")));
    cJSON_Delete(o);
}


/* ---- one cost model for plan and step ------------------------------------------------------------
 * A dense GQA/SwiGLU model on one GPU, 1F1B, TP = PP = EP = DP = 1: no communication at all, so the
 * plan's compute per micro-batch must be exactly the kernels one micro-batch runs, each priced with
 * costmodel.h on its shape. The kernel list is written out here from the model's dimensions
 * (h 1024, 8 query heads and 2 kv heads of 128, SwiGLU inner 4096, vocab 32000, 2048 tokens):
 *   per layer  qkv  [2048 x 1024] . [1024 x (8 + 2 + 2) x 128 = 1536]
 *              o    [2048 x 1024] . [1024 x 1024]
 *              gate+up [2048 x 1024] . [1024 x 8192],  down [2048 x 4096] . [4096 x 1024]
 *              attention core 2 x (2048/2 keys) x 8 heads x (128 + 128) = 4,194,304 FLOPs per token
 *              2 residual+RMSNorm passes of 5 x 1024 x 2 B per token (backward twice the bytes)
 *              SwiGLU: read 2 x 4096, write 4096 BF16 (backward: read 3, write 2)
 *   once       embedding gather 4 x 2048 x 1024 B (forward and backward), final RMSNorm 2 x 1024 x 2 B
 *              per token (backward twice), head [2048 x 1024] . [1024 x 32000] in BF16,
 *              cross-entropy 6 B per logit each way
 * Backward of a GEMM C = A B: dA (M x K, inner N) + dB (K x N, inner M). */
typedef struct { double m, n, k; } gemm_shape;

static double gemm_fwd_bwd_s(const costmodel *cm, gemm_shape g, dtype_kind dt) {
    return costmodel_gemm_s(cm, g.m, g.n, g.k, dt)                              /* forward */
         + costmodel_gemm_s(cm, g.m, g.k, g.n, dt)                              /* input gradient */
         + costmodel_gemm_s(cm, g.k, g.n, g.m, dt);                             /* weight gradient */
}

static scenario small_dense_one_gpu(void) {
    scenario s = seed_scenario();
    s.model = (model_cfg){.layers = 4, .dense_layers = 4, .hidden = 1024, .heads = 8, .head_dim = 128,
                          .kv_heads = 2, .v_head_dim = 128, .ffn_hidden = 4096, .ffn_act = FFN_SWIGLU,
                          .vocab = 32000, .seq_len = 2048, .attention = ATTN_GQA};
    s.cluster.nodes = 1;
    s.cluster.gpus_per_node = 1;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.layout = (layout_cfg){.tp = 1, .pp = 1, .ep = 1, .dp = 1, .zero = 1, .micro_batch = 1,
                            .global_batch = 8, .schedule = SCHED_1F1B, .vpp = 1,
                            .recompute = RECOMPUTE_NONE};
    return s;
}

static void plan_compute_is_the_kernels_priced_by_the_cost_model(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0};
    if (costmodel_load("calibration/models/h800-published.json", &cm, &err)) fail_msg("%s", err.msg);
    scenario s = small_dense_one_gpu();
    plan_result p;
    assert_int_equal(plan_evaluate_with_costmodel(&s, &cm, &p, &err), 0);

    const double T = 2048, h = 1024, f = 4096, V = 32000;
    const gemm_shape layer[] = {{T, 1536, h}, {T, h, 1024}, {T, 2 * f, h}, {T, h, f}};
    const gemm_shape head = {T, V, h};
    double want = 0, gemm_flops = 0;
    for (int l = 0; l < 4; l++) {
        for (int g = 0; g < 4; g++) {
            want += gemm_fwd_bwd_s(&cm, layer[g], DT_BF16);
            gemm_flops += 2 * layer[g].m * layer[g].n * layer[g].k;
        }
        /* one sequence of 2048 tokens, 8 heads of 128, causal */
        const cm_attn_shape core = {.batch = 1, .heads = 8, .seq_q = 2048, .seq_k = 2048, .d_qk = 128, .d_v = 128, .causal = 1};
        want += costmodel_attention_core_s(&cm, &core, 0) + costmodel_attention_core_s(&cm, &core, 1);
        want += 2 * (costmodel_memory_bound_s(&cm, T * 5 * h * 2) + costmodel_memory_bound_s(&cm, T * 10 * h * 2));
        want += costmodel_kernel_s(&cm, "swiglu", T * f * 3 * 2) + costmodel_kernel_s(&cm, "swiglu", T * f * 5 * 2);
    }
    want += gemm_fwd_bwd_s(&cm, head, DT_BF16);
    gemm_flops += 2 * head.m * head.n * head.k;
    want += 2 * costmodel_memory_bound_s(&cm, 4 * T * h);                                  /* embedding */
    want += costmodel_memory_bound_s(&cm, T * 2 * h * 2) + costmodel_memory_bound_s(&cm, T * 4 * h * 2);
    want += 2 * costmodel_memory_bound_s(&cm, T * V * 6);                                  /* loss */

    /* the listed shapes are the model's matmul FLOPs (model.h counts them independently) */
    model_counts mc;
    model_count(&s.model, &mc);
    assert_within(gemm_flops, T * (mc.fwd_total - 4 * mc.fwd_attn_core), 1e-12);

    assert_within(p.compute_s / 8, want, 1e-12);            /* m = 8 micro-batches */
    assert_within(p.fwd_mb_s + p.bwd_mb_s, want, 1e-12);
    assert_true(p.bubble_s == 0 && p.exposed_comm_s == 0);
    assert_string_equal(p.costmodel_source, "h800-published");
}

/* plan_evaluate takes the model the scenario names (cached by path): the same numbers as an explicit
 * load; the built-in roofline (no calibration) differs (GEMM eff_max 0.80 vs the file's 0.82); a
 * missing file is an input error naming `calibration`. */
static void plan_evaluate_uses_the_scenario_costmodel(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0};
    scenario s = small_dense_one_gpu();
    snprintf(s.calibration, sizeof s.calibration, "calibration/models/h800-published.json");
    /* the model as the scenario takes it: the file, and the joint fit's sustained clock of its GPU kind */
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_string_equal(cm.source, "h800-published");
    plan_result direct, cached, builtin;
    assert_int_equal(plan_evaluate_with_costmodel(&s, &cm, &direct, &err), 0);
    cached = eval(&s);
    assert_true(cached.step_time_s == direct.step_time_s);
    scenario b = s;
    b.calibration[0] = '\0';
    builtin = eval(&b);
    assert_string_equal(builtin.costmodel_source, "built-in roofline");
    assert_true(builtin.compute_s > cached.compute_s);
    assert_true(eval(&s).step_time_s == direct.step_time_s);   /* switching back reloads */
    snprintf(s.calibration, sizeof s.calibration, "calibration/models/no-such-model.json");
    assert_int_equal(plan_evaluate(&s, &cached, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "calibration"));
}

/* ---- DeepSeek-V3's activation practice on the seed layout ---------------------------------------
 * Per token of one MoE layer, FP8 compute and dispatch, x = 1 + 4/128 B (FP8 + an FP32 scale per
 * 1x128 tile), counted tensor by tensor (memory.h); selective = DeepSeek-V3 §3.2.3 + §3.3.2:
 *   attention: layer input 2h = 14336; attention output (E5M6, in 16 bit) 2 x 128 x 128 = 32768;
 *     logsumexp 4 x 128 = 512; latents (q 1536 + kv 512 + rope key 64) BF16 = 4224       -> 51,840
 *   FFN side: residual 2h = 14336; router scores FP32 4 x 256 = 1024; shared expert's SwiGLU inputs
 *     2 x 2048 x = 4224; top-8 routed copies on the experts' ranks, each the dispatched input
 *     7168 x + SwiGLU inputs 2 x 2048 x + FP32 routing weight 4 = 11,620 -> 92,960        -> 112,544
 *   = 164,384 B. Without recompute add the RMSNorm outputs (2 x 7168 x), the latent-norm outputs
 *   (2048 x), q/k/v BF16 (2 x (2 x 128 x 192 + 128 x 128) = 131,072) and the SwiGLU outputs
 *   (9 x 2048 x): 166,976 more = 331,360 B.
 * Most loaded rank: rank 1 (stages 1 and 14, 4 MoE layers each), PP + 1 = 17 micro-batches of 4096
 * tokens: 17 x 4 x 4096 x 164,384 = 45,785,546,752 B = 42.64 GiB; + weights 3.05, BF16 grads 6.10,
 * optimizer (12 B) 2.01 = 53.8 GiB <= 80 x 0.92. */
static void seed_fits_with_deepseek_recompute(void **state) {
    (void)state;
    scenario s = seed_scenario();
    s.layout.recompute = RECOMPUTE_SELECTIVE;
    plan_result p = eval(&s);
    assert_true(p.act_bytes_per_token_layer == 164384.0);
    assert_int_equal(p.memory_rank, 1);
    assert_true(p.inflight_microbatches == 17.0);
    assert_true(p.memory_GiB.activations * GiB == 45785546752.0);
    assert_true(p.fits_memory);
    assert_true(p.memory_GiB.total < 80 * 0.92);
    assert_true(p.optimizer_bytes_per_param == 12.0 && p.grad_bytes_per_param == 2.0 &&
                p.weight_bytes_per_param == 1.0);
    assert_true(p.recompute_mb_s > 0 && p.recompute_mb_s < 0.1 * p.bwd_mb_s);

    s.layout.recompute = RECOMPUTE_NONE;
    plan_result none = eval(&s);
    assert_true(none.act_bytes_per_token_layer == 331360.0);
    assert_false(none.fits_memory);
    assert_string_equal(none.overflow, "activations");
    assert_true(none.recompute_mb_s == 0 && none.step_time_s < p.step_time_s);

    /* DeepSeek-V3 §3.3.3 keeps FP32 gradients and an FP32 master with BF16 moments (4 + 2 + 2 B):
     * grads double, the optimizer shard shrinks to 8/12; still fits (59.2 GiB). */
    s.layout.recompute = RECOMPUTE_SELECTIVE;
    model_counts mc;
    act_profile ap;
    model_count(&s.model, &mc);
    memory_activation_profile(&s.model, &s.precision, &ap);
    mem_state_bytes dsv3 = {.weight = 1, .grad = 4, .master = 4, .moments = 4};
    mem_ledgers ml;
    memory_rank_ledgers_with(&s, &mc, &ap, &dsv3, scn_micro_batches(&s), 1, &ml);
    assert_within(ml.grads / GiB, 2.0 * p.memory_GiB.grads, 1e-12);
    assert_within(ml.optimizer / GiB, 8.0 / 12.0 * p.memory_GiB.optimizer, 1e-12);
    assert_true(ml.activations == 45785546752.0);
    const char *overflow;
    assert_true(memory_fits(&ml, 80, MEMORY_RESERVE_DEFAULT, &overflow));
    assert_true(ml.total / GiB > 59.0 && ml.total / GiB < 59.5);
}

/* A 16-bit master brings 16-bit moments: 2 + 2 + 2 = 6 B of optimizer state per parameter. */
static void optimizer_bytes_follow_master(void **state) {
    (void)state;
    scenario s = tiny_dense(1, 2, 4);
    s.precision.master = DT_BF16;
    plan_result p = eval(&s);
    assert_true(p.optimizer_bytes_per_param == 6.0);
    assert_true(p.memory_GiB.optimizer * GiB == 6.0 * 1696 / 4);
}

/* Tensor parallelism is not free: GPT-3 on TP8 x PP4, 1F1B. The slowest stage is the last (24 layers
 * and the head); per micro-batch it sends one gradient message to stage 2 over RDMA (neighbouring
 * stages are ep x tp = 8 GPUs apart in the rank numbering, sim/plan/rank_numbering.h: the boundary
 * crosses nodes) of 2048/8 tokens x 12288 x 2 B, and runs, per layer, 8 ring collectives over NVLink
 * (all-gather + reduce-scatter around attention and FFN, forward and backward) of 7/8 x 2048 x 12288
 * x 2 B each — all priced with the built-in roofline's links. Without TP the 4 stages of a pipeline
 * are GPUs 0-3 of one node, so the message goes over NVLink. */
static void tp_collectives_are_priced(void **state) {
    (void)state;
    scenario s = gpt3_scenario(8, 4, 128, 8, SCHED_1F1B, 1);
    costmodel cm = costmodel_from_cluster(&s.cluster);
    plan_result p = eval(&s);
    double ring = 7.0 / 8.0 * 2048 * 12288 * 2;
    double want = 24 * 8 * costmodel_link_s(&cm, CM_LINK_NVLINK, ring) +
                  costmodel_link_s(&cm, CM_LINK_RDMA, 2048.0 / 8 * 12288 * 2);
    assert_within(p.comm_mb_s, want, 1e-12);
    assert_true(p.exposed_comm_s >= 8 * want);   /* 1F1B exposes it, m = 8 (plus the DP sync) */
    s.layout.tp = 1; s.layout.dp = 1024;   /* no TP: only the (now whole-sequence) P2P message */
    assert_within(eval(&s).comm_mb_s, costmodel_link_s(&cm, CM_LINK_NVLINK, 2048.0 * 12288 * 2), 1e-12);
}

/* The price table's quantization (plan_compute.h) by hand: Llama 3 8B (hidden 4096, SwiGLU 14336) on
 * one 8-GPU H800 node, DP8, 64 sequences of 8192 tokens: 8 micro-batches per step. The H800 spec model
 * casts at 2680 GB/s (80% of 3.35 TB/s) with 2 us launches and has no amax fit (3.03 / 3.92 of a
 * cast). FP8 current scaling on Hopper quantizes a tensor of E elements in 4 kernels: 2 us each, an
 * amax read of 2E bytes, a cast-transpose of 2E read + 2E written. The dense FFN's forward quantizes
 * its two GEMM inputs (T x h, T x f) and 1/8 of its weights (h x 2f and f x h, once per step); its
 * input-gradient kernel the two output gradients (T x 2f, T x h); its weight-gradient kernel nothing.
 * BF16 quantizes nothing; quantization is part of, never beside, a kernel's time; full recompute
 * re-runs the forward's quantization but not the weights' per-step share. */
static void quantization_in_price_table(void **state) {
    (void)state;
    scenario s;
    memset(&s, 0, sizeof s);
    assert_int_equal(preset_model("llama3-8b", &s.model), 0);
    assert_int_equal(preset_cluster("h800-8rail", &s.cluster), 0);
    s.cluster.nodes = 1;
    s.layout = (layout_cfg){.tp = 1, .pp = 1, .ep = 1, .dp = 8, .zero = 1, .micro_batch = 1, .global_batch = 64,
                            .schedule = SCHED_1F1B, .vpp = 1, .recompute = RECOMPUTE_FULL, .cp = 1};
    s.precision = (precision_cfg){.compute = DT_FP8_CS, .dispatch = DT_BF16, .combine = DT_BF16, .master = DT_FP32};
    costmodel cm;
    moe_error err = {0};
    assert_int_equal(costmodel_load("calibration/models/h800-spec.json", &cm, &err), 0);
    model_counts mc;
    model_count(&s.model, &mc);
    const double T = 8192, h = 4096, f = 14336, L = 2e-6, cast = 2680e9, amax = cast * 3.03 / 3.92;
#define Q(E) (4 * L + 2 * (E) / amax + 4 * (E) / cast)
    kernel_price_table tab;
    compute_price_table(&s, &mc, &cm, T, &tab);
    const double *q = tab.quant_s[LAYER_DENSE];
    assert_within(q[K_DENSE_FFN_FWD], Q(T * h) + Q(T * f) + (Q(h * 2 * f) + Q(f * h)) / 8, 1e-12);
    assert_within(q[K_DENSE_FFN_BWD_INPUT], Q(T * 2 * f) + Q(T * h), 1e-12);
    assert_true(q[K_DENSE_FFN_BWD_WEIGHT] == 0.0);
    double fwd_q = 0, weights = 0;
    for (int k = 0; k < K_NKINDS; k++) {
        assert_true(tab.quant_s[LAYER_DENSE][k] <= tab.s[LAYER_DENSE][k]);
        if (compute_kernel_phase((kernel_kind)k) == PHASE_F && k != K_EMBED_FWD && k != K_HEAD_LOSS_FWD &&
            k != K_MTP_PROJ_FWD)
            fwd_q += q[k];
    }
    /* the weights: qkv (h x (32 + 8 + 8) x 128), o (32 x 128 x h), gate+up, down */
    double qkv = h * 48 * 128, o = 32 * 128 * h;
    weights = (Q(qkv) + Q(o) + Q(h * 2 * f) + Q(f * h)) / 8;
    assert_within(tab.recompute_quant_s[LAYER_DENSE], fwd_q - weights, 1e-12);
#undef Q
    s.precision.compute = DT_BF16;
    compute_price_table(&s, &mc, &cm, T, &tab);
    for (int l = 0; l < LAYER_NKINDS; l++)
        for (int k = 0; k < K_NKINDS; k++) assert_true(tab.quant_s[l][k] == 0.0);
    assert_true(tab.recompute_quant_s[LAYER_DENSE] == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_budget_chain_with_37e9),
        cmocka_unit_test(quantization_in_price_table),
        cmocka_unit_test(seed_plan_chain),
        cmocka_unit_test(seed_reliability),
        cmocka_unit_test(checkpoint_auto_state),
        cmocka_unit_test(seed_a2a_volume),
        cmocka_unit_test(bubble_closed_forms),
        cmocka_unit_test(memory_ledgers_by_hand),
        cmocka_unit_test(memory_moe_expert_dp),
        cmocka_unit_test(zero3_with_pp_warns),
        cmocka_unit_test(layout_warnings),
        cmocka_unit_test(huge_model_does_not_fit),
        cmocka_unit_test(dualpipe_exposes_only_the_excess),
        cmocka_unit_test(step_metrics_consistent),
        cmocka_unit_test(bad_layout_is_an_error),
        cmocka_unit_test(json_has_contract_keys),
        cmocka_unit_test(plan_compute_is_the_kernels_priced_by_the_cost_model),
        cmocka_unit_test(plan_evaluate_uses_the_scenario_costmodel),
        cmocka_unit_test(seed_fits_with_deepseek_recompute),
        cmocka_unit_test(optimizer_bytes_follow_master),
        cmocka_unit_test(tp_collectives_are_priced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
