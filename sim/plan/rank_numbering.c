/* rank_numbering.c — where a communication group lands (the numbering itself is inline in
 * rank_numbering.h). */
#include "sim/plan/rank_numbering.h"
#include "sim/base/alloc.h"

#include <stdlib.h>

/* Both placements are mixed-radix numberings of the GPUs (ep-inner: radices tp, ep, pp, dp; dp-inner:
 * tp, dp, ep, pp), so a group's GPUs are sum_i k_i * stride_i (k_i < count_i) over its varying
 * coordinates, and walking them with the smallest stride fastest visits them in ascending order: the
 * members of one node come one after another, and the walk needs no sort and no memory. */
rank_group_span rank_group_nodes(const rank_grid *g, unsigned vary, int gpus_per_node) {
    static const unsigned flag[4] = {RANK_VARY_TP, RANK_VARY_EP, RANK_VARY_STAGE, RANK_VARY_REPLICA};
    const int count[4] = {g->tp, g->ep, g->pp, g->dp};
    int n[4], stride[4], m = 0;
    for (int i = 0; i < 4; i++) {
        if (!(vary & flag[i]) || count[i] < 2) continue;
        rank_coords unit = {0, 0, 0, 0};
        if (i == 0) unit.tp = 1;
        else if (i == 1) unit.ep = 1;
        else if (i == 2) unit.stage = 1;
        else unit.replica = 1;
        int s = rank_gpu(g, rank_of(g, unit)) - rank_gpu(g, 0), j = m++;
        for (; j > 0 && stride[j - 1] > s; j--) { stride[j] = stride[j - 1]; n[j] = n[j - 1]; }
        stride[j] = s; n[j] = count[i];
    }
    int members = 1;
    for (int i = 0; i < m; i++) members *= n[i];
    /* coordinates whose stride is a multiple of the node size repeat the pattern of the others on
     * nodes of their own (the walk's blocks start on node boundaries and never share one): walk the
     * inner coordinates only and multiply */
    int inner = m, repeats = 1;
    while (inner > 0 && stride[inner - 1] >= gpus_per_node && stride[inner - 1] % gpus_per_node == 0)
        repeats *= n[--inner];
    int k[4] = {0, 0, 0, 0}, inner_members = members / repeats;
    long gpu = 0, boundary = gpus_per_node;   /* rank 0 is GPU 0 under both placements */
    int nodes = 1, run = 0, most = 0;
    for (int left = inner_members; left > 0; left--) {
        if (gpu >= boundary) {   /* a new node: the walk is ascending */
            boundary = (gpu / gpus_per_node + 1) * gpus_per_node;
            nodes++;
            run = 0;
        }
        if (++run > most) most = run;
        for (int i = 0; i < inner; i++) {   /* next member: an odometer over the coordinates */
            gpu += stride[i];
            if (++k[i] < n[i]) break;
            gpu -= (long)n[i] * stride[i];
            k[i] = 0;
        }
    }
    nodes *= repeats;
    return (rank_group_span){.members = members, .nodes = nodes, .max_per_node = most};
}

/* A group on one node has at most gpus_per_node members, so the walk stops within that many steps
 * (the stage index is not in GPU order under dp-inner, so it compares with the first member). */
int rank_stage_group_on_one_node(const rank_grid *g, int q_stride, int count, int gpus_per_node) {
    int first = -1;
    for (int k = 0; k < count; k++) {
        int q = k * q_stride;
        rank_coords c = {.replica = q / (g->tp * g->ep), .stage = 0, .ep = q / g->tp % g->ep, .tp = q % g->tp};
        int node = rank_gpu(g, rank_of(g, c)) / gpus_per_node;
        if (k == 0) first = node;
        else if (node != first) return 0;
    }
    return 1;
}

rank_group_span rank_stage_group_span(const rank_grid *g, int q_stride, int count, int gpus_per_node) {
    rank_group_span sp = {.members = count, .nodes = count, .max_per_node = 1};
    /* stage 0's GPUs are not contiguous under dp-inner: count members per node over the nodes the
     * members can fall on (GPU ids below the highest member's) */
    int hi = 0;
    for (int k = 0; k < count; k++) {
        int q = k * q_stride;
        rank_coords c = {.replica = q / (g->tp * g->ep), .stage = 0, .ep = q / g->tp % g->ep, .tp = q % g->tp};
        int gpu = rank_gpu(g, rank_of(g, c));
        if (gpu > hi) hi = gpu;
    }
    int n_slots = hi / gpus_per_node + 1;
    int *per = moe_xcalloc((size_t)n_slots, sizeof *per);
    if (!per) return sp;   /* out of memory: every member on a node of its own (the NIC bound) */
    sp.nodes = 0;
    sp.max_per_node = 0;
    for (int k = 0; k < count; k++) {
        int q = k * q_stride;
        rank_coords c = {.replica = q / (g->tp * g->ep), .stage = 0, .ep = q / g->tp % g->ep, .tp = q % g->tp};
        int node = rank_gpu(g, rank_of(g, c)) / gpus_per_node;
        if (per[node]++ == 0) sp.nodes++;
        if (per[node] > sp.max_per_node) sp.max_per_node = per[node];
    }
    free(per);
    return sp;
}
