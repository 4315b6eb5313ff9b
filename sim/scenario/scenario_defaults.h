/* scenario_defaults.h — the built-in defaults every scenario starts from (SCENARIO.md: "every field
 * has a default taken from a preset, so a scenario names only what differs").
 *
 * The defaults are the seed 003 system: DeepSeek-V3 on 512 x 8 H800 (8-rail), layout
 * TP1 x PP16 x EP64 x DP4, DualPipe, FP8 compute. scenario_parse starts from this value. */
#ifndef MOESIM_SCENARIO_DEFAULTS_H
#define MOESIM_SCENARIO_DEFAULTS_H

#include "sim/scenario/scenario_types.h"

void scenario_defaults(scenario *s);

#endif
