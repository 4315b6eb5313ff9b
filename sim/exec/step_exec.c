/* step_exec.c — the fast op-level executor (see step_exec.h for semantics and accounting). */
#include "sim/exec/step_exec.h"
#include "sim/base/alloc.h"
#include "sim/exec/pfc_spread.h"
#include "sim/scenario/link_loss.h"

#include "sim/plan/plan_costs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- pricing ----------------------------------------------------------------------------------- */
void step_pricing_init(step_pricing *pr, const program *p, const costmodel *cm) {
    model_counts mc;
    model_count(&p->scn->model, &mc);
    pr->cm = cm;
    compute_price_table(p->scn, &mc, cm, p->tokens_per_mb, &pr->table);
    plan_costs c;
    plan_costs_default(&c);
    pr->slowdown = overlap_compute_slowdown(p->scn, &c);
    pr->expert_n = p->n_draws > 0 && p->ep > 0 ? p->n_draws * p->ep : 0;
    pr->expert_s = pr->expert_n ? moe_xmalloc((size_t)pr->expert_n * sizeof(double)) : NULL;
    for (int i = 0; i < pr->expert_n; i++) pr->expert_s[i] = -1;
}

void step_pricing_free(step_pricing *pr) {
    free(pr->expert_s);
    pr->expert_s = NULL;
    pr->expert_n = 0;
}

step_price_fn step_pricing_resolve(const step_exec_opts *o, const program *p, step_pricing *own, void **ctx) {
    if (o->price) { *ctx = o->price_ctx; return o->price; }
    step_pricing_init(own, p, o->price_ctx);
    *ctx = own;
    return step_price_costmodel;
}

static layer_kind layer_kind_of(const program *p, const program_op *o) {
    return o->layer == OP_NO_LAYER ? LAYER_DENSE : model_layer_kind(&p->scn->model, o->layer);
}

double step_price_costmodel(void *ctx, const program *p, int rank, const program_op *o) {
    step_pricing *pr = ctx;
    const scenario *s = p->scn;
    kernel_kind k = (kernel_kind)o->kernel;
    switch (k) {
    case K_EXPERT_FWD: case K_EXPERT_BWD_INPUT: case K_EXPERT_BWD_WEIGHT: {
        /* the rank's local experts with the token counts of this routing draw: a grouped GEMM per
         * matrix; backward input and weight gradients are each priced like the forward GEMMs */
        int E = s->model.experts, per = E / p->ep, d, st, e, t, draw = p->patterns[o->pattern].draw;
        program_coords(p, rank, &d, &st, &e, &t);
        double *memo = pr->expert_s && draw * p->ep + e < pr->expert_n ? &pr->expert_s[draw * p->ep + e] : NULL;
        if (memo && *memo >= 0) return pr->slowdown * *memo;
        const double *tok = p->expert_tokens + (size_t)draw * E + (size_t)e * per;
        if (p->slots_per_rank) {   /* redundant experts: the rank's own experts' shares and its replicas */
            tok = p->slot_tokens + ((size_t)draw * p->ep + (size_t)e) * p->slots_per_rank;
            per = p->slots_per_rank;
        }
        double v = costmodel_expert_ffn_fwd_s(pr->cm, tok, per, s->model.hidden, (double)s->model.expert_hidden / p->tp,
                                              s->precision.compute);
        if (memo) *memo = v;
        return pr->slowdown * v;
    }
    case K_NONE: case K_OPTIMIZER: case K_NKINDS:
        return costmodel_memory_bound_s(pr->cm, o->mem_bytes);
    default: {
        const kernel_price_table *tab = &pr->table;
        layer_kind lk = layer_kind_of(p, o);
        double t = tab->s[lk][k];
        if (o->layer != OP_NO_LAYER && k == compute_recompute_kernel(lk)) t += tab->recompute_s[lk];
        /* a micro-batch of another size: per-token work (the table's kernels are all linear in T
         * but for GEMM efficiency, which the table's T fixes) */
        if (o->tokens > 0 && tab->T > 0 && o->tokens != tab->T) t *= o->tokens / tab->T;
        /* micro-batch compute shares the GPU with the overlapped all-to-all kernels (DualPipe) */
        return pr->slowdown * t;
    }
    }
}

/* ---- state --------------------------------------------------------------------------------------- */
typedef struct {
    int rank;
    int n_ops;
    int stage;
    const program_op *mat;         /* resolved list (materialised mode), else NULL: the stage list */
    const program_op *list;        /* mat or the stage list: kind, stream, deps and tag of every op,
                                      which resolution leaves as they are */
    program_op head[STREAM_N];     /* per stream: its next op, resolved once (head_at: its index) */
    int head_at[STREAM_N];
    op_time *t;                    /* per op: the timeline (end < 0: not done), op i at t[i * stride]
                                      (its gang's lanes side by side); a collective's start is this
                                      rank's arrival, a RECV's the start of its matching SEND */
    size_t stride;
    int gang, lane;                /* its gang (exec_ctx.gangs) and its place there */
    const int *recv_slot;          /* per tag: its slot in recv_at / recv_from when a RECV of the
                                      rank's stage list has it, else -1 (exec_ctx.recv_slot) */
    double *recv_at;               /* per slot: arrival time of the matching SEND; < 0: not yet */
    double *recv_from;             /* per slot: start of the matching SEND */
    int stop_at;                   /* stalled rank: first op index it never issues; else STEP_NO_STALL */
    int arrived[STREAM_N], arr_seq[STREAM_N];   /* per stream (comm; ZeRO's data-parallel one):
                                                   arrived at its current collective */
    double arr_t[STREAM_N];
    double a2a_s;                  /* time inside all-to-alls from the last arrival to the end (the
                                      transfer itself: what a slow link lengthens) */
    double pfc_pause_s;            /* the part of a2a_s that PFC pauses added (cluster.pfc) */
} rank_state;

/* A gang: the simulated ranks of one replica and stage, which run one op list, advanced op by op
 * together (step_exec.h "Gangs"). An op starts on each lane when that lane's deps and stream allow,
 * whatever order the lanes are run in (ties in what the executor records are broken by rank and
 * group), so a gang issues op i on every lane at once when every lane's deps are done: the op list,
 * the streams and the queue are walked once per gang instead of once per rank, and what is per rank
 * (deps' ends, durations, arrivals) sits in arrays over the lanes. A stalled rank or a resolved op
 * list runs alone (a gang of one lane), as does every rank of opts.per_rank. */
typedef struct {
    int stage, n;                  /* n lanes */
    int *lane;                     /* [n] indices into exec_ctx.rs, ascending rank */
    int stop_at;                   /* its lanes': STEP_NO_STALL unless a stalled rank's gang of one */
    int cur[STREAM_N];             /* per stream: its next op's place in the stream list */
    /* per stream: how far the deps of its head op (index dep_at) are known to be done on every lane
     * (the first dep_k), the latest of them ending at dep_t per lane: a gang woken again while its
     * head op waits (for a member of a collective, a RECV) does not read those deps again */
    int dep_at[STREAM_N], dep_k[STREAM_N];
    double *dep_t;                 /* [STREAM_N][n] */
    double *free_t;                /* [STREAM_N][n] when each lane's stream is free */
    double *slow;                  /* [n] slow-GPU factor */
    double *end_s;                 /* [n] end of the lane's last op */
    step_split_acc *split;         /* [n] the step accounting, fed as the COMPUTE ops end with their
                                      priced durations as busy times (step_accounting.h) */
    op_time *t;                    /* the lanes' timelines: op i of lane k at t[i * n + k] */
    double *resume;                /* with a host model: [n_sync][n] when each lane's host resumed
                                      after the stage's k-th sync op (step_host.h) */
    unsigned char *resume_known;   /* [n_sync]: resume[k][*] is known */
    int in_queue;
} gang;

/* Op i's span on rank r. */
static inline op_time *time_of(const rank_state *r, int i) { return &r->t[(size_t)i * r->stride]; }

typedef struct {
    int n_arrived, expected, seq_done, last_rank;
    double max_arr, min_arr, start, end;
    double pause;                  /* of its current all-to-all: what PFC adds to it (in end - start) */
    int instance;
} group_state;

/* Ring collectives are priced per (group, kind, buffer size): ZeRO-2/3 move a few distinct unit sizes
 * (dense block, MoE block, MTP module, a stage's embedding and head) over each group. */
#define COLL_MEMO_SIZES 8
typedef struct { double bytes, t; } coll_memo_entry;   /* t < 0: empty */

