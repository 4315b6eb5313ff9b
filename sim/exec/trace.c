/* trace.c — the step trace.json (format and contract in trace.h). */
#include "sim/exec/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"


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

/* The events of the trace before they are sorted by time (metadata first, then by ts; ties keep
 * the order they were made in). */
typedef struct {
    cJSON *ev;
    double ts;     /* -inf for metadata */
    long seq;
} timed_event;

typedef struct {
    timed_event *v;
    long n, cap;
} event_list;

static void push(event_list *l, cJSON *ev, double ts_us) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = moe_xrealloc(l->v, (size_t)l->cap, sizeof *l->v);
    }
    l->v[l->n] = (timed_event){ev, ts_us, l->n};
    l->n++;
}

static int by_time(const void *a, const void *b) {
    const timed_event *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

int step_trace_slowest_ranks(const step_exec_result *r, int n_ranks, int k, int *out) {
    int n = 0;
    if (k > n_ranks) k = n_ranks;
    for (int rank = 0; rank < n_ranks && k > 0; rank++) {
        double b = r->split[rank].compute_s + r->split[rank].optimizer_s;
        int pos = n;
        while (pos > 0 && b > r->split[out[pos - 1]].compute_s + r->split[out[pos - 1]].optimizer_s) pos--;
        if (pos >= k) continue;
        if (n < k) n++;
        memmove(out + pos + 1, out + pos, (size_t)(n - 1 - pos) * sizeof(int));
        out[pos] = rank;
    }
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

/* A counter sample {"ph": "C"} on rank `pid`'s process. */
static cJSON *counter(const char *name, const char *key, int pid, double ts_s, double value) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", name);
    cJSON_AddStringToObject(x, "ph", "C");
    cJSON_AddNumberToObject(x, "ts", ts_s * 1e6);
    cJSON_AddNumberToObject(x, "pid", pid);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(x, "args"), key, value);
    return x;
}

/* One end of a send -> receive arrow (flow events "s" at the send, "f" at the arrival). */
static cJSON *flow(const char *ph, int sender, int tag, int pid, double ts_us) {
    char id[48];
    snprintf(id, sizeof id, "p2p-%d-%d", sender, tag);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", "send -> recv");
    cJSON_AddStringToObject(x, "cat", "p2p");
    cJSON_AddStringToObject(x, "ph", ph);
    cJSON_AddStringToObject(x, "id", id);
    if (ph[0] == 'f') cJSON_AddStringToObject(x, "bp", "e");
    cJSON_AddNumberToObject(x, "ts", ts_us);
    cJSON_AddNumberToObject(x, "pid", pid);
    cJSON_AddNumberToObject(x, "tid", STREAM_P2P);
    return x;
}

/* A step of a counter: at time t the value changes by delta (sorted and summed later). */
typedef struct { double t, delta; } step_change;

