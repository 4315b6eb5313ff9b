/* deepep_flows.c — all-to-all flows with DeepEP aggregation (deepep_flows.h). */
#include "sim/exec/deepep_flows.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "platforms/fabric_geometry.h"

int a2a_copy_stride(const cluster_cfg *c, const a2a_pattern *p) {
    int lo = p->gpus[0], hi = p->gpus[0];
    for (int i = 1; i < p->n; i++) {
        if (p->gpus[i] < lo) lo = p->gpus[i];
        if (p->gpus[i] > hi) hi = p->gpus[i];
    }
    int nlo = fabric_domain_of(c, lo), nhi = fabric_domain_of(c, hi);
    if (nlo == nhi) return hi - lo + 1;
    return (nhi - nlo + 1) * fabric_domain_gpus(c);
}

int a2a_copies(const cluster_cfg *c, const a2a_pattern *p) {
    int want = p->concurrent_groups > 1 ? p->concurrent_groups : 1;
    int fit = (c->nodes * c->gpus_per_node) / a2a_copy_stride(c, p);
    return want < fit ? want : (fit > 0 ? fit : 1);
}

/* Payload rank i sends to NVLink domain `node` over RDMA: node_bytes when given, else the sum of its
 * per-rank payloads to that domain's members (every inter-domain byte crosses the NIC once). "Node"
 * below is DeepEP's node: an NVLink domain (a node unless cluster.nvlink_domain_gpus spans several). */
static double rdma_bytes(const cluster_cfg *c, const a2a_pattern *p, int i, int node) {
    if (p->node_bytes) {
        for (int k = 0; k < p->n_nodes; k++)
            if (p->nodes[k] == node) return p->node_bytes[(size_t)i * (size_t)p->n_nodes + (size_t)k];
        return 0;
    }
    double b = 0;
    for (int j = 0; j < p->n; j++)
        if (j != i && fabric_domain_of(c, p->gpus[j]) == node) b += p->bytes[(size_t)i * (size_t)p->n + (size_t)j];
    return b;
}

