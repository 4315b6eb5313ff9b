/* plan.h — the analytic level: exact parameter and FLOP counts, the four memory ledgers per GPU,
 * first-order step time, cluster MTBF and checkpoint intervals. Closed forms only: microseconds per
 * layout, so that sweeps over every factorization of 4096 GPUs are cheap. */
#ifndef MOESIM_PLAN_H
#define MOESIM_PLAN_H

#include "sim/plan/costmodel.h"
#include "sim/plan/plan_costs.h"
#include "sim/scenario/scenario.h"

struct cJSON;

#define PLAN_MAX_WARNINGS 8

typedef struct {
    /* parameters (counts, not bytes) */
    double params_total, params_active;
    double params_embedding, params_head, params_attention, params_dense_ffn;
    double params_router, params_shared_experts, params_routed_experts, params_norms;
    double params_mtp;             /* MTP modules (not in params_total: the published convention) */
    /* FLOPs (forward + backward = 3 x forward, per token) */
    double flops_per_token;        /* exact per-layer count incl. attention score/value matmuls and
                                      the MTP modules */
    double flops_per_token_6n;     /* 6 x params_active */
    double total_flops;            /* run.tokens x flops_per_token_6n (the seed's convention) */
    double pure_compute_days;      /* total_flops / (gpus x bf16 peak x mfu) */
    /* memory per GPU, GiB (the most loaded GPU); usable: what the ledgers may fill, the GPU's memory
     * less the reserve (plan_costs.h memory_reserve): total above it does not fit */
    struct { double params, grads, optimizer, activations, total, usable; } memory_GiB;
    int fits_memory;
    char overflow[32];             /* the largest ledger when it does not fit, else "" */
    int n_warnings;
    char warnings[PLAN_MAX_WARNINGS][200];
    /* first-order step time */
    double step_time_s, compute_s, exposed_comm_s, bubble_s, optimizer_s;
    double bubble_fraction;
    double a2a_bytes_per_token_layer; /* dispatch+combine, fwd+bwd, per token per MoE layer (seed: 917.5 KB) */
    double tokens_per_s_per_gpu, mfu, tflops_per_gpu;
    /* reliability */
    double mtbf_cluster_h;
    double checkpoint_write_s;     /* delta: checkpoint_write.h (write_min, or the storage model) */
    double checkpoint_state_bytes;
    double young_interval_min, daly_first_order_min, daly_interval_min;
    /* ---- breakdowns (added with the cost-model plan) ---- */
    char costmodel_source[64];     /* the cost model that priced compute and links (costmodel.h) */
    /* one micro-batch on the slowest pipeline rank: forward, backward (incl. its weight-gradient
     * share and any recompute), the weight-gradient share (DualPipe's W), the recompute share, and
     * the all-to-all + P2P time it needs */
    double fwd_mb_s, bwd_mb_s, wgrad_mb_s, recompute_mb_s, comm_mb_s;
    /* state bytes per parameter the ledgers use (memory.h): weights, gradients, optimizer (master
     * weights + Adam m and v) */
    double weight_bytes_per_param, grad_bytes_per_param, optimizer_bytes_per_param;
    double act_bytes_per_token_layer; /* a MoE layer (dense if none) at the layout's recompute, before TP */
    double inflight_microbatches;  /* micro-batches of activations the most loaded rank holds */
    int memory_rank;               /* the most loaded pipeline rank */
    /* data-parallel traffic of one step on the GPU that moves the most (sim/plan/zero_sync.h), bytes
     * in NCCL's buffer convention: parameter all-gathers, gradient reduce-scatters (zero 0: the
     * all-reduce) */
    double dp_param_gather_bytes, dp_grad_reduce_bytes;
} plan_result;

/* The plan of `s` with the cost model `cm` and the assumptions `c`. Pure and re-entrant: no global
 * state, no I/O; safe to call from several threads. */
int plan_evaluate_with(const scenario *s, const costmodel *cm, const plan_costs *c, plan_result *out,
                       moe_error *err);
/* plan_evaluate_with(s, cm, default costs). */
int plan_evaluate_with_costmodel(const scenario *s, const costmodel *cm, plan_result *out,
                                 moe_error *err);
/* Prices compute and links with costmodel_for_scenario(s): the scenario's calibration JSON, else the
 * built-in roofline of its GPU and cluster. The loaded model is cached (keyed by the calibration path
 * and the cluster figures), so this is NOT thread-safe; plan_evaluate_with_costmodel is the pure form. */
int plan_evaluate(const scenario *s, plan_result *out, moe_error *err);
/* The cached cost model plan_evaluate prices `s` with (valid until the next call with another
 * calibration or cluster): results name its provenance without loading the file once per point. */
int plan_costmodel(const scenario *s, const costmodel **out, moe_error *err);
/* Adds the plan keys of SCENARIO.md (and the breakdowns) to `obj`. */
void plan_result_to_json(const plan_result *p, struct cJSON *obj);

#endif
