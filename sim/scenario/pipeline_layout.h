/* pipeline_layout.h — which blocks each pipeline model stage holds (layout.pipeline_layout,
 * layout.first_stage_layers / last_stage_layers, or the even split).
 *
 * A model stage is one stage of the pipeline in data-flow order: pp of them for 1F1B and DualPipe,
 * pp x vpp for interleaved 1F1B (model stage k on pipeline rank k mod pp, as its chunk k / pp).
 *
 * layout.pipeline_layout is Megatron-LM's --pipeline-model-parallel-layout syntax (Megatron-LM
 * docs/api-guide/pipeline_parallel_layout.md): stages separated by '|', symbols E (embedding), t
 * (transformer block), m (multi-token-prediction module), L (loss: final norm and output head),
 * X*n repeats the symbol X or the parenthesised group (...) n times, commas and spaces are cosmetic,
 * empty stages are legal. "Et|(tt|)*30mL" is DeepSeek-V3 on PP8 x VP4 (32 stages: embedding and
 * block 0, then 30 stages of 2 blocks, then the MTP module and the loss); "E|(t|)*126L" is Llama 3
 * 405B on PP16 x VP8 (the first and last stages hold no block). A layout is valid when it has one
 * stage per model stage, exactly one E, at the start of the first stage, exactly one L, at the end
 * of the last, model.layers t's, model.mtp_layers m's, and no t after an m.
 *
 * Without a layout the blocks are split evenly: model stage k of n holds [k L / n, (k+1) L / n);
 * layout.first_stage_layers / last_stage_layers (Megatron's --decoder-first/last-pipeline-num-layers)
 * fix the blocks of the first / last pipeline RANK (over its chunks), the other ranks share the rest
 * evenly, and every rank's blocks are spread evenly over its chunks (Megatron's rule: each count
 * divisible by vpp, the rest by the remaining ranks). The embedding is on the first model stage, the
 * loss and the MTP modules on the last. */
#ifndef MOESIM_PIPELINE_LAYOUT_H
#define MOESIM_PIPELINE_LAYOUT_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

typedef struct {
    int layer_begin, layer_end;   /* transformer blocks [begin, end), 0-based */
    int mtp_begin, mtp_end;       /* MTP modules [begin, end), 0-based */
    int embed, loss;              /* bool */
} pl_stage;

typedef struct {
    int n;                        /* model stages */
    pl_stage *st;                 /* n of them, in data-flow order */
} pl_layout;

/* Model stages of the scenario's schedule: pp x vpp (interleaved) or pp. */
int pipeline_n_model_stages(const scenario *s);

/* Build and check the stages of `s`. Bad input -> EXIT_BADINPUT (path layout.pipeline_layout,
 * layout.first_stage_layers, layout.last_stage_layers or layout.vpp). out->st is malloc'd; free
 * with pipeline_layout_free (also after a failure). */
int pipeline_layout_build(const scenario *s, pl_layout *out, moe_error *err);
void pipeline_layout_free(pl_layout *pl);

#endif
