/* deepep_flows.h — the flows of one all-to-all with DeepEP's two-level aggregation.
 *
 * All-to-all with DeepEP two-level aggregation (seed 003 step 3):
 *   - RDMA: per sender, one flow per destination *node* of the group, carrying everything the sender
 *     sends to that node once (node_bytes when given: node-limited routing deduplicates a token going
 *     to several experts of one node), on the sender's rail, landing on the destination node's GPU of
 *     that rail;
 *   - NVLink: inside every node, one flow per ordered GPU pair carrying the direct intra-node payload
 *     plus what the landing GPU forwards to that receiver (the fan-out is pipelined with the RDMA
 *     chunks in DeepEP, so both start together);
 *   A "node" here is an NVLink domain (fabric_geometry.h): the node itself, or with
 *   cluster.nvlink_domain_gpus the rack-scale domain of several nodes (NVL72), in which the RDMA
 *   transfer lands on the GPU at the sender's position and fans out over the domain's NVLink.
 *   - pattern.pairwise (NCCL all_to_all, step.a2a "nccl"): instead of both, one flow per rank pair
 *     with the fabric's route (NVLink inside an NVLink domain; PXN: NVLink to the source node's GPU on the
 *     destination's rail, then that rail), no aggregation;
 *   - concurrent groups: identical copies of the pattern on the neighbouring GPUs (shifted by the
 *     group's footprint, whole nodes when it spans nodes). Only their RDMA flows are kept, and only
 *     when the group itself crosses leaves: NVLink and NIC links are private to each group, so the
 *     copies can only meet the group on leaf uplinks and spines.
 */
#ifndef MOESIM_DEEPEP_FLOWS_H
#define MOESIM_DEEPEP_FLOWS_H

#include "sim/exec/comm.h"
#include "sim/exec/flows.h"

/* Append the flows of one all-to-all (see above). Returns 0, or -1 on a malformed pattern (GPU ids
 * outside the cluster, node_bytes without nodes). */
int a2a_flows_build(const cluster_cfg *c, const a2a_pattern *p, gpu_flow_list *out);

/* GPU shift between the group and its concurrent copy 1 (copy c is shifted by c times this), and the
 * number of copies that fit in the cluster without overlapping the group (<= concurrent_groups). */
int a2a_copy_stride(const cluster_cfg *c, const a2a_pattern *p);
int a2a_copies(const cluster_cfg *c, const a2a_pattern *p);

#endif
