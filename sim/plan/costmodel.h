/* costmodel.h — compute and communication cost models: the simulator's ONLY reader of calibration.
 *
 * A cost model is a small set of fitted (or published) parameters, stored as a model JSON
 * ("moesim-costmodel/1", written by `simcal fit`, described in calibration/README.md). The scenario
 * names it (`scenario.calibration`); when that is empty the simulator builds a roofline model from the
 * scenario's GPU and cluster (costmodel_from_gpu / costmodel_from_cluster), labelled
 * "measured": false, "source": "built-in roofline". Results carry costmodel_provenance_json().
 *
 * The functions below are pure (no I/O, no global state): the step executor may call them millions of
 * times. All inputs and outputs are SI: seconds, bytes, FLOPs.
 *
 * ---- Models -------------------------------------------------------------------------------------
 * GEMM [m x k] x [k x n] in one precision, f = 2 m n k FLOPs, B = bytes of A, B and C. Two forms:
 *
 * Tile/wave form (a model fitted on GPU GEMM tables: gemm.by_dtype in the model JSON). A GEMM library
 * (DeepGEMM, cuBLAS) runs a persistent kernel over output tiles of BM x BN on the GPU's SMs and picks,
 * by its own heuristic, the tile that runs fastest; the model does the same over the model's tile
 * sizes (tile_m x tile_n):
 *     tiles  = ceil(m / BM) ceil(n / BN)          (a grouped GEMM: summed over its non-empty groups)
 *     waves  = ceil(tiles / sm_count)             (wave quantisation: a partial wave costs a whole one)
 *     t_tile = tile_overhead + max(2 BM BN k / (peak / sm_count x eff_max),            (tensor cores)
 *                                  (BM + BN) k in_bytes / (tile_load_Bps / sm_count))  (operand loads)
 *     t_sm   = waves x t_tile,   t_hbm = B / operand_Bps
 *     t      = max(launch + min over tiles of (t_sm^q + t_hbm^q)^(1/q),    (q = overlap_q: a smooth max,
 *                  f / (peak x ceil_eff))                                   compute overlaps HBM traffic)
 * Skinny GEMMs (m = a few tokens per expert) occupy few SMs and stream their weights from HBM; large
 * ones are tensor-core bound at eff_max of peak, never above ceil_eff (the fit sets it to the best
 * published rate of the precision: a tile form fitted on small and medium shapes must not extrapolate
 * past the maximum achievable rate measured over a shape sweep); a shape just past a wave boundary
 * pays a whole wave.
 *
 * Additive form (legacy, and models fitted on CPU traces): t = launch + f / (peak eff_max) + B /
 * operand_Bps, i.e. eff(I) = eff_max I / (I + I_half) with I = f / B, I_half = peak eff_max /
 * operand_Bps. (Why not eff as a function of f alone? Then f_half and launch are the same constant
 * and a 16 x 4096 x 7168 expert GEMM would be as efficient as a 4096 x 16 x 7168 one.)
 *
 * Precisions. A precision with its own fit (gemm.by_dtype) runs it at its base peak (its storage
 * type's, the FP8 peak for the FP8 recipes, the FP4 peak for nvfp4); a compute recipe without one
 * (recipes.h) runs the per-tensor FP8 (fp8-cs) fit, or the default parameters (gemm) when the model
 * has none, at its base peak times the recipe's rate on the model's architecture (Blackwell: the
 * model has an FP4 peak); BF16/FP16/FP32 without a fit run the default parameters at their peak.
 *
 * Sustained clocks. Published GEMM and attention tables are bursts on a cool GPU; back to back, a
 * power-capped GPU runs its SMs slower (one 700 W H200: 668 TFLOP/s sustained on 8192^3 BF16 GEMMs
 * against 795 in bursts, research note kernels-scale.md §4.2). `sustained` (model JSON, default 1;
 * the scenario's cluster.gpu.sustained replaces it unless "auto") divides the SM-clocked time: the
 * tile/wave form's t_sm (not t_hbm), the additive form's FLOP term (not its operand term), the
 * attention core's matmul, softmax and causal terms (not its per-row memory term). The fits price
 * the published tables at sustained = 1 (fit_predict_compute); a model states the value measured
 * for its GPU kind, 1 where no measurement exists: a parameter a joint calibration may fit per kind.
 *
 * Quantization (recipes.h). costmodel_quant_s prices a recipe's passes over one tensor role as
 * memory-bound kernels: launches x launch + elements x bytes per element / rate, the rate and launch
 * of the pass's kernel class from the model's per-kernel fits "quantize" (casts), "quantize_amax"
 * and "quantize_rht_sr" (calibration/README.md); a class the model lacks runs at the cast's rate
 * times its published ratio to a cast (amax 0.77, NVFP4 stochastic rounding 0.70: costmodel.c), a
 * model without "quantize" at its memory model. BF16/FP16/FP32 pay nothing.
 *
 * Memory-bound kernel (gating/top-k, permute, unpermute/combine, SwiGLU): t = launch_s + bytes / bw.
 * One "memory" model for any such kernel, and optional per-kernel fits (costmodel_kernel_s).
 *
 * Attention core (FlashAttention-style, one launch: cuDNN's fused attention is what TransformerEngine
 * 2.14.1 runs on Hopper and Blackwell), by shape (cm_attn_shape): batch x heads query
 * rows of length seq_q against seq_k keys, head dims d_qk / d_v, causal or not. With a fitted model
 * (attention.fwd / attention.bwd in the model JSON), in 128 x 128 blocks of (query, key) pairs
 * (causal: the blocks on and below the diagonal, computed whole):
 *     t = launch + pairs (mm / (peak_bf16 eff) + pair_s) + rows (d_mean row_s + row_fixed_s)
 *                + [causal] pairs mm / (peak_bf16 causal_eff)
 * mm = 2 (d_qk + d_v) FLOPs per pair forward, 2 (3 d_qk + 2 d_v) backward (score recomputation, dV,
 * dP, dQ, dK); pair_s is the softmax work per pair (exp and rescale, independent of the head dim);
 * rows d_mean row_s the per-row work (load Q, write O and the log-sum-exp; d_mean = (d_qk + d_v)/2),
 * rows row_fixed_s the per-row work that does not scale with the head dims (a query tile's pipeline
 * prologue, softmax rescaling and epilogue over few key blocks): a sliding window of 128 keys (two
 * key blocks per query block) is per-row work, not per-pair work (cuDNN on GB200: 0.41 ms for
 * 2 x 128 heads x 8192 queries of d 64, ~7% of peak; research note kernels-scale.md §3). A window
 * of W keys is seq_k = W: a causal band of the diagonal block and ceil(W / 128) blocks before it.
 * Without a fit (legacy): t = launch + flops / (peak_bf16 attention_eff), the flops of the causal
 * average (seq_k / 2 keys per query) forward and twice that backward.
 *
 * Link (alpha-beta, per link class): t = alpha_s + bytes / beta_Bps, where `bytes` are the bytes one
 * rank moves over that link class in one direction and beta the link's ACHIEVED rate (fitted on
 * nccl-tests busbw or DeepEP measurements). A model that gives a link's line rate (links.X.line_GBps)
 * is an efficiency: costmodel_for_scenario scales it to the scenario's own links (cluster.nic_gbps,
 * cluster.nvlink_GBps, cluster.pcie_GBps), and the SimGrid fabric runs at those achieved rates
 * (costmodel_fabric_cluster), so plan and step price a byte alike.
 */