typedef struct {
    const program *p;
    const step_exec_opts *o;
    step_price_fn price;           /* step_pricing_resolve: the opts' pricing or the default's */
    void *price_ctx;
    step_pricing own_pricing;
    rank_state *rs;
    gang *gangs;
    int n_gangs;
    int *sim_index;                /* rank -> index into rs, or -1 */
    int n_sim;
    group_state *gs;
    int **stream_lists;            /* per stage x stream: op indices */
    int *stream_len;
    int *group_slot;               /* per group: its index among the groups with simulated members
                                      (the only ones asked about), else -1 */
    int n_live;                    /* how many groups have simulated members */
    double *a2a_memo;              /* n_patterns x n_live (EP groups only used) */
    /* cluster.pfc (step_exec.h "Lossless fabric"): the pause of an all-to-all per (pattern kind, the
     * sample streams' draws, group with simulated members), < 0 until worked out; NULL: no PFC */
    double *pfc_memo;
    int pfc_combos;                /* n_draws ^ n_sample_groups */
    int *ep_rep;                   /* per group: the group of the rank its first member is mirrored onto */
    coll_memo_entry *coll_memo;    /* n_live x 3 x COLL_MEMO_SIZES */
    double **stage_price;          /* per stage x op: the price of an op that is not rank-relative
                                      (step_price_fn), < 0 until priced */
    int *queue, q_head, q_tail, q_cap;
    int *a2a_last;
    long executed;
    int n_tags;
    double *slow;                  /* per rank: the compute factor a simulated rank runs with (its
                                      faults, times the slowest speed factor among the ranks it
                                      stands for: step_exec.h "Speed spread") */
    int *recv_slot;                /* per stage x tag: the slot of that tag among the stage list's RECVs,
                                      -1 when none receives it (a rank keeps only its own RECVs' times:
                                      all the step's tags per rank were 0.5 GB at 4096 ranks) */
    step_exec_result *res;
    stage_host *hosts;             /* per stage (step_host.h), NULL without a host model */
    /* p2p memo: last (src, dst, bytes) */
    double p2p_bytes[4]; int p2p_src[4], p2p_dst[4]; double p2p_t[4];
} exec_ctx;

/* Queue the gang of simulated rank si. */
static void wake(exec_ctx *x, int si) {
    int gi = x->rs[si].gang;
    gang *g = &x->gangs[gi];
    if (g->in_queue) return;
    g->in_queue = 1;
    x->queue[x->q_tail] = gi;
    x->q_tail = (x->q_tail + 1) % x->q_cap;
}

static void get_op(const exec_ctx *x, const rank_state *r, int i, program_op *out) {
    if (r->mat) *out = r->mat[i];
    else program_rank_op(x->p, r->rank, i, out);
}

/* Op i of stream st, the next one of that stream: the list's entry when it needs no resolution, else
 * resolved on its first visit only (a blocked op is visited again each time its gang wakes). */
static const program_op *head_op(const exec_ctx *x, rank_state *r, int st, int i) {
    if (r->mat || !program_op_rank_relative(&r->list[i])) return &r->list[i];
    if (r->head_at[st] != i) {
        program_rank_op(x->p, r->rank, i, &r->head[st]);
        r->head_at[st] = i;
    }
    return &r->head[st];
}

/* The groups that run a collective of an n-rank group at the same time (comm.h collective_s): the
 * groups of its kind partition its pipeline stage's ranks, and a stage reduces its gradients (and
 * gathers its parameters) in its own backward (forward), apart from the other stages'. */
int step_coll_concurrent(const program *p, int n) {
    int per_stage = p->n_ranks / (p->pp > 0 ? p->pp : 1);
    return n > 0 && per_stage / n > 1 ? per_stage / n : 1;
}

/* Group g's GPUs, in member order, into a new array (*n of them). */
static int *group_gpus(const program *p, int g, int *n) {
    const program_group *G = &p->groups[g];
    int *gpus = moe_xmalloc((size_t)(G->n + 1) * sizeof(int));
    for (int i = 0; i < G->n; i++) gpus[i] = program_gpu_of_rank(p, G->ranks[i]);
    *n = G->n;
    return gpus;
}

void step_a2a_pattern(const program *p, int pattern, int g, a2a_pattern *pat, step_a2a_buf *buf) {
    int n = p->groups[g].n;
    buf->gpus = moe_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) buf->gpus[i] = program_gpu_of_rank(p, p->groups[g].ranks[i]);
    /* DeepEP's nodes: NVLink domains (a node, or several with cluster.nvlink_domain_gpus) */
    int gpn = scn_domain_gpus(&p->scn->cluster), nn = 0;
    buf->nodes = moe_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
        int node = buf->gpus[i] / gpn;
        if (nn == 0 || buf->nodes[nn - 1] != node) buf->nodes[nn++] = node;   /* ascending under both placements */
    }
    const a2a_matrix *am = &p->patterns[pattern];
    /* combine kinds: price the mirror image (program.h "Routing"): transpose, node_bytes as is */
    buf->mirror = NULL;
    if (am->is_combine) {
        buf->mirror = moe_xmalloc((size_t)n * n * sizeof(double));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) buf->mirror[j * n + i] = am->bytes[i * n + j];
    }
    *pat = (a2a_pattern){.n = n, .gpus = buf->gpus, .bytes = buf->mirror ? buf->mirror : am->bytes,
                         .node_bytes = nn == p->a2a_n_nodes ? am->node_bytes : NULL,
                         .n_nodes = nn, .nodes = buf->nodes, .concurrent_groups = p->dp * p->tp,
                         .pairwise = p->scn->step.a2a == A2A_IMPL_NCCL};
}

void step_a2a_buf_free(step_a2a_buf *b) {
    free(b->gpus); free(b->nodes); free(b->mirror);
    memset(b, 0, sizeof *b);
}

/* The memos' layout, which the announcement's sets of what it listed share: all-to-alls by (routing
 * pattern, group with simulated members), collectives by (such a group, coll_kind), each with up to
 * COLL_MEMO_SIZES buffer sizes. */
static size_t a2a_memo_at(const exec_ctx *x, int pattern, int g) {
    return (size_t)pattern * (size_t)x->n_live + (size_t)x->group_slot[g];
}

/* In group g's row of a collective memo, kind ck: the entry for `bytes`, else the first free one
 * (t < 0), else NULL (all sizes taken). */
static coll_memo_entry *coll_memo_find(coll_memo_entry *memo, const exec_ctx *x, int g, int ck, double bytes) {
    coll_memo_entry *row = &memo[((size_t)x->group_slot[g] * 3 + (size_t)ck) * COLL_MEMO_SIZES];
    for (int slot = 0; slot < COLL_MEMO_SIZES; slot++)
        if (row[slot].t < 0 || row[slot].bytes == bytes) return &row[slot];
    return NULL;
}

static double a2a_time(exec_ctx *x, int pattern, int g) {
    double *m = &x->a2a_memo[a2a_memo_at(x, pattern, g)];
    if (*m >= 0) return *m;
    a2a_pattern pat;
    step_a2a_buf buf;
    step_a2a_pattern(x->p, pattern, g, &pat, &buf);
    *m = x->o->comm->a2a_s(x->o->comm->ctx, &pat);
    step_a2a_buf_free(&buf);
    return *m;
}

/* cluster.pfc: the pauses of the all-to-all of kind `kind` with the sample streams' draws `draw`
 * on every EP group of stage s (pfc_a2a_pauses over their flows together, each group with its own
 * sample), into the memo row `row` (by group slot). A simulated group stands for the groups mirrored
 * onto it: it takes the longest of their pauses (the fold of step_exec.h "Speed spread"). */
static void pfc_stage_pauses(exec_ctx *x, int s, int kind, const int *draw, double *row) {
    const program *p = x->p;
    int n = p->dp * p->tp, m = 0;
    a2a_pattern *pats = moe_xmalloc((size_t)n * sizeof *pats);
    step_a2a_buf *bufs = moe_xcalloc((size_t)n, sizeof *bufs);
    double *pause = moe_xmalloc((size_t)n * sizeof *pause);
    unsigned char *rev = moe_xmalloc((size_t)n);
    int *grp = moe_xmalloc((size_t)n * sizeof *grp);
    for (int d = 0; d < p->dp; d++)
        for (int t = 0; t < p->tp; t++) {
            int g = program_group_of(p, program_rank(p, d, s, 0, t), GROUP_EP);
            if (p->groups[g].n < 2) continue;
            int pattern = draw[program_sample_group(p, d)] * A2A_NKINDS + kind;
            step_a2a_pattern(p, pattern, g, &pats[m], &bufs[m]);
            pats[m].concurrent_groups = 1;   /* the other groups are in the set themselves */
            rev[m] = (unsigned char)p->patterns[pattern].is_combine;
            grp[m++] = g;
        }
    for (int i = 0; i < m; i++)
        if (x->group_slot[x->ep_rep[grp[i]]] >= 0) row[x->group_slot[x->ep_rep[grp[i]]]] = 0;
    if (pfc_a2a_pauses(&p->scn->cluster, &p->scn->faults, pats, rev, m, pause) == 0)
        for (int i = 0; i < m; i++) {
            int slot = x->group_slot[x->ep_rep[grp[i]]];
            if (slot >= 0 && pause[i] > row[slot]) row[slot] = pause[i];
        }
    for (int i = 0; i < m; i++) step_a2a_buf_free(&bufs[i]);
    free(pats); free(bufs); free(pause); free(rev); free(grp);
}

/* What PFC adds to all-to-all op `op` (resolved) of EP group g: 0 without cluster.pfc and when every
 * sample stream routes the op's (layer, micro-batch) with the same draw (identical groups: their
 * pauses never outlast their own incasts, pfc_spread.h "work conservation"). */
