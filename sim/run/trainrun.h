/* trainrun.h — the `run` level: weeks of training replayed as a discrete-event simulation with
 * failures, checkpoints, hot spares, stragglers and loss spikes; Monte Carlo over seeded trials.
 *
 * The semantics (what a checkpoint protects, what a failure costs, what happens to a failure that
 * strikes during a recovery, ...) are written out at the top of sim/run/trainrun.c. */
#ifndef MOESIM_TRAINRUN_H
#define MOESIM_TRAINRUN_H

#include "sim/scenario/scenario.h"
#include "sim/plan/plan.h"
#include "sim/run/failures.h"

struct cJSON;

/* Checkpoint tiers (reliability.checkpoint.tiers; times: sim/plan/checkpoint_write.h). */
typedef enum { TIER_HOST = 0, TIER_PEER, TIER_NVME, TIER_PFS, N_TIERS } checkpoint_tier;
extern const char *const CHECKPOINT_TIER_NAMES[N_TIERS];   /* "host", "peer", "nvme", "pfs" */

typedef struct {
    int trials;
    double ettr;                       /* effective training time ratio (mean over trials):
                                          ideal compute time of the work kept / wall time */
    double days_p5, days_p50, days_p95, days_mean;
    double days_sd;                    /* standard deviation over trials */
    double failures_mean, restarts_mean, spare_swaps_mean, lost_hours_mean;
    double checkpoint_interval_min;    /* the interval the policy chose (rounded to whole steps) */
    double best_interval_min;          /* found by search over the interval (NAN: no failures) */
    double daly_interval_min;          /* for comparison (NAN: no failures) */
    int completed_fraction_pct;        /* trials that reached run.tokens before run.max_days */
    double reached_fraction;           /* the same, as a fraction (0..1) */
    double max_days;                   /* the cap a trial that never reaches run.tokens stops at */
    /* breakdowns (means over trials) and the inputs the run level derived */
    double restart_hours_mean;         /* in recovery: full restarts, spare swaps, spike reloads
                                          (after detection) */
    double detect_hours_mean;          /* hung between failures and their detection */
    double spare_shortfalls_mean;      /* failures that needed more spares than were free (their
                                          blast radius, or spares still in repair): full restarts */
    double correlated_failures_mean;   /* follow-on failures (reliability.correlated), in failures_mean */
    int n_sources;                     /* failure classes or component kinds */
    const char *source_names[FAILURE_MAX_SOURCES];
    /* checkpoint tiers (tiers = 0: off, the rest unset): per tier, whether it is on, its write and
     * read times, and means over trials of the restores that read it (failures and spike rollbacks),
     * the compute those rolled back, and the time spent reading it */
    int tiers;
    int tier_on[N_TIERS];
    double tier_write_s[N_TIERS], tier_read_s[N_TIERS];
    double restores_by_tier_mean[N_TIERS], lost_hours_by_tier_mean[N_TIERS];
    double restore_hours_by_tier_mean[N_TIERS];
    double replicate_slow_hours_mean;  /* training time lost to replication sharing the NICs */
    /* loss spikes by the defence that stopped them (reliability.loss_spikes.action; "skip" counts
     * as skipped, "rollback" as rolled back) and what each cost: the discarded steps of the
     * skipped; the rolled-back compute and the reloads of the rest (clipping costs nothing) */
    double spikes_skipped_mean, spikes_clipped_mean, spikes_rolled_back_mean;
    double spike_skip_hours_mean, spike_rollback_hours_mean;
    double failures_by_source_mean[FAILURE_MAX_SOURCES];   /* failures_mean by class / component */
    double checkpoint_hours_mean;      /* training stopped for checkpoints (sync write / snapshot) */
    double stragglers_mean, loss_spikes_mean;
    /* steps whose collective timed out (faults.collective_timeout_s; the step level's
     * timeout_fraction of steps): each hangs the job for the timeout, then restarts it in place */
    double collective_timeouts_mean;
    double timeout_fraction;
    double checkpoint_write_s;         /* delta: one checkpoint's write to the file system */
    double checkpoint_pause_s;         /* training pause per checkpoint (sync: write; async: snapshot) */
    double mtbf_cluster_h;             /* M used by the young/daly policies */
    int spare_nodes;                   /* hot-spare pool size */
    long steps;                        /* steps to run.tokens */
    /* routing.steps > 1: the rule the run took the step level's series by (run.step_sequence:
     * "cycle" replays it in order, "mean" its completed steps' mean with Poisson timeouts; NULL: no
     * series), its length, and with "cycle" its mean step time and its steps that timed out */
    const char *step_sequence;
    int series_steps;
    double series_mean_s;              /* NAN unless "cycle" */
    int series_timed_out_steps;
} trainrun_result;

