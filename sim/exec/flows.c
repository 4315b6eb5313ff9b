/* flows.c — flow lists (flows.h). */
#include "sim/exec/flows.h"
#include "sim/base/alloc.h"

#include <stdlib.h>

void gpu_flow_list_free(gpu_flow_list *l) {
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

int gpu_flow_push(gpu_flow_list *l, int src, int dst, double bytes, int copy, flow_kind kind) {
    if (bytes <= 0 || src == dst) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        l->v = moe_xrealloc(l->v, cap, sizeof *l->v);
        l->cap = cap;
    }
    l->v[l->n++] = (gpu_flow){src, dst, bytes, copy, kind};
    return 0;
}

