/* test_zero_step.c — ZeRO-2/3 in the step program (sim/plan/zero_sync.h, sim/program/program.c):
 * the data-parallel gathers and reduce-scatters it issues per unit and micro-batch, counted by hand
 * and against the plan's accounting; ZeRO-3 with pipeline parallelism gathers m times what PP = 1
 * with one micro-batch gathers; the prefetch hides a gather under the previous unit's compute, so a
 * hand-solvable step exposes only the first two gathers and the last reductions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/step_exec.h"
#include "sim/plan/plan.h"
#include "sim/program/program.h"
#include "sim/scenario/presets.h"
#include "tests/step_fixtures.h"

/* The tiny dense model of test_plan.c: 4 blocks, h = 8, 2 heads of 4, GeLU FFN 32, vocab 16,
 * untied. Per block 4 x 8 x 8 = 256 attention + 2 x 8 x 32 = 512 FFN + 2 x 8 = 16 norms = 784;
 * embedding = head = 16 x 8 = 128, final norm 8. PP2: stage 0 holds 2 blocks + the embedding = 1696,
 * stage 1 2 blocks + head + final norm = 1704; PP1: 4 x 784 + 128 + 128 + 8 = 3400. BF16: 2 B per
 * weight and per gradient. */
#define BLOCK 784.0
#define STAGE0 1696.0
#define STAGE1 1704.0
#define WHOLE 3400.0

static scenario tiny_dense(int pp, int dp, int micro_batches, int zero) {
    scenario s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "zero");
    s.seed = 7;
    assert_int_equal(preset_cluster("h800-8rail", &s.cluster), 0);
    s.cluster.gpu.speed_cv = 0;   /* identical GPUs: the steps are solved by hand */
    s.model = (model_cfg){.layers = 4, .dense_layers = 4, .hidden = 8, .heads = 2, .head_dim = 4,
                          .kv_heads = 2, .v_head_dim = 4, .ffn_hidden = 32, .ffn_act = FFN_GELU,
                          .vocab = 16, .seq_len = 4, .attention = ATTN_MHA};
    s.cluster.nodes = 1;
    s.cluster.gpus_per_node = pp * dp;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.layout = (layout_cfg){.tp = 1, .pp = pp, .ep = 1, .dp = dp, .zero = zero, .micro_batch = 1,
                            .global_batch = micro_batches * dp, .schedule = SCHED_1F1B, .vpp = 1,
                            .placement = PLACE_EP_INNER};
    s.routing.distribution = ROUTE_UNIFORM;
    return s;
}

/* Data-parallel traffic of one rank's step program: ops and bytes per kind. */
typedef struct { int ag_ops, rs_ops, ag_dp_stream; double ag_bytes, rs_bytes; } dp_traffic;

static dp_traffic traffic_of(const program *p, int rank) {
    dp_traffic t = {0};
    program_op *ops;
    int n = program_materialize(p, rank, &ops);
    for (int i = 0; i < n; i++) {
        group_kind k = p->groups[ops[i].group >= 0 ? ops[i].group : 0].kind;
        if (ops[i].group < 0 || (k != GROUP_DP_DENSE && k != GROUP_DP_EXPERT)) continue;
        if (ops[i].kind == OP_ALL_GATHER) {
            t.ag_ops++;
            t.ag_bytes += ops[i].bytes;
            t.ag_dp_stream += ops[i].stream == STREAM_DP;
        } else if (ops[i].kind == OP_REDUCE_SCATTER || ops[i].kind == OP_ALL_REDUCE) {
            t.rs_ops++;
            t.rs_bytes += ops[i].bytes;
        }
    }
    free(ops);
    return t;
}

static program *build(const scenario *s) {
    program *p = NULL;
    moe_error err = {0};
    if (program_build(s, &p, &err)) fail_msg("program_build: %s", err.msg);
    return p;
}

static plan_result plan_of(const scenario *s) {
    plan_result r;
    moe_error err = {0};
    if (plan_evaluate(s, &r, &err)) fail_msg("plan_evaluate: %s", err.msg);
    return r;
}

/* PP2 x DP4, 8 micro-batches. ZeRO-3: every micro-batch gathers each of the stage's 3 units (the
 * extras and 2 blocks) before its forward and before its backward: 2 x 8 x 3 = 48 gathers of
 * 2 x 8 x 1704 x 2 B = 54528 B on stage 1, and reduce-scatters each unit once per micro-batch:
 * 24 ops of 8 x 1704 x 2 = 27264 B. The plan's volumes (the GPU that moves most: stage 1) are the
 * same numbers. ZeRO-1 for contrast: one reduce-scatter and one gather of the stage after the last
 * micro-batch, 1704 x 2 B each. */
