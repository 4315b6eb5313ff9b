/* comm_simgrid.c — comm.h on SimGrid: flow-level runs of each distinct pattern, memoized. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime: wall time of the SimGrid runs (statistics only) */
#include "sim/simgrid/comm_simgrid.h"
#include "sim/plan/costmodel.h"
#include "sim/base/alloc.h"
#include "sim/base/rng_seed.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/ring_flows.h"
#include "platforms/fabric_geometry.h"
#include "sim/simgrid/rail_fabric.h"
#include "sim/simgrid/rail_flows.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- memo: open addressing, 64-bit signature -> seconds ------------------------------------------
 * One memo per process, shared by every model sg_comm_create makes there: a pattern's duration is a
 * function of its signature alone (sg_canonical below), so a step, the next step of routing.steps
 * and the next layout of a search reuse what the ones before simulated, and get exactly the value a
 * fresh process would. Each model also keeps the set of signatures it asked for, so that its
 * statistics (what this step needed) do not depend on what the process ran before. */
typedef struct {
    uint64_t *key;   /* 0 = empty (signatures are forced non-zero) */
    double *val;
    long *flows;     /* flows the pattern took to simulate (0: priced in closed form) */
    size_t cap, n;
} memo;

static int memo_find(const memo *m, uint64_t k, double *out, long *flows) {
    if (!m->cap) return 0;
    for (size_t i = k & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->key[i] == 0) return 0;
        if (m->key[i] == k) {
            if (out) *out = m->val[i];
            if (flows) *flows = m->flows[i];
            return 1;
        }
    }
}

static void memo_put(memo *m, uint64_t k, double v, long flows) {
    if (2 * (m->n + 1) > m->cap) {
        memo old = *m;
        size_t cap = old.cap ? 2 * old.cap : 1024;
        m->key = moe_xcalloc(cap, sizeof *m->key);
        m->val = moe_xcalloc(cap, sizeof *m->val);
        m->flows = moe_xcalloc(cap, sizeof *m->flows);
        m->cap = cap;
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.key[i]) memo_put(m, old.key[i], old.val[i], old.flows[i]);
        free(old.key);
        free(old.val);
        free(old.flows);
    }
    size_t i = k & (m->cap - 1);
    while (m->key[i] != 0 && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    if (m->key[i] == 0) m->n++;
    m->key[i] = k;
    m->val[i] = v;
    m->flows[i] = flows;
}

static void memo_free(memo *m) {
    free(m->key);
    free(m->val);
    free(m->flows);
    memset(m, 0, sizeof *m);
}

static memo g_memo;   /* the process's (SimGrid keeps one platform per process: one fabric) */

void sg_comm_forget(void) { memo_free(&g_memo); }

/* ---- signature: a 64-bit hash of 64-bit words ------------------------------------------------------
 * Each word is mixed in whole (moe_seed_mix, a splitmix64 finaliser): an EP256 pattern is 65,536 byte
 * counts, which byte-wise FNV-1a took half a million steps to hash. */
typedef struct { uint64_t h; } sig;
static void sig_word(sig *s, uint64_t w) { s->h = moe_seed_mix(s->h ^ w) + 0x9E3779B97F4A7C15ULL; }
/* Bytes enter the signature exactly (their bit pattern): one signature is then one pattern, whose
 * duration does not depend on which query simulated it first. (A 0.1% quantisation once merged
 * nearby patterns; on the seed step it merged none, and it made the first one stand for the rest.) */
static void sig_bytes(sig *s, double b) {
    uint64_t w = 0;
    if (b > 0) memcpy(&w, &b, sizeof w);
    sig_word(s, w);
}
static uint64_t sig_done(sig *s) { return s->h ? s->h : 1; }

