/* plots.c — figures from results with gnuplot. One small function per figure; they share the data
 * extraction (series grouped by the sweep values other than the x axis) and the drawing (one script
 * rendered twice: PNG and SVG). */
#include "sim/report/plots.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/report/results.h"

/* Where the figures go and what they are about. */
typedef struct {
    const char *dir;       /* DIR/plots */
    char scenario[96];     /* the scenario's name, in every title */
    FILE *log;             /* "drew ..." lines, or NULL */
} plot_ctx;

/* Dotted lookup of a number (NaN when absent). */
static double num(const cJSON *obj, const char *path) {
    char buf[160];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = obj;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cJSON_IsNumber(cur) ? cur->valuedouble : NAN;
}

static const cJSON *points_of(const cJSON *doc) { return cJSON_GetObjectItemCaseSensitive(doc, "points"); }

/* Does the sweep vary this key (in any point)? */
static int sweeps(const cJSON *doc, const char *key) {
    for (const cJSON *p = points_of(doc)->child; p; p = p->next)
        if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "sweep"), key)) return 1;
    return 0;
}

/* The series label of a point: its sweep values other than `xkey` ("" when none). */
static void series_label(const cJSON *p, const char *xkey, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(p, "sweep");
    for (const cJSON *e = sw ? sw->child : NULL; e; e = e->next) {
        if (strcmp(e->string, xkey) == 0 || len >= cap - 1) continue;
        /* strings unquoted: labels go inside gnuplot's quotes */
        char *v = cJSON_IsString(e) ? moe_xstrdup(e->valuestring) : cJSON_PrintUnformatted(e);
        const char *k = strrchr(e->string, '.') ? strrchr(e->string, '.') + 1 : e->string;
        for (char *c = v; *c; c++)
            if (*c == '"' || *c == '\'') *c = ' ';
        len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "", k, v);
        free(v);
    }
}

/* Write data blocks (gnuplot "index" blocks separated by two blank lines), one per series, rows
 * sorted by x; columns: x then each of `cols`. Returns the number of series; labels in `labels`. */
#define MAX_SERIES 12
static int write_series(FILE *f, const cJSON *doc, const char *xkey, const char *xpath, const char *const *cols,
                        int ncols, char labels[MAX_SERIES][128]) {
    int ns = 0, xkey_all = 0;
    for (const cJSON *p = points_of(doc)->child; p; p = p->next) {
        char lab[128];
        series_label(p, xkey, lab, sizeof lab);
        int s;
        for (s = 0; s < ns; s++)
            if (strcmp(labels[s], lab) == 0) break;
        if (s == ns && ns < MAX_SERIES) snprintf(labels[ns++], 128, "%s", lab);
    }
    /* keys zipped with the x axis make every point its own "series": then it is one series */
    if (ns > 1 && ns == cJSON_GetArraySize(points_of(doc))) {
        ns = 1;
        labels[0][0] = '\0';
        xkey_all = 1;
    }
    for (int s = 0; s < ns; s++) {
        fprintf(f, "# series %d: %s\n", s, labels[s][0] ? labels[s] : "all");
        /* selection sort by x over the series' points: sweeps are small */
        double last = -INFINITY;
        for (;;) {
            const cJSON *best = NULL;
            double bx = INFINITY;
            for (const cJSON *p = points_of(doc)->child; p; p = p->next) {
                char lab[128];
                series_label(p, xkey, lab, sizeof lab);
                double x = num(p, xpath);
                if ((xkey_all || strcmp(lab, labels[s]) == 0) && x > last && x < bx) { bx = x; best = p; }
            }
            if (!best) break;
            fprintf(f, "%.10g", bx);
            for (int c = 0; c < ncols; c++) {
                double v = num(best, cols[c]);
                if (isnan(v)) fprintf(f, " NaN");
                else fprintf(f, " %.10g", v);
            }
            fputc('\n', f);
            last = bx;
        }
        fputs("\n\n", f);
    }
    return ns;
}

