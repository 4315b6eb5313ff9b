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
 * GEMM [m x k] x [k x n], f = 2 m n k FLOPs, B = bytes of A, B and C:
 *
 *     t = launch_s + f / (peak[dtype] * eff_max) + B / operand_Bps
 *
 * Equivalently the achieved efficiency is a saturating curve of the arithmetic intensity I = f / B:
 *     eff(I) = eff_max * I / (I + I_half),   I_half = peak[dtype] * eff_max / operand_Bps.
 * Large square GEMMs (I ~ thousands of FLOP/byte) run near eff_max; skinny expert GEMMs (m = a few
 * tokens per expert, I ~ m) are dominated by streaming the expert's weights and run far below it.
 * That is why a rank holding a *cold* expert still pays the weight read, and a *hot* expert's rank
 * pays the FLOPs of every extra token: both are in this one formula.
 * (Why not eff as a function of f alone, eff = eff_max f/(f + f_half)? Then t = (f + f_half)/(peak
 * eff_max) + launch: f_half and launch are the same constant, so no fit can tell them apart, and a
 * 16 x 4096 x 7168 expert GEMM would be predicted as efficient as a 4096 x 16 x 7168 one. Intensity
 * separates them.)
 *
 * Memory-bound kernel (gating/top-k, permute, unpermute/combine, SwiGLU): t = launch_s + bytes / bw.
 * One "memory" model for any such kernel, and optional per-kernel fits (costmodel_kernel_s).
 *
 * Attention: t = launch_s + flops / (peak[dtype] * attention_eff) (FlashAttention-style kernels
 * are compute-bound at training sequence lengths; the efficiency is a published or assumed figure).
 *
 * Link (alpha-beta, per link class): t = alpha_s + bytes / beta_Bps, where `bytes` are the bytes one
 * rank moves over that link class in one direction. Fitted on nccl-tests points with nccl-tests'
 * bus-bandwidth semantics (bytes = size x busbw factor: alltoall (n-1)/n, allreduce 2(n-1)/n,
 * sendrecv 1), so beta is the large-message bus bandwidth. The step simulator normally takes
 * communication durations from SimGrid and uses these for link parameters and sanity checks.
 */
#ifndef MOESIM_COSTMODEL_H
#define MOESIM_COSTMODEL_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario.h"

struct cJSON;

typedef enum { CM_LINK_NVLINK = 0, CM_LINK_RDMA, CM_LINK_PCIE, CM_LINK_N } cm_link_class;

#define CM_NAME_MAX 64
#define CM_MAX_KERNELS 16

typedef struct {
    double eff_max;          /* fraction of dense peak reached by large GEMMs (0, 1] */
    double operand_Bps;      /* effective bandwidth for streaming A, B, C (bytes/s); INFINITY when
                                the fit could not resolve it (JSON null): no streaming term */
    double launch_s;         /* per launch (a grouped GEMM is one launch) */
} cm_gemm_params;

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
    double beta_Bps;         /* bus bandwidth per rank, one direction */
} cm_link_params;

