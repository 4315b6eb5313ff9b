/* test_ecmp.c — path selection over a leaf's uplink bundle (cluster.path_selection,
 * platforms/fabric_geometry.h): static ECMP hashing against adaptive routing.
 *
 *   - by hand: 8 nodes, 4 per leaf, non-blocking: a bundle is U = 4 ports of one NIC (50 GB/s each).
 *     Two 64 MB flows of rail 0 from two nodes of leaf 0 to two nodes of leaf 1 (their NICs distinct):
 *     under a seed that hashes both onto one port, each finishes at 2 x 64 MB / 50 GB/s + latency,
 *     twice its alone time, in SimGrid (every flow's own finish) and in the closed form; under a seed
 *     that hashes them apart, and under adaptive, each takes 64 MB / 50 GB/s + latency (the NIC);
 *   - the same with 2 queue pairs per connection: all four on one port is the collision above, four
 *     distinct ports is the NIC-bound time (each port carries half a flow), in SimGrid (which sends
 *     the parts from the queue pairs' own hosts) and in the closed form;
 *   - every GPU pair's SimGrid route takes the hashed port of fabric_flow_route, per queue pair;
 *   - a DeepEP dispatch over two leaves: SimGrid and the closed form within 1%, neither below the most
 *     loaded port's drain computed by hand from the hash;
 *   - concurrent rings: a reduce-scatter across two leaves as one of 32 groups meets 3 other rings on
 *     its leaf's uplinks: a 4:1 bundle, or ecmp hashing all of them onto one port, adds steps x chunk x
 *     (1/12.5 - 1/50 GB/s) to it by hand in both models; non-blocking adaptive leaves, or the 4 flows
 *     on 4 ports, add nothing;
 *   - the fast executor's replica shortcut simulates every DP replica under ecmp (their flows hash onto
 *     other ports), one per routing sample stream under adaptive;
 *   - the hash against balls into bins: over 20,000 seeds, the mean of the largest number of n flows
 *     on one of U ports matches E[max load] computed exactly by enumerating all U^n assignments,
 *     within 4 standard errors, for (n, U) = (6, 4) and (8, 8) (the second a power of two, where the low
 *     bits of a bare FNV-1a hash would repeat structure of the GPU ids);
 *   - the scenario: the default is adaptive with 1 queue pair (NCCL's default); ecmp needs a whole
 *     number of ports (exit 2 naming cluster.path_selection), the XML dump refuses ecmp, and
 *     qps_per_connection < 1 is refused.
 * That adaptive keeps today's results is the unchanged golden files of e2e_step_exact and the
 * validation table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platforms/fabric_geometry.h"
#include "platforms/platform_xml.h"
#include "sim/exec/comm.h"
#include "sim/exec/ring_flows.h"
#include "sim/exec/step_exec.h"
#include "sim/plan/costmodel.h"
#include "sim/program/program.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/rail_fabric.h"
#include "sim/simgrid/rail_flows.h"
#include "tests/fabric_fixtures.h"

#define MB 1e6
#define NIC 50e9         /* B/s: the H800 preset's 400 Gb/s at line rate (the fixture's cost model) */
#define LAT_SPINE 3.7e-6 /* s: the preset's latency_us.cross_leaf */
#define BYTES (64 * MB)


/* Rail 0: node 0 -> node 4 and node 1 -> node 5 (leaf 0 -> leaf 1), GPU = node x 8. */
static const int SRC[2] = {0, 8}, DST[2] = {32, 40};

static scenario fabric(path_selection_kind ps, int qps, uint64_t seed) {
    scenario s = fx_fabric("test_ecmp", 8, 4, 1.0);
    s.cluster.path_selection = ps;
    s.cluster.qps_per_connection = qps;
    s.seed = seed;
    return s;
}

/* The first seed whose queue pairs of the two flows land all on one port (same = 1) or all on
 * distinct ports (same = 0). */
static uint64_t find_seed(int qps, int same) {
    scenario s = fabric(PATH_ECMP, qps, 0);
    for (uint64_t seed = 1; seed < 100000; seed++) {
        int used[4] = {0}, n = 0, distinct = 0;
        for (int f = 0; f < 2; f++)
            for (int q = 0; q < qps; q++) {
                int p = fabric_ecmp_port(&s.cluster, seed, SRC[f], DST[f], q);
                if (!used[p]++) distinct++;
                n++;
            }
        if (same ? distinct == 1 : distinct == n) return seed;
    }
    fail_msg("no seed found");
    return 0;
}

