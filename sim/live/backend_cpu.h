/* backend_cpu.h — the compute half of simlive's "mpi" backend: one rank's data and kernels on the CPU,
 * with the real CPU references of kernels/moe_kernels.h (compiled into simlive only).
 *
 * What is real and what is a stand-in (say it plainly):
 *   REAL (kernels/ CPU references on the live data):
 *     router GEMM + top-k gating (K_ROUTER_FWD), dispatch layout + permute (K_PERMUTE_FWD), the
 *     grouped SwiGLU expert FFN on the rows the all-to-all delivered (K_EXPERT_FWD), combine/unpermute
 *     with the gate weights (K_UNPERMUTE_FWD); the residual add; the pipeline activations and
 *     gradients that SEND/RECV carry; the all-to-all payloads (token rows, counts from the live
 *     gating, exchanged first per (destination, local expert) like DeepEP's notify_dispatch).
 *   REAL MATH, STAND-IN DATA (backward of the MoE layer): unpermute-bwd scatters w[t,k] * g[t] into
 *     the dispatch rows, the backward all-to-alls move them with the forward routing's counts,
 *     permute-bwd sums them back per token. The expert backward GEMMs (bwd_input, bwd_weight) run the
 *     forward FFN kernel on the gradient rows: the same shapes and FLOPs, not the true derivative.
 *   STAND-IN (deterministic, documented FLOP count): embedding (token rows from splitmix64),
 *     attention, dense FFN, shared expert, head/loss, router backward, optimizer, the DP gradient
 *     buffers. They burn op.flops in an FP32 multiply-add loop and apply a cheap deterministic token
 *     mix to the hidden state (attention: h' = bf16(0.75 h[j] + 0.25 h[j+1 mod H])), so that every
 *     layer changes the data the next one sees.
 * Live mode needs layout.tp == 1 (no tensor-parallel split of the stand-ins) and model.mtp_layers
 * == 0 (no multi-token-prediction module); it refuses the others with exit 2.
 *
 * Correctness: every MoE layer instance (layer, micro-batch) keeps its input x and output;
 * live_cpu_check_moe() recomputes moe_layer_ref_cpu(x) — the kernels' dense single-process
 * reference: no permutation, no all-to-all, every expert's weights — and compares BITWISE. The
 * capacity rule is per source rank in both (moe_dispatch_layout_cpu drops per rank in token order;
 * the reference runs on this rank's tokens with the same capacity), so drops agree exactly.
 * live_cpu_check_model() recomputes, for every micro-batch whose head this rank runs, the whole
 * forward in one process (embedding, every layer with the reference MoE, the same stand-ins) and
 * compares the hidden state the pipeline delivered, bitwise: it checks the SEND/RECV payloads, the
 * chunk mapping of the schedule and every MoE layer on every stage.
 */
#ifndef MOESIM_TOOLS_LIVE_CPU_H
#define MOESIM_TOOLS_LIVE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/errors.h"
#include "sim/program/program.h"

typedef struct live_cpu live_cpu;

int live_cpu_create(const program *p, int rank, live_cpu **out, moe_error *err);
void live_cpu_free(live_cpu *c);
/* Forget the previous step's per-instance buffers (weights and results of checks are kept). */
void live_cpu_begin_step(live_cpu *c);

/* Run COMPUTE op `o` on the live data. *measured: rows computed (expert GEMMs). */
int live_cpu_compute(live_cpu *c, const program_op *o, double *measured, moe_error *err);

/* All-to-all payload of op `o` in rows (MPI_Alltoallv semantics over the EP group, member index ==
 * EP index). When meta_ints > 0 the receive side is unknown until every member's meta_send block
 * (meta_ints int32 per destination) has been exchanged: call live_cpu_a2a_sized() with meta_recv
 * filled, which sizes and allocates recv. */
typedef struct {
    int n;                         /* group size */
    size_t row_bytes;
    const void *send;
    const int32_t *send_rows, *send_offsets;     /* [n] */
    void *recv;                                  /* NULL until sized */
    const int32_t *recv_rows, *recv_offsets;     /* [n], NULL until sized */
    int meta_ints;
    const int32_t *meta_send;                    /* [n * meta_ints] */
    int32_t *meta_recv;                          /* [n * meta_ints] */
} live_a2a_buf;

int live_cpu_a2a_begin(live_cpu *c, const program_op *o, live_a2a_buf *b, moe_error *err);
int live_cpu_a2a_sized(live_cpu *c, const program_op *o, live_a2a_buf *b, moe_error *err);
/* Bytes of the payload that leave this rank (to other members). */
double live_a2a_bytes_out(const live_a2a_buf *b, int my_index);

/* SEND source / RECV destination of a pipeline op: the (micro-batch, chunk) activation (phase F) or
 * activation gradient (phase B), T x H BF16. EXIT_RUNTIME when op.bytes disagrees with it. */
void *live_cpu_p2p_buffer(live_cpu *c, const program_op *o, size_t *bytes, moe_error *err);

/* Stand-in gradient/parameter buffers of a ring collective over `n` members: BF16 elements, the
 * count per member chosen so the buffer moves op.bytes (rounded down to a multiple of n elements).
 * reduce-scatter: send n*count -> recv count; all-gather: send count -> recv n*count;
 * all-reduce: n*count -> n*count. */
int live_cpu_coll_buffers(live_cpu *c, const program_op *o, int n, uint16_t **send, uint16_t **recv,
                          size_t *count_per_member, moe_error *err);

/* ---- host-side data for other backends (the NCCL backend uploads these and checks against them) -- */
/* Weights of MoE layer `layer` (every expert: w_gate [H,E], w1/w3 [E,H,F], w2 [E,F,H]); 0 when the
 * layer is dense. Shape: T tokens per micro-batch, H, F, E, K, capacity, first expert of this rank. */
int live_cpu_weights(const live_cpu *c, int layer, const uint16_t **w_gate, const uint16_t **w1,
                     const uint16_t **w3, const uint16_t **w2);
void live_cpu_shape(const live_cpu *c, int *T, int *H, int *F, int *E, int *K, int *capacity,
                    int *first_expert);
/* The embedding stand-in's token rows of micro-batch mb of this rank, [T,H] BF16. */
void live_cpu_embed(live_cpu *c, int mb, uint16_t *x);
/* The reference MoE layer output of `layer` on x [T,H] (moe_layer_ref_cpu with this run's gating). */
int live_cpu_moe_reference(live_cpu *c, int layer, const uint16_t *x, uint16_t *out);
const void *live_cpu_gate_cfg(const live_cpu *c);   /* moe_gate_cfg * */

/* ---- checks (outside the timed region) ----------------------------------------------------------- */
typedef struct {
    long instances;            /* MoE layer instances (layer, micro-batch) compared */
    long values;               /* BF16 values compared */
    long mismatches;           /* values whose bits differ */
    double max_abs_diff;
    int first_layer, first_mb; /* first mismatching instance, -1 if none */
    long dropped;              /* token-expert assignments dropped by the capacity rule */
    long rows_sent;            /* dispatch rows this rank sent (incl. to itself) */
} live_moe_check;

int live_cpu_check_moe(live_cpu *c, live_moe_check *chk);
/* Same counters over the final hidden states of the micro-batches whose head this rank ran. */
int live_cpu_check_model(live_cpu *c, live_moe_check *chk);

#endif
