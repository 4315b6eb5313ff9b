/* test_pfc_feed.c — what PFC adds to an EP group's all-to-all when the all-to-alls of the other EP
 * groups of its stage share the fabric (sim/exec/pfc_spread.h: pfc_spread_a2a_set, pfc_a2a_pauses;
 * the fast executor's feed, step_exec.h "Lossless fabric"), on cases solved by hand.
 *
 * The fabric (as tests/test_pfc_spread.c): 12 single-GPU nodes on one rail, 4 nodes per leaf (leaf 0:
 * GPUs 0-3, leaf 1: 4-7, leaf 2: 8-11), NIC 400 Gb/s = 50 GB/s, leaf uplink bundle 4 x 50 = 200 GB/s,
 * latencies 0. B = 100 MB: 2 ms on a NIC, 0.5 ms on an uplink bundle. With one GPU per node DeepEP's
 * aggregation is the identity: one RDMA flow per rank pair.
 *
 * Group H (hot): GPUs 0, 4, 5, 6; ranks 4, 5, 6 send B each to GPU 0. nic-0 down drains 3B = 6 ms,
 * its own time (the comm model's bottleneck time, tested against the closed form here) is 6 ms.
 * Group V (victim, balanced): GPUs 1 and 7 swap B. Alone it takes 2 ms (each NIC carries B).
 *   Together, 7 -> 1 crosses nic-7 up, up-l1 up, the spine, up-l0 down and nic-1 down; up-l0 down
 *   also carries H's three flows into GPU 0 (4B = 2 ms of its own). Lossy, 7 -> 1 ends at 2 ms.
 *   Lossless: nic-0 down (6 ms) pauses up-l0 down, which holds everything queued in it, 7 -> 1 too,
 *   until 6 ms; up-l0 down's pause reaches up-l1 up and the NICs feeding it, nic-7 among them. So V
 *   ends at 6 ms: its pause is 6 - 2 = 4 ms. H itself is not later (6 ms: work conservation). 1 -> 7
 *   runs the other way through unpaused ports and ends at 2 ms.
 * The same H as a combine (GPU 0 sends B to each of 4, 5, 6), given as its mirror image as the
 * executor gives every combine: turned back, its bottleneck is nic-0 up, a sender's own link, which
 * no switch queue sits behind and PFC does not pause; V then ends at 2 ms, no pause.
 * Nothing shared: V on GPUs 8 and 9 (leaf 2) or on GPUs 2 and 3 (leaf 0, NIC to NIC inside the leaf,
 * never on an uplink) ends at 2 ms beside H, no pause.
 *
 * In the step (tests/data/scenarios/pfc-feed.json: 6 nodes of 2 GPUs, 2 nodes per leaf, EP 6 x DP 2,
 * so EP group 0 holds nodes 0-2 and group 1 nodes 3-5, and both send into leaf 1 through its uplink;
 * a hot expert; each replica its own routing sample): every all-to-all of the fast executor lasts the
 * comm model's time for its group plus its pause, worked out here from the flows of both groups as
 * the program resolves them (program_replica_pattern: each replica's own sample; a combine turned back
 * to its real direction) through pfc_spread, which tests/test_pfc_spread.c holds to hand-solved
 * incasts; and the per-rank pause counts what was added. With shared samples, without cluster.pfc,
 * and with cluster.ecn, the step is the one without the feed, bit for bit (ECN: V is not held).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/comm.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/trace.h"
#include "sim/scenario/scenario_load.h"
#include "sim/exec/pfc_spread.h"
#include "tests/fabric_fixtures.h"
#include "tests/step_fixtures.h"

#define B 100e6
#define MS 1e-3

static scenario one_rail(void) {
    scenario s;
    memset(&s, 0, sizeof s);
    s.cluster = fx_one_rail();
    s.cluster.pfc = 1;
    return s;
}

static void near_ms(double got, double want_ms) { assert_true(fabs(got - want_ms * MS) <= 1e-9); }

/* Group H: GPUs 0, 4, 5, 6, every other rank sends B to rank 0 (the GPU 0); as a combine, the mirror
 * image of rank 0 sending B to each. */
static const int H_GPUS[4] = {0, 4, 5, 6};
static double h_bytes[16];
/* Group V: two GPUs swapping B. */
static const double V_BYTES[4] = {0, B, B, 0};