static int fails;
static void near(const char *what, double got, double want) {
    int ok = fabs(got - want) <= 1e-6 * want;
    printf("  %-58s got %9.3f us  hand %9.3f us  %s\n", what, got * 1e6, want * 1e6, ok ? "ok" : "MISMATCH");
    if (!ok) fails++;
}

/* The two flows as one pattern (NCCL pairwise all-to-all over the four GPUs, two non-zero entries). */
static double pattern_s(comm_model *m) {
    static const int gpus[4] = {0, 8, 32, 40};
    double bytes[16] = {0};
    bytes[0 * 4 + 2] = BYTES;   /* 0 -> 32 */
    bytes[1 * 4 + 3] = BYTES;   /* 8 -> 40 */
    a2a_pattern p = {.n = 4, .gpus = gpus, .bytes = bytes, .concurrent_groups = 1, .pairwise = 1};
    return m->a2a_s(m->ctx, &p);
}

static scenario g_case;
static double g_each_s;   /* the hand time of each flow */

static int child_two_flows(void) {
    scenario s = g_case;
    comm_model sg, an;
    if (fx_both_models(&s, &sg, &an)) return 1;
    char what[96];
    const char *mode = s.cluster.path_selection == PATH_ECMP ? "ecmp" : "adaptive";
    /* every flow's own finish: both take the hand time */
    rail_flow fl[2];
    double fin[2];
    for (int f = 0; f < 2; f++)
        fl[f] = (rail_flow){rail_fabric_gpu_host(SRC[f]), rail_fabric_gpu_host(DST[f]), BYTES};
    rail_flows_run(fl, 2, fin);
    for (int f = 0; f < 2; f++) {
        snprintf(what, sizeof what, "%s, %d qp: flow %d -> %d [simgrid flow]", mode, fabric_qps(&s.cluster), SRC[f], DST[f]);
        near(what, fin[f], g_each_s);
    }
    snprintf(what, sizeof what, "%s, %d qp: the pattern [simgrid]", mode, fabric_qps(&s.cluster));
    near(what, pattern_s(&sg), g_each_s);
    snprintf(what, sizeof what, "%s, %d qp: the pattern [analytic]", mode, fabric_qps(&s.cluster));
    near(what, pattern_s(&an), g_each_s);
    /* alone, a flow is NIC-bound whatever its port */
    snprintf(what, sizeof what, "%s, %d qp: 0 -> 32 alone [simgrid]", mode, fabric_qps(&s.cluster));
    near(what, sg.p2p_s(sg.ctx, 0, 32, BYTES), BYTES / NIC + LAT_SPINE);
    snprintf(what, sizeof what, "%s, %d qp: 0 -> 32 alone [analytic]", mode, fabric_qps(&s.cluster));
    near(what, an.p2p_s(an.ctx, 0, 32, BYTES), BYTES / NIC + LAT_SPINE);
    an.destroy(an.ctx);
    sg.destroy(sg.ctx);
    return fails != 0;
}

static void two_flows(path_selection_kind ps, int qps, uint64_t seed, double each_s) {
    g_case = fabric(ps, qps, seed);
    g_each_s = each_s;
    assert_int_equal(fx_run_in_child(child_two_flows), 0);
}

static void test_collision_halves_rate(void **st) {
    (void)st;
    const double alone = BYTES / NIC + LAT_SPINE, shared = 2 * BYTES / NIC + LAT_SPINE;
    uint64_t collide = find_seed(1, 1), apart = find_seed(1, 0);
    printf("  one queue pair: seed %llu collides, seed %llu does not\n", (unsigned long long)collide,
           (unsigned long long)apart);
    two_flows(PATH_ECMP, 1, collide, shared);
    two_flows(PATH_ECMP, 1, apart, alone);
    /* adaptive spreads both over the bundle: the colliding seed changes nothing, nor do queue pairs */
    two_flows(PATH_ADAPTIVE, 1, collide, alone);
    two_flows(PATH_ADAPTIVE, 4, collide, alone);
}