typedef struct costmodel {
    char file[SCN_PATH_MAX];     /* where it was loaded from ("" when built in code) */
    char source[CM_NAME_MAX];    /* e.g. "h800-published", "cpu-measured", "built-in roofline" */
    char device[CM_NAME_MAX];    /* e.g. "NVIDIA H800 SXM5" */
    int measured;                /* bool: fitted on measured traces (else published specifications) */
    double peak_flops[4];        /* dense peak FLOP/s indexed by dtype_kind (DT_FP8 .. DT_FP32) */
    double peak_fp4_flops;       /* dense FP4 peak (Blackwell); 0 = none. The other compute recipes
                                    (fp8-cs, mxfp8, nvfp4) run at these peaks times their rates
                                    (sim/plan/recipes.h) */
    cm_gemm_params gemm;
    double attention_eff;        /* fraction of peak reached by attention FLOPs */
    double attention_launch_s;
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
 * attention 50% of peak, launches 3 us (GEMM) / 2 us (memory). Links get REFERENCE.md §6 H800-class
 * defaults (NVLink 160 GB/s, RDMA 45 GB/s, PCIe 5 x16 55 GB/s achievable); use
 * costmodel_from_cluster to take them from a scenario. measured = 0, source "built-in roofline". */
costmodel costmodel_from_gpu(const gpu_cfg *gpu);
/* costmodel_from_gpu(&c->gpu), then links from the cluster: nvlink_GBps, nic_gbps/8 x 0.9
 * achievable, pcie_GBps; alphas from latency_us (nvlink, same_leaf). */
costmodel costmodel_from_cluster(const cluster_cfg *c);
/* Load `path` when non-empty (relative paths: scenario_resolve_path: the current folder, the
 * scenario's, the installed share folder, the source tree), else build
 * costmodel_from_cluster(&s->cluster). A loaded model without an FP4 peak takes the cluster GPU's
 * (cluster.gpu.fp4_tflops). The one call the simulator makes. */
int costmodel_for_scenario(const scenario *s, costmodel *out, moe_error *err);

/* ---- predictions (pure; seconds) --------------------------------------------------------------- */

/* One GEMM C[m x n] = A[m x k] B[k x n] in `dt` (inputs dt, output BF16, FP32 for FP32). 0 if any
 * dimension is <= 0. A compute recipe (recipes.h) runs at its base peak times its rate; its casts
 * are priced apart (costmodel_cast_s). */
double costmodel_gemm_s(const costmodel *cm, double m, double n, double k, dtype_kind dt);
/* Achieved fraction of peak for that GEMM (without launch): eff(I) above. */
double costmodel_gemm_eff(const costmodel *cm, double m, double n, double k, dtype_kind dt);
/* A grouped GEMM (one launch): expert e multiplies tokens[e] x k by its own k x n weight. Experts
 * with 0 tokens cost nothing (cuBLAS grouped GEMM skips empty groups; their weights are not read).
 * Skinny groups pay their weight read: the sum is what makes a hot expert's rank slow. */
double costmodel_grouped_gemm_s(const costmodel *cm, const double *tokens, int n_experts,
                                double n, double k, dtype_kind dt);
/* Forward of SwiGLU experts on one rank: gate+up grouped GEMM (n = 2 ffn, k = hidden), the SwiGLU
 * pointwise kernel (memory-bound), down grouped GEMM (n = hidden, k = ffn), and the recipe's casts
 * of both GEMM inputs (costmodel_cast_s). Backward ~ 2x the GEMMs (dgrad + wgrad); callers multiply
 * as their schedule needs. */
double costmodel_expert_ffn_fwd_s(const costmodel *cm, const double *tokens, int n_experts,
                                  double hidden, double ffn, dtype_kind dt);
/* The extra cast work of a quantized recipe (recipes.h) over `elements` GEMM-input elements: a
 * memory-bound pass of elements x cast_extra_B bytes; 0 for BF16/FP16/FP32 and for the reference
 * fp8. */
double costmodel_cast_s(const costmodel *cm, double elements, dtype_kind dt);
/* Memory-bound kernel moving `bytes` (read + written). */
double costmodel_memory_bound_s(const costmodel *cm, double bytes);
/* Same with the per-kernel fit for `kernel` when the model has one, else the memory model. */
double costmodel_kernel_s(const costmodel *cm, const char *kernel, double bytes);
/* Attention: `flops` (score + value matmuls, fwd or bwd as the caller counts them). */
double costmodel_attention_s(const costmodel *cm, double flops, dtype_kind dt);
/* Alpha-beta transfer of `bytes` (per rank, one direction) over a link class; +inf when the model
 * has no such link; 0 for bytes <= 0. */
double costmodel_link_s(const costmodel *cm, cm_link_class link, double bytes);

/* ---- names and provenance --------------------------------------------------------------------- */
const char *cm_link_class_name(cm_link_class link);       /* "nvlink", "rdma", "pcie" */
int cm_link_class_parse(const char *name);                /* -1 if unknown; accepts "roce"/"ib" as rdma */
/* {"source": ..., "device": ..., "measured": bool, "file": ...} for results (SCENARIO.md). Caller
 * frees (cJSON_Delete). */
struct cJSON *costmodel_provenance_json(const costmodel *cm);

#endif