static void zero3_gather_bytes_equal_plan(void **st) {
    (void)st;
    scenario s = tiny_dense(2, 4, 8, 3);
    program *p = build(&s);
    int stage1 = program_rank(p, 0, 1, 0, 0), stage0 = program_rank(p, 0, 0, 0, 0);
    dp_traffic t1 = traffic_of(p, stage1), t0 = traffic_of(p, stage0);
    assert_int_equal(t1.ag_ops, 48);
    assert_int_equal(t1.ag_dp_stream, 48);
    assert_true(t1.ag_bytes == 2 * 8 * STAGE1 * 2);
    assert_int_equal(t1.rs_ops, 24);
    assert_true(t1.rs_bytes == 8 * STAGE1 * 2);
    assert_true(t0.ag_bytes == 2 * 8 * STAGE0 * 2);
    assert_true(t0.rs_bytes == 8 * STAGE0 * 2);
    plan_result pl = plan_of(&s);
    assert_true(pl.dp_param_gather_bytes == t1.ag_bytes);
    assert_true(pl.dp_grad_reduce_bytes == t1.rs_bytes);
    program_free(p);

    s.layout.zero = 1;
    p = build(&s);
    t1 = traffic_of(p, stage1);
    assert_int_equal(t1.ag_ops, 1);
    assert_int_equal(t1.ag_dp_stream, 0);
    assert_true(t1.ag_bytes == STAGE1 * 2);
    assert_int_equal(t1.rs_ops, 1);
    assert_true(t1.rs_bytes == STAGE1 * 2);
    pl = plan_of(&s);
    assert_true(pl.dp_param_gather_bytes == t1.ag_bytes);
    assert_true(pl.dp_grad_reduce_bytes == t1.rs_bytes);
    program_free(p);

    /* ZeRO-2: the per-micro-batch reductions of ZeRO-3, the one gather of ZeRO-1 */
    s.layout.zero = 2;
    p = build(&s);
    t1 = traffic_of(p, stage1);
    assert_int_equal(t1.ag_ops, 1);
    assert_int_equal(t1.rs_ops, 24);
    assert_true(t1.rs_bytes == 8 * STAGE1 * 2);
    pl = plan_of(&s);
    assert_true(pl.dp_grad_reduce_bytes == t1.rs_bytes);
    program_free(p);
}

/* Lecture 31: ZeRO-3 with PP multiplies the gathers per micro-batch. The same model and DP degree:
 * PP1 with the replica's batch as one micro-batch gathers the whole model twice per step
 * (2 x 3400 x 2 B); PP2 needs m >= pp micro-batches, and with m = 8 the pipeline's ranks together
 * gather 8 times that. ZeRO-1 gathers the model once per step either way. */
static void zero3_with_pp_gathers_m_times(void **st) {
    (void)st;
    for (int zero = 1; zero <= 3; zero += 2) {
        scenario one = tiny_dense(1, 4, 1, zero), piped = tiny_dense(2, 4, 8, zero);
        program *a = build(&one), *b = build(&piped);
        double whole = traffic_of(a, 0).ag_bytes;
        double pipeline = traffic_of(b, program_rank(b, 0, 0, 0, 0)).ag_bytes +
                          traffic_of(b, program_rank(b, 0, 1, 0, 0)).ag_bytes;
        assert_true(whole == (zero == 3 ? 2 : 1) * WHOLE * 2);
        assert_true(pipeline == (zero == 3 ? 8 : 1) * whole);
        program_free(a);
        program_free(b);
    }
}

/* Prefetch, by hand. PP1 x DP2, one micro-batch, every collective c = 0.3 ms, attention forward
 * F = 1 ms, its input gradient B = 1.5 ms, its weight gradient W = 0.5 ms, all else free; units:
 * the extras (embedding, head) then blocks 0..3.
 *   forward: gathers of the extras and block 0 back to back (0..2c), block 0 at 2c; block l+1's
 *     gather starts with block l and is hidden (c < F): the forward ends at 2c + 4F.
 *   backward: the extras' and block 3's gathers were prefetched during the forward; each block
 *     (B + W) issues the next one's gather after its input gradient and its own reduce-scatter after
 *     its weight gradient, both hidden under the next block (2c < B + W) except the last block's
 *     reduce-scatter and the extras' (after the embedding's backward): + 2c.
 *   ZeRO-3: 2c + 4F + 4(B + W) + 2c = 4 + 8 + 1.2 = 13.2 ms. ZeRO-2 (no gathers in the passes, the
 *   gather of the updated parameters after the optimizer): 4F + 4(B + W) + 2c + c = 12.9 ms. */
