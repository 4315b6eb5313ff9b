/* scenario_origin.h — where each value of a resolved scenario came from (`simrun show`, and the
 * error messages about a value the scenario did not write).
 *
 * A scenario starts from the built-in default scenario (scenario_defaults.h: DeepSeek-V3 on the seed
 * 003 cluster), applies the presets it names, then the fields its file gives, then a sweep point's
 * values; some values follow another field unless set themselves. The origin of a field is the last
 * of these that set it: "sweep" when the point's sweep values name it, "scenario" when the scenario
 * set it (scenario.given), "follows" when it follows a field (precision.dispatch, cluster.rails),
 * "preset" when a preset supplied it (scn_field_default_preset), else "built-in default". */
#ifndef MOESIM_SCENARIO_ORIGIN_H
#define MOESIM_SCENARIO_ORIGIN_H

#include <stddef.h>

#include "sim/scenario/scenario_types.h"
#include "sim/scenario/scenario_fields.h"

struct cJSON;

typedef enum { SCN_ORIGIN_DEFAULT = 0, SCN_ORIGIN_PRESET, SCN_ORIGIN_SCENARIO, SCN_ORIGIN_SWEEP,
               SCN_ORIGIN_FOLLOWS } scn_origin;
extern const char *const scn_origin_names[]; /* "built-in default", "preset", "scenario", "sweep", "follows" */

typedef struct {
    scn_origin origin;
    char detail[192];        /* what qualifies it ("mixtral-8x7b", "from the file name"), or "" */
    char preset[SCN_NAME_MAX]; /* the preset that supplied it ("" unless origin is "preset") */
    /* the model whose value this is when it is not the model the scenario names (a value of the
     * built-in DeepSeek-V3 scenario in a scenario that names another model or none), else "" */
    char other_model[SCN_NAME_MAX];
} scn_source;

/* The source of field `f` in the resolved point `s`; `values` are the point's sweep values
 * ({"layout.pp": 16}; NULL without a sweep). */
void scn_field_source(const scn_field *f, const struct cJSON *values, const scenario *s, scn_source *out);

/* For an error about the value at `path` that the scenario did not set: " (from the preset
 * \"h800-8rail\")", " (the built-in default: ...)" or " (follows ...)", written into buf; "" when the
 * scenario set it. */
void scn_origin_note(const scenario *s, const char *path, char *buf, size_t cap);

/* {"file", "name", "point", "model", "fields": [{"path", "value", "origin", "detail"?, "other_model"?},
 * ...]} for every field of the table, in table order; "model" says which model the scenario names and
 * how (caller frees; NULL when out of memory). */
struct cJSON *scenario_show_json(const scenario *s, const struct cJSON *values, int point);

#endif
