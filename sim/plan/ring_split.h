/* ring_split.h — how an NCCL ring collective over a group splits into its NVLink and NIC phases: the
 * one rule the plan's closed form and the step's ring flows (sim/exec/ring_flows.h) both follow.
 *
 * When the group spans several nodes with the same number g > 1 of GPUs on each, the collective is
 * hierarchical: an NVLink ring inside every node over the full buffer, and g concurrent rings across
 * nodes (one per rail) over bytes / g each. Otherwise one flat ring over the whole buffer: over
 * NVLink on one node, over the NICs across nodes. */
#ifndef MOESIM_RING_SPLIT_H
#define MOESIM_RING_SPLIT_H

typedef struct {
    int hierarchical;     /* bool */
    int n_intra, n_inter; /* ring sizes: GPUs per node, nodes (flat: n_intra = 0, n_inter = members) */
    double intra_bytes, inter_bytes; /* buffer each ring phase works on */
} ring_split;

/* `members` GPUs on `nodes` nodes, `per_node` on each when every node holds the same number (0 when
 * they differ), `bytes` the full buffer per GPU. */
static inline ring_split ring_split_of(int members, int nodes, int per_node, double bytes) {
    ring_split r = {0, 0, members, 0, bytes};
    if (nodes > 1 && per_node > 1) {
        r.hierarchical = 1;
        r.n_intra = per_node;
        r.n_inter = nodes;
        r.intra_bytes = bytes;
        r.inter_bytes = bytes / per_node;
    }
    return r;
}

#endif
