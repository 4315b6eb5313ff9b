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
 * Durations: compute from the cost model (costmodel.h) — through the plan level's per-kernel price
 * table (plan_compute.h), so both levels price a kernel alike — times the rank's compute factor
 * (program.faults: faults.slow_gpus and the GPUs' speed factors, sim/program/faults.h);
 * communication from a comm_model (comm.h), memoized per (pattern, group) for all-to-alls and per (group, kind) for ring collectives, so that an
 * expensive SimGrid pattern run happens once per distinct pattern. When the comm model takes
 * announcements (comm.h announce), the executor first announces every all-to-all and ring
 * collective its simulated ranks will ask for, so that the model can work them out beside the run
 * (the SimGrid model's helper process). Degraded links (faults.links) are
 * the comm model's: it prices transfers on the fabric with its faulty links. An
 * all-to-all hands the comm model its group's GPUs, the routing sample's byte matrix and the DeepEP
 * per-node RDMA payloads (a2a_pattern.node_bytes); combine-direction patterns go as their mirror
 * image (program.h "Routing").
 *
 * The replica shortcut (opts.shortcut): DP replicas run identical programs but for their routing
 * samples (program.h "Routing": replicas of one sample stream route alike) and meet only in the
 * data-parallel collectives, where a healthy replica arrives exactly when its twin of the same stream
 * does. So the executor simulates every replica that holds a fault (program.faults.replica_faulty) plus
 * one representative healthy replica per sample stream (program_sample_group), and mirrors each
 * representative's per-rank results onto the other healthy replicas of its stream; collectives count
 * only the simulated members. This is exact, not an approximation: tests/test_step.c compares it with
 * the run over the materialised program of every rank. Under cluster.path_selection "ecmp" replicas
 * are not alike (their flows hash onto other uplink ports) and every replica is simulated.
 *
 * Speed spread (cluster.gpu.speed_cv, program.faults.speed_factor): the GPUs of mirrored ranks have
 * speed factors of their own. A simulated rank runs with the slowest factor among the ranks it stands
 * for (itself, its mirrored replica twins and TP twins): the fold. It is a bound, not exact: the step is
 * monotone and positively homogeneous in the compute durations, so the folded step is at least the
 * step of every rank with its own factor (opts.shortcut = 0) and at most that times the slowest over
 * the fastest factor; the seed scenario's is 0.03% above it (tests/test_exec_exact.c checks the bound
 * on every shipped point, tests/test_gpu_speed.c by hand). Everything else the shortcuts do stays
 * exact; with cv = 0 the fold changes nothing.
 *
 * TP twins (opts.shortcut too): the ranks (d, s, e, t) of one tensor-parallel group differ only in t.
 * With every TP index's EP group routed by its replica's sample (program.h "Routing"), the twins run the
 * same op list with the same compute durations, and their EP groups, gradient rings and pipeline
 * sends are the same patterns moved by t rails, which a rail-symmetric comm model (comm.h) times
 * identically; their TP collectives are shared. By induction over the ops their timelines are equal,
 * so only t = 0 is simulated and mirrored onto t > 0. It applies when the comm model is rail-
 * symmetric, attention and expert TP are the same (layout.tp = etp, no context parallelism), each
 * twin sits t GPUs after its t = 0 rank in the same node, and the twins have the same faults (no
 * degraded link, equal slow-GPU factors and stalls; their speed spread is folded, above). Ties that
 * the order of simulation could decide (who arrived last, the worst all-to-all, the first timeout)
 * are broken by rank and group, so the mirrored results are exactly the per-rank executor's
 * (tests/test_exec_exact.c).
 *
 * Gangs: the simulated ranks of one replica and stage run one op list, and the executor advances
 * them in lockstep, op by op, each rank's times in its own lane: an op is issued on every lane once
 * every lane's deps are done, and each lane's span is what that rank alone would get (its deps' ends,
 * its stream, its duration, its arrival), because no op competes for more than its own rank's stream
 * and the ties the order of simulation could decide are broken by rank and group. The op list, the
 * streams and the queue are then walked once per gang instead of once per rank (the seed step: 1024
 * ranks in 16 gangs), and the lanes' spans sit side by side in memory. Lockstep can wait only where
 * ranks wait for other ranks (a RECV, a collective's members), and lane l of a gang exchanges with
 * lane l of another (the pipeline's sends, the data-parallel rings) or with its own gang (the all-to-
 * alls, a context-parallel ring), the same op indices on every lane, so the lanes are ready together.
 * A stalled rank breaks that symmetry: with stalls, and with resolved op lists or opts.per_rank, every
 * rank runs alone (tests/test_exec_exact.c compares the gangs with that on every shipped scenario).
 *
 * Time accounting per rank: step_accounting.h (compute, optimizer, exposed communication, bubble)
 * over the per-op timeline this executor records for every simulated rank, with the priced compute
 * durations as busy times.
 *
 * Lossless fabric (cluster.pfc, sim/exec/pfc_spread.h). The EP groups of one stage run each all-to-
 * all at about the same time (the comm model's concurrent copies: comm.h), but with independent
 * routing samples (program.h "Routing") their patterns differ, and a hot receiver of one group pauses
 * ports that the other groups' flows cross. With every EP group of the stage on the fabric at once,
 * each with its own sample, an all-to-all's pause is its flows' end under PFC less their end without
 * (pfc_a2a_pauses); it is added to the comm model's time for the group and counted in pfc_pause_s.
 * Worked out once per (pattern kind, the streams' draws); the groups a simulated group stands for
 * (replica shortcut, TP twins) fold into it as the longest of their pauses. Not fed: the pause a
 * group's pattern puts on its own flows (work conservation: identical groups, or streams that drew
 * alike, are left as without PFC), and every other transfer in flight at the time (pipeline sends,
 * data-parallel collectives), which the executor prices each on its own. --fidelity full (SimGrid's
 * max-min sharing) has no PFC: it gives the lossy, congestion-controlled time.
 *
 * Stalled ranks (program.faults.stop_at: faults.stalls, seed 000 §3.1 NCCL hang, semantics in
 * sim/program/faults.h): a stalled rank never starts its op stop_at nor any later one; everyone else
 * runs until blocked. When no
 * op can progress the executor describes the hang (step_hang below) from the blocked state alone —
 * who waits in which collective instance, who never arrived and what it did last — and returns
 * EXIT_RUNTIME with a message naming the culprit; the per-rank arrays (compute_s, end_s, ...) and the
 * traces are still filled with what ran, so that a trace can be written for simdiag.
 */
#ifndef MOESIM_STEP_EXEC_H
#define MOESIM_STEP_EXEC_H

#include "sim/exec/comm.h"
#include "sim/exec/step_accounting.h"
#include "sim/exec/step_host.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/plan_compute.h"
#include "sim/program/program.h"

/* Compute duration of a resolved op on `rank` without the slow-GPU factor (the executor applies it).
 * An op that resolution leaves as it is (program_op_rank_relative() false: a COMPUTE op outside the
 * routed experts) must be priced alike on every rank: the fast executor prices each such op of a
 * stage's list once. */
typedef double (*step_price_fn)(void *ctx, const program *p, int rank, const program_op *op);

/* Called every STEP_PROGRESS_OPS executed ops with the count so far (a line for the user). */
typedef void (*step_progress_fn)(void *ctx, long ops_executed);
#define STEP_PROGRESS_OPS (1L << 20)

/* The default pricing context: the cost model and the per-kernel price table the plan level sums
 * (plan_compute.h) — one pricing of every kernel for both levels. Built once per program. */
typedef struct {
    const costmodel *cm;            /* borrowed */
    kernel_price_table table;       /* one micro-batch of program.tokens_per_mb tokens */
    double slowdown;                /* overlap_compute_slowdown (plan_costs.h): DualPipe's comm SMs */
    double *expert_s;               /* memo: routed-expert forward seconds per (routing draw, EP index);
                                       < 0 = not priced yet (the tile/wave GEMM form is costly and the
                                       same draw is priced for many micro-batches and 3 kernels) */
    int expert_n;
} step_pricing;

/* Fill `pr` for program `p` priced with `cm` (which must outlive pr); free with step_pricing_free. */
void step_pricing_init(step_pricing *pr, const program *p, const costmodel *cm);
void step_pricing_free(step_pricing *pr);

/* The default pricing (ctx = a step_pricing*): every non-expert COMPUTE op is its kernel's entry in
 * the table for the op's layer kind, scaled by op.tokens / table.T (ops carry the table's T unless a
 * program says otherwise), plus the layer's recompute on the kernel compute_recompute_kernel names;
 * routed experts (K_EXPERT_*) by costmodel_expert_ffn_fwd_s on the token counts the routing sample
 * gives this rank's local experts; the optimizer (outside the table) as memory-bound on its bytes. */
double step_price_costmodel(void *pricing, const program *p, int rank, const program_op *op);

typedef struct {
    const comm_model *comm;
    step_price_fn price;            /* NULL: step_price_costmodel over a step_pricing the executor builds
                                       at the start of the run from price_ctx = a costmodel* */
    void *price_ctx;
    int shortcut;                   /* simulate faulty replicas + one representative (see above) */
    int per_rank;                   /* advance every rank on its own, not in gangs (see above): the
                                       reference the gangs are checked against */
    /* optional: resolved op lists of every rank (program_materialize); requires shortcut == 0 */
    program_op *const *materialized;
    /* ranks whose per-op timings are recorded (for trace.json); may be mirrored ranks */
    int n_trace_ranks;
    const int *trace_ranks;
    /* keep every simulated rank's timeline in the result (step_exec_result.timelines), so that trace
     * ranks can be picked after the run (step_exec_trace) from what the run found: the slowest rank,
     * the hang's culprit; the step is run once whether or not it is traced */
    int keep_timelines;
    step_progress_fn progress;      /* optional */
    void *progress_ctx;
    /* the host side (step_host.h): NULL = no host model (every op is issued in time, as before) */
    step_host_fn host;
    void *host_ctx;
    double host_sync_s;             /* a host sync's round trip (step_host.h sync_s) */
} step_exec_opts;

/* A hang: the collective instance the (first) culprit never arrived at. Ranks are global; mirrored
 * replicas count like their representative (their twin blocks exactly where it blocks). */
typedef struct {
    int found;                      /* 0: the step completed */
    int culprit;                    /* first rank that stopped by itself (stalled) */
    op_kind op;                     /* the collective it never arrived at */
    group_kind group_kind;
    int group, layer, mb, phase, op_index;   /* op_index: in the culprit's (stage) op list */
    int n_waiting, *waiting;        /* members blocked inside that instance */
    int n_missing, *missing;        /* members that never arrived (the culprit among them) */
    int *missing_last_op;           /* per missing rank: index of its last executed op (the one that
                                       ended last), -1 = none ran ("(not started)") */
    int blocked_elsewhere;          /* other unfinished ranks (waiting on other ops) */
} step_hang;

/* A collective that waited longer than faults.collective_timeout_s (NCCL's watchdog, PyTorch's
 * ProcessGroupNCCL timeout): the job fails when the first such wait passes the timeout. A rank
 * blocked in a collective of a hung step waits forever, unless it sends across the fabric to a stalled
 * member whose queue a lossless fabric discards (cluster.stall_discard_ms): its queue pair then fails
 * when its retries run out (link_qp_retry_exhausted_s), and the job with it, if that comes first. */
typedef struct {
    int found;
    int rank;                       /* the rank whose wait fired first */
    op_kind op;
    group_kind group_kind;
    int group, layer, mb;
    double arrived_s;               /* when it entered the collective */
    double waited_s;                /* its whole wait (INFINITY: the step hung) */
    double fired_s;                 /* arrived_s + detect_s: when the step fails */
    double detect_s;                /* how long after arriving it failed: the timeout, or the queue pair's
                                       retries running out (by_qp_retry) */
    int by_qp_retry;                /* bool: a queue pair sending into a discarded stalled receiver failed
                                       first (cluster.stall_discard_ms, link_qp_retry_exhausted_s) */
} step_timeout;

/* An all-to-all instance and how far apart its members arrived. */
typedef struct { int group, layer, mb, last_rank; double spread_s, start_s; } step_a2a_wait;

typedef struct {
    double step_time_s;
    int n_ranks;
    /* per rank (every rank; mirrored ranks copy their representative) */
    step_split *split;              /* step_accounting.h */
    double *a2a_s;                  /* time inside all-to-alls after the last member arrived (the
                                       transfers themselves; NULL from executors that do not count it) */
    double *pfc_pause_s;            /* the part of a2a_s that PFC pauses added ("Lossless fabric"
                                       above); NULL unless the fast executor ran with cluster.pfc and
                                       several routing sample streams */
    int *sim_rank;                  /* the simulated rank whose timeline this rank has */
    int n_simulated_ranks, n_simulated_replicas;
    int slowest_rank;               /* step_split_slowest_rank */
    /* all-to-all waits: per rank, how often it was the last to arrive at an all-to-all of its group;
     * and the all-to-all with the largest arrival spread (who everyone waited for) */
    int *a2a_last_count;
    step_a2a_wait worst_a2a;
    long n_ops_executed;
    /* per trace rank: n_ops timings; -1 = never started. RECV: from the matching SEND's start to
     * its arrival. A collective the rank waits in when the step hangs: start = arrival, end = -1. */
    int n_trace_ranks;
    int *trace_ranks;
    op_time **trace_times;
    /* opts.keep_timelines: per rank, NULL unless simulated, its per-op timeline with the trace's
     * conventions above (rank r's is timelines[sim_rank[r]]), op i at [i * timeline_stride[r]] (the
     * fast executor keeps a gang's lanes side by side; NULL: 1): step_exec_time; else NULL */
    op_time **timelines;
    size_t *timeline_stride;
    op_time *timeline_block;        /* non-NULL: timelines[] point into this one block (its bytes) */
    size_t timeline_block_bytes;
    step_hang hang;
    step_timeout timeout;
    double max_collective_wait_s;   /* the longest wait of a rank inside a collective that completed */
    /* with a host model (opts.host) and kept timelines: the stages' host arrays (step_host.h), so that
     * the host's spans can be worked out from a timeline (the trace's host track); NULL otherwise */
    stage_host *hosts;
    int n_host_stages;
} step_exec_result;

/* Op i's span on simulated rank `rank` in r->timelines. */
static inline const op_time *step_exec_time(const step_exec_result *r, int rank, int i) {
    return &r->timelines[rank][(size_t)i * (r->timeline_stride ? r->timeline_stride[rank] : 1)];
}

/* The pricing an executor runs with: o->price/o->price_ctx, or (o->price == NULL) step_price_costmodel
 * over *own, initialised here from the costmodel* in o->price_ctx. Returns the function; *ctx its
 * context. For executors (step_exec.c, exec_full.c). */
step_price_fn step_pricing_resolve(const step_exec_opts *o, const program *p, step_pricing *own, void **ctx);

/* The all-to-all pattern the executor prices for routing pattern `pattern` (program.patterns) on
 * EP group g: the group's GPUs, its byte matrix (a combine kind as its mirror image), the DeepEP
 * per-node payloads and the concurrent groups. Its arrays live in *buf: free with step_a2a_buf_free. */
typedef struct { int *gpus, *nodes; double *mirror; } step_a2a_buf;
/* How many groups run the collective of an n-rank group at once (its stage's groups of its kind). */
int step_coll_concurrent(const program *p, int n);

void step_a2a_pattern(const program *p, int pattern, int g, a2a_pattern *pat, step_a2a_buf *buf);
void step_a2a_buf_free(step_a2a_buf *b);

/* 0: the step completed. EXIT_RUNTIME with r->hang.found: the step hung (r is filled; see above);
 * EXIT_RUNTIME with r->timeout.found: a collective waited past faults.collective_timeout_s (r is
 * filled; with a hang too when the step hung and the timeout is set).
 * Other errors leave r empty. Free r with step_exec_result_free in every case. */
int step_exec_run(const program *p, const step_exec_opts *o, step_exec_result *r, moe_error *err);
void step_exec_result_free(step_exec_result *r);

/* Set r's trace ranks to `ranks` (replacing any) with copies of their kept timelines (r->timelines,
 * filled by an executor run with keep_timelines, or being filled by one); a rank out of range gets
 * no timings. For executors and for callers that pick trace ranks after the run. */
void step_exec_trace(const program *p, step_exec_result *r, int n, const int *ranks);

#endif
