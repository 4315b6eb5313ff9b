/* test_step.c — the fast step executor: determinism, the replica shortcut against the materialised
 * program of every rank, a hand-solvable slow GPU, a valid Perfetto trace and its otherData contract
 * (trace.h), and the routing samples driving the step: a hot expert makes its holder the slowest rank
 * and lengthens the step; capacity drops match the fraction computed by hand. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "sim/plan/costmodel.h"
#include "sim/plan/model.h"
#include "sim/plan/plan.h"
#include "sim/plan/plan_costs.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_load.h"
#include "sim/report/results.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/trace.h"
#include "tests/step_fixtures.h"

static int run(const scenario *s, int shortcut, int materialize, step_exec_result *r, program **pp) {
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(s, &p, &err), 0);
    static fx_comm_costs cc = {3e-4, 2e-5, 1e-3};
    static comm_model cm;
    cm = fx_comm(&cc);
    static fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    program_op **mat = NULL;
    if (materialize) {
        mat = calloc((size_t)p->n_ranks, sizeof *mat);
        for (int i = 0; i < p->n_ranks; i++) program_materialize(p, i, &mat[i]);
    }
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut,
                        .materialized = mat};
    int rc = step_exec_run(p, &o, r, &err);
    if (mat) { for (int i = 0; i < p->n_ranks; i++) free(mat[i]); free(mat); }
    if (pp) *pp = p; else program_free(p);
    return rc;
}

/* 2 nodes x 8 GPUs, pp 2, ep 4, dp 2, MoE, DualPipe and 1F1B; with and without a slow GPU in replica 1;
 * the replicas routed alike (shared samples: the healthy one is mirrored) and each with its own
 * samples (both simulated). */
static void test_shortcut_equals_materialized(void **st) {
    (void)st;
    schedule_kind kinds[] = {SCHED_1F1B, SCHED_DUALPIPE};
    for (int ki = 0; ki < 2; ki++)
        for (int fault = 0; fault < 2; fault++)
        for (int shared = 0; shared < 2; shared++) {
            scenario s;
            fx_scenario(&s, 4, 16, 2, 4, 2, 8, kinds[ki], 1, 8);
            s.routing.group_samples = shared ? GROUP_SAMPLES_SHARED : GROUP_SAMPLES_INDEPENDENT;
            if (fault) { s.faults.n_slow_gpus = 1; s.faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 13, .factor = 1.3}; }
            step_exec_result a, b;
            assert_int_equal(run(&s, 1, 0, &a, NULL), 0);
            assert_int_equal(run(&s, 0, 1, &b, NULL), 0);
            assert_int_equal(a.n_simulated_replicas, fault || !shared ? 2 : 1);
            assert_int_equal(b.n_simulated_replicas, 2);
            assert_true(a.step_time_s == b.step_time_s);
            for (int r = 0; r < a.n_ranks; r++) {
                assert_true(a.split[r].compute_s == b.split[r].compute_s);
                assert_true(a.split[r].exposed_comm_s == b.split[r].exposed_comm_s);
                assert_true(a.split[r].bubble_s == b.split[r].bubble_s);
                assert_true(a.split[r].end_s == b.split[r].end_s);
            }
            assert_int_equal(a.slowest_rank, b.slowest_rank);
            step_exec_result_free(&a); step_exec_result_free(&b);
        }
}

/* pp 1, ep 1, dp 2, one dense layer, m micro-batches, no communication cost: a rank's step is
 * m (F + B + W) (the fixture prices attention F, B, W only); GPU 1 at factor 1.5 makes rank 1 the slowest and the step 1.5 m (F + B + W). */
static void test_slow_gpu(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 1, 0, 1, 1, 2, 1, SCHED_1F1B, 1, 6);
    s.faults.n_slow_gpus = 1;
    s.faults.slow_gpus[0] = (slow_gpu_fault){.gpu = 1, .factor = 1.5};
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    fx_comm_costs cc = {0, 0, 0};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    step_exec_result r;
    assert_int_equal(step_exec_run(p, &o, &r, &err), 0);
    assert_int_equal(r.slowest_rank, 1);
    assert_true(fabs(r.step_time_s - 1.5 * 6 * 3e-3) < 1e-12);
    /* rank 0 waits for rank 1 inside the gradient reduce-scatter: exposed communication, by the
     * accounting of step_exec.h (waiting for a late member of a collective) */
    assert_true(fabs(r.split[0].exposed_comm_s - 0.5 * 6 * 3e-3) < 1e-12);
    assert_true(fabs(r.split[0].bubble_s) < 1e-12);
    step_exec_result_free(&r);
    program_free(p);
}

