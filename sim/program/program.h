/* program.h — the step program: the IR every executor runs (DESIGN.md "one step program, several
 * executors").
 *
 * A step program is, for every rank, an ordered list of ops. The fast executor (sim/exec/step_exec.c),
 * the full-fidelity SimGrid executor (sim/simgrid/exec_full.c) and the live executor (NCCL / MPI) all run
 * the same program; nothing about a layout or a schedule is decided anywhere else. The per-stage
 * order of (micro-batch, chunk, phase) comes from sim/program/schedule.h; sim/program/program.c turns it into ops.
 *
 * Execution semantics (every executor must implement exactly these):
 *   - Each op runs on one stream of its rank. A stream is a FIFO resource, like a CUDA stream: an op
 *     starts when (a) the previous op of the same rank on the same stream has finished and (b) every
 *     op listed in its deps (earlier ops of the same rank, by index) has finished.
 *   - COMPUTE: duration from the cost model (kernel, flops, mem_bytes, tokens), times the slow-GPU
 *     factor of the rank's GPU (program.faults, sim/program/faults.h: the step-level faults) and its
 *     GPU's persistent speed factor (program.faults.speed_factor; simulators only, faults.h).
 *   - SEND is eager (buffered, like NCCL p2p of a small activation into a pre-posted buffer): it
 *     occupies the sender's P2P stream for the transfer time and finishes then; it never waits for
 *     the receiver. RECV occupies no resource: it finishes at max(its own ready time, the matching
 *     SEND's finish). A SEND matches the RECV on rank `peer` with the same `tag` (tags are unique per
 *     (sender, receiver) pair within a step). This rule is deadlock-free for every schedule.
 *   - A2A_DISPATCH / A2A_COMBINE and the ring collectives are collective over a group: the k-th
 *     collective op of group g on every member is the same instance; it starts when the last member
 *     arrives (its op is ready) and ends for all members at start + the comm model's time for the
 *     pattern (all-to-all: the slowest rank's completion; DESIGN.md level 2).
 *   - A rank's step ends when its last op ends; the step ends when every rank's step has ended.
 *
 * Ranks and GPUs: sim/plan/rank_numbering.h, the numbering the plan uses too. A rank is the tuple
 * (replica d, stage s, ep index e, tp index t), rank = ((d * pp + s) * ep + e) * tp + t, "stage"
 * being its pipeline position (with interleaving or DualPipe a rank holds several model stages, its
 * "chunks"); layout.placement (ep-inner, dp-inner) maps ranks to GPUs. The coordinates are the
 * EXPERT side of Megatron's MoE parallel folding (program.tp = layout.etp); the attention side folds a
 * stage's ranks by their stage index q = (d ep + e) etp + t: attention TP index q mod attn_tp, CP index
 * (q / attn_tp) mod cp, attention DP index the rest (SCENARIO.md: tp x cp x attention DP = etp x ep x
 * dp per stage).
 *
 * Groups. Every collective names a group id into program.groups (members as global ranks,
 * ascending, so that member index == ep index inside an EP group and == CP index inside a CP group):
 *   GROUP_EP        ranks of one (d, s, t) over e                 — all-to-all (dispatch/combine)
 *   GROUP_TP        ranks of one stage and q / attn_tp            — tensor-parallel all-reduce of
 *                   attention and dense blocks (sequence parallel)
 *   GROUP_DP_DENSE  ranks of one stage and q mod attn_tp          — gradient sync of non-expert
 *                   parameters (attention, dense FFN, router, shared expert, embedding, head) over
 *                   attention DP x CP
 *   GROUP_DP_EXPERT ranks of one (s, e, t) over d                 — gradient sync of the routed
 *                   experts a rank holds (REFERENCE.md §5: expert-DP group)
 *   GROUP_CP        ranks of one stage, attention DP and TP index over the CP index — context
 *                   parallelism: ring attention's key/value SEND/RECV between ring neighbours
 *                   (their ops carry group kind GROUP_CP and a ring offset as peer in the stage
 *                   list) or the all-gather / reduce-scatter of keys and values
 *
 * ZeRO (sim/plan/zero_sync.h). Zero 0/1: the gradient sync, optimizer and (zero 1) parameter gather
 * of the step tail, on the comm stream. Zero 2/3: every micro-batch reduce-scatters each unit's
 * gradients (a unit: a transformer block, an MTP module, or the model stage's embedding and head)
 * after its weight gradients, and ZeRO-3 gathers each unit before its forward and again before its
 * backward, the next unit prefetched beside the current one's compute; these ops run on STREAM_DP
 * over GROUP_DP_DENSE (non-expert parameters) and GROUP_DP_EXPERT (routed experts). The optimizer
 * waits for the last reduce-scatters; zero 2 gathers the updated parameters after it, zero 3 not.
 *
 * Memory layout (benchmark goal: 4096 GPUs, one step, <= 2 GB). The ops of a rank depend on its
 * stage and on nothing else except (a) the routed tokens it receives, (b) its peers and groups.
 * So a program stores one op list per *stage* (program.stage_ops), rank-relative: peers are given
 * as a stage offset and groups as a group kind; the expert GEMMs name the a2a pattern whose
 * received-token column sets their size. program_rank_op() resolves one op for one rank into a
 * concrete op (global peer rank, group id, tokens, flops); program_materialize() resolves a rank's
 * whole list. Executors may run on the stage lists directly (the fast executor does) or on
 * materialised lists (the full-fidelity and live executors, tests); both must give the same result.
 *
 * Routing (sim/program/routing.h). Token routing is sampled per (MoE layer, micro-batch) from a routing pool
 * (routing_pool_create over the routing context of EP group 0: uniform / zipf / hot / trace laws,
 * group- and node-limited top-k, capacity factor with drop or dropless). Every EP group routes its
 * own tokens, drawn from the same law with the same capacity, and every EP group spans the same node
 * pattern (ep-inner: ep*tp/gpus_per_node consecutive nodes; dp-inner: the same dp-strided pattern),
 * so the groups' routings are identically distributed: one pool, drawn over EP group 0's GPUs, serves
 * them all. routing.group_samples says which sample a group takes:
 *   independent  (the default) the replicas route with PROGRAM_SAMPLE_STREAMS sample streams (fewer
 *                when dp is smaller): replica d's EP groups ask the pool with group index d mod
 *                streams (program_sample_group), so replicas of different streams route a (layer,
 *                micro-batch) with samples the pool maps independently from the seed, as the routers
 *                of a real run see different tokens, and the step waits for the slowest stream.
 *                Replicas of one stream are routed alike, and the replica shortcut of step_exec.h
 *                still mirrors them. Why a few streams and not one per replica: replicas meet only in
 *                the data-parallel collectives, so the routing noise a replica's step sums over its
 *                thousands of all-to-alls is what differs between them, and it averages out (the
 *                seed: the replicas' arrivals at the step tail spread by 0.3 ms in 8.4 s, the step
 *                0.02% slower than with shared samples); each stream is a whole replica for the fast
 *                executor to simulate (the seed: 0.09 s CPU per replica, so every replica of DP 4 would
 *                take 0.35 s and of DP 128 the memory of 128 replicas' timelines). The slowest of
 *                N such replicas exceeds the slowest of 2 by sigma (E[max of N] - E[max of 2]) for a
 *                replica spread sigma: 0.6 ms at DP 128 with the seed's.
 *                The pool holds a few draws per law (ROUTING_POOL_DRAWS) mapped to (layer,
 *                micro-batch, group) by a hash (routing_pool_get): each all-to-all's sample is one of
 *                those draws, for every stream alike.
 *   shared       every replica asks with group index 0: the sample of (layer, micro-batch) is the
 *                same for all, and healthy replicas are bit-identical. Stream 0 (replica 0) routes
 *                the same in both modes, so independent samples can only slow the step down.
 * The TP indices of one replica share its sample in both modes: with etp = tp every TP index's EP
 * group routes the tokens its TP group gathered before routing (program.c moe_tp_coll), the same
 * tokens, so the same choices. Balanced routing is shared in both modes: its law fixes every expert's
 * load; what a draw randomises is only the order in which tokens visit units and experts.
 * n_sample_groups is how many sample streams the program holds (1 when shared).
 * The stage lists name stream 0's patterns; resolution (program_rank_op) gives replica d its own.
 * The pool holds a few distinct samples (n_draws); draw_of maps each (sample stream, MoE layer,
 * micro-batch) to the sample the pool gives it.
 * All-to-all byte matrices live in program.patterns, A2A_NKINDS per distinct sample:
 *   A2A_DISPATCH_F  dispatch_bytes (dispatch dtype), node_bytes = DeepEP RDMA payload rank i -> node k
 *   A2A_COMBINE_F   combine_bytes (combine dtype; rank j -> token owner i), node_bytes[i][k] = the
 *                   payload node k -> rank i (partial outputs reduced inside node k, sent once)
 *   A2A_DISPATCH_B  gradient of the combine: the dispatch's token sets in BF16, dispatch direction
 *   A2A_COMBINE_B   gradient of the dispatch: the combine's token sets in BF16, combine direction
 * Combine-direction patterns (is_combine) are priced by the executor as their mirror image (every
 * flow reversed: the dispatch-shaped transpose with node_bytes as rank i -> node k), which has the
 * same completion time on the rail fabric because every link is split-duplex with equal capacity in
 * both directions and routes are symmetric.
 */
