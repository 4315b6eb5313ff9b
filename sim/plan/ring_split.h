/* ring_split.h — how NCCL runs a ring collective over a group, and what its own tuning model charges
 * for it: the one rule the plan's closed form, the step's ring flows (sim/exec/ring_flows.h) and the
 * full-fidelity executor follow.
 *
 * The ring (NCCL's, src/graph: a ring per channel, the channels spread over the NICs of a node): a
 * collective over n members moves its buffer B in `steps` equal steps, 2(n-1) for an all-reduce and
 * n-1 for a reduce-scatter or an all-gather, each member forwarding a chunk of B/n per step:
 *   - members spread evenly over several nodes, g > 1 on each (e.g. a data-parallel group of whole
 *     nodes): g rings side by side, each leaving every node through another member's NIC (the rails).
 *     In each step every member sends (g-1)/g of a chunk over NVLink to the next member of its node
 *     and 1/g over its NIC to the member at its place in the next node: NVLink and NICs run at once,
 *     so the collective's bus bandwidth is min(g x NIC, g/(g-1) x NVLink), not the sum of an NVLink
 *     phase and a NIC phase (nccl-tests: ~360 GB/s reduce-scatter busbw on 4 nodes of 8 H100 with
 *     8 x 400G NICs and 362 GB/s inside one node: NVIDIA/nccl issues #1229 and #1047);
 *   - one node: one NVLink ring, a chunk per step over NVLink;
 *   - otherwise (one member per node, unevenly spread members): one ring in member order, a chunk per
 *     step to the successor (over NVLink, the NICs or NVLink then a NIC, as routed).
 * Latency: NCCL's tuning model, the Simple protocol (the one of large messages; NVIDIA/nccl
 * src/graph/tuning.cc at 5067397c: ncclTunerConstantsDefaults and ncclTopoTuneModel), in microseconds:
 *   ring  8.4 + (steps - inter_steps) x 3.4 + inter_steps x 14, inter_steps = 2(nodes-1) all-reduce,
 *         nodes-1 otherwise (the per-step latencies: NVLink ring 3.4, at least 3 x the 1 us network
 *         post overhead across nodes; network ring 14); an all-reduce across nodes of at least 64 bytes
 *         per channel and member x 1.4 (Hopper and later: "plateau effect of ring",
 *         ncclTopoGetAlgoTime; a channel per member of a node here);
 *   tree  (all-reduce across nodes) 8.4 + 2 ((n/nodes - 1) x 4.0 + floor(log2 nodes) x 14).
 * Algorithm: across nodes, an all-reduce runs as NCCL's tree when its model gives the tree the lower
 * time: the tree's bus bandwidth is the ring's x 0.92 and its algorithm bandwidth half of that (the
 * ring's is busbw x n / steps), times its correction factor for the size (treeCorrectionFactor,
 * Simple); reduce-scatter and all-gather always run as rings (NCCL's PAT needs one GPU per node).
 * NCCL decides with its own bandwidth estimate: here the links' rates (nvl_Bps, nic_Bps); the caller
 * then times the chosen algorithm's bytes on its own links (ring_split_time_s). cluster.nccl_model
 * "wire" drops NCCL's latency and tree (each step then pays its wires' latency). Not modelled: the LL
 * and LL128 protocols of small messages, NVLS / NVLS tree (NVLink SHARP), CollNet. */
#ifndef MOESIM_RING_SPLIT_H
#define MOESIM_RING_SPLIT_H

#include "sim/scenario/scenario_types.h"

/* NCCL's Simple-protocol constants, microseconds (tuning.cc at 5067397c) */
#define NCCL_BASE_LAT_US 8.4          /* baseLatencies, Ring and Tree, Simple */
#define NCCL_NVL_RING_LAT_US 3.4      /* hwLatencies NVLINK, Ring, Simple */
#define NCCL_NVL_TREE_LAT_US 4.0      /* hwLatencies NVLINK, Tree, Simple */
#define NCCL_NET_LAT_US 14.0          /* hwLatencies NET, Ring and Tree, Simple */
#define NCCL_NET_OVERHEAD_US 3.0      /* getNetOverhead (1 us, x86 Intel) x 3 for Simple */
#define NCCL_RING_PLATEAU 1.4         /* all-reduce across nodes, compute capability >= 8.0 */
#define NCCL_TREE_BUSBW 0.92          /* tree all-reduce bus bandwidth over the ring's */

typedef struct {
    int n, nodes, per_node;     /* members, nodes, members per node when every node holds as many (else 0) */
    int even;                   /* g = per_node > 1 rings side by side over several nodes (above) */
    int all_reduce;
    int steps, inter_steps;     /* the ring's steps; NCCL's count of those that cross nodes */
    double nvl_bytes, nic_bytes;/* per member per step: over NVLink, over its NIC (flat ring: the chunk
                                   counted where the ring goes: nic_bytes across nodes, else nvl_bytes) */
    double ring_lat_s, tree_lat_s;
    double tree_bw;             /* the tree's bandwidth time over the ring's (all-reduce across nodes) */
    int tree_hops;              /* the tree's hops up and down: 2 (members per node - 1 + log2 nodes) */
    int tree;                   /* NCCL runs it as its tree */
} ring_split;

