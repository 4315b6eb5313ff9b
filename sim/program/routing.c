/* routing.c — MoE token routing of one EP group (see routing.h for the model and the contract).
 *
 * Layout of the work: one draw walks tokens in arrival order (token t of every source rank, then
 * t+1), picks each token's experts (choose_token) and immediately accounts them (account_token):
 * capacity, drops, (token, rank) and (token, node) dedup. Nothing is stored per token unless the
 * caller asked for the choices, so a draw touches only a few KB of counters besides the RNG.
 */
/* GSL's inline gsl_rng_get/uniform/uniform_int (gsl_rng.h): the draw loop calls them ~3M times. */
#define HAVE_INLINE 1
#include "sim/program/routing.h"
#include "sim/program/eplb.h"
#include "kernels/moe_capacity.h"
#include "sim/base/alloc.h"
#include "sim/base/hash.h"
#include "sim/base/json_read.h"
#include "sim/base/rng_seed.h"
#include "sim/plan/model.h"
#include "sim/scenario/scenario_paths.h"

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

/* Consecutive rejections after which a token's remaining experts are drawn by an exact linear scan
 * of the eligible set (only reached by very skewed zipf/trace laws under tight group/node limits). */
#define REJECT_LIMIT(k) (64 + 8 * (k))
/* The most nodes a token's experts may span for pick_from_nodes (direct_when_full). */
#define PICK_MAX_NODES 64
/* tokens per source rank accounted together (routing_draw): a block of choices is n x 16 x K int32,
 * 128 KB at 256 ranks and top-8 */
#define ROUTING_BLOCK_TOKENS 16

struct routing_ctx {
    /* shape */
    int n;                 /* EP ranks */
    int E, K;              /* experts, top-k */
    int experts_per_rank;
    int tokens_per_rank;
    int keep_choices;
    double hidden;
    double dispatch_dtype_bytes, combine_dtype_bytes;
    /* placement */
    int *gpus;             /* [n] */
    int *rank_node;        /* [n] node index */
    int n_nodes;
    int *nodes;            /* [n_nodes] global node ids ascending */
    int *expert_rank;      /* [E] */
    int *expert_node;      /* [E] node index */
    int *expert_group;     /* [E] */
    int *node_start;       /* [n_nodes + 1]: node k's experts are node_experts[node_start[k] ..] */
    int *node_experts;     /* [E] */
    /* redundant experts (routing.redundant_experts, EPLB): expert e's pairs from each source rank
     * go round-robin over its slot_count[e] slots, slot_rank[slot_first[e] + r] (r = 0: its own) */
    int n_redundant;
    int slots_per_rank;    /* experts_per_rank + the most replicas one rank holds */
    int *slot_first, *slot_count;   /* [E] */
    int *slot_rank;        /* [E + n_redundant] */
    int *slot_index;       /* [E + n_redundant] the slot's position in its rank's slots_per_rank */
    /* constraints */
    int groups_on, topk_groups, n_groups;
    int nodes_on, node_limit;
    int direct_when_full;  /* the token's nodes hold at most E/4 experts: draw from them (choose_token) */
    int groups_are_nodes;  /* each expert group is one node's experts and topk_groups = node_limit: a
                            * token's groups are its nodes' at every step, so the draws skip the
                            * group limit (the same choices: DeepSeek-V3 on EP64 over 8 nodes) */
    int nodes_in_groups;   /* every node's experts are of one expert group (or no groups): a selected
                            * node's group is selected too */
    /* law */
    route_kind dist;
    int hot_expert;
    double hot_share;
    int n_laws;
    gsl_ran_discrete_t **tables;  /* [n_laws] zipf/trace; NULL entries for uniform/hot */
    double *weights;              /* [n_laws * E], for the exact fallback scan */
    /* uniform/hot draws: gsl_rng_uniform_int(rng, draw_n) of the mt19937 stream (uniform_below) */
    int draw_n;
    uint64_t draw_scale, draw_scale_inv;
    /* capacity: per (source rank, expert), moe_capacity.h */
    int64_t capacity;             /* -1 = uncapped */
    int drop;
    int dedup;                    /* 1: deepep (one copy per destination rank and node), 0: alltoall */
    uint64_t seed;
    uint64_t digest;              /* everything a draw reads (ctx_digest): the process cache's key;
                                     0: draws not kept */
};

struct routing_scratch {
    gsl_rng *rng;
    int32_t *load;         /* [n*E] pairs expert e accepted from source rank i, at [i*E + e] */
    int32_t *pairs;        /* [n*n] distinct (token, dest rank) */
    int32_t *node_pairs;   /* [n*n_nodes] distinct (token, dest node), other nodes only */
    uint32_t *seen_expert, *seen_group, *seen_node;  /* selection stamps, [E], [groups], [n_nodes] */
    uint32_t *sent_rank, *sent_node;                 /* accounting stamps, [n], [n_nodes] */
    uint32_t tok;          /* current token stamp (1-based within a draw) */
    uint32_t sent_tok;     /* the accounting's token stamp (tokens are accounted in another order) */
    int32_t *block;        /* [n * ROUTING_BLOCK_TOKENS * K] a block's choices, rank-major (routing_draw) */
    int *block_m;          /* [n * ROUTING_BLOCK_TOKENS] how many experts each of them got */
    int32_t *cand;         /* [E] the eligible experts of pick_from_nodes */
    int64_t *routed;       /* [E] pairs the router assigned each expert, before the capacity limit */
    int64_t assignments, dropped, over, empty;
    /* balanced law: per draw, a random order of the units (nodes, groups or one) and of the experts
     * inside each unit (unit u's experts are unit_experts[unit_start[u] .. unit_start[u+1]-1]);
     * unit_used[i*units + u]: source rank i's cursor in unit u */
    int n_units, unit_pick;            /* units, units per token */
    int *unit_order, *unit_start, *unit_experts, *unit_used;
};

/* ---- seeding ------------------------------------------------------------------------------------ */
/* gsl_rng_uniform_int(rng, c->draw_n), the same number from the same stream: GSL's rule for a
 * generator with min 0 (mt19937: max 2^32 - 1) is k = x / scale, scale = max / n, drawn again while
 * k >= n. The division by the context's constant scale is a multiply by its reciprocal rounded up,
 * m = ceil(2^64 / scale), which is exact for x, scale < 2^32 (Granlund & Montgomery, "Division by
 * invariant integers using multiplication", PLDI 1994: x m / 2^64 exceeds x / scale by less than
 * 2^-32, less than the distance 1 / scale from any fraction to the next integer); a draw is the
 * token loop's innermost step, and a 64-bit division costs more than the generator. */
static inline int uniform_below(const routing_ctx *c, gsl_rng *rng) {
    for (;;) {
        uint64_t x = gsl_rng_get(rng) - gsl_rng_mt19937->min;
        __extension__ typedef unsigned __int128 u128;
        uint64_t k = (uint64_t)(((u128)x * c->draw_scale_inv) >> 64);
        if (k < (uint64_t)c->draw_n) return (int)k;
    }
}

static void uniform_below_init(routing_ctx *c, int n) {
    c->draw_n = n;
    c->draw_scale = (uint64_t)(gsl_rng_mt19937->max - gsl_rng_mt19937->min) / (uint64_t)n;
    c->draw_scale_inv = UINT64_MAX / c->draw_scale + 1;
}

uint32_t routing_seed(uint64_t seed, uint32_t tag, int layer, int micro_batch, int group) {
    uint64_t h = moe_seed_mix(seed ^ ((uint64_t)tag << 56));
    h = moe_seed_mix(h ^ (uint64_t)(uint32_t)layer);
    h = moe_seed_mix(h ^ (uint64_t)(uint32_t)micro_batch);
    h = moe_seed_mix(h ^ (uint64_t)(uint32_t)group);
    return moe_seed_fold32(h);
}

uint64_t routing_step_seed(uint64_t seed, int step) {
    if (step == 0) return seed;
    uint64_t h = moe_seed_mix(seed ^ ((uint64_t)ROUTING_TAG_STEP << 56));
    return moe_seed_mix(h ^ (uint64_t)(uint32_t)step);
}

/* ---- context: validation ------------------------------------------------------------------------ */
static int bad_int(moe_error *err, const scenario *s, const char *path, long v, const char *what) {
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    return moe_error_input(err, s->file, path, buf, "%s", what);
}

static int bad_dbl(moe_error *err, const scenario *s, const char *path, double v, const char *what) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", v);
    return moe_error_input(err, s->file, path, buf, "%s", what);
}

