/* exec_full.c — the step program executed by SimGrid actors, every transfer a flow (see the header). */
#include "sim/simgrid/exec_full.h"
#include "sim/base/alloc.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/ring_flows.h"
#include "platforms/fabric_geometry.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/rail_fabric.h"
#include "sim/simgrid/rail_flows.h"
#include "sim/scenario/scenario_fields.h"

#include <simgrid/actor.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/mutex.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One instance of a collective: the k-th collective op of a group on every member. */
typedef struct {
    int n, arrived, finished;
    int total_left;         /* a2a: flows of all members still in flight (barrier mode) */
    int ring_done;          /* ring: members whose ring steps are done (barrier mode) */
    double min_arr, max_arr;
    int last_rank;
    int *left;              /* a2a: flows carrying data to member j still in flight (incl. unissued) */
    /* ring (ring_split.h): per member its successors in a step (-1: none) and the bytes to each, how
     * many predecessors it receives from per step, and the chunks it has received */
    int *succ[2];
    double *bytes[2];
    int *n_pred, *got;
    int steps;
    double extra_s;         /* NCCL's latency of the algorithm beyond the wire latency of the steps */
    sg_cond_t cond;
} instance;

typedef struct {
    instance **v;
    int cap;
} group_rt;

typedef struct {
    int rank, gpu, n_ops;
    program_op *ops;
    op_time *t;             /* per op: the timeline (s from the step start; end -1 until done) */
    double *busy;           /* per COMPUTE op: its priced duration (step_accounting.h) */
    double *stretch;        /* per COMPUTE op: its kernels' waits on the host inside its span */
    double *resume;         /* with a host model: per sync op of its stage, when its host resumed */
    unsigned char *resume_known;
    int stage;
    int *seq;               /* per op: instance index within its group (collectives) */
    int *tag_op;            /* tag -> RECV op index */
    double slow;
    sg_cond_t cond;         /* an op of this rank completed */
} rank_rt;

typedef struct {
    const program *p;
    const step_exec_opts *o;
    step_price_fn price;    /* step_pricing_resolve: the opts' pricing or the default's */
    void *price_ctx;
    step_pricing own_pricing;
    const cluster_cfg *c;
    rank_rt *r;
    group_rt *g;
    int *member;            /* rank * GROUP_NKINDS + kind -> index in its group */
    int *a2a_last;
    step_exec_result *res;
    sg_mutex_t mu;          /* actors are cooperative; conditions need a mutex all the same */
    double t0;              /* simulated clock at the step start */
    int n_tags, actors_left;
    int eager;              /* 1: a member issues its flows when it arrives (DeepEP's one-sided writes) */
    long executed;
    stage_host *hosts;      /* per stage (step_host.h), NULL without a host model */
} full_ctx;

typedef struct {
    full_ctx *x;
    int rank, stream;
} actor_arg;

static double now(const full_ctx *x) { return simgrid_get_clock() - x->t0; }

static int group_kind_of(const full_ctx *x, int g) { return (int)x->p->groups[g].kind; }
static int gpu_of_member(const full_ctx *x, int g, int m) { return program_gpu_of_rank(x->p, x->p->groups[g].ranks[m]); }

/* All-to-all payload i -> j in the dispatch-shaped view. Combine-direction patterns (is_combine) are
 * handled as program.h prescribes: their mirror image (transpose, node_bytes as rank i -> node k),
 * whose flows are then sent in reverse, which is exactly DeepEP's combine path (NVLink to the GPU on
 * the token owner's rail, one RDMA copy per node back to the owner). */
static double pay(const a2a_matrix *am, int n, int i, int j) {
    return am->is_combine ? am->bytes[(size_t)j * n + i] : am->bytes[(size_t)i * n + j];
}
static rail_xfer start_flow(const a2a_matrix *am, int src_gpu, int dst_gpu, double bytes) {
    if (am->is_combine) return rail_xfer_start(rail_fabric_gpu_host(dst_gpu), rail_fabric_gpu_host(src_gpu), bytes);
    return rail_xfer_start(rail_fabric_gpu_host(src_gpu), rail_fabric_gpu_host(dst_gpu), bytes);
}

static void mark_done(rank_rt *r, int i, double t) {
    r->t[i].end_s = t;
    sg_cond_notify_all(r->cond);
}

