/* components.h — what a cluster is made of, for the "components" failure model
 * (reliability.failure_model = "components"): the component kinds, how many units of each the job
 * holds, which GPU a unit sits behind, and which nodes a failed unit takes out of the job (its blast
 * radius). The run level (sim/run/failures.h) draws failures per unit from these; the plan's job
 * MTBF (sim/plan/reliability.h) sums their rates.
 *
 * Kinds, their automatic counts and blast radii (rail-optimized fabric: platforms/fabric_geometry.h):
 *   gpu           one per GPU                      its node
 *   nic           one per GPU (one NIC per GPU)    its node
 *   host          one per node                     the node
 *   leaf_switch   rails x leaves per rail          rail k of the leaf_down_ports nodes under it: those
 *                                                  nodes leave the job (rail-aligned traffic needs all
 *                                                  rails)
 *   spine_switch  one per rail (a rail's spine     none: traffic reroutes over the other spines; the
 *                 layer, the fabric's granularity) job restarts in place
 *   rack          nodes / rack_nodes (rounded up)  the rack's nodes (a power domain)
 *   software      one per node (its software stack) none: the job restarts in place
 * A count given in the scenario replaces the automatic one: it sets how many units fail; the units
 * still map onto the cluster's geometry, spread evenly (unit u of n is cluster unit u x auto / n). */
#ifndef MOESIM_COMPONENTS_H
#define MOESIM_COMPONENTS_H

#include "sim/scenario/scenario_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "gpu", "nic", "host", "leaf_switch", "spine_switch", "rack", "software"; NULL-terminated. */
extern const char *const COMPONENT_KIND_NAMES[COMP_NKINDS + 1];
const char *component_kind_name(component_kind k);
/* Case-insensitive; 0 on success, -1 if `name` is no kind. */
int component_kind_parse(const char *name, component_kind *out);

/* Per-unit failure rates from the unexpected interruptions of Llama 3 405B pre-training (Dubey et
 * al. 2024, section 3.3.4, Table 5), exponential lifetimes, no detection delay, repair "auto". */
void components_default(component_cfg comps[COMP_NKINDS]);

/* Units of kind k in the job as the cluster's geometry gives them, and as the scenario sets them
 * (reliability.components.K.count, or the automatic count). */
int component_auto_count(const scenario *s, component_kind k);
int component_count(const scenario *s, component_kind k);

/* Where unit `unit` (0 <= unit < component_count) is: the GPU it sits behind (a GPU of its node;
 * rail k for a leaf or spine of rail k) and the nodes its failure takes out of the job, as the
 * range [*first_node, *first_node + *n_nodes) (*n_nodes = 0: the job restarts in place). */
int component_rank_of_unit(const scenario *s, component_kind k, int unit);
void component_blast(const scenario *s, component_kind k, int unit, int *first_node, int *n_nodes);
/* The unit of kind k that GPU `rank` sits behind (failure logs name a component and a GPU). */
int component_unit_of_rank(const scenario *s, component_kind k, int rank);

/* Failures per hour of the whole job under the components model: sum over kinds of count / mtbf_h
 * (the long-run rate of every unit's renewal process, whatever its Weibull shape). */
double components_failures_per_h(const scenario *s);

#ifdef __cplusplus
}
#endif

#endif