static int validate(const scenario *s, const int *group_gpus, int tokens_per_rank, moe_error *err) {
    const model_cfg *m = &s->model;
    const routing_cfg *r = &s->routing;
    if (m->experts <= 0) return bad_int(err, s, "model.experts", m->experts, "a MoE model (experts > 0)");
    if (m->top_k < 1 || m->top_k > m->experts)
        return bad_int(err, s, "model.top_k", m->top_k, "1 <= top_k <= model.experts");
    if (m->hidden < 1) return bad_int(err, s, "model.hidden", m->hidden, "hidden > 0");
    if (s->layout.ep < 1 || m->experts % s->layout.ep != 0)
        return bad_int(err, s, "layout.ep", s->layout.ep, "a divisor of model.experts");
    if (s->cluster.gpus_per_node < 1)
        return bad_int(err, s, "cluster.gpus_per_node", s->cluster.gpus_per_node, "gpus_per_node >= 1");
    if (!group_gpus) return moe_error_set(err, EXIT_RUNTIME, "routing: group_gpus is NULL");
    for (int i = 0; i < s->layout.ep; i++)
        if (group_gpus[i] < 0) return moe_error_set(err, EXIT_RUNTIME, "routing: group_gpus[%d] < 0", i);
    if (tokens_per_rank < 1)
        return bad_int(err, s, "layout.micro_batch", s->layout.micro_batch,
                       "micro_batch * model.seq_len / layout.tp >= 1 token per rank");
    if (m->expert_groups > 0 && m->topk_groups > 0) {
        if (m->experts % m->expert_groups != 0)
            return bad_int(err, s, "model.expert_groups", m->expert_groups, "a divisor of model.experts");
        if (m->topk_groups > m->expert_groups)
            return bad_int(err, s, "model.topk_groups", m->topk_groups, "topk_groups <= expert_groups");
        if ((long)m->topk_groups * (m->experts / m->expert_groups) < m->top_k)
            return bad_int(err, s, "model.topk_groups", m->topk_groups,
                           "enough groups for top_k experts: topk_groups * experts / expert_groups >= top_k");
    }
    if (r->node_limit < 0) return bad_int(err, s, "routing.node_limit", r->node_limit, "node_limit >= 0");
    if (!(r->capacity_factor == r->capacity_factor))
        return bad_dbl(err, s, "routing.capacity_factor", r->capacity_factor, "a number");
    switch (r->distribution) {
    case ROUTE_UNIFORM: case ROUTE_TRACE: case ROUTE_BALANCED: break;
    case ROUTE_ZIPF:
        if (!(r->zipf_s >= 0.0 && isfinite(r->zipf_s)))
            return bad_dbl(err, s, "routing.zipf_s", r->zipf_s, "zipf_s >= 0");
        break;
    case ROUTE_HOT:
        if (m->experts < 2) return bad_int(err, s, "model.experts", m->experts, ">= 2 experts for \"hot\"");
        if (r->hot_expert < 0 || r->hot_expert >= m->experts)
            return bad_int(err, s, "routing.hot_expert", r->hot_expert, "0 <= hot_expert < model.experts");
        if (!(r->hot_share >= 0.0 && r->hot_share <= 1.0))
            return bad_dbl(err, s, "routing.hot_share", r->hot_share, "0 <= hot_share <= 1");
        if (r->hot_share < 1.0 && m->top_k > m->experts - 1)
            return bad_int(err, s, "model.top_k", m->top_k,
                           "top_k <= experts - 1 (tokens without the hot expert pick among the others)");
        break;
    default:
        return bad_int(err, s, "routing.distribution", (long)r->distribution,
                       "one of uniform, zipf, hot, trace");
    }
    return 0;
}

/* ---- context: trace file ------------------------------------------------------------------------ */
int routing_trace_from_json(const char *path, const cJSON *root, int E, int K, double **weights,
                            int *n_laws, moe_error *err) {
    static const char *const keys[] = {"format", "experts", "layers", NULL};
    json_reader r = {path, err};
    if (!cJSON_IsObject(root))
        return json_bad(&r, "(root)", root, "a JSON object {\"format\": \"moesim-expert-load/1\", "
                        "\"layers\": [[counts per expert], ...]}");
    const cJSON *fmt = json_member(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "moesim-expert-load/1") != 0)
        return json_bad(&r, "format", fmt, "\"moesim-expert-load/1\"");
    if (json_check_keys(&r, root, "", keys)) return EXIT_BADINPUT;
    const cJSON *ex = json_member(root, "experts");
    if (ex && (!cJSON_IsNumber(ex) || ex->valuedouble != E)) return json_bad(&r, "experts", ex, "model.experts = %d", E);
    const cJSON *layers = json_member(root, "layers");
    int nl = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : 0;
    if (nl < 1) return json_bad(&r, "layers", layers, "a non-empty array of per-layer count arrays");
    char jp[64], v[64];
    int l = 0;
    /* shapes first: the allocation below is then bounded by what the file holds */
    for (const cJSON *row = layers->child; row; row = row->next, l++)
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != E) {
            snprintf(v, sizeof v, "%d entries", cJSON_IsArray(row) ? cJSON_GetArraySize(row) : 0);
            return moe_error_input(err, path, json_path_index(jp, sizeof jp, "layers", l), v,
                                   "an array of %d per-expert token counts", E);
        }
    double *w = moe_xcalloc((size_t)nl * (size_t)E, sizeof *w);
    l = 0;
    for (const cJSON *row = layers->child; row; row = row->next, l++) {
        json_path_index(jp, sizeof jp, "layers", l);
        int e = 0, nonzero = 0;
        double sum = 0.0;
        for (const cJSON *c = row->child; c; c = c->next, e++) {
            char ep[80];
            double x = 0;
            if (json_number_value(&r, c, json_path_index(ep, sizeof ep, jp, e), 0, 0, INFINITY, &x)) {
                free(w);
                return EXIT_BADINPUT;
            }
            w[(size_t)l * E + e] = x;
            sum += x;
            nonzero += x > 0.0;
        }
        if (!(sum > 0.0) || nonzero < K) {
            snprintf(v, sizeof v, "%d non-zero experts", nonzero);
            free(w);
            return moe_error_input(err, path, jp, v, "at least top_k = %d experts with tokens", K);
        }
    }
    *weights = w;
    *n_laws = nl;
    return 0;
}

/* Fill weights[n_laws * E] from the scenario's routing.trace file; sets *n_laws. A bad file is
 * reported as the file's own error behind "SCENARIO: routing.trace: ". */
static int load_trace(const scenario *s, int E, int K, double **weights, int *n_laws, moe_error *err) {
    char path[2 * SCN_PATH_MAX + 2];
    if (!s->routing.trace[0])
        return moe_error_input(err, s->file, "routing.trace", "\"\"",
                               "a per-expert load file for distribution \"trace\"");
    if (scenario_resolve_path(s, s->routing.trace, path, sizeof path) == -2)
        return moe_error_input(err, s->file, "routing.trace", s->routing.trace, "a shorter path");
    cJSON *root = json_load(path, 0, err);
    int rc = root ? routing_trace_from_json(path, root, E, K, weights, n_laws, err) : err->code;
    cJSON_Delete(root);
    return rc ? moe_error_context(err, s->file, "routing.trace") : 0;
}

/* ---- context: construction ---------------------------------------------------------------------- */
static int build_laws(routing_ctx *c, const scenario *s, const routing_law *law, moe_error *err) {
    int E = c->E;
    if (law && law->weights) {
        /* one law for every layer: the given popularities (the hot expert's zero: the hot law draws
         * the token's other experts from this table) */
        c->n_laws = 1;
        c->weights = moe_xmalloc((size_t)E * sizeof *c->weights);
        if (!c->weights) return moe_error_set(err, EXIT_RUNTIME, "out of memory");
        for (int e = 0; e < E; e++)
            c->weights[e] = (c->dist == ROUTE_HOT && e == c->hot_expert) ? 0.0 : law->weights[e];
        goto tables;
    }
    switch (c->dist) {
    case ROUTE_TRACE:
        if (load_trace(s, E, c->K, &c->weights, &c->n_laws, err)) return -1;
        break;
    case ROUTE_ZIPF: {
        int moe = model_moe_layers(&s->model);
        c->n_laws = moe > 0 ? moe : 1;
        c->weights = moe_xmalloc((size_t)c->n_laws * E * sizeof *c->weights);
        int *perm = moe_xmalloc((size_t)E * sizeof *perm);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!c->weights || !perm || !rng) {
            free(perm);
            if (rng) gsl_rng_free(rng);
            return moe_error_set(err, EXIT_RUNTIME, "out of memory");
        }
        for (int l = 0; l < c->n_laws; l++) {
            gsl_rng_set(rng, routing_seed(c->seed, ROUTING_TAG_ZIPF, l, 0, 0));
            for (int e = 0; e < E; e++) perm[e] = e;
            gsl_ran_shuffle(rng, perm, (size_t)E, sizeof *perm);
            for (int r = 0; r < E; r++) c->weights[(size_t)l * E + perm[r]] = pow(r + 1.0, -s->routing.zipf_s);
        }
        free(perm);
        gsl_rng_free(rng);
        break;
    }
    case ROUTE_UNIFORM:
    case ROUTE_BALANCED:
    case ROUTE_HOT:
        c->n_laws = 1;
        c->weights = moe_xmalloc((size_t)E * sizeof *c->weights);
        if (!c->weights) return moe_error_set(err, EXIT_RUNTIME, "out of memory");
        /* hot: the fallback scan draws the token's OTHER experts, uniform over the non-hot ones */
        for (int e = 0; e < E; e++) c->weights[e] = (c->dist == ROUTE_HOT && e == c->hot_expert) ? 0.0 : 1.0;
        return 0;
    }