#ifndef MOESIM_PROGRAM_H
#define MOESIM_PROGRAM_H

#include <stdint.h>
#include "sim/scenario/scenario.h"
#include "sim/base/errors.h"
#include "sim/plan/kernels.h"
#include "sim/plan/rank_numbering.h"
#include "sim/program/faults.h"
#include "sim/program/routing.h"

/* ---- op vocabulary ---------------------------------------------------------------------------- */
typedef enum {
    OP_COMPUTE = 0,
    OP_A2A_DISPATCH,     /* tokens -> the ranks holding their experts (MoE layer) */
    OP_A2A_COMBINE,      /* expert outputs -> back to the tokens' ranks */
    OP_SEND,             /* pipeline boundary: activations (F) or activation gradients (B) */
    OP_RECV,
    OP_REDUCE_SCATTER,   /* ZeRO gradient sync (ZeRO-1: the step tail; ZeRO-2/3: per unit and
                            micro-batch) */
    OP_ALL_GATHER,       /* ZeRO parameter gather (ZeRO-1/2: after the optimizer step; ZeRO-3: per
                            unit before its forward and its backward) */
    OP_ALL_REDUCE,       /* TP activations; DP gradients when zero == 0 */
    OP_NKINDS
} op_kind;


/* Streams. DualPipe overlaps compute with all-to-all by putting communication on its own stream. */
typedef enum {
    STREAM_COMPUTE = 0,  /* kernels */
    STREAM_COMM,         /* all-to-alls and collectives */
    STREAM_P2P,          /* pipeline SEND (RECV occupies no stream; see semantics above) */
    STREAM_DP,           /* ZeRO-2/3's per-unit gathers and reduce-scatters (FSDP's own all-gather
                            and reduce-scatter streams: they run beside the all-to-alls) */
    STREAM_N
} stream_kind;

