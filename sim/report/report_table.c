/* report_table.c — results as an aligned text table. */
#include "sim/report/report_table.h"
#include "sim/base/alloc.h"

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
    if (!len)
        snprintf(label, cap, "%.0f.%.0f.%.0f.%.0f", num(p, "scenario.layout.tp"), num(p, "scenario.layout.pp"),
                 num(p, "scenario.layout.ep"), num(p, "scenario.layout.dp"));
}

#define LABEL_CAP 512

static void table(FILE *out, const cJSON *doc, int by_tokens) {
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    int n = cJSON_GetArraySize(points);
    if (n == 0) { fprintf(out, "(no points)\n"); return; }
    row *rows = moe_xcalloc((size_t)n, sizeof *rows);
    int i = 0, ranked = n > 1, width = 28;
    char label[LABEL_CAP];
    for (const cJSON *p = points->child; p; p = p->next, i++) {
        const char *level = by_tokens ? "tokens_per_s_per_gpu" : "step_time_s";
        char path[64];
        snprintf(path, sizeof path, "step.%s", level);
        double st = num(p, path);
        snprintf(path, sizeof path, "plan.%s", level);
        if (isnan(st)) st = num(p, path);
        if (by_tokens) st = -st;
        double fits = num(p, "plan.fits_memory");
        rows[i].pt = p;
        rows[i].key = (fits == 0 || isnan(st)) ? INFINITY : st;
        point_label(p, label, sizeof label);
        if ((int)strlen(label) > width) width = (int)strlen(label);
    }
    if (ranked) qsort(rows, (size_t)n, sizeof *rows, by_key);
    /* routing.steps > 1: the distribution of the steps' times beside step 0's */
    int multi = 0;
    for (i = 0; i < n; i++) multi |= num(rows[i].pt, "step.steps.count") > 1;

    fprintf(out, "%4s %5s  %-*s %4s %9s %9s", ranked ? "rank" : "", "point", width, "sweep / layout tp.pp.ep.dp", "fits",
            "plan_s", "step_s");
    if (multi) fprintf(out, " %9s %9s %9s", "p50_s", "p95_s", "max_s");
    fprintf(out, " %6s %10s %6s %13s %8s %8s %6s %4s\n", "mfu", "tok/s/gpu", "drop%", "tok/s band", "mem_GiB", "days_p50",
            "ettr", "warn");
    for (i = 0; i < n; i++) {
        const cJSON *p = rows[i].pt;
        char c[8][24];
        point_label(p, label, sizeof label);
        double mfu = num(p, "step.mfu"), tps = num(p, "step.tokens_per_s_per_gpu");
        if (isnan(mfu)) mfu = num(p, "plan.mfu");
        if (isnan(tps)) tps = num(p, "plan.tokens_per_s_per_gpu");
        fmt(c[0], 24, "%.3f", num(p, "plan.step_time_s"));
        fmt(c[1], 24, "%.3f", num(p, "step.step_time_s"));
        fmt(c[2], 24, "%.3f", mfu);
        fmt(c[3], 24, "%.0f", tps);
        /* the error band of tok/s/gpu (validation residuals, sim/point/validate.h) */
        const cJSON *band = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "step"),
                                                             "tokens_per_s_per_gpu_band");
        if (!band) band = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "plan"),
                                                          "tokens_per_s_per_gpu_band");
        char bandtxt[32] = "-";
        if (cJSON_GetArraySize(band) == 2)
            snprintf(bandtxt, sizeof bandtxt, "%.0f-%.0f", cJSON_GetArrayItem(band, 0)->valuedouble,
                     cJSON_GetArrayItem(band, 1)->valuedouble);
        fmt(c[7], 24, "%.1f", 100.0 * num(p, "step.dropped_token_fraction"));
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
            int many = num(p, "step.steps.count") > 1;
            fmt(q[0], 24, "%.3f", many ? num(p, "step.steps.step_time_s_p50") : NAN);
            fmt(q[1], 24, "%.3f", many ? num(p, "step.steps.step_time_s_p95") : NAN);
            fmt(q[2], 24, "%.3f", many ? num(p, "step.steps.step_time_s_max") : NAN);
            fprintf(out, " %9s %9s %9s", q[0], q[1], q[2]);
        }
        fprintf(out, " %6s %10s %6s %13s %8s %8s %6s %4d\n", c[2], c[3], c[7], bandtxt, c[4], c[5], c[6],
                point_warning_count(p));
    }
    free(rows);
}

void print_results_table(FILE *out, const cJSON *doc) { table(out, doc, 0); }
void print_results_table_by_tokens(FILE *out, const cJSON *doc) { table(out, doc, 1); }

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
