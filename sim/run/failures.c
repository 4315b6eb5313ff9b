/* failures.c — failure sources (classes or components), their renewal processes, correlated
 * follow-ons and failure-log replay (see failures.h). */
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

#include "sim/plan/reliability.h"
#include "sim/scenario/components.h"


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

/* Where a unit of a source is and what its failure takes down (both failure models). */
static void locate(const scenario *s, int source, int unit, failure_event *ev) {
    ev->source = source;
    ev->unit = unit;
    if (s->reliability.failure_model == FMODEL_COMPONENTS) {
        ev->rank = component_rank_of_unit(s, (component_kind)source, unit);
        component_blast(s, (component_kind)source, unit, &ev->first_node, &ev->n_nodes);
        return;
    }
    ev->rank = unit;   /* classes: the unit is a GPU */
    ev->first_node = unit / s->cluster.gpus_per_node;
    ev->n_nodes = s->reliability.classes[source].needs_node_swap ? 1 : 0;
}

static int host_source(const scenario *s) {
    return s->reliability.failure_model == FMODEL_COMPONENTS ? COMP_HOST : FAIL_HOST;
}

void failure_process_init(failure_process *fp, const scenario *s, const failure_trace *trace) {
    memset(fp, 0, sizeof *fp);
    fp->s = s;
    fp->trace = trace;
    const reliability_cfg *r = &s->reliability;
    double repair_s = r->recovery.repair_h * 3600.0;
    if (r->failure_model == FMODEL_COMPONENTS) {
        fp->n_sources = COMP_NKINDS;
        for (int k = 0; k < COMP_NKINDS; k++) {
            const component_cfg *cc = &r->components[k];
            failure_source *src = &fp->src[k];
            int n = component_count(s, (component_kind)k);
            int fails = n > 0 && cc->mtbf_h > 0 && isfinite(cc->mtbf_h);
            double unit_mean_s = fails ? cc->mtbf_h * 3600.0 : INFINITY;
            src->name = component_kind_name((component_kind)k);
            src->n_units = n;
            src->shape = cc->weibull_shape;
            src->dist = cc->weibull_shape == 1.0 ? DIST_EXPONENTIAL : DIST_WEIBULL;
            /* exponential units superpose exactly into one Poisson process of rate n / mtbf */
            src->per_unit = fails && src->dist == DIST_WEIBULL;
            src->mean_s = src->per_unit || !fails ? unit_mean_s : unit_mean_s / n;
            src->detect_s = cc->detect_s;
            src->repair_s = cc->repair_h >= 0 ? cc->repair_h * 3600.0 : repair_s;
        }
    } else {
        fp->n_sources = FAIL_NCLASSES;
        double M = reliability_job_mtbf_h(s) * 3600.0, total = 0;
        for (int c = 0; c < FAIL_NCLASSES; c++) total += r->classes[c].share > 0 ? r->classes[c].share : 0;
        int drawn = isfinite(M) && total > 0;
        for (int c = 0; c < FAIL_NCLASSES; c++) {
            failure_source *src = &fp->src[c];
            double share = r->classes[c].share > 0 ? r->classes[c].share / total : 0;
            src->name = failure_class_name((failure_class)c);
            src->n_units = scn_gpus(s);
            src->dist = r->distribution;
            src->shape = r->weibull_shape;
            /* class rate = share / M, so its mean inter-arrival is M / share */
            src->mean_s = (drawn && share > 0) ? M / share : INFINITY;
            src->repair_s = repair_s;
        }
    }
    fp->correlated_p = r->correlated.probability;
    fp->correlated_delay_s = r->correlated.delay_s;
    for (int i = 0; i < fp->n_sources; i++) {
        fp->next_s[i] = INFINITY;
        if (fp->src[i].per_unit) fp->units[i].fresh = moe_xcalloc((size_t)fp->src[i].n_units, sizeof(int));
    }
}

void failure_process_free(failure_process *fp) {
    for (int i = 0; i < FAILURE_MAX_SOURCES; i++) {
        free(fp->units[i].fresh);
        free(fp->units[i].heap);
        memset(&fp->units[i], 0, sizeof fp->units[i]);
    }
    free(fp->follow);
    fp->follow = NULL;
    fp->n_follow = fp->cap_follow = 0;
}

/* ---- per-unit lifetimes (failures.h: failure_units) ------------------------------------------- */

static int earlier(const failure_unit_next *a, const failure_unit_next *b) {
    return a->time_s < b->time_s || (a->time_s == b->time_s && a->unit < b->unit);
}

