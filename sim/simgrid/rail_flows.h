/* rail_flows.h — host-to-host transfers on the rail fabric, from C (SimGrid's C API has no sendto).
 *
 * A transfer is one-sided, as an RDMA write or an NVLink copy is: it starts when issued, whether or
 * not the receiver is waiting, and shares bandwidth max-min with every other transfer on its links.
 * Requires rail_fabric_init().
 */
#ifndef MOESIM_RAIL_FLOWS_H
#define MOESIM_RAIL_FLOWS_H

#include <stddef.h>
#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    sg_host_t src, dst;
    double bytes;          /* <= 0: no transfer (finish time 0) */
} rail_flow;

/* From outside any actor: start all flows together, simulate until the last one completes.
 * finish_s[i] (may be NULL) receives flow i's completion time relative to the common start.
 * Returns the makespan (s). The simulated clock continues across calls (DESIGN.md). */
double rail_flows_run(const rail_flow *flows, size_t n, double *finish_s);

/* Inside an actor: start one transfer now; wait for it (and release it). */
typedef struct rail_xfer_s *rail_xfer;
rail_xfer rail_xfer_start(sg_host_t src, sg_host_t dst, double bytes);
void rail_xfer_wait(rail_xfer x);
/* Wait for all n transfers (each released). */
void rail_xfer_wait_all(rail_xfer *xs, size_t n);
/* Wait until one of the n transfers (NULL entries are skipped) completes; releases it, sets its
 * entry to NULL and returns its index (-1 when every entry is NULL). */
long rail_xfer_wait_any(rail_xfer *xs, size_t n);

#ifdef __cplusplus
}
#endif

#endif
