/* comm_simgrid.c — comm.h on SimGrid: flow-level runs of each distinct pattern, memoized. */
#define _GNU_SOURCE /* clock_gettime (the SimGrid runs' wall time, statistics only); prctl */
#include "sim/simgrid/comm_simgrid.h"
#include "sim/plan/costmodel.h"
#include "sim/base/alloc.h"
#include "sim/base/rng_seed.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/ring_flows.h"
#include "platforms/fabric_geometry.h"
#include "sim/simgrid/rail_fabric.h"
#include "sim/simgrid/rail_flows.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* The helper (sg_comm_set_helpers): a fork of this process that simulates the queries announced to a
 * model (comm.h announce) while the caller goes on, and sends their durations over a socket: first
 * how many and their signatures in the announced order, then (signature, seconds, flows) records.
 * It starts from a copy of this process's memo and SimGrid engine, and a duration depends on its
 * signature alone (rail_flows.h), so what it sends is what this process would have computed.
 *
 * The caller needs the first queries of the announcement (n_first) at about the same time, at once
 * (the step's all-to-alls: its first micro-batches need every routing draw's), and the rest later in
 * their order. So the helper works through the first ones from the last to the first, then the rest
 * in order, and the caller takes what it needs and the helper has not started itself, telling the
 * helper (the same socket, the other way) so that it skips those; the caller waits only for a query
 * the helper has started or sent. On the first ones they meet in the middle. */
/* the helper's j-th query: the first ones backwards, then the rest */
static size_t helper_at(size_t j, size_t n_first) { return j < n_first ? n_first - 1 - j : j; }

typedef struct {
    pid_t pid;           /* 0: no helper */
    int fd;              /* a socket to the helper: its records in, the signatures the caller
                            computes itself out */
    int have_keys;       /* the signature list was read: order, pos, done */
    memo sent;           /* every signature the helper sent (kept when it ends: the statistics) */
    size_t n;
    uint64_t *order;     /* the helper's signatures, in the announced order */
    memo pos;            /* signature -> its index in order */
    unsigned char *done; /* per index: sent by the helper (1) or taken by the caller (2) */
    size_t n_first;      /* how many of them are of the announcement's first ones */
    size_t next;         /* where the helper is in its order (helper_at), as far as the caller knows */
} sg_helper;

typedef struct { uint64_t key; double t; long flows; } helper_record;

typedef struct {
    cluster_cfg c;
    faults_cfg f;
    sg_helper helper;
    memo seen;           /* the signatures this model was asked for (its statistics) */
    rail_flow *flows;
    double *finish;
    size_t cap;
    sg_comm_stats st;
    comm_model closed;   /* the hand-computed model, for patterns too large to simulate */
    long max_flows;      /* larger patterns go to `closed` */
    long pending_flows;  /* flows simulated for the query being answered */
    unsigned char *domain_faulty; /* per NVLink domain: one of its nodes holds a GPU with a faulty NIC
                                     or NVLink, or sits under a leaf with a faulty uplink (faults.links);
                                     NULL without faults */
} sg_ctx;

/* Where a group's GPU ids are measured from in its signature, and where it is simulated: shifted
 * down by this, so that one signature is one placement. A group inside one leaf has the same
 * timing wherever it sits in any leaf (its flows use only its own NVLink and NIC links): ids relative
 * to its first node. A group that crosses leaves is the same only under a shift by whole leaves: ids
 * relative to the first node of its first leaf (its first pod's when it crosses pods). Under ecmp
 * absolute positions matter: its uplink ports are hashed from the GPU ids (fabric_ecmp_port). Faults
 * make them matter for the patterns that meet them (sig_placement). */