/* ---- collective instances ------------------------------------------------------------------------- */
static instance *instance_get(full_ctx *x, const program_op *o, int seq) {
    group_rt *G = &x->g[o->group];
    if (seq >= G->cap) {
        int cap = G->cap ? G->cap : 16;
        while (cap <= seq) cap *= 2;
        instance **v = moe_xrealloc(G->v, (size_t)cap, sizeof *v);
        memset(v + G->cap, 0, (size_t)(cap - G->cap) * sizeof *v);
        G->v = v;
        G->cap = cap;
    }
    if (G->v[seq]) return G->v[seq];
    /* Creating a condition is a simcall: this actor may yield there and another member may create
     * the instance meanwhile. Create it first, then build and publish the instance without yielding. */
    sg_cond_t cond = sg_cond_init();
    if (G->v[seq]) {
        sg_cond_destroy(cond);
        return G->v[seq];
    }
    const program *p = x->p;
    const int n = p->groups[o->group].n;
    instance *in = moe_xcalloc(1, sizeof *in);
    if (!in) abort();
    in->n = n;
    in->cond = cond;
    in->last_rank = -1;
    if (o->kind == OP_A2A_DISPATCH || o->kind == OP_A2A_COMBINE) {
        /* Count, per receiver, the flows that carry its data (see a2a_issue). */
        const a2a_matrix *am = &p->patterns[o->pattern];
        in->left = moe_xcalloc((size_t)n, sizeof(int));
        for (int i = 0; i < n; i++) {
            int gi = gpu_of_member(x, o->group, i), ni = fabric_domain_of(x->c, gi);
            for (int j = 0; j < n; j++) {
                if (i == j || pay(am, n, i, j) <= 0) continue;
                int gj = gpu_of_member(x, o->group, j), nj = fabric_domain_of(x->c, gj);
                if (nj == ni) { in->left[j]++; continue; }
                int landing = fabric_landing_gpu(x->c, gi, nj);
                in->left[j] += 1 + (gj != landing); /* the RDMA flow, and the fan-out unless it lands on j */
            }
        }
        for (int j = 0; j < n; j++) in->total_left += in->left[j];
    } else {
        int *gpus = moe_xmalloc((size_t)n * sizeof(int));
        for (int m = 0; m < n; m++) gpus[m] = gpu_of_member(x, o->group, m);
        coll_kind ck = o->kind == OP_REDUCE_SCATTER ? COLL_REDUCE_SCATTER
                     : o->kind == OP_ALL_GATHER     ? COLL_ALL_GATHER
                                                    : COLL_ALL_REDUCE;
        ring_plan rp = ring_plan_make(x->c, ck, gpus, n, o->bytes);
        /* NCCL's tree pipelines its chunks up and down: its bytes at its rate in one go (steps x a
         * ring step's over tree_bw), then its latency (ring_split.h) */
        in->steps = rp.tree && rp.steps > 0 ? 1 : rp.steps;
        in->n_pred = moe_xcalloc((size_t)n, sizeof(int));
        in->got = moe_xcalloc((size_t)n, sizeof(int));
        for (int k = 0; k < 2; k++) {
            in->succ[k] = moe_xmalloc((size_t)n * sizeof(int));
            in->bytes[k] = moe_xcalloc((size_t)n, sizeof(double));
            for (int m = 0; m < n; m++) in->succ[k][m] = -1;
        }
        gpu_flow_list fl = {0};
        double wire = 0;
        if (in->steps > 0 && ring_step_flows(x->c, gpus, n, &rp, &fl, &wire) == 0)
            for (size_t f = 0; f < fl.n; f++) {
                int a = -1, b = -1;
                for (int m = 0; m < n; m++) {
                    if (gpus[m] == fl.v[f].src_gpu) a = m;
                    if (gpus[m] == fl.v[f].dst_gpu) b = m;
                }
                if (a < 0 || b < 0) continue;
                int k = in->succ[0][a] < 0 ? 0 : 1;
                in->succ[k][a] = b;
                in->bytes[k][a] = fl.v[f].bytes * (rp.tree ? rp.steps * rp.tree_bw : 1.0);
                in->n_pred[b]++;
            }
        gpu_flow_list_free(&fl);
        /* the flows took the wire's latency once per step already */
        double lat = ring_split_latency_s(&rp, wire);
        in->extra_s = lat > in->steps * wire ? lat - in->steps * wire : 0.0;
        free(gpus);
    }
    G->v[seq] = in;
    return in;
}

