/* hash.h — FNV-1a, 64 bits (Fowler, Noll, Vo; offset basis and prime of the FNV reference): the
 * project's one byte hash. Identifies a run definition (results_db.c), a calibration trace's bytes
 * (calibration/trace.c, from the offset basis its recorded hashes were made with) and what a routing
 * draw reads (sim/program/routing.c). Not cryptographic: its users compare in full or accept 64-bit
 * collision odds. */
#ifndef MOESIM_HASH_H
#define MOESIM_HASH_H

#include <stddef.h>
#include <stdint.h>

#define MOE_FNV1A64_OFFSET 0xcbf29ce484222325ULL

/* Continue hash `h` (MOE_FNV1A64_OFFSET to start) over n bytes at p. */
static inline uint64_t moe_fnv1a64(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;   /* C++ too: the fabric geometry includes it */
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

#endif
