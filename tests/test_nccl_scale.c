/* test_nccl_scale.c — data-parallel collectives across the spine as NCCL runs them and its tuning
 * model charges them (sim/plan/ring_split.h), in both comm models (the closed form, comm_analytic.c,
 * and SimGrid, comm_simgrid.c), against published nccl-tests points and hand-computed NCCL times.
 *
 * One platform: 128 nodes of 8 H100 (the h100-8rail preset, 32 nodes per leaf and rail, its cost
 * model's achieved rates: NVLink 361.4 GB/s, NIC 45.6 GB/s per GPU); the groups are the first N nodes.
 *   - Reduce-scatter bus bandwidth at 4, 8, 16, 32, 64 and 128 nodes: about 360, 345, 320, 300, 280
 *     and 260 GB/s on H100 (NVIDIA/nccl issue #1229, a user's report, 2024-03-16). The report gives no
 *     message size; taken at 8 GB, the size of the same generation's H100 reports (NVIDIA/nccl issues
 *     #1211, #1047). Tolerance 20%: at 4 nodes the ring runs at min(8 x NIC, 8/7 x NVLink) = 365 GB/s
 *     (within 1%), and NCCL's own latency model takes 8 GB down to 303 GB/s at 128 nodes, 16% above
 *     the report: the rest of the measured decline is not in NCCL's model (nor here). Both comm models
 *     within 1% of each other at every size.
 *   - By hand (ring_split.h's constants from tuning.cc): a 64 KiB reduce-scatter over 32 nodes pays
 *     NCCL's ring latency 8.4 + 224 x 3.4 + 31 x 14 us; a 512 MB all-reduce over 2 nodes runs as a
 *     ring and over 32 nodes as NCCL's tree (its latency 8.4 + 2 (7 x 4 + 5 x 14) us against the
 *     ring's (8.4 + 448 x 3.4 + 62 x 14) x 1.4, its bandwidth time 256 / (0.92 x 0.9 x 255) x the
 *     ring's, 0.9 being NCCL's tree correction for 512 MB), each the lower of the two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/exec/comm.h"
#include "sim/plan/ring_split.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/simgrid/comm_simgrid.h"

static comm_model g_sg, g_an;
static scenario g_fab;

static int setup(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    assert_int_equal(preset_cluster("h100-8rail", &s.cluster), 0);
    snprintf(s.calibration, sizeof s.calibration, "%s", preset_cluster_calibration("h100-8rail"));
    s.cluster.nodes = 128;
    s.layout.pp = 1; s.layout.ep = 1; s.layout.dp = 1024; s.layout.tp = 1;
    moe_error err = {0};
    if (sg_fabric_scenario(&s, &g_fab, &err)) fail_msg("%s", err.msg);
    g_sg = sg_comm_create(&s, &err);
    if (!g_sg.ctx) fail_msg("%s", err.msg);
    g_an = comm_analytic_create(&g_fab);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    g_sg.destroy(g_sg.ctx);
    g_an.destroy(g_an.ctx);
    return 0;
}

static int *first_gpus(int n) {
    int *g = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) g[i] = i;
    return g;
}

static void reduce_scatter_busbw_across_the_spine(void **state) {
    (void)state;
    const int nodes[] = {4, 8, 16, 32, 64, 128};
    const double published[] = {360, 345, 320, 300, 280, 260};
    const double B = 8.0 * (1 << 30);
    double prev = INFINITY;
    for (int k = 0; k < 6; k++) {
        int n = 8 * nodes[k], *g = first_gpus(n);
        double ts = g_sg.collective_s(g_sg.ctx, COLL_REDUCE_SCATTER, g, n, B, 1);
        double ta = g_an.collective_s(g_an.ctx, COLL_REDUCE_SCATTER, g, n, B, 1);
        double bs = B * (n - 1.0) / n / ts / 1e9, ba = B * (n - 1.0) / n / ta / 1e9;
        print_message("%3d nodes: reduce-scatter 8 GB busbw SimGrid %.1f, closed form %.1f GB/s, published %.0f (%+.1f%%)\n",
                      nodes[k], bs, ba, published[k], 100 * (bs / published[k] - 1));
        assert_true(fabs(bs / ba - 1) < 0.01);
        assert_true(fabs(bs / published[k] - 1) < 0.20);
        assert_true(bs < prev);   /* NCCL's latency grows with the ring */
        prev = bs;
        free(g);
    }
}

