/* trainrun.c — the run level: a discrete-event simulation of a whole training run, Monte Carlo
 * over seeded trials, and a search for the best checkpoint interval.
 *
 * ---- What is simulated (the semantics every test relies on) ------------------------------------
 * Time is wall-clock seconds from the start of the job. Training progress p is measured in steps of
 * step_s (times the straggler slowdown while a slow node is in the job); between two events it grows
 * linearly, so the simulation jumps from event to event in closed form and never visits a step.
 * Events: failures, checkpoint boundaries, ends of pauses and recoveries, completions of background
 * writes, straggler onsets and detections, loss spikes, the run.max_days cutoff.
 * No general event queue (heap): the pending events are a fixed, typed set — the next failure (the
 * failure process keeps one next time per class), the next straggler onset, the oldest undetected
 * straggler (all share one detection delay, so detections come in onset order), at most one
 * background write, the end of the current phase, the next spike, the cutoff. A minimum over these
 * seven slots is cheaper than a heap and fixes the order of ties. Repairs need no events: a spare's
 * return time only matters when a swap asks for one, so returns are applied then. Steady stretches
 * of checkpoint cycles between those events are jumped over in closed form (fast_forward).
 *
 * Step times. Every step takes step_s; with a replayed series (routing.steps > 1 at the step level,
 *   run.step_sequence "cycle") step i of the run takes series step (i mod n)'s time (sim/run/
 *   step_clock.h): progress still grows linearly inside a step, event times are the clock's spans, a
 *   slow step lands at its index, and a step redone after a rollback takes its index's time again.
 *   The policy's interval in steps, the spike rate per day of training and the interval search use
 *   the series' mean. A step of the series that timed out fails the job at the end of its time (where
 *   its hang began): a collective timeout (below) before any boundary there; being its index's, a
 *   redone step hangs again, so a run that reaches one never passes it.
 * Checkpoints. A boundary comes every k steps counted from the last snapshot (k from the policy:
 *   fixed interval_min, young/daly with delta = write time (sim/plan/checkpoint_write.h, the same
 *   delta as the plan's) and M = job MTBF, none = no checkpoints),
 *   and one more at the last step: the run is done when its final state is durably written.
 *   sync : training stops for the whole write (write_s); the checkpoint protects the boundary's
 *          progress when the write ends.
 *   async: training stops for the GPU-to-host snapshot only (snapshot_s); the write then proceeds in
 *          the background for write_s and protects the snapshot's progress only when it completes.
 *          A boundary reached while the previous write is still running is deferred: training goes
 *          on and the snapshot is taken at the first step boundary after that write completes. This
 *          keeps one host-memory buffer per node, never stalls training on storage, and makes the
 *          effective interval max(k steps, write time) — a write slower than the interval cannot
 *          be hidden, and queueing snapshots behind it would only let the backlog grow.
 * Checkpoint tiers (reliability.checkpoint.tiers.enabled; async only; times: checkpoint_write.h).
 *   The snapshot is a copy in host memory when its pause ends; then, side by side, the peer's copy
 *   (training steps run peer_step_slowdown x longer meanwhile: the replication shares the NICs), the
 *   NVMe copy, and — for every pfs_every-th snapshot and the last — the file system's copy, each
 *   counting once written. A boundary waits for all of them (one host buffer). A failure loses the
 *   copies on the nodes it takes down: host memory and NVMe whenever a node is lost (host memory
 *   also in a restart in place unless host.survives_restart), the peer copies when a lost node's
 *   replica holder is lost too (every node lost in the same recovery counts); the file system keeps
 *   everything. The job rolls back to the newest surviving copy (the fastest tier to read among
 *   equals) and its recovery ends with reading it (spare_swap_s and full_restart_min then exclude the
 *   state load; a spike's reload is only the read). A failure during a recovery may take the copy
 *   being read: the job rolls back further. Without tiers the file system's copy is the only one.
 * Failures. A failure (of any source, at any time, also during pauses, writes and recoveries) rolls
 *   the job back to the last complete checkpoint: the compute since then is lost, an in-flight
 *   write is abandoned. The job hangs for the source's detection delay (detect_s; 0 in the classes
 *   model), then recovers according to the failure's blast radius (sim/run/failures.h), n nodes:
 *   - n > 0 and n hot spares are free: swap + in-memory restore, spare_swap_s; the spares leave the
 *     pool and the broken nodes return to it when their repair is done (the source's repair time,
 *     first come first served over reliability.recovery.repair_slots, 0 = as many as needed);
 *   - otherwise (fewer than n spares free — a leaf switch takes a whole leaf's nodes — or n = 0, a
 *     failure that restarts in place: software, a spine): a full restart of full_restart_min R
 *     (reschedule, reload, warm-up). Without spares, R includes the scheduler draining the bad
 *     nodes and bringing in replacements from outside the hot-spare pool; the pool does not change,
 *     the broken nodes still take a repair slot. A swap that fell back to R is a spare shortfall.
 *   A failure during a recovery restarts the recovery from scratch (the restore state is gone);
 *   the new recovery is the heavier of the interrupted one and the one the new failure needs, so a
 *   failure during a full restart costs a full R again — exactly Daly's model, whose e^(R/M) term
 *   is this restart-on-failure under memoryless failures.
 * Stragglers. round(fraction x nodes) nodes turn slow at uniform random times over the ideal run
 *   length; while any is in the job, every step takes slowdown x longer (synchronous training runs
 *   at its slowest node's pace). detect_min after its onset a straggler is taken out like a failed
 *   node (rollback, spare swap or full restart), counted as a straggler, not a failure.
 * Loss spikes. Poisson in training progress, per_day per day of ideal training. "rollback": back to
 *   the last complete checkpoint and skip the batch; the state is reloaded in place (no
 *   rescheduling) in reload_s = the snapshot time from host memory (async: the last checkpoint is
 *   still cached there, seed 000 §3.3) or the write time read back from the file system (sync).
 *   "skip": the spiking step is discarded and redone with the next batch (one step lost).
 *   "defend": the defences decide between the two, or let clipping tame it at no cost (spike_defence:
 *   the activation-norm monitor, armed once its window has filled after each (re)start; clipping;
 *   under FP16 compute a share of the batches overflow, which only the monitor catches).
 * Collective timeouts (faults.collective_timeout_s, with the share of steps that time out from the
 *   step level: trainrun_simulate_timeouts, Poisson in steps processed, like spikes; or at a replayed
 *   series' timed-out steps, above): the job hangs in the collective until NCCL's watchdog fires (the
 *   timeout is the detection delay), then restarts in place (full_restart_min) from the last
 *   checkpoint, as a failure that takes no node down.
 *   Nothing is broken, so a step that always times out (fraction 1) never gets past it: the run hangs
 *   and restarts until run.max_days, the incident of seed 000 section 0.2 before its fix.
 * Ties between events at the same instant resolve in the order: write completion, end of a pause,
 *   recovery or training segment, spike, collective timeout, straggler detection, straggler onset,
 *   failure, cutoff (a series' timed-out step ending at a boundary: the timeout; the boundary is not
 *   reached).
 *
 * ---- Monte Carlo --------------------------------------------------------------------------------
 * Trial i draws from four gsl_rng mt19937 streams (failures, stragglers, spikes, timeouts) seeded with
 *   splitmix64(splitmix64(splitmix64(seed) ^ i) ^ stream), folded to 32 bits (mt19937 takes 32-bit
 *   seeds). Separate streams make every candidate interval of the search see the same failures,
 *   stragglers and spikes in trial i (common random numbers).
 * ETTR of a trial = ideal compute of the work kept (steps x step_s) / wall time.
 * lost hours = compute rolled back (and discarded spike steps); restart hours = time in recovery
 * after detection; detect hours = time from failures to their detection.
 *
 * ---- Interval search ----------------------------------------------------------------------------
 * The objective is the mean wall time over all trials (common random numbers, sync or async as the
 * scenario says, max_days cutoff lifted to 4x). A grid of intervals Daly's x 2^(j/3), j = -3..3,
 * is extended past either end until it brackets the minimum (async checkpoints pause only for the
 * snapshot, so their optimum can lie far below Daly's, near the write time; async candidates never
 * go below the write time, where boundaries are deferred anyway). Then a quadratic in ln(interval)
 * is fitted by least squares (gsl_multifit_linear) around the best grid point, refined on 9 points
 * within a factor 2^(1/4) of that fit's vertex, and fitted again over the points within a factor
 * sqrt(2). Fitting, rather than golden-section search, averages the Monte Carlo noise over many
 * points: near its minimum the wall time moves by only ~1e-4 for a 5% change of interval, far
 * below the noise of any one point. (The wall time is close to a + b cosh(ln tau - ln tau*) around
 * the optimum — Young's form — so a quadratic in ln tau fits it symmetrically.)
 */
#include "sim/run/trainrun.h"
#include "sim/base/alloc.h"
#include "sim/base/rng_seed.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/scenario/scenario_paths.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim/plan/checkpoint_write.h"
#include "sim/plan/reliability.h"
#include "sim/run/failures.h"
#include "sim/run/step_clock.h"

#define INF INFINITY

const char *const CHECKPOINT_TIER_NAMES[N_TIERS] = {"host", "peer", "nvme", "pfs"};

typedef enum { REC_NONE = 0, REC_RELOAD, REC_SWAP, REC_RESTART } recovery_kind;
#define MAX_DOWN 16                     /* node ranges lost in one recovery episode (more: all) */
typedef enum { PH_TRAIN = 0, PH_PAUSE, PH_DRAIN, PH_RECOVER, PH_DONE } phase_kind;
enum { STREAM_FAILURES = 1, STREAM_STRAGGLERS = 2, STREAM_SPIKES = 3, STREAM_TIMEOUTS = 4 };