/* DualPipe hides the all-to-all under the paired chunk's compute when comm <= compute. */
static void test_dualpipe_hides_a2a(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 1, 8, SCHED_DUALPIPE, 1, 8);
    step_exec_result a, b;
    program *p;
    assert_int_equal(run(&s, 1, 0, &a, &p), 0);
    program_free(p);
    s.layout.schedule = SCHED_1F1B;
    assert_int_equal(run(&s, 1, 0, &b, &p), 0);
    program_free(p);
    double ea = 0, eb = 0;
    for (int r = 0; r < a.n_ranks; r++) { ea += a.split[r].exposed_comm_s; eb += b.split[r].exposed_comm_s; }
    assert_true(ea < eb);   /* overlap exposes less all-to-all than the unpaired schedule */
    step_exec_result_free(&a); step_exec_result_free(&b);
}

static void test_determinism(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 2, 8, SCHED_DUALPIPE, 1, 8);
    step_exec_result a, b;
    assert_int_equal(run(&s, 1, 0, &a, NULL), 0);
    assert_int_equal(run(&s, 1, 0, &b, NULL), 0);
    assert_memory_equal(a.split, b.split, sizeof *a.split * a.n_ranks);
    step_exec_result_free(&a); step_exec_result_free(&b);
}

static void test_trace_valid(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 2, 8, SCHED_DUALPIPE, 1, 8);
    /* a name the writer has to escape (RFC 8259 §7: quote, backslash, control characters) */
    snprintf(s.name, sizeof s.name, "a \"quoted\" \\ name\twith\x01 controls");
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    fx_comm_costs cc = {3e-4, 2e-5, 1e-3};
    comm_model cm = fx_comm(&cc);
    /* durations off the microsecond grid: the fractions the writer must carry */
    fx_compute_costs k = {.F = 1.0001234e-3, .B = 1.5000567e-3, .W = 5.000089e-4, .expert = 4.0000123e-4};
    int ranks[8];
    step_exec_result r0 = {.slowest_rank = 5};
    int n = step_trace_default_ranks(p, &r0, ranks, 8);
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1,
                        .n_trace_ranks = n, .trace_ranks = ranks};
    step_exec_result r;
    assert_int_equal(step_exec_run(p, &o, &r, &err), 0);
    const char *path = "/tmp/moesim_test_step_trace.json";
    assert_int_equal(step_trace_write(path, p, &r, NULL, &err), 0);
    char *text = read_file_text(path, NULL, &err);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    assert_non_null(doc);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(doc, "traceEvents")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(doc, "displayTimeUnit")));
    int threads = 0, complete = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents")) {
        const char *nm = cJSON_GetObjectItem(e, "name")->valuestring;
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (strcmp(ph, "M") == 0 && strcmp(nm, "thread_name") == 0) threads++;
        if (strcmp(ph, "X") != 0) continue;
        complete++;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble, dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        assert_true(dur >= 0);
        /* microseconds to the nanosecond: the executor's start and end, each rounded to 1 ns */
        int pid = cJSON_GetObjectItem(e, "pid")->valueint, op = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "op")->valueint;
        int kk = 0;
        while (kk < r.n_trace_ranks && r.trace_ranks[kk] != pid) kk++;
        assert_true(kk < r.n_trace_ranks);
        const op_time *t = &r.trace_times[kk][op];
        assert_true(fabs(ts - t->start_s * 1e6) <= 0.0005 + 1e-9 * ts);
        assert_true(fabs(ts + dur - t->end_s * 1e6) <= 0.0005 + 1e-9 * ts);
        assert_true(fabs(ts * 1e3 - round(ts * 1e3)) < 1e-6 * (1 + ts));
    }
    assert_int_equal(threads, n * STREAM_N);
    assert_true(complete > 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "otherData"), "scenario")->valuestring, s.name);
    /* the per-rank figures exactly as the executor found them (17 digits where 15 do not read back) */
    cJSON *steps = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "otherData"), "rank_step_s");
    for (int q = 0; q < r.n_ranks; q++) assert_true(cJSON_GetArrayItem(steps, q)->valuedouble == r.split[q].end_s);
    cJSON_Delete(doc); free(text);
    step_exec_result_free(&r);
    program_free(p);
}

