/* trace.h — calibration traces ("moesim-trace/1"): timed kernel and collective points + provenance.
 *
 * A trace is what one benchmark session measured on one machine: `simcal bench` (kernels on a GPU
 * with CUDA events, or the CPU references), `simcal import-nccl-tests` (nccl-tests logs), and the
 * live executor all write this format; `simcal fit` reads it. Format: calibration/README.md.
 *
 * Point classes (decided by the fields, so the fitter needs no list of kernel names):
 *   - collective: `link` is set (and ranks >= 2): t = alpha + bus bytes / beta per (op, link, ranks);
 *   - GEMM-like: flops > 0 and the kernel name contains "gemm" or "ffn": t = launch + f/(P eff) + B/bw;
 *   - memory-bound: everything else with bytes > 0: t = launch + B/bw.
 */
#ifndef MOESIM_CALIB_TRACE_H
#define MOESIM_CALIB_TRACE_H

#include <stdint.h>

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

struct cJSON;

#define TRACE_FORMAT "moesim-trace/1"
#define TRACE_MAX_DIMS 10
#define TRACE_STR 96

typedef struct {
    char key[24];
    double value;
} trace_dim;

typedef struct {
    char kernel[32];          /* "expert_ffn", "permute", "alltoall", "all_reduce", "sendrecv", ... */
    int n_dims;
    trace_dim shape[TRACE_MAX_DIMS];  /* numeric shape: {"tokens":..,"hidden":..} or {"size":..} */
    char dtype[12];           /* "bf16", "float", ... ("" when not applicable) */
    double time_us;           /* > 0 */
    double bytes;             /* kernels: device-memory bytes; collectives: nccl-tests size (bytes) */
    double flops;             /* >= 0 */
    int ranks;                /* >= 1 */
    char link[16];            /* collectives: "nvlink", "rdma", "pcie", "shm"; "" for kernels */
    double busbw_GBps;        /* collectives: as printed/computed (nccl-tests semantics); else 0 */
    char table[48];           /* optional: the published table the point comes from (residuals are
                                 reported per table) */
    char source[512];         /* optional: where the number comes from (repository, file, commit,
                                 row or figure); required in a "published" trace */
} trace_point;

/* gpu / cpu: measured by moesim's own simcal bench; nccl-tests: imported logs; published: someone
 * else's measurements, each point citing its source */
typedef enum { TRACE_KIND_GPU = 0, TRACE_KIND_CPU, TRACE_KIND_NCCL_TESTS, TRACE_KIND_PUBLISHED } trace_kind;

typedef struct {
    char device[TRACE_STR];
    int sm_count;             /* 0 = n/a (CPU) */
    double clock_mhz;         /* 0 = n/a */
    char driver[32], cuda[32], cublas[32], nccl[32];   /* "n/a" when not applicable */
    char host[256];           /* host name(s), comma-separated for multi-node logs */
    char date[32];            /* UTC ISO-8601 */
    char git[64];
    trace_kind kind;
    double peak_bf16_tflops;  /* dense peak of the device when known (GPU), else 0 */
    double hbm_GBps;          /* device memory bandwidth when known, else 0 */
    char source[256];         /* what produced it: "simcal bench --grid small", the log files... */
} trace_provenance;

typedef struct {
    trace_provenance prov;
    int n, cap;
    trace_point *pts;
} trace;

const char *trace_kind_name(trace_kind k);

void trace_init(trace *t);
void trace_free(trace *t);
/* Appends a copy; returns a pointer to the stored point (never NULL: sim/base/alloc.h). */
trace_point *trace_add(trace *t, const trace_point *p);
/* Sets shape[key] (adds it when absent, up to TRACE_MAX_DIMS). */
void trace_point_set_dim(trace_point *p, const char *key, double value);
/* shape[key] or `dflt` when absent. */
double trace_point_dim(const trace_point *p, const char *key, double dflt);

/* Host name, UTC date (SOURCE_DATE_EPOCH when set, for reproducible imports), git revision
 * (MOESIM_VERSION), "n/a" in the version fields. */
void trace_provenance_defaults(trace_provenance *pv, trace_kind kind);

/* Read/parse: every structural error -> EXIT_BADINPUT naming file, JSON path, value, expectation. */
int trace_read(const char *path, trace *t, moe_error *err);
int trace_parse(const char *file_label, const char *text, trace *t, moe_error *err);
/* Adds `pv` as parent.provenance (the trace format's object, also used by the host-probe file);
 * returns it. */
struct cJSON *trace_provenance_to_json(struct cJSON *parent, const trace_provenance *pv);
/* Serialise (deterministic key order; %.17g-exact numbers via cJSON). Caller frees. */
struct cJSON *trace_to_json(const trace *t);
/* trace_to_json + json_write_atomic. */
int trace_write(const char *path, const trace *t, moe_error *err);

/* Point dtype string -> dtype_kind: "fp8"/"e4m3"/"e5m2" FP8, "fp16"/"half" FP16, "fp32"/"float" FP32,
 * anything else (including "bf16" and "") BF16. */
dtype_kind calib_dtype_of(const char *dtype);

/* Write JSON (formatted, trailing newline) atomically (write_file_atomic, sim/base/fileio.h). */
int json_write_atomic(const char *path, const struct cJSON *root, moe_error *err);
/* FNV-1a 64-bit of the file's bytes as 16 hex digits (content identity of a trace, not security). */
int calib_file_hash(const char *path, char hex[17], moe_error *err);

#endif
