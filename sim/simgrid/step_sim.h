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
    double host_s;                 /* mean over ranks: the compute stream idle, waiting for the host
                                      to issue its next kernels (step_host.h; 0 without a host side) */
    double dropped_token_fraction, expert_load_cv, expert_load_max_min, expert_load_gini;
    int slowest_rank;
    /* NCCL timeout (faults.collective_timeout_s): the step failed when a rank's wait inside one
     * collective passed it; step_time_s is then the time until it fired, and no work is counted */
    int timed_out;
    double timeout_fraction;       /* of the simulated steps, those that timed out (the run level's rate) */
    double timeout_detect_s;       /* how long the hang of a timed-out step lasted before the job failed:
                                      the watchdog's timeout, or a queue pair's retries running out
                                      (step_exec.h step_timeout.by_qp_retry); step 0's, else the first
                                      timed-out step's; 0: none timed out */
    double max_collective_wait_s;  /* the longest wait of a rank inside a completed collective */
    double sim_wall_s;
    /* routing.steps > 1 (routing_drift.h): the other fields are step 0's (its breakdown and trace);
     * these are every step's, in order, and their distribution */
    int n_steps;
    double *series_step_time_s;         /* [n_steps] */
    double *series_max_expert_share;    /* [n_steps] the most routed expert's share of the tokens */
    int *series_max_expert;             /* [n_steps] which expert that is */
    double *series_rank_load_max_mean;  /* [n_steps] busiest EP index's expert pairs / the mean */
    int *series_busiest_ep_rank;        /* [n_steps] which EP index that is */
    double *series_max_collective_wait_s; /* [n_steps] the longest wait of a rank inside a completed
                                           collective (what faults.collective_timeout_s is held to) */
    double *series_hot_share;           /* [n_steps] the law's hot share after its bias (0: none) */
    unsigned char *series_timed_out;    /* [n_steps] 1: the step's collective timed out (its time is
                                           then the time until the watchdog fired) */
    double *series_eplb_rebalance_s;    /* [n_steps] routing.eplb_interval_steps > 0: the pause a rebalance
                                           added to the step (its moves, eplb_series.h; 0 between); else NULL */
    double *series_eplb_grad_sync_s;    /* [n_steps] the same: the replicas' gradient all-reduce the step paid */
    int steps_eplb_rebalances, steps_eplb_moved_experts;   /* rebalances, experts they moved (EP group 0) */
    double steps_eplb_move_bytes;       /* one expert move's bytes (its params + optimizer, every MoE layer of a rank) */
    int steps_eplb_hierarchical;        /* EPLB took its hierarchical policy (else global) */
    int steps_timed_out;
    double steps_mean_s, steps_p50_s, steps_p95_s, steps_p99_s, steps_min_s, steps_max_s;
    double steps_slow_above_s;          /* STEP_SERIES_SLOW_FACTOR x the median (step_series.h) */
    int steps_slow, steps_slow_run, steps_slow_run_first;   /* slow steps; their longest run, its first step */
    double steps_completed_mean_s;      /* mean over the steps that did not time out (the run level's) */
    double steps_tokens_per_s_per_gpu;  /* all the steps' tokens over all their time */
    double steps_tflops_per_gpu, steps_mfu;   /* all the steps' model FLOPs over all their time (per GPU;
                                           over the BF16 peak): step 0's rule over every step */
    double per_step_wall_s;             /* wall time of one more step (steps 1..n-1: routing redrawn, program reused) */
    struct cJSON *breakdown;   /* per-stage and per-rank breakdowns (owned; freed by step_result_free) */
} step_result;

typedef struct {
    const char *trace_path;    /* write a Perfetto trace.json here when non-NULL */
    /* progress inside the step, for long ones (a few times a second at most is what callers show):
     * the phase, and compute ops priced so far of the program's ops */
    void (*progress)(void *ctx, const char *text);
    void *progress_ctx;
    /* the training step the simulation starts at (0: the first): its routing law and its token draws
     * are that step's (routing_drift.h). Without a walk or bias, a one-step simulation at first_step k
     * is step k of a routing.steps sequence, bit for bit. */
    int first_step;
} step_options;

int step_simulate(const scenario *s, const step_options *opt, step_result *out, moe_error *err);
/* Adds the step keys of SCENARIO.md (and "breakdown") to `obj`. */
void step_result_to_json(const step_result *r, struct cJSON *obj);
void step_result_free(step_result *r);
/* The step time the run level replays under run.step_sequence "mean" (and for one step): one step's
 * (less the watchdog's timeout when it timed out: the run level adds it as the failure's detection
 * delay); with routing.steps > 1 the mean over the steps that completed. *timeout_fraction: the share
 * of the steps that timed out. */
double step_result_run_step_s(const step_result *r, const scenario *s, double *timeout_fraction);
/* The run level's time of series step t (routing.steps > 1, run.step_sequence "cycle"): its step time,
 * less the watchdog's timeout when it timed out (the time until the hang began; the run level adds
 * the timeout as the failure's detection delay). */
double step_result_series_run_s(const step_result *r, const scenario *s, int t);
/* The detection delay the run level gives a timed-out step: timeout_detect_s, else (none timed out)
 * faults.collective_timeout_s. Every timed-out step of a series takes the first one's. */
double step_result_detect_s(const step_result *r, const scenario *s);

#endif
