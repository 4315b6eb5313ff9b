/* host_costs.c — the host cost table (host_costs.h).
 *
 * Counts per transformer layer, micro-batch and rank, read from the code the published runs used:
 * Megatron-Core 0.17.1 (NVIDIA/Megatron-LM 2edffadb, the 3rdparty submodule of Megatron-Bridge
 * v0.4.2) and TransformerEngine 2.14.1 (NVIDIA/TransformerEngine 366798ef, pinned by Megatron-Bridge
 * v0.4.2's pyproject.toml). "calls" are the host-side entries of an op: Python module calls, autograd
 * Function applies and PyTorch dispatcher ops (allocations and views included); "kernels" its CUDA
 * launches. Where a range was counted, the middle of the range is used. */
#include "sim/plan/host_costs.h"
#include "sim/plan/global_params.h"

#include <math.h>
#include <string.h>

/* ---- parameters ------------------------------------------------------------------------------------
 * Measured on an H200 (CUDA 13.0, driver 580, torch 2.11) by tools/gpu-check.sh, committed as
 * calibration/traces/host-probe-NVIDIA-H200.json (simcal probe-host) and torch-probe-NVIDIA-H200.json
 * (tools/host_probe_torch.py), each call timed while the GPU was kept busy so that no call waited:
 * launch_s: one cudaLaunchKernel, 3.4 us (min) / 3.7 us (median of 21 loops of 256); NVIDIA's "about 3
 *   microseconds" for a null kernel (NVIDIA developer forum thread 233645) agrees.
 * graph_launch_s: cudaGraphLaunch of a 256-node graph, 4.1 us (min); smaller graphs cost less.
 * sync_s: an 8-byte cudaMemcpyAsync to pinned memory + cudaStreamSynchronize on an idle GPU, 6.5 us (the
 *   tokens-per-expert read; the drained queue is the executor's).
 * call_s: one framework call. PyTorch on the same machine: an eager op 8.9 us, an op recorded by
 *   autograd 12.0 us (its backward node 14.4 us), an nn.Linear module call 27.3 us, .item() 9.3 us. The
 *   built-in value is the autograd-recorded op; the joint calibration fits it per framework
 *   (calibration/models/global.json), since the counted calls mix all of these. */
#define LAUNCH_US 3.7
#define GRAPH_LAUNCH_US 4.1
#define SYNC_US 6.5
#define CALL_US 12.0

void host_params_default(const scenario *s, host_params *out) {
    (void)s;
    *out = (host_params){.call_s = CALL_US * 1e-6, .launch_s = LAUNCH_US * 1e-6,
                         .graph_launch_s = GRAPH_LAUNCH_US * 1e-6, .sync_s = SYNC_US * 1e-6};
}

void host_params_of(const scenario *s, host_params *out) {
    host_params_default(s, out);
    const host_cfg *h = &s->host;
    double fitted;
    if (h->call_us >= 0) out->call_s = h->call_us * 1e-6;
    else if (global_param_value(s, "host.call_us", &fitted, NULL) == 0) out->call_s = fitted * 1e-6;
    if (h->launch_us >= 0) out->launch_s = h->launch_us * 1e-6;
    if (h->graph_launch_us >= 0) out->graph_launch_s = h->graph_launch_us * 1e-6;
    if (h->sync_us >= 0) out->sync_s = h->sync_us * 1e-6;
}

/* ---- quantization kernels per recipe (TE 2.14.1: pytorch/csrc/quantizer.cpp, common/recipe/
 * current_scaling.cu, pytorch/csrc/extensions/normalization.cpp l.330-445, cast.cpp l.316-365)
 *   q      quantize one tensor (row- and column-wise copies): delayed/blockwise/MXFP8 one kernel;
 *          current scaling four (zero the amax, amax, scale from amax, cast+transpose); NVFP4 about
 *          three (amax or post-Hadamard amax, quantize, Hadamard + quantize column-wise)
 *   qn     the extra of an RMSNorm feeding a quantized GEMM (LayerNormLinear): blockwise and MXFP8
 *          run the norm unfused then quantize (+1); current scaling computes the amax in the norm,
 *          then scale and cast (+2.5: 3-4 kernels less the norm); NVFP4 +2
 *   qe     split_quantize of a grouped GEMM's input over E local experts: per expert (E x q) but for
 *          NVFP4's fused group kernels (about 2.5 in all); TE's comment: "Currently only have fused
 *          kernel for FP8 delayed scaling" (cast.cpp l.330)
 *   swz    MXFP8: one scale-swizzle kernel per FP8 weight operand (gemm.cpp l.291; grouped GEMMs one
 *          multi-tensor swizzle per operand list, l.544-547) */