/* The step times a run replays: one (step_time_s; timeout_fraction of the steps time out, Poisson in
 * steps), and with routing.steps > 1 the step level's series. run.step_sequence decides which:
 * "cycle" (the default) replays the series in order (sim/run/step_clock.h: step i of the run takes
 * series step i mod n's time; a step that timed out fails the job where it happens; steps redone
 * after a rollback take their own index's time again), "mean" takes step_time_s and
 * timeout_fraction (the mean of the series' completed steps, and its share of timed-out steps). */
typedef struct {
    double step_time_s;
    double timeout_fraction;
    int series_n;                          /* 0 or 1: no series */
    const double *series_s;                /* [series_n] the run's time of each step: a timed-out
                                              step's until its hang (step_result_series_run_s) */
    const unsigned char *series_timed_out; /* [series_n] 1: the step's collective timed out */
    double timeout_detect_s;               /* a timed-out step's hang until the job fails (the step
                                              level's step_result_detect_s); <= 0: faults.collective_timeout_s */
} trainrun_steps;
int trainrun_simulate_steps(const scenario *s, const plan_result *plan, const trainrun_steps *in,
                            trainrun_result *out, moe_error *err);

/* step_time_s: from the step level when computed, else the plan's. `plan` is read only for
 * checkpoint_state_bytes when reliability.checkpoint.state_bytes is "auto" (may be NULL otherwise). */
int trainrun_simulate(const scenario *s, const plan_result *plan, double step_time_s,
                      trainrun_result *out, moe_error *err);
void trainrun_result_to_json(const trainrun_result *r, struct cJSON *obj);

/* The same for a step that times out in `timeout_fraction` of the steps (step.timeout_fraction): such
 * a step runs step_time_s, then hangs until NCCL's watchdog fires faults.collective_timeout_s later,
 * and the job restarts in place from its last checkpoint (no node is lost). Timeouts are Poisson in
 * steps processed (rework included), mean 1 / timeout_fraction steps. */
int trainrun_simulate_timeouts(const scenario *s, const plan_result *plan, double step_time_s,
                               double timeout_fraction, trainrun_result *out, moe_error *err);

/* The same with the interval search switched off (best_interval_min = NAN): the Monte Carlo alone,
 * for sweeps that only need the policy's result, and for timing it. */
int trainrun_simulate_no_search(const scenario *s, const plan_result *plan, double step_time_s,
                                trainrun_result *out, moe_error *err);

/* ---- one trial, event by event (tests, timelines) ---------------------------------------------- */
typedef enum {
    TR_EV_FAILURE = 0,     /* cls: failure class or component kind; rank; value: nodes taken down */
    TR_EV_STRAGGLER_ONSET, TR_EV_STRAGGLER_DETECTED,
    TR_EV_LOSS_SPIKE,      /* cls: 0 skipped (monitor), 1 tamed by clipping, 2 rolled back */
    TR_EV_ROLLBACK,        /* value: compute seconds rolled back */
    TR_EV_RECOVERY_START,  /* value: recovery seconds incl. detection; kind: 1 reload, 2 spare swap,
                              3 full restart */
    TR_EV_RESUME,
    TR_EV_CHECKPOINT_START, TR_EV_CHECKPOINT_DONE,   /* value: steps the checkpoint protects */
    TR_EV_DONE, TR_EV_CUTOFF,                         /* run.tokens reached / run.max_days hit */
    TR_EV_COLLECTIVE_TIMEOUT                          /* value: the timeout (the hang before detection) */
} trainrun_event_kind;

typedef struct {
    double time_s;
    trainrun_event_kind kind;
    int cls, rank, recovery_kind;
    double value;
} trainrun_event;

typedef void (*trainrun_event_fn)(const trainrun_event *ev, void *user);

/* Run trial `trial` (the same trial trainrun_simulate runs as its trial `trial`) and report every
 * event to `fn`. `out` receives the run's summary over this one trial. */
int trainrun_trial_events(const scenario *s, const plan_result *plan, double step_time_s, int trial,
                          trainrun_event_fn fn, void *user, trainrun_result *out, moe_error *err);
int trainrun_trial_events_timeouts(const scenario *s, const plan_result *plan, double step_time_s,
                                   double timeout_fraction, int trial, trainrun_event_fn fn, void *user,
                                   trainrun_result *out, moe_error *err);
int trainrun_trial_events_steps(const scenario *s, const plan_result *plan, const trainrun_steps *in, int trial,
                                trainrun_event_fn fn, void *user, trainrun_result *out, moe_error *err);

#endif
