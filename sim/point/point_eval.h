/* point_eval.h — evaluate one sweep point at the requested levels: plan, then step, then run.
 * The run level uses the step level's step time when it was computed, else the plan's. */
#ifndef MOESIM_SG_POINT_H
#define MOESIM_SG_POINT_H

#include "sim/scenario/scenario.h"

struct cJSON;

typedef struct {
    int levels;               /* LEVEL_* bitmask (already merged with the CLI's --levels) */
    const char *trace_path;   /* step trace.json for this point, or NULL */
    int reproducible;         /* bool: wall-clock fields written as 0 (byte-identical reruns) */
    int omit_scenario;        /* bool: leave "scenario" out (the caller stores it as a patch) */
    void (*progress)(void *ctx, const char *text);   /* progress inside the step level, or NULL */
    void *progress_ctx;
} point_opts;

/* The point object of results.json: {"id","sweep","scenario","calibration","plan","step","run"}.
 * Takes ownership of `sweep_values` (may be NULL). NULL with err set on failure. */
struct cJSON *point_evaluate(const scenario *s, int id, struct cJSON *sweep_values, const point_opts *opt,
                             moe_error *err);

#endif
