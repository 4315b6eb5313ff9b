/* test_comm.c — communication times on the rail fabric: SimGrid (max-min flows) and the analytic model
 * against bottleneck times computed by hand in this file from the H800 preset (NVLink 200 GB/s per
 * direction, NIC 400 Gb/s = 50 GB/s, latencies 3.3 / 2.8 / 3.7 us).
 *
 * SimGrid allows one platform per process, so every case runs in a forked child that builds its own
 * cluster; the child prints each comparison and exits non-zero on a mismatch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/exec/comm.h"
#include "sim/scenario/presets.h"
#include "sim/simgrid/comm_simgrid.h"
#include "tests/fabric_fixtures.h"

#define MB 1e6
#define NVL 200e9  /* B/s: the H800 line rate (the fixture runs links at line rate) */
#define NIC 50e9   /* B/s */
#define LAT_NVL 3.3e-6
#define LAT_LEAF 2.8e-6
#define LAT_SPINE 3.7e-6

static int fails;
static void near(const char *what, double got, double want, double rel) {
    int ok = fabs(got - want) <= rel * fabs(want);
    printf("  %-52s got %10.3f us  hand %10.3f us  %s\n", what, got * 1e6, want * 1e6, ok ? "ok" : "MISMATCH");
    if (!ok) fails++;
}

typedef struct {
    comm_model sg, an;
} models;

static int make_models(const scenario *s, models *m) {
    moe_error err;
    m->sg = sg_comm_create(s, &err);
    sg_comm_set_max_flows(&m->sg, 1L << 30);   /* every pattern at flow level: SimGrid vs the hand form */
    if (!m->sg.ctx) {
        fprintf(stderr, "sg_comm_create: %s\n", err.msg);
        return -1;
    }
    scenario fab;   /* the closed form on the fabric SimGrid runs (links at the model's achieved rates) */
    if (sg_fabric_scenario(s, &fab, &err)) return -1;
    m->an = comm_analytic_create(&fab);
    return 0;
}

/* EP group = GPUs first..first+n-1, every rank sends `b` bytes to every other rank. */
typedef struct {
    int n, gpus[512];
    double *bytes;
    a2a_pattern p;
} group;

static void uniform_group(group *g, int first, int n, double b) {
    g->n = n;
    g->bytes = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++) {
        g->gpus[i] = first + i;
        for (int j = 0; j < n; j++) g->bytes[i * n + j] = i == j ? 0 : b;
    }
    g->p = (a2a_pattern){.n = n, .gpus = g->gpus, .bytes = g->bytes, .concurrent_groups = 1};
}

static void both(const char *what, models *m, const a2a_pattern *p, double hand) {
    char label[128];
    snprintf(label, sizeof label, "%s [simgrid]", what);
    near(label, m->sg.a2a_s(m->sg.ctx, p), hand, 0.01);
    snprintf(label, sizeof label, "%s [analytic]", what);
    near(label, m->an.a2a_s(m->an.ctx, p), hand, 0.01);
}