/* ---- routing (sim/program/routing.h) drives the step -------------------------------------------------------- */

/* Hot-expert routing (seed 000: one expert in 60% of the tokens) with the roofline cost model and the
 * analytic comm model: the holder of the hot expert computes the most (the slowest rank), it is the
 * last to arrive at its EP group's all-to-alls, and the step is longer than under uniform routing. */
static void run_costed(const scenario *s, step_exec_result *r) {
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(s, &p, &err), 0);
    costmodel cm = costmodel_from_cluster(&s->cluster);
    comm_model comm = comm_analytic_create(s);
    step_exec_opts o = {.comm = &comm, .price_ctx = &cm, .shortcut = 1};
    assert_int_equal(step_exec_run(p, &o, r, &err), 0);
    if (comm.destroy) comm.destroy(comm.ctx);
    program_free(p);
}

static void test_hot_expert_straggles(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 2, 8, SCHED_1F1B, 1, 8);    /* 16 GPUs, 16 experts, 4 per EP rank */
    s.model.seq_len = 4096;                                    /* enough tokens for GEMM-bound experts */
    s.model.top_k = 2;                                         /* uniform: 1/8 of the tokens per expert */
    step_exec_result uni, hot;
    run_costed(&s, &uni);
    s.routing.distribution = ROUTE_HOT;
    s.routing.hot_expert = 9;                                  /* on EP index 9 / 4 = 2 */
    s.routing.hot_share = 0.6;
    run_costed(&s, &hot);
    rank_coords c = rank_coords_of(&(rank_grid){.dp = 2, .pp = 2, .ep = 4, .tp = 1}, hot.slowest_rank);
    assert_int_equal(c.ep, 2);
    assert_true(hot.step_time_s > uni.step_time_s * 1.05);
    /* uniform: within an EP group no rank computes much more than another; hot: the holder does */
    for (int base = 0; base < uni.n_ranks; base += 4) {
        double mx = 0, mn = 1e30;
        for (int k = 0; k < 4; k++) {
            if (uni.split[base + k].compute_s > mx) mx = uni.split[base + k].compute_s;
            if (uni.split[base + k].compute_s < mn) mn = uni.split[base + k].compute_s;
        }
        assert_true(mx < 1.02 * mn);
        for (int k = 0; k < 4; k++)
            if (k != 2) assert_true(hot.split[base + 2].compute_s > 1.05 * hot.split[base + k].compute_s);
    }
    /* in every EP group the holder arrives last at the all-to-alls most often */
    for (int base = 0; base < hot.n_ranks; base += 4) {
        for (int k = 0; k < 4; k++)
            if (k != 2) assert_true(hot.a2a_last_count[base + 2] > hot.a2a_last_count[base + k]);
    }
    step_exec_result_free(&uni); step_exec_result_free(&hot);
}

/* Capacity drop by hand: top-1 routing over E = 4 experts, expert 0 in a share h = 0.6 of the tokens,
 * the others (1-h)/3 each. T = ep * tokens_per_rank = 4 * 1024 tokens per micro-batch. Capacity
 * C*T*K/E: C = 1 -> 1024 pairs, so expert 0 drops 0.6 T - 0.25 T and the others (0.133 T) nothing:
 * dropped fraction 0.35. C = 2 -> 2048: 0.6 - 0.5 = 0.10. Dropless: 0. The hot count is binomial
 * (sd sqrt(T h (1-h)) / T = 0.0077 of the pairs per sample), hence the tolerance. */
static double dropped_fraction(double cf, int drop) {
    scenario s;
    fx_scenario(&s, 2, 4, 1, 4, 1, 4, SCHED_1F1B, 1, 4);
    s.model.top_k = 1;
    s.routing = (routing_cfg){.distribution = ROUTE_HOT, .hot_expert = 0, .hot_share = 0.6,
                              .capacity_factor = cf, .drop = drop};
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    assert_int_equal(p->routed_pairs, 2L * 4 * 4 * 1024);     /* layers x micro-batches x T x K */
    double f = p->dropped_token_fraction;
    /* what the router assigned before the limit: everything; the drops all fall on expert 0 */
    double routed = 0, kept = 0;
    for (int e = 0; e < 4; e++) { routed += p->step_expert_routed[e]; kept += p->step_expert_tokens[e]; }
    assert_true(routed == (double)p->routed_pairs);
    assert_true(routed - kept == (double)p->dropped_pairs);
    assert_true(p->step_expert_routed[0] - p->step_expert_tokens[0] == (double)p->dropped_pairs);
    /* the expert GEMMs follow the kept tokens: expert 0 (EP rank 0) computes at most its capacity */
    if (drop && cf > 0)
        for (int d = 0; d < p->n_draws; d++) assert_true(p->recv_tokens[d * 4 + 0] <= ceil(cf * 4096 / 4.0));
    program_free(p);
    return f;
}

