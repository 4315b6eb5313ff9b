/* report_table.c — results as an aligned text table. */
#include "sim/report/report_table.h"
#include "sim/base/alloc.h"
#include "sim/report/step_outcome.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double num(const cJSON *obj, const char *path) {
    /* dotted lookup: "step.step_time_s" */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = obj;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    if (cJSON_IsNumber(cur)) return cur->valuedouble;
    if (cJSON_IsBool(cur)) return cJSON_IsTrue(cur) ? 1 : 0;
    return NAN;
}

typedef struct {
    const cJSON *pt;
    double key;   /* ranking key, lowest first (step time, or minus tokens/s/GPU); infinite when it
                     does not fit */
} row;

static int by_key(const void *a, const void *b) {
    const row *ra = a, *rb = b;
    if (ra->key != rb->key) return ra->key < rb->key ? -1 : 1;
    return (int)num(ra->pt, "id") - (int)num(rb->pt, "id");
}

static void fmt(char *out, size_t cap, const char *f, double v) {
    if (isnan(v)) snprintf(out, cap, "-");
    else snprintf(out, cap, f, v);
}

/* The row label: the swept values ("interval_min=30 drop=true"), else the layout. Never cut: the
 * column is as wide as the widest label. */
static void point_label(const cJSON *p, char *label, size_t cap) {
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(p, "sweep");
    size_t len = 0;
    label[0] = '\0';
    for (const cJSON *e = sw ? sw->child : NULL; e && len < cap - 1; e = e->next) {
        char *v = cJSON_PrintUnformatted(e);
        const char *key = strrchr(e->string, '.') ? strrchr(e->string, '.') + 1 : e->string;
        len += (size_t)snprintf(label + len, cap - len, "%s%s=%s", len ? " " : "", key, v ? v : "?");
        free(v);
    }
    if (!len && isnan(num(p, "scenario.layout.tp")))
        snprintf(label, cap, "-");   /* a point that failed before its scenario was stored */
    else if (!len)
        snprintf(label, cap, "%.0f.%.0f.%.0f.%.0f", num(p, "scenario.layout.tp"), num(p, "scenario.layout.pp"),
                 num(p, "scenario.layout.ep"), num(p, "scenario.layout.dp"));
}

#define LABEL_CAP 512

/* routing.steps > 1: the point's figures over all its simulated steps (step.steps), else its one
 * step's. */
static int many_steps(const cJSON *p) { return num(p, "step.steps.count") > 1; }

static double headline(const cJSON *p, const char *one, const char *all) {
    char path[96];
    snprintf(path, sizeof path, "step.%s", many_steps(p) ? all : one);
    return num(p, path);
}

/* The point's step (its outcome when it did not complete: step_outcome.h). */
static step_outcome outcome(const cJSON *p) {
    return step_outcome_of(cJSON_GetObjectItemCaseSensitive(p, "step"));
}

/* A step that failed on every simulated step has no step time to rank by. */
static int failed(const cJSON *p) {
    if (outcome(p) == STEP_COMPLETED) return 0;
    return !many_steps(p) || num(p, "step.steps.timed_out") >= num(p, "step.steps.count");
}

/* The ranking key: the step level's step time (mean over the steps) or tokens/s/GPU, else the plan's. */
static double rank_value(const cJSON *p, int by_tokens) {
    double v = by_tokens ? headline(p, "tokens_per_s_per_gpu", "steps.tokens_per_s_per_gpu")
                         : headline(p, "step_time_s", "steps.step_time_s_mean");
    if (isnan(v)) v = num(p, by_tokens ? "plan.tokens_per_s_per_gpu" : "plan.step_time_s");
    return by_tokens ? -v : v;
}

static void band_text(const cJSON *p, char *out, size_t cap) {
    /* the error band of tok/s/gpu (validation residuals, sim/point/validate.h) */
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(p, "step");
    const cJSON *band = many_steps(p) ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(step, "steps"),
                                                                         "tokens_per_s_per_gpu_band")
                                      : cJSON_GetObjectItemCaseSensitive(step, "tokens_per_s_per_gpu_band");
    if (!step) band = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "plan"), "tokens_per_s_per_gpu_band");
    snprintf(out, cap, "-");
    if (cJSON_GetArraySize(band) == 2)
        snprintf(out, cap, "%.0f-%.0f", cJSON_GetArrayItem(band, 0)->valuedouble, cJSON_GetArrayItem(band, 1)->valuedouble);
}