/* ---- all-to-all shapes ---------------------------------------------------------------------------- */
static int child_a2a_shapes(void) {
    scenario s = fx_fabric("test_comm", 8, 32, 1.0);
    models m;
    if (make_models(&s, &m)) return 1;
    group g;

    /* Intra-node only: each GPU's NVLink carries 7 x 1 MB each way. */
    uniform_group(&g, 0, 8, 1 * MB);
    both("a2a 8 GPUs intra-node, 1 MB/pair", &m, &g.p, 7 * MB / NVL + LAT_NVL);
    free(g.bytes);

    /* 2 nodes, no dedup: per sender one 8 MB RDMA flow to the other node (NIC: 8 MB each way); the
     * landing GPU forwards 1 MB to each of 7 peers + 1 MB direct: NVLink 14 MB. NIC bound. */
    uniform_group(&g, 0, 16, 1 * MB);
    both("a2a 2 nodes x 8, 1 MB/pair", &m, &g.p, 8 * MB / NIC + LAT_NVL);
    free(g.bytes);

    /* 8 nodes (EP64) with DeepEP node_bytes: 4 MB per (sender, node) after dedup instead of 8 MB:
     * NIC up = 7 x 4 MB, NIC down at each landing GPU = 7 senders x 4 MB = 28 MB -> 560 us;
     * NVLink up of a landing GPU = 7 peers x (7 forwarded + 1 direct) x 1 MB = 56 MB -> 350 us. */
    uniform_group(&g, 0, 64, 1 * MB);
    int nodes[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double *nb = calloc(64 * 8, sizeof(double));
    for (int i = 0; i < 64; i++)
        for (int k = 0; k < 8; k++) nb[i * 8 + k] = k == i / 8 ? 0 : 4 * MB;
    g.p.node_bytes = nb;
    g.p.n_nodes = 8;
    g.p.nodes = nodes;
    both("a2a EP64 on 8 nodes, DeepEP 4 MB/node", &m, &g.p, 28 * MB / NIC + LAT_NVL);
    /* Without node_bytes every inter-node byte crosses the NIC: 7 x 8 MB = 56 MB -> 1120 us. */
    g.p.node_bytes = NULL;
    both("a2a EP64 on 8 nodes, no dedup", &m, &g.p, 56 * MB / NIC + LAT_NVL);
    free(nb);
    free(g.bytes);

    /* Skew: everyone sends 10 MB to GPU (1,3) and 1 MB to the others (2 nodes). GPU 11's NVLink in
     * receives 2 x 10 MB from each of its 7 node peers (forwarded + direct) = 140 MB -> 875 us, while
     * NICs carry 7 + 10 = 17 MB (340 us): the hot receiver is the bottleneck. */
    uniform_group(&g, 0, 16, 1 * MB);
    for (int i = 0; i < 16; i++)
        if (i != 11) g.bytes[i * 16 + 11] = 10 * MB;
    both("a2a 2 nodes, hot receiver GPU 11 (10x)", &m, &g.p, 140 * MB / NVL + LAT_NVL);
    free(g.bytes);

    /* p2p: bytes / bandwidth + latency on each route class. */
    near("p2p NVLink 0->1, 64 MB [simgrid]", m.sg.p2p_s(m.sg.ctx, 0, 1, 64 * MB), 64 * MB / NVL + LAT_NVL, 0.01);
    near("p2p same rail 0->8, 64 MB [simgrid]", m.sg.p2p_s(m.sg.ctx, 0, 8, 64 * MB), 64 * MB / NIC + LAT_LEAF, 0.01);
    near("p2p same rail 0->8, 64 MB [analytic]", m.an.p2p_s(m.an.ctx, 0, 8, 64 * MB), 64 * MB / NIC + LAT_LEAF, 0.01);
    near("p2p cross rail 0->9 (PXN), 64 MB [simgrid]", m.sg.p2p_s(m.sg.ctx, 0, 9, 64 * MB),
         64 * MB / NIC + LAT_LEAF + LAT_NVL, 0.01);

    /* Ring reduce-scatter on rail 0 over 4 nodes: 3 steps of B/4 -> (3/4) B / NIC, plus NCCL's latency
     * (sim/plan/ring_split.h: 8.4 us + 3 steps across nodes x 14 us) instead of the wire's; all-reduce:
     * twice the steps, 6 x 14 us, x 1.4 (NCCL's ring plateau across nodes); NCCL's tree would be
     * slower here (its bandwidth time 4 / (0.92 x 0.9 x 3) = 1.61 x the ring's for 256 MB). */
    int ring[4] = {0, 8, 16, 24};
    double B = 256 * MB;
    near("reduce-scatter 4 GPUs on rail 0, 256 MB [simgrid]", m.sg.collective_s(m.sg.ctx, COLL_REDUCE_SCATTER, ring, 4, B, 1),
         0.75 * B / NIC + (8.4 + 3 * 14) * 1e-6, 0.01);
    near("all-reduce 4 GPUs on rail 0, 256 MB [simgrid]", m.sg.collective_s(m.sg.ctx, COLL_ALL_REDUCE, ring, 4, B, 1),
         1.5 * B / NIC + (8.4 + 6 * 14) * 1.4e-6, 0.01);
    near("all-reduce 4 GPUs on rail 0, 256 MB [analytic]", m.an.collective_s(m.an.ctx, COLL_ALL_REDUCE, ring, 4, B, 1),
         1.5 * B / NIC + (8.4 + 6 * 14) * 1.4e-6, 0.01);
    /* 2 nodes x 8 GPUs: 8 rings side by side, NVLink and NICs at once: each of the 15 steps moves 7/8
     * of a B/16 chunk over NVLink (70 us) and 1/8 over the NIC (40 us); NCCL's latency 8.4 us + 14
     * steps inside a node x 3.4 us + 1 across x 14 us. */
    int two_nodes[16];
    for (int i = 0; i < 16; i++) two_nodes[i] = i;
    near("reduce-scatter 2 nodes x 8 (8 rings) [simgrid]",
         m.sg.collective_s(m.sg.ctx, COLL_REDUCE_SCATTER, two_nodes, 16, B, 1),
         15 * (7.0 / 8 * B / 16 / NVL) + (8.4 + 14 * 3.4 + 14) * 1e-6, 0.01);
    near("reduce-scatter 2 nodes x 8 (8 rings) [analytic]",
         m.an.collective_s(m.an.ctx, COLL_REDUCE_SCATTER, two_nodes, 16, B, 1),
         15 * (7.0 / 8 * B / 16 / NVL) + (8.4 + 14 * 3.4 + 14) * 1e-6, 0.01);

    sg_comm_stats st = sg_comm_get_stats(&m.sg);
    printf("  simgrid: %ld queries, %ld simulated, %ld flows, %.3f s in SimGrid\n", st.queries, st.simulated, st.flows,
           st.sim_wall_s);
    if (st.simulated < 1 || st.flows < 1) fails++;
    return fails != 0;
}

/* ---- oversubscription: every node under its own leaf, so the a2a crosses leaves ------------------ */
static double two_node_a2a(double oversub, int which) {
    scenario s = fx_fabric("test_comm", 2, 1, oversub);
    models m;
    if (make_models(&s, &m)) exit(2);
    group g;
    uniform_group(&g, 0, 16, 1 * MB);
    return which ? m.an.a2a_s(m.an.ctx, &g.p) : m.sg.a2a_s(m.sg.ctx, &g.p);
}
static double g_result;
static int g_which;
static int child_over1(void) { g_result = two_node_a2a(1.0, g_which); printf("%.12g\n", g_result); return 0; }
static int child_over2(void) { g_result = two_node_a2a(2.0, g_which); printf("%.12g\n", g_result); return 0; }

/* Runs fn in a child and reads the number it prints. */
static double child_value(int (*fn)(void)) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        int rc = fn();
        fflush(stdout);
        _exit(rc);
    }
    close(fd[1]);
    char buf[128] = {0};
    ssize_t k = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return k > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? atof(buf) : -1;
}

