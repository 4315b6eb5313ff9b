/* fuzz_input.h — what every harness shares: the libFuzzer entry point's signature and the input as
 * NUL-terminated text (readers take C strings; an embedded NUL ends the text, as in a file read by
 * read_file_bounded it would be refused by the reader that checks for it). */
#ifndef MOESIM_FUZZ_INPUT_H
#define MOESIM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data[0, size) + '\0' (caller frees). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *t = moe_xmalloc(size + 1);
    memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

#endif
