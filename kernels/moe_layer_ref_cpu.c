/* moe_layer_ref_cpu.c — the dense reference MoE layer: the independent truth for the end-to-end
 * test. No dispatch layout, no permutation, no all-to-all, no segments: every token is routed and
 * then sent through its K experts directly, one dot product at a time, and the results are summed
 * with the gate weights. Written separately from expert_ffn_cpu.c (dot-product loops rather than
 * row updates) so that a wrong weight offset, segment or slot in the fast path cannot hide here.
 * Rounding points are the ones the header fixes, so in practice the two agree to the last bit;
 * the tests still only demand BF16 tolerance. */
#include "kernels/moe_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out_h = bf16( (silu(bf16(x W1)) * bf16(x W3)) W2 ) for one token and one expert's weights. */
static void expert_direct(const moe_bf16 *x, const moe_bf16 *w1, const moe_bf16 *w3,
                          const moe_bf16 *w2, int H, int F, float *a, float *y) {
    for (int f = 0; f < F; f++) {
        float d1 = 0.0f, d3 = 0.0f;
        for (int h = 0; h < H; h++) {
            float xv = moe_bf16_to_f32(x[h]);
            d1 += xv * moe_bf16_to_f32(w1[(size_t)h * F + f]);
            d3 += xv * moe_bf16_to_f32(w3[(size_t)h * F + f]);
        }
        float h1 = moe_bf16_round(d1), h3 = moe_bf16_round(d3);
        a[f] = moe_bf16_round((h1 / (1.0f + expf(-h1))) * h3);
    }
    for (int h = 0; h < H; h++) {
        float d = 0.0f;
        for (int f = 0; f < F; f++) d += a[f] * moe_bf16_to_f32(w2[(size_t)f * H + h]);
        y[h] = moe_bf16_round(d);
    }
}

int moe_layer_ref_cpu(const moe_bf16 *x, int T, int H, int F, const moe_bf16 *w_gate,
                      const moe_gate_cfg *cfg, const float *select_bias, int capacity,
                      const moe_bf16 *w1, const moe_bf16 *w3, const moe_bf16 *w2, moe_bf16 *out) {
    if (moe_gate_cfg_check(cfg, NULL, 0) != MOE_OK || T < 0 || H < 1 || F < 1) return MOE_EINVAL;
    const int E = cfg->num_experts, K = cfg->top_k;
    float *logits = malloc((size_t)T * E * sizeof *logits);
    int32_t *idx = malloc((size_t)T * K * sizeof *idx);
    float *w = malloc((size_t)T * K * sizeof *w);
    int32_t *taken = calloc((size_t)E, sizeof *taken);
    float *a = malloc((size_t)F * sizeof *a);
    float *y = malloc((size_t)H * K * sizeof *y);
    int rc = (logits && idx && w && taken && a && y) ? MOE_OK : MOE_ENOMEM;
    if (rc == MOE_OK) {
        moe_router_logits_cpu(x, w_gate, logits, T, H, E);
        rc = moe_topk_gating_cpu(logits, select_bias, cfg, T, idx, w, NULL, NULL);
    }
    const size_t wsz = (size_t)H * F;
    for (int t = 0; t < T && rc == MOE_OK; t++) {
        const moe_bf16 *xt = x + (size_t)t * H;
        int kept[MOE_MAX_TOP_K];
        for (int k = 0; k < K; k++) {
            int e = idx[(size_t)t * K + k];
            kept[k] = capacity < 0 || taken[e] < capacity;
            if (kept[k]) {
                taken[e]++;
                expert_direct(xt, w1 + e * wsz, w3 + e * wsz, w2 + e * wsz, H, F, a, y + (size_t)k * H);
            }
        }
        for (int h = 0; h < H; h++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                if (kept[k]) acc = fmaf(w[(size_t)t * K + k], y[(size_t)k * H + h], acc);
            out[(size_t)t * H + h] = moe_f32_to_bf16(acc);
        }
    }
    free(logits);
    free(idx);
    free(w);
    free(taken);
    free(a);
    free(y);
    return rc;
}