#ifndef MOESIM_COSTMODEL_H
#define MOESIM_COSTMODEL_H

#include "sim/base/errors.h"
#include "sim/plan/recipes.h"
#include "sim/scenario/scenario_types.h"

struct cJSON;

typedef enum { CM_LINK_NVLINK = 0, CM_LINK_RDMA, CM_LINK_PCIE, CM_LINK_N } cm_link_class;

#define CM_NAME_MAX 64
#define CM_MAX_KERNELS 16

#define CM_MAX_TILE_M 4
#define CM_MAX_TILE_N 40

typedef struct {
    double eff_max;          /* fraction of dense peak reached by large GEMMs (0, 1] */
    double operand_Bps;      /* effective bandwidth for streaming A, B, C (bytes/s); INFINITY when
                                the fit could not resolve it (JSON null): no streaming term */
    double launch_s;         /* per launch (a grouped GEMM is one launch) */
    /* tile/wave form (n_tile_m > 0 and the model's sm_count > 0), see above */
    double tile_load_Bps;    /* on-chip operand stream rate of all SMs together */
    double tile_overhead_s;  /* per tile: pipeline fill and epilogue */
    double overlap_q;        /* exponent of the smooth max of SM time and HBM time */
    double ceil_eff;         /* tile/wave form: the best fraction of the base peak any shape reaches (the
                                precision's best published rate on this GPU kind: no GEMM runs faster
                                than the maximum achievable matmul rate); 0 = none */
    int n_tile_m, n_tile_n;
    int tile_m[CM_MAX_TILE_M], tile_n[CM_MAX_TILE_N];
} cm_gemm_params;

