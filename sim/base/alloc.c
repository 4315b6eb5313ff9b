/* alloc.c — allocations that succeed or end the process (the policy: alloc.h). */
#include "sim/base/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/errors.h"

#include <cjson/cJSON.h>

static _Noreturn void out_of_memory(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        fprintf(stderr, "out of memory: %zu x %zu bytes (more than the address space)\n", count, size);
    else
        fprintf(stderr, "out of memory: %zu bytes\n", count * size);
    exit(EXIT_RUNTIME);
}

void *moe_xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) out_of_memory(bytes, 1);
    return p;
}

void *moe_xcalloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) out_of_memory(count, size);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count, size);
    return p;
}

void *moe_xrealloc(void *p, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) out_of_memory(count, size);
    size_t bytes = count * size;
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) out_of_memory(count, size);
    return q;
}

char *moe_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = moe_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

/* cJSON allocates through the same policy, so a cJSON_Create / cJSON_Print never returns NULL for
 * lack of memory. Installed before main (this object is in every program: everything allocates). */
static void *cjson_alloc(size_t bytes) { return moe_xmalloc(bytes); }

__attribute__((constructor)) static void cjson_use_policy(void) {
    cJSON_Hooks hooks = {cjson_alloc, free};
    cJSON_InitHooks(&hooks);
}