static void test_queue_pairs(void **st) {
    (void)st;
    uint64_t collide = find_seed(2, 1), apart = find_seed(2, 0);
    printf("  two queue pairs: seed %llu puts all four on one port, seed %llu on four\n",
           (unsigned long long)collide, (unsigned long long)apart);
    two_flows(PATH_ECMP, 2, collide, 2 * BYTES / NIC + LAT_SPINE);
    /* four ports, each carrying half a flow: the NICs are the bottleneck */
    two_flows(PATH_ECMP, 2, apart, BYTES / NIC + LAT_SPINE);
}

/* Every GPU pair's SimGrid route takes the port of its queue pairs' hash (fabric_flow_route): the
 * platform and the closed form route alike. 16 nodes, 4 per leaf, 2 queue pairs. */
static int child_routes_agree(void) {
    scenario s = fx_fabric("test_ecmp", 16, 4, 1.0);
    s.cluster.path_selection = PATH_ECMP;
    s.cluster.qps_per_connection = 2;
    s.seed = 7;
    moe_error err = {0};
    if (rail_fabric_init(&s, &err)) {
        fprintf(stderr, "rail_fabric_init: %s\n", err.msg);
        return 1;
    }
    const int G = 16 * 8, L = fabric_leaves_per_rail(&s.cluster), U = fabric_uplink_ports(&s.cluster);
    int bad = 0, checked = 0;
    for (int a = 0; a < G; a++)
        for (int b = 0; b < G; b++)
            for (int q = 0; q < 2 && a != b; q++) {
                fabric_hop h[FABRIC_MAX_HOPS];
                int n = fabric_flow_route(&s.cluster, s.seed, a, b, q, h);
                char names[FABRIC_MAX_HOPS + 2][64], want[64] = "";
                int m = rail_fabric_route(rail_fabric_qp_host(rail_fabric_gpu_host(a), q), rail_fabric_gpu_host(b), names,
                                          FABRIC_MAX_HOPS + 2, NULL);
                for (int i = 0; i < n; i++)
                    if (h[i].cls == FL_PORT_UP)
                        snprintf(want, sizeof want, "up-r%d-l%d-p%d_UP", h[i].index / U / L, h[i].index / U % L,
                                 h[i].index % U);
                int found = want[0] == '\0';
                for (int i = 0; i < m; i++) found |= strcmp(names[i], want) == 0;
                bad += m != n || !found;
                checked += want[0] != '\0';
            }
    printf("  %d cross-leaf queue-pair routes checked, %d differ\n", checked, bad);
    return bad != 0 || checked == 0;
}

static void test_routes_agree(void **st) {
    (void)st;
    assert_int_equal(fx_run_in_child(child_routes_agree), 0);
}

/* A DeepEP dispatch over 8 nodes (two leaves of 4, U = 4 ports), bytes rank i -> j of (1 + (7i + 3j)
 * mod 5) MB, a quarter of them per destination node crossing the NICs: SimGrid and the closed form
 * within 1%, and neither below the hand bound, the most loaded port's bytes / 50 GB/s. (SimGrid's
 * lazy sharing updates let this pattern finish in 997.7 us against 1,080 us of port drain:
 * rail_fabric.cpp runs ecmp with the full solver.) */
