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
#include "sim/exec/routing_pattern.h"
#include "sim/program/routing.h"
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

/* Uniform routing in expectation (header comment). */
static int make_case(const scenario *s, int ep, int tokens, double dtype_B, bench_case *bc) {
    const int gpn = s->cluster.gpus_per_node, topk = s->model.top_k, node_limit = s->routing.node_limit;
    const int E = s->model.experts;
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
    const double tok_B = s->model.hidden * dtype_B;
    for (int i = 0; i < ep; i++) {
        for (int j = 0; j < ep; j++) bc->bytes[i * ep + j] = tokens * p_rank * tok_B;
        for (int k = 0; k < bc->n_nodes; k++)
            bc->node_bytes[i * bc->n_nodes + k] = k == i / gpn ? 0 : tokens * p_node * tok_B;
    }
    return 0;
}

static void free_case(bench_case *bc) {
    free(bc->gpus);
    free(bc->nodes);
    free(bc->bytes);
    free(bc->node_bytes);
}

/* Per-rank figures of a pattern: mean bytes a rank sends (nccl-tests "size"), the busiest rank's
 * RDMA payload sent and NVLink payload received (every payload into it but its own rail's own-node
 * one, and not from itself). */
static void rank_figures(const a2a_pattern *p, int gpn, bench_case *bc) {
    int n = p->n;
    bc->rank_bytes = bc->nic_bytes = bc->nvl_bytes = 0;
    for (int i = 0; i < n; i++) {
        double sent = 0, nic = 0, nvl = 0;
        for (int j = 0; j < n; j++) sent += p->bytes[i * n + j];
        for (int k = 0; p->node_bytes && k < p->n_nodes; k++) nic += p->node_bytes[i * p->n_nodes + k];
        for (int j = 0; j < n; j++)
            if (j != i && (j / gpn == i / gpn || j % gpn != i % gpn)) nvl += p->bytes[j * n + i];
        bc->rank_bytes += sent / n;
        if (nic > bc->nic_bytes) bc->nic_bytes = nic;
        if (nvl > bc->nvl_bytes) bc->nvl_bytes = nvl;
    }
}

/* An EP size the benchmark can place: on the cluster, dividing the experts, whole nodes once it spans
 * nodes. 0, or an exit-2 error naming `label`. */
static int placeable(const scenario *s, int ep, const char *label, moe_error *err) {
    const int G = scn_gpus(s), gpn = s->cluster.gpus_per_node, E = s->model.experts;
    char v[32];
    snprintf(v, sizeof v, "%d", ep);
    if (ep < 2 || ep > G)
        return moe_error_input(err, s->file, label, v, "an EP size in [2, %d] (the cluster's GPUs)", G);
    if (E < 1) return moe_error_input(err, s->file, "model.experts", "0", "a MoE model for the all-to-all benchmark");
    if (E % ep)
        return moe_error_input(err, s->file, label, v, "an EP size that divides model.experts = %d (each rank holds "
                               "the same number of experts)", E);
    if (ep > gpn && ep % gpn)
        return moe_error_input(err, s->file, label, v, "a multiple of cluster.gpus_per_node = %d once the group spans "
                               "nodes (whole nodes)", gpn);
    return 0;
}

static const char *dtype_name(dtype_kind d) { return d == DT_FP8 ? "fp8" : d == DT_FP32 ? "fp32" : d == DT_FP16 ? "fp16" : "bf16"; }

/* One EP size: dispatch and combine rows. */
static int bench_size(const scenario *s, int n, int tokens, comm_model *sg, comm_model *an, FILE *out, double *dropped,
                      moe_error *err) {
    const int gpn = s->cluster.gpus_per_node;
    int uniform = s->routing.distribution == ROUTE_UNIFORM;
    routing_ctx *ctx = NULL;
    routing_sample rs = {0};
    int rc = 0;
    if (!uniform) {
        scenario g = *s;
        g.layout.ep = n;
        int *gpus = moe_xmalloc((size_t)n * sizeof *gpus);
        if (!gpus) return moe_error_set(err, EXIT_RUNTIME, "out of memory");
        for (int i = 0; i < n; i++) gpus[i] = i;
        routing_opts ro = {.tokens_per_rank = tokens};
        ctx = routing_ctx_create_opts(&g, gpus, &ro, err);
        free(gpus);
        if (!ctx || routing_sample_init(ctx, &rs, err) || routing_draw(ctx, 0, 0, 0, &rs)) {
            rc = err->code ? err->code : EXIT_RUNTIME;
            goto done;
        }
        *dropped = rs.dropped_fraction;
    }
    for (int op = 0; op < 2 && !rc; op++) {
        bench_case bc = {0};
        a2a_pattern p;
        if (uniform) {
            if (make_case(s, n, tokens, dtype_bytes(op == 0 ? s->precision.dispatch : s->precision.combine), &bc)) {
                free_case(&bc);
                rc = moe_error_set(err, EXIT_RUNTIME, "out of memory");
                break;
            }
            p = (a2a_pattern){.n = n, .gpus = bc.gpus, .bytes = bc.bytes, .node_bytes = bc.n_nodes > 1 ? bc.node_bytes : NULL,
                              .n_nodes = bc.n_nodes, .nodes = bc.nodes, .concurrent_groups = 1};
        } else {
            routing_sample_pattern(ctx, &rs, op, &p);
            if (p.n_nodes <= 1) p.node_bytes = NULL;
        }
        rank_figures(&p, gpn, &bc);
        sg_comm_stats before = sg_comm_get_stats(sg);
        double t = sg->a2a_s(sg->ctx, &p), th = an->a2a_s(an->ctx, &p);
        sg_comm_stats after = sg_comm_get_stats(sg);
        double algbw = bc.rank_bytes / t / 1e9;
        fprintf(out, "  %4d %5d %8d  %-8s %12.0f %10.1f %10.1f %9.1f %9.1f %9.1f %9.1f %10.3f\n", n, p.n_nodes, tokens,
                op == 0 ? "dispatch" : "combine", bc.rank_bytes, t * 1e6, th * 1e6, bc.nic_bytes / t / 1e9,
                bc.nvl_bytes / t / 1e9, algbw, algbw * (n - 1) / n, after.sim_wall_s - before.sim_wall_s);
        if (uniform) free_case(&bc);
    }
done:
    if (ctx) {
        routing_sample_free(&rs);
        routing_ctx_free(ctx);
    }
    return rc;
}

