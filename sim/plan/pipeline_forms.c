/* pipeline_forms.c — closed forms of pipeline schedules (see pipeline_forms.h). */
#include "sim/plan/pipeline_forms.h"
#include "sim/scenario/schedule_rules.h"

#include <string.h>

#include "sim/scenario/pipeline_layout.h"

static int imin(int a, int b) { return a < b ? a : b; }

int pipeline_census(const scenario *s, stage_census *out, moe_error *err) {
    int pp = s->layout.pp;
    memset(out, 0, (size_t)pp * sizeof *out);
    pl_layout pl;
    int rc = pipeline_layout_build(s, &pl, err);
    if (rc) { pipeline_layout_free(&pl); return rc; }
    int interleaved = pl.n > pp;
    for (int k = 0; k < pl.n; k++) {
        const pl_stage *st = &pl.st[k];
        stage_census *c = &out[interleaved ? k % pp : k];
        for (int l = st->layer_begin; l < st->layer_end; l++) {
            layer_kind lk = model_layer_kind(&s->model, l);
            c->n_kind[lk]++;
            if (layer_kind_is_moe(lk)) c->n_moe++;
            else c->n_dense++;
        }
        c->embed |= st->embed;
        c->loss |= st->loss;
        c->mtp += st->mtp_end - st->mtp_begin;
    }
    pipeline_layout_free(&pl);
    return 0;
}

double bubble_1f1b(int p, int m) { return (double)(p - 1) / (double)(m + p - 1); }

double bubble_interleaved(int p, int m, int v) {
    return (double)(p - 1) / ((double)v * m + p - 1);
}

double bubble_dualpipe_s(int p, double B, double W, double FB) {
    double k = 0.5 * p - 1.0;
    double t = k * (FB + B - 3.0 * W);
    return (k > 0 && t > 0) ? t : 0.0;
}

double inflight_microbatches_of(const layout_cfg *lay, int m, int stage) {
    schedule_kind run = scn_schedule_run(lay);
    int extra = lay->moe_a2a_overlap && run == SCHED_1F1B;
    return inflight_microbatches(run, lay->pp + extra, m, lay->vpp, stage);
}

double inflight_microbatches(schedule_kind sched, int p, int m, int v, int stage) {
    switch (sched) {
    case SCHED_DUALPIPE: return (double)imin(m, p + 1);
    case SCHED_INTERLEAVED:
        return imin(m, p - stage) * (1.0 + (double)(p - 1) / ((double)p * (v > 0 ? v : 1)));
    case SCHED_1F1B:
    default: return (double)imin(m, p - stage);
    }
}