static a2a_pattern group_h(void) {
    memset(h_bytes, 0, sizeof h_bytes);
    for (int i = 1; i < 4; i++) h_bytes[i * 4 + 0] = B;
    return (a2a_pattern){.n = 4, .gpus = H_GPUS, .bytes = h_bytes, .concurrent_groups = 1};
}

static a2a_pattern group_v(const int *gpus) {
    return (a2a_pattern){.n = 2, .gpus = gpus, .bytes = V_BYTES, .concurrent_groups = 1};
}

/* Own times from the comm model the executor asks (the closed form), then the pauses. */
static void pauses(const scenario *s, const a2a_pattern *ps, const unsigned char *rev, double own[2], double pause[2]) {
    comm_model m = comm_analytic_create(s);
    assert_non_null(m.ctx);
    for (int i = 0; i < 2; i++) own[i] = m.a2a_s(m.ctx, &ps[i]);
    m.destroy(m.ctx);
    assert_int_equal(pfc_a2a_pauses(&s->cluster, &s->faults, ps, rev, 2, pause), 0);
}

static void test_victim_group_paused(void **state) {
    (void)state;
    scenario s = one_rail();
    static const int v_gpus[2] = {1, 7};
    a2a_pattern ps[2] = {group_h(), group_v(v_gpus)};
    /* the flows of the set, each group's own: lossy and lossless ends */
    pfc_result r;
    assert_int_equal(pfc_spread_a2a_set(&s.cluster, &s.faults, ps, NULL, 2, NULL, &r), 0);
    assert_int_equal(r.n_patterns, 2);
    double lossy, pfc;
    pfc_pattern_finish(&r, 0, &lossy, &pfc);
    near_ms(lossy, 6);
    near_ms(pfc, 6);
    pfc_pattern_finish(&r, 1, &lossy, &pfc);
    near_ms(lossy, 2);
    near_ms(pfc, 6);
    pfc_result_free(&r);
    /* the feed: V is paused by exactly 4 ms, H not at all */
    double own[2], pause[2];
    pauses(&s, ps, NULL, own, pause);
    near_ms(own[0], 6);
    near_ms(own[1], 2);
    near_ms(pause[0], 0);
    near_ms(pause[1], 4);
    /* with ECN (cluster.ecn) H's senders slow down before nic-0's egress pauses: V is not held */
    s.cluster.ecn = 1;
    pauses(&s, ps, NULL, own, pause);
    near_ms(own[1], 2);
    near_ms(pause[1], 0);
    s.cluster.ecn = 0;
    /* H as a combine given as its mirror image: its hot GPU sends, nothing is paused */
    static const unsigned char rev[2] = {1, 0};
    pauses(&s, ps, rev, own, pause);
    near_ms(own[0], 6);   /* the mirror image's time: the split-duplex fabric times both alike */
    near_ms(pause[0], 0);
    near_ms(pause[1], 0);
}

static void test_nothing_shared(void **state) {
    (void)state;
    scenario s = one_rail();
    static const int other_leaf[2] = {8, 9}, same_leaf[2] = {2, 3};
    const int *v[2] = {other_leaf, same_leaf};
    for (int k = 0; k < 2; k++) {
        a2a_pattern ps[2] = {group_h(), group_v(v[k])};
        double own[2], pause[2];
        pauses(&s, ps, NULL, own, pause);
        near_ms(own[1], 2);
        near_ms(pause[0], 0);
        near_ms(pause[1], 0);
    }
}

/* ---- in the step ---------------------------------------------------------------------------------- */
#define FEED_SCENARIO "tests/data/scenarios/pfc-feed.json"

static void run_step_opts(const program *p, const comm_model *cm, int shortcut, step_exec_result *r) {
    static fx_compute_costs k = {1e-3, 1.5e-3, 5e-4, 4e-4};   /* F, B, W, expert */
    step_exec_opts o = {.comm = cm, .price = fx_price, .price_ctx = &k, .shortcut = shortcut, .per_rank = !shortcut,
                        .keep_timelines = 1};
    moe_error err = {0};
    assert_int_equal(step_exec_run(p, &o, r, &err), 0);
}

static void run_step(const program *p, const comm_model *cm, step_exec_result *r) { run_step_opts(p, cm, 1, r); }

