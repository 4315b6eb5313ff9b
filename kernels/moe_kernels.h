/* moe_kernels.h — THE contract of kernels/: one MoE layer's kernels, each as a CPU reference
 * (`*_cpu`, kernels/<name>_cpu.c, C17 + libm, always built) and a CUDA version (`*_gpu`/`*_nccl`,
 * kernels/<name>.cu, built only when nvcc exists and linked through moesim_cuda).
 *
 * One MoE layer on one expert-parallel rank (R ranks, E experts, E_local = E / R per rank, expert e
 * lives on rank e / E_local, local index e % E_local):
 *
 *   x [T,H] --router GEMM--> logits [T,E] --gating--> topk_idx/topk_w [T,K] (+ load statistics)
 *     --dispatch layout--> counts, offsets, slot[T*K], row_token[]  --permute--> send [rows,H]
 *     --all-to-all (rows grouped by dest rank, then local expert)--> recv [src rank][local expert]
 *     --grouped expert FFN (one GEMM per (src, expert) segment)--> y_recv
 *     --all-to-all back (counts transposed)--> y_send [rows,H] in the send layout
 *     --combine: out[t] = sum_k w[t,k] * y_send[slot[t,k]]--> out [T,H]
 *
 * Conventions
 *  - Row-major everywhere. Activations and weights BF16 (moe_bf16 = uint16_t, kernels/bf16.h);
 *    router logits, scores and gate weights FP32; every GEMM accumulates in FP32.
 *  - Weights are stored as [in, out] so that the math reads `x W`: w_gate [H,E], w1/w3 [E?,H,F],
 *    w2 [E?,F,H] (E? = the experts held: E_local for the grouped FFN, E for the dense reference).
 *  - Indices, counts and offsets are int32_t and count ROWS (one row = H BF16 values), never bytes.
 *    Offsets are always the exclusive scan of the counts (packed buffers, no gaps).
 *  - GPU functions take device pointers (plain C types; nothing here needs CUDA headers), a stream
 *    as `void *` (cudaStream_t; NULL = default stream), a cuBLAS handle as `void *` (cublasHandle_t),
 *    an NCCL communicator as `void *` (ncclComm_t). Arrays documented as HOST stay on the host.
 *    They enqueue work on the stream and return a moe_status (launch errors are checked with
 *    cudaGetLastError); they do not synchronise unless stated.
 *  - Determinism: every CPU reference is deterministic. GPU results equal the CPU's bit for bit for
 *    the dispatch layout, permute, combine, all-to-all and the §9 kernels, and for top-K selection given the same
 *    scores; scores/weights (warp-tree softmax sums, device expf), load statistics (float atomics)
 *    and GEMM results (router logits, expert FFN: FP32 summation order) agree within the
 *    tolerances stated in tests/test_gpu_kernels.c.
 *
 * Build/link: moesim_kernels (kernels/ *.c) holds every CPU reference and the CPU bench API.
 * moesim_cuda (kernels/ *.cu) holds the GPU side and defines MOESIM_HAVE_CUDA=1 PUBLIC, so any
 * target that links moesim_cuda sees the macro. moe_gpu_count() is a real function only there;
 * everywhere else it is the inline stub below that returns 0 (no weak symbols, no link-order games:
 * the answer is decided at compile time by whether the including target links the GPU library).
 */
#ifndef MOESIM_KERNELS_MOE_KERNELS_H
#define MOESIM_KERNELS_MOE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "kernels/moe_capacity.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes ------------------------------------------------------------------------- */
typedef enum {
    MOE_OK = 0,
    MOE_EINVAL = -1,      /* bad shape/config/arguments */
    MOE_ENOMEM = -2,      /* host or device allocation failed */
    MOE_ECUDA = -3,       /* CUDA runtime error (launch or API) */
    MOE_ECUBLAS = -4,     /* cuBLAS error */
    MOE_ENCCL = -5,       /* NCCL error */
    MOE_ENOTSUP = -6,     /* not supported in this build / on this machine (e.g. no GPU, 1 GPU) */
} moe_status;

const char *moe_status_str(int status);

/* ---- gating configuration ------------------------------------------------------------------ */
typedef enum {
    MOE_SCORE_SOFTMAX = 0, /* s = softmax(logits) over all E (Switch/GShard/Mixtral, seed 000) */
    MOE_SCORE_SIGMOID = 1, /* s = sigmoid(logits) per expert (DeepSeek-V3) */
} moe_score_fn;

