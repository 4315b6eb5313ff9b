/* a2a_bench.c — DeepEP-style all-to-all benchmark on the simulated fabric (see a2a_bench.h).
 *
 * Uniform routing is used in expectation (no sampling): with E experts spread evenly over the ranks,
 * a token picks K distinct experts uniformly, so it reaches a given rank holding e experts with
 * probability 1 - C(E-e, K)/C(E, K). Node-limited routing (M of the group's N nodes) first picks M
 * nodes uniformly, then K experts among their M E/N: a node is reached with probability M/N and a
 * rank, given its node, with 1 - C(M E/N - e, K)/C(M E/N, K). The RDMA payload to a node is one copy
 * per (token, node) (DeepEP), the NVLink fan-out one copy per (token, rank).
 */
#include "sim/simgrid/a2a_bench.h"
#include "sim/base/alloc.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/ring_flows.h"
#include "sim/simgrid/comm_simgrid.h"

#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <stdlib.h>

/* P(a token's K distinct experts, drawn uniformly from `pool`, hit a set of `hit` of them). */
static double p_hit(double pool, double hit, int k) {
    if (hit >= pool) return 1.0;
    if (pool - hit < k) return 1.0;
    return 1.0 - exp(gsl_sf_lnchoose((unsigned)(pool - hit), (unsigned)k) - gsl_sf_lnchoose((unsigned)pool, (unsigned)k));
}

typedef struct {
    int n, n_nodes;
    int *gpus, *nodes;
    double *bytes, *node_bytes;
    double rank_bytes;        /* bytes per rank (row sum incl. the local share): nccl-tests "size" */
    double nic_bytes, nvl_bytes; /* per rank: RDMA payload sent, NVLink payload received */
} bench_case;

static int make_case(const scenario *s, int ep, int tokens, int hidden, int topk, double dtype_B, int node_limit,
                     bench_case *bc) {
    const int gpn = s->cluster.gpus_per_node;
    const int E = s->model.experts > 0 ? s->model.experts : ep;
    bc->n = ep;
    bc->n_nodes = (ep + gpn - 1) / gpn;
    bc->gpus = moe_xmalloc((size_t)ep * sizeof(int));
    bc->nodes = moe_xmalloc((size_t)bc->n_nodes * sizeof(int));
    bc->bytes = moe_xcalloc((size_t)ep * ep, sizeof(double));
    bc->node_bytes = moe_xcalloc((size_t)ep * bc->n_nodes, sizeof(double));
    if (!bc->gpus || !bc->nodes || !bc->bytes || !bc->node_bytes) return -1;
    for (int i = 0; i < ep; i++) bc->gpus[i] = i;
    for (int k = 0; k < bc->n_nodes; k++) bc->nodes[k] = k;
    const double e_rank = (double)E / ep, e_node = e_rank * (ep < gpn ? ep : gpn);
    const int limited = node_limit > 0 && node_limit < bc->n_nodes;
    const double p_node = limited ? (double)node_limit / bc->n_nodes : p_hit(E, e_node, topk);
    const double p_rank = limited ? p_node * p_hit(node_limit * e_node, e_rank, topk) : p_hit(E, e_rank, topk);
    const double tok_B = hidden * dtype_B;
    bc->rank_bytes = bc->nic_bytes = bc->nvl_bytes = 0;
    for (int i = 0; i < ep; i++) {
        for (int j = 0; j < ep; j++) bc->bytes[i * ep + j] = tokens * p_rank * tok_B;
        for (int k = 0; k < bc->n_nodes; k++)
            bc->node_bytes[i * bc->n_nodes + k] = k == i / gpn ? 0 : tokens * p_node * tok_B;
    }
    /* per-rank figures of rank 0 (all ranks are alike under uniform routing) */
    for (int j = 0; j < ep; j++) bc->rank_bytes += bc->bytes[j];
    for (int k = 0; k < bc->n_nodes; k++) bc->nic_bytes += bc->node_bytes[k];
    for (int j = 1; j < ep; j++) /* received over NVLink: every payload into rank 0 but its own rail's own-node one */
        if (j % gpn != 0 || j / gpn == 0) bc->nvl_bytes += bc->bytes[j * ep];
    return 0;
}

