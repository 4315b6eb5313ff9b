/* program.c — generate the step program (program.h) from a scenario: groups, routing patterns, and
 * per pipeline stage the rank-relative op list built from the schedule's work order (schedule.h).
 *
 * What one work item becomes (per layer of the model stage, in data-flow order):
 *   F: [RECV act | embed] attn [tp AR] (dense FFN [tp AR] | router permute DISPATCH shared expert
 *      COMBINE unpermute) ... [SEND act | head+loss]
 *   B: [RECV grad | head+loss bwd] per layer in reverse: (dense FFN bwd | unpermute-bwd DISPATCH_B
 *      expert-bwd COMBINE_B shared-bwd permute-bwd router-bwd) attn-bwd ... [SEND grad | embed bwd];
 *      weight gradients right after their input gradients unless the schedule defers them to a W item.
 *   W: the deferred weight-gradient GEMMs of one earlier B.
 *   tail: ZeRO-1 reduce-scatter of gradients (dense group, expert group), optimizer on the shard,
 *      all-gather of parameters (zero == 0: all-reduce, optimizer on everything; zero 2: the
 *      gradients were reduce-scattered unit by unit, the gather stays; zero 3: neither).
 *   ZeRO-2/3 (sim/plan/zero_sync.h): per unit (the stage's embedding and head, each block, each MTP
 *      module) and micro-batch, ZeRO-3 gathers the unit's parameters before its forward and again
 *      before its backward, prefetching the next unit beside the current one's compute; ZeRO-2/3
 *      reduce-scatter its gradients after its weight gradients. On their own stream (STREAM_DP).
 * Communication ops go on the comm stream, SENDs on the P2P stream: a lone item therefore exposes its
 * all-to-alls (each waits for the op before it), while an overlapped F/B pair (DualPipe) is emitted
 * segment by segment, alternately, so that one item's all-to-all runs under the other's compute.
 */
#include "sim/program/program.h"
#include "sim/scenario/schedule_rules.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/base/rng_seed.h"
#include "sim/program/expert_load.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/program/routing.h"
#include "sim/program/schedule.h"
#include "sim/scenario/link_loss.h"
#include "sim/scenario/pipeline_layout.h"

/* ---- names -------------------------------------------------------------------------------------- */
const char *op_kind_name(op_kind k) {
    static const char *n[] = {"compute", "a2a_dispatch", "a2a_combine", "send", "recv",
                              "reduce_scatter", "all_gather", "all_reduce"};
    return k < OP_NKINDS ? n[k] : "?";
}
const char *op_kind_label(op_kind k) {
    static const char *n[] = {"COMPUTE", "A2A_DISPATCH", "A2A_COMBINE", "SEND", "RECV",
                              "REDUCE_SCATTER", "ALL_GATHER", "ALL_REDUCE"};
    return k < OP_NKINDS ? n[k] : "?";
}
const char *group_kind_name(group_kind k) {
    static const char *n[] = {"EP", "TP", "DP_DENSE", "DP_EXPERT", "CP"};
    return k < GROUP_NKINDS ? n[k] : "?";
}
const char *kernel_name(kernel_kind k) {
    static const char *n[] = {"none", "embed_fwd", "embed_bwd", "attn_fwd", "attn_bwd_input",
        "attn_bwd_weight", "dense_ffn_fwd", "dense_ffn_bwd_input", "dense_ffn_bwd_weight",
        "router_fwd", "router_bwd", "permute_fwd", "permute_bwd", "expert_fwd", "expert_bwd_input",
        "expert_bwd_weight", "unpermute_fwd", "unpermute_bwd", "shared_expert_fwd",
        "shared_expert_bwd_input", "shared_expert_bwd_weight", "head_loss_fwd", "head_loss_bwd",
        "mtp_proj_fwd", "mtp_proj_bwd_input", "mtp_proj_bwd_weight", "attn_core_fwd", "attn_core_bwd",
        "optimizer"};
    return k < K_NKINDS ? n[k] : "?";
}
const char *phase_name(op_phase ph) {
    static const char *n[] = {"F", "B", "W", "OPT"};
    return ph <= PHASE_OPT ? n[ph] : "?";
}
const char *stream_name(stream_kind s) {
    static const char *n[] = {"compute", "comm", "p2p", "dp"};
    return s < STREAM_N ? n[s] : "?";
}

/* ---- ranks ---------------------------------------------------------------------------------------- */
int program_rank(const program *p, int d, int s, int e, int t) {
    return rank_of(&p->ranks, (rank_coords){d, s, e, t});
}
void program_coords(const program *p, int rank, int *d, int *s, int *e, int *t) {
    rank_coords c = rank_coords_of(&p->ranks, rank);
    *d = c.replica; *s = c.stage; *e = c.ep; *t = c.tp;
}
int program_gpu_of_rank(const program *p, int rank) { return rank_gpu(&p->ranks, rank); }
int program_group_of(const program *p, int rank, group_kind kind) {
    return p->rank_group[rank * GROUP_NKINDS + kind];
}
int program_replica_draw_of(const program *p, int replica, int layer, int mb) {
    int l = layer - p->moe_first_layer, g = program_sample_group(p, replica);
    if (l < 0 || l >= p->n_moe_layers || mb < 0 || mb >= p->micro_batches || g < 0 || g >= p->n_sample_groups) return 0;
    return p->draw_of[((size_t)g * p->n_moe_layers + l) * p->micro_batches + mb];
}
int program_draw_of(const program *p, int layer, int mb) { return program_replica_draw_of(p, 0, layer, mb); }
int program_replica_pattern(const program *p, int replica, const program_op *o) {
    if (o->pattern < 0 || program_sample_group(p, replica) == 0) return o->pattern;
    return program_replica_draw_of(p, replica, o->layer, o->mb) * A2A_NKINDS + o->pattern % A2A_NKINDS;
}

/* ---- groups ------------------------------------------------------------------------------------------ */
/* Each group kind: a key function from coordinates; ranks with equal keys share a group. Members are
 * listed in rank order, which for the EP group is ep-index order and for the CP group ring order.
 * The attention-side groups fold the stage's GPUs by q = (d ep + e) etp + t, the rank's index in its
 * stage (program.h): attention TP rank q mod tp, CP rank (q / tp) mod cp, attention DP rank the rest. */
static int group_key(const program *p, group_kind k, int d, int s, int e, int t) {
    int q = rank_stage_index(&p->ranks, (rank_coords){d, s, e, t});
    int per_stage = rank_ranks_per_stage(&p->ranks), atp = p->attn_tp, cp = p->cp;
    switch (k) {
    case GROUP_EP: return (d * p->pp + s) * p->tp + t;
    case GROUP_TP: return s * (per_stage / atp) + q / atp;
    case GROUP_DP_DENSE: return s * atp + q % atp;
    case GROUP_DP_EXPERT: return (s * p->ep + e) * p->tp + t;
    case GROUP_CP: return s * (per_stage / cp) + q / (atp * cp) * atp + q % atp;
    default: return 0;
    }
}
static int group_count(const program *p, group_kind k) {
    int per_stage = p->dp * p->ep * p->tp;
    switch (k) {
    case GROUP_EP: return p->dp * p->pp * p->tp;
    case GROUP_TP: return p->pp * per_stage / p->attn_tp;
    case GROUP_DP_DENSE: return p->pp * p->attn_tp;
    case GROUP_DP_EXPERT: return p->pp * p->ep * p->tp;
    case GROUP_CP: return p->pp * per_stage / p->cp;
    default: return 0;
    }
}

static void build_groups(program *p) {
    int first[GROUP_NKINDS];
    p->n_groups = 0;
    for (int k = 0; k < GROUP_NKINDS; k++) { first[k] = p->n_groups; p->n_groups += group_count(p, k); }
    p->groups = moe_xcalloc((size_t)p->n_groups, sizeof *p->groups);
    p->group_members = moe_xmalloc((size_t)p->n_ranks * GROUP_NKINDS * sizeof(int));
    p->rank_group = moe_xmalloc((size_t)p->n_ranks * GROUP_NKINDS * sizeof(int));
    int *fill = moe_xcalloc((size_t)p->n_groups, sizeof(int));
    int off = 0;
    for (int k = 0; k < GROUP_NKINDS; k++) {
        int n = p->n_ranks / group_count(p, k);
        for (int g = 0; g < group_count(p, k); g++) {
            program_group *G = &p->groups[first[k] + g];
            G->kind = k; G->n = n; G->ranks = p->group_members + off; off += n;
        }
    }
    for (int r = 0; r < p->n_ranks; r++) {
        int d, s, e, t;
        program_coords(p, r, &d, &s, &e, &t);
        for (int k = 0; k < GROUP_NKINDS; k++) {
            int g = first[k] + group_key(p, k, d, s, e, t);
            p->groups[g].ranks[fill[g]++] = r;
            p->rank_group[r * GROUP_NKINDS + k] = g;
        }
    }
    free(fill);
}

/* ---- routing (sim/program/routing.h; see "Routing" in program.h) ------------------------------------------------
 * Distinct samples of the pool. Uniform and hot routing have one law for all layers: ROUTING_POOL_DRAWS
 * samples of it. Zipf and trace have a law per MoE layer: ROUTING_POOL_DRAWS laws cycled over the
 * layers, one sample each. routing.h suggests 2-4 / 4-8 for the <= 2 s step; every distinct sample
 * is A2A_NKINDS distinct SimGrid patterns per EP-group placement. */
#define ROUTING_POOL_DRAWS 4

static double *dup_scaled(const double *src, size_t n, double scale) {
    double *d = moe_xmalloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) d[i] = src[i] * scale;
    return d;
}

/* The four a2a matrices of one routing sample (kinds as in program.h). */
static void patterns_of_sample(program *p, int draw, const routing_sample *rs) {
    const scenario *s = p->scn;
    int n = rs->n_ranks, nn = rs->n_nodes;
    double h = s->model.hidden, grad = 2.0;   /* backward all-to-alls carry BF16 gradients */
    for (int k = 0; k < A2A_NKINDS; k++) {
        a2a_matrix *m = &p->patterns[draw * A2A_NKINDS + k];
        m->kind = k; m->draw = draw;
        m->is_combine = k == A2A_COMBINE_F || k == A2A_COMBINE_B;
        switch (k) {
        case A2A_DISPATCH_F:
            m->bytes = dup_scaled(rs->dispatch_bytes, (size_t)n * n, 1.0);
            m->node_bytes = dup_scaled(rs->dispatch_node_bytes, (size_t)n * nn, 1.0);
            break;
        case A2A_COMBINE_F:
            m->bytes = dup_scaled(rs->combine_bytes, (size_t)n * n, 1.0);
            m->node_bytes = dup_scaled(rs->combine_node_bytes, (size_t)n * nn, 1.0);
            break;
        case A2A_DISPATCH_B:
            m->bytes = dup_scaled(rs->dispatch_tokens, (size_t)n * n, h * grad);
            m->node_bytes = dup_scaled(rs->node_tokens, (size_t)n * nn, h * grad);
            break;
        default: /* A2A_COMBINE_B: transpose of the dispatch token sets */
            m->bytes = moe_xmalloc((size_t)n * n * sizeof(double));
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) m->bytes[j * n + i] = rs->dispatch_tokens[i * n + j] * h * grad;
            m->node_bytes = dup_scaled(rs->node_tokens, (size_t)n * nn, h * grad);
            break;
        }
        /* off-diagonal bytes per sender (a resolved op's `bytes`) and in all, summed once here
         * rather than in every op resolution */
        m->sent_bytes = moe_xcalloc((size_t)n, sizeof(double));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j) { m->sent_bytes[i] += m->bytes[i * n + j]; m->total_bytes += m->bytes[i * n + j]; }
    }
    for (int j = 0; j < n; j++) p->recv_tokens[(size_t)draw * n + j] = rs->rank_tokens[j];
    if (rs->slot_tokens)
        memcpy(p->slot_tokens + (size_t)draw * n * rs->slots_per_rank, rs->slot_tokens,
               (size_t)n * rs->slots_per_rank * sizeof(double));
    memcpy(p->expert_tokens + (size_t)draw * rs->n_experts, rs->expert_tokens, (size_t)rs->n_experts * sizeof(double));
}

