/* optimize.h — `simrun optimize`: hot-spare fraction, checkpoint interval and checkpoint tiers
 * chosen together.
 *
 * Every combination of the grid is one run-level Monte Carlo (trainrun_simulate_no_search, the
 * scenario's trials and seed: common random numbers across the grid) at one step time: the plan's,
 * the step simulation's once (`step_level`), or a given one. Two objectives, both minimised:
 *   days        the mean wall-clock days to the token target;
 *   GPU-hours   (job nodes + hot spares) x GPUs per node x 24 x days: idle spares are paid for.
 * Spares shorten the days (a swap instead of a full restart) and cost GPU-hours; for a fixed spare
 * pool the two objectives agree, so the Pareto front — the points no other point beats or equals
 * on both — runs across spare fractions, each with its best interval and tier.
 *
 * Tier choices (reliability.checkpoint.tiers): "pfs" — tiers off, the scenario's mode; "host" — tiers
 * on, host memory and the file system; "peer", "nvme", "peer+nvme" — with those tiers too. Every
 * choice but "pfs" sets the checkpoint mode to async (tiers copy the host snapshot). */
#ifndef MOESIM_OPTIMIZE_H
#define MOESIM_OPTIMIZE_H

#include <stdio.h>

#include "sim/scenario/scenario.h"

#define OPT_MAX_VALUES 32

typedef enum { OPT_TIER_PFS = 0, OPT_TIER_HOST, OPT_TIER_PEER, OPT_TIER_NVME, OPT_TIER_PEER_NVME,
               OPT_N_TIER_CHOICES } optimize_tier_choice;
extern const char *const OPTIMIZE_TIER_NAMES[OPT_N_TIER_CHOICES + 1];   /* NULL-terminated */

typedef enum { OPT_DAYS = 0, OPT_GPU_HOURS } optimize_objective;
extern const char *const OPTIMIZE_OBJECTIVE_NAMES[3];                   /* "days", "gpu-hours" */

typedef struct {
    int n_spares, n_intervals, n_tiers;
    double spares[OPT_MAX_VALUES];          /* reliability.recovery.hot_spare_fraction values */
    double intervals_min[OPT_MAX_VALUES];   /* fixed checkpoint intervals */
    optimize_tier_choice tiers[OPT_N_TIER_CHOICES];
    optimize_objective objective;           /* which best the table leads with */
    int step_level;                         /* step time from the step simulation (else the plan) */
    double step_time_s;                     /* > 0: this step time instead */
    const char *out_dir;                    /* optimize.json, optimize.csv, pareto.{png,svg,dat,gp} */
    int plots;                              /* draw pareto.png/svg (gnuplot) */
    int quiet;
} optimize_opts;

/* The defaults: spares 0, 0.5%, 1%, 2%, 4%; intervals 5 to 120 min; tiers pfs, host, peer. */
void optimize_defaults(optimize_opts *o);

/* Evaluate the grid on scenario `s` (one validated point: no sweep), write the files, print the
 * Pareto front and the best combination by each objective to `out`. 0, or the error's exit code. */
int optimize_run(const scenario *s, const optimize_opts *o, FILE *out, moe_error *err);

#endif
