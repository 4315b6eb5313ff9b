/* diagnose_trace.c — read and validate a step trace for the diagnoser (diagnose.h).
 *
 * Every rejection names the file, the JSON path, the value found and what was expected, because the
 * trace may come from a live run on someone else's cluster: "otherData.rank_gpu[3]: got -1" tells
 * them which writer to fix. */
#include "sim/report/diagnose.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/base/alloc.h"
#include "sim/base/json_read.h"
#include "sim/report/results.h"

#define MAX_RANKS (1 << 20)
#define MAX_EXPERTS (1 << 20)

static int bad(moe_error *err, const diag_trace *t, const char *path, const cJSON *item, const char *expected) {
    json_reader r = {t->file, err};
    return json_bad(&r, path, item, "%s", expected);
}

/* obj.key (the member's full path given) as an integer in [lo, hi]; required. */
static int get_int(const cJSON *obj, const char *key, const char *path, int lo, int hi, int *out,
                   const diag_trace *t, moe_error *err) {
    json_reader r = {t->file, err};
    return json_int_value(&r, json_member(obj, key), path, JSON_REQUIRED, lo, hi, out);
}

static int get_string(const cJSON *obj, const char *key, const char *path, char *out, size_t cap,
                      const diag_trace *t, moe_error *err) {
    const cJSON *it = json_member(obj, key);
    if (!cJSON_IsString(it) || strlen(it->valuestring) >= cap)
        return bad(err, t, path, it, "a (short) string");
    snprintf(out, cap, "%s", it->valuestring);
    return 0;
}

/* An array of exactly `n` (n < 0: any length up to MAX_EXPERTS) finite numbers >= 0. */
static int get_times(const cJSON *arr, const char *path, int n, double **out, int *out_n,
                     const diag_trace *t, moe_error *err) {
    char what[96], p[160];
    if (n >= 0) snprintf(what, sizeof what, "an array of %d numbers >= 0 (one per rank)", n);
    else snprintf(what, sizeof what, "an array of numbers >= 0");
    if (!cJSON_IsArray(arr)) return bad(err, t, path, arr, what);
    int len = cJSON_GetArraySize(arr);
    if ((n >= 0 && len != n) || len > MAX_EXPERTS) {
        char got[64];
        snprintf(got, sizeof got, "%d elements", len);
        return moe_error_input(err, t->file, path, got, "%s", what);
    }
    double *v = moe_xcalloc((size_t)len + 1, sizeof *v);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0) {
            snprintf(p, sizeof p, "%s[%d]", path, i);
            free(v);
            return bad(err, t, p, e, "a finite number >= 0");
        }
        v[i] = e->valuedouble;
    }
    *out = v;
    if (out_n) *out_n = len;
    return 0;
}

/* An array of rank ids in [0, ranks) (ranks == MAX_RANKS: GPU indices). */
static int get_ranks(const cJSON *arr, const char *path, int ranks, int **out, int *out_n,
                     const diag_trace *t, moe_error *err) {
    char what[96], p[160];
    if (ranks < MAX_RANKS) snprintf(what, sizeof what, "an array of ranks in [0, %d)", ranks);
    else snprintf(what, sizeof what, "an array of GPU indices >= 0");
    if (!cJSON_IsArray(arr)) return bad(err, t, path, arr, what);
    int len = cJSON_GetArraySize(arr);
    int *v = moe_xcalloc((size_t)len + 1, sizeof *v);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble >= ranks) {
            snprintf(p, sizeof p, "%s[%d]", path, i);
            free(v);
            return bad(err, t, p, e, what);
        }
        v[i] = (int)e->valuedouble;
    }
    *out = v;
    *out_n = len;
    return 0;
}