/* Everything a trial needs, resolved once from the scenario. */
typedef struct {
    double step_s, slowdown;       /* step_s: one step's time, or the replayed series' mean */
    step_clock clock;              /* the time of the steps (step_clock.h): step_s, or the series */
    int series_n;                  /* the step level's series length (0: none) */
    long n_steps;
    int async;
    double write_s, snapshot_s, reload_s, restart_s, swap_s;
    double straggler_repair_s;     /* a slow node taken out goes to repair for recovery.repair_h */
    int spare_pool;
    int repair_slots;              /* 0: unlimited */
    double max_s;
    int n_stragglers;
    double straggler_horizon_s, detect_s;
    double spike_mean_steps;       /* INF: no spikes */
    spike_action_kind spike_action;
    loss_spikes_cfg spike;         /* the defences (spike_action = SPIKE_DEFEND) */
    int fp16;                      /* precision.compute fp16: spiking batches may overflow */
    double timeout_mean_steps;     /* steps between collective timeouts (INF: none) */
    double timeout_s;              /* faults.collective_timeout_s: the hang before detection */
    uint64_t seed;
    double mtbf_s;                 /* INF: no drawn failures */
    int has_failures;              /* drawn or replayed */
    /* checkpoint tiers (0: off; the file system is then the only copy a failure rolls back to) */
    int tiers;
    int tier_on[N_TIERS];
    double tier_write_s[N_TIERS], tier_read_s[N_TIERS];
    int pfs_every;                 /* every n-th snapshot goes to the file system */
    double peer_slowdown;          /* step-time factor while a replication runs */
    int peer_offset, nodes, host_survives_restart;
} run_params;

/* One trial's totals. */
typedef struct {
    double wall_s, useful_s, lost_s, recover_s, detect_s, ckpt_s, replicate_slow_s;
    int completed, failures, restarts, swaps, stragglers, spikes, shortfalls, correlated;
    int by_source[FAILURE_MAX_SOURCES];
    int restores[N_TIERS];
    double lost_by_tier_s[N_TIERS], restore_by_tier_s[N_TIERS];
    int spikes_skipped, spikes_clipped, spikes_rolled_back;
    double spike_skip_s, spike_rollback_s;   /* discarded steps; rolled-back compute and reloads */
    int timeouts;
} trial_totals;

/* Spares out for repair: when they return to the pool, and how many nodes. */
typedef struct {
    double back_s;
    int nodes;
} repair_job;

/* Memory reused across trials: RNG streams, the failure process, straggler onsets, repair slots. */
typedef struct {
    gsl_rng *rng_fail, *rng_slow, *rng_spike, *rng_timeout;
    failure_process fp;
    double *onsets;
    repair_job *repairs;           /* spares out for repair */
    int n_repairs;
    double *slot_free;             /* per repair slot: when it is free (repair_slots > 0) */
    trainrun_event_fn fn;
    void *user;
} trial_ctx;

typedef struct {
    double t;
    double p, p_ckpt, p_next, p_snap;   /* progress (steps): now, protected, next boundary, snapshot */
    double w_end;                       /* completion of the background write (INF: none) */
    double phase_end;
    double detect_end;                  /* recovery: the failure is detected (recovery proper starts) */
    double train_s, train_s_at_snap, train_s_at_ckpt;   /* cumulative compute time and its marks */
    double pw, pw_spike;                /* steps processed incl. rework; next spike at */
    double pw_armed;                    /* the spike monitor watches from here (its window filled) */
    double pw_timeout;                  /* next collective timeout at (steps processed) */
    phase_kind phase;
    recovery_kind rec_kind;
    int pending;                        /* a boundary was deferred behind a running write */
    int slow_active, next_onset, next_detect;
    long k;                             /* steps per interval; 0 = no checkpoints */
    /* checkpoint tiers: the fast tiers' copies (host, peer, nvme; the file system's is p_ckpt,
     * train_s_at_ckpt, w_end): progress held (-1: none), its compute mark, its write in flight */
    double tp[N_TIERS], tmark[N_TIERS], tend[N_TIERS];
    int since_pfs;                      /* snapshots since the last one written to the file system */
    int n_down, down_first[MAX_DOWN], down_n[MAX_DOWN];   /* nodes lost since the job last ran */
    int restore_tier;                   /* the tier the current recovery reads from */
    double restore_start;               /* the recovery reads the state from then to its end */
} trial_state;

/* The pace of training: d, the time of one step at it with one step time; f, its factor over the
 * steps' own times (straggler slowdown, replication) with a series (step_clock.h). */
typedef struct {
    double d, f;
} pace;

/* ---- seeding ---------------------------------------------------------------------------------- */

static unsigned long stream_seed(uint64_t seed, int trial, int stream) {
    uint64_t h = moe_seed_mix(moe_seed_mix(moe_seed_mix(seed) ^ (uint64_t)trial) ^ (uint64_t)stream);
    return moe_seed_fold32(h);
}

/* ---- one trial ---------------------------------------------------------------------------------- */

static void emit(const trial_ctx *cx, double t, trainrun_event_kind kind, int cls, int rank,
                 int rec, double value) {
    if (!cx->fn) return;
    trainrun_event ev = {t, kind, cls, rank, rec, value};
    cx->fn(&ev, cx->user);
}

static double next_boundary(const run_params *pr, long k, double p) {
    if (k <= 0) return (double)pr->n_steps;
    double b = p + (double)k;
    return b < (double)pr->n_steps ? b : (double)pr->n_steps;
}

static void trial_begin(trial_ctx *cx, const run_params *pr, int trial, long k, trial_state *st) {
    gsl_rng_set(cx->rng_fail, stream_seed(pr->seed, trial, STREAM_FAILURES));
    gsl_rng_set(cx->rng_slow, stream_seed(pr->seed, trial, STREAM_STRAGGLERS));
    gsl_rng_set(cx->rng_spike, stream_seed(pr->seed, trial, STREAM_SPIKES));
    gsl_rng_set(cx->rng_timeout, stream_seed(pr->seed, trial, STREAM_TIMEOUTS));
    failure_process_reset(&cx->fp, cx->rng_fail);
    for (int i = 0; i < pr->n_stragglers; i++)
        cx->onsets[i] = gsl_rng_uniform(cx->rng_slow) * pr->straggler_horizon_s;
    gsl_sort(cx->onsets, 1, (size_t)pr->n_stragglers);
    cx->n_repairs = 0;
    for (int i = 0; i < pr->repair_slots; i++) cx->slot_free[i] = 0;
    memset(st, 0, sizeof *st);
    st->k = k;
    st->phase = PH_TRAIN;
    st->w_end = INF;
    for (int i = 0; i < N_TIERS; i++) {
        st->tp[i] = -1;
        st->tend[i] = INF;
    }
    st->restore_tier = -1;
    st->pw_armed = pr->spike.monitor_window_steps;
    st->p_next = next_boundary(pr, k, 0);
    st->pw_spike = isfinite(pr->spike_mean_steps)
                       ? gsl_ran_exponential(cx->rng_spike, pr->spike_mean_steps) : INF;
    st->pw_timeout = isfinite(pr->timeout_mean_steps)
                         ? gsl_ran_exponential(cx->rng_timeout, pr->timeout_mean_steps) : INF;
}

/* A replication to the peer tier is running: training shares the NICs with it. */
static int replicating(const trial_state *st, const run_params *pr) {
    return pr->tiers && isfinite(st->tend[TIER_PEER]);
}

/* Any background write in flight (the host buffer is busy until all are done). */
static int writing(const trial_state *st, const run_params *pr) {
    if (isfinite(st->w_end)) return 1;
    return pr->tiers && (isfinite(st->tend[TIER_PEER]) || isfinite(st->tend[TIER_NVME]));
}

static double clamp_overlap(double from, double t0, double dt) {
    double x = t0 + dt - from;
    return x < 0 ? 0 : x > dt ? dt : x;
}

/* Let time run to t_next in the current phase. */
static void advance(trial_state *st, const run_params *pr, trial_totals *tot, double t_next,
                    const pace *pc) {
    double dt = t_next - st->t;
    if (dt < 0) dt = 0;
    switch (st->phase) {
    case PH_TRAIN: {
        double dp = pr->clock.n ? step_clock_after(&pr->clock, st->p, dt, pc->d, pc->f) - st->p : dt / pc->d;
        st->p += dp;
        if (st->p > st->p_next) st->p = st->p_next;   /* rounding only */
        st->pw += dp;
        st->train_s += dt;
        if (replicating(st, pr)) tot->replicate_slow_s += dt * (1.0 - 1.0 / pr->peer_slowdown);
        break;
    }
    case PH_PAUSE:
    case PH_DRAIN: tot->ckpt_s += dt; break;
    case PH_RECOVER: {
        double in_detect = st->detect_end - st->t;
        in_detect = in_detect < 0 ? 0 : in_detect > dt ? dt : in_detect;
        tot->detect_s += in_detect;
        tot->recover_s += dt - in_detect;
        if (st->restore_tier >= 0)
            tot->restore_by_tier_s[st->restore_tier] += clamp_overlap(st->restore_start, st->t, dt);
        if (st->rec_kind == REC_RELOAD) tot->spike_rollback_s += dt;
        break;
    }
    case PH_DONE: break;
    }
    st->t = t_next;
}

static void finish(trial_state *st, const run_params *pr, trial_totals *tot, int completed,
                   const trial_ctx *cx) {
    st->phase = PH_DONE;
    tot->completed = completed;
    tot->wall_s = st->t;
    double kept = completed ? (double)pr->n_steps : st->p_ckpt;
    tot->useful_s = pr->clock.n ? step_clock_at(&pr->clock, kept) : kept * pr->step_s;
    emit(cx, st->t, completed ? TR_EV_DONE : TR_EV_CUTOFF, -1, -1, 0, st->p_ckpt);
}

static void commit_checkpoint(trial_state *st, const trial_ctx *cx) {
    st->p_ckpt = st->p_snap;
    st->train_s_at_ckpt = st->train_s_at_snap;
    emit(cx, st->t, TR_EV_CHECKPOINT_DONE, -1, -1, 0, st->p_ckpt);
}

/* Stop training for a sync write or an async snapshot of the progress at st->p. */
static void start_checkpoint(trial_state *st, const run_params *pr, const trial_ctx *cx) {
    st->phase = PH_PAUSE;
    st->phase_end = st->t + (pr->async ? pr->snapshot_s : pr->write_s);
    st->p_snap = st->p;
    st->train_s_at_snap = st->train_s;
    emit(cx, st->t, TR_EV_CHECKPOINT_START, -1, -1, 0, st->p);
}

