/* sweep_run.c — a scenario's sweep from validation to exports (sweep_run.h). */
#include "sim/report/results_export.h"
#include "sim/point/sweep_run.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "sim/plan/layout_rank.h"
#include "sim/point/point_eval.h"
#include "sim/point/point_warnings.h"
#include "sim/program/program.h"
#include "sim/program/routing.h"
#include "sim/report/plots.h"
#include "sim/report/point_pool.h"
#include "sim/report/report_table.h"
#include "sim/report/results_db.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"

double sweep_bytes_per_point(int levels) {
    /* results.db + results.csv per point, measured: a plan-level point 1.42 KB (0.60 + 0.81 KB, the
     * 1,014,000-point sweep of tests/bench_sweep.c); the step level adds about 7.3 KB (its breakdown
     * columns), the run level about 1.1 KB (16-point sweeps of tests/data/scenarios/small-moe.json) */
    double b = 1420;
    if (levels & LEVEL_STEP) b += 7300;
    if (levels & LEVEL_RUN) b += 1100;
    return b;
}

typedef struct {
    const scenario *base;
    const sweep *sw;
    const layout_cfg *ranked;   /* --search: point i is the base with layout ranked[i] */
    int n_fit, n_sim;           /* --search: the first n_fit fit in memory, the first n_sim are simulated */
    int levels, fidelity, reproducible, single;
    const char *out_dir;
    /* the parent's side */
    results_db *db;
    long stored[3];             /* ok, infeasible, error stored by this run */
    int bad_input;              /* a point failed on bad input (exit 2) */
    long n_invalid;
    char reasons[3][400];
    long n_kept;                /* --resume: points of [lo, hi) an earlier run stored (not evaluated again) */
} run_ctx;

/* Point `id`'s scenario and sweep values. 0, or EXIT_BADINPUT when the combination is invalid
 * (err says why), or another code for a failure. */
static int point_scenario(const run_ctx *c, long id, scenario *s, cJSON **values, moe_error *err) {
    if (c->ranked) {
        *s = *c->base;
        s->layout = c->ranked[id];
        if (values) {
            cJSON *v = *values = cJSON_CreateObject();
            cJSON_AddNumberToObject(v, "layout.tp", s->layout.tp);
            cJSON_AddNumberToObject(v, "layout.pp", s->layout.pp);
            cJSON_AddNumberToObject(v, "layout.ep", s->layout.ep);
            cJSON_AddNumberToObject(v, "layout.dp", s->layout.dp);
        }
        return 0;
    }
    return sweep_point(c->sw, c->base, (int)id, s, values, err);
}

static void encode_failure(record_buf *out, record_status st, const char *reason, cJSON *values) {
    cJSON *pt = cJSON_CreateObject();
    if (values) cJSON_AddItemToObject(pt, "sweep", values);
    record_encode(out, st, reason, NULL, pt);
    cJSON_Delete(pt);
}

/* ---- validation: before any work, in the workers ---------------------------------------------- */

static void validate_fn(long id, void *vctx, record_buf *out) {
    const run_ctx *c = vctx;
    scenario s;
    moe_error e = {0};
    if (point_scenario(c, id, &s, NULL, &e)) record_encode(out, e.code == EXIT_BADINPUT ? RECORD_INFEASIBLE : RECORD_ERROR, e.msg, NULL, NULL);
}

static int validate_sink(long id, const void *rec, size_t len, const char *lost, void *vctx, moe_error *err) {
    (void)err;
    run_ctx *c = vctx;
    record_reader r;
    if (c->n_invalid < 3) {
        if (rec && record_open(&r, rec, len) == 0)
            snprintf(c->reasons[c->n_invalid], sizeof c->reasons[0], "%.*s", (int)r.reason_len, r.reason ? r.reason : "");
        else
            snprintf(c->reasons[c->n_invalid], sizeof c->reasons[0], "point %ld: %s", id, lost ? lost : "?");
    }
    c->n_invalid++;
    return 0;
}

/* ---- evaluation ---------------------------------------------------------------------------------- */

static void step_progress(void *ctx, const char *text) {
    (void)ctx;
    point_progress("%s", text);
}

