/* gating_cpu.c — CPU reference of the router: logits GEMM, scoring, group/node-limited top-K with
 * a deterministic tie-break, gate weights and the load statistics behind the auxiliary loss.
 * The rules are stated once, in kernels/moe_kernels.h; kernels/gating.cu implements the same. */
#include "kernels/moe_kernels.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

void moe_router_logits_cpu(const moe_bf16 *x, const moe_bf16 *w_gate, float *logits,
                           int T, int H, int E) {
    for (int t = 0; t < T; t++) {
        float *out = logits + (size_t)t * E;
        for (int e = 0; e < E; e++) out[e] = 0.0f;
        const moe_bf16 *xt = x + (size_t)t * H;
        /* h-outer so the inner loop streams one row of w_gate (it is [H,E]). */
        for (int h = 0; h < H; h++) {
            float xv = moe_bf16_to_f32(xt[h]);
            const moe_bf16 *wr = w_gate + (size_t)h * E;
            for (int e = 0; e < E; e++) out[e] += xv * moe_bf16_to_f32(wr[e]);
        }
    }
}

/* a beats b: larger wins, equal values -> lower index wins, NaN never beats a number. */
static bool beats(float a, int ia, float b, int ib) {
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return (na && nb) ? ia < ib : nb;
    return a > b || (a == b && ia < ib);
}

/* Sum of the `topn` best values of v[0..n) (selection by `beats`, so deterministic). */
static float sum_top_n(const float *v, int n, int topn) {
    bool used[MOE_MAX_EXPERTS];
    memset(used, 0, (size_t)n * sizeof used[0]);
    float sum = 0.0f;
    for (int r = 0; r < topn && r < n; r++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!used[i] && (best < 0 || beats(v[i], i, v[best], best))) best = i;
        used[best] = true;
        sum += v[best];
    }
    return sum;
}

/* Keep the `keep` best of n_blocks equal blocks of sel (block score = sum of its top `topn`);
 * clear allowed[] for experts in the other blocks. */
static void mask_blocks(const float *sel, int E, int n_blocks, int keep, int topn, bool *allowed) {
    int bs = E / n_blocks;
    float score[MOE_MAX_EXPERTS];
    bool kept[MOE_MAX_EXPERTS];
    for (int b = 0; b < n_blocks; b++) {
        score[b] = sum_top_n(sel + (size_t)b * bs, bs, topn);
        kept[b] = false;
    }
    for (int r = 0; r < keep; r++) {
        int best = -1;
        for (int b = 0; b < n_blocks; b++)
            if (!kept[b] && (best < 0 || beats(score[b], b, score[best], best))) best = b;
        kept[best] = true;
    }
    for (int e = 0; e < E; e++) allowed[e] = kept[e / bs];
}

int moe_topk_gating_cpu(const float *logits, const float *select_bias, const moe_gate_cfg *cfg,
                        int T, int32_t *topk_idx, float *topk_w,
                        int32_t *expert_counts, float *prob_sum) {
    if (moe_gate_cfg_check(cfg, NULL, 0) != MOE_OK || T < 0 || !logits || !topk_idx || !topk_w)
        return MOE_EINVAL;
    const int E = cfg->num_experts, K = cfg->top_k;
    if (expert_counts) memset(expert_counts, 0, (size_t)E * sizeof *expert_counts);
    if (prob_sum) memset(prob_sum, 0, (size_t)E * sizeof *prob_sum);

    float s[MOE_MAX_EXPERTS], sel[MOE_MAX_EXPERTS];
    bool allowed[MOE_MAX_EXPERTS];
    for (int t = 0; t < T; t++) {
        const float *l = logits + (size_t)t * E;
        /* scores */
        if (cfg->score == MOE_SCORE_SOFTMAX) {
            float mx = -INFINITY;
            for (int e = 0; e < E; e++) mx = fmaxf(mx, l[e]);
            float sum = 0.0f;
            for (int e = 0; e < E; e++) {
                s[e] = expf(l[e] - mx);
                sum += s[e];
            }
            for (int e = 0; e < E; e++) s[e] = s[e] / sum;
        } else {
            for (int e = 0; e < E; e++) s[e] = 1.0f / (1.0f + expf(-l[e]));
        }
        for (int e = 0; e < E; e++) {
            sel[e] = select_bias ? s[e] + select_bias[e] : s[e];
            allowed[e] = true;
        }
        /* group- or node-limited masks */
        if (cfg->n_groups > 1) {
            int gs = E / cfg->n_groups;
            mask_blocks(sel, E, cfg->n_groups, cfg->topk_groups, gs < 2 ? gs : 2, allowed);
        } else if (cfg->n_nodes > 1) {
            int ns = E / cfg->n_nodes;
            int topn = (K + cfg->topk_nodes - 1) / cfg->topk_nodes;
            mask_blocks(sel, E, cfg->n_nodes, cfg->topk_nodes, topn < ns ? topn : ns, allowed);
        }
        /* top-K among allowed experts, best first */
        int32_t *idx = topk_idx + (size_t)t * K;
        float *w = topk_w + (size_t)t * K;
        for (int k = 0; k < K; k++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (allowed[e] && (best < 0 || beats(sel[e], e, sel[best], best))) best = e;
            allowed[best] = false;
            idx[k] = best;
            w[k] = s[best];
        }
        if (cfg->norm_topk) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += w[k];
            if (sum > 0.0f)
                for (int k = 0; k < K; k++) w[k] = w[k] / sum;
        }
        for (int k = 0; k < K; k++) w[k] *= cfg->routed_scaling;
        /* load statistics */
        if (expert_counts)
            for (int k = 0; k < K; k++) expert_counts[idx[k]]++;
        if (prob_sum) {
            if (cfg->score == MOE_SCORE_SOFTMAX) {
                for (int e = 0; e < E; e++) prob_sum[e] += s[e];
            } else {
                float sum = 0.0f;
                for (int e = 0; e < E; e++) sum += s[e];
                for (int e = 0; e < E; e++) prob_sum[e] += s[e] / sum;
            }
        }
    }
    return MOE_OK;
}

double moe_aux_loss(const int32_t *expert_counts, const float *prob_sum, int T, int E, int K) {
    if (T <= 0 || E <= 0 || K <= 0) return 0.0;
    double acc = 0.0;
    for (int e = 0; e < E; e++) {
        double f = (double)expert_counts[e] / ((double)T * K);
        double p = (double)prob_sum[e] / T;
        acc += f * p;
    }
    return E * acc;
}
