/* test_live_exec.c — the live executor (sim/live/live_exec.h) on the step of tests/step_split_case.h:
 *   - it reports the hand split, the split the fast and the full-fidelity executors report
 *     (test_step_accounting.c);
 *   - step-level faults (sim/program/faults.h, test_fault_injection.c for the simulator): a slow GPU
 *     gives the hand split of the faulty case; a stalled rank stops where the program says and every
 *     rank's state names it the culprit; a degraded link is refused (exit 2 naming faults.links).
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

/* Wait (virtual time) until the clock reaches `until`. */
static void v_hold(void *ctx, double until) {
    vworld *w = ((vrank *)ctx)->w;
    pthread_mutex_lock(&w->mu);
    if (until > w->now) add_event(w, until);
    while (w->now < until && !w->deadlock) wait_for_change(w);
    pthread_mutex_unlock(&w->mu);
}

/* A kernel takes its healthy price: a slow GPU's extra time is the executor's (hold). */
static int v_compute(void *ctx, int i, const program_op *op, double *measured, moe_error *err) {
    (void)i; (void)measured; (void)err;
    vrank *r = ctx;
    double dur = split_case_price(NULL, r->w->p, r->rank, op);
    if (dur > 0) v_hold(ctx, v_now(ctx) + dur);
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
        w->inst_done[k] = w->now + w->cm.collective_s(w->cm.ctx, ck, gpus, g->n, op->bytes, 1);
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
    return alarm;   /* every rank waits and nothing is in flight: a hang, as the watchdog would say */
}

static void *rank_thread(void *arg) {
    vrank *r = arg;
    live_backend b = {.name = "virtual-clock", .ctx = r, .prepost_recv = 1, .now_s = v_now, .barrier = v_barrier,
                      .compute = v_compute, .a2a = v_a2a, .send = v_send, .recv = v_recv,
                      .collective = v_collective, .test = v_test, .idle = v_idle, .hold = v_hold};
    live_exec_opts o = {.watchdog_s = 0};
    r->rc = live_exec_step(r->w->p, r->rank, r->ops, r->n_ops, &b, &o, &r->run, &r->err);
    pthread_mutex_lock(&r->w->mu);
    r->w->active--;
    maybe_advance(r->w);
    pthread_mutex_unlock(&r->w->mu);
    return NULL;
}

/* One step of every rank of p (4), one thread each, on a fresh virtual clock. */
typedef struct {
    vworld w;
    vrank r[4];
} live_run;

static void live_run_step(const program *p, live_run *x) {
    assert_int_equal(p->n_ranks, 4);
    vworld *w = &x->w;
    memset(x, 0, sizeof *x);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->p = p;
    w->cm = split_case_comm();
    w->n_tags = p->micro_batches * p->n_model_stages * 2;
    w->inst_arrived = moe_xcalloc((size_t)p->n_groups * MAX_INSTANCES, sizeof(int));
    w->inst_done = moe_xcalloc((size_t)p->n_groups * MAX_INSTANCES, sizeof(double));
    w->arrival = moe_xmalloc((size_t)p->n_ranks * w->n_tags * sizeof(double));
    for (int i = 0; i < p->n_ranks * w->n_tags; i++) w->arrival[i] = -1;
    w->active = p->n_ranks;
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        vrank *r = &x->r[k];
        r->w = w;
        r->rank = k;
        r->n_ops = program_materialize(p, k, &r->ops);
        r->seq = moe_xcalloc((size_t)p->n_groups, sizeof(int));
        r->inst = moe_xcalloc((size_t)r->n_ops, sizeof(int));
        r->done = moe_xcalloc((size_t)r->n_ops, sizeof(double));
        assert_int_equal(live_rank_run_init(&r->run, r->n_ops), 0);
    }
    for (int k = 0; k < 4; k++) assert_int_equal(pthread_create(&th[k], NULL, rank_thread, &x->r[k]), 0);
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
}

static void live_run_free(live_run *x) {
    for (int k = 0; k < 4; k++) {
        vrank *r = &x->r[k];
        live_rank_run_free(&r->run);
        free(r->ops); free(r->seq); free(r->inst); free(r->done);
    }
    free(x->w.events); free(x->w.inst_arrived); free(x->w.inst_done); free(x->w.arrival);
    pthread_mutex_destroy(&x->w.mu);
    pthread_cond_destroy(&x->w.cv);
}