static void eval_fn(long id, void *vctx, record_buf *out) {
    const run_ctx *c = vctx;
    scenario s;
    cJSON *values = NULL;
    moe_error e = {0};
    int rc = point_scenario(c, id, &s, &values, &e);
    if (rc) {
        encode_failure(out, rc == EXIT_BADINPUT ? RECORD_INFEASIBLE : RECORD_ERROR, e.msg, values);
        return;
    }
    if (c->fidelity >= 0) s.step.fidelity = (fidelity_kind)c->fidelity;
    point_opts po = {.levels = c->levels ? c->levels : s.output.levels, .reproducible = c->reproducible,
                     .omit_scenario = 1, .progress = step_progress};
    if (c->ranked) po.levels = id < c->n_sim ? (po.levels | LEVEL_PLAN) : LEVEL_PLAN;
    /* a searched layout the step level cannot run (program_check: a rule of the step program the
     * scenario's validation does not make, e.g. DualPipe's even pp) is a candidate out, not bad input */
    char refused[sizeof e.msg] = "";
    if (c->ranked && (po.levels & LEVEL_STEP)) {
        moe_error ce = {0};
        if (program_check(&s, &ce) == EXIT_BADINPUT) {
            snprintf(refused, sizeof refused, "%s", ce.msg);
            po.levels &= ~LEVEL_STEP;
        }
    }
    char trace[4200];
    if (s.output.trace && (po.levels & LEVEL_STEP)) {
        if (c->single) {
            snprintf(trace, sizeof trace, "%s/trace.json", c->out_dir);
        } else {
            snprintf(trace, sizeof trace, "%s/traces", c->out_dir);
            if (make_dirs(trace, &e)) {
                encode_failure(out, RECORD_ERROR, e.msg, values);
                return;
            }
            snprintf(trace, sizeof trace, "%s/traces/trace-%06ld.json", c->out_dir, id);
        }
        po.trace_path = trace;
    }
    cJSON *kept = cJSON_Duplicate(values, 1);   /* point_evaluate takes `values` */
    cJSON *pt = point_evaluate(&s, (int)id, values, &po, &e);
    cJSON *patch = scenario_patch_json(c->base, &s);
    char *patch_text = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    if (!pt) {
        encode_failure(out, e.code == EXIT_BADINPUT ? RECORD_ERROR_INPUT : RECORD_ERROR, e.msg, kept);
        free(patch_text);
        return;
    }
    cJSON_Delete(kept);
    if (c->ranked && id >= c->n_fit) {
        const cJSON *plan = cJSON_GetObjectItemCaseSensitive(pt, "plan");
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(plan, "memory_GiB");
        const cJSON *total = cJSON_GetObjectItemCaseSensitive(mem, "total"), *usable = cJSON_GetObjectItemCaseSensitive(mem, "usable");
        char capacity[96], reason[400];
        point_memory_capacity_words(cJSON_IsNumber(usable) ? usable->valuedouble : s.cluster.gpu.mem_GiB,
                                    s.cluster.gpu.mem_GiB, capacity, sizeof capacity);
        snprintf(reason, sizeof reason, "does not fit in GPU memory: plan.memory_GiB.total = %.1f GiB on the most loaded "
                 "GPU; expected at most the %s of cluster.gpu.mem_GiB (the search simulates only layouts that fit)",
                 cJSON_IsNumber(total) ? total->valuedouble : 0.0, capacity);
        record_encode(out, RECORD_INFEASIBLE, reason, patch_text, pt);
    } else if (refused[0]) {
        char reason[sizeof refused + 100];
        snprintf(reason, sizeof reason, "the step level cannot run this layout: %s (the search simulates only layouts "
                 "it can run)", refused);
        record_encode(out, RECORD_INFEASIBLE, reason, patch_text, pt);
    } else {
        record_encode(out, RECORD_OK, NULL, patch_text, pt);
    }
    free(patch_text);
    cJSON_Delete(pt);
}

