/* eplb.c — DeepSeek's expert-parallelism load balancer (see eplb.h for the algorithm and its source). */
#include "sim/program/eplb.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

void eplb_replicate(const double *load, int E, int extra, int max_copies, int *count, int *created) {
    for (int e = 0; e < E; e++) count[e] = 1;
    for (int k = 0; k < extra; k++) {
        int best = -1;
        for (int e = 0; e < E; e++)
            if ((max_copies <= 0 || count[e] < max_copies) &&
                (best < 0 || load[e] / count[e] > load[best] / count[best]))
                best = e;
        if (best < 0) return;
        count[best]++;
        if (created) created[k] = best;
    }
}

/* the items to place, by decreasing weight, ties by index */
typedef struct { double w; int i; } ranked;
static int by_weight(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return x->i - y->i;
}

int eplb_pack(eplb_item *items, int n_items, int n_packs, const int *room, int avoid_key) {
    double *load = moe_xcalloc((size_t)n_packs, sizeof(double));
    int *used = moe_xcalloc((size_t)n_packs, sizeof(int));
    ranked *order = moe_xmalloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *order);
    int n_place = 0, rc = 0;
    for (int i = 0; i < n_items; i++) {
        if (items[i].pack >= 0) load[items[i].pack] += items[i].w;
        else order[n_place++] = (ranked){items[i].w, i};
    }
    /* EPLB's shortcut: one item per pack and none placed before, item i to pack i */
    int one_each = n_place == n_items && n_items == n_packs;
    for (int p = 0; p < n_packs && one_each; p++) one_each = room[p] == 1;
    if (one_each) {
        for (int i = 0; i < n_items; i++) { items[i].pack = i; items[i].pos = 0; }
        n_place = 0;
    }
    qsort(order, (size_t)n_place, sizeof *order, by_weight);
    for (int k = 0; k < n_place && rc == 0; k++) {
        eplb_item *it = &items[order[k].i];
        int pick = -1, any = -1;
        for (int p = 0; p < n_packs; p++) {
            if (used[p] >= room[p]) continue;
            if (any < 0 || load[p] < load[any]) any = p;
            if (!avoid_key) continue;
            int holds = 0;
            for (int i = 0; i < n_items && !holds; i++) holds = items[i].pack == p && items[i].key == it->key;
            if (!holds && (pick < 0 || load[p] < load[pick])) pick = p;
        }
        if (pick < 0) pick = any;
        if (pick < 0) { rc = -1; break; }
        it->pack = pick;
        it->pos = used[pick]++;
        load[pick] += it->w;
    }
    free(load); free(used); free(order);
    return rc;
}

/* Place `E` logical experts `ids` (loads `load`, by the ids' order) over `n_slots` physical slots on
 * `n_ranks` ranks, the first of them `rank0`: replicate, then pack the physical experts (EPLB's steps 2
 * and 3 within one node; the global policy with the whole group as one node). */
static int replicate_and_pack(const double *load, const int *ids, int E, int n_slots, int n_ranks, int rank0,
                              int slots_per_rank, int *phys) {
    int *count = moe_xmalloc((size_t)E * sizeof(int)), *created = moe_xmalloc((size_t)(n_slots - E + 1) * sizeof(int));
    eplb_replicate(load, E, n_slots - E, 0, count, created);
    eplb_item *items = moe_xmalloc((size_t)n_slots * sizeof *items);
    int *room = moe_xmalloc((size_t)n_ranks * sizeof(int));
    /* EPLB's physical order (replicate_experts' phy2log): the logical experts first, then the replicas
     * in their order of creation */
    int n = 0;
    for (int e = 0; e < E; e++) items[n++] = (eplb_item){load[e] / count[e], ids[e], -1, 0};
    for (int k = 0; k < n_slots - E; k++) {
        int e = created[k];
        items[n++] = (eplb_item){load[e] / count[e], ids[e], -1, 0};
    }
    for (int j = 0; j < n_ranks; j++) room[j] = slots_per_rank;
    int rc = eplb_pack(items, n, n_ranks, room, 0);
    for (int k = 0; rc == 0 && k < n; k++) phys[(size_t)(rank0 + items[k].pack) * slots_per_rank + items[k].pos] = items[k].key;
    free(count); free(created); free(items); free(room);
    return rc;
}

/* EPLB's rebalance_experts_hierarchical for one layer; the global policy is its call with one group
 * and one node */
