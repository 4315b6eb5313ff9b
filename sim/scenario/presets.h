/* presets.h — built-in models and clusters (SCENARIO.md "Models and presets").
 * Values come from the models' published configurations and the GPUs' public specifications. */
#ifndef MOESIM_PRESETS_H
#define MOESIM_PRESETS_H

#include <stddef.h>

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

/* NULL-terminated name lists, for validation messages and did-you-mean hints. */
extern const char *const preset_model_names[];
extern const char *const preset_cluster_names[];

struct cJSON;

/* Fill `out` with the named preset (its `preset` field set to name). 0 on success, -1 if unknown. */
int preset_model(const char *name, model_cfg *out);
/* What a model's published training run used besides its architecture: its routing constraints,
 * precision recipe and training tokens. A scenario naming the model gets these unless it sets them
 * itself (scn_model_preset_apply). precision.dispatch is not part of it: it follows precision.compute
 * (preset_dispatch_for). */
typedef struct {
    dtype_kind compute, combine, master;
    int node_limit;          /* routing.node_limit: 0 = none */
    double capacity_factor;  /* routing.capacity_factor: 0 = dropless */
    int drop;                /* routing.drop */
    double training_tokens;  /* run.tokens as published; 0 = not published */
} model_recipe;
/* The recipe of model preset `name`; "" (a model given field by field) gets the neutral one: BF16
 * compute and combine, FP32 master, no node limit, dropless, no published tokens. -1 if unknown. */
int preset_model_recipe(const char *name, model_recipe *out);
/* The dispatch precision that goes with a compute recipe when the scenario sets none. */
dtype_kind preset_dispatch_for(dtype_kind compute);
/* A model without a preset (a model section without "preset", or "preset": null): reset `m` to nothing inherited; after the model section
 * is applied, preset_custom_model_check lists the required fields `section` (the JSON object) lacks
 * (EXIT_BADINPUT naming them) and fills the derived defaults (dense_layers of a dense model, kv_heads,
 * v_head_dim). */
void preset_custom_model(model_cfg *m);
int preset_custom_model_check(model_cfg *m, const struct cJSON *section, const char *file, moe_error *err);
/* The model presets as words, "deepseek-v3, mixtral-8x7b, ..." (for messages). */
void preset_model_list(char *buf, size_t cap);
int preset_cluster(const char *name, cluster_cfg *out);
/* The cost model published for a cluster preset's GPU ("calibration/models/h100-published.json"), ""
 * (no published model for that GPU: the built-in roofline of its datasheet figures) or NULL. A
 * scenario's calibration follows its cluster preset while it is that preset's default. */
const char *preset_cluster_calibration(const char *name);

#endif