static double pfc_pause(exec_ctx *x, const program_op *op, int g) {
    const program *p = x->p;
    if (!x->pfc_memo || op->pattern < 0) return 0;
    int S = p->n_sample_groups, draw[PROGRAM_SAMPLE_STREAMS], combo = 0, differ = 0;
    for (int j = 0; j < S; j++) {
        draw[j] = program_replica_draw_of(p, j, op->layer, op->mb);
        differ |= draw[j] != draw[0];
        combo = combo * p->n_draws + draw[j];
    }
    if (!differ) return 0;
    int kind = op->pattern % A2A_NKINDS, st, d_, e_, t_;
    double *row = &x->pfc_memo[((size_t)kind * (size_t)x->pfc_combos + (size_t)combo) * (size_t)x->n_live];
    if (row[x->group_slot[g]] < 0) {
        program_coords(p, p->groups[g].ranks[0], &d_, &st, &e_, &t_);
        pfc_stage_pauses(x, st, kind, draw, row);
    }
    return row[x->group_slot[g]];
}

static coll_kind coll_kind_of(op_kind k) {
    return k == OP_REDUCE_SCATTER ? COLL_REDUCE_SCATTER : k == OP_ALL_GATHER ? COLL_ALL_GATHER : COLL_ALL_REDUCE;
}

static double coll_time(exec_ctx *x, op_kind k, int g, double bytes) {
    int ck = coll_kind_of(k), n;
    coll_memo_entry *m = coll_memo_find(x->coll_memo, x, g, ck, bytes);
    if (m && m->t >= 0) return m->t;
    int *gpus = group_gpus(x->p, g, &n);
    double t = x->o->comm->collective_s(x->o->comm->ctx, (coll_kind)ck, gpus, n, bytes, step_coll_concurrent(x->p, n));
    free(gpus);
    if (m) *m = (coll_memo_entry){bytes, t};   /* full: priced each time */
    return t;
}

static double p2p_time(exec_ctx *x, int src, int dst, double bytes) {
    int gs = program_gpu_of_rank(x->p, src), gd = program_gpu_of_rank(x->p, dst);
    for (int i = 0; i < 4; i++)
        if (x->p2p_src[i] == gs && x->p2p_dst[i] == gd && x->p2p_bytes[i] == bytes) return x->p2p_t[i];
    double t = x->o->comm->p2p_s(x->o->comm->ctx, gs, gd, bytes);
    memmove(x->p2p_src + 1, x->p2p_src, 3 * sizeof(int));
    memmove(x->p2p_dst + 1, x->p2p_dst, 3 * sizeof(int));
    memmove(x->p2p_bytes + 1, x->p2p_bytes, 3 * sizeof(double));
    memmove(x->p2p_t + 1, x->p2p_t, 3 * sizeof(double));
    x->p2p_src[0] = gs; x->p2p_dst[0] = gd; x->p2p_bytes[0] = bytes; x->p2p_t[0] = t;
    return t;
}

/* End time of dep op j of rank r, or -1 when not done. A RECV ends when its SEND has arrived. */
static double dep_end(rank_state *r, int j) {
    if (time_of(r, j)->end_s >= 0) return time_of(r, j)->end_s;
    const program_op *d = &r->list[j];
    if (d->kind != OP_RECV) return -1;
    int slot = r->recv_slot[d->tag];
    if (r->recv_at[slot] < 0) return -1;
    *time_of(r, j) = (op_time){r->recv_from[slot], r->recv_at[slot]};
    return time_of(r, j)->end_s;
}

/* Is an all-to-all of arrival spread `spread`, starting at `start_s` in `group`, worse than the worst
 * so far? The largest spread; on ties the earliest, then the lowest group: a total order, so that the
 * order in which the executor meets them (which ranks it simulates) does not decide. */
static int worse_a2a(const step_a2a_wait *w, double spread, double start_s, int group) {
    if (spread != w->spread_s) return spread > w->spread_s;
    if (start_s != w->start_s) return start_s < w->start_s;
    return group < w->group;
}

/* ---- the queries announced ahead (comm.h announce) -------------------------------------------------
 * Every all-to-all (routing pattern, EP group) and ring collective (kind, group, bytes) the simulated
 * ranks will ask for, each once, so that the model may simulate them beside the run instead of in
 * its way: the all-to-alls first (the first micro-batches of the stages need every routing draw's),
 * then the collectives (the gradient and parameter rings, mostly at the step's tail), each in op order
 * across the stages. */
typedef struct { int is_a2a, what, group; double bytes; } announced;   /* what: pattern or coll_kind */
typedef struct {
    const program *p;
    announced *v;
    size_t n;
    step_a2a_buf *bufs;   /* per query: what query() lent (the a2a arrays) */
    int **gpus;           /* per query: a collective's GPUs */
} announce_ctx;

static void announced_query(void *qctx, size_t k, comm_query *q) {
    announce_ctx *a = qctx;
    const announced *v = &a->v[k];
    memset(q, 0, sizeof *q);
    q->is_a2a = v->is_a2a;
    if (v->is_a2a) {
        step_a2a_pattern(a->p, v->what, v->group, &q->a2a, &a->bufs[k]);
        return;
    }
    int n;
    a->gpus[k] = group_gpus(a->p, v->group, &n);
    *q = (comm_query){.kind = (coll_kind)v->what, .gpus = a->gpus[k], .n = n, .bytes = v->bytes,
                      .concurrent = step_coll_concurrent(a->p, n)};
}

static void announced_release(void *qctx, size_t k, comm_query *q) {
    announce_ctx *a = qctx;
    (void)q;
    step_a2a_buf_free(&a->bufs[k]);
    free(a->gpus[k]);
    a->gpus[k] = NULL;
}

static void announce_queries(const exec_ctx *x) {
    const program *p = x->p;
    int G = p->n_groups, P = p->n_patterns > 0 ? p->n_patterns : 1;
    /* the groups of each kind that have simulated members, per stage */
    int *mark = moe_xcalloc((size_t)G + 1, sizeof(int));
    int **stage_groups = moe_xcalloc((size_t)p->pp * GROUP_NKINDS, sizeof(int *));
    int *n_stage_groups = moe_xcalloc((size_t)p->pp * GROUP_NKINDS, sizeof(int));
    for (int r = 0; r < p->n_ranks; r++) {
        if (x->sim_index[r] < 0) continue;
        int d, st, e, t;
        program_coords(p, r, &d, &st, &e, &t);
        for (int k = 0; k < GROUP_NKINDS; k++) {
            int g = program_group_of(p, r, (group_kind)k), at = st * GROUP_NKINDS + k;
            if (g < 0 || g >= G || mark[g] == st + 1) continue;
            mark[g] = st + 1;
            if (!stage_groups[at]) stage_groups[at] = moe_xmalloc((size_t)x->n_sim * sizeof(int));
            stage_groups[at][n_stage_groups[at]++] = g;
        }
    }
    size_t L = (size_t)x->n_live;
    unsigned char *a2a_seen = moe_xcalloc((size_t)P * L + 1, 1);
    coll_memo_entry *coll_seen = moe_xmalloc((L * 3 * COLL_MEMO_SIZES + 1) * sizeof *coll_seen);
    for (size_t i = 0; i < L * 3 * COLL_MEMO_SIZES; i++) coll_seen[i] = (coll_memo_entry){0, -1};
    announce_ctx a = {.p = p};
    size_t cap = 0;
    int max_ops = 0;
    for (int s = 0; s < p->pp; s++) if (p->stage_n_ops[s] > max_ops) max_ops = p->stage_n_ops[s];
    size_t n_a2a = 0;
    for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < max_ops; i++)
        for (int s = 0; s < p->pp; s++) {
            if (i >= p->stage_n_ops[s]) continue;
            const program_op *op = &p->stage_ops[s][i];
            int is_a2a = op->kind == OP_A2A_DISPATCH || op->kind == OP_A2A_COMBINE;
            int is_coll = op->kind == OP_REDUCE_SCATTER || op->kind == OP_ALL_GATHER || op->kind == OP_ALL_REDUCE;
            if (pass == 0 ? !is_a2a : !is_coll) continue;
            if (op->group < 0 || op->group >= GROUP_NKINDS) continue;   /* the list holds the group's kind */
            int at = s * GROUP_NKINDS + op->group;
            for (int m = 0; m < n_stage_groups[at]; m++) {
                int g = stage_groups[at][m], pattern = -1;
                if (is_a2a) {
                    int d, st_, e, t;   /* the group's replica routes with its own samples */
                    program_coords(p, p->groups[g].ranks[0], &d, &st_, &e, &t);
                    pattern = program_replica_pattern(p, d, op);
                    unsigned char *seen = &a2a_seen[a2a_memo_at(x, pattern, g)];
                    if (*seen) continue;
                    *seen = 1;
                } else {
                    coll_memo_entry *e = coll_memo_find(coll_seen, x, g, coll_kind_of(op->kind), op->bytes);
                    if (e && e->t >= 0) continue;
                    if (e) *e = (coll_memo_entry){op->bytes, 0};
                }
                if (a.n == cap) {
                    cap = cap ? 2 * cap : 256;
                    a.v = moe_xrealloc(a.v, cap, sizeof *a.v);
                }
                a.v[a.n++] = (announced){is_a2a, is_a2a ? pattern : (int)coll_kind_of(op->kind), g, op->bytes};
                n_a2a += (size_t)is_a2a;
            }
        }
    if (a.n > 0) {
        a.bufs = moe_xcalloc(a.n, sizeof *a.bufs);
        a.gpus = moe_xcalloc(a.n, sizeof *a.gpus);
        comm_announcement an = {.n = a.n, .n_first = n_a2a, .query = announced_query, .release = announced_release, .qctx = &a};
        x->o->comm->announce(x->o->comm->ctx, &an);
    }
    free(a.v); free(a.bufs); free(a.gpus);
    free(a2a_seen); free(coll_seen); free(mark);
    for (int i = 0; i < p->pp * GROUP_NKINDS; i++) free(stage_groups[i]);
    free(stage_groups); free(n_stage_groups);
}