/* Draw the routing of the step: the pool's sample for every (MoE layer, micro-batch), its patterns,
 * and the statistics of the samples used. `law`: a drifting step's law (NULL: the scenario's). */
static int build_routing(program *p, const routing_law *law, moe_error *err) {
    const scenario *s = p->scn;
    int n = p->ep, E = s->model.experts, m = p->micro_batches;
    p->moe_first_layer = model_first_moe_layer(&s->model);
    p->n_moe_layers = model_moe_layers(&s->model);
    /* MoE MTP blocks (layer model.layers + j) route like the blocks before them */
    if (p->n_moe_layers > 0) p->n_moe_layers += s->model.mtp_layers;
    /* independent samples per replica, up to PROGRAM_SAMPLE_STREAMS streams (program.h "Routing"): not
     * for balanced routing, whose loads the law fixes, nor for one replica */
    int streams = p->dp < PROGRAM_SAMPLE_STREAMS ? p->dp : PROGRAM_SAMPLE_STREAMS;
    p->n_sample_groups = s->routing.group_samples == GROUP_SAMPLES_INDEPENDENT && s->routing.distribution != ROUTE_BALANCED &&
                         p->n_moe_layers > 0 && s->model.experts > 0 ? streams : 1;
    int G = p->n_sample_groups;
    p->draw_of = moe_xcalloc((size_t)G * (p->n_moe_layers > 0 ? p->n_moe_layers : 1) * m, sizeof(int));
    p->step_expert_tokens = moe_xcalloc((size_t)(E > 0 ? E : 1), sizeof(double));
    p->step_expert_routed = moe_xcalloc((size_t)(E > 0 ? E : 1), sizeof(double));
    if (E <= 0 || p->n_moe_layers <= 0) {
        p->n_draws = 1; p->n_patterns = 0;
        p->recv_tokens = moe_xcalloc((size_t)n, sizeof(double));
        p->expert_tokens = moe_xcalloc(1, sizeof(double));
        return 0;
    }
    const program_group *g0 = &p->groups[0];           /* EP group 0: replica 0, stage 0, tp 0 */
    int *gpus = moe_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) gpus[i] = program_gpu_of_rank(p, g0->ranks[i]);
    /* with a dropping capacity limit, what the router assigned before the limit (the sample's
     * expert_routed) is the imbalance the limit hides: step_expert_routed */
    int capped = s->routing.drop && s->routing.capacity_factor > 0;
    /* Expert tensor parallelism (layout.etp, = tp unless the scenario folds): each rank routes the
     * sequence-parallel tokens its expert-TP group gathered, T x etp / tp, through its 1/etp slice of
     * each expert (the expert GEMMs below divide expert_hidden by etp). etp = tp: the whole
     * micro-batch through every TP index's EP group; etp = 1: each rank its own T / tp tokens. */
    routing_opts ro = {.tokens_per_rank = p->routed_tokens, .law = law};
    routing_ctx *ctx = routing_ctx_create_opts(s, gpus, &ro, err);
    free(gpus);
    if (!ctx) return err->code ? err->code : EXIT_BADINPUT;
    int laws = routing_ctx_layer_laws(ctx);
    int per_law = laws > 1 ? 1 : ROUTING_POOL_DRAWS;
    routing_pool *pool = routing_pool_create(ctx, per_law, laws > 1 ? ROUTING_POOL_DRAWS : 0, err);
    if (!pool) { routing_ctx_free(ctx); return err->code ? err->code : EXIT_RUNTIME; }
    p->a2a_n_nodes = routing_ctx_n_nodes(ctx);
    if (s->routing.redundant_experts > 0) {
        free(p->expert_copies);
        p->expert_copies = moe_xcalloc((size_t)E, sizeof(int));
        for (int e = 0; e < E; e++) p->expert_copies[e] = routing_ctx_copies(ctx, e);
    }

    int cap = ROUTING_POOL_DRAWS + 1, n_distinct = 0;
    const routing_sample **distinct = moe_xmalloc((size_t)cap * sizeof *distinct);
    long *uses = moe_xcalloc((size_t)cap, sizeof(long));
    /* the pool's draws at once (in threads when the process has them: routing_set_threads) */
    int rc = 0;
    for (int g = 0; g < G && rc == 0; g++) rc = routing_pool_fill(pool, p->n_moe_layers, m, g, err);
    for (int g = 0; g < G && rc == 0; g++)
    for (int l = 0; l < p->n_moe_layers && rc == 0; l++)
        for (int mb = 0; mb < m; mb++) {
            const routing_sample *rs = routing_pool_get(pool, l, mb, g);
            if (!rs) { rc = moe_error_set(err, EXIT_RUNTIME, "routing: out of memory"); break; }
            int d = 0;
            while (d < n_distinct && distinct[d] != rs) d++;
            if (d == n_distinct) {
                if (n_distinct == cap) {
                    cap *= 2;
                    distinct = moe_xrealloc(distinct, (size_t)cap, sizeof *distinct);
                    uses = moe_xrealloc(uses, (size_t)cap, sizeof(long));
                }
                distinct[n_distinct] = rs; uses[n_distinct++] = 0;
            }
            uses[d] += g == 0;   /* the statistics are replica 0's samples (program.h) */
            p->draw_of[((size_t)g * p->n_moe_layers + l) * m + mb] = d;
        }
    if (rc == 0) {
        p->n_draws = n_distinct;
        p->n_patterns = n_distinct * A2A_NKINDS;
        p->patterns = moe_xcalloc((size_t)p->n_patterns, sizeof *p->patterns);
        p->recv_tokens = moe_xcalloc((size_t)n_distinct * n, sizeof(double));
        p->expert_tokens = moe_xcalloc((size_t)n_distinct * E, sizeof(double));
        p->slots_per_rank = distinct[0]->slots_per_rank;
        if (p->slots_per_rank)
            p->slot_tokens = moe_xcalloc((size_t)n_distinct * n * p->slots_per_rank, sizeof(double));
        double cv = 0, mm = 0, gini = 0, n_uses = 0;
        for (int d = 0; d < n_distinct; d++) {
            const routing_sample *rs = distinct[d];
            patterns_of_sample(p, d, rs);
            p->routed_pairs += uses[d] * rs->assignments;
            p->dropped_pairs += uses[d] * rs->dropped;
            for (int e = 0; e < E; e++) p->step_expert_tokens[e] += uses[d] * rs->expert_tokens[e];
            if (capped)
                for (int e = 0; e < E; e++) p->step_expert_routed[e] += uses[d] * rs->expert_routed[e];
            expert_load_stats st;
            if (expert_load_analyze(rs->expert_tokens, (size_t)E, &st) == 0) {
                cv += uses[d] * st.cv; mm += uses[d] * st.max_min; gini += uses[d] * st.gini;
            }
            n_uses += uses[d];
        }
        if (!capped) memcpy(p->step_expert_routed, p->step_expert_tokens, (size_t)E * sizeof(double));
        /* the hottest expert's share of the routed tokens, and the busiest EP index's pairs over the mean */
        double top = 0, *rank_load = moe_xcalloc((size_t)n, sizeof(double));
        p->max_expert = p->busiest_ep_rank = 0;
        for (int e = 0; e < E; e++)
            if (p->step_expert_routed[e] > top) top = p->step_expert_routed[e], p->max_expert = e;
        p->max_expert_share = p->routed_pairs > 0 ? top * s->model.top_k / (double)p->routed_pairs : 0;
        for (int d = 0; d < n_distinct; d++)
            for (int j = 0; j < n; j++) rank_load[j] += uses[d] * p->recv_tokens[(size_t)d * n + j];
        double most = 0, sum = 0;
        for (int j = 0; j < n; j++) {
            sum += rank_load[j];
            if (rank_load[j] > most) most = rank_load[j], p->busiest_ep_rank = j;
        }
        p->rank_load_max_mean = sum > 0 ? most * n / sum : 1.0;
        free(rank_load);
        p->dropped_token_fraction = p->routed_pairs > 0 ? (double)p->dropped_pairs / p->routed_pairs : 0;
        p->expert_load_cv = cv / n_uses; p->expert_load_max_min = mm / n_uses; p->expert_load_gini = gini / n_uses;
    }
    free(distinct); free(uses);
    routing_pool_free(pool);
    routing_ctx_free(ctx);
    return rc;
}

/* ---- per-layer quantities -------------------------------------------------------------------------------- */
typedef struct {
    model_counts mc;
    double T;              /* tokens per micro-batch per rank */
    double act_bytes;      /* one token's hidden state in BF16 */
    double wbytes;         /* bytes per weight element in compute precision */
    const model_cfg *model;
    double tp;
    /* ZeRO units (memory.h): one block's parameters on this rank (index: is_moe), one MTP module's */
    stage_params block[2], mtp_module;
    mem_state_bytes sb;    /* bytes per weight and per gradient element the DP collectives move */
    int dense_dp, expert_dp;   /* ranks in the dense and the expert data-parallel groups */
} layer_info;

static int is_moe(const layer_info *li, int layer) { return model_layer_is_moe(li->model, layer); }
/* attention score + value FLOPs per token of block `layer` (sliding window or full) */
static double attn_core(const program *p, const layer_info *li, int layer) {
    return model_layer_windowed(&p->scn->model, layer) ? li->mc.fwd_attn_core_window : li->mc.fwd_attn_core;
}

/* ---- op buffer with local indices ------------------------------------------------------------------------- */
typedef struct { program_op *v; int n, cap; } op_buf;

static int emit(op_buf *b, program_op op) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->v = moe_xrealloc(b->v, (size_t)b->cap, sizeof *b->v);
    }
    b->v[b->n] = op;
    return b->n++;
}

static program_op base_op(op_kind k, stream_kind st, op_phase ph, int layer, int chunk, int mb) {
    program_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)k; o.kernel = K_NONE; o.stream = (uint8_t)st; o.phase = (uint8_t)ph;
    o.layer = (int16_t)layer; o.chunk = (uint8_t)chunk; o.mb = mb;
    o.peer = -1; o.group = -1; o.pattern = -1; o.tag = -1;
    return o;
}
static void dep(program_op *o, int i) {
    if (i < 0) return;
    for (int k = 0; k < o->n_deps; k++) if (o->deps[k] == i) return;
    if (o->n_deps < OP_MAX_DEPS) o->deps[o->n_deps++] = i;
}

static int compute(op_buf *b, kernel_kind kk, op_phase ph, int layer, int chunk, int mb,
                   double flops, double mem, double tokens, int d0, int d1) {
    program_op o = base_op(OP_COMPUTE, STREAM_COMPUTE, ph, layer, chunk, mb);
    o.kernel = (uint8_t)kk; o.flops = (float)flops; o.mem_bytes = (float)mem; o.tokens = (int32_t)tokens;
    dep(&o, d0); dep(&o, d1);
    return emit(b, o);
}
static int coll_on(op_buf *b, stream_kind st, op_kind k, group_kind g, op_phase ph, int layer, int chunk, int mb,
                   double bytes, int pattern, int d0) {
    program_op o = base_op(k, st, ph, layer, chunk, mb);
    o.group = g; o.bytes = (float)bytes; o.pattern = pattern;
    dep(&o, d0);
    return emit(b, o);
}
static int coll(op_buf *b, op_kind k, group_kind g, op_phase ph, int layer, int chunk, int mb,
                double bytes, int pattern, int d0) {
    return coll_on(b, STREAM_COMM, k, g, ph, layer, chunk, mb, bytes, pattern, d0);
}

