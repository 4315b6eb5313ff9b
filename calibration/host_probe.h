/* host_probe.h — `simcal probe-host`: what the probe measures (its configuration and the dense GEMM
 * shapes), and its results as files: the host-overhead file ("moesim-host-probe/1") and the GEMM
 * table as a calibration trace ("moesim-trace/1", kernel "dense_gemm") that `simcal fit` reads.
 * The measuring itself is kernels/host_probe.cu (moe_host_probe_run); formats in
 * calibration/README.md. Everything here is pure: no GPU needed. */
#ifndef MOESIM_CALIB_HOST_PROBE_H
#define MOESIM_CALIB_HOST_PROBE_H

#include <stdio.h>

#include "calibration/trace.h"
#include "kernels/moe_kernels.h"

struct cJSON;

#define HOST_PROBE_FORMAT "moesim-host-probe/1"
#define HOST_PROBE_GEMM_KERNEL "dense_gemm"

/* The probe as `simcal probe-host` runs it: 256 launches per loop, 21 repetitions, 201 sync round
 * trips, 20 ms spins, 64 cuBLAS calls of 256^3, the dense GEMM table (warm-up 5, mean of 20, 60 s
 * budget) over host_probe_gemm_shapes. */
void host_probe_cfg_default(moe_host_probe_cfg *cfg);

/* The dense GEMM table's shapes (sources in host_probe.c); *n receives their count. */
const moe_gemm_shape *host_probe_gemm_shapes(int *n);

/* One timed GEMM as a trace point: kernel "dense_gemm", shape {m, n, k}, dtype "bf16",
 * flops = 2mnk, bytes = 2(mk + kn + mn) (each BF16 operand read once, the output written once). */
trace_point host_probe_gemm_point(const moe_gemm_timing *g);

/* The GEMM table as a trace with provenance `pv` (whose source is set here). 0, or EXIT_RUNTIME
 * when the table is empty (a trace needs at least one point). */
int host_probe_gemm_trace(const moe_host_probe *r, const trace_provenance *pv, trace *t, moe_error *err);

/* The host-overhead file: format, provenance, method (the configuration), every figure as
 * {"min", "median", "reps"} under a key naming its unit, or {"error": status} when its section
 * failed; the validity checks; the GEMM table as points {m, n, k, dtype, time_us, tflops}. */
struct cJSON *host_probe_to_json(const moe_host_probe *r, const moe_host_probe_cfg *cfg,
                                 const trace_provenance *pv);

/* The figures and the GEMM table as text (simcal's log). */
void host_probe_print(FILE *out, const moe_host_probe *r, const moe_host_probe_cfg *cfg, double peak_bf16_tflops);

#endif
