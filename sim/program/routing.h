/* routing.h — MoE token routing of one EP group, per (MoE layer, micro-batch): who sends how many
 * tokens to whom, how many token-expert pairs each expert and rank computes, and what is dropped.
 *
 * ---- Model -------------------------------------------------------------------------------------
 * Every rank of the EP group holds `tokens_per_rank` tokens (micro_batch * seq_len / tp). Each token
 * picks top_k DISTINCT experts. The draw is the Plackett-Luce law that a Gumbel-top-k router with
 * expert popularity p_e produces: the token's experts are a sample without replacement with
 * probabilities proportional to p_e. We realise it by drawing from p (gsl_ran_discrete: Walker alias
 * table, preprocessed once per distribution and layer; or gsl_rng_uniform_int when p is uniform)
 * and rejecting experts already seen, which is exact (rejection from the remaining set is sampling
 * proportional to p over it) and costs ~K draws per token instead of E Gumbel variates + log():
 * 2M assignments take ~2.3M O(1) draws, where Gumbel-top-k would need 67M variates per draw.
 *
 * Distributions (routing.distribution):
 *   uniform  p_e = 1/E.
 *   zipf     p_e ~ rank(e)^-zipf_s; the popularity ranking is a permutation of the experts drawn per
 *            MoE layer (gsl_ran_shuffle seeded by routing_seed(seed, TAG_ZIPF, layer, 0, 0)), so the
 *            hot experts, and the ranks that hold them, differ from layer to layer.
 *   hot      expert `hot_expert` is in a token's top-k with probability hot_share (so it receives
 *            hot_share of ALL TOKENS, the seed's incident: "one expert got > 60% of tokens"); the
 *            token's other experts are uniform over the remaining E-1. hot_share is a share of tokens,
 *            not of token-expert assignments: with distinct top-k an expert can receive at most 1/K of
 *            the assignments, so "60% of assignments" would be infeasible for K=8. For K=1 both agree.
 *            Uniform routing gives every expert K/E of the tokens (3.1% for DeepSeek-V3).
 *   balanced Megatron's forced load balance (moe_router_force_load_balancing, the setting of the
 *            published MoE benchmarks) made exact: every expert receives exactly its share T*K/E of
 *            every source rank's T tokens' pairs when the counts divide, the tokens' experts otherwise
 *            random and within the group / node limits (routing.c, "the balanced law"). Nothing is
 *            over capacity.
 *   trace    p_e proportional to per-expert token counts read from routing.trace; MoE layer L uses
 *            trace layer L mod (layers in the file). Format (JSON, one file):
 *              {"format": "moesim-expert-load/1",
 *               "experts": 256,                          (optional; must equal model.experts)
 *               "layers": [[c_0, c_1, ..., c_255], ...]} (one array of E counts per MoE layer)
 *            Counts are non-negative numbers (integers or averages), each layer sums to > 0 and has at
 *            least top_k non-zero experts. A relative path is taken relative to the working directory
 *            when it exists there, else relative to the scenario file's directory. Note: counts are
 *            used as popularities; with K > 1 sampling without replacement flattens extreme skew
 *            (an expert can take at most one slot per token), so a trace whose hottest expert exceeds
 *            T tokens cannot be reproduced exactly.
 *
 * Constrained routing (DeepSeek-V3), applied in this order on the token's affinity ranking:
 *   group-limited  model.expert_groups groups of consecutive experts, model.topk_groups selected
 *                  (off when either is 0 or topk_groups >= expert_groups);
 *   node-limited   routing.node_limit M: the token's experts lie on at most M nodes of the group
 *                  (off when 0 or >= the nodes the group spans).
 *   A group (node) is selected by its best expert affinity, i.e. by the first appearance of one of its
 *   experts in the token's Plackett-Luce ranking; the token's experts are then its top-k within the
 *   selected groups and nodes. Walking the ranking once does all three exactly. (DeepSeek-V3 scores a
 *   group by the sum of its top-2 affinities; "best affinity" is what the node-limited routing of
 *   DeepEP and seed 003 describe and has this exact sampling form.)
 *
 * Placement: experts map to EP ranks contiguously (E/ep per rank: rank = e / (E/ep)); EP rank i is
 * global GPU group_gpus[i], on node group_gpus[i] / gpus_per_node.
 *
 * Redundant experts (routing.redundant_experts R > 0; DeepSeek's EPLB, github deepseek-ai/EPLB, and
 * the DeepSeek-V3 report's redundant experts, section 3.4): R extra expert slots per EP group hold
 * replicas of the most loaded experts, and an expert's tokens are split over its copies. Which
 * experts: EPLB's replicate rule (eplb.py, replicate_experts): each extra slot goes to the expert
 * with the largest expected load per copy, load / copies (ties: the lowest id), the expected loads
 * being the law's (routing_expected_load: the hot share, popularity elsewhere).
 * Where: EPLB's balanced packing applied to the replicas (the experts' own slots stay contiguous):
 * by decreasing load per copy, each replica goes to the least loaded rank that does not hold that
 * expert yet and has a free extra slot (ceil(R / ep) per rank). Split: the q-th pair a source rank
 * sends expert e goes to copy q mod copies, so each copy computes ceil or floor of 1/copies of every
 * source rank's pairs: a hot expert of load L with r replicas leaves L / (1 + r) on its holder.
 * This is the oracle (the law's expected load is known at every step, the move is free); a step's law
 * may give a placement instead (routing_law.placement: EPLB's full rebalance from measured loads,
 * routing.eplb_interval_steps, eplb.h), whose slots are read as they are. Capacity and node-limited
 * routing count the logical expert at its home (a replica on another node may take a token past its
 * node limit; EPLB's hierarchical placement keeps every copy on its home's node).
 *
 * Capacity (routing.capacity_factor C > 0): the rule of kernels/moe_capacity.h, shared with the
 * kernels' dispatch layout and live mode. Every source rank applies it to its own tokens: expert e
 * accepts from EP rank i at most
 *   capacity = moe_capacity(C, tokens_per_rank, K, E) = ceil(C * tokens_per_rank * K / E) pairs,
 * the first ones in rank i's token order (a token's experts in affinity order); the later ones are
 * over capacity (Megatron's drop_policy "position"). Draws walk tokens interleaved across source
 * ranks (token 0 of every rank, then token 1, ...); the drops do not depend on that order because each
 * rank counts only its own pairs. drop=true: pairs over capacity are dropped, not dispatched (the token
 * skips that expert through the residual). drop=false (dropless): nothing is dropped, the hot rank receives and
 * computes more; `over_capacity` counts what a capped run would have dropped.
 *
 * ---- Outputs (one routing_sample = one layer, micro-batch, EP group) ------------------------------
 * All matrices are row-major doubles (integer-valued token counts are exact up to 2^53):
 *   expert_tokens[e]           token-expert pairs expert e computes (after drops)
 *   rank_tokens[i]             token-expert pairs rank i computes = sum of its experts (expert GEMM M)
 *   dispatch_tokens[i*n+j]     distinct (token, destination rank) pairs rank i -> rank j after drops: a
 *                              token going to two experts on one rank is sent ONCE (DeepEP).
 *                              routing.dispatcher alltoall (Megatron's MoEAlltoAllTokenDispatcher
 *                              permutes by expert and splits the all-to-all by expert counts): every
 *                              token-expert pair, no deduplication. The diagonal holds tokens kept
 *                              local (no transfer).
 *   dispatch_bytes[i*n+j]      dispatch_tokens * hidden * dtype_bytes(precision.dispatch)
 *   combine_bytes[j*n+i]       dispatch_tokens[i*n+j] * hidden * dtype_bytes(precision.combine): the
 *                              combine sends every dispatched token back (transpose)
 *   node_tokens[i*n_nodes+k]   distinct (token, destination node) pairs rank i -> node k for k != own
 *                              node (0 on the own node): DeepEP sends one RDMA copy per destination
 *                              node, then fans out over NVLink. node_tokens[i][k] <= sum over ranks j
 *                              on node k of dispatch_tokens[i][j]; alltoall: equal to that sum (every
 *                              pair crosses the NIC itself).
 *   dispatch_node_bytes        node_tokens * hidden * dispatch dtype  (a2a_pattern.node_bytes)
 *   combine_node_bytes[i*n_nodes+k]  node_tokens * hidden * combine dtype: the combine direction,
 *                              node k -> rank i (partial outputs reduced inside node k, sent once)
 * Nodes are indexed 0..n_nodes-1 in ascending global node id (routing_ctx_nodes()).
 *
 * ---- Performance and the sample pool (for the step simulator) -------------------------------------
 * One draw is O(tokens * K) with no allocation. The seed-4096 shape (64 ranks x 4096 tokens = 2.1M
 * assignments, 256 experts, top-8) measured by tests/bench_routing.c on the shared 2-core dev VM
 * (CPU time): ~30 ms unconstrained, ~45 ms with groups 8/4 + node_limit 4 (half of the draws are
 * rejected by the limits once they are full), ~95 ms for zipf 1.2 (duplicates of the popular
 * experts). A third of it is mt19937; accepting, rejecting and the per-rank and per-node dedup are
 * written without branches on the draw (they were coin flips to the branch predictor). A step has 58 MoE layers x 60 micro-batches x 4 groups, far too many draws, so
 * the step simulator should draw a POOL: routing_pool_create(ctx, samples_per_layer, max_laws)
 * holds `samples_per_layer` distinct samples per distinct layer law (zipf/trace: one law per MoE
 * layer, optionally capped to max_laws laws cycled over the layers; uniform/hot: the law is the same
 * in every layer, so all layers share the same samples_per_layer samples) and maps every
 * (layer, micro-batch, group) onto one of them by a hash. Samples are drawn lazily on first use.
 * Cost: (distinct laws x samples_per_layer) draws and as many samples of memory (~150 KB each at
 * ep=64). Suggested for the <= 2 s step: uniform/hot 2-4 samples in all (~0.1-0.4 s); zipf/trace
 * max_laws 4-8 with 1 sample each. A sample drives every micro-batch and group mapped to it, so the
 * step sees the imbalance of a real draw (which rank is hot, how skewed) rather than an average.
 *
 * ---- Determinism ------------------------------------------------------------------------------------
 * Every draw seeds its own gsl_rng_mt19937 with routing_seed(S, TAG_DRAW, layer, micro_batch, group):
 * same scenario + key -> bit-identical sample, in any order, in any thread. S is the draws' seed of
 * the training step (routing_step_seed): the scenario's seed for step 0 (every one-step run, and a
 * law-less context), a mix of it with k for step k of routing.steps, so that every step routes fresh
 * tokens, reproducibly, and step k's draws are those of a one-step run at step k.
 *
 * ---- Ownership --------------------------------------------------------------------------------------
 * routing_ctx: created by routing_ctx_create*, freed by routing_ctx_free; immutable after creation
 *   (draws from several threads are safe with one routing_sample each). It copies what it needs from
 *   the scenario and group_gpus; neither has to outlive it.
 * routing_sample: caller-owned struct; routing_sample_init allocates its arrays (and private scratch)
 *   for one ctx's shape, routing_sample_free releases them. Draws overwrite it in place.
 * routing_pool: owns its samples; pointers returned by routing_pool_get stay valid until
 *   routing_pool_free. The pool is not thread-safe (lazy fill; routing_pool_fill draws in threads of
 *   its own). The ctx must outlive the pool.
 */
