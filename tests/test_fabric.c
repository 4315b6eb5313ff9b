/* test_fabric.c — the rail-optimized fabric on SimGrid: routes, bandwidths, latencies, XML dump.
 *
 * Truths: the seed 003 topology written out by hand (GPU k of every node on rail k; NIC -> leaf ->
 * NIC within a leaf, via the rail's spine across leaves; NVLink only inside a node) and the H800
 * preset's numbers. One platform per process: every case runs in a forked child.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/dynar.h>

#include "platforms/platform_xml.h"
#include "sim/simgrid/rail_fabric.h"
#include "sim/scenario/presets.h"
#include "tests/fabric_fixtures.h"

static int fails;
/* The route src -> dst must be exactly `want` (space-separated link names), latency `lat_us`. */
static void expect_route(sg_host_t src, sg_host_t dst, const char *want, double lat_us) {
    char names[16][64], got[1024] = "";
    double lat = 0;
    int n = rail_fabric_route(src, dst, names, 16, &lat);
    for (int i = 0; i < n && i < 16; i++) {
        strcat(got, i ? " " : "");
        strcat(got, names[i]);
    }
    int ok = strcmp(got, want) == 0 && fabs(lat * 1e6 - lat_us) < 1e-9;
    printf("  %s -> %s: %s (%.2f us) %s\n", sg_host_get_name(src), sg_host_get_name(dst), got, lat * 1e6,
           ok ? "ok" : "MISMATCH");
    if (!ok) {
        printf("    expected: %s (%.2f us)\n", want, lat_us);
        fails++;
    }
}

