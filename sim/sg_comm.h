/* sg_comm.h — the SimGrid communication model (comm.h implemented by flow-level simulation).
 *
 * Every distinct pattern is decomposed into the flows the libraries really move (sim/comm_flows.h:
 * DeepEP two-level aggregation, NCCL rings), simulated max-min on the rail fabric
 * (platforms/rail_fabric.h) with the concurrent groups that share leaf uplinks and spines, and its
 * duration memoized by a signature: the byte matrix quantised to ~0.1% (log scale), the group's shape
 * and its placement relative to its leaf (absolute when link faults exist). Patterns run one after
 * another in one SimGrid engine; the simulated clock continues and durations are differences.
 *
 * SimGrid keeps one engine and one platform per process: sg_comm_create() may be called once per
 * process (again only for the same cluster and faults). Not thread-safe.
 */
#ifndef MOESIM_SG_COMM_H
#define MOESIM_SG_COMM_H

#include "sim/comm.h"

/* On failure returns a model with ctx == NULL and fills err. */
comm_model sg_comm_create(const scenario *s, moe_error *err);

typedef struct {
    long queries;          /* a2a + p2p + collective calls */
    long hits;             /* answered from the memo */
    long simulated;        /* distinct patterns simulated */
    long flows;            /* flows simulated in total */
    double sim_wall_s;     /* wall time spent inside SimGrid runs */
} sg_comm_stats;

/* Statistics of a model made by sg_comm_create (zeros for another model). */
sg_comm_stats sg_comm_get_stats(const comm_model *m);

#endif
