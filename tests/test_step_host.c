/* test_step_host.c — the host side of a step (sim/exec/step_host.h, sim/plan/host_costs.h).
 *
 *   - the closed form of a compute op's span (start = max(g, s + h), end = max(start + D, e + d)) against
 *     an independent kernel-by-kernel walk (each kernel launched at s + (k+1) h, run in stream order),
 *     on random cases and on the two regimes solved by hand;
 *   - a one-GPU step (one stream, no communication) run by the fast executor with given op prices and
 *     host costs, against a kernel-level event walk of the same ops written here (host thread issuing
 *     kernel by kernel, blocking at its syncs; GPU running them in order), and hand-solved steps: a
 *     host-bound chain, a GPU-bound chain, a sync that drains the queue, and the split it reports
 *     (the waits on the host as overhead_s, compute_s unchanged);
 *   - the table's regimes: a dropless MoE layer syncs on its permutation, drop-and-pad does not; a
 *     captured region costs one graph launch; pipeline sends without virtual stages are device syncs;
 *     the fine-grained MoE case of the validation set (Qwen3-30B-A3B, 8 local experts, FP8 current
 *     scaling) issues a layer in more host time than its GPU time, DeepSeek-V3's seed layer in less. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/comm.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/step_host.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/host_costs.h"
#include "sim/plan/plan_compute.h"
#include "sim/program/program.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"

/* ---- the closed form against the kernel walk --------------------------------------------------------- */
/* Kernel k of n is launched at s + (k+1) h and runs d on the GPU after the previous one and after g. */
static void walk(double g, double s, double h, int n, double d, double *start, double *end) {
    double t = g;
    *start = g;
    for (int k = 0; k < n; k++) {
        double launch = s + (k + 1) * h, begin = t > launch ? t : launch;
        if (k == 0) *start = begin;
        t = begin + d;
    }
    *end = t;
}

static void test_span_closed_form(void **st) {
    (void)st;
    /* GPU-bound: 4 kernels of 10 us issued 1 us apart from t = 0, ready at 0: start 1, end 41 */
    double a, b;
    double stretch = step_host_compute_span(0, 4e-6, 4e-6, 4, 40e-6, &a, &b);
    assert_true(fabs(a - 1e-6) < 1e-15 && fabs(b - 41e-6) < 1e-15 && stretch < 1e-15);
    /* host-bound: 4 kernels of 1 us issued 10 us apart: the last is launched at 40, ends at 41 */
    stretch = step_host_compute_span(0, 40e-6, 40e-6, 4, 4e-6, &a, &b);
    assert_true(fabs(a - 10e-6) < 1e-15 && fabs(b - 41e-6) < 1e-15 && fabs(stretch - 27e-6) < 1e-15);
    srand(7);
    for (int i = 0; i < 20000; i++) {
        double g = rand() % 1000 * 1e-6, e = rand() % 1000 * 1e-6, H = rand() % 300 * 1e-6;
        double D = (1 + rand() % 300) * 1e-6;
        int n = 1 + rand() % 40;
        double s = e - H, ws, we, cs, ce;
        walk(g, s, H / n, n, D / n, &ws, &we);
        step_host_compute_span(g, e, H, n, D, &cs, &ce);
        assert_true(fabs(ws - cs) < 1e-12 && fabs(we - ce) < 1e-12);
    }
}

/* ---- a one-GPU step ---------------------------------------------------------------------------------- */
/* identical GPUs (cluster.gpu.speed_cv 0): the step is solved by hand */
static const char *ONE_GPU =
    "{\"model\": {\"preset\": \"llama3-8b\", \"layers\": 2, \"dense_layers\": 2, \"seq_len\": 1024},"
    " \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 1, \"gpus_per_node\": 1, \"rails\": 1,"
    "             \"gpu\": {\"speed_cv\": 0}},"
    " \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 1, \"dp\": 1, \"micro_batch\": 1, \"global_batch\": 2,"
    "            \"schedule\": \"1f1b\"},"
    " \"precision\": {\"compute\": \"bf16\"}, \"output\": {\"trace\": false}}";

typedef struct { double D, H; double kernels; int sync_every; } toy;

static double toy_price(void *ctx, const program *p, int rank, const program_op *op) {
    (void)p; (void)rank; (void)op;
    return ((const toy *)ctx)->D;
}

static host_op toy_host(void *ctx, const program *p, int stage, int i, const program_op *op) {
    (void)p; (void)stage; (void)op;
    const toy *t = ctx;
    return (host_op){.issue_s = t->H, .kernels = t->kernels,
                     .sync = t->sync_every > 0 && i % t->sync_every == t->sync_every - 1 ? HOST_SYNC_OP : 0};
}

static double no_comm_s(void *ctx, const a2a_pattern *pat) { (void)ctx; (void)pat; return 0; }
static double no_coll_s(void *ctx, coll_kind k, const int *g, int n, double b, int conc) { (void)ctx; (void)k; (void)g; (void)n; (void)b; (void)conc; return 0; }
static double no_p2p_s(void *ctx, int a, int b, double x) { (void)ctx; (void)a; (void)b; (void)x; return 0; }

