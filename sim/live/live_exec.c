/* live_exec.c — the live executor of one rank (live_exec.h): stream cursors, nonblocking
 * communication polled through the backend, the watchdog state, the per-rank breakdown, the hang
 * analysis and the trace in the simulator's format. No MPI, no CUDA, no kernels here. */
#include "sim/live/live_exec.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "sim/exec/trace.h"
#include "sim/scenario/link_loss.h"

/* ---- small helpers ------------------------------------------------------------------------------ */
static int is_collective(const program_op *o) {
    return o->kind == OP_A2A_DISPATCH || o->kind == OP_A2A_COMBINE || o->kind == OP_REDUCE_SCATTER ||
           o->kind == OP_ALL_GATHER || o->kind == OP_ALL_REDUCE;
}

/* the simulator's event names (trace.h), so that simdiag compares like with like */
static const char *op_label(const program_op *o) { return step_trace_event_name(o); }

static const char *group_kind_label(group_kind k) {
    static const char *n[] = {"EP", "TP", "DP-dense", "DP-expert", "CP"};
    return k < GROUP_NKINDS ? n[k] : "?";
}

int live_rank_run_init(live_rank_run *r, int n_ops) {
    memset(r, 0, sizeof *r);
    r->n_ops = n_ops;
    r->times = moe_xmalloc((size_t)(n_ops > 0 ? n_ops : 1) * sizeof *r->times);
    r->measured = moe_xmalloc((size_t)(n_ops > 0 ? n_ops : 1) * sizeof *r->measured);
    return r->times && r->measured ? 0 : -1;
}

void live_rank_run_free(live_rank_run *r) {
    free(r->times);
    free(r->measured);
    memset(r, 0, sizeof *r);
}

/* ---- faults -------------------------------------------------------------------------------------- */
int live_check_faults(const program *p, moe_error *err) {
    const faults_cfg *f = &p->scn->faults;
    if (f->collective_timeout_s > 0)
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s%sfaults.collective_timeout_s: not used by simlive, whose watchdog is --watchdog-s "
                             "(seconds without progress); remove it or simulate the timeout with simrun",
                             p->scn->file, p->scn->file[0] ? ": " : "");
    /* the routing models the simulator alone has: a drifting law over simulated steps (simlive's
     * --steps repeats one program) and EPLB's replicas (the live dispatch places experts contiguously) */
    const routing_cfg *rt = &p->scn->routing;
    if (rt->steps > 1 || rt->drift.hot_peak_share > 0)
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s%srouting.steps / routing.drift: not used by simlive (the drifting routing law is the "
                             "simulator's; simlive --steps N repeats one step's program); remove them or simulate with simrun",
                             p->scn->file, p->scn->file[0] ? ": " : "");
    if (rt->redundant_experts > 0)
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s%srouting.redundant_experts: not supported by simlive (its dispatch places the experts "
                             "contiguously, without replicas); simulate it with simrun",
                             p->scn->file, p->scn->file[0] ? ": " : "");
    if (p->faults.n_link_ranks == 0 && !faults_any_uplink(f)) return 0;
    return moe_error_set(err, EXIT_BADINPUT,
                         "%s%sfaults.links: not supported by simlive (a live run cannot degrade a real NIC, NVLink "
                         "or switch port: %d degraded link(s)); simulate it with simrun",
                         p->scn->file, p->scn->file[0] ? ": " : "", f->n_links);
}

/* ---- the executor --------------------------------------------------------------------------------- */
enum { ST_PENDING = 0, ST_INFLIGHT, ST_DONE };

typedef struct {
    const program *p;
    const program_op *ops;
    int n, stop;
    double compute_factor;         /* program.faults: a slow GPU's kernels take this many times longer */
    const live_backend *b;
    live_rank_run *r;
    unsigned char *status;
    int *list[STREAM_N], len[STREAM_N], cur[STREAM_N], inflight[STREAM_N];
    int *recvs, n_recvs;
    int coll_instance[STREAM_N];   /* instance of the collective in flight on each stream */
    double last_end;
    live_rank_state *st;
} exec_state;

static int deps_done(const exec_state *x, int i) {
    const program_op *o = &x->ops[i];
    for (int k = 0; k < o->n_deps; k++)
        if (x->status[o->deps[k]] != ST_DONE) return 0;
    return 1;
}

