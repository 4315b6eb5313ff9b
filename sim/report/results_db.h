/* results_db.h — a sweep's results in one SQLite database per output folder (DIR/results.db).
 *
 * Tables (README "results.db" documents them for users):
 *   run(fingerprint, version, scenario, sweep, options, n_points, created_utc) — one row. The
 *     fingerprint is a hash of the run's definition {"version", "scenario", "sweep", "options"}: the
 *     program version, the resolved base scenario, the sweep definition and the options that change
 *     results (levels, fidelity, reproducible, search). A database only ever holds points of one
 *     definition.
 *   points(id, status, reason, scenario_patch, "sweep.layout.tp", ..., "plan.step_time_s", ...) — one
 *     row per point: status 'ok' / 'infeasible' / 'error' with its reason, every results key as a
 *     column named by its dotted path, and the point's resolved scenario as an RFC 7396 patch of
 *     run.scenario (json_patch(run.scenario, scenario_patch) is the whole of it).
 *   columns(name, path, kind, first_id, pos) — every results column: its JSON path, its kind
 *     (number, bool, string or json: arrays and values of mixed kinds, as JSON text), and where it
 *     first appears; the exports order columns by (first_id, pos), so the order depends only on the
 *     points stored, never on the order in which workers finished them.
 *   step_series(point_id, step, step_time_s, timed_out, max_expert_share, max_expert,
 *     rank_load_max_mean, busiest_ep_rank, hot_share, max_collective_wait_s) — one row per point per
 *     simulated step (routing.steps > 1: the point's step.steps.series arrays, step_sim.h), primary key
 *     (point_id, step) (WITHOUT ROWID: the key is the index), written in the point's transaction; a
 *     replaced point's rows are replaced with it. Added in schema 2.
 * PRAGMA user_version is the schema: RESULTS_DB_SCHEMA_VERSION (0 before step_series; such a database
 * gains the table when opened for writing, and readers of the series say it lacks it).
 * Writes go in batched transactions (WAL): a killed process loses at most the uncommitted batch, and
 * the database stays readable and resumable (also after a full disk). */
#ifndef MOESIM_RESULTS_DB_H
#define MOESIM_RESULTS_DB_H

#include <stdint.h>
#include <stdio.h>
#include "sim/base/errors.h"

struct cJSON;
typedef struct results_db results_db;

/* results.json is exported for databases of at most this many points (or on request): beyond it a
 * document is hundreds of MB that results.db and results.csv hold better (SQL, pandas). */
#define RESULTS_JSON_MAX_POINTS 20000
/* results.csv likewise up to this many points (or on request): a million-point sweep's CSV is another
 * 0.8 GB beside its 0.6 GB database, which SQL (or pandas.read_sql) reads directly. */
#define RESULTS_CSV_MAX_POINTS 250000

/* PRAGMA user_version of the databases this build writes (2: the step_series table). */
#define RESULTS_DB_SCHEMA_VERSION 2

/* How a run treats an existing DIR/results.db. */
typedef enum {
    DB_FRESH,    /* a new run: an existing database of the same definition is replaced, another refused */
    DB_RESUME,   /* keep the points of the same definition; another definition is refused */
    DB_FORCE,    /* replace whatever results are in the folder */
} results_db_mode;

/* The fingerprint (16 hex digits) of a definition (FNV-1a 64 over its unformatted JSON). */
void results_fingerprint(const struct cJSON *definition, char out[17]);

/* Open DIR/results.db for a run of `definition` (caller keeps it) over `n_points` points (the whole
 * sweep, for merge's coverage check). Refusals (exit 2) say what to do and, for another definition,
 * name its first differing field. Before anything is written, the folder's exports (results.json,
 * results.csv) are removed: they would be stale beside the new points; so are the temporaries of
 * those exports that killed runs left (atomic_file_remove_dead_temps: results.json.tmp.PID.N of a
 * PID that is gone). */
int results_db_open_run(const char *dir, const struct cJSON *definition, long n_points, results_db_mode mode,
                        results_db **out, moe_error *err);
