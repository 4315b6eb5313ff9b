/* fuzz_cli_simdiag.c — the command line of simdiag (one argument per line; sandbox: fuzz_cli.h). */
#include "tests/fuzz/fuzz_cli.h"

#define main simdiag_main
#include "tools/simdiag.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_cli_run("simdiag", simdiag_main, data, size, NULL);
}
