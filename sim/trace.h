/* trace.h — Chrome/Perfetto trace.json of one simulated step.
 *
 * One process per traced rank ("rank R (stage S, ep E, replica D) GPU G node N"), one thread (track)
 * per stream of that rank (compute, comm, p2p), one complete event ("ph": "X") per op with its name
 * (kernel or collective), micro-batch, layer, phase and bytes/FLOPs in args. Times in microseconds.
 * The file is a JSON object {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}, which
 * ui.perfetto.dev and chrome://tracing open. Written atomically (temporary name, then rename). */
#ifndef MOESIM_TRACE_H
#define MOESIM_TRACE_H

#include "sim/program.h"
#include "sim/step_exec.h"

/* The default subset (scenario output.trace_ranks empty): first and last rank of stage 0 and of the
 * last stage (replica 0), the slowest rank, and the holder of the hot expert when routing is "hot".
 * Writes up to `max` distinct ranks into `out`, ascending; returns the count. */
int trace_default_ranks(const program *p, int slowest_rank, int *out, int max);

/* Build the trace document (caller frees with cJSON_Delete). */
struct cJSON *trace_build(const program *p, const step_exec_result *r);
/* Build and write it to `path` atomically. */
int trace_write(const char *path, const program *p, const step_exec_result *r, moe_error *err);

#endif