static void instance_free(instance *in) {
    if (!in) return;
    free(in->left);
    for (int k = 0; k < 2; k++) {
        free(in->succ[k]);
        free(in->bytes[k]);
    }
    free(in->n_pred);
    free(in->got);
    sg_cond_destroy(in->cond);
    free(in);
}

/* A member's own a2a flows, DeepEP-style, issued now; returns when they and every flow carrying its
 * data have completed. */
typedef struct {
    rail_xfer x;
    int node;      /* RDMA: destination node (notifies its receivers); -1 for NVLink */
    int target;    /* NVLink: receiving member */
} a2a_flow;

static void a2a_issue(full_ctx *x, const program_op *o, instance *in, int me) {
    const program *p = x->p;
    const a2a_matrix *am = &p->patterns[o->pattern];
    const int n = in->n, g = o->group, gi = gpu_of_member(x, g, me), ni = fabric_domain_of(x->c, gi);
    /* the group's NVLink domains ("nodes" of DeepEP), ascending (node_bytes' second index) */
    int *nodes = moe_xmalloc((size_t)n * sizeof(int)), nn = 0;
    for (int m = 0; m < n; m++) {
        int nd = fabric_domain_of(x->c, gpu_of_member(x, g, m)), k = 0;
        while (k < nn && nodes[k] < nd) k++;
        if (k < nn && nodes[k] == nd) continue;
        memmove(nodes + k + 1, nodes + k, (size_t)(nn - k) * sizeof(int));
        nodes[k] = nd;
        nn++;
    }
    a2a_flow *f = moe_xcalloc((size_t)(n + nn), sizeof *f);
    rail_xfer *xs = moe_xcalloc((size_t)(n + nn), sizeof *xs);
    int nf = 0;
    for (int k = 0; k < nn; k++) {
        if (nodes[k] == ni) continue;
        double b = 0;
        if (am->node_bytes) b = am->node_bytes[(size_t)me * nn + k];
        else
            for (int j = 0; j < n; j++)
                if (j != me && fabric_domain_of(x->c, gpu_of_member(x, g, j)) == nodes[k]) b += pay(am, n, me, j);
        int any = 0;
        for (int j = 0; j < n; j++)
            any |= j != me && pay(am, n, me, j) > 0 && fabric_domain_of(x->c, gpu_of_member(x, g, j)) == nodes[k];
        if (!any) continue;
        int landing = fabric_landing_gpu(x->c, gi, nodes[k]);
        f[nf] = (a2a_flow){start_flow(am, gi, landing, b), nodes[k], -1};
        xs[nf] = f[nf].x;
        nf++;
    }
    for (int j = 0; j < n; j++) {
        double b = pay(am, n, me, j);
        if (j == me || b <= 0) continue;
        int gj = gpu_of_member(x, g, j), nj = fabric_domain_of(x->c, gj);
        int from = nj == ni ? gi : fabric_landing_gpu(x->c, gi, nj); /* direct, or fan-out from the landing GPU */
        if (from == gj) continue;                              /* landed on its receiver: no NVLink hop */
        f[nf] = (a2a_flow){start_flow(am, from, gj, b), -1, j};
        xs[nf] = f[nf].x;
        nf++;
    }
    for (int done = 0; done < nf; done++) {
        long k = rail_xfer_wait_any(xs, (size_t)nf);
        if (k < 0) break;
        if (f[k].node < 0) {
            in->left[f[k].target]--;
            in->total_left--;
        } else
            for (int j = 0; j < n; j++)
                if (j != me && pay(am, n, me, j) > 0 &&
                    fabric_domain_of(x->c, gpu_of_member(x, g, j)) == f[k].node) {
                    in->left[j]--;
                    in->total_left--;
                }
        sg_cond_notify_all(in->cond);
    }
    /* eager: done when my data is in; barrier: the all-to-all ends for everyone together */
    sg_mutex_lock(x->mu);
    while (x->eager ? in->left[me] > 0 : in->total_left > 0) sg_cond_wait(in->cond, x->mu);
    sg_mutex_unlock(x->mu);
    free(f);
    free(xs);
    free(nodes);
}

