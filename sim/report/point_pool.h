/* point_pool.h — evaluate sweep points in worker processes.
 *
 * Why processes: SimGrid keeps one engine and one platform per process (DESIGN.md), so points with
 * different clusters cannot share one; separate processes also use every core. Each finished point is
 * one file (points/point-NNNNNN.json) written atomically, so an interrupted sweep resumes without
 * losing or repeating a finished point, and shards of one sweep merge by concatenation. */
#ifndef MOESIM_POINT_RUNNER_H
#define MOESIM_POINT_RUNNER_H

#include "sim/base/errors.h"

struct cJSON;

/* Evaluate point `id`; returns the point object (caller frees) or NULL with err set. Runs in a child. */
typedef struct cJSON *(*point_fn)(int id, void *ctx, moe_error *err);

typedef struct {
    const char *points_dir;   /* where point files go */
    int jobs;                 /* worker processes at once (>= 1) */
    int resume;               /* skip points whose file already exists */
    int progress;             /* print progress on stderr (points done, rate, time left) */
    int chunk;                /* points per worker process (<= 1: one process per point, needed when
                                 points may build different SimGrid platforms; larger chunks save
                                 the fork for cheap plan/run-level points) */
} point_run_opts;

/* Evaluate the given point ids. Returns 0 when every point succeeded; otherwise the worst exit code
 * of the failed points, with err describing the first failure (its message names the point). */
int run_points(const int *ids, int n, point_fn fn, void *ctx, const point_run_opts *opt, moe_error *err);

/* Path of a point's file. */
void point_file_path(const char *points_dir, int id, char *out, unsigned cap);

/* Read every point-*.json of the given folders, sorted by id (duplicates with identical content are
 * merged, conflicting duplicates are an error). Returns a JSON array (caller frees) or NULL. */
struct cJSON *collect_points(const char *const *dirs, int n_dirs, moe_error *err);

#endif
