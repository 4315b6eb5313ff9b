/* costmodel.c — reading model JSON ("moesim-costmodel/1"), built-in rooflines, and the pure cost
 * functions of sim/plan/costmodel.h. The model file format is documented in calibration/README.md. */
#include "sim/plan/costmodel.h"
#include "sim/plan/global_params.h"
#include "sim/scenario/scenario_paths.h"

#include "sim/base/json_read.h"
#include "sim/plan/recipes.h"
#include "sim/scenario/scenario_fields.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CM_FORMAT "moesim-costmodel/1"

static const char *const link_names[CM_LINK_N] = { "nvlink", "rdma", "pcie" };

const char *cm_link_class_name(cm_link_class link) {
    return (link >= 0 && link < CM_LINK_N) ? link_names[link] : "unknown";
}

int cm_link_class_parse(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < CM_LINK_N; i++)
        if (strcmp(name, link_names[i]) == 0) return i;
    if (strcmp(name, "roce") == 0 || strcmp(name, "ib") == 0 || strcmp(name, "infiniband") == 0)
        return CM_LINK_RDMA;
    return -1;
}

int costmodel_dtype_parse(const char *name) {
    for (int i = 0; name && scn_compute_names[i]; i++)
        if (strcmp(scn_compute_names[i], name) == 0) return i;
    return -1;
}

const char *costmodel_dtype_name(dtype_kind dt) {
    return (int)dt >= 0 && (int)dt < DT_NKINDS ? scn_compute_names[dt] : "unknown";
}

/* ---- predictions ------------------------------------------------------------------------------ */

/* Bytes a GEMM must move at least once: A and B in the input type, C in BF16 (FP32 for FP32). */
static double gemm_bytes(double m, double n, double k, dtype_kind dt) {
    double in_b = dtype_bytes(dt);
    double out_b = dt == DT_FP32 ? 4.0 : 2.0;
    return in_b * (m * k + k * n) + out_b * m * n;
}

static int dt_index(dtype_kind dt) { return (int)dt >= 0 && (int)dt < DT_NKINDS ? (int)dt : DT_BF16; }

gpu_arch costmodel_arch(const costmodel *cm) { return cm->peak_fp4_flops > 0 ? GPU_BLACKWELL : GPU_HOPPER; }

/* The base peak of a precision: its storage type's, or a recipe's FP8 (FP4 for nvfp4) peak; a model
 * without an FP4 peak prices nvfp4 at twice its FP8 peak (the FP8:FP4 ratio of B200). */
static double base_peak(const costmodel *cm, dtype_kind dt) {
    int i = (int)dt;
    if (i >= 0 && i < 4) return cm->peak_flops[i];
    const quant_recipe *r = quant_recipe_of(dt);
    if (!r) return cm->peak_flops[DT_BF16];
    if (!r->fp4_base) return cm->peak_flops[DT_FP8];
    return cm->peak_fp4_flops > 0 ? cm->peak_fp4_flops : 2.0 * cm->peak_flops[DT_FP8];
}

/* A recipe's GEMM rate on the model's architecture (recipes.h); a recipe of the other architecture
 * only takes that one's. */
static double recipe_rate(const costmodel *cm, const quant_recipe *r) {
    double v = r->rate[costmodel_arch(cm)];
    return v > 0 ? v : r->rate[GPU_BLACKWELL] > 0 ? r->rate[GPU_BLACKWELL] : 1.0;
}

/* The GEMM parameters of a precision and the peak they run at (costmodel.h "Precisions"): its own
 * fit at its base peak; else a recipe's rate times its base peak on the per-tensor FP8 (fp8-cs) fit,
 * or on the model's default parameters when there is none. */
static const cm_gemm_params *gemm_of(const costmodel *cm, dtype_kind dt, double *peak) {
    int i = dt_index(dt);
    const quant_recipe *r = quant_recipe_of(dt);
    *peak = base_peak(cm, dt);
    if (cm->gemm_fitted[i]) return &cm->gemm_dt[i];
    if (!r) return &cm->gemm;
    *peak *= recipe_rate(cm, r);
    return cm->gemm_fitted[DT_FP8_CS] ? &cm->gemm_dt[DT_FP8_CS] : &cm->gemm;
}

static const cm_gemm_params *gemm_params(const costmodel *cm, dtype_kind dt) {
    double peak;
    return gemm_of(cm, dt, &peak);
}

static double peak_of(const costmodel *cm, dtype_kind dt) {
    double peak;
    gemm_of(cm, dt, &peak);
    return peak;
}

/* The sustained fraction of the burst tensor-core rate (<= 0 in a zeroed model: 1) */
static double sustained_of(const costmodel *cm) { return cm->sustained > 0 ? cm->sustained : 1.0; }

double costmodel_peak_flops(const costmodel *cm, dtype_kind dt) { return peak_of(cm, dt); }

static int tiled(const costmodel *cm, const cm_gemm_params *g) {
    return cm->sm_count > 0 && g->n_tile_m > 0 && g->n_tile_n > 0;
}

/* Tile/wave form (costmodel.h) of one launch over `groups` GEMMs of m[g] x n x k (m[g] <= 0: an empty
 * group, skipped); `bytes` is what the launch moves from HBM. Without the launch overhead. */
