/* nccl_tests.h — parse nccl-tests output (all_reduce_perf, alltoall_perf, sendrecv_perf, ...) into
 * calibration traces.
 *
 * What a log holds (nccl-tests 2.x, single process or MPI multi-node):
 *   # nccl-tests version 2.13.10 nccl-headers=21805 nccl-library=21805      (newer versions)
 *   # Collective test starting: alltoall_perf                                (newer versions)
 *   # nThread 1 nGpus 8 minBytes 8 maxBytes ... iters: 20 ...
 *   #  Rank  0 Group  0 Pid 1234 on host01 device  0 [0x18] NVIDIA H800       (one per rank)
 *   #       size  count  type  redop  root  time algbw busbw #wrong  time algbw busbw #wrong
 *   <rows: out-of-place columns, then in-place columns>
 *   # Avg bus bandwidth    : 130.7860
 * NCCL INFO lines and launcher noise (lines not starting with '#' or a digit) are skipped.
 *
 * nccl-tests semantics (its README, "Performance"): algbw = size / time; busbw = algbw x factor with
 * factor = 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall, 1 for
 * sendrecv, broadcast, reduce. The parser checks every row against these (within printing precision)
 * so a hand-edited or truncated log is caught; "#wrong" must be 0 or N/A.
 */
#ifndef MOESIM_CALIB_NCCL_TESTS_H
#define MOESIM_CALIB_NCCL_TESTS_H

#include "calibration/trace.h"
#include "sim/base/errors.h"

typedef struct {
    int line;                 /* 1-based line in the log */
    double size_bytes, count;
    char type[12], redop[12];
    int root;
    double time_us[2], algbw_GBps[2], busbw_GBps[2];   /* [0] out-of-place, [1] in-place */
    int has_inplace;
} nt_row;

typedef struct {
    char file[512];
    char op[24];              /* "all_reduce", "alltoall", "sendrecv", ... (binary name minus _perf) */
    int nranks, nnodes;
    char device[96];          /* rank 0's device name */
    char hosts[256];          /* distinct hosts, comma-separated */
    char nccl_version[32];    /* "2.18.5" from nccl-library=21805, or "n/a" */
    double avg_busbw_GBps;    /* "# Avg bus bandwidth" (0 when absent) */
    int n_rows;
    nt_row *rows;
} nt_log;

/* busbw / algbw for an nccl-tests binary on n ranks; 0 if the op is unknown. */
double nccl_busbw_factor(const char *op, int nranks);

/* Parse one log. `file_label` names it in messages (and helps identify the op from the file name
 * when the log predates "# Collective test starting"). Errors: EXIT_BADINPUT, "FILE: line N: ...". */
int nccl_tests_parse(const char *file_label, const char *text, nt_log *out, moe_error *err);
int nccl_tests_read(const char *path, nt_log *out, moe_error *err);
void nt_log_free(nt_log *log);

/* Append a log's rows to a trace: two points per row (shape.in_place 0 and 1), kernel = op,
 * bytes = size, ranks, link = link_override or "nvlink" (one node) / "rdma" (several nodes).
 * The trace's provenance (kind nccl-tests, device, hosts, NCCL version, source) is set from the
 * first log appended. */
int nccl_tests_append(const nt_log *log, const char *link_override, trace *t, moe_error *err);

#endif
