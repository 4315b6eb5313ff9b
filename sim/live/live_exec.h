/* live_exec.h — the live executor: one rank runs its part of the step program (program.h) for real,
 * through a backend (real kernels + a real communication library), and records per-op timings in the
 * simulator's trace format (DESIGN.md "one step program, several executors").
 *
 * This file is backend-independent core code: it links neither MPI nor CUDA nor the kernels. A
 * backend is a table of function pointers in the style of nccl-tests (compute, a2a, send, recv,
 * collective, test, now_s, barrier, idle); sim/live/backend_mpi.c (CPU references + Open MPI) and
 * sim/live/backend_nccl.cu (CUDA kernels + NCCL) provide them, tools/simlive.c drives them.
 *
 * ---- Execution semantics (program.h, implemented exactly) ----------------------------------------
 * The executor walks the materialised op list of its rank (program_materialize) and keeps one FIFO
 * cursor per stream (compute, comm, p2p). The head op of a stream starts when the previous op of that
 * stream has finished and every op in its deps has finished. COMPUTE runs to completion inside
 * backend.compute (a CPU thread, or a GPU stream the backend synchronises). Communication is started
 * NONBLOCKING (backend.a2a / send / collective) and polled with backend.test, so a rank never blocks
 * inside a collective while another stream of its own could progress: an overlapped DualPipe pair
 * keeps computing while its all-to-all is in flight, exactly as the program describes. Because a
 * kernel blocks the rank while it runs, every communication op that is ready is posted before the
 * next kernel starts (communication streams first, one kernel per pass), so a SEND leaves when its
 * producer ends, not after the kernels queued behind it. RECV occupies
 * no stream: with backend.prepost_recv it is posted as soon as its deps are done (at step start for
 * every pipeline RECV), which is what makes SEND eager (program.h: "SEND never waits for the
 * receiver"). Collectives of one group are started in list order on every member (the comm stream is
 * FIFO), so the k-th collective op of group g is the same instance on every member, as program.h
 * requires of every executor.
 *
 * ---- Timings ---------------------------------------------------------------------------------------
 * Times are seconds since the step-start barrier (backend.now_s). COMPUTE: start/end of the kernel.
 * Communication: start = this rank's arrival (the op was ready and posted), end = the first test that
 * saw it complete. So a collective's measured span includes waiting for late members, as an NCCL
 * kernel's does; the simulator's span starts when the last member arrives (compare the last arrival).
 * The per-rank breakdown (compute, optimizer, exposed communication, bubble, overhead) is the one
 * step accounting (sim/exec/step_accounting.h) over these timings, as for the simulators; the host-
 * side time between an op's readiness and its start (launching, polling) is its overhead_s.
 *
 * ---- Real routing vs. the program's byte matrices ---------------------------------------------------
 * The program's all-to-all matrices come from the simulator's sampled routing (program.patterns).
 * The live run does not replay them: the program gives the op ORDER, the group, the peers and the
 * pattern id; the COUNTS come from the live gating kernel's routing of the live tokens (the dispatch
 * exchanges per-(destination, local expert) row counts first, as DeepEP's notify_dispatch does). Both
 * are recorded: the trace keeps the program's `bytes` in every event's args and adds `live_bytes`
 * (what this rank actually sent to other ranks) to all-to-all events and `live_tokens` (rows
 * computed) to expert GEMMs, so simdiag can show predicted vs. measured volume next to the times.
 *
 * ---- Watchdog (seed 000 §3.1: "all ranks but one wait inside a collective; the odd one is the
 * culprit") -------------------------------------------------------------------------------------------
 * While a rank cannot progress it calls backend.idle (which services watchdog traffic and yields the
 * CPU). When it has made no progress for opts.watchdog_s, or idle reports that another rank raised the
 * alarm, live_exec_step stops and returns LIVE_HUNG with the rank's live_rank_state: which op it is
 * in, how many collectives it has started per group kind, how many SENDs it has issued. The caller
 * exchanges these states (sim/live/backend_mpi.c, on a separate communicator, point to point with a
 * deadline, so a dead rank cannot hang the watchdog), and live_hang_analyze() turns them into wait-for
 * edges — a member of a collective instance that has not started that instance, the sender of a RECV
 * that has not issued the SEND, a rank that did not answer — and names the culprits: ranks that others
 * (transitively) wait on and that wait on nobody themselves.
 *
 * Step-level faults (program.faults, sim/program/faults.h): a stalled rank (faults.stalls) never
 * starts its op stop_at (the first forward op of (layer, micro_batch)) nor any later op; ops before it
 * still run to completion. It then sits in backend.idle (it still answers the watchdog, like a process
 * whose launch thread hangs while its watchdog thread lives), or with opts.hard_stall it sleeps
 * without answering (a dead process). A slow GPU (faults.slow_gpus, factor k) holds its compute stream
 * after every kernel until k x the kernel's measured time has passed, as a GPU running k times slower
 * would. Degraded links (faults.links) cannot be made on real hardware: live_check_faults refuses them,
 * and faults.collective_timeout_s (simlive has its own watchdog, --watchdog-s).
 */