static double tiled_body_s(const costmodel *cm, const cm_gemm_params *g, const double *m, int groups, double n,
                           double k, double bytes, dtype_kind dt) {
    const double sms = cm->sm_count, peak = peak_of(cm, dt), P_sm = peak * g->eff_max / sms;
    const double load_sm = g->tile_load_Bps / sms, in_B = dtype_bytes(dt);
    const double t_hbm = bytes / g->operand_Bps, q = g->overlap_q;
    /* the library's tile choice: the tiling with the least on-chip time. The combination with HBM
     * streaming below increases with t_sm, so the best tiling's t_sm gives the least total and the
     * smooth max (three pow calls, most of a plan's CPU when done per tiling) is taken once. */
    double best_sm = INFINITY, f = 0.0;
    for (int e = 0; e < groups; e++)
        if (m[e] > 0) f += 2.0 * m[e] * n * k;
    for (int a = 0; a < g->n_tile_m; a++) {
        double bm = g->tile_m[a], m_tiles = 0;
        for (int e = 0; e < groups; e++)
            if (m[e] > 0) m_tiles += ceil(m[e] / bm);
        for (int b = 0; b < g->n_tile_n; b++) {
            double bn = g->tile_n[b];
            double waves = ceil(m_tiles * ceil(n / bn) / sms);
            double t_mma = 2.0 * bm * bn * k / P_sm, t_load = (bm + bn) * k * in_B / load_sm;
            double t_sm = waves * (g->tile_overhead_s + (t_mma > t_load ? t_mma : t_load));
            if (t_sm < best_sm) best_sm = t_sm;
        }
    }
    if (!isfinite(best_sm)) return INFINITY;
    best_sm /= sustained_of(cm);   /* SM-clocked work runs at the sustained clock, HBM streaming does not */
    double body = q > 0 ? pow(pow(best_sm, q) + pow(t_hbm, q), 1.0 / q) : best_sm + t_hbm;
    /* no launch runs faster than the best published rate (at the sustained clock) */
    double floor_s = g->ceil_eff > 0 ? f / (peak * g->ceil_eff * sustained_of(cm)) - g->launch_s : 0.0;
    return body > floor_s ? body : floor_s;
}

/* GEMM time without the launch. */
static double gemm_body_s(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    const cm_gemm_params *g = gemm_params(cm, dt);
    if (tiled(cm, g)) return tiled_body_s(cm, g, &m, 1, n, k, gemm_bytes(m, n, k, dt), dt);
    double f = 2.0 * m * n * k;
    return f / (peak_of(cm, dt) * g->eff_max * sustained_of(cm)) + gemm_bytes(m, n, k, dt) / g->operand_Bps;
}

double costmodel_gemm_s(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    if (m <= 0 || n <= 0 || k <= 0) return 0.0;
    return gemm_params(cm, dt)->launch_s + gemm_body_s(cm, m, n, k, dt);
}

double costmodel_gemm_eff(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    if (m <= 0 || n <= 0 || k <= 0) return 0.0;
    double f = 2.0 * m * n * k;
    return f / (peak_of(cm, dt) * gemm_body_s(cm, m, n, k, dt));
}

double costmodel_grouped_gemm_s(const costmodel *cm, const double *tokens, int n_experts,
                                double n, double k, dtype_kind dt) {
    const cm_gemm_params *g = gemm_params(cm, dt);
    double body = 0.0, bytes = 0.0;
    int any = 0;
    for (int e = 0; e < n_experts; e++) {
        if (tokens[e] <= 0) continue;
        /* additive form: the groups one after another; tiled: their tiles share the waves */
        if (!tiled(cm, g)) body += gemm_body_s(cm, tokens[e], n, k, dt);
        bytes += gemm_bytes(tokens[e], n, k, dt);
        any = 1;
    }
    if (!any) return 0.0;
    if (tiled(cm, g)) body = tiled_body_s(cm, g, tokens, n_experts, n, k, bytes, dt);
    return g->launch_s + body / (cm->grouped_rate > 0 ? cm->grouped_rate : 1.0);
}

/* The cost model's parameters of a quantize kernel class: its own per-kernel fit, else the cast's
 * ("quantize") at the published ratio of the class to a cast, else the memory model's. Ratios:
 * an amax reduction 3.03 / 3.92 TB/s of a per-tensor cast (one H200, 16384 x 7168 BF16,
 * torch.compile kernels; moesim research note kernels-scale.md §1.2 and §7); NVFP4's cast with
 * stochastic rounding 4.5 / 6.4 TB/s of its round-to-nearest cast (TransformerEngine pull request
 * #2412, B300, row- and column-wise). */
#define AMAX_VS_CAST (3.03 / 3.92)
#define RHT_SR_VS_CAST (4.5 / 6.4)
static cm_mem_params quant_kernel_params(const costmodel *cm, quant_kernel k) {
    const cm_kernel_params *own = NULL, *cast = NULL;
    for (int i = 0; i < cm->n_kernels; i++) {
        if (!strcmp(cm->kernels[i].name, quant_kernel_name(k))) own = &cm->kernels[i];
        if (!strcmp(cm->kernels[i].name, quant_kernel_name(QK_CAST))) cast = &cm->kernels[i];
    }
    if (own) return own->p;
    cm_mem_params p = cast ? cast->p : cm->memory;
    if (k == QK_AMAX) p.bw_Bps *= AMAX_VS_CAST;
    if (k == QK_RHT_SR) p.bw_Bps *= RHT_SR_VS_CAST;
    return p;
}