static double step_s(const scenario *s) {
    program *p = build(s);
    fx_comm_costs cc = {.a2a = 0, .p2p = 0, .coll = 3e-4};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    moe_error err = {0};
    if (step_exec_run(p, &o, &r, &err)) fail_msg("step: %s", err.msg);
    double t = r.step_time_s;
    step_exec_result_free(&r);
    program_free(p);
    return t;
}

static void zero_prefetch_hides_gathers(void **st) {
    (void)st;
    scenario s = tiny_dense(1, 2, 1, 3);
    double z3 = step_s(&s);
    s.layout.zero = 2;
    double z2 = step_s(&s);
    print_message("ZeRO-3 %.4f ms, ZeRO-2 %.4f ms\n", 1e3 * z3, 1e3 * z2);
    assert_true(fabs(z3 - 13.2e-3) < 1e-9);
    assert_true(fabs(z2 - 12.9e-3) < 1e-9);
}

/* ZeRO-3 with PP in the simulated step: PP2 x DP4 at 8 micro-batches, collectives 0.6 ms (longer
 * than a block's forward, 0.5 ms). Each stage issues 48 gathers and 24 reduce-scatters on its
 * data-parallel stream, 72 x 0.6 = 43.2 ms: a floor under the ZeRO-3 step that ZeRO-1's step (its
 * compute, 8 x 2 x (0.5 + 1.0) = 24 ms, plus bubble and a tail of 3 collectives) stays below. */
static double run_fixed(const scenario *s, int shortcut) {
    program *p = build(s);
    fx_comm_costs cc = {.a2a = 0, .p2p = 0, .coll = 6e-4};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 5e-4, .B = 7.5e-4, .W = 2.5e-4};
    program_op **mat = NULL;
    if (!shortcut) {
        mat = calloc((size_t)p->n_ranks, sizeof *mat);
        for (int i = 0; i < p->n_ranks; i++) program_materialize(p, i, &mat[i]);
    }
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut, .materialized = mat};
    step_exec_result r;
    moe_error err = {0};
    if (step_exec_run(p, &o, &r, &err)) fail_msg("step: %s", err.msg);
    double t = r.step_time_s;
    step_exec_result_free(&r);
    if (mat) { for (int i = 0; i < p->n_ranks; i++) free(mat[i]); free(mat); }
    program_free(p);
    return t;
}

static void zero3_pp_step_is_slower(void **st) {
    (void)st;
    scenario s = tiny_dense(2, 4, 8, 1);
    double z1 = run_fixed(&s, 1);
    s.layout.zero = 3;
    double z3 = run_fixed(&s, 1);
    print_message("PP2 m=8: ZeRO-1 %.3f ms, ZeRO-3 %.3f ms\n", 1e3 * z1, 1e3 * z3);
    assert_true(z3 >= 72 * 6e-4 - 1e-12);
    assert_true(z1 < 72 * 6e-4);
}

/* The replica shortcut stays exact when the data-parallel collectives run inside the passes: a slow
 * GPU in replica 2 under ZeRO-3 gives the same step with the shortcut as over every rank's
 * materialised program. */
static void zero3_shortcut_equals_materialized(void **st) {
    (void)st;
    scenario s = tiny_dense(2, 4, 8, 3);
    s.faults.n_slow_gpus = 1;
    s.faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 5, .factor = 1.3};
    double a = run_fixed(&s, 1), b = run_fixed(&s, 0);
    assert_true(a == b);
    s.faults.n_slow_gpus = 0;
    assert_true(run_fixed(&s, 1) < a);
}

/* An MoE model: collectives on the comm stream (all-to-alls) and on the data-parallel stream at the
 * same time, over the dense and the expert groups, under 1F1B, interleaved 1F1B and DualPipe: every
 * step completes, and the shortcut equals the run over every rank's materialised program. */
static void zero_moe_streams_complete(void **st) {
    (void)st;
    const schedule_kind kinds[] = {SCHED_1F1B, SCHED_INTERLEAVED, SCHED_DUALPIPE};
    for (int zero = 2; zero <= 3; zero++)
        for (int k = 0; k < 3; k++) {
            scenario s;
            fx_scenario(&s, 8, 16, 2, 4, 2, 8, kinds[k], kinds[k] == SCHED_INTERLEAVED ? 2 : 1, 8);
            s.layout.zero = zero;
            double a = run_fixed(&s, 1), b = run_fixed(&s, 0);
            assert_true(a > 0 && a == b);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero3_gather_bytes_equal_plan),
        cmocka_unit_test(zero3_with_pp_gathers_m_times),
        cmocka_unit_test(zero_prefetch_hides_gathers),
        cmocka_unit_test(zero3_pp_step_is_slower),
        cmocka_unit_test(zero3_shortcut_equals_materialized),
        cmocka_unit_test(zero_moe_streams_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
