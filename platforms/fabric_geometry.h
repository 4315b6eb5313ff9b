/* fabric_geometry.h — the numbers of the rail-optimized fabric (seed 003, step 2), in one place.
 *
 * Both the SimGrid platform (sim/simgrid/rail_fabric.cpp) and the hand-computed bottleneck model
 * (sim/exec/comm_analytic.c, core: no SimGrid) read the fabric through these inline functions, so that a
 * link means the same thing in both. What the two models compute *with* these numbers (max-min flow
 * sharing vs. a closed-form bottleneck) is independent; tests hold one to the other.
 *
 * The fabric, per `cluster_cfg`:
 *   - GPU g = node * gpus_per_node + local; local index k is the GPU's rail (GPU k of every node on
 *     rail k, one NIC per GPU).
 *   - NVLink/NVSwitch: one full-duplex link per GPU into the switch of its NVLink domain (its node,
 *     or cluster.nvlink_domain_gpus consecutive GPUs of several nodes: an NVL72 rack), nvlink_GBps per
 *     direction. Intra-domain route: nvl(src).up, nvl(dst).down. The switch itself is non-blocking.
 *   - Rails: NIC link per GPU (full duplex, nic_gbps line rate) into the leaf switch of its rail;
 *     leaf_down_ports nodes share a leaf; every leaf has an uplink bundle to its rail's spine layer of
 *     leaf_down_ports x NIC bandwidth / oversubscription. The spine layer of a rail is non-blocking.
 *     Same-leaf route: nic(src).up, nic(dst).down; cross-leaf adds uplink(leaf src).up, spine(rail),
 *     uplink(leaf dst).down.
 *   - Path selection over the bundle (cluster.path_selection). "adaptive" (adaptive routing, packet
 *     spraying): every port carries an even share, so the bundle is one link (the routes above).
 *     "ecmp" (static hashing): the bundle is U = leaf_down_ports / oversubscription ports at the NIC's
 *     line rate; each queue pair q < cluster.qps_per_connection of a GPU pair carries 1/Q of the pair's
 *     bytes and is hashed once onto a port p = fabric_ecmp_port(); its route takes up-port p of the
 *     source leaf and down-port p of the destination leaf (spine p of the rail, whose spine layer stays
 *     non-blocking): fabric_flow_route(). Two queue pairs on one port share it while other ports idle.
 *   - A third tier (cluster.pod_nodes): the nodes are cut into pods of pod_nodes consecutive nodes
 *     (whole leaves). The rail's spine layer serves one pod (spine(rail, pod), non-blocking over the
 *     pod's leaves); every pod has a core uplink per rail of its leaves' uplinks together /
 *     pod_oversubscription (one link: the pod's spines spread over their core ports evenly), and the
 *     core of a rail is non-blocking. Same-pod routes are the two-tier ones; a cross-pod route is
 *     nic(src).up, uplink(leaf src).up, spine(rail, pod src), pod(rail, pod src).up, core(rail),
 *     pod(rail, pod dst).down, spine(rail, pod dst), uplink(leaf dst).down, nic(dst).down. One pod
 *     ("auto") is the two-tier fabric, link for link.
 *   - Cross-rail inter-node traffic (GPU (n,a) -> GPU (m,b), a != b) is forwarded over NVLink to GPU
 *     (n,b) first, then sent on rail b (NCCL's PXN; rails are separate planes in seed 003).
 *   - Storage: per GPU a PCIe link to host memory (pcie_GBps); per node one storage NIC (a 400 Gb/s
 *     front-end port: nic_gbps) into the storage network; the parallel file system is one shared
 *     resource of storage_GBps aggregate bandwidth.
 *   - Latencies (cluster.latency_us) are end-to-end per hop class; each route's links carry a share
 *     so that the route sum is exactly the class latency: nvlink, same_leaf, cross_leaf.
 *   - faults.links multiply one GPU's NIC or NVLink bandwidth (both directions) by a factor, and a
 *     lossy NIC's by the goodput of its retransmission scheme (faults_link_factor,
 *     sim/scenario/link_loss.h: the rule the step program resolves too, sim/program/faults.h); a fault
 *     of kind "uplink" does the same to one leaf's uplink bundle (rail, leaf), both directions
 *     (faults_uplink_factor; one port of the bundle is priced as the bundle at its rate, link_loss.h).
 */
