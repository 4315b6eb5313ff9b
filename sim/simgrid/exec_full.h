/* exec_full.h — the `--fidelity full` executor: the step program run by SimGrid actors.
 *
 * Same program, same semantics and same result fields as the fast executor (step_exec.h), but every
 * op of every rank is executed in a SimGrid simulation on the rail fabric and every transfer is a
 * flow sharing links max-min with everything else in flight:
 *   - one actor per (rank, stream), walking that stream's ops in order (streams are FIFO); an op waits
 *     for its deps (other streams of the rank, RECVs) on the rank's condition variable;
 *   - COMPUTE sleeps for the price (cost model) times the rank's compute factor (program.faults:
 *     faults.slow_gpus); degraded links (faults.links) are links of the SimGrid platform;
 *     faults.stalls are refused (EXIT_BADINPUT): a stalled actor would leave the others blocked;
 *   - SEND is one flow to the peer's GPU (eager: the RECV completes when it lands);
 *   - A2A: every member issues its own flows, DeepEP-style (one RDMA flow per destination node on its
 *     rail to that node's GPU of the rail, the NVLink fan-out from there, NVLink flows inside its
 *     node), all flows of all groups in flight sharing links for real (leaf uplinks included);
 *   - ring collectives: the NCCL ring of ring_flows.h (sim/plan/ring_split.h), chunk by chunk, a
 *     member forwarding step s once it has received step s-1.
 * Collective timing, two modes:
 *   SG_FULL_BARRIER (program.h's semantics, what sg_exec_full_run does): a collective starts when its
 *     last member arrives and ends for all members when its last flow completes;
 *   SG_FULL_EAGER (what DeepEP's one-sided RDMA writes allow): a member issues its flows as soon as it
 *     arrives and is done as soon as its own flows and every flow carrying its data have completed.
 *     Under a hot expert this lets the other ranks push into the hot rank's buffers while it still
 *     computes; the difference to the barrier semantics is a modelling question for program.h.
 * Every rank is simulated (no replica shortcut). Clusters of at most SG_FULL_MAX_GPUS GPUs.
 * Uses the process's SimGrid platform (rail_fabric_init with p->scn; fine after sg_comm_create on
 * the same scenario). `o->comm` is not used; `o->price`/`price_ctx` price compute as in step_exec.
 */
#ifndef MOESIM_SG_EXEC_FULL_H
#define MOESIM_SG_EXEC_FULL_H

#include "sim/exec/step_exec.h"

#define SG_FULL_MAX_GPUS 256

typedef enum { SG_FULL_BARRIER = 0, SG_FULL_EAGER } sg_full_mode;

int sg_exec_full_run(const program *p, const step_exec_opts *o, step_exec_result *r, moe_error *err);
int sg_exec_full_run_mode(const program *p, const step_exec_opts *o, sg_full_mode mode, step_exec_result *r,
                          moe_error *err);

#endif
