/* routing_pattern.c — see routing_pattern.h. */
#include "sim/exec/routing_pattern.h"

#include <string.h>

void routing_sample_pattern(const routing_ctx *c, const routing_sample *s, int combine, a2a_pattern *p) {
    memset(p, 0, sizeof *p);
    p->n = routing_ctx_ranks(c);
    p->gpus = routing_ctx_gpus(c);
    p->bytes = combine ? s->combine_bytes : s->dispatch_bytes;
    p->node_bytes = combine ? s->combine_node_bytes : s->dispatch_node_bytes;
    p->n_nodes = routing_ctx_n_nodes(c);
    p->nodes = routing_ctx_nodes(c);
    p->concurrent_groups = 1;
}
