/* alloc.h — the one allocation policy of moesim.
 *
 * Policy: an allocation that fails is a runtime failure of the machine, not of the input, so these
 * never return NULL: they print "out of memory: N bytes" on stderr and exit with EXIT_RUNTIME (1).
 * Every size that a user input drives (tokens per micro-batch, ranks, experts, file sizes) is
 * bounded by the reader that takes it (an exit-2 error naming the field), so a plausible input never
 * reaches this exit. A zero-byte request returns a valid, freeable pointer. Sizes given as
 * count x size are checked for overflow (an overflow counts as a failed allocation).
 * cJSON allocates through moe_xmalloc too (hooks installed when the program starts).
 * Free with free(). kernels/ is a standalone library (CPU references that link only libm): its
 * functions check their allocations and return MOE_ENOMEM (moe_kernels.h); CUDA device memory is
 * checked by its callers. */
#ifndef MOESIM_ALLOC_H
#define MOESIM_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *moe_xmalloc(size_t bytes);
void *moe_xcalloc(size_t count, size_t size);
/* realloc of count x size bytes; p may be NULL */
void *moe_xrealloc(void *p, size_t count, size_t size);
char *moe_xstrdup(const char *s);

#ifdef __cplusplus
}
#endif

#endif
