/* trace.c — Perfetto trace.json of a step (see trace.h). */
#include "sim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/results.h"

static void add_unique(int *out, int *n, int max, int r) {
    if (*n >= max || r < 0) return;
    for (int i = 0; i < *n; i++) if (out[i] == r) return;
    out[(*n)++] = r;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int trace_default_ranks(const program *p, int slowest_rank, int *out, int max) {
    int n = 0, last = p->pp - 1;
    add_unique(out, &n, max, program_rank(p, 0, 0, 0, 0));
    add_unique(out, &n, max, program_rank(p, 0, 0, p->ep - 1, p->tp - 1));
    add_unique(out, &n, max, program_rank(p, 0, last, 0, 0));
    add_unique(out, &n, max, program_rank(p, 0, last, p->ep - 1, p->tp - 1));
    add_unique(out, &n, max, slowest_rank);
    const scenario *s = p->scn;
    if (s->routing.distribution == ROUTE_HOT && s->model.experts > 0) {
        int holder = s->routing.hot_expert / (s->model.experts / p->ep);
        add_unique(out, &n, max, program_rank(p, 0, 0, holder, 0));
    }
    qsort(out, (size_t)n, sizeof(int), cmp_int);
    return n;
}

static const char *op_name(const program_op *o) {
    return o->kind == OP_COMPUTE ? kernel_name(o->kernel) : op_kind_name(o->kind);
}

cJSON *trace_build(const program *p, const step_exec_result *r) {
    cJSON *doc = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(doc, "traceEvents");
    int gpn = p->scn->cluster.gpus_per_node;
    for (int k = 0; k < r->n_trace_ranks; k++) {
        int rank = r->trace_ranks[k];
        if (rank < 0 || rank >= p->n_ranks || !r->trace_times[k]) continue;
        int d, s, e, t, gpu = program_gpu_of_rank(p, rank);
        program_coords(p, rank, &d, &s, &e, &t);
        char name[160];
        snprintf(name, sizeof name, "rank %d (stage %d, ep %d, replica %d) GPU %d node %d", rank, s, e, d, gpu, gpu / gpn);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", "process_name"); cJSON_AddStringToObject(m, "ph", "M");
        cJSON_AddNumberToObject(m, "pid", rank); cJSON_AddNumberToObject(m, "tid", 0);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "name", name);
        cJSON_AddItemToArray(ev, m);
        for (int st = 0; st < STREAM_N; st++) {
            cJSON *tm = cJSON_CreateObject();
            cJSON_AddStringToObject(tm, "name", "thread_name"); cJSON_AddStringToObject(tm, "ph", "M");
            cJSON_AddNumberToObject(tm, "pid", rank); cJSON_AddNumberToObject(tm, "tid", st);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(tm, "args"), "name", stream_name(st));
            cJSON_AddItemToArray(ev, tm);
        }
        int n = p->stage_n_ops[s];
        for (int i = 0; i < n; i++) {
            const op_time *ot = &r->trace_times[k][i];
            if (ot->start_s < 0) continue;
            program_op o;
            program_rank_op(p, rank, i, &o);
            if (o.kind == OP_RECV) continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", op_name(&o));
            cJSON_AddStringToObject(x, "cat", phase_name(o.phase));
            cJSON_AddStringToObject(x, "ph", "X");
            cJSON_AddNumberToObject(x, "ts", ot->start_s * 1e6);
            cJSON_AddNumberToObject(x, "dur", (ot->end_s - ot->start_s) * 1e6);
            cJSON_AddNumberToObject(x, "pid", rank);
            cJSON_AddNumberToObject(x, "tid", o.stream);
            cJSON *a = cJSON_AddObjectToObject(x, "args");
            cJSON_AddNumberToObject(a, "mb", o.mb);
            cJSON_AddNumberToObject(a, "layer", o.layer);
            cJSON_AddNumberToObject(a, "chunk", o.chunk);
            if (o.kind == OP_COMPUTE) {
                cJSON_AddNumberToObject(a, "flops", o.flops);
                cJSON_AddNumberToObject(a, "tokens", o.tokens);
            } else {
                cJSON_AddNumberToObject(a, "bytes", o.bytes);
                if (o.kind == OP_SEND) cJSON_AddNumberToObject(a, "peer", o.peer);
                else cJSON_AddNumberToObject(a, "group", o.group);
            }
            cJSON_AddItemToArray(ev, x);
        }
    }
    cJSON_AddStringToObject(doc, "displayTimeUnit", "ms");
    cJSON *od = cJSON_AddObjectToObject(doc, "otherData");
    cJSON_AddStringToObject(od, "generator", "moesim step");
    cJSON_AddStringToObject(od, "scenario", p->scn->name);
    cJSON_AddNumberToObject(od, "step_time_s", r->step_time_s);
    return doc;
}

int trace_write(const char *path, const program *p, const step_exec_result *r, moe_error *err) {
    cJSON *doc = trace_build(p, r);
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    int rc = text ? write_file_atomic(path, text, err) : moe_error_set(err, EXIT_RUNTIME, "trace: out of memory");
    free(text);
    return rc;
}