static void on_boundary(trial_state *st, const run_params *pr, trial_totals *tot,
                        const trial_ctx *cx) {
    st->p = st->p_next;
    if (st->k <= 0) {                       /* policy none: the boundary is the last step */
        finish(st, pr, tot, 1, cx);
        return;
    }
    if (pr->async && writing(st, pr)) {     /* previous write still running: defer */
        st->pending = 1;
        if (st->p >= (double)pr->n_steps) st->phase = PH_DRAIN;
        else st->p_next = (double)pr->n_steps;
        return;
    }
    start_checkpoint(st, pr, cx);
}

static void on_pause_end(trial_state *st, const run_params *pr, trial_totals *tot,
                         const trial_ctx *cx) {
    if (!pr->async) {
        commit_checkpoint(st, cx);
        if (st->p_ckpt >= (double)pr->n_steps) { finish(st, pr, tot, 1, cx); return; }
    } else if (!pr->tiers) {
        st->w_end = st->t + pr->write_s;
        if (st->p >= (double)pr->n_steps) { st->phase = PH_DRAIN; return; }
    } else {
        /* the snapshot is in host memory; the other tiers copy it from there, side by side */
        st->tp[TIER_HOST] = st->p_snap;
        st->tmark[TIER_HOST] = st->train_s_at_snap;
        for (int i = TIER_PEER; i <= TIER_NVME; i++)
            if (pr->tier_on[i]) st->tend[i] = st->t + pr->tier_write_s[i];
        int last = st->p >= (double)pr->n_steps;
        if (++st->since_pfs >= pr->pfs_every || last) {
            st->since_pfs = 0;
            st->w_end = st->t + pr->write_s;
        }
        if (last) { st->phase = PH_DRAIN; return; }
    }
    st->p_next = next_boundary(pr, st->k, st->p);
    st->phase = PH_TRAIN;
}

/* The last background write is done: a boundary deferred behind it takes its snapshot now (or at
 * the first step boundary from now). */
static void resume_deferred(trial_state *st, const run_params *pr, const trial_ctx *cx) {
    if (!st->pending || writing(st, pr)) return;
    st->pending = 0;
    if (st->phase == PH_DRAIN) { start_checkpoint(st, pr, cx); return; }
    double b = ceil(st->p);                 /* the first step boundary from now */
    st->p_next = b < (double)pr->n_steps ? b : (double)pr->n_steps;
}

static void on_write_done(trial_state *st, const run_params *pr, trial_totals *tot,
                          const trial_ctx *cx) {
    st->w_end = INF;
    commit_checkpoint(st, cx);
    if (st->p_ckpt >= (double)pr->n_steps) { finish(st, pr, tot, 1, cx); return; }
    resume_deferred(st, pr, cx);
}

/* A peer or NVMe copy of the snapshot is complete. */
static void on_tier_done(trial_state *st, const run_params *pr, int tier, const trial_ctx *cx) {
    st->tend[tier] = INF;
    st->tp[tier] = st->p_snap;
    st->tmark[tier] = st->train_s_at_snap;
    emit(cx, st->t, TR_EV_CHECKPOINT_DONE, tier, -1, 0, st->p_snap);
    resume_deferred(st, pr, cx);
}

static void rollback(trial_state *st, const run_params *pr, trial_totals *tot,
                     const trial_ctx *cx) {
    double lost = st->train_s - st->train_s_at_ckpt;
    tot->lost_s += lost;
    st->train_s_at_ckpt = st->train_s;
    st->p = st->p_ckpt;
    st->w_end = INF;
    st->pending = 0;
    st->p_next = next_boundary(pr, st->k, st->p);
    emit(cx, st->t, TR_EV_ROLLBACK, -1, -1, 0, lost);
}

/* ---- checkpoint tiers: which copies survive, which one a restart reads ------------------------- */

static int node_down(const trial_state *st, int node) {
    for (int i = 0; i < st->n_down; i++)
        if (node >= st->down_first[i] && node < st->down_first[i] + st->down_n[i]) return 1;
    return 0;
}

/* Nodes [first, first + n) are lost in this recovery episode (ranges past MAX_DOWN: every node). */
static void add_down(trial_state *st, const run_params *pr, int first, int n) {
    if (n <= 0) return;
    if (st->n_down == MAX_DOWN) { st->down_first[0] = 0; st->down_n[0] = pr->nodes; st->n_down = 1; }
    st->down_first[st->n_down] = first;
    st->down_n[st->n_down++] = n;
}

/* Does tier t still hold a complete copy? host and NVMe: no node is lost (a lost node's memory and
 * drives go with it), and for the host also the training process kept its memory (a loss spike) or
 * a daemon held the snapshot across a restart in place; peer: no lost node's replica holder is lost
 * too; the file system: always. */
static int tier_usable(const trial_state *st, const run_params *pr, int tier, int in_process) {
    if (tier == TIER_PFS) return 1;
    if (st->tp[tier] < 0) return 0;
    if (tier == TIER_HOST) return st->n_down == 0 && (in_process || pr->host_survives_restart);
    if (tier == TIER_NVME) return st->n_down == 0;
    for (int i = 0; i < st->n_down; i++)
        for (int j = st->down_first[i]; j < st->down_first[i] + st->down_n[i]; j++)
            if (node_down(st, (j + pr->peer_offset) % pr->nodes)) return 0;
    return 1;
}

static double tier_progress(const trial_state *st, int tier) {
    return tier == TIER_PFS ? st->p_ckpt : st->tp[tier];
}
static double tier_mark(const trial_state *st, int tier) {
    return tier == TIER_PFS ? st->train_s_at_ckpt : st->tmark[tier];
}

/* Roll back to the newest copy that survived (the fastest tier to read among equals): the compute
 * since it is lost; copies that did not survive are gone; in-flight writes are abandoned. Returns
 * the tier the restart reads from. */
static int rollback_tiers(trial_state *st, const run_params *pr, trial_totals *tot,
                          const trial_ctx *cx, int in_process) {
    int usable[N_TIERS], best = TIER_PFS;
    for (int i = 0; i < N_TIERS; i++) usable[i] = tier_usable(st, pr, i, in_process);
    for (int i = 0; i < TIER_PFS; i++) {
        if (!usable[i]) continue;
        double pi = tier_progress(st, i), pb = tier_progress(st, best);
        if (pi > pb || (pi == pb && pr->tier_read_s[i] < pr->tier_read_s[best])) best = i;
    }
    double lost = st->train_s - tier_mark(st, best), base = tier_mark(st, best);
    tot->lost_s += lost;
    tot->lost_by_tier_s[best] += lost;
    tot->restores[best]++;
    /* the state is now the copy's: every surviving copy keeps its distance (in compute) to it */
    for (int i = 0; i < TIER_PFS; i++) {
        if (!usable[i]) st->tp[i] = -1;
        else st->tmark[i] = st->train_s - (base - st->tmark[i]);
        st->tend[i] = INF;
    }
    st->train_s_at_ckpt = st->train_s - (base - st->train_s_at_ckpt);
    st->p = tier_progress(st, best);
    st->w_end = INF;
    st->pending = 0;
    st->p_next = next_boundary(pr, st->k, st->p);
    emit(cx, st->t, TR_EV_ROLLBACK, best, -1, 0, lost);
    return best;
}

/* When a repair of repair_s that arrives now is done: at once with unlimited repair slots, else
 * first come, first served on the slot that frees first. */
static double schedule_repair(trial_ctx *cx, const run_params *pr, double t, double repair_s) {
    if (pr->repair_slots <= 0) return t + repair_s;
    int best = 0;
    for (int i = 1; i < pr->repair_slots; i++)
        if (cx->slot_free[i] < cx->slot_free[best]) best = i;
    double start = cx->slot_free[best] > t ? cx->slot_free[best] : t;
    cx->slot_free[best] = start + repair_s;
    return start + repair_s;
}

/* Take n_nodes hot spares if that many are free (spares back from repair by now return to the
 * pool first); the broken nodes go to repair and rejoin the pool when it is done. */
static int take_spares(trial_ctx *cx, const run_params *pr, double t, int n_nodes, double repair_s) {
    int n = 0, out = 0;
    for (int i = 0; i < cx->n_repairs; i++)
        if (cx->repairs[i].back_s > t) {
            cx->repairs[n++] = cx->repairs[i];
            out += cx->repairs[i].nodes;
        }
    cx->n_repairs = n;
    if (pr->spare_pool - out < n_nodes) return 0;
    cx->repairs[cx->n_repairs++] = (repair_job){schedule_repair(cx, pr, t, repair_s), n_nodes};
    return 1;
}

/* restore_tier >= 0 (tiers on): the recovery ends by reading the state from that tier; a reload
 * (loss spike) is then only that read. */
static void begin_recovery(trial_state *st, const run_params *pr, trial_totals *tot,
                           const trial_ctx *cx, recovery_kind kind, double detect_s, int restore_tier) {
    double dur = kind == REC_RESTART ? pr->restart_s : kind == REC_SWAP ? pr->swap_s : pr->reload_s;
    double read_s = 0;
    if (restore_tier >= 0) {
        read_s = pr->tier_read_s[restore_tier];
        if (kind == REC_RELOAD) dur = 0;
    }
    if (kind == REC_RESTART) tot->restarts++;
    if (kind == REC_SWAP) tot->swaps++;
    st->phase = PH_RECOVER;
    st->rec_kind = kind;
    st->detect_end = st->t + detect_s;
    st->phase_end = st->detect_end + dur + read_s;
    st->restore_tier = restore_tier;
    st->restore_start = st->phase_end - read_s;
    emit(cx, st->t, TR_EV_RECOVERY_START, restore_tier, -1, (int)kind, detect_s + dur + read_s);
}

/* A failure (or a slow node taken out) that takes n_nodes out of the job: roll back, then swap them
 * for spares, or restart the job (in place when n_nodes = 0; with replacements from outside the
 * pool when too few spares are free). The recovery starts after the detection delay. */
