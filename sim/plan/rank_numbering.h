/* rank_numbering.h — the one numbering of a layout's ranks and of the GPUs they run on, used by the plan
 * (where its communication groups land), the step program and its executors, live mode and the
 * diagnoser (which reads the same numbering back from a trace).
 *
 * A rank is the tuple (replica d, stage s, ep index e, tp index t) of a dp x pp x ep x tp grid:
 *     rank = ((d * pp + s) * ep + e) * tp + t
 * so tp is fastest and the replica slowest: replica d holds the ranks [d * pp*ep*tp, (d+1) * pp*ep*tp).
 * "stage" is the rank's pipeline position (with interleaving or DualPipe it holds several model
 * stages, its "chunks"). The coordinates are the EXPERT side of Megatron's MoE parallel folding: t is
 * the expert-tensor-parallel index (grid tp = layout.etp, which defaults to layout.tp), e the EP index,
 * d the expert replica; a dense model (no experts, ep 1) has no expert side, and its inner coordinate
 * covers attention TP x CP (tp = layout.tp * cp, dp = the rest), so that every attention group and CP
 * ring lies inside one replica. The attention side folds a stage's ranks by their stage index
 *     q = (d * ep + e) * tp + t:
 * attention TP index q mod attn_tp, CP index (q / attn_tp) mod cp, attention DP index the rest.
 * layout.placement maps ranks to GPUs:
 *   ep-inner : gpu = rank — an EP group (ep*tp ranks) lies on consecutive GPUs, i.e. on
 *              ep*tp/gpus_per_node consecutive nodes (seed 003: "64 GPUs on 8 consecutive nodes");
 *   dp-inner : gpu = ((s * ep + e) * dp + d) * tp + t — the replicas of one expert shard are
 *              neighbours (EP groups spread over dp-strided nodes).
 * Node of a GPU = gpu / gpus_per_node; its rail = gpu % gpus_per_node.
 * (Megatron-LM's default order, megatron/core/parallel_state.py initialize_model_parallel(order=
 * "tp-cp-ep-dp-pp"), puts the pipeline stage slowest instead of the replica: ep-inner here keeps a
 * replica's pipeline on neighbouring GPUs.) */
#ifndef MOESIM_RANK_NUMBERING_H
#define MOESIM_RANK_NUMBERING_H

#include "sim/scenario/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int dp, pp, ep, tp;       /* the grid of the rank coordinates (tp: the inner, expert-TP coordinate) */
    int attn_tp, cp;          /* the attention side's fold of a stage (layout.tp, layout.cp) */
    placement_kind placement;
} rank_grid;

typedef struct {
    int replica, stage, ep, tp;
} rank_coords;

/* The numbering of scenario s (its layout and whether the model has experts, as above). Assumes a
 * layout whose products the scenario and program checks accept. */
static inline rank_grid rank_grid_of(const scenario *s) {
    const layout_cfg *l = &s->layout;
    int cp = scn_cp(s);
    rank_grid g = {.dp = l->dp, .pp = l->pp, .ep = l->ep, .tp = scn_etp(s), .attn_tp = l->tp, .cp = cp,
                   .placement = l->placement};
    if (s->model.experts == 0 && l->ep == 1) {
        g.tp = l->tp * cp;
        g.dp = scn_gpus(s) / (l->pp * g.tp);
    }
    return g;
}

static inline int rank_of(const rank_grid *g, rank_coords c) {
    return ((c.replica * g->pp + c.stage) * g->ep + c.ep) * g->tp + c.tp;
}

static inline rank_coords rank_coords_of(const rank_grid *g, int rank) {
    rank_coords c;
    c.tp = rank % g->tp; rank /= g->tp;
    c.ep = rank % g->ep; rank /= g->ep;
    c.stage = rank % g->pp;
    c.replica = rank / g->pp;
    return c;
}

/* The rank's index within its stage (the attention side folds it, above). */
static inline int rank_stage_index(const rank_grid *g, rank_coords c) {
    return (c.replica * g->ep + c.ep) * g->tp + c.tp;
}
static inline int rank_ranks_per_stage(const rank_grid *g) { return g->dp * g->ep * g->tp; }

/* Ranks of one replica: replica d holds [d * rank_replica_ranks(g), (d + 1) * rank_replica_ranks(g)). */
static inline int rank_replica_ranks(const rank_grid *g) { return g->pp * g->ep * g->tp; }

static inline int rank_gpu(const rank_grid *g, int rank) {
    if (g->placement == PLACE_EP_INNER) return rank;
    rank_coords c = rank_coords_of(g, rank);
    return ((c.stage * g->ep + c.ep) * g->dp + c.replica) * g->tp + c.tp;
}

/* Where a communication group lands: how many nodes hold its members and the most members on one
 * node. Rank 0's group stands for every group of its kind (the groups are translates of each other
 * along the GPU numbering; their node patterns agree whenever the group's GPU extent divides, or is a
 * multiple of, gpus_per_node). */
typedef struct {
    int members, nodes, max_per_node;
} rank_group_span;

/* The group of rank 0 whose members differ from it in the coordinates named by `vary` (RANK_VARY_*):
 * the EP group varies EP, the expert data-parallel group REPLICA, a pipeline STAGE, the expert-TP
 * group TP. */
enum { RANK_VARY_REPLICA = 1, RANK_VARY_STAGE = 2, RANK_VARY_EP = 4, RANK_VARY_TP = 8 };
rank_group_span rank_group_nodes(const rank_grid *g, unsigned vary, int gpus_per_node);

/* Does an attention-side group of stage 0 lie on one node? Its members are the ranks whose stage
 * index is k * q_stride, k < count. Attention TP: stride 1, count attn_tp; CP ring: stride attn_tp,
 * count cp; dense data parallelism (attention DP x CP): stride attn_tp, count ranks per stage /
 * attn_tp. (What the plan needs of them: NVLink or RDMA.) */
int rank_stage_group_on_one_node(const rank_grid *g, int q_stride, int count, int gpus_per_node);
/* Where such a group lands (members, nodes, the most members on one node). */
rank_group_span rank_stage_group_span(const rank_grid *g, int q_stride, int count, int gpus_per_node);

#ifdef __cplusplus
}
#endif

#endif
