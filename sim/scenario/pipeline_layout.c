/* pipeline_layout.c — model stages from layout.pipeline_layout, first/last_stage_layers or the
 * even split (pipeline_layout.h). */
#include "sim/scenario/pipeline_layout.h"

#include <limits.h>
#include <stdio.h>

#include "sim/base/alloc.h"
#include <stdlib.h>
#include <string.h>

#define PATH "layout.pipeline_layout"
#define MAX_EXPANDED (1 << 20)   /* symbols after expanding the repetitions */
#define MAX_DEPTH 16

/* pp x vpp in 64 bits, saturated: the fields are only range-checked one by one before this is asked,
 * so a huge vpp must come out as "too many stages", not as a wrapped product. */
int pipeline_n_model_stages(const scenario *s) {
    const layout_cfg *L = &s->layout;
    long n = L->schedule == SCHED_INTERLEAVED ? (long)L->pp * (L->vpp > 0 ? L->vpp : 1) : L->pp;
    return n > INT_MAX ? INT_MAX : (int)n;
}

void pipeline_layout_free(pl_layout *pl) {
    free(pl->st);
    pl->st = NULL;
    pl->n = 0;
}

/* ---- the layout string ------------------------------------------------------------------------------ */
typedef struct {
    const char *text, *at;     /* the whole string, the read position */
    char *out;
    size_t n;
    const scenario *s;
    moe_error *err;
} expander;

static int bad_layout(expander *x, const char *what) {
    char val[SCN_PATH_MAX + 64];
    snprintf(val, sizeof val, "\"%s\" (at character %d)", x->text, (int)(x->at - x->text) + 1);
    return moe_error_input(x->err, x->s->file, PATH, val, "%s", what);
}

static int put(expander *x, char c) {
    if (x->n >= MAX_EXPANDED) return bad_layout(x, "a layout of at most 2^20 symbols once repetitions are expanded");
    x->out[x->n++] = c;
    return 0;
}

static int expand_seq(expander *x, int depth);

/* One symbol or group with its optional "*n"; appends the expansion. */
static int expand_item(expander *x, int depth) {
    size_t from = x->n;
    char c = *x->at;
    if (c == '(') {
        if (depth >= MAX_DEPTH) return bad_layout(x, "parentheses nested at most 16 deep");
        x->at++;
        if (expand_seq(x, depth + 1)) return EXIT_BADINPUT;
        if (*x->at != ')') return bad_layout(x, "a ')' closing the group");
        x->at++;
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        if (put(x, c)) return EXIT_BADINPUT;
        x->at++;
    } else {
        return bad_layout(x, "symbols E (embedding), t (block), m (MTP module), L (loss), '|' between "
                             "stages, (...) groups and *n repetitions");
    }
    while (*x->at == ' ') x->at++;
    if (*x->at != '*') return 0;
    x->at++;
    while (*x->at == ' ') x->at++;
    if (*x->at < '0' || *x->at > '9') return bad_layout(x, "a repetition count after '*'");
    long n = 0;
    while (*x->at >= '0' && *x->at <= '9' && n <= MAX_EXPANDED) n = 10 * n + (*x->at++ - '0');
    if (n < 1 || n > MAX_EXPANDED) return bad_layout(x, "a repetition count of at least 1");
    size_t len = x->n - from;
    for (long r = 1; r < n; r++)
        for (size_t i = 0; i < len; i++)
            if (put(x, x->out[from + i])) return EXIT_BADINPUT;
    return 0;
}

static int expand_seq(expander *x, int depth) {
    for (;;) {
        while (*x->at == ' ' || *x->at == ',') x->at++;
        if (*x->at == '\0' || *x->at == ')') return 0;
        if (expand_item(x, depth)) return EXIT_BADINPUT;
    }
}

/* The stages of a layout string, checked against the model and the schedule. */
static int from_string(const scenario *s, pl_layout *pl, moe_error *err) {
    const char *text = s->layout.pipeline_layout;
    expander x = {.text = text, .at = text, .s = s, .err = err};
    x.out = moe_xmalloc(MAX_EXPANDED);
    int rc = expand_seq(&x, 0);
    if (rc == 0 && *x.at == ')') rc = bad_layout(&x, "a '(' before each ')'");
    int stages = 1;
    for (size_t i = 0; rc == 0 && i < x.n; i++) stages += x.out[i] == '|';
    int want = pipeline_n_model_stages(s);
    char val[SCN_PATH_MAX + 96];
    if (rc == 0 && stages != want) {
        snprintf(val, sizeof val, "\"%s\" (%d stages)", text, stages);
        rc = moe_error_input(err, s->file, PATH, val,
                             "one stage per model stage: pp x vpp = %d x %d = %ld (\"|\" between stages)",
                             s->layout.pp, s->layout.schedule == SCHED_INTERLEAVED ? s->layout.vpp : 1,
                             (long)s->layout.pp * (s->layout.schedule == SCHED_INTERLEAVED ? s->layout.vpp : 1));
    }
    if (rc == 0) {
        pl->n = stages;
        pl->st = moe_xcalloc((size_t)stages, sizeof *pl->st);
    }
    int k = 0, t = 0, m = 0, embeds = 0, losses = 0;
    const char *why = NULL;
    for (size_t i = 0; rc == 0 && i <= x.n && !why; i++) {
        char c = i < x.n ? x.out[i] : '|';
        pl_stage *st = &pl->st[k];
        if (i == 0 || (i > 0 && x.out[i - 1] == '|')) {
            st->layer_begin = st->layer_end = t;
            st->mtp_begin = st->mtp_end = m;
        }
        switch (c) {
        case '|': k++; break;
        case 'E':
            if (k != 0 || st->layer_end > st->layer_begin || st->mtp_end > st->mtp_begin || embeds)
                why = "exactly one E, at the start of the first stage";
            st->embed = 1; embeds++;
            break;
        case 'L':
            if (k != stages - 1 || losses) why = "exactly one L, in the last stage";
            st->loss = 1; losses++;
            break;
        case 't':
            if (m > 0) why = "every t before the first m (MTP modules follow the last block)";
            if (st->loss) why = "nothing after the L";
            st->layer_end = ++t;
            break;
        case 'm':
            if (st->loss) why = "nothing after the L";
            st->mtp_end = ++m;
            break;
        }
    }
    if (rc == 0 && !why && (embeds != 1 || losses != 1)) why = "exactly one E (first stage) and one L (last stage)";
    if (rc == 0 && why) {
        snprintf(val, sizeof val, "\"%s\"", text);
        rc = moe_error_input(err, s->file, PATH, val, "%s", why);
    }
    if (rc == 0 && (t != s->model.layers || m != s->model.mtp_layers)) {
        snprintf(val, sizeof val, "\"%s\" (%d t, %d m)", text, t, m);
        rc = moe_error_input(err, s->file, PATH, val,
                             "every block once: model.layers = %d t's and model.mtp_layers = %d m's",
                             s->model.layers, s->model.mtp_layers);
    }
    free(x.out);
    return rc;
}

