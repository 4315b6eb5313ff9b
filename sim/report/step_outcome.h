/* step_outcome.h — what a step that did not complete says, from its results records.
 *
 * A step with faults.collective_timeout_s set is a result even when it fails (README "NCCL
 * timeouts"): step.timed_out, step.breakdown.collective_timeout (the wait that fired the watchdog)
 * and, when a rank stopped for good, step.breakdown.hang (the collective it never arrived at).
 * Its step_time_s is then when the watchdog fired, not a step, and its MFU and tokens/s are 0: the
 * table prints the outcome instead (`hung`, `timeout`) and the warnings name the collective, layer,
 * micro-batch and the rank that never arrived, and point to `simdiag check` on the output folder. */
#ifndef MOESIM_STEP_OUTCOME_H
#define MOESIM_STEP_OUTCOME_H

#include <stddef.h>

struct cJSON;

typedef enum {
    STEP_COMPLETED = 0,
    STEP_HUNG,        /* a rank never arrived: the watchdog failed the step */
    STEP_TIMED_OUT,   /* every rank arrived, but a wait inside a collective passed the timeout */
} step_outcome;

/* The outcome of a results "step" object (step.timed_out, step.breakdown.hang); NULL: completed. */
step_outcome step_outcome_of(const struct cJSON *step);
/* The word the table prints in place of the step time: "hung", "timeout" (NULL when completed). */
const char *step_outcome_word(step_outcome o);

/* One sentence on a failed step from its records (the results' step.breakdown.collective_timeout and
 * step.breakdown.hang; either may be NULL or null) on a cluster of gpus_per_node GPUs per node:
 *   "the step hung: rank 99 (node 12, GPU 3) never arrived at A2A_DISPATCH of EP group 0 (layer 10,
 *    micro-batch 1), where 127 ranks waited (896 more blocked elsewhere); NCCL's watchdog
 *    (faults.collective_timeout_s = 600 s) failed it at t = 604.144 s"
 * or, without a hang, "the step timed out: rank 5 (node 0, GPU 5) waited 700.000 s in ...". Empty
 * when neither record is an object. */
void step_outcome_text(const struct cJSON *timeout, const struct cJSON *hang, int gpus_per_node, char *buf,
                       size_t cap);

#endif