#ifndef MOESIM_ROUTING_H
#define MOESIM_ROUTING_H

#include <stdint.h>

#include "sim/base/errors.h"
#include "sim/scenario/scenario.h"

typedef struct routing_ctx routing_ctx;
typedef struct routing_scratch routing_scratch;

/* A law given instead of the scenario's (routing_drift.h: the law of one step of a drifting run),
 * for routing.distribution "uniform" or "hot": expert hot_expert heads a token's ranking with
 * probability hot_share (0: no hot expert), the token's other experts are Plackett-Luce over
 * `weights` (E popularities, the hot expert's ignored; NULL: all equal, drawn exactly as "uniform" /
 * "hot" draw them). draw_step: the training step whose tokens are drawn (the draws' seed is
 * routing_step_seed(scenario.seed, draw_step); 0 = the scenario's own draws). */
typedef struct {
    double hot_share;
    int hot_expert;
    const double *weights;
    int draw_step;
    /* routing.redundant_experts R > 0: the EP group's placement, expert of physical slot p of rank j at
     * placement[j x (E + R) / ep + p] (eplb.h's eplb_rebalance), each expert's first copy its home for
     * the node and group limits; NULL: the oracle from the law's expected loads (below) */
    const int *placement;
} routing_law;
/* Expected token-expert pairs per token of each expert under `law` (sums to top_k): the hot expert
 * h, every other one (top_k - h) w_e / sum of the others' w (exact for top_k = 1). */