static int eval_sink(long id, const void *rec, size_t len, const char *lost, void *vctx, moe_error *err) {
    run_ctx *c = vctx;
    record_buf lost_rec = {0};
    if (!rec) {
        char reason[400];
        snprintf(reason, sizeof reason, "lost: %s", lost);
        scenario s;
        cJSON *values = NULL;
        moe_error ignored = {0};
        point_scenario(c, id, &s, &values, &ignored);
        encode_failure(&lost_rec, RECORD_ERROR, reason, values);
        rec = lost_rec.data;
        len = lost_rec.len;
    }
    record_status st = (record_status)((const char *)rec)[0];
    c->stored[st == RECORD_OK ? 0 : st == RECORD_INFEASIBLE ? 1 : 2]++;
    if (st == RECORD_ERROR_INPUT) c->bad_input = 1;
    int rc = results_db_put(c->db, id, rec, len, 0, err);
    record_buf_free(&lost_rec);
    return rc;
}

static void eval_status(void *vctx, char *buf, size_t cap) {
    const run_ctx *c = vctx;
    if (c->stored[1] || c->stored[2]) snprintf(buf, cap, "%ld infeasible, %ld errors", c->stored[1], c->stored[2]);
    else buf[0] = '\0';
}

/* ---- the run -------------------------------------------------------------------------------------- */

static cJSON *levels_json(int levels) {
    if (!levels) return cJSON_CreateString("output.levels");
    cJSON *a = cJSON_CreateArray();
    const char *names[3] = {"plan", "step", "run"};
    for (int b = 0; b < 3; b++)
        if (levels & (1 << b)) cJSON_AddItemToArray(a, cJSON_CreateString(names[b]));
    return a;
}

/* What identifies the run: program version, resolved scenario, sweep, options that change results. */
static cJSON *run_definition(const sweep_run_opts *o, const scenario *base, const sweep *sw) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "version", MOESIM_VERSION);
    cJSON_AddItemToObject(d, "scenario", scenario_to_json(base));
    cJSON_AddItemToObject(d, "sweep", sweep_to_json(sw));
    cJSON *opt = cJSON_AddObjectToObject(d, "options");
    cJSON_AddItemToObject(opt, "levels", levels_json(o->levels));
    cJSON_AddItemToObject(opt, "fidelity", o->fidelity < 0 ? cJSON_CreateString("step.fidelity")
                                                           : cJSON_CreateString(o->fidelity == FIDELITY_FULL ? "full" : "fast"));
    cJSON_AddBoolToObject(opt, "reproducible", o->reproducible);
    cJSON_AddItemToObject(opt, "search_top", !o->search ? cJSON_CreateNull()
                                             : o->top == SEARCH_TOP_ALL ? cJSON_CreateString("all")
                                                                        : cJSON_CreateNumber(o->top));
    return d;
}

/* One cheap point needs no progress; one step-level point shows its own (ops priced). */
static progress_mode progress_for(const sweep_run_opts *o, long n, int slow) {
    if (o->quiet || n < 1 || (n == 1 && !slow)) return PROGRESS_NONE;
    return isatty(2) ? PROGRESS_LIVE : PROGRESS_LINES;
}

static int refuse_size(const sweep_run_opts *o, long n, long max, int levels, moe_error *err) {
    double gb = (double)n * sweep_bytes_per_point(levels) / 1e9;
    return moe_error_set(err, EXIT_BADINPUT,
                         "%s: sweep: got %ld points (about %.1f GB in results.db and results.csv); expected at most "
                         "%ld (--max-points N raises the limit; --shard I/N splits the sweep over processes or machines)",
                         o->scenario_file, n, gb, max);
}

static void warn_disk(const char *dir, long n, int levels, FILE *out) {
    struct statvfs v;
    double need = (double)n * sweep_bytes_per_point(levels);
    if (statvfs(dir, &v) == 0 && (double)v.f_bavail * (double)v.f_frsize < need)
        fprintf(out, "warning: %s has %.2f GB free; the results of %ld points need about %.2f GB\n", dir,
                (double)v.f_bavail * (double)v.f_frsize / 1e9, n, need / 1e9);
}

