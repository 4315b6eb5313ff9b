/* schedule.c — per-stage work order of the pipeline schedules (see schedule.h). */
#include "sim/program/schedule.h"
#include "sim/base/alloc.h"
#include "sim/scenario/schedule_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *schedule_name(schedule_kind k) {
    switch (k) {
    case SCHED_1F1B: return "1f1b";
    case SCHED_INTERLEAVED: return "interleaved";
    case SCHED_DUALPIPE: return "dualpipe";
    }
    return "?";
}

int schedule_check(const schedule_spec *sp, const char *file, moe_error *err) {
    char v[64];
    if (sp->pp < 1 || sp->m < 1) {
        snprintf(v, sizeof v, "pp=%d, micro-batches=%d", sp->pp, sp->m);
        return moe_error_input(err, file, "layout", v, "pp >= 1 and at least one micro-batch per pipeline");
    }
    if (sp->kind == SCHED_INTERLEAVED && sp->vpp < 1) {
        snprintf(v, sizeof v, "%d", sp->vpp);
        return moe_error_input(err, file, "layout.vpp", v, "vpp >= 1 for the interleaved schedule");
    }
    /* the shapes each schedule runs: the scenario's rule (validation rejected the others already) */
    if (scn_schedule_check(file, sp->kind, sp->pp, sp->m, 0, err)) return err->code;
    return 0;
}

int schedule_n_model_stages(const schedule_spec *sp) {
    return sp->kind == SCHED_INTERLEAVED ? sp->pp * sp->vpp : sp->pp;
}

int schedule_model_stage(const schedule_spec *sp, int stage, int chunk, int mb) {
    (void)mb;
    switch (sp->kind) {
    case SCHED_INTERLEAVED: return chunk * sp->pp + stage;
    case SCHED_DUALPIPE: return chunk == 0 ? stage : sp->pp - 1 - stage;
    default: return stage;
    }
}

void schedule_locate(const schedule_spec *sp, int ms, int mb, int *stage, int *chunk) {
    switch (sp->kind) {
    case SCHED_INTERLEAVED: *stage = ms % sp->pp; *chunk = ms / sp->pp; return;
    case SCHED_DUALPIPE: {
        int dir = mb < sp->m / 2 ? 0 : 1;
        *chunk = dir;
        *stage = dir == 0 ? ms : sp->pp - 1 - ms;
        return;
    }
    default: *stage = ms; *chunk = 0; return;
    }
}

/* ---- item buffer --------------------------------------------------------------------------------- */
typedef struct { sched_item *v; int n, cap; } item_buf;

static void push(item_buf *b, int mb, int chunk, sched_phase ph, int with_w, int overlap_next) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->v = moe_xrealloc(b->v, (size_t)b->cap, sizeof *b->v);
    }
    b->v[b->n++] = (sched_item){.mb = mb, .chunk = (uint8_t)chunk, .phase = (uint8_t)ph,
                                .with_w = (uint8_t)with_w, .overlap_next = (uint8_t)overlap_next};
}

/* ---- 1F1B -------------------------------------------------------------------------------------------- */
static void sched_1f1b(const schedule_spec *sp, int s, item_buf *b) {
    /* with paired F/B one more forward of warm-up on every stage: stage s+1's pair j then takes the
     * forward stage s made in its pair j-1, never the one of the same pair (no cycle) */
    int m = sp->m, warm = sp->pp - s - 1 + (sp->a2a_overlap ? 1 : 0);
    if (warm > m) warm = m;
    for (int i = 0; i < warm; i++) push(b, i, 0, SI_F, 0, 0);
    for (int i = 0; i < m - warm; i++) {
        push(b, warm + i, 0, SI_F, 0, sp->a2a_overlap);
        push(b, i, 0, SI_B, 1, 0);
    }
    for (int i = m - warm; i < m; i++) push(b, i, 0, SI_B, 1, 0);
}

/* ---- interleaved 1F1B (Megatron virtual pipeline) ---------------------------------------------------- */
/* The k-th forward (backward) of a stage: micro-batches go in groups of pp through chunk 0, then the
 * same group through chunk 1, ...; backward walks the chunks in reverse. */
static void interleaved_item(const schedule_spec *sp, int k, int forward, int *mb, int *chunk) {
    int pv = sp->pp * sp->vpp, in_group = k % pv;
    int c = in_group / sp->pp;
    *chunk = forward ? c : sp->vpp - 1 - c;
    *mb = (k / pv) * sp->pp + in_group % sp->pp;
}

static void sched_interleaved(const schedule_spec *sp, int s, item_buf *b) {
    int total = sp->m * sp->vpp;
    int warm = (sp->pp - s - 1) * 2 + (sp->vpp - 1) * sp->pp;
    if (sp->a2a_overlap && warm < 1) warm = 1;
    if (warm > total) warm = total;
    int mb, c;
    for (int k = 0; k < warm; k++) { interleaved_item(sp, k, 1, &mb, &c); push(b, mb, c, SI_F, 0, 0); }
    for (int i = 0; i < total - warm; i++) {
        interleaved_item(sp, warm + i, 1, &mb, &c); push(b, mb, c, SI_F, 0, sp->a2a_overlap);
        interleaved_item(sp, i, 0, &mb, &c); push(b, mb, c, SI_B, 1, 0);
    }
    for (int k = total - warm; k < total; k++) { interleaved_item(sp, k, 0, &mb, &c); push(b, mb, c, SI_B, 1, 0); }
}