#ifndef MOESIM_LIVE_EXEC_H
#define MOESIM_LIVE_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "sim/base/errors.h"
#include "sim/program/program.h"
#include "sim/exec/step_exec.h"

struct cJSON;

/* ---- backend ------------------------------------------------------------------------------------ */
/* Every function returns 0 on success or non-zero after filling err. `measured` (never NULL) receives
 * what the op really did: bytes this rank sent to OTHER ranks (a2a, send, collective), rows computed
 * (K_EXPERT_*); leave it untouched (NAN) when there is nothing to report. */
typedef struct live_backend {
    const char *name;          /* "mpi" or "nccl" */
    void *ctx;
    int prepost_recv;          /* 1: post every RECV as soon as its deps are done (eager SENDs) */
    double (*now_s)(void *ctx);
    /* Step-boundary barrier. Returns 0, LIVE_HUNG when another rank raised the watchdog alarm while
     * waiting (the caller then reports), or an error. */
    int (*barrier)(void *ctx, moe_error *err);
    int (*compute)(void *ctx, int i, const program_op *op, double *measured, moe_error *err);
    int (*a2a)(void *ctx, int i, const program_op *op, double *measured, moe_error *err);
    int (*send)(void *ctx, int i, const program_op *op, double *measured, moe_error *err);
    int (*recv)(void *ctx, int i, const program_op *op, double *measured, moe_error *err);
    int (*collective)(void *ctx, int i, const program_op *op, double *measured, moe_error *err);
    /* 1 = op i has finished, 0 = still in flight, < 0 = error (err filled) */
    int (*test)(void *ctx, int i, const program_op *op, moe_error *err);
    /* The rank cannot progress: service watchdog traffic, yield the CPU briefly.
     * Returns 1 when another rank has raised the watchdog alarm. */
    int (*idle)(void *ctx);
    /* Optional: keep this rank's compute stream busy until now_s() reaches until_s (a slow GPU's
     * extra time). NULL: the executor calls idle until then. */
    void (*hold)(void *ctx, double until_s);
} live_backend;

enum { LIVE_HUNG = 3 };        /* distinct from EXIT_* codes; never an exit code itself */

/* ---- rank state (what the watchdog exchanges; plain data, sent as bytes) ------------------------- */
typedef enum {
    LIVE_RUNNING = 0,          /* still had work it could do (alarm raised elsewhere) */
    LIVE_BLOCKED,              /* waiting in communication */
    LIVE_STALLED,              /* reached its injected stall point (faults.stalls) */
    LIVE_FINISHED,             /* all ops done; waiting at the end-of-step barrier */
    LIVE_NO_ANSWER             /* filled in by the collector for a rank that did not answer */
} live_activity;

typedef struct {
    int32_t rank;
    int32_t activity;          /* live_activity */
    int32_t step;              /* step index (0-based) */
    int32_t n_ops, n_done;
    int32_t next_op;           /* lowest op index not yet started (n_ops when all started) */
    int32_t stop_at;           /* injected stall point, or -1 */
    int32_t last_op;           /* the op that ended last, or -1 */
    int32_t wait_coll_op;      /* collective / all-to-all in flight on the comm stream, or -1 */
    int32_t wait_coll_instance;/* its instance number in its group (0-based) */
    int32_t wait_recv_op;      /* lowest posted RECV not yet arrived that a startable op needs, or -1 */
    int32_t coll_started[GROUP_NKINDS]; /* collectives started so far, per group kind */
    int32_t sends_started;     /* SEND ops started (the P2P stream is FIFO: the first n SENDs) */
    double blocked_s;          /* seconds since the rank last made progress */
} live_rank_state;

