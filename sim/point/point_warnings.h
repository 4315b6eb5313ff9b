/* point_warnings.h — what a capacity planner would flag about one evaluated point, level by level.
 * Each level of a point's results gets a "warnings" list (plan.warnings also holds the plan's own
 * layout warnings); simrun also prints them on stderr.
 *
 *   plan, step, run: the point does not fit in GPU memory (the step and run levels were simulated
 *                    anyway);
 *   plan:            the job spans several pods (cluster.pod_nodes): its contiguous placement and the
 *                    core's oversubscription;
 *   plan, run:       the checkpoint interval is under 5 minutes, or checkpoints come faster than the
 *                    storage path writes them (the write rate state / interval is above it);
 *   run:             run.tokens is not set and the model publishes no training-token count (the
 *                    run level assumed SCN_ASSUMED_RUN_TOKENS);
 *   step:            the step hung or timed out (faults.collective_timeout_s): the collective, layer,
 *                    micro-batch and the rank that never arrived (step_outcome.h), and `simdiag
 *                    check`; else the simulated step and the plan's step disagree by more than 20%;
 *                    more than 1% of the token-expert pairs were dropped (the step's MFU and
 *                    tokens/s/GPU count only the pairs processed). */
#ifndef MOESIM_POINT_WARNINGS_H
#define MOESIM_POINT_WARNINGS_H

#include "sim/plan/plan.h"
#include "sim/run/trainrun.h"
#include "sim/scenario/scenario.h"
#include "sim/simgrid/step_sim.h"

struct cJSON;

#define WARN_CHECKPOINT_MIN_INTERVAL_MIN 5.0  /* shorter: restarts and writes dominate, check the inputs */
#define WARN_PLAN_STEP_DISAGREE 0.20          /* |step - plan| / step */
#define WARN_DROPPED_PAIRS 0.01               /* dropped token-expert pairs / routed pairs */

/* What the ledgers may fill, in words: "73.6 GiB usable (80 GiB less the 8% reserve)", from the plan's
 * plan.memory_GiB.usable and the GPU's memory (the reserve is plan_costs.h's memory_reserve). */
void point_memory_capacity_words(double usable_GiB, double mem_GiB, char *buf, size_t cap);

/* Append the level's warnings (strings) to `warnings` (a JSON array). */
void point_warn_plan(const scenario *s, const plan_result *plan, struct cJSON *warnings);
void point_warn_step(const scenario *s, const plan_result *plan, const step_result *st, struct cJSON *warnings);
void point_warn_run(const scenario *s, const plan_result *plan, const trainrun_result *tr, struct cJSON *warnings);

#endif