/* Render `body` (gnuplot commands that plot from FIG.dat) to FIG.png and FIG.svg atomically. The
 * script finds its data and writes its figures beside itself (ARG0), so `gnuplot DIR/plots/FIG.gp`
 * redraws them from any directory; moesim runs it with suffix='.tmp' and renames the results. */
static int render(const plot_ctx *c, const char *fig, const char *what, const char *body, moe_error *err) {
    char gp[4096], png[4096], svg[4096];
    snprintf(gp, sizeof gp, "%s/%s.gp", c->dir, fig);
    snprintf(png, sizeof png, "%s/%s.png", c->dir, fig);
    snprintf(svg, sizeof svg, "%s/%s.svg", c->dir, fig);
    size_t cap = strlen(body) + 8192;
    char *script = moe_xmalloc(cap);
    snprintf(script, cap,
             "# %s: %s (%s). Drawn by moesim from ../results.json; redraw from anywhere: gnuplot path/to/%s.gp\n"
             "# the folder of this script, so that the data and the figures are found beside it\n"
             "prefix(p, acc) = strstrt(p, '/') ? prefix(p[strstrt(p, '/') + 1:], acc . p[1:strstrt(p, '/')]) : acc\n"
             "here = prefix(ARG0, '')\n"
             "if (!exists('suffix')) suffix = ''\n"
             "datafile = here . '%s.dat'\n"
             "set terminal pngcairo size 1100,680 font 'sans,11' noenhanced\n"
             "set output here . '%s.png' . suffix\n"
             "%s\n"
             "set terminal svg size 1100,680 font 'sans,11' noenhanced\n"
             "set output here . '%s.svg' . suffix\n"
             "replot\n"
             "unset output\n",
             fig, what, c->scenario, fig, fig, fig, body, fig);
    int rc = write_file_atomic(gp, script, err);
    free(script);
    if (rc) return rc;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "gnuplot -e \"suffix='.tmp'\" '%s' 2>&1", gp);
    FILE *p = popen(cmd, "r");
    if (!p) return moe_error_set(err, EXIT_RUNTIME, "plots: cannot run gnuplot (is gnuplot-nox installed?)");
    char out[2048] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    char tmp[4200];
    if (status != 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp", png);
        unlink(tmp);
        snprintf(tmp, sizeof tmp, "%s.tmp", svg);
        unlink(tmp);
        return moe_error_set(err, EXIT_RUNTIME, "plots: gnuplot failed on %s (is gnuplot-nox installed?): %.400s",
                             gp, out);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", png);
    if ((rc = file_publish(tmp, png, err))) return rc;
    snprintf(tmp, sizeof tmp, "%s.tmp", svg);
    if ((rc = file_publish(tmp, svg, err))) return rc;
    if (c->log) fprintf(c->log, "drew %s/%s.png and .svg: %s\n", c->dir, fig, what);
    return 0;
}

/* Write FIG.dat with the series, then render with a plot command built per series. */
typedef struct {
    const char *fig, *xkey, *xpath;
    const char *const *cols;
    int ncols;
} figure_data;

static int write_data(const plot_ctx *c, const cJSON *doc, const figure_data *fd, char labels[MAX_SERIES][128],
                      int *ns, moe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", c->dir, fd->fig);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# %s", fd->xpath);
    for (int c = 0; c < fd->ncols; c++) fprintf(f, " %s", fd->cols[c]);
    fputc('\n', f);
    *ns = write_series(f, doc, fd->xkey, fd->xpath, fd->cols, fd->ncols, labels);
    fclose(f);
    int rc = write_file_atomic(path, buf, err);
    free(buf);
    return rc;
}

static const char *title_of(const char *label) { return label[0] ? label : "simulated"; }

