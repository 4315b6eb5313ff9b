/* test_link_loss.c — lossy links (faults.links[].loss_rate, sim/scenario/link_loss.h).
 *
 *   - the goodput closed forms against numbers computed by hand: go-back-N (1 - p) / (1 + p W),
 *     selective 1 - p, no loss exactly 1, and the window W = rate x RTT / MTU of a cluster;
 *   - a lossy link is, to every executor, a link slowed by its goodput: the step of
 *     tests/step_split_case.h with GPU 0's NIC losing packets gives the hand split of the same NIC
 *     degraded by that factor, bit for bit, in the fast executor and at full fidelity (SimGrid);
 *   - a loss composes with a bandwidth factor multiplicatively, and loss_rate 0 leaves the factor
 *     bit-identical;
 *   - the scenario: loss_rate and cluster.retransmission parse, loss_rate is written back only when
 *     set, and a loss outside [0, 1) or on an NVLink is refused (exit 2) naming its JSON path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/exec/step_exec.h"
#include "sim/program/faults.h"
#include "sim/scenario/link_loss.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/exec_full.h"
#include "tests/split_case_child.h"

static void test_goodput_by_hand(void **st) {
    (void)st;
    /* (1 - 1e-4) / (1 + 1e-4 x 100) = 0.9999 / 1.01 = 0.99 */
    assert_float_equal(link_goodput_frac(1e-4, 100, RETX_GO_BACK_N), 0.99, 1e-15);
    /* (1 - 0.01) / (1 + 0.01 x 100) = 0.99 / 2 = 0.495 */
    assert_float_equal(link_goodput_frac(1e-2, 100, RETX_GO_BACK_N), 0.495, 1e-15);
    /* selective: only the lost packet is resent */
    assert_float_equal(link_goodput_frac(1e-4, 100, RETX_SELECTIVE), 0.9999, 1e-15);
    assert_float_equal(link_goodput_frac(1e-2, 100, RETX_SELECTIVE), 0.99, 1e-15);
    /* no loss: exactly 1, whatever the window */
    assert_true(link_goodput_frac(0, 100, RETX_GO_BACK_N) == 1.0);
    assert_true(link_goodput_frac(0, 1e9, RETX_SELECTIVE) == 1.0);
    /* a window of one packet in flight: go-back-N resends the lost packet and one more per loss */
    assert_float_equal(link_goodput_frac(0.5, 1, RETX_GO_BACK_N), 0.5 / 1.5, 1e-15);
    /* go-back-N never beats selective, and the gap grows with the window */
    assert_true(link_goodput_frac(1e-3, 10, RETX_GO_BACK_N) < link_goodput_frac(1e-3, 10, RETX_SELECTIVE));
    assert_true(link_goodput_frac(1e-3, 1000, RETX_GO_BACK_N) < link_goodput_frac(1e-3, 10, RETX_GO_BACK_N));
}

static void test_window_of_cluster(void **st) {
    (void)st;
    /* the H800 preset's NIC: 400 Gb/s = 50e9 B/s, RTT 2 x 3.7 us: 50e9 x 7.4e-6 / 4096 = 90.33203125 */
    cluster_cfg c = {.nic_gbps = 400, .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7}};
    assert_float_equal(link_rtt_s(&c), 7.4e-6, 1e-18);
    assert_float_equal(link_window_pkts(50e9, 7.4e-6, LINK_MTU_B), 90.33203125, 1e-9);
    faults_cfg f = {.n_links = 1};
    f.links[0] = (link_fault){.gpu = 3, .kind = LINK_NIC, .factor = 1, .loss_rate = 1e-4};
    link_state ls = faults_link_state(&c, &f, 3, LINK_NIC);
    assert_true(ls.loss_rate == 1e-4);   /* one fault's rate, exactly */
    assert_float_equal(ls.window_pkts, 90.33203125, 1e-9);
    /* 0.9999 / (1 + 1e-4 x 90.33203125) = 0.9909485603677716 */
    assert_float_equal(ls.goodput_frac, 0.9909485603677716, 1e-13);
    assert_float_equal(faults_link_factor(&c, &f, 3, LINK_NIC), 0.9909485603677716, 1e-13);
    /* another GPU, or its NVLink, is untouched */
    assert_true(faults_link_factor(&c, &f, 2, LINK_NIC) == 1.0);
    assert_true(faults_link_factor(&c, &f, 3, LINK_NVLINK) == 1.0);
    /* 1 in 100: 0.99 / (1 + 0.9033203125) = 0.520143663417137; selective 0.99 */
    f.links[0].loss_rate = 1e-2;
    assert_float_equal(faults_link_factor(&c, &f, 3, LINK_NIC), 0.520143663417137, 1e-13);
    c.retransmission = RETX_SELECTIVE;
    assert_float_equal(faults_link_factor(&c, &f, 3, LINK_NIC), 0.99, 1e-15);
}

