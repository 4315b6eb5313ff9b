/* rail_fabric.h — the seed 003 rail-optimized fabric as a SimGrid platform (C API).
 *
 * The fabric (see platforms/fabric_geometry.h for its links and numbers) is built with the s4u C++
 * API into one netzone with arithmetic routing: a route is computed from the two host ids in O(1),
 * so a 4096-GPU platform costs ~25k link objects and no route table (a Full or Floyd zone would hold
 * 4096^2 routes: DESIGN.md "Why three levels").
 *
 * SimGrid keeps one engine and one platform per process: rail_fabric_init() may succeed once per
 * process (calling it again with the same cluster and faults is a no-op; with different ones it is
 * an error). Use a worker process per platform.
 *
 * Hosts: "gpu-G" for every GPU (G = node * gpus_per_node + local), "host-N" for the CPU/host memory of
 * every node (checkpoint snapshots), "pfs" for the parallel file system.
 * Links (split-duplex ones appear to SimGrid as NAME_UP / NAME_DOWN): "nvl-G", "nic-G", "pcie-G",
 * "up-rR-lL" (leaf L's uplink bundle on rail R; under cluster.path_selection ecmp its ports
 * "up-rR-lL-pP" instead), "spine-rR" (with pods, cluster.pod_nodes: "spine-rR-pP", a pod's core
 * uplink "pod-rR-pP" and the rail's core "core-rR"), "snic-N" (node storage NIC), "pfs".
 */
#ifndef MOESIM_RAIL_FABRIC_H
#define MOESIM_RAIL_FABRIC_H

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "sim/scenario/scenario.h"

/* Start the SimGrid engine with the configuration moesim relies on (pure max-min sharing without
 * LV08's empirical factors, no TCP window limit, no cross-traffic: DESIGN.md), build the fabric of
 * s->cluster (with s->faults applied) and seal it. Errors: bad cluster numbers (EXIT_BADINPUT), a
 * second platform in this process (EXIT_RUNTIME). */
int rail_fabric_init(const scenario *s, moe_error *err);
/* 1 once rail_fabric_init() has succeeded in this process. */
int rail_fabric_ready(void);
/* The cluster the platform was built from. */
const cluster_cfg *rail_fabric_cluster(void);

sg_host_t rail_fabric_gpu_host(int gpu);
sg_host_t rail_fabric_node_host(int node);
sg_host_t rail_fabric_storage_host(void);
/* Queue pairs per connection that the fabric routes separately: cluster.qps_per_connection under
 * path_selection ecmp, else 1. A transfer from a GPU is sent as that many equal parts, part q from
 * rail_fabric_qp_host(src, q) (the GPU itself for q = 0; a host of the GPU whose routes take queue
 * pair q's hashed port; any other host unchanged): rail_flows.h does it. */
int rail_fabric_qps(void);
sg_host_t rail_fabric_qp_host(sg_host_t host, int qp);

/* Names of the links of the route src -> dst, in order (at most `max`, each < 64 chars), and the
 * route latency (s) when latency_s is non-NULL. Returns the number of links (-1 if not built). */
int rail_fabric_route(sg_host_t src, sg_host_t dst, char (*names)[64], int max, double *latency_s);

/* Bandwidth (bytes/s) of a link by name, -1 when there is no such link. */
double rail_fabric_link_bandwidth(const char *name);

#ifdef __cplusplus
}
#endif

#endif
