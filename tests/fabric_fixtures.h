/* fabric_fixtures.h — shared by the SimGrid tests (header-only). SimGrid holds one platform per
 * process, so each case that needs its own platform runs in a child process. */
#ifndef MOESIM_TESTS_FABRIC_FIXTURES_H
#define MOESIM_TESTS_FABRIC_FIXTURES_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/exec/comm.h"
#include "sim/exec/flows.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"

/* The cost model of the fabric tests: every link at the cluster's own line rate (efficiency 1), so
 * that hand-computed times use the cluster's figures as they are. */
#define FX_LINE_RATE_MODEL "tests/data/costmodel-line-rate.json"

/* The h800-8rail fabric resized: `nodes` nodes, `leaf_ports` nodes per leaf, uplink oversubscription. */
static inline scenario fx_fabric(const char *label, int nodes, int leaf_ports, double oversub) {
    scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.file, sizeof s.file, "%s", label);
    snprintf(s.calibration, sizeof s.calibration, "%s", FX_LINE_RATE_MODEL);
    preset_cluster("h800-8rail", &s.cluster);
    s.cluster.nodes = nodes;
    s.cluster.leaf_down_ports = leaf_ports;
    s.cluster.oversubscription = oversub;
    return s;
}

/* The lossless-fabric tests' hand-solvable fabric (tests/test_pfc_spread.c, test_pfc_feed.c): 12
 * single-GPU nodes on one rail, 4 nodes per leaf, NIC 400 Gb/s = 50 GB/s, leaf uplink bundle 4 x 50 =
 * 200 GB/s (non-blocking), NVLink 200 GB/s, latencies 0. */
static inline cluster_cfg fx_one_rail(void) {
    cluster_cfg c;
    memset(&c, 0, sizeof c);
    c.nodes = 12;
    c.gpus_per_node = 1;
    c.rails = 1;
    c.leaf_down_ports = 4;
    c.oversubscription = 1;
    c.nic_gbps = 400;
    c.nvlink_GBps = 200;
    return c;
}

/* The hand incast on fx_one_rail (tests/test_pfc_spread.c, test_transport.c): GPUs 4, 5, 6 send
 * FX_INCAST_B (100 MB: 2 ms on a NIC) each to GPU 0; GPU 7 sends it to GPU 1 and to GPU 5; GPU 8 to
 * GPU 9. */
#define FX_INCAST_B 100e6
enum { FX_F40, FX_F50, FX_F60, FX_F71, FX_F75, FX_F89, FX_NF };
static const gpu_flow FX_INCAST[FX_NF] = {
    {4, 0, FX_INCAST_B, 0, FLOW_RDMA}, {5, 0, FX_INCAST_B, 0, FLOW_RDMA}, {6, 0, FX_INCAST_B, 0, FLOW_RDMA},
    {7, 1, FX_INCAST_B, 0, FLOW_RDMA}, {7, 5, FX_INCAST_B, 0, FLOW_RDMA}, {8, 9, FX_INCAST_B, 0, FLOW_RDMA},
};

/* The SimGrid model of scenario s and the closed form on the same fabric (the step's rates:
 * sg_fabric_scenario), for a case that holds one to the other; 1 (with a message) when SimGrid cannot
 * start. Run it in a child process (fx_run_in_child). */
static inline int fx_both_models(const scenario *s, comm_model *sg, comm_model *an) {
    moe_error err = {0};
    *sg = sg_comm_create(s, &err);
    if (!sg->ctx) {
        fprintf(stderr, "sg_comm_create: %s\n", err.msg);
        return 1;
    }
    scenario fab;
    if (sg_fabric_scenario(s, &fab, &err)) {
        fprintf(stderr, "sg_fabric_scenario: %s\n", err.msg);
        return 1;
    }
    *an = comm_analytic_create(&fab);
    return 0;
}

/* A scenario from JSON text, parsed and validated (what a scenario file goes through). */
static inline int fx_parse(const char *json, scenario *s, moe_error *err) {
    sweep *sw = NULL;
    int rc = scenario_parse("t.json", json, s, &sw, err);
    sweep_free(sw);
    if (rc == 0) rc = scenario_validate(s, err);
    return rc;
}

/* A small MoE step on 64 GPUs (8 nodes of the h800-8rail preset, the given "cluster" object's other
 * fields): 3 blocks (1 dense) of a 1024-wide DeepSeek-V3-shaped model, 32 experts top-4, EP16 over 2
 * nodes, DP4, 1F1B, node limit 2. Parsed and validated: 0, or the error. */
static inline int fx_small_moe(const char *cluster_fields, scenario *s, moe_error *err) {
    char json[1024];
    snprintf(json, sizeof json,
             "{\"seed\": 7, \"model\": {\"preset\": \"deepseek-v3\", \"layers\": 3, \"dense_layers\": 1, "
             "\"hidden\": 1024, \"heads\": 8, \"experts\": 32, \"top_k\": 4, \"expert_hidden\": 512, \"ffn_hidden\": 4096, "
             "\"expert_groups\": 0, \"topk_groups\": 0, \"vocab\": 32000, \"seq_len\": 1024}, "
             "\"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 8, %s}, "
             "\"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 16, \"dp\": 4, \"micro_batch\": 1, \"global_batch\": 64, "
             "\"schedule\": \"1f1b\"}, \"routing\": {\"node_limit\": 2}}",
             cluster_fields);
    return fx_parse(json, s, err);
}

#ifdef cmocka_unit_test
/* got (seconds) is want_ms milliseconds, to 1 ns */
static inline void fx_near_ms(double got, double want_ms) { assert_true(fabs(got - want_ms * 1e-3) <= 1e-9); }

/* {"cluster": <cluster>} is refused with exit 2, its message naming `path` and containing `expect`. */
static inline void fx_expect_bad_cluster(const char *cluster, const char *path, const char *expect) {
    char json[512];
    snprintf(json, sizeof json, "{\"cluster\": %s}", cluster);
    scenario s;
    moe_error err = {0};
    int rc = fx_parse(json, &s, &err);
    printf("  %s\n", err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, expect));
}
#endif

/* fn() in a fresh child process (its own SimGrid engine); its exit code, or 100 + the signal. */
static inline int fx_run_in_child(int (*fn)(void)) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = fn();
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

#endif