static void test_oversubscription(void **state) {
    (void)state;
    for (g_which = 0; g_which < 2; g_which++) {
        double t1 = child_value(child_over1), t2 = child_value(child_over2);
        /* 1:1: uplink (1 port x 50 GB/s) = NIC, 8 MB each -> 160 us; 2:1: uplink 25 GB/s -> 320 us. */
        printf("  %s: cross-leaf a2a 1:1 %.3f us, 2:1 %.3f us, ratio %.4f (hand: 163.7, 323.7, 1.977)\n",
               g_which ? "analytic" : "simgrid", t1 * 1e6, t2 * 1e6, t2 / t1);
        assert_true(t1 > 0 && t2 > 0);
        assert_true(fabs(t1 - (8 * MB / NIC + LAT_SPINE)) < 0.01 * t1 + 1e-6);
        assert_true(fabs(t2 - (8 * MB / (NIC / 2) + LAT_SPINE)) < 0.01 * t2);
    }
}

/* ---- concurrent groups meet on leaf uplinks -------------------------------------------------------- */
static int child_concurrent(void) {
    /* 4 nodes, 2 per leaf, 2:1 oversubscribed (uplink = 2 x 50 / 2 = 50 GB/s). EP16 on nodes 1, 2
     * straddles the leaves; its copy lands on nodes 3, 0 and crosses them too: each leaf uplink carries
     * 8 MB of the group and 8 MB of the copy -> 16 MB / 50 GB/s = 320 us instead of 160 us alone. */
    scenario s = fx_fabric("test_comm", 4, 2, 2.0);
    models m;
    if (make_models(&s, &m)) return 1;
    group g;
    uniform_group(&g, 8, 16, 1 * MB);
    both("EP16 across leaves, alone", &m, &g.p, 8 * MB / NIC + LAT_SPINE);
    g.p.concurrent_groups = 2;
    both("EP16 across leaves, 2 concurrent groups", &m, &g.p, 16 * MB / NIC + LAT_SPINE);
    free(g.bytes);
    return fails != 0;
}

