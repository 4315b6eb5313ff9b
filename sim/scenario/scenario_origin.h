/* scenario_origin.h — where each value of a resolved scenario came from (`simrun show`).
 *
 * A scenario starts from the built-in defaults (scenario_defaults.h), applies the presets it names,
 * then the fields its file gives, then a sweep point's values. The origin of a field is the last of
 * these that set it: "sweep" when the point's sweep values name it, "scenario" when the file gives
 * it, "preset" when its section's preset (scn_field_default_preset) supplied it, else "built-in
 * default". */
#ifndef MOESIM_SCENARIO_ORIGIN_H
#define MOESIM_SCENARIO_ORIGIN_H

#include <stddef.h>

#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_fields.h"

struct cJSON;

typedef enum { SCN_ORIGIN_DEFAULT = 0, SCN_ORIGIN_PRESET, SCN_ORIGIN_SCENARIO, SCN_ORIGIN_SWEEP } scn_origin;
extern const char *const scn_origin_names[]; /* "built-in default", "preset", "scenario", "sweep" */

/* The origin of field `f` in the resolved point `s`: `root` is the scenario file's JSON, `values`
 * the point's sweep values ({"layout.pp": 16}; NULL without a sweep). `detail` receives what
 * qualifies it ("deepseek-v3" for a preset, "from the file name" for a derived name), or "". */
scn_origin scn_field_origin(const scn_field *f, const struct cJSON *root, const struct cJSON *values,
                            const scenario *s, char *detail, size_t cap);

/* {"file", "name", "point", "fields": [{"path", "value", "origin", "detail"?}, ...]} for every field of
 * the table, in table order (caller frees; NULL when out of memory). */
struct cJSON *scenario_show_json(const scenario *s, const struct cJSON *root, const struct cJSON *values,
                                 int point);

#endif
