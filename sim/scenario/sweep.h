/* sweep.h — building a sweep from a parsed scenario file (used by scenario.c; the sweep API itself,
 * sweep_count / sweep_point / sweep_free, is declared in scenario.h).
 *
 * "sweep": {"a.b": [..], "c.d": [..]} is the cartesian product, the first key varying slowest;
 * "sweep": {"zip": {"a.b": [..], "c.d": [..]}} walks equally long lists in lockstep; a "zip" group
 * beside plain keys is one dimension of the product, at its place in the file. Keys are dotted
 * field paths (scenario_fields.h), including "model.preset" and "cluster.preset". */
#ifndef MOESIM_SWEEP_H
#define MOESIM_SWEEP_H

#include "sim/scenario/scenario.h"

struct cJSON;

/* `root`: the whole scenario file (its "sweep" member may be absent: a sweep of one point).
 * `base`: the parsed scenario; every sweep value is type- and range-checked against a copy of it.
 * The file's "model" and "cluster" sections are kept so that a swept preset re-applies them. */
int sweep_build(const struct cJSON *root, const scenario *base, sweep **out, moe_error *err);

/* Number of swept keys, and key i's dotted path (file order), e.g. for result columns. */
int sweep_n_keys(const sweep *sw);
const char *sweep_key(const sweep *sw, int i);

#endif