typedef struct {
    int num_experts;       /* E */
    int top_k;             /* K, 1 <= K <= E, K <= MOE_MAX_TOP_K */
    moe_score_fn score;
    int norm_topk;         /* 1: gate weights = s_sel / sum(s_sel) over the K selected.
                              With softmax this IS "softmax over the K selected logits" (seed 000). */
    float routed_scaling;  /* gate weights are multiplied by this (DeepSeek-V3: 2.5); 1 = off */
    int n_groups;          /* group-limited routing: E split into n_groups contiguous groups; */
    int topk_groups;       /*   keep the topk_groups best groups (group score = sum of its top-2
                                expert scores, DeepSeek-V3), then top-K inside them. 1,1 = off. */
    int n_nodes;           /* node-limited routing: experts contiguous over n_nodes nodes; keep the */
    int topk_nodes;        /*   topk_nodes (= M) best nodes, node score = sum of its top ceil(K/M)
                                expert scores (DeepSeek-V3 §2.1.2). 1,1 = off. Exclusive with the
                                group limit (in DeepSeek-V3 the 8 groups ARE the 8 nodes). */
} moe_gate_cfg;

#define MOE_MAX_TOP_K 16
#define MOE_MAX_EXPERTS 1024

/* Defaults: softmax, normalised over the K, no scaling, no group/node limit. */
moe_gate_cfg moe_gate_cfg_default(int num_experts, int top_k);
/* DeepSeek-V3 routing: sigmoid, normalised, routed_scaling 2.5, 8 groups keep 4, K = 8. */
moe_gate_cfg moe_gate_cfg_deepseek_v3(int num_experts);
/* MOE_OK or MOE_EINVAL; on error writes a one-line reason into why (if non-NULL). */
int moe_gate_cfg_check(const moe_gate_cfg *cfg, char *why, size_t why_len);

/* Selection rule (CPU and GPU identical):
 *   sel[e] = s[e] + (select_bias ? select_bias[e] : 0)    (DeepSeek-V3 aux-loss-free bias: it steers
 *                                                           WHICH experts win, never the weights)
 *   group mask or node mask (if on), then top-K of sel among unmasked experts.
 *   Tie-break everywhere (experts, groups, nodes): larger value wins; on equal value the LOWER index
 *   wins. NaN scores never win. Output slots k = 0..K-1 are in selection order (best first).
 *   Weights: w = s[e_k] (the unbiased score), divided by sum_k s[e_k] if norm_topk, times
 *   routed_scaling.
 * Load statistics (for the Switch/GShard/DeepSeek auxiliary loss):
 *   expert_counts[e] = number of tokens that selected e (before any capacity drop);
 *   prob_sum[e]      = sum over tokens of p[e], p = s normalised over ALL E (softmax: s itself;
 *                      sigmoid: s / sum_e s, DeepSeek-V3's s').  GPU sums with float atomics, so
 *                      prob_sum matches the CPU to FP32 rounding, not bitwise. */

/* ---- 1. router GEMM: logits[T,E] = x[T,H] w_gate[H,E], FP32 accumulate, FP32 out ------------- */
void moe_router_logits_cpu(const moe_bf16 *x, const moe_bf16 *w_gate, float *logits,
                           int T, int H, int E);

/* ---- 2. gating: scores, group/node-limited top-K, weights, load statistics ------------------- */
/* expert_counts [E] and prob_sum [E] are overwritten (zeroed first); either may be NULL. */
int moe_topk_gating_cpu(const float *logits, const float *select_bias, const moe_gate_cfg *cfg,
                        int T, int32_t *topk_idx, float *topk_w,
                        int32_t *expert_counts, float *prob_sum);

/* Auxiliary load-balance loss (Switch Transformer eq. 4 generalised to top-K; equals DeepSeek's
 * sum_i f'_i P_i with f'_i = E/(K T) count_i):  f_i = count_i / (T K),  P_i = prob_sum_i / T,
 * loss = E * sum_i f_i P_i.  Exactly 1 under perfect balance (f_i = P_i = 1/E); up to E/K when all
 * tokens pick the same K experts with certainty. */