/* ---- the even split and Megatron's first/last-rank counts ----------------------------------------------- */
static int bad_count(const scenario *s, moe_error *err, const char *path, int v, const char *fmt, int a, int b) {
    char val[32], exp[256];
    snprintf(val, sizeof val, "%d", v);
    snprintf(exp, sizeof exp, fmt, a, b);
    return moe_error_input(err, s->file, path, val, "%s", exp);
}

static int from_counts(const scenario *s, pl_layout *pl, moe_error *err) {
    const layout_cfg *L = &s->layout;
    int n = pipeline_n_model_stages(s), pp = L->pp, v = n / pp, layers = s->model.layers;
    int first = L->first_stage_layers, last = L->last_stage_layers;
    pl->n = n;
    pl->st = moe_xcalloc((size_t)n, sizeof *pl->st);
    int *per_rank = moe_xcalloc((size_t)pp, sizeof *per_rank);
    int rc = 0;
    if (first == 0 && last == 0) {
        /* the even split over model stages (the default) */
        for (int k = 0; k < n; k++) {
            pl->st[k].layer_begin = (int)((long)k * layers / n);
            pl->st[k].layer_end = (int)((long)(k + 1) * layers / n);
        }
    } else if (pp < 2) {
        rc = bad_count(s, err, first > 0 ? "layout.first_stage_layers" : "layout.last_stage_layers",
                       first > 0 ? first : last, "\"auto\" with a single pipeline stage (layout.pp = %d, vpp %d)",
                       pp, v);
    } else {
        int given = (first > 0) + (last > 0 && pp > 1);
        int rest = layers - (first > 0 ? first : 0) - (last > 0 && pp > 1 ? last : 0);
        int middle = pp - given;
        if (first > 0 && first % v)
            rc = bad_count(s, err, "layout.first_stage_layers", first, "a multiple of layout.vpp = %d (the first rank's blocks spread over its %d chunks)", v, v);
        else if (last > 0 && last % v)
            rc = bad_count(s, err, "layout.last_stage_layers", last, "a multiple of layout.vpp = %d (the last rank's blocks spread over its %d chunks)", v, v);
        else if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && rest % (middle * v))) {
            char val[32];
            snprintf(val, sizeof val, "%d", first > 0 ? first : last);
            rc = moe_error_input(err, s->file, first > 0 ? "layout.first_stage_layers" : "layout.last_stage_layers",
                                 val, "counts leaving the other %d ranks the rest of model.layers = %d (here %d "
                                 "blocks) divisible by their %d x vpp = %d chunks", middle, layers, rest, middle,
                                 middle * v);
        }
        for (int r = 0; rc == 0 && r < pp; r++)
            per_rank[r] = r == 0 && first > 0 ? first : r == pp - 1 && last > 0 && pp > 1 ? last : rest / middle;
        int at = 0;
        for (int k = 0; rc == 0 && k < n; k++) {
            pl->st[k].layer_begin = at;
            at += per_rank[k % pp] / v;
            pl->st[k].layer_end = at;
        }
    }
    free(per_rank);
    if (rc == 0) {
        pl->st[0].embed = 1;
        pl->st[n - 1].loss = 1;
        pl->st[n - 1].mtp_end = s->model.mtp_layers;   /* the MTP modules on the last stage */
    }
    return rc;
}

int pipeline_layout_build(const scenario *s, pl_layout *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    const layout_cfg *L = &s->layout;
    if (L->pp < 1 || pipeline_n_model_stages(s) < 1)
        return bad_count(s, err, "layout.pp", L->pp, "pp >= %d and vpp >= %d", 1, 1);
    if (L->pipeline_layout[0]) {
        if (L->first_stage_layers > 0 || L->last_stage_layers > 0) {
            char val[SCN_PATH_MAX + 8];
            snprintf(val, sizeof val, "\"%s\"", L->pipeline_layout);
            return moe_error_input(err, s->file, PATH, val,
                                   "either a layout or layout.first_stage_layers / last_stage_layers "
                                   "(\"auto\"), not both");
        }
        return from_string(s, out, err);
    }
    return from_counts(s, out, err);
}