static int fig_ckpt_interval(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    static const char *const cols[] = {"run.days_p50", "run.days_p5", "run.days_p95"};
    figure_data fd = {"ckpt_interval", "reliability.checkpoint.interval_min",
                      "scenario.reliability.checkpoint.interval_min", cols, 3};
    char labels[MAX_SERIES][128];
    int ns;
    if (write_data(c, doc, &fd, labels, &ns, err)) return err->code;
    const cJSON *p0 = points_of(doc)->child;
    double young = num(p0, "plan.young_interval_min"), daly = num(p0, "plan.daly_interval_min");
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "set title '%s: days to the token target vs checkpoint interval (median, p5-p95 over the trials)'\n"
                     "set xlabel 'checkpoint interval (min)'\nset ylabel 'wall-clock days to target'\n"
                     "set grid\nset key top right\nset logscale x 2\n", c->scenario);
    if (!isnan(young))
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "set arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb '#1b9e77'\n"
                      "set label 'Young %.0f min' at %g, graph 0.95 left offset 0.5,0 tc rgb '#1b9e77'\n",
                      young, young, young, young);
    if (!isnan(daly))
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "set arrow from %g, graph 0 to %g, graph 1 nohead dt 3 lc rgb '#d95f02'\n"
                      "set label 'Daly %.0f min' at %g, graph 0.88 left offset 0.5,0 tc rgb '#d95f02'\n",
                      daly, daly, daly, daly);
    n += snprintf(body + n, sizeof body - (size_t)n, "plot ");
    for (int s = 0; s < ns; s++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%sdatafile index %d using 1:2:3:4 with yerrorlines lw 2 pt 7 title '%s'", s ? ", " : "", s,
                      title_of(labels[s]));
    return render(c, fd.fig, "days to the token target (p50, p5-p95 bars) vs checkpoint interval, Young and Daly marked",
                  body, err);
}

static int fig_hot_spares(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    static const char *const cols[] = {"run.ettr", "run.days_p50", "run.days_p5", "run.days_p95"};
    figure_data fd = {"hot_spares", "reliability.recovery.hot_spare_fraction",
                      "scenario.reliability.recovery.hot_spare_fraction", cols, 4};
    char labels[MAX_SERIES][128];
    int ns;
    if (write_data(c, doc, &fd, labels, &ns, err)) return err->code;
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "set title '%s: effective training time ratio and days to target vs hot-spare pool'\n"
                     "set xlabel 'hot spares (fraction of nodes)'\nset ylabel 'ETTR (useful / wall time, mean over trials)'\n"
                     "set y2label 'wall-clock days to target (p50, p5-p95 bars)'\nset y2tics\nset ytics nomirror\n"
                     "set grid\nset key bottom right\nset yrange [*:1]\n"
                     "set arrow from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 2 lc rgb 'gray'\n"
                     "set label 'ETTR 95%%' at graph 0.02, first 0.95 offset 0,0.7 tc rgb 'gray'\n"
                     "plot ", c->scenario);
    for (int s = 0; s < ns; s++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%sdatafile index %d using 1:2 with linespoints lw 2 pt 7 title 'ETTR %s', "
                      "datafile index %d using 1:3:4:5 axes x1y2 with yerrorlines dt 2 pt 6 title 'days %s'",
                      s ? ", " : "", s, labels[s], s, labels[s]);
    return render(c, fd.fig, "ETTR and days to target (p50, p5-p95 bars) vs hot-spare fraction", body, err);
}

static int fig_scaling(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    static const char *const cols[] = {"step.tokens_per_s_per_gpu", "plan.tokens_per_s_per_gpu"};
    figure_data fd = {"scaling", "cluster.nodes", "scenario.cluster.nodes", cols, 2};
    char labels[MAX_SERIES][128];
    int ns;
    if (write_data(c, doc, &fd, labels, &ns, err)) return err->code;
    const cJSON *p0 = points_of(doc)->child;
    double gpn = num(p0, "scenario.cluster.gpus_per_node");
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "set title '%s: throughput per GPU vs cluster size'\n"
                     "set xlabel 'GPUs'\nset ylabel 'tokens / s / GPU'\nset grid\nset key bottom left\n"
                     "set logscale x 2\nset yrange [0:*]\nplot ", c->scenario);
    for (int s = 0; s < ns; s++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%sdatafile index %d using ($1*%g):2 with linespoints lw 2 pt 7 title 'step %s', "
                      "datafile index %d using ($1*%g):3 with linespoints dt 2 pt 6 title 'plan %s'",
                      s ? ", " : "", s, gpn, labels[s], s, gpn, labels[s]);
    return render(c, fd.fig, "tokens/s/GPU vs GPU count (step and plan)", body, err);
}

