/* test_pfc_spread.c — PFC congestion spreading (sim/exec/pfc_spread.h) on incasts solved by hand.
 *
 * The fabric: 12 single-GPU nodes on one rail, 4 nodes per leaf (3 leaves), NIC 400 Gb/s = 50 GB/s,
 * leaf uplink bundle 4 x 50 = 200 GB/s (non-blocking), latencies 0. B = 100 MB, so one B takes
 * 2 ms on a NIC and 0.5 ms on an uplink bundle.
 *
 * The incast: GPUs 4, 5, 6 (leaf 1) send B each to GPU 0 (leaf 0): its NIC down drains 3B = 6 ms.
 * GPU 7 (leaf 1) sends B to GPU 1 (leaf 0, not hot) and B to GPU 5 (same leaf); GPU 8 sends B to
 * GPU 9 (leaf 2: shares nothing with the incast).
 *   drains: nic-0 down 6 ms; up-l0 down 4B = 2 ms; up-l1 up 4B = 2 ms; nic-4..6 up 2 ms;
 *           nic-7 up 2B = 4 ms; nic-1 down, nic-5 down, nic-8 up, nic-9 down 2 ms.
 *   lossy:  4->0 ends at 6 ms; 7->1 at max(4, 2, 2, 2) = 4 ms; 7->5 at max(4, 2) = 4 ms; 8->9 2 ms.
 *   PFC:    nic-0 down pauses up-l0 down (6 ms), which pauses up-l1 up (6 ms), which pauses the NICs
 *           feeding it, 4, 5, 6 and 7 (6 ms): 7->1 ends at 6 ms (1.5x; it shares the uplinks with
 *           the incast), 7->5 at 6 ms (1.5x; it never leaves the leaf and shares only GPU 7's NIC
 *           with a victim: the spreading's second step); 8->9 stays at 2 ms. 6 links paused.
 *   ECN:    the incast's senders slow down instead of pausing: every flow at its lossy time, nothing
 *           paused; a stalled receiver's tree is held forever all the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/exec/pfc_spread.h"
#include "tests/fabric_fixtures.h"

#define B 100e6

static void test_incast_victims(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    faults_cfg f = {0};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, NULL, &r), 0);
    assert_int_equal(r.hot_gpu, 0);
    assert_true(r.root.cls == FL_NIC_DOWN && r.root.index == 0);
    fx_near_ms(r.root_drain_s, 6);
    /* without PFC */
    fx_near_ms(r.finish_lossy_s[FX_F40], 6);
    fx_near_ms(r.finish_lossy_s[FX_F71], 4);
    fx_near_ms(r.finish_lossy_s[FX_F75], 4);
    fx_near_ms(r.finish_lossy_s[FX_F89], 2);
    /* with PFC: the victims wait for the incast; the makespan does not move */
    fx_near_ms(r.finish_s[FX_F40], 6);
    fx_near_ms(r.finish_s[FX_F71], 6);
    fx_near_ms(r.finish_s[FX_F75], 6);
    fx_near_ms(r.finish_s[FX_F89], 2);
    assert_int_equal((int)r.n_victims, 2);
    assert_true(fabs(r.max_victim_slowdown - 1.5) < 1e-9);
    assert_int_equal(r.n_paused, 6);
    /* in class order: NIC up 4..7, uplink up of leaf 1, uplink down of leaf 0; all caused by nic-0 */
    static const fabric_link_class cls[6] = {FL_NIC_UP, FL_NIC_UP, FL_NIC_UP, FL_NIC_UP, FL_UPLINK_UP, FL_UPLINK_DOWN};
    static const int idx[6] = {4, 5, 6, 7, 1, 0};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(r.paused[i].link.cls, cls[i]);
        assert_int_equal(r.paused[i].link.index, idx[i]);
        fx_near_ms(r.paused[i].held_s, 6);
        assert_true(r.paused[i].cause.cls == FL_NIC_DOWN && r.paused[i].cause.index == 0);
    }
    fx_near_ms(r.paused[3].drain_s, 4);   /* nic-7 up: 2B */
    fx_near_ms(r.paused[4].drain_s, 2);   /* up-l1 up: 4B on 200 GB/s */
    char name[64];
    pfc_link_name(&c, r.paused[4].link, name, sizeof name);
    assert_string_equal(name, "up-r0-l1_UP");
    /* GPUs with a flow PFC delays: the victims' ends 7, 1 and 5 (the incast itself is not later) */
    assert_int_equal(r.n_held_gpus, 3);
    pfc_result_free(&r);
}

/* A receiver that stops draining (the pause storm): everything in its pause tree is held forever,
 * the unrelated leaf is not. */
static void test_stalled_receiver(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    faults_cfg f = {0};
    pfc_opts o = {.stalled_gpu = 0};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, &o, &r), 0);
    for (int i = FX_F40; i <= FX_F75; i++) assert_true(isinf(r.finish_s[i]));
    fx_near_ms(r.finish_s[FX_F89], 2);
    assert_true(isinf(r.max_victim_slowdown));
    /* the six of the incast's tree and the stalled NIC itself; every GPU but 8 and 9 is held */
    assert_int_equal(r.n_paused, 7);
    assert_int_equal(r.n_held_gpus, 6);
    pfc_result_free(&r);
}