double moe_aux_loss(const int32_t *expert_counts, const float *prob_sum, int T, int E, int K);

/* ---- 3. dispatch layout (permute plan) -------------------------------------------------------- */
/* Send buffer order: by destination rank, then local expert -- i.e. by global expert id, because
 * ranks own contiguous expert ranges -- and within an expert by token index ascending (stable).
 * Capacity: an expert keeps at most `capacity` assignments FROM THIS RANK (earliest tokens first);
 * capacity < 0 = dropless. A dropped assignment has slot = -1 and contributes nothing to combine
 * (the caller's residual connection carries the token).  moe_capacity() (moe_capacity.h, the rule
 * the simulator's routing uses too) gives the value: ceil(C * T * K / E) for this rank's T tokens. */
typedef struct {
    int32_t *expert_counts;  /* [E]   kept rows per expert                                        */
    int32_t *expert_offsets; /* [E]   exclusive scan of expert_counts = first row of each expert  */
    int32_t *rank_counts;    /* [R]   rows to each destination rank (sum of its experts' counts)  */
    int32_t *rank_offsets;   /* [R]   exclusive scan of rank_counts                               */
    int32_t *slot;           /* [T*K] row of assignment (t,k) in the send buffer, or -1 (dropped) */
    int32_t *row_token;      /* [T*K] token of each row; first n_rows entries valid (rest -1)     */
    int32_t *totals;         /* [2]   {n_rows, n_dropped}                                         */
} moe_dispatch_layout;

int moe_dispatch_layout_cpu(const int32_t *topk_idx, int T, int K, int E, int R, int capacity,
                            const moe_dispatch_layout *out);

/* Per-(destination rank, local expert) counts = expert_counts viewed as [R][E_local]; this is the
 * matrix the count all-to-all moves so that every receiver knows its segments. */

/* ---- 4. permute: send[row] = x[row_token[row]] for row < n_rows ------------------------------ */
void moe_permute_cpu(const moe_bf16 *x, const int32_t *row_token, int n_rows, int H, moe_bf16 *send);

/* ---- 5. expert FFN: y = (silu(x W1) * (x W3)) W2 over contiguous row segments ----------------- */
/* Rows are split into n_seg consecutive segments; segment s has seg_rows[s] rows (>= 0) and uses
 * local expert seg_expert[s] (weights w1[e] = w1 + e*H*F etc.). After the all-to-all the receive
 * buffer is [src rank][local expert], i.e. R*E_local segments with seg_expert = s % E_local; the FFN
 * therefore needs no regroup copy. Rounding points (GPU identical): h1 = bf16(x W1), h3 = bf16(x W3)
 * (FP32 accumulate), a = bf16(silu(h1) * h3) computed in FP32, y = bf16(a W2) (FP32 accumulate).
 * silu(v) = v / (1 + exp(-v)). work: 2*F + H floats (moe_expert_ffn_cpu_work_floats). */
void moe_expert_ffn_cpu(const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                        const int32_t *seg_expert, const moe_bf16 *w1, const moe_bf16 *w3,
                        const moe_bf16 *w2, int H, int F, moe_bf16 *y_rows, float *work);
size_t moe_expert_ffn_cpu_work_floats(int H, int F);

/* ---- 6. combine: out[t] = bf16( sum_{k: slot>=0} w[t,k] * y[slot[t,k]] ) --------------------- */
/* FP32 accumulation in k order with fmaf (CPU and GPU), so the GPU result is bitwise identical.
 * A token whose K assignments were all dropped gets 0. */
void moe_combine_cpu(const moe_bf16 *y_send, const int32_t *slot, const float *topk_w,
                     int T, int K, int H, moe_bf16 *out);