/* ---- a degraded NIC doubles the time of the flows through it --------------------------------------- */
static int child_degraded(void) {
    scenario s = fx_fabric("test_comm", 2, 32, 1.0);
    s.faults.n_links = 1;
    s.faults.links[0] = (link_fault){.gpu = 3, .kind = LINK_NIC, .factor = 0.5};
    models m;
    if (make_models(&s, &m)) return 1;
    group g;
    uniform_group(&g, 0, 16, 1 * MB);
    both("2-node a2a, GPU 3 NIC at 0.5", &m, &g.p, 8 * MB / (NIC / 2) + LAT_NVL);
    near("p2p 3->11 through the degraded NIC [simgrid]", m.sg.p2p_s(m.sg.ctx, 3, 11, 64 * MB),
         64 * MB / (NIC / 2) + LAT_LEAF, 0.01);
    near("p2p 4->12 healthy NIC [simgrid]", m.sg.p2p_s(m.sg.ctx, 4, 12, 64 * MB), 64 * MB / NIC + LAT_LEAF, 0.01);
    free(g.bytes);
    return fails != 0;
}

/* ---- memo: a pattern is simulated once, and its duration is its signature's alone ------------------- */
static int child_memo(void) {
    scenario s = fx_fabric("test_comm", 16, 32, 1.0);
    models m;
    if (make_models(&s, &m)) return 1;
    group g;
    uniform_group(&g, 0, 64, 1 * MB);
    double t1 = m.sg.a2a_s(m.sg.ctx, &g.p);
    free(g.bytes);
    uniform_group(&g, 64, 64, 1 * MB); /* the same shape on the next 8 nodes (same leaf): one signature */
    double t2 = m.sg.a2a_s(m.sg.ctx, &g.p);
    for (int k = 0; k < 64 * 64; k++) g.bytes[k] *= 1.0001; /* other bytes: another pattern */
    double t3 = m.sg.a2a_s(m.sg.ctx, &g.p);
    for (int k = 0; k < 64 * 64; k++) g.bytes[k] *= 2;
    double t4 = m.sg.a2a_s(m.sg.ctx, &g.p);
    sg_comm_stats st = sg_comm_get_stats(&m.sg);
    printf("  memo: t1 %.3f t2 %.3f t3 %.3f t4 %.3f us; %ld queries, %ld hits, %ld simulated\n", t1 * 1e6, t2 * 1e6,
           t3 * 1e6, t4 * 1e6, st.queries, st.hits, st.simulated);
    near("doubled payload ~ doubles the time", t4, 2 * t1 - LAT_NVL, 0.01);
    near("0.01% more bytes", t3, 1.0001 * (t1 - LAT_NVL) + LAT_NVL, 1e-4);
    int ok = st.queries == 4 && st.hits == 1 && st.simulated == 3 && t1 == t2 && t3 > t1;

    /* The same pattern simulated again, after the clock moved on (t1..t4 ran, then a 1 TB p2p: 20 s): bit for
     * bit the same duration, as in a fresh process. SimGrid's dates are absolute; without every run
     * starting in one binade of the clock the last bits differ. */
    m.sg.p2p_s(m.sg.ctx, 3, 100, 1e12);
    sg_comm_forget();
    free(g.bytes);
    uniform_group(&g, 0, 64, 1 * MB);
    double again = m.sg.a2a_s(m.sg.ctx, &g.p);
    printf("  after the clock moved: %.17g s, first %.17g s\n", again, t1);
    ok = ok && again == t1;

    /* A second model in the process (the next step, the next layout): the process memo answers, its
     * statistics count what it needed as a fresh process would. */
    comm_model second = sg_comm_create(&s, &(moe_error){0});
    sg_comm_set_max_flows(&second, 1L << 30);   /* the same rule for what goes to the closed form */
    double t5 = second.a2a_s(second.ctx, &g.p);
    sg_comm_stats s2 = sg_comm_get_stats(&second);
    printf("  a second model: %.17g s; %ld queries, %ld hits, %ld simulated, %.3f s in SimGrid\n", t5, s2.queries,
           s2.hits, s2.simulated, s2.sim_wall_s);
    ok = ok && t5 == t1 && s2.queries == 1 && s2.hits == 0 && s2.simulated == 1 && s2.sim_wall_s == 0;
    second.destroy(second.ctx);
    free(g.bytes);
    return !ok || fails;
}