static void interrupt(trial_state *st, const run_params *pr, trial_totals *tot, trial_ctx *cx,
                      int first_node, int n_nodes, double detect_s, double repair_s) {
    int recovering = st->phase == PH_RECOVER, tier = -1;
    if (pr->tiers) {
        /* a failure during a recovery may take the copy being restored: back to the next one */
        add_down(st, pr, first_node, n_nodes);
        tier = rollback_tiers(st, pr, tot, cx, 0);
    } else if (!recovering) {
        rollback(st, pr, tot, cx);
    }
    recovery_kind want = n_nodes > 0 ? REC_SWAP : REC_RESTART;
    if (recovering && st->rec_kind == REC_RESTART) want = REC_RESTART;
    int spared = want == REC_SWAP && take_spares(cx, pr, st->t, n_nodes, repair_s);
    if (want == REC_SWAP && !spared) {
        want = REC_RESTART;
        tot->shortfalls++;
    }
    /* nodes replaced from outside the pool still take a repair slot */
    if (!spared && n_nodes > 0) schedule_repair(cx, pr, st->t, repair_s);
    begin_recovery(st, pr, tot, cx, want, detect_s, tier);
}

typedef enum { SPIKE_BY_MONITOR = 0, SPIKE_BY_CLIPPING, SPIKE_BY_ROLLBACK } spike_outcome;

/* What stops a spiking batch. "defend" (seed 000 section 3.2), in the order a step meets them: the
 * activation-norm monitor, after the forward, skips the batch when its norm is over threshold x the
 * window mean (an FP16 overflow is an Inf norm: always over), once the window has filled since the
 * job last started; else the backward's gradient is clipped, which tames a finite spike with
 * probability clip_fraction and never an Inf; else the update damages the weights: a rollback. Three
 * numbers are drawn per spike whatever the settings, so every policy sees the same spikes. */
static spike_outcome spike_defence(const trial_state *st, const run_params *pr, gsl_rng *rng) {
    if (pr->spike_action != SPIKE_DEFEND)
        return pr->spike_action == SPIKE_SKIP ? SPIKE_BY_MONITOR : SPIKE_BY_ROLLBACK;
    const loss_spikes_cfg *c = &pr->spike;
    double u_over = gsl_rng_uniform(rng), z = gsl_ran_ugaussian(rng), u_clip = gsl_rng_uniform(rng);
    int overflow = pr->fp16 && u_over < c->fp16_overflow_fraction;
    double ratio = overflow ? INF : c->norm_ratio_median * exp(c->norm_ratio_sigma * z);
    if (c->monitor && st->pw >= st->pw_armed && ratio > c->monitor_threshold) return SPIKE_BY_MONITOR;
    if (!overflow && c->clipping && u_clip < c->clip_fraction) return SPIKE_BY_CLIPPING;
    return SPIKE_BY_ROLLBACK;
}

static void on_spike(trial_state *st, const run_params *pr, trial_totals *tot, trial_ctx *cx,
                     const pace *pc) {
    st->pw = st->pw_spike;
    st->pw_spike += gsl_ran_exponential(cx->rng_spike, pr->spike_mean_steps);
    tot->spikes++;
    spike_outcome out = spike_defence(st, pr, cx->rng_spike);
    emit(cx, st->t, TR_EV_LOSS_SPIKE, (int)out, -1, 0, st->p);
    if (out == SPIKE_BY_CLIPPING) {
        tot->spikes_clipped++;
        return;
    }
    if (out == SPIKE_BY_ROLLBACK) {
        tot->spikes_rolled_back++;
        double lost0 = tot->lost_s;
        int tier = -1;
        if (pr->tiers) tier = rollback_tiers(st, pr, tot, cx, 1);   /* no node lost: host memory */
        else rollback(st, pr, tot, cx);
        tot->spike_rollback_s += tot->lost_s - lost0;
        begin_recovery(st, pr, tot, cx, REC_RELOAD, 0, tier);
        return;
    }
    /* skipped: back to the start of the step in progress, never behind a taken snapshot */
    tot->spikes_skipped++;
    double floor_p = st->p_ckpt;
    if (writing(st, pr) || st->pending) floor_p = st->p_snap > floor_p ? st->p_snap : floor_p;
    if (pr->tiers && st->tp[TIER_HOST] > floor_p) floor_p = st->tp[TIER_HOST];
    double back = ceil(st->p) - 1.0;
    if (back < floor_p) back = floor_p;
    if (back >= st->p) return;
    double wasted = step_clock_span(&pr->clock, back, st->p, pc->d, pc->f);
    st->p = back;
    tot->lost_s += wasted;
    tot->spike_skip_s += wasted;
    /* the wasted compute lies after both marks: a later rollback must not count it again */
    st->train_s_at_ckpt += wasted;
    st->train_s_at_snap += wasted;
    for (int i = 0; i < TIER_PFS; i++) st->tmark[i] += wasted;
}

/* A step whose collective timed out (faults.collective_timeout_s, from the step level): the job hangs
 * in it until NCCL's watchdog fires, timeout_s later, and restarts in place from the last checkpoint,
 * like a failure that takes no node down (nothing is broken: the same routing can hang it again).
 * hang_end: a replayed series' timed-out step ends there (the step's time ran to its hang); INF: a
 * Poisson timeout at pw_timeout. */
static void on_timeout(trial_state *st, const run_params *pr, trial_totals *tot, trial_ctx *cx, double hang_end) {
    if (isfinite(hang_end)) {
        st->p = hang_end;
    } else {
        st->pw = st->pw_timeout;
        st->pw_timeout += gsl_ran_exponential(cx->rng_timeout, pr->timeout_mean_steps);
    }
    tot->timeouts++;
    emit(cx, st->t, TR_EV_COLLECTIVE_TIMEOUT, -1, -1, 0, pr->timeout_s);
    interrupt(st, pr, tot, cx, 0, 0, pr->timeout_s, 0);
}

/* The next event that ends a steady stretch: a failure, a straggler onset or detection, the cutoff. */
static double next_disruption(const trial_ctx *cx, const run_params *pr, const trial_state *st) {
    double te = failure_process_peek(&cx->fp);
    if (st->next_onset < pr->n_stragglers && cx->onsets[st->next_onset] < te)
        te = cx->onsets[st->next_onset];
    if (st->next_detect < st->next_onset && cx->onsets[st->next_detect] + pr->detect_s < te)
        te = cx->onsets[st->next_detect] + pr->detect_s;
    return pr->max_s < te ? pr->max_s : te;
}

/* Whole cycles that fit before time te, the last boundary and the next spike (0: none). */
static double whole_cycles(const run_params *pr, const trial_state *st, double cycle, double te) {
    double k = (double)st->k;
    double n = floor((te - st->t) / cycle);
    double n_end = floor(((double)pr->n_steps - 1.0 - st->p) / k);   /* stay before the last boundary */
    double n_spike = floor((st->pw_spike - st->pw) / k);
    double n_timeout = floor((st->pw_timeout - st->pw) / k);
    if (n_end < n) n = n_end;
    if (n_spike < n) n = n_spike;
    if (n_timeout < n) n = n_timeout;
    if (!(n >= 1)) return 0;
    while (n >= 1 && st->t + n * cycle > te) n -= 1;   /* rounding guard */
    return n;
}

/* The same with checkpoint tiers. A cycle is k steps and the snapshot; its first peer-write
 * seconds run slower (the replication shares the NICs), every write of the snapshot finishes inside
 * the cycle, and the file system takes every pfs_every-th snapshot, so whole multiples of pfs_every
 * cycles repeat exactly. After n of them: the host holds the snapshot just taken, the peer and NVMe
 * the one before (this one is being written), the file system the last one it took. */
static void fast_forward_tiers(trial_ctx *cx, const run_params *pr, trial_state *st, trial_totals *tot) {
    long k = st->k;
    double s = pr->step_s * (st->slow_active > 0 ? pr->slowdown : 1.0);
    double wp = pr->tier_on[TIER_PEER] ? pr->tier_write_s[TIER_PEER] : 0;
    double steps_slow = wp / (s * pr->peer_slowdown);       /* steps done while replicating */
    if (steps_slow > (double)k) return;
    double train = wp + ((double)k - steps_slow) * s;       /* wall time of the k steps */
    double w_max = pr->write_s;
    for (int i = TIER_PEER; i <= TIER_NVME; i++)
        if (pr->tier_on[i] && pr->tier_write_s[i] > w_max) w_max = pr->tier_write_s[i];
    if (!(w_max <= train)) return;
    double cycle = train + pr->snapshot_s;
    double n = whole_cycles(pr, st, cycle, next_disruption(cx, pr, st));
    n = floor(n / pr->pfs_every) * pr->pfs_every;
    if (n < 1) return;
    st->t += n * cycle;
    st->p += n * (double)k;
    st->pw += n * (double)k;
    st->train_s += n * train;
    tot->ckpt_s += n * pr->snapshot_s;
    tot->replicate_slow_s += n * wp * (1.0 - 1.0 / pr->peer_slowdown);
    st->p_snap = st->p;
    st->train_s_at_snap = st->train_s;
    st->tp[TIER_HOST] = st->p;
    st->tmark[TIER_HOST] = st->train_s;
    for (int i = TIER_PEER; i <= TIER_NVME; i++) {
        if (!pr->tier_on[i]) continue;
        st->tend[i] = st->t + pr->tier_write_s[i];
        st->tp[i] = st->p - (double)k;
        st->tmark[i] = st->train_s - train;
    }
    int back = st->since_pfs == 0 ? pr->pfs_every : st->since_pfs;   /* snapshots since the file's copy */
    st->w_end = st->since_pfs == 0 ? st->t + pr->write_s : INF;
    st->p_ckpt = st->p - (double)back * (double)k;
    st->train_s_at_ckpt = st->train_s - (double)back * train;
    st->p_next = next_boundary(pr, k, st->p);
}

/* The same with a replayed series (step_clock.h): the k steps of a cycle take the times of their own
 * indexes, so cycles differ; the last whole cycle that ends by the next disruption is found by
 * bisection over their count (n cycles take longer than n - 1), and none crosses the end of a step
 * that timed out (the cycles stop at the boundary before it). Async: every k steps outlast the write
 * (k x the shortest step >= write_s), so every write completes inside its cycle. With checkpoint tiers
 * a series is not jumped over (the event loop runs every checkpoint). */