static int sig_base_gpu(const sg_ctx *x, const int *gpus, int n) {
    if (fabric_ecmp(&x->c)) return 0;
    int lo = gpus[0], hi = gpus[0];
    for (int i = 1; i < n; i++) {
        if (gpus[i] < lo) lo = gpus[i];
        if (gpus[i] > hi) hi = gpus[i];
    }
    int nlo = fabric_node_of(&x->c, lo), nhi = fabric_node_of(&x->c, hi);
    int llo = fabric_leaf_of_node(&x->c, nlo);
    /* across pods (cluster.pod_nodes): the same only under a shift by whole pods. Inside one pod the
     * leaf rule below keeps it inside one pod: its leaves are shifted down to leaf 0 of pod 0. */
    int plo = fabric_pod_of_node(&x->c, nlo);
    if (plo != fabric_pod_of_node(&x->c, nhi)) return fabric_gpu(&x->c, plo * scn_pod_nodes(&x->c), 0);
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
 * rails differ and nothing moves, as under ecmp (hashed ports). */
static int sig_rail_shift(const sg_ctx *x, const int *gpus, int n) {
    if (fabric_ecmp(&x->c)) return 0;
    int m = gpus[0] % x->c.gpus_per_node;
    for (int i = 1; i < n; i++)
        if (gpus[i] % x->c.gpus_per_node < m) m = gpus[i] % x->c.gpus_per_node;
    return m;
}

/* Faults (faults.links) slow some links of the platform. A pattern none of whose flows can reach one
 * (no GPU of it, of its concurrent copies `copies` x `stride` GPUs on (a2a_copies), in an NVLink
 * domain with a faulty NIC or NVLink or under a leaf with a faulty uplink: every link of a route
 * belongs to its two ends' domains and leaves, PXN relaying inside the source's) runs as on the
 * healthy fabric: it keeps the healthy signature, marked, and is simulated where it is (so on
 * healthy links); one that can reach a fault is signed and simulated at its absolute place.
 * *key_base / *key_rail: what the signature measures ids from; *base / *rail: where it is simulated.
 * Returns the word that marks the signature (0: none, the fault-free fabric's). */
static uint64_t sig_placement(const sg_ctx *x, const int *gpus, int n, int copies, int stride, int *key_base,
                              int *key_rail, int *base, int *rail) {
    *key_base = sig_base_gpu(x, gpus, n);
    *key_rail = sig_rail_shift(x, gpus, n);
    *base = *key_base;
    *rail = *key_rail;
    if (!x->domain_faulty) return 0;
    const int G = x->c.nodes * x->c.gpus_per_node;
    *base = *rail = 0;
    for (int cp = 0; cp < copies; cp++)
        for (int i = 0; i < n; i++)
            if (x->domain_faulty[fabric_domain_of(&x->c, (gpus[i] + cp * stride) % G)]) {
                *key_base = *key_rail = 0;
                return 0xFA17;
            }
    return 0xC1EA;
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

/* A ring step's transfers without their latency (ring_flows.h): every flow's finish less its route's
 * latency, the latest of them. */
static double run_flow_list_bw(void *ctx, const gpu_flow_list *fl) {
    sg_ctx *x = ctx;
    if (run_flows(x, fl) < 0) return -1;
    double t = 0;
    for (size_t i = 0; i < fl->n; i++) {
        double b = x->finish[i] - fabric_route_latency_s(&x->c, fl->v[i].src_gpu, fl->v[i].dst_gpu);
        if (fl->v[i].copy == 0 && b > t) t = b;
    }
    return t;
}

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
    if (memo_find(&x->helper.sent, key, NULL, NULL)) x->st.from_helper++;
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

/* An all-to-all's signature; *base and *rail: where it is simulated (placed_a2a). */
static uint64_t a2a_key(const sg_ctx *x, const a2a_pattern *p, int *base, int *rail) {
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0xA2A);
    if (p->pairwise) sig_word(&s, 0x9A1);   /* NCCL pairwise flows (DeepEP signatures unchanged) */
    sig_word(&s, (uint64_t)p->n);
    sig_word(&s, (uint64_t)a2a_copies(&x->c, p));
    int kb, kr;
    uint64_t mark = sig_placement(x, p->gpus, p->n, a2a_copies(&x->c, p), a2a_copy_stride(&x->c, p), &kb, &kr, base, rail);
    if (mark) sig_word(&s, mark);
    for (int i = 0; i < p->n; i++) sig_word(&s, (uint64_t)(p->gpus[i] - kb - kr));
    for (size_t k = 0; k < (size_t)p->n * (size_t)p->n; k++) sig_bytes(&s, p->bytes[k]);
    if (p->node_bytes) {
        sig_word(&s, (uint64_t)p->n_nodes);
        for (size_t k = 0; k < (size_t)p->n * (size_t)p->n_nodes; k++) sig_bytes(&s, p->node_bytes[k]);
    }
    if (x->max_flows != SG_MAX_PATTERN_FLOWS) sig_word(&s, (uint64_t)x->max_flows);   /* which ones go closed */
    return sig_done(&s);
}

/* Its duration: a flow-level run at its signature's placement, or the closed form past max_flows;
 * *flows: the flows simulated (0: closed form). */
static double a2a_compute(sg_ctx *x, const a2a_pattern *p, int base, int rail, long *flows) {
    double t;
    int *at = moe_xmalloc(((size_t)p->n + (size_t)(p->nodes ? p->n_nodes : 0)) * sizeof(int));
    a2a_pattern q = placed_a2a(x, p, base, rail, at, at + p->n);
    gpu_flow_list fl = {0};
    x->pending_flows = 0;
    if (a2a_flows_build(&x->c, &q, &fl)) t = -1;
    else if ((long)fl.n > x->max_flows) t = x->closed.a2a_s(x->closed.ctx, &q);
    else t = run_flows(x, &fl);
    gpu_flow_list_free(&fl);
    free(at);
    *flows = x->pending_flows;
    return t;
}

static int helper_wait(sg_ctx *x, uint64_t key);

/* A query's duration when the memo has it or the helper is about to send it (1), counted as one
 * query. */
static int answer_known(sg_ctx *x, uint64_t key, double *t) {
    if (lookup(x, key, t)) return 1;
    if (!helper_wait(x, key)) return 0;
    x->st.queries--;   /* the same query, looked up again */
    return lookup(x, key, t);
}

static double sg_a2a_s(void *ctx, const a2a_pattern *p) {
    sg_ctx *x = ctx;
    if (p->n < 1 || !p->gpus) { x->st.queries++; return -1; }
    int base, rail;
    uint64_t key = a2a_key(x, p, &base, &rail);
    double t;
    if (answer_known(x, key, &t)) return t;
    long flows;
    t = a2a_compute(x, p, base, rail, &flows);
    store(x, key, t, flows);
    return t;
}

static double sg_p2p_s(void *ctx, int src, int dst, double bytes) {
    sg_ctx *x = ctx;
    if (src == dst || bytes <= 0) { x->st.queries++; return 0.0; }
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0x929);
    const int pair[2] = {src, dst};
    int kb, kr, b, r;
    uint64_t mark = sig_placement(x, pair, 2, 1, 0, &kb, &kr, &b, &r);
    const int base = b + r;
    if (mark) sig_word(&s, mark);
    sig_word(&s, (uint64_t)(src - kb - kr));
    sig_word(&s, (uint64_t)(dst - kb - kr));
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

static uint64_t coll_key(const sg_ctx *x, coll_kind kind, const int *gpus, int n, double bytes, int concurrent,
                         int *base) {
    sig s = {1469598103934665603ULL};
    sig_word(&s, 0xC011);
    if (ring_rings_contend(&x->c)) sig_word(&s, 0xC0C0 + (uint64_t)(concurrent > 1 ? concurrent : 1));   /* its copies */
    if (x->c.nccl_model != NCCL_MODEL_TUNED) sig_word(&s, 0x11CC + (uint64_t)x->c.nccl_model);   /* its latency */
    sig_word(&s, (uint64_t)kind);
    sig_word(&s, (uint64_t)n);
    /* the concurrent rings' copies (ring_flows.h) sit on other nodes: with faults, such a ring is
     * placed where it is */
    int kb, kr, b, r, has_copies = ring_rings_contend(&x->c) && concurrent > 1;
    uint64_t mark = sig_placement(x, gpus, n, 1, 0, &kb, &kr, &b, &r);
    if (has_copies && x->domain_faulty) kb = kr = b = r = 0, mark = 0xFA17;
    if (mark) sig_word(&s, mark);
    *base = b + r;
    for (int i = 0; i < n; i++) sig_word(&s, (uint64_t)(gpus[i] - kb - kr));
    sig_bytes(&s, bytes);
    return sig_done(&s);
}

/* A ring step is the same every step (every GPU forwards one chunk to its successor): simulate one
 * step of each phase on the fabric, with all the ring's edges at once, and multiply by the steps. */
static double coll_compute(sg_ctx *x, coll_kind kind, const int *gpus, int n, double bytes, int concurrent, int base,
                           long *flows) {
    int *at = moe_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) at[i] = gpus[i] - base;
    x->pending_flows = 0;
    double t = ring_collective_s(&x->c, kind, at, n, bytes, concurrent, run_flow_list_bw, x);
    free(at);
    *flows = x->pending_flows;
    return t;
}

