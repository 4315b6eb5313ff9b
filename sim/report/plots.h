/* plots.h — gnuplot figures (PNG and SVG) from a results document.
 *
 * Which figures are drawn depends on what the sweep varies and which levels were computed:
 *   ckpt_interval   run.days_p50 (p5..p95 bars) vs reliability.checkpoint.interval_min, with the
 *                   Young and Daly intervals marked                       (sweep over the interval)
 *   hot_spares      run.ettr, and run.days_p50 with p5..p95 bars, vs reliability.recovery.
 *                   hot_spare_fraction                                   (sweep over spares)
 *   scaling         tokens/s/GPU vs GPU count                              (sweep over cluster.nodes)
 *   step_breakdown  stacked compute / exposed comm / bubble / optimizer seconds per point
 *                   (step level, else plan level; 2..60 points whose breakdowns are not all equal)
 *   top_layouts     the same for the 20 fastest points that fit            (sweeps over 60 points)
 *   step_series     the step time of each simulated step, one line per point, and the most routed
 *                   expert's share of the tokens (routing.steps > 1; also for a single point; the
 *                   first 12 points with steps, the log says when there are more)
 * Every title names the scenario. Each figure is FIG.png and FIG.svg in DIR/plots/, with FIG.dat (the
 * data) and FIG.gp (the script, which finds its data beside itself: `gnuplot DIR/plots/FIG.gp`
 * redraws from any directory). Files appear atomically (drawn under a temporary name). */
#ifndef MOESIM_PLOTS_H
#define MOESIM_PLOTS_H

#include <stdio.h>

#include "sim/base/errors.h"

struct cJSON;

/* Draws every applicable figure into results_dir/plots; *n_written receives how many. With `log`,
 * one line per figure drawn (what it shows) and why a figure was not drawn. Runtime error (exit 1)
 * when gnuplot is missing or fails. */
int plots_write(const char *results_dir, const struct cJSON *doc, FILE *log, int *n_written, moe_error *err);

/* `simrun optimize`'s figure from its optimize.json document: days to target vs GPU-hours (idle
 * spares included), one series per tier choice, the Pareto front as a line (pareto.png/svg/dat/gp). */
int plots_pareto(const char *dir, const struct cJSON *optimize_doc, moe_error *err);

#endif
