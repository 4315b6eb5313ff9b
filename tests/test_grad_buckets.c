/* test_grad_buckets.c — layout.overlap_grad_reduce: the data-parallel gradient reduction in buckets
 * under the last backward and the parameter gathers under the first forward (Megatron-Core's
 * overlap_grad_reduce and overlap_param_gather; sim/program/program.c "data-parallel gradient
 * buckets"), against a step solved by hand.
 *
 * The case: a dense GPT of 4 blocks (hidden h = 2048, 16 heads of 128, GeLU FFN f = 8192, vocabulary
 * 16, untied) on PP1 x DP2, one micro-batch per replica, ZeRO 1, BF16 weights and gradients. By hand,
 * per GPU: a block holds P = 4h^2 (q, k, v, o) + 2hf (two GeLU matrices) + 2h (two RMSNorm weights)
 * = 50,335,744 parameters, the extras (embedding, final norm, head) E = 2 x 16h + h = 67,584. The
 * dense data-parallel group has 2 ranks: buckets of max(40M, 2 x 1M) = 40M parameters, so, walking
 * the units backwards, each block fills a bucket and the extras make the last: 5 buckets, 4 of 2P
 * bytes and one of 2E.
 * Prices: the attention's forward F = 1 ms, input gradient B = 1.5 ms, weight gradient W = 0.5 ms,
 * every other kernel free (tests/step_fixtures.h fx_price); a collective of b bytes takes b / BW with
 * BW such that a block's bucket takes c = 0.4 ms (e = c E / P for the extras'), p2p and all-to-alls
 * free.
 *   overlap: the gathers run from t = 0 back to back in forward order (extras e, then block 0's c, ...),
 *     block 0's forward waits for its gather (e + c), the next gathers are hidden (c < F): forward
 *     ends at e + c + 4F. The backward runs each block's B + W = 2 ms; its bucket's reduce-scatter
 *     (c) hides under the next block, but block 0's and then the extras' (after the embedding's
 *     backward) are after the last weight gradient: the optimizer (free) starts at
 *     e + c + 4F + 4(B + W) + c + e = 12.8 ms + 2e; the step ends there.
 *   one tail collective (overlap off): the reduce-scatter of all gradients (4c + e) after the last
 *     weight gradient, the optimizer, the gather (4c + e): 4F + 4(B + W) + 8c + 2e = 15.2 ms + 2e. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/exec/step_exec.h"
#include "sim/program/program.h"
#include "sim/scenario/presets.h"
#include "tests/step_fixtures.h"

#define H 2048.0
#define FFN 8192.0
#define VOCAB 16.0
#define P_BLOCK (4 * H * H + 2 * H * FFN + 2 * H)
#define P_EXTRAS (2 * VOCAB * H + H)
#define C_BLOCK 0.4e-3
#define BW (2 * P_BLOCK / C_BLOCK)   /* bytes/s: a block's BF16 bucket in c */

static scenario dense_case(int overlap) {
    scenario s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "buckets");
    s.seed = 7;
    assert_int_equal(preset_cluster("h800-8rail", &s.cluster), 0);
    s.cluster.gpu.speed_cv = 0;   /* identical GPUs: solved by hand */
    s.cluster.nodes = 1;
    s.cluster.gpus_per_node = 2;
    s.model = (model_cfg){.layers = 4, .dense_layers = 4, .hidden = (int)H, .heads = 16, .head_dim = 128,
                          .kv_heads = 16, .v_head_dim = 128, .ffn_hidden = (int)FFN, .ffn_act = FFN_GELU,
                          .vocab = (int)VOCAB, .seq_len = 64, .attention = ATTN_MHA};
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    s.layout = (layout_cfg){.tp = 1, .pp = 1, .ep = 1, .dp = 2, .zero = 1, .micro_batch = 1, .global_batch = 2,
                            .schedule = SCHED_1F1B, .vpp = 1, .placement = PLACE_EP_INNER,
                            .overlap_grad_reduce = overlap};
    s.routing.distribution = ROUTE_UNIFORM;
    return s;
}

static double coll_by_bytes(void *c, coll_kind k, const int *g, int n, double bytes, int conc) {
    (void)c; (void)k; (void)g; (void)n; (void)conc;
    return bytes / BW;
}

static double step_s(const scenario *s, program **keep) {
    moe_error err = {0};
    program *p = NULL;
    if (program_build(s, &p, &err)) fail_msg("%s", err.msg);
    fx_comm_costs free_comm = {0, 0, 0};
    comm_model cm = fx_comm(&free_comm);
    cm.collective_s = coll_by_bytes;
    fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    if (step_exec_run(p, &o, &r, &err)) fail_msg("step: %s", err.msg);
    double t = r.step_time_s;
    step_exec_result_free(&r);
    if (keep) *keep = p; else program_free(p);
    return t;
}

/* The buckets are the program's: 5 reduce-scatters of the hand sizes on the data-parallel stream in
 * the backward, 5 gathers in the forward, nothing at the tail but the optimizer. */
static void buckets_as_megatron_cuts_them(void **st) {
    (void)st;
    scenario s = dense_case(1);
    program *p = NULL;
    step_s(&s, &p);
    program_op *ops;
    int n = program_materialize(p, 0, &ops), rs = 0, ag = 0, tail = 0;
    double rs_bytes[8] = {0}, ag_bytes[8] = {0};
    for (int i = 0; i < n; i++) {
        const program_op *o = &ops[i];
        if (o->kind == OP_COMPUTE || o->kind == OP_SEND || o->kind == OP_RECV) continue;
        if (o->phase == PHASE_OPT) tail++;
        assert_int_equal(o->stream, STREAM_DP);
        if (o->kind == OP_REDUCE_SCATTER && rs < 8) rs_bytes[rs++] = o->bytes;
        if (o->kind == OP_ALL_GATHER && ag < 8) ag_bytes[ag++] = o->bytes;
    }
    free(ops);
    program_free(p);
    assert_int_equal(tail, 0);
    assert_int_equal(rs, 5);
    assert_int_equal(ag, 5);
    /* backprop order: blocks 3..0, then the extras; gathers in forward order: the extras first */
    for (int j = 0; j < 4; j++) assert_float_equal(rs_bytes[j], 2 * P_BLOCK, 1);
    assert_float_equal(rs_bytes[4], 2 * P_EXTRAS, 1);
    assert_float_equal(ag_bytes[0], 2 * P_EXTRAS, 1);
    for (int j = 1; j < 5; j++) assert_float_equal(ag_bytes[j], 2 * P_BLOCK, 1);
}

static void buckets_hide_under_the_backward_but_the_last(void **st) {
    (void)st;
    scenario on = dense_case(1), off = dense_case(0);
    double e = C_BLOCK * P_EXTRAS / P_BLOCK;
    double want_on = 12.8e-3 + 2 * e, want_off = 15.2e-3 + 2 * e;
    double t_on = step_s(&on, NULL), t_off = step_s(&off, NULL);
    print_message("overlap_grad_reduce: step %.6f ms (hand %.6f), one tail collective %.6f ms (hand %.6f)\n",
                  1e3 * t_on, 1e3 * want_on, 1e3 * t_off, 1e3 * want_off);
    assert_true(fabs(t_on - want_on) < 1e-12);
    assert_true(fabs(t_off - want_off) < 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buckets_as_megatron_cuts_them),
        cmocka_unit_test(buckets_hide_under_the_backward_but_the_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