tables:
    c->tables = moe_xcalloc((size_t)c->n_laws, sizeof *c->tables);
    if (!c->tables) return moe_error_set(err, EXIT_RUNTIME, "out of memory");
    for (int l = 0; l < c->n_laws; l++) {
        c->tables[l] = gsl_ran_discrete_preproc((size_t)E, c->weights + (size_t)l * E);
        if (!c->tables[l]) return moe_error_set(err, EXIT_RUNTIME, "gsl_ran_discrete_preproc failed");
    }
    return 0;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* phys: a placement (routing_law.placement, S slots per rank) whose first copy of each expert is its
 * home for the node and group limits; NULL: the contiguous one */
static int build_placement(routing_ctx *c, const int *group_gpus, int gpus_per_node, const int *phys, int S,
                           moe_error *err) {
    int n = c->n, E = c->E;
    c->gpus = moe_xmalloc((size_t)n * sizeof *c->gpus);
    c->rank_node = moe_xmalloc((size_t)n * sizeof *c->rank_node);
    c->nodes = moe_xmalloc((size_t)n * sizeof *c->nodes);
    c->expert_rank = moe_xmalloc((size_t)E * sizeof *c->expert_rank);
    c->expert_node = moe_xmalloc((size_t)E * sizeof *c->expert_node);
    c->expert_group = moe_xmalloc((size_t)E * sizeof *c->expert_group);
    if (!c->gpus || !c->rank_node || !c->nodes || !c->expert_rank || !c->expert_node || !c->expert_group)
        return moe_error_set(err, EXIT_RUNTIME, "out of memory");
    memcpy(c->gpus, group_gpus, (size_t)n * sizeof *c->gpus);
    for (int i = 0; i < n; i++) c->nodes[i] = group_gpus[i] / gpus_per_node;
    qsort(c->nodes, (size_t)n, sizeof *c->nodes, cmp_int);
    int nn = 0;
    for (int i = 0; i < n; i++)
        if (nn == 0 || c->nodes[nn - 1] != c->nodes[i]) c->nodes[nn++] = c->nodes[i];
    c->n_nodes = nn;
    for (int i = 0; i < n; i++) {
        int node = group_gpus[i] / gpus_per_node;
        int *hit = bsearch(&node, c->nodes, (size_t)nn, sizeof *c->nodes, cmp_int);
        c->rank_node[i] = (int)(hit - c->nodes);
    }
    int group_size = c->groups_on ? E / c->n_groups : E;
    for (int e = 0; e < E; e++) c->expert_rank[e] = phys ? -1 : e / c->experts_per_rank;
    for (int k = 0; phys && k < n * S; k++)
        if (c->expert_rank[phys[k]] < 0) c->expert_rank[phys[k]] = k / S;
    for (int e = 0; e < E; e++) {
        c->expert_node[e] = c->rank_node[c->expert_rank[e]];
        c->expert_group[e] = e / group_size;
    }
    /* each node's experts, ascending (a counting sort) */
    c->node_start = moe_xcalloc((size_t)nn + 1, sizeof *c->node_start);
    c->node_experts = moe_xmalloc((size_t)E * sizeof *c->node_experts);
    for (int e = 0; e < E; e++) c->node_start[c->expert_node[e] + 1]++;
    for (int k = 0; k < nn; k++) c->node_start[k + 1] += c->node_start[k];
    int *at = moe_xmalloc((size_t)nn * sizeof *at);
    memcpy(at, c->node_start, (size_t)nn * sizeof *at);
    for (int e = 0; e < E; e++) c->node_experts[at[c->expert_node[e]]++] = e;
    free(at);
    return 0;
}

int routing_check_tokens(const scenario *s, long long tokens_per_rank, moe_error *err) {
    long long choices = tokens_per_rank * (s->model.top_k > 0 ? s->model.top_k : 1) * (s->layout.ep > 0 ? s->layout.ep : 1);
    if (tokens_per_rank <= INT_MAX && (s->model.experts <= 0 || choices <= ROUTING_MAX_CHOICES)) return 0;
    char v[32], why[160];
    snprintf(v, sizeof v, "%d", s->model.seq_len);
    if (tokens_per_rank > INT_MAX)
        snprintf(why, sizeof why, "%lld tokens per micro-batch, more than %d", tokens_per_rank, INT_MAX);
    else
        snprintf(why, sizeof why, "%lld tokens x top_k %d x EP %d = %.3g choices per routing sample",
                 tokens_per_rank, s->model.top_k, s->layout.ep, (double)choices);
    return moe_error_input(err, s->file, "model.seq_len", v,
                           "a step the routing model can draw: layout.micro_batch (%d) x model.seq_len tokens x "
                           "model.top_k x layout.ep at most 2^28 (here %s)", s->layout.micro_batch, why);
}

/* ---- context: redundant experts (EPLB; see routing.h) ----------------------------------------------- */
void routing_expected_load(const routing_law *law, int E, int top_k, double *load) {
    double h = law->hot_share > 0 ? law->hot_share : 0.0, total = 0;
    for (int e = 0; e < E; e++) {
        int is_hot = h > 0 && e == law->hot_expert;
        total += is_hot ? 0.0 : law->weights ? law->weights[e] : 1.0;
    }
    for (int e = 0; e < E; e++) {
        if (h > 0 && e == law->hot_expert) { load[e] = h; continue; }
        double w = law->weights ? law->weights[e] : 1.0;
        load[e] = total > 0 ? (top_k - h) * w / total : 0.0;
    }
}

static void alloc_slots(routing_ctx *c, int R, int slots_per_rank) {
    c->n_redundant = R;
    c->slots_per_rank = slots_per_rank;
    c->slot_first = moe_xcalloc((size_t)c->E, sizeof(int));
    c->slot_count = moe_xcalloc((size_t)c->E, sizeof(int));
    c->slot_rank = moe_xcalloc((size_t)(c->E + R), sizeof(int));
    c->slot_index = moe_xcalloc((size_t)(c->E + R), sizeof(int));
}

/* The oracle (routing.h): the law's expected loads, EPLB's replicate capped at one copy per rank, the
 * experts' own slots where they are, the replicas packed (eplb.h) */
static int build_replicas(routing_ctx *c, int R, moe_error *err) {
    int E = c->E, n = c->n, epr = c->experts_per_rank, extra = (R + n - 1) / n;
    alloc_slots(c, R, epr + extra);
    double *load = moe_xcalloc((size_t)E, sizeof(double));
    eplb_item *items = moe_xcalloc((size_t)(E + R), sizeof *items);
    int *room = moe_xcalloc((size_t)n, sizeof(int));
    /* the law's expected loads: the hot share, the (law 0) popularities elsewhere */
    routing_law law = {.hot_share = c->dist == ROUTE_HOT ? c->hot_share : 0, .hot_expert = c->hot_expert,
                       .weights = c->weights};
    routing_expected_load(&law, E, c->K, load);
    eplb_replicate(load, E, R, n, c->slot_count, NULL);
    /* the own slots first (placed: their load counts), then the replicas in (expert, copy) order */
    int at = 0, nr = E;
    for (int e = 0; e < E; e++) {
        double w = load[e] / c->slot_count[e];
        c->slot_first[e] = at;
        c->slot_rank[at] = c->expert_rank[e];
        c->slot_index[at] = e % epr;
        items[e] = (eplb_item){w, e, c->expert_rank[e], 0};
        for (int r = 1; r < c->slot_count[e]; r++) items[nr++] = (eplb_item){w, e, -1, 0};
        at += c->slot_count[e];
    }
    for (int j = 0; j < n; j++) room[j] = extra;
    int rc = eplb_pack(items, nr, n, room, 1);
    for (int k = E; rc == 0 && k < nr; k++) {
        int e = items[k].key, r = 1;
        while (k - r >= E && items[k - r].key == e) r++;
        c->slot_rank[c->slot_first[e] + r] = items[k].pack;
        c->slot_index[c->slot_first[e] + r] = epr + items[k].pos;
    }
    free(load); free(items); free(room);
    return rc ? moe_error_set(err, EXIT_RUNTIME, "routing: %d redundant experts do not fit %d per rank", R, extra) : 0;
}

/* A placement given by the law (routing_law.placement, eplb.h's phys array): every slot as it says */
static void slots_from_placement(routing_ctx *c, int R, const int *phys) {
    int E = c->E, n = c->n, S = (E + R) / n;
    alloc_slots(c, R, S);
    for (int k = 0; k < n * S; k++) c->slot_count[phys[k]]++;
    for (int e = 0, at = 0; e < E; e++) { c->slot_first[e] = at; at += c->slot_count[e]; }
    int *fill = moe_xcalloc((size_t)E, sizeof(int));
    for (int j = 0; j < n; j++)
        for (int p = 0; p < S; p++) {
            int e = phys[j * S + p], slot = c->slot_first[e] + fill[e]++;
            c->slot_rank[slot] = j;
            c->slot_index[slot] = p;
        }
    free(fill);
}

