/* sweep.c — the "sweep" section of a scenario: cartesian products and lockstep ("zip") lists over
 * dotted field paths, expanded one point at a time (see sweep.h). */
#include "sim/scenario/sweep.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/json_read.h"

#include "sim/scenario/layouts.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fields.h"

#define SWEEP_MAX_KEYS 64

typedef struct {
    const scn_field *f;
    char path[128];
    cJSON *values;        /* the file's list (a copy) */
    const cJSON **items;  /* values[i], for constant-time access */
} sweep_key_t;

/* One dimension of the product: a plain key, or a zip group of keys walked together. */
typedef struct {
    int first_key, n_keys, len;
} sweep_dim;

struct sweep {
    int n_keys;
    sweep_key_t keys[SWEEP_MAX_KEYS];   /* file order */
    int n_dims;
    sweep_dim dims[SCN_MAX_SWEEP_DIMS]; /* file order; the first varies slowest */
    int count;
    /* The file's own model/cluster sections: after a swept preset resets a section, the fields the
     * file gave explicitly are applied again (sweeping cluster.preset keeps "nodes": 256). */
    cJSON *model_section, *cluster_section;
};

static const char *const SWEEP_SHAPE = "an object of \"dotted.path\": [values], {\"zip\": {...}} or \"layouts\": \"all\"";

static int add_key(sweep *sw, const cJSON *m, const char *label_prefix, const scenario *base, moe_error *err) {
    const char *key = m->string ? m->string : "";
    char label[200], val[160];
    snprintf(label, sizeof label, "%s%.150s", label_prefix, key);
    const scn_field *f = scn_field_find(key);
    if (!f || f->type == SF_FORMAT || f->type == SF_SWEEP) {
        const char *dym = *key ? scn_path_suggest(key) : NULL;
        snprintf(val, sizeof val, "unknown field \"%.120s\"", key);
        if (dym)
            return moe_error_input(err, base->file, label, val,
                                   "the dotted path of a scenario field (did you mean \"%s\"?)", dym);
        return moe_error_input(err, base->file, label, val, "the dotted path of a scenario field, e.g. \"layout.pp\"");
    }
    for (int k = 0; k < sw->n_keys; k++)
        if (sw->keys[k].f == f)
            return moe_error_input(err, base->file, label, "a field swept twice",
                                   "each field in one sweep dimension only");
    if (sw->n_keys == SWEEP_MAX_KEYS)
        return moe_error_input(err, base->file, label, NULL, "at most %d swept fields", SWEEP_MAX_KEYS);
    int len = cJSON_IsArray(m) ? cJSON_GetArraySize(m) : 0;
    if (len == 0) {
        json_shown(m, val, sizeof val);
        return moe_error_input(err, base->file, label, val, "a non-empty list of values for %s", f->path);
    }
    /* every value must be a valid value of the field now, not halfway through a long sweep */
    scenario *scratch = moe_xmalloc(sizeof *scratch);
    sweep_key_t *k = &sw->keys[sw->n_keys];
    k->items = moe_xmalloc((size_t)len * sizeof *k->items);
    k->values = cJSON_Duplicate(m, 1);
    sw->n_keys++; /* owned by sw from here: sweep_free releases it on any error */
    snprintf(k->path, sizeof k->path, "%s", f->path);
    k->f = f;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, k->values) {
        char item_label[220];
        snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
        *scratch = *base;
        if (scn_field_set(scratch, f, it, item_label, err)) {
            free(scratch);
            return EXIT_BADINPUT;
        }
        k->items[i++] = it;
    }
    free(scratch);
    return 0;
}

static int add_dim(sweep *sw, int first_key, int len, const char *file, moe_error *err) {
    if (sw->n_dims == SCN_MAX_SWEEP_DIMS)
        return moe_error_input(err, file, "sweep", NULL, "at most %d sweep dimensions", SCN_MAX_SWEEP_DIMS);
    sw->dims[sw->n_dims++] = (sweep_dim){.first_key = first_key, .n_keys = sw->n_keys - first_key, .len = len};
    return 0;
}

