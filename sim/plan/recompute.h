/* recompute.h — what activation recomputation drops and re-runs, as one set of parts of a block.
 *
 * layout.recompute names a kind (none, selective, full), layout.recompute_modules Megatron's
 * modules; both become one set of the parts below, which the memory ledgers (memory.c: the tensors a
 * part no longer keeps) and the price table (plan_compute.c: the forward work a part re-runs in the
 * backward) read. A module list replaces the kind's set.
 *   selective  DeepSeek-V3's practice (report §3.2.3 and §3.3.2): RMSNorm outputs, MLA up-projection
 *              outputs and the activation outputs of the dense FFN, shared and routed experts
 *              = RC_LAYERNORM | RC_MLA_UP | RC_MLP_ACT | RC_SHARED_ACT | RC_MOE_ACT
 *   full       every block keeps its input only
 *   modules    core_attn -> RC_CORE_ATTN (flash attention's output and logsumexp), mla_up_proj ->
 *              RC_MLA_UP, layernorm -> RC_LAYERNORM, mlp -> RC_MLP (the dense FFN from its input),
 *              moe_act -> RC_MOE_ACT, moe -> RC_MOE (router, dispatched copies, experts and shared
 *              experts from the MoE block's input; its all-to-alls are not re-run), shared_experts ->
 *              RC_SHARED (Megatron-LM --recompute-modules). */
#ifndef MOESIM_RECOMPUTE_H
#define MOESIM_RECOMPUTE_H

#include "sim/scenario/scenario.h"

enum {
    RC_LAYERNORM = 1, RC_MLA_UP = 2, RC_CORE_ATTN = 4, RC_MLP = 8, RC_MLP_ACT = 16, RC_MOE_ACT = 32,
    RC_MOE = 64, RC_SHARED = 128, RC_SHARED_ACT = 256, RC_FULL = 512
};
#define RC_SELECTIVE (RC_LAYERNORM | RC_MLA_UP | RC_MLP_ACT | RC_SHARED_ACT | RC_MOE_ACT)

/* The parts a layout recomputes. */
unsigned recompute_set(const layout_cfg *lay);
/* The set of a recompute kind alone (none, selective, full). */
unsigned recompute_kind_set(recompute_kind rc);

#endif