/* Generation context of one pipeline stage. */
typedef struct {
    program *p;
    const layer_info *li;
    const schedule_spec *sp;
    int stage;
    struct grad_buckets *gb;   /* layout.overlap_grad_reduce: the chunks' gradient buckets, or NULL */
    int item;                  /* index of the schedule item being generated */
} gen_ctx;

static int pattern_of(const gen_ctx *g, int layer, int mb, a2a_kind k) {
    return program_draw_of(g->p, layer, mb) * A2A_NKINDS + k;
}

static int tag_of(const program *p, int mb, int ms_sender, int grad) {
    return ((mb * p->n_model_stages) + ms_sender) * 2 + grad;
}

/* TP all-reduce after a block when tp > 1 */
static int tp_ar(op_buf *b, const gen_ctx *g, op_phase ph, int layer, int chunk, int mb, int d0) {
    if (g->p->attn_tp <= 1) return d0;
    return coll(b, OP_ALL_REDUCE, GROUP_TP, ph, layer, chunk, mb, g->li->T * g->li->act_bytes, -1, d0);
}

/* The MoE block's TP collective when the experts use the attention's tensor parallelism (etp = tp):
 * the TP group gathers its sequence-parallel tokens before routing and reduce-scatters the experts'
 * partial outputs after the combine (Megatron's alltoall dispatcher with tp > 1), one all-reduce's
 * worth each way. With etp < tp every rank routes its own tokens: no TP collective. */
static int moe_tp_coll(op_buf *b, const gen_ctx *g, op_phase ph, int layer, int chunk, int mb, int d0) {
    if (g->p->tp != g->p->attn_tp) return d0;
    return tp_ar(b, g, ph, layer, chunk, mb, d0);
}

/* Hidden states a pipeline message carries per token: the main one, and each MTP module's output
 * computed so far (its loss is on the loss stage). */
static double hidden_states_after(const program *p, int ms) { return 1.0 + p->stage_mtp_end[ms]; }
static double hidden_states_into(const program *p, int ms) { return 1.0 + p->stage_mtp_begin[ms]; }

/* A routed-expert GEMM op of block l: sized per rank at resolution by the tokens the forward
 * dispatch's routing sample sends it (resolve()). */
static int expert_op(op_buf *b, const gen_ctx *g, kernel_kind k, op_phase ph, int l, int c, int mb, int d0) {
    program_op eo = base_op(OP_COMPUTE, STREAM_COMPUTE, ph, l, c, mb);
    eo.kernel = (uint8_t)k; eo.pattern = pattern_of(g, l, mb, A2A_DISPATCH_F);
    dep(&eo, d0);
    return emit(b, eo);
}

/* ---- ZeRO-2/3: the data-parallel collectives of each unit (sim/plan/zero_sync.h) ----
 * A model stage's units in forward order: 0 = its extra parameters (embedding, final norm and head:
 * memory_stage_extra_params), then its blocks, then its MTP modules. The backward visits unit 0 first
 * too (the head's backward comes first, the embedding's last: the extras stay gathered for the pass),
 * then the others in reverse. ZeRO-3 gathers a unit before its first kernel, prefetching one: the
 * gather of the next unit is issued when the current one may start, so it runs beside the current
 * unit's compute and ZERO_UNITS_IN_FLIGHT units are gathered at a time (the memory ledgers count
 * them). ZeRO-2/3 reduce-scatter a unit's gradients after its last weight-gradient kernel. Dense
 * parameters go over GROUP_DP_DENSE, the routed experts over GROUP_DP_EXPERT; a group of one rank
 * needs neither. All on STREAM_DP. */
static int zero_n_units(const program *p, int ms) {
    return 1 + (p->stage_layer_end[ms] - p->stage_layer_begin[ms]) + (p->stage_mtp_end[ms] - p->stage_mtp_begin[ms]);
}

/* Unit k (forward order) of model stage ms: its parameters on this rank; returns the layer it names. */
static int zero_unit(const gen_ctx *g, int ms, int k, stage_params *out) {
    const program *p = g->p; const layer_info *li = g->li;
    int nb = p->stage_layer_end[ms] - p->stage_layer_begin[ms];
    if (k == 0) {
        out->nonexpert = memory_stage_extra_params(&li->mc, &p->scn->layout, ms == 0, ms == p->n_model_stages - 1,
                                                   p->stage_mtp_end[ms] - p->stage_mtp_begin[ms]);
        out->expert = 0;
        return OP_NO_LAYER;
    }
    if (k <= nb) {
        int l = p->stage_layer_begin[ms] + k - 1;
        *out = li->block[is_moe(li, l)];
        return l;
    }
    *out = li->mtp_module;
    return p->scn->model.layers + p->stage_mtp_begin[ms] + (k - 1 - nb);
}

/* The unit's collective of kind k over both DP groups after op d0; returns the last op emitted (-1:
 * none, the groups are single ranks). */
static int zero_coll(op_buf *b, const gen_ctx *g, op_kind k, op_phase ph, int ms, int unit, int c, int mb, int d0) {
    const layer_info *li = g->li;
    stage_params u;
    int layer = zero_unit(g, ms, unit, &u), last = -1;
    double elem = k == OP_ALL_GATHER ? li->sb.weight : li->sb.grad;
    if (li->dense_dp > 1 && u.nonexpert > 0)
        last = coll_on(b, STREAM_DP, k, GROUP_DP_DENSE, ph, layer, c, mb, u.nonexpert * elem, -1, d0);
    if (li->expert_dp > 1 && u.expert > 0)
        last = coll_on(b, STREAM_DP, k, GROUP_DP_EXPERT, ph, layer, c, mb, u.expert * elem, -1, d0);
    return last;
}

/* One pass (forward or backward) of a micro-batch over model stage ms, visiting its units in order. */
typedef struct {
    int on, ms, n, next, gate_next, c, mb;
    op_phase ph;
} zero_pass;

static int zero_order(const zero_pass *z, int k) { return z->ph == PHASE_F || k == 0 ? k : z->n - k; }

static void zero_pass_begin(zero_pass *z, op_buf *b, const gen_ctx *g, op_phase ph, int ms, int c, int mb) {
    *z = (zero_pass){.on = g->p->scn->layout.zero >= 3, .ms = ms, .n = zero_n_units(g->p, ms), .c = c, .mb = mb,
                     .ph = ph, .gate_next = -1};
    if (z->on) z->gate_next = zero_coll(b, g, OP_ALL_GATHER, ph, ms, 0, c, mb, -1);
}

/* The next unit may start after op `last`: prefetch the one after it; returns the op the unit's
 * first kernel waits for (its gather; -1 without ZeRO-3). */
static int zero_pass_next(zero_pass *z, op_buf *b, const gen_ctx *g, int last) {
    if (!z->on) return -1;
    int gate = z->gate_next;
    z->gate_next = z->next + 1 < z->n
                       ? zero_coll(b, g, OP_ALL_GATHER, z->ph, z->ms, zero_order(z, z->next + 1), z->c, z->mb, last)
                       : -1;
    z->next++;
    return gate;
}

static void bucket_ready(op_buf *b, const gen_ctx *g, op_phase ph, int k, int c, int mb, int d0);

/* Unit k (forward order)'s weight gradients are done after op d0: ZeRO-2/3 reduce-scatter them; with
 * layout.overlap_grad_reduce the unit counts towards its gradient buckets. */
static void zero_reduce(op_buf *b, const gen_ctx *g, op_phase ph, int ms, int k, int c, int mb, int d0) {
    if (g->p->scn->layout.zero >= 2) zero_coll(b, g, OP_REDUCE_SCATTER, ph, ms, k, c, mb, d0);
    bucket_ready(b, g, ph, k, c, mb, d0);
}

/* ---- data-parallel gradient buckets (layout.overlap_grad_reduce; ZeRO 0 and 1) ----
 * Megatron-Core's DistributedDataParallel with overlap_grad_reduce (NVIDIA/Megatron-LM at d98e8a64):
 *   - Gradients live in one buffer per kind of parameter: the non-expert ones, reduced over the dense
 *     data-parallel group, and the routed experts', over the expert data-parallel group
 *     (param_and_grad_buffer.py group_params_for_buffers). Each buffer is cut into buckets of
 *     bucket_size parameters, filled walking the parameters in reverse (backprop) order, a bucket
 *     closing once it holds at least bucket_size (_compute_default_per_buffer_param_layout);
 *     bucket_size = max(40M, 1M x the dense data-parallel x context-parallel size)
 *     (training.py resolve_ddp_bucket_size, distributed_data_parallel.py __init__).
 *   - Only the first model chunk of pipeline rank 0 is bucketed: every other chunk, and every chunk
 *     of the other pipeline ranks, is one bucket per buffer (training.py per_chunk_bucket_sizes,
 *     "disable bucketing for non-first chunks ... or for non-zero pipeline-parallel ranks").
 *   - Each parameter's gradient hook registers it as ready in the last micro-batch only; a bucket
 *     whose parameters are all ready starts its collective at once, asynchronously: a
 *     reduce-scatter with the distributed optimizer (ZeRO 1), an all-reduce without (ZeRO 0)
 *     (param_and_grad_buffer.py register_grad_ready, start_grad_sync).
 *   - The optimizer waits for every bucket (finish_grad_sync). With overlap_param_gather (set with
 *     it by every Megatron-Bridge recipe: recipes/common.py at 067f987d), the updated parameters'
 *     all-gathers run under the next step's forward: the first bucket's is launched at the step's
 *     start, each next one when the forward reaches the bucket before it, and a module's forward
 *     waits for its bucket's (distributed_data_parallel.py _BucketParamReadyCallback,
 *     finish_param_sync; distrib_optimizer.py step_with_ready_grads).
 * Here: a unit (zero_unit: a block, an MTP module, the stage's embedding and head) is the grain, so
 * a bucket closes after the unit that fills it (Megatron's closes after that parameter: its buckets
 * hold up to a unit more or less). The buckets of a chunk are filled walking its units in reverse
 * forward order. In the chunk's last micro-batch (the schedule's last B or W item of the chunk, and
 * the other items of that micro-batch), a bucket's collective is emitted on the data-parallel stream
 * after the weight-gradient op of the last of its units to report; the optimizer waits for the last
 * bucket of each group. The parameter gather is modelled within the step as the steady state does
 * it: the gathers of the step's own parameters (the previous update's, the same sizes) are emitted
 * on the data-parallel stream at the chunk's first forward, bucket after bucket in forward order,
 * and each unit's first kernel of that forward waits for its bucket's gather (the data-parallel
 * stream is a FIFO: the later of its dense and expert gathers). ZeRO 2/3 reduce unit by unit
 * already (zero_reduce). Not modelled: the distributed optimizer's bucket padding
 * (param_layout.py), the FP8-parameter bucket merging (partition_buckets) and the Megatron-Bridge
 * performance scripts' overlap_param_gather_with_optimizer_step (one bucket per chunk, the gather
 * beside the optimizer step; scripts/performance/utils/overrides.py). */
#define DDP_BUCKET_MIN_PARAMS 40e6       /* max(40M, 1M x dp_cp): distributed_data_parallel.py */
#define DDP_BUCKET_PARAMS_PER_RANK 1e6

/* Parameters per gradient bucket for a dense data-parallel x context-parallel group of n ranks. */
static double ddp_bucket_params(int n) {
    double per_rank = DDP_BUCKET_PARAMS_PER_RANK * n;
    return per_rank > DDP_BUCKET_MIN_PARAMS ? per_rank : DDP_BUCKET_MIN_PARAMS;
}

