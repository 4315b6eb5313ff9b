/* plots.h — gnuplot figures (PNG and SVG) from a results document.
 *
 * Which figures are drawn depends on what the sweep varies and which levels were computed:
 *   ckpt_interval   run.days_p50 (p5..p95 bars) vs reliability.checkpoint.interval_min, with the
 *                   Young and Daly intervals marked                       (sweep over the interval)
 *   hot_spares      run.ettr vs reliability.recovery.hot_spare_fraction    (sweep over spares)
 *   step_breakdown  stacked compute / exposed comm / bubble / optimizer seconds per point
 *                   (step level, else plan level; any sweep with 2..60 points)
 *   scaling         tokens/s/GPU vs GPU count                              (sweep over cluster.nodes)
 * Each figure is FIG.png and FIG.svg in the output folder, plus FIG.dat (the data) and FIG.gp (the
 * script) so a user can restyle it. Files appear atomically (drawn under a temporary name). */
#ifndef MOESIM_PLOTS_H
#define MOESIM_PLOTS_H

#include "sim/base/errors.h"

struct cJSON;

/* Draws every applicable figure into `dir`; *n_written receives how many. Runtime error (exit 1)
 * when gnuplot is missing or fails. */
int plots_write(const char *dir, const struct cJSON *doc, int *n_written, moe_error *err);

/* `simrun optimize`'s figure from its optimize.json document: days to target vs GPU-hours (idle
 * spares included), one series per tier choice, the Pareto front as a line (pareto.png/svg/dat/gp). */
int plots_pareto(const char *dir, const struct cJSON *optimize_doc, moe_error *err);

#endif