static void ring_run(full_ctx *x, const program_op *o, instance *in, int me) {
    const int g = o->group;
    sg_host_t self = rail_fabric_gpu_host(gpu_of_member(x, g, me));
    for (int s = 0; s < in->steps; s++) {
        /* step s forwards what arrived in step s - 1 from every predecessor */
        sg_mutex_lock(x->mu);
        while (in->got[me] < s * in->n_pred[me]) sg_cond_wait(in->cond, x->mu);
        sg_mutex_unlock(x->mu);
        rail_xfer xs[2];
        int nx = 0;
        for (int k = 0; k < 2; k++)
            if (in->succ[k][me] >= 0)
                xs[nx++] = rail_xfer_start(self, rail_fabric_gpu_host(gpu_of_member(x, g, in->succ[k][me])), in->bytes[k][me]);
        rail_xfer_wait_all(xs, (size_t)nx);
        for (int k = 0; k < 2; k++)
            if (in->succ[k][me] >= 0) in->got[in->succ[k][me]]++;
        sg_cond_notify_all(in->cond);
    }
    /* the last chunks must have reached me too; then NCCL's latency beyond the steps' wire latency */
    sg_mutex_lock(x->mu);
    while (in->got[me] < in->steps * in->n_pred[me]) sg_cond_wait(in->cond, x->mu);
    sg_mutex_unlock(x->mu);
    if (in->extra_s > 0) sg_actor_sleep_for(in->extra_s);
    if (!x->eager) { /* the collective ends for everyone together */
        in->ring_done++;
        sg_cond_notify_all(in->cond);
        sg_mutex_lock(x->mu);
        while (in->ring_done < in->n) sg_cond_wait(in->cond, x->mu);
        sg_mutex_unlock(x->mu);
    }
}

static void collective(full_ctx *x, rank_rt *r, int i, const program_op *o, double t_arr) {
    const int me = x->member[(size_t)r->rank * GROUP_NKINDS + group_kind_of(x, o->group)];
    instance *in = instance_get(x, o, r->seq[i]);
    if (in->arrived == 0 || t_arr < in->min_arr) in->min_arr = t_arr;
    if (in->arrived == 0 || t_arr > in->max_arr) {
        in->max_arr = t_arr;
        in->last_rank = r->rank;
    }
    const int is_a2a = o->kind == OP_A2A_DISPATCH || o->kind == OP_A2A_COMBINE;
    if (++in->arrived == in->n && is_a2a) {
        x->a2a_last[in->last_rank]++;
        double spread = in->max_arr - in->min_arr;
        if (spread > x->res->worst_a2a.spread_s) {
            x->res->worst_a2a.spread_s = spread;
            x->res->worst_a2a.group = o->group;
            x->res->worst_a2a.layer = o->layer;
            x->res->worst_a2a.mb = o->mb;
            x->res->worst_a2a.last_rank = in->last_rank;
            x->res->worst_a2a.start_s = in->max_arr;
        }
    }
    if (!x->eager) { /* program.h: the collective starts when the last member arrives */
        sg_cond_notify_all(in->cond);
        sg_mutex_lock(x->mu);
        while (in->arrived < in->n) sg_cond_wait(in->cond, x->mu);
        sg_mutex_unlock(x->mu);
    }
    if (is_a2a) a2a_issue(x, o, in, me);
    else ring_run(x, o, in, me);
    if (++in->finished == in->n) {
        x->g[o->group].v[r->seq[i]] = NULL;
        instance_free(in);
    }
}

/* ---- one actor per (rank, stream) ----------------------------------------------------------------- */
static void wait_done(full_ctx *x, rank_rt *r, int j) {
    sg_mutex_lock(x->mu);
    while (r->t[j].end_s < 0) sg_cond_wait(r->cond, x->mu);
    sg_mutex_unlock(x->mu);
}

/* When rank r's host resumes after its sync op sp (step_host.h): once sp has ended (an op sync), or
 * every op up to it (a device sync). Worked out once; the ops before the last device sync ended before
 * it resumed, no later than sp's own host end. */
