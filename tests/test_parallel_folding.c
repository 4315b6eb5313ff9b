/* test_parallel_folding.c — expert tensor parallelism apart from TP (Megatron's MoE parallel
 * folding) and context parallelism, in the step program and the plan, against counts by hand.
 *
 * Truths: the all-to-all bytes of a forced-balance routing (every source rank sends every expert
 * exactly its share, routing.h) counted by hand for ETP = TP and ETP = 1; the ring attention's
 * key/value chunk sizes and counts by hand; the model's FLOP count (model.h) for the program under
 * CP; activation memory linear in the tokens of a CP rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/step_exec.h"
#include "sim/plan/model.h"
#include "sim/plan/plan.h"
#include "sim/program/program.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_defaults.h"
#include "tests/step_fixtures.h"

/* One node of 8 GPUs, one pipeline stage. */
static scenario one_node(void) {
    scenario s;
    scenario_defaults(&s);
    s.cluster.nodes = 1;
    s.cluster.gpus_per_node = 8;
    s.cluster.rails = 8;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.routing.distribution = ROUTE_BALANCED;
    s.routing.capacity_factor = 0;
    s.routing.drop = 0;
    s.routing.node_limit = 0;
    s.layout.pp = 1;
    s.layout.schedule = SCHED_1F1B;
    s.layout.vpp = 1;
    return s;
}

static program *build(const scenario *s) {
    moe_error err = {0};
    if (scenario_validate(s, &err)) fail_msg("%s", err.msg);
    program *p = NULL;
    if (program_build(s, &p, &err)) fail_msg("%s", err.msg);
    return p;
}

/* An MoE model with top-1 (no dedup: every pair is one token sent) on TP2 x EP4: hidden 64, 8 experts,
 * a micro-batch of 128 tokens per attention rank. With ETP = TP = 2 (dp 1) every rank routes the
 * micro-batch its TP pair gathered, R = 128 tokens; with ETP = 1 (dp 2, Megatron's folding) each rank
 * routes its own sequence-parallel half, R = 64. Forced balance: a rank sends every expert R / 8 pairs,
 * so each other EP rank (2 experts each) R / 4 tokens: off the diagonal, the EP group's forward
 * dispatch carries 4 ranks x 3 x R / 4 tokens x 64 x 2 B = 3 R x 128 B: 49,152 B at ETP 2, 24,576 B
 * at ETP 1; each rank's experts receive R pairs. */
static void etp_all_to_all_bytes_by_hand(void **state) {
    (void)state;
    for (int etp = 2; etp >= 1; etp--) {
        scenario s = one_node();
        s.model = (model_cfg){.layers = 2, .dense_layers = 0, .hidden = 64, .heads = 4, .head_dim = 16,
                              .kv_heads = 4, .v_head_dim = 16, .ffn_act = FFN_SWIGLU, .experts = 8,
                              .shared_experts = 0, .expert_hidden = 64, .top_k = 1, .vocab = 128,
                              .seq_len = 128, .attention = ATTN_GQA};
        s.layout.tp = 2; s.layout.etp = etp; s.layout.ep = 4; s.layout.dp = 8 / (etp * 4);
        s.layout.micro_batch = 1; s.layout.global_batch = 4;
        program *p = build(&s);
        double R = 128.0 * etp / 2;
        assert_int_equal(p->routed_tokens, (int)R);
        assert_int_equal(p->tp, etp);
        assert_int_equal(p->attn_tp, 2);
        for (int d = 0; d < p->n_draws; d++) {
            const a2a_matrix *m = &p->patterns[d * A2A_NKINDS + A2A_DISPATCH_F];
            if (m->total_bytes != 3 * R * 128) fail_msg("etp %d: dispatch %g B, want %g", etp, m->total_bytes, 3 * R * 128);
            for (int e = 0; e < 4; e++) assert_true(p->recv_tokens[d * 4 + e] == R);
        }
        /* attention TP groups pair ranks 2k, 2k+1; the EP group of a rank spans 4 ranks etp apart */
        const program_group *tpg = &p->groups[program_group_of(p, 5, GROUP_TP)];
        assert_int_equal(tpg->n, 2);
        assert_true(tpg->ranks[0] == 4 && tpg->ranks[1] == 5);
        const program_group *epg = &p->groups[program_group_of(p, 0, GROUP_EP)];
        assert_int_equal(epg->n, 4);
        assert_int_equal(epg->ranks[1], etp);
        program_free(p);
    }
}

