/* ring_flows.c — NCCL ring collective flows (ring_flows.h). */
#include "sim/exec/ring_flows.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "platforms/fabric_geometry.h"

/* Each member's place: its NVLink domain's ordinal in the group (order of appearance) and its position
 * inside that domain. Returns the domains; *per_node: members per domain when all hold as many, else 0. */
static int ring_places(const cluster_cfg *c, const int *gpus, int n, int *ord, int *pos, int *per_node) {
    int n_ord = 0;
    for (int i = 0; i < n; i++) {
        int nd = fabric_domain_of(c, gpus[i]);
        pos[i] = 0;
        ord[i] = -1;
        for (int j = 0; j < i; j++)
            if (fabric_domain_of(c, gpus[j]) == nd) {
                pos[i]++;
                ord[i] = ord[j];
            }
        if (ord[i] < 0) ord[i] = n_ord++;
    }
    int *count = moe_xcalloc((size_t)n_ord + 1, sizeof(int));
    for (int i = 0; i < n; i++) count[ord[i]]++;
    *per_node = count[0];
    for (int k = 1; k < n_ord; k++)
        if (count[k] != count[0]) *per_node = 0;
    free(count);
    return n_ord;
}

ring_plan ring_plan_make(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes) {
    int *ord = moe_xmalloc((size_t)(n + 1) * sizeof *ord), *pos = moe_xmalloc((size_t)(n + 1) * sizeof *pos), g = 0;
    int nodes = n > 0 ? ring_places(c, gpus, n, ord, pos, &g) : 0;
    free(ord);
    free(pos);
    return ring_split_of(n, nodes, g, bytes, kind == COLL_ALL_REDUCE, fabric_nvlink_Bps(c), fabric_nic_Bps(c),
                         c->nccl_model);
}

static int push(const cluster_cfg *c, gpu_flow_list *out, int src, int dst, double bytes, double *wire_s) {
    if (bytes <= 0 || src == dst) return 0;
    double lat = fabric_route_latency_s(c, src, dst);
    if (lat > *wire_s) *wire_s = lat;
    return gpu_flow_push(out, src, dst, bytes, 0, fabric_domain_of(c, src) == fabric_domain_of(c, dst) ? FLOW_NVLINK : FLOW_RDMA);
}

int ring_step_flows(const cluster_cfg *c, const int *gpus, int n, const ring_plan *rp, gpu_flow_list *out,
                    double *wire_s) {
    *wire_s = 0;
    if (n < 2 || rp->steps == 0) return 0;
    if (!rp->even) {   /* one ring in member order */
        double chunk = rp->nvl_bytes + rp->nic_bytes;
        for (int i = 0; i < n; i++)
            if (push(c, out, gpus[i], gpus[(i + 1) % n], chunk, wire_s)) return -1;
        return 0;
    }
    int *ord = moe_xmalloc((size_t)n * sizeof *ord), *pos = moe_xmalloc((size_t)n * sizeof *pos), g = 0;
    int nodes = ring_places(c, gpus, n, ord, pos, &g), rc = 0;
    /* member at (ordinal, position): the group lists each domain's members in order of appearance */
    int *at = moe_xmalloc((size_t)n * sizeof *at);
    for (int i = 0; i < n; i++) at[ord[i] * g + pos[i]] = i;
    for (int i = 0; i < n && rc == 0; i++) {
        int next_in = at[ord[i] * g + (pos[i] + 1) % g], next_node = at[((ord[i] + 1) % nodes) * g + pos[i]];
        rc = push(c, out, gpus[i], gpus[next_in], rp->nvl_bytes, wire_s) ||
             push(c, out, gpus[i], gpus[next_node], rp->nic_bytes, wire_s);
    }
    free(at);
    free(ord);
    free(pos);
    return rc ? -1 : 0;
}

int ring_rings_contend(const cluster_cfg *c) {
    return fabric_pods(c) > 1 || fabric_ecmp(c) || c->oversubscription > 1.0;
}

int ring_concurrent_copies(const cluster_cfg *c, const int *gpus, int n, int concurrent, gpu_flow_list *fl) {
    if (!ring_rings_contend(c) || concurrent < 2 || n < 1) return 0;
    /* where rings can meet: the core across pods; a leaf's uplinks when they are oversubscribed or
     * hashed (non-blocking and sprayed, a leaf's bundle carries every NIC under it at line rate) */
    const int leaves = fabric_ecmp(c) || c->oversubscription > 1.0;
    int crosses = 0, nodes = 0;
    for (size_t i = 0; i < fl->n && !crosses; i++) {
        int ns = fabric_node_of(c, fl->v[i].src_gpu), nd = fabric_node_of(c, fl->v[i].dst_gpu);
        crosses = fabric_pod_of_node(c, ns) != fabric_pod_of_node(c, nd) ||
                  (leaves && fabric_leaf_of_node(c, ns) != fabric_leaf_of_node(c, nd));
    }
    if (!crosses) return 0;
    for (int i = 0; i < n; i++) {   /* distinct nodes of the ring: members listed node by node or not */
        int nd = fabric_node_of(c, gpus[i]), seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = fabric_node_of(c, gpus[k]) == nd;
        nodes += !seen;
    }
    long per_rail = (long)concurrent * n / ((long)c->gpus_per_node * nodes);
    int C = per_rail < 2 ? 1 : (int)(per_rail < c->nodes ? per_rail : c->nodes);
    if (C < 2) return 0;
    const size_t own = fl->n;
    for (int j = 1; j < C; j++)
        for (size_t f = 0; f < own; f++) {
            gpu_flow x = fl->v[f];
            int ends[2] = {x.src_gpu, x.dst_gpu};
            for (int e = 0; e < 2; e++) {
                int nd = fabric_node_of(c, ends[e]), blk = nd / C * C, m = blk + (nd - blk + j) % C;
                if (m >= c->nodes) m = blk + (nd - blk + j) % (c->nodes - blk);   /* a short last block */
                ends[e] = fabric_gpu(c, m, ends[e] % c->gpus_per_node);
            }
            if (gpu_flow_push(fl, ends[0], ends[1], x.bytes, j, x.kind)) return -1;
        }
    return C - 1;
}

double ring_collective_s(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes, int concurrent,
                         double (*step_bw_s)(void *ctx, const gpu_flow_list *fl), void *ctx) {
    ring_plan rp = ring_plan_make(c, kind, gpus, n, bytes);
    if (rp.steps == 0 || bytes <= 0) return 0.0;
    gpu_flow_list fl = {0};
    double wire = 0;
    if (ring_step_flows(c, gpus, n, &rp, &fl, &wire) || ring_concurrent_copies(c, gpus, n, concurrent, &fl) < 0) {
        gpu_flow_list_free(&fl);
        return -1;
    }
    double t = step_bw_s(ctx, &fl);
    gpu_flow_list_free(&fl);
    if (t < 0) return -1;
    return ring_split_time_s(&rp, rp.steps * t, wire);
}