/* ---- one step of one rank ------------------------------------------------------------------------ */
typedef struct {
    double watchdog_s;         /* no progress for this long -> LIVE_HUNG; <= 0: no watchdog */
    int hard_stall;            /* the stalled rank sleeps without answering (until it is killed) */
    int step;                  /* step index, for the state */
} live_exec_opts;

typedef struct {
    int n_ops;
    op_time *times;            /* per op; start/end -1 when it never started / did not finish */
    double *measured;          /* per op; NAN = nothing measured */
    double end_s;              /* end of the rank's last op */
    live_rank_state state;     /* at the end, or where it stopped */
} live_rank_run;

int live_rank_run_init(live_rank_run *r, int n_ops);
void live_rank_run_free(live_rank_run *r);

/* Run one step of `rank` (ops: its materialised list), with its faults (program.faults). 0 = completed; LIVE_HUNG = the watchdog fired
 * here or elsewhere (r->state says where this rank is); EXIT_RUNTIME = backend error (err). */
int live_exec_step(const program *p, int rank, const program_op *ops, int n_ops,
                   const live_backend *b, const live_exec_opts *o, live_rank_run *r, moe_error *err);

/* The faults a live run cannot inject: EXIT_BADINPUT naming faults.links when any link is degraded
 * (stalls and slow GPUs are run as described above), faults.collective_timeout_s, and the routing
 * models only the simulator has (routing.steps / routing.drift, routing.redundant_experts). */
int live_check_faults(const program *p, moe_error *err);

/* ---- hang analysis ------------------------------------------------------------------------------ */
typedef struct {
    int found;
    int n_culprits;
    int *culprits;             /* ranks waited on (transitively) that wait on nobody, ascending */
    int culprit;               /* the first of them (-1: circular wait without a root) */
    /* the collective instance the culprit never arrived at, as seen by a member waiting in it */
    int coll_rank;             /* a waiting member (-1: nobody waits in a collective for the culprit) */
    int coll_op;               /* op index in that member's list */
    int coll_group, coll_instance;
    int n_waiting, *waiting;   /* members of that group waiting in that instance */
    int n_missing, *missing;   /* members that have not started it */
    int n_blocked_in_coll, n_blocked_on_recv, n_no_answer;
} live_hang;

/* states: n_ranks entries indexed by rank; a rank that did not answer has activity LIVE_NO_ANSWER. */
int live_hang_analyze(const program *p, const live_rank_state *states, live_hang *h);
void live_hang_free(live_hang *h);
/* One line "where is rank r" (needs every state to name missing members / unsent SENDs). */
void live_rank_where(const program *p, const live_rank_state *states, int rank, char *buf, size_t len);
/* The full report: one line per rank, then the verdict. Caller frees. */
char *live_hang_report(const program *p, const live_rank_state *states, const live_hang *h,
                       double watchdog_s);
/* {"culprit", "culprits", "collective": {...}, "ranks": [{"rank", "activity", "where"}...]} */
struct cJSON *live_hang_json(const program *p, const live_rank_state *states, const live_hang *h,
                             double watchdog_s);

/* ---- outputs ---------------------------------------------------------------------------------- */
/* trace.json in the simulator's format (trace.h's step_trace_build, source "live") from measured
 * timings of the ranks `trace_ranks` (times[k] = op times of trace_ranks[k], measured[k] their
 * measured volumes) and the step accounting of ALL ranks (splits: n_ranks entries). Adds otherData.backend and, per event, args.op (op index) and live_bytes /
 * live_tokens. Caller frees the document. */
struct cJSON *live_trace_build(const program *p, const char *backend, int n_trace_ranks,
                               const int *trace_ranks, op_time *const *times,
                               double *const *measured, double step_time_s, const step_split *splits);

/* Measured time per op class ("a2a_dispatch", "expert_fwd", ...): sum and count over the given ranks,
 * as {"name": {"count", "total_s", "mean_s"}}; the names are the simulator's event names. */
struct cJSON *live_op_class_times(const program *p, int n_ranks, const int *ranks,
                                  op_time *const *times);

#endif
