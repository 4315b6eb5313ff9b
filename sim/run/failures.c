/* failures.c — per-class failure renewal processes and failure-log replay (see failures.h). */
#include "sim/run/failures.h"
#include "sim/base/alloc.h"
#include "sim/base/fileio.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>


/* ---- drawing ------------------------------------------------------------------------------------ */

double failure_draw_interarrival(failure_dist_kind dist, double weibull_shape, double mean_s,
                                 gsl_rng *rng) {
    if (!isfinite(mean_s)) return INFINITY;
    if (dist == DIST_WEIBULL) {
        /* E[Weibull(a, b)] = a Gamma(1 + 1/b): choose the scale a that keeps the mean. */
        double scale = mean_s / gsl_sf_gamma(1.0 + 1.0 / weibull_shape);
        return gsl_ran_weibull(rng, scale, weibull_shape);
    }
    return gsl_ran_exponential(rng, mean_s);
}

void failure_process_init(failure_process *fp, failure_dist_kind dist, double weibull_shape,
                          double mtbf_cluster_s, const failure_class_cfg classes[FAIL_NCLASSES],
                          int n_gpus, const failure_trace *trace) {
    memset(fp, 0, sizeof *fp);
    fp->dist = dist;
    fp->weibull_shape = weibull_shape;
    fp->n_gpus = n_gpus;
    fp->trace = trace;
    double total = 0;
    for (int c = 0; c < FAIL_NCLASSES; c++) total += classes[c].share > 0 ? classes[c].share : 0;
    int drawn = mtbf_cluster_s > 0 && isfinite(mtbf_cluster_s) && total > 0;
    for (int c = 0; c < FAIL_NCLASSES; c++) {
        double share = classes[c].share > 0 ? classes[c].share / total : 0;
        /* class rate = share / M, so its mean inter-arrival is M / share */
        fp->mean_s[c] = (drawn && share > 0) ? mtbf_cluster_s / share : INFINITY;
        fp->next_s[c] = INFINITY;
    }
}

void failure_process_reset(failure_process *fp, gsl_rng *rng) {
    fp->rng = rng;
    fp->trace_pos = 0;
    for (int c = 0; c < FAIL_NCLASSES; c++)
        fp->next_s[c] = fp->trace ? INFINITY
                                  : failure_draw_interarrival(fp->dist, fp->weibull_shape,
                                                              fp->mean_s[c], rng);
}

static int next_class(const failure_process *fp) {
    int best = 0;
    for (int c = 1; c < FAIL_NCLASSES; c++)
        if (fp->next_s[c] < fp->next_s[best]) best = c;
    return best;
}

double failure_process_peek(const failure_process *fp) {
    if (fp->trace)
        return fp->trace_pos < fp->trace->n ? fp->trace->ev[fp->trace_pos].time_s : INFINITY;
    return fp->next_s[next_class(fp)];
}

failure_event failure_process_pop(failure_process *fp) {
    if (fp->trace) {
        if (fp->trace_pos >= fp->trace->n) return (failure_event){INFINITY, FAIL_GPU, 0};
        return fp->trace->ev[fp->trace_pos++];
    }
    int c = next_class(fp);
    failure_event ev = {fp->next_s[c], (failure_class)c, 0};
    if (!isfinite(ev.time_s)) return ev;
    fp->next_s[c] += failure_draw_interarrival(fp->dist, fp->weibull_shape, fp->mean_s[c], fp->rng);
    ev.rank = (int)gsl_rng_uniform_int(fp->rng, (unsigned long)fp->n_gpus);
    return ev;
}

/* ---- failure logs ----------------------------------------------------------------------------- */

enum { COL_TIME = 0, COL_COMPONENT, COL_RANK, NCOLS };
static const char *const COL_NAMES[NCOLS] = {"time_h", "component", "rank"};
#define MAX_FIELDS 16
#define LINE_MAX_CHARS 1024

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* Split `line` in place at commas; returns the field count (at most MAX_FIELDS + 1). */
static int split_csv(char *line, char *fields[MAX_FIELDS + 1]) {
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (n <= MAX_FIELDS) fields[n] = trim(p);
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    return n > MAX_FIELDS + 1 ? MAX_FIELDS + 1 : n;
}

static int cmp_event_time(const void *a, const void *b) {
    const failure_event *x = a, *y = b;
    if (x->time_s < y->time_s) return -1;
    if (x->time_s > y->time_s) return 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (int)x->cls - (int)y->cls;
}

static int parse_header(const char *path, char *line, int lineno, int col_of[NCOLS], int *n_cols,
                        moe_error *err) {
    char copy[LINE_MAX_CHARS];
    snprintf(copy, sizeof copy, "%s", line);
    char *fields[MAX_FIELDS + 1];
    int n = split_csv(line, fields);
    char where[64];
    snprintf(where, sizeof where, "line %d (header)", lineno);
    if (n > MAX_FIELDS)
        return moe_error_input(err, path, where, copy, "at most %d columns", MAX_FIELDS);
    for (int c = 0; c < NCOLS; c++) col_of[c] = -1;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < NCOLS; c++)
            if (strcmp(fields[i], COL_NAMES[c]) == 0) col_of[c] = i;
    for (int c = 0; c < NCOLS; c++)
        if (col_of[c] < 0)
            return moe_error_input(err, path, where, copy,
                                   "a header naming the columns time_h,component,rank "
                                   "(column \"%s\" is missing)", COL_NAMES[c]);
    *n_cols = n;
    return 0;
}