typedef struct {
    cluster_cfg c;
    faults_cfg f;
    memo seen;           /* the signatures this model was asked for (its statistics) */
    rail_flow *flows;
    double *finish;
    size_t cap;
    sg_comm_stats st;
    comm_model closed;   /* the hand-computed model, for patterns too large to simulate */
    long max_flows;      /* larger patterns go to `closed` */
    long pending_flows;  /* flows simulated for the query being answered */
} sg_ctx;

/* Where a group's GPU ids are measured from in its signature, and where it is simulated: shifted
 * down by this, so that one signature is one placement. A group inside one leaf has the same
 * timing wherever it sits in any leaf (its flows use only its own NVLink and NIC links): ids relative
 * to its first node. A group that crosses leaves is the same only under a shift by whole leaves: ids
 * relative to the first node of its first leaf. Faults make absolute positions matter. */
static int sig_base_gpu(const sg_ctx *x, const int *gpus, int n) {
    if (x->f.n_links > 0) return 0;
    int lo = gpus[0], hi = gpus[0];
    for (int i = 1; i < n; i++) {
        if (gpus[i] < lo) lo = gpus[i];
        if (gpus[i] > hi) hi = gpus[i];
    }
    int nlo = fabric_node_of(&x->c, lo), nhi = fabric_node_of(&x->c, hi);
    int llo = fabric_leaf_of_node(&x->c, nlo);
    /* inside one leaf: relative to the group's first NVLink domain (its first node unless a domain
     * spans several), so that groups at the same place in two domains share a signature */
    if (llo == fabric_leaf_of_node(&x->c, nhi)) return fabric_domain_of(&x->c, lo) * fabric_domain_gpus(&x->c);
    return fabric_gpu(&x->c, llo * x->c.leaf_down_ports, 0);
}

/* The rails are identical planes (fabric_geometry.h: GPU k of every node on rail k, one NIC each), so
 * rotating every node's GPUs by m positions maps the fabric onto itself, and a pattern onto one with
 * the same duration. A group is measured and simulated with its GPUs moved down by the smallest
 * position among them, so that the EP groups of the TP indices of a stage (GPUs k, k+1, ... of the
 * same nodes) are one pattern, as are their pipeline sends and gradient rings; with link faults the
 * rails differ and nothing moves. */
