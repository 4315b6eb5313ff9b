/* eplb_series.h — EPLB as DeepSeek deploys it, over a series of steps (routing.steps with
 * routing.eplb_interval_steps K > 0): the EP group's placement, the loads measured since the last
 * rebalance, and what a rebalance costs.
 *
 * ---- Model ---------------------------------------------------------------------------------------
 * Step 0 starts from EPLB's placement of equal loads (nothing measured yet; loading the weights is
 * the job's start, not a step's). After every step the router's token-expert pairs per expert of that
 * step (program.step_expert_routed: every MoE layer and micro-batch of replica 0) add to the window.
 * At every step t > 0 with t mod K = 0, EPLB's rebalance (sim/program/eplb.h) places the physical
 * experts from the window's loads and the window restarts; the steps in between route with the
 * placement they were given (the drift goes on under a stale one).
 * A rebalance is real traffic: every slot whose rank did not hold its expert fetches it from a rank
 * that did (eplb_moves: one on its own node if any), one expert's weights and optimizer state in every
 * MoE layer the rank holds (memory_expert_slot_bytes' params + optimizer: the plan's ledger, ZeRO's
 * sharding over the expert DP included; gradients are not moved, a rebalance happening between an
 * optimizer step and the next backward), at the busiest pipeline rank's bytes. The moves of the EP
 * group form one all-to-all of NCCL send/recv pairs (a2a_pattern.pairwise, no DeepEP aggregation),
 * priced by the step's comm model like the step's own all-to-alls (the EP groups of the other replicas
 * and TP indexes moving at once: concurrent_groups dp x etp, as step_exec prices an EP all-to-all);
 * the training waits for it, so its time is added to that step.
 * Every step also pays the replicas' gradient sum: the copies of an expert on m >= 2 ranks all-reduce
 * its gradient (eplb_replica_sync_bytes: a ring among them, 2 (m - 1) / m of one copy's BF16 gradient,
 * the ledger's grad bytes unsharded, per rank), all such rings at once as one pairwise all-to-all on
 * the same comm model, added to the step whole (not overlapped with the backward: an upper bound; it
 * precedes the expert DP reduction of the summed gradient). The oracle (interval 0) pays neither, as
 * before: it is the free placement, an upper bound on what EPLB can give.
 *
 * One placement for every MoE layer (the routing's one law per step, routing_drift.h): a move carries
 * the expert of every MoE layer the rank holds, and the loads EPLB reads are summed over the layers,
 * where DeepSeek's EPLB places each layer on its own loads. A one-step simulation at first_step k
 * (step_options) starts from step 0's placement: the history that would have placed step k is not
 * replayed.
 *
 * Ownership: eplb_series owns its arrays (eplb_series_free).
 */
#ifndef MOESIM_EPLB_SERIES_H
#define MOESIM_EPLB_SERIES_H

#include "sim/base/errors.h"
#include "sim/exec/comm.h"
#include "sim/scenario/scenario.h"

typedef struct {
    int interval;          /* K, steps */
    int E, n, S;           /* experts, EP ranks, physical slots per rank ((E + R) / n) */
    int n_groups, n_nodes; /* what EPLB is told: expert groups, nodes (1: the global policy) */
    int hierarchical;      /* the last rebalance took the hierarchical policy */
    int *phys;             /* [n * S] the placement now (eplb.h) */
    int *old_phys;         /* [n * S] the one before the last rebalance */
    int *moves;            /* [n * n] experts rank i sent rank j in the last rebalance */
    double *window;        /* [E] pairs routed since the last rebalance */
    int *gpus;             /* [n] EP group 0's global GPU ids */
    int *rank_node;        /* [n] node index (NVLink domain) of each EP rank */
    int *nodes;            /* [n_domains] domain ids, ascending */
    int n_domains;
    double move_bytes;     /* one expert move's bytes (params + optimizer, every MoE layer of the rank) */
    double grad_bytes;     /* one expert copy's gradient (every MoE layer of the rank, unsharded) */
    double grad_sync_s;    /* the replicas' gradient all-reduce of the placement now (every step) */
    int synced_experts;    /* experts with copies on two ranks or more */
    int concurrent_groups; /* EP groups moving at once (dp x etp) */
    int last_moved;        /* experts moved by the last rebalance */
    double last_bytes;     /* bytes they carried (EP group 0) */
} eplb_series;

/* The first placement (EPLB on equal loads). Returns 0, or an exit code with err filled. */
int eplb_series_init(eplb_series *es, const scenario *s, moe_error *err);
/* Add one step's routed pairs per expert ([E]) to the window. */
void eplb_series_observe(eplb_series *es, const double *expert_routed);
/* Whether step t rebalances before it runs. */
int eplb_series_due(const eplb_series *es, int t);
/* Rebalance from the window (the window restarts) and price the moves: seconds the step waits. */
double eplb_series_rebalance(eplb_series *es, const comm_model *comm);
/* The replicas' gradient all-reduce of the placement now (seconds; grad_sync_s and synced_experts set). */
double eplb_series_grad_sync(eplb_series *es, const comm_model *comm);
/* The byte matrix of a set of moves (n x n, moves[i x n + j] experts from rank i to j, move_bytes
 * each): what eplb_series_rebalance hands the comm model. */
void eplb_moves_bytes(const int *moves, int n, double move_bytes, double *bytes);
void eplb_series_free(eplb_series *es);

#endif
