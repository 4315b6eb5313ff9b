/* backend_nccl.h — simlive's "nccl" backend: the step program on GPUs, one process per GPU, with the
 * CUDA kernels of kernels/moe_kernels.h and NCCL (compiled into simlive only, when CUDA is found).
 *
 * Setup: the process binds to GPU (world rank mod visible GPUs); world rank 0 creates an
 * ncclUniqueId and broadcasts it over MPI; ncclCommInitRank builds the world communicator; one
 * ncclCommSplit per group kind (color = the rank's group id of that kind, key = its rank) gives the
 * EP/TP/DP communicators with member index == EP index; one more split is the pipeline p2p
 * communicator. Three CUDA streams mirror program.h's streams (compute, comm, p2p).
 *
 * Ops: COMPUTE enqueues the kernel on the compute stream and synchronises it (the executor times the
 * op on the host around it, like a launch + cudaStreamSynchronize). A2A_DISPATCH (forward): the
 * per-(destination, local expert) counts (from moe_dispatch_layout_gpu, copied to the host) go first
 * through moe_a2a_nccl with one row per peer, then the token rows through moe_a2a_nccl (grouped
 * ncclSend/ncclRecv with variable counts). Combine and the backward all-to-alls reuse the forward
 * counts. SEND/RECV: ncclSend/ncclRecv on the p2p stream in program order (NCCL p2p is a rendezvous,
 * so RECVs are not pre-posted: prepost_recv = 0). REDUCE_SCATTER / ALL_GATHER / ALL_REDUCE:
 * ncclReduceScatter / ncclAllGather / ncclAllReduce in ncclBfloat16. Completion: a CUDA event
 * recorded after each communication op, polled with cudaEventQuery, so the watchdog keeps running
 * while NCCL waits for a missing rank.
 *
 * Stand-ins as in backend_cpu.h (FLOP-burning kernel + the same token mix); the MoE layer is real.
 * Correctness: each instance's input and output are copied back after the step and compared with the
 * CPU reference moe_layer_ref_cpu: GEMMs (router, expert FFN) differ from the CPU only by FP32
 * summation order (kernels/moe_kernels.h), so the stated tolerance per BF16 value is
 * |gpu - ref| <= 0.02 + 0.02 * |ref|; a token whose top-k flips on a near-tie of router logits can
 * exceed it, and is counted as a mismatch (reported, not hidden).
 *
 * Status: compiles with nvcc; not yet run (no GPU on the machine this was written on).
 */
#ifndef MOESIM_TOOLS_LIVE_NCCL_H
#define MOESIM_TOOLS_LIVE_NCCL_H

#ifdef __cplusplus
extern "C" {
#endif

#include "sim/base/errors.h"
#include "sim/live/live_exec.h"
#include "sim/program/program.h"
#include "sim/live/backend_cpu.h"
#include "sim/live/backend_mpi.h"

typedef struct live_nccl live_nccl;

int live_nccl_create(const program *p, int rank, live_mpi *m, int n_ops, live_nccl **out, moe_error *err);
void live_nccl_backend(live_nccl *g, live_backend *b);
/* Compare every MoE instance of the last step with the CPU reference (tolerance above). */
int live_nccl_check_moe(live_nccl *g, live_moe_check *moe, live_moe_check *model);
void live_nccl_free(live_nccl *g);

#ifdef __cplusplus
}
#endif

#endif
