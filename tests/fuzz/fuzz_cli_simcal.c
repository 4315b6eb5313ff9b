/* fuzz_cli_simcal.c — the command line of simcal (one argument per line; sandbox: fuzz_cli.h). */
#include "tests/fuzz/fuzz_cli.h"

#define main simcal_main
#include "tools/simcal.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_cli_run("simcal", simcal_main, data, size, (const char *const[]){"bench", "probe-host", NULL});
}
