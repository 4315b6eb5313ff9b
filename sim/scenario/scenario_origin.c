/* scenario_origin.c — the origin of every resolved value (scenario_origin.h). */
#include "sim/scenario/scenario_origin.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "sim/scenario/presets.h"

const char *const scn_origin_names[] = {"built-in default", "preset", "scenario", "sweep", NULL};

/* The member at dotted `path` of the nested objects of `root`, or NULL. */
static const cJSON *nested(const cJSON *root, const char *path) {
    const cJSON *at = root;
    char key[128];
    for (const char *p = path; at && *p;) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof key) return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, key) : NULL;
        p += n + (p[n] == '.');
    }
    return at;
}

scn_origin scn_field_origin(const scn_field *f, const cJSON *root, const cJSON *values, const scenario *s,
                            char *detail, size_t cap) {
    detail[0] = '\0';
    if (values && cJSON_GetObjectItemCaseSensitive(values, f->path)) return SCN_ORIGIN_SWEEP;
    if (nested(root, f->path)) return SCN_ORIGIN_SCENARIO;
    if (strcmp(f->path, "name") == 0) {
        snprintf(detail, cap, "from the file name");
        return SCN_ORIGIN_DEFAULT;
    }
    if (strcmp(f->path, "output.dir") == 0) {
        snprintf(detail, cap, "results/<name>");
        return SCN_ORIGIN_DEFAULT;
    }
    const char *preset_path = scn_field_default_preset(f);
    if (!preset_path) return SCN_ORIGIN_DEFAULT;
    int model = strcmp(preset_path, "model.preset") == 0;
    const char *name = model ? s->model.preset : s->cluster.preset;
    if (!*name) return SCN_ORIGIN_DEFAULT; /* a section without a preset keeps the built-in values */
    /* the cost model follows the cluster preset only while the scenario names none */
    if (strcmp(f->path, "calibration") == 0) {
        const char *def = preset_cluster_calibration(name);
        if (!def || strcmp(def, s->calibration) != 0) return SCN_ORIGIN_DEFAULT;
    }
    int swept = values && cJSON_GetObjectItemCaseSensitive(values, preset_path);
    int given = nested(root, preset_path) != NULL;
    snprintf(detail, cap, "%s%s", name, swept ? " (swept preset)" : given ? "" : " (the built-in preset)");
    return SCN_ORIGIN_PRESET;
}

cJSON *scenario_show_json(const scenario *s, const cJSON *root, const cJSON *values, int point) {
    cJSON *doc = cJSON_CreateObject();
    cJSON *fields = cJSON_CreateArray();
    if (!doc || !fields) { cJSON_Delete(doc); cJSON_Delete(fields); return NULL; }
    cJSON_AddStringToObject(doc, "format", "moesim-show/1");
    cJSON_AddStringToObject(doc, "file", s->file);
    cJSON_AddStringToObject(doc, "name", s->name);
    cJSON_AddNumberToObject(doc, "point", point);
    cJSON_AddItemToObject(doc, "fields", fields);
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        if (f->type == SF_SWEEP) continue; /* the sweep is not a value of a point */
        cJSON *row = cJSON_CreateObject(), *v = scn_field_get(s, f);
        char detail[128];
        scn_origin o = scn_field_origin(f, root, values, s, detail, sizeof detail);
        cJSON_AddStringToObject(row, "path", f->path);
        cJSON_AddItemToObject(row, "value", v ? v : cJSON_CreateNull());
        cJSON_AddStringToObject(row, "origin", scn_origin_names[o]);
        if (*detail) cJSON_AddStringToObject(row, "detail", detail);
        cJSON_AddItemToArray(fields, row);
    }
    return doc;
}
