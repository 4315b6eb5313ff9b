/* cli_args.c — shared command-line helpers (see cli_args.h). */
#include "sim/base/cli_args.h"

#include <stdio.h>
#include <stdlib.h>

#include "sim/base/errors.h"

int cli_usage_error(const char *tool, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", tool);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see %s --help)\n", tool);
    return EXIT_BADINPUT;
}

int cli_int(const char *tool, const char *flag, const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: got '%s'; expected an integer in [%d, %d]\n(see %s --help)\n", tool, flag,
                s ? s : "", lo, hi, tool);
        return EXIT_BADINPUT;
    }
    *out = (int)v;
    return 0;
}

int cli_double(const char *tool, const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s ? s : "", &end);
    if (!s || *end || end == s || !(v >= lo && v <= hi)) {
        fprintf(stderr, "%s: %s: got '%s'; expected a number in [%g, %g]\n(see %s --help)\n", tool, flag,
                s ? s : "", lo, hi, tool);
        return EXIT_BADINPUT;
    }
    *out = v;
    return 0;
}