/* ---- digest: FNV-1a (sim/base/hash.h) over what routing_draw reads ------------------------------------ */
typedef struct { uint64_t h; } fnv;
static void fnv_bytes(fnv *f, const void *p, size_t n) { f->h = moe_fnv1a64(f->h, p, n); }
#define FNV_VAL(f, v) do { __typeof__(v) v_ = (v); fnv_bytes((f), &v_, sizeof v_); } while (0)
#define FNV_ARR(f, a, n) do { if (a) fnv_bytes((f), (a), (size_t)(n) * sizeof *(a)); else FNV_VAL((f), -1); } while (0)

/* Every field and array of the context that a draw reads, so that two contexts with one digest draw
 * the same samples: the shape, the group's node pattern (node indexes, not global ids: a draw does
 * not see where the group sits), the placement of experts and replicas, the limits, the law (its
 * weights give its alias tables), capacity and seed. */
static uint64_t ctx_digest(const routing_ctx *c) {
    fnv f = {MOE_FNV1A64_OFFSET};
    FNV_VAL(&f, c->n); FNV_VAL(&f, c->E); FNV_VAL(&f, c->K); FNV_VAL(&f, c->experts_per_rank);
    FNV_VAL(&f, c->tokens_per_rank); FNV_VAL(&f, c->keep_choices); FNV_VAL(&f, c->hidden);
    FNV_VAL(&f, c->dispatch_dtype_bytes); FNV_VAL(&f, c->combine_dtype_bytes);
    FNV_VAL(&f, c->n_nodes); FNV_ARR(&f, c->rank_node, c->n);
    FNV_ARR(&f, c->expert_rank, c->E); FNV_ARR(&f, c->expert_node, c->E); FNV_ARR(&f, c->expert_group, c->E);
    FNV_VAL(&f, c->n_redundant); FNV_VAL(&f, c->slots_per_rank);
    if (c->n_redundant) {
        FNV_ARR(&f, c->slot_first, c->E); FNV_ARR(&f, c->slot_count, c->E);
        FNV_ARR(&f, c->slot_rank, c->E + c->n_redundant); FNV_ARR(&f, c->slot_index, c->E + c->n_redundant);
    }
    FNV_VAL(&f, c->groups_on); FNV_VAL(&f, c->topk_groups); FNV_VAL(&f, c->n_groups);
    FNV_VAL(&f, c->nodes_on); FNV_VAL(&f, c->node_limit);
    FNV_VAL(&f, (int)c->dist); FNV_VAL(&f, c->hot_expert); FNV_VAL(&f, c->hot_share); FNV_VAL(&f, c->n_laws);
    FNV_ARR(&f, c->weights, (size_t)c->n_laws * (size_t)c->E);
    FNV_VAL(&f, c->draw_n); FNV_VAL(&f, c->draw_scale);
    FNV_VAL(&f, c->capacity); FNV_VAL(&f, c->drop); FNV_VAL(&f, c->dedup); FNV_VAL(&f, c->seed);
    return f.h ? f.h : 1;
}

routing_ctx *routing_ctx_create_opts(const scenario *s, const int *group_gpus, const routing_opts *opts,
                                     moe_error *err) {
    long long tpr64 = opts && opts->tokens_per_rank > 0
                          ? opts->tokens_per_rank
                          : (s->layout.tp > 0 ? (long long)s->layout.micro_batch * s->model.seq_len / s->layout.tp : 0);
    if (routing_check_tokens(s, tpr64, err)) return NULL;
    int tpr = (int)tpr64;
    if (validate(s, group_gpus, tpr, err)) return NULL;
    routing_ctx *c = moe_xcalloc(1, sizeof *c);
    if (!c) { moe_error_set(err, EXIT_RUNTIME, "out of memory"); return NULL; }
    const model_cfg *m = &s->model;
    c->n = s->layout.ep;
    c->E = m->experts;
    c->K = m->top_k;
    c->experts_per_rank = m->experts / s->layout.ep;
    c->tokens_per_rank = tpr;
    c->keep_choices = opts ? opts->keep_choices : 0;
    c->hidden = m->hidden;
    c->dispatch_dtype_bytes = dtype_bytes(s->precision.dispatch);
    c->combine_dtype_bytes = dtype_bytes(s->precision.combine);
    c->groups_on = m->expert_groups > 0 && m->topk_groups > 0 && m->topk_groups < m->expert_groups;
    c->n_groups = c->groups_on ? m->expert_groups : 1;
    c->topk_groups = m->topk_groups;
    c->dist = s->routing.distribution;
    c->hot_expert = s->routing.hot_expert;
    c->hot_share = s->routing.hot_share;
    const routing_law *law = opts ? opts->law : NULL;
    if (law) {   /* a step's drifting law (routing_drift.h) instead of the scenario's */
        c->hot_expert = law->hot_expert;
        c->hot_share = law->hot_share;
        c->dist = law->hot_share > 0 ? ROUTE_HOT : law->weights ? ROUTE_TRACE : ROUTE_UNIFORM;
    }
    c->drop = s->routing.drop;
    c->dedup = dispatcher_dedups(s->routing.dispatcher);
    c->seed = routing_step_seed(s->seed, law ? law->draw_step : 0);
    c->capacity = moe_capacity(s->routing.capacity_factor, tpr, c->K, c->E);
    /* node-limited routing and DeepEP's per-node copies count NVLink domains */
    const int *phys = law && s->routing.redundant_experts > 0 ? law->placement : NULL;
    int R = s->routing.redundant_experts;
    if (build_placement(c, group_gpus, scn_domain_gpus(&s->cluster), phys, (c->E + R) / c->n, err)) goto fail;
    c->node_limit = s->routing.node_limit;
    c->nodes_on = c->node_limit > 0 && c->node_limit < c->n_nodes;
    if (c->nodes_on) {
        int most = 0;
        for (int k = 0; k < c->n_nodes; k++)
            if (c->node_start[k + 1] - c->node_start[k] > most) most = c->node_start[k + 1] - c->node_start[k];
        c->direct_when_full = 4L * c->node_limit * most <= c->E && c->node_limit <= PICK_MAX_NODES;
        c->nodes_in_groups = 1;
        for (int e = 0; e < c->E && c->groups_on; e++) {
            int nd = c->expert_node[e];
            c->nodes_in_groups &= c->expert_group[e] == c->expert_group[c->node_experts[c->node_start[nd]]];
        }
        c->groups_are_nodes = c->groups_on && c->nodes_in_groups && c->topk_groups == c->node_limit;
        int *group_node = c->groups_are_nodes ? moe_xmalloc((size_t)c->n_groups * sizeof(int)) : NULL;
        for (int g = 0; group_node && g < c->n_groups; g++) group_node[g] = -1;
        for (int e = 0; group_node && e < c->E; e++) {
            int *at = &group_node[c->expert_group[e]];
            if (*at < 0) *at = c->expert_node[e];
            c->groups_are_nodes &= *at == c->expert_node[e];
        }
        free(group_node);
    }
    if (c->nodes_on) {
        /* the node_limit nodes holding the fewest experts must still hold top_k of them */
        int *per_node = moe_xcalloc((size_t)c->n_nodes, sizeof *per_node);
        if (!per_node) { moe_error_set(err, EXIT_RUNTIME, "out of memory"); goto fail; }
        for (int e = 0; e < c->E; e++) per_node[c->expert_node[e]]++;
        qsort(per_node, (size_t)c->n_nodes, sizeof *per_node, cmp_int);
        long fewest = 0;
        for (int k = 0; k < c->node_limit; k++) fewest += per_node[k];
        free(per_node);
        if (fewest < c->K) {
            bad_int(err, s, "routing.node_limit", c->node_limit,
                    "enough nodes to hold top_k experts (node_limit x experts per node >= top_k)");
            goto fail;
        }
    }
    if (build_laws(c, s, law, err)) goto fail;
    uniform_below_init(c, c->dist == ROUTE_HOT ? c->E - 1 : c->E);
    if (phys) slots_from_placement(c, R, phys);
    else if (R > 0 && build_replicas(c, R, err)) goto fail;
    /* a drifting step's law is new each step: its draws are not kept (digest 0) */
    c->digest = law ? 0 : ctx_digest(c);
    return c;
fail:
    routing_ctx_free(c);
    return NULL;
}

routing_ctx *routing_ctx_create(const scenario *s, const int *group_gpus, moe_error *err) {
    return routing_ctx_create_opts(s, group_gpus, NULL, err);
}

void routing_ctx_free(routing_ctx *c) {
    if (!c) return;
    if (c->tables)
        for (int l = 0; l < c->n_laws; l++) gsl_ran_discrete_free(c->tables[l]);
    free(c->tables);
    free(c->weights);
    free(c->gpus);
    free(c->rank_node);
    free(c->nodes);
    free(c->expert_rank);
    free(c->expert_node);
    free(c->expert_group);
    free(c->node_start);
    free(c->node_experts);
    free(c->slot_first); free(c->slot_count); free(c->slot_rank); free(c->slot_index);
    free(c);
}