int a2a_flows_build(const cluster_cfg *c, const a2a_pattern *p, gpu_flow_list *out) {
    const int G = c->nodes * c->gpus_per_node, n = p->n, gpn = fabric_domain_gpus(c);   /* GPUs of a domain */
    if (n < 1 || !p->gpus || !p->bytes) return -1;
    if (p->node_bytes && (p->n_nodes < 1 || !p->nodes)) return -1;
    for (int i = 0; i < n; i++)
        if (p->gpus[i] < 0 || p->gpus[i] >= G) return -1;

    /* Distinct destination nodes of the group, ascending (the pattern's own list when given). */
    int *nodes = moe_xmalloc((size_t)n * sizeof *nodes), n_nodes = 0;
    if (!nodes) return -1;
    for (int i = 0; i < n; i++) {
        int nd = fabric_domain_of(c, p->gpus[i]), seen = 0;
        for (int k = 0; k < n_nodes; k++) seen |= nodes[k] == nd;
        if (!seen) nodes[n_nodes++] = nd;
    }

    const size_t first_rdma = out->n;
    int crosses_leaf = 0;
    if (p->pairwise) {
        /* NCCL all_to_all: every rank pair its own transfer; the route (NVLink, or PXN then the rail)
         * is the fabric's. The inter-node ones are what the concurrent copies share. */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int gi = p->gpus[i], gj = p->gpus[j];
                double b = i == j ? 0 : p->bytes[(size_t)i * (size_t)n + (size_t)j];
                if (b <= 0) continue;
                int inter = fabric_domain_of(c, gi) != fabric_domain_of(c, gj);
                if (inter && fabric_leaf_of_node(c, fabric_node_of(c, gi)) != fabric_leaf_of_node(c, fabric_node_of(c, gj)))
                    crosses_leaf = 1;
                if (gpu_flow_push(out, gi, gj, b, 0, inter ? FLOW_RDMA : FLOW_NVLINK)) goto oom;
            }
        const size_t end_pairs = out->n;
        if (crosses_leaf) {
            int copies = a2a_copies(c, p), stride = a2a_copy_stride(c, p);
            for (int cp = 1; cp < copies; cp++)
                for (size_t f = first_rdma; f < end_pairs; f++) {
                    gpu_flow x = out->v[f];
                    if (x.kind != FLOW_RDMA) continue;
                    if (gpu_flow_push(out, (x.src_gpu + cp * stride) % G, (x.dst_gpu + cp * stride) % G, x.bytes, cp,
                                      FLOW_RDMA))
                        goto oom;
                }
        }
        free(nodes);
        return 0;
    }

    /* RDMA: one flow per (sender, destination domain), on the sender's rail, landing on the GPU at
     * the sender's position in that domain. */
    for (int i = 0; i < n; i++) {
        int gi = p->gpus[i], ni = fabric_domain_of(c, gi);
        for (int k = 0; k < n_nodes; k++) {
            if (nodes[k] == ni) continue;
            double b = rdma_bytes(c, p, i, nodes[k]);
            int landing = fabric_landing_gpu(c, gi, nodes[k]);
            if (b > 0 && fabric_leaf_of_node(c, fabric_node_of(c, gi)) != fabric_leaf_of_node(c, fabric_node_of(c, landing)))
                crosses_leaf = 1;
            if (gpu_flow_push(out, gi, landing, b, 0, FLOW_RDMA)) goto oom;
        }
    }
    const size_t end_rdma = out->n;

    /* NVLink: per node, per ordered GPU pair (a -> b): direct payload of a's rank to b's rank, plus
     * what a forwards to b as the landing GPU of senders on a's rail in other nodes. Accumulated in a
     * gpn x gpn matrix per node. */
    double *m = moe_xcalloc((size_t)gpn * (size_t)gpn, sizeof *m);
    if (!m) goto oom;
    for (int k = 0; k < n_nodes; k++) {
        int node = nodes[k];
        for (size_t z = 0; z < (size_t)gpn * (size_t)gpn; z++) m[z] = 0;
        for (int j = 0; j < n; j++) {
            int gj = p->gpus[j];
            if (fabric_domain_of(c, gj) != node) continue;
            int b_loc = gj % gpn;
            for (int i = 0; i < n; i++) {
                if (i == j) continue;
                int gi = p->gpus[i];
                double b = p->bytes[(size_t)i * (size_t)n + (size_t)j];
                if (b <= 0) continue;
                /* direct (same node) or forwarded by the landing GPU of i's rail */
                int a_loc = gi % gpn;
                if (a_loc != b_loc) m[(size_t)a_loc * (size_t)gpn + (size_t)b_loc] += b;
            }
        }
        for (int a = 0; a < gpn; a++)
            for (int b = 0; b < gpn; b++)
                if (gpu_flow_push(out, node * gpn + a, node * gpn + b, m[(size_t)a * (size_t)gpn + (size_t)b], 0,
                         FLOW_NVLINK)) {
                    free(m);
                    goto oom;
                }
    }
    free(m);

    /* Concurrent copies: RDMA flows only, and only when they can meet the group (leaf uplinks). */
    if (crosses_leaf) {
        int copies = a2a_copies(c, p), stride = a2a_copy_stride(c, p);
        for (int cp = 1; cp < copies; cp++)
            for (size_t f = first_rdma; f < end_rdma; f++) {
                gpu_flow x = out->v[f];
                if (gpu_flow_push(out, (x.src_gpu + cp * stride) % G, (x.dst_gpu + cp * stride) % G, x.bytes, cp, FLOW_RDMA))
                    goto oom;
            }
    }
    free(nodes);
    return 0;
oom:
    free(nodes);
    return -1;
}

