/* scenario_paths.h — resolving the relative file paths a scenario names (calibration,
 * routing.trace, reliability.failure_trace).
 *
 * The scenario keeps such paths exactly as written. A consumer resolves one relative to the
 * current directory first (so `simrun scenarios/x.json` run from the repository root finds
 * "calibration/models/h800-published.json"), then relative to the directory of the scenario file
 * (so a scenario shipped beside its trace finds it from anywhere), then under moesim's data roots:
 * the installed share folder beside the running program (`cmake --install`: <prefix>/share/moesim
 * holds calibration/models/ and scenarios/) and the source tree of the build (MOESIM_SOURCE_DIR; the
 * environment variable of that name overrides it, "" for none). Absolute paths are used as is. */
#ifndef MOESIM_SCENARIO_PATHS_H
#define MOESIM_SCENARIO_PATHS_H

#include <stddef.h>
#include "sim/scenario/scenario_types.h"

/* Writes the path to open into `out` (capacity `cap`). Returns 0 when the file exists there,
 * -1 when it exists in neither place (`out` then holds `rel` unchanged, for the error message),
 * -2 when a candidate does not fit in `cap`. */
int scenario_resolve_path(const scenario *s, const char *rel, char *out, size_t cap);

/* Data root i (0: the installed share folder, 1: the source tree) into out; -1 when there is none. */
int moesim_data_root(int i, char *out, size_t cap);

#endif
