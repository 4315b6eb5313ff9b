/* scenario_origin.c — the origin of every resolved value (scenario_origin.h). */
#include "sim/scenario/scenario_origin.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "sim/scenario/presets.h"

const char *const scn_origin_names[] = {"built-in default", "preset", "scenario", "sweep", "follows", NULL};

/* The model of the built-in default scenario (scenario_defaults). */
#define DEFAULT_MODEL "deepseek-v3"

/* Fields whose built-in default is the reference design's DeepSeek-V3 choice (seed 003: TP1 x PP16 x
 * EP64 x DP4, ZeRO-1, 15,360 sequences, DualPipe; DeepSeek's bias update speed): in a scenario that
 * names another model, a value left at it is DeepSeek-V3's, not that model's. */
static const char *const SEED_DESIGN[] = {"layout.tp", "layout.pp", "layout.ep", "layout.dp", "layout.zero",
                                          "layout.global_batch", "layout.schedule",
                                          "routing.drift.bias_update_speed", NULL};

static int seed_design(const char *path) {
    for (int i = 0; SEED_DESIGN[i]; i++)
        if (strcmp(SEED_DESIGN[i], path) == 0) return 1;
    return 0;
}

void scn_field_source(const scn_field *f, const cJSON *values, const scenario *s, scn_source *out) {
    memset(out, 0, sizeof *out);
    int default_model = !scn_path_given(s, "model.preset"); /* the scenario names no model */
    if (values && cJSON_GetObjectItemCaseSensitive(values, f->path)) { out->origin = SCN_ORIGIN_SWEEP; return; }
    if (scn_field_given(s, f)) { out->origin = SCN_ORIGIN_SCENARIO; return; }
    out->origin = SCN_ORIGIN_DEFAULT;
    if (strcmp(f->path, "name") == 0) { snprintf(out->detail, sizeof out->detail, "from the file name"); return; }
    if (strcmp(f->path, "output.dir") == 0) { snprintf(out->detail, sizeof out->detail, "results/<name>"); return; }
    if (strcmp(f->path, "model.preset") == 0) {
        snprintf(out->detail, sizeof out->detail, "the built-in default scenario: the scenario has no model section");
        snprintf(out->other_model, sizeof out->other_model, "%s", DEFAULT_MODEL);
        return;
    }
    if (strcmp(f->path, "precision.dispatch") == 0) {
        out->origin = SCN_ORIGIN_FOLLOWS;
        snprintf(out->detail, sizeof out->detail, "precision.compute \"%s\"", scn_compute_names[s->precision.compute]);
        return;
    }
    if (strcmp(f->path, "cluster.rails") == 0 && scn_path_given(s, "cluster.gpus_per_node")) {
        out->origin = SCN_ORIGIN_FOLLOWS;
        snprintf(out->detail, sizeof out->detail, "cluster.gpus_per_node: one rail per GPU");
        return;
    }
    if ((strcmp(f->path, "cluster.pfc") == 0 || strcmp(f->path, "cluster.stall_discard_ms") == 0) &&
        scn_path_given(s, "cluster.transport")) {
        out->origin = SCN_ORIGIN_FOLLOWS;
        snprintf(out->detail, sizeof out->detail, "cluster.transport \"%s\"", scn_transport_names[s->cluster.transport]);
        return;
    }
    const char *preset_path = scn_field_default_preset(f);
    if (!preset_path) {
        if (seed_design(f->path) && (default_model || strcmp(s->model.preset, DEFAULT_MODEL) != 0)) {
            snprintf(out->detail, sizeof out->detail, "the reference design's DeepSeek-V3 value");
            snprintf(out->other_model, sizeof out->other_model, "%s", DEFAULT_MODEL);
        }
        return;
    }
    int model = strcmp(preset_path, "model.preset") == 0;
    const char *name = model ? s->model.preset : s->cluster.preset;
    if (model && strcmp(f->path, "run.tokens") == 0) {
        model_recipe r;
        if (preset_model_recipe(name, &r) == 0 && !(r.training_tokens > 0)) {
            snprintf(out->detail, sizeof out->detail, "assumed (the reference design's DeepSeek-V3 run): %s "
                     "publishes no training tokens; set run.tokens", *name ? name : "a model without a preset");
            snprintf(out->other_model, sizeof out->other_model, "%s", DEFAULT_MODEL);
            return;
        }
    }
    if (!*name) {
        if (model) snprintf(out->detail, sizeof out->detail, "the neutral value for a model without a preset");
        return; /* a cluster section without a preset keeps the built-in values */
    }
    /* the cost model follows the cluster preset only while the scenario names none */
    if (strcmp(f->path, "calibration") == 0) {
        const char *def = preset_cluster_calibration(name);
        if (!def || strcmp(def, s->calibration) != 0) return;
    }
    out->origin = SCN_ORIGIN_PRESET;
    snprintf(out->preset, sizeof out->preset, "%s", name);
    int swept = values && cJSON_GetObjectItemCaseSensitive(values, preset_path);
    if (model && default_model && !swept) {
        snprintf(out->detail, sizeof out->detail, "%s, the built-in default scenario's model", name);
        snprintf(out->other_model, sizeof out->other_model, "%s", name);
        return;
    }
    int given = scn_path_given(s, preset_path);
    snprintf(out->detail, sizeof out->detail, "%s%s", name, swept ? " (swept preset)" : given ? "" : " (the built-in preset)");
}

