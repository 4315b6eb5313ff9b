/* trace.c — the step trace.json (format and contract in trace.h). */
#include "sim/exec/trace.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"
#include "sim/base/text_buf.h"
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

/* ---- the events as text ------------------------------------------------------------------------------
 * A trace holds some 10^5 values: built as cJSON items and printed, its events cost more than the
 * step they show (a number printed with "%1.15g", read back and printed again when that differs,
 * every key escaped char by char). Each event is written straight into one text buffer instead and
 * the events are put in time order by their offsets. Times are microseconds to the nanosecond,
 * three decimals from an integer count of nanoseconds (a step is far below the 2^63 ns = 292 years
 * a long long holds), so that an event's rounded end is its rounded start plus its duration. */
/* A JSON string: quote, backslash and control characters escaped (RFC 8259 §7). */
static void put_str(text_buf *t, const char *p) {
    text_put(t, "\"", 1);
    for (const char *q = p; *q; q++) {
        unsigned char c = (unsigned char)*q;
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; text_put(t, e, 2); }
        else if (c < 0x20) { char e[8]; snprintf(e, sizeof e, "\\u%04x", c); text_put(t, e, 6); }
        else text_put(t, q, 1);
    }
    text_put(t, "\"", 1);
}

static void put_int(text_buf *t, long long v) { text_put_ll(t, v); }

/* ns as microseconds with three decimals ("%llu.%03u" of its magnitude, signed) */
static void put_us(text_buf *t, long long ns) {
    unsigned long long a = ns < 0 ? 0ULL - (unsigned long long)ns : (unsigned long long)ns;
    unsigned frac = (unsigned)(a % 1000);
    char tail[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
    if (ns < 0) text_put(t, "-", 1);
    text_put_ull(t, a / 1000);
    text_put(t, tail, 4);
}

/* A number: an exact integer as one, else the shortest of 15 or 17 significant digits that reads
 * back as the same double (cJSON's rule); null when not finite. */
static void put_num(text_buf *t, double v) {
    if (!isfinite(v)) { text_puts(t, "null"); return; }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) { put_int(t, (long long)v); return; }   /* 2^53 */
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%1.15g", v);
    if (strtod(buf, NULL) != v) n = snprintf(buf, sizeof buf, "%1.17g", v);
    text_put(t, buf, (size_t)n);
}

/* `"key":` after a comma unless it opens its object */
static void key(text_buf *t, const char *k) {
    if (t->n > 0 && t->s[t->n - 1] != '{') text_put(t, ",", 1);
    text_put(t, "\"", 1);
    text_puts(t, k);
    text_put(t, "\":", 2);
}
static void f_str(text_buf *t, const char *k, const char *v) { key(t, k); put_str(t, v); }
static void f_int(text_buf *t, const char *k, long long v) { key(t, k); put_int(t, v); }
static void f_num(text_buf *t, const char *k, double v) { key(t, k); put_num(t, v); }
static void f_us(text_buf *t, const char *k, long long ns) { key(t, k); put_us(t, ns); }
static long long ns_of_s(double s) { return llround(s * 1e9); }

/* The events of the trace before they are sorted by time (metadata first, then by ts; ties keep
 * the order they were made in): each a slice of the text buffer. */
typedef struct {
    size_t off, len;
    double ts;     /* -inf for metadata */
    long seq;
} timed_event;

typedef struct {
    text_buf t;
    timed_event *v;
    long n, cap;
    size_t open;   /* where the event being written begins */
} event_list;

static text_buf *ev_begin(event_list *l) {
    l->open = l->t.n;
    text_put(&l->t, "{", 1);
    return &l->t;
}

static void ev_end(event_list *l, double ts_us) {
    text_put(&l->t, "}", 1);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = moe_xrealloc(l->v, (size_t)l->cap, sizeof *l->v);
    }
    l->v[l->n] = (timed_event){l->open, l->t.n - l->open, ts_us, l->n};
    l->n++;
}