/* A rank's wait inside a collective (arrival to end): the longest one, and the first to pass the
 * timeout (by the time it fires; on ties the lowest rank, then group, layer and micro-batch). */
static int fires_first(const step_timeout *t, double fired, int rank, const program_op *o) {
    if (!t->found || fired != t->fired_s) return !t->found || fired < t->fired_s;
    if (rank != t->rank) return rank < t->rank;
    if (o->group != t->group) return o->group < t->group;
    return o->layer != t->layer ? o->layer < t->layer : o->mb < t->mb;
}

/* Does rank r, blocked for good in op o, send to a stalled member of o's group across the fabric, on a
 * lossless fabric that discards a stalled receiver's queue (cluster.stall_discard_ms)? Its packets are
 * then dropped and its queue pair fails once its retries run out (link_qp_retry_exhausted_s). Without
 * the discard the stalled receiver's pause holds its senders' packets in their own NICs, unsent, and
 * nothing fails before the NCCL watchdog. */
static int sends_into_discard(const exec_ctx *x, const rank_state *r, const program_op *o) {
    const program *p = x->p;
    const cluster_cfg *c = &p->scn->cluster;
    if (!c->pfc || isinf(link_stall_discard_s(c)) || o->group < 0) return 0;
    const program_group *G = &p->groups[o->group];
    int dom = fabric_domain_of(c, program_gpu_of_rank(p, r->rank));
    for (int k = 0; k < G->n; k++)
        if (p->faults.stop_at[G->ranks[k]] != STEP_NO_STALL &&
            fabric_domain_of(c, program_gpu_of_rank(p, G->ranks[k])) != dom)
            return 1;
    return 0;
}

static void note_wait(exec_ctx *x, const rank_state *r, const program_op *o, double arrived_s, double wait_s) {
    step_exec_result *res = x->res;
    if (wait_s > res->max_collective_wait_s) res->max_collective_wait_s = wait_s;
    double T = x->p->scn->faults.collective_timeout_s, limit = T > 0 ? T : INFINITY;
    int by_qp = 0;
    if (isinf(wait_s) && sends_into_discard(x, r, o)) {
        double q = link_qp_retry_exhausted_s(&x->p->scn->cluster);
        if (q < limit) { limit = q; by_qp = 1; }
    }
    if (!isfinite(limit) || !(wait_s > limit)) return;
    double fired = arrived_s + limit;
    if (!fires_first(&res->timeout, fired, r->rank, o)) return;
    res->timeout = (step_timeout){.found = 1, .rank = r->rank, .op = (op_kind)o->kind,
                                  .group_kind = x->p->groups[o->group].kind, .group = o->group,
                                  .layer = o->layer, .mb = o->mb, .arrived_s = arrived_s, .waited_s = wait_s,
                                  .fired_s = fired, .detect_s = limit, .by_qp_retry = by_qp};
}

/* Dep op j of every lane of g done? Folds each lane's end into dep_t (a max: folding a lane again
 * when the gang is woken again changes nothing). */
static int deps_row_done(exec_ctx *x, const gang *g, const program_op *list, int j, double *dep_t) {
    const op_time *row = g->t + (size_t)j * g->n;
    if (list[j].kind == OP_RECV) {
        for (int k = 0; k < g->n; k++) {
            double te = dep_end(&x->rs[g->lane[k]], j);
            if (te < 0) return 0;
            if (te > dep_t[k]) dep_t[k] = te;
        }
        return 1;
    }
    for (int k = 0; k < g->n; k++) {
        double te = row[k].end_s;
        if (te < 0) return 0;
        if (te > dep_t[k]) dep_t[k] = te;
    }
    return 1;
}

/* Op i ended on lane k at t_end: its stream is free, the lane's end moves. */
static inline void lane_done(gang *g, double *free_t, int k, double t_end) {
    free_t[k] = t_end;
    if (t_end > g->end_s[k]) g->end_s[k] = t_end;
}

/* The host side (step_host.h): when lane k of g has issued op i, once the sync op before op i has
 * resumed (advance() waits for that before it runs op i). */
static inline double lane_host_end(const exec_ctx *x, const gang *g, int i, int k) {
    const stage_host *h = &x->hosts[g->stage];
    int sp = h->sync_prev[i];
    return step_host_end(h, i, sp >= 0 ? g->resume[(size_t)h->sync_ord[sp] * (size_t)g->n + (size_t)k] : 0.0);
}

static double dep_end(rank_state *r, int j);

/* Sync op sp of gang g: when each lane's host resumes after it (step_host.h), once that is known —
 * the op's end (an op sync), or the end of every op up to it (a device sync) — else 0. */
static int host_resolve_sync(exec_ctx *x, gang *g, int sp) {
    const stage_host *h = &x->hosts[g->stage];
    const program_op *list = x->rs[g->lane[0]].list;
    int n = g->n, s = g->stage, from = sp;
    if (h->sync_kind[sp] == HOST_SYNC_DEVICE) {
        /* every stream's next op lies past sp; every RECV since the last device sync has arrived */
        for (int st = 0; st < STREAM_N; st++) {
            int c = g->cur[st];
            if (c < x->stream_len[s * STREAM_N + st] && x->stream_lists[s * STREAM_N + st][c] <= sp) return 0;
        }
        from = h->dev_prev[sp] + 1;
    }
    for (int j = from; j <= sp; j++) {
        if (list[j].kind != OP_RECV && j != sp) continue;
        for (int k = 0; k < n; k++) if (dep_end(&x->rs[g->lane[k]], j) < 0) return 0;
    }
    /* the latest end of the ops in the window: ops before it ended before the previous device sync
     * resumed, which is no later than this sync's own host end */
    double *res = g->resume + (size_t)h->sync_ord[sp] * (size_t)n;
    for (int k = 0; k < n; k++) {
        double m = 0;
        for (int j = from; j <= sp; j++) {
            double e = dep_end(&x->rs[g->lane[k]], j);
            if (e > m) m = e;
        }
        res[k] = step_host_resume(h, lane_host_end(x, g, sp, k), m);
    }
    g->resume_known[h->sync_ord[sp]] = 1;
    return 1;
}

/* Has the host of every lane of g resumed after the sync before op i (and may issue op i)? */
static inline int host_may_issue(exec_ctx *x, gang *g, int i) {
    if (!x->hosts) return 1;
    const stage_host *h = &x->hosts[g->stage];
    int sp = h->sync_prev[i];
    return sp < 0 || g->resume_known[h->sync_ord[sp]] || host_resolve_sync(x, g, sp);
}

/* COMPUTE op i of stream st on every lane of g. An op that resolution leaves as it is costs the same
 * on every rank (step_price_fn): priced once per stage. */
static void run_compute(exec_ctx *x, gang *g, int st, int i, const program_op *op) {
    const program *p = x->p;
    int n = g->n, relative = program_op_rank_relative(op);
    double *dep_t = g->dep_t + (size_t)st * n, *free_t = g->free_t + (size_t)st * n;
    double shared = 0;
    if (!relative) {
        double *memo = &x->stage_price[g->stage][i];
        if (*memo < 0) *memo = x->price(x->price_ctx, p, x->rs[g->lane[0]].rank, op);
        shared = *memo;
    }
    const program_op *list = x->rs[g->lane[0]].list;
    op_time *row = g->t + (size_t)i * n;
    for (int k = 0; k < n; k++) {
        double price = shared;
        if (relative) {
            rank_state *r = &x->rs[g->lane[k]];
            price = x->price(x->price_ctx, p, r->rank, head_op(x, r, st, i));
        }
        double t0 = dep_t[k] > free_t[k] ? dep_t[k] : free_t[k], busy = price * g->slow[k], t1 = t0 + busy;
        double stretch = 0;
        if (x->hosts) {
            const stage_host *h = &x->hosts[g->stage];
            double he = lane_host_end(x, g, i, k);
            stretch = step_host_compute_span(t0, he, h->issue_s[i], h->kernels[i], busy, &t0, &t1);
        }
        row[k] = (op_time){t0, t1};
        lane_done(g, free_t, k, t1);
        step_split_add(&g->split[k], list, g->t + k, (size_t)n, i, busy, stretch);
    }
}

/* SEND op i of stream st on every lane: the arrival goes to the receiver's slot and wakes it. */
static void run_send(exec_ctx *x, gang *g, int st, int i) {
    int n = g->n;
    double *dep_t = g->dep_t + (size_t)st * n, *free_t = g->free_t + (size_t)st * n;
    op_time *row = g->t + (size_t)i * n;
    for (int k = 0; k < n; k++) {
        rank_state *r = &x->rs[g->lane[k]];
        const program_op *op = head_op(x, r, st, i);
        double t0 = dep_t[k] > free_t[k] ? dep_t[k] : free_t[k];
        if (x->hosts) { double he = lane_host_end(x, g, i, k); if (he > t0) t0 = he; }
        double t_end = t0 + p2p_time(x, r->rank, op->peer, op->bytes);
        int ri = x->sim_index[op->peer];
        if (ri >= 0) {
            rank_state *rr = &x->rs[ri];
            int slot = rr->recv_slot[op->tag];
            if (slot >= 0) { rr->recv_at[slot] = t_end; rr->recv_from[slot] = t0; }
            wake(x, ri);
        }
        row[k] = (op_time){t0, t_end};
        lane_done(g, free_t, k, t_end);
    }
}

