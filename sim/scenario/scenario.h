/* scenario.h — a scenario's field set by its dotted path, its cross-field validation and its JSON
 * form (sim/scenario/scenario.c), with the resolved scenario itself (scenario_types.h: the struct
 * every consumer reads, never JSON; SCENARIO.md, format "moesim-scenario/1").
 *
 * Related headers: sim/scenario/scenario_load.h (reading a scenario file or text, with its sweep),
 * sim/scenario/sweep.h (sweep points and keys), sim/scenario/scenario_defaults.h (scenario_defaults:
 * the built-in defaults), sim/scenario/scenario_fields.h (the one table of fields: JSON paths, types,
 * ranges), sim/scenario/scenario_paths.h (scenario_resolve_path). */
#ifndef MOESIM_SCENARIO_H
#define MOESIM_SCENARIO_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cJSON;

/* Set one field by dotted path ("layout.pp", "cluster.gpu.mem_GiB") from a JSON value; type- and
 * range-checked. Presets ("model.preset") reset that section to the preset first. A value parsed
 * from text comes from json_parse_strict (sim/base/json_read.h), which refuses duplicate keys. */
int scenario_set_path(scenario *s, const char *path, const struct cJSON *value, moe_error *err);
/* Cross-field checks (layout product == GPUs, EP divides experts, top_k <= experts, batches...). */
int scenario_validate(const scenario *s, moe_error *err);
/* The cluster's cross-field rules, part of scenario_validate: one NIC and rail per GPU (cluster.rails
 * == cluster.gpus_per_node), NVLink domains of whole nodes that divide the GPUs. The fabric holds
 * every cluster it builds to them (fabric_check_cluster, platforms/fabric_geometry.h). Needs
 * cluster.gpus_per_node >= 1. */
int scenario_check_cluster(const scenario *s, moe_error *err);
/* The fully resolved scenario as JSON (every field, presets expanded). Caller frees. */
struct cJSON *scenario_to_json(const scenario *s);
/* The fields where `to` differs from `from`, shaped like scenario_to_json (nested sections) and holding
 * `to`'s values: an RFC 7396 merge patch, so json_patch(scenario_to_json(from), patch) is `to`'s JSON
 * (a field that becomes null is dropped by RFC 7396: nullable fields are names and presets). Cheap:
 * only fields whose bytes differ are converted. Caller frees. */
struct cJSON *scenario_patch_json(const scenario *from, const scenario *to);

#ifdef __cplusplus
}
#endif

#endif
