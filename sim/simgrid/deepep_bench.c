/* deepep_bench.c — DeepEP's normal-kernel benchmark on the simulated fabric (see deepep_bench.h). */
#include "sim/simgrid/deepep_bench.h"
#include "sim/base/alloc.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/comm.h"
#include "sim/simgrid/comm_simgrid.h"

/* Counted pairs of one routing draw: per source rank i, distinct (token, rank j) and (token, node k)
 * pairs, the own rank and node included (as the test counts them). */
typedef struct {
    int n, nn;
    double *rank_pairs;   /* n x n */
    double *node_pairs;   /* n x nn */
} deepep_counts;

/* The test's routing law for one token: walk a uniformly random ranking of the experts; the first
 * `groups_kept` groups to appear are the selected ones; the token's experts are the first `topk`
 * experts of selected groups. Marks the token's ranks and nodes in rank_hit / node_hit (stamped). */
static void route_token(gsl_rng *rng, const deepep_case *c, int groups_kept, int per_rank,
                        int per_group, int *seen, int *group_sel, int stamp, int *rank_hit, int *node_hit,
                        int *n_rank_hit, int *rank_list, int *n_node_hit, int *node_list) {
    int taken = 0, groups = 0;
    *n_rank_hit = *n_node_hit = 0;
    while (taken < c->topk) {
        int e = (int)gsl_rng_uniform_int(rng, (unsigned long)c->experts);
        if (seen[e] == stamp) continue;
        seen[e] = stamp;
        int g = e / per_group;
        if (group_sel[g] != stamp) {
            if (groups == groups_kept) continue;   /* a group ranked below the kept ones */
            group_sel[g] = stamp;
            groups++;
        }
        taken++;
        int r = e / per_rank, node = r / 8;
        if (rank_hit[r] != stamp) { rank_hit[r] = stamp; rank_list[(*n_rank_hit)++] = r; }
        if (node_hit[node] != stamp) { node_hit[node] = stamp; node_list[(*n_node_hit)++] = node; }
    }
}

static int count_pairs(const deepep_case *c, deepep_counts *k) {
    const int n = c->ep, nn = (n + 7) / 8;
    const int groups = nn, kept = c->topk_groups > 0 ? c->topk_groups : (nn < 4 ? nn : 4);
    k->n = n;
    k->nn = nn;
    k->rank_pairs = moe_xcalloc((size_t)n * n, sizeof(double));
    k->node_pairs = moe_xcalloc((size_t)n * nn, sizeof(double));
    int *seen = moe_xcalloc((size_t)c->experts, sizeof(int)), *gsel = moe_xcalloc((size_t)groups, sizeof(int));
    int *rank_hit = moe_xcalloc((size_t)n, sizeof(int)), *node_hit = moe_xcalloc((size_t)nn, sizeof(int));
    int *rank_list = moe_xmalloc((size_t)c->topk * sizeof(int)), *node_list = moe_xmalloc((size_t)c->topk * sizeof(int));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int ok = k->rank_pairs && k->node_pairs && seen && gsel && rank_hit && node_hit && rank_list && node_list && rng;
    if (ok) {
        gsl_rng_set(rng, (unsigned long)(c->seed & 0xffffffffu));
        int stamp = 0;
        for (int i = 0; i < n; i++)
            for (int t = 0; t < c->tokens; t++) {
                int nr, nd;
                stamp++;
                route_token(rng, c, kept, c->experts / n, c->experts / groups, seen, gsel, stamp, rank_hit,
                            node_hit, &nr, rank_list, &nd, node_list);
                for (int a = 0; a < nr; a++) k->rank_pairs[(size_t)i * n + rank_list[a]] += 1;
                for (int a = 0; a < nd; a++) k->node_pairs[(size_t)i * nn + node_list[a]] += 1;
            }
    }
    gsl_rng_free(rng);
    free(seen); free(gsel); free(rank_hit); free(node_hit); free(rank_list); free(node_list);
    return ok ? 0 : -1;
}

/* One direction: per-rank payload matrix and per-node RDMA payloads (own node excluded: those bytes
 * never cross a NIC), timed by the comm model. `mirror`: the combine, passed as its mirror image. */
