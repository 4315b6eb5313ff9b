/* comm_flows.c — patterns -> GPU-to-GPU flows (see comm_flows.h for the model). */
#include "sim/exec/comm_flows.h"
#include "platforms/fabric_geometry.h"

#include <stdlib.h>

void gpu_flow_list_free(gpu_flow_list *l) {
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static int push(gpu_flow_list *l, int src, int dst, double bytes, int copy, flow_kind kind) {
    if (bytes <= 0 || src == dst) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        gpu_flow *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (gpu_flow){src, dst, bytes, copy, kind};
    return 0;
}

int a2a_copy_stride(const cluster_cfg *c, const a2a_pattern *p) {
    int lo = p->gpus[0], hi = p->gpus[0];
    for (int i = 1; i < p->n; i++) {
        if (p->gpus[i] < lo) lo = p->gpus[i];
        if (p->gpus[i] > hi) hi = p->gpus[i];
    }
    int nlo = fabric_node_of(c, lo), nhi = fabric_node_of(c, hi);
    if (nlo == nhi) return hi - lo + 1;
    return (nhi - nlo + 1) * c->gpus_per_node;
}

int a2a_copies(const cluster_cfg *c, const a2a_pattern *p) {
    int want = p->concurrent_groups > 1 ? p->concurrent_groups : 1;
    int fit = (c->nodes * c->gpus_per_node) / a2a_copy_stride(c, p);
    return want < fit ? want : (fit > 0 ? fit : 1);
}

/* Payload rank i sends to node `node` over RDMA: node_bytes when given, else the sum of its per-rank
 * payloads to that node's members (every inter-node byte crosses the NIC once). */
static double rdma_bytes(const cluster_cfg *c, const a2a_pattern *p, int i, int node) {
    if (p->node_bytes) {
        for (int k = 0; k < p->n_nodes; k++)
            if (p->nodes[k] == node) return p->node_bytes[(size_t)i * (size_t)p->n_nodes + (size_t)k];
        return 0;
    }
    double b = 0;
    for (int j = 0; j < p->n; j++)
        if (j != i && fabric_node_of(c, p->gpus[j]) == node) b += p->bytes[(size_t)i * (size_t)p->n + (size_t)j];
    return b;
}

int a2a_flows_build(const cluster_cfg *c, const a2a_pattern *p, gpu_flow_list *out) {
    const int G = c->nodes * c->gpus_per_node, n = p->n, gpn = c->gpus_per_node;
    if (n < 1 || !p->gpus || !p->bytes) return -1;
    if (p->node_bytes && (p->n_nodes < 1 || !p->nodes)) return -1;
    for (int i = 0; i < n; i++)
        if (p->gpus[i] < 0 || p->gpus[i] >= G) return -1;

    /* Distinct destination nodes of the group, ascending (the pattern's own list when given). */
    int *nodes = malloc((size_t)n * sizeof *nodes), n_nodes = 0;
    if (!nodes) return -1;
    for (int i = 0; i < n; i++) {
        int nd = fabric_node_of(c, p->gpus[i]), seen = 0;
        for (int k = 0; k < n_nodes; k++) seen |= nodes[k] == nd;
        if (!seen) nodes[n_nodes++] = nd;
    }

    /* RDMA: one flow per (sender, destination node), on the sender's rail. */
    const size_t first_rdma = out->n;
    int crosses_leaf = 0;
    for (int i = 0; i < n; i++) {
        int gi = p->gpus[i], ni = fabric_node_of(c, gi), rail = fabric_rail_of(c, gi);
        for (int k = 0; k < n_nodes; k++) {
            if (nodes[k] == ni) continue;
            double b = rdma_bytes(c, p, i, nodes[k]);
            if (b > 0 && fabric_leaf_of_node(c, ni) != fabric_leaf_of_node(c, nodes[k])) crosses_leaf = 1;
            if (push(out, gi, fabric_gpu(c, nodes[k], rail), b, 0, FLOW_RDMA)) goto oom;
        }
    }
    const size_t end_rdma = out->n;

    /* NVLink: per node, per ordered GPU pair (a -> b): direct payload of a's rank to b's rank, plus
     * what a forwards to b as the landing GPU of senders on a's rail in other nodes. Accumulated in a
     * gpn x gpn matrix per node. */
    double *m = calloc((size_t)gpn * (size_t)gpn, sizeof *m);
    if (!m) goto oom;
    for (int k = 0; k < n_nodes; k++) {
        int node = nodes[k];
        for (size_t z = 0; z < (size_t)gpn * (size_t)gpn; z++) m[z] = 0;
        for (int j = 0; j < n; j++) {
            int gj = p->gpus[j];
            if (fabric_node_of(c, gj) != node) continue;
            int b_loc = fabric_rail_of(c, gj);
            for (int i = 0; i < n; i++) {
                if (i == j) continue;
                int gi = p->gpus[i];
                double b = p->bytes[(size_t)i * (size_t)n + (size_t)j];
                if (b <= 0) continue;
                /* direct (same node) or forwarded by the landing GPU of i's rail */
                int a_loc = fabric_rail_of(c, gi);
                if (a_loc != b_loc) m[(size_t)a_loc * (size_t)gpn + (size_t)b_loc] += b;
            }
        }
        for (int a = 0; a < gpn; a++)
            for (int b = 0; b < gpn; b++)
                if (push(out, fabric_gpu(c, node, a), fabric_gpu(c, node, b), m[(size_t)a * (size_t)gpn + (size_t)b], 0,
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
                if (push(out, (x.src_gpu + cp * stride) % G, (x.dst_gpu + cp * stride) % G, x.bytes, cp, FLOW_RDMA))
                    goto oom;
            }
    }
    free(nodes);
    return 0;
oom:
    free(nodes);
    return -1;
}

/* ---- rings ------------------------------------------------------------------------------------- */

int ring_steps(coll_kind kind, int n) {
    if (n < 2) return 0;
    return kind == COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

ring_plan ring_plan_make(const cluster_cfg *c, const int *gpus, int n, double bytes) {
    ring_plan rp = {0, 0, n, 0, bytes};
    /* count GPUs per node; hierarchical when >1 node and all nodes hold the same g > 1 */
    int n_nodes = 0, g = -1, uniform = 1;
    for (int i = 0; i < n; i++) {
        int nd = fabric_node_of(c, gpus[i]), first = 1, count = 0;
        for (int j = 0; j < n; j++) {
            if (fabric_node_of(c, gpus[j]) != nd) continue;
            if (j < i) first = 0;
            count++;
        }
        if (!first) continue;
        n_nodes++;
        if (g < 0) g = count;
        else if (g != count) uniform = 0;
    }
    if (n_nodes > 1 && uniform && g > 1) {
        rp.hierarchical = 1;
        rp.n_intra = g;
        rp.n_inter = n_nodes;
        rp.intra_bytes = bytes;
        rp.inter_bytes = bytes / g;
    }
    return rp;
}

int ring_step_flows(const cluster_cfg *c, const int *gpus, int n, const ring_plan *rp, int phase,
                    gpu_flow_list *out) {
    if (!rp->hierarchical) {
        if (phase != 1 || n < 2) return 0;
        double chunk = rp->inter_bytes / n;
        for (int i = 0; i < n; i++)
            if (push(out, gpus[i], gpus[(i + 1) % n], chunk, 0, FLOW_RDMA)) return -1;
        return 0;
    }
    /* Position of each GPU within its node (order of appearance) and its node's ordinal. */
    int *pos = malloc((size_t)n * sizeof *pos), *ord = malloc((size_t)n * sizeof *ord);
    if (!pos || !ord) {
        free(pos);
        free(ord);
        return -1;
    }
    int n_ord = 0;
    for (int i = 0; i < n; i++) {
        int nd = fabric_node_of(c, gpus[i]);
        pos[i] = 0;
        ord[i] = -1;
        for (int j = 0; j < i; j++)
            if (fabric_node_of(c, gpus[j]) == nd) {
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
                rc = push(out, gpus[i], gpus[j], chunk, 0, phase == 0 ? FLOW_NVLINK : FLOW_RDMA);
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
