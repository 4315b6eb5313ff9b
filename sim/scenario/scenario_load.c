/* scenario_load.c — reading a scenario file: the defaults, the file's fields (scenario_fields.c), its
 * sweep (sweep.c) and the cross-field validation (scenario.c). */
#include "sim/scenario/scenario_load.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/fileio.h"
#include "sim/base/json_read.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_fields.h"

/* A scenario is a few KiB; 16 MiB leaves room for generated sweeps and refuses anything else. */
#define SCENARIO_MAX_BYTES ((size_t)16 << 20)

/* A name from the file name when the scenario has none: "scenarios/seed-4096.json" -> "seed-4096". */
static void derive_name(scenario *s) {
    const char *base = strrchr(s->file, '/');
    base = base ? base + 1 : s->file;
    size_t n = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) n = (size_t)(dot - base);
    if (n >= sizeof s->name) n = sizeof s->name - 1;
    for (size_t i = 0; i < n; i++) {
        char c = base[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '+' || c == '-';
        s->name[i] = ok ? c : '-';
    }
    s->name[n] = '\0';
    if (n == 0) snprintf(s->name, sizeof s->name, "scenario");
}

static int parse_root(scenario *s, const cJSON *root, sweep **sw, moe_error *err) {
    if (!cJSON_IsObject(root)) {
        char val[128];
        json_shown(root, val, sizeof val);
        return moe_error_input(err, s->file, NULL, val, "a JSON object (the scenario) at the top level");
    }
    if (scn_apply_object(s, "", root, 0, err)) return EXIT_BADINPUT;
    if (!cJSON_GetObjectItemCaseSensitive(root, "name")) derive_name(s);
    const cJSON *output = cJSON_GetObjectItemCaseSensitive(root, "output");
    if (!cJSON_GetObjectItemCaseSensitive(output, "dir"))
        snprintf(s->output.dir, sizeof s->output.dir, "results/%s", s->name);

    const cJSON *sweep_obj = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    if (sweep_obj && !sw)
        return moe_error_input(err, s->file, "sweep", "a sweep", "a single scenario here (no \"sweep\")");
    if (sw && sweep_build(root, s, sw, err)) return EXIT_BADINPUT;
    /* With a sweep, each point is validated as it is made (a base that only its sweep makes
     * consistent is fine); without one, the scenario itself must be valid. */
    if ((!sw || sweep_n_keys(*sw) == 0) && scenario_validate(s, err)) {
        if (sw) { sweep_free(*sw); *sw = NULL; }
        return EXIT_BADINPUT;
    }
    return 0;
}

/* Parse text[0, len) as the scenario s->file (defaults already set). */
static int scenario_parse_text(scenario *s, const char *text, size_t len, sweep **sw, moe_error *err) {
    cJSON *root = json_parse_strict(s->file, text, len, err);
    if (!root) return err->code;
    int rc = parse_root(s, root, sw, err);
    cJSON_Delete(root);
    return rc;
}

int scenario_parse(const char *file_label, const char *json_text, scenario *out, sweep **sw,
                   moe_error *err) {
    if (sw) *sw = NULL;
    scenario_defaults(out);
    const char *label = file_label ? file_label : "";
    if (strlen(label) >= sizeof out->file)
        return moe_error_input(err, NULL, NULL, NULL, "a scenario path shorter than %zu characters",
                               sizeof out->file);
    snprintf(out->file, sizeof out->file, "%s", label);
    if (!json_text) return moe_error_input(err, label, NULL, NULL, "scenario text");
    return scenario_parse_text(out, json_text, strlen(json_text), sw, err);
}

int scenario_load(const char *path, scenario *out, sweep **sw, moe_error *err) {
    if (sw) *sw = NULL;
    scenario_defaults(out);
    if (strlen(path) >= sizeof out->file)
        return moe_error_input(err, NULL, NULL, NULL, "a scenario path shorter than %zu characters",
                               sizeof out->file);
    size_t len = 0;
    char *text = read_file_bounded(path, SCENARIO_MAX_BYTES, &len, err);
    if (!text) return err->code;
    snprintf(out->file, sizeof out->file, "%s", path);
    int rc = scenario_parse_text(out, text, len, sw, err);
    free(text);
    return rc;
}
