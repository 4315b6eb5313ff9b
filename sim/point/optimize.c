/* optimize.c — spares x checkpoint interval x checkpoint tiers, two objectives, the Pareto front
 * (optimize.h). */
#include "sim/point/optimize.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"
#include "sim/plan/plan.h"
#include "sim/report/plots.h"
#include "sim/run/trainrun.h"
#include "sim/simgrid/step_sim.h"

const char *const OPTIMIZE_TIER_NAMES[OPT_N_TIER_CHOICES + 1] = {"pfs", "host", "peer", "nvme", "peer+nvme",
                                                                 NULL};
const char *const OPTIMIZE_OBJECTIVE_NAMES[3] = {"days", "gpu-hours", NULL};

void optimize_defaults(optimize_opts *o) {
    memset(o, 0, sizeof *o);
    static const double spares[] = {0, 0.005, 0.01, 0.02, 0.04};
    static const double intervals[] = {5, 10, 15, 20, 30, 45, 60, 90, 120};
    o->n_spares = (int)(sizeof spares / sizeof spares[0]);
    memcpy(o->spares, spares, sizeof spares);
    o->n_intervals = (int)(sizeof intervals / sizeof intervals[0]);
    memcpy(o->intervals_min, intervals, sizeof intervals);
    o->n_tiers = 3;
    o->tiers[0] = OPT_TIER_PFS;
    o->tiers[1] = OPT_TIER_HOST;
    o->tiers[2] = OPT_TIER_PEER;
    o->objective = OPT_DAYS;
    o->out_dir = "results/optimize";
    o->plots = 1;
}

/* One combination and what the run level made of it. */
typedef struct {
    double spares, interval_min;
    optimize_tier_choice tier;
    trainrun_result r;
    double gpu_hours;
    int pareto;
} opt_point;

static void apply_choice(scenario *s, const opt_point *p) {
    reliability_cfg *r = &s->reliability;
    r->recovery.hot_spare_fraction = p->spares;
    r->checkpoint.policy = CKPT_FIXED;
    r->checkpoint.interval_min = p->interval_min;
    ckpt_tiers_cfg *t = &r->checkpoint.tiers;
    t->enabled = p->tier != OPT_TIER_PFS;
    t->peer = p->tier == OPT_TIER_PEER || p->tier == OPT_TIER_PEER_NVME;
    t->nvme = p->tier == OPT_TIER_NVME || p->tier == OPT_TIER_PEER_NVME;
    if (t->enabled) r->checkpoint.mode = CKPT_ASYNC;
}

static double objective_of(const opt_point *p, optimize_objective obj) {
    return obj == OPT_GPU_HOURS ? p->gpu_hours : p->r.days_mean;
}

/* Pareto front of (days, GPU-hours): a point is on it when no other is at least as good on both
 * and better on one. */
static void mark_pareto(opt_point *pts, int n) {
    for (int i = 0; i < n; i++) {
        pts[i].pareto = 1;
        for (int j = 0; j < n && pts[i].pareto; j++) {
            if (j == i) continue;
            double dj = pts[j].r.days_mean, di = pts[i].r.days_mean;
            double gj = pts[j].gpu_hours, gi = pts[i].gpu_hours;
            if (dj <= di && gj <= gi && (dj < di || gj < gi)) pts[i].pareto = 0;
        }
    }
}

static int best_by(const opt_point *pts, int n, optimize_objective obj) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (objective_of(&pts[i], obj) < objective_of(&pts[b], obj)) b = i;
    return b;
}

static cJSON *point_json(const opt_point *p, int id) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddNumberToObject(o, "hot_spare_fraction", p->spares);
    cJSON_AddNumberToObject(o, "spare_nodes", p->r.spare_nodes);
    cJSON_AddNumberToObject(o, "interval_min", p->interval_min);
    cJSON_AddStringToObject(o, "tier", OPTIMIZE_TIER_NAMES[p->tier]);
    cJSON_AddNumberToObject(o, "days_mean", p->r.days_mean);
    cJSON_AddNumberToObject(o, "days_p50", p->r.days_p50);
    cJSON_AddNumberToObject(o, "days_p95", p->r.days_p95);
    cJSON_AddNumberToObject(o, "ettr", p->r.ettr);
    cJSON_AddNumberToObject(o, "gpu_hours", p->gpu_hours);
    cJSON_AddNumberToObject(o, "failures_mean", p->r.failures_mean);
    cJSON_AddNumberToObject(o, "lost_hours_mean", p->r.lost_hours_mean);
    cJSON_AddNumberToObject(o, "restart_hours_mean", p->r.restart_hours_mean);
    cJSON_AddNumberToObject(o, "completed_fraction_pct", p->r.completed_fraction_pct);
    cJSON_AddBoolToObject(o, "pareto", p->pareto);
    return o;
}