typedef enum { GROUP_EP = 0, GROUP_TP, GROUP_DP_DENSE, GROUP_DP_EXPERT, GROUP_CP, GROUP_NKINDS } group_kind;

/* All-to-all pattern kinds per routing draw. "dispatch"/"combine" name the forward direction; in
 * backward the gradient of combine travels like a dispatch and vice versa. */
typedef enum { A2A_DISPATCH_F = 0, A2A_COMBINE_F, A2A_DISPATCH_B, A2A_COMBINE_B, A2A_NKINDS } a2a_kind;

#define OP_NO_LAYER (-1)
/* Routing sample streams of routing.group_samples "independent" (see "Routing" above) */
#define PROGRAM_SAMPLE_STREAMS 2
#define OP_MAX_DEPS 3

/* One op (56 bytes); the seed layout has a few thousand ops per stage, held once per stage. In a
 * stage list (rank-relative) `peer` is the peer's pipeline stage (same replica, ep and tp index) and
 * `group` a group_kind; in a resolved op they are a global rank and a group id. */
typedef struct {
    uint8_t kind;        /* op_kind */
    uint8_t kernel;      /* kernel_kind (COMPUTE), K_NONE otherwise */
    uint8_t stream;      /* stream_kind */
    uint8_t phase;       /* op_phase */
    int16_t layer;       /* transformer block index (0-based), OP_NO_LAYER for embedding/head/tail */
    uint8_t chunk;       /* which of the rank's model stages (interleaved: virtual chunk; DualPipe:
                            0 = down direction, 1 = up direction) */
    uint8_t n_deps;
    int32_t mb;          /* micro-batch, -1 for the step tail */
    int32_t peer;        /* SEND/RECV: peer rank (resolved) or peer pipeline stage (stage list) */
    int32_t group;       /* collectives: group id (resolved) or group_kind; else -1 */
    int32_t pattern;     /* A2A and K_EXPERT_*: index into program.patterns; else -1 */
    int32_t tag;         /* SEND/RECV: matching tag */
    int32_t deps[OP_MAX_DEPS];  /* indices of earlier ops of the same rank */
    float flops;         /* COMPUTE: floating-point operations (resolved: for this rank) */
    float mem_bytes;     /* COMPUTE: HBM bytes moved (weights + activations), for a roofline */
    float bytes;         /* SEND/RECV: payload; collectives: buffer bytes per GPU (NCCL convention);
                            A2A: total bytes this rank sends (informational; the matrix rules) */
    int32_t tokens;      /* COMPUTE: tokens processed (K_EXPERT_*: token-expert pairs received) */
} program_op;