static double host_resume(full_ctx *x, rank_rt *r, const stage_host *h, int sp) {
    int ord = h->sync_ord[sp];
    if (r->resume_known[ord]) return r->resume[ord];
    int from = h->sync_kind[sp] == HOST_SYNC_DEVICE ? h->dev_prev[sp] + 1 : sp;
    double m = 0;
    for (int j = from; j <= sp; j++) {
        wait_done(x, r, j);
        if (r->t[j].end_s > m) m = r->t[j].end_s;
    }
    int prev = h->sync_prev[sp];
    double e = step_host_end(h, sp, prev >= 0 ? host_resume(x, r, h, prev) : 0.0);
    r->resume[ord] = step_host_resume(h, e, m);
    r->resume_known[ord] = 1;
    return r->resume[ord];
}

static void stream_actor(int argc, char **argv) {
    (void)argc;
    (void)argv;
    actor_arg *a = sg_actor_self_get_data();
    full_ctx *x = a->x;
    rank_rt *r = &x->r[a->rank];
    const program *p = x->p;
    const stage_host *h = x->hosts ? &x->hosts[r->stage] : NULL;
    for (int i = 0; i < r->n_ops; i++) {
        const program_op *o = &r->ops[i];
        if (o->kind == OP_RECV || o->stream != a->stream) continue;
        for (int k = 0; k < o->n_deps; k++) wait_done(x, r, o->deps[k]);
        double host_end = 0;
        if (h) {
            int sp = h->sync_prev[i];
            host_end = step_host_end(h, i, sp >= 0 ? host_resume(x, r, h, sp) : 0.0);
            /* a collective or a send starts once issued; a compute op's span is worked out below */
            if (o->kind != OP_COMPUTE && host_end > now(x)) sg_actor_sleep_for(host_end - now(x));
        }
        double t_start = now(x);
        double t_end;
        if (o->kind == OP_COMPUTE) {
            double dur = x->price(x->price_ctx, p, r->rank, o) * r->slow;
            if (h) {
                double t0, t1;
                r->stretch[i] = step_host_compute_span(t_start, host_end, h->issue_s[i], h->kernels[i], dur, &t0, &t1);
                if (t1 > t_start) sg_actor_sleep_for(t1 - t_start);
                t_start = t0;
                t_end = t1;   /* the span as the host model has it (the clock's reading is within an ulp) */
            } else {
                if (dur > 0) sg_actor_sleep_for(dur);
                t_end = now(x);
            }
            r->busy[i] = dur;
        } else if (o->kind == OP_SEND) {
            int dst_gpu = program_gpu_of_rank(p, o->peer);
            rail_xfer_wait(rail_xfer_start(rail_fabric_gpu_host(r->gpu), rail_fabric_gpu_host(dst_gpu), o->bytes));
            t_end = now(x);
            rank_rt *peer = &x->r[o->peer];
            int j = o->tag >= 0 && o->tag < x->n_tags ? peer->tag_op[o->tag] : -1;
            if (j >= 0) {
                peer->t[j].start_s = t_end;
                mark_done(peer, j, t_end);
            }
        } else {
            collective(x, r, i, o, t_start);
            t_end = now(x);
        }
        r->t[i].start_s = t_start;
        if ((++x->executed & (STEP_PROGRESS_OPS - 1)) == 0 && x->o->progress) x->o->progress(x->o->progress_ctx, x->executed);
        mark_done(r, i, t_end);
    }
    x->actors_left--;
}

/* ---- setup and results ---------------------------------------------------------------------------- */
int sg_exec_full_run(const program *p, const step_exec_opts *o, step_exec_result *res, moe_error *err) {
    return sg_exec_full_run_mode(p, o, SG_FULL_BARRIER, res, err);
}