void routing_expected_load(const routing_law *law, int E, int top_k, double *load);

typedef struct {
    int tokens_per_rank;  /* 0: micro_batch * seq_len / tp of the scenario */
    int keep_choices;     /* bool: samples also record every token's experts (routing_sample.choices) */
    const routing_law *law; /* NULL: the scenario's routing.distribution */
} routing_opts;

/* choices[] entries: expert id when kept, ROUTING_DROPPED(e) when dropped by capacity, ROUTING_NONE
 * for an empty slot (a token that found fewer than K eligible experts: only with degenerate traces). */
#define ROUTING_NONE INT32_MIN
#define ROUTING_DROPPED(e) (-1 - (e))

typedef struct {
    /* which draw this is */
    int layer, micro_batch, group;
    /* shape, copied from the ctx */
    int n_ranks, n_nodes, n_experts, top_k, tokens_per_rank;

    double *expert_tokens;        /* [n_experts] */
    double *expert_routed;        /* [n_experts] pairs the router assigned each expert before the
                                     capacity limit (== expert_tokens unless pairs were dropped) */
    double *rank_tokens;          /* [n_ranks] */
    /* routing.redundant_experts > 0: pairs each expert slot of each rank computes, [n_ranks *
     * slots_per_rank] (the rank's own experts first, then its replicas, 0-padded); else NULL, 0 */
    double *slot_tokens;
    int slots_per_rank;
    double *dispatch_tokens;      /* [n_ranks * n_ranks] */
    double *dispatch_bytes;       /* [n_ranks * n_ranks] */
    double *combine_bytes;        /* [n_ranks * n_ranks] */
    double *node_tokens;          /* [n_ranks * n_nodes] */
    double *dispatch_node_bytes;  /* [n_ranks * n_nodes] */
    double *combine_node_bytes;   /* [n_ranks * n_nodes] */

    int64_t capacity;             /* pairs an expert accepts per source rank; -1 = uncapped */
    int64_t assignments;          /* token-expert pairs routed (tokens * K minus empty slots) */
    int64_t dropped;              /* pairs dropped by capacity (drop = true) */
    int64_t over_capacity;        /* pairs above capacity (drop = false: kept anyway) */
    int64_t empty_slots;          /* slots no eligible expert could fill (degenerate traces only) */
    double dropped_fraction;      /* dropped / assignments */

    int32_t *choices;             /* [n_ranks][tokens_per_rank][top_k] when opts.keep_choices, else NULL */
    routing_scratch *scratch;     /* private: counters and RNG reused across draws */
} routing_sample;