/* Open an existing database (a folder holding results.db, or the file itself) to read or merge. */
int results_db_open_existing(const char *path, int writable, results_db **out, moe_error *err);
/* Commit the open batch after `seconds` (default 1 s; 0: after every point). A killed run loses at
 * most that much work; a shorter interval costs an fsync per batch. Negative: unchanged. */
void results_db_set_commit_every(results_db *db, double seconds);
/* Commit and close. Returns the commit's error (a full disk shows here too). */
int results_db_close(results_db *db, moe_error *err);
/* Close without committing the open batch (after a failure). */
void results_db_abandon(results_db *db);
const char *results_db_path(const results_db *db);

/* The stored definition (caller frees), fingerprint, points of the whole sweep. */
struct cJSON *results_db_definition(results_db *db);
const char *results_db_fingerprint(const results_db *db);
long results_db_n_points(const results_db *db);
/* A refusal message for two different definitions: the first differing field and both values. */
void results_definition_diff(const struct cJSON *stored, const struct cJSON *now, char *out, size_t cap);

/* Store point `id` (a record of results_record.h). merge = 0: a new point (replaces an earlier
 * attempt); merge = 1: an identical point already there is kept once, a different one is an error
 * (exit 2) naming the point and the first differing column, except that a stored 'error' gives way to
 * the new record and a new 'error' never replaces a stored result. Commits every few thousand points
 * or once a second. */
int results_db_put(results_db *db, long id, const void *rec, size_t len, int merge, moe_error *err);
int results_db_commit(results_db *db, moe_error *err);

/* Bit (id - lo) of `done` (caller zeroes (hi - lo + 7) / 8 bytes) set for every stored point of
 * [lo, hi) that needs no more work: status ok or infeasible. Returns how many. */
long results_db_done(results_db *db, long lo, long hi, uint8_t *done, moe_error *err);
/* Points of [lo, hi) by status. */
int results_db_counts(results_db *db, long lo, long hi, long *ok, long *infeasible, long *error, moe_error *err);
/* Ids of [0, n_points) without an ok or infeasible point, as "3, 17-20 (5 points)" (at most `cap`
 * bytes). Returns how many. */
long results_db_missing(results_db *db, char *desc, size_t cap, moe_error *err);
/* The first `max` points of status s ("error", "infeasible") as "id: reason" lines. */
void results_db_reasons(results_db *db, const char *status, int max, FILE *out);
long results_db_count_all(results_db *db);

/* One point's step series from the step_series table, in step order; -1 in max_expert /
 * busiest_ep_rank where unknown. */
typedef struct {
    int n;
    double *step_time_s, *max_expert_share, *rank_load_max_mean, *hot_share, *max_collective_wait_s;
    int *timed_out, *max_expert, *busiest_ep_rank;
    /* the point's step.steps statistics (points table; NAN / -1 where the column is absent) */
    double p50_s, p95_s, p99_s, max_s, slow_above_s;
    int slow_steps, slow_run_steps, slow_run_first;
} results_step_series;

/* n = 0 for a point without steps; EXIT_BADINPUT when the database has no step_series table. */
int results_db_step_series(results_db *db, long point_id, results_step_series *out, moe_error *err);
void results_step_series_free(results_step_series *s);
/* The ids of the points that have a series, ascending (caller frees; NULL and *n = 0 when none). */
long *results_db_series_points(results_db *db, int *n, moe_error *err);

/* Remove a folder's result files: results.db and its WAL, results.json, results.csv, the point files
 * of earlier versions (points/), step traces (trace.json, traces/). */
int results_remove_outputs(const char *dir, moe_error *err);

/* Merge databases (folders or files) of one definition into DIR/results.db (created, or extended when
 * it holds the same definition). Different definitions are refused (exit 2, the first differing field
 * named); conflicting points too; points missing from the sweep are an error (exit 2, the ranges
 * named) unless `partial`. The output appears only when the merge succeeded; results.json is exported
 * up to RESULTS_JSON_MAX_POINTS points, or always with `json`. */
int results_merge(const char *const *inputs, int n_inputs, const char *dir, int partial, int json, int csv,
                  FILE *report, moe_error *err);

#endif
