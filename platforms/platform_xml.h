/* platform_xml.h — the rail fabric as a SimGrid XML platform file (the inspectable form).
 *
 * The file describes the same hosts, links, bandwidths, latencies and routes as rail_fabric_init()
 * builds, in one Full-routing zone with every route written out (SimGrid's XML cannot express the
 * arithmetic routing of the C++ zone). Routes: every GPU pair (same node: NVLink; same rail: NIC,
 * leaf, spine; other rails: PXN), every GPU to its node's host memory and to the file system, host
 * memory to the file system. Because the route list is quadratic, clusters above RAIL_XML_MAX_GPUS
 * are refused: dump a smaller cluster of the same fabric (fewer nodes) to inspect it.
 * `simrun --dump-platform FILE` writes it; `simgrid_load_platform(FILE)` loads it.
 */
#ifndef MOESIM_PLATFORM_XML_H
#define MOESIM_PLATFORM_XML_H

#include "sim/scenario/scenario.h"

#define RAIL_XML_MAX_GPUS 256

/* Written to a temporary name, then renamed (atomic). EXIT_BADINPUT for a bad or too large cluster,
 * EXIT_RUNTIME for I/O errors. */
int rail_fabric_write_xml(const scenario *s, const char *path, moe_error *err);

#endif