/* The step of a live run that completed, split by the one accounting, against the hand split. */
static void check_live_split(const char *who, const program *p, live_run *x, const step_split want[4], double T) {
    assert_false(x->w.deadlock);
    double step = 0;
    for (int k = 0; k < 4; k++) {
        if (x->r[k].rc) fail_msg("rank %d: rc %d %s", k, x->r[k].rc, x->r[k].err.msg);
        if (x->r[k].run.end_s > step) step = x->r[k].run.end_s;
    }
    step_split got[4];
    for (int k = 0; k < 4; k++) step_split_program_rank(p, k, x->r[k].run.times, NULL, step, &got[k]);
    split_case_check(who, step, got, want, T, 1e-12);
}

static void test_live_split_by_hand(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program(&s, want, &T);
    live_run x;
    live_run_step(p, &x);
    check_live_split("live (virtual clock)", p, &x, want, T);
    live_run_free(&x);
    program_free(p);
}

/* faults.slow_gpus: GPU 1 at x1.5, the hand split of the faulty case (no degraded link: refused below) */
static void test_live_slow_gpu_by_hand(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program_faulty(&s, 1.5, 1, want, &T);
    assert_int_equal(live_check_faults(p, &(moe_error){0}), 0);
    live_run x;
    live_run_step(p, &x);
    check_live_split("live, GPU 1 slow x1.5", p, &x, want, T);
    live_run_free(&x);
    program_free(p);
}

/* faults.stalls: GPU 1 (stage 1) stops before the forward of layer 1, micro-batch 1 (its op 11); it
 * ran everything before (the first micro-batch's forward and backward); the others block, and the
 * states every rank reports name rank 1 the culprit. */
static void test_live_stall(void **st) {
    (void)st;
    scenario s;
    program *p = split_case_program_stalled(&s);
    live_run x;
    live_run_step(p, &x);
    assert_true(x.w.deadlock);
    live_rank_state states[4];
    for (int k = 0; k < 4; k++) {
        assert_int_equal(x.r[k].rc, LIVE_HUNG);
        states[k] = x.r[k].run.state;
    }
    assert_int_equal(states[1].activity, LIVE_STALLED);
    assert_int_equal(states[1].stop_at, SPLIT_STALL_OP);
    assert_int_equal(states[1].next_op, SPLIT_STALL_OP);
    for (int i = 0; i < SPLIT_STALL_OP; i++) assert_true(x.r[1].run.times[i].end_s >= 0);
    for (int i = SPLIT_STALL_OP; i < x.r[1].n_ops; i++) assert_true(x.r[1].run.times[i].start_s < 0);
    live_hang h;
    assert_int_equal(live_hang_analyze(p, states, &h), 0);
    assert_true(h.found);
    assert_int_equal(h.culprit, 1);
    live_hang_free(&h);
    live_run_free(&x);
    program_free(p);
}

/* faults.links: a live run cannot degrade a real link */
static void test_live_refuses_links(void **st) {
    (void)st;
    scenario s;
    step_split want[4];
    double T;
    program *p = split_case_program_faulty(&s, 1, 0.5, want, &T);
    moe_error err = {0};
    assert_int_equal(live_check_faults(p, &err), EXIT_BADINPUT);
    printf("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "faults.links: not supported by simlive"));
    program_free(p);
    /* a collective timeout is simrun's; simlive's watchdog is its own option */
    p = split_case_program_faulty(&s, 1, 1.0, want, &T);
    s.faults.collective_timeout_s = 600;
    assert_int_equal(live_check_faults(p, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "faults.collective_timeout_s"));
    assert_non_null(strstr(err.msg, "--watchdog-s"));
    program_free(p);
    /* the drifting routing over simulated steps and EPLB's replicas are the simulator's */
    p = split_case_program_faulty(&s, 1, 1.0, want, &T);
    s.routing.steps = 4;
    assert_int_equal(live_check_faults(p, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "routing.steps"));
    s.routing.steps = 1;
    s.routing.redundant_experts = 8;
    assert_int_equal(live_check_faults(p, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "routing.redundant_experts"));
    program_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_split_by_hand),
        cmocka_unit_test(test_live_slow_gpu_by_hand),
        cmocka_unit_test(test_live_stall),
        cmocka_unit_test(test_live_refuses_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
