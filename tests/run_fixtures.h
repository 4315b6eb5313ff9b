/* run_fixtures.h — the small cluster of the run level's hand-solved timelines: 8 nodes x 8 GPUs,
 * 4 nodes per leaf, 2 per rack, the "components" failure model (failures replayed from `log`, or
 * none), 36 s steps of 1000 tokens, sync checkpoints every 100 steps (1 h) of 64 GB with a 5 min
 * write, 2 hot spares (0.25 x 8), swap 90 s, full restart 10 min, 2 trials. */
#ifndef MOESIM_TESTS_RUN_FIXTURES_H
#define MOESIM_TESTS_RUN_FIXTURES_H

#include <stdio.h>

#include "sim/run/trainrun.h"
#include "sim/scenario/components.h"
#include "sim/scenario/scenario_defaults.h"

#define RUN_FIXTURE_STEP_S 36.0

static inline scenario run_fixture(const char *log, double steps) {
    scenario s;
    scenario_defaults(&s);
    s.cluster.nodes = 8;
    s.cluster.leaf_down_ports = 4;
    s.layout.global_batch = 1;
    s.model.seq_len = 1000;
    reliability_cfg *r = &s.reliability;
    r->failure_model = FMODEL_COMPONENTS;
    snprintf(r->failure_trace, sizeof r->failure_trace, "%s", log ? log : "");
    if (!log)
        for (int k = 0; k < COMP_NKINDS; k++) r->components[k].mtbf_h = 0;
    r->checkpoint = (checkpoint_cfg){.policy = CKPT_FIXED, .interval_min = 60, .mode = CKPT_SYNC,
                                     .state_bytes = 64e9, .snapshot_GBps = 64, .write_min = 5};
    r->recovery = (recovery_cfg){.hot_spare_fraction = 0.25, .spare_swap_s = 90,
                                 .full_restart_min = 10, .repair_h = 24};
    s.run = (run_cfg){.tokens = steps * 1000, .max_days = 1000, .trials = 2};
    return s;
}

static inline trainrun_result run_fixture_simulate(const scenario *s) {
    trainrun_result r;
    moe_error err = {0};
    if (trainrun_simulate_no_search(s, NULL, RUN_FIXTURE_STEP_S, &r, &err)) fail_msg("trainrun: %s", err.msg);
    return r;
}

static inline double run_fixture_wall_s(const trainrun_result *r) { return r->days_mean * 86400.0; }

/* The first RUN_FIXTURE_EVENTS events of a trial (trainrun_trial_events*: pass run_fixture_keep). */
#define RUN_FIXTURE_EVENTS 256
typedef struct {
    int n;
    trainrun_event ev[RUN_FIXTURE_EVENTS];
} run_fixture_events;

static inline void run_fixture_keep(const trainrun_event *ev, void *user) {
    run_fixture_events *l = user;
    if (l->n < RUN_FIXTURE_EVENTS) l->ev[l->n++] = *ev;
}

#endif
