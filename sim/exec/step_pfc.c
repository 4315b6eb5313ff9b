/* step_pfc.c — the step's worst incast on a lossless fabric (step_pfc.h). */
#include "sim/exec/step_pfc.h"
#include "sim/base/alloc.h"
#include "sim/exec/pfc_spread.h"
#include "sim/scenario/link_loss.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAUSED_SHOWN 32

static void add_time(cJSON *o, const char *key, double t) {
    if (isfinite(t)) cJSON_AddNumberToObject(o, key, t);
    else cJSON_AddNullToObject(o, key);
}

static int analyse(const program *p, int pattern, int g, int stalled_gpu, pfc_result *r) {
    a2a_pattern pat;
    step_a2a_buf buf;
    step_a2a_pattern(p, pattern, g, &pat, &buf);
    pfc_opts o = {.stalled_gpu = stalled_gpu};
    int rc = pfc_spread_a2a(&p->scn->cluster, &p->scn->faults, &pat, &o, r);
    step_a2a_buf_free(&buf);
    return rc;
}

/* Paused links by how long they are held beyond their own drain, longest first (ties: table order). */
static int by_extra_hold(const void *a, const void *b) {
    const pfc_link *x = a, *y = b;
    double ex = x->held_s - x->drain_s, ey = y->held_s - y->drain_s;
    if (ex != ey) return ex > ey ? -1 : 1;
    if (x->link.cls != y->link.cls) return x->link.cls < y->link.cls ? -1 : 1;
    return x->link.index < y->link.index ? -1 : x->link.index > y->link.index;
}

static cJSON *report_json(const program *p, int pattern, int g, int stalled_gpu, pfc_result *r) {
    const cluster_cfg *c = &p->scn->cluster;
    char name[64];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ep_group", g);
    cJSON_AddNumberToObject(o, "pattern", pattern);
    cJSON_AddStringToObject(o, "kind", p->patterns[pattern].kind == A2A_DISPATCH_B ? "dispatch_b" : "dispatch_f");
    cJSON_AddNumberToObject(o, "hot_gpu", r->hot_gpu);
    cJSON_AddNumberToObject(o, "hot_node", r->hot_gpu >= 0 ? r->hot_gpu / c->gpus_per_node : -1);
    cJSON_AddNumberToObject(o, "hot_local_gpu", r->hot_gpu >= 0 ? r->hot_gpu % c->gpus_per_node : -1);
    cJSON_AddNumberToObject(o, "hot_received_bytes", r->hot_gpu_bytes);
    if (r->root.cls < FL_NCLASSES) pfc_link_name(c, r->root, name, sizeof name);
    else snprintf(name, sizeof name, "(none)");
    cJSON_AddStringToObject(o, "root_link", name);
    cJSON_AddNumberToObject(o, "root_drain_s", r->root_drain_s);
    cJSON_AddNumberToObject(o, "stalled_gpu", stalled_gpu);
    /* what holds the ports: PFC pauses (RoCE) or credits (InfiniBand), and when a stalled receiver's
     * queue is discarded (cluster.stall_discard_ms; null: never) */
    cJSON_AddStringToObject(o, "flow_control", c->transport == TRANSPORT_IB ? "credits" : "pfc");
    add_time(o, "stall_discard_s", link_stall_discard_s(c));
    cJSON_AddNumberToObject(o, "paused_links_count", r->n_paused);
    qsort(r->paused, (size_t)r->n_paused, sizeof *r->paused, by_extra_hold);
    cJSON *pl = cJSON_AddArrayToObject(o, "paused_links");
    for (int i = 0; i < r->n_paused && i < PAUSED_SHOWN; i++) {
        cJSON *e = cJSON_CreateObject();
        pfc_link_name(c, r->paused[i].link, name, sizeof name);
        cJSON_AddStringToObject(e, "link", name);
        cJSON_AddNumberToObject(e, "drain_s", r->paused[i].drain_s);
        add_time(e, "held_s", r->paused[i].held_s);
        pfc_link_name(c, r->paused[i].cause, name, sizeof name);
        cJSON_AddStringToObject(e, "cause", name);
        cJSON_AddItemToArray(pl, e);
    }
    cJSON_AddNumberToObject(o, "victim_flows", (double)r->n_victims);
    add_time(o, "max_victim_slowdown", r->max_victim_slowdown);
    if (r->worst_victim >= 0) {
        cJSON *w = cJSON_AddObjectToObject(o, "worst_victim");
        cJSON_AddNumberToObject(w, "src_gpu", r->worst_victim_src);
        cJSON_AddNumberToObject(w, "dst_gpu", r->worst_victim_dst);
        cJSON_AddNumberToObject(w, "lossy_s", r->finish_lossy_s[r->worst_victim]);
        add_time(w, "pfc_s", r->finish_s[r->worst_victim]);
    } else {
        cJSON_AddNullToObject(o, "worst_victim");
    }
    cJSON_AddNumberToObject(o, "held_gpus", r->n_held_gpus);
    double ml = 0, mp = 0;
    for (size_t i = 0; i < r->n_flows; i++) {
        if (r->finish_lossy_s[i] > ml) ml = r->finish_lossy_s[i];
        if (r->finish_s[i] > mp) mp = r->finish_s[i];
    }
    cJSON_AddNumberToObject(o, "makespan_lossy_s", ml);
    add_time(o, "makespan_pfc_s", mp);
    return o;
}

cJSON *step_pfc_report(const program *p, const step_exec_result *x) {
    int best_pat = -1, best_g = -1, stalled = -1, from_hang = 0;
    double best = -1;
    if (x->hang.found && x->hang.group >= 0 && x->hang.op == OP_A2A_DISPATCH) {
        program_op o;
        program_rank_op(p, x->hang.culprit, x->hang.op_index, &o);
        if (o.pattern >= 0 && !p->patterns[o.pattern].is_combine) {
            best_pat = o.pattern; best_g = o.group;
            stalled = program_gpu_of_rank(p, x->hang.culprit);
            from_hang = 1;
        }
    }
    for (int g = 0; g < p->n_groups && !from_hang; g++) {
        const program_group *G = &p->groups[g];
        if (G->kind != GROUP_EP || G->n < 2 || (x->sim_rank && x->sim_rank[G->ranks[0]] != G->ranks[0])) continue;
        for (int k = 0; k < p->n_patterns; k++) {
            if (p->patterns[k].is_combine) continue;
            pfc_result r;
            if (analyse(p, k, g, -1, &r) == 0 && r.root_drain_s > best) { best = r.root_drain_s; best_pat = k; best_g = g; }
            pfc_result_free(&r);
        }
    }
    if (best_pat < 0) return NULL;
    pfc_result r;
    cJSON *o = NULL;
    if (analyse(p, best_pat, best_g, stalled, &r) == 0) o = report_json(p, best_pat, best_g, stalled, &r);
    pfc_result_free(&r);
    return o;
}
