/* presets.h — built-in models and clusters (SCENARIO.md "Models and presets").
 * Values come from the models' published configurations and the GPUs' public specifications. */
#ifndef MOESIM_PRESETS_H
#define MOESIM_PRESETS_H

#include "sim/scenario/scenario.h"

/* NULL-terminated name lists, for validation messages and did-you-mean hints. */
extern const char *const preset_model_names[];
extern const char *const preset_cluster_names[];

struct cJSON;

/* Fill `out` with the named preset (its `preset` field set to name). 0 on success, -1 if unknown. */
int preset_model(const char *name, model_cfg *out);
/* The precision a model preset trains in, written into the fields of `prec` whose bit is not set in
 * `given` (scenario.precision_given: bit 0 compute, 1 dispatch, 2 combine, 3 master). */
void preset_model_precision(const char *name, unsigned given, precision_cfg *prec);
/* A model without a preset ("preset": null): reset `m` to nothing inherited; after the model section
 * is applied, preset_custom_model_check lists the required fields `section` (the JSON object) lacks
 * (EXIT_BADINPUT naming them) and fills the derived defaults (dense_layers of a dense model, kv_heads,
 * v_head_dim). */
void preset_custom_model(model_cfg *m);
int preset_custom_model_check(model_cfg *m, const struct cJSON *section, const char *file, moe_error *err);
int preset_cluster(const char *name, cluster_cfg *out);
/* The cost model published for a cluster preset's GPU ("calibration/models/h100-published.json"), ""
 * (no published model for that GPU: the built-in roofline of its datasheet figures) or NULL. A
 * scenario's calibration follows its cluster preset while it is that preset's default. */
const char *preset_cluster_calibration(const char *name);

#endif