static void fast_forward_series(trial_ctx *cx, const run_params *pr, trial_state *st, trial_totals *tot) {
    const step_clock *c = &pr->clock;
    double k = (double)st->k;
    double f = st->slow_active > 0 ? pr->slowdown : 1.0, d = pr->step_s * f;
    if (pr->tiers || (pr->async && !(pr->write_s <= k * c->min_s * f))) return;
    double pause = pr->async ? pr->snapshot_s : pr->write_s;
    double n_max = floor(((double)pr->n_steps - 1.0 - st->p) / k);   /* stay before the last boundary */
    double n_spike = floor((st->pw_spike - st->pw) / k);
    double n_hang = floor((step_clock_next_hang(c, st->p) - 1.0 - st->p) / k);
    if (n_spike < n_max) n_max = n_spike;
    if (n_hang < n_max) n_max = n_hang;
    if (!(n_max >= 1)) return;
    double te = next_disruption(cx, pr, st), lo = 0, hi = n_max;
    while (lo < hi) {
        double mid = floor((lo + hi + 1) / 2);
        if (st->t + mid * pause + step_clock_span(c, st->p, st->p + mid * k, d, f) <= te) lo = mid;
        else hi = mid - 1;
    }
    if (lo < 1) return;
    double n = lo, train = step_clock_span(c, st->p, st->p + n * k, d, f);
    st->t += n * pause + train;
    st->p += n * k;
    st->pw += n * k;
    st->train_s += train;
    tot->ckpt_s += n * pause;
    if (pr->async) {   /* the snapshot just taken is being written; the one before it is complete */
        st->w_end = st->t + pr->write_s;
        st->p_ckpt = st->p - k;
        st->train_s_at_ckpt = st->train_s - step_clock_span(c, st->p_ckpt, st->p, d, f);
    } else {
        st->p_ckpt = st->p;
        st->train_s_at_ckpt = st->train_s;
    }
    st->p_snap = st->p;
    st->train_s_at_snap = st->train_s;
    st->p_next = next_boundary(pr, st->k, st->p);
}

/* Steady state in closed form. Right after a checkpoint pause, with nothing but checkpoints ahead
 * until the next failure, straggler event, spike or cutoff, the run repeats one cycle — k steps of
 * training and one pause (sync: the write; async: the snapshot, its write hidden behind the next
 * k steps) — and every cycle leaves the state shifted by (cycle time, k steps). Jump over all whole
 * cycles at once: the same arithmetic the event loop would do, n times in one, so the simulation
 * costs O(failures) per trial rather than O(checkpoints). Not used when events are being reported
 * (each checkpoint is an event then) nor when an async write outlasts the interval (no steady
 * cycle: boundaries are deferred). */
static void fast_forward(trial_ctx *cx, const run_params *pr, trial_state *st, trial_totals *tot) {
    long k = st->k;
    if (k <= 0 || st->pending || cx->fn) return;
    if (pr->clock.n) { fast_forward_series(cx, pr, st, tot); return; }
    if (pr->tiers) { fast_forward_tiers(cx, pr, st, tot); return; }
    double d = pr->step_s * (st->slow_active > 0 ? pr->slowdown : 1.0);
    double kd = (double)k * d;
    if (pr->async && !(pr->write_s <= kd)) return;
    double pause = pr->async ? pr->snapshot_s : pr->write_s;
    double cycle = kd + pause;
    double n = whole_cycles(pr, st, cycle, next_disruption(cx, pr, st));
    if (n < 1) return;
    st->t += n * cycle;
    st->p += n * (double)k;
    st->pw += n * (double)k;
    st->train_s += n * kd;
    tot->ckpt_s += n * pause;
    if (pr->async) {
        /* the snapshot just taken is being written; the one before it is complete */
        st->w_end = st->t + pr->write_s;
        st->p_ckpt = st->p - (double)k;
        st->train_s_at_ckpt = st->train_s - kd;
    } else {
        st->p_ckpt = st->p;
        st->train_s_at_ckpt = st->train_s;
    }
    st->p_snap = st->p;
    st->train_s_at_snap = st->train_s;
    st->p_next = next_boundary(pr, k, st->p);
}

enum { E_WRITE = 0, E_TIER, E_PHASE, E_SPIKE, E_TIMEOUT, E_DETECT, E_ONSET, E_FAIL, E_CUTOFF, N_EVENT_KINDS };

static void run_trial(trial_ctx *cx, const run_params *pr, long k, int trial, trial_totals *tot) {
    trial_state st;
    trial_begin(cx, pr, trial, k, &st);
    memset(tot, 0, sizeof *tot);
    while (st.phase != PH_DONE) {
        double f = st.slow_active > 0 ? pr->slowdown : 1.0, d = pr->step_s * f;
        if (replicating(&st, pr)) {
            d *= pr->peer_slowdown;
            f *= pr->peer_slowdown;
        }
        pace pc = {d, f};
        const step_clock *c = &pr->clock;
        /* a replayed series: the end of the next step that timed out (INF: none) */
        double hang = st.phase == PH_TRAIN ? step_clock_next_hang(c, st.p) : INF;
        double when[N_EVENT_KINDS];
        int tier = st.tend[TIER_NVME] < st.tend[TIER_PEER] ? TIER_NVME : TIER_PEER;
        when[E_WRITE] = st.w_end;
        when[E_TIER] = pr->tiers ? st.tend[tier] : INF;
        when[E_PHASE] = st.phase == PH_TRAIN ? st.t + step_clock_span(c, st.p, st.p_next, d, f)
                        : st.phase == PH_DRAIN ? INF : st.phase_end;
        /* a boundary at or past a timed-out step's end is not reached: the hang comes first */
        if (st.phase == PH_TRAIN && hang <= st.p_next) when[E_PHASE] = INF;
        when[E_SPIKE] = st.phase != PH_TRAIN ? INF
                        : c->n ? st.t + step_clock_span(c, st.p, st.p + (st.pw_spike - st.pw), d, f)
                               : st.t + (st.pw_spike - st.pw) * d;
        when[E_TIMEOUT] = st.phase != PH_TRAIN ? INF
                          : isfinite(hang) ? st.t + step_clock_span(c, st.p, hang, d, f)
                                           : st.t + (st.pw_timeout - st.pw) * d;
        when[E_DETECT] = st.next_detect < st.next_onset ? cx->onsets[st.next_detect] + pr->detect_s
                                                        : INF;
        when[E_ONSET] = st.next_onset < pr->n_stragglers ? cx->onsets[st.next_onset] : INF;
        when[E_FAIL] = failure_process_peek(&cx->fp);
        when[E_CUTOFF] = pr->max_s;
        int e = 0;
        for (int i = 1; i < N_EVENT_KINDS; i++)
            if (when[i] < when[e]) e = i;
        advance(&st, pr, tot, when[e], &pc);
        if (st.p > hang) st.p = hang;   /* rounding only */
        switch (e) {
        case E_WRITE: on_write_done(&st, pr, tot, cx); break;
        case E_TIER: on_tier_done(&st, pr, tier, cx); break;
        case E_PHASE:
            if (st.phase == PH_TRAIN) on_boundary(&st, pr, tot, cx);
            else if (st.phase == PH_PAUSE) {
                on_pause_end(&st, pr, tot, cx);
                if (st.phase == PH_TRAIN) fast_forward(cx, pr, &st, tot);
            }
            else {
                st.phase = PH_TRAIN;
                st.rec_kind = REC_NONE;
                st.n_down = 0;
                st.restore_tier = -1;
                st.pw_armed = st.pw + pr->spike.monitor_window_steps;   /* the window refills */
                emit(cx, st.t, TR_EV_RESUME, -1, -1, 0, 0);
            }
            break;
        case E_SPIKE: on_spike(&st, pr, tot, cx, &pc); break;
        case E_TIMEOUT: on_timeout(&st, pr, tot, cx, hang); break;
        case E_DETECT:
            st.next_detect++;
            st.slow_active--;
            tot->stragglers++;
            emit(cx, st.t, TR_EV_STRAGGLER_DETECTED, -1, -1, 0, 0);
            interrupt(&st, pr, tot, cx, 0, 1, 0, pr->straggler_repair_s);
            break;
        case E_ONSET:
            st.next_onset++;
            st.slow_active++;
            emit(cx, st.t, TR_EV_STRAGGLER_ONSET, -1, -1, 0, 0);
            break;
        case E_FAIL: {
            failure_event fe = failure_process_pop(&cx->fp);
            const failure_source *src = &cx->fp.src[fe.source];
            tot->failures++;
            tot->by_source[fe.source]++;
            tot->correlated += fe.correlated;
            emit(cx, st.t, TR_EV_FAILURE, fe.source, fe.rank, 0, fe.n_nodes);
            interrupt(&st, pr, tot, cx, fe.first_node, fe.n_nodes, src->detect_s, src->repair_s);
            break;
        }
        default: finish(&st, pr, tot, 0, cx); break;
        }
    }
}

/* ---- set-up ------------------------------------------------------------------------------------- */

static int trial_ctx_init(trial_ctx *cx, const run_params *pr, const scenario *s,
                          const failure_trace *trace, moe_error *err) {
    memset(cx, 0, sizeof *cx);
    cx->rng_fail = gsl_rng_alloc(gsl_rng_mt19937);
    cx->rng_slow = gsl_rng_alloc(gsl_rng_mt19937);
    cx->rng_spike = gsl_rng_alloc(gsl_rng_mt19937);
    cx->rng_timeout = gsl_rng_alloc(gsl_rng_mt19937);
    cx->onsets = moe_xmalloc(sizeof(double) * (size_t)(pr->n_stragglers + 1));
    cx->repairs = moe_xmalloc(sizeof(repair_job) * (size_t)(pr->spare_pool + 1));
    cx->slot_free = moe_xcalloc((size_t)pr->repair_slots + 1, sizeof(double));
    if (!cx->rng_fail || !cx->rng_slow || !cx->rng_spike || !cx->rng_timeout)
        return moe_error_set(err, EXIT_RUNTIME, "trainrun: out of memory");
    failure_process_init(&cx->fp, s, trace);
    return 0;
}

