/* faults.c — the scenario's in-step faults resolved into the step program (faults.h). */
#include "sim/program/faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"
#include "sim/program/program.h"

/* What the rank of stage st runs forward, per chunk ("layers a..b with micro-batches m..n; ..."), for
 * the message of a stall it never reaches. */
static void forward_runs(const program *p, int st, char *runs, size_t len) {
    runs[0] = 0;
    for (int c = 0; c < p->n_chunks; c++) {
        int lo = INT_MAX, hi = -1, mlo = INT_MAX, mhi = -1;
        for (int i = 0; i < p->stage_n_ops[st]; i++) {
            const program_op *o = &p->stage_ops[st][i];
            if (o->phase != PHASE_F || o->chunk != c || o->layer < 0) continue;
            if (o->layer < lo) lo = o->layer;
            if (o->layer > hi) hi = o->layer;
            if (o->mb < mlo) mlo = o->mb;
            if (o->mb > mhi) mhi = o->mb;
        }
        if (hi < 0) continue;
        size_t at = strlen(runs);
        snprintf(runs + at, len - at, "%slayers %d..%d with micro-batches %d..%d", at ? "; " : "", lo, hi, mlo, mhi);
    }
}

/* The stall point of stall k on its rank: the index of the first forward op of (layer, micro_batch)
 * in the rank's stage list. */
static int stall_point(const program *p, int k, int rank, int *at, moe_error *err) {
    const stall_fault *sf = &p->scn->faults.stalls[k];
    int d, st, e, t, holds_layer = 0;
    program_coords(p, rank, &d, &st, &e, &t);
    for (int i = 0; i < p->stage_n_ops[st]; i++) {
        const program_op *o = &p->stage_ops[st][i];
        if (o->phase != PHASE_F || o->layer != sf->layer) continue;
        holds_layer = 1;
        if (o->mb == sf->micro_batch) {
            *at = i;
            return 0;
        }
    }
    char path[64], v[48], runs[256];
    snprintf(path, sizeof path, "faults.stalls[%d].%s", k, holds_layer ? "micro_batch" : "layer");
    snprintf(v, sizeof v, "layer %d, micro_batch %d", sf->layer, sf->micro_batch);
    forward_runs(p, st, runs, sizeof runs);
    return moe_error_input(err, p->scn->file, path, v,
                           "a (layer, micro_batch) whose forward the rank on GPU %d (rank %d, pipeline stage %d) "
                           "runs: %s", sf->gpu, rank, st, runs);
}

int step_faults_resolve(const program *p, step_faults *f, moe_error *err) {
    const faults_cfg *fc = &p->scn->faults;
    const int R = p->n_ranks, per_replica = rank_replica_ranks(&p->ranks);
    memset(f, 0, sizeof *f);
    f->n_ranks = R;
    f->n_replicas = p->dp;
    f->compute_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->nic_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->nvlink_factor = moe_xmalloc((size_t)R * sizeof(double));
    f->stop_at = moe_xmalloc((size_t)R * sizeof(int));
    f->replica_faulty = moe_xcalloc((size_t)p->dp, 1);
    int *rank_of_gpu = moe_xmalloc((size_t)R * sizeof(int));
    for (int r = 0; r < R; r++) {
        int gpu = program_gpu_of_rank(p, r);
        rank_of_gpu[gpu] = r;
        double slow = 1.0;
        for (int i = 0; i < fc->n_slow_gpus; i++)
            if (fc->slow_gpus[i].gpu == gpu) slow *= fc->slow_gpus[i].factor;
        f->compute_factor[r] = slow;
        f->nic_factor[r] = faults_link_factor(fc, gpu, LINK_NIC);
        f->nvlink_factor[r] = faults_link_factor(fc, gpu, LINK_NVLINK);
        f->stop_at[r] = STEP_NO_STALL;
    }
    int rc = 0;
    for (int k = 0; k < fc->n_stalls && rc == 0; k++) {
        int gpu = fc->stalls[k].gpu, at = STEP_NO_STALL;
        if (gpu < 0 || gpu >= R) {
            char path[64], v[16];
            snprintf(path, sizeof path, "faults.stalls[%d].gpu", k);
            snprintf(v, sizeof v, "%d", gpu);
            rc = moe_error_input(err, p->scn->file, path, v, "a GPU id in 0..%d", R - 1);
        } else if ((rc = stall_point(p, k, rank_of_gpu[gpu], &at, err)) == 0 && at < f->stop_at[rank_of_gpu[gpu]])
            f->stop_at[rank_of_gpu[gpu]] = at;
    }
    free(rank_of_gpu);
    if (rc) {
        step_faults_free(f);
        return rc;
    }
    for (int r = 0; r < R; r++) {
        int slow = f->compute_factor[r] != 1.0, link = f->nic_factor[r] != 1.0 || f->nvlink_factor[r] != 1.0;
        int stalled = f->stop_at[r] != STEP_NO_STALL;
        f->n_slow_ranks += slow;
        f->n_link_ranks += link;
        f->n_stalled_ranks += stalled;
        if (slow || link || stalled) f->replica_faulty[r / per_replica] = 1;   /* rank_numbering.h: replica-major */
    }
    return 0;
}

void step_faults_free(step_faults *f) {
    free(f->compute_factor);
    free(f->nic_factor);
    free(f->nvlink_factor);
    free(f->stop_at);
    free(f->replica_faulty);
    memset(f, 0, sizeof *f);
}
