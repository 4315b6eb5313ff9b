/* scenario.h — the API of the scenario (sim/scenario/scenario.c, sim/scenario/sweep.c), with the
 * resolved scenario itself (scenario_types.h: the struct every consumer reads, never JSON; SCENARIO.md,
 * format "moesim-scenario/1"). */
#ifndef MOESIM_SCENARIO_H
#define MOESIM_SCENARIO_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Related headers: sim/scenario/scenario_defaults.h (scenario_defaults: the built-in defaults),
 * sim/scenario/scenario_fields.h (the one table of fields: JSON paths, types, ranges), sim/scenario/scenario_paths.h
 * (scenario_resolve_path), sim/scenario/sweep.h (sweep keys, for result columns). */
struct cJSON;
typedef struct sweep sweep;   /* opaque: the parsed "sweep" section */

/* Parse and validate a scenario file: presets, then the file's fields, then validation. `*sw`
 * receives the sweep (a single point when the file has none); pass NULL to forbid a sweep.
 * With a sweep, cross-field validation happens per point in sweep_point (a base that only its
 * sweep makes consistent is accepted); types and ranges of every value are checked here. */
int scenario_load(const char *path, scenario *out, sweep **sw, moe_error *err);
/* Same from text; `file_label` names the source in error messages. */
int scenario_parse(const char *file_label, const char *json_text, scenario *out, sweep **sw,
                   moe_error *err);
/* Set one field by dotted path ("layout.pp", "cluster.gpu.mem_GiB") from a JSON value; type- and
 * range-checked. Presets ("model.preset") reset that section to the preset first. A value parsed
 * from text comes from json_parse_strict (sim/base/json_read.h), which refuses duplicate keys. */
int scenario_set_path(scenario *s, const char *path, const struct cJSON *value, moe_error *err);
/* Cross-field checks (layout product == GPUs, EP divides experts, top_k <= experts, batches...). */
int scenario_validate(const scenario *s, moe_error *err);
/* The fully resolved scenario as JSON (every field, presets expanded). Caller frees. */
struct cJSON *scenario_to_json(const scenario *s);
/* The fields where `to` differs from `from`, shaped like scenario_to_json (nested sections) and holding
 * `to`'s values: an RFC 7396 merge patch, so json_patch(scenario_to_json(from), patch) is `to`'s JSON
 * (a field that becomes null is dropped by RFC 7396: nullable fields are names and presets). Cheap:
 * only fields whose bytes differ are converted. Caller frees. */
struct cJSON *scenario_patch_json(const scenario *from, const scenario *to);

int sweep_count(const sweep *sw);
/* Point i (0-based, deterministic order): base with the sweep values applied and validated.
 * `*values` (may be NULL) receives {"layout.pp": 16, ...} for the results, also when the point is
 * invalid (non-zero return: the values name what was tried); caller frees. */
int sweep_point(const sweep *sw, const scenario *base, int i, scenario *out, struct cJSON **values,
                moe_error *err);
void sweep_free(sweep *sw);
/* The sweep's definition as JSON (its dimensions, each {"dotted.path": [values], ...}, and the file's
 * model/cluster sections that swept presets re-apply): what a run's fingerprint hashes. Caller frees. */
struct cJSON *sweep_to_json(const sweep *sw);


#ifdef __cplusplus
}
#endif

#endif