static void free_case(bench_case *bc) {
    free(bc->gpus);
    free(bc->nodes);
    free(bc->bytes);
    free(bc->node_bytes);
}

int a2a_bench_run(const scenario *s, int ep, int tokens, int hidden, int topk, dtype_kind dt, int node_limit,
                  FILE *out, moe_error *err) {
    const int G = scn_gpus(s);
    char v[32];
    snprintf(v, sizeof v, "%d", ep);
    if (ep < 2 || ep > G) return moe_error_input(err, "--a2a", NULL, v, "an EP size in [2, %d] (the cluster's GPUs)", G);
    if (topk < 1) return moe_error_input(err, "--topk", NULL, NULL, "top-k >= 1");
    comm_model sg = sg_comm_create(s, err);
    if (!sg.ctx) return err->code;
    comm_model an = comm_analytic_create(s);

    fprintf(out, "# moesim all-to-all benchmark (DeepEP-style: one RDMA copy per destination node, NVLink fan-out)\n");
    fprintf(out, "# cluster %s: %d x %d GPUs, NVLink %g GB/s, NIC %g Gb/s, %d nodes/leaf, oversubscription %g\n",
            s->cluster.preset, s->cluster.nodes, s->cluster.gpus_per_node, s->cluster.nvlink_GBps, s->cluster.nic_gbps,
            s->cluster.leaf_down_ports, s->cluster.oversubscription);
    fprintf(out, "# tokens/rank %d, hidden %d, top-%d of %d experts, uniform routing%s%s; dispatch %s, combine bf16\n",
            tokens, hidden, topk, s->model.experts, node_limit > 0 ? ", node limit " : "",
            node_limit > 0 ? (snprintf(v, sizeof v, "%d", node_limit), v) : "", dt == DT_FP8 ? "fp8" : "bf16");
    fprintf(out, "# %4s %5s %8s  %-8s %12s %10s %10s %9s %9s %9s %9s %10s\n", "ep", "nodes", "tokens", "op", "bytes/rank",
            "time(us)", "hand(us)", "RDMA GB/s", "NVL GB/s", "algbw", "busbw", "sim wall s");
    int first = ep < 8 ? ep : 8;
    for (int n = first; n <= ep; n *= 2) {
        for (int op = 0; op < 2; op++) {
            double dB = op == 0 ? dtype_bytes(dt) : 2.0;
            bench_case bc = {0};
            if (make_case(s, n, tokens, hidden, topk, dB, node_limit, &bc)) {
                free_case(&bc);
                an.destroy(an.ctx);
                return moe_error_set(err, EXIT_RUNTIME, "out of memory");
            }
            a2a_pattern p = {.n = n, .gpus = bc.gpus, .bytes = bc.bytes, .node_bytes = bc.n_nodes > 1 ? bc.node_bytes : NULL,
                             .n_nodes = bc.n_nodes, .nodes = bc.nodes, .concurrent_groups = 1};
            sg_comm_stats before = sg_comm_get_stats(&sg);
            double t = sg.a2a_s(sg.ctx, &p), th = an.a2a_s(an.ctx, &p);
            sg_comm_stats after = sg_comm_get_stats(&sg);
            double algbw = bc.rank_bytes / t / 1e9;
            fprintf(out, "  %4d %5d %8d  %-8s %12.0f %10.1f %10.1f %9.1f %9.1f %9.1f %9.1f %10.3f\n", n, bc.n_nodes, tokens,
                    op == 0 ? "dispatch" : "combine", bc.rank_bytes, t * 1e6, th * 1e6, bc.nic_bytes / t / 1e9,
                    bc.nvl_bytes / t / 1e9, algbw, algbw * (n - 1) / n, after.sim_wall_s - before.sim_wall_s);
            free_case(&bc);
        }
    }
    an.destroy(an.ctx);
    /* the SimGrid model lives as long as the process (one engine per process) */
    return 0;
}
