/* faults.h — step-level fault injection: the scenario's in-step faults resolved once into the step
 * program (program.faults), so that every executor applies the same faults the same way.
 *
 *   faults.slow_gpus [{gpu, factor}]   compute_factor[rank]: every COMPUTE op of the rank on that GPU
 *                                      takes factor x its price (several faults on one GPU multiply;
 *                                      1 = healthy).
 *   faults.links [{gpu, kind, factor, loss_rate}] nic_factor[rank], nvlink_factor[rank]: the bandwidth
 *                                      of that GPU's NIC or NVLink, both directions, x factor x the
 *                                      goodput of a lossy link's retransmissions
 *                                      (faults_link_factor in sim/scenario/link_loss.h: the rule the fabric's links
 *                                      are built with, platforms/fabric_geometry.h).
 *   faults.stalls [{gpu, layer, micro_batch}]  stop_at[rank]: a stalled rank (seed 000 §3.1 NCCL hang)
 *                                      issues its ops in program order, like the CPU thread that
 *                                      launches kernels, and stops before the first op of the forward
 *                                      (phase F) of (layer, micro_batch): that op and every later one
 *                                      (by index, on every stream) never start; the ops before it run
 *                                      to completion (the earliest point when a GPU has several).
 *   replica_faulty[d]                  replica d holds a faulty GPU, or its GPUs sit in more than
 *                                      one pod (cluster.pod_nodes: some of its traffic crosses the
 *                                      core): the fast executor's replica shortcut simulates it
 *                                      instead of mirroring a healthy twin.
 *
 * program_build (sim/program/program.c) resolves them, with every check of a fault against the program
 * (a stall at a forward its rank never runs: EXIT_BADINPUT naming faults.stalls[i].layer, or
 * .micro_batch when the rank holds the layer).
 *
 * Not a fault but resolved here beside them, the GPUs' persistent speed spread:
 *   cluster.gpu.speed_cv c             speed_factor[rank]: every COMPUTE op of the rank takes this
 *                                      factor x its price, on top of compute_factor. Each GPU's factor
 *                                      is drawn once from the scenario seed, lognormal with median 1
 *                                      (the cost model prices the median GPU: half the GPUs are faster)
 *                                      and coefficient of variation c: exp(sigma Z), Z ~ N(0, 1),
 *                                      sigma^2 = ln(1 + c^2) (gsl_ran_gaussian, GPU by GPU in id order
 *                                      from one gsl_rng_mt19937). A synchronous group waits for its
 *                                      slowest member, so the step pays about 1 + c E[max of N normals]
 *                                      for N GPUs in lockstep.
 *                                      The fast and full executors apply it; the live executor does not
 *                                      (its GPUs have their own speeds). The fast executor's shortcuts
 *                                      fold it (step_exec.h "Speed spread").
 *
 * What each executor does with them (or refuses, exit 2 naming the field):
 *   fast (sim/exec/step_exec.h)         compute factor; stalls (the hang is described); links through
 *                                       its comm model, which prices transfers on the faulty fabric.
 *   full (sim/simgrid/exec_full.h)      compute factor; links in the SimGrid platform; stalls refused
 *                                       (a stalled actor would leave the others blocked in SimGrid).
 *   live (sim/live/live_exec.h)         compute factor (a slow GPU holds its compute stream factor x as
 *                                       long as the kernel took); stalls; links refused (a live run
 *                                       cannot degrade a real NIC or NVLink).
 */
#ifndef MOESIM_FAULTS_H
#define MOESIM_FAULTS_H

#include <limits.h>
#include <stdint.h>

#include "sim/base/errors.h"
#include "sim/scenario/scenario.h"

#define STEP_NO_STALL INT_MAX      /* stop_at of a rank that does not stall */

typedef struct step_faults {
    int n_ranks, n_replicas;
    double *compute_factor;        /* per rank */
    double *speed_factor;          /* per rank: its GPU's persistent speed factor (1: cv = 0) */
    double speed_min, speed_max;   /* over the ranks */
    double *nic_factor, *nvlink_factor;  /* per rank (its GPU's links) */
    int *stop_at;                  /* per rank: first op index never issued, or STEP_NO_STALL */
    unsigned char *replica_faulty; /* per replica */
    int n_slow_ranks, n_link_ranks, n_stalled_ranks;  /* ranks with a fault of each kind */
} step_faults;

/* Every GPU's persistent speed factor (cluster.gpu.speed_cv above): speed[gpu] for GPUs 0 .. n-1,
 * lognormal with median 1 and coefficient of variation cv (all 1 when cv <= 0), drawn in id order from
 * one gsl_rng_mt19937 seeded by the scenario seed (program.c, with the faults' resolution). */
void gpu_speed_factors(uint64_t seed, double cv, int n, double *speed);

#endif
