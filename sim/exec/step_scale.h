/* step_scale.h — what the step pays for its scale, from the program and the executor's timelines: one
 * entry of the step's breakdown per mechanism (sim/simgrid/step_sim.c), so that a user sees each one.
 *
 *   "replica_routing"  routing.group_samples (sim/program/program.h "Routing"):
 *       {"group_samples": "independent" | "shared", "sample_streams",
 *        "slowest_ep_group": {"stage", "replica", "a2a_s", "mean_a2a_s"}: at the pipeline stage where
 *            it is largest, the EP group (TP index 0) whose all-to-alls took longest against the mean
 *            over the replicas' groups of that stage (the transfers alone, from the last arrival: what
 *            the routing sample sets; equal when the replicas share their samples)}
 *   "replica_wait"  the replicas meet in the data-parallel collectives: per replica, the end of the
 *       last compute op before the optimizer on its slowest rank ("ready"), {"ready_s_max",
 *       "ready_s_mean", "slowest_replica", "simulated_replicas"}: max - mean is what the step waits for
 *       its slowest replica (routing samples and GPU speeds)
 *   "gpu_speed"  cluster.gpu.speed_cv (sim/program/faults.h):
 *       {"cv", "gpus", "fastest_factor", "slowest_factor", "expected_slowest_factor": the closed form
 *        exp(sigma E[max of N standard normals]) for the step's N GPUs, "folded_ranks": ranks whose
 *        factor the simulated rank they are mirrored onto took as its own when slower (step_exec.h
 *        "Speed spread": 0 = every GPU ran with its own factor)}
 *   "grad_reduce"  layout.overlap_grad_reduce (sim/program/program.c, "data-parallel gradient buckets"):
 *       {"overlap", "bucket_collectives": the gradient collectives of the step's stage lists under the
 *        backward (per stage, summed), "first_stage_buckets": stage 0's, "exposed_s_max",
 *        "exposed_s_mean": over the ranks, the time from the end of the last compute op before the
 *        optimizer to the optimizer's start (the gradient collectives not hidden under the backward)}
 *   "dp_collectives"  NCCL at scale (sim/plan/ring_split.h): per data-parallel group kind, the step's
 *       largest gradient or parameter collective: [{"group": "DP_DENSE" | "DP_EXPERT", "op", "ranks",
 *        "nodes", "bytes", "algorithm": "ring" | "tree", "time_s", "nccl_latency_s": the latency NCCL's
 *        tuning model charges it, "busbw_GBps"}]
 * Timelines: the executor's, kept (step_exec_opts.keep_timelines); without them the entries that need
 * them are left out. */
#ifndef MOESIM_STEP_SCALE_H
#define MOESIM_STEP_SCALE_H

#include "sim/exec/step_exec.h"

struct cJSON;

/* Adds the entries above to `breakdown`; `comm` (may be NULL: no "dp_collectives") times the
 * collectives, on `fabric` (the cluster as the comm model runs it: its links' achieved rates). */
void step_scale_report(const program *p, const step_exec_result *r, const comm_model *comm, const cluster_cfg *fabric,
                       struct cJSON *breakdown);

/* E[max of n independent standard normals] (n >= 1): the integral of x n phi(x) Phi(x)^(n-1) over the
 * real line, by GSL's adaptive quadrature (gsl_integration_qagi); 0 for n = 1. */
double expected_max_std_normal(int n);

#endif