/* One all-to-all byte matrix over an EP group (ep ranks; member index == ep index). */
typedef struct {
    a2a_kind kind;
    int draw;                 /* routing draw it comes from */
    double *bytes;            /* ep*ep row-major, rank i -> rank j (real direction of the bytes) */
    double *node_bytes;       /* ep * n_nodes (DeepEP per-destination-node RDMA payload), or NULL;
                                 dispatch kinds: rank i -> node k; combine kinds: node k -> rank i */
    double *sent_bytes;       /* ep: off-diagonal bytes rank i sends (row i less its diagonal) */
    double total_bytes;       /* off-diagonal bytes */
    int is_combine;           /* 1 for A2A_COMBINE_F / A2A_COMBINE_B (see "Routing" above) */
} a2a_matrix;

typedef struct {
    group_kind kind;
    int n;
    int *ranks;               /* n global ranks (points into program.group_members) */
} program_group;

typedef struct program {
    const scenario *scn;      /* borrowed; must outlive the program */
    int pp, ep, dp, tp, vpp, n_chunks;   /* tp: the EXPERT tensor parallelism of the rank numbering
                                            (layout.etp); n_chunks: model stages per rank (1, vpp, or 2) */
    int attn_tp, cp;          /* attention tensor and context parallelism (layout.tp, layout.cp) */
    rank_grid ranks;          /* the rank numbering and placement (rank_numbering.h) */
    int micro_batches;        /* per pipeline per step */
    int n_ranks;
    int tokens_per_mb;        /* tokens of one micro-batch on one attention rank (its CP share) */
    int routed_tokens;        /* tokens each rank routes through its EP group (scn_routed_tokens) */
    int n_tags;               /* SEND/RECV tags of a step: the pipeline's, then context parallelism's */
    /* model stages (sim/scenario/pipeline_layout.h): model_stage -> [first_layer, end_layer) and its
     * MTP modules; embedding on model stage 0, loss (one head pass per loss) on the last.
     * n_model_stages = pp * (vpp or 1); DualPipe: pp model stages, each rank holds two. */
    int n_model_stages;
    int *stage_layer_begin, *stage_layer_end;
    int *stage_mtp_begin, *stage_mtp_end;   /* MTP modules [begin, end) after the stage's blocks; their
                                               ops name layer model.layers + module */
    /* per pipeline stage (position 0..pp-1): the rank-relative op list */
    program_op **stage_ops;
    int *stage_n_ops;
    /* groups */
    int n_groups;
    program_group *groups;
    int *group_members;
    int *rank_group;          /* n_ranks * GROUP_NKINDS: group id of each rank per kind */
    /* routing */
    int n_draws;
    int n_patterns;           /* n_draws * A2A_NKINDS */
    a2a_matrix *patterns;
    double *recv_tokens;      /* n_draws * ep: token-expert pairs each EP index receives (after drop) */
    double *expert_tokens;    /* n_draws * experts: token-expert pairs each routed expert processes */
    /* routing.redundant_experts > 0 (routing.h, EPLB): n_draws * ep * slots_per_rank pairs of each
     * expert slot of each EP index (its own experts, then its replicas); else NULL and 0 */
    double *slot_tokens;
    int slots_per_rank;
    int *expert_copies;       /* experts: 1 + its replicas (routing.redundant_experts > 0), else NULL */
    /* statistics of the samples the step actually uses (every (MoE layer, micro-batch), weighted by
     * use): dropped pairs / routed pairs; per-all-to-all expert-load CV, max/min and Gini (the mean
     * over uses of each sample's per-expert metrics) */
    double dropped_token_fraction, expert_load_cv, expert_load_max_min, expert_load_gini;
    /* the most routed expert's pairs over the routed tokens (its share of the tokens, as
     * routing.hot_share counts), and the busiest EP index's computed pairs over the mean */
    double max_expert_share, rank_load_max_mean;
    int max_expert, busiest_ep_rank;   /* which: the expert id and the EP index (lowest on ties) */
    /* where MoE layers start and which routing sample each (MoE layer, micro-batch) uses */
    int moe_first_layer;      /* first MoE transformer block (model.dense_layers) */
    int n_moe_layers;
    int n_sample_groups;      /* routing sample streams: 1 (shared) or up to PROGRAM_SAMPLE_STREAMS
                                 (independent); see "Routing" */
    int *draw_of;             /* n_sample_groups * n_moe_layers * micro_batches: sample index of
                                 (sample group, MoE layer, mb) */
    int a2a_n_nodes;          /* nodes spanned by EP group 0 (node_bytes' second dimension) */
    double *step_expert_tokens; /* experts: pairs each expert id receives, summed over every MoE layer
                                   and micro-batch of replica 0 (EP groups of tp index 0); the routing
                                   statistics above and below are replica 0's samples too */
    double *step_expert_routed; /* experts: pairs the router assigned to each expert id before the
                                   capacity limit, summed the same way (== step_expert_tokens unless
                                   routing drops) */
    long routed_pairs, dropped_pairs; /* summed the same way */
    /* totals */
    double model_flops_per_step;   /* sum over all ranks' compute ops (for MFU) */
    /* the scenario's in-step faults, resolved for every rank (faults.h): every executor applies these */
    step_faults faults;
} program;

