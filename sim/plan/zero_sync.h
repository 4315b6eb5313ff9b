/* zero_sync.h — how often ZeRO's data-parallel collectives move a pipeline position's parameters in
 * one step of m micro-batches (one rule for the plan's accounting and the step program's ops).
 *
 *   zero 0  gradients: one all-reduce after the last backward; no parameter gather.
 *   zero 1  gradients: one reduce-scatter (optimizer state sharded); parameters: one all-gather of the
 *           updated shards after the optimizer (Megatron's distributed optimizer).
 *   zero 2  gradients sharded: every micro-batch's gradients are reduce-scattered as its backward
 *           produces them (DeepSpeed stage 2 reduces each micro-step: no full gradient is kept), m
 *           reduce-scatters; parameters: one all-gather after the optimizer.
 *   zero 3  (FSDP) parameters sharded too: every micro-batch gathers each unit before its forward and
 *           again before its backward, 2m all-gathers, and reduce-scatters as zero 2; no gather after
 *           the optimizer (the shards stay sharded). With pipeline parallelism m >= pp, so ZeRO-3's
 *           gathers grow with the micro-batch count (Megatron/DeepSpeed refuse the combination for
 *           that reason; the plan warns).
 * Volumes per GPU in NCCL's buffer convention (nccl-tests: the full buffer, not the shard): a gather
 * of P parameters is P x weight bytes, a reduction P x gradient bytes. */
#ifndef MOESIM_ZERO_SYNC_H
#define MOESIM_ZERO_SYNC_H

typedef struct {
    int param_gathers;     /* all-gathers of every parameter the position holds */
    int grad_reductions;   /* reduce-scatters (zero >= 1) or all-reduces (zero 0) of every gradient */
} zero_passes;

static inline zero_passes zero_passes_of(int zero, int micro_batches) {
    zero_passes z;
    z.param_gathers = zero >= 3 ? 2 * micro_batches : zero >= 1 ? 1 : 0;
    z.grad_reductions = zero >= 2 ? micro_batches : 1;
    return z;
}

#endif