/* Under the table: each step that did not complete, in words, and how to triage it. */
static void print_failed_steps(FILE *out, const row *rows, int n, const char *dir) {
    char what[600];
    for (int i = 0; i < n; i++) {
        const cJSON *p = rows[i].pt;
        double later = many_steps(p) ? num(p, "step.steps.timed_out") : 0;
        if (outcome(p) == STEP_COMPLETED && !(later > 0)) continue;
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "step"), "breakdown");
        step_outcome_text(cJSON_GetObjectItemCaseSensitive(bd, "collective_timeout"), cJSON_GetObjectItemCaseSensitive(bd, "hang"),
                          (int)num(p, "scenario.cluster.gpus_per_node"), what, sizeof what);
        if (many_steps(p))
            fprintf(out, "point %.0f: %.0f of its %.0f steps timed out%s%s\n", num(p, "id"), later,
                    num(p, "step.steps.count"), what[0] ? "; step 0: " : "", what);
        else
            fprintf(out, "point %.0f: %s\n", num(p, "id"), what[0] ? what : "the step timed out");
        fprintf(out, "  triage: simdiag check %s%s\n", dir ? dir : "DIR",
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
                                 cJSON_GetObjectItemCaseSensitive(p, "scenario"), "output"), "trace"))
                    ? ""
                    : "   (it reads the step's trace: rerun with output.trace: true first)");
        if (many_steps(p))
            fprintf(out, "  which steps, and the hot expert behind them: simdiag steps %s --point %.0f\n", dir ? dir : "DIR",
                    num(p, "id"));
    }
}