static program *one_gpu(scenario *s) {
    moe_error err = {0};
    if (scenario_parse("one-gpu.json", ONE_GPU, s, NULL, &err)) fail_msg("%s", err.msg);
    program *p = NULL;
    assert_int_equal(program_build(s, &p, &err), 0);
    assert_int_equal(p->n_ranks, 1);
    for (int i = 0; i < p->stage_n_ops[0]; i++) assert_int_equal(p->stage_ops[0][i].kind, OP_COMPUTE);
    return p;
}

static int run_toy(const program *p, toy *t, double sync_s, step_exec_result *r) {
    comm_model cm = {.a2a_s = no_comm_s, .collective_s = no_coll_s, .p2p_s = no_p2p_s, .name = "none"};
    step_exec_opts o = {.comm = &cm, .price = toy_price, .price_ctx = t, .host = toy_host, .host_ctx = t,
                        .host_sync_s = sync_s, .keep_timelines = 1};
    moe_error err = {0};
    return step_exec_run(p, &o, r, &err);
}

/* The same ops as kernels: a host thread issuing kernel by kernel in list order (each op's kernels
 * evenly over its issue time), blocking after a sync op until it ends and sync_s more; one GPU stream
 * running every kernel in order as soon as it is issued. The step ends with the last kernel. */
static double kernel_walk(int n_ops, const toy *t, double sync_s) {
    int n = (int)t->kernels;
    double host = 0, gpu = 0;
    for (int i = 0; i < n_ops; i++) {
        for (int k = 0; k < n; k++) {
            host += t->H / n;
            gpu = (gpu > host ? gpu : host) + t->D / n;
        }
        if (t->sync_every > 0 && i % t->sync_every == t->sync_every - 1) host = (host > gpu ? host : gpu) + sync_s;
    }
    return gpu;
}

