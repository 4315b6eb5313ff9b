/* test_transport.c — cluster.transport, cluster.stall_discard_ms and the queue pair's retries
 * (sim/exec/pfc_spread.h, sim/exec/step_exec.h step_timeout, sim/scenario/link_loss.h), by hand.
 *
 * The fabric of test_pfc_spread.c (fx_one_rail): 12 single-GPU nodes on one rail, 4 per leaf, NIC
 * 50 GB/s, leaf uplink bundle 200 GB/s, latencies 0; B = 100 MB (2 ms on a NIC, 0.5 ms on a bundle).
 * GPUs 4, 5, 6 send B each to GPU 0; GPU 7 sends B to GPU 1 and B to GPU 5; GPU 8 sends B to GPU 9.
 *
 * GPU 0 stops draining and the switch discards its queue after T = 100 ms. Until then nic-0 down
 * holds everything: the ports upstream of it send nothing (up-l0 down, up-l1 up, nic-4..7 up). At T
 * the queue bound for GPU 0 is dropped and each port then drains its own bytes: up-l0 down and up-l1
 * up 4B / 200 GB/s = 2 ms, nic-7 up 2B = 4 ms. So 7 -> 1 ends at T + 4 ms = 104 ms (its NIC is the
 * last of its ports to drain), 7 -> 5 at 104 ms (the same NIC), 8 -> 9 at 2 ms (untouched), and the
 * flows to GPU 0 never arrive. Without the discard, 7 -> 1 and 7 -> 5 wait forever
 * (test_pfc_spread.c test_stalled_receiver).
 *
 * The queue pair of a sender into the discarded queue: its packets are dropped, it resends
 * nccl_ib_retry_cnt times, each after the ACK timeout 4.096 us x 2^nccl_ib_timeout, and fails:
 * NCCL's defaults 7 and 20 give 8 x 4.294967296 s = 34.359738368 s exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/exec/pfc_spread.h"
#include "sim/exec/step_exec.h"
#include "sim/scenario/link_loss.h"
#include "sim/simgrid/step_sim.h"
#include "tests/fabric_fixtures.h"
#include "tests/step_fixtures.h"


static void test_discard_frees_the_tree(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    c.pfc = 1;
    c.stall_discard_ms = 100;
    faults_cfg f = {0};
    pfc_opts o = {.stalled_gpu = 0};
    pfc_result r;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, &o, &r), 0);
    for (int i = FX_F40; i <= FX_F60; i++) assert_true(isinf(r.finish_s[i]));   /* bound for GPU 0: lost */
    fx_near_ms(r.finish_s[FX_F71], 104);
    fx_near_ms(r.finish_s[FX_F75], 104);
    fx_near_ms(r.finish_s[FX_F89], 2);
    fx_near_ms(r.finish_lossy_s[FX_F71], 4);
    assert_true(fabs(r.max_victim_slowdown - 104.0 / 4.0) < 1e-9);
    /* the stalled NIC (held forever: its own traffic never drains) and the six ports of its tree */
    assert_int_equal(r.n_paused, 7);
    for (int i = 0; i < r.n_paused; i++) {
        const pfc_link *l = &r.paused[i];
        if (l->link.cls == FL_NIC_DOWN) {
            assert_int_equal(l->link.index, 0);
            assert_true(isinf(l->held_s));
        } else {
            fx_near_ms(l->held_s, 100 + l->drain_s * 1e3);   /* stopped for T, then its own bytes */
            assert_true(l->cause.cls == FL_NIC_DOWN && l->cause.index == 0);
        }
    }
    assert_int_equal(r.n_held_gpus, 6);
    pfc_result_free(&r);
    /* ECN does not slow a receiver that stopped: the same tree, the same release */
    c.ecn = 1;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, &o, &r), 0);
    fx_near_ms(r.finish_s[FX_F71], 104);
    assert_int_equal(r.n_paused, 7);
    pfc_result_free(&r);
    /* an incast that drains (nobody stalled) is what it was: the discard never triggers */
    c.ecn = 0;
    assert_int_equal(pfc_spread(&c, &f, FX_INCAST, FX_NF, NULL, &r), 0);
    fx_near_ms(r.finish_s[FX_F71], 6);
    fx_near_ms(r.finish_s[FX_F40], 6);
    pfc_result_free(&r);
}

static void test_qp_retry_exhausted(void **state) {
    (void)state;
    cluster_cfg c = fx_one_rail();
    c.nccl_ib_timeout = 20;
    c.nccl_ib_retry_cnt = 7;
    assert_true(link_qp_retry_exhausted_s(&c) == 34.359738368);
    c.nccl_ib_timeout = 14;
    c.nccl_ib_retry_cnt = 3;
    assert_true(fabs(link_qp_retry_exhausted_s(&c) - 4 * 4.096e-6 * 16384) < 1e-15);   /* 0.268435456 s */
}