enum { GB_DENSE = 0, GB_EXPERT, GB_N };

/* One chunk's buckets, per buffer (GB_DENSE, GB_EXPERT): the bucket of each unit, each bucket's
 * parameters and units not reported yet in the last micro-batch, and its gather (first forward). */
typedef struct {
    int n_units, n_buckets[GB_N];
    int *bucket_of[GB_N];        /* per unit: its bucket, -1 when it has no such parameters */
    double *params[GB_N];        /* per bucket */
    int *left[GB_N];             /* per bucket: units to report before its collective */
    int *gather[GB_N];           /* per bucket: its gather's op in the first-forward item, -1 */
    int last_mb;                 /* the micro-batch whose backward completes the gradients */
    int first_f;                 /* schedule item of the chunk's first forward */
} chunk_buckets;

typedef struct grad_buckets {
    int n_chunks;
    chunk_buckets *ch;
} grad_buckets;

static double unit_params(const gen_ctx *g, int ms, int k, int buffer) {
    stage_params u;
    zero_unit(g, ms, k, &u);
    return buffer == GB_DENSE ? u.nonexpert : u.expert;
}

/* The data-parallel group of a buffer has more than one rank (else no collective). */
static int buffer_synced(const layer_info *li, int buffer) {
    return buffer == GB_DENSE ? li->dense_dp > 1 : li->expert_dp > 1;
}

/* Lay out the buckets of every chunk of the stage from its schedule; NULL when they do not apply. */
static grad_buckets *grad_buckets_make(const gen_ctx *g, const sched_item *items, int n_items) {
    const program *p = g->p;
    if (!p->scn->layout.overlap_grad_reduce || p->scn->layout.zero >= 2) return NULL;
    grad_buckets *gb = moe_xcalloc(1, sizeof *gb);
    gb->n_chunks = g->sp->n_chunks;
    gb->ch = moe_xcalloc((size_t)gb->n_chunks, sizeof *gb->ch);
    double bucket = ddp_bucket_params(g->li->dense_dp);
    for (int c = 0; c < gb->n_chunks; c++) {
        chunk_buckets *cb = &gb->ch[c];
        int last_item = -1;
        cb->first_f = -1;
        for (int i = 0; i < n_items; i++) {
            if (items[i].chunk != c) continue;
            if (items[i].phase == SI_F && cb->first_f < 0) cb->first_f = i;
            if (items[i].phase != SI_F) last_item = i;
        }
        cb->last_mb = last_item >= 0 ? items[last_item].mb : -1;
        int ms = schedule_model_stage(g->sp, g->stage, c, c == 0 ? 0 : p->micro_batches - 1);
        int bucketed = g->stage == 0 && c == 0;
        cb->n_units = zero_n_units(p, ms);
        for (int f = 0; f < GB_N; f++) {
            cb->bucket_of[f] = moe_xmalloc((size_t)cb->n_units * sizeof(int));
            cb->params[f] = moe_xcalloc((size_t)cb->n_units + 1, sizeof(double));
            cb->left[f] = moe_xcalloc((size_t)cb->n_units + 1, sizeof(int));
            cb->gather[f] = moe_xmalloc(((size_t)cb->n_units + 1) * sizeof(int));
            int nb = 0;
            double filled = 0;
            for (int k = cb->n_units - 1; k >= 0; k--) {   /* backprop order */
                double n = buffer_synced(g->li, f) ? unit_params(g, ms, k, f) : 0;
                cb->bucket_of[f][k] = -1;
                if (n <= 0) continue;
                if (filled == 0) nb++;
                cb->bucket_of[f][k] = nb - 1;
                cb->params[f][nb - 1] += n;
                cb->left[f][nb - 1]++;
                filled += n;
                if (bucketed && filled >= bucket) filled = 0;   /* the bucket closes */
            }
            cb->n_buckets[f] = nb;
            for (int j = 0; j <= cb->n_units; j++) cb->gather[f][j] = -1;
        }
    }
    return gb;
}

static void grad_buckets_free(grad_buckets *gb) {
    if (!gb) return;
    for (int c = 0; c < gb->n_chunks; c++)
        for (int f = 0; f < GB_N; f++) {
            free(gb->ch[c].bucket_of[f]); free(gb->ch[c].params[f]); free(gb->ch[c].left[f]); free(gb->ch[c].gather[f]);
        }
    free(gb->ch);
    free(gb);
}

/* Unit k of chunk c reported its weight gradients after op d0 in micro-batch mb: in the chunk's last
 * micro-batch, a bucket whose units have all reported starts its collective. */
static void bucket_ready(op_buf *b, const gen_ctx *g, op_phase ph, int k, int c, int mb, int d0) {
    if (!g->gb || c >= g->gb->n_chunks) return;
    chunk_buckets *cb = &g->gb->ch[c];
    if (mb != cb->last_mb || k >= cb->n_units) return;
    const layer_info *li = g->li;
    int zero = g->p->scn->layout.zero, ms = schedule_model_stage(g->sp, g->stage, c, mb);
    stage_params u;
    int layer = zero_unit(g, ms, k, &u);
    for (int f = 0; f < GB_N; f++) {
        int j = cb->bucket_of[f][k];
        if (j < 0 || --cb->left[f][j] > 0) continue;
        coll_on(b, STREAM_DP, zero == 1 ? OP_REDUCE_SCATTER : OP_ALL_REDUCE, f == GB_DENSE ? GROUP_DP_DENSE : GROUP_DP_EXPERT,
                ph, layer, c, mb, cb->params[f][j] * li->sb.grad, -1, d0);
    }
}

/* The chunk's first forward (ZeRO 1): the gathers of its buckets, in forward order, before its first
 * unit; gather_gate() then gives each unit the gather its first kernel waits for. */
static void bucket_gathers(op_buf *b, const gen_ctx *g, int c, int mb) {
    if (!g->gb || c >= g->gb->n_chunks || g->p->scn->layout.zero != 1 || g->item != g->gb->ch[c].first_f) return;
    chunk_buckets *cb = &g->gb->ch[c];
    int emitted[GB_N] = {-1, -1};
    for (int k = 0; k < cb->n_units; k++)
        for (int f = 0; f < GB_N; f++) {
            int j = cb->bucket_of[f][k];
            if (j < 0 || j == emitted[f]) continue;
            emitted[f] = j;   /* forward order visits a bucket's units together */
            cb->gather[f][j] = coll_on(b, STREAM_DP, OP_ALL_GATHER, f == GB_DENSE ? GROUP_DP_DENSE : GROUP_DP_EXPERT,
                                       PHASE_F, OP_NO_LAYER, c, mb, cb->params[f][j] * g->li->sb.weight, -1, -1);
        }
}

/* The gather unit k's first kernel waits for in the chunk's first forward (-1: none). */
static int gather_gate(const gen_ctx *g, int k, int c) {
    if (!g->gb || c >= g->gb->n_chunks || g->item != g->gb->ch[c].first_f) return -1;
    const chunk_buckets *cb = &g->gb->ch[c];
    if (k >= cb->n_units) return -1;
    int gate = -1;
    for (int f = 0; f < GB_N; f++) {
        int j = cb->bucket_of[f][k];
        if (j >= 0 && cb->gather[f][j] > gate) gate = cb->gather[f][j];
    }
    return gate;
}

/* ---- context parallelism ----
 * Ring attention (layout.cp_comm "p2p"): the rank's key/value chunk goes around its CP ring in
 * cp - 1 steps; step k sends the chunk in hand to the ring successor (SEND, peer +1) and receives the
 * next from the predecessor (RECV, peer -1), and the attention of chunk k (K_ATTN_CORE_*) waits for
 * it, so each transfer overlaps the compute of the chunk before. The backward sends the keys and
 * values again with their gradients (twice the bytes). "all_gather": one all-gather of the chunks
 * over the CP group before the received chunks' attention (backward: all-gather again, reduce-
 * scatter of the key/value gradients after). Tags after the pipeline's (program_build). */
static int cp_tag(const program *p, int mb, int l, int k, int grad) {
    int blocks = p->scn->model.layers + p->scn->model.mtp_layers;
    return p->micro_batches * p->n_model_stages * 2 + (((mb * blocks + l) * (p->cp - 1) + (k - 1)) * 2 + grad);
}

static int cp_p2p(op_buf *b, op_kind k, op_phase ph, int l, int c, int mb, int offset, int tag, double bytes, int d0) {
    program_op o = base_op(k, STREAM_P2P, ph, l, c, mb);
    o.group = GROUP_CP; o.peer = offset; o.tag = tag; o.bytes = (float)bytes;
    dep(&o, d0);
    return emit(b, o);
}

/* The received chunks of one attention pass (forward or backward): returns the last chunk op. */
static int cp_chunks(op_buf *b, const gen_ctx *g, int fwd, int l, int c, int mb, int last) {
    const program *p = g->p; const layer_info *li = g->li;
    double T = li->T, tp = li->tp, f = fwd ? 1.0 : 2.0;
    double flops = f * T * attn_core(p, li, l) / tp / p->cp;
    double chunk = T * model_kv_exchange_bytes(&p->scn->model, tp) * f;   /* backward: with the gradients */
    kernel_kind k = fwd ? K_ATTN_CORE_FWD : K_ATTN_CORE_BWD;
    op_phase ph = fwd ? PHASE_F : PHASE_B;
    if (p->scn->layout.cp_comm == CP_COMM_ALL_GATHER) {
        int ag = coll(b, OP_ALL_GATHER, GROUP_CP, ph, l, c, mb, p->cp * T * model_kv_exchange_bytes(&p->scn->model, tp),
                      -1, last);
        for (int r = 1; r < p->cp; r++) last = compute(b, k, ph, l, c, mb, flops, 0, T, ag, last);
        return last;
    }
    int have = last;                       /* the chunk in hand: the local one, then each received */
    for (int r = 1; r < p->cp; r++) {
        cp_p2p(b, OP_SEND, ph, l, c, mb, +1, cp_tag(p, mb, l, r, !fwd), chunk, have);
        have = cp_p2p(b, OP_RECV, ph, l, c, mb, -1, cp_tag(p, mb, l, r, !fwd), chunk, -1);
        last = compute(b, k, ph, l, c, mb, flops, 0, T, have, last);
    }
    return last;
}

/* Attention forward of block l: projections and the local keys' core (K_ATTN_FWD), then under
 * context parallelism the received chunks, then the TP all-reduce. */
static int attn_fwd(op_buf *b, const gen_ctx *g, int l, int c, int mb, int last, int gate) {
    const program *p = g->p; const layer_info *li = g->li;
    double T = li->T, tp = li->tp;
    double attn_w = (li->mc.attn_split / tp + li->mc.attn_replicated) * li->wbytes;
    last = compute(b, K_ATTN_FWD, PHASE_F, l, c, mb,
                   T * (li->mc.fwd_attn_proj + attn_core(p, li, l) / p->cp) / tp, attn_w + 6 * T * li->act_bytes,
                   T, last, gate);
    if (p->cp > 1) last = cp_chunks(b, g, 1, l, c, mb, last);
    return tp_ar(b, g, PHASE_F, l, c, mb, last);
}

/* Attention input gradients of block l: under context parallelism the received chunks first, then
 * the local chunk and the projections (K_ATTN_BWD_INPUT), then the key/value gradients' reduce-
 * scatter (all_gather variant) and the TP all-reduce. */