static int by_time(const void *a, const void *b) {
    const timed_event *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void meta_event(event_list *l, const char *what, int pid, int tid, const char *name) {
    text_buf *t = ev_begin(l);
    f_str(t, "name", what); f_str(t, "ph", "M"); f_int(t, "pid", pid); f_int(t, "tid", tid);
    key(t, "args"); text_put(t, "{", 1); f_str(t, "name", name); text_put(t, "}", 1);
    ev_end(l, -INFINITY);
}

/* An instant event of the hang; its "args" object is left open for the caller's fields */
static text_buf *instant_begin(event_list *l, const char *name, int pid, int tid, double ts_s, const char *state) {
    text_buf *t = ev_begin(l);
    f_str(t, "name", name); f_str(t, "cat", "hang"); f_str(t, "ph", "i"); f_str(t, "s", "t");
    f_us(t, "ts", ns_of_s(ts_s)); f_int(t, "pid", pid); f_int(t, "tid", tid);
    key(t, "args"); text_put(t, "{", 1); f_str(t, "state", state);
    return t;
}

static void op_args(text_buf *t, const program_op *o) {
    f_int(t, "mb", o->mb);
    f_int(t, "layer", o->layer);
    f_int(t, "chunk", o->chunk);
    if (o->kind == OP_COMPUTE) {
        f_num(t, "flops", o->flops);
        f_num(t, "tokens", o->tokens);
    } else {
        f_num(t, "bytes", o->bytes);
        if (o->kind == OP_SEND || o->kind == OP_RECV) f_int(t, "peer", o->peer);
        else f_int(t, "group", o->group);
    }
}

/* A counter sample {"ph": "C"} on rank `pid`'s process. */
static void counter(event_list *l, const char *name, const char *k, int pid, double ts_s, double value) {
    text_buf *t = ev_begin(l);
    f_str(t, "name", name); f_str(t, "ph", "C"); f_us(t, "ts", ns_of_s(ts_s)); f_int(t, "pid", pid);
    key(t, "args"); text_put(t, "{", 1); f_num(t, k, value); text_put(t, "}", 1);
    ev_end(l, ts_s * 1e6);
}

/* One end of a send -> receive arrow (flow events "s" at the send, "f" at the arrival). */
static void flow(event_list *l, const char *ph, int sender, int tag, int pid, double ts_us) {
    char id[48];
    snprintf(id, sizeof id, "p2p-%d-%d", sender, tag);
    text_buf *t = ev_begin(l);
    f_str(t, "name", "send -> recv"); f_str(t, "cat", "p2p"); f_str(t, "ph", ph); f_str(t, "id", id);
    if (ph[0] == 'f') f_str(t, "bp", "e");
    f_us(t, "ts", llround(ts_us * 1e3)); f_int(t, "pid", pid); f_int(t, "tid", STREAM_P2P);
    ev_end(l, ts_us);
}

/* A step of a counter: at time t the value changes by delta (sorted and summed later). */
typedef struct { double t, delta; } step_change;

static int by_t(const void *a, const void *b) {
    const step_change *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The counter track `name` from its changes: one sample per distinct time, value * scale. */
static void counter_track(event_list *l, const char *name, const char *k, int pid, step_change *c, int n,
                          double base, double scale) {
    qsort(c, (size_t)n, sizeof *c, by_t);
    double v = base;
    counter(l, name, k, pid, 0, v * scale);
    for (int i = 0; i < n;) {
        double t = c[i].t;
        while (i < n && c[i].t == t) v += c[i++].delta;
        counter(l, name, k, pid, t, v * scale);
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

/* The rank's host thread (step_host.h) on its own track (tid STEP_TRACE_HOST_TID): "issue" slices
 * while it issues ops back to back (one slice per run of ops, args: the first and last op), and a
 * "sync_wait" slice from a sync op's host end until the thread resumes, so that a host-bound step
 * shows as gaps on the GPU tracks under a busy host track. */
static void host_slice(event_list *l, const char *name, int rank, double a, double b, int op0, int op1) {
    if (!(b > a)) return;
    long long start_ns = ns_of_s(a);
    text_buf *x = ev_begin(l);
    f_str(x, "name", name);
    f_str(x, "cat", "host");
    f_str(x, "ph", "X");
    f_us(x, "ts", start_ns);
    f_us(x, "dur", ns_of_s(b) - start_ns);
    f_int(x, "pid", rank);
    f_int(x, "tid", STEP_TRACE_HOST_TID);
    key(x, "args");
    text_put(x, "{", 1);
    f_int(x, "first_op", op0);
    f_int(x, "last_op", op1);
    text_put(x, "}", 1);
    ev_end(l, a * 1e6);
}

static void host_track(event_list *l, const stage_host *h, int rank, const op_time *t) {
    int n = h->n_ops;
    if (n <= 0) return;
    meta_event(l, "thread_name", rank, STEP_TRACE_HOST_TID, "host");
    double *hs = moe_xmalloc((size_t)n * sizeof(double)), *he = moe_xmalloc((size_t)n * sizeof(double));
    step_host_spans(h, t, 1, hs, he);
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (he[i] < 0) break;
        if (first < 0) first = i;
        int last_of_run = i + 1 >= n || he[i + 1] < 0 || hs[i + 1] > he[i];
        if (!last_of_run) continue;
        host_slice(l, "issue", rank, hs[first], he[i], first, i);
        if (i + 1 < n && he[i + 1] >= 0) host_slice(l, "sync_wait", rank, he[i], hs[i + 1], i, i + 1);
        first = -1;
    }
    free(hs);
    free(he);
}

/* The events of one traced rank. `traced[r]` says whether rank r has tracks (for the arrows). */
static void rank_events(event_list *l, const program *p, const step_exec_result *r, int k, const char *traced) {
    int rank = r->trace_ranks[k], gpn = p->scn->cluster.gpus_per_node;
    int d, s, e, t, gpu = program_gpu_of_rank(p, rank);
    program_coords(p, rank, &d, &s, &e, &t);
    char name[160];
    snprintf(name, sizeof name, "rank %d (stage %d, ep %d, replica %d) GPU %d node %d", rank, s, e, d, gpu, gpu / gpn);
    meta_event(l, "process_name", rank, 0, name);
    for (int st = 0; st < STREAM_N; st++) meta_event(l, "thread_name", rank, st, stream_name(st));
    int n = p->stage_n_ops[s], nc = 0;
    step_change *inflight = moe_xmalloc((size_t)(2 * n + 1) * sizeof *inflight);
    for (int i = 0; i < n; i++) {
        const op_time *ot = &r->trace_times[k][i];
        if (ot->start_s < 0) continue;
        program_op o;
        program_rank_op(p, rank, i, &o);
        if (ot->end_s < 0) {   /* blocked inside this collective when the step hung */
            text_buf *x = instant_begin(l, step_trace_event_name(&o), rank, o.stream, ot->start_s, "waiting");
            f_int(x, "group", o.group);
            f_int(x, "layer", o.layer);
            f_int(x, "mb", o.mb);
            text_put(x, "}", 1);
            ev_end(l, ot->start_s * 1e6);
            continue;
        }
        long long start_ns = ns_of_s(ot->start_s);
        text_buf *x = ev_begin(l);
        f_str(x, "name", step_trace_event_name(&o));
        f_str(x, "cat", phase_name(o.phase));
        f_str(x, "ph", "X");
        f_us(x, "ts", start_ns);
        f_us(x, "dur", ns_of_s(ot->end_s) - start_ns);   /* the rounded end minus the rounded start */
        f_int(x, "pid", rank);
        f_int(x, "tid", o.kind == OP_RECV ? STREAM_P2P : o.stream);
        key(x, "args");
        text_put(x, "{", 1);
        f_int(x, "op", i);   /* its index in the rank's program (events are time-sorted) */
        op_args(x, &o);
        text_put(x, "}", 1);
        ev_end(l, ot->start_s * 1e6);
        /* arrows between traced ranks: from the send's start to the arrival, inside the receive */
        if (o.kind == OP_SEND && o.peer >= 0 && o.peer < p->n_ranks && traced[o.peer])
            flow(l, "s", rank, o.tag, rank, ot->start_s * 1e6);
        if (o.kind == OP_RECV && o.peer >= 0 && o.peer < p->n_ranks && traced[o.peer]) {
            double dur_us = (ot->end_s - ot->start_s) * 1e6, at = ot->end_s * 1e6 - (dur_us > 0.002 ? 0.001 : dur_us / 2);
            flow(l, "f", o.peer, o.tag, rank, at);
        }
        /* bytes this rank has on the wire: its sends and collectives from start to end */
        if (o.kind != OP_COMPUTE && o.kind != OP_RECV && o.bytes > 0) {
            inflight[nc++] = (step_change){ot->start_s, o.bytes};
            inflight[nc++] = (step_change){ot->end_s, -o.bytes};
        }
    }
    counter_track(l, "bytes in flight (MB)", "MB", rank, inflight, nc, 0, 1e-6);
    free(inflight);
    if (r->hosts) host_track(l, &r->hosts[s], rank, r->trace_times[k]);
    memory_counter(l, p, rank, s, r->trace_times[k]);
    if (r->hang.found && rank == r->hang.culprit) {
        double at = r->split ? r->split[rank].end_s : 0;
        text_buf *x = instant_begin(l, "stalled", rank, STREAM_COMPUTE, at, "never arrived");
        f_str(x, "at", op_kind_label(r->hang.op));
        f_int(x, "group", r->hang.group);
        f_int(x, "layer", r->hang.layer);
        f_int(x, "mb", r->hang.mb);
        text_put(x, "}", 1);
        ev_end(l, at * 1e6);
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
    cJSON_AddNumberToObject(o, "detect_s", t->detect_s);
    cJSON_AddStringToObject(o, "detected_by", t->by_qp_retry ? "qp_retry_exhausted" : "watchdog");
    return o;
}

/* The collective instance a hang is stuck in: op, group_kind, group, layer, micro_batch ("(none)" when
 * the culprit had no collective left). Both hang records start with it. */
static cJSON *hang_instance_json(const step_hang *h) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", h->group >= 0 ? op_kind_label(h->op) : "(none)");
    cJSON_AddStringToObject(o, "group_kind", h->group >= 0 ? group_kind_name(h->group_kind) : "(none)");
    cJSON_AddNumberToObject(o, "group", h->group);
    cJSON_AddNumberToObject(o, "layer", h->layer);
    cJSON_AddNumberToObject(o, "micro_batch", h->mb);
    return o;
}

cJSON *step_hang_summary_json(const program *p, const step_hang *h) {
    if (!h->found) return cJSON_CreateNull();
    int gpu = program_gpu_of_rank(p, h->culprit), gpn = p->scn->cluster.gpus_per_node;
    cJSON *o = hang_instance_json(h);
    cJSON_AddNumberToObject(o, "rank", h->culprit);
    cJSON_AddNumberToObject(o, "gpu", gpu);
    cJSON_AddNumberToObject(o, "node", gpu / gpn);
    cJSON_AddNumberToObject(o, "waiting", h->n_waiting);
    cJSON_AddNumberToObject(o, "missing", h->n_missing);
    cJSON_AddNumberToObject(o, "blocked_elsewhere", h->blocked_elsewhere);
    return o;
}

static cJSON *hang_json(const program *p, const step_hang *h) {
    if (!h->found) return cJSON_CreateNull();
    cJSON *o = hang_instance_json(h);
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

static void f_json(text_buf *t, const char *k, const cJSON *v) {
    char *j = cJSON_PrintUnformatted(v);
    key(t, k);
    text_puts(t, j ? j : "null");
    free(j);
}

static void put_nums(text_buf *t, const char *k, const double *v, int n) {
    key(t, k);
    text_put(t, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i) text_put(t, ",", 1);
        put_num(t, v ? v[i] : 0);
    }
    text_put(t, "]", 1);
}

/* otherData (trace.h): the layout, the per-rank and per-expert figures, the hang and the timeout,
 * then the members of `extra` */
static void other_data(text_buf *t, const program *p, const step_exec_result *r, const char *source,
                       const cJSON *extra) {
    const scenario *s = p->scn;
    int N = p->n_ranks;
    text_put(t, "{", 1);
    f_str(t, "format", STEP_TRACE_FORMAT);
    f_str(t, "source", source);
    f_str(t, "generator", "moesim step");
    f_str(t, "scenario", s->name);
    f_int(t, "ranks", N);
    f_int(t, "gpus_per_node", s->cluster.gpus_per_node);
    f_int(t, "tp", p->tp);
    f_int(t, "pp", p->pp);
    f_int(t, "ep", p->ep);
    f_int(t, "dp", p->dp);
    if (!r->hang.found) f_num(t, "step_time_s", r->step_time_s);
    key(t, "rank_gpu");
    text_put(t, "[", 1);
    for (int i = 0; i < N; i++) {
        if (i) text_put(t, ",", 1);
        put_int(t, program_gpu_of_rank(p, i));
    }
    text_put(t, "]", 1);
    double *v = moe_xmalloc((size_t)(N > 0 ? N : 1) * sizeof *v);
    for (int i = 0; i < N; i++) v[i] = r->split ? r->split[i].end_s : 0;
    put_nums(t, "rank_step_s", v, N);
    for (int i = 0; i < N; i++) v[i] = r->split ? r->split[i].compute_s + r->split[i].optimizer_s : 0;
    put_nums(t, "rank_compute_s", v, N);
    free(v);
    /* time inside all-to-alls after the last arrival: what a slow link lengthens */
    if (r->a2a_s) put_nums(t, "rank_a2a_s", r->a2a_s, N);
    /* the part of it PFC pauses added (a lossless fabric: step_exec.h "Lossless fabric") */
    if (r->pfc_pause_s) put_nums(t, "rank_pfc_pause_s", r->pfc_pause_s, N);
    int E = p->n_moe_layers > 0 ? s->model.experts : 0;
    put_nums(t, "expert_tokens", p->step_expert_tokens, E);
    put_nums(t, "expert_tokens_routed", p->step_expert_routed, E);
    cJSON *h = hang_json(p, &r->hang), *to = step_timeout_json(p, &r->timeout);
    f_json(t, "hang", h);
    f_json(t, "collective_timeout", to);
    cJSON_Delete(h);
    cJSON_Delete(to);
    for (const cJSON *e = extra ? extra->child : NULL; e; e = e->next) f_json(t, e->string, e);
    text_put(t, "}", 1);
}

/* otherData, written while the events are: its per-rank numbers in their shortest round-trip form
 * (put_num) took as long as the events of the seed's 32 traced ranks, and a step's trace is written
 * when the other core has nothing left to do. It only reads the program and the result. */
typedef struct {
    const program *p;
    const step_exec_result *r;
    const char *source;
    const cJSON *extra;
    text_buf t;
} other_job;

static void *other_work(void *arg) {
    other_job *j = arg;
    other_data(&j->t, j->p, j->r, j->source, j->extra);
    return NULL;
}

/* The whole document as text (trace.h): the traced ranks' events in time order, then otherData. */
static char *trace_text(const program *p, const step_exec_result *r, const char *source, const cJSON *extra) {
    other_job other = {.p = p, .r = r, .source = source, .extra = extra};
    pthread_t other_thread;
    int threaded = pthread_create(&other_thread, NULL, other_work, &other) == 0;
    char *traced = moe_xcalloc((size_t)p->n_ranks + 1, 1);
    for (int k = 0; k < r->n_trace_ranks; k++)
        if (r->trace_ranks[k] >= 0 && r->trace_ranks[k] < p->n_ranks && r->trace_times[k]) traced[r->trace_ranks[k]] = 1;
    event_list l = {0};
    for (int k = 0; k < r->n_trace_ranks; k++) {
        int rank = r->trace_ranks[k];
        if (rank < 0 || rank >= p->n_ranks || !r->trace_times[k]) continue;
        rank_events(&l, p, r, k, traced);
    }
    free(traced);
    /* sorted by time (metadata first): viewers and readers see the step in order */
    if (l.n > 0) qsort(l.v, (size_t)l.n, sizeof *l.v, by_time);   /* qsort(NULL, 0): UB */
    text_buf out = {0};
    text_puts(&out, "{\"traceEvents\":[");
    for (long i = 0; i < l.n; i++) {
        if (i) text_put(&out, ",", 1);
        text_put(&out, l.t.s + l.v[i].off, l.v[i].len);
    }
    free(l.v);
    text_free(&l.t);
    text_puts(&out, "],\"displayTimeUnit\":\"ms\",\"otherData\":");
    if (threaded) pthread_join(other_thread, NULL);
    else other_work(&other);
    text_put(&out, other.t.s, other.t.n);
    text_free(&other.t);
    text_put(&out, "}", 1);
    return out.s;
}

cJSON *step_trace_build(const program *p, const step_exec_result *r, const char *source) {
    char *text = trace_text(p, r, source, NULL);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    return doc;
}

int step_trace_write(const char *path, const program *p, const step_exec_result *r, const cJSON *other_extra,
                     moe_error *err) {
    char *text = trace_text(p, r, "simulated", other_extra);
    int rc = write_file_atomic(path, text, err);
    free(text);
    return rc;
}