#ifndef MOESIM_FABRIC_GEOMETRY_H
#define MOESIM_FABRIC_GEOMETRY_H

#include "sim/base/hash.h"
#include "sim/base/rng_seed.h"
#include "sim/scenario/link_loss.h"
#include "sim/scenario/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The clusters this geometry describes, for both the SimGrid platform and its XML form: the scenario's
 * cluster rules (scenario_check_cluster: one NIC and rail per GPU, NVLink domains of whole nodes),
 * at least one node and GPU, positive bandwidths, a leaf port and an oversubscription >= 1,
 * non-negative latencies, and faults.links on GPUs (or, kind "uplink", rails and leaves) of the cluster
 * with factors in (0, 1] and loss rates in [0, 1).
 * EXIT_BADINPUT naming the field otherwise. */
int fabric_check_cluster(const scenario *s, moe_error *err);
#ifdef __cplusplus
}
#endif

static inline int fabric_node_of(const cluster_cfg *c, int gpu) { return gpu / c->gpus_per_node; }
/* NVLink domains (cluster.nvlink_domain_gpus, a multiple of gpus_per_node): GPUs that reach each other
 * over NVLink; a node unless the rack is one domain (NVL72). DeepEP's aggregation lands a sender's
 * RDMA transfer on the GPU at the sender's position in the destination domain (the same rail). */
static inline int fabric_domain_gpus(const cluster_cfg *c) { return scn_domain_gpus(c); }
static inline int fabric_domain_of(const cluster_cfg *c, int gpu) { return gpu / scn_domain_gpus(c); }
static inline int fabric_landing_gpu(const cluster_cfg *c, int src_gpu, int domain) {
    int D = scn_domain_gpus(c);
    return domain * D + src_gpu % D;
}
static inline int fabric_rail_of(const cluster_cfg *c, int gpu) { return gpu % c->gpus_per_node; }
static inline int fabric_gpu(const cluster_cfg *c, int node, int local) {
    return node * c->gpus_per_node + local;
}
static inline int fabric_leaf_of_node(const cluster_cfg *c, int node) { return scn_leaf_of_node(c, node); }
static inline int fabric_leaves_per_rail(const cluster_cfg *c) { return scn_leaves_per_rail(c); }

/* Bandwidths in bytes/s (SI), before faults. */
static inline double fabric_nvlink_Bps(const cluster_cfg *c) { return c->nvlink_GBps * 1e9; }
static inline double fabric_nic_Bps(const cluster_cfg *c) { return c->nic_gbps * 1e9 / 8.0; }
static inline double fabric_uplink_Bps(const cluster_cfg *c) {
    double over = c->oversubscription > 0 ? c->oversubscription : 1.0;
    int ports = c->leaf_down_ports > 0 ? c->leaf_down_ports : c->nodes;
    return ports * fabric_nic_Bps(c) / over;
}
/* Uplink `index` (rail * leaves_per_rail + leaf, fabric_hop.index) under faults.links of kind "uplink":
 * x the factor and the goodput of its losses (faults_uplink_factor, sim/scenario/link_loss.h); exactly
 * fabric_uplink_Bps when the uplink is healthy. */
static inline double fabric_uplink_Bps_faulty(const cluster_cfg *c, const faults_cfg *f, int index) {
    int L = scn_leaves_per_rail(c);
    return fabric_uplink_Bps(c) * faults_uplink_factor(c, f, index / L, index % L);
}
static inline int fabric_pods(const cluster_cfg *c) { return scn_pods(c); }
static inline int fabric_pod_of_node(const cluster_cfg *c, int node) { return scn_pod_of_node(c, node); }
/* A rail's spine layer in one pod: non-blocking, i.e. as wide as all the pod's leaf uplinks of the
 * rail together (every leaf of the rail with one pod). */