static int parse_zip(sweep *sw, const cJSON *zip, const scenario *base, moe_error *err) {
    if (!cJSON_IsObject(zip) || !zip->child) {
        char val[160];
        json_shown(zip, val, sizeof val);
        return moe_error_input(err, base->file, "sweep.zip", val,
                               "an object of equally long lists walked in lockstep, {\"a.b\": [..], \"c.d\": [..]}");
    }
    int first = sw->n_keys;
    for (const cJSON *z = zip->child; z; z = z->next) {
        if (add_key(sw, z, "sweep.zip.", base, err)) return EXIT_BADINPUT;
        int len = cJSON_GetArraySize(z), len0 = cJSON_GetArraySize(zip->child);
        if (len != len0) {
            char label[200], val[64];
            snprintf(label, sizeof label, "sweep.zip.%.150s", z->string);
            snprintf(val, sizeof val, "a list of %d values", len);
            return moe_error_input(err, base->file, label, val,
                                   "%d values, as many as sweep.zip.%.100s (zip lists walk in lockstep: same length)",
                                   len0, zip->child->string);
        }
    }
    return add_dim(sw, first, cJSON_GetArraySize(zip->child), base->file, err);
}

/* "layouts": "all" — every valid TP/PP/EP/DP factorization of the base cluster (sim/scenario/layouts.h),
 * walked as one zip dimension over layout.tp/pp/ep/dp (cap: the number of valid layouts). */
static int parse_layouts(sweep *sw, const cJSON *m, const scenario *base, moe_error *err) {
    if (!cJSON_IsString(m) || strcmp(m->valuestring, "all") != 0) {
        char val[160];
        json_shown(m, val, sizeof val);
        return moe_error_input(err, base->file, "sweep.layouts", val,
                               "\"all\" (every valid tp*pp*ep*dp factorization of the GPU count)");
    }
    int n = layouts_enumerate(base, NULL, 0);
    if (n == 0)
        return moe_error_input(err, base->file, "sweep.layouts", "\"all\"",
                               "a cluster and model with at least one valid layout (none of tp*pp*ep*dp = %d "
                               "passes validation: check global_batch divisibility and experts)", scn_gpus(base));
    layout_cfg *ls = moe_xmalloc(sizeof *ls * (size_t)n);
    layouts_enumerate(base, ls, n);
    cJSON *zip = cJSON_CreateObject();
    cJSON *tp = cJSON_AddArrayToObject(zip, "layout.tp"), *pp = cJSON_AddArrayToObject(zip, "layout.pp");
    cJSON *ep = cJSON_AddArrayToObject(zip, "layout.ep"), *dp = cJSON_AddArrayToObject(zip, "layout.dp");
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(tp, cJSON_CreateNumber(ls[i].tp));
        cJSON_AddItemToArray(pp, cJSON_CreateNumber(ls[i].pp));
        cJSON_AddItemToArray(ep, cJSON_CreateNumber(ls[i].ep));
        cJSON_AddItemToArray(dp, cJSON_CreateNumber(ls[i].dp));
    }
    free(ls);
    int rc = parse_zip(sw, zip, base, err);
    cJSON_Delete(zip);
    return rc;
}

static int parse_sweep(sweep *sw, const cJSON *obj, const scenario *base, moe_error *err) {
    if (!cJSON_IsObject(obj)) {
        char val[160];
        json_shown(obj, val, sizeof val);
        return moe_error_input(err, base->file, "sweep", val, "%s", SWEEP_SHAPE);
    }
    long long count = 1;
    for (const cJSON *m = obj->child; m; m = m->next) {
        int rc;
        if (m->string && strcmp(m->string, "zip") == 0) {
            rc = parse_zip(sw, m, base, err);
        } else if (m->string && strcmp(m->string, "layouts") == 0) {
            rc = parse_layouts(sw, m, base, err);
        } else {
            rc = add_key(sw, m, "sweep.", base, err);
            if (!rc) rc = add_dim(sw, sw->n_keys - 1, cJSON_GetArraySize(m), base->file, err);
        }
        if (rc) return EXIT_BADINPUT;
        count *= sw->dims[sw->n_dims - 1].len;
        if (count > INT_MAX) {
            return moe_error_input(err, base->file, "sweep", "more than 2^31 points",
                                   "a sweep of at most %d points", INT_MAX);
        }
    }
    sw->count = (int)count;
    return 0;
}