static int parse_hang(const cJSON *h, diag_trace *t, moe_error *err) {
    if (!cJSON_IsObject(h)) return bad(err, t, "otherData.hang", h, "null or an object {\"op\", \"waiting\", \"missing\", ...}");
    diag_hang *g = moe_xcalloc(1, sizeof *g);
    t->hang = g;
    int big = 1 << 30;
    if (get_string(h, "op", "otherData.hang.op", g->op, sizeof g->op, t, err) ||
        get_string(h, "group_kind", "otherData.hang.group_kind", g->group_kind, sizeof g->group_kind, t, err) ||
        get_int(h, "group", "otherData.hang.group", -1, big, &g->group, t, err) ||
        get_int(h, "layer", "otherData.hang.layer", -1, big, &g->layer, t, err) ||
        get_int(h, "micro_batch", "otherData.hang.micro_batch", -1, big, &g->micro_batch, t, err) ||
        get_ranks(cJSON_GetObjectItemCaseSensitive(h, "waiting"), "otherData.hang.waiting", t->ranks, &g->waiting,
                  &g->n_waiting, t, err) ||
        get_ranks(cJSON_GetObjectItemCaseSensitive(h, "missing"), "otherData.hang.missing", t->ranks, &g->missing,
                  &g->n_missing, t, err))
        return err->code;
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(h, "blocked_elsewhere");
    if (be && get_int(h, "blocked_elsewhere", "otherData.hang.blocked_elsewhere", 0, t->ranks, &g->blocked_elsewhere, t, err))
        return err->code;
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(h, "missing_last_op");
    if (!lo || cJSON_IsNull(lo)) return 0;
    if (!cJSON_IsArray(lo))
        return bad(err, t, "otherData.hang.missing_last_op", lo, "an array of {\"rank\", \"op\", \"layer\", \"micro_batch\"}");
    int n = cJSON_GetArraySize(lo), i = 0;
    g->last = moe_xcalloc((size_t)n + 1, sizeof *g->last);
    for (const cJSON *e = lo->child; e; e = e->next, i++) {
        char p[128];
        diag_last_op *l = &g->last[i];
        snprintf(p, sizeof p, "otherData.hang.missing_last_op[%d]", i);
        if (!cJSON_IsObject(e)) return bad(err, t, p, e, "an object {\"rank\", \"op\", \"layer\", \"micro_batch\"}");
        snprintf(p, sizeof p, "otherData.hang.missing_last_op[%d].rank", i);
        if (get_int(e, "rank", p, 0, t->ranks - 1, &l->rank, t, err)) return err->code;
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "op");
        if (op && !cJSON_IsNull(op)) {   /* null: the rank had not started an op */
            snprintf(p, sizeof p, "otherData.hang.missing_last_op[%d].op", i);
            if (get_string(e, "op", p, l->op, sizeof l->op, t, err)) return err->code;
        }
        l->layer = l->micro_batch = -1;
        if (cJSON_GetObjectItemCaseSensitive(e, "layer")) {
            snprintf(p, sizeof p, "otherData.hang.missing_last_op[%d].layer", i);
            if (get_int(e, "layer", p, -1, big, &l->layer, t, err)) return err->code;
        }
        if (cJSON_GetObjectItemCaseSensitive(e, "micro_batch")) {
            snprintf(p, sizeof p, "otherData.hang.missing_last_op[%d].micro_batch", i);
            if (get_int(e, "micro_batch", p, -1, big, &l->micro_batch, t, err)) return err->code;
        }
        g->n_last++;
    }
    return 0;
}

static int cmp_class(const void *a, const void *b) {
    return strcmp(((const diag_op_class *)a)->name, ((const diag_op_class *)b)->name);
}