/* cluster.transport: infiniband is lossless (pfc follows, false refused) and discards after the
 * subnet manager's leaf HOQ lifetime; roce keeps the fabric as it was; a set value is kept. */
static void test_transport_fields(void **state) {
    (void)state;
    scenario s;
    moe_error err = {0};
    assert_int_equal(fx_parse("{\"cluster\": {\"preset\": \"h800-8rail\"}}", &s, &err), 0);
    assert_int_equal(s.cluster.transport, TRANSPORT_ROCE);
    assert_int_equal(s.cluster.pfc, 0);
    assert_true(s.cluster.stall_discard_ms == 0);
    assert_int_equal(s.cluster.nccl_ib_timeout, 20);
    assert_int_equal(s.cluster.nccl_ib_retry_cnt, 7);
    assert_int_equal(fx_parse("{\"cluster\": {\"transport\": \"infiniband\", \"preset\": \"h100-8rail\"}}", &s, &err), 0);
    assert_int_equal(s.cluster.transport, TRANSPORT_IB);
    assert_int_equal(s.cluster.pfc, 1);
    assert_true(s.cluster.stall_discard_ms == 4.096e-3 * 65536);
    assert_int_equal(fx_parse("{\"cluster\": {\"transport\": \"infiniband\", \"stall_discard_ms\": 0}}", &s, &err), 0);
    assert_true(s.cluster.stall_discard_ms == 0);
    assert_int_equal(fx_parse("{\"cluster\": {\"pfc\": true, \"stall_discard_ms\": 400}}", &s, &err), 0);
    assert_int_equal(s.cluster.transport, TRANSPORT_ROCE);
    assert_true(s.cluster.stall_discard_ms == 400);
    /* DeepSeek's InfiniBand planes */
    assert_int_equal(fx_parse("{\"cluster\": {\"preset\": \"h800-mpft\", \"nodes\": 512}}", &s, &err), 0);
    assert_int_equal(s.cluster.transport, TRANSPORT_IB);
    assert_int_equal(s.cluster.pfc, 1);
    fx_expect_bad_cluster("{\"transport\": \"infiniband\", \"pfc\": false}", "cluster.pfc", "infiniband");
    fx_expect_bad_cluster("{\"transport\": \"ib\"}", "cluster.transport", "infiniband");
    fx_expect_bad_cluster("{\"nccl_ib_retry_cnt\": 8}", "cluster.nccl_ib_retry_cnt", "7");
}

/* A stalled rank in a dispatch across two nodes (pp 2, ep 4 over nodes of 2 GPUs, dp 4: GPU 1 stalls
 * at layer 1, micro-batch 2). Its EP peers on the other node send into its queue. */
static void stalled_across_nodes(scenario *s, int gpn) {
    fx_scenario(s, 4, 16, 2, 4, 4, gpn, SCHED_1F1B, 1, 8);
    s->cluster.rails = gpn;
    s->faults.n_stalls = 1;
    s->faults.stalls[0] = (stall_fault){.gpu = 1, .layer = 1, .micro_batch = 2};
    s->faults.collective_timeout_s = 600;
}

static int run_exec(const scenario *s, step_exec_result *r) {
    static fx_comm_costs cc = {3e-4, 2e-5, 1e-3};
    static fx_compute_costs k = {.F = 1e-3, .B = 1.5e-3, .W = 5e-4, .expert = 4e-4};
    comm_model cm = fx_comm(&cc);
    moe_error err = {0};
    program *p = NULL;
    assert_int_equal(program_build(s, &p, &err), 0);
    step_exec_opts o = {.comm = &cm, .price = fx_price, .price_ctx = &k, .shortcut = 1};
    int rc = step_exec_run(p, &o, r, &err);
    if (r->timeout.by_qp_retry) assert_non_null(strstr(err.msg, "transport retry counter exceeded"));
    program_free(p);
    return rc;
}