/* ---- context --------------------------------------------------------------------------------- */
/* Validate the routing fields against the model and group and preprocess the distribution (alias
 * tables, trace file). `group_gpus` holds the layout.ep global GPU ids of the group, EP rank order.
 * Returns NULL and fills err (EXIT_BADINPUT with file/path/value for bad input). */
routing_ctx *routing_ctx_create(const scenario *s, const int *group_gpus, moe_error *err);
routing_ctx *routing_ctx_create_opts(const scenario *s, const int *group_gpus, const routing_opts *opts,
                                     moe_error *err);
void routing_ctx_free(routing_ctx *ctx);

/* An expert-load trace ("moesim-expert-load/1": {"format", "experts", "layers": [[count per expert]
 * per layer]}) already parsed: weights[n_laws * E] (caller frees), n_laws = its layers. Every error
 * names `path` and the JSON path; exit 2. */
struct cJSON;
int routing_trace_from_json(const char *path, const struct cJSON *root, int E, int K, double **weights,
                            int *n_laws, moe_error *err);

int routing_ctx_ranks(const routing_ctx *ctx);
/* Redundant experts: the copies of `expert` (1 + its replicas) and the EP rank of copy c (0: its own). */
int routing_ctx_copies(const routing_ctx *ctx, int expert);
int routing_ctx_copy_rank(const routing_ctx *ctx, int expert, int copy);
int routing_ctx_tokens_per_rank(const routing_ctx *ctx);

/* The largest step the routing model draws: tokens_per_rank x top_k x ep token-expert choices per
 * sample (int32 arrays of that length): 2^28, 1 GiB of choices (DeepSeek-V3 at 4096 tokens per
 * micro-batch and EP 64: 2^21). A step past it, or tokens per micro-batch past INT_MAX, is refused
 * with an exit-2 error naming model.seq_len (the field that sizes it in practice). */
#define ROUTING_MAX_CHOICES ((long long)1 << 28)
int routing_check_tokens(const scenario *s, long long tokens_per_rank, moe_error *err);
int routing_ctx_n_nodes(const routing_ctx *ctx);
const int *routing_ctx_nodes(const routing_ctx *ctx);      /* n_nodes global node ids, ascending */
const int *routing_ctx_rank_node(const routing_ctx *ctx);  /* n_ranks node indexes (into nodes[]) */
const int *routing_ctx_gpus(const routing_ctx *ctx);       /* n_ranks global GPU ids */
/* Number of distinct layer laws (1 for uniform/hot, MoE layers for zipf, trace layers for trace) and
 * the law a MoE layer uses. */