/* treeCorrectionFactor[Simple] of tuning.cc, indexed by floor(log2(bytes / 64)) below 23 */
static inline double nccl_tree_correction(double bytes) {
    static const double f[23] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
    int log_size = -1;
    for (double b = bytes / 64; b >= 1 && log_size < 64; b /= 2) log_size++;
    return log_size >= 0 && log_size < 23 ? f[log_size] : 1.0;
}

static inline int ring_floor_log2(int v) {
    int l = 0;
    while (v > 1) { v >>= 1; l++; }
    return l;
}

/* `members` over `nodes` nodes, `per_node` on each when even (0 when not), `bytes` the buffer per member,
 * all_reduce (else a reduce-scatter or an all-gather), NCCL's estimate of the links: nvl_Bps, nic_Bps;
 * model (cluster.nccl_model): NCCL_MODEL_WIRE keeps the ring with no latency but its wires'
 * (ring_split_latency_s) and no tree. */
static inline ring_split ring_split_of(int members, int nodes, int per_node, double bytes, int all_reduce,
                                       double nvl_Bps, double nic_Bps, nccl_model_kind model) {
    ring_split r = {0};
    r.n = members; r.nodes = nodes; r.per_node = per_node; r.all_reduce = all_reduce;
    if (members < 2) return r;
    r.steps = all_reduce ? 2 * (members - 1) : members - 1;
    r.inter_steps = nodes > 1 ? (all_reduce ? 2 * (nodes - 1) : nodes - 1) : 0;
    double chunk = bytes / members;
    r.even = nodes > 1 && per_node > 1;
    if (r.even) {
        r.nvl_bytes = chunk * (per_node - 1.0) / per_node;
        r.nic_bytes = chunk / per_node;
    } else if (nodes > 1) {
        r.nic_bytes = chunk;
    } else {
        r.nvl_bytes = chunk;
    }
    double intra = NCCL_NVL_RING_LAT_US;
    if (nodes > 1 && NCCL_NET_OVERHEAD_US > intra) intra = NCCL_NET_OVERHEAD_US;
    double ring_us = NCCL_BASE_LAT_US + (r.steps - r.inter_steps) * intra + r.inter_steps * NCCL_NET_LAT_US;
    if (all_reduce && nodes > 1 && bytes / ((per_node > 1 ? per_node : 1.0) * members) >= 64) ring_us *= NCCL_RING_PLATEAU;
    r.ring_lat_s = model == NCCL_MODEL_WIRE ? 0.0 : ring_us * 1e-6;
    if (all_reduce && nodes > 1 && model != NCCL_MODEL_WIRE) {
        int ppn = members / nodes;
        r.tree_hops = 2 * ((ppn - 1) + ring_floor_log2(nodes));
        r.tree_lat_s = (NCCL_BASE_LAT_US + 2 * ((ppn - 1) * NCCL_NVL_TREE_LAT_US + ring_floor_log2(nodes) * NCCL_NET_LAT_US)) * 1e-6;
        r.tree_bw = members / (NCCL_TREE_BUSBW * nccl_tree_correction(bytes) * (members - 1.0));
        double nvl = nvl_Bps > 0 ? r.nvl_bytes / nvl_Bps : 0, nic = nic_Bps > 0 ? r.nic_bytes / nic_Bps : 0;
        double est = r.steps * (nvl > nic ? nvl : nic);
        r.tree = est * r.tree_bw + r.tree_lat_s < est + r.ring_lat_s;
    }
    return r;
}

/* The chosen algorithm's latency: NCCL's, unless the fabric's wires (wire_s per hop) over its
 * sequential hops (the ring's steps, the tree's way up and down) take longer: NCCL's constants hold a
 * few microseconds of wire per step, a fabric of slow links is its own floor. */
static inline double ring_split_latency_s(const ring_split *r, double wire_s) {
    double lat = r->tree ? r->tree_lat_s : r->ring_lat_s, floor_s = (r->tree ? r->tree_hops : r->steps) * wire_s;
    return lat > floor_s ? lat : floor_s;
}

/* The collective's time from bw_s, the bandwidth time of the ring's steps on the caller's links (steps
 * x one step's transfers, without their wire latency), and wire_s: the chosen algorithm's. */
static inline double ring_split_time_s(const ring_split *r, double bw_s, double wire_s) {
    if (r->steps == 0) return 0.0;
    return (r->tree ? bw_s * r->tree_bw : bw_s) + ring_split_latency_s(r, wire_s);
}

#endif
