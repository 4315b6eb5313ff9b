/* kernels.h — the compute kernels of a training step: the vocabulary the cost model and the plan
 * price (plan_compute.h) and the step program emits (sim/program/program.h). */
#ifndef MOESIM_KERNELS_H
#define MOESIM_KERNELS_H

/* Compute kernels. Backward is split into input gradients (B) and weight gradients (W) so that
 * zero-bubble / DualPipe schedules can defer W; schedules without the split emit B then W back to
 * back. The cost model prices each kernel from (flops, mem_bytes, tokens). */
typedef enum {
    K_NONE = 0,
    K_EMBED_FWD, K_EMBED_BWD,
    K_ATTN_FWD, K_ATTN_BWD_INPUT, K_ATTN_BWD_WEIGHT,           /* incl. norms, MLA projections */
    K_DENSE_FFN_FWD, K_DENSE_FFN_BWD_INPUT, K_DENSE_FFN_BWD_WEIGHT,
    K_ROUTER_FWD, K_ROUTER_BWD,                                 /* gating logits + top-k */
    K_PERMUTE_FWD, K_PERMUTE_BWD,                               /* sort tokens by expert */
    K_EXPERT_FWD, K_EXPERT_BWD_INPUT, K_EXPERT_BWD_WEIGHT,     /* grouped GEMMs of local experts */
    K_UNPERMUTE_FWD, K_UNPERMUTE_BWD,                           /* weighted combine of top-k outputs */
    K_SHARED_EXPERT_FWD, K_SHARED_EXPERT_BWD_INPUT, K_SHARED_EXPERT_BWD_WEIGHT,
    K_HEAD_LOSS_FWD, K_HEAD_LOSS_BWD,                           /* output projection + cross-entropy */
    K_MTP_PROJ_FWD, K_MTP_PROJ_BWD_INPUT, K_MTP_PROJ_BWD_WEIGHT,/* an MTP module's embedding, norms and
                                                                   projection M (before its block) */
    K_ATTN_CORE_FWD, K_ATTN_CORE_BWD,                           /* context parallelism: the attention
                                                                   core of one received key/value chunk
                                                                   (the local chunk is in K_ATTN_*) */
    K_OPTIMIZER,                                                /* AdamW on the ZeRO shard */
    K_NKINDS
} kernel_kind;

typedef enum { PHASE_F = 0, PHASE_B, PHASE_W, PHASE_OPT } op_phase; /* OPT: step tail (sync, Adam) */

#endif