static void test_composes_with_factor(void **st) {
    (void)st;
    cluster_cfg c = {.nic_gbps = 400, .latency_us = {.cross_leaf = 3.7}};
    faults_cfg f = {.n_links = 2};
    f.links[0] = (link_fault){.gpu = 5, .kind = LINK_NIC, .factor = 0.5};
    f.links[1] = (link_fault){.gpu = 5, .kind = LINK_NIC, .factor = 1, .loss_rate = 1e-2};
    /* the window at the degraded rate: 25e9 x 7.4e-6 / 4096 = 45.166015625 packets;
     * 0.5 x 0.99 / (1 + 0.45166015625) = 0.340987... */
    double want = 0.5 * 0.99 / (1.0 + 0.45166015625);
    assert_float_equal(faults_link_factor(&c, &f, 5, LINK_NIC), want, 1e-15);
    /* two losses on one link are independent: 1 - (1 - 0.01)(1 - 0.02) = 0.0298 */
    f.links[0] = (link_fault){.gpu = 5, .kind = LINK_NIC, .factor = 1, .loss_rate = 0.02};
    assert_float_equal(faults_link_state(&c, &f, 5, LINK_NIC).loss_rate, 0.0298, 1e-15);
    /* loss_rate 0: the factor alone, bit for bit */
    f.n_links = 1;
    f.links[0] = (link_fault){.gpu = 5, .kind = LINK_NIC, .factor = 0.3, .loss_rate = 0};
    assert_true(faults_link_factor(&c, &f, 5, LINK_NIC) == 0.3);
    assert_false(faults_any_lossy(&f));
    f.links[0].loss_rate = 1e-9;
    assert_true(faults_any_lossy(&f));
}

/* The split case's step with GPU 0's NIC losing packets against the hand split of that NIC degraded
 * by the goodput, in both executors, and against the same NIC degraded by that factor. */