int routing_ctx_copies(const routing_ctx *c, int expert) { return c->n_redundant ? c->slot_count[expert] : 1; }
int routing_ctx_copy_rank(const routing_ctx *c, int expert, int copy) {
    return c->n_redundant ? c->slot_rank[c->slot_first[expert] + copy] : c->expert_rank[expert];
}
int routing_ctx_ranks(const routing_ctx *c) { return c->n; }
int routing_ctx_tokens_per_rank(const routing_ctx *c) { return c->tokens_per_rank; }
int routing_ctx_n_nodes(const routing_ctx *c) { return c->n_nodes; }
const int *routing_ctx_nodes(const routing_ctx *c) { return c->nodes; }
const int *routing_ctx_rank_node(const routing_ctx *c) { return c->rank_node; }
const int *routing_ctx_gpus(const routing_ctx *c) { return c->gpus; }
int routing_ctx_layer_laws(const routing_ctx *c) { return c->n_laws; }
int routing_ctx_layer_law(const routing_ctx *c, int layer) {
    int l = layer % c->n_laws;
    return l < 0 ? l + c->n_laws : l;
}

/* ---- samples -------------------------------------------------------------------------------------- */
static void scratch_free(routing_scratch *x) {
    if (!x) return;
    if (x->rng) gsl_rng_free(x->rng);
    free(x->load);
    free(x->pairs);
    free(x->node_pairs);
    free(x->seen_expert);
    free(x->seen_group);
    free(x->seen_node);
    free(x->sent_rank);
    free(x->sent_node);
    free(x->unit_order);
    free(x->unit_start);
    free(x->unit_experts);
    free(x->unit_used);
    free(x->cand);
    free(x->routed);
    free(x->block);
    free(x->block_m);
    free(x);
}

static routing_scratch *scratch_alloc(const routing_ctx *c) {
    routing_scratch *x = moe_xcalloc(1, sizeof *x);
    if (!x) return NULL;
    size_t n = (size_t)c->n, nn = (size_t)c->n_nodes, E = (size_t)c->E;
    x->rng = gsl_rng_alloc(gsl_rng_mt19937);
    x->load = moe_xmalloc(n * E * sizeof *x->load);
    x->pairs = moe_xmalloc(n * n * sizeof *x->pairs);
    x->node_pairs = moe_xmalloc(n * nn * sizeof *x->node_pairs);
    x->seen_expert = moe_xmalloc(E * sizeof *x->seen_expert);
    x->seen_group = moe_xmalloc((size_t)c->n_groups * sizeof *x->seen_group);
    x->seen_node = moe_xmalloc(nn * sizeof *x->seen_node);
    x->sent_rank = moe_xmalloc(n * sizeof *x->sent_rank);
    x->sent_node = moe_xmalloc(nn * sizeof *x->sent_node);
    size_t units = (size_t)(c->n_groups > c->n_nodes ? c->n_groups : c->n_nodes);
    x->unit_order = moe_xmalloc(units * sizeof *x->unit_order);
    x->unit_start = moe_xmalloc((units + 1) * sizeof *x->unit_start);
    x->unit_experts = moe_xmalloc(E * sizeof *x->unit_experts);
    x->unit_used = moe_xmalloc(n * units * sizeof *x->unit_used);
    x->cand = moe_xmalloc(E * sizeof *x->cand);
    x->routed = moe_xmalloc(E * sizeof *x->routed);
    x->block = moe_xmalloc(n * ROUTING_BLOCK_TOKENS * (size_t)c->K * sizeof *x->block);
    x->block_m = moe_xmalloc(n * ROUTING_BLOCK_TOKENS * sizeof *x->block_m);
    if (!x->rng || !x->load || !x->pairs || !x->node_pairs || !x->seen_expert || !x->seen_group ||
        !x->seen_node || !x->sent_rank || !x->sent_node || !x->unit_order || !x->unit_start ||
        !x->unit_experts || !x->unit_used || !x->cand || !x->routed || !x->block || !x->block_m) {
        scratch_free(x);
        return NULL;
    }
    return x;
}

void routing_sample_free(routing_sample *s) {
    if (!s) return;
    free(s->expert_tokens);
    free(s->expert_routed);
    free(s->rank_tokens);
    free(s->slot_tokens);
    free(s->dispatch_tokens);
    free(s->dispatch_bytes);
    free(s->combine_bytes);
    free(s->node_tokens);
    free(s->dispatch_node_bytes);
    free(s->combine_node_bytes);
    free(s->choices);
    scratch_free(s->scratch);
    memset(s, 0, sizeof *s);
}

int routing_sample_init(const routing_ctx *c, routing_sample *s, moe_error *err) {
    memset(s, 0, sizeof *s);
    size_t n = (size_t)c->n, nn = (size_t)c->n_nodes;
    s->n_ranks = c->n;
    s->n_nodes = c->n_nodes;
    s->n_experts = c->E;
    s->top_k = c->K;
    s->tokens_per_rank = c->tokens_per_rank;
    s->capacity = c->capacity;
    s->expert_tokens = moe_xcalloc((size_t)c->E, sizeof(double));
    s->expert_routed = moe_xcalloc((size_t)c->E, sizeof(double));
    s->rank_tokens = moe_xcalloc(n, sizeof(double));
    s->slots_per_rank = c->n_redundant ? c->slots_per_rank : 0;
    if (c->n_redundant) s->slot_tokens = moe_xcalloc(n * (size_t)c->slots_per_rank, sizeof(double));
    s->dispatch_tokens = moe_xcalloc(n * n, sizeof(double));
    s->dispatch_bytes = moe_xcalloc(n * n, sizeof(double));
    s->combine_bytes = moe_xcalloc(n * n, sizeof(double));
    s->node_tokens = moe_xcalloc(n * nn, sizeof(double));
    s->dispatch_node_bytes = moe_xcalloc(n * nn, sizeof(double));
    s->combine_node_bytes = moe_xcalloc(n * nn, sizeof(double));
    if (c->keep_choices)
        s->choices = moe_xmalloc(n * (size_t)c->tokens_per_rank * (size_t)c->K * sizeof *s->choices);
    s->scratch = scratch_alloc(c);
    if (!s->expert_tokens || !s->expert_routed || !s->rank_tokens || !s->dispatch_tokens || !s->dispatch_bytes ||
        !s->combine_bytes || !s->node_tokens || !s->dispatch_node_bytes || !s->combine_node_bytes ||
        (c->keep_choices && !s->choices) || !s->scratch) {
        routing_sample_free(s);
        return moe_error_set(err, EXIT_RUNTIME, "routing: out of memory for a sample (%d ranks, %d experts)",
                             c->n, c->E);
    }
    return 0;
}

static int shape_matches(const routing_ctx *c, const routing_sample *s) {
    return s->scratch && s->n_ranks == c->n && s->n_nodes == c->n_nodes && s->n_experts == c->E &&
           s->top_k == c->K && s->tokens_per_rank == c->tokens_per_rank &&
           (!c->keep_choices || s->choices);
}

static void begin(const routing_ctx *c, routing_scratch *x) {
    size_t n = (size_t)c->n, nn = (size_t)c->n_nodes, E = (size_t)c->E;
    memset(x->load, 0, n * E * sizeof *x->load);
    memset(x->pairs, 0, n * n * sizeof *x->pairs);
    memset(x->node_pairs, 0, n * nn * sizeof *x->node_pairs);
    memset(x->seen_expert, 0, E * sizeof *x->seen_expert);
    memset(x->routed, 0, E * sizeof *x->routed);
    memset(x->seen_group, 0, (size_t)c->n_groups * sizeof *x->seen_group);
    memset(x->seen_node, 0, nn * sizeof *x->seen_node);
    memset(x->sent_rank, 0, n * sizeof *x->sent_rank);
    memset(x->sent_node, 0, nn * sizeof *x->sent_node);
    x->tok = x->sent_tok = 0;
    x->assignments = x->dropped = x->over = x->empty = 0;
}

/* ---- selection of one token's experts --------------------------------------------------------------- */
typedef struct {
    int got, groups, nodes;   /* experts taken; groups and nodes selected so far */
    int node[PICK_MAX_NODES + 1]; /* the first PICK_MAX_NODES nodes selected, in order (and a slot
                                     offer() writes when it selects none) */
} pick_state;

/* Offer expert e, the next one in the token's affinity ranking. Its group (node) is selected on first
 * appearance while fewer than topk_groups (node_limit) are; e is taken when both are selected.
 * Written without branches on the draw: whether a drawn expert is new, and its group and node, are
 * coin flips to the branch predictor under group and node limits (most draws are rejected once they
 * are full), and a mispredicted branch per draw cost more than the draw. */
static inline __attribute__((always_inline)) int offer(const routing_ctx *c, routing_scratch *x, pick_state *p, int e, int32_t *out) {
    uint32_t tok = x->tok;
    int pass = x->seen_expert[e] != tok;
    x->seen_expert[e] = tok;
    if (c->groups_on) {
        uint32_t *seen = &x->seen_group[c->expert_group[e]];
        int fresh = *seen != tok, room = p->groups < c->topk_groups, mark = pass & fresh & room;
        *seen = mark ? tok : *seen;
        p->groups += mark;
        pass &= (!fresh) | room;
    }
    if (c->nodes_on) {
        int nd = c->expert_node[e];
        uint32_t *seen = &x->seen_node[nd];
        int fresh = *seen != tok, room = p->nodes < c->node_limit, mark = pass & fresh & room;
        *seen = mark ? tok : *seen;
        p->node[p->nodes < PICK_MAX_NODES ? p->nodes : PICK_MAX_NODES] = nd;   /* counted only if marked */
        p->nodes += mark;
        pass &= (!fresh) | room;
    }
    out[p->got] = e;   /* kept only if it passed (out has K slots and got < K) */
    p->got += pass;
    return pass;
}