/* A dense GQA model (4 heads of 16, 2 KV heads) on TP2 x CP2 x attention DP 2, one stage; sequences of
 * 64 tokens, one per micro-batch: each CP rank holds T = 32 tokens. Key/value chunk per TP rank: one
 * KV head x (16 + 16) x 2 B x 32 tokens = 2,048 B. Ring attention with cp = 2: one step per
 * attention, 2,048 B forward, 4,096 B backward (keys and values with their gradients); 2 blocks x 2
 * micro-batches per rank: 8 sends, 24,576 B. The ring neighbour of rank 0 is rank 2 (q = 0 and 2:
 * the same attention TP index 0, CP index 0 and 1). All-gather variant: one all-gather of 2 x 2,048 B
 * per attention pass, and a reduce-scatter of the key/value gradients per backward. */
static scenario cp_dense(cp_comm_kind comm) {
    scenario s = one_node();
    s.model = (model_cfg){.layers = 2, .dense_layers = 2, .hidden = 64, .heads = 4, .head_dim = 16,
                          .kv_heads = 2, .v_head_dim = 16, .ffn_hidden = 128, .ffn_act = FFN_SWIGLU,
                          .experts = 0, .vocab = 128, .seq_len = 64, .attention = ATTN_GQA};
    s.layout.tp = 2; s.layout.cp = 2; s.layout.cp_comm = comm; s.layout.ep = 1; s.layout.dp = 4;
    s.layout.micro_batch = 1; s.layout.global_batch = 4;
    return s;
}

static void cp_ring_bytes_by_hand(void **state) {
    (void)state;
    scenario s = cp_dense(CP_COMM_P2P);
    program *p = build(&s);
    assert_int_equal(p->micro_batches, 2);
    assert_int_equal(p->tokens_per_mb, 32);
    for (int rank = 0; rank < p->n_ranks; rank++) {
        program_op *ops;
        int n = program_materialize(p, rank, &ops), sends = 0, recvs = 0;
        double sent = 0;
        for (int i = 0; i < n; i++) {
            if (ops[i].kind == OP_SEND) {
                sends++; sent += ops[i].bytes;
                assert_true(ops[i].bytes == (ops[i].phase == PHASE_F ? 2048.0f : 4096.0f));
                if (rank == 0) assert_int_equal(ops[i].peer, 2);
            }
            if (ops[i].kind == OP_RECV) { recvs++; if (rank == 0) assert_int_equal(ops[i].peer, 2); }
        }
        assert_int_equal(sends, 8);
        assert_int_equal(recvs, 8);
        assert_true(sent == 24576.0);
        free(ops);
    }
    /* it runs: every SEND finds its RECV */
    fx_comm_costs cc = {0, 1e-4, 0};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 1e-3, .B = 2e-3};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    moe_error err = {0};
    assert_int_equal(step_exec_run(p, &o, &r, &err), 0);
    step_exec_result_free(&r);
    program_free(p);

    s = cp_dense(CP_COMM_ALL_GATHER);
    p = build(&s);
    program_op *ops;
    int n = program_materialize(p, 0, &ops), ag = 0, rs = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == OP_ALL_GATHER && p->groups[ops[i].group].kind == GROUP_CP) { ag++; assert_true(ops[i].bytes == 4096.0f); }
        if (ops[i].kind == OP_REDUCE_SCATTER && p->groups[ops[i].group].kind == GROUP_CP) { rs++; assert_true(ops[i].bytes == 4096.0f); }
    }
    assert_int_equal(ag, 8);   /* forward and backward of 2 blocks x 2 micro-batches */
    assert_int_equal(rs, 4);
    free(ops);
    program_free(p);
}

/* CP splits the attention (and everything else) by tokens: the program's FLOPs still equal the
 * model's count for the step's tokens, and a CP rank's activations are half those of a CP-1 rank with
 * the same micro-batch (one stage: one micro-batch in flight either way). */
static void cp_compute_and_memory_split(void **state) {
    (void)state;
    scenario s = cp_dense(CP_COMM_P2P);
    program *p = build(&s);
    model_counts mc;
    model_count(&s.model, &mc);
    double model = mc.flops_per_token * (double)s.layout.global_batch * s.model.seq_len;
    assert_true(fabs(p->model_flops_per_step - model) / model < 1e-6);
    program_free(p);

    moe_error err = {0};
    plan_result with_cp, without;
    assert_int_equal(plan_evaluate(&s, &with_cp, &err), 0);
    scenario n = s;
    n.layout.cp = 1;
    n.layout.global_batch = 8;     /* attention DP 4 now: 2 micro-batches per pipeline as before */
    assert_int_equal(plan_evaluate(&n, &without, &err), 0);
    assert_true(fabs(with_cp.memory_GiB.activations / without.memory_GiB.activations - 0.5) < 1e-12);
    assert_true(with_cp.memory_GiB.params == without.memory_GiB.params);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(etp_all_to_all_bytes_by_hand),
        cmocka_unit_test(cp_ring_bytes_by_hand),
        cmocka_unit_test(cp_compute_and_memory_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