static cJSON *grid_json(const optimize_opts *o) {
    cJSON *g = cJSON_CreateObject();
    cJSON_AddItemToObject(g, "hot_spare_fraction", cJSON_CreateDoubleArray(o->spares, o->n_spares));
    cJSON_AddItemToObject(g, "interval_min", cJSON_CreateDoubleArray(o->intervals_min, o->n_intervals));
    cJSON *t = cJSON_AddArrayToObject(g, "tiers");
    for (int i = 0; i < o->n_tiers; i++) cJSON_AddItemToArray(t, cJSON_CreateString(OPTIMIZE_TIER_NAMES[o->tiers[i]]));
    return g;
}

static char *csv_text(const opt_point *pts, int n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "id,hot_spare_fraction,spare_nodes,interval_min,tier,days_mean,days_p50,days_p95,ettr,gpu_hours,"
               "failures_mean,lost_hours_mean,restart_hours_mean,pareto\n");
    for (int i = 0; i < n; i++) {
        const opt_point *p = &pts[i];
        fprintf(f, "%d,%.10g,%d,%.10g,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%d\n", i, p->spares,
                p->r.spare_nodes, p->interval_min, OPTIMIZE_TIER_NAMES[p->tier], p->r.days_mean, p->r.days_p50,
                p->r.days_p95, p->r.ettr, p->gpu_hours, p->r.failures_mean, p->r.lost_hours_mean,
                p->r.restart_hours_mean, p->pareto);
    }
    fclose(f);
    return buf;
}

static const char *step_source(const optimize_opts *o) {
    return o->step_time_s > 0 ? "given" : o->step_level ? "step" : "plan";
}

static void print_row(FILE *out, const opt_point *p) {
    fprintf(out, "  %7.3f %6d %9.0f  %-9s %9.2f %9.2f %7.4f %12.0f\n", p->spares, p->r.spare_nodes,
            p->interval_min, OPTIMIZE_TIER_NAMES[p->tier], p->r.days_mean, p->r.days_p95, p->r.ettr, p->gpu_hours);
}

static void print_report(FILE *out, const scenario *s, const optimize_opts *o, const opt_point *pts, int n,
                         double step_s) {
    fprintf(out, "simrun optimize: %s — %d spare fractions x %d intervals x %d tier choices = %d runs of %d "
                 "trials, step %.3f s (%s)\n",
            s->name, o->n_spares, o->n_intervals, o->n_tiers, n, s->run.trials, step_s, step_source(o));
    const char *head = "   spares  nodes  interval  tier      days_mean  days_p95    ettr    GPU-hours\n";
    int n_front = 0;
    for (int i = 0; i < n; i++) n_front += pts[i].pareto;
    fprintf(out, "Pareto front, days vs GPU-hours incl. idle spares (%d points, by days):\n%s", n_front, head);
    int *front = moe_xcalloc((size_t)n, sizeof *front);
    n_front = 0;
    for (int i = 0; i < n; i++)
        if (pts[i].pareto) front[n_front++] = i;
    for (int i = 1; i < n_front; i++)   /* insertion sort by days (stable: ties keep grid order) */
        for (int j = i; j > 0 && pts[front[j]].r.days_mean < pts[front[j - 1]].r.days_mean; j--) {
            int t = front[j];
            front[j] = front[j - 1];
            front[j - 1] = t;
        }
    for (int i = 0; i < n_front; i++) print_row(out, &pts[front[i]]);
    free(front);
    optimize_objective first = o->objective, second = first == OPT_DAYS ? OPT_GPU_HOURS : OPT_DAYS;
    const optimize_objective order[2] = {first, second};
    for (int k = 0; k < 2; k++) {
        const opt_point *p = &pts[best_by(pts, n, order[k])];
        fprintf(out, "best by %s: spares %g (%d nodes), every %g min, tier %s: %.2f days (p95 %.2f), ETTR %.4f, "
                     "%.0f GPU-hours\n",
                OPTIMIZE_OBJECTIVE_NAMES[order[k]], p->spares, p->r.spare_nodes, p->interval_min,
                OPTIMIZE_TIER_NAMES[p->tier], p->r.days_mean, p->r.days_p95, p->r.ettr, p->gpu_hours);
    }
}