/* ---- 7. all-to-all: the exchange contract (MPI_Alltoallv semantics, in rows) ------------------ */
/* Flat: rank s sends rows [send_offsets[s*R+d], +send_counts[s*R+d]) of send[s] to rank d, which
 * stores them at recv_offsets[d*R+s] of recv[d]. recv_counts[d*R+s] must equal send_counts[s*R+d]
 * (else MOE_EINVAL). The CPU version runs all R "ranks" of one process (memcpy); the MPI live mode
 * calls MPI_Alltoallv with the same per-rank rows of these matrices; the NCCL version below is one
 * rank's view. Placement: rank r is on node r / gpus_per_node, local GPU (rail) r % gpus_per_node.
 *
 * Hierarchical (intra-node first, then one inter-node transfer per destination node):
 *   phase 1 (NVLink): rank (n,l) hands every row destined to ANY rank (n',l') to its node-mate
 *                     (n,l') -- the GPU on the destination's rail;
 *   phase 2 (rail):   (n,l') sends ONE message to (n',l') per destination node n', carrying the rows
 *                     of all its node-mates for that destination, ordered by source local index.
 *   Result identical to the flat exchange (recv ordered by source rank). DeepEP orders the phases
 *   the other way (RDMA to the same-rail GPU first, NVLink forward second); NCCL's PXN does it this
 *   way; the inter-node message count (one per (rail, dest node) pair) is the same.
 * stats (may be NULL): messages and bytes that crossed nodes vs stayed inside a node (self copies
 * counted as neither). */
typedef struct {
    int64_t inter_node_msgs, inter_node_bytes;
    int64_t intra_node_msgs, intra_node_bytes;
} moe_a2a_stats;

int moe_a2a_cpu(int R, int gpus_per_node, const void *const *send, const int32_t *send_counts,
                const int32_t *send_offsets, void *const *recv, const int32_t *recv_counts,
                const int32_t *recv_offsets, size_t row_bytes, moe_a2a_stats *stats);

int moe_a2a_hier_cpu(int R, int gpus_per_node, const void *const *send, const int32_t *send_counts,
                     const int32_t *send_offsets, void *const *recv, const int32_t *recv_counts,
                     const int32_t *recv_offsets, size_t row_bytes, moe_a2a_stats *stats);

/* Rows the hierarchical exchange stages on rank (node n, local l') between its two phases:
 * sum over node-mates l and destination nodes n' of counts (n,l) -> (n',l'). node_send_counts is the
 * [gpus_per_node][R] block of send_counts of the ranks on this rank's node. */
int64_t moe_a2a_hier_staging_rows(const int32_t *node_send_counts, int R, int gpus_per_node,
                                  int local_rank);

/* Exclusive scan helper (offsets from counts); returns the total. */
int64_t moe_exclusive_scan_i32(const int32_t *counts, int n, int32_t *offsets);

/* ---- 8. dense reference MoE layer: the independent truth for the end-to-end test ------------- */
/* For each token t (no permutation, no all-to-all): route with the gating reference, then
 * out[t] = bf16( sum_k w[t,k] * FFN_{e_k}(x[t]) ) with FFN as in moe_expert_ffn_cpu (same rounding
 * points), accumulated in k order with fmaf. capacity >= 0 applies the drop rule independently: a
 * per-expert counter over tokens in ascending order keeps the first `capacity`. Weights of all E
 * experts: w1/w3 [E,H,F], w2 [E,F,H]. */
int moe_layer_ref_cpu(const moe_bf16 *x, int T, int H, int F, const moe_bf16 *w_gate,
                      const moe_gate_cfg *cfg, const float *select_bias, int capacity,
                      const moe_bf16 *w1, const moe_bf16 *w3, const moe_bf16 *w2, moe_bf16 *out);

/* ---- 9. live mode's stand-ins and element-wise kernels ---------------------------------------- */
/* What the live executor runs around the real MoE path (sim/live/backend_cpu.c on the CPU,
 * sim/live/backend_nccl.cu on the GPU): the dense blocks are stand-ins of the right FLOP count, the
 * residual and the backward of the combine are real. Every one is element-wise FP32 math rounded to
 * BF16 once, written without fused multiply-adds on both sides (this library is built with
 * -ffp-contract=off; the .cu files use __fmul_rn / __fadd_rn): GPU == CPU bit for bit. */
/* y[t,h] = bf16(0.75 x[t,h] + 0.25 x[t,(h+1) mod H]) — attention / dense FFN stand-in; y != x */
void moe_token_mix_cpu(const moe_bf16 *x, int T, int H, moe_bf16 *y);
/* out[i] = bf16(a[i] + b[i]) (the residual); out may be a or b */
void moe_bf16_add_cpu(const moe_bf16 *a, const moe_bf16 *b, size_t n, moe_bf16 *out);
/* y[i] = bf16(x[i] * s) (the stand-in loss gradient h / T as h x (1/T)); y may be x */
void moe_bf16_scale_cpu(const moe_bf16 *x, float s, size_t n, moe_bf16 *y);
/* The combine's backward w.r.t. the expert outputs: g_send[slot[t,k]] = bf16(w[t,k] * g[t]) for
 * every kept (t,k); other rows of g_send untouched. */