static inline double fabric_spine_Bps(const cluster_cfg *c) {
    return scn_leaves_per_pod(c) * fabric_uplink_Bps(c);
}
/* A pod's uplink to the core on one rail: its leaves' uplinks together / pod_oversubscription. */
static inline double fabric_pod_uplink_Bps(const cluster_cfg *c) {
    double over = c->pod_oversubscription > 1.0 ? c->pod_oversubscription : 1.0;
    return fabric_spine_Bps(c) / over;
}
/* A rail's core: non-blocking over its pods' uplinks. */
static inline double fabric_core_Bps(const cluster_cfg *c) { return fabric_pods(c) * fabric_pod_uplink_Bps(c); }
static inline double fabric_pcie_Bps(const cluster_cfg *c) { return c->pcie_GBps * 1e9; }
static inline double fabric_storage_nic_Bps(const cluster_cfg *c) { return fabric_nic_Bps(c); }
static inline double fabric_storage_Bps(const cluster_cfg *c) { return c->storage_GBps * 1e9; }

/* Per-link latency shares (s) so that a route's sum is its class latency. */
static inline double fabric_nvl_lat_s(const cluster_cfg *c) { return 0.5 * c->latency_us.nvlink * 1e-6; }
static inline double fabric_nic_lat_s(const cluster_cfg *c) { return 0.5 * c->latency_us.same_leaf * 1e-6; }
static inline double fabric_uplink_lat_s(const cluster_cfg *c) {
    double d = c->latency_us.cross_leaf - c->latency_us.same_leaf;
    return d > 0 ? 0.5 * d * 1e-6 : 0.0;
}
/* Each of a cross-pod route's two pod uplinks carries half of what it adds over a cross-leaf one. */
static inline double fabric_pod_lat_s(const cluster_cfg *c) {
    double d = c->latency_us.cross_pod - c->latency_us.cross_leaf;
    return d > 0 ? 0.5 * d * 1e-6 : 0.0;
}

/* ---- GPU-to-GPU routing: the one definition both models use ------------------------------------ */
typedef enum {
    FL_NVL_UP = 0, FL_NVL_DOWN,   /* index: GPU */
    FL_NIC_UP, FL_NIC_DOWN,       /* index: GPU */
    FL_UPLINK_UP, FL_UPLINK_DOWN, /* index: rail * leaves_per_rail + leaf */
    FL_SPINE,                     /* index: rail * pods + pod */
    FL_PORT_UP, FL_PORT_DOWN,     /* ecmp: one port of an uplink bundle, index: bundle index * U + port */
    FL_POD_UP, FL_POD_DOWN,       /* a pod's core uplink, index: rail * pods + pod */
    FL_CORE,                      /* index: rail */
    FL_NCLASSES
} fabric_link_class;

typedef struct {
    fabric_link_class cls;
    int index;
} fabric_hop;

#define FABRIC_MAX_HOPS 11

static inline int fabric_rail_route_(const cluster_cfg *c, int src, int dst, fabric_hop *h, int n) {
    int ns = fabric_node_of(c, src), nd = fabric_node_of(c, dst);
    int ls = fabric_leaf_of_node(c, ns), ld = fabric_leaf_of_node(c, nd);
    int rail = fabric_rail_of(c, src), L = fabric_leaves_per_rail(c), P = fabric_pods(c);
    int ps = fabric_pod_of_node(c, ns), pd = fabric_pod_of_node(c, nd);
    h[n++] = (fabric_hop){FL_NIC_UP, src};
    if (ls != ld) {
        h[n++] = (fabric_hop){FL_UPLINK_UP, rail * L + ls};
        h[n++] = (fabric_hop){FL_SPINE, rail * P + ps};
        if (ps != pd) {
            h[n++] = (fabric_hop){FL_POD_UP, rail * P + ps};
            h[n++] = (fabric_hop){FL_CORE, rail};
            h[n++] = (fabric_hop){FL_POD_DOWN, rail * P + pd};
            h[n++] = (fabric_hop){FL_SPINE, rail * P + pd};
        }
        h[n++] = (fabric_hop){FL_UPLINK_DOWN, rail * L + ld};
    }
    h[n++] = (fabric_hop){FL_NIC_DOWN, dst};
    return n;
}