static int attn_bwd(op_buf *b, const gen_ctx *g, int l, int c, int mb, int last) {
    const program *p = g->p; const layer_info *li = g->li;
    double T = li->T, tp = li->tp;
    if (p->cp > 1) last = cp_chunks(b, g, 0, l, c, mb, last);
    last = compute(b, K_ATTN_BWD_INPUT, PHASE_B, l, c, mb,
                   T * (li->mc.fwd_attn_proj + 2 * attn_core(p, li, l) / p->cp) / tp,
                   (li->mc.attn_split / tp + li->mc.attn_replicated) * li->wbytes + 8 * T * li->act_bytes, T, last, -1);
    if (p->cp > 1 && p->scn->layout.cp_comm == CP_COMM_ALL_GATHER)
        last = coll(b, OP_REDUCE_SCATTER, GROUP_CP, PHASE_B, l, c, mb,
                    p->cp * T * model_kv_exchange_bytes(&p->scn->model, tp), -1, last);
    return tp_ar(b, g, PHASE_B, l, c, mb, last);
}

/* The forward of block `l` (an MTP module's block: l >= model.layers) after op `last`, its first
 * kernel also after op `gate` (its ZeRO-3 gather, or -1); returns its last op. */
static int fwd_block(op_buf *b, const gen_ctx *g, int l, int c, int mb, int last, int gate) {
    const program *p = g->p; const layer_info *li = g->li; const scenario *s = p->scn;
    double T = li->T, tp = li->tp, h = s->model.hidden, R = p->routed_tokens;
    last = attn_fwd(b, g, l, c, mb, last, gate);
    if (!is_moe(li, l)) {
        last = compute(b, K_DENSE_FFN_FWD, PHASE_F, l, c, mb, T * li->mc.fwd_dense_ffn / tp,
                       li->mc.dense_ffn / tp * li->wbytes + 4 * T * li->act_bytes, T, last, -1);
        return tp_ar(b, g, PHASE_F, l, c, mb, last);
    }
    int router = compute(b, K_ROUTER_FWD, PHASE_F, l, c, mb, R * li->mc.fwd_router,
                         li->mc.router * li->wbytes + T * li->act_bytes, T, last, -1);
    int perm = compute(b, K_PERMUTE_FWD, PHASE_F, l, c, mb, 0,
                       2 * R * s->model.top_k * h * dtype_bytes(s->precision.dispatch), T, router, -1);
    int disp = coll(b, OP_A2A_DISPATCH, GROUP_EP, PHASE_F, l, c, mb, 0, pattern_of(g, l, mb, A2A_DISPATCH_F), perm);
    int shared = compute(b, K_SHARED_EXPERT_FWD, PHASE_F, l, c, mb, T * li->mc.fwd_shared / tp,
                         li->mc.shared / tp * li->wbytes + 4 * T * li->act_bytes, T, router, -1);
    int exp = expert_op(b, g, K_EXPERT_FWD, PHASE_F, l, c, mb, disp);
    int comb = coll(b, OP_A2A_COMBINE, GROUP_EP, PHASE_F, l, c, mb, 0, pattern_of(g, l, mb, A2A_COMBINE_F), exp);
    last = compute(b, K_UNPERMUTE_FWD, PHASE_F, l, c, mb, 0,
                   2 * R * s->model.top_k * h * dtype_bytes(s->precision.combine), T, comb, shared);
    return moe_tp_coll(b, g, PHASE_F, l, c, mb, last);
}

/* The projection part of MTP module j (before its block, layer index model.layers + j): forward,
 * input gradient or weight gradient (model.h: 2 x 2h x h FLOPs per token, column-parallel). */
static int mtp_proj(op_buf *b, const gen_ctx *g, kernel_kind k, op_phase ph, int j, int c, int mb, int d0, int d1) {
    const layer_info *li = g->li;
    double T = li->T, tp = li->tp;
    int l = g->p->scn->model.layers + j;
    return compute(b, k, ph, l, c, mb, T * 2.0 * li->mc.mtp_proj / tp,
                   li->mc.mtp_proj / tp * li->wbytes + 6 * T * li->act_bytes, T, d0, d1);
}

/* The loss stage: the head and cross-entropy once for the main loss, once per MTP module. */
static int head_ops(op_buf *b, const gen_ctx *g, int fwd, int c, int mb, int last) {
    const program *p = g->p; const layer_info *li = g->li; const scenario *s = p->scn;
    double T = li->T, tp = li->tp, f = fwd ? 1.0 : 2.0;
    for (int j = 0; j <= s->model.mtp_layers; j++)
        last = compute(b, fwd ? K_HEAD_LOSS_FWD : K_HEAD_LOSS_BWD, fwd ? PHASE_F : PHASE_B, OP_NO_LAYER, c, mb,
                       f * T * li->mc.fwd_head / tp,
                       f * li->mc.head / tp * li->wbytes + T * (li->act_bytes + 4.0 * s->model.vocab / tp), T, last, -1);
    return last;
}

/* Forward of one micro-batch through model stage `ms` (chunk `c`): its blocks, then its MTP modules. */
static void gen_forward(op_buf *b, const gen_ctx *g, int mb, int c, int ms) {
    const program *p = g->p; const layer_info *li = g->li;
    double T = li->T;
    int last = -1;
    zero_pass zp;
    zero_pass_begin(&zp, b, g, PHASE_F, ms, c, mb);
    bucket_gathers(b, g, c, mb);
    int nb = p->stage_layer_end[ms] - p->stage_layer_begin[ms];
    int extras = zero_pass_next(&zp, b, g, -1);
    if (extras < 0) extras = gather_gate(g, 0, c);
    if (ms > 0) {
        int ps, pc; schedule_locate(g->sp, ms - 1, mb, &ps, &pc);
        program_op o = base_op(OP_RECV, STREAM_P2P, PHASE_F, OP_NO_LAYER, c, mb);
        o.peer = ps; o.tag = tag_of(p, mb, ms - 1, 0);
        o.bytes = (float)(T * li->act_bytes * hidden_states_into(p, ms));
        last = emit(b, o);
    } else {
        last = compute(b, K_EMBED_FWD, PHASE_F, OP_NO_LAYER, c, mb, 0, T * li->act_bytes * 2, T, last, extras);
    }
    for (int l = p->stage_layer_begin[ms]; l < p->stage_layer_end[ms]; l++) {
        int gate = zero_pass_next(&zp, b, g, last);
        if (gate < 0) gate = gather_gate(g, 1 + l - p->stage_layer_begin[ms], c);
        last = fwd_block(b, g, l, c, mb, last, gate);
    }
    for (int j = p->stage_mtp_begin[ms]; j < p->stage_mtp_end[ms]; j++) {
        int gate = zero_pass_next(&zp, b, g, last);
        if (gate < 0) gate = gather_gate(g, 1 + nb + j - p->stage_mtp_begin[ms], c);
        last = mtp_proj(b, g, K_MTP_PROJ_FWD, PHASE_F, j, c, mb, last, gate);
        last = fwd_block(b, g, p->scn->model.layers + j, c, mb, last, -1);
    }
    if (ms == p->n_model_stages - 1) {
        /* the head's parameters came with unit 0 (gathered before the first block) */
        int h0 = b->n;
        head_ops(b, g, 1, c, mb, last);
        dep(&b->v[h0], extras);
    } else {
        int ns, nc; schedule_locate(g->sp, ms + 1, mb, &ns, &nc);
        program_op o = base_op(OP_SEND, STREAM_P2P, PHASE_F, OP_NO_LAYER, c, mb);
        o.peer = ns; o.tag = tag_of(p, mb, ms, 0);
        o.bytes = (float)(T * li->act_bytes * hidden_states_after(p, ms));
        dep(&o, last);
        emit(b, o);
    }
}

/* Weight-gradient ops of block l (emitted inline after B, or later as a W item). */
static int gen_weights(op_buf *b, const gen_ctx *g, op_phase ph, int l, int c, int mb, int d0) {
    const layer_info *li = g->li; double T = li->T, tp = li->tp;
    int last = d0;
    if (is_moe(li, l)) {
        last = expert_op(b, g, K_EXPERT_BWD_WEIGHT, ph, l, c, mb, last);
        last = compute(b, K_SHARED_EXPERT_BWD_WEIGHT, ph, l, c, mb, T * li->mc.fwd_shared / tp,
                       li->mc.shared / tp * li->wbytes + 4 * T * li->act_bytes, T, last, -1);
    } else {
        last = compute(b, K_DENSE_FFN_BWD_WEIGHT, ph, l, c, mb, T * li->mc.fwd_dense_ffn / tp,
                       li->mc.dense_ffn / tp * li->wbytes + 4 * T * li->act_bytes, T, last, -1);
    }
    last = compute(b, K_ATTN_BWD_WEIGHT, ph, l, c, mb, T * li->mc.fwd_attn_proj / tp,
                   (li->mc.attn_split / tp + li->mc.attn_replicated) * li->wbytes + 4 * T * li->act_bytes, T, last, -1);
    return last;
}

/* Input gradients of block l after op `last`, its first kernels also after op `gate` (its ZeRO-3
 * gather, or -1); weight gradients inline when with_w, the last of them in *w_last. Returns the
 * block's last input-gradient op. */
static int bwd_block(op_buf *b, const gen_ctx *g, int l, int c, int mb, int last, int gate, int with_w, int *w_last) {
    const program *p = g->p; const layer_info *li = g->li; const scenario *s = p->scn;
    double T = li->T, tp = li->tp, h = s->model.hidden, R = p->routed_tokens;
    if (!is_moe(li, l)) {
        last = compute(b, K_DENSE_FFN_BWD_INPUT, PHASE_B, l, c, mb, T * li->mc.fwd_dense_ffn / tp,
                       li->mc.dense_ffn / tp * li->wbytes + 4 * T * li->act_bytes, T, last, gate);
        last = tp_ar(b, g, PHASE_B, l, c, mb, last);
    } else {
        last = moe_tp_coll(b, g, PHASE_B, l, c, mb, last);
        int unp = compute(b, K_UNPERMUTE_BWD, PHASE_B, l, c, mb, 0,
                          2 * R * s->model.top_k * h * 2.0, T, last, gate);
        int disp = coll(b, OP_A2A_DISPATCH, GROUP_EP, PHASE_B, l, c, mb, 0, pattern_of(g, l, mb, A2A_DISPATCH_B), unp);
        int shared = compute(b, K_SHARED_EXPERT_BWD_INPUT, PHASE_B, l, c, mb, T * li->mc.fwd_shared / tp,
                             li->mc.shared / tp * li->wbytes + 4 * T * li->act_bytes, T, last, gate);
        int exp = expert_op(b, g, K_EXPERT_BWD_INPUT, PHASE_B, l, c, mb, disp);
        int comb = coll(b, OP_A2A_COMBINE, GROUP_EP, PHASE_B, l, c, mb, 0, pattern_of(g, l, mb, A2A_COMBINE_B), exp);
        /* expert weight gradients run while the combine is in flight */
        if (with_w) expert_op(b, g, K_EXPERT_BWD_WEIGHT, PHASE_B, l, c, mb, exp);
        int perm = compute(b, K_PERMUTE_BWD, PHASE_B, l, c, mb, 0,
                           2 * R * s->model.top_k * h * 2.0, T, comb, shared);
        last = compute(b, K_ROUTER_BWD, PHASE_B, l, c, mb, 2 * R * li->mc.fwd_router,
                       li->mc.router * li->wbytes + T * li->act_bytes, T, perm, -1);
    }
    last = attn_bwd(b, g, l, c, mb, last);
    if (with_w) {
        /* the expert W was emitted above; the rest of the block's weight gradients here */
        if (!is_moe(li, l))
            compute(b, K_DENSE_FFN_BWD_WEIGHT, PHASE_B, l, c, mb, T * li->mc.fwd_dense_ffn / tp,
                    li->mc.dense_ffn / tp * li->wbytes + 4 * T * li->act_bytes, T, -1, -1);
        else
            compute(b, K_SHARED_EXPERT_BWD_WEIGHT, PHASE_B, l, c, mb, T * li->mc.fwd_shared / tp,
                    li->mc.shared / tp * li->wbytes + 4 * T * li->act_bytes, T, -1, -1);
        *w_last = compute(b, K_ATTN_BWD_WEIGHT, PHASE_B, l, c, mb, T * li->mc.fwd_attn_proj / tp,
                          (li->mc.attn_split / tp + li->mc.attn_replicated) * li->wbytes + 4 * T * li->act_bytes, T,
                          -1, -1);
    }
    return last;
}