void moe_unpermute_bwd_cpu(const moe_bf16 *g, const int32_t *slot, const float *topk_w, int T, int K, int H,
                           moe_bf16 *g_send);
/* v[i] = x */
void moe_fill_f32_cpu(float *v, float x, size_t n);
/* FLOP burner (stand-in compute): `lanes` recurrences acc <- acc * 0.5 + a_j * b_i of `updates`
 * steps, out[j] = final acc_j (kernels/flop_burn_cpu.c); moe_flop_burn_updates gives the steps per
 * lane for about `flops` FLOPs (2 per step). */
long long moe_flop_burn_updates(double flops, int lanes);
void moe_flop_burn_cpu(long long updates, int lanes, float *out);

/* ---- 10. the host-overhead probe's two tiny kernels (kernels/host_probe.cu) -------------------- */
/* One thread each, so that their GPU time is the fixed cost of a kernel and nothing else.
 * tick: *counter += 1 (a stream runs its ticks in order: N ticks add exactly N).
 * spin: the GPU thread busy-waits `cycles` SM clock cycles (clock64), then *flag = value; the CPU
 *       reference only writes the flag (the wait is the GPU's half of the probe, not a result). */
void moe_tick_cpu(int32_t *counter);
void moe_spin_cpu(long long cycles, int32_t *flag, int32_t value);

/* =============================== GPU side (link moesim_cuda) ================================= */
#ifdef MOESIM_HAVE_CUDA
/* Number of usable GPUs; 0 when the driver has none (cudaGetDeviceCount fails with error 35 and
 * leaves the count unset -- we initialise it to 0 and clear the sticky error). */
int moe_gpu_count(void);
#else
static inline int moe_gpu_count(void) { return 0; } /* CPU-only build: no GPU code is linked */
#endif

/* Runtime helpers so that plain-C callers (tests, simcal, simlive) need no CUDA headers. */
int moe_gpu_set_device(int device);
int moe_gpu_malloc(void **dptr, size_t bytes);
int moe_gpu_free(void *dptr);
int moe_gpu_memcpy_h2d(void *dst, const void *src, size_t bytes);
int moe_gpu_memcpy_d2h(void *dst, const void *src, size_t bytes);
int moe_gpu_memset(void *dptr, int value, size_t bytes);
int moe_gpu_stream_create(void **stream);
int moe_gpu_stream_destroy(void *stream);
int moe_gpu_stream_sync(void *stream);
int moe_cublas_create(void **handle);
int moe_cublas_destroy(void *handle);

/* Provenance for calibration traces (simcal bench). */
typedef struct {
    char name[256];
    int sm_count;
    int sm_clock_khz, mem_clock_khz, mem_bus_width_bits;
    int cc_major, cc_minor;
    size_t total_mem_bytes;
    int driver_version, runtime_version; /* CUDA_VERSION-style ints, e.g. 13000 */
    int cublas_version;                  /* e.g. 130100 */
    int nccl_version;                    /* e.g. 22803 */
} moe_gpu_info;
int moe_gpu_get_info(int device, moe_gpu_info *info);

/* Kernels: same arguments and semantics as the *_cpu versions; pointers are device pointers. */
int moe_router_logits_gpu(void *cublas, const moe_bf16 *x, const moe_bf16 *w_gate, float *logits,
                          int T, int H, int E, void *stream);
int moe_topk_gating_gpu(const float *logits, const float *select_bias, const moe_gate_cfg *cfg,
                        int T, int32_t *topk_idx, float *topk_w, int32_t *expert_counts,
                        float *prob_sum, void *stream);
/* Device scratch for the layout (CUB radix sort + scans): call with work = NULL to get
 * *work_bytes, then again with a buffer of that size. Expert ids must lie in [0, E) (the gating
 * kernel guarantees it; only the CPU version checks). */
int moe_dispatch_layout_gpu(const int32_t *topk_idx, int T, int K, int E, int R, int capacity,
                            const moe_dispatch_layout *out, void *work, size_t *work_bytes,
                            void *stream);
