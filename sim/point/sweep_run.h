/* sweep_run.h — `simrun SCENARIO`: every point of a scenario's sweep (or of a layout search) validated,
 * evaluated in worker processes, stored in DIR/results.db and exported to results.csv/results.json.
 *
 * Never mixed: a folder holds the points of one run definition (results_db.h); another is refused.
 * Never aborted by one point: every point is validated before any work; a point invalid for its
 * combination is stored 'infeasible' with its reason (--strict: exit 2 before any work), a point
 * that fails at run time 'error' (the run goes on, exits 1, and --resume retries it). Too large a
 * sweep is refused before anything is written, with its size and the disk it would need. */
#ifndef MOESIM_SWEEP_RUN_H
#define MOESIM_SWEEP_RUN_H

#include <stdio.h>
#include "sim/base/errors.h"

/* sweep_run_opts.top: simulate every layout that fits at step level (`simrun search --top all`). */
#define SEARCH_TOP_ALL 0

/* Sweeps larger than this are refused unless --max-points raises it. */
#define SWEEP_MAX_POINTS_DEFAULT 2000000

typedef struct {
    const char *scenario_file;
    const char *out_dir;        /* NULL: the scenario's output.dir */
    int levels;                 /* LEVEL_* mask; 0: each point's output.levels */
    int fidelity;               /* fidelity_kind, or -1: the scenario's */
    int reproducible;
    int jobs;
    int shard_i, shard_n;       /* evaluate slice shard_i of shard_n (0/1: all) */
    int resume, force, strict;
    long max_points;            /* 0: SWEEP_MAX_POINTS_DEFAULT */
    int search, top;            /* --search: rank every valid layout, simulate the best `top`
                                   (SEARCH_TOP_ALL: every layout that fits) */
    int json;                   /* results.json at any size */
    int csv;                    /* results.csv at any size */
    int quiet;
    double progress_every_s;    /* progress lines when stderr is not a terminal (0: 30 s) */
    double commit_every_s;      /* results.db batch interval in seconds, used when commit_set (else 1 s) */
    int commit_set;             /* commit_every_s was given (0 is a valid interval: every point) */
} sweep_run_opts;

/* Run it; the table and the summary go to `out` (unless quiet). Returns the exit code. */
int sweep_run(const sweep_run_opts *o, FILE *out, moe_error *err);

/* Bytes on disk per point at these levels (results.db plus results.csv), measured on this project's
 * scenarios; the refusal of a large sweep quotes it. */
double sweep_bytes_per_point(int levels);

#endif
