/* test_uplink_fault.c — a link fault on a leaf's spine-facing uplink (faults.links kind "uplink",
 * addressed by rail and leaf: the fabric's link up-rR-lL, platforms/fabric_geometry.h).
 *
 *   - the window and goodput of a lossy uplink are a NIC's (one sender's queue pair at the NIC's
 *     line rate x factor, RTT 2 x cross_leaf, 4096 B MTU), and a healthy uplink's factor is exactly 1;
 *   - by hand: two nodes under different leaves, one 64 MB flow forced over the faulted uplink at
 *     factor 0.5 takes twice the time of the healthy flow (the uplink, one NIC wide, is then the
 *     bottleneck), in SimGrid and in the closed form, in both directions; a flow of another rail is
 *     untouched, and SimGrid's link runs at half its bandwidth;
 *   - the step of tests/step_split_case.h with its nodes under two leaves and the uplink of rail 0
 *     degraded: stage 0's gradient collectives cross it, so the hand split is the one of GPU 0's NIC
 *     degraded by the same factor, in the fast executor (with and without its replica shortcut) and at
 *     full fidelity;
 *   - the memo under faults: an all-to-all that no fault can reach keeps its healthy signature (its
 *     twin elsewhere is a hit, with the same time to the bit), one that holds a faulted NIC, or
 *     whose concurrent copy does, is simulated where it is (slower, in the first case);
 *   - the scenario: an uplink fault reads and writes back without a gpu, a NIC fault without rail and
 *     leaf; a missing, out-of-range or foreign address key exits 2 naming its JSON path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platforms/fabric_geometry.h"
#include "platforms/platform_xml.h"
#include "sim/exec/comm.h"
#include "sim/exec/step_exec.h"
#include "sim/scenario/link_loss.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/exec_full.h"
#include "sim/simgrid/rail_fabric.h"
#include "tests/fabric_fixtures.h"
#include "tests/split_case_child.h"

#define MB 1e6
#define NIC 50e9         /* B/s: the H800 preset's 400 Gb/s (the fixture runs links at line rate) */
#define LAT_SPINE 3.7e-6 /* s: the preset's latency_us.cross_leaf */

static link_fault uplink(int rail, int leaf, double factor, double loss) {
    return (link_fault){.gpu = -1, .kind = LINK_UPLINK, .factor = factor, .loss_rate = loss, .rail = rail, .leaf = leaf};
}

static void test_window_is_a_nics(void **st) {
    (void)st;
    /* the H800 preset's NIC: 400 Gb/s = 50e9 B/s, RTT 2 x 3.7 us: W = 50e9 x 7.4e-6 / 4096 = 90.33203125 */
    cluster_cfg c = {.nic_gbps = 400, .rails = 8, .nodes = 16, .leaf_down_ports = 8, .latency_us = {.cross_leaf = 3.7}};
    faults_cfg f = {.n_links = 1};
    f.links[0] = uplink(3, 1, 1, 1e-2);
    link_state ls = faults_uplink_state(&c, &f, 3, 1);
    assert_float_equal(ls.window_pkts, 90.33203125, 1e-9);
    /* go-back-N: 0.99 / (1 + 0.01 x 90.33203125) = 0.520143663417137 (test_link_loss.c's NIC figure) */
    assert_float_equal(faults_uplink_factor(&c, &f, 3, 1), 0.520143663417137, 1e-13);
    /* the other uplinks, and every GPU's NIC, are healthy: exactly 1 */
    assert_true(faults_uplink_factor(&c, &f, 3, 0) == 1.0 && faults_uplink_factor(&c, &f, 2, 1) == 1.0);
    for (int g = 0; g < 128; g++) assert_true(faults_link_factor(&c, &f, g, LINK_NIC) == 1.0);
    /* a NIC fault never lands on an uplink */
    f.links[0] = (link_fault){.gpu = 3, .kind = LINK_NIC, .factor = 0.5, .rail = 0, .leaf = 0};
    assert_true(faults_uplink_factor(&c, &f, 0, 0) == 1.0);
    /* a factor and a loss compose: 0.5 x (0.99 / (1 + 0.01 x 45.166015625)) */
    f.links[0] = uplink(3, 1, 0.5, 1e-2);
    assert_float_equal(faults_uplink_factor(&c, &f, 3, 1), 0.5 * 0.99 / (1 + 0.45166015625), 1e-13);
    /* the hop the closed form and SimGrid read: uplink index rail x leaves per rail + leaf = 3 x 2 + 1 */
    assert_float_equal(fabric_hop_Bps(&c, &f, (fabric_hop){FL_UPLINK_DOWN, 7}),
                       8 * NIC * 0.5 * 0.99 / (1 + 0.45166015625), 1e-3);
    assert_true(fabric_hop_Bps(&c, &f, (fabric_hop){FL_UPLINK_UP, 6}) == 8 * NIC);
}