/* n_rows_dev: device int32 (e.g. layout.totals); rows >= *n_rows_dev are left untouched. */
int moe_permute_gpu(const moe_bf16 *x, const int32_t *row_token, const int32_t *n_rows_dev,
                    int max_rows, int H, moe_bf16 *send, void *stream);
/* seg_rows, seg_expert are HOST arrays (cuBLAS grouped GEMM takes host m/n/k arrays: the layout
 * counts must be on the host, as in every MoE framework). work: device scratch, size from
 * moe_expert_ffn_gpu_work_bytes(total_rows, n_seg, F). Uses cublasGemmGroupedBatchedEx (BF16 in,
 * BF16 out, CUBLAS_COMPUTE_32F), one problem per non-empty segment. */
size_t moe_expert_ffn_gpu_work_bytes(int64_t total_rows, int n_seg, int F);
int moe_expert_ffn_gpu(void *cublas, const moe_bf16 *x_rows, int n_seg, const int32_t *seg_rows,
                       const int32_t *seg_expert, const moe_bf16 *w1, const moe_bf16 *w3,
                       const moe_bf16 *w2, int H, int F, moe_bf16 *y_rows, void *work,
                       void *stream);
int moe_combine_gpu(const moe_bf16 *y_send, const int32_t *slot, const float *topk_w, int T, int K,
                    int H, moe_bf16 *out, void *stream);

/* §9 on the GPU (same arguments; device pointers). */
int moe_token_mix_gpu(const moe_bf16 *x, int T, int H, moe_bf16 *y, void *stream);
int moe_bf16_add_gpu(const moe_bf16 *a, const moe_bf16 *b, size_t n, moe_bf16 *out, void *stream);
int moe_bf16_scale_gpu(const moe_bf16 *x, float s, size_t n, moe_bf16 *y, void *stream);
int moe_unpermute_bwd_gpu(const moe_bf16 *g, const int32_t *slot, const float *topk_w, int T, int K, int H,
                          moe_bf16 *g_send, void *stream);
int moe_fill_f32_gpu(float *v, float x, size_t n, void *stream);
int moe_flop_burn_gpu(long long updates, int lanes, float *out, void *stream);
/* §10 on the GPU: launched <<<1, 1>>>; cycles in [0, MOE_SPIN_MAX_CYCLES] (about 2 s at 2 GHz). */
#define MOE_SPIN_MAX_CYCLES 4000000000LL
int moe_tick_gpu(int32_t *counter, void *stream);
int moe_spin_gpu(long long cycles, int32_t *flag, int32_t value, void *stream);

/* NCCL all-to-all, one rank's view (kernels/a2a_nccl.cu). counts/offsets are this rank's rows of
 * the matrices above, HOST arrays of length R (send_counts[d], recv_counts[s]). Grouped
 * ncclSend/ncclRecv inside ncclGroupStart/End; self rows go by cudaMemcpyAsync. */
int moe_a2a_nccl(const void *send, const int32_t *send_counts, const int32_t *send_offsets,
                 void *recv, const int32_t *recv_counts, const int32_t *recv_offsets,
                 size_t row_bytes, void *nccl_comm, void *stream);
/* Hierarchical: node_send_counts is the HOST [gpus_per_node][R] send-count block of this rank's
 * node (an intra-node allgather of counts provides it); staging: device buffer of at least
 * moe_a2a_hier_staging_rows(...) * row_bytes bytes. The communicator spans all R ranks. */
int moe_a2a_hier_nccl(const void *send, const int32_t *send_counts, const int32_t *send_offsets,
                      void *recv, const int32_t *recv_counts, const int32_t *recv_offsets,
                      const int32_t *node_send_counts, int gpus_per_node, void *staging,
                      size_t row_bytes, void *nccl_comm, void *stream);
/* Single-process communicators over devices 0..ndev-1 (ncclCommInitAll), for tests and bench. */
int moe_nccl_comms_init_all(int ndev, void **comms);
int moe_nccl_comm_destroy(void *comm);