static void finish_op(exec_state *x, int i, double t) {
    x->status[i] = ST_DONE;
    x->r->times[i].end_s = t;
    x->st->n_done++;
    if (t >= x->last_end) x->last_end = t;
    /* "what it did last", for the watchdog: RECVs are pre-posted and end whenever data arrives */
    if (x->ops[i].kind != OP_RECV && (x->st->last_op < 0 || t >= x->r->times[x->st->last_op].end_s))
        x->st->last_op = i;
}

/* A slow GPU (faults.slow_gpus): its kernel took factor x as long, so the compute stream stays busy
 * until start + factor x (the measured kernel time), through the backend's hold or by idling. */
static void hold_compute(exec_state *x, double start_s) {
    const live_backend *b = x->b;
    double until = start_s + x->compute_factor * (b->now_s(b->ctx) - start_s);
    if (b->hold) b->hold(b->ctx, until);
    else
        while (b->now_s(b->ctx) < until) b->idle(b->ctx);
}

/* Start op i (its deps are done, its stream is free). Compute ops finish inside. */
static int start_op(exec_state *x, int i, int stream, moe_error *err) {
    const program_op *o = &x->ops[i];
    const live_backend *b = x->b;
    double *m = &x->r->measured[i];
    x->r->times[i].start_s = b->now_s(b->ctx);
    int rc;
    switch (o->kind) {
    case OP_COMPUTE:
        rc = b->compute(b->ctx, i, o, m, err);
        if (rc) return rc;
        if (x->compute_factor > 1) hold_compute(x, x->r->times[i].start_s);
        finish_op(x, i, b->now_s(b->ctx));
        return 0;
    case OP_A2A_DISPATCH: case OP_A2A_COMBINE: rc = b->a2a(b->ctx, i, o, m, err); break;
    case OP_SEND: rc = b->send(b->ctx, i, o, m, err); x->st->sends_started++; break;
    case OP_RECV: rc = b->recv(b->ctx, i, o, m, err); break;
    default: rc = b->collective(b->ctx, i, o, m, err); break;
    }
    if (rc) return rc;
    if (is_collective(o)) {
        group_kind k = x->p->groups[o->group].kind;
        x->coll_instance[stream >= 0 ? stream : STREAM_COMM] = x->st->coll_started[k]++;
    }
    x->status[i] = ST_INFLIGHT;
    if (stream >= 0) x->inflight[stream] = i;
    return 0;
}

/* Fill the watchdog state at the point where the rank stopped. */
static void describe_stop(exec_state *x, double blocked_s) {
    live_rank_state *s = x->st;
    s->blocked_s = blocked_s;
    s->next_op = x->n;
    for (int i = 0; i < x->n; i++) if (x->status[i] == ST_PENDING) { s->next_op = i; break; }
    /* the collective it waits in: the comm stream's, else the data-parallel stream's (ZeRO-2/3) */
    int cs = STREAM_COMM, ci = x->inflight[STREAM_COMM];
    if (!(ci >= 0 && is_collective(&x->ops[ci]))) { cs = STREAM_DP; ci = x->inflight[STREAM_DP]; }
    s->wait_coll_op = ci >= 0 && is_collective(&x->ops[ci]) ? ci : -1;
    s->wait_coll_instance = s->wait_coll_op >= 0 ? x->coll_instance[cs] : -1;
    /* a RECV that a stream head needs */
    s->wait_recv_op = -1;
    int reached_stall = 0;
    for (int st = 0; st < STREAM_N; st++) {
        if (x->cur[st] >= x->len[st] || x->inflight[st] >= 0) continue;
        int h = x->list[st][x->cur[st]];
        if (h >= x->stop) { reached_stall = 1; continue; }
        const program_op *o = &x->ops[h];
        for (int k = 0; k < o->n_deps; k++) {
            int d = o->deps[k];
            if (x->ops[d].kind == OP_RECV && x->status[d] != ST_DONE &&
                (s->wait_recv_op < 0 || d < s->wait_recv_op))
                s->wait_recv_op = d;
        }
    }
    if (s->n_done == s->n_ops) s->activity = LIVE_FINISHED;
    else if (reached_stall) s->activity = LIVE_STALLED;
    else if (s->wait_coll_op >= 0 || s->wait_recv_op >= 0) s->activity = LIVE_BLOCKED;
    else s->activity = LIVE_RUNNING;
}

