/* backend_mpi.c — the "mpi" backend of simlive and the MPI services of every backend (backend_mpi.h). */
#include "sim/live/backend_mpi.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "kernels/bf16.h"

enum { TAG_WATCHDOG = 7, TAG_GATHER_TIMES = 8, TAG_GATHER_MEAS = 9 };
enum { A2A_COUNTS = 1, A2A_ROWS = 2 };

struct live_mpi {
    const program *p;
    int rank, size, n_ops;
    live_cpu *cpu;
    MPI_Comm comm[GROUP_NKINDS];
    MPI_Comm p2p, watch;
    MPI_Datatype row_type;
    size_t row_type_bytes;
    MPI_Op bf16_sum;
    int tag_ub;
    MPI_Request *req;              /* per op */
    unsigned char *a2a_phase;      /* per op: A2A_COUNTS / A2A_ROWS while in flight */
    live_a2a_buf a2a;              /* the all-to-all in flight (the comm stream runs one at a time) */
    int a2a_index;                 /* its group member index */
    live_rank_state wd_mine;       /* what this rank sent to the others (must outlive the Isends) */
    MPI_Request *wd_req;
    int wd_sent;
};

/* ---- process-level ------------------------------------------------------------------------------ */
int live_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}
void live_mpi_finalize(void) { MPI_Finalize(); }
int live_mpi_all_ok(int ok_local) {
    int ok = ok_local, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all ? 0 : 1;
}
void live_mpi_abort(int code) {
    fflush(stdout); fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);   /* MPI_Abort does not return; keep the compiler and the contract honest */
}
double live_mpi_max(double v) { double o; MPI_Allreduce(&v, &o, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); return o; }
double live_mpi_sum(double v) { double o; MPI_Allreduce(&v, &o, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); return o; }
long live_mpi_sum_long(long v) { long o; MPI_Allreduce(&v, &o, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); return o; }
void live_mpi_bcast_bytes(void *buf, int bytes, int root) { MPI_Bcast(buf, bytes, MPI_BYTE, root, MPI_COMM_WORLD); }

/* BF16 sum: add in FP32, round to BF16 (NCCL's bf16 reduction does the same per element). */
static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const moe_bf16 *a = in;
    moe_bf16 *b = inout;
    for (int i = 0; i < *len; i++) b[i] = moe_f32_to_bf16(moe_bf16_to_f32(a[i]) + moe_bf16_to_f32(b[i]));
}

static int mpi_fail(moe_error *err, int rc, const char *what) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return moe_error_set(err, EXIT_RUNTIME, "live/mpi: %s failed: %s", what, s);
}

int live_mpi_create(const program *p, int rank, live_cpu *cpu, int n_ops, live_mpi **out, moe_error *err) {
    live_mpi *m = moe_xcalloc(1, sizeof *m);
    if (!m) return moe_error_set(err, EXIT_RUNTIME, "live: out of memory");
    m->p = p; m->rank = rank; m->cpu = cpu; m->n_ops = n_ops;
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int k = 0; k < GROUP_NKINDS; k++)
        MPI_Comm_split(MPI_COMM_WORLD, program_group_of(p, rank, (group_kind)k), rank, &m->comm[k]);
    MPI_Comm_dup(MPI_COMM_WORLD, &m->p2p);
    MPI_Comm_dup(MPI_COMM_WORLD, &m->watch);
    MPI_Op_create(bf16_sum_fn, 1, &m->bf16_sum);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    m->tag_ub = flag && ub ? *ub : 32767;
    m->row_type = MPI_DATATYPE_NULL;
    m->req = moe_xmalloc((size_t)(n_ops + 1) * sizeof *m->req);
    m->a2a_phase = moe_xcalloc((size_t)(n_ops + 1), 1);
    m->wd_req = moe_xmalloc((size_t)m->size * sizeof *m->wd_req);
    if (!m->req || !m->a2a_phase || !m->wd_req) { live_mpi_free(m); return moe_error_set(err, EXIT_RUNTIME, "live: out of memory"); }
    for (int i = 0; i <= n_ops; i++) m->req[i] = MPI_REQUEST_NULL;
    *out = m;
    return 0;
}

void live_mpi_free(live_mpi *m) {
    if (!m) return;
    for (int k = 0; k < GROUP_NKINDS; k++) if (m->comm[k]) MPI_Comm_free(&m->comm[k]);
    if (m->p2p) MPI_Comm_free(&m->p2p);
    if (m->row_type != MPI_DATATYPE_NULL) MPI_Type_free(&m->row_type);
    if (m->bf16_sum) MPI_Op_free(&m->bf16_sum);
    /* the watchdog communicator is left to MPI_Finalize: its Isends may be outstanding */
    free(m->req); free(m->a2a_phase); free(m->wd_req);
    free(m);
}

/* ---- services ---------------------------------------------------------------------------------- */
double live_mpi_now_s(void *ctx) { (void)ctx; return MPI_Wtime(); }

