/* nccl_tests.c — nccl-tests log parser (format and checks: nccl_tests.h). */
#define _POSIX_C_SOURCE 200809L
#include "calibration/nccl_tests.h"
#include "sim/base/alloc.h"
#include "sim/base/fileio.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOK 32

static const char *const known_ops[] = { "all_reduce", "alltoall", "sendrecv", "all_gather",
                                         "reduce_scatter", "broadcast", "reduce", NULL };

double nccl_busbw_factor(const char *op, int n) {
    if (n < 1) return 0;
    if (strcmp(op, "all_reduce") == 0) return 2.0 * (n - 1) / n;
    if (strcmp(op, "alltoall") == 0 || strcmp(op, "all_gather") == 0 ||
        strcmp(op, "reduce_scatter") == 0)
        return (double)(n - 1) / n;
    if (strcmp(op, "sendrecv") == 0 || strcmp(op, "broadcast") == 0 || strcmp(op, "reduce") == 0)
        return 1.0;
    return 0;
}

void nt_log_free(nt_log *log) {
    free(log->rows);
    memset(log, 0, sizeof *log);
}

static int split(char *s, char **tok) {
    int n = 0;
    for (char *p = strtok(s, " \t\r"); p && n < MAX_TOK; p = strtok(NULL, " \t\r")) tok[n++] = p;
    return n;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* nccl-tests' "# nThread T nGpus G ..." line: s when it is one with T, G >= 1 and T x G ranks at most
 * NT_MAX_RANKS (then *nthread, *ngpus set), the bad number when a count is out of range (strtol, not
 * sscanf's %d, whose overflow is undefined), NULL when it is another line. */
#define NT_MAX_RANKS (1 << 20)
static const char *layout_line(const char *s, int *nthread, int *ngpus) {
    const char *p = s + strspn(s, "# \t");
    if (p == s || strncmp(p, "nThread", 7) != 0) return NULL;
    char *end;
    errno = 0;
    long t = strtol(p + 7, &end, 10);
    if (end == p + 7) return NULL;
    const char *bad_t = p + 7 + strspn(p + 7, " \t");
    if (errno || t < 1 || t > NT_MAX_RANKS) return bad_t;
    p = end + strspn(end, " \t");
    if (strncmp(p, "nGpus", 5) != 0) return NULL;
    errno = 0;
    long g = strtol(p + 5, &end, 10);
    if (end == p + 5) return NULL;
    if (errno || g < 1 || g > NT_MAX_RANKS / t) return p + 5 + strspn(p + 5, " \t");
    *nthread = (int)t;
    *ngpus = (int)g;
    return s;
}

/* Op from "alltoall_perf" / a path like ".../h800-alltoall_perf.log". Longest match wins, so that
 * "reduce_scatter" is not read as "reduce". */
static const char *op_from_text(const char *s) {
    const char *best = NULL;
    for (const char *const *o = known_ops; *o; o++)
        if (strstr(s, *o) && (!best || strlen(*o) > strlen(best))) best = *o;
    /* "all_reduce" contains "reduce": prefer the longer names already handled above */
    return best;
}

typedef struct {
    const char *file;
    moe_error *err;
} ctx;

static int fail(ctx *c, int line, const char *got, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(ctx *c, int line, const char *got, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char where[32];
    snprintf(where, sizeof where, "line %d", line);
    return moe_error_input(c->err, c->file, where, got, "%s", what);
}

/* Column layout learned from the header line. */
typedef struct {
    int ntok;
    int size, count, type, redop, root;       /* -1 when absent */
    int time[2], algbw[2], busbw[2], wrong[2];
} layout;

static int learn_layout(char **tok, int n, layout *L) {
    memset(L, -1, sizeof *L);
    L->ntok = n;
    int seen_time = 0, seen_alg = 0, seen_bus = 0, seen_wrong = 0;
    for (int i = 0; i < n; i++) {
        const char *t = tok[i];
        if (!strcmp(t, "size")) L->size = i;
        else if (!strcmp(t, "count")) L->count = i;
        else if (!strcmp(t, "type")) L->type = i;
        else if (!strcmp(t, "redop")) L->redop = i;
        else if (!strcmp(t, "root")) L->root = i;
        else if (!strcmp(t, "time") && seen_time < 2) L->time[seen_time++] = i;
        else if (!strcmp(t, "algbw") && seen_alg < 2) L->algbw[seen_alg++] = i;
        else if (!strcmp(t, "busbw") && seen_bus < 2) L->busbw[seen_bus++] = i;
        else if (!strcmp(t, "#wrong") && seen_wrong < 2) L->wrong[seen_wrong++] = i;
    }
    return (L->size >= 0 && L->count >= 0 && L->type >= 0 && seen_time >= 1 && seen_alg == seen_time &&
            seen_bus == seen_time) ? 0 : -1;
}

static int add_host(nt_log *log, const char *host) {
    char key[130];
    snprintf(key, sizeof key, ",%s,", host);
    char list[260];
    snprintf(list, sizeof list, ",%s,", log->hosts);
    if (strstr(list, key)) return 0;
    size_t len = strlen(log->hosts);
    snprintf(log->hosts + len, sizeof log->hosts - len, "%s%s", len ? "," : "", host);
    return 1;
}

/* "#  Rank  3 Group  0 Pid 1234 on host01 device  3 [0x5d] NVIDIA H800" */
static int parse_rank_line(const char *s, nt_log *log) {
    int rank, group, pid, dev;
    char host[128], bus[64];
    int off = 0;
    if (sscanf(s, "# Rank %d Group %d Pid %d on %127s device %d [%63[^]]] %n", &rank, &group, &pid,
               host, &dev, bus, &off) < 6 || off == 0)
        return -1;
    log->nranks++;
    log->nnodes += add_host(log, host);
    if (rank == 0) {
        snprintf(log->device, sizeof log->device, "%s", s + off);
        size_t l = strlen(log->device);
        while (l && isspace((unsigned char)log->device[l - 1])) log->device[--l] = '\0';
    }
    return 0;
}

static int check_row(ctx *c, const nt_log *log, const nt_row *r, int placement, int nranks) {
    double t = r->time_us[placement], alg = r->algbw_GBps[placement], bus = r->busbw_GBps[placement];
    const char *pl = placement ? "in-place" : "out-of-place";
    char got[64];
    if (t <= 0) {
        snprintf(got, sizeof got, "%g", t);
        return fail(c, r->line, got, "a positive %s time (us)", pl);
    }
    /* algbw = size / time (GB/s = bytes / us / 1e3), to printing precision of time and algbw */
    double want_alg = r->size_bytes / t / 1e3;
    double tol = 0.006 + want_alg * (0.51 / t + 2e-3);
    if (fabs(alg - want_alg) > tol) {
        snprintf(got, sizeof got, "algbw %.2f", alg);
        return fail(c, r->line, got, "%s algbw = size/time = %.2f GB/s (nccl-tests semantics)", pl,
                    want_alg);
    }
    double f = nccl_busbw_factor(log->op, nranks);
    double want_bus = alg * f;
    if (fabs(bus - want_bus) > 0.006 + 2e-3 * want_bus + 0.005 * f) {
        snprintf(got, sizeof got, "busbw %.2f", bus);
        return fail(c, r->line, got, "%s busbw = algbw x %.4f (%s on %d ranks) = %.2f GB/s", pl, f,
                    log->op, nranks, want_bus);
    }
    return 0;
}

int nccl_tests_parse(const char *file_label, const char *text, nt_log *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    ctx c = { file_label ? file_label : "(log)", err };
    snprintf(out->file, sizeof out->file, "%s", c.file);
    snprintf(out->nccl_version, sizeof out->nccl_version, "n/a");
    int nthread = 1, ngpus = 1, have_layout = 0, cap = 0, rc = 0, lineno = 0;
    layout L;
    const char *op = NULL;
    char *copy = moe_xstrdup(text);
    char *save = NULL;
    /* strtok_r on '\n' would merge empty lines and lose the count: walk lines by hand. */
    for (char *line = copy; line && !rc; ) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        lineno++;
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#') {
            const char *v;
            if ((v = strstr(s, "Collective test starting:"))) {
                op = op_from_text(v);
                if (!op) rc = fail(&c, lineno, v + 25, "a known nccl-tests binary (all_reduce_perf, "
                                   "alltoall_perf, sendrecv_perf, all_gather_perf, ...)");
            } else if ((v = strstr(s, "nccl-library="))) {
                long ver = strtol(v + 13, NULL, 10); /* NCCL's code, 21805 = 2.18.5 (atoi's overflow is undefined) */
                if (ver > 0 && ver < 1000000) snprintf(out->nccl_version, sizeof out->nccl_version, "%ld.%ld.%ld",
                                      ver / 10000, (ver / 100) % 100, ver % 100);
            } else if ((v = layout_line(s, &nthread, &ngpus)) != NULL) {
                if (v != s) {
                    char tok[40];
                    snprintf(tok, sizeof tok, "%.*s", (int)strcspn(v, " \t\r"), v);
                    rc = fail(&c, lineno, tok, "\"# nThread T nGpus G\" with T and G in 1..%d and T x G at most %d",
                              NT_MAX_RANKS, NT_MAX_RANKS);
                }
            } else if (strncmp(s, "#  Rank", 7) == 0 || strncmp(s, "# Rank", 6) == 0) {
                if (parse_rank_line(s, out))
                    rc = fail(&c, lineno, NULL, "a rank line \"#  Rank N Group G Pid P on HOST "
                              "device D [BUSID] NAME\"");
            } else if ((v = strstr(s, "Avg bus bandwidth"))) {
                const char *colon = strchr(v, ':');
                double x;
                char num[64] = "";
                if (colon) sscanf(colon + 1, "%63s", num);
                if (!colon || parse_double(num, &x)) rc = fail(&c, lineno, num,
                                                           "\"# Avg bus bandwidth : <GB/s>\"");
                else out->avg_busbw_GBps = x;
            } else if (strstr(s, "size") && strstr(s, "count") && strstr(s, "time")) {
                char buf[1024];
                snprintf(buf, sizeof buf, "%s", s + 1);
                char *tok[MAX_TOK];
                int n = split(buf, tok);
                if (learn_layout(tok, n, &L))
                    rc = fail(&c, lineno, NULL, "the nccl-tests column header: size count type "
                              "[redop root] time algbw busbw #wrong [time algbw busbw #wrong]");
                have_layout = !rc;
            }
        } else if (isdigit((unsigned char)*s)) {
            char buf[1024];
            snprintf(buf, sizeof buf, "%s", s);
            char *tok[MAX_TOK];
            int n = split(buf, tok);
            if (!have_layout) {
                rc = fail(&c, lineno, NULL, "the column header line (\"#  size  count  type ... "
                          "time  algbw  busbw\") before the first data row");
                break;
            }
            if (n != L.ntok) {
                char got[32];
                snprintf(got, sizeof got, "%d columns", n);
                rc = fail(&c, lineno, got, "%d columns as in the header (size count type ... "
                          "busbw #wrong)", L.ntok);
                break;
            }
            nt_row r;
            memset(&r, 0, sizeof r);
            r.line = lineno;
            r.root = -1;
            double root = -1;
            int bad_col = -1;
            if (parse_double(tok[L.size], &r.size_bytes) || r.size_bytes <= 0) bad_col = L.size;
            else if (parse_double(tok[L.count], &r.count) || r.count < 0) bad_col = L.count;
            /* root: a rank or -1 (an integer: it becomes an int) */
            else if (L.root >= 0 && (parse_double(tok[L.root], &root) || root != floor(root) || root < -1 ||
                                     root > 1 << 30))
                bad_col = L.root;
            r.root = bad_col < 0 ? (int)root : -1;
            snprintf(r.type, sizeof r.type, "%s", tok[L.type]);
            snprintf(r.redop, sizeof r.redop, "%s", L.redop >= 0 ? tok[L.redop] : "none");
            r.has_inplace = L.time[1] >= 0;
            for (int p = 0; p <= r.has_inplace && bad_col < 0; p++) {
                if (parse_double(tok[L.time[p]], &r.time_us[p])) bad_col = L.time[p];
                else if (parse_double(tok[L.algbw[p]], &r.algbw_GBps[p])) bad_col = L.algbw[p];
                else if (parse_double(tok[L.busbw[p]], &r.busbw_GBps[p])) bad_col = L.busbw[p];
                else if (L.wrong[p] >= 0 && strcmp(tok[L.wrong[p]], "N/A") != 0 &&
                         strcmp(tok[L.wrong[p]], "0") != 0) {
                    rc = fail(&c, lineno, tok[L.wrong[p]], "#wrong = 0 or N/A (the test reported "
                              "wrong results; its timings are not usable)");
                    break;
                }
            }
            if (rc) break;
            if (bad_col >= 0) {
                rc = fail(&c, lineno, tok[bad_col], "a number in column %d of the data row",
                          bad_col + 1);
                break;
            }
            if (out->n_rows == cap) {
                cap = cap ? 2 * cap : 32;
                out->rows = moe_xrealloc(out->rows, (size_t)cap, sizeof *out->rows);
            }
            out->rows[out->n_rows++] = r;
        }
        /* anything else (NCCL INFO, launcher warnings, blank lines) is not part of the table */
        line = nl ? nl + 1 : NULL;
    }
    (void)save;
    free(copy);
    if (!rc && !op) op = op_from_text(c.file);
    if (!rc && !op)
        rc = fail(&c, 1, NULL, "a \"# Collective test starting: <name>_perf\" line or a file name "
                  "naming the test (all_reduce, alltoall, sendrecv, all_gather, reduce_scatter)");
    if (!rc) snprintf(out->op, sizeof out->op, "%s", op);
    if (!rc && out->nranks == 0) out->nranks = nthread * ngpus;
    if (!rc && out->nnodes == 0) out->nnodes = 1;
    if (!rc && out->n_rows == 0)
        rc = fail(&c, lineno, NULL, "at least one data row (size count type ... time algbw busbw)");
    if (!rc && out->nranks < 2)
        rc = fail(&c, 1, NULL, "a collective on at least 2 ranks (\"#  Rank\" lines or nGpus)");
    for (int i = 0; !rc && i < out->n_rows; i++)
        for (int p = 0; !rc && p <= out->rows[i].has_inplace; p++)
            rc = check_row(&c, out, &out->rows[i], p, out->nranks);
    if (rc) nt_log_free(out);
    return rc;
}

int nccl_tests_read(const char *path, nt_log *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    char *text = read_file_text(path, NULL, err);
    if (!text) return err->code;
    int rc = nccl_tests_parse(path, text, out, err);
    free(text);
    return rc;
}

int nccl_tests_append(const nt_log *log, const char *link_override, trace *t, moe_error *err) {
    (void)err; /* kept for callers: appending cannot fail (sim/base/alloc.h) */
    if (t->n == 0) {
        trace_provenance_defaults(&t->prov, TRACE_KIND_NCCL_TESTS);
        snprintf(t->prov.device, sizeof t->prov.device, "%s", log->device[0] ? log->device : "n/a");
        snprintf(t->prov.host, sizeof t->prov.host, "%s", log->hosts[0] ? log->hosts : "n/a");
        snprintf(t->prov.nccl, sizeof t->prov.nccl, "%s", log->nccl_version);
        snprintf(t->prov.source, sizeof t->prov.source, "nccl-tests");
    } else if (strcmp(t->prov.device, log->device) != 0 && strcmp(t->prov.device, "mixed") != 0) {
        snprintf(t->prov.device, sizeof t->prov.device, "mixed");
    }
    size_t sl = strlen(t->prov.source);
    const char *base = strrchr(log->file, '/');
    snprintf(t->prov.source + sl, sizeof t->prov.source - sl, " %s", base ? base + 1 : log->file);
    const char *link = link_override && *link_override ? link_override
                       : log->nnodes > 1 ? "rdma" : "nvlink";
    for (int i = 0; i < log->n_rows; i++) {
        const nt_row *r = &log->rows[i];
        for (int p = 0; p <= r->has_inplace; p++) {
            trace_point q;
            memset(&q, 0, sizeof q);
            snprintf(q.kernel, sizeof q.kernel, "%s", log->op);
            trace_point_set_dim(&q, "size", r->size_bytes);
            trace_point_set_dim(&q, "count", r->count);
            trace_point_set_dim(&q, "in_place", p);
            trace_point_set_dim(&q, "nodes", log->nnodes);
            snprintf(q.dtype, sizeof q.dtype, "%s", r->type);
            q.time_us = r->time_us[p];
            q.bytes = r->size_bytes;
            q.ranks = log->nranks;
            snprintf(q.link, sizeof q.link, "%s", link);
            q.busbw_GBps = r->busbw_GBps[p];
            trace_add(t, &q);
        }
    }
    return 0;
}
