/* schedule.h — pipeline schedules: for one pipeline stage, the order in which it runs the
 * (micro-batch, chunk, phase) work items of a step. sim/program/program.c turns that order into ops; no other
 * file contains schedule logic (DESIGN.md: the simulator and the live executor share it).
 *
 *   1F1B         (PipeDream-flush / Megatron): warm-up of p-s-1 forwards, then one-forward-one-
 *                backward, then cool-down. Bubble (p-1)/(m+p-1) (REFERENCE.md §4). Backward = B+W.
 *   interleaved  (Megatron virtual pipeline, v chunks per rank, model stage c*p+s on rank s): bubble
 *                (p-1)/(v*m+p-1). Needs m % p == 0 (Megatron's grouping of p micro-batches).
 *   a2a overlap  (layout.moe_a2a_overlap, 1F1B and interleaved: Megatron's
 *                overlap_moe_expert_parallel_comm) every steady-state F is paired with the B that
 *                follows it (overlap_next), as DualPipe pairs them, so that the program interleaves
 *                the two and each one's all-to-alls run under the other's compute. 1F1B gives
 *                every stage one more forward of warm-up (interleaved: at least one), so that a pair
 *                never waits on a forward its own interleaving holds back on another stage.
 *   DualPipe     (DeepSeek-V3): two pipelines in opposite directions; rank s holds model stage s of
 *                the "down" pipeline (chunk 0, micro-batches 0..m/2-1) and model stage p-1-s of the
 *                "up" pipeline (chunk 1, micro-batches m/2..m-1): 2x parameters. In its steady state
 *                the forward of one micro-batch is paired with the backward of another (items with
 *                `overlap_next`), and the program generator interleaves the two so that each one's
 *                all-to-alls run on the comm stream under the other's compute. Weight gradients are
 *                deferred (zero-bubble W items) where the reference schedule does so. Needs p even,
 *                m even and m >= 2p. The order follows the step function of DeepSeek's published
 *                DualPipe reference schedule (phases nF0, nF0F1, nB1W1F1, nF0B1F1B0, nB1F1B0, nB1B0,
 *                nWB0, nW), re-derived here.
 */
#ifndef MOESIM_SCHEDULE_H
#define MOESIM_SCHEDULE_H

#include <stdint.h>
#include "sim/scenario/scenario.h"
#include "sim/base/errors.h"

typedef enum {
    SI_F = 0,      /* forward */
    SI_B,          /* backward for inputs (and, when `with_w`, weights too) */
    SI_W           /* deferred backward for weights of an earlier SI_B with with_w == 0 */
} sched_phase;

typedef struct {
    int32_t mb;          /* micro-batch (global index 0..m-1) */
    uint8_t chunk;       /* model stage held by this rank: see the schedule descriptions */
    uint8_t phase;       /* sched_phase */
    uint8_t with_w;      /* SI_B: 1 = weight gradients computed right after (no deferred W) */
    uint8_t overlap_next;/* 1 = this item and the next run as an overlapped F/B pair (DualPipe) */
} sched_item;

typedef struct {
    schedule_kind kind;
    int pp, vpp, m;      /* stages, chunks per rank (interleaved), micro-batches */
    int n_chunks;        /* model stages per rank: 1 (1F1B), vpp (interleaved), 2 (DualPipe) */
    int a2a_overlap;     /* 1F1B / interleaved: pair each steady-state F with the B after it
                            (overlap_next), at least one forward of warm-up on every stage */
} schedule_spec;

/* Check (kind, pp, vpp, m); fills err (path "layout.schedule" / "layout.vpp" / "layout.global_batch")
 * and returns non-zero when the schedule cannot run that shape. */
int schedule_check(const schedule_spec *sp, const char *file, moe_error *err);

/* The ordered items of pipeline stage `stage`. *items is malloc'd; returns the count (or -1). Every
 * (mb, chunk) that the stage runs appears exactly once as SI_F and once as SI_B, and once as SI_W
 * when its SI_B has with_w == 0. */
int schedule_stage(const schedule_spec *sp, int stage, sched_item **items);

/* Model stage (0 .. n_model_stages-1, in data-flow order of micro-batch `mb`) of chunk `chunk` on
 * pipeline stage `stage`, and the number of model stages. */
int schedule_model_stage(const schedule_spec *sp, int stage, int chunk, int mb);
int schedule_n_model_stages(const schedule_spec *sp);
/* Inverse: the pipeline stage and chunk that hold model stage `ms` for micro-batch `mb`. */
void schedule_locate(const schedule_spec *sp, int ms, int mb, int *stage, int *chunk);

const char *schedule_name(schedule_kind k);

#endif