/* The step time (given, the step simulation's or the plan's); *plan_out is the plan, or NULL when
 * the step time is given and the checkpoint size too (nothing else needs the plan). */
static int step_time(const scenario *s, const optimize_opts *o, plan_result *plan, const plan_result **plan_out,
                     double *step_s, moe_error *err) {
    *plan_out = NULL;
    if (o->step_time_s > 0 && s->reliability.checkpoint.state_bytes >= 0) {
        *step_s = o->step_time_s;
        return 0;
    }
    if (plan_evaluate(s, plan, err)) return err->code;
    *plan_out = plan;
    *step_s = o->step_time_s > 0 ? o->step_time_s : plan->step_time_s;
    if (!o->step_level || o->step_time_s > 0) return 0;
    step_result st;
    memset(&st, 0, sizeof st);
    step_options so = {.trace_path = NULL};
    if (step_simulate(s, &so, &st, err)) return err->code;
    *step_s = step_result_run_step_s(&st, s, NULL);
    step_result_free(&st);
    return 0;
}

int optimize_run(const scenario *s, const optimize_opts *o, FILE *out, moe_error *err) {
    plan_result plan;
    const plan_result *pl;
    double step_s = 0;
    int rc = step_time(s, o, &plan, &pl, &step_s, err);
    if (rc) return rc;
    int n = o->n_spares * o->n_intervals * o->n_tiers;
    opt_point *pts = moe_xcalloc((size_t)n, sizeof *pts);
    int i = 0;
    for (int a = 0; a < o->n_spares && !rc; a++)
        for (int b = 0; b < o->n_intervals && !rc; b++)
            for (int c = 0; c < o->n_tiers && !rc; c++, i++) {
                opt_point *p = &pts[i];
                p->spares = o->spares[a];
                p->interval_min = o->intervals_min[b];
                p->tier = o->tiers[c];
                scenario sc = *s;
                apply_choice(&sc, p);
                if ((rc = trainrun_simulate_no_search(&sc, pl, step_s, &p->r, err)) != 0) break;
                p->gpu_hours = (double)(s->cluster.nodes + p->r.spare_nodes) * s->cluster.gpus_per_node * 24.0 *
                               p->r.days_mean;
            }
    if (!rc) {
        mark_pareto(pts, n);
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "format", "moesim-optimize/1");
        cJSON_AddStringToObject(doc, "version", MOESIM_VERSION);
        cJSON_AddStringToObject(doc, "scenario", s->name);
        cJSON_AddNumberToObject(doc, "step_time_s", step_s);
        cJSON_AddStringToObject(doc, "step_time_from", step_source(o));
        cJSON_AddNumberToObject(doc, "trials", s->run.trials);
        cJSON_AddItemToObject(doc, "grid", grid_json(o));
        cJSON_AddNumberToObject(doc, "best_days", best_by(pts, n, OPT_DAYS));
        cJSON_AddNumberToObject(doc, "best_gpu_hours", best_by(pts, n, OPT_GPU_HOURS));
        cJSON *arr = cJSON_AddArrayToObject(doc, "points");
        for (int k = 0; k < n; k++) cJSON_AddItemToArray(arr, point_json(&pts[k], k));
        char path[SCN_PATH_MAX + 32];
        char *json = cJSON_Print(doc), *csv = csv_text(pts, n);
        rc = make_dirs(o->out_dir, err);
        if (!rc) {
            snprintf(path, sizeof path, "%s/optimize.json", o->out_dir);
            rc = write_file_atomic(path, json, err);
        }
        if (!rc) {
            snprintf(path, sizeof path, "%s/optimize.csv", o->out_dir);
            rc = write_file_atomic(path, csv, err);
        }
        if (!rc && o->plots) rc = plots_pareto(o->out_dir, doc, err);
        free(json);
        free(csv);
        cJSON_Delete(doc);
        if (!rc && !o->quiet) {
            print_report(out, s, o, pts, n, step_s);
            fprintf(out, "wrote %s/optimize.json and %s/optimize.csv%s\n", o->out_dir, o->out_dir,
                    o->plots ? " and pareto.png/svg" : "");
        }
    }
    free(pts);
    return rc;
}
