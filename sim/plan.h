/* plan.h — the analytic level: exact parameter and FLOP counts, the four memory ledgers per GPU,
 * first-order step time, cluster MTBF and checkpoint intervals. Closed forms only: microseconds per
 * layout, so that sweeps over every factorization of 4096 GPUs are cheap. */
#ifndef MOESIM_PLAN_H
#define MOESIM_PLAN_H

#include "sim/scenario.h"

struct cJSON;

#define PLAN_MAX_WARNINGS 8

typedef struct {
    /* parameters (counts, not bytes) */
    double params_total, params_active;
    double params_embedding, params_head, params_attention, params_dense_ffn;
    double params_router, params_shared_experts, params_routed_experts, params_norms;
    /* FLOPs (forward + backward = 3 x forward, per token) */
    double flops_per_token;        /* exact per-layer count incl. attention score/value matmuls */
    double flops_per_token_6n;     /* 6 x params_active */
    double total_flops;            /* run.tokens x flops_per_token_6n (the seed's convention) */
    double pure_compute_days;      /* total_flops / (gpus x bf16 peak x mfu) */
    /* memory per GPU, GiB (the most loaded GPU) */
    struct { double params, grads, optimizer, activations, total; } memory_GiB;
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
    double checkpoint_write_s;     /* delta: state bytes / storage bandwidth (or write_min) */
    double checkpoint_state_bytes;
    double young_interval_min, daly_first_order_min, daly_interval_min;
} plan_result;

int plan_evaluate(const scenario *s, plan_result *out, moe_error *err);
/* Adds the plan keys of SCENARIO.md (and the breakdowns) to `obj`. */
void plan_result_to_json(const plan_result *p, struct cJSON *obj);

#endif