static int by_t(const void *a, const void *b) {
    const step_change *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The counter track `name` from its changes: one sample per distinct time, value * scale. */
static void counter_track(event_list *l, const char *name, const char *key, int pid, step_change *c, int n,
                          double base, double scale) {
    qsort(c, (size_t)n, sizeof *c, by_t);
    double v = base;
    push(l, counter(name, key, pid, 0, v * scale), 0);
    for (int i = 0; i < n;) {
        double t = c[i].t;
        while (i < n && c[i].t == t) v += c[i++].delta;
        push(l, counter(name, key, pid, t, v * scale), t * 1e6);
    }
}

/* Memory in use on a rank over the step: the plan's ledgers of its pipeline rank (sim/plan/memory.h),
 * weights + gradients + optimizer all along, and the activations scaled by the micro-batches in flight
 * (forward begun, backward not finished) against the most the rank holds at once. */
static void memory_counter(event_list *l, const program *p, int rank, int stage, const op_time *t) {
    const scenario *s = p->scn;
    model_counts mc;
    act_profile ap;
    mem_ledgers led;
    model_count(&s->model, &mc);
    memory_activation_profile(&s->model, &s->precision, &ap);
    memory_rank_ledgers(s, &mc, &ap, p->micro_batches, stage, &led);
    int n = p->stage_n_ops[stage], keys = p->micro_batches * (p->n_chunks > 0 ? p->n_chunks : 1);
    double *first_f = moe_xmalloc((size_t)keys * sizeof *first_f), *last_b = moe_xmalloc((size_t)keys * sizeof *last_b);
    for (int k = 0; k < keys; k++) { first_f[k] = INFINITY; last_b[k] = -1; }
    for (int i = 0; i < n; i++) {
        program_op o;
        if (t[i].start_s < 0 || t[i].end_s < 0) continue;
        program_rank_op(p, rank, i, &o);
        if (o.mb < 0 || o.mb >= p->micro_batches) continue;
        int k = o.mb * (p->n_chunks > 0 ? p->n_chunks : 1) + (o.chunk < p->n_chunks ? o.chunk : 0);
        if (o.phase == PHASE_F && t[i].start_s < first_f[k]) first_f[k] = t[i].start_s;
        if ((o.phase == PHASE_B || o.phase == PHASE_W) && t[i].end_s > last_b[k]) last_b[k] = t[i].end_s;
    }
    step_change *c = moe_xmalloc((size_t)(2 * keys + 1) * sizeof *c);
    int m = 0;
    for (int k = 0; k < keys; k++) {
        if (!isfinite(first_f[k])) continue;
        c[m++] = (step_change){first_f[k], 1};
        if (last_b[k] >= first_f[k]) c[m++] = (step_change){last_b[k], -1};
    }
    /* the most micro-batches in flight at once: the peak the ledger's activations correspond to */
    qsort(c, (size_t)m, sizeof *c, by_t);
    double in = 0, peak = 0;
    for (int i = 0; i < m; i++) { in += c[i].delta; if (in > peak) peak = in; }
    double per_mb = peak > 0 ? led.activations / peak : 0;
    for (int i = 0; i < m; i++) c[i].delta *= per_mb;
    counter_track(l, "memory in use (GiB)", "GiB", rank, c, m, led.params + led.grads + led.optimizer,
                  1.0 / (1024.0 * 1024.0 * 1024.0));
    free(c);
    free(first_f);
    free(last_b);
}

/* The events of one traced rank. `traced[r]` says whether rank r has tracks (for the arrows). */
static void rank_events(event_list *l, const program *p, const step_exec_result *r, int k, const char *traced) {
    int rank = r->trace_ranks[k], gpn = p->scn->cluster.gpus_per_node;
    int d, s, e, t, gpu = program_gpu_of_rank(p, rank);
    program_coords(p, rank, &d, &s, &e, &t);
    char name[160];
    snprintf(name, sizeof name, "rank %d (stage %d, ep %d, replica %d) GPU %d node %d", rank, s, e, d, gpu, gpu / gpn);
    push(l, meta_event("process_name", rank, 0, name), -INFINITY);
    for (int st = 0; st < STREAM_N; st++) push(l, meta_event("thread_name", rank, st, stream_name(st)), -INFINITY);
    int n = p->stage_n_ops[s], nc = 0;
    step_change *inflight = moe_xmalloc((size_t)(2 * n + 1) * sizeof *inflight);
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
            push(l, x, ot->start_s * 1e6);
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
        cJSON *args = cJSON_AddObjectToObject(x, "args");
        cJSON_AddNumberToObject(args, "op", i);   /* its index in the rank's program (events are time-sorted) */
        add_op_args(args, &o);
        push(l, x, ot->start_s * 1e6);
        /* arrows between traced ranks: from the send's start to the arrival, inside the receive */
        if (o.kind == OP_SEND && o.peer >= 0 && o.peer < p->n_ranks && traced[o.peer])
            push(l, flow("s", rank, o.tag, rank, ot->start_s * 1e6), ot->start_s * 1e6);
        if (o.kind == OP_RECV && o.peer >= 0 && o.peer < p->n_ranks && traced[o.peer]) {
            double dur_us = (ot->end_s - ot->start_s) * 1e6, at = ot->end_s * 1e6 - (dur_us > 0.002 ? 0.001 : dur_us / 2);
            push(l, flow("f", o.peer, o.tag, rank, at), at);
        }
        /* bytes this rank has on the wire: its sends and collectives from start to end */
        if (o.kind != OP_COMPUTE && o.kind != OP_RECV && o.bytes > 0) {
            inflight[nc++] = (step_change){ot->start_s, o.bytes};
            inflight[nc++] = (step_change){ot->end_s, -o.bytes};
        }
    }
    counter_track(l, "bytes in flight (MB)", "MB", rank, inflight, nc, 0, 1e-6);
    free(inflight);
    memory_counter(l, p, rank, s, r->trace_times[k]);
    if (r->hang.found && rank == r->hang.culprit) {
        double at = r->split ? r->split[rank].end_s : 0;
        cJSON *x = instant("stalled", rank, STREAM_COMPUTE, at, "never arrived");
        cJSON *a = cJSON_GetObjectItem(x, "args");
        cJSON_AddStringToObject(a, "at", op_kind_label(r->hang.op));
        cJSON_AddNumberToObject(a, "group", r->hang.group);
        cJSON_AddNumberToObject(a, "layer", r->hang.layer);
        cJSON_AddNumberToObject(a, "mb", r->hang.mb);
        push(l, x, at * 1e6);
    }
}