int live_mpi_idle(void *ctx) {
    live_mpi *m = ctx;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_WATCHDOG, m->watch, &flag, MPI_STATUS_IGNORE);
    if (flag) return 1;
    /* yield: oversubscribed CI runs 4 ranks on 2 cores; a spinning waiter would starve the rank that
     * computes. 50 us keeps the polling latency far below the ops' durations. */
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
    return 0;
}

int live_mpi_barrier(void *ctx, moe_error *err) {
    live_mpi *m = ctx;
    MPI_Request r;
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &r);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Ibarrier");
    for (;;) {
        int done = 0;
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) return 0;
        if (live_mpi_idle(m)) return LIVE_HUNG;   /* a rank raised the alarm while we waited */
    }
}

int live_mpi_watchdog(live_mpi *m, const live_rank_state *mine, live_rank_state *all, double grace_s) {
    for (int r = 0; r < m->size; r++) {
        memset(&all[r], 0, sizeof all[r]);
        all[r].rank = r;
        all[r].activity = LIVE_NO_ANSWER;
        all[r].wait_coll_op = all[r].wait_recv_op = all[r].last_op = all[r].stop_at = -1;
    }
    all[m->rank] = *mine;
    int got = 1;
    unsigned char *seen = moe_xcalloc((size_t)m->size, 1);
    if (seen) seen[m->rank] = 1;
    if (!m->wd_sent) {
        m->wd_mine = *mine;
        for (int r = 0; r < m->size; r++) {
            m->wd_req[r] = MPI_REQUEST_NULL;
            if (r != m->rank)
                MPI_Isend(&m->wd_mine, (int)sizeof m->wd_mine, MPI_BYTE, r, TAG_WATCHDOG, m->watch, &m->wd_req[r]);
        }
        m->wd_sent = 1;
    }
    double deadline = MPI_Wtime() + grace_s;
    while (got < m->size && MPI_Wtime() < deadline) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_WATCHDOG, m->watch, &flag, &st);
        if (!flag) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        live_rank_state s;
        MPI_Recv(&s, (int)sizeof s, MPI_BYTE, st.MPI_SOURCE, TAG_WATCHDOG, m->watch, MPI_STATUS_IGNORE);
        int src = st.MPI_SOURCE;
        if (seen && !seen[src] && src >= 0 && src < m->size) { seen[src] = 1; all[src] = s; got++; }
    }
    free(seen);
    return got;
}

int live_mpi_gather_run(live_mpi *m, const live_rank_run *mine, op_time ***times, double ***measured) {
    *times = NULL; *measured = NULL;
    if (m->rank != 0) {
        MPI_Send(mine->times, 2 * mine->n_ops, MPI_DOUBLE, 0, TAG_GATHER_TIMES, MPI_COMM_WORLD);
        MPI_Send(mine->measured, mine->n_ops, MPI_DOUBLE, 0, TAG_GATHER_MEAS, MPI_COMM_WORLD);
        return 0;
    }
    op_time **t = moe_xcalloc((size_t)m->size, sizeof *t);
    double **ms = moe_xcalloc((size_t)m->size, sizeof *ms);
    if (!t || !ms) { free(t); free(ms); return -1; }
    for (int r = 0; r < m->size; r++) {
        int n = program_n_ops(m->p, r);
        t[r] = moe_xmalloc((size_t)(n + 1) * sizeof(op_time));
        ms[r] = moe_xmalloc((size_t)(n + 1) * sizeof(double));
        if (r == 0) {
            memcpy(t[r], mine->times, (size_t)n * sizeof(op_time));
            memcpy(ms[r], mine->measured, (size_t)n * sizeof(double));
        } else {
            MPI_Recv(t[r], 2 * n, MPI_DOUBLE, r, TAG_GATHER_TIMES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(ms[r], n, MPI_DOUBLE, r, TAG_GATHER_MEAS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    *times = t; *measured = ms;
    return 0;
}

/* ---- the "mpi" backend: communication ---------------------------------------------------------------- */
static MPI_Comm group_comm(live_mpi *m, const program_op *o) {
    return m->comm[m->p->groups[o->group].kind];
}

static int ensure_row_type(live_mpi *m, size_t row_bytes, moe_error *err) {
    if (m->row_type != MPI_DATATYPE_NULL && m->row_type_bytes == row_bytes) return 0;
    if (m->row_type != MPI_DATATYPE_NULL) MPI_Type_free(&m->row_type);
    int rc = MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &m->row_type);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&m->row_type);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Type_contiguous (token row)");
    m->row_type_bytes = row_bytes;
    return 0;
}

static int post_rows(live_mpi *m, int i, const program_op *o, moe_error *err) {
    live_a2a_buf *b = &m->a2a;
    if (ensure_row_type(m, b->row_bytes, err)) return EXIT_RUNTIME;
    /* int32_t counts/offsets in rows are MPI's int counts/displacements in units of row_type */
    int rc = MPI_Ialltoallv(b->send, (const int *)b->send_rows, (const int *)b->send_offsets, m->row_type,
                            b->recv, (const int *)b->recv_rows, (const int *)b->recv_offsets, m->row_type,
                            group_comm(m, o), &m->req[i]);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Ialltoallv");
    m->a2a_phase[i] = A2A_ROWS;
    return 0;
}

static int mpi_a2a(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_mpi *m = ctx;
    int me;
    MPI_Comm_rank(group_comm(m, o), &me);
    m->a2a_index = me;
    if (live_cpu_a2a_begin(m->cpu, o, &m->a2a, err)) return err->code;
    *measured = live_a2a_bytes_out(&m->a2a, me);
    if (m->a2a.meta_ints > 0) {
        /* the receivers learn their segment sizes first (DeepEP's notify_dispatch) */
        int rc = MPI_Ialltoall(m->a2a.meta_send, m->a2a.meta_ints, MPI_INT32_T, m->a2a.meta_recv,
                               m->a2a.meta_ints, MPI_INT32_T, group_comm(m, o), &m->req[i]);
        if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Ialltoall (dispatch counts)");
        m->a2a_phase[i] = A2A_COUNTS;
        return 0;
    }
    return post_rows(m, i, o, err);
}

static int check_tag(live_mpi *m, const program_op *o, moe_error *err) {
    if (o->tag < 0 || o->tag > m->tag_ub)
        return moe_error_set(err, EXIT_RUNTIME, "live/mpi: pipeline tag %d outside [0, MPI_TAG_UB=%d]", o->tag, m->tag_ub);
    return 0;
}

static int mpi_send(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_mpi *m = ctx;
    size_t bytes;
    void *buf = live_cpu_p2p_buffer(m->cpu, o, &bytes, err);
    if (!buf || check_tag(m, o, err)) return EXIT_RUNTIME;
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, o->peer, o->tag, m->p2p, &m->req[i]);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Isend");
    *measured = (double)bytes;
    return 0;
}

static int mpi_recv(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_mpi *m = ctx;
    size_t bytes;
    void *buf = live_cpu_p2p_buffer(m->cpu, o, &bytes, err);
    if (!buf || check_tag(m, o, err)) return EXIT_RUNTIME;
    int rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, o->peer, o->tag, m->p2p, &m->req[i]);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Irecv");
    (void)measured;
    return 0;
}