/* The step level's breakdown when the points have one, else the plan's. */
static const char *breakdown_level(const cJSON *doc) {
    return cJSON_GetObjectItemCaseSensitive(points_of(doc)->child, "step") ? "step" : "plan";
}

/* the step split (step_accounting.h); host_s: the compute stream waiting for the host (0 at plan level) */
#define N_PARTS 5
static const char *const PARTS[N_PARTS] = {"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "host_s"};

static double part(const cJSON *p, const char *lvl, int c) {
    char key[64];
    snprintf(key, sizeof key, "%s.%s", lvl, PARTS[c]);
    double v = num(p, key);
    return isnan(v) ? 0.0 : v;
}

/* Every point's parts equal to the first's (within 1e-9 relative): such bars say nothing. */
static int breakdowns_all_equal(const cJSON *doc, const char *lvl) {
    const cJSON *p0 = points_of(doc)->child;
    for (const cJSON *p = p0->next; p; p = p->next)
        for (int c = 0; c < N_PARTS; c++)
            if (fabs(part(p, lvl, c) - part(p0, lvl, c)) > 1e-9 * (fabs(part(p0, lvl, c)) + 1e-12)) return 0;
    return 1;
}

static void point_bar_label(const cJSON *p, char *lab, size_t cap) {
    series_label(p, "", lab, cap);
    if (!lab[0] || strstr(lab, "layout"))
        snprintf(lab, cap, "tp%.0f pp%.0f ep%.0f dp%.0f", num(p, "scenario.layout.tp"), num(p, "scenario.layout.pp"),
                 num(p, "scenario.layout.ep"), num(p, "scenario.layout.dp"));
}

/* Stacked bars of `fig`: one per point of `pts` (n of them), labelled with its sweep values (or
 * layout). */
static int stacked_bars(const plot_ctx *c, const char *fig, const char *title, const char *what, const cJSON *const *pts,
                        int n, const char *lvl, moe_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", c->dir, fig);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# label %s.compute_s %s.exposed_comm_s %s.bubble_s %s.optimizer_s %s.host_s\n", lvl, lvl, lvl, lvl, lvl);
    for (int i = 0; i < n; i++) {
        char lab[128];
        point_bar_label(pts[i], lab, sizeof lab);
        fprintf(f, "\"%s\"", lab);
        for (int k = 0; k < N_PARTS; k++) fprintf(f, " %.10g", part(pts[i], lvl, k));
        fputc('\n', f);
    }
    fclose(f);
    int rc = write_file_atomic(path, buf, err);
    free(buf);
    if (rc) return rc;
    char body[4096];
    snprintf(body, sizeof body,
             "set title '%s: %s (%s level)'\n"
             "set ylabel 'seconds per step'\nset style data histograms\nset style histogram rowstacked\n"
             "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset grid ytics\nset key outside right top\n"
             "set xtics rotate by -35 font ',9'\n"
             "plot datafile using 2:xtic(1) title 'compute', '' using 3 title 'exposed comm', "
             "'' using 4 title 'pipeline bubble', '' using 5 title 'optimizer', '' using 6 title 'host wait'",
             c->scenario, title, lvl);
    return render(c, fig, what, body, err);
}

static int fig_step_breakdown(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    int n = cJSON_GetArraySize(points_of(doc)), i = 0;
    const cJSON **pts = moe_xcalloc((size_t)n, sizeof *pts);
    for (const cJSON *p = points_of(doc)->child; p; p = p->next) pts[i++] = p;
    int rc = stacked_bars(c, "step_breakdown", "step time breakdown per point",
                          "stacked compute / exposed communication / bubble / optimizer / host wait seconds per point", pts, n,
                          breakdown_level(doc), err);
    free(pts);
    return rc;
}