static void gen_backward(op_buf *b, const gen_ctx *g, int mb, int c, int ms, int with_w) {
    const program *p = g->p; const layer_info *li = g->li;
    double T = li->T;
    int last = -1, L = p->scn->model.layers, nb = p->stage_layer_end[ms] - p->stage_layer_begin[ms], w = -1;
    zero_pass zp;
    zero_pass_begin(&zp, b, g, PHASE_B, ms, c, mb);
    int extras = zero_pass_next(&zp, b, g, -1);
    if (ms == p->n_model_stages - 1) {
        last = head_ops(b, g, 0, c, mb, extras);
    } else {
        int ns, nc; schedule_locate(g->sp, ms + 1, mb, &ns, &nc);
        program_op o = base_op(OP_RECV, STREAM_P2P, PHASE_B, OP_NO_LAYER, c, mb);
        o.peer = ns; o.tag = tag_of(p, mb, ms + 1, 1);
        o.bytes = (float)(T * li->act_bytes * hidden_states_after(p, ms));
        last = emit(b, o);
    }
    for (int j = p->stage_mtp_end[ms] - 1; j >= p->stage_mtp_begin[ms]; j--) {
        int gate = zero_pass_next(&zp, b, g, last);
        last = bwd_block(b, g, L + j, c, mb, last, gate, with_w, &w);
        last = mtp_proj(b, g, K_MTP_PROJ_BWD_INPUT, PHASE_B, j, c, mb, last, -1);
        if (with_w) {
            w = mtp_proj(b, g, K_MTP_PROJ_BWD_WEIGHT, PHASE_B, j, c, mb, -1, -1);
            zero_reduce(b, g, PHASE_B, ms, 1 + nb + j - p->stage_mtp_begin[ms], c, mb, w);
        }
    }
    for (int l = p->stage_layer_end[ms] - 1; l >= p->stage_layer_begin[ms]; l--) {
        int gate = zero_pass_next(&zp, b, g, last);
        last = bwd_block(b, g, l, c, mb, last, gate, with_w, &w);
        if (with_w) zero_reduce(b, g, PHASE_B, ms, 1 + l - p->stage_layer_begin[ms], c, mb, w);
    }
    if (ms == 0) {
        last = compute(b, K_EMBED_BWD, PHASE_B, OP_NO_LAYER, c, mb, 0, T * li->act_bytes * 2, T, last, extras);
        zero_reduce(b, g, PHASE_B, ms, 0, c, mb, last);
    } else {
        int ps, pc; schedule_locate(g->sp, ms - 1, mb, &ps, &pc);
        program_op o = base_op(OP_SEND, STREAM_P2P, PHASE_B, OP_NO_LAYER, c, mb);
        o.peer = ps; o.tag = tag_of(p, mb, ms, 1);
        o.bytes = (float)(T * li->act_bytes * hidden_states_into(p, ms));
        dep(&o, last);
        emit(b, o);
        /* the extras' gradients (the head's, an MTP module's embedding copy) */
        zero_reduce(b, g, PHASE_B, ms, 0, c, mb, last);
    }
}

static void gen_w(op_buf *b, const gen_ctx *g, int mb, int c, int ms) {
    const program *p = g->p;
    int last = -1, L = p->scn->model.layers, nb = p->stage_layer_end[ms] - p->stage_layer_begin[ms];
    for (int j = p->stage_mtp_end[ms] - 1; j >= p->stage_mtp_begin[ms]; j--) {
        last = gen_weights(b, g, PHASE_W, L + j, c, mb, last);
        last = mtp_proj(b, g, K_MTP_PROJ_BWD_WEIGHT, PHASE_W, j, c, mb, last, -1);
        zero_reduce(b, g, PHASE_W, ms, 1 + nb + j - p->stage_mtp_begin[ms], c, mb, last);
    }
    for (int l = p->stage_layer_end[ms] - 1; l >= p->stage_layer_begin[ms]; l--) {
        last = gen_weights(b, g, PHASE_W, l, c, mb, last);
        zero_reduce(b, g, PHASE_W, ms, 1 + l - p->stage_layer_begin[ms], c, mb, last);
    }
}

/* Append `src` (local indices) to `dst`, remapping deps; returns the offset used. */
static void append_ops(op_buf *dst, const op_buf *src, int from, int to, const int *remap, int *new_index) {
    for (int i = from; i < to; i++) {
        program_op o = src->v[i];
        for (int k = 0; k < o.n_deps; k++) o.deps[k] = remap[o.deps[k]];
        new_index[i] = emit(dst, o);
    }
}

/* Communication that splits an item into overlap segments: the comm stream's (ZeRO's data-parallel
 * stream runs beside both items of a pair anyway). */
static int is_comm(const program_op *o) {
    return o->kind != OP_COMPUTE && o->kind != OP_RECV && o->kind != OP_SEND && o->stream == STREAM_COMM;
}

/* Segments end right after each comm op. */
static int next_segment_end(const op_buf *b, int from) {
    for (int i = from; i < b->n; i++) if (is_comm(&b->v[i])) return i + 1;
    return b->n;
}

static void gen_item(op_buf *b, const gen_ctx *g, const sched_item *it) {
    int ms = schedule_model_stage(g->sp, g->stage, it->chunk, it->mb);
    if (it->phase == SI_F) gen_forward(b, g, it->mb, it->chunk, ms);
    else if (it->phase == SI_B) gen_backward(b, g, it->mb, it->chunk, ms, it->with_w);
    else gen_w(b, g, it->mb, it->chunk, ms);
}

static void append_whole(op_buf *dst, const op_buf *src) {
    /* deps point to earlier ops, so every remap entry read is written first (calloc: the compiler
     * cannot see that) */
    int *map = moe_xcalloc((size_t)src->n + 1, sizeof(int));
    append_ops(dst, src, 0, src->n, map, map);
    free(map);
}

/* DualPipe F/B pair: alternate segments so each one's all-to-all overlaps the other's compute. */
static void append_pair(op_buf *dst, const op_buf *a, const op_buf *bb) {
    int *ma = moe_xcalloc((size_t)a->n + 1, sizeof(int)), *mb = moe_xcalloc((size_t)bb->n + 1, sizeof(int));
    int ia = 0, ib = 0;
    while (ia < a->n || ib < bb->n) {
        if (ia < a->n) { int e = next_segment_end(a, ia); append_ops(dst, a, ia, e, ma, ma); ia = e; }
        if (ib < bb->n) { int e = next_segment_end(bb, ib); append_ops(dst, bb, ib, e, mb, mb); ib = e; }
    }
    free(ma); free(mb);
}

/* The step tail of one rank: gradient sync per group (zero 0: all-reduce; zero 1: reduce-scatter;
 * zero 2/3: done unit by unit, sim/plan/zero_sync.h), the optimizer on the shard, the parameter
 * gather (zero 1/2). `out` is the rank's list so far: the optimizer waits for its last per-unit
 * reduce-scatters. */
static void gen_tail(op_buf *b, const gen_ctx *g) {
    const program *p = g->p; const layer_info *li = g->li; const scenario *s = p->scn;
    double dense = 0, expert = 0;
    for (int c = 0; c < g->sp->n_chunks; c++) {
        int ms = schedule_model_stage(g->sp, g->stage, c, c == 0 ? 0 : p->micro_batches - 1);
        for (int k = 0; k < zero_n_units(p, ms); k++) {
            stage_params u;
            zero_unit(g, ms, k, &u);
            dense += u.nonexpert;
            expert += u.expert;
        }
    }
    int ndd = li->dense_dp, nde = li->expert_dp, zero = s->layout.zero;
    double gb = li->sb.grad, wb = li->sb.weight;
    int deps[2] = {-1, -1};
    double shard = dense + expert;
    if (zero >= 2 || g->gb) {
        /* the gradients were reduced unit by unit (ZeRO 2/3) or bucket by bucket (overlap_grad_reduce):
         * the optimizer waits for each group's last */
        for (int i = 0; i < b->n; i++)
            if ((b->v[i].kind == OP_REDUCE_SCATTER || b->v[i].kind == OP_ALL_REDUCE) && b->v[i].stream == STREAM_DP &&
                b->v[i].mb >= 0)
                deps[b->v[i].group == GROUP_DP_EXPERT] = i;
        if (zero >= 1) shard = dense / ndd + expert / nde;
    } else {
        /* one collective per group once the last gradient is computed (the rank's last kernel) */
        int last = -1;
        for (int i = 0; i < b->n; i++)
            if (b->v[i].kind == OP_COMPUTE) last = i;
        op_kind k = zero == 1 ? OP_REDUCE_SCATTER : OP_ALL_REDUCE;
        if (ndd > 1) deps[0] = coll(b, k, GROUP_DP_DENSE, PHASE_OPT, OP_NO_LAYER, 0, -1, dense * gb, -1, last);
        if (nde > 1 && expert > 0) deps[1] = coll(b, k, GROUP_DP_EXPERT, PHASE_OPT, OP_NO_LAYER, 0, -1, expert * gb, -1, last);
        if (zero == 1) shard = dense / ndd + expert / nde;
    }
    /* AdamW: read fp32 master, m, v and the gradient; write master, m, v and the BF16 weight */
    int opt = compute(b, K_OPTIMIZER, PHASE_OPT, OP_NO_LAYER, 0, -1, 12.0 * shard, 30.0 * shard, 0, deps[0], deps[1]);
    if ((zero == 1 && !g->gb) || zero == 2) {   /* overlap_grad_reduce: the gathers run under the first forward */
        if (ndd > 1) coll(b, OP_ALL_GATHER, GROUP_DP_DENSE, PHASE_OPT, OP_NO_LAYER, 0, -1, dense * wb, -1, opt);
        if (nde > 1 && expert > 0) coll(b, OP_ALL_GATHER, GROUP_DP_EXPERT, PHASE_OPT, OP_NO_LAYER, 0, -1, expert * wb, -1, opt);
    }
}

static void gen_stage(program *p, const layer_info *li, const schedule_spec *sp, int stage) {
    gen_ctx g = {.p = p, .li = li, .sp = sp, .stage = stage};
    sched_item *items = NULL;
    int n = schedule_stage(sp, stage, &items);
    g.gb = grad_buckets_make(&g, items, n);
    op_buf out = {0}, a = {0}, bb = {0};
    for (int i = 0; i < n; i++) {
        a.n = 0;
        g.item = i;
        gen_item(&a, &g, &items[i]);
        if (items[i].overlap_next && i + 1 < n) {
            bb.n = 0;
            g.item = i + 1;
            gen_item(&bb, &g, &items[i + 1]);
            append_pair(&out, &a, &bb);
            i++;
        } else {
            append_whole(&out, &a);
        }
    }
    gen_tail(&out, &g);
    grad_buckets_free(g.gb);
    free(items); free(a.v); free(bb.v);
    p->stage_ops[stage] = out.v;
    p->stage_n_ops[stage] = out.n;
}