static int child_routes(void) {
    /* 64 nodes, 32 per leaf: 2 leaves per rail; 2:1 oversubscribed. */
    scenario s = fx_fabric("test_fabric", 64, 32, 2.0);
    moe_error err;
    if (rail_fabric_init(&s, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
#define GPU(n, k) rail_fabric_gpu_host((n) * 8 + (k))
    /* same node: NVLink only */
    expect_route(GPU(0, 0), GPU(0, 5), "nvl-0_UP nvl-5_DOWN", 3.3);
    expect_route(GPU(63, 7), GPU(63, 1), "nvl-511_UP nvl-505_DOWN", 3.3);
    /* same rail, same leaf (nodes 3 and 30 under leaf 0): NIC -> leaf -> NIC */
    expect_route(GPU(3, 2), GPU(30, 2), "nic-26_UP nic-242_DOWN", 2.8);
    /* same rail, other leaf (node 40 under leaf 1): via the rail's spine */
    expect_route(GPU(3, 2), GPU(40, 2), "nic-26_UP up-r2-l0_UP spine-r2 up-r2-l1_DOWN nic-322_DOWN", 3.7);
    expect_route(GPU(40, 2), GPU(3, 2), "nic-322_UP up-r2-l1_UP spine-r2 up-r2-l0_DOWN nic-26_DOWN", 3.7);
    /* other rail, other node: NVLink to the rail of the destination first (PXN) */
    expect_route(GPU(3, 2), GPU(4, 6), "nvl-26_UP nvl-30_DOWN nic-30_UP nic-38_DOWN", 3.3 + 2.8);
    /* storage */
    expect_route(GPU(3, 2), rail_fabric_node_host(3), "pcie-26_UP", 0);
    expect_route(GPU(3, 2), rail_fabric_storage_host(), "pcie-26_UP snic-3_UP pfs", 1.4);

    /* Bandwidths: NVLink 200 GB/s (the H800 line rate), NIC 50 GB/s, leaf uplinks 32 x 50 / 2 = 800 GB/s. */
    struct { const char *name; double Bps; } bw[] = {
        {"nvl-0_UP", 200e9}, {"nic-26_DOWN", 50e9}, {"up-r2-l1_UP", 800e9}, {"pfs", 500e9}, {"pcie-3_UP", 64e9}};
    for (size_t i = 0; i < sizeof bw / sizeof bw[0]; i++) {
        double got = rail_fabric_link_bandwidth(bw[i].name);
        printf("  %-12s %.4g B/s (want %.4g)\n", bw[i].name, got, bw[i].Bps);
        if (fabs(got - bw[i].Bps) > 1e-6 * bw[i].Bps) fails++;
    }
    /* A second platform in the same process is refused; the same one is a no-op. */
    if (rail_fabric_init(&s, &err) != 0) fails++;
    scenario other = fx_fabric("test_fabric", 8, 32, 1.0);
    if (rail_fabric_init(&other, &err) != EXIT_RUNTIME) fails++;
    return fails != 0;
}

static int child_degraded(void) {
    scenario s = fx_fabric("test_fabric", 2, 32, 1.0);
    s.faults.n_links = 2;
    s.faults.links[0] = (link_fault){.gpu = 9, .kind = LINK_NIC, .factor = 0.5};
    s.faults.links[1] = (link_fault){.gpu = 9, .kind = LINK_NVLINK, .factor = 0.25};
    moe_error err;
    if (rail_fabric_init(&s, &err)) return 1;
    double nic = rail_fabric_link_bandwidth("nic-9_UP"), nvl = rail_fabric_link_bandwidth("nvl-9_DOWN");
    double ok_nic = rail_fabric_link_bandwidth("nic-10_UP");
    printf("  degraded GPU 9: NIC %.4g, NVLink %.4g; healthy NIC %.4g B/s\n", nic, nvl, ok_nic);
    return !(fabs(nic - 25e9) < 1 && fabs(nvl - 50e9) < 1 && fabs(ok_nic - 50e9) < 1);
}

static char g_xml[256];
/* Load the XML in a fresh engine and check routes against the hand-written topology. */
static int child_load_xml(void) {
    int argc = 2;
    char a0[] = "test", a1[] = "--log=root.thres:warning";
    char *argv[] = {a0, a1, NULL};
    simgrid_init(&argc, argv);
    simgrid_load_platform(g_xml);
    struct { const char *src, *dst, *want; } r[] = {
        {"gpu-0", "gpu-5", "nvl-0_UP nvl-5_DOWN"},
        {"gpu-3", "gpu-11", "nic-3_UP up-r3-l0_UP spine-r3 up-r3-l1_DOWN nic-11_DOWN"},
        {"gpu-11", "gpu-3", "nic-11_UP up-r3-l1_UP spine-r3 up-r3-l0_DOWN nic-3_DOWN"},
        {"gpu-2", "gpu-14", "nvl-2_UP nvl-6_DOWN nic-6_UP up-r6-l0_UP spine-r6 up-r6-l1_DOWN nic-14_DOWN"},
        {"gpu-9", "pfs", "pcie-9_UP snic-1_UP pfs"},
        {"pfs", "gpu-9", "pfs snic-1_DOWN pcie-9_DOWN"},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
        sg_host_get_route(sg_host_by_name(r[i].src), sg_host_by_name(r[i].dst), links);
        char got[1024] = "";
        unsigned k;
        sg_link_t l;
        xbt_dynar_foreach (links, k, l) {
            strcat(got, k ? " " : "");
            strcat(got, sg_link_get_name(l));
        }
        xbt_dynar_free(&links);
        int ok = strcmp(got, r[i].want) == 0;
        printf("  xml %s -> %s: %s %s\n", r[i].src, r[i].dst, got, ok ? "ok" : "MISMATCH");
        if (!ok) fails++;
    }
    /* The 2:1 oversubscribed uplink of a 1-port leaf: 25 GB/s; a degraded NIC from faults.links. */
    double up = sg_link_get_bandwidth(sg_link_by_name("up-r0-l1_UP")), nic = sg_link_get_bandwidth(sg_link_by_name("nic-4_UP"));
    printf("  xml up-r0-l1_UP %.4g B/s (want 2.5e10), nic-4_UP %.4g (want 1e10)\n", up, nic);
    if (fabs(up - 25e9) > 1 || fabs(nic - 10e9) > 1) fails++;
    return fails != 0;
}

static void test_routes(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_routes), 0); }
static void test_degraded_links(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_degraded), 0); }

static void test_xml_dump_loads(void **state) {
    (void)state;
    scenario s = fx_fabric("test_fabric", 2, 1, 2.0); /* one node per leaf: every inter-node route crosses a spine */
    s.faults.n_links = 1;
    s.faults.links[0] = (link_fault){.gpu = 4, .kind = LINK_NIC, .factor = 0.2};
    snprintf(g_xml, sizeof g_xml, "/tmp/moesim_test_fabric_%ld.xml", (long)getpid());
    moe_error err;
    assert_int_equal(rail_fabric_write_xml(&s, g_xml, &err), 0);
    assert_int_equal(fx_run_in_child(child_load_xml), 0);
    remove(g_xml);
}

