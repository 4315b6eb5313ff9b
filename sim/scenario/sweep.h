/* sweep.h — a scenario file's sweep: built from the parsed file (scenario_load.c), then walked
 * point by point.
 *
 * "sweep": {"a.b": [..], "c.d": [..]} is the cartesian product, the first key varying slowest;
 * "sweep": {"zip": {"a.b": [..], "c.d": [..]}} walks equally long lists in lockstep; a "zip" group
 * beside plain keys is one dimension of the product, at its place in the file. Keys are dotted
 * field paths (scenario_fields.h), including "model.preset" and "cluster.preset". */
#ifndef MOESIM_SWEEP_H
#define MOESIM_SWEEP_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

struct cJSON;
typedef struct sweep sweep;   /* opaque: the parsed "sweep" section */

/* `root`: the whole scenario file (its "sweep" member may be absent: a sweep of one point).
 * `base`: the parsed scenario; every sweep value is type- and range-checked against a copy of it.
 * The file's "model" and "cluster" sections are kept so that a swept preset re-applies them. */
int sweep_build(const struct cJSON *root, const scenario *base, sweep **out, moe_error *err);

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

/* Number of swept keys, and key i's dotted path (file order), e.g. for result columns. */
int sweep_n_keys(const sweep *sw);
const char *sweep_key(const sweep *sw, int i);

#endif