static inline int eligible(const routing_ctx *c, const routing_scratch *x, const pick_state *p, int e) {
    uint32_t tok = x->tok;
    if (x->seen_expert[e] == tok) return 0;
    if (c->groups_on && x->seen_group[c->expert_group[e]] != tok && p->groups == c->topk_groups) return 0;
    if (c->nodes_on && x->seen_node[c->expert_node[e]] != tok && p->nodes == c->node_limit) return 0;
    return 1;
}

/* Exact sampling from the eligible set by a linear scan: the rare path after many rejections. */
static void pick_by_scan(const routing_ctx *c, routing_scratch *x, pick_state *p, const double *w,
                         int32_t *out) {
    while (p->got < c->K) {
        double total = 0.0;
        int last = -1;
        for (int e = 0; e < c->E; e++)
            if (w[e] > 0.0 && eligible(c, x, p, e)) { total += w[e]; last = e; }
        if (last < 0) return;
        double u = gsl_rng_uniform(x->rng) * total;
        int pick = last;
        for (int e = 0; e < c->E; e++) {
            if (!(w[e] > 0.0) || !eligible(c, x, p, e)) continue;
            if (u < w[e]) { pick = e; break; }
            u -= w[e];
        }
        offer(c, x, p, pick, out);
    }
}

/* Exact sampling once the token's nodes are chosen, when they hold few experts (direct_when_full:
 * at most E/4): the next experts are a draw without replacement from the eligible experts of those
 * nodes, proportional to popularity (uniform for the uniform and hot laws, whose other experts are
 * uniform) -- the law rejection from all E gives, without the 3 in 4 or more draws it rejects. DeepSeek-
 * V3's 256 experts on EP 256 over 128 nodes with node_limit 4 leave 8 eligible: rejection spent
 * about 100 draws and a scan of all experts per pick. */
static void pick_from_nodes(const routing_ctx *c, routing_scratch *x, pick_state *p, const double *w,
                            int uniform, int32_t *out) {
    int32_t *cand = x->cand;
    int m = 0;
    /* the selected nodes in ascending order (the candidates' order, hence the draws, as a scan of all
     * nodes would give) */
    int sel[PICK_MAX_NODES];
    for (int a = 0; a < p->nodes; a++) {
        int v = p->node[a], b = a;
        for (; b > 0 && sel[b - 1] > v; b--) sel[b] = sel[b - 1];
        sel[b] = v;
    }
    /* eligible(), knowing that the nodes (and, called when they are, the groups) are all chosen and
     * these experts' nodes are among them: an expert not taken yet whose group is selected, which
     * holds for every expert of a selected node when nodes nest in groups. Branch-free: whether an
     * expert was taken is a coin flip to the predictor. */
    uint32_t tok = x->tok;
    int check_group = c->groups_on && !c->nodes_in_groups;
    for (int q = 0; q < p->nodes; q++) {
        int k = sel[q];
        for (int i = c->node_start[k]; i < c->node_start[k + 1]; i++) {
            int e = c->node_experts[i];
            int ok = x->seen_expert[e] != tok;
            if (check_group) ok &= x->seen_group[c->expert_group[e]] == tok;
            if (!uniform) ok &= w[e] > 0.0;
            cand[m] = e;
            m += ok;
        }
    }
    while (p->got < c->K && m > 0) {
        int j = 0;
        if (uniform) {
            j = (int)gsl_rng_uniform_int(x->rng, (unsigned long)m);
        } else {
            double total = 0.0;
            for (int i = 0; i < m; i++) total += w[cand[i]];
            double u = gsl_rng_uniform(x->rng) * total;
            for (j = 0; j < m - 1 && u >= w[cand[j]]; j++) u -= w[cand[j]];
        }
        int e = cand[j];
        cand[j] = cand[--m];
        offer(c, x, p, e, out);
    }
}

static inline int draw_expert(const routing_ctx *c, gsl_rng *rng, const gsl_ran_discrete_t *table) {
    switch (c->dist) {
    case ROUTE_UNIFORM: return uniform_below(c, rng);
    case ROUTE_HOT: {   /* uniform over the E-1 other experts, or a given law's popularities */
        if (table) return (int)gsl_ran_discrete(rng, table);
        int e = uniform_below(c, rng);
        return e + (e >= c->hot_expert);
    }
    default: return (int)gsl_ran_discrete(rng, table);
    }
}

/* The token's experts, in affinity order, into out[0..K-1]; returns how many (K unless degenerate). */
static inline __attribute__((always_inline)) int choose_token(const routing_ctx *c, routing_scratch *x, int law, int32_t *out) {
    pick_state p;   /* p.node is read only up to p.nodes: not cleared per token */
    p.got = p.groups = p.nodes = 0;
    const gsl_ran_discrete_t *table = c->tables ? c->tables[law] : NULL;
    if (c->dist == ROUTE_HOT && gsl_rng_uniform(x->rng) < c->hot_share)
        offer(c, x, &p, c->hot_expert, out);   /* the hot expert heads this token's ranking */
    else if (c->dist == ROUTE_HOT)
        x->seen_expert[c->hot_expert] = x->tok; /* ... or is absent from it */
    int rejections = 0;
    while (p.got < c->K) {
        if (c->direct_when_full && p.nodes == c->node_limit && (!c->groups_on || p.groups == c->topk_groups)) {
            pick_from_nodes(c, x, &p, table ? c->weights + (size_t)law * c->E : NULL, !table, out);
            break;
        }
        int e = draw_expert(c, x->rng, table);
        rejections += !offer(c, x, &p, e, out);
        if (rejections > REJECT_LIMIT(c->K)) {   /* it only grows on a rejection */
            pick_by_scan(c, x, &p, c->weights + (size_t)law * c->E, out);
            break;
        }
    }
    return p.got;
}

/* ---- the balanced law -----------------------------------------------------------------------------------
 * Forced balance made exact. The token's experts come from `pick` units: the nodes of the group under
 * node-limited routing (pick = node_limit), else the expert groups under group-limited routing (pick =
 * topk_groups), else one unit of all experts. Token t of source rank i visits the units at positions
 * g*pick .. g*pick+pick-1 (mod units), g = t + i, of this draw's random unit order and takes, from
 * each, the next K/pick experts (the remainder spread over rotating positions) of that unit's random
 * expert order, cyclically, with a cursor per (source rank, unit). The balance holds per source rank,
 * as the capacity rule counts (kernels/moe_capacity.h): each rank's T tokens visit every unit
 * T*pick/units times and every expert of a unit takes the same number of its pairs, so each expert
 * receives exactly T*K/E pairs from every rank (G*K/E from the group's G tokens) whenever the counts
 * divide (equally sized units; pick divides K), the token's experts are distinct and respect the node
 * or group limit, and nothing is over a capacity factor of 1. The draw's randomness is in the two
 * orders only. */
static void balanced_begin(const routing_ctx *c, routing_scratch *x) {
    int by_node = c->nodes_on, by_group = !by_node && c->groups_on;
    int U = by_node ? c->n_nodes : by_group ? c->n_groups : 1;
    x->n_units = U;
    x->unit_pick = by_node ? c->node_limit : by_group ? c->topk_groups : 1;
    int at = 0;
    for (int u = 0; u < U; u++) {
        x->unit_start[u] = at;
        for (int e = 0; e < c->E; e++) {
            int unit = by_node ? c->expert_node[e] : by_group ? c->expert_group[e] : 0;
            if (unit == u) x->unit_experts[at++] = e;
        }
        x->unit_order[u] = u;
    }
    memset(x->unit_used, 0, (size_t)c->n * U * sizeof *x->unit_used);
    x->unit_start[U] = at;
    gsl_ran_shuffle(x->rng, x->unit_order, (size_t)U, sizeof *x->unit_order);
    for (int u = 0; u < U; u++)
        gsl_ran_shuffle(x->rng, x->unit_experts + x->unit_start[u],
                        (size_t)(x->unit_start[u + 1] - x->unit_start[u]), sizeof *x->unit_experts);
}

static int balanced_token(const routing_ctx *c, routing_scratch *x, int rank, uint64_t t, int32_t *out) {
    int U = x->n_units, P = x->unit_pick, got = 0;
    int *used = x->unit_used + (size_t)rank * U;
    uint64_t g = t + (uint64_t)rank;   /* the ranks start at different units */
    for (int a = 0; a < P; a++) {
        int u = x->unit_order[(g * (uint64_t)P + (uint64_t)a) % (uint64_t)U];
        int take = c->K / P + ((int)((a + g) % (uint64_t)P) < c->K % P);
        int n_u = x->unit_start[u + 1] - x->unit_start[u];
        for (int b = 0; b < take && b < n_u; b++)
            out[got++] = x->unit_experts[x->unit_start[u] + (used[u] + b) % n_u];
        used[u] = (used[u] + take) % (n_u > 0 ? n_u : 1);
    }
    return got;
}