typedef struct { double q, qn, swz; int group_fused; } quant_kernels;

static quant_kernels quant_of(dtype_kind dt) {
    switch (dt) {
    case DT_FP8: return (quant_kernels){1, 1, 0, 0};
    case DT_FP8_CS: return (quant_kernels){4, 2.5, 0, 0};
    case DT_MXFP8: return (quant_kernels){1, 1, 1, 0};
    case DT_NVFP4: return (quant_kernels){3, 2, 0, 1};
    default: return (quant_kernels){0, 0, 0, 0};
    }
}

/* split_quantize over E experts */
static double quant_experts(quant_kernels q, double E) { return q.group_fused ? 2.5 : q.q * E; }

/* ---- the table ------------------------------------------------------------------------------------- */
static void set(host_price_table *t, kernel_kind k, int moe, double calls, double kernels) {
    for (int lk = 0; lk < LAYER_NKINDS; lk++)
        if (moe < 0 || layer_kind_is_moe((layer_kind)lk) == moe) t->op[lk][k] = (host_work){calls, kernels, 0};
}

void host_price_table_build(const scenario *s, int local_experts, host_price_table *t) {
    memset(t, 0, sizeof *t);
    host_params_of(s, &t->par);
    t->enabled = s->host.framework != HOST_NONE;
    t->sync_kernel = K_NONE;
    if (!t->enabled) return;
    const model_cfg *m = &s->model;
    quant_kernels q = quant_of(s->precision.compute);
    double E = local_experts > 0 ? local_experts : 0;
    int mla = m->attention == ATTN_MLA, tp = s->layout.tp > 1;

    /* Attention (TE LayerNormLinear QKV with the input RMSNorm fused, fused RoPE on q and k, cuDNN
     * fused attention, proj Linear, residual add by torch.compile): GQA/MHA 7 kernels forward (Llama;
     * 9 with Qwen3's q/k norms: 8 here), 10-14 backward input, 2 weight-gradient GEMMs; MLA (q_down,
     * kv_down, q_up and kv_up LayerNormLinears, the rope/no-rope split and concat, YaRN RoPE, cuDNN MLA
     * attention, proj) 14-16 forward, 20-24 backward input, 5 weight GEMMs. Quantized recipes add the
     * norm's quantize and each GEMM input's (forward) and output gradient's (backward). Calls: GQA
     * 100-150 forward, 80-120 backward; MLA 180-250, 150-200. */
    if (mla) {
        set(t, K_ATTN_FWD, -1, 215, 15 + 5 * q.q + q.qn + 5 * q.swz);
        set(t, K_ATTN_BWD_INPUT, -1, 175, 22 + 5 * q.q);
        set(t, K_ATTN_BWD_WEIGHT, -1, 15, 5);
    } else {
        set(t, K_ATTN_FWD, -1, 125, 8 + q.qn + q.q + 2 * q.swz);
        set(t, K_ATTN_BWD_INPUT, -1, 100, 12 + 2 * q.q);
        set(t, K_ATTN_BWD_WEIGHT, -1, 6, 2);
    }
    /* context parallelism's received key/value chunks: one attention launch each */
    set(t, K_ATTN_CORE_FWD, -1, 10, 1);
    set(t, K_ATTN_CORE_BWD, -1, 10, 2.5);
    /* Dense MLP (LayerNormLinear fc1 with the pre-MLP norm, SwiGLU by torch.compile, fc2 Linear,
     * residual add): 5 kernels forward, 6 backward input, 2 weight GEMMs; calls 60-90 and 50-80. */
    set(t, K_DENSE_FFN_FWD, 0, 75, 5 + q.qn + q.q + 2 * q.swz);
    set(t, K_DENSE_FFN_BWD_INPUT, 0, 65, 6 + 2 * q.q);
    set(t, K_DENSE_FFN_BWD_WEIGHT, 0, 6, 2);
    if (m->experts > 0) {
        /* Router with the pre-MLP RMSNorm (TE fused top-k and aux-loss kernels, moe_router_fusion,
         * set by every Megatron-Bridge MoE recipe): 9-11 kernels with an auxiliary loss (Qwen3), 31
         * for DeepSeek-V3's sigmoid scores with expert bias and sequence aux loss (DeepSeek-V3 GB200
         * optimization guide, NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization at
         * eb0783b6, section 2.1.4: 72 -> 31 with fusion); backward 6-8 + the gating weight GEMM. */
        double router = mla ? 31 : 10;
        set(t, K_ROUTER_FWD, 1, 90, router);
        set(t, K_ROUTER_BWD, 1, 70, 8);
        /* Dispatcher preprocessing and permutation (TE's Triton permute: 4 kernels): alltoall
         * (counts, their all-gather over TP x EP, the D2H copy, sort_chunks_by_index) 16-20 kernels
         * and 80-130 calls, DeepEP (dispatch layout, notify, indices -> multihot, permute) 10-14 and
         * 60-100, HybridEP (metadata, dispatch_with_permute) 5-8 and 40-70; backward 4-5 / 2-3 / 1-3. */
        double pk = s->routing.dispatcher == DISPATCH_ALLTOALL ? 18 : s->routing.dispatcher == DISPATCH_HYBRIDEP ? 6.5 : 12;
        double pc = s->routing.dispatcher == DISPATCH_ALLTOALL ? 105 : s->routing.dispatcher == DISPATCH_HYBRIDEP ? 55 : 80;
        /* the permutation proper (TE's Triton make_row_id_map 3 + permute 1, and its Python launcher)
         * runs after the host sync; the rest is the preprocessing that scope moe_preprocess captures */
        if (s->host.cuda_graph_scope & CG_MOE_PREPROCESS) { pk = 4; pc = 20; }
        t->op[LAYER_MOE][K_PERMUTE_FWD] = t->op[LAYER_MOE_WINDOW][K_PERMUTE_FWD] =
            (host_work){pc, pk, (s->host.cuda_graph_scope & CG_MOE_PREPROCESS) ? 1 : 0};
        set(t, K_PERMUTE_BWD, 1, s->routing.dispatcher == DISPATCH_HYBRIDEP ? 30 : 40,
            s->routing.dispatcher == DISPATCH_ALLTOALL ? 4.5 : 2.5);
        /* Routed experts (TEGroupedMLP over TE GroupedLinear): TE 2.14.1 runs a grouped GEMM as one
         * cuBLAS launch per local expert on 4 streams (multi_stream_cublas_gemm, cublaslt_gemm.cu
         * l.969-1022; the single CUTLASS kernel needs NVTE_USE_CUTLASS_GROUPED_GEMM, which no recipe
         * sets), fc1 and fc2: 2E GEMMs forward, 2E input-gradient and 2E weight-gradient GEMMs
         * backward; each GEMM input (forward) and output gradient (backward) quantized per expert;
         * the weighted SwiGLU 1-2 kernels; MXFP8 one swizzle per grouped GEMM. Calls: 30 + 10-20 per
         * expert (Python loops over the GEMMs, C++ tensor wrappers, 13 CUDA event calls per grouped
         * GEMM). */
        double qe = quant_experts(q, E);
        set(t, K_EXPERT_FWD, 1, 30 + 15 * E, 2 * E + 2 * qe + 1.5 + 2 * q.swz);
        set(t, K_EXPERT_BWD_INPUT, 1, 30 + 15 * E, 2 * E + 2 * qe + 1.5);
        set(t, K_EXPERT_BWD_WEIGHT, 1, 3 * E, 2 * E);
        /* Unpermute and combine: alltoall 2-5 kernels (sort_chunks, unpermute, the shared experts'
         * add), DeepEP 2-3, HybridEP combine_with_unpermute 1-3; calls 20-40, backward 15-30. */
        double uk = s->routing.dispatcher == DISPATCH_ALLTOALL ? 3.5 : s->routing.dispatcher == DISPATCH_HYBRIDEP ? 2 : 2.5;
        set(t, K_UNPERMUTE_FWD, 1, 30, uk);
        set(t, K_UNPERMUTE_BWD, 1, 22, s->routing.dispatcher == DISPATCH_ALLTOALL ? 3 : 2);
        /* Shared experts (SharedExpertMLP: fc1, SwiGLU, fc2): 3-4 kernels forward, calls 50-80 */
        if (m->shared_experts > 0) {
            set(t, K_SHARED_EXPERT_FWD, 1, 65, 3.5 + 2 * q.q + 2 * q.swz);
            set(t, K_SHARED_EXPERT_BWD_INPUT, 1, 50, 3 + 2 * q.q);
            set(t, K_SHARED_EXPERT_BWD_WEIGHT, 1, 6, 2);
        }
        /* the host waits for the tokens per expert before permuting, unless drop-and-pad fixes the
         * shapes on the host (capacity with drop) */
        if (!(s->routing.drop && s->routing.capacity_factor > 0)) t->sync_kernel = K_PERMUTE_FWD;
    }
    /* Head and loss (final RMSNorm, the output layer, TE's fused cross-entropy, loss mask): 8-10
     * kernels forward, calls 60-100; backward 5-6 + the head's weight GEMM, calls 40-70. */
    set(t, K_HEAD_LOSS_FWD, -1, 80, 9);
    set(t, K_HEAD_LOSS_BWD, -1, 55, 6.5);
    /* Embedding (VocabParallelEmbedding): one lookup; under TP the mask, lookup and reduction ~7 */
    set(t, K_EMBED_FWD, -1, 17, tp ? 7 : 1);
    set(t, K_EMBED_BWD, -1, 15, 4);
    /* An MTP module's embedding, three norms and projection M: as a small dense block */
    set(t, K_MTP_PROJ_FWD, -1, 40, 5 + q.q);
    set(t, K_MTP_PROJ_BWD_INPUT, -1, 35, 5 + 2 * q.q);
    set(t, K_MTP_PROJ_BWD_WEIGHT, -1, 3, 1);
    /* Communication: one NCCL (or DeepEP/HybridEP) launch and the torch.distributed / dispatcher
     * Python around it */
    t->a2a = (host_work){5, 1, 0};
    t->collective = (host_work){5, 1, 0};
    t->p2p = (host_work){5, 1, 0};
    /* batched p2p with torch.cuda.synchronize(): pipeline parallelism without virtual stages */
    t->device_sync_p2p = s->layout.pp > 1 && s->layout.schedule == SCHED_1F1B;

    /* CUDA graphs: the captured kernels of each scope (moe_preprocess: its part of K_PERMUTE_FWD, above) */
    int g = s->host.cuda_graph_scope;
    if (g & CG_LAYER) g |= CG_ATTN | CG_MLP | CG_MOE;
    for (int lk = 0; lk < LAYER_NKINDS; lk++) {
        int *c = t->captured[lk];
        if (g & CG_ATTN) c[K_ATTN_FWD] = c[K_ATTN_BWD_INPUT] = c[K_ATTN_BWD_WEIGHT] = c[K_ATTN_CORE_FWD] = c[K_ATTN_CORE_BWD] = 1;
        if (g & CG_MLP) c[K_DENSE_FFN_FWD] = c[K_DENSE_FFN_BWD_INPUT] = c[K_DENSE_FFN_BWD_WEIGHT] = 1;
        if (g & (CG_MOE_ROUTER | CG_MOE)) {
            c[K_ROUTER_FWD] = c[K_ROUTER_BWD] = 1;
            c[K_SHARED_EXPERT_FWD] = c[K_SHARED_EXPERT_BWD_INPUT] = c[K_SHARED_EXPERT_BWD_WEIGHT] = 1;
        }
        if (g & CG_MOE) {
            c[K_PERMUTE_FWD] = c[K_PERMUTE_BWD] = c[K_UNPERMUTE_FWD] = c[K_UNPERMUTE_BWD] = 1;
            c[K_EXPERT_FWD] = c[K_EXPERT_BWD_INPUT] = c[K_EXPERT_BWD_WEIGHT] = 1;
        }
    }
}