static void nccl_latency_and_algorithm_by_hand(void **state) {
    (void)state;
    const double nvl = g_fab.cluster.nvlink_GBps * 1e9, nic = g_fab.cluster.nic_gbps * 1e9 / 8;
    /* 64 KiB reduce-scatter over 32 nodes x 8: 255 steps of 8 rings, NVLink and NICs at once */
    int n = 256, *g = first_gpus(n);
    double B = 65536, chunk = B / n, step = fmax(7.0 / 8 * chunk / nvl, chunk / 8 / nic);
    double want = 255 * step + (8.4 + 224 * 3.4 + 31 * 14) * 1e-6;
    double got = g_sg.collective_s(g_sg.ctx, COLL_REDUCE_SCATTER, g, n, B, 1);
    print_message("64 KiB reduce-scatter on 256 GPUs: %.3f us, by hand %.3f us\n", 1e6 * got, 1e6 * want);
    assert_true(fabs(got / want - 1) < 1e-3);
    /* 512 MB all-reduce: over 32 nodes NCCL's tree, over 2 nodes its ring */
    B = 512e6;
    chunk = B / n;
    double bw = 510 * fmax(7.0 / 8 * chunk / nvl, chunk / 8 / nic);
    double ring = bw + (8.4 + 448 * 3.4 + 62 * 14) * 1.4e-6, tree = bw * 256 / (0.92 * 0.9 * 255) + (8.4 + 2 * (7 * 4 + 5 * 14)) * 1e-6;
    got = g_sg.collective_s(g_sg.ctx, COLL_ALL_REDUCE, g, n, B, 1);
    print_message("512 MB all-reduce on 32 nodes: %.3f ms; by hand ring %.3f, tree %.3f ms\n", 1e3 * got, 1e3 * ring,
                  1e3 * tree);
    assert_true(tree < ring);
    assert_true(fabs(got / tree - 1) < 1e-3);
    assert_true(fabs(g_an.collective_s(g_an.ctx, COLL_ALL_REDUCE, g, n, B, 1) / tree - 1) < 1e-3);
    free(g);
    n = 16;
    g = first_gpus(n);
    chunk = B / n;
    bw = 30 * fmax(7.0 / 8 * chunk / nvl, chunk / 8 / nic);
    ring = bw + (8.4 + 28 * 3.4 + 2 * 14) * 1.4e-6;
    tree = bw * 16 / (0.92 * 0.9 * 15) + (8.4 + 2 * (7 * 4 + 1 * 14)) * 1e-6;
    got = g_sg.collective_s(g_sg.ctx, COLL_ALL_REDUCE, g, n, B, 1);
    print_message("512 MB all-reduce on 2 nodes: %.3f ms; by hand ring %.3f, tree %.3f ms\n", 1e3 * got, 1e3 * ring,
                  1e3 * tree);
    assert_true(ring < tree);
    assert_true(fabs(got / ring - 1) < 1e-3);
    free(g);
}

/* cluster.nccl_model "wire": rings only, paying no NCCL latency but their wires'. With every wire's
 * latency 0, the 512 MB all-reduce over 32 nodes that "tuned" runs as NCCL's tree is the ring's
 * bandwidth time alone, 510 steps of max(7/8 chunk over NVLink, 1/8 chunk over the NIC). */
static void wire_model_drops_nccl_latency_and_tree(void **state) {
    (void)state;
    scenario w = g_fab;
    w.cluster.nccl_model = NCCL_MODEL_WIRE;
    w.cluster.latency_us = (latency_us_cfg){0};
    comm_model an = comm_analytic_create(&w);
    const double nvl = w.cluster.nvlink_GBps * 1e9, nic = w.cluster.nic_gbps * 1e9 / 8;
    int n = 256, *g = first_gpus(n);
    double B = 512e6, chunk = B / n, want = 510 * fmax(7.0 / 8 * chunk / nvl, chunk / 8 / nic);
    double got = an.collective_s(an.ctx, COLL_ALL_REDUCE, g, n, B, 1);
    print_message("512 MB all-reduce on 32 nodes, wire: %.3f ms, by hand %.3f ms\n", 1e3 * got, 1e3 * want);
    assert_true(fabs(got / want - 1) < 1e-9);
    ring_split r = ring_split_of(n, 32, 8, 65536, 0, nvl, nic, NCCL_MODEL_WIRE);
    assert_true(r.ring_lat_s == 0.0 && r.tree == 0);
    r = ring_split_of(n, 32, 8, B, 1, nvl, nic, NCCL_MODEL_WIRE);
    assert_true(r.tree == 0 && r.tree_lat_s == 0.0);
    free(g);
    an.destroy(an.ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reduce_scatter_busbw_across_the_spine),
        cmocka_unit_test(nccl_latency_and_algorithm_by_hand),
        cmocka_unit_test(wire_model_drops_nccl_latency_and_tree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