/* The table: every point of a small run; the best 20 of a large one. */
static int print_table(results_db *db, long n_stored, const run_ctx *c, FILE *out, moe_error *err) {
    char order[1200] = "ORDER BY id";
    long limit = 0;
    if (c->ranked) {
        /* the simulated layouts (the table ranks them by tokens/s/GPU; ids keep the plan's rank) */
        snprintf(order, sizeof order, "WHERE id < %d AND status = 'ok' ORDER BY id", c->n_sim > 0 ? c->n_sim : 0);
    } else if (n_stored > 200) {
        char fits_q[300] = "", key[700] = "id";
        const char *fits = results_db_column_sql(db, "plan.fits_memory");
        if (fits) snprintf(fits_q, sizeof fits_q, "coalesce(%s, 0) = 0, ", fits);
        /* the table's own key (report_table.h): the mean over the steps, the step's, the plan's */
        static const char *const keys[] = {"step.steps.step_time_s_mean", "step.step_time_s", "plan.step_time_s"};
        char cols[3][128];
        int nc = 0;
        for (int k = 0; k < 3; k++)
            if (results_db_column_sql(db, keys[k])) snprintf(cols[nc++], sizeof cols[0], "%s", results_db_column_sql(db, keys[k]));
        if (nc == 1) snprintf(key, sizeof key, "%s", cols[0]);
        else if (nc == 2) snprintf(key, sizeof key, "coalesce(%s, %s)", cols[0], cols[1]);
        else if (nc == 3) snprintf(key, sizeof key, "coalesce(%s, %s, %s)", cols[0], cols[1], cols[2]);
        snprintf(order, sizeof order, "WHERE status = 'ok' ORDER BY %s%s, id", fits_q, key);
        limit = 20;
    }
    cJSON *doc = results_db_document(db, order, limit, err);
    if (!doc) return err->code;
    /* every point's warnings for a run small enough to load; those of the points shown otherwise */
    cJSON *all = n_stored <= RESULTS_JSON_MAX_POINTS && (limit || c->ranked) ? results_db_document(db, NULL, 0, err) : NULL;
    print_results_warnings(stderr, all ? all : doc, 20);
    cJSON_Delete(all);
    if (c->ranked) print_results_table_by_tokens(out, doc, c->out_dir);
    else print_results_table(out, doc, c->out_dir);
    if (limit) fprintf(out, "(the best %ld of %ld points; all of them are in results.db)\n", limit, n_stored);
    cJSON_Delete(doc);
    return 0;
}

static int finish(const sweep_run_opts *o, const char *out_dir, const scenario *base, run_ctx *c, long lo, long hi,
                  FILE *out, moe_error *err) {
    results_db *db = c->db;
    if (results_db_commit(db, err)) return err->code;
    long ok, inf, bad, n_stored = results_db_count_all(db);
    if (results_db_counts(db, lo, hi, &ok, &inf, &bad, err)) return err->code;
    int json = o->json || n_stored <= RESULTS_JSON_MAX_POINTS, csv = o->csv || n_stored <= RESULTS_CSV_MAX_POINTS;
    if (results_db_export(db, out_dir, json, csv, o->jobs, err)) return err->code;
    if (!o->quiet) {
        if (n_stored > 0 && print_table(db, n_stored, c, out, err)) return err->code;
        char kept[120] = "";
        if (c->n_kept)
            snprintf(kept, sizeof kept, "; %ld kept from the earlier run, %ld evaluated now", c->n_kept, hi - lo - c->n_kept);
        fprintf(out, "wrote %s/results.db%s%s%s%s%s%s (%ld point%s: %ld ok, %ld infeasible, %ld errors%s)\n", out_dir,
                csv ? (json ? ", " : " and ") : "", csv ? out_dir : "", csv ? "/results.csv" : "", json ? " and " : "",
                json ? out_dir : "", json ? "/results.json" : "", n_stored, n_stored == 1 ? "" : "s", ok, inf, bad, kept);
        if (!csv)
            fprintf(out, "(no results.csv for %ld points: read results.db with SQL, or add --csv)\n", n_stored);
        if (inf) {
            fprintf(out, "infeasible (first of %ld; all with their reason in results.db):\n", inf);
            results_db_reasons(db, "infeasible", 3, out);
        }
    }
    if (base->output.plots && n_stored <= RESULTS_JSON_MAX_POINTS) {
        cJSON *doc = results_db_document(db, "WHERE status = 'ok' ORDER BY id", 0, err);
        if (!doc) return err->code;
        int n = 0, rc = plots_write(out_dir, doc, o->quiet ? NULL : out, &n, err);
        cJSON_Delete(doc);
        if (rc) return rc;
    }
    if (bad) {
        fprintf(stderr, "simrun: %ld point%s failed (rerun with --resume to retry them):\n", bad, bad == 1 ? "" : "s");
        results_db_reasons(db, "error", 5, stderr);
        return moe_error_set(err, c->bad_input ? EXIT_BADINPUT : EXIT_RUNTIME, "%ld of %ld points failed%s", bad, hi - lo,
                             c->bad_input ? " (bad input: see the reasons above)" : "");
    }
    return 0;
}