/* The step time that ranks a point: the step level's when computed, else the plan's; infinite when
 * it does not fit in memory. */
static double rank_time(const cJSON *p) {
    const cJSON *fits = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "plan"), "fits_memory");
    if (cJSON_IsFalse(fits)) return INFINITY;
    double t = num(p, "step.step_time_s");
    if (isnan(t)) t = num(p, "plan.step_time_s");
    return isnan(t) ? INFINITY : t;
}

static int by_rank_time(const void *a, const void *b) {
    double ta = rank_time(*(const cJSON *const *)a), tb = rank_time(*(const cJSON *const *)b);
    return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/* Sweeps too large for one bar per point (layout sweeps): the TOP_N fastest that fit. */
#define TOP_N 20
static int fig_top_layouts(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    int n = cJSON_GetArraySize(points_of(doc)), i = 0;
    const cJSON **pts = moe_xcalloc((size_t)n, sizeof *pts);
    for (const cJSON *p = points_of(doc)->child; p; p = p->next) pts[i++] = p;
    qsort(pts, (size_t)n, sizeof *pts, by_rank_time);
    int top = 0;
    while (top < n && top < TOP_N && isfinite(rank_time(pts[top]))) top++;
    char title[96], what[160];
    snprintf(title, sizeof title, "the %d fastest of %d points that fit, step time breakdown", top, n);
    snprintf(what, sizeof what, "stacked breakdown of the %d fastest points that fit in memory (of %d)", top, n);
    int rc = top > 0 ? stacked_bars(c, "top_layouts", title, what, pts, top, breakdown_level(doc), err) : 0;
    free(pts);
    return rc;
}

/* routing.steps > 1: the point's step series (step.steps.series), or NULL. */
static const cJSON *step_series(const cJSON *p, const char *key) {
    const cJSON *se = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "step"), "steps"), "series");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(se, key);
    return cJSON_GetArraySize(v) > 1 ? v : NULL;
}

static int count_step_series(const cJSON *doc) {
    int n = 0;
    for (const cJSON *p = points_of(doc)->child; p; p = p->next) n += step_series(p, "step_time_s") != NULL;
    return n;
}

/* The step time of each simulated step (routing.steps), one line per point (the first MAX_SERIES
 * points that have steps), with the most routed expert's share of the tokens on the right axis and a
 * cross on every step whose collective timed out (the NCCL watchdog fired: its time is then the time
 * until it fired). */