/* Aggregate the complete events by name. Metadata ("M") and other phases are not ops. */
static int parse_events(const cJSON *ev, diag_trace *t, moe_error *err) {
    if (!cJSON_IsArray(ev)) return bad(err, t, "traceEvents", ev, "an array of trace events");
    int cap = 0, i = 0;
    for (const cJSON *e = ev->child; e; e = e->next, i++) {
        char p[96];
        snprintf(p, sizeof p, "traceEvents[%d]", i);
        if (!cJSON_IsObject(e)) return bad(err, t, p, e, "a trace event object");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0) continue;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name"), *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
        if (!cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) >= DIAG_NAME_MAX) {
            snprintf(p, sizeof p, "traceEvents[%d].name", i);
            return bad(err, t, p, name, "an op class name (a non-empty string)");
        }
        if (!cJSON_IsNumber(dur) || !isfinite(dur->valuedouble) || dur->valuedouble < 0) {
            snprintf(p, sizeof p, "traceEvents[%d].dur", i);
            return bad(err, t, p, dur, "a duration in microseconds >= 0");
        }
        int k = 0;
        while (k < t->n_classes && strcmp(t->classes[k].name, name->valuestring) != 0) k++;
        if (k == t->n_classes) {
            if (t->n_classes == cap) {
                cap = cap ? 2 * cap : 32;
                t->classes = moe_xrealloc(t->classes, (size_t)cap, sizeof *t->classes);
            }
            memset(&t->classes[k], 0, sizeof t->classes[k]);
            snprintf(t->classes[k].name, DIAG_NAME_MAX, "%s", name->valuestring);
            t->n_classes++;
        }
        t->classes[k].count++;
        t->classes[k].total_us += dur->valuedouble;
    }
    if (t->n_classes > 1) qsort(t->classes, (size_t)t->n_classes, sizeof *t->classes, cmp_class);
    return 0;
}

static int parse_layout(const cJSON *od, diag_trace *t, moe_error *err) {
    if (get_int(od, "ranks", "otherData.ranks", 1, MAX_RANKS, &t->ranks, t, err) ||
        get_int(od, "gpus_per_node", "otherData.gpus_per_node", 1, 1024, &t->gpus_per_node, t, err) ||
        get_int(od, "tp", "otherData.tp", 1, MAX_RANKS, &t->tp, t, err) ||
        get_int(od, "pp", "otherData.pp", 1, MAX_RANKS, &t->pp, t, err) ||
        get_int(od, "ep", "otherData.ep", 1, MAX_RANKS, &t->ep, t, err) ||
        get_int(od, "dp", "otherData.dp", 1, MAX_RANKS, &t->dp, t, err))
        return err->code;
    long prod = (long)t->tp * t->pp * t->ep * t->dp;
    if (prod != t->ranks) {
        char got[128];
        snprintf(got, sizeof got, "tp %d x pp %d x ep %d x dp %d = %ld", t->tp, t->pp, t->ep, t->dp, prod);
        return moe_error_input(err, t->file, "otherData", got, "tp*pp*ep*dp == ranks (%d)", t->ranks);
    }
    return 0;
}

static int parse_timeout(const cJSON *o, diag_trace *t, moe_error *err);
static int parse_pfc(const cJSON *o, diag_trace *t, moe_error *err);

