/* eplb_series.c — EPLB over a series of steps (see eplb_series.h). */
#include "sim/exec/eplb_series.h"
#include "sim/base/alloc.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/plan/rank_numbering.h"
#include "sim/program/eplb.h"

#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int eplb_series_init(eplb_series *es, const scenario *s, moe_error *err) {
    memset(es, 0, sizeof *es);
    int n = s->layout.ep, E = s->model.experts, R = s->routing.redundant_experts;
    es->interval = s->routing.eplb_interval_steps;
    es->E = E; es->n = n; es->S = (E + R) / n;
    es->phys = moe_xcalloc((size_t)n * es->S, sizeof(int));
    es->old_phys = moe_xcalloc((size_t)n * es->S, sizeof(int));
    es->moves = moe_xcalloc((size_t)n * n, sizeof(int));
    es->window = moe_xcalloc((size_t)E, sizeof(double));
    es->gpus = moe_xmalloc((size_t)n * sizeof(int));
    es->rank_node = moe_xmalloc((size_t)n * sizeof(int));
    es->nodes = moe_xmalloc((size_t)n * sizeof(int));
    /* EP group 0 (replica 0, stage 0, tp 0), as the step's routing takes it (program.c) */
    rank_grid g = rank_grid_of(s);
    int gpn = scn_domain_gpus(&s->cluster);
    for (int i = 0; i < n; i++) es->gpus[i] = rank_gpu(&g, rank_of(&g, (rank_coords){0, 0, i, 0}));
    for (int i = 0; i < n; i++) es->nodes[i] = es->gpus[i] / gpn;
    qsort(es->nodes, (size_t)n, sizeof(int), cmp_int);
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (nd == 0 || es->nodes[nd - 1] != es->nodes[i]) es->nodes[nd++] = es->nodes[i];
    es->n_domains = nd;
    int contiguous = n % nd == 0;
    for (int i = 0; i < n; i++) {
        int node = es->gpus[i] / gpn, k = 0;
        while (es->nodes[k] != node) k++;
        es->rank_node[i] = k;
        contiguous &= k == i / (n / nd);
    }
    /* EPLB numbers a node's GPUs consecutively: a group whose ranks interleave the nodes gets the
     * global policy */
    es->n_nodes = contiguous ? nd : 1;
    es->n_groups = s->model.expert_groups > 0 ? s->model.expert_groups : 1;
    es->concurrent_groups = g.dp * g.tp;
    /* one move's bytes: the busiest pipeline rank's expert slot, weights and optimizer state */
    model_counts mc;
    model_count(&s->model, &mc);
    mem_state_bytes sb;
    memory_state_bytes(&s->precision, &sb);
    stage_census *cz = moe_xcalloc((size_t)s->layout.pp, sizeof *cz);
    if (pipeline_census(s, cz, err)) { free(cz); eplb_series_free(es); return err->code; }
    for (int r = 0; r < s->layout.pp; r++) {
        mem_ledgers slot;
        memory_expert_slot_bytes(s, &mc, &sb, cz, r, &slot);
        if (slot.params + slot.optimizer > es->move_bytes) es->move_bytes = slot.params + slot.optimizer;
        double g = sb.grad * memory_expert_slot_params(s, &mc, cz, r, NULL);
        if (g > es->grad_bytes) es->grad_bytes = g;
    }
    free(cz);
    for (int e = 0; e < E; e++) es->window[e] = 1.0;
    int rc = eplb_rebalance(es->window, E, es->n_groups, es->n_nodes, n, es->S, es->phys);
    if (rc < 0) { eplb_series_free(es); return moe_error_set(err, EXIT_BADINPUT, "EPLB: cannot place %d experts", E); }
    es->hierarchical = rc;
    memset(es->window, 0, (size_t)E * sizeof(double));
    return 0;
}

void eplb_series_observe(eplb_series *es, const double *expert_routed) {
    for (int e = 0; e < es->E; e++) es->window[e] += expert_routed[e];
}

int eplb_series_due(const eplb_series *es, int t) { return es->interval > 0 && t > 0 && t % es->interval == 0; }

void eplb_moves_bytes(const int *moves, int n, double move_bytes, double *bytes) {
    for (int k = 0; k < n * n; k++) bytes[k] = moves[k] * move_bytes;
}

/* one pairwise all-to-all of EP group 0 (every group at once), priced by the comm model */
static double price(const eplb_series *es, const comm_model *comm, const double *bytes) {
    a2a_pattern pat = {.n = es->n, .gpus = es->gpus, .bytes = bytes, .node_bytes = NULL, .n_nodes = es->n_domains,
                       .nodes = es->nodes, .concurrent_groups = es->concurrent_groups, .pairwise = 1};
    return comm->a2a_s(comm->ctx, &pat);
}

double eplb_series_grad_sync(eplb_series *es, const comm_model *comm) {
    int n = es->n;
    double *bytes = moe_xmalloc((size_t)n * n * sizeof(double));
    es->synced_experts = eplb_replica_sync_bytes(es->phys, n, es->S, es->E, es->grad_bytes, bytes);
    es->grad_sync_s = es->synced_experts ? price(es, comm, bytes) : 0;
    free(bytes);
    return es->grad_sync_s;
}

double eplb_series_rebalance(eplb_series *es, const comm_model *comm) {
    int n = es->n;
    memcpy(es->old_phys, es->phys, (size_t)n * es->S * sizeof(int));
    es->hierarchical = eplb_rebalance(es->window, es->E, es->n_groups, es->n_nodes, n, es->S, es->phys) == 1;
    memset(es->window, 0, (size_t)es->E * sizeof(double));
    es->last_moved = eplb_moves(es->old_phys, es->phys, n, es->S, es->rank_node, es->moves);
    es->last_bytes = es->last_moved * es->move_bytes;
    if (es->last_moved == 0) return 0;   /* the placement did not change: neither does its sync */
    double *bytes = moe_xmalloc((size_t)n * n * sizeof(double));
    eplb_moves_bytes(es->moves, n, es->move_bytes, bytes);
    double t = price(es, comm, bytes);
    free(bytes);
    eplb_series_grad_sync(es, comm);
    return t;
}

void eplb_series_free(eplb_series *es) {
    free(es->phys); free(es->old_phys); free(es->moves); free(es->window);
    free(es->gpus); free(es->rank_node); free(es->nodes);
    memset(es, 0, sizeof *es);
}
