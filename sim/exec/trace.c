/* trace.c — the step trace.json (format and contract in trace.h). */
#include "sim/exec/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/base/fileio.h"


const char *const STEP_TRACE_EVENT_NAMES[] = {
    "embed_fwd", "embed_bwd", "attn_fwd", "attn_bwd_input", "attn_bwd_weight", "dense_ffn_fwd",
    "dense_ffn_bwd_input", "dense_ffn_bwd_weight", "router_fwd", "router_bwd", "permute_fwd",
    "permute_bwd", "expert_fwd", "expert_bwd_input", "expert_bwd_weight", "unpermute_fwd",
    "unpermute_bwd", "shared_expert_fwd", "shared_expert_bwd_input", "shared_expert_bwd_weight",
    "head_loss_fwd", "head_loss_bwd", "mtp_proj_fwd", "mtp_proj_bwd_input", "mtp_proj_bwd_weight",
    "attn_core_fwd", "attn_core_bwd", "optimizer",
    "a2a_dispatch", "a2a_combine", "send", "recv", "reduce_scatter", "all_gather", "all_reduce",
    NULL};

const char *step_trace_event_name(const program_op *o) {
    return o->kind == OP_COMPUTE ? kernel_name(o->kernel) : op_kind_name(o->kind);
}

static void add_unique(int *out, int *n, int max, int r) {
    if (*n >= max || r < 0) return;
    for (int i = 0; i < *n; i++) if (out[i] == r) return;
    out[(*n)++] = r;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int step_trace_default_ranks(const program *p, const step_exec_result *r, int *out, int max) {
    int n = 0, last = p->pp - 1;
    const step_hang *h = &r->hang;
    if (h->found) {   /* the hang first: the culprit, someone waiting for it, another missing rank */
        add_unique(out, &n, max, h->culprit);
        if (h->n_waiting > 0) add_unique(out, &n, max, h->waiting[0]);
        for (int i = 0; i < h->n_missing; i++)
            if (h->missing[i] != h->culprit) { add_unique(out, &n, max, h->missing[i]); break; }
    }
    add_unique(out, &n, max, program_rank(p, 0, 0, 0, 0));
    add_unique(out, &n, max, program_rank(p, 0, 0, p->ep - 1, p->tp - 1));
    add_unique(out, &n, max, program_rank(p, 0, last, 0, 0));
    add_unique(out, &n, max, program_rank(p, 0, last, p->ep - 1, p->tp - 1));
    add_unique(out, &n, max, r->slowest_rank);
    const scenario *s = p->scn;
    if (s->routing.distribution == ROUTE_HOT && s->model.experts > 0) {
        int holder = s->routing.hot_expert / (s->model.experts / p->ep);
        add_unique(out, &n, max, program_rank(p, 0, 0, holder, 0));
    }
    qsort(out, (size_t)n, sizeof(int), cmp_int);
    return n;
}

static cJSON *meta_event(const char *what, int pid, int tid, const char *name) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", what); cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", pid); cJSON_AddNumberToObject(m, "tid", tid);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "name", name);
    return m;
}

static cJSON *instant(const char *name, int pid, int tid, double ts_s, const char *state) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", name);
    cJSON_AddStringToObject(x, "cat", "hang");
    cJSON_AddStringToObject(x, "ph", "i");
    cJSON_AddStringToObject(x, "s", "t");
    cJSON_AddNumberToObject(x, "ts", ts_s * 1e6);
    cJSON_AddNumberToObject(x, "pid", pid);
    cJSON_AddNumberToObject(x, "tid", tid);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "args"), "state", state);
    return x;
}

static void add_op_args(cJSON *a, const program_op *o) {
    cJSON_AddNumberToObject(a, "mb", o->mb);
    cJSON_AddNumberToObject(a, "layer", o->layer);
    cJSON_AddNumberToObject(a, "chunk", o->chunk);
    if (o->kind == OP_COMPUTE) {
        cJSON_AddNumberToObject(a, "flops", o->flops);
        cJSON_AddNumberToObject(a, "tokens", o->tokens);
    } else {
        cJSON_AddNumberToObject(a, "bytes", o->bytes);
        if (o->kind == OP_SEND || o->kind == OP_RECV) cJSON_AddNumberToObject(a, "peer", o->peer);
        else cJSON_AddNumberToObject(a, "group", o->group);
    }
}