static int build_lists(exec_state *x) {
    for (int st = 0; st < STREAM_N; st++) {
        x->list[st] = moe_xmalloc((size_t)(x->n + 1) * sizeof(int));
        x->len[st] = 0; x->cur[st] = 0; x->inflight[st] = -1;
        if (!x->list[st]) return -1;
    }
    x->recvs = moe_xmalloc((size_t)(x->n + 1) * sizeof(int));
    if (!x->recvs) return -1;
    x->n_recvs = 0;
    for (int i = 0; i < x->n; i++) {
        const program_op *o = &x->ops[i];
        /* program.h: RECV occupies no stream. Without pre-posting (NCCL p2p is a rendezvous on one
         * stream) RECVs are issued in list order on the p2p stream instead. */
        if (o->kind == OP_RECV && x->b->prepost_recv) x->recvs[x->n_recvs++] = i;
        else {
            int st = o->kind == OP_RECV ? STREAM_P2P : o->stream;
            if (st < 0 || st >= STREAM_N) st = STREAM_COMPUTE;
            x->list[st][x->len[st]++] = i;
        }
    }
    return 0;
}

static void free_lists(exec_state *x) {
    for (int st = 0; st < STREAM_N; st++) free(x->list[st]);
    free(x->recvs);
    free(x->status);
}

static void sleep_forever(void) {
    struct timespec ts = {1, 0};
    for (;;) nanosleep(&ts, NULL);
}

int live_exec_step(const program *p, int rank, const program_op *ops, int n_ops,
                   const live_backend *b, const live_exec_opts *o, live_rank_run *r, moe_error *err) {
    exec_state x;
    memset(&x, 0, sizeof x);
    x.p = p; x.ops = ops; x.n = n_ops; x.b = b; x.r = r; x.st = &r->state;
    x.stop = p->faults.stop_at[rank] < n_ops ? p->faults.stop_at[rank] : n_ops;
    x.compute_factor = p->faults.compute_factor[rank];
    x.status = moe_xcalloc((size_t)(n_ops + 1), 1);
    if (!x.status || build_lists(&x)) {
        free_lists(&x);
        return moe_error_set(err, EXIT_RUNTIME, "live: out of memory");
    }
    memset(&r->state, 0, sizeof r->state);
    r->state.rank = rank; r->state.n_ops = n_ops; r->state.step = o->step;
    r->state.stop_at = x.stop < n_ops ? x.stop : -1;
    r->state.last_op = r->state.wait_coll_op = r->state.wait_recv_op = -1;
    for (int i = 0; i < n_ops; i++) {
        r->times[i].start_s = r->times[i].end_s = -1;
        r->measured[i] = NAN;
    }
    x.last_end = 0;

    int rc = 0;
    double t_progress = b->now_s(b->ctx);
    while (r->state.n_done < n_ops) {
        int progress = 0;
        /* RECVs: posted as soon as ready, completed whenever they arrive */
        for (int k = 0; k < x.n_recvs && !rc; k++) {
            int i = x.recvs[k];
            if (x.status[i] == ST_PENDING && i < x.stop && deps_done(&x, i)) {
                if ((rc = start_op(&x, i, -1, err))) break;
                progress = 1;
            }
            if (x.status[i] == ST_INFLIGHT) {
                int t = b->test(b->ctx, i, &ops[i], err);
                if (t < 0) { rc = EXIT_RUNTIME; break; }
                if (t > 0) { finish_op(&x, i, b->now_s(b->ctx)); progress = 1; }
            }
        }
        /* streams: FIFO heads. Compute runs inline (it blocks this rank until the kernel is done),
         * so the nonblocking streams go first and a pass runs at most one compute op: every
         * communication op that is ready is posted before the next kernel starts, as on a GPU whose
         * host thread launches both, and not only after it. */
        static const int stream_order[STREAM_N] = {STREAM_COMM, STREAM_DP, STREAM_P2P, STREAM_COMPUTE};
        int computed = 0;
        for (int so = 0; so < STREAM_N && !rc && !computed; so++) {
            int st = stream_order[so];
            for (;;) {
                int fl = x.inflight[st];
                if (fl >= 0) {
                    int t = b->test(b->ctx, fl, &ops[fl], err);
                    if (t < 0) { rc = EXIT_RUNTIME; break; }
                    if (t == 0) break;
                    finish_op(&x, fl, b->now_s(b->ctx));
                    x.inflight[st] = -1;
                    x.cur[st]++;
                    progress = 1;
                }
                if (x.cur[st] >= x.len[st]) break;
                int i = x.list[st][x.cur[st]];
                if (i >= x.stop || !deps_done(&x, i)) break;
                if ((rc = start_op(&x, i, st, err))) break;
                progress = 1;
                if (x.status[i] == ST_DONE) {      /* compute finished inline: rescan the others */
                    x.cur[st]++;
                    computed = 1;
                    break;
                }
            }
        }
        if (rc) break;
        if (r->state.n_done == n_ops) break;
        double now = b->now_s(b->ctx);
        if (progress) { t_progress = now; continue; }
        /* no progress: the stall, the watchdog, or just waiting */
        int stalled_here = x.stop < n_ops;
        if (stalled_here) {
            for (int st = 0; st < STREAM_N; st++) if (x.cur[st] < x.len[st] && x.list[st][x.cur[st]] >= x.stop) goto at_stall;
            stalled_here = 0;
        at_stall:;
        }
        if (stalled_here && o->hard_stall) sleep_forever();
        int alarm = b->idle(b->ctx);
        if (alarm || (o->watchdog_s > 0 && now - t_progress > o->watchdog_s)) {
            describe_stop(&x, now - t_progress);
            free_lists(&x);
            return LIVE_HUNG;
        }
    }
    if (rc) { free_lists(&x); return rc; }
    r->end_s = x.last_end;
    describe_stop(&x, 0);
    free_lists(&x);
    return 0;
}