/* ---- DualPipe ------------------------------------------------------------------------------------------ */
/* Per-rank state: the next forward / backward micro-batch of each direction and the FIFO of deferred
 * weight-gradient items (zero-bubble W). "Phase" 0/1 is the reference schedule's local naming: phase 0
 * is the direction in which this rank is early in the pipeline; for ranks of the second half it is
 * the up direction (chunk 1). */
typedef struct {
    const schedule_spec *sp;
    item_buf *b;
    int second_half;
    int next_f[2], next_b[2];
    int wq_mb[4096], wq_chunk[4096], wq_head, wq_tail;
} dp_state;

static int dp_chunk(const dp_state *st, int phase) { return phase ^ st->second_half; }
static int dp_mb(const dp_state *st, int chunk, int i) { return chunk == 0 ? i : st->sp->m / 2 + i; }

static void dp_f(dp_state *st, int phase, int overlap_next) {
    int c = dp_chunk(st, phase);
    push(st->b, dp_mb(st, c, st->next_f[c]++), c, SI_F, 0, overlap_next);
}
static void dp_b(dp_state *st, int phase, int zb) {
    int c = dp_chunk(st, phase);
    int mb = dp_mb(st, c, st->next_b[c]++);
    push(st->b, mb, c, SI_B, !zb, 0);
    if (zb) { st->wq_mb[st->wq_tail] = mb; st->wq_chunk[st->wq_tail++] = c; }
}
static void dp_w(dp_state *st) {
    if (st->wq_head == st->wq_tail) return;
    push(st->b, st->wq_mb[st->wq_head], st->wq_chunk[st->wq_head], SI_W, 0, 0);
    st->wq_head++;
}
/* forward of phase f overlapped with backward (incl. weights) of phase bph */
static void dp_fb(dp_state *st, int f, int bph) { dp_f(st, f, 1); dp_b(st, bph, 0); }

static void sched_dualpipe(const schedule_spec *sp, int r, item_buf *b) {
    int P = sp->pp, half = P / 2, hm = sp->m / 2;
    dp_state *st = moe_xcalloc(1, sizeof *st);
    st->sp = sp; st->b = b; st->second_half = r >= half;
    int h = r < P - 1 - r ? r : P - 1 - r;          /* half rank */
    int middle = (r == half - 1) || (r == half);
    /* 1: nF0 */
    for (int i = 0; i < (half - h - 1) * 2; i++) dp_f(st, 0, 0);
    /* 2: nF0F1 */
    for (int i = 0; i < h + 1; i++) { dp_f(st, 0, 0); dp_f(st, 1, 0); }
    /* 3: nB1W1F1 (zero bubble) */
    for (int i = 0; i < half - h - 1; i++) { dp_b(st, 1, 1); dp_w(st); dp_f(st, 1, 0); }
    /* 4: nF0B1F1B0 (main step: overlapped F/B pairs) */
    for (int i = 0; i < hm - P + h + 1; i++) {
        if (i == 0 && middle) { dp_f(st, 0, 0); dp_b(st, 1, 0); }  /* not overlapped: smaller bubble */
        else dp_fb(st, 0, 1);
        dp_fb(st, 1, 0);
    }
    /* 5: nB1F1B0 */
    for (int i = 0; i < half - h - 1; i++) { dp_b(st, 1, 0); dp_fb(st, 1, 0); }
    /* 6: nB1B0, the second half with zero bubble */
    int s6 = h + 1, zb = 0;
    for (int i = 0; i < s6; i++) {
        if (i == s6 / 2 && h % 2 == 1) zb = 1;
        dp_b(st, 1, zb);
        if (i == s6 / 2 && h % 2 == 0) zb = 1;
        dp_b(st, 0, zb);
    }
    /* 7: nWB0 */
    for (int i = 0; i < half - h - 1; i++) { dp_w(st); dp_b(st, 0, 1); }
    /* 8: nW */
    for (int i = 0; i < h + 1; i++) dp_w(st);
    free(st);
}

int schedule_stage(const schedule_spec *sp, int stage, sched_item **items) {
    item_buf b = {0};
    switch (sp->kind) {
    case SCHED_1F1B: sched_1f1b(sp, stage, &b); break;
    case SCHED_INTERLEAVED: sched_interleaved(sp, stage, &b); break;
    case SCHED_DUALPIPE:
        if (sp->m > 2 * 4096) { *items = NULL; return -1; }
        sched_dualpipe(sp, stage, &b);
        break;
    }
    *items = b.v;
    return b.n;
}