/* A fitted attention kernel, one direction (see above). */
typedef struct {
    double eff;              /* tensor-core efficiency of the matmul part */
    double pair_s;           /* softmax work per (query, key) pair */
    double row_s;            /* per query row and head-dim element */
    double row_fixed_s;      /* per query row, whatever the head dims (a query tile's prologue and
                                epilogue: what a short sliding window's time is made of) */
    double causal_eff;       /* extra matmul-rate cost of causal masking; INFINITY = none */
} cm_attn_params;

/* One attention core launch: batch x heads rows of seq_q queries against seq_k keys (seq_k < seq_q
 * for a sliding window: the keys each query sees). */
typedef struct {
    double batch, heads, seq_q, seq_k, d_qk, d_v;
    int causal;
} cm_attn_shape;

typedef struct {
    double bw_Bps;           /* achieved bandwidth (bytes read + written) / s */
    double launch_s;
} cm_mem_params;

typedef struct {
    char name[CM_NAME_MAX];  /* kernel name as in traces: "gating", "permute", "unpermute", ... */
    cm_mem_params p;
} cm_kernel_params;

typedef struct {
    int present;             /* 0: class unknown to this model (costmodel_link_s returns +inf) */
    double alpha_s;          /* latency per operation */
    double beta_Bps;         /* achieved bandwidth per rank, one direction */
    double line_Bps;         /* the line rate beta was achieved on; 0 = not given (beta absolute) */
} cm_link_params;

typedef struct costmodel {
    char file[SCN_PATH_MAX];     /* where it was loaded from ("" when built in code) */
    char source[CM_NAME_MAX];    /* e.g. "h800-published", "cpu-measured", "built-in roofline" */
    char device[CM_NAME_MAX];    /* e.g. "NVIDIA H800 SXM5" */
    int measured;                /* bool: fitted on moesim's own measured traces */
    char basis[16];              /* "spec" (datasheet figures), "published" (fitted on others'
                                    cited measurements) or "measured" (moesim's simcal bench) */
    double peak_flops[4];        /* dense peak FLOP/s indexed by dtype_kind (DT_FP8 .. DT_FP32) */
    double peak_fp4_flops;       /* dense FP4 peak (Blackwell); 0 = none. The other compute recipes
                                    (fp8-cs, mxfp8, nvfp4) run at these peaks times their rates
                                    (sim/plan/recipes.h) */
    double sustained;            /* sustained / burst SM clock (see above); <= 0 is taken as 1 */
    double grouped_rate;         /* grouped GEMMs' rate against the GEMM tables (cluster.gpu.grouped_gemm_rate);
                                    <= 0 is taken as 1 */
    int quantization_free;       /* bool: costmodel_quant_s is 0 (precision.quantization_free) */
    char sustained_from[16];     /* "scenario" (cluster.gpu.sustained), "global fit" (its auto value:
                                    sim/plan/global_params.h) or "" (the model's own) */
    int sm_count;                /* SMs of the GPU (the tile/wave GEMM form); 0 = additive form only */
    cm_gemm_params gemm;         /* every precision without its own fit */
    int gemm_fitted[DT_NKINDS];  /* 1: gemm_dt[dt] is the precision's own fit */
    cm_gemm_params gemm_dt[DT_NKINDS];
    double attention_eff;        /* legacy: fraction of peak reached by attention FLOPs */
    double attention_launch_s;
    int attention_fitted;        /* 1: attn[0] (forward) and attn[1] (backward) are fitted */
    cm_attn_params attn[2];
    cm_mem_params memory;        /* any memory-bound kernel */
    int n_kernels;
    cm_kernel_params kernels[CM_MAX_KERNELS];
    cm_link_params link[CM_LINK_N];
} costmodel;