static void trial_ctx_free(trial_ctx *cx) {
    if (cx->rng_fail) gsl_rng_free(cx->rng_fail);
    if (cx->rng_slow) gsl_rng_free(cx->rng_slow);
    if (cx->rng_spike) gsl_rng_free(cx->rng_spike);
    if (cx->rng_timeout) gsl_rng_free(cx->rng_timeout);
    free(cx->onsets);
    free(cx->repairs);
    free(cx->slot_free);
    failure_process_free(&cx->fp);
}

static int bad(moe_error *err, const scenario *s, const char *path, double v, const char *what) {
    char val[64];
    snprintf(val, sizeof val, "%g", v);
    return moe_error_input(err, s->file, path, val, "%s", what);
}

/* The failure log: as given, else relative to the scenario file's folder (scenario_paths.h). A bad
 * log is reported behind "SCENARIO: reliability.failure_trace: ". */
static int load_trace(const scenario *s, failure_trace *trace, moe_error *err) {
    char path[2 * SCN_PATH_MAX];
    if (scenario_resolve_path(s, s->reliability.failure_trace, path, sizeof path) == -2)
        return moe_error_input(err, s->file, "reliability.failure_trace", s->reliability.failure_trace,
                               "a shorter path");
    if (failure_trace_load(path, s, trace, err))
        return moe_error_context(err, s->file, "reliability.failure_trace");
    return 0;
}

/* run.step_sequence "cycle" with a series: the series replayed in order (step_clock.h), else one step
 * time with Poisson timeouts. */
static int replays(const scenario *s, const trainrun_steps *in) {
    return in->series_n > 1 && s->run.step_sequence == RUN_STEPS_CYCLE;
}

static int resolve_params(const scenario *s, const plan_result *plan, const trainrun_steps *in, run_params *pr,
                          moe_error *err) {
    const reliability_cfg *rc = &s->reliability;
    const checkpoint_cfg *ck = &rc->checkpoint;
    memset(pr, 0, sizeof *pr);
    double step_time_s = in->step_time_s, timeout_fraction = in->timeout_fraction;
    pr->series_n = in->series_n > 1 ? in->series_n : 0;
    if (replays(s, in)) {
        int at;
        if (step_clock_series(&pr->clock, in->series_s, in->series_timed_out, in->series_n, &at))
            return bad(err, s, "step.steps.series.step_time_s", at >= 0 ? in->series_s[at] : 0,
                       "step times >= 0 s, > 0 s for a step that completed, summing to > 0 s");
        step_time_s = pr->clock.step_s;   /* the series' mean: the policy's interval, spike rates */
        timeout_fraction = 0;             /* the series' own timed-out steps instead */
    }
    if (!(timeout_fraction >= 0 && timeout_fraction <= 1))
        return bad(err, s, "step.timeout_fraction", timeout_fraction, "a fraction of steps in [0, 1]");
    pr->timeout_s = in->timeout_detect_s > 0 ? in->timeout_detect_s : s->faults.collective_timeout_s;
    pr->timeout_mean_steps = timeout_fraction > 0 && pr->timeout_s > 0 ? 1.0 / timeout_fraction : INF;
    if (!(step_time_s > 0) || !isfinite(step_time_s))
        return bad(err, s, "step_time_s", step_time_s, "a step time > 0 s (step level or plan)");
    if (!(s->run.tokens > 0)) return bad(err, s, "run.tokens", s->run.tokens, "> 0");
    if (!(s->run.max_days > 0)) return bad(err, s, "run.max_days", s->run.max_days, "> 0");
    if (s->run.trials < 1) return bad(err, s, "run.trials", s->run.trials, "an integer >= 1");
    if (s->layout.global_batch < 1 || s->model.seq_len < 1)
        return bad(err, s, "layout.global_batch", s->layout.global_batch,
                   "global_batch and model.seq_len >= 1 (tokens per step)");
    if (scn_gpus(s) < 1) return bad(err, s, "cluster.nodes", s->cluster.nodes, ">= 1 GPU");
    if (rc->distribution == DIST_WEIBULL && !(rc->weibull_shape > 0))
        return bad(err, s, "reliability.weibull_shape", rc->weibull_shape, "> 0");
    if (!(rc->stragglers.slowdown >= 1.0) && rc->stragglers.fraction > 0)
        return bad(err, s, "reliability.stragglers.slowdown", rc->stragglers.slowdown, ">= 1");

    pr->step_s = step_time_s;
    if (!pr->clock.n) step_clock_const(&pr->clock, step_time_s);
    pr->slowdown = rc->stragglers.slowdown >= 1.0 ? rc->stragglers.slowdown : 1.0;
    double tokens_per_step = (double)s->layout.global_batch * (double)s->model.seq_len;
    pr->n_steps = (long)ceil(s->run.tokens / tokens_per_step);
    pr->async = ck->mode == CKPT_ASYNC;

    /* checkpoint size and times */
    double state_bytes = ck->state_bytes;
    if (state_bytes < 0) {
        state_bytes = plan ? plan->checkpoint_state_bytes : 0;
        if (!(state_bytes > 0) && ck->policy != CKPT_NONE && ck->write_min < 0)
            return moe_error_input(err, s->file, "reliability.checkpoint.state_bytes", "\"auto\"",
                                   "a plan with checkpoint_state_bytes > 0, or a number of bytes");
    }
    if (ck->write_min < 0 && !(s->cluster.storage_GBps > 0) && state_bytes > 0)
        return bad(err, s, "cluster.storage_GBps", s->cluster.storage_GBps, "> 0");
    checkpoint_tier_times tt;
    checkpoint_tier_times_resolve(s, state_bytes, &tt);
    pr->write_s = tt.pfs_write_s;
    pr->snapshot_s = tt.snapshot_s;
    if (pr->async && !isfinite(pr->snapshot_s))
        return bad(err, s, "reliability.checkpoint.snapshot_GBps", ck->snapshot_GBps,
                   "> 0 (or cluster.pcie_GBps > 0)");
    pr->reload_s = pr->async ? pr->snapshot_s : pr->write_s;
    const ckpt_tiers_cfg *tc = &ck->tiers;
    pr->tiers = tc->enabled;
    if (pr->tiers) {
        if (!isfinite(tt.peer_step_slowdown) && tc->peer)
            return bad(err, s, "reliability.checkpoint.tiers.peer.GBps", tc->peer_GBps,
                       "less than the node's NIC bandwidth (rails x cluster.nic_gbps / 8), or a step_slowdown");
        pr->tier_on[TIER_HOST] = pr->tier_on[TIER_PFS] = 1;
        pr->tier_on[TIER_PEER] = tc->peer;
        pr->tier_on[TIER_NVME] = tc->nvme;
        const double w[N_TIERS] = {0, tt.peer_write_s, tt.nvme_write_s, tt.pfs_write_s};
        const double r[N_TIERS] = {tt.host_read_s, tt.peer_read_s, tt.nvme_read_s, tt.pfs_read_s};
        memcpy(pr->tier_write_s, w, sizeof w);
        memcpy(pr->tier_read_s, r, sizeof r);
        pr->pfs_every = tc->pfs_every > 1 ? tc->pfs_every : 1;
        pr->peer_slowdown = tc->peer ? tt.peer_step_slowdown : 1.0;
        pr->peer_offset = tt.peer_offset_nodes;
        pr->nodes = s->cluster.nodes;
        pr->host_survives_restart = tc->host_survives_restart;
    }

    /* recovery */
    const recovery_cfg *rv = &rc->recovery;
    pr->restart_s = rv->full_restart_min * 60.0;
    pr->swap_s = rv->spare_swap_s;
    pr->straggler_repair_s = rv->repair_h * 3600.0;
    pr->spare_pool = rv->hot_spare_fraction > 0
                         ? (int)floor(rv->hot_spare_fraction * s->cluster.nodes + 1e-9) : 0;
    pr->repair_slots = rv->repair_slots;

    /* failures: the job's MTBF under the scenario's failure model (the plan's M) */
    pr->mtbf_s = reliability_job_mtbf_h(s) * 3600.0;
    double share_total = 0;
    for (int c = 0; c < FAIL_NCLASSES; c++) share_total += rc->classes[c].share > 0 ? rc->classes[c].share : 0;
    int drawn = rc->failure_model == FMODEL_COMPONENTS || share_total > 0;
    pr->has_failures = rc->failure_trace[0] || (isfinite(pr->mtbf_s) && drawn);

    /* stragglers, spikes */
    pr->n_stragglers = rc->stragglers.fraction > 0
                           ? (int)lround(rc->stragglers.fraction * s->cluster.nodes) : 0;
    pr->straggler_horizon_s = step_clock_at(&pr->clock, (double)pr->n_steps);
    pr->detect_s = rc->stragglers.detect_min * 60.0;
    pr->spike_mean_steps = rc->loss_spikes.per_day > 0
                               ? (86400.0 / pr->step_s) / rc->loss_spikes.per_day : INF;
    pr->spike_action = rc->loss_spikes.action;
    pr->spike = rc->loss_spikes;
    pr->fp16 = s->precision.compute == DT_FP16;

    pr->max_s = s->run.max_days * 86400.0;
    pr->seed = s->seed;
    return 0;
}

/* Steps per checkpoint interval under the scenario's policy (0 = none). */
static long policy_steps(const scenario *s, const run_params *pr, double *tau_s) {
    double tau = checkpoint_policy_interval_s(s, pr->write_s, pr->mtbf_s);
    if (s->reliability.checkpoint.policy == CKPT_NONE) { *tau_s = INF; return 0; }
    long k = pr->n_steps;
    if (isfinite(tau)) {
        double kk = floor(tau / pr->step_s + 0.5);
        if (kk < (double)pr->n_steps) k = kk >= 1 ? (long)kk : 1;
    }
    *tau_s = (double)k * pr->step_s;
    return k;
}

/* ---- Monte Carlo and the interval search --------------------------------------------------------- */

