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
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/exec/comm.h"
#include "sim/exec/pfc_spread.h"
#include "tests/fabric_fixtures.h"

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
    assert_int_equal(pfc_a2a_pauses(&s->cluster, &s->faults, ps, rev, 2, own, pause), 0);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_victim_group_paused),
        cmocka_unit_test(test_nothing_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