static cJSON *int_array(const int *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

cJSON *step_timeout_json(const program *p, const step_timeout *t) {
    if (!t->found) return cJSON_CreateNull();
    int gpu = program_gpu_of_rank(p, t->rank), gpn = p->scn->cluster.gpus_per_node;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "timeout_s", p->scn->faults.collective_timeout_s);
    cJSON_AddNumberToObject(o, "rank", t->rank);
    cJSON_AddNumberToObject(o, "gpu", gpu);
    cJSON_AddNumberToObject(o, "node", gpu / gpn);
    cJSON_AddStringToObject(o, "op", op_kind_label(t->op));
    cJSON_AddStringToObject(o, "group_kind", group_kind_name(t->group_kind));
    cJSON_AddNumberToObject(o, "group", t->group);
    cJSON_AddNumberToObject(o, "layer", t->layer);
    cJSON_AddNumberToObject(o, "micro_batch", t->mb);
    cJSON_AddNumberToObject(o, "arrived_s", t->arrived_s);
    if (isfinite(t->waited_s)) cJSON_AddNumberToObject(o, "waited_s", t->waited_s);
    else cJSON_AddNullToObject(o, "waited_s");   /* forever: the step hung */
    cJSON_AddNumberToObject(o, "fired_s", t->fired_s);
    return o;
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
    char *traced = moe_xcalloc((size_t)p->n_ranks + 1, 1);
    for (int k = 0; k < r->n_trace_ranks; k++)
        if (r->trace_ranks[k] >= 0 && r->trace_ranks[k] < p->n_ranks && r->trace_times[k]) traced[r->trace_ranks[k]] = 1;
    event_list l = {0};
    for (int k = 0; k < r->n_trace_ranks; k++) {
        int rank = r->trace_ranks[k];
        if (rank < 0 || rank >= p->n_ranks || !r->trace_times[k]) continue;
        rank_events(&l, p, r, k, traced);
    }
    /* sorted by time (metadata first): viewers and readers see the step in order */
    if (l.n > 0) qsort(l.v, (size_t)l.n, sizeof *l.v, by_time);   /* qsort(NULL, 0): UB */
    for (long i = 0; i < l.n; i++) cJSON_AddItemToArray(ev, l.v[i].ev);
    free(l.v);
    free(traced);
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
    cJSON_AddItemToObject(od, "collective_timeout", step_timeout_json(p, &r->timeout));
    return doc;
}

int step_trace_write(const char *path, const program *p, const step_exec_result *r, const cJSON *other_extra,
                     moe_error *err) {
    cJSON *doc = step_trace_build(p, r, "simulated");
    cJSON *od = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
    for (const cJSON *e = other_extra ? other_extra->child : NULL; e; e = e->next)
        cJSON_AddItemToObject(od, e->string, cJSON_Duplicate(e, 1));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    int rc = text ? write_file_atomic(path, text, err) : moe_error_set(err, EXIT_RUNTIME, "trace: out of memory");
    free(text);
    return rc;
}