/* Links of the route src -> dst (at most FABRIC_MAX_HOPS); returns their number (0 if src == dst).
 * Same NVLink domain: NVLink. Same rail: NIC, [uplink, spine, [pod up, core, pod down, spine,] uplink],
 * NIC. Otherwise PXN: NVLink to
 * the source node's GPU on the destination's rail, then that rail. */
static inline int fabric_gpu_route(const cluster_cfg *c, int src, int dst, fabric_hop h[FABRIC_MAX_HOPS]) {
    if (src == dst) return 0;
    int ns = fabric_node_of(c, src);
    if (fabric_domain_of(c, src) == fabric_domain_of(c, dst)) {
        h[0] = (fabric_hop){FL_NVL_UP, src};
        h[1] = (fabric_hop){FL_NVL_DOWN, dst};
        return 2;
    }
    int rd = fabric_rail_of(c, dst);
    if (fabric_rail_of(c, src) == rd) return fabric_rail_route_(c, src, dst, h, 0);
    int relay = fabric_gpu(c, ns, rd);
    h[0] = (fabric_hop){FL_NVL_UP, src};
    h[1] = (fabric_hop){FL_NVL_DOWN, relay};
    return fabric_rail_route_(c, relay, dst, h, 2);
}

/* ---- path selection over a leaf's uplink bundle (cluster.path_selection) ------------------------ */
static inline int fabric_ecmp(const cluster_cfg *c) { return c->path_selection == PATH_ECMP; }
/* Queue pairs per GPU pair that ecmp hashes separately (1 under adaptive: spraying needs none). */
static inline int fabric_qps(const cluster_cfg *c) {
    return fabric_ecmp(c) && c->qps_per_connection > 1 ? c->qps_per_connection : 1;
}
/* U, the ports of one uplink bundle (scn_uplink_ports; a whole number under ecmp, checked by
 * scenario_check_cluster). */
static inline int fabric_uplink_ports(const cluster_cfg *c) {
    int u = (int)(scn_uplink_ports(c) + 0.5);
    return u > 0 ? u : 1;
}
/* The port, 0..U-1, that queue pair `qp` of the flow src -> dst (global GPU ids: the endpoints of the
 * connection, before any PXN relay) is hashed onto, a fixed function of (seed, src, dst, qp): FNV-1a
 * over the four (sim/base/hash.h), then the splitmix64 finalizer (sim/base/rng_seed.h), because the low
 * k bits of an FNV-1a hash depend only on the low k bits of every input byte and U is often a power of
 * two. Stands for the switch's 5-tuple hash (a queue pair is one UDP source port under RoCEv2), seeded
 * per scenario; which port a real switch picks is not modelled, only that the choice is static and
 * uniform. */
static inline int fabric_ecmp_port(const cluster_cfg *c, uint64_t seed, int src, int dst, int qp) {
    const uint64_t w[4] = {seed, (uint64_t)(uint32_t)src, (uint64_t)(uint32_t)dst, (uint64_t)(uint32_t)qp};
    uint64_t h = moe_seed_mix(moe_fnv1a64(MOE_FNV1A64_OFFSET, w, sizeof w));
    return (int)(h % (uint64_t)fabric_uplink_ports(c));
}
/* The route of queue pair `qp` of the flow src -> dst: fabric_gpu_route(), whose bundle hops become
 * the hashed port's under ecmp (the same route under adaptive). */
static inline int fabric_flow_route(const cluster_cfg *c, uint64_t seed, int src, int dst, int qp,
                                    fabric_hop h[FABRIC_MAX_HOPS]) {
    int n = fabric_gpu_route(c, src, dst, h);
    if (!fabric_ecmp(c)) return n;
    int U = fabric_uplink_ports(c), p = -1;
    for (int i = 0; i < n; i++) {
        if (h[i].cls != FL_UPLINK_UP && h[i].cls != FL_UPLINK_DOWN) continue;
        if (p < 0) p = fabric_ecmp_port(c, seed, src, dst, qp);
        h[i] = (fabric_hop){h[i].cls == FL_UPLINK_UP ? FL_PORT_UP : FL_PORT_DOWN, h[i].index * U + p};
    }
    return n;
}
/* One port of uplink bundle `bundle` (rail * leaves_per_rail + leaf): the NIC's line rate, x the
 * bundle's faults.links factor (a fault of kind "uplink" degrades every port of its bundle alike). */