/* ============================ timing API (simcal bench, H8) ================================== */
typedef enum {
    MOE_KERNEL_ROUTER_GEMM = 0,
    MOE_KERNEL_GATING,
    MOE_KERNEL_DISPATCH_LAYOUT,
    MOE_KERNEL_PERMUTE,
    MOE_KERNEL_EXPERT_FFN,
    MOE_KERNEL_COMBINE,
    MOE_KERNEL_A2A,      /* flat all-to-all of the dispatch (R ranks) */
    MOE_KERNEL_A2A_HIER, /* hierarchical all-to-all of the dispatch */
    MOE_KERNEL_COUNT
} moe_kernel_id;

const char *moe_kernel_name(moe_kernel_id id); /* "router_gemm", "gating", ... */

/* One bench shape = one rank's MoE layer. Inputs are random (splitmix64 from seed), routing is
 * whatever the random router produces (about uniform). */
typedef struct {
    int tokens;          /* T per rank */
    int hidden;          /* H */
    int ffn_hidden;      /* F (per expert) */
    int experts;         /* E (global) */
    int top_k;           /* K */
    int ranks;           /* R = EP size (CPU: in-process ranks; GPU: devices used for a2a) */
    int gpus_per_node;   /* for the hierarchical a2a; R % gpus_per_node == 0 */
    double capacity_factor; /* <= 0: dropless */
    moe_score_fn score;
    uint64_t seed;
} moe_bench_shape;

/* Work of one run of a kernel on a shape (per rank, uniform routing assumed for FFN/a2a):
 * flops (GEMMs: 2*M*N*K), bytes (minimum device-memory traffic: each input read once, each output
 * written once), comm_bytes (bytes this rank sends to OTHER ranks; a2a only). For roofline
 * fractions: HBM fraction = bytes / time / peak_bw. */
typedef struct {
    double flops;
    double bytes;
    double comm_bytes;
} moe_kernel_work;
int moe_kernel_work_of(moe_kernel_id id, const moe_bench_shape *shape, moe_kernel_work *work);

/* The deterministic input generator of both benches: uniform in [-scale, scale), splitmix64. */
void moe_bench_fill_bf16(moe_bf16 *v, size_t n, double scale, uint64_t *state);

/* CPU: all buffers preallocated by create; run executes the kernel exactly once (for all R
 * in-process ranks for the a2a kernels, for rank 0 otherwise). The caller times run(). */
typedef struct moe_bench_cpu moe_bench_cpu;
int moe_bench_cpu_create(const moe_bench_shape *shape, moe_bench_cpu **bench);
int moe_bench_cpu_run(moe_bench_cpu *bench, moe_kernel_id id);
void moe_bench_cpu_destroy(moe_bench_cpu *bench);

/* GPU: buffers on `device` (and for a2a on devices 0..ranks-1 with one NCCL communicator each;
 * MOE_ENOTSUP when fewer GPUs exist or gpus_per_node does not divide R). time = mean of `iters`
 * launches after `warmup`, measured with CUDA events around the whole loop: ms per launch. */
typedef struct moe_bench_gpu moe_bench_gpu;
int moe_bench_gpu_create(const moe_bench_shape *shape, int device, moe_bench_gpu **bench);
int moe_bench_gpu_time(moe_bench_gpu *bench, moe_kernel_id id, int warmup, int iters, float *ms);
void moe_bench_gpu_destroy(moe_bench_gpu *bench);

/* ============================ host-overhead probe (simcal probe-host) ============================= */
/* What the host thread of a training rank pays around the kernels, measured on one device
 * (kernels/host_probe.cu). Host times: CLOCK_MONOTONIC around the calls; GPU times: CUDA events.
 * Every figure is taken `reps` times and reported as min and median (the min is the cost without
 * scheduler noise, the median what a loop sees).
 *   launch_cpu_us        host time of one <<<>>> launch of the tick kernel, timed over `launches`
 *                        launches enqueued behind a spin kernel of spin_ms (the GPU is busy, the
 *                        queue never drains, so no launch waits for the device)
 *   gpu_kernel_us        GPU time per back-to-back tick kernel: events around those launches, / N
 *   graph_launch_cpu_us  host time of one cudaGraphLaunch of a graph of `launches` ticks (stream
 *                        capture), behind a spin kernel
 *   graph_gpu_per_node_us GPU time of that graph / `launches`
 *   sync_idle_us         GPU idle: cudaMemcpyAsync of 4 bytes to pinned host memory + stream sync
 *                        (a dropless MoE router's tokens-per-expert read)
 *   sync_after_tick_us   the same behind one tick launch (launch + completion round trip)
 *   cublas_gemm_cpu_us   host time of one cublasGemmEx (BF16 in/out, FP32 compute,
 *                        cublas_size^3) behind a spin kernel
 * The dense GEMM table: cublasGemmEx BF16 x BF16 -> BF16, CUBLAS_COMPUTE_32F, row-major
 * Y[m,n] = X[m,k] W[n,k]^T (the nn.Linear layout: cuBLAS op T on W, op N on X), CUDA events around
 * `gemm_iters` calls after `gemm_warmup`; shapes in the given order until gemm_budget_s of wall time
 * is spent (then gemm_truncated = 1). Operands hold moe_bench_fill_bf16 values in [-1, 1). */
