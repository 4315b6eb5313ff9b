/* pipeline_forms.c — closed forms of pipeline schedules (see pipeline_forms.h). */
#include "sim/plan/pipeline_forms.h"

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

void stage_layer_range(int layers, int pp, int stage, int *first, int *end) {
    *first = (int)((long)stage * layers / pp);
    *end = (int)((long)(stage + 1) * layers / pp);
}

void stage_layers(int layers, int dense_layers, int pp, int stage, int *n_dense, int *n_moe) {
    int lo, hi;
    stage_layer_range(layers, pp, stage, &lo, &hi);
    int d = imax(0, imin(hi, dense_layers) - lo);
    *n_dense = d;
    *n_moe = hi - lo - d;
}

void stage_layer_kinds(const model_cfg *m, int pp, int stage, int n[LAYER_NKINDS]) {
    int lo, hi;
    stage_layer_range(m->layers, pp, stage, &lo, &hi);
    for (int k = 0; k < LAYER_NKINDS; k++) n[k] = 0;
    for (int l = lo; l < hi; l++) n[model_layer_kind(m, l)]++;
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

double inflight_microbatches(schedule_kind sched, int p, int m, int v, int stage) {
    switch (sched) {
    case SCHED_DUALPIPE: return (double)imin(m, p + 1);
    case SCHED_INTERLEAVED:
        return imin(m, p - stage) * (1.0 + (double)(p - 1) / ((double)p * (v > 0 ? v : 1)));
    case SCHED_1F1B:
    default: return (double)imin(m, p - stage);
    }
}