static void heap_swap(failure_unit_next *h, int i, int j) {
    failure_unit_next t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_push(failure_units *u, failure_unit_next x) {
    if (u->n_heap == u->cap_heap) {
        u->cap_heap = u->cap_heap ? 2 * u->cap_heap : 64;
        u->heap = moe_xrealloc(u->heap, (size_t)u->cap_heap, sizeof *u->heap);
    }
    int i = u->n_heap++;
    u->heap[i] = x;
    while (i > 0 && earlier(&u->heap[i], &u->heap[(i - 1) / 2])) {
        heap_swap(u->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static failure_unit_next heap_pop(failure_units *u) {
    failure_unit_next top = u->heap[0];
    u->heap[0] = u->heap[--u->n_heap];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < u->n_heap && earlier(&u->heap[l], &u->heap[m])) m = l;
        if (r < u->n_heap && earlier(&u->heap[r], &u->heap[m])) m = r;
        if (m == i) break;
        heap_swap(u->heap, i, m);
        i = m;
    }
    return top;
}

/* H^-1(e) of a Weibull of shape k and mean `mean_s`: scale x e^(1/k), scale = mean / Gamma(1 + 1/k). */
static double weibull_inverse_hazard(const failure_source *src, double e) {
    return src->mean_s / gsl_sf_gamma(1.0 + 1.0 / src->shape) * pow(e, 1.0 / src->shape);
}

/* The next fresh failure: the order statistic grows by Exp(1) / (units still fresh). */
static void next_fresh(failure_units *u, const failure_source *src, gsl_rng *rng) {
    if (u->n_fresh <= 0) { u->next_fresh_s = INFINITY; return; }
    u->e_sum += gsl_ran_exponential(rng, 1.0) / u->n_fresh;
    u->next_fresh_s = weibull_inverse_hazard(src, u->e_sum);
}

static double source_next(const failure_process *fp, int i) {
    if (!fp->src[i].per_unit) return fp->next_s[i];
    const failure_units *u = &fp->units[i];
    double t = u->next_fresh_s;
    return u->n_heap > 0 && u->heap[0].time_s < t ? u->heap[0].time_s : t;
}

/* Take a per-unit source's next failure (at time t): a fresh unit or a replacement; the unit's
 * replacement gets a fresh lifetime from t. */
static int pop_unit(failure_process *fp, int i, double t) {
    failure_units *u = &fp->units[i];
    const failure_source *src = &fp->src[i];
    int unit;
    if (u->n_heap > 0 && u->heap[0].time_s < u->next_fresh_s) {
        unit = heap_pop(u).unit;
    } else {
        int j = (int)gsl_rng_uniform_int(fp->rng, (unsigned long)u->n_fresh);
        unit = u->fresh[j];
        u->fresh[j] = u->fresh[--u->n_fresh];
        next_fresh(u, src, fp->rng);
    }
    heap_push(u, (failure_unit_next){t + failure_draw_interarrival(src->dist, src->shape, src->mean_s, fp->rng),
                                     unit});
    return unit;
}

void failure_process_reset(failure_process *fp, gsl_rng *rng) {
    fp->rng = rng;
    fp->trace_pos = 0;
    fp->n_follow = 0;
    for (int i = 0; i < fp->n_sources; i++) {
        const failure_source *src = &fp->src[i];
        fp->next_s[i] = INFINITY;
        if (!src->per_unit) {
            if (!fp->trace) fp->next_s[i] = failure_draw_interarrival(src->dist, src->shape, src->mean_s, rng);
            continue;
        }
        failure_units *u = &fp->units[i];
        u->n_heap = 0;
        u->e_sum = 0;
        u->n_fresh = fp->trace ? 0 : src->n_units;
        for (int k = 0; k < u->n_fresh; k++) u->fresh[k] = k;
        if (fp->trace) u->next_fresh_s = INFINITY;
        else next_fresh(u, src, rng);
    }
}

static int next_source(const failure_process *fp) {
    int best = 0;
    for (int i = 1; i < fp->n_sources; i++)
        if (source_next(fp, i) < source_next(fp, best)) best = i;
    return best;
}

static int next_follow(const failure_process *fp) {
    int best = -1;
    for (int j = 0; j < fp->n_follow; j++)
        if (best < 0 || fp->follow[j].time_s < fp->follow[best].time_s) best = j;
    return best;
}

double failure_process_peek(const failure_process *fp) {
    if (fp->trace)
        return fp->trace_pos < fp->trace->n ? fp->trace->ev[fp->trace_pos].time_s : INFINITY;
    double t = source_next(fp, next_source(fp));
    int j = next_follow(fp);
    return (j >= 0 && fp->follow[j].time_s < t) ? fp->follow[j].time_s : t;
}

/* A failure that took nodes down: maybe a second one, a host in the rack of its first node. */
static void maybe_follow_on(failure_process *fp, const failure_event *ev) {
    if (!(fp->correlated_p > 0) || ev->n_nodes <= 0) return;
    if (gsl_rng_uniform(fp->rng) >= fp->correlated_p) return;
    const scenario *s = fp->s;
    double delay = fp->correlated_delay_s > 0 ? gsl_ran_exponential(fp->rng, fp->correlated_delay_s) : 0;
    int rn = s->reliability.rack_nodes > 0 ? s->reliability.rack_nodes : 1;
    int rack_first = ev->first_node / rn * rn, rack_n = s->cluster.nodes - rack_first;
    if (rack_n > rn) rack_n = rn;
    int node = ev->first_node;
    if (rack_n > 1) {
        node = rack_first + (int)gsl_rng_uniform_int(fp->rng, (unsigned long)(rack_n - 1));
        if (node >= ev->first_node) node++;   /* any rack-mate but the first node itself */
    }
    if (fp->n_follow == fp->cap_follow) {
        int cap = fp->cap_follow ? 2 * fp->cap_follow : 16;
        fp->follow = moe_xrealloc(fp->follow, (size_t)cap, sizeof *fp->follow);
        fp->cap_follow = cap;
    }
    failure_event f = {.time_s = ev->time_s + delay, .correlated = 1};
    int host = host_source(s);
    int unit = s->reliability.failure_model == FMODEL_COMPONENTS ? node : node * s->cluster.gpus_per_node;
    locate(s, host, unit, &f);
    fp->follow[fp->n_follow++] = f;
}

failure_event failure_process_pop(failure_process *fp) {
    failure_event ev = {.time_s = INFINITY};
    if (fp->trace) {
        if (fp->trace_pos < fp->trace->n) ev = fp->trace->ev[fp->trace_pos++];
        return ev;
    }
    int i = next_source(fp), j = next_follow(fp);
    double t = source_next(fp, i);
    if (j >= 0 && fp->follow[j].time_s < t) {
        ev = fp->follow[j];
        fp->follow[j] = fp->follow[--fp->n_follow];
        return ev;
    }
    if (!isfinite(t)) return ev;
    const failure_source *src = &fp->src[i];
    int unit;
    if (src->per_unit) {
        unit = pop_unit(fp, i, t);
    } else {
        fp->next_s[i] += failure_draw_interarrival(src->dist, src->shape, src->mean_s, fp->rng);
        unit = (int)gsl_rng_uniform_int(fp->rng, (unsigned long)src->n_units);
    }
    ev.time_s = t;
    locate(fp->s, i, unit, &ev);
    maybe_follow_on(fp, &ev);
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
    return x->source - y->source;
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
                       int n_cols, const scenario *s, failure_event *ev, moe_error *err) {
    int n_gpus = scn_gpus(s);
    int components = s->reliability.failure_model == FMODEL_COMPONENTS;
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
    component_kind kind;
    if (components ? component_kind_parse(comp, &kind) != 0 : failure_class_parse(comp, &cls) != 0) {
        const char *const *names = components ? COMPONENT_KIND_NAMES : FAILURE_CLASS_NAMES;
        const char *hint = moe_did_you_mean(comp, names);
        char quoted[80], list[160] = "";
        snprintf(quoted, sizeof quoted, "\"%.60s\"", comp);
        for (int i = 0; names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
        return moe_error_input(err, path, where, quoted, "one of %s (reliability.failure_model \"%s\")%s%s%s",
                               list, components ? "components" : "classes",
                               hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
    }
    snprintf(where, sizeof where, "line %d, column rank", lineno);
    errno = 0;
    long rank = strtol(rk, &end, 10);
    if (*rk == '\0' || *end != '\0' || errno == ERANGE || rank < 0 || rank >= n_gpus)
        return moe_error_input(err, path, where, *rk ? rk : "\"\"",
                               "a GPU rank, an integer in [0, %d]", n_gpus - 1);
    memset(ev, 0, sizeof *ev);
    ev->time_s = time_h * 3600.0;
    if (components) locate(s, (int)kind, component_unit_of_rank(s, kind, (int)rank), ev);
    else locate(s, (int)cls, (int)rank, ev);
    ev->rank = (int)rank;   /* the GPU the log names (locate gives a unit's first GPU) */
    return 0;
}

int failure_trace_parse(const char *path, const char *text, size_t len, const scenario *sc,
                        failure_trace *out, moe_error *err) {
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
        rc = parse_event(path, s, lineno, col_of, n_cols, sc, &out->ev[out->n], err);
        if (rc == 0) out->n++;
    }
    if (rc == 0 && !have_header)
        rc = moe_error_input(err, path, "line 1", NULL, "a header line time_h,component,rank");
    if (rc != 0) {
        failure_trace_free(out);
        return rc;
    }
    /* A log may list simultaneous failures in any order; the replay needs them by time.
     * Ties: qsort is not stable, so break them by rank then source for a deterministic order.
     * A log of only a header has no events (and qsort must not see a NULL array). */
    if (out->n > 1) qsort(out->ev, (size_t)out->n, sizeof *out->ev, cmp_event_time);
    return 0;
}

int failure_trace_load(const char *path, const scenario *s, failure_trace *out, moe_error *err) {
    out->n = 0;
    out->ev = NULL;
    size_t len = 0;
    char *text = read_file_text(path, &len, err);
    if (!text) return err->code;
    int rc = failure_trace_parse(path, text, len, s, out, err);
    free(text);
    return rc;
}

void failure_trace_free(failure_trace *t) {
    free(t->ev);
    t->ev = NULL;
    t->n = 0;
}