/* ---- accounting -------------------------------------------------------------------------------------- */
/* Token of source rank i with experts e[0..m-1]: capacity, drops, dedup per destination rank and node.
 * `rec` (may be NULL) receives the K slots as stored in routing_sample.choices. */
static inline __attribute__((always_inline)) void account_token(const routing_ctx *c, routing_scratch *x, int i, const int32_t *e, int m,
                                 int32_t *rec) {
    uint32_t tok = ++x->sent_tok;
    int own = c->rank_node[i];
    int32_t *pairs = x->pairs + (size_t)i * c->n;
    int32_t *node_pairs = x->node_pairs + (size_t)i * c->n_nodes;
    int32_t *load = x->load + (size_t)i * c->E;   /* the capacity counts this source rank's pairs */
    x->assignments += m;
    x->empty += c->K - m;
    for (int k = 0; k < m; k++) {
        int ex = e[k];
        x->routed[ex]++;
        if (c->capacity >= 0 && load[ex] >= c->capacity) {
            if (c->drop) {
                x->dropped++;
                if (rec) rec[k] = ROUTING_DROPPED(ex);
                continue;
            }
            x->over++;
        }
        int j = c->n_redundant ? c->slot_rank[c->slot_first[ex] + load[ex] % c->slot_count[ex]] : c->expert_rank[ex];
        load[ex]++;
        if (rec) rec[k] = ex;
        int nd = c->rank_node[j];
        if (!c->dedup) {                         /* alltoall: every pair is a copy of its own */
            pairs[j]++;
            if (nd != own) node_pairs[nd]++;
            continue;
        }
        /* one copy per destination rank, one RDMA copy per other destination node; without branches
         * on them (whether a token's experts share a rank or a node is a coin flip to the predictor) */
        int fresh = x->sent_rank[j] != tok;
        x->sent_rank[j] = tok;
        pairs[j] += fresh;
        int remote = fresh & (nd != own), node_fresh = remote & (x->sent_node[nd] != tok);
        x->sent_node[nd] = remote ? tok : x->sent_node[nd];
        node_pairs[nd] += node_fresh;
    }
    if (rec)
        for (int k = m; k < c->K; k++) rec[k] = ROUTING_NONE;
}