int sweep_run(const sweep_run_opts *o, FILE *out, moe_error *err) {
    scenario base;
    sweep *sw = NULL;
    if (scenario_load(o->scenario_file, &base, &sw, err)) return err->code;
    const char *out_dir = o->out_dir ? o->out_dir : base.output.dir;
    run_ctx c = {.base = &base, .sw = sw, .levels = o->levels, .fidelity = o->fidelity, .reproducible = o->reproducible,
                 .out_dir = out_dir};
    layout_cfg *ranked = NULL;
    results_db *db = NULL;
    uint8_t *done = NULL;
    cJSON *def = NULL;
    int rc = 0;
    long n = sweep_count(sw);
    if (o->search) {
        if (n > 1) {
            rc = moe_error_set(err, EXIT_BADINPUT, "%s: sweep: got a sweep of %ld points; expected none with --search "
                               "(the search varies the layout itself)", o->scenario_file, n);
            goto done;
        }
        int n_fit;
        n = layouts_rank(&base, &ranked, &n_fit, err);
        if (n < 0) { rc = err->code; goto done; }
        c.ranked = ranked;
        c.n_fit = n_fit;
        c.n_sim = o->top == SEARCH_TOP_ALL || n_fit < o->top ? n_fit : o->top;
        if (!c.levels) c.levels = LEVEL_PLAN | LEVEL_STEP;
        if (!o->quiet && o->top == SEARCH_TOP_ALL)
            fprintf(out, "search: %ld valid layouts of %d GPUs, %d fit in memory; simulating all %d%s\n", n,
                    scn_gpus(&base), n_fit, c.n_sim, c.levels & LEVEL_STEP ? " at step level" : " [plan only]");
        else if (!o->quiet)
            fprintf(out, "search: %ld valid layouts of %d GPUs, %d fit in memory; simulating the best %d (by plan step time)%s\n",
                    n, scn_gpus(&base), n_fit, c.n_sim, c.levels & LEVEL_STEP ? "" : " [plan only]");
        if (n_fit == 0) {
            rc = moe_error_set(err, EXIT_RUNTIME, "%s: no valid layout fits in memory (cluster.gpu.mem_GiB = %g)",
                               o->scenario_file, base.cluster.gpu.mem_GiB);
            goto done;
        }
    }
    c.single = n == 1;
    int shard_n = o->shard_n > 0 ? o->shard_n : 1;
    long lo = n * o->shard_i / shard_n, hi = n * (o->shard_i + 1) / shard_n;
    long max = o->max_points > 0 ? o->max_points : SWEEP_MAX_POINTS_DEFAULT;
    int eff_levels = c.levels ? c.levels : base.output.levels;
    if (hi - lo > max) { rc = refuse_size(o, hi - lo, max, eff_levels, err); goto done; }
    int jobs = o->jobs > 0 ? o->jobs : 1;

    /* 1. every point validated before any work (the search validated its layouts when ranking) */
    if (!c.ranked && sweep_count(sw) > 1) {
        point_run_opts vo = {.jobs = jobs, .chunk = (hi - lo + 8L * jobs - 1) / (8L * jobs), .what = "validated",
                             .progress = (hi - lo) > 200000 ? progress_for(o, hi - lo, 0) : PROGRESS_NONE,
                             .progress_every_s = o->progress_every_s > 0 ? o->progress_every_s : 30};
        if ((rc = run_points(lo, hi, validate_fn, validate_sink, &c, &vo, err))) goto done;
        if (c.n_invalid && o->strict) {
            rc = moe_error_set(err, EXIT_BADINPUT, "%ld of %ld points are infeasible (--strict), e.g. %s", c.n_invalid,
                               hi - lo, c.reasons[0]);
            goto done;
        }
        if (c.n_invalid && !o->quiet)
            fprintf(out, "sweep: %ld points, %ld infeasible (recorded with their reason), e.g. %s\n", hi - lo, c.n_invalid,
                    c.reasons[0]);
    } else if (c.ranked && o->strict && c.n_fit < n && !o->quiet) {
        fprintf(out, "search: %ld layouts do not fit in memory (recorded infeasible)\n", n - c.n_fit);
    }

    /* 2. the folder's database: never another run's points */
    def = run_definition(o, &base, sw);
    results_db_mode mode = o->force ? DB_FORCE : o->resume ? DB_RESUME : DB_FRESH;
    if ((rc = results_db_open_run(out_dir, def, n, mode, &db, err))) goto done;
    c.db = db;
    if (o->commit_set) results_db_set_commit_every(db, o->commit_every_s);
    if (!o->quiet) warn_disk(out_dir, hi - lo, eff_levels, stderr);
    done = moe_xcalloc((size_t)((hi - lo) / 8 + 1), 1);
    long n_done = results_db_done(db, lo, hi, done, err);
    if (n_done < 0) { rc = err->code; goto done; }
    c.n_kept = n_done;
    if (n_done && !o->quiet)
        fprintf(out, "resume: %ld of %ld points kept from %s/results.db; evaluating the other %ld\n", n_done, hi - lo,
                out_dir, hi - lo - n_done);

    /* 3. the points, in workers; the parent stores what they send */
    int slow = (eff_levels & LEVEL_STEP) != 0;
    long todo = hi - lo - n_done;
    /* Step-level points get a process each, since SimGrid keeps one platform per process and a sweep
     * may vary the cluster. A search's layouts share the cluster: a worker takes a run of them and
     * reuses the SimGrid patterns and routing draws of the layouts before, which gives bit for bit a
     * fresh process's results (comm_simgrid.h, routing.h; e2e_search_exhaustive). Three runs per
     * worker balance the long layouts. */
    long step_chunk = c.ranked ? (todo + 3L * jobs - 1) / (3L * jobs) : 1;
    point_run_opts po = {.jobs = jobs, .skip = done, .exact = slow, .what = "evaluated",
                         .chunk = slow ? step_chunk : (todo + 8L * jobs - 1) / (8L * jobs),
                         .progress = progress_for(o, todo, slow), .status = eval_status,
                         .progress_every_s = o->progress_every_s > 0 ? o->progress_every_s : 30};
    if (po.chunk > 20000) po.chunk = 20000;
    /* the jobs are cores: what the worker processes leave idle (fewer runs than jobs: one point, a
     * short search) goes to each worker's routing draws (routing_set_threads; the same bytes) */
    long per = po.chunk > 1 ? po.chunk : 1, runs = (todo + per - 1) / per;
    long workers = runs < jobs ? (runs > 0 ? runs : 1) : jobs;
    int threads = slow ? (int)(jobs / workers) : 1;
    routing_set_threads(threads);
    sg_comm_set_helpers(threads > 1);   /* a spare core also simulates the step's patterns ahead */
    rc = run_points(lo, hi, eval_fn, eval_sink, &c, &po, err);
    routing_set_threads(1);
    sg_comm_set_helpers(0);
    if (rc) {
        /* keep what was stored; say how to go on */
        moe_error cerr = {0};
        int crc = results_db_commit(db, &cerr);
        if (rc > 128 && !crc)
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     "; the finished points are in %s/results.db: continue with --resume", out_dir);
        goto done;
    }
    rc = finish(o, out_dir, &base, &c, lo, hi, out, err);
done:
    if (db) {
        moe_error cerr = {0};
        if (results_db_close(db, &cerr) && !rc) {
            *err = cerr;
            rc = cerr.code;
        }
    }
    free(done);
    cJSON_Delete(def);
    free(ranked);
    sweep_free(sw);
    return rc;
}