static void test_bad_clusters(void **state) {
    (void)state;
    moe_error err;
    scenario s = fx_fabric("test_fabric", 2, 32, 1.0);
    s.cluster.rails = 4;
    assert_int_equal(rail_fabric_write_xml(&s, "/tmp/never.xml", &err), EXIT_BADINPUT);
    printf("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "cluster"));
    s = fx_fabric("test_fabric", 64, 32, 1.0); /* 512 GPUs: too many routes for the XML form */
    assert_int_equal(rail_fabric_write_xml(&s, "/tmp/never.xml", &err), EXIT_BADINPUT);
    printf("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "cluster.nodes"));
    assert_int_equal(access("/tmp/never.xml", F_OK), -1);
}

static int child_bad_init(void) {
    scenario s = fx_fabric("test_fabric", 2, 32, 0.5);
    moe_error err;
    int rc = rail_fabric_init(&s, &err);
    printf("  %s\n", err.msg);
    return !(rc == EXIT_BADINPUT && strstr(err.msg, "cluster.oversubscription"));
}
static void test_bad_init(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_bad_init), 0); }

/* The fabric holds a cluster to the scenario's own rules (scenario_check_cluster, the one function
 * both use): it refuses what scenario_validate refuses, in the same words. 2 nodes x 8 GPUs
 * (h800-8rail): 4 rails are not one per GPU; an NVLink domain of 12 GPUs is no whole number of 8-GPU
 * nodes, one of 32 does not divide the 16 GPUs; one of 16 (both nodes) is a fabric. */
static const struct {
    int rails, domain_gpus;
    const char *refusal;
} cluster_cases[] = {
    {4, 0, "cluster.rails: got 4"},
    {8, 12, "cluster.nvlink_domain_gpus: got 12"},
    {8, 32, "cluster.nvlink_domain_gpus: got 32"},
};

static scenario cluster_case(int i) {
    scenario s = fx_fabric("test_fabric", 2, 32, 1.0);
    s.cluster.rails = cluster_cases[i].rails;
    s.cluster.nvlink_domain_gpus = cluster_cases[i].domain_gpus;
    return s;
}

static int child_init_refuses_rails(void) {
    scenario s = cluster_case(0);
    moe_error fab, scn;
    int rc = rail_fabric_init(&s, &fab);
    printf("  %s\n", fab.msg);
    return !(rc == EXIT_BADINPUT && scenario_check_cluster(&s, &scn) == EXIT_BADINPUT &&
             strcmp(fab.msg, scn.msg) == 0 && strstr(fab.msg, cluster_cases[0].refusal));
}

static void test_cluster_rules_are_the_scenarios(void **state) {
    (void)state;
    char never[64];
    snprintf(never, sizeof never, "/tmp/moesim_test_fabric_never_%ld.xml", (long)getpid());
    for (int i = 0; i < (int)(sizeof cluster_cases / sizeof cluster_cases[0]); i++) {
        scenario s = cluster_case(i);
        moe_error fab, scn;
        assert_int_equal(rail_fabric_write_xml(&s, never, &fab), EXIT_BADINPUT);
        printf("  %s\n", fab.msg);
        assert_non_null(strstr(fab.msg, cluster_cases[i].refusal));
        assert_int_equal(scenario_check_cluster(&s, &scn), EXIT_BADINPUT);
        assert_string_equal(fab.msg, scn.msg);
    }
    assert_int_equal(access(never, F_OK), -1);
    scenario s = fx_fabric("test_fabric", 2, 32, 1.0);
    s.cluster.nvlink_domain_gpus = 16;
    moe_error err;
    char xml[64];
    snprintf(xml, sizeof xml, "/tmp/moesim_test_fabric_nvl16_%ld.xml", (long)getpid());
    assert_int_equal(rail_fabric_write_xml(&s, xml, &err), 0);
    remove(xml);
    assert_int_equal(fx_run_in_child(child_init_refuses_rails), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),         cmocka_unit_test(test_degraded_links),
        cmocka_unit_test(test_xml_dump_loads), cmocka_unit_test(test_bad_clusters),
        cmocka_unit_test(test_bad_init),       cmocka_unit_test(test_cluster_rules_are_the_scenarios),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
