/* fuzz_cli_simrun.c — the command line of simrun (one argument per line; sandbox: fuzz_cli.h). */
#include "tests/fuzz/fuzz_cli.h"

#define main simrun_main
#include "tools/simrun.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_cli_run("simrun", simrun_main, data, size, NULL);
}