/* ---- by hand: one flow over the faulted uplink ------------------------------------------------------ */
static int fails;
static void near(const char *what, double got, double want) {
    int ok = fabs(got - want) <= 1e-6 * want;
    printf("  %-50s got %10.3f us  hand %10.3f us  %s\n", what, got * 1e6, want * 1e6, ok ? "ok" : "MISMATCH");
    if (!ok) fails++;
}

static int child_p2p_doubles(void) {
    /* 2 nodes, one per leaf, non-blocking: each leaf's uplink on a rail is one NIC wide (50 GB/s), so
     * the flow 3 -> 11 (rail 3, leaf 0 -> leaf 1) drains at min(NIC, uplink): 64 MB / 50 GB/s healthy,
     * 64 MB / 25 GB/s with up-r3-l0 at 0.5. */
    scenario s = fx_fabric("test_uplink_fault", 2, 1, 1.0);
    s.faults.n_links = 1;
    s.faults.links[0] = uplink(3, 0, 0.5, 0);
    comm_model sg, an;
    if (fx_both_models(&s, &sg, &an)) return 1;
    const double slow = 64 * MB / (NIC / 2) + LAT_SPINE, healthy = 64 * MB / NIC + LAT_SPINE;
    near("3 -> 11 over up-r3-l0_UP at 0.5 [simgrid]", sg.p2p_s(sg.ctx, 3, 11, 64 * MB), slow);
    near("3 -> 11 over up-r3-l0_UP at 0.5 [analytic]", an.p2p_s(an.ctx, 3, 11, 64 * MB), slow);
    near("11 -> 3 over up-r3-l0_DOWN at 0.5 [simgrid]", sg.p2p_s(sg.ctx, 11, 3, 64 * MB), slow);
    near("11 -> 3 over up-r3-l0_DOWN at 0.5 [analytic]", an.p2p_s(an.ctx, 11, 3, 64 * MB), slow);
    near("4 -> 12, rail 4: healthy [simgrid]", sg.p2p_s(sg.ctx, 4, 12, 64 * MB), healthy);
    near("4 -> 12, rail 4: healthy [analytic]", an.p2p_s(an.ctx, 4, 12, 64 * MB), healthy);
    /* the platform's own links: the faulted uplink at half of 50 GB/s, both directions, its twin whole */
    double up = rail_fabric_link_bandwidth("up-r3-l0_UP"), down = rail_fabric_link_bandwidth("up-r3-l0_DOWN");
    double other = rail_fabric_link_bandwidth("up-r3-l1_UP");
    printf("  up-r3-l0 %.4g / %.4g B/s, up-r3-l1 %.4g B/s\n", up, down, other);
    if (fabs(up - NIC / 2) > 1 || fabs(down - NIC / 2) > 1 || fabs(other - NIC) > 1) fails++;
    an.destroy(an.ctx);
    sg.destroy(sg.ctx);
    return fails != 0;
}

static void test_p2p_doubles(void **st) {
    (void)st;
    assert_int_equal(fx_run_in_child(child_p2p_doubles), 0);
}

