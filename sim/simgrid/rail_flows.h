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
 * Returns the makespan (s). The simulated clock continues across calls (DESIGN.md).
 *
 * Durations do not depend on when a run happens. SimGrid's clock is absolute: a run that starts at
 * t0 computes its event dates as t0 + x, rounded to the spacing of doubles near t0, so the same
 * flows give durations that differ in their last bits after other runs moved the clock (8.50981355
 * 5538499 s against ...38435 s for one step). Every run therefore starts inside one binade,
 * [RAIL_FLOWS_EPOCH_S, 2 RAIL_FLOWS_EPOCH_S): there all doubles are multiples of one spacing
 * (2^-32 s, 0.23 ns), every date the solver makes is rounded to that fixed grid, differences of
 * dates are exact, and the remaining amounts evolve through the same sequence of time steps
 * wherever the run starts; starting on a multiple of RAIL_FLOWS_ALIGN_S also makes the parity of
 * the start fixed, so ties of round-to-even fall alike. The first run waits (simulated time) until
 * the epoch. This holds while the clock stays below 2 RAIL_FLOWS_EPOCH_S: 12 days of simulated
 * communication in one process, about a thousand searches of 100 layouts; past it runs continue
 * with a grid twice as coarse. */
#define RAIL_FLOWS_EPOCH_S 1048576.0             /* 2^20 s */
#define RAIL_FLOWS_ALIGN_S (1.0 / 1048576.0)     /* 2^-20 s */
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
