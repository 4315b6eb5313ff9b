/* trainrun.h — the `run` level: weeks of training replayed as a discrete-event simulation with
 * failures, checkpoints, hot spares, stragglers and loss spikes; Monte Carlo over seeded trials. */
#ifndef MOESIM_TRAINRUN_H
#define MOESIM_TRAINRUN_H

#include "sim/scenario.h"
#include "sim/plan.h"

struct cJSON;

typedef struct {
    int trials;
    double ettr;                       /* effective training time ratio (mean) */
    double days_p5, days_p50, days_p95, days_mean;
    double failures_mean, restarts_mean, spare_swaps_mean, lost_hours_mean;
    double checkpoint_interval_min;    /* the interval the policy chose */
    double best_interval_min;          /* found by search over the interval */
    double daly_interval_min;          /* for comparison */
    int completed_fraction_pct;        /* trials that reached run.tokens before run.max_days */
} trainrun_result;

/* step_time_s: from the step level when computed, else the plan's. */
int trainrun_simulate(const scenario *s, const plan_result *plan, double step_time_s,
                      trainrun_result *out, moe_error *err);
void trainrun_result_to_json(const trainrun_result *r, struct cJSON *obj);

#endif