/* Build the program of scenario `s` (which must stay alive), its faults resolved (faults.h). 0 on
 * success; on bad layout/schedule combinations (e.g. DualPipe with an odd pp) or a stall the program
 * never reaches fills err (EXIT_BADINPUT) and returns non-zero. */
int program_build(const scenario *s, program **out, moe_error *err);
/* What program_build checks before building anything (the layout's product and folding, EP dividing
 * the experts, the schedule's constraints, layers per model stage, tokens per rank): 0 when the step
 * level can run `s`, else EXIT_BADINPUT with err saying why. Cheap: for callers that pick layouts. */
int program_check(const scenario *s, moe_error *err);
/* The same with a drifting step's routing law (routing_drift.h) instead of the scenario's. */
int program_build_law(const scenario *s, const routing_law *law, program **out, moe_error *err);
/* Redraw only the routing of a built program under `law` (the next step of a drifting run): its
 * patterns, token counts, routing statistics and model FLOPs; the op lists, groups and faults stay.
 * EXIT_RUNTIME if the law maps its samples differently (a law of another kind). */
int program_redraw(program *p, const routing_law *law, moe_error *err);
void program_free(program *p);

/* rank <-> coordinates and GPUs */
int program_rank(const program *p, int replica, int stage, int ep_index, int tp_index);
void program_coords(const program *p, int rank, int *replica, int *stage, int *ep_index, int *tp_index);
int program_gpu_of_rank(const program *p, int rank);
int program_group_of(const program *p, int rank, group_kind kind);

/* routing draw (index into the pool) used by MoE layer `layer` for micro-batch `mb` in replica 0
 * (program_draw_of) and in replica d */
int program_draw_of(const program *p, int layer, int mb);
int program_replica_draw_of(const program *p, int replica, int layer, int mb);
/* The sample stream replica d routes with (0 .. n_sample_groups - 1): replicas of one stream are
 * routed alike. */
static inline int program_sample_group(const program *p, int replica) {
    return replica % p->n_sample_groups;
}
/* The routing pattern (program.patterns) stage-list op `o` has in replica d: its own sample's. */
int program_replica_pattern(const program *p, int replica, const program_op *o);

/* Resolve op `i` of `rank`'s list into a concrete op (peer rank, group id, tokens, flops). */
void program_rank_op(const program *p, int rank, int i, program_op *out);
/* Does resolution change stage-list op `o`? Not a COMPUTE op outside the routed experts: its stage-
 * list entry is already the resolved op of every rank of the stage (executors may use it as is). */
static inline int program_op_rank_relative(const program_op *o) {
    return o->kind != OP_COMPUTE || o->pattern >= 0;
}
/* The whole list of `rank`, resolved; caller frees *ops. Returns the op count. */
int program_materialize(const program *p, int rank, program_op **ops);
static inline int program_n_ops(const program *p, int rank) {
    int d, s, e, t;
    program_coords(p, rank, &d, &s, &e, &t);
    return p->stage_n_ops[s];
}

const char *op_kind_name(op_kind k);      /* "a2a_dispatch" ...: trace event names (trace.h) */
const char *op_kind_label(op_kind k);     /* "A2A_DISPATCH" ...: the IR name, for messages */
const char *group_kind_name(group_kind k);/* "EP", "TP", "DP_DENSE", "DP_EXPERT" */
const char *kernel_name(kernel_kind k);
const char *phase_name(op_phase ph);
const char *stream_name(stream_kind s);

#endif
