/* step_exec.h — the fast executor of a step program (core; no SimGrid).
 *
 * An op-level simulation of every rank's program with the semantics of program.h: streams are FIFO
 * resources, deps order ops within a rank, SEND/RECV match by tag, collectives and all-to-alls start
 * when the last member arrives and last the comm model's time for their pattern. No op competes for
 * anything but its stream, so the executor does not need a global event queue: it propagates
 * timestamps through the dependency graph (a rank advances as far as its deps, its streams and its
 * collectives allow; a completed collective wakes its members). The result is the schedule an event-
 * driven simulation would produce, computed in O(ops).
 *
 * Durations: compute from the cost model (costmodel.h) times the slow-GPU factor of the rank's GPU
 * (faults.slow_gpus); communication from a comm_model (comm.h), memoized per (pattern, group) for
 * all-to-alls and per (group, kind) for ring collectives, so that an expensive SimGrid pattern run
 * happens once per distinct pattern. Link faults reach the comm model through the scenario.
 *
 * The replica shortcut (opts.shortcut): DP replicas run identical programs (routing draws do not
 * depend on the replica, program.h) and meet only in the gradient collectives of the step tail, where
 * a healthy replica arrives exactly when its twin does. So the executor simulates every replica that
 * holds a fault (a slow GPU or a degraded link) plus one representative healthy replica, and mirrors
 * the representative's per-rank results onto the other healthy replicas; collectives count only the
 * simulated members. This is exact, not an approximation: tests/test_step.c compares it with the run
 * over the materialised program of every rank.
 *
 * Time accounting per rank, which partitions [0, step_time] exactly:
 *   compute_s       busy time of the compute stream (without the optimizer)
 *   optimizer_s     the optimizer step
 *   exposed_comm_s  compute-stream idle time whose binding dependency was a collective/all-to-all
 *                   (including waiting in it for a late member), plus the comm tail after the last
 *                   compute op
 *   bubble_s        compute-stream idle time waiting for a pipeline RECV, plus idle time after the
 *                   rank's last op until the step ends
 */
#ifndef MOESIM_STEP_EXEC_H
#define MOESIM_STEP_EXEC_H

#include "sim/comm.h"
#include "sim/costmodel.h"
#include "sim/program.h"

/* Compute duration of a resolved op on `rank` without the slow-GPU factor (the executor applies it). */
typedef double (*step_price_fn)(void *ctx, const program *p, int rank, const program_op *op);

/* The default pricing: the cost model's GEMM / grouped-GEMM / attention / memory-bound forms. */
double step_price_costmodel(void *costmodel_ptr, const program *p, int rank, const program_op *op);

typedef struct {
    const comm_model *comm;
    step_price_fn price;            /* NULL: step_price_costmodel with price_ctx = a costmodel* */
    void *price_ctx;
    int shortcut;                   /* simulate faulty replicas + one representative (see above) */
    /* optional: resolved op lists of every rank (program_materialize); requires shortcut == 0 */
    program_op *const *materialized;
    /* ranks whose per-op timings are recorded (for trace.json); may be mirrored ranks */
    int n_trace_ranks;
    const int *trace_ranks;
} step_exec_opts;

typedef struct { double start_s, end_s; } op_time;

typedef struct {
    double step_time_s;
    int n_ranks;
    /* per rank (every rank; mirrored ranks copy their representative) */
    double *compute_s, *exposed_comm_s, *bubble_s, *optimizer_s, *end_s;
    int *sim_rank;                  /* the simulated rank whose timeline this rank has */
    int n_simulated_ranks, n_simulated_replicas;
    int slowest_rank;               /* largest compute + optimizer busy time (lowest rank on ties) */
    /* all-to-all waits: per rank, how often it was the last to arrive at an all-to-all of its group;
     * and the all-to-all with the largest arrival spread (who everyone waited for) */
    int *a2a_last_count;
    struct { int group, layer, mb, last_rank; double spread_s, start_s; } worst_a2a;
    long n_ops_executed;
    /* per trace rank: n_ops timings (start == end == -1 for RECV ops) */
    int n_trace_ranks;
    int *trace_ranks;
    op_time **trace_times;
} step_exec_result;

int step_exec_run(const program *p, const step_exec_opts *o, step_exec_result *r, moe_error *err);
void step_exec_result_free(step_exec_result *r);

#endif