static void test_capacity_drop_by_hand(void **st) {
    (void)st;
    assert_true(fabs(dropped_fraction(1.0, 1) - 0.35) < 0.025);
    assert_true(fabs(dropped_fraction(2.0, 1) - 0.10) < 0.025);
    assert_true(dropped_fraction(1.0, 0) == 0.0);
}

/* The trace contract of trace.h (otherData) on a completed step. */
static void test_trace_contract(void **st) {
    (void)st;
    scenario s;
    fx_scenario(&s, 4, 16, 2, 4, 2, 8, SCHED_1F1B, 1, 8);
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    fx_comm_costs cc = {3e-4, 2e-5, 1e-3};
    comm_model cm = fx_comm(&cc);
    fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    int ranks[2] = {0, 13};
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1,
                        .n_trace_ranks = 2, .trace_ranks = ranks};
    step_exec_result r;
    assert_int_equal(step_exec_run(p, &o, &r, &err), 0);
    cJSON *doc = step_trace_build(p, &r, "simulated");
    cJSON *od = cJSON_GetObjectItem(doc, "otherData");
    assert_string_equal(cJSON_GetObjectItem(od, "format")->valuestring, "moesim-step-trace/1");
    assert_string_equal(cJSON_GetObjectItem(od, "source")->valuestring, "simulated");
    assert_int_equal(cJSON_GetObjectItem(od, "ranks")->valueint, 16);
    assert_int_equal(cJSON_GetObjectItem(od, "ep")->valueint, 4);
    assert_true(cJSON_GetObjectItem(od, "step_time_s")->valuedouble == r.step_time_s);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(od, "hang")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(od, "rank_gpu")), 16);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(od, "rank_step_s")), 16);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(od, "rank_compute_s")), 16);
    /* replica 1's entries (mirrored) equal replica 0's */
    cJSON *rs = cJSON_GetObjectItem(od, "rank_step_s");
    assert_true(cJSON_GetArrayItem(rs, 3)->valuedouble == cJSON_GetArrayItem(rs, 11)->valuedouble);
    /* every token of every (MoE layer, micro-batch) goes to top_k experts, none dropped:
     * 4 layers x 8 micro-batches x (4 ranks x 1024 tokens) x 8 */
    cJSON *et = cJSON_GetObjectItem(od, "expert_tokens"), *e;
    assert_int_equal(cJSON_GetArraySize(et), 16);
    double sum = 0;
    cJSON_ArrayForEach(e, et) sum += e->valuedouble;
    assert_true(sum == 4.0 * 8 * 4 * 1024 * 8);
    /* event names come from the stable list */
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents")) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X") != 0) continue;
        const char *nm = cJSON_GetObjectItem(e, "name")->valuestring;
        int known = 0;
        for (int i = 0; STEP_TRACE_EVENT_NAMES[i]; i++) known |= strcmp(nm, STEP_TRACE_EVENT_NAMES[i]) == 0;
        assert_true(known);
    }
    cJSON_Delete(doc);
    step_exec_result_free(&r);
    program_free(p);
}

/* The step program's compute ops, summed over every rank, are the model's FLOPs: model.h counts
 * them per token from the architecture alone (an independent derivation), the program generator per
 * op from the layout and the routing. tp = 1: equal to rounding. tp = 2 (expert tensor parallelism):
 * each TP rank also runs the replicated pieces (router, RMSNorms, MLA down-projections) in full,
 * which adds a little work but never removes any. */