static inline double fabric_port_Bps_faulty(const cluster_cfg *c, const faults_cfg *f, int bundle) {
    int L = scn_leaves_per_rail(c);
    return fabric_nic_Bps(c) * faults_uplink_factor(c, f, bundle / L, bundle % L);
}

/* Bandwidth (bytes/s) and latency share (s) of one hop, faults applied. */
static inline double fabric_hop_Bps(const cluster_cfg *c, const faults_cfg *f, fabric_hop h) {
    switch (h.cls) {
    case FL_NVL_UP: case FL_NVL_DOWN: return fabric_nvlink_Bps(c) * faults_link_factor(c, f, h.index, LINK_NVLINK);
    case FL_NIC_UP: case FL_NIC_DOWN: return fabric_nic_Bps(c) * faults_link_factor(c, f, h.index, LINK_NIC);
    case FL_UPLINK_UP: case FL_UPLINK_DOWN: return fabric_uplink_Bps_faulty(c, f, h.index);
    case FL_SPINE: return fabric_spine_Bps(c);
    case FL_PORT_UP: case FL_PORT_DOWN: return fabric_port_Bps_faulty(c, f, h.index / fabric_uplink_ports(c));
    case FL_POD_UP: case FL_POD_DOWN: return fabric_pod_uplink_Bps(c);
    case FL_CORE: return fabric_core_Bps(c);
    default: return 0;
    }
}
static inline double fabric_hop_lat_s(const cluster_cfg *c, fabric_hop h) {
    switch (h.cls) {
    case FL_NVL_UP: case FL_NVL_DOWN: return fabric_nvl_lat_s(c);
    case FL_NIC_UP: case FL_NIC_DOWN: return fabric_nic_lat_s(c);
    case FL_UPLINK_UP: case FL_UPLINK_DOWN: case FL_PORT_UP: case FL_PORT_DOWN: return fabric_uplink_lat_s(c);
    case FL_POD_UP: case FL_POD_DOWN: return fabric_pod_lat_s(c);
    default: return 0;
    }
}
/* Number of links of each class (for load arrays indexed by fabric_hop.index). */
static inline int fabric_class_size(const cluster_cfg *c, fabric_link_class cls) {
    switch (cls) {
    case FL_UPLINK_UP: case FL_UPLINK_DOWN: return c->rails * fabric_leaves_per_rail(c);
    case FL_SPINE: case FL_POD_UP: case FL_POD_DOWN: return c->rails * fabric_pods(c);
    case FL_CORE: return c->rails;
    case FL_PORT_UP: case FL_PORT_DOWN: return fabric_ecmp(c) ? c->rails * fabric_leaves_per_rail(c) * fabric_uplink_ports(c) : 1;
    default: return c->nodes * c->gpus_per_node;
    }
}

#ifdef __cplusplus
extern "C" {
#endif
/* A hop's link as the SimGrid platform names it (sim/simgrid/rail_fabric.cpp, the XML dump): its name
 * into buf ("nic-G", "up-rR-lL", "up-rR-lL-pP", "spine-rR" or with pods "spine-rR-pP", "pod-rR-pP",
 * "core-rR", "nvl-G"; "?" for no link) and which direction of a split-duplex link it is: 1 up, 2 down,
 * 0 a shared link (a spine layer, a core). */
int fabric_link_name(const cluster_cfg *c, fabric_hop h, char *buf, size_t len);
#ifdef __cplusplus
}
#endif

/* End-to-end latency (s) between two GPUs, as routed by the fabric. */
static inline double fabric_route_latency_s(const cluster_cfg *c, int src, int dst) {
    fabric_hop h[FABRIC_MAX_HOPS];
    int n = fabric_gpu_route(c, src, dst, h);
    double lat = 0;
    for (int i = 0; i < n; i++) lat += fabric_hop_lat_s(c, h[i]);
    return lat;
}

#endif