static int child_dispatch(void) {
    scenario s = fabric(PATH_ECMP, 1, 42);
    comm_model sg, an;
    if (fx_both_models(&s, &sg, &an)) return 1;
    enum { N = 64, NODES = 8 };
    static int gpus[N], nodes[NODES];
    static double bytes[N * N], node_bytes[N * NODES];
    for (int i = 0; i < N; i++) gpus[i] = i;
    for (int k = 0; k < NODES; k++) nodes[k] = k;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            bytes[i * N + j] = i == j ? 0 : MB * (1 + (i * 7 + j * 3) % 5);
            if (j / 8 != i / 8) node_bytes[i * NODES + j / 8] += bytes[i * N + j] / 4;
        }
    a2a_pattern p = {.n = N, .gpus = gpus, .bytes = bytes, .node_bytes = node_bytes, .n_nodes = NODES, .nodes = nodes,
                     .concurrent_groups = 1};
    /* the hand bound: every RDMA flow (sender -> the landing GPU of its rail) adds node_bytes to its port */
    const int U = fabric_uplink_ports(&s.cluster), L = fabric_leaves_per_rail(&s.cluster);
    static double load[2][8 * 2 * 4];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < NODES; k++) {
            if (k == i / 8 || fabric_leaf_of_node(&s.cluster, k) == fabric_leaf_of_node(&s.cluster, i / 8)) continue;
            int dst = fabric_landing_gpu(&s.cluster, i, k), rail = i % 8, port = fabric_ecmp_port(&s.cluster, 42, i, dst, 0);
            int lu = fabric_leaf_of_node(&s.cluster, i / 8), ld = fabric_leaf_of_node(&s.cluster, k);
            load[0][(rail * L + lu) * U + port] += node_bytes[i * NODES + k];
            load[1][(rail * L + ld) * U + port] += node_bytes[i * NODES + k];
        }
    double hot = 0;
    for (int d = 0; d < 2; d++)
        for (int x = 0; x < 8 * L * U; x++)
            if (load[d][x] > hot) hot = load[d][x];
    double t_sg = sg.a2a_s(sg.ctx, &p), t_an = an.a2a_s(an.ctx, &p), bound = hot / NIC;
    printf("  dispatch: simgrid %.1f us, closed form %.1f us, hottest port %.1f MB: %.1f us\n", t_sg * 1e6, t_an * 1e6,
           hot / MB, bound * 1e6);
    int bad = t_sg < bound || t_an < bound || fabs(t_sg - t_an) > 0.01 * t_an;
    an.destroy(an.ctx);
    sg.destroy(sg.ctx);
    return bad;
}

static void test_dispatch_simgrid_vs_closed_form(void **st) {
    (void)st;
    assert_int_equal(fx_run_in_child(child_dispatch), 0);
}

/* ---- concurrent rings on the leaves' uplinks ------------------------------------------------------ */
/* A reduce-scatter of 256 MB over rail 0 of node 0 (leaf 0) and node 4 (leaf 1), as one of 32 groups
 * (2 members: 32 x 2 / (8 rails x 2 nodes) = 4 rings per rail and node position, nodes 0-3 and 4-7):
 * the 4 rings' flows leave leaf 0 (and leaf 1) together.
 *   - adaptive, 4:1 oversubscribed leaves: the bundle is one NIC wide, 4 flows at 12.5 GB/s each, so
 *     the ring takes steps x chunk x (1/12.5 - 1/50 GB/s) more than alone, in both models; non-blocking
 *     adaptive leaves: no copies, the same time alone or not (rings are timed alone there);
 *   - ecmp, non-blocking (4 ports of one NIC each): under a seed that hashes the 4 forward flows onto
 *     one port and the 4 backward flows onto one port, the same extra time as the 4:1 bundle; under a
 *     seed that spreads each direction over the 4 ports, none. */
static int ring_ports_used(uint64_t seed, int forward) {
    scenario s = fx_fabric("test_ecmp", 8, 4, 1.0);
    s.cluster.path_selection = PATH_ECMP;
    int used = 0;
    for (int j = 0; j < 4; j++) {
        int a = j * 8, b = (4 + j) * 8;
        used |= 1 << fabric_ecmp_port(&s.cluster, seed, forward ? a : b, forward ? b : a, 0);
    }
    return __builtin_popcount((unsigned)used);
}

static uint64_t ring_seed(int ports) {
    for (uint64_t seed = 1; seed < 200000; seed++)
        if (ring_ports_used(seed, 1) == ports && ring_ports_used(seed, 0) == ports) return seed;
    fail_msg("no seed found");
    return 0;
}

static double g_ring_extra_s;

static int child_rings_on_leaves(void) {
    scenario s = g_case;
    comm_model sg, an;
    if (fx_both_models(&s, &sg, &an)) return 1;
    const int ring[2] = {0, 4 * 8};
    const double B = 256 * MB;
    double a1 = an.collective_s(an.ctx, COLL_REDUCE_SCATTER, ring, 2, B, 1);
    double a32 = an.collective_s(an.ctx, COLL_REDUCE_SCATTER, ring, 2, B, 32);
    double s1 = sg.collective_s(sg.ctx, COLL_REDUCE_SCATTER, ring, 2, B, 1);
    double s32 = sg.collective_s(sg.ctx, COLL_REDUCE_SCATTER, ring, 2, B, 32);
    char what[96];
    const char *mode = s.cluster.path_selection == PATH_ECMP ? "ecmp" : "adaptive";
    printf("  %s, %g:1, seed %llu: alone %.1f / %.1f us, one of 32 %.1f / %.1f us [analytic / simgrid]\n", mode,
           s.cluster.oversubscription, (unsigned long long)s.seed, a1 * 1e6, s1 * 1e6, a32 * 1e6, s32 * 1e6);
    snprintf(what, sizeof what, "%s %g:1: what the other rings add [analytic]", mode, s.cluster.oversubscription);
    if (g_ring_extra_s > 0) near(what, a32 - a1, g_ring_extra_s);
    else near(what, a32, a1);
    snprintf(what, sizeof what, "%s %g:1: what the other rings add [simgrid]", mode, s.cluster.oversubscription);
    if (g_ring_extra_s > 0) near(what, s32 - s1, g_ring_extra_s);
    else near(what, s32, s1);
    an.destroy(an.ctx);
    sg.destroy(sg.ctx);
    return fails != 0;
}