/* ---- the helper (sg_comm_set_helpers): announced queries worked out in a forked process ------------
 * Truth: the same queries asked of a model without a helper, in a fresh memo. Every answer must be
 * bit for bit the same and the statistics the same, whether the helper sent it, the caller took it,
 * or it was never announced; a model destroyed with its helper still working leaves no process. */
#define HQ 12
static group g_hq[HQ];
static int g_ring[8];

static void hq_query(void *qctx, size_t k, comm_query *q) {
    (void)qctx;
    memset(q, 0, sizeof *q);
    if (k < 8) { q->is_a2a = 1; q->a2a = g_hq[k].p; return; }
    *q = (comm_query){.kind = k % 2 ? COLL_ALL_REDUCE : COLL_REDUCE_SCATTER, .gpus = g_ring, .n = 8,
                      .bytes = (double)(k + 1) * MB};
}
static void hq_release(void *qctx, size_t k, comm_query *q) { (void)qctx; (void)k; (void)q; }

static double hq_ask(comm_model *m, int k) {
    comm_query q;
    hq_query(NULL, (size_t)k, &q);
    return q.is_a2a ? m->a2a_s(m->ctx, &q.a2a) : m->collective_s(m->ctx, q.kind, q.gpus, q.n, q.bytes, 1);
}

static int same_stats(const char *what, sg_comm_stats a, sg_comm_stats b) {
    int ok = a.queries == b.queries && a.hits == b.hits && a.simulated == b.simulated && a.flows == b.flows &&
             a.closed_form == b.closed_form;
    printf("  helper, %-34s %ld queries %ld hits %ld simulated (%ld flows), %ld from the helper: %s\n", what,
           b.queries, b.hits, b.simulated, b.flows, b.from_helper, ok ? "as without" : "DIFFERENT");
    return ok;
}

