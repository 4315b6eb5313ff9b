/* test_live_accounting.c — the live executor (sim/live/live_exec.h) reports the hand split of
 * tests/step_split_case.h, the split the fast and the full-fidelity executors report
 * (test_step_accounting.c).
 *
 * The live executor runs in-process, one thread per rank, over a backend whose clock is virtual:
 * compute takes the case's price of each op, a SEND or a collective completes after the case's
 * single-flow time once every member has posted it, and the clock moves to the next completion only
 * when every rank waits (a conservative discrete-event clock, so the measured timeline is exact and
 * the test cannot be flaky). Everything else — stream cursors, nonblocking posts and polling, the
 * timings the executor records and their accounting — is the code simlive runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/base/alloc.h"
#include "sim/exec/step_accounting.h"
#include "sim/live/live_exec.h"
#include "tests/step_split_case.h"

#define MAX_INSTANCES 64   /* collectives per group in one step */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double now;
    unsigned long epoch;         /* bumped whenever the clock or the shared state changes */
    int active, blocked;         /* rank threads still running; of them, waiting for a change */
    int deadlock;                /* every rank waits and nothing is in flight */
    double *events;              /* future completions and wake-ups */
    int n_events, cap_events;
    const program *p;
    comm_model cm;
    int *inst_arrived;           /* n_groups x MAX_INSTANCES */
    double *inst_done;
    double *arrival;             /* n_ranks x n_tags: when the SEND with that tag lands, -1 */
    int n_tags;
} vworld;

typedef struct {
    vworld *w;
    int rank, n_ops;
    program_op *ops;
    int *seq;                    /* per group: collectives posted */
    int *inst;                   /* per op: its instance (group * MAX_INSTANCES + seq) */
    double *done;                /* per SEND: completion */
    live_rank_run run;
    int rc;
    moe_error err;
} vrank;

/* ---- the virtual clock (w->mu held) ------------------------------------------------------------- */
static void changed(vworld *w) {
    w->blocked = 0;
    w->epoch++;
    pthread_cond_broadcast(&w->cv);
}

static void add_event(vworld *w, double t) {
    if (w->n_events == w->cap_events) {
        w->cap_events = w->cap_events ? 2 * w->cap_events : 64;
        w->events = moe_xrealloc(w->events, (size_t)w->cap_events, sizeof(double));
    }
    w->events[w->n_events++] = t;
}

/* Every running rank waits: move the clock to the next event. */
static void maybe_advance(vworld *w) {
    if (w->active == 0 || w->blocked < w->active) return;
    double next = INFINITY;
    for (int i = 0; i < w->n_events; i++)
        if (w->events[i] > w->now && w->events[i] < next) next = w->events[i];
    if (isinf(next)) w->deadlock = 1;
    else w->now = next;
    int k = 0;
    for (int i = 0; i < w->n_events; i++)
        if (w->events[i] > w->now) w->events[k++] = w->events[i];
    w->n_events = k;
    changed(w);
}

static void wait_for_change(vworld *w) {
    unsigned long e = w->epoch;
    w->blocked++;
    maybe_advance(w);
    while (e == w->epoch) pthread_cond_wait(&w->cv, &w->mu);
}

/* ---- the backend --------------------------------------------------------------------------------- */
static double v_now(void *ctx) {
    vworld *w = ((vrank *)ctx)->w;
    pthread_mutex_lock(&w->mu);
    double t = w->now;
    pthread_mutex_unlock(&w->mu);
    return t;
}

static int v_barrier(void *ctx, moe_error *err) { (void)ctx; (void)err; return 0; }

static int v_compute(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)i; (void)measured; (void)err;
    vrank *r = ctx;
    vworld *w = r->w;
    double dur = split_case_price(NULL, w->p, r->rank, op);
    if (dur <= 0) return 0;
    pthread_mutex_lock(&w->mu);
    double wake = w->now + dur;
    add_event(w, wake);
    while (w->now < wake && !w->deadlock) wait_for_change(w);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int v_collective(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)measured; (void)err;
    vrank *r = ctx;
    vworld *w = r->w;
    const program_group *g = &w->p->groups[op->group];
    pthread_mutex_lock(&w->mu);
    int seq = r->seq[op->group]++;
    if (seq >= MAX_INSTANCES) abort();
    int k = op->group * MAX_INSTANCES + seq;
    r->inst[i] = k;
    if (++w->inst_arrived[k] == g->n) {
        int gpus[16];
        if (g->n > 16) abort();
        for (int m = 0; m < g->n; m++) gpus[m] = program_gpu_of_rank(w->p, g->ranks[m]);
        coll_kind ck = op->kind == OP_REDUCE_SCATTER ? COLL_REDUCE_SCATTER
                     : op->kind == OP_ALL_GATHER     ? COLL_ALL_GATHER
                                                     : COLL_ALL_REDUCE;
        w->inst_done[k] = w->now + w->cm.collective_s(w->cm.ctx, ck, gpus, g->n, op->bytes);
        add_event(w, w->inst_done[k]);
        changed(w);
    }
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int v_a2a(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)ctx; (void)i; (void)op; (void)measured;
    return moe_error_set(err, EXIT_RUNTIME, "the split case has no all-to-all");
}