static void test_concurrent_rings_on_leaves(void **st) {
    (void)st;
    scenario s = fx_fabric("test_ecmp", 8, 4, 1.0);
    const int ring[2] = {0, 4 * 8};
    ring_plan rp = ring_plan_make(&s.cluster, COLL_REDUCE_SCATTER, ring, 2, 256 * MB);
    const double extra = rp.steps * rp.nic_bytes * (1 / (NIC / 4) - 1 / NIC);
    g_case = fx_fabric("test_ecmp", 8, 4, 4.0);   /* adaptive, 4:1 */
    g_ring_extra_s = extra;
    assert_int_equal(fx_run_in_child(child_rings_on_leaves), 0);
    g_case = fx_fabric("test_ecmp", 8, 4, 1.0);   /* adaptive, non-blocking */
    g_ring_extra_s = 0;
    assert_int_equal(fx_run_in_child(child_rings_on_leaves), 0);
    g_case = fabric(PATH_ECMP, 1, ring_seed(1));  /* ecmp: every flow of a direction on one port */
    g_ring_extra_s = extra;
    assert_int_equal(fx_run_in_child(child_rings_on_leaves), 0);
    g_case = fabric(PATH_ECMP, 1, ring_seed(4));  /* ecmp: each on its own port */
    g_ring_extra_s = 0;
    assert_int_equal(fx_run_in_child(child_rings_on_leaves), 0);
}

/* The replica shortcut: DP replicas stand for one another under adaptive (a healthy replica per
 * routing sample stream is simulated), not under ecmp, whose replicas hash onto other ports. 64 GPUs,
 * EP16 over 2 nodes, DP4; the closed-form comm model. */
static int simulated_replicas(path_selection_kind ps) {
    scenario s;
    moe_error err = {0};
    if (fx_small_moe("\"leaf_down_ports\": 2", &s, &err)) fail_msg("%s", err.msg);
    s.cluster.path_selection = ps;
    program *p = NULL;
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    comm_model an = comm_analytic_create(&s);
    costmodel cm = costmodel_from_cluster(&s.cluster);
    step_exec_opts o = {.comm = &an, .price_ctx = &cm, .shortcut = 1};
    step_exec_result r;
    if (step_exec_run(p, &o, &r, &err)) fail_msg("%s", err.msg);
    int n = r.n_simulated_replicas;
    printf("  %s: %d of %d replicas simulated, step %.6f ms\n", ps == PATH_ECMP ? "ecmp" : "adaptive", n, p->dp,
           r.step_time_s * 1e3);
    step_exec_result_free(&r);
    an.destroy(an.ctx);
    program_free(p);
    return n;
}

static void test_every_replica_under_ecmp(void **st) {
    (void)st;
    assert_true(simulated_replicas(PATH_ADAPTIVE) < 4);
    assert_int_equal(simulated_replicas(PATH_ECMP), 4);
}

/* ---- the hash against balls into bins ------------------------------------------------------------ */
/* E[max load] of n balls thrown independently and uniformly into U bins, by enumerating all U^n
 * assignments (an independent truth: no hashing, no sampling). */
static double exact_mean_max(int n, int U) {
    long total = 1;
    for (int i = 0; i < n; i++) total *= U;
    double sum = 0;
    for (long a = 0; a < total; a++) {
        int load[16] = {0}, mx = 0;
        long x = a;
        for (int i = 0; i < n; i++, x /= U)
            if (++load[x % U] > mx) mx = load[x % U];
        sum += mx;
    }
    return sum / (double)total;
}

