/* step_accounting.c — the one step accounting (rules in step_accounting.h). */
#include "sim/exec/step_accounting.h"

#include <string.h>

#include <cjson/cJSON.h>

void step_split_begin(step_split_acc *a) { memset(a, 0, sizeof *a); }

void step_split_add(step_split_acc *a, const program_op *ops, const op_time *t, size_t stride, int i, double busy_s,
                    double stretch_s) {
    const program_op *o = &ops[i];
    step_split *out = &a->s;
    double bind = -1;
    int bind_kind = -1;
    for (int k = 0; k < o->n_deps; k++) {
        int d = o->deps[k];
        if (t[d * stride].end_s > bind) {
            bind = t[d * stride].end_s;
            bind_kind = ops[d].kind;
        }
    }
    double start = t[i * stride].start_s, free_t = a->free_t;
    if (start > free_t) {
        /* idle until the binding dependency ended, then (live only) until the op started */
        double ready = bind > free_t ? (bind < start ? bind : start) : free_t;
        double wait = ready - free_t, host = start - ready;
        if (wait > 0) {
            if (bind_kind == OP_RECV) out->bubble_s += wait;
            else if (bind_kind != OP_COMPUTE) out->exposed_comm_s += wait;
            else out->overhead_s += wait;
        }
        if (host > 0) out->overhead_s += host;
    }
    if (stretch_s > 0) out->overhead_s += stretch_s;
    if (o->kernel == K_OPTIMIZER) out->optimizer_s += busy_s;
    else out->compute_s += busy_s;
    a->free_t = t[i * stride].end_s;
    a->last_compute_end = t[i * stride].end_s;
}

void step_split_finish(const step_split_acc *a, double end_s, double step_time_s, step_split *out) {
    *out = a->s;
    if (step_time_s >= 0) {
        if (end_s > a->last_compute_end) out->exposed_comm_s += end_s - a->last_compute_end;
        out->bubble_s += step_time_s - end_s;
    }
    out->end_s = end_s;
}

void step_split_rank(const program_op *ops, int n_ops, const op_time *t, const double *busy_s,
                     const double *stretch_s, double step_time_s, step_split *out) {
    double end = 0;
    for (int i = 0; i < n_ops; i++)
        if (ops[i].kind != OP_RECV && t[i].end_s > end) end = t[i].end_s;
    step_split_acc a;
    step_split_begin(&a);
    for (int i = 0; i < n_ops; i++)
        if (ops[i].kind == OP_COMPUTE && t[i].start_s >= 0 && t[i].end_s >= 0)
            step_split_add(&a, ops, t, 1, i, busy_s ? busy_s[i] : t[i].end_s - t[i].start_s,
                           stretch_s ? stretch_s[i] : 0);
    step_split_finish(&a, end, step_time_s, out);
}

void step_split_program_rank(const program *p, int rank, const op_time *t, const double *busy_s,
                             double step_time_s, step_split *out) {
    int d, s, e, tp;
    program_coords(p, rank, &d, &s, &e, &tp);
    step_split_rank(p->stage_ops[s], p->stage_n_ops[s], t, busy_s, NULL, step_time_s, out);
}

void step_split_mean(const step_split *ranks, int n, step_split *mean) {
    memset(mean, 0, sizeof *mean);
    if (n <= 0) return;
    for (int r = 0; r < n; r++) {
        mean->compute_s += ranks[r].compute_s;
        mean->optimizer_s += ranks[r].optimizer_s;
        mean->exposed_comm_s += ranks[r].exposed_comm_s;
        mean->bubble_s += ranks[r].bubble_s;
        mean->overhead_s += ranks[r].overhead_s;
        mean->end_s += ranks[r].end_s;
    }
    mean->compute_s /= n;
    mean->optimizer_s /= n;
    mean->exposed_comm_s /= n;
    mean->bubble_s /= n;
    mean->overhead_s /= n;
    mean->end_s /= n;
}

int step_split_slowest_rank(const step_split *ranks, int n) {
    int slowest = 0;
    double best = -1;
    for (int r = 0; r < n; r++) {
        double busy = ranks[r].compute_s + ranks[r].optimizer_s;
        if (busy > best * (1 + 1e-12)) {
            best = busy;
            slowest = r;
        }
    }
    return slowest;
}

cJSON *step_split_stages_json(const program *p, const step_split *ranks) {
    cJSON *arr = cJSON_CreateArray();
    for (int s = 0; s < p->pp; s++) {
        double sum[3] = {0}, mx[3] = {0};
        int n = 0;
        for (int d = 0; d < p->dp; d++)
            for (int e = 0; e < p->ep; e++)
                for (int t = 0; t < p->tp; t++) {
                    const step_split *x = &ranks[program_rank(p, d, s, e, t)];
                    double v[3] = {x->compute_s + x->optimizer_s, x->exposed_comm_s, x->bubble_s};
                    for (int j = 0; j < 3; j++) {
                        sum[j] += v[j];
                        if (v[j] > mx[j]) mx[j] = v[j];
                    }
                    n++;
                }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "stage", s);
        cJSON_AddNumberToObject(o, "compute_s_mean", sum[0] / n);
        cJSON_AddNumberToObject(o, "compute_s_max", mx[0]);
        cJSON_AddNumberToObject(o, "exposed_comm_s_mean", sum[1] / n);
        cJSON_AddNumberToObject(o, "exposed_comm_s_max", mx[1]);
        cJSON_AddNumberToObject(o, "bubble_s_mean", sum[2] / n);
        cJSON_AddNumberToObject(o, "bubble_s_max", mx[2]);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}