/* Rank r arrives at its collective op (stream st) at t0: the last member's arrival starts it and
 * wakes the members' gangs (but gang gi's, which is running). */
static void arrive(exec_ctx *x, rank_state *r, int st, const program_op *op, double t0, int gi) {
    group_state *G = &x->gs[op->group];
    r->arrived[st] = 1; r->arr_seq[st] = G->seq_done; r->arr_t[st] = t0;
    /* the last to arrive; on a tie the lowest rank, so that the order in which ranks are run does
       not decide it */
    if (G->n_arrived == 0 || t0 > G->max_arr || (t0 == G->max_arr && r->rank < G->last_rank)) {
        G->last_rank = r->rank;
        G->max_arr = t0;
    }
    if (G->n_arrived == 0 || t0 < G->min_arr) G->min_arr = t0;
    if (++G->n_arrived < G->expected) return;
    int a2a = op->kind == OP_A2A_DISPATCH || op->kind == OP_A2A_COMBINE;
    double dur = a2a ? a2a_time(x, op->pattern, op->group) : coll_time(x, op->kind, op->group, op->bytes);
    G->pause = a2a ? pfc_pause(x, op, op->group) : 0;
    dur += G->pause;
    G->start = G->max_arr;
    G->end = G->max_arr + dur;
    G->seq_done++;
    G->n_arrived = 0;
    if (a2a) {
        x->a2a_last[G->last_rank]++;
        double spread = G->max_arr - G->min_arr;
        if (worse_a2a(&x->res->worst_a2a, spread, G->max_arr, op->group))
            x->res->worst_a2a = (step_a2a_wait){.spread_s = spread, .group = op->group, .layer = op->layer,
                                                .mb = op->mb, .last_rank = G->last_rank, .start_s = G->start};
    }
    const program_group *PG = &x->p->groups[op->group];
    for (int m = 0; m < PG->n; m++) {
        int mi = x->sim_index[PG->ranks[m]];
        if (mi >= 0 && x->rs[mi].gang != gi) wake(x, mi);
    }
}

/* Collective op i of stream st on every lane: each arrives (once); returns 0 while some lane's
 * collective waits for members, else every lane leaves it at its end. */
static int run_collective(exec_ctx *x, gang *g, int gi, int st, int i) {
    int n = g->n;
    double *dep_t = g->dep_t + (size_t)st * n, *free_t = g->free_t + (size_t)st * n;
    for (int k = 0; k < n; k++) {
        rank_state *r = &x->rs[g->lane[k]];
        if (r->arrived[st]) continue;
        double t0 = dep_t[k] > free_t[k] ? dep_t[k] : free_t[k];
        if (x->hosts) { double he = lane_host_end(x, g, i, k); if (he > t0) t0 = he; }
        arrive(x, r, st, head_op(x, r, st, i), t0, gi);
    }
    for (int k = 0; k < n; k++) {
        rank_state *r = &x->rs[g->lane[k]];
        if (x->gs[head_op(x, r, st, i)->group].seq_done <= r->arr_seq[st]) return 0;
    }
    op_time *row = g->t + (size_t)i * n;
    for (int k = 0; k < n; k++) {
        rank_state *r = &x->rs[g->lane[k]];
        const program_op *op = head_op(x, r, st, i);
        const group_state *G = &x->gs[op->group];
        note_wait(x, r, op, r->arr_t[st], G->end - r->arr_t[st]);
        if (op->kind == OP_A2A_DISPATCH || op->kind == OP_A2A_COMBINE) {
            r->a2a_s += G->end - G->start;
            r->pfc_pause_s += G->pause;
        }
        r->arrived[st] = 0;
        row[k] = (op_time){r->arr_t[st], G->end};
        lane_done(g, free_t, k, G->end);
    }
    return 1;
}

/* Run gang gi as far as it can go: stream by stream, op by op on every lane. */
static void advance(exec_ctx *x, int gi) {
    gang *g = &x->gangs[gi];
    const program_op *list = x->rs[g->lane[0]].list;   /* kind, stream and deps: the same on every lane */
    int s = g->stage, n = g->n, progress = 1;
    while (progress) {
        progress = 0;
        for (int st = 0; st < STREAM_N; st++) {
            const int *ops = x->stream_lists[s * STREAM_N + st];
            int len = x->stream_len[s * STREAM_N + st];
            double *dep_t = g->dep_t + (size_t)st * n;
            while (g->cur[st] < len) {
                int i = ops[g->cur[st]];
                if (i >= g->stop_at) break;          /* stalled: never issued */
                const program_op *op = &list[i];
                if (g->dep_at[st] != i) {
                    g->dep_at[st] = i; g->dep_k[st] = 0;
                    for (int k = 0; k < n; k++) dep_t[k] = 0;
                }
                int d = g->dep_k[st];
                while (d < op->n_deps && deps_row_done(x, g, list, op->deps[d], dep_t)) d++;   /* a dep's end never changes once known */
                g->dep_k[st] = d;
                if (d < op->n_deps || !host_may_issue(x, g, i)) break;
                if (op->kind == OP_COMPUTE) run_compute(x, g, st, i, op);
                else if (op->kind == OP_SEND) run_send(x, g, st, i);
                else if (!run_collective(x, g, gi, st, i)) break;   /* still waiting for members */
                g->cur[st]++;
                long before = x->executed;
                x->executed += n;
                if (x->o->progress && before / STEP_PROGRESS_OPS != x->executed / STEP_PROGRESS_OPS)
                    x->o->progress(x->o->progress_ctx, x->executed);
                progress = 1;
            }
        }
    }
}

/* ---- hang description --------------------------------------------------------------------------------- */
static int rank_unfinished(const exec_ctx *x, const rank_state *r) {
    int d, s, e, t;
    program_coords(x->p, r->rank, &d, &s, &e, &t);
    for (int st = 0; st < STREAM_N; st++)
        if (x->gangs[r->gang].cur[st] < x->stream_len[s * STREAM_N + st]) return 1;
    return 0;
}

/* The comm-stream op rank r is at (arrived or not), or -1. */
static int current_comm_op(const exec_ctx *x, const rank_state *r) {
    int d, s, e, t;
    program_coords(x->p, r->rank, &d, &s, &e, &t);
    int k = s * STREAM_N + STREAM_COMM;
    int at = x->gangs[r->gang].cur[STREAM_COMM];
    return at < x->stream_len[k] ? x->stream_lists[k][at] : -1;
}

/* Index of the op of r that ended last (highest index on ties), -1 when none ran. */
static int last_executed(const rank_state *r) {
    int best = -1;
    for (int i = 0; i < r->n_ops; i++)
        if (time_of(r, i)->end_s >= 0 && (best < 0 || time_of(r, i)->end_s >= time_of(r, best)->end_s)) best = i;
    return best;
}

/* Is (sim) rank r blocked inside the collective instance `ref` of its stage list (same op index:
 * members of one group run the same stage list, and twins in mirrored replicas too)? */
static int waits_in(const exec_ctx *x, const rank_state *r, int ref) {
    return r->arrived[STREAM_COMM] && current_comm_op(x, r) == ref;
}

static void describe_hang(exec_ctx *x, const int *rep_sim_of_rank, step_hang *h) {
    const program *p = x->p;
    memset(h, 0, sizeof *h);
    h->culprit = -1;
    for (int si = 0; si < x->n_sim && h->culprit < 0; si++) {
        rank_state *r = &x->rs[si];
        if (r->stop_at == STEP_NO_STALL || !rank_unfinished(x, r)) continue;
        h->culprit = r->rank;
    }
    if (h->culprit < 0) return;   /* a genuine deadlock of the program (a bug): no culprit */
    h->found = 1;
    rank_state *c = &x->rs[x->sim_index[h->culprit]];
    int ref = current_comm_op(x, c);
    h->op_index = ref;
    h->group = -1; h->layer = OP_NO_LAYER; h->mb = -1;
    int *in_group = moe_xcalloc((size_t)p->n_ranks, sizeof(int));
    if (ref >= 0) {
        program_op o;
        program_rank_op(p, c->rank, ref, &o);
        h->op = (op_kind)o.kind; h->group = o.group; h->group_kind = p->groups[o.group].kind;
        h->layer = o.layer; h->mb = o.mb; h->phase = o.phase;
        const program_group *G = &p->groups[o.group];
        h->waiting = moe_xmalloc((size_t)G->n * sizeof(int));
        h->missing = moe_xmalloc((size_t)G->n * sizeof(int));
        h->missing_last_op = moe_xmalloc((size_t)G->n * sizeof(int));
        for (int m = 0; m < G->n; m++) {
            int rk = G->ranks[m];
            rank_state *rr = &x->rs[x->sim_index[rep_sim_of_rank[rk]]];
            in_group[rk] = 1;
            if (waits_in(x, rr, ref)) h->waiting[h->n_waiting++] = rk;
            else {
                h->missing_last_op[h->n_missing] = last_executed(rr);
                h->missing[h->n_missing++] = rk;
            }
        }
    }
    for (int rk = 0; rk < p->n_ranks; rk++) {
        if (in_group[rk]) continue;
        if (rank_unfinished(x, &x->rs[x->sim_index[rep_sim_of_rank[rk]]])) h->blocked_elsewhere++;
    }
    free(in_group);
}

