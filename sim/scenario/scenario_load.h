/* scenario_load.h — reading a scenario file (SCENARIO.md, "moesim-scenario/1"): the built-in
 * defaults, then the file's fields (presets first), then its sweep, then validation. */
#ifndef MOESIM_SCENARIO_LOAD_H
#define MOESIM_SCENARIO_LOAD_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"
#include "sim/scenario/sweep.h"

/* Parse and validate a scenario file: presets, then the file's fields, then validation. `*sw`
 * receives the sweep (a single point when the file has none); pass NULL to forbid a sweep.
 * With a sweep, cross-field validation happens per point in sweep_point (a base that only its
 * sweep makes consistent is accepted); types and ranges of every value are checked here. */
int scenario_load(const char *path, scenario *out, sweep **sw, moe_error *err);
/* Same from text; `file_label` names the source in error messages. */
int scenario_parse(const char *file_label, const char *json_text, scenario *out, sweep **sw,
                   moe_error *err);

#endif