static void test_program_flops_equal_model_count(void **st) {
    (void)st;
    for (int tp = 1; tp <= 2; tp++) {
        scenario s;
        scenario_defaults(&s);
        s.cluster.nodes = 4;
        s.routing.node_limit = 2;
        s.routing.drop = 0;   /* dropless: the program computes every routed pair, as model.h counts */
        s.model.layers = 6;
        s.model.dense_layers = 2;
        s.layout = (layout_cfg){.tp = tp, .pp = 2, .ep = 16 / tp, .dp = 1, .zero = 1, .micro_batch = 1,
                                .global_batch = 64, .schedule = SCHED_1F1B, .vpp = 1};
        moe_error err = {0};
        assert_int_equal(scenario_validate(&s, &err), 0);
        program *p = NULL;
        assert_int_equal(program_build(&s, &p, &err), 0);
        model_counts mc;
        model_count(&s.model, &mc);
        double model = mc.flops_per_token * (double)s.layout.global_batch * s.model.seq_len;
        double rel = (p->model_flops_per_step - model) / model;
        print_message("tp %d: program %.6e FLOPs, model %.6e (%+.4f%%)\n", tp, p->model_flops_per_step, model,
                      100 * rel);
        if (tp == 1) assert_true(fabs(rel) < 1e-6);
        else assert_true(rel >= -1e-6 && rel < 0.02);
        program_free(p);
    }
}

/* ---- one pricing for both levels (plan_compute.h) -------------------------------------------------
 * tests/data/scenarios/small-moe.json on one pipeline stage (pp = 1, 1F1B: no bubble), every
 * communication priced at zero, so the step's compute-stream busy time is the whole story. The plan
 * sums its price table per layer and micro-batch at uniform routing; the step executes the program's
 * ops (the kernels the program emits, with the token counts the sampled routing gives each rank) and
 * prices them from the same table. The mean over ranks of the step's compute must equal the plan's
 * compute within 2% (the remainder: the sampled routing's per-rank expert loads vs uniform), with
 * every recompute kind (the step attaches the plan's recompute to each layer's first backward op).
 * Before the table the step priced the same kernels 2.4x cheaper than the plan. */
static void test_step_compute_equals_plan_compute(void **st) {
    (void)st;
    const recompute_kind kinds[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL};
    double none_s = 0;
    for (int i = 0; i < 3; i++) {
        scenario s;
        moe_error err = {0};
        if (scenario_load("tests/data/scenarios/small-moe.json", &s, NULL, &err)) fail_msg("%s", err.msg);
        s.layout.pp = 1;
        s.layout.dp = 4;                      /* 32 GPUs: ep 8 x dp 4, 4 micro-batches per pipeline */
        s.layout.schedule = SCHED_1F1B;
        s.layout.recompute = kinds[i];
        s.host.framework = HOST_NONE;         /* GPU work only: the host's share is test_step_host's */
        assert_int_equal(scenario_validate(&s, &err), 0);
        costmodel cm;
        assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
        plan_result pl;
        assert_int_equal(plan_evaluate_with_costmodel(&s, &cm, &pl, &err), 0);

        program *p = NULL;
        assert_int_equal(program_build(&s, &p, &err), 0);
        fx_comm_costs zero = {0, 0, 0};
        comm_model comm = fx_comm(&zero);
        step_pricing pricing;
        step_pricing_init(&pricing, p, &cm);
        step_exec_opts o = {.comm = &comm, .price = step_price_costmodel, .price_ctx = &pricing, .shortcut = 1};
        step_exec_result r;
        assert_int_equal(step_exec_run(p, &o, &r, &err), 0);
        double c = 0;
        for (int k = 0; k < r.n_ranks; k++) c += r.split[k].compute_s;
        c /= r.n_ranks;
        double rel = (c - pl.compute_s) / pl.compute_s;
        print_message("recompute %d: step compute %.4f ms, plan %.4f ms (%+.3f%%)\n", (int)kinds[i], 1e3 * c,
                      1e3 * pl.compute_s, 100 * rel);
        assert_true(fabs(rel) < 0.02);
        /* recompute is real extra work in both levels: selective a little, full a whole forward */
        if (i == 0) none_s = c;
        else assert_true(c > none_s * (i == 1 ? 1.0 : 1.15));
        step_pricing_free(&pricing);
        step_exec_result_free(&r);
        program_free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shortcut_equals_materialized),
        cmocka_unit_test(test_slow_gpu),
        cmocka_unit_test(test_dualpipe_hides_a2a),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_trace_valid),
        cmocka_unit_test(test_hot_expert_straggles),
        cmocka_unit_test(test_capacity_drop_by_hand),
        cmocka_unit_test(test_trace_contract),
        cmocka_unit_test(test_program_flops_equal_model_count),
        cmocka_unit_test(test_step_compute_equals_plan_compute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