static int parse_event(const char *path, char *line, int lineno, const int col_of[NCOLS],
                       int n_cols, int n_gpus, failure_event *ev, moe_error *err) {
    char copy[LINE_MAX_CHARS];
    snprintf(copy, sizeof copy, "%s", line);
    char *fields[MAX_FIELDS + 1];
    int n = split_csv(line, fields);
    char where[96];
    if (n != n_cols) {
        snprintf(where, sizeof where, "line %d", lineno);
        return moe_error_input(err, path, where, copy, "%d comma-separated fields like the header "
                               "(time_h,component,rank), found %d", n_cols, n);
    }
    const char *t = fields[col_of[COL_TIME]], *comp = fields[col_of[COL_COMPONENT]],
               *rk = fields[col_of[COL_RANK]];
    char *end;
    errno = 0;
    double time_h = strtod(t, &end);
    snprintf(where, sizeof where, "line %d, column time_h", lineno);
    if (*t == '\0' || *end != '\0' || errno == ERANGE || !isfinite(time_h))
        return moe_error_input(err, path, where, *t ? t : "\"\"", "a time in hours (a number >= 0)");
    if (time_h < 0)
        return moe_error_input(err, path, where, t, "a time in hours >= 0");
    snprintf(where, sizeof where, "line %d, column component", lineno);
    failure_class cls;
    if (failure_class_parse(comp, &cls) != 0) {
        const char *hint = moe_did_you_mean(comp, FAILURE_CLASS_NAMES);
        char quoted[80];
        snprintf(quoted, sizeof quoted, "\"%.60s\"", comp);
        return moe_error_input(err, path, where, quoted,
                               "one of gpu, hbm, nic, nvlink, switch, host, software%s%s%s",
                               hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
    }
    snprintf(where, sizeof where, "line %d, column rank", lineno);
    errno = 0;
    long rank = strtol(rk, &end, 10);
    if (*rk == '\0' || *end != '\0' || errno == ERANGE || rank < 0 || rank >= n_gpus)
        return moe_error_input(err, path, where, *rk ? rk : "\"\"",
                               "a GPU rank, an integer in [0, %d]", n_gpus - 1);
    ev->time_s = time_h * 3600.0;
    ev->cls = cls;
    ev->rank = (int)rank;
    return 0;
}

int failure_trace_parse(const char *path, const char *text, size_t len, int n_gpus, failure_trace *out,
                        moe_error *err) {
    out->n = 0;
    out->ev = NULL;
    char line[LINE_MAX_CHARS];
    int lineno = 0, have_header = 0, n_cols = 0, cap = 0, rc = 0;
    int col_of[NCOLS];
    for (size_t at = 0; at < len && rc == 0;) {
        lineno++;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char where[32];
        snprintf(where, sizeof where, "line %d", lineno);
        if (n >= sizeof line) {
            rc = moe_error_input(err, path, where, NULL, "lines shorter than %d characters", LINE_MAX_CHARS - 1);
            break;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        at += n + 1;
        if (strlen(line) != n) {
            rc = moe_error_input(err, path, where, "a NUL byte", "a text file (CSV)");
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#') continue;
        if (!have_header) {
            rc = parse_header(path, s, lineno, col_of, &n_cols, err);
            have_header = 1;
            continue;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            out->ev = moe_xrealloc(out->ev, (size_t)cap, sizeof *out->ev);
        }
        rc = parse_event(path, s, lineno, col_of, n_cols, n_gpus, &out->ev[out->n], err);
        if (rc == 0) out->n++;
    }
    if (rc == 0 && !have_header)
        rc = moe_error_input(err, path, "line 1", NULL, "a header line time_h,component,rank");
    if (rc != 0) {
        failure_trace_free(out);
        return rc;
    }
    /* A log may list simultaneous failures in any order; the replay needs them by time.
     * Ties: qsort is not stable, so break them by rank then class for a deterministic order.
     * A log of only a header has no events (and qsort must not see a NULL array). */
    if (out->n > 1) qsort(out->ev, (size_t)out->n, sizeof *out->ev, cmp_event_time);
    return 0;
}

int failure_trace_load(const char *path, int n_gpus, failure_trace *out, moe_error *err) {
    out->n = 0;
    out->ev = NULL;
    size_t len = 0;
    char *text = read_file_text(path, &len, err);
    if (!text) return err->code;
    int rc = failure_trace_parse(path, text, len, n_gpus, out, err);
    free(text);
    return rc;
}

void failure_trace_free(failure_trace *t) {
    free(t->ev);
    t->ev = NULL;
    t->n = 0;
}
