/* fabric_fixtures.h — shared by the SimGrid tests (header-only). SimGrid holds one platform per
 * process, so each case that needs its own platform runs in a child process. */
#ifndef MOESIM_TESTS_FABRIC_FIXTURES_H
#define MOESIM_TESTS_FABRIC_FIXTURES_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"

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
