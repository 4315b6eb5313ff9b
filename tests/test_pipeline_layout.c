/* test_pipeline_layout.c — pipeline layouts (sim/scenario/pipeline_layout.h), Megatron's
 * first/last-rank counts, the MTP module, and what each stage then holds and computes.
 *
 * Truths: the stage tables of Megatron-LM's docs/api-guide/pipeline_parallel_layout.md
 * ("Et*3|(tt|)*29,m|L" on PP16 x VPP2), the DeepSeek-V3 ("Et|(tt|)*30mL", PP8 x VP4) and
 * Llama 3 405B ("E|(t|)*126L", PP16 x VP8) layouts read by eye, Megatron's rule for
 * --decoder-first/last-pipeline-num-layers worked by hand, and a model small enough to count every
 * stage's parameters and FLOPs by hand (below). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/plan/plan.h"
#include "sim/program/program.h"
#include "sim/scenario/pipeline_layout.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_defaults.h"

static scenario deepseek(int pp, int vpp, const char *layout) {
    scenario s;
    scenario_defaults(&s);
    s.model.mtp_layers = 1;
    s.layout.pp = pp;
    s.layout.vpp = vpp;
    s.layout.schedule = vpp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
    snprintf(s.layout.pipeline_layout, sizeof s.layout.pipeline_layout, "%s", layout);
    return s;
}

static void build_ok(const scenario *s, pl_layout *pl) {
    moe_error err = {0};
    if (pipeline_layout_build(s, pl, &err)) fail_msg("%s", err.msg);
}

static void expect_stage(const pl_layout *pl, int k, int lb, int le, int mtp, int embed, int loss) {
    const pl_stage *st = &pl->st[k];
    if (st->layer_begin != lb || st->layer_end != le || st->mtp_end - st->mtp_begin != mtp ||
        st->embed != embed || st->loss != loss)
        fail_msg("stage %d: blocks [%d,%d) mtp %d embed %d loss %d; want [%d,%d) %d %d %d", k, st->layer_begin,
                 st->layer_end, st->mtp_end - st->mtp_begin, st->embed, st->loss, lb, le, mtp, embed, loss);
}

/* "Et|(tt|)*30mL": stage 0 = embedding + block 0, stages 1..30 = blocks 2k-1 and 2k, stage 31 = the
 * MTP module and the loss. Megatron's doc example "Et*3|(tt|)*29,m|L" on 16 x 2: stage 0 = E + 3
 * blocks, stages 1..29 two blocks each, stage 30 the MTP module alone (pp rank 14, vpp rank 1),
 * stage 31 the loss alone. Llama 3 405B "E|(t|)*126L": the first and last stages hold no block. */
static void parses_published_layouts(void **state) {
    (void)state;
    pl_layout pl;
    scenario s = deepseek(8, 4, "Et|(tt|)*30mL");
    build_ok(&s, &pl);
    assert_int_equal(pl.n, 32);
    expect_stage(&pl, 0, 0, 1, 0, 1, 0);
    for (int k = 1; k <= 30; k++) expect_stage(&pl, k, 2 * k - 1, 2 * k + 1, 0, 0, 0);
    expect_stage(&pl, 31, 61, 61, 1, 0, 1);
    pipeline_layout_free(&pl);

    s = deepseek(16, 2, "Et*3|(tt|)*29,m|L");
    build_ok(&s, &pl);
    assert_int_equal(pl.n, 32);
    expect_stage(&pl, 0, 0, 3, 0, 1, 0);
    expect_stage(&pl, 29, 59, 61, 0, 0, 0);   /* stage k: blocks 3 + 2(k-1), 3 + 2k - 1 */
    expect_stage(&pl, 30, 61, 61, 1, 0, 0);
    expect_stage(&pl, 31, 61, 61, 0, 0, 1);
    pipeline_layout_free(&pl);

    scenario l;
    scenario_defaults(&l);
    assert_int_equal(preset_model("llama3-405b", &l.model), 0);
    l.layout.tp = 8; l.layout.pp = 16; l.layout.ep = 1; l.layout.dp = 32;
    l.layout.schedule = SCHED_INTERLEAVED; l.layout.vpp = 8;
    snprintf(l.layout.pipeline_layout, sizeof l.layout.pipeline_layout, "E|(t|)*126L");
    build_ok(&l, &pl);
    assert_int_equal(pl.n, 128);
    expect_stage(&pl, 0, 0, 0, 0, 1, 0);
    expect_stage(&pl, 1, 0, 1, 0, 0, 0);
    expect_stage(&pl, 126, 125, 126, 0, 0, 0);
    expect_stage(&pl, 127, 126, 126, 0, 0, 1);
    pipeline_layout_free(&pl);
}