static void test_stall_detected_by_qp(void **state) {
    (void)state;
    scenario s;
    step_exec_result r;
    const double qp = 34.359738368;
    /* RoCE with PFC and no discard: the storm holds the senders' packets in their NICs; the watchdog */
    stalled_across_nodes(&s, 2);
    s.cluster.pfc = 1;
    assert_int_equal(run_exec(&s, &r), EXIT_RUNTIME);
    assert_true(r.timeout.found && !r.timeout.by_qp_retry);
    assert_true(r.timeout.detect_s == 600);
    double watchdog_arrived = r.timeout.arrived_s;
    step_exec_result_free(&r);
    /* with the discard, a peer on the other node (GPUs 2, 3) fails after its retries */
    s.cluster.stall_discard_ms = IB_LEAF_HOQ_LIFETIME_MS;
    assert_int_equal(run_exec(&s, &r), EXIT_RUNTIME);
    assert_true(r.timeout.found && r.timeout.by_qp_retry);
    assert_true(r.timeout.detect_s == qp);
    assert_true(r.timeout.fired_s == r.timeout.arrived_s + qp);
    assert_true(r.timeout.rank == 2 || r.timeout.rank == 3);
    assert_true(r.timeout.arrived_s + qp < watchdog_arrived + 600);
    step_exec_result_free(&r);
    /* a watchdog shorter than the retries still fires first */
    s.faults.collective_timeout_s = 10;
    assert_int_equal(run_exec(&s, &r), EXIT_RUNTIME);
    assert_true(r.timeout.found && !r.timeout.by_qp_retry && r.timeout.detect_s == 10);
    step_exec_result_free(&r);
    /* a lossy fabric (no PFC): no storm, no discard: the watchdog */
    s.faults.collective_timeout_s = 600;
    s.cluster.pfc = 0;
    assert_int_equal(run_exec(&s, &r), EXIT_RUNTIME);
    assert_true(!r.timeout.by_qp_retry && r.timeout.detect_s == 600);
    step_exec_result_free(&r);
    /* the whole job on one node (pp 2 x ep 4 x dp 1, 8 GPUs): nothing crosses the fabric, the watchdog */
    stalled_across_nodes(&s, 8);
    s.layout.dp = 1;
    s.layout.global_batch = 8 * 4;
    s.cluster.nodes = 1;
    s.cluster.pfc = 1;
    s.cluster.stall_discard_ms = IB_LEAF_HOQ_LIFETIME_MS;
    assert_int_equal(run_exec(&s, &r), EXIT_RUNTIME);
    assert_true(r.timeout.found && !r.timeout.by_qp_retry);
    step_exec_result_free(&r);
}

/* step_simulate hands the run level the detection delay: the step fails 34.36 s after the sender
 * arrived, and step_result_detect_s is that delay, not the watchdog's 600 s. Each case in its own
 * process (SimGrid holds one platform per process); 0 when every check holds, else the failed one. */
#define CHECK(cond, code) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); return (code); } } while (0)

static int simulate_stalled(double discard_ms, step_result *out) {
    scenario s;
    stalled_across_nodes(&s, 2);
    s.cluster.transport = TRANSPORT_IB;
    s.cluster.pfc = 1;
    s.cluster.stall_discard_ms = discard_ms;
    step_options opt = {0};
    moe_error err = {0};
    int rc = step_simulate(&s, &opt, out, &err);
    if (rc) fprintf(stderr, "step_simulate: %s\n", err.msg);
    return rc;
}

static int detect_by_qp(void) {
    step_result out;
    if (simulate_stalled(IB_LEAF_HOQ_LIFETIME_MS, &out)) return 1;
    scenario s;
    stalled_across_nodes(&s, 2);
    CHECK(out.timed_out, 2);
    CHECK(out.timeout_detect_s == 34.359738368, 3);
    CHECK(step_result_detect_s(&out, &s) == 34.359738368, 4);
    CHECK(out.step_time_s > 34.359738368 && out.step_time_s < 35, 5);
    cJSON *ct = cJSON_GetObjectItem(out.breakdown, "collective_timeout");
    CHECK(strcmp(cJSON_GetObjectItem(ct, "detected_by")->valuestring, "qp_retry_exhausted") == 0, 6);
    cJSON *pfc = cJSON_GetObjectItem(out.breakdown, "pfc");
    CHECK(strcmp(cJSON_GetObjectItem(pfc, "flow_control")->valuestring, "credits") == 0, 7);
    CHECK(fabs(cJSON_GetObjectItem(pfc, "stall_discard_s")->valuedouble - 0.268435456) < 1e-12, 8);
    step_result_free(&out);
    return 0;
}

static int detect_by_watchdog(void) {
    step_result out;
    if (simulate_stalled(0, &out)) return 1;
    CHECK(out.timed_out && out.timeout_detect_s == 600, 2);
    CHECK(out.step_time_s > 600 && out.step_time_s < 601, 3);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(out.breakdown, "pfc"), "stall_discard_s")), 4);
    step_result_free(&out);
    return 0;
}

static void test_step_result_detect(void **state) {
    (void)state;
    assert_int_equal(fx_run_in_child(detect_by_qp), 0);
    assert_int_equal(fx_run_in_child(detect_by_watchdog), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* first: its cases fork, which must happen before the in-process steps start their threads */
        cmocka_unit_test(test_step_result_detect),
        cmocka_unit_test(test_discard_frees_the_tree),
        cmocka_unit_test(test_qp_retry_exhausted),
        cmocka_unit_test(test_transport_fields),
        cmocka_unit_test(test_stall_detected_by_qp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
