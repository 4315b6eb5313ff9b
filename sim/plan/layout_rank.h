/* layout_rank.h — `simrun --search`: every valid layout (sim/scenario/layouts.h) ranked by the plan. */
#ifndef MOESIM_LAYOUT_RANK_H
#define MOESIM_LAYOUT_RANK_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario.h"

/* `simrun --search`: every valid layout evaluated at plan level, ranked: those that fit in memory
 * first, fastest plan step time first, then those that do not fit (in enumeration order). *ranked
 * receives them all (caller frees), *n_fit how many fit. Returns the number of valid layouts, or -1
 * with err set. */
int layouts_rank(const scenario *base, layout_cfg **ranked, int *n_fit, moe_error *err);

#endif