static double sg_collective_s(void *ctx, coll_kind kind, const int *gpus, int n, double bytes, int concurrent) {
    sg_ctx *x = ctx;
    if (n < 2 || bytes <= 0) { x->st.queries++; return 0.0; }
    int base;
    uint64_t key = coll_key(x, kind, gpus, n, bytes, concurrent, &base);
    double t;
    if (answer_known(x, key, &t)) return t;
    long flows;
    t = coll_compute(x, kind, gpus, n, bytes, concurrent, base, &flows);
    if (t < 0) return -1;
    store(x, key, t, flows);
    return t;
}

/* ---- the helper ------------------------------------------------------------------------------------- */
static int g_helpers;   /* sg_comm_set_helpers */

void sg_comm_set_helpers(int on) { g_helpers = on ? 1 : 0; }

/* MSG_NOSIGNAL: a write to a peer that has gone fails (EPIPE) instead of raising SIGPIPE */
static int write_full(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int wait_readable(int fd) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    for (;;) {
        int r = poll(&pf, 1, -1);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* n bytes from a non-blocking socket, waiting for them */
static int read_full(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (errno != EINTR && wait_readable(fd)) return -1;
            continue;
        }
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The query's signature and, when `t` is non-NULL, its duration (*flows as in a2a_compute). */
static uint64_t query_work(sg_ctx *x, const comm_query *q, double *t, long *flows) {
    int base, rail = 0;
    uint64_t key = q->is_a2a ? a2a_key(x, &q->a2a, &base, &rail)
                             : coll_key(x, q->kind, q->gpus, q->n, q->bytes, q->concurrent, &base);
    if (t)
        *t = q->is_a2a ? a2a_compute(x, &q->a2a, base, rail, flows)
                       : coll_compute(x, q->kind, q->gpus, q->n, q->bytes, q->concurrent, base, flows);
    return key;
}

static int query_valid(const comm_query *q) {
    return q->is_a2a ? q->a2a.n >= 1 && q->a2a.gpus : q->n >= 2 && q->bytes > 0;
}

/* In the forked helper: the signatures this process does not know yet (each once), then their
 * durations in the helper's order (helper_at), skipping what the caller took (read before each). A
 * query that fails (t < 0) is sent as such: the caller then computes it and reports the failure. */
static void helper_main(sg_ctx *x, const comm_announcement *a, int fd) {
    size_t *todo = moe_xmalloc((a->n + 1) * sizeof *todo);
    uint64_t *keys = moe_xmalloc((a->n + 1) * sizeof *keys);
    memo mine = {0}, skip = {0};
    size_t m = 0, m_first = 0;
    for (size_t k = 0; k < a->n; k++) {
        comm_query q;
        a->query(a->qctx, k, &q);
        if (query_valid(&q)) {
            uint64_t key = query_work(x, &q, NULL, NULL);
            if (!memo_find(&g_memo, key, NULL, NULL) && !memo_find(&mine, key, NULL, NULL)) {
                memo_put(&mine, key, 0, 0);
                keys[m] = key;
                todo[m++] = k;
                m_first += k < a->n_first;
            }
        }
        a->release(a->qctx, k, &q);
    }
    uint64_t head[2] = {m, m_first};
    if (write_full(fd, head, sizeof head) || write_full(fd, keys, m * sizeof *keys)) _exit(1);
    for (size_t jj = 0; jj < m; jj++) {
        size_t j = helper_at(jj, m_first);
        uint64_t t_key;
        while (recv(fd, &t_key, sizeof t_key, MSG_DONTWAIT) == (ssize_t)sizeof t_key) memo_put(&skip, t_key, 0, 0);
        if (memo_find(&skip, keys[j], NULL, NULL)) continue;
        comm_query q;
        a->query(a->qctx, todo[j], &q);
        helper_record r = {0};
        r.key = query_work(x, &q, &r.t, &r.flows);
        a->release(a->qctx, todo[j], &q);
        if (write_full(fd, &r, sizeof r)) _exit(1);
    }
    _exit(0);
}

/* All but `sent`, which the model's statistics read after its helper ended. */
static void helper_free(sg_helper *h) {
    free(h->order);
    free(h->done);
    memo_free(&h->pos);
    memo sent = h->sent;
    memset(h, 0, sizeof *h);
    h->sent = sent;
}

/* One record from the helper into the memo: 1 read, 0 none there yet (non-blocking), -1 the helper
 * is gone. */
static int helper_take_record(sg_helper *h) {
    helper_record r;
    ssize_t got = read(h->fd, &r, sizeof r);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    if (got != (ssize_t)sizeof r) return -1;   /* end of file, or a torn record: writes are whole */
    if (r.t >= 0) memo_put(&g_memo, r.key, r.t, r.flows);
    memo_put(&h->sent, r.key, 0, 0);
    double at;
    if (memo_find(&h->pos, r.key, &at, NULL)) h->done[(size_t)at] = 1;
    return 1;
}

/* Stop the helper: keep what it has sent, end it. */
static void helper_end(sg_ctx *x) {
    sg_helper *h = &x->helper;
    if (h->pid <= 0) return;
    if (h->have_keys)
        while (helper_take_record(h) > 0) {}
    kill(h->pid, SIGKILL);
    while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR) {}
    close(h->fd);
    helper_free(h);
}

static int read_keys(sg_helper *h) {
    uint64_t head[2];
    if (read_full(h->fd, head, sizeof head) || head[0] > ((uint64_t)1 << 32) || head[1] > head[0]) return -1;
    h->n = (size_t)head[0];
    h->n_first = (size_t)head[1];
    h->order = moe_xmalloc((h->n + 1) * sizeof *h->order);
    h->done = moe_xcalloc(h->n + 1, 1);
    if (read_full(h->fd, h->order, h->n * sizeof *h->order)) return -1;
    for (size_t i = 0; i < h->n; i++) memo_put(&h->pos, h->order[i], (double)i, 0);
    h->next = 0;
    h->have_keys = 1;
    return 0;
}

/* A query this process is about to compute. 1: the helper sent it (it is in the memo now); 0: this
 * process computes it, and the helper will not (or there is no helper). */
static int helper_wait(sg_ctx *x, uint64_t key) {
    sg_helper *h = &x->helper;
    if (h->pid <= 0) return 0;
    if (!h->have_keys) {
        /* the helper is still listing what it will do: take this one rather than wait for the list */
        struct pollfd pf = {.fd = h->fd, .events = POLLIN};
        if (poll(&pf, 1, 0) <= 0) {
            if (write_full(h->fd, &key, sizeof key)) { /* gone */ }
            return 0;
        }
        if (read_keys(h)) { helper_end(x); return 0; }
    }
    double at;
    if (!memo_find(&h->pos, key, &at, NULL)) return 0;
    size_t i = (size_t)at;
    for (;;) {
        int got;
        while ((got = helper_take_record(h)) > 0) {}
        if (got < 0) { helper_end(x); return memo_find(&g_memo, key, NULL, NULL); }
        if (h->done[i] == 1) return memo_find(&g_memo, key, NULL, NULL);
        /* where the helper is: its first query neither sent nor taken */
        while (h->next < h->n && h->done[helper_at(h->next, h->n_first)]) h->next++;
        if (h->next >= h->n || helper_at(h->next, h->n_first) != i) {   /* not what it works on: take it */
            h->done[i] = 2;
            if (write_full(h->fd, &key, sizeof key)) { /* gone: this process computes it anyway */ }
            return 0;
        }
        if (wait_readable(h->fd)) { helper_end(x); return 0; }
    }
}

void sg_comm_helper_finish(comm_model *m) {
    if (!m || !m->ctx || m->a2a_s != sg_a2a_s) return;
    sg_helper *h = &((sg_ctx *)m->ctx)->helper;
    if (h->pid <= 0 || (!h->have_keys && read_keys(h))) return;
    while (helper_take_record(h) >= 0)
        if (wait_readable(h->fd)) break;
}

static void sg_announce(void *ctx, const comm_announcement *a) {
    sg_ctx *x = ctx;
    if (a->n == 0) return;
    helper_end(x);
    /* the process has simulated the first query already (the same step again, the next layout of a
     * search with the same groups): it most likely has the rest, and a fork would cost more than it
     * saves; what it lacks it simulates when asked */
    comm_query q0;
    a->query(a->qctx, 0, &q0);
    int known = query_valid(&q0) && memo_find(&g_memo, query_work(x, &q0, NULL, NULL), NULL, NULL);
    a->release(a->qctx, 0, &q0);
    if (known) return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return;
    fflush(NULL);   /* a fork holds a copy of unwritten stdio output, which a flush there would repeat */
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) { close(sv[0]); close(sv[1]); return; }
    if (pid == 0) {
        close(sv[0]);
        /* it ends with its caller, and leaves the caller's signals to the caller */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        helper_main(x, a, sv[1]);
    }
    close(sv[1]);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    x->helper.pid = pid;
    x->helper.fd = sv[0];
}