static void balls_into_bins(int n, int leaf_ports) {
    /* 2 leaves of leaf_ports nodes, non-blocking: U = leaf_ports ports; n flows of rail 0 from the
     * nodes of leaf 0 to those of leaf 1, each pair distinct */
    scenario s = fx_fabric("test_ecmp", 2 * leaf_ports, leaf_ports, 1.0);
    s.cluster.path_selection = PATH_ECMP;
    const int U = fabric_uplink_ports(&s.cluster), gpn = s.cluster.gpus_per_node;
    assert_int_equal(U, leaf_ports);
    const int S = 20000;
    double sum = 0, sum2 = 0;
    for (int seed = 0; seed < S; seed++) {
        int load[16] = {0}, mx = 0;
        for (int f = 0; f < n; f++) {
            int src = (f % leaf_ports) * gpn, dst = (leaf_ports + (f + f / leaf_ports) % leaf_ports) * gpn;
            int p = fabric_ecmp_port(&s.cluster, (uint64_t)seed, src, dst, 0);
            assert_true(p >= 0 && p < U);
            if (++load[p] > mx) mx = load[p];
        }
        sum += mx;
        sum2 += (double)mx * mx;
    }
    double mean = sum / S, sd = sqrt((sum2 - S * mean * mean) / (S - 1)), se = sd / sqrt(S);
    double want = exact_mean_max(n, U);
    printf("  %d flows into %d ports: mean max %.4f over %d seeds (se %.4f), exact %.4f: %.2f se\n", n, U, mean, S,
           se, want, fabs(mean - want) / se);
    assert_true(fabs(mean - want) <= 4 * se);
}

static void test_balls_into_bins(void **st) {
    (void)st;
    balls_into_bins(6, 4);
    balls_into_bins(8, 8);
}

/* ---- the scenario --------------------------------------------------------------------------------- */

static void test_scenario(void **st) {
    (void)st;
    scenario s;
    moe_error err = {0};
    if (fx_parse("{}", &s, &err)) fail_msg("%s", err.msg);
    assert_int_equal(s.cluster.path_selection, PATH_ADAPTIVE);
    assert_int_equal(s.cluster.qps_per_connection, 1);
    if (fx_parse("{\"cluster\": {\"path_selection\": \"ecmp\", \"qps_per_connection\": 4, \"oversubscription\": 2}}", &s,
              &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.cluster.path_selection, PATH_ECMP);
    assert_int_equal(fabric_qps(&s.cluster), 4);
    assert_int_equal(fabric_uplink_ports(&s.cluster), 16);   /* 32 nodes per leaf / 2 */
    /* 32 / 3 ports is not a whole number of NIC-rate ports */
    fx_expect_bad_cluster("{\"path_selection\": \"ecmp\", \"oversubscription\": 3}", "cluster.path_selection", "whole number");
    fx_expect_bad_cluster("{\"path_selection\": \"ecmp\", \"oversubscription\": 3}", "cluster.path_selection", "32 / 3");
    fx_expect_bad_cluster("{\"path_selection\": \"hashed\"}", "cluster.path_selection", "ecmp");
    fx_expect_bad_cluster("{\"qps_per_connection\": 0}", "cluster.qps_per_connection", "got 0");
    /* adaptive takes any oversubscription, as before */
    if (fx_parse("{\"cluster\": {\"oversubscription\": 3}}", &s, &err)) fail_msg("%s", err.msg);
    /* the XML dump writes bundles: it refuses ecmp by name */
    scenario x = fabric(PATH_ECMP, 1, 42);
    char path[128];
    snprintf(path, sizeof path, "/tmp/moesim_test_ecmp_%ld.xml", (long)getpid());
    assert_int_equal(rail_fabric_write_xml(&x, path, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "cluster.path_selection"));
    assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collision_halves_rate),
        cmocka_unit_test(test_queue_pairs),
        cmocka_unit_test(test_routes_agree),
        cmocka_unit_test(test_dispatch_simgrid_vs_closed_form),
        cmocka_unit_test(test_concurrent_rings_on_leaves),
        cmocka_unit_test(test_every_replica_under_ecmp),
        cmocka_unit_test(test_balls_into_bins),
        cmocka_unit_test(test_scenario),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