double costmodel_quant_s(const costmodel *cm, dtype_kind dt, quant_role role, double elements, int chunks) {
    const quant_recipe *r = quant_recipe_of(dt);
    if (!r || cm->quantization_free || elements <= 0 || role < 0 || role >= QR_NROLES) return 0.0;
    const quant_passes *ps = &r->pass[r->needs_blackwell ? GPU_BLACKWELL : costmodel_arch(cm)][role];
    double t = 0.0;
    for (int i = 0; i < ps->n; i++) {
        const quant_pass *q = &ps->p[i];
        cm_mem_params k = quant_kernel_params(cm, q->k);
        t += (q->per_expert && chunks > 1 ? chunks : 1) * k.launch_s + elements * (q->read_B + q->write_B) / k.bw_Bps;
    }
    return t;
}

double costmodel_expert_ffn_part_s(const costmodel *cm, const double *tokens, int n_experts, double hidden,
                                   double ffn, dtype_kind dt, expert_part part, double *quant_s) {
    double total_tokens = 0.0;
    int chunks = 0;
    for (int e = 0; e < n_experts; e++)
        if (tokens[e] > 0) total_tokens += tokens[e], chunks++;
    if (quant_s) *quant_s = 0.0;
    if (total_tokens <= 0) return 0.0;
    double gate_up = costmodel_grouped_gemm_s(cm, tokens, n_experts, 2.0 * ffn, hidden, dt);
    /* SwiGLU reads the 2*ffn gate/up activations and writes ffn outputs, BF16. */
    double act_bytes = total_tokens * ffn * 3.0 * 2.0;
    double swiglu = costmodel_kernel_s(cm, "swiglu", act_bytes);
    double down = costmodel_grouped_gemm_s(cm, tokens, n_experts, hidden, ffn, dt);
    /* the forward quantizes both GEMM inputs (tokens x hidden, tokens x ffn), the input-gradient
     * kernel both output gradients (tokens x hidden of down, tokens x 2 ffn of gate+up), each GEMM
     * call its active experts' weights' per-use pass; the weight gradients read copies made before */
    double q = 0.0, w_use = chunks * 3.0 * hidden * ffn;
    if (part == EXPERT_FWD)
        q = costmodel_quant_s(cm, dt, QR_INPUT, total_tokens * hidden, chunks) +
            costmodel_quant_s(cm, dt, QR_INPUT, total_tokens * ffn, chunks);
    else if (part == EXPERT_BWD_INPUT)
        q = costmodel_quant_s(cm, dt, QR_GRAD, total_tokens * hidden, chunks) +
            costmodel_quant_s(cm, dt, QR_GRAD, total_tokens * 2.0 * ffn, chunks);
    if (part != EXPERT_BWD_WEIGHT) q += costmodel_quant_s(cm, dt, QR_WEIGHT_USE, w_use, chunks);
    if (quant_s) *quant_s = q;
    return gate_up + swiglu + down + q;
}

double costmodel_expert_ffn_fwd_s(const costmodel *cm, const double *tokens, int n_experts,
                                  double hidden, double ffn, dtype_kind dt) {
    return costmodel_expert_ffn_part_s(cm, tokens, n_experts, hidden, ffn, dt, EXPERT_FWD, NULL);
}

double costmodel_expert_ffn_quant_s(const costmodel *cm, const double *tokens, int n_experts, double hidden,
                                    double ffn, dtype_kind dt, expert_part part) {
    double q;
    costmodel_expert_ffn_part_s(cm, tokens, n_experts, hidden, ffn, dt, part, &q);
    return q;
}

double costmodel_memory_bound_s(const costmodel *cm, double bytes) {
    if (bytes <= 0) return 0.0;
    return cm->memory.launch_s + bytes / cm->memory.bw_Bps;
}

double costmodel_kernel_s(const costmodel *cm, const char *kernel, double bytes) {
    if (bytes <= 0) return 0.0;
    for (int i = 0; kernel && i < cm->n_kernels; i++)
        if (strcmp(cm->kernels[i].name, kernel) == 0)
            return cm->kernels[i].p.launch_s + bytes / cm->kernels[i].p.bw_Bps;
    return costmodel_memory_bound_s(cm, bytes);
}

/* (query, key) pairs an attention launch computes: 128 x 128 blocks, causal ones on and below the
 * diagonal computed whole (FlashAttention's tiling) */
#define ATTN_BLOCK 128.0
double costmodel_attention_pairs(const cm_attn_shape *a) {
    double nq = ceil(a->seq_q / ATTN_BLOCK), nk = ceil(a->seq_k / ATTN_BLOCK), blocks;
    if (!a->causal) blocks = nq * nk;
    else if (a->seq_k >= a->seq_q) blocks = nq * (nq + 1) / 2;          /* the lower triangle */
    else blocks = nq * (nk + 1 < nq ? nk + 1 : nq);                     /* a band: window + diagonal */
    return a->batch * a->heads * blocks * ATTN_BLOCK * ATTN_BLOCK;
}

