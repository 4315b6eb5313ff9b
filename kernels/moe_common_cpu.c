/* moe_common_cpu.c — small shared pieces of the kernel API: status strings, gating configs and
 * their validation, exclusive scan, kernel names. Host code, used by CPU and GPU sides. */
#include "kernels/moe_kernels.h"

#include <math.h>
#include <stdio.h>

const char *moe_status_str(int status) {
    switch (status) {
    case MOE_OK: return "ok";
    case MOE_EINVAL: return "invalid argument";
    case MOE_ENOMEM: return "out of memory";
    case MOE_ECUDA: return "CUDA runtime error";
    case MOE_ECUBLAS: return "cuBLAS error";
    case MOE_ENCCL: return "NCCL error";
    case MOE_ENOTSUP: return "not supported here";
    default: return "unknown status";
    }
}

moe_gate_cfg moe_gate_cfg_default(int num_experts, int top_k) {
    moe_gate_cfg c = {
        .num_experts = num_experts,
        .top_k = top_k,
        .score = MOE_SCORE_SOFTMAX,
        .norm_topk = 1,
        .routed_scaling = 1.0f,
        .n_groups = 1,
        .topk_groups = 1,
        .n_nodes = 1,
        .topk_nodes = 1,
    };
    return c;
}

moe_gate_cfg moe_gate_cfg_deepseek_v3(int num_experts) {
    moe_gate_cfg c = moe_gate_cfg_default(num_experts, 8);
    c.score = MOE_SCORE_SIGMOID;
    c.routed_scaling = 2.5f;
    c.n_groups = 8;
    c.topk_groups = 4;
    return c;
}

static int fail(char *why, size_t n, const char *msg) {
    if (why && n) snprintf(why, n, "%s", msg);
    return MOE_EINVAL;
}

int moe_gate_cfg_check(const moe_gate_cfg *c, char *why, size_t n) {
    if (!c) return fail(why, n, "gating config is NULL");
    int E = c->num_experts, K = c->top_k;
    if (E < 1 || E > MOE_MAX_EXPERTS) return fail(why, n, "num_experts must be in [1, 1024]");
    if (K < 1 || K > E || K > MOE_MAX_TOP_K)
        return fail(why, n, "top_k must be in [1, min(num_experts, 16)]");
    if (c->score != MOE_SCORE_SOFTMAX && c->score != MOE_SCORE_SIGMOID)
        return fail(why, n, "score must be softmax or sigmoid");
    if (!(c->routed_scaling > 0.0f) || !isfinite(c->routed_scaling))
        return fail(why, n, "routed_scaling must be a positive finite number");
    if (c->n_groups < 1 || E % c->n_groups != 0)
        return fail(why, n, "n_groups must divide num_experts");
    if (c->topk_groups < 1 || c->topk_groups > c->n_groups)
        return fail(why, n, "topk_groups must be in [1, n_groups]");
    if ((int64_t)c->topk_groups * (E / c->n_groups) < K)
        return fail(why, n, "topk_groups groups hold fewer than top_k experts");
    if (c->n_nodes < 1 || E % c->n_nodes != 0)
        return fail(why, n, "n_nodes must divide num_experts");
    if (c->topk_nodes < 1 || c->topk_nodes > c->n_nodes)
        return fail(why, n, "topk_nodes must be in [1, n_nodes]");
    if ((int64_t)c->topk_nodes * (E / c->n_nodes) < K)
        return fail(why, n, "topk_nodes nodes hold fewer than top_k experts");
    if (c->n_groups > 1 && c->n_nodes > 1)
        return fail(why, n, "use group-limited OR node-limited routing, not both "
                            "(DeepSeek-V3's groups are its nodes)");
    return MOE_OK;
}

int64_t moe_exclusive_scan_i32(const int32_t *counts, int n, int32_t *offsets) {
    int64_t run = 0;
    for (int i = 0; i < n; i++) {
        offsets[i] = (int32_t)run;
        run += counts[i];
    }
    return run;
}

const char *moe_kernel_name(moe_kernel_id id) {
    static const char *names[MOE_KERNEL_COUNT] = {
        "router_gemm", "gating", "dispatch_layout", "permute",
        "expert_ffn", "combine", "a2a", "a2a_hier",
    };
    if ((int)id < 0 || id >= MOE_KERNEL_COUNT) return "unknown";
    return names[id];
}
