/* point_pool.h — evaluate sweep points in worker processes that stream their results to the parent.
 *
 * Why processes: SimGrid keeps one engine and one platform per process (DESIGN.md), so points with
 * different clusters cannot share one; separate processes also use every core. A worker evaluates a
 * contiguous range of point ids and writes one record per point into its pipe; only the parent writes
 * the results (results_db.h), so a worker never leaves anything behind.
 *
 * Workers die with their parent: each asks the kernel for SIGKILL when the parent goes
 * (prctl(PR_SET_PDEATHSIG)), so a parent killed with SIGKILL takes them along; the workers stay in
 * the parent's process group, so Ctrl-C on a terminal or `kill -- -PGID` reaches all at once; and on
 * SIGINT, SIGTERM or SIGHUP the parent kills its workers, keeps what they had sent and returns
 * 128 + the signal. A worker that dies on a point (a crash, the OOM killer) costs that point only: its
 * range is retried one point at a time and the point that kills a worker is reported lost. */
#ifndef MOESIM_POINT_POOL_H
#define MOESIM_POINT_POOL_H

#include <stddef.h>
#include <stdint.h>
#include "sim/base/errors.h"
#include "sim/report/results_record.h"

/* In a worker: evaluate point `id` and append its record to `out` (append nothing: no record). */
typedef void (*point_fn)(long id, void *ctx, record_buf *out);
/* In the parent: the record of point `id`, or (rec == NULL) a point whose worker died, `lost` saying
 * how. Returns 0 to go on; non-zero (err set) stops the run, e.g. when the database cannot be written. */
typedef int (*point_sink)(long id, const void *rec, size_t len, const char *lost, void *ctx, moe_error *err);

typedef enum { PROGRESS_NONE, PROGRESS_LIVE, PROGRESS_LINES } progress_mode;

typedef struct {
    int jobs;                  /* worker processes at once (>= 1) */
    long chunk;                /* points per worker process (1: a process per point, as step-level
                                  points need; cheap plan/run-level points share one) */
    const uint8_t *skip;       /* bit (id - lo) set: nothing to do for that point (may be NULL) */
    int exact;                 /* send each record as soon as it is made (slow points) */
    progress_mode progress;    /* LIVE: one line redrawn on a terminal; LINES: a line every
                                  progress_every_s seconds (logs) */
    double progress_every_s;
    const char *what;          /* "evaluated", "validated": the progress line's verb */
    /* extra text for the progress line ("12 infeasible"), or NULL */
    void (*status)(void *ctx, char *buf, size_t cap);
} point_run_opts;

/* Evaluate every point of [lo, hi) not in opt->skip. Returns 0, the sink's error, or 128 + the signal
 * that interrupted the run (err says how many points were done). */
int run_points(long lo, long hi, point_fn fn, point_sink sink, void *ctx, const point_run_opts *opt, moe_error *err);

/* In a worker, while evaluating a long point: progress inside it ("ops 1.2M of 4.4M"), shown on the
 * parent's progress line (sent at most twice a second; a no-op outside a worker). */
void point_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