/* The XML platform carries the fault too (the dump of the same fabric). */
static void test_xml_dump(void **st) {
    (void)st;
    scenario s = fx_fabric("test_uplink_fault", 2, 1, 2.0);
    s.faults.n_links = 1;
    s.faults.links[0] = uplink(5, 1, 0.2, 0);
    char path[128];
    snprintf(path, sizeof path, "/tmp/moesim_test_uplink_%ld.xml", (long)getpid());
    moe_error err = {0};
    assert_int_equal(rail_fabric_write_xml(&s, path, &err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char xml[1 << 20];
    size_t n = fread(xml, 1, sizeof xml - 1, f);
    xml[n] = '\0';
    fclose(f);
    remove(path);
    /* 1 port x 50 GB/s / 2 = 25 GB/s, x 0.2 = 5 GB/s; its neighbour keeps 25 GB/s */
    assert_non_null(strstr(xml, "<link id=\"up-r5-l1\" bandwidth=\"5000000000Bps\""));
    assert_non_null(strstr(xml, "<link id=\"up-r5-l0\" bandwidth=\"25000000000Bps\""));
}

/* Nodes 0 and 1 under leaves 0 and 1 of a non-blocking fabric: each uplink is one NIC wide and
 * latency_us.cross_leaf = same_leaf (the uplinks add none), so stage 0's ring (GPU 0 <-> GPU 2, rail
 * 0) over up-r0-l<leaf> at factor n takes what it takes over GPU 0's NIC at n. */
static void run_split_uplink(int leaf, double n) {
    scenario s;
    split_case_scenario(&s);
    s.cluster.leaf_down_ports = 1;
    s.faults.n_links = 1;
    s.faults.links[0] = uplink(0, leaf, n, 0);
    moe_error err = {0};
    program *p = NULL;
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    step_split want[4], healthy[4];
    double T = split_case_expected_faulty(p, 1, n, want), T_healthy = split_case_expected_faulty(p, 1, 1, healthy);
    /* the faulted uplink is on the step's critical path: the case can tell a fault from none */
    assert_true(T > T_healthy * 1.01);
    /* no rank's own links are faulty; the replica under the faulted leaf is simulated */
    assert_int_equal(p->faults.n_link_ranks, 0);
    assert_true(p->faults.replica_faulty[leaf]);
    program_free(p);
    printf("  up-r0-l%d at %g: step %.6f ms by hand\n", leaf, n, T * 1e3);
    child_step fast = split_case_step_in_child(&s, CHILD_FAST);
    child_step plain = split_case_step_in_child(&s, CHILD_FAST_PER_REPLICA);
    child_step full = split_case_step_in_child(&s, CHILD_FULL);
    split_case_check("fast, faulted uplink", fast.step_s, fast.split, want, T, 1e-9);
    split_case_check("fast, every replica", plain.step_s, plain.split, want, T, 1e-9);
    split_case_check("full, faulted uplink", full.step_s, full.split, want, T, 1e-9);
}

static void test_step_split(void **st) {
    (void)st;
    run_split_uplink(0, 0.5);
    run_split_uplink(1, 0.25);
}

/* ---- the scenario ----------------------------------------------------------------------------------- */
static int parse(const char *json, scenario *s, moe_error *err) {
    sweep *sw = NULL;
    int rc = scenario_parse("t.json", json, s, &sw, err);
    sweep_free(sw);
    return rc;
}

static void test_scenario_fields(void **st) {
    (void)st;
    scenario s;
    moe_error err = {0};
    if (parse("{\"faults\": {\"links\": [{\"kind\": \"uplink\", "
              "\"rail\": 3, \"leaf\": 1, \"factor\": 1, \"loss_rate\": 1e-4}, {\"gpu\": 2, \"kind\": \"nic\", \"factor\": 0.5}]}}",
              &s, &err) ||
        scenario_validate(&s, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.faults.links[0].kind, LINK_UPLINK);
    assert_int_equal(s.faults.links[0].rail, 3);
    assert_int_equal(s.faults.links[0].leaf, 1);
    assert_int_equal(s.faults.links[0].gpu, -1);
    assert_int_equal(s.faults.links[1].rail, -1);
    cJSON *j = scenario_to_json(&s);
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "faults"), "links");
    const cJSON *u = cJSON_GetArrayItem(links, 0), *nic = cJSON_GetArrayItem(links, 1);
    assert_null(cJSON_GetObjectItemCaseSensitive(u, "gpu"));
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(u, "leaf")), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(u, "kind")), "uplink");
    /* a NIC fault is written as before: gpu, kind, factor and nothing else */
    assert_int_equal(cJSON_GetArraySize(nic), 3);
    /* and what is written reads back the same */
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    scenario back;
    if (parse(t, &back, &err) || scenario_validate(&back, &err)) fail_msg("%s", err.msg);
    free(t);
    assert_memory_equal(&back.faults, &s.faults, sizeof s.faults);
}

static void expect_bad(const char *links, const char *path, const char *expect) {
    char json[512];
    snprintf(json, sizeof json, "{\"faults\": {\"links\": [%s]}}", links);
    scenario s;
    moe_error err = {0};
    int rc = parse(json, &s, &err);
    if (rc == 0) rc = scenario_validate(&s, &err);
    printf("  %s\n", err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, expect));
}