/* ECN (cluster.ecn): the incast's senders slow down before nic-0's egress pauses its feeders, so
 * every flow ends at its lossy time (the victims 7->1 and 7->5 at 4 ms, not 6) and nothing is paused;
 * a receiver that stops draining still holds its whole pause tree forever, as without ECN. */
static void test_ecn(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    c.ecn = 1;
    faults_cfg f = {0};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, NULL, &r), 0);
    for (int i = 0; i < FX_NF; i++) assert_true(r.finish_s[i] == r.finish_lossy_s[i]);
    fx_near_ms(r.finish_s[FX_F40], 6);
    fx_near_ms(r.finish_s[FX_F71], 4);
    fx_near_ms(r.finish_s[FX_F75], 4);
    assert_int_equal((int)r.n_victims, 0);
    assert_int_equal(r.n_paused, 0);
    assert_int_equal(r.hot_gpu, 0);   /* the incast is still there, at its receiver */
    fx_near_ms(r.root_drain_s, 6);
    pfc_result_free(&r);
    pfc_opts o = {.stalled_gpu = 0};
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, &o, &r), 0);
    for (int i = FX_F40; i <= FX_F75; i++) assert_true(isinf(r.finish_s[i]));
    fx_near_ms(r.finish_s[FX_F89], 2);
    assert_int_equal(r.n_paused, 7);
    assert_int_equal(r.n_held_gpus, 6);
    pfc_result_free(&r);
}

/* A balanced all-to-all inside leaf 0: every NIC drains at the same time, so nothing is paused. */
static void test_balanced_nothing_paused(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    faults_cfg f = {0};
    gpu_flow v[12];
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j) v[n++] = (gpu_flow){i, j, B, 0, FLOW_RDMA};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, v, (size_t)n, NULL, &r), 0);
    assert_int_equal(r.n_paused, 0);
    assert_int_equal((int)r.n_victims, 0);
    for (int i = 0; i < n; i++) fx_near_ms(r.finish_s[i], 6);   /* 3B per NIC */
    pfc_result_free(&r);
}

/* A degraded NIC (faults.links) is a root like an incast: its sender's other flow waits for it. */
static void test_slow_link_root(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    faults_cfg f = {0};
    f.n_links = 1;
    f.links[0] = (link_fault){.gpu = 2, .kind = LINK_NIC, .factor = 0.25};   /* nic-2 at 12.5 GB/s: B takes 8 ms */
    gpu_flow v[2] = {{1, 2, B, 0, FLOW_RDMA}, {1, 3, B, 0, FLOW_RDMA}};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, v, 2, NULL, &r), 0);
    fx_near_ms(r.finish_lossy_s[1], 4);   /* nic-1 up carries 2B */
    fx_near_ms(r.finish_s[1], 8);
    assert_int_equal(r.hot_gpu, 2);
    assert_int_equal((int)r.n_victims, 1);
    pfc_result_free(&r);
}

/* NCCL's pairwise all-to-all (a2a_pattern.pairwise) on 3 nodes x 8 GPUs (8 rails, one leaf):
 * the 16 GPUs of nodes 1 and 2 send B each to GPU 0 (node 0, rail 0), GPU 9 (node 1, rail 1) sends B
 * to GPU 16 (node 2, rail 0). PXN forwards a node's traffic for rail 0 to its rail-0 GPU over NVLink,
 * so nic-8 up carries 8B + B = 18 ms, nic-16 up 8B = 16 ms, and nic-0 down 16B = 32 ms: the incast.
 * Lossy, 9 -> 16 ends with nic-8 up at 18 ms; lossless, nic-8 up is paused until nic-0 down drains:
 * 32 ms. It never touches GPU 0 and is the only victim. */
static void test_pairwise_pxn_victim(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    c.nodes = 3;
    c.gpus_per_node = c.rails = 8;
    enum { N = 24 };
    int gpus[N];
    double bytes[N * N] = {0};
    for (int i = 0; i < N; i++) gpus[i] = i;
    for (int i = 8; i < N; i++) bytes[i * N + 0] = B;
    bytes[9 * N + 16] = B;
    a2a_pattern pat = {.n = N, .gpus = gpus, .bytes = bytes, .concurrent_groups = 1, .pairwise = 1};
    faults_cfg f = {0};
    pfc_result r;
    assert_int_equal(pfc_spread_a2a(&c, &f, &pat, NULL, &r), 0);
    assert_int_equal(r.hot_gpu, 0);
    assert_true(r.root.cls == FL_NIC_DOWN && r.root.index == 0);
    fx_near_ms(r.root_drain_s, 32);
    assert_int_equal((int)r.n_victims, 1);
    assert_int_equal(r.worst_victim_src, 9);
    assert_int_equal(r.worst_victim_dst, 16);
    fx_near_ms(r.finish_lossy_s[r.worst_victim], 18);
    fx_near_ms(r.finish_s[r.worst_victim], 32);
    assert_true(fabs(r.max_victim_slowdown - 32.0 / 18.0) < 1e-9);
    pfc_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incast_victims),
        cmocka_unit_test(test_stalled_receiver),
        cmocka_unit_test(test_ecn),
        cmocka_unit_test(test_balanced_nothing_paused),
        cmocka_unit_test(test_slow_link_root),
        cmocka_unit_test(test_pairwise_pxn_victim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