double costmodel_attention_core_s(const costmodel *cm, const cm_attn_shape *a, int bwd) {
    if (a->batch <= 0 || a->heads <= 0 || a->seq_q <= 0 || a->seq_k <= 0) return 0.0;
    const double P = cm->peak_flops[DT_BF16];
    if (!cm->attention_fitted) {
        /* legacy: the causal average of keys per query (seq / 2; w - w^2 / (2 seq) under a window w,
         * as model.h counts them), twice that backward */
        double keys = !a->causal ? a->seq_k : a->seq_k >= a->seq_q ? 0.5 * a->seq_q
                                 : a->seq_k - a->seq_k * a->seq_k / (2.0 * a->seq_q);
        double flops = 2.0 * a->batch * a->heads * a->seq_q * keys * (a->d_qk + a->d_v) * (bwd ? 2.0 : 1.0);
        return cm->attention_launch_s + flops / (P * cm->attention_eff * sustained_of(cm));
    }
    const cm_attn_params *p = &cm->attn[bwd ? 1 : 0];
    double mm = bwd ? 2.0 * (3.0 * a->d_qk + 2.0 * a->d_v) : 2.0 * (a->d_qk + a->d_v);
    double pairs = costmodel_attention_pairs(a), rows = a->batch * a->heads * a->seq_q;
    /* the matmuls, the softmax and the causal masking run at the SM clock; the per-row work (loading
     * Q, writing O and the log-sum-exp) is memory traffic */
    double sm = pairs * (mm / (P * p->eff) + p->pair_s) + rows * p->row_fixed_s;
    if (a->causal && isfinite(p->causal_eff)) sm += pairs * mm / (P * p->causal_eff);
    return cm->attention_launch_s + sm / sustained_of(cm) + rows * 0.5 * (a->d_qk + a->d_v) * p->row_s;
}

double costmodel_link_s(const costmodel *cm, cm_link_class link, double bytes) {
    if (link < 0 || link >= CM_LINK_N || !cm->link[link].present) return INFINITY;
    if (bytes <= 0) return 0.0;
    return cm->link[link].alpha_s + bytes / cm->link[link].beta_Bps;
}

/* ---- built-in rooflines --------------------------------------------------------------------------- */

costmodel costmodel_from_gpu(const gpu_cfg *gpu) {
    costmodel cm;
    memset(&cm, 0, sizeof cm);
    snprintf(cm.source, sizeof cm.source, "built-in roofline");
    snprintf(cm.device, sizeof cm.device, "%s", gpu->name[0] ? gpu->name : "unnamed GPU");
    cm.measured = 0;
    double bf16 = gpu->bf16_tflops * 1e12;
    cm.peak_flops[DT_BF16] = bf16;
    cm.peak_flops[DT_FP16] = bf16;
    cm.peak_flops[DT_FP8] = gpu->fp8_tflops > 0 ? gpu->fp8_tflops * 1e12 : 2.0 * bf16;
    cm.peak_flops[DT_FP32] = bf16 / 14.7;   /* H100 SXM: 67 TFLOP/s FP32 vs 989 BF16 */
    cm.peak_fp4_flops = gpu->fp4_tflops * 1e12;
    double hbm = gpu->hbm_GBps * 1e9;
    /* REFERENCE.md §6: large GEMMs reach ~75-80% of peak; STREAM-like kernels ~90% of HBM. */
    cm.gemm = (cm_gemm_params){ .eff_max = 0.80, .operand_Bps = 0.9 * hbm, .launch_s = 3e-6 };
    cm.memory = (cm_mem_params){ .bw_Bps = 0.9 * hbm, .launch_s = 2e-6 };
    /* quantize casts at 80% of HBM ("80% of peak memory bandwidth", TransformerEngine's multi-tensor
     * cast-transpose on H100, pull request #998); the other quantize kernels at their published ratios
     * to it (quant_kernel_params) */
    cm.n_kernels = 1;
    snprintf(cm.kernels[0].name, sizeof cm.kernels[0].name, "%s", quant_kernel_name(QK_CAST));
    cm.kernels[0].p = (cm_mem_params){ .bw_Bps = 0.8 * hbm, .launch_s = 2e-6 };
    cm.sustained = gpu->sustained > 0 ? gpu->sustained : 1.0;
    cm.attention_eff = 0.50;
    cm.attention_launch_s = 3e-6;
    cm.link[CM_LINK_NVLINK] = (cm_link_params){ 1, 3e-6, 160e9, 0 };
    cm.link[CM_LINK_RDMA] = (cm_link_params){ 1, 10e-6, 45e9, 0 };
    cm.link[CM_LINK_PCIE] = (cm_link_params){ 1, 5e-6, 55e9, 0 };
    snprintf(cm.basis, sizeof cm.basis, "spec");
    return cm;
}

/* Line rate of a link class of the cluster (bytes/s per GPU, one direction; 0 = none). */
static double cluster_line_Bps(const cluster_cfg *c, cm_link_class l) {
    switch (l) {
    case CM_LINK_NVLINK: return c->nvlink_GBps * 1e9;
    case CM_LINK_RDMA: return c->nic_gbps / 8.0 * 1e9;
    case CM_LINK_PCIE: return c->pcie_GBps * 1e9;
    default: return 0;
    }
}