static void finish(const routing_ctx *c, const routing_scratch *x, routing_sample *s) {
    int n = c->n, nn = c->n_nodes;
    double db = c->hidden * c->dispatch_dtype_bytes, cb = c->hidden * c->combine_dtype_bytes;
    for (int i = 0; i < n; i++) s->rank_tokens[i] = 0.0;
    if (s->slot_tokens) memset(s->slot_tokens, 0, (size_t)n * c->slots_per_rank * sizeof *s->slot_tokens);
    for (int e = 0; e < c->E; e++) {
        int64_t kept = 0;
        for (int i = 0; i < n; i++) kept += x->load[(size_t)i * c->E + e];
        s->expert_tokens[e] = (double)kept;
        s->expert_routed[e] = (double)x->routed[e];
        if (!c->n_redundant) { s->rank_tokens[c->expert_rank[e]] += (double)kept; continue; }
        /* the q-th pair of source rank i went to slot q mod count: slot r took ceil((k - r) / count) */
        int cnt = c->slot_count[e];
        for (int r = 0; r < cnt; r++) {
            int64_t got = 0;
            for (int i = 0; i < n; i++) {
                int64_t k = x->load[(size_t)i * c->E + e];
                got += k > r ? (k - r + cnt - 1) / cnt : 0;
            }
            int slot = c->slot_first[e] + r, j = c->slot_rank[slot];
            s->rank_tokens[j] += (double)got;
            s->slot_tokens[(size_t)j * c->slots_per_rank + c->slot_index[slot]] = (double)got;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double t = x->pairs[(size_t)i * n + j];
            s->dispatch_tokens[(size_t)i * n + j] = t;
            s->dispatch_bytes[(size_t)i * n + j] = t * db;
            s->combine_bytes[(size_t)j * n + i] = t * cb;
        }
    for (size_t a = 0; a < (size_t)n * nn; a++) {
        double t = x->node_pairs[a];
        s->node_tokens[a] = t;
        s->dispatch_node_bytes[a] = t * db;
        s->combine_node_bytes[a] = t * cb;
    }
    s->capacity = c->capacity;
    s->assignments = x->assignments;
    s->dropped = x->dropped;
    s->over_capacity = x->over;
    s->empty_slots = x->empty;
    s->dropped_fraction = x->assignments > 0 ? (double)x->dropped / (double)x->assignments : 0.0;
}

int routing_draw(const routing_ctx *ctx, int layer, int micro_batch, int group, routing_sample *s) {
    if (!shape_matches(ctx, s)) return -1;
    /* A local copy of the context: the counters written through int32_t pointers in the token loop
     * could alias the context's int fields, which would force a reload of every field per access. */
    routing_ctx local = *ctx;
    if (local.groups_are_nodes) local.groups_on = 0;
    const routing_ctx *c = &local;
    routing_scratch *x = s->scratch;
    begin(c, x);
    gsl_rng_set(x->rng, routing_seed(c->seed, ROUTING_TAG_DRAW, layer, micro_batch, group));
    int law = routing_ctx_layer_law(c, layer);
    int balanced = c->dist == ROUTE_BALANCED;
    if (balanced) balanced_begin(c, x);
    /* Tokens are chosen in the generator's order (token t of every source rank, then t + 1) and
     * accounted a block of ROUTING_BLOCK_TOKENS at a time, source rank by source rank: a rank's
     * capacity counts, pair and node rows then stay in cache for the block instead of being fetched
     * again for every token. The result is the same: the accounting of a source rank's tokens keeps
     * their order (its capacity counts are its own), and the rest are sums of integers. */
    size_t T = (size_t)c->tokens_per_rank, K = (size_t)c->K, B = ROUTING_BLOCK_TOKENS;
    for (size_t t0 = 0; t0 < T; t0 += B) {
        size_t nb = T - t0 < B ? T - t0 : B;
        for (size_t t = t0; t < t0 + nb; t++)
            for (int i = 0; i < c->n; i++) {
                x->tok++;
                size_t at = (size_t)i * B + (t - t0);
                int32_t *out = x->block + at * K;
                x->block_m[at] = balanced ? balanced_token(c, x, i, t, out) : choose_token(c, x, law, out);
            }
        for (int i = 0; i < c->n; i++)
            for (size_t t = t0; t < t0 + nb; t++) {
                size_t at = (size_t)i * B + (t - t0);
                account_token(c, x, i, x->block + at * K, x->block_m[at],
                              s->choices ? s->choices + ((size_t)i * T + t) * K : NULL);
            }
    }
    s->layer = layer;
    s->micro_batch = micro_batch;
    s->group = group;
    finish(c, x, s);
    return 0;
}

int routing_assign(const routing_ctx *c, const int32_t *experts, routing_sample *s) {
    if (!shape_matches(c, s)) return -1;
    routing_scratch *x = s->scratch;
    begin(c, x);
    int32_t picked[c->K];
    size_t T = (size_t)c->tokens_per_rank, K = (size_t)c->K;
    for (size_t t = 0; t < T; t++)
        for (int i = 0; i < c->n; i++) {
            x->tok++;
            const int32_t *row = experts + ((size_t)i * T + t) * K;
            int m = 0;
            for (size_t k = 0; k < K; k++) {
                int e = row[k];
                if (e == -1) continue;
                if (e < 0 || e >= c->E || x->seen_expert[e] == x->tok) return -1;
                x->seen_expert[e] = x->tok;
                picked[m++] = e;
            }
            account_token(c, x, i, picked, m, s->choices ? s->choices + ((size_t)i * T + t) * K : NULL);
        }
    s->layer = s->micro_batch = s->group = -1;
    finish(c, x, s);
    return 0;
}


/* ---- pool ---------------------------------------------------------------------------------------------- */
struct routing_pool {
    const routing_ctx *ctx;
    int n_laws;              /* min(max_laws, ctx laws) */
    int per_law;
    routing_sample *slots;   /* [n_laws * per_law] drawn by this pool */
    unsigned char *ready;
    struct kept_draw_s **kept;   /* [n_laws * per_law]: the process's draw a slot uses, or NULL */
    int draws;
};

routing_pool *routing_pool_create(const routing_ctx *c, int samples_per_layer, int max_laws,
                                  moe_error *err) {
    if (samples_per_layer < 1 || max_laws < 0) {
        moe_error_set(err, EXIT_BADINPUT, "routing pool: samples_per_layer = %d, max_laws = %d; expected "
                      "samples_per_layer >= 1 and max_laws >= 0", samples_per_layer, max_laws);
        return NULL;
    }
    int laws = max_laws > 0 && max_laws < c->n_laws ? max_laws : c->n_laws;
    routing_pool *p = moe_xcalloc(1, sizeof *p);
    size_t n = (size_t)laws * (size_t)samples_per_layer;
    if (p) {
        p->slots = moe_xcalloc(n, sizeof *p->slots);
        p->ready = moe_xcalloc(n, 1);
        p->kept = moe_xcalloc(n, sizeof *p->kept);
    }
    if (!p || !p->slots || !p->ready || !p->kept) {
        if (p) { free(p->slots); free(p->ready); free(p->kept); free(p); }
        moe_error_set(err, EXIT_RUNTIME, "routing pool: out of memory");
        return NULL;
    }
    p->ctx = c;
    p->n_laws = laws;
    p->per_law = samples_per_layer;
    return p;
}

/* ---- the process's draws ----------------------------------------------------------------------------
 * A pool's draw (law, slot) is a function of its context's digest and of (law, slot) alone: routing_draw
 * seeds its generator from (seed, law, slot) and resets every counter. The layouts of a search that one
 * worker process simulates share EP group shapes, so their pools ask for the same draws. A pool hands
 * its draws to the process when it is freed (no copy), up to CACHE_MAX_BYTES in all (the oldest that
 * no pool uses go first), and a later pool that asks for one uses it in place instead of drawing it
 * again (tens of milliseconds, seconds at EP 256). */
#define CACHE_MAX_BYTES (512.0 * 1024 * 1024)
typedef struct kept_draw_s { uint64_t key; double bytes; int users; routing_sample s; } kept_draw;
static kept_draw **g_kept;   /* oldest first; each entry's address is stable while pools use it */
static int g_kept_n, g_kept_cap;
static double g_kept_bytes;

static uint64_t draw_key(const routing_ctx *c, int law, int slot) {
    fnv f = {c->digest};
    FNV_VAL(&f, law);
    FNV_VAL(&f, slot);
    return f.h;
}

/* The bytes a kept draw holds. */
static double sample_bytes(const routing_sample *s) {
    double n = s->n_ranks, nn = s->n_nodes;
    return 8.0 * (2 * s->n_experts + n + n * s->slots_per_rank + 3 * n * n + 3 * n * nn) +
           (s->choices ? 4.0 * n * s->tokens_per_rank * s->top_k : 0);
}

static kept_draw *kept_find(uint64_t key) {
    for (int i = 0; i < g_kept_n; i++)
        if (g_kept[i]->key == key) return g_kept[i];
    return NULL;
}

static void kept_drop(int i) {
    g_kept_bytes -= g_kept[i]->bytes;
    routing_sample_free(&g_kept[i]->s);
    free(g_kept[i]);
    memmove(g_kept + i, g_kept + i + 1, (size_t)(g_kept_n - i - 1) * sizeof *g_kept);
    g_kept_n--;
}

/* Take over `s` (its arrays; *s is left empty) as the draw of `key`, or free it. */
static void kept_put(uint64_t key, routing_sample *s) {
    double bytes = sample_bytes(s);
    for (int i = 0; i < g_kept_n && g_kept_bytes + bytes > CACHE_MAX_BYTES;)
        if (g_kept[i]->users == 0) kept_drop(i);
        else i++;
    if (kept_find(key) || g_kept_bytes + bytes > CACHE_MAX_BYTES) { routing_sample_free(s); return; }
    if (g_kept_n == g_kept_cap) {
        g_kept_cap = g_kept_cap ? 2 * g_kept_cap : 16;
        g_kept = moe_xrealloc(g_kept, (size_t)g_kept_cap, sizeof *g_kept);
    }
    kept_draw *e = moe_xmalloc(sizeof *e);
    *e = (kept_draw){.key = key, .bytes = bytes, .s = *s};
    scratch_free(e->s.scratch);   /* a kept draw is only read */
    e->s.scratch = NULL;
    memset(s, 0, sizeof *s);
    g_kept[g_kept_n++] = e;
    g_kept_bytes += bytes;
}

void routing_forget(void) {
    for (int i = 0; i < g_kept_n;)
        if (g_kept[i]->users == 0) kept_drop(i);
        else i++;
}

static size_t slot_of(const routing_pool *p, int layer, int micro_batch, int group) {
    int law = routing_ctx_layer_law(p->ctx, layer) % p->n_laws;
    int slot = (int)(routing_seed(0, 0, law, micro_batch, group) % (uint32_t)p->per_law);
    return (size_t)law * p->per_law + slot;
}

/* Slot idx from a draw the process keeps (1), or its arrays allocated for drawing it (0); -1 when out
 * of memory. Counts the slot as drawn. */
static int slot_prepare(routing_pool *p, size_t idx) {
    int law = (int)(idx / (size_t)p->per_law), slot = (int)(idx % (size_t)p->per_law);
    uint64_t key = p->ctx->digest ? draw_key(p->ctx, law, slot) : 0;
    kept_draw *k = key ? kept_find(key) : NULL;
    p->draws++;
    if (k) {
        k->users++;
        p->kept[idx] = k;
        return 1;
    }
    moe_error err;
    return routing_sample_init(p->ctx, &p->slots[idx], &err) ? -1 : 0;
}

static void slot_draw(routing_pool *p, size_t idx) {
    routing_draw(p->ctx, (int)(idx / (size_t)p->per_law), (int)(idx % (size_t)p->per_law), 0, &p->slots[idx]);
    p->ready[idx] = 1;
}

const routing_sample *routing_pool_get(routing_pool *p, int layer, int micro_batch, int group) {
    size_t idx = slot_of(p, layer, micro_batch, group);
    if (p->kept[idx]) return &p->kept[idx]->s;
    if (!p->ready[idx]) {
        int got = slot_prepare(p, idx);
        if (got < 0) return NULL;
        if (got) return &p->kept[idx]->s;
        slot_draw(p, idx);
    }
    return &p->slots[idx];
}

/* ---- drawing a pool's slots at once ------------------------------------------------------------------
 * Each draw reads the immutable context and writes only its own sample and scratch (its own
 * generator seeded from its key), so the draws of a pool can run in threads and give the same bytes
 * as one after the other; the process's kept draws are looked up and the arrays allocated before the
 * threads start, in the caller's thread. */
static int g_threads = 1;

void routing_set_threads(int threads) { g_threads = threads < 1 ? 1 : threads > ROUTING_MAX_THREADS ? ROUTING_MAX_THREADS : threads; }
int routing_threads(void) { return g_threads; }

typedef struct {
    routing_pool *p;
    const size_t *todo;
    int n, first, stride;
} fill_share;

static void *fill_worker(void *arg) {
    fill_share *w = arg;
    for (int i = w->first; i < w->n; i += w->stride) slot_draw(w->p, w->todo[i]);
    return NULL;
}

int routing_pool_fill(routing_pool *p, int n_layers, int n_micro_batches, int group, moe_error *err) {
    size_t slots = (size_t)p->n_laws * (size_t)p->per_law;
    size_t *todo = moe_xmalloc((slots > 0 ? slots : 1) * sizeof *todo);
    unsigned char *queued = moe_xcalloc(slots > 0 ? slots : 1, 1);
    if (!todo || !queued) {
        free(todo);
        free(queued);
        return moe_error_set(err, EXIT_RUNTIME, "routing pool: out of memory");
    }
    int m = 0;
    for (long i = 0; i < (long)n_layers * n_micro_batches; i++) {
        size_t idx = slot_of(p, (int)(i / n_micro_batches), (int)(i % n_micro_batches), group);
        if (p->kept[idx] || p->ready[idx] || queued[idx]) continue;
        queued[idx] = 1;
        int got = slot_prepare(p, idx);
        if (got < 0) {
            free(todo);
            free(queued);
            return moe_error_set(err, EXIT_RUNTIME, "routing: out of memory for a sample (%d ranks, %d experts)",
                                 p->ctx->n, p->ctx->E);
        }
        if (got == 0) todo[m++] = idx;
    }
    int T = g_threads < m ? g_threads : m;
    if (T < 1) T = 1;
    pthread_t tid[ROUTING_MAX_THREADS];
    fill_share share[ROUTING_MAX_THREADS];
    int started[ROUTING_MAX_THREADS] = {0};
    for (int t = 0; t < T; t++) share[t] = (fill_share){p, todo, m, t, T};
    for (int t = 1; t < T; t++) started[t] = pthread_create(&tid[t], NULL, fill_worker, &share[t]) == 0;
    fill_worker(&share[0]);   /* the caller's thread takes share 0, and any share whose thread did not start */
    for (int t = 1; t < T; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else fill_worker(&share[t]);
    }
    free(todo);
    free(queued);
    return 0;
}

int routing_pool_draws(const routing_pool *p) { return p->draws; }

void routing_pool_free(routing_pool *p) {
    if (!p) return;
    size_t n = (size_t)p->n_laws * (size_t)p->per_law;
    for (size_t i = 0; i < n; i++) {
        if (p->kept[i]) p->kept[i]->users--;
        if (!p->ready[i]) continue;
        int law = (int)(i / (size_t)p->per_law), slot = (int)(i % (size_t)p->per_law);
        if (p->ctx->digest) kept_put(draw_key(p->ctx, law, slot), &p->slots[i]);   /* the process keeps it */
        else routing_sample_free(&p->slots[i]);
    }
    free(p->slots);
    free(p->ready);
    free(p->kept);
    free(p);
}