/* The pause of all-to-all op i (stage-list op `o`) of EP group g in stage s, from the flows of every
 * EP group of the stage (tp = 1: one per replica), each with the sample its replica resolves to. */
static double expected_pause(const program *p, const scenario *sc, const program_op *o, int s, int g) {
    gpu_flow_list fl = {0};
    size_t from = 0, to = 0;
    for (int d = 0; d < p->dp; d++) {
        int gd = program_group_of(p, program_rank(p, d, s, 0, 0), GROUP_EP);
        int pattern = program_replica_pattern(p, d, o);
        a2a_pattern pat;
        step_a2a_buf buf;
        step_a2a_pattern(p, pattern, gd, &pat, &buf);
        pat.concurrent_groups = 1;
        size_t first = fl.n;
        assert_int_equal(a2a_flows_build(&sc->cluster, &pat, &fl), 0);
        step_a2a_buf_free(&buf);
        if (p->patterns[pattern].is_combine)
            for (size_t k = first; k < fl.n; k++) {
                int t = fl.v[k].src_gpu;
                fl.v[k].src_gpu = fl.v[k].dst_gpu;
                fl.v[k].dst_gpu = t;
            }
        if (gd == g) { from = first; to = fl.n; }
    }
    pfc_result r;
    assert_int_equal(pfc_spread(&sc->cluster, &sc->faults, fl.v, fl.n, NULL, &r), 0);
    double lossy = 0, pfc = 0;
    for (size_t k = from; k < to; k++) {
        lossy = fmax(lossy, r.finish_lossy_s[k]);
        pfc = fmax(pfc, r.finish_s[k]);
    }
    pfc_result_free(&r);
    gpu_flow_list_free(&fl);
    return pfc - lossy;
}

static void test_step_all_to_alls(void **state) {
    (void)state;
    scenario sc;
    moe_error err = {0};
    assert_int_equal(scenario_load(FEED_SCENARIO, &sc, NULL, &err), 0);
    sc.cluster.gpu.speed_cv = 0;
    program *p = NULL;
    assert_int_equal(program_build(&sc, &p, &err), 0);
    assert_int_equal(p->n_sample_groups, 2);
    comm_model cm = comm_analytic_create(&sc);
    step_exec_result r;
    run_step(p, &cm, &r);
    assert_non_null(r.pfc_pause_s);
    cJSON *trace = step_trace_build(p, &r, "simulated");
    const cJSON *in_trace = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(trace, "otherData"),
                                                             "rank_pfc_pause_s");
    assert_int_equal(cJSON_GetArraySize(in_trace), p->n_ranks);
    double fed = 0, paused = 0;
    int n_paused = 0, n_a2a = 0;
    for (int rank = 0; rank < p->n_ranks; rank++) {
        int d, s, e, t;
        program_coords(p, rank, &d, &s, &e, &t);
        int g = program_group_of(p, rank, GROUP_EP);
        const program_group *G = &p->groups[g];
        double rank_pause = 0;
        for (int i = 0; i < p->stage_n_ops[s]; i++) {
            const program_op *o = &p->stage_ops[s][i];
            if (o->kind != OP_A2A_DISPATCH && o->kind != OP_A2A_COMBINE) continue;
            /* the instance starts at its last member's arrival */
            double start = 0;
            for (int m = 0; m < G->n; m++)
                start = fmax(start, step_exec_time(&r, r.sim_rank[G->ranks[m]], i)->start_s);
            double end = step_exec_time(&r, r.sim_rank[rank], i)->end_s;
            a2a_pattern pat;
            step_a2a_buf buf;
            step_a2a_pattern(p, program_replica_pattern(p, d, o), g, &pat, &buf);
            double own = cm.a2a_s(cm.ctx, &pat);
            step_a2a_buf_free(&buf);
            double pause = expected_pause(p, &sc, o, s, g);
            assert_true(fabs((end - start) - (own + pause)) <= 1e-12 * (own + pause));
            rank_pause += pause;
            n_a2a++;
            if (pause > 0) { n_paused++; paused += pause; }
        }
        assert_true(fabs(r.pfc_pause_s[rank] - rank_pause) <= 1e-12 * (rank_pause + 1e-9));
        /* the trace's otherData carries it per rank (printed to round trip) */
        assert_true(cJSON_GetArrayItem(in_trace, rank)->valuedouble == r.pfc_pause_s[rank]);
        fed += r.pfc_pause_s[rank];
    }
    /* not vacuous: some all-to-alls are paused, others not */
    assert_true(n_paused > 0 && n_paused < n_a2a && paused > 0 && fed > 0);
    cJSON_Delete(trace);
    step_exec_result_free(&r);

    /* without PFC: no pause, and every all-to-all as the comm model times it */
    step_exec_result off, on_shared, off_shared;
    sc.cluster.pfc = 0;
    run_step(p, &cm, &off);
    assert_null(off.pfc_pause_s);
    trace = step_trace_build(p, &off, "simulated");
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(trace, "otherData"), "rank_pfc_pause_s"));
    cJSON_Delete(trace);
    program_free(p);
    cm.destroy(cm.ctx);
    /* shared samples: identical groups; the feed adds nothing, bit for bit */
    sc.routing.group_samples = GROUP_SAMPLES_SHARED;
    sc.cluster.pfc = 1;
    assert_int_equal(program_build(&sc, &p, &err), 0);
    cm = comm_analytic_create(&sc);
    run_step(p, &cm, &on_shared);
    sc.cluster.pfc = 0;
    run_step(p, &cm, &off_shared);
    assert_null(on_shared.pfc_pause_s);
    assert_true(on_shared.step_time_s == off_shared.step_time_s);
    for (int rank = 0; rank < p->n_ranks; rank++) assert_true(on_shared.a2a_s[rank] == off_shared.a2a_s[rank]);
    step_exec_result_free(&off);
    step_exec_result_free(&on_shared);
    step_exec_result_free(&off_shared);
    program_free(p);
    cm.destroy(cm.ctx);
}