static int child_helper(void) {
    scenario s = fx_fabric("test_comm", 8, 4, 2.0);
    /* eight all-to-alls of two nodes: 1-4 MB per pair at the first two nodes, the same four payloads
     * two nodes further (the same signature: the helper lists each once), and eight rings on rail 0 */
    for (int k = 0; k < 8; k++) uniform_group(&g_hq[k], k < 4 ? 0 : 16, 16, (double)(k % 4 + 1) * MB);
    for (int i = 0; i < 8; i++) g_ring[i] = 8 * i;
    comm_announcement an = {.n = HQ, .n_first = 8, .query = hq_query, .release = hq_release};
    const int order[HQ + 1] = {11, 0, 5, 9, 1, 2, 3, 4, 6, 7, 8, 10, 3};
    double ref[HQ];
    int ok = 1;
    moe_error err = {0};

    sg_comm_set_helpers(0);
    comm_model m = sg_comm_create(&s, &err);
    if (!m.ctx) { printf("  %s\n", err.msg); return 1; }
    for (int k = 0; k < HQ; k++) ref[k] = hq_ask(&m, k);
    sg_comm_stats in_order = sg_comm_get_stats(&m);
    m.destroy(m.ctx);
    sg_comm_forget();
    m = sg_comm_create(&s, &err);
    for (int j = 0; j <= HQ; j++) hq_ask(&m, order[j]);
    sg_comm_stats shuffled = sg_comm_get_stats(&m);
    m.destroy(m.ctx);
    /* 4 all-to-all signatures (each asked twice) and 4 ring sizes; the shuffled list asks one again */
    ok = ok && in_order.simulated == 8 && in_order.hits == 4 && shuffled.hits == 5;

    sg_comm_set_helpers(1);
    /* 1. the helper has sent everything: every answer is its */
    sg_comm_forget();
    m = sg_comm_create(&s, &err);
    m.announce(m.ctx, &an);
    sg_comm_helper_finish(&m);
    for (int k = 0; k < HQ; k++) ok = ok && hq_ask(&m, k) == ref[k];
    sg_comm_stats st = sg_comm_get_stats(&m);
    ok = same_stats("after it finished:", in_order, st) && ok && st.from_helper == st.simulated;
    m.destroy(m.ctx);

    /* 2. asked at once, in another order, one query twice: the helper and the caller share the work */
    sg_comm_forget();
    m = sg_comm_create(&s, &err);
    m.announce(m.ctx, &an);
    for (int j = 0; j <= HQ; j++) ok = ok && hq_ask(&m, order[j]) == ref[order[j]];
    st = sg_comm_get_stats(&m);
    ok = same_stats("asked at once, out of order:", shuffled, st) && ok;
    m.destroy(m.ctx);

    /* 3. destroyed while the helper works; a query nobody announced; the next model's answers */
    sg_comm_forget();
    m = sg_comm_create(&s, &err);
    an.n = 4;
    an.n_first = 4;
    m.announce(m.ctx, &an);
    ok = ok && hq_ask(&m, 9) == ref[9];
    m.destroy(m.ctx);
    int leftover = waitpid(-1, NULL, WNOHANG);   /* -1: no child process left */
    m = sg_comm_create(&s, &err);
    for (int k = 0; k < HQ; k++) ok = ok && hq_ask(&m, k) == ref[k];
    m.destroy(m.ctx);
    printf("  helper: answers %s; after a destroy, %s\n", ok ? "identical" : "DIFFERENT",
           leftover == -1 ? "no process left" : "a process LEFT");
    for (int k = 0; k < 8; k++) free(g_hq[k].bytes);
    sg_comm_set_helpers(0);
    return !(ok && leftover == -1);
}

static void test_a2a_shapes(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_a2a_shapes), 0); }
static void test_concurrent_groups(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_concurrent), 0); }
static void test_degraded_nic(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_degraded), 0); }
static void test_memo(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_memo), 0); }
static void test_helper(void **state) { (void)state; assert_int_equal(fx_run_in_child(child_helper), 0); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a2a_shapes),
        cmocka_unit_test(test_oversubscription),
        cmocka_unit_test(test_concurrent_groups),
        cmocka_unit_test(test_degraded_nic),
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_helper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