/* Megatron's first/last-rank counts: 10 blocks on PP4 with 1 on the first rank and 3 on the last
 * leave (10 - 1 - 3) / 2 = 3 per middle rank: [0,1) [1,4) [4,7) [7,10). With VPP2, 12 blocks,
 * first 2 and last 2: middle ranks (12 - 4) / 2 = 4, each rank's blocks halved over its chunks:
 * model stages 0..7 on ranks 0,1,2,3,0,1,2,3 hold 1,2,2,1,1,2,2,1 blocks. Without either: the even
 * split. The MTP modules go to the last model stage. */
static void first_last_stage_counts(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.model.layers = 10; s.model.dense_layers = 1; s.model.mtp_layers = 1;
    s.layout.pp = 4; s.layout.schedule = SCHED_1F1B;
    s.layout.first_stage_layers = 1; s.layout.last_stage_layers = 3;
    pl_layout pl;
    build_ok(&s, &pl);
    int want[][2] = {{0, 1}, {1, 4}, {4, 7}, {7, 10}};
    for (int k = 0; k < 4; k++) expect_stage(&pl, k, want[k][0], want[k][1], k == 3, k == 0, k == 3);
    pipeline_layout_free(&pl);

    s.model.layers = 12; s.layout.vpp = 2; s.layout.schedule = SCHED_INTERLEAVED;
    s.layout.first_stage_layers = 2; s.layout.last_stage_layers = 2;
    build_ok(&s, &pl);
    int sizes[] = {1, 2, 2, 1, 1, 2, 2, 1}, at = 0;
    for (int k = 0; k < 8; k++) {
        expect_stage(&pl, k, at, at + sizes[k], k == 7, k == 0, k == 7);
        at += sizes[k];
    }
    pipeline_layout_free(&pl);
}

/* What each pipeline rank holds under VP4 "Et|(tt|)*30mL": rank 0 has model stages 0, 8, 16, 24
 * (block 0 dense, blocks 15-16, 31-32, 47-48 MoE, the embedding), rank 7 stages 7, 15, 23, 31
 * (blocks 13-14, 29-30, 45-46 and the MTP module and the loss). */
static void census_of_interleaved_ranks(void **state) {
    (void)state;
    scenario s = deepseek(8, 4, "Et|(tt|)*30mL");
    stage_census cz[8];
    moe_error err = {0};
    assert_int_equal(pipeline_census(&s, cz, &err), 0);
    assert_int_equal(cz[0].n_dense, 1);
    assert_int_equal(cz[0].n_moe, 6);
    assert_true(cz[0].embed && !cz[0].loss && cz[0].mtp == 0);
    assert_int_equal(cz[7].n_dense, 0);
    assert_int_equal(cz[7].n_moe, 6);
    assert_true(!cz[7].embed && cz[7].loss && cz[7].mtp == 1);
    assert_int_equal(cz[1].n_dense, 2);   /* blocks 1, 2 dense (first_k_dense 3), 17-18, 33-34, 49-50 */
    assert_int_equal(cz[1].n_moe, 6);
}

/* A model counted by hand: 4 dense blocks, h = 8, 2 heads of 4 (MHA), GeLU FFN 32, vocabulary 16,
 * untied, s = 4, one MTP module; layout "Et|tt|t|mL" on PP4 (1F1B, TP1).
 *   block: attention 4 x 8 x 8 = 256, FFN 2 x 8 x 32 = 512, norms 16 -> 784
 *   embedding 128, head 128, final norm 8; MTP: block 784 + projection 2 x 8 x 8 = 128 + 3 norms 24
 *   = 936, and the MTP stage's own embedding copy 128
 *   stage params: 0: 128 + 784 = 912; 1: 1568; 2: 784; 3: 936 + 128 + 8 + 128 = 1200
 * Forward FLOPs per token: block 2 x 768 + core 2 x (s/2 = 2 keys) x 2 heads x 4 x 2 = 64 -> 1600;
 *   head 2 x 8 x 16 = 256; MTP: projection 2 x 128 = 256 + block 1600 + its own head 256 = 2112;
 *   model: 4 x 1600 + 256 + 2112 = 8768 per token (x 3 with the backward).
 *   stage FLOPs per token (x 3): 0: 1600; 1: 3200; 2: 1600; 3: 256 + 1600 + 2 x 256 = 2368. */