/* ---- construction ---------------------------------------------------------------------------- */

/* Read a model JSON ("moesim-costmodel/1"). Bad input -> EXIT_BADINPUT with file, JSON path
 * ("gemm.eff_max"), value and expectation. Returns 0 on success. */
int costmodel_load(const char *path, costmodel *out, moe_error *err);
/* Same from text; `file_label` names the source in messages and is stored in out->file. */
int costmodel_parse(const char *file_label, const char *json_text, costmodel *out, moe_error *err);

/* Built-in roofline from a GPU's public figures: peaks from gpu_cfg (FP16 = BF16, FP32 = BF16/14.7
 * for H100-class tensor-core-less FP32), GEMM eff_max 0.80, operand and memory bandwidth 90% of HBM,
 * quantize casts 80% of HBM, attention 50% of peak, launches 3 us (GEMM) / 2 us (memory, quantize),
 * sustained = gpu->sustained (1 when "auto"). Links get REFERENCE.md §6 H800-class
 * defaults (NVLink 160 GB/s, RDMA 45 GB/s, PCIe 5 x16 55 GB/s achievable); use
 * costmodel_from_cluster to take them from a scenario. measured = 0, source "built-in roofline". */
costmodel costmodel_from_gpu(const gpu_cfg *gpu);
/* costmodel_from_gpu(&c->gpu), then links from the cluster: nvlink_GBps, nic_gbps/8 x 0.9
 * achievable, pcie_GBps; alphas from latency_us (nvlink, same_leaf). */
costmodel costmodel_from_cluster(const cluster_cfg *c);
/* Load `path` when non-empty (relative paths: scenario_resolve_path: the current folder, the
 * scenario's, the installed share folder, the source tree), else build
 * costmodel_from_cluster(&s->cluster). A loaded model without an FP4 peak takes the cluster GPU's
 * (cluster.gpu.fp4_tflops); a loaded link with a line rate runs at its efficiency times the
 * scenario's own line rate; a link class the model lacks comes from the cluster as the built-in
 * roofline takes it; cluster.gpu.sustained, when not "auto", replaces the model's sustained. The one
 * call the simulator makes. */
int costmodel_for_scenario(const scenario *s, costmodel *out, moe_error *err);
/* The scenario's cluster with its NVLink and NIC at the achieved rates of the scenario's cost model
 * (what the SimGrid fabric and the closed-form comm model run at). */
int costmodel_fabric_cluster(const scenario *s, cluster_cfg *out, moe_error *err);

/* ---- predictions (pure; seconds) --------------------------------------------------------------- */

/* The architecture whose recipes' passes and rates apply: Blackwell when the model has an FP4 peak. */
gpu_arch costmodel_arch(const costmodel *cm);
/* The peak a precision's GEMMs are priced against (FLOP/s): its base peak, times its recipe's rate
 * when it has no fit of its own (see "Precisions" above). */
double costmodel_peak_flops(const costmodel *cm, dtype_kind dt);
/* One GEMM C[m x n] = A[m x k] B[k x n] in `dt` (inputs dt, output BF16, FP32 for FP32). 0 if any
 * dimension is <= 0. A quantized recipe's passes over A, B and the gradients are priced apart
 * (costmodel_quant_s). */
double costmodel_gemm_s(const costmodel *cm, double m, double n, double k, dtype_kind dt);
/* Achieved fraction of the precision's base peak times its rate for that GEMM (without launch). */
double costmodel_gemm_eff(const costmodel *cm, double m, double n, double k, dtype_kind dt);
/* A grouped GEMM (one launch): expert e multiplies tokens[e] x k by its own k x n weight. Experts
 * with 0 tokens cost nothing (cuBLAS grouped GEMM skips empty groups; their weights are not read).
 * Skinny groups pay their weight read: the sum is what makes a hot expert's rank slow. */
double costmodel_grouped_gemm_s(const costmodel *cm, const double *tokens, int n_experts,
                                double n, double k, dtype_kind dt);
/* The recipe's quantization of `elements` elements in tensor role `role` (recipes.h), the passes of
 * a grouped GEMM's per-expert split over `chunks` non-empty chunks (1: one tensor); 0 for
 * BF16/FP16/FP32 and elements <= 0. */