static int parse_other(const cJSON *od, diag_trace *t, moe_error *err) {
    char fmt[64];
    if (get_string(od, "format", "otherData.format", fmt, sizeof fmt, t, err)) {
        /* say what kind of file this is meant to be, not only that a string is missing */
        return bad(err, t, "otherData.format", cJSON_GetObjectItemCaseSensitive(od, "format"),
                   "\"" DIAG_TRACE_FORMAT "\" (a trace from simrun --levels step with output.trace, or simlive)");
    }
    if (strcmp(fmt, DIAG_TRACE_FORMAT) != 0)
        return bad(err, t, "otherData.format", cJSON_GetObjectItemCaseSensitive(od, "format"), "\"" DIAG_TRACE_FORMAT "\"");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(od, "source");
    if (src && (!cJSON_IsString(src) || (strcmp(src->valuestring, "simulated") && strcmp(src->valuestring, "live"))))
        return bad(err, t, "otherData.source", src, "\"simulated\" or \"live\"");
    snprintf(t->source, sizeof t->source, "%s", src ? src->valuestring : "unknown");
    if (parse_layout(od, t, err)) return err->code;

    const cJSON *st = cJSON_GetObjectItemCaseSensitive(od, "step_time_s");
    if (st && !cJSON_IsNull(st)) {
        if (!cJSON_IsNumber(st) || !isfinite(st->valuedouble) || st->valuedouble < 0)
            return bad(err, t, "otherData.step_time_s", st, "a step time in seconds >= 0");
        t->has_step_time = 1;
        t->step_time_s = st->valuedouble;
    }

    int n;
    const cJSON *rg = cJSON_GetObjectItemCaseSensitive(od, "rank_gpu");
    if (get_ranks(rg, "otherData.rank_gpu", MAX_RANKS, &t->rank_gpu, &n, t, err)) return err->code;
    if (n != t->ranks) {
        char got[64];
        snprintf(got, sizeof got, "%d elements", n);
        return moe_error_input(err, t->file, "otherData.rank_gpu", got, "one GPU index per rank (%d)", t->ranks);
    }
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(od, "rank_step_s"), *rc = cJSON_GetObjectItemCaseSensitive(od, "rank_compute_s");
    if (rs && !cJSON_IsNull(rs) && get_times(rs, "otherData.rank_step_s", t->ranks, &t->rank_step_s, NULL, t, err))
        return err->code;
    if (rc && !cJSON_IsNull(rc) && get_times(rc, "otherData.rank_compute_s", t->ranks, &t->rank_compute_s, NULL, t, err))
        return err->code;
    const cJSON *rx = cJSON_GetObjectItemCaseSensitive(od, "rank_a2a_s");
    if (rx && !cJSON_IsNull(rx) &&
        get_times(rx, "otherData.rank_a2a_s", t->ranks, &t->rank_a2a_s, NULL, t, err))
        return err->code;
    if (!t->rank_step_s && !t->rank_compute_s)
        return moe_error_input(err, t->file, "otherData.rank_compute_s", "nothing (missing)",
                               "per-rank times: rank_compute_s and/or rank_step_s, %d numbers each", t->ranks);
    const cJSON *et = cJSON_GetObjectItemCaseSensitive(od, "expert_tokens");
    if (et && !cJSON_IsNull(et) && get_times(et, "otherData.expert_tokens", -1, &t->expert_tokens, &t->n_experts, t, err))
        return err->code;
    const cJSON *er = cJSON_GetObjectItemCaseSensitive(od, "expert_tokens_routed");
    if (er && !cJSON_IsNull(er)) {
        char what[96];
        snprintf(what, sizeof what, "one count per expert, as expert_tokens (%d)", t->n_experts);
        if (!t->expert_tokens || cJSON_GetArraySize(er) != t->n_experts)
            return bad(err, t, "otherData.expert_tokens_routed", er, what);
        if (get_times(er, "otherData.expert_tokens_routed", t->n_experts, &t->expert_routed, NULL, t, err))
            return err->code;
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(od, "hang");
    if (h && !cJSON_IsNull(h) && parse_hang(h, t, err)) return err->code;
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(od, "collective_timeout");
    if (to && !cJSON_IsNull(to) && parse_timeout(to, t, err)) return err->code;
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(od, "pfc");
    if (pf && !cJSON_IsNull(pf) && parse_pfc(pf, t, err)) return err->code;
    return 0;
}

/* A time that may be null (forever). */
static int get_time_or_null(const cJSON *obj, const char *key, const char *path, double *out, const diag_trace *t,
                            moe_error *err) {
    const cJSON *v = json_member(obj, key);
    if (cJSON_IsNull(v)) { *out = INFINITY; return 0; }
    json_reader r = {t->file, err};
    return json_number_value(&r, v, path, JSON_REQUIRED, 0, INFINITY, out);
}

static int parse_timeout(const cJSON *o, diag_trace *t, moe_error *err) {
    if (!cJSON_IsObject(o)) return bad(err, t, "otherData.collective_timeout", o, "null or an object {\"rank\", \"op\", ...}");
    diag_timeout *x = moe_xcalloc(1, sizeof *x);
    t->timeout = x;
    json_reader r = {t->file, err};
    const int big = 1 << 30;
    if (json_get_number(&r, o, "otherData.collective_timeout", "timeout_s", JSON_REQUIRED, 0, INFINITY, &x->timeout_s) ||
        get_int(o, "rank", "otherData.collective_timeout.rank", 0, t->ranks - 1, &x->rank, t, err) ||
        get_int(o, "gpu", "otherData.collective_timeout.gpu", 0, big, &x->gpu, t, err) ||
        get_int(o, "node", "otherData.collective_timeout.node", 0, big, &x->node, t, err) ||
        get_string(o, "op", "otherData.collective_timeout.op", x->op, sizeof x->op, t, err) ||
        get_string(o, "group_kind", "otherData.collective_timeout.group_kind", x->group_kind, sizeof x->group_kind, t, err) ||
        get_int(o, "group", "otherData.collective_timeout.group", -1, big, &x->group, t, err) ||
        get_int(o, "layer", "otherData.collective_timeout.layer", -1, big, &x->layer, t, err) ||
        get_int(o, "micro_batch", "otherData.collective_timeout.micro_batch", -1, big, &x->micro_batch, t, err) ||
        json_get_number(&r, o, "otherData.collective_timeout", "arrived_s", JSON_REQUIRED, 0, INFINITY, &x->arrived_s) ||
        get_time_or_null(o, "waited_s", "otherData.collective_timeout.waited_s", &x->waited_s, t, err) ||
        json_get_number(&r, o, "otherData.collective_timeout", "fired_s", JSON_REQUIRED, 0, INFINITY, &x->fired_s))
        return err->code;
    x->detect_s = x->timeout_s;
    if (json_get_number(&r, o, "otherData.collective_timeout", "detect_s", 0, 0, INFINITY, &x->detect_s)) return err->code;
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(o, "detected_by");
    if (by && !(cJSON_IsString(by) && (strcmp(by->valuestring, "watchdog") == 0 ||
                                        strcmp(by->valuestring, "qp_retry_exhausted") == 0)))
        return bad(err, t, "otherData.collective_timeout.detected_by", by, "\"watchdog\" or \"qp_retry_exhausted\"");
    x->by_qp_retry = by && strcmp(by->valuestring, "qp_retry_exhausted") == 0;
    return 0;
}

static int parse_pfc(const cJSON *o, diag_trace *t, moe_error *err) {
    if (!cJSON_IsObject(o)) return bad(err, t, "otherData.pfc", o, "an object {\"hot_gpu\", \"paused_links\", ...}");
    diag_pfc *x = moe_xcalloc(1, sizeof *x);
    t->pfc = x;
    json_reader r = {t->file, err};
    const int big = 1 << 30;
    const cJSON *links;
    if (get_int(o, "hot_gpu", "otherData.pfc.hot_gpu", -1, big, &x->hot_gpu, t, err) ||
        get_int(o, "hot_node", "otherData.pfc.hot_node", -1, big, &x->hot_node, t, err) ||
        get_int(o, "hot_local_gpu", "otherData.pfc.hot_local_gpu", -1, big, &x->hot_local_gpu, t, err) ||
        get_int(o, "stalled_gpu", "otherData.pfc.stalled_gpu", -1, big, &x->stalled_gpu, t, err) ||
        get_int(o, "held_gpus", "otherData.pfc.held_gpus", 0, big, &x->held_gpus, t, err) ||
        get_string(o, "root_link", "otherData.pfc.root_link", x->root_link, sizeof x->root_link, t, err) ||
        json_get_number(&r, o, "otherData.pfc", "root_drain_s", JSON_REQUIRED, 0, INFINITY, &x->root_drain_s) ||
        json_get_number(&r, o, "otherData.pfc", "victim_flows", JSON_REQUIRED, 0, INFINITY, &x->victim_flows) ||
        get_time_or_null(o, "max_victim_slowdown", "otherData.pfc.max_victim_slowdown", &x->max_victim_slowdown, t, err) ||
        get_int(o, "paused_links_count", "otherData.pfc.paused_links_count", 0, big, &x->paused_links_count, t, err) ||
        json_get_array(&r, o, "otherData.pfc", "paused_links", JSON_REQUIRED, &links))
        return err->code;
    /* traces written before the transport was a field: PFC, no discard */
    x->stall_discard_s = INFINITY;
    if (json_member(o, "stall_discard_s") &&
        get_time_or_null(o, "stall_discard_s", "otherData.pfc.stall_discard_s", &x->stall_discard_s, t, err))
        return err->code;
    const cJSON *fc = json_member(o, "flow_control");
    if (fc && !(cJSON_IsString(fc) && (strcmp(fc->valuestring, "pfc") == 0 || strcmp(fc->valuestring, "credits") == 0)))
        return bad(err, t, "otherData.pfc.flow_control", fc, "\"pfc\" or \"credits\"");
    x->credits = fc && strcmp(fc->valuestring, "credits") == 0;
    int i = 0;
    for (const cJSON *e = links->child; e; e = e->next, i++) {
        char p[96];
        snprintf(p, sizeof p, "otherData.pfc.paused_links[%d]", i);
        if (i >= DIAG_PFC_LINKS_MAX) return bad(err, t, p, e, "at most 32 paused links listed");
        diag_paused_link *l = &x->links[x->n_links++];
        char pl[128], ph[128];
        snprintf(pl, sizeof pl, "%s.link", p);
        snprintf(ph, sizeof ph, "%s.held_s", p);
        if (get_string(e, "link", pl, l->link, sizeof l->link, t, err) ||
            json_get_number(&r, e, p, "drain_s", JSON_REQUIRED, 0, INFINITY, &l->drain_s) ||
            get_time_or_null(e, "held_s", ph, &l->held_s, t, err))
            return err->code;
    }
    return 0;
}

static int trace_from_json(const cJSON *doc, diag_trace *t, moe_error *err) {
    const cJSON *od = json_member(doc, "otherData");
    if (!cJSON_IsObject(doc)) return bad(err, t, "(document)", doc, "a JSON object {\"traceEvents\", \"otherData\"}");
    if (!cJSON_IsObject(od)) return bad(err, t, "otherData", od, "an object with the step's per-rank data (sim/exec/trace.h)");
    int rc = parse_other(od, t, err);
    const cJSON *ev = json_member(doc, "traceEvents");
    if (!rc && ev) rc = parse_events(ev, t, err);
    return rc;
}

static int trace_from_doc(cJSON *doc, diag_trace *t, moe_error *err) {
    if (!doc) return err->code;
    int rc = trace_from_json(doc, t, err);
    cJSON_Delete(doc);
    if (rc) diag_trace_free(t);
    return rc;
}

int diag_trace_parse(const char *text, const char *file, diag_trace *t, moe_error *err) {
    memset(t, 0, sizeof *t);
    snprintf(t->file, sizeof t->file, "%s", file ? file : "");
    return trace_from_doc(json_parse_strict(t->file, text, text ? strlen(text) : 0, err), t, err);
}

int diag_trace_load(const char *path, diag_trace *t, moe_error *err) {
    memset(t, 0, sizeof *t);
    snprintf(t->file, sizeof t->file, "%s", path);
    return trace_from_doc(json_load(path, 0, err), t, err);
}

void diag_trace_free(diag_trace *t) {
    if (!t) return;
    free(t->rank_gpu);
    free(t->rank_step_s);
    free(t->rank_compute_s);
    free(t->rank_a2a_s);
    free(t->expert_tokens);
    free(t->expert_routed);
    if (t->hang) {
        free(t->hang->waiting);
        free(t->hang->missing);
        free(t->hang->last);
        free(t->hang);
    }
    free(t->classes);
    free(t->timeout);
    free(t->pfc);
    char file[sizeof t->file];
    memcpy(file, t->file, sizeof file);
    memset(t, 0, sizeof *t);
    memcpy(t->file, file, sizeof file);
}
