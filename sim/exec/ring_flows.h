/* ring_flows.h — the flows of NCCL ring collectives (flat and hierarchical) and their timing loop. */
#ifndef MOESIM_RING_FLOWS_H
#define MOESIM_RING_FLOWS_H

#include "sim/exec/comm.h"
#include "sim/exec/flows.h"
#include "sim/plan/ring_split.h"

/* Ring collectives (NCCL): the group's GPUs in the order given form the ring, flat or hierarchical
 * by the rule of sim/plan/ring_split.h (which the plan's closed form follows too). */
typedef ring_split ring_plan;

ring_plan ring_plan_make(const cluster_cfg *c, const int *gpus, int n, double bytes);
/* Ring steps of a collective over a ring of `n` (reduce-scatter, all-gather: n-1; all-reduce: 2(n-1)). */
int ring_steps(coll_kind kind, int n);
/* Edges of one ring step: every GPU sends one chunk to its successor. For the hierarchical plan,
 * phase 0 is the intra-node rings (all nodes at once), phase 1 the inter-node rings (all rails). */
int ring_step_flows(const cluster_cfg *c, const int *gpus, int n, const ring_plan *rp, int phase,
                    gpu_flow_list *out);
/* A ring collective's time: every step of a phase moves the same edges, so it is the number of steps
 * times the time `step_s` gives for one step's flows (the closed form or a SimGrid run), summed over
 * the phases. -1 when step_s or the flow construction fails. */
double ring_collective_s(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes,
                         double (*step_s)(void *ctx, const gpu_flow_list *fl), void *ctx);

#endif