static int sig_rail_shift(const sg_ctx *x, const int *gpus, int n) {
    if (x->f.n_links > 0) return 0;
    int m = gpus[0] % x->c.gpus_per_node;
    for (int i = 1; i < n; i++)
        if (gpus[i] % x->c.gpus_per_node < m) m = gpus[i] % x->c.gpus_per_node;
    return m;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A pattern this model needs for the first time: counted as simulated (its flows) or closed form. */
static void count_new(sg_ctx *x, long flows) {
    if (flows > 0) {
        x->st.simulated++;
        x->st.flows += flows;
    } else {
        x->st.closed_form++;
    }
}

/* Simulate flows together; returns the latest finish among flows with copy == 0. */
static double run_flows(sg_ctx *x, const gpu_flow_list *fl) {
    if (fl->n == 0) return 0.0;
    if (fl->n > x->cap) {
        size_t cap = fl->n;
        x->flows = moe_xrealloc(x->flows, cap, sizeof *x->flows);
        x->finish = moe_xrealloc(x->finish, cap, sizeof *x->finish);
        x->cap = cap;
    }
    for (size_t i = 0; i < fl->n; i++)
        x->flows[i] = (rail_flow){rail_fabric_gpu_host(fl->v[i].src_gpu), rail_fabric_gpu_host(fl->v[i].dst_gpu),
                                  fl->v[i].bytes};
    double t0 = now_s();
    rail_flows_run(x->flows, fl->n, x->finish);
    x->st.sim_wall_s += now_s() - t0;
    x->pending_flows += (long)fl->n;
    double t = 0;
    for (size_t i = 0; i < fl->n; i++)
        if (fl->v[i].copy == 0 && x->finish[i] > t) t = x->finish[i];
    return t;
}

static double run_flow_list(void *ctx, const gpu_flow_list *fl) { return run_flows(ctx, fl); }

/* A query's signature in the process memo. Counts it for this model: a hit when this model asked
 * for it before, a simulated (or closed-form) pattern the first time, whoever simulated it. */
static int lookup(sg_ctx *x, uint64_t key, double *t) {
    x->st.queries++;
    long flows = 0;
    if (memo_find(&x->seen, key, NULL, NULL)) {
        x->st.hits++;
        return memo_find(&g_memo, key, t, NULL);
    }
    if (!memo_find(&g_memo, key, t, &flows)) return 0;
    memo_put(&x->seen, key, 0, 0);
    count_new(x, flows);
    return 1;
}

/* A duration just computed for `key` (flows: simulated, 0: closed form). */
static void store(sg_ctx *x, uint64_t key, double t, long flows) {
    if (t < 0) return;
    memo_put(&g_memo, key, t, flows);
    memo_put(&x->seen, key, 0, 0);
    count_new(x, flows);
}

/* The pattern at its signature's placement: shifted down by `base` (sig_base_gpu), a whole number of
 * NVLink domains (DeepEP's nodes), and by `rail` positions inside every node (sig_rail_shift).
 * gpus[n] and nodes[n_nodes] receive the moved ids. */
static a2a_pattern placed_a2a(const sg_ctx *x, const a2a_pattern *p, int base, int rail, int *gpus, int *nodes) {
    a2a_pattern q = *p;
    for (int i = 0; i < p->n; i++) gpus[i] = p->gpus[i] - base - rail;
    q.gpus = gpus;
    if (p->nodes) {
        for (int k = 0; k < p->n_nodes; k++) nodes[k] = p->nodes[k] - base / fabric_domain_gpus(&x->c);
        q.nodes = nodes;
    }
    return q;
}

static double sg_a2a_s(void *ctx, const a2a_pattern *p) {
    sg_ctx *x = ctx;
    if (p->n < 1 || !p->gpus) { x->st.queries++; return -1; }
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0xA2A);
    if (p->pairwise) sig_word(&s, 0x9A1);   /* NCCL pairwise flows (DeepEP signatures unchanged) */
    sig_word(&s, (uint64_t)p->n);
    sig_word(&s, (uint64_t)a2a_copies(&x->c, p));
    const int base = sig_base_gpu(x, p->gpus, p->n), rail = sig_rail_shift(x, p->gpus, p->n);
    for (int i = 0; i < p->n; i++) sig_word(&s, (uint64_t)(p->gpus[i] - base - rail));
    for (size_t k = 0; k < (size_t)p->n * (size_t)p->n; k++) sig_bytes(&s, p->bytes[k]);
    if (p->node_bytes) {
        sig_word(&s, (uint64_t)p->n_nodes);
        for (size_t k = 0; k < (size_t)p->n * (size_t)p->n_nodes; k++) sig_bytes(&s, p->node_bytes[k]);
    }
    if (x->max_flows != SG_MAX_PATTERN_FLOWS) sig_word(&s, (uint64_t)x->max_flows);   /* which ones go closed */
    uint64_t key = sig_done(&s);
    double t;
    if (lookup(x, key, &t)) return t;
    int *at = moe_xmalloc(((size_t)p->n + (size_t)(p->nodes ? p->n_nodes : 0)) * sizeof(int));
    a2a_pattern q = placed_a2a(x, p, base, rail, at, at + p->n);
    gpu_flow_list fl = {0};
    x->pending_flows = 0;
    if (a2a_flows_build(&x->c, &q, &fl)) t = -1;
    else if ((long)fl.n > x->max_flows) t = x->closed.a2a_s(x->closed.ctx, &q);
    else t = run_flows(x, &fl);
    gpu_flow_list_free(&fl);
    free(at);
    store(x, key, t, x->pending_flows);
    return t;
}