static void test_one_gpu_step(void **st) {
    (void)st;
    scenario s;
    program *p = one_gpu(&s);
    int n = p->stage_n_ops[0];
    step_exec_result r;
    /* host-bound: 30 us to issue, 10 us to run, one kernel each: the last op is issued at 30 n and
     * runs 10 more */
    toy t = {.D = 10e-6, .H = 30e-6, .kernels = 1};
    assert_int_equal(run_toy(p, &t, 0, &r), 0);
    assert_true(fabs(r.step_time_s - (30e-6 * n + 10e-6)) < 1e-12);
    /* the GPU waited 20 us before each op after the first, 30 us before the first: overhead */
    assert_true(fabs(r.split[0].compute_s + r.split[0].optimizer_s - 10e-6 * n) < 1e-12);
    assert_true(fabs(r.split[0].overhead_s - (30e-6 + 20e-6 * (n - 1))) < 1e-12);
    step_exec_result_free(&r);
    /* GPU-bound: the first op's issue, then the GPU back to back */
    t = (toy){.D = 50e-6, .H = 10e-6, .kernels = 5};
    assert_int_equal(run_toy(p, &t, 0, &r), 0);
    assert_true(fabs(r.step_time_s - (2e-6 + 50e-6 * n)) < 1e-12);
    step_exec_result_free(&r);
    /* a sync after every op drains the queue: each op then waits its own issue (and the round trip) */
    t = (toy){.D = 50e-6, .H = 10e-6, .kernels = 1, .sync_every = 1};
    assert_int_equal(run_toy(p, &t, 7e-6, &r), 0);
    assert_true(fabs(r.step_time_s - (n * (10e-6 + 50e-6) + (n - 1) * 7e-6)) < 1e-12);
    step_exec_result_free(&r);
    /* mixed cases against the kernel walk */
    const toy cases[] = {{20e-6, 25e-6, 4, 3}, {80e-6, 30e-6, 8, 2}, {5e-6, 40e-6, 3, 0}, {40e-6, 39e-6, 7, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        t = cases[c];
        assert_int_equal(run_toy(p, &t, 7e-6, &r), 0);
        double want = kernel_walk(n, &t, 7e-6);
        if (fabs(r.step_time_s - want) > 1e-12) fail_msg("case %zu: executor %.9g s, kernel walk %.9g s", c, r.step_time_s, want);
        /* compute + overhead + nothing else fills the one stream's step */
        const step_split *sp = &r.split[0];
        assert_true(fabs(sp->compute_s + sp->optimizer_s + sp->overhead_s - r.step_time_s) < 1e-12);
        /* the host spans: every op issued in turn, after the sync before it resumed */
        double *hs = malloc(sizeof(double) * n), *he = malloc(sizeof(double) * n);
        host_op (*fn)(void *, const program *, int, int, const program_op *) = toy_host;
        stage_host *sh = step_host_build(p, fn, &t, 7e-6);
        step_host_spans(&sh[0], r.timelines[0], r.timeline_stride ? r.timeline_stride[0] : 1, hs, he);
        for (int i = 1; i < n; i++) assert_true(hs[i] >= he[i - 1] - 1e-15);
        step_host_free(sh, 1);
        free(hs); free(he);
        step_exec_result_free(&r);
    }
    program_free(p);
}

/* ---- the table's regimes ---------------------------------------------------------------------------- */
static void load(const char *text, scenario *s) {
    moe_error err = {0};
    if (scenario_parse("t.json", text, s, NULL, &err)) fail_msg("%s", err.msg);
}

/* GPU seconds of one MoE block, forward and backward, one micro-batch: the price table's */
static double gpu_moe_layer_s(const scenario *s) {
    costmodel cm;
    moe_error err = {0};
    if (costmodel_for_scenario(s, &cm, &err)) fail_msg("%s", err.msg);
    model_counts mc;
    model_count(&s->model, &mc);
    plan_layer_costs lc;
    plan_price_layers(s, &mc, &cm, &lc);
    return lc.layer[LAYER_MOE].fwd_s + lc.layer[LAYER_MOE].bwd_s;
}

static void test_table_regimes(void **st) {
    (void)st;
    scenario s;
    host_price_table t;
    load("{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 2},"
         " \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 16, \"dp\": 1, \"global_batch\": 1024, \"schedule\": \"1f1b\"},"
         " \"routing\": {\"distribution\": \"balanced\", \"node_limit\": 0, \"capacity_factor\": 0, \"drop\": false},"
         " \"precision\": {\"compute\": \"fp8-cs\", \"dispatch\": \"bf16\"}}", &s);
    host_price_table_build(&s, 8, &t);
    assert_true(t.enabled);
    assert_int_equal(t.sync_kernel, K_PERMUTE_FWD);       /* dropless: the tokens per expert are read */
    assert_false(t.device_sync_p2p);                      /* pp 1 */
    /* current scaling quantizes every expert's GEMM inputs with 4 kernels each: 10 E + 2 forward */
    assert_true(fabs(t.op[LAYER_MOE][K_EXPERT_FWD].kernels - (2 * 8 + 2 * 4 * 8 + 1.5)) < 1e-12);
    double hf, hb;
    host_layer_issue_s(&t, LAYER_MOE, 1, 0, &hf, &hb);
    /* the fine-grained model is host-bound: its layer takes longer to issue than to run */
    assert_true(hf + hb > gpu_moe_layer_s(&s));

    /* drop-and-pad fixes the shapes on the host: no sync */
    s.routing.capacity_factor = 1.25;
    s.routing.drop = 1;
    host_price_table_build(&s, 8, &t);
    assert_int_equal(t.sync_kernel, K_NONE);
    /* CUDA graphs: a captured attention costs one graph launch instead of its calls and launches */
    s.host.cuda_graph_scope = CG_ATTN;
    host_price_table_build(&s, 8, &t);
    double g_fwd, g_bwd;
    host_layer_issue_s(&t, LAYER_MOE, 1, 0, &g_fwd, &g_bwd);
    s.host.cuda_graph_scope = 0;
    host_price_table_build(&s, 8, &t);
    host_layer_issue_s(&t, LAYER_MOE, 1, 0, &hf, &hb);
    double attn = host_issue_s(&t.par, t.op[LAYER_MOE][K_ATTN_FWD]);
    assert_true(fabs((hf - g_fwd) - (attn - t.par.graph_launch_s)) < 1e-12);
    /* the framework "none": no host side */
    s.host.framework = HOST_NONE;
    host_price_table_build(&s, 8, &t);
    assert_false(t.enabled);

    /* pipeline parallelism without virtual stages: batched p2p with torch.cuda.synchronize() */
    load("{\"model\": {\"preset\": \"llama3-70b\"}, \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 8},"
         " \"layout\": {\"tp\": 4, \"pp\": 4, \"ep\": 1, \"dp\": 4, \"global_batch\": 64, \"schedule\": \"1f1b\"},"
         " \"precision\": {\"compute\": \"bf16\"}}", &s);
    host_price_table_build(&s, 0, &t);
    assert_true(t.device_sync_p2p);
    assert_int_equal(t.sync_kernel, K_NONE);
    s.layout.schedule = SCHED_INTERLEAVED;
    s.layout.vpp = 2;
    host_price_table_build(&s, 0, &t);
    assert_false(t.device_sync_p2p);

    /* DeepSeek-V3's seed layer (FP8 blockwise, 4 local experts, 4096 tokens a micro-batch) is
     * GPU-bound: it runs longer than its host needs to issue it */
    load("{\"model\": {\"preset\": \"deepseek-v3\"}}", &s);
    host_price_table_build(&s, 4, &t);
    host_layer_issue_s(&t, LAYER_MOE, 1, 0, &hf, &hb);
    assert_true(hf + hb < gpu_moe_layer_s(&s));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_closed_form),
        cmocka_unit_test(test_one_gpu_step),
        cmocka_unit_test(test_table_regimes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