/* The events of one traced rank. */
static void rank_events(cJSON *ev, const program *p, const step_exec_result *r, int k) {
    int rank = r->trace_ranks[k], gpn = p->scn->cluster.gpus_per_node;
    int d, s, e, t, gpu = program_gpu_of_rank(p, rank);
    program_coords(p, rank, &d, &s, &e, &t);
    char name[160];
    snprintf(name, sizeof name, "rank %d (stage %d, ep %d, replica %d) GPU %d node %d", rank, s, e, d, gpu, gpu / gpn);
    cJSON_AddItemToArray(ev, meta_event("process_name", rank, 0, name));
    for (int st = 0; st < STREAM_N; st++) cJSON_AddItemToArray(ev, meta_event("thread_name", rank, st, stream_name(st)));
    int n = p->stage_n_ops[s];
    for (int i = 0; i < n; i++) {
        const op_time *ot = &r->trace_times[k][i];
        if (ot->start_s < 0) continue;
        program_op o;
        program_rank_op(p, rank, i, &o);
        if (ot->end_s < 0) {   /* blocked inside this collective when the step hung */
            cJSON *x = instant(step_trace_event_name(&o), rank, o.stream, ot->start_s, "waiting");
            cJSON *a = cJSON_GetObjectItem(x, "args");
            cJSON_AddNumberToObject(a, "group", o.group);
            cJSON_AddNumberToObject(a, "layer", o.layer);
            cJSON_AddNumberToObject(a, "mb", o.mb);
            cJSON_AddItemToArray(ev, x);
            continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", step_trace_event_name(&o));
        cJSON_AddStringToObject(x, "cat", phase_name(o.phase));
        cJSON_AddStringToObject(x, "ph", "X");
        cJSON_AddNumberToObject(x, "ts", ot->start_s * 1e6);
        cJSON_AddNumberToObject(x, "dur", (ot->end_s - ot->start_s) * 1e6);
        cJSON_AddNumberToObject(x, "pid", rank);
        cJSON_AddNumberToObject(x, "tid", o.kind == OP_RECV ? STREAM_P2P : o.stream);
        add_op_args(cJSON_AddObjectToObject(x, "args"), &o);
        cJSON_AddItemToArray(ev, x);
    }
    if (r->hang.found && rank == r->hang.culprit) {
        cJSON *x = instant("stalled", rank, STREAM_COMPUTE, r->split ? r->split[rank].end_s : 0, "never arrived");
        cJSON *a = cJSON_GetObjectItem(x, "args");
        cJSON_AddStringToObject(a, "at", op_kind_label(r->hang.op));
        cJSON_AddNumberToObject(a, "group", r->hang.group);
        cJSON_AddNumberToObject(a, "layer", r->hang.layer);
        cJSON_AddNumberToObject(a, "mb", r->hang.mb);
        cJSON_AddItemToArray(ev, x);
    }
}

static cJSON *int_array(const int *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *hang_json(const program *p, const step_hang *h) {
    if (!h->found) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", h->group >= 0 ? op_kind_label(h->op) : "(none)");
    cJSON_AddStringToObject(o, "group_kind", h->group >= 0 ? group_kind_name(h->group_kind) : "(none)");
    cJSON_AddNumberToObject(o, "group", h->group);
    cJSON_AddNumberToObject(o, "layer", h->layer);
    cJSON_AddNumberToObject(o, "micro_batch", h->mb);
    cJSON_AddItemToObject(o, "waiting", int_array(h->waiting, h->n_waiting));
    cJSON_AddItemToObject(o, "missing", int_array(h->missing, h->n_missing));
    cJSON *ml = cJSON_AddArrayToObject(o, "missing_last_op");
    for (int i = 0; i < h->n_missing; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", h->missing[i]);
        if (h->missing_last_op[i] < 0) {
            cJSON_AddStringToObject(e, "op", "(not started)");
            cJSON_AddNumberToObject(e, "layer", OP_NO_LAYER);
            cJSON_AddNumberToObject(e, "micro_batch", -1);
        } else {
            program_op op;
            program_rank_op(p, h->missing[i], h->missing_last_op[i], &op);
            char name[64];
            if (op.kind == OP_COMPUTE) snprintf(name, sizeof name, "COMPUTE %s", kernel_name(op.kernel));
            else snprintf(name, sizeof name, "%s", op_kind_label(op.kind));
            cJSON_AddStringToObject(e, "op", name);
            cJSON_AddNumberToObject(e, "layer", op.layer);
            cJSON_AddNumberToObject(e, "micro_batch", op.mb);
        }
        cJSON_AddItemToArray(ml, e);
    }
    cJSON_AddNumberToObject(o, "blocked_elsewhere", h->blocked_elsewhere);
    return o;
}

cJSON *step_trace_build(const program *p, const step_exec_result *r, const char *source) {
    cJSON *doc = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(doc, "traceEvents");
    for (int k = 0; k < r->n_trace_ranks; k++) {
        int rank = r->trace_ranks[k];
        if (rank < 0 || rank >= p->n_ranks || !r->trace_times[k]) continue;
        rank_events(ev, p, r, k);
    }
    cJSON_AddStringToObject(doc, "displayTimeUnit", "ms");
    const scenario *s = p->scn;
    int N = p->n_ranks;
    cJSON *od = cJSON_AddObjectToObject(doc, "otherData");
    cJSON_AddStringToObject(od, "format", STEP_TRACE_FORMAT);
    cJSON_AddStringToObject(od, "source", source);
    cJSON_AddStringToObject(od, "generator", "moesim step");
    cJSON_AddStringToObject(od, "scenario", s->name);
    cJSON_AddNumberToObject(od, "ranks", N);
    cJSON_AddNumberToObject(od, "gpus_per_node", s->cluster.gpus_per_node);
    cJSON_AddNumberToObject(od, "tp", p->tp);
    cJSON_AddNumberToObject(od, "pp", p->pp);
    cJSON_AddNumberToObject(od, "ep", p->ep);
    cJSON_AddNumberToObject(od, "dp", p->dp);
    if (!r->hang.found) cJSON_AddNumberToObject(od, "step_time_s", r->step_time_s);
    cJSON *gpu = cJSON_AddArrayToObject(od, "rank_gpu");
    cJSON *stp = cJSON_AddArrayToObject(od, "rank_step_s");
    cJSON *cmp = cJSON_AddArrayToObject(od, "rank_compute_s");
    for (int i = 0; i < N; i++) {
        cJSON_AddItemToArray(gpu, cJSON_CreateNumber(program_gpu_of_rank(p, i)));
        cJSON_AddItemToArray(stp, cJSON_CreateNumber(r->split ? r->split[i].end_s : 0));
        cJSON_AddItemToArray(cmp, cJSON_CreateNumber(r->split ? r->split[i].compute_s + r->split[i].optimizer_s : 0));
    }
    if (r->a2a_s) {   /* time inside all-to-alls after the last arrival: what a slow link lengthens */
        cJSON *xc = cJSON_AddArrayToObject(od, "rank_a2a_s");
        for (int i = 0; i < N; i++) cJSON_AddItemToArray(xc, cJSON_CreateNumber(r->a2a_s[i]));
    }
    cJSON *et = cJSON_AddArrayToObject(od, "expert_tokens");
    for (int e = 0; e < s->model.experts && p->n_moe_layers > 0; e++)
        cJSON_AddItemToArray(et, cJSON_CreateNumber(p->step_expert_tokens[e]));
    cJSON *er = cJSON_AddArrayToObject(od, "expert_tokens_routed");
    for (int e = 0; e < s->model.experts && p->n_moe_layers > 0; e++)
        cJSON_AddItemToArray(er, cJSON_CreateNumber(p->step_expert_routed[e]));
    cJSON_AddItemToObject(od, "hang", hang_json(p, &r->hang));
    return doc;
}

int step_trace_write(const char *path, const program *p, const step_exec_result *r, moe_error *err) {
    cJSON *doc = step_trace_build(p, r, "simulated");
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    int rc = text ? write_file_atomic(path, text, err) : moe_error_set(err, EXIT_RUNTIME, "trace: out of memory");
    free(text);
    return rc;
}