/* ---- hang analysis ------------------------------------------------------------------------------------- */
/* Ordinal of the SEND on `sender` that carries `tag` to `receiver` among the sender's SENDs; -1 when
 * the sender's program has no such SEND (a program mismatch). */
static int send_ordinal(const program *p, int sender, int receiver, int tag) {
    int n = program_n_ops(p, sender), q = 0;
    for (int i = 0; i < n; i++) {
        program_op o;
        program_rank_op(p, sender, i, &o);
        if (o.kind != OP_SEND) continue;
        if (o.peer == receiver && o.tag == tag) return q;
        q++;
    }
    return -1;
}

/* Has member m started instance `inst` of the collective group kind k? (unknown when it did not answer) */
static int arrived(const live_rank_state *m, group_kind k, int inst) {
    return m->activity != LIVE_NO_ANSWER && m->coll_started[k] > inst;
}

int live_hang_analyze(const program *p, const live_rank_state *st, live_hang *h) {
    int n = p->n_ranks;
    memset(h, 0, sizeof *h);
    h->culprit = h->coll_rank = -1;
    unsigned char *edge = moe_xcalloc((size_t)n * n, 1);
    int *outdeg = moe_xcalloc((size_t)n, sizeof(int)), *indeg = moe_xcalloc((size_t)n, sizeof(int));
    h->culprits = moe_xmalloc((size_t)n * sizeof(int));
    h->waiting = moe_xmalloc((size_t)n * sizeof(int));
    h->missing = moe_xmalloc((size_t)n * sizeof(int));
    if (!edge || !outdeg || !indeg || !h->culprits || !h->waiting || !h->missing) {
        free(edge); free(outdeg); free(indeg);
        return -1;
    }
#define EDGE(a, b) do { if ((a) != (b) && !edge[(size_t)(a) * n + (b)]) { edge[(size_t)(a) * n + (b)] = 1; outdeg[a]++; indeg[b]++; } } while (0)
    for (int w = 0; w < n; w++) {
        const live_rank_state *s = &st[w];
        if (s->activity == LIVE_NO_ANSWER) { h->n_no_answer++; continue; }
        if (s->wait_coll_op >= 0) {
            h->n_blocked_in_coll++;
            program_op o;
            program_rank_op(p, w, s->wait_coll_op, &o);
            const program_group *g = &p->groups[o.group];
            for (int k = 0; k < g->n; k++)
                if (!arrived(&st[g->ranks[k]], g->kind, s->wait_coll_instance)) EDGE(w, g->ranks[k]);
        }
        if (s->wait_recv_op >= 0) {
            h->n_blocked_on_recv++;
            program_op o;
            program_rank_op(p, w, s->wait_recv_op, &o);
            int q = send_ordinal(p, o.peer, w, o.tag);
            if (o.peer >= 0 && o.peer < n &&
                (q < 0 || st[o.peer].activity == LIVE_NO_ANSWER || st[o.peer].sends_started <= q))
                EDGE(w, o.peer);
        }
    }
#undef EDGE
    /* culprits: waited on, waiting on nobody (a rank that did not answer waits on nobody we know of) */
    for (int r = 0; r < n; r++)
        if (indeg[r] > 0 && outdeg[r] == 0) h->culprits[h->n_culprits++] = r;
    if (h->n_culprits == 0)   /* nobody identifiable through waits: fall back to the odd ones out */
        for (int r = 0; r < n; r++)
            if (st[r].activity == LIVE_STALLED || st[r].activity == LIVE_NO_ANSWER) h->culprits[h->n_culprits++] = r;
    h->found = 1;
    if (h->n_culprits > 0) h->culprit = h->culprits[0];
    /* the collective instance the culprit never arrived at, seen from the lowest waiting member */
    for (int w = 0; w < n && h->culprit >= 0 && h->coll_rank < 0; w++) {
        const live_rank_state *s = &st[w];
        if (s->activity == LIVE_NO_ANSWER || s->wait_coll_op < 0 || !edge[(size_t)w * n + h->culprit]) continue;
        program_op o;
        program_rank_op(p, w, s->wait_coll_op, &o);
        const program_group *g = &p->groups[o.group];
        int member = 0;
        for (int k = 0; k < g->n; k++) member |= g->ranks[k] == h->culprit;
        if (!member) continue;
        h->coll_rank = w; h->coll_op = s->wait_coll_op; h->coll_group = o.group;
        h->coll_instance = s->wait_coll_instance;
        for (int k = 0; k < g->n; k++) {
            int m = g->ranks[k];
            const live_rank_state *ms = &st[m];
            if (!arrived(ms, g->kind, h->coll_instance)) h->missing[h->n_missing++] = m;
            else if (ms->wait_coll_op >= 0 && ms->wait_coll_instance == h->coll_instance) {
                program_op mo;
                program_rank_op(p, m, ms->wait_coll_op, &mo);
                if (mo.group == o.group) h->waiting[h->n_waiting++] = m;
            }
        }
    }
    free(edge); free(outdeg); free(indeg);
    return 0;
}