/* TE FusedAdam (common/multi_tensor/multi_tensor_apply.cuh l.18-19: 36 tensors or 320 x 65536 elements
 * per launch for Adam's depth-4 lists, 110 tensors for the depth-1 l2norm), the grad-norm l2norm, the
 * clip scale and the master -> model copy: four multi-tensor passes; the distributed optimizer's
 * Python loops over parameters and their groups: 2-5 calls per tensor. */
host_work host_optimizer_work(const scenario *s, double tensors, double shard_elems) {
    (void)s;
    double per_launch_elems = 320.0 * 65536.0;
    double adam = fmax(ceil(tensors / 36.0), ceil(shard_elems / per_launch_elems));
    double norm = fmax(ceil(tensors / 110.0), ceil(shard_elems / per_launch_elems));
    return (host_work){3.5 * tensors, 2 * adam + 2 * norm, 0};
}

/* The ops of one block, as the step program emits them (sim/program/program.c fwd_block, bwd_block,
 * gen_weights), forward and backward. */
static const kernel_kind BLOCK_FWD[] = {K_ATTN_FWD, K_DENSE_FFN_FWD, K_ROUTER_FWD, K_PERMUTE_FWD, K_SHARED_EXPERT_FWD,
                                        K_EXPERT_FWD, K_UNPERMUTE_FWD};
