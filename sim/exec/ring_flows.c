/* ring_flows.c — NCCL ring collective flows (ring_flows.h). */
#include "sim/exec/ring_flows.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "platforms/fabric_geometry.h"


int ring_steps(coll_kind kind, int n) {
    if (n < 2) return 0;
    return kind == COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

ring_plan ring_plan_make(const cluster_cfg *c, const int *gpus, int n, double bytes) {
    /* count GPUs per NVLink domain (a node unless cluster.nvlink_domain_gpus spans several);
     * hierarchical when >1 domain and all domains hold the same g > 1 */
    int n_nodes = 0, g = -1, uniform = 1;
    for (int i = 0; i < n; i++) {
        int nd = fabric_domain_of(c, gpus[i]), first = 1, count = 0;
        for (int j = 0; j < n; j++) {
            if (fabric_domain_of(c, gpus[j]) != nd) continue;
            if (j < i) first = 0;
            count++;
        }
        if (!first) continue;
        n_nodes++;
        if (g < 0) g = count;
        else if (g != count) uniform = 0;
    }
    return ring_split_of(n, n_nodes, uniform ? g : 0, bytes);
}

int ring_step_flows(const cluster_cfg *c, const int *gpus, int n, const ring_plan *rp, int phase,
                    gpu_flow_list *out) {
    if (!rp->hierarchical) {
        if (phase != 1 || n < 2) return 0;
        double chunk = rp->inter_bytes / n;
        for (int i = 0; i < n; i++)
            if (gpu_flow_push(out, gpus[i], gpus[(i + 1) % n], chunk, 0, FLOW_RDMA)) return -1;
        return 0;
    }
    /* Position of each GPU within its node (order of appearance) and its node's ordinal. */
    int *pos = moe_xmalloc((size_t)n * sizeof *pos), *ord = moe_xmalloc((size_t)n * sizeof *ord);
    if (!pos || !ord) {
        free(pos);
        free(ord);
        return -1;
    }
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
    int rc = 0;
    const int g = rp->n_intra, m = rp->n_inter;
    for (int i = 0; i < n && rc == 0; i++) {
        /* successor: next position in the same node (phase 0), same position in the next node (1) */
        int want_pos = phase == 0 ? (pos[i] + 1) % g : pos[i];
        int want_ord = phase == 0 ? ord[i] : (ord[i] + 1) % m;
        double chunk = phase == 0 ? rp->intra_bytes / g : rp->inter_bytes / m;
        for (int j = 0; j < n; j++)
            if (pos[j] == want_pos && ord[j] == want_ord) {
                rc = gpu_flow_push(out, gpus[i], gpus[j], chunk, 0, phase == 0 ? FLOW_NVLINK : FLOW_RDMA);
                break;
            }
    }
    free(pos);
    free(ord);
    return rc;
}

double ring_collective_s(const cluster_cfg *c, coll_kind kind, const int *gpus, int n, double bytes,
                         double (*step_s)(void *ctx, const gpu_flow_list *fl), void *ctx) {
    ring_plan rp = ring_plan_make(c, gpus, n, bytes);
    double total = 0;
    for (int phase = 0; phase < 2; phase++) {
        int steps = ring_steps(kind, phase == 0 ? rp.n_intra : rp.n_inter);
        if (steps == 0) continue;
        gpu_flow_list fl = {0};
        if (ring_step_flows(c, gpus, n, &rp, phase, &fl)) {
            gpu_flow_list_free(&fl);
            return -1;
        }
        double t = step_s(ctx, &fl);
        gpu_flow_list_free(&fl);
        if (t < 0) return -1;
        total += steps * t;
    }
    return total;
}
