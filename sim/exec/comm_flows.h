/* comm_flows.h — communication patterns decomposed into GPU-to-GPU flows, the way the libraries
 * move the bytes (core; no SimGrid). Both communication models start from these flows: the analytic
 * one sums them per link (sim/exec/comm_analytic.c), the SimGrid one simulates them (sim/simgrid/comm_simgrid.c).
 *
 * All-to-all with DeepEP two-level aggregation (seed 003 step 3):
 *   - RDMA: per sender, one flow per destination *node* of the group, carrying everything the sender
 *     sends to that node once (node_bytes when given: node-limited routing deduplicates a token going
 *     to several experts of one node), on the sender's rail, landing on the destination node's GPU of
 *     that rail;
 *   - NVLink: inside every node, one flow per ordered GPU pair carrying the direct intra-node payload
 *     plus what the landing GPU forwards to that receiver (the fan-out is pipelined with the RDMA
 *     chunks in DeepEP, so both start together);
 *   - concurrent groups: identical copies of the pattern on the neighbouring GPUs (shifted by the
 *     group's footprint, whole nodes when it spans nodes). Only their RDMA flows are kept, and only
 *     when the group itself crosses leaves: NVLink and NIC links are private to each group, so the
 *     copies can only meet the group on leaf uplinks and spines.
 */
#ifndef MOESIM_COMM_FLOWS_H
#define MOESIM_COMM_FLOWS_H

#include <stddef.h>
#include "sim/exec/comm.h"

typedef enum { FLOW_NVLINK = 0, FLOW_RDMA } flow_kind;

typedef struct {
    int src_gpu, dst_gpu;
    double bytes;
    int copy;          /* 0: the group itself; c > 0: concurrent copy c */
    flow_kind kind;
} gpu_flow;

typedef struct {
    gpu_flow *v;
    size_t n, cap;
} gpu_flow_list;

void gpu_flow_list_free(gpu_flow_list *l);

/* Append the flows of one all-to-all (see above). Returns 0, or -1 on a malformed pattern (GPU ids
 * outside the cluster, node_bytes without nodes). */
int a2a_flows_build(const cluster_cfg *c, const a2a_pattern *p, gpu_flow_list *out);

/* GPU shift between the group and its concurrent copy 1 (copy c is shifted by c times this), and the
 * number of copies that fit in the cluster without overlapping the group (<= concurrent_groups). */
int a2a_copy_stride(const cluster_cfg *c, const a2a_pattern *p);
int a2a_copies(const cluster_cfg *c, const a2a_pattern *p);

/* Ring collectives (NCCL): the group's GPUs in the order given form the ring; when the group spans
 * several nodes with the same number g > 1 of GPUs on each, the collective is hierarchical: an
 * NVLink ring inside every node over the full buffer, and g concurrent rings across nodes (one per
 * rail) over bytes/g each. */
typedef struct {
    int hierarchical;     /* bool */
    int n_intra, n_inter; /* ring sizes: GPUs per node, nodes (flat: n_intra = 0, n_inter = n) */
    double intra_bytes, inter_bytes; /* buffer each ring phase works on */
} ring_plan;

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
