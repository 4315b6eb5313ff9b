/* diagnose_series.h — when and where a hot expert appeared in a series of simulated steps
 * (routing.steps > 1): `simdiag steps` over the step_series table of results.db (results_db.h).
 * Pure functions of one point's series.
 *
 * Findings, over steps t = 0 .. n-1:
 *   onset     the first step whose most routed expert takes more than `hot_share` of the tokens
 *             (DIAG_SERIES_HOT_SHARE by default): that expert, and the busiest EP rank of that step
 *   peak      the step of the largest such share (the earliest of equal ones), its expert, EP rank
 *   timeout   the first step the NCCL watchdog failed (faults.collective_timeout_s)
 *   slow      steps above STEP_SERIES_SLOW_FACTOR x the series' median (sim/exec/step_series.h), and
 *             their longest run: the point's step.steps figures, as the simulation reported them
 * DIAG_SERIES_HOT_SHARE = 0.25: a quarter of the tokens on one expert is far above any uniform share
 * of the shipped models (top_k / experts: 2/16 = 12.5% for tests/data/scenarios/small-moe.json, 8/256
 * = 3.1% for DeepSeek-V3), and well under the 60% of seed 000 §0.2's hot expert. */
#ifndef MOESIM_DIAGNOSE_SERIES_H
#define MOESIM_DIAGNOSE_SERIES_H

#include <stdio.h>

#include "sim/report/results_db.h"

#define DIAG_SERIES_HOT_SHARE 0.25

typedef struct {
    long point_id;
    int n_steps;
    double hot_share;                 /* the threshold used */
    int onset_step, onset_expert, onset_ep_rank;   /* -1 when no step passes the threshold */
    double onset_share;
    int peak_step, peak_expert, peak_ep_rank;      /* the largest share, over all steps */
    double peak_share, peak_rank_load_max_mean, peak_step_time_s;
    int peak_timed_out;                            /* the peak step timed out (its time: until the watchdog fired) */
    int first_timeout_step, timed_out_steps;       /* -1 / 0 when none */
    double p50_s, p95_s, p99_s, max_s, slow_above_s;
    int slow_steps, slow_run_steps, slow_run_first;
} diag_series_report;

/* 0, or -1 for an empty series. */
int diag_series(const results_step_series *s, long point_id, double hot_share, diag_series_report *out);
/* A problem: a hot expert appeared or a step timed out. */
int diag_series_problem(const diag_series_report *r);
void diag_series_print(FILE *f, const diag_series_report *r);
struct cJSON *diag_series_json(const diag_series_report *r);

#endif
