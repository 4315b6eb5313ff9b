/* schedule_rules.h — what a layout's pipeline schedule is and which shapes it can run: one rule for
 * the scenario's validation, the plan's formulas and the step program's schedule generator
 * (sim/program/schedule.h).
 *
 * DualPipe (DeepSeek-V3 report, arXiv 2412.19437 §3.2.1) feeds micro-batches from both ends of the
 * pipeline: the reference implementation (github deepseek-ai/DualPipe, dualpipe/dualpipe.py, step())
 * asserts an even number of ranks and an even number of chunks, at least twice the ranks (its main
 * phase runs half_num_chunks - num_ranks + half_rank + 1 >= 1 times). With one stage there is no
 * pipeline: the layout runs 1F1B (DualPipe's default at pp = 1 is no error, and no pairing of forward
 * and backward either: layout.moe_a2a_overlap is what pairs them then).
 * The interleaved 1F1B generator runs micro-batches in groups of pp (Megatron-LM's interleaved
 * schedule before microbatch_group_size_per_vp_stage): their count must be a multiple of pp. */
#ifndef MOESIM_SCHEDULE_RULES_H
#define MOESIM_SCHEDULE_RULES_H

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

/* The schedule the layout runs: layout.schedule, but 1F1B for DualPipe at one stage. */
static inline schedule_kind scn_schedule_run(const layout_cfg *L) {
    return L->schedule == SCHED_DUALPIPE && L->pp <= 1 ? SCHED_1F1B : L->schedule;
}

/* 0 when schedule `kind` (as scn_schedule_run gives it) runs pp stages with m micro-batches per
 * pipeline; else EXIT_BADINPUT in err naming layout.pp or layout.global_batch (global_batch > 0: it is
 * quoted with m, else m alone) and what is expected. */
int scn_schedule_check(const char *file, schedule_kind kind, int pp, long long m, int global_batch, moe_error *err);

#endif
