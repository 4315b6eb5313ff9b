/* host_costs.h — THE host cost of issuing a step's ops: what the CPU thread of one rank spends to
 * launch each op of the step program (sim/exec/step_host.h has the semantics every executor applies;
 * the plan level sums the same table).
 *
 * A framework issues an op as framework calls — Python module calls, autograd nodes, PyTorch
 * dispatcher entries (allocations and views included) — and kernel launches:
 *     issue_s(op) = calls(op) x call_s + kernels(op) x launch_s
 * An op inside a captured CUDA graph costs nothing to issue; the graph's one launch (graph_launch_s)
 * is charged to the first op of its region. host.cuda_graph_scope picks what is captured, as Megatron's
 * --cuda-graph-scope does (Megatron-Core 0.17.1 megatron/core/transformer/enums.py l.61-71,
 * megatron/training/arguments.py l.1777-1790):
 *   attn            the attention half of every layer, forward and backward
 *   mlp             a dense layer's MLP
 *   moe_router      the router, with the shared experts
 *   moe_preprocess  the dispatcher's preprocessing up to its host sync (the rest of K_PERMUTE_FWD, the
 *                   token permutation itself, stays eager)
 *   moe, layer      the whole MoE MLP, the whole layer: only without a host sync (drop-and-pad MoE:
 *                   capacity with drop, Megatron's moe_expert_capacity_factor +
 *                   moe_pad_expert_input_to_capacity), which scenario validation requires
 * Dropless MoE recipes capture attn, moe_router and moe_preprocess at most (Megatron-Core MoE README,
 * "CPU overhead bottleneck"): the routed experts and the permutation have dynamic shapes.
 * Host syncs (step_host.h): a dropless MoE layer's forward waits for the tokens per expert before it
 * permutes (K_PERMUTE_FWD: the alltoall dispatcher's d2h_event.synchronize() before the EP all-to-all,
 * DeepEP's busy-wait for the received counts, HybridEP's blocking read of the permuted-token count;
 * Megatron-LM core_v0.17.1 (2edffadb) megatron/core/transformer/moe/token_dispatcher.py l.427-592,
 * 867-906, fused_a2a.py l.106-137, 403-421). Pipeline parallelism without virtual stages batches its
 * sends and receives and then calls torch.cuda.synchronize() (p2p_communication.py l.416-419,
 * batch_p2p_sync; Megatron-Bridge v0.4.2 sets batch_p2p_comm only without virtual stages,
 * comm_overlap.py l.454-460): SEND and RECV are device-wide syncs there.
 *
 * The counts per op (host_costs.c) were read from the code of the software the published runs used
 * (Megatron-Bridge v0.4.2: Megatron-Core 0.17.1 at 2edffadb, TransformerEngine 2.14.1 at 366798ef),
 * per transformer layer, micro-batch and rank; they are static counts of the code paths, not a
 * profile: kernels within about 30%, calls within about 50%. call_s is therefore the one parameter
 * the joint calibration fits per framework (calibration/models/global.json); launch_s, graph_launch_s
 * and sync_s are measured (tools/gpu-check.sh's host probe, calibration/traces/). */
#ifndef MOESIM_HOST_COSTS_H
#define MOESIM_HOST_COSTS_H

#include "sim/plan/kernels.h"
#include "sim/plan/model.h"
#include "sim/scenario/scenario.h"

/* What issuing one op takes: framework calls and kernel launches. */
typedef struct {
    double calls, kernels;
    double graphs;     /* CUDA graph launches (a part of the op captured in a graph) */
} host_work;

/* The host parameters of a scenario (seconds), its "auto" values resolved. */
typedef struct {
    double call_s, launch_s, graph_launch_s, sync_s;
} host_params;

/* The table of one step program: per layer kind and compute kernel, per communication op kind. */
typedef struct {
    host_params par;
    int enabled;                                /* host.framework != "none" */
    host_work op[LAYER_NKINDS][K_NKINDS];       /* compute ops (K_OPTIMIZER: host_optimizer_work) */
    int captured[LAYER_NKINDS][K_NKINDS];       /* inside a CUDA graph (host.cuda_graph_scope) */
    host_work a2a, collective, p2p;             /* communication ops (a RECV: p2p when device_sync_p2p) */
    kernel_kind sync_kernel;                    /* the compute op a host sync follows; K_NONE: none */
    int device_sync_p2p;                        /* SEND and RECV are device-wide syncs */
} host_price_table;

/* The built-in host parameters of host.framework (its "auto" values), with their sources. */
void host_params_default(const scenario *s, host_params *out);
/* The scenario's host parameters: its host.* values, "auto" ones from host_params_default. */
void host_params_of(const scenario *s, host_params *out);

/* Build the table of scenario s. `local_experts`: the routed expert slots a rank holds (experts / ep,
 * or the EPLB slots). Pure. */
void host_price_table_build(const scenario *s, int local_experts, host_price_table *out);

/* Seconds to issue `w` with parameters p. */
static inline double host_issue_s(const host_params *p, host_work w) {
    return w.calls * p->call_s + w.kernels * p->launch_s + w.graphs * p->graph_launch_s;
}

/* The host time of one block of kind lk for one micro-batch (the plan's first-order figure): its
 * forward and its backward compute ops (cp - 1 received key/value chunks under context parallelism)
 * and communication ops (the MoE block's two all-to-alls per pass; `tp_colls` TP collectives per
 * pass), a captured scope costing one graph launch. */
void host_layer_issue_s(const host_price_table *t, layer_kind lk, int cp, int tp_colls, double *fwd_s, double *bwd_s);

/* The optimizer step of a rank holding `tensors` parameter tensors and `shard_elems` elements of the
 * optimizer shard: TE's FusedAdam multi-tensor launches and the distributed optimizer's Python loops
 * (host_costs.c). */
host_work host_optimizer_work(const scenario *s, double tensors, double shard_elems);

#endif