costmodel costmodel_from_cluster(const cluster_cfg *c) {
    costmodel cm = costmodel_from_gpu(&c->gpu);
    /* NVLink and PCIe figures of a cluster are achievable rates; a NIC's is its line rate, of which
     * ~90% is achievable (REFERENCE.md section 6) */
    const double eff[CM_LINK_N] = {1.0, 0.9, 1.0};
    for (int l = 0; l < CM_LINK_N; l++) {
        double line = cluster_line_Bps(c, (cm_link_class)l);
        if (line > 0) cm.link[l].beta_Bps = eff[l] * line, cm.link[l].line_Bps = line;
    }
    if (c->latency_us.nvlink > 0) cm.link[CM_LINK_NVLINK].alpha_s = c->latency_us.nvlink * 1e-6;
    if (c->latency_us.same_leaf > 0) cm.link[CM_LINK_RDMA].alpha_s = c->latency_us.same_leaf * 1e-6;
    return cm;
}

/* ---- JSON reading --------------------------------------------------------------------------------- */

/* Keys a model file may hold besides the ones read: documentation and the fit's own record. */
static const char *const top_keys[] = {"format", "source", "device", "measured", "basis", "notes", "provenance", "residuals",
                                       "traces", "base", "tiles", "collectives", "peak_tflops", "sustained", "gemm",
                                       "memory", "attention", "kernels", "links", NULL};
static const char *const peak_keys[] = {"bf16", "fp8", "fp16", "fp32", "fp4", NULL};
static const char *const gemm_keys[] = {"eff_max", "operand_GBps", "launch_us", "sm_count", "by_dtype", "fit",
                                        "stderr", "dropped", NULL};
static const char *const gemm_dt_keys[] = {"eff_max", "operand_GBps", "launch_us", "tile_load_GBps",
                                           "tile_overhead_us", "overlap_q", "ceil_eff", "tile_m", "tile_n", "fit",
                                           "stderr", "dropped", "tables", "from", NULL};
static const char *const attention_keys[] = {"eff", "launch_us", "fwd", "bwd", "fit", "stderr", "dropped", NULL};
static const char *const attention_dir_keys[] = {"eff", "pair_ps", "row_dim_ps", "row_ps", "causal_eff", "fit",
                                                 "stderr", "dropped", "tables", NULL};
static const char *const basis_names[] = {"spec", "published", "measured", NULL};
static const char *const mem_keys[] = {"GBps", "launch_us", "fit", "stderr", "dropped", NULL};
static const char *const link_keys[] = {"alpha_us", "GBps", "line_GBps", "from", NULL};

/* An array of 1..cap positive integers (tile sizes). */
static int parse_tiles(const json_reader *r, const cJSON *o, const char *path, const char *key, int cap, int *out,
                       int *n) {
    const cJSON *arr;
    char p[160];
    json_path_key(p, sizeof p, path, key);
    if (json_get_array(r, o, path, key, JSON_REQUIRED, &arr)) return EXIT_BADINPUT;
    int k = cJSON_GetArraySize(arr);
    if (k < 1 || k > cap) return json_bad(r, p, arr, "1 to %d tile sizes", cap);
    int i = 0;
    for (const cJSON *v = arr->child; v; v = v->next, i++) {
        char pi[176];
        if (json_int_value(r, v, json_path_index(pi, sizeof pi, p, i), JSON_REQUIRED, 1, 4096, &out[i]))
            return EXIT_BADINPUT;
    }
    *n = k;
    return 0;
}