/* ---- resolution ---------------------------------------------------------------------------------------------- */
/* The token-expert pairs EP rank e receives in routing draw `draw`, and the FLOPs of its expert GEMMs
 * (forward: two or three matrices of hidden x expert_hidden / tp per pair, 2 FLOPs a multiply-add). */
static double expert_pairs(const program *p, int draw, int e) { return p->recv_tokens[draw * p->ep + e]; }
static float expert_flops(const program *p, double pairs) {
    const model_cfg *m = &p->scn->model;
    double per_pair = 2.0 * (m->ffn_act == FFN_SWIGLU ? 3.0 : 2.0) * m->hidden * m->expert_hidden / p->tp;
    return (float)(pairs * per_pair);
}

static void resolve(const program *p, int rank, int d, int e, int t, program_op *o) {
    if (!program_op_rank_relative(o)) return;
    o->pattern = program_replica_pattern(p, d, o);   /* the stage list names replica 0's samples */
    if ((o->kind == OP_SEND || o->kind == OP_RECV) && o->group == GROUP_CP) {
        /* ring attention: the neighbour `peer` places along the rank's CP ring */
        const program_group *G = &p->groups[program_group_of(p, rank, GROUP_CP)];
        int at = 0;
        while (at < G->n && G->ranks[at] != rank) at++;
        o->peer = G->ranks[((at + o->peer) % G->n + G->n) % G->n];
        o->group = -1;
    } else if (o->kind == OP_SEND || o->kind == OP_RECV) {
        o->peer = program_rank(p, d, o->peer, e, t);
    }
    else if (o->kind != OP_COMPUTE) o->group = program_group_of(p, rank, (group_kind)o->group);
    if (o->kind == OP_COMPUTE && o->pattern >= 0) {
        /* expert GEMMs: sized by the token-expert pairs this rank receives in that routing draw */
        const scenario *sc = p->scn;
        double pairs = expert_pairs(p, p->patterns[o->pattern].draw, e);
        double wbytes = (sc->model.ffn_act == FFN_SWIGLU ? 3.0 : 2.0) * sc->model.hidden *
                        sc->model.expert_hidden / p->tp * dtype_bytes(sc->precision.compute) *
                        (sc->model.experts / p->ep);
        o->tokens = (int32_t)llround(pairs);
        o->flops = expert_flops(p, pairs);
        o->mem_bytes = (float)(wbytes + pairs * sc->model.hidden * 2.0 * 4);
    }
    if (o->kind == OP_A2A_DISPATCH || o->kind == OP_A2A_COMBINE) {
        o->bytes = (float)p->patterns[o->pattern].sent_bytes[e];
    }
}

void program_rank_op(const program *p, int rank, int i, program_op *out) {
    int d, s, e, t;
    program_coords(p, rank, &d, &s, &e, &t);
    *out = p->stage_ops[s][i];
    resolve(p, rank, d, e, t, out);
}

int program_materialize(const program *p, int rank, program_op **ops) {
    int n = program_n_ops(p, rank);
    *ops = moe_xmalloc((size_t)(n > 0 ? n : 1) * sizeof **ops);
    for (int i = 0; i < n; i++) program_rank_op(p, rank, i, &(*ops)[i]);
    return n;
}

/* model FLOPs of the step: every rank's compute ops, the routed experts' as resolution sizes them.
 * A stage's ops but the routed experts' cost every rank of the stage alike (one sum per stage); the
 * experts' are listed as (MoE layer, micro-batch), the sample each replica routes them with giving
 * the pairs of each EP index. Replicas of one sample stream run the same FLOPs: one is counted. */
static void count_model_flops(program *p) {
    int G = p->n_sample_groups, m = p->micro_batches;
    double fl = 0;
    int *keys = NULL;
    for (int st = 0; st < p->pp; st++) {
        double same = 0;
        int n_keys = 0;
        keys = moe_xrealloc(keys, (size_t)p->stage_n_ops[st] + 1, sizeof *keys);
        for (int i = 0; i < p->stage_n_ops[st]; i++) {
            const program_op *o = &p->stage_ops[st][i];
            if (o->kind != OP_COMPUTE || o->kernel == K_OPTIMIZER) continue;
            if (o->pattern >= 0) keys[n_keys++] = (o->layer - p->moe_first_layer) * m + o->mb;
            else same += o->flops;
        }
        int per_stage = rank_ranks_per_stage(&p->ranks);
        for (int g = 0; g < G; g++) {
            const int *draw = p->draw_of + (size_t)g * p->n_moe_layers * m;
            double experts = 0;
            for (int e = 0; e < p->ep; e++)
                for (int k = 0; k < n_keys; k++) experts += expert_flops(p, expert_pairs(p, draw[keys[k]], e));
            /* the stage's ranks of one replica: ep x tp (each TP index computes its slice) */
            int reps = p->dp / G + (g < p->dp % G);   /* the replicas d = g mod G */
            fl += (double)reps * (same * (per_stage / p->dp) + experts * p->tp);
        }
    }
    free(keys);
    p->model_flops_per_step = fl;
}

/* ---- the scenario's in-step faults resolved into the program (faults.h) ---------------------------- */
/* What the rank of stage st runs forward, per chunk ("layers a..b with micro-batches m..n; ..."), for
 * the message of a stall it never reaches. */
static void forward_runs(const program *p, int st, char *runs, size_t len) {
    runs[0] = 0;
    for (int c = 0; c < p->n_chunks; c++) {
        int lo = INT_MAX, hi = -1, mlo = INT_MAX, mhi = -1;
        for (int i = 0; i < p->stage_n_ops[st]; i++) {
            const program_op *o = &p->stage_ops[st][i];
            if (o->phase != PHASE_F || o->chunk != c || o->layer < 0) continue;
            if (o->layer < lo) lo = o->layer;
            if (o->layer > hi) hi = o->layer;
            if (o->mb < mlo) mlo = o->mb;
            if (o->mb > mhi) mhi = o->mb;
        }
        if (hi < 0) continue;
        size_t at = strlen(runs);
        snprintf(runs + at, len - at, "%slayers %d..%d with micro-batches %d..%d", at ? "; " : "", lo, hi, mlo, mhi);
    }
}

/* The stall point of stall k on its rank: the index of the first forward op of (layer, micro_batch)
 * in the rank's stage list. */
static int stall_point(const program *p, int k, int rank, int *at, moe_error *err) {
    const stall_fault *sf = &p->scn->faults.stalls[k];
    int d, st, e, t, holds_layer = 0;
    program_coords(p, rank, &d, &st, &e, &t);
    for (int i = 0; i < p->stage_n_ops[st]; i++) {
        const program_op *o = &p->stage_ops[st][i];
        if (o->phase != PHASE_F || o->layer != sf->layer) continue;
        holds_layer = 1;
        if (o->mb == sf->micro_batch) {
            *at = i;
            return 0;
        }
    }
    char path[64], v[48], runs[256];
    snprintf(path, sizeof path, "faults.stalls[%d].%s", k, holds_layer ? "micro_batch" : "layer");
    snprintf(v, sizeof v, "layer %d, micro_batch %d", sf->layer, sf->micro_batch);
    forward_runs(p, st, runs, sizeof runs);
    return moe_error_input(err, p->scn->file, path, v,
                           "a (layer, micro_batch) whose forward the rank on GPU %d (rank %d, pipeline stage %d) "
                           "runs: %s", sf->gpu, rank, st, runs);
}

/* The tag of the GPU speed stream among the scenario seed's streams (rng_seed.h). */
#define SPEED_SEED_TAG 0x53504545445F4356ull   /* "SPEED_CV" */

void gpu_speed_factors(uint64_t seed, double cv, int n, double *speed) {
    if (!(cv > 0)) {
        for (int g = 0; g < n; g++) speed[g] = 1.0;
        return;
    }
    double sigma = sqrt(log1p(cv * cv));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, moe_seed_fold32(moe_seed_mix(seed ^ SPEED_SEED_TAG)));
    for (int g = 0; g < n; g++) speed[g] = exp(gsl_ran_gaussian(rng, sigma));
    gsl_rng_free(rng);
}

static void step_faults_free(step_faults *f) {
    free(f->compute_factor);
    free(f->speed_factor);
    free(f->nic_factor);
    free(f->nvlink_factor);
    free(f->stop_at);
    free(f->replica_faulty);
    memset(f, 0, sizeof *f);
}

/* Does rank r's node sit under a leaf with a faulty uplink (faults.links kind "uplink", any rail)?
 * Every flow over uplink (rail, leaf) starts or ends on a node under that leaf (fabric_geometry.h:
 * the rail part of a route leaves from the source node's leaf, PXN relays inside the source node),
 * so only replicas holding such a node can see the fault: the replica shortcut simulates them. */
static int under_faulty_uplink(const program *p, int r) {
    const faults_cfg *fc = &p->scn->faults;
    const cluster_cfg *c = &p->scn->cluster;
    int leaf = scn_leaf_of_node(c, program_gpu_of_rank(p, r) / c->gpus_per_node);
    for (int i = 0; i < fc->n_links; i++)
        if (fc->links[i].kind == LINK_UPLINK && fc->links[i].leaf == leaf) return 1;
    return 0;
}

static int step_faults_resolve(const program *p, step_faults *f, moe_error *err) {
    const faults_cfg *fc = &p->scn->faults;
    const int R = p->n_ranks, per_replica = rank_replica_ranks(&p->ranks);
    memset(f, 0, sizeof *f);
    f->n_ranks = R;
    f->n_replicas = p->dp;
    f->compute_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->speed_factor = moe_xmalloc((size_t)R * sizeof(double));
    double *speed = moe_xmalloc((size_t)R * sizeof(double));
    gpu_speed_factors(p->scn->seed, p->scn->cluster.gpu.speed_cv, R, speed);
    f->speed_min = INFINITY; f->speed_max = 0;
    f->nic_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->nvlink_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->stop_at = moe_xmalloc((size_t)R * sizeof(int));
    f->replica_faulty = moe_xcalloc((size_t)p->dp, 1);
    int *rank_of_gpu = moe_xmalloc((size_t)R * sizeof(int));
    for (int r = 0; r < R; r++) {
        int gpu = program_gpu_of_rank(p, r);
        rank_of_gpu[gpu] = r;
        double slow = 1.0;
        for (int i = 0; i < fc->n_slow_gpus; i++)
            if (fc->slow_gpus[i].gpu == gpu) slow *= fc->slow_gpus[i].factor;
        f->compute_factor[r] = slow;
        f->speed_factor[r] = speed[gpu];
        if (speed[gpu] < f->speed_min) f->speed_min = speed[gpu];
        if (speed[gpu] > f->speed_max) f->speed_max = speed[gpu];
        f->nic_factor[r] = faults_link_factor(&p->scn->cluster, fc, gpu, LINK_NIC);
        f->nvlink_factor[r] = faults_link_factor(&p->scn->cluster, fc, gpu, LINK_NVLINK);
        f->stop_at[r] = STEP_NO_STALL;
    }
    int rc = 0;
    for (int k = 0; k < fc->n_stalls && rc == 0; k++) {
        int gpu = fc->stalls[k].gpu, at = STEP_NO_STALL;
        if (gpu < 0 || gpu >= R) {
            char path[64], v[16];
            snprintf(path, sizeof path, "faults.stalls[%d].gpu", k);
            snprintf(v, sizeof v, "%d", gpu);
            rc = moe_error_input(err, p->scn->file, path, v, "a GPU id in 0..%d", R - 1);
        } else if ((rc = stall_point(p, k, rank_of_gpu[gpu], &at, err)) == 0 && at < f->stop_at[rank_of_gpu[gpu]])
            f->stop_at[rank_of_gpu[gpu]] = at;
    }
    free(rank_of_gpu);
    free(speed);
    if (rc) {
        step_faults_free(f);
        return rc;
    }
    for (int r = 0; r < R; r++) {
        int slow = f->compute_factor[r] != 1.0, link = f->nic_factor[r] != 1.0 || f->nvlink_factor[r] != 1.0;
        if (under_faulty_uplink(p, r)) f->replica_faulty[r / per_replica] = 1;
        int stalled = f->stop_at[r] != STEP_NO_STALL;
        f->n_slow_ranks += slow;
        f->n_link_ranks += link;
        f->n_stalled_ranks += stalled;
        if (slow || link || stalled) f->replica_faulty[r / per_replica] = 1;   /* rank_numbering.h: replica-major */
    }
    /* A replica whose GPUs sit in more than one pod (cluster.pod_nodes) sends some of its traffic
     * through the core, which a replica inside one pod does not: it stands for no other, nor another
     * for it, so the replica shortcut simulates it like a faulty one. */
    const cluster_cfg *c = &p->scn->cluster;
    if (scn_pods(c) > 1)
        for (int d = 0; d < p->dp; d++) {
            int pod0 = scn_pod_of_node(c, program_gpu_of_rank(p, d * per_replica) / c->gpus_per_node);
            for (int k = 1; k < per_replica && !f->replica_faulty[d]; k++)
                if (scn_pod_of_node(c, program_gpu_of_rank(p, d * per_replica + k) / c->gpus_per_node) != pod0)
                    f->replica_faulty[d] = 1;
        }
    return 0;
}


