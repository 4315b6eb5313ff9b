/* pipeline_forms.h — closed forms of pipeline-parallel schedules (REFERENCE.md §4): how layers are
 * split over stages, how many micro-batches of activations a stage keeps in flight, and the bubble of
 * 1F1B, interleaved 1F1B and DualPipe. Used by the plan level; the step level simulates the same
 * schedules op by op and its tests hold it to these formulas. */
#ifndef MOESIM_PIPELINE_FORMS_H
#define MOESIM_PIPELINE_FORMS_H

#include "sim/plan/model.h"
#include "sim/scenario/scenario.h"


/* What one pipeline position holds (1F1B and DualPipe: model stage `stage`, whose mirror a DualPipe
 * rank also holds; interleaved: the vpp chunks of pipeline rank `stage`), from the scenario's
 * pipeline layout (sim/scenario/pipeline_layout.h). */
typedef struct {
    int n_kind[LAYER_NKINDS];  /* transformer blocks of each kind */
    int n_dense, n_moe;        /* the same by FFN kind */
    int embed, loss;           /* holds the embedding / the loss (final norm and head) */
    int mtp;                   /* MTP modules it holds */
} stage_census;

/* Census of every pipeline position 0..pp-1 into out[pp]. 0, or EXIT_BADINPUT for a layout that
 * scenario_validate would reject (err filled). */
int pipeline_census(const scenario *s, stage_census *out, moe_error *err);

/* Bubble fraction of 1F1B with p stages and m micro-batches: (p - 1) / (m + p - 1). */
double bubble_1f1b(int p, int m);
/* Interleaved 1F1B with v model chunks per rank: (p - 1) / (v m + p - 1). */
double bubble_interleaved(int p, int m, int v);
/* DualPipe bubble time (DeepSeek-V3 report, Table 2): (p/2 - 1) (F&B + B - 3W), with B the time of
 * a full backward chunk, W of a backward-for-weights chunk and F&B of a mutually overlapped forward
 * and backward chunk pair (the DualPipe README's definitions). Never negative (p <= 2: no bubble). */
double bubble_dualpipe_s(int p, double B, double W, double FB);

/* Micro-batches of activations stage `stage` holds at its peak:
 *   1F1B:        min(m, p - stage)                 (the first stage holds p)
 *   interleaved: min(m, p - stage) x (1 + (p - 1)/(p v))   (Korthikanti et al. 2022, §4.2.3)
 *   DualPipe:    min(m, p + 1) on every rank        (DeepSeek-V3 report, Table 2)
 * Unit: one micro-batch through the stage's layers (for DualPipe: through one of its two stages). */
double inflight_microbatches(schedule_kind sched, int p, int m, int v, int stage);
/* The same for a layout: with layout.moe_a2a_overlap, 1F1B holds one more micro-batch (its warm-up
 * has one more forward, schedule.h). */
double inflight_microbatches_of(const layout_cfg *lay, int m, int stage);

#endif