/* Four replicas on 12 nodes (groups on nodes 0-2, 3-5, 6-8, 9-11; leaves of 2 nodes): the replica
 * shortcut simulates replicas 0 and 1 and mirrors 2 and 3 onto them. Groups 0 and 1 share leaf 1's
 * uplink as groups 2 and 3 share leaf 4's, so each mirrored group has its representative's pause, and
 * the shortcut's step is the run of every rank's, bit for bit. */
static void test_step_shortcut(void **state) {
    (void)state;
    scenario sc;
    moe_error err = {0};
    assert_int_equal(scenario_load(FEED_SCENARIO, &sc, NULL, &err), 0);
    sc.cluster.gpu.speed_cv = 0;
    sc.cluster.nodes = 12;
    sc.layout.dp = 4;
    program *p = NULL;
    assert_int_equal(program_build(&sc, &p, &err), 0);
    comm_model cm = comm_analytic_create(&sc);
    step_exec_result a, b;
    run_step_opts(p, &cm, 1, &a);
    run_step_opts(p, &cm, 0, &b);
    assert_int_equal(a.n_simulated_replicas, 2);
    assert_int_equal(b.n_simulated_replicas, 4);
    assert_true(a.step_time_s == b.step_time_s);
    double fed = 0;
    for (int r = 0; r < p->n_ranks; r++) {
        assert_true(a.pfc_pause_s[r] == b.pfc_pause_s[r]);
        fed += a.pfc_pause_s[r];
    }
    assert_true(fed > 0);
    step_exec_result_free(&a);
    step_exec_result_free(&b);
    program_free(p);
    cm.destroy(cm.ctx);
    /* ECN: no pause is fed, and the step is the one without PFC, bit for bit */
    double t[2];
    for (int ecn = 0; ecn < 2; ecn++) {
        sc.cluster.pfc = ecn;
        sc.cluster.ecn = ecn;
        assert_int_equal(program_build(&sc, &p, &err), 0);
        cm = comm_analytic_create(&sc);
        run_step_opts(p, &cm, 1, &a);
        t[ecn] = a.step_time_s;
        for (int r = 0; ecn && r < p->n_ranks; r++) assert_true(a.pfc_pause_s[r] == 0);
        step_exec_result_free(&a);
        program_free(p);
        cm.destroy(cm.ctx);
    }
    printf("  step: PFC with ECN %.9f s, without PFC %.9f s\n", t[1], t[0]);
    assert_true(t[0] == t[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_victim_group_paused),
        cmocka_unit_test(test_nothing_shared),
        cmocka_unit_test(test_step_all_to_alls),
        cmocka_unit_test(test_step_shortcut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