static int hang_message(const program *p, const step_hang *h, moe_error *err) {
    int gpu = program_gpu_of_rank(p, h->culprit), gpn = p->scn->cluster.gpus_per_node;
    if (h->group < 0)
        return moe_error_set(err, EXIT_RUNTIME, "step hang: rank %d (node %d GPU %d) stopped and no "
                             "collective is left in its program; %d other ranks are blocked",
                             h->culprit, gpu / gpn, gpu % gpn, h->blocked_elsewhere);
    return moe_error_set(err, EXIT_RUNTIME,
                         "step hang: rank %d (node %d GPU %d) never arrived at %s layer %d mb %d of %s group %d; "
                         "%d ranks wait there (%d other ranks blocked elsewhere)",
                         h->culprit, gpu / gpn, gpu % gpn, op_kind_label(h->op), h->layer, h->mb,
                         group_kind_name(h->group_kind), h->group, h->n_waiting, h->blocked_elsewhere);
}

static int timeout_message(const program *p, const step_timeout *t, moe_error *err) {
    int gpu = program_gpu_of_rank(p, t->rank), gpn = p->scn->cluster.gpus_per_node;
    char waited[48];
    if (isfinite(t->waited_s)) snprintf(waited, sizeof waited, "%.3f s", t->waited_s);
    else snprintf(waited, sizeof waited, "forever (the step hangs)");
    if (t->by_qp_retry)
        return moe_error_set(err, EXIT_RUNTIME,
                             "transport retry counter exceeded: rank %d (node %d GPU %d) sends to a stalled receiver "
                             "whose queue the fabric discards (cluster.stall_discard_ms = %g ms) in %s layer %d mb %d "
                             "of %s group %d; its queue pair failed after %d resends of %.3f s (cluster.nccl_ib_retry_cnt, "
                             "nccl_ib_timeout), before faults.collective_timeout_s = %g s; the step fails at t = %.3f s",
                             t->rank, gpu / gpn, gpu % gpn, p->scn->cluster.stall_discard_ms, op_kind_label(t->op),
                             t->layer, t->mb, group_kind_name(t->group_kind), t->group, p->scn->cluster.nccl_ib_retry_cnt,
                             link_qp_ack_timeout_s(&p->scn->cluster),
                             p->scn->faults.collective_timeout_s, t->fired_s);
    return moe_error_set(err, EXIT_RUNTIME,
                         "collective timeout: rank %d (node %d GPU %d) waited %s in %s layer %d mb %d of %s group %d, "
                         "past faults.collective_timeout_s = %g s; the step fails at t = %.3f s",
                         t->rank, gpu / gpn, gpu % gpn, waited, op_kind_label(t->op), t->layer, t->mb,
                         group_kind_name(t->group_kind), t->group, p->scn->faults.collective_timeout_s, t->fired_s);
}

/* May the TP twins of `p` be mirrored from their t = 0 rank (step_exec.h "TP twins")? */
static int tp_twins_apply(const program *p, const step_exec_opts *o) {
    if (!o->shortcut || p->tp < 2 || !o->comm || !o->comm->rail_symmetric) return 0;
    if (p->attn_tp != p->tp || p->cp != 1 || p->scn->faults.n_links > 0) return 0;
    int gpn = p->scn->cluster.gpus_per_node;
    for (int r = 0; r < p->n_ranks; r++) {
        int d, s, e, t;
        program_coords(p, r, &d, &s, &e, &t);
        int r0 = program_rank(p, d, s, e, 0), g = program_gpu_of_rank(p, r), g0 = program_gpu_of_rank(p, r0);
        if (g != g0 + t || g / gpn != g0 / gpn) return 0;
        if (p->faults.compute_factor[r] != p->faults.compute_factor[r0] || p->faults.stop_at[r] != p->faults.stop_at[r0])
            return 0;
    }
    return 1;
}

/* Every simulated rank's timeline in one block (n_ops + 1 entries each, laid out by make_gangs): 71 MB
 * for the seed's 1024 ranks, 284 MB for EP256's 4096. It is mapped on its own, kept out of forks
 * (MADV_DONTFORK: the helper process the SimGrid model forks as the run starts, comm_simgrid.h, never
 * reads it, and without this every page the executor writes would first be copied or unprotected
 * for it), and the process keeps one freed block for its next run (the next step, the next layout
 * of a search): faulting 71 MB of fresh pages in costs about 0.1 s on the 2-core VM, the price of
 * the whole warm step. */
static void *g_spare_block;   /* kept for the next run */
static size_t g_spare_bytes;

static op_time *timeline_block_alloc(const program *p, const exec_ctx *x, size_t *bytes) {
    size_t n = 1;
    for (int r = 0; r < p->n_ranks; r++)
        if (x->sim_index[r] >= 0) n += (size_t)program_n_ops(p, r) + 1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *bytes = (n * sizeof(op_time) + page - 1) / page * page;
    if (g_spare_block && g_spare_bytes >= *bytes) {
        void *b = g_spare_block;
        *bytes = g_spare_bytes;
        g_spare_block = NULL;
        return b;
    }
    void *b = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {   /* a heap block then (bytes 0 says so) */
        *bytes = 0;
        return moe_xmalloc(n * sizeof(op_time));
    }
    madvise(b, *bytes, MADV_DONTFORK);
    return b;
}

/* Keep the larger of `b` and the spare for the next run; unmap the other. */
static void timeline_block_free(op_time *b, size_t bytes) {
    if (!b) return;
    if (bytes == 0) { free(b); return; }
    if (g_spare_block && g_spare_bytes >= bytes) { munmap(b, bytes); return; }
    if (g_spare_block) munmap(g_spare_block, g_spare_bytes);
    g_spare_block = b;
    g_spare_bytes = bytes;
}

/* The gangs (see gang above): the simulated ranks of each replica and stage, or each rank alone
 * (opts.per_rank, resolved op lists, a stalled rank: its gang would stop with it). Their timelines
 * are laid out in `block`, a gang after the other, its lanes side by side (op-major): the ranks of
 * an EP group reach an op together (an all-to-all wakes them at once), so the ends their deps read
 * and the spans they write share cache lines; rank by rank, a backward op's deps on its forward ops
 * were most of the executor's cache misses. */
static void make_gangs(exec_ctx *x, const step_exec_opts *o, op_time *block) {
    const program *p = x->p;
    int alone = o->per_rank || o->materialized != NULL;
    for (int si = 0; si < x->n_sim && !alone; si++) alone = x->rs[si].stop_at != STEP_NO_STALL;
    size_t n_keys = (size_t)p->dp * p->pp;
    int *key_gang = moe_xmalloc((n_keys + 1) * sizeof(int));
    for (size_t k = 0; k < n_keys; k++) key_gang[k] = -1;
    x->gangs = moe_xcalloc((size_t)x->n_sim + 1, sizeof *x->gangs);
    x->n_gangs = 0;
    for (int si = 0; si < x->n_sim; si++) {   /* rs is in ascending rank order */
        rank_state *r = &x->rs[si];
        int d, s, e, t;
        program_coords(p, r->rank, &d, &s, &e, &t);
        int *gi = alone ? NULL : &key_gang[(size_t)d * p->pp + s];
        if (!gi || *gi < 0) {
            int k = x->n_gangs++;
            if (gi) *gi = k;
            x->gangs[k] = (gang){.stage = s, .stop_at = r->stop_at};
            r->gang = k;
        } else r->gang = *gi;
        r->lane = x->gangs[r->gang].n++;
    }
    for (int k = 0; k < x->n_gangs; k++) {
        gang *g = &x->gangs[k];
        g->lane = moe_xmalloc((size_t)g->n * sizeof(int));
        g->dep_t = moe_xcalloc((size_t)STREAM_N * g->n, sizeof(double));
        g->free_t = moe_xcalloc((size_t)STREAM_N * g->n, sizeof(double));
        g->slow = moe_xmalloc((size_t)g->n * sizeof(double));
        g->end_s = moe_xcalloc((size_t)g->n, sizeof(double));
        g->split = moe_xmalloc((size_t)g->n * sizeof *g->split);
        if (x->hosts) {
            g->resume = moe_xcalloc((size_t)x->hosts[g->stage].n_sync * g->n + 1, sizeof(double));
            g->resume_known = moe_xcalloc((size_t)x->hosts[g->stage].n_sync + 1, 1);
        }
        for (int st = 0; st < STREAM_N; st++) g->dep_at[st] = -1;
        g->n = 0;
    }
    for (int si = 0; si < x->n_sim; si++) {
        rank_state *r = &x->rs[si];
        gang *g = &x->gangs[r->gang];
        g->lane[g->n] = si;
        g->slow[g->n] = x->slow[r->rank];
        step_split_begin(&g->split[g->n]);
        g->n++;
    }
    size_t at = 0;
    for (int k = 0; k < x->n_gangs; k++) {
        gang *g = &x->gangs[k];
        size_t n = (size_t)(p->stage_n_ops[g->stage] + 1) * (size_t)g->n;
        g->t = block + at;
        for (size_t i = 0; i < n; i++) g->t[i] = (op_time){-1, -1};
        at += n;
        for (int l = 0; l < g->n; l++) {
            rank_state *r = &x->rs[g->lane[l]];
            r->t = g->t + l;
            r->stride = (size_t)g->n;
        }
    }
    free(key_gang);
}