int sg_exec_full_run_mode(const program *p, const step_exec_opts *o, sg_full_mode mode, step_exec_result *res,
                          moe_error *err) {
    memset(res, 0, sizeof *res);
    const scenario *s = p->scn;
    const int G = scn_gpus(s);
    if (G > SG_FULL_MAX_GPUS) {
        char v[32];
        snprintf(v, sizeof v, "%d GPUs", G);
        return moe_error_input(err, s->file, "step.fidelity", v,
                               "a cluster of at most %d GPUs for \"full\" (every transfer is simulated); use \"fast\"",
                               SG_FULL_MAX_GPUS);
    }
    if (p->faults.n_stalled_ranks > 0)
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s%sfaults.stalls: not supported by step.fidelity \"full\" (a stalled rank would leave "
                             "the other ranks' SimGrid actors blocked for good); use \"fast\", which runs the stall "
                             "and names the culprit", s->file, s->file[0] ? ": " : "");
    if (s->step.a2a != A2A_IMPL_DEEPEP)
        return moe_error_input(err, s->file, "step.a2a", scn_a2a_impl_names[s->step.a2a],
                               "\"deepep\" with step.fidelity \"full\" (its all-to-all issues DeepEP's flows); use "
                               "\"fast\" for NCCL's pairwise all-to-all");
    if (s->faults.collective_timeout_s > 0)
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s%sfaults.collective_timeout_s: not supported by step.fidelity \"full\"; use \"fast\", "
                             "which times every rank's wait inside its collectives", s->file, s->file[0] ? ": " : "");
    scenario fab;
    if (sg_fabric_scenario(s, &fab, err) || rail_fabric_init(&fab, err)) return err->code;
    full_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.o = o;
    x.price = step_pricing_resolve(o, p, &x.own_pricing, &x.price_ctx);
    x.c = rail_fabric_cluster();
    x.res = res;
    x.mu = sg_mutex_init();
    x.eager = mode == SG_FULL_EAGER;
    x.n_tags = p->n_tags;
    res->worst_a2a.group = -1;
    res->worst_a2a.spread_s = -1;
    const int R = p->n_ranks;
    x.r = moe_xcalloc((size_t)R, sizeof *x.r);
    x.g = moe_xcalloc((size_t)p->n_groups, sizeof *x.g);
    x.member = moe_xmalloc((size_t)R * GROUP_NKINDS * sizeof(int));
    x.a2a_last = moe_xcalloc((size_t)R, sizeof(int));
    for (int g = 0; g < p->n_groups; g++)
        for (int m = 0; m < p->groups[g].n; m++)
            x.member[(size_t)p->groups[g].ranks[m] * GROUP_NKINDS + p->groups[g].kind] = m;

    int *count = moe_xcalloc((size_t)p->n_groups, sizeof(int)); /* per-rank scratch: collectives seen per group */
    for (int r = 0; r < R; r++) {
        rank_rt *rr = &x.r[r];
        rr->rank = r;
        rr->gpu = program_gpu_of_rank(p, r);
        rr->n_ops = program_materialize(p, r, &rr->ops);
        rr->t = moe_xmalloc((size_t)(rr->n_ops + 1) * sizeof(op_time));
        rr->busy = moe_xcalloc((size_t)(rr->n_ops + 1), sizeof(double));
        rr->stretch = moe_xcalloc((size_t)(rr->n_ops + 1), sizeof(double));
        {
            int d_, e_, t_;
            program_coords(p, r, &d_, &rr->stage, &e_, &t_);
        }
        rr->seq = moe_xmalloc((size_t)(rr->n_ops + 1) * sizeof(int));
        rr->tag_op = moe_xmalloc((size_t)(x.n_tags + 1) * sizeof(int));
        for (int t = 0; t < x.n_tags; t++) rr->tag_op[t] = -1;
        for (int i = 0; i < rr->n_ops; i++) {
            const program_op *op = &rr->ops[i];
            rr->t[i] = (op_time){-1, -1};
            rr->seq[i] = -1;
            if (op->kind == OP_RECV && op->tag >= 0 && op->tag < x.n_tags) rr->tag_op[op->tag] = i;
            else if (op->kind != OP_COMPUTE && op->kind != OP_SEND && op->group >= 0) rr->seq[i] = count[op->group]++;
        }
        for (int i = 0; i < rr->n_ops; i++)
            if (rr->seq[i] >= 0) count[rr->ops[i].group] = 0;
        rr->slow = p->faults.compute_factor[r] * p->faults.speed_factor[r];
        rr->cond = sg_cond_init();
    }
    free(count);

    if (o->host) {
        x.hosts = step_host_build(p, o->host, o->host_ctx, o->host_sync_s);
        for (int r = 0; r < R; r++) {
            x.r[r].resume = moe_xcalloc((size_t)x.hosts[x.r[r].stage].n_sync + 1, sizeof(double));
            x.r[r].resume_known = moe_xcalloc((size_t)x.hosts[x.r[r].stage].n_sync + 1, 1);
        }
    }
    actor_arg *args = moe_xmalloc((size_t)R * STREAM_N * sizeof *args);
    x.t0 = simgrid_get_clock();
    for (int r = 0; r < R; r++)
        for (int st = 0; st < STREAM_N; st++) {
            char name[48];
            snprintf(name, sizeof name, "rank%d-%s", r, stream_name((stream_kind)st));
            args[r * STREAM_N + st] = (actor_arg){&x, r, st};
            sg_actor_t a = sg_actor_init(name, rail_fabric_gpu_host(x.r[r].gpu));
            sg_actor_set_data(a, &args[r * STREAM_N + st]);
            sg_actor_set_stacksize(a, 256 * 1024);
            sg_actor_start(a, stream_actor, 0, NULL);
            x.actors_left++;
        }
    simgrid_run();

    int rc = 0;
    if (x.actors_left != 0) { /* name the first stuck op, as the fast executor does */
        for (int r = 0; r < R && rc == 0; r++)
            for (int i = 0; i < x.r[r].n_ops; i++) {
                const program_op *op = &x.r[r].ops[i];
                if (x.r[r].t[i].end_s >= 0) continue;
                rc = moe_error_set(err, EXIT_RUNTIME,
                                   "full-fidelity step deadlocked (%d stream actors blocked): rank %d stuck on op %d %s %s "
                                   "(layer %d, mb %d, group %d, seq %d, stream %s)",
                                   x.actors_left, r, i, op_kind_name((op_kind)op->kind), kernel_name((kernel_kind)op->kernel),
                                   op->layer, op->mb, op->group, x.r[r].seq[i], stream_name((stream_kind)op->stream));
                break;
            }
    }
    if (rc == 0) {
        double step = 0;
        for (int r = 0; r < R; r++)
            for (int i = 0; i < x.r[r].n_ops; i++)
                if (x.r[r].t[i].end_s > step) step = x.r[r].t[i].end_s;
        res->step_time_s = step;
        res->n_ranks = R;
        res->n_simulated_ranks = R;
        res->n_simulated_replicas = p->dp;
        res->split = moe_xcalloc((size_t)R, sizeof *res->split);
        res->sim_rank = moe_xcalloc((size_t)R, sizeof(int));
        res->a2a_last_count = moe_xcalloc((size_t)R, sizeof(int));
        for (int r = 0; r < R; r++) {
            rank_rt *rr = &x.r[r];
            step_split_rank(rr->ops, rr->n_ops, rr->t, rr->busy, rr->stretch, step, &res->split[r]);
            res->sim_rank[r] = r;
            res->a2a_last_count[r] = x.a2a_last[r];
        }
        res->slowest_rank = step_split_slowest_rank(res->split, R);
        res->timelines = moe_xcalloc((size_t)R, sizeof(op_time *));
        for (int r = 0; r < R; r++) { res->timelines[r] = x.r[r].t; x.r[r].t = NULL; }
        step_exec_trace(p, res, o->n_trace_ranks, o->trace_ranks);
        if (o->keep_timelines && x.hosts) {
            res->hosts = x.hosts;
            res->n_host_stages = p->pp;
            x.hosts = NULL;
        }
        if (!o->keep_timelines) {
            for (int r = 0; r < R; r++) free(res->timelines[r]);
            free(res->timelines);
            res->timelines = NULL;
        }
        res->n_ops_executed = x.executed;
    }

    for (int r = 0; r < R; r++) {
        free(x.r[r].ops);
        free(x.r[r].t);
        free(x.r[r].busy);
        free(x.r[r].stretch);
        free(x.r[r].resume);
        free(x.r[r].resume_known);
        free(x.r[r].seq);
        free(x.r[r].tag_op);
        sg_cond_destroy(x.r[r].cond);
    }
    for (int g = 0; g < p->n_groups; g++) {
        for (int k = 0; k < x.g[g].cap; k++) instance_free(x.g[g].v[k]);
        free(x.g[g].v);
    }
    sg_mutex_destroy(x.mu);
    free(x.r);
    free(x.g);
    free(x.member);
    free(x.a2a_last);
    step_pricing_free(&x.own_pricing);
    step_host_free(x.hosts, p->pp);
    free(args);
    return rc;
}