static scenario tiny_mtp(void) {
    scenario s;
    scenario_defaults(&s);
    s.model = (model_cfg){.layers = 4, .dense_layers = 4, .hidden = 8, .heads = 2, .head_dim = 4,
                          .kv_heads = 2, .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU,
                          .experts = 0, .vocab = 16, .seq_len = 4, .attention = ATTN_MHA, .mtp_layers = 1};
    s.cluster.nodes = 1; s.cluster.gpus_per_node = 4; s.cluster.rails = 4;
    s.layout = (layout_cfg){.tp = 1, .pp = 4, .ep = 1, .dp = 1, .zero = 1, .micro_batch = 1,
                            .global_batch = 8, .schedule = SCHED_1F1B, .vpp = 1};
    snprintf(s.layout.pipeline_layout, sizeof s.layout.pipeline_layout, "Et|tt|t|mL");
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.calibration[0] = '\0';
    return s;
}

static void per_stage_params_and_flops_by_hand(void **state) {
    (void)state;
    scenario s = tiny_mtp();
    moe_error err = {0};
    if (scenario_validate(&s, &err)) fail_msg("%s", err.msg);
    model_counts mc;
    model_count(&s.model, &mc);
    assert_true(mc.params_mtp == 936.0);
    assert_true(mc.fwd_mtp == 2112.0);
    assert_true(mc.fwd_total == 8768.0);
    assert_true(mc.flops_per_token == 3.0 * 8768);
    assert_true(mc.params_total == 4 * 784.0 + 128 + 128 + 8);   /* the MTP module apart */

    stage_census cz[4];
    assert_int_equal(pipeline_census(&s, cz, &err), 0);
    double want_params[4] = {912, 1568, 784, 1200};
    for (int k = 0; k < 4; k++) {
        stage_params sp;
        memory_stage_params(&mc, &s.model, &s.layout, &cz[k], &sp);
        if (sp.nonexpert != want_params[k] || sp.expert != 0)
            fail_msg("stage %d holds %g parameters, want %g", k, sp.nonexpert, want_params[k]);
    }

    program *p = NULL;
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    double want_flops[4] = {1600, 3200, 1600, 2368};
    double T = 4, m = p->micro_batches;
    assert_true(m == 8);
    for (int st = 0; st < 4; st++) {
        double fl = 0;
        for (int i = 0; i < p->stage_n_ops[st]; i++) {
            const program_op *o = &p->stage_ops[st][i];
            if (o->kind == OP_COMPUTE && o->kernel != K_OPTIMIZER) fl += o->flops;
        }
        if (fl != m * T * 3 * want_flops[st]) fail_msg("stage %d: %g FLOPs, want %g", st, fl, m * T * 3 * want_flops[st]);
    }
    assert_true(p->model_flops_per_step == m * T * 3 * 8768);
    /* the message after the MTP stage would carry two hidden states; here every boundary carries one */
    for (int i = 0; i < p->stage_n_ops[2]; i++) {
        const program_op *o = &p->stage_ops[2][i];
        if (o->kind == OP_SEND && o->phase == PHASE_F) assert_true(o->bytes == (float)(T * 2 * 8));
    }
    program_free(p);

    plan_result pr;
    assert_int_equal(plan_evaluate(&s, &pr, &err), 0);
    assert_true(pr.params_mtp == 936.0);
    assert_true(pr.flops_per_token == 3.0 * 8768);
}

/* The MTP stage before the loss stage ("...|m|L"): the message from it carries the main hidden state
 * and the module's, 2 x T x h x 2 B. */
static void mtp_message_carries_two_hidden_states(void **state) {
    (void)state;
    scenario s = tiny_mtp();
    snprintf(s.layout.pipeline_layout, sizeof s.layout.pipeline_layout, "Ett|tt|m|L");
    moe_error err = {0};
    program *p = NULL;
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    int sends = 0;
    for (int i = 0; i < p->stage_n_ops[2]; i++) {
        const program_op *o = &p->stage_ops[2][i];
        if (o->kind == OP_SEND && o->phase == PHASE_F) { assert_true(o->bytes == (float)(2 * 4 * 2 * 8)); sends++; }
    }
    assert_int_equal(sends, p->micro_batches);
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_published_layouts),
        cmocka_unit_test(first_last_stage_counts),
        cmocka_unit_test(census_of_interleaved_ranks),
        cmocka_unit_test(per_stage_params_and_flops_by_hand),
        cmocka_unit_test(mtp_message_carries_two_hidden_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