static void gangs_free(exec_ctx *x) {
    for (int k = 0; k < x->n_gangs; k++) {
        gang *g = &x->gangs[k];
        free(g->lane); free(g->dep_t); free(g->free_t); free(g->slow); free(g->end_s); free(g->split);
        free(g->resume); free(g->resume_known);
    }
    free(x->gangs);
}

int step_exec_run(const program *p, const step_exec_opts *o, step_exec_result *res, moe_error *err) {
    memset(res, 0, sizeof *res);
    if (o->materialized && o->shortcut) return moe_error_set(err, EXIT_RUNTIME, "step_exec: materialized ops need shortcut = 0");
    exec_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p; x.o = o; x.res = res;
    x.price = step_pricing_resolve(o, p, &x.own_pricing, &x.price_ctx);
    for (int i = 0; i < 4; i++) x.p2p_src[i] = -1;
    res->worst_a2a.group = -1; res->worst_a2a.spread_s = -1;

    /* which replicas to simulate: the faulty ones, and one healthy replica per routing sample stream
     * (program.h "Routing": replicas of one stream are routed alike) */
    int per_rep = rank_replica_ranks(&p->ranks);   /* replica d: ranks [d * per_rep, (d + 1) * per_rep) */
    int *rep_sim = moe_xmalloc((size_t)p->dp * sizeof(int));    /* replica -> simulated replica */
    int *healthy_rep = moe_xmalloc((size_t)p->n_sample_groups * sizeof(int));
    for (int g = 0; g < p->n_sample_groups; g++) healthy_rep[g] = -1;
    /* under ecmp every replica's flows hash onto their own uplink ports (fabric_ecmp_port): no replica
     * stands for another */
    const int ecmp = p->scn->cluster.path_selection == PATH_ECMP;
    for (int d = 0; d < p->dp; d++) {
        int *h = &healthy_rep[program_sample_group(p, d)];
        if (!o->shortcut || p->faults.replica_faulty[d] || ecmp) rep_sim[d] = d;
        else { if (*h < 0) *h = d; rep_sim[d] = *h; }
    }
    free(healthy_rep);
    /* rank -> the simulated rank whose results it has: its replica's representative, its t = 0 twin */
    int twins = tp_twins_apply(p, o);
    int *rep_of = moe_xmalloc((size_t)p->n_ranks * sizeof(int));
    for (int r = 0; r < p->n_ranks; r++) {
        int t = 0, d_, s_, e_;
        if (twins) program_coords(p, r, &d_, &s_, &e_, &t);
        rep_of[r] = rep_sim[r / per_rep] * per_rep + r % per_rep - t;
    }
    /* a simulated rank stands for the ranks mirrored onto it: its speed is the slowest of theirs */
    x.slow = moe_xcalloc((size_t)p->n_ranks, sizeof(double));
    for (int r = 0; r < p->n_ranks; r++)
        if (p->faults.speed_factor[r] > x.slow[rep_of[r]]) x.slow[rep_of[r]] = p->faults.speed_factor[r];
    for (int r = 0; r < p->n_ranks; r++) x.slow[r] *= p->faults.compute_factor[r];
    x.sim_index = moe_xmalloc((size_t)p->n_ranks * sizeof(int));
    x.n_sim = 0;
    for (int r = 0; r < p->n_ranks; r++) x.sim_index[r] = rep_of[r] == r ? x.n_sim++ : -1;
    for (int d = 0; d < p->dp; d++) if (rep_sim[d] == d) res->n_simulated_replicas++;
    res->n_simulated_ranks = x.n_sim;
    /* groups: members that are simulated; the memos hold only groups that have some (at 131,072
     * GPUs the ones of all groups were 0.2 GB) */
    x.gs = moe_xcalloc((size_t)p->n_groups, sizeof *x.gs);
    x.group_slot = moe_xmalloc((size_t)(p->n_groups + 1) * sizeof(int));
    for (int g = 0; g < p->n_groups; g++) {
        for (int m = 0; m < p->groups[g].n; m++) if (x.sim_index[p->groups[g].ranks[m]] >= 0) x.gs[g].expected++;
        x.group_slot[g] = x.gs[g].expected > 0 ? x.n_live++ : -1;
    }
    size_t n_a2a_memo = (size_t)(p->n_patterns > 0 ? p->n_patterns : 1) * (size_t)x.n_live;
    x.a2a_memo = moe_xmalloc((n_a2a_memo + 1) * sizeof(double));
    for (size_t i = 0; i < n_a2a_memo; i++) x.a2a_memo[i] = -1;
    if (p->scn->cluster.pfc && p->n_sample_groups > 1 && p->n_patterns > 0) {
        x.pfc_combos = 1;
        for (int j = 0; j < p->n_sample_groups; j++) x.pfc_combos *= p->n_draws;
        size_t n_pfc = (size_t)A2A_NKINDS * (size_t)x.pfc_combos * (size_t)x.n_live;
        x.pfc_memo = moe_xmalloc((n_pfc + 1) * sizeof(double));
        for (size_t i = 0; i < n_pfc; i++) x.pfc_memo[i] = -1;
        x.ep_rep = moe_xmalloc((size_t)(p->n_groups + 1) * sizeof(int));
        for (int g = 0; g < p->n_groups; g++)
            x.ep_rep[g] = p->groups[g].n > 0 ? program_group_of(p, rep_of[p->groups[g].ranks[0]], p->groups[g].kind) : g;
        res->pfc_pause_s = moe_xcalloc((size_t)p->n_ranks, sizeof(double));
    }
    x.coll_memo = moe_xmalloc(((size_t)x.n_live * 3 * COLL_MEMO_SIZES + 1) * sizeof *x.coll_memo);
    for (size_t i = 0; i < (size_t)x.n_live * 3 * COLL_MEMO_SIZES; i++) x.coll_memo[i] = (coll_memo_entry){0, -1};
    /* as early as the simulated ranks are known: the model's helper starts before the ranks' state is
     * laid out (and is forked from a smaller process) */
    if (o->comm && o->comm->announce && !o->materialized) announce_queries(&x);

    /* stream lists per stage (RECVs are on no stream) */
    x.stage_price = moe_xcalloc((size_t)p->pp, sizeof(double *));
    for (int s = 0; s < p->pp; s++) {
        x.stage_price[s] = moe_xmalloc((size_t)(p->stage_n_ops[s] + 1) * sizeof(double));
        for (int i = 0; i < p->stage_n_ops[s]; i++) x.stage_price[s][i] = -1;
    }
    x.stream_lists = moe_xcalloc((size_t)p->pp * STREAM_N, sizeof(int *));
    x.stream_len = moe_xcalloc((size_t)p->pp * STREAM_N, sizeof(int));
    int max_ops = 0;
    for (int s = 0; s < p->pp; s++) {
        int n = p->stage_n_ops[s];
        if (n > max_ops) max_ops = n;
        for (int st = 0; st < STREAM_N; st++) x.stream_lists[s * STREAM_N + st] = moe_xmalloc((size_t)(n + 1) * sizeof(int));
        for (int i = 0; i < n; i++) {
            const program_op *op = &p->stage_ops[s][i];
            if (op->kind == OP_RECV) continue;
            int k = s * STREAM_N + op->stream;
            x.stream_lists[k][x.stream_len[k]++] = i;
        }
    }
    x.n_tags = p->n_tags;
    x.recv_slot = moe_xmalloc(((size_t)p->pp * x.n_tags + 1) * sizeof(int));
    int *stage_n_recv = moe_xcalloc((size_t)p->pp, sizeof(int));
    for (size_t i = 0; i < (size_t)p->pp * x.n_tags; i++) x.recv_slot[i] = -1;
    for (int s = 0; s < p->pp; s++)
        for (int i = 0; i < p->stage_n_ops[s]; i++) {
            const program_op *op = &p->stage_ops[s][i];   /* a RECV's tag is the same resolved */
            if (op->kind != OP_RECV) continue;
            int *slot = &x.recv_slot[(size_t)s * x.n_tags + op->tag];
            if (*slot < 0) *slot = stage_n_recv[s]++;
        }
    x.rs = moe_xcalloc((size_t)x.n_sim, sizeof *x.rs);
    size_t block_bytes;
    op_time *block = timeline_block_alloc(p, &x, &block_bytes);
    for (int r = 0, si = 0; r < p->n_ranks; r++) {
        if (x.sim_index[r] < 0) continue;
        rank_state *rs = &x.rs[si++];
        int d, s, e, t;
        program_coords(p, r, &d, &s, &e, &t);
        rs->rank = r;
        rs->stage = s;
        rs->n_ops = p->stage_n_ops[s];
        rs->mat = o->materialized ? o->materialized[r] : NULL;
        rs->list = rs->mat ? rs->mat : p->stage_ops[s];
        for (int st = 0; st < STREAM_N; st++) rs->head_at[st] = -1;
        int n_recv = stage_n_recv[s];
        rs->recv_slot = x.recv_slot + (size_t)s * x.n_tags;
        rs->recv_at = moe_xmalloc((size_t)(n_recv + 1) * sizeof(double));
        rs->recv_from = moe_xmalloc((size_t)(n_recv + 1) * sizeof(double));
        for (int i = 0; i < n_recv; i++) rs->recv_at[i] = rs->recv_from[i] = -1;
        rs->stop_at = p->faults.stop_at[r];
    }
    if (o->host) x.hosts = step_host_build(p, o->host, o->host_ctx, o->host_sync_s);
    make_gangs(&x, o, block);
    x.a2a_last = moe_xcalloc((size_t)p->n_ranks, sizeof(int));
    x.q_cap = x.n_gangs + 1;
    x.queue = moe_xmalloc((size_t)x.q_cap * sizeof(int));
    for (int i = 0; i < x.n_sim; i++) wake(&x, i);

    /* run */
    while (x.q_head != x.q_tail) {
        int gi = x.queue[x.q_head];
        x.q_head = (x.q_head + 1) % x.q_cap;
        x.gangs[gi].in_queue = 0;
        advance(&x, gi);
    }
    /* a rank with ops left means no op can progress any more: a hang (a stalled rank) */
    int rc = 0, hung = 0;
    for (int si = 0; si < x.n_sim && !hung; si++) hung = rank_unfinished(&x, &x.rs[si]);
    if (hung)   /* every rank blocked inside a collective waits forever */
        for (int si = 0; si < x.n_sim; si++) {
            rank_state *r = &x.rs[si];
            int ci = current_comm_op(&x, r);
            if (!r->arrived[STREAM_COMM] || ci < 0) continue;
            program_op op;
            get_op(&x, r, ci, &op);
            note_wait(&x, r, &op, r->arr_t[STREAM_COMM], INFINITY);
        }
    if (hung) {
        describe_hang(&x, rep_of, &res->hang);
        if (res->hang.found) rc = hang_message(p, &res->hang, err);
        else {
            /* no rank stopped by itself: the program is wrong (a schedule bug), not the cluster */
            for (int si = 0; si < x.n_sim && rc == 0; si++) {
                rank_state *r = &x.rs[si];
                int d, s, e, t;
                program_coords(p, r->rank, &d, &s, &e, &t);
                for (int st = 0; st < STREAM_N && rc == 0; st++) {
                    int at = x.gangs[r->gang].cur[st];
                    if (at >= x.stream_len[s * STREAM_N + st]) continue;
                    program_op op;
                    get_op(&x, r, x.stream_lists[s * STREAM_N + st][at], &op);
                    rc = moe_error_set(err, EXIT_RUNTIME,
                                       "step program deadlocked: rank %d stuck on %s op %s (layer %d, mb %d) of stream %s",
                                       r->rank, op_kind_name(op.kind), kernel_name(op.kernel), op.layer, op.mb,
                                       stream_name(st));
                }
            }
        }
    }

    if (res->timeout.found) {
        char hang[sizeof err->msg];
        snprintf(hang, sizeof hang, "%s", res->hang.found ? err->msg : "");
        rc = timeout_message(p, &res->timeout, err);
        if (hang[0]) {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n, " (%s)", hang);
        }
    }

    /* results: complete steps, hangs (what ran until everyone blocked) and timeouts */
    if (rc == 0 || res->hang.found || res->timeout.found) {
        double step = 0;
        for (int si = 0; si < x.n_sim; si++) {
            const rank_state *rs = &x.rs[si];
            double end = x.gangs[rs->gang].end_s[rs->lane];
            if (end > step) step = end;
        }
        res->step_time_s = hung ? 0 : step;
        res->n_ranks = p->n_ranks;
        res->split = moe_xcalloc((size_t)p->n_ranks, sizeof *res->split);
        res->a2a_s = moe_xcalloc((size_t)p->n_ranks, sizeof(double));
        res->sim_rank = moe_xcalloc((size_t)p->n_ranks, sizeof(int));
        res->a2a_last_count = moe_xcalloc((size_t)p->n_ranks, sizeof(int));
        step_split *sim_split = moe_xcalloc((size_t)x.n_sim + 1, sizeof *sim_split);
        for (int si = 0; si < x.n_sim; si++) {
            rank_state *rs = &x.rs[si];
            const gang *g = &x.gangs[rs->gang];
            step_split_finish(&g->split[rs->lane], g->end_s[rs->lane], hung ? -1 : step, &sim_split[si]);
        }
        for (int r = 0; r < p->n_ranks; r++) {
            int sr = rep_of[r];
            rank_state *rs = &x.rs[x.sim_index[sr]];
            res->split[r] = sim_split[x.sim_index[sr]];
            res->a2a_s[r] = rs->a2a_s;
            if (res->pfc_pause_s) res->pfc_pause_s[r] = rs->pfc_pause_s;
            res->sim_rank[r] = sr;
            res->a2a_last_count[r] = x.a2a_last[sr];
        }
        free(sim_split);
        res->slowest_rank = step_split_slowest_rank(res->split, p->n_ranks);
        /* the timelines move into the result, with the trace's mark of a collective a rank waits in */
        res->timelines = moe_xcalloc((size_t)p->n_ranks, sizeof(op_time *));
        res->timeline_stride = moe_xcalloc((size_t)p->n_ranks, sizeof(size_t));
        for (int si = 0; si < x.n_sim; si++) {
            rank_state *rs = &x.rs[si];
            int pend = current_comm_op(&x, rs);
            if (hung && rs->arrived[STREAM_COMM] && pend >= 0) *time_of(rs, pend) = (op_time){rs->arr_t[STREAM_COMM], -1};
            res->timelines[rs->rank] = rs->t;
            res->timeline_stride[rs->rank] = rs->stride;
        }
        res->timeline_block = block;
        res->timeline_block_bytes = block_bytes;
        block = NULL;
        if (o->keep_timelines && x.hosts) {   /* the host track of the trace reads them */
            res->hosts = x.hosts;
            res->n_host_stages = p->pp;
            x.hosts = NULL;
        }
        step_exec_trace(p, res, o->n_trace_ranks, o->trace_ranks);
        if (!o->keep_timelines) {
            free(res->timelines); free(res->timeline_stride);
            timeline_block_free(res->timeline_block, res->timeline_block_bytes);
            res->timelines = NULL;
            res->timeline_stride = NULL;
            res->timeline_block = NULL;
        }
        res->n_ops_executed = x.executed;
    }
    free(rep_of);
    free(x.slow);

    for (int si = 0; si < x.n_sim; si++) {
        free(x.rs[si].recv_at); free(x.rs[si].recv_from);
    }
    timeline_block_free(block, block_bytes);   /* when the result did not take it */
    free(x.rs);
    gangs_free(&x);
    for (int i = 0; i < p->pp * STREAM_N; i++) free(x.stream_lists[i]);
    for (int s = 0; s < p->pp; s++) free(x.stage_price[s]);
    free(x.stage_price);
    free(x.stream_lists); free(x.stream_len); free(x.gs); free(x.group_slot); free(x.a2a_memo); free(x.coll_memo);
    free(x.pfc_memo); free(x.ep_rep);
    free(x.a2a_last); free(x.queue); free(x.sim_index); free(rep_sim); free(x.recv_slot); free(stage_n_recv);
    step_pricing_free(&x.own_pricing);
    step_host_free(x.hosts, p->pp);
    return rc;
}

