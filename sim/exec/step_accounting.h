/* step_accounting.h — the one step accounting: where each rank's time in one step went (compute,
 * optimizer, exposed communication, pipeline bubble, host overhead), computed from the rank's per-op
 * timeline by the same rules for every executor — the fast executor (step_exec.h), the full-fidelity
 * SimGrid executor (sim/simgrid/exec_full.h) and the live executor (sim/live/live_exec.h) — and its
 * summaries per pipeline stage and per step.
 *
 * ---- The rules (one rank) -----------------------------------------------------------------------
 * A rank's COMPUTE ops run on its compute stream, a FIFO, in list order (program.h). Walking the
 * COMPUTE ops that ran:
 *   compute_s       busy time of every COMPUTE op but the optimizer
 *   optimizer_s     busy time of the optimizer op
 *   The idle interval of the compute stream before a COMPUTE op — from the end of the previous
 *   COMPUTE op (the step start for the first) to this op's start — is charged to the op's binding
 *   dependency, the dep that ended last (the first listed on ties):
 *     until that dependency ended:  a RECV -> bubble_s (waiting for a pipeline neighbour);
 *                                   a collective, an all-to-all or a SEND -> exposed_comm_s;
 *     after it ended (the op was ready but had not started): overhead_s — host-side launch and
 *     polling time of the live executor; exactly 0 in simulation, where an op starts when it is ready.
 *   exposed_comm_s  also the communication tail: from the end of the last COMPUTE op to the rank's end
 *   bubble_s        also the idle time from the rank's end to the end of the step
 * The rank's end is the end of its last op that occupies a stream (a RECV occupies none: the op that
 * waits for it ends later). So compute + optimizer + exposed + bubble + overhead is the step time for
 * every rank, up to rounding. A step that did not complete (a hang) is accounted as far as each rank
 * got: ops that never started or never ended are skipped, and there is no tail and no idle time to
 * the end of the step.
 *
 * Busy time is end - start of the op, unless the executor passes its exact per-op busy times: the
 * simulators know each op's priced duration, of which end - start is a rounded image, and
 * summing the priced durations keeps ties between identical ranks exact.
 */
#ifndef MOESIM_STEP_ACCOUNTING_H
#define MOESIM_STEP_ACCOUNTING_H

#include "sim/program/program.h"

#include <stddef.h>

struct cJSON;

/* One op's span in seconds from the step start; -1 = never started / never ended. */
typedef struct { double start_s, end_s; } op_time;

/* One rank's split of its step (seconds). */
typedef struct {
    double compute_s, optimizer_s, exposed_comm_s, bubble_s, overhead_s;
    double end_s;                  /* end of the rank's last op (see above) */
} step_split;

/* Account one rank: its op list (a resolved list or its stage's list: only kind, kernel and deps are
 * read), one op_time per op, busy_s (per op, or NULL: end - start), stretch_s (per op: its kernels'
 * waits on the host inside its span, step_host.h; NULL: none) and the step time (< 0: the step did
 * not complete). */
void step_split_rank(const program_op *ops, int n_ops, const op_time *t, const double *busy_s,
                     const double *stretch_s, double step_time_s, step_split *out);

/* The same rules as the ops run, for an executor that knows each COMPUTE op's busy time when it ends
 * and need not keep them: step_split_begin, then step_split_add for each COMPUTE op that ran, in list
 * order (the order of the rank's compute stream), once its deps' times and its own are final (stretch_s:
 * the time inside the op's span its kernels waited on the host, step_host.h; 0 without a host model), then
 * step_split_finish with the rank's end (its last stream op's end, 0 when none ran). Op k's time is
 * t[k * stride] (the fast executor interleaves the ranks of a stage: step_exec.h).
 * step_split_rank is this walk over a finished timeline. */
typedef struct {
    double free_t, last_compute_end;
    step_split s;
} step_split_acc;
void step_split_begin(step_split_acc *a);
void step_split_add(step_split_acc *a, const program_op *ops, const op_time *t, size_t stride, int i, double busy_s,
                    double stretch_s);
void step_split_finish(const step_split_acc *a, double end_s, double step_time_s, step_split *out);

/* The same for global rank `rank` of program p, over its stage's op list. */
void step_split_program_rank(const program *p, int rank, const op_time *t, const double *busy_s,
                             double step_time_s, step_split *out);

/* Means over n ranks of every field (end_s: the mean end). */
void step_split_mean(const step_split *ranks, int n, step_split *mean);

/* The rank with the largest busy time (compute + optimizer); the lowest rank among those within a
 * relative 1e-12 of it. */
int step_split_slowest_rank(const step_split *ranks, int n);

/* Per pipeline stage s of program p (ranks indexed by global rank): [{"stage", "compute_s_mean",
 * "compute_s_max", "exposed_comm_s_mean", "exposed_comm_s_max", "bubble_s_mean", "bubble_s_max"}],
 * compute including the optimizer. */
struct cJSON *step_split_stages_json(const program *p, const step_split *ranks);

#endif