static int mpi_collective(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_mpi *m = ctx;
    MPI_Comm c = group_comm(m, o);
    int n;
    MPI_Comm_size(c, &n);
    uint16_t *s, *r;
    size_t per;
    if (live_cpu_coll_buffers(m->cpu, o, n, &s, &r, &per, err)) return err->code;
    int rc, cnt = (int)per;
    switch (o->kind) {
    case OP_REDUCE_SCATTER:
        rc = MPI_Ireduce_scatter_block(s, r, cnt, MPI_UINT16_T, m->bf16_sum, c, &m->req[i]);
        *measured = 2.0 * per * (n - 1);              /* ring: (n-1) chunks out */
        break;
    case OP_ALL_GATHER:
        rc = MPI_Iallgather(s, cnt, MPI_UINT16_T, r, cnt, MPI_UINT16_T, c, &m->req[i]);
        *measured = 2.0 * per * (n - 1);
        break;
    default:
        rc = MPI_Iallreduce(s, r, cnt * n, MPI_UINT16_T, m->bf16_sum, c, &m->req[i]);
        *measured = 2.0 * 2.0 * per * (n - 1);        /* ring: reduce-scatter + all-gather */
        break;
    }
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, op_kind_name((op_kind)o->kind));
    return 0;
}

static int mpi_test(void *ctx, int i, const program_op *o, moe_error *err) {
    live_mpi *m = ctx;
    int done = 0;
    int rc = MPI_Test(&m->req[i], &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) { mpi_fail(err, rc, "MPI_Test"); return -1; }
    if (!done) return 0;
    if (m->a2a_phase[i] == A2A_COUNTS) {
        if (live_cpu_a2a_sized(m->cpu, o, &m->a2a, err)) return -1;
        if (post_rows(m, i, o, err)) return -1;
        return 0;
    }
    m->a2a_phase[i] = 0;
    return 1;
}

/* ---- the "mpi" backend: compute ---------------------------------------------------------------------- */
static int mpi_compute(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_mpi *m = ctx;
    (void)i;
    return live_cpu_compute(m->cpu, o, measured, err);
}

void live_mpi_backend(live_mpi *m, live_backend *b) {
    memset(b, 0, sizeof *b);
    b->name = "mpi";
    b->ctx = m;
    b->prepost_recv = 1;
    b->now_s = live_mpi_now_s;
    b->barrier = live_mpi_barrier;
    b->compute = mpi_compute;
    b->a2a = mpi_a2a;
    b->send = mpi_send;
    b->recv = mpi_recv;
    b->collective = mpi_collective;
    b->test = mpi_test;
    b->idle = live_mpi_idle;
}