static void run_lossy_split(retx_kind scheme, double loss_p) {
    scenario s;
    split_case_scenario(&s);
    s.cluster.retransmission = scheme;
    s.faults.n_links = 1;
    s.faults.links[0] = (link_fault){.gpu = 0, .kind = LINK_NIC, .factor = 1, .loss_rate = loss_p};
    moe_error err = {0};
    program *p = NULL;
    if (program_build(&s, &p, &err)) fail_msg("%s", err.msg);
    /* the split case's fabric runs at line rate (tests/data/costmodel-line-rate.json): 6000 Gb/s,
     * RTT 2 x 1000 us: W = 750e9 x 2e-3 / 4096 = 366210.9375 packets */
    scenario fab;
    if (sg_fabric_scenario(&s, &fab, &err)) fail_msg("%s", err.msg);
    double g = faults_link_factor(&fab.cluster, &fab.faults, 0, LINK_NIC);
    double g_hand = scheme == RETX_SELECTIVE ? 1.0 - loss_p : (1.0 - loss_p) / (1.0 + loss_p * 366210.9375);
    assert_float_equal(g, g_hand, 1e-12);
    assert_true(p->faults.nic_factor[0] < 1.0 && p->faults.n_link_ranks == 1);
    step_split want[4];
    double T = split_case_expected_faulty(p, 1, g, want);
    program_free(p);
    printf("  %s p = %g: goodput %.6f, step %.6f s\n", scheme == RETX_SELECTIVE ? "selective" : "go-back-n", loss_p,
           g, T);
    child_step fast = split_case_step_in_child(&s, CHILD_FAST);
    child_step full = split_case_step_in_child(&s, CHILD_FULL);
    split_case_check("fast, lossy NIC", fast.step_s, fast.split, want, T, 1e-9);
    split_case_check("full fidelity, lossy NIC", full.step_s, full.split, want, T, 1e-9);

    /* the same NIC degraded by the goodput as a plain factor: the same step time, bit for bit */
    scenario s2;
    split_case_scenario(&s2);
    s2.faults.n_links = 1;
    s2.faults.links[0] = (link_fault){.gpu = 0, .kind = LINK_NIC, .factor = g};
    assert_true(split_case_step_in_child(&s2, CHILD_FAST).step_s == fast.step_s);

    /* and slower than healthy: the lossy NIC is on the step's critical path */
    double T_healthy;
    program *ph = split_case_program(&s2, want, &T_healthy);
    assert_true(T > T_healthy * 1.001);
    program_free(ph);
}

static void test_step_slows_by_goodput(void **st) {
    (void)st;
    run_lossy_split(RETX_GO_BACK_N, 1e-6);
    run_lossy_split(RETX_SELECTIVE, 0.25);
}

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
    if (parse("{\"cluster\": {\"retransmission\": \"selective\"}, \"faults\": {\"links\": "
              "[{\"gpu\": 1, \"kind\": \"nic\", \"factor\": 1, \"loss_rate\": 1e-4}, {\"gpu\": 2, \"kind\": \"nic\", "
              "\"factor\": 0.5}]}}", &s, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.cluster.retransmission, RETX_SELECTIVE);
    assert_true(s.faults.links[0].loss_rate == 1e-4);
    assert_true(s.faults.links[1].loss_rate == 0);
    cJSON *j = scenario_to_json(&s);
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "faults"), "links");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(links, 0), "loss_rate"));
    /* written only when set: a scenario without losses reads and writes as before */
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(links, 1), "loss_rate"));
    const cJSON *retx = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "cluster"), "retransmission");
    assert_string_equal(cJSON_GetStringValue(retx), "selective");
    cJSON_Delete(j);
    /* the default: go-back-n */
    if (parse("{}", &s, &err)) fail_msg("%s", err.msg);
    assert_int_equal(s.cluster.retransmission, RETX_GO_BACK_N);
}

static void expect_bad(const char *json, const char *path, const char *expect) {
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
    expect_bad("{\"faults\": {\"links\": [{\"gpu\": 0, \"kind\": \"nic\", \"factor\": 1, \"loss_rate\": 1}]}}",
               "faults.links[0].loss_rate", "got 1");
    expect_bad("{\"faults\": {\"links\": [{\"gpu\": 0, \"kind\": \"nic\", \"factor\": 1, \"loss_rate\": -0.1}]}}",
               "faults.links[0].loss_rate", "got -0.1");
    expect_bad("{\"faults\": {\"links\": [{\"gpu\": 0, \"kind\": \"nvlink\", \"factor\": 1, \"loss_rate\": 0.01}]}}",
               "faults.links[0].loss_rate", "NIC links only");
    expect_bad("{\"cluster\": {\"retransmission\": \"selective-repeat\"}}", "cluster.retransmission", "selective");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goodput_by_hand),
        cmocka_unit_test(test_window_of_cluster),
        cmocka_unit_test(test_composes_with_factor),
        cmocka_unit_test(test_step_slows_by_goodput),
        cmocka_unit_test(test_scenario_fields),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
