/* step_host.h — the host side of a step program: each rank's CPU thread issuing its ops.
 *
 * A training framework drives the GPU from one CPU thread per rank (Python, PyTorch's dispatcher and
 * autograd, the CUDA launches). It issues the rank's ops in program order — the order of the rank's
 * op list (program.h), across all its streams — and never waits for the GPU, except at a host
 * synchronization: a device-to-host read the next ops need (the dropless MoE router's tokens per
 * expert, which size the permutation and the grouped GEMMs), after which the thread resumes only once
 * the GPU has finished that op. Every executor applies these semantics on top of program.h's:
 *
 *   issue_s(i)   host time to issue op i: its framework calls and its kernel launches (host_costs.h
 *                prices them; an op inside a captured CUDA graph costs nothing here, the graph's one
 *                launch is charged to the first op of the region)
 *   kernels(i)   GPU kernels op i runs (>= 1 for a compute op)
 *   sync(i)      HOST_SYNC_OP: the host waits for op i's end before it issues op i + 1 (a device-to-
 *                host read of what op i computed); HOST_SYNC_DEVICE: it waits for the end of every op
 *                issued so far, op i included (torch.cuda.synchronize())
 *
 * Host timeline of one rank (seconds from the step start). With sp(i) the last sync op before i
 * (none: the thread starts at 0) and H(i) = issue_s(0) + ... + issue_s(i):
 *   host_end(i)  = resume(sp(i)) + H(i) - H(sp(i))          (resume(none) = 0, H(none) = 0)
 *   resume(s)    = max(host_end(s), gpu_end(s)) + sync_s      (the read's round trip; a device sync:
 *                  the latest end of ops 0..s instead of gpu_end(s))
 *   host_start(i) = host_end(i) - issue_s(i)
 * A compute op of D seconds over n kernels, ready on the GPU at g (its deps and its stream), issued
 * from host_start(i) = s to host_end(i) = e, its kernels launched evenly (kernel k at s + (k+1) h,
 * h = issue_s / n, each d = D / n long on the GPU):
 *   start = max(g, s + h),   end = max(start + D, e + d)
 * (kernel k ends at max over j <= k of (launch_j + (k - j + 1) d): linear in j, so the maximum over
 * all kernels is reached by the first or the last launch). end - start - D is time the op's kernels
 * waited on the host inside its span ("stretch"); start - g the time the ready op waited to be issued.
 * A collective, an all-to-all or a SEND arrives (starts) at max(g, host_end(i)): its launch is its
 * last issued kernel. A RECV needs nothing from the host. Ops of other streams issued after a sync
 * wait for it like a dependency: no op of the list is issued before the sync before it resumed.
 *
 * What this leaves out: the launch queue's depth (a thread that runs more than ~1,000 kernels ahead
 * blocks in cudaLaunchKernel; the syncs of MoE layers keep it far shorter), and host work beside
 * the step (data loading, logging), which the frameworks measured overlap. */
#ifndef MOESIM_STEP_HOST_H
#define MOESIM_STEP_HOST_H

#include "sim/exec/step_accounting.h"
#include "sim/plan/host_costs.h"
#include "sim/program/program.h"

enum { HOST_SYNC_NONE = 0, HOST_SYNC_OP, HOST_SYNC_DEVICE };

/* The host side of one op of a stage's list (rank-relative: the same for every rank of the stage). */
typedef struct {
    double issue_s;
    double kernels;      /* >= 1 for compute ops; 1 otherwise */
    int sync;            /* HOST_SYNC_* */
} host_op;

/* Describes op i of stage `stage`'s list (op = &p->stage_ops[stage][i]). */
typedef host_op (*step_host_fn)(void *ctx, const program *p, int stage, int i, const program_op *op);

/* One stage's host arrays, built once per run. */
typedef struct {
    int n_ops, n_sync;
    double *H;           /* [n_ops] prefix sums of issue_s */
    double *issue_s;     /* [n_ops] */
    double *kernels;     /* [n_ops] */
    int *sync_prev;      /* [n_ops] the last sync op before i, -1 = none */
    int *sync_ord;       /* [n_ops] op i's ordinal among the stage's syncs, -1 = not a sync */
    unsigned char *sync_kind;   /* [n_ops] HOST_SYNC_* */
    int *dev_prev;       /* [n_ops] the last device sync before i, -1 = none (a device sync's window of
                            ops to wait for starts after it) */
    double sync_s;       /* the host's round trip of a sync (device-to-host read + wake-up) */
} stage_host;

/* Build the host arrays of every stage of p (n = p->pp entries). */
stage_host *step_host_build(const program *p, step_host_fn fn, void *ctx, double sync_s);
void step_host_free(stage_host *h, int n);

/* host_end(i) given resume(sp(i)) (0 when sp(i) = -1). */
static inline double step_host_end(const stage_host *h, int i, double resume_prev) {
    int sp = h->sync_prev[i];
    return resume_prev + h->H[i] - (sp >= 0 ? h->H[sp] : 0.0);
}

/* The span of a compute op of busy D on the GPU, ready at g, issued [host_end - issue_s, host_end]:
 * *start and *end as above; returns the stretch (end - start - D, >= 0). */
static inline double step_host_compute_span(double g, double host_end, double issue_s, double kernels, double D,
                                            double *start, double *end) {
    double n = kernels >= 1 ? kernels : 1, s = host_end - issue_s + issue_s / n;
    double t0 = g > s ? g : s, e1 = t0 + D, e2 = host_end + D / n;
    *start = t0;
    *end = e1 > e2 ? e1 : e2;
    return *end - e1;
}

/* resume(s) for a sync op s that ended on the GPU at gpu_end. */
static inline double step_host_resume(const stage_host *h, double host_end, double gpu_end) {
    return (host_end > gpu_end ? host_end : gpu_end) + h->sync_s;
}

/* The host spans of one rank's ops from its finished timeline (op i at t[i * stride]; a sync that never
 * resumed stops the walk): host_start[i], host_end[i] (-1 for ops the host never issued). For traces
 * and tests. */
void step_host_spans(const stage_host *h, const op_time *t, size_t stride, double *host_start, double *host_end);

/* ---- the host side priced by sim/plan/host_costs.h (the default) ------------------------------------ */
typedef struct {
    host_price_table tab;
} step_host_pricing;

/* Build the host table of program p's scenario; returns 0 when the scenario has no host side
 * (host.framework "none"): then run without one. */
int step_host_pricing_init(step_host_pricing *hp, const program *p);
/* step_host_fn over a step_host_pricing (ctx). */
host_op step_host_costmodel(void *ctx, const program *p, int stage, int i, const program_op *op);

#endif