void live_hang_free(live_hang *h) {
    free(h->culprits); free(h->waiting); free(h->missing);
    memset(h, 0, sizeof *h);
}

static size_t cat(char *buf, size_t len, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t cat(char *buf, size_t len, size_t at, const char *fmt, ...) {
    if (at >= len) return at;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
    return k < 0 ? at : at + (size_t)k;
}

static size_t op_desc(char *buf, size_t len, size_t at, const program_op *o, int i) {
    at = cat(buf, len, at, "op %d %s (%s", i, op_label(o), phase_name((op_phase)o->phase));
    if (o->layer != OP_NO_LAYER) at = cat(buf, len, at, ", layer %d", o->layer);
    if (o->mb >= 0) at = cat(buf, len, at, ", mb %d", o->mb);
    return cat(buf, len, at, ")");
}

void live_rank_where(const program *p, const live_rank_state *st, int rank, char *buf, size_t len) {
    const live_rank_state *s = &st[rank];
    int d, stg, e, t;
    program_coords(p, rank, &d, &stg, &e, &t);
    size_t at = cat(buf, len, 0, "rank %d (stage %d, ep %d, replica %d, GPU %d): ", rank, stg, e, d,
                    program_gpu_of_rank(p, rank));
    program_op o;
    switch (s->activity) {
    case LIVE_NO_ANSWER:
        cat(buf, len, at, "did not answer the watchdog (hung outside the executor, e.g. in a kernel, or dead)");
        return;
    case LIVE_FINISHED:
        at = cat(buf, len, at, "finished its step (%d ops), waiting at the end-of-step barrier", s->n_ops);
        break;
    case LIVE_STALLED:
        program_rank_op(p, rank, s->stop_at, &o);
        at = cat(buf, len, at, "STALLED before ");
        at = op_desc(buf, len, at, &o, s->stop_at);
        at = cat(buf, len, at, " [injected: faults.stalls], not in any collective; %d/%d ops done",
                 s->n_done, s->n_ops);
        break;
    default:
        at = cat(buf, len, at, "%s; %d/%d ops done", s->activity == LIVE_BLOCKED ? "blocked" : "running",
                 s->n_done, s->n_ops);
        break;
    }
    if (s->wait_coll_op >= 0) {
        program_rank_op(p, rank, s->wait_coll_op, &o);
        const program_group *g = &p->groups[o.group];
        at = cat(buf, len, at, "; waiting %.1f s in ", s->blocked_s);
        at = op_desc(buf, len, at, &o, s->wait_coll_op);
        at = cat(buf, len, at, ", instance #%d of %s group %d {", s->wait_coll_instance,
                 group_kind_label(g->kind), o.group);
        for (int k = 0; k < g->n; k++) at = cat(buf, len, at, "%s%d", k ? "," : "", g->ranks[k]);
        at = cat(buf, len, at, "}; not arrived:");
        int none = 1;
        for (int k = 0; k < g->n; k++)
            if (!arrived(&st[g->ranks[k]], g->kind, s->wait_coll_instance)) {
                at = cat(buf, len, at, " %d%s", g->ranks[k], st[g->ranks[k]].activity == LIVE_NO_ANSWER ? "(?)" : "");
                none = 0;
            }
        if (none) at = cat(buf, len, at, " none (completing)");
    }
    if (s->wait_recv_op >= 0) {
        program_rank_op(p, rank, s->wait_recv_op, &o);
        at = cat(buf, len, at, "; waiting for ");
        at = op_desc(buf, len, at, &o, s->wait_recv_op);
        int q = send_ordinal(p, o.peer, rank, o.tag);
        int sent = q >= 0 && st[o.peer].activity != LIVE_NO_ANSWER && st[o.peer].sends_started > q;
        at = cat(buf, len, at, " from rank %d (tag %d): %s", o.peer, o.tag,
                 sent ? "sent, in flight" : "rank has not sent it");
    }
    if (s->last_op >= 0) {
        program_rank_op(p, rank, s->last_op, &o);
        at = cat(buf, len, at, "; last op ended: ");
        op_desc(buf, len, at, &o, s->last_op);
    }
}

static void verdict(const program *p, const live_rank_state *st, const live_hang *h, char *buf, size_t len) {
    size_t at = 0;
    if (h->culprit < 0) {
        cat(buf, len, 0, "no culprit: circular wait (the ranks' programs disagree)");
        return;
    }
    int c = h->culprit, d, s, e, t;
    program_coords(p, c, &d, &s, &e, &t);
    at = cat(buf, len, at, "culprit rank %d (GPU %d, stage %d, ep %d, replica %d, %s)", c,
             program_gpu_of_rank(p, c), s, e, d,
             st[c].activity == LIVE_STALLED ? "stalled" : st[c].activity == LIVE_NO_ANSWER ? "no answer" :
             st[c].activity == LIVE_FINISHED ? "finished" : "not waiting in any collective");
    if (h->coll_rank >= 0) {
        program_op o;
        program_rank_op(p, h->coll_rank, h->coll_op, &o);
        at = cat(buf, len, at, ": never arrived at %s (%s", op_label(&o), phase_name((op_phase)o.phase));
        if (o.layer != OP_NO_LAYER) at = cat(buf, len, at, ", layer %d", o.layer);
        if (o.mb >= 0) at = cat(buf, len, at, ", mb %d", o.mb);
        at = cat(buf, len, at, ") of %s group %d, instance #%d; %d member(s) wait in it {",
                 group_kind_label(p->groups[o.group].kind), o.group, h->coll_instance, h->n_waiting);
        for (int k = 0; k < h->n_waiting; k++) at = cat(buf, len, at, "%s%d", k ? "," : "", h->waiting[k]);
        at = cat(buf, len, at, "}");
    } else {
        at = cat(buf, len, at, ": ranks wait for it through pipeline RECVs");
    }
    if (h->n_culprits > 1) {
        at = cat(buf, len, at, "; other roots:");
        for (int k = 1; k < h->n_culprits; k++) at = cat(buf, len, at, " %d", h->culprits[k]);
    }
    cat(buf, len, at, "; %d rank(s) blocked in collectives, %d on pipeline RECVs, %d did not answer",
        h->n_blocked_in_coll, h->n_blocked_on_recv, h->n_no_answer);
}

char *live_hang_report(const program *p, const live_rank_state *st, const live_hang *h, double watchdog_s) {
    size_t len = (size_t)(p->n_ranks + 4) * 1024, at = 0;
    char *buf = moe_xmalloc(len), line[1024];
    if (!buf) return NULL;
    at = cat(buf, len, at, "simlive watchdog: no progress for %.1f s. Where every rank is (all "
             "ranks but one wait inside a collective; the odd one out is the culprit):\n", watchdog_s);
    for (int r = 0; r < p->n_ranks; r++) {
        live_rank_where(p, st, r, line, sizeof line);
        at = cat(buf, len, at, "  %s\n", line);
    }
    verdict(p, st, h, line, sizeof line);
    cat(buf, len, at, "%s\n", line);
    return buf;
}

static const char *activity_name(int a) {
    static const char *n[] = {"running", "blocked", "stalled", "finished", "no_answer"};
    return a >= 0 && a <= LIVE_NO_ANSWER ? n[a] : "?";
}

cJSON *live_hang_json(const program *p, const live_rank_state *st, const live_hang *h, double watchdog_s) {
    cJSON *j = cJSON_CreateObject();
    char line[1024];
    cJSON_AddStringToObject(j, "format", "moesim-watchdog/1");
    cJSON_AddNumberToObject(j, "watchdog_s", watchdog_s);
    cJSON_AddNumberToObject(j, "culprit", h->culprit);
    if (h->culprit >= 0) cJSON_AddNumberToObject(j, "culprit_gpu", program_gpu_of_rank(p, h->culprit));
    cJSON_AddItemToObject(j, "culprits", cJSON_CreateIntArray(h->culprits, h->n_culprits));
    if (h->coll_rank >= 0) {
        program_op o;
        program_rank_op(p, h->coll_rank, h->coll_op, &o);
        cJSON *c = cJSON_AddObjectToObject(j, "collective");
        cJSON_AddStringToObject(c, "op", op_label(&o));
        cJSON_AddStringToObject(c, "phase", phase_name((op_phase)o.phase));
        cJSON_AddNumberToObject(c, "layer", o.layer);
        cJSON_AddNumberToObject(c, "mb", o.mb);
        cJSON_AddNumberToObject(c, "group", o.group);
        cJSON_AddStringToObject(c, "group_kind", group_kind_label(p->groups[o.group].kind));
        cJSON_AddNumberToObject(c, "instance", h->coll_instance);
        cJSON_AddItemToObject(c, "waiting", cJSON_CreateIntArray(h->waiting, h->n_waiting));
        cJSON_AddItemToObject(c, "missing", cJSON_CreateIntArray(h->missing, h->n_missing));
    }
    verdict(p, st, h, line, sizeof line);
    cJSON_AddStringToObject(j, "verdict", line);
    cJSON *ranks = cJSON_AddArrayToObject(j, "ranks");
    for (int r = 0; r < p->n_ranks; r++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", r);
        cJSON_AddNumberToObject(o, "gpu", program_gpu_of_rank(p, r));
        cJSON_AddStringToObject(o, "activity", activity_name(st[r].activity));
        if (st[r].activity != LIVE_NO_ANSWER) {
            cJSON_AddNumberToObject(o, "ops_done", st[r].n_done);
            cJSON_AddNumberToObject(o, "wait_collective_op", st[r].wait_coll_op);
            cJSON_AddNumberToObject(o, "wait_recv_op", st[r].wait_recv_op);
            cJSON_AddNumberToObject(o, "blocked_s", st[r].blocked_s);
        }
        live_rank_where(p, st, r, line, sizeof line);
        cJSON_AddStringToObject(o, "where", line);
        cJSON_AddItemToArray(ranks, o);
    }
    return j;
}

/* ---- trace ------------------------------------------------------------------------------------------------ */
static int traced(const op_time *t, const program_op *o) {
    return t->start_s >= 0 && o->kind != OP_RECV;
}

cJSON *live_trace_build(const program *p, const char *backend, int n_trace_ranks, const int *trace_ranks,
                        op_time *const *times, double *const *measured, double step_time_s,
                        const step_split *splits) {
    step_exec_result r;
    memset(&r, 0, sizeof r);
    r.step_time_s = step_time_s;
    r.n_ranks = p->n_ranks;
    r.n_trace_ranks = n_trace_ranks;
    r.trace_ranks = (int *)trace_ranks;
    r.trace_times = (op_time **)times;
    r.hang.culprit = -1;
    r.split = (step_split *)splits;
    cJSON *doc = step_trace_build(p, &r, "live");
    if (!doc) return NULL;
    cJSON *od = cJSON_GetObjectItem(doc, "otherData");
    if (!od) od = cJSON_AddObjectToObject(doc, "otherData");
    if (!cJSON_GetObjectItem(od, "source")) cJSON_AddStringToObject(od, "source", "live");
    cJSON_AddStringToObject(od, "backend", backend);
    cJSON_AddStringToObject(od, "time_semantics", "communication events span this rank's arrival to its completion");
    /* annotate events with what the live run really moved/computed: each event names its op index */
    cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
    cJSON *e;
    cJSON_ArrayForEach(e, ev) {
        cJSON *ph = cJSON_GetObjectItem(e, "ph"), *pid = cJSON_GetObjectItem(e, "pid");
        cJSON *args = cJSON_GetObjectItem(e, "args"), *opi = cJSON_GetObjectItem(args, "op");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") || !cJSON_IsNumber(pid) || !cJSON_IsNumber(opi)) continue;
        int k = 0;
        while (k < n_trace_ranks && trace_ranks[k] != pid->valueint) k++;
        if (k == n_trace_ranks) continue;
        int rank = trace_ranks[k], i = opi->valueint;
        if (i < 0 || i >= program_n_ops(p, rank)) continue;
        program_op o;
        program_rank_op(p, rank, i, &o);
        if (!traced(&times[k][i], &o)) continue;
        double m = measured ? measured[k][i] : NAN;
        if (isnan(m)) continue;
        if (o.kind == OP_COMPUTE) cJSON_AddNumberToObject(args, "live_tokens", m);
        else cJSON_AddNumberToObject(args, "live_bytes", m);
    }
    return doc;
}

cJSON *live_op_class_times(const program *p, int n_ranks, const int *ranks, op_time *const *times) {
    cJSON *j = cJSON_CreateObject();
    for (int k = 0; k < n_ranks; k++) {
        int n = program_n_ops(p, ranks[k]);
        for (int i = 0; i < n; i++) {
            program_op o;
            program_rank_op(p, ranks[k], i, &o);
            const op_time *t = &times[k][i];
            if (!traced(t, &o) || t->end_s < 0) continue;
            const char *name = op_label(&o);
            cJSON *c = cJSON_GetObjectItem(j, name);
            if (!c) {
                c = cJSON_AddObjectToObject(j, name);
                cJSON_AddNumberToObject(c, "count", 0);
                cJSON_AddNumberToObject(c, "total_s", 0);
                cJSON_AddNumberToObject(c, "mean_s", 0);
            }
            cJSON *cnt = cJSON_GetObjectItem(c, "count"), *tot = cJSON_GetObjectItem(c, "total_s");
            cJSON_SetNumberValue(cnt, cnt->valuedouble + 1);
            cJSON_SetNumberValue(tot, tot->valuedouble + (t->end_s - t->start_s));
        }
    }
    cJSON *c;
    cJSON_ArrayForEach(c, j) {
        double cnt = cJSON_GetObjectItem(c, "count")->valuedouble;
        cJSON_SetNumberValue(cJSON_GetObjectItem(c, "mean_s"), cnt > 0 ? cJSON_GetObjectItem(c, "total_s")->valuedouble / cnt : 0);
    }
    return j;
}