/* ---- build -------------------------------------------------------------------------------------------------- */
int program_build(const scenario *s, program **out, moe_error *err) { return program_build_law(s, NULL, out, err); }

/* What a scenario must satisfy for its step program to exist (program_check); fills the schedule. */
static int build_checks(const scenario *s, schedule_spec *out_sp, moe_error *err) {
    const layout_cfg *L = &s->layout;
    int gpus = scn_gpus(s), etp = scn_etp(s), cp = scn_cp(s);
    if (etp * L->pp * L->ep * L->dp != gpus || (gpus / L->pp) % (L->tp * cp) != 0) {
        char v[96];
        snprintf(v, sizeof v, "etp*pp*ep*dp = %d*%d*%d*%d = %d, tp*cp = %d", etp, L->pp, L->ep, L->dp,
                 etp * L->pp * L->ep * L->dp, L->tp * cp);
        return moe_error_input(err, s->file, "layout", v,
                               "the product to equal the GPU count %d and tp*cp to divide a stage's GPUs", gpus);
    }
    /* The rank numbering's inner coordinate (rank_numbering.h): a dense model's covers TP x CP; an MoE
     * model's CP ring neighbours must lie in one replica too: tp x cp divides etp x ep. */
    if (!(s->model.experts == 0 && L->ep == 1) && cp > 1 && (etp * L->ep) % (L->tp * cp) != 0) {
        char v[64];
        snprintf(v, sizeof v, "%d (tp*cp = %d, etp*ep = %d)", cp, L->tp * cp, etp * L->ep);
        return moe_error_input(err, s->file, "layout.cp", v,
                               "tp*cp dividing etp*ep at the step level: each CP ring inside one expert replica");
    }
    if (s->model.experts > 0 && s->model.experts % L->ep != 0) {
        char v[32]; snprintf(v, sizeof v, "%d", L->ep);
        return moe_error_input(err, s->file, "layout.ep", v, "a divisor of model.experts (%d)", s->model.experts);
    }
    schedule_kind run = scn_schedule_run(L);
    schedule_spec sp = {.kind = run, .pp = L->pp, .vpp = run == SCHED_INTERLEAVED ? L->vpp : 1,
                        .m = scn_micro_batches(s)};
    sp.n_chunks = run == SCHED_INTERLEAVED ? sp.vpp : run == SCHED_DUALPIPE ? 2 : 1;
    sp.a2a_overlap = L->moe_a2a_overlap && run != SCHED_DUALPIPE;
    if (schedule_check(&sp, s->file, err)) return err->code;
    int n_ms = schedule_n_model_stages(&sp);
    if (s->model.layers < n_ms && !L->pipeline_layout[0]) {
        char v[32]; snprintf(v, sizeof v, "%d", s->model.layers);
        return moe_error_input(err, s->file, "model.layers", v, "at least one layer per model stage (%d)", n_ms);
    }
    if (routing_check_tokens(s, (long long)L->micro_batch * s->model.seq_len / cp, err)) return err->code;
    *out_sp = sp;
    return 0;
}

int program_check(const scenario *s, moe_error *err) {
    schedule_spec sp;
    if (build_checks(s, &sp, err)) return err->code;
    if (s->model.experts <= 0 || model_moe_layers(&s->model) <= 0) return 0;
    /* the routing context build_routing creates (EP group 0: replica 0, stage 0, tp index 0), for its
     * checks of the group's placement (node_limit against the experts per node, ...) */
    rank_grid g = rank_grid_of(s);
    int *gpus = moe_xmalloc((size_t)g.ep * sizeof(int));
    for (int e = 0; e < g.ep; e++) gpus[e] = rank_gpu(&g, rank_of(&g, (rank_coords){0, 0, e, 0}));
    routing_opts ro = {.tokens_per_rank = (int)scn_routed_tokens(s)};
    routing_ctx *ctx = routing_ctx_create_opts(s, gpus, &ro, err);
    free(gpus);
    if (!ctx) return err->code ? err->code : EXIT_BADINPUT;
    routing_ctx_free(ctx);
    return 0;
}

int program_build_law(const scenario *s, const routing_law *law, program **out, moe_error *err) {
    *out = NULL;
    const layout_cfg *L = &s->layout;
    int gpus = scn_gpus(s), etp = scn_etp(s), cp = scn_cp(s);
    schedule_spec sp;
    if (build_checks(s, &sp, err)) return err->code;
    int n_ms = schedule_n_model_stages(&sp);
    pl_layout pl;
    if (pipeline_layout_build(s, &pl, err) || pl.n != n_ms) {
        pipeline_layout_free(&pl);
        return err->code ? err->code : moe_error_set(err, EXIT_RUNTIME, "program: %d model stages", n_ms);
    }

    program *p = moe_xcalloc(1, sizeof *p);
    p->scn = s;
    p->ranks = rank_grid_of(s);
    p->pp = L->pp; p->ep = L->ep; p->dp = p->ranks.dp; p->tp = p->ranks.tp;
    p->attn_tp = L->tp; p->cp = cp;
    p->vpp = sp.vpp; p->n_chunks = sp.n_chunks;
    p->micro_batches = sp.m;
    p->n_ranks = gpus;
    long long tokens_per_mb = (long long)L->micro_batch * s->model.seq_len / cp;
    p->tokens_per_mb = (int)tokens_per_mb;
    p->routed_tokens = (int)(tokens_per_mb * etp / L->tp);
    /* tags: the pipeline's (micro-batch, sending model stage, direction), then the CP ring's
     * (micro-batch, block, ring step, direction) */
    int blocks = s->model.layers + s->model.mtp_layers;
    p->n_tags = sp.m * n_ms * 2 + (cp > 1 ? sp.m * blocks * (cp - 1) * 2 : 0);
    p->n_model_stages = n_ms;
    p->stage_layer_begin = moe_xmalloc((size_t)n_ms * sizeof(int));
    p->stage_layer_end = moe_xmalloc((size_t)n_ms * sizeof(int));
    p->stage_mtp_begin = moe_xmalloc((size_t)n_ms * sizeof(int));
    p->stage_mtp_end = moe_xmalloc((size_t)n_ms * sizeof(int));
    for (int ms = 0; ms < n_ms; ms++) {   /* the pipeline layout (sim/scenario/pipeline_layout.h) */
        p->stage_layer_begin[ms] = pl.st[ms].layer_begin;
        p->stage_layer_end[ms] = pl.st[ms].layer_end;
        p->stage_mtp_begin[ms] = pl.st[ms].mtp_begin;
        p->stage_mtp_end[ms] = pl.st[ms].mtp_end;
    }
    pipeline_layout_free(&pl);
    build_groups(p);
    int rrc = build_routing(p, law, err);
    if (rrc) { program_free(p); return rrc; }

    layer_info li;
    model_count(&s->model, &li.mc);
    li.T = p->tokens_per_mb;
    li.act_bytes = 2.0 * s->model.hidden;
    li.wbytes = dtype_bytes(s->precision.compute);
    li.model = &s->model;
    li.tp = p->attn_tp;
    memory_block_params(&li.mc, &s->model, L, 0, &li.block[0]);
    memory_block_params(&li.mc, &s->model, L, 1, &li.block[1]);
    memory_mtp_module_params(&li.mc, &s->model, L, &li.mtp_module);
    memory_state_bytes(&s->precision, &li.sb);
    li.dense_dp = p->ep * p->dp * p->tp / p->attn_tp;   /* attention DP x CP: the stage's GPUs of one TP index */
    li.expert_dp = p->dp;
    p->stage_ops = moe_xcalloc((size_t)p->pp, sizeof *p->stage_ops);
    p->stage_n_ops = moe_xcalloc((size_t)p->pp, sizeof(int));
    for (int st = 0; st < p->pp; st++) gen_stage(p, &li, &sp, st);

    count_model_flops(p);
    int frc = step_faults_resolve(p, &p->faults, err);
    if (frc) { program_free(p); return frc; }
    *out = p;
    return 0;
}

static void free_routing(program *p) {
    for (int i = 0; i < p->n_patterns; i++) { free(p->patterns[i].bytes); free(p->patterns[i].node_bytes); free(p->patterns[i].sent_bytes); }
    free(p->patterns); free(p->recv_tokens); free(p->expert_tokens); free(p->slot_tokens);
    free(p->draw_of); free(p->step_expert_tokens); free(p->step_expert_routed);
}

int program_redraw(program *p, const routing_law *law, moe_error *err) {
    int n_old = p->n_sample_groups * p->n_moe_layers * p->micro_batches, old_draws = p->n_draws;
    int *old_of = moe_xmalloc((size_t)(n_old > 0 ? n_old : 1) * sizeof(int));
    if (n_old > 0) memcpy(old_of, p->draw_of, (size_t)n_old * sizeof(int));
    free_routing(p);
    p->patterns = NULL; p->recv_tokens = p->expert_tokens = p->slot_tokens = NULL; p->draw_of = NULL;
    p->step_expert_tokens = p->step_expert_routed = NULL;
    p->n_patterns = 0;
    p->routed_pairs = p->dropped_pairs = 0;
    int rc = build_routing(p, law, err);
    /* the ops name their patterns by sample index: a law of the same kind maps every (layer,
     * micro-batch) to the same pool slot (routing_pool_get), so the indexes still hold */
    if (rc == 0 && (p->n_draws != old_draws ||
                    (n_old > 0 && memcmp(old_of, p->draw_of, (size_t)n_old * sizeof(int)) != 0)))
        rc = moe_error_set(err, EXIT_RUNTIME, "program: a redrawn routing maps its samples differently (%d draws, was %d)",
                           p->n_draws, old_draws);
    free(old_of);
    if (rc == 0) count_model_flops(p);
    return rc;
}

void program_free(program *p) {
    if (!p) return;
    for (int s = 0; s < p->pp; s++) free(p->stage_ops ? p->stage_ops[s] : NULL);
    free(p->stage_ops); free(p->stage_n_ops);
    free(p->stage_layer_begin); free(p->stage_layer_end);
    free(p->stage_mtp_begin); free(p->stage_mtp_end);
    free(p->groups); free(p->group_members); free(p->rank_group);
    free_routing(p);
    free(p->expert_copies);
    step_faults_free(&p->faults);
    free(p);
}