static int hierarchical(const double *load, int E, int n_groups, int n_nodes, int n_ranks, int slots_per_rank,
                        int *phys) {
    /* 1. the expert groups onto the nodes by their summed loads */
    int gsize = E / n_groups, per_node = E / n_nodes, rpn = n_ranks / n_nodes;
    eplb_item *groups = moe_xmalloc((size_t)n_groups * sizeof *groups);
    int *room = moe_xmalloc((size_t)n_nodes * sizeof(int));
    for (int g = 0; g < n_groups; g++) {
        double w = 0;
        for (int k = 0; k < gsize; k++) w += load[g * gsize + k];
        groups[g] = (eplb_item){w, g, -1, 0};
    }
    for (int k = 0; k < n_nodes; k++) room[k] = n_groups / n_nodes;
    int rc = eplb_pack(groups, n_groups, n_nodes, room, 0);
    /* 2 and 3. each node's experts (its groups in their order of arrival: EPLB's mlog order) replicated
     * over its slots and packed onto its GPUs */
    int *ids = moe_xmalloc((size_t)per_node * sizeof(int));
    double *node_load = moe_xmalloc((size_t)per_node * sizeof(double));
    for (int k = 0; rc == 0 && k < n_nodes; k++) {
        for (int g = 0; g < n_groups; g++) {
            if (groups[g].pack != k) continue;
            for (int i = 0; i < gsize; i++) {
                int at = groups[g].pos * gsize + i;
                ids[at] = g * gsize + i;
                node_load[at] = load[g * gsize + i];
            }
        }
        rc = replicate_and_pack(node_load, ids, per_node, rpn * slots_per_rank, rpn, k * rpn, slots_per_rank, phys);
    }
    free(groups); free(room); free(ids); free(node_load);
    return rc;
}

int eplb_rebalance(const double *load, int E, int n_groups, int n_nodes, int n_ranks, int slots_per_rank, int *phys) {
    if (E <= 0 || n_ranks <= 0 || n_ranks * slots_per_rank < E) return -1;
    if (n_groups < 1) n_groups = 1;
    if (n_nodes < 1) n_nodes = 1;
    /* rebalance_experts: hierarchical when the nodes divide the groups (and, as its asserts ask, the
     * groups the experts and the nodes the GPUs), else global */
    int hier = n_groups % n_nodes == 0 && E % n_groups == 0 && n_ranks % n_nodes == 0;
    if (hier && hierarchical(load, E, n_groups, n_nodes, n_ranks, slots_per_rank, phys) == 0) return n_nodes > 1;
    return hierarchical(load, E, 1, 1, n_ranks, slots_per_rank, phys) ? -1 : 0;
}

int eplb_moves(const int *old_phys, const int *new_phys, int n_ranks, int slots_per_rank, const int *rank_node,
               int *moves) {
    int moved = 0, S = slots_per_rank;
    memset(moves, 0, (size_t)n_ranks * n_ranks * sizeof *moves);
    for (int j = 0; j < n_ranks; j++)
        for (int s = 0; s < S; s++) {
            int e = new_phys[j * S + s], had = 0, src = -1;
            for (int k = 0; k < S && !had; k++) had = old_phys[j * S + k] == e;
            /* a second copy of e arriving on j in this rebalance is fetched once */
            for (int k = 0; k < s && !had; k++) had = new_phys[j * S + k] == e;
            if (had) continue;
            for (int i = 0; i < n_ranks; i++) {
                int holds = 0;
                for (int k = 0; k < S && !holds; k++) holds = old_phys[i * S + k] == e;
                if (!holds) continue;
                if (src < 0) src = i;
                if (rank_node && rank_node[i] == rank_node[j]) { src = i; break; }
            }
            if (src < 0) continue;   /* no copy anywhere before: nothing to fetch */
            moves[src * n_ranks + j]++;
            moved++;
        }
    return moved;
}

int eplb_replica_sync_bytes(const int *phys, int n_ranks, int slots_per_rank, int E, double grad_bytes, double *bytes) {
    int S = slots_per_rank, synced = 0;
    int *on = moe_xmalloc((size_t)n_ranks * sizeof(int));
    memset(bytes, 0, (size_t)n_ranks * n_ranks * sizeof *bytes);
    for (int e = 0; e < E; e++) {
        int m = 0;
        for (int j = 0; j < n_ranks; j++) {
            int holds = 0;
            for (int k = 0; k < S && !holds; k++) holds = phys[j * S + k] == e;
            if (holds) on[m++] = j;
        }
        if (m < 2) continue;
        synced++;
        for (int k = 0; k < m; k++) bytes[(size_t)on[k] * n_ranks + on[(k + 1) % m]] += 2.0 * (m - 1) / m * grad_bytes;
    }
    free(on);
    return synced;
}
