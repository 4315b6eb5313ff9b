/* step_host.c — the host side of a step program (semantics in step_host.h). */
#include "sim/exec/step_host.h"

#include <stdlib.h>

#include "sim/base/alloc.h"

stage_host *step_host_build(const program *p, step_host_fn fn, void *ctx, double sync_s) {
    stage_host *hs = moe_xcalloc((size_t)p->pp + 1, sizeof *hs);
    for (int s = 0; s < p->pp; s++) {
        stage_host *h = &hs[s];
        int n = p->stage_n_ops[s];
        h->n_ops = n;
        h->sync_s = sync_s;
        h->H = moe_xmalloc((size_t)(n + 1) * sizeof(double));
        h->issue_s = moe_xmalloc((size_t)(n + 1) * sizeof(double));
        h->kernels = moe_xmalloc((size_t)(n + 1) * sizeof(double));
        h->sync_prev = moe_xmalloc((size_t)(n + 1) * sizeof(int));
        h->sync_ord = moe_xmalloc((size_t)(n + 1) * sizeof(int));
        h->sync_kind = moe_xmalloc((size_t)(n + 1));
        h->dev_prev = moe_xmalloc((size_t)(n + 1) * sizeof(int));
        double H = 0;
        int last = -1, last_dev = -1;
        for (int i = 0; i < n; i++) {
            host_op o = fn(ctx, p, s, i, &p->stage_ops[s][i]);
            H += o.issue_s;
            h->H[i] = H;
            h->issue_s[i] = o.issue_s;
            h->kernels[i] = o.kernels >= 1 ? o.kernels : 1;
            h->sync_prev[i] = last;
            h->dev_prev[i] = last_dev;
            h->sync_kind[i] = (unsigned char)o.sync;
            h->sync_ord[i] = o.sync ? h->n_sync++ : -1;
            if (o.sync) last = i;
            if (o.sync == HOST_SYNC_DEVICE) last_dev = i;
        }
    }
    return hs;
}

void step_host_free(stage_host *h, int n) {
    if (!h) return;
    for (int s = 0; s < n; s++) {
        free(h[s].H); free(h[s].issue_s); free(h[s].kernels); free(h[s].sync_prev); free(h[s].sync_ord);
        free(h[s].sync_kind); free(h[s].dev_prev);
    }
    free(h);
}

void step_host_spans(const stage_host *h, const op_time *t, size_t stride, double *host_start, double *host_end) {
    /* resume of the last sync met; the latest end of ops 0..i, and whether one of them never ended */
    double resume = 0, max_end = 0;
    int stopped = 0, unfinished = 0;
    for (int i = 0; i < h->n_ops; i++) {
        if (stopped) { host_start[i] = host_end[i] = -1; continue; }
        double e = step_host_end(h, i, resume), g = t[(size_t)i * stride].end_s;
        host_end[i] = e;
        host_start[i] = e - h->issue_s[i];
        if (g < 0) unfinished = 1;
        else if (g > max_end) max_end = g;
        if (h->sync_kind[i] == HOST_SYNC_OP) {
            if (g < 0) stopped = 1;
            else resume = step_host_resume(h, e, g);
        } else if (h->sync_kind[i] == HOST_SYNC_DEVICE) {
            if (unfinished) stopped = 1;
            else resume = step_host_resume(h, e, max_end);
        }
    }
}

/* ---- the default host side (sim/plan/host_costs.h) --------------------------------------------------- */
int step_host_pricing_init(step_host_pricing *hp, const program *p) {
    const scenario *s = p->scn;
    int local = p->slots_per_rank > 0 ? p->slots_per_rank : (s->model.experts > 0 && p->ep > 0 ? s->model.experts / p->ep : 0);
    host_price_table_build(s, local, &hp->tab);
    return hp->tab.enabled;
}

static layer_kind op_layer_kind(const program *p, const program_op *o) {
    return o->layer == OP_NO_LAYER ? LAYER_DENSE : model_layer_kind(&p->scn->model, o->layer);
}

/* Is op o inside a CUDA graph? */
static int op_captured(const host_price_table *t, const program *p, const program_op *o) {
    return o->kind == OP_COMPUTE && t->captured[op_layer_kind(p, o)][o->kernel];
}

/* Parameter tensors a rank updates in its optimizer step (TE: attention's projections and norms, a
 * dense MLP's two matrices and norm, a MoE layer's router, one weight per expert per matrix
 * (GroupedLinear weight0..E-1) and the shared experts'), for the optimizer's per-tensor host loops: the
 * blocks of an average rank (its chunks' share of the model's blocks), the optimizer being one op a
 * step whose host cost only its order of magnitude matters for. */
static double rank_tensors(const program *p, int local_experts) {
    const model_cfg *m = &p->scn->model;
    double blocks = (double)m->layers * p->n_chunks / (p->n_model_stages > 0 ? p->n_model_stages : 1);
    double moe_share = m->layers > 0 ? (double)model_moe_layers(m) / m->layers : 0;
    double per_block = (m->attention == ATTN_MLA ? 9 : 6) +
                       moe_share * (2 + 2.0 * local_experts + (m->shared_experts > 0 ? 2 : 0)) + (1 - moe_share) * 3;
    return 2 + blocks * per_block;
}

host_op step_host_costmodel(void *ctx, const program *p, int stage, int i, const program_op *o) {
    const step_host_pricing *hp = ctx;
    const host_price_table *t = &hp->tab;
    host_op h = {.issue_s = 0, .kernels = 1, .sync = HOST_SYNC_NONE};
    host_work w = {0, 0, 0};
    switch (o->kind) {
    case OP_COMPUTE:
        if (o->kernel == K_OPTIMIZER) {
            int local = p->slots_per_rank > 0 ? p->slots_per_rank
                        : (p->scn->model.experts > 0 && p->ep > 0 ? p->scn->model.experts / p->ep : 0);
            w = host_optimizer_work(p->scn, rank_tensors(p, local), o->flops / 12.0);
        } else {
            w = t->op[op_layer_kind(p, o)][o->kernel];
        }
        if (o->kernel == t->sync_kernel && o->phase == PHASE_F) h.sync = HOST_SYNC_OP;
        break;
    case OP_A2A_DISPATCH: case OP_A2A_COMBINE: w = t->a2a; break;
    case OP_REDUCE_SCATTER: case OP_ALL_GATHER: case OP_ALL_REDUCE: w = t->collective; break;
    case OP_SEND:
        w = t->p2p;
        if (t->device_sync_p2p) h.sync = HOST_SYNC_DEVICE;
        break;
    case OP_RECV:
        if (t->device_sync_p2p) h.sync = HOST_SYNC_DEVICE;   /* posted with its send, then synchronized */
        break;
    default: break;
    }
    h.kernels = w.kernels >= 1 ? w.kernels : 1;
    h.issue_s = host_issue_s(&t->par, w);
    if (op_captured(t, p, o)) {
        /* one graph launch for a region of consecutive captured ops of one layer and micro-batch */
        const program_op *prev = i > 0 ? &p->stage_ops[stage][i - 1] : NULL;
        int cont = prev && op_captured(t, p, prev) && prev->layer == o->layer && prev->mb == o->mb &&
                   prev->chunk == o->chunk && (prev->phase == PHASE_F) == (o->phase == PHASE_F);
        h.issue_s = cont ? 0 : t->par.graph_launch_s;
        h.kernels = 1;
    }
    return h;
}