static void table(FILE *out, const cJSON *doc, int by_tokens, const char *dir) {
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    int n = cJSON_GetArraySize(points);
    if (n == 0) { fprintf(out, "(no points)\n"); return; }
    row *rows = moe_xcalloc((size_t)n, sizeof *rows);
    int i = 0, ranked = n > 1, width = 28;
    char label[LABEL_CAP];
    for (const cJSON *p = points->child; p; p = p->next, i++) {
        double st = rank_value(p, by_tokens);
        double fits = num(p, "plan.fits_memory");
        rows[i].pt = p;
        rows[i].key = (fits == 0 || isnan(st) || failed(p)) ? INFINITY : st;
        point_label(p, label, sizeof label);
        if ((int)strlen(label) > width) width = (int)strlen(label);
    }
    if (ranked) qsort(rows, (size_t)n, sizeof *rows, by_key);
    /* routing.steps > 1: the headline figures over all the steps, their distribution beside */
    int multi = 0, max_steps = 0;
    for (i = 0; i < n; i++) {
        multi |= many_steps(rows[i].pt);
        if (num(rows[i].pt, "step.steps.count") > max_steps) max_steps = (int)num(rows[i].pt, "step.steps.count");
    }

    fprintf(out, "%4s %5s  %-*s %4s %9s %9s", ranked ? "rank" : "", "point", width, "sweep / layout tp.pp.ep.dp", "fits",
            "plan_s", multi ? "mean_s" : "step_s");
    if (multi) fprintf(out, " %9s %9s %9s", "p50_s", "p95_s", "max_s");
    fprintf(out, " %6s %10s %6s %13s %8s %8s %6s %4s\n", "mfu", "tok/s/gpu", "drop%", "tok/s band", "mem_GiB", "days_p50",
            "ettr", "warn");
    for (i = 0; i < n; i++) {
        const cJSON *p = rows[i].pt;
        char c[8][24];
        point_label(p, label, sizeof label);
        int has_step = cJSON_GetObjectItemCaseSensitive(p, "step") != NULL, bad = failed(p);
        double mfu = headline(p, "mfu", "steps.mfu"), tps = headline(p, "tokens_per_s_per_gpu", "steps.tokens_per_s_per_gpu");
        if (!has_step) mfu = num(p, "plan.mfu"), tps = num(p, "plan.tokens_per_s_per_gpu");
        fmt(c[0], 24, "%.3f", num(p, "plan.step_time_s"));
        fmt(c[1], 24, "%.3f", headline(p, "step_time_s", "steps.step_time_s_mean"));
        fmt(c[2], 24, "%.3f", bad ? NAN : mfu);
        fmt(c[3], 24, "%.0f", bad ? NAN : tps);
        if (bad) snprintf(c[1], 24, "%s", step_outcome_word(outcome(p)));
        char bandtxt[32];
        band_text(p, bandtxt, sizeof bandtxt);
        if (bad) snprintf(bandtxt, sizeof bandtxt, "-");
        /* a dense model routes nothing: no share to drop */
        fmt(c[7], 24, "%.1f", num(p, "scenario.model.experts") == 0 ? NAN : 100.0 * num(p, "step.dropped_token_fraction"));
        fmt(c[4], 24, "%.1f", num(p, "plan.memory_GiB.total"));
        /* a median trial that never reached run.tokens stopped at run.max_days: print the cap as a bound
         * and the share of trials that reached the target */
        if (num(p, "run.days_p50") >= num(p, "run.max_days"))
            snprintf(c[5], 24, ">%.0f %.0f%%", num(p, "run.max_days"), 100.0 * num(p, "run.reached_fraction"));
        else fmt(c[5], 24, "%.2f", num(p, "run.days_p50"));
        fmt(c[6], 24, "%.3f", num(p, "run.ettr"));
        double fits = num(p, "plan.fits_memory");
        char rank[16] = "";
        if (ranked) snprintf(rank, sizeof rank, "%d", i + 1);
        fprintf(out, "%4s %5.0f  %-*s %4s %9s %9s", rank, num(p, "id"), width, label, isnan(fits) ? "-" : fits ? "yes" : "NO",
                c[0], c[1]);
        if (multi) {
            char q[3][24];
            int many = many_steps(p);
            fmt(q[0], 24, "%.3f", many ? num(p, "step.steps.step_time_s_p50") : NAN);
            fmt(q[1], 24, "%.3f", many ? num(p, "step.steps.step_time_s_p95") : NAN);
            fmt(q[2], 24, "%.3f", many ? num(p, "step.steps.step_time_s_max") : NAN);
            fprintf(out, " %9s %9s %9s", q[0], q[1], q[2]);
        }
        fprintf(out, " %6s %10s %6s %13s %8s %8s %6s %4d\n", c[2], c[3], c[7], bandtxt, c[4], c[5], c[6],
                point_warning_count(p));
    }
    if (multi)
        fprintf(out, "mean_s, mfu, tok/s/gpu and the band are over all the simulated steps of a point (routing.steps, "
                     "up to %d here): the mean step time, and the tokens and model FLOPs processed over the steps' "
                     "whole time; p50_s/p95_s/max_s are the steps' distribution; step.* in results.json is step 0\n",
                max_steps);
    print_failed_steps(out, rows, n, dir);
    free(rows);
}

void print_results_table(FILE *out, const cJSON *doc, const char *dir) { table(out, doc, 0, dir); }
void print_results_table_by_tokens(FILE *out, const cJSON *doc, const char *dir) { table(out, doc, 1, dir); }

static const char *const LEVELS[] = {"plan", "step", "run"};

int point_warning_count(const cJSON *p) {
    int n = 0;
    for (int l = 0; l < 3; l++)
        n += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, LEVELS[l]), "warnings"));
    return n;
}

int print_results_warnings(FILE *out, const cJSON *doc, int max_lines) {
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    int total = 0, shown = 0;
    char label[LABEL_CAP];
    for (const cJSON *p = points ? points->child : NULL; p; p = p->next) {
        point_label(p, label, sizeof label);
        for (int l = 0; l < 3; l++) {
            const cJSON *w = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, LEVELS[l]), "warnings");
            for (const cJSON *e = w ? w->child : NULL; e; e = e->next, total++)
                if (cJSON_IsString(e) && shown < max_lines) {
                    fprintf(out, "warning: point %.0f (%s) %s: %s\n", num(p, "id"), label, LEVELS[l], e->valuestring);
                    shown++;
                }
        }
    }
    if (total > shown)
        fprintf(out, "warning: ... and %d more (every point's plan/step/run.warnings in results.json)\n", total - shown);
    return total;
}