static void test_bad_input(void **st) {
    (void)st;
    /* the default cluster (h800-8rail): 512 nodes, 32 per leaf: 16 leaves per rail; 8 rails */
    expect_bad("{\"kind\": \"uplink\", \"rail\": 0, \"leaf\": 16, \"factor\": 0.5}", "faults.links[0].leaf", "got 16");
    expect_bad("{\"kind\": \"uplink\", \"rail\": 0, \"leaf\": 16, \"factor\": 0.5}", "faults.links[0].leaf", "0..15");
    expect_bad("{\"kind\": \"uplink\", \"rail\": 8, \"leaf\": 0, \"factor\": 0.5}", "faults.links[0].rail", "0..7");
    expect_bad("{\"kind\": \"uplink\", \"rail\": 1, \"factor\": 0.5}", "faults.links[0]", "a \"leaf\" key");
    expect_bad("{\"kind\": \"uplink\", \"leaf\": 1, \"factor\": 0.5}", "faults.links[0]", "a \"rail\" key");
    expect_bad("{\"kind\": \"uplink\", \"rail\": -1, \"leaf\": 0, \"factor\": 0.5}", "faults.links[0].rail", "got -1");
    expect_bad("{\"kind\": \"uplink\", \"gpu\": 3, \"rail\": 0, \"leaf\": 0, \"factor\": 0.5}", "faults.links[0].gpu",
               "an uplink by \"rail\" and \"leaf\"");
    expect_bad("{\"gpu\": 3, \"kind\": \"nic\", \"leaf\": 0, \"factor\": 0.5}", "faults.links[0].leaf", "no \"leaf\" key");
    expect_bad("{\"kind\": \"nic\", \"factor\": 0.5}", "faults.links[0]", "a \"gpu\" key");
    expect_bad("{\"kind\": \"uplink\", \"rail\": 0, \"leaf\": 0, \"factor\": 1, \"loss_rate\": 1}",
               "faults.links[0].loss_rate", "got 1");
}

/* 16 nodes, 4 per leaf, rail 0's NIC of node 5 at half rate. Pairwise all-to-alls of 16 MB per pair
 * over rail 0 of 4 nodes: A (nodes 0-3) and B (8-11) reach no fault, C (4-7) holds node 5, D is A
 * with one concurrent copy (on nodes 4-7). */
static double quad(comm_model *m, int first, int concurrent) {
    int gpus[4];
    double bytes[16];
    for (int i = 0; i < 4; i++) gpus[i] = (first + i) * 8;
    for (int i = 0; i < 16; i++) bytes[i] = i / 4 == i % 4 ? 0 : 16e6;
    a2a_pattern p = {.n = 4, .gpus = gpus, .bytes = bytes, .concurrent_groups = concurrent, .pairwise = 1};
    return m->a2a_s(m->ctx, &p);
}

static int child_memo_under_faults(void) {
    scenario s = fx_fabric("test_uplink_fault", 16, 4, 1.0);
    s.faults.n_links = 1;
    s.faults.links[0] = (link_fault){.kind = LINK_NIC, .gpu = 5 * 8, .factor = 0.5};
    comm_model sg, an;
    if (fx_both_models(&s, &sg, &an)) return 1;
    double a = quad(&sg, 0, 1);
    long sim_a = sg_comm_get_stats(&sg).simulated;
    double b = quad(&sg, 8, 1);
    long sim_b = sg_comm_get_stats(&sg).simulated;
    double c = quad(&sg, 4, 1);
    long sim_c = sg_comm_get_stats(&sg).simulated;
    double d = quad(&sg, 0, 2);
    long sim_d = sg_comm_get_stats(&sg).simulated;
    printf("  A %.1f us (%ld simulated), B %.1f us (%ld), C %.1f us (%ld), A with a copy over the fault %.1f us (%ld)\n",
           a * 1e6, sim_a, b * 1e6, sim_b, c * 1e6, sim_c, d * 1e6, sim_d);
    int bad = !(a == b) || sim_b != sim_a || !(c > a) || sim_c != sim_a + 1 || sim_d != sim_c + 1;
    /* by hand: A is NIC-bound, 3 x 16 MB / 50 GB/s + the cross-leaf latency; C's node 5 sends and
     * receives 48 MB at 25 GB/s */
    bad |= fabs(a - (48e6 / 50e9 + 3.7e-6)) > 0.01 * a || fabs(c - (48e6 / 25e9 + 3.7e-6)) > 0.01 * c;
    /* B simulated first, at its own place, gives A's time to the bit: the duration is the signature's */
    sg_comm_forget();
    double b2 = quad(&sg, 8, 1);
    printf("  B simulated first: %.17g s, A's %.17g s\n", b2, a);
    bad |= !(b2 == a);
    an.destroy(an.ctx);
    sg.destroy(sg.ctx);
    return bad;
}

static void test_memo_under_faults(void **st) {
    (void)st;
    assert_int_equal(fx_run_in_child(child_memo_under_faults), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_is_a_nics),
        cmocka_unit_test(test_p2p_doubles),
        cmocka_unit_test(test_xml_dump),
        cmocka_unit_test(test_step_split),
        cmocka_unit_test(test_memo_under_faults),
        cmocka_unit_test(test_scenario_fields),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