static int fig_step_series(const plot_ctx *c, const cJSON *doc, moe_error *err) {
    static const char *const cols[] = {"step_time_s", "max_expert_share", "hot_share"};
    char path[4096], labels[MAX_SERIES][128];
    snprintf(path, sizeof path, "%s/step_series.dat", c->dir);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# step step.steps.series.step_time_s step.steps.series.max_expert_share step.steps.series.hot_share "
               "timed_out_step_time_s (the step time where step.steps.series.timed_out, else NaN); one block per point\n");
    int ns = 0;
    for (const cJSON *p = points_of(doc)->child; p && ns < MAX_SERIES; p = p->next) {
        const cJSON *v[3];
        for (int k = 0; k < 3; k++) v[k] = step_series(p, cols[k]);
        if (!v[0]) continue;
        series_label(p, "", labels[ns], sizeof labels[ns]);
        if (!labels[ns][0]) snprintf(labels[ns], sizeof labels[ns], "point %.0f", num(p, "id"));
        fprintf(f, "# point %.0f: %s\n", num(p, "id"), labels[ns]);
        int n = cJSON_GetArraySize(v[0]);
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "step"), "steps"), "series");
        to = cJSON_GetObjectItemCaseSensitive(to, "timed_out");
        for (int i = 0; i < n; i++) {
            fprintf(f, "%d", i);
            for (int k = 0; k < 3; k++) {
                const cJSON *x = v[k] ? cJSON_GetArrayItem(v[k], i) : NULL;
                if (cJSON_IsNumber(x)) fprintf(f, " %.10g", x->valuedouble);
                else fprintf(f, " NaN");
            }
            if (cJSON_IsTrue(cJSON_GetArrayItem(to, i))) fprintf(f, " %.10g", cJSON_GetArrayItem(v[0], i)->valuedouble);
            else fprintf(f, " NaN");
            fputc('\n', f);
        }
        fputs("\n\n", f);
        ns++;
    }
    fclose(f);
    int rc = write_file_atomic(path, buf, err);
    free(buf);
    if (rc) return rc;
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "set title '%s: step time of each simulated step (routing.steps), and the most routed expert'\n"
                     "set xlabel 'step'\nset ylabel 'step time (s)'\nset y2label 'most routed expert: share of the "
                     "tokens (dashed)'\nset y2tics\nset ytics nomirror\nset grid\nset key outside below\n"
                     "set yrange [0:*]\nset y2range [0:*]\nplot ", c->scenario);
    for (int s = 0; s < ns; s++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%sdatafile index %d using 1:2 with linespoints lw 2 pt 7 lc %d title '%s', "
                      "datafile index %d using 1:3 axes x1y2 with lines dt 2 lc %d notitle, "
                      "datafile index %d using 1:5 with points pt 2 ps 2.5 lw 2 lc %d %s",
                      s ? ", " : "", s, s + 1, labels[s], s, s + 1, s, s + 1,
                      s ? "notitle" : "title 'x: timed out (its time until the watchdog fired)'");
    return render(c, "step_series", "the step time of each simulated step (routing.steps) per point, the most routed "
                  "expert's share beside", body, err);
}

int plots_write(const char *results_dir, const cJSON *doc, FILE *log, int *n_written, moe_error *err) {
    *n_written = 0;
    const cJSON *pts = points_of(doc);
    int n = cJSON_GetArraySize(pts);
    if (n == 0) {
        if (log) fprintf(log, "plots: no points, nothing to draw\n");
        return 0;
    }
    /* every figure but the step series needs two points or more: a single run draws only that */
    int series = count_step_series(doc);
    if (n == 1 && !series) return 0;
    plot_ctx c = {.log = log};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/plots", results_dir);
    c.dir = dir;
    const cJSON *p0 = pts->child;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p0, "scenario"), "name");
    snprintf(c.scenario, sizeof c.scenario, "%s", cJSON_IsString(name) ? name->valuestring : "scenario");
    for (char *q = c.scenario; *q; q++)
        if (*q == '\'') *q = ' ';
    int have_run = cJSON_GetObjectItemCaseSensitive(p0, "run") != NULL;
    int have_level = cJSON_GetObjectItemCaseSensitive(p0, "step") || cJSON_GetObjectItemCaseSensitive(p0, "plan");
    int ckpt = have_run && sweeps(doc, "reliability.checkpoint.interval_min");
    int spares = have_run && sweeps(doc, "reliability.recovery.hot_spare_fraction");
    int scaling = sweeps(doc, "cluster.nodes");
    int bars = n >= 2 && n <= 60 && have_level && !breakdowns_all_equal(doc, breakdown_level(doc));
    int top = n > 60 && have_level;
    if ((ckpt || spares || scaling || bars || top || series) && make_dirs(dir, err)) return err->code;
    int rc = 0;
    if (!rc && ckpt && !(rc = fig_ckpt_interval(&c, doc, err))) ++*n_written;
    if (!rc && spares && !(rc = fig_hot_spares(&c, doc, err))) ++*n_written;
    if (!rc && scaling && !(rc = fig_scaling(&c, doc, err))) ++*n_written;
    if (!rc && bars && !(rc = fig_step_breakdown(&c, doc, err))) ++*n_written;
    if (!rc && top && !(rc = fig_top_layouts(&c, doc, err))) ++*n_written;
    if (!rc && series && !(rc = fig_step_series(&c, doc, err))) ++*n_written;
    if (rc || !log) return rc;
    if (series > MAX_SERIES)
        fprintf(log, "plots: step_series shows the first %d of the %d points with steps (one line each; all the "
                     "series are in results.db, step.steps.series.step_time_s)\n", MAX_SERIES, series);
    if (n == 1) return 0;
    if (n >= 2 && n <= 60 && have_level && !bars)
        fprintf(log, "plots: no step breakdown: every point has the same one (the sweep varies nothing the %s level "
                     "prices)\n", breakdown_level(doc));
    if (*n_written == 0)
        fprintf(log, "plots: nothing to draw for %d points: figures are drawn for sweeps of the checkpoint interval "
                     "or hot spares (run level), of cluster.nodes, for points with different step breakdowns and for "
                     "routing.steps > 1 (the step series)\n", n);
    return 0;
}