/* gemm.by_dtype.<precision>: the tile/wave form (costmodel.h) */
static int parse_gemm_dt(const json_reader *r, const cJSON *o, const char *path, cm_gemm_params *g) {
    double launch_us = 0, op = 0, load = 0, over_us = 0;
    memset(g, 0, sizeof *g);
    if (!cJSON_IsObject(o)) return json_bad(r, path, o, "an object (one precision's GEMM fit)");
    if (json_check_keys(r, o, path, gemm_dt_keys) ||
        json_get_number(r, o, path, "eff_max", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.5, &g->eff_max) ||
        json_get_number(r, o, path, "operand_GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &op) ||
        json_get_number(r, o, path, "launch_us", JSON_REQUIRED, 0, 1e6, &launch_us) ||
        json_get_number(r, o, path, "tile_load_GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e8, &load) ||
        json_get_number(r, o, path, "tile_overhead_us", JSON_REQUIRED, 0, 1e6, &over_us) ||
        json_get_number(r, o, path, "overlap_q", JSON_REQUIRED | JSON_LO_OPEN, 0, 100, &g->overlap_q) ||
        json_get_number(r, o, path, "ceil_eff", JSON_LO_OPEN, 0, 1.0, &g->ceil_eff) ||
        parse_tiles(r, o, path, "tile_m", CM_MAX_TILE_M, g->tile_m, &g->n_tile_m) ||
        parse_tiles(r, o, path, "tile_n", CM_MAX_TILE_N, g->tile_n, &g->n_tile_n))
        return EXIT_BADINPUT;
    g->operand_Bps = op * 1e9;
    g->launch_s = launch_us * 1e-6;
    g->tile_load_Bps = load * 1e9;
    g->tile_overhead_s = over_us * 1e-6;
    return 0;
}

/* attention.fwd / attention.bwd: a fitted attention kernel (costmodel.h); causal_eff null: none */
static int parse_attn_dir(const json_reader *r, const cJSON *o, const char *path, cm_attn_params *a) {
    double pair_ps = 0, row_ps = 0, row_fixed_ps = 0;
    a->causal_eff = INFINITY;
    if (!cJSON_IsObject(o)) return json_bad(r, path, o, "an object (a fitted attention kernel)");
    if (json_check_keys(r, o, path, attention_dir_keys) ||
        json_get_number(r, o, path, "eff", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.5, &a->eff) ||
        json_get_number(r, o, path, "pair_ps", JSON_REQUIRED, 0, 1e6, &pair_ps) ||
        json_get_number(r, o, path, "row_dim_ps", JSON_REQUIRED, 0, 1e9, &row_ps) ||
        json_get_number(r, o, path, "row_ps", 0, 0, 1e12, &row_fixed_ps) ||
        json_get_number(r, o, path, "causal_eff", JSON_NULL_OK | JSON_LO_OPEN, 0, 1e6, &a->causal_eff))
        return EXIT_BADINPUT;
    a->pair_s = pair_ps * 1e-12;
    a->row_s = row_ps * 1e-12;
    a->row_fixed_s = row_fixed_ps * 1e-12;
    return 0;
}

static int parse_mem(const json_reader *r, const cJSON *o, const char *path, cm_mem_params *p) {
    double gbps = 0, launch_us = 0;
    if (json_check_keys(r, o, path, mem_keys) ||
        json_get_number(r, o, path, "GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &gbps) ||
        json_get_number(r, o, path, "launch_us", JSON_REQUIRED, 0, 1e6, &launch_us))
        return EXIT_BADINPUT;
    p->bw_Bps = gbps * 1e9;
    p->launch_s = launch_us * 1e-6;
    return 0;
}

static int parse_model(const json_reader *r, const cJSON *root, costmodel *cm) {
    if (!cJSON_IsObject(root)) return json_bad(r, "(root)", root, "a JSON object");
    if (json_check_keys(r, root, "", top_keys)) return EXIT_BADINPUT;
    const cJSON *fmt = json_member(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CM_FORMAT) != 0)
        return json_bad(r, "format", fmt, "\"" CM_FORMAT "\"");
    if (json_get_string(r, root, "", "source", JSON_REQUIRED | JSON_NONEMPTY, cm->source, sizeof cm->source) ||
        json_get_string(r, root, "", "device", JSON_REQUIRED | JSON_NONEMPTY, cm->device, sizeof cm->device) ||
        json_get_bool(r, root, "", "measured", JSON_REQUIRED, &cm->measured))
        return EXIT_BADINPUT;
    snprintf(cm->basis, sizeof cm->basis, "%s", cm->measured ? "measured" : "spec");
    if (json_get_string(r, root, "", "basis", JSON_NONEMPTY, cm->basis, sizeof cm->basis)) return EXIT_BADINPUT;
    int bi = 0;
    while (basis_names[bi] && strcmp(basis_names[bi], cm->basis) != 0) bi++;
    if (!basis_names[bi])
        return json_bad(r, "basis", json_member(root, "basis"), "\"spec\", \"published\" or \"measured\"");

    /* peaks: bf16 required; the others default to the H100-class ratios */
    const cJSON *pk, *g, *m, *a, *ks, *ls;
    double bf16 = 0, fp8 = -1, fp16 = -1, fp32 = -1, fp4 = 0;
    if (json_get_object(r, root, "", "peak_tflops", JSON_REQUIRED, &pk) ||
        json_check_keys(r, pk, "peak_tflops", peak_keys) ||
        json_get_number(r, pk, "peak_tflops", "bf16", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &bf16) ||
        json_get_number(r, pk, "peak_tflops", "fp8", JSON_LO_OPEN, 0, 1e6, &fp8) ||
        json_get_number(r, pk, "peak_tflops", "fp16", JSON_LO_OPEN, 0, 1e6, &fp16) ||
        json_get_number(r, pk, "peak_tflops", "fp32", JSON_LO_OPEN, 0, 1e6, &fp32) ||
        json_get_number(r, pk, "peak_tflops", "fp4", JSON_LO_OPEN, 0, 1e6, &fp4))
        return EXIT_BADINPUT;
    cm->peak_fp4_flops = fp4 * 1e12;
    cm->sustained = 1.0;
    if (json_get_number(r, root, "", "sustained", JSON_LO_OPEN, 0, 1, &cm->sustained)) return EXIT_BADINPUT;
    cm->peak_flops[DT_BF16] = bf16 * 1e12;
    cm->peak_flops[DT_FP8] = (fp8 > 0 ? fp8 : 2.0 * bf16) * 1e12;
    cm->peak_flops[DT_FP16] = (fp16 > 0 ? fp16 : bf16) * 1e12;
    cm->peak_flops[DT_FP32] = (fp32 > 0 ? fp32 : bf16 / 14.7) * 1e12;

    double launch_us = 0, op_gbps = INFINITY;
    /* operand_GBps null: the operand term was not resolved by the data (CPU fits): no streaming cost */
    if (json_get_object(r, root, "", "gemm", JSON_REQUIRED, &g) || json_check_keys(r, g, "gemm", gemm_keys) ||
        json_get_number(r, g, "gemm", "eff_max", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.0, &cm->gemm.eff_max) ||
        (!cJSON_IsNull(json_member(g, "operand_GBps")) &&
         json_get_number(r, g, "gemm", "operand_GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &op_gbps)) ||
        json_get_number(r, g, "gemm", "launch_us", JSON_REQUIRED, 0, 1e6, &launch_us) ||
        json_get_int(r, g, "gemm", "sm_count", 0, 1, 100000, &cm->sm_count))
        return EXIT_BADINPUT;
    cm->gemm.operand_Bps = op_gbps * 1e9;
    cm->gemm.launch_s = launch_us * 1e-6;
    const cJSON *bd;
    if (json_get_object(r, g, "gemm", "by_dtype", 0, &bd)) return EXIT_BADINPUT;
    for (const cJSON *d = bd ? bd->child : NULL; d; d = d->next) {
        char path[160];
        json_path_key(path, sizeof path, "gemm.by_dtype", d->string);
        int dt = costmodel_dtype_parse(d->string);
        if (dt < 0) return json_bad(r, path, NULL, "a precision name (fp8, bf16, fp16, fp32, fp8-cs, mxfp8, nvfp4)");
        if (parse_gemm_dt(r, d, path, &cm->gemm_dt[dt])) return EXIT_BADINPUT;
        if (!cm->sm_count) return json_bad(r, "gemm.sm_count", NULL, "the GPU's SM count (required with gemm.by_dtype)");
        cm->gemm_fitted[dt] = 1;
    }
    /* FP16 GEMMs run at the BF16 rate: they take BF16's fit when they have none */
    if (!cm->gemm_fitted[DT_FP16] && cm->gemm_fitted[DT_BF16]) {
        cm->gemm_fitted[DT_FP16] = 1;
        cm->gemm_dt[DT_FP16] = cm->gemm_dt[DT_BF16];
    }

    if (json_get_object(r, root, "", "memory", JSON_REQUIRED, &m) || parse_mem(r, m, "memory", &cm->memory))
        return EXIT_BADINPUT;

    double a_launch_us = launch_us;
    if (json_get_object(r, root, "", "attention", JSON_REQUIRED, &a) ||
        json_check_keys(r, a, "attention", attention_keys) ||
        json_get_number(r, a, "attention", "eff", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.0, &cm->attention_eff) ||
        json_get_number(r, a, "attention", "launch_us", 0, 0, 1e6, &a_launch_us))
        return EXIT_BADINPUT;
    cm->attention_launch_s = a_launch_us * 1e-6;
    const cJSON *af = json_member(a, "fwd"), *ab = json_member(a, "bwd");
    if (af || ab) {
        if (!af || !ab) return json_bad(r, af ? "attention.bwd" : "attention.fwd", NULL,
                                        "both attention.fwd and attention.bwd (a fitted kernel)");
        if (parse_attn_dir(r, af, "attention.fwd", &cm->attn[0]) || parse_attn_dir(r, ab, "attention.bwd", &cm->attn[1]))
            return EXIT_BADINPUT;
        cm->attention_fitted = 1;
    }

    if (json_get_object(r, root, "", "kernels", 0, &ks)) return EXIT_BADINPUT;
    for (const cJSON *k = ks ? ks->child : NULL; k; k = k->next) {
        char path[160];
        json_path_key(path, sizeof path, "kernels", k->string);
        if (cm->n_kernels >= CM_MAX_KERNELS)
            return json_bad(r, path, NULL, "at most %d per-kernel models", CM_MAX_KERNELS);
        if (!cJSON_IsObject(k)) return json_bad(r, path, k, "an object");
        if (strlen(k->string) >= CM_NAME_MAX || !k->string[0])
            return json_bad(r, "kernels", NULL, "kernel names of 1 to %d characters", CM_NAME_MAX - 1);
        cm_kernel_params *kp = &cm->kernels[cm->n_kernels];
        snprintf(kp->name, sizeof kp->name, "%s", k->string);
        if (parse_mem(r, k, path, &kp->p)) return EXIT_BADINPUT;
        cm->n_kernels++;
    }

    if (json_get_object(r, root, "", "links", 0, &ls)) return EXIT_BADINPUT;
    for (const cJSON *l = ls ? ls->child : NULL; l; l = l->next) {
        char path[160];
        json_path_key(path, sizeof path, "links", l->string);
        int cls = cm_link_class_parse(l->string);
        if (cls < 0) {
            char q[96];
            json_truncate_into(l->string, q + 1, sizeof q - 2);
            q[0] = '"';
            strcat(q, "\"");
            return moe_error_input(r->err, r->file, "links", q, "a link class: nvlink, rdma or pcie");
        }
        if (!cJSON_IsObject(l)) return json_bad(r, path, l, "an object");
        double alpha_us = 0, gbps = 0, line = 0;
        if (json_check_keys(r, l, path, link_keys) ||
            json_get_number(r, l, path, "alpha_us", JSON_REQUIRED, 0, 1e7, &alpha_us) ||
            json_get_number(r, l, path, "GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &gbps) ||
            json_get_number(r, l, path, "line_GBps", JSON_LO_OPEN, 0, 1e6, &line))
            return EXIT_BADINPUT;
        if (line > 0 && gbps > line) {
            char lp[176];
            json_path_key(lp, sizeof lp, path, "GBps");
            return json_bad(r, lp, json_member(l, "GBps"), "at most the link's line rate line_GBps = %g", line);
        }
        cm->link[cls] = (cm_link_params){ 1, alpha_us * 1e-6, gbps * 1e9, line * 1e9 };
    }
    return 0;
}

static int costmodel_from_json(const char *file, const cJSON *root, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    json_reader r = { file, err };
    size_t n = strlen(file);
    if (n >= sizeof out->file) /* never cut silently: the name is what every later message shows */
        return moe_error_input(err, NULL, NULL, NULL, "a cost-model path shorter than %zu characters (got %zu)",
                               sizeof out->file, n);
    memcpy(out->file, file, n + 1);
    return parse_model(&r, root, out);
}

int costmodel_parse(const char *file_label, const char *json_text, costmodel *out, moe_error *err) {
    const char *file = file_label ? file_label : "(model)";
    memset(out, 0, sizeof *out);
    cJSON *root = json_parse_strict(file, json_text, json_text ? strlen(json_text) : 0, err);
    if (!root) return err->code;
    int rc = costmodel_from_json(file, root, out, err);
    cJSON_Delete(root);
    return rc;
}

int costmodel_load(const char *path, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    cJSON *root = json_load(path, 0, err);
    if (!root) return err->code;
    int rc = costmodel_from_json(path, root, out, err);
    cJSON_Delete(root);
    return rc;
}

/* What the scenario sets in the model: precision.quantization_free, and cluster.gpu.sustained (given:
 * it replaces the model's; auto: the committed joint fit's value for the GPU kind when it has one,
 * global_params.h, else the model's own) */
static void set_from_scenario(const scenario *s, costmodel *cm) {
    double v;
    cm->quantization_free = s->precision.quantization_free;
    if (s->cluster.gpu.sustained > 0) {
        cm->sustained = s->cluster.gpu.sustained;
        snprintf(cm->sustained_from, sizeof cm->sustained_from, "scenario");
    } else if (global_param_value(s, "cluster.gpu.sustained", &v, NULL) == 0) {
        cm->sustained = v;
        snprintf(cm->sustained_from, sizeof cm->sustained_from, "global fit");
    }
    if (s->cluster.gpu.grouped_gemm_rate > 0) cm->grouped_rate = s->cluster.gpu.grouped_gemm_rate;
    else if (global_param_value(s, "cluster.gpu.grouped_gemm_rate", &v, NULL) == 0) cm->grouped_rate = v;
}

int costmodel_for_scenario(const scenario *s, costmodel *out, moe_error *err) {
    if (!s->calibration[0]) {
        *out = costmodel_from_cluster(&s->cluster);
        set_from_scenario(s, out);
        return 0;
    }
    char path[SCN_PATH_MAX * 2 + 4096];
    if (scenario_resolve_path(s, s->calibration, path, sizeof path) != 0 || access(path, R_OK) != 0)
        return moe_error_input(err, s->file, "calibration", s->calibration,
                               "a readable cost-model JSON (moesim-costmodel/1), e.g. "
                               "calibration/models/h800-published.json");
    if (costmodel_load(path, out, err)) return moe_error_context(err, s->file, "calibration");
    /* a model fitted without FP4 GEMMs takes the FP4 peak of the scenario's GPU */
    if (out->peak_fp4_flops <= 0) out->peak_fp4_flops = s->cluster.gpu.fp4_tflops * 1e12;
    set_from_scenario(s, out);
    /* links: a measured efficiency applies to the scenario's own line rate (a sweep of nic_gbps is
     * priced at the rate the NIC reaches); a class the model lacks (a single-node fit) comes from the
     * cluster as the built-in roofline takes it */
    costmodel roof = costmodel_from_cluster(&s->cluster);
    for (int l = 0; l < CM_LINK_N; l++) {
        cm_link_params *k = &out->link[l];
        double line = cluster_line_Bps(&s->cluster, (cm_link_class)l);
        if (!k->present) *k = roof.link[l];
        else if (k->line_Bps > 0 && line > 0) k->beta_Bps *= line / k->line_Bps, k->line_Bps = line;
    }
    return 0;
}

int costmodel_fabric_cluster(const scenario *s, cluster_cfg *out, moe_error *err) {
    costmodel cm;
    *out = s->cluster;
    if (costmodel_for_scenario(s, &cm, err)) return err->code;
    out->nvlink_GBps = cm.link[CM_LINK_NVLINK].beta_Bps / 1e9;
    out->nic_gbps = cm.link[CM_LINK_RDMA].beta_Bps * 8.0 / 1e9;
    return 0;
}

cJSON *costmodel_provenance_json(const costmodel *cm) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", cm->source);
    cJSON_AddStringToObject(o, "device", cm->device);
    cJSON_AddBoolToObject(o, "measured", cm->measured);
    cJSON_AddStringToObject(o, "basis", cm->basis[0] ? cm->basis : (cm->measured ? "measured" : "spec"));
    if (cm->file[0]) cJSON_AddStringToObject(o, "file", cm->file);
    cJSON_AddNumberToObject(o, "sustained", cm->sustained > 0 ? cm->sustained : 1.0);
    cJSON_AddStringToObject(o, "sustained_from", cm->sustained_from[0] ? cm->sustained_from : "model");
    return o;
}
