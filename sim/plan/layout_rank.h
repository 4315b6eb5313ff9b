/* layout_rank.h — `simrun --search`: every valid layout (sim/scenario/layouts.h) ranked by the plan. */
#ifndef MOESIM_LAYOUT_RANK_H
#define MOESIM_LAYOUT_RANK_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario.h"

/* `simrun --search`: every valid layout evaluated at plan level; those that fit in memory ranked by
 * the plan's step time; the best `top` written to `best` (fastest first). Counts of valid and fitting
 * layouts go to *n_valid / *n_fit. Returns how many were written, or -1 with err set. */
int layouts_search(const scenario *base, int top, layout_cfg *best, int *n_valid, int *n_fit, moe_error *err);

#endif