static double sg_p2p_s(void *ctx, int src, int dst, double bytes) {
    sg_ctx *x = ctx;
    if (src == dst || bytes <= 0) { x->st.queries++; return 0.0; }
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0x929);
    const int pair[2] = {src, dst}, base = sig_base_gpu(x, pair, 2) + sig_rail_shift(x, pair, 2);
    sig_word(&s, (uint64_t)(src - base));
    sig_word(&s, (uint64_t)(dst - base));
    sig_bytes(&s, bytes);
    uint64_t key = sig_done(&s);
    double t;
    if (lookup(x, key, &t)) return t;
    gpu_flow f = {src - base, dst - base, bytes, 0, FLOW_RDMA};
    gpu_flow_list fl = {&f, 1, 1};
    x->pending_flows = 0;
    t = run_flows(x, &fl);
    store(x, key, t, x->pending_flows);
    return t;
}

/* A ring step is the same every step (every GPU forwards one chunk to its successor): simulate one
 * step of each phase on the fabric, with all the ring's edges at once, and multiply by the steps. */
static double sg_collective_s(void *ctx, coll_kind kind, const int *gpus, int n, double bytes) {
    sg_ctx *x = ctx;
    if (n < 2 || bytes <= 0) { x->st.queries++; return 0.0; }
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0xC011);
    sig_word(&s, (uint64_t)kind);
    sig_word(&s, (uint64_t)n);
    const int base = sig_base_gpu(x, gpus, n) + sig_rail_shift(x, gpus, n);
    for (int i = 0; i < n; i++) sig_word(&s, (uint64_t)(gpus[i] - base));
    sig_bytes(&s, bytes);
    uint64_t key = sig_done(&s);
    double t;
    if (lookup(x, key, &t)) return t;
    int *at = moe_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) at[i] = gpus[i] - base;
    x->pending_flows = 0;
    t = ring_collective_s(&x->c, kind, at, n, bytes, run_flow_list, x);
    free(at);
    if (t < 0) return -1;
    store(x, key, t, x->pending_flows);
    return t;
}

static void sg_destroy(void *ctx) {
    sg_ctx *x = ctx;
    if (!x) return;
    memo_free(&x->seen);
    free(x->flows);
    free(x->finish);
    if (x->closed.destroy) x->closed.destroy(x->closed.ctx);
    free(x);
}

int sg_fabric_scenario(const scenario *s, scenario *fab, moe_error *err) {
    *fab = *s;
    return costmodel_fabric_cluster(s, &fab->cluster, err);
}

comm_model sg_comm_create(const scenario *s_in, moe_error *err) {
    comm_model m = {0};
    scenario fab;
    if (sg_fabric_scenario(s_in, &fab, err)) return m;
    const scenario *s = &fab;
    if (rail_fabric_init(s, err)) return m;
    sg_ctx *x = moe_xcalloc(1, sizeof *x);
    if (!x) {
        moe_error_set(err, EXIT_RUNTIME, "out of memory creating the SimGrid communication model");
        return m;
    }
    x->c = s->cluster;
    x->f = s->faults;
    x->closed = comm_analytic_create(s);
    x->max_flows = SG_MAX_PATTERN_FLOWS;
    m.ctx = x;
    m.name = "simgrid";
    m.a2a_s = sg_a2a_s;
    m.p2p_s = sg_p2p_s;
    m.collective_s = sg_collective_s;
    m.destroy = sg_destroy;
    m.rail_symmetric = 1;   /* by construction: sig_rail_shift */
    return m;
}

void sg_comm_set_max_flows(comm_model *m, long max_flows) {
    if (m && m->ctx && m->a2a_s == sg_a2a_s) ((sg_ctx *)m->ctx)->max_flows = max_flows;
}

sg_comm_stats sg_comm_get_stats(const comm_model *m) {
    sg_comm_stats z = {0};
    if (!m || !m->ctx || m->a2a_s != sg_a2a_s) return z;
    return ((const sg_ctx *)m->ctx)->st;
}