int plots_pareto(const char *dir, const cJSON *doc, moe_error *err) {
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(doc, "points");
    const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "grid"), "tiers");
    char path[4096];
    snprintf(path, sizeof path, "%s/pareto.dat", dir);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# gpu_hours days_mean hot_spare_fraction interval_min; one block per tier choice, then the front\n");
    int nt = 0;
    for (const cJSON *t = tiers ? tiers->child : NULL; t; t = t->next, nt++) {
        fprintf(f, "# tier %s\n", t->valuestring);
        for (const cJSON *p = pts ? pts->child : NULL; p; p = p->next)
            if (strcmp(cJSON_GetObjectItemCaseSensitive(p, "tier")->valuestring, t->valuestring) == 0)
                fprintf(f, "%.10g %.10g %.10g %.10g\n", num(p, "gpu_hours"), num(p, "days_mean"),
                        num(p, "hot_spare_fraction"), num(p, "interval_min"));
        fputs("\n\n", f);
    }
    /* the front, by days (selection: grids are small) */
    fprintf(f, "# Pareto front\n");
    double last = -INFINITY;
    for (;;) {
        const cJSON *best = NULL;
        for (const cJSON *p = pts ? pts->child : NULL; p; p = p->next) {
            double d = num(p, "days_mean");
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "pareto")) && d > last &&
                (!best || d < num(best, "days_mean")))
                best = p;
        }
        if (!best) break;
        fprintf(f, "%.10g %.10g %.10g %.10g\n", num(best, "gpu_hours"), num(best, "days_mean"),
                num(best, "hot_spare_fraction"), num(best, "interval_min"));
        last = num(best, "days_mean");
    }
    fclose(f);
    int rc = write_file_atomic(path, buf, err);
    free(buf);
    if (rc) return rc;
    plot_ctx c = {.dir = dir};
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(doc, "scenario");
    snprintf(c.scenario, sizeof c.scenario, "%s", cJSON_IsString(name) ? name->valuestring : "scenario");
    for (char *q = c.scenario; *q; q++)
        if (*q == '\'') *q = ' ';
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "set title '%s: hot spares x checkpoint interval x tiers, days to target vs GPU-hours'\n"
                     "set xlabel 'GPU-hours incl. idle spares'\nset ylabel 'wall-clock days to target (mean)'\n"
                     "set grid\nset key top right\nset format x '%%.3g'\nplot ", c.scenario);
    int s = 0;
    for (const cJSON *t = tiers ? tiers->child : NULL; t; t = t->next, s++)
        n += snprintf(body + n, sizeof body - (size_t)n, "datafile index %d using 1:2 with points pt %d ps 1.2 title '%s', ",
                      s, 6 + s, t->valuestring);
    snprintf(body + n, sizeof body - (size_t)n,
             "datafile index %d using 1:2 with linespoints lw 2 pt 7 lc rgb 'black' title 'Pareto front', "
             "datafile index %d using 1:2:(sprintf('%%.3g, %%g min', $3, $4)) with labels offset 1,0.6 left font ',8' notitle",
             nt, nt);
    return render(&c, "pareto", "days to target vs GPU-hours per tier choice, the Pareto front labelled", body, err);
}
