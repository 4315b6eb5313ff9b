/* routing_pattern.h — the all-to-all pattern (comm.h) of a routing sample (sim/program/routing.h). */
#ifndef MOESIM_ROUTING_PATTERN_H
#define MOESIM_ROUTING_PATTERN_H

#include "sim/exec/comm.h"
#include "sim/program/routing.h"
#include "sim/exec/routing_pattern.h"

/* Point an a2a_pattern (sim/exec/comm.h) at a sample: dispatch (combine = 0) or combine (combine = 1).
 * For the combine, node_bytes is combine_node_bytes, whose direction is node k -> rank i (see above).
 * concurrent_groups is left at 1. The pattern borrows the sample's and ctx's arrays. */
void routing_sample_pattern(const routing_ctx *ctx, const routing_sample *s, int combine,
                            a2a_pattern *p);

#endif