typedef struct {
    double wall_s, useful_s, ettr, lost_s, recover_s, detect_s, ckpt_s, replicate_slow_s;
    double failures, restarts, swaps, stragglers, spikes, completed, shortfalls, correlated, timeouts;
    double by_source[FAILURE_MAX_SOURCES];
    double restores[N_TIERS], lost_by_tier_s[N_TIERS], restore_by_tier_s[N_TIERS];
    double spikes_skipped, spikes_clipped, spikes_rolled_back, spike_skip_s, spike_rollback_s;
} trial_sums;

static void run_trials(trial_ctx *cx, const run_params *pr, long k, int first_trial, int trials,
                       double *days, trial_sums *sum) {
    memset(sum, 0, sizeof *sum);
    for (int i = 0; i < trials; i++) {
        trial_totals tt;
        run_trial(cx, pr, k, first_trial + i, &tt);
        if (days) days[i] = tt.wall_s / 86400.0;
        sum->wall_s += tt.wall_s;
        sum->ettr += tt.wall_s > 0 ? tt.useful_s / tt.wall_s : 0;
        sum->lost_s += tt.lost_s;
        sum->recover_s += tt.recover_s;
        sum->detect_s += tt.detect_s;
        sum->ckpt_s += tt.ckpt_s;
        sum->shortfalls += tt.shortfalls;
        sum->correlated += tt.correlated;
        for (int j = 0; j < FAILURE_MAX_SOURCES; j++) sum->by_source[j] += tt.by_source[j];
        sum->replicate_slow_s += tt.replicate_slow_s;
        sum->spikes_skipped += tt.spikes_skipped;
        sum->spikes_clipped += tt.spikes_clipped;
        sum->spikes_rolled_back += tt.spikes_rolled_back;
        sum->spike_skip_s += tt.spike_skip_s;
        sum->spike_rollback_s += tt.spike_rollback_s;
        for (int j = 0; j < N_TIERS; j++) {
            sum->restores[j] += tt.restores[j];
            sum->lost_by_tier_s[j] += tt.lost_by_tier_s[j];
            sum->restore_by_tier_s[j] += tt.restore_by_tier_s[j];
        }
        sum->failures += tt.failures;
        sum->restarts += tt.restarts;
        sum->swaps += tt.swaps;
        sum->stragglers += tt.stragglers;
        sum->spikes += tt.spikes;
        sum->timeouts += tt.timeouts;
        sum->completed += tt.completed;
    }
}

typedef struct {
    int n;
    long k[64];
    double f[64];
} search_memo;

static double objective(trial_ctx *cx, const run_params *pr, int trials, search_memo *m, long k) {
    for (int i = 0; i < m->n; i++)
        if (m->k[i] == k) return m->f[i];
    trial_sums sum;
    run_trials(cx, pr, k, 0, trials, NULL, &sum);
    double f = sum.wall_s / trials;
    if (m->n < 64) { m->k[m->n] = k; m->f[m->n] = f; m->n++; }
    return f;
}

/* Candidate intervals in whole steps. Async: never shorter than the write — a shorter interval is
 * deferred to the write's end anyway (trainrun.c header), so it only adds events. */
static long min_search_steps(const run_params *pr) {
    double w = pr->write_s;
    if (pr->tiers) {   /* with the file system every n-th, the fast tiers' writes bound the interval */
        w = pr->pfs_every == 1 ? pr->write_s : 0;
        for (int i = TIER_PEER; i <= TIER_NVME; i++)
            if (pr->tier_on[i] && pr->tier_write_s[i] > w) w = pr->tier_write_s[i];
    }
    double k = pr->async ? ceil(w / pr->step_s - 1e-9) : 1;
    if (k < 1) k = 1;
    return k < (double)pr->n_steps ? (long)k : pr->n_steps;
}

static long steps_of(double x_ln_steps, const run_params *pr) {
    double kk = floor(exp(x_ln_steps) + 0.5);
    double k_min = (double)min_search_steps(pr);
    if (kk < k_min) kk = k_min;
    if (kk > (double)pr->n_steps) kk = (double)pr->n_steps;
    return (long)kk;
}

/* Least-squares quadratic in x = ln(k) over the memo points with |x - center| <= half_width.
 * Returns the vertex when the fit is convex and its vertex lies inside the points' span. */
static int fit_vertex(const search_memo *m, double center, double half_width, double *vertex) {
    int idx[64], n = 0;
    double lo = INF, hi = -INF;
    for (int i = 0; i < m->n; i++) {
        double x = log((double)m->k[i]);
        if (fabs(x - center) <= half_width + 1e-12) {
            idx[n++] = i;
            if (x < lo) lo = x;
            if (x > hi) hi = x;
        }
    }
    if (n < 4) return 0;
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, 3);
    gsl_vector *y = gsl_vector_alloc((size_t)n), *c = gsl_vector_alloc(3);
    gsl_matrix *cov = gsl_matrix_alloc(3, 3);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)n, 3);
    for (int j = 0; j < n; j++) {
        double x = log((double)m->k[idx[j]]) - center;   /* centred: better conditioned */
        gsl_matrix_set(X, (size_t)j, 0, 1.0);
        gsl_matrix_set(X, (size_t)j, 1, x);
        gsl_matrix_set(X, (size_t)j, 2, x * x);
        gsl_vector_set(y, (size_t)j, m->f[idx[j]]);
    }
    double chisq;
    int ok = gsl_multifit_linear(X, y, c, cov, &chisq, w) == 0;
    double c1 = gsl_vector_get(c, 1), c2 = gsl_vector_get(c, 2);
    gsl_multifit_linear_free(w);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    gsl_vector_free(y);
    gsl_matrix_free(X);
    if (!ok || !(c2 > 0)) return 0;
    double v = center - c1 / (2.0 * c2);
    if (v < lo || v > hi) return 0;
    *vertex = v;
    return 1;
}

static double search_interval_s(trial_ctx *cx, const run_params *pr_in, int trials, double tau_daly_s) {
    run_params pr = *pr_in;
    pr.max_s = 4.0 * pr_in->max_s;
    search_memo m = {0};
    double x_daly = log(tau_daly_s / pr.step_s), dx = M_LN2 / 3;
    /* 1. grid: Daly x 2^(j/3), j = -3..3, extended a point at a time past whichever end holds the
     *    minimum (async checkpoints, whose pause is not the write, can put it far from Daly's) */
    int lo = -3, hi = 3;
    for (int j = lo; j <= hi; j++) objective(cx, &pr, trials, &m, steps_of(x_daly + j * dx, &pr));
    for (int guard = 0; guard < 24; guard++) {
        int best = 0;
        for (int i = 1; i < m.n; i++)
            if (m.f[i] < m.f[best]) best = i;
        long k_lo = steps_of(x_daly + lo * dx, &pr), k_hi = steps_of(x_daly + hi * dx, &pr);
        int j;
        if (m.k[best] == k_lo && k_lo > min_search_steps(&pr)) j = --lo;
        else if (m.k[best] == k_hi && k_hi < pr.n_steps) j = ++hi;
        else break;
        objective(cx, &pr, trials, &m, steps_of(x_daly + j * dx, &pr));
    }
    int best = 0;
    for (int i = 1; i < m.n; i++)
        if (m.f[i] < m.f[best]) best = i;
    double x1 = log((double)m.k[best]);
    double v;
    if (fit_vertex(&m, x1, M_LN2 + 1e-9, &v)) x1 = v;
    /* 2. refine: 9 points within a factor 2^(1/4) of the first estimate, then fit again over
     *    every point within a factor sqrt(2) */
    for (int i = -4; i <= 4; i++) objective(cx, &pr, trials, &m, steps_of(x1 + i * M_LN2 / 16, &pr));
    double x2;
    if (!fit_vertex(&m, x1, M_LN2 / 2, &x2)) {
        best = 0;
        for (int i = 1; i < m.n; i++)
            if (m.f[i] < m.f[best]) best = i;
        x2 = log((double)m.k[best]);
    }
    return exp(x2) * pr.step_s;
}

static void fill_result(trainrun_result *out, const run_params *pr, const failure_process *fp,
                        const trial_sums *sum, double *days, int trials, double tau_s) {
    memset(out, 0, sizeof *out);
    double n = trials;
    gsl_sort(days, 1, (size_t)trials);
    out->trials = trials;
    out->ettr = sum->ettr / n;
    out->days_p5 = gsl_stats_quantile_from_sorted_data(days, 1, (size_t)trials, 0.05);
    out->days_p50 = gsl_stats_quantile_from_sorted_data(days, 1, (size_t)trials, 0.50);
    out->days_p95 = gsl_stats_quantile_from_sorted_data(days, 1, (size_t)trials, 0.95);
    out->days_mean = sum->wall_s / n / 86400.0;
    out->days_sd = trials > 1 ? gsl_stats_sd(days, 1, (size_t)trials) : 0;
    out->failures_mean = sum->failures / n;
    out->restarts_mean = sum->restarts / n;
    out->spare_swaps_mean = sum->swaps / n;
    out->lost_hours_mean = sum->lost_s / n / 3600.0;
    out->restart_hours_mean = sum->recover_s / n / 3600.0;
    out->checkpoint_hours_mean = sum->ckpt_s / n / 3600.0;
    out->detect_hours_mean = sum->detect_s / n / 3600.0;
    out->spare_shortfalls_mean = sum->shortfalls / n;
    out->correlated_failures_mean = sum->correlated / n;
    out->spikes_skipped_mean = sum->spikes_skipped / n;
    out->spikes_clipped_mean = sum->spikes_clipped / n;
    out->spikes_rolled_back_mean = sum->spikes_rolled_back / n;
    out->spike_skip_hours_mean = sum->spike_skip_s / n / 3600.0;
    out->spike_rollback_hours_mean = sum->spike_rollback_s / n / 3600.0;
    out->tiers = pr->tiers;
    out->replicate_slow_hours_mean = sum->replicate_slow_s / n / 3600.0;
    for (int j = 0; j < N_TIERS; j++) {
        out->tier_on[j] = pr->tier_on[j];
        out->tier_write_s[j] = pr->tier_write_s[j];
        out->tier_read_s[j] = pr->tier_read_s[j];
        out->restores_by_tier_mean[j] = sum->restores[j] / n;
        out->lost_hours_by_tier_mean[j] = sum->lost_by_tier_s[j] / n / 3600.0;
        out->restore_hours_by_tier_mean[j] = sum->restore_by_tier_s[j] / n / 3600.0;
    }
    out->n_sources = fp->n_sources;
    for (int j = 0; j < fp->n_sources; j++) {
        out->source_names[j] = fp->src[j].name;
        out->failures_by_source_mean[j] = sum->by_source[j] / n;
    }
    out->stragglers_mean = sum->stragglers / n;
    out->loss_spikes_mean = sum->spikes / n;
    out->collective_timeouts_mean = sum->timeouts / n;
    out->timeout_fraction = isfinite(pr->timeout_mean_steps) ? 1.0 / pr->timeout_mean_steps : 0;
    out->completed_fraction_pct = (int)lround(100.0 * sum->completed / n);
    out->reached_fraction = sum->completed / n;
    out->max_days = pr->max_s / 86400.0;
    out->checkpoint_interval_min = isfinite(tau_s) ? tau_s / 60.0 : NAN;
    out->checkpoint_write_s = pr->write_s;
    out->checkpoint_pause_s = pr->async ? pr->snapshot_s : pr->write_s;
    out->mtbf_cluster_h = pr->mtbf_s / 3600.0;
    out->spare_nodes = pr->spare_pool;
    out->steps = pr->n_steps;
    out->daly_interval_min = isfinite(pr->mtbf_s) ? daly_interval(pr->write_s, pr->mtbf_s) / 60.0 : NAN;
    out->best_interval_min = NAN;
    out->series_steps = pr->series_n;
    out->step_sequence = pr->series_n ? scn_step_sequence_names[pr->clock.n ? RUN_STEPS_CYCLE : RUN_STEPS_MEAN] : NULL;
    out->series_mean_s = pr->clock.n ? pr->clock.step_s : NAN;
    out->series_timed_out_steps = pr->clock.n_hangs;
}