int sweep_build(const cJSON *root, const scenario *base, sweep **out, moe_error *err) {
    *out = NULL;
    sweep *sw = moe_xcalloc(1, sizeof *sw);
    sw->count = 1;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    if (obj && parse_sweep(sw, obj, base, err)) {
        sweep_free(sw);
        return EXIT_BADINPUT;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    if (cJSON_IsObject(model)) sw->model_section = cJSON_Duplicate(model, 1);
    if (cJSON_IsObject(cluster)) sw->cluster_section = cJSON_Duplicate(cluster, 1);
    *out = sw;
    return 0;
}

int sweep_count(const sweep *sw) { return sw ? sw->count : 0; }
int sweep_n_keys(const sweep *sw) { return sw ? sw->n_keys : 0; }
const char *sweep_key(const sweep *sw, int i) { return sw && i >= 0 && i < sw->n_keys ? sw->keys[i].path : NULL; }

/* "layout.pp=8, layout.ep=32" for error messages */
static void describe_point(const sweep *sw, const int *idx, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < sw->n_keys && n < cap; k++) {
        char val[64];
        json_shown(sw->keys[k].items[idx[k]], val, sizeof val);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%s", k ? ", " : "", sw->keys[k].path, val);
    }
}

static int apply_point(const sweep *sw, const int *idx, scenario *out, moe_error *err) {
    /* 1. swept presets reset their sections; 2. the file's explicit fields of those sections are
     * applied again; 3. every other swept value, which thus wins over the file */
    int reset_model = 0, reset_cluster = 0;
    for (int k = 0; k < sw->n_keys; k++) {
        const sweep_key_t *key = &sw->keys[k];
        if (key->f->type != SF_PRESET) continue;
        if (scn_field_set(out, key->f, key->items[idx[k]], key->path, err)) return EXIT_BADINPUT;
        if (key->f->offset == offsetof(scenario, model.preset)) reset_model = 1;
        else reset_cluster = 1;
    }
    if (reset_model && sw->model_section && scn_apply_object(out, "model", sw->model_section, 1, err))
        return EXIT_BADINPUT;
    if (reset_cluster && sw->cluster_section && scn_apply_object(out, "cluster", sw->cluster_section, 1, err))
        return EXIT_BADINPUT;
    for (int k = 0; k < sw->n_keys; k++) {
        const sweep_key_t *key = &sw->keys[k];
        if (key->f->type == SF_PRESET) continue;
        if (scn_field_set(out, key->f, key->items[idx[k]], key->path, err)) return EXIT_BADINPUT;
    }
    return scenario_validate(out, err);
}

int sweep_point(const sweep *sw, const scenario *base, int i, scenario *out, cJSON **values, moe_error *err) {
    if (values) *values = NULL;
    if (!sw || i < 0 || i >= sw->count)
        return moe_error_set(err, EXIT_RUNTIME, "sweep point %d out of range 0..%d", i, sweep_count(sw) - 1);
    int idx[SWEEP_MAX_KEYS];
    int rem = i;
    for (int d = sw->n_dims - 1; d >= 0; d--) { /* the last dimension varies fastest */
        const sweep_dim *dim = &sw->dims[d];
        for (int k = dim->first_key; k < dim->first_key + dim->n_keys; k++) idx[k] = rem % dim->len;
        rem /= dim->len;
    }
    if (values) {
        cJSON *v = cJSON_CreateObject();
        for (int k = 0; k < sw->n_keys; k++)
            cJSON_AddItemToObject(v, sw->keys[k].path, cJSON_Duplicate(sw->keys[k].items[idx[k]], 1));
        *values = v;
    }
    *out = *base;
    if (apply_point(sw, idx, out, err)) {
        char what[600];
        describe_point(sw, idx, what, sizeof what);
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " [sweep point %d: %s]", i, what);
        return err->code;
    }
    return 0;
}

cJSON *sweep_to_json(const sweep *sw) {
    cJSON *o = cJSON_CreateObject(), *dims = cJSON_AddArrayToObject(o, "dims");
    for (int d = 0; sw && d < sw->n_dims; d++) {
        cJSON *dim = cJSON_CreateObject();
        for (int k = sw->dims[d].first_key; k < sw->dims[d].first_key + sw->dims[d].n_keys; k++)
            cJSON_AddItemToObject(dim, sw->keys[k].path, cJSON_Duplicate(sw->keys[k].values, 1));
        cJSON_AddItemToArray(dims, dim);
    }
    cJSON_AddItemToObject(o, "model", sw && sw->model_section ? cJSON_Duplicate(sw->model_section, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "cluster", sw && sw->cluster_section ? cJSON_Duplicate(sw->cluster_section, 1) : cJSON_CreateNull());
    return o;
}

void sweep_free(sweep *sw) {
    if (!sw) return;
    for (int k = 0; k < sw->n_keys; k++) {
        cJSON_Delete(sw->keys[k].values);
        free(sw->keys[k].items);
    }
    cJSON_Delete(sw->model_section);
    cJSON_Delete(sw->cluster_section);
    free(sw);
}