static const kernel_kind BLOCK_BWD[] = {K_ATTN_BWD_INPUT, K_ATTN_BWD_WEIGHT, K_DENSE_FFN_BWD_INPUT,
                                        K_DENSE_FFN_BWD_WEIGHT, K_ROUTER_BWD, K_PERMUTE_BWD,
                                        K_SHARED_EXPERT_BWD_INPUT, K_SHARED_EXPERT_BWD_WEIGHT, K_EXPERT_BWD_INPUT,
                                        K_EXPERT_BWD_WEIGHT, K_UNPERMUTE_BWD};

static double pass_issue_s(const host_price_table *t, layer_kind lk, const kernel_kind *ks, int n, int moe,
                           int cp, int tp_colls, kernel_kind core) {
    double h = 0;
    int graphs = 0, prev_captured = 0;
    for (int i = 0; i < n; i++) {
        kernel_kind k = ks[i];
        int cap = t->captured[lk][k];
        if (cap && !prev_captured) graphs++;   /* a region of consecutive captured ops: one launch */
        prev_captured = cap;
        if (!cap) h += host_issue_s(&t->par, t->op[lk][k]);
    }
    if (!t->captured[lk][core]) h += (cp - 1) * host_issue_s(&t->par, t->op[lk][core]);
    h += (moe ? 2 : 0) * host_issue_s(&t->par, t->a2a) + tp_colls * host_issue_s(&t->par, t->collective);
    return h + graphs * t->par.graph_launch_s;
}

void host_layer_issue_s(const host_price_table *t, layer_kind lk, int cp, int tp_colls, double *fwd_s, double *bwd_s) {
    *fwd_s = *bwd_s = 0;
    if (!t->enabled) return;
    int moe = layer_kind_is_moe(lk);
    *fwd_s = pass_issue_s(t, lk, BLOCK_FWD, (int)(sizeof BLOCK_FWD / sizeof BLOCK_FWD[0]), moe, cp, tp_colls,
                          K_ATTN_CORE_FWD);
    *bwd_s = pass_issue_s(t, lk, BLOCK_BWD, (int)(sizeof BLOCK_BWD / sizeof BLOCK_BWD[0]), moe, cp, tp_colls,
                          K_ATTN_CORE_BWD);
}
