/* layouts.h — every valid TP/PP/EP/DP factorization of a cluster, for layout sweeps
 * ("sweep": {"layouts": "all"}) and `simrun --search` (ranked by sim/plan/layout_rank.h).
 *
 * Candidates: tp a power of two up to gpus_per_node (tensor parallelism across nodes is never worth
 * it on these fabrics, and plan warns about it), pp and ep any divisor of the GPU count, dp what is
 * left. A candidate is kept when scenario_validate accepts the base scenario with that layout (layout
 * product, EP dividing the experts, heads divisible by tp, pp <= layers, batch divisibility, ...). */
#ifndef MOESIM_LAYOUT_SEARCH_H
#define MOESIM_LAYOUT_SEARCH_H

#include "sim/scenario/scenario_types.h"

/* Writes up to `cap` valid layouts (base's other layout fields kept) into `out`, in a fixed order
 * (tp, then pp, then ep ascending); returns how many exist (may exceed cap). */
int layouts_enumerate(const scenario *base, layout_cfg *out, int cap);


#endif