static int simulate(const scenario *s, const plan_result *plan, const trainrun_steps *in, int first_trial,
                    int trials, int search, trainrun_event_fn fn, void *user, trainrun_result *out, moe_error *err) {
    run_params pr;
    int rc = resolve_params(s, plan, in, &pr, err);
    if (rc) { step_clock_free(&pr.clock); return rc; }
    failure_trace trace = {0, NULL};
    if (s->reliability.failure_trace[0] && (rc = load_trace(s, &trace, err)) != 0) {
        step_clock_free(&pr.clock);
        return rc;
    }
    trial_ctx cx;
    double *days = moe_xmalloc(sizeof(double) * (size_t)trials);
    rc = trial_ctx_init(&cx, &pr, s, trace.n || s->reliability.failure_trace[0] ? &trace : NULL, err);
    if (rc == 0 && !days) rc = moe_error_set(err, EXIT_RUNTIME, "trainrun: out of memory");
    if (rc == 0) {
        cx.fn = fn;
        cx.user = user;
        double tau_s;
        long k = policy_steps(s, &pr, &tau_s);
        trial_sums sum;
        run_trials(&cx, &pr, k, first_trial, trials, days, &sum);
        fill_result(out, &pr, &cx.fp, &sum, days, trials, tau_s);
        if (search && pr.has_failures && isfinite(pr.mtbf_s)) {
            cx.fn = NULL;
            double tau_d = daly_interval(pr.write_s, pr.mtbf_s);
            if (!(tau_d > pr.step_s)) tau_d = pr.step_s;
            out->best_interval_min = search_interval_s(&cx, &pr, trials, tau_d) / 60.0;
        }
    }
    free(days);
    trial_ctx_free(&cx);
    failure_trace_free(&trace);
    step_clock_free(&pr.clock);
    return rc;
}

int trainrun_simulate_steps(const scenario *s, const plan_result *plan, const trainrun_steps *in,
                            trainrun_result *out, moe_error *err) {
    return simulate(s, plan, in, 0, s->run.trials, 1, NULL, NULL, out, err);
}

int trainrun_simulate(const scenario *s, const plan_result *plan, double step_time_s,
                      trainrun_result *out, moe_error *err) {
    trainrun_steps in = {.step_time_s = step_time_s};
    return simulate(s, plan, &in, 0, s->run.trials, 1, NULL, NULL, out, err);
}

int trainrun_simulate_timeouts(const scenario *s, const plan_result *plan, double step_time_s,
                               double timeout_fraction, trainrun_result *out, moe_error *err) {
    trainrun_steps in = {.step_time_s = step_time_s, .timeout_fraction = timeout_fraction};
    return simulate(s, plan, &in, 0, s->run.trials, 1, NULL, NULL, out, err);
}

int trainrun_simulate_no_search(const scenario *s, const plan_result *plan, double step_time_s,
                                trainrun_result *out, moe_error *err) {
    trainrun_steps in = {.step_time_s = step_time_s};
    return simulate(s, plan, &in, 0, s->run.trials, 0, NULL, NULL, out, err);
}

int trainrun_trial_events(const scenario *s, const plan_result *plan, double step_time_s, int trial,
                          trainrun_event_fn fn, void *user, trainrun_result *out, moe_error *err) {
    trainrun_steps in = {.step_time_s = step_time_s};
    return simulate(s, plan, &in, trial, 1, 0, fn, user, out, err);
}

int trainrun_trial_events_timeouts(const scenario *s, const plan_result *plan, double step_time_s,
                                   double timeout_fraction, int trial, trainrun_event_fn fn, void *user,
                                   trainrun_result *out, moe_error *err) {
    trainrun_steps in = {.step_time_s = step_time_s, .timeout_fraction = timeout_fraction};
    return simulate(s, plan, &in, trial, 1, 0, fn, user, out, err);
}

int trainrun_trial_events_steps(const scenario *s, const plan_result *plan, const trainrun_steps *in, int trial,
                                trainrun_event_fn fn, void *user, trainrun_result *out, moe_error *err) {
    return simulate(s, plan, in, trial, 1, 0, fn, user, out, err);
}

static void add_number(cJSON *obj, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(obj, key, v);
    else cJSON_AddNullToObject(obj, key);
}

void trainrun_result_to_json(const trainrun_result *r, cJSON *obj) {
    add_number(obj, "trials", r->trials);
    add_number(obj, "ettr", r->ettr);
    add_number(obj, "days_p5", r->days_p5);
    add_number(obj, "days_p50", r->days_p50);
    add_number(obj, "days_p95", r->days_p95);
    add_number(obj, "days_mean", r->days_mean);
    add_number(obj, "days_sd", r->days_sd);
    add_number(obj, "failures_mean", r->failures_mean);
    cJSON *by = cJSON_AddObjectToObject(obj, "failures_by_cause");
    for (int j = 0; j < r->n_sources; j++) add_number(by, r->source_names[j], r->failures_by_source_mean[j]);
    add_number(obj, "correlated_failures_mean", r->correlated_failures_mean);
    add_number(obj, "spare_shortfalls_mean", r->spare_shortfalls_mean);
    add_number(obj, "detect_hours_mean", r->detect_hours_mean);
    if (r->tiers) {
        cJSON *tiers = cJSON_AddObjectToObject(obj, "tiers");
        for (int j = 0; j < N_TIERS; j++) {
            if (!r->tier_on[j]) continue;
            cJSON *t = cJSON_AddObjectToObject(tiers, CHECKPOINT_TIER_NAMES[j]);
            add_number(t, "write_s", r->tier_write_s[j]);
            add_number(t, "read_s", r->tier_read_s[j]);
            add_number(t, "restores_mean", r->restores_by_tier_mean[j]);
            add_number(t, "lost_hours_mean", r->lost_hours_by_tier_mean[j]);
            add_number(t, "restore_hours_mean", r->restore_hours_by_tier_mean[j]);
        }
        add_number(obj, "replication_slowdown_hours_mean", r->replicate_slow_hours_mean);
    }
    add_number(obj, "restarts_mean", r->restarts_mean);
    add_number(obj, "spare_swaps_mean", r->spare_swaps_mean);
    add_number(obj, "lost_hours_mean", r->lost_hours_mean);
    add_number(obj, "checkpoint_interval_min", r->checkpoint_interval_min);
    add_number(obj, "best_interval_min", r->best_interval_min);
    add_number(obj, "daly_interval_min", r->daly_interval_min);
    add_number(obj, "completed_fraction_pct", r->completed_fraction_pct);
    add_number(obj, "reached_fraction", r->reached_fraction);
    add_number(obj, "max_days", r->max_days);
    add_number(obj, "restart_hours_mean", r->restart_hours_mean);
    add_number(obj, "checkpoint_hours_mean", r->checkpoint_hours_mean);
    add_number(obj, "stragglers_mean", r->stragglers_mean);
    add_number(obj, "loss_spikes_mean", r->loss_spikes_mean);
    add_number(obj, "collective_timeouts_mean", r->collective_timeouts_mean);
    add_number(obj, "step_timeout_fraction", r->timeout_fraction);
    cJSON *sp = cJSON_AddObjectToObject(obj, "loss_spikes");
    add_number(sp, "skipped_mean", r->spikes_skipped_mean);
    add_number(sp, "clipped_mean", r->spikes_clipped_mean);
    add_number(sp, "rolled_back_mean", r->spikes_rolled_back_mean);
    add_number(sp, "skip_hours_mean", r->spike_skip_hours_mean);
    add_number(sp, "rollback_hours_mean", r->spike_rollback_hours_mean);
    add_number(obj, "checkpoint_write_s", r->checkpoint_write_s);
    add_number(obj, "checkpoint_pause_s", r->checkpoint_pause_s);
    add_number(obj, "mtbf_cluster_h", r->mtbf_cluster_h);
    add_number(obj, "spare_nodes", r->spare_nodes);
    add_number(obj, "steps", (double)r->steps);
    if (r->step_sequence) {   /* routing.steps > 1: how the run took the step level's series */
        cJSON *sq = cJSON_AddObjectToObject(obj, "step_sequence");
        cJSON_AddStringToObject(sq, "rule", r->step_sequence);
        add_number(sq, "series_steps", r->series_steps);
        add_number(sq, "series_mean_s", r->series_mean_s);
        add_number(sq, "series_timed_out_steps", r->series_timed_out_steps);
    }
}