static int v_send(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)measured; (void)err;
    vrank *r = ctx;
    vworld *w = r->w;
    pthread_mutex_lock(&w->mu);
    double t = w->now + w->cm.p2p_s(w->cm.ctx, program_gpu_of_rank(w->p, r->rank),
                                    program_gpu_of_rank(w->p, op->peer), op->bytes);
    r->done[i] = t;
    w->arrival[(size_t)op->peer * w->n_tags + op->tag] = t;
    add_event(w, t);
    changed(w);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int v_recv(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)ctx; (void)i; (void)op; (void)measured; (void)err;
    return 0;   /* posted: it completes when its SEND lands */
}

static int v_test(void *ctx, int i, const program_op *op, moe_error *err) {
    (void)err;
    vrank *r = ctx;
    vworld *w = r->w;
    pthread_mutex_lock(&w->mu);
    double done = -1;
    if (op->kind == OP_SEND) done = r->done[i];
    else if (op->kind == OP_RECV) done = w->arrival[(size_t)r->rank * w->n_tags + op->tag];
    else if (w->inst_arrived[r->inst[i]] == w->p->groups[op->group].n) done = w->inst_done[r->inst[i]];
    int fin = done >= 0 && w->now >= done;
    pthread_mutex_unlock(&w->mu);
    return fin;
}

static int v_idle(void *ctx) {
    vworld *w = ((vrank *)ctx)->w;
    pthread_mutex_lock(&w->mu);
    if (!w->deadlock) wait_for_change(w);
    int alarm = w->deadlock;
    pthread_mutex_unlock(&w->mu);
    return alarm;
}

static void *rank_thread(void *arg) {
    vrank *r = arg;
    live_backend b = {.name = "virtual-clock", .ctx = r, .prepost_recv = 1, .now_s = v_now, .barrier = v_barrier,
                      .compute = v_compute, .a2a = v_a2a, .send = v_send, .recv = v_recv,
                      .collective = v_collective, .test = v_test, .idle = v_idle};
    live_exec_opts o = {.stop_at = -1, .watchdog_s = 0};
    r->rc = live_exec_step(r->w->p, r->rank, r->ops, r->n_ops, &b, &o, &r->run, &r->err);
    pthread_mutex_lock(&r->w->mu);
    r->w->active--;
    maybe_advance(r->w);
    pthread_mutex_unlock(&r->w->mu);
    return NULL;
}

static void test_live_executor_by_hand(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program(&s, want, &T);
    assert_int_equal(p->n_ranks, 4);

    vworld w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.p = p;
    w.cm = split_case_comm();
    w.n_tags = p->micro_batches * p->n_model_stages * 2;
    w.inst_arrived = moe_xcalloc((size_t)p->n_groups * MAX_INSTANCES, sizeof(int));
    w.inst_done = moe_xcalloc((size_t)p->n_groups * MAX_INSTANCES, sizeof(double));
    w.arrival = moe_xmalloc((size_t)p->n_ranks * w.n_tags * sizeof(double));
    for (int i = 0; i < p->n_ranks * w.n_tags; i++) w.arrival[i] = -1;
    w.active = p->n_ranks;
    vrank r[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].w = &w;
        r[k].rank = k;
        r[k].n_ops = program_materialize(p, k, &r[k].ops);
        r[k].seq = moe_xcalloc((size_t)p->n_groups, sizeof(int));
        r[k].inst = moe_xcalloc((size_t)r[k].n_ops, sizeof(int));
        r[k].done = moe_xcalloc((size_t)r[k].n_ops, sizeof(double));
        assert_int_equal(live_rank_run_init(&r[k].run, r[k].n_ops), 0);
    }
    for (int k = 0; k < 4; k++) assert_int_equal(pthread_create(&th[k], NULL, rank_thread, &r[k]), 0);
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    assert_false(w.deadlock);

    double step = 0;
    for (int k = 0; k < 4; k++) {
        if (r[k].rc) fail_msg("rank %d: rc %d %s", k, r[k].rc, r[k].err.msg);
        if (r[k].run.end_s > step) step = r[k].run.end_s;
    }
    step_split got[4];
    for (int k = 0; k < 4; k++) step_split_program_rank(p, k, r[k].run.times, NULL, step, &got[k]);
    split_case_check("live (virtual clock)", step, got, want, T, 1e-12);
    for (int k = 0; k < 4; k++) {
        live_rank_run_free(&r[k].run);
        free(r[k].ops); free(r[k].seq); free(r[k].inst); free(r[k].done);
    }
    free(w.events); free(w.inst_arrived); free(w.inst_done); free(w.arrival);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_executor_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