double costmodel_quant_s(const costmodel *cm, dtype_kind dt, quant_role role, double elements, int chunks);

/* SwiGLU routed experts on one rank, one of the three program kernels of a micro-batch (part):
 *   EXPERT_FWD         gate+up grouped GEMM (n = 2 ffn, k = hidden), the SwiGLU pointwise kernel,
 *                      down grouped GEMM (n = hidden, k = ffn), the quantization of both GEMM inputs
 *                      (QR_INPUT: tokens x hidden, tokens x ffn) and of the active experts' weights
 *                      per use (QR_WEIGHT_USE)
 *   EXPERT_BWD_INPUT   the same GEMMs and SwiGLU (dgrad runs the forward's matrices), the quantization
 *                      of both output gradients (QR_GRAD: tokens x hidden, tokens x 2 ffn) and of the
 *                      weights per use
 *   EXPERT_BWD_WEIGHT  the same GEMMs and SwiGLU; no quantization (wgrad reads the column-wise copies
 *                      made by the forward and the input-gradient kernel)
 * Experts with no tokens cost nothing; the per-expert launches of a recipe's split quantization
 * count the non-empty experts. *quant_s (when not NULL) gets the quantization part of the returned
 * seconds. The routed experts' weights are quantized once per step: that is not in these parts (the
 * price table carries it, plan_compute.h).
 * Contract for the step executor: price K_EXPERT_FWD / K_EXPERT_BWD_INPUT / K_EXPERT_BWD_WEIGHT
 * with the matching part, and report the quantization share of each (the `quantize_s` entry of the
 * step's breakdown) with costmodel_expert_ffn_quant_s, so that plan and step price the routed
 * experts alike. */
typedef enum { EXPERT_FWD = 0, EXPERT_BWD_INPUT, EXPERT_BWD_WEIGHT } expert_part;
double costmodel_expert_ffn_part_s(const costmodel *cm, const double *tokens, int n_experts, double hidden,
                                   double ffn, dtype_kind dt, expert_part part, double *quant_s);
/* EXPERT_FWD of costmodel_expert_ffn_part_s. */
double costmodel_expert_ffn_fwd_s(const costmodel *cm, const double *tokens, int n_experts,
                                  double hidden, double ffn, dtype_kind dt);
/* The quantization part of costmodel_expert_ffn_part_s(..., part) (0 for BF16). */
double costmodel_expert_ffn_quant_s(const costmodel *cm, const double *tokens, int n_experts, double hidden,
                                    double ffn, dtype_kind dt, expert_part part);
/* Memory-bound kernel moving `bytes` (read + written). */
double costmodel_memory_bound_s(const costmodel *cm, double bytes);
/* Same with the per-kernel fit for `kernel` when the model has one, else the memory model. */
double costmodel_kernel_s(const costmodel *cm, const char *kernel, double bytes);
/* (query, key) pairs one attention launch computes (128 x 128 blocks, see above). */
double costmodel_attention_pairs(const cm_attn_shape *a);
/* Attention core of one launch, forward (bwd = 0) or backward (bwd = 1), in BF16 (see above). */
double costmodel_attention_core_s(const costmodel *cm, const cm_attn_shape *a, int bwd);
/* Alpha-beta transfer of `bytes` (per rank, one direction) over a link class; +inf when the model
 * has no such link; 0 for bytes <= 0. */
double costmodel_link_s(const costmodel *cm, cm_link_class link, double bytes);

/* ---- names and provenance --------------------------------------------------------------------- */
const char *cm_link_class_name(cm_link_class link);       /* "nvlink", "rdma", "pcie" */
/* A precision by its scenario name (precision.compute: "fp8", "bf16", "fp16", "fp32", "fp8-cs",
 * "mxfp8", "nvfp4"), -1 if unknown; and back. */
int costmodel_dtype_parse(const char *name);
const char *costmodel_dtype_name(dtype_kind dt);
int cm_link_class_parse(const char *name);                /* -1 if unknown; accepts "roce"/"ib" as rdma */
/* {"source": ..., "device": ..., "measured": bool, "basis": ..., "file": ...} for results
 * (SCENARIO.md). Caller frees (cJSON_Delete). */
struct cJSON *costmodel_provenance_json(const costmodel *cm);

#endif
