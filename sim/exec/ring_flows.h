/* ring_flows.h — the flows of NCCL's ring collectives and their timing (the rule: sim/plan/ring_split.h). */
#ifndef MOESIM_RING_FLOWS_H
#define MOESIM_RING_FLOWS_H

#include "sim/exec/comm.h"
#include "sim/exec/flows.h"
#include "sim/plan/ring_split.h"

/* A collective over the group's GPUs, in the order given (the ring's order): ring_split.h's structure,
 * latency and algorithm (cluster.nccl_model), NCCL deciding with the cluster's link rates
 * (cluster.nvlink_GBps and nic_gbps: on the step's fabric, the cost model's achieved rates). */
typedef ring_split ring_plan;
ring_plan ring_plan_make(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes);

/* The flows of one ring step: every member's forward to its successors (ring_split.h), nvl_bytes and
 * nic_bytes each. *wire_s: the longest route latency among them (what a step's transfer time holds
 * besides its bytes). */
int ring_step_flows(const cluster_cfg *c, const int *gpus, int n, const ring_plan *rp, gpu_flow_list *out,
                    double *wire_s);

/* Can concurrent rings slow one another on this fabric: several pods (the core), or leaves whose
 * uplinks are oversubscribed or hashed (cluster.path_selection ecmp)? On a two-tier fabric of
 * non-blocking, sprayed leaves they cannot, and rings are timed alone. */
int ring_rings_contend(const cluster_cfg *c);

/* The concurrent rings a ring meets where rings contend (ring_rings_contend): across pods, and across
 * leaves when the leaves' uplinks are oversubscribed or hashed (none for a ring that stays inside
 * what it cannot leave: its pod, its leaf): `concurrent` groups of n GPUs, gpus_per_node rails, so
 * C = concurrent x n / (gpus_per_node x the ring's nodes) groups per rail and node position. Copy j
 * (1..C-1) moves every member to the same GPU of the node j places further in its aligned block of C
 * nodes (Megatron's rank order puts the groups of a stage on consecutive nodes: the expert-data-
 * parallel rings of an EP group's 8 nodes are its 8 node positions). Appended to `fl` as copies 1..,
 * which the timing rules ignore but whose bytes share the links. Returns C - 1 (0: none), -1 on
 * allocation failure. */
int ring_concurrent_copies(const cluster_cfg *c, const int *gpus, int n, int concurrent, gpu_flow_list *fl);

/* A collective's time: every step moves the same flows, so the bandwidth time is the steps times what
 * `step_bw_s` gives for one step's flows without their latency (the closed form: the most loaded
 * link's drain; a SimGrid run: the latest finish less its route's latency), and NCCL's latency of the
 * chosen algorithm is added, at least the wire's over its sequential hops (ring_split_time_s). The
 * step's flows carry the concurrent rings' copies (ring_concurrent_copies). -1 when step_bw_s or the
 * flow construction fails. */
double ring_collective_s(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes, int concurrent,
                         double (*step_bw_s)(void *ctx, const gpu_flow_list *fl), void *ctx);

#endif