int routing_ctx_layer_laws(const routing_ctx *ctx);
int routing_ctx_layer_law(const routing_ctx *ctx, int layer);

/* The documented seed mixing: four rounds of the splitmix64 finalizer over (seed, tag, layer,
 * micro_batch, group), folded to 32 bits (gsl_rng_mt19937 uses 32 bits of its seed). */
enum { ROUTING_TAG_DRAW = 1, ROUTING_TAG_ZIPF = 2, ROUTING_TAG_DRIFT = 3, ROUTING_TAG_STEP = 4 };
uint32_t routing_seed(uint64_t seed, uint32_t tag, int layer, int micro_batch, int group);
/* The draws' seed of training step `step`: `seed` itself for step 0 (today's one-step draws, byte for
 * byte), else two rounds of the splitmix64 finalizer over (seed, TAG_STEP, step). */
uint64_t routing_step_seed(uint64_t seed, int step);

/* ---- samples ----------------------------------------------------------------------------------- */
int routing_sample_init(const routing_ctx *ctx, routing_sample *out, moe_error *err);
void routing_sample_free(routing_sample *s);

/* Draw the routing of one (MoE layer, micro-batch, EP group). layer is the MoE-layer index
 * (0 = first MoE layer). Returns 0, or -1 when `out` was initialised for another shape. */
int routing_draw(const routing_ctx *ctx, int layer, int micro_batch, int group, routing_sample *out);

/* Account an explicit routing instead of drawing one: experts[(i*tokens_per_rank + t)*top_k + k] is
 * the k-th expert of token t of rank i (-1 = unused slot; duplicates within a token are rejected).
 * Capacity, drops, dedup and bytes follow exactly the same rules as routing_draw (which calls the same
 * accounting). Constrained routing is NOT enforced (the caller chose). Returns 0, or -1 on a bad expert
 * id / duplicate / shape mismatch. */
int routing_assign(const routing_ctx *ctx, const int32_t *experts, routing_sample *out);


/* ---- pool --------------------------------------------------------------------------------------- */
typedef struct routing_pool routing_pool;
/* samples_per_layer >= 1 distinct samples per layer law; max_laws > 0 caps the distinct laws (MoE
 * layer l then uses law (law of l) mod max_laws: e.g. 8 zipf permutations cycled over 58 layers),
 * 0 keeps them all. Draws = min(max_laws, laws) x samples_per_layer at most. */
routing_pool *routing_pool_create(const routing_ctx *ctx, int samples_per_layer, int max_laws,
                                  moe_error *err);
/* The sample used for (layer, micro_batch, group); drawn on first use. NULL only on allocation
 * failure. With L = routing_ctx_layer_law(ctx, layer) mod the pool's laws, the slot is
 * s = routing_seed(0, 0, L, micro_batch, group) mod samples_per_layer and the sample is
 * routing_draw(ctx, L, s, 0): its layer/micro_batch/group fields say so. */
const routing_sample *routing_pool_get(routing_pool *pool, int layer, int micro_batch, int group);
int routing_pool_draws(const routing_pool *pool);   /* samples drawn so far */
/* Draw now every slot that a key (layer < n_layers, micro_batch < n_micro_batches, group) maps to and
 * that is not drawn or kept yet, routing_threads() of them at a time (POSIX threads; the samples are
 * the same bytes whatever the count: "Determinism" above), so that routing_pool_get finds them. 0, or
 * EXIT_RUNTIME when out of memory. */
int routing_pool_fill(routing_pool *pool, int n_layers, int n_micro_batches, int group, moe_error *err);
/* The threads routing_pool_fill draws with, for the whole process: 1 (the default) to
 * ROUTING_MAX_THREADS. A program whose worker processes share the cores (simrun -j) keeps 1. */
#define ROUTING_MAX_THREADS 16
void routing_set_threads(int threads);
int routing_threads(void);
/* A pool's draws are kept in the process (routing.c, "the process's draws": a draw is a function of its
 * context and (law, slot)) and copied into the next pool that asks for the same one; this forgets
 * them (benchmarks that time a cold step). */
void routing_forget(void);
void routing_pool_free(routing_pool *pool);

#endif