static double time_pattern(comm_model *cm, const deepep_counts *k, double token_B, int mirror) {
    const int n = k->n, nn = k->nn;
    double *bytes = moe_xmalloc((size_t)n * n * sizeof(double)), *node_b = moe_xcalloc((size_t)n * nn, sizeof(double));
    int *gpus = moe_xmalloc((size_t)n * sizeof(int)), *nodes = moe_xmalloc((size_t)nn * sizeof(int));
    double t = -1;
    if (bytes && node_b && gpus && nodes) {
        for (int i = 0; i < n; i++) {
            gpus[i] = i;
            for (int j = 0; j < n; j++) {
                double b = k->rank_pairs[(size_t)i * n + j] * token_B;
                bytes[mirror ? (size_t)j * n + i : (size_t)i * n + j] = b;
            }
            for (int d = 0; d < nn; d++)
                if (d != i / 8) node_b[(size_t)i * nn + d] = k->node_pairs[(size_t)i * nn + d] * token_B;
        }
        for (int d = 0; d < nn; d++) nodes[d] = d;
        a2a_pattern p = {.n = n, .gpus = gpus, .bytes = bytes, .node_bytes = nn > 1 ? node_b : NULL,
                         .n_nodes = nn, .nodes = nodes, .concurrent_groups = 1};
        t = cm->a2a_s(cm->ctx, &p);
    }
    free(bytes); free(node_b); free(gpus); free(nodes);
    return t;
}

int deepep_bench_run(const scenario *s, const deepep_case *c, deepep_result *r, moe_error *err) {
    memset(r, 0, sizeof *r);
    char v[64];
    snprintf(v, sizeof v, "%d", c->ep);
    if (c->ep < 8 || c->ep % 8 != 0 || c->ep > scn_gpus(s) || s->cluster.gpus_per_node != 8)
        return moe_error_input(err, s->file, "ep", v, "a multiple of 8 ranks (8 per node, as DeepEP's tests) "
                               "within the cluster's %d GPUs of 8 per node", scn_gpus(s));
    if (c->experts < c->topk || c->experts % c->ep != 0 || c->tokens < 1 || c->hidden < 1 || c->topk < 1) {
        snprintf(v, sizeof v, "%d experts, top-%d", c->experts, c->topk);
        return moe_error_input(err, s->file, "experts", v, "experts divisible by the EP size and >= top-k");
    }
    deepep_counts k = {0};
    if (count_pairs(c, &k)) {
        free(k.rank_pairs); free(k.node_pairs);
        return moe_error_set(err, EXIT_RUNTIME, "out of memory sampling the DeepEP routing");
    }
    comm_model cm = sg_comm_create(s, err);
    if (!cm.ctx) { free(k.rank_pairs); free(k.node_pairs); return err->code; }
    r->nodes = k.nn;
    r->dispatch_s = time_pattern(&cm, &k, c->hidden * c->dispatch_elt_B, 0);
    r->combine_s = time_pattern(&cm, &k, c->hidden * c->combine_elt_B, 1);
    for (int d = 0; d < k.nn; d++) r->rdma_tokens += k.node_pairs[d];
    for (int i = 0; i < k.n; i++) r->nvl_tokens += k.rank_pairs[(size_t)i * k.n];
    free(k.rank_pairs);
    free(k.node_pairs);
    if (cm.destroy) cm.destroy(cm.ctx);   /* the SimGrid engine itself stays (one per process) */
    if (r->dispatch_s <= 0 || r->combine_s <= 0) return moe_error_set(err, EXIT_RUNTIME, "DeepEP pattern failed");
    double dB = c->hidden * c->dispatch_elt_B / 1e9, cB = c->hidden * c->combine_elt_B / 1e9;
    r->dispatch_rdma_GBps = r->rdma_tokens * dB / r->dispatch_s;
    r->dispatch_nvl_GBps = r->nvl_tokens * dB / r->dispatch_s;
    r->combine_rdma_GBps = r->rdma_tokens * cB / r->combine_s;
    r->combine_nvl_GBps = r->nvl_tokens * cB / r->combine_s;
    return 0;
}