static void trace_free(step_exec_result *r) {
    for (int k = 0; k < r->n_trace_ranks; k++) free(r->trace_times ? r->trace_times[k] : NULL);
    free(r->trace_times); free(r->trace_ranks);
    r->trace_times = NULL; r->trace_ranks = NULL; r->n_trace_ranks = 0;
}

void step_exec_trace(const program *p, step_exec_result *r, int n, const int *ranks) {
    trace_free(r);
    r->n_trace_ranks = n;
    r->trace_ranks = moe_xmalloc((size_t)(n + 1) * sizeof(int));
    r->trace_times = moe_xcalloc((size_t)(n + 1), sizeof(op_time *));
    for (int k = 0; k < n; k++) {
        int rk = ranks[k];
        r->trace_ranks[k] = rk;
        if (rk < 0 || rk >= p->n_ranks || !r->timelines || !r->timelines[r->sim_rank[rk]]) continue;
        size_t n_ops = (size_t)program_n_ops(p, rk);
        r->trace_times[k] = moe_xmalloc((n_ops + 1) * sizeof(op_time));
        for (size_t i = 0; i < n_ops; i++) r->trace_times[k][i] = *step_exec_time(r, r->sim_rank[rk], (int)i);
    }
}

void step_exec_result_free(step_exec_result *r) {
    free(r->split); free(r->a2a_s); free(r->pfc_pause_s);
    if (r->timelines && !r->timeline_block)
        for (int k = 0; k < r->n_ranks; k++) free(r->timelines[k]);
    free(r->timelines); free(r->timeline_stride);
    timeline_block_free(r->timeline_block, r->timeline_block_bytes);
    free(r->sim_rank); free(r->a2a_last_count);
    trace_free(r);
    free(r->hang.waiting); free(r->hang.missing); free(r->hang.missing_last_op);
    step_host_free(r->hosts, r->n_host_stages);
    memset(r, 0, sizeof *r);
}