void scn_origin_note(const scenario *s, const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    const scn_field *f = scn_field_find(path);
    if (!f || scn_field_given(s, f)) return;
    scn_source src;
    scn_field_source(f, NULL, s, &src);
    if (src.origin == SCN_ORIGIN_PRESET)
        snprintf(buf, cap, " (from the preset \"%s\"%s)", src.preset,
                 *src.other_model ? ", the built-in default scenario's model" : "");
    else if (src.origin == SCN_ORIGIN_FOLLOWS)
        snprintf(buf, cap, " (follows %s)", src.detail);
    else
        snprintf(buf, cap, " (the built-in default%s%s)", *src.detail ? ": " : "", src.detail);
}

cJSON *scenario_show_json(const scenario *s, const cJSON *values, int point) {
    cJSON *doc = cJSON_CreateObject();
    cJSON *fields = cJSON_CreateArray();
    if (!doc || !fields) { cJSON_Delete(doc); cJSON_Delete(fields); return NULL; }
    cJSON_AddStringToObject(doc, "format", "moesim-show/1");
    cJSON_AddStringToObject(doc, "file", s->file);
    cJSON_AddStringToObject(doc, "name", s->name);
    cJSON_AddNumberToObject(doc, "point", point);
    char model[160];
    if (!scn_path_given(s, "model.preset"))
        snprintf(model, sizeof model, "%s from the built-in default scenario (no model section)", s->model.preset);
    else if (!*s->model.preset) snprintf(model, sizeof model, "a model without a preset");
    else snprintf(model, sizeof model, "%s", s->model.preset);
    cJSON_AddStringToObject(doc, "model", model);
    cJSON_AddItemToObject(doc, "fields", fields);
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        if (f->type == SF_SWEEP) continue; /* the sweep is not a value of a point */
        cJSON *row = cJSON_CreateObject(), *v = scn_field_get(s, f);
        scn_source src;
        scn_field_source(f, values, s, &src);
        cJSON_AddStringToObject(row, "path", f->path);
        cJSON_AddItemToObject(row, "value", v ? v : cJSON_CreateNull());
        cJSON_AddStringToObject(row, "origin", scn_origin_names[src.origin]);
        if (*src.detail) cJSON_AddStringToObject(row, "detail", src.detail);
        if (*src.other_model) cJSON_AddStringToObject(row, "other_model", src.other_model);
        cJSON_AddItemToArray(fields, row);
    }
    return doc;
}
