/* step_sim.h — one training step simulated at op level (the `step` level of SCENARIO.md).
 * Contract used by simrun and the run level; the implementation lives in the SimGrid-linked library
 * (sim/simgrid/step_sim.c) because communication durations come from SimGrid flow-level runs. */
#ifndef MOESIM_STEP_H
#define MOESIM_STEP_H

#include "sim/scenario/scenario.h"

struct cJSON;

typedef struct {
    double step_time_s, tokens_per_s_per_gpu, mfu, tflops_per_gpu;
    double compute_s, exposed_comm_s, bubble_s, optimizer_s;
    double dropped_token_fraction, expert_load_cv, expert_load_max_min, expert_load_gini;
    int slowest_rank;
    /* NCCL timeout (faults.collective_timeout_s): the step failed when a rank's wait inside one
     * collective passed it; step_time_s is then the time until it fired, and no work is counted */
    int timed_out;
    double timeout_fraction;       /* of the simulated steps, those that timed out (the run level's rate) */
    double max_collective_wait_s;  /* the longest wait of a rank inside a completed collective */
    double sim_wall_s;
    struct cJSON *breakdown;   /* per-stage and per-rank breakdowns (owned; freed by step_result_free) */
} step_result;

typedef struct {
    const char *trace_path;    /* write a Perfetto trace.json here when non-NULL */
    /* progress inside the step, for long ones (a few times a second at most is what callers show):
     * the phase, and compute ops priced so far of the program's ops */
    void (*progress)(void *ctx, const char *text);
    void *progress_ctx;
} step_options;

int step_simulate(const scenario *s, const step_options *opt, step_result *out, moe_error *err);
/* Adds the step keys of SCENARIO.md (and "breakdown") to `obj`. */
void step_result_to_json(const step_result *r, struct cJSON *obj);
void step_result_free(step_result *r);

#endif