static void sg_destroy(void *ctx) {
    sg_ctx *x = ctx;
    if (!x) return;
    helper_end(x);
    memo_free(&x->helper.sent);
    memo_free(&x->seen);
    free(x->flows);
    free(x->finish);
    if (x->closed.destroy) x->closed.destroy(x->closed.ctx);
    free(x->domain_faulty);
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
    if (s->faults.n_links > 0) {   /* the domains a fault can touch (sig_placement) */
        const cluster_cfg *c = &s->cluster;
        const int D = (c->nodes * c->gpus_per_node) / fabric_domain_gpus(c);
        x->domain_faulty = moe_xcalloc((size_t)D, 1);
        if (!x->domain_faulty) {
            sg_destroy(x);
            moe_error_set(err, EXIT_RUNTIME, "out of memory creating the SimGrid communication model");
            return (comm_model){0};
        }
        for (int i = 0; i < s->faults.n_links; i++) {
            const link_fault *lf = &s->faults.links[i];
            if (lf->kind != LINK_UPLINK) {
                x->domain_faulty[fabric_domain_of(c, lf->gpu)] = 1;
                continue;
            }
            for (int nd = 0; nd < c->nodes; nd++)
                if (fabric_leaf_of_node(c, nd) == lf->leaf) x->domain_faulty[fabric_domain_of(c, fabric_gpu(c, nd, 0))] = 1;
        }
    }
    m.ctx = x;
    m.name = "simgrid";
    m.a2a_s = sg_a2a_s;
    m.p2p_s = sg_p2p_s;
    m.collective_s = sg_collective_s;
    m.destroy = sg_destroy;
    m.announce = g_helpers ? sg_announce : NULL;   /* without a helper nothing to announce to */
    m.rail_symmetric = !fabric_ecmp(&x->c);   /* by construction: sig_rail_shift; ecmp's hashed ports
                                                  differ between rails */
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
