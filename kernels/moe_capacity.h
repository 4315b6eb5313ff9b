/* moe_capacity.h — the capacity-factor drop rule of a MoE layer. This is its one definition: the
 * simulator's routing (sim/program/routing.c), the kernels' dispatch layout (dispatch_layout_cpu.c and
 * its CUDA twin dispatch_layout.cu, which take the capacity this returns) and live mode all use it.
 * Header-only and free of simulator types, so the standalone kernels library and the program layer can
 * both include it.
 *
 * The rule. Every source rank applies the capacity to its own tokens, before it dispatches them. In one
 * micro-batch a rank routes T tokens, each to top_k = K experts out of E; expert e accepts from that rank
 * at most
 *     capacity = ceil(C * T * K / E)        token-expert assignments,  C = routing.capacity_factor > 0,
 * the first ones in token order (a token's experts in its selection order, best first); the others are
 * dropped: not dispatched, the token skips that expert through its residual connection. C <= 0 means
 * dropless (-1). An expert therefore receives at most (EP ranks x capacity) assignments per micro-batch,
 * and the drop needs no count from another rank.
 *
 * Source: Megatron-LM, megatron/core/transformer/moe/moe_utils.py: get_capacity() is
 * ceil(num_tokens / num_experts * capacity_factor) with num_tokens = tokens * topk, and
 * apply_router_token_dropping() applies it to the router's own [tokens, experts] map, i.e. to the rank's
 * local tokens before the token dispatcher's all-to-all; drop_policy "position" keeps the earliest
 * tokens, as here. Switch Transformer (Fedus et al. 2021, eq. 3) has the same form, tokens per batch /
 * experts x capacity factor, over the batch a device routes.
 *
 * Rounding: C * T * K / E within 1e-9 above an integer counts as that integer (1.1 * 100 is
 * 110.00000000000001 in binary; the capacity is 110, not 111). */
#ifndef MOESIM_KERNELS_MOE_CAPACITY_H
#define MOESIM_KERNELS_MOE_CAPACITY_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Assignments expert e accepts from one source rank of T tokens per micro-batch; -1 = dropless
 * (capacity_factor <= 0, or no experts). */
static inline int moe_capacity(double capacity_factor, int T, int K, int E) {
    if (!(capacity_factor > 0.0) || E <= 0) return -1;
    return (int)ceil(capacity_factor * (double)T * (double)K / (double)E - 1e-9);
}

#ifdef __cplusplus
}
#endif

#endif
