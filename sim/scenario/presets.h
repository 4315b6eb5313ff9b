/* presets.h — built-in models and clusters (SCENARIO.md "Models and presets").
 * Values come from the models' published configurations and the GPUs' public specifications. */
#ifndef MOESIM_PRESETS_H
#define MOESIM_PRESETS_H

#include "sim/scenario/scenario.h"

/* NULL-terminated name lists, for validation messages and did-you-mean hints. */
extern const char *const preset_model_names[];
extern const char *const preset_cluster_names[];

/* Fill `out` with the named preset (its `preset` field set to name). 0 on success, -1 if unknown. */
int preset_model(const char *name, model_cfg *out);
int preset_cluster(const char *name, cluster_cfg *out);
/* The cost model published for a cluster preset's GPU ("calibration/models/h100-published.json"), or
 * NULL. A scenario's calibration follows its cluster preset while it is that preset's default. */
const char *preset_cluster_calibration(const char *name);

#endif