typedef struct {
    int m, n, k;
} moe_gemm_shape;

#define MOE_PROBE_MAX_GEMM 64

typedef struct {
    int launches;         /* N: launches per timed loop and nodes of the graph, 1..1000 */
    int reps;             /* repetitions of each timed loop, 1..1000 */
    int sync_reps;        /* repetitions of each sync round trip, 1..10000 */
    double spin_ms;       /* GPU busy time ahead of each timed loop, (0, 500] */
    int cublas_calls;     /* cublasGemmEx calls per timed loop, 1..1000 */
    int cublas_size;      /* m = n = k of those calls, 1..4096 */
    const moe_gemm_shape *gemm_shapes;   /* may be NULL when n_gemm_shapes = 0 */
    int n_gemm_shapes;    /* 0..MOE_PROBE_MAX_GEMM */
    int gemm_warmup, gemm_iters;         /* 0..100, 1..1000 */
    double gemm_budget_s; /* > 0 */
} moe_host_probe_cfg;

typedef struct {
    int reps;             /* samples taken; 0 = not measured (its section failed) */
    double min_us, median_us;
} moe_probe_stat;

typedef struct {
    moe_gemm_shape shape;
    double time_us;       /* mean per call */
} moe_gemm_timing;

/* Sections, each measured independently: one that fails leaves its figures at reps = 0 and the
 * others still run. */
typedef enum {
    MOE_PROBE_LAUNCH = 0, /* launch_cpu_us, gpu_kernel_us */
    MOE_PROBE_GRAPH,      /* graph_launch_cpu_us, graph_gpu_per_node_us */
    MOE_PROBE_SYNC,       /* sync_idle_us, sync_after_tick_us */
    MOE_PROBE_CUBLAS,     /* cublas_gemm_cpu_us */
    MOE_PROBE_GEMM,       /* the dense GEMM table */
    MOE_PROBE_SECTIONS
} moe_probe_section;

typedef struct {
    moe_probe_stat launch_cpu_us, gpu_kernel_us, graph_launch_cpu_us, graph_gpu_per_node_us,
        sync_idle_us, sync_after_tick_us, cublas_gemm_cpu_us;
    int status[MOE_PROBE_SECTIONS];      /* moe_status of each section */
    /* validity of the "behind a spin kernel" loops: how many were timed, and in how many the
     * stream still had work (cudaStreamQuery: not ready) right after the last call was enqueued */
    int busy_loops, busy_loops_still_busy;
    double spin_cycles;                  /* clock64 cycles of one spin_ms spin at the rated clock */
    double spin_event_ms;                /* one such spin timed with events (>= spin_ms at or
                                            below the rated clock) */
    /* the tick counter read back at the end vs the CPU reference applied to every tick enqueued */
    long long ticks_expected, ticks_counted;
    int n_gemm;
    moe_gemm_timing gemm[MOE_PROBE_MAX_GEMM];
    int gemm_truncated;
    double gemm_wall_s;
} moe_host_probe;

/* Runs every section on `device` (GPU only; link moesim_cuda). MOE_EINVAL for a cfg outside the
 * ranges above; MOE_OK when every section passed and the tick counter matched, else the first
 * failing status -- `out` then still holds what was measured (see out->status). */
int moe_host_probe_run(int device, const moe_host_probe_cfg *cfg, moe_host_probe *out);

#ifdef __cplusplus
}
#endif

#endif /* MOESIM_KERNELS_MOE_KERNELS_H */