static void routing_words(const scenario *s, char *buf, size_t cap) {
    const routing_cfg *r = &s->routing;
    int n = 0;
    switch (r->distribution) {
    case ROUTE_UNIFORM: n = snprintf(buf, cap, "uniform (in expectation)"); break;
    case ROUTE_HOT: n = snprintf(buf, cap, "hot (expert %d gets %.0f%% of the pairs), one draw", r->hot_expert, 100 * r->hot_share); break;
    case ROUTE_ZIPF: n = snprintf(buf, cap, "zipf (s = %g), one draw", r->zipf_s); break;
    case ROUTE_TRACE: n = snprintf(buf, cap, "trace %s, one draw", r->trace); break;
    default: n = snprintf(buf, cap, "%s, one draw", r->distribution == ROUTE_BALANCED ? "balanced" : "?"); break;
    }
    if (n > 0 && (size_t)n < cap && r->node_limit > 0) n += snprintf(buf + n, cap - (size_t)n, ", node limit %d", r->node_limit);
    if (n > 0 && (size_t)n < cap && r->distribution != ROUTE_UNIFORM && r->capacity_factor > 0)
        snprintf(buf + n, cap - (size_t)n, ", capacity factor %g%s", r->capacity_factor, r->drop ? " (dropping)" : " (dropless)");
}

int a2a_bench_run(const scenario *s, int ep, int tokens, const char *ep_label, FILE *out, moe_error *err) {
    if (placeable(s, ep, ep_label, err)) return err->code;
    if (s->model.top_k < 1) return moe_error_input(err, s->file, "model.top_k", NULL, "top-k >= 1");
    comm_model sg = sg_comm_create(s, err);
    if (!sg.ctx) return err->code;
    scenario fab;   /* the closed form on the fabric SimGrid runs: links at their achieved rates */
    if (sg_fabric_scenario(s, &fab, err)) return err->code;
    comm_model an = comm_analytic_create(&fab);
    char rw[256];
    routing_words(s, rw, sizeof rw);
    fprintf(out, "# moesim all-to-all benchmark (DeepEP-style: one RDMA copy per destination node, NVLink fan-out)\n");
    fprintf(out, "# %s: cluster %s, %d x %d GPUs, NVLink %g GB/s per GPU per direction (achieved %.1f GB/s), NIC %g Gb/s per GPU "
            "(achieved %.1f Gb/s = %.1f GB/s), %d nodes/leaf, oversubscription %g\n", s->name,
            s->cluster.preset[0] ? s->cluster.preset : "(custom)", s->cluster.nodes, s->cluster.gpus_per_node,
            s->cluster.nvlink_GBps, fab.cluster.nvlink_GBps, s->cluster.nic_gbps, fab.cluster.nic_gbps,
            fab.cluster.nic_gbps / 8.0, s->cluster.leaf_down_ports, s->cluster.oversubscription);
    fprintf(out, "# tokens/rank %d, hidden %d, top-%d of %d experts, routing %s; dispatch %s, combine %s\n", tokens,
            s->model.hidden, s->model.top_k, s->model.experts, rw, dtype_name(s->precision.dispatch),
            dtype_name(s->precision.combine));
    fprintf(out, "# %4s %5s %8s  %-8s %12s %10s %10s %9s %9s %9s %9s %10s\n", "ep", "nodes", "tokens", "op", "bytes/rank",
            "time(us)", "hand(us)", "RDMA GB/s", "NVL GB/s", "algbw", "busbw", "sim wall s");
    int rc = 0;
    double dropped = 0;
    /* powers of two from 8 below ep that the experts divide, then ep itself */
    for (int n = ep < 8 ? ep : 8; n < ep && !rc; n *= 2)
        if (s->model.experts % n == 0 && !(n > s->cluster.gpus_per_node && n % s->cluster.gpus_per_node))
            rc = bench_size(s, n, tokens, &sg, &an, out, &dropped, err);
    if (!rc) rc = bench_size(s, ep, tokens, &sg, &an, out, &dropped, err);
    if (!rc && s->routing.distribution != ROUTE_UNIFORM)
        fprintf(out, "# the draw at EP %d dropped %.2f%% of its token-expert pairs\n", ep, 100 * dropped);
    an.destroy(an.ctx);
    /* frees the pattern memo only: the SimGrid engine and platform live as long as the process */
    sg.destroy(sg.ctx);
    return rc;
}
